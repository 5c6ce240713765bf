//! Knob evidence: for each io_uring knob a run asked for, whether the
//! kernel's counters show it took effect. Each knob has one rule: its row's
//! [`Proof`] (one figure per request, one threshold) in the knob table,
//! applied here the same way for `ringlab io`, `ringlab http` and `ringlab
//! rocksdb`. A knob that shows no effect is reported as such, not hidden
//! (the thesis artifact ran an "SQPOLL" configuration whose engine ignored
//! the flag); a figure that was not counted makes the knob "not
//! decidable", with the counter and the reason, never a zero.

use crate::collector::per_op_name;
use ringlab_core::uring::knobs::{
    Kind, Knob, Proof, Test, UringOptions, KNOBS, MULTISHOT_RECV_PROOF,
};
use ringlab_stats::{KnobEvidence, KstatReport, RunResult};
use serde_json::Value as Json;

/// `--sqpoll in effect: ...`: one evidence line as every text prints it.
pub fn verdict_line(e: &KnobEvidence) -> String {
    let verdict = match e.in_effect {
        Some(true) => "in effect",
        Some(false) => "NO EFFECT SEEN",
        None => "not decidable",
    };
    format!("{} {verdict}: {}", e.knob, e.detail)
}

/// The evidence lines for `knobs` in table order (then multishot receive,
/// for `ringlab http`'s uring drivers); none without kernel evidence.
pub fn knob_evidence(r: &RunResult, knobs: &UringOptions) -> Vec<KnobEvidence> {
    let Some(k) = r.kstat.as_ref() else {
        return Vec::new();
    };
    let f = Figures::of(r, k);
    let mut out = Vec::new();
    for knob in KNOBS.iter().filter(|row| row.is_on(knobs)) {
        if matches!(knob.kind, Kind::Preset | Kind::Ringlab | Kind::SetupParam) {
            continue;
        }
        out.push(one_knob(knob, knobs, &f));
    }
    if let Some(io) = r
        .config
        .get("io")
        .and_then(Json::as_str)
        .filter(|io| r.command == "http" && matches!(*io, "uring" | "uring-mshot"))
    {
        let (in_effect, detail) = judge(&MULTISHOT_RECV_PROOF, None, &f);
        out.push(KnobEvidence {
            knob: format!("--io {io} (multishot receive)"),
            in_effect,
            detail,
        });
    }
    out
}

/// The line of one knob that is on.
fn one_knob(knob: &Knob, o: &UringOptions, f: &Figures) -> KnobEvidence {
    let flag = match (knob.flag, o.force_async) {
        ("force-async", n) if n > 1 => format!("--force-async={n}"),
        (flag, _) => format!("--{flag}"),
    };
    let (in_effect, detail) = match (&knob.proof, knob.flag) {
        (Some(p), "sqpoll") => sqpoll(p, f),
        (Some(p), "force-async") => judge(p, Some(1.0 / o.force_async.max(1) as f64), f),
        (Some(p), _) => judge(p, None, f),
        (None, "coop-taskrun") => (
            None,
            match (
                f.value("reschedule_ipis_per_op"),
                f.value("io_uring_task_work_run_per_op"),
            ) {
                (Ok(i), Ok(t)) => format!(
                    "rescheduling IPIs {i:.3}/{u}, task work runs {t:.3}/{u} (no counter separates the IPIs COOP_TASKRUN avoids from wake-up IPIs; compare with a run without it)",
                    u = f.unit
                ),
                (Err(e), _) | (_, Err(e)) => e,
            },
        ),
        (None, _) => (None, knob.evidence.to_string()),
    };
    KnobEvidence {
        knob: flag,
        in_effect,
        detail,
    }
}

