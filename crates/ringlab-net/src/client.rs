//! The one connection state machine every driver shares: connect, queue
//! requests (closed loop, or open loop on a schedule), account written
//! bytes, parse what is read, record each response, close and reopen. A
//! driver only moves bytes and reports what the kernel said.

use crate::http::{Flow, ResponseParser};
use crate::script::ThreadScript;
use ringlab_stats::{DirectionRecorder, HttpErrors, LatencyRecorder};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::os::fd::RawFd;
use std::time::Instant;

/// Requests per second are sampled over windows this long (as wrk).
pub const SAMPLE_NS: u64 = 100_000_000;
/// A connection that ends without a response waits this long before it is
/// reopened, twice as long after each such end, at most [`BACKOFF_MAX_NS`];
/// a response resets it. A dead server then costs a few connects per
/// second per connection instead of a hot loop of them.
pub const BACKOFF_MIN_NS: u64 = 1_000_000;
pub const BACKOFF_MAX_NS: u64 = 128_000_000;

/// Kinds of socket error, each counted; the connection is then reopened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrKind {
    Connect,
    Read,
    Write,
    Timeout,
    Parse,
    /// The server closed the connection with a response outstanding.
    Closed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Closed,
    Connecting,
    Open,
}

#[derive(Debug, Clone, Copy)]
struct Sent {
    sent_ns: u64,
    due_ns: u64,
}

/// One connection's protocol state (the driver keeps its own mechanics).
#[derive(Debug)]
pub struct Conn {
    pub fd: RawFd,
    /// Bumped on every reopen, so a driver can drop stale events.
    pub generation: u32,
    pub phase: Phase,
    /// Request bytes queued; `woff` of them are written.
    pub wbuf: Vec<u8>,
    pub woff: usize,
    parser: ResponseParser,
    inflight: VecDeque<Sent>,
    /// Open loop: when this connection's next request is due.
    next_due_ns: u64,
    /// When the current connect began (connect timeout).
    since_ns: u64,
    timer_armed: bool,
    /// A response completed since the connection was opened.
    answered: bool,
    /// The current back-off, 0 when none.
    backoff_ns: u64,
    /// Not reopened before this time.
    retry_at_ns: u64,
    retry_armed: bool,
    /// Script delay(): the next request waits until `delay_due_ns`.
    delay_set: bool,
    delay_due_ns: u64,
    /// The TLS session of an https:// run; `wbuf` then holds ciphertext.
    tls: Option<Box<rustls::ClientConnection>>,
}

impl Conn {
    fn new() -> Conn {
        Conn {
            fd: -1,
            generation: 0,
            phase: Phase::Closed,
            wbuf: Vec::new(),
            woff: 0,
            parser: ResponseParser::new(),
            inflight: VecDeque::new(),
            next_due_ns: 0,
            since_ns: 0,
            timer_armed: false,
            answered: false,
            backoff_ns: 0,
            retry_at_ns: 0,
            retry_armed: false,
            delay_set: false,
            delay_due_ns: 0,
            tls: None,
        }
    }

    /// Bytes waiting to be written.
    pub fn unwritten(&self) -> &[u8] {
        &self.wbuf[self.woff..]
    }
}

/// What one client thread counted.
#[derive(Debug, Clone, Default)]
pub struct ClientStats {
    /// Responses: ops, bytes read from sockets, latency (corrected in open
    /// loop).
    pub responses: DirectionRecorder,
    /// Open loop only: latency from when each request was sent.
    pub lat_uncorrected: LatencyRecorder,
    pub requests_sent: u64,
    pub bytes_written: u64,
    pub status: Vec<u64>,
    pub errors: HttpErrors,
    pub connects: u64,
    /// System calls the driver made (each call site counts itself).
    pub syscalls: u64,
    /// False when the driver cannot count every call (SQPOLL wake-ups).
    pub syscalls_counted: bool,
    /// Requests per second of each 100 ms window.
    pub rate_samples: Vec<f64>,
}

impl ClientStats {
    pub fn merge(&mut self, o: &ClientStats) {
        self.responses.merge(&o.responses);
        self.lat_uncorrected.merge(&o.lat_uncorrected);
        self.requests_sent += o.requests_sent;
        self.bytes_written += o.bytes_written;
        if self.status.len() < o.status.len() {
            self.status.resize(o.status.len(), 0);
        }
        for (a, b) in self.status.iter_mut().zip(&o.status) {
            *a += b;
        }
        self.errors.merge(&o.errors);
        self.connects += o.connects;
        self.syscalls += o.syscalls;
        self.syscalls_counted &= o.syscalls_counted;
        self.rate_samples.extend_from_slice(&o.rate_samples);
    }
}

