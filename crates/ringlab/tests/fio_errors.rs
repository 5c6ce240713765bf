//! fio's failed jobs under `ringlab fio` (fio 3.33): a job ended by an
//! I/O error reports it (json `error` = errno, the normal header's
//! `err=E (file:..., func=..., error=...)`, terse's error field), the
//! other jobs go on (or end at exitall), every job's output is written,
//! and the run exits 1. A trim of a regular file is fio 3.33's ENOTTY.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn entry<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no entry {name} in {doc}"))
}

const TWO_JOBS: &str =
    "[global]\nsize=256k\nbs=4k\n[works]\nrw=write\nfilename=a\n[fails]\nrw=randtrim\nfilename=b\n";

#[test]
fn a_failing_job_ends_alone_and_the_other_completes_its_work() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("two.fio"), TWO_JOBS).unwrap();
    let out = fio(dir.path(), &["--output-format=json", "two.fio"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "fio exits 1: {err}");
    assert!(
        err.contains("fio: pid=")
            && err.contains("err=25/file:ioengines.c:399, func=td_io_queue, error=Inappropriate ioctl for device"),
        "{err}"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    let works = entry(&doc, "works");
    assert_eq!(works["error"], 0);
    assert_eq!(works["write"]["io_bytes"], 256 * 1024, "{works}");
    assert_eq!(works["write"]["total_ios"], 64);
    let fails = entry(&doc, "fails");
    assert_eq!(fails["error"], 25, "ENOTTY: {fails}");
    assert_eq!(fails["trim"]["total_ios"], 1, "the failed trim was issued");
    assert_eq!(fails["trim"]["io_bytes"], 0);

    // The normal output: fio's header with the error's text; terse's
    // fifth field is the error.
    let out = fio(dir.path(), &["--output-format=normal,terse", "two.fio"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("fails: (groupid=0, jobs=1): err=25 (file:ioengines.c:399, func=td_io_queue, error=Inappropriate ioctl for device): pid="),
        "{text}"
    );
    assert!(
        text.contains("works: (groupid=0, jobs=1): err= 0: pid="),
        "{text}"
    );
    assert!(text.contains("issued rwts: total=0,0,1,0"), "{text}");
    // No continue_on_error: fio writes no errors line.
    assert!(!text.contains("errors    :"), "{text}");
    let terse: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.starts_with("3;"))
        .map(|l| l.split(';').collect())
        .collect();
    assert_eq!(terse.len(), 2, "{text}");
    for t in &terse {
        assert_eq!(t[4], if t[2] == "fails" { "25" } else { "0" }, "{t:?}");
    }
}

#[test]
fn exitall_ends_the_others_when_a_job_fails() {
    let dir = tempfile::tempdir().unwrap();
    // Without exitall the writer would run its 30 seconds.
    std::fs::write(
        dir.path().join("x.fio"),
        "[global]\nsize=1m\nbs=4k\nexitall\n[writer]\nrw=write\nfilename=a\ntime_based\nruntime=30\nrate_iops=50\n[fails]\nrw=trim\nfilename=b\n",
    )
    .unwrap();
    let out = fio(dir.path(), &["--output-format=json", "x.fio"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(entry(&doc, "fails")["error"], 25);
    let writer = entry(&doc, "writer");
    assert_eq!(writer["error"], 0, "ended by exitall, not failed");
    // fio's trim job needs no buffers filled, so its first trim fails
    // before the writer's first write: the writer does none.
    assert_eq!(writer["write"]["total_ios"], 0, "{writer}");
    let said = doc["ringlab"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["jobname"] == "writer")
        .unwrap()["warnings"]
        .to_string();
    assert!(
        said.contains("ended by exitall when [fails] finished"),
        "{said}"
    );
}

#[test]
fn ringlab_io_keeps_refusing_a_trim_of_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.fio");
    std::fs::write(&f, "[t]\nrw=randtrim\nsize=1m\nfilename=b\n").unwrap();
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir.path()).args(["io", "--fio"]).arg(&f);
    let out = run_limited(cmd);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ENOTTY")
            && err.contains("ringlab io refuses it")
            && err.contains("ringlab fio"),
        "{err}"
    );
}

