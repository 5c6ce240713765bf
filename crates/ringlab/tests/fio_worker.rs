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

/// The most I/Os one paced job can start in the time it measured: one due
/// every 1/rate seconds from the start.
fn paced_bound(r: &serde_json::Value, rate: f64) -> u64 {
    let secs = r["total"]["elapsed_ns"].as_u64().unwrap() as f64 / 1e9;
    (secs * rate).floor() as u64 + 1
}

#[test]
fn rate_iops_paces_each_job_and_ramp_time_is_not_counted() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = small_target(&dir);
    // 200 I/Os per second for 1 s: each I/O has a due time 5 ms after the
    // last, so no more than elapsed x 200 + 1 can leave, however fast the
    // target; a late I/O leaves at once (its lateness is in its latency),
    // so on a machine that is not starved it is close to 200. Only the
    // bound is asserted: a loaded machine may run fewer.
    let r = json_run(&format!(
        "io {f} --rw randread --rate-iops 200 --runtime 1s --engine sync --no-kstat"
    ));
    let ops = r["total"]["ops"].as_u64().unwrap();
    assert!(
        ops >= 1 && ops <= paced_bound(&r, 200.0),
        "{ops} I/Os at 200/s: {}",
        r["total"]
    );
    eprintln!("rate-iops 200 for 1 s: {ops} I/Os");
    assert_eq!(r["config"]["rate-iops"], serde_json::json!([200.0, 200.0]));
    // 300 ms of ramp at the same pace, then 500 ms measured: only I/Os due
    // after the ramp are measured (160 if the ramp were counted).
    let r = json_run(&format!(
        "io {f} --rw randread --rate-iops 200 --ramp-time 300ms --runtime 500ms --engine uring --iodepth 4 --no-kstat"
    ));
    let ops = r["total"]["ops"].as_u64().unwrap();
    assert!(
        ops >= 1 && ops <= paced_bound(&r, 200.0),
        "{ops} I/Os measured after the ramp"
    );
    assert!(ops < 140, "{ops}: the ramp was measured");
    eprintln!("rate-iops 200, ramp 300 ms, runtime 500 ms: {ops} I/Os");
    assert_eq!(r["config"]["ramp-time"], 0.3);
    // A ramp long enough that its latencies leave the job's run buffer
    // (256 runs) for the histograms before it ends: they are dropped too
    // (about 1200 if they were kept).
    let r = json_run(&format!(
        "io {f} --rw randread --rate-iops 2000 --ramp-time 300ms --runtime 300ms --engine uring --iodepth 1 --no-kstat"
    ));
    let ops = r["total"]["ops"].as_u64().unwrap();
    assert!(
        ops >= 1 && ops <= paced_bound(&r, 2000.0),
        "{ops} I/Os measured after a 600-I/O ramp"
    );
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
    assert!(
        ops >= 1 && ops <= paced_bound(&r, 100.0),
        "{ops} I/Os at 400 KiB/s"
    );
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
        // As fio: a sync before the I/O after every 4th write, none
        // after the last (fio's end_fsync).
        assert_eq!(r["total"]["syncs"], 3, "{engine}");
        assert_schema_valid(&r);
    }
    let r = json_run(&format!(
        "io {f} --rw randwrite --direct --number-ios 12 --fdatasync 3 --engine libaio --iodepth 2 --no-kstat"
    ));
    assert_eq!(r["total"]["syncs"], 3);
    assert_eq!(r["config"]["fdatasync"], 3);
    // No sync asked: no key.
    let r = json_run(&format!("io {f} --rw randwrite --number-ios 4 --no-kstat"));
    assert!(r["total"].get("syncs").is_none());
    let out = ringlab(&format!(
        "io {f} --rw randwrite --number-ios 8 --fsync 4 --no-kstat"
    ));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("sync : 1 fsync/fdatasync calls"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
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

#[test]
fn status_interval_series_in_the_result_and_fio_json_spread() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = small_target(&dir);
    let r = json_run(&format!(
        "io {f} --rw randrw --runtime 600ms --status-interval 100ms --engine sync --no-kstat"
    ));
    assert_schema_valid(&r);
    assert_eq!(r["config"]["status-interval"], 0.1);
    let iv = r["intervals"].as_array().unwrap();
    assert!(!iv.is_empty());
    // Every completion is in exactly one interval.
    let sum = |k: &str| iv.iter().map(|i| i[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("ops"), r["total"]["ops"].as_u64().unwrap());
    assert_eq!(sum("read_ops"), r["total"]["read"]["ops"].as_u64().unwrap());
    assert_eq!(
        sum("write_bytes"),
        r["total"]["write"]["bytes"].as_u64().unwrap()
    );
    for (n, i) in iv.iter().enumerate() {
        assert_eq!(i["start_ns"], n as u64 * 100_000_000);
        if i["ops"].as_u64().unwrap() > 0 {
            assert!(i["lat_p99_ns"].as_u64().unwrap() > 0);
        }
    }
    // Without it, no key.
    let r = json_run(&format!("io {f} --rw read --number-ios 4 --no-kstat"));
    assert!(r.get("intervals").is_none());
    // fio-json: the spread of the full intervals, not one sample.
    let out = ringlab(&format!(
        "io {f} --rw randread --runtime 500ms --status-interval 100ms --engine sync --no-kstat --output-format fio-json"
    ));
    assert_ok(&out);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let read = &doc["jobs"][0]["read"];
    let n = read["iops_samples"].as_u64().unwrap();
    assert!(n >= 2, "{read}");
    assert!(read["iops_stddev"].as_f64().unwrap() >= 0.0);
    assert!(read["iops_min"].as_u64().unwrap() <= read["iops_max"].as_u64().unwrap());
    assert_eq!(read["bw_samples"].as_u64().unwrap(), n);
    // One line per interval on stderr as the run goes.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines()
            .any(|l| l.starts_with("[0.1s]") && l.contains("IOPS")),
        "{err}"
    );
}

