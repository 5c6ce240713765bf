//! Knob evidence: for each io_uring knob a run asked for, whether the
//! kernel's counters show it in effect. A knob that shows no effect is
//! reported as such, not hidden (the thesis artifact ran an "SQPOLL"
//! configuration whose engine ignored the flag).

use crate::plan::IoPlan;
use ringlab_core::uring::knobs::{Kind, KNOBS};
use ringlab_stats::{KnobEvidence, KstatReport};

/// The evidence lines for the kernel knobs of `plan`, in table order: a
/// counter's verdict where one decides, otherwise the table's word on what
/// would show it ("not decidable").
pub fn knob_evidence(plan: &IoPlan, r: &KstatReport) -> Vec<KnobEvidence> {
    let o = &plan.uring;
    let decided = counter_evidence(plan, r);
    let mut out = Vec::new();
    for k in KNOBS.iter().filter(|k| k.is_on(o)) {
        if matches!(k.kind, Kind::Preset | Kind::Ringlab | Kind::SetupParam) {
            continue;
        }
        let flag = format!("--{}", k.flag);
        match decided
            .iter()
            .position(|e| e.knob.split('=').next() == Some(&flag))
        {
            Some(i) => out.push(decided[i].clone()),
            None => out.push(KnobEvidence {
                knob: flag,
                in_effect: None,
                detail: k.evidence.to_string(),
            }),
        }
    }
    out
}

/// The knobs a counter can decide.
fn counter_evidence(plan: &IoPlan, r: &KstatReport) -> Vec<KnobEvidence> {
    let o = &plan.uring;
    let per = |k: &str| r.per_op.get(k).copied();
    let mut out = Vec::new();
    let mut line = |knob: &str, in_effect: Option<bool>, detail: String| {
        out.push(KnobEvidence {
            knob: knob.to_string(),
            in_effect,
            detail,
        })
    };
    let missing = |c: &str| {
        r.unavailable
            .iter()
            .find(|u| u.counter.ends_with(c))
            .map_or_else(
                || format!("{c} not counted"),
                |u| format!("{c} unavailable: {}", u.reason),
            )
    };
    if o.sqpoll {
        let pollers: Vec<_> = r
            .helper_threads
            .iter()
            .filter(|h| h.name.starts_with("iou-sqp"))
            .collect();
        let cpu: u64 = pollers.iter().filter_map(|h| h.cpu_ns).sum();
        let enter = per("io_uring_enter_per_op");
        let found = !pollers.is_empty() && cpu > 0;
        let enter_text = enter.map_or_else(
            || missing("sys_enter_io_uring_enter"),
            |e| format!("io_uring_enter {e:.3}/op"),
        );
        line(
            "--sqpoll",
            Some(found),
            if found {
                format!(
                    "{} poller thread{} used {:.1} ms CPU; {enter_text}{}",
                    pollers.len(),
                    if pollers.len() == 1 { "" } else { "s" },
                    cpu as f64 / 1e6,
                    if enter.is_some_and(|e| e > 0.05) {
                        " (the job still enters the kernel to wait: --reap wait or peek)"
                    } else {
                        ""
                    }
                )
            } else {
                format!("no iou-sqp thread with CPU time was seen; {enter_text}")
            },
        );
    }
    if o.fixed_files {
        let v = per("io_uring_file_get_per_op");
        line(
            "--fixed-files",
            v.map(|f| f < 0.01),
            v.map_or_else(
                || missing("io_uring_file_get"),
                |f| format!("file lookups {f:.3}/op (about 1 without --fixed-files)"),
            ),
        );
    }
    if o.force_async > 0 {
        let v = per("io_uring_queue_async_work_per_op");
        let expect = 1.0 / o.force_async as f64;
        line(
            &if o.force_async == 1 {
                "--force-async".to_string()
            } else {
                format!("--force-async={}", o.force_async)
            },
            v.map(|a| a >= 0.8 * expect),
            v.map_or_else(
                || missing("io_uring_queue_async_work"),
                |a| format!("io-wq offloads {a:.3}/op (expected {expect:.3})"),
            ),
        );
    }
    if o.defer_taskrun {
        let local = per("io_uring_local_work_run_per_op");
        let tw = per("io_uring_task_work_run_per_op");
        line(
            "--defer-taskrun",
            local.map(|l| l > 0.0 && tw.is_none_or(|t| t < l)),
            match (local, tw) {
                (Some(l), Some(t)) => {
                    format!("deferred (local) task work runs {l:.3}/op, normal task work {t:.3}/op")
                }
                _ => missing("io_uring_local_work_run"),
            },
        );
    }
    if o.coop_taskrun {
        let ipis = per("reschedule_ipis_per_op");
        let tw = per("io_uring_task_work_run_per_op");
        line(
            "--coop-taskrun",
            None,
            match (ipis, tw) {
                (Some(i), Some(t)) => format!(
                    "rescheduling IPIs {i:.3}/op, task work runs {t:.3}/op (no counter separates the IPIs COOP_TASKRUN avoids from wake-up IPIs; compare with a run without it)"
                ),
                _ => missing("reschedule_entry"),
            },
        );
    }
    for (on, flag) in [(o.iopoll, "--iopoll"), (o.hybrid_iopoll, "--hybrid-iopoll")] {
        if !on {
            continue;
        }
        let dev = per("device_interrupts_per_op");
        line(
            flag,
            dev.map(|d| d < 0.01),
            dev.map_or_else(
                || "the device's interrupt vectors were not found (virtual device?)".to_string(),
                |d| format!("device interrupts {d:.3}/op (polled I/O raises none)"),
            ),
        );
    }
    if o.fixed_buffers {
        line(
            "--fixed-buffers",
            None,
            "no tracepoint shows buffer pinning; registration succeeded and READ_FIXED/WRITE_FIXED were used".to_string(),
        );
    }
    out
}
