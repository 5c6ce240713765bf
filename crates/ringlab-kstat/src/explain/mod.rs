//! Explaining a result, in one place for every command: [`explain`] is
//! called at the end of each `ringlab io`, `ringlab http` and `ringlab
//! rocksdb` run (and so of every run `reproduce`, `advise` and `sweep`
//! start). It reads the knobs the run asked for from the result's own
//! `config`, applies each knob's one rule with its one threshold from the
//! knob table ([`ringlab_core::uring::knobs::Proof`]) to the run's kernel
//! evidence ([`knobs`]), and runs the diagnosis rules ([`diagnose`]).
//! Nothing is attached anywhere else.

pub mod diagnose;
pub mod knobs;
pub mod rules;

#[cfg(test)]
mod fixture;

pub use diagnose::{diagnose, finding, render as render_diagnoses};
pub use knobs::{knob_evidence, verdict_line};

use ringlab_core::uring::knobs::UringOptions;
use ringlab_stats::RunResult;
use serde_json::Value as Json;

/// Fills in `r.kstat.evidence` (one line per requested knob, where kernel
/// evidence was collected) and `r.diagnoses`, from the knobs in
/// `r.config`: the knob table's flag names, as `ringlab io` and `ringlab
/// http` record them.
pub fn explain(r: &mut RunResult) {
    let knobs = requested(r);
    explain_with(r, &knobs);
}

/// As [`explain`], with the knobs given (a command that records them in
/// its own words, as `ringlab rocksdb` records the plugin's).
pub fn explain_with(r: &mut RunResult, knobs: &UringOptions) {
    let evidence = knob_evidence(r, knobs);
    if let Some(k) = r.kstat.as_mut() {
        k.evidence = evidence;
    }
    r.diagnoses = diagnose(r);
}

/// The io_uring knobs a result's `config` turned on (keys by flag name);
/// none for a run that drove no ring (another engine, `--io epoll`).
pub fn requested(r: &RunResult) -> UringOptions {
    let c = &r.config;
    let uring = match r.command.as_str() {
        "io" => c.get("engine").and_then(Json::as_str) == Some("uring"),
        "http" => c
            .get("io")
            .and_then(Json::as_str)
            .is_some_and(|io| io.starts_with("uring")),
        _ => false,
    };
    if !uring {
        return UringOptions::default();
    }
    // Key by key through each row's own parser, so that one odd value
    // (an older result) costs its knob, not every line.
    let mut o = UringOptions::default();
    for k in ringlab_core::uring::knobs::KNOBS {
        let text = match c.get(k.flag) {
            Some(Json::Bool(true)) => None,
            Some(Json::Number(n)) => Some(n.to_string()),
            Some(Json::String(s)) => Some(s.clone()),
            Some(Json::Array(a)) => Some(
                a.iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            _ => continue,
        };
        let _ = (k.set)(&mut o, text.as_deref());
    }
    o
}

#[cfg(test)]
mod tests {
    use super::fixture::result;
    use super::*;
    use serde_json::json;

    #[test]
    fn explain_fills_evidence_and_diagnoses_from_the_config() {
        let mut r = result(
            json!({"fixed-files": true, "numjobs": 2}),
            json!({"io_uring_file_get_per_op": 1.0}),
            10,
            20,
        );
        explain(&mut r);
        let e = &r.kstat.as_ref().unwrap().evidence;
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].knob, "--fixed-files");
        assert_eq!(e[0].in_effect, Some(false));
        // file-lookup-shared does not fire: the run asked for fixed files.
        assert!(r.diagnoses.is_empty(), "{:?}", r.diagnoses);
        let mut r = result(
            json!({"engine": "libaio", "fixed-files": true}),
            json!({}),
            10,
            20,
        );
        explain(&mut r);
        assert!(r.kstat.as_ref().unwrap().evidence.is_empty());
    }
}
