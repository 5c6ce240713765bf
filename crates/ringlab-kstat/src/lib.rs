//! Kernel evidence collectors.
//!
//! This first part holds what every run records: CPU time and context
//! switches of each worker thread (`getrusage(RUSAGE_THREAD)`) and the host
//! facts a result carries. Tracepoint counters, interrupts and kernel helper
//! threads come with the kernel-evidence issue.

pub mod device;
pub mod host;
pub mod rusage;

pub use host::host_info;
pub use rusage::ThreadUsage;
