//! The workloads: ACT (prep, storage, index, the scheduler, the load
//! search) and the streaming suite (sequential passes, the filesystem
//! pass). Each takes typed parameters and an engine and writes its log and
//! its result; the judge reads the log afterwards. They open devices
//! through `storcert-device`'s blockdev and report progress through the
//! console layer; they know no ioctl, no report and no command line.

pub mod act;
pub mod stream;
