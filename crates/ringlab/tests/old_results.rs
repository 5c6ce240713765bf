//! Results written by an older ringlab (kept in tests/fixtures) still load:
//! they follow the schema, `report` turns a store holding one into tables,
//! and `compare` sets one against a new run.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const IO_V1: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/result-v1.json");
const HTTP_V1: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/result-v1-http.json"
);

fn args(a: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(BIN);
    cmd.args(a);
    run_limited(cmd)
}

fn read(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn old_results_follow_the_schema() {
    for f in [IO_V1, HTTP_V1] {
        assert_schema_valid(&read(f));
    }
}

#[test]
fn report_reads_a_store_holding_an_old_result() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = d.join("plan.toml");
    std::fs::write(
        &plan,
        "command = \"io\"\nrepeats = 1\n[options]\nsize = \"1m\"\nruntime = \"50ms\"\niodepth = 4\n[axes]\nengine = [\"uring\"]\n",
    )
    .unwrap();
    let out = d.join("sweep");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let run = args(&["sweep", &s(&plan), "--output", &s(&out)]);
    assert_ok(&run);
    // Put the old result where the sweep stored its run.
    let index = read(&s(&out.join("index.json")));
    let stored = out.join(index["runs"][0]["result"].as_str().unwrap());
    std::fs::copy(IO_V1, &stored).unwrap();
    let rep = d.join("report");
    let r = args(&["report", &s(&out), "--output", &s(&rep)]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let csv = std::fs::read_to_string(rep.join("summary.csv")).unwrap();
    assert!(csv.lines().count() >= 2, "{csv}");
    assert!(csv.contains("uring"), "{csv}");
}

#[test]
fn compare_sets_an_old_result_against_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let new = dir.path().join("new.json");
    let r = args(&[
        "io",
        "--directory",
        dir.path().to_str().unwrap(),
        "--size",
        "1m",
        "--runtime",
        "50ms",
        "--iodepth",
        "4",
        "--coop-taskrun",
        "--output-format",
        "json",
        "--output",
        new.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let c = args(&["compare", IO_V1, new.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&c.stdout);
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    // The knobs added since are the only new keys, and both runs had them off.
    assert!(!text.contains("coop-taskrun"), "{text}");
}
