//! Fault injection: what the disk, the signals and the file system can do
//! to a run, and what ringlab must do then. Every case asserts the exit
//! code, the message, what is left on disk, and that the run ends (a
//! generous limit kills it and fails the test; no timing is asserted).
//!
//! Most cases need root (tmpfs mounts, loop devices); without it each
//! prints `skipped <name>: <reason>`.

mod common;

use common::*;
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Engines, their extra flags and depths: every engine at depth 1, and each
/// asynchronous one at 32 (sync has one I/O in flight at any depth).
const MATRIX: [(&str, &str, u32); 7] = [
    ("sync", "", 1),
    ("uring", "", 1),
    ("uring", "", 32),
    ("libaio", "--direct", 1),
    ("libaio", "--direct", 32),
    ("posixaio", "", 1),
    ("posixaio", "", 32),
];

/// How long any run may take before the test kills it and fails.
const LIMIT: Duration = Duration::from_secs(20);

fn skip_unless_root(name: &str) -> bool {
    if is_root() {
        return false;
    }
    skip_root_only(name, "needs root (tmpfs mounts, loop devices)");
    true
}

/// A tmpfs of `size` mounted on a temporary directory, unmounted when
/// dropped; without root, a plain temporary directory (`mounted` false).
struct Tmpfs {
    dir: tempfile::TempDir,
    mounted: bool,
}

impl Tmpfs {
    /// Scratch space: a tmpfs as root (fast, and off the disk), else a
    /// temporary directory.
    fn scratch(size: &str) -> Tmpfs {
        if is_root() {
            return Tmpfs::mount(size);
        }
        Tmpfs {
            dir: tempfile::tempdir().unwrap(),
            mounted: false,
        }
    }

    fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        sh(
            "mount",
            &[
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size}"),
                "tmpfs",
                dir.path().to_str().unwrap(),
            ],
        )
        .expect("mounting a tmpfs as root");
        Tmpfs { dir, mounted: true }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        if self.mounted {
            let _ = sh("umount", &["-l", self.dir.path().to_str().unwrap()]);
        }
    }
}

fn spawn(line: &str) -> Child {
    Command::new(BIN)
        .args(argv(line))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ringlab")
}

/// Waits for `child` for at most [`LIMIT`]; past it, kills it and fails.
fn finish(mut child: Child, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what}: still running after {LIMIT:?} (killed); stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}

fn run(line: &str) -> Output {
    finish(spawn(line), line)
}

/// Polls `cond` every millisecond until it holds; fails after [`LIMIT`].
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < LIMIT, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Whether process `pid` has a thread named `name`.
fn has_thread(pid: u32, name: &str) -> bool {
    fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|t| fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
}

/// Whether process `pid` holds its created data file open.
fn holds_created_file(pid: u32) -> bool {
    fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|fd| {
            fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy().contains("ringlab-io-"))
        })
}

/// Read system calls process `pid` made so far (/proc/PID/io syscr).
fn read_syscalls(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("syscr: ").map(|v| v.trim().parse().ok()))
        })
        .flatten()
        .unwrap_or(0)
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on the pid of our own child, not yet reaped.
    unsafe { libc::kill(child.id() as i32, sig) };
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(out: &Output) -> Value {
    assert!(out.status.success(), "failed: {}", stderr(out));
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

fn listing(dir: &Path) -> Vec<String> {
    let mut l = leftovers(dir);
    l.sort();
    l
}

/// Pseudo-random non-zero bytes, so that a read of them is a real read.
fn data(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31) | 1).collect()
}

#[test]
fn enospc_ends_the_job_with_its_error_at_every_depth() {
    if skip_unless_root("enospc_ends_the_job_with_its_error_at_every_depth") {
        return;
    }
    // A sparse 2 MiB file on a 1 MiB tmpfs: random writes run out of space.
    let fs = Tmpfs::mount("1m");
    let f = fs.path().join("sparse.dat");
    for (engine, extra, depth) in MATRIX {
        fs::File::create(&f).unwrap().set_len(2 << 20).unwrap();
        let out = run(&format!(
            "io {} --engine {engine} {extra} --iodepth {depth} --rw randwrite --runtime 60s --no-kstat --allow-destructive",
            f.display()
        ));
        eprintln!(
            "ENOSPC {engine} depth {depth}: {:?} {}",
            out.status.code(),
            stderr(&out).trim()
        );
        assert_fails(
            &out,
            1,
            &[
                "job 0: write of 4096 bytes at offset",
                "No space left on device",
            ],
        );
        assert!(out.stdout.is_empty());
        // The user's file is still there, whole in size; nothing else.
        assert_eq!(fs::metadata(&f).unwrap().len(), 2 << 20);
        assert_eq!(listing(fs.path()), vec!["sparse.dat"]);
        fs::remove_file(&f).unwrap();
    }
}

