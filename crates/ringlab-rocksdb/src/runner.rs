//! Runs the matrix: prepares the database, runs db_bench once per
//! configuration and repeat (pinned, counted), stores results, prints the
//! table that mirrors the study's Fig. 5.2.

use crate::dbbench::{self, BenchLine, Histogram};
use crate::evidence::{self, ProcessCounters, Samples, SAMPLE_PERIOD};
use crate::matrix::{self, Configuration};
use crate::{find_plugin, INSTALL};
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use ringlab_core::usage_error;
use ringlab_stats::{DirectionFigures, Figures, JobFigures, LatencySummary, RunResult};
use serde_json::{json, Value as Json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

const MARKER: &str = "ringlab-db.json";
const KEY_SIZE: u32 = 100;
const VALUE_SIZE: u32 = 100;
/// The study's seed for every run.
const SEED: u64 = 123_456_789;

#[derive(Args, Debug, Clone)]
pub struct RocksdbArgs {
    /// Database directory: reused if `ringlab rocksdb` made it with the same
    /// --keys, created (fillrandom) if missing or empty
    /// [default: /var/tmp/ringlab-rocksdb-UID-KEYS, one per user: another
    /// user's database there is never read or written].
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// Keys in the database (100-byte keys, 100-byte values; the study used
    /// 10M). The default builds in about a minute.
    #[arg(long, default_value_t = 5_000_000, value_name = "N")]
    pub keys: u64,
    /// Seconds of multireadrandom per run.
    #[arg(long, default_value_t = 10, value_name = "SECONDS")]
    pub duration: u32,
    /// Runs of each configuration (the table shows median and min-max).
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub repeats: u32,
    /// Configurations to run, comma-separated [default: all of P-DEF,
    /// P-SYNC, L-DEF, L-COOP, L-SQPOLL, L-ASYNC, L-DEFER, L-FIXED].
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub configs: Vec<String>,
    /// CPU db_bench is pinned to [default: the last allowed CPU].
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<u32>,
    /// CPU of the SQPOLL poller [default: another allowed CPU].
    #[arg(long, value_name = "CPU")]
    pub sqpoll_cpu: Option<u32>,
    /// db_bench --threads (the study: 1).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub threads: u32,
    /// Keys per MultiGet (the study: 4).
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub batch_size: u32,
    /// The db_bench to run, e.g. one of a RocksDB built with liburing, so
    /// that P-DEF measures RocksDB's own io_uring path.
    #[arg(long, value_name = "PATH", default_value = "db_bench")]
    pub db_bench: PathBuf,
    /// The plugin library [default: next to ringlab, else the one cargo built].
    #[arg(long, value_name = "PATH")]
    pub plugin: Option<PathBuf>,
    /// Results directory (new or empty): index.json and runs/*.json, read by
    /// `ringlab report` and `ringlab compare`.
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Do not count tracepoints (each counted tracepoint costs a little on
    /// every request).
    #[arg(long)]
    pub no_kstat: bool,
    /// text: progress and the table on standard output; json: the one run's
    /// result (schema/result.schema.json) on standard output, progress on
    /// standard error (one configuration, one repeat: how `ringlab sweep`
    /// and `ringlab reproduce` run it).
    #[arg(long, value_enum, default_value_t = RocksdbFormat::Text)]
    pub output_format: RocksdbFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RocksdbFormat {
    Text,
    Json,
}

struct Setup {
    db: PathBuf,
    keys: u64,
    cpu: u32,
    plugin: Option<PathBuf>,
    db_bench: PathBuf,
    device: Option<String>,
    warnings: Vec<String>,
}

/// One finished run.
pub struct RunOutcome {
    pub config: Configuration,
    pub repeat: u32,
    pub bench: BenchLine,
    pub hist: Option<Histogram>,
    pub device: Option<evidence::DeviceFigures>,
    pub result: RunResult,
}

/// `ringlab rocksdb`: the whole matrix; prints as it goes and the table at
/// the end.
pub fn run_command(args: &RocksdbArgs) -> Result<()> {
    let interrupted = ringlab_core::interrupt_flag()?;
    if args.output_format == RocksdbFormat::Text {
        run_matrix(args, &interrupted, &mut std::io::stdout())?;
        return Ok(());
    }
    let configs = if args.configs.is_empty() {
        matrix::all(0).len()
    } else {
        args.configs.len()
    };
    if configs != 1 || args.repeats != 1 {
        return Err(usage_error(format!(
            "--output-format json prints one run's result: name one configuration (--configs, {configs} named) and --repeats 1 (got {}); for the matrix use --output DIR",
            args.repeats
        )));
    }
    let outcomes = run_matrix(args, &interrupted, &mut std::io::stderr())?;
    let Some(o) = outcomes.first() else {
        return Err(anyhow::anyhow!("the run produced no result"));
    };
    let mut text = serde_json::to_string_pretty(&o.result)?;
    text.push('\n');
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing the result to standard output")?;
    Ok(())
}

/// Runs the matrix and writes progress and the table to `w`.
pub fn run_matrix(
    args: &RocksdbArgs,
    interrupted: &Arc<AtomicBool>,
    w: &mut dyn Write,
) -> Result<Vec<RunOutcome>> {
    validate(args)?;
    let (cpu, sqpoll_cpu) = pick_cpus(args)?;
    let configs = matrix::select(&args.configs, sqpoll_cpu).map_err(usage_error)?;
    let needs_plugin = configs.iter().any(|c| c.knobs.is_some());
    let plugin = if needs_plugin {
        Some(find_plugin(args.plugin.as_deref()).map_err(usage_error)?)
    } else {
        None
    };
    check_db_bench(&args.db_bench)?;
    let mut store = match &args.output {
        Some(dir) => Some(ResultStore::create(dir, &configs, args)?),
        None => None,
    };
    let db = args.db.clone().unwrap_or_else(|| default_db(args.keys));
    let mut setup = Setup {
        device: None,
        db,
        keys: args.keys,
        cpu,
        plugin,
        db_bench: args.db_bench.clone(),
        warnings: Vec::new(),
    };
    prepare_db(&setup, w, interrupted)?;
    setup.device = ringlab_kstat::device::disk_of_path(&setup.db);
    if !db_bench_has_liburing(&setup.db_bench) {
        setup.warnings.push(
            "this db_bench's RocksDB is built without liburing (Debian's is), so its posix MultiRead reads block by block: P-DEF equals P-SYNC here; pass --db-bench PATH of a RocksDB built with liburing to measure P-DEF".into(),
        );
    }
    if cpu == sqpoll_cpu && configs.iter().any(|c| c.name == "L-SQPOLL") {
        setup.warnings.push(format!(
            "the SQPOLL poller shares CPU {cpu} with db_bench (one CPU allowed): L-SQPOLL competes with itself"
        ));
    }
    if !args.no_kstat {
        setup.warnings.push("kernel evidence: tracepoints counted on every request of db_bench for the whole process life (open and close included); each costs a little per request, equally in every configuration (--no-kstat to measure without)".into());
    }
    for warning in &setup.warnings {
        writeln!(w, "note: {warning}")?;
    }
    let mut outcomes = Vec::new();
    // Round robin over the configurations, repeat by repeat, so that drift
    // of the machine spreads over all of them.
    for repeat in 1..=args.repeats {
        for config in &configs {
            if interrupted.load(Ordering::Relaxed) {
                let said = match &args.output {
                    Some(dir) => format!(
                        "interrupted; the finished runs are in {}",
                        dir.display()
                    ),
                    None => "interrupted; no results directory was named (--output DIR), so nothing was kept".to_string(),
                };
                return Err(anyhow::Error::new(ringlab_lab::Interrupted(said)));
            }
            let started = Instant::now();
            let outcome = run_one(&setup, args, config, repeat, interrupted);
            let wall_s = started.elapsed().as_secs_f64();
            match outcome {
                Ok(o) => {
                    writeln!(w, "{}", progress_line(&o))?;
                    if let Some(s) = store.as_mut() {
                        s.record(&o, wall_s)?;
                    }
                    outcomes.push(o);
                }
                Err(e) => {
                    if let Some(s) = store.as_mut() {
                        s.record_failure(config, repeat, &format!("{e:#}"), wall_s)?;
                    }
                    return Err(e.context(format!("{} repeat {repeat}", config.name)));
                }
            }
        }
    }
    write!(w, "{}", table(&configs, &outcomes, &setup, args))?;
    if let Some(s) = &store {
        writeln!(w, "results: {} (ringlab report {0})", s.dir.display())?;
    }
    Ok(outcomes)
}

fn validate(args: &RocksdbArgs) -> Result<()> {
    if args.keys < 1000 {
        return Err(usage_error(format!(
            "--keys {}: use at least 1000 keys",
            args.keys
        )));
    }
    if args.repeats == 0 || args.repeats > 100 {
        return Err(usage_error("--repeats: from 1 to 100"));
    }
    if args.duration == 0 || args.duration > 3600 {
        return Err(usage_error("--duration: from 1 to 3600 seconds"));
    }
    if args.threads == 0 || args.threads > 256 {
        return Err(usage_error("--threads: from 1 to 256"));
    }
    if args.batch_size == 0 || args.batch_size > 1024 {
        return Err(usage_error("--batch-size: from 1 to 1024"));
    }
    Ok(())
}

fn pick_cpus(args: &RocksdbArgs) -> Result<(u32, u32)> {
    let allowed = ringlab_core::cpus::allowed_cpus();
    let check = |flag: &str, c: u32| -> Result<u32> {
        if allowed.contains(&c) {
            Ok(c)
        } else {
            Err(usage_error(format!(
                "--{flag} {c}: not an allowed CPU (allowed: {})",
                ringlab_core::cpus::format_cpu_list(&allowed)
            )))
        }
    };
    let last = *allowed
        .last()
        .ok_or_else(|| anyhow::anyhow!("no CPU is allowed for this process"))?;
    let cpu = match args.cpu {
        Some(c) => check("cpu", c)?,
        None => last,
    };
    let sqpoll_cpu = match args.sqpoll_cpu {
        Some(c) => check("sqpoll-cpu", c)?,
        None => allowed.iter().copied().find(|&c| c != cpu).unwrap_or(cpu),
    };
    Ok((cpu, sqpoll_cpu))
}

fn check_db_bench(path: &Path) -> Result<()> {
    match Command::new(path)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(_) => Ok(()),
        Err(e) => Err(usage_error(format!(
            "cannot run {} ({e}): install RocksDB's tools ({INSTALL}) or pass --db-bench PATH",
            path.display()
        ))),
    }
}

/// Whether db_bench's RocksDB library links liburing (its MultiRead then
/// uses io_uring when --io_uring_enabled).
fn db_bench_has_liburing(db_bench: &Path) -> bool {
    let resolved = which(db_bench);
    let Ok(out) = Command::new("ldd").arg(&resolved).output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("liburing") {
        return true;
    }
    // Statically linked RocksDB: look for the symbol in the binary.
    std::fs::read(&resolved)
        .map(|b| b.windows(15).any(|w| w == b"io_uring_submit"))
        .unwrap_or(false)
}

fn which(p: &Path) -> PathBuf {
    if p.components().count() > 1 {
        return p.to_path_buf();
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(p))
                .find(|c| c.is_file())
        })
        .unwrap_or_else(|| p.to_path_buf())
}

