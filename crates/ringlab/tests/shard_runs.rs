//! Sharded runs and `ringlab merge`, end to end: shards as separate
//! processes started together with --start-at, merged into one result that
//! follows the schema and that `compare` reads.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

/// Unix seconds `secs` from now, as --start-at takes them.
fn start_in(secs: f64) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    format!("{:.3}", now.as_secs_f64() + secs)
}

fn spawn(line: &str) -> Child {
    Command::new(BIN)
        .args(argv(line))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ringlab")
}

fn finish(c: Child) {
    let out = c.wait_with_output().unwrap();
    assert_ok(&out);
}

fn read(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

#[test]
fn three_shards_at_900_per_s_merge_to_900_per_s() {
    let server = Server::start("");
    let dir = tempfile::tempdir().unwrap();
    let at = start_in(2.0);
    let shards: Vec<Child> = (0..3)
        .map(|i| {
            spawn(&format!(
                "http {} -t 1 -c 3 -d 1s -R 900 --no-kstat --shard {i}/3 --start-at {at} --output-format json --output {}",
                server.url(),
                dir.path().join(format!("shard{i}.json")).display()
            ))
        })
        .collect();
    shards.into_iter().for_each(finish);
    let mut phases = Vec::new();
    for i in 0..3 {
        let r = read(&dir.path().join(format!("shard{i}.json")));
        assert_schema_valid(&r);
        let s = &r["shard"];
        assert_eq!(s["index"], i);
        assert_eq!(s["count"], 3);
        assert_eq!(s["rate"], 300.0);
        assert!(!s["late"].as_bool().unwrap(), "{s}");
        phases.push(s["phase_ns"].as_u64().unwrap());
        assert!(r["histograms"]["lat_ns_uncorrected"]["hdr"].is_string());
        // The configuration is the whole run's: -R 900 in every shard.
        assert_eq!(r["config"]["rate"], 900.0);
    }
    // Interleaved: shard i's schedule starts i/900 s after shard 0's.
    assert_eq!(phases, vec![0, 1_111_111, 2_222_222]);
    let merged = dir.path().join("merged.json");
    let out = ringlab(&format!(
        "merge {} -o {}",
        dir.path().display(),
        merged.display()
    ));
    assert_ok(&out);
    let m = read(&merged);
    assert_schema_valid(&m);
    let rate = m["total"]["iops"].as_f64().unwrap();
    assert!(
        (rate - 900.0).abs() <= 18.0,
        "merged rate {rate}, not 900 ± 2%"
    );
    let sum: u64 = (0..3)
        .map(|i| {
            read(&dir.path().join(format!("shard{i}.json")))["total"]["ops"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(m["total"]["ops"].as_u64().unwrap(), sum);
    assert_eq!(m["http"]["connections"], 9);
    assert_eq!(m["merged"]["shards"].as_array().unwrap().len(), 3);
    assert!(m["shard"].is_null());
    // An ordinary result: compare reads it.
    let cmp = ringlab(&format!(
        "compare {} {}",
        dir.path().join("shard0.json").display(),
        merged.display()
    ));
    assert_ok(&cmp);
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert!(text.contains("latency p99"), "{text}");
}

#[test]
fn a_result_merged_with_itself_doubles_counts_and_keeps_percentiles() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.json");
    let out = ringlab(&format!(
        "io --size 1m --bs 4k --rw randread --number-ios 2000 --no-kstat --directory {} --histograms --status-interval 100ms --output-format json --output {}",
        dir.path().display(),
        one.display()
    ));
    assert_ok(&out);
    let a = read(&one);
    assert_schema_valid(&a);
    assert!(a["histograms"]["read_lat_ns"]["hdr"].is_string());
    let merged = dir.path().join("twice.json");
    let out = ringlab(&format!(
        "merge {} {} -o {}",
        one.display(),
        one.display(),
        merged.display()
    ));
    assert_ok(&out);
    let m = read(&merged);
    assert_schema_valid(&m);
    for f in ["ops", "bytes"] {
        assert_eq!(
            m["total"][f].as_u64().unwrap(),
            2 * a["total"][f].as_u64().unwrap(),
            "{f}"
        );
        assert_eq!(
            m["total"]["read"][f].as_u64().unwrap(),
            2 * a["total"]["read"][f].as_u64().unwrap()
        );
    }
    for p in ["min", "p50", "p90", "p99", "p99_9", "p99_99", "max"] {
        assert_eq!(m["total"]["lat_ns"][p], a["total"]["lat_ns"][p], "{p}");
        assert_eq!(
            m["total"]["read"]["lat_ns"][p], a["total"]["read"]["lat_ns"][p],
            "{p}"
        );
    }
    let intervals = |r: &Value| r["intervals"].as_array().map_or(0, Vec::len);
    assert_eq!(intervals(&m), intervals(&a));
    if intervals(&a) > 0 {
        assert_eq!(
            m["intervals"][0]["ops"].as_u64().unwrap(),
            2 * a["intervals"][0]["ops"].as_u64().unwrap()
        );
    }
}

#[test]
fn shards_of_different_experiments_are_refused() {
    let server = Server::start("");
    let dir = tempfile::tempdir().unwrap();
    for (i, c) in [(0, 2), (1, 4)] {
        let out = ringlab(&format!(
            "http {} -t 1 -c {c} -d 200ms --no-kstat --shard {i}/2 --output-format json --output {}",
            server.url(),
            dir.path().join(format!("s{i}.json")).display()
        ));
        assert_ok(&out);
    }
    let out = ringlab(&format!("merge {} -o -", dir.path().display()));
    assert_fails(
        &out,
        2,
        &["not shards of one run", "config.connections: 2", "--force"],
    );
    // --force merges and records the difference.
    let out = ringlab(&format!("merge {} --force --quiet", dir.path().display()));
    assert_ok(&out);
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(m["merged"]["forced"][0]
        .as_str()
        .unwrap()
        .contains("config.connections"));
    // A missing shard.
    let out = ringlab(&format!(
        "merge {} -o -",
        dir.path().join("s0.json").display()
    ));
    assert_fails(&out, 2, &["shard 1 of 2 missing", "--allow-missing"]);
}

#[test]
fn a_shard_that_starts_late_is_flagged() {
    let server = Server::start("");
    let dir = tempfile::tempdir().unwrap();
    // --start-at half a second ago: it starts at once, 500 ms late.
    let out = ringlab(&format!(
        "http {} -t 1 -c 1 -d 200ms --no-kstat --shard 0/1 --start-at {} --output-format json --output {}",
        server.url(),
        start_in(-0.5),
        dir.path().join("late.json").display()
    ));
    assert_ok(&out);
    let r = read(&dir.path().join("late.json"));
    assert!(r["shard"]["late"].as_bool().unwrap());
    assert!(r["shard"]["start_late_ns"].as_u64().unwrap() >= 500_000_000);
    assert!(r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("after --start-at")));
    let out = ringlab(&format!("merge {} --quiet", dir.path().display()));
    assert_ok(&out);
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(m["merged"]["shards"][0]["late"].as_bool().unwrap());
    assert!(m["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("ms after --start-at")));
}

#[test]
fn io_shards_of_one_target_use_disjoint_regions() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shared.dat");
    std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    let mut regions = Vec::new();
    for i in 0..2 {
        let r = json_run(&format!(
            "io {} --rw randread --bs 4k --number-ios 200 --no-kstat --shard {i}/2",
            file.display()
        ));
        assert_schema_valid(&r);
        let s = &r["shard"];
        regions.push((
            s["region_offset_bytes"].as_u64().unwrap(),
            s["region_bytes"].as_u64().unwrap(),
        ));
    }
    assert_eq!(regions, vec![(0, 512 << 10), (512 << 10, 512 << 10)]);
    // Told otherwise, both roam the whole file.
    let r = json_run(&format!(
        "io {} --rw randread --bs 4k --number-ios 200 --no-kstat --shard 1/2 --shard-region shared",
        file.display()
    ));
    assert!(r["shard"]["region_bytes"].is_null());
}

#[test]
fn truncated_and_foreign_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, br#"{"schema_version": 1, "tool": {"name": "ringlab""#).unwrap();
    let out = ringlab(&format!("merge {}", cut.display()));
    assert_fails(&out, 2, &["cut.json", "truncated"]);
    let other = dir.path().join("k6.json");
    std::fs::write(&other, br#"{"metrics": {}}"#).unwrap();
    let out = ringlab(&format!("merge {}", other.display()));
    assert_fails(&out, 2, &["k6.json", "not a ringlab result"]);
    let bad = ringlab("http http://127.0.0.1:9/ --shard 3/3");
    assert_fails(&bad, 2, &["--shard 3/3", "does not exist"]);
    let auto = Command::new(BIN)
        .args(argv("http http://127.0.0.1:9/ --shard auto"))
        .env("JOB_COMPLETION_INDEX", "1")
        .env_remove("RINGLAB_SHARDS")
        .output()
        .unwrap();
    assert_fails(&auto, 2, &["JOB_COMPLETION_INDEX=1", "--shards"]);
}
