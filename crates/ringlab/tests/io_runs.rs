//! End-to-end runs of `ringlab io`: every engine and every --rw on a small
//! file with --verify, JSON output against the committed schema, and the
//! options that shape a run (io-size, pinning, keep, output, interruption).

mod common;

use common::*;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ENGINES: [&str; 4] = ["sync", "uring", "libaio", "posixaio"];
const RWS: [&str; 6] = ["read", "write", "randread", "randwrite", "randrw", "rw"];

/// The flag an engine is run with here: libaio without O_DIRECT is
/// synchronous inside io_submit (it runs, with a warning).
fn direct_for(engine: &str) -> &'static str {
    if engine == "libaio" {
        "--direct"
    } else {
        ""
    }
}

#[test]
fn every_engine_and_pattern_moves_the_right_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    for engine in ENGINES {
        for rw in RWS {
            for direct in ["", "--direct"] {
                let r = json_run(&format!(
                    "io --directory {d} --size 2m --bs 4k --engine {engine} --rw {rw} \
                     --iodepth 8 --runtime 150ms --verify {direct}"
                ));
                let total = &r["total"];
                let ops = total["ops"].as_u64().unwrap();
                assert!(ops > 0, "{engine} {rw}: no I/O");
                assert_eq!(total["bytes"].as_u64().unwrap(), ops * 4096);
                let reads = total["read"]["ops"].as_u64().unwrap();
                let writes = total["write"]["ops"].as_u64().unwrap();
                assert_eq!(reads + writes, ops);
                match rw {
                    "read" | "randread" => assert_eq!(writes, 0, "{engine} {rw}"),
                    "write" | "randwrite" => assert_eq!(reads, 0, "{engine} {rw}"),
                    _ => assert!(reads > 0 && writes > 0, "{engine} {rw}: {reads}r {writes}w"),
                }
                // Every read was checked in the run, and every block written
                // was read back and checked after it.
                let verified = total["verified_blocks"].as_u64().unwrap();
                assert!(verified >= reads, "{engine} {rw}: {verified} < {reads}");
                if writes > 0 {
                    assert!(
                        verified > reads,
                        "{engine} {rw}: written blocks not read back"
                    );
                }
                assert_eq!(r["config"]["engine"], engine);
                assert_eq!(r["config"]["rw"], rw);
                assert_eq!(r["config"]["direct"], !direct.is_empty());
                // Buffered libaio runs, as fio's does, but says it was
                // synchronous inside io_submit.
                let said = r["warnings"]
                    .to_string()
                    .contains("libaio without --direct");
                assert_eq!(
                    said,
                    engine == "libaio" && direct.is_empty(),
                    "{engine} {rw} {direct}"
                );
            }
        }
    }
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
}

#[test]
fn ring_setup_flags_move_the_right_bytes_and_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    for flags in [
        "--coop-taskrun",
        "--single-issuer",
        "--single-issuer --defer-taskrun",
        "--coop-taskrun --single-issuer --defer-taskrun",
    ] {
        let r = json_run(&format!(
            "io --directory {d} --size 2m --rw randrw --iodepth 16 --numjobs 2 --direct \
             --runtime 150ms --verify {flags}"
        ));
        let verified = r["total"]["verified_blocks"].as_u64().unwrap();
        assert!(
            verified > r["total"]["read"]["ops"].as_u64().unwrap(),
            "{flags}"
        );
        for name in ["coop-taskrun", "single-issuer", "defer-taskrun"] {
            let on = flags.contains(&format!("--{name}"));
            assert_eq!(r["config"][name], on, "{flags}: {name}");
        }
    }
    let text = ringlab(&format!(
        "io --directory {d} --size 1m --runtime 50ms --single-issuer --defer-taskrun"
    ));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("io_uring: --single-issuer --defer-taskrun --reap wait"),
        "{text}"
    );
}

