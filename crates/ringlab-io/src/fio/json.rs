//! `--output-format fio-json` and `json+`: ringlab's results in the shape
//! fio 3.x writes with `--output-format=json` (`json+` adds `clat_ns.bins`),
//! so that fio's consumers (fio-plot, fio2gnuplot scripts, dashboards) read
//! them. ringlab's own evidence (kernel counters, target, warnings) sits
//! under the key `ringlab`, which fio never writes.

use ringlab_stats::{DirectionFigures, Figures, IntervalFigures, LatencyRecorder, RunResult};
use serde_json::{json, Map, Value};

/// fio's default `percentile_list`.
pub const FIO_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// One job of a fio-json document: a command line's run, or a job file's
/// section.
pub struct FioJob<'a> {
    pub name: String,
    pub groupid: u32,
    /// The options as written (fio's "job options").
    pub options: Vec<(String, String)>,
    /// One entry for the section's threads together (fio's
    /// group_reporting) instead of one per thread.
    pub group_reporting: bool,
    /// fio's percentile_list; `None`: fio's default list.
    pub percentiles: Option<Vec<f64>>,
    /// fio's unified_rw_reporting: reads and writes apart (the default),
    /// merged into one `mixed` direction instead, or both.
    pub unified: Unified,
    pub result: &'a RunResult,
}

/// fio's unified_rw_reporting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Unified {
    /// `none` (0): reads and writes apart.
    #[default]
    None,
    /// `mixed` (1): one `mixed` direction instead of read, write, trim.
    Mixed,
    /// `both` (2): read, write and trim, and `mixed` besides.
    Both,
}

impl Unified {
    /// fio's values: 0/none, 1/mixed, 2/both.
    pub fn parse(v: &str) -> Option<Unified> {
        match v.trim() {
            "0" | "none" => Some(Unified::None),
            "1" | "mixed" => Some(Unified::Mixed),
            "2" | "both" => Some(Unified::Both),
            _ => None,
        }
    }
}

/// Reads and writes as one direction (fio's `mixed`): counts added,
/// latency histograms merged.
fn mixed(a: &DirectionFigures, b: &DirectionFigures, elapsed_ns: u64) -> DirectionFigures {
    let merge = |x: &Option<LatencyRecorder>, y: &Option<LatencyRecorder>| match (x, y) {
        (None, None) => None,
        (x, y) => {
            let mut m = LatencyRecorder::new();
            for r in [x, y].into_iter().flatten() {
                m.merge(r);
            }
            Some(m)
        }
    };
    let lat = merge(&a.lat_recorder, &b.lat_recorder);
    let slat = merge(&a.slat_recorder, &b.slat_recorder);
    let clat = merge(&a.clat_recorder, &b.clat_recorder);
    let ops = a.ops + b.ops;
    let bytes = a.bytes + b.bytes;
    let rate = |n: u64| {
        if elapsed_ns == 0 {
            0.0
        } else {
            n as f64 * 1e9 / elapsed_ns as f64
        }
    };
    DirectionFigures {
        ops,
        bytes,
        iops: rate(ops),
        bw_bytes_per_s: rate(bytes),
        lat_ns: lat.as_ref().and_then(LatencyRecorder::summary),
        slat_ns: slat.as_ref().and_then(LatencyRecorder::summary),
        clat_ns: clat.as_ref().and_then(LatencyRecorder::summary),
        lat_recorder: lat,
        slat_recorder: slat,
        clat_recorder: clat,
    }
}

/// The whole document, one entry per section with group_reporting
/// (`ringlab io --fio`, whose sections run one after the other).
pub fn render(jobs: &[FioJob], global: &[(String, String)], plus: bool) -> Value {
    let spans: Vec<_> = (0..jobs.len()).map(|i| i..i + 1).collect();
    render_spans(jobs, &spans, global, plus)
}

/// The whole document as fio writes it (`ringlab fio`): with
/// group_reporting one entry per reporting group ([`report_spans`]).
pub fn render_groups(jobs: &[FioJob], global: &[(String, String)], plus: bool) -> Value {
    render_spans(jobs, &report_spans(jobs), global, plus)
}

