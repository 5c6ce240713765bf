//! Running a sweep: each run is a child process of the ringlab binary
//! itself (`ringlab io ... --output-format json --output FILE`), so a run in
//! a sweep is exactly the run a person would start by hand, and a crash or
//! leak in one run cannot touch the next.

use crate::input::RESULT_MAX_BYTES;
use crate::plan::{Plan, PlannedRun};
use crate::store::{
    existing_index, parse_result, read_result, scratch_dir, write_atomic, RunEntry, Status, Store,
};
use anyhow::{Context, Result};
use ringlab_core::usage_error;
use ringlab_stats::units::format_wall;
use rustix::process::{kill_process, Pid, Signal};
use serde_json::Value as Json;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

/// Enough of a failed run's stderr for its last line.
const STDERR_KEEP_BYTES: usize = 64 << 10;
use std::process::{Child, Command, Stdio};
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
pub(crate) fn run_planned(
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
        let result = read_result(&store.result_path(&finished), &plan.command).ok();
        progress.finish(&finished, wall, result.as_ref(), todo.len() - k - 1);
    }
    progress.clear();
    if let Some(e) = failures(&store) {
        return Err(e);
    }
    Ok(SweepSummary {
        total,
        done: store.index.done(),
        ran_now,
        done_before,
    })
}

