//! Results on disk (a sweep directory, advise's own or any other, or a
//! `reproduce` output) grouped by setup, summarised with min-max over
//! repeats, ranked by the goal, each against the best with the statistics
//! layer's ratio, 95% interval and p-value, and the recommendation: where
//! no difference was measured between the best and others
//! ([`Effect::differs`]), the simplest of them (the secondary rule).

use super::{knobs, Goal};
use crate::store::{read_index, read_result, Status, INDEX_FILE};
use anyhow::Result;
use ringlab_core::usage_error;
use ringlab_stats::effect::{Effect, Interval};
use serde::Serialize;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How a tie with the best is decided and broken, as the JSON states it.
pub const TIE_RULE: &str = "a setup ties with the best when no difference was measured on the goal's figure (its ratio to the best has a 95% bootstrap interval holding 1, or a Mann-Whitney U p-value of 0.05 or more; p <= 0.1 where the repeats cannot reach 0.05; fewer than 3 repeats a side never differ); among tied setups the simplest is recommended (lowest complexity: SQPOLL 3, IOPOLL and IOSQE_ASYNC 2, other knobs 1), then the better median";

/// Per-I/O counters that explain a difference, with what a lower value means.
pub const EVIDENCE: &[(&str, &str)] = &[
    (
        "io_uring_enter_per_op",
        "io_uring_enter calls (system calls to submit and wait)",
    ),
    (
        "io_uring_file_get_per_op",
        "file lookups (fget of the descriptor)",
    ),
    (
        "reschedule_ipis_per_op",
        "rescheduling IPIs (completion work interrupting a thread)",
    ),
    (
        "io_uring_queue_async_work_per_op",
        "io-wq offloads (requests run by a worker thread)",
    ),
    ("context_switches_per_op", "context switches"),
    ("device_interrupts_per_op", "device interrupts"),
    ("io_uring_task_work_run_per_op", "task-work runs"),
    (
        "cpu_us_with_helpers_per_op",
        "CPU µs per I/O, kernel helper threads included",
    ),
];

/// Minimum, median and maximum over repeats.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Range {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Range {
    pub fn of(values: &[f64]) -> Option<Range> {
        let s = ringlab_stats::spread::Spread::of(values)?;
        Some(Range {
            min: s.min,
            median: s.median,
            max: s.max,
        })
    }
}

/// One setup's figures over its repeats.
#[derive(Clone, Debug, Serialize)]
pub struct SetupFigures {
    pub setup: String,
    pub engine: String,
    /// The knobs it turns on (ringlab flag names).
    pub knobs: Vec<String>,
    /// `ringlab io` flags of the setup, as read back from its results.
    pub flags: Vec<String>,
    pub complexity: u32,
    pub repeats: usize,
    pub iops: Range,
    pub lat_ns_p50: Option<Range>,
    pub lat_ns_p99: Option<Range>,
    /// CPU time per I/O including the kernel helper threads (iou-sqp,
    /// iou-wrk); `null` where kernel evidence was not collected.
    pub cpu_us_per_op: Option<Range>,
    /// Medians of the per-I/O counters of [`EVIDENCE`] that were measured.
    pub counters: BTreeMap<String, f64>,
    /// Diagnosis rules that fired in any repeat.
    pub diagnoses: Vec<String>,
    /// The 95% bootstrap interval of the median of the goal's figure.
    pub goal_interval: Option<Interval>,
    /// The goal's figure against the best-ranked setup: ratio, 95%
    /// interval over the repeats and p-value (null for the best itself).
    pub vs_best: Option<VsBest>,
    /// Every repeat's figures.
    #[serde(skip)]
    pub samples: Samples,
    #[serde(skip)]
    pub shape: String,
    #[serde(skip)]
    pub config: serde_json::Map<String, Json>,
}

/// Each repeat's figures of a setup.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    pub iops: Vec<f64>,
    pub p50: Vec<f64>,
    pub p99: Vec<f64>,
    pub cpu: Vec<f64>,
}

impl Samples {
    fn of(&self, goal: Goal) -> &[f64] {
        match goal {
            Goal::Iops => &self.iops,
            Goal::Latency => &self.p99,
            Goal::Cpu => &self.cpu,
        }
    }
}

