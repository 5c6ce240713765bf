//! `uring`: io_uring through the io-uring crate, default ring setup.
//!
//! Requests are pushed to the submission ring as they are queued; the batch
//! is handed to the kernel by the one `io_uring_enter` that also waits for
//! completions (`submit_and_wait`), so a loop turn costs one system call.

use super::{Completion, Engine, EngineSetup, IoRequest, QueueStatus};
use crate::error::usage_error;
use crate::plan::RingFlags;
use crate::workload::Dir;
use anyhow::{Context, Result};
use io_uring::{opcode, types, IoUring};
use std::io;

pub struct UringEngine {
    ring: IoUring,
    fd: types::Fd,
}

/// Ring entries for a queue depth: the kernel rounds up to a power of two.
fn ring_entries(iodepth: u32) -> u32 {
    iodepth.max(1).next_power_of_two()
}

/// Builds a ring of `entries` with the plan's setup flags.
fn build_ring(entries: u32, flags: RingFlags) -> Result<IoUring> {
    let mut b = IoUring::builder();
    if flags.coop_taskrun {
        b.setup_coop_taskrun();
    }
    if flags.single_issuer {
        b.setup_single_issuer();
    }
    if flags.defer_taskrun {
        b.setup_defer_taskrun();
    }
    b.build(entries).map_err(|e| setup_error(e, flags))
}

impl UringEngine {
    pub fn new(setup: &EngineSetup) -> Result<UringEngine> {
        let ring = build_ring(ring_entries(setup.plan.iodepth), setup.plan.ring)?;
        Ok(UringEngine {
            ring,
            fd: types::Fd(setup.fd),
        })
    }
}

/// Checks that io_uring, with these setup flags, can be used here, before
/// any file is laid out.
pub fn probe_io_uring(flags: RingFlags) -> Result<()> {
    build_ring(2, flags).map(drop)
}

/// Turns an `io_uring_setup` failure into a message that says why and what
/// to do.
fn setup_error(e: io::Error, flags: RingFlags) -> anyhow::Error {
    let sysctl = ringlab_kstat::host::io_uring_disabled();
    let msg = match e.raw_os_error() {
        Some(libc::EPERM) => match sysctl {
            Some(2) => "io_uring is disabled on this host (kernel.io_uring_disabled=2): \
                        run `sysctl kernel.io_uring_disabled=0` as root, or use --engine sync"
                .to_string(),
            Some(1) => "io_uring is limited to the group in kernel.io_uring_group \
                        (kernel.io_uring_disabled=1): join that group, run as root, or use --engine sync"
                .to_string(),
            _ => "io_uring_setup was refused (EPERM) although kernel.io_uring_disabled allows it: \
                  a seccomp filter (container runtime, systemd SystemCallFilter) blocks io_uring; \
                  run outside it or use --engine sync"
                .to_string(),
        },
        Some(libc::ENOSYS) => "io_uring is not available (io_uring_setup: ENOSYS): the kernel was \
                               built without CONFIG_IO_URING or a seccomp filter hides it; use --engine sync"
            .to_string(),
        Some(libc::ENOMEM) => "io_uring_setup: not enough locked memory for the rings (kernels before \
                               5.12 charge them to RLIMIT_MEMLOCK): raise `ulimit -l` or lower --iodepth"
            .to_string(),
        Some(libc::EINVAL) if flags != RingFlags::default() => format!(
            "io_uring_setup refused the ring flags {} (EINVAL): this kernel ({}) lacks one; \
             --coop-taskrun needs Linux 5.19, --single-issuer 6.0, --defer-taskrun 6.1",
            flags.names().iter().map(|n| format!("--{n}")).collect::<Vec<_>>().join(" "),
            ringlab_kstat::host_info().kernel
        ),
        _ => format!("io_uring_setup failed: {e}"),
    };
    usage_error(msg)
}

impl Engine for UringEngine {
    #[inline]
    fn queue(&mut self, req: &IoRequest) -> Result<QueueStatus> {
        let sqe = match req.dir {
            Dir::Read => opcode::Read::new(self.fd, req.buf, req.len)
                .offset(req.offset)
                .build(),
            Dir::Write => opcode::Write::new(self.fd, req.buf, req.len)
                .offset(req.offset)
                .build(),
        }
        .user_data(req.slot as u64);
        // SAFETY: the buffer stays valid and untouched by the worker until
        // the completion for this slot is reaped.
        let pushed = unsafe { self.ring.submission().push(&sqe) };
        Ok(match pushed {
            Ok(()) => QueueStatus::Queued,
            Err(_) => QueueStatus::Busy,
        })
    }

    #[inline]
    fn commit(&mut self) -> Result<()> {
        // Submission is folded into the io_uring_enter of the next reap().
        Ok(())
    }

    fn reap(&mut self, min: u32, out: &mut Vec<Completion>) -> Result<()> {
        let pending = !self.ring.submission().is_empty();
        let ready = self.ring.completion().len();
        if pending || ready < min as usize {
            let want = (min as usize).saturating_sub(ready);
            loop {
                match self.ring.submit_and_wait(want) {
                    Ok(_) => break,
                    Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                    // The kernel could not take more now (EAGAIN) or the
                    // completion ring is full (EBUSY): reap what is there.
                    Err(e)
                        if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EBUSY))
                            && !self.ring.completion().is_empty() =>
                    {
                        break
                    }
                    Err(e) => return Err(e).context("io_uring_enter failed"),
                }
            }
        }
        out.extend(self.ring.completion().map(|cqe| Completion {
            slot: cqe.user_data() as u32,
            result: cqe.result() as i64,
        }));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_entries_round_up() {
        assert_eq!(ring_entries(1), 1);
        assert_eq!(ring_entries(3), 4);
        assert_eq!(ring_entries(32), 32);
        assert_eq!(ring_entries(33), 64);
    }
}
