//! The runner: target, job threads, start barrier, runtime, progress, and
//! the `RunResult` at the end.

use crate::engines::EngineKind;
use crate::plan::IoPlan;
use crate::target::{self, Target};
use crate::worker::{self, Aborted, JobContext, JobOutcome, JobProgress};
use anyhow::Result;
use ringlab_core::harness::{Harness, JobSpec};
use ringlab_stats::units::{format_bandwidth, format_rate};
use ringlab_stats::{Figures, JobFigures, ResultHistograms, RunResult, ThreadMeasurements};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How the run reports while it runs.
pub struct RunOptions {
    /// Draw a live one-line progress (only when stdout is a terminal).
    pub progress: bool,
    /// Set asynchronously (SIGINT, SIGTERM) to end the run early; the
    /// figures measured so far are still reported.
    pub interrupted: Arc<AtomicBool>,
    /// Start together with other runs (a fio group): the gate and this
    /// run's place in it.
    pub group: Option<(Arc<ringlab_core::gate::GroupGate>, usize)>,
    /// fio's startdelay: wait this long after the start line before
    /// starting (the run time counts from then).
    pub start_delay: Duration,
    /// Held while the target is prepared, so runs started together that
    /// share a file lay it out once, one after the other.
    pub prepare_lock: Option<Arc<std::sync::Mutex<()>>>,
}

