//! A fio user's command line, job files and JSON consumers work with
//! `ringlab io`: fio's spellings, job files run section by section, the
//! fio-json shape read the way fio-plot reads it, and named targets laid
//! out like fio's, safely.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn run_env(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_limited(cmd)
}

fn ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Checks a fio-json document the way fio-plot's jsonimport and
/// jsonparsing read it: every key it takes, with the type it uses.
fn assert_fio_plot_reads(doc: &Value, dirs: &[&str]) {
    // validate_json_file: at least two of these four.
    let top = ["fio version", "global options", "client_stats", "jobs"];
    assert!(top.iter().filter(|k| doc.get(**k).is_some()).count() >= 2);
    assert!(doc["fio version"].is_string());
    assert!(doc["global options"].is_object());
    let jobs = doc["jobs"].as_array().expect("jobs[]");
    assert!(!jobs.is_empty());
    for job in jobs {
        assert!(job["jobname"].is_string(), "{job}");
        let mut opts = job["job options"].as_object().expect("job options").clone();
        // fio-plot merges the global options into each job's.
        for (k, v) in doc["global options"].as_object().unwrap() {
            opts.insert(k.clone(), v.clone());
        }
        for k in ["rw", "iodepth", "numjobs", "bs"] {
            assert!(opts[k].is_string(), "job options.{k}: {opts:?}");
        }
        // int(job_options["iodepth"]), int(job_options["numjobs"])
        opts["iodepth"].as_str().unwrap().parse::<u32>().unwrap();
        opts["numjobs"].as_str().unwrap().parse::<u32>().unwrap();
        for d in dirs {
            let m = &job[*d];
            assert!(m["bw"].is_u64(), "{d}.bw");
            assert!(m["iops"].is_f64(), "{d}.iops");
            assert!(m["iops_stddev"].is_f64(), "{d}.iops_stddev");
            assert!(m["lat_ns"]["mean"].is_f64(), "{d}.lat_ns.mean");
            assert!(m["lat_ns"]["stddev"].is_f64(), "{d}.lat_ns.stddev");
            assert!(m["total_ios"].as_u64().unwrap() > 0);
            let pct = m["clat_ns"]["percentile"].as_object().unwrap();
            assert!(!pct.is_empty() && pct.values().all(Value::is_u64));
            // fio's rule: psync has no separate submission (slat N = 0,
            // clat = lat); an asynchronous engine times both.
            let sync = opts["ioengine"].as_str() == Some("psync");
            let n = m["total_ios"].as_u64().unwrap();
            assert_eq!(m["slat_ns"]["N"], if sync { 0 } else { n }, "{d}.slat_ns");
            assert_eq!(m["clat_ns"]["N"], n, "{d}.clat_ns");
            assert_eq!(m["lat_ns"]["N"], n, "{d}.lat_ns");
            if sync {
                assert_eq!(m["clat_ns"]["mean"], m["lat_ns"]["mean"]);
            }
        }
        for b in ["latency_ns", "latency_us", "latency_ms"] {
            let sum: f64 = job[b]
                .as_object()
                .unwrap_or_else(|| panic!("{b}"))
                .values()
                .map(|v| v.as_f64().unwrap())
                .sum();
            assert!(sum <= 100.0001, "{b} sums to {sum}");
        }
        assert!(job["usr_cpu"].is_f64() && job["sys_cpu"].is_f64());
    }
}

