//! `posixaio`: glibc's POSIX AIO (`aio_read`/`aio_write`, completions found
//! with `aio_error` and waited for with `aio_suspend`), fio's posixaio
//! engine. glibc runs each request on a pool of user-space threads, and
//! requests on one descriptor are served in order by one thread: the
//! thread-pool baseline of the ScyllaDB article. The job thread sleeps
//! until the request halfway down its queue is done (see `reap`), so a
//! completion can wait up to half a queue before it is reaped, and its
//! latency includes that wait, as it would in an application built so.

use super::{Completion, Engine, EngineSetup, IoRequest, QueueStatus};
use crate::workload::Dir;
use anyhow::{bail, Context, Result};
use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;

pub struct PosixAioEngine {
    fd: RawFd,
    trim: crate::trim::TrimHow,
    /// One control block per slot, at a stable address glibc keeps while
    /// the request runs.
    cbs: Box<[libc::aiocb]>,
    /// Slots with a request in flight, oldest first.
    inflight: VecDeque<u32>,
}

impl PosixAioEngine {
    pub fn new(setup: &EngineSetup) -> Result<PosixAioEngine> {
        let depth = setup.plan.iodepth as usize;
        // SAFETY: aiocb is plain data; all-zero is its documented initial
        // state.
        let zero: libc::aiocb = unsafe { std::mem::zeroed() };
        Ok(PosixAioEngine {
            fd: setup.fd,
            trim: crate::trim::how(setup.plan, setup.fd),
            cbs: vec![zero; depth].into_boxed_slice(),
            inflight: VecDeque::with_capacity(depth),
        })
    }

    /// Moves finished requests to `out`; returns how many. aio_error and
    /// aio_return read the control block without taking glibc's lock.
    fn collect(&mut self, out: &mut Vec<Completion>) -> u32 {
        let before = out.len();
        let cbs = &mut self.cbs;
        self.inflight.retain(|&slot| {
            let cb = &mut cbs[slot as usize];
            // SAFETY: cb is a control block glibc accepted and still owns.
            let err = unsafe { libc::aio_error(cb) };
            if err == libc::EINPROGRESS {
                return true;
            }
            // SAFETY: the request finished; aio_return is called once.
            let ret = unsafe { libc::aio_return(cb) };
            let result = if err != 0 { -(err as i64) } else { ret as i64 };
            out.push(Completion::new(slot, result));
            false
        });
        (out.len() - before) as u32
    }
}

impl Engine for PosixAioEngine {
    fn queue(&mut self, req: &IoRequest) -> Result<QueueStatus> {
        if req.dir == Dir::Trim {
            // fio's posixaio trims synchronously (do_io_u_trim).
            return Ok(QueueStatus::Completed(crate::trim::trim(
                self.fd, self.trim, req.offset, req.len,
            )));
        }
        let cb = &mut self.cbs[req.slot as usize];
        // SAFETY: zeroing plain data before reuse.
        *cb = unsafe { std::mem::zeroed() };
        cb.aio_fildes = self.fd;
        cb.aio_offset = req.offset as libc::off_t;
        cb.aio_buf = req.buf.cast();
        cb.aio_nbytes = req.len as usize;
        cb.aio_sigevent.sigev_notify = libc::SIGEV_NONE;
        // SAFETY: cb and the buffer stay valid and untouched until the
        // request is reaped.
        let rc = unsafe {
            match req.dir {
                Dir::Read => libc::aio_read(cb),
                Dir::Write => libc::aio_write(cb),
                Dir::Nop | Dir::Trim => bail!("the posixaio engine has no no-op request"),
            }
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EAGAIN) && !self.inflight.is_empty() {
                return Ok(QueueStatus::Busy);
            }
            return Err(e).context("aio_read/aio_write failed");
        }
        self.inflight.push_back(req.slot);
        Ok(QueueStatus::Queued)
    }

    fn commit(&mut self) -> Result<()> {
        Ok(())
    }

    fn reap(&mut self, min: u32, out: &mut Vec<Completion>) -> Result<()> {
        let mut got = self.collect(out);
        while got < min && !self.inflight.is_empty() {
            // Wait for the request halfway down the queue (or the
            // min-th oldest, if later). glibc serves one descriptor's
            // requests in order on one thread, so this wakes the job thread
            // once per half queue, and that thread always has the other
            // half to go on with. Waiting on every request (fio's
            // posixaio waits on 8 of them, whichever come first in its
            // table) wakes the job thread at each completion; on a CPU it
            // shares with glibc's thread, each wake-up preempts that thread
            // while it holds glibc's request lock, and the convoy that
            // follows cost 3.5 system calls and a fifth of the IOPS per
            // request at depth 32. aio_suspend returns as soon as this one
            // request is done, so at least one completion is always there.
            let need = (min - got) as usize;
            let last = self.inflight.len() - 1;
            let at = (last / 2).max(need - 1).min(last);
            let list: [*const libc::aiocb; 1] = [&self.cbs[self.inflight[at] as usize]];
            // SAFETY: the list holds a live control block of a request in
            // flight; no timeout.
            let rc = unsafe { libc::aio_suspend(list.as_ptr(), 1, std::ptr::null()) };
            if rc != 0 {
                let e = io::Error::last_os_error();
                if !matches!(e.raw_os_error(), Some(libc::EINTR) | Some(libc::EAGAIN)) {
                    return Err(e).context("aio_suspend failed");
                }
            }
            got += self.collect(out);
        }
        Ok(())
    }
}

impl Drop for PosixAioEngine {
    fn drop(&mut self) {
        // Never free control blocks or buffers glibc may still write.
        let mut sink = Vec::new();
        while !self.inflight.is_empty() {
            if self.reap(1, &mut sink).is_err() {
                std::mem::forget(std::mem::take(&mut self.cbs));
                return;
            }
            sink.clear();
        }
    }
}
