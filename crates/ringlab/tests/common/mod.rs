//! Helpers shared by the end-to-end suites: run the binary with a time
//! limit, parse its JSON, look for files left behind.
#![allow(dead_code)]

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_ringlab");

/// Splits a command line on whitespace (test paths hold no spaces).
pub fn argv(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

/// Runs `cmd` with a 30 s limit; a hang fails the test instead of the suite.
pub fn run_limited(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ringlab");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("ringlab {cmd:?} did not finish in 30 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("output")
}

/// Runs `ringlab LINE`.
pub fn ringlab(line: &str) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(argv(line));
    run_limited(cmd)
}

/// Runs `ringlab LINE` with `before_exec` called in the child between fork
/// and exec (to drop privileges or capabilities, or install a seccomp
/// filter); its error fails the spawn.
///
/// # Safety
///
/// `before_exec` runs in the forked child of a multi-threaded process: it
/// may make only async-signal-safe calls (see `CommandExt::pre_exec`).
pub unsafe fn ringlab_with(
    line: &str,
    before_exec: impl FnMut() -> std::io::Result<()> + Send + Sync + 'static,
) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(BIN);
    cmd.args(argv(line));
    // SAFETY: the caller's promise (this function's contract).
    unsafe { cmd.pre_exec(before_exec) };
    run_limited(cmd)
}