/// Applies `p` to this run's figure; `expected` is what the knob's value
/// makes expected, for [`Test::AtLeastOfExpected`].
fn judge(p: &Proof, expected: Option<f64>, f: &Figures) -> (Option<bool>, String) {
    let v = match f.value(p.figure) {
        Ok(v) => v,
        Err(why) => return (None, why),
    };
    let (ok, bar) = decide(&p.test, v, expected);
    // A counter the kernel skipped runs of may be short by as many events:
    // where the figure's upper end would decide otherwise, it cannot decide.
    let hi = v + f.short_by(p.figure);
    if hi > v && decide(&p.test, hi, expected).0 != ok {
        return (
            None,
            format!(
                "{} between {v:.3} and {hi:.3}/{} (the kernel skipped runs of its counter, so it may be short by that much; in effect {bar})",
                p.what, f.unit
            ),
        );
    }
    (
        Some(ok),
        format!("{} {v:.3}/{} (in effect {bar})", p.what, f.unit),
    )
}

/// Whether `v` passes `test`, and the bar in words.
pub fn decide(test: &Test, v: f64, expected: Option<f64>) -> (bool, String) {
    match *test {
        Test::Below(t) => (v < t, format!("below {t}")),
        Test::Above(t) => (v > t, format!("above {t}")),
        Test::AtLeastOfExpected(frac) => {
            let e = expected.unwrap_or(1.0);
            (
                v >= frac * e,
                format!("at least {frac} x the expected {e:.3}"),
            )
        }
    }
}

/// SQPOLL: the poller's CPU time decides; `io_uring_enter` per request is
/// shown beside it.
fn sqpoll(p: &Proof, f: &Figures) -> (Option<bool>, String) {
    let pollers: Vec<_> =
        f.k.helper_threads
            .iter()
            .filter(|h| h.name.starts_with("iou-sqp"))
            .collect();
    let enter = match f.value("io_uring_enter_per_op") {
        Ok(e) if e > 0.05 => format!(
            "io_uring_enter {e:.3}/{} (the {} still enters the kernel to wait for completions)",
            f.unit,
            if f.command == "http" { "client" } else { "job" }
        ),
        Ok(e) => format!("io_uring_enter {e:.3}/{}", f.unit),
        Err(why) => why,
    };
    if pollers.is_empty() {
        return (
            Some(false),
            format!("no iou-sqp-* thread was seen; {enter}"),
        );
    }
    let v = match f.value(p.figure) {
        Ok(v) => v,
        Err(why) => return (None, format!("{why}; {enter}")),
    };
    let (ok, bar) = decide(&p.test, v, None);
    let cpu_ns: u64 = pollers.iter().filter_map(|h| h.cpu_ns).sum();
    (
        Some(ok),
        format!(
            "{} poller thread{} used {:.1} ms CPU ({v:.2} us/{}, in effect {bar}); {enter}",
            pollers.len(),
            if pollers.len() == 1 { "" } else { "s" },
            cpu_ns as f64 / 1e6,
            f.unit,
        ),
    )
}

/// The figures the rules read, per request: `kstat.per_op` for `io` and
/// `http` (an op is an I/O, a request is a response); for `rocksdb`, whose
/// ops are keys, the counters over `io_uring_submit_req` (the io_uring
/// requests db_bench's rings made).
struct Figures<'a> {
    k: &'a KstatReport,
    command: &'a str,
    ops: u64,
    /// `op` or `request`, for the lines.
    unit: &'static str,
}