#[test]
fn a_fio_job_file_with_the_worker_options_runs() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path().display();
    let job = dir.path().join("worker.fio");
    std::fs::write(
        &job,
        format!(
            "; fio's options that need the worker loop\n\
             [global]\n\
             filename={d}/w.dat\n\
             size=1m\n\
             bs=4k\n\
             ioengine=psync\n\
             invalidate=0\n\
             \n\
             [paced-read]\n\
             rw=randread\n\
             rate_iops=100\n\
             ramp_time=100ms\n\
             runtime=300ms\n\
             time_based\n\
             \n\
             [synced-write]\n\
             stonewall\n\
             rw=randwrite\n\
             number_ios=8\n\
             loops=2\n\
             fsync=4\n"
        ),
    )
    .unwrap();
    let doc = fio_json_of(&job);
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    let paced = jobs[0]["read"]["total_ios"].as_u64().unwrap();
    assert!(
        (1..=31).contains(&paced),
        "{paced} reads at 100/s for 300 ms"
    );
    assert_eq!(jobs[1]["write"]["total_ios"], 16);
    assert_eq!(jobs[1]["sync"]["total_ios"], 3);
    assert_eq!(
        doc["ringlab"][1]["config"]["invalidate"], false,
        "{}",
        doc["ringlab"]
    );
}

/// Runs a job file and returns its fio-json output (the run must succeed).
fn fio_json_of(job: &Path) -> serde_json::Value {
    ok_json(&format!(
        "io --fio {} --output-format fio-json --no-kstat",
        job.display()
    ))
}

/// The lines of a fio log: (time_ms, value, direction, bs, offset).
fn log_lines(path: &Path) -> Vec<[u64; 5]> {
    log_rows(path)
        .into_iter()
        .map(|f| {
            assert_eq!(f.len(), 6, "{f:?}");
            assert_eq!(f[5], 0, "{f:?}");
            [f[0], f[1], f[2], f[3], f[4]]
        })
        .collect()
}

