//! What both event loops of `ringlab serve` share: a connection's buffers
//! and the logic that turns bytes read into queued responses, the slab of
//! connections, and the per-thread tallies.

use super::request::{RequestParser, Responses};
use crate::sys;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes one receive may take.
pub const READ_BUF: usize = 16 * 1024;
/// How often a server thread looks at the stop flag.
pub const TICK_MS: u64 = 50;
/// A connection stops being read while this many response bytes wait to
/// be written (a client that sends and never reads), and is read again
/// once they are written: the server's memory per connection stays near
/// this bound plus one response, whatever the client does.
pub const OUT_LIMIT: usize = 256 * 1024;
/// Buffers that grew beyond this are given back once empty.
const KEEP_CAPACITY: usize = 64 * 1024;

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
    parser: RequestParser,
    /// Request bytes not yet answered.
    rbuf: Vec<u8>,
    /// Responses being written; `woff` of them are written.
    wbuf: Vec<u8>,
    woff: usize,
    /// Responses queued while a send from `wbuf` is in flight (io_uring:
    /// the kernel reads `wbuf`, so it must not move).
    pending: Vec<u8>,
    /// A send from `wbuf` is in flight (io_uring only).
    pub sending: bool,
    /// Close once the queued responses are written.
    pub close_after: bool,
    // epoll only:
    /// The events the connection waits for.
    pub interest: u32,
    /// epoll data: generation and slot.
    pub token: u64,
    // io_uring only:
    pub recv_buf: Vec<u8>,
    pub inflight: u32,
    /// A receive is in flight.
    pub receiving: bool,
    pub closing: bool,
}

impl SConn {
    /// Bytes read from the socket: answers the complete requests in them,
    /// as far as [`OUT_LIMIT`] allows.
    pub fn input(&mut self, data: &[u8], resp: &Responses, tally: &mut Tally) {
        tally.bytes_read += data.len() as u64;
        if self.close_after {
            return;
        }
        self.rbuf.extend_from_slice(data);
        self.answer(resp, tally);
    }

    /// Answers the buffered requests while the output has room.
    fn answer(&mut self, resp: &Responses, tally: &mut Tally) {
        if self.close_after || self.rbuf.is_empty() {
            return;
        }
        let unsent = self.wbuf.len() - self.woff;
        let (out, limit) = if self.sending {
            (&mut self.pending, OUT_LIMIT.saturating_sub(unsent))
        } else {
            (&mut self.wbuf, self.woff + OUT_LIMIT)
        };
        let a = self.parser.answer(&self.rbuf, out, resp, limit);
        self.rbuf.drain(..a.used);
        shrink_if_empty(&mut self.rbuf);
        tally.requests += a.requests;
        self.close_after |= a.close;
    }

    /// Response bytes waiting to be written.
    fn queued(&self) -> usize {
        self.wbuf.len() - self.woff + self.pending.len()
    }

    /// Whether the connection should be read: not while its responses are
    /// backed up past [`OUT_LIMIT`], nor once it is to be closed.
    pub fn wants_input(&self) -> bool {
        !self.close_after && self.queued() < OUT_LIMIT
    }

    /// Response bytes not yet handed to the kernel by a send.
    pub fn unsent(&self) -> &[u8] {
        &self.wbuf[self.woff..]
    }

    /// `n` bytes of `wbuf` went out; once all of it has, the responses
    /// queued meanwhile take its place, and requests held back for room
    /// are answered.
    pub fn sent(&mut self, n: usize, resp: &Responses, tally: &mut Tally) {
        tally.bytes_written += n as u64;
        self.woff += n;
        if self.woff == self.wbuf.len() {
            self.wbuf.clear();
            self.woff = 0;
            std::mem::swap(&mut self.wbuf, &mut self.pending);
            shrink_if_empty(&mut self.pending);
            shrink_if_empty(&mut self.wbuf);
            self.answer(resp, tally);
        }
    }

    /// Gives back every buffer (the connection is gone).
    fn release(&mut self) {
        self.rbuf = Vec::new();
        self.wbuf = Vec::new();
        self.pending = Vec::new();
        self.recv_buf = Vec::new();
        self.parser = RequestParser::default();
    }
}

fn shrink_if_empty(b: &mut Vec<u8>) {
    if b.is_empty() && b.capacity() > KEEP_CAPACITY {
        *b = Vec::new();
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
        let generation = c.generation.wrapping_add(1);
        *c = SConn {
            fd,
            generation,
            ..SConn::default()
        };
        i
    }

    /// Closes the connection and frees its buffers; the caller makes sure
    /// the kernel no longer uses them (io_uring: nothing in flight).
    pub fn remove(&mut self, i: usize) {
        let c = &mut self.conns[i];
        sys::close(c.fd);
        c.fd = -1;
        c.generation = c.generation.wrapping_add(1);
        c.release();
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
