//! The io_uring drivers, one loop in three modes:
//!
//! - `uring-nb`: each operation is submitted as soon as it is prepared, and
//!   completions are taken one at a time (the thesis's io_uring-nb).
//! - `uring`: operations of all connections are prepared, then submitted
//!   and reaped in one batch per loop turn (the thesis's io_uring); where
//!   the kernel has it (Linux 6.0), each connection's receive is one
//!   multishot receive into a provided buffer ring, armed once, instead of
//!   a receive armed again after every response.
//! - `uring-mshot`: `uring` plus one multishot receive per connection into
//!   a provided buffer ring, sockets in the ring's file table, and
//!   SINGLE_ISSUER with DEFER_TASKRUN.
//!
//! A connection is closed only once none of its operations is in flight
//! (pending ones are cancelled first), so the kernel never writes into a
//! buffer that was reused, and no completion outlives its connection.

use super::{Driver, RunCtx};
use crate::client::{Client, ErrKind, Phase};
use crate::http::Flow;
use crate::plan::{HttpPlan, IoKind};
use crate::sys;
use io_uring::types::{BufRingEntry, CancelBuilder, Fd, Fixed, SubmitArgs, Timespec};
use io_uring::{cqueue, opcode, squeue, IoUring};
use ringlab_core::uring::{build_ring, UringOptions};
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

/// Receive buffer of each connection (uring, uring-nb): wrk's RECVBUF.
const RECV_BUF: usize = 8192;
/// Buffers of the provided ring (uring-mshot) and their size.
const RING_BUF: usize = 4096;
const BGID: u16 = 7;
/// How long the end of the run may wait for cancelled operations.
const DRAIN_LIMIT: Duration = Duration::from_secs(1);

/// IORING_RECVSEND_POLL_FIRST (Linux 5.19): a receive is armed right after
/// its request went out, so the socket is almost always empty; skip the
/// attempt that would fail and wait for data at once.
const RECV_POLL_FIRST: u16 = 1;

const OP_CONNECT: u64 = 1;
const OP_SEND: u64 = 2;
const OP_RECV: u64 = 3;
const OP_CANCEL: u64 = 4;

fn user_data(op: u64, i: usize, generation: u32) -> u64 {
    op << 56 | ((generation as u64) & 0xff_ffff) << 32 | i as u64
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Nb,
    Batch,
    Mshot,
}

/// The driver's view of one connection: which operations are in flight.
#[derive(Debug, Clone, Copy, Default)]
struct OpState {
    inflight: u32,
    connect: bool,
    send: bool,
    recv: bool,
    closing: bool,
}

/// A provided buffer ring (Linux 5.19): the kernel picks a buffer for each
/// multishot receive; the driver hands it back after parsing.
///
/// The ring holds `count` buffers but puts only `offered` of them in
/// circulation. The kernel takes entries in ring order and each buffer
/// goes back at the tail, so every buffer in circulation is used in turn:
/// at 10 connections with all 256 in circulation, a buffer came back every
/// 25 loop turns, cold (whatever shares the CPU ran in between) when the
/// kernel copied a response into it and the parser read it. With two a
/// connection (at least 16, bench/floor's ring), it comes back within about
/// two turns. Each time the kernel runs out (ENOBUFS: responses larger than
/// the set; the receive is armed again, nothing is lost), as many unused
/// buffers again join, up to `count`. Measured in one build, co-running
/// with itself (docs/benchmarks.md, 2026-12-07): at 10 connections, 32 in
/// circulation made 1.051 (1.019-1.156, 10 co-runs) of the responses per
/// client CPU-second that 256 made.
struct BufRing {
    entries: *mut BufRingEntry,
    ring_bytes: usize,
    count: u16,
    tail: u16,
    bufs: Vec<u8>,
    /// Buffers in circulation: bids `0..offered`.
    offered: u16,
}

