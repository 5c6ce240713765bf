//! The epoll event loop of `ringlab serve`: non-blocking sockets,
//! level-triggered readiness, one shared listener (EPOLLEXCLUSIVE).

use super::conn::{set_nodelay, SConn, Slab, Tally, READ_BUF, TICK_MS};
use super::request::Responses;
use crate::sys::{self, Epoll};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

const LISTENER_TOKEN: u64 = u64::MAX;
/// The events of a connection that is read.
const READ: u32 = (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;

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
            let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
            if errno == libc::EMFILE || errno == libc::ENFILE {
                super::out_of_descriptors(errno);
            }
            return;
        }
        set_nodelay(fd);
        tally.connections += 1;
        let i = slab.insert(fd);
        let c = &mut slab.conns[i];
        c.token = (c.generation as u64) << 32 | i as u64;
        c.interest = READ;
        if ep.ctl(libc::EPOLL_CTL_ADD, fd, READ, c.token).is_err() {
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
    let Some(blocked) = write_all(c, resp, tally) else {
        return false;
    };
    if c.close_after && !blocked {
        return false;
    }
    // Not read while its responses are backed up: the client must read
    // them first (input resumes once they are written).
    let mut want = if c.wants_input() { READ } else { 0 };
    if blocked {
        want |= libc::EPOLLOUT as u32;
    }
    if want != c.interest {
        c.interest = want;
        let _ = ep.ctl(libc::EPOLL_CTL_MOD, c.fd, want, c.token);
    }
    true
}

/// Reads until the socket is empty or the responses are backed up; false
/// at end of stream or on an error.
fn read_all(c: &mut SConn, buf: &mut [u8], resp: &Responses, tally: &mut Tally) -> bool {
    while c.wants_input() || c.close_after {
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
    true
}

/// Writes the queued responses (answering held-back requests as room
/// frees up): `Some(true)` when the socket is full, `None` on an error.
fn write_all(c: &mut SConn, resp: &Responses, tally: &mut Tally) -> Option<bool> {
    while !c.unsent().is_empty() {
        match sys::send(c.fd, c.unsent()) {
            Ok(n) => c.sent(n, resp, tally),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Some(true),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(false)
}