fn render_spans(
    jobs: &[FioJob],
    spans: &[std::ops::Range<usize>],
    global: &[(String, String)],
    plus: bool,
) -> Value {
    let started = jobs
        .first()
        .and_then(|j| humantime::parse_rfc3339(&j.result.started_at).ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .unwrap_or_default();
    let mut entries = Vec::new();
    let mut evidence = Vec::new();
    for span in spans {
        let j = &jobs[span.start];
        let r = j.result;
        if j.group_reporting {
            let members = &jobs[span.clone()];
            let merged = group_sum(members);
            let mut e = entry(j, global, &merged, None, plus);
            if let (true, Some(last)) = (members.len() > 1, members.last()) {
                // fio's latency_depth: the group's last thread's.
                e["latency_depth"] = last
                    .result
                    .config
                    .get("iodepth")
                    .cloned()
                    .unwrap_or(Value::Null);
                e["ringlab"]["sections"] =
                    json!(members.iter().map(|m| m.name.as_str()).collect::<Vec<_>>());
            }
            // fio's group error: the first of its threads'; each failed
            // thread's last I/O counts in the group's total_ios.
            let warnings: Vec<String> = members
                .iter()
                .flat_map(|m| m.result.warnings.iter().cloned())
                .collect();
            job_error(&mut e, &warnings, None);
            fill_unfinished(&mut e, &warnings, None);
            entries.push(e);
        } else {
            for jf in &r.jobs {
                let one = Sum {
                    figures: jf.figures.clone(),
                    dir_ns: [jf.figures.elapsed_ns; 3],
                    threads: 1,
                    thread_ns: jf.figures.elapsed_ns,
                    end_fsyncs: end_fsyncs(j, 1),
                    intervals: None,
                };
                let mut e = entry(j, global, &one, Some((jf.job, jf.cpu)), plus);
                job_error(&mut e, &r.warnings, Some(jf.job));
                fill_unfinished(&mut e, &r.warnings, Some(jf.job));
                entries.push(e);
            }
        }
    }
    for j in jobs {
        let r = j.result;
        evidence.push(json!({
            "jobname": j.name,
            "groupid": j.groupid,
            "target": r.target,
            "config": r.config,
            "warnings": r.warnings,
            "kstat": r.kstat,
        }));
    }
    json!({
        "fio version": format!("ringlab-{}", env!("CARGO_PKG_VERSION")),
        "timestamp": started.as_secs(),
        "timestamp_ms": started.as_millis() as u64,
        "time": jobs.first().map(|j| j.result.started_at.clone()).unwrap_or_default(),
        "global options": options_map(global),
        "jobs": entries,
        "ringlab": evidence,
    })
}

fn options_map(opts: &[(String, String)]) -> Map<String, Value> {
    opts.iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect()
}

/// fio's "job options": as written, plus the resolved rw, bs, iodepth,
/// numjobs and ioengine when they were not written (fio-plot and other
/// consumers select runs by these keys, and ringlab's defaults differ from
/// fio's where ringlab has its own, so the resolved value is the truth).
fn job_options(j: &FioJob, global: &[(String, String)]) -> Map<String, Value> {
    let mut m = options_map(&j.options);
    let in_global = |k: &str| global.iter().any(|(g, _)| g == k);
    let c = &j.result.config;
    let text = |k: &str| {
        c.get(k)
            .map(|v| v.as_str().map_or(v.to_string(), str::to_string))
    };
    let mut fill = |key: &str, v: Option<String>| {
        if let (Some(v), false) = (v, in_global(key)) {
            m.entry(key.to_string()).or_insert(Value::String(v));
        }
    };
    fill("rw", text("rw"));
    // With --bsrange/--bssplit, fio's key for what was used, and `bs`
    // says it too (its smallest size alone would mislead a reader).
    let variable = text("bssplit").or(text("bsrange"));
    for key in ["bsrange", "bssplit"] {
        fill(key, text(key));
    }
    fill(
        "bs",
        variable.or(c.get("bs").and_then(Value::as_u64).map(|b| {
            if b % 1024 == 0 {
                format!("{}k", b / 1024)
            } else {
                b.to_string()
            }
        })),
    );
    fill("iodepth", text("iodepth"));
    fill("numjobs", text("numjobs"));
    fill(
        "ioengine",
        text("engine").map(|e| match e.as_str() {
            "uring" => "io_uring".to_string(),
            "sync" => "psync".to_string(),
            other => other.to_string(),
        }),
    );
    m
}

/// The jobs behind each entry of fio's report, as ranges of `jobs`
/// (stat.c `__show_run_stats`): a job with group_reporting joins the
/// entry before it when that one is of the same group, so one entry
/// covers every thread of a reporting group, whatever section they come
/// from; any other job is an entry of its own (one per thread). (fio also
/// adds a group_reporting job to the last thread of a job without it
/// before it in the same group; here it starts its own entry instead.)
pub fn report_spans(jobs: &[FioJob]) -> Vec<std::ops::Range<usize>> {
    let mut spans: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, j) in jobs.iter().enumerate() {
        match spans.last_mut() {
            Some(s)
                if j.group_reporting
                    && jobs[s.start].group_reporting
                    && jobs[s.start].groupid == j.groupid =>
            {
                s.end = i + 1
            }
            _ => spans.push(i..i + 1),
        }
    }
    spans
}

