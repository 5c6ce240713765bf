//! `libaio`: Linux AIO through the raw `io_setup`/`io_submit`/`io_getevents`
//! system calls (fio's libaio engine without the C library: the three calls
//! and two structs of `linux/aio_abi.h` are all it needs, so they are
//! declared here rather than pulling in a binding).
//!
//! O_DIRECT only: for buffered files the kernel runs the request inside
//! io_submit, which then blocks like pread.

use super::{Completion, Engine, EngineSetup, IoRequest, QueueStatus};
use crate::plan::IoPlan;
use crate::workload::Dir;
use anyhow::{bail, Context, Result};
use ringlab_core::usage_error;
use ringlab_stats::IoDepths;
use std::io;
use std::os::fd::RawFd;

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;

/// `struct iocb` of linux/aio_abi.h (little-endian layout: key, then
/// rw_flags).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Iocb {
    aio_data: u64,
    aio_key: u32,
    aio_rw_flags: i32,
    aio_lio_opcode: u16,
    aio_reqprio: i16,
    aio_fildes: u32,
    aio_buf: u64,
    aio_nbytes: u64,
    aio_offset: i64,
    aio_reserved2: u64,
    aio_flags: u32,
    aio_resfd: u32,
}

/// `struct io_event` of linux/aio_abi.h.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

type AioContext = libc::c_ulong;

fn io_setup(nr: u32) -> io::Result<AioContext> {
    let mut ctx: AioContext = 0;
    // SAFETY: io_setup writes the new context id into `ctx`, which must be
    // zero on entry.
    let rc = unsafe { libc::syscall(libc::SYS_io_setup, nr, &mut ctx as *mut AioContext) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ctx)
}

fn io_destroy(ctx: AioContext) {
    // SAFETY: ctx came from io_setup; io_destroy waits for requests in
    // flight, so no buffer is written after it returns.
    unsafe { libc::syscall(libc::SYS_io_destroy, ctx) };
}

fn setup_error(e: io::Error) -> anyhow::Error {
    match e.raw_os_error() {
        Some(libc::ENOSYS) => usage_error(
            "Linux AIO is not available (io_setup: ENOSYS): the kernel was built without CONFIG_AIO or a seccomp filter hides it; use --engine uring or sync",
        ),
        Some(libc::EAGAIN) => usage_error(
            "io_setup: the system-wide Linux AIO limit (fs.aio-max-nr) is used up: raise it with `sysctl fs.aio-max-nr=...`, or lower --iodepth or --numjobs",
        ),
        Some(libc::EPERM) => usage_error(
            "io_setup was refused (EPERM): a seccomp filter blocks Linux AIO; run outside it or use --engine sync",
        ),
        _ => anyhow::Error::new(e).context("io_setup failed"),
    }
}

/// Checks, before any file is laid out, that Linux AIO can be used here.
pub fn probe(plan: &IoPlan) -> Result<()> {
    let ctx = io_setup(plan.iodepth).map_err(setup_error)?;
    io_destroy(ctx);
    Ok(())
}

pub struct LibaioEngine {
    /// fio's submit counts since the last take_submit_counts.
    submits: [u64; 7],
    ctx: AioContext,
    fd: RawFd,
    trim: crate::trim::TrimHow,
    /// One control block per slot, at a stable address the kernel reads
    /// during io_submit.
    iocbs: Box<[Iocb]>,
    /// Queued control blocks not yet taken by io_submit.
    pending: Vec<*mut Iocb>,
    events: Box<[IoEvent]>,
    /// `--submit-batch`: io_submit as soon as this many are queued (0: once
    /// per loop turn).
    submit_batch: u32,
    /// `--complete-batch`: completions each reap waits for (at least 1).
    complete_batch: u32,
    /// `--complete-max`: at most this many events per io_getevents (without
    /// it, as many as there are slots).
    complete_max: usize,
    /// Requests the kernel has taken and not yet completed.
    in_kernel: u32,
}

