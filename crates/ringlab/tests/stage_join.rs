//! The block stages of `--evidence stages` on a disk nothing else reads,
//! in a test binary of its own. It failed in CI on 2026-11-28 (stop 39)
//! and alone in 2 of 14 runs: the join fell to 75-95% on a fresh loop
//! device, with up to 62,000 events lost to full ring buffers (6 of 10
//! runs lost events). The cause was the reader thread: in a debug build it
//! copied every record byte by byte through closures and a fresh Vec, so
//! it fell behind 4 tracepoints at 120k requests/s. It now reads records
//! in place; 12 fresh-device runs alone and 15 beside two CPU hogs lost
//! nothing and joined 99.97-100%.
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