#[test]
fn a_file_truncated_during_a_run_ends_it_with_a_short_read() {
    let fs = Tmpfs::scratch("64m");
    let f = fs.path().join("shrinks.dat");
    for (engine, extra, depth) in MATRIX {
        fs::write(&f, data(4 << 20)).unwrap();
        let child = spawn(&format!(
            "io {} --engine {engine} {extra} --iodepth {depth} --rw randread --runtime 60s --no-kstat",
            f.display()
        ));
        let pid = child.id();
        wait_until("the job thread starts", || has_thread(pid, "ringlab-job0"));
        fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_len(0)
            .unwrap();
        let out = finish(child, "randread of a truncated file");
        eprintln!(
            "truncated {engine} depth {depth}: {:?} {}",
            out.status.code(),
            stderr(&out).trim()
        );
        assert_fails(
            &out,
            1,
            &[
                "job 0: short read at offset",
                "0 of 4096 bytes",
                "truncated",
            ],
        );
        assert_eq!(listing(fs.path()), vec!["shrinks.dat"]);
    }
}

#[test]
fn corruption_under_verify_names_the_block_at_every_depth() {
    let fs = Tmpfs::scratch("16m");
    let good = fs.path().join("good.dat");
    let bad = fs.path().join("bad.dat");
    let mut blocks = vec![0u8; 1 << 20];
    for (i, b) in blocks.chunks_exact_mut(4096).enumerate() {
        ringlab_io::verify::stamp(b, i as u64 * 4096, 7);
    }
    fs::write(&good, &blocks).unwrap();
    blocks[5 * 4096 + 100] ^= 0xff;
    fs::write(&bad, &blocks).unwrap();
    for (engine, extra, depth) in MATRIX {
        let base =
            format!("--engine {engine} {extra} --iodepth {depth} --rw read --verify --no-kstat");
        // The intact copy verifies: the failure below is the corruption's.
        let ok = json(&run(&format!(
            "io {} {base} --io-size 1m --output-format json",
            good.display()
        )));
        assert_eq!(ok["total"]["ops"], 256, "{ok}");
        let out = run(&format!("io {} {base} --runtime 60s", bad.display()));
        eprintln!(
            "corrupt {engine} depth {depth}: {:?} {}",
            out.status.code(),
            stderr(&out).trim()
        );
        assert_fails(
            &out,
            1,
            &[
                "verify failed: job 0 read at offset 20480 (block 5)",
                "checksum mismatch",
            ],
        );
    }
    assert_eq!(listing(fs.path()), vec!["bad.dat", "good.dat"]);
}

/// SIGINT (once, or twice at once) while the file is laid out: exit 130,
/// nothing measured, nothing left.
#[test]
fn interrupt_during_layout_exits_130_and_leaves_nothing() {
    if skip_unless_root("interrupt_during_layout_exits_130_and_leaves_nothing") {
        return;
    }
    // Room for a 3 GiB layout that the signal cuts short long before the end.
    let fs = Tmpfs::mount("4g");
    for signals in [1, 2] {
        let child = spawn(&format!(
            "io --directory {} --size 3g --runtime 10s --no-kstat",
            fs.path().display()
        ));
        let pid = child.id();
        wait_until("the file is being laid out", || holds_created_file(pid));
        for _ in 0..signals {
            signal(&child, libc::SIGINT);
        }
        let mut out = finish(child, "interrupted layout");
        // A layout this large is announced before it starts.
        let err = stderr(&out);
        assert!(err.starts_with("ringlab: laying out 3 GiB at "), "{err}");
        out.stderr = err
            .lines()
            .skip(1)
            .map(|l| format!("{l}\n"))
            .collect::<String>()
            .into_bytes();
        eprintln!(
            "layout x{signals}: {:?} {}",
            out.status.code(),
            stderr(&out).trim()
        );
        assert_fails(
            &out,
            130,
            &["interrupted before the run", "nothing was measured"],
        );
        assert!(out.stdout.is_empty());
        assert!(listing(fs.path()).is_empty(), "{:?}", listing(fs.path()));
    }
}

/// SIGINT (once, or twice at once) while the jobs run, at every depth and
/// engine: the figures measured so far are printed, and nothing is left.
#[test]
fn interrupt_during_the_run_reports_what_was_measured() {
    let fs = Tmpfs::scratch("64m");
    for (engine, extra, depth) in MATRIX {
        for signals in [1, 2] {
            let child = spawn(&format!(
                "io --directory {} --size 4m --engine {engine} {extra} --iodepth {depth} --rw randrw --runtime 60s --no-kstat --output-format json",
                fs.path().display()
            ));
            let pid = child.id();
            wait_until("the job thread starts", || has_thread(pid, "ringlab-job0"));
            std::thread::sleep(Duration::from_millis(50));
            for _ in 0..signals {
                signal(&child, libc::SIGINT);
            }
            let out = finish(child, "interrupted run");
            let v = json(&out);
            eprintln!(
                "run {engine} depth {depth} x{signals}: {:?} ops {} warnings {}",
                out.status.code(),
                v["total"]["ops"],
                v["warnings"]
            );
            assert!(v["warnings"].to_string().contains("interrupted"), "{v}");
            // On a loaded machine the signal may come before the first I/O:
            // then zero operations is the honest figure.
            assert!(v["total"]["ops"].as_u64().is_some(), "{v}");
            assert!(listing(fs.path()).is_empty(), "{:?}", listing(fs.path()));
        }
    }
}

