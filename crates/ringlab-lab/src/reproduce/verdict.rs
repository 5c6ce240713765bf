//! Verdict rules: the measured figures of a recipe's series compared with
//! the claim's direction and size, with the recipe's stated tolerance.
//! Nothing here knows a recipe: the rule is data (`[[check]]`).

use super::recipe::{Check, Recipe, SeriesSpec};
use serde::Serialize;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Reproduced,
    NotReproduced,
    Contradicted,
    CannotRun,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::NotReproduced => "not-reproduced",
            Verdict::Contradicted => "contradicted",
            Verdict::CannotRun => "cannot-run",
        }
    }
}

/// One stored run of a recipe.
#[derive(Clone, Debug)]
pub struct Point {
    pub sweep: String,
    pub values: serde_json::Map<String, Json>,
    pub result: Json,
}

/// A figure of a result: a dotted path (`total.iops`,
/// `kstat.per_op.ipis_per_op`) or a derived one.
pub fn metric(result: &Json, path: &str) -> Option<f64> {
    if path == "kstat.per_op.helpers_cpu_us_per_op" {
        let p = &result["kstat"]["per_op"];
        return Some(p["cpu_us_with_helpers_per_op"].as_f64()? - p["cpu_us_per_op"].as_f64()?);
    }
    // Block requests the process' own threads queued per second of the
    // run (`ringlab rocksdb`: db_bench's device reads).
    if path == "kstat.block_reads_per_s" {
        let bios = result["kstat"]["counters"]["block:block_bio_queue"].as_f64()?;
        let secs = result["total"]["elapsed_ns"].as_f64()? / 1e9;
        return (secs > 0.0).then(|| bios / secs);
    }
    // Kernel helper threads by distinct thread id (a thread may be listed
    // more than once), all of them or only the SQPOLL pollers.
    let prefix = match path {
        "kstat.helper_threads_count" => Some("iou-"),
        "kstat.sqpoll_threads_count" => Some("iou-sqp"),
        _ => None,
    };
    if let Some(prefix) = prefix {
        let mut tids: Vec<i64> = result["kstat"]["helper_threads"]
            .as_array()?
            .iter()
            .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
            .filter_map(|t| t["tid"].as_i64())
            .collect();
        tids.sort_unstable();
        tids.dedup();
        return Some(tids.len() as f64);
    }
    let mut v = result;
    for part in path.split('.') {
        v = v.get(part)?;
    }
    v.as_f64()
}

/// Text of an axis value as the index stores it.
pub fn value_text(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn toml_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn selects(spec: &SeriesSpec, p: &Point) -> bool {
    p.sweep == spec.sweep
        && spec.select.iter().all(|(k, want)| {
            p.values
                .get(k)
                .is_some_and(|got| value_text(got) == toml_text(want))
        })
}

/// A series' figure per x value: (x label, x value, median over repeats).
pub fn series_points(
    recipe: &Recipe,
    series: &str,
    metric_path: &str,
    points: &[Point],
) -> Vec<(String, Json, Option<f64>)> {
    let Some(spec) = recipe.series.get(series) else {
        return Vec::new();
    };
    let mut by_x: BTreeMap<String, (Json, Vec<Option<f64>>, f64)> = BTreeMap::new();
    for p in points.iter().filter(|p| selects(spec, p)) {
        let x = spec
            .x
            .as_ref()
            .or(recipe.x.as_ref())
            .and_then(|k| p.values.get(k).cloned())
            .unwrap_or(Json::Null);
        let order = x.as_f64().unwrap_or(0.0);
        let e = by_x.entry(value_text(&x)).or_insert((x, Vec::new(), order));
        e.1.push(metric(&p.result, metric_path));
    }
    let mut out: Vec<(String, Json, Option<f64>, f64)> = by_x
        .into_iter()
        .map(|(k, (x, vals, order))| {
            let v: Option<Vec<f64>> = vals.into_iter().collect();
            (k, x, v.and_then(|v| median(&v)), order)
        })
        .collect();
    out.sort_by(|a, b| a.3.total_cmp(&b.3).then(a.0.cmp(&b.0)));
    out.into_iter().map(|(k, x, v, _)| (k, x, v)).collect()
}

pub fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => None,
        n if n % 2 == 1 => Some(s[n / 2]),
        n => Some((s[n / 2 - 1] + s[n / 2]) / 2.0),
    }
}

