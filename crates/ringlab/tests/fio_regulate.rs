//! `ringlab fio`: fio's flow, rate_process and io_submit_mode, by their
//! effect on the work (never by timings). The flow ratio itself is proved
//! in ringlab-io's regulate tests (two jobs' shares at 1:8): between
//! processes on a null engine, the job that outlives its partner by a
//! millisecond issues freely then (as in fio), which swamps the ratio.

mod common;

use common::{assert_ok, fio};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    common::fresh_dir("fioreg", name)
}

/// fio's rate options parse with fio's values and refuse others with the
/// file, the line and fio's choices.
#[test]
fn rate_process_and_submit_mode_take_fio_s_values_only() {
    let d = tmp("values");
    for (opt, words) in [
        ("rate_process=bursty", "linear and poisson"),
        ("io_submit_mode=async", "inline and offload"),
        ("flow=1001", "0 to 1000"),
    ] {
        std::fs::write(
            d.join("j.fio"),
            format!("[j]\nioengine=null\nsize=1m\nrate_iops=100\n{opt}\n"),
        )
        .unwrap();
        let out = fio(&d, &["--parse-only", "j.fio"]);
        assert_eq!(out.status.code(), Some(2), "{opt}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("j.fio:5:"), "{opt}: {err}");
        assert!(err.contains(words), "{opt}: {err}");
    }
    std::fs::write(
        d.join("j.fio"),
        "[j]\nioengine=null\nsize=1m\nrate_iops=100\nrate_process=poisson\n\
         io_submit_mode=offload\nrate_ignore_thinktime=1\nrate_cycle=500\nflow_watermark=10\n",
    )
    .unwrap();
    assert_ok(&fio(&d, &["--parse-only", "j.fio"]));
    std::fs::remove_dir_all(&d).unwrap();
}

/// A Poisson-paced size-bound job does all its work (the gaps change when
/// each I/O leaves, not how many there are).
#[test]
fn a_poisson_paced_job_does_its_whole_size() {
    let d = tmp("poisson");
    std::fs::write(
        d.join("p.fio"),
        "[p]\nioengine=null\nsize=64k\nrw=randread\nrate_iops=2000\nrate_process=poisson\n",
    )
    .unwrap();
    let out = fio(&d, &["--output-format=json", "p.fio"]);
    assert_ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 16);
    std::fs::remove_dir_all(&d).unwrap();
}

/// fio's example job files for these options are accepted unchanged.
#[test]
fn fio_s_rate_and_flow_examples_parse() {
    let dir = Path::new("/usr/share/doc/fio/examples");
    if !dir.is_dir() {
        common::skip(
            "fio_s_rate_and_flow_examples_parse",
            "fio-examples is not installed",
        );
        return;
    }
    let d = tmp("examples");
    for f in [
        "butterfly.fio",
        "flow.fio",
        "fixed-rate-submission.fio",
        "poisson-rate-submission.fio",
    ] {
        let out = fio(&d, &["--parse-only", dir.join(f).to_str().unwrap()]);
        assert_ok(&out);
    }
    std::fs::remove_dir_all(&d).unwrap();
}
