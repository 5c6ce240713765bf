//! Every io_uring knob and preset, alone and in the combinations the seeds
//! use, on a small file with --verify: each must return the right bytes at
//! the right offsets and be recorded in the result. A case is skipped only
//! when this machine lacks what it needs, and the skip says why.

mod common;

use common::*;
use serde_json::Value;

/// Runs a verified mixed workload with `knobs`; returns the result.
fn verified_run(dir: &str, knobs: &str) -> Value {
    let r = json_run(&format!(
        "io --directory {dir} --size 2m --rw randrw --iodepth 8 --direct --runtime 120ms \
         --verify {knobs}"
    ));
    let total = &r["total"];
    let ops = total["ops"].as_u64().unwrap();
    let reads = total["read"]["ops"].as_u64().unwrap();
    let writes = total["write"]["ops"].as_u64().unwrap();
    assert!(reads > 0 && writes > 0, "{knobs}: {reads}r {writes}w");
    assert_eq!(reads + writes, ops, "{knobs}");
    assert_eq!(total["bytes"].as_u64().unwrap(), ops * 4096, "{knobs}");
    let verified = total["verified_blocks"].as_u64().unwrap();
    assert!(verified > reads, "{knobs}: written blocks not read back");
    r
}

/// The setup flags `ringlab features` found this kernel refuses.
fn refused_setup_flags() -> Vec<String> {
    let f = json_run("features");
    f["setup_flags"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["supported"] == false)
        .map(|k| k["flag"].as_str().unwrap().to_string())
        .collect()
}

fn poll_queues_available(dir: &std::path::Path) -> bool {
    let out = ringlab(&format!(
        "io --directory {} --size 1m --runtime 20ms --direct --iopoll",
        dir.display()
    ));
    out.status.success()
}

