//! The flags of `ringlab http` and the validated plan they resolve to.

pub use crate::config::IoKind;
use crate::config::{HttpConfig, HttpRing};
use anyhow::Result;
use clap::Args;
use ringlab_core::uring::cli::HttpKnobArgs;
use ringlab_core::uring::knobs::{apply_default_ring, Mode, RingUse, UringOptions};
use ringlab_core::uring::ring::kernel_has;
use ringlab_core::usage;
use ringlab_core::usage_error;
use ringlab_stats::units::parse_duration;
use serde_json::{Map, Value};
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

/// More connections than this is a typo, not a benchmark.
pub const CONNECTIONS_MAX: u32 = 1_000_000;
pub const THREADS_MAX: u32 = 1024;
pub const PIPELINE_MAX: u32 = 1024;

/// `ringlab http URL`: wrk's options, wrk2's -R, and the interface under test.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Load (wrk's options)")]
pub struct HttpArgs {
    /// http://host[:port][/path] to load.
    #[arg(value_name = "URL")]
    pub url: String,
    /// Client threads, each with its own event loop and share of connections.
    #[arg(short, long, value_name = "N", default_value_t = 2)]
    pub threads: u32,
    /// Connections kept open, spread over the threads.
    #[arg(short, long, value_name = "N", default_value_t = 10)]
    pub connections: u32,
    /// How long to run: 500ms, 10s, 1m.
    #[arg(short, long, value_name = "TIME", default_value = "10s")]
    pub duration: String,
    /// A request without its response after this long counts as a timeout
    /// error and its connection is reopened.
    #[arg(short = 'T', long, value_name = "TIME", default_value = "2s")]
    pub timeout: String,
    /// Print the latency distribution (wrk's; with -R, wrk2's HdrHistogram
    /// block and percentile spectrum).
    #[arg(short = 'L', long)]
    pub latency: bool,
    /// With -R: also print the uncorrected latency distribution (wrk2's
    /// -U), measured from when each request was sent.
    #[arg(short = 'U', long = "u_latency", alias = "u-latency")]
    pub u_latency: bool,
    /// Percentiles --latency prints, e.g. 50,90,95,99,99.9 (implies
    /// --latency).
    #[arg(long, value_name = "P,P,...", value_delimiter = ',')]
    pub percentile_list: Vec<f64>,
    /// Stop after N responses in total (ab's and oha's -n); --duration
    /// still bounds the run.
    #[arg(short = 'n', long = "requests", value_name = "N")]
    pub requests: Option<u64>,
    /// Load a wrk Lua script: setup, init, delay, request, response, done
    /// (wrk's SCRIPTING); its arguments follow `--`.
    #[arg(short, long, value_name = "FILE")]
    pub script: Option<String>,
    /// Arguments for the script's init(args), after `--`.
    #[arg(last = true, value_name = "SCRIPT ARGS")]
    pub script_args: Vec<String>,
    /// Add a request header, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub header: Vec<String>,
    /// Request method.
    #[arg(long, value_name = "METHOD", default_value = "GET")]
    pub method: String,
    /// Request body (sent with its Content-Length).
    #[arg(long, value_name = "TEXT")]
    pub body: Option<String>,
    /// Requests in flight per connection (HTTP pipelining).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub pipeline: u32,
    /// Open loop: total requests per second, each connection sending on a
    /// fixed schedule; latency counts from when a request was due (wrk2's
    /// coordinated-omission correction). Without it: closed loop, as wrk.
    #[arg(short = 'R', long, value_name = "REQ/S")]
    pub rate: Option<f64>,
    /// Interface under test: epoll, uring-nb, uring, uring-mshot.
    #[arg(long, value_enum, default_value_t = IoKind::Epoll)]
    pub io: IoKind,
    /// The io_uring knobs of the knob table that apply to socket rings.
    #[command(flatten)]
    pub ring: HttpKnobArgs,
    /// Do not collect kernel evidence (tracepoint counters, IPIs, helper
    /// threads) during the run.
    #[arg(long)]
    pub no_kstat: bool,

