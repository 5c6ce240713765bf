//! The runner of `ringlab http`: descriptor limit, a first connect, client
//! threads started together, and the `RunResult` at the end.

use crate::client::{Client, ClientConfig, ClientStats};
use crate::drivers::epoll::EpollDriver;
use crate::drivers::uring::UringDriver;
use crate::drivers::{Driver, RunCtx};
use crate::plan::{HttpPlan, IoKind};
use crate::script::{DoneErrors, DoneSummary, ScriptRun, StatsUd, ThreadScript, WrkTable};
use crate::sys::{self, RawAddr};
use crate::text;
use anyhow::{anyhow, Result};
use ringlab_core::harness::{Aborted, Harness, JobSlot, JobSpec, RunHeader};
use ringlab_core::usage_error;
use ringlab_kstat::ThreadUsage;
use ringlab_stats::{
    DirectionFigures, Figures, HttpFigures, JobFigures, LatencyRecorder, RateSummary, RunResult,
    ThreadMeasurements, ToolInfo, SCHEMA_VERSION,
};
use std::collections::BTreeMap;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

/// Descriptors kept free beyond one per connection (rings, epoll, stdio).
const FD_SLACK: u64 = 64;

/// A finished run: the result, and its text in wrk's layout.
pub struct HttpOutcome {
    pub result: RunResult,
    pub text: String,
    /// The merged latency recorders (percentiles the result does not hold).
    pub lat: LatencyRecorder,
    pub lat_uncorrected: LatencyRecorder,
    /// Requests per second of each thread's 100 ms windows.
    pub rate_samples: Vec<f64>,
    /// The script's states, kept for done() (`-s`).
    pub script: Option<ScriptRun>,
}

impl HttpOutcome {
    /// Calls the script's done(summary, latency, requests), as wrk does
    /// after its report; a no-op without a script or without done().
    pub fn script_done(&self) -> Result<()> {
        let Some(s) = &self.script else { return Ok(()) };
        if !s.has_done() {
            return Ok(());
        }
        let t = &self.result.total;
        let mut errors = DoneErrors::default();
        if let Some(h) = &self.result.http {
            let e = &h.errors;
            errors = DoneErrors {
                connect: e.connect,
                // wrk counts parse errors and early closes as read errors.
                read: e.read + e.parse + e.closed,
                write: e.write,
                timeout: e.timeout,
                status: h
                    .status
                    .iter()
                    .filter(|(code, _)| code.parse::<u32>().is_ok_and(|c| c > 399))
                    .map(|(_, n)| n)
                    .sum(),
            };
        }
        let summary = DoneSummary {
            duration_us: t.elapsed_ns / 1000,
            requests: t.ops,
            bytes: t.bytes,
            errors,
        };
        s.done(
            &summary,
            StatsUd::latency(&self.lat),
            StatsUd::rates(&self.rate_samples),
        )
    }
}

struct ThreadOutcome {
    stats: ClientStats,
    measurements: ThreadMeasurements,
    script: Option<ThreadScript>,
}

/// The `wrk` table's starting values for `plan`.
fn wrk_table(plan: &HttpPlan) -> WrkTable {
    let rest = plan.url.split_once("://").map_or("", |(_, r)| r);
    let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = match authority.rsplit_once(':') {
        Some((h, p)) if !p.contains(']') && (!h.starts_with('[') || h.ends_with(']')) => {
            Some(p.to_string())
        }
        _ => None,
    };
    WrkTable {
        url: plan.url.clone(),
        scheme: plan
            .url
            .split_once("://")
            .map_or("http", |(s, _)| s)
            .to_ascii_lowercase(),
        host: plan.target.host.clone(),
        port,
        path: plan.target.path.clone(),
        method: plan.method.clone(),
        body: plan.body.clone(),
        headers: plan.headers.clone(),
        addr: plan.addr,
    }
}