/// The JSON on the stdout of a run that must have succeeded.
pub fn ok_json_of(out: &Output) -> Value {
    assert_ok(out);
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

/// Runs `ringlab LINE --output-format json`, which must succeed.
pub fn json_run(line: &str) -> Value {
    let out = ringlab(&format!("{line} --output-format json"));
    assert!(
        out.status.success(),
        "ringlab {line} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

/// Runs `ringlab LINE` as given (its --output-format names a JSON format),
/// which must succeed, and parses its stdout.
pub fn ok_json(line: &str) -> Value {
    ok_json_of(&ringlab(line))
}

/// Asserts that a run succeeded; its stderr is the failure message.
pub fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Asserts a usage or run failure: the exit code, one line on stderr that
/// starts with `ringlab: ` and contains every word of `wants`.
pub fn assert_fails(out: &Output, code: i32, wants: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    assert!(err.starts_with("ringlab: "), "{err}");
    for w in wants {
        assert!(err.contains(w), "{w:?} missing in: {err}");
    }
}

pub fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// The committed result schema, compiled.
pub fn schema_validator() -> jsonschema::Validator {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../schema/result.schema.json"
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("the committed schema compiles")
}

/// The schema `schema/NAME`, compiled.
pub fn schema_validator_for(name: &str) -> jsonschema::Validator {
    let path = format!("{}/../../schema/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).expect("the committed schema compiles")
}

/// Asserts that `v` follows `schema/NAME`, listing every violation.
pub fn assert_valid_against(name: &str, v: &Value) {
    let errors: Vec<String> = schema_validator_for(name)
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "does not follow {name}: {errors:#?}");
}

/// Asserts that `v` follows the committed schema, listing every violation.
pub fn assert_schema_valid(v: &Value) {
    let errors: Vec<String> = schema_validator()
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "result does not follow the schema: {errors:#?}"
    );
}

/// A `ringlab serve` child process on a free port of 127.0.0.1.
pub struct Server {
    child: Option<std::process::Child>,
    pub addr: String,
}

impl Server {
    /// Starts `ringlab serve --listen 127.0.0.1:0 EXTRA --output-format json`
    /// and waits for its "listening on" line.
    pub fn start(extra: &str) -> Server {
        use std::io::BufRead;
        let mut child = Command::new(BIN)
            .args(argv(&format!(
                "serve --listen 127.0.0.1:0 --output-format json {extra}"
            )))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ringlab serve");
        let mut line = String::new();
        let stderr = child.stderr.take().unwrap();
        std::io::BufReader::new(stderr)
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("ringlab serve: listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_string();
        Server {
            child: Some(child),
            addr,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// SIGTERM, then the JSON summary it prints.
    pub fn stop(mut self) -> Value {
        let mut child = self.child.take().unwrap();
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let start = Instant::now();
        while child.try_wait().unwrap().is_none() {
            assert!(start.elapsed() < Duration::from_secs(10), "serve hangs");
            std::thread::sleep(Duration::from_millis(10));
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "serve failed: {out:?}");
        serde_json::from_slice(&out.stdout).expect("serve prints one JSON object")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The per-op kernel figure `name` of result `r`, or `None` when this
/// machine cannot count `counter`: then it must be listed as unavailable
/// with its reason (reported as a skip), never given as a number. As root
/// ringlab can always count (it mounts tracefs itself where none is
/// mounted), so there a missing figure is a failure unless the kernel lacks
/// the tracepoint.
#[allow(dead_code)]
pub fn kstat_per_op(r: &Value, name: &str, counter: &str) -> Option<f64> {
    let k = &r["kstat"];
    if let Some(v) = k["per_op"][name].as_f64() {
        return Some(v);
    }
    let reason = unavailable_reason(k, counter)
        .unwrap_or_else(|| panic!("{name} neither measured nor listed unavailable: {k}"));
    let what = format!("{} ({name})", current_test());
    if reason.contains("kernel lacks it") {
        skip(&what, reason);
    } else {
        skip_root_only(&what, reason);
    }
    None
}

/// Why `counter` is listed under `unavailable` in the kernel evidence `k`
/// (a result's `kstat`), or `None` where it is not listed. Panics where
/// `k` has no such list.
#[allow(dead_code)]
pub fn unavailable_reason<'a>(k: &'a Value, counter: &str) -> Option<&'a str> {
    k["unavailable"]
        .as_array()
        .unwrap_or_else(|| panic!("no kstat.unavailable list: {k}"))
        .iter()
        .find(|u| u["counter"] == counter)
        .map(|u| u["reason"].as_str().unwrap_or_default())
}

/// The name of the running test (libtest names each test's thread after it).
pub fn current_test() -> String {
    std::thread::current()
        .name()
        .unwrap_or("unnamed test")
        .to_string()
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Reports that `name` (a test, or a case of one) cannot run on this
/// machine because it lacks hardware or a kernel feature (one CPU, no poll
/// queues, no tracepoint): one line `skipped NAME: REASON` on stderr, and
/// the same line appended to the file `RINGLAB_SKIP_LOG` names, if set, so
/// that CI counts skips (cargo test hides a passing test's stderr).
pub fn skip(name: &str, reason: &str) {
    let line = format!("skipped {name}: {reason}");
    eprintln!("{line}");
    if let Some(path) = std::env::var_os("RINGLAB_SKIP_LOG") {
        use std::io::Write;
        // One short write with O_APPEND: lines of parallel tests do not mix.
        let logged = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = logged {
            panic!("RINGLAB_SKIP_LOG {}: {e}", Path::new(&path).display());
        }
    }
}

/// Like [`skip`], for what only root can do, or what root can always do
/// (mounts, loop devices, every perf counter): a skip for a user, and a
/// failure when the tests run as root, as CI does, so a root-only test
/// never passes there without having run.
pub fn skip_root_only(name: &str, reason: &str) {
    assert!(
        !is_root(),
        "{name} did not run although the tests run as root: {reason}"
    );
    skip(name, reason);
}

/// Runs a command; its trimmed standard output, or what failed.
pub fn sh(cmd: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("{cmd}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A loop device over a file, detached (and unmounted) when dropped.
pub struct Loop {
    pub dev: String,
    pub mounted: Option<std::path::PathBuf>,
}

impl Loop {
    pub fn over(file: &Path) -> Result<Loop, String> {
        let dev = sh("losetup", &["-f", "--show", file.to_str().unwrap()])?;
        Ok(Loop { dev, mounted: None })
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        if let Some(m) = &self.mounted {
            let _ = sh("umount", &[m.to_str().unwrap()]);
        }
        let _ = sh("losetup", &["-d", &self.dev]);
    }
}

/// A zram device of its own (a bio-based block device: no non-blocking
/// I/O), added through zram-control and removed when dropped. Root only.
pub struct Zram {
    pub dev: String,
    id: String,
}

impl Zram {
    pub fn new(bytes: u64) -> Result<Zram, String> {
        let control = Path::new("/sys/class/zram-control/hot_add");
        if !control.exists() {
            sh("modprobe", &["zram", "num_devices=0"])
                .map_err(|e| format!("no zram-control and no zram module: {e}"))?;
        }
        let id = std::fs::read_to_string(control)
            .map_err(|e| format!("{}: {e}", control.display()))?
            .trim()
            .to_string();
        let z = Zram {
            dev: format!("/dev/zram{id}"),
            id,
        };
        let size = format!("/sys/block/zram{}/disksize", z.id);
        std::fs::write(&size, bytes.to_string()).map_err(|e| format!("{size}: {e}"))?;
        Ok(z)
    }
}

impl Drop for Zram {
    fn drop(&mut self) {
        let _ = std::fs::write(format!("/sys/block/zram{}/reset", self.id), "1");
        let _ = std::fs::write("/sys/class/zram-control/hot_remove", &self.id);
    }
}

/// Runs ringlab under a seccomp filter that fails io_uring_setup with
/// `errno`, as a container runtime's profile would.
#[cfg(target_arch = "x86_64")]
pub fn ringlab_without_io_uring(line: &str, errno: u32) -> std::process::Output {
    const SYS_IO_URING_SETUP: u32 = 425;
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    let stmt = |code: u16, k: u32| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jeq = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: 0x15,
        jt,
        jf,
        k,
    };
    let filter = [
        stmt(0x20, 4), // ld arch
        jeq(AUDIT_ARCH_X86_64, 1, 0),
        stmt(0x06, RET_ALLOW),
        stmt(0x20, 0), // ld nr
        jeq(SYS_IO_URING_SETUP, 0, 1),
        stmt(0x06, RET_ERRNO | errno),
        stmt(0x06, RET_ALLOW),
    ];
    // SAFETY: only async-signal-safe prctl calls between fork and exec; the
    // filter outlives the call because the closure owns it.
    unsafe {
        ringlab_with(line, move || {
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, 2, &prog as *const _ as libc::c_ulong) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// Runs `ringlab fio ARGS` in `dir`, with the suite's time limit.
pub fn fio(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir).arg("fio").args(args);
    run_limited(cmd)
}

/// Every line of a fio log (latency, bandwidth, IOPS) as its numbers, in
/// the log's order.
pub fn log_rows(path: &Path) -> Vec<Vec<u64>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| {
            l.split(", ")
                .map(|x| x.trim().parse().unwrap_or_else(|e| panic!("{l}: {e}")))
                .collect()
        })
        .collect()
}

/// (direction, length, offset) of each I/O in a fio latency log written
/// with log_offset=1, in the log's order.
pub fn lat_log_ios(path: &Path) -> Vec<(u32, u64, u64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(", ").collect();
            (
                f[2].trim().parse().unwrap(),
                f[3].trim().parse().unwrap(),
                f[4].trim().parse().unwrap(),
            )
        })
        .collect()
}

/// A new, empty scratch directory for one test:
/// `$TMPDIR/ringlab-SUITE-NAME-PID` (SUITE keeps the test binaries, which
/// run side by side, apart), emptied first if a previous run left it.
pub fn fresh_dir(suite: &str, name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("ringlab-{suite}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Whether a real fio 3.x is on the PATH (the tests that compare with it
/// run it; without it they check ringlab alone).
pub fn real_fio() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).starts_with("fio-3"))
}

/// The first JSON document of an output's stdout, after any text before it
/// (fio's json; with `--output-format json,normal` the text follows it).
pub fn first_json(out: &Output) -> Value {
    let t = String::from_utf8_lossy(&out.stdout);
    let t = &t[t.find('{').expect("json")..];
    serde_json::Deserializer::from_str(t)
        .into_iter::<Value>()
        .next()
        .unwrap()
        .unwrap()
}

/// The median of `v` (the mean of the middle two where the count is even);
/// `v` must not be empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
