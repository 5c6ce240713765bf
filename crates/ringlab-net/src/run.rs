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
use ringlab_core::harness::{Aborted, Harness, JobSlot, JobSpec};
use ringlab_core::usage_error;
use ringlab_kstat::ThreadUsage;
use ringlab_stats::{
    DirectionFigures, Figures, HttpFigures, JobFigures, LatencyRecorder, RateSummary,
    ResultHistograms, RunResult, ThreadMeasurements,
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
    /// Wall time from the start of the client threads until the last one
    /// was joined, measured by the runner (what wrk reports and passes to
    /// done() as summary.duration).
    pub wall_ns: u64,
}

impl HttpOutcome {
    /// Calls the script's done(summary, latency, requests), as wrk does
    /// after its report; a no-op without a script or without done().
    pub fn script_done(&self) -> Result<()> {
        let Some(s) = &self.script else { return Ok(()) };
        // After os.exit the script has ended: no done().
        if !s.has_done() || crate::script::watchdog::exit_requested().is_some() {
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
            // Measured: the wall time of the run, as wrk's runtime_us.
            duration_us: self.wall_ns.max(1) / 1000,
            requests: t.ops,
            bytes: t.bytes,
            errors,
        };
        let done = s.done(
            &summary,
            StatsUd::latency(&self.lat),
            StatsUd::rates(&self.rate_samples),
        );
        // os.exit in done() itself ends it; the caller names the code.
        if crate::script::watchdog::exit_requested().is_some() {
            return Ok(());
        }
        done
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
    run_http_with(plan, stop, || {})
}

/// [`run_http`], calling `on_start` once the script's setup() and init()
/// ran and just before the client threads start (where wrk prints its
/// "Running ..." header).
pub fn run_http_with(
    plan: &HttpPlan,
    stop: Arc<AtomicBool>,
    on_start: impl FnOnce(),
) -> Result<HttpOutcome> {
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
            let prepared = ScriptRun::prepare(&wrk_table(plan), spec, plan.threads);
            if crate::script::watchdog::exit_requested().is_some() {
                // os.exit before the run (top level, setup(), init() or
                // the first request()): the run ends here, with its empty
                // results; the caller names the code.
                sys::flush_c_stdio();
                let outcomes = (0..plan.threads)
                    .map(|_| ThreadOutcome {
                        stats: ClientStats {
                            syscalls_counted: true,
                            ..Default::default()
                        },
                        measurements: ThreadMeasurements::default(),
                        script: None,
                    })
                    .collect();
                return Ok(build(plan, SystemTime::now(), outcomes, true, 1));
            }
            Some(prepared?)
        }
        None => None,
    };
    let per_write = script.as_ref().map_or(1, |s| s.requests_per_write());
    let tls = match plan.target.tls {
        true => Some(
            crate::tls::TlsClient::new(&plan.target.host)
                .map_err(|m| usage_error(format!("{}: {m}", plan.url)))?,
        ),
        false => None,
    };
    // What setup() and init() printed comes before anything of the run, as
    // in wrk, also when stdout is a pipe.
    sys::flush_c_stdio();

    // Counters open before the client threads exist, so they follow them.
    let mut kstat = plan.kstat.then(|| {
        let proofs = ringlab_core::uring::knobs::given_proofs(&plan.ring, &plan.ring_defaults);
        ringlab_kstat::Collector::open(None, plan.evidence, &proofs)
    });
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
                tls: tls.clone(),
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
    // Every shard starts at --start-at: the connections are open-ready,
    // the threads wait at the gate.
    plan.shards.wait(&stop);
    on_start();
    let started_at = harness.start();
    let wall = std::time::Instant::now();
    // The kernel counts the measured run only, not the closing of the
    // connections after it; the per-request counters are counted in
    // sampling windows (as in ringlab io).
    harness.supervise(Some(plan.duration), &stop, |tick, _| {
        if let Some(k) = &mut kstat {
            k.tick(tick);
        }
    });
    if plan.wrk {
        // wrk's main thread sleeps out -d whatever the threads do (a
        // script's thread:stop() ends a thread's loop, not the run);
        // Ctrl-C ends the wait, as in wrk.
        while !stop.load(Ordering::SeqCst) {
            let left = plan.duration.saturating_sub(wall.elapsed());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(std::time::Duration::from_millis(20)));
        }
    }
    if let Some(k) = &mut kstat {
        k.disable();
    }
    let mut outcomes = harness.finish(|_| false)?;
    // What response() printed during the run comes before the report.
    sys::flush_c_stdio();
    let wall_ns = (wall.elapsed().as_nanos() as u64).max(1);
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
    let mut outcome = build(
        plan,
        started_at,
        outcomes,
        stop.load(Ordering::SeqCst),
        wall_ns,
    );
    outcome.script = script;
    if let Some(k) = kstat {
        // Closes the counters' own descriptors, before they are counted.
        let t = &outcome.result.total;
        outcome.result.kstat = Some(k.finish(
            t.ops,
            t.cpu_user_ns + t.cpu_sys_ns,
            t.ctx_voluntary + t.ctx_involuntary,
        ));
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
    // Knob evidence and diagnoses, as every command's result has them.
    ringlab_kstat::explain(&mut outcome.result);
    // Again: the kernel evidence, its explanation and the descriptor check
    // came after build.
    outcome.text = text::render_as(
        &outcome.result,
        &outcome.lat,
        &outcome.lat_uncorrected,
        style(plan),
    );
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
    tls: Option<crate::tls::TlsClient>,
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
            let n = plan.shards.share(n);
            let k = plan.threads as u64;
            n / k + u64::from((t as u64) < n % k)
        }),
        head_request: plan.head_request(),
        pipeline: plan.pipeline,
        interval_ns: plan.shard_rate().map(|r| {
            // wrk2: each thread sends rate/threads, spread over the
            // connections it has (wrk's split leaves the remainder out).
            let open = if plan.wrk {
                connections as f64 * plan.threads as f64
            } else {
                plan.connections as f64
            };
            ((open / r) * 1e9).max(1.0) as u64
        }),
        first_due_ns: (0..connections).map(|i| plan.first_due_ns(t, i)).collect(),
        timeout_ns: plan.timeout.as_nanos() as u64,
        tls: th.tls.clone(),
        wrk_timeouts: plan.wrk,
        // wrk2: CALIBRATE_DELAY_MS (10 s) plus 5 ms per connection.
        calibrate_at_ns: (plan.wrk && plan.rate.is_some())
            .then(|| 10_000_000_000 + 5_000_000 * connections as u64),
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