/// What one entry reports: the figures of its threads together.
struct Sum {
    figures: Figures,
    /// The run time of each direction (read, write, trim).
    dir_ns: [u64; 3],
    /// fio's `members`: the threads summed.
    threads: usize,
    /// fio's total_run_time: the threads' run times added.
    thread_ns: u64,
    /// End fsyncs counted in `syncs` that fio does not count.
    end_fsyncs: u64,
    /// The --status-interval samples of the whole entry, when it covers
    /// whole jobs.
    intervals: Option<Vec<IntervalFigures>>,
}

/// One end fsync per thread under --end-fsync, in `syncs`.
fn end_fsyncs(j: &FioJob, threads: usize) -> u64 {
    if j.result.config.get("end-fsync") == Some(&Value::Bool(true)) {
        threads as u64
    } else {
        0
    }
}

/// fio's sum_thread_stats over the jobs of a reporting group: counts,
/// bytes, CPU times, context switches and depth counts added; latency
/// histograms merged (so min, max, mean and percentiles are those of every
/// I/O); the run time the longest, rates over it.
fn group_sum(members: &[FioJob]) -> Sum {
    let mut figures = members[0].result.total.clone();
    for m in &members[1..] {
        figures = add_figures(&figures, &m.result.total);
    }
    // fio's runtime of a direction: the longest of the threads that did
    // it; its rates are over that.
    let dir_ns = |pick: fn(&Figures) -> Option<&DirectionFigures>| {
        members
            .iter()
            .map(|m| &m.result.total)
            .filter(|t| pick(t).is_some_and(|d| d.ops > 0))
            .map(|t| t.elapsed_ns)
            .max()
            .unwrap_or(figures.elapsed_ns)
    };
    let dir_ns = [
        dir_ns(|t| Some(&t.read)),
        dir_ns(|t| Some(&t.write)),
        dir_ns(|t| t.trim.as_ref()),
    ];
    for (d, ns) in [
        Some(&mut figures.read),
        Some(&mut figures.write),
        figures.trim.as_mut(),
    ]
    .into_iter()
    .zip(dir_ns)
    {
        if let Some(d) = d {
            d.iops = d.ops as f64 * 1e9 / ns.max(1) as f64;
            d.bw_bytes_per_s = d.bytes as f64 * 1e9 / ns.max(1) as f64;
        }
    }
    let threads = members.iter().map(|m| m.result.jobs.len().max(1)).sum();
    let thread_ns = members
        .iter()
        .map(|m| match m.result.jobs.as_slice() {
            [] => m.result.total.elapsed_ns,
            js => js.iter().map(|jf| jf.figures.elapsed_ns).sum(),
        })
        .sum();
    let end = members
        .iter()
        .map(|m| end_fsyncs(m, m.result.jobs.len().max(1)))
        .sum();
    // Interval i of each job covers the same span (clocks started
    // together); jobs of other batches do not share the group.
    let mut intervals: Option<Vec<IntervalFigures>> = None;
    for m in members {
        let Some(iv) = &m.result.intervals else {
            intervals = None;
            break;
        };
        intervals = Some(match intervals {
            None => iv.clone(),
            Some(mut acc) => {
                acc.truncate(iv.len());
                for (a, b) in acc.iter_mut().zip(iv) {
                    a.add_counts(b);
                }
                acc
            }
        });
    }
    Sum {
        figures,
        dir_ns,
        threads,
        thread_ns,
        end_fsyncs: end,
        intervals,
    }
}

