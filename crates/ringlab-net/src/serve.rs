//! `ringlab serve`: a minimal HTTP/1.1 keep-alive server on epoll or
//! io_uring, the other side of `ringlab http` in tests and comparisons. It
//! answers every request with 200 and a fixed body (nginx's `return 200`),
//! pipelined requests in one write, and counts what it served.

use crate::sys::{self, Epoll};
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use io_uring::types::{CancelBuilder, Fd, SubmitArgs, Timespec};
use io_uring::{opcode, squeue, IoUring};
use ringlab_core::usage;
use ringlab_core::usage_error;
use ringlab_stats::units::{format_bytes, parse_duration, parse_size};
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A request head larger than this is answered 431 and the connection closed.
const MAX_REQUEST_HEAD: usize = 64 * 1024;
const READ_BUF: usize = 16 * 1024;
/// How often a server thread looks at the stop flag.
const TICK_MS: u64 = 50;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ServeIo {
    Epoll,
    Uring,
}

/// `ringlab serve`: answers every request with 200 and a fixed body.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Server")]
pub struct ServeArgs {
    /// Interface: epoll (non-blocking sockets) or uring (io_uring accept,
    /// recv and send).
    #[arg(long, value_enum, default_value_t = ServeIo::Epoll)]
    pub io: ServeIo,
    /// Server threads, each with its own event loop on the shared listener.
    #[arg(short, long, value_name = "N", default_value_t = 1)]
    pub threads: u32,
    /// Address to listen on; port 0 picks a free port (printed on stderr).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Size of the response body: 0, 128, 4k.
    #[arg(long, value_name = "BYTES", default_value = "0")]
    pub body_size: String,
    /// Stop after this long [default: until SIGINT or SIGTERM].
    #[arg(short, long, value_name = "TIME")]
    pub duration: Option<String>,
}

/// What the server did, counted over all threads.
#[derive(Debug, Default)]
pub struct ServeCounts {
    pub requests: AtomicU64,
    pub bytes_read: AtomicU64,
    pub bytes_written: AtomicU64,
    pub connections: AtomicU64,
}

/// The end-of-run summary.
#[derive(Debug, Clone)]
pub struct ServeSummary {
    pub listen: SocketAddr,
    pub io: &'static str,
    pub threads: u32,
    pub elapsed_ns: u64,
    pub requests: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub connections: u64,
}

impl ServeSummary {
    pub fn text(&self) -> String {
        format!(
            "ringlab serve: {} requests on {} connections in {:.2}s, {} read, {} written ({}, {} thread{})\n",
            self.requests,
            self.connections,
            self.elapsed_ns as f64 / 1e9,
            format_bytes(self.bytes_read),
            format_bytes(self.bytes_written),
            self.io,
            self.threads,
            if self.threads == 1 { "" } else { "s" }
        )
    }

    pub fn json(&self) -> String {
        let v = serde_json::json!({
            "command": "serve",
            "listen": self.listen.to_string(),
            "io": self.io,
            "threads": self.threads,
            "elapsed_ns": self.elapsed_ns,
            "requests": self.requests,
            "connections": self.connections,
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
        });
        format!("{v:#}\n")
    }
}

/// The prebuilt responses.
struct Responses {
    full: Vec<u8>,
    head_only: Vec<u8>,
}

fn responses(body: u64) -> Responses {
    let head = format!("HTTP/1.1 200 OK\r\nServer: ringlab\r\nContent-Length: {body}\r\n\r\n");
    let mut full = head.clone().into_bytes();
    full.resize(full.len() + body as usize, b'x');
    Responses {
        full,
        head_only: head.into_bytes(),
    }
}

