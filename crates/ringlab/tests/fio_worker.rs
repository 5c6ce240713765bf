//! The fio options that live in the worker loop: --invalidate, --ramp-time,
//! --rate-iops/--rate, --fsync/--fdatasync, --offset, --loops/--number-ios,
//! --bsrange/--bssplit, --status-interval and fio's logs, end to end.

mod common;

use common::*;
use std::os::fd::AsRawFd;
use std::path::Path;

/// Pages of `path` in the page cache, and pages in all (mincore).
fn resident(path: &Path) -> (usize, usize) {
    let f = std::fs::File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    // SAFETY: a shared read-only mapping of an open file, unmapped below.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    assert_ne!(map, libc::MAP_FAILED);
    let pages = len.div_ceil(4096);
    let mut vec = vec![0u8; pages];
    // SAFETY: vec holds one byte per page of the mapping.
    let rc = unsafe { libc::mincore(map, len, vec.as_mut_ptr()) };
    assert_eq!(rc, 0);
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(map, len) };
    (vec.iter().filter(|b| **b & 1 == 1).count(), pages)
}

#[test]
fn invalidate_0_keeps_the_cache_and_1_drops_it() {
    // On the worktree's file system (a tmpfs ignores DONTNEED).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("cache.dat");
    let f = file.display();
    json_run(&format!("io {f} --size 2m --rw read --io-size 4k"));
    // Read it all into the cache.
    std::fs::read(&file).unwrap();
    let (hot, pages) = resident(&file);
    if hot < pages / 2 {
        skip(
            &current_test(),
            "this file system does not keep the file cached",
        );
        return;
    }
    let r = json_run(&format!(
        "io {f} --size 2m --rw read --io-size 4k --engine sync --invalidate 0"
    ));
    assert_eq!(r["config"]["invalidate"], false);
    let (kept, _) = resident(&file);
    assert!(kept >= hot, "--invalidate 0 dropped pages: {kept} of {hot}");
    let r = json_run(&format!(
        "io {f} --size 2m --rw read --io-size 4k --engine sync"
    ));
    assert_eq!(r["config"]["invalidate"], true);
    let (left, _) = resident(&file);
    assert!(
        left < pages / 4,
        "--invalidate 1 kept {left} of {pages} pages"
    );
    // fio's spelling, on the command line.
    let r = json_run(&format!(
        "io --filename={f} --size=2m --rw=read --io_size=4k --invalidate=0"
    ));
    assert_eq!(r["config"]["invalidate"], false);
}

/// A 4 MiB file of the test's own on the worktree's file system.
fn small_target(dir: &tempfile::TempDir) -> String {
    let file = dir.path().join("t.dat");
    let f = file.display().to_string();
    json_run(&format!("io {f} --size 4m --rw read --io-size 4k"));
    f
}

#[test]
fn rate_iops_paces_each_job_and_ramp_time_is_not_counted() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = small_target(&dir);
    // 200 I/Os per second for 1 s: each I/O has a due time 5 ms after the
    // last, so no more than 201 can leave in the second, however fast the
    // target; a late I/O leaves at once (its lateness is in its latency),
    // so on a machine that is not starved it is close to 200. Only the
    // bound is asserted: a loaded machine may run fewer.
    let r = json_run(&format!(
        "io {f} --rw randread --rate-iops 200 --runtime 1s --engine sync --no-kstat"
    ));
    let ops = r["total"]["ops"].as_u64().unwrap();
    assert!((1..=201).contains(&ops), "{ops} I/Os at 200/s for 1 s");
    eprintln!("rate-iops 200 for 1 s: {ops} I/Os");
    assert_eq!(r["config"]["rate-iops"], serde_json::json!([200.0, 200.0]));
    // 300 ms of ramp at the same pace, then 500 ms measured: at most 101
    // I/Os issued after the ramp and the 4 in flight at its end (160 if
    // the ramp were counted).
    let r = json_run(&format!(
        "io {f} --rw randread --rate-iops 200 --ramp-time 300ms --runtime 500ms --engine uring --iodepth 4 --no-kstat"
    ));
    let ops = r["total"]["ops"].as_u64().unwrap();
    assert!(
        (1..=105).contains(&ops),
        "{ops} I/Os measured after the ramp"
    );
    eprintln!("rate-iops 200, ramp 300 ms, runtime 500 ms: {ops} I/Os");
    assert_eq!(r["config"]["ramp-time"], 0.3);
    // Writes only paced: reads go unpaced.
    let r = json_run(&format!(
        "io {f} --rw randrw --rate-iops ,100 --number-ios 400 --engine sync --no-kstat"
    ));
    assert_eq!(r["config"]["rate-iops"], serde_json::json!([null, 100.0]));
    // --rate in bytes: 400 KiB/s of 4 KiB blocks is 100 I/Os per second.
    let r = json_run(&format!(
        "io {f} --rw randread --rate 400k --runtime 1s --engine sync --no-kstat"
    ));
    let ops = r["total"]["ops"].as_u64().unwrap();
    assert!((1..=101).contains(&ops), "{ops} I/Os at 400 KiB/s for 1 s");
    assert_schema_valid(&r);
}

#[test]
fn fsync_every_n_writes_is_counted_on_every_engine() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = small_target(&dir);
    for engine in ["sync", "uring --iodepth 4", "posixaio --iodepth 4"] {
        let r = json_run(&format!(
            "io {f} --rw randwrite --number-ios 16 --fsync 4 --engine {engine} --no-kstat"
        ));
        assert_eq!(r["total"]["ops"], 16, "{engine}");
        assert_eq!(r["total"]["syncs"], 4, "{engine}");
        assert_schema_valid(&r);
    }
    let r = json_run(&format!(
        "io {f} --rw randwrite --direct --number-ios 12 --fdatasync 3 --engine libaio --iodepth 2 --no-kstat"
    ));
    assert_eq!(r["total"]["syncs"], 4);
    assert_eq!(r["config"]["fdatasync"], 3);
    // No sync asked: no key.
    let r = json_run(&format!("io {f} --rw randwrite --number-ios 4 --no-kstat"));
    assert!(r["total"].get("syncs").is_none());
    let out = ringlab(&format!("io {f} --rw randread --fsync 4"));
    assert_fails(&out, 2, &["--fsync", "issues none"]);
}

#[test]
fn number_ios_and_loops_bound_a_job() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = small_target(&dir);
    let r = json_run(&format!(
        "io {f} --rw read --number-ios 5 --loops 3 --numjobs 2 --no-kstat"
    ));
    assert_eq!(r["total"]["ops"], 30);
    let r = json_run(&format!(
        "io {f} --rw read --io-size 8k --loops 2 --no-kstat"
    ));
    assert_eq!(r["total"]["ops"], 4);
    let out = ringlab(&format!("io {f} --loops 2"));
    assert_fails(&out, 2, &["--loops", "--io-size"]);
}