/// Two jobs' figures as one (see [`group_sum`]).
fn add_figures(a: &Figures, b: &Figures) -> Figures {
    let elapsed_ns = a.elapsed_ns.max(b.elapsed_ns);
    let read = mixed(&a.read, &b.read, elapsed_ns);
    let write = mixed(&a.write, &b.write, elapsed_ns);
    let trim = match (&a.trim, &b.trim) {
        (None, None) => None,
        (x, y) => Some(mixed(
            x.as_ref().unwrap_or(&DirectionFigures::default()),
            y.as_ref().unwrap_or(&DirectionFigures::default()),
            elapsed_ns,
        )),
    };
    let mut all = LatencyRecorder::new();
    for d in [Some(&read), Some(&write), trim.as_ref()]
        .into_iter()
        .flatten()
    {
        if let Some(r) = &d.lat_recorder {
            all.merge(r);
        }
    }
    let ops = a.ops + b.ops;
    let bytes = a.bytes + b.bytes;
    let rate = |n: u64| n as f64 * 1e9 / elapsed_ns.max(1) as f64;
    let opt_sum = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0) + y.unwrap_or(0)),
    };
    Figures {
        elapsed_ns,
        ops,
        bytes,
        iops: rate(ops),
        bw_bytes_per_s: rate(bytes),
        lat_ns: all
            .summary()
            .or_else(|| a.lat_ns.clone().or_else(|| b.lat_ns.clone())),
        read,
        write,
        trim,
        cpu_user_ns: a.cpu_user_ns + b.cpu_user_ns,
        cpu_sys_ns: a.cpu_sys_ns + b.cpu_sys_ns,
        ctx_voluntary: a.ctx_voluntary + b.ctx_voluntary,
        ctx_involuntary: a.ctx_involuntary + b.ctx_involuntary,
        verified_blocks: opt_sum(a.verified_blocks, b.verified_blocks),
        syncs: opt_sum(a.syncs, b.syncs),
        io_depths: match (a.io_depths, b.io_depths) {
            (None, None) => None,
            (x, y) => {
                let mut d = x.unwrap_or_default();
                d.merge(&y.unwrap_or_default());
                Some(d)
            }
        },
    }
}