/// Settings of one client thread.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub connections: u32,
    pub request: Vec<u8>,
    pub head_request: bool,
    pub pipeline: u32,
    /// Open loop: nanoseconds between two requests of one connection.
    pub interval_ns: Option<u64>,
    /// Open loop: when each connection's first request is due (its phase
    /// in the run's schedule); empty: staggered evenly over one interval.
    pub first_due_ns: Vec<u64>,
    pub timeout_ns: u64,
    /// Requests in one request string (a script's pipelined request();
    /// 1 otherwise): each write queues that many responses.
    pub per_write: u32,
    /// `-n`: this thread's share of the total; it stops after that many
    /// responses.
    pub limit: Option<u64>,
    /// https://: each connection speaks TLS through this client.
    pub tls: Option<crate::tls::TlsClient>,
    /// wrk's timeouts (`ringlab wrk`): a connection is never closed for
    /// being slow; a response that took longer than the timeout counts as a
    /// timeout error and its latency is not recorded (wrk's stats_record
    /// refusing a value beyond its histogram).
    pub wrk_timeouts: bool,
    /// wrk2's calibration (`ringlab wrk -R`): at this time after the start
    /// the thread prints its "Thread calibration" line and starts its
    /// latency histograms afresh (wrk2 discards its warm-up); `None`
    /// otherwise.
    pub calibrate_at_ns: Option<u64>,
}

/// Latencies waiting to be recorded: a run of equal values goes into the
/// histogram with one `record_n` (responses reaped in one loop turn to
/// requests sent in one turn have the same latency, since the drivers read
/// the clock once per turn).
#[derive(Debug, Clone, Copy, Default)]
struct LatRun {
    ns: u64,
    n: u64,
}

impl LatRun {
    #[inline]
    fn add(&mut self, rec: &mut LatencyRecorder, ns: u64) {
        if ns == self.ns {
            self.n += 1;
        } else {
            rec.record_n(self.ns, self.n);
            *self = LatRun { ns, n: 1 };
        }
    }

    fn flush(&mut self, rec: &mut LatencyRecorder) {
        rec.record_n(self.ns, self.n);
        self.n = 0;
    }
}

/// A client thread's connections and counts.
pub struct Client {
    /// Latencies not yet in `stats.responses.lat` (see
    /// [`Client::flush_latency`]).
    lat_run: LatRun,
    pub conns: Vec<Conn>,
    pub stats: ClientStats,
    cfg: ClientConfig,
    base: Instant,
    timers: BinaryHeap<Reverse<(u64, u32)>>,
    /// Connections waiting out their back-off, by when they may reopen.
    retries: BinaryHeap<Reverse<(u64, u32)>>,
    next_timeout_check_ns: u64,
    timeout_check_every_ns: u64,
    sample_start_ns: u64,
    sample_start_ops: u64,
    /// When [`Client::sample`] next looks.
    next_sample_ns: u64,
    /// The thread's Lua state and hooks (`-s`); `None` without a script.
    pub script: Option<Box<ThreadScript>>,
    /// Requests dropped unanswered by a reconnect (for `-n`).
    lost: u64,
    /// Decrypted bytes of one read (TLS), kept to reuse its allocation.
    tls_plain: Vec<u8>,
    /// wrk2's calibration line, once printed.
    pub calibration: Option<String>,
}

