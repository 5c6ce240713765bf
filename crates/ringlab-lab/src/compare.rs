//! `ringlab compare A B`: two results side by side, with B/A.
//!
//! A and B are result files or directories of repeats (a sweep, a
//! reproduce directory, or any directory of result files). With sets, each
//! figure is each side's median with its spread, B/A with a 95% bootstrap
//! interval and a Mann-Whitney U p-value, and `~` where no significant
//! difference was found (benchstat's convention); runs are paired by their
//! configuration (a sweep's axis values). Two single files still compare,
//! with a note that one run each cannot show significance.
//!
//! Results are read as JSON values so that any result version with the
//! common figures compares; a figure one side lacks is shown as not
//! measured, and gets no ratio.

use crate::input::{read_limited, RESULT_MAX_BYTES};
use anyhow::Result;
use ringlab_core::usage_error;
use ringlab_stats::effect::{mann_whitney_p, Effect, ALPHA};
use ringlab_stats::units::{format_bandwidth, format_ns, format_rate};
use serde_json::{json, Value as Json};
use std::fmt::Write as _;
use std::path::Path;

#[derive(Clone, Copy, Debug)]
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

/// Every figure of one result: (name, kind, value).
fn figures_of(r: &Json) -> Vec<(String, Kind, Option<f64>)> {
    figures(r, r)
        .into_iter()
        .map(|f| (f.name, f.kind, f.a))
        .collect()
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

/// What one run each cannot show.
const ONE_RUN_NOTE: &str = "one run each cannot show whether a difference is real (no interval, no significance): compare two directories of repeats instead, e.g. two sweeps with repeats = 5";

/// The comparison of A and B (files or directories), as text or JSON.
pub fn compare_paths(a_path: &Path, b_path: &Path, as_json: bool) -> Result<String> {
    if a_path.is_dir() || b_path.is_dir() {
        compare_sets(a_path, b_path, as_json)
    } else {
        compare_files(a_path, b_path, as_json)
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
            "note": ONE_RUN_NOTE,
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
    let _ = writeln!(out, "\nnote: {ONE_RUN_NOTE}");
    Ok(out)
}

/// Results of one side, by configuration (the sweep directory relative to
/// the named one and the run's axis values; "" for loose files).
/// One configuration's results.
type Group = (String, Vec<Json>);

struct Set {
    groups: Vec<Group>,
    count: usize,
}

impl Set {
    fn add(&mut self, key: String, r: Json) {
        self.count += 1;
        match self.groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(r),
            None => self.groups.push((key, vec![r])),
        }
    }
}

/// Directories below the named one that are searched for results.
const SET_MAX_DEPTH: usize = 4;

fn load_set(path: &Path) -> Result<Set> {
    let mut set = Set {
        groups: Vec::new(),
        count: 0,
    };
    if path.is_dir() {
        walk(path, path, 0, &mut set)?;
    } else {
        set.add(String::new(), load(path)?);
    }
    if set.count == 0 {
        return Err(usage_error(format!(
            "{}: holds no ringlab results (JSON with 'total' figures, or a sweep's index.json): name a sweep directory or a directory of result files",
            path.display()
        )));
    }
    Ok(set)
}

fn walk(root: &Path, dir: &Path, depth: usize, set: &mut Set) -> Result<()> {
    let rel = dir
        .strip_prefix(root)
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    if dir.join("index.json").is_file() {
        let index = crate::store::read_index(dir)?;
        for e in index
            .runs
            .iter()
            .filter(|e| e.status == crate::store::Status::Done)
        {
            let Ok(r) = load(&dir.join(&e.result)) else {
                continue;
            };
            let mut parts: Vec<String> = Vec::new();
            if !rel.is_empty() {
                parts.push(rel.clone());
            }
            // Rounds of further repeats (reproduce's SWEEP.roundN) are
            // the same configuration.
            if let Some(p) = parts.first_mut() {
                if let Some(i) = p.rfind(".round") {
                    p.truncate(i);
                }
            }
            parts.extend(e.values.iter().map(|(k, v)| format!("{k}={}", show(v))));
            set.add(parts.join(" "), r);
        }
        return Ok(());
    }
    let mut entries: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| usage_error(format!("{}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if depth < SET_MAX_DEPTH {
                walk(root, &p, depth + 1, set)?;
            }
        } else if p.extension().is_some_and(|x| x == "json") {
            // Not every JSON file is a result (verdict.json, advice.json).
            if let Ok(r) = load(&p) {
                set.add(rel.clone(), r);
            }
        }
    }
    Ok(())
}

/// One side of a figure over repeats.
#[derive(serde::Serialize)]
struct Side {
    median: f64,
    min: f64,
    max: f64,
    n: usize,
    values: Vec<f64>,
}

impl Side {
    fn of(values: Vec<f64>) -> Option<Side> {
        let s = ringlab_stats::spread::Spread::of(&values)?;
        Some(Side {
            median: s.median,
            min: s.min,
            max: s.max,
            n: values.len(),
            values,
        })
    }

    /// `12.3k ±4%`: the median and the farthest repeat from it.
    fn text(&self, kind: Kind) -> String {
        let far = (self.max - self.median)
            .abs()
            .max((self.median - self.min).abs());
        if self.median == 0.0 {
            return fmt(kind, Some(self.median));
        }
        format!(
            "{} ±{:.0}%",
            fmt(kind, Some(self.median)),
            far / self.median.abs() * 100.0
        )
    }
}

