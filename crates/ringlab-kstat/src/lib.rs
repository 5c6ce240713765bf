//! Kernel evidence collectors: per-thread CPU time and context switches
//! (`getrusage(RUSAGE_THREAD)`), host facts, block devices and their
//! interrupts, tracepoint counters through `perf_event_open`, and the
//! kernel helper threads (`iou-sqp-*`, `iou-wrk-*`) a run causes; and the
//! one step that explains a result from them ([`explain`]: knob evidence
//! and diagnoses, for every command).

pub mod bpf;
pub mod bpf_events;
pub mod collector;
pub mod device;
pub mod explain;
pub mod host;
pub mod perf;
pub mod rusage;
pub mod stages;
pub mod windows;

pub use collector::{Collector, Level};
pub use explain::explain;
pub use host::host_info;
pub use rusage::ThreadUsage;
