//! Trims (rw=trim, randtrim, trimwrite, randtrimwrite), fio's fallocate=
//! and create_on_open: holes punched in a file by `ringlab io`, discards
//! on a loop device by `ringlab fio` on every engine, counted in fio's
//! json; refusals with the reason where a target cannot trim.

mod common;

use common::*;
use serde_json::Value;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The offsets of the first hole and the first data at or after 0.
fn hole_and_data(path: &Path) -> (i64, i64) {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    // SAFETY: lseek on an open descriptor.
    let hole = unsafe { libc::lseek(f.as_raw_fd(), 0, libc::SEEK_HOLE) };
    // SAFETY: as above.
    let data = unsafe { libc::lseek(f.as_raw_fd(), 0, libc::SEEK_DATA) };
    (hole, data)
}

fn fio_trim(v: &Value) -> (u64, u64) {
    let t = &v["jobs"][0]["trim"];
    (
        t["total_ios"].as_u64().unwrap(),
        t["io_bytes"].as_u64().unwrap(),
    )
}

#[test]
fn trim_punches_holes_in_a_file_on_every_engine() {
    let dir = tempfile::tempdir().unwrap();
    for engine in ["sync", "libaio", "uring", "posixaio"] {
        let f = dir.path().join(format!("t-{engine}"));
        let r = json_run(&format!(
            "io {} --size 1m --rw trim --bs 64k --io-size 512k --engine {engine} --iodepth 4",
            f.display()
        ));
        let trim = &r["total"]["trim"];
        assert_eq!(trim["ops"], 8, "{engine}: {r}");
        assert_eq!(trim["bytes"], 512 * 1024, "{engine}");
        assert_eq!(r["total"]["write"]["ops"], 0);
        assert_schema_valid(&r);
        // The first half is a hole now, the second still holds the data
        // ringlab laid out.
        assert_eq!(hole_and_data(&f), (0, 512 * 1024), "{engine}");
        let m = std::fs::metadata(&f).unwrap();
        assert_eq!(m.len(), 1 << 20, "KEEP_SIZE keeps the length");
        assert!(m.blocks() * 512 <= 600 * 1024, "{}", m.blocks());
    }
    // randtrim with fio's random map trims every block once.
    let f = dir.path().join("rand");
    let r = json_run(&format!(
        "io {} --size 256k --rw randtrim --bs 4k --io-size 256k --random-map",
        f.display()
    ));
    assert_eq!(r["total"]["trim"]["ops"], 64);
    assert_eq!(hole_and_data(&f).0, 0);
    assert!(std::fs::metadata(&f).unwrap().blocks() <= 8);
}

#[test]
fn trimwrite_trims_then_writes_each_block() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("tw");
    let r = json_run(&format!(
        "io {} --size 256k --rw randtrimwrite --bs 4k --io-size 256k --random-map",
        f.display()
    ));
    // io_size counts the writes, as fio: 64 writes and the 64 trims before
    // them; every block holds data again.
    assert_eq!(r["total"]["trim"]["ops"], 64, "{r}");
    assert_eq!(r["total"]["write"]["ops"], 64);
    assert_eq!(hole_and_data(&f), (256 * 1024, 0));
}

