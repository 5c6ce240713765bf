//! `ringlab fio`: fio's fill_device (write until the file system is full;
//! ENOSPC ends the job without an error; a later group reads and verifies
//! what was written, sized when it starts) and offset_increment (each
//! clone of numjobs starts offset_increment further on), as fio 3.33's
//! surface-scan.fio and cross-stripe-verify.fio use them.

mod common;

use common::{assert_ok, fio, first_json, is_root, skip, skip_root_only};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const EXAMPLES: &str = "/usr/share/doc/fio/examples";

fn tmp(name: &str) -> PathBuf {
    common::fresh_dir("fill", name)
}

fn job<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no job {name} in {v}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

/// The exit code, and `want` in the error on stderr.
fn fails(out: &std::process::Output, code: i32, want: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    assert!(err.contains(want), "{want:?} missing in: {err}");
}

/// surface-scan.fio's jobs; `write` is the write phase's own lines.
fn surface_scan(write: &str) -> String {
    format!(
        "[global]\nthread\nbs=64k\nioengine=sync\nverify=meta\nverify_pattern=0xaa555aa5\nverify_interval=512\n\n[write-phase]\nfilename=datafile.tmp\nrw=write\n{write}do_verify=0\n\n[verify-phase]\nstonewall\ncreate_serialize=0\nfilename=datafile.tmp\nrw=read\ndo_verify=1\n"
    )
}

/// A tmpfs of `size` mounted at `dir`, unmounted when dropped.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn free_bytes(dir: &Path) -> u64 {
    let c = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
    // SAFETY: statvfs fills the struct it is given; c is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
    st.f_bfree * st.f_frsize
}

#[test]
fn fill_device_writes_the_free_space_and_ends_at_enospc_without_an_error() {
    let name = "fill_device_writes_the_free_space_and_ends_at_enospc_without_an_error";
    if !is_root() {
        skip_root_only(name, "mounting a small tmpfs needs root");
        return;
    }
    let d = tmp("fs");
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
        .arg(&d)
        .status();
    if !st.is_ok_and(|s| s.success()) {
        skip(name, "mount -t tmpfs failed (no CAP_SYS_ADMIN here)");
        return;
    }
    let _mounted = Mounted(d.clone());
    // A stale file of the name: fio removes it and writes from scratch.
    std::fs::write(d.join("datafile.tmp"), vec![7u8; 64 << 10]).unwrap();
    std::fs::write(d.join("job.fio"), surface_scan("fill_device=1\n")).unwrap();
    let free = free_bytes(&d) + (64 << 10);
    let out = fio(&d, &["--output-format=json,normal", "job.fio"]);
    assert_ok(&out);
    let v = first_json(&out);
    let w = job(&v, "write-phase");
    let r = job(&v, "verify-phase");
    assert_eq!(
        u(&w["error"]),
        0,
        "ENOSPC is not an error under fill_device"
    );
    let written = u(&w["write"]["io_bytes"]);
    assert!(
        written <= free && free - written < 64 << 10,
        "wrote {written} bytes of {free} free"
    );
    assert_eq!(u(&w["read"]["total_ios"]), 0, "no read-back after ENOSPC");
    // The verify phase reads (and checks) every whole block written,
    // sized when its group starts.
    assert_eq!(u(&r["read"]["io_bytes"]), written / (64 << 10) * (64 << 10));
    assert_eq!(u(&r["error"]), 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("fill_device: the file system or device is full"),
        "{text}"
    );
}

