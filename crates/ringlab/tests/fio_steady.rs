//! `ringlab fio`: fio's steady-state detection (ss=, ss_dur, ss_ramp) and
//! latency_target depth search, by what they do to the run: a steady job
//! ends early with fio's steadystate object, one that cannot be steady
//! runs to its runtime; the depth search settles by itself and reports
//! fio's latency fields; fio's example job files parse unchanged. The
//! criterion's arithmetic is proved against fio's own numbers in
//! ringlab-io (steady.rs, lat_target.rs).

mod common;

use common::{assert_ok, fio};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    common::fresh_dir("fioss", name)
}

fn json_job(d: &Path, file: &str, text: &str) -> Value {
    std::fs::write(d.join(file), text).unwrap();
    let out = fio(d, &["--output-format=json", file]);
    assert_ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["jobs"][0].clone()
}

/// A paced job (its IOPS held by rate_iops) is steady: it ends once its
/// window of ss_dur samples after ss_ramp holds, long before its runtime,
/// with fio's steadystate object.
#[test]
fn a_steady_job_ends_when_its_steady_state_is_attained() {
    let d = tmp("steady");
    let j = json_job(
        &d,
        "s.fio",
        "[global]\nthreads=1\ngroup_reporting\ntime_based\nsize=1m\n\
         [s]\nioengine=null\nrw=read\nbs=4k\nnumjobs=2\nrate_iops=1000\nruntime=30s\n\
         ss=iops:20%\nss_dur=2s\nss_ramp=1s\n",
    );
    let ss = &j["steadystate"];
    assert_eq!(ss["attained"], 1, "{ss}");
    assert_eq!(ss["ss"], "iops:20.000000%");
    assert_eq!(ss["duration"], 2);
    assert!(ss["criterion"].as_str().unwrap().ends_with('%'), "{ss}");
    // The group's sum: two jobs at 1000 IOPS each.
    let iops = ss["data"]["iops"].as_array().unwrap();
    assert_eq!(iops.len(), 2);
    for v in iops {
        let v = v.as_u64().unwrap();
        assert!((1600..=2400).contains(&v), "{ss}");
    }
    assert_eq!(
        ss["data"]["bw"][0].as_u64().unwrap() / 4096,
        iops[0].as_u64().unwrap()
    );
    // Ended at the steady state, far from the 30 s runtime.
    assert!(j["job_runtime"].as_u64().unwrap() < 15_000, "{j}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// A criterion that cannot hold (no deviation is under 0%) never ends the
/// job: it runs to its runtime, attained=0, and the normal output says so
/// in fio's words.
#[test]
fn a_job_never_steady_runs_to_its_runtime() {
    let d = tmp("unsteady");
    std::fs::write(
        d.join("u.fio"),
        "[u]\nioengine=null\nrw=read\nbs=4k\nsize=1m\ntime_based\nruntime=2s\n\
         ss=iops:0%\nss_dur=1s\nss_ramp=0\n",
    )
    .unwrap();
    let out = fio(&d, &["--output-format=json,normal", "u.fio"]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let json_end = text.find("\n}\n").unwrap() + 3;
    let v: Value = serde_json::from_str(&text[..json_end]).unwrap();
    let j = &v["jobs"][0];
    assert_eq!(j["steadystate"]["attained"], 0, "{j}");
    assert!(j["job_runtime"].as_u64().unwrap() >= 1_900, "{j}");
    let line = text
        .lines()
        .find(|l| l.starts_with("  steadystate  : "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.starts_with("  steadystate  : attained=no, bw=") && line.contains("iops mean dev="),
        "{line}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// Without latency over the target the search doubles the depth up to
/// iodepth, runs one more window there and ends the job by itself (no
/// runtime is reached), reporting fio's latency fields.
#[test]
fn the_latency_target_search_settles_and_ends_the_job() {
    let d = tmp("lat");
    std::fs::write(
        d.join("l.fio"),
        "[l]\nioengine=null\nrw=randread\nbs=4k\nsize=1m\ntime_based\nruntime=30s\n\
         iodepth=8\nlatency_target=1s\nlatency_window=50ms\nlatency_percentile=99.9\n",
    )
    .unwrap();
    let out = fio(&d, &["--output-format=json,normal", "l.fio"]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let json_end = text.find("\n}\n").unwrap() + 3;
    let v: Value = serde_json::from_str(&text[..json_end]).unwrap();
    let j = &v["jobs"][0];
    assert_eq!(j["latency_depth"], 8, "{j}");
    assert_eq!(j["latency_target"], 1_000_000_000u64);
    assert_eq!(j["latency_window"], 50_000);
    assert_eq!(j["latency_percentile"], 99.9);
    assert!(j["job_runtime"].as_u64().unwrap() < 15_000, "{j}");
    assert!(
        text.contains(
            "     latency   : target=1000000000, window=50000, percentile=99.90%, depth=8"
        ),
        "{text}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// With latency_percentile=100 an I/O over the target at depth 1 ends the
/// job with fio's error (a 1 MiB read of /dev/zero takes far more than
/// 1 µs).
#[test]
fn an_io_over_the_target_at_depth_1_fails_as_fio() {
    let d = tmp("fatal");
    let out = fio(
        &d,
        &[
            "--name=x",
            "--filename=/dev/zero",
            "--bs=1m",
            "--size=64m",
            "--latency_target=1",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("exceeds specified max (1000 nsec): /dev/zero read 0 1048576"),
        "{err}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// fio's rules: steady-state options must agree within a reporting group;
/// ringlab cannot end one thread of a job alone.
#[test]
fn inconsistent_steady_state_options_are_refused() {
    let d = tmp("rules");
    std::fs::write(
        d.join("g.fio"),
        "[global]\nioengine=null\nsize=1m\ngroup_reporting\ntime_based\nruntime=1\n\
         [a]\nss=iops:10%\nss_dur=2\n[b]\nss=bw:10%\nss_dur=2\n",
    )
    .unwrap();
    let out = fio(&d, &["g.fio"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("consistent within reporting groups"));
    // A job without ss in the group of one with it: fio rejects it too.
    std::fs::write(
        d.join("m.fio"),
        "[global]\nioengine=null\nsize=1m\ntime_based\nruntime=1\n\
         [a]\nss=iops:10%\nss_dur=2\n[b]\n",
    )
    .unwrap();
    let out = fio(&d, &["m.fio"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("consistent within reporting groups"));
    std::fs::write(
        d.join("n.fio"),
        "[n]\nioengine=null\nsize=1m\nnumjobs=2\nss=iops:10%\nss_dur=2\n",
    )
    .unwrap();
    let out = fio(&d, &["--parse-only", "n.fio"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("n.fio:1") && err.contains("group_reporting"),
        "{err}"
    );
    std::fs::write(
        d.join("c.fio"),
        "[c]\nioengine=null\nsize=1m\nss=ops:10%\nss_dur=2\n",
    )
    .unwrap();
    let out = fio(&d, &["--parse-only", "c.fio"]);
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&d).unwrap();
}

/// fio's two example job files for these options are accepted unchanged.
#[test]
fn fio_s_steadystate_and_latency_profile_examples_parse() {
    let dir = Path::new("/usr/share/doc/fio/examples");
    if !dir.is_dir() {
        common::skip(
            "fio_s_steadystate_and_latency_profile_examples_parse",
            "fio's examples are not installed (Debian's fio package ships them)",
        );
        return;
    }
    for f in ["steadystate.fio", "latency-profile.fio"] {
        let out = fio(dir, &["--parse-only", f]);
        assert_ok(&out);
    }
}