/// The outcome of one check.
#[derive(Clone, Debug, Serialize)]
pub struct CheckOutcome {
    pub what: String,
    pub paper: String,
    pub metric: String,
    pub expect: String,
    pub size: Json,
    pub tolerance: f64,
    /// Per x: a, b and a/b.
    pub points: Vec<Json>,
    /// The reduced ratio (pairs) or value (bounds); null when undecided.
    pub measured: Option<f64>,
    /// Reduced a alone (for the headline figure).
    #[serde(skip)]
    pub a_reduced: Option<f64>,
    pub verdict: Verdict,
    pub reason: String,
}

/// What a bound named by word stands for on this machine.
pub struct Limits {
    pub tick_ns: Option<f64>,
    /// CONFIG_HZ, named in the reason of a tick-bounded check.
    pub hz: Option<u32>,
}

pub fn evaluate(recipe: &Recipe, check: &Check, points: &[Point], limits: &Limits) -> CheckOutcome {
    let mut out = CheckOutcome {
        what: check.what.clone(),
        paper: check.paper.clone(),
        metric: check.metric.clone(),
        expect: check.expect.clone(),
        size: toml_json(&check.size),
        tolerance: check.tolerance,
        points: Vec::new(),
        measured: None,
        a_reduced: None,
        verdict: Verdict::CannotRun,
        reason: String::new(),
    };
    let pick = |series: &str, only: &Option<toml::Value>| {
        series_points(recipe, series, &check.metric, points)
            .into_iter()
            .filter(|(k, _, _)| only.as_ref().is_none_or(|x| *k == toml_text(x)))
            .filter(|(k, _, _)| {
                only.is_some()
                    || check
                        .at
                        .as_ref()
                        .is_none_or(|at| at.iter().any(|x| toml_text(x) == *k))
            })
            .collect::<Vec<_>>()
    };
    let a = pick(&check.a, &check.a_x);
    if a.is_empty() {
        out.reason = format!("no run of series {} was stored", check.a);
        return out;
    }
    if a.iter().any(|p| p.2.is_none()) {
        out.reason = format!(
            "{} could not be read from the runs of {} (unavailable counter; see the results' kstat.unavailable)",
            check.metric, check.a
        );
        return out;
    }
    let a_vals: Vec<f64> = a.iter().filter_map(|p| p.2).collect();
    out.a_reduced = reduce_values(&a_vals, &check.reduce);
    let tol = check.tolerance;
    match &check.b {
        None => {
            let limit = match &check.size {
                toml::Value::String(s) if s == "tick_ns" => limits.tick_ns,
                v => toml_f64(v),
            };
            let Some(limit) = limit else {
                out.reason = format!("the limit {} is not known on this machine", check.size);
                return out;
            };
            let v = out.a_reduced.unwrap_or(f64::NAN);
            for p in &a {
                out.points.push(json!({"x": p.1, "a": p.2}));
            }
            out.measured = Some(v);
            out.verdict = judge_bound(&check.expect, limit, tol, v);
            let named = match (&check.size, limits.hz) {
                (toml::Value::String(_), Some(hz)) => {
                    format!(" (one timer tick at CONFIG_HZ={hz})")
                }
                _ => String::new(),
            };
            out.reason = format!(
                "{} {} of {} = {} against the limit {}{named} ({} with tolerance {:.0}%)",
                check.reduce,
                check.metric,
                check.a,
                num(v),
                num(limit),
                check.expect,
                tol * 100.0
            );
        }
        Some(b_name) => {
            let b = pick(b_name, &check.b_x);
            let pairs: Vec<(Json, f64, f64)> = if check.a_x.is_some() || check.b_x.is_some() {
                match (a.first(), b.first()) {
                    (Some(pa), Some(pb)) => match (pa.2, pb.2) {
                        (Some(x), Some(y)) => vec![(json!([pa.1, pb.1]), x, y)],
                        _ => Vec::new(),
                    },
                    _ => Vec::new(),
                }
            } else {
                a.iter()
                    .filter_map(|pa| {
                        let pb = b.iter().find(|pb| pb.0 == pa.0)?;
                        Some((pa.1.clone(), pa.2?, pb.2?))
                    })
                    .collect()
            };
            if pairs.is_empty() {
                out.reason = format!(
                    "no x value has figures of both {} and {b_name} ({} could not be read or no run was stored)",
                    check.a, check.metric
                );
                return out;
            }
            for (x, va, vb) in &pairs {
                let r = if *vb != 0.0 { Some(va / vb) } else { None };
                out.points
                    .push(json!({"x": x, "a": va, "b": vb, "ratio": r}));
            }
            let ratio = reduce_pairs(&pairs, &check.reduce, &check.expect);
            let Some(ratio) = ratio else {
                out.reason = format!(
                    "{b_name} measured 0 for {}, so a/b is not defined",
                    check.metric
                );
                return out;
            };
            let size = toml_f64(&check.size).unwrap_or(f64::NAN);
            out.measured = Some(ratio);
            out.verdict = judge_pair(&check.expect, size, tol, ratio);
            out.reason = format!(
                "{} / {} {} = {} ({} of {} x value(s)); the claim: {} {} (tolerance {:.0}%)",
                check.a,
                b_name,
                check.metric,
                num(ratio),
                if check.expect == "equal" {
                    "largest difference"
                } else {
                    check.reduce.as_str()
                },
                pairs.len(),
                check.expect,
                num(size),
                tol * 100.0
            );
        }
    }
    out
}