/// SIGINT during the read-back of --verify: it stops there, the result
/// says how far it got, and nothing is left.
#[test]
fn interrupt_during_verify_read_back_says_how_far_it_got() {
    let fs = Tmpfs::scratch("64m");
    for signals in [1, 2] {
        // io_uring writes without read system calls: the first burst of
        // them is the read-back (pread per block).
        let child = spawn(&format!(
            "io --directory {} --size 16m --io-size 16m --bs 512 --rw write --verify --iodepth 32 --no-kstat --output-format json",
            fs.path().display()
        ));
        let pid = child.id();
        wait_until("the job thread starts", || has_thread(pid, "ringlab-job0"));
        let base = read_syscalls(pid);
        wait_until("the read-back starts", || read_syscalls(pid) > base + 1000);
        for _ in 0..signals {
            signal(&child, libc::SIGINT);
        }
        let out = finish(child, "interrupted read-back");
        let v = json(&out);
        let warnings = v["warnings"].to_string();
        eprintln!("read-back x{signals}: {:?} {warnings}", out.status.code());
        assert!(
            warnings.contains("verify read-back interrupted after"),
            "{warnings}"
        );
        assert!(v["total"]["ops"].as_u64().unwrap() > 0);
        assert!(listing(fs.path()).is_empty(), "{:?}", listing(fs.path()));
    }
}

/// `--thinkcycles 10000000000` (seconds of work per I/O) still ends on
/// SIGINT, at depth 1 and 32.
#[test]
fn huge_think_time_ends_on_interrupt() {
    let dir = tempfile::tempdir().unwrap();
    for (engine, depth) in [("sync", 1), ("uring", 1), ("uring", 32)] {
        let child = spawn(&format!(
            "io --directory {} --size 1m --engine {engine} --iodepth {depth} --thinkcycles 10000000000 --runtime 120s --no-kstat --output-format json",
            dir.path().display()
        ));
        let pid = child.id();
        wait_until("the job thread starts", || has_thread(pid, "ringlab-job0"));
        std::thread::sleep(Duration::from_millis(100));
        signal(&child, libc::SIGINT);
        let out = finish(child, "think time and SIGINT");
        let v = json(&out);
        eprintln!(
            "think {engine} depth {depth}: {:?} ops {}",
            out.status.code(),
            v["total"]["ops"]
        );
        assert!(v["warnings"].to_string().contains("interrupted"), "{v}");
        assert!(listing(dir.path()).is_empty());
    }
}

/// SIGKILL leaves neither the data file nor a temporary output, and the
/// existing output as it was.
#[test]
fn sigkill_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("out.json");
    fs::write(&out_file, "old").unwrap();
    let child = spawn(&format!(
        "io --directory {} --size 4m --runtime 60s --no-kstat --output {} --overwrite-files",
        dir.path().display(),
        out_file.display()
    ));
    let pid = child.id();
    wait_until("the job thread starts", || has_thread(pid, "ringlab-job0"));
    signal(&child, libc::SIGKILL);
    let out = finish(child, "SIGKILL");
    assert_eq!(out.status.code(), None, "killed by a signal");
    assert_eq!(listing(dir.path()), vec!["out.json"]);
    assert_eq!(fs::read_to_string(&out_file).unwrap(), "old");
}

