//! The studies' guidelines, one record each: which setups it compares, on
//! which figure (latency for a latency guideline, whatever the goal), what
//! it expects, and the verdict on this machine from the ratio's 95% interval
//! over the repeats: confirmed, contradicted, no difference measured (the
//! interval holds 1), inconclusive (an equality whose interval crosses its
//! zone's edge), or not tested and why.

use super::rank::SetupFigures;
use ringlab_stats::effect::{percent_with_interval, Effect, Interval};
use serde::Serialize;

/// The figure a guideline is about.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum About {
    Throughput,
    /// Median latency (p50).
    Latency,
}

impl About {
    fn name(self) -> &'static str {
        match self {
            About::Throughput => "IOPS",
            About::Latency => "p50 latency",
        }
    }

    fn values(self, s: &SetupFigures) -> &[f64] {
        match self {
            About::Throughput => &s.samples.iops,
            About::Latency => &s.samples.p50,
        }
    }

    fn higher_is_better(self) -> bool {
        self == About::Throughput
    }
}

/// What a guideline expects of its subject against the reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Expect {
    /// Better on the figure.
    Better,
    /// Better, or at worst equal (never a loss).
    BetterOrEqual,
    /// Within +- the zone of the reference.
    Equal(f64),
}

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
    pub about: About,
    pub expect: Expect,
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
        about: About::Throughput,
        expect: Expect::BetterOrEqual,
    },
    Guideline {
        id: "registered-files",
        study: "seed 000, guideline 2",
        text: "registered files should always be used: a slight gain in throughput and latency, never a loss",
        subject: |s| only(s, &["fixed-files"]),
        reference: bare,
        about: About::Throughput,
        expect: Expect::BetterOrEqual,
    },
    Guideline {
        id: "force-async",
        study: "seed 000, guideline 3",
        text: "IOSQE_ASYNC can raise throughput when cores are idle or requests would block on a lock, and costs CPU in CPU-bound applications",
        subject: |s| only(s, &["force-async"]),
        reference: bare,
        about: About::Throughput,
        expect: Expect::Better,
    },
    Guideline {
        id: "sqpoll",
        study: "seed 000, guideline 4; seed 002 (iou+k)",
        text: "SQ polling gives lower latency and comparable throughput, at the price of a core for the poller",
        subject: |s| has(s, "sqpoll") && !has(s, "attach-wq"),
        reference: bare,
        about: About::Latency,
        expect: Expect::Better,
    },
    Guideline {
        id: "polling-is-key",
        study: "seed 002 (libaio/SPDK/io_uring paper), lesson 2",
        text: "the default ring (iou) is consistently the worst io_uring configuration; polling (iou+p, iou+k) is what unlocks io_uring",
        subject: |s| has(s, "iopoll") || (has(s, "sqpoll") && !has(s, "attach-wq")),
        reference: bare,
        about: About::Throughput,
        expect: Expect::Better,
    },
    Guideline {
        id: "shared-sqpoll",
        study: "seed 003 (SQPOLL shared pollers report)",
        text: "with several rings, one poller shared through ATTACH_WQ does the work of one poller per ring with fewer cores",
        subject: |s| has(s, "sqpoll") && has(s, "attach-wq"),
        reference: |s| has(s, "sqpoll") && !has(s, "attach-wq"),
        about: About::Throughput,
        expect: Expect::Equal(0.1),
    },
    Guideline {
        id: "few-gains-over-aio",
        study: "seed 004 (ScyllaDB article)",
        text: "over a good linux-aio implementation the gains of io_uring are few, coming mostly from registered files and buffers and the poll ring",
        subject: bare,
        reference: |s| s.engine == "libaio",
        about: About::Throughput,
        expect: Expect::Equal(0.15),
    },
];

/// A guideline checked on this machine.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub id: String,
    pub study: String,
    pub guideline: String,
    /// `confirmed`, `contradicted`, `no difference measured`,
    /// `inconclusive` or `not tested`.
    pub verdict: String,
    pub detail: String,
    /// The figure it was judged on.
    pub metric: Option<String>,
    /// subject / reference on that figure, its 95% interval and p-value.
    pub ratio: Option<f64>,
    pub interval: Option<Interval>,
    pub p_value: Option<f64>,
}

/// Checks every guideline against the measured setups, each on its own
/// figure.
pub fn check(setups: &[SetupFigures]) -> Vec<Verdict> {
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
            let mut v = Verdict {
                id: g.id.to_string(),
                study: g.study.to_string(),
                guideline: g.text.to_string(),
                verdict: "not tested".to_string(),
                detail: "the setups it compares were not both measured (skipped for this shape or device, or absent from the results)".to_string(),
                metric: None,
                ratio: None,
                interval: None,
                p_value: None,
            };
            if let Some((a, b)) = pair {
                judge(g, a, b, &mut v);
            }
            v
        })
        .collect()
}

