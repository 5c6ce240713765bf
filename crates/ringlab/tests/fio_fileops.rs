//! fio's file engines and ftruncate under `ringlab fio` and `ringlab io`:
//! filecreate, filestat, filedelete (fio 3.33 engines/fileoperations.c)
//! and ftruncate (engines/ftruncate.c), as fio's filecreate-ioengine.fio,
//! filestat-ioengine.fio, filedelete-ioengine.fio and ftruncate.fio use
//! them. Where fio 3.33 is installed each case is also run by fio, and the
//! files, counts and samples must be fio's.

mod common;

use common::{assert_ok, fio, first_json, skip};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const EXAMPLES: &str = "/usr/share/doc/fio/examples";

fn tmp(name: &str) -> PathBuf {
    common::fresh_dir("fileops", name)
}

/// `job.fio` holding `text`, run in `dir` by ringlab fio or by fio 3.33.
fn run(tool: &str, dir: &Path, text: &str) -> Output {
    std::fs::write(dir.join("job.fio"), text).unwrap();
    if tool == "fio" {
        Command::new("fio")
            .current_dir(dir)
            .args(["--output-format=json", "job.fio"])
            .output()
            .unwrap()
    } else {
        fio(dir, &["--output-format=json", "job.fio"])
    }
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Per job: (name, direction, total_ios, io_bytes, clat N, lat N, slat N).
type Counts = Vec<(String, &'static str, u64, u64, u64, u64, u64)>;

fn counts(v: &Value) -> Counts {
    let mut out = Vec::new();
    for j in v["jobs"].as_array().unwrap() {
        for d in ["read", "write"] {
            let x = &j[d];
            if u(&x["total_ios"]) == 0 && u(&x["clat_ns"]["N"]) == 0 {
                continue;
            }
            out.push((
                j["jobname"].as_str().unwrap().to_string(),
                d,
                u(&x["total_ios"]),
                u(&x["io_bytes"]),
                u(&x["clat_ns"]["N"]),
                u(&x["lat_ns"]["N"]),
                u(&x["slat_ns"]["N"]),
            ));
        }
    }
    out
}

/// The files of a directory but the job file: (name, length, mode).
fn files(dir: &Path) -> Vec<(String, u64, u32)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != "job.fio")
        .map(|e| {
            let m = e.metadata().unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                m.len(),
                m.permissions().mode() & 0o777,
            )
        })
        .collect();
    v.sort();
    v
}

/// Runs `text` under ringlab fio (and fio 3.33 where installed, which
/// must make the same files and counts); ringlab's counts and files.
fn both(name: &str, text: &str) -> (Counts, Vec<(String, u64, u32)>) {
    let d = tmp(name);
    let out = run("ringlab", &d, text);
    assert_ok(&out);
    let got = (counts(&first_json(&out)), files(&d));
    if common::real_fio() {
        let f = tmp(&format!("{name}-fio"));
        let out = run("fio", &f, text);
        assert!(out.status.success(), "fio: {out:?}");
        let want = (counts(&first_json(&out)), files(&f));
        assert_eq!(got, want, "ringlab fio (left) against fio 3.33 (right)");
        let _ = std::fs::remove_dir_all(&f);
    }
    let _ = std::fs::remove_dir_all(&d);
    got
}

#[test]
fn filecreate_makes_each_jobs_files_and_times_only_the_creations() {
    // filecreate-ioengine.fio, smaller: 2 jobs of 6 files of 2 blocks.
    let text = "[global]\ncreate_on_open=1\nnrfiles=6\nioengine=filecreate\nfallocate=none\nfilesize=8k\nopenfiles=1\n\n[t0]\n[t1]\n";
    let (c, f) = both("create", text);
    for j in ["t0", "t1"] {
        // 12 I/Os of 4 KiB counted, 6 creations timed, nothing else.
        assert!(
            c.contains(&(j.to_string(), "read", 12, 49152, 6, 0, 0)),
            "{c:?}"
        );
    }
    let want: Vec<_> = ["t0", "t1"]
        .iter()
        .flat_map(|j| (0..6).map(move |k| (format!("{j}.0.{k}"), 0, 0o600)))
        .collect();
    assert_eq!(f, want, "fio's names, empty, mode 0600");
}

