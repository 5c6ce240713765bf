//! Running a sweep: each run is a child process of the ringlab binary
//! itself (`ringlab io ... --output-format json --output FILE`), so a run in
//! a sweep is exactly the run a person would start by hand, and a crash or
//! leak in one run cannot touch the next.

use crate::plan::{Plan, PlannedRun};
use crate::store::{existing_index, RunEntry, Status, Store};
use anyhow::{Context, Result};
use ringlab_core::usage_error;
use serde_json::Value as Json;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The sweep was stopped by SIGINT/SIGTERM; finished runs are kept. The
/// binary exits 130 for it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Interrupted(pub String);

pub struct SweepOptions {
    /// The ringlab binary that runs each run.
    pub exe: PathBuf,
    /// Set by the signal handler.
    pub interrupted: Arc<AtomicBool>,
    /// Draw a progress bar (stderr is a terminal) instead of a line per run.
    pub progress_bar: bool,
}

/// What a finished sweep did.
#[derive(Debug)]
pub struct SweepSummary {
    pub total: usize,
    pub done: usize,
    pub ran_now: usize,
    pub done_before: usize,
}

enum Outcome {
    Done,
    /// The child refused its arguments (exit 2): the plan is wrong.
    Refused(String),
    Failed(String),
    Interrupted,
}

/// Runs every run of `plan` not yet done in `dir`, in the plan's order.
pub fn run_sweep(plan: &Plan, dir: &Path, opts: &SweepOptions) -> Result<SweepSummary> {
    run_planned(plan, &plan.runs(), dir, opts)
}

/// Runs `runs` (made from `plan`, their arguments possibly rewritten, as
/// `advise` does) in the sweep store layout of `dir`.
pub fn run_planned(
    plan: &Plan,
    runs: &[PlannedRun],
    dir: &Path,
    opts: &SweepOptions,
) -> Result<SweepSummary> {
    let mut store = Store::open(dir, plan, runs)?;
    let total = store.index.runs.len();
    let done_before = store.index.done();
    let todo: Vec<usize> = (0..total)
        .filter(|&i| store.index.runs[i].status != Status::Done)
        .collect();
    let mut progress = Progress::new(opts.progress_bar, total, done_before, plan);
    let mut ran_now = 0;
    for (k, &i) in todo.iter().enumerate() {
        if k > 0 {
            if let Some(p) = plan.pause {
                sleep_unless_interrupted(p, &opts.interrupted);
            }
        }
        if opts.interrupted.load(Ordering::Relaxed) {
            return Err(interrupted(&store));
        }
        let entry = store.index.runs[i].clone();
        progress.start(&entry);
        let started = Instant::now();
        let outcome = run_one(&store, &entry, plan, opts)?;
        let wall = started.elapsed();
        let slot = &mut store.index.runs[i];
        match outcome {
            Outcome::Done => {
                slot.status = Status::Done;
                slot.error = None;
                slot.wall_s = Some(wall.as_secs_f64());
                ran_now += 1;
            }
            Outcome::Failed(msg) => {
                slot.status = Status::Failed;
                slot.error = Some(msg);
                slot.wall_s = Some(wall.as_secs_f64());
            }
            Outcome::Refused(line) => {
                store.save()?;
                progress.clear();
                return Err(usage_error(format!(
                    "run {} ({}) was refused: {line}; fix that value in the plan's [options] or [axes] (nothing else was run after it)",
                    entry.id,
                    entry.label()
                )));
            }
            Outcome::Interrupted => {
                progress.clear();
                return Err(interrupted(&store));
            }
        }
        store.save()?;
        let finished = store.index.runs[i].clone();
        let result = read_result(&store.result_path(&finished));
        progress.finish(&finished, wall, result.as_ref(), todo.len() - k - 1);
    }
    progress.clear();
    let failed: Vec<&RunEntry> = store
        .index
        .runs
        .iter()
        .filter(|r| r.status == Status::Failed)
        .collect();
    if let Some(first) = failed.first() {
        return Err(anyhow::anyhow!(
            "{} of {total} runs failed (first: run {} ({}): {}); the others are stored in {}; see {}/index.json, run the sweep again to retry the failed runs",
            failed.len(),
            first.id,
            first.label(),
            first.error.as_deref().unwrap_or("no message"),
            dir.display(),
            dir.display()
        ));
    }
    Ok(SweepSummary {
        total,
        done: store.index.done(),
        ran_now,
        done_before,
    })
}

