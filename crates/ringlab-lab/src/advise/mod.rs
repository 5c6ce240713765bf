//! `ringlab advise`: from a short calibration on the user's own target (or
//! results already on disk) to the io_uring setup to deploy, with the
//! evidence for the choice.
//!
//! - [`choose_setups`]: which setups matter for the I/O shape on this kernel
//!   and device, and why the others are skipped;
//! - [`calibrate`]: runs them as a sweep (repeated, shuffled, pinned) within
//!   the budget, in the sweep store layout;
//! - [`rank`]: groups results by setup, ranks them by the goal with min-max
//!   over repeats and each against the best (ratio, 95% interval, p), and
//!   where no difference from the best was measured picks the simplest;
//! - [`guidelines`]: the studies' guidelines, checked against the ranking;
//! - [`render`]: text, and the recommendation as `ringlab io` flags, fio
//!   options and a liburing snippet.

pub mod calibrate;
pub mod guidelines;
pub mod knobs;
pub mod rank;
pub mod render;

use serde::Serialize;

/// What the advice optimises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Goal {
    /// Most I/O per second.
    Iops,
    /// Lowest p99 latency.
    Latency,
    /// Least CPU time per I/O, kernel helper threads included.
    Cpu,
}

impl Goal {
    pub fn name(self) -> &'static str {
        match self {
            Goal::Iops => "iops",
            Goal::Latency => "latency",
            Goal::Cpu => "cpu",
        }
    }
}

/// The application's I/O shape, in `ringlab io`'s words.
#[derive(Clone, Debug, Serialize)]
pub struct Shape {
    pub rw: String,
    pub bs: String,
    pub iodepth: u32,
    pub threads: u32,
    pub direct: bool,
}

impl Shape {
    pub fn writes(&self) -> bool {
        self.rw.contains("write") || self.rw == "rw" || self.rw == "randrw"
    }
}

/// What this kernel and device support, found by `ringlab features`' code
/// (the binary fills it in).
#[derive(Clone, Debug, Default)]
pub struct Probe {
    /// Setup flag (ringlab flag name) -> whether this kernel accepts it.
    pub setup_flags: std::collections::BTreeMap<String, bool>,
    /// Poll queues of the device's driver; `None` where not known.
    pub poll_queues: Option<u32>,
    /// The device behind the target, for messages.
    pub device: Option<String>,
}

impl Probe {
    fn supports(&self, flag: &str) -> bool {
        self.setup_flags.get(flag).copied().unwrap_or(true)
    }
}

/// One io_uring setup advise can measure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Setup {
    pub name: String,
    /// `ringlab io` flags beyond the shape (`--engine uring --coop-taskrun`).
    pub flags: Vec<String>,
}

/// A setup left out, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skipped {
    pub setup: String,
    pub reason: String,
}

fn setup<S: AsRef<str>>(name: &str, flags: &[S]) -> Setup {
    Setup {
        name: name.to_string(),
        flags: flags.iter().map(|s| s.as_ref().to_string()).collect(),
    }
}

/// The flags of the bare io_uring ring (no setup flags, no registrations):
/// `--mode iou` leaves out the default ring's COOP_TASKRUN, SINGLE_ISSUER
/// and DEFER_TASKRUN. Every other setup adds its knobs to it, so that each
/// is measured against the same baseline.
pub fn bare_ring_flags() -> Vec<&'static str> {
    vec!["--engine", "uring", "--mode", "iou"]
}