    /// How much kernel evidence to collect: `default` (system calls,
    /// io-wq offloads, context switches, IPIs, helper threads, and the
    /// proof of each knob asked for: under 2% of a CPU-bound run), `full`
    /// (every io_uring tracepoint: about 10% of a CPU-bound run at depth 1
    /// on zram) or `stages` (full, and each request's time in each stage,
    /// `ringlab io` on io_uring: about 20% there). Both also slow other
    /// processes' io_uring requests a little while they run.
    #[arg(long, value_name = "LEVEL", default_value = "default")]
    pub evidence: ringlab_kstat::Level,

    #[command(flatten)]
    pub shard: ringlab_core::shard::ShardArgs,
}

/// The parts of the URL a request needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    /// Path and query, at least "/".
    pub path: String,
    /// https://: TLS (rustls, user space) on every connection.
    pub tls: bool,
}

/// The validated configuration of one `ringlab http` run.
#[derive(Debug, Clone)]
pub struct HttpPlan {
    pub url: String,
    pub target: Target,
    pub addr: SocketAddr,
    pub threads: u32,
    pub connections: u32,
    pub duration: Duration,
    pub timeout: Duration,
    pub latency: bool,
    /// Percentiles of the latency distribution, in percent.
    pub percentiles: Option<Vec<f64>>,
    pub u_latency: bool,
    /// `-n`: total responses after which the run ends.
    pub total_requests: Option<u64>,
    pub script: Option<crate::script::ScriptSpec>,
    pub headers: Vec<String>,
    pub method: String,
    pub body: Option<String>,
    pub pipeline: u32,
    pub rate: Option<f64>,
    pub io: IoKind,
    /// Ring setup of the uring drivers, as it will be applied.
    pub ring: UringOptions,
    /// The ring knobs chosen by default, not given (the default ring).
    pub ring_defaults: Vec<&'static str>,
    /// Collect kernel evidence (not --no-kstat).
    pub kstat: bool,
    /// How much (--evidence).
    pub evidence: ringlab_kstat::Level,
    /// The bytes of one request, sent as they are.
    pub request: Vec<u8>,
    /// `ringlab wrk`: the run lasts --duration even when every thread
    /// stopped early (thread:stop(), as wrk's main thread sleeps it out),
    /// the figures are over the measured wall time, and the text is wrk's
    /// bytes only.
    pub wrk: bool,
    /// --shard, --start-at, --histograms. `rate`, `connections` and
    /// `threads` stay as given: `rate` is the whole run's (this shard runs
    /// its share), connections and threads are this shard's own.
    pub shards: ringlab_core::shard::ShardPlan,
}

fn duration_flag(flag: &str, text: &str) -> Result<Duration> {
    let d = parse_duration(text).map_err(|e| usage_error(format!("--{flag}: {e}")))?;
    if d.is_zero() {
        usage!("--{flag} {text}: must be longer than zero");
    }
    Ok(d)
}