fn interrupted(store: &Store) -> anyhow::Error {
    anyhow::Error::new(Interrupted(format!(
        "sweep interrupted with {} of {} runs done; run the same command again to resume (finished runs are kept in {})",
        store.index.done(),
        store.index.runs.len(),
        store.dir.display()
    )))
}

fn sleep_unless_interrupted(d: Duration, flag: &AtomicBool) {
    let end = Instant::now() + d;
    while Instant::now() < end && !flag.load(Ordering::Relaxed) {
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(20)));
    }
}

/// Runs one child to its end and stores its result.
fn run_one(store: &Store, entry: &RunEntry, plan: &Plan, opts: &SweepOptions) -> Result<Outcome> {
    let tmp = store.temp_path(entry);
    let mut cmd = Command::new(&opts.exe);
    cmd.args(&entry.args)
        .arg("--output-format")
        .arg("json")
        .arg("--output")
        .arg(&tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        // Its own process group: a Ctrl-C at the terminal reaches the sweep
        // only, which then stops the child once, so that the child can end
        // its run cleanly (a second signal would end it at once).
        .process_group(0);
    // SAFETY: prctl only, which is async-signal-safe, between fork and exec:
    // when the sweep dies (even by SIGKILL) the child gets SIGTERM, ends its
    // run and removes the files it created, instead of running on orphaned.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", opts.exe.display()))?;
    let mut stderr = child.stderr.take().context("child stderr")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut signalled = false;
    let status = loop {
        if let Some(status) = child.try_wait().context("waiting for a run")? {
            break status;
        }
        if !signalled && opts.interrupted.load(Ordering::Relaxed) {
            // SAFETY: kill(2) on the pid of our own child, not yet reaped.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            signalled = true;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let err_text = reader.join().unwrap_or_default();
    let outcome = if signalled || opts.interrupted.load(Ordering::Relaxed) {
        // A run cut short measured something else than planned: not stored.
        Outcome::Interrupted
    } else if status.code() == Some(2) {
        Outcome::Refused(last_line(&err_text))
    } else if !status.success() {
        let why = match status.code() {
            Some(c) => format!("exit code {c}"),
            None => "killed by a signal".to_string(),
        };
        Outcome::Failed(format!("{}: {why}", last_line(&err_text)))
    } else {
        match check_result(&tmp, plan) {
            Ok(()) => {
                std::fs::rename(&tmp, store.result_path(entry))
                    .context("storing a run's result")?;
                Outcome::Done
            }
            Err(why) => Outcome::Failed(why),
        }
    };
    let _ = std::fs::remove_file(&tmp);
    Ok(outcome)
}

/// A result worth storing: JSON with the figures, from the right command.
fn check_result(path: &Path, plan: &Plan) -> std::result::Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("the run wrote no result: {e}"))?;
    let v: Json =
        serde_json::from_slice(&bytes).map_err(|e| format!("the run's result is not JSON: {e}"))?;
    if !v["total"].is_object() {
        return Err("the run's result has no 'total' figures".to_string());
    }
    if v["command"].as_str() != Some(plan.command.as_str()) {
        return Err(format!(
            "the run's result is of command {}, the plan's is {}",
            v["command"], plan.command
        ));
    }
    Ok(())
}

fn read_result(path: &Path) -> Option<Json> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn last_line(text: &str) -> String {
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no message)");
    line.trim().trim_start_matches("ringlab: ").to_string()
}

/// `3m20s`, `12s`, `0.4s`.
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 10.0 {
        format!("{s:.1}s")
    } else if s < 60.0 {
        format!("{s:.0}s")
    } else if s < 3600.0 {
        format!("{}m{:02}s", (s / 60.0) as u64, (s % 60.0) as u64)
    } else {
        format!(
            "{}h{:02}m",
            (s / 3600.0) as u64,
            ((s % 3600.0) / 60.0) as u64
        )
    }
}

/// Runs done / total, the current run and the time left, on stderr: a bar
/// redrawn in place on a terminal, one line per finished run otherwise (so
/// logs stay readable).
struct Progress {
    bar: bool,
    total: usize,
    done: usize,
    started: Instant,
    ran: u32,
    /// Planned per-run time (runtime + pause), until runs are measured.
    per_run_guess: Option<Duration>,
    pause: Duration,
}

impl Progress {
    fn new(bar: bool, total: usize, done: usize, plan: &Plan) -> Progress {
        let per_run_guess = plan.estimated_duration().map(|d| d / (total.max(1) as u32));
        Progress {
            bar,
            total,
            done,
            started: Instant::now(),
            ran: 0,
            per_run_guess,
            pause: plan.pause.unwrap_or_default(),
        }
    }

