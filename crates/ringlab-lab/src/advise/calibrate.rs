//! The calibration: the chosen setups run as a sweep of `ringlab io`
//! children (repeated, shuffled, pinned) within the budget, in the sweep
//! store layout, so that `advise --from` and `ringlab report` read it too.

use super::{choose_setups, Probe, Setup, Shape, Skipped};
use crate::plan::parse_plan;
use crate::sweep::{run_planned, SweepOptions};
use anyhow::{Context, Result};
use ringlab_core::{usage_error, UsageError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The shortest run worth measuring.
pub const MIN_RUN_S: f64 = 0.5;
/// The preflight run that checks the shape and times a child's start-up.
const PREFLIGHT_S: f64 = 0.3;

pub struct Request {
    /// A file, a block device, or a directory to create a file in.
    pub target: PathBuf,
    pub shape: Shape,
    /// CPUs for the job threads first, then spare ones (SQPOLL, io-wq).
    pub cpus: Vec<u32>,
    pub budget: Duration,
    /// Size of the file advise creates in a directory.
    pub size_bytes: u64,
    pub allow_destructive: bool,
    /// Keep the calibration's results here (else a temporary directory).
    pub save: Option<PathBuf>,
}

/// What the calibration ran and where its results are.
pub struct Calibrated {
    pub dir: PathBuf,
    pub setups: Vec<Setup>,
    pub skipped: Vec<Skipped>,
    pub info: super::rank::Calibration,
    pub warnings: Vec<String>,
    /// Removes the temporary results directory and created file on drop.
    pub _cleanup: Cleanup,
}

/// Files and directories advise created, removed when it ends.
#[derive(Default)]
pub struct Cleanup {
    pub file: Option<PathBuf>,
    pub dir: Option<PathBuf>,
    /// Both, for the cleaner process if advise is killed (dropped after
    /// the removal above, which [`Drop`] does first).
    watched: Vec<ringlab_core::files::Watched>,
    /// The lock on the calibration file's directory, held to the end.
    _lock: Option<std::fs::File>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(f) = &self.file {
            let _ = std::fs::remove_file(f);
        }
        if let Some(d) = &self.dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// The job CPUs (the first `threads` of `cpus`, or all of them).
pub fn job_cpus(shape: &Shape, cpus: &[u32]) -> Vec<u32> {
    let n = (shape.threads as usize).min(cpus.len());
    cpus[..n].to_vec()
}

/// How many repeats of what length fit the budget: three repeats if each
/// run can last [`MIN_RUN_S`], else two; `None` if not even that fits.
pub fn plan_budget(budget_s: f64, setups: usize, overhead_s: f64) -> Option<(u32, f64)> {
    [3u32, 2].iter().find_map(|&r| {
        let per = budget_s / (setups as f64 * r as f64) - overhead_s;
        (per >= MIN_RUN_S).then_some((r, (per * 10.0).floor() / 10.0))
    })
}

/// The smallest budget that fits two repeats of every setup.
pub fn min_budget_s(setups: usize, overhead_s: f64) -> f64 {
    (setups as f64 * 2.0 * (MIN_RUN_S + overhead_s)).ceil()
}

/// Locks `dir` (flock on the directory itself, so nothing is left behind)
/// for one advise at a time: a second one would share, then remove, the
/// first one's calibration file.
fn lock_dir(dir: &Path) -> Result<std::fs::File> {
    let f = std::fs::File::open(dir).map_err(|e| {
        usage_error(format!(
            "{}: cannot open the directory to lock it: {e}",
            dir.display()
        ))
    })?;
    match rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(f),
        Err(rustix::io::Errno::WOULDBLOCK) => Err(usage_error(format!(
            "{}: another ringlab advise is calibrating in this directory (it holds the directory's lock and its ringlab-advise.dat): wait for it to end, or name another directory",
            dir.display()
        ))),
        Err(e) => Err(usage_error(format!(
            "{}: cannot lock the directory for the calibration file: {e}",
            dir.display()
        ))),
    }
}

/// The calibration file in `dir`: `ringlab-advise.dat`, with no PID in the
/// name so that a rerun after a kill finds it (and uses it when it is
/// whole: marked by ringlab and of the size asked). A new one is laid out
/// under a temporary name and renamed when complete.
fn create_file(dir: &Path, size: u64) -> Result<PathBuf> {
    use ringlab_core::files;
    let path = dir.join("ringlab-advise.dat");
    if let Ok(m) = std::fs::metadata(&path) {
        if m.is_file() && m.len() == size && files::written_by_ringlab(&path) == Some(true) {
            return Ok(path);
        }
        if files::written_by_ringlab(&path) != Some(true) {
            return Err(usage_error(format!(
                "{}: a file ringlab did not lay out is in the way of the calibration file; remove it or name another directory",
                path.display()
            )));
        }
    }
    files::check_free_space(&path, size, "laying out the calibration file")?;
    files::remove_stale_temps(&path);
    let temp = files::TempName::new(files::temp_path(&path));
    lay_out_at(&temp.path, size)?;
    std::fs::rename(&temp.path, &path)
        .with_context(|| format!("renaming the calibration file into {}", path.display()))?;
    temp.forget();
    Ok(path)
}

fn lay_out_at(path: &Path, size: u64) -> Result<()> {
    let path = path.to_path_buf();
    let mut f = std::fs::File::create(&path).map_err(|e| {
        usage_error(format!("{}: cannot create the calibration file: {e}; name a writable directory, a file or a block device", path.display()))
    })?;
    // Real data, not a sparse hole, so reads reach the device.
    let mut block = vec![0u8; 1 << 20];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ size;
    let mut written = 0;
    while written < size {
        for chunk in block.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
        }
        let n = (size - written).min(block.len() as u64) as usize;
        if let Err(e) = f.write_all(&block[..n]) {
            let _ = std::fs::remove_file(&path);
            return Err(anyhow::anyhow!(
                "writing the calibration file {}: {e}",
                path.display()
            ));
        }
        written += n as u64;
    }
    f.sync_all()
        .with_context(|| format!("syncing {}", path.display()))?;
    ringlab_core::files::mark_written(&f);
    Ok(())
}