/// Splits `http://host[:port][/path]`.
pub fn parse_url(url: &str) -> Result<Target> {
    let Some((scheme, rest)) = url.split_once("://") else {
        usage!("{url}: not a URL; write it like http://127.0.0.1:8080/ (scheme, host, optional port and path)");
    };
    let tls = match scheme.to_ascii_lowercase().as_str() {
        "http" => false,
        "https" => true,
        other => usage!("{url}: scheme '{other}' is not supported: use an http:// or https:// URL"),
    };
    // The fragment belongs to the client, never to the request line.
    let rest = rest.split_once('#').map_or(rest, |(r, _)| r);
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    if authority.contains('@') {
        usage!("{url}: the URL holds credentials (user:pass@), which ringlab http does not send from a URL; drop them and pass the header instead: -H \"Authorization: Basic $(printf %s USER:PASS | base64)\"");
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let Some((h, after)) = v6.split_once(']') else {
            usage!("{url}: unclosed '[' in the host");
        };
        (h.to_string(), after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() || host.contains(|c: char| c.is_whitespace()) {
        usage!("{url}: no host; write it like http://127.0.0.1:8080/");
    }
    let port = match port {
        None if tls => 443,
        None => 80,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => usage!("{url}: port '{p}' is not a number from 1 to 65535"),
        },
    };
    if path.contains(|c: char| c.is_whitespace() || c.is_control()) {
        usage!("{url}: the path holds spaces or control characters; percent-encode them");
    }
    Ok(Target {
        host,
        port,
        path,
        tls,
    })
}

impl HttpPlan {
    pub fn from_args(args: &HttpArgs) -> Result<HttpPlan> {
        let target = parse_url(&args.url)?;
        if args.threads == 0 || args.threads > THREADS_MAX {
            usage!(
                "--threads {}: must be between 1 and {THREADS_MAX}",
                args.threads
            );
        }
        if args.connections == 0 || args.connections > CONNECTIONS_MAX {
            usage!(
                "--connections {}: must be between 1 and {CONNECTIONS_MAX}",
                args.connections
            );
        }
        if args.connections < args.threads {
            usage!(
                "--connections {} is fewer than --threads {}: each thread needs at least one connection",
                args.connections,
                args.threads
            );
        }
        if args.pipeline == 0 || args.pipeline > PIPELINE_MAX {
            usage!(
                "--pipeline {}: must be between 1 and {PIPELINE_MAX}",
                args.pipeline
            );
        }
        let duration = duration_flag("duration", &args.duration)?;
        let timeout = duration_flag("timeout", &args.timeout)?;
        if let Some(r) = args.rate {
            if !(r.is_finite() && r > 0.0) {
                usage!("--rate {r}: must be a positive number of requests per second");
            }
        }
        let method = args.method.to_ascii_uppercase();
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            usage!(
                "--method {}: not an HTTP method (GET, POST, PUT, HEAD, ...)",
                args.method
            );
        }
        for h in &args.header {
            match h.split_once(':') {
                Some((name, _))
                    if !name.trim().is_empty()
                        && name.trim() == name
                        && !h.contains(['\r', '\n']) => {}
                _ => usage!("--header '{h}': write it as 'Name: value'"),
            }
        }
        check_framing_headers(&args.header)?;
        let defer = defer_pays(args.connections, args.threads);
        let (ring, ring_defaults) = check_ring(args.io, &args.ring, defer)?;
        if args.u_latency && args.rate.is_none() {
            usage!("--u_latency needs -R: without a rate there is no correction, so the uncorrected latency is the latency --latency prints");
        }
        for &p in &args.percentile_list {
            if !(p.is_finite() && p > 0.0 && p <= 100.0) {
                usage!("--percentile-list {p}: each percentile must be above 0 and at most 100");
            }
        }
        if args.requests == Some(0) {
            usage!("-n 0: give at least one request");
        }
        if !args.script_args.is_empty() && args.script.is_none() {
            usage!(
                "'{}' after '--' is for a script's init(args): add -s FILE",
                args.script_args[0]
            );
        }
        let script = match &args.script {
            Some(path) => Some(crate::script::ScriptSpec::load(
                path,
                args.script_args.clone(),
            )?),
            None => None,
        };
        let shards = args.shard.plan()?;
        if args.script.is_some() && shards.shard.is_some() {
            usage!("--shard with -s: a script's requests and delays are its own, and ringlab cannot split them between shards; run the script without --shard");
        }
        if let (Some(n), Some(_)) = (args.requests, &shards.shard) {
            if n < shards.count() as u64 {
                usage!(
                    "-n {n} is fewer than the {} shards: each needs at least one request",
                    shards.count()
                );
            }
        }
        let addr = resolve(&target)?;
        let request = build_request(&method, &target, &args.header, args.body.as_deref());
        Ok(HttpPlan {
            url: args.url.clone(),
            target,
            addr,
            threads: args.threads,
            connections: args.connections,
            duration,
            timeout,
            latency: args.latency || !args.percentile_list.is_empty(),
            percentiles: (!args.percentile_list.is_empty()).then(|| args.percentile_list.clone()),
            u_latency: args.u_latency,
            total_requests: args.requests,
            script,
            headers: args.header.clone(),
            method,
            body: args.body.clone(),
            pipeline: args.pipeline,
            rate: args.rate,
            io: args.io,
            ring,
            ring_defaults,
            kstat: !args.no_kstat,
            evidence: args.evidence,
            request,
            wrk: false,
            shards,
        })
    }

    /// This process's requests per second: the whole rate over the shards.
    pub fn shard_rate(&self) -> Option<f64> {
        self.rate.map(|r| r / self.shards.count() as f64)
    }

    /// Open loop: when connection `i` of client thread `t` sends its first
    /// request, in nanoseconds after the start. The connections of every
    /// shard are numbered `g = local * shards + shard` (local: the
    /// connection's number in this process), and connection `g` starts at
    /// `g / rate`: each connection then sends every `connections * shards /
    /// rate` seconds, and the union of all shards' requests is evenly
    /// spaced at `1 / rate`.
    pub fn first_due_ns(&self, t: u32, i: u32) -> u64 {
        let Some(rate) = self.rate else { return 0 };
        let before: u32 = (0..t).map(|u| self.connections_of(u)).sum();
        let local = (before + i) as u64;
        let g = local * self.shards.count() as u64 + self.shards.index() as u64;
        (g as f64 * 1e9 / rate) as u64
    }

    /// Whether responses carry no body whatever their headers say.
    pub fn head_request(&self) -> bool {
        self.method == "HEAD"
    }

    /// Connections of client thread `t` (wrk's split: an even share, the
    /// remainder to the first threads).
    pub fn connections_of(&self, t: u32) -> u32 {
        let base = self.connections / self.threads;
        if self.wrk {
            // wrk's own split: connections / threads each, the remainder
            // never opened (wrk -c10 -t3 keeps 9 open).
            return base;
        }
        base + u32::from(t < self.connections % self.threads)
    }

    /// The resolved options as a result's typed `config`.
    pub fn config(&self) -> HttpConfig {
        HttpConfig {
            url: self.url.clone(),
            threads: self.threads,
            connections: self.connections,
            duration: self.duration.as_secs_f64(),
            timeout: self.timeout.as_secs_f64(),
            latency: self.latency,
            u_latency: self.u_latency,
            percentile_list: self.percentiles.clone(),
            requests: self.total_requests,
            script: self.script.as_ref().map(|s| s.path.display().to_string()),
            script_args: self.script.as_ref().map(|s| s.args.clone()),
            header: self.headers.clone(),
            method: self.method.clone(),
            body: self.body.clone(),
            pipeline: self.pipeline,
            rate: self.rate,
            io: self.io,
            ring: HttpRing(self.ring.clone()),
            no_kstat: !self.kstat,
            evidence: self.evidence,
            default_knobs: self.ring_defaults.iter().map(|s| s.to_string()).collect(),
        }
    }

    pub fn config_map(&self) -> Map<String, Value> {
        self.config().to_map()
    }
}

