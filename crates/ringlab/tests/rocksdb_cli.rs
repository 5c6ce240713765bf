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