#[test]
fn fio_logs_are_written_as_fio_names_and_formats_them() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = small_target(&dir);
    let p = dir.path().join("run").display().to_string();
    let r = json_run(&format!(
        "io {f} --rw randrw --number-ios 200 --numjobs 2 --engine sync --no-kstat --write-lat-log {p} --write-bw-log {p} --write-iops-log {p}"
    ));
    // Every I/O of each job in its latency log, with its offset.
    let mut all = 0;
    for job in 1..=2 {
        let lat = log_lines(&dir.path().join(format!("run_lat.{job}.log")));
        assert_eq!(lat.len(), 200);
        all += lat.len() as u64;
        for [t, v, d, bs, off] in &lat {
            assert!(*v > 0 && *d <= 1 && *bs == 4096 && off % 4096 == 0 && *off < 4 << 20);
            let _ = t;
        }
        assert!(
            lat.windows(2).all(|w| w[0][0] <= w[1][0]),
            "time goes forward"
        );
        let bw = log_lines(&dir.path().join(format!("run_bw.{job}.log")));
        let iops = log_lines(&dir.path().join(format!("run_iops.{job}.log")));
        assert!(!bw.is_empty() && bw.len() == iops.len());
        assert!(iops.iter().all(|l| l[1] > 0 && l[2] <= 1));
    }
    assert_eq!(all, r["total"]["ops"].as_u64().unwrap());
    // fio's _clat and _slat logs beside _lat: the sync engine has no
    // separate submission, so clat is the whole latency and _slat is empty.
    let lat = log_lines(&dir.path().join("run_lat.1.log"));
    assert_eq!(log_lines(&dir.path().join("run_clat.1.log")), lat);
    assert!(log_lines(&dir.path().join("run_slat.1.log")).is_empty());
    // An async engine: the three logs line up, I/O by I/O, and
    // lat = slat + clat on every line.
    let u = dir.path().join("ring").display().to_string();
    json_run(&format!(
        "io {f} --rw randread --engine uring --iodepth 4 --number-ios 100 --no-kstat --write-lat-log {u}"
    ));
    let read = |k: &str| log_lines(&dir.path().join(format!("ring_{k}.1.log")));
    let (lat, clat, slat) = (read("lat"), read("clat"), read("slat"));
    assert_eq!(lat.len(), 100);
    assert_eq!((clat.len(), slat.len()), (100, 100));
    for ((l, c), s) in lat.iter().zip(&clat).zip(&slat) {
        assert_eq!(l[1], s[1] + c[1], "lat {l:?} = slat {s:?} + clat {c:?}");
        assert!(c[1] > 0);
        for k in [0, 2, 3, 4] {
            assert!(l[k] == c[k] && l[k] == s[k], "{l:?} {c:?} {s:?}");
        }
    }
    // Averaged: one line per direction per window.
    let q = dir.path().join("avg").display().to_string();
    let r = json_run(&format!(
        "io {f} --rw randread --runtime 300ms --engine sync --no-kstat --write-lat-log {q} --log-avg-msec 100"
    ));
    let lat = log_lines(&dir.path().join("avg_lat.1.log"));
    let windows = r["total"]["elapsed_ns"].as_u64().unwrap() / 100_000_000 + 1;
    assert!(!lat.is_empty() && lat.len() as u64 <= windows, "{lat:?}");
    assert_eq!(log_lines(&dir.path().join("avg_clat.1.log")), lat);
    assert!(lat.iter().all(|l| l[2] == 0 && l[4] == 0));
    // Full windows end on multiples of 100 ms.
    assert!(
        lat[..lat.len() - 1].iter().all(|l| l[0] % 100 == 0),
        "{lat:?}"
    );
    // A prefix in a directory that does not exist: refused before the run.
    let out = ringlab(&format!(
        "io {f} --rw read --number-ios 1 --write-lat-log /nonexistent/x"
    ));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot create a file in"));
}

