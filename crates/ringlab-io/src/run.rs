//! The runner: target, job threads, start barrier, runtime, progress, and
//! the `RunResult` at the end.

use crate::engines::EngineKind;
use crate::plan::IoPlan;
use crate::target::{self, Target};
use crate::worker::{Aborted, JobContext, JobOutcome, JobProgress};
use anyhow::{anyhow, Context, Result};
use ringlab_core::StartGate;
use ringlab_stats::units::{format_bandwidth, format_rate};
use ringlab_stats::{Figures, JobFigures, RunResult, ThreadMeasurements, ToolInfo, SCHEMA_VERSION};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

/// How the run reports while it runs.
pub struct RunOptions {
    /// Draw a live one-line progress (only when stdout is a terminal).
    pub progress: bool,
    /// Set asynchronously (SIGINT, SIGTERM) to end the run early; the
    /// figures measured so far are still reported.
    pub interrupted: Arc<AtomicBool>,
}

/// Runs `plan` and returns its result; the target ringlab created, if any,
/// is removed on every path out of here unless --keep.
pub fn run_io(plan: &IoPlan, opts: &RunOptions) -> Result<RunResult> {
    plan.engine.probe(plan)?;
    let target = Arc::new(target::prepare(plan, &opts.interrupted, opts.progress)?);
    let shared = Arc::new(plan.engine.prepare(plan)?);
    // Opened before the job threads exist, so that they, and the kernel
    // threads they cause, inherit the counters.
    let mut kstat = plan.kstat.then(|| {
        let disk = (plan.rw != crate::workload::Rw::Nop)
            .then(|| ringlab_kstat::device::disk_of_path(&target.path))
            .flatten();
        ringlab_kstat::Collector::open(disk)
    });
    let plan = Arc::new(plan.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let gate = Arc::new(StartGate::default());
    let (ready_tx, ready_rx) = mpsc::channel::<bool>();
    let progress: Vec<Arc<JobProgress>> = (0..plan.numjobs)
        .map(|_| Arc::new(JobProgress::default()))
        .collect();

    let mut handles = Vec::with_capacity(plan.numjobs as usize);
    for job in 0..plan.numjobs {
        let ctx = JobContext {
            job,
            plan: plan.clone(),
            target: target.clone(),
            stop: stop.clone(),
            progress: progress[job as usize].clone(),
            shared: shared.clone(),
        };
        let (gate_job, ready_tx, stop) = (gate.clone(), ready_tx.clone(), stop.clone());
        let kind: EngineKind = plan.engine;
        let spawned = thread::Builder::new()
            .name(format!("ringlab-job{job}"))
            .spawn(move || {
                let outcome = kind.run_job(ctx, move |ok| {
                    let _ = ready_tx.send(ok);
                    gate_job.wait()
                });
                // One failed job ends the run for all: its error is the
                // result, and nobody waits out the runtime for it.
                if outcome.is_err() {
                    stop.store(true, Ordering::SeqCst);
                }
                outcome
            });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                gate.open(false);
                for h in handles {
                    let _ = h.join();
                }
                return Err(e).context(format!("cannot start job thread {job}: lower --numjobs"));
            }
        }
    }
    drop(ready_tx);
    // Every job reports whether its setup worked; all start together, or
    // none does.
    let all_ready = ready_rx.iter().take(handles.len()).filter(|&ok| ok).count() == handles.len();
    if let Some(k) = &mut kstat {
        let jobs = progress.clone();
        k.enable(Arc::new(move || {
            jobs.iter().map(|p| p.ops.load(Ordering::Relaxed)).sum()
        }));
    }
    let started_at = SystemTime::now();
    let start = Instant::now();
    gate.open(all_ready);

    if all_ready {
        supervise(&plan, opts, &stop, &progress, start, &handles, &mut kstat);
    }
    if let Some(k) = &mut kstat {
        k.disable();
    }
    stop.store(true, Ordering::SeqCst);
    let outcomes: Vec<Result<JobOutcome>> = handles
        .into_iter()
        .map(|h| {
            h.join()
                .unwrap_or_else(|_| Err(anyhow!("a job thread panicked")))
        })
        .collect();
    if opts.progress {
        print!("\r\x1b[K");
        let _ = std::io::stdout().flush();
    }
    // Report the first real failure (a setup error or an I/O error), not
    // the "aborted" of the jobs that were told to stop because of it.
    let mut jobs = Vec::with_capacity(outcomes.len());
    let mut first_err: Option<anyhow::Error> = None;
    for o in outcomes {
        match o {
            Ok(j) => jobs.push(j),
            Err(e) => {
                let is_abort = e.is::<Aborted>();
                if first_err.is_none() || (!is_abort && first_err_is_abort(&first_err)) {
                    first_err = Some(e);
                }
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let mut warnings = Vec::new();
    if opts.interrupted.load(Ordering::SeqCst) {
        warnings.push("interrupted: the figures cover the run up to the interruption".to_string());
    }
    if !plan.engine.is_async() && plan.iodepth > 1 {
        warnings.push(format!(
            "--iodepth {} has no effect on the {} engine: it has one I/O in flight per job",
            plan.iodepth,
            plan.engine.name()
        ));
    }
    if plan.rw == crate::workload::Rw::Nop && plan.direct {
        warnings.push("--direct has no effect on --rw nop: NOPs touch no file".to_string());
    }
    let mut result = build_result(&plan, &target, started_at, jobs, warnings);
    if let Some(k) = kstat {
        let t = &result.total;
        let mut report = k.finish(t.ops, t.cpu_user_ns + t.cpu_sys_ns);
        report.evidence = crate::evidence::knob_evidence(&plan, &report);
        result.kstat = Some(report);
    }
    Ok(result)
}

fn first_err_is_abort(e: &Option<anyhow::Error>) -> bool {
    e.as_ref().is_some_and(|e| e.is::<Aborted>())
}

/// Waits for the runtime, an interruption or the end of every job, drawing
/// progress once a second.
fn supervise(
    plan: &IoPlan,
    opts: &RunOptions,
    stop: &AtomicBool,
    progress: &[Arc<JobProgress>],
    start: Instant,
    handles: &[thread::JoinHandle<Result<JobOutcome>>],
    kstat: &mut Option<ringlab_kstat::Collector>,
) {
    let tick = Duration::from_millis(50);
    let mut last_draw = start;
    let mut last_ops = 0u64;
    let mut ticks = 0u64;
    loop {
        if let Some(k) = kstat.as_mut() {
            k.tick(ticks);
        }
        ticks += 1;
        if handles.iter().all(|h| h.is_finished()) {
            return;
        }
        let elapsed = start.elapsed();
        if opts.interrupted.load(Ordering::Relaxed) {
            return;
        }
        if plan.runtime.is_some_and(|r| elapsed >= r) {
            return;
        }
        if opts.progress && last_draw.elapsed() >= Duration::from_secs(1) {
            let ops: u64 = progress.iter().map(|p| p.ops.load(Ordering::Relaxed)).sum();
            let dt = last_draw.elapsed().as_secs_f64();
            let iops = (ops - last_ops) as f64 / dt;
            let total = plan
                .runtime
                .map(|r| format!(" / {:.1}s", r.as_secs_f64()))
                .unwrap_or_default();
            print!(
                "\r\x1b[K[{:.1}s{total}] {} IOPS, {}",
                elapsed.as_secs_f64(),
                format_rate(iops),
                format_bandwidth(iops * plan.bs as f64)
            );
            let _ = std::io::stdout().flush();
            last_draw = Instant::now();
            last_ops = ops;
        }
        let left = plan
            .runtime
            .map(|r| r.saturating_sub(elapsed))
            .unwrap_or(tick);
        thread::sleep(left.min(tick));
        if stop.load(Ordering::Relaxed) {
            return;
        }
    }
}

fn build_result(
    plan: &IoPlan,
    target: &Target,
    started_at: SystemTime,
    jobs: Vec<JobOutcome>,
    warnings: Vec<String>,
) -> RunResult {
    let mut total = ThreadMeasurements::default();
    let mut job_figures = Vec::with_capacity(jobs.len());
    for j in &jobs {
        total.merge(&j.measurements);
        job_figures.push(JobFigures {
            job: j.job,
            cpu: j.cpu,
            figures: j.measurements.figures(j.measurements.elapsed_ns),
        });
    }
    let total_figures: Figures = total.figures(total.elapsed_ns);
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: "ringlab".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        },
        command: "io".to_string(),
        started_at: humantime::format_rfc3339_seconds(started_at).to_string(),
        host: ringlab_kstat::host_info(),
        config: plan.config_map(),
        target: (plan.rw != crate::workload::Rw::Nop).then(|| target.info()),
        jobs: job_figures,
        total: total_figures,
        warnings,
        kstat: None,
        http: None,
        diagnoses: Vec::new(),
    }
}