fn entry(
    j: &FioJob,
    global: &[(String, String)],
    sum: &Sum,
    job: Option<(u32, Option<u32>)>,
    plus: bool,
) -> Value {
    let f = &sum.figures;
    let threads = sum.threads;
    let pcts: &[f64] = j.percentiles.as_deref().unwrap_or(&FIO_PERCENTILES);
    let run_ns = sum.thread_ns.max(1) as f64;
    let end_fsyncs = sum.end_fsyncs;
    let cpu_pct = |ns: u64| ns as f64 * 100.0 / run_ns;
    // fio's bw_agg: this entry's share of its group's bandwidth.
    let group = match job {
        Some(_) => &j.result.total,
        None => f,
    };
    let mut all = LatencyRecorder::new();
    for d in [Some(&f.read), Some(&f.write), f.trim.as_ref()]
        .into_iter()
        .flatten()
    {
        if let Some(r) = &d.lat_recorder {
            all.merge(r);
        }
    }
    // --status-interval samples, for an entry that covers the whole run
    // (group_reporting or a single job): every full interval, without the
    // last one cut short. Other entries keep fio's one-sample values.
    let whole_run = job.is_none() || j.result.jobs.len() == 1;
    let intervals = match job {
        None => &sum.intervals,
        Some(_) => &j.result.intervals,
    };
    let series: Vec<&IntervalFigures> = match (intervals, whole_run) {
        (Some(iv), true) => {
            let full = iv.first().map_or(0, |i| i.elapsed_ns);
            iv.iter().filter(|i| i.elapsed_ns == full).collect()
        }
        _ => Vec::new(),
    };
    let reads: Vec<(f64, f64)> = series
        .iter()
        .map(|i| rates(i.read_ops, i.read_bytes, i.elapsed_ns))
        .collect();
    let writes: Vec<(f64, f64)> = series
        .iter()
        .map(|i| rates(i.write_ops, i.write_bytes, i.elapsed_ns))
        .collect();
    let mut e = json!({
        "jobname": j.name,
        "groupid": j.groupid,
        "error": 0,
        "eta": 0,
        "elapsed": (f.elapsed_ns as f64 / 1e9).round() as u64,
        "job options": job_options(j, global),
        "read": direction(&f.read, sum.dir_ns[0], group.read.bw_bytes_per_s, pcts, plus, &reads),
        "write": direction(&f.write, sum.dir_ns[1], group.write.bw_bytes_per_s, pcts, plus, &writes),
        // Trims (rw=trim and friends); syncs (--fsync) are counted, not
        // timed. fio counts no end_fsync here: neither does this.
        "trim": match &f.trim {
            Some(t) => direction(t, sum.dir_ns[2], group.trim.as_ref().map_or(0.0, |g| g.bw_bytes_per_s), pcts, plus, &[]),
            None => direction(&DirectionFigures::default(), 0, 0.0, pcts, plus, &[]),
        },
        "sync": {"total_ios": f.syncs.unwrap_or(0).saturating_sub(end_fsyncs), "lat_ns": empty_lat()},
        // fio's total_run_time: with group_reporting the threads' added.
        "job_runtime": sum.thread_ns / 1_000_000,
        "usr_cpu": cpu_pct(f.cpu_user_ns),
        "sys_cpu": cpu_pct(f.cpu_sys_ns),
        "ctx": f.ctx_voluntary + f.ctx_involuntary,
        "latency_depth": j.result.config.get("iodepth").cloned().unwrap_or(Value::Null),
        "latency_target": 0,
        "latency_percentile": 100.0,
        "latency_window": 0,
    });
    if let Some(d) = &f.io_depths {
        // fio's keys: depths 1..32 and >=64; submissions and reaps 0,
        // 4..64 (bucket tops) and >=64.
        let level = ["1", "2", "4", "8", "16", "32", ">=64"];
        let batch = ["0", "4", "8", "16", "32", "64", ">=64"];
        for (key, names, counts) in [
            ("iodepth_level", level, &d.depth),
            ("iodepth_submit", batch, &d.submit),
            ("iodepth_complete", batch, &d.complete),
        ] {
            let pct = ringlab_stats::IoDepths::percent(counts);
            e[key] = names
                .iter()
                .zip(pct)
                .map(|(n, p)| (n.to_string(), json!(p)))
                .collect::<serde_json::Map<_, _>>()
                .into();
        }
    }
    if j.unified != Unified::None {
        let m = mixed(&f.read, &f.write, f.elapsed_ns);
        let group_bw = group.read.bw_bytes_per_s + group.write.bw_bytes_per_s;
        let both: Vec<(f64, f64)> = reads
            .iter()
            .zip(&writes)
            .map(|(r, w)| (r.0 + w.0, r.1 + w.1))
            .collect();
        e["mixed"] = direction(&m, f.elapsed_ns, group_bw, pcts, plus, &both);
        if j.unified == Unified::Mixed {
            // fio writes the one direction alone.
            if let Some(o) = e.as_object_mut() {
                for k in ["read", "write", "trim", "sync"] {
                    o.remove(k);
                }
            }
        }
    }
    let (ns, us, ms) = buckets(&all);
    e["latency_ns"] = ns;
    e["latency_us"] = us;
    e["latency_ms"] = ms;
    e["ringlab"] = match job {
        Some((n, cpu)) => json!({"job": n, "cpu": cpu, "threads": 1}),
        None => json!({"threads": threads}),
    };
    e
}

/// fio's failed job (`crate::job_error`): the entry of a job thread (or,
/// `job` None, of a reporting group: fio keeps its first error) ended by
/// an I/O error gets fio's `error` (the errno), the failed I/O counted in
/// its direction's `total_ios` as fio counts it issued, and fio's error
/// text under `ringlab.verror` for the normal output's header.
pub fn job_error(e: &mut Value, warnings: &[String], job: Option<u32>) {
    let failed: Vec<crate::job_error::Failed> = warnings
        .iter()
        .filter_map(|w| crate::job_error::parse(w))
        .filter(|f| job.is_none_or(|n| n == f.job))
        .collect();
    let Some(first) = failed.first() else {
        return;
    };
    e["error"] = json!(first.errno);
    e["ringlab"]["verror"] = json!(crate::job_error::verror(first.errno, &first.dir));
    for f in &failed {
        for key in [crate::job_error::direction(&f.dir), "mixed"] {
            if let Some(n) = e[key]["total_ios"].as_u64() {
                e[key]["total_ios"] = json!(n + 1);
            }
        }
    }
}

/// fio's fill_device end (`crate::fill_device::unfinished`): the writes
/// issued that did not complete in full (the one that found no space, a
/// short write and its re-issued rest) count in the write `total_ios` and
/// the short ones in `short_ios`, as fio counts them; `job` as in
/// [`job_error`].
pub fn fill_unfinished(e: &mut Value, warnings: &[String], job: Option<u32>) {
    for (n, issued, short) in warnings
        .iter()
        .filter_map(|w| crate::fill_device::unfinished(w))
    {
        if job.is_some_and(|j| j != n) {
            continue;
        }
        for key in ["write", "mixed"] {
            if let Some(t) = e[key]["total_ios"].as_u64() {
                e[key]["total_ios"] = json!(t + issued);
            }
            if let Some(t) = e[key]["short_ios"].as_u64() {
                e[key]["short_ios"] = json!(t + short);
            }
        }
    }
}

