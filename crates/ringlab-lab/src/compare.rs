//! `ringlab compare A.json B.json`: two results side by side, with B/A.
//!
//! Results are read as JSON values so that any result version with the
//! common figures compares; a figure one side lacks is shown as not
//! measured, and gets no ratio.

use crate::input::{read_limited, RESULT_MAX_BYTES};
use anyhow::Result;
use ringlab_core::usage_error;
use ringlab_stats::units::{format_bandwidth, format_ns, format_rate};
use serde_json::{json, Value as Json};
use std::fmt::Write as _;
use std::path::Path;

#[derive(Clone, Copy)]
enum Kind {
    Rate,
    Bandwidth,
    Ns,
    Count,
    Plain,
}

struct Figure {
    name: String,
    kind: Kind,
    a: Option<f64>,
    b: Option<f64>,
}

impl Figure {
    fn ratio(&self) -> Option<f64> {
        match (self.a, self.b) {
            (Some(a), Some(b)) if a != 0.0 => Some(b / a),
            _ => None,
        }
    }
}

fn fmt(kind: Kind, v: Option<f64>) -> String {
    let Some(v) = v else {
        return "not measured".to_string();
    };
    match kind {
        Kind::Rate => format_rate(v),
        Kind::Bandwidth => format_bandwidth(v),
        Kind::Ns => format_ns(v),
        Kind::Count => format!("{v:.0}"),
        Kind::Plain => {
            if v.abs() >= 100.0 {
                format!("{v:.1}")
            } else {
                format!("{v:.3}")
            }
        }
    }
}

fn load(path: &Path) -> Result<Json> {
    let bytes = read_limited(path, RESULT_MAX_BYTES).map_err(|e| {
        usage_error(format!(
            "{}: {e}: name a result file (ringlab io ... --output-format json --output FILE)",
            path.display()
        ))
    })?;
    let v: Json = serde_json::from_slice(&bytes)
        .map_err(|e| usage_error(format!("{}: not a JSON result ({e})", path.display())))?;
    if !v["total"].is_object() {
        return Err(usage_error(format!(
            "{}: JSON without 'total' figures: not a ringlab result",
            path.display()
        )));
    }
    if let Some(bad) = crate::input::absurd_figure(&v) {
        return Err(usage_error(format!(
            "{}: {bad}, which no run measures (figures are from 0 to 1e18): not a ringlab result, or an edited one",
            path.display()
        )));
    }
    Ok(v)
}

fn get(v: &Json, path: &[&str]) -> Option<f64> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_f64().filter(|x| x.is_finite())
}

fn cpu_per_op_ns(v: &Json) -> Option<f64> {
    let t = &v["total"];
    let ops = t["ops"].as_f64().filter(|&o| o > 0.0)?;
    Some((t["cpu_user_ns"].as_f64()? + t["cpu_sys_ns"].as_f64()?) / ops)
}

fn figures(a: &Json, b: &Json) -> Vec<Figure> {
    let word = if a["command"] == "http" {
        "requests/s"
    } else {
        "IOPS"
    };
    let mut out = Vec::new();
    let mut add = |name: &str, kind: Kind, path: &[&str]| {
        out.push(Figure {
            name: name.to_string(),
            kind,
            a: get(a, path),
            b: get(b, path),
        })
    };
    add(
        &format!("throughput ({word})"),
        Kind::Rate,
        &["total", "iops"],
    );
    add("bandwidth", Kind::Bandwidth, &["total", "bw_bytes_per_s"]);
    add("operations", Kind::Count, &["total", "ops"]);
    add("elapsed", Kind::Ns, &["total", "elapsed_ns"]);
    for (label, key) in [
        ("latency min", "min"),
        ("latency mean", "mean"),
        ("latency p50", "p50"),
        ("latency p90", "p90"),
        ("latency p99", "p99"),
        ("latency p99.9", "p99_9"),
        ("latency p99.99", "p99_99"),
        ("latency max", "max"),
    ] {
        add(label, Kind::Ns, &["total", "lat_ns", key]);
    }
    add(
        "CPU user (job threads)",
        Kind::Ns,
        &["total", "cpu_user_ns"],
    );
    add("CPU sys (job threads)", Kind::Ns, &["total", "cpu_sys_ns"]);
    add(
        "context switches, voluntary",
        Kind::Count,
        &["total", "ctx_voluntary"],
    );
    add(
        "context switches, involuntary",
        Kind::Count,
        &["total", "ctx_involuntary"],
    );
    out.push(Figure {
        name: "CPU per operation (job threads)".to_string(),
        kind: Kind::Ns,
        a: cpu_per_op_ns(a),
        b: cpu_per_op_ns(b),
    });
    let mut names: Vec<String> = Vec::new();
    for r in [a, b] {
        if let Some(m) = r["kstat"]["per_op"].as_object() {
            for k in m.keys() {
                if !names.contains(k) {
                    names.push(k.clone());
                }
            }
        }
    }
    for n in names {
        out.push(Figure {
            name: format!("kstat {n}"),
            kind: Kind::Plain,
            a: get(a, &["kstat", "per_op", &n]),
            b: get(b, &["kstat", "per_op", &n]),
        });
    }
    // A figure neither side measured says nothing.
    out.retain(|f| f.a.is_some() || f.b.is_some());
    out
}

fn config_differences(a: &Json, b: &Json) -> Vec<(String, Json, Json)> {
    let empty = serde_json::Map::new();
    let ca = a["config"].as_object().unwrap_or(&empty);
    let cb = b["config"].as_object().unwrap_or(&empty);
    let mut keys: Vec<&String> = ca.keys().collect();
    keys.extend(cb.keys().filter(|k| !ca.contains_key(*k)));
    keys.into_iter()
        .filter(|k| ca.get(*k) != cb.get(*k))
        .map(|k| {
            (
                k.clone(),
                ca.get(k).cloned().unwrap_or(Json::Null),
                cb.get(k).cloned().unwrap_or(Json::Null),
            )
        })
        .collect()
}

