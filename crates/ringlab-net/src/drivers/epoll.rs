//! wrk's design: non-blocking sockets, level-triggered epoll. A connection
//! always waits for input; it waits for output only while a write is short
//! (so the common case costs epoll_wait, read and send per response).

use super::{Driver, RunCtx};
use crate::client::{Client, ErrKind, Phase};
use crate::http::Flow;
use crate::sys::{self, Epoll, TimerFd};
use std::io;

/// Bytes one read may take; shared by all connections of the thread.
const READ_BUF: usize = 64 * 1024;
const EVENTS: usize = 1024;
/// The token of the fallback timerfd (no connection has this index).
const TIMER_TOKEN: u64 = u64::MAX;

pub struct EpollDriver {
    ep: Epoll,
    /// Whether each connection currently waits for EPOLLOUT.
    want_out: Vec<bool>,
    buf: Vec<u8>,
    stopping: bool,
    /// Where epoll_pwait2 is missing (before Linux 5.11): a timerfd in the
    /// set gives the wait its sub-millisecond deadline.
    timer: Option<TimerFd>,
}

fn token(i: usize, generation: u32) -> u64 {
    (generation as u64) << 32 | i as u64
}

impl EpollDriver {
    pub fn new(connections: usize) -> io::Result<EpollDriver> {
        Ok(EpollDriver {
            ep: Epoll::new()?,
            want_out: vec![false; connections],
            buf: vec![0; READ_BUF],
            stopping: false,
            timer: None,
        })
    }

    /// Waits for events at most `wait_ns`, to the nanosecond: epoll_pwait2,
    /// or a timerfd and epoll_wait on kernels without it (never
    /// epoll_wait's whole milliseconds, which delay open-loop requests).
    fn wait(
        &mut self,
        c: &mut Client,
        events: &mut [libc::epoll_event],
        wait_ns: u64,
    ) -> io::Result<usize> {
        c.stats.syscalls += 1;
        if self.timer.is_none() {
            if let Some(n) = self.ep.wait_ns(events, wait_ns)? {
                return Ok(n);
            }
            let t = TimerFd::new()?;
            self.ep
                .ctl(libc::EPOLL_CTL_ADD, t.0, libc::EPOLLIN as u32, TIMER_TOKEN)?;
            self.timer = Some(t);
        }
        if wait_ns == 0 {
            return self.ep.wait(events, 0);
        }
        if let Some(t) = &self.timer {
            c.stats.syscalls += 2; // timerfd_settime, and its read below
            t.arm(wait_ns)?;
            let n = self.ep.wait(events, -1)?;
            t.clear();
            return Ok(n);
        }
        self.ep.wait(events, -1)
    }

    fn open(&mut self, c: &mut Client, ctx: &RunCtx, i: usize) {
        let now = c.now();
        if self.stopping || !c.may_open(i, now) {
            return;
        }
        let fd = match sys::tcp_socket(ctx.addr.family(), true, &mut c.stats.syscalls) {
            Ok(fd) => fd,
            Err(_) => {
                c.count_error(ErrKind::Connect);
                c.reset(i);
                c.may_open(i, now);
                return;
            }
        };
        c.connecting(i, fd, now);
        c.stats.syscalls += 2; // connect, epoll_ctl
        let started = sys::connect(fd, &ctx.addr);
        let generation = c.conns[i].generation;
        let events = (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP) as u32;
        let added = self
            .ep
            .ctl(libc::EPOLL_CTL_ADD, fd, events, token(i, generation));
        self.want_out[i] = true;
        match (started, added) {
            (Ok(_), Ok(())) => {}
            _ => self.close(c, ctx, i, Some(ErrKind::Connect)),
        }
    }

    /// Closes connection `i`, counts `err`, and opens a new one.
    fn close(&mut self, c: &mut Client, ctx: &RunCtx, i: usize, err: Option<ErrKind>) {
        if let Some(k) = err {
            c.count_error(k);
        }
        // Closing the descriptor removes it from the epoll set.
        sys::close(c.conns[i].fd);
        c.stats.syscalls += 1;
        c.reset(i);
        self.open(c, ctx, i);
    }