/// Parses the requests in `rbuf`, appends one response each to `out`.
/// Returns (bytes consumed, requests, close after writing).
fn answer(rbuf: &[u8], out: &mut Vec<u8>, resp: &Responses) -> (usize, u64, bool) {
    let mut used = 0;
    let mut n = 0;
    loop {
        let buf = &rbuf[used..];
        if buf.is_empty() {
            return (used, n, false);
        }
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(buf) {
            Ok(httparse::Status::Complete(h)) => {
                let mut body = 0usize;
                let mut close = req.version == Some(0);
                let mut bad = false;
                for hd in req.headers.iter() {
                    if hd.name.eq_ignore_ascii_case("content-length") {
                        match std::str::from_utf8(hd.value)
                            .ok()
                            .and_then(|s| s.trim().parse().ok())
                        {
                            Some(l) => body = l,
                            None => bad = true,
                        }
                    } else if hd.name.eq_ignore_ascii_case("transfer-encoding") {
                        // Chunked request bodies are out of scope.
                        bad = true;
                    } else if hd.name.eq_ignore_ascii_case("connection") {
                        let v = hd.value.to_ascii_lowercase();
                        if v.windows(5).any(|w| w == b"close") {
                            close = true;
                        } else if v.windows(10).any(|w| w == b"keep-alive") {
                            close = false;
                        }
                    }
                }
                if bad {
                    out.extend_from_slice(
                        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                    return (rbuf.len(), n, true);
                }
                if buf.len() < h + body {
                    return (used, n, false);
                }
                let head = req.method == Some("HEAD");
                out.extend_from_slice(if head { &resp.head_only } else { &resp.full });
                used += h + body;
                n += 1;
                if close {
                    return (rbuf.len(), n, true);
                }
            }
            Ok(httparse::Status::Partial) => {
                if buf.len() > MAX_REQUEST_HEAD {
                    out.extend_from_slice(b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    return (rbuf.len(), n, true);
                }
                return (used, n, false);
            }
            Err(_) => {
                out.extend_from_slice(
                    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                return (rbuf.len(), n, true);
            }
        }
    }
}

/// Per-thread tallies, added to the shared counts at the end.
#[derive(Default)]
struct Tally {
    requests: u64,
    bytes_read: u64,
    bytes_written: u64,
    connections: u64,
}

impl Tally {
    fn add_to(&self, c: &ServeCounts) {
        c.requests.fetch_add(self.requests, Ordering::Relaxed);
        c.bytes_read.fetch_add(self.bytes_read, Ordering::Relaxed);
        c.bytes_written
            .fetch_add(self.bytes_written, Ordering::Relaxed);
        c.connections.fetch_add(self.connections, Ordering::Relaxed);
    }
}

/// Binds, runs until `stop` or --duration, returns the summary. `on_listen`
/// is told the bound address once the server accepts connections.
pub fn serve(
    args: &ServeArgs,
    stop: Arc<AtomicBool>,
    on_listen: impl FnOnce(SocketAddr),
) -> Result<ServeSummary> {
    if args.threads == 0 || args.threads > 1024 {
        usage!("--threads {}: must be between 1 and 1024", args.threads);
    }
    let body = parse_size(&args.body_size).map_err(|e| usage_error(format!("--body-size: {e}")))?;
    if body > 1 << 30 {
        usage!("--body-size {}: at most 1 GiB", args.body_size);
    }
    let duration = match &args.duration {
        Some(d) => Some(parse_duration(d).map_err(|e| usage_error(format!("--duration: {e}")))?),
        None => None,
    };
    let addr: SocketAddr = match args.listen.parse() {
        Ok(a) => a,
        Err(_) => usage!(
            "--listen {}: not an address; write it like 127.0.0.1:8080 or [::1]:8080",
            args.listen
        ),
    };
    let listener = match TcpListener::bind(addr) {
        Ok(l) => l,
        Err(e) => usage!("--listen {addr}: {e}; pick another address or port"),
    };
    let local = listener.local_addr().context("reading the bound address")?;
    if args.io == ServeIo::Epoll {
        listener
            .set_nonblocking(true)
            .context("making the listener non-blocking")?;
    }
    let _ = sys::ensure_fd_limit(65_536);
    let counts = Arc::new(ServeCounts::default());
    let resp = Arc::new(responses(body));
    let lfd = listener.as_raw_fd();
    let mut handles = Vec::new();
    for t in 0..args.threads {
        let (stop, counts, resp, io) = (stop.clone(), counts.clone(), resp.clone(), args.io);
        let h = std::thread::Builder::new()
            .name(format!("ringlab-serve{t}"))
            .spawn(move || -> io::Result<()> {
                let tally = match io {
                    ServeIo::Epoll => serve_epoll(lfd, &resp, &stop),
                    ServeIo::Uring => serve_uring(lfd, &resp, &stop),
                };
                let r = tally.map(|t| t.add_to(&counts));
                if r.is_err() {
                    stop.store(true, Ordering::SeqCst);
                }
                r
            })
            .context("starting a server thread")?;
        handles.push(h);
    }
    on_listen(local);
    let start = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if duration.is_some_and(|d| start.elapsed() >= d) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::SeqCst);
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert(io::Error::other("a server thread panicked"));
            }
        }
    }
    drop(listener);
    if let Some(e) = first_err {
        return Err(anyhow::Error::new(e).context(format!("ringlab serve --io {:?}", args.io)));
    }
    Ok(ServeSummary {
        listen: local,
        io: match args.io {
            ServeIo::Epoll => "epoll",
            ServeIo::Uring => "uring",
        },
        threads: args.threads,
        elapsed_ns: start.elapsed().as_nanos() as u64,
        requests: counts.requests.load(Ordering::Relaxed),
        bytes_read: counts.bytes_read.load(Ordering::Relaxed),
        bytes_written: counts.bytes_written.load(Ordering::Relaxed),
        connections: counts.connections.load(Ordering::Relaxed),
    })
}