/// The setups that matter for `shape` with the job threads on `cpus`, on
/// the kernel and device of `probe`; the others with the reason.
pub fn choose_setups(shape: &Shape, cpus: &[u32], probe: &Probe) -> (Vec<Setup>, Vec<Skipped>) {
    let mut take = Vec::new();
    let mut skip = Vec::new();
    let mut skipped = |name: &str, reason: String| {
        skip.push(Skipped {
            setup: name.to_string(),
            reason,
        })
    };
    let bare = bare_ring_flags();
    let with = |extra: &[&str]| -> Vec<String> {
        bare.iter()
            .chain(extra.iter())
            .map(|s| s.to_string())
            .collect()
    };
    take.push(setup("bare", &bare));
    let unsupported = |flag: &str| {
        format!(
            "this kernel refuses --{flag} ({}, Linux {})",
            knobs::kernel_name(flag).map_or("?", |k| k.0),
            knobs::kernel_name(flag).map_or("?", |k| k.1)
        )
    };
    if probe.supports("coop-taskrun") {
        take.push(setup("coop", &with(&["--coop-taskrun"])));
    } else {
        skipped("coop", unsupported("coop-taskrun"));
    }
    if !probe.supports("defer-taskrun") {
        skipped("defer", unsupported("defer-taskrun"));
    } else if !probe.supports("single-issuer") {
        skipped("defer", unsupported("single-issuer"));
    } else {
        // Each job thread owns its ring, so the single-issuer rule holds; the
        // advice says that the application's ring must be used so too.
        take.push(setup(
            "defer",
            &with(&["--coop-taskrun", "--single-issuer", "--defer-taskrun"]),
        ));
    }
    if shape.threads > 1 {
        take.push(setup("fixed-files", &with(&["--fixed-files"])));
    } else {
        skipped(
            "fixed-files",
            "one thread: its file table is not shared, so the lookup registered files save is already cheap (they matter with several threads in the process)".into(),
        );
    }
    if shape.direct {
        take.push(setup("fixed-buffers", &with(&["--fixed-buffers"])));
    } else {
        skipped(
            "fixed-buffers",
            "buffered I/O copies through the page cache; registered buffers save the page pinning of O_DIRECT only (add --direct if the application uses it)".into(),
        );
    }
    let spare: Vec<u32> = cpus.iter().copied().skip(shape.threads as usize).collect();
    let cpu_list = ringlab_core::cpus::format_cpu_list(cpus);
    match spare.first() {
        _ if !probe.supports("sqpoll") => skipped("sqpoll", unsupported("sqpoll")),
        None => skipped(
            "sqpoll",
            format!(
                "no spare CPU in --cpus {cpu_list} for the poller beside {} job thread(s): an SQPOLL thread needs a core of its own (seed 002, lesson 2)",
                shape.threads
            ),
        ),
        Some(cpu) => {
            let cpu = cpu.to_string();
            take.push(setup("sqpoll", &with(&["--sqpoll", "--sqpoll-cpu", &cpu])));
            if shape.threads > 1 {
                take.push(setup(
                    "sqpoll-shared",
                    &with(&["--sqpoll", "--attach-wq", "--sqpoll-cpu", &cpu])));
            }
        }
    }
    if !shape.direct {
        skipped(
            "iopoll",
            "buffered I/O cannot be polled: IOPOLL needs --direct".into(),
        );
    } else if !probe.supports("iopoll") {
        skipped("iopoll", unsupported("iopoll"));
    } else if probe.poll_queues.unwrap_or(0) == 0 {
        skipped(
            "iopoll",
            format!(
                "the device{} has no poll queues (driver poll_queues {}), so polled requests fail",
                probe
                    .device
                    .as_deref()
                    .map(|d| format!(" {d}"))
                    .unwrap_or_default(),
                probe
                    .poll_queues
                    .map_or("unknown".to_string(), |n| n.to_string())
            ),
        );
    } else {
        take.push(setup("iopoll", &with(&["--iopoll"])));
    }
    let contention = shape.threads > 1 && shape.writes();
    if contention || !spare.is_empty() {
        take.push(setup("force-async", &with(&["--force-async"])));
    } else {
        skipped(
            "force-async",
            "no spare CPU for io-wq workers and no writers contending for one inode lock: IOSQE_ASYNC would only add a hop to a worker thread (seed 000)".into(),
        );
    }
    if shape.direct {
        // The reference the ScyllaDB article measured io_uring against.
        take.push(setup("libaio", &["--engine", "libaio"]));
    } else {
        skipped(
            "libaio",
            "Linux AIO is asynchronous for O_DIRECT only: no reference row without --direct".into(),
        );
    }
    (take, skip)
}

/// The advice, also the JSON of `advise --output-format json`
/// (schema/advise.schema.json).
#[derive(Clone, Debug, Serialize)]
pub struct Advice {
    pub format: &'static str,
    pub version: u32,
    /// `calibration` (advise ran the setups) or `results` (`--from`).
    pub source: String,
    /// The results directory the advice was drawn from.
    pub results_dir: String,
    pub goal: Goal,
    /// How ties with the best are decided and broken.
    pub tie_rule: &'static str,
    pub kernel: Option<String>,
    pub shape: serde_json::Map<String, serde_json::Value>,
    pub calibration: Option<rank::Calibration>,
    pub skipped: Vec<Skipped>,
    /// Setups best first by the goal.
    pub ranked: Vec<rank::SetupFigures>,
    pub recommendation: rank::Recommendation,
    pub guidelines: Vec<guidelines::Verdict>,
    pub warnings: Vec<String>,
}

