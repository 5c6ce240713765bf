//! What both event loops of `ringlab serve` share: a connection's buffers
//! and the logic that turns bytes read into queued responses, the slab of
//! connections, and the per-thread tallies.

use super::request::{answer, Responses};
use crate::sys;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes one receive may take.
pub const READ_BUF: usize = 16 * 1024;
/// How often a server thread looks at the stop flag.
pub const TICK_MS: u64 = 50;

/// What the server did, counted over all threads.
#[derive(Debug, Default)]
pub struct ServeCounts {
    pub requests: AtomicU64,
    pub bytes_read: AtomicU64,
    pub bytes_written: AtomicU64,
    pub connections: AtomicU64,
}

/// Per-thread tallies, added to the shared counts at the end.
#[derive(Default)]
pub struct Tally {
    pub requests: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub connections: u64,
}

impl Tally {
    pub fn add_to(&self, c: &ServeCounts) {
        c.requests.fetch_add(self.requests, Ordering::Relaxed);
        c.bytes_read.fetch_add(self.bytes_read, Ordering::Relaxed);
        c.bytes_written
            .fetch_add(self.bytes_written, Ordering::Relaxed);
        c.connections.fetch_add(self.connections, Ordering::Relaxed);
    }
}

/// One server connection.
#[derive(Default)]
pub struct SConn {
    pub fd: RawFd,
    pub generation: u32,
    /// Request bytes not yet answered.
    pub rbuf: Vec<u8>,
    /// Responses being written; `woff` of them are written.
    pub wbuf: Vec<u8>,
    pub woff: usize,
    /// Responses queued while a send from `wbuf` is in flight (io_uring:
    /// the kernel reads `wbuf`, so it must not move).
    pub pending: Vec<u8>,
    /// A send from `wbuf` is in flight (io_uring only).
    pub sending: bool,
    /// Close once the queued responses are written.
    pub close_after: bool,
    // epoll only:
    pub want_out: bool,
    /// epoll data: generation and slot.
    pub token: u64,
    // io_uring only:
    pub recv_buf: Vec<u8>,
    pub inflight: u32,
    pub closing: bool,
}

impl SConn {
    /// Bytes read from the socket: answers every complete request in them.
    pub fn input(&mut self, data: &[u8], resp: &Responses, tally: &mut Tally) {
        tally.bytes_read += data.len() as u64;
        if self.close_after {
            return;
        }
        self.rbuf.extend_from_slice(data);
        let out = if self.sending {
            &mut self.pending
        } else {
            &mut self.wbuf
        };
        let (used, reqs, close) = answer(&self.rbuf, out, resp);
        self.rbuf.drain(..used);
        tally.requests += reqs;
        self.close_after |= close;
    }

    /// Response bytes not yet handed to the kernel by a send.
    pub fn unsent(&self) -> &[u8] {
        &self.wbuf[self.woff..]
    }

    /// `n` bytes of `wbuf` went out; once all of it has, the responses
    /// queued meanwhile take its place.
    pub fn sent(&mut self, n: usize, tally: &mut Tally) {
        tally.bytes_written += n as u64;
        self.woff += n;
        if self.woff == self.wbuf.len() {
            self.wbuf.clear();
            self.woff = 0;
            std::mem::swap(&mut self.wbuf, &mut self.pending);
        }
    }
}

/// Connection slots reused through a free list.
#[derive(Default)]
pub struct Slab {
    pub conns: Vec<SConn>,
    free: Vec<usize>,
}

impl Slab {
    pub fn insert(&mut self, fd: RawFd) -> usize {
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                self.conns.push(SConn::default());
                self.conns.len() - 1
            }
        };
        let c = &mut self.conns[i];
        c.fd = fd;
        c.generation = c.generation.wrapping_add(1);
        c.rbuf.clear();
        c.wbuf.clear();
        c.pending.clear();
        c.woff = 0;
        c.close_after = false;
        c.want_out = false;
        c.inflight = 0;
        c.sending = false;
        c.closing = false;
        i
    }

    pub fn remove(&mut self, i: usize) {
        sys::close(self.conns[i].fd);
        self.conns[i].fd = -1;
        self.conns[i].generation = self.conns[i].generation.wrapping_add(1);
        self.free.push(i);
    }

    /// Closes every descriptor (the end of the run).
    pub fn close_all(&self) {
        for c in &self.conns {
            sys::close(c.fd);
        }
    }
}

pub fn set_nodelay(fd: RawFd) {
    let one: libc::c_int = 1;
    // SAFETY: `one` outlives the call; the length matches its type.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            &one as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}