#[test]
fn offset_moves_the_region_and_lays_out_offset_plus_size() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("off.dat");
    let f = file.display();
    let p = dir.path().join("o").display().to_string();
    // A new named file: laid out at offset + size.
    let r = json_run(&format!(
        "io {f} --size 1m --offset 2m --rw randwrite --number-ios 300 --engine sync --no-kstat --write-lat-log {p}"
    ));
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 3 << 20);
    assert_eq!(r["config"]["offset"], 2 << 20);
    assert_eq!(r["target"]["region_bytes"], 1 << 20);
    // Every I/O (its offset in the log) within [2m, 3m).
    let lat = log_lines(&dir.path().join("o_lat.1.log"));
    assert_eq!(lat.len(), 300);
    assert!(
        lat.iter().all(|l| (2 << 20..3 << 20).contains(&l[4])),
        "{lat:?}"
    );
    // Sequential reads start at the offset.
    json_run(&format!(
        "io {f} --offset 2m --rw read --number-ios 3 --engine sync --no-kstat --write-lat-log {p}"
    ));
    let lat = log_lines(&dir.path().join("o_lat.1.log"));
    let offs: Vec<u64> = lat.iter().map(|l| l[4]).collect();
    assert_eq!(offs, [2 << 20, (2 << 20) + 4096, (2 << 20) + 8192]);
    let out = ringlab(&format!("io {f} --offset 3m --rw read"));
    assert_fails(&out, 2, &["--offset", "past the end"]);
    let out = ringlab(&format!("io {f} --offset 1000 --rw read"));
    assert_fails(&out, 2, &["--offset", "multiple of --bs"]);
}

#[test]
fn bssplit_sizes_bytes_and_fio_json_end_to_end() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = small_target(&dir);
    let p = dir.path().join("split").display().to_string();
    let r = json_run(&format!(
        "io {f} --rw randrw --bssplit 4k/50:8k/30:64k/20 --number-ios 2000 --iodepth 8 --no-kstat --write-lat-log {p}"
    ));
    assert_schema_valid(&r);
    assert_eq!(r["config"]["bs"], 4096);
    assert_eq!(r["config"]["bssplit"], "4k/50:8k/30:64k/20");
    // Every I/O in the log with its own length: their sum is the bytes
    // counted, each is one of the split's sizes, at a 4k-aligned offset,
    // inside the 4 MiB target.
    let lat = log_lines(&dir.path().join("split_lat.1.log"));
    assert_eq!(lat.len(), 2000);
    let mut n = std::collections::BTreeMap::new();
    let mut sum = 0;
    for [_, _, _, bs, off] in &lat {
        *n.entry(*bs).or_insert(0u32) += 1;
        sum += bs;
        assert!(off % 4096 == 0 && off + bs <= 4 << 20, "{bs} at {off}");
    }
    assert_eq!(sum, r["total"]["bytes"].as_u64().unwrap());
    assert_eq!(n.keys().copied().collect::<Vec<_>>(), [4096, 8192, 65536]);
    // 50/30/20 of 2000 within 5 sigma (about 110).
    for (size, want) in [(4096u64, 1000i64), (8192, 600), (65536, 400)] {
        let got = n[&size] as i64;
        assert!(
            (got - want).abs() < 115,
            "{size}: {got} of 2000, want {want}"
        );
    }
    // The same seed, the same sizes; R,W apart: reads 4k, writes 64k.
    let r = json_run(&format!(
        "io {f} --rw randrw --bssplit 4k,64k --number-ios 300 --no-kstat"
    ));
    let (rd, wr) = (&r["total"]["read"], &r["total"]["write"]);
    assert_eq!(
        rd["bytes"].as_u64().unwrap(),
        rd["ops"].as_u64().unwrap() * 4096
    );
    assert_eq!(
        wr["bytes"].as_u64().unwrap(),
        wr["ops"].as_u64().unwrap() * 65536
    );
    // bsrange: sizes 4k to 16k, in the text head and fio-json's job options.
    let out = ringlab(&format!(
        "io {f} --rw randread --bsrange 4k-16k --number-ios 100 --no-kstat"
    ));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("randread bsrange 4k-16k"), "{text}");
    let out = ringlab(&format!(
        "io {f} --rw randread --bsrange 4k-16k --number-ios 100 --no-kstat --output-format fio-json"
    ));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let opts = &doc["jobs"][0]["job options"];
    assert_eq!(opts["bs"], "4k-16k");
    assert_eq!(opts["bsrange"], "4k-16k");
    let io_bytes = doc["jobs"][0]["read"]["io_bytes"].as_u64().unwrap();
    assert!((100 * 4096..=100 * 16384).contains(&io_bytes) && io_bytes.is_multiple_of(4096));
    // What cannot work is refused with the reason.
    let out = ringlab(&format!(
        "io {f} --rw randwrite --bssplit 4k/50:64k/50 --verify"
    ));
    assert_fails(&out, 2, &["--verify", "one size"]);
    let out = ringlab(&format!("io {f} --bssplit 4k/50:6k/50"));
    assert_fails(&out, 2, &["--bssplit", "multiple of the smallest"]);
    let out = ringlab(&format!("io {f} --bssplit 4k/50:8k/20"));
    assert_fails(&out, 2, &["--bssplit", "come to 70"]);
    let out = ringlab("io --rw nop --bssplit 4k/50:64k/50 --runtime 100ms");
    assert_fails(&out, 2, &["--bssplit", "nop"]);
    let out = ringlab(&format!("io {f} --bsrange 4k-8m"));
    assert_fails(&out, 2, &["smaller than one block"]);
}

