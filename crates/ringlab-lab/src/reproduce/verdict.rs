//! Verdict rules: a recipe's series compared over their repeats, as a
//! ratio with its 95% bootstrap interval ([`ringlab_stats::effect`]),
//! against the claim's threshold (its size less the recipe's tolerance).
//! Reproduced or contradicted only when the interval lies wholly on one side
//! of the threshold; inconclusive when it holds it. Runs with too few
//! operations or cut short are left out and flagged; outlying repeats are
//! flagged (medians keep one from deciding). Nothing here knows a recipe:
//! the rule is data (`[[check]]`).

use super::recipe::{Check, Recipe, SeriesSpec};
use ringlab_stats::effect::{self, percent_with_interval, Effect, Interval, Side};
use serde::Serialize;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Reproduced,
    Inconclusive,
    Contradicted,
    CannotRun,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::Inconclusive => "inconclusive",
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

/// One stored repeat of a series at one x: its figure and what keeps it
/// from deciding anything (too few operations, cut short).
#[derive(Clone, Debug)]
pub struct Repeat {
    pub value: Option<f64>,
    pub problems: Vec<String>,
}

/// A series' repeats at one x value.
#[derive(Clone, Debug)]
pub struct XRepeats {
    /// The x value as the index stores it ("" without an x axis).
    pub label: String,
    pub x: Json,
    pub repeats: Vec<Repeat>,
}

impl XRepeats {
    /// Figures of the sane repeats.
    pub fn good(&self) -> Vec<f64> {
        self.repeats
            .iter()
            .filter(|r| r.problems.is_empty())
            .filter_map(|r| r.value)
            .collect()
    }

    /// The median of the sane repeats.
    pub fn median(&self) -> Option<f64> {
        effect::median(&self.good())
    }

    /// Lowest and highest sane repeat.
    pub fn range(&self) -> Option<(f64, f64)> {
        let g = self.good();
        let lo = g.iter().copied().reduce(f64::min)?;
        let hi = g.iter().copied().reduce(f64::max)?;
        Some((lo, hi))
    }

    fn unreadable(&self) -> bool {
        self.repeats.iter().any(|r| r.value.is_none())
    }
}

/// Operations a run needs to count when the recipe states no `min_ops`:
/// enough for a median and a p99 to mean something, few enough that a
/// setup the claim says collapses (SQPOLL on its own CPU) still counts.
pub const DEFAULT_MIN_OPS: f64 = 20.0;
/// Sane repeats each side needs at each point before a check decides.
pub const MIN_REPEATS_TO_DECIDE: usize = 3;

/// What disqualifies one stored run: too few operations, or much shorter
/// than the runtime asked.
pub fn run_problems(result: &Json, min_ops: f64) -> Vec<String> {
    let ops = result["total"]["ops"].as_f64();
    let elapsed = result["total"]["elapsed_ns"].as_f64().map(|n| n / 1e9);
    let asked = ["runtime", "duration"].iter().find_map(|k| {
        let v = &result["config"][*k];
        v.as_f64().or_else(|| {
            v.as_str()
                .and_then(|s| ringlab_stats::units::parse_duration(s).ok())
                .map(|d| d.as_secs_f64())
        })
    });
    effect::run_problems(ops, min_ops, elapsed, asked)
}

/// A series' repeats per x value, ordered by x.
pub fn series_repeats(
    recipe: &Recipe,
    series: &str,
    metric_path: &str,
    points: &[Point],
) -> Vec<XRepeats> {
    let Some(spec) = recipe.series.get(series) else {
        return Vec::new();
    };
    let min_ops = recipe.min_ops.unwrap_or(DEFAULT_MIN_OPS);
    let mut by_x: BTreeMap<String, (Json, Vec<Repeat>, f64)> = BTreeMap::new();
    for p in points.iter().filter(|p| selects(spec, p)) {
        let x = spec
            .x
            .as_ref()
            .or(recipe.x.as_ref())
            .and_then(|k| p.values.get(k).cloned())
            .unwrap_or(Json::Null);
        let order = x.as_f64().unwrap_or(0.0);
        let e = by_x.entry(value_text(&x)).or_insert((x, Vec::new(), order));
        e.1.push(Repeat {
            value: metric(&p.result, metric_path),
            problems: run_problems(&p.result, min_ops),
        });
    }
    let mut out: Vec<(XRepeats, f64)> = by_x
        .into_iter()
        .map(|(label, (x, repeats, order))| (XRepeats { label, x, repeats }, order))
        .collect();
    out.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.label.cmp(&b.0.label)));
    out.into_iter().map(|(r, _)| r).collect()
}