#[test]
fn every_knob_moves_the_right_bytes_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    // (flags, config key, expected value)
    let cases: &[(&str, &str, Value)] = &[
        ("--sqpoll", "sqpoll", Value::Bool(true)),
        ("--sqpoll --sqpoll-cpu 0", "sqpoll-cpu", 0.into()),
        ("--sqpoll --sqpoll-idle 5", "sqpoll-idle", 5.into()),
        ("--sqpoll --reap wait", "reap", "wait".into()),
        ("--sqpoll --reap peek", "reap", "peek".into()),
        ("--coop-taskrun", "coop-taskrun", Value::Bool(true)),
        (
            "--coop-taskrun --taskrun-flag",
            "taskrun-flag",
            Value::Bool(true),
        ),
        (
            "--coop-taskrun --taskrun-flag --reap spin",
            "reap",
            "spin".into(),
        ),
        (
            "--coop-taskrun --taskrun-flag --reap peek",
            "reap",
            "peek".into(),
        ),
        ("--single-issuer", "single-issuer", Value::Bool(true)),
        (
            "--single-issuer --defer-taskrun",
            "defer-taskrun",
            Value::Bool(true),
        ),
        (
            "--single-issuer --defer-taskrun --taskrun-flag --reap peek",
            "taskrun-flag",
            Value::Bool(true),
        ),
        ("--fixed-files", "fixed-files", Value::Bool(true)),
        ("--fixed-buffers", "fixed-buffers", Value::Bool(true)),
        ("--force-async", "force-async", 1.into()),
        ("--force-async=3", "force-async", 3.into()),
        ("--submit-batch 1", "submit-batch", 1.into()),
        ("--submit-batch 4", "submit-batch", 4.into()),
        ("--complete-batch 4", "complete-batch", 4.into()),
        ("--reap peek", "reap", "peek".into()),
        ("--reap spin", "reap", "spin".into()),
        ("--completion-thread 0", "completion-thread", 0.into()),
        (
            "--completion-thread 1 --coop-taskrun --thinkcycles 2000",
            "completion-thread",
            1.into(),
        ),
        ("--register-ring", "register-ring", Value::Bool(true)),
        ("--submit-all", "submit-all", Value::Bool(true)),
        ("--no-sqarray", "no-sqarray", Value::Bool(true)),
        ("--no-sqarray --sqpoll", "no-sqarray", Value::Bool(true)),
        ("--cq-size 64", "cq-size", 64.into()),
        (
            "--iowq-max-workers 2,0 --force-async",
            "iowq-max-workers",
            serde_json::json!([2, 0]),
        ),
        (
            "--sqpoll --fixed-files --fixed-buffers --register-ring --submit-batch 2",
            "fixed-buffers",
            Value::Bool(true),
        ),
        (
            "--coop-taskrun --single-issuer --defer-taskrun --fixed-files --fixed-buffers \
             --register-ring --complete-batch 2",
            "defer-taskrun",
            Value::Bool(true),
        ),
    ];
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let refused = refused_setup_flags();
    for (flags, key, want) in cases {
        if cpus < 2 && flags.contains("--completion-thread 1") {
            skip(
                &format!("{} ({flags})", current_test()),
                "this machine has one CPU",
            );
            continue;
        }
        if let Some(f) = refused
            .iter()
            .find(|f| flags.split(' ').any(|w| w == format!("--{f}")))
        {
            skip(
                flags,
                &format!("this kernel refuses --{f} (ringlab features)"),
            );
            continue;
        }
        let r = verified_run(&d, flags);
        assert_eq!(&r["config"][*key], want, "{flags}: config {key}");
    }
    // Shared SQPOLL thread: needs more than one job ring.
    let r = verified_run(&d, "--sqpoll --attach-wq --numjobs 2");
    assert_eq!(r["config"]["attach-wq"], true);
    assert_eq!(r["jobs"].as_array().unwrap().len(), 2);
    if poll_queues_available(dir.path()) {
        let r = verified_run(&d, "--iopoll");
        assert_eq!(r["config"]["iopoll"], true);
        verified_run(&d, "--iopoll --sqpoll");
        if refused.iter().any(|f| f == "hybrid-iopoll") {
            skip(
                "--hybrid-iopoll",
                "this kernel refuses it (ringlab features)",
            );
        } else {
            let r = verified_run(&d, "--iopoll --hybrid-iopoll");
            assert_eq!(r["config"]["hybrid-iopoll"], true);
        }
    } else {
        skip(
            &format!("{} (--iopoll runs)", current_test()),
            &format!(
                "the device under {d} has no poll queues (queue/io_poll is 0); \
                 the refusal itself is tested in usage_errors.rs"
            ),
        );
    }
}

#[test]
fn presets_expand_to_the_seeds_configurations() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    for (mode, on) in [
        ("iou", vec![]),
        ("iou+k", vec!["sqpoll"]),
        ("enhanced", vec!["fixed-files", "fixed-buffers"]),
    ] {
        let r = verified_run(&d, &format!("--mode {mode}"));
        let c = &r["config"];
        assert_eq!(c["mode"], mode);
        for key in ["sqpoll", "iopoll", "fixed-files", "fixed-buffers"] {
            assert_eq!(c[key], on.contains(&key), "--mode {mode}: {key}");
        }
    }
    let text = ringlab(&format!(
        "io --directory {d} --size 1m --runtime 30ms --mode iou+k"
    ));
    let err = String::from_utf8_lossy(&text.stderr).to_string();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("io_uring: --mode iou+k = --sqpoll --reap spin"),
        "{text} {err}"
    );
    if poll_queues_available(dir.path()) {
        verified_run(&d, "--mode iou+p");
    } else {
        skip(
            &format!("{} (--mode iou+p)", current_test()),
            &format!("the device under {d} has no poll queues"),
        );
    }
}