/// Reuses the database in `setup.db` or creates it with fillrandom.
///
/// A new database is filled in a temporary directory beside `setup.db`
/// (`.NAME.ringlab-PID.tmp`) and renamed into place with its marker only
/// when db_bench succeeded and left a database (a `CURRENT` file): an
/// interrupted or failed fill leaves nothing a rerun would refuse, and a
/// db_bench that writes nothing (`--db-bench /bin/true`) marks nothing.
fn prepare_db(setup: &Setup, w: &mut dyn Write, interrupted: &Arc<AtomicBool>) -> Result<()> {
    let marker = setup.db.join(MARKER);
    if marker.is_file() {
        let text = std::fs::read_to_string(&marker)
            .with_context(|| format!("reading {}", marker.display()))?;
        let v: Json = serde_json::from_str(&text)
            .map_err(|e| usage_error(format!("{}: not JSON ({e})", marker.display())))?;
        let keys = v["keys"].as_u64().unwrap_or(0);
        if keys != setup.keys {
            return Err(usage_error(format!(
                "--db {} holds a database of {keys} keys: pass --keys {keys}, or another --db",
                setup.db.display()
            )));
        }
        if !setup.db.join("CURRENT").is_file() {
            return Err(usage_error(format!(
                "--db {}: {MARKER} is there but no database (no CURRENT file): remove the directory and run again to fill a new one",
                setup.db.display()
            )));
        }
        writeln!(w, "database: {} ({keys} keys, reused)", setup.db.display())?;
        return Ok(());
    }
    let non_empty = std::fs::read_dir(&setup.db)
        .map(|mut d| d.next().is_some())
        .unwrap_or(false);
    if non_empty {
        return Err(usage_error(format!(
            "--db {}: the directory holds files but no {MARKER}: name a new or empty directory (ringlab never overwrites it)",
            setup.db.display()
        )));
    }
    remove_stale_fills(&setup.db);
    let temp = ringlab_core::files::temp_path(&setup.db);
    // Removed unless renamed into place: on failure, on a signal, and by
    // the cleaner process if ringlab is killed.
    let fill = ringlab_core::files::TempDirName::new(temp.clone());
    std::fs::create_dir_all(&temp)
        .map_err(|e| usage_error(format!("--db {}: {e}", setup.db.display())))?;
    writeln!(
        w,
        "database: {} - filling {} keys (fillrandom, 100-byte keys and values, no compression)...",
        setup.db.display(),
        setup.keys
    )?;
    w.flush()?;
    let started = Instant::now();
    let mut cmd = Command::new(&setup.db_bench);
    cmd.args(fill_args(&temp, setup.keys))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    ringlab_core::child::die_with_parent(&mut cmd, &[]);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("running {}", setup.db_bench.display()))?;
    // stderr is read on a thread, so that a chatty db_bench never blocks.
    let mut err_pipe = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(p) = err_pipe.as_mut() {
            let _ = std::io::Read::read_to_string(p, &mut s);
        }
        s
    });
    let mut signalled = false;
    let status = loop {
        if let Some(st) = child
            .try_wait()
            .context("waiting for db_bench fillrandom")?
        {
            break st;
        }
        if interrupted.load(Ordering::Relaxed) && !signalled {
            // SAFETY: our own child, not yet reaped.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            signalled = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = reader.join().unwrap_or_default();
    // A Ctrl-C reaches db_bench too (same process group): it may end
    // before ringlab signals it.
    if signalled || interrupted.load(Ordering::Relaxed) {
        drop(fill);
        return Err(anyhow::Error::new(ringlab_lab::Interrupted(
            "interrupted while filling the database: nothing was measured, and the partial database was removed".into(),
        )));
    }
    if !status.success() {
        anyhow::bail!(
            "db_bench fillrandom failed ({status}): {}",
            last_lines(&stderr, 5)
        );
    }
    if !temp.join("CURRENT").is_file() {
        anyhow::bail!(
            "{} fillrandom exited 0 but wrote no database (no CURRENT file): is --db-bench a RocksDB db_bench?",
            setup.db_bench.display()
        );
    }
    let marker_text = serde_json::to_string_pretty(&json!({
        "keys": setup.keys,
        "key_size": KEY_SIZE,
        "value_size": VALUE_SIZE,
        "seed": SEED,
        "made_by": "ringlab rocksdb",
    }))?;
    std::fs::write(temp.join(MARKER), marker_text + "\n")
        .with_context(|| format!("writing {}", temp.join(MARKER).display()))?;
    // An empty directory named by --db is replaced by the filled one.
    let _ = std::fs::remove_dir(&setup.db);
    std::fs::rename(&temp, &setup.db).with_context(|| {
        format!(
            "renaming the filled database {} to {}",
            temp.display(),
            setup.db.display()
        )
    })?;
    fill.forget();
    writeln!(
        w,
        "database: filled in {:.0} s",
        started.elapsed().as_secs_f64()
    )?;
    Ok(())
}

/// The default database directory: per user (by uid) and key count, in
/// /var/tmp (kept across reboots, as a database worth reusing).
fn default_db(keys: u64) -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    // The uid of this process, without unsafe: the owner of /proc/self.
    let uid = std::fs::metadata("/proc/self")
        .map(|m| m.uid().to_string())
        .unwrap_or_else(|_| "unknown-user".into());
    PathBuf::from(format!("/var/tmp/ringlab-rocksdb-{uid}-{keys}"))
}