/// What fio writes for a latency it did not measure: zeros with N = 0.
fn empty_lat() -> Value {
    json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0})
}

/// (I/Os per second, bytes per second) of one interval.
fn rates(ops: u64, bytes: u64, elapsed_ns: u64) -> (f64, f64) {
    let s = elapsed_ns.max(1) as f64 / 1e9;
    (ops as f64 / s, bytes as f64 / s)
}

/// min, max, mean and sample standard deviation (fio's, n - 1).
fn spread(v: &[f64]) -> (f64, f64, f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = v.iter().cloned().fold(0.0, f64::max);
    (min, max, mean, var.sqrt())
}

/// `samples`: (IOPS, bytes/s) of each --status-interval interval; empty:
/// the whole run is fio's one sample.
fn direction(
    d: &DirectionFigures,
    elapsed_ns: u64,
    group_bw: f64,
    percentiles: &[f64],
    plus: bool,
    samples: &[(f64, f64)],
) -> Value {
    if d.ops == 0 {
        return json!({
            "io_bytes": 0, "io_kbytes": 0, "bw_bytes": 0, "bw": 0, "iops": 0.0,
            "runtime": 0, "total_ios": 0, "short_ios": 0, "drop_ios": 0,
            "slat_ns": empty_lat(), "clat_ns": empty_lat(), "lat_ns": empty_lat(),
            "bw_min": 0, "bw_max": 0, "bw_agg": 0.0, "bw_mean": 0.0, "bw_dev": 0.0, "bw_samples": 0,
            "iops_min": 0, "iops_max": 0, "iops_mean": 0.0, "iops_stddev": 0.0, "iops_samples": 0,
        });
    }
    let bw_bytes = d.bw_bytes_per_s.round() as u64;
    let bw_kib = bw_bytes / 1024;
    let summary = |l: &Option<ringlab_stats::LatencySummary>, n: u64| match l {
        Some(l) => json!({
            "min": l.min, "max": l.max, "mean": l.mean, "stddev": l.stdev, "N": n,
        }),
        None => empty_lat(),
    };
    // lat: from the start of each I/O (its due time under --rate) to its
    // completion; slat: to its hand-over to the kernel (after io_submit,
    // aio_read or a submitting io_uring_enter; in ringlab's default uring
    // loop, which submits and waits in one io_uring_enter, right before
    // that call); clat: the rest, so lat = slat + clat for every I/O. The
    // sync engine has no separate submission: slat N = 0 and clat = lat,
    // as fio writes for psync.
    // N: the samples of each latency, the I/O count where every I/O was
    // timed (fio's file engines time their file operations only).
    let timed = |r: &Option<LatencyRecorder>| r.as_ref().map_or(d.ops, |r| r.count());
    let lat = summary(&d.lat_ns, timed(&d.lat_recorder));
    let slat = summary(&d.slat_ns, timed(&d.slat_recorder));
    // A result read back from JSON written before clat was measured: lat.
    let (mut clat, clat_recorder) = match &d.clat_ns {
        Some(_) => (
            summary(&d.clat_ns, timed(&d.clat_recorder)),
            d.clat_recorder.as_ref(),
        ),
        None => (lat.clone(), d.lat_recorder.as_ref()),
    };
    let clat_summary = d.clat_ns.as_ref().or(d.lat_ns.as_ref());
    if let Some(r) = clat_recorder {
        let pct: Map<String, Value> = percentiles
            .iter()
            .filter_map(|p| Some((format!("{p:.6}"), json!(r.quantile(p / 100.0)?))))
            .collect();
        clat["percentile"] = Value::Object(pct);
        if plus {
            let bins: Map<String, Value> = r
                .recorded()
                .into_iter()
                .map(|(v, n)| (v.to_string(), json!(n)))
                .collect();
            clat["bins"] = Value::Object(bins);
        }
    } else if let Some(l) = clat_summary {
        clat["percentile"] = json!({
            "50.000000": l.p50, "90.000000": l.p90, "99.000000": l.p99,
            "99.900000": l.p99_9, "99.990000": l.p99_99,
        });
    }
    // Without --status-interval the whole run is one sample, and fio
    // writes one sample as min = max = mean, deviation 0, samples 1.
    let iops_whole = d.iops.round() as u64;
    let mut v = json!({
        "io_bytes": d.bytes,
        "io_kbytes": d.bytes / 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_kib,
        "iops": d.iops,
        // At least 1 ms for a direction that moved data (fio never
        // divides by a zero runtime).
        "runtime": elapsed_ns.div_ceil(1_000_000),
        "total_ios": d.ops,
        // A short transfer fails a ringlab run, and nothing is dropped.
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": slat,
        "clat_ns": clat,
        "lat_ns": lat,
        "bw_min": bw_kib,
        "bw_max": bw_kib,
        "bw_agg": if group_bw > 0.0 { d.bw_bytes_per_s * 100.0 / group_bw } else { 0.0 },
        "bw_mean": bw_kib as f64,
        "bw_dev": 0.0,
        "bw_samples": 1,
        "iops_min": iops_whole,
        "iops_max": iops_whole,
        "iops_mean": d.iops,
        "iops_stddev": 0.0,
        "iops_samples": 1,
    });
    if !samples.is_empty() {
        let iops: Vec<f64> = samples.iter().map(|s| s.0).collect();
        let kib: Vec<f64> = samples.iter().map(|s| s.1 / 1024.0).collect();
        let (lo, hi, mean, dev) = spread(&iops);
        v["iops_min"] = json!(lo.round() as u64);
        v["iops_max"] = json!(hi.round() as u64);
        v["iops_mean"] = json!(mean);
        v["iops_stddev"] = json!(dev);
        v["iops_samples"] = json!(samples.len());
        let (lo, hi, mean, dev) = spread(&kib);
        v["bw_min"] = json!(lo.round() as u64);
        v["bw_max"] = json!(hi.round() as u64);
        v["bw_mean"] = json!(mean);
        v["bw_dev"] = json!(dev);
        v["bw_samples"] = json!(samples.len());
    }
    v
}