/// Advice from results already on disk (`--from DIR`): a sweep directory,
/// advise's own saved calibration, or a `reproduce` output.
pub fn advise_from(dir: &std::path::Path, goal: Goal) -> anyhow::Result<Advice> {
    let dir = rank::find_results_dir(dir)?;
    // A calibration saved with --save keeps what it skipped and how it ran.
    let saved: serde_json::Value = crate::input::read_limited(&dir.join(SAVED_ADVICE), 16 << 20)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let skipped = saved["skipped"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| {
                    Some(Skipped {
                        setup: s["setup"].as_str()?.to_string(),
                        reason: s["reason"].as_str()?.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    build(&dir, goal, "results", skipped, None, Vec::new(), None)
}

/// The advice of a saved calibration, beside its results.
pub const SAVED_ADVICE: &str = "advise.json";

/// Runs the calibration of `req` and advises from it.
pub fn advise_calibrated(
    req: &calibrate::Request,
    probe: &Probe,
    goal: Goal,
    opts: &crate::sweep::SweepOptions,
) -> anyhow::Result<Advice> {
    let c = calibrate::calibrate(req, probe, opts)?;
    let shown_target = if c._cleanup.file.is_some() {
        // The file advise created is gone when the advice is read.
        "TARGET".to_string()
    } else {
        req.target.display().to_string()
    };
    let advice = build(
        &c.dir,
        goal,
        "calibration",
        c.skipped.clone(),
        Some(c.info.clone()),
        c.warnings.clone(),
        Some(shown_target),
    )?;
    if req.save.is_some() {
        let mut text = serde_json::to_string_pretty(&advice)?;
        text.push('\n');
        crate::store::write_atomic(&c.dir.join(SAVED_ADVICE), text.as_bytes())?;
    }
    Ok(advice)
}

fn build(
    dir: &std::path::Path,
    goal: Goal,
    source: &str,
    skipped: Vec<Skipped>,
    calibration: Option<rank::Calibration>,
    mut warnings: Vec<String>,
    shown_target: Option<String>,
) -> anyhow::Result<Advice> {
    let (groups, load_warnings) = rank::load_groups(dir)?;
    warnings.extend(load_warnings);
    let first = groups[0].1[0].clone();
    let setups: Vec<rank::SetupFigures> = groups
        .iter()
        .map(|(n, runs)| rank::summarise(n, runs))
        .collect();
    warnings.extend(rank::result_warnings(&setups));
    let ranked = rank::rank(goal, setups);
    let mut rec = rank::recommend(goal, &ranked);
    let target = shown_target.unwrap_or_else(|| {
        match (&first["config"]["target"], &first["config"]["directory"]) {
            (serde_json::Value::String(t), _) => t.clone(),
            // ringlab io created its file there.
            (_, serde_json::Value::String(d)) => format!("--directory {d}"),
            _ => String::new(),
        }
    });
    if let Some(chosen) = ranked.iter().find(|s| s.setup == rec.setup) {
        rec.ringlab_io = render::ringlab_io_line(chosen, &target);
        rec.fio = render::fio_line(chosen);
        rec.liburing = render::liburing_snippet(chosen);
    }
    let mut shape = serde_json::Map::new();
    for k in ["rw", "bs", "iodepth", "numjobs", "direct"] {
        shape.insert(k.to_string(), first["config"][k].clone());
    }
    Ok(Advice {
        format: "ringlab-advise",
        version: 1,
        source: source.to_string(),
        results_dir: dir.display().to_string(),
        goal,
        tie_rule: rank::TIE_RULE,
        kernel: first["host"]["kernel"].as_str().map(str::to_string),
        shape,
        calibration,
        skipped,
        guidelines: guidelines::check(&ranked),
        ranked,
        recommendation: rec,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(threads: u32, direct: bool, rw: &str) -> Shape {
        Shape {
            rw: rw.into(),
            bs: "4k".into(),
            iodepth: 8,
            threads,
            direct,
        }
    }

    fn names(s: &[Setup]) -> Vec<&str> {
        s.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn one_thread_buffered_on_one_cpu_keeps_the_cheap_setups() {
        let (take, skip) = choose_setups(&shape(1, false, "randread"), &[0], &Probe::default());
        assert_eq!(names(&take), ["bare", "coop", "defer"]);
        let why = |n: &str| skip.iter().find(|s| s.setup == n).unwrap().reason.clone();
        assert!(why("sqpoll").contains("no spare CPU"));
        assert!(why("iopoll").contains("--direct"));
        assert!(why("fixed-files").contains("one thread"));
        assert!(why("force-async").contains("no spare CPU"));
    }

    #[test]
    fn spare_cpu_threads_direct_and_poll_queues_add_setups() {
        let probe = Probe {
            poll_queues: Some(2),
            ..Probe::default()
        };
        let (take, _) = choose_setups(&shape(2, true, "randwrite"), &[0, 1, 2], &probe);
        assert_eq!(
            names(&take),
            [
                "bare",
                "coop",
                "defer",
                "fixed-files",
                "fixed-buffers",
                "sqpoll",
                "sqpoll-shared",
                "iopoll",
                "force-async",
                "libaio"
            ]
        );
        let sq = take.iter().find(|s| s.name == "sqpoll").unwrap();
        assert!(sq
            .flags
            .ends_with(&["--sqpoll".into(), "--sqpoll-cpu".into(), "2".into()]));
    }

    #[test]
    fn kernel_refusals_and_missing_poll_queues_are_skips_with_reasons() {
        let mut probe = Probe {
            poll_queues: Some(0),
            device: Some("nvme0n1".into()),
            ..Probe::default()
        };
        probe.setup_flags.insert("defer-taskrun".into(), false);
        let (take, skip) = choose_setups(&shape(1, true, "randread"), &[0, 1], &probe);
        assert!(!names(&take).contains(&"defer"));
        let reason = |n: &str| skip.iter().find(|s| s.setup == n).unwrap().reason.clone();
        assert!(reason("defer").contains("IORING_SETUP_DEFER_TASKRUN, Linux 6.1"));
        assert!(reason("iopoll").contains("nvme0n1 has no poll queues"));
    }
}
