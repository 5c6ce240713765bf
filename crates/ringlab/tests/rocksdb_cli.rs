//! `ringlab rocksdb --output-format json`: one configuration and one repeat
//! print one result on standard output (how sweep and reproduce run it);
//! anything more is a usage error that points to --output.

mod common;

use common::{assert_schema_valid, ringlab, BIN};
use serde_json::Value;
use std::process::Command;

#[test]
fn json_output_needs_one_configuration_and_one_repeat() {
    let out = ringlab("rocksdb --output-format json --keys 1000 --db /nonexistent/ringlab-db");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for w in [
        "--output-format json",
        "--configs",
        "--repeats 1",
        "--output DIR",
    ] {
        assert!(err.contains(w), "{w:?} missing in: {err}");
    }
    let out = ringlab("rocksdb --output-format json --configs L-DEF --repeats 2 --keys 1000");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn json_output_is_one_result_on_stdout() {
    if Command::new("db_bench").arg("--version").output().is_err() {
        eprintln!("skipped json_output_is_one_result_on_stdout: db_bench is not installed (apt-get install librocksdb-dev rocksdb-tools liburing-dev g++)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args([
            "rocksdb",
            "--configs",
            "L-COOP",
            "--repeats",
            "1",
            "--keys",
            "3000",
            "--duration",
            "1",
            "--output-format",
            "json",
            "--db",
        ])
        .arg(dir.path().join("db"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON result");
    assert_eq!(v["command"], "rocksdb");
    assert_eq!(v["config"]["configuration"], "L-COOP");
    assert_eq!(v["config"]["fs_uri"], "ringlab://coop_taskrun");
    assert!(v["total"]["ops"].as_u64().unwrap() > 0);
    assert_schema_valid(&v);
    // Progress and the table went to standard error.
    assert!(err.contains("L-COOP") && err.contains("repeat 1"), "{err}");
}

/// A db_bench that writes no database (`/bin/true`) marks nothing; a fill
/// killed with ringlab (SIGKILL) stops db_bench (parent-death signal) and
/// leaves nothing behind (the cleaner process removes the fill directory); an interrupted fill removes its partial
/// database and names no results directory that was never asked for.
#[test]
fn a_failed_or_killed_fill_leaves_no_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let out = Command::new(BIN)
        .args([
            "rocksdb",
            "--configs",
            "P-SYNC",
            "--keys",
            "1000",
            "--duration",
            "1",
        ])
        .args(["--db-bench", "/bin/true", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote no database"));
    assert!(!db.exists());
    if Command::new("db_bench").arg("--version").output().is_err() {
        common::skip(
            "a_failed_or_killed_fill_leaves_no_database",
            "db_bench is not installed (apt-get install rocksdb-tools)",
        );
        return;
    }
    let fill = |sig: i32| {
        let child = Command::new(BIN)
            .args([
                "rocksdb",
                "--configs",
                "P-SYNC",
                "--keys",
                "3000000",
                "--duration",
                "1",
                "--db",
            ])
            .arg(&db)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let start = std::time::Instant::now();
        // Until db_bench runs (a child of ringlab; the other is its
        // cleaner process).
        let db_bench = || {
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                .unwrap_or_default()
                .split_whitespace()
                .filter(|k| {
                    std::fs::read_to_string(format!("/proc/{k}/comm"))
                        .is_ok_and(|c| c.trim() == "db_bench")
                })
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        while db_bench().is_empty() {
            assert!(start.elapsed() < std::time::Duration::from_secs(20));
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let kids = db_bench().join(" ");
        std::thread::sleep(std::time::Duration::from_millis(300));
        // SAFETY: our own child.
        unsafe { libc::kill(pid as i32, sig) };
        let out = child.wait_with_output().unwrap();
        (out, kids)
    };
    let (out, _) = fill(libc::SIGINT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("partial database was removed"), "{err}");
    assert!(!err.contains("results directory"), "{err}");
    assert!(
        common::leftovers(dir.path()).is_empty(),
        "{:?}",
        common::leftovers(dir.path())
    );
    let (_, kids) = fill(libc::SIGKILL);
    for k in kids.split_whitespace() {
        let start = std::time::Instant::now();
        while std::fs::read_to_string(format!("/proc/{k}/stat")).is_ok_and(|s| !s.contains(") Z "))
        {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(10),
                "db_bench {k} outlived ringlab"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    assert!(!db.exists(), "a partial database under the name");
    // The fill directory of the killed run is removed by its cleaner
    // process, without waiting for a next run.
    let start = std::time::Instant::now();
    while !common::leftovers(dir.path()).is_empty() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "left behind after SIGKILL: {:?}",
            common::leftovers(dir.path())
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
