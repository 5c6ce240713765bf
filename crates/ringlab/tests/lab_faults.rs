//! The lab under hostile inputs and kills: `report`, `compare` and `sweep`
//! refuse devices, FIFOs and oversized files in a moment instead of reading
//! them; `report` skips files that are not results with a warning; a sweep
//! killed with SIGKILL leaves no data file in the current directory and no
//! temporary file in its results.

mod common;

use common::*;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn run_in(cwd: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args).current_dir(cwd);
    run_limited(cmd)
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(p(path)).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A two-run sweep of 50 ms `io` runs on a 4 MiB file in `dir`.
fn small_sweep(dir: &Path) -> PathBuf {
    let target = dir.join("t.dat");
    std::fs::write(&target, vec![0u8; 4 << 20]).unwrap();
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "command = \"io\"\n[options]\nruntime = \"50ms\"\nsize = \"4m\"\ntarget = \"{}\"\n[axes]\niodepth = [1, 2, 4]\n",
            target.display()
        ),
    )
    .unwrap();
    let out = dir.join("sweep");
    let run = run_in(dir, &["sweep", p(&plan), "--output", p(&out)]);
    assert_ok(&run);
    out
}

#[test]
fn lab_commands_refuse_devices_fifos_and_oversized_files_without_reading_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fifo = d.join("fifo");
    mkfifo(&fifo);
    // Sparse: as big as it says, without writing 65 MiB.
    let huge = d.join("huge.json");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(65 << 20)
        .unwrap();
    let cases: [(&[&str], &[&str]); 6] = [
        (
            &["compare", "/dev/zero", p(&huge)],
            &["/dev/zero", "character device, not a regular file"],
        ),
        (
            &["compare", p(&huge), p(&fifo)],
            &["huge.json", "more than the 64 MiB"],
        ),
        (&["compare", p(&fifo), p(&fifo)], &["fifo", "a FIFO"]),
        (
            &["sweep", "/dev/zero", "--output", "o"],
            &["/dev/zero", "character device"],
        ),
        (&["sweep", p(&fifo), "--dry-run"], &["fifo", "a FIFO"]),
        (&["report", p(&fifo)], &["index.json", "Not a directory"]),
    ];
    for (args, wants) in cases {
        // run_limited fails a command that reads on (or blocks) for 30 s.
        assert_fails(&run_in(d, args), 2, wants);
    }
    assert!(!d.join("o").exists(), "a refused plan wrote a directory");

    // A results directory whose index is a device or too big.
    let out = small_sweep(d);
    std::fs::rename(out.join("index.json"), d.join("index.saved")).unwrap();
    symlink("/dev/zero", out.join("index.json")).unwrap();
    assert_fails(
        &run_in(d, &["report", p(&out)]),
        2,
        &["index.json", "character device"],
    );
    std::fs::remove_file(out.join("index.json")).unwrap();
    std::fs::File::create(out.join("index.json"))
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    assert_fails(
        &run_in(d, &["report", p(&out)]),
        2,
        &["index.json", "more than the 256 MiB"],
    );
}

#[test]
fn report_skips_files_that_are_not_results_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = small_sweep(d);
    let runs = out.join("runs");
    // 0000 stays a result; 0001 parses but is no result; 0002 is not JSON.
    std::fs::write(runs.join("0001.json"), "{\"hello\": \"world\"}").unwrap();
    std::fs::write(runs.join("0002.json"), "{\"total\": {").unwrap();
    let rep = d.join("report");
    let r = run_in(d, &["report", p(&out), "--output", p(&rep)]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("ringlab report: warning: skipped "))
        .collect();
    assert_eq!(warnings.len(), 2, "{err}");
    assert!(
        warnings[0].contains("0001.json") && warnings[0].contains("not a ringlab result"),
        "{err}"
    );
    assert!(
        warnings[1].contains("0002.json") && warnings[1].contains("not JSON"),
        "{err}"
    );
    // Counted as not run, not as done.
    let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
    assert!(md.contains("1 of 3 runs done"), "{md}");
    assert!(md.contains("2 not run yet"), "{md}");
    let runs_csv = std::fs::read_to_string(rep.join("runs.csv")).unwrap();
    assert_eq!(runs_csv.lines().count(), 2, "{runs_csv}");

    // A result of another command, a device in place of a result: skipped.
    let mut http: serde_json::Value =
        serde_json::from_slice(&std::fs::read(runs.join("0000.json")).unwrap()).unwrap();
    http["command"] = "http".into();
    std::fs::write(runs.join("0000.json"), http.to_string()).unwrap();
    std::fs::remove_file(runs.join("0001.json")).unwrap();
    symlink("/dev/zero", runs.join("0001.json")).unwrap();
    let r = run_in(d, &["report", p(&out), "--output", p(&rep)]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(err.contains("command \"http\", the sweep's is io"), "{err}");
    assert!(err.contains("character device"), "{err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("ringlab: ") && last.contains("no readable results (3 skipped"),
        "{err}"
    );
}

/// Pids of live processes whose command line holds `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let state = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = state
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'));
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !zombie && cmdline.contains(needle) {
            pids.push(pid);
        }
    }
    pids
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn a_sweep_killed_by_sigkill_leaves_no_data_file_in_the_current_directory_nor_a_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    // No target: each run creates its own data file.
    std::fs::write(
        cwd.join("plan.toml"),
        "command = \"io\"\n[options]\nruntime = \"400ms\"\nsize = \"16m\"\n[axes]\niodepth = [1, 2, 4]\n",
    )
    .unwrap();
    let out = cwd.join("sweep");
    let scratch = out.join(".scratch");
    // An absolute --output: the run's --directory names it, so the run can
    // be found by its command line.
    let mut sweep = Command::new(BIN)
        .args(["sweep", "plan.toml", "--output", p(&out)])
        .current_dir(cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it while a run is under way. The run unlinks its data file
    // right after creating it (so even SIGKILL of the run leaves none), so
    // the run is found by its command line, not by its file.
    let needle = format!("--directory {}", scratch.display());
    let start = Instant::now();
    while processes_with(&needle).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no run started: {:?}",
            files_in(&scratch)
        );
        assert!(sweep.try_wait().unwrap().is_none(), "the sweep ended early");
        std::thread::sleep(Duration::from_millis(2));
    }
    // Let the run get past its layout.
    std::thread::sleep(Duration::from_millis(100));
    sweep.kill().unwrap();
    sweep.wait().unwrap();
    // The orphaned run gets SIGTERM (PDEATHSIG) and ends by itself.
    let start = Instant::now();
    while !processes_with(&needle).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the killed sweep's run goes on"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(files_in(cwd), ["plan.toml", "sweep"], "left in the cwd");
    // The run got one SIGTERM (the sweep keeps no threads that would pass
    // it on, and signal it again, as they die) and removed its file itself.
    assert!(files_in(&scratch).is_empty(), "{:?}", files_in(&scratch));
    let runs = files_in(&out.join("runs"));
    assert!(
        runs.iter().all(|n| !n.starts_with('.')),
        "a temporary file was left: {runs:?}"
    );
    for n in &runs {
        let len = std::fs::metadata(out.join("runs").join(n)).unwrap().len();
        assert!(len > 0, "{n} is empty");
    }
    // Whatever a killed run could not remove, the next sweep does.
    std::fs::write(scratch.join("ringlab-io-999999.dat"), "left").unwrap();
    let again = run_in(cwd, &["sweep", "plan.toml", "--output", p(&out)]);
    assert_ok(&again);
    assert!(files_in(&scratch).is_empty(), "{:?}", files_in(&scratch));
    assert_eq!(files_in(cwd), ["plan.toml", "sweep"]);
    assert_eq!(files_in(&out.join("runs")).len(), 3);
}