impl Client {
    pub fn new(cfg: ClientConfig) -> Client {
        let n = cfg.connections as usize;
        let mut conns: Vec<Conn> = (0..n).map(|_| Conn::new()).collect();
        if let Some(iv) = cfg.interval_ns {
            // Stagger the schedules so the connections do not fire together.
            for (i, c) in conns.iter_mut().enumerate() {
                c.next_due_ns = match cfg.first_due_ns.get(i) {
                    Some(&due) => due,
                    None => iv * i as u64 / n as u64,
                };
            }
        }
        let every = (cfg.timeout_ns / 10).clamp(1_000_000, 100_000_000);
        let wrk_timeouts = cfg.wrk_timeouts;
        Client {
            lat_run: LatRun::default(),
            conns,
            stats: ClientStats {
                status: vec![0; 600],
                syscalls_counted: true,
                ..Default::default()
            },
            cfg,
            base: Instant::now(),
            timers: BinaryHeap::new(),
            retries: BinaryHeap::new(),
            // wrk's timeouts close nothing: no check is ever due.
            next_timeout_check_ns: if wrk_timeouts { u64::MAX } else { every },
            timeout_check_every_ns: every,
            sample_start_ns: 0,
            sample_start_ops: 0,
            next_sample_ns: SAMPLE_NS,
            script: None,
            lost: 0,
            tls_plain: Vec::new(),
            calibration: None,
        }
    }

    /// Runs the script's hooks on this client; response bodies are parsed
    /// only when the script defines response(), as in wrk.
    pub fn set_script(&mut self, s: ThreadScript) {
        if s.wants_response() {
            for c in &mut self.conns {
                c.parser.capture();
            }
        }
        self.script = Some(Box::new(s));
    }

    /// The thread is done before the end of the run: thread:stop(), a
    /// script error, or its `-n` share answered.
    #[inline]
    pub fn halted(&self) -> bool {
        self.script.as_ref().is_some_and(|s| s.halted())
            || self
                .cfg
                .limit
                .is_some_and(|l| self.stats.responses.ops >= l)
    }

    /// Restarts the clock (and the open-loop schedule) at the start of the
    /// measured run.
    pub fn start_clock(&mut self) {
        self.base = Instant::now();
    }