/// One surface-scan write phase in a fresh 4 MiB tmpfs by `tool`
/// (`ringlab` or `fio`), with `taken` bytes of it used by another file
/// first: the write phase's (total_ios, short_ios, io_bytes) in fio's json,
/// or None when no tmpfs can be mounted.
fn fill_counts(tool: &str, taken: usize) -> Option<(u64, u64, u64)> {
    let d = tmp(&format!("count-{tool}-{taken}"));
    let fs = d.join("fs");
    std::fs::create_dir_all(&fs).unwrap();
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
        .arg(&fs)
        .status();
    if !st.is_ok_and(|s| s.success()) {
        return None;
    }
    let mounted = Mounted(fs.clone());
    if taken > 0 {
        std::fs::write(fs.join("taken"), vec![1u8; taken]).unwrap();
    }
    // The job file outside the tmpfs, which the fill alone uses.
    let job_file = d.join("job.fio");
    std::fs::write(
        &job_file,
        surface_scan(
            "fill_device=1
",
        ),
    )
    .unwrap();
    let args = [
        "--output-format=json",
        "--section=write-phase",
        job_file.to_str().unwrap(),
    ];
    let out = if tool == "fio" {
        Command::new("fio")
            .current_dir(&fs)
            .args(args)
            .output()
            .unwrap()
    } else {
        fio(&fs, &args)
    };
    assert_ok(&out);
    let v = first_json(&out);
    let w = &job(&v, "write-phase")["write"];
    let counts = (u(&w["total_ios"]), u(&w["short_ios"]), u(&w["io_bytes"]));
    drop(mounted);
    let _ = std::fs::remove_dir_all(&d);
    Some(counts)
}

#[test]
fn fill_device_counts_the_write_that_found_no_space_as_fio() {
    let name = "fill_device_counts_the_write_that_found_no_space_as_fio";
    if !is_root() {
        skip_root_only(name, "mounting a small tmpfs needs root");
        return;
    }
    // 4 MiB free: 64 writes of 64 KiB, then one that finds no space: fio
    // counts it issued (65), its bytes are not in io_bytes.
    let Some(whole) = fill_counts("ringlab", 0) else {
        skip(name, "mount -t tmpfs failed (no CAP_SYS_ADMIN here)");
        return;
    };
    assert_eq!(whole, (65, 0, 4 << 20));
    // One page taken: 63 whole writes, one cut short at 60 KiB, and its
    // rest issued again finds no space. fio: 65 issued, 1 short, and the
    // short write's 60 KiB not in io_bytes (it ended in an error).
    let cut = fill_counts("ringlab", 4096).unwrap();
    assert_eq!(cut, (65, 1, 63 * (64 << 10)));
    if common::real_fio() {
        assert_eq!(fill_counts("fio", 0), Some(whole), "fio 3.33, 4 MiB free");
        assert_eq!(
            fill_counts("fio", 4096),
            Some(cut),
            "fio 3.33, a page taken"
        );
    }
}

#[test]
fn fill_device_with_a_size_recreates_the_file_and_verify_meta_finds_a_damaged_block() {
    let d = tmp("meta");
    std::fs::write(d.join("datafile.tmp"), vec![7u8; 3 << 20]).unwrap();
    std::fs::write(d.join("job.fio"), surface_scan("fill_device=1\nsize=1m\n")).unwrap();
    let out = fio(&d, &["--output-format=json", "job.fio"]);
    assert_ok(&out);
    let v = first_json(&out);
    assert_eq!(u(&job(&v, "write-phase")["write"]["io_bytes"]), 1 << 20);
    assert_eq!(u(&job(&v, "verify-phase")["read"]["io_bytes"]), 1 << 20);
    // fio removes the file and writes it anew: the old 3 MiB are gone.
    assert_eq!(
        std::fs::metadata(d.join("datafile.tmp")).unwrap().len(),
        1 << 20
    );
    if common::real_fio() {
        // fio 3.33 checks the blocks ringlab wrote.
        let st = Command::new("fio")
            .current_dir(&d)
            .args(["--section=verify-phase", "job.fio"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&st.stdout);
        assert!(
            st.status.success() && !text.contains("verify failed"),
            "{text}"
        );
    }
    // One byte of the data of the sixth block's second interval.
    let mut data = std::fs::read(d.join("datafile.tmp")).unwrap();
    data[5 * 65536 + 512 + 100] ^= 0xff;
    std::fs::write(d.join("datafile.tmp"), &data).unwrap();
    let out = fio(&d, &["--section=verify-phase", "job.fio"]);
    fails(
        &out,
        1,
        "pattern: verify failed at offset 328192, length 512",
    );
}

#[test]
fn fill_device_on_a_read_job_is_refused_with_its_line() {
    let d = tmp("ro");
    std::fs::write(
        d.join("job.fio"),
        "[r]\nfilename=F\nrw=read\nfill_device=1\nsize=1m\n",
    )
    .unwrap();
    let out = fio(&d, &["job.fio"]);
    fails(
        &out,
        2,
        "job.fio:4: [r] fill_device=1: fio lays out the file of a job",
    );
}

/// Per job (by its first offset): the (direction, offset) of every I/O in
/// its latency log.
fn offsets(dir: &Path, prefix: &str) -> BTreeMap<u64, Vec<(u8, u64)>> {
    let mut jobs = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let n = p.file_name().unwrap().to_string_lossy().into_owned();
        if !(n.starts_with(&format!("{prefix}_lat.")) && n.ends_with(".log")) {
            continue;
        }
        let ios: Vec<(u8, u64)> = std::fs::read_to_string(&p)
            .unwrap()
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(',').map(str::trim).collect();
                (f[2].parse().unwrap(), f[4].parse().unwrap())
            })
            .collect();
        jobs.insert(ios[0].1, ios);
    }
    jobs
}