#[test]
fn output_never_destroys_data() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = d.join("target.dat");
    let content = data(1 << 20);
    fs::write(&target, &content).unwrap();
    let io = format!(
        "io {} --rw randwrite --size 64k --runtime 100ms --no-kstat --allow-destructive",
        target.display()
    );
    // The target itself, by its name or another (hard link): refused, the
    // target untouched.
    let link = d.join("link.dat");
    fs::hard_link(&target, &link).unwrap();
    for p in [&target, &link] {
        let out = run(&format!("{io} --output {}", p.display()));
        eprintln!(
            "--output target: {:?} {}",
            out.status.code(),
            stderr(&out).trim()
        );
        assert_fails(&out, 2, &["is the target", "name another file"]);
        assert_eq!(fs::read(&target).unwrap(), content);
    }
    fs::remove_file(&link).unwrap();
    // A directory, a character device: refused before anything runs.
    for (p, what) in [
        (d.to_str().unwrap(), "a directory"),
        ("/dev/null", "a character device"),
    ] {
        let out = run(&format!("{io} --output {p}"));
        eprintln!(
            "--output {p}: {:?} {}",
            out.status.code(),
            stderr(&out).trim()
        );
        assert_fails(&out, 2, &["refusing to write the result over", what]);
        let out = run(&format!("features --output {p}"));
        assert_fails(&out, 2, &[what]);
    }
    assert_eq!(fs::read(&target).unwrap(), content);
    // A run that fails (no verify header) leaves the existing output as it
    // was, and no temporary file.
    let out_file = d.join("out.json");
    fs::write(&out_file, "old").unwrap();
    // A file ringlab did not write is refused before the run, unless
    // --overwrite-files.
    let out = run(&format!("{io} --output {}", out_file.display()));
    assert_fails(&out, 2, &["ringlab did not write", "--overwrite-files"]);
    assert_eq!(fs::read_to_string(&out_file).unwrap(), "old");
    let zeros = d.join("zeros.dat");
    fs::write(&zeros, vec![0u8; 64 << 10]).unwrap();
    let out = run(&format!(
        "io {} --rw read --verify --runtime 10s --no-kstat --overwrite-files --output {}",
        zeros.display(),
        out_file.display()
    ));
    eprintln!(
        "failed run with --output: {:?} {}",
        out.status.code(),
        stderr(&out).trim()
    );
    assert_fails(&out, 1, &["no ringlab verify header"]);
    assert_eq!(fs::read_to_string(&out_file).unwrap(), "old");
    assert_eq!(listing(d), vec!["out.json", "target.dat", "zeros.dat"]);
    // A run that succeeds replaces it whole; '-' is standard output.
    let out = run(&format!(
        "{io} --output {} --output-format json --overwrite-files",
        out_file.display()
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&fs::read_to_string(&out_file).unwrap()).unwrap();
    assert_eq!(v["command"], "io");
    assert_eq!(listing(d), vec!["out.json", "target.dat", "zeros.dat"]);
    let out = run(&format!("{io} --output - --output-format json"));
    json(&out);
}

#[test]
fn output_over_a_block_device_is_refused() {
    if skip_unless_root("output_over_a_block_device_is_refused") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("dev.img");
    let content = data(4 << 20);
    fs::write(&img, &content).unwrap();
    let dev = match Loop::over(&img) {
        Ok(l) => l,
        Err(e) => {
            skip(
                "output_over_a_block_device_is_refused",
                &format!("no loop device: {e}"),
            );
            return;
        }
    };
    let out = run(&format!(
        "io --directory {} --size 1m --runtime 100ms --no-kstat --output {}",
        dir.path().display(),
        dev.dev
    ));
    eprintln!(
        "--output {}: {:?} {}",
        dev.dev,
        out.status.code(),
        stderr(&out).trim()
    );
    assert_fails(
        &out,
        2,
        &["refusing to write the result over a block device"],
    );
    drop(dev);
    assert_eq!(fs::read(&img).unwrap(), content);
}

/// Signatures libblkid knows and the old table did not (minix, cramfs):
/// ringlab refuses them, naming what `blkid -p` names.
#[test]
fn destructive_writes_refused_for_what_blkid_finds() {
    if skip_unless_root("destructive_writes_refused_for_what_blkid_finds") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let minix = d.join("minix.img");
    fs::write(&minix, vec![0u8; 8 << 20]).unwrap();
    let cramfs = d.join("cramfs.img");
    let tree = d.join("tree");
    fs::create_dir(&tree).unwrap();
    fs::write(tree.join("a"), "a").unwrap();
    let made = sh("mkfs.minix", &[minix.to_str().unwrap()]).and_then(|_| {
        sh(
            "mkfs.cramfs",
            &[tree.to_str().unwrap(), cramfs.to_str().unwrap()],
        )
    });
    if let Err(e) = made {
        skip(
            "destructive_writes_refused_for_what_blkid_finds",
            &e.to_string(),
        );
        return;
    }
    fs::File::options()
        .write(true)
        .open(&cramfs)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    for (img, fs_type) in [(&minix, "minix"), (&cramfs, "cramfs")] {
        let dev = Loop::over(img).unwrap();
        let blkid = sh("blkid", &["-p", "-o", "value", "-s", "TYPE", &dev.dev]).unwrap();
        assert_eq!(blkid, fs_type, "blkid -p on {}", dev.dev);
        let write = |extra: &str| {
            run(&format!(
                "io {} --rw randwrite --size 1m --runtime 100ms --no-kstat {extra}",
                dev.dev
            ))
        };
        let out = write("");
        eprintln!(
            "write {fs_type} device: {:?} {}",
            out.status.code(),
            stderr(&out).trim()
        );
        assert_fails(
            &out,
            2,
            &["refusing to write", fs_type, "--allow-destructive"],
        );
        // Its backing file, while the loop device is attached, is refused
        // too.
        let out = run(&format!(
            "io {} --rw randwrite --size 1m --runtime 100ms --no-kstat",
            img.display()
        ));
        eprintln!(
            "write {fs_type} backing file: {:?} {}",
            out.status.code(),
            stderr(&out).trim()
        );
        assert_fails(&out, 2, &["backs loop device", &dev.dev, "attached"]);
        assert_eq!(
            sh("blkid", &["-p", "-o", "value", "-s", "TYPE", &dev.dev]).unwrap(),
            fs_type
        );
        if fs_type == "minix" {
            let out = write("--allow-destructive");
            assert!(out.status.success(), "{}", stderr(&out));
        }
    }
}

