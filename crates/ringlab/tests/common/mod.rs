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
