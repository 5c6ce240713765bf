//! `ringlab fio`: what the blocks hold and carry. fio's verify= in fio's
//! own block format (read back and counted as fio counts it; a damaged
//! block is found; fio 3.33 and ringlab read each other's blocks), the
//! dedupe and compress shares of written buffers, and per-request I/O
//! priorities (cmdprio) as fio's latency log shows them.

mod common;

use common::{assert_ok, fio};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn tmp(name: &str) -> PathBuf {
    common::fresh_dir("fioc", name)
}

fn job_file(dir: &Path, text: &str) -> String {
    std::fs::write(dir.join("job.fio"), text).unwrap();
    "job.fio".to_string()
}

fn json(out: &std::process::Output) -> Value {
    let t = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&t[t.find('{').expect("json")..]).unwrap()
}

fn ios(v: &Value, dir: &str) -> u64 {
    v["jobs"][0][dir]["total_ios"].as_u64().unwrap()
}

#[test]
fn a_verify_write_job_reads_every_block_back_as_fio_counts_it() {
    let d = tmp("rb");
    for extra in ["", "verify_backlog=16\n"] {
        let _ = std::fs::remove_file(d.join("F"));
        let jf = job_file(
            &d,
            &format!("[w]\nfilename=F\nsize=1m\nbs=4k\nrw=randwrite\nioengine=libaio\niodepth=8\nverify=crc32c\n{extra}"),
        );
        let out = fio(&d, &["--output-format=json", &jf]);
        assert_ok(&out);
        let v = json(&out);
        assert_eq!(ios(&v, "write"), 256, "{extra}");
        assert_eq!(
            ios(&v, "read"),
            256,
            "the read-back is counted as reads ({extra})"
        );
    }
    if common::real_fio() {
        // fio 3.33 checks the blocks ringlab wrote, with its own code.
        let st = Command::new("fio")
            .current_dir(&d)
            .args([
                "--name=chk",
                "--filename=F",
                "--size=1m",
                "--bs=4k",
                "--rw=read",
                "--verify=crc32c",
            ])
            .output()
            .unwrap();
        assert!(st.status.success(), "fio rejects ringlab's blocks: {st:?}");
    } else {
        common::skip(
            "fio reads ringlab's verify blocks",
            "fio 3 is not installed",
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_damaged_block_fails_the_run_with_fios_message_and_dump() {
    let d = tmp("bad");
    let jf = job_file(
        &d,
        "[w]\nfilename=F\nsize=64k\nbs=4k\nrw=write\nverify=md5\n",
    );
    assert_ok(&fio(&d, &[&jf]));
    let mut data = std::fs::read(d.join("F")).unwrap();
    data[4096 + 2000] ^= 0x40;
    std::fs::write(d.join("F"), &data).unwrap();
    let jf = job_file(
        &d,
        "[r]\nfilename=F\nsize=64k\nbs=4k\nrw=read\nverify=md5\nverify_dump=1\n",
    );
    let out = fio(&d, &[&jf]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("md5: verify failed at offset 4096"), "{err}");
    assert!(
        err.contains("Expected CRC") && err.contains("Received CRC"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(d.join("F.4096.received")).unwrap(),
        &data[4096..8192]
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn blocks_fio_wrote_verify_under_ringlab() {
    if !common::real_fio() {
        common::skip(
            "ringlab reads fio's verify blocks",
            "fio 3 is not installed",
        );
        return;
    }
    let d = tmp("fromfio");
    for kind in ["crc32c", "sha1", "xxhash", "meta"] {
        let st = Command::new("fio")
            .current_dir(&d)
            .args([
                "--name=w",
                "--filename=F",
                "--size=256k",
                "--bs=8k",
                "--rw=randwrite",
                "--verify_interval=2k",
                "--do_verify=0",
            ])
            .arg(format!("--verify={kind}"))
            .output()
            .unwrap();
        assert!(st.status.success(), "{st:?}");
        let jf = job_file(
            &d,
            &format!("[r]\nfilename=F\nsize=256k\nbs=8k\nrw=randread\nverify={kind}\nverify_interval=2k\n"),
        );
        let out = fio(&d, &["--output-format=json", &jf]);
        assert_ok(&out);
        assert_eq!(ios(&json(&out), "read"), 32, "{kind}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn fios_non_standard_sha256_is_refused_with_its_place() {
    let d = tmp("sha");
    let jf = job_file(&d, "[w]\nfilename=F\nsize=64k\nrw=write\nverify=sha256\n");
    let out = fio(&d, &["--parse-only", &jf]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("job.fio:5: [w] verify=sha256") && err.contains("not the standard"),
        "{err}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn dedupe_and_compress_give_fios_shares_of_the_written_blocks() {
    let d = tmp("dedupe");
    let jf = job_file(
        &d,
        "[w]\nfilename=F\nsize=4m\nbs=4k\nrw=write\ndedupe_percentage=50\nbuffer_compress_percentage=50\n",
    );
    assert_ok(&fio(&d, &[&jf]));
    let data = std::fs::read(d.join("F")).unwrap();
    let blocks: Vec<&[u8]> = data.chunks(4096).collect();
    let unique: HashSet<&[u8]> = blocks.iter().copied().collect();
    let dup = 1.0 - unique.len() as f64 / blocks.len() as f64;
    assert!((0.42..0.58).contains(&dup), "duplicate share {dup}");
    for c in data.chunks(512) {
        assert!(
            c[256..].iter().all(|&b| b == 0),
            "the compressible half is zero"
        );
        assert!(c[..256].iter().any(|&b| b != 0));
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn cmdprio_sets_the_priority_of_the_stated_share_of_requests() {
    let d = tmp("prio");
    std::fs::write(d.join("F"), vec![1u8; 2 << 20]).unwrap();
    for engine in ["libaio", "io_uring"] {
        let jf = job_file(
            &d,
            &format!("[r]\nfilename=F\nsize=2m\nbs=4k\nrw=randread\nioengine={engine}\niodepth=4\nprioclass=2\nprio=5\ncmdprio_percentage=30\ncmdprio_class=3\nwrite_lat_log={engine}\nlog_prio=1\n"),
        );
        let out = fio(&d, &[&jf]);
        assert_ok(&out);
        let log = std::fs::read_to_string(d.join(format!("{engine}_lat.1.log"))).unwrap();
        let prios: Vec<&str> = log.lines().filter_map(|l| l.rsplit(", ").next()).collect();
        assert_eq!(prios.len(), 512, "{engine}");
        let idle = prios.iter().filter(|p| **p == "0x6000").count();
        let best = prios.iter().filter(|p| **p == "0x4005").count();
        assert_eq!(idle + best, 512, "{engine}: {log}");
        assert!(
            (110..200).contains(&idle),
            "{engine}: {idle} of 512 at cmdprio_class=3"
        );
    }
    // cmdprio is an option of fio's async engines only.
    let jf = job_file(&d, "[r]\nfilename=F\nsize=64k\ncmdprio_percentage=30\n");
    let out = fio(&d, &["--parse-only", &jf]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    std::fs::remove_dir_all(&d).unwrap();
}