fn reduce_values(v: &[f64], how: &str) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    Some(match how {
        "max" | "peak" => v.iter().copied().fold(f64::MIN, f64::max),
        "min" => v.iter().copied().fold(f64::MAX, f64::min),
        _ => v.iter().sum::<f64>() / v.len() as f64,
    })
}

/// The ratio a/b over the points: geometric mean of per-point ratios, their
/// max or min, or the ratio of the peaks; for `equal`, the ratio farthest
/// from 1.
pub fn reduce_pairs(pairs: &[(Json, f64, f64)], how: &str, expect: &str) -> Option<f64> {
    if how == "peak" {
        let pa = pairs.iter().map(|p| p.1).fold(f64::MIN, f64::max);
        let pb = pairs.iter().map(|p| p.2).fold(f64::MIN, f64::max);
        return (pb > 0.0).then(|| pa / pb);
    }
    let ratios: Option<Vec<f64>> = pairs
        .iter()
        .map(|p| (p.2 != 0.0).then(|| p.1 / p.2))
        .collect();
    let ratios = ratios?;
    if expect == "equal" {
        return ratios
            .iter()
            .copied()
            .max_by(|x, y| (x - 1.0).abs().total_cmp(&(y - 1.0).abs()));
    }
    Some(match how {
        "max" => ratios.iter().copied().fold(f64::MIN, f64::max),
        "min" => ratios.iter().copied().fold(f64::MAX, f64::min),
        _ => {
            if ratios.iter().any(|r| *r <= 0.0) {
                ratios.iter().sum::<f64>() / ratios.len() as f64
            } else {
                (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp()
            }
        }
    })
}

/// a/b = `ratio` against a claim that a is `size` times b or more
/// (greater), `size` times b or less (less), or within `size` of b (equal).
/// A ratio on the claim's side within the tolerance reproduces it; one on
/// the other side of 1 by more than the tolerance contradicts it; anything
/// between is not reproduced (the effect is there but smaller, or noise).
pub fn judge_pair(expect: &str, size: f64, tol: f64, ratio: f64) -> Verdict {
    if !ratio.is_finite() || !size.is_finite() {
        return Verdict::CannotRun;
    }
    match expect {
        "greater" if ratio >= size / (1.0 + tol) => Verdict::Reproduced,
        "greater" if ratio <= 1.0 / (1.0 + tol) => Verdict::Contradicted,
        "less" if ratio <= size * (1.0 + tol) => Verdict::Reproduced,
        "less" if ratio >= 1.0 + tol => Verdict::Contradicted,
        "equal" if (ratio - 1.0).abs() <= size + tol => Verdict::Reproduced,
        "equal" => Verdict::Contradicted,
        _ => Verdict::NotReproduced,
    }
}

/// A value against a limit: met within the tolerance, or not.
pub fn judge_bound(expect: &str, limit: f64, tol: f64, v: f64) -> Verdict {
    if !v.is_finite() {
        return Verdict::CannotRun;
    }
    let met = match expect {
        "at-most" => v <= limit * (1.0 + tol),
        _ => v >= limit / (1.0 + tol),
    };
    if met {
        Verdict::Reproduced
    } else {
        Verdict::NotReproduced
    }
}

/// The recipe's verdict from its checks: any contradiction contradicts the
/// claim; any check missed leaves it not reproduced; a check that could not
/// be decided (a counter unavailable) makes it cannot-run; else reproduced.
pub fn combine(outcomes: &[CheckOutcome]) -> Verdict {
    let has = |v: Verdict| outcomes.iter().any(|o| o.verdict == v);
    if outcomes.is_empty() {
        Verdict::CannotRun
    } else if has(Verdict::Contradicted) {
        Verdict::Contradicted
    } else if has(Verdict::NotReproduced) {
        Verdict::NotReproduced
    } else if has(Verdict::CannotRun) {
        Verdict::CannotRun
    } else {
        Verdict::Reproduced
    }
}

/// A number for people: 3 significant digits.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn toml_f64(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) => Some(*f),
        _ => None,
    }
}

