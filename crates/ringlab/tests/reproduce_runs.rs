//! `ringlab reproduce`: the recipe list, one short run of every recipe end
//! to end (runs stored as sweep results, verdict.json, index.html), and the
//! exit codes. Runs are shrunk with the hidden `--run-time` so the whole
//! suite stays short; no timing is asserted.

mod common;

use common::{assert_ok, assert_valid_against, ringlab, schema_validator, BIN};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const VERDICTS: [&str; 4] = ["reproduced", "inconclusive", "contradicted", "cannot-run"];

fn list() -> Vec<Value> {
    let out = ringlab("reproduce --list --output-format json");
    assert_ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).expect("--list json is JSON");
    v.as_array().expect("an array").clone()
}

#[test]
fn list_json_names_every_recipe_with_its_claim_and_whether_it_runs_here() {
    let entries = list();
    assert!(entries.len() >= 13, "{} recipes", entries.len());
    for e in &entries {
        for key in ["name", "seed", "section", "claim", "reason"] {
            assert!(
                e[key].as_str().is_some_and(|s| !s.is_empty()),
                "{key} in {e}"
            );
        }
        assert!(e["needs"].is_array(), "{e}");
        assert!(e["runnable"].is_boolean(), "{e}");
        assert!(
            ["000", "001", "002", "003", "004"].contains(&e["seed"].as_str().unwrap()),
            "{e}"
        );
    }
    let names: Vec<&str> = entries
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    for n in [
        "sqpoll-one-core",
        "iou-vs-libaio-depth",
        "iopoll",
        "coop-taskrun-depth",
        "coop-taskrun-thinkcycles",
        "coop-taskrun-completion-thread",
        "async-pinned",
        "async-inode-lock",
        "fixed-files",
        "sqpoll-vs-two-threads",
        "sqpoll-shared-poller",
        "scylla-interfaces",
        "wrk-epoll-vs-uring",
        "spdk",
        "rocksdb-backends",
    ] {
        assert!(names.contains(&n), "{n} missing from --list");
    }
    // SPDK can never run under ringlab: listed with its reason.
    let spdk = entries.iter().find(|e| e["name"] == "spdk").unwrap();
    assert_eq!(spdk["runnable"], false);
    assert!(spdk["reason"].as_str().unwrap().contains("SPDK"));
    let text = ringlab("reproduce --list");
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("sqpoll-one-core") && text.contains("claim: "),
        "{text}"
    );
}

#[test]
fn unknown_recipe_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = ringlab(&format!(
        "reproduce no-such-recipe --output {}",
        dir.path().display()
    ));
    common::assert_fails(&out, 2, &["no-such-recipe", "--list"]);
    let out = ringlab("reproduce");
    common::assert_fails(&out, 2, &["all", "--list"]);
    let out = ringlab(&format!(
        "reproduce fixed-files --target /nonexistent/ringlab --output {}",
        dir.path().display()
    ));
    common::assert_fails(&out, 2, &["--target", "does not exist"]);
}

#[test]
fn a_named_recipe_that_cannot_run_here_fails_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let out = ringlab(&format!(
        "reproduce spdk --run-time 100ms --output {}",
        dir.path().display()
    ));
    // Progress lines come first on stderr; the error is the last line.
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap_or("");
    assert!(last.starts_with("ringlab: "), "{err}");
    for w in ["could not run", "spdk", "vfio-pci"] {
        assert!(last.contains(w), "{w:?} missing in: {last}");
    }
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("spdk/verdict.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(v["verdict"], "cannot-run");
    assert_valid_against("verdict.schema.json", &v);
    assert!(dir.path().join("index.html").is_file());
}