/// cross-stripe-verify.fio scaled down: 4 clones 2 MiB apart from 120k in
/// an 8 MiB file, 16k written every 128k, each verified right after.
const CROSS_STRIPE: &str = "[global]\nbs=16k\nrw=write:112k\nverify=crc32c\nfilename=xs.dat\nverify_backlog=1\noffset_increment=2m\nio_size=128k\noffset=120k\ngroup_reporting\nverify_dump=1\nloops=2\nwrite_lat_log=PREFIX\nlog_offset=1\n\n[write-verify]\nnumjobs=4\n";

#[test]
fn offset_increment_starts_each_clone_where_fio_does() {
    let d = tmp("inc");
    let mut data = vec![0u8; 8 << 20];
    ringlab_io::verify::fill_payload(&mut data, 3);
    std::fs::write(d.join("xs.dat"), &data).unwrap();
    std::fs::write(d.join("job.fio"), CROSS_STRIPE.replace("PREFIX", "rl")).unwrap();
    let out = fio(&d, &["--output-format=json", "job.fio"]);
    assert_ok(&out);
    let v = first_json(&out);
    let j = job(&v, "write-verify");
    // 128k per loop, two loops, four clones; each write read back once.
    assert_eq!(u(&j["write"]["total_ios"]), 4 * 2 * 8);
    assert_eq!(u(&j["read"]["total_ios"]), 4 * 2 * 8);
    let got = offsets(&d, "rl");
    let starts: Vec<u64> = got.keys().copied().collect();
    let want: Vec<u64> = (0..4).map(|n| (120 << 10) + n * (2 << 20)).collect();
    assert_eq!(starts, want);
    for (start, ios) in &got {
        let writes: Vec<u64> = ios.iter().filter(|io| io.0 == 1).map(|io| io.1).collect();
        // Without size a clone's region runs from its start to the end of
        // the file; the sequence skips 112k after each 16k and wraps.
        let blocks = ((8 << 20) - start) / (16 << 10);
        let expect: Vec<u64> = (0..16u64)
            .map(|k| start + (k * 8 % (blocks / 8 * 8).max(8)) * (16 << 10))
            .collect();
        assert_eq!(writes, expect, "clone starting at {start}");
    }
    if common::real_fio() {
        std::fs::write(d.join("xs.dat"), &data).unwrap();
        std::fs::write(d.join("fio.fio"), CROSS_STRIPE.replace("PREFIX", "fio")).unwrap();
        let st = Command::new("fio")
            .current_dir(&d)
            .args(["--output-format=json", "fio.fio"])
            .output()
            .unwrap();
        assert!(st.status.success(), "{st:?}");
        // I/O for I/O, reads and writes, the same offsets per clone.
        assert_eq!(offsets(&d, "fio"), got);
    }
}

#[test]
fn the_two_example_files_parse_unchanged() {
    let name = "the_two_example_files_parse_unchanged";
    for f in ["surface-scan.fio", "cross-stripe-verify.fio"] {
        let p = Path::new(EXAMPLES).join(f);
        if !p.exists() {
            skip(
                name,
                &format!("{} is not installed (fio-examples)", p.display()),
            );
            continue;
        }
        let d = tmp("parse");
        let out = fio(&d, &["--parse-only", p.to_str().unwrap()]);
        assert_ok(&out);
    }
}