fn toml_json(v: &toml::Value) -> Json {
    serde_json::to_value(v).unwrap_or(Json::Null)
}

#[cfg(test)]
mod tests {
    use super::super::recipe::parse_recipe;
    use super::*;

    const RECIPE: &str = r#"
name = "t"
seed = "000"
section = "Fig. 0"
claim = "fast beats slow by 20% at every depth"
quote = "q"
x = "iodepth"
[[sweep]]
name = "s"
command = "io"
axes = { engine = ["fast", "slow"], iodepth = [1, 16] }
[series.fast]
sweep = "s"
select = { engine = "fast" }
[series.slow]
sweep = "s"
x = "iodepth"
select = { engine = "slow" }
[[check]]
what = "fast vs slow"
paper = "+20%"
metric = "total.iops"
a = "fast"
b = "slow"
expect = "greater"
size = 1.2
tolerance = 0.05
[[check]]
what = "fast's latency bounded by one tick"
paper = "bounded by the 4 ms tick"
metric = "total.lat_ns.mean"
a = "fast"
reduce = "max"
expect = "at-most"
size = "tick_ns"
tolerance = 0.1
"#;

    /// Two repeats per point: the median decides.
    fn points(fast: [f64; 2], slow: [f64; 2], lat: f64) -> Vec<Point> {
        let mut v = Vec::new();
        for (engine, iops) in [("fast", fast), ("slow", slow)] {
            for (depth, x) in [(1, iops[0]), (16, iops[1])] {
                for jitter in [0.99, 1.01] {
                    let mut values = serde_json::Map::new();
                    values.insert("engine".into(), json!(engine));
                    values.insert("iodepth".into(), json!(depth));
                    v.push(Point {
                        sweep: "s".into(),
                        values,
                        result: json!({"total": {"iops": x * jitter, "lat_ns": {"mean": lat}}}),
                    });
                }
            }
        }
        v
    }

    fn run(pts: &[Point], tick: Option<f64>) -> Vec<CheckOutcome> {
        let r = parse_recipe(RECIPE, "t").unwrap();
        let limits = Limits {
            tick_ns: tick,
            hz: Some(250),
        };
        r.check
            .iter()
            .map(|c| evaluate(&r, c, pts, &limits))
            .collect()
    }

    #[test]
    fn claim_met_is_reproduced() {
        let o = run(&points([125.0, 250.0], [100.0, 200.0], 3e6), Some(4e6));
        assert_eq!(o[0].verdict, Verdict::Reproduced, "{}", o[0].reason);
        assert!((o[0].measured.unwrap() - 1.25).abs() < 1e-9);
        assert_eq!(o[1].verdict, Verdict::Reproduced, "{}", o[1].reason);
        assert_eq!(combine(&o), Verdict::Reproduced);
    }

