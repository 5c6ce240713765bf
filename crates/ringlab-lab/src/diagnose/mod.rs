//! Diagnoses: short notes on one result, derived from its own kernel
//! evidence by named rules ([`rules::RULES`]), each with the figure that
//! triggered it and what to try. `ringlab io` and `ringlab http` attach
//! them to every result.

pub mod rules;

use ringlab_stats::{Diagnosis, RunResult};
use serde_json::Value as Json;

/// What the rules need to know about a run, read once from its result.
#[derive(Clone, Debug, Default)]
pub struct Ctx {
    pub uring: bool,
    pub depth: u64,
    pub threads: u64,
    pub sqpoll: bool,
    pub coop: bool,
    pub defer: bool,
    pub fixed_files: bool,
    pub force_async: bool,
    pub submit_batch: u64,
    pub completion_thread: bool,
    pub sqpoll_cpu_in_job_cpus: bool,
    pub per_op: std::collections::BTreeMap<String, f64>,
    /// Voluntary and involuntary context switches of the iou-sqp-* threads
    /// per I/O; `None` without a poller or its figures.
    pub sqpoll_voluntary_per_op: Option<f64>,
    pub sqpoll_involuntary_per_op: Option<f64>,
    /// p99 latency in ms when it is at least 8 times the median.
    pub tick_stall_ms: Option<f64>,
}

impl Ctx {
    pub fn per_op(&self, key: &str) -> Option<f64> {
        self.per_op.get(key).copied()
    }

    /// Reads the rule inputs from a result (`io` or `http`).
    pub fn of(r: &RunResult) -> Ctx {
        let cfg = &r.config;
        let flag = |k: &str| cfg.get(k).and_then(Json::as_bool).unwrap_or(false);
        let num = |k: &str| cfg.get(k).and_then(Json::as_u64).unwrap_or(0);
        let (uring, depth, threads) = if r.command == "http" {
            let io = cfg.get("io").and_then(Json::as_str).unwrap_or("");
            let t = num("threads").max(1);
            (io.starts_with("uring"), num("connections") / t, t)
        } else {
            let e = cfg.get("engine").and_then(Json::as_str).unwrap_or("");
            (e == "uring", num("iodepth"), num("numjobs").max(1))
        };
        let ops = r.total.ops;
        let sqpoll = flag("sqpoll") || cfg.get("mode").and_then(Json::as_str) == Some("iou+k");
        let job_cpus: Vec<u64> = cfg
            .get("cpus")
            .and_then(Json::as_array)
            .map(|a| a.iter().filter_map(Json::as_u64).collect())
            .unwrap_or_default();
        let sqpoll_cpu = cfg.get("sqpoll-cpu").and_then(Json::as_u64);
        let mut ctx = Ctx {
            uring,
            depth,
            threads,
            sqpoll,
            coop: flag("coop-taskrun"),
            defer: flag("defer-taskrun"),
            fixed_files: flag("fixed-files")
                || cfg.get("mode").and_then(Json::as_str) == Some("enhanced"),
            force_async: num("force-async") > 0,
            submit_batch: num("submit-batch"),
            completion_thread: cfg.get("completion-thread").is_some_and(|v| !v.is_null()),
            sqpoll_cpu_in_job_cpus: sqpoll_cpu.is_some_and(|c| job_cpus.contains(&c)),
            ..Ctx::default()
        };
        if let Some(k) = &r.kstat {
            ctx.per_op = k.per_op.clone();
            let sqp: Vec<_> = k
                .helper_threads
                .iter()
                .filter(|h| h.name.starts_with("iou-sqp"))
                .collect();
            if !sqp.is_empty() && ops > 0 {
                let sum = |f: fn(&ringlab_stats::HelperThread) -> Option<u64>| {
                    sqp.iter()
                        .map(|h| f(h))
                        .sum::<Option<u64>>()
                        .map(|n| n as f64 / ops as f64)
                };
                ctx.sqpoll_voluntary_per_op = sum(|h| h.ctx_voluntary);
                ctx.sqpoll_involuntary_per_op = sum(|h| h.ctx_involuntary);
            }
        }
        if let Some(lat) = &r.total.lat_ns {
            if lat.p50 > 0 && lat.p99 >= 8 * lat.p50 {
                ctx.tick_stall_ms = Some(lat.p99 as f64 / 1e6);
            }
        }
        ctx
    }
}

