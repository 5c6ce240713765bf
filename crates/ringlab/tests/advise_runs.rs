//! End-to-end runs of `ringlab advise` (a short calibration, `--from` a
//! sweep and a saved calibration, bad input) and of the diagnoses that
//! `ringlab io` attaches to its results.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn rules(r: &Value) -> Vec<String> {
    r["diagnoses"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|d| d["rule"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn per_op(r: &Value, key: &str) -> Option<f64> {
    r["kstat"]["per_op"][key].as_f64()
}

#[test]
fn force_async_run_on_a_file_shows_the_iowq_note_in_json_and_text() {
    let dir = tempfile::tempdir().unwrap();
    let line = format!(
        "io --directory {} --size 4M --rw randread --bs 4k --iodepth 4 --runtime 1.2s --engine uring --force-async",
        p(dir.path())
    );
    let r = json_run(&line);
    assert_schema_valid(&r);
    let Some(v) = per_op(&r, "io_uring_queue_async_work_per_op") else {
        skip_root_only(
            "force_async_run_on_a_file_shows_the_iowq_note",
            "io_uring tracepoints unavailable",
        );
        return;
    };
    assert!(
        rules(&r).contains(&"iowq-offload".to_string()),
        "offloads {v}/op, notes {:?}",
        r["diagnoses"]
    );
    let d = r["diagnoses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["rule"] == "iowq-offload")
        .unwrap();
    assert_eq!(d["value"].as_f64(), Some(v));
    assert!(d["message"].as_str().unwrap().contains("--force-async"));
    let text = ringlab(&line);
    assert!(text.status.success());
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(
        out.contains("Diagnoses") && out.contains("[iowq-offload]"),
        "{out}"
    );
}

#[test]
fn fixed_files_run_has_no_file_lookup_note_and_a_shared_table_run_has_it() {
    let dir = tempfile::tempdir().unwrap();
    let base = format!(
        "io --directory {} --size 4M --rw randread --bs 4k --iodepth 4 --runtime 0.3s --engine uring --numjobs 2",
        p(dir.path())
    );
    let fixed = json_run(&format!("{base} --fixed-files"));
    assert_schema_valid(&fixed);
    if per_op(&fixed, "io_uring_file_get_per_op").is_none() {
        skip_root_only(
            "fixed_files_run_has_no_file_lookup_note",
            "io_uring_file_get unavailable",
        );
        return;
    }
    assert!(
        !rules(&fixed).contains(&"file-lookup-shared".to_string()),
        "{:?}",
        fixed["diagnoses"]
    );
    // Lookups without the knob are counted with --evidence full.
    let plain = json_run(&format!("{base} --evidence full"));
    let lookups = per_op(&plain, "io_uring_file_get_per_op").unwrap();
    assert!(
        lookups > 0.5,
        "a lookup per request expected, got {lookups}"
    );
    assert!(
        rules(&plain).contains(&"file-lookup-shared".to_string()),
        "{:?}",
        plain["diagnoses"]
    );
}

#[test]
fn advise_calibrates_ranks_and_recommends_within_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("calibration");
    let out = ringlab(&format!(
        "advise {} --size 4M --rw randread --bs 4k --iodepth 4 --threads 1 --cpus 0 --budget 20s --save {} --output-format json",
        p(dir.path()),
        p(&saved)
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let a: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid_against("advise.schema.json", &a);
    assert_eq!(a["source"], "calibration");
    // One CPU: no spare one for an SQPOLL poller, and no threads to share files.
    let skipped: Vec<&str> = a["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["setup"].as_str().unwrap())
        .collect();
    for s in ["sqpoll", "fixed-files", "iopoll"] {
        assert!(skipped.contains(&s), "{s} not skipped: {skipped:?}");
    }
    let ranked: Vec<&str> = a["ranked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["setup"].as_str().unwrap())
        .collect();
    assert!(ranked.contains(&"bare"), "{ranked:?}");
    // Each setup ran as planned: the bare ring without ringlab's default
    // task-run flags, the others with their knobs, read back from results.
    let row = |name: &str| {
        a["ranked"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["setup"] == name)
            .cloned()
    };
    let bare = row("bare").unwrap();
    assert_eq!(bare["knobs"], serde_json::json!([]));
    assert!(
        bare["flags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "--mode iou"),
        "{bare}"
    );
    if let Some(coop) = row("coop") {
        assert_eq!(coop["knobs"], serde_json::json!(["coop-taskrun"]));
    }
    let rec = a["recommendation"]["setup"].as_str().unwrap();
    assert!(ranked.contains(&rec));
    assert!(a["recommendation"]["ringlab_io"]
        .as_str()
        .unwrap()
        .starts_with("ringlab io TARGET --rw randread"));
    assert!(a["recommendation"]["liburing"]
        .as_str()
        .unwrap()
        .contains("io_uring_queue_init_params(4, &ring, &p)"));
    let c = &a["calibration"];
    assert_eq!(
        c["runs"].as_u64().unwrap(),
        ranked.len() as u64 * c["repeats"].as_u64().unwrap()
    );
    // The created calibration file is gone; the saved results remain and
    // give the same advice (skips included) without running anything.
    assert_eq!(leftovers(dir.path()), ["calibration"]);
    let again = json_run(&format!("advise --from {}", p(&saved)));
    assert_valid_against("advise.schema.json", &again);
    assert_eq!(again["source"], "results");
    assert_eq!(
        again["recommendation"]["setup"],
        a["recommendation"]["setup"]
    );
    assert_eq!(again["skipped"], a["skipped"]);
}

#[test]
fn advise_from_a_sweep_ranks_its_combinations() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "command = \"io\"\nrepeats = 2\nshuffle = true\n[options]\ndirectory = {:?}\nsize = \"4M\"\nrw = \"randread\"\niodepth = 4\nruntime = \"0.2s\"\nengine = \"uring\"\n[axes]\ncoop-taskrun = [false, true]\n",
            p(dir.path())
        ),
    )
    .unwrap();
    let sweep = dir.path().join("sweep");
    let run = ringlab(&format!("sweep {} --output {}", p(&plan), p(&sweep)));
    assert_ok(&run);
    for goal in ["iops", "latency", "cpu"] {
        let a = json_run(&format!("advise --from {} --goal {goal}", p(&sweep)));
        assert_valid_against("advise.schema.json", &a);
        assert_eq!(a["goal"], goal);
        let ranked = a["ranked"].as_array().unwrap();
        assert_eq!(ranked.len(), 2);
        assert!(ranked.iter().all(|s| s["repeats"] == 2));
        let names: Vec<&str> = ranked
            .iter()
            .map(|s| s["setup"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"coop-taskrun=false") && names.contains(&"coop-taskrun=true"),
            "{names:?}"
        );
    }
    // Text names the recommendation and its three forms.
    let text = ringlab(&format!("advise --from {}", p(&sweep)));
    let out = String::from_utf8_lossy(&text.stdout);
    for w in [
        "recommended:",
        "ringlab io:",
        "fio:",
        "liburing:",
        "guidelines",
    ] {
        assert!(out.contains(w), "{w} missing: {out}");
    }
    // A directory holding one result set (a reproduce output) is read too.
    let parent = ringlab(&format!("advise --from {}", p(dir.path())));
    assert_ok(&parent);
}

#[test]
fn advise_refuses_bad_input_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_fails(
        &ringlab(&format!("advise --from {}", p(&empty))),
        2,
        &["no results"],
    );
    let foreign = dir.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("index.json"), "{\"hello\": 1}").unwrap();
    assert_fails(
        &ringlab(&format!("advise --from {}", p(&foreign))),
        2,
        &["not a sweep index"],
    );
    assert_fails(
        &ringlab(&format!("advise {} --size 4M --budget 1s", p(dir.path()))),
        2,
        &["too short to measure anything", "--budget"],
    );
    assert_fails(
        &ringlab(&format!(
            "advise {} --size 4M --direct --bs 1000 --budget 10s --cpus 0",
            p(dir.path())
        )),
        2,
        &["cannot run", "logical block size"],
    );
    assert_eq!(
        leftovers(dir.path()).len(),
        2,
        "{:?}",
        leftovers(dir.path())
    );
}

#[test]
fn advise_writes_to_its_own_calibration_file_and_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let a = json_run(&format!(
        "advise {} --size 4M --rw randwrite --bs 4k --iodepth 4 --threads 1 --cpus 0 --budget 20s",
        p(dir.path())
    ));
    assert_valid_against("advise.schema.json", &a);
    assert_eq!(a["shape"]["rw"], "randwrite");
    assert!(a["ranked"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["iops"]["median"].as_f64().unwrap() > 0.0));
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
}

/// advise killed with SIGKILL: its calibration file (`ringlab-advise.dat`)
/// is never partial under that name, a second advise in the directory is
/// refused meanwhile (flock), the cleaner process removes the file and the
/// results directory, and the next run works.
#[test]
fn advise_after_sigkill_leaves_nothing_and_a_second_advise_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let line = format!(
        "advise {} --size 4M --rw randread --bs 4k --iodepth 4 --threads 1 --cpus 0 --budget 20s --output-format json",
        p(dir.path())
    );
    let mut child = std::process::Command::new(BIN)
        .args(argv(&line))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let file = dir.path().join("ringlab-advise.dat");
    let start = std::time::Instant::now();
    while !file.exists() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "no calibration file"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // Under its name it is whole (laid out beside it, then renamed).
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 4 << 20);
    // A second advise in the same directory is refused while the first
    // holds its lock, and touches nothing.
    let second = ringlab(&line);
    assert_eq!(second.status.code(), Some(2));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(
        err.contains("another ringlab advise is calibrating"),
        "{err}"
    );
    assert!(file.exists());
    let results = std::env::temp_dir().join(format!("ringlab-advise-{}", child.id()));
    child.kill().unwrap();
    let _ = child.wait();
    // The killed run's cleaner process removes its calibration file and
    // its results directory.
    let start = std::time::Instant::now();
    while !leftovers(dir.path()).is_empty() || results.exists() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "left behind after SIGKILL: {:?}, {} exists: {}",
            leftovers(dir.path()),
            results.display(),
            results.exists()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let a = json_run(&line.replace(" --output-format json", ""));
    assert_valid_against("advise.schema.json", &a);
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
}
