//! fio's failed job (fio 3.33 io_u.c `io_u error` / ioengines.c
//! `td_io_queue`, backend.c `td_verror`): under `ringlab fio` an I/O error
//! that continue_on_error does not take ends that job alone, with its
//! figures up to then and the errno as its error, and the other jobs go
//! on. `ringlab io` keeps failing the whole run (this is off there).
//!
//! The job's end is said in a warning of its result, which the fio
//! personality reads back with [`parse`]: one format, written and read here.

/// The I/O error that ended a job under fio's semantics.
#[derive(Debug)]
pub struct JobFailed(pub String);

impl std::fmt::Display for JobFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for JobFailed {}

const MARK: &str = "ended by an I/O error, as fio ends a failed job (errno ";

/// The warning of a job ended by `errno` on an I/O of direction `dir`
/// (`read`, `write`, `trim`, or `resid`: a read that got no byte);
/// `detail` says which I/O.
pub fn warning(job: u32, errno: i32, dir: &str, detail: &str) -> String {
    format!("job {job}: {MARK}{errno}, {dir}): {detail}; the other jobs went on")
}

/// The direction whose `total_ios` counts the failed I/O (`resid`, fio's
/// "full resid" read that got no byte, is a read).
pub fn direction(dir: &str) -> &str {
    if dir == "resid" {
        "read"
    } else {
        dir
    }
}

/// A job's error read back from its warning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failed {
    /// The job thread (0-based) of the run.
    pub job: u32,
    pub errno: i32,
    /// `read`, `write`, `trim` or `resid` (see [`warning`]).
    pub dir: String,
    /// The I/O that failed, as the warning says it.
    pub detail: String,
}

/// The error a warning of [`warning`] holds, if it is one.
pub fn parse(w: &str) -> Option<Failed> {
    let rest = w.strip_prefix("job ")?;
    let (job, rest) = rest.split_once(": ")?;
    let rest = rest.strip_prefix(MARK)?;
    let (errno, rest) = rest.split_once(", ")?;
    let (dir, rest) = rest.split_once("): ")?;
    let detail = rest
        .strip_suffix("; the other jobs went on")
        .unwrap_or(rest);
    Some(Failed {
        job: job.parse().ok()?,
        errno: errno.parse().ok()?,
        dir: dir.to_string(),
        detail: detail.to_string(),
    })
}

/// The C library's text of an errno (strerror), as fio prints it.
pub fn strerror(errno: i32) -> String {
    let s = std::io::Error::from_raw_os_error(errno).to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// fio 3.33's `verror` of the job: where the error was raised and its
/// text. Trims fail in the engine's queue call (ioengines.c:399,
/// td_io_queue) on every engine; reads and writes at their completion
/// (io_u.c:1876, "io_u error"), as fio 3.33 prints them.
pub fn verror(errno: i32, dir: &str) -> String {
    let place = match dir {
        "trim" => "file:ioengines.c:399, func=td_io_queue",
        // backend.c io_queue_event: a read that got nothing.
        "resid" => "file:backend.c:471, func=full resid",
        _ => "file:io_u.c:1876, func=io_u error",
    };
    format!("{place}, error={}", strerror(errno))
}

/// A system call's return as a request's result: `done` (the bytes it
/// moved or counts as moved) when `rc` is not negative, else the negative
/// errno of the failure. Call it right after the system call, before
/// anything else can change errno.
pub fn or_errno(rc: i64, done: i64) -> i64 {
    if rc < 0 {
        -(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO) as i64)
    } else {
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_reads_back() {
        let w = warning(2, 25, "trim", "trim of 4096 bytes at offset 0");
        assert_eq!(
            parse(&w),
            Some(Failed {
                job: 2,
                errno: 25,
                dir: "trim".into(),
                detail: "trim of 4096 bytes at offset 0".into()
            })
        );
        assert_eq!(parse("job 0: something else"), None);
        assert_eq!(
            verror(25, "trim"),
            "file:ioengines.c:399, func=td_io_queue, error=Inappropriate ioctl for device"
        );
        assert_eq!(
            verror(28, "write"),
            "file:io_u.c:1876, func=io_u error, error=No space left on device"
        );
        assert_eq!(
            verror(5, "resid"),
            "file:backend.c:471, func=full resid, error=Input/output error"
        );
        assert_eq!(direction("resid"), "read");
    }
}
