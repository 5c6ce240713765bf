//! `ringlab fio` draws a job's directions, offsets and lengths from fio
//! 3.33's own random streams and seeds (workload/fio_rand.rs), so a job
//! issues fio's I/O sequence, not only its averages. The expected values
//! below were printed by fio 3.33 (Debian's `fio`) with the command given
//! above each, on psync at depth 1 (its per-I/O latency log is in issue
//! order): `--write_lat_log=X --log_offset=1`, columns 3-5 of `X_lat.N.log`.

mod common;

use common::{assert_ok, lat_log_ios, run_limited, BIN};
use std::path::{Path, PathBuf};
use std::process::Command;

fn tmp(name: &str) -> PathBuf {
    common::fresh_dir("fiostreams", name)
}

/// Runs `ringlab fio ARGS --write_lat_log=NAME --log_offset=1` in `dir`;
/// returns each job's (direction, length, offset) in issue order.
fn run(dir: &Path, name: &str, args: &[&str], jobs: usize) -> Vec<Vec<(u32, u64, u64)>> {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .arg("fio")
        .args(args)
        .arg(format!("--write_lat_log={name}"))
        .arg("--log_offset=1")
        .arg("--output-format=json");
    let out = run_limited(cmd);
    assert_ok(&out);
    (1..=jobs)
        .map(|j| lat_log_ios(&dir.join(format!("{name}_lat.{j}.log"))))
        .collect()
}

/// fio 3.33: `fio --name=x --filename=F --size=1m --rw=randread --bs=4k
/// --write_lat_log=x --log_offset=1`; its first 16 offsets. The whole run
/// is fio's too: every block of the file once (its random map).
#[test]
fn a_randread_job_reads_fios_offsets_in_fios_order() {
    let d = tmp("randread");
    let ios = run(
        &d,
        "x",
        &[
            "--name=x",
            "--filename=F",
            "--size=1m",
            "--rw=randread",
            "--bs=4k",
        ],
        1,
    )
    .remove(0);
    let fio: [u64; 16] = [
        61440, 774144, 880640, 491520, 417792, 884736, 397312, 368640, 954368, 69632, 892928,
        679936, 970752, 258048, 409600, 585728,
    ];
    let got: Vec<u64> = ios.iter().take(16).map(|i| i.2).collect();
    assert_eq!(got, fio);
    assert_eq!(ios.len(), 256);
    let mut offs: Vec<u64> = ios.iter().map(|i| i.2).collect();
    offs.sort();
    assert_eq!(offs, (0..256).map(|b| b * 4096).collect::<Vec<_>>());
    std::fs::remove_dir_all(&d).unwrap();
}

/// fio 3.33: `fio --name=m --filename=F --size=4m --rw=randrw
/// --rwmixread=70 --bssplit=4k/50:16k/30:64k/20,8k/60:32k/40
/// --write_lat_log=m --log_offset=1`: its first 24 I/Os (direction 0
/// read, 1 write; length; offset), and its totals (243 I/Os, 3596288
/// bytes, 175 reads: the job ends early, by fio's map rules for mixed
/// sizes).
#[test]
fn a_bssplit_randrw_job_issues_fios_directions_lengths_and_offsets() {
    let d = tmp("mix");
    let ios = run(
        &d,
        "m",
        &[
            "--name=m",
            "--filename=F",
            "--size=4m",
            "--rw=randrw",
            "--rwmixread=70",
            "--bssplit=4k/50:16k/30:64k/20,8k/60:32k/40",
        ],
        1,
    )
    .remove(0);
    let fio: [(u32, u64, u64); 24] = [
        (0, 65536, 249856),
        (0, 4096, 3104768),
        (0, 4096, 3534848),
        (1, 32768, 1966080),
        (0, 16384, 1683456),
        (0, 4096, 3522560),
        (1, 32768, 1589248),
        (0, 65536, 1482752),
        (0, 4096, 3825664),
        (0, 65536, 315392),
        (1, 32768, 3579904),
        (0, 16384, 2727936),
        (1, 8192, 3891200),
        (0, 65536, 1032192),
        (0, 16384, 1642496),
        (0, 16384, 2342912),
        (0, 65536, 1847296),
        (0, 65536, 3371008),
        (0, 65536, 1548288),
        (0, 4096, 2596864),
        (1, 8192, 16384),
        (1, 32768, 1777664),
        (0, 4096, 1323008),
        (1, 8192, 2883584),
    ];
    assert_eq!(ios[..24], fio[..]);
    let bytes: u64 = ios.iter().map(|i| i.1).sum();
    let reads = ios.iter().filter(|i| i.0 == 0).count();
    assert_eq!((ios.len(), bytes, reads), (243, 3596288, 175));
    std::fs::remove_dir_all(&d).unwrap();
}