/// The fewest connections per client thread at which the default ring
/// defers completion work (DEFER_TASKRUN). Co-run on CPU 0 against the
/// same client with the whole default ring (2026-12-02, docs/benchmarks.md),
/// COOP_TASKRUN and SINGLE_ISSUER alone made 1.028 [1.023-1.034] of its
/// responses per CPU-second at 10 connections, 1.006 at 20, 0.994 at 30,
/// 0.989 [0.983-0.992] at 50 and 0.990 at 400: deferring pays when each
/// wait finds many completions to run together, and costs when it finds
/// one or two.
pub const DEFER_TASKRUN_MIN_CONNECTIONS: u32 = 20;

/// Whether the default ring defers completion work for `connections` over
/// `threads`: the fewest a thread drives (wrk's split) is at least
/// [`DEFER_TASKRUN_MIN_CONNECTIONS`].
pub fn defer_pays(connections: u32, threads: u32) -> bool {
    connections / threads.max(1) >= DEFER_TASKRUN_MIN_CONNECTIONS
}

/// Refuses knob combinations the kernel (or the driver) cannot honour and
/// returns the knobs in effect (uring-mshot always runs single-issuer,
/// defer-taskrun and fixed files). Without `defer_pays` (see
/// [`defer_pays`]) the default ring leaves DEFER_TASKRUN out.
fn check_ring(
    io: IoKind,
    given: &HttpKnobArgs,
    defer_pays: bool,
) -> Result<(UringOptions, Vec<&'static str>)> {
    if let (IoKind::Epoll, Some(first)) = (io, given.given().first()) {
        usage!(
            "--{first} is an io_uring setting and --io epoll does not use io_uring: drop it or pick --io uring, uring-nb or uring-mshot"
        );
    }
    let mut k = given.apply()?;
    match k.mode {
        None | Some(Mode::Iou) => {}
        Some(m) => usage!(
            "--mode {} is a storage preset of ringlab io; ringlab http takes --mode iou (the bare kernel ring) or the knobs themselves",
            m.name()
        ),
    }
    if io == IoKind::UringMshot && (k.sqpoll || k.coop_taskrun || k.mode.is_some()) {
        usage!(
            "--io uring-mshot runs with DEFER_TASKRUN, which the kernel does not combine with --{}: drop it",
            if k.sqpoll {
                "sqpoll"
            } else if k.coop_taskrun {
                "coop-taskrun"
            } else {
                "mode iou (the bare ring)"
            }
        );
    }
    ringlab_core::uring::knobs::check_combinations(&k, &|f| format!("--{f}"))?;
    if io == IoKind::UringMshot {
        k.single_issuer = true;
        k.defer_taskrun = true;
        k.fixed_files = true;
        return Ok((k, Vec::new()));
    }
    if io == IoKind::Epoll {
        return Ok((k, Vec::new()));
    }
    // Each client thread owns its ring: the default ring of fio and
    // t/io_uring, where the kernel has it.
    let names = given.given();
    let ring_use = RingUse {
        given: &names,
        completion_thread: false,
        spins: false,
        defer_pays,
    };
    let defaults = apply_default_ring(&mut k, &ring_use, &kernel_has);
    Ok((k, defaults))
}