/// The `ringlab io` options of the shape (plan [options] TOML lines).
/// `own_file`: the target is advise's own calibration file, whose data
/// writes may overwrite.
fn shape_options(
    req: &Request,
    target: &Path,
    runtime_s: f64,
    jobs: &[u32],
    own_file: bool,
) -> String {
    let s = &req.shape;
    let mut o = format!(
        "target = {:?}\nrw = {:?}\nbs = {:?}\niodepth = {}\nnumjobs = {}\nruntime = \"{runtime_s}s\"\n",
        target.display().to_string(),
        s.rw,
        s.bs,
        s.iodepth,
        s.threads
    );
    if !jobs.is_empty() {
        o.push_str(&format!(
            "cpus = {:?}\n",
            ringlab_core::cpus::format_cpu_list(jobs)
        ));
    }
    if s.direct {
        o.push_str("direct = true\n");
    }
    if req.allow_destructive || (own_file && s.writes()) {
        o.push_str("allow-destructive = true\n");
    }
    o
}

/// Runs the bare ring once briefly: proves that the shape runs at all and
/// times a child's start-up. A refusal (exit 2) is the shape's fault.
fn preflight(exe: &Path, args: &[String]) -> Result<f64> {
    let started = Instant::now();
    let out = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("starting {}", exe.display()))?;
    let wall = started.elapsed().as_secs_f64();
    let msg = String::from_utf8_lossy(&out.stderr);
    let last = msg
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no message)");
    let last = last.trim_start_matches("ringlab: ");
    match out.status.code() {
        // Half again as much, for the runs' own variation (file opening,
        // helper threads starting, a busy machine).
        Some(0) => Ok((wall - PREFLIGHT_S).max(0.05) * 1.5),
        Some(2) => Err(usage_error(format!(
            "this I/O shape cannot run on this target with any io_uring setup: {last}"
        ))),
        _ => Err(anyhow::anyhow!(
            "the preflight run of the bare ring failed: {last}"
        )),
    }
}