/// One server connection.
#[derive(Default)]
struct SConn {
    fd: RawFd,
    generation: u32,
    rbuf: Vec<u8>,
    wbuf: Vec<u8>,
    woff: usize,
    close_after: bool,
    want_out: bool,
    /// epoll data: generation and slot.
    token: u64,
    // io_uring only:
    pending: Vec<u8>,
    recv_buf: Vec<u8>,
    inflight: u32,
    sending: bool,
    closing: bool,
}

/// Connection slots reused through a free list.
#[derive(Default)]
struct Slab {
    conns: Vec<SConn>,
    free: Vec<usize>,
}

impl Slab {
    fn insert(&mut self, fd: RawFd) -> usize {
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

    fn remove(&mut self, i: usize) {
        sys::close(self.conns[i].fd);
        self.conns[i].fd = -1;
        self.conns[i].generation = self.conns[i].generation.wrapping_add(1);
        self.free.push(i);
    }
}

const LISTENER_TOKEN: u64 = u64::MAX;

fn serve_epoll(lfd: RawFd, resp: &Responses, stop: &AtomicBool) -> io::Result<Tally> {
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
            if !epoll_conn(
                &ep,
                &mut slab.conns[i],
                ev.events,
                &mut buf,
                resp,
                &mut tally,
            ) {
                slab.remove(i);
            }
        }
    }
    for c in &slab.conns {
        sys::close(c.fd);
    }
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
        if ep
            .ctl(
                libc::EPOLL_CTL_ADD,
                fd,
                (libc::EPOLLIN | libc::EPOLLRDHUP) as u32,
                token,
            )
            .is_err()
        {
            slab.remove(i);
        }
    }
}

