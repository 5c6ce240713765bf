//! `ringlab fio`: fio's defaults, groups, and fio's output formats as fio's
//! consumers read them.

mod common;

use common::{assert_ok, fio, lat_log_ios, run_limited, BIN};
use regex::Regex;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn tmp(name: &str) -> std::path::PathBuf {
    common::fresh_dir("fio", name)
}

#[test]
fn a_bare_command_line_reads_sequentially_on_psync_and_stops_after_size() {
    let d = tmp("bare");
    let out = fio(
        &d,
        &[
            "--name=x",
            "--filename=F",
            "--size=1m",
            "--output-format=json",
        ],
    );
    assert_ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let j = &v["jobs"][0];
    assert_eq!(j["read"]["io_bytes"], 1 << 20);
    assert_eq!(j["read"]["total_ios"], 256);
    assert_eq!(j["write"]["total_ios"], 0);
    let ran = j["ringlab"]["runs_as"].as_str().unwrap();
    assert!(ran.contains("--engine sync"), "{ran}");
    assert!(ran.contains("--rw read"), "{ran}");
    assert!(ran.contains("--fadvise-hint sequential"), "{ran}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_binary_named_fio_is_the_personality() {
    let d = tmp("argv0");
    let link = d.join("fio");
    std::os::unix::fs::symlink(BIN, &link).unwrap();
    let mut cmd = Command::new(&link);
    cmd.current_dir(&d)
        .args(["--name=x", "--filename=F", "--size=64k", "--minimal"]);
    let out = run_limited(cmd);
    assert_ok(&out);
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(line.starts_with("3;fio-3.33;x;0;0;64;"), "{line}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn normal_output_matches_fio_regexes() {
    let d = tmp("normal");
    let out = fio(&d, &["--name=x", "--filename=F", "--size=256k", "--bs=4k"]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    for re in [
        r"(?m)^x: \(groupid=0, jobs=1\): err= 0: pid=\d+: ",
        r"(?m)^  read: IOPS=[\d.]+[kM]?, BW=[\d.]+[KMG]?i?B/s \([\d.]+[kMG]?B/s\)\([\d.]+[KMG]?i?B/\d+msec\)$",
        r"(?m)^    clat \((n|u|m)sec\): min=[\d.]+k?, max=[\d.]+k?, avg=\s*[\d.]+, stdev=\s*[\d.]+$",
        r"(?m)^     lat \((n|u|m)sec\): min=",
        r"(?m)^    clat percentiles \((n|u|m)sec\):$",
        r"(?m)^     \|  1\.00th=\[\s*\d+\],  5\.00th=\[\s*\d+\],",
        r"(?m) 99\.99th=\[\s*\d+\]$",
        r"(?m)^  cpu          : usr=[\d.]+%, sys=[\d.]+%, ctx=\d+, majf=\d+, minf=\d+$",
        r"(?m)^  IO depths    : 1=100\.0%, 2=0\.0%",
        r"(?m)^     issued rwts: total=64,0,0,0 short=0,0,0,0 dropped=0,0,0,0$",
        r"(?m)^Run status group 0 \(all jobs\):$",
        r"(?m)^   READ: bw=[\d.]+[KMG]?i?B/s \([\d.]+[kMG]?B/s\), .*, io=256KiB \(262kB\), run=\d+-\d+msec$",
    ] {
        assert!(Regex::new(re).unwrap().is_match(&text), "{re} in\n{text}");
    }
    // ringlab's own lines come after fio's.
    let ours = text.find("ringlab evidence:").unwrap();
    assert!(ours > text.find("Run status group 0").unwrap());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn io_depths_are_counted_as_fio_counts_them() {
    let d = tmp("depths");
    // io_uring at depth 8, four requests a submission (fio's
    // iodepth_batch_submit): every I/O goes out with 5-8 in flight and
    // each submission hands over 1-4.
    let out = fio(
        &d,
        &[
            "--name=x",
            "--filename=F",
            "--size=256k",
            "--rw=randread",
            "--ioengine=io_uring",
            "--iodepth=8",
            "--iodepth_batch_submit=4",
            "--output-format=json,normal",
        ],
    );
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let j = common::first_json(&out);
    let job = &j["jobs"][0];
    let pct = |key: &str, bucket: &str| job[key][bucket].as_f64().unwrap();
    let sum = |key: &str| -> f64 {
        job[key]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_f64().unwrap())
            .sum()
    };
    for key in ["iodepth_level", "iodepth_submit", "iodepth_complete"] {
        assert!((sum(key) - 100.0).abs() < 1e-6, "{key}: {}", job[key]);
    }
    assert!(pct("iodepth_level", "8") > 90.0, "{}", job["iodepth_level"]);
    assert_eq!(
        pct("iodepth_submit", "4"),
        100.0,
        "{}",
        job["iodepth_submit"]
    );
    assert_eq!(
        pct("iodepth_complete", "0"),
        0.0,
        "{}",
        job["iodepth_complete"]
    );
    for re in [
        r"(?m)^  IO depths    : 1=[\d.]+%, 2=[\d.]+%, 4=[\d.]+%, 8=[\d.]+%, 16=[\d.]+%, 32=[\d.]+%, >=64=[\d.]+%$",
        r"(?m)^     submit    : 0=0\.0%, 4=100\.0%, 8=0\.0%, 16=0\.0%, 32=0\.0%, 64=0\.0%, >=64=0\.0%$",
        r"(?m)^     complete  : 0=0\.0%, 4=[\d.]+%, 8=[\d.]+%, 16=",
    ] {
        assert!(Regex::new(re).unwrap().is_match(&text), "{re} in\n{text}");
    }
    // fio's synchronous engines take the batch options and ignore them.
    let out = fio(
        &d,
        &[
            "--name=y",
            "--filename=F",
            "--size=64k",
            "--ioengine=psync",
            "--iodepth=8",
            "--iodepth_batch_submit=4",
            "--iodepth_batch_complete_min=2",
        ],
    );
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  IO depths    : 1=100.0%, 2=0.0%")
            && text.contains("     submit    : 0=0.0%, 4=100.0%"),
        "{text}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn unified_rw_reporting_merges_reads_and_writes_as_fio() {
    let d = tmp("unified");
    let base = ["--name=x", "--filename=F", "--size=256k", "--rw=randrw"];
    let run = |extra: &[&str]| {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let out = fio(&d, &args);
        assert_ok(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // mixed: one direction alone, counting every I/O, in JSON and text.
    let doc: serde_json::Value = serde_json::from_str(&run(&[
        "--unified_rw_reporting=mixed",
        "--output-format=json",
    ]))
    .unwrap();
    let j = &doc["jobs"][0];
    for gone in ["read", "write", "trim"] {
        assert!(j.get(gone).is_none(), "{gone} beside mixed: {j}");
    }
    assert_eq!(j["mixed"]["total_ios"], 64);
    assert_eq!(j["mixed"]["io_bytes"], 256 << 10);
    assert_eq!(j["mixed"]["clat_ns"]["N"], 64);
    let text = run(&["--unified_rw_reporting=1"]);
    for re in [
        r"(?m)^  mixed: IOPS=[\d.]+[kM]?, BW=",
        r"(?m)^     issued rwts: total=64,0,0,0 ",
        r"(?m)^  MIXED: bw=.*, io=256KiB \(262kB\), run=",
    ] {
        assert!(Regex::new(re).unwrap().is_match(&text), "{re} in\n{text}");
    }
    assert!(!text.contains("  read: IOPS"), "{text}");
    // both: read and write, and mixed with their sum.
    let doc: serde_json::Value = serde_json::from_str(&run(&[
        "--unified_rw_reporting=both",
        "--output-format=json",
    ]))
    .unwrap();
    let j = &doc["jobs"][0];
    let n = |k: &str| j[k]["total_ios"].as_u64().unwrap();
    assert_eq!(n("read") + n("write"), n("mixed"));
    assert_eq!(n("mixed"), 64);
    // fio's values only.
    let out = fio(
        &d,
        &[
            "--name=x",
            "--filename=F",
            "--size=64k",
            "--unified_rw_reporting=3",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn terse_output_is_fio_s_version_3() {
    let d = tmp("terse");
    let out = fio(
        &d,
        &["--name=x", "--filename=F", "--size=128k", "--minimal"],
    );
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next().unwrap();
    let f: Vec<&str> = line.split(';').collect();
    // fio 3.33's v3 line: 130 fields with one disk, 121 without.
    assert!(
        f.len() == 121 || f.len() == 130,
        "{} fields: {line}",
        f.len()
    );
    assert_eq!(&f[..5], &["3", "fio-3.33", "x", "0", "0"]);
    assert_eq!(f[5], "128", "read KiB");
    let pct = Regex::new(r"^\d+\.\d{6}%=\d+$").unwrap();
    assert!(pct.is_match(f[17]), "{}", f[17]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_random_map_reads_each_block_once_per_pass() {
    let d = tmp("randmap");
    let out = fio(
        &d,
        &[
            "--name=r",
            "--filename=F",
            "--size=256k",
            "--bs=4k",
            "--rw=randread",
            "--write_lat_log=r",
            "--log_offset=1",
        ],
    );
    assert_ok(&out);
    let mut offsets: Vec<u64> = lat_log_ios(&d.join("r_lat.1.log"))
        .iter()
        .map(|o| o.2)
        .collect();
    assert_eq!(offsets.len(), 64);
    offsets.sort_unstable();
    offsets.dedup();
    assert_eq!(offsets.len(), 64, "a block read twice in one pass");
    // Without log_offset, fio's lines have no offset column.
    let out = fio(
        &d,
        &[
            "--name=s",
            "--filename=F",
            "--size=16k",
            "--write_lat_log=s",
            "--write_bw_log=s",
            "--write_iops_log=s",
        ],
    );
    assert_ok(&out);
    let log = std::fs::read_to_string(d.join("s_lat.1.log")).unwrap();
    assert!(log.lines().all(|l| l.split(", ").count() == 5), "{log}");
    // Without log_avg_msec fio logs bandwidth and IOPS per I/O too.
    for kind in ["bw", "iops"] {
        let log = std::fs::read_to_string(d.join(format!("s_{kind}.1.log"))).unwrap();
        assert_eq!(log.lines().count(), 4, "{log}");
        assert!(log.lines().all(|l| l.split(", ").count() == 5), "{log}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_jobs_of_a_group_start_together_and_stonewall_separates() {
    let d = tmp("group");
    let job = d.join("g.fio");
    std::fs::write(
        &job,
        "[global]\nsize=256k\nbs=4k\n[a]\nfilename=A\n[b]\nfilename=B\n[c]\nfilename=C\n[d]\nfilename=D\n[e]\nstonewall\nfilename=E\n",
    )
    .unwrap();
    let out = fio(&d, &["--output-format=json", "g.fio"]);
    assert_ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 5);
    let start = |i: usize| jobs[i]["ringlab"]["start_unix_ms"].as_f64().unwrap();
    let first: Vec<f64> = (0..4).map(start).collect();
    let lo = first.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = first.iter().cloned().fold(0.0, f64::max);
    assert!(hi - lo < 20.0, "group 0 started {:.1} ms apart", hi - lo);
    assert!((0..4).all(|i| jobs[i]["groupid"] == 0));
    assert_eq!(jobs[4]["groupid"], 1);
    assert!(start(4) >= hi, "the stonewalled job started before group 0");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn refusals_name_the_file_the_line_and_the_reason() {
    let d = tmp("refuse");
    std::fs::write(d.join("z.fio"), "[global]\nsize=1m\n[z]\nioengine=splice\n").unwrap();
    let out = fio(&d, &["z.fio"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("z.fio:4"), "{err}");
    assert!(err.contains("ioengine"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn fio_s_jsonplus_tool_reads_json_plus() {
    let Ok(tool) = which("fio_jsonplus_clat2csv") else {
        common::skip(
            "fio_jsonplus_clat2csv",
            "fio's tools are not installed (apt-get install fio)",
        );
        return;
    };
    let d = tmp("jsonplus");
    let out = fio(
        &d,
        &[
            "--name=x",
            "--filename=F",
            "--size=64k",
            "--output-format=json+",
            "--output=o.json",
        ],
    );
    assert_ok(&out);
    let mut cmd = Command::new(tool);
    cmd.current_dir(&d).args(["o.json", "c.csv"]);
    let out = run_limited(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(d.join("c_job0.csv")).unwrap();
    assert!(csv.lines().count() > 1, "{csv}");
    std::fs::remove_dir_all(&d).unwrap();
}

fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .find(|c| c.is_file())
        })
        .ok_or(())
}

#[test]
fn the_histogram_log_is_fio_s_and_its_parser_reads_it() {
    let d = tmp("hist");
    let out = fio(
        &d,
        &[
            "--name=h",
            "--filename=F",
            "--size=2m",
            "--rw=randread",
            "--write_hist_log=h",
            "--log_hist_msec=1",
            "--minimal",
        ],
    );
    assert_ok(&out);
    let log = std::fs::read_to_string(d.join("h_clat_hist.1.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(!lines.is_empty());
    // time, direction, block size, then fio's 1856 bins.
    assert!(lines.iter().all(|l| l.split(", ").count() == 3 + 1856));
    let total: u64 = lines
        .iter()
        .flat_map(|l| l.split(", ").skip(3))
        .map(|n| n.parse::<u64>().unwrap())
        .sum();
    assert!(total > 0 && total <= 512, "{total} I/Os in the bins");
    // fio's own parser, where it and pandas are installed.
    let gz = Path::new("/usr/share/doc/fio/fiologparser_hist.py.gz");
    // Debian's pandas belongs to Debian's python3, which PATH may hide.
    let python = if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    };
    let pandas = Command::new(python)
        .args(["-c", "import pandas"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !gz.exists() || !pandas {
        common::skip(
            "fiologparser_hist",
            "fio's fiologparser_hist.py or python3-pandas is not installed",
        );
        std::fs::remove_dir_all(&d).unwrap();
        return;
    }
    let script = d.join("fiologparser_hist.py");
    let text = Command::new("zcat").arg(gz).output().unwrap().stdout;
    std::fs::write(&script, text).unwrap();
    let mut cmd = Command::new(python);
    cmd.current_dir(&d).arg(&script).arg("h_clat_hist.1.log");
    let out = run_limited(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(
        csv.lines().next().unwrap_or("").starts_with("end-time"),
        "{csv}"
    );
    assert!(csv.lines().count() > 1, "{csv}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn fio_s_null_engine_touches_no_file() {
    let d = tmp("null");
    let out = fio(
        &d,
        &[
            "--name=n",
            "--ioengine=null",
            "--size=1m",
            "--rw=randread",
            "--output-format=json",
        ],
    );
    assert_ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 256);
    assert!(!d.join("n.0.0").exists(), "the null engine made a file");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn values_follow_fio_s_unit_rules_and_arithmetic() {
    let d = tmp("values");
    let out = fio(
        &d,
        &[
            "--parse-only",
            "--eta=never",
            "--eta-newline=1",
            "--name=x",
            "--bs=4KiB",
            "--size=8*1024*4096",
            r"--filename=a\:b",
            "--directory=/srv",
        ],
    );
    assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--bs 4000"), "{err}");
    assert!(err.contains("--size 33554432"), "{err}");
    assert!(err.contains("/srv/a:b"), "{err}");
    let out = fio(
        &d,
        &[
            "--parse-only",
            "--name=x",
            "--bs=4k,64k",
            "--rw=rw",
            "--size=1m",
        ],
    );
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bssplit 4096,65536"));
    std::fs::remove_dir_all(&d).unwrap();
}