/// A series' figure per x value: (x label, x value, median over the sane
/// repeats).
pub fn series_points(
    recipe: &Recipe,
    series: &str,
    metric_path: &str,
    points: &[Point],
) -> Vec<(String, Json, Option<f64>)> {
    series_repeats(recipe, series, metric_path, points)
        .into_iter()
        .map(|r| {
            let m = if r.unreadable() { None } else { r.median() };
            (r.label, r.x, m)
        })
        .collect()
}

pub fn median(v: &[f64]) -> Option<f64> {
    effect::median(v)
}

/// The outcome of one check.
#[derive(Clone, Debug, Serialize)]
pub struct CheckOutcome {
    pub what: String,
    pub paper: String,
    pub metric: String,
    pub expect: String,
    pub size: Json,
    /// `equal`: a/b within 1 +- zone is "equal".
    pub zone: Option<f64>,
    pub tolerance: f64,
    /// The decision rule in words, with its threshold.
    pub rule: String,
    /// The rule's threshold, short: `a/b <= 0.150x`, `a/b >= +9.5%`,
    /// `a/b within [-15%, +15%]`, `mean <= 4000000` (the page's headline).
    pub threshold: String,
    /// `measured` with its interval for people, in the rule's form
    /// (`0.286x [0.072x, 0.673x]`, `+41% [-11%, +69%]`); null when
    /// undecided.
    pub figure: Option<String>,
    /// Per x: the repeats of a (and b), their medians, a/b with its
    /// interval and p-value.
    pub points: Vec<Json>,
    /// The reduced ratio (pairs) or value (bounds) of the medians; null
    /// when undecided.
    pub measured: Option<f64>,
    /// 95% bootstrap interval of `measured` over the repeats.
    pub interval: Option<Interval>,
    /// Mann-Whitney U p-value of a against b (pairs only).
    pub p_value: Option<f64>,
    /// Fewest sane repeats of a side at any point.
    pub repeats: usize,
    /// Runs left out (too few operations, cut short) and outlying repeats.
    pub flagged: Vec<String>,
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

/// Flags of the runs of one point of one series: those left out, and
/// outlying repeats among the rest.
fn flags_of(series: &str, p: &XRepeats, out: &mut Vec<String>) {
    let at = if p.label.is_empty() {
        String::new()
    } else {
        format!(" at {}", p.label)
    };
    for (i, r) in p.repeats.iter().enumerate() {
        if !r.problems.is_empty() {
            out.push(format!(
                "{series}{at}, repeat {}: {} (left out)",
                i + 1,
                r.problems.join("; ")
            ));
        }
    }
    let good = p.good();
    for i in effect::outliers(&good) {
        out.push(format!(
            "{series}{at}: a repeat of {} lies far from the others' median {} (outlier)",
            num(good[i]),
            p.median().map(num).unwrap_or_default()
        ));
    }
}

pub fn evaluate(recipe: &Recipe, check: &Check, points: &[Point], limits: &Limits) -> CheckOutcome {
    let mut out = CheckOutcome {
        what: check.what.clone(),
        paper: check.paper.clone(),
        metric: check.metric.clone(),
        expect: check.expect.clone(),
        size: toml_json(&check.size),
        zone: check.zone,
        tolerance: check.tolerance,
        rule: String::new(),
        threshold: String::new(),
        figure: None,
        points: Vec::new(),
        measured: None,
        interval: None,
        p_value: None,
        repeats: 0,
        flagged: Vec::new(),
        a_reduced: None,
        verdict: Verdict::CannotRun,
        reason: String::new(),
    };
    let pick = |series: &str, only: &Option<toml::Value>| {
        series_repeats(recipe, series, &check.metric, points)
            .into_iter()
            .filter(|p| only.as_ref().is_none_or(|x| p.label == toml_text(x)))
            .filter(|p| {
                only.is_some()
                    || check
                        .at
                        .as_ref()
                        .is_none_or(|at| at.iter().any(|x| toml_text(x) == p.label))
            })
            .collect::<Vec<_>>()
    };
    let a = pick(&check.a, &check.a_x);
    if a.is_empty() {
        out.reason = format!("no run of series {} was stored", check.a);
        return out;
    }
    if a.iter().any(XRepeats::unreadable) {
        out.reason = format!(
            "{} could not be read from the runs of {} (unavailable counter; see the results' kstat.unavailable)",
            check.metric, check.a
        );
        return out;
    }
    for p in &a {
        flags_of(&check.a, p, &mut out.flagged);
    }
    out.a_reduced = reduce_values(
        &a.iter().filter_map(XRepeats::median).collect::<Vec<_>>(),
        &check.reduce,
    );
    match &check.b {
        None => evaluate_bound(check, &a, limits, &mut out),
        Some(b_name) => {
            let b = pick(b_name, &check.b_x);
            if b.iter().any(XRepeats::unreadable) {
                out.reason = format!(
                    "{} could not be read from the runs of {b_name} (unavailable counter; see the results' kstat.unavailable)",
                    check.metric
                );
                return out;
            }
            for p in &b {
                flags_of(b_name, p, &mut out.flagged);
            }
            evaluate_pair(check, b_name, &a, &b, &mut out);
        }
    }
    out
}

/// Too few sane repeats at some point: the reason, or None.
fn too_few(series: &str, p: &XRepeats) -> Option<String> {
    let n = p.good().len();
    (n < MIN_REPEATS_TO_DECIDE).then(|| {
        format!(
            "{series}{} has {n} sane repeat(s) of {} run; a decision needs {MIN_REPEATS_TO_DECIDE}",
            if p.label.is_empty() {
                String::new()
            } else {
                format!(" at {}", p.label)
            },
            p.repeats.len()
        )
    })
}

fn evaluate_bound(check: &Check, a: &[XRepeats], limits: &Limits, out: &mut CheckOutcome) {
    let tol = check.tolerance;
    let limit = match &check.size {
        toml::Value::String(s) if s == "tick_ns" => limits.tick_ns,
        v => toml_f64(v),
    };
    let Some(limit) = limit else {
        out.reason = format!("the limit {} is not known on this machine", check.size);
        return;
    };
    for p in a {
        out.points.push(json!({
            "x": p.x, "a": p.median(),
            "a_repeats": p.repeats.iter().map(|r| r.value).collect::<Vec<_>>(),
            "a_interval": effect::median_interval(&p.good()),
        }));
    }
    out.repeats = a.iter().map(|p| p.good().len()).min().unwrap_or(0);
    let threshold = if check.expect == "at-most" {
        limit * (1.0 + tol)
    } else {
        limit / (1.0 + tol)
    };
    let named = match (&check.size, limits.hz) {
        (toml::Value::String(_), Some(hz)) => format!(" (one timer tick at CONFIG_HZ={hz})"),
        _ => String::new(),
    };
    out.threshold = format!(
        "{} of {} {} {}",
        check.reduce,
        check.metric,
        if check.expect == "at-most" {
            "<="
        } else {
            ">="
        },
        num(threshold)
    );
    out.rule = format!(
        "{} when the 95% interval of the {} of {} lies wholly {} {} (the limit {}{named} with {:.0}% tolerance); contradicted when wholly on the other side; inconclusive when it holds {}",
        Verdict::Reproduced.word(),
        check.reduce,
        check.metric,
        if check.expect == "at-most" { "at or below" } else { "at or above" },
        num(threshold),
        num(limit),
        tol * 100.0,
        num(threshold)
    );
    let v = reduce_values(
        &a.iter().filter_map(XRepeats::median).collect::<Vec<_>>(),
        &check.reduce,
    );
    out.measured = v;
    if let Some(why) = a.iter().find_map(|p| too_few(&check.a, p)) {
        out.verdict = Verdict::Inconclusive;
        out.reason = why;
        return;
    }
    let sets: Vec<(Vec<f64>, Vec<f64>)> = a.iter().map(|p| (p.good(), vec![1.0])).collect();
    let how = check.reduce.clone();
    let iv = effect::bootstrap(
        &sets,
        |m| reduce_values(&m.iter().map(|p| p.0).collect::<Vec<_>>(), &how),
        effect::BOOTSTRAP_SEED,
    );
    let (Some(v), Some(iv)) = (v, iv) else {
        out.reason = format!("{} gave no finite value", check.metric);
        return;
    };
    out.interval = Some(iv);
    let side = Side::of(iv, threshold);
    out.verdict = match (check.expect.as_str(), side) {
        (_, Side::Straddles) => Verdict::Inconclusive,
        ("at-most", Side::Below) | ("at-least", Side::Above) => Verdict::Reproduced,
        _ => Verdict::Contradicted,
    };
    let figure = format!("{} [{}, {}]", num(v), num(iv.lo), num(iv.hi));
    out.figure = Some(figure.clone());
    out.reason = format!(
        "{} {} of {} = {figure} over {} repeats: {} the threshold {}{named}",
        check.reduce,
        check.metric,
        check.a,
        out.repeats,
        match side {
            Side::Straddles => "the interval holds",
            Side::Above => "wholly above",
            Side::Below => "wholly below",
        },
        num(threshold),
    );
}

/// a/b with its interval for people: a percentage near 1, a factor beyond.
fn ratio_text(r: f64, iv: Interval) -> String {
    if iv.lo >= 0.5 && iv.hi <= 2.0 {
        percent_with_interval(r, iv)
    } else {
        format!("{}x [{}x, {}x]", num(r), num(iv.lo), num(iv.hi))
    }
}

fn threshold_text(t: f64, near_one: bool) -> String {
    if near_one {
        effect::percent(t)
    } else {
        format!("{}x", num(t))
    }
}

fn evaluate_pair(
    check: &Check,
    b_name: &str,
    a: &[XRepeats],
    b: &[XRepeats],
    out: &mut CheckOutcome,
) {
    let pairs: Vec<(Json, &XRepeats, &XRepeats)> = if check.a_x.is_some() || check.b_x.is_some() {
        match (a.first(), b.first()) {
            (Some(pa), Some(pb)) => vec![(json!([pa.x, pb.x]), pa, pb)],
            _ => Vec::new(),
        }
    } else {
        a.iter()
            .filter_map(|pa| Some((pa.x.clone(), pa, b.iter().find(|pb| pb.label == pa.label)?)))
            .collect()
    };
    let tol = check.tolerance;
    let size = toml_f64(&check.size).unwrap_or(f64::NAN);
    let (lo_t, hi_t) = match check.expect.as_str() {
        "greater" => (size / (1.0 + tol), f64::INFINITY),
        "less" => (0.0, size * (1.0 + tol)),
        _ => {
            let z = check.zone.unwrap_or(f64::NAN);
            (1.0 - z, 1.0 + z)
        }
    };
    let near_one = size > 0.5 && size < 2.0;
    let rank = "; a verdict that a and b differ also needs the rank test: p below 0.05, or at most 0.1 where the repeats are too few to reach 0.05 (the rule of compare and report)".to_string();
    out.threshold = match check.expect.as_str() {
        "greater" => format!("a/b >= {}", threshold_text(lo_t, near_one)),
        "less" => format!("a/b <= {}", threshold_text(hi_t, near_one)),
        _ => format!(
            "a/b within [{}, {}]",
            effect::percent(lo_t),
            effect::percent(hi_t)
        ),
    };
    out.rule = match check.expect.as_str() {
        "greater" => format!(
            "reproduced when the 95% interval of a/b lies wholly at or above {} (the claimed {} less the {:.0}% tolerance); contradicted when wholly below it; inconclusive when it holds it",
            threshold_text(lo_t, near_one), threshold_text(size, near_one), tol * 100.0
        ) + &rank,
        "less" => format!(
            "reproduced when the 95% interval of a/b lies wholly at or below {} (the claimed {} plus the {:.0}% tolerance); contradicted when wholly above it; inconclusive when it holds it",
            threshold_text(hi_t, near_one), threshold_text(size, near_one), tol * 100.0
        ) + &rank,
        _ => format!(
            "reproduced when the 95% interval of a/b lies wholly inside the equivalence zone [{}, {}]; contradicted when wholly outside it; inconclusive when it crosses its edge",
            effect::percent(lo_t), effect::percent(hi_t)
        ) + &rank,
    };
    if pairs.is_empty() {
        out.reason = format!(
            "no x value has figures of both {} and {b_name} ({} could not be read or no run was stored)",
            check.a, check.metric
        );
        return;
    }
    let mut p_values = Vec::new();
    for (x, pa, pb) in &pairs {
        let e = Effect::of(&pa.good(), &pb.good());
        p_values.push(e.map(|e| e.p_value));
        out.points.push(json!({
            "x": x,
            "a": pa.median(), "b": pb.median(),
            "a_repeats": pa.repeats.iter().map(|r| r.value).collect::<Vec<_>>(),
            "b_repeats": pb.repeats.iter().map(|r| r.value).collect::<Vec<_>>(),
            "ratio": e.map(|e| e.ratio),
            "interval": e.map(|e| e.interval),
            "p_value": e.map(|e| e.p_value),
        }));
    }
    out.repeats = pairs
        .iter()
        .map(|(_, pa, pb)| pa.good().len().min(pb.good().len()))
        .min()
        .unwrap_or(0);
    let medians: Option<Vec<(f64, f64)>> = pairs
        .iter()
        .map(|(_, pa, pb)| Some((pa.median()?, pb.median()?)))
        .collect();
    let ratio = medians
        .as_ref()
        .and_then(|m| reduce_pairs(m, &check.reduce, &check.expect));
    out.measured = ratio;
    if let Some(why) = pairs
        .iter()
        .find_map(|(_, pa, pb)| too_few(&check.a, pa).or_else(|| too_few(b_name, pb)))
    {
        out.verdict = Verdict::Inconclusive;
        out.reason = why;
        return;
    }
    let Some(ratio) = ratio else {
        out.reason = format!(
            "{b_name} measured 0 for {}, so a/b is not defined",
            check.metric
        );
        return;
    };
    // The p-value of the point the reduction picks (max, min), else the
    // largest over the points: every point must differ.
    let pick = match check.reduce.as_str() {
        "max" | "min" if check.expect != "equal" => medians.as_ref().and_then(|m| {
            let key = |i: usize| m[i].0 / m[i].1;
            (0..m.len()).reduce(|i, j| {
                let better = if check.reduce == "max" {
                    key(j) > key(i)
                } else {
                    key(j) < key(i)
                };
                if better {
                    j
                } else {
                    i
                }
            })
        }),
        _ => None,
    };
    out.p_value = match pick {
        Some(i) => p_values.get(i).copied().flatten(),
        None => p_values.iter().flatten().copied().reduce(f64::max),
    };
    let sets: Vec<(Vec<f64>, Vec<f64>)> = pairs
        .iter()
        .map(|(_, pa, pb)| (pa.good(), pb.good()))
        .collect();
    let (how, expect) = (check.reduce.clone(), check.expect.clone());
    let Some(iv) = effect::bootstrap(
        &sets,
        |m| reduce_pairs(m, &how, &expect),
        effect::BOOTSTRAP_SEED,
    ) else {
        out.reason = format!(
            "{b_name} measured 0 for {} in most resamples, so a/b is not defined",
            check.metric
        );
        return;
    };
    out.interval = Some(iv);
    let fig = ratio_text(ratio, iv);
    out.figure = Some(fig.clone());
    let p = out
        .p_value
        .map(|p| format!(", p = {}", num(p)))
        .unwrap_or_default();
    let head = format!(
        "{} / {b_name} {}: {fig} (95% interval over {} repeats{}{p})",
        check.a,
        check.metric,
        out.repeats,
        if pairs.len() > 1 {
            format!(
                ", {} of {} x values",
                if check.expect == "equal" {
                    "largest difference"
                } else {
                    check.reduce.as_str()
                },
                pairs.len()
            )
        } else {
            String::new()
        }
    );
    let spread = iv.contains(1.0);
    // Thresholds in the figure's own form (a percentage or a factor).
    let pct = iv.lo >= 0.5 && iv.hi <= 2.0;
    let (verdict, why) = match check.expect.as_str() {
        "greater" => match Side::of(iv, lo_t) {
            Side::Above => (
                Verdict::Reproduced,
                format!(
                    "wholly at or above the claim's threshold {}",
                    threshold_text(lo_t, pct)
                ),
            ),
            Side::Below if iv.hi < 1.0 => (
                Verdict::Contradicted,
                "wholly below 1: the opposite of the claim".to_string(),
            ),
            Side::Below => (
                Verdict::Contradicted,
                format!(
                    "wholly below the claim's threshold {}: a smaller effect than claimed",
                    threshold_text(lo_t, pct)
                ),
            ),
            Side::Straddles if spread => (
                Verdict::Inconclusive,
                "the difference is inside the run-to-run spread".to_string(),
            ),
            Side::Straddles => (
                Verdict::Inconclusive,
                format!(
                    "the interval holds the claim's threshold {}",
                    threshold_text(lo_t, pct)
                ),
            ),
        },
        "less" => match Side::of(iv, hi_t) {
            Side::Below => (
                Verdict::Reproduced,
                format!(
                    "wholly below the claim's threshold {}",
                    threshold_text(hi_t, pct)
                ),
            ),
            Side::Above if iv.lo > 1.0 => (
                Verdict::Contradicted,
                "wholly above 1: the opposite of the claim".to_string(),
            ),
            Side::Above => (
                Verdict::Contradicted,
                format!(
                    "wholly at or above the claim's threshold {}: a smaller effect than claimed",
                    threshold_text(hi_t, pct)
                ),
            ),
            Side::Straddles if spread => (
                Verdict::Inconclusive,
                "the difference is inside the run-to-run spread".to_string(),
            ),
            Side::Straddles => (
                Verdict::Inconclusive,
                format!(
                    "the interval holds the claim's threshold {}",
                    threshold_text(hi_t, pct)
                ),
            ),
        },
        _ => {
            let zone = format!("[{}, {}]", effect::percent(lo_t), effect::percent(hi_t));
            if iv.lo >= lo_t && iv.hi <= hi_t {
                (
                    Verdict::Reproduced,
                    format!("wholly inside the equivalence zone {zone}"),
                )
            } else if iv.hi < lo_t || iv.lo > hi_t {
                (
                    Verdict::Contradicted,
                    format!("wholly outside the equivalence zone {zone}"),
                )
            } else {
                (Verdict::Inconclusive, format!("the interval crosses the edge of the equivalence zone {zone}: the runs cannot tell equal from different"))
            }
        }
    };
    // A verdict that says a and b differ (an effect past a threshold
    // away from 1, the opposite effect, or a pair outside the zone of
    // equivalence) needs the rank test too: with a handful of repeats the
    // bootstrap interval can miss 1 while the two sets overlap (seen:
    // 0.313x [0.152x, 0.827x] at p = 0.69 on a busy machine), and a
    // verdict on that flips between runs.
    let says_different = match (verdict, check.expect.as_str()) {
        (Verdict::Reproduced, "greater") => lo_t > 1.0,
        (Verdict::Reproduced, "less") => hi_t < 1.0,
        (Verdict::Reproduced, _) => false,
        (Verdict::Contradicted, "greater") => iv.hi < 1.0,
        (Verdict::Contradicted, "less") => iv.lo > 1.0,
        (Verdict::Contradicted, _) => true,
        (Verdict::Inconclusive | Verdict::CannotRun, _) => false,
    };
    // The level of the rank test the stats layer holds a difference to
    // (Effect::level: 0.05, or 0.1 where the repeats cannot reach 0.05).
    let level = if effect::smallest_p(out.repeats, out.repeats) >= effect::ALPHA {
        effect::FLOOR_ALPHA
    } else {
        effect::ALPHA
    };
    let passes = |p: f64| {
        if level > effect::ALPHA {
            p <= level + 1e-9
        } else {
            p < level
        }
    };
    let (verdict, why) = match out.p_value {
        Some(p) if says_different && !passes(p) => (
            Verdict::Inconclusive,
            format!(
                "{why}, but the rank test does not tell the two sets apart (p = {} against its level {level}): too few or too scattered repeats to decide",
                num(p)
            ),
        ),
        _ => (verdict, why),
    };
    out.verdict = verdict;
    out.reason = if verdict == Verdict::Inconclusive && spread && check.expect != "equal" {
        format!("{head}: the difference, {fig}, is inside the run-to-run spread")
    } else {
        format!("{head}: {why}")
    };
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

/// The ratio a/b over the points' (median a, median b): geometric mean of
/// per-point ratios, their max or min, or the ratio of the peaks; for
/// `equal`, the ratio farthest from 1.
pub fn reduce_pairs(pairs: &[(f64, f64)], how: &str, expect: &str) -> Option<f64> {
    if how == "peak" {
        let pa = pairs.iter().map(|p| p.0).fold(f64::MIN, f64::max);
        let pb = pairs.iter().map(|p| p.1).fold(f64::MIN, f64::max);
        return (pb > 0.0).then(|| pa / pb);
    }
    let ratios: Option<Vec<f64>> = pairs
        .iter()
        .map(|p| (p.1 != 0.0).then(|| p.0 / p.1))
        .collect();
    let ratios = ratios?;
    if ratios.is_empty() {
        return None;
    }
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

/// The recipe's verdict from its checks, and the check that decided it:
/// the first contradicted check contradicts the claim; else the first
/// inconclusive one leaves it inconclusive; else a check that could not be
/// decided (a counter unavailable) makes it cannot-run; else reproduced
/// (decided by `preferred`, the check the headline figure is read from,
/// when there is one).
pub fn combine(outcomes: &[CheckOutcome], preferred: Option<usize>) -> (Verdict, Option<usize>) {
    let first = |v: Verdict| outcomes.iter().position(|o| o.verdict == v);
    if outcomes.is_empty() {
        return (Verdict::CannotRun, None);
    }
    for v in [
        Verdict::Contradicted,
        Verdict::Inconclusive,
        Verdict::CannotRun,
    ] {
        if let Some(i) = first(v) {
            return (v, Some(i));
        }
    }
    let i = preferred.filter(|&i| i < outcomes.len()).unwrap_or(0);
    (Verdict::Reproduced, Some(i))
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

    /// Made-up repeats: per engine and depth, each value times the depth's
    /// base; `ops` per run.
    fn points_with(fast: &[f64], slow: &[f64], lat: f64, ops: &[u64]) -> Vec<Point> {
        let mut v = Vec::new();
        for (engine, reps) in [("fast", fast), ("slow", slow)] {
            for (depth, base) in [(1, 1.0), (16, 2.0)] {
                for (i, x) in reps.iter().enumerate() {
                    let mut values = serde_json::Map::new();
                    values.insert("engine".into(), json!(engine));
                    values.insert("iodepth".into(), json!(depth));
                    let n = ops.get(i).copied().unwrap_or(100_000);
                    v.push(Point {
                        sweep: "s".into(),
                        values,
                        result: json!({"total": {"iops": x * base, "ops": n, "elapsed_ns": 1_000_000_000u64,
                            "lat_ns": {"mean": lat * (1.0 + i as f64 * 0.01)}},
                            "config": {"runtime": 1.0}}),
                    });
                }
            }
        }
        v
    }

    /// Five tight repeats around `a` and `b` (+-1%).
    fn points(a: f64, b: f64, lat: f64) -> Vec<Point> {
        let j = [0.99, 1.0, 1.01, 0.995, 1.005];
        let fa: Vec<f64> = j.iter().map(|x| x * a).collect();
        let fb: Vec<f64> = j.iter().map(|x| x * b).collect();
        points_with(&fa, &fb, lat, &[])
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
    fn an_effect_outside_the_spread_and_past_the_threshold_is_reproduced() {
        let o = run(&points(125.0, 100.0, 3e6), Some(4e6));
        assert_eq!(o[0].verdict, Verdict::Reproduced, "{}", o[0].reason);
        assert!((o[0].measured.unwrap() - 1.25).abs() < 1e-9);
        let iv = o[0].interval.unwrap();
        assert!(iv.lo > 1.2 / 1.05 && iv.hi < 1.3, "{iv:?}");
        assert!(
            o[0].rule.contains("wholly at or above +14%"),
            "{}",
            o[0].rule
        );
        assert_eq!(o[0].repeats, 5);
        assert!(o[0].p_value.unwrap() < 0.05);
        assert_eq!(o[1].verdict, Verdict::Reproduced, "{}", o[1].reason);
        assert_eq!(combine(&o, Some(0)), (Verdict::Reproduced, Some(0)));
    }

    #[test]
    fn an_effect_inside_the_spread_is_inconclusive() {
        // Repeats that differ by up to 50% between runs (SQPOLL at depth
        // 1 did); the medians 2% apart.
        let fast = [85.0, 135.0, 102.0, 78.0, 128.0];
        let slow = [100.0, 84.0, 125.0, 92.0, 110.0];
        let o = run(&points_with(&fast, &slow, 3e6, &[]), Some(4e6));
        assert_eq!(o[0].verdict, Verdict::Inconclusive, "{}", o[0].reason);
        assert!(
            o[0].reason.contains("is inside the run-to-run spread"),
            "{}",
            o[0].reason
        );
        assert!(o[0].interval.unwrap().contains(1.0));
        assert_eq!(combine(&o, Some(0)), (Verdict::Inconclusive, Some(0)));
    }

    #[test]
    fn an_interval_off_one_without_a_rank_difference_decides_nothing() {
        // At depth 1 fast is half of slow in every repeat; at depth 16 the
        // two overlap. The mean of the two ratios (about 0.75) has an
        // interval wholly below 1, but at depth 16 the rank test finds no
        // difference: the verdict may not say "the opposite of the claim".
        let mut v = points_with(&[50.0, 51.0, 49.0, 50.5, 49.5], &[100.0; 5], 3e6, &[]);
        let overlap_fast = [95.0, 105.0, 100.0, 98.0, 102.0];
        let overlap_slow = [100.0, 96.0, 104.0, 99.0, 101.0];
        for p in &mut v {
            if p.values["iodepth"] == 16 {
                let i = p.result["total"]["lat_ns"]["mean"].as_f64().unwrap() / 3e6;
                let i = ((i - 1.0) / 0.01).round() as usize;
                let x = if p.values["engine"] == "fast" {
                    overlap_fast[i]
                } else {
                    overlap_slow[i]
                };
                p.result["total"]["iops"] = json!(x * 2.0);
            }
        }
        let o = run(&v, Some(4e6));
        let iv = o[0].interval.unwrap();
        assert!(iv.hi < 1.0, "the interval is wholly below 1: {iv:?}");
        assert!(o[0].p_value.unwrap() >= effect::ALPHA, "{:?}", o[0].p_value);
        assert_eq!(o[0].verdict, Verdict::Inconclusive, "{}", o[0].reason);
        assert!(
            o[0].reason
                .contains("the rank test does not tell the two sets apart"),
            "{}",
            o[0].reason
        );
    }

    #[test]
    fn an_effect_straddling_the_threshold_is_inconclusive() {
        // Clearly faster (the interval is above 1), but whether by the
        // claimed 20% the spread cannot say.
        let fast = [112.0, 121.0, 116.0, 109.0, 124.0];
        let slow = [100.0, 101.0, 99.0, 100.5, 99.5];
        let o = run(&points_with(&fast, &slow, 3e6, &[]), Some(4e6));
        assert_eq!(o[0].verdict, Verdict::Inconclusive, "{}", o[0].reason);
        assert!(
            o[0].reason.contains("holds the claim's threshold"),
            "{}",
            o[0].reason
        );
    }

    #[test]
    fn an_effect_wholly_short_of_or_against_the_claim_is_contradicted() {
        // +5%, tight: real, but a quarter of the claimed size.
        let o = run(&points(105.0, 100.0, 9e6), Some(4e6));
        assert_eq!(o[0].verdict, Verdict::Contradicted, "{}", o[0].reason);
        assert!(
            o[0].reason.contains("smaller effect than claimed"),
            "{}",
            o[0].reason
        );
        assert_eq!(o[1].verdict, Verdict::Contradicted, "{}", o[1].reason);
        // The opposite direction.
        let o = run(&points(80.0, 100.0, 1e6), Some(4e6));
        assert_eq!(o[0].verdict, Verdict::Contradicted, "{}", o[0].reason);
        assert!(
            o[0].reason.contains("opposite of the claim"),
            "{}",
            o[0].reason
        );
        assert_eq!(combine(&o, Some(1)), (Verdict::Contradicted, Some(0)));
    }

    #[test]
    fn an_outlier_is_flagged_and_cannot_decide_alone() {
        let fast = [125.0, 124.0, 126.0, 125.5, 400.0];
        let slow = [100.0, 101.0, 99.0, 100.5, 99.5];
        let o = run(&points_with(&fast, &slow, 3e6, &[]), Some(4e6));
        assert!(
            o[0].flagged.iter().any(|f| f.contains("outlier")),
            "{:?}",
            o[0].flagged
        );
        // The median ignores it: still reproduced on the other four.
        assert_eq!(o[0].verdict, Verdict::Reproduced, "{}", o[0].reason);
        // One wild repeat against 1.0x: no contradiction from it alone.
        let fast = [100.0, 99.0, 101.0, 100.5, 400.0];
        let o = run(&points_with(&fast, &slow, 3e6, &[]), Some(4e6));
        assert_ne!(o[0].verdict, Verdict::Reproduced, "{}", o[0].reason);
    }

    #[test]
    fn a_run_with_too_few_operations_is_left_out() {
        // Three repeats, the second did one I/O: two sane ones cannot decide.
        let fast = [125.0, 9000.0, 126.0];
        let slow = [100.0, 101.0, 99.0];
        let o = run(
            &points_with(&fast, &slow, 3e6, &[50_000, 1, 50_000]),
            Some(4e6),
        );
        assert!(
            o[0].flagged.iter().any(|f| f.contains("did 1 operation")),
            "{:?}",
            o[0].flagged
        );
        assert_eq!(o[0].verdict, Verdict::Inconclusive, "{}", o[0].reason);
        assert!(
            o[0].reason.contains("2 sane repeat(s) of 3"),
            "{}",
            o[0].reason
        );
    }

    #[test]
    fn missing_counter_or_limit_cannot_decide() {
        let o = run(&points(125.0, 100.0, 3e6), None);
        assert_eq!(o[1].verdict, Verdict::CannotRun);
        assert!(o[1].reason.contains("not known"), "{}", o[1].reason);
        let o = run(&points(125.0, 100.0, 3e6), Some(4e6));
        assert!(o[1].rule.contains("CONFIG_HZ=250"), "{}", o[1].rule);
        let mut pts = points(125.0, 100.0, 3e6);
        pts.retain(|p| p.values["engine"] == "slow");
        let o = run(&pts, Some(4e6));
        assert_eq!(o[0].verdict, Verdict::CannotRun, "{}", o[0].reason);
    }

    #[test]
    fn equal_claims_have_a_zone() {
        let text = RECIPE.replace(
            "expect = \"greater\"\nsize = 1.2\ntolerance = 0.05",
            "expect = \"equal\"\nsize = 0.05\ntolerance = 0.05\nzone = 0.1",
        );
        let r = parse_recipe(&text, "t").unwrap();
        let limits = Limits {
            tick_ns: Some(4e6),
            hz: None,
        };
        let judge = |a: f64, b: f64| evaluate(&r, &r.check[0], &points(a, b, 1e6), &limits);
        assert_eq!(judge(102.0, 100.0).verdict, Verdict::Reproduced);
        assert_eq!(judge(130.0, 100.0).verdict, Verdict::Contradicted);
        assert_eq!(judge(110.0, 100.0).verdict, Verdict::Inconclusive);
        let no_zone = RECIPE.replace("expect = \"greater\"", "expect = \"equal\"");
        let e = parse_recipe(&no_zone, "t").unwrap_err().to_string();
        assert!(e.contains("needs a zone"), "{e}");
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
        let pairs = vec![(10.0, 10.0), (30.0, 20.0), (12.0, 25.0)];
        assert_eq!(reduce_pairs(&pairs, "peak", "greater"), Some(1.2));
        assert_eq!(reduce_pairs(&pairs, "mean", "equal"), Some(0.48));
        assert_eq!(reduce_pairs(&pairs, "max", "greater"), Some(1.5));
    }
}