#[test]
fn fio_trims_of_a_regular_file_fail_the_job_as_fio_3_33() {
    // fio 3.33's BLKDISCARD on a file: ENOTTY at the first trim, the job
    // ends with error 25 and fio exits 1 (tests/fio_errors.rs has more).
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let out = ringlab(&format!(
        "fio --name=t --filename={} --size=1m --rw=randtrim --output-format=json",
        f.display()
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs"][0]["error"], 25, "{v}");
    assert_eq!(fio_trim(&v), (1, 0), "one trim issued, none done");
}

/// A loop device over a file in /dev/shm, its backing file filled with
/// data; None (and a skip) where it cannot be made.
fn loop_with_data(name: &str, dir: &Path) -> Option<(Loop, std::path::PathBuf)> {
    if !is_root() {
        skip_root_only(name, "loop devices need root");
        return None;
    }
    let img = dir.join("img");
    std::fs::write(&img, vec![0x5a; 2 << 20]).unwrap();
    match Loop::over(&img) {
        Ok(l) => Some((l, img)),
        Err(e) => {
            skip(name, &format!("no loop device: {e}"));
            None
        }
    }
}

#[test]
fn fio_trims_a_loop_device_with_discard_on_each_engine() {
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let Some((dev, img)) = loop_with_data("fio_trims_a_loop_device", shm.path()) else {
        return;
    };
    for engine in ["psync", "libaio", "io_uring"] {
        std::fs::write(&img, vec![0x5a; 2 << 20]).unwrap();
        let v = ok_json(&format!(
            "fio --name=t --filename={} --size=1m --rw=trim --bs=64k --ioengine={engine} --iodepth=4 --output-format=json",
            dev.dev
        ));
        assert_eq!(fio_trim(&v), (16, 1 << 20), "{engine}: {v}");
        assert_eq!(v["jobs"][0]["write"]["total_ios"], 0);
        assert_eq!(v["jobs"][0]["error"], 0);
        // The loop driver punches the discarded range out of its file.
        assert_eq!(hole_and_data(&img), (0, 1 << 20), "{engine}");
    }
    // trimwrite: fio's counts, size bytes of each.
    let v = ok_json(&format!(
        "fio --name=t --filename={} --size=1m --rw=randtrimwrite --bs=4k --output-format=json",
        dev.dev
    ));
    assert_eq!(fio_trim(&v), (256, 1 << 20));
    assert_eq!(v["jobs"][0]["write"]["total_ios"], 256);
    // fio's normal output has its trim line.
    let out = ringlab(&format!(
        "fio --name=t --filename={} --size=256k --rw=randtrim --bs=4k",
        dev.dev
    ));
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("  trim: IOPS="), "{text}");
}

#[test]
fn refuses_a_device_that_cannot_discard() {
    let name = "refuses_a_device_that_cannot_discard";
    if !is_root() {
        skip_root_only(name, "mounting ramfs and loop devices need root");
        return;
    }
    // A loop device over a file on ramfs, which has no fallocate: the loop
    // driver offers no discard (discard_max_bytes 0). Nothing is changed in
    // sysfs (a lowered limit would outlive the test on that loop device).
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().to_str().unwrap().to_string();
    if let Err(e) = sh("mount", &["-t", "ramfs", "none", &mnt]) {
        skip(name, &format!("no ramfs: {e}"));
        return;
    }
    struct Unmount(String);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = sh("umount", &[&self.0]);
        }
    }
    let _unmount = Unmount(mnt);
    let img = dir.path().join("img");
    std::fs::write(&img, vec![0x5a; 2 << 20]).unwrap();
    let dev = match Loop::over(&img) {
        Ok(l) => l,
        Err(e) => {
            skip(name, &format!("no loop device: {e}"));
            return;
        }
    };
    let knob = format!(
        "/sys/block/{}/queue/discard_max_bytes",
        dev.dev.trim_start_matches("/dev/")
    );
    if std::fs::read_to_string(&knob).unwrap_or_default().trim() != "0" {
        skip(name, "this kernel's loop driver offers discard over ramfs");
        return;
    }
    let out = ringlab(&format!(
        "fio --name=t --filename={} --size=1m --rw=randtrim",
        dev.dev
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot discard") && err.contains("discard_max_bytes is 0"),
        "{err}"
    );
}

