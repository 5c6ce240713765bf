//! The plugin against the real RocksDB: every knob reads exactly what the
//! default FileSystem reads, bad knobs are refused with their name, and
//! registered files show in the kernel evidence. Skipped (with the reason)
//! only where the Debian packages are missing; `.ci/run` installs them.

use ringlab_rocksdb::{built_checker, built_plugin, runner, INSTALL};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

/// db_bench opens the database read-write (its LOCK file): one at a time.
static DB_BENCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn db_bench_turn() -> std::sync::MutexGuard<'static, ()> {
    DB_BENCH.lock().unwrap_or_else(|e| e.into_inner())
}

struct Kit {
    plugin: PathBuf,
    checker: PathBuf,
    db: PathBuf,
    _dir: tempfile::TempDir,
}

/// The plugin, the checker and a database of 3000 keys, made once; `Err`
/// says why the tests cannot run here.
fn kit() -> &'static Result<Kit, String> {
    static KIT: OnceLock<Result<Kit, String>> = OnceLock::new();
    KIT.get_or_init(|| {
        let plugin = built_plugin()?;
        let checker = built_checker().ok_or("the checker was not built")?;
        if Command::new("db_bench").arg("--version").output().is_err() {
            return Err(format!(
                "db_bench is not installed (rocksdb-tools): {INSTALL}"
            ));
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let db = dir.path().join("db");
        // fillseq writes every key once; flush to SST files so reads go
        // through the file system.
        let out = Command::new("db_bench")
            .args(runner::fill_args(&db, 3000))
            .arg("--benchmarks=fillseq,flush")
            .output()
            .map_err(|e| e.to_string())?;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // What `ringlab rocksdb` leaves in a database it made, so the
        // runner reuses this one.
        std::fs::write(db.join("ringlab-db.json"), "{\"keys\": 3000}\n").unwrap();
        Ok(Kit {
            plugin,
            checker,
            db,
            _dir: dir,
        })
    })
}

macro_rules! require_kit {
    ($name:expr) => {
        match kit() {
            Ok(k) => k,
            // Only missing packages skip; a plugin that fails to compile
            // with them installed is a failure.
            Err(why) if why.contains(INSTALL) => {
                eprintln!("skipped {}: {why}", $name);
                return;
            }
            Err(why) => panic!("{why}"),
        }
    };
}