/// Runs `plan` until its duration ends or `stop` is set (SIGINT).
pub fn run_http(plan: &HttpPlan, stop: Arc<AtomicBool>) -> Result<HttpOutcome> {
    let need = plan.connections as u64 + FD_SLACK + 4 * plan.threads as u64;
    sys::ensure_fd_limit(need)
        .map_err(|m| usage_error(format!("--connections {}: {m}", plan.connections)))?;
    probe(plan)?;
    // wrk's order: every state created, setup(thread) and init(args)
    // called, before any thread starts.
    let mut script = match &plan.script {
        Some(spec) => {
            // One call into the script may last no longer than the whole
            // run (-d plus --timeout).
            crate::script::watchdog::start(
                plan.duration + plan.timeout,
                format!(
                    "--script {} (-d {:?} plus --timeout {:?})",
                    spec.path.display(),
                    plan.duration,
                    plan.timeout
                ),
            );
            Some(ScriptRun::prepare(&wrk_table(plan), spec, plan.threads)?)
        }
        None => None,
    };
    let per_write = script.as_ref().map_or(1, |s| s.requests_per_write());

    // Counters open before the client threads exist, so they follow them.
    let mut kstat = plan.kstat.then(|| ringlab_kstat::Collector::open(None));
    let fds_before = open_fds();
    let n = plan.threads as usize;
    let progress: Vec<Arc<AtomicU64>> = (0..n).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let spec = JobSpec {
        count: plan.threads,
        thread_name: "ringlab-http",
        what: "client thread",
        fewer: "--threads",
    };
    // Each thread takes its own Lua state and address (setup() may set one
    // per thread) out of these when it starts.
    let ctxs: Vec<std::sync::Mutex<Option<ThreadCtx>>> = (0..plan.threads)
        .map(|t| {
            let thread_script = script
                .as_mut()
                .and_then(|s| s.threads.get_mut(t as usize))
                .and_then(Option::take);
            let addr = script
                .as_ref()
                .and_then(|s| s.addr_of(t as usize))
                .unwrap_or(plan.addr);
            std::sync::Mutex::new(Some(ThreadCtx {
                addr,
                per_write,
                script: thread_script,
            }))
        })
        .collect();
    let (p, pr) = (Arc::new(plan.clone()), progress.clone());
    let mut harness = Harness::spawn(&spec, move |slot| {
        let th = ctxs[slot.index as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| anyhow!("client thread {} started twice", slot.index))?;
        client_thread(th, &p, &slot, &pr[slot.index as usize])
    })?;
    if let Some(k) = &mut kstat {
        let threads = progress.clone();
        k.enable(Arc::new(move || {
            threads.iter().map(|p| p.load(Ordering::Relaxed)).sum()
        }));
    }
    let started_at = harness.start();
    // The kernel counts the measured run only, not the closing of the
    // connections after it; the per-request counters are counted in
    // sampling windows (as in ringlab io).
    harness.supervise(Some(plan.duration), &stop, |tick, _| {
        if let Some(k) = &mut kstat {
            k.tick(tick);
        }
    });
    if let Some(k) = &mut kstat {
        k.disable();
    }
    let mut outcomes = harness.finish(|_| false)?;
    if let Some(s) = &mut script {
        for (t, o) in outcomes.iter_mut().enumerate() {
            if let Some(ts) = o.script.take() {
                if let Some(e) = &ts.error {
                    return Err(anyhow!("client thread {t}: {e}"));
                }
                s.threads[t] = Some(ts);
            }
        }
    }
    let mut outcome = build(plan, started_at, outcomes, stop.load(Ordering::SeqCst));
    outcome.script = script;
    if let Some(k) = kstat {
        // Closes the counters' own descriptors, before they are counted.
        let t = &outcome.result.total;
        outcome.result.kstat = Some(k.finish(t.ops, t.cpu_user_ns + t.cpu_sys_ns));
    }
    let fds_after = open_fds();
    if let (Some(b), Some(a)) = (fds_before, fds_after) {
        if a > b {
            outcome.result.warnings.push(format!(
                "{} file descriptors were left open after the run (a bug: please report it)",
                a - b
            ));
        }
    }
    // Again: the kernel evidence and the descriptor check came after build.
    outcome.text = text::render(&outcome.result, &outcome.lat, &outcome.lat_uncorrected);
    Ok(outcome)
}

/// Descriptors open in this process, from /proc/self/fd.
fn open_fds() -> Option<usize> {
    Some(std::fs::read_dir("/proc/self/fd").ok()?.count())
}

/// One connect before the run, so that a refused or unreachable server is
/// one clear line and exit 2 rather than a run full of connect errors.
fn probe(plan: &HttpPlan) -> Result<()> {
    match TcpStream::connect_timeout(&plan.addr, plan.timeout) {
        Ok(_) => Ok(()),
        Err(e) => Err(usage_error(format!(
            "cannot connect to {} ({}): {e}; is the server running and listening there?",
            plan.addr, plan.url
        ))),
    }
}

/// What differs between client threads.
struct ThreadCtx {
    /// The server address (a script's setup() may set it per thread).
    addr: std::net::SocketAddr,
    per_write: u32,
    script: Option<ThreadScript>,
}