#[test]
fn filecreate_creates_every_file_again_on_each_pass() {
    // Time based: 3 files of 2 blocks served round robin, each created
    // when the walk first reaches it in a pass.
    let d = tmp("passes");
    let out = run(
        "ringlab",
        &d,
        "[t]\nioengine=filecreate\nnrfiles=3\nfilesize=8k\nruntime=200ms\ntime_based\n",
    );
    assert_ok(&out);
    let v = first_json(&out);
    let r = &v["jobs"][0]["read"];
    let ios = u(&r["total_ios"]);
    assert!(ios > 6, "{ios} I/Os in 200 ms");
    let opens = 3 * (ios / 6) + (ios % 6).min(3);
    assert_eq!(u(&r["clat_ns"]["N"]), opens, "{ios} I/Os");
    assert_eq!(u(&r["lat_ns"]["N"]), 0);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn filestat_stats_the_files_it_laid_out_once_per_pass() {
    let text = "[global]\nioengine=filestat\nnrfiles=4\nfilesize=8k\nopenfiles=2\nloops=2\nnumjobs=2\n\n[s]\n";
    let (c, f) = both("stat", text);
    // Per thread: 2 passes of 4 files of 2 blocks, 4 stats each pass.
    assert_eq!(c, vec![("s".to_string(), "read", 16, 65536, 8, 0, 0); 2]);
    let want: Vec<_> = (0..2)
        .flat_map(|j| (0..4).map(move |k| (format!("s.{j}.{k}"), 8192, 0o644)))
        .collect();
    assert_eq!(f, want, "laid out at filesize, kept");
    // A mix counts reads and writes as fio's streams draw them; the stats
    // are reads'.
    let (c, _) = both(
        "statmix",
        "[m]\nioengine=filestat\nnrfiles=3\nfilesize=16k\nrw=randrw\n",
    );
    let ios: u64 = c.iter().map(|x| x.2).sum();
    assert_eq!(ios, 12);
    assert_eq!(c[0].1, "read");
    assert_eq!(c[0].4, 3, "{c:?}");
}

#[test]
fn filestat_stat_types_under_ringlab_io() {
    let d = tmp("statx");
    for t in ["stat", "lstat", "statx"] {
        let v = common::json_run(&format!(
            "io --engine filestat --stat-type {t} --nrfiles 3 --size 8k --rw read --no-kstat {}",
            d.join("f").display()
        ));
        let r = &v["total"]["read"];
        assert_eq!(u(&r["ops"]), 6, "{t}");
        assert!(u(&r["clat_ns"]["max"]) > 0, "{t}: {r}");
        assert!(r["lat_ns"].is_null(), "{t}: the I/Os are not timed: {r}");
    }
    // The files are ringlab's, laid out once and kept.
    assert_eq!(files(&d).len(), 3);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn filedelete_unlinks_every_file_it_laid_out() {
    let text = "[global]\nioengine=filedelete\nfilesize=4k\nnrfiles=5\nunlink=0\n\n[t0]\n[t1]\n";
    let (c, f) = both("delete", text);
    assert_eq!(
        c,
        vec![
            ("t0".to_string(), "read", 5, 20480, 5, 0, 0),
            ("t1".to_string(), "read", 5, 20480, 5, 0, 0)
        ]
    );
    assert!(f.is_empty(), "every file unlinked: {f:?}");
}

#[test]
fn filedelete_refuses_a_second_pass_and_files_it_did_not_lay_out() {
    let d = tmp("delete-refused");
    // fio's second unlink fails its job (ENOENT): refused with its line.
    let out = run(
        "ringlab",
        &d,
        "[t0]\nioengine=filedelete\nfilesize=4k\nnrfiles=2\nloops=2\n",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("job.fio:") && err.contains("[t0]") && err.contains("ENOENT"),
        "{err}"
    );
    // ringlab io does not unlink a file it did not lay out, unless told.
    std::fs::write(d.join("u.0.0"), vec![7u8; 8192]).unwrap();
    let line = format!(
        "io --engine filedelete --nrfiles 1 --size 4k --no-kstat {}",
        d.join("u").display()
    );
    let out = common::ringlab(&line);
    common::assert_fails(&out, 2, &["refusing to unlink", "--allow-destructive"]);
    assert!(d.join("u.0.0").exists());
    assert_ok(&common::ringlab(&format!("{line} --allow-destructive")));
    assert!(!d.join("u.0.0").exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn ftruncate_leaves_each_file_where_fio_leaves_it() {
    // Each write truncates the file to its offset: 16 writes of 4 KiB
    // over 64 KiB end at the last offset drawn (fio's streams).
    let text = "[global]\nioengine=ftruncate\nsize=64k\nbs=4k\nstonewall\n\n[seq]\nfilename=a\nrw=write\ndirect=1\n\n[rnd]\nfilename=b\nrw=randwrite\nnorandommap\n\n[map]\nfilename=c\nrw=randwrite\n";
    let (c, f) = both("ftruncate", text);
    for j in ["seq", "rnd", "map"] {
        // Timed as psync: lat and clat, no slat.
        assert!(
            c.contains(&(j.to_string(), "write", 16, 65536, 16, 16, 0)),
            "{c:?}"
        );
    }
    let len = |n: &str| f.iter().find(|x| x.0 == n).unwrap().1;
    // fio 3.33's lengths (here and where fio runs beside): 60 KiB after a
    // sequential pass, and the last random offsets fio's generator draws
    // for threads 2 and 3, without and with its random map.
    assert_eq!((len("a"), len("b"), len("c")), (61440, 12288, 57344));
}

#[test]
fn a_file_another_run_left_short_is_laid_out_again_as_fio() {
    // fio's run of ftruncate.fio leaves its file shorter than size; fio's
    // next run lays it out again (extend_file), whoever made it. So does
    // ringlab fio (it writes as fio does), where ringlab io refuses.
    let d = tmp("short");
    std::fs::write(d.join("t"), vec![7u8; 4096]).unwrap();
    let out = run(
        "ringlab",
        &d,
        "[w]\nioengine=ftruncate\nsize=64k\nfilename=t\nrw=write\n",
    );
    assert_ok(&out);
    assert_eq!(u(&first_json(&out)["jobs"][0]["write"]["total_ios"]), 16);
    assert_eq!(std::fs::metadata(d.join("t")).unwrap().len(), 61440);
    std::fs::write(d.join("t"), vec![7u8; 4096]).unwrap();
    let out = common::ringlab(&format!(
        "io --engine ftruncate --rw write --size 64k --io-size 64k --no-kstat {}",
        d.join("t").display()
    ));
    common::assert_fails(&out, 2, &["refusing to write"]);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn ftruncate_fails_a_read_with_einval_as_fio() {
    let d = tmp("ftruncate-read");
    let out = run(
        "ringlab",
        &d,
        "[r]\nioengine=ftruncate\nsize=64k\nfilename=t\nrw=read\n",
    );
    // fio 3.33: exit 1, the job's error 22, the failed read counted.
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let v = first_json(&out);
    assert_eq!(u(&v["jobs"][0]["error"]), 22);
    assert_eq!(u(&v["jobs"][0]["read"]["total_ios"]), 1);
    assert_eq!(u(&v["jobs"][0]["read"]["io_bytes"]), 0);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_example_job_files_run_unchanged() {
    let name = "the_example_job_files_run_unchanged";
    let dir = Path::new(EXAMPLES);
    if !dir.join("filestat-ioengine.fio").exists() {
        skip(
            name,
            "fio's example job files are not installed (Debian's fio-examples)",
        );
        return;
    }
    for f in [
        "filecreate-ioengine.fio",
        "filestat-ioengine.fio",
        "filedelete-ioengine.fio",
        "ftruncate.fio",
    ] {
        let d = tmp("parse");
        let out = fio(&d, &["--parse-only", dir.join(f).to_str().unwrap()]);
        assert_ok(&out);
        let _ = std::fs::remove_dir_all(&d);
    }
    // filestat, then filedelete on the same names: 6 jobs of 200 files.
    let d = tmp("examples");
    for (f, left) in [
        ("filestat-ioengine.fio", 1200),
        ("filedelete-ioengine.fio", 0),
    ] {
        let out = fio(&d, &["--output-format=json", dir.join(f).to_str().unwrap()]);
        assert_ok(&out);
        let c = counts(&first_json(&out));
        assert_eq!(c.len(), 6, "{f}: {c:?}");
        for x in &c {
            assert_eq!((x.2, x.3, x.4, x.5), (200, 819200, 200, 0), "{f}: {x:?}");
        }
        assert_eq!(files(&d).len(), left, "{f}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn several_files_stay_refused_with_the_other_engines() {
    let d = tmp("refused");
    let out = run("ringlab", &d, "[x]\nnrfiles=2\nsize=1m\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("nrfiles=2") && err.contains("only its file engines"),
        "{err}"
    );
    let out = common::ringlab("io --engine sync --nrfiles 2 --size 1m --no-kstat x");
    common::assert_fails(&out, 2, &["--nrfiles", "file engines"]);
    let _ = std::fs::remove_dir_all(&d);
}