/// Chooses the setups, checks the budget and runs the calibration sweep.
pub fn calibrate(req: &Request, probe: &Probe, opts: &SweepOptions) -> Result<Calibrated> {
    let started = Instant::now();
    if req.shape.iodepth == 0 || req.shape.threads == 0 {
        return Err(usage_error("--iodepth and --threads are 1 or more"));
    }
    let budget_s = req.budget.as_secs_f64();
    let jobs = job_cpus(&req.shape, &req.cpus);
    let (setups, skipped) = choose_setups(&req.shape, &req.cpus, probe);
    // Before anything is written: a budget that cannot hold the setups.
    let floor = min_budget_s(setups.len(), 0.2) + PREFLIGHT_S;
    if budget_s < floor {
        return Err(usage_error(format!(
            "--budget {budget_s}s is too short to measure anything: {} setups x 2 repeats of at least {MIN_RUN_S} s each need about {floor:.0} s; give --budget {:.0}s or more",
            setups.len(),
            floor.max(10.0)
        )));
    }
    let mut cleanup = Cleanup::default();
    let target = if req.target.is_dir() {
        cleanup._lock = Some(lock_dir(&req.target)?);
        let f = create_file(&req.target, req.size_bytes)?;
        // Watched only once it is ours (a file in the way is refused above).
        cleanup
            .watched
            .push(ringlab_core::files::Watched::new(&f, false));
        cleanup.file = Some(f.clone());
        f
    } else if req.target.exists() {
        req.target.clone()
    } else {
        return Err(usage_error(format!(
            "{}: no such file, device or directory; name one (a directory gets a {} MiB calibration file)",
            req.target.display(),
            req.size_bytes >> 20
        )));
    };
    let own_file = cleanup.file.is_some();
    let dir = match &req.save {
        Some(d) => d.clone(),
        None => {
            let d = std::env::temp_dir().join(format!("ringlab-advise-{}", std::process::id()));
            cleanup
                .watched
                .push(ringlab_core::files::Watched::new(&d, true));
            cleanup.dir = Some(d.clone());
            d
        }
    };
    // The preflight: the bare ring, briefly.
    let pre_plan = parse_plan(
        &format!(
            "command = \"io\"\n[options]\n{}",
            shape_options(req, &target, PREFLIGHT_S, &jobs, own_file)
        ),
        "advise",
    )?;
    let mut pre_args = pre_plan.args(&Default::default());
    pre_args.extend(setups[0].flags.iter().cloned());
    let overhead = preflight(&opts.exe, &pre_args)?;
    let left = budget_s - started.elapsed().as_secs_f64();
    let Some((repeats, runtime)) = plan_budget(left, setups.len(), overhead) else {
        return Err(usage_error(format!(
            "--budget {budget_s}s is too short to measure anything: {} setups x 2 repeats of {MIN_RUN_S} s plus {overhead:.1} s of start-up each need {:.0} s; give --budget {:.0}s or more",
            setups.len(),
            min_budget_s(setups.len(), overhead) + (budget_s - left),
            (min_budget_s(setups.len(), overhead) + (budget_s - left)).ceil().max(10.0)
        )));
    };
    let names: Vec<String> = setups.iter().map(|s| format!("{:?}", s.name)).collect();
    let text = format!(
        "# written by 'ringlab advise': the setup axis names sets of io_uring flags\n# (see the args of each run in index.json)\ncommand = \"io\"\nrepeats = {repeats}\nshuffle = true\n[options]\n{}[axes]\nsetup = [{}]\n",
        shape_options(req, &target, runtime, &jobs, own_file),
        names.join(", ")
    );
    let plan = parse_plan(&text, "advise")?;
    let runs: Vec<_> = plan
        .runs()
        .into_iter()
        .map(|mut r| {
            let name = r
                .values
                .get("setup")
                .map(|v| v.to_string())
                .unwrap_or_default();
            let mut args = plan.args(&Default::default());
            if let Some(s) = setups.iter().find(|s| s.name == name) {
                args.extend(s.flags.iter().cloned());
            }
            r.args = args;
            r
        })
        .collect();
    let mut warnings = Vec::new();
    if let Err(e) = run_planned(&plan, &runs, &dir, opts) {
        if e.downcast_ref::<UsageError>().is_some()
            || e.downcast_ref::<crate::sweep::Interrupted>().is_some()
        {
            return Err(e);
        }
        warnings.push(format!("{e:#}"));
    }
    let info = super::rank::Calibration {
        budget_s,
        runtime_per_run_s: runtime,
        repeats,
        runs: runs.len(),
        wall_s: started.elapsed().as_secs_f64(),
        job_cpus: jobs,
    };
    Ok(Calibrated {
        dir,
        setups,
        skipped,
        info,
        warnings,
        _cleanup: cleanup,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_prefers_three_repeats_then_two_then_refuses() {
        assert_eq!(plan_budget(60.0, 5, 0.3), Some((3, 3.7)));
        // 5 setups x 3 repeats at 0.5 s + 0.3 s need 12 s; 10 s fits two.
        assert_eq!(plan_budget(10.0, 5, 0.3), Some((2, 0.7)));
        assert_eq!(plan_budget(5.0, 5, 0.3), None);
        assert_eq!(min_budget_s(5, 0.3), 8.0);
    }

    #[test]
    fn job_cpus_are_the_first_threads() {
        let shape = Shape {
            rw: "randread".into(),
            bs: "4k".into(),
            iodepth: 8,
            threads: 2,
            direct: false,
        };
        assert_eq!(job_cpus(&shape, &[4, 5, 6]), [4, 5]);
        assert_eq!(job_cpus(&shape, &[4]), [4]);
    }
}