/// `report --output D` never replaces a user's file in D, never writes
/// into the sweep's own runs/, and replaces its own pages on a rerun.
#[test]
fn report_never_overwrites_user_files_nor_writes_into_the_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = small_sweep(tmp.path());
    let runs_before = files_in(&sweep.join("runs"));
    let out = run_in(
        tmp.path(),
        &["report", p(&sweep), "--output", p(&sweep.join("runs"))],
    );
    assert_fails(&out, 2, &["runs/", "name a directory outside it"]);
    assert_eq!(files_in(&sweep.join("runs")), runs_before);
    let d = tmp.path().join("mine");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("report.md"), "my notes\n").unwrap();
    let out = run_in(tmp.path(), &["report", p(&sweep), "--output", p(&d)]);
    assert_fails(&out, 2, &["report.md", "ringlab did not write"]);
    assert_eq!(
        std::fs::read_to_string(d.join("report.md")).unwrap(),
        "my notes\n"
    );
    assert_eq!(files_in(&d), vec!["report.md".to_string()]);
    // Its own report is replaced on a rerun without asking.
    let own = tmp.path().join("rep");
    for _ in 0..2 {
        assert_ok(&run_in(
            tmp.path(),
            &["report", p(&sweep), "--output", p(&own)],
        ));
    }
}

/// A sweep refused because its directory holds other files adds nothing
/// to it.
#[test]
fn a_refused_sweep_leaves_the_directory_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("plan.toml");
    std::fs::write(
        &plan,
        "command = \"io\"\n[options]\nruntime = \"50ms\"\nsize = \"1m\"\n[axes]\niodepth = [1]\n",
    )
    .unwrap();
    let d = tmp.path().join("full");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("thesis.tex"), "x").unwrap();
    let out = run_in(tmp.path(), &["sweep", p(&plan), "--output", p(&d)]);
    assert_fails(&out, 2, &["holds other files"]);
    assert_eq!(files_in(&d), vec!["thesis.tex".to_string()]);
}

/// `reproduce` killed (SIGINT or SIGKILL) resumes when run again: its
/// data file has no PID in its name, so the plans are the same; the rerun
/// reuses a whole data file and removes it at the end.
#[test]
fn reproduce_resumes_after_any_signal() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let line = [
        "reproduce",
        "sqpoll-one-core",
        "--run-time",
        "300ms",
        "--output",
        p(&out),
    ];
    for sig in [libc::SIGINT, libc::SIGKILL] {
        let _ = std::fs::remove_dir_all(&out);
        let mut child = Command::new(BIN)
            .args(line)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !out.join("sqpoll-one-core").is_dir() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no recipe directory"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let _ = child.wait();
        // Its data files are gone before any rerun: removed by the run
        // itself on SIGINT, by its cleaner process after SIGKILL.
        let start = Instant::now();
        loop {
            let dots: Vec<String> = files_in(&out)
                .into_iter()
                .filter(|n| n.starts_with('.'))
                .collect();
            if dots.is_empty() {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "left after signal {sig}: {dots:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let again = run_in(tmp.path(), &line);
        assert_ok(&again);
        let left: Vec<String> = files_in(&out)
            .into_iter()
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(left.is_empty(), "after signal {sig}: {left:?}");
    }
}