/// A setup's goal figure against the best one's.
#[derive(Clone, Debug, Serialize)]
pub struct VsBest {
    pub best: String,
    /// This setup / the best, on the goal's figure.
    pub ratio: f64,
    pub interval: Interval,
    pub p_value: f64,
    /// Whether a difference from the best was measured
    /// ([`Effect::differs`]); false makes it a tie.
    pub differs: bool,
}

impl VsBest {
    fn of(best: &str, e: Effect) -> VsBest {
        VsBest {
            best: best.to_string(),
            ratio: e.ratio,
            interval: e.interval,
            p_value: e.p_value,
            differs: e.differs(),
        }
    }

    /// `~ -1.5% [-9.0%, +6.0%] p=0.42` or `-20% [-25%, -15%] p=0.008`.
    pub fn text(&self) -> String {
        let iv = ringlab_stats::effect::percent_with_interval(self.ratio, self.interval);
        if self.differs {
            format!("{iv} p={:.3}", self.p_value)
        } else {
            format!("~ {iv} p={:.3}", self.p_value)
        }
    }
}

/// A counter of the recommended setup beside the baseline's.
#[derive(Clone, Debug, Serialize)]
pub struct EvidenceLine {
    pub counter: String,
    pub meaning: String,
    pub recommended: f64,
    pub baseline: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Recommendation {
    pub setup: String,
    /// The setup that measured best by the goal.
    pub best_measured: String,
    /// Whether no difference was measured between the best and another
    /// setup of its shape (then the secondary rule chose).
    pub within_noise: bool,
    /// The best and the setups of its shape with no difference measured
    /// from it.
    pub tied: Vec<String>,
    /// Why this one, in a sentence.
    pub why: String,
    /// The setup the evidence compares it with; `null` when it is alone.
    pub baseline: Option<String>,
    pub evidence: Vec<EvidenceLine>,
    pub ringlab_io: String,
    pub fio: String,
    pub liburing: String,
}

/// How the calibration sweep was run.
#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    pub budget_s: f64,
    pub runtime_per_run_s: f64,
    pub repeats: u32,
    pub runs: usize,
    pub wall_s: f64,
    pub job_cpus: Vec<u32>,
}

