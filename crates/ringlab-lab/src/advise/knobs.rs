//! What advise needs to know about each io_uring knob it turns on: the
//! kernel's name and first release (read from the knob table in
//! ringlab-core) and fio's spelling.

/// Kernel name and first Linux release of a `ringlab io` knob flag, from
/// the project's knob table.
pub fn kernel_name(flag: &str) -> Option<(&'static str, &'static str)> {
    ringlab_core::uring::knobs::knob(flag)
        .filter(|k| !k.kernel_name.is_empty())
        .map(|k| (k.kernel_name, k.since))
}

/// Whether a knob is a setup flag (`io_uring_params.flags`).
pub fn is_setup_flag(flag: &str) -> bool {
    ringlab_core::uring::knobs::knob(flag).is_some_and(|k| k.setup_bit().is_some())
}

/// The knobs of ringlab's (and fio's) default ring.
pub fn default_ring() -> &'static [&'static str] {
    ringlab_core::uring::knobs::DEFAULT_RING
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
