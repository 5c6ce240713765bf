//! `ringlab merge`: the shards of one run (or several runs of one
//! configuration) added into one ordinary result. Counts, bytes and errors
//! are summed; latency histograms are added and every percentile is
//! recomputed from them (exact to the histogram's precision, never an
//! average of percentiles); the run window goes from the earliest start to
//! the latest end, and rates are over that window.

use crate::input::{read_limited, RESULT_MAX_BYTES};
use anyhow::{anyhow, Result};
use ringlab_core::usage_error;
use ringlab_stats::{
    DirectionFigures, EncodedLatency, Figures, HttpErrors, HttpFigures, IntervalFigures,
    JobFigures, LatencyRecorder, MergeInfo, MergedShard, ResultHistograms, RunResult,
    HISTOGRAM_ENCODING, SCHEMA_VERSION,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// How strict the merge is.
#[derive(Debug, Clone, Copy, Default)]
pub struct MergeOptions {
    /// Merge inputs that differ (configuration, shard count, start time),
    /// recording the differences in the result.
    pub force: bool,
    /// Merge the shards given even if some of the count are missing.
    pub allow_missing: bool,
}

/// One input result and the file it came from.
#[derive(Debug, Clone)]
pub struct Input {
    pub file: String,
    pub result: RunResult,
}

/// The result files named: each FILE, and the `*.json` files of each DIR
/// (not recursive, in name order).
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| usage_error(format!("cannot list {}: {e}", p.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && f.extension().is_some_and(|x| x == "json"))
                .collect();
            found.sort();
            if found.is_empty() {
                return Err(usage_error(format!(
                    "{}: a directory with no *.json result in it",
                    p.display()
                )));
            }
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Reads one result, refusing with the reason what is not a complete
/// ringlab result with histograms.
pub fn read_input(path: &Path) -> Result<Input> {
    let file = path.display().to_string();
    let bytes = read_limited(path, RESULT_MAX_BYTES)
        .map_err(|e| usage_error(format!("cannot read {file}: {e}")))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| {
        let why = if e.is_eof() {
            "it ends in the middle (truncated: a run killed while writing, or a copy cut short?)"
        } else {
            "it is not JSON"
        };
        usage_error(format!(
            "{file}: not a complete ringlab result: {why} ({e})"
        ))
    })?;
    if v["tool"]["name"].as_str() != Some("ringlab") || !v["total"].is_object() {
        return Err(usage_error(format!(
            "{file}: not a ringlab result (no tool.name \"ringlab\" and total figures): give the JSON of 'ringlab io|http --output-format json'"
        )));
    }
    if v["schema_version"]
        .as_u64()
        .is_some_and(|s| s > SCHEMA_VERSION as u64)
    {
        return Err(usage_error(format!(
            "{file}: result schema {} is newer than this ringlab's ({SCHEMA_VERSION}): merge with the ringlab that wrote it",
            v["schema_version"]
        )));
    }
    let result: RunResult = serde_json::from_value(v).map_err(|e| {
        usage_error(format!(
            "{file}: a ringlab result this version cannot read ({e})"
        ))
    })?;
    if result.histograms.is_none() {
        return Err(usage_error(format!(
            "{file}: has no latency histograms, so its percentiles cannot be merged: run it with --histograms (every --shard run has them)"
        )));
    }
    Ok(Input { file, result })
}

/// What differs between the inputs, one sentence each.
fn differences(inputs: &[Input]) -> Vec<String> {
    let mut out = Vec::new();
    let first = &inputs[0];
    let name = |i: &Input| i.file.clone();
    for other in &inputs[1..] {
        let (a, b) = (&first.result, &other.result);
        if a.command != b.command {
            out.push(format!(
                "command: {} in {}, {} in {}",
                a.command,
                name(first),
                b.command,
                name(other)
            ));
            continue;
        }
        let keys: BTreeSet<&String> = a.config.keys().chain(b.config.keys()).collect();
        for k in keys {
            let (x, y) = (a.config.get(k), b.config.get(k));
            if x != y {
                let show = |v: Option<&Value>| v.map_or("(absent)".to_string(), Value::to_string);
                out.push(format!(
                    "config.{k}: {} in {}, {} in {}",
                    show(x),
                    name(first),
                    show(y),
                    name(other)
                ));
            }
        }
        match (&a.shard, &b.shard) {
            (Some(x), Some(y)) => {
                if x.count != y.count {
                    out.push(format!(
                        "shard count: {} in {}, {} in {}",
                        x.count,
                        name(first),
                        y.count,
                        name(other)
                    ));
                }
                if x.start_at != y.start_at {
                    out.push(format!(
                        "--start-at: {} in {}, {} in {} (not one run)",
                        x.start_at.as_deref().unwrap_or("none"),
                        name(first),
                        y.start_at.as_deref().unwrap_or("none"),
                        name(other)
                    ));
                }
                if x.job_id.is_some() && y.job_id.is_some() && x.job_id != y.job_id {
                    out.push(format!(
                        "launcher job: {} in {}, {} in {} (not one run)",
                        x.job_id.as_deref().unwrap_or(""),
                        name(first),
                        y.job_id.as_deref().unwrap_or(""),
                        name(other)
                    ));
                }
            }
            (None, None) => {}
            (x, y) => out.push(format!(
                "{} is {}, {} is {}",
                name(first),
                shard_name(x.as_ref()),
                name(other),
                shard_name(y.as_ref())
            )),
        }
    }
    // The same shard twice.
    let mut seen: BTreeMap<u32, &str> = BTreeMap::new();
    for i in inputs {
        if let Some(s) = &i.result.shard {
            if let Some(prev) = seen.insert(s.index, &i.file) {
                out.push(format!(
                    "shard {}/{} given twice: {prev} and {}",
                    s.index, s.count, i.file
                ));
            }
        }
    }
    out
}

fn shard_name(s: Option<&ringlab_stats::ShardInfo>) -> String {
    match s {
        Some(s) => format!("shard {}/{}", s.index, s.count),
        None => "no shard".to_string(),
    }
}

/// Measuring window of one input, Unix nanoseconds: from its shard record,
/// else from `started_at` (whole seconds) and its elapsed time.
fn window(r: &RunResult) -> (u64, u64) {
    if let Some(s) = &r.shard {
        return (s.started_unix_ns, s.ended_unix_ns);
    }
    if let Some(m) = &r.merged {
        return (m.started_unix_ns, m.ended_unix_ns);
    }
    let start = humantime::parse_rfc3339_weak(&r.started_at)
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64);
    (start, start + r.total.elapsed_ns)
}

