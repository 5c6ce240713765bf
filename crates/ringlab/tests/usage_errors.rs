//! Bad input and unsafe requests: each gets one line that says what is wrong
//! and how to fix it, exit code 2, no panic, no hang, no file left behind.

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// Runs `ringlab io LINE --directory DIR` in a fresh directory, expects a
/// usage error naming every word of `wants`, and checks nothing is left.
fn refused(line: &str, wants: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let out = ringlab(&format!(
        "io --directory {} --size 1m --runtime 100ms {line}",
        dir.path().display()
    ));
    assert_fails(&out, 2, wants);
    assert!(
        leftovers(dir.path()).is_empty(),
        "{line}: {:?}",
        leftovers(dir.path())
    );
}

#[test]
fn unparsable_and_out_of_range_values() {
    refused("--bs 4q", &["--bs", "not a size", "4k"]);
    refused_plain("io --size abc", &["--size", "not a size"]);
    refused_plain("io --runtime 2x", &["--runtime", "not a duration", "2s"]);
    refused("--io-size 1", &["--io-size", "smaller than one block"]);
    refused_plain("io --runtime 0", &["--runtime", "longer than zero"]);
    refused("--iodepth 0", &["--iodepth 0", "between 1 and 32768"]);
    refused(
        "--iodepth 100000",
        &["--iodepth 100000", "between 1 and 32768"],
    );
    refused("--numjobs 0", &["--numjobs 0", "between 1"]);
    refused("--rwmixread 101", &["--rwmixread 101", "0 to 100"]);
    refused("--cpus x", &["--cpus x", "0,2-3"]);
    refused("--cpus 4000", &["CPU 4000 is not available", "pick from"]);
    refused("--verify --bs 16", &["--verify", "raise --bs"]);
    refused(
        "--engine nosuch",
        &["invalid value 'nosuch'", "sync", "uring"],
    );
    refused("--rw sideways", &["invalid value 'sideways'", "randread"]);
    refused("--bs 2g", &["--bs", "between 1 byte and 1 GiB"]);
    refused(
        "--bs 1g --iodepth 32768",
        &["need 32 TiB", "more than half the memory available"],
    );
}

#[test]
fn ring_flags_that_make_no_sense_are_refused() {
    refused(
        "--defer-taskrun",
        &["--defer-taskrun needs --single-issuer"],
    );
    refused(
        "--engine sync --coop-taskrun",
        &["--coop-taskrun is an io_uring knob", "--engine uring"],
    );
}

/// Every combination the engines-and-knobs issue lists as refused, plus the
/// ones the kernel would refuse only in the middle of a run.
#[test]
fn knob_combinations_the_kernel_rejects_are_refused_before_the_run() {
    let cases: &[(&str, &[&str])] = &[
        (
            "--defer-taskrun",
            &["--defer-taskrun needs --single-issuer"],
        ),
        (
            "--sqpoll --coop-taskrun",
            &["--coop-taskrun", "--sqpoll", "EINVAL"],
        ),
        (
            "--sqpoll --single-issuer --defer-taskrun",
            &["--defer-taskrun", "EINVAL"],
        ),
        ("--mode iou+k --coop-taskrun", &["--mode iou+k", "EINVAL"]),
        ("--iopoll", &["--iopoll needs --direct"]),
        ("--mode iou+p", &["--mode iou+p (IOPOLL) needs --direct"]),
        (
            "--engine sync --fixed-buffers",
            &["--fixed-buffers is an io_uring knob", "--engine sync"],
        ),
        (
            "--engine libaio --direct --sqpoll",
            &[
                "--sqpoll is an io_uring knob",
                "libaio takes --submit-batch, --complete-batch and --complete-max",
            ],
        ),
        (
            "--engine posixaio --submit-batch 1",
            &["--submit-batch is an io_uring knob", "--engine posixaio"],
        ),
        (
            "--engine libaio --direct --iodepth 4 --complete-batch 8",
            &["--complete-batch 8 must be between 1 and --iodepth 4"],
        ),
        (
            "--engine posixaio --mode enhanced",
            &["--mode is an io_uring knob"],
        ),
        (
            "--attach-wq",
            &["--attach-wq only applies to an SQPOLL ring"],
        ),
        (
            "--sqpoll-idle 10",
            &["--sqpoll-idle only applies to an SQPOLL ring"],
        ),
        (
            "--completion-thread 0 --single-issuer --defer-taskrun",
            &["--completion-thread cannot be combined with --defer-taskrun"],
        ),
        (
            "--completion-thread 0 --single-issuer",
            &["--completion-thread cannot be combined with --single-issuer"],
        ),
        (
            "--taskrun-flag",
            &["--taskrun-flag needs --coop-taskrun or --defer-taskrun"],
        ),
        (
            "--single-issuer --defer-taskrun --reap spin",
            &["--reap spin never sees a completion", "--defer-taskrun"],
        ),
        (
            "--iodepth 4 --submit-batch 8",
            &["--submit-batch 8 is larger than --iodepth 4"],
        ),
        (
            "--iodepth 4 --complete-batch 0",
            &["--complete-batch 0 must be between 1 and --iodepth 4"],
        ),
        ("--iodepth 4 --cq-size 2", &["--cq-size 2"]),
        (
            "--iowq-max-workers x",
            &["--iowq-max-workers x", "like 4,4"],
        ),
        ("--force-async=x", &["--force-async", "x"]),
        ("--rw nop --engine sync", &["--rw nop", "--engine uring"]),
        ("--rw nop --verify", &["nothing to --verify"]),
        (
            "--sqpoll-cpu 4096 --sqpoll",
            &["--sqpoll-cpu 4096", "not available"],
        ),
        ("--completion-thread 0 --reap spin", &["drop --reap"]),
    ];
    for (line, wants) in cases {
        refused(line, wants);
    }
}

