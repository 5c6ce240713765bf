//! `ringlab fio` with fio's `group_reporting`: one entry per reporting
//! group (every section and numjobs clone between stonewalls), named after
//! its first job, in json, json+, normal and terse, as fio 3.33 writes
//! them; one entry per thread without it.

mod common;

use common::{assert_ok, fio, run_limited};
use regex::Regex;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn tmp(name: &str) -> PathBuf {
    common::fresh_dir("fiogroup", name)
}

/// Two sections in one group, the first with numjobs=2: 3 threads, each
/// reading or writing its 256 KiB once (64 I/Os of 4 KiB).
const ONE_GROUP: &str = "[global]
size=256k
bs=4k
group_reporting
[a]
rw=read
filename=fa
numjobs=2
[b]
rw=write
filename=fb
";

/// The same, and a second group after a stonewall (two sections).
const TWO_GROUPS: &str = "[global]
size=256k
bs=4k
group_reporting
[a]
rw=read
filename=fa
numjobs=2
[b]
rw=write
filename=fb
[c]
stonewall
rw=randread
filename=fa
[d]
rw=read
filename=fb
";

fn json_of(dir: &Path, job: &str) -> Value {
    let out = fio(dir, &["--output-format=json", job]);
    assert_ok(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

fn ios(e: &Value, d: &str) -> (u64, u64) {
    (
        e[d]["total_ios"].as_u64().unwrap(),
        e[d]["io_bytes"].as_u64().unwrap(),
    )
}

#[test]
fn group_reporting_sums_every_section_of_a_group_into_one_json_entry() {
    let d = tmp("json");
    std::fs::write(d.join("g.fio"), ONE_GROUP).unwrap();
    std::fs::write(d.join("n.fio"), ONE_GROUP.replace("group_reporting\n", "")).unwrap();
    let doc = json_of(&d, "g.fio");
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "one entry for the group: {doc:#}");
    let e = &jobs[0];
    assert_eq!(e["jobname"], "a", "named after the group's first job");
    assert_eq!(e["groupid"], 0);
    assert_eq!(e["ringlab"]["threads"], 3);
    assert_eq!(ios(e, "read"), (128, 512 << 10));
    assert_eq!(ios(e, "write"), (64, 256 << 10));
    // fio's total_run_time: the threads' run times added.
    assert!(e["job_runtime"].as_u64().unwrap() >= e["read"]["runtime"].as_u64().unwrap());
    // Without group_reporting: one entry per thread, and they add up to
    // the group's entry.
    let doc = json_of(&d, "n.fio");
    let jobs = doc["jobs"].as_array().unwrap();
    let names: Vec<&str> = jobs
        .iter()
        .map(|j| j["jobname"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "a", "b"]);
    for dir in ["read", "write"] {
        let sum = jobs
            .iter()
            .map(|j| ios(j, dir))
            .fold((0, 0), |s, x| (s.0 + x.0, s.1 + x.1));
        assert_eq!(
            sum,
            ios(e, dir),
            "{dir}: the threads' own counts add up to the entry"
        );
    }
    // The merged histograms hold every I/O (json+ bins).
    let out = fio(&d, &["--output-format=json+", "--output=p.json", "g.fio"]);
    assert_ok(&out);
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("p.json")).unwrap()).unwrap();
    let e = &doc["jobs"][0];
    for dir in ["read", "write"] {
        let n: u64 = e[dir]["clat_ns"]["bins"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(n, e[dir]["total_ios"].as_u64().unwrap(), "{dir} bins");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn two_groups_give_two_entries_in_json_normal_and_terse() {
    let d = tmp("two");
    std::fs::write(d.join("t.fio"), TWO_GROUPS).unwrap();
    let doc = json_of(&d, "t.fio");
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2, "{doc:#}");
    assert_eq!(
        (jobs[0]["jobname"].as_str(), jobs[0]["groupid"].as_u64()),
        (Some("a"), Some(0))
    );
    assert_eq!(
        (jobs[1]["jobname"].as_str(), jobs[1]["groupid"].as_u64()),
        (Some("c"), Some(1))
    );
    assert_eq!(jobs[0]["ringlab"]["threads"], 3);
    assert_eq!(jobs[1]["ringlab"]["threads"], 2);
    assert_eq!(ios(&jobs[1], "read"), (128, 512 << 10));
    assert_eq!(ios(&jobs[1], "write"), (0, 0));

    // normal: one block per group, fio's header line, then each group's
    // run status.
    let out = fio(&d, &["t.fio"]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let head =
        Regex::new(r"(?m)^(\S[^:\n]*): \(groupid=(\d+), jobs=(\d+)\): err= 0: pid=\d+: ").unwrap();
    let blocks: Vec<(String, String, String)> = head
        .captures_iter(&text)
        .map(|c| (c[1].to_string(), c[2].to_string(), c[3].to_string()))
        .collect();
    assert_eq!(
        blocks,
        [
            ("a".into(), "0".into(), "3".into()),
            ("c".into(), "1".into(), "2".into())
        ],
        "{text}"
    );
    assert!(text.contains("Run status group 0 (all jobs):"), "{text}");
    assert!(text.contains("Run status group 1 (all jobs):"), "{text}");
    let issued = Regex::new(r"issued rwts: total=(\d+),(\d+),").unwrap();
    let totals: Vec<(u64, u64)> = issued
        .captures_iter(&text)
        .map(|c| (c[1].parse().unwrap(), c[2].parse().unwrap()))
        .collect();
    assert_eq!(totals, [(128, 64), (128, 0)], "{text}");

    // terse, json and normal in one output: the same entries in each.
    let out = fio(&d, &["--output-format=terse,json,normal", "t.fio"]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let terse: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.starts_with("3;"))
        .map(|l| l.split(';').collect())
        .collect();
    assert_eq!(terse.len(), 2, "{text}");
    assert_eq!((terse[0][2], terse[0][3]), ("a", "0"));
    assert_eq!((terse[1][2], terse[1][3]), ("c", "1"));
    // Field 6: read KiB.
    assert_eq!(terse[0][5], "512");
    assert_eq!(head.captures_iter(&text).count(), 2, "{text}");
    assert_eq!(
        text.matches("\"jobname\"").count(),
        2 + 4,
        "2 entries and 4 sections of evidence: {text}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn fio_s_jsonplus_tool_reads_a_group_s_entry() {
    let Ok(tool) = which("fio_jsonplus_clat2csv") else {
        common::skip(
            "fio_jsonplus_clat2csv",
            "fio's tools are not installed (apt-get install fio)",
        );
        return;
    };
    let d = tmp("clat2csv");
    std::fs::write(d.join("t.fio"), TWO_GROUPS).unwrap();
    let out = fio(&d, &["--output-format=json+", "--output=o.json", "t.fio"]);
    assert_ok(&out);
    let mut cmd = Command::new(tool);
    cmd.current_dir(&d).args(["o.json", "c.csv"]);
    let out = run_limited(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // One file per entry: one per group.
    for k in 0..2 {
        let csv = std::fs::read_to_string(d.join(format!("c_job{k}.csv"))).unwrap();
        assert!(csv.lines().count() > 1, "{csv}");
    }
    assert!(!d.join("c_job2.csv").exists());
    std::fs::remove_dir_all(&d).unwrap();
}

fn which(name: &str) -> Result<PathBuf, ()> {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .find(|f| f.is_file())
        })
        .ok_or(())
}