#[test]
fn refuses_a_file_system_without_punch_hole() {
    let name = "refuses_a_file_system_without_punch_hole";
    if !is_root() {
        skip_root_only(name, "mounting ramfs needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    if let Err(e) = sh(
        "mount",
        &["-t", "ramfs", "none", dir.path().to_str().unwrap()],
    ) {
        skip(name, &format!("no ramfs: {e}"));
        return;
    }
    // An existing file (ramfs counts no free space to lay one out in).
    let f = dir.path().join("f");
    let written = std::fs::write(&f, vec![1u8; 256 * 1024]);
    let out = ringlab(&format!(
        "io {} --size 256k --rw randtrim --allow-destructive",
        f.display()
    ));
    let _ = sh("umount", &[dir.path().to_str().unwrap()]);
    written.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot punch holes"), "{err}");
}

#[test]
fn fallocate_lays_out_no_data_for_a_job_that_only_writes() {
    let dir = tempfile::tempdir().unwrap();
    for (mode, allocated) in [("none", false), ("truncate", false), ("native", true)] {
        let f = dir.path().join(mode);
        let out = ringlab(&format!(
            "fio --name=w --filename={} --size=1m --io_size=64k --rw=write --fallocate={mode}",
            f.display()
        ));
        assert_ok(&out);
        let m = std::fs::metadata(&f).unwrap();
        assert_eq!(m.len(), 1 << 20, "{mode}");
        let bytes = m.blocks() * 512;
        if allocated {
            assert!(bytes >= 1 << 20, "{mode}: {bytes}");
        } else {
            // Only the 64 KiB the job wrote hold blocks.
            assert!(bytes < 256 * 1024, "{mode}: {bytes}");
        }
    }
    // A job that reads gets its file written first, whatever fallocate=.
    let f = dir.path().join("r");
    assert_ok(&ringlab(&format!(
        "fio --name=r --filename={} --size=256k --rw=read --fallocate=none",
        f.display()
    )));
    assert!(std::fs::metadata(&f).unwrap().blocks() * 512 >= 256 * 1024);
    let out = ringlab("fio --name=x --size=1m --fallocate=sometimes --parse-only");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("none, posix, keep, native, truncate"));
}

#[test]
fn create_on_open_writes_no_layout_and_reads_fail_past_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("c");
    assert_ok(&ringlab(&format!(
        "fio --name=c --filename={} --size=1m --io_size=64k --rw=randwrite --create_on_open=1",
        f.display()
    )));
    assert!(std::fs::metadata(&f).unwrap().blocks() * 512 < 256 * 1024);
    // A job that reads: the empty file's first read fails the job with
    // EIO, as fio 3.33's "full resid" (tests/fio_errors.rs has more).
    let out = ringlab(&format!(
        "fio --name=c --filename={} --size=1m --rw=randread --create_on_open=1 --output-format=json",
        dir.path().join("d").display()
    ));
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs"][0]["error"], 5, "{v}");
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 1);
}

#[test]
fn falloc_engine_allocates_and_punches_holes_as_fio() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("fa");
    // Writes allocate (no data written), trims punch the blocks out again.
    let v = ok_json(&format!(
        "fio --name=w --filename={} --size=256k --rw=write --bs=64k --ioengine=falloc --fallocate=none --output-format=json",
        f.display()
    ));
    assert_eq!(v["jobs"][0]["write"]["total_ios"], 4, "{v}");
    assert!(std::fs::metadata(&f).unwrap().blocks() * 512 >= 256 * 1024);
    let v = ok_json(&format!(
        "fio --name=t --filename={} --size=256k --rw=randtrim --bs=4k --ioengine=falloc --output-format=json",
        f.display()
    ));
    assert_eq!(fio_trim(&v), (64, 256 * 1024), "{v}");
    assert_eq!(hole_and_data(&f).0, 0);
    assert!(std::fs::metadata(&f).unwrap().blocks() <= 8);
}

/// A job without size on a block device moves the whole device once, as
/// fio (ssd-steadystate.fio names a device and gives no size): its size is
/// read from sysfs, where before the job was refused as if the device did
/// not exist.
#[test]
fn a_device_without_size_is_moved_whole_once() {
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let Some((dev, _img)) = loop_with_data("a_device_without_size_is_moved_whole_once", shm.path())
    else {
        return;
    };
    let v = ok_json(&format!(
        "fio --name=t --filename={} --rw=write --bs=64k --direct=1 --output-format=json",
        dev.dev
    ));
    let w = &v["jobs"][0]["write"];
    assert_eq!(w["io_bytes"], 2 << 20, "{v}");
    assert_eq!(w["total_ios"], 32, "{v}");
}