fn decode(file: &str, what: &str, e: &EncodedLatency) -> Result<LatencyRecorder> {
    LatencyRecorder::decode(e).map_err(|x| usage_error(format!("{file}: histograms.{what}: {x}")))
}

/// Adds the histogram `pick` of every input; `None` if any input lacks it.
fn merged_hist(
    inputs: &[Input],
    what: &str,
    pick: impl Fn(&ResultHistograms) -> Option<&EncodedLatency>,
) -> Result<Option<LatencyRecorder>> {
    let mut all = LatencyRecorder::new();
    for i in inputs {
        let h = i.result.histograms.as_ref().and_then(&pick);
        match h {
            Some(e) => all.merge(&decode(&i.file, what, e)?),
            None => return Ok(None),
        }
    }
    Ok(Some(all))
}

fn per_second(n: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        n as f64 * 1e9 / ns as f64
    }
}

fn sum_opt(xs: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    xs.fold(None, |acc, x| match (acc, x) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    })
}

fn direction(
    inputs: &[Input],
    elapsed_ns: u64,
    pick: impl Fn(&Figures) -> &DirectionFigures,
    lat: Option<&LatencyRecorder>,
) -> DirectionFigures {
    let ops = inputs.iter().map(|i| pick(&i.result.total).ops).sum();
    let bytes = inputs.iter().map(|i| pick(&i.result.total).bytes).sum();
    DirectionFigures {
        ops,
        bytes,
        iops: per_second(ops, elapsed_ns),
        bw_bytes_per_s: per_second(bytes, elapsed_ns),
        lat_ns: lat.and_then(LatencyRecorder::summary),
        ..Default::default()
    }
}