/// Runs `plan` and returns its result; the target ringlab created, if any,
/// is removed on every path out of here unless --keep.
pub fn run_io(plan: &IoPlan, opts: &RunOptions) -> Result<RunResult> {
    plan.engine.probe(plan)?;
    // fio's logs are checked and opened before anything is laid out.
    let avoid: Vec<&std::path::Path> = plan.target.as_deref().into_iter().collect();
    let logs = worker::LogFiles::open(plan, &avoid)?;
    let target = {
        let _one_at_a_time = opts
            .prepare_lock
            .as_ref()
            .map(|m| m.lock().unwrap_or_else(|p| p.into_inner()));
        Arc::new(target::prepare(plan, &opts.interrupted, opts.progress)?)
    };
    // What the open target decides of the plan; the rest of the run reads
    // this copy.
    let mut owned = plan.clone();
    let plan = &mut owned;
    if plan.force_async_auto && plan.rw != crate::workload::Rw::Nop {
        plan.uring.force_async = crate::knobs::auto_force_async(target.takes_nowait(plan));
        if plan.uring.force_async > 0 {
            plan.uring_defaults.push("force-async");
        }
    }
    if plan.fill_device && plan.io_size.is_none() && plan.number_ios.is_none() {
        // fio's fill_device: the region once (ENOSPC normally ends it
        // first).
        plan.io_size = Some(target.region.saturating_mul(plan.loops));
    }
    let plan = &*plan;
    if plan.shard_region_split {
        let (_, blocks) = target.shard_blocks(plan);
        if blocks * plan.bs < plan.bs_max {
            ringlab_core::usage!(
                "--shard {}/{}: this shard's part of the region ({} blocks of {} bytes) is smaller than one I/O: use fewer shards, a larger --size, or --shard-region shared",
                plan.shards.index(),
                plan.shards.count(),
                blocks,
                plan.bs
            );
        }
    }
    let shared = Arc::new(plan.engine.prepare(plan)?);
    // Opened before the job threads exist, so that they, and the kernel
    // threads they cause, inherit the counters.
    let mut kstat = plan.kstat.then(|| {
        let disk = (plan.rw != crate::workload::Rw::Nop)
            .then(|| ringlab_kstat::device::disk_of_path(&target.access_path()))
            .flatten();
        ringlab_kstat::Collector::open(disk, plan.evidence, &plan.knob_proofs())
    });
    // --evidence stages: the kernel's timestamps of every request.
    // What of it could not be measured: (counter, why).
    let mut stage_notes: Vec<(String, String)> = Vec::new();
    let mut tracer = None;
    if plan.kstat && plan.evidence == ringlab_kstat::Level::Stages {
        if plan.stage_latencies() {
            let disk = ringlab_kstat::device::disk_of_path(&target.access_path());
            match ringlab_kstat::stages::Tracer::open(disk.as_deref()) {
                Ok(t) => {
                    for (tracepoint, why) in &t.by_perf {
                        let note = if *tracepoint == "block:block_rq_complete" {
                            format!("could not be copied with BPF ({why}); perf samples it instead and loses those raised on an idle CPU, so the device's stages cover only the completions that arrived")
                        } else {
                            format!("could not be copied with BPF ({why}); perf samples it instead, a sample of every process's events: it costs more, to every process on the machine")
                        };
                        stage_notes.push((format!("{tracepoint} of every request"), note));
                    }
                    tracer = Some(t);
                }
                Err(e) => stage_notes.push((
                    "stage latencies".into(),
                    format!("could not trace the requests' stages: {e}"),
                )),
            }
        } else {
            stage_notes.push(("stage latencies".into(), "stage latencies are measured for --engine uring with --numjobs 1 (the kernel's events are joined to ringlab's requests by user_data, which is per ring)".to_string()));
        }
    }
    let plan = Arc::new(owned);
    let progress: Vec<Arc<JobProgress>> = (0..plan.numjobs)
        .map(|_| Arc::new(JobProgress::default()))
        .collect();
    if let Some(live) = &plan.regulation.live {
        live.publish(&progress);
    }
    let spec = JobSpec {
        count: plan.numjobs,
        thread_name: "ringlab-job",
        what: "job thread",
        fewer: "--numjobs",
    };
    let (p, t, sh, pr, lf) = (
        plan.clone(),
        target.clone(),
        shared.clone(),
        progress.clone(),
        logs.clone(),
    );
    let mut harness = Harness::spawn(&spec, move |slot| {
        let ctx = JobContext {
            job: slot.index,
            plan: p.clone(),
            target: t.clone(),
            stop: slot.stop.clone(),
            progress: pr[slot.index as usize].clone(),
            shared: sh.clone(),
            logs: lf.clone(),
        };
        run_job(p.engine, ctx, |ok| slot.ready(ok))
    })?;
    let jobs_ops = progress.clone();
    let enable = move |k: &mut ringlab_kstat::Collector,
                       t: Option<&ringlab_kstat::stages::Tracer>| {
        if let Some(t) = t {
            t.enable();
        }
        let jobs = jobs_ops.clone();
        k.enable(Arc::new(move || {
            jobs.iter().map(|p| p.ops.load(Ordering::Relaxed)).sum()
        }));
    };
    // With --ramp-time the kernel evidence starts when measuring does.
    let ramp = plan.ramp.unwrap_or_default();
    let mut kstat_on = false;
    if let Some(k) = &mut kstat {
        if ramp.is_zero() {
            enable(k, tracer.as_ref());
            kstat_on = true;
        }
    }
    // Every shard starts at --start-at, its jobs set up and waiting.
    plan.shards.wait(&opts.interrupted);
    if let Some((gate, i)) = &opts.group {
        if !gate.arrive(harness.all_ready()) {
            harness.cancel();
        }
        // fio's start-up order under exitall (ringlab fio): wait for the
        // members that go first; one whose end already stopped this run
        // starts it without an I/O.
        gate.wait_turn(*i);
        if opts.interrupted.load(Ordering::SeqCst) {
            harness.stop_at_start();
        }
    }
    if !opts.start_delay.is_zero() && harness.all_ready() {
        std::thread::sleep(opts.start_delay);
    }
    let started_at = harness.start();
    if let Some((gate, i)) = &opts.group {
        gate.started(*i, started_at);
    }
    let mut line = ProgressLine::new(opts.progress);
    let mut kstat_tick = 0;
    let mut status = StatusLines::new(plan.status_interval, plan.mean_io_bytes());
    let runtime = plan.runtime.map(|r| r + ramp);
    harness.supervise(runtime, &opts.interrupted, |tick, elapsed| {
        if let Some(k) = kstat.as_mut() {
            if !kstat_on && elapsed >= ramp {
                enable(k, tracer.as_ref());
                kstat_on = true;
                kstat_tick = tick;
            }
            k.tick(tick - kstat_tick);
        }
        line.draw(&plan, &progress, elapsed);
        status.print(&progress, elapsed.saturating_sub(ramp), elapsed >= ramp);
    });
    if let Some(live) = &plan.regulation.live {
        live.end();
    }
    if let Some(k) = &mut kstat {
        if !kstat_on {
            // The run ended within the ramp: the evidence covers nothing
            // measured either.
            enable(k, tracer.as_ref());
        }
        k.disable();
    }
    // The first real failure (a setup error or an I/O error) is the
    // result, not the "aborted" of the jobs told to stop because of it.
    let outcomes = harness.finish(|e| e.is::<Aborted>());
    line.clear();
    let mut jobs = outcomes?;
    let stage_logs: Vec<worker::StageLog> =
        jobs.iter_mut().filter_map(|j| j.stages.take()).collect();
    if let Some(l) = &logs {
        l.commit()?;
    }
    let mut warnings = Vec::new();
    if opts.interrupted.load(Ordering::SeqCst) {
        warnings.push("interrupted: the figures cover the run up to the interruption".to_string());
    }
    warnings.extend(jobs.iter().flat_map(|j| j.warnings.iter().cloned()));
    if !plan.engine.is_async() && plan.iodepth > 1 {
        warnings.push(format!(
            "--iodepth {} has no effect on the {} engine: it has one I/O in flight per job",
            plan.iodepth,
            plan.engine.name()
        ));
    }
    if plan.engine == crate::engine_kind::EngineKind::Libaio
        && !plan.direct
        && plan.rw != crate::workload::Rw::Nop
    {
        // Run as fio runs libaio with direct=0 (its example job files do),
        // but not passed off as asynchronous I/O.
        warnings.push("--engine libaio without --direct: Linux AIO is asynchronous only for O_DIRECT; each buffered request was read or written inside io_submit, so these figures are of synchronous I/O through the AIO interface (add --direct, or use --engine uring or posixaio for asynchronous buffered I/O)".to_string());
    }
    if plan.rw == crate::workload::Rw::Nop && plan.direct {
        warnings.push("--direct has no effect on --rw nop: NOPs touch no file".to_string());
    }
    let mut result = build_result(&plan, &target, started_at, jobs, warnings);
    if let Some(k) = kstat {
        let t = &result.total;
        let mut report = k.finish(
            t.ops,
            t.cpu_user_ns + t.cpu_sys_ns,
            t.ctx_voluntary + t.ctx_involuntary,
        );
        if let Some(t) = tracer {
            report.stages = Some(join_stages(t, &stage_logs, &target));
        }
        for (counter, reason) in stage_notes {
            report
                .unavailable
                .push(ringlab_stats::UnavailableCounter { counter, reason });
        }
        result.kstat = Some(report);
    }
    // Knob evidence and diagnoses, as every command's result has them.
    ringlab_kstat::explain(&mut result);
    Ok(result)
}

