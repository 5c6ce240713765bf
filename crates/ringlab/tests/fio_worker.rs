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