/// The notes of every rule that fires on `r`, in rule order.
pub fn diagnose(r: &RunResult) -> Vec<Diagnosis> {
    let ctx = Ctx::of(r);
    rules::RULES
        .iter()
        .filter(|rule| (rule.applies)(&ctx))
        .filter_map(|rule| {
            let value = (rule.value)(&ctx)?;
            (value > rule.threshold).then(|| Diagnosis {
                rule: rule.name.to_string(),
                figure: rule.figure.to_string(),
                value,
                threshold: rule.threshold,
                message: rule
                    .message
                    .replace("{value}", &figure(value))
                    .replace("{cause}", (rule.cause)(&ctx)),
                try_next: rule.try_next.to_string(),
            })
        })
        .collect()
}

fn figure(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// The notes inserted into wrk-style text (`ringlab http`): as `ringlab:`
/// lines before the closing `Requests/sec:` and `Transfer/sec:` lines, so
/// that wrk's layout (and parsers of it) stay intact; at the end otherwise.
pub fn insert_into_wrk_text(text: &str, notes: &[Diagnosis]) -> String {
    if notes.is_empty() {
        return text.to_string();
    }
    let Some(at) = text.rfind("\nRequests/sec:") else {
        return text.to_string() + &render(notes);
    };
    let mut lines = String::new();
    for d in notes {
        lines.push_str(&format!(
            "  ringlab: diagnosis {}; try: {}\n",
            finding(d),
            d.try_next
        ));
    }
    format!("{}\n{lines}{}", &text[..at], &text[at + 1..])
}

/// The notes as text, a few lines at the end of a result; empty for none.
pub fn render(notes: &[Diagnosis]) -> String {
    if notes.is_empty() {
        return String::new();
    }
    let mut s = String::from("\nDiagnoses (from this run's kernel evidence):\n");
    for d in notes {
        s.push_str(&format!("  {}\n      try: {}\n", finding(d), d.try_next));
    }
    s
}

/// `[rule] figure = value (above threshold): message`, as both layouts say it.
fn finding(d: &Diagnosis) -> String {
    format!(
        "[{}] {} = {} (above {}): {}",
        d.rule,
        d.figure,
        figure(d.value),
        d.threshold,
        d.message
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A made-up io result: `config` and `per_op` over defaults.
    fn result(config: Json, per_op: Json, p50: u64, p99: u64) -> RunResult {
        let mut cfg = json!({"engine": "uring", "iodepth": 8, "numjobs": 1, "cpus": []});
        for (k, v) in config.as_object().unwrap() {
            cfg[k] = v.clone();
        }
        let lat = json!({"min": 1, "mean": 1.0, "stdev": 0.0, "p50": p50, "p90": p50,
            "p99": p99, "p99_9": p99, "p99_99": p99, "max": p99});
        let dir = json!({"ops": 0, "bytes": 0, "iops": 0.0, "bw_bytes_per_s": 0.0, "lat_ns": null});
        serde_json::from_value(json!({
            "schema_version": 1,
            "tool": {"name": "ringlab", "version": "0"},
            "command": "io",
            "started_at": "2026-11-23T00:00:00Z",
            "host": {"hostname": "h", "kernel": "6.8", "cpu_model": null, "cpus_online": 2, "io_uring_disabled": 0},
            "config": cfg,
            "target": null,
            "jobs": [],
            "total": {"elapsed_ns": 1_000_000_000u64, "ops": 1000, "bytes": 0, "iops": 1000.0,
                "bw_bytes_per_s": 0.0, "lat_ns": lat, "read": dir, "write": dir,
                "cpu_user_ns": 0, "cpu_sys_ns": 0, "ctx_voluntary": 0, "ctx_involuntary": 0,
                "verified_blocks": null},
            "warnings": [],
            "kstat": {"counters": {}, "sampled_counters": {}, "sampled_ops": 0, "unavailable": [],
                "per_op": per_op, "interrupts": null, "helper_threads": [],
                "helper_threads_created": 0, "evidence": []}
        }))
        .unwrap()
    }

    fn rules_fired(r: &RunResult) -> Vec<String> {
        diagnose(r).into_iter().map(|d| d.rule).collect()
    }

    #[test]
    fn iowq_offload_fires_above_threshold_and_names_forced_async() {
        let r = result(
            json!({"force-async": 1}),
            json!({"io_uring_queue_async_work_per_op": 1.0}),
            10,
            20,
        );
        let d = diagnose(&r);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].rule, "iowq-offload");
        assert_eq!(d[0].value, 1.0);
        assert!(d[0].message.contains("--force-async"), "{}", d[0].message);
        let r = result(
            json!({}),
            json!({"io_uring_queue_async_work_per_op": 0.5}),
            10,
            20,
        );
        assert!(diagnose(&r)[0].message.contains("NOWAIT"));
        // Borderline: at the threshold exactly, it does not fire.
        let r = result(
            json!({}),
            json!({"io_uring_queue_async_work_per_op": 0.1}),
            10,
            20,
        );
        assert!(rules_fired(&r).is_empty());
        // Not io_uring: nothing.
        let r = result(
            json!({"engine": "libaio"}),
            json!({"io_uring_queue_async_work_per_op": 1.0}),
            10,
            20,
        );
        assert!(rules_fired(&r).is_empty());
    }

    #[test]
    fn enter_per_request_needs_depth_above_one_and_no_sqpoll() {
        let per_op = json!({"io_uring_enter_per_op": 1.0});
        assert_eq!(
            rules_fired(&result(json!({}), per_op.clone(), 10, 20)),
            ["enter-per-request"]
        );
        assert!(rules_fired(&result(json!({"iodepth": 1}), per_op.clone(), 10, 20)).is_empty());
        assert!(rules_fired(&result(json!({"sqpoll": true}), per_op.clone(), 10, 20)).is_empty());
        let batched = json!({"io_uring_enter_per_op": 0.13});
        assert!(rules_fired(&result(json!({}), batched, 10, 20)).is_empty());
        let r = result(json!({"submit-batch": 1}), per_op, 10, 20);
        assert!(diagnose(&r)[0].message.contains("--submit-batch 1"));
    }

    #[test]
    fn file_lookup_fires_only_with_threads_and_without_fixed_files() {
        let per_op = json!({"io_uring_file_get_per_op": 1.0});
        assert_eq!(
            rules_fired(&result(json!({"numjobs": 2}), per_op.clone(), 10, 20)),
            ["file-lookup-shared"]
        );
        assert!(rules_fired(&result(json!({"numjobs": 1}), per_op.clone(), 10, 20)).is_empty());
        assert!(rules_fired(&result(
            json!({"numjobs": 2, "fixed-files": true}),
            per_op,
            10,
            20
        ))
        .is_empty());
        let half = json!({"io_uring_file_get_per_op": 0.5});
        assert!(rules_fired(&result(json!({"numjobs": 2}), half, 10, 20)).is_empty());
    }

    #[test]
    fn ipis_fire_without_coop_only() {
        let per_op = json!({"reschedule_ipis_per_op": 0.3});
        assert_eq!(
            rules_fired(&result(json!({}), per_op.clone(), 10, 20)),
            ["ipi-without-coop"]
        );
        assert!(rules_fired(&result(
            json!({"coop-taskrun": true}),
            per_op.clone(),
            10,
            20
        ))
        .is_empty());
        assert!(rules_fired(&result(
            json!({}),
            json!({"reschedule_ipis_per_op": 0.05}),
            10,
            20
        ))
        .is_empty());
    }

    #[test]
    fn sqpoll_rules_read_the_poller_threads() {
        let mut r = result(
            json!({"sqpoll": true, "sqpoll-cpu": 1, "cpus": [1]}),
            json!({}),
            10,
            20,
        );
        let helper = |vol: u64, invol: u64| ringlab_stats::HelperThread {
            tid: 1,
            name: "iou-sqp-1".into(),
            cpu_ns: Some(1),
            ctx_voluntary: Some(vol),
            ctx_involuntary: Some(invol),
        };
        r.kstat.as_mut().unwrap().helper_threads = vec![helper(50, 20)];
        let d = diagnose(&r);
        let names: Vec<&str> = d.iter().map(|d| d.rule.as_str()).collect();
        assert_eq!(names, ["sqpoll-preempted", "sqpoll-wakeups"]);
        assert!(d[0].message.contains("one of the job's CPUs"));
        r.kstat.as_mut().unwrap().helper_threads = vec![helper(10, 1)];
        // 10/1000 = 0.01 wake-ups (at the threshold), 1/1000 preemptions (at it).
        assert!(rules_fired(&r).is_empty());
    }

    #[test]
    fn cq_overflow_fires_on_any_overflow() {
        let r = result(
            json!({}),
            json!({"io_uring_cqe_overflow_per_op": 0.001}),
            10,
            20,
        );
        assert_eq!(rules_fired(&r), ["cq-overflow"]);
        let r = result(
            json!({}),
            json!({"io_uring_cqe_overflow_per_op": 0.0}),
            10,
            20,
        );
        assert!(rules_fired(&r).is_empty());
    }

    #[test]
    fn tick_stalls_need_a_heavy_millisecond_tail() {
        let r = result(json!({}), json!({}), 100_000, 4_000_000);
        let d = diagnose(&r);
        assert_eq!(d[0].rule, "tick-stalls");
        assert_eq!(d[0].value, 4.0);
        // Heavy tail but under a millisecond, or a millisecond tail that is not heavy.
        assert!(rules_fired(&result(json!({}), json!({}), 10_000, 900_000)).is_empty());
        assert!(rules_fired(&result(json!({}), json!({}), 1_000_000, 4_000_000)).is_empty());
        let r = result(
            json!({"coop-taskrun": true, "completion-thread": 1}),
            json!({}),
            100_000,
            4_000_000,
        );
        assert!(diagnose(&r)[0].message.contains("seed 000"));
    }

    #[test]
    fn wrk_text_keeps_its_closing_lines_last() {
        let r = result(json!({}), json!({"io_uring_enter_per_op": 1.0}), 10, 20);
        let notes = diagnose(&r);
        let text =
            "Running 1s test\n  ringlab: io uring\nRequests/sec:  5.00\nTransfer/sec:  1.00KB\n";
        let out = insert_into_wrk_text(text, &notes);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[2].split(']').next(),
            Some("  ringlab: diagnosis [enter-per-request")
        );
        assert_eq!(
            &lines[3..],
            ["Requests/sec:  5.00", "Transfer/sec:  1.00KB"]
        );
        assert_eq!(insert_into_wrk_text(text, &[]), text);
    }

    #[test]
    fn unmeasured_figures_never_fire_and_render_is_empty_without_notes() {
        let r = result(json!({"numjobs": 4}), json!({}), 10, 20);
        assert!(diagnose(&r).is_empty());
        assert_eq!(render(&[]), "");
        let r = result(json!({}), json!({"io_uring_enter_per_op": 1.0}), 10, 20);
        let text = render(&diagnose(&r));
        assert!(
            text.contains("[enter-per-request] io_uring_enter_per_op = 1.00 (above 0.9)"),
            "{text}"
        );
    }
}