/// The error of a sweep that ended with failed runs, naming the first.
fn failures(store: &Store) -> Option<anyhow::Error> {
    let failed: Vec<&RunEntry> = store
        .index
        .runs
        .iter()
        .filter(|r| r.status == Status::Failed)
        .collect();
    let first = failed.first()?;
    let dir = store.dir.display();
    Some(anyhow::anyhow!(
        "{} of {} runs failed (first: run {} ({}): {}); the others are stored in {dir}; see {dir}/index.json, run the sweep again to retry the failed runs",
        failed.len(),
        store.index.runs.len(),
        first.id,
        first.label(),
        first.error.as_deref().unwrap_or("no message"),
    ))
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
    let mut child = spawn_run(store, entry, plan, opts)?;
    // Both pipes are drained while the child runs, so that it never blocks
    // on a full pipe; each keeps a bounded part. No reader threads: the
    // sweep stays single-threaded while a run goes on, because Linux sends
    // the parent-death signal again each time a dying parent's threads hand
    // the child on to one another, and a second SIGTERM ends a ringlab run
    // at once, before it removes its data file.
    let mut stdout = Drain::new(child.stdout.take().context("child stdout")?, Keep::Head)?;
    let mut stderr = Drain::new(child.stderr.take().context("child stderr")?, Keep::Tail)?;
    let mut signalled = false;
    let status = loop {
        stdout.pump();
        stderr.pump();
        if let Some(status) = child.try_wait().context("waiting for a run")? {
            stdout.pump();
            stderr.pump();
            break status;
        }
        if !signalled && opts.interrupted.load(Ordering::Relaxed) {
            // Our own child, not yet reaped: its pid is still its own. Gone
            // already, it has nothing left to stop.
            let _ = kill_process(Pid::from_child(&child), Signal::INT);
            signalled = true;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let result = Captured {
        truncated: stdout.dropped > 0,
        bytes: stdout.kept,
    };
    let err_text = String::from_utf8_lossy(&stderr.kept).into_owned();
    store.clean_scratch();
    Ok(if signalled || opts.interrupted.load(Ordering::Relaxed) {
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
        match check_result(&result, plan) {
            Ok(()) => {
                // Written whole to a temporary file and renamed: a sweep
                // killed at any moment leaves a complete result or none.
                write_atomic(&store.result_path(entry), &result.bytes)
                    .context("storing a run's result")?;
                Outcome::Done
            }
            Err(why) => Outcome::Failed(why),
        }
    })
}

/// Starts the child of one run: `ringlab ARGS --output-format json`, its
/// result read from its standard output (no file of its own to leave behind).
fn spawn_run(store: &Store, entry: &RunEntry, plan: &Plan, opts: &SweepOptions) -> Result<Child> {
    let mut cmd = Command::new(&opts.exe);
    cmd.args(&entry.args)
        .args(scratch_args(plan, &store.dir))
        .arg("--output-format")
        .arg("json")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: a Ctrl-C at the terminal reaches the sweep
        // only, which then stops the child once, so that the child can end
        // its run cleanly (a second signal would end it at once).
        .process_group(0);
    // When the sweep dies (even by SIGKILL) the child gets SIGTERM, ends
    // its run and removes the files it created, instead of running on
    // orphaned.
    ringlab_core::child::die_with_parent(&mut cmd, &[]);
    cmd.spawn()
        .with_context(|| format!("starting {}", opts.exe.display()))
}

/// `--directory DIR/.scratch` for an `io` plan that names no target, no
/// directory and no `keep`: the data file each run creates lives in the
/// results directory, so a run killed together with its sweep leaves nothing
/// in the current directory, and the next sweep removes what it left.
fn scratch_args(plan: &Plan, dir: &Path) -> Vec<OsString> {
    let named = |k: &str| plan.options.contains_key(k) || plan.axes.contains_key(k);
    if plan.command != "io" || ["target", "directory", "keep"].iter().any(|k| named(k)) {
        return Vec::new();
    }
    vec!["--directory".into(), scratch_dir(dir).into_os_string()]
}

/// What a child printed on its standard output: the first
/// [`RESULT_MAX_BYTES`], and whether there was more.
struct Captured {
    bytes: Vec<u8>,
    truncated: bool,
}

/// Which part of a pipe's output is kept.
#[derive(Clone, Copy, PartialEq)]
enum Keep {
    /// The first [`RESULT_MAX_BYTES`] (a result).
    Head,
    /// About the last [`STDERR_KEEP_BYTES`] (its last line is the message a
    /// failed run is stored with).
    Tail,
}

/// One of a child's output pipes, read without blocking on each tick of the
/// wait loop until its end; what is not kept is read and dropped.
struct Drain<R> {
    pipe: Option<R>,
    keep: Keep,
    kept: Vec<u8>,
    dropped: u64,
}

impl<R: Read + AsFd> Drain<R> {
    fn new(pipe: R, keep: Keep) -> Result<Drain<R>> {
        rustix::io::ioctl_fionbio(&pipe, true).context("making a run's pipe non-blocking")?;
        Ok(Drain {
            pipe: Some(pipe),
            keep,
            kept: Vec::new(),
            dropped: 0,
        })
    }

    /// Reads what the pipe holds now.
    fn pump(&mut self) {
        let mut buf = [0u8; 16384];
        while let Some(pipe) = &mut self.pipe {
            match pipe.read(&mut buf) {
                Ok(0) => self.pipe = None,
                Ok(n) => self.take(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(_) => self.pipe = None,
            }
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        match self.keep {
            Keep::Head => {
                let room = (RESULT_MAX_BYTES as usize).saturating_sub(self.kept.len());
                let n = room.min(bytes.len());
                self.kept.extend_from_slice(&bytes[..n]);
                self.dropped += (bytes.len() - n) as u64;
            }
            Keep::Tail => {
                self.kept.extend_from_slice(bytes);
                if self.kept.len() > 2 * STDERR_KEEP_BYTES {
                    let cut = self.kept.len() - STDERR_KEEP_BYTES;
                    self.kept.drain(..cut);
                    self.dropped += cut as u64;
                }
            }
        }
    }
}

/// A result worth storing: JSON with the figures, from the right command.
fn check_result(out: &Captured, plan: &Plan) -> std::result::Result<(), String> {
    if out.truncated {
        return Err(format!(
            "the run printed more than {} MiB on its standard output: not a result",
            RESULT_MAX_BYTES >> 20
        ));
    }
    if out.bytes.is_empty() {
        return Err("the run printed no result".to_string());
    }
    parse_result(&out.bytes, &plan.command)
        .map(drop)
        .map_err(|why| format!("the run's output is {why}"))
}

fn last_line(text: &str) -> String {
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no message)");
    line.trim().trim_start_matches("ringlab: ").to_string()
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
            Some(p) => format!("~{} left", format_wall(p * remaining as u32)),
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
            (None, Some(r)) => format!("{} in {}", headline(r), format_wall(wall)),
            (None, None) => format!("done in {}", format_wall(wall)),
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
        out.push_str(&format!(", about {} with pauses", format_wall(d)));
    }
    out.push('\n');
    let done = runs.iter().filter(|r| status_of(&r.id) == "done").count();
    if index.is_some() {
        out.push_str(&format!("{done} of {} already done\n", runs.len()));
    }
    // Runs that create their data file do so in DIR's scratch directory.
    let extra = dir.map(|d| scratch_args(plan, d)).unwrap_or_default();
    for (n, r) in runs.iter().enumerate() {
        out.push_str(&format!(
            "{:>5}  {}  {:<7}  {:<40}  ringlab {}\n",
            n + 1,
            r.id,
            status_of(&r.id),
            r.label(),
            ringlab_core::shell::join(
                &r.args
                    .iter()
                    .cloned()
                    .chain(extra.iter().map(|a| a.to_string_lossy().into_owned()))
                    .collect::<Vec<_>>()
            )
        ));
    }
    Ok(out)
}