/// The configurations compared: the same keys on both sides, or the one
/// configuration of each when each side has one.
fn pairs<'a>(a: &'a Set, b: &'a Set) -> Vec<(&'a Group, &'a Group)> {
    let common: Vec<_> = a
        .groups
        .iter()
        .filter_map(|ga| Some((ga, b.groups.iter().find(|gb| gb.0 == ga.0)?)))
        .collect();
    if common.is_empty() && a.groups.len() == 1 && b.groups.len() == 1 {
        return vec![(&a.groups[0], &b.groups[0])];
    }
    common
}

fn compare_sets(a_path: &Path, b_path: &Path, as_json: bool) -> Result<String> {
    let a = load_set(a_path)?;
    let b = load_set(b_path)?;
    let matched = pairs(&a, &b);
    if matched.is_empty() {
        let keys = |s: &Set| {
            s.groups
                .iter()
                .map(|g| g.0.clone())
                .collect::<Vec<_>>()
                .join("; ")
        };
        return Err(usage_error(format!(
            "{} and {} share no configuration (A has: {}; B has: {}): compare sweeps of the same axes, or two directories of one configuration each",
            a_path.display(),
            b_path.display(),
            keys(&a),
            keys(&b)
        )));
    }
    let mut out = String::new();
    let mut doc = Vec::new();
    for (tag, path, set) in [("A", a_path, &a), ("B", b_path, &b)] {
        let _ = writeln!(
            out,
            "{tag}: {} ({} result(s), {} configuration(s))",
            path.display(),
            set.count,
            set.groups.len()
        );
    }
    let mut few = usize::MAX;
    for (ga, gb) in &matched {
        let names: Vec<(String, Kind)> = {
            let mut v: Vec<(String, Kind)> = Vec::new();
            for r in ga.1.iter().chain(&gb.1) {
                for (n, k, _) in figures_of(r) {
                    if !v.iter().any(|x| x.0 == n) {
                        v.push((n, k));
                    }
                }
            }
            v
        };
        let values = |rs: &[Json], name: &str| -> Vec<f64> {
            rs.iter()
                .filter_map(|r| figures_of(r).into_iter().find(|f| f.0 == name)?.2)
                .collect()
        };
        let title = if ga.0 == gb.0 {
            if ga.0.is_empty() {
                String::new()
            } else {
                ga.0.clone()
            }
        } else {
            format!("A: {} vs B: {}", show_key(&ga.0), show_key(&gb.0))
        };
        if !title.is_empty() {
            let _ = writeln!(out, "\n[{title}]");
        }
        let w = names.iter().map(|n| n.0.len()).max().unwrap_or(10).max(6);
        let _ = writeln!(
            out,
            "\n{:<w$}  {:>18}  {:>18}  {:>26}  p",
            "figure", "A (median ±)", "B (median ±)", "B/A [95% interval]"
        );
        let mut figs = Vec::new();
        for (name, kind) in &names {
            let (va, vb) = (values(&ga.1, name), values(&gb.1, name));
            let (sa, sb) = (Side::of(va.clone()), Side::of(vb.clone()));
            let effect = Effect::of(&vb, &va);
            few = few.min(va.len().min(vb.len()));
            // A's median 0: no ratio, but the test still says whether the
            // sets differ.
            let p_value = match (&effect, va.is_empty() || vb.is_empty()) {
                (Some(e), _) => Some(e.p_value),
                (None, false) => Some(mann_whitney_p(&vb, &va)),
                (None, true) => None,
            };
            let delta = match (&effect, p_value) {
                (Some(e), _) => e.delta(),
                (None, Some(p)) if p >= ALPHA => "~".to_string(),
                (None, Some(_)) => "differs (A is 0)".to_string(),
                (None, None) => "n/a".to_string(),
            };
            let p = match p_value {
                Some(pv) => format!("p={pv:.3} n={}+{}", va.len(), vb.len()),
                None => String::new(),
            };
            let side = |s: &Option<Side>| {
                s.as_ref()
                    .map(|s| s.text(*kind))
                    .unwrap_or_else(|| "not measured".into())
            };
            let _ = writeln!(
                out,
                "{:<w$}  {:>18}  {:>18}  {:>26}  {p}",
                name,
                side(&sa),
                side(&sb),
                delta
            );
            figs.push(json!({
                "name": name,
                "a": sa,
                "b": sb,
                "ratio_b_over_a": effect.map(|e| e.ratio),
                "interval": effect.map(|e| e.interval),
                "p_value": p_value,
                "significant": p_value.map(|p| p < ALPHA),
                "differs": effect.map(|e| e.differs()),
            }));
        }
        doc.push(json!({"a_config": ga.0, "b_config": gb.0, "figures": figs}));
    }
    let note = (few < 4).then(|| {
        format!(
            "a side has only {few} repeat(s): the smallest p-value {few} against {few} can reach is above 0.05 (3 vs 3: 0.1), so a difference is shown only where every repeat of one side lies beyond every repeat of the other (p <= 0.1, a weaker level), and never with fewer than 3; repeat each setup 5 times or more"
        )
    });
    let _ = writeln!(
        out,
        "\n{}; ± is the farthest repeat from the median.",
        ringlab_stats::effect::TILDE_LEGEND
    );
    if let Some(n) = &note {
        let _ = writeln!(out, "note: {n}");
    }
    if as_json {
        let j = json!({
            "a": a_path.display().to_string(),
            "b": b_path.display().to_string(),
            "comparisons": doc,
            "note": note,
        });
        return Ok(serde_json::to_string_pretty(&j)? + "\n");
    }
    Ok(out)
}

fn show_key(k: &str) -> String {
    if k.is_empty() {
        "(one configuration)".into()
    } else {
        k.to_string()
    }
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