fn judge(g: &Guideline, a: &SetupFigures, b: &SetupFigures, v: &mut Verdict) {
    v.metric = Some(g.about.name().to_string());
    let Some(e) = Effect::of(g.about.values(a), g.about.values(b)) else {
        v.detail = format!(
            "no {} figure for {} or {}",
            g.about.name(),
            a.setup,
            b.setup
        );
        return;
    };
    v.ratio = Some(e.ratio);
    v.interval = Some(e.interval);
    v.p_value = Some(e.p_value);
    // How much better the subject is: > 1 better, whichever way the
    // figure points.
    let good = if g.about.higher_is_better() {
        e.interval
    } else {
        Interval {
            lo: 1.0 / e.interval.hi,
            hi: 1.0 / e.interval.lo,
        }
    };
    // Better or worse only where a difference was measured (the one rule
    // of the statistics layer, as in the ranking); else no difference.
    let verdict = match g.expect {
        Expect::Better | Expect::BetterOrEqual if e.differs() && good.lo > 1.0 => "confirmed",
        Expect::Better | Expect::BetterOrEqual if e.differs() && good.hi < 1.0 => "contradicted",
        Expect::Better | Expect::BetterOrEqual => "no difference measured",
        Expect::Equal(z) if e.interval.lo >= 1.0 - z && e.interval.hi <= 1.0 + z => "confirmed",
        Expect::Equal(z) if e.interval.hi < 1.0 - z || e.interval.lo > 1.0 + z => "contradicted",
        Expect::Equal(_) => "inconclusive",
    };
    let zone = match g.expect {
        Expect::Equal(z) => format!(", equal within +-{:.0}%", z * 100.0),
        _ => String::new(),
    };
    v.verdict = verdict.to_string();
    v.detail = format!(
        "{} of {} vs {}: {} (95% interval over {}+{} repeats, p = {:.3}{zone}){}",
        g.about.name(),
        a.setup,
        b.setup,
        percent_with_interval(e.ratio, e.interval),
        e.n_a,
        e.n_b,
        e.p_value,
        if verdict == "no difference measured" {
            ": no difference measured (~)"
        } else {
            ""
        }
    );
}

#[cfg(test)]
mod tests {
    use super::super::rank::{Range, Samples};
    use super::*;

    fn setup(name: &str, engine: &str, knobs: &[&str], iops: &[f64], p50: &[f64]) -> SetupFigures {
        SetupFigures {
            setup: name.into(),
            engine: engine.into(),
            knobs: knobs.iter().map(|k| k.to_string()).collect(),
            flags: vec![],
            complexity: 0,
            repeats: iops.len(),
            iops: Range::of(iops).unwrap(),
            lat_ns_p50: Range::of(p50),
            lat_ns_p99: None,
            cpu_us_per_op: None,
            counters: Default::default(),
            diagnoses: vec![],
            goal_interval: None,
            vs_best: None,
            samples: Samples {
                iops: iops.to_vec(),
                p50: p50.to_vec(),
                ..Default::default()
            },
            shape: String::new(),
            config: Default::default(),
        }
    }

    fn verdict_of<'a>(v: &'a [Verdict], id: &str) -> &'a Verdict {
        v.iter().find(|g| g.id == id).unwrap()
    }

    #[test]
    fn each_guideline_is_judged_on_its_own_figure_with_an_interval() {
        let same = [100.0, 101.0, 99.0, 100.5, 99.5];
        let lat = [50.0, 51.0, 49.0, 50.5, 49.5];
        let setups = vec![
            setup("iou", "uring", &[], &same, &lat),
            // A tie on IOPS: "no difference measured", never "confirmed".
            setup(
                "coop",
                "uring",
                &["coop-taskrun"],
                &[100.5, 99.0, 101.0, 100.0, 99.8],
                &lat,
            ),
            // SQPOLL: more IOPS but worse latency: judged on latency.
            setup(
                "sqpoll",
                "uring",
                &["sqpoll"],
                &[150.0, 151.0, 149.0, 150.5, 149.5],
                &[80.0, 81.0, 79.0, 80.5, 79.5],
            ),
            // linux-aio twice as fast: io_uring at -50% is no "few gains".
            setup(
                "aio",
                "libaio",
                &[],
                &[200.0, 201.0, 199.0, 200.5, 199.5],
                &lat,
            ),
        ];
        let v = check(&setups);
        let coop = verdict_of(&v, "coop-taskrun");
        assert_eq!(coop.verdict, "no difference measured", "{}", coop.detail);
        assert!(coop.interval.unwrap().contains(1.0));
        let sq = verdict_of(&v, "sqpoll");
        assert_eq!(sq.metric.as_deref(), Some("p50 latency"));
        assert_eq!(sq.verdict, "contradicted", "{}", sq.detail);
        let aio = verdict_of(&v, "few-gains-over-aio");
        assert_eq!(aio.verdict, "contradicted", "{}", aio.detail);
        assert!(aio.detail.contains("-50"), "{}", aio.detail);
        assert_eq!(verdict_of(&v, "shared-sqpoll").verdict, "not tested");
    }
}