/// Removes the fill directories of runs that were killed (their process is
/// gone): `.NAME.ringlab-PID.tmp` beside `db`.
fn remove_stale_fills(db: &Path) {
    let (Some(name), Some(dir)) = (db.file_name(), db.parent()) else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!(".{}.ringlab-", name.to_string_lossy());
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let f = e.file_name().to_string_lossy().into_owned();
        let pid = f
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(".tmp"))
            .and_then(|p| p.parse::<i32>().ok());
        if let Some(pid) = pid {
            if pid > 0 && !ringlab_core::files::process_alive(pid) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

pub fn fill_args(db: &Path, keys: u64) -> Vec<String> {
    vec![
        "--benchmarks=fillrandom,waitforcompaction".into(),
        format!("--db={}", db.display()),
        format!("--num={keys}"),
        format!("--key_size={KEY_SIZE}"),
        format!("--value_size={VALUE_SIZE}"),
        "--compression_type=none".into(),
        format!("--seed={SEED}"),
    ]
}

/// db_bench's arguments for one multireadrandom run (the study's flags).
fn read_args(setup: &Setup, args: &RocksdbArgs, config: &Configuration) -> Vec<String> {
    // The study: stride 40,000 over 1M keys; the same fraction here.
    let stride = (setup.keys / 25).max(1);
    let mut a = vec![
        "--benchmarks=multireadrandom".to_string(),
        "--use_existing_db".into(),
        format!("--db={}", setup.db.display()),
        format!("--num={}", setup.keys),
        format!("--key_size={KEY_SIZE}"),
        format!("--value_size={VALUE_SIZE}"),
        "--compression_type=none".into(),
        format!("--seed={SEED}"),
        "--use_direct_reads".into(),
        format!("--batch_size={}", args.batch_size),
        format!("--multiread_stride={stride}"),
        "--multiread_batched=true".into(),
        "--histogram".into(),
        format!("--duration={}", args.duration),
        format!("--threads={}", args.threads),
        format!("--io_uring_enabled={}", config.io_uring_enabled),
    ];
    if let Some(uri) = config.fs_uri() {
        a.push(format!("--fs_uri={uri}"));
    }
    a
}

fn run_one(
    setup: &Setup,
    args: &RocksdbArgs,
    config: &Configuration,
    repeat: u32,
    interrupted: &Arc<AtomicBool>,
) -> Result<RunOutcome> {
    let db_args = read_args(setup, args, config);
    let started_at = SystemTime::now();
    let run = spawn_counted(setup, config, &db_args, !args.no_kstat, interrupted)?;
    if !run.status_ok {
        anyhow::bail!(
            "db_bench failed ({}): {}",
            run.status_text,
            last_lines(&run.stderr, 6)
        );
    }
    let (bench, hist) = dbbench::parse(&run.stdout, "multireadrandom").ok_or_else(|| {
        anyhow::anyhow!(
            "db_bench printed no multireadrandom line: {}",
            last_lines(&run.stdout, 4)
        )
    })?;
    let device = run.samples.device();
    let kstat = run.counters.clone().map(|c| {
        evidence::report(
            c.counts,
            c.skipped,
            c.unavailable,
            &run.samples,
            bench.operations,
            setup.device.as_deref().map(|d| (d, device)),
        )
    });
    let mut result = build_result(
        setup,
        args,
        config,
        repeat,
        started_at,
        &bench,
        hist.as_ref(),
        &run,
        kstat,
        &db_args,
    );
    // Knob evidence (per io_uring request, not per key) and diagnoses, as
    // every command's result has them.
    let knobs = evidence::ring_options(config.knobs.as_deref().unwrap_or_default());
    ringlab_kstat::explain::explain_with(&mut result, &knobs);
    Ok(RunOutcome {
        config: config.clone(),
        repeat,
        bench,
        hist,
        device,
        result,
    })
}

/// What db_bench's counters measured.
#[derive(Clone)]
struct Counts {
    counts: std::collections::BTreeMap<String, u64>,
    /// The counters' skipped runs (`KstatReport::counter_runs_skipped`).
    skipped: std::collections::BTreeMap<String, u64>,
    unavailable: Vec<ringlab_stats::UnavailableCounter>,
}

struct ChildRun {
    stdout: String,
    stderr: String,
    status_ok: bool,
    status_text: String,
    rusage: Option<libc::rusage>,
    counters: Option<Counts>,
    samples: Samples,
}

/// Runs db_bench pinned to `setup.cpu`, counted from its first instruction:
/// a shell started first waits on its stdin, the counters are opened on its
/// pid (inherited by every thread created afterwards), and then it execs
/// db_bench in the same process.
fn spawn_counted(
    setup: &Setup,
    config: &Configuration,
    db_args: &[String],
    kstat: bool,
    interrupted: &Arc<AtomicBool>,
) -> Result<ChildRun> {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg("read _go && exec \"$0\" \"$@\"")
        .arg(&setup.db_bench)
        .args(db_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("RINGLAB_FS_QUIET", "1");
    if config.knobs.is_some() {
        if let Some(p) = &setup.plugin {
            cmd.env("LD_PRELOAD", p);
        }
    }
    let cpu = setup.cpu;
    // db_bench gets SIGTERM when ringlab dies (even by SIGKILL), and runs
    // on its CPU.
    ringlab_core::child::die_with_parent(&mut cmd, &[cpu]);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", setup.db_bench.display()))?;
    let pid = child.id();
    let mut counters = if kstat {
        Some(ProcessCounters::open(pid as libc::pid_t))
    } else {
        None
    };
    if let Some(c) = &mut counters {
        c.enable();
    }
    let start = Instant::now();
    let mut samples = Samples::default();
    samples.sample(pid, setup.device.as_deref(), start);
    {
        let mut stdin = child.stdin.take().context("db_bench stdin")?;
        // The shell reads one line, then execs db_bench.
        stdin.write_all(b"go\n").context("starting db_bench")?;
    }
    let mut out_pipe = child.stdout.take().context("db_bench stdout")?;
    let mut err_pipe = child.stderr.take().context("db_bench stderr")?;
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out_pipe.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let (status, rusage) = wait_sampling(pid, setup, &mut samples, start, interrupted)?;
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    let counters = counters.as_mut().map(|c| {
        // read() sets the skips and may add to unavailable: first.
        let counts = c.read();
        Counts {
            counts,
            skipped: std::mem::take(&mut c.skipped),
            unavailable: std::mem::take(&mut c.unavailable),
        }
    });
    if interrupted.load(Ordering::Relaxed) {
        return Err(anyhow::Error::new(ringlab_lab::Interrupted(
            "interrupted: db_bench stopped".into(),
        )));
    }
    let status_ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    let status_text = if libc::WIFEXITED(status) {
        format!("exit code {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("wait status {status}")
    };
    Ok(ChildRun {
        stdout,
        stderr,
        status_ok,
        status_text,
        rusage,
        counters,
        samples,
    })
}

/// Waits for `pid`, sampling its helper threads and the disk every 100 ms;
/// stops it on interrupt or when it overruns its duration by far.
fn wait_sampling(
    pid: u32,
    setup: &Setup,
    samples: &mut Samples,
    start: Instant,
    interrupted: &Arc<AtomicBool>,
) -> Result<(i32, Option<libc::rusage>)> {
    let mut signalled = false;
    loop {
        let mut status = 0;
        // SAFETY: zeroed rusage is a valid out-parameter for wait4.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 on our own child with valid out-pointers.
        let rc = unsafe { libc::wait4(pid as libc::pid_t, &mut status, libc::WNOHANG, &mut ru) };
        if rc == pid as libc::pid_t {
            return Ok((status, Some(ru)));
        }
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(anyhow::Error::new(e).context("waiting for db_bench"));
        }
        samples.sample(pid, setup.device.as_deref(), start);
        let overdue = start.elapsed() > Duration::from_secs(3600 * 2);
        if (interrupted.load(Ordering::Relaxed) || overdue) && !signalled {
            // SAFETY: kill on our own child's pid, not yet reaped.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
            signalled = true;
        }
        std::thread::sleep(SAMPLE_PERIOD);
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let from = lines.len().saturating_sub(n);
    lines[from..].join(" | ")
}

fn us_to_ns(us: f64) -> u64 {
    (us * 1000.0).round().max(0.0) as u64
}

fn latency_summary(h: &Histogram) -> Option<LatencySummary> {
    if h.count == 0 {
        return None;
    }
    let p = |q: f64| h.percentile_us(q).map(us_to_ns).unwrap_or(0);
    Some(LatencySummary {
        min: us_to_ns(h.min_us),
        mean: h.average_us * 1000.0,
        stdev: h.stdev_us * 1000.0,
        p50: p(50.0),
        p90: p(90.0),
        p99: p(99.0),
        p99_9: p(99.9),
        p99_99: p(99.99),
        max: us_to_ns(h.max_us),
    })
}

fn tv_ns(tv: libc::timeval) -> u64 {
    (tv.tv_sec as u64) * 1_000_000_000 + (tv.tv_usec as u64) * 1000
}

#[allow(clippy::too_many_arguments)]
fn build_result(
    setup: &Setup,
    args: &RocksdbArgs,
    config: &Configuration,
    repeat: u32,
    started_at: SystemTime,
    bench: &BenchLine,
    hist: Option<&Histogram>,
    run: &ChildRun,
    kstat: Option<ringlab_stats::KstatReport>,
    db_args: &[String],
) -> RunResult {
    let elapsed_ns = (bench.seconds * 1e9).round() as u64;
    let bytes_per_s = mb_per_s(bench).unwrap_or(0.0) * 1_048_576.0;
    let bytes = (bytes_per_s * bench.seconds).round() as u64;
    let lat = hist.and_then(latency_summary);
    let (user, sys, vol, invol) = match &run.rusage {
        Some(r) => (
            tv_ns(r.ru_utime),
            tv_ns(r.ru_stime),
            r.ru_nvcsw as u64,
            r.ru_nivcsw as u64,
        ),
        None => (0, 0, 0, 0),
    };
    let figures = Figures {
        elapsed_ns,
        ops: bench.operations,
        bytes,
        iops: bench.ops_per_s,
        bw_bytes_per_s: bytes_per_s,
        lat_ns: lat.clone(),
        read: DirectionFigures {
            ops: bench.operations,
            bytes,
            iops: bench.ops_per_s,
            bw_bytes_per_s: bytes_per_s,
            lat_ns: lat,
            // db_bench's histogram, not a ringlab recorder.
            ..Default::default()
        },
        write: DirectionFigures::default(),
        trim: None,
        cpu_user_ns: user,
        cpu_sys_ns: sys,
        ctx_voluntary: vol,
        ctx_involuntary: invol,
        verified_blocks: None,
        syncs: None,
        io_depths: None,
    };
    let mut config_map = serde_json::Map::new();
    config_map.insert("configuration".into(), json!(config.name));
    config_map.insert("knobs".into(), json!(config.knob_text()));
    config_map.insert("fs_uri".into(), json!(config.fs_uri()));
    config_map.insert("io_uring_enabled".into(), json!(config.io_uring_enabled));
    config_map.insert("keys".into(), json!(setup.keys));
    config_map.insert("batch_size".into(), json!(args.batch_size));
    config_map.insert("threads".into(), json!(args.threads));
    config_map.insert("duration".into(), json!(args.duration));
    config_map.insert("cpu".into(), json!(setup.cpu));
    config_map.insert("db".into(), json!(setup.db.display().to_string()));
    config_map.insert(
        "db_bench".into(),
        json!(setup.db_bench.display().to_string()),
    );
    config_map.insert("db_bench_args".into(), json!(db_args));
    config_map.insert("repeat".into(), json!(repeat));
    let mut warnings = setup.warnings.clone();
    warnings.push("ops are keys read (db_bench's ops/sec); latency is per MultiGet batch of --batch-size keys, from db_bench's --histogram (microsecond buckets, interpolated); bytes are the keys found times 200 bytes (db_bench's MB/s, unrounded); CPU and context switches are the whole db_bench process (wait4 rusage)".into());
    if let Some(d) = &run.samples.device() {
        warnings.push(format!(
            "device {}: {:.0} read IOPS, {:.1} MB/s (median of 100 ms intervals)",
            setup.device.as_deref().unwrap_or("?"),
            d.read_iops,
            d.read_bytes_per_s / 1e6
        ));
    }
    RunResult {
        jobs: vec![JobFigures {
            job: 0,
            cpu: Some(setup.cpu),
            figures: figures.clone(),
        }],
        warnings,
        kstat,
        ..RunResult::new(
            "rocksdb",
            started_at,
            ringlab_kstat::host_info(),
            config_map,
            figures,
        )
    }
}

/// db_bench's MB/s (2^20 bytes of found keys and values per second),
/// recomputed from the keys found where db_bench printed them (its own
/// figure has one decimal: 0.4 MB/s hides a 25% difference).
pub fn mb_per_s(b: &BenchLine) -> Option<f64> {
    match b.found {
        Some((found, _)) if b.seconds > 0.0 => {
            Some(found as f64 * f64::from(KEY_SIZE + VALUE_SIZE) / b.seconds / 1_048_576.0)
        }
        _ => b.mb_per_s,
    }
}

/// db_bench's own device reads per second: the bios its threads submitted
/// (block:block_bio_queue) over its benchmark time; `None` without kstat.
pub fn own_iops(o: &RunOutcome) -> Option<f64> {
    let bios = *o
        .result
        .kstat
        .as_ref()?
        .counters
        .get("block:block_bio_queue")?;
    (o.bench.seconds > 0.0).then(|| bios as f64 / o.bench.seconds)
}

fn progress_line(o: &RunOutcome) -> String {
    let p95 = o
        .hist
        .as_ref()
        .and_then(|h| h.percentile_us(95.0))
        .map_or("-".into(), |v| format!("{v:.0}"));
    let own = own_iops(o).map_or("-".into(), |v| format!("{:.1}k", v / 1000.0));
    let dev = o
        .device
        .map_or("-".into(), |d| format!("{:.1}k", d.read_iops / 1000.0));
    format!(
        "{:<9} repeat {}: {:>9.0} ops/s {:>6.2} MB/s p95 {:>6} us  own reads {own}/s  disk {dev} IOPS",
        o.config.name,
        o.repeat,
        o.bench.ops_per_s,
        mb_per_s(&o.bench).unwrap_or(0.0),
        p95,
    )
}

/// Median and min-max of `v` as `med (min-max)`.
fn agg(v: &[f64], digits: usize) -> String {
    let Some(s) = ringlab_stats::spread::Spread::of(v) else {
        return "-".into();
    };
    let med = s.median;
    if v.len() == 1 {
        return format!("{med:.digits$}");
    }
    format!("{med:.digits$} ({:.digits$}-{:.digits$})", s.min, s.max)
}

fn table(
    configs: &[Configuration],
    outcomes: &[RunOutcome],
    setup: &Setup,
    args: &RocksdbArgs,
) -> String {
    let mut t = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(
        t,
        "\nmultireadrandom, {} keys, batch {}, {} thread(s) on CPU {}, {} s x {} repeats; median (min-max)",
        setup.keys, args.batch_size, args.threads, setup.cpu, args.duration, args.repeats
    );
    let _ = writeln!(
        t,
        "{:<9} {:>20} {:>18} {:>16} {:>20} {:>20} {:>17} {:>17} | study: {:>5} {:>7} {:>6}",
        "config",
        "ops/s",
        "MB/s",
        "p50 us",
        "p95 us",
        "p99 us",
        "own kIOPS",
        "disk kIOPS",
        "MB/s",
        "p95 us",
        "kIOPS"
    );
    for c in configs {
        let mine: Vec<&RunOutcome> = outcomes
            .iter()
            .filter(|o| o.config.name == c.name)
            .collect();
        let col = |f: &dyn Fn(&RunOutcome) -> Option<f64>, d: usize| {
            agg(&mine.iter().filter_map(|o| f(o)).collect::<Vec<_>>(), d)
        };
        let pct = |q: f64| move |o: &RunOutcome| o.hist.as_ref().and_then(|h| h.percentile_us(q));
        let study = c
            .study
            .map_or(format!("{:>5} {:>7} {:>6}", "-", "-", "-"), |s| {
                format!(
                    "{:>5.1} {:>7.1} {:>6.1}",
                    s.mb_per_s, s.p95_us, s.device_kiops
                )
            });
        let _ = writeln!(
            t,
            "{:<9} {:>20} {:>18} {:>16} {:>20} {:>20} {:>17} {:>17} | study: {study}",
            c.name,
            col(&|o| Some(o.bench.ops_per_s), 0),
            col(&|o| mb_per_s(&o.bench), 2),
            col(&pct(50.0), 0),
            col(&pct(95.0), 0),
            col(&pct(99.0), 0),
            col(&|o| own_iops(o).map(|v| v / 1000.0), 1),
            col(&|o| o.device.map(|d| d.read_iops / 1000.0), 1),
        );
    }
    if !args.no_kstat {
        let _ = writeln!(
            t,
            "\nkernel evidence per key read (db_bench process and its threads; IPIs on every CPU, other load included; median):"
        );
        let keys = [
            ("syscalls_per_op", "syscalls"),
            ("io_uring_enter_per_op", "enter"),
            ("context_switches_per_op", "ctx sw"),
            ("reschedule_ipis_per_op", "resched IPI"),
            ("io_uring_queue_async_work_per_op", "io-wq"),
            ("file_get_per_request", "file_get/req"),
            ("block_bio_queue_per_op", "own reads"),
        ];
        let mut head = format!("{:<9}", "config");
        for (_, title) in keys {
            let _ = write!(head, " {title:>12}");
        }
        let _ = writeln!(t, "{head} {:>14}", "helper CPU ms");
        for c in configs {
            let mine: Vec<&RunOutcome> = outcomes
                .iter()
                .filter(|o| o.config.name == c.name)
                .collect();
            let mut line = format!("{:<9}", c.name);
            for (key, _) in keys {
                let v: Vec<f64> = mine
                    .iter()
                    .filter_map(|o| {
                        let k = o.result.kstat.as_ref()?;
                        if key == "file_get_per_request" {
                            evidence::file_get_per_request(k)
                        } else {
                            k.per_op.get(key).copied()
                        }
                    })
                    .collect();
                let cell = match ringlab_stats::spread::Spread::of(&v) {
                    Some(s) => format!("{:.3}", s.median),
                    None => "-".to_string(),
                };
                let _ = write!(line, " {cell:>12}");
            }
            let helper: Vec<f64> = mine
                .iter()
                .filter_map(|o| {
                    let k = o.result.kstat.as_ref()?;
                    Some(
                        k.helper_threads
                            .iter()
                            .filter_map(|h| h.cpu_ns)
                            .sum::<u64>() as f64
                            / 1e6,
                    )
                })
                .collect();
            let _ = writeln!(line, " {:>14}", agg(&helper, 0));
            t.push_str(&line);
        }
        let unavailable: Vec<String> = outcomes
            .iter()
            .filter_map(|o| o.result.kstat.as_ref())
            .flat_map(|k| {
                k.unavailable
                    .iter()
                    .map(|u| format!("{}: {}", u.counter, u.reason))
            })
            .fold(Vec::new(), |mut acc, l| {
                if !acc.contains(&l) {
                    acc.push(l);
                }
                acc
            });
        for u in unavailable {
            let _ = writeln!(t, "unavailable: {u}");
        }
    }
    let _ = writeln!(t, "own kIOPS: the bios db_bench's threads submitted (block:block_bio_queue) per benchmark second; disk kIOPS: /sys/block reads of the whole disk, other processes included (median of 100 ms intervals).");
    let _ = writeln!(t, "\nconfigurations:");
    for c in configs {
        let _ = writeln!(t, "  {:<9} {} [{}]", c.name, c.what, c.knob_text());
    }
    let _ = writeln!(t, "study (thesis 000, Fig. 5.2-5.3): Intel Optane, ext4, 10M keys, db_bench pinned to 1 CPU away from the NVMe interrupts; its db_bench was built with liburing, so its P-DEF used io_uring.");
    t
}

/// The results directory: the layout `ringlab sweep` writes, so `ringlab
/// report` and `ringlab compare` read it.
struct ResultStore {
    dir: PathBuf,
    index: ringlab_lab::store::Index,
}

impl ResultStore {
    fn create(dir: &Path, configs: &[Configuration], args: &RocksdbArgs) -> Result<ResultStore> {
        let non_empty = std::fs::read_dir(dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(false);
        if non_empty {
            return Err(usage_error(format!(
                "--output {}: name a new or empty directory",
                dir.display()
            )));
        }
        std::fs::create_dir_all(dir.join(ringlab_lab::store::RUNS_DIR)).map_err(|e| {
            usage_error(format!("--output {}: cannot create it: {e}", dir.display()))
        })?;
        let names: Vec<Json> = configs.iter().map(|c| json!(c.name)).collect();
        let plan = json!({
            "command": "rocksdb",
            "repeats": args.repeats,
            "shuffle": false,
            "seed": 0,
            "options": {
                "keys": args.keys,
                "duration": args.duration,
                "batch-size": args.batch_size,
                "threads": args.threads,
            },
            "axes": { "configuration": names },
        });
        let store = ResultStore {
            dir: dir.to_path_buf(),
            index: ringlab_lab::store::Index {
                // The format `ringlab report` reads (store::read_index).
                format: "ringlab-sweep-index".into(),
                version: 1,
                plan,
                runs: Vec::new(),
            },
        };
        store.save()?;
        Ok(store)
    }

    fn save(&self) -> Result<()> {
        let mut text = serde_json::to_string_pretty(&self.index)?;
        text.push('\n');
        ringlab_lab::store::write_atomic(
            &self.dir.join(ringlab_lab::store::INDEX_FILE),
            text.as_bytes(),
        )
    }

    fn entry(&self, config: &Configuration, repeat: u32) -> ringlab_lab::store::RunEntry {
        let id = format!("{:04}", self.index.runs.len() + 1);
        let mut values = serde_json::Map::new();
        values.insert("configuration".into(), json!(config.name));
        ringlab_lab::store::RunEntry {
            result: format!("{}/{id}.json", ringlab_lab::store::RUNS_DIR),
            id,
            values,
            repeat,
            status: ringlab_lab::store::Status::Pending,
            args: Vec::new(),
            error: None,
            wall_s: None,
        }
    }

    fn record(&mut self, o: &RunOutcome, wall_s: f64) -> Result<()> {
        let mut e = self.entry(&o.config, o.repeat);
        let mut text = serde_json::to_string_pretty(&o.result)?;
        text.push('\n');
        ringlab_lab::store::write_atomic(&self.dir.join(&e.result), text.as_bytes())?;
        e.status = ringlab_lab::store::Status::Done;
        e.wall_s = Some(wall_s);
        e.args = o.result.config["db_bench_args"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        self.index.runs.push(e);
        self.save()
    }

    fn record_failure(
        &mut self,
        config: &Configuration,
        repeat: u32,
        why: &str,
        wall_s: f64,
    ) -> Result<()> {
        let mut e = self.entry(config, repeat);
        e.status = ringlab_lab::store::Status::Failed;
        e.error = Some(why.to_string());
        e.wall_s = Some(wall_s);
        self.index.runs.push(e);
        self.save()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mb_per_s_is_recomputed_from_the_keys_found() {
        let line = "multireadrandom :       3.216 micros/op 310952 ops/sec 1.003 seconds 311996 operations;   38.2 MB/s (201082 of 311996 found)\n";
        let (b, _) = dbbench::parse(line, "multireadrandom").unwrap();
        let mb = mb_per_s(&b).unwrap();
        assert!((mb - 38.2).abs() < 0.05, "{mb}");
        let no_found = BenchLine { found: None, ..b };
        assert_eq!(mb_per_s(&no_found), Some(38.2));
    }

    #[test]
    fn median_and_range_are_shown_for_repeats() {
        assert_eq!(agg(&[3.0, 1.0, 2.0], 0), "2 (1-3)");
        assert_eq!(agg(&[1.5], 1), "1.5");
        assert_eq!(agg(&[], 1), "-");
    }
}