#[test]
fn nop_measures_the_ring_alone() {
    let dir = tempfile::tempdir().unwrap();
    for knobs in [
        "",
        "--sqpoll",
        "--force-async",
        "--single-issuer --defer-taskrun",
    ] {
        let r = json_run(&format!(
            "io --directory {} --rw nop --iodepth 16 --runtime 80ms {knobs}",
            dir.path().display()
        ));
        let ops = r["total"]["ops"].as_u64().unwrap();
        assert!(ops > 0, "{knobs}");
        assert_eq!(r["total"]["bytes"], 0, "{knobs}");
        assert_eq!(r["total"]["read"]["ops"], 0);
        assert_eq!(r["total"]["write"]["ops"], 0);
        assert!(r["total"]["lat_ns"]["p50"].as_u64().is_some(), "{knobs}");
        assert!(r["target"].is_null(), "a nop run has no target");
        assert_eq!(r["config"]["rw"], "nop");
    }
    assert!(
        leftovers(dir.path()).is_empty(),
        "a nop run creates no file"
    );
}

#[test]
fn the_aio_engines_verify_with_several_jobs_and_depths() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    for (engine, direct) in [
        ("libaio", "--direct"),
        ("libaio", "--direct --submit-batch 1"),
        ("libaio", "--direct --complete-batch 4"),
        ("posixaio", ""),
        ("posixaio", "--direct"),
    ] {
        for depth in [1, 32] {
            if direct.contains("complete-batch 4") && depth < 4 {
                continue;
            }
            let r = json_run(&format!(
                "io --directory {d} --size 4m --engine {engine} {direct} --rw randrw \
                 --iodepth {depth} --numjobs 2 --runtime 120ms --verify"
            ));
            for (k, flag) in [
                ("submit-batch", "--submit-batch 1"),
                ("complete-batch", "--complete-batch 4"),
            ] {
                if direct.contains(flag) {
                    let n: u64 = flag.rsplit(' ').next().unwrap().parse().unwrap();
                    assert_eq!(r["config"][k], n, "{engine} {direct}: {k} not recorded");
                }
            }
            let t = &r["total"];
            assert!(
                t["write"]["ops"].as_u64().unwrap() > 0,
                "{engine} qd{depth}"
            );
            assert!(
                t["verified_blocks"].as_u64().unwrap() > t["read"]["ops"].as_u64().unwrap(),
                "{engine} qd{depth}"
            );
        }
    }
}

#[test]
fn features_reports_what_the_kernel_accepts_and_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let f = json_run(&format!("features {}", dir.path().display()));
    assert!(!f["kernel"].as_str().unwrap().is_empty());
    let flags = f["setup_flags"].as_array().unwrap();
    for name in [
        "sqpoll",
        "iopoll",
        "coop-taskrun",
        "single-issuer",
        "defer-taskrun",
        "attach-wq",
        "submit-all",
        "no-sqarray",
        "hybrid-iopoll",
    ] {
        let k = flags
            .iter()
            .find(|k| k["flag"] == name)
            .unwrap_or_else(|| panic!("{name} not listed"));
        // Every knob the matrix above ran was accepted; the two must agree.
        if f["io_uring_error"].is_null() && name != "iopoll" {
            assert_eq!(k["supported"], true, "{name}: {k}");
        }
    }
    let ops = f["opcodes"].as_array().unwrap();
    assert!(ops.iter().any(|o| o == "READ") && ops.iter().any(|o| o == "NOP"));
    let dev = &f["device"];
    assert!(!dev["name"].as_str().unwrap().is_empty(), "{dev}");
    // The same answer the --iopoll refusal relies on.
    let polled = ringlab(&format!(
        "io --directory {} --size 1m --runtime 20ms --direct --iopoll",
        dir.path().display()
    ))
    .status
    .success();
    if dev["io_poll"] == false {
        assert!(!polled, "io_poll 0 but --iopoll ran");
    }
    let text = String::from_utf8(ringlab("features").stdout).unwrap();
    assert!(text.contains("--defer-taskrun") && text.contains("IORING_SETUP_DEFER_TASKRUN"));
    assert!(text.contains("RLIMIT_MEMLOCK"));
    assert_fails(
        &ringlab("features /nonexistent-ringlab"),
        2,
        &["does not exist"],
    );
}