#[test]
fn slat_and_clat_are_measured_apart_on_async_engines() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = small_target(&dir);
    for engine in [
        "uring",
        "uring --submit-batch 1",
        "uring --completion-thread 0",
        "uring --reap peek",
        "uring --sqpoll",
        "libaio --direct",
        "posixaio",
        "sync",
    ] {
        let out = ringlab(&format!(
            "io {f} --rw randread --number-ios 500 --iodepth 4 --engine {engine} --no-kstat --output-format fio-json"
        ));
        assert!(
            out.status.success(),
            "{engine}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let d = &doc["jobs"][0]["read"];
        let mean = |k: &str| d[k]["mean"].as_f64().unwrap();
        assert_eq!(d["clat_ns"]["N"], 500, "{engine}");
        if engine == "sync" {
            // As fio's psync: no slat, clat is the whole latency.
            assert_eq!(d["slat_ns"]["N"], 0, "{engine}");
            assert_eq!(mean("clat_ns"), mean("lat_ns"), "{engine}");
            assert_eq!(d["clat_ns"]["max"], d["lat_ns"]["max"], "{engine}");
        } else {
            assert_eq!(d["slat_ns"]["N"], 500, "{engine}");
            // lat = slat + clat for every I/O, so the means add up.
            let sum = mean("slat_ns") + mean("clat_ns");
            assert!(
                (mean("lat_ns") - sum).abs() <= 1e-6 * mean("lat_ns"),
                "{engine}: lat {} slat+clat {sum}",
                mean("lat_ns")
            );
            assert!(d["clat_ns"]["max"].as_u64() <= d["lat_ns"]["max"].as_u64());
        }
    }
    // The result JSON has them too, and the text prints them.
    let r = json_run(&format!(
        "io {f} --rw randread --number-ios 50 --iodepth 2 --no-kstat"
    ));
    assert_schema_valid(&r);
    assert!(r["total"]["read"]["slat_ns"]["mean"].is_f64());
    assert!(r["total"]["read"]["clat_ns"]["mean"].is_f64());
    let out = ringlab(&format!(
        "io {f} --rw randread --number-ios 50 --iodepth 2 --no-kstat"
    ));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("   slat: ") && text.contains("   clat: "),
        "{text}"
    );
}

#[test]
fn end_fsync_and_include_in_a_job_file_with_bssplit() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path().display();
    std::fs::create_dir(dir.path().join("inc")).unwrap();
    std::fs::write(
        dir.path().join("inc/common.fio"),
        format!("filename={d}/split.dat\nsize=2m\nioengine=psync\n"),
    )
    .unwrap();
    let job = dir.path().join("split.fio");
    std::fs::write(
        &job,
        "; bssplit, end_fsync and include, as fio writes them\n\
         [global]\n\
         include inc/common.fio\n\
         bssplit=4k/50:16k/50\n\
         \n\
         [split-write]\n\
         rw=randwrite\n\
         number_ios=64\n\
         end_fsync=1\n",
    )
    .unwrap();
    let doc = fio_json_of(&job);
    let j = &doc["jobs"][0];
    assert_eq!(j["write"]["total_ios"], 64);
    // As fio, fio-json's sync counts no end_fsync; ringlab's result does.
    assert_eq!(j["sync"]["total_ios"], 0);
    let out = ringlab(&format!(
        "io --fio {} --output-format json --no-kstat",
        job.display()
    ));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["total"]["syncs"], 1, "one end fsync");
    let bytes = j["write"]["io_bytes"].as_u64().unwrap();
    assert!((64 * 4096..=64 * 16384).contains(&bytes), "{bytes}");
    assert_eq!(doc["global options"]["bssplit"], "4k/50:16k/50");
    // end_fsync on a command line, and its refusal without writes.
    let f = format!("{d}/split.dat");
    let r = json_run(&format!(
        "io {f} --rw randwrite --number-ios 8 --end-fsync --no-kstat"
    ));
    assert_eq!(r["total"]["syncs"], 1);
    assert_eq!(r["config"]["end-fsync"], true);
    assert_schema_valid(&r);
    let out = ringlab(&format!("io {f} --rw randread --end-fsync"));
    assert_fails(&out, 2, &["--end-fsync", "issues none"]);
}