/// A file system mounted in another mount namespace, and the backing file
/// of a mounted loop device: both refused.
#[test]
fn destructive_writes_refused_when_mounted_anywhere() {
    if skip_unless_root("destructive_writes_refused_when_mounted_anywhere") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("ext4.img");
    fs::write(&img, vec![0u8; 16 << 20]).unwrap();
    if let Err(e) = sh("mkfs.ext4", &["-q", "-F", img.to_str().unwrap()]) {
        skip(
            "destructive_writes_refused_when_mounted_anywhere",
            &e.to_string(),
        );
        return;
    }
    let mut dev = Loop::over(&img).unwrap();
    let mnt = dir.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let write = |path: &str| {
        run(&format!(
            "io {path} --rw randwrite --size 1m --runtime 100ms --no-kstat"
        ))
    };

    // Mounted in a private mount namespace: invisible in ours.
    let mut ns = match Command::new("unshare")
        .args([
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            &format!(
                "mount {} {} && echo mounted && exec sleep 60",
                dev.dev,
                mnt.display()
            ),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            skip(
                "destructive_writes_refused_when_mounted_anywhere",
                &format!("unshare: {e}"),
            );
            return;
        }
    };
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(ns.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    if line.trim() != "mounted" {
        let _ = ns.kill();
        let out = ns.wait_with_output().unwrap();
        eprintln!(
            "skipped destructive_writes_refused_when_mounted_anywhere: no mount namespace: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let out = write(&dev.dev);
    eprintln!(
        "write device mounted elsewhere: {:?} {}",
        out.status.code(),
        stderr(&out).trim()
    );
    assert_fails(
        &out,
        2,
        &["refusing to write", "in use", "another mount namespace"],
    );
    let out = write(img.to_str().unwrap());
    eprintln!(
        "write backing file mounted elsewhere: {:?} {}",
        out.status.code(),
        stderr(&out).trim()
    );
    assert_fails(&out, 2, &["backs loop device", "another mount namespace"]);
    let _ = ns.kill();
    let _ = ns.wait();

    // Mounted here: the backing file is refused, naming the mount point.
    sh("mount", &[&dev.dev, mnt.to_str().unwrap()]).unwrap();
    dev.mounted = Some(mnt.clone());
    let out = write(img.to_str().unwrap());
    eprintln!(
        "write backing file mounted here: {:?} {}",
        out.status.code(),
        stderr(&out).trim()
    );
    assert_fails(
        &out,
        2,
        &[
            "backs loop device",
            &dev.dev,
            "mounted at",
            mnt.to_str().unwrap(),
        ],
    );
    drop(dev);
    // Detached, the image is a plain file again.
    assert_eq!(
        sh(
            "blkid",
            &["-p", "-o", "value", "-s", "TYPE", img.to_str().unwrap()]
        )
        .unwrap(),
        "ext4"
    );
}

/// Under a real-time policy a job that never blocks (NOPs complete inside
/// io_uring_enter, a page-cache hit inside pread) keeps every thread of the
/// same priority off its CPU, the runner's thread too: the job must end the
/// run itself when the runtime is over, not wait for a stop that never comes.
#[test]
fn a_real_time_job_that_never_blocks_ends_at_its_runtime() {
    let name = "a_real_time_job_that_never_blocks_ends_at_its_runtime";
    if skip_unless_root(name) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hot.dat");
    fs::write(&file, data(1 << 20)).unwrap();
    for line in [
        "io --rw nop --iodepth 1 --runtime 300ms --no-kstat --output-format json".to_string(),
        format!(
            "io {} --engine sync --rw randread --invalidate 0 --runtime 300ms --no-kstat --output-format json",
            file.display()
        ),
    ] {
        let child = Command::new("chrt")
            .args(["-f", "1", "taskset", "-c", "0", BIN])
            .args(argv(&line))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn chrt");
        let out = finish(child, &format!("chrt -f 1 taskset -c 0 ringlab {line}"));
        assert!(out.status.success(), "{line}: {}", stderr(&out));
        assert!(json(&out)["total"]["ops"].as_u64().unwrap() > 0, "{line}");
    }
}

/// fio's logs follow --output's contract: checked before the run, never a
/// user's file, the target, a device or a FIFO; written beside their names
/// and renamed only when the run succeeded.
#[test]
fn logs_never_destroy_data_and_a_failed_run_leaves_none() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let io = "io --size 1m --runtime 100ms --no-kstat --rw randread";
    // A user's file named like a log: refused, untouched, by a failing run
    // and by one that would succeed.
    let user = d.join("user_bw.1.log");
    let content = data(50 << 10);
    fs::write(&user, &content).unwrap();
    let zeros = d.join("zeros.dat");
    fs::write(&zeros, vec![0u8; 64 << 10]).unwrap();
    let prefix = d.join("user");
    for line in [
        format!(
            "io {} --rw read --verify --no-kstat --write-bw-log {}",
            zeros.display(),
            prefix.display()
        ),
        format!(
            "{io} --directory {} --write-bw-log {}",
            d.display(),
            prefix.display()
        ),
    ] {
        let out = run(&line);
        eprintln!("user log: {:?} {}", out.status.code(), stderr(&out).trim());
        assert_fails(&out, 2, &["--write-bw-log", "ringlab did not write"]);
        assert_eq!(fs::read(&user).unwrap(), content);
    }
    // The target itself under the log's name (a symlink): refused, the
    // target kept whole.
    let target = d.join("target.dat");
    let tdata = data(1 << 20);
    fs::write(&target, &tdata).unwrap();
    std::os::unix::fs::symlink(&target, d.join("t_bw.1.log")).unwrap();
    let out = run(&format!(
        "io {} --rw randread --runtime 100ms --no-kstat --write-bw-log {}",
        target.display(),
        d.join("t").display()
    ));
    assert_fails(&out, 2, &["is the target", "itself"]);
    assert_eq!(fs::read(&target).unwrap(), tdata);
    // A device and a FIFO (no reader: it would block forever): refused at
    // once.
    std::os::unix::fs::symlink("/dev/null", d.join("dev_iops.1.log")).unwrap();
    let out = run(&format!(
        "{io} --directory {} --write-iops-log {}",
        d.display(),
        d.join("dev").display()
    ));
    assert_fails(
        &out,
        2,
        &["refusing to write the log over a character device"],
    );
    let fifo = d.join("f_lat.1.log");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let out = run(&format!(
        "{io} --directory {} --write-lat-log {}",
        d.display(),
        d.join("f").display()
    ));
    assert_fails(&out, 2, &["refusing to write the log over a FIFO"]);
    // A failed run (no verify header) leaves no log at all.
    let before = listing(d);
    let out = run(&format!(
        "io {} --rw read --verify --no-kstat --write-bw-log {} --write-lat-log {}",
        zeros.display(),
        d.join("new").display(),
        d.join("new").display()
    ));
    assert_fails(&out, 1, &["no ringlab verify header"]);
    assert_eq!(listing(d), before);
    // A run that succeeds writes them, marked as ringlab's: the next run
    // replaces them without asking.
    let line = format!(
        "{io} --directory {} --write-bw-log {}",
        d.display(),
        d.join("new").display()
    );
    for _ in 0..2 {
        let out = run(&line);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(d.join("new_bw.1.log").is_file());
    }
    let mut names = listing(d);
    names.retain(|n| n.starts_with('.'));
    assert!(names.is_empty(), "temporary files left: {names:?}");
}

/// A layout or growth the file system cannot hold is refused before any
/// byte is written; a growth is said.
#[test]
fn layouts_check_free_space_and_growth_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("big.dat");
    let out = run(&format!(
        "io {} --size 18446744073709551615 --bs 4k --runtime 100ms --no-kstat",
        f.display()
    ));
    eprintln!("huge size: {:?} {}", out.status.code(), stderr(&out).trim());
    assert_fails(&out, 2, &["needs", "free"]);
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
    // A small file laid out by ringlab, then --offset past its end: it
    // grows, and the run says so.
    let small = dir.path().join("small.dat");
    let out = run(&format!(
        "io {} --size 1m --rw randread --runtime 50ms --no-kstat",
        small.display()
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&format!(
        "io {} --size 1m --offset 2m --rw randread --runtime 50ms --no-kstat",
        small.display()
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("growing"), "{}", stderr(&out));
    assert_eq!(fs::metadata(&small).unwrap().len(), 3 << 20);
    // More than the file system holds: refused, the file as it was.
    if is_root() {
        let fs_ = Tmpfs::mount("16m");
        let s = fs_.path().join("s.dat");
        let out = run(&format!(
            "io {} --size 1m --rw randread --runtime 50ms --no-kstat",
            s.display()
        ));
        assert!(out.status.success(), "{}", stderr(&out));
        let out = run(&format!(
            "io {} --size 1m --offset 1g --rw randread --runtime 50ms --no-kstat",
            s.display()
        ));
        assert_fails(&out, 2, &["needs", "free"]);
        assert_eq!(fs::metadata(&s).unwrap().len(), 1 << 20);
    }
}

/// SIGKILL during the layout of a named file leaves nothing under its name
/// (it is laid out under a temporary name, which the run's cleaner process
/// removes), and the next run lays it out.
#[test]
fn sigkill_during_a_named_layout_leaves_no_partial_file() {
    let fs_ = Tmpfs::scratch("4g");
    let f = fs_.path().join("named.dat");
    let child = spawn(&format!(
        "io {} --size 3g --runtime 10s --no-kstat",
        f.display()
    ));
    let dir = fs_.path().to_path_buf();
    wait_until("the temporary layout file grows", || {
        fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .any(|e| e.metadata().is_ok_and(|m| m.len() > 0))
    });
    signal(&child, libc::SIGKILL);
    let _ = finish(child, "killed layout");
    assert!(!f.exists(), "a partial file under the name");
    // The temporary file is removed by the run's cleaner process, without
    // waiting for a next run.
    let dir = fs_.path().to_path_buf();
    wait_until("the cleaner removes the partial layout", || {
        listing(&dir).is_empty()
    });
    let out = run(&format!(
        "io {} --size 1m --rw randwrite --runtime 50ms --no-kstat",
        f.display()
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(listing(fs_.path()), vec!["named.dat"]);
}

/// SIGHUP (a closed terminal) ends a run as SIGTERM does: with its report.
#[test]
fn sighup_ends_the_run_with_its_report() {
    let fs_ = Tmpfs::scratch("64m");
    let child = spawn(&format!(
        "io --directory {} --size 4m --rw randread --runtime 60s --no-kstat --output-format json",
        fs_.path().display()
    ));
    let pid = child.id();
    wait_until("the job thread starts", || has_thread(pid, "ringlab-job0"));
    signal(&child, libc::SIGHUP);
    let out = finish(child, "SIGHUP");
    let v = json(&out);
    assert!(v["warnings"].to_string().contains("interrupted"), "{v}");
    assert!(listing(fs_.path()).is_empty(), "{:?}", listing(fs_.path()));
}

/// Numbers that would overflow, and empty limits, are refused.
#[test]
fn overflowing_and_empty_figures_are_refused() {
    let out = run("io --size 1m --runtime 100ms --thinktime 18446744073709551615");
    assert_fails(&out, 2, &["longer than a year"]);
    for flag in ["--rate-iops", "--rate"] {
        let mut cmd = Command::new(BIN);
        cmd.args(argv("io --size 1m --runtime 100ms"))
            .args([flag, ""]);
        let out = run_limited(cmd);
        assert_fails(&out, 2, &["no limit given"]);
    }
}

/// A pass-through FUSE mount (tests/fixtures/passthrough_fuse.py: fusepy
/// over fusermount3) of a temporary directory; it has no O_TMPFILE, so
/// ringlab writes named temporary files there. Unmounted on drop.
struct Fuse {
    backing: tempfile::TempDir,
    mnt: tempfile::TempDir,
    daemon: Child,
}

impl Fuse {
    fn mount() -> Result<Fuse, String> {
        if !Path::new("/usr/bin/fusermount3").exists() || !Path::new("/dev/fuse").exists() {
            return Err("no fusermount3 or /dev/fuse (apt-get install fuse3)".into());
        }
        let probe = Command::new("/usr/bin/python3")
            .args(["-c", "import fusepy"])
            .output()
            .map_err(|e| format!("no /usr/bin/python3: {e}"))?;
        if !probe.status.success() {
            return Err("no fusepy for /usr/bin/python3 (apt-get install python3-fusepy)".into());
        }
        let backing = tempfile::tempdir().unwrap();
        let mnt = tempfile::tempdir().unwrap();
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/passthrough_fuse.py"
        );
        let daemon = Command::new("/usr/bin/python3")
            .args([
                script,
                backing.path().to_str().unwrap(),
                mnt.path().to_str().unwrap(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting the FUSE daemon: {e}"))?;
        let f = Fuse {
            backing,
            mnt,
            daemon,
        };
        let start = Instant::now();
        while !fs::read_to_string("/proc/self/mounts")
            .unwrap_or_default()
            .contains(f.mnt.path().to_str().unwrap())
        {
            if start.elapsed() > Duration::from_secs(10) {
                return Err("the FUSE mount never appeared".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(f)
    }
}

impl Drop for Fuse {
    fn drop(&mut self) {
        let _ = sh(
            "/usr/bin/fusermount3",
            &["-u", "-z", self.mnt.path().to_str().unwrap()],
        );
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}

/// Where O_TMPFILE is missing (FUSE), --output's named temporary file is
/// removed however the run ends: a clean end, three quick signals (the
/// signal path unlinks it), and SIGKILL (the run's cleaner process removes
/// it).
#[test]
fn output_on_fuse_leaves_no_temporary_file() {
    let name = "output_on_fuse_leaves_no_temporary_file";
    if skip_unless_root(name) {
        return;
    }
    let fuse = match Fuse::mount() {
        Ok(f) => f,
        Err(e) => {
            skip(name, &e);
            return;
        }
    };
    let out_file = fuse.mnt.path().join("out.json");
    let scratch = tempfile::tempdir().unwrap();
    // This file system keeps no extended attributes, so ringlab cannot
    // tell its own result from a user's file: replacing one needs
    // --overwrite-files.
    let line = format!(
        "io --directory {} --size 1m --runtime 60s --no-kstat --overwrite-files --output {}",
        scratch.path().display(),
        out_file.display()
    );
    let temps = |d: &Path| -> Vec<String> {
        listing(d)
            .into_iter()
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    };
    for signals in [1, 3] {
        let child = spawn(&line);
        let pid = child.id();
        wait_until("the job thread starts", || has_thread(pid, "ringlab-job0"));
        assert_eq!(
            temps(fuse.backing.path()).len(),
            1,
            "the named temporary file"
        );
        for _ in 0..signals {
            signal(&child, libc::SIGINT);
            std::thread::sleep(Duration::from_millis(2));
        }
        let out = finish(child, "interrupted run on FUSE");
        eprintln!("FUSE x{signals}: {:?}", out.status.code());
        assert!(
            temps(fuse.backing.path()).is_empty(),
            "{:?}",
            listing(fuse.backing.path())
        );
    }
    let child = spawn(&line);
    let pid = child.id();
    wait_until("the job thread starts", || has_thread(pid, "ringlab-job0"));
    signal(&child, libc::SIGKILL);
    let _ = finish(child, "SIGKILL on FUSE");
    // The killed run's cleaner process removes its file.
    wait_until(
        "the cleaner removes the killed run's temporary file",
        || temps(fuse.backing.path()).is_empty(),
    );
    let plain = format!(
        "io --directory {} --size 1m --runtime 50ms --no-kstat --output {}",
        scratch.path().display(),
        out_file.display()
    );
    let out = run(&plain);
    assert_fails(
        &out,
        2,
        &["keeps no extended attributes", "--overwrite-files"],
    );
    let out = run(&format!("{plain} --overwrite-files"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        temps(fuse.backing.path()).is_empty(),
        "{:?}",
        listing(fuse.backing.path())
    );
    assert!(out_file.is_file());
}

/// A pids cgroup too small for the job threads: the error names the
/// cgroup's limit instead of a bare EAGAIN.
#[test]
fn a_pids_cgroup_limit_is_named() {
    let name = "a_pids_cgroup_limit_is_named";
    if skip_unless_root(name) {
        return;
    }
    let base = Path::new("/sys/fs/cgroup/pids");
    if !base.join("cgroup.procs").exists() {
        skip(name, "no cgroup v1 pids hierarchy at /sys/fs/cgroup/pids");
        return;
    }
    let cg = base.join(format!("ringlab-test-{}", std::process::id()));
    fs::create_dir_all(&cg).unwrap();
    fs::write(cg.join("pids.max"), "4").unwrap();
    let out = Command::new("sh")
        .args([
            "-c",
            &format!(
                "echo $$ > {}/cgroup.procs && exec {BIN} io --size 1m --numjobs 8 --runtime 100ms --no-kstat",
                cg.display()
            ),
        ])
        .output()
        .unwrap();
    let _ = fs::remove_dir(&cg);
    assert_fails(
        &out,
        1,
        &["cannot start job thread", "pids cgroup", "allows 4 tasks"],
    );
}

/// Job files are bounded for `io --fio` and `fio` alike: more than 128
/// sections or 1 MiB is refused before anything runs (a 10 MB file used to
/// be read whole), and a FIFO is refused without blocking on it.
#[test]
fn job_files_are_bounded_for_io_and_fio() {
    let dir = tempfile::tempdir().unwrap();
    let many = dir.path().join("many.fio");
    let mut text = String::from("[global]\nrw=read\nsize=1m\n");
    for i in 0..129 {
        text.push_str(&format!("[j{i}]\n"));
    }
    fs::write(&many, text).unwrap();
    let big = dir.path().join("big.fio");
    let mut text = String::from("[job]\nrw=read\nsize=1m\n");
    text.push_str(&format!("; {}\n", "x".repeat(1000)).repeat(2100));
    fs::write(&big, text).unwrap();
    let fifo = dir.path().join("fifo.fio");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for cmd in ["io --fio", "fio"] {
        for (file, want) in [
            (&many, "129 job sections, more than the 128"),
            (&big, "not a regular file of at most 1048576 bytes"),
            (&fifo, "not a regular file"),
        ] {
            let out = run(&format!("{cmd} {}", file.display()));
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
            assert!(err.contains(want), "{cmd}: {err}");
        }
    }
    assert_eq!(listing(dir.path()), ["big.fio", "fifo.fio", "many.fio"]);
}