    fn set_out(&mut self, c: &mut Client, i: usize, on: bool) {
        if self.want_out[i] == on {
            return;
        }
        self.want_out[i] = on;
        let mut events = (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
        if on {
            events |= libc::EPOLLOUT as u32;
        }
        c.stats.syscalls += 1;
        let conn = &c.conns[i];
        let _ = self.ep.ctl(
            libc::EPOLL_CTL_MOD,
            conn.fd,
            events,
            token(i, conn.generation),
        );
    }

    /// Writes what is queued; waits for EPOLLOUT only when the socket is full.
    fn flush(&mut self, c: &mut Client, ctx: &RunCtx, i: usize) {
        loop {
            let conn = &c.conns[i];
            if conn.unwritten().is_empty() {
                self.set_out(c, i, false);
                return;
            }
            c.stats.syscalls += 1;
            match sys::send(conn.fd, conn.unwritten()) {
                Ok(n) => c.wrote(i, n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.set_out(c, i, true);
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.close(c, ctx, i, Some(ErrKind::Write)),
            }
        }
    }

    fn readable(&mut self, c: &mut Client, ctx: &RunCtx, i: usize) {
        loop {
            c.stats.syscalls += 1;
            let fd = c.conns[i].fd;
            match sys::read(fd, &mut self.buf) {
                Ok(0) => {
                    let now = c.now();
                    let err = c.peer_closed(i, now);
                    return self.close(c, ctx, i, err);
                }
                Ok(n) => {
                    let now = c.now();
                    match c.received(i, &self.buf[..n], now) {
                        Ok(Flow::Continue) => {}
                        Ok(Flow::Close) => return self.close(c, ctx, i, None),
                        Err(k) => return self.close(c, ctx, i, Some(k)),
                    }
                    if n < self.buf.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.close(c, ctx, i, Some(ErrKind::Read)),
            }
        }
        let now = c.now();
        if c.fill(i, now) {
            self.flush(c, ctx, i);
        }
    }

    fn event(&mut self, c: &mut Client, ctx: &RunCtx, i: usize, ev: u32) {
        let err = ev & (libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0;
        match c.conns[i].phase {
            Phase::Connecting => {
                c.stats.syscalls += 1; // getsockopt
                if err || sys::socket_error(c.conns[i].fd).is_some() {
                    return self.close(c, ctx, i, Some(ErrKind::Connect));
                }
                if ev & libc::EPOLLOUT as u32 == 0 {
                    return;
                }
                c.connected(i);
                let now = c.now();
                c.fill(i, now);
                self.flush(c, ctx, i);
            }
            Phase::Open => {
                if ev & (libc::EPOLLIN | libc::EPOLLRDHUP) as u32 != 0 || err {
                    self.readable(c, ctx, i);
                }
                if ev & libc::EPOLLOUT as u32 != 0
                    && c.conns[i].phase == Phase::Open
                    && self.want_out[i]
                {
                    self.flush(c, ctx, i);
                }
            }
            Phase::Closed => {}
        }
    }
}

impl Driver for EpollDriver {
    fn run(&mut self, c: &mut Client, ctx: &RunCtx) -> io::Result<()> {
        for i in 0..c.conns.len() {
            self.open(c, ctx, i);
        }
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];
        let mut ready = Vec::new();
        loop {
            let now = c.now();
            if now >= ctx.end_ns || ctx.stopped() || c.halted() {
                break;
            }
            let wait_ns = c.wait_ns(now, ctx.end_ns);
            let n = self.wait(c, &mut events, wait_ns)?;
            for ev in &events[..n] {
                if ev.u64 == TIMER_TOKEN {
                    continue;
                }
                let i = (ev.u64 & 0xffff_ffff) as usize;
                let generation = (ev.u64 >> 32) as u32;
                if c.conns[i].generation != generation {
                    continue;
                }
                self.event(c, ctx, i, ev.events);
            }
            let now = c.now();
            ready.clear();
            c.due(now, &mut ready);
            for &i in &ready {
                let i = i as usize;
                if c.fill(i, now) {
                    self.flush(c, ctx, i);
                }
            }
            ready.clear();
            c.expired(now, &mut ready);
            for &i in &ready {
                self.close(c, ctx, i as usize, Some(ErrKind::Timeout));
            }
            ready.clear();
            c.retries(now, &mut ready);
            for &i in &ready {
                self.open(c, ctx, i as usize);
            }
            c.sample(now);
            ctx.publish(c);
        }
        self.stopping = true;
        for conn in &mut c.conns {
            sys::close(conn.fd);
            conn.fd = -1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientConfig;
    use std::time::Instant;

    fn client() -> Client {
        Client::new(ClientConfig::for_tests(1))
    }

    /// Both ways of waiting (epoll_pwait2, and the timerfd used before
    /// Linux 5.11) wait out their deadline and leave nothing pending.
    #[test]
    fn precise_waits_reach_their_deadline_and_leave_no_event() {
        for fallback in [false, true] {
            let mut d = EpollDriver::new(1).unwrap();
            if fallback {
                let t = TimerFd::new().unwrap();
                d.ep.ctl(libc::EPOLL_CTL_ADD, t.0, libc::EPOLLIN as u32, TIMER_TOKEN)
                    .unwrap();
                d.timer = Some(t);
            }
            let mut c = client();
            let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 4];
            let start = Instant::now();
            let n = d.wait(&mut c, &mut events, 1_500_000).unwrap();
            let waited = start.elapsed();
            assert!(n <= 1, "fallback {fallback}: {n} events");
            assert!(
                n == 0 || events[0].u64 == TIMER_TOKEN,
                "only the timer may fire"
            );
            assert!(
                waited.as_nanos() >= 1_500_000,
                "fallback {fallback}: woke after {waited:?}, before the deadline"
            );
            // Nothing is left readable: the timer's expiry was consumed.
            assert_eq!(d.wait(&mut c, &mut events, 0).unwrap(), 0);
            assert!(c.stats.syscalls >= 2);
        }
    }
}