#[test]
fn json_output_follows_the_committed_schema() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let single = json_run(&format!("io --directory {d} --size 1m --runtime 100ms"));
    assert_schema_valid(&single);
    let mixed = json_run(&format!(
        "io --directory {d} --size 2m --rw randrw --rwmixread 70 --numjobs 2 --iodepth 4 \
         --runtime 100ms --verify --cpus 0 --coop-taskrun"
    ));
    assert_schema_valid(&mixed);
    assert_eq!(mixed["jobs"].as_array().unwrap().len(), 2);
    let sync = json_run(&format!(
        "io --directory {d} --size 1m --engine sync --iodepth 4 --runtime 50ms"
    ));
    assert_schema_valid(&sync);
    assert!(sync["warnings"][0].as_str().unwrap().contains("no effect"));
    // The validator is not a rubber stamp.
    let mut broken = single.clone();
    broken["total"]["iops"] = Value::String("fast".into());
    assert!(!schema_validator().is_valid(&broken));
    let mut extra = single;
    extra["total"]["made_up"] = Value::from(0);
    assert!(!schema_validator().is_valid(&extra));
}

#[test]
fn totals_are_the_sum_of_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let r = json_run(&format!(
        "io --directory {d} --size 2m --numjobs 2 --iodepth 2 --runtime 100ms"
    ));
    let jobs = r["jobs"].as_array().unwrap();
    let sum = |k: &str| jobs.iter().map(|j| j[k].as_u64().unwrap()).sum::<u64>();
    for k in ["ops", "bytes", "cpu_user_ns", "cpu_sys_ns", "ctx_voluntary"] {
        assert_eq!(r["total"][k].as_u64().unwrap(), sum(k), "{k}");
    }
    let lat = &r["total"]["lat_ns"];
    let min_of_jobs = jobs
        .iter()
        .map(|j| j["lat_ns"]["min"].as_u64().unwrap())
        .min()
        .unwrap();
    assert_eq!(lat["min"].as_u64().unwrap(), min_of_jobs);
    assert!(lat["p50"].as_u64() <= lat["p99"].as_u64());
    assert!(lat["p99"].as_u64() <= lat["max"].as_u64());
}

#[test]
fn io_size_bounds_each_job_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    for engine in ENGINES {
        let r = json_run(&format!(
            "io --directory {d} --size 1m --engine {engine} --io-size 64k --iodepth 4 --numjobs 2 {}",
            direct_for(engine)
        ));
        for j in r["jobs"].as_array().unwrap() {
            assert_eq!(j["ops"], 16, "{engine}: 64 KiB of 4 KiB blocks");
        }
        assert_eq!(r["config"]["runtime"], Value::Null);
    }
}

#[test]
fn jobs_are_pinned_and_think_cycles_cost_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let r = json_run(&format!(
        "io --directory {d} --size 1m --cpus 0 --numjobs 2 --io-size 256k --thinkcycles 200000"
    ));
    for j in r["jobs"].as_array().unwrap() {
        assert_eq!(j["cpu"], 0);
        // 64 completions x 200k dependent multiply-adds is user CPU time.
        assert!(j["cpu_user_ns"].as_u64().unwrap() > 0);
    }
    assert_eq!(r["config"]["thinkcycles"], 200000);
}

#[test]
fn corrupted_block_fails_verify_and_names_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let w = json_run(&format!(
        "io --directory {d} --size 256k --rw write --io-size 256k --verify --keep"
    ));
    let path = w["target"]["path"].as_str().unwrap().to_string();
    assert_eq!(w["target"]["kept"], true);
    // A clean re-read passes.
    let ok = json_run(&format!("io {path} --rw read --io-size 256k --verify"));
    assert_eq!(ok["total"]["verified_blocks"], 64);
    // Flip one byte inside the block at offset 12288.
    let mut data = std::fs::read(&path).unwrap();
    data[12288 + 100] ^= 0xff;
    std::fs::write(&path, &data).unwrap();
    for engine in ENGINES {
        let out = ringlab(&format!(
            "io {path} --engine {engine} --rw read --io-size 256k --verify {}",
            direct_for(engine)
        ));
        assert_fails(&out, 1, &["offset 12288", "checksum"]);
    }
    // A file never written with --verify is named as such; with two jobs
    // and a long runtime, the first failure ends the run for both at once.
    let plain = dir.path().join("plain.dat");
    std::fs::write(&plain, vec![7u8; 64 << 10]).unwrap();
    let start = Instant::now();
    let out = ringlab(&format!(
        "io {} --rw randread --runtime 20s --numjobs 2 --verify",
        plain.display()
    ));
    assert_fails(&out, 1, &["no ringlab verify header"]);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "a failed job did not stop the run"
    );
}