#[test]
fn the_default_ring_is_the_peers_and_mode_iou_is_bare() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let refused = refused_setup_flags();
    let want: Vec<&str> = ["coop-taskrun", "single-issuer", "defer-taskrun"]
        .into_iter()
        .filter(|f| !refused.iter().any(|r| r == f))
        .filter(|f| *f != "defer-taskrun" || !refused.iter().any(|r| r == "single-issuer"))
        .collect();
    let r = verified_run(&d, "");
    assert_eq!(r["config"]["default-knobs"], serde_json::json!(want));
    for k in &want {
        assert_eq!(r["config"][*k], true, "{k}");
    }
    let bare = verified_run(&d, "--mode iou");
    assert_eq!(bare["config"]["default-knobs"], serde_json::json!([]));
    for k in ["coop-taskrun", "single-issuer", "defer-taskrun"] {
        assert_eq!(bare["config"][k], false, "{k}");
    }
    // What the user chose stays as chosen; SQPOLL gets none of them.
    let given = verified_run(&d, "--coop-taskrun");
    assert_eq!(given["config"]["default-knobs"], serde_json::json!([]));
    assert_eq!(given["config"]["defer-taskrun"], false);
    let sq = verified_run(&d, "--sqpoll");
    assert_eq!(sq["config"]["default-knobs"], serde_json::json!([]));
    assert_eq!(sq["config"]["coop-taskrun"], false);
    // The text says which were chosen by default.
    let out = ringlab(&format!(
        "io --directory {d} --size 2m --direct --runtime 50ms"
    ));
    let text = String::from_utf8_lossy(&out.stdout);
    if !want.is_empty() {
        assert!(text.contains("chosen by default"), "{text}");
    }
}

#[test]
fn http_uring_drivers_get_the_default_ring_too() {
    let refused = refused_setup_flags();
    if ["coop-taskrun", "single-issuer", "defer-taskrun"]
        .iter()
        .any(|f| refused.iter().any(|r| r == f))
    {
        skip(
            "http_uring_drivers_get_the_default_ring_too",
            "this kernel lacks part of the default ring",
        );
        return;
    }
    let server = Server::start("");
    let url = server.url();
    // (io, connections, flags, the default knobs chosen): DEFER_TASKRUN only
    // from 20 connections a thread (ringlab_net::plan::DEFER_TASKRUN_MIN_CONNECTIONS).
    let ring = ["coop-taskrun", "single-issuer", "defer-taskrun"];
    for (io, conns, extra, want) in [
        ("uring", 2, "", &ring[..2]),
        ("uring", 20, "", &ring[..]),
        ("uring", 40, "-t 2", &ring[..]),
        ("uring", 39, "-t 2", &ring[..2]),
        ("uring-nb", 2, "", &ring[..2]),
        ("uring", 2, "--mode iou", &[][..]),
        ("uring", 2, "--sqpoll", &[][..]),
    ] {
        let r = json_run(&format!(
            "http {url} -d 300ms -c {conns} --io {io} {extra} {}",
            if extra.contains("-t ") { "" } else { "-t 1" }
        ));
        let c = &r["config"];
        let what = format!("{io} -c {conns} {extra}");
        assert!(r["total"]["ops"].as_u64().unwrap() > 0, "{what}");
        assert_eq!(
            c["defer-taskrun"],
            want.contains(&"defer-taskrun"),
            "{what}: {c}"
        );
        assert_eq!(
            c["coop-taskrun"],
            want.contains(&"coop-taskrun"),
            "{what}: {c}"
        );
        assert_eq!(c["default-knobs"], serde_json::json!(want), "{what}");
    }
    server.stop();
}
