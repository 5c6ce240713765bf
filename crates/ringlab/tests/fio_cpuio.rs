//! fio's cpuio engine: `ringlab io --engine cpuio` and `ringlab fio` with
//! ioengine=cpuio (fio 3.33's engines/cpu.c).

mod common;

use common::{assert_fails, assert_ok, run_limited, BIN};

/// A refusal of `ringlab fio`: exit 2, one line naming every word.
fn refused(out: &std::process::Output, wants: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    for w in wants {
        assert!(err.contains(w), "{w:?} missing in: {err}");
    }
}
use serde_json::Value;
use std::process::Command;

fn fio(args: &[&str]) -> std::process::Output {
    let d = std::env::temp_dir();
    let mut cmd = Command::new(BIN);
    cmd.current_dir(d).arg("fio").args(args);
    run_limited(cmd)
}

/// fio prints its cpuio init lines on stdout before the JSON document.
fn split_json(stdout: &[u8]) -> (String, Value) {
    let s = String::from_utf8_lossy(stdout).to_string();
    let at = s.find("{\n").expect("a JSON document on stdout");
    (
        s[..at].to_string(),
        serde_json::from_str(&s[at..]).expect("JSON"),
    )
}

#[test]
fn each_burn_spins_cpuchunks_and_the_think_time_follows_cpuload() {
    // 2 ms burns at 50%: 4 ms a cycle, at most 100 in 400 ms.
    let v = common::json_run(
        "io --engine cpuio --cpuload 50 --cpuchunks 2000 --runtime 400ms --no-kstat",
    );
    let j = &v["jobs"][0];
    let ops = j["ops"].as_u64().unwrap();
    assert!(
        (20..=101).contains(&ops),
        "{ops} burns of 2 ms + 2 ms pauses in 400 ms"
    );
    // The spin lasts the whole chunk (wall clock), each burn one request.
    let min_ns = j["lat_ns"]["min"].as_u64().unwrap();
    assert!(min_ns >= 2_000_000, "a burn of {min_ns} ns, under 2 ms");
    // The burns are CPU work (user time), not sleep: a broad bound a busy
    // machine still meets, which a burn that does not spin fails.
    let cpu = j["cpu_user_ns"].as_u64().unwrap() + j["cpu_sys_ns"].as_u64().unwrap();
    assert!(
        cpu >= ops * 2_000_000 / 20,
        "{cpu} ns of CPU for {ops} burns of 2 ms"
    );
    assert!(
        cpu <= j["elapsed_ns"].as_u64().unwrap() + 50_000_000,
        "{cpu} ns of CPU in one thread"
    );
    // fio's think time: cycle * (100 - load) / load.
    assert_eq!(v["config"]["thinktime-us"], 2000.0);
    assert_eq!(v["target"]["path"], "/dev/null");
}

#[test]
fn full_load_has_no_think_time_and_over_100_counts_as_100() {
    let v = common::json_run(
        "io --engine cpuio --cpuload 150 --cpuchunks 2000 --runtime 300ms --no-kstat",
    );
    assert!(v["config"]["thinktime-us"].is_null(), "{}", v["config"]);
    let ops = v["jobs"][0]["ops"].as_u64().unwrap();
    assert!((10..=151).contains(&ops), "{ops} burns of 2 ms in 300 ms");
}

#[test]
fn qsort_mode_sorts_and_thinks_for_as_long_as_it_sorted() {
    let v = common::json_run(
        "io --engine cpuio --cpuload 50 --cpumode qsort --runtime 300ms --no-kstat",
    );
    let j = &v["jobs"][0];
    let ops = j["ops"].as_u64().unwrap();
    assert!(ops >= 1, "no sort ran");
    // At 50% the pause after a sort is as long as the sort: the sorts and
    // the pauses fill the run, so there cannot be more sorts than half of
    // it allows at the fastest sort seen.
    let min_ns = j["lat_ns"]["min"].as_u64().unwrap();
    assert!(min_ns > 0);
    assert!(
        ops <= 300_000_000 / (2 * min_ns) + 2,
        "{ops} sorts of at least {min_ns} ns each, each followed by as long a pause, in 300 ms"
    );
}

#[test]
fn cpuio_needs_cpuload_as_in_fio() {
    let out = fio(&[
        "--name=x",
        "--ioengine=cpuio",
        "--runtime=1",
        "--time_based",
    ]);
    refused(&out, &["cpu thread needs rate (cpuload=)"]);
    let out = common::ringlab("io --engine cpuio --runtime 100ms");
    assert_fails(&out, 2, &["cpu thread needs rate (cpuload=)"]);
    // cpuio's options without the engine.
    let out = fio(&["--name=x", "--cpuload=5", "--size=1m"]);
    refused(&out, &["add ioengine=cpuio"]);
    // fio counts no bytes for a burn: only the runtime ends the job.
    let out = fio(&["--name=x", "--ioengine=cpuio", "--cpuload=5", "--size=1m"]);
    refused(&out, &["give runtime="]);
}

