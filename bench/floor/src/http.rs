//! The floor of an HTTP/1.1 load loop on the io-uring crate: what wrk does
//! with `-t1 -cN` (one thread, N keep-alive connections, one request in
//! flight on each, `GET PATH` with a Host header) on one ring, and nothing
//! more: each connection's receive is one multishot receive into a
//! provided buffer ring, armed once; a response's end is found by its
//! Content-Length; the next request goes out in the same `io_uring_enter`
//! that waits for the next completion. No clock read per request, no
//! latency, no histogram, no status check beyond "HTTP/1.1 2".
//!
//! Command line: kstat-overhead.sh's for ringlab (`http ... -cN -dSECONDSs
//! ... URL`, other flags ignored); prints `{"http":{"responses":N}}` with
//! `--output-format json`.

use io_uring::types::{BufRingEntry, Fd};
use io_uring::{cqueue, opcode, IoUring};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

const BUF: usize = 4096;
const BGID: u16 = 1;
const SEND: u64 = 1 << 32;
const RECV: u64 = 2 << 32;

/// The send of connection `i`'s request.
fn send(fd: Fd, request: &[u8], i: usize) -> io_uring::squeue::Entry {
    opcode::Send::new(fd, request.as_ptr(), request.len() as u32)
        .build()
        .user_data(SEND | i as u64)
}

pub struct Args {
    pub conns: usize,
    pub secs: f64,
    pub url: String,
    pub json: bool,
}

/// One connection's response in progress: header bytes until its end is
/// found, then the body bytes still owed.
#[derive(Default)]
struct Conn {
    head: Vec<u8>,
    body_left: Option<usize>,
}

impl Conn {
    /// Takes received bytes; whether they ended the response.
    fn take(&mut self, mut data: &[u8]) -> Result<bool, String> {
        if self.body_left.is_none() {
            self.head.extend_from_slice(data);
            let Some(end) = self.head.windows(4).position(|w| w == b"\r\n\r\n") else {
                return Ok(false);
            };
            let head = std::str::from_utf8(&self.head[..end])
                .map_err(|_| "a response header that is not text")?;
            if !head.starts_with("HTTP/1.1 2") {
                return Err(format!(
                    "a response that is not a 2xx: {}",
                    head.lines().next().unwrap_or("")
                ));
            }
            let len = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .ok_or("a response without Content-Length")?;
            let rest = self.head.len() - (end + 4);
            self.head.clear();
            self.body_left = Some(len);
            data = &[];
            if rest > len {
                return Err("more bytes than the response held (pipelining is not sent)".into());
            }
            self.body_left = Some(len - rest);
        }
        let left = self.body_left.as_mut().expect("set above");
        if data.len() > *left {
            return Err("more bytes than the response held".into());
        }
        *left -= data.len();
        if *left == 0 {
            self.body_left = None;
            return Ok(true);
        }
        Ok(false)
    }
}

