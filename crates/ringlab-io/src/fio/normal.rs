//! fio's `normal` and `terse` (version 3) output, written from a fio-json
//! document ([`super::json::render`]), so the three formats say the same
//! numbers. The layout follows fio's stat.c line for line, so the regexes
//! written for fio's output match ringlab's.

use serde_json::Value;
use std::fmt::Write;

/// fio's num2str: `num` (times `base`) in at most `maxlen` digits, with an
/// SI (`pow2` false) or IEC unit prefix and `units` after it; the carry
/// rounding included.
pub fn num2str(num: u64, maxlen: usize, base: u64, pow2: bool, units: &str) -> String {
    const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let prefix = if pow2 { IEC } else { SI };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut num = num;
    let mut post = 0usize;
    let mut base = base;
    while base > 1 {
        base /= thousand;
        post += 1;
    }
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post < SI.len() {
        if num.to_string().len() <= maxlen {
            break;
        }
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post += 1;
    }
    if post >= SI.len() {
        post = 0;
    }
    let Some(m) = modulo else {
        return format!("{num}{}{units}", prefix[post]);
    };
    let digits = num.to_string().len();
    if maxlen as i64 - digits as i64 <= 1 {
        if carry {
            num += 1;
        }
        return format!("{num}{}{units}", prefix[post]);
    }
    let decimals = maxlen - digits - 1;
    let frac = format!("{:.*}", decimals, m as f64 / thousand as f64);
    if frac.starts_with('1') {
        num += 1;
    }
    let after = frac.get(2..).unwrap_or("");
    format!("{num}.{after}{}{units}", prefix[post])
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .or_else(|| v.as_f64().map(|f| f.max(0.0) as u64))
        .unwrap_or(0)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

/// fio's display_lat: nsec, or usec/msec when the figures are large.
fn display_lat(out: &mut String, name: &str, l: &Value) {
    if u(&l["N"]) == 0 {
        return;
    }
    let (mut min, mut max, mut mean, mut dev) =
        (u(&l["min"]), u(&l["max"]), f(&l["mean"]), f(&l["stddev"]));
    let mut base = "(nsec)";
    if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        min /= 1_000_000;
        max /= 1_000_000;
        mean /= 1e6;
        dev /= 1e6;
        base = "(msec)";
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        min /= 1000;
        max /= 1000;
        mean /= 1e3;
        dev /= 1e3;
        base = "(usec)";
    }
    let _ = writeln!(
        out,
        "    {name} {base}: min={}, max={}, avg={mean:5.02}, stdev={dev:5.02}",
        num2str(min, 6, 1, false, ""),
        num2str(max, 6, 1, false, "")
    );
}

/// The percentile list of a latency (sorted), as (percent, nanoseconds).
fn percentiles(l: &Value) -> Vec<(f64, u64)> {
    let mut v: Vec<(f64, u64)> = l["percentile"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.parse::<f64>().ok()?, u(v))))
                .collect()
        })
        .unwrap_or_default();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// fio's show_clat_percentiles (precision 2).
fn show_percentiles(out: &mut String, pre: &str, l: &Value) {
    let list = percentiles(l);
    if list.is_empty() {
        return;
    }
    let minv = list.iter().map(|p| p.1).min().unwrap_or(0);
    let maxv = list.iter().map(|p| p.1).max().unwrap_or(0);
    let (scale, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1, 1000, "usec")
    } else {
        (0, 1, "nsec")
    };
    let _ = write!(out, "    {pre} percentiles ({unit}):\n     |");
    let digits = |v: u64| {
        if v == 0 {
            1
        } else {
            (v as f64).log10() as usize + 1
        }
    };
    let width = digits(maxv / divisor).max(5);
    let precision = 2;
    let per_line = (80 - 7) / (precision + 10 + width);
    for (j, (p, v)) in list.iter().enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let mut v = *v;
        for _ in 0..scale {
            v = v.div_ceil(1000);
        }
        let last = j == list.len() - 1;
        let _ = write!(
            out,
            " {p:5.2}th=[{v:>width$}]{}",
            if last { '\n' } else { ',' }
        );
        if last {
            break;
        }
        if j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// One direction of a job (fio's show_ddir_status).