impl LibaioEngine {
    pub fn new(setup: &EngineSetup) -> Result<LibaioEngine> {
        let depth = setup.plan.iodepth;
        let ctx = io_setup(depth).map_err(setup_error)?;
        Ok(LibaioEngine {
            submits: [0; 7],
            ctx,
            fd: setup.fd,
            trim: crate::trim::how(setup.plan, setup.fd),
            iocbs: vec![Iocb::default(); depth as usize].into_boxed_slice(),
            pending: Vec::with_capacity(depth as usize),
            events: vec![IoEvent::default(); depth as usize].into_boxed_slice(),
            submit_batch: setup.plan.uring.submit_batch,
            complete_batch: setup.plan.uring.complete_batch.max(1),
            complete_max: setup.plan.uring.reap_cap(depth) as usize,
            in_kernel: 0,
        })
    }

    /// Submits what is pending; what the kernel cannot take now (EAGAIN)
    /// stays pending for the next call.
    fn submit_pending(&mut self) -> Result<()> {
        while !self.pending.is_empty() {
            // SAFETY: every pointer points into self.iocbs, filled by queue().
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.ctx,
                    self.pending.len() as libc::c_long,
                    self.pending.as_ptr(),
                )
            };
            if rc < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EAGAIN) => return Ok(()),
                    _ => return Err(e).context("io_submit failed"),
                }
            }
            self.pending.drain(..rc as usize);
            self.in_kernel += rc as u32;
            if rc > 0 {
                self.submits[IoDepths::batch(rc as u32)] += 1;
            }
            if rc == 0 {
                return Ok(());
            }
        }
        Ok(())
    }
}

impl Engine for LibaioEngine {
    fn take_submit_counts(&mut self) -> Option<[u64; 7]> {
        Some(std::mem::take(&mut self.submits))
    }

    #[inline]
    fn queue(&mut self, req: &IoRequest) -> Result<QueueStatus> {
        let opcode = match req.dir {
            Dir::Read => IOCB_CMD_PREAD,
            Dir::Write => IOCB_CMD_PWRITE,
            Dir::Nop => bail!("the libaio engine has no no-op request"),
            // fio's libaio trims synchronously (do_io_u_trim).
            Dir::Trim => {
                return Ok(QueueStatus::Completed(crate::trim::trim(
                    self.fd, self.trim, req.offset, req.len,
                )))
            }
        };
        let cb = &mut self.iocbs[req.slot as usize];
        *cb = Iocb {
            aio_data: req.slot as u64,
            aio_lio_opcode: opcode,
            aio_fildes: self.fd as u32,
            aio_buf: req.buf as u64,
            aio_nbytes: req.len as u64,
            aio_offset: req.offset as i64,
            // IOCB_FLAG_IOPRIO: aio_reqprio is the request's priority.
            aio_reqprio: req.ioprio as i16,
            aio_flags: if req.ioprio != 0 { 1 << 1 } else { 0 },
            ..Iocb::default()
        };
        self.pending.push(cb as *mut Iocb);
        if self.submit_batch > 0 && self.pending.len() >= self.submit_batch as usize {
            self.submit_pending()?;
        }
        Ok(QueueStatus::Queued)
    }

    fn commit(&mut self) -> Result<()> {
        self.submit_pending()
    }

    fn reap(&mut self, min: u32, out: &mut Vec<Completion>) -> Result<()> {
        self.submit_pending()?;
        // Never wait for more than the kernel holds: at the end of a run
        // fewer than --complete-batch may be left.
        let min = min.max(self.complete_batch).min(self.in_kernel);
        // --complete-max is at least --complete-batch, so at least min,
        // and at most the depth, the room in `events`.
        let nr = self.complete_max;
        loop {
            // SAFETY: `events` holds room for `nr` (at most its length)
            // events; no timeout.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    min as libc::c_long,
                    nr as libc::c_long,
                    self.events.as_mut_ptr(),
                    std::ptr::null::<libc::timespec>(),
                )
            };
            if rc < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(e).context("io_getevents failed");
            }
            self.in_kernel -= rc as u32;
            out.extend(
                self.events[..rc as usize]
                    .iter()
                    .map(|ev| Completion::new(ev.data as u32, ev.res)),
            );
            return Ok(());
        }
    }
}

impl Drop for LibaioEngine {
    fn drop(&mut self) {
        io_destroy(self.ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_sizes_match_the_kernel() {
        assert_eq!(std::mem::size_of::<Iocb>(), 64);
        assert_eq!(std::mem::size_of::<IoEvent>(), 32);
    }
}