#[test]
fn the_first_fio_command_line_runs_and_fio_plot_reads_its_json() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.dat");
    let f = file.display();
    let line = format!(
        "io --filename={f} --size=1M --rw=randread --bs=4k --ioengine=io_uring --iodepth=8 --direct=1 --runtime=1 --time_based --name=test --numjobs=2 --group_reporting --percentile_list=95:99.5 --output-format fio-json --no-kstat"
    );
    let doc: Value = serde_json::from_str(&ok(&ringlab(&line))).unwrap();
    assert_fio_plot_reads(&doc, &["read"]);
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "group_reporting: one entry");
    assert_eq!(jobs[0]["jobname"], "test");
    assert_eq!(jobs[0]["job options"]["ioengine"], "io_uring");
    assert_eq!(jobs[0]["ringlab"]["threads"], 2);
    let pct = jobs[0]["read"]["clat_ns"]["percentile"]
        .as_object()
        .unwrap();
    let keys: Vec<&str> = pct.keys().map(String::as_str).collect();
    assert_eq!(keys, ["95.000000", "99.500000"], "percentile_list");
    // Laid out at --size, real data, kept.
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 1 << 20);
    // Without group_reporting, one entry per thread, as fio writes; json+
    // adds the histogram bins.
    // (Into a file: json+ is larger than a pipe holds.)
    let out = dir.path().join("plus.json");
    let line = format!(
        "io --filename={f} --rw=randrw --bs=4k --iodepth=2 --runtime=1 --time_based --numjobs=2 --output-format json+ --no-kstat --output {}",
        out.display()
    );
    ok(&ringlab(&line));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_fio_plot_reads(&doc, &["read", "write"]);
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    for j in jobs {
        let n: u64 = j["read"]["clat_ns"]["bins"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(n, j["read"]["total_ios"].as_u64().unwrap());
    }
}

/// Job files written the way fio's examples are.
const FOUR_STEPS: &str = "\
# Sequential and random reads and writes of one file, each step after the
# previous one ends (stonewall).
[global]
bs=4k
ioengine=libaio
iodepth=4
size=${SIZE}
direct=1
runtime=1
directory=${DIR}
filename=steps.test.file

[seq-read]
rw=read
stonewall

[rand-read]
rw=randread
stonewall

[seq-write]
rw=write
stonewall

[rand-write]
rw=randwrite
stonewall
";

const DEPTHS: &str = "\
; Read two files with io_uring at different depths
[global]
ioengine=io_uring
buffered=0
rw=randread
bs=16k
size=512k
directory=${DIR}

[file1]
iodepth=4

[file2]
iodepth=16
";

const MIXED: &str = "\
; mixed random read/write, 60/40, time based
[global]
name=mixed-rw
filename=${DIR}/mixed-rw
rw=randrw
rwmixread=60
rwmixwrite=40
bs=4K
direct=0
numjobs=2
time_based
runtime=1
group_reporting

[file1]
size=1M
ioengine=psync
";

const THREADS: &str = "\
; two groups of threads, tiobench style
[global]
direct=1
size=256k
bsrange=4k-4k
timeout=1
numjobs=2\t; 2 threads for each job
thread
filename=${DIR}/tio.file

[f1]
rw=write

[f2]
stonewall
rw=randread
";

fn write_job(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn job_files_like_fios_examples_run_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let env = [("SIZE", "512k"), ("DIR", d.as_str())];

    let steps = write_job(dir.path(), "steps.fio", FOUR_STEPS);
    let out = run_env(
        &[
            "io",
            "--fio",
            &steps,
            "--output-format",
            "fio-json",
            "--no-kstat",
        ],
        &env,
    );
    let doc: Value = serde_json::from_str(&ok(&out)).unwrap();
    let jobs = doc["jobs"].as_array().unwrap();
    let names: Vec<(&str, u64)> = jobs
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap(),
                j["groupid"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("seq-read", 0),
            ("rand-read", 1),
            ("seq-write", 2),
            ("rand-write", 3)
        ]
    );
    // Without time_based fio stops a job after size bytes: 512 KiB of 4k.
    for (j, dir) in jobs.iter().zip(["read", "read", "write", "write"]) {
        assert_eq!(j[dir]["total_ios"], 128, "{}", j["jobname"]);
        assert_eq!(
            j["job options"]["rw"].as_str().unwrap(),
            j["job options"]["rw"]
        );
    }
    assert_eq!(doc["global options"]["ioengine"], "libaio");
    assert_eq!(doc["global options"]["size"], "512k", "${{SIZE}} expanded");
    assert_fio_plot_reads(&doc, &[]);
    assert!(dir.path().join("steps.test.file").exists());
    // fio's default iodepth_batch_submit=1: one request per io_submit.
    assert_eq!(doc["ringlab"][0]["config"]["submit-batch"], 1);

    // A job file as TARGET is recognised by its content, run, and never
    // written to; the groups that fio runs at once are said to run in turn.
    let depths = write_job(dir.path(), "depths.fio", DEPTHS);
    let out = run_env(
        &["io", &depths, "--output-format", "json", "--no-kstat"],
        &env,
    );
    let results: Value = serde_json::from_str(&ok(&out)).unwrap();
    let results = results.as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["config"]["iodepth"], 4);
    assert_eq!(results[1]["config"]["iodepth"], 16);
    assert!(results[0]["target"]["path"]
        .as_str()
        .unwrap()
        .ends_with("file1.0.0"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("one after the other"), "{err}");
    assert_eq!(std::fs::read_to_string(&depths).unwrap(), DEPTHS);

    let mixed = write_job(dir.path(), "mixed.fio", MIXED);
    let out = run_env(
        &[
            "io",
            "--fio",
            &mixed,
            "--output-format",
            "fio-json",
            "--no-kstat",
        ],
        &env,
    );
    let doc: Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_fio_plot_reads(&doc, &["read", "write"]);
    assert_eq!(doc["jobs"].as_array().unwrap().len(), 1, "group_reporting");
    assert_eq!(doc["jobs"][0]["jobname"], "mixed-rw");
    assert_eq!(doc["ringlab"][0]["config"]["rwmixread"], 60);
    assert_eq!(doc["ringlab"][0]["config"]["engine"], "sync");

    let threads = write_job(dir.path(), "threads.fio", THREADS);
    let out = run_env(&["io", "--fio", &threads, "--no-kstat"], &env);
    let text = ok(&out);
    assert!(text.contains("fio job [f1] (group 0)") && text.contains("fio job [f2] (group 1)"));
    assert!(
        text.contains("write 4 KiB") && text.contains("randread 4 KiB"),
        "{text}"
    );
}

