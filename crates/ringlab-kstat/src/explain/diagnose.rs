//! Diagnoses: short notes on one result, derived from its own kernel
//! evidence by named rules ([`RULES`]), each with the figure that
//! triggered it and what to try. The explain step of this module
//! puts them on every result of `io`, `http` and `rocksdb`.

use super::rules::{Ctx, RULES};
use ringlab_stats::units::format_sig;
use ringlab_stats::{Diagnosis, RunResult};

/// The notes of every rule that fires on `r`, in rule order.
pub fn diagnose(r: &RunResult) -> Vec<Diagnosis> {
    let ctx = Ctx::of(r);
    // An operation of `ringlab http` is a request.
    let per = |m: String| {
        if r.command == "http" {
            m.replace("per I/O", "per request")
        } else {
            m
        }
    };
    RULES
        .iter()
        .filter(|rule| (rule.applies)(&ctx))
        .filter_map(|rule| {
            let value = (rule.value)(&ctx)?;
            (value > rule.threshold).then(|| Diagnosis {
                rule: rule.name.to_string(),
                figure: rule.figure.to_string(),
                value,
                threshold: rule.threshold,
                message: per(rule
                    .message
                    .replace("{value}", &format_sig(value))
                    .replace("{cause}", (rule.cause)(&ctx))),
                try_next: (rule.try_next)(&ctx).to_string(),
            })
        })
        .collect()
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

/// `[rule] figure = value (above threshold): message`, as every text says
/// it (`ringlab io` at its end, `ringlab http` as `ringlab:` lines).
pub fn finding(d: &Diagnosis) -> String {
    format!(
        "[{}] {} = {} (above {}): {}",
        d.rule,
        d.figure,
        format_sig(d.value),
        d.threshold,
        d.message
    )
}

#[cfg(test)]
mod tests {
    use super::super::fixture::result;
    use super::*;
    use serde_json::json;

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
        assert!(diagnose(&r)[0].try_next.starts_with("drop IOSQE_ASYNC"));
        // IOSQE_ASYNC chosen by default (the target takes no non-blocking
        // I/O): the cause says so, and the advice is not to drop it,
        // which measured slower there, but to change the target.
        let r = result(
            json!({"force-async": 1, "default-knobs": ["coop-taskrun", "force-async"]}),
            json!({"io_uring_queue_async_work_per_op": 1.0}),
            10,
            20,
        );
        let d = diagnose(&r);
        assert!(
            d[0].message.contains("chosen by default"),
            "{}",
            d[0].message
        );
        assert!(
            !d[0].try_next.contains("drop IOSQE_ASYNC"),
            "{}",
            d[0].try_next
        );
        assert!(d[0].try_next.contains("FMODE_NOWAIT"), "{}", d[0].try_next);
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
        // At the fixed-files knob's bar (0.1 per request): nothing to save.
        let at = json!({"io_uring_file_get_per_op": 0.1});
        assert!(rules_fired(&result(json!({"numjobs": 2}), at, 10, 20)).is_empty());
        let above = json!({"io_uring_file_get_per_op": 0.2});
        assert_eq!(
            rules_fired(&result(json!({"numjobs": 2}), above, 10, 20)),
            ["file-lookup-shared"]
        );
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
    fn http_diagnoses_speak_of_requests() {
        let mut r = result(
            json!({"io": "uring", "threads": 1, "connections": 4}),
            json!({"io_uring_queue_async_work_per_op": 1.0}),
            10,
            20,
        );
        r.command = "http".into();
        let d = diagnose(&r);
        assert_eq!(d[0].rule, "iowq-offload");
        assert!(
            d[0].message.contains("1.00 io_uring requests per request"),
            "{}",
            d[0].message
        );
        r.config.insert("io".into(), json!("epoll"));
        assert!(rules_fired(&r).is_empty(), "epoll drives no ring");
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