    fn left(&self, remaining: usize) -> String {
        let per_run = if self.ran > 0 {
            Some(self.started.elapsed() / self.ran + self.pause)
        } else {
            self.per_run_guess
        };
        match per_run {
            Some(p) => format!("~{} left", human_duration(p * remaining as u32)),
            None => "time left unknown".to_string(),
        }
    }

    fn start(&mut self, entry: &RunEntry) {
        if !self.bar {
            return;
        }
        let remaining = self.total - self.done;
        const WIDTH: usize = 24;
        let filled = (self.done * WIDTH).checked_div(self.total).unwrap_or(0);
        let mut label = format!("run {} {}", entry.id, entry.label());
        if label.chars().count() > 60 {
            label = label.chars().take(59).collect::<String>() + "…";
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K[{}{}] {}/{} {label}  {}",
            "#".repeat(filled),
            "-".repeat(WIDTH - filled),
            self.done,
            self.total,
            self.left(remaining)
        );
        let _ = err.flush();
    }

    fn finish(&mut self, entry: &RunEntry, wall: Duration, result: Option<&Json>, left: usize) {
        if entry.status == Status::Done {
            self.done += 1;
            self.ran += 1;
        }
        if self.bar {
            if let Some(e) = &entry.error {
                self.clear();
                eprintln!(
                    "ringlab sweep: run {} ({}) failed: {e}",
                    entry.id,
                    entry.label()
                );
            }
            return;
        }
        let what = match (&entry.error, result) {
            (Some(e), _) => format!("failed: {e}"),
            (None, Some(r)) => format!("{} in {}", headline(r), human_duration(wall)),
            (None, None) => format!("done in {}", human_duration(wall)),
        };
        eprintln!(
            "ringlab sweep: [{}/{}] run {} {}: {what}, {}",
            self.done,
            self.total,
            entry.id,
            entry.label(),
            self.left(left)
        );
    }

    fn clear(&self) {
        if self.bar {
            eprint!("\r\x1b[2K");
        }
    }
}

/// `412.3k IOPS, p99 4.2us` from a result.
fn headline(r: &Json) -> String {
    let unit = if r["command"] == "http" {
        "req/s"
    } else {
        "IOPS"
    };
    let mut s = match r["total"]["iops"].as_f64() {
        Some(v) => format!("{} {unit}", ringlab_stats::units::format_rate(v)),
        None => "no throughput".to_string(),
    };
    if let Some(p99) = r["total"]["lat_ns"]["p99"].as_f64() {
        s.push_str(&format!(", p99 {}", ringlab_stats::units::format_ns(p99)));
    }
    s
}

/// The text of `--dry-run`: every run in execution order with its status
/// (from DIR when it holds this plan's sweep) and its command line.
pub fn dry_run(plan: &Plan, dir: Option<&Path>) -> Result<String> {
    let runs = plan.runs();
    let index = match dir {
        Some(d) if d.exists() => existing_index(d, plan)?,
        _ => None,
    };
    let status_of = |id: &str| -> &'static str {
        let Some(index) = &index else {
            return "pending";
        };
        match index.runs.iter().find(|r| r.id == id) {
            Some(r) if dir.is_some_and(|d| d.join(&r.result).exists()) => "done",
            Some(r) if r.status == Status::Failed => "failed",
            _ => "pending",
        }
    };
    let mut out = String::new();
    let combos = plan.combinations();
    out.push_str(&format!(
        "sweep of 'ringlab {}': {} runs ({combos} combination{} x {} repeat{}), {}",
        plan.command,
        runs.len(),
        if combos == 1 { "" } else { "s" },
        plan.repeats,
        if plan.repeats == 1 { "" } else { "s" },
        if plan.shuffle {
            format!("shuffled (seed {})", plan.seed)
        } else {
            "in plan order".to_string()
        }
    ));
    if let Some(d) = plan.estimated_duration() {
        out.push_str(&format!(", about {} with pauses", human_duration(d)));
    }
    out.push('\n');
    let done = runs.iter().filter(|r| status_of(&r.id) == "done").count();
    if index.is_some() {
        out.push_str(&format!("{done} of {} already done\n", runs.len()));
    }
    for (n, r) in runs.iter().enumerate() {
        out.push_str(&format!(
            "{:>5}  {}  {:<7}  {:<40}  ringlab {}\n",
            n + 1,
            r.id,
            status_of(&r.id),
            r.label(),
            r.args
                .iter()
                .map(|a| quote(a))
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    Ok(out)
}

/// An argument as a shell would need it (for the dry-run listing).
fn quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=+,@%".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}