/// The stage latencies: ringlab's logged requests, their sectors on the
/// disk, joined with the kernel's events.
fn join_stages(
    tracer: ringlab_kstat::stages::Tracer,
    logs: &[worker::StageLog],
    target: &Target,
) -> ringlab_stats::StageReport {
    use std::os::fd::AsRawFd;
    let map = std::fs::File::open(target.access_path())
        .ok()
        .and_then(|f| {
            let len = f.metadata().map_or(0, |m| m.len());
            ringlab_kstat::stages::SectorMap::of(f.as_raw_fd(), len)
        });
    let mut requests = Vec::new();
    for log in logs {
        let zero = log.clock_zero_mono_ns;
        requests.extend(log.requests.iter().map(|&(slot, offset, issue, reap)| {
            ringlab_kstat::stages::Request {
                user_data: u64::from(slot),
                sector: map.as_ref().and_then(|m| m.sector(offset)),
                start_ns: zero + issue,
                reap_ns: zero + reap,
            }
        }));
    }
    tracer.finish(&requests, logs.iter().any(|l| l.full))
}

/// Sets up the engine on the calling (job) thread, reports setup through
/// `ready`, and runs the job's worker loop with it. Adding an engine adds
/// its arm here.
fn run_job(
    kind: EngineKind,
    ctx: JobContext,
    ready: impl FnOnce(bool) -> bool,
) -> Result<JobOutcome> {
    use crate::engines::{
        CpuioEngine, FallocEngine, FtruncateEngine, LibaioEngine, NullEngine, PosixAioEngine,
        SyncEngine, UringEngine,
    };
    match kind {
        EngineKind::Sync => worker::run_job(ctx, ready, |s| Ok(SyncEngine::new(s))),
        EngineKind::Uring => worker::run_job(ctx, ready, UringEngine::new),
        EngineKind::Libaio => worker::run_job(ctx, ready, LibaioEngine::new),
        EngineKind::Posixaio => worker::run_job(ctx, ready, PosixAioEngine::new),
        EngineKind::Null => worker::run_job(ctx, ready, |s| Ok(NullEngine::new(s))),
        EngineKind::Falloc => worker::run_job(ctx, ready, |s| Ok(FallocEngine::new(s))),
        EngineKind::Cpuio => worker::run_job(ctx, ready, CpuioEngine::new),
        EngineKind::Ftruncate => worker::run_job(ctx, ready, |s| Ok(FtruncateEngine::new(s))),
        EngineKind::Filecreate | EngineKind::Filestat | EngineKind::Filedelete => {
            run_file_job(kind, ctx, ready)
        }
    }
}