/// Merges `inputs` (at least one) into one result.
pub fn merge(inputs: Vec<Input>, opts: MergeOptions) -> Result<RunResult> {
    let Some(first) = inputs.first() else {
        return Err(usage_error("merge needs at least one result"));
    };
    let diffs = differences(&inputs);
    if !diffs.is_empty() && !opts.force {
        let shown: Vec<&str> = diffs.iter().take(5).map(String::as_str).collect();
        return Err(usage_error(format!(
            "these results are not shards of one run: {}{}; merge only results of one configuration, or pass --force to merge anyway (the differences are recorded in the result)",
            shown.join("; "),
            if diffs.len() > 5 {
                format!("; and {} more", diffs.len() - 5)
            } else {
                String::new()
            }
        )));
    }
    if first.result.command != "io" && first.result.command != "http" {
        return Err(usage_error(format!(
            "{}: a result of '{}': merge adds results of 'ringlab io' and 'ringlab http'",
            first.file, first.result.command
        )));
    }
    let forced = if opts.force { diffs } else { Vec::new() };
    // Missing shards.
    let mut missing = Vec::new();
    if let Some(count) = first.result.shard.as_ref().map(|s| s.count) {
        let have: BTreeSet<u32> = inputs
            .iter()
            .filter_map(|i| i.result.shard.as_ref().map(|s| s.index))
            .collect();
        missing = (0..count).filter(|i| !have.contains(i)).collect();
        if !missing.is_empty() && !opts.allow_missing {
            let list: Vec<String> = missing.iter().take(20).map(u32::to_string).collect();
            return Err(usage_error(format!(
                "shard{} {} of {count} missing: give every shard's result, or pass --allow-missing to merge the {} given (the result then lists what is missing)",
                if missing.len() > 1 { "s" } else { "" },
                list.join(", "),
                have.len()
            )));
        }
    }
    let windows: Vec<(u64, u64)> = inputs.iter().map(|i| window(&i.result)).collect();
    let start = windows.iter().map(|w| w.0).min().unwrap_or(0);
    let end = windows.iter().map(|w| w.1).max().unwrap_or(0);
    let elapsed_ns = end.saturating_sub(start).max(1);

    let lat = merged_hist(&inputs, "lat_ns", |h| Some(&h.lat_ns))?.unwrap_or_default();
    let read_lat = merged_hist(&inputs, "read_lat_ns", |h| h.read_lat_ns.as_ref())?;
    let write_lat = merged_hist(&inputs, "write_lat_ns", |h| h.write_lat_ns.as_ref())?;
    let uncorrected = merged_hist(&inputs, "lat_ns_uncorrected", |h| {
        h.lat_ns_uncorrected.as_ref()
    })?;
    let totals = || inputs.iter().map(|i| &i.result.total);
    let ops: u64 = totals().map(|t| t.ops).sum();
    let bytes: u64 = totals().map(|t| t.bytes).sum();
    let total = Figures {
        elapsed_ns,
        ops,
        bytes,
        iops: per_second(ops, elapsed_ns),
        bw_bytes_per_s: per_second(bytes, elapsed_ns),
        lat_ns: lat.summary(),
        read: direction(&inputs, elapsed_ns, |f| &f.read, read_lat.as_ref()),
        write: direction(&inputs, elapsed_ns, |f| &f.write, write_lat.as_ref()),
        // Shards' trims are kept per job, not merged (no trim histogram is
        // stored to merge them by).
        trim: None,
        cpu_user_ns: totals().map(|t| t.cpu_user_ns).sum(),
        cpu_sys_ns: totals().map(|t| t.cpu_sys_ns).sum(),
        ctx_voluntary: totals().map(|t| t.ctx_voluntary).sum(),
        ctx_involuntary: totals().map(|t| t.ctx_involuntary).sum(),
        verified_blocks: sum_opt(totals().map(|t| t.verified_blocks)),
        syncs: sum_opt(totals().map(|t| t.syncs)),
        io_depths: totals().filter_map(|t| t.io_depths).reduce(|mut a, b| {
            a.merge(&b);
            a
        }),
    };
    let mut jobs = Vec::new();
    for i in &inputs {
        for j in &i.result.jobs {
            jobs.push(JobFigures {
                job: jobs.len() as u32,
                cpu: j.cpu,
                figures: j.figures.clone(),
            });
        }
    }
    let mut warnings = Vec::new();
    let mut shards = Vec::new();
    for (i, w) in inputs.iter().zip(&windows) {
        let s = i.result.shard.as_ref();
        let who = match s {
            Some(s) => format!("shard {}/{} ({})", s.index, s.count, i.file),
            None => i.file.clone(),
        };
        for x in &i.result.warnings {
            warnings.push(format!("{who}: {x}"));
        }
        if let Some(s) = s.filter(|s| s.late) {
            warnings.push(format!(
                "{who} began {:.1} ms after --start-at: it did not run over the same window as the others, and the merged rate is over a longer window",
                s.start_late_ns.unwrap_or(0) as f64 / 1e6
            ));
        }
        shards.push(MergedShard {
            file: i.file.clone(),
            index: s.map(|s| s.index),
            count: s.map(|s| s.count),
            host: s.map_or_else(|| i.result.host.hostname.clone(), |s| s.host.clone()),
            started_unix_ns: w.0,
            start_offset_ns: w.0 - start,
            start_late_ns: s.and_then(|s| s.start_late_ns),
            late: s.is_some_and(|s| s.late),
            ops: i.result.total.ops,
        });
    }
    if !missing.is_empty() {
        warnings.push(format!(
            "merged with --allow-missing: shard(s) {:?} of {} are not in these figures",
            missing,
            first.result.shard.as_ref().map_or(0, |s| s.count)
        ));
    }
    if inputs.iter().any(|i| i.result.kstat.is_some()) {
        warnings.push(
            "kernel evidence (kstat) is per host and is not merged: see each shard's result"
                .to_string(),
        );
    }
    let hosts: BTreeSet<&str> = shards.iter().map(|s| s.host.as_str()).collect();
    let mut host = first.result.host.clone();
    host.hostname = hosts.into_iter().collect::<Vec<_>>().join(",");
    let kernels: BTreeSet<&str> = inputs
        .iter()
        .map(|i| i.result.host.kernel.as_str())
        .collect();
    if kernels.len() > 1 {
        warnings.push(format!(
            "the shards ran on different kernels ({}): host.kernel shows the first",
            kernels.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let http = first
        .result
        .http
        .as_ref()
        .map(|_| merge_http(&inputs, &lat, uncorrected.as_ref(), &total));
    let (intervals, interval_hists) = merge_intervals(&inputs)?;
    Ok(RunResult {
        schema_version: SCHEMA_VERSION,
        tool: first.result.tool.clone(),
        command: first.result.command.clone(),
        started_at: humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_nanos(start))
            .to_string(),
        host,
        config: first.result.config.clone(),
        target: first.result.target.clone(),
        jobs,
        total,
        warnings,
        kstat: None,
        http,
        diagnoses: Vec::new(),
        intervals,
        histograms: Some(ResultHistograms {
            encoding: HISTOGRAM_ENCODING.to_string(),
            lat_ns: lat.encode(),
            read_lat_ns: read_lat.map(|l| l.encode()),
            write_lat_ns: write_lat.map(|l| l.encode()),
            lat_ns_uncorrected: uncorrected.map(|l| l.encode()),
            intervals: interval_hists,
        }),
        shard: None,
        merged: Some(MergeInfo {
            shards,
            missing,
            forced,
            started_unix_ns: start,
            ended_unix_ns: end,
        }),
    })
}

fn merge_http(
    inputs: &[Input],
    lat: &LatencyRecorder,
    uncorrected: Option<&LatencyRecorder>,
    total: &Figures,
) -> HttpFigures {
    let hs: Vec<&HttpFigures> = inputs
        .iter()
        .filter_map(|i| i.result.http.as_ref())
        .collect();
    let sum = |f: fn(&HttpFigures) -> u64| hs.iter().map(|h| f(h)).sum::<u64>();
    let mut status = BTreeMap::new();
    let mut errors = HttpErrors::default();
    for h in &hs {
        for (k, v) in &h.status {
            *status.entry(k.clone()).or_insert(0) += v;
        }
        errors.merge(&h.errors);
    }
    let responses = sum(|h| h.responses);
    let syscalls: Option<f64> = hs
        .iter()
        .map(|h| h.syscalls_per_request.map(|p| p * h.responses as f64))
        .sum();
    let sources: BTreeSet<&str> = hs.iter().map(|h| h.syscalls_source.as_str()).collect();
    let cpu = total.cpu_user_ns + total.cpu_sys_ns;
    HttpFigures {
        connections: sum(|h| h.connections),
        connects: sum(|h| h.connects),
        requests_sent: sum(|h| h.requests_sent),
        responses,
        bytes_written: sum(|h| h.bytes_written),
        bytes_read: sum(|h| h.bytes_read),
        status,
        non_2xx_3xx: sum(|h| h.non_2xx_3xx),
        errors,
        lat_ns_uncorrected: uncorrected.and_then(LatencyRecorder::summary),
        // Per-thread rate samples are not in the results: not merged.
        thread_req_per_s: None,
        cpu_ns_per_request: (responses > 0).then(|| cpu as f64 / responses as f64),
        syscalls_per_request: syscalls
            .filter(|_| responses > 0)
            .map(|s| s / responses as f64),
        syscalls_source: if sources.len() == 1 {
            sources.into_iter().next().unwrap_or_default().to_string()
        } else {
            format!(
                "merged from shards counted differently: {}",
                sources.into_iter().collect::<Vec<_>>().join(" | ")
            )
        },
        lat_ns_percentiles: hs[0].lat_ns_percentiles.as_ref().map(|ps| {
            ps.keys()
                .filter_map(|k| {
                    let p: f64 = k.parse().ok()?;
                    Some((k.clone(), lat.quantile(p / 100.0)?))
                })
                .collect()
        }),
    }
}

/// Interval `i` of every input added, where every input has intervals and
/// their histograms (shards started together cut them at the same times).
type MergedIntervals = (Option<Vec<IntervalFigures>>, Option<Vec<EncodedLatency>>);

fn merge_intervals(inputs: &[Input]) -> Result<MergedIntervals> {
    let all: Option<Vec<(&Vec<IntervalFigures>, &Vec<EncodedLatency>)>> = inputs
        .iter()
        .map(|i| {
            Some((
                i.result.intervals.as_ref()?,
                i.result.histograms.as_ref()?.intervals.as_ref()?,
            ))
        })
        .collect();
    let Some(all) = all else {
        return Ok((None, None));
    };
    let n = all.iter().map(|(iv, _)| iv.len()).max().unwrap_or(0);
    let mut figures = Vec::with_capacity(n);
    let mut hists = Vec::with_capacity(n);
    for k in 0..n {
        let mut lat = LatencyRecorder::new();
        let mut f = IntervalFigures {
            start_ns: 0,
            elapsed_ns: 0,
            ops: 0,
            bytes: 0,
            iops: 0.0,
            bw_bytes_per_s: 0.0,
            read_ops: 0,
            read_bytes: 0,
            write_ops: 0,
            write_bytes: 0,
            lat_mean_ns: None,
            lat_p99_ns: None,
        };
        for ((iv, hs), input) in all.iter().zip(inputs) {
            let Some(x) = iv.get(k) else { continue };
            f.start_ns = x.start_ns;
            f.elapsed_ns = f.elapsed_ns.max(x.elapsed_ns);
            f.add_counts(x);
            if let Some(h) = hs.get(k) {
                lat.merge(&decode(&input.file, &format!("intervals[{k}]"), h)?);
            }
        }
        f.iops = per_second(f.ops, f.elapsed_ns);
        f.bw_bytes_per_s = per_second(f.bytes, f.elapsed_ns);
        let s = lat.summary();
        f.lat_mean_ns = s.as_ref().map(|s| s.mean);
        f.lat_p99_ns = s.map(|s| s.p99);
        figures.push(f);
        hists.push(lat.encode());
    }
    Ok((Some(figures), Some(hists)))
}

/// A few lines for people about a merged result (on stderr).
pub fn summary(r: &RunResult) -> String {
    use ringlab_stats::units::format_ns;
    let Some(m) = &r.merged else {
        return String::new();
    };
    let t = &r.total;
    let mut s = format!(
        "merged {} result(s) from {} host(s): {} ops in {:.3} s = {:.1} ops/s",
        m.shards.len(),
        r.host.hostname.split(',').count(),
        t.ops,
        t.elapsed_ns as f64 / 1e9,
        t.iops
    );
    if let Some(l) = &t.lat_ns {
        s += &format!(
            "\nlatency: p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
            format_ns(l.p50 as f64),
            format_ns(l.p90 as f64),
            format_ns(l.p99 as f64),
            format_ns(l.p99_9 as f64),
            format_ns(l.max as f64)
        );
    }
    let skew = m
        .shards
        .iter()
        .map(|x| x.start_offset_ns)
        .max()
        .unwrap_or(0);
    s += &format!("\nstart skew between shards: {:.3} ms", skew as f64 / 1e6);
    let late = m.shards.iter().filter(|x| x.late).count();
    if late > 0 {
        s += &format!("\n{late} shard(s) started late (see warnings)");
    }
    if !m.missing.is_empty() {
        s += &format!("\nmissing shards: {:?}", m.missing);
    }
    if !m.forced.is_empty() {
        s += &format!("\nmerged with --force despite: {}", m.forced.join("; "));
    }
    s
}

/// Reads every input (FILEs and DIRs) and merges them.
pub fn merge_paths(paths: &[PathBuf], opts: MergeOptions) -> Result<RunResult> {
    let files = expand(paths)?;
    if files.is_empty() {
        return Err(anyhow!("merge needs at least one result"));
    }
    let inputs = files
        .iter()
        .map(|f| read_input(f))
        .collect::<Result<Vec<_>>>()?;
    merge(inputs, opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringlab_stats::{HostInfo, ShardInfo, ThreadMeasurements, ToolInfo};

    /// A result of `http -R` shard `index` of `count` whose latencies are
    /// `lats`, starting at `start_s` for 10 s.
    fn shard(index: u32, count: u32, lats: &[u64], start_s: u64) -> Input {
        let mut m = ThreadMeasurements {
            elapsed_ns: 10_000_000_000,
            ..Default::default()
        };
        for &l in lats {
            m.read.record(100, l);
        }
        let mut unc = LatencyRecorder::new();
        for &l in lats {
            unc.record(l / 2);
        }
        let total = m.figures(m.elapsed_ns);
        let mut config = serde_json::Map::new();
        config.insert("rate".into(), Value::from(900.0));
        let started = start_s * 1_000_000_000;
        let r = RunResult {
            schema_version: SCHEMA_VERSION,
            tool: ToolInfo {
                name: "ringlab".into(),
                version: "0".into(),
            },
            command: "http".into(),
            started_at: "2026-11-24T00:00:00Z".into(),
            host: HostInfo {
                hostname: format!("h{index}"),
                kernel: "6.18".into(),
                cpu_model: None,
                cpus_online: 2,
                io_uring_disabled: None,
            },
            config,
            target: None,
            jobs: vec![JobFigures {
                job: 0,
                cpu: None,
                figures: total.clone(),
            }],
            total,
            warnings: vec![],
            kstat: None,
            http: Some(HttpFigures {
                responses: lats.len() as u64,
                requests_sent: lats.len() as u64,
                status: [("200".to_string(), lats.len() as u64)].into(),
                errors: HttpErrors {
                    timeout: 1,
                    ..Default::default()
                },
                lat_ns_uncorrected: unc.summary(),
                ..Default::default()
            }),
            diagnoses: vec![],
            intervals: None,
            histograms: Some(ResultHistograms::of(&m, Some(&unc))),
            shard: Some(ShardInfo {
                index,
                count,
                source: "--shard".into(),
                job_id: None,
                host: format!("h{index}"),
                start_at: Some("2026-11-24T00:00:00Z".into()),
                started_unix_ns: started,
                ended_unix_ns: started + 10_000_000_000,
                start_late_ns: Some(0),
                late: false,
                clock: None,
                region_offset_bytes: None,
                region_bytes: None,
                rate: None,
                phase_ns: None,
            }),
            merged: None,
        };
        Input {
            file: format!("shard{index}.json"),
            result: r,
        }
    }

    fn lats(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // A long tail: 50 µs to ~50 ms.
                50_000 + (x >> 33) % 1000 * (x >> 50) % 50_000_000
            })
            .collect()
    }

    #[test]
    fn merged_percentiles_are_those_of_all_raw_latencies() {
        let raw: Vec<Vec<u64>> = (0..4)
            .map(|i| lats(i + 1, 3000 + i as usize * 500))
            .collect();
        let inputs: Vec<Input> = (0..4).map(|i| shard(i, 4, &raw[i as usize], 100)).collect();
        let m = merge(inputs, MergeOptions::default()).unwrap();
        let mut all: Vec<u64> = raw.concat();
        all.sort_unstable();
        assert_eq!(m.total.ops, all.len() as u64);
        let s = m.total.lat_ns.clone().unwrap();
        assert_eq!(s.min, all[0]);
        assert_eq!(s.max, *all.last().unwrap());
        let mean = all.iter().map(|&x| x as f64).sum::<f64>() / all.len() as f64;
        assert!((s.mean - mean).abs() < 1e-6 * mean);
        // Percentiles of the raw data (nearest rank), within the
        // histogram's 3 significant digits.
        let rank = |q: f64| all[((q * all.len() as f64).ceil() as usize).max(1) - 1] as f64;
        for (got, q) in [(s.p50, 0.5), (s.p90, 0.9), (s.p99, 0.99), (s.p99_9, 0.999)] {
            let want = rank(q);
            assert!(
                (got as f64 - want).abs() <= want * 0.001 + 1.0,
                "p{q}: merged {got}, raw {want}"
            );
        }
        let h = m.http.unwrap();
        assert_eq!(h.responses, all.len() as u64);
        assert_eq!(h.errors.timeout, 4);
        assert_eq!(h.status["200"], all.len() as u64);
        assert!(h.lat_ns_uncorrected.is_some());
        let info = m.merged.unwrap();
        assert_eq!(info.shards.len(), 4);
        assert_eq!(m.host.hostname, "h0,h1,h2,h3");
    }

    #[test]
    fn a_result_merged_with_itself_doubles_counts_and_keeps_percentiles() {
        let a = shard(0, 1, &lats(7, 5000), 100);
        let mut b = a.clone();
        b.result.shard = None;
        let mut c = b.clone();
        c.file = "again.json".into();
        let once = b.result.clone();
        let m = merge(vec![b, c], MergeOptions::default()).unwrap();
        assert_eq!(m.total.ops, 2 * once.total.ops);
        assert_eq!(m.total.bytes, 2 * once.total.bytes);
        assert_eq!(m.http.as_ref().unwrap().errors.timeout, 2);
        let (x, y) = (m.total.lat_ns.unwrap(), once.total.lat_ns.unwrap());
        assert_eq!(
            (x.p50, x.p90, x.p99, x.p99_9, x.max),
            (y.p50, y.p90, y.p99, y.p99_9, y.max)
        );
        assert!((x.mean - y.mean).abs() < 1e-6 * y.mean);
    }

    #[test]
    fn different_experiments_are_refused_and_forced_records_why() {
        let a = shard(0, 2, &lats(1, 100), 100);
        let mut b = shard(1, 2, &lats(2, 100), 100);
        b.result.config.insert("rate".into(), Value::from(600.0));
        let e = merge(vec![a.clone(), b.clone()], MergeOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("config.rate: 900.0 in shard0.json, 600.0 in shard1.json"),
            "{e}"
        );
        let m = merge(
            vec![a, b],
            MergeOptions {
                force: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(m.merged.unwrap().forced.len(), 1);
    }

    #[test]
    fn a_missing_shard_is_an_error_unless_allowed() {
        let a = shard(0, 3, &lats(1, 100), 100);
        let c = shard(2, 3, &lats(3, 100), 100);
        let e = merge(vec![a.clone(), c.clone()], MergeOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("shard 1 of 3 missing"), "{e}");
        let m = merge(
            vec![a, c],
            MergeOptions {
                allow_missing: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(m.merged.unwrap().missing, vec![1]);
        // The same shard twice is refused too.
        let a = shard(0, 2, &lats(1, 100), 100);
        let e = merge(vec![a.clone(), a], MergeOptions::default()).unwrap_err();
        assert!(e.to_string().contains("given twice"), "{e}");
    }

    #[test]
    fn the_window_runs_from_the_earliest_start_to_the_latest_end() {
        let a = shard(0, 2, &lats(1, 9000), 100);
        let mut b = shard(1, 2, &lats(2, 9000), 100);
        // Began 30 ms late.
        let s = b.result.shard.as_mut().unwrap();
        s.started_unix_ns += 30_000_000;
        s.ended_unix_ns += 30_000_000;
        s.start_late_ns = Some(30_000_000);
        s.late = true;
        let m = merge(vec![a, b], MergeOptions::default()).unwrap();
        assert_eq!(m.total.elapsed_ns, 10_030_000_000);
        assert!((m.total.iops - 18_000.0 / 10.03).abs() < 1e-6);
        assert!(m
            .warnings
            .iter()
            .any(|w| w.contains("began 30.0 ms after --start-at")));
        let info = m.merged.unwrap();
        assert!(info.shards[1].late);
        assert_eq!(info.shards[1].start_offset_ns, 30_000_000);
    }

    #[test]
    fn truncated_and_foreign_files_are_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let good = serde_json::to_string(&shard(0, 1, &lats(1, 10), 1).result).unwrap();
        let cut = dir.path().join("cut.json");
        std::fs::write(&cut, &good[..good.len() / 2]).unwrap();
        let e = read_input(&cut).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
        let foreign = dir.path().join("oha.json");
        std::fs::write(&foreign, r#"{"summary": {"successRate": 1.0}}"#).unwrap();
        let e = read_input(&foreign).unwrap_err().to_string();
        assert!(e.contains("not a ringlab result"), "{e}");
        let mut plain = shard(0, 1, &lats(1, 10), 1).result;
        plain.histograms = None;
        let p = dir.path().join("plain.json");
        std::fs::write(&p, serde_json::to_string(&plain).unwrap()).unwrap();
        let e = read_input(&p).unwrap_err().to_string();
        assert!(e.contains("--histograms"), "{e}");
    }
}