/// Headers that would contradict how ringlab frames its requests (it
/// counts every response against a request it wrote) are refused.
fn check_framing_headers(headers: &[String]) -> Result<()> {
    let named = |h: &String, name: &str| {
        h.split_once(':')
            .is_some_and(|(n, _)| n.trim().eq_ignore_ascii_case(name))
    };
    for h in headers {
        if named(h, "content-length") {
            usage!("--header '{h}': ringlab writes Content-Length itself from the body; give the body with --body (a wrong length makes the server wait for bytes that never come, or read the next request as body)");
        }
        if named(h, "transfer-encoding") {
            usage!("--header '{h}': ringlab sends its request body whole with its Content-Length and cannot send a chunked or encoded one; drop the header and give the body with --body");
        }
    }
    if headers.iter().filter(|h| named(h, "host")).count() > 1 {
        usage!(
            "--header: Host is given twice; a server answers 400 to that (RFC 9112 §3.2): keep one"
        );
    }
    Ok(())
}

fn resolve(t: &Target) -> Result<SocketAddr> {
    let addrs: Vec<SocketAddr> = match (t.host.as_str(), t.port).to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(e) => usage!(
            "cannot resolve host '{}': {e}; check the name or use an IP address",
            t.host
        ),
    };
    // IPv4 first, as most servers under test listen there.
    match addrs.iter().find(|a| a.is_ipv4()).or(addrs.first()) {
        Some(a) => Ok(*a),
        None => usage!("host '{}' has no address; check the name", t.host),
    }
}

