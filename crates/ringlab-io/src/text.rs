//! The compact text report of a `ringlab io` result, its diagnoses at the
//! end.

use crate::config::IoConfig;
use crate::engine_kind::EngineKind;
use crate::workload::Rw;
use ringlab_stats::units::{format_bandwidth, format_bytes, format_ns, format_rate};
use ringlab_stats::{DirectionFigures, Figures, LatencySummary, RunResult};
use std::fmt::Write;

/// Renders `r` for people: what ran, then each job, then the total.
pub fn render(r: &RunResult) -> String {
    let mut out = String::new();
    match IoConfig::from_map(&r.config) {
        Ok(c) => render_config(&mut out, &c),
        Err(e) => {
            let _ = writeln!(out, "ringlab io: (config unreadable: {e})");
        }
    }
    if let Some(t) = &r.target {
        let mut what = vec![match &t.fs_type {
            Some(fs) => format!("{} on {fs}", t.kind),
            None => t.kind.clone(),
        }];
        if let Some(s) = &t.scheduler {
            what.push(format!("scheduler {s}"));
        }
        what.push(format!(
            "{} used of {}",
            format_bytes(t.region_bytes),
            format_bytes(t.size_bytes)
        ));
        what.push(format!("logical block {} B", t.logical_block_size));
        if t.created {
            what.push(
                if t.kept {
                    "created, kept"
                } else {
                    "created, removed after the run"
                }
                .to_string(),
            );
        }
        let _ = writeln!(out, "target: {} ({})", t.path, what.join(", "));
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    for j in &r.jobs {
        let cpu = j.cpu.map(|c| format!(" [cpu {c}]")).unwrap_or_default();
        render_figures(&mut out, &format!("job {}{cpu}", j.job), &j.figures);
    }
    if r.jobs.len() != 1 {
        render_figures(&mut out, "total", &r.total);
    }
    if let Some(k) = &r.kstat {
        render_kstat(&mut out, k);
    }
    out.push_str(&ringlab_kstat::explain::render_diagnoses(&r.diagnoses));
    out
}

/// The kernel-evidence block: per-op figures, helper threads, knob
/// evidence, and what could not be measured.
pub fn render_kstat(out: &mut String, k: &ringlab_stats::KstatReport) {
    let p = |name: &str| k.per_op.get(name).copied();
    let mut figs = Vec::new();
    for (name, label) in [
        ("syscalls_per_op", "syscalls"),
        ("io_uring_enter_per_op", "io_uring_enter"),
        ("context_switches_per_op", "ctx switches"),
        ("ipis_per_op", "IPIs"),
        ("io_uring_task_add_per_op", "task work"),
        ("io_uring_queue_async_work_per_op", "io-wq offloads"),
        ("io_uring_file_get_per_op", "file lookups"),
        ("device_interrupts_per_op", "device irqs"),
    ] {
        if let Some(v) = p(name) {
            figs.push(format!("{label} {v:.2}"));
        }
    }
    let _ = writeln!(out, "kernel, per op: {}", figs.join(", "));
    if k.sampled_ops > 0 {
        let mut what: Vec<&str> = Vec::new();
        for (counter, label) in [
            ("raw_syscalls:sys_enter", "system calls"),
            ("io_uring:io_uring_queue_async_work", "io-wq offloads"),
            ("io_uring:io_uring_poll_arm", "poll arming"),
        ] {
            if k.sampled_counters.contains_key(counter) {
                what.push(label);
            }
        }
        let what = match what.as_slice() {
            [] => "the per-request tracepoints".to_string(),
            [one] => one.to_string(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        };
        let _ = writeln!(
            out,
            "  {what} counted in {} ({} operations inside them; --evidence full counts the whole run)",
            ringlab_kstat::windows::describe(k.sampled_windows),
            k.sampled_ops
        );
    }
    if let Some(cpu) = p("cpu_us_per_op") {
        let helpers = match (p("cpu_us_with_helpers_per_op"), k.helper_threads.len()) {
            (Some(w), n) if n > 0 => format!(
                ", {w:.2}us with {n} kernel helper thread{}",
                if n == 1 { "" } else { "s" }
            ),
            _ => String::new(),
        };
        let _ = writeln!(out, "  cpu {cpu:.2}us/op in job threads{helpers}");
    }
    if let Some(i) = &k.interrupts {
        let on_cpus = |v: &[u64]| -> String {
            let parts: Vec<String> = v
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(c, n)| format!("cpu{c} {n}"))
                .collect();
            if parts.is_empty() {
                "none".into()
            } else {
                parts.join(", ")
            }
        };
        let mut parts = Vec::new();
        for d in &i.device {
            parts.push(format!("{} on {}", d.name, on_cpus(&d.per_cpu)));
        }
        parts.push(format!(
            "rescheduling IPIs on {}",
            on_cpus(&i.rescheduling_per_cpu)
        ));
        parts.push(format!(
            "function-call IPIs on {}",
            on_cpus(&i.function_call_per_cpu)
        ));
        let _ = writeln!(out, "  interrupts (all CPUs): {}", parts.join("; "));
    }
    for h in &k.helper_threads {
        let _ = writeln!(
            out,
            "  helper {}: {}",
            h.name,
            h.cpu_ns
                .map_or("cpu unavailable (no schedstat)".to_string(), |n| format!(
                    "cpu {}",
                    format_ns(n as f64)
                ))
        );
    }
    for e in &k.evidence {
        let _ = writeln!(out, "  {}", ringlab_kstat::explain::verdict_line(e));
    }
    if let Some(st) = &k.stages {
        render_stages(out, st);
    }
    if !k.counter_runs_skipped.is_empty() {
        let parts: Vec<String> = k
            .counter_runs_skipped
            .iter()
            .map(|(c, n)| format!("{} {n}", event_name(c)))
            .collect();
        let _ = writeln!(
            out,
            "  counts may be short: the kernel skipped runs of these counters ({}): a counter does not run nested into itself on a CPU, and each skip is at most one event of this run",
            parts.join(", ")
        );
    }
    // One line per reason, naming the counters it holds back.
    let mut reasons: Vec<&str> = Vec::new();
    for u in &k.unavailable {
        if !reasons.contains(&u.reason.as_str()) {
            reasons.push(&u.reason);
        }
    }
    for reason in reasons {
        let names: Vec<&str> = k
            .unavailable
            .iter()
            .filter(|u| u.reason == reason)
            .map(|u| event_name(&u.counter))
            .collect();
        let _ = writeln!(out, "  not measured: {}: {reason}", names.join(", "));
    }
}

/// A counter's name as the text shows it: the event of a `system:event`
/// tracepoint, any other name whole.
fn event_name(counter: &str) -> &str {
    counter.rsplit_once(':').map_or(counter, |(_, event)| event)
}

/// `--evidence stages`: per stage, the percentiles of the requests' time in
/// it, from the kernel's own timestamps.
fn render_stages(out: &mut String, st: &ringlab_stats::StageReport) {
    let block = match st.requests_matched_block {
        Some(b) if b > 0 => match st.requests_block_completed {
            Some(c) if c < b => format!(
                ", {b} with their block request ({c} with their block_rq_complete, over which the device's stages are timed)"
            ),
            _ => format!(", {b} with their block request"),
        },
        Some(_) => ", no block request seen".into(),
        None => ", no block stages (no request queue under the target)".into(),
    };
    let lost = if st.events_lost > 0 || st.requests_not_logged {
        format!(
            "; {} kernel events lost{}",
            st.events_lost,
            if st.requests_not_logged {
                ", requests past the log's cap not logged"
            } else {
                ""
            }
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  where the time goes, per request ({} of {} requests joined to their kernel events{block}{lost}):",
        st.requests_matched, st.requests_logged
    );
    let width = st.stages.iter().map(|s| s.stage.len()).max().unwrap_or(0);
    for s in &st.stages {
        let _ = writeln!(
            out,
            "    {:width$}  mean {:>9}  p50 {:>9}  p99 {:>9}  max {:>9}",
            s.stage,
            format_ns(s.mean_ns),
            format_ns(s.p50_ns as f64),
            format_ns(s.p99_ns as f64),
            format_ns(s.max_ns as f64),
        );
    }
}

/// The head: what ran, and the io_uring (or libaio) knobs.
fn render_config(out: &mut String, c: &IoConfig) {
    let mut line = format!(
        "ringlab io: {} {}, iodepth {}, {} job{}, engine {}, {}",
        c.rw.name(),
        match (&c.bssplit, &c.bsrange) {
            (Some(split), _) => format!("bssplit {split}"),
            (None, Some(range)) => format!("bsrange {range}"),
            _ => format_bytes(c.bs),
        },
        c.iodepth,
        c.numjobs,
        if c.numjobs == 1 { "" } else { "s" },
        c.engine.name(),
        if c.direct { "O_DIRECT" } else { "buffered" },
    );
    if matches!(c.rw, Rw::Randrw | Rw::Rw) {
        let _ = write!(line, ", {}% reads", c.rwmixread);
    }
    if let Some(secs) = c.runtime {
        let _ = write!(line, ", runtime {}", format_ns(secs * 1e9));
    }
    if let Some(n) = c.io_size {
        let _ = write!(line, ", io-size {}", format_bytes(n));
    }
    if c.thinkcycles > 0 {
        let _ = write!(line, ", thinkcycles {}", c.thinkcycles);
    }
    if c.verify {
        line.push_str(", verify");
    }
    if c.gtod_reduce {
        line.push_str(", gtod-reduce (no latency)");
    } else if let Some(clock) = &c.clock {
        let _ = write!(line, ", timed by {clock}");
    }
    let _ = writeln!(out, "{line}, seed {}", c.seed);
    let knobs = c.uring.describe();
    match c.engine {
        EngineKind::Uring => {
            let preset = c
                .uring
                .mode
                .map(|m| format!("--mode {} = ", m.name()))
                .unwrap_or_default();
            let mut line = format!("io_uring: {preset}{knobs}");
            if knobs.is_empty() && c.uring.mode == Some(crate::knobs::Mode::Iou) {
                line.push_str("(the bare kernel ring)");
            }
            if !c.default_knobs.is_empty() {
                let chosen: Vec<String> =
                    c.default_knobs.iter().map(|k| format!("--{k}")).collect();
                let _ = write!(
                    line,
                    " ({} chosen by default; --mode iou for the bare kernel ring)",
                    chosen.join(" ")
                );
            }
            let _ = writeln!(out, "{line}");
            if c.default_knobs.iter().any(|k| k == "force-async") {
                let _ = writeln!(
                    out,
                    "  --force-async by default: the target takes no non-blocking I/O (preadv2 RWF_NOWAIT: EOPNOTSUPP), so io_uring hands every request to an io-wq worker after trying it inline; IOSQE_ASYNC skips the try and lets io-wq run requests side by side (--force-async=0: not)"
                );
            }
        }
        EngineKind::Libaio if !knobs.is_empty() => {
            let _ = writeln!(out, "libaio: {knobs}");
        }
        _ => {}
    }
}

fn render_figures(out: &mut String, label: &str, f: &Figures) {
    let secs = f.elapsed_ns as f64 / 1e9;
    let _ = writeln!(
        out,
        "{label}: {} IOPS, {}, {} ops ({}) in {secs:.2}s",
        format_rate(f.iops),
        format_bandwidth(f.bw_bytes_per_s),
        f.ops,
        format_bytes(f.bytes),
    );
    for (name, d) in [("read", &f.read), ("write", &f.write)] {
        render_direction(out, name, d);
    }
    if let Some(t) = &f.trim {
        render_direction(out, "trim", t);
    }
    let pct = |ns: u64| {
        if f.elapsed_ns == 0 {
            0.0
        } else {
            ns as f64 * 100.0 / f.elapsed_ns as f64
        }
    };
    let _ = writeln!(
        out,
        "  cpu  : user {} ({:.1}%), sys {} ({:.1}%), context switches {} voluntary, {} involuntary",
        format_ns(f.cpu_user_ns as f64),
        pct(f.cpu_user_ns),
        format_ns(f.cpu_sys_ns as f64),
        pct(f.cpu_sys_ns),
        f.ctx_voluntary,
        f.ctx_involuntary
    );
    if let Some(n) = f.verified_blocks {
        let _ = writeln!(out, "  verify: {n} blocks checked, all correct");
    }
    if let Some(n) = f.syncs {
        let _ = writeln!(out, "  sync : {n} fsync/fdatasync calls");
    }
}

fn render_direction(out: &mut String, name: &str, d: &DirectionFigures) {
    if d.ops == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "  {name:<5}: {} IOPS, {}, {} ops",
        format_rate(d.iops),
        format_bandwidth(d.bw_bytes_per_s),
        d.ops
    );
    // fio's order: submission, completion, then the whole latency.
    if let (Some(slat), Some(clat)) = (&d.slat_ns, &d.clat_ns) {
        let _ = writeln!(out, "   slat: {}", latency_line(slat));
        let _ = writeln!(out, "   clat: {}", latency_line(clat));
    }
    match (&d.lat_ns, &d.clat_ns) {
        (Some(lat), _) => {
            let _ = writeln!(out, "    lat: {}", latency_line(lat));
        }
        (None, Some(ops)) => {
            // The file engines (fio's filecreate, filestat, filedelete).
            let _ = writeln!(
                out,
                "    ops: {} (each file's create, stat or unlink; the I/Os are counted, not done or timed)",
                latency_line(ops)
            );
        }
        (None, None) => {
            let _ = writeln!(
                out,
                "    lat: not measured (--gtod-reduce: no I/O was timed)"
            );
        }
    }
}

/// `min 10.2us mean 250.1us ... max 2.30ms`
pub fn latency_line(l: &LatencySummary) -> String {
    let f = |v: f64| format_ns(v);
    format!(
        "min {} mean {} stdev {} | p50 {} p90 {} p99 {} p99.9 {} p99.99 {} | max {}",
        f(l.min as f64),
        f(l.mean),
        f(l.stdev),
        f(l.p50 as f64),
        f(l.p90 as f64),
        f(l.p99 as f64),
        f(l.p99_9 as f64),
        f(l.p99_99 as f64),
        f(l.max as f64)
    )
}

#[cfg(test)]
mod tests {
    use super::render_kstat;
    use ringlab_stats::KstatReport;

    #[test]
    fn skipped_counter_runs_are_named_and_none_says_nothing() {
        let mut k = KstatReport::default();
        let mut out = String::new();
        render_kstat(&mut out, &k);
        assert!(!out.contains("may be short"), "{out}");
        k.counter_runs_skipped
            .insert("raw_syscalls:sys_enter".into(), 3);
        k.counter_runs_skipped
            .insert("io_uring:io_uring_file_get".into(), 12);
        let mut out = String::new();
        render_kstat(&mut out, &k);
        let line = out
            .lines()
            .find(|l| l.contains("counts may be short"))
            .unwrap_or_else(|| panic!("no line for the skips in:\n{out}"));
        assert!(
            line.contains("io_uring_file_get 12") && line.contains("sys_enter 3"),
            "{line}"
        );
    }
}
