//! The text report of `ringlab http`, in wrk's layout, then the client's
//! own cost per request, which wrk never shows.

use crate::config::HttpConfig;
use ringlab_stats::units::format_bytes;
use ringlab_stats::{Figures, HttpFigures, KstatReport, LatencyRecorder, RunResult};
use std::fmt::Write;

/// wrk's time format: 635.91us, 12.92ms, 1.20s.
fn fmt_time(ns: f64) -> String {
    if ns < 1e6 {
        format!("{:.2}us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

/// wrk's count format: 56.20k, 1.23M.
fn fmt_count(n: f64) -> String {
    if n >= 1e6 {
        format!("{:.2}M", n / 1e6)
    } else if n >= 1e3 {
        format!("{:.2}k", n / 1e3)
    } else {
        format!("{n:.2}")
    }
}

/// Renders `r`; `lat` and `uncorrected` are the merged recorders (for the
/// percentiles and the "+/- Stdev" column the JSON summary does not hold).
pub fn render(r: &RunResult, lat: &LatencyRecorder, uncorrected: &LatencyRecorder) -> String {
    let mut o = String::new();
    let t = &r.total;
    let cfg = HttpConfig::from_map(&r.config);
    match &cfg {
        Ok(c) => {
            let _ = writeln!(
                o,
                "Running {} test @ {}",
                fmt_time(c.duration * 1e9).replace(".00", ""),
                c.url
            );
            let mut line = format!(
                "  {} threads and {} connections, io {}",
                c.threads,
                c.connections,
                c.io.name()
            );
            let knobs = c.ring.on();
            if !knobs.is_empty() {
                let default = if c.default_knobs.is_empty() {
                    ""
                } else {
                    ", default ring"
                };
                let _ = write!(line, " ({}{default})", knobs.join("+"));
            }
            if c.pipeline > 1 {
                let _ = write!(line, ", pipeline {}", c.pipeline);
            }
            if let Some(rate) = c.rate {
                let _ = write!(line, ", rate {rate} req/s (open loop)");
            }
            let _ = writeln!(o, "{line}");
        }
        Err(e) => {
            let _ = writeln!(o, "ringlab http: (config unreadable: {e})");
        }
    }
    let _ = writeln!(o, "  Thread Stats   Avg      Stdev     Max   +/- Stdev");
    match &t.lat_ns {
        Some(l) => {
            let within = lat
                .pct_between(l.mean - l.stdev, l.mean + l.stdev)
                .unwrap_or(0.0);
            let _ = writeln!(
                o,
                "    Latency {:>9} {:>9} {:>9} {:>8.2}%",
                fmt_time(l.mean),
                fmt_time(l.stdev),
                fmt_time(l.max as f64),
                within
            );
        }
        None => {
            let _ = writeln!(o, "    Latency   (no response completed)");
        }
    }
    let http = r.http.as_ref();
    if let Some(rs) = http.and_then(|h| h.thread_req_per_s.as_ref()) {
        let _ = writeln!(
            o,
            "    Req/Sec {:>9} {:>9} {:>9} {:>8.2}%",
            fmt_count(rs.mean),
            fmt_count(rs.stdev),
            fmt_count(rs.max),
            rs.within_stdev_pct
        );
    }
    let open_loop = cfg.as_ref().is_ok_and(|c| c.rate.is_some());
    if cfg.as_ref().is_ok_and(|c| c.latency) && t.lat_ns.is_some() {
        let heading = if !open_loop {
            "  Latency Distribution"
        } else {
            "  Latency Distribution (from when each request was due)"
        };
        percentiles(&mut o, heading, lat);
        if open_loop {
            percentiles(
                &mut o,
                "  Uncorrected Latency (from when each request was sent)",
                uncorrected,
            );
        }
    } else if let Some(u) = http.and_then(|h| h.lat_ns_uncorrected.as_ref()) {
        let _ = writeln!(
            o,
            "  Uncorrected latency (from when sent): avg {}, p99 {}, max {}",
            fmt_time(u.mean),
            fmt_time(u.p99 as f64),
            fmt_time(u.max as f64)
        );
    }
    let _ = writeln!(
        o,
        "  {} requests in {}, {} read",
        t.ops,
        fmt_time(t.elapsed_ns as f64),
        format_bytes(t.bytes)
    );
    if let Some(h) = http {
        let e = &h.errors;
        if e.total() > 0 {
            let _ = writeln!(
                o,
                "  Socket errors: connect {}, read {}, write {}, timeout {}, parse {}, closed {}",
                e.connect, e.read, e.write, e.timeout, e.parse, e.closed
            );
        }
        if h.non_2xx_3xx > 0 {
            let _ = writeln!(o, "  Non-2xx or 3xx responses: {}", h.non_2xx_3xx);
        }
    }
    let _ = writeln!(o, "Requests/sec: {:>10.2}", t.iops);
    let _ = writeln!(
        o,
        "Transfer/sec: {:>10}",
        format_bytes(t.bw_bytes_per_s as u64)
    );
    if let Some(h) = http {
        o.push_str(&cost_lines(t, h, r.kstat.as_ref()));
    }
    for w in &r.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    o
}

fn percentiles(o: &mut String, heading: &str, lat: &LatencyRecorder) {
    let _ = writeln!(o, "{heading}");
    for (label, q) in [
        ("50%", 0.50),
        ("75%", 0.75),
        ("90%", 0.90),
        ("99%", 0.99),
        ("99.9%", 0.999),
        ("99.99%", 0.9999),
    ] {
        if let Some(v) = lat.quantile(q) {
            let _ = writeln!(o, "  {label:>7} {:>9}", fmt_time(v as f64));
        }
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
                fmt_time(t.cpu_user_ns as f64),
                fmt_time(t.cpu_sys_ns as f64)
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
        assert_eq!(fmt_time(635_910.0), "635.91us");
        assert_eq!(fmt_time(12_920_000.0), "12.92ms");
        assert_eq!(fmt_time(2e9), "2.00s");
        assert_eq!(fmt_count(56_200.0), "56.20k");
        assert_eq!(fmt_count(12.0), "12.00");
    }
}