/// fio's latency buckets: the percentage of I/Os under 2, 4, 10, ... 1000
/// ns, us and ms (each bucket from the previous bound up to its own), and
/// `>=2000` ms.
fn buckets(r: &LatencyRecorder) -> (Value, Value, Value) {
    const BOUNDS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    let mut ns = [0u64; 10];
    let mut us = [0u64; 10];
    let mut ms = [0u64; 12];
    let slot = |v: u64| BOUNDS.iter().position(|&b| v < b);
    let mut total = 0u64;
    for (v, n) in r.recorded() {
        total += n;
        if v < 1_000 {
            ns[slot(v).unwrap_or(9)] += n;
        } else if v < 1_000_000 {
            us[slot(v / 1_000).unwrap_or(9)] += n;
        } else {
            let m = v / 1_000_000;
            let i = match slot(m) {
                Some(i) => i,
                None if m < 2000 => 10,
                None => 11,
            };
            ms[i] += n;
        }
    }
    let pct = |n: u64| {
        if total == 0 {
            0.0
        } else {
            n as f64 * 100.0 / total as f64
        }
    };
    let map = |counts: &[u64]| -> Map<String, Value> {
        BOUNDS
            .iter()
            .map(|b| b.to_string())
            .chain(["2000".to_string(), ">=2000".to_string()])
            .zip(counts)
            .map(|(k, &n)| (k, json!(pct(n))))
            .collect()
    };
    (
        Value::Object(map(&ns)),
        Value::Object(map(&us)),
        Value::Object(map(&ms)),
    )
}

/// fio's `steadystate` object of a job entry (stat.c), from the job's (or
/// its reporting group's) steady-state check.
pub fn steadystate(s: &crate::steady::SteadyState) -> Value {
    let (iops, bw) = s.in_order();
    let (iops_mean, bw_mean) = s.means();
    json!({
        "ss": s.crit.shown(),
        "duration": s.dur,
        "attained": u8::from(s.attained),
        "criterion": format!("{:.6}{}", s.criterion as f32, if s.crit.pct { "%" } else { "" }),
        "max_deviation": s.deviation,
        "slope": s.slope,
        "data": {
            "bw_mean": bw_mean,
            "iops_mean": iops_mean,
            "iops": iops,
            "bw": bw,
        },
    })
}