/// IOPOLL on a device without poll queues fails every request with
/// EOPNOTSUPP; ringlab says so before the run, naming the device.
#[test]
fn iopoll_on_a_device_without_poll_queues_names_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let Some(out) = iopoll_refusal(dir.path()) else {
        skip(
            &current_test(),
            "the file system of the temporary directory sits on a device with poll queues",
        );
        return;
    };
    assert_fails(
        &out,
        2,
        &["--iopoll: device", "has no poll queues", "EOPNOTSUPP"],
    );
}

fn iopoll_refusal(dir: &Path) -> Option<std::process::Output> {
    let out = ringlab(&format!(
        "io --directory {} --size 1m --runtime 100ms --direct --iopoll",
        dir.display()
    ));
    (!out.status.success()).then_some(out)
}

#[test]
fn unknown_flags_are_one_line() {
    refused(
        "--frobnicate",
        &["unexpected argument '--frobnicate'", "--help"],
    );
    // clap's suggestion survives on the same line.
    refused("--iodept 4", &["--iodept", "--iodepth"]);
    let out = ringlab("nosuchcommand");
    assert_fails(&out, 2, &["nosuchcommand"]);
    // No command at all: the help, and exit code 2.
    let out = ringlab("");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Commands:"));
}

#[test]
fn missing_directory_and_output_path() {
    refused_plain(
        "io --directory /nonexistent-ringlab-dir",
        &["--directory", "no such directory"],
    );
    let dir = tempfile::tempdir().unwrap();
    let start = std::time::Instant::now();
    let out = ringlab(&format!(
        "io --directory {} --size 1m --runtime 20s --output /nonexistent-ringlab-dir/r.json",
        dir.path().display()
    ));
    assert_fails(&out, 2, &["--output", "/nonexistent-ringlab-dir/r.json"]);
    assert!(
        start.elapsed().as_secs() < 10,
        "--output checked only after the run"
    );
    assert!(leftovers(dir.path()).is_empty());
}

fn refused_plain(line: &str, wants: &[&str]) {
    assert_fails(&ringlab(line), 2, wants);
}

#[test]
fn bad_targets() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    refused_plain(
        &format!("io {}/missing.dat", d.display()),
        &["does not exist", "omit TARGET"],
    );
    let tiny = d.join("tiny.dat");
    std::fs::write(&tiny, [1u8; 100]).unwrap();
    refused_plain(
        &format!("io {} --bs 4k", tiny.display()),
        &["smaller than one block", "--bs"],
    );
    let small = d.join("small.dat");
    std::fs::write(&small, vec![1u8; 64 << 10]).unwrap();
    refused_plain(
        &format!("io {} --size 1m", small.display()),
        &["--size 1 MiB is larger than target"],
    );
    refused_plain(
        &format!("io {} --keep", small.display()),
        &["--keep only applies to a file ringlab creates"],
    );
    refused_plain(
        &format!("io {} --directory {}", small.display(), d.display()),
        &["--directory only applies"],
    );
    refused_plain(
        &format!("io {}", d.display()),
        &["is a directory", "--directory"],
    );
    // /dev/null and /dev/zero are targets (fio's steadystate.fio names
    // them) with a size; other character devices stay refused.
    refused_plain(
        "io /dev/null",
        &["is a character device, which has no size", "--size"],
    );
    refused_plain(
        "io /dev/tty --size 1m",
        &["neither a regular file nor a block device"],
    );
    // O_DIRECT needs a block size that is a multiple of the logical block.
    refused_plain(
        &format!("io {} --bs 1000 --direct", small.display()),
        &["not a multiple of the logical block size", "drop --direct"],
    );
    refused(
        "--bs 1000 --direct",
        &["not a multiple of the logical block size"],
    );
    // Nothing but the files this test made.
    let mut left = leftovers(d);
    left.sort();
    assert_eq!(left, vec!["small.dat", "tiny.dat"]);
}