fn show(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Null => "(absent)".to_string(),
        other => other.to_string(),
    }
}

/// The comparison of two result files, as text or JSON.
pub fn compare_files(a_path: &Path, b_path: &Path, as_json: bool) -> Result<String> {
    let a = load(a_path)?;
    let b = load(b_path)?;
    let figs = figures(&a, &b);
    let diffs = config_differences(&a, &b);
    if as_json {
        let doc = json!({
            "a": a_path.display().to_string(),
            "b": b_path.display().to_string(),
            "config_differences": diffs.iter().map(|(k, x, y)| json!({"key": k, "a": x, "b": y})).collect::<Vec<_>>(),
            "figures": figs.iter().map(|f| json!({"name": f.name, "a": f.a, "b": f.b, "ratio_b_over_a": f.ratio()})).collect::<Vec<_>>(),
        });
        return Ok(serde_json::to_string_pretty(&doc)? + "\n");
    }
    let mut out = String::new();
    for (tag, path, r) in [("A", a_path, &a), ("B", b_path, &b)] {
        let _ = writeln!(
            out,
            "{tag}: {} (ringlab {}, {})",
            path.display(),
            r["command"].as_str().unwrap_or("?"),
            r["started_at"].as_str().unwrap_or("time unknown")
        );
    }
    if a["command"] != b["command"] {
        let _ = writeln!(
            out,
            "warning: the results are of different commands; their figures do not mean the same"
        );
    }
    if diffs.is_empty() {
        let _ = writeln!(out, "config: identical");
    } else {
        let list: Vec<String> = diffs
            .iter()
            .map(|(k, x, y)| format!("{k} {} -> {}", show(x), show(y)))
            .collect();
        let _ = writeln!(out, "config differs: {}", list.join(", "));
    }
    let w = figs.iter().map(|f| f.name.len()).max().unwrap_or(10).max(6);
    let _ = writeln!(
        out,
        "\n{:<w$}  {:>14}  {:>14}  {:>8}",
        "figure", "A", "B", "B/A"
    );
    for f in &figs {
        let ratio = match f.ratio() {
            Some(r) => format!("{r:.3}"),
            None => "n/a".to_string(),
        };
        let _ = writeln!(
            out,
            "{:<w$}  {:>14}  {:>14}  {:>8}",
            f.name,
            fmt(f.kind, f.a),
            fmt(f.kind, f.b),
            ratio
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(iops: f64, p99: u64, kstat: Option<Json>) -> Json {
        let mut v = json!({
            "command": "io",
            "config": {"engine": "sync", "iodepth": 1},
            "total": {"iops": iops, "ops": 1000, "cpu_user_ns": 1000, "cpu_sys_ns": 1000,
                      "lat_ns": {"p50": 10, "p99": p99}},
        });
        if let Some(k) = kstat {
            v["kstat"] = k;
        }
        v
    }

    #[test]
    fn ratios_are_b_over_a_and_missing_figures_have_none() {
        let a = result(100.0, 200, None);
        let mut b = result(
            300.0,
            100,
            Some(json!({"per_op": {"syscalls_per_op": 0.5}})),
        );
        b["config"]["engine"] = json!("uring");
        let figs = figures(&a, &b);
        let t = figs
            .iter()
            .find(|f| f.name.starts_with("throughput"))
            .unwrap();
        assert_eq!(t.ratio(), Some(3.0));
        let p99 = figs.iter().find(|f| f.name == "latency p99").unwrap();
        assert_eq!(p99.ratio(), Some(0.5));
        let k = figs
            .iter()
            .find(|f| f.name == "kstat syscalls_per_op")
            .unwrap();
        assert_eq!((k.a, k.b, k.ratio()), (None, Some(0.5), None));
        assert!(
            !figs.iter().any(|f| f.name == "bandwidth"),
            "measured by neither"
        );
        let d = config_differences(&a, &b);
        assert_eq!(d, [("engine".to_string(), json!("sync"), json!("uring"))]);
    }

    #[test]
    fn text_output_shows_both_sides_and_the_ratio() {
        let dir = tempfile::tempdir().unwrap();
        let (pa, pb) = (dir.path().join("a.json"), dir.path().join("b.json"));
        std::fs::write(&pa, result(100.0, 200, None).to_string()).unwrap();
        std::fs::write(&pb, result(250.0, 200, None).to_string()).unwrap();
        let text = compare_files(&pa, &pb, false).unwrap();
        let line = text.lines().find(|l| l.starts_with("throughput")).unwrap();
        assert!(
            line.contains("100.0") && line.contains("250.0") && line.ends_with("2.500"),
            "{line}"
        );
        assert!(text.contains("config: identical"), "{text}");
        let j: Json = serde_json::from_str(&compare_files(&pa, &pb, true).unwrap()).unwrap();
        assert_eq!(j["figures"][0]["ratio_b_over_a"], 2.5);
    }

    #[test]
    fn a_file_that_is_no_result_is_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.json");
        std::fs::write(&p, "{\"a\": 1}").unwrap();
        let e = compare_files(&p, &p, false).unwrap_err();
        assert!(e.downcast_ref::<ringlab_core::UsageError>().is_some());
        let missing = compare_files(&dir.path().join("nope.json"), &p, false).unwrap_err();
        assert!(format!("{missing:#}").contains("nope.json"));
    }
}