#[test]
fn created_file_is_real_data_removed_unless_kept() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    json_run(&format!("io --directory {d} --size 1m --runtime 50ms"));
    assert!(leftovers(dir.path()).is_empty());
    let r = json_run(&format!(
        "io --directory {d} --size 1m --runtime 50ms --keep"
    ));
    let path = r["target"]["path"].as_str().unwrap();
    let meta = std::fs::metadata(path).unwrap();
    assert_eq!(meta.len(), 1 << 20);
    // Not sparse: every block is allocated, and no block is zeros.
    use std::os::unix::fs::MetadataExt;
    assert!(
        meta.blocks() * 512 >= 1 << 20,
        "sparse: {} blocks",
        meta.blocks()
    );
    let data = std::fs::read(path).unwrap();
    assert!(data.chunks(4096).all(|b| b.iter().any(|&x| x != 0)));
}

#[test]
fn text_output_and_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let out = ringlab(&format!(
        "io --directory {d} --size 1m --runtime 100ms --rw randrw"
    ));
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "ringlab io: randrw 4 KiB",
        "job 0:",
        "IOPS",
        "read :",
        "write:",
        "lat: min",
        "p99.99",
        "cpu  : user",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    // Not a terminal: no progress line, no escape codes.
    assert!(!text.contains('\r') && !text.contains('\x1b'), "{text:?}");
    let file = dir.path().join("r.json");
    let out = ringlab(&format!(
        "io --directory {d} --size 1m --runtime 50ms --output-format json --output {}",
        file.display()
    ));
    assert!(out.status.success());
    assert!(out.stdout.is_empty(), "--output also wrote to stdout");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(v["total"]["ops"].as_u64().unwrap() > 0);
}

#[test]
fn interrupt_ends_the_run_reports_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(BIN)
        .args(argv(&format!(
            "io --directory {} --size 1m --runtime 60s --output-format json",
            dir.path().display()
        )))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Signal once the run is under way: its job thread exists (the file is
    // unlinked as soon as it is created, so it cannot be watched for).
    let start = Instant::now();
    let job = format!("/proc/{}/task", child.id());
    let running = || {
        std::fs::read_dir(&job)
            .into_iter()
            .flatten()
            .flatten()
            .any(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|c| c.trim() == "ringlab-job0")
            })
    };
    while !running() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let start = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "run did not stop on SIGINT"
    );
    assert_ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["warnings"].to_string().contains("interrupted"));
    assert!(v["total"]["ops"].as_u64().unwrap() > 0);
    assert!(leftovers(dir.path()).is_empty());
}

/// IOSQE_ASYNC is chosen by the target: on every request of a device
/// without non-blocking I/O (zram, where io_uring hands every request to
/// io-wq anyway), never on a regular file, and never when given
/// (`--force-async=0`) or with the bare ring (`--mode iou`).
#[test]
fn force_async_is_chosen_where_the_target_takes_no_nonblocking_io() {
    let knobs = |r: &Value| {
        let c = &r["config"];
        let chosen = c["default-knobs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k == "force-async");
        (c["force-async"].as_u64().unwrap(), chosen)
    };
    let dir = tempfile::tempdir().unwrap();
    let file = json_run(&format!(
        "io --directory {} --size 4m --rw randread --direct --iodepth 4 --runtime 200ms --no-kstat",
        dir.path().display()
    ));
    assert_eq!(
        knobs(&file),
        (0, false),
        "a regular file takes non-blocking I/O"
    );
    let z = match Zram::new(16 << 20) {
        Ok(z) => z,
        Err(e) => {
            return skip_root_only(
                "force_async_is_chosen_where_the_target_takes_no_nonblocking_io",
                &e,
            )
        }
    };
    let line = format!(
        "io {} --rw randread --bs 4k --direct --iodepth 4 --runtime 200ms --no-kstat",
        z.dev
    );
    assert_eq!(knobs(&json_run(&line)), (1, true));
    assert_eq!(
        knobs(&json_run(&format!("{line} --force-async=0"))),
        (0, false)
    );
    assert_eq!(
        knobs(&json_run(&format!("{line} --force-async=2"))),
        (2, false)
    );
    assert_eq!(knobs(&json_run(&format!("{line} --mode iou"))), (0, false));
    let text = ringlab(&line);
    assert_ok(&text);
    assert!(
        String::from_utf8_lossy(&text.stdout)
            .contains("--force-async by default: the target takes no non-blocking I/O"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
}