fn set_nodelay(fd: RawFd) {
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

/// Handles one event; false when the connection is done.
fn epoll_conn(
    ep: &Epoll,
    c: &mut SConn,
    events: u32,
    buf: &mut [u8],
    resp: &Responses,
    tally: &mut Tally,
) -> bool {
    if events & (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0 {
        loop {
            match sys::read(c.fd, buf) {
                Ok(0) => return false,
                Ok(n) => {
                    tally.bytes_read += n as u64;
                    if !c.close_after {
                        c.rbuf.extend_from_slice(&buf[..n]);
                        let (used, reqs, close) = answer(&c.rbuf, &mut c.wbuf, resp);
                        c.rbuf.drain(..used);
                        tally.requests += reqs;
                        c.close_after |= close;
                    }
                    if n < buf.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }
    while c.woff < c.wbuf.len() {
        match sys::send(c.fd, &c.wbuf[c.woff..]) {
            Ok(n) => {
                c.woff += n;
                tally.bytes_written += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if !c.want_out {
                    c.want_out = true;
                    let _ = ep.ctl(
                        libc::EPOLL_CTL_MOD,
                        c.fd,
                        (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP) as u32,
                        token_of(c),
                    );
                }
                return true;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    c.wbuf.clear();
    c.woff = 0;
    if c.want_out {
        c.want_out = false;
        let _ = ep.ctl(
            libc::EPOLL_CTL_MOD,
            c.fd,
            (libc::EPOLLIN | libc::EPOLLRDHUP) as u32,
            token_of(c),
        );
    }
    !c.close_after
}

fn token_of(c: &SConn) -> u64 {
    c.token
}

const S_ACCEPT: u64 = 1;
const S_RECV: u64 = 2;
const S_SEND: u64 = 3;
const S_CANCEL: u64 = 4;

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

fn serve_uring(lfd: RawFd, resp: &Responses, stop: &AtomicBool) -> io::Result<Tally> {
    let mut ring = IoUring::builder().setup_cqsize(8192).build(2048)?;
    let mut tally = Tally::default();
    let mut slab = Slab::default();
    push(
        &mut ring,
        opcode::Accept::new(Fd(lfd), std::ptr::null_mut(), std::ptr::null_mut())
            .flags(libc::SOCK_CLOEXEC)
            .build()
            .user_data(S_ACCEPT << 56),
    )?;
    let mut cqes: Vec<(u64, i32)> = Vec::new();
    let ts = Timespec::new().nsec((TICK_MS * 1_000_000) as u32);
    while !stop.load(Ordering::Relaxed) {
        let args = SubmitArgs::new().timespec(&ts);
        match ring.submitter().submit_with_args(1, &args) {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EINTR)) => {}
            Err(e) => return Err(e),
        }
        cqes.clear();
        cqes.extend(ring.completion().map(|c| (c.user_data(), c.result())));
        for &(ud, res) in &cqes {
            let op = ud >> 56;
            let i = (ud & 0xffff_ffff) as usize;
            match op {
                S_ACCEPT => {
                    if res >= 0 {
                        set_nodelay(res);
                        tally.connections += 1;
                        let i = slab.insert(res);
                        slab.conns[i].recv_buf.resize(READ_BUF, 0);
                        uring_recv(&mut ring, &mut slab, i)?;
                    }
                    push(
                        &mut ring,
                        opcode::Accept::new(Fd(lfd), std::ptr::null_mut(), std::ptr::null_mut())
                            .flags(libc::SOCK_CLOEXEC)
                            .build()
                            .user_data(S_ACCEPT << 56),
                    )?;
                }
                S_RECV | S_SEND => {
                    let generation = ((ud >> 32) & 0xff_ffff) as u32;
                    if i >= slab.conns.len() || slab.conns[i].generation & 0xff_ffff != generation {
                        continue;
                    }
                    slab.conns[i].inflight -= 1;
                    if op == S_RECV {
                        uring_received(&mut ring, &mut slab, i, res, resp, &mut tally)?;
                    } else {
                        uring_sent(&mut ring, &mut slab, i, res, &mut tally)?;
                    }
                    let c = &slab.conns[i];
                    if c.closing && c.inflight == 0 {
                        slab.remove(i);
                    }
                }
                _ => {}
            }
        }
    }
    // Cancel everything and give the kernel a moment to finish with our
    // buffers before they are freed.
    let _ = push(
        &mut ring,
        opcode::AsyncCancel2::new(CancelBuilder::any())
            .build()
            .user_data(S_CANCEL << 56),
    );
    let deadline = Instant::now() + Duration::from_secs(1);
    while slab.conns.iter().any(|c| c.inflight > 0) && Instant::now() < deadline {
        let args = SubmitArgs::new().timespec(&ts);
        let _ = ring.submitter().submit_with_args(1, &args);
        for cqe in ring.completion() {
            let op = cqe.user_data() >> 56;
            let i = (cqe.user_data() & 0xffff_ffff) as usize;
            if (op == S_RECV || op == S_SEND) && i < slab.conns.len() {
                slab.conns[i].inflight = slab.conns[i].inflight.saturating_sub(1);
            }
        }
    }
    for c in &slab.conns {
        sys::close(c.fd);
    }
    if slab.conns.iter().any(|c| c.inflight > 0) {
        std::mem::forget(slab);
    }
    drop(ring);
    Ok(tally)
}

fn uring_recv(ring: &mut IoUring, slab: &mut Slab, i: usize) -> io::Result<()> {
    let c = &mut slab.conns[i];
    let e = opcode::Recv::new(Fd(c.fd), c.recv_buf.as_mut_ptr(), c.recv_buf.len() as u32)
        .build()
        .user_data(s_ud(S_RECV, i, c.generation));
    c.inflight += 1;
    push(ring, e)
}

fn uring_send(ring: &mut IoUring, slab: &mut Slab, i: usize) -> io::Result<()> {
    let c = &mut slab.conns[i];
    let b = &c.wbuf[c.woff..];
    let e = opcode::Send::new(Fd(c.fd), b.as_ptr(), b.len() as u32)
        .flags(libc::MSG_NOSIGNAL)
        .build()
        .user_data(s_ud(S_SEND, i, c.generation));
    c.inflight += 1;
    c.sending = true;
    push(ring, e)
}

fn uring_close(ring: &mut IoUring, slab: &mut Slab, i: usize) -> io::Result<()> {
    let c = &mut slab.conns[i];
    if c.closing {
        return Ok(());
    }
    c.closing = true;
    if c.inflight > 0 {
        push(
            ring,
            opcode::AsyncCancel2::new(CancelBuilder::fd(Fd(c.fd)).all())
                .build()
                .user_data(S_CANCEL << 56),
        )?;
    }
    Ok(())
}

fn uring_received(
    ring: &mut IoUring,
    slab: &mut Slab,
    i: usize,
    res: i32,
    resp: &Responses,
    tally: &mut Tally,
) -> io::Result<()> {
    if slab.conns[i].closing {
        return Ok(());
    }
    if res <= 0 {
        return uring_close(ring, slab, i);
    }
    tally.bytes_read += res as u64;
    let c = &mut slab.conns[i];
    if !c.close_after {
        let n = res as usize;
        let SConn {
            rbuf,
            recv_buf,
            wbuf,
            pending,
            sending,
            ..
        } = c;
        rbuf.extend_from_slice(&recv_buf[..n]);
        // While a send is in flight its buffer must not move: answer into
        // `pending` and send that when the send completes.
        let out = if *sending { pending } else { wbuf };
        let (used, reqs, close) = answer(rbuf, out, resp);
        rbuf.drain(..used);
        tally.requests += reqs;
        c.close_after |= close;
    }
    let c = &slab.conns[i];
    if !c.sending && c.woff < c.wbuf.len() {
        uring_send(ring, slab, i)?;
    }
    if !slab.conns[i].close_after {
        uring_recv(ring, slab, i)?;
    }
    Ok(())
}

fn uring_sent(
    ring: &mut IoUring,
    slab: &mut Slab,
    i: usize,
    res: i32,
    tally: &mut Tally,
) -> io::Result<()> {
    let c = &mut slab.conns[i];
    c.sending = false;
    if c.closing {
        return Ok(());
    }
    if res < 0 {
        return uring_close(ring, slab, i);
    }
    tally.bytes_written += res as u64;
    c.woff += res as usize;
    if c.woff == c.wbuf.len() {
        c.wbuf.clear();
        c.woff = 0;
        std::mem::swap(&mut c.wbuf, &mut c.pending);
    }
    if c.woff < c.wbuf.len() {
        return uring_send(ring, slab, i);
    }
    if c.close_after {
        return uring_close(ring, slab, i);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_pipelined_requests_with_bodies_and_close() {
        let r = responses(3);
        let mut out = Vec::new();
        let reqs = b"GET / HTTP/1.1\r\nHost: x\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nhiGET / HTTP/1.1\r\n";
        let (used, n, close) = answer(reqs, &mut out, &r);
        assert_eq!(n, 2);
        assert!(!close);
        assert_eq!(used, reqs.len() - b"GET / HTTP/1.1\r\n".len());
        assert_eq!(out, [r.full.clone(), r.full.clone()].concat());
        out.clear();
        let (_, n, close) = answer(
            b"HEAD / HTTP/1.1\r\nConnection: close\r\n\r\n",
            &mut out,
            &r,
        );
        assert_eq!((n, close), (1, true));
        assert_eq!(out, r.head_only);
        out.clear();
        let (_, n, close) = answer(b"\x16\x03\x01garbage\r\n\r\n", &mut out, &r);
        assert_eq!((n, close), (0, true));
        assert!(out.starts_with(b"HTTP/1.1 400"));
    }
}