#[test]
fn the_rocksdb_recipe_without_db_bench_says_what_to_install() {
    let dir = tempfile::tempdir().unwrap();
    // A PATH without db_bench, as on a machine without rocksdb-tools.
    let out = Command::new(BIN)
        .args([
            "reproduce",
            "rocksdb-backends",
            "--run-time",
            "100ms",
            "--output",
        ])
        .arg(dir.path())
        .env("PATH", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap_or("");
    for w in [
        "rocksdb-backends",
        "db_bench",
        "apt-get install librocksdb-dev rocksdb-tools",
    ] {
        assert!(last.contains(w), "{w:?} missing in: {last}");
    }
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("rocksdb-backends/verdict.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(v["verdict"], "cannot-run");
    assert!(
        v["reason"].as_str().unwrap().contains("apt-get install"),
        "{v}"
    );
    assert!(v["measured"]["value"].is_null());
    assert_valid_against("verdict.schema.json", &v);
}

fn check_verdict(dir: &Path, entry: &Value) -> Value {
    let name = entry["name"].as_str().unwrap();
    let path = dir.join(name).join("verdict.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: Value = serde_json::from_str(&text).expect("verdict.json is JSON");
    assert_eq!(v["recipe"], name);
    assert_eq!(v["seed"], entry["seed"]);
    assert_eq!(v["section"], entry["section"]);
    assert!(v["claim"]["text"].is_string(), "{name}: claim");
    assert!(v["claim"]["quote"].is_string(), "{name}: claim quote");
    assert!(v["claim"].get("value").is_some() && v["claim"].get("unit").is_some());
    assert!(v["measured"].get("value").is_some(), "{name}: measured");
    assert!(
        VERDICTS.contains(&v["verdict"].as_str().unwrap_or("")),
        "{name}: {}",
        v["verdict"]
    );
    assert!(
        v["reason"].as_str().is_some_and(|r| r.len() > 10),
        "{name}: reason"
    );
    assert!(
        v["kernel"]["release"].is_string(),
        "{name}: kernel evidence"
    );
    v
}

#[test]
fn every_runnable_recipe_runs_end_to_end_at_a_tiny_scale() {
    let entries = list();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["reproduce", "all", "--run-time", "150ms", "--output"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            panic!("reproduce all did not finish in 300 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "reproduce all failed: {err}");
    let stdout = String::from_utf8_lossy(&out.stdout);

    let validator = schema_validator();
    for e in &entries {
        let name = e["name"].as_str().unwrap();
        let v = check_verdict(dir.path(), e);
        assert_valid_against("verdict.schema.json", &v);
        assert!(stdout.contains(name), "{name} not in the summary: {stdout}");
        if e["runnable"] == false {
            assert_eq!(v["verdict"], "cannot-run", "{name}");
            assert_eq!(v["reason"], e["reason"], "{name}");
            continue;
        }
        let checks = v["checks"].as_array().expect("checks");
        assert!(!checks.is_empty(), "{name}: no rule was evaluated");
        for c in checks {
            assert!(VERDICTS.contains(&c["verdict"].as_str().unwrap_or("")));
        }
        assert!(
            !v["evidence"].as_array().unwrap().is_empty(),
            "{name}: evidence"
        );
        // The runs are a sweep directory: index.json, the plan, results
        // that follow the result schema (so report and compare read them).
        for sweep in v["setup"]["sweeps"].as_array().unwrap() {
            let sdir = dir.path().join(name).join(sweep.as_str().unwrap());
            let index: Value =
                serde_json::from_str(&std::fs::read_to_string(sdir.join("index.json")).unwrap())
                    .unwrap();
            assert!(sdir.join("plan.toml").is_file());
            let runs = index["runs"].as_array().unwrap();
            assert!(!runs.is_empty());
            for r in runs {
                assert_eq!(r["status"], "done", "{name}/{sweep}: {r}");
                let result: Value = serde_json::from_str(
                    &std::fs::read_to_string(sdir.join(r["result"].as_str().unwrap())).unwrap(),
                )
                .unwrap();
                if let Err(e) = validator.validate(&result) {
                    panic!("{name}/{sweep}: result off the schema: {e}");
                }
            }
        }
    }
    // The RocksDB recipe ran `ringlab rocksdb` per configuration: every
    // check decided on measured figures (db_bench's, and the block requests
    // of its threads), the headline figure read from SQPOLL vs the default
    // ring.
    let rocks = entries
        .iter()
        .find(|e| e["name"] == "rocksdb-backends")
        .unwrap();
    if rocks["runnable"] == true {
        let v: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("rocksdb-backends/verdict.json")).unwrap(),
        )
        .unwrap();
        let checks = v["checks"].as_array().unwrap();
        assert_eq!(checks.len(), 6);
        for c in checks {
            if c["metric"] == "kstat.block_reads_per_s" && c["verdict"] == "cannot-run" {
                // Without root no tracepoint is counted: said, not zero.
                assert!(c["reason"].as_str().unwrap().contains("unavailable"), "{c}");
                continue;
            }
            assert_ne!(c["verdict"], "cannot-run", "{c}");
            let p = &c["points"][0];
            assert!(
                p["a"].as_f64().unwrap() > 0.0 && p["b"].as_f64().unwrap() > 0.0,
                "{c}"
            );
        }
        assert!(v["measured"]["value"].is_number(), "{}", v["measured"]);
        let series: Vec<&str> = v["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["series"].as_str().unwrap())
            .collect();
        for s in ["P-SYNC", "L-DEF", "L-COOP", "L-SQPOLL", "L-ASYNC"] {
            assert!(
                series.contains(&s),
                "{s} missing from the evidence: {series:?}"
            );
        }
        let index: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("rocksdb-backends/matrix/index.json"))
                .unwrap(),
        )
        .unwrap();
        let first = index["runs"][0]["result"].as_str().unwrap();
        let result: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("rocksdb-backends/matrix").join(first))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(result["command"], "rocksdb");
        assert_eq!(result["config"]["keys"], 20000);
    } else {
        eprintln!(
            "skipped the rocksdb-backends run: {}",
            rocks["reason"].as_str().unwrap_or("")
        );
    }
    // CONFIG_HZ is reported (or why not) for the tick-bounded recipe.
    let ct: Value = serde_json::from_str(
        &std::fs::read_to_string(
            dir.path()
                .join("coop-taskrun-completion-thread/verdict.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(
        ct["kernel"]["config_hz"].is_u64() || ct["kernel"]["config_hz_unavailable"].is_string()
    );
    // The wrk recipe says which server it ran against.
    let wrk: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("wrk-epoll-vs-uring/verdict.json")).unwrap(),
    )
    .unwrap();
    if wrk["verdict"] != "cannot-run" {
        let server = wrk["setup"]["background"].as_str().unwrap();
        assert!(
            server.starts_with("server: ")
                && (server.contains("nginx") || server.contains("ringlab serve")),
            "{server}"
        );
    }
    // The stored runs can be judged again without running anything.
    let before = std::fs::read_to_string(dir.path().join("fixed-files/verdict.json")).unwrap();
    let again = ringlab(&format!(
        "reproduce fixed-files --judge-only --output {}",
        dir.path().display()
    ));
    assert_ok(&again);
    let after = std::fs::read_to_string(dir.path().join("fixed-files/verdict.json")).unwrap();
    let verdict = |t: &str| serde_json::from_str::<Value>(t).unwrap()["verdict"].clone();
    assert_eq!(verdict(&before), verdict(&after));
    // One page with every recipe, well-formed, with the plots inline.
    let html = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc =
        roxmltree::Document::parse_with_options(&html, opts).expect("index.html is well-formed");
    let ids: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("h2"))
        .filter_map(|n| n.attribute("id"))
        .collect();
    for e in &entries {
        assert!(
            ids.contains(&e["name"].as_str().unwrap()),
            "{} not on the page",
            e["name"]
        );
    }
    assert!(doc.descendants().any(|n| n.tag_name().name() == "svg"));
    // The laid-out files are gone.
    let left: Vec<String> = common::leftovers(dir.path())
        .into_iter()
        .filter(|n| n.ends_with(".dat"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // The tmpfs file is named by an FNV-1a hash of the results directory.
    let abs = std::fs::canonicalize(dir.path()).unwrap();
    let hash = abs
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
    let shm = format!("/dev/shm/ringlab-reproduce-{hash:016x}.dat");
    assert!(!Path::new(&shm).exists(), "{shm} left behind");
}