/// fio 3.33: `fio --name=c --filename=F --size=1m --rw=randread --bs=4k
/// --numjobs=2 --randseed=1234 --write_lat_log=c --log_offset=1`: the
/// first clone keeps fio's fixed offset seed (the same offsets as without
/// randseed), the second draws from randseed's stream. And `fio --name=s
/// --filename=F --size=1m --rw=read --bsrange=4k-64k`: a sequential job's
/// lengths from fio's length stream (31 I/Os).
#[test]
fn clones_and_sequential_lengths_follow_fios_seeds() {
    let d = tmp("clones");
    let jobs = run(
        &d,
        "c",
        &[
            "--name=c",
            "--filename=F",
            "--size=1m",
            "--rw=randread",
            "--bs=4k",
            "--numjobs=2",
            "--randseed=1234",
        ],
        2,
    );
    let first = |j: &Vec<(u32, u64, u64)>| j.iter().take(8).map(|i| i.2).collect::<Vec<_>>();
    assert_eq!(
        first(&jobs[0]),
        [61440, 774144, 880640, 491520, 417792, 884736, 397312, 368640]
    );
    assert_eq!(
        first(&jobs[1]),
        [610304, 163840, 311296, 602112, 176128, 925696, 200704, 552960]
    );
    let seq = run(
        &d,
        "s",
        &[
            "--name=s",
            "--filename=F",
            "--size=1m",
            "--rw=read",
            "--bsrange=4k-64k",
        ],
        1,
    )
    .remove(0);
    let lens: Vec<u64> = seq.iter().take(12).map(|i| i.1).collect();
    assert_eq!(
        lens,
        [12288, 45056, 53248, 24576, 61440, 8192, 65536, 12288, 16384, 12288, 16384, 24576]
    );
    assert_eq!(seq.len(), 31);
    // Sequential: each I/O starts where the last ended.
    let mut next = 0;
    for io in &seq {
        assert_eq!(io.2, next);
        next += io.1;
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// fio 3.33: `fio --name=z --filename=F --size=1m --rw=randread --bs=4k
/// --random_distribution=zipf:1.2 --number_ios=16 --write_lat_log=z
/// --log_offset=1`, and the same with `normal:10` (name g): fio seeds
/// these from the file's name and the thread number (fio_dist.rs).
#[test]
fn zipf_and_normal_offsets_are_fios() {
    let d = tmp("dist");
    let offs = |name: &str, dist: &str| -> Vec<u64> {
        run(
            &d,
            name,
            &[
                &format!("--name={name}"),
                "--filename=F",
                "--size=1m",
                "--rw=randread",
                "--bs=4k",
                &format!("--random_distribution={dist}"),
                "--number_ios=16",
            ],
            1,
        )
        .remove(0)
        .iter()
        .map(|i| i.2)
        .collect()
    };
    assert_eq!(
        offs("z", "zipf:1.2"),
        [
            102400, 352256, 491520, 192512, 491520, 393216, 405504, 765952, 794624, 405504, 491520,
            491520, 1024000, 233472, 196608, 765952
        ]
    );
    assert_eq!(
        offs("g", "normal:10"),
        [
            679936, 421888, 528384, 815104, 626688, 782336, 110592, 573440, 610304, 77824, 937984,
            454656, 421888, 561152, 196608, 212992
        ]
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// fio 3.33: `fio --name=t --ioengine=falloc --filename=F --size=1m
/// --rw=randtrim --bssplit=4k/50:16k/50 --numjobs=2` on a 1 MiB file:
/// 126 and 141 trims of 1 MiB each (its random map cuts the 16 KiB draws
/// where blocks are done, so the counts follow its offset and trim length
/// streams). ringlab drew a randtrim job's offsets from its own generator
/// before (120 and 121 trims); falloc.fio's punch jobs are such jobs.
#[test]
fn a_randtrim_job_trims_fios_offsets_and_lengths() {
    let d = tmp("randtrim");
    std::fs::write(d.join("F"), vec![0u8; 1 << 20]).unwrap();
    let out = common::fio(
        &d,
        &[
            "--name=t",
            "--ioengine=falloc",
            "--filename=F",
            "--size=1m",
            "--rw=randtrim",
            "--bssplit=4k/50:16k/50",
            "--numjobs=2",
            "--output-format=json",
        ],
    );
    if !out.status.success()
        && String::from_utf8_lossy(&out.stderr).contains("Operation not supported")
    {
        common::skip(
            "a_randtrim_job_trims_fios_offsets_and_lengths",
            "the temporary directory's file system cannot punch holes",
        );
        return;
    }
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let trims: Vec<(u64, u64)> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["trim"]["total_ios"].as_u64().unwrap(),
                j["trim"]["io_bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(trims, [(126, 1 << 20), (141, 1 << 20)]);
    std::fs::remove_dir_all(&d).unwrap();
}