    /// Nanoseconds since the run started.
    #[inline]
    pub fn now(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    pub fn open_loop(&self) -> bool {
        self.cfg.interval_ns.is_some()
    }

    /// Whether connection `i` may be opened now; if it is backing off, it
    /// is scheduled and [`Client::retries`] hands it back when it may.
    pub fn may_open(&mut self, i: usize, now: u64) -> bool {
        let c = &mut self.conns[i];
        if c.retry_at_ns <= now {
            return true;
        }
        if !c.retry_armed {
            c.retry_armed = true;
            self.retries.push(Reverse((c.retry_at_ns, i as u32)));
        }
        false
    }

    /// Connections whose back-off ended by `now`: the driver opens them.
    pub fn retries(&mut self, now: u64, out: &mut Vec<u32>) {
        while let Some(&Reverse((t, i))) = self.retries.peek() {
            if t > now {
                break;
            }
            self.retries.pop();
            let c = &mut self.conns[i as usize];
            c.retry_armed = false;
            // Only a closed connection is opened; one that backs off again
            // is scheduled again.
            if c.phase == Phase::Closed && !self.may_open(i as usize, now) {
                continue;
            }
            if self.conns[i as usize].phase == Phase::Closed {
                out.push(i);
            }
        }
    }

    /// A connect is starting on `fd`.
    pub fn connecting(&mut self, i: usize, fd: RawFd, now: u64) {
        let c = &mut self.conns[i];
        c.fd = fd;
        c.phase = Phase::Connecting;
        c.since_ns = now;
        self.stats.connects += 1;
    }

    /// The connect completed; with TLS the session starts (its
    /// ClientHello goes out with the next [`Client::fill`]).
    pub fn connected(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.phase = Phase::Open;
        if let Some(t) = &self.cfg.tls {
            // A session that cannot be made (it never fails for a valid
            // config) leaves the connection without TLS: the server then
            // answers garbage and the parse error counts.
            c.tls = t.connect().ok().map(Box::new);
        }
    }

    /// Queues the requests this connection may send now; true when it has
    /// bytes to write.
    pub fn fill(&mut self, i: usize, now: u64) -> bool {
        let per_write = self.cfg.per_write.max(1) as usize;
        let limit_inflight = self.cfg.pipeline as usize * per_write;
        let c = &mut self.conns[i];
        if c.phase != Phase::Open {
            return false;
        }
        if c.woff == c.wbuf.len() {
            c.wbuf.clear();
            c.woff = 0;
        }
        // As wrk: no request before the TLS handshake is done (its time is
        // not a request's latency).
        let handshaking = c.tls.as_ref().is_some_and(|t| t.is_handshaking());
        while !handshaking && c.inflight.len() + per_write <= limit_inflight {
            if let Some(l) = self.cfg.limit {
                let outstanding = self.stats.requests_sent - self.stats.responses.ops - self.lost;
                if self.stats.responses.ops + outstanding >= l {
                    break;
                }
            }
            if self.cfg.interval_ns.is_some() && c.next_due_ns > now {
                if !c.timer_armed {
                    c.timer_armed = true;
                    self.timers.push(Reverse((c.next_due_ns, i as u32)));
                }
                break;
            }
            let due_ns = c.next_due_ns;
            let request: &[u8] = match self.script.as_deref_mut() {
                None => &self.cfg.request,
                Some(s) => {
                    if s.has_delay() {
                        if !c.delay_set {
                            c.delay_set = true;
                            c.delay_due_ns = now + s.delay_ns();
                        }
                        if c.delay_due_ns > now {
                            if !c.timer_armed {
                                c.timer_armed = true;
                                self.timers.push(Reverse((c.delay_due_ns, i as u32)));
                            }
                            break;
                        }
                        c.delay_set = false;
                    }
                    match s.next_request() {
                        Some(r) => r,
                        None => break,
                    }
                }
            };
            if let Some(iv) = self.cfg.interval_ns {
                c.next_due_ns += iv;
            }
            let due_ns = if self.cfg.interval_ns.is_some() {
                due_ns
            } else {
                now
            };
            match c.tls.as_deref_mut() {
                Some(t) => {
                    // Buffered in the session, encrypted just below.
                    let _ = std::io::Write::write_all(&mut t.writer(), request);
                }
                None => c.wbuf.extend_from_slice(request),
            }
            for _ in 0..per_write {
                c.inflight.push_back(Sent {
                    sent_ns: now,
                    due_ns,
                });
            }
            self.stats.requests_sent += per_write as u64;
        }
        if let Some(t) = c.tls.as_deref_mut() {
            // Handshake records, alerts and the encrypted requests.
            while t.wants_write() {
                match t.write_tls(&mut c.wbuf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        }
        c.woff < c.wbuf.len()
    }

    /// `n` bytes of the queued requests went out.
    pub fn wrote(&mut self, i: usize, n: usize) {
        let c = &mut self.conns[i];
        c.woff += n;
        self.stats.bytes_written += n as u64;
        if c.woff == c.wbuf.len() {
            c.wbuf.clear();
            c.woff = 0;
        }
    }

    /// Bytes read: parses them and records every complete response.
    /// `Ok(Flow::Close)` when the server said it closes.
    pub fn received(&mut self, i: usize, data: &[u8], now: u64) -> Result<Flow, ErrKind> {
        if self.conns[i].tls.is_some() {
            return self.received_tls(i, data, now);
        }
        self.received_plain(i, data, now)
    }

    /// Ciphertext read: decrypted, then parsed as plain bytes. A record
    /// that does not decrypt is a read error (a failed handshake a connect
    /// error), as wrk counts SSL errors.
    fn received_tls(&mut self, i: usize, mut data: &[u8], now: u64) -> Result<Flow, ErrKind> {
        let mut plain = std::mem::take(&mut self.tls_plain);
        plain.clear();
        let mut failed = None;
        // The server's close_notify: the end of the stream, as a TCP FIN
        // (some servers send it and keep the socket open).
        let mut closed = false;
        {
            let Some(t) = self.conns[i].tls.as_deref_mut() else {
                return Err(ErrKind::Read);
            };
            while !data.is_empty() {
                let handshaking = t.is_handshaking();
                let n = match t.read_tls(&mut data) {
                    Ok(n) => n,
                    Err(_) => {
                        failed = Some(ErrKind::Read);
                        break;
                    }
                };
                if let Err(_e) = t.process_new_packets() {
                    failed = Some(if handshaking {
                        ErrKind::Connect
                    } else {
                        ErrKind::Read
                    });
                    break;
                }
                let mut r = t.reader();
                let mut chunk = [0u8; 16 * 1024];
                loop {
                    match std::io::Read::read(&mut r, &mut chunk) {
                        Ok(0) => {
                            closed = true;
                            break;
                        }
                        Err(_) => break,
                        Ok(k) => plain.extend_from_slice(&chunk[..k]),
                    }
                }
                if n == 0 {
                    break;
                }
            }
        }
        let out = match failed {
            Some(k) => Err(k),
            None if plain.is_empty() => Ok(Flow::Continue),
            None => self.received_plain(i, &plain, now),
        };
        self.tls_plain = plain;
        match out {
            Ok(Flow::Continue) if closed => match self.peer_closed(i, now) {
                None => Ok(Flow::Close),
                Some(k) => Err(k),
            },
            out => out,
        }
    }

    /// Plain response bytes: parses them and records every complete
    /// response.
    fn received_plain(&mut self, i: usize, data: &[u8], now: u64) -> Result<Flow, ErrKind> {
        self.stats.responses.bytes += data.len() as u64;
        let head = self.cfg.head_request;
        let open_loop = self.open_loop();
        let late_ns = self.cfg.wrk_timeouts.then_some(self.cfg.timeout_ns);
        let c = &mut self.conns[i];
        let stats = &mut self.stats;
        let lat_run = &mut self.lat_run;
        let script = &mut self.script;
        let mut unsolicited = false;
        let flow = c
            .parser
            .feed_with(data, head, |resp, cap| match c.inflight.pop_front() {
                Some(s) => {
                    c.answered = true;
                    let lat = now.saturating_sub(if open_loop { s.due_ns } else { s.sent_ns });
                    stats.responses.ops += 1;
                    if late_ns.is_some_and(|t| lat > t) {
                        stats.errors.timeout += 1;
                    } else {
                        lat_run.add(&mut stats.responses.lat, lat);
                    }
                    if open_loop {
                        stats.lat_uncorrected.record(now.saturating_sub(s.sent_ns));
                    }
                    let code = (resp.status as usize).min(stats.status.len() - 1);
                    stats.status[code] += 1;
                    if let (Some(sc), Some(cap)) = (script.as_deref_mut(), cap) {
                        sc.response(resp.status, cap);
                    }
                }
                None => unsolicited = true,
            });
        if unsolicited {
            return Err(ErrKind::Parse);
        }
        flow.map_err(|_| ErrKind::Parse)
    }

    /// Records the latencies still held back as a run of equal values: the
    /// runner calls it once the driver returns, before `stats` is read.
    pub fn flush_latency(&mut self) {
        self.lat_run.flush(&mut self.stats.responses.lat);
    }

    /// The server closed the connection: a body framed by the close ends
    /// here; a response cut short or requests left unanswered are a
    /// `Closed` error.
    pub fn peer_closed(&mut self, i: usize, now: u64) -> Option<ErrKind> {
        let c = &mut self.conns[i];
        match c.parser.eof() {
            Ok(Some(resp)) => {
                // Count it through the normal path.
                if let Some(s) = c.inflight.pop_front() {
                    c.answered = true;
                    let open_loop = self.cfg.interval_ns.is_some();
                    let lat = now.saturating_sub(if open_loop { s.due_ns } else { s.sent_ns });
                    self.stats.responses.ops += 1;
                    if self.cfg.wrk_timeouts && lat > self.cfg.timeout_ns {
                        self.stats.errors.timeout += 1;
                    } else {
                        self.lat_run.add(&mut self.stats.responses.lat, lat);
                    }
                    if open_loop {
                        self.stats
                            .lat_uncorrected
                            .record(now.saturating_sub(s.sent_ns));
                    }
                    let code = (resp.status as usize).min(self.stats.status.len() - 1);
                    self.stats.status[code] += 1;
                    if let (Some(sc), Some(cap)) = (self.script.as_deref_mut(), c.parser.captured())
                    {
                        sc.response(resp.status, cap);
                    }
                }
                None
            }
            Err(_) => Some(ErrKind::Closed),
            Ok(None) if !c.inflight.is_empty() => Some(ErrKind::Closed),
            Ok(None) => None,
        }
    }

    pub fn count_error(&mut self, kind: ErrKind) {
        let e = &mut self.stats.errors;
        match kind {
            ErrKind::Connect => e.connect += 1,
            ErrKind::Read => e.read += 1,
            ErrKind::Write => e.write += 1,
            ErrKind::Timeout => e.timeout += 1,
            ErrKind::Parse => e.parse += 1,
            ErrKind::Closed => e.closed += 1,
        }
    }

    /// Forgets the connection's socket and partial state (the driver has
    /// closed the descriptor); unanswered requests are dropped. A
    /// connection that ended without a response backs off before it is
    /// reopened (see [`BACKOFF_MIN_NS`]).
    pub fn reset(&mut self, i: usize) {
        let now = self.now();
        let c = &mut self.conns[i];
        c.backoff_ns = if c.answered {
            0
        } else {
            (c.backoff_ns * 2).clamp(BACKOFF_MIN_NS, BACKOFF_MAX_NS)
        };
        c.retry_at_ns = now + c.backoff_ns;
        c.answered = false;
        c.fd = -1;
        c.phase = Phase::Closed;
        c.wbuf.clear();
        c.woff = 0;
        c.parser.reset();
        self.lost += c.inflight.len() as u64;
        c.inflight.clear();
        c.tls = None;
        c.delay_set = false;
        c.generation = c.generation.wrapping_add(1);
    }

    /// Connections whose open-loop request became due by `now`.
    pub fn due(&mut self, now: u64, out: &mut Vec<u32>) {
        while let Some(&Reverse((t, i))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            self.conns[i as usize].timer_armed = false;
            out.push(i);
        }
    }

    /// Connections stuck longer than --timeout (a request without its
    /// response, or a connect); checked every tenth of the timeout.
    pub fn expired(&mut self, now: u64, out: &mut Vec<u32>) {
        if now < self.next_timeout_check_ns {
            return;
        }
        self.next_timeout_check_ns = now + self.timeout_check_every_ns;
        let limit = self.cfg.timeout_ns;
        for (i, c) in self.conns.iter().enumerate() {
            let since = match c.phase {
                Phase::Connecting => Some(c.since_ns),
                Phase::Open => c.inflight.front().map(|s| s.sent_ns),
                Phase::Closed => None,
            };
            if since.is_some_and(|s| now.saturating_sub(s) > limit) {
                out.push(i as u32);
            }
        }
    }

    /// How long the driver may sleep: until the next due request, the next
    /// timeout check, the next rate sample or the end of the run.
    pub fn wait_ns(&self, now: u64, end_ns: u64) -> u64 {
        let mut t = end_ns
            .min(self.next_timeout_check_ns)
            .min(self.next_sample_ns);
        if let Some(&Reverse((due, _))) = self.timers.peek() {
            t = t.min(due);
        }
        if let Some(&Reverse((retry, _))) = self.retries.peek() {
            t = t.min(retry);
        }
        t.saturating_sub(now)
    }

    /// wrk2's `calibrate()`: once due, with a response recorded, prints
    /// "  Thread calibration: mean lat.: M ms, rate sampling interval: I ms"
    /// (mean of the latency so far, truncated to whole microseconds as
    /// wrk2's; the interval twice the 90th percentile in ms, at least 10)
    /// and resets the latency histograms; without a response it tries again
    /// 10 s later, as wrk2.
    fn calibrate(&mut self, now: u64) {
        let Some(at) = self.cfg.calibrate_at_ns else {
            return;
        };
        if now < at {
            return;
        }
        self.flush_latency();
        let lat = &self.stats.responses.lat;
        let (Some(s), Some(p90)) = (lat.summary(), lat.quantile(0.90)) else {
            self.cfg.calibrate_at_ns = Some(now + 10_000_000_000);
            return;
        };
        self.cfg.calibrate_at_ns = None;
        let mean_us = (s.mean / 1e3).trunc();
        let interval_ms = (p90 as f64 / 1e6 * 2.0).max(10.0).trunc();
        let line = format!(
            "  Thread calibration: mean lat.: {:.3}ms, rate sampling interval: {interval_ms:.0}ms\n",
            mean_us / 1e3
        );
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(line.as_bytes());
            let _ = out.flush();
        }
        self.calibration = Some(line);
        self.stats.responses.lat = LatencyRecorder::new();
        self.stats.lat_uncorrected = LatencyRecorder::new();
    }

    /// Closes a 100 ms rate window when one has passed.
    pub fn sample(&mut self, now: u64) {
        self.calibrate(now);
        if now < self.next_sample_ns {
            return;
        }
        self.next_sample_ns = now + SAMPLE_NS;
        let span = now.saturating_sub(self.sample_start_ns);
        if span >= SAMPLE_NS {
            let ops = self.stats.responses.ops;
            if ops == self.sample_start_ops {
                // wrk's record_rate: a window without a response records
                // nothing and the next sample spans it.
                return;
            }
            let rate = (ops - self.sample_start_ops) as f64 * 1e9 / span as f64;
            self.stats.rate_samples.push(rate);
            self.sample_start_ns = now;
            self.sample_start_ops = ops;
        }
    }
}

#[cfg(test)]
impl ClientConfig {
    /// The drivers' and the client's unit tests: `connections` closed-loop
    /// connections sending `GET /`, one request each, a 1 s timeout.
    pub(crate) fn for_tests(connections: u32) -> ClientConfig {
        ClientConfig {
            connections,
            request: b"GET / HTTP/1.1\r\n\r\n".to_vec(),
            head_request: false,
            pipeline: 1,
            interval_ns: None,
            first_due_ns: Vec::new(),
            timeout_ns: 1_000_000_000,
            per_write: 1,
            limit: None,
            tls: None,
            wrk_timeouts: false,
            calibrate_at_ns: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(pipeline: u32, interval_ns: Option<u64>) -> Client {
        Client::new(ClientConfig {
            pipeline,
            interval_ns,
            ..ClientConfig::for_tests(2)
        })
    }

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

    #[test]
    fn closed_loop_keeps_pipeline_full_and_records_each_response() {
        let mut c = client(3, None);
        c.connecting(0, 5, 0);
        c.connected(0);
        assert!(c.fill(0, 10));
        assert_eq!(c.conns[0].unwritten().len(), 3 * 18);
        c.wrote(0, 3 * 18);
        assert!(!c.fill(0, 10), "pipeline full");
        let two = [OK, OK].concat();
        assert_eq!(c.received(0, &two, 110), Ok(Flow::Continue));
        assert_eq!(c.stats.responses.ops, 2);
        c.flush_latency();
        assert_eq!(
            c.stats.responses.lat.count(),
            2,
            "one run of two equal latencies"
        );
        assert_eq!(c.stats.responses.lat.summary().unwrap().max, 100);
        assert!(c.fill(0, 120));
        assert_eq!(c.conns[0].unwritten().len(), 2 * 18);
        assert_eq!(c.stats.requests_sent, 5);
        assert_eq!(c.stats.status[200], 2);
    }

    #[test]
    fn open_loop_measures_from_due_time() {
        let mut c = client(1, Some(1000));
        c.connecting(0, 5, 0);
        c.connected(0);
        assert!(c.fill(0, 0)); // due at 0
        c.wrote(0, 18);
        // Response arrives late, at 2500: corrected latency 2500, the next
        // two requests were due at 1000 and 2000.
        c.received(0, OK, 2500).unwrap();
        assert!(c.fill(0, 2500));
        c.wrote(0, 18);
        c.received(0, OK, 2600).unwrap();
        c.flush_latency();
        let corrected = c.stats.responses.lat.summary().unwrap();
        let raw = c.stats.lat_uncorrected.summary().unwrap();
        assert_eq!(corrected.max, 2500);
        assert_eq!(corrected.min, 1600); // due 1000, done 2600
        assert_eq!(raw.min, 100); // sent 2500, done 2600
                                  // The third is due at 2000 <= now: sent at once; the fourth waits.
        assert!(c.fill(0, 2600));
        c.wrote(0, 18);
        assert!(!c.fill(0, 2600));
        let mut due = Vec::new();
        c.due(2999, &mut due);
        c.received(0, OK, 2700).unwrap();
        assert!(!c.fill(0, 2700), "next is due at 3000");
        c.due(3000, &mut due);
        assert_eq!(due, vec![0]);
        assert!(c.fill(0, 3000));
    }

    #[test]
    fn close_mid_response_and_unanswered_requests_are_errors() {
        let mut c = client(1, None);
        c.connecting(0, 5, 0);
        c.connected(0);
        c.fill(0, 0);
        assert_eq!(c.peer_closed(0, 5), Some(ErrKind::Closed));
        c.reset(0);
        c.connecting(0, 5, 0);
        c.connected(0);
        c.fill(0, 0);
        c.received(0, &OK[..10], 1).unwrap();
        assert_eq!(c.peer_closed(0, 5), Some(ErrKind::Closed));
        c.reset(0);
        assert_eq!(c.peer_closed(0, 5), None, "idle close is clean");
        assert_eq!(c.conns[0].generation, 2);
    }

    #[test]
    fn connections_without_a_response_back_off_until_one_completes() {
        let mut c = client(1, None);
        let mut due = Vec::new();
        let mut waits = Vec::new();
        for _ in 0..10 {
            let now = c.now();
            c.connecting(0, 5, now);
            c.reset(0); // refused: no response
            waits.push(c.conns[0].backoff_ns);
        }
        assert_eq!(waits[0], BACKOFF_MIN_NS);
        assert_eq!(waits[1], 2 * BACKOFF_MIN_NS);
        assert_eq!(waits[9], BACKOFF_MAX_NS, "capped: {waits:?}");
        let at = c.conns[0].retry_at_ns;
        assert!(!c.may_open(0, at - 1));
        assert!(!c.may_open(0, at - 1), "scheduled once");
        assert!(c.wait_ns(at - 1, u64::MAX) <= 1);
        c.retries(at - 1, &mut due);
        assert!(due.is_empty());
        c.retries(at, &mut due);
        assert_eq!(due, vec![0]);
        assert!(c.may_open(0, at));
        // A response resets the back-off.
        c.connecting(0, 5, at);
        c.connected(0);
        c.fill(0, at);
        c.wrote(0, 18);
        c.received(0, OK, at + 1).unwrap();
        c.reset(0);
        assert_eq!(c.conns[0].backoff_ns, 0);
        assert!(c.may_open(0, c.now()));
    }

    #[test]
    fn held_back_latencies_are_recorded_as_each_response_came() {
        let mut c = client(4, None);
        let mut each = LatencyRecorder::new();
        c.connecting(0, 5, 0);
        c.connected(0);
        // Four requests sent at 10, answered at 110, 110, 150 and 150,
        // then one sent at 150 answered at 400: runs 100 x2, 140 x2, 250.
        c.fill(0, 10);
        c.wrote(0, 4 * 18);
        c.received(0, &[OK, OK].concat(), 110).unwrap();
        c.received(0, &[OK, OK].concat(), 150).unwrap();
        c.fill(0, 150);
        c.received(0, OK, 400).unwrap();
        for v in [100, 100, 140, 140, 250] {
            each.record(v);
        }
        assert!(c.stats.responses.lat.count() < 5, "some are held back");
        c.flush_latency();
        c.flush_latency();
        assert_eq!(c.stats.responses.lat.summary(), each.summary());
        assert_eq!(c.stats.responses.lat.recorded(), each.recorded());
    }

    #[test]
    fn wrk2_calibration_prints_once_and_drops_the_warm_up() {
        let mut c = client(1, Some(1000));
        c.cfg.calibrate_at_ns = Some(10_000);
        c.connecting(0, 5, 0);
        c.connected(0);
        c.sample(10_000);
        assert!(c.calibration.is_none(), "no response yet: tried later");
        assert_eq!(c.cfg.calibrate_at_ns, Some(10_000_010_000));
        c.cfg.calibrate_at_ns = Some(20_000);
        c.fill(0, 0);
        c.wrote(0, 18);
        c.received(0, OK, 4_000_000).unwrap(); // 4 ms corrected latency
        c.sample(20_000);
        assert_eq!(
            c.calibration.as_deref(),
            Some("  Thread calibration: mean lat.: 4.000ms, rate sampling interval: 10ms\n")
        );
        assert_eq!(c.stats.responses.lat.count(), 0, "warm-up dropped");
        assert_eq!(c.stats.responses.ops, 1, "responses still counted");
        assert_eq!(c.cfg.calibrate_at_ns, None);
    }

    #[test]
    fn stuck_requests_expire() {
        let mut c = client(1, None);
        c.connecting(0, 5, 0);
        c.connected(0);
        c.fill(0, 0);
        c.connecting(1, 6, 0);
        let mut out = Vec::new();
        c.expired(500_000_000, &mut out);
        assert!(out.is_empty());
        c.expired(1_500_000_000, &mut out);
        assert_eq!(out, vec![0, 1]);
    }

    #[test]
    fn garbage_and_unsolicited_responses_are_parse_errors() {
        let mut c = client(1, None);
        c.connecting(0, 5, 0);
        c.connected(0);
        assert_eq!(
            c.received(0, OK, 1),
            Err(ErrKind::Parse),
            "nothing was sent"
        );
        c.reset(0);
        c.connecting(0, 5, 0);
        c.connected(0);
        c.fill(0, 0);
        assert_eq!(c.received(0, b"garbage\r\n\r\n", 1), Err(ErrKind::Parse));
    }
}