impl BufRing {
    fn new(count: u16, offered: u16) -> io::Result<BufRing> {
        let ring_bytes = count as usize * std::mem::size_of::<BufRingEntry>();
        // SAFETY: an anonymous private mapping; checked for MAP_FAILED. The
        // kernel needs the ring page-aligned, which mmap guarantees.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut r = BufRing {
            entries: ptr as *mut BufRingEntry,
            ring_bytes,
            count,
            tail: 0,
            bufs: vec![0; count as usize * RING_BUF],
            offered: 0,
        };
        r.offer(offered.clamp(1, count));
        r.publish();
        Ok(r)
    }

    /// Queues buffer `bid` to be handed (back) to the kernel at the next
    /// [`BufRing::publish`].
    fn give(&mut self, bid: u16) {
        let idx = (self.tail & (self.count - 1)) as usize;
        // SAFETY: idx < count, inside the mapping; the kernel reads this
        // entry only after publish() stores the new tail.
        let e = unsafe { &mut *self.entries.add(idx) };
        e.set_addr(self.bufs[bid as usize * RING_BUF..].as_ptr() as u64);
        e.set_len(RING_BUF as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Puts `n` more unused buffers in circulation (fewer when fewer are left).
    fn offer(&mut self, n: u16) {
        let to = self.offered.saturating_add(n).min(self.count);
        for bid in self.offered..to {
            self.give(bid);
        }
        self.offered = to;
    }

    /// The kernel found no buffer (ENOBUFS): twice as many in circulation.
    fn ran_out(&mut self) {
        self.offer(self.offered);
    }

    /// Hands every buffer given since the last call to the kernel: one
    /// shared store per loop turn instead of one per receive.
    fn publish(&mut self) {
        // SAFETY: the tail field of entry 0 is the ring's shared tail; it is
        // a properly aligned u16 inside the mapping.
        let tail = unsafe { &*(BufRingEntry::tail(self.entries) as *const AtomicU16) };
        tail.store(self.tail, Ordering::Release);
    }

    fn buf(&self, bid: u16, len: usize) -> &[u8] {
        let start = bid as usize * RING_BUF;
        &self.bufs[start..start + len.min(RING_BUF)]
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: the mapping was made in `new` with this length; the ring
        // that used it is dropped before (field order of UringDriver).
        unsafe { libc::munmap(self.entries as *mut libc::c_void, self.ring_bytes) };
    }
}

pub struct UringDriver {
    // Field order is drop order: the ring goes before the buffers it uses.
    ring: IoUring,
    mode: Mode,
    /// Receives are multishot into the provided buffer ring `bufring`.
    mshot_recv: bool,
    fixed: bool,
    sqpoll: bool,
    ops: Vec<OpState>,
    recv_bufs: Vec<u8>,
    bufring: Option<BufRing>,
    stopping: bool,
    cqes: Vec<(u64, i32, u32)>,
    /// The clock (ns since the run started) read once per loop turn, right
    /// after the completions were reaped: the end of every response in the
    /// batch and the start of every request queued while processing it
    /// (those go out in the next io_uring_enter, later still). Each
    /// latency is so at most one turn's processing longer than the exact
    /// one, never shorter; a clock read per completion and per request is
    /// saved.
    turn_ns: u64,
}

/// One line that says why the ring could not be set up, and what to do:
/// the ring builder's explanation, for this `--io`.
pub fn explain_setup_error(plan: &HttpPlan, e: &io::Error) -> String {
    let what = format!("io_uring setup for --io {}", plan.io.name());
    if let Some(why) = sys::io_uring_refused(e, &what, "--io epoll") {
        return why;
    }
    if e.raw_os_error() == Some(libc::ENOMEM) {
        return format!(
            "io_uring setup for --io {}: {e}; the ring or its buffers do not fit in locked memory: lower --connections or raise 'ulimit -l'",
            plan.io.name()
        );
    }
    format!(
        "--io {}: {}",
        plan.io.name(),
        ringlab_core::uring::explain_setup_error(e, &plan.ring, "--io epoll")
    )
}

/// A registration after the ring was set up failed: say which, so the
/// setup flags are not blamed.
fn after_setup(e: io::Error, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// The ring of a driver: the plan's knobs, a completion ring four times
/// the submission ring, and SQPOLL's poller idling one second.
fn ring_options(knobs: &UringOptions, entries: u32) -> UringOptions {
    UringOptions {
        cq_size: Some(entries * 4),
        sqpoll_idle_ms: knobs.sqpoll.then_some(1000),
        ..knobs.clone()
    }
}

impl UringDriver {
    pub fn new(kind: IoKind, knobs: &UringOptions, connections: usize) -> io::Result<UringDriver> {
        let mode = match kind {
            IoKind::UringNb => Mode::Nb,
            IoKind::UringMshot => Mode::Mshot,
            _ => Mode::Batch,
        };
        let entries = (connections * 2).next_power_of_two().clamp(64, 4096) as u32;
        let ring = build_ring(entries, &ring_options(knobs, entries), None)?;
        let fixed = knobs.fixed_files;
        if fixed {
            ring.submitter()
                .register_files_sparse(connections as u32)
                .map_err(|e| after_setup(e, "registering a sparse file table (Linux 5.19)"))?;
        }
        let want_mshot = mode == Mode::Mshot || (mode == Mode::Batch && multishot_recv_in_kernel());
        let bufring = if want_mshot {
            let count = (connections * 2).next_power_of_two().clamp(256, 8192) as u16;
            let offered = (connections * 2).next_power_of_two().clamp(16, 8192) as u16;
            let br = BufRing::new(count, offered)?;
            // SAFETY: the ring memory stays mapped until after the IoUring
            // is dropped (field order), and holds `count` entries.
            let registered = unsafe {
                ring.submitter()
                    .register_buf_ring_with_flags(br.entries as u64, count, BGID, 0)
            };
            match registered {
                Ok(()) => Some(br),
                // `uring` falls back to one receive per response.
                Err(_) if mode == Mode::Batch => None,
                Err(e) => return Err(after_setup(
                    e,
                    "registering the provided buffer ring (IORING_REGISTER_PBUF_RING, Linux 5.19)",
                )),
            }
        } else {
            None
        };
        let mshot_recv = bufring.is_some();
        let recv_bufs = if mshot_recv {
            Vec::new()
        } else {
            vec![0; connections * RECV_BUF]
        };
        Ok(UringDriver {
            ring,
            mode,
            mshot_recv,
            fixed,
            sqpoll: knobs.sqpoll,
            ops: vec![OpState::default(); connections],
            recv_bufs,
            bufring,
            stopping: false,
            cqes: Vec::with_capacity(entries as usize * 4),
            turn_ns: 0,
        })
    }

    /// Enters the kernel: submits what is queued and, with `want`, waits for
    /// that many completions at most `wait_ns`.
    ///
    /// Through the crate's `Submitter` (libc's `syscall()`), not the inline
    /// instruction of [`ringlab_core::uring::enter`] that the storage loop
    /// uses: co-run against bench/floor's client at 10 connections (which
    /// waits through the crate), this loop made 0.966-0.984 of the floor's
    /// responses per CPU-second entering inline and 0.988-0.992 entering
    /// through the crate, in each of three builds (docs/benchmarks.md,
    /// 2026-12-02). How the inline path loses here is not known; like the
    /// storage loop's gain from it, it moved with the build's code layout.
    /// The crate also wakes an SQPOLL poller when it sleeps. Still
    /// `inline(always)`, as in every build those figures were measured in.
    #[inline(always)]
    fn enter(&mut self, c: &mut Client, want: usize, wait_ns: u64) -> io::Result<()> {
        if self.sqpoll {
            c.stats.syscalls_counted = false;
        } else {
            c.stats.syscalls += 1;
        }
        let r = if want > 0 {
            let ts = timespec(wait_ns);
            let args = SubmitArgs::new().timespec(&ts);
            self.ring.submitter().submit_with_args(want, &args)
        } else {
            // As the kernel needs: GETEVENTS where deferred task work or an
            // overflow waits (the crate's submit() checks both).
            self.ring.submit()
        };
        match r {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY) | Some(libc::EAGAIN)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Queues one operation; in uring-nb it is submitted at once.
    fn push(&mut self, c: &mut Client, e: squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: every buffer and address an entry points at (request
            // bytes, receive buffers, the peer address) stays alive and
            // unmoved until its completion: wbuf is not touched while a
            // send is in flight, and connections close only when idle.
            if unsafe { self.ring.submission().push(&e) }.is_ok() {
                break;
            }
            self.enter(c, 0, 0)?;
        }
        if self.mode == Mode::Nb {
            self.enter(c, 0, 0)?;
        }
        Ok(())
    }

    fn target(&self, c: &Client, i: usize) -> Target {
        if self.fixed {
            Target::Fixed(Fixed(i as u32))
        } else {
            Target::Fd(Fd(c.conns[i].fd))
        }
    }

    fn open(&mut self, c: &mut Client, ctx: &RunCtx, i: usize) -> io::Result<()> {
        let now = c.now();
        if self.stopping || !c.may_open(i, now) {
            return Ok(());
        }
        let fd = match sys::tcp_socket(ctx.addr.family(), false, &mut c.stats.syscalls) {
            Ok(fd) => fd,
            Err(_) => {
                c.count_error(ErrKind::Connect);
                c.reset(i);
                c.may_open(i, now);
                return Ok(());
            }
        };
        c.connecting(i, fd, now);
        if self.fixed {
            c.stats.syscalls += 1;
            if self
                .ring
                .submitter()
                .register_files_update(i as u32, &[fd])
                .is_err()
            {
                sys::close(fd);
                c.reset(i);
                c.count_error(ErrKind::Connect);
                c.may_open(i, now);
                return Ok(());
            }
        }
        let ud = user_data(OP_CONNECT, i, c.conns[i].generation);
        let (addr, len) = (ctx.addr.as_ptr(), ctx.addr.len);
        let e = match self.target(c, i) {
            Target::Fixed(f) => opcode::Connect::new(f, addr, len).build(),
            Target::Fd(f) => opcode::Connect::new(f, addr, len).build(),
        };
        let st = &mut self.ops[i];
        st.connect = true;
        st.inflight += 1;
        self.push(c, e.user_data(ud))
    }

    fn arm_recv(&mut self, c: &mut Client, i: usize) -> io::Result<()> {
        let ud = user_data(OP_RECV, i, c.conns[i].generation);
        let t = self.target(c, i);
        let e = if self.mshot_recv {
            match t {
                Target::Fixed(f) => opcode::RecvMulti::new(f, BGID).build(),
                Target::Fd(f) => opcode::RecvMulti::new(f, BGID).build(),
            }
        } else {
            let buf = self.recv_bufs[i * RECV_BUF..].as_mut_ptr();
            match t {
                Target::Fixed(f) => opcode::Recv::new(f, buf, RECV_BUF as u32)
                    .ioprio(RECV_POLL_FIRST)
                    .build(),
                Target::Fd(f) => opcode::Recv::new(f, buf, RECV_BUF as u32)
                    .ioprio(RECV_POLL_FIRST)
                    .build(),
            }
        };
        let st = &mut self.ops[i];
        st.recv = true;
        st.inflight += 1;
        self.push(c, e.user_data(ud))
    }

    /// Queues the connection's due requests and sends them, unless a send
    /// is already in flight (its completion sends the rest).
    fn fill_and_send(&mut self, c: &mut Client, i: usize) -> io::Result<()> {
        let st = self.ops[i];
        if st.send || st.closing || c.conns[i].phase != Phase::Open {
            return Ok(());
        }
        if !c.fill(i, self.turn_ns) {
            return Ok(());
        }
        self.send_rest(c, i)
    }

    /// Counts `err`, cancels what is in flight, and closes once idle.
    fn begin_close(
        &mut self,
        c: &mut Client,
        ctx: &RunCtx,
        i: usize,
        err: Option<ErrKind>,
    ) -> io::Result<()> {
        if let Some(k) = err {
            c.count_error(k);
        }
        if self.ops[i].closing || c.conns[i].phase == Phase::Closed {
            return Ok(());
        }
        self.ops[i].closing = true;
        if self.ops[i].inflight == 0 {
            return self.finish_close(c, ctx, i);
        }
        let builder = match self.target(c, i) {
            Target::Fixed(f) => CancelBuilder::fd(f).all(),
            Target::Fd(f) => CancelBuilder::fd(f).all(),
        };
        let e = opcode::AsyncCancel2::new(builder)
            .build()
            .user_data(OP_CANCEL << 56);
        self.push(c, e)
    }

    fn finish_close(&mut self, c: &mut Client, ctx: &RunCtx, i: usize) -> io::Result<()> {
        if self.fixed {
            c.stats.syscalls += 1;
            let _ = self.ring.submitter().register_files_update(i as u32, &[-1]);
        }
        c.stats.syscalls += 1;
        sys::close(c.conns[i].fd);
        c.reset(i);
        self.ops[i] = OpState::default();
        self.open(c, ctx, i)
    }

    fn complete(
        &mut self,
        c: &mut Client,
        ctx: &RunCtx,
        ud: u64,
        res: i32,
        flags: u32,
    ) -> io::Result<()> {
        let op = ud >> 56;
        if op == OP_CANCEL {
            return Ok(());
        }
        let i = (ud & 0xffff_ffff) as usize;
        let generation = ((ud >> 32) & 0xff_ffff) as u32;
        if i >= c.conns.len() || c.conns[i].generation & 0xff_ffff != generation {
            return Ok(());
        }
        match op {
            OP_CONNECT => {
                self.ops[i].connect = false;
                self.ops[i].inflight -= 1;
                if self.ops[i].closing {
                    return self.idle_check(c, ctx, i);
                }
                if res < 0 {
                    return self.begin_close(c, ctx, i, Some(ErrKind::Connect));
                }
                c.connected(i);
                self.arm_recv(c, i)?;
                self.fill_and_send(c, i)
            }
            OP_SEND => {
                self.ops[i].send = false;
                self.ops[i].inflight -= 1;
                if self.ops[i].closing {
                    // Bytes that left before the cancel still count.
                    if res > 0 {
                        c.stats.bytes_written += res as u64;
                    }
                    return self.idle_check(c, ctx, i);
                }
                if res < 0 {
                    return self.begin_close(c, ctx, i, Some(ErrKind::Write));
                }
                c.wrote(i, res as usize);
                if !c.conns[i].unwritten().is_empty() {
                    // A short send: the rest goes now (fill adds nothing
                    // while bytes are unwritten beyond the pipeline).
                    return self.send_rest(c, i);
                }
                self.fill_and_send(c, i)
            }
            OP_RECV => self.received(c, ctx, i, res, flags),
            _ => Ok(()),
        }
    }

    /// Sends what the connection has not written yet.
    fn send_rest(&mut self, c: &mut Client, i: usize) -> io::Result<()> {
        let b = c.conns[i].unwritten();
        let (ptr, len) = (b.as_ptr(), b.len() as u32);
        let ud = user_data(OP_SEND, i, c.conns[i].generation);
        let e = match self.target(c, i) {
            Target::Fixed(f) => opcode::Send::new(f, ptr, len)
                .flags(libc::MSG_NOSIGNAL)
                .build(),
            Target::Fd(f) => opcode::Send::new(f, ptr, len)
                .flags(libc::MSG_NOSIGNAL)
                .build(),
        };
        let st = &mut self.ops[i];
        st.send = true;
        st.inflight += 1;
        self.push(c, e.user_data(ud))
    }

    fn received(
        &mut self,
        c: &mut Client,
        ctx: &RunCtx,
        i: usize,
        res: i32,
        flags: u32,
    ) -> io::Result<()> {
        let more = self.mshot_recv && cqueue::more(flags);
        if !more {
            self.ops[i].recv = false;
            self.ops[i].inflight -= 1;
        }
        let bid = cqueue::buffer_select(flags);
        let closing = self.ops[i].closing;
        let outcome = if res > 0 && !closing {
            let now = self.turn_ns;
            let data: &[u8] = match (&self.bufring, bid) {
                (Some(br), Some(bid)) => br.buf(bid, res as usize),
                _ => &self.recv_bufs[i * RECV_BUF..i * RECV_BUF + res as usize],
            };
            Some(c.received(i, data, now))
        } else {
            None
        };
        if let (Some(br), Some(bid)) = (self.bufring.as_mut(), bid) {
            br.give(bid);
        }
        if closing {
            return self.idle_check(c, ctx, i);
        }
        match outcome {
            Some(Ok(Flow::Continue)) => {}
            Some(Ok(Flow::Close)) => return self.begin_close(c, ctx, i, None),
            Some(Err(k)) => return self.begin_close(c, ctx, i, Some(k)),
            None if res == 0 => {
                let now = self.turn_ns;
                let err = c.peer_closed(i, now);
                return self.begin_close(c, ctx, i, err);
            }
            None if res == -libc::ENOBUFS => {
                if let Some(br) = self.bufring.as_mut() {
                    br.ran_out();
                }
            }
            None => return self.begin_close(c, ctx, i, Some(ErrKind::Read)),
        }
        if !self.ops[i].recv {
            self.arm_recv(c, i)?;
        }
        self.fill_and_send(c, i)
    }

    fn idle_check(&mut self, c: &mut Client, ctx: &RunCtx, i: usize) -> io::Result<()> {
        if self.ops[i].closing && self.ops[i].inflight == 0 {
            self.finish_close(c, ctx, i)
        } else {
            Ok(())
        }
    }

    /// Takes the completions that are ready (one in uring-nb).
    fn reap(&mut self) {
        self.cqes.clear();
        let limit = if self.mode == Mode::Nb { 1 } else { usize::MAX };
        for cqe in self.ring.completion().take(limit) {
            self.cqes.push((cqe.user_data(), cqe.result(), cqe.flags()));
        }
    }

    fn process(&mut self, c: &mut Client, ctx: &RunCtx) -> io::Result<()> {
        let cqes = std::mem::take(&mut self.cqes);
        let mut r = Ok(());
        for &(ud, res, flags) in &cqes {
            r = self.complete(c, ctx, ud, res, flags);
            if r.is_err() {
                break;
            }
        }
        if let Some(br) = self.bufring.as_mut() {
            br.publish();
        }
        self.cqes = cqes;
        r
    }

    /// Cancels everything, waits (bounded) for the completions, closes all.
    fn drain(&mut self, c: &mut Client, ctx: &RunCtx) -> io::Result<()> {
        self.stopping = true;
        for i in 0..c.conns.len() {
            if c.conns[i].phase != Phase::Closed {
                self.begin_close(c, ctx, i, None)?;
            }
        }
        let start = Instant::now();
        while self.ops.iter().any(|s| s.inflight > 0) && start.elapsed() < DRAIN_LIMIT {
            self.enter(c, 1, 50_000_000)?;
            self.reap();
            self.turn_ns = c.now();
            self.process(c, ctx)?;
        }
        for conn in &mut c.conns {
            sys::close(conn.fd);
            conn.fd = -1;
        }
        if self.ops.iter().any(|s| s.inflight > 0) {
            // The kernel may still own buffers: never free them.
            std::mem::forget(std::mem::take(&mut self.recv_bufs));
            if let Some(br) = self.bufring.take() {
                std::mem::forget(br);
            }
        }
        Ok(())
    }
}

/// A wait bound of `ns` nanoseconds, as io_uring_enter takes it.
fn timespec(ns: u64) -> Timespec {
    Timespec::new()
        .sec(ns / 1_000_000_000)
        .nsec((ns % 1_000_000_000) as u32)
}

/// Whether the running kernel has multishot receive (IORING_RECV_MULTISHOT,
/// Linux 6.0); the provided buffer ring it needs is Linux 5.19.
fn multishot_recv_in_kernel() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    release_at_least(&release, 6, 0)
}

/// Whether a kernel release string ("6.1.0-13-amd64") is at least major.minor.
fn release_at_least(release: &str, major: u32, minor: u32) -> bool {
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
    let num = |p: Option<&str>| p.and_then(|s| s.parse::<u32>().ok());
    match (num(parts.next()), num(parts.next())) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => false,
    }
}

#[derive(Clone, Copy)]
enum Target {
    Fd(Fd),
    Fixed(Fixed),
}

impl Driver for UringDriver {
    fn run(&mut self, c: &mut Client, ctx: &RunCtx) -> io::Result<()> {
        for i in 0..c.conns.len() {
            self.open(c, ctx, i)?;
        }
        let mut ready = Vec::new();
        self.turn_ns = c.now();
        loop {
            // Closed loop: the turn's clock, read after the last reap (the
            // end of the run and the wait below are at most one turn's
            // processing late). Open loop reads it again, so a request is
            // not sent late by that much.
            let now = if c.open_loop() { c.now() } else { self.turn_ns };
            if now >= ctx.end_ns || ctx.stopped() || c.halted() {
                break;
            }
            if self.ring.completion().is_empty() {
                let wait = c.wait_ns(now, ctx.end_ns).max(1);
                self.enter(c, 1, wait)?;
            } else if !self.ring.submission().is_empty() {
                self.enter(c, 0, 0)?;
            }
            self.reap();
            self.turn_ns = c.now();
            self.process(c, ctx)?;
            let now = self.turn_ns;
            ready.clear();
            c.due(now, &mut ready);
            for &i in &ready {
                self.fill_and_send(c, i as usize)?;
            }
            ready.clear();
            c.expired(now, &mut ready);
            for &i in &ready {
                self.begin_close(c, ctx, i as usize, Some(ErrKind::Timeout))?;
            }
            ready.clear();
            c.retries(now, &mut ready);
            for &i in &ready {
                self.open(c, ctx, i as usize)?;
            }
            c.sample(now);
            ctx.publish(c);
        }
        self.drain(c, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientConfig;
    use std::time::Instant;

    /// A wait is given to the kernel to the nanosecond (the open loop's
    /// next due request is rarely on a whole millisecond): with nothing in
    /// flight, a wait of 1.5 ms returns no earlier than 1.5 ms, which a wait
    /// rounded down to 1 ms would not. Only the lower bound is checked: how
    /// late a busy machine wakes the thread is not this code's property.
    #[test]
    fn a_wait_reaches_its_nanosecond_deadline() {
        let mut c = Client::new(ClientConfig::for_tests(1));
        for kind in [IoKind::UringNb, IoKind::Uring] {
            let mut d = UringDriver::new(kind, &UringOptions::default(), 1)
                .unwrap_or_else(|e| panic!("io_uring ring for the client: {e}"));
            let start = Instant::now();
            d.enter(&mut c, 1, 1_500_000).unwrap();
            let waited = start.elapsed();
            assert!(
                waited.as_nanos() >= 1_500_000,
                "{kind:?}: woke after {waited:?}, before the 1.5 ms deadline"
            );
        }
    }

    /// The bids at the ring entries `from..to` (what the kernel would take).
    fn offered(r: &BufRing, from: u16, to: u16) -> Vec<u16> {
        (from..to)
            // SAFETY: each index is masked into the ring's `count` entries.
            .map(|t| unsafe { (*r.entries.add((t & (r.count - 1)) as usize)).bid() })
            .collect()
    }

    /// The ring puts a small set of its buffers in circulation, not all; a
    /// buffer taken and given back goes out again before any unused one;
    /// each time the kernel runs out, the set doubles, up to all.
    #[test]
    fn the_buffer_ring_circulates_a_small_set_and_grows_when_it_runs_out() {
        let mut r = BufRing::new(64, 16).unwrap();
        assert_eq!((r.tail, r.offered), (16, 16));
        assert_eq!(offered(&r, 0, 16), (0..16).collect::<Vec<_>>());
        // The kernel takes 0, 1 and 2; the driver gives them back as parsed.
        for bid in [0, 1, 2] {
            r.give(bid);
        }
        assert_eq!(offered(&r, 16, 19), [0, 1, 2]);
        // Runs out: 16 unused ones join.
        r.ran_out();
        assert_eq!((r.offered, r.tail), (32, 35));
        assert_eq!(offered(&r, 19, 35), (16..32).collect::<Vec<_>>());
        // Never more than the ring holds.
        r.ran_out();
        r.ran_out();
        assert_eq!((r.offered, r.tail), (64, 67));
    }

    #[test]
    fn kernel_release_compare() {
        assert!(release_at_least("6.18.44-fc-v595", 6, 0));
        assert!(release_at_least("6.0.0", 6, 0));
        assert!(!release_at_least("5.19.17-arch1", 6, 0));
        assert!(release_at_least("10.1", 6, 0));
        assert!(!release_at_least("unknown", 6, 0));
    }
}