/// One client thread: its driver set up, then its share of connections
/// driven until the end of the run (or a failure, which is the run's error).
fn client_thread(
    th: ThreadCtx,
    plan: &HttpPlan,
    slot: &JobSlot,
    progress: &AtomicU64,
) -> Result<ThreadOutcome> {
    let t = slot.index;
    let connections = plan.connections_of(t);
    let request = th
        .script
        .as_ref()
        .and_then(|s| s.static_request())
        .map_or_else(|| plan.request.clone(), <[u8]>::to_vec);
    let cfg = ClientConfig {
        connections,
        request,
        per_write: th.per_write,
        limit: plan.total_requests.map(|n| {
            let k = plan.threads as u64;
            n / k + u64::from((t as u64) < n % k)
        }),
        head_request: plan.head_request(),
        pipeline: plan.pipeline,
        interval_ns: plan
            .rate
            .map(|r| ((plan.connections as f64 / r) * 1e9).max(1.0) as u64),
        timeout_ns: plan.timeout.as_nanos() as u64,
    };
    if plan.rate.is_some() || th.script.as_ref().is_some_and(|s| s.has_delay()) {
        // Timed waits wake on time, not up to 50 µs late.
        sys::set_timer_slack_ns(1);
    }
    let mut client = Client::new(cfg);
    if let Some(s) = th.script {
        client.set_script(s);
    }
    let driver: std::io::Result<Box<dyn Driver>> = match plan.io {
        IoKind::Epoll => EpollDriver::new(connections as usize).map(|d| Box::new(d) as _),
        kind => UringDriver::new(kind, &plan.ring, connections as usize).map(|d| Box::new(d) as _),
    };
    let mut driver = match driver {
        Ok(d) => d,
        Err(e) => {
            slot.ready(false);
            // A driver that cannot be set up is an unusable setup found
            // before anything was measured: exit 2.
            return Err(usage_error(match plan.io {
                IoKind::Epoll => format!(
                    "epoll setup for --io epoll: {e}; if descriptors ran out, raise 'ulimit -n' or lower --connections"
                ),
                _ => crate::drivers::uring::explain_setup_error(plan, &e),
            }));
        }
    };
    if !slot.ready(true) {
        return Err(Aborted.into());
    }
    let usage_before = ThreadUsage::now().unwrap_or_default();
    client.start_clock();
    let ctx = RunCtx {
        addr: RawAddr::new(&th.addr),
        end_ns: plan.duration.as_nanos() as u64,
        stop: &slot.stop,
        progress,
    };
    let run = driver.run(&mut client, &ctx);
    client.flush_latency();
    let elapsed_ns = client.now().min(ctx.end_ns.max(1)).max(1);
    let used = ThreadUsage::now().unwrap_or_default().since(&usage_before);
    if let Err(e) = run {
        return Err(anyhow!("client thread {t} ({}): {e}", plan.io.name()));
    }
    let measurements = ThreadMeasurements {
        elapsed_ns,
        read: client.stats.responses.clone(),
        cpu_user_ns: used.user_ns,
        cpu_sys_ns: used.sys_ns,
        ctx_voluntary: used.voluntary_switches,
        ctx_involuntary: used.involuntary_switches,
        ..Default::default()
    };
    Ok(ThreadOutcome {
        script: client.script.take().map(|b| *b),
        stats: client.stats,
        measurements,
    })
}

/// Figures of responses (`read`) and requests sent (`write`, no latency).
fn figures(m: &ThreadMeasurements, s: &ClientStats, elapsed_ns: u64) -> Figures {
    let mut f = m.figures(elapsed_ns);
    let secs = elapsed_ns.max(1) as f64 / 1e9;
    f.write = DirectionFigures {
        ops: s.requests_sent,
        bytes: s.bytes_written,
        iops: s.requests_sent as f64 / secs,
        bw_bytes_per_s: s.bytes_written as f64 / secs,
        lat_ns: None,
        ..Default::default()
    };
    f
}