#[test]
fn thinktime_pauses_after_every_n_ios_outside_latency() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = small_target(&dir);
    // 30 I/Os, a 30 ms pause after every 10: 2 pauses between them (none
    // after the last, nothing follows), so at least 60 ms of run time;
    // no I/O's latency holds a pause (a page-cache read takes microseconds).
    for engine in ["sync", "uring --iodepth 4"] {
        let r = json_run(&format!(
            "io {f} --rw randread --number-ios 30 --thinktime 30ms --thinktime-blocks 10 --engine {engine} --no-kstat"
        ));
        assert_schema_valid(&r);
        assert_eq!(r["total"]["ops"], 30, "{engine}");
        assert!(
            r["total"]["elapsed_ns"].as_u64().unwrap() >= 60_000_000,
            "{engine}"
        );
        assert_eq!(r["config"]["thinktime-us"], 30000.0);
        assert_eq!(r["config"]["thinktime-blocks"], 10);
        assert!(
            r["total"]["lat_ns"]["max"].as_u64().unwrap() < 30_000_000,
            "{engine}: a pause counted in a latency: {}",
            r["total"]["lat_ns"]
        );
    }
    // fio's spelling: a bare number is microseconds.
    let r = json_run(&format!(
        "io {f} --rw randread --number-ios 4 --thinktime=100 --thinktime_spin=50 --no-kstat"
    ));
    assert_eq!(r["config"]["thinktime-us"], 100.0);
    assert_eq!(r["config"]["thinktime-spin-us"], 50.0);
    let out = ringlab(&format!("io {f} --thinktime 1ms --thinktime-spin 2ms"));
    assert_fails(&out, 2, &["--thinktime-spin", "longer"]);
    let out = ringlab(&format!("io {f} --thinktime-blocks 4"));
    assert_fails(&out, 2, &["--thinktime TIME"]);
}

