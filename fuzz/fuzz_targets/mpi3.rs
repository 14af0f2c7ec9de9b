//! MPI3 bsg replies: ADPINFO, ALLTGTDEVINFO, SCSI IO (see storcert::fuzz::mpi3).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| storcert::fuzz::mpi3(data));
