//! The io_uring event loop of `ringlab serve`: accept, recv and send as
//! completions. A connection is freed only once none of its operations is
//! in flight, so the kernel never writes into a reused buffer.

use super::conn::{set_nodelay, Slab, Tally, READ_BUF, TICK_MS};
use super::request::Responses;
use io_uring::types::{CancelBuilder, Fd, SubmitArgs, Timespec};
use io_uring::{opcode, squeue, IoUring};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const S_ACCEPT: u64 = 1;
const S_RECV: u64 = 2;
const S_SEND: u64 = 3;
const S_CANCEL: u64 = 4;

/// The ring of one server thread (made before the thread starts, so that
/// an io_uring the kernel refuses is reported before "listening").
/// Built by the one ring builder, with the bare kernel ring's flags (serve
/// is the other side of a measurement, not the side under test).
pub fn ring() -> io::Result<IoUring> {
    let o = ringlab_core::uring::knobs::UringOptions {
        cq_size: Some(8192),
        ..Default::default()
    };
    ringlab_core::uring::build_ring(2048, &o, None)
}

fn s_ud(op: u64, i: usize, generation: u32) -> u64 {
    op << 56 | ((generation as u64) & 0xff_ffff) << 32 | i as u64
}

fn push(ring: &mut IoUring, e: squeue::Entry) -> io::Result<()> {
    loop {
        // SAFETY: every buffer an entry points at belongs to a slab slot
        // that is not reused (nor its buffers touched) until all of its
        // operations have completed.
        if unsafe { ring.submission().push(&e) }.is_ok() {
            return Ok(());
        }
        ring.submit()?;
    }
}

fn wait(ring: &mut IoUring, ts: &Timespec) -> io::Result<()> {
    let args = SubmitArgs::new().timespec(ts);
    match ring.submitter().submit_with_args(1, &args) {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EINTR)) => Ok(()),
        Err(e) => Err(e),
    }
}

fn accept(ring: &mut IoUring, lfd: RawFd) -> io::Result<()> {
    let e = opcode::Accept::new(Fd(lfd), std::ptr::null_mut(), std::ptr::null_mut())
        .flags(libc::SOCK_CLOEXEC)
        .build()
        .user_data(S_ACCEPT << 56);
    push(ring, e)
}

/// One server thread's loop on `ring` until `stop`.
pub fn serve_uring(
    mut ring: IoUring,
    lfd: RawFd,
    resp: &Responses,
    stop: &AtomicBool,
) -> io::Result<Tally> {
    let mut l = UringLoop {
        ring: &mut ring,
        slab: Slab::default(),
        tally: Tally::default(),
        resp,
    };
    accept(l.ring, lfd)?;
    let mut cqes: Vec<(u64, i32)> = Vec::new();
    let ts = Timespec::new().nsec((TICK_MS * 1_000_000) as u32);
    while !stop.load(Ordering::Relaxed) {
        wait(l.ring, &ts)?;
        cqes.clear();
        cqes.extend(l.ring.completion().map(|c| (c.user_data(), c.result())));
        for &(ud, res) in &cqes {
            l.complete(lfd, ud, res)?;
        }
    }
    let UringLoop { slab, tally, .. } = l;
    shut_down(&mut ring, slab, &ts);
    Ok(tally)
}

/// Cancels everything and gives the kernel a moment to finish with the
/// connections' buffers before they are freed (never, if it does not).
fn shut_down(ring: &mut IoUring, mut slab: Slab, ts: &Timespec) {
    let _ = push(
        ring,
        opcode::AsyncCancel2::new(CancelBuilder::any())
            .build()
            .user_data(S_CANCEL << 56),
    );
    let deadline = Instant::now() + Duration::from_secs(1);
    while slab.conns.iter().any(|c| c.inflight > 0) && Instant::now() < deadline {
        let _ = wait(ring, ts);
        for cqe in ring.completion() {
            let op = cqe.user_data() >> 56;
            let i = (cqe.user_data() & 0xffff_ffff) as usize;
            if (op == S_RECV || op == S_SEND) && i < slab.conns.len() {
                slab.conns[i].inflight = slab.conns[i].inflight.saturating_sub(1);
            }
        }
    }
    slab.close_all();
    if slab.conns.iter().any(|c| c.inflight > 0) {
        std::mem::forget(slab);
    }
}