#[test]
fn gtod_reduce_counts_every_io_and_times_none() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = small_target(&dir);
    for engine in ["uring", "sync", "libaio"] {
        let direct = if engine == "libaio" { "--direct" } else { "" };
        let r = json_run(&format!(
            "io {f} --rw randrw --engine {engine} {direct} --iodepth 4 --number-ios 300 --gtod-reduce --no-kstat"
        ));
        assert_schema_valid(&r);
        assert_eq!(r["config"]["gtod-reduce"], true, "{engine}");
        let t = &r["total"];
        assert_eq!(t["ops"], 300, "{engine}: every I/O counted");
        assert!(t["iops"].as_f64().unwrap() > 0.0, "{engine}");
        assert_eq!(
            t["bytes"].as_u64().unwrap(),
            t["read"]["bytes"].as_u64().unwrap() + t["write"]["bytes"].as_u64().unwrap()
        );
        // No latency at all: null, never a made-up zero.
        assert!(t["lat_ns"].is_null(), "{engine}: {t}");
        for d in ["read", "write"] {
            assert!(t[d]["ops"].as_u64().unwrap() > 0, "{engine} {d}");
            assert!(t[d]["lat_ns"].is_null(), "{engine} {d}");
            assert!(t[d].get("slat_ns").is_none() && t[d].get("clat_ns").is_none());
        }
    }
    // Timed, the same run has latencies (the flag is what removes them).
    let r = json_run(&format!("io {f} --rw randread --number-ios 50 --no-kstat"));
    assert!(r["total"]["lat_ns"]["max"].as_u64().unwrap() > 0);
    assert!(r["config"].get("gtod-reduce").is_none());
    // Intervals still count every I/O, on the coarse clock.
    let r = json_run(&format!(
        "io {f} --rw randread --engine sync --runtime 400ms --status-interval 100ms --gtod-reduce --no-kstat"
    ));
    let iv = r["intervals"].as_array().unwrap();
    assert!(iv.len() >= 2, "{iv:?}");
    let sum: u64 = iv.iter().map(|i| i["ops"].as_u64().unwrap()).sum();
    assert_eq!(sum, r["total"]["ops"].as_u64().unwrap());
    assert!(iv.iter().all(|i| i["lat_p99_ns"].is_null()));
    // The runtime still ends the run, though the clock is read rarely.
    let ms = r["total"]["elapsed_ns"].as_u64().unwrap() / 1_000_000;
    assert!((350..2000).contains(&ms), "{ms} ms");
    // Text says why there is no latency line.
    let out = ringlab(&format!(
        "io {f} --rw randread --number-ios 20 --gtod-reduce --no-kstat"
    ));
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("gtod-reduce (no latency)"), "{text}");
    assert!(text.contains("lat: not measured"), "{text}");
    // fio's spelling, and fio's JSON: N = 0 where nothing was timed.
    let doc = ok_json(&format!(
        "io --filename={f} --rw=randread --bs=4k --size=1m --number_ios=40 --gtod_reduce=1 --name=g --output-format=fio-json --no-kstat"
    ));
    let read = &doc["jobs"][0]["read"];
    assert_eq!(read["total_ios"], 40, "{read}");
    for k in ["lat_ns", "clat_ns", "slat_ns"] {
        assert_eq!(read[k]["N"], 0, "{k}: {read}");
    }
    // fio's finer switches save nothing in ringlab: accepted, latency kept.
    let doc = ok_json(&format!(
        "io --filename={f} --rw=randread --bs=4k --size=1m --number_ios=40 --disable_lat=1 --disable_clat=1 --disable_slat=1 --disable_bw=1 --name=g --output-format=fio-json --no-kstat"
    ));
    assert_eq!(doc["jobs"][0]["read"]["lat_ns"]["N"], 40);
    // A latency log needs latencies.
    let out = ringlab(&format!(
        "io {f} --number-ios 4 --gtod-reduce --write-lat-log {}/l",
        dir.path().display()
    ));
    assert_fails(&out, 2, &["--write-lat-log", "--gtod-reduce"]);
}

#[test]
fn blockalign_is_taken_when_it_is_a_multiple_of_the_smallest_block_size() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = small_target(&dir);
    // fio's default, spelled out: runs, offsets stay multiples of 4 KiB.
    let p = dir.path().join("a").display().to_string();
    json_run(&format!(
        "io {f} --rw randread --bs 4k --blockalign 4k,4k --number-ios 50 --engine sync --no-kstat --write-lat-log {p}"
    ));
    let lat = log_lines(&dir.path().join("a_lat.1.log"));
    assert_eq!(lat.len(), 50);
    assert!(lat.iter().all(|l| l[4] % 4096 == 0));
    // With bsrange the smallest size is the alignment.
    json_run(&format!(
        "io {f} --rw randread --bsrange 4k-16k --blockalign 4k --number-ios 10 --no-kstat"
    ));
    // fio's spellings.
    let out = ringlab(&format!(
        "io --filename={f} --rw=randread --bs=4k --ba=4k --size=1m --number_ios=10 --name=b --no-kstat"
    ));
    assert_ok(&out);
    // Another alignment is refused, with the size ringlab uses.
    let out = ringlab(&format!(
        "io {f} --rw randread --bs 4k --blockalign 512 --number-ios 4"
    ));
    assert_fails(&out, 2, &["--blockalign 512", "4 KiB"]);
    // A multiple of the smallest size is fio's blockalign: every random
    // offset on it.
    let p = dir.path().join("c").display().to_string();
    json_run(&format!(
        "io {f} --rw randread --bs 4k --blockalign 8k --number-ios 50 --engine sync --no-kstat --write-lat-log {p}"
    ));
    let lat = log_lines(&dir.path().join("c_lat.1.log"));
    assert_eq!(lat.len(), 50);
    assert!(lat.iter().all(|l| l[4] % 8192 == 0));
}

