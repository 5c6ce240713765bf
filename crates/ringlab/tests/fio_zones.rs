//! `ringlab fio`: where fio places I/O (zoned distributions, blockalign,
//! zonemode=strided), exitall between jobs, NUMA binding, and the
//! refusals of what ringlab cannot do as fio (zbd, continue_on_error).

mod common;

use common::{assert_ok, fio, lat_log_ios};
use serde_json::Value;
use std::path::Path;

fn tmp(name: &str) -> std::path::PathBuf {
    common::fresh_dir("fioz", name)
}

fn share(offs: &[u64], lo: u64, hi: u64) -> f64 {
    offs.iter().filter(|o| **o >= lo && **o < hi).count() as f64 / offs.len() as f64
}

#[test]
fn zoned_distribution_puts_each_share_of_accesses_in_its_range() {
    let d = tmp("zoned");
    // 50% of the accesses in the first 5%, 30% in the next 15%, 20% in
    // the rest (fio's rand-zones.fio), over 20000 reads on the null engine.
    let size: u64 = 4000 * 4096;
    let out = fio(
        &d,
        &[
            "--name=z",
            "--ioengine=null",
            &format!("--size={size}"),
            "--io_size=80000k",
            "--rw=randread",
            "--norandommap",
            "--random_distribution=zoned:50/5:30/15:20/",
            "--write_lat_log=z",
            "--log_offset=1",
            "--output-format=terse",
        ],
    );
    assert_ok(&out);
    let offs: Vec<u64> = lat_log_ios(&d.join("z_lat.1.log"))
        .iter()
        .map(|o| o.2)
        .collect();
    assert_eq!(offs.len(), 20000);
    for (lo, hi, want) in [(0, 5, 0.5), (5, 20, 0.3), (20, 100, 0.2)] {
        let s = share(&offs, size * lo / 100, size * hi / 100);
        assert!((s - want).abs() < 0.02, "{lo}-{hi}%: {s:.3}, fio's {want}");
    }
    // Inside a zone the blocks are drawn uniformly: both halves of the
    // first zone get about half of its accesses.
    let half = share(&offs, 0, size * 5 / 200);
    assert!(
        (half - 0.25).abs() < 0.02,
        "first half of zone 1: {half:.3}"
    );
    // zoned_abs, and writes with their own list (after the comma).
    let out = fio(
        &d,
        &[
            "--name=a",
            "--ioengine=null",
            "--size=4m",
            "--io_size=40m",
            "--rw=randrw",
            "--norandommap",
            "--random_distribution=zoned_abs:75/1m:25/3m,100/512k",
            "--write_lat_log=a",
            "--log_offset=1",
            "--output-format=terse",
        ],
    );
    assert_ok(&out);
    let all = lat_log_ios(&d.join("a_lat.1.log"));
    let reads: Vec<u64> = all.iter().filter(|o| o.0 == 0).map(|o| o.2).collect();
    let writes: Vec<u64> = all.iter().filter(|o| o.0 == 1).map(|o| o.2).collect();
    assert!(reads.len() > 4000 && writes.len() > 4000);
    let s = share(&reads, 0, 1 << 20);
    assert!((s - 0.75).abs() < 0.02, "reads in the first 1m: {s:.3}");
    assert!(writes.iter().all(|o| *o < 512 << 10), "a write past 512k");
    // Shares that do not come to 100 are refused, as fio does.
    let out = fio(
        &d,
        &[
            "--name=b",
            "--ioengine=null",
            "--size=4m",
            "--rw=randread",
            "--random_distribution=zoned:50/5:30/15",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not 100"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn blockalign_puts_every_random_offset_on_its_boundary() {
    let d = tmp("align");
    let out = fio(
        &d,
        &[
            "--name=b",
            "--ioengine=null",
            "--size=8m",
            "--io_size=8m",
            "--rw=randrw",
            "--bssplit=512/40:1k/20:4k/30:16k/10",
            "--blockalign=4k",
            "--write_lat_log=b",
            "--log_offset=1",
            "--output-format=terse",
        ],
    );
    assert_ok(&out);
    let all = lat_log_ios(&d.join("b_lat.1.log"));
    assert!(all.len() > 1000);
    assert!(all.iter().all(|o| o.2 % 4096 == 0), "an offset off 4k");
    assert!(
        all.iter().all(|o| o.2 + o.1 <= 8 << 20),
        "an I/O past the region"
    );
    // Sizes below the alignment still occur: the I/O is short, its start
    // aligned.
    assert!(all.iter().any(|o| o.1 == 512));
    // An alignment that is not a multiple of the smallest size is refused.
    let out = fio(
        &d,
        &[
            "--name=c",
            "--ioengine=null",
            "--size=1m",
            "--rw=randread",
            "--bs=4k",
            "--blockalign=6k",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a multiple"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn strided_zones_read_zonesize_bytes_per_zone_then_skip() {
    let d = tmp("strided");
    // Zones of 2m every 3m (zonerange 2m + zoneskip 1m), 1m read in each;
    // 8m read in all, wrapping at the end of the 8m target: fio's
    // sequence is zone 0, 3m, 6m, 0, 3m, 6m, 0, 3m.
    let out = fio(
        &d,
        &[
            "--name=s",
            "--ioengine=null",
            "--size=8m",
            "--bs=64k",
            "--zonemode=strided",
            "--zonesize=1m",
            "--zonerange=2m",
            "--zoneskip=1m",
            "--write_lat_log=s",
            "--log_offset=1",
            "--output-format=terse",
        ],
    );
    assert_ok(&out);
    let offs: Vec<u64> = lat_log_ios(&d.join("s_lat.1.log"))
        .iter()
        .map(|o| o.2)
        .collect();
    assert_eq!(offs.len(), 128);
    let mb = 1u64 << 20;
    let zones = [0, 3, 6, 0, 3, 6, 0, 3];
    for (i, chunk) in offs.chunks(16).enumerate() {
        let z = zones[i] * mb;
        let want: Vec<u64> = (0..16).map(|k| z + k * 65536).collect();
        assert_eq!(chunk, want.as_slice(), "zone visit {i}");
    }
    // Random reads stay inside the zones too.
    let out = fio(
        &d,
        &[
            "--name=r",
            "--ioengine=null",
            "--size=8m",
            "--bs=64k",
            "--rw=randread",
            "--zonemode=strided",
            "--zonesize=1m",
            "--zonerange=2m",
            "--zoneskip=1m",
            "--write_lat_log=r",
            "--log_offset=1",
            "--output-format=terse",
        ],
    );
    assert_ok(&out);
    let offs: Vec<u64> = lat_log_ios(&d.join("r_lat.1.log"))
        .iter()
        .map(|o| o.2)
        .collect();
    assert_eq!(offs.len(), 128);
    for (i, chunk) in offs.chunks(16).enumerate() {
        let z = zones[i] * mb;
        assert!(
            chunk.iter().all(|o| *o >= z && *o + 65536 <= z + 2 * mb),
            "visit {i}: {chunk:?} outside the zone at {z}"
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn exitall_ends_the_other_jobs_when_one_ends() {
    let d = tmp("exitall");
    // [slow] does 20 I/Os 10 ms apart; [fast] would run 30 s. With
    // exitall, [fast] (its own group, exit_what=stonewall on [slow]) ends
    // with [slow]; [later] (after a stonewall) still runs; with
    // exit_what=all in [last], [never] (a later batch) does not start.
    std::fs::write(
        d.join("e.fio"),
        "[global]\nioengine=null\nsize=1m\nexitall\n\
         [slow]\nnumber_ios=20\nthinktime=10ms\nexit_what=stonewall\n\
         [fast]\nnew_group\ntime_based\nruntime=30\n\
         [later]\nstonewall\nsize=64k\n\
         [last]\nstonewall\nnumber_ios=5\nexit_what=all\n\
         [tail]\ntime_based\nruntime=30\n\
         [never]\nstonewall\nsize=64k\n",
    )
    .unwrap();
    let t0 = std::time::Instant::now();
    let out = fio(&d, &["--output-format=json", "e.fio"]);
    assert_ok(&out);
    assert!(t0.elapsed().as_secs() < 20, "a job outlived exitall");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    let names: Vec<&str> = jobs
        .iter()
        .map(|j| j["jobname"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["slow", "fast", "later", "last", "tail"]);
    let runtime = |i: usize| jobs[i]["job_runtime"].as_u64().unwrap();
    assert!(runtime(1) < 5000, "[fast] ran {} ms", runtime(1));
    assert_eq!(jobs[2]["read"]["total_ios"], 16, "[later] ran its 64k");
    assert!(runtime(4) < 5000, "[tail] ran {} ms", runtime(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[never] not started"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn numa_nodes_that_do_not_exist_are_refused_and_node_0_runs() {
    let d = tmp("numa");
    let out = fio(
        &d,
        &[
            "--name=n",
            "--ioengine=null",
            "--size=1m",
            "--numa_cpu_nodes=0-63",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not exist on this machine"), "{err}");
    if !Path::new("/sys/devices/system/node/node0").exists() {
        common::skip(
            "numa_node_0_runs",
            "no /sys/devices/system/node/node0 on this kernel",
        );
        return;
    }
    let out = fio(
        &d,
        &[
            "--name=n",
            "--ioengine=null",
            "--size=1m",
            "--numa_cpu_nodes=0",
            "--numa_mem_policy=bind:0",
            "--output-format=json",
        ],
    );
    assert_ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 256);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn zbd_and_continue_on_error_are_refused_with_file_line_and_reason() {
    let d = tmp("zbd");
    std::fs::write(
        d.join("z.fio"),
        "[global]\nrw=randwrite\nzonemode=zbd\nzonesize=256M\n[dev]\nfilename=/dev/ringlab-no-such-disk\n",
    )
    .unwrap();
    let out = fio(&d, &["--parse-only", "z.fio"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("z.fio:3"), "{err}");
    assert!(err.contains("queue/zoned"), "{err}");
    std::fs::write(
        d.join("c.fio"),
        "[global]\nsize=1m\ncontinue_on_error=verify\n[w]\nrw=write\n",
    )
    .unwrap();
    let out = fio(&d, &["--parse-only", "c.fio"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("c.fio:3"), "{err}");
    assert!(err.contains("a verify failure"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn continue_on_error_counts_the_listed_errors_and_goes_on() {
    if !common::is_root() {
        common::skip_root_only(
            "continue_on_error_counts_the_listed_errors_and_goes_on",
            "needs a tmpfs mount and a loop device",
        );
        return;
    }
    let d = tmp("coe");
    let mnt = d.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    // A loop device over a sparse 64 MiB file on a 2 MiB tmpfs: its
    // writes past the first 2 MiB fail with ENOSPC.
    if let Err(e) = common::sh(
        "mount",
        &[
            "-t",
            "tmpfs",
            "-o",
            "size=2m",
            "tmpfs",
            mnt.to_str().unwrap(),
        ],
    ) {
        common::skip(
            "continue_on_error_counts_the_listed_errors_and_goes_on",
            &format!("cannot mount a tmpfs: {e}"),
        );
        return;
    }
    let back = mnt.join("back");
    std::fs::File::create(&back)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let lo = match common::Loop::over(&back) {
        Ok(l) => l,
        Err(e) => {
            let _ = common::sh("umount", &[mnt.to_str().unwrap()]);
            common::skip(
                "continue_on_error_counts_the_listed_errors_and_goes_on",
                &format!("no loop device: {e}"),
            );
            return;
        }
    };
    let args = |extra: &'static [&'static str]| {
        let mut v = vec![
            "--name=f".to_string(),
            format!("--filename={}", lo.dev),
            "--rw=write".into(),
            "--bs=64k".into(),
            "--size=8m".into(),
            "--direct=1".into(),
            "--allow_mounted_write=1".into(),
            "--output-format=json".into(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let run = |a: Vec<String>| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        fio(&d, &a)
    };
    // ENOSPC is listed for writes: 96 errors counted, the 32 writes that
    // fit are done, the run ends well (fio: io_bytes 2 MiB, total_err 96).
    let out = run(args(&[
        "--continue_on_error=write",
        "--ignore_error=,ENOSPC",
    ]));
    assert_ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 2 << 20);
    let text = out.stdout.iter().map(|b| *b as char).collect::<String>();
    assert!(text.contains("continue_on_error: 96 I/O errors"), "{text}");
    // Without the list only EIO and EILSEQ go on (fio's default): the
    // first ENOSPC ends the job.
    let out = run(args(&["--continue_on_error=write"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("No space left"));
    // The loop device lets go of its file before the tmpfs is unmounted.
    drop(lo);
    let _ = common::sh("umount", &[mnt.to_str().unwrap()]);
    std::fs::remove_dir_all(&d).unwrap();
}
