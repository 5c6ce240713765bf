//! The epoll event loop of `ringlab serve`: non-blocking sockets,
//! level-triggered readiness, one shared listener (EPOLLEXCLUSIVE).

use super::conn::{set_nodelay, SConn, Slab, Tally, READ_BUF, TICK_MS};
use super::request::Responses;
use crate::sys::{self, Epoll};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

const LISTENER_TOKEN: u64 = u64::MAX;

pub fn serve_epoll(lfd: RawFd, resp: &Responses, stop: &AtomicBool) -> io::Result<Tally> {
    let ep = Epoll::new()?;
    ep.ctl(
        libc::EPOLL_CTL_ADD,
        lfd,
        (libc::EPOLLIN | libc::EPOLLEXCLUSIVE) as u32,
        LISTENER_TOKEN,
    )?;
    let mut tally = Tally::default();
    let mut slab = Slab::default();
    let mut buf = vec![0u8; READ_BUF];
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 512];
    while !stop.load(Ordering::Relaxed) {
        let n = ep.wait(&mut events, TICK_MS as i32)?;
        for ev in &events[..n] {
            if ev.u64 == LISTENER_TOKEN {
                accept_all(lfd, &ep, &mut slab, &mut tally);
                continue;
            }
            let i = (ev.u64 & 0xffff_ffff) as usize;
            if slab.conns[i].generation != (ev.u64 >> 32) as u32 || slab.conns[i].fd < 0 {
                continue;
            }
            let c = &mut slab.conns[i];
            if !conn_event(&ep, c, ev.events, &mut buf, resp, &mut tally) {
                slab.remove(i);
            }
        }
    }
    slab.close_all();
    Ok(tally)
}

fn accept_all(lfd: RawFd, ep: &Epoll, slab: &mut Slab, tally: &mut Tally) {
    loop {
        // SAFETY: null address arguments are allowed by accept4.
        let fd = unsafe {
            libc::accept4(
                lfd,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            )
        };
        if fd < 0 {
            return;
        }
        set_nodelay(fd);
        tally.connections += 1;
        let i = slab.insert(fd);
        let token = (slab.conns[i].generation as u64) << 32 | i as u64;
        slab.conns[i].token = token;
        let events = (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
        if ep.ctl(libc::EPOLL_CTL_ADD, fd, events, token).is_err() {
            slab.remove(i);
        }
    }
}

/// Handles one event; false when the connection is done.
fn conn_event(
    ep: &Epoll,
    c: &mut SConn,
    events: u32,
    buf: &mut [u8],
    resp: &Responses,
    tally: &mut Tally,
) -> bool {
    let input = (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;
    if events & input != 0 && !read_all(c, buf, resp, tally) {
        return false;
    }
    write_all(ep, c, tally)
}

/// Reads until the socket is empty; false at end of stream or on an error.
fn read_all(c: &mut SConn, buf: &mut [u8], resp: &Responses, tally: &mut Tally) -> bool {
    loop {
        match sys::read(c.fd, buf) {
            Ok(0) => return false,
            Ok(n) => {
                c.input(&buf[..n], resp, tally);
                if n < buf.len() {
                    return true;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// Writes the queued responses; waits for EPOLLOUT only while the socket
/// is full. False when the connection is done.
fn write_all(ep: &Epoll, c: &mut SConn, tally: &mut Tally) -> bool {
    while !c.unsent().is_empty() {
        match sys::send(c.fd, c.unsent()) {
            Ok(n) => c.sent(n, tally),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                set_want_out(ep, c, true);
                return true;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    set_want_out(ep, c, false);
    !c.close_after
}

fn set_want_out(ep: &Epoll, c: &mut SConn, on: bool) {
    if c.want_out == on {
        return;
    }
    c.want_out = on;
    let mut events = (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
    if on {
        events |= libc::EPOLLOUT as u32;
    }
    let _ = ep.ctl(libc::EPOLL_CTL_MOD, c.fd, events, c.token);
}