/// fio logs trims as direction 2 in its latency, bandwidth and IOPS logs
/// (fio 3.33: a randtrim job on the falloc engine writes 64 lines of
/// direction 2 to each; its slat log stays empty, the engine being
/// synchronous). ringlab wrote no line for a trim.
#[test]
fn trims_are_logged_as_direction_2() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("tl");
    std::fs::File::create(&f)
        .unwrap()
        .set_len(256 * 1024)
        .unwrap();
    let out = fio(
        dir.path(),
        &[
            "--name=t",
            "--filename=tl",
            "--size=256k",
            "--rw=randtrim",
            "--bs=4k",
            "--ioengine=falloc",
            "--write_lat_log=t",
            "--log_offset=1",
            "--write_iops_log=t",
            "--write_bw_log=t",
        ],
    );
    assert_ok(&out);
    let ios = lat_log_ios(&dir.path().join("t_lat.1.log"));
    assert_eq!(ios.len(), 64, "{ios:?}");
    assert!(
        ios.iter().all(|&(d, bs, _)| d == 2 && bs == 4096),
        "{ios:?}"
    );
    // The random map: each block punched once.
    let mut offs: Vec<u64> = ios.iter().map(|&(_, _, o)| o).collect();
    offs.sort_unstable();
    assert_eq!(offs, (0..64).map(|b| b * 4096).collect::<Vec<_>>());
    assert_eq!(lat_log_ios(&dir.path().join("t_clat.1.log")), ios);
    let slat = std::fs::read_to_string(dir.path().join("t_slat.1.log")).unwrap();
    assert!(slat.is_empty(), "{slat}");
    for kind in ["iops", "bw"] {
        let log = lat_log_ios(&dir.path().join(format!("t_{kind}.1.log")));
        assert_eq!(log, ios, "{kind}");
    }
}

/// fio's averaged logs (log_avg_msec): a window's line has block size 0,
/// no offset column without log_offset, and priority 0
/// (`500, 1904, 2, 0, 0`); the bandwidth and IOPS logs get whole windows
/// only, while the latency log's last line closes the run (fio 3.33, a
/// 1.2 s run with 500 ms windows: latency at 500, 1000 and 1200 ms,
/// IOPS at 500 and 1000).
#[test]
fn averaged_logs_have_fios_columns_and_whole_rate_windows() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("al");
    std::fs::File::create(&f).unwrap().set_len(1 << 20).unwrap();
    let out = fio(
        dir.path(),
        &[
            "--name=a",
            "--filename=al",
            "--size=1m",
            "--rw=randtrim",
            "--bs=4k",
            "--ioengine=falloc",
            "--time_based",
            "--runtime=700ms",
            "--log_avg_msec=250",
            "--write_lat_log=a",
            "--write_iops_log=a",
        ],
    );
    assert_ok(&out);
    let lat = log_rows(&dir.path().join("a_lat.1.log"));
    let iops = log_rows(&dir.path().join("a_iops.1.log"));
    for l in lat.iter().chain(&iops) {
        assert_eq!(l.len(), 5, "{l:?}");
        assert_eq!(&l[2..], [2, 0, 0], "{l:?}");
    }
    let times = |v: &[Vec<u64>]| v.iter().map(|l| l[0]).collect::<Vec<_>>();
    assert_eq!(times(&iops), [250, 500], "{iops:?}");
    let t = times(&lat);
    assert_eq!(t.len(), 3, "{lat:?}");
    assert_eq!(t[..2], [250, 500]);
    assert!(t[2] > 500 && t[2] <= 750, "{lat:?}");
}