/// The checker's line for `uri` ("" = the default FileSystem).
fn checksums(k: &Kit, uri: &str, direct: bool) -> Result<String, String> {
    let mut cmd = Command::new(&k.checker);
    cmd.arg(&k.db).arg(uri).arg(if direct { "1" } else { "0" });
    if !uri.is_empty() {
        cmd.env("LD_PRELOAD", &k.plugin)
            .env("RINGLAB_FS_QUIET", "1");
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

const KNOB_SETS: &[&str] = &[
    "",
    "coop_taskrun",
    "coop_taskrun,taskrun_flag",
    "single_issuer",
    "single_issuer,defer_taskrun",
    "single_issuer,defer_taskrun,taskrun_flag",
    "sqpoll",
    "sqpoll,sqpoll_cpu=0,sqpoll_idle=20",
    "force_async",
    "fixed_files",
    "fixed_buffers",
    "depth=1",
    "depth=2,fixed_files,fixed_buffers,force_async",
];

/// The checker's second line with the plugin loaded: asynchronous reads
/// (submitted, delivered by Poll, aborted).
fn async_counts(line: &str) -> Option<[u64; 3]> {
    let rest = line.strip_prefix("async_reads ")?;
    let mut out = [0u64; 3];
    for (slot, (word, want)) in rest
        .split(' ')
        .zip(["submitted", "delivered", "aborted"])
        .enumerate()
    {
        let (k, v) = word.split_once('=')?;
        if k != want {
            return None;
        }
        out[slot] = v.parse().ok()?;
    }
    Some(out)
}

#[test]
fn every_knob_reads_exactly_what_the_default_file_system_reads() {
    let k = require_kit!("every_knob_reads_exactly_what_the_default_file_system_reads");
    for direct in [true, false] {
        let want = checksums(k, "", direct).expect("default FileSystem");
        assert!(want.starts_with("keys=3000 "), "{want}");
        assert_eq!(want.lines().count(), 1, "no plugin, no async line: {want}");
        for knobs in KNOB_SETS {
            let uri = format!("ringlab://{knobs}");
            let got = checksums(k, &uri, direct).unwrap_or_else(|e| panic!("{uri}: {e}"));
            let mut lines = got.lines();
            // The plain scan, the async_io scan and MultiGet all read what
            // the default FileSystem reads.
            assert_eq!(lines.next(), Some(want.as_str()), "{uri} direct={direct}");
            // The async_io scan went through ReadAsync on the ring and its
            // callbacks came from Poll (not a synchronous fallback).
            let line = lines.next().unwrap_or("");
            let [submitted, delivered, aborted] =
                async_counts(line).unwrap_or_else(|| panic!("{uri}: no async_reads line in {got}"));
            assert!(submitted > 0, "{uri} direct={direct}: {line}");
            assert!(delivered > 0, "{uri} direct={direct}: {line}");
            assert_eq!(
                submitted,
                delivered + aborted,
                "{uri} direct={direct}: {line}"
            );
        }
    }
}

#[test]
fn bad_knobs_fail_the_open_with_their_name() {
    let k = require_kit!("bad_knobs_fail_the_open_with_their_name");
    let cases = [
        ("ringlab://turbo", "unknown knob 'turbo'"),
        (
            "ringlab://coop_taskrun,sqpoll",
            "'coop_taskrun' cannot be combined with 'sqpoll'",
        ),
        (
            "ringlab://sqpoll,defer_taskrun,single_issuer",
            "'defer_taskrun' cannot be combined with 'sqpoll'",
        ),
        (
            "ringlab://defer_taskrun",
            "'defer_taskrun' needs 'single_issuer'",
        ),
        (
            "ringlab://taskrun_flag",
            "'taskrun_flag' needs 'coop_taskrun' or 'defer_taskrun'",
        ),
        (
            "ringlab://sqpoll_cpu=1",
            "'sqpoll_cpu' only applies to an SQPOLL ring",
        ),
        (
            "ringlab://depth=0",
            "knob 'depth' needs a number from 1 to 4096",
        ),
        ("ringlab://depth", "knob 'depth' needs a number"),
        (
            "ringlab://fixed_files=1",
            "knob 'fixed_files' takes no value",
        ),
    ];
    for (uri, msg) in cases {
        let e = checksums(k, uri, true).expect_err(uri);
        assert!(e.contains(msg), "{uri}: {e}");
    }
}

#[test]
fn db_bench_finds_the_plugin_through_fs_uri() {
    let k = require_kit!("db_bench_finds_the_plugin_through_fs_uri");
    let _turn = db_bench_turn();
    let out = Command::new("db_bench")
        .env("LD_PRELOAD", &k.plugin)
        .args([
            "--benchmarks=multireadrandom",
            "--use_existing_db",
            "--num=3000",
            "--key_size=100",
            "--value_size=100",
            "--use_direct_reads",
            "--batch_size=4",
            "--multiread_batched=true",
            "--fs_uri=ringlab://coop_taskrun,depth=8",
        ])
        .arg(format!("--db={}", k.db.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("ringlab fs: io_uring reads with depth=8,coop_taskrun"),
        "{stderr}"
    );
    // fillseq wrote every key: all are found.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("(3000 of 3000 found)"), "{stdout}");
}

#[test]
fn db_bench_async_io_scans_go_through_the_ring() {
    let k = require_kit!("db_bench_async_io_scans_go_through_the_ring");
    let _turn = db_bench_turn();
    for knobs in [
        "",
        "single_issuer,defer_taskrun",
        "sqpoll",
        "fixed_files,fixed_buffers",
    ] {
        let out = Command::new("db_bench")
            .env("LD_PRELOAD", &k.plugin)
            .env("RINGLAB_FS_ASYNC_STATS", "1")
            .args([
                "--benchmarks=seekrandom",
                "--use_existing_db",
                "--num=3000",
                "--reads=200",
                "--seek_nexts=100",
                "--key_size=100",
                "--value_size=100",
                "--use_direct_reads",
                "--async_io=1",
                "--cache_size=0",
            ])
            .arg(format!("--fs_uri=ringlab://{knobs}"))
            .arg(format!("--db={}", k.db.display()))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{knobs}: {stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("(200 of 200 found)"), "{knobs}: {stdout}");
        // FilePrefetchBuffer's reads were submitted on the ring, and each
        // was either delivered through Poll or aborted.
        // db_bench's progress ends without a newline: find the words.
        let line = stderr
            .rfind("async_reads ")
            .map(|at| stderr[at..].lines().next().unwrap_or(""))
            .unwrap_or("");
        let [submitted, delivered, aborted] =
            async_counts(line).unwrap_or_else(|| panic!("{knobs}: no async stats in {stderr}"));
        assert!(submitted > 0 && delivered > 0, "{knobs}: {line}");
        assert_eq!(submitted, delivered + aborted, "{knobs}: {line}");
    }
}

#[test]
fn registered_files_need_no_file_lookup_per_read() {
    let k = require_kit!("registered_files_need_no_file_lookup_per_read");
    let _turn = db_bench_turn();
    if ringlab_kstat::perf::event_id("io_uring:io_uring_file_get").is_err() {
        eprintln!("skipped registered_files_need_no_file_lookup_per_read: io_uring tracepoints not readable");
        return;
    }
    let out_dir = tempfile::tempdir().unwrap();
    let results = out_dir.path().join("results");
    let args = args_for(&k.db, &results, &["L-DEF", "L-FIXED"]);
    let mut text = Vec::new();
    let outcomes = runner::run_matrix(&args, &Arc::new(AtomicBool::new(false)), &mut text)
        .unwrap_or_else(|e| panic!("{e:#}"));
    let per_request = |name: &str| -> f64 {
        let o = outcomes.iter().find(|o| o.config.name == name).unwrap();
        let kstat = o.result.kstat.as_ref().expect("kstat");
        ringlab_rocksdb::evidence::file_get_per_request(kstat)
            .unwrap_or_else(|| panic!("{name}: {:?}", kstat.unavailable))
    };
    let plain = per_request("L-DEF");
    let fixed = per_request("L-FIXED");
    assert!(plain >= 0.99, "a plain read looks its file up: {plain}");
    assert!(fixed < plain, "registered files: {fixed} vs plain {plain}");
    // The results directory is what `ringlab report` reads.
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(results.join("index.json")).unwrap()).unwrap();
    assert_eq!(index["plan"]["command"], "rocksdb");
    assert_eq!(index["runs"].as_array().unwrap().len(), 2);
    let first = results.join(index["runs"][0]["result"].as_str().unwrap());
    let bytes = std::fs::read(first).unwrap();
    // Every result follows the committed schema, as io's and http's do.
    let schema: serde_json::Value = serde_json::from_slice(
        &std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../schema/result.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for run in index["runs"].as_array().unwrap() {
        let v: serde_json::Value = serde_json::from_slice(
            &std::fs::read(results.join(run["result"].as_str().unwrap())).unwrap(),
        )
        .unwrap();
        let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", run["result"]);
    }
    let r: ringlab_stats::RunResult = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(r.command, "rocksdb");
    assert!(r.total.ops > 0);
    let _ = String::from_utf8(text).unwrap();
}

fn args_for(db: &Path, output: &Path, configs: &[&str]) -> runner::RocksdbArgs {
    runner::RocksdbArgs {
        db: Some(db.to_path_buf()),
        keys: 3000,
        duration: 1,
        repeats: 1,
        configs: configs.iter().map(|s| s.to_string()).collect(),
        cpu: None,
        sqpoll_cpu: None,
        threads: 1,
        batch_size: 4,
        db_bench: PathBuf::from("db_bench"),
        plugin: None,
        output: Some(output.to_path_buf()),
        no_kstat: false,
        output_format: runner::RocksdbFormat::Text,
    }
}