#[test]
fn job_file_options_ringlab_cannot_honour_stop_the_run_at_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let text = format!(
        "[global]\nfilename={d}/never.dat\nsize=1m\n\n[ok]\nrw=read\n\n[later]\nrw=read\nrate_min=2\n"
    );
    let job = write_job(dir.path(), "j.fio", &text);
    let out = ringlab(&format!("io --fio {job}"));
    assert_fails(
        &out,
        2,
        &[
            "j.fio:10: [later] rate_min=2",
            "not yet supported by ringlab",
            "ringlab io --help",
        ],
    );
    assert!(!dir.path().join("never.dat").exists(), "nothing ran");
    let job = write_job(dir.path(), "k.fio", "[a]\nrw=read\nioengine=mmap\n");
    assert_fails(
        &ringlab(&format!("io --fio {job}")),
        2,
        &["k.fio:3: [a] ioengine=mmap", "no equivalent"],
    );
    assert_fails(
        &ringlab(&format!("io --fio {job} --rw write")),
        2,
        &["--rw with a job file", "write it in the job file"],
    );
    assert_fails(
        &ringlab(&format!("io --fio {d}/missing.fio")),
        2,
        &["cannot read job file"],
    );
}

#[test]
fn fio_spellings_and_hints() {
    // Each goes to the ringlab option the hint names, and the kernel or
    // plan check that follows speaks in ringlab's words.
    assert_fails(
        &ringlab("io --hipri --size 1m --runtime 100ms"),
        2,
        &["--iopoll needs --direct", "ringlab io --help"],
    );
    assert_fails(
        &ringlab("io --registerfiles --ioengine=psync --size 1m --runtime 100ms"),
        2,
        &["--fixed-files is an io_uring knob"],
    );
    for (line, wants) in [
        (
            "io --registerfile",
            &["fio's --registerfiles", "--fixed-files"][..],
        ),
        ("io --randrepeatt=1", &["fio's --randrepeat"]),
        (
            "io --iodepth_batch_complete_mn=2",
            &["--iodepth_batch_complete_min", "--complete-batch"],
        ),
        ("io --sqthread_pol", &["fio's --sqthread_poll", "--sqpoll"]),
        ("io --zonemode=zbd", &["no equivalent"]),
        ("io --rate_min=100", &["not yet supported by ringlab"]),
        ("io --verify=sha256", &["not the standard"]),
        ("io --direct=2", &["1 or 0"]),
        ("io --ioengine=splice", &["no equivalent of this engine"]),
        ("io --rw sideways", &["invalid value 'sideways'"]),
    ] {
        assert_fails(&ringlab(line), 2, wants);
        let err = String::from_utf8_lossy(&ringlab(line).stderr).into_owned();
        assert!(err.contains("(see 'ringlab io --help')"), "{line}: {err}");
    }
    let help = ok(&ringlab("io --help"));
    for name in [
        "--fio",
        "fio-json",
        "sqthread_poll",
        "registerfiles",
        "iodepth_batch_complete_min",
        "norandommap",
        "ramp_time",
    ] {
        assert!(help.contains(name), "help lacks {name}");
    }
}