/// fio's enospc-pressure.fio as the survey adapts it (bench/fio-examples.sh:
/// ./ for /scratch, 16m files, runtime=2): punch_hole-raicer fails at its
/// first trim with err=25 and exitall ends the two others before their
/// first I/O, as in fio 3.33 (whose write jobs fill their buffers after
/// the start: dio-raicer never wrote in 25 runs); the run exits 1.
#[test]
fn enospc_pressure_fails_its_trim_job_and_exitall_ends_the_others() {
    let name = "enospc_pressure_fails_its_trim_job_and_exitall_ends_the_others";
    let src = Path::new("/usr/share/doc/fio/examples/enospc-pressure.fio");
    let Ok(text) = std::fs::read_to_string(src) else {
        skip(
            name,
            "fio's examples are not installed (apt-get install fio-examples or fio)",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let adapted: String = text
        .lines()
        .map(|l| match l.split_once('=') {
            Some(("directory", _)) => "directory=.".to_string(),
            Some(("filesize" | "size", _)) => format!("{}=16m", l.split('=').next().unwrap()),
            Some(("runtime", _)) => "runtime=2".to_string(),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(dir.path().join("e.fio"), &adapted).unwrap();
    let out = fio(dir.path(), &["--output-format=json", "e.fio"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let punch = entry(&doc, "punch_hole-raicer");
    assert_eq!(punch["error"], 25);
    assert_eq!(punch["trim"]["total_ios"], 1);
    // continue_on_error=write: fio's error counts, the failed trim in them.
    assert_eq!(punch["total_err"], 1);
    assert_eq!(punch["first_error"], 25);
    let dio = entry(&doc, "dio-raicer");
    assert_eq!(dio["error"], 0);
    assert_eq!(dio["total_err"], 0);
    assert!(
        dio["job_runtime"].as_u64().unwrap() < 2000,
        "exitall ended the 2 s time-based writer early: {dio}"
    );
    assert_eq!(dio["write"]["total_ios"], 0, "{dio}");
    let verifier = entry(&doc, "aio-dio-verifier");
    assert_eq!(verifier["error"], 0, "ended by exitall: {verifier}");
    for d in ["read", "write"] {
        assert_eq!(verifier[d]["total_ios"], 0, "{verifier}");
    }
}

/// A read past the end on fio's queued engines (libaio, posixaio; io_uring
/// too): it completes with no byte and counts as an I/O, and the job goes
/// on (fio 3.33 io_u.c io_completed); the synchronous engines fail it with
/// EIO ("full resid"), as the test above shows.
#[test]
fn queued_engines_count_a_read_past_the_end_as_an_io_of_no_byte() {
    let dir = tempfile::tempdir().unwrap();
    for engine in ["libaio", "posixaio"] {
        let file = format!("z-{engine}");
        let out = fio(
            dir.path(),
            &[
                "--output-format=json",
                "--name=z",
                &format!("--filename={file}"),
                &format!("--ioengine={engine}"),
                "--direct=1",
                "--size=256k",
                "--bs=4k",
                "--rw=randread",
                "--create_on_open=1",
            ],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{engine}: {err}");
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let z = entry(&doc, "z");
        assert_eq!(z["error"], 0, "{engine}: {z}");
        assert_eq!(
            z["read"]["total_ios"], 64,
            "{engine}: every block once: {z}"
        );
        assert_eq!(z["read"]["io_bytes"], 0, "{engine}: the file is empty: {z}");
    }
}

/// create_on_open=1 on a job that reads: fio 3.33 reads the empty file it
/// created, and its first read past the end ends the job with EIO ("full
/// resid"); `ringlab io` refuses the job.
#[test]
fn create_on_open_reads_fail_past_the_end_as_fio() {
    let dir = tempfile::tempdir().unwrap();
    let out = fio(
        dir.path(),
        &[
            "--name=c",
            "--filename=cf",
            "--size=1m",
            "--bs=4k",
            "--rw=randrw",
            "--create_on_open=1",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("c: (groupid=0, jobs=1): err= 5 (file:backend.c:471, func=full resid, error=Input/output error): pid="),
        "{text}"
    );
    let f = dir.path().join("t.fio");
    std::fs::write(
        &f,
        "[t]\nrw=randrw\nsize=1m\nfilename=b\ncreate_on_open=1\n",
    )
    .unwrap();
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir.path()).args(["io", "--fio"]).arg(&f);
    let out = run_limited(cmd);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("create_on_open=1") && err.contains("ringlab io refuses it"),
        "{err}"
    );
}

/// A write that finds the file system full (a 1 MiB tmpfs): fio 3.33's
/// io_u error, with the I/O done before it counted.
#[test]
fn a_write_error_is_fio_s_io_u_error() {
    let name = "a_write_error_is_fio_s_io_u_error";
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    if let Err(e) = sh(
        "mount",
        &[
            "-t",
            "tmpfs",
            "-o",
            "size=1m",
            "tmpfs",
            mnt.to_str().unwrap(),
        ],
    ) {
        skip_root_only(name, &format!("cannot mount a 1 MiB tmpfs: {e}"));
        return;
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = sh("umount", &[self.0.to_str().unwrap()]);
        }
    }
    let _u = Unmount(mnt.clone());
    let out = fio(
        dir.path(),
        &[
            "--name=w",
            "--filename=small/w",
            "--size=2m",
            "--rw=write",
            "--fallocate=none",
            "--output-format=json",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("err=28/file:io_u.c:1876, func=io_u error, error=No space left on device"),
        "{err}"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let w = entry(&doc, "w");
    assert_eq!(w["error"], 28);
    // fio 3.33 here: 1 MiB written, 257 writes issued.
    assert_eq!(w["write"]["io_bytes"], 1 << 20, "{w}");
    assert_eq!(w["write"]["total_ios"], 257);

    // Gone on after (continue_on_error): fio 3.33 keeps the errno as the
    // job's error, counts the failed writes issued, and exits 0.
    std::fs::remove_file(mnt.join("w")).unwrap();
    let out = fio(
        dir.path(),
        &[
            "--name=w",
            "--filename=small/w",
            "--size=2m",
            "--rw=write",
            "--fallocate=none",
            "--continue_on_error=write",
            "--ignore_error=,ENOSPC",
            "--output-format=json,normal",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    let json_end = text.find("\n}\n").unwrap() + 3;
    let doc: Value = serde_json::from_str(&text[..json_end]).unwrap();
    let w = entry(&doc, "w");
    assert_eq!(
        (
            w["error"].as_u64(),
            w["total_err"].as_u64(),
            w["first_error"].as_u64()
        ),
        (Some(28), Some(256), Some(28)),
        "{w}"
    );
    assert_eq!(w["write"]["total_ios"], 512);
    assert!(text.contains("w: (groupid=0, jobs=1): err=28 (file:engines/sync.c:126, func=xfer, error=No space left on device): pid="), "{text}");
    assert!(
        text.contains("     errors    : total=256, first_error=28/<No space left on device>"),
        "{text}"
    );
}