fn build(
    plan: &HttpPlan,
    started_at: SystemTime,
    outcomes: Vec<ThreadOutcome>,
    interrupted: bool,
) -> HttpOutcome {
    let mut total_m = ThreadMeasurements::default();
    let mut total_s = ClientStats {
        syscalls_counted: true,
        ..Default::default()
    };
    let mut jobs = Vec::with_capacity(outcomes.len());
    for (t, o) in outcomes.iter().enumerate() {
        total_m.merge(&o.measurements);
        total_s.merge(&o.stats);
        jobs.push(JobFigures {
            job: t as u32,
            cpu: None,
            figures: figures(&o.measurements, &o.stats, o.measurements.elapsed_ns),
        });
    }
    let total = figures(&total_m, &total_s, total_m.elapsed_ns);
    let http = http_figures(plan, &total_s, &total);
    let mut warnings = Vec::new();
    if interrupted {
        warnings.push("interrupted: the figures cover the run up to the interruption".to_string());
    }
    if let Some(rate) = plan.rate {
        if total.iops < rate * 0.9 {
            warnings.push(format!(
                "the run reached {:.1} requests/s of the {rate} asked for with --rate: the server or the client could not keep up (latency counts the delay)",
                total.iops
            ));
        }
    }
    if let Some(n) = plan.total_requests {
        if total.ops < n && !interrupted {
            warnings.push(format!(
                "the run ended after {} of the {n} requests -n asked for: --duration ({}s) ran out first; raise it",
                total.ops,
                plan.duration.as_secs_f64()
            ));
        }
    }
    if total.ops == 0 {
        warnings.push(no_response(&total_s, plan));
    }
    let head = RunHeader::new("http", started_at);
    let result = RunResult {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: head.tool.to_string(),
            version: head.version.to_string(),
        },
        command: head.command.to_string(),
        started_at: head.started_at,
        host: ringlab_kstat::host_info(),
        config: plan.config_map(),
        target: None,
        jobs,
        total,
        warnings,
        kstat: None,
        http: Some(http),
        diagnoses: Vec::new(),
        intervals: None,
    };
    let text = text::render(&result, &total_s.responses.lat, &total_s.lat_uncorrected);
    HttpOutcome {
        result,
        text,
        lat: total_s.responses.lat,
        lat_uncorrected: total_s.lat_uncorrected,
        rate_samples: total_s.rate_samples,
        script: None,
    }
}

/// Why a run ended without a response, with the errors by kind (the text
/// prints them only when there are some).
fn no_response(s: &ClientStats, plan: &HttpPlan) -> String {
    let e = &s.errors;
    if e.total() == 0 {
        return format!(
            "no response completed and no socket error: {} requests were sent and are still unanswered (the server did not answer within the run; --timeout {:?} counts a request as an error only after that long)",
            s.requests_sent, plan.timeout
        );
    }
    format!(
        "no response completed: socket errors connect {}, read {}, write {}, timeout {}, parse {}, closed {}; {} connects, {} requests sent",
        e.connect, e.read, e.write, e.timeout, e.parse, e.closed, s.connects, s.requests_sent
    )
}

fn http_figures(plan: &HttpPlan, s: &ClientStats, total: &Figures) -> HttpFigures {
    let mut status = BTreeMap::new();
    let mut non_2xx_3xx = 0;
    for (code, &n) in s.status.iter().enumerate() {
        if n > 0 {
            status.insert(code.to_string(), n);
            if !(200..400).contains(&code) {
                non_2xx_3xx += n;
            }
        }
    }
    let responses = s.responses.ops;
    let cpu = total.cpu_user_ns + total.cpu_sys_ns;
    let (syscalls_per_request, syscalls_source) = if !s.syscalls_counted {
        (
            None,
            "not counted: with --sqpoll the kernel thread submits, and ringlab cannot see which io_uring_enter calls the io-uring crate skipped".to_string(),
        )
    } else if responses == 0 {
        (None, "no response completed".to_string())
    } else {
        (
            Some(s.syscalls as f64 / responses as f64),
            format!(
                "counted by ringlab: every system call its {} driver makes (socket setup, connect, close, {})",
                plan.io.name(),
                if plan.io == IoKind::Epoll {
                    "epoll_wait, epoll_ctl, read, send"
                } else {
                    "io_uring_enter, io_uring_register"
                }
            ),
        )
    };
    HttpFigures {
        connections: plan.connections as u64,
        connects: s.connects,
        requests_sent: s.requests_sent,
        responses,
        bytes_written: s.bytes_written,
        bytes_read: s.responses.bytes,
        status,
        non_2xx_3xx,
        errors: s.errors.clone(),
        lat_ns_uncorrected: if plan.rate.is_some() {
            s.lat_uncorrected.summary()
        } else {
            None
        },
        thread_req_per_s: RateSummary::of(&s.rate_samples),
        cpu_ns_per_request: (responses > 0).then(|| cpu as f64 / responses as f64),
        syscalls_per_request,
        syscalls_source,
        lat_ns_percentiles: plan.percentiles.as_ref().map(|ps| {
            ps.iter()
                .filter_map(|&p| {
                    let v = s.responses.lat.quantile(p / 100.0)?;
                    Some((format!("{p}"), v))
                })
                .collect()
        }),
    }
}
