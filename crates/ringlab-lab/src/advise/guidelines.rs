//! The studies' guidelines, one record each: which setups it compares, what
//! it expects, and the verdict on this machine (confirmed, contradicted,
//! inside the noise, or not tested and why).

use super::rank::{within_noise, SetupFigures};
use super::Goal;
use serde::Serialize;

/// One guideline of the seeds.
pub struct Guideline {
    pub id: &'static str,
    /// The study (`seed 000, §7.2`).
    pub study: &'static str,
    pub text: &'static str,
    /// The setup the guideline is about, by its knobs.
    pub subject: fn(&SetupFigures) -> bool,
    /// What it is compared with.
    pub reference: fn(&SetupFigures) -> bool,
    /// The guideline expects `subject` to be at least as good as `reference`.
    pub expects_better: bool,
    /// A tie is what the guideline says (e.g. "harmless").
    pub tie_confirms: bool,
}

fn has(s: &SetupFigures, knob: &str) -> bool {
    s.knobs.iter().any(|k| k == knob)
}

fn only(s: &SetupFigures, knobs: &[&str]) -> bool {
    s.engine == "uring" && s.knobs.len() == knobs.len() && knobs.iter().all(|k| has(s, k))
}

fn bare(s: &SetupFigures) -> bool {
    s.engine == "uring" && s.knobs.is_empty()
}

pub static GUIDELINES: &[Guideline] = &[
    Guideline {
        id: "coop-taskrun",
        study: "seed 000 (io_uring configuration thesis), guideline 1",
        text: "COOP_TASKRUN gives higher throughput and lower latency when the device has fewer queues than the host has CPUs, and is otherwise harmless (unless completions are reaped on another thread)",
        subject: |s| only(s, &["coop-taskrun"]),
        reference: bare,
        expects_better: true,
        tie_confirms: true,
    },
    Guideline {
        id: "registered-files",
        study: "seed 000, guideline 2",
        text: "registered files should always be used: a slight gain in throughput and latency, never a loss",
        subject: |s| only(s, &["fixed-files"]),
        reference: bare,
        expects_better: true,
        tie_confirms: true,
    },
    Guideline {
        id: "force-async",
        study: "seed 000, guideline 3",
        text: "IOSQE_ASYNC can raise throughput when cores are idle or requests would block on a lock, and costs CPU in CPU-bound applications",
        subject: |s| only(s, &["force-async"]),
        reference: bare,
        expects_better: true,
        tie_confirms: false,
    },
    Guideline {
        id: "sqpoll",
        study: "seed 000, guideline 4; seed 002 (iou+k)",
        text: "SQ polling gives lower latency and comparable throughput, at the price of a core for the poller",
        subject: |s| has(s, "sqpoll") && !has(s, "attach-wq"),
        reference: bare,
        expects_better: true,
        tie_confirms: false,
    },
    Guideline {
        id: "polling-is-key",
        study: "seed 002 (libaio/SPDK/io_uring paper), lesson 2",
        text: "the default ring (iou) is consistently the worst io_uring configuration; polling (iou+p, iou+k) is what unlocks io_uring",
        subject: |s| has(s, "iopoll") || (has(s, "sqpoll") && !has(s, "attach-wq")),
        reference: bare,
        expects_better: true,
        tie_confirms: false,
    },
    Guideline {
        id: "shared-sqpoll",
        study: "seed 003 (SQPOLL shared pollers report)",
        text: "with several rings, one poller shared through ATTACH_WQ does the work of one poller per ring with fewer cores",
        subject: |s| has(s, "sqpoll") && has(s, "attach-wq"),
        reference: |s| has(s, "sqpoll") && !has(s, "attach-wq"),
        expects_better: true,
        tie_confirms: true,
    },
    Guideline {
        id: "few-gains-over-aio",
        study: "seed 004 (ScyllaDB article)",
        text: "over a good linux-aio implementation the gains of io_uring are few, coming mostly from registered files and buffers and the poll ring",
        subject: bare,
        reference: |s| s.engine == "libaio",
        expects_better: false,
        tie_confirms: true,
    },
];

/// A guideline checked on this machine.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub id: String,
    pub study: String,
    pub guideline: String,
    /// `confirmed`, `contradicted`, `inside the noise` or `not tested`.
    pub verdict: String,
    pub detail: String,
}

/// Checks every guideline against the measured setups by the goal.
pub fn check(goal: Goal, setups: &[SetupFigures]) -> Vec<Verdict> {
    GUIDELINES
        .iter()
        .map(|g| {
            // The first pair measured on one I/O shape.
            let pair = setups.iter().filter(|s| (g.subject)(s)).find_map(|a| {
                setups
                    .iter()
                    .find(|b| (g.reference)(b) && b.shape == a.shape)
                    .map(|b| (a, b))
            });
            let (verdict, detail) = match pair {
                Some((a, b)) => judge(goal, g, a, b),
                None => (
                    "not tested",
                    "the setups it compares were not both measured (skipped for this shape or device, or absent from the results)".to_string(),
                ),
            };
            Verdict {
                id: g.id.to_string(),
                study: g.study.to_string(),
                guideline: g.text.to_string(),
                verdict: verdict.to_string(),
                detail,
            }
        })
        .collect()
}

fn judge(goal: Goal, g: &Guideline, a: &SetupFigures, b: &SetupFigures) -> (&'static str, String) {
    let (Some(x), Some(y)) = (
        super::rank::goal_range(goal, a),
        super::rank::goal_range(goal, b),
    ) else {
        return (
            "not tested",
            format!("no {} figure for {} or {}", goal.name(), a.setup, b.setup),
        );
    };
    let detail = format!(
        "{} {} median {:.4} vs {} {:.4} ({}{:.1}%)",
        goal.name(),
        a.setup,
        x.median,
        b.setup,
        y.median,
        if x.median >= y.median { "+" } else { "" },
        if y.median != 0.0 {
            (x.median - y.median) * 100.0 / y.median
        } else {
            0.0
        }
    );
    if within_noise(goal, a, b) {
        let v = if g.tie_confirms {
            "confirmed"
        } else {
            "inside the noise"
        };
        return (v, format!("{detail}: inside the noise"));
    }
    let a_better = if goal == Goal::Iops {
        x.median > y.median
    } else {
        x.median < y.median
    };
    let v = if a_better == g.expects_better {
        "confirmed"
    } else {
        "contradicted"
    };
    (v, detail)
}
