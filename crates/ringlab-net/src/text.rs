//! The text report of `ringlab http`, in wrk's exact layout (and wrk2's
//! with -R), so that scripts that parse wrk's output read ringlab's. What
//! ringlab adds (interface, errors in detail, the client's own cost per
//! request) is a block of lines starting `  ringlab:` before
//! `Requests/sec:`, and `Requests/sec:`/`Transfer/sec:` stay the last two
//! lines, as in wrk.

use crate::config::HttpConfig;
use ringlab_stats::{Figures, HttpFigures, KstatReport, LatencyRecorder, RunResult};
use std::fmt::Write;

/// wrk's `format_units`: divide by `scale` while the amount is at least
/// 85% of it and a larger unit remains (so 900us prints as 0.90ms).
fn format_units(n: f64, scale: f64, base: &str, units: &[&str], precision: usize) -> String {
    let mut amt = n;
    let mut unit = base;
    let mut i = 0;
    while i + 1 < units.len() && amt >= scale * 0.85 {
        amt /= scale;
        unit = units[i];
        i += 1;
    }
    format!("{amt:.precision$}{unit}")
}

/// wrk's `format_time_us`: 635.91us, 12.92ms, 1.20s, 1.50m.
pub fn wrk_time_us(us: f64) -> String {
    if us >= 1e6 {
        format_units(us / 1e6, 60.0, "s", &["m", "h"], 2)
    } else {
        format_units(us, 1000.0, "us", &["ms", "s"], 2)
    }
}

/// wrk's `format_binary`: 24.10M (wrk appends the B).
pub fn wrk_binary(bytes: f64) -> String {
    format_units(bytes, 1024.0, "", &["K", "M", "G", "T", "P"], 2)
}

/// wrk's `format_metric`: 56.20k, 1.23M.
pub fn wrk_metric(n: f64) -> String {
    format_units(n, 1000.0, "", &["k", "M", "G", "T", "P"], 2)
}

/// wrk's `print_units`: right-aligned in `width`, with two columns of
/// padding less one per trailing letter, so the numbers line up.
fn units_cell(msg: &str, width: usize) -> String {
    let b = msg.as_bytes();
    let mut pad = 2usize;
    if b.last().is_some_and(u8::is_ascii_alphabetic) {
        pad -= 1;
    }
    if b.len() >= 2 && b[b.len() - 2].is_ascii_alphabetic() {
        pad -= 1;
    }
    let w = width - pad;
    let cut: String = msg.chars().take(w).collect();
    format!("{cut:>w$}{}", &"  "[..pad])
}

/// wrk's test length in its header line: 10s, 2m; below a second (which
/// wrk cannot run) in milliseconds.
fn header_duration(secs: f64) -> String {
    if secs >= 1.0 && secs.fract() == 0.0 {
        format_units(secs, 60.0, "s", &["m", "h"], 0)
    } else {
        format!("{}ms", (secs * 1e3).round())
    }
}

/// A percentile label as wrk prints it (`%7.0Lf%%`), or wrk2
/// (`%7.3Lf%%`) when `precise`.
fn pct_label(p: f64, precise: bool) -> String {
    if precise || p.fract() != 0.0 {
        format!("{p:7.3}%")
    } else {
        format!("{p:7.0}%")
    }
}

/// wrk's first two lines: "Running 10s test @ URL" and the threads and
/// connections.
pub fn header(c: &HttpConfig) -> String {
    format!(
        "Running {} test @ {}\n  {} threads and {} connections\n",
        header_duration(c.duration),
        c.url,
        c.threads,
        c.connections
    )
}

/// Which layout [`render_as`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `ringlab http`: wrk's layout, with ringlab's `  ringlab:` block
    /// before `Requests/sec:`, and "(no response completed)" where there is
    /// no latency to show.
    Ringlab,
    /// `ringlab wrk`: wrk's bytes only. What wrk prints for a run without a
    /// response (zeros and `-nan%`) is printed so, and ringlab's block is
    /// left out (`ringlab wrk --ringlab` writes it on stderr).
    Wrk,
}

/// wrk's `%8.2Lf%%` of the share within one standard deviation; wrk
/// divides by a count of zero when nothing was recorded, which glibc prints
/// as `-nan`.
fn within_cell(pct: Option<f64>) -> String {
    match pct {
        Some(p) if p.is_finite() => format!("{p:8.2}%"),
        _ => format!("{:>8}%", "-nan"),
    }
}

/// Renders `r`; `lat` and `uncorrected` are the merged recorders (for the
/// percentiles and the "+/- Stdev" column the JSON summary does not hold).
pub fn render(r: &RunResult, lat: &LatencyRecorder, uncorrected: &LatencyRecorder) -> String {
    render_as(r, lat, uncorrected, Style::Ringlab)
}

