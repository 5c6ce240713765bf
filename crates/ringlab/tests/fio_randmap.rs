//! `ringlab fio`: fio 3.33's random map with block sizes that differ by
//! direction or vary (io_u.c's mark_random_map, last_block,
//! axmap_next_free), checked I/O by I/O from the per-I/O log.

mod common;

use common::{assert_ok, fio, lat_log_ios};
use serde_json::Value;

fn tmp(name: &str) -> std::path::PathBuf {
    common::fresh_dir("fiomap", name)
}

/// A randrw job with reads of 4k or 64k and writes of 64k, as
/// cmdprio-bssplit.fio mixes them: fio's map has one bit per 4k, reads
/// pick and mark it in 4k units, writes in 64k units (a write at slot s
/// sets bit s only). Replaying fio's rules over the log: every I/O starts
/// on a free bit, covers only free bits in its own units, and a job that
/// stopped short of size did so because a write pick could land past the
/// last write slot (bit slots-1 set).
#[test]
fn randrw_with_mixed_sizes_follows_fios_map_and_ends_where_it_does() {
    const SIZE: u64 = 1 << 20;
    const SLOTS: u64 = SIZE / 65536;
    let d = tmp("randrw");
    let mut short = 0;
    for seed in 1..=12 {
        let _ = std::fs::remove_file(d.join("m_lat.1.log"));
        let out = fio(
            &d,
            &[
                "--name=m",
                "--filename=F",
                "--size=1m",
                "--rw=randrw",
                "--bssplit=4k/40:64k/60,64k/100",
                &format!("--randseed={seed}"),
                "--write_lat_log=m",
                "--log_offset=1",
                "--output-format=json",
            ],
        );
        assert_ok(&out);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let j = &v["jobs"][0];
        let ios = lat_log_ios(&d.join("m_lat.1.log"));
        let total = |k: &str| j["read"][k].as_u64().unwrap() + j["write"][k].as_u64().unwrap();
        assert_eq!(total("total_ios"), ios.len() as u64);
        let bytes: u64 = ios.iter().map(|i| i.1).sum();
        assert_eq!(total("io_bytes"), bytes);
        let mut bits = vec![false; (SIZE / 4096) as usize];
        for &(dir, len, off) in &ios {
            let unit = if dir == 0 { 4096 } else { 65536 };
            assert_eq!(off % unit, 0, "seed {seed}: {dir} {len} at {off}");
            assert!(off + len <= SIZE);
            let b = (off / unit) as usize;
            if dir == 1 {
                assert!((b as u64) < SLOTS, "a write past its slots");
                assert_eq!(len, 65536);
            }
            // The run of free bits from b, in the I/O's own units.
            let want = len.div_ceil(unit) as usize;
            for k in 0..want {
                assert!(
                    !bits[b + k],
                    "seed {seed}: bit {} done twice ({dir} {len} at {off})",
                    b + k
                );
                bits[b + k] = true;
            }
        }
        if bytes < SIZE {
            short += 1;
            assert!(
                bits[(SLOTS - 1) as usize],
                "seed {seed}: stopped at {bytes} bytes with the last write slot free"
            );
        }
    }
    // fio stops most such jobs short of size (cmdprio-bssplit.fio: 45 I/Os
    // where a map without its rule does 81).
    assert!(short > 0, "no job stopped early");
    std::fs::remove_dir_all(&d).unwrap();
}

/// A write job whose reads would be 4k: fio sizes its map by them, so 64k
/// writes use slots 0-3 of a 64-bit map and a busy pick moves to the next
/// free bit: past slot 3 that is an offset past the file, and the job
/// ends. The mean number of writes the rule gives is computed here.
#[test]
fn writes_larger_than_reads_end_by_fios_rule() {
    const L: usize = 4;
    let mut expect = [0f64; 1 << L];
    for s in (0..(1usize << L) - 1).rev() {
        let mut e = 0.0;
        for b in 0..L {
            if let Some(c) = (b..L).find(|&c| s & (1 << c) == 0) {
                e += 1.0 + expect[s | (1 << c)];
            }
        }
        expect[s] = e / L as f64;
    }
    let d = tmp("wonly");
    // fio 3.33 seeds a job's first clone's offsets with its fixed seed
    // whatever randseed says (fio_rand.rs): clones 2-8 of each run vary
    // with randseed. Runs 1 and 2 must be fio's, clone for clone: fio 3.33
    // printed these with `fio --name=w --filename=F --size=256k
    // --bs=4k,64k --rw=randwrite --randseed=S --numjobs=8
    // --output-format=json` (write total_ios of each job).
    let fios: [[u64; 8]; 2] = [[4, 2, 3, 4, 4, 4, 2, 1], [4, 4, 4, 1, 4, 3, 4, 2]];
    let mut runs = 0;
    let mut writes = 0;
    let mut fewer = 0;
    for seed in 1..=6u64 {
        let out = fio(
            &d,
            &[
                "--name=w",
                "--filename=F",
                "--size=256k",
                "--bs=4k,64k",
                "--rw=randwrite",
                "--numjobs=8",
                &format!("--randseed={seed}"),
                "--output-format=json",
            ],
        );
        assert_ok(&out);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let jobs = v["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), 8);
        let counts: Vec<u64> = jobs
            .iter()
            .map(|j| j["write"]["total_ios"].as_u64().unwrap())
            .collect();
        if seed <= 2 {
            assert_eq!(counts, fios[seed as usize - 1], "randseed={seed}");
        }
        for (j, &n) in jobs.iter().zip(&counts).skip(1) {
            assert!((1..=L as u64).contains(&n), "{n} writes");
            assert_eq!(j["write"]["io_bytes"].as_u64().unwrap(), n * 65536);
            writes += n;
            fewer += (n < L as u64) as u32;
            runs += 1;
        }
    }
    let mean = writes as f64 / runs as f64;
    // One job's count varies by about 0.9: 42 jobs, a standard error of
    // about 0.15.
    assert!(
        (mean - expect[0]).abs() < 0.5,
        "mean {mean}, fio's rule {}",
        expect[0]
    );
    assert!(fewer > 0, "every job wrote all {L} slots");
    std::fs::remove_dir_all(&d).unwrap();
}