/// The state of one server thread's loop.
struct UringLoop<'a> {
    ring: &'a mut IoUring,
    slab: Slab,
    tally: Tally,
    resp: &'a Responses,
}

impl UringLoop<'_> {
    fn complete(&mut self, lfd: RawFd, ud: u64, res: i32) -> io::Result<()> {
        let op = ud >> 56;
        let i = (ud & 0xffff_ffff) as usize;
        match op {
            S_ACCEPT => {
                if res >= 0 {
                    self.accepted(res)?;
                } else if res == -libc::EMFILE || res == -libc::ENFILE {
                    super::out_of_descriptors(-res);
                }
                accept(self.ring, lfd)
            }
            S_RECV | S_SEND => {
                let generation = ((ud >> 32) & 0xff_ffff) as u32;
                let conns = &mut self.slab.conns;
                if i >= conns.len() || conns[i].generation & 0xff_ffff != generation {
                    return Ok(());
                }
                conns[i].inflight -= 1;
                if op == S_RECV {
                    self.received(i, res)?;
                } else {
                    self.sent(i, res)?;
                }
                let c = &self.slab.conns[i];
                if c.closing && c.inflight == 0 {
                    self.slab.remove(i);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn accepted(&mut self, fd: RawFd) -> io::Result<()> {
        set_nodelay(fd);
        self.tally.connections += 1;
        let i = self.slab.insert(fd);
        self.slab.conns[i].recv_buf.resize(READ_BUF, 0);
        self.recv(i)
    }

    fn recv(&mut self, i: usize) -> io::Result<()> {
        let c = &mut self.slab.conns[i];
        let e = opcode::Recv::new(Fd(c.fd), c.recv_buf.as_mut_ptr(), c.recv_buf.len() as u32)
            .build()
            .user_data(s_ud(S_RECV, i, c.generation));
        c.inflight += 1;
        c.receiving = true;
        push(self.ring, e)
    }

    fn send(&mut self, i: usize) -> io::Result<()> {
        let c = &mut self.slab.conns[i];
        let b = c.unsent();
        let e = opcode::Send::new(Fd(c.fd), b.as_ptr(), b.len() as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(s_ud(S_SEND, i, c.generation));
        c.inflight += 1;
        c.sending = true;
        push(self.ring, e)
    }

    /// Marks the connection closing and cancels what is in flight; the slot
    /// is freed when the last completion arrives.
    fn close(&mut self, i: usize) -> io::Result<()> {
        let c = &mut self.slab.conns[i];
        if c.closing {
            return Ok(());
        }
        c.closing = true;
        if c.inflight == 0 {
            return Ok(());
        }
        let e = opcode::AsyncCancel2::new(CancelBuilder::fd(Fd(c.fd)).all())
            .build()
            .user_data(S_CANCEL << 56);
        push(self.ring, e)
    }

    fn received(&mut self, i: usize, res: i32) -> io::Result<()> {
        let c = &mut self.slab.conns[i];
        c.receiving = false;
        if c.closing {
            return Ok(());
        }
        if res <= 0 {
            return self.close(i);
        }
        let data = std::mem::take(&mut c.recv_buf);
        c.input(&data[..res as usize], self.resp, &mut self.tally);
        c.recv_buf = data;
        self.next(i)
    }

    fn sent(&mut self, i: usize, res: i32) -> io::Result<()> {
        let c = &mut self.slab.conns[i];
        c.sending = false;
        if c.closing {
            return Ok(());
        }
        if res < 0 {
            return self.close(i);
        }
        c.sent(res as usize, self.resp, &mut self.tally);
        self.next(i)
    }

    /// Sends what is queued unless a send is in flight, and receives again
    /// unless a receive is in flight or the responses are backed up (a
    /// client that does not read is not read either, until it catches up).
    fn next(&mut self, i: usize) -> io::Result<()> {
        let c = &self.slab.conns[i];
        if !c.sending && !c.unsent().is_empty() {
            self.send(i)?;
        }
        let c = &self.slab.conns[i];
        if c.close_after && !c.sending {
            return self.close(i);
        }
        if !c.receiving && c.wants_input() {
            self.recv(i)?;
        }
        Ok(())
    }
}