/// Renders `r` in `style`.
pub fn render_as(
    r: &RunResult,
    lat: &LatencyRecorder,
    uncorrected: &LatencyRecorder,
    style: Style,
) -> String {
    let wrk = style == Style::Wrk;
    let mut o = String::new();
    let c = match HttpConfig::from_map(&r.config) {
        Ok(c) => c,
        Err(e) => return format!("(this result's config is not an http config: {e})\n"),
    };
    let t = &r.total;
    let open_loop = c.rate.is_some();
    o.push_str(&header(&c));
    let _ = writeln!(o, "  Thread Stats   Avg      Stdev     Max   +/- Stdev");
    match &t.lat_ns {
        Some(l) => {
            let within = lat
                .pct_between(l.mean - l.stdev, l.mean + l.stdev)
                .unwrap_or(0.0);
            let _ = writeln!(
                o,
                "    {:<10}{}{}{}{within:8.2}%",
                "Latency",
                units_cell(&wrk_time_us(l.mean / 1e3), 8),
                units_cell(&wrk_time_us(l.stdev / 1e3), 10),
                units_cell(&wrk_time_us(l.max as f64 / 1e3), 9),
            );
        }
        None if wrk => {
            // wrk's print_stats of an empty histogram.
            let zero = units_cell(&wrk_time_us(0.0), 8);
            let _ = writeln!(
                o,
                "    {:<10}{zero}{}{}{}",
                "Latency",
                units_cell(&wrk_time_us(0.0), 10),
                units_cell(&wrk_time_us(0.0), 9),
                within_cell(None)
            );
        }
        None => {
            let _ = writeln!(o, "    Latency   (no response completed)");
        }
    }
    let http = r.http.as_ref();
    match http.and_then(|h| h.thread_req_per_s.as_ref()) {
        Some(rs) => {
            let _ = writeln!(
                o,
                "    {:<10}{}{}{}{}",
                "Req/Sec",
                units_cell(&wrk_metric(rs.mean), 8),
                units_cell(&wrk_metric(rs.stdev), 10),
                units_cell(&wrk_metric(rs.max), 9),
                within_cell(Some(rs.within_stdev_pct))
            );
        }
        // wrk always prints the line; without a sample, as zeros.
        None if wrk => {
            let _ = writeln!(
                o,
                "    {:<10}{}{}{}{}",
                "Req/Sec",
                units_cell(&wrk_metric(0.0), 8),
                units_cell(&wrk_metric(0.0), 10),
                units_cell(&wrk_metric(0.0), 9),
                within_cell(None)
            );
        }
        None => {}
    }
    let custom: Option<Vec<f64>> = c.percentile_list.clone();
    // wrk prints the distribution even of an empty histogram (zeros).
    let latency = c.latency && (lat.count() > 0 || wrk);
    if latency && open_loop {
        hdr_block(&mut o, "Recorded Latency", lat, custom.as_deref());
    } else if latency {
        let ps = custom
            .clone()
            .unwrap_or_else(|| vec![50.0, 75.0, 90.0, 99.0]);
        let _ = writeln!(o, "  Latency Distribution");
        for p in ps {
            let v = lat.quantile(p / 100.0).or(wrk.then_some(0));
            if let Some(v) = v {
                let _ = writeln!(
                    o,
                    "{}{}",
                    pct_label(p, false),
                    units_cell(&wrk_time_us(v as f64 / 1e3), 10)
                );
            }
        }
    }
    if c.u_latency && open_loop && uncorrected.count() > 0 {
        let _ = writeln!(o);
        hdr_block(
            &mut o,
            "Uncorrected Latency (measured without taking delayed starts into account)",
            uncorrected,
            custom.as_deref(),
        );
    }
    let _ = writeln!(
        o,
        "  {} requests in {}, {}B read",
        t.ops,
        wrk_time_us(t.elapsed_ns as f64 / 1e3),
        wrk_binary(t.bytes as f64)
    );
    if let Some(h) = http {
        let e = &h.errors;
        if e.connect + e.read + e.write + e.timeout + e.parse + e.closed > 0 {
            // wrk counts a response it cannot parse, or a close in the
            // middle of one, as a read error.
            let _ = writeln!(
                o,
                "  Socket errors: connect {}, read {}, write {}, timeout {}",
                e.connect,
                e.read + e.parse + e.closed,
                e.write,
                e.timeout
            );
        }
        if h.non_2xx_3xx > 0 {
            let _ = writeln!(o, "  Non-2xx or 3xx responses: {}", h.non_2xx_3xx);
        }
    }
    if !wrk {
        o.push_str(&ringlab_block(r, http, uncorrected, latency));
    }
    let _ = writeln!(o, "Requests/sec: {:9.2}", t.iops);
    let _ = writeln!(o, "Transfer/sec: {:>10}B", wrk_binary(t.bw_bytes_per_s));
    o
}

