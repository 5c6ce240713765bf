//! fio's verify= with a read/write mix (fio 3.33 backend.c: a read is
//! verified when it comes from the write log or the job does not write):
//! the mix's own reads are workload I/O, unchecked; the written blocks are
//! read back and checked (verify_backlog batches and the final read-back),
//! as fio counts them: reads = the mix's reads + one per write.

mod common;

use common::*;
use serde_json::Value;

#[test]
fn a_read_write_mix_verifies_only_its_write_log() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("vf");
    for backlog in [0, 16] {
        let _ = std::fs::remove_file(&f);
        // The file is laid out with random data, which fio's verify would
        // reject: the mix's reads of blocks never written are not checked.
        let out = ringlab(&format!(
            "fio --name=v --filename={} --size=1m --bs=4k --rw=randrw --verify=crc32c --verify_backlog={backlog} --output-format=json",
            f.display()
        ));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let j = &v["jobs"][0];
        let (r, w) = (
            j["read"]["total_ios"].as_u64().unwrap(),
            j["write"]["total_ios"].as_u64().unwrap(),
        );
        // fio 3.33 on the same job: reads 256, writes 124 (its own mix):
        // 256 blocks of the mix (random map), then one read per write.
        assert!(w > 0 && w < 256, "{j}");
        assert_eq!(
            r, 256,
            "the mix's reads plus one verify read per write: {j}"
        );
        assert_eq!(j["error"], 0);
    }
    // ringlab io's result counts the verified blocks: the writes alone.
    let _ = std::fs::remove_file(&f);
    let v = json_run(&format!(
        "io --bs 4096 --rw randrw --size 1048576 --io-size 1048576 --engine sync --fio-verify kind=crc32c,do_verify=1,backlog=16 --random-map {}",
        f.display()
    ));
    let t = &v["total"];
    assert_eq!(t["verified_blocks"], t["write"]["ops"], "{t}");
}