    #[test]
    fn claim_missed_is_not_reproduced() {
        // +5%: the right direction, a quarter of the claimed size.
        let o = run(&points([105.0, 210.0], [100.0, 200.0], 9e6), Some(4e6));
        assert_eq!(o[0].verdict, Verdict::NotReproduced, "{}", o[0].reason);
        assert_eq!(o[1].verdict, Verdict::NotReproduced, "{}", o[1].reason);
        assert_eq!(combine(&o), Verdict::NotReproduced);
    }

    #[test]
    fn claim_reversed_is_contradicted() {
        let o = run(&points([80.0, 150.0], [100.0, 200.0], 1e6), Some(4e6));
        assert_eq!(o[0].verdict, Verdict::Contradicted, "{}", o[0].reason);
        assert_eq!(combine(&o), Verdict::Contradicted);
    }

    #[test]
    fn missing_counter_or_limit_cannot_decide() {
        let o = run(&points([125.0, 250.0], [100.0, 200.0], 3e6), None);
        assert_eq!(o[1].verdict, Verdict::CannotRun);
        assert!(o[1].reason.contains("not known"), "{}", o[1].reason);
        let o = run(&points([125.0, 250.0], [100.0, 200.0], 3e6), Some(4e6));
        assert!(o[1].reason.contains("CONFIG_HZ=250"), "{}", o[1].reason);
        let mut pts = points([125.0, 250.0], [100.0, 200.0], 3e6);
        pts.retain(|p| p.values["engine"] == "slow");
        let o = run(&pts, Some(4e6));
        assert_eq!(o[0].verdict, Verdict::CannotRun, "{}", o[0].reason);
    }

    #[test]
    fn pair_rules_on_made_up_ratios() {
        // less: a claimed at a tenth of b or below (tolerance 50%).
        assert_eq!(judge_pair("less", 0.1, 0.5, 0.12), Verdict::Reproduced);
        assert_eq!(judge_pair("less", 0.1, 0.5, 0.6), Verdict::NotReproduced);
        assert_eq!(judge_pair("less", 0.1, 0.5, 1.8), Verdict::Contradicted);
        // equal within 10% (tolerance 5%).
        assert_eq!(judge_pair("equal", 0.1, 0.05, 1.12), Verdict::Reproduced);
        assert_eq!(judge_pair("equal", 0.1, 0.05, 0.7), Verdict::Contradicted);
        // greater by 12%, tolerance 5%: +7% is within the tolerance.
        assert_eq!(judge_pair("greater", 1.12, 0.05, 1.07), Verdict::Reproduced);
        assert_eq!(
            judge_pair("greater", 1.12, 0.05, 1.02),
            Verdict::NotReproduced
        );
        assert_eq!(
            judge_pair("greater", 1.12, 0.05, 0.9),
            Verdict::Contradicted
        );
        assert_eq!(judge_bound("at-least", 0.9, 0.1, 0.85), Verdict::Reproduced);
        assert_eq!(
            judge_bound("at-least", 0.9, 0.1, 0.2),
            Verdict::NotReproduced
        );
    }

    #[test]
    fn helper_threads_are_counted_once_per_thread_id() {
        let r = json!({"kstat": {"helper_threads": [
            {"tid": 7, "name": "iou-sqp-7"}, {"tid": 7, "name": "iou-sqp-7"},
            {"tid": 9, "name": "iou-wrk-9"}]}});
        assert_eq!(metric(&r, "kstat.helper_threads_count"), Some(2.0));
        assert_eq!(metric(&r, "kstat.sqpoll_threads_count"), Some(1.0));
    }

    #[test]
    fn peak_and_equal_reductions() {
        let pairs = vec![
            (json!(1), 10.0, 10.0),
            (json!(2), 30.0, 20.0),
            (json!(3), 12.0, 25.0),
        ];
        assert_eq!(reduce_pairs(&pairs, "peak", "greater"), Some(1.2));
        assert_eq!(reduce_pairs(&pairs, "mean", "equal"), Some(0.48));
        assert_eq!(reduce_pairs(&pairs, "max", "greater"), Some(1.5));
    }
}