/// wrk2's HdrHistogram block: the percentiles at 50 to 100%, then the
/// detailed spectrum in milliseconds, then a line of dashes.
fn hdr_block(o: &mut String, what: &str, lat: &LatencyRecorder, custom: Option<&[f64]>) {
    let _ = writeln!(o, "  Latency Distribution (HdrHistogram - {what})");
    let default = [50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0];
    for &p in custom.unwrap_or(&default) {
        if let Some(v) = lat.quantile(p / 100.0) {
            let _ = writeln!(
                o,
                "{}{}",
                pct_label(p, true),
                units_cell(&wrk_time_us(v as f64 / 1e3), 10)
            );
        }
    }
    let _ = writeln!(o, "\n  Detailed Percentile spectrum:");
    let _ = writeln!(
        o,
        "{:>12} {:>12} {:>12} {:>12}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    // Nanoseconds shown in milliseconds, as wrk2 shows microseconds / 1000.
    for (v, q, n) in lat.spectrum(5) {
        let inv = 1.0 / (1.0 - q);
        let _ = writeln!(o, "{:12.3} {q:12.6} {n:12} {inv:12.2}", v as f64 / 1e6);
    }
    if let Some(s) = lat.summary() {
        let (buckets, sub) = lat.buckets();
        let _ = writeln!(
            o,
            "#[Mean    = {:12.3}, StdDeviation   = {:12.3}]",
            s.mean / 1e6,
            s.stdev / 1e6
        );
        let _ = writeln!(
            o,
            "#[Max     = {:12.3}, Total count    = {:12}]",
            s.max as f64 / 1e6,
            lat.count()
        );
        let _ = writeln!(o, "#[Buckets = {buckets:12}, SubBuckets     = {sub:12}]");
    }
    let _ = writeln!(
        o,
        "----------------------------------------------------------"
    );
}

/// ringlab's own lines: where wrk parsers do not look (each starts
/// `  ringlab:`, none says "Latency" or "Requests/sec").
pub fn ringlab_block(
    r: &RunResult,
    http: Option<&HttpFigures>,
    uncorrected: &LatencyRecorder,
    distribution_shown: bool,
) -> String {
    let mut o = String::new();
    let Ok(c) = HttpConfig::from_map(&r.config) else {
        return String::new();
    };
    let mut line = format!("  ringlab: io {}", c.io.name());
    let knobs = c.ring.on();
    if !knobs.is_empty() {
        let default = if c.default_knobs.is_empty() {
            String::new()
        } else if !crate::plan::defer_pays(c.connections, c.threads) {
            format!(
                ", chosen by default; DEFER_TASKRUN only from {} connections a thread, or --single-issuer --defer-taskrun; --mode iou for the bare kernel ring",
                crate::plan::DEFER_TASKRUN_MIN_CONNECTIONS
            )
        } else {
            ", chosen by default; --mode iou for the bare kernel ring".to_string()
        };
        let _ = write!(line, " ({}{default})", knobs.join("+"));
    }
    if c.pipeline > 1 {
        let _ = write!(line, ", pipeline {}", c.pipeline);
    }
    if let Some(rate) = c.rate {
        let _ = write!(
            line,
            ", open loop at {rate} req/s (latency from when each request was due)"
        );
    }
    if let Some(s) = &c.script {
        let _ = write!(line, ", script {s}");
    }
    let _ = writeln!(o, "{line}");
    if c.url
        .get(..8)
        .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
    {
        let _ = writeln!(
            o,
            "  ringlab: TLS: rustls in user space, the {} driver sending and receiving the ciphertext ({}); the certificate is not verified, as wrk",
            c.io.name(),
            ktls_note()
        );
    }
    if let Some(h) = http {
        let e = &h.errors;
        if e.parse + e.closed > 0 {
            let _ = writeln!(
                o,
                "  ringlab: socket errors in detail: read {}, parse {}, closed {} (the read errors above)",
                e.read, e.parse, e.closed
            );
        }
    }
    if c.rate.is_some() && !distribution_shown {
        if let Some(u) = uncorrected.summary() {
            let _ = writeln!(
                o,
                "  ringlab: uncorrected latency (from when sent): avg {}, p99 {}, max {}",
                wrk_time_us(u.mean / 1e3),
                wrk_time_us(u.p99 as f64 / 1e3),
                wrk_time_us(u.max as f64 / 1e3)
            );
        }
    }
    if let Some(h) = http {
        for l in cost_lines(&r.total, h, r.kstat.as_ref()).lines() {
            let _ = writeln!(o, "  ringlab: {l}");
        }
    }
    // Knob evidence (--sqpoll, --fixed-files, multishot receive, ...) and
    // the diagnoses, from the explain step.
    for e in r.kstat.iter().flat_map(|k| &k.evidence) {
        let _ = writeln!(o, "  ringlab: {}", ringlab_kstat::explain::verdict_line(e));
    }
    for d in &r.diagnoses {
        let _ = writeln!(
            o,
            "  ringlab: diagnosis {}; try: {}",
            ringlab_kstat::explain::finding(d),
            d.try_next
        );
    }
    for w in &r.warnings {
        let _ = writeln!(o, "  ringlab: warning: {w}");
    }
    o
}

/// Why the run did not use kernel TLS.
fn ktls_note() -> String {
    let path = "/proc/sys/net/ipv4/tcp_available_ulp";
    match std::fs::read_to_string(path) {
        Ok(ulps) if ulps.split_whitespace().any(|u| u == "tls") => {
            "kernel TLS not used: ringlab does not hand sessions to the kernel yet".to_string()
        }
        Ok(_) => format!(
            "kernel TLS not used: this kernel offers no 'tls' upper-layer protocol ({path}; CONFIG_TLS)"
        ),
        Err(e) => format!("kernel TLS not used: {path}: {e}"),
    }
}

/// The client's cost per request: CPU time from getrusage, and system calls
/// as the kernel counted them (raw_syscalls:sys_enter of the process) where
/// that counter could be read, beside ringlab's own count.
pub fn cost_lines(t: &Figures, h: &HttpFigures, kstat: Option<&KstatReport>) -> String {
    let mut o = String::new();
    match h.cpu_ns_per_request {
        Some(ns) => {
            let _ = writeln!(
                o,
                "Client CPU/request: {:.2}us (user {}, sys {}; getrusage of the client threads)",
                ns / 1e3,
                wrk_time_us(t.cpu_user_ns as f64 / 1e3),
                wrk_time_us(t.cpu_sys_ns as f64 / 1e3)
            );
        }
        None => {
            let _ = writeln!(o, "Client CPU/request: unavailable (no response completed)");
        }
    }
    let ours = match h.syscalls_per_request {
        Some(n) => format!("{n:.2} counted by ringlab"),
        None => format!("ringlab's count unavailable: {}", h.syscalls_source),
    };
    let kernel = kstat.map(|k| {
        match (
            k.per_op.get("syscalls_per_op"),
            k.unavailable
                .iter()
                .find(|u| u.counter == "raw_syscalls:sys_enter"),
        ) {
            (Some(v), _) if k.sampled_counters.contains_key("raw_syscalls:sys_enter") => format!(
                "{v:.2} counted by the kernel (raw_syscalls:sys_enter) in {} ({} requests inside them; --evidence full counts the whole run)",
                ringlab_kstat::windows::describe(k.sampled_windows),
                k.sampled_ops
            ),
            (Some(v), _) => format!("{v:.2} counted by the kernel (raw_syscalls:sys_enter)"),
            (None, Some(u)) => format!("kernel count unavailable: {}", u.reason),
            (None, None) => "kernel count unavailable: no response completed".to_string(),
        }
    });
    match kernel {
        Some(k) => {
            let _ = writeln!(o, "Syscalls/request: {k}; {ours}");
        }
        None => {
            let _ = writeln!(o, "Syscalls/request: {ours} (--no-kstat)");
        }
    }
    if let Some(k) = kstat {
        if let Some(ipis) = k.per_op.get("ipis_per_op") {
            let _ = writeln!(
                o,
                "IPIs/request: {ipis:.3} (rescheduling + function call, all CPUs)"
            );
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrk_units() {
        assert_eq!(wrk_time_us(635.91), "635.91us");
        assert_eq!(wrk_time_us(900.0), "0.90ms");
        assert_eq!(wrk_time_us(12_920.0), "12.92ms");
        assert_eq!(wrk_time_us(2e6), "2.00s");
        assert_eq!(wrk_time_us(90e6), "1.50m");
        assert_eq!(wrk_binary(25_270_000.0), "24.10M");
        assert_eq!(wrk_binary(800.0), "800.00");
        assert_eq!(wrk_metric(56_200.0), "56.20k");
        assert_eq!(wrk_metric(12.0), "12.00");
        assert_eq!(header_duration(10.0), "10s");
        assert_eq!(header_duration(120.0), "2m");
        assert_eq!(header_duration(0.2), "200ms");
        assert_eq!(units_cell("635.91us", 8), "635.91us");
        assert_eq!(units_cell("1.20s", 9), "   1.20s ");
        assert_eq!(units_cell("12.00", 8), " 12.00  ");
        assert_eq!(pct_label(50.0, false), "     50%");
        assert_eq!(pct_label(50.0, true), " 50.000%");
        assert_eq!(pct_label(99.9, false), " 99.900%");
    }
}
