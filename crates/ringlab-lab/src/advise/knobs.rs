//! What advise needs to know about each io_uring knob it turns on: the
//! kernel's name, the first release, and fio's spelling. Kept in this one
//! place so that it can read the project's knob table once that exists.

/// Kernel name and first Linux release of a `ringlab io` knob flag.
pub fn kernel_name(flag: &str) -> Option<(&'static str, &'static str)> {
    Some(match flag {
        "iopoll" => ("IORING_SETUP_IOPOLL", "5.1"),
        "sqpoll" => ("IORING_SETUP_SQPOLL", "5.1 (5.11 without root)"),
        "sqpoll-cpu" => ("IORING_SETUP_SQ_AFF", "5.1"),
        "attach-wq" => ("IORING_SETUP_ATTACH_WQ", "5.6"),
        "coop-taskrun" => ("IORING_SETUP_COOP_TASKRUN", "5.19"),
        "taskrun-flag" => ("IORING_SETUP_TASKRUN_FLAG", "5.19"),
        "single-issuer" => ("IORING_SETUP_SINGLE_ISSUER", "6.0"),
        "defer-taskrun" => ("IORING_SETUP_DEFER_TASKRUN", "6.1"),
        "fixed-files" => ("IORING_REGISTER_FILES", "5.1"),
        "fixed-buffers" => ("IORING_REGISTER_BUFFERS", "5.1"),
        "force-async" => ("IOSQE_ASYNC", "5.6"),
        "register-ring" => ("IORING_REGISTER_RING_FDS", "5.18"),
        _ => return None,
    })
}

/// Whether a knob is a setup flag (`io_uring_params.flags`).
pub fn is_setup_flag(flag: &str) -> bool {
    kernel_name(flag).is_some_and(|(k, _)| k.starts_with("IORING_SETUP_"))
}

/// The knob flags advise reads back from a result's `config` (in the order
/// they are listed in advice).
pub const ADVISED: &[&str] = &[
    "iopoll",
    "sqpoll",
    "attach-wq",
    "coop-taskrun",
    "taskrun-flag",
    "single-issuer",
    "defer-taskrun",
    "fixed-files",
    "fixed-buffers",
    "force-async",
    "register-ring",
];

/// fio's io_uring engine option for a knob; `None` when fio has none.
pub fn fio_option(flag: &str) -> Option<&'static str> {
    Some(match flag {
        "iopoll" => "--hipri=1",
        "sqpoll" => "--sqthread_poll=1",
        "fixed-files" => "--registerfiles=1",
        "fixed-buffers" => "--fixedbufs=1",
        "force-async" => "--force_async=1",
        _ => return None,
    })
}
