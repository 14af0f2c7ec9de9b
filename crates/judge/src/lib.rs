//! The judging layer: ACT's log reader, analyser and judge (the tables
//! of act_latency.py and the verdict), the one bounded reader of a results
//! folder or an unpacked bundle (`contents`), and the summary folded over
//! what it read. The workloads write logs; this reads them, and trusts
//! nothing it reads. It uses the results types and the bundle's bytes,
//! never a device, an engine or the command line.

pub mod act {
    //! What is ACT's and is read, not run: its configuration, its
    //! histograms, the log's analysis and the judge.
    pub mod analyze;
    pub mod config;
    pub mod histogram;
    pub mod judge;
    pub mod timeline;
}
pub mod contents;
pub mod summary;