fn style(plan: &HttpPlan) -> text::Style {
    if plan.wrk {
        text::Style::Wrk
    } else {
        text::Style::Ringlab
    }
}

fn build(
    plan: &HttpPlan,
    started_at: SystemTime,
    outcomes: Vec<ThreadOutcome>,
    interrupted: bool,
    wall_ns: u64,
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
    if plan.wrk && plan.rate.is_none() {
        // wrk 4.1's stats_correct, with its expected interval in whole
        // microseconds: runtime / (responses / connections).
        let per_conn = total_s.responses.ops / u64::from(plan.connections.max(1));
        if let Some(expected_us) = (wall_ns / 1000).checked_div(per_conn) {
            let expected_ns = expected_us * 1000;
            wrk_correct(&mut total_s.responses.lat, expected_ns);
            total_m.read.lat = total_s.responses.lat.clone();
        }
    }
    // wrk's figures are over the wall time of the run (thread start to
    // join), so a run its script stopped early reports the time it lasted.
    let elapsed = if plan.wrk {
        wall_ns
    } else {
        total_m.elapsed_ns
    };
    let total = figures(&total_m, &total_s, elapsed);
    let http = http_figures(plan, &total_s, &total);
    let mut warnings = Vec::new();
    if let Some((code, hook)) = crate::script::watchdog::exit_requested() {
        warnings.push(format!(
            "the script called os.exit({code}) in {hook}: the figures cover the run up to then"
        ));
    } else if interrupted {
        warnings.push("interrupted: the figures cover the run up to the interruption".to_string());
    }
    if let Some(rate) = plan.shard_rate() {
        if total.iops < rate * 0.9 {
            warnings.push(format!(
                "the run reached {:.1} requests/s of the {rate} asked for with --rate: the server or the client could not keep up (latency counts the delay)",
                total.iops
            ));
        }
    }
    if let Some(n) = plan.total_requests.map(|n| plan.shards.share(n)) {
        if total.ops < n && !interrupted {
            warnings.push(format!(
                "the run ended after {} of the {n} requests -n asked for: --duration ({}s) ran out first; raise it",
                total.ops,
                plan.duration.as_secs_f64()
            ));
        }
    }
    // After os.exit its own warning says why the run ended.
    if total.ops == 0 && crate::script::watchdog::exit_requested().is_none() {
        warnings.push(no_response(&total_s, plan));
    }
    warnings.extend(plan.shards.late_warning(started_at));
    let host = ringlab_kstat::host_info();
    let shard = plan
        .shards
        .info(&host.hostname, started_at, total.elapsed_ns)
        .map(|mut s| {
            s.rate = plan.shard_rate();
            s.phase_ns = plan.rate.map(|_| plan.first_due_ns(0, 0));
            s
        });
    let histograms = plan.shards.histograms().then(|| {
        ResultHistograms::of(
            &total_m,
            plan.rate.is_some().then_some(&total_s.lat_uncorrected),
        )
    });
    let result = RunResult {
        jobs,
        warnings,
        http: Some(http),
        histograms,
        shard,
        ..RunResult::new("http", started_at, host, plan.config_map(), total)
    };
    let text = text::render_as(
        &result,
        &total_s.responses.lat,
        &total_s.lat_uncorrected,
        style(plan),
    );
    HttpOutcome {
        wall_ns,
        result,
        text,
        lat: total_s.responses.lat,
        lat_uncorrected: total_s.lat_uncorrected,
        rate_samples: total_s.rate_samples,
        script: None,
    }
}

/// wrk 4.1's `stats_correct` (its closed-loop coordinated-omission
/// correction, applied before it prints): each latency `v` of at least twice
/// the expected interval `e` adds as many values `v - e`, `v - 2e`, ...
/// while they stay above `e`.
fn wrk_correct(lat: &mut LatencyRecorder, expected_ns: u64) {
    if expected_ns == 0 {
        return;
    }
    let mut added = Vec::new();
    for (v, count) in lat.recorded() {
        if v < expected_ns * 2 {
            continue;
        }
        let mut m = v - expected_ns;
        while m > expected_ns {
            added.push((m, count));
            m -= expected_ns;
        }
    }
    for (m, count) in added {
        lat.record_n(m, count);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrks_correction_fills_in_the_missed_samples() {
        let mut lat = LatencyRecorder::new();
        lat.record_n(1_000, 10);
        lat.record(10_000);
        wrk_correct(&mut lat, 3_000);
        // 10 µs at an expected 3 µs adds 7 and 4 µs (not 1: not above 3).
        assert_eq!(lat.count(), 13);
        assert_eq!(lat.summary().unwrap().max, 10_000);
        let mut none = LatencyRecorder::new();
        none.record(5_000);
        wrk_correct(&mut none, 3_000);
        assert_eq!(none.count(), 1, "below twice the interval: nothing");
        wrk_correct(&mut none, 0);
        assert_eq!(none.count(), 1);
    }
}