pub fn run(a: &Args) -> Result<u64, String> {
    let rest = a
        .url
        .strip_prefix("http://")
        .ok_or("the URL must start with http://")?;
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n").into_bytes();
    let mut socks = Vec::new();
    for _ in 0..a.conns {
        let s = TcpStream::connect(host).map_err(|e| format!("connecting to {host}: {e}"))?;
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        socks.push(s);
    }
    let entries = (2 * a.conns as u32).next_power_of_two().max(8);
    let mut ring: IoUring = IoUring::builder()
        .setup_cqsize(entries * 2)
        .setup_coop_taskrun()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries)
        .map_err(|e| format!("io_uring_setup: {e}"))?;
    // The provided buffer ring: page-aligned entries, then the buffers.
    let count: u16 = (2 * a.conns as u32).next_power_of_two().clamp(16, 32768) as u16;
    let mask = count - 1;
    let ring_bytes = usize::from(count) * std::mem::size_of::<BufRingEntry>();
    // SAFETY: an anonymous private mapping, unmapped never (the process
    // ends after the run).
    let entries_ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            ring_bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if entries_ptr == libc::MAP_FAILED {
        return Err("mmap of the buffer ring failed".into());
    }
    let entries_ptr = entries_ptr as *mut BufRingEntry;
    let bufs = vec![0u8; usize::from(count) * BUF];
    for i in 0..count {
        // SAFETY: i < count entries of the mapping.
        let e = unsafe { &mut *entries_ptr.add(usize::from(i)) };
        e.set_addr(bufs.as_ptr() as u64 + u64::from(i) * BUF as u64);
        e.set_len(BUF as u32);
        e.set_bid(i);
    }
    // SAFETY: the tail lives in the first entry's reserved field.
    let tail_ptr = unsafe { BufRingEntry::tail(entries_ptr) } as *mut u16;
    let mut tail: u16 = count;
    // SAFETY: a valid, page-aligned ring of `count` entries; the release
    // store publishes the entries written above.
    unsafe {
        std::sync::atomic::AtomicU16::from_ptr(tail_ptr)
            .store(tail, std::sync::atomic::Ordering::Release);
        ring.submitter()
            .register_buf_ring_with_flags(entries_ptr as u64, count, BGID, 0)
            .map_err(|e| format!("registering the buffer ring: {e}"))?;
    }
    let mut conns: Vec<Conn> = (0..a.conns).map(|_| Conn::default()).collect();
    let push = |ring: &mut IoUring, e: io_uring::squeue::Entry| -> Result<(), String> {
        // SAFETY: every buffer an entry names lives until the process ends.
        unsafe {
            if ring.submission().push(&e).is_err() {
                ring.submit().map_err(|e| e.to_string())?;
                ring.submission()
                    .push(&e)
                    .map_err(|_| "submission ring full")?;
            }
        }
        Ok(())
    };
    for (i, s) in socks.iter().enumerate() {
        let fd = Fd(s.as_raw_fd());
        push(&mut ring, send(fd, &request, i))?;
        push(
            &mut ring,
            opcode::RecvMulti::new(fd, BGID)
                .build()
                .user_data(RECV | i as u64),
        )?;
    }
    let mut responses = 0u64;
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(a.secs);
    let mut sending = true;
    let mut inflight = a.conns;
    let mut cqes: Vec<(u64, i32, u32)> = Vec::with_capacity(2 * entries as usize);
    while inflight > 0 {
        ring.submit_and_wait(1)
            .map_err(|e| format!("io_uring_enter: {e}"))?;
        cqes.clear();
        cqes.extend(
            ring.completion()
                .map(|c| (c.user_data(), c.result(), c.flags())),
        );
        let mut returned = 0u16;
        for &(ud, res, flags) in &cqes {
            let i = (ud & 0xffff_ffff) as usize;
            let fd = Fd(socks[i].as_raw_fd());
            if ud >> 32 == SEND >> 32 {
                if res != request.len() as i32 {
                    return Err(format!("a send returned {res} of {} bytes", request.len()));
                }
                continue;
            }
            if res < 0 {
                if res == -libc::ENOBUFS {
                    // Every provided buffer was taken: arm the receive again.
                    push(
                        &mut ring,
                        opcode::RecvMulti::new(fd, BGID)
                            .build()
                            .user_data(RECV | i as u64),
                    )?;
                    continue;
                }
                return Err(format!(
                    "a receive failed: {}",
                    std::io::Error::from_raw_os_error(-res)
                ));
            }
            if res == 0 {
                return Err("the server closed a connection".into());
            }
            let bid = cqueue::buffer_select(flags).ok_or("a receive without a buffer")?;
            let at = usize::from(bid) * BUF;
            let done = conns[i].take(&bufs[at..at + res as usize])?;
            // Hand the buffer back.
            // SAFETY: tail & mask < count entries of the mapping.
            let e =
                unsafe { &mut *entries_ptr.add(usize::from(tail.wrapping_add(returned) & mask)) };
            e.set_addr(bufs.as_ptr() as u64 + at as u64);
            e.set_len(BUF as u32);
            e.set_bid(bid);
            returned += 1;
            if !cqueue::more(flags) {
                push(
                    &mut ring,
                    opcode::RecvMulti::new(fd, BGID)
                        .build()
                        .user_data(RECV | i as u64),
                )?;
            }
            if done {
                responses += 1;
                // The clock is read every 64 responses, not per response.
                if sending && responses.is_multiple_of(64) && Instant::now() >= end {
                    sending = false;
                }
                if sending {
                    push(&mut ring, send(fd, &request, i))?;
                } else {
                    inflight -= 1;
                }
            }
        }
        if returned > 0 {
            tail = tail.wrapping_add(returned);
            // SAFETY: as above; publishes the entries handed back.
            unsafe {
                std::sync::atomic::AtomicU16::from_ptr(tail_ptr)
                    .store(tail, std::sync::atomic::Ordering::Release)
            };
        }
    }
    Ok(responses)
}