/// Unmounts (and removes) a mount point when dropped.
struct Mount(PathBuf);
impl Drop for Mount {
    fn drop(&mut self) {
        let _ = sh("umount", &[self.0.to_str().unwrap()]);
    }
}

#[test]
fn file_system_that_refuses_o_direct() {
    // tmpfs accepts O_DIRECT on recent kernels; ramfs never has.
    if !is_root() {
        skip(&current_test(), "mounting a ramfs needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    if let Err(e) = sh(
        "mount",
        &["-t", "ramfs", "ringlab-test", dir.path().to_str().unwrap()],
    ) {
        skip_root_only(&current_test(), &format!("cannot mount ramfs: {e}"));
        return;
    }
    let _m = Mount(dir.path().to_path_buf());
    // A file ringlab creates there: refused, and removed again.
    let out = ringlab(&format!(
        "io --directory {} --size 1m --runtime 100ms --direct",
        dir.path().display()
    ));
    assert_fails(&out, 2, &["refuses O_DIRECT", "ramfs", "drop --direct"]);
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
    // A file of the user's there: refused, untouched.
    let f = dir.path().join("user.dat");
    std::fs::write(&f, vec![3u8; 1 << 20]).unwrap();
    let out = ringlab(&format!("io {} --runtime 100ms --direct", f.display()));
    assert_fails(&out, 2, &["refuses O_DIRECT", "drop --direct"]);
    assert_eq!(std::fs::read(&f).unwrap(), vec![3u8; 1 << 20]);
    // Without --direct the same target works.
    let out = ringlab(&format!("io {} --runtime 100ms", f.display()));
    assert_ok(&out);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn io_uring_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let base = format!(
        "io --directory {} --size 1m --runtime 100ms",
        dir.path().display()
    );
    let eperm = ringlab_without_io_uring(&base, libc::EPERM as u32);
    if std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled").is_ok_and(|v| v.trim() == "0")
    {
        assert_fails(&eperm, 2, &["EPERM", "seccomp", "--engine sync"]);
    } else {
        assert_fails(&eperm, 2, &["io_uring_disabled", "--engine sync"]);
    }
    let enosys = ringlab_without_io_uring(&base, libc::ENOSYS as u32);
    assert_fails(&enosys, 2, &["ENOSYS", "--engine sync"]);
    assert!(
        leftovers(dir.path()).is_empty(),
        "file laid out before the check"
    );
    // The sync engine does not need io_uring.
    let sync = ringlab_without_io_uring(&format!("{base} --engine sync"), libc::EPERM as u32);
    assert_ok(&sync);
}

#[test]
fn destructive_writes_to_block_devices_are_refused() {
    if !is_root() {
        skip(&current_test(), "loop devices need root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("ext4.img");
    std::fs::write(&img, vec![0u8; 32 << 20]).unwrap();
    if let Err(e) = sh("mkfs.ext4", &["-q", "-F", img.to_str().unwrap()]) {
        skip_root_only(&current_test(), &e);
        return;
    }
    let mut ext4 = match Loop::over(&img) {
        Ok(l) => l,
        Err(e) => {
            skip_root_only(&current_test(), &format!("no loop device: {e}"));
            return;
        }
    };
    let write = |dev: &str, extra: &str| {
        ringlab(&format!(
            "io {dev} --rw randwrite --runtime 100ms --direct {extra}"
        ))
    };
    assert_fails(
        &write(&ext4.dev, ""),
        2,
        &["refusing to write", "ext2/3/4", "--allow-destructive"],
    );
    // Reads are harmless and allowed.
    let read = ringlab(&format!(
        "io {} --rw randread --runtime 100ms --direct",
        ext4.dev
    ));
    assert_ok(&read);
    // Mounted: refused, naming the mount point.
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    sh("mount", &[&ext4.dev, mnt.to_str().unwrap()]).unwrap();
    ext4.mounted = Some(mnt.clone());
    assert_fails(
        &write(&ext4.dev, ""),
        2,
        &["mounted at", "--allow-destructive"],
    );
    drop(ext4);

    // A partition table (MBR signature in sector 0) is refused too.
    let mbr_img = dir.path().join("mbr.img");
    let mut data = vec![0u8; 8 << 20];
    data[510] = 0x55;
    data[511] = 0xaa;
    std::fs::write(&mbr_img, &data).unwrap();
    let mbr = Loop::over(&mbr_img).unwrap();
    assert_fails(&write(&mbr.dev, ""), 2, &["MBR", "--allow-destructive"]);
    // With --allow-destructive the write goes ahead.
    let ok = write(&mbr.dev, "--allow-destructive");
    assert_ok(&ok);
    // A blank device needs no permission.
    let blank_img = dir.path().join("blank.img");
    std::fs::write(&blank_img, vec![0u8; 8 << 20]).unwrap();
    let blank = Loop::over(&blank_img).unwrap();
    let ok = write(&blank.dev, "--verify");
    assert_ok(&ok);
}