fn ddir_status(out: &mut String, name: &str, d: &Value, lat_percentiles: bool) {
    let runt = u(&d["runtime"]).max(1);
    let bytes = u(&d["io_bytes"]);
    let bw = 1000 * bytes / runt;
    let iops = 1000 * u(&d["total_ios"]) / runt;
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={} ({})({}/{runt}msec)",
        num2str(iops, 4, 1, false, ""),
        num2str(bw, 4, 1, true, "B/s"),
        num2str(bw, 4, 1, false, "B/s"),
        num2str(bytes, 4, 1, true, "B"),
    );
    display_lat(out, "slat", &d["slat_ns"]);
    display_lat(out, "clat", &d["clat_ns"]);
    display_lat(out, " lat", &d["lat_ns"]);
    if lat_percentiles {
        show_percentiles(out, "lat", &d["lat_ns"]);
    } else {
        show_percentiles(out, "clat", &d["clat_ns"]);
    }
    if u(&d["bw_samples"]) > 0 {
        let (mut min, mut max, mut mean, mut dev) = (
            u(&d["bw_min"]),
            u(&d["bw_max"]),
            f(&d["bw_mean"]),
            f(&d["bw_dev"]),
        );
        let mut unit = "KiB";
        if mean > 1024.0 * 1024.0 {
            min /= 1024;
            max /= 1024;
            mean /= 1024.0;
            dev /= 1024.0;
            unit = "MiB";
        }
        let _ = writeln!(
            out,
            "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={:3.2}%, avg={mean:5.02}, stdev={dev:5.02}, samples={}",
            f(&d["bw_agg"]).min(100.0),
            u(&d["bw_samples"])
        );
    }
    if u(&d["iops_samples"]) > 0 {
        let _ = writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.02}, stdev={:5.02}, samples={}",
            u(&d["iops_min"]),
            u(&d["iops_max"]),
            f(&d["iops_mean"]),
            f(&d["iops_stddev"]),
            u(&d["iops_samples"])
        );
    }
}

const LAT_RANGES: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];

fn show_lat(out: &mut String, m: &Value, n: usize, unit: &str) {
    let mut line = 0;
    let mut shown = false;
    for r in &LAT_RANGES[..n] {
        let v = f(&m[*r]);
        if v <= 0.0 {
            continue;
        }
        if line == 0 {
            if shown {
                out.push('\n');
            }
            let _ = write!(out, "  lat ({unit})   : ");
        } else {
            out.push_str(", ");
        }
        shown = true;
        let _ = write!(out, "{r}={v:3.2}%");
        line = (line + 1) % 5;
    }
    if shown {
        out.push('\n');
    }
}

/// fio's "IO depths" lines, from the entry's `iodepth_level`,
/// `iodepth_submit` and `iodepth_complete` (absent in a result from before
/// they were counted: then said so).
fn depth_lines(out: &mut String, job: &Value) {
    let line = |key: &str, names: [&str; 7]| -> Option<String> {
        let m = job[key].as_object()?;
        let parts: Vec<String> = names
            .iter()
            .map(|n| Some(format!("{n}={:.1}%", m.get(*n)?.as_f64()?)))
            .collect::<Option<_>>()?;
        Some(parts.join(", "))
    };
    let batch = ["0", "4", "8", "16", "32", "64", ">=64"];
    match (
        line("iodepth_level", ["1", "2", "4", "8", "16", "32", ">=64"]),
        line("iodepth_submit", batch),
        line("iodepth_complete", batch),
    ) {
        (Some(d), Some(s), Some(c)) => {
            let _ = writeln!(out, "  IO depths    : {d}");
            let _ = writeln!(out, "     submit    : {s}");
            let _ = writeln!(out, "     complete  : {c}");
        }
        _ => out.push_str(
            "  IO depths    : unavailable (a result from before ringlab counted the queue depth at each submission)\n",
        ),
    }
}