#[test]
fn ringlab_fio_counts_burns_as_fio_3_33_does() {
    let out = fio(&[
        "--name=burn",
        "--ioengine=cpuio",
        "--cpuload=50",
        "--cpuchunks=2000",
        "--runtime=300ms",
        "--time_based",
        "--numjobs=2",
        "--output-format=json",
    ]);
    assert_ok(&out);
    let (before, v) = split_json(&out.stdout);
    assert_eq!(
        before,
        "burn (noop): ioengine=cpuio, cpuload=50, cpucycle=2000\n".repeat(2)
    );
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    for j in jobs {
        let r = &j["read"];
        let n = r["total_ios"].as_u64().unwrap();
        assert!((10..=76).contains(&n), "{n} burns of 2 ms at 50% in 300 ms");
        // fio 3.33: each burn is a read of 0 bytes, no runtime, no rate.
        assert_eq!(r["io_bytes"], 0);
        assert_eq!(r["bw"], 0);
        assert_eq!(r["runtime"], 0);
        assert_eq!(r["iops"], 0.0);
        assert_eq!(r["clat_ns"]["N"].as_u64(), Some(n));
        assert!(r["clat_ns"]["min"].as_u64().unwrap() >= 2_000_000);
        assert_eq!(j["write"]["total_ios"], 0);
    }
    // Normal output: the job's block without a read line, after the init
    // lines; no "(g=0): rw=" header line for a job that does no I/O.
    let out = fio(&[
        "--name=burn",
        "--ioengine=cpuio",
        "--cpuload=50",
        "--cpuchunks=2000",
        "--runtime=200ms",
        "--time_based",
    ]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("burn (noop): ioengine=cpuio, cpuload=50, cpucycle=2000\n"),
        "{text}"
    );
    assert!(text.contains("burn: (groupid=0, jobs=1)"), "{text}");
    assert!(text.contains("issued rwts: total="), "{text}");
    assert!(!text.contains("(g=0): rw="), "{text}");
    assert!(!text.contains("  read: IOPS="), "{text}");
    // No file, so no disk (fio's cpuio is diskless).
    assert!(!text.contains("Disk stats"), "{text}");
}

#[test]
fn exit_on_io_done_ends_the_burn_with_the_io_jobs() {
    let d = std::env::temp_dir().join(format!("ringlab-cpuio-exit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let job = d.join("job.fio");
    std::fs::write(
        &job,
        "[io]\nioengine=null\nsize=1m\n\n[burn]\nioengine=cpuio\ncpuload=50\ncpuchunks=2000\nexit_on_io_done=1\ntime_based\nruntime=20\n",
    )
    .unwrap();
    let start = std::time::Instant::now();
    let mut cmd = Command::new(BIN);
    cmd.current_dir(&d)
        .args(["fio", "--output-format=json"])
        .arg(&job);
    let out = run_limited(cmd);
    assert_ok(&out);
    assert!(
        start.elapsed() < std::time::Duration::from_secs(15),
        "the burn ran on after the I/O job ended"
    );
    let (_, v) = split_json(&out.stdout);
    let burn = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == "burn")
        .unwrap();
    let warnings = burn["ringlab"].to_string();
    assert!(!warnings.contains("interrupted: the figures"), "{warnings}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn fio_s_cpuio_example_parses_unchanged() {
    let example = std::path::Path::new("/usr/share/doc/fio/examples/cpuio.fio");
    let text = if example.exists() {
        std::fs::read_to_string(example).unwrap()
    } else {
        // fio's examples/cpuio.fio (fio 3.33), for machines without fio's
        // examples installed.
        "[global]\nioengine=cpuio\ntime_based\nruntime=15\n\n[burn_2x50_noop]\ncpuload=50\nnumjobs=2\ncpumode=noop\n\n[burn_2x50%_qsort]\nstonewall\ncpuload=50\nnumjobs=2\ncpumode=qsort\n".to_string()
    };
    let d = std::env::temp_dir().join(format!("ringlab-cpuio-ex-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let job = d.join("cpuio.fio");
    std::fs::write(&job, text).unwrap();
    let out = fio(&["--parse-only", job.to_str().unwrap()]);
    assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[burn_2x50_noop] (group 0)"), "{err}");
    assert!(err.contains("[burn_2x50%_qsort] (group 1)"), "{err}");
    assert!(err.contains("--cpumode qsort"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}
