//! `ringlab reproduce`: each finding of the seeds as one command. A recipe
//! ([`recipe`]) is sweep plans plus the quoted claim and the rule
//! ([`verdict`]); this module runs the sweeps with the lab's own sweep
//! runner (so DIR/NAME/SWEEP is a sweep directory `report` reads), judges,
//! writes `verdict.json` per recipe and one `index.html` ([`page`]).

pub mod machine;
pub mod page;
pub mod recipe;
pub mod verdict;

use crate::store::{read_index, Status};
use crate::sweep::{run_sweep, Interrupted, SweepOptions};
use anyhow::{anyhow, Context, Result};
use machine::Machine;
use recipe::{Recipe, Scale, SweepSpec, Vars};
use ringlab_core::usage_error;
use rustix::process::{kill_process, Pid, Signal};
use rustix::thread::{sched_setaffinity, CpuSet};
use serde_json::{json, Value as Json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use verdict::{Limits, Point, Verdict};

pub use recipe::builtin;

/// One line of `--list`.
#[derive(Debug, serde::Serialize)]
pub struct ListEntry {
    pub name: String,
    pub seed: String,
    pub study: String,
    pub section: String,
    pub claim: String,
    pub needs: Vec<String>,
    pub runnable: bool,
    pub reason: String,
}

/// Whether `r` can run here, and why not.
pub fn runnable(r: &Recipe, m: &Machine, target: &Path) -> (bool, String) {
    let missing: Vec<String> = r
        .requires
        .iter()
        .filter_map(|q| m.missing(q, target))
        .collect();
    if let Some(why) = &r.unsupported {
        let mut reason = why.clone();
        if !missing.is_empty() {
            reason += &format!("; here: {}", missing.join("; "));
        }
        return (false, reason);
    }
    if missing.is_empty() {
        (true, "runnable on this machine".into())
    } else {
        (false, missing.join("; "))
    }
}

pub fn list(target: Option<&Path>) -> Result<Vec<ListEntry>> {
    let m = Machine::probe();
    let t = target.map(Path::to_path_buf).unwrap_or_else(|| ".".into());
    Ok(builtin()?
        .iter()
        .map(|r| {
            let (ok, reason) = runnable(r, &m, &t);
            ListEntry {
                name: r.name.clone(),
                seed: r.seed.clone(),
                study: recipe::study_title(&r.seed).to_string(),
                section: r.section.clone(),
                claim: r.claim.clone(),
                needs: r.needs.clone(),
                runnable: ok,
                reason,
            }
        })
        .collect())
}

pub fn list_text(entries: &[ListEntry]) -> String {
    let mut s = String::new();
    for e in entries {
        s += &format!(
            "{:<32} {} {}\n    {}\n    claim: {}\n    needs: {}\n    {}\n\n",
            e.name,
            e.seed,
            e.study,
            e.section,
            e.claim,
            if e.needs.is_empty() {
                "nothing special".to_string()
            } else {
                e.needs.join(", ")
            },
            if e.runnable {
                "runnable here".to_string()
            } else {
                format!("cannot run here: {}", e.reason)
            }
        );
    }
    s
}

pub struct ReproduceOptions {
    pub exe: PathBuf,
    pub output: PathBuf,
    pub target: Option<PathBuf>,
    pub scale: Scale,
    pub interrupted: Arc<AtomicBool>,
    pub progress_bar: bool,
    /// Judge the runs already stored in the output directory again (after a
    /// rule was edited); run nothing.
    pub judge_only: bool,
    /// Wall time the whole invocation may take; further rounds of repeats
    /// (adaptive repetition) run only while it lasts. `None`: the scale's
    /// default ([`default_budget`]).
    pub budget: Option<Duration>,
}

/// The default `--budget`: 8 minutes under --quick (the whole of
/// `reproduce all --quick` stays under 10), 90 minutes at the default
/// scale, none in tests (no further rounds).
pub fn default_budget(scale: Scale) -> Duration {
    match scale {
        Scale::Default => Duration::from_secs(90 * 60),
        Scale::Quick => Duration::from_secs(8 * 60),
        Scale::Tiny(_) => Duration::ZERO,
    }
}

/// Seconds the first round of a recipe takes, roughly: runs x (runtime +
/// half a second of start and evidence).
fn estimate_s(r: &Recipe, scale: Scale) -> f64 {
    let runtime = match scale {
        Scale::Default => &r.runtime.default,
        _ => &r.runtime.quick,
    };
    let secs = ringlab_stats::units::parse_duration(runtime)
        .map(|d| d.as_secs_f64())
        .unwrap_or(1.0);
    r.sweep
        .iter()
        .map(|s| {
            let axes = match (&s.quick_axes, scale) {
                (Some(q), Scale::Quick | Scale::Tiny(_)) => q,
                _ => &s.axes,
            };
            let combos: usize = axes
                .values()
                .map(|v| v.as_array().map_or(1, Vec::len))
                .product();
            combos as f64 * f64::from(r.repeats(s, scale)) * (secs + 0.5)
        })
        .sum()
}

/// What `reproduce` did: verdict per recipe, and the recipes that could not
/// run (named ones that cannot run here, or whose runs failed).
pub struct Summary {
    /// Name, verdict, reason, and the headline figure with its interval.
    pub verdicts: Vec<(String, Verdict, String, String)>,
    pub failed: Vec<(String, String)>,
    pub index_html: PathBuf,
}

/// Resolves the names (`all` for every recipe) to recipes.
pub fn select(names: &[String]) -> Result<(Vec<Recipe>, bool)> {
    let all = builtin()?;
    if names.is_empty() {
        return Err(usage_error(
            "reproduce: name recipes, or 'all', or list them with --list",
        ));
    }
    if names.iter().any(|n| n == "all") {
        return Ok((all, true));
    }
    let mut out = Vec::new();
    for n in names {
        match all.iter().find(|r| &r.name == n) {
            Some(r) => out.push(r.clone()),
            None => {
                return Err(usage_error(format!(
                "reproduce: no recipe named {n}; 'ringlab reproduce --list' shows the {} recipes",
                all.len()
            )))
            }
        }
    }
    Ok((out, false))
}

pub fn reproduce(names: &[String], opts: &ReproduceOptions) -> Result<Summary> {
    let (recipes, all) = select(names)?;
    if let Some(t) = &opts.target {
        if !t.exists() {
            return Err(usage_error(format!(
                "--target {}: does not exist; name an existing file or block device (the recipes that write always use a file of their own)",
                t.display()
            )));
        }
    }
    std::fs::create_dir_all(&opts.output).map_err(|e| {
        usage_error(format!(
            "--output {}: cannot create it: {e}",
            opts.output.display()
        ))
    })?;
    let machine = Machine::probe();
    let mut files = Files::new(&opts.output, opts.scale);
    let mut summary = Summary {
        verdicts: Vec::new(),
        failed: Vec::new(),
        index_html: opts.output.join("index.html"),
    };
    let started = Instant::now();
    let budget = opts.budget.unwrap_or_else(|| default_budget(opts.scale));
    // Each recipe may run further rounds until its share of the budget
    // (by the estimated length of its first round) is spent; time an
    // earlier recipe left unused carries over.
    let estimates: Vec<f64> = recipes
        .iter()
        .map(|r| {
            if r.unsupported.is_some() {
                0.0
            } else {
                estimate_s(r, opts.scale)
            }
        })
        .collect();
    let total_estimate: f64 = estimates.iter().sum::<f64>().max(1.0);
    let mut cumulative = 0.0;
    for (r, est) in recipes.iter().zip(&estimates) {
        cumulative += est;
        let deadline = started + budget.mul_f64(cumulative / total_estimate);
        if opts.interrupted.load(Ordering::Relaxed) {
            break;
        }
        let dir = opts.output.join(&r.name);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let target_for_check = opts.target.clone().unwrap_or_else(|| opts.output.clone());
        let (ok, why) = runnable(r, &machine, &target_for_check);
        let t0 = Instant::now();
        let v = if !ok {
            if !all {
                summary.failed.push((r.name.clone(), why.clone()));
            }
            cannot_run(r, &machine, &why)
        } else {
            eprintln!("ringlab reproduce: {} ({} {})", r.name, r.seed, r.section);
            let outcome = if opts.judge_only {
                judge_stored(r, &dir, &machine)
            } else {
                run_recipe(r, &dir, opts, &machine, &mut files, deadline)
            };
            match outcome {
                Ok(v) => v,
                Err(e) if e.downcast_ref::<Interrupted>().is_some() => return Err(e),
                Err(e) => {
                    let why = format!("{e:#}");
                    summary.failed.push((r.name.clone(), why.clone()));
                    let earlier = dir.join("verdict.json");
                    if earlier.exists() {
                        // The verdict of the runs stored before stays.
                        eprintln!(
                            "ringlab reproduce: {} could not run: {why}; {} is left as it was",
                            r.name,
                            earlier.display()
                        );
                        continue;
                    }
                    cannot_run(r, &machine, &format!("the runs failed: {why}"))
                }
            }
        };
        let word = v["verdict"].as_str().unwrap_or("cannot-run").to_string();
        let reason = v["reason"].as_str().unwrap_or("").to_string();
        eprintln!(
            "ringlab reproduce: {} -> {word} ({:.0} s): {reason}",
            r.name,
            t0.elapsed().as_secs_f64()
        );
        write_json(&dir.join("verdict.json"), &v)?;
        let verdict = match word.as_str() {
            "reproduced" => Verdict::Reproduced,
            "inconclusive" => Verdict::Inconclusive,
            "contradicted" => Verdict::Contradicted,
            _ => Verdict::CannotRun,
        };
        summary.verdicts.push((
            r.name.clone(),
            verdict,
            reason,
            page::figure_text(&v["measured"]),
        ));
    }
    files.remove();
    page::write_index(&opts.output)?;
    if opts.interrupted.load(Ordering::Relaxed) {
        return Err(anyhow::Error::new(Interrupted(format!(
            "reproduce interrupted after {:.0} s; finished recipes are in {}",
            started.elapsed().as_secs_f64(),
            opts.output.display()
        ))));
    }
    Ok(summary)
}

fn write_json(path: &Path, v: &Json) -> Result<()> {
    let mut text = serde_json::to_string_pretty(v)?;
    text.push('\n');
    crate::store::write_atomic(path, text.as_bytes())
}

fn header(r: &Recipe, m: &Machine) -> serde_json::Map<String, Json> {
    let mut v = serde_json::Map::new();
    v.insert("recipe".into(), json!(r.name));
    v.insert("seed".into(), json!(r.seed));
    v.insert("study".into(), json!(recipe::study_title(&r.seed)));
    v.insert("section".into(), json!(r.section));
    let claim = match &r.figure {
        Some(f) => json!({"text": r.claim, "quote": r.quote, "value": f.value, "unit": f.unit}),
        None => json!({"text": r.claim, "quote": r.quote, "value": null, "unit": null}),
    };
    v.insert("claim".into(), claim);
    v.insert(
        "kernel".into(),
        json!({
            "release": m.kernel,
            "cpus": ringlab_core::cpus::format_cpu_list(&m.cpus),
            "config_hz": m.hz.as_ref().ok(),
            "config_hz_unavailable": m.hz.as_ref().err(),
            "numa_nodes": m.numa_nodes,
        }),
    );
    v
}

fn cannot_run(r: &Recipe, m: &Machine, why: &str) -> Json {
    let mut v = header(r, m);
    v.insert(
        "measured".into(),
        json!({"value": null, "unit": r.figure.as_ref().map(|f| f.unit.clone())}),
    );
    v.insert("verdict".into(), json!("cannot-run"));
    v.insert("reason".into(), json!(why));
    v.insert("checks".into(), json!([]));
    v.insert("evidence".into(), json!([]));
    Json::Object(v)
}

/// Files the recipes run on, laid out once per invocation, removed after.
struct Files {
    dir: PathBuf,
    size: u64,
    tmpfs_size: u64,
    scratch: Option<PathBuf>,
    tmpfs: Option<PathBuf>,
    cached: Option<PathBuf>,
    /// The raw device, and whether this process sized it (then it is
    /// reset at the end).
    raw: Option<(PathBuf, bool)>,
    /// The files laid out here, removed by the cleaner process if
    /// reproduce is killed before [`Files::remove`].
    watched: Vec<ringlab_core::files::Watched>,
}

/// The zram device the raw-device recipes use when --target names none.
const ZRAM: &str = "/dev/zram0";

/// Why `dev` cannot be read as a raw device now: mounted or swap.
fn device_in_use(dev: &Path) -> Option<String> {
    let name = dev.display().to_string();
    for (file, what) in [("/proc/mounts", "mounted"), ("/proc/swaps", "used as swap")] {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if text
            .lines()
            .any(|l| l.split_whitespace().next() == Some(name.as_str()))
        {
            return Some(format!("{name} is {what}"));
        }
    }
    None
}

impl Files {
    fn new(dir: &Path, scale: Scale) -> Files {
        let (size, tmpfs_size) = match scale {
            Scale::Default => (1 << 30, 256 << 20),
            Scale::Quick => (256 << 20, 64 << 20),
            Scale::Tiny(_) => (32 << 20, 16 << 20),
        };
        Files {
            dir: dir.to_path_buf(),
            size,
            tmpfs_size,
            scratch: None,
            tmpfs: None,
            cached: None,
            raw: None,
            watched: Vec::new(),
        }
    }

    /// A file on the results' file system that stays in the page cache:
    /// read through before every sweep that uses it, so every read of the
    /// runs is a cache hit (unlike tmpfs, io_uring serves them inline).
    fn cached(&mut self) -> Result<PathBuf> {
        if let Some(p) = &self.cached {
            return Ok(p.clone());
        }
        let p = self
            .dir
            .join(format!(".reproduce-cached-{}.dat", std::process::id()));
        lay_out(&p, self.tmpfs_size)?;
        self.watched
            .push(ringlab_core::files::Watched::new(&p, false));
        self.cached = Some(p.clone());
        Ok(p)
    }

    /// A raw block device: --target when it is one, else zram (sized and
    /// filled here when nobody set it up, read as it is otherwise). Only
    /// read by the recipes.
    fn raw(&mut self, target: Option<&Path>) -> Result<PathBuf> {
        if let Some((p, _)) = &self.raw {
            return Ok(p.clone());
        }
        use std::os::unix::fs::FileTypeExt;
        if let Some(t) =
            target.filter(|t| std::fs::metadata(t).is_ok_and(|m| m.file_type().is_block_device()))
        {
            self.raw = Some((t.to_path_buf(), false));
            return Ok(t.to_path_buf());
        }
        let dev = PathBuf::from(ZRAM);
        if let Some(why) = device_in_use(&dev) {
            return Err(anyhow!(
                "the raw-device runs need {ZRAM} unused, and {why}: name another raw device with --target (it is only read)"
            ));
        }
        let disksize = "/sys/block/zram0/disksize";
        let size: u64 = std::fs::read_to_string(disksize)
            .map_err(|e| anyhow!("{disksize}: {e} (load the module: modprobe zram)"))?
            .trim()
            .parse()
            .unwrap_or(0);
        let ours = size == 0;
        if ours {
            std::fs::write(disksize, self.tmpfs_size.to_string())
                .with_context(|| format!("sizing {ZRAM} through {disksize}"))?;
            // Data, not zeros: zram serves never-written pages without a
            // decompression.
            lay_out(&dev, self.tmpfs_size).with_context(|| format!("filling {ZRAM}"))?;
        }
        self.raw = Some((dev.clone(), ours));
        Ok(dev)
    }

    /// Reads `p` through, so its pages are in the page cache.
    fn warm(p: &Path) -> Result<()> {
        let mut f = std::fs::File::open(p).with_context(|| format!("opening {}", p.display()))?;
        std::io::copy(&mut f, &mut std::io::sink())
            .with_context(|| format!("reading {} into the page cache", p.display()))?;
        Ok(())
    }

    fn scratch(&mut self) -> Result<PathBuf> {
        if let Some(p) = &self.scratch {
            return Ok(p.clone());
        }
        // No PID in the name: a rerun after a kill finds it (and the plan
        // that names it is the same, so the sweeps resume).
        let p = self.dir.join(".reproduce.dat");
        lay_out(&p, self.size)?;
        self.watched
            .push(ringlab_core::files::Watched::new(&p, false));
        self.scratch = Some(p.clone());
        Ok(p)
    }

    fn tmpfs(&mut self) -> Result<PathBuf> {
        if let Some(p) = &self.tmpfs {
            return Ok(p.clone());
        }
        let p = PathBuf::from(format!(
            "/dev/shm/ringlab-reproduce-{:016x}.dat",
            path_hash(&self.dir)
        ));
        lay_out(&p, self.tmpfs_size)
            .context("laying out the page-cache (tmpfs) file in /dev/shm")?;
        self.watched
            .push(ringlab_core::files::Watched::new(&p, false));
        self.tmpfs = Some(p.clone());
        Ok(p)
    }

    fn remove(&mut self) {
        for p in [self.scratch.take(), self.tmpfs.take(), self.cached.take()]
            .into_iter()
            .flatten()
        {
            let _ = std::fs::remove_file(p);
        }
        self.watched.clear();
        if let Some((_, true)) = self.raw.take() {
            // Sized here: give its memory back.
            let _ = std::fs::write("/sys/block/zram0/reset", "1");
        }
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        self.remove();
    }
}

/// FNV-1a of the results directory's absolute path: one tmpfs file name per
/// results directory, the same on every invocation.
fn path_hash(dir: &Path) -> u64 {
    let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    abs.as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// Writes `size` bytes of non-repeating data (not zeros: no file system or
/// device may shortcut them) and syncs them.
///
/// A file of that size already there (left by a run that was killed) is
/// used as it is. A new one is written under a temporary name beside it and
/// renamed when complete, so a kill never leaves a partial file; the file
/// system must have room for it.
///
/// A block device (zram, sized here) is written in place: renaming a file
/// over it would replace the device node.
fn lay_out(path: &Path, size: u64) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::metadata(path);
    if meta.as_ref().is_ok_and(|m| m.is_file() && m.len() == size) {
        return Ok(());
    }
    if meta.is_ok_and(|m| m.file_type().is_block_device()) {
        return lay_out_at(path, size);
    }
    ringlab_core::files::check_free_space(path, size, "laying out the recipe file")?;
    ringlab_core::files::remove_stale_temps(path);
    let temp = ringlab_core::files::TempName::new(ringlab_core::files::temp_path(path));
    lay_out_at(&temp.path, size)?;
    std::fs::rename(&temp.path, path)
        .with_context(|| format!("renaming the recipe file into {}", path.display()))?;
    temp.forget();
    Ok(())
}

fn lay_out_at(path: &Path, size: u64) -> Result<()> {
    let mut f = std::fs::File::create(path)
        .with_context(|| format!("creating the recipe file {}", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut left = size;
    while left > 0 {
        for chunk in buf.chunks_exact_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_le_bytes());
        }
        let n = left.min(buf.len() as u64) as usize;
        f.write_all(&buf[..n])
            .with_context(|| format!("writing {}", path.display()))?;
        left -= n as u64;
    }
    f.sync_all()
        .with_context(|| format!("syncing {}", path.display()))?;
    Ok(())
}

/// A process that runs beside the sweeps; stopped on drop.
struct BackgroundProc {
    child: Child,
    what: String,
}

impl Drop for BackgroundProc {
    fn drop(&mut self) {
        // Our own child, not yet reaped.
        let _ = kill_process(Pid::from_child(&self.child), Signal::TERM);
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_pinned(mut cmd: Command, cpus: Option<&[u32]>) -> Result<Child> {
    // The child dies with us and runs on its CPUs.
    ringlab_core::child::die_with_parent(&mut cmd, cpus.unwrap_or(&[]));
    Ok(cmd.spawn()?)
}

/// A port named by the results directory (so the plan, which holds the URL,
/// is the same on a rerun), or any free port when that one is taken.
fn port_for(dir: &Path) -> Result<u16> {
    let preferred = 20000 + (path_hash(dir) % 20000) as u16;
    if std::net::TcpListener::bind(("127.0.0.1", preferred)).is_ok() {
        return Ok(preferred);
    }
    free_port()
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(l.local_addr()?.port())
}

fn wait_listening(port: u16, child: &mut Child, what: &str) -> Result<()> {
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        if let Ok(Some(st)) = child.try_wait() {
            return Err(anyhow!(
                "{what} exited ({st}) before listening on port {port}"
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(anyhow!(
        "{what} did not listen on 127.0.0.1:{port} within 5 s"
    ))
}

fn start_background(
    r: &Recipe,
    dir: &Path,
    opts: &ReproduceOptions,
    machine: &Machine,
    vars: &mut Vars,
) -> Result<Option<BackgroundProc>> {
    let Some(bg) = &r.background else {
        return Ok(None);
    };
    let cpus = match &bg.cpus {
        Some(c) => Some(ringlab_core::cpus::parse_cpu_list(&subst(c, vars))?),
        None => None,
    };
    let args: Vec<String> = bg.args.iter().map(|a| subst(a, vars)).collect();
    match bg.command.as_str() {
        "serve" => {
            let port = port_for(&opts.output)?;
            vars.insert("url".into(), format!("http://127.0.0.1:{port}/"));
            let (mut child, what) = match (&machine.nginx, bg.prefer_nginx) {
                (Some(nginx), true) => {
                    let ndir = dir.join("nginx");
                    std::fs::create_dir_all(&ndir)?;
                    let conf = ndir.join("nginx.conf");
                    std::fs::write(
                        &conf,
                        format!(
                            "# written by ringlab reproduce: one worker, 200 with an empty body\n\
                             worker_processes 1;\ndaemon off;\npid {pid};\nerror_log {log} warn;\n\
                             events {{ worker_connections 4096; }}\n\
                             http {{\n  access_log off;\n  keepalive_requests 1000000;\n  server {{\n    listen 127.0.0.1:{port} backlog=4096;\n    location / {{ return 200 \"\"; }}\n  }}\n}}\n",
                            pid = ndir.join("nginx.pid").display(),
                            log = ndir.join("error.log").display(),
                        ),
                    )?;
                    let mut cmd = Command::new(nginx);
                    cmd.arg("-p")
                        .arg(&ndir)
                        .arg("-e")
                        .arg(ndir.join("error.log"))
                        .arg("-c")
                        .arg(&conf)
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null());
                    (
                        spawn_pinned(cmd, cpus.as_deref())
                            .with_context(|| format!("starting {}", nginx.display()))?,
                        format!("nginx ({}, one worker)", nginx.display()),
                    )
                }
                _ => {
                    let mut cmd = Command::new(&opts.exe);
                    cmd.arg("serve")
                        .arg("--listen")
                        .arg(format!("127.0.0.1:{port}"))
                        .args(&args)
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null());
                    (
                        spawn_pinned(cmd, cpus.as_deref()).context("starting ringlab serve")?,
                        format!("ringlab serve {}", args.join(" ")),
                    )
                }
            };
            wait_listening(port, &mut child, &what)?;
            let what = format!("server: {what}");
            Ok(Some(BackgroundProc { child, what }))
        }
        "io" => {
            let mut cmd = Command::new(&opts.exe);
            cmd.arg("io")
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let child =
                spawn_pinned(cmd, cpus.as_deref()).context("starting the background ringlab io")?;
            let what = format!("ringlab io {}", args.join(" "));
            // Let it reach its steady state before the first measured run.
            std::thread::sleep(Duration::from_millis(300));
            Ok(Some(BackgroundProc { child, what }))
        }
        other => Err(anyhow!(
            "recipe {}: background command {other} is not io or serve",
            r.name
        )),
    }
}

fn subst(s: &str, vars: &Vars) -> String {
    match s.strip_prefix('@').and_then(|k| vars.get(k)) {
        Some(v) => v.clone(),
        None => s.to_string(),
    }
}

/// Runs a recipe's sweep, and once more where some of its runs failed:
/// the second call runs only the failed ones (the sweep store keeps the
/// runs that were done). A run fails when it measured nothing, as one
/// 150 ms HTTP run of 18 did in CI on a VM whose host stole up to half of
/// its CPU (no response in the window); `ringlab sweep` leaves the retry
/// to the user, but
/// a recipe's rounds are new directories each time, so reproduce retries
/// here and says so, and the verdict's quietness names the sweep. A
/// failure that repeats stands; an interruption is never retried. Returns
/// the sweep's outcome and, where it was retried, the first failure.
fn retry_failed_runs_once<T>(
    what: &str,
    mut sweep: impl FnMut() -> Result<T>,
) -> Result<(T, Option<String>)> {
    match sweep() {
        Err(e) if e.downcast_ref::<Interrupted>().is_none() => {
            let first = format!("{e:#}");
            eprintln!("ringlab reproduce: {what}: {first}; running the failed runs once more");
            sweep().map(|t| (t, Some(first)))
        }
        done => done.map(|t| (t, None)),
    }
}

/// The start of the quietness warning of a sweep whose failed runs were
/// run again.
const RETRIED: &str = "runs failed and were run again once";

/// This process' CPUs while `f` runs: its children inherit them.
fn with_affinity<T>(cpus: Option<&[u32]>, f: impl FnOnce() -> T) -> Result<T> {
    let Some(cpus) = cpus else {
        return Ok(f());
    };
    let before = ringlab_core::cpus::allowed_cpus();
    set_affinity(cpus)?;
    let out = f();
    set_affinity(&before)?;
    Ok(out)
}

fn set_affinity(cpus: &[u32]) -> Result<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c as usize);
    }
    sched_setaffinity(None, &set)
        .map_err(|e| anyhow!("pinning to CPUs {cpus:?}: {}", std::io::Error::from(e)))
}

fn run_recipe(
    r: &Recipe,
    dir: &Path,
    opts: &ReproduceOptions,
    machine: &Machine,
    files: &mut Files,
    deadline: Instant,
) -> Result<Json> {
    let mut vars = Vars::new();
    let uses = |what: &str| r.sweep.iter().any(|s| s.file.as_deref() == Some(what));
    let needs_scratch = uses("scratch")
        || r.background
            .as_ref()
            .is_some_and(|b| b.args.iter().any(|a| a == "@scratch"))
        || (opts.target.is_none()
            && r.sweep
                .iter()
                .any(|s| s.command == "io" && s.file.as_deref().is_none_or(|f| f == "target")));
    if needs_scratch {
        vars.insert("scratch".into(), files.scratch()?.display().to_string());
    }
    if uses("tmpfs") {
        vars.insert("tmpfs".into(), files.tmpfs()?.display().to_string());
    }
    if uses("cached") {
        vars.insert("cached".into(), files.cached()?.display().to_string());
    }
    if uses("raw") {
        let raw = files.raw(opts.target.as_deref())?;
        vars.insert("raw".into(), raw.display().to_string());
    }
    let target = match &opts.target {
        Some(t) => t.display().to_string(),
        None => vars.get("scratch").cloned().unwrap_or_default(),
    };
    vars.insert("target".into(), target);
    let irq = machine::block_irq_cpu();
    let irq_cpu = irq.unwrap_or_else(|| machine.cpus.last().copied().unwrap_or(0));
    let other = machine
        .cpus
        .iter()
        .copied()
        .find(|&c| c != irq_cpu)
        .unwrap_or(irq_cpu);
    vars.insert("irq_cpu".into(), irq_cpu.to_string());
    vars.insert("other_cpu".into(), other.to_string());
    vars.insert("two_cpus".into(), format!("{other},{irq_cpu}"));
    let bg = start_background(r, dir, opts, machine, &mut vars)?;
    let mut quiet = Vec::new();
    let mut round = 0u32;
    let mut todo: Vec<SweepSpec> = r.sweep.clone();
    let mut verdict = loop {
        let t0 = Instant::now();
        for s in &todo {
            let bg_pid = bg.as_ref().map(|b| b.child.id());
            run_round(r, s, round, dir, opts, &vars, machine, bg_pid, &mut quiet)?;
        }
        let round_time = t0.elapsed();
        let ran = runs_in(
            &todo,
            opts.scale,
            if round == 0 {
                None
            } else {
                Some(recipe::ROUND_REPEATS)
            },
            r,
        );
        let points = load_points(r, dir)?;
        let outcomes = outcomes(r, machine, &points);
        todo = sweeps_to_repeat(r, &outcomes);
        // The next round's time, scaled from this one's by its runs.
        let next = runs_in(&todo, opts.scale, Some(recipe::ROUND_REPEATS), r);
        let next_time = round_time.mul_f64(next as f64 / ran.max(1) as f64);
        let next_fits = Instant::now() + next_time <= deadline;
        if todo.is_empty() || round >= MAX_EXTRA_ROUNDS || !next_fits {
            let server = bg.as_ref().map(|b| b.what.clone());
            break judge_outcomes(r, machine, &points, outcomes, &vars, server);
        }
        round += 1;
        eprintln!(
                "ringlab reproduce: {}: a check is undecided or flagged a run; round {} ({} more repeat(s) of {})",
                r.name,
                round + 1,
                recipe::ROUND_REPEATS,
                todo.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
            );
    };
    let server = bg.as_ref().map(|b| b.what.clone());
    drop(bg);
    attach_quietness(&mut verdict, &quiet);
    write_json(
        &dir.join("setup.json"),
        &json!({"vars": vars, "background": server, "quietness": quiet}),
    )?;
    Ok(verdict)
}

/// Further rounds of repeats a recipe may run while a check is undecided.
const MAX_EXTRA_ROUNDS: u32 = 3;

/// Runs a round of `sweeps` makes: points x repeats (`None`: the first
/// round's).
fn runs_in(sweeps: &[SweepSpec], scale: Scale, repeats: Option<u32>, r: &Recipe) -> usize {
    sweeps
        .iter()
        .map(|s| {
            let axes = match (&s.quick_axes, scale) {
                (Some(q), Scale::Quick | Scale::Tiny(_)) => q,
                _ => &s.axes,
            };
            let points: usize = axes
                .values()
                .map(|v| v.as_array().map_or(1, Vec::len))
                .product();
            points * repeats.unwrap_or_else(|| r.repeats(s, scale)) as usize
        })
        .sum()
}

/// The sweeps whose series feed a check that is inconclusive or flagged a
/// run or an outlier: another round of repeats may decide it. Each comes
/// back narrowed to the x values those checks compare (`at`, `a_x`,
/// `b_x`), when every one of them names its values.
fn sweeps_to_repeat(r: &Recipe, outcomes: &[verdict::CheckOutcome]) -> Vec<SweepSpec> {
    // Sweep name -> (x axis, the x values needed; None: all of them).
    let mut need: Vec<(String, String, Option<Vec<String>>)> = Vec::new();
    for (c, o) in r.check.iter().zip(outcomes) {
        let undecided = o.verdict == Verdict::Inconclusive
            || (o.verdict != Verdict::CannotRun && !o.flagged.is_empty());
        if !undecided {
            continue;
        }
        let sides = std::iter::once((&c.a, &c.a_x)).chain(c.b.iter().map(|b| (b, &c.b_x)));
        for (series, only) in sides {
            let Some(spec) = r.series.get(series) else {
                continue;
            };
            let axis = spec.x.clone().or_else(|| r.x.clone()).unwrap_or_default();
            let values: Option<Vec<String>> = match (only, &c.at) {
                (Some(x), _) => Some(vec![toml_text(x)]),
                (None, Some(at)) => Some(at.iter().map(toml_text).collect()),
                (None, None) => None,
            };
            match need.iter_mut().find(|n| n.0 == spec.sweep) {
                Some(n) => {
                    n.2 = match (n.2.take(), values) {
                        (Some(mut a), Some(b)) if n.1 == axis => {
                            a.extend(b);
                            Some(a)
                        }
                        _ => None,
                    }
                }
                None => need.push((spec.sweep.clone(), axis, values)),
            }
        }
    }
    r.sweep
        .iter()
        .filter_map(|s| {
            let (_, axis, values) = need.iter().find(|n| n.0 == s.name)?;
            let mut s = s.clone();
            if let Some(values) = values {
                for table in std::iter::once(&mut s.axes).chain(s.quick_axes.iter_mut()) {
                    if let Some(toml::Value::Array(list)) = table.get_mut(axis.as_str()) {
                        let kept: Vec<toml::Value> = list
                            .iter()
                            .filter(|v| values.contains(&toml_text(v)))
                            .cloned()
                            .collect();
                        if !kept.is_empty() {
                            *list = kept;
                        }
                    }
                }
            }
            Some(s)
        })
        .collect()
}

fn toml_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// DIR/NAME/SWEEP for the first round, DIR/NAME/SWEEP.roundN after.
fn round_dir(dir: &Path, sweep: &str, round: u32) -> PathBuf {
    if round == 0 {
        dir.join(sweep)
    } else {
        dir.join(format!("{sweep}.round{}", round + 1))
    }
}

#[allow(clippy::too_many_arguments)]
fn run_round(
    r: &Recipe,
    s: &SweepSpec,
    round: u32,
    dir: &Path,
    opts: &ReproduceOptions,
    vars: &Vars,
    machine: &Machine,
    bg_pid: Option<u32>,
    quiet: &mut Vec<Json>,
) -> Result<()> {
    let mut spec = s.clone();
    let file = match s.file.as_deref() {
        Some("scratch") => vars.get("scratch").cloned(),
        Some("tmpfs") => vars.get("tmpfs").cloned(),
        Some("cached") => vars.get("cached").cloned(),
        Some("raw") => vars.get("raw").cloned(),
        Some("none") => None,
        _ if s.command == "io" => vars.get("target").cloned(),
        _ => None,
    };
    if let Some(f) = file {
        spec.options.insert("target".into(), f.into());
    }
    if s.command == "rocksdb"
        && matches!(opts.scale, Scale::Tiny(_))
        && !spec.options.contains_key("db")
    {
        // Tests: a database of their own, gone with the results.
        let db = dir.join(format!(".rocksdb-{}", s.name));
        spec.options
            .insert("db".into(), db.display().to_string().into());
    }
    // A further round goes to the first round directory not made yet: one
    // from an earlier invocation keeps its own plan and runs.
    let mut n = round;
    while n > 0 && round_dir(dir, &s.name, n).exists() {
        n += 1;
    }
    let plan = r.plan(&spec, opts.scale, vars, n)?;
    let sweep_dir = round_dir(dir, &s.name, n);
    let cpus = match &s.cpus {
        Some(c) => Some(ringlab_core::cpus::parse_cpu_list(&subst(c, vars))?),
        None => None,
    };
    let sopts = SweepOptions {
        exe: opts.exe.clone(),
        interrupted: opts.interrupted.clone(),
        progress_bar: opts.progress_bar,
    };
    if s.file.as_deref() == Some("cached") {
        if let Some(p) = vars.get("cached") {
            Files::warm(Path::new(p))?;
        }
    }
    let before = machine::ProcSample::take(bg_pid);
    let what = format!("sweep {} of recipe {}", s.name, r.name);
    let (_, retried) = retry_failed_runs_once(&what, || {
        with_affinity(cpus.as_deref(), || run_sweep(&plan, &sweep_dir, &sopts))?
    })
    .with_context(|| what.clone())?;
    let after = machine::ProcSample::take(bg_pid);
    let name = sweep_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut q = machine::quietness(&name, &before, &after, machine.cpus.len());
    if let (Some(first), Some(w)) = (retried, q["warnings"].as_array_mut()) {
        w.push(json!(format!("{RETRIED} (first failure: {first})")));
    }
    quiet.push(q);
    Ok(())
}

/// verdict.json gets the quietness of every sweep; the reason gets one
/// warning with the worst figures when the machine was busy.
fn attach_quietness(verdict: &mut Json, quiet: &[Json]) {
    let busy: Vec<&Json> = quiet
        .iter()
        .filter(|q| q["warnings"].as_array().is_some_and(|w| !w.is_empty()))
        .collect();
    let worst = |key: &str| {
        quiet
            .iter()
            .filter_map(|q| q[key].as_f64())
            .reduce(f64::max)
    };
    // Other work on the CPUs during a sweep changes what timing shows (an
    // SQPOLL poller or an io-wq worker that has to share its CPU): such a
    // verdict is not decided. Kernel counts per request (kstat.*) are not
    // timing and stand.
    let other = worst("other_cpu_percent").filter(|o| *o > machine::BUSY_OTHER_PERCENT);
    if let (Some(o), Some(obj)) = (other, verdict.as_object_mut()) {
        let decisive = matches!(obj["verdict"].as_str(), Some("reproduced" | "contradicted"));
        let metric = obj["decided_by"]
            .as_u64()
            .and_then(|i| obj["checks"].get(i.checked_sub(1)? as usize))
            .and_then(|c| c["metric"].as_str())
            .unwrap_or("")
            .to_string();
        if decisive && !metric.starts_with("kstat.") {
            let was = obj["verdict"].as_str().unwrap_or("").to_string();
            let reason = obj["reason"].as_str().unwrap_or("").to_string();
            obj.insert("verdict".into(), json!("inconclusive"));
            obj.insert(
                "reason".into(),
                json!(format!(
                    "Not decided: other processes used up to {o:.0}% of the CPUs' time during the runs (over {}%), and a verdict on timing ({metric}) from a busy machine says more about the other work than about the claim; run again on a quiet machine. The runs alone would say {was}: {reason}",
                    machine::BUSY_OTHER_PERCENT
                )),
            );
        }
    }
    if let Some(o) = verdict.as_object_mut() {
        if !busy.is_empty() {
            let mut parts = Vec::new();
            if let Some(c) = worst("other_cpu_percent").filter(|c| *c > machine::BUSY_OTHER_PERCENT)
            {
                parts.push(format!("other processes up to {c:.0}% of the CPUs"));
            }
            if let Some(l) = worst("load1_before") {
                parts.push(format!("load average up to {l:.1} before a sweep"));
            }
            if let Some(r) = worst("runnable_before").filter(|r| *r > 1.0) {
                parts.push(format!("up to {:.0} other task(s) runnable", r - 1.0));
            }
            if let Some(s) = worst("steal_percent").filter(|s| *s > 2.0) {
                parts.push(format!("up to {s:.1}% CPU steal"));
            }
            let retried = quiet
                .iter()
                .filter(|q| {
                    q["warnings"].as_array().is_some_and(|w| {
                        w.iter()
                            .any(|w| w.as_str().is_some_and(|w| w.starts_with(RETRIED)))
                    })
                })
                .count();
            if retried > 0 {
                parts.push(format!("failed runs run again in {retried} sweep(s)"));
            }
            let reason = o["reason"].as_str().unwrap_or("").to_string();
            o.insert(
                "reason".into(),
                json!(format!(
                    "{reason} Warning: the machine was busy during {} of {} sweep(s) ({}); other work widens the intervals, run again on a quiet machine.",
                    busy.len(),
                    quiet.len(),
                    parts.join(", ")
                )),
            );
        }
        o.insert("quietness".into(), json!(quiet));
    }
}

/// The verdict of the runs stored in `dir`, with the setup they ran with.
fn judge_stored(r: &Recipe, dir: &Path, machine: &Machine) -> Result<Json> {
    let setup: Json = std::fs::read_to_string(dir.join("setup.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Json::Null);
    let vars: Vars = setup["vars"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let server = setup["background"].as_str().map(str::to_string);
    let points = load_points(r, dir)?;
    if points.is_empty() {
        return Err(anyhow!(
            "{} holds no finished runs to judge; run the recipe first",
            dir.display()
        ));
    }
    let mut v = judge(r, machine, &points, &vars, server);
    let quiet = setup["quietness"].as_array().cloned().unwrap_or_default();
    attach_quietness(&mut v, &quiet);
    Ok(v)
}

/// Every stored result of the recipe's sweeps, every round of repeats.
pub fn load_points(r: &Recipe, dir: &Path) -> Result<Vec<Point>> {
    let mut points = Vec::new();
    for s in &r.sweep {
        let mut dirs = vec![dir.join(&s.name)];
        for round in 1.. {
            let d = round_dir(dir, &s.name, round);
            if !d.join("index.json").exists() {
                break;
            }
            dirs.push(d);
        }
        for sdir in dirs {
            let index = read_index(&sdir)?;
            for e in index.runs.iter().filter(|e| e.status == Status::Done) {
                let path = sdir.join(&e.result);
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("reading {}", path.display()))?;
                let result: Json = serde_json::from_str(&text)
                    .with_context(|| format!("parsing {}", path.display()))?;
                points.push(Point {
                    sweep: s.name.clone(),
                    values: e.values.clone(),
                    result,
                });
            }
        }
    }
    Ok(points)
}

/// The figures shown per series and x in the evidence table.
pub const EVIDENCE: [(&str, &str); 12] = [
    ("IOPS or req/s", "total.iops"),
    ("p50 µs", "total.lat_ns.p50"),
    ("p99 µs", "total.lat_ns.p99"),
    ("syscalls/op", "kstat.per_op.syscalls_per_op"),
    ("io_uring_enter/op", "kstat.per_op.io_uring_enter_per_op"),
    ("ctx switches/op", "kstat.per_op.context_switches_per_op"),
    ("IPIs/op", "kstat.per_op.ipis_per_op"),
    ("file_get/op", "kstat.per_op.io_uring_file_get_per_op"),
    (
        "async work/op",
        "kstat.per_op.io_uring_queue_async_work_per_op",
    ),
    ("CPU µs/op", "kstat.per_op.cpu_us_per_op"),
    ("helpers CPU µs/op", "kstat.per_op.helpers_cpu_us_per_op"),
    ("iou-* threads", "kstat.helper_threads_count"),
];

/// Every check of the recipe judged on the stored runs.
pub fn outcomes(r: &Recipe, machine: &Machine, points: &[Point]) -> Vec<verdict::CheckOutcome> {
    let limits = Limits {
        tick_ns: machine.tick_ns(),
        hz: machine.hz.as_ref().ok().copied(),
    };
    r.check
        .iter()
        .map(|c| verdict::evaluate(r, c, points, &limits))
        .collect()
}

/// verdict.json of a recipe whose runs are stored.
pub fn judge(
    r: &Recipe,
    machine: &Machine,
    points: &[Point],
    vars: &Vars,
    server: Option<String>,
) -> Json {
    let o = outcomes(r, machine, points);
    judge_outcomes(r, machine, points, o, vars, server)
}

/// The headline figure: the recipe's figure when the check it reads
/// decided the verdict, else the deciding check's own ratio (or value).
fn headline(r: &Recipe, o: &verdict::CheckOutcome, index: usize) -> Option<Json> {
    let iv = o.interval;
    let pair = matches!(o.expect.as_str(), "greater" | "less" | "equal");
    // A figure of series a alone (13 KIOPS) is not what a pair check
    // decides on (a/b against a threshold): the headline is then the
    // check's ratio.
    if let Some(f) = r
        .figure
        .as_ref()
        .filter(|f| f.check == index + 1 && !(f.measure == "a" && pair))
    {
        let map = |x: f64| match f.measure.as_str() {
            "a" => x * f.scale,
            "ratio" => x,
            _ => (x - 1.0) * 100.0,
        };
        let value = match f.measure.as_str() {
            "a" => o.a_reduced? * f.scale,
            _ => map(o.measured?),
        };
        // An interval of a alone exists for bounds only.
        let interval = match (f.measure.as_str(), &o.expect[..]) {
            ("a", "at-most" | "at-least") | ("ratio" | "percent", _) => {
                iv.map(|iv| json!([map(iv.lo), map(iv.hi)]))
            }
            _ => None,
        };
        return Some(json!({"value": value, "unit": f.unit, "from": o.what, "interval": interval}));
    }
    let value = o.measured?;
    Some(if pair {
        json!({
            "value": (value - 1.0) * 100.0,
            "unit": format!("% ({})", o.what),
            "from": o.what,
            "interval": iv.map(|iv| json!([(iv.lo - 1.0) * 100.0, (iv.hi - 1.0) * 100.0])),
        })
    } else {
        json!({
            "value": value,
            "unit": o.metric,
            "from": o.what,
            "interval": iv.map(|iv| json!([iv.lo, iv.hi])),
        })
    })
}

pub fn judge_outcomes(
    r: &Recipe,
    machine: &Machine,
    points: &[Point],
    outcomes: Vec<verdict::CheckOutcome>,
    vars: &Vars,
    server: Option<String>,
) -> Json {
    let preferred = r.figure.as_ref().map(|f| f.check.saturating_sub(1));
    let (v, decisive) = verdict::combine(&outcomes, preferred);
    let measured = decisive.and_then(|i| headline(r, outcomes.get(i)?, i));
    let mut reason = match decisive.and_then(|i| Some((i, outcomes.get(i)?))) {
        Some((i, o)) => format!("Decided by check {} ({}): {}.", i + 1, o.what, o.reason),
        None => "the recipe has no rule".to_string(),
    };
    if outcomes.len() > 1 {
        let counts: Vec<String> = outcomes
            .iter()
            .enumerate()
            .map(|(i, o)| format!("{} {}", i + 1, o.verdict.word()))
            .collect();
        reason += &format!(" Checks: {}.", counts.join(", "));
    }
    let flagged: usize = outcomes.iter().map(|o| o.flagged.len()).sum();
    if flagged > 0 {
        reason += &format!(
            " {flagged} run(s) or repeat(s) left out (too few operations, cut short) or flagged as outliers: see each check's flagged list; a left-out run decides nothing."
        );
    }
    if let Some(bg) = &server {
        reason += &format!(" {}{}.", bg[..1].to_uppercase(), &bg[1..]);
    }
    if let Some(n) = &r.scale_note {
        reason += &format!(" {n}");
    }
    let mut out = header(r, machine);
    out.insert(
        "measured".into(),
        measured.unwrap_or(
            json!({"value": null, "unit": r.figure.as_ref().map(|f| f.unit.clone()), "interval": null}),
        ),
    );
    out.insert("verdict".into(), json!(v.word()));
    out.insert("decided_by".into(), json!(decisive.map(|i| i + 1)));
    out.insert("reason".into(), json!(reason));
    out.insert(
        "checks".into(),
        serde_json::to_value(&outcomes).unwrap_or(Json::Null),
    );
    out.insert("evidence".into(), evidence(r, points));
    out.insert(
        "setup".into(),
        json!({
            "target": vars.get("target"),
            "irq_cpu": vars.get("irq_cpu"),
            "other_cpu": vars.get("other_cpu"),
            "background": server,
            "sweeps": r.sweep.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
        }),
    );
    out.insert("plot".into(), page::plot_data(r, points));
    Json::Object(out)
}

fn evidence(r: &Recipe, points: &[Point]) -> Json {
    let mut rows = Vec::new();
    for name in r.series.keys() {
        let cols: Vec<Vec<(String, Json, Option<f64>)>> = EVIDENCE
            .iter()
            .map(|(_, path)| verdict::series_points(r, name, path, points))
            .collect();
        let Some(first) = cols.first() else { continue };
        for (i, (xk, x, _)) in first.iter().enumerate() {
            let mut row = serde_json::Map::new();
            row.insert("series".into(), json!(name));
            row.insert(
                "x".into(),
                if xk.is_empty() || x.is_null() {
                    Json::Null
                } else {
                    x.clone()
                },
            );
            for ((_, path), col) in EVIDENCE.iter().zip(&cols) {
                row.insert((*path).into(), json!(col.get(i).and_then(|c| c.2)));
            }
            rows.push(Json::Object(row));
        }
    }
    Json::Array(rows)
}

#[cfg(test)]
mod tests {
    #[test]
    fn failed_runs_are_retried_once_and_a_repeated_failure_stands() {
        let mut calls = 0;
        let out = super::retry_failed_runs_once("sweep s", || {
            calls += 1;
            if calls == 1 {
                anyhow::bail!("1 of 18 runs failed")
            }
            Ok(calls)
        });
        let (n, first) = out.unwrap();
        assert_eq!(n, 2);
        assert_eq!(first.as_deref(), Some("1 of 18 runs failed"));
        let mut calls = 0;
        let out: anyhow::Result<((), _)> = super::retry_failed_runs_once("sweep s", || {
            calls += 1;
            anyhow::bail!("failure {calls}")
        });
        assert_eq!(calls, 2);
        assert_eq!(out.unwrap_err().to_string(), "failure 2");
        let mut calls = 0;
        let out: anyhow::Result<((), _)> = super::retry_failed_runs_once("sweep s", || {
            calls += 1;
            Err(super::Interrupted("stopped".into()).into())
        });
        assert_eq!(calls, 1, "an interruption is not retried");
        assert!(out
            .unwrap_err()
            .downcast_ref::<super::Interrupted>()
            .is_some());
        let mut calls = 0;
        let out = super::retry_failed_runs_once("sweep s", || {
            calls += 1;
            Ok(())
        });
        assert_eq!(out.unwrap().1, None);
        assert_eq!(calls, 1, "a sweep that succeeded runs once");
    }

    use super::*;

    /// A block device (zram in the recipes; a loop device here) is filled
    /// in place, never replaced by a file renamed over its node.
    #[test]
    fn a_block_device_is_filled_in_place() {
        use std::os::unix::fs::FileTypeExt;
        if !rustix::process::getuid().is_root() {
            eprintln!("skipped a_block_device_is_filled_in_place: needs root (a loop device)");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let backing = dir.path().join("backing");
        std::fs::write(&backing, vec![0u8; 1 << 20]).unwrap();
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&backing)
            .output();
        let Some(out) = out.ok().filter(|o| o.status.success()) else {
            eprintln!("skipped a_block_device_is_filled_in_place: losetup failed");
            return;
        };
        let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        let node = std::fs::metadata(&dev).unwrap();
        let laid = lay_out(&dev, 1 << 20);
        let still_a_device = std::fs::metadata(&dev).is_ok_and(|m| m.file_type().is_block_device());
        if !still_a_device {
            // Put the node back before failing, so the machine keeps it.
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            let _ = std::fs::remove_file(&dev);
            let _ = rustix::fs::mknodat(
                rustix::fs::CWD,
                &dev,
                rustix::fs::FileType::BlockDevice,
                rustix::fs::Mode::from_raw_mode(node.permissions().mode() & 0o7777),
                node.rdev(),
            );
        }
        let _ = Command::new("losetup").arg("-d").arg(&dev).status();
        laid.unwrap();
        assert!(still_a_device, "{} was replaced", dev.display());
        let data = std::fs::read(&backing).unwrap();
        assert!(
            data.iter().any(|&b| b != 0),
            "nothing written to the device"
        );
    }

    #[test]
    fn a_busy_machine_decides_no_timing_verdict() {
        let verdict = |metric: &str| {
            json!({"verdict": "reproduced", "decided_by": 1, "reason": "Decided by check 1.",
                   "checks": [{"metric": metric}]})
        };
        let busy = [json!({"sweep": "s", "other_cpu_percent": 42.0,
                           "warnings": ["other processes used 42% of the 2 CPU(s)' time during the runs"]})];
        let quiet = [json!({"sweep": "s", "other_cpu_percent": 3.0, "warnings": []})];
        let mut v = verdict("total.iops");
        attach_quietness(&mut v, &busy);
        assert_eq!(v["verdict"], "inconclusive", "{v}");
        let why = v["reason"].as_str().unwrap();
        assert!(
            why.starts_with("Not decided: other processes used up to 42%"),
            "{why}"
        );
        assert!(why.contains("would say reproduced"), "{why}");
        // Kernel counts per request are not timing: they stand.
        let mut k = verdict("kstat.per_op.ipis_per_op");
        attach_quietness(&mut k, &busy);
        assert_eq!(k["verdict"], "reproduced", "{k}");
        assert!(k["reason"]
            .as_str()
            .unwrap()
            .contains("Warning: the machine was busy"));
        let mut q = verdict("total.iops");
        attach_quietness(&mut q, &quiet);
        assert_eq!(q["verdict"], "reproduced", "{q}");
        assert!(!q["reason"].as_str().unwrap().contains("busy"));
    }

    #[test]
    fn a_sweep_whose_failed_runs_ran_again_is_named_in_the_reason() {
        let mut v = json!({"verdict": "reproduced", "decided_by": 1, "reason": "Decided by check 1.",
                           "checks": [{"metric": "kstat.per_op.ipis_per_op"}]});
        let retried = format!("{RETRIED} (first failure: 1 of 18 runs failed)");
        let quiet = [
            json!({"sweep": "a", "other_cpu_percent": 3.0, "warnings": [retried]}),
            json!({"sweep": "b", "other_cpu_percent": 3.0, "warnings": []}),
        ];
        attach_quietness(&mut v, &quiet);
        assert_eq!(v["verdict"], "reproduced", "{v}");
        let why = v["reason"].as_str().unwrap();
        assert!(
            why.contains("busy during 1 of 2 sweep(s)")
                && why.contains("failed runs run again in 1 sweep(s)"),
            "{why}"
        );
        assert_eq!(v["quietness"][0]["warnings"][0], json!(retried));
    }

    #[test]
    fn a_further_round_repeats_only_the_points_of_undecided_checks() {
        let r = builtin()
            .unwrap()
            .into_iter()
            .find(|r| r.name == "sqpoll-vs-two-threads")
            .unwrap();
        let m = Machine::probe();
        let mut o = outcomes(&r, &m, &[]);
        for c in &mut o {
            c.verdict = Verdict::Reproduced;
        }
        assert!(sweeps_to_repeat(&r, &o).is_empty(), "all decided");
        // The latency check (at = [64, 128]) is undecided.
        o[0].verdict = Verdict::Inconclusive;
        let todo = sweeps_to_repeat(&r, &o);
        let names: Vec<&str> = todo.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["sqpoll", "two-threads"]);
        assert_eq!(
            todo[0].axes["iodepth"],
            toml::Value::Array(vec![64.into(), 128.into()])
        );
        let quick = todo[0].quick_axes.as_ref().unwrap();
        assert_eq!(quick["iodepth"], toml::Value::Array(vec![64.into()]));
        assert!(
            runs_in(&todo, Scale::Quick, Some(2), &r)
                < runs_in(&r.sweep, Scale::Quick, Some(2), &r)
        );
    }
}