#[test]
fn the_clock_that_timed_the_run_is_named_and_can_be_chosen() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = small_target(&dir);
    // The kernel's clocksource decides what auto comes to.
    let kernel_tsc =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .is_ok_and(|s| s.trim() == "tsc");
    let r = json_run(&format!("io {f} --rw randread --number-ios 50 --no-kstat"));
    assert_schema_valid(&r);
    let auto = r["config"]["clock"].as_str().unwrap().to_string();
    if kernel_tsc {
        // constant_tsc and nonstop_tsc are what a kernel on tsc needs too.
        assert_eq!(auto, "tsc");
    } else {
        assert_eq!(auto, "clock_gettime");
    }
    assert!(r["total"]["lat_ns"]["max"].as_u64().unwrap() > 0);
    let r = json_run(&format!(
        "io {f} --rw randread --number-ios 50 --no-kstat --clocksource clock_gettime"
    ));
    assert_eq!(r["config"]["clock"], "clock_gettime");
    assert!(r["total"]["lat_ns"]["max"].as_u64().unwrap() > 0);
    let out = ringlab(&format!(
        "io {f} --number-ios 10 --no-kstat --clocksource cpu"
    ));
    if auto == "tsc" {
        assert_ok(&out);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("timed by tsc"), "{text}");
        // The stage latencies meet the kernel's CLOCK_MONOTONIC stamps.
        let out = ringlab(&format!(
            "io {f} --number-ios 10 --clocksource cpu --evidence stages"
        ));
        assert_fails(&out, 2, &["--clocksource cpu", "--evidence stages"]);
    } else {
        assert_fails(&out, 2, &["--clocksource cpu", "clock_gettime"]);
    }
    // fio's option: its two clocks that ringlab has, gettimeofday refused.
    let doc = ok_json(&format!(
        "fio --filename={f} --rw=randread --size=64k --name=g --clocksource=clock_gettime --output-format=json"
    ));
    assert_eq!(doc["jobs"][0]["read"]["total_ios"], 16);
    let out = ringlab(&format!(
        "fio --filename={f} --size=64k --name=g --clocksource=gettimeofday"
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("ringlab fio: --clocksource=gettimeofday:")
            && err.contains("clock_gettime"),
        "{err}"
    );
}

/// fio takes at most iodepth_batch_complete_max completions per reap, and
/// unset that is iodepth_batch_complete_min (1): it reaps one, refills,
/// reaps the next. Cached reads complete inside the submission, so a reap
/// that takes every ready completion takes several at once.
#[test]
fn reaps_take_at_most_complete_max_and_fio_jobs_one() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = small_target(&dir);
    let complete = |line: &str| -> Vec<u64> {
        let r = json_run(line);
        r["total"]["io_depths"]["complete"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    let io = format!("io {f} --rw randread --bs 4k --iodepth 8 --number-ios 2000 --no-kstat");
    // Buckets: 0, 1-4, 5-8, 9-16, ...
    let all = complete(&io);
    assert!(all[2] > 0, "a reap of every ready completion: {all:?}");
    for engine in ["uring", "libaio"] {
        let one = complete(&format!("{io} --engine {engine} --complete-max 1"));
        assert_eq!(one[1], 2000, "--engine {engine} --complete-max 1: {one:?}");
        assert_eq!(one.iter().sum::<u64>(), 2000, "{one:?}");
    }
    let two = complete(&format!("{io} --complete-max 2"));
    assert!(
        two[1] >= 1000 && two[2..].iter().all(|&n| n == 0),
        "{two:?}"
    );
    // A fio job line: fio's default, one per reap.
    let r = ok_json(&format!(
        "fio --name=j --filename={f} --ioengine=io_uring --iodepth=8 --rw=randread --bs=4k --number_ios=2000 --output-format=json"
    ));
    assert_eq!(
        r["jobs"][0]["iodepth_complete"]["4"], 100.0,
        "{}",
        r["jobs"][0]
    );
}