/// A job of a file engine: its file operations are timed, not its I/Os
/// (fio's FIO_NOSTATS), and their times become the job's latencies.
fn run_file_job(
    kind: EngineKind,
    ctx: JobContext,
    ready: impl FnOnce(bool) -> bool,
) -> Result<JobOutcome> {
    use crate::engines::{FilecreateEngine, FiledeleteEngine, FilestatEngine};
    let times = crate::fileops::OpTimes::default();
    let (job, t, reads) = (ctx.job, times.clone(), ctx.plan.reads());
    let mut outcome = match kind {
        EngineKind::Filecreate => worker::run_job(ctx, ready, |s| FilecreateEngine::new(s, job, t)),
        EngineKind::Filestat => worker::run_job(ctx, ready, |s| FilestatEngine::new(s, job, t)),
        _ => worker::run_job(ctx, ready, |s| FiledeleteEngine::new(s, job, t)),
    }?;
    crate::fileops::record_times(&times, &mut outcome.measurements, reads);
    Ok(outcome)
}

/// --status-interval: one line on stderr per interval, from the jobs'
/// operation counters (latency is in the result's `intervals`).
struct StatusLines {
    period: Option<Duration>,
    /// Bytes per I/O (the mean, with --bsrange/--bssplit).
    bs: f64,
    next: Duration,
    last_ops: Option<u64>,
}

impl StatusLines {
    fn new(period: Option<Duration>, bs: f64) -> StatusLines {
        StatusLines {
            period,
            bs,
            next: period.unwrap_or_default(),
            last_ops: None,
        }
    }

    fn print(&mut self, progress: &[Arc<JobProgress>], measured: Duration, measuring: bool) {
        let Some(period) = self.period else {
            return;
        };
        if !measuring {
            return;
        }
        let ops: u64 = progress.iter().map(|p| p.ops.load(Ordering::Relaxed)).sum();
        let Some(last) = self.last_ops else {
            self.last_ops = Some(ops);
            return;
        };
        if measured < self.next {
            return;
        }
        let iops = (ops - last) as f64 / period.as_secs_f64();
        eprintln!(
            "[{:.1}s] {} IOPS, {}",
            self.next.as_secs_f64(),
            format_rate(iops),
            format_bandwidth(iops * self.bs)
        );
        self.last_ops = Some(ops);
        self.next += period;
    }
}

/// The live one-line progress, drawn once a second on a terminal.
struct ProgressLine {
    on: bool,
    last_draw: Duration,
    last_ops: u64,
}

impl ProgressLine {
    fn new(on: bool) -> ProgressLine {
        ProgressLine {
            on,
            last_draw: Duration::ZERO,
            last_ops: 0,
        }
    }

    fn draw(&mut self, plan: &IoPlan, progress: &[Arc<JobProgress>], elapsed: Duration) {
        if !self.on || elapsed.saturating_sub(self.last_draw) < Duration::from_secs(1) {
            return;
        }
        let ops: u64 = progress.iter().map(|p| p.ops.load(Ordering::Relaxed)).sum();
        let dt = (elapsed - self.last_draw).as_secs_f64();
        let iops = (ops - self.last_ops) as f64 / dt;
        let total = plan
            .runtime
            .map(|r| format!(" / {:.1}s", r.as_secs_f64()))
            .unwrap_or_default();
        print!(
            "\r\x1b[K[{:.1}s{total}] {} IOPS, {}",
            elapsed.as_secs_f64(),
            format_rate(iops),
            format_bandwidth(iops * plan.mean_io_bytes())
        );
        let _ = std::io::stdout().flush();
        self.last_draw = elapsed;
        self.last_ops = ops;
    }

    fn clear(&self) {
        if self.on {
            print!("\r\x1b[K");
            let _ = std::io::stdout().flush();
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
    let mut warnings = warnings;
    warnings.extend(plan.shards.late_warning(started_at));
    let host = ringlab_kstat::host_info();
    // Measuring begins after --ramp-time.
    let measured_from = started_at + plan.ramp.unwrap_or_default();
    let shard = plan
        .shards
        .info(&host.hostname, measured_from, total.elapsed_ns)
        .map(|mut s| {
            if plan.shard_region_split {
                let (first, blocks) = target.shard_blocks(plan);
                s.region_offset_bytes = Some(plan.offset + first * plan.bs);
                s.region_bytes = Some(blocks * plan.bs);
            }
            s
        });
    let histograms = plan
        .shards
        .histograms()
        .then(|| ResultHistograms::of(&total, None));
    RunResult {
        target: (plan.rw != crate::workload::Rw::Nop).then(|| {
            let mut info = target.info();
            if let Some(f) = &plan.files {
                // The file engines' jobs hold /dev/null: name their files.
                info.path = f.describe();
            }
            info
        }),
        jobs: job_figures,
        warnings,
        intervals: plan
            .status_interval
            .map(|_| total.intervals.iter().map(|i| i.figures()).collect()),
        histograms,
        shard,
        ..RunResult::new("io", started_at, host, plan.config_map(), total_figures)
    }
}