impl<'a> Figures<'a> {
    fn of(r: &'a RunResult, k: &'a KstatReport) -> Figures<'a> {
        Figures {
            k,
            command: &r.command,
            ops: r.total.ops,
            unit: if r.command == "io" { "op" } else { "request" },
        }
    }

    /// The figure named like a `kstat.per_op` key, or why it is unknown.
    fn value(&self, key: &str) -> Result<f64, String> {
        if key == "sqpoll_cpu_us_per_op" {
            return self.poller_cpu_us(key);
        }
        if self.command != "rocksdb" {
            return self.k.per_op.get(key).copied().ok_or_else(|| {
                if self.ops == 0 {
                    format!("no {} completed", self.unit)
                } else {
                    self.missing(key)
                }
            });
        }
        let requests = self.requests()?;
        let n = self.count(key).ok_or_else(|| self.missing(key))?;
        Ok(n as f64 / requests as f64)
    }

    /// The count of the counter whose per-op figure is `key`.
    fn count(&self, key: &str) -> Option<u64> {
        self.k
            .counters
            .iter()
            .chain(&self.k.sampled_counters)
            .find(|(c, _)| per_op_name(c) == key)
            .map(|(_, v)| *v)
    }

    /// The requests the figures are per: the run's ops, or for `rocksdb`
    /// the io_uring requests submitted.
    fn requests(&self) -> Result<u64, String> {
        let n = if self.command == "rocksdb" {
            self.count("io_uring_submit_req_per_op")
                .ok_or_else(|| self.missing("io_uring_submit_req_per_op"))?
        } else {
            self.ops
        };
        if n == 0 {
            return Err(format!("no {} completed", self.unit));
        }
        Ok(n)
    }

    /// How much the figure `key` may be short, per request: the runs of its
    /// counter the kernel skipped ([`KstatReport::counter_runs_skipped`]),
    /// over the requests the figure divides by; 0 where none were skipped.
    fn short_by(&self, key: &str) -> f64 {
        let Some((c, &n)) = self
            .k
            .counter_runs_skipped
            .iter()
            .find(|(c, _)| per_op_name(c) == key)
        else {
            return 0.0;
        };
        let per = if self.command != "rocksdb" && self.k.sampled_counters.contains_key(c) {
            self.k.sampled_ops
        } else {
            self.requests().unwrap_or(0)
        };
        if per == 0 {
            0.0
        } else {
            n as f64 / per as f64
        }
    }

    /// CPU time of the iou-sqp-* threads per request, in microseconds.
    fn poller_cpu_us(&self, key: &str) -> Result<f64, String> {
        let cpu: Option<u64> = self
            .k
            .helper_threads
            .iter()
            .filter(|h| h.name.starts_with("iou-sqp"))
            .map(|h| h.cpu_ns)
            .sum();
        let Some(cpu) = cpu else {
            return Err(format!(
                "{key}: the iou-sqp-* thread's CPU time unavailable (no /proc/PID/task/TID/schedstat)"
            ));
        };
        Ok(cpu as f64 / 1e3 / self.requests()? as f64)
    }

    /// Why the counter behind `key` has no figure: its `unavailable` entry
    /// (`io_uring:io_uring_file_get not counted by default (--evidence
    /// full)`), or that it was not counted at all.
    fn missing(&self, key: &str) -> String {
        let short = key.trim_end_matches("_per_op");
        match self
            .k
            .unavailable
            .iter()
            .find(|u| per_op_name(&u.counter) == key || u.counter == short)
        {
            Some(u) if u.reason.starts_with("not ") => format!("{} {}", u.counter, u.reason),
            Some(u) => format!("{} unavailable: {}", u.counter, u.reason),
            None if key == "device_interrupts_per_op" => {
                "the device's interrupt vectors were not found in /proc/interrupts (a virtual device, or no device behind the target)".to_string()
            }
            None => format!("{short} not counted"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::result;
    use super::super::{explain, requested};
    use super::*;
    use ringlab_stats::{HelperThread, UnavailableCounter};
    use serde_json::json;

    /// The evidence of one io run with `config` and `per_op`.
    fn evidence(config: Json, per_op: Json) -> Vec<KnobEvidence> {
        let mut r = result(config, per_op, 10, 20);
        explain(&mut r);
        r.kstat.unwrap().evidence
    }

    /// The one line of a run that asked for one knob.
    fn line(config: Json, per_op: Json) -> KnobEvidence {
        let e = evidence(config, per_op);
        assert_eq!(e.len(), 1, "{e:?}");
        e[0].clone()
    }

    #[test]
    fn every_knob_with_a_proof_is_judged_at_below_and_above_its_threshold() {
        let mut judged = 0;
        for k in KNOBS
            .iter()
            .filter(|k| k.proof.is_some() && k.flag != "sqpoll")
        {
            let p = k.proof.unwrap();
            let (config, expected) = if k.flag == "force-async" {
                (json!({"force-async": 4}), 0.25)
            } else {
                (json!({ k.flag: true }), 1.0)
            };
            let at = |v: f64| line(config.clone(), json!({ p.figure: v })).in_effect;
            match p.test {
                Test::Below(t) => {
                    assert_eq!(at(t), Some(false), "{} at {t}", k.flag);
                    assert_eq!(at(t / 2.0), Some(true), "{} below {t}", k.flag);
                    assert_eq!(at(t * 2.0), Some(false), "{} above {t}", k.flag);
                }
                Test::Above(t) => {
                    assert_eq!(at(t), Some(false), "{} at {t}", k.flag);
                    assert_eq!(at(t + 0.5), Some(true), "{} above {t}", k.flag);
                    if t > 0.0 {
                        assert_eq!(at(t / 2.0), Some(false), "{} below {t}", k.flag);
                    }
                }
                Test::AtLeastOfExpected(f) => {
                    let bar = f * expected;
                    assert_eq!(at(bar), Some(true), "{} at {bar}", k.flag);
                    assert_eq!(at(bar * 0.8), Some(false), "{} below {bar}", k.flag);
                    assert_eq!(at(expected), Some(true), "{} above {bar}", k.flag);
                }
            }
            judged += 1;
        }
        // iopoll, hybrid-iopoll, defer-taskrun, fixed-files, force-async.
        assert_eq!(judged, 5);
    }

    #[test]
    fn skipped_counter_runs_decide_only_where_the_whole_range_agrees() {
        // fixed-files: in effect below 0.1 file lookups per op, 1000 ops.
        let bar = ringlab_core::uring::knobs::FILE_LOOKUPS_PER_REQUEST;
        let judged = |per_op: f64, skipped: u64| {
            let mut r = result(
                json!({"fixed-files": true}),
                json!({ "io_uring_file_get_per_op": per_op }),
                10,
                20,
            );
            let k = r.kstat.as_mut().unwrap();
            k.counters.insert(
                "io_uring:io_uring_file_get".into(),
                (per_op * 1000.0) as u64,
            );
            if skipped > 0 {
                k.counter_runs_skipped
                    .insert("io_uring:io_uring_file_get".into(), skipped);
            }
            explain(&mut r);
            r.kstat.unwrap().evidence[0].clone()
        };
        // No skips: 0.05 is below the bar.
        assert_eq!(judged(0.05, 0).in_effect, Some(true));
        // 30 skips: it may be 0.08, still below.
        assert_eq!(judged(0.05, 30).in_effect, Some(true));
        // 80 skips: it may be 0.13, above the bar: undecided, and the line
        // says why, with both ends.
        let e = judged(0.05, 80);
        assert_eq!(e.in_effect, None, "{e:?}");
        assert!(
            e.detail.contains("between 0.050 and 0.130") && e.detail.contains("skipped"),
            "{}",
            e.detail
        );
        // Above the bar whatever the skips: not in effect, decided.
        assert_eq!(judged(0.5, 80).in_effect, Some(false));
        assert!(bar > 0.05);
    }

    #[test]
    fn a_counter_not_counted_makes_the_knob_not_decidable_never_zero() {
        for k in KNOBS
            .iter()
            .filter(|k| k.proof.is_some() && k.flag != "sqpoll")
        {
            let p = k.proof.unwrap();
            let on = if k.flag == "force-async" {
                json!({"force-async": 1})
            } else {
                json!({ k.flag: true })
            };
            let counter = format!("io_uring:{}", p.figure.trim_end_matches("_per_op"));
            let mut r = result(on.clone(), json!({}), 10, 20);
            r.kstat.as_mut().unwrap().unavailable = vec![UnavailableCounter {
                counter: counter.clone(),
                reason: "not counted by default (--evidence full)".into(),
            }];
            explain(&mut r);
            let e = &r.kstat.unwrap().evidence[0];
            assert_eq!(e.in_effect, None, "{}", k.flag);
            if p.figure.starts_with("io_uring_") {
                assert_eq!(
                    e.detail,
                    format!("{counter} not counted by default (--evidence full)")
                );
                assert_eq!(
                    verdict_line(e),
                    format!(
                        "--{} not decidable: {counter} not counted by default (--evidence full)",
                        k.flag
                    )
                );
            }
            // Absent and not listed: still not decidable.
            let e = line(on, json!({}));
            assert_eq!(e.in_effect, None, "{}", k.flag);
            assert!(
                e.detail.contains("not counted") || e.detail.contains("not found"),
                "{}",
                e.detail
            );
        }
        let mut r = result(json!({"fixed-files": true}), json!({}), 10, 20);
        r.kstat.as_mut().unwrap().unavailable = vec![UnavailableCounter {
            counter: "io_uring:io_uring_file_get".into(),
            reason: "permission denied (perf_event_paranoid 2)".into(),
        }];
        explain(&mut r);
        assert_eq!(
            r.kstat.unwrap().evidence[0].detail,
            "io_uring:io_uring_file_get unavailable: permission denied (perf_event_paranoid 2)"
        );
    }

    fn poller(cpu_ns: Option<u64>) -> HelperThread {
        HelperThread {
            tid: 7,
            name: "iou-sqp-7".into(),
            cpu_ns,
            ctx_voluntary: Some(0),
            ctx_involuntary: Some(0),
        }
    }

    #[test]
    fn sqpoll_is_decided_by_the_pollers_cpu_time() {
        let with = |helpers: Vec<HelperThread>, per_op: Json| {
            let mut r = result(json!({"sqpoll": true}), per_op, 10, 20);
            r.kstat.as_mut().unwrap().helper_threads = helpers;
            explain(&mut r);
            r.kstat.unwrap().evidence[0].clone()
        };
        let enter = json!({"io_uring_enter_per_op": 0.0});
        // 2 ms over 1000 ops: 2 us per op, above 0.
        let e = with(vec![poller(Some(2_000_000))], enter.clone());
        assert_eq!(e.in_effect, Some(true), "{}", e.detail);
        assert!(
            e.detail.contains("1 poller thread used 2.0 ms CPU"),
            "{}",
            e.detail
        );
        assert!(e.detail.contains("io_uring_enter 0.000/op"), "{}", e.detail);
        // At the threshold: a poller that never ran.
        assert_eq!(
            with(vec![poller(Some(0))], enter.clone()).in_effect,
            Some(false)
        );
        // No poller at all.
        let e = with(vec![], enter.clone());
        assert_eq!(e.in_effect, Some(false));
        assert!(e.detail.starts_with("no iou-sqp-* thread"), "{}", e.detail);
        // Its CPU time unreadable.
        assert_eq!(with(vec![poller(None)], enter).in_effect, None);
        // A job that waits still enters: said, not held against the knob.
        let e = with(
            vec![poller(Some(5_000_000))],
            json!({"io_uring_enter_per_op": 0.5}),
        );
        assert_eq!(e.in_effect, Some(true));
        assert!(
            e.detail.contains("still enters the kernel to wait"),
            "{}",
            e.detail
        );
        // io_uring_enter not counted: named, the verdict stands on the CPU.
        let e = with(vec![poller(Some(5_000_000))], json!({}));
        assert_eq!(e.in_effect, Some(true));
        assert!(
            e.detail.contains("io_uring_enter not counted"),
            "{}",
            e.detail
        );
    }

    #[test]
    fn knobs_without_a_proof_are_not_decidable_with_the_tables_word() {
        let e = evidence(
            json!({"coop-taskrun": true, "fixed-buffers": true, "register-ring": true}),
            json!({"reschedule_ipis_per_op": 0.2, "io_uring_task_work_run_per_op": 1.0}),
        );
        let names: Vec<&str> = e.iter().map(|e| e.knob.as_str()).collect();
        assert_eq!(
            names,
            ["--coop-taskrun", "--fixed-buffers", "--register-ring"]
        );
        assert!(e.iter().all(|e| e.in_effect.is_none()));
        assert!(
            e[0].detail.contains("rescheduling IPIs 0.200/op"),
            "{}",
            e[0].detail
        );
        // Ringlab options and setup parameters get no line.
        assert!(evidence(json!({"submit-batch": 4, "sqpoll-idle": 10}), json!({})).is_empty());
    }

    #[test]
    fn force_async_names_its_n_and_expects_one_in_n() {
        let e = line(
            json!({"force-async": 4}),
            json!({"io_uring_queue_async_work_per_op": 0.25}),
        );
        assert_eq!(e.knob, "--force-async=4");
        assert_eq!(e.in_effect, Some(true));
        assert!(e.detail.contains("expected 0.250"), "{}", e.detail);
    }

    #[test]
    fn rocksdb_figures_are_per_io_uring_request_not_per_key() {
        let mut r = result(json!({}), json!({"io_uring_file_get_per_op": 4.0}), 10, 20);
        r.command = "rocksdb".into();
        let k = r.kstat.as_mut().unwrap();
        k.counters
            .insert("io_uring:io_uring_submit_req".into(), 1000);
        k.counters.insert("io_uring:io_uring_file_get".into(), 3);
        let knobs = UringOptions {
            fixed_files: true,
            ..Default::default()
        };
        // rocksdb records its plugin's words: the caller gives the knobs.
        assert!(!requested(&r).fixed_files);
        super::super::explain_with(&mut r, &knobs);
        let e = &r.kstat.as_ref().unwrap().evidence[0];
        assert_eq!(e.in_effect, Some(true), "{}", e.detail);
        assert!(e.detail.contains("0.003/request"), "{}", e.detail);
        // Without submissions counted: not decidable, never per key.
        r.kstat.as_mut().unwrap().counters.clear();
        super::super::explain_with(&mut r, &knobs);
        assert_eq!(r.kstat.unwrap().evidence[0].in_effect, None);
    }

    #[test]
    fn http_gets_its_knobs_and_multishot_receive() {
        let http = |io: &str, knobs: Json, per_op: Json| {
            let mut r = result(knobs, per_op, 10, 20);
            r.command = "http".into();
            r.config.insert("io".into(), json!(io));
            explain(&mut r);
            r.kstat.unwrap().evidence
        };
        let e = http(
            "uring-mshot",
            json!({"fixed-files": true}),
            json!({"io_uring_file_get_per_op": 0.0, "io_uring_poll_arm_per_op": 0.0}),
        );
        let lines: Vec<String> = e.iter().map(verdict_line).collect();
        assert_eq!(
            lines,
            [
                "--fixed-files in effect: file lookups 0.000/request (in effect below 0.1)",
                "--io uring-mshot (multishot receive) in effect: poll arms 0.000/request (in effect below 0.1)"
            ]
        );
        let e = http("uring", json!({}), json!({"io_uring_poll_arm_per_op": 0.1}));
        assert_eq!(e[0].in_effect, Some(false));
        let e = http("uring", json!({}), json!({}));
        assert_eq!(e[0].in_effect, None);
        // epoll drives no ring: no knob is judged, whatever the config says.
        assert!(http("epoll", json!({"fixed-files": true}), json!({})).is_empty());
    }
}