/// The directory holding a sweep index: DIR itself, or the one
/// subdirectory (or sub-subdirectory, as in a `reproduce` output
/// DIR/NAME/SWEEP) that holds one.
pub fn find_results_dir(dir: &Path) -> Result<PathBuf> {
    if dir.join(INDEX_FILE).is_file() {
        return Ok(dir.to_path_buf());
    }
    let rd = std::fs::read_dir(dir).map_err(|e| {
        usage_error(format!(
            "--from {}: {e}: name a results directory written by 'ringlab sweep', 'ringlab advise --save' or 'ringlab reproduce'",
            dir.display()
        ))
    })?;
    let subdirs: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    let mut found: Vec<PathBuf> = subdirs
        .iter()
        .filter(|p| p.join(INDEX_FILE).is_file())
        .cloned()
        .collect();
    if found.is_empty() {
        // A reproduce output: DIR/NAME/SWEEP/index.json.
        for sub in &subdirs {
            if let Ok(rd) = std::fs::read_dir(sub) {
                found.extend(
                    rd.filter_map(|e| e.ok())
                        .map(|e| e.path())
                        .filter(|p| p.join(INDEX_FILE).is_file()),
                );
            }
        }
    }
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(usage_error(format!(
            "--from {}: no results here (no {INDEX_FILE} in it or in a subdirectory): name a directory written by 'ringlab sweep', 'ringlab advise --save' or 'ringlab reproduce'",
            dir.display()
        ))),
        _ => Err(usage_error(format!(
            "--from {}: holds several result sets ({}): name one of them",
            dir.display(),
            found
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// A setup's name and its results (one per repeat).
pub type Group = (String, Vec<Json>);

/// The finished io results of a sweep directory, grouped by their axis
/// values (a setup each), in index order of first appearance.
pub fn load_groups(dir: &Path) -> Result<(Vec<Group>, Vec<String>)> {
    let index = read_index(dir)?;
    if index.command() != "io" {
        return Err(usage_error(format!(
            "{}: holds '{}' runs; advise ranks storage setups from 'ringlab io' runs",
            dir.display(),
            index.command()
        )));
    }
    let mut warnings = Vec::new();
    let failed = index
        .runs
        .iter()
        .filter(|r| r.status == Status::Failed)
        .count();
    if failed > 0 {
        warnings.push(format!(
            "{failed} run(s) of {} failed and are left out (see its index.json)",
            dir.display()
        ));
    }
    let mut groups: Vec<Group> = Vec::new();
    for entry in index.runs.iter().filter(|r| r.status == Status::Done) {
        let path = dir.join(&entry.result);
        let result = match read_result(&path, "io") {
            Ok(r) => r,
            Err(why) => {
                warnings.push(format!("{}: {why}, left out", path.display()));
                continue;
            }
        };
        let name = group_name(&entry.values);
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => v.push(result),
            None => groups.push((name, vec![result])),
        }
    }
    if groups.is_empty() {
        return Err(usage_error(format!(
            "{}: no finished runs to draw advice from ({} planned, {failed} failed): run the sweep to its end first",
            dir.display(),
            index.runs.len()
        )));
    }
    Ok((groups, warnings))
}

fn group_name(values: &serde_json::Map<String, Json>) -> String {
    if values.len() == 1 {
        if let Some(Json::String(s)) = values.get("setup") {
            return s.clone();
        }
    }
    if values.is_empty() {
        return "all".to_string();
    }
    values
        .iter()
        .map(|(k, v)| match v {
            Json::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a knob is on in a result's config.
fn knob_on(v: &Json) -> bool {
    match v {
        Json::Bool(b) => *b,
        Json::Number(n) => n.as_f64().is_some_and(|x| x > 0.0),
        _ => false,
    }
}

/// How much a setup asks: one per knob, two for IOPOLL (a polled device)
/// and IOSQE_ASYNC (io-wq worker threads on other cores), three for SQPOLL
/// (a core given away).
pub fn complexity(knobs: &[String]) -> u32 {
    knobs
        .iter()
        .map(|k| match k.as_str() {
            "sqpoll" => 3,
            "iopoll" | "force-async" => 2,
            "attach-wq" => 0,
            _ => 1,
        })
        .sum()
}

/// Summarises one group of repeats.
pub fn summarise(name: &str, runs: &[Json]) -> SetupFigures {
    let first = &runs[0];
    let config = first["config"].as_object().cloned().unwrap_or_default();
    let engine = config
        .get("engine")
        .and_then(Json::as_str)
        .unwrap_or("?")
        .to_string();
    let knobs: Vec<String> = knobs::ADVISED
        .iter()
        .filter(|k| config.get(**k).is_some_and(knob_on))
        .map(|k| k.to_string())
        .collect();
    let mut flags = vec!["--engine".to_string(), engine.clone()];
    let task_run = knobs
        .iter()
        .any(|k| knobs::default_ring().contains(&k.as_str()) || k == "sqpoll");
    if engine == "uring" && !task_run {
        // Without it ringlab io sets up its default ring.
        flags.push("--mode iou".to_string());
    }
    for k in &knobs {
        match config.get(k.as_str()) {
            Some(Json::Number(n)) if n.as_u64() != Some(1) => flags.push(format!("--{k}={n}")),
            _ => flags.push(format!("--{k}")),
        }
        if k == "sqpoll" {
            if let Some(cpu) = config.get("sqpoll-cpu").and_then(Json::as_u64) {
                flags.push(format!("--sqpoll-cpu {cpu}"));
            }
        }
    }
    let series =
        |f: &dyn Fn(&Json) -> Option<f64>| -> Vec<f64> { runs.iter().filter_map(f).collect() };
    let iops = series(&|r| r["total"]["iops"].as_f64());
    let p50 = series(&|r| r["total"]["lat_ns"]["p50"].as_f64());
    let p99 = series(&|r| r["total"]["lat_ns"]["p99"].as_f64());
    let cpu = series(&|r| r["kstat"]["per_op"]["cpu_us_with_helpers_per_op"].as_f64());
    let mut counters = BTreeMap::new();
    for (key, _) in EVIDENCE {
        let v = series(&|r| r["kstat"]["per_op"][*key].as_f64());
        if v.len() == runs.len() {
            if let Some(r) = Range::of(&v) {
                counters.insert(key.to_string(), r.median);
            }
        }
    }
    let mut diagnoses: Vec<String> = runs
        .iter()
        .flat_map(|r| r["diagnoses"].as_array().cloned().unwrap_or_default())
        .filter_map(|d| d["rule"].as_str().map(str::to_string))
        .collect();
    diagnoses.sort();
    diagnoses.dedup();
    let shape = ["rw", "bs", "iodepth", "numjobs", "direct"]
        .iter()
        .map(|k| format!("{k}={}", config.get(*k).unwrap_or(&Json::Null)))
        .collect::<Vec<_>>()
        .join(" ");
    SetupFigures {
        setup: name.to_string(),
        engine,
        complexity: complexity(&knobs),
        knobs,
        flags,
        repeats: runs.len(),
        iops: Range::of(&iops).unwrap_or(Range {
            min: 0.0,
            median: 0.0,
            max: 0.0,
        }),
        lat_ns_p50: Range::of(&p50),
        lat_ns_p99: Range::of(&p99),
        cpu_us_per_op: (cpu.len() == runs.len()).then(|| Range::of(&cpu)).flatten(),
        counters,
        diagnoses,
        goal_interval: None,
        vs_best: None,
        samples: Samples {
            iops,
            p50,
            p99,
            cpu,
        },
        shape,
        config,
    }
}

/// The goal's figure of a setup and whether higher is better.
pub fn goal_range(goal: Goal, s: &SetupFigures) -> Option<Range> {
    match goal {
        Goal::Iops => Some(s.iops),
        Goal::Latency => s.lat_ns_p99,
        Goal::Cpu => s.cpu_us_per_op,
    }
}

fn higher_is_better(goal: Goal) -> bool {
    goal == Goal::Iops
}

/// Orders setups best first by the goal (setups without the figure last).
pub fn rank(goal: Goal, mut setups: Vec<SetupFigures>) -> Vec<SetupFigures> {
    setups.sort_by(|a, b| {
        match (goal_range(goal, a), goal_range(goal, b)) {
            (Some(x), Some(y)) => {
                let o = x.median.total_cmp(&y.median);
                if higher_is_better(goal) {
                    o.reverse()
                } else {
                    o
                }
            }
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        }
        .then(a.complexity.cmp(&b.complexity))
    });
    let best = setups
        .first()
        .map(|b| (b.setup.clone(), b.samples.of(goal).to_vec()));
    for s in setups.iter_mut() {
        s.goal_interval = ringlab_stats::effect::median_interval(s.samples.of(goal));
    }
    if let Some((name, values)) = best {
        for s in setups.iter_mut().skip(1) {
            s.vs_best = Effect::of(s.samples.of(goal), &values).map(|e| VsBest::of(&name, e));
        }
    }
    setups
}

/// `b` against `a` on the goal's figure; `None` where either lacks it.
pub fn vs(goal: Goal, a: &SetupFigures, b: &SetupFigures) -> Option<Effect> {
    Effect::of(b.samples.of(goal), a.samples.of(goal))
}

/// Whether no difference was measured between `a` and `b` on the goal's
/// figure ([`Effect::differs`] is false); a setup without the figure ties
/// with nothing.
pub fn no_difference(goal: Goal, a: &SetupFigures, b: &SetupFigures) -> bool {
    vs(goal, a, b).is_some_and(|e| !e.differs())
}

/// The recommendation over ranked setups: the simplest io_uring setup
/// inside the noise of the best io_uring setup (on the same I/O shape), with
/// its evidence against the bare ring of that shape.
pub fn recommend(goal: Goal, ranked: &[SetupFigures]) -> Recommendation {
    let uring: Vec<&SetupFigures> = ranked.iter().filter(|s| s.engine == "uring").collect();
    let pool: Vec<&SetupFigures> = if uring.is_empty() {
        ranked.iter().collect()
    } else {
        uring
    };
    // Only setups measured on the best one's shape compete with it.
    let best = pool[0];
    let pool: Vec<&SetupFigures> = pool.into_iter().filter(|s| s.shape == best.shape).collect();
    let tied: Vec<&SetupFigures> = pool
        .iter()
        .copied()
        .filter(|s| s.setup == best.setup || no_difference(goal, best, s))
        .collect();
    // The secondary rule: the simplest, then the better ranked (min_by_key
    // keeps the first of equals, and the pool is in rank order).
    let chosen = tied
        .iter()
        .copied()
        .min_by_key(|s| s.complexity)
        .unwrap_or(best);
    let within = tied.len() > 1;
    // Each other setup of the shape against the best, with its interval.
    let against = |list: &[&SetupFigures]| -> String {
        list.iter()
            .filter(|s| s.setup != best.setup)
            .map(|s| match vs(goal, best, s) {
                Some(e) => format!(
                    "{}: {} p={:.3}",
                    s.setup,
                    ringlab_stats::effect::percent_with_interval(e.ratio, e.interval),
                    e.p_value
                ),
                None => format!("{}: no {} figure", s.setup, goal.name()),
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let others: Vec<&SetupFigures> = tied
        .iter()
        .copied()
        .filter(|s| s.setup != best.setup)
        .collect();
    let why = if !within {
        let rest: Vec<&SetupFigures> = pool.iter().copied().skip(1).collect();
        if rest.is_empty() {
            format!(
                "{} is the only io_uring setup measured on its shape",
                best.setup
            )
        } else {
            format!(
                "{} is best by {}: a difference from it was measured for every other setup ({})",
                best.setup,
                goal.name(),
                against(&rest)
            )
        }
    } else {
        let head = format!(
            "no difference measured between {} and {} by {} ({}, against {})",
            best.setup,
            names(&others),
            goal.name(),
            against(&others),
            best.setup
        );
        if chosen.setup == best.setup {
            format!(
                "{head}; {} measured best and is also the simplest of them (the secondary rule: fewest and cheapest knobs)",
                best.setup
            )
        } else {
            format!(
                "{head}; recommended by the secondary rule, the simplest of them (fewest and cheapest knobs): {}, not {}, which only measured best",
                chosen.setup, best.setup
            )
        }
    };
    let mut why = why;
    if let Some(top) = ranked.first().filter(|t| t.engine != best.engine) {
        why.push_str(&format!(
            "; the {} reference ({}) measured better than every io_uring setup by {}{}",
            top.engine,
            top.setup,
            goal.name(),
            if no_difference(goal, top, best) {
                ", but no difference from it was measured"
            } else {
                ""
            }
        ));
    }
    let baseline = pool
        .iter()
        .copied()
        .find(|s| s.setup != chosen.setup && s.knobs.is_empty() && s.engine == chosen.engine)
        .or_else(|| pool.iter().copied().find(|s| s.setup != chosen.setup));
    let evidence = baseline.map(|b| evidence(chosen, b)).unwrap_or_default();
    Recommendation {
        setup: chosen.setup.clone(),
        best_measured: best.setup.clone(),
        within_noise: within,
        tied: tied.iter().map(|s| s.setup.clone()).collect(),
        why,
        baseline: baseline.map(|b| b.setup.clone()),
        evidence,
        ringlab_io: String::new(),
        fio: String::new(),
        liburing: String::new(),
    }
}

fn names(s: &[&SetupFigures]) -> String {
    s.iter()
        .map(|s| s.setup.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The counters that differ between two setups (by more than 10% and 0.02
/// per I/O), which explain the difference.
pub fn evidence(chosen: &SetupFigures, base: &SetupFigures) -> Vec<EvidenceLine> {
    EVIDENCE
        .iter()
        .filter_map(|(key, meaning)| {
            let a = *chosen.counters.get(*key)?;
            let b = *base.counters.get(*key)?;
            let scale = a.abs().max(b.abs());
            ((a - b).abs() > 0.02 && (a - b).abs() > 0.1 * scale).then(|| EvidenceLine {
                counter: key.to_string(),
                meaning: meaning.to_string(),
                recommended: a,
                baseline: b,
            })
        })
        .collect()
}

/// Warnings about the results themselves: one repeat (no spread), or
/// setups measured on different shapes.
pub fn result_warnings(setups: &[SetupFigures]) -> Vec<String> {
    let mut w = Vec::new();
    let few: Vec<&str> = setups
        .iter()
        .filter(|s| s.repeats < 3)
        .map(|s| s.setup.as_str())
        .collect();
    if !few.is_empty() {
        w.push(format!(
            "{} measured with fewer than 3 repeats: no difference from them can be measured, so they tie with the best and the simplest setup is recommended; run 3 repeats or more (5 for the 0.05 level)",
            few.join(", ")
        ));
    }
    let mut shapes: Vec<&str> = setups.iter().map(|s| s.shape.as_str()).collect();
    shapes.sort();
    shapes.dedup();
    if shapes.len() > 1 {
        w.push(format!(
            "the setups were measured on different I/O shapes ({}): the ranking compares shapes as well as setups",
            shapes.join("; ")
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(name: &str, knobs: &[&str], iops: &[f64]) -> SetupFigures {
        let knobs: Vec<String> = knobs.iter().map(|s| s.to_string()).collect();
        SetupFigures {
            setup: name.into(),
            engine: "uring".into(),
            complexity: complexity(&knobs),
            knobs,
            flags: vec![],
            repeats: iops.len(),
            iops: Range::of(iops).unwrap(),
            lat_ns_p50: None,
            lat_ns_p99: None,
            cpu_us_per_op: None,
            counters: BTreeMap::new(),
            diagnoses: vec![],
            goal_interval: None,
            vs_best: None,
            samples: Samples {
                iops: iops.to_vec(),
                ..Default::default()
            },
            shape: String::new(),
            config: Default::default(),
        }
    }

    #[test]
    fn range_takes_min_median_max() {
        assert_eq!(
            Range::of(&[3.0, 1.0, 2.0]),
            Some(Range {
                min: 1.0,
                median: 2.0,
                max: 3.0
            })
        );
        assert_eq!(Range::of(&[1.0, 4.0]).unwrap().median, 2.5);
        assert!(Range::of(&[]).is_none());
    }

    #[test]
    fn a_clear_winner_is_recommended() {
        let ranked = rank(
            Goal::Iops,
            vec![
                fig("bare", &[], &[100.0, 101.0, 102.0]),
                fig("sqpoll", &["sqpoll"], &[150.0, 151.0, 155.0]),
            ],
        );
        assert_eq!(ranked[0].setup, "sqpoll");
        let r = recommend(Goal::Iops, &ranked);
        assert_eq!(r.setup, "sqpoll");
        assert!(!r.within_noise);
        assert_eq!(r.baseline.as_deref(), Some("bare"));
    }

    #[test]
    fn where_no_difference_was_measured_the_simplest_setup_wins() {
        // Overlapping repeats: the interval holds 1.
        let ranked = rank(
            Goal::Iops,
            vec![
                fig("bare", &[], &[100.0, 104.0, 110.0]),
                fig(
                    "defer",
                    &["coop-taskrun", "single-issuer", "defer-taskrun"],
                    &[103.0, 108.0, 112.0],
                ),
            ],
        );
        let r = recommend(Goal::Iops, &ranked);
        assert_eq!(r.best_measured, "defer");
        assert_eq!(r.setup, "bare");
        assert!(r.within_noise);
        assert_eq!(r.tied, ["defer", "bare"]);
        assert!(
            r.why
                .starts_with("no difference measured between defer and bare by iops (bare: -"),
            "{}",
            r.why
        );
        assert!(r.why.contains("the secondary rule"), "{}", r.why);
        // Every ranked setup but the best carries its interval and p.
        let v = ranked[1].vs_best.as_ref().unwrap();
        assert!(!v.differs && v.interval.contains(1.0), "{v:?}");
        assert!(v.text().starts_with("~ -"), "{}", v.text());
        assert!(ranked[0].goal_interval.is_some());
        // Wholly separated but 2 repeats a side: no difference can be
        // measured, so the simplest is recommended.
        let ranked = rank(
            Goal::Iops,
            vec![
                fig("bare", &[], &[100.0, 100.5]),
                fig("coop", &["coop-taskrun"], &[106.5, 107.0]),
            ],
        );
        assert_eq!(recommend(Goal::Iops, &ranked).setup, "bare");
        // 3 a side, wholly separated: a difference, the winner stands.
        let ranked = rank(
            Goal::Iops,
            vec![
                fig("bare", &[], &[100.0, 100.5, 101.0]),
                fig("coop", &["coop-taskrun"], &[106.5, 107.0, 107.5]),
            ],
        );
        let r = recommend(Goal::Iops, &ranked);
        assert_eq!(r.setup, "coop");
        assert!(!r.within_noise);
        assert!(
            r.why
                .contains("a difference from it was measured for every other setup (bare: -6"),
            "{}",
            r.why
        );
        // 5 a side, 3% apart and separated: a difference (the old 5% rule
        // called it noise); the same sets interleaved: none.
        let ranked = rank(
            Goal::Iops,
            vec![
                fig("bare", &[], &[100.0, 100.2, 100.4, 100.6, 100.8]),
                fig(
                    "coop",
                    &["coop-taskrun"],
                    &[103.0, 103.2, 103.4, 103.6, 103.8],
                ),
            ],
        );
        assert_eq!(recommend(Goal::Iops, &ranked).setup, "coop");
        let ranked = rank(
            Goal::Iops,
            vec![
                fig("bare", &[], &[100.0, 103.2, 100.4, 103.6, 100.8]),
                fig(
                    "coop",
                    &["coop-taskrun"],
                    &[103.0, 100.2, 103.4, 100.6, 103.8],
                ),
            ],
        );
        let r = recommend(Goal::Iops, &ranked);
        assert_eq!(r.setup, "bare");
        assert!(
            r.why.contains("p=1.000") || r.why.contains("p=0."),
            "{}",
            r.why
        );
    }

    #[test]
    fn lower_is_better_for_cpu_and_libaio_is_only_a_reference_named_in_why() {
        let cpu = |s: &mut SetupFigures, v: &[f64]| {
            s.cpu_us_per_op = Range::of(v);
            s.samples.cpu = v.to_vec();
        };
        let mut a = fig("bare", &[], &[100.0]);
        cpu(&mut a, &[10.0, 11.0, 10.5]);
        let mut b = fig("coop", &["coop-taskrun"], &[100.0]);
        cpu(&mut b, &[5.0, 6.0, 5.5]);
        let mut c = fig("libaio", &[], &[100.0]);
        c.engine = "libaio".into();
        cpu(&mut c, &[1.0, 1.5, 1.2]);
        let ranked = rank(Goal::Cpu, vec![a, b, c]);
        assert_eq!(ranked[0].setup, "libaio");
        let r = recommend(Goal::Cpu, &ranked);
        assert_eq!(r.setup, "coop");
        assert!(
            r.why.contains(
                "the libaio reference (libaio) measured better than every io_uring setup by cpu"
            ),
            "{}",
            r.why
        );
    }

    #[test]
    fn evidence_lists_counters_that_differ() {
        let mut a = fig("coop", &["coop-taskrun"], &[1.0]);
        let mut b = fig("bare", &[], &[1.0]);
        a.counters.insert("reschedule_ipis_per_op".into(), 0.0);
        b.counters.insert("reschedule_ipis_per_op".into(), 0.3);
        a.counters.insert("io_uring_enter_per_op".into(), 0.13);
        b.counters.insert("io_uring_enter_per_op".into(), 0.125);
        let e = evidence(&a, &b);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].counter, "reschedule_ipis_per_op");
    }

    #[test]
    fn only_setups_of_the_best_ones_shape_compete_with_it() {
        let mut deep = fig(
            "coop-taskrun=true iodepth=16",
            &["coop-taskrun"],
            &[300.0, 310.0, 305.0],
        );
        deep.shape = "iodepth=16".into();
        let mut deep_bare = fig("coop-taskrun=false iodepth=16", &[], &[100.0, 110.0, 105.0]);
        deep_bare.shape = "iodepth=16".into();
        // Overlaps the best's range, but on another shape: not a tie.
        let mut shallow = fig("coop-taskrun=false iodepth=1", &[], &[290.0, 305.0, 300.0]);
        shallow.shape = "iodepth=1".into();
        let ranked = rank(Goal::Iops, vec![shallow, deep_bare, deep]);
        let r = recommend(Goal::Iops, &ranked);
        assert_eq!(r.setup, "coop-taskrun=true iodepth=16");
        assert!(!r.within_noise);
        assert_eq!(r.baseline.as_deref(), Some("coop-taskrun=false iodepth=16"));
    }

    #[test]
    fn group_names_read_the_setup_axis_or_all_axes() {
        let mut v = serde_json::Map::new();
        v.insert("setup".into(), Json::from("coop"));
        assert_eq!(group_name(&v), "coop");
        v.insert("iodepth".into(), Json::from(8));
        assert_eq!(group_name(&v), "iodepth=8 setup=coop");
    }
}