/// When a job's entry was written, as fio's ctime line.
fn ctime(doc: &Value) -> String {
    let secs = u(&doc["timestamp"]) as i64;
    let t: libc::time_t = secs as libc::time_t;
    let mut buf = [0 as libc::c_char; 64];
    // SAFETY: ctime_r writes at most 26 bytes into a 64-byte buffer and
    // reads a valid time_t.
    let p = unsafe { libc::ctime_r(&t, buf.as_mut_ptr()) };
    if p.is_null() {
        return "\n".to_string();
    }
    // SAFETY: ctime_r NUL-terminates what it wrote.
    unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// fio's normal output of a whole run: each job, each group's run status,
/// the disk stats.
pub fn normal(doc: &Value) -> String {
    let mut out = String::new();
    let when = ctime(doc);
    let jobs = doc["jobs"].as_array().cloned().unwrap_or_default();
    for j in &jobs {
        // fio skips a job that moved no byte and issued no I/O (a failed
        // I/O was issued: its job is shown).
        let total: u64 = ["read", "write", "trim", "mixed"]
            .iter()
            .map(|d| u(&j[*d]["io_bytes"]) + u(&j[*d]["total_ios"]))
            .sum();
        // fio shows a job that moved bytes or issued I/Os (cpuio's burns
        // are I/Os of 0 bytes).
        let ios: u64 = ["read", "write", "trim", "mixed"]
            .iter()
            .map(|d| u(&j[*d]["total_ios"]))
            .sum();
        if total == 0 && ios == 0 {
            continue;
        }
        let members = j["ringlab"]["threads"].as_u64().unwrap_or(1);
        // fio's header: with an error, its text after the number.
        let err = match j["ringlab"]["verror"].as_str() {
            Some(v) if u(&j["error"]) != 0 => format!("{:2} ({v})", u(&j["error"])),
            _ => format!("{:2}", u(&j["error"])),
        };
        let _ = write!(
            out,
            "{}: (groupid={}, jobs={members}): err={err}: pid={}: {when}",
            j["jobname"].as_str().unwrap_or(""),
            u(&j["groupid"]),
            std::process::id(),
        );
        if let Some(d) = j["desc"].as_str().filter(|d| !d.is_empty()) {
            let _ = writeln!(out, "  Description  : [{d}]");
        }
        let lat_pct = j["ringlab"]["lat_percentiles"].as_bool() == Some(true);
        // unified_rw_reporting: `mixed` alone, or after the others.
        for key in ["read", "write", "trim", "mixed"] {
            if u(&j[key]["io_bytes"]) > 0 {
                ddir_status(&mut out, key, &j[key], lat_pct);
            }
        }
        show_lat(&mut out, &j["latency_ns"], 10, "nsec");
        show_lat(&mut out, &j["latency_us"], 10, "usec");
        show_lat(&mut out, &j["latency_ms"], 12, "msec");
        let _ = writeln!(
            out,
            "  cpu          : usr={:3.2}%, sys={:3.2}%, ctx={}, majf={}, minf={}",
            f(&j["usr_cpu"]),
            f(&j["sys_cpu"]),
            u(&j["ctx"]),
            u(&j["majf"]),
            u(&j["minf"])
        );
        depth_lines(&mut out, j);
        let _ = writeln!(
            out,
            "     issued rwts: total={},{},{},0 short={},{},{},0 dropped={},{},{},0",
            // unified_rw_reporting=mixed: fio counts all in the first.
            u(&j["read"]["total_ios"])
                + if j.get("read").is_none() {
                    u(&j["mixed"]["total_ios"])
                } else {
                    0
                },
            u(&j["write"]["total_ios"]),
            u(&j["trim"]["total_ios"]),
            u(&j["read"]["short_ios"]),
            u(&j["write"]["short_ios"]),
            u(&j["trim"]["short_ios"]),
            u(&j["read"]["drop_ios"]),
            u(&j["write"]["drop_ios"]),
            u(&j["trim"]["drop_ios"]),
        );
        if j.get("total_err").is_some() {
            // fio's continue_on_error: the errors counted.
            let first = u(&j["first_error"]);
            let _ = writeln!(
                out,
                "     errors    : total={}, first_error={first}/<{}>",
                u(&j["total_err"]),
                if first == 0 {
                    "Success".to_string()
                } else {
                    crate::job_error::strerror(first as i32)
                }
            );
        }
        let _ = writeln!(
            out,
            "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
            u(&j["latency_target"]),
            u(&j["latency_window"]),
            j["latency_percentile"].as_f64().unwrap_or(100.0),
            j["latency_depth"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| u(&j["latency_depth"]).max(1).to_string())
        );
        if j.get("steadystate").is_some() {
            steadystate_line(&mut out, &j["steadystate"]);
        }
    }
    group_stats(&mut out, &jobs);
    if let Some(disks) = doc["disk_util"].as_array().filter(|d| !d.is_empty()) {
        out.push_str("\nDisk stats (read/write):\n");
        for d in disks {
            let _ = writeln!(
                out,
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%",
                d["name"].as_str().unwrap_or("?"),
                u(&d["read_ios"]),
                u(&d["write_ios"]),
                u(&d["read_merges"]),
                u(&d["write_merges"]),
                u(&d["read_ticks"]),
                u(&d["write_ticks"]),
                u(&d["in_queue"]),
                f(&d["util"])
            );
        }
    }
    out
}

/// fio's show_ss_normal: the steady-state line of a job.
fn steadystate_line(out: &mut String, s: &Value) {
    let ss = s["ss"].as_str().unwrap_or("");
    let bw_kib = u(&s["data"]["bw_mean"]) / 1024;
    let crit = s["criterion"].as_str().unwrap_or("");
    let pct = crit.ends_with('%');
    let value: f64 = crit.trim_end_matches('%').parse().unwrap_or(f64::NAN);
    let _ = writeln!(
        out,
        "  steadystate  : attained={}, bw={} ({}), iops={}, {}{}={:.3}{}",
        if u(&s["attained"]) > 0 { "yes" } else { "no" },
        num2str(bw_kib, 4, 1024, true, "B/s"),
        num2str(bw_kib, 4, 1024, false, "B/s"),
        num2str(u(&s["data"]["iops_mean"]), 4, 1, false, ""),
        if ss.starts_with("iops") { "iops" } else { "bw" },
        if ss.contains("_slope") {
            " slope"
        } else {
            " mean dev"
        },
        value,
        if pct { "%" } else { "" }
    );
}

/// fio's show_group_stats for every group.
fn group_stats(out: &mut String, jobs: &[Value]) {
    let mut groups: Vec<u64> = jobs.iter().map(|j| u(&j["groupid"])).collect();
    groups.sort_unstable();
    groups.dedup();
    for g in groups {
        let _ = write!(out, "\nRun status group {g} (all jobs):\n");
        let members: Vec<&Value> = jobs.iter().filter(|j| u(&j["groupid"]) == g).collect();
        for (key, label) in [
            ("read", "   READ"),
            ("write", "  WRITE"),
            ("trim", "   TRIM"),
            ("mixed", "  MIXED"),
        ] {
            let ran: Vec<&Value> = members
                .iter()
                .map(|j| &j[key])
                .filter(|d| u(&d["io_bytes"]) > 0)
                .collect();
            if ran.is_empty() {
                continue;
            }
            let bytes: u64 = ran.iter().map(|d| u(&d["io_bytes"])).sum();
            let min_run = ran
                .iter()
                .map(|d| u(&d["runtime"]).max(1))
                .min()
                .unwrap_or(1);
            let max_run = ran
                .iter()
                .map(|d| u(&d["runtime"]))
                .max()
                .unwrap_or(1)
                .max(1);
            let bws: Vec<u64> = ran
                .iter()
                .map(|d| 1000 * u(&d["io_bytes"]) / u(&d["runtime"]).max(1))
                .collect();
            let agg = bytes * 1000 / max_run;
            let (lo, hi) = (
                bws.iter().copied().min().unwrap_or(0),
                bws.iter().copied().max().unwrap_or(0),
            );
            let n = |v: u64, p2: bool, unit: &str| num2str(v, 4, 1, p2, unit);
            let _ = writeln!(
                out,
                "{}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={min_run}-{max_run}msec",
                label,
                n(agg, true, "B/s"),
                n(agg, false, "B/s"),
                n(lo, true, "B/s"),
                n(hi, true, "B/s"),
                n(lo, false, "B/s"),
                n(hi, false, "B/s"),
                n(bytes, true, "B"),
                n(bytes, false, "B"),
            );
        }
    }
}

/// One direction of a terse line (fio's show_ddir_status_terse, v3).
fn ddir_terse(out: &mut String, d: &Value, lat_percentiles: bool, default_list: &[f64]) {
    let runt = u(&d["runtime"]);
    let bytes = u(&d["io_bytes"]);
    let bw = (1000 * bytes).checked_div(runt).map_or(0, |b| b / 1024);
    let iops = (1000 * u(&d["total_ios"])).checked_div(runt).unwrap_or(0);
    let _ = write!(out, ";{};{bw};{iops};{runt}", bytes >> 10);
    let lat = |out: &mut String, l: &Value| {
        if u(&l["N"]) > 0 {
            let _ = write!(
                out,
                ";{};{};{:.6};{:.6}",
                u(&l["min"]) / 1000,
                u(&l["max"]) / 1000,
                f(&l["mean"]) / 1000.0,
                f(&l["stddev"]) / 1000.0
            );
        } else {
            out.push_str(";0;0;0.000000;0.000000");
        }
    };
    lat(out, &d["slat_ns"]);
    lat(out, &d["clat_ns"]);
    let mut list = if lat_percentiles {
        percentiles(&d["lat_ns"])
    } else {
        percentiles(&d["clat_ns"])
    };
    if list.is_empty() {
        // fio lists its percentiles with zeros for a direction not done.
        list = default_list.iter().map(|p| (*p, 0)).collect();
    }
    for i in 0..20 {
        match list.get(i) {
            Some((p, v)) => {
                let _ = write!(out, ";{p:.6}%={}", v / 1000);
            }
            None => out.push_str(";0%=0"),
        }
    }
    lat(out, &d["lat_ns"]);
    if u(&d["bw_samples"]) > 0 {
        let _ = write!(
            out,
            ";{};{};{:.6}%;{:.6};{:.6}",
            u(&d["bw_min"]),
            u(&d["bw_max"]),
            f(&d["bw_agg"]).min(100.0),
            f(&d["bw_mean"]),
            f(&d["bw_dev"])
        );
    } else {
        out.push_str(";0;0;0.000000%;0.000000;0.000000");
    }
}

/// fio's terse (`--minimal`) output, version 3: one line per job.
pub fn terse(doc: &Value) -> String {
    let mut out = String::new();
    let version = doc["fio version"].as_str().unwrap_or("fio");
    let disks = doc["disk_util"].as_array().cloned().unwrap_or_default();
    for j in doc["jobs"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let _ = write!(
            out,
            "3;{version};{};{};{}",
            j["jobname"].as_str().unwrap_or(""),
            u(&j["groupid"]),
            u(&j["error"])
        );
        let lat_pct = j["ringlab"]["lat_percentiles"].as_bool() == Some(true);
        // unified_rw_reporting=mixed: fio's read fields hold the mixed
        // direction and the write fields are empty.
        let (first, second) = if j.get("read").is_none() && j.get("mixed").is_some() {
            (&j["mixed"], &Value::Null)
        } else {
            (&j["read"], &j["write"])
        };
        let list: Vec<f64> = [first, second]
            .iter()
            .map(|d| percentiles(&d["clat_ns"]))
            .find(|l| !l.is_empty())
            .map(|l| l.into_iter().map(|p| p.0).collect())
            .unwrap_or_else(|| super::json::FIO_PERCENTILES.to_vec());
        ddir_terse(&mut out, first, lat_pct, &list);
        ddir_terse(&mut out, second, lat_pct, &list);
        let _ = write!(
            out,
            ";{:.6}%;{:.6}%;{};{};{}",
            f(&j["usr_cpu"]),
            f(&j["sys_cpu"]),
            u(&j["ctx"]),
            u(&j["majf"]),
            u(&j["minf"])
        );
        match j["iodepth_level"].as_object() {
            Some(m) => {
                for n in ["1", "2", "4", "8", "16", "32", ">=64"] {
                    let _ = write!(out, ";{:.1}%", m.get(n).map_or(0.0, f));
                }
            }
            // A result from before the depths were counted: fio's fields
            // stay, empty of a number.
            None => out.push_str(";;;;;;;"),
        }
        // Microseconds, with the nanosecond buckets in the first.
        let ns_total: f64 = j["latency_ns"]
            .as_object()
            .map(|m| m.values().map(f).sum())
            .unwrap_or(0.0);
        for (i, r) in LAT_RANGES[..10].iter().enumerate() {
            let mut v = f(&j["latency_us"][*r]);
            if i == 0 {
                v += ns_total;
            }
            let _ = write!(out, ";{v:3.2}%");
        }
        for r in LAT_RANGES {
            let _ = write!(out, ";{:3.2}%", f(&j["latency_ms"][r]));
        }
        for d in &disks {
            let _ = write!(
                out,
                ";{};{};{};{};{};{};{};{};{:3.2}%",
                d["name"].as_str().unwrap_or("?"),
                u(&d["read_ios"]),
                u(&d["write_ios"]),
                u(&d["read_merges"]),
                u(&d["write_merges"]),
                u(&d["read_ticks"]),
                u(&d["write_ticks"]),
                u(&d["in_queue"]),
                f(&d["util"])
            );
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num2str_is_fio_s() {
        assert_eq!(num2str(85_312, 4, 1, false, ""), "85.3k");
        assert_eq!(num2str(1_048_576, 4, 1, true, "B"), "1024KiB");
        assert_eq!(num2str(349_000_000, 4, 1, false, "B/s"), "349MB/s");
        assert_eq!(num2str(349_000_000, 4, 1, true, "B/s"), "333MiB/s");
        assert_eq!(num2str(999, 4, 1, false, ""), "999");
        assert_eq!(num2str(12_345, 6, 1, false, ""), "12345");
        assert_eq!(num2str(1_234_567, 6, 1, false, ""), "1234.6k");
        assert_eq!(num2str(6_598_471, 6, 1, false, ""), "6598.5k");
    }
}