#[test]
fn named_files_are_laid_out_kept_and_never_overwritten_by_surprise() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let new = d.join("new.dat");
    assert_fails(
        &ringlab(&format!("io {} --runtime 100ms", new.display())),
        2,
        &["does not exist", "give --size"],
    );
    ok(&ringlab(&format!(
        "io {} --size 256k --rw write --runtime 100ms --no-kstat",
        new.display()
    )));
    assert_eq!(std::fs::metadata(&new).unwrap().len(), 256 << 10);
    // Laid out by ringlab: written again without --allow-destructive.
    ok(&ringlab(&format!(
        "io {} --rw randwrite --runtime 100ms --no-kstat",
        new.display()
    )));
    // Someone else's data: read freely, written only when allowed.
    let theirs = d.join("theirs.dat");
    let mut data = vec![0u8; 256 << 10];
    for (i, b) in data.iter_mut().enumerate() {
        *b = (i * 7 % 251) as u8;
    }
    std::fs::write(&theirs, &data).unwrap();
    ok(&ringlab(&format!(
        "io {} --runtime 100ms --no-kstat",
        theirs.display()
    )));
    assert_fails(
        &ringlab(&format!(
            "io {} --rw write --runtime 100ms",
            theirs.display()
        )),
        2,
        &[
            "refusing to write",
            "did not lay out",
            "--allow-destructive",
        ],
    );
    assert_eq!(std::fs::read(&theirs).unwrap(), data);
    ok(&ringlab(&format!(
        "io {} --rw write --runtime 100ms --allow-destructive --no-kstat",
        theirs.display()
    )));
    // Text, executables and job files are never targets.
    let notes = d.join("notes.txt");
    std::fs::write(&notes, "remember: the disk is slow on mondays\n".repeat(20)).unwrap();
    assert_fails(
        &ringlab(&format!(
            "io {} --rw write --allow-destructive --runtime 100ms",
            notes.display()
        )),
        2,
        &["text someone wrote"],
    );
    let exe = std::env::current_exe().unwrap();
    assert_fails(
        &ringlab(&format!("io {} --runtime 100ms", exe.display())),
        2,
        &["ELF executable"],
    );
    assert!(std::fs::read_to_string(&notes)
        .unwrap()
        .starts_with("remember"));
}

/// `--parse-only` checks every section, prints the run each one is and
/// touches no file; an option of fio's that ringlab lacks is named as
/// fio's, not as an unknown look-alike.
#[test]
fn parse_only_prints_the_runs_and_does_no_io() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data file.dat");
    let job = write_job(
        dir.path(),
        "two.fio",
        &format!(
            "[global]\nfilename={}\nsize=1m\ndirect=1\n\n[a]\nioengine=io_uring\niodepth=4\n\n[b]\nstonewall\nioengine=libaio\nrw=randwrite\n",
            data.display()
        ),
    );
    let out = ringlab(&format!("io --fio {job} --parse-only"));
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[a] group 0: ringlab io"), "{text}");
    assert!(text.contains("--engine libaio"), "{text}");
    assert!(
        text.contains(&format!("'{}'", data.display())),
        "quoted path: {text}"
    );
    assert!(text.contains("2 jobs"), "{text}");
    assert!(!data.exists(), "parse-only laid out the target");

    let out = ringlab(&format!(
        "io --filename={} --size=1m --rw=randwrite --parse-only",
        data.display()
    ));
    assert_ok(&out);
    assert!(!data.exists(), "parse-only laid out the target");

    for (line, want) in [
        (
            "io --ss=iops:1% --parse-only",
            "'ringlab fio' ends the job (with group_reporting its group) at fio's steady state",
        ),
        (
            "io --flow=2 --parse-only",
            "--flow: fio's option has no equivalent",
        ),
        ("io --iodeptj=3 --parse-only", "did you mean --iodepth?"),
    ] {
        let out = ringlab(line);
        assert_eq!(out.status.code(), Some(2), "{line}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{line}: {err}");
    }
}