/// fio's latency_target fields of a job entry: the depth the search
/// ended at, the target (ns), the percentile and the window (µs).
pub fn latency_target(e: &mut Value, depth: u32, p: &crate::lat_target::LatTargetPlan) {
    e["latency_depth"] = json!(depth);
    e["latency_target"] = json!(p.target_ns);
    e["latency_percentile"] = json!(p.percentile);
    e["latency_window"] = json!(p.window_us);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringlab_stats::ThreadMeasurements;

    #[test]
    fn buckets_follow_fio_bounds() {
        let mut r = LatencyRecorder::new();
        r.record(500); // ns bucket 750
        r.record(3_000); // us bucket 4
        r.record(1_500_000); // ms bucket 2
        r.record(3_000_000_000); // ms >=2000
        let (ns, us, ms) = buckets(&r);
        assert_eq!(ns["750"], 25.0);
        assert_eq!(us["4"], 25.0);
        assert_eq!(ms["2"], 25.0);
        assert_eq!(ms[">=2000"], 25.0);
        assert_eq!(ns.as_object().unwrap().len(), 10);
        assert_eq!(ms.as_object().unwrap().len(), 12);
    }

    #[test]
    fn interval_samples_give_fio_spread() {
        let mut m = ringlab_stats::ThreadMeasurements {
            elapsed_ns: 3_000_000_000,
            ..Default::default()
        };
        m.read.record(4096, 1000);
        let f = m.figures(m.elapsed_ns);
        let samples = [(100.0, 102_400.0), (200.0, 204_800.0), (300.0, 307_200.0)];
        let d = direction(
            &f.read,
            f.elapsed_ns,
            0.0,
            &FIO_PERCENTILES,
            false,
            &samples,
        );
        assert_eq!(d["iops_samples"], 3);
        assert_eq!(d["iops_min"], 100);
        assert_eq!(d["iops_max"], 300);
        assert_eq!(d["iops_mean"], 200.0);
        assert_eq!(d["iops_stddev"], 100.0);
        assert_eq!(d["bw_mean"], 200.0);
        assert_eq!(d["bw_dev"], 100.0);
        assert_eq!(d["bw_samples"], 3);
    }

    #[test]
    fn direction_has_fio_keys_and_units() {
        let mut m = ThreadMeasurements {
            elapsed_ns: 2_000_000_000,
            ..Default::default()
        };
        for i in 0..1000 {
            m.read.record(4096, 10_000 + i);
        }
        let f = m.figures(m.elapsed_ns);
        let d = direction(
            &f.read,
            f.elapsed_ns,
            f.read.bw_bytes_per_s,
            &FIO_PERCENTILES,
            true,
            &[],
        );
        assert_eq!(d["io_bytes"], 4_096_000);
        assert_eq!(d["io_kbytes"], 4000);
        assert_eq!(d["bw_bytes"], 2_048_000);
        assert_eq!(d["bw"], 2000);
        assert_eq!(d["iops"], 500.0);
        assert_eq!(d["runtime"], 2000);
        assert_eq!(d["total_ios"], 1000);
        assert_eq!(d["lat_ns"]["N"], 1000);
        assert_eq!(d["slat_ns"]["N"], 0);
        assert_eq!(d["bw_agg"], 100.0);
        let p = &d["clat_ns"]["percentile"];
        assert!(p["99.000000"].as_u64().unwrap() >= 10_980);
        assert_eq!(p.as_object().unwrap().len(), 17);
        let bins: u64 = d["clat_ns"]["bins"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(bins, 1000);
    }

    #[test]
    fn slat_and_clat_are_fio_s_and_add_up_to_lat() {
        let mut m = ThreadMeasurements::default();
        m.read.record_split(4096 * 10, Some(2_000), 8_000, 10);
        m.read.record_split(4096 * 5, Some(500), 20_000, 5);
        let f = m.figures(1_000_000_000);
        let d = direction(&f.read, f.elapsed_ns, 1.0, &FIO_PERCENTILES, false, &[]);
        assert_eq!(d["slat_ns"]["N"], 15);
        assert_eq!(d["clat_ns"]["N"], 15);
        assert_eq!(d["slat_ns"]["max"], 2_000);
        assert_eq!(d["clat_ns"]["min"], 8_000);
        let mean = |k: &str| d[k]["mean"].as_f64().unwrap();
        assert!((mean("lat_ns") - mean("slat_ns") - mean("clat_ns")).abs() < 1e-6);
        assert_eq!(d["clat_ns"]["percentile"]["99.000000"], 20_000);
        assert_eq!(d["lat_ns"]["max"], 20_500);
    }
}
