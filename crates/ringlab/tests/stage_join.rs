//! The block stages of `--evidence stages` on a disk nothing else reads,
//! in a test binary of its own. Among the other kstat tests (cargo runs a
//! binary's tests two at a time here) the join fell to 86-95% in 3 of 9
//! runs of that binary on 2026-11-28, with the code before that day's
//! changes and after alike (once with 13537 events lost to a full ring
//! buffer, twice with none lost). Alone it joined 99.99% when it was
//! written; that day it failed 2 of 14 runs alone (4 by name, 10 as its
//! own binary, 2 of those in CI, which passed), one of them with 8432
//! events lost (the reader thread did not get the CPU for over 100 ms on
//! the shared host; the other's output was not kept). Why the join misses
//! under load without losing events is not known yet.

mod common;

use common::*;

/// The block stages on a disk nothing else reads: a loop device over a
/// file in /dev/shm, read raw (the loop driver traces every completion).
#[test]
fn stage_evidence_joins_block_requests_on_an_idle_disk() {
    const NAME: &str = "stage_evidence_joins_block_requests_on_an_idle_disk";
    if !is_root() {
        skip(NAME, "needs root (a loop device)");
        return;
    }
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let img = dir.path().join("disk.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let dev = match Loop::over(&img) {
        Ok(l) => l,
        Err(e) => {
            skip_root_only(NAME, &format!("no loop device: {e}"));
            return;
        }
    };
    let r = json_run(&format!(
        "io {} --direct --rw randread --iodepth 4 --runtime 600ms --evidence stages",
        dev.dev
    ));
    let st = &r["kstat"]["stages"];
    let Some(matched) = st["requests_matched"].as_u64() else {
        skip_root_only(
            NAME,
            &format!("no stage tracing: {}", r["kstat"]["unavailable"]),
        );
        return;
    };
    let block = st["requests_matched_block"].as_u64().unwrap_or(0);
    assert!(matched > 100, "{st}");
    // 99.99% were joined by sector on an idle loop device.
    assert!(
        block * 100 >= matched * 95,
        "{block} of {matched} with block events: {st}"
    );
}