/// The request as bytes: wrk's shape (Host first, user headers, body with
/// its Content-Length).
pub fn build_request(method: &str, t: &Target, headers: &[String], body: Option<&str>) -> Vec<u8> {
    let mut r = format!("{method} {} HTTP/1.1\r\n", t.path);
    let has = |name: &str| {
        headers.iter().any(|h| {
            h.split_once(':')
                .is_some_and(|(n, _)| n.trim().eq_ignore_ascii_case(name))
        })
    };
    if !has("host") {
        let host = if t.host.contains(':') {
            format!("[{}]", t.host)
        } else {
            t.host.clone()
        };
        if t.port == if t.tls { 443 } else { 80 } {
            r.push_str(&format!("Host: {host}\r\n"));
        } else {
            r.push_str(&format!("Host: {host}:{}\r\n", t.port));
        }
    }
    for h in headers {
        r.push_str(h);
        r.push_str("\r\n");
    }
    if let Some(b) = body {
        if !has("content-length") {
            r.push_str(&format!("Content-Length: {}\r\n", b.len()));
        }
    }
    r.push_str("\r\n");
    if let Some(b) = body {
        r.push_str(b);
    }
    r.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(line: &str) -> HttpPlan {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            http: HttpArgs,
        }
        use clap::Parser;
        let args = Cli::parse_from(std::iter::once("http").chain(line.split_whitespace()));
        HttpPlan::from_args(&args.http).unwrap()
    }

    #[test]
    fn shards_schedules_interleave_into_one_evenly_spaced_rate() {
        // 3 shards of -R 900, each -t 2 -c 3: every due time of the first
        // two seconds, all shards together, is a multiple of 1/900 s, once.
        let mut due = Vec::new();
        for s in 0..3 {
            let p = plan_of(&format!(
                "http://127.0.0.1:1/ -t 2 -c 3 -R 900 --shard {s}/3"
            ));
            assert_eq!(p.shard_rate(), Some(300.0));
            let interval = (p.connections as f64 / p.shard_rate().unwrap() * 1e9) as u64;
            for t in 0..p.threads {
                for i in 0..p.connections_of(t) {
                    let mut at = p.first_due_ns(t, i);
                    while at < 2_000_000_000 {
                        due.push(at);
                        at += interval;
                    }
                }
            }
        }
        due.sort_unstable();
        assert_eq!(due.len(), 1800);
        for (k, at) in due.iter().enumerate() {
            let want = k as f64 * 1e9 / 900.0;
            assert!(
                (*at as f64 - want).abs() < 2.0,
                "request {k} due at {at}, want {want}"
            );
        }
    }

    #[test]
    fn urls_split_into_host_port_path() {
        let t = parse_url("http://127.0.0.1:8080/a/b?x=1").unwrap();
        assert_eq!(
            t,
            Target {
                host: "127.0.0.1".into(),
                port: 8080,
                path: "/a/b?x=1".into(),
                tls: false,
            }
        );
        let t = parse_url("http://h/p?q=1#frag").unwrap();
        assert_eq!(t.path, "/p?q=1");
        let t = parse_url("http://localhost").unwrap();
        assert_eq!((t.port, t.path.as_str()), (80, "/"));
        let t = parse_url("https://h/").unwrap();
        assert_eq!((t.port, t.tls), (443, true));
        let t = parse_url("http://[::1]:81?q").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("::1", 81, "/?q")
        );
    }

    #[test]
    fn bad_urls_say_why() {
        for (url, want) in [
            ("ftp://x/", "scheme 'ftp'"),
            ("127.0.0.1:80", "not a URL"),
            ("http://:80/", "no host"),
            ("http://h:0/", "port '0'"),
            ("http://h:99999/", "port '99999'"),
            ("http://[::1/", "unclosed"),
            ("http://u:p@h/", "credentials"),
        ] {
            let e = parse_url(url).unwrap_err();
            assert!(e.to_string().contains(want), "{url}: {e}");
            assert!(e.is::<ringlab_core::UsageError>());
        }
    }

    #[test]
    fn request_has_host_headers_and_body_length() {
        let t = parse_url("http://h:8080/p").unwrap();
        let r = build_request("POST", &t, &["X-A: 1".into()], Some("abc"));
        assert_eq!(
            String::from_utf8(r).unwrap(),
            "POST /p HTTP/1.1\r\nHost: h:8080\r\nX-A: 1\r\nContent-Length: 3\r\n\r\nabc"
        );
        let r = build_request("GET", &t, &["host: other".into()], None);
        assert_eq!(
            String::from_utf8(r).unwrap(),
            "GET /p HTTP/1.1\r\nhost: other\r\n\r\n"
        );
    }

    #[test]
    fn framing_headers_are_refused_with_the_fix() {
        let h = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for (headers, want) in [
            (h(&["Content-Length: 5"]), "--body"),
            (h(&["content-length:5"]), "--body"),
            (h(&["Transfer-Encoding: chunked"]), "--body"),
            (h(&["Host: a", "host: b"]), "Host is given twice"),
        ] {
            let e = check_framing_headers(&headers).unwrap_err();
            assert!(e.to_string().contains(want), "{headers:?}: {e}");
            assert!(e.is::<ringlab_core::UsageError>());
        }
        assert!(check_framing_headers(&h(&["Host: a", "X-Length: 5"])).is_ok());
    }

    #[test]
    fn ring_knobs_that_contradict_are_refused() {
        let k = |given: &[(&'static str, Option<&str>)]| HttpKnobArgs::of(given);
        let check_ring = |io, given: &HttpKnobArgs| check_ring(io, given, false);
        assert!(check_ring(IoKind::Epoll, &k(&[("sqpoll", None)])).is_err());
        assert!(check_ring(IoKind::Uring, &k(&[("defer-taskrun", None)])).is_err());
        assert!(check_ring(
            IoKind::Uring,
            &k(&[("sqpoll", None), ("coop-taskrun", None)])
        )
        .is_err());
        assert!(check_ring(IoKind::UringMshot, &k(&[("sqpoll", None)])).is_err());
        let (m, _) = check_ring(IoKind::UringMshot, &k(&[])).unwrap();
        assert!(m.defer_taskrun && m.single_issuer && m.fixed_files);
        assert!(check_ring(IoKind::Uring, &k(&[("mode", Some("iou+k"))])).is_err());
        let (bare, none) = check_ring(IoKind::Uring, &k(&[("mode", Some("iou"))])).unwrap();
        assert!(none.is_empty() && !bare.coop_taskrun && !bare.defer_taskrun);
        assert!(check_ring(
            IoKind::Uring,
            &k(&[("defer-taskrun", None), ("single-issuer", None)])
        )
        .is_ok());
    }

    #[test]
    fn the_default_ring_defers_completion_work_only_for_many_connections_a_thread() {
        let none = HttpKnobArgs::of(&[]);
        let min = DEFER_TASKRUN_MIN_CONNECTIONS;
        assert!(defer_pays(min, 1) && defer_pays(2 * min, 2) && defer_pays(2 * min + 1, 2));
        assert!(!defer_pays(min - 1, 1) && !defer_pays(2 * min - 1, 2));
        let (many, chosen) = check_ring(IoKind::Uring, &none, defer_pays(min, 1)).unwrap();
        let (few, chosen_few) = check_ring(IoKind::Uring, &none, defer_pays(min - 1, 1)).unwrap();
        // Where the kernel has DEFER_TASKRUN, only the thread with many
        // connections gets it; the rest of the default ring is the same.
        assert_eq!(many.defer_taskrun, chosen.contains(&"defer-taskrun"));
        assert!(!few.defer_taskrun && !chosen_few.contains(&"defer-taskrun"));
        let mut rest = chosen.clone();
        rest.retain(|f| *f != "defer-taskrun");
        assert_eq!(rest, chosen_few);
        assert_eq!(few.single_issuer, many.single_issuer);
        // Asked for, it is kept at any count; uring-mshot always defers.
        let asked = HttpKnobArgs::of(&[("single-issuer", None), ("defer-taskrun", None)]);
        assert!(
            check_ring(IoKind::Uring, &asked, false)
                .unwrap()
                .0
                .defer_taskrun
        );
        assert!(
            check_ring(IoKind::UringMshot, &none, false)
                .unwrap()
                .0
                .defer_taskrun
        );
    }
}
