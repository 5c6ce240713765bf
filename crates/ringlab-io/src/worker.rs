//! The worker loop: one per job thread, shared by every engine.
//!
//! It owns the workload (which block, read or write), the timestamps and
//! histograms, verification, think time and the stop conditions. Engines
//! only move requests (see [`crate::engines`]).

use crate::buffers::BufferPool;
use crate::engines::{Completion, Engine, EngineSetup, IoRequest, QueueStatus};
use crate::plan::IoPlan;
use crate::target::Target;
use crate::verify;
use crate::workload::{Dir, NextIo, Workload};
use anyhow::{bail, Result};
use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use ringlab_core::clock::Clock;
use ringlab_core::cpus::pin_to_cpu;
use ringlab_core::files::NewFile;
use ringlab_kstat::ThreadUsage;
use ringlab_stats::{IntervalRecorder, IoDepths, ThreadMeasurements};
use std::collections::HashSet;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub use crate::progress::JobProgress;

/// A job told not to start because another job's setup failed.
#[derive(Debug, thiserror::Error)]
#[error("aborted before start: another job failed to set up")]
pub struct Aborted;

/// Everything a job thread needs.
pub struct JobContext {
    pub job: u32,
    pub plan: Arc<IoPlan>,
    pub target: Arc<Target>,
    /// Set by the runner when the run must end (runtime over, interrupted,
    /// another job failed).
    pub stop: Arc<AtomicBool>,
    pub progress: Arc<JobProgress>,
    /// What the engine shares between jobs (the ring of --attach-wq).
    pub shared: Arc<crate::engines::RunShared>,
    /// fio's logs of every job, opened before the run.
    pub logs: Option<Arc<LogFiles>>,
}

/// A log being written: a [`NewFile`], named only when the run succeeded.
type LogWriter = std::io::BufWriter<NewFile>;

/// fio's log files of every job (--write-lat-log, --write-bw-log,
/// --write-iops-log): checked and opened before the run, as --output is
/// (never the target, a device, a FIFO or a file ringlab did not write),
/// written beside their names, and renamed into place by
/// [`LogFiles::commit`] only when the run succeeded; a failed or killed
/// run leaves no log and any older one as it was.
pub struct LogFiles {
    /// Per job: its files, taken by the job thread.
    jobs: Vec<Mutex<Option<JobLogFiles>>>,
    /// The files of the jobs that finished their logs.
    done: Mutex<Vec<NewFile>>,
}

/// One job's log files: lat, clat, slat; bw; iops.
struct JobLogFiles {
    lat: Option<[NewFile; 3]>,
    bw: Option<NewFile>,
    iops: Option<NewFile>,
    /// --write-hist-log: fio's `_clat_hist` log.
    hist: Option<NewFile>,
}

impl LogFiles {
    /// Opens every log of the run; `avoid`: the target.
    pub fn open(plan: &IoPlan, avoid: &[&std::path::Path]) -> Result<Option<Arc<LogFiles>>> {
        let Some(l) = &plan.logs else {
            return Ok(None);
        };
        let mut seen = std::collections::HashSet::new();
        let mut open = |prefix: &Option<String>, opt: &str, kind: &str, job: u32| -> Result<_> {
            let Some(p) = prefix else { return Ok(None) };
            let path = std::path::PathBuf::from(format!("{p}_{kind}.{}.log", job + 1 + l.job_base));
            if !seen.insert(path.clone()) {
                return Err(ringlab_core::usage_error(format!(
                    "{opt} {p}: the log {} is named by another log option too; give each log its own prefix",
                    path.display()
                )));
            }
            NewFile::create(&path, opt, avoid).map(Some)
        };
        let mut jobs = Vec::new();
        for job in 0..plan.numjobs {
            let lat = match (
                open(&l.lat, "--write-lat-log", "lat", job)?,
                open(&l.lat, "--write-lat-log", "clat", job)?,
                open(&l.lat, "--write-lat-log", "slat", job)?,
            ) {
                (Some(a), Some(b), Some(c)) => Some([a, b, c]),
                _ => None,
            };
            jobs.push(Mutex::new(Some(JobLogFiles {
                lat,
                bw: open(&l.bw, "--write-bw-log", "bw", job)?,
                iops: open(&l.iops, "--write-iops-log", "iops", job)?,
                hist: open(&l.hist, "--write-hist-log", "clat_hist", job)?,
            })));
        }
        Ok(Some(Arc::new(LogFiles {
            jobs,
            done: Mutex::new(Vec::new()),
        })))
    }

    fn take(&self, job: u32) -> Option<JobLogFiles> {
        self.jobs
            .get(job as usize)?
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// The run succeeded: every finished log takes its name.
    pub fn commit(&self) -> Result<()> {
        let files = std::mem::take(&mut *self.done.lock().unwrap_or_else(|p| p.into_inner()));
        for f in files {
            f.commit()?;
        }
        Ok(())
    }
}

/// What a job measured.
pub struct JobOutcome {
    pub job: u32,
    pub cpu: Option<u32>,
    pub measurements: ThreadMeasurements,
    /// What the figures do not cover (a read-back cut short by an
    /// interruption, I/O abandoned in flight), for the result's warnings.
    pub warnings: Vec<String>,
    /// `--evidence stages` on io_uring: each measured request's issue and
    /// reap times, for the stage latencies.
    pub stages: Option<StageLog>,
}

/// Requests logged for the stage latencies (`--evidence stages`).
pub struct StageLog {
    /// (user_data, offset, issue, reap), job clock nanoseconds.
    pub requests: Vec<(u32, u64, u64, u64)>,
    /// CLOCK_MONOTONIC nanoseconds of the job clock's zero.
    pub clock_zero_mono_ns: u64,
    /// Requests went unlogged past [`StageLog::CAP`].
    pub full: bool,
}

impl StageLog {
    /// At most this many requests (32 bytes each) are logged.
    pub const CAP: usize = 8_000_000;
}

/// Sets up the job on this thread (pinning, file, buffers, engine), calls
/// `ready(ok)` — which returns whether to go on, after every job is set up —
/// and runs the loop.
pub fn run_job<E: Engine>(
    ctx: JobContext,
    ready: impl FnOnce(bool) -> bool,
    make_engine: impl FnOnce(&EngineSetup) -> Result<E>,
) -> Result<JobOutcome> {
    let plan = ctx.plan.clone();
    let cpu = plan.cpu_of_job(ctx.job);
    // fio's flow: the job's weight counts from before the start line.
    let flow = plan
        .regulation
        .flow
        .as_ref()
        .map(crate::regulate::FlowState::join);
    let setup = (|| -> Result<_> {
        if let Some(cpu) = cpu {
            pin_to_cpu(cpu)?;
        }
        let fd = ctx.target.open(&plan)?;
        if let Some((class, level)) = plan.fio_prio.as_ref().and_then(|p| p.thread) {
            // fio's prioclass/prio: the job's thread (IOPRIO_WHO_PROCESS
            // with 0: the calling thread).
            let value = crate::fio_prio::ioprio_value(class, level) as libc::c_long;
            // SAFETY: ioprio_set takes three integers and changes this
            // thread's I/O priority only.
            if unsafe {
                libc::syscall(
                    libc::SYS_ioprio_set,
                    1 as libc::c_long,
                    0 as libc::c_long,
                    value,
                )
            } != 0
            {
                let err = std::io::Error::last_os_error();
                bail!("prioclass={class} prio={level}: ioprio_set failed: {err} (the real-time class needs CAP_SYS_ADMIN)");
            }
        }
        if let Some(advice) = plan.fadvise {
            // SAFETY: a valid fd; the advice only steers read-ahead.
            unsafe { libc::posix_fadvise(fd.as_raw_fd(), 0, 0, advice) };
        }
        let depth = if plan.engine.is_async() {
            plan.iodepth
        } else {
            1
        };
        // Every slot holds the largest block (--bsrange, --bssplit).
        let mut buffers = BufferPool::new(plan.bs_max as usize, depth as usize)?;
        for s in 0..depth {
            match &plan.buffer_pattern {
                // fio's buffer_pattern: the pattern repeated over the buffer.
                Some(p) => {
                    for (b, v) in buffers.slot_mut(s).iter_mut().zip(p.iter().cycle()) {
                        *b = *v;
                    }
                }
                None => verify::fill_payload(
                    buffers.slot_mut(s),
                    plan.seed ^ ((s as u64) << 32) ^ 0xb0ff,
                ),
            }
        }
        let engine = make_engine(&EngineSetup {
            fd: fd.as_raw_fd(),
            plan: &plan,
            buffers: &buffers,
            shared: &ctx.shared,
        })?;
        Ok((fd, buffers, engine, depth))
    })();
    let (fd, buffers, engine, depth) = match setup {
        Ok(s) => {
            if !ready(true) {
                return Err(Aborted.into());
            }
            s
        }
        Err(e) => {
            ready(false);
            return Err(e);
        }
    };
    let (first, count) = ctx.target.job_blocks(&plan, ctx.job);
    let logs = match (&plan.logs, ctx.logs.as_ref().and_then(|f| f.take(ctx.job))) {
        (Some(l), Some(files)) => Some(Box::new(Logs::open(l, files)?)),
        _ => None,
    };
    let paced = plan.pace_ns.iter().any(|p| p.is_some());
    if paced {
        // Sleeps between paced I/Os end within microseconds of their due
        // time, not the default 50 µs slack later.
        // SAFETY: prctl with an integer argument; changes this thread only.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    }
    let mut job = Job {
        fd: fd.as_raw_fd(),
        ramp_end_ns: plan.ramp.map_or(0, |d| d.as_nanos() as u64),
        end_ns: plan.runtime.map_or(u64::MAX, |r| {
            (r + plan.ramp.unwrap_or_default()).as_nanos() as u64
        }),
        measure_from_ns: 0,
        pace: paced.then(|| {
            Box::new(Pace {
                period_ns: plan.pace_ns,
                due_ns: [0.0; 2],
                per_byte: plan.pace_per_byte,
                wait_until: None,
                poisson: plan
                    .regulation
                    .poisson
                    .map(|seeds| crate::regulate::PoissonGaps::new(seeds, ctx.job)),
            })
        }),
        flow: flow.map(Box::new),
        flow_wait: false,
        sync: plan.sync_every.map(|every| {
            Box::new(SyncState {
                every,
                since: 0,
                due: false,
            })
        }),
        issued_ios: 0,
        io_errors: 0,
        first_io_error: None,
        think: plan.thinktime.map(|plan| {
            Box::new(ThinkState {
                plan,
                since: 0,
                due: false,
            })
        }),
        logs,
        intervals: plan.status_interval.map(|d| {
            Box::new(Intervals {
                period_ns: d.as_nanos() as u64,
                next_cut_ns: d.as_nanos() as u64,
                current: IntervalRecorder::default(),
                done: Vec::new(),
                cap: intervals_kept(plan.numjobs),
                dropped: 0,
            })
        }),
        workload: Workload::with_sizes(
            plan.rw,
            plan.rwmixread,
            (first, count),
            plan.block_sizes.clone(),
            plan.bs,
            plan.seed,
            ctx.job,
        )
        .with_distribution(plan.distribution)
        .with_modifier(plan.seq_skip_blocks, plan.rand_run)
        .with_random_map(plan.random_map)
        .with_fio_rules(plan.fio_map)
        .with_passes(plan.invalidate_each_pass)
        .with_align(plan.align_blocks)
        .with_strided(
            plan.strided,
            (ctx.target.size / plan.bs).saturating_sub(first),
        )
        .with_zoned(plan.zoned.as_ref())
        .map_err(|e| ringlab_core::usage_error(format!("--random-distribution {e}")))?
        .with_fio_rand(plan.fio_map, plan.fio_rand.clone(), ctx.job),
        slots: vec![SlotState::default(); depth as usize],
        just_queued: Vec::with_capacity(depth as usize),
        coarse: plan.gtod_reduce.then_some(Coarse {
            now_ns: 0,
            left: COARSE_EVERY,
        }),
        engine_counts_submits: false,
        stamp_each: match plan.engine {
            crate::engines::EngineKind::Posixaio => true,
            crate::engines::EngineKind::Uring | crate::engines::EngineKind::Libaio => {
                plan.uring.submit_batch == 1
            }
            crate::engines::EngineKind::Sync
            | crate::engines::EngineKind::Null
            | crate::engines::EngineKind::Falloc
            | crate::engines::EngineKind::Cpuio
            | crate::engines::EngineKind::Filecreate
            | crate::engines::EngineKind::Filestat
            | crate::engines::EngineKind::Filedelete
            | crate::engines::EngineKind::Ftruncate => false,
        },
        free: (0..depth).rev().collect(),
        inflight: 0,
        pending: None,
        issued_bytes: 0,
        failure: None,
        verify: plan
            .verify
            .then(|| Box::new(VerifyState::new(&plan, ctx.job, first, count))),
        fio_verify: plan
            .fio_verify
            .as_ref()
            .map(|v| Box::new(crate::fio_verify::VerifyRun::new(v, ctx.job))),
        fio_fill: plan.fio_buffers.as_ref().map(|b| {
            let blocks = plan.size.unwrap_or(count * plan.bs) / plan.bs.max(1);
            Box::new(crate::fio_buffers::BufferFill::new(
                b, plan.seed, ctx.job, blocks,
            ))
        }),
        fio_prio: plan
            .fio_prio
            .as_ref()
            .map(|p| Box::new(crate::fio_prio::PrioRun::new(p, plan.seed, ctx.job))),
        shift: ctx.target.job_shift(&plan, ctx.job),
        filled: None,
        fill_unfinished: (0, 0),
        job_failed: None,
        measurements: ThreadMeasurements::default(),
        unrecorded: Vec::with_capacity(UNRECORDED_RUNS),
        flat: Box::default(),
        ops: 0,
        live_bytes: plan.regulation.live.as_ref().map(|_| 0),
        lat_target: plan.regulation.lat_target.as_ref().map(|p| {
            Box::new(crate::lat_target::LatTarget::new(
                p.clone(),
                ctx.job as usize,
                plan.iodepth,
            ))
        }),
        stage_log: plan.stage_latencies().then(|| {
            Box::new(StageLog {
                requests: Vec::with_capacity(1 << 16),
                clock_zero_mono_ns: 0,
                full: false,
            })
        }),
        clock: Clock::start_mono(),
        stop: &ctx.stop,
        progress: &ctx.progress,
        io_size_limit: plan.io_size.unwrap_or(u64::MAX),
        number_ios_limit: plan.number_ios.unwrap_or(u64::MAX),
        bs: plan.bs,
        io_depths: IoDepths::default(),
        ctx: &ctx,
        plan: &plan,
        engine,
        buffers,
    };
    if plan.sync_every.is_some() || plan.end_fsync {
        job.measurements.syncs = Some(0);
    }
    let usage_start = ThreadUsage::now()?;
    let result = job.run();
    let mut warnings = Vec::new();
    // Whatever ended the loop, nothing leaves here with I/O in flight: the
    // kernel (or glibc's AIO threads) may still write into the buffers and
    // use the descriptor.
    if job.inflight > 0 {
        match job.drain() {
            Ok(Drain::Done) => {}
            Ok(Drain::Abandoned) => {
                warnings.push(format!(
                    "job {}: {} I/O still in flight were abandoned after a second interrupt{}",
                    ctx.job,
                    job.inflight,
                    if plan.verify {
                        "; no verify read-back"
                    } else {
                        ""
                    }
                ));
                let mut measurements = std::mem::take(&mut job.measurements);
                measurements.elapsed_ns =
                    (job.clock.elapsed_ns()).saturating_sub(job.measure_from_ns);
                // Leak the buffers, the engine's rings and the descriptor
                // (whose number must not be reused under a request still
                // running): never free what may still be written.
                std::mem::forget(job);
                std::mem::forget(fd);
                result?;
                record_usage(&mut measurements, &usage_start)?;
                return Ok(JobOutcome {
                    job: ctx.job,
                    cpu,
                    measurements,
                    warnings,
                    stages: None,
                });
            }
            Err(e) => {
                std::mem::forget(job);
                std::mem::forget(fd);
                result?;
                return Err(e.context("could not wait for I/O still in flight"));
            }
        }
    }
    result?;
    if let Some(w) = job.filled.take() {
        let (issued, short) = job.fill_unfinished;
        warnings.push(w + &crate::fill_device::unfinished_note(issued, short));
    }
    if let Some(w) = job.job_failed.take() {
        warnings.push(w);
    }
    if job.io_errors > 0 {
        warnings.push(format!(
            "job {}: continue_on_error: {} I/O error{} counted and gone on after (first: {})",
            ctx.job,
            job.io_errors,
            if job.io_errors == 1 { "" } else { "s" },
            job.first_io_error.as_deref().unwrap_or("unavailable")
        ));
    }
    if job.ramp_end_ns != 0 {
        // The job ended inside --ramp-time: nothing of it is measured.
        let now = job.now_ns();
        job.end_ramp(now);
        warnings.push(format!(
            "job {}: it ended within --ramp-time, so none of its I/O is measured",
            ctx.job
        ));
    }
    job.measurements.elapsed_ns = (job.clock.elapsed_ns()).saturating_sub(job.measure_from_ns);
    if let Some(l) = job.logs.take() {
        let now = job.now_ns().saturating_sub(job.measure_from_ns);
        let files = l
            .finish(now)
            .map_err(|e| anyhow::anyhow!("job {}: cannot write fio's log: {e}", ctx.job))?;
        if let Some(all) = &ctx.logs {
            all.done
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(files);
        }
    }
    if let Some(iv) = job.intervals.take() {
        let now = job.now_ns();
        let (kept, dropped) = iv.finish(now, job.measure_from_ns);
        if dropped > 0 && ctx.job == 0 {
            warnings.push(format!(
                "--status-interval: only the first {} intervals are in the result ({dropped} more per job were not kept): each holds latency histograms of about 1.1 MB per job, and ringlab keeps at most {} MiB of them; use a longer interval for a run this long",
                kept.len(),
                INTERVALS_BUDGET >> 20
            ));
        }
        job.measurements.intervals = kept;
    }
    if plan.end_fsync {
        // fio's end_fsync: once, after the last write completed; outside
        // the measured time (elapsed_ns is taken above), so it changes no
        // IOPS, bandwidth or latency.
        // SAFETY: fsync on the job's open descriptor.
        if unsafe { libc::fsync(fd.as_raw_fd()) } != 0 {
            let err = std::io::Error::last_os_error();
            bail!("job {}: end fsync of the target failed: {err}", ctx.job);
        }
        *job.measurements.syncs.get_or_insert(0) += 1;
    }
    record_usage(&mut job.measurements, &usage_start)?;
    if let Some(v) = job.verify.take() {
        let back = v.read_back(fd.as_raw_fd(), &mut job.buffers, &plan, ctx.job)?;
        if back.to_check > back.read_back {
            warnings.push(format!(
                "job {}: verify read-back interrupted after {} of {} written blocks",
                ctx.job, back.read_back, back.to_check
            ));
        }
        job.measurements.verified_blocks = Some(back.checked);
    }
    if let Some(log) = &mut job.stage_log {
        log.clock_zero_mono_ns = job.clock.zero_ns;
    }
    Ok(JobOutcome {
        job: ctx.job,
        cpu,
        measurements: job.measurements,
        warnings,
        stages: job.stage_log.take().map(|b| *b),
    })
}

/// The CPU time and context switches of this thread since `start`.
fn record_usage(m: &mut ThreadMeasurements, start: &ThreadUsage) -> Result<()> {
    let used = ThreadUsage::now()?.since(start);
    m.cpu_user_ns = used.user_ns;
    m.cpu_sys_ns = used.sys_ns;
    m.ctx_voluntary = used.voluntary_switches;
    m.ctx_involuntary = used.involuntary_switches;
    Ok(())
}

/// How a drain ended.
enum Drain {
    /// Every I/O in flight completed.
    Done,
    /// A second interrupt came first: the I/O still in flight was left.
    Abandoned,
}

#[derive(Clone, Copy, Default)]
struct SlotState {
    offset: u64,
    block: u64,
    start_ns: u64,
    /// When the request was handed to the kernel (job clock);
    /// [`NOT_SUBMITTED`] for one that completed in the call that issued it
    /// (sync), which has no submission latency of its own.
    submit_ns: u64,
    /// Bytes the request moves.
    len: u32,
    dir: Dir,
    /// fio's per-request priority, and whether it is a cmdprio one.
    ioprio: u16,
    high_prio: bool,
    /// A read of fio's verify log (a backlog batch or the read-back), not
    /// one of the workload's: in a job that also writes only these are
    /// verified (fio 3.33 backend.c: `IO_U_F_VER_LIST || !td_rw`).
    log_read: bool,
}

/// --gtod-reduce: completions between two clock reads (fio's ts_cache).
const COARSE_EVERY: u32 = 64;

/// --gtod-reduce's clock: read once every [`COARSE_EVERY`] completions.
#[derive(Clone, Copy)]
struct Coarse {
    /// Job clock time of the last read.
    now_ns: u64,
    /// Completions until the next read.
    left: u32,
}

/// `submit_ns` of a request completed inline (no separate submission).
const NOT_SUBMITTED: u64 = u64::MAX;

/// Completions counted but not yet in `measurements`: `n` of one direction
/// with one submission and one completion latency, moving `bytes` in all.
/// Requests queued in one loop turn share their start and submission
/// stamps and those reaped together share their end stamp, so a batch
/// usually has one pair of latencies: it is recorded once, `n` times (the
/// same histograms as `n` records).
#[derive(Clone, Copy, Default)]
struct Unrecorded {
    dir: Dir,
    slat: Option<u64>,
    clat: u64,
    n: u64,
    bytes: u64,
}

/// How many runs of [`Unrecorded`] completions wait before they go into
/// the histograms together (their hot-path form, `ringlab_stats::FlatLatency`:
/// a flat count array with HdrHistogram's buckets, moved into the HDR
/// histograms when the job ends). Recorded one by one, between two system calls,
/// the histograms' counters were out of the cache each time (a profile at
/// depth 1 on zram had 14% of ringlab's user samples on the add into the
/// count array); in a loop the loads can overlap. Measured on zram at depth
/// 1 against the one-by-one build: 0 to +2% IOPS, within the noise
/// (docs/benchmarks.md, 2026-11-25 "recording in runs"). What the result
/// holds is the same: every latency is recorded before anything reads the
/// histograms (the end of the job), and a ramp's are dropped.
const UNRECORDED_RUNS: usize = 256;

/// --rate-iops/--rate: when the next I/O of each direction is due.
struct Pace {
    period_ns: [Option<f64>; 2],
    /// Due time of the next read and write, on the job's clock.
    due_ns: [f64; 2],
    /// `period_ns` is per byte (--rate with a variable block size).
    per_byte: bool,
    /// Set by `fill` when the next I/O is not due yet.
    wait_until: Option<u64>,
    /// fio's rate_process=poisson: the due times are drawn, not spaced.
    poisson: Option<crate::regulate::PoissonGaps>,
}

/// What [`Job::flow_gate`] lets the job do.
enum FlowGate {
    Go,
    Reap,
    Again,
}

/// fio's rate_ignore_thinktime after a pause of `us`: the time is not owed
/// to the rate. fio moves a linear rate by the pause less one I/O's period
/// (so the next I/O leaves at once), a Poisson one by the whole pause.
fn ignore_think(p: &mut Pace, us: u64) {
    for d in 0..2 {
        let Some(period) = p.period_ns[d] else {
            continue;
        };
        let ns = (us * 1000) as f64;
        match &mut p.poisson {
            Some(g) => {
                g.skip(d, us);
                p.due_ns[d] += ns;
            }
            None if !p.per_byte => p.due_ns[d] += if period <= ns { ns - period } else { ns },
            None => p.due_ns[d] += ns,
        }
    }
}

/// --status-interval: the job's intervals, cut at multiples of the period
/// from the start of measuring.
struct Intervals {
    period_ns: u64,
    /// Job clock time the current interval ends.
    next_cut_ns: u64,
    current: IntervalRecorder,
    done: Vec<IntervalRecorder>,
    /// At most this many intervals are kept ([`intervals_kept`]); the rest
    /// are counted in `dropped` and said in the result's warnings.
    cap: usize,
    dropped: u64,
}

/// The memory all jobs' intervals may hold together: each interval keeps a
/// latency histogram per direction, about [`INTERVAL_BYTES`].
const INTERVALS_BUDGET: u64 = 256 << 20;
/// What one job's interval holds (measured: about 1.1 MB).
const INTERVAL_BYTES: u64 = 1_150_000;

/// How many intervals each of `numjobs` jobs keeps within
/// [`INTERVALS_BUDGET`] (at least 8).
fn intervals_kept(numjobs: u32) -> usize {
    (INTERVALS_BUDGET / INTERVAL_BYTES / u64::from(numjobs.max(1))).max(8) as usize
}

impl Intervals {
    fn keep(&mut self, iv: IntervalRecorder) {
        if self.done.len() < self.cap {
            self.done.push(iv);
        } else {
            self.dropped += 1;
        }
    }

    /// Closes every interval that ended by `now_ns` (job clock; measuring
    /// started at `from_ns`).
    fn cut(&mut self, now_ns: u64, from_ns: u64) {
        while now_ns >= self.next_cut_ns {
            let mut iv = std::mem::take(&mut self.current);
            iv.start_ns = self.next_cut_ns - self.period_ns - from_ns;
            iv.elapsed_ns = self.period_ns;
            self.keep(iv);
            self.next_cut_ns += self.period_ns;
        }
    }

    /// The job's intervals at its end: the last one, cut short, with the
    /// time it covered.
    fn finish(mut self, now_ns: u64, from_ns: u64) -> (Vec<IntervalRecorder>, u64) {
        self.cut(now_ns, from_ns);
        let start = self.next_cut_ns - self.period_ns;
        if now_ns > start {
            let mut iv = std::mem::take(&mut self.current);
            iv.start_ns = start - from_ns;
            iv.elapsed_ns = now_ns - start;
            self.keep(iv);
        }
        (self.done, self.dropped)
    }
}

/// fio's logs of one job (--write-lat-log, --write-bw-log,
/// --write-iops-log): `time_ms, value, direction, bs, offset, priority`.
struct Logs {
    /// --write-lat-log: fio's `_lat`, `_clat` and `_slat` logs, in the
    /// order of [`IoLatencies`].
    lat: Option<Box<[LatLog; 3]>>,
    /// fio's log_offset: per-I/O lines carry the offset column.
    offset_column: bool,
    /// Bandwidth and IOPS lines per I/O (fio without log_avg_msec).
    rates_per_io: bool,
    /// fio's rate logs: the last, partial window is not written.
    fio_rates: bool,
    /// --write-hist-log.
    hist: Option<HistLog>,
    bw: Option<LogWriter>,
    iops: Option<LogWriter>,
    /// The latency logs' window; 0: every I/O.
    lat_window_ns: u64,
    /// The bandwidth and IOPS logs' window.
    rate_window_ns: u64,
    rate_win: LogWindow,
    /// The priority column of the I/O being logged (fio's cmdprio, with
    /// log_prio its ioprio value); `None`: 0.
    prio_column: Option<String>,
}

/// One of fio's latency logs and its averaging window.
struct LatLog {
    file: LogWriter,
    win: LogWindow,
}

/// The latencies of one I/O for fio's latency logs, in ns: total,
/// completion, and submission (`None` where the engine has no separate
/// submission: the sync engine's `_slat` log stays empty, as fio's does
/// for psync).
type IoLatencies = [Option<u64>; 3];

/// What completed in one window, per direction (fio's 0 read, 1 write,
/// 2 trim): I/Os, bytes, latency sum.
#[derive(Default)]
struct LogWindow {
    end_ns: u64,
    ops: [u64; 3],
    bytes: [u64; 3],
    lat_sum: [u128; 3],
}

/// fio's latency histogram bins: 29 groups of 64 (FIO_IO_U_PLAT_*).
const PLAT_BITS: u32 = 6;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
const PLAT_NR: usize = 29 * PLAT_VAL as usize;

/// fio's plat_val_to_idx: the bin of a latency in ns.
fn plat_idx(v: u64) -> usize {
    let msb = if v == 0 { 0 } else { 63 - v.leading_zeros() };
    if msb <= PLAT_BITS {
        return v as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as u64) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (v >> error_bits);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// fio's histogram log: per direction, the bins since the last entry.
struct HistLog {
    file: LogWriter,
    window_ms: u64,
    coarseness: u32,
    last_ms: [Option<u64>; 3],
    bins: [Vec<u64>; 3],
}

impl HistLog {
    fn record(&mut self, at_ns: u64, d: usize, bs: u64, clat_ns: u64) -> std::io::Result<()> {
        use std::io::Write;
        self.bins[d][plat_idx(clat_ns)] += 1;
        if self.window_ms == 0 {
            return Ok(());
        }
        let now = at_ns / 1_000_000;
        let last = *self.last_ms[d].get_or_insert(now);
        let window = now - last;
        if window < self.window_ms {
            return Ok(());
        }
        let stride = 1usize << self.coarseness;
        write!(self.file, "{now}, {d}, {bs}")?;
        for chunk in self.bins[d].chunks(stride) {
            write!(self.file, ", {}", chunk.iter().sum::<u64>())?;
        }
        writeln!(self.file)?;
        self.bins[d].iter_mut().for_each(|b| *b = 0);
        self.last_ms[d] = Some(now - (window - self.window_ms));
        Ok(())
    }
}

impl Logs {
    fn open(plan: &crate::plan::LogPlan, files: JobLogFiles) -> Result<Logs> {
        let buffered = |f: NewFile| std::io::BufWriter::with_capacity(1 << 16, f);
        let avg = plan.avg_msec * 1_000_000;
        let rate_window_ns = if avg == 0 { 500_000_000 } else { avg };
        let lat = files.lat.map(|files| {
            Box::new(files.map(|f| LatLog {
                file: buffered(f),
                win: LogWindow {
                    end_ns: avg,
                    ..Default::default()
                },
            }))
        });
        let hist = files.hist.map(|f| HistLog {
            file: buffered(f),
            window_ms: plan.hist_msec,
            coarseness: plan.hist_coarseness,
            last_ms: [None; 3],
            bins: [vec![0; PLAT_NR], vec![0; PLAT_NR], vec![0; PLAT_NR]],
        });
        Ok(Logs {
            lat,
            hist,
            offset_column: plan.offset,
            rates_per_io: plan.fio_rates && plan.avg_msec == 0,
            fio_rates: plan.fio_rates,
            bw: files.bw.map(buffered),
            iops: files.iops.map(buffered),
            lat_window_ns: avg,
            rate_window_ns,
            prio_column: None,
            rate_win: LogWindow {
                end_ns: rate_window_ns,
                ..Default::default()
            },
        })
    }

    /// One completed I/O, `at_ns` after measuring began.
    fn record(
        &mut self,
        at_ns: u64,
        dir: Dir,
        bs: u64,
        offset: u64,
        lats: IoLatencies,
    ) -> std::io::Result<()> {
        use std::io::Write;
        // fio's data directions: trims are logged as direction 2.
        let d = match dir {
            Dir::Read => 0,
            Dir::Write => 1,
            Dir::Trim => 2,
            Dir::Nop => return Ok(()),
        };
        if let Some(logs) = &mut self.lat {
            for (log, v) in logs.iter_mut().zip(lats) {
                let Some(v) = v else { continue };
                let w = &mut log.file;
                let prio = self.prio_column.as_deref().unwrap_or("0");
                if self.lat_window_ns == 0 && self.offset_column {
                    writeln!(w, "{}, {v}, {d}, {bs}, {offset}, {prio}", at_ns / 1_000_000)?;
                } else if self.lat_window_ns == 0 {
                    writeln!(w, "{}, {v}, {d}, {bs}, {prio}", at_ns / 1_000_000)?;
                } else {
                    let oc = self.offset_column;
                    log.win.flush(at_ns, self.lat_window_ns, |t, d, win| {
                        write_mean_latency(w, t, d, win, oc)
                    })?;
                    log.win.add(d, bs, v);
                }
            }
        }
        if let Some(h) = &mut self.hist {
            if let Some(clat) = lats[1].or(lats[0]) {
                h.record(at_ns, d, bs, clat)?;
            }
        }
        if self.rates_per_io {
            // fio's per-I/O lines: bandwidth is the I/O's bytes over its
            // completion latency (bytes * 1e6 / ns, fio's unit), IOPS is 1.
            let t = at_ns / 1_000_000;
            let off = if self.offset_column {
                format!("{offset}, ")
            } else {
                String::new()
            };
            if let Some(w) = &mut self.bw {
                let rate = lats[1]
                    .or(lats[0])
                    .filter(|ns| *ns > 0)
                    .map_or(0, |ns| bs * 1_000_000 / ns);
                writeln!(w, "{t}, {rate}, {d}, {bs}, {off}0")?;
            }
            if let Some(w) = &mut self.iops {
                writeln!(w, "{t}, 1, {d}, {bs}, {off}0")?;
            }
            return Ok(());
        }
        if self.bw.is_some() || self.iops.is_some() {
            let (bw, iops) = (&mut self.bw, &mut self.iops);
            let secs = self.rate_window_ns as f64 / 1e9;
            let oc = self.offset_column;
            self.rate_win
                .flush(at_ns, self.rate_window_ns, |t, d, win| {
                    write_rates(bw, iops, t, d, win, secs, oc)
                })?;
            self.rate_win.add(d, bs, 0);
        }
        Ok(())
    }

    /// The end of the job: the windows still open are written (their
    /// rates over the time they covered; for fio's rate logs only whole
    /// windows, see `fio_rates`), and the files flushed.
    fn finish(mut self, at_ns: u64) -> std::io::Result<Vec<NewFile>> {
        use std::io::Write;
        let oc = self.offset_column;
        for log in self.lat.iter_mut().flat_map(|l| l.iter_mut()) {
            let w = &mut log.file;
            if self.lat_window_ns != 0 {
                log.win.flush(u64::MAX, self.lat_window_ns, |_, d, win| {
                    write_mean_latency(w, at_ns / 1_000_000, d, win, oc)
                })?;
            }
            w.flush()?;
        }
        let start = self.rate_win.end_ns.saturating_sub(self.rate_window_ns);
        let secs = at_ns.saturating_sub(start) as f64 / 1e9;
        // Per-I/O rate lines (which only fio's rate logs write) leave no
        // window open.
        if secs > 0.0 && !self.fio_rates {
            let (bw, iops) = (&mut self.bw, &mut self.iops);
            let t = at_ns / 1_000_000;
            self.rate_win
                .flush(u64::MAX, self.rate_window_ns, |_, d, win| {
                    write_rates(bw, iops, t, d, win, secs, oc)
                })?;
        }
        let mut files = Vec::new();
        let lat = self.lat.map(|l| *l).into_iter().flatten().map(|l| l.file);
        let hist = self.hist.map(|h| h.file);
        for w in lat.chain(self.bw).chain(self.iops).chain(hist) {
            files.push(w.into_inner().map_err(|e| e.into_error())?);
        }
        Ok(files)
    }
}

/// The columns after the direction in an averaged line: fio 3.33 logs a
/// window's sample with block size 0, offset 0 (its column only with
/// log_offset) and priority 0 (stat.c, __add_stat_to_log).
fn averaged_tail(offset_column: bool) -> &'static str {
    if offset_column {
        "0, 0, 0"
    } else {
        "0, 0"
    }
}

/// One averaged line of a latency log: the window's mean latency of
/// direction `d`, stamped `t` ms.
fn write_mean_latency(
    w: &mut LogWriter,
    t: u64,
    d: usize,
    win: &LogWindow,
    offset_column: bool,
) -> std::io::Result<()> {
    use std::io::Write;
    writeln!(
        w,
        "{t}, {}, {d}, {}",
        win.lat_sum[d] / win.ops[d] as u128,
        averaged_tail(offset_column)
    )
}

fn write_rates(
    bw: &mut Option<LogWriter>,
    iops: &mut Option<LogWriter>,
    t: u64,
    d: usize,
    win: &LogWindow,
    secs: f64,
    offset_column: bool,
) -> std::io::Result<()> {
    use std::io::Write;
    let tail = averaged_tail(offset_column);
    if let Some(w) = bw {
        let kib = (win.bytes[d] as f64 / 1024.0 / secs).round() as u64;
        writeln!(w, "{t}, {kib}, {d}, {tail}")?;
    }
    if let Some(w) = iops {
        let n = (win.ops[d] as f64 / secs).round() as u64;
        writeln!(w, "{t}, {n}, {d}, {tail}")?;
    }
    Ok(())
}

impl LogWindow {
    fn add(&mut self, d: usize, bs: u64, lat: u64) {
        self.ops[d] += 1;
        self.bytes[d] += bs;
        self.lat_sum[d] += lat as u128;
    }

    /// Writes (through `line(time_ms, direction, window)`) every window
    /// that ended by `at_ns`, one line per direction with I/O in it, and
    /// opens the next. `at_ns` u64::MAX: the last window, whatever its end.
    fn flush(
        &mut self,
        at_ns: u64,
        window_ns: u64,
        mut line: impl FnMut(u64, usize, &LogWindow) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        while at_ns >= self.end_ns {
            for d in 0..3 {
                if self.ops[d] > 0 {
                    line(self.end_ns / 1_000_000, d, self)?;
                }
            }
            self.ops = [0; 3];
            self.bytes = [0; 3];
            self.lat_sum = [0; 3];
            if at_ns == u64::MAX {
                return Ok(());
            }
            self.end_ns += window_ns;
        }
        Ok(())
    }
}

/// --thinktime: I/Os issued since the last pause.
struct ThinkState {
    plan: crate::plan::ThinkTime,
    since: u64,
    /// A pause is owed before the next I/O (once nothing is in flight).
    due: bool,
}

/// --fsync/--fdatasync N.
struct SyncState {
    every: crate::plan::SyncEvery,
    /// Writes issued since the last sync.
    since: u64,
    /// A sync is owed: no new I/O until it is made.
    due: bool,
}

/// One job's state. `repr(C)` keeps the fields in this order: what every
/// request reads or writes first, in a few cache lines (after each system
/// call the kernel's work has evicted much of the cache, and at depth 1 on
/// zram every line touched per request was a miss: a 4.6 KB struct with
/// these fields spread over it cost about as much user time as the
/// submission path); then one pointer per option a run may not use, so
/// their checks read one line; then the engine (dropped before the
/// buffers it uses), the workload and the buffers; then what only the
/// job's end reads.
#[repr(C)]
struct Job<'a, E: Engine> {
    fd: i32,
    inflight: u32,
    /// The engine submits each request in a system call of its own inside
    /// queue() (posixaio's aio_read, --submit-batch 1 with uring or
    /// libaio, fio's default in job files): each request gets its own
    /// submission stamp right after that call, and the next its own start
    /// stamp (two clock reads per request, beside a system call).
    stamp_each: bool,
    /// The engine counts its submissions (fio's IO depths "submit").
    engine_counts_submits: bool,
    /// Ahead of its flow share with flow_sleep: the I/O in flight completes
    /// first (fio's quiesce), then the job sleeps.
    flow_wait: bool,
    ops: u64,
    /// I/Os issued (for --number-ios).
    issued_ios: u64,
    issued_bytes: u64,
    /// --io-size and --number-ios as bounds (`u64::MAX`: none).
    io_size_limit: u64,
    number_ios_limit: u64,
    /// The plan's block size (offsets are blocks of it).
    bs: u64,
    /// Bytes added to every offset: the job's region start less whole
    /// blocks (fio's offset and offset_increment; 0 by default).
    shift: u64,
    /// --ramp-time: the job clock's time when measuring starts; 0 once it
    /// has (or without a ramp).
    ramp_end_ns: u64,
    /// Job clock time the measurements start from (the end of the ramp).
    measure_from_ns: u64,
    /// Job clock time the runtime (ramp included) is over. The runner's
    /// thread stops the jobs then; a job also stops itself, because under a
    /// real-time policy (`chrt -f`) a job that never blocks (NOPs, a
    /// page-cache-hot read) keeps the runner's thread off its CPU forever.
    end_ns: u64,
    clock: Clock,
    /// The runner's stop flag and this job's progress counters (`ctx`'s,
    /// without the pointer chase).
    stop: &'a AtomicBool,
    progress: &'a JobProgress,
    ctx: &'a JobContext,
    plan: &'a IoPlan,
    /// The first failed completion or verify mismatch: no more I/O is
    /// issued, what is in flight is reaped, then the job ends with it.
    failure: Option<anyhow::Error>,
    /// An I/O drawn from the workload but not issued yet (engine busy, or
    /// its block is in flight under --verify).
    pending: Option<NextIo>,
    /// --gtod-reduce: the clock of the last read, taken once every
    /// [`COARSE_EVERY`] completions instead of per loop turn; `None`: every
    /// I/O is timed.
    coarse: Option<Coarse>,
    slots: Vec<SlotState>,
    free: Vec<u32>,
    /// Slots queued in this loop turn: their submission stamp is taken
    /// once the turn's batch is committed (capacity: the depth, so it
    /// never grows).
    just_queued: Vec<u32>,
    /// Completions measured but not yet in `measurements` (runs of equal
    /// latencies, at most [`UNRECORDED_RUNS`]).
    unrecorded: Vec<Unrecorded>,
    /// Where the runs go when `unrecorded` is full: per direction (as
    /// [`recorder`] indexes them), the histograms' hot-path form, moved
    /// into `measurements` when the loop ends ([`Job::record_all`]).
    flat: Box<[ringlab_stats::FlatDirection; 4]>,
    /// fio's "IO depths" counts, moved into `measurements` when the job
    /// ends.
    io_depths: IoDepths,
    // What an option adds, one pointer each (None when unused).
    pace: Option<Box<Pace>>,
    /// fio's flow: this job's share of its flow_id's I/O.
    flow: Option<Box<crate::regulate::FlowState>>,
    sync: Option<Box<SyncState>>,
    think: Option<Box<ThinkState>>,
    verify: Option<Box<VerifyState>>,
    /// fio's verify= (its block format, backlog and read-back phase).
    fio_verify: Option<Box<crate::fio_verify::VerifyRun>>,
    /// fio's dedupe/compress buffer contents.
    fio_fill: Option<Box<crate::fio_buffers::BufferFill>>,
    /// fio's per-request priorities.
    fio_prio: Option<Box<crate::fio_prio::PrioRun>>,
    /// fio's latency_target: this thread's queue-depth search.
    lat_target: Option<Box<crate::lat_target::LatTarget>>,
    logs: Option<Box<Logs>>,
    /// `--evidence stages` on io_uring: the requests' issue and reap times.
    stage_log: Option<Box<StageLog>>,
    intervals: Option<Box<Intervals>>,
    /// fio's ss=: the bytes completed, published beside `ops`; `None`
    /// (nothing published) unless a steady-state sampler asked.
    live_bytes: Option<u64>,
    // The engine is declared (and so dropped) before the buffers it uses.
    engine: E,
    workload: Workload,
    buffers: BufferPool,
    // Read when the job ends.
    /// fio's continue_on_error: I/O errors counted and gone on after, and
    /// the first of them.
    io_errors: u64,
    first_io_error: Option<String>,
    /// How a fill_device job ended (the file system or device full).
    filled: Option<String>,
    /// fio's fill_device: the writes issued that did not complete in full
    /// (the one that found no space, any in flight then, a short write's
    /// re-issued rest), and the short ones among them; see
    /// [`crate::fill_device::unfinished_note`].
    fill_unfinished: (u32, u32),
    /// fio's failed job (`plan.fio_job_errors`): the warning of the I/O
    /// error that ended it.
    job_failed: Option<String>,
    measurements: ThreadMeasurements,
}

impl<E: Engine> Job<'_, E> {
    #[inline]
    fn now_ns(&self) -> u64 {
        self.clock.elapsed_ns()
    }

    /// The time of `n` completions: the clock, read now; under
    /// --gtod-reduce, the last read, renewed once every [`COARSE_EVERY`]
    /// completions.
    #[inline]
    fn completed_at(&mut self, n: u32) -> u64 {
        match &mut self.coarse {
            None => self.now_ns(),
            Some(c) => {
                if c.left <= n {
                    c.left = COARSE_EVERY;
                    c.now_ns = self.clock.elapsed_ns();
                } else {
                    c.left -= n;
                }
                c.now_ns
            }
        }
    }

    #[inline]
    fn may_issue<const PLAIN: bool>(&self) -> bool {
        if let Some(v) = self.fio_verify.as_ref().filter(|v| !PLAIN && v.phase) {
            return self.failure.is_none()
                && !self.stop.load(Ordering::Relaxed)
                && (!v.queue.is_empty() || self.pending.is_some());
        }
        self.failure.is_none()
            && !self.stop.load(Ordering::Relaxed)
            && self.issued_bytes < self.io_size_limit
            && self.issued_ios < self.number_ios_limit
            // fio's random map rules can end a job early (ringlab fio); an
            // I/O already handed out (waiting for its due time) still goes.
            && (!self.workload.ended() || self.pending.is_some())
    }

    /// The end of --ramp-time (at `at_ns` on the job clock): what was
    /// measured so far is dropped, only I/O started from `at_ns` on is
    /// measured, and --io-size and --number-ios count from here.
    #[cold]
    fn end_ramp(&mut self, at_ns: u64) {
        let now_ns = at_ns;
        self.ramp_end_ns = 0;
        self.measure_from_ns = at_ns;
        let syncs = self.measurements.syncs.map(|_| 0);
        // Latencies not yet recorded belong to the ramp too.
        self.unrecorded.clear();
        *self.flat = Default::default();
        self.measurements = ThreadMeasurements::default();
        self.measurements.syncs = syncs;
        self.io_depths = IoDepths::default();
        // The ramp's submissions too.
        let _ = self.engine.take_submit_counts();
        self.issued_bytes = 0;
        self.issued_ios = 0;
        // fio's reset_all_stats restarts a latency_target search.
        let ops = self.ops;
        if let Some(t) = &mut self.lat_target {
            t.reset(at_ns, ops);
        }
        if let Some(iv) = &mut self.intervals {
            iv.current = IntervalRecorder::default();
            iv.done.clear();
            iv.dropped = 0;
            iv.next_cut_ns = now_ns + iv.period_ns;
        }
    }

    /// Sleeps until `until_ns` on the job clock (or a stop): the OS sleep
    /// for all but the last 30 µs, which are spun, so a paced I/O leaves
    /// within microseconds of its due time.
    #[cold]
    fn sleep_until(&self, until_ns: u64) {
        const SPIN_NS: u64 = 30_000;
        const MAX_SLEEP_NS: u64 = 10_000_000;
        loop {
            let now = self.now_ns();
            if now >= until_ns || self.stop.load(Ordering::Relaxed) {
                return;
            }
            let left = until_ns - now;
            if left > SPIN_NS {
                std::thread::sleep(std::time::Duration::from_nanos(
                    (left - SPIN_NS).min(MAX_SLEEP_NS),
                ));
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// One I/O issued: under --thinktime, a pause is owed after every
    /// --thinktime-blocks of them.
    #[inline]
    fn count_think(&mut self) {
        if let Some(t) = &mut self.think {
            t.since += 1;
            if t.since >= t.plan.blocks {
                t.since = 0;
                t.due = true;
            }
        }
    }

    /// The pause owed under --thinktime (nothing in flight): spin
    /// --thinktime-spin, sleep the rest; a stop ends it.
    #[cold]
    fn do_think(&mut self) {
        let Some(t) = &mut self.think else {
            return;
        };
        t.due = false;
        let mut plan = t.plan;
        if let Some(ns) = self.engine.think_ns() {
            // fio's cpuio qsort: the pause follows the last burn's time.
            plan.total_ns = ns;
        }
        let start = self.now_ns();
        while self.now_ns() < start + plan.spin_ns && !self.stop.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
        self.sleep_until(start + plan.total_ns);
        // A pause that reaches the end of the runtime ends the job before
        // another I/O, as fio checks its runtime before each one.
        if self.now_ns() >= self.end_ns {
            self.stop.store(true, Ordering::Relaxed);
        }
        if self.plan.regulation.rate_ignore_thinktime {
            let slept_us = (self.now_ns() - start) / 1000;
            if let Some(p) = &mut self.pace {
                ignore_think(p, slept_us);
            }
        }
    }

    /// fio's flow_threshold_exceeded before an I/O is drawn: go (the I/O
    /// is counted in the flow), reap first (ahead, I/O in flight), or
    /// check again (ahead, after fio's flow_sleep or a yield).
    #[cold]
    fn flow_gate(&mut self) -> FlowGate {
        let Some(f) = &mut self.flow else {
            return FlowGate::Go;
        };
        if !self.flow_wait && !f.exceeded() {
            return FlowGate::Go;
        }
        // fio quiesces before its flow_sleep; without one it spins.
        if self.inflight > 0 {
            self.flow_wait = f.sleep_us() > 0;
            return FlowGate::Reap;
        }
        let sleep_us = f.sleep_us();
        if self.flow_wait || sleep_us > 0 {
            self.flow_wait = false;
            let until = self.now_ns() + sleep_us * 1000;
            self.sleep_until(until);
        } else {
            std::thread::yield_now();
        }
        FlowGate::Again
    }

    /// Makes the sync owed under --fsync/--fdatasync (nothing in flight).
    #[cold]
    fn do_sync(&mut self) -> Result<()> {
        let Some(s) = &mut self.sync else {
            return Ok(());
        };
        s.due = false;
        s.since = 0;
        let data = s.every.data;
        // SAFETY: fsync/fdatasync on the job's open descriptor.
        let rc = unsafe {
            if data {
                libc::fdatasync(self.fd)
            } else {
                libc::fsync(self.fd)
            }
        };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            bail!(
                "job {}: {} of the target failed: {err}",
                self.ctx.job,
                if data { "fdatasync" } else { "fsync" }
            );
        }
        *self.measurements.syncs.get_or_insert(0) += 1;
        Ok(())
    }

    /// The loop contract, the same for every engine and depth: a failed
    /// completion or a verify mismatch stops the issuing of new I/O; every
    /// completion the engine hands over is accounted for (its slot freed,
    /// the in-flight count lowered), so the loop ends when exactly what was
    /// in flight has completed, and then returns the first failure. An
    /// error of the engine itself (a system call that failed) returns at
    /// once; the caller drains.
    fn run(&mut self) -> Result<()> {
        self.engine_counts_submits = self.engine.take_submit_counts().is_some();
        // The plan checked --clocksource cpu; Auto falls back on its own.
        self.clock = Clock::start(self.plan.job_clock()).map_err(|e| anyhow::anyhow!(e))?;
        let mut r = if self.is_plain() {
            self.run_loop::<true>()
        } else {
            self.run_loop::<false>()
        };
        if let Err(e) = &r {
            if let Some(f) = e.downcast_ref::<crate::fill_device::FilledUp>() {
                // Not a failure; as in fio, no read-back follows.
                self.filled = Some(f.0.clone());
                r = Ok(());
            } else if let Some(f) = e.downcast_ref::<crate::job_error::JobFailed>() {
                // fio's failed job: it ends here, with what it did.
                self.job_failed = Some(f.0.clone());
                r = Ok(());
            }
        }
        // fio's do_verify: the writes done, every block written is read
        // back and checked, measured as reads (as fio counts them).
        if r.is_ok()
            && !self.stop.load(Ordering::Relaxed)
            && self.filled.is_none()
            && self.job_failed.is_none()
            && self.fio_verify.as_mut().is_some_and(|v| v.start_phase())
        {
            r = self.run_loop::<false>();
        }
        if let Some(v) = &self.fio_verify {
            self.measurements.verified_blocks = Some(v.verified);
        }
        self.record_all();
        if let Some(c) = self.engine.take_submit_counts() {
            self.io_depths.add_submits(&c);
        }
        self.measurements.io_depths = self.io_depths;
        r
    }

    /// Whether the run uses none of the options that act per request
    /// (pacing, flow, syncs, think time, verify, buffer contents,
    /// priorities, latency target, logs, stages, intervals, live bytes,
    /// think cycles): then the loop is compiled without their checks
    /// ([`Job::run_loop`] with `PLAIN`). --gtod-reduce (the coarse clock)
    /// is checked in both loops: in the general one its savings were
    /// eaten by the other options' checks, and a --gtod-reduce run at
    /// depth 1 on zram was no faster than a timed one.
    fn is_plain(&self) -> bool {
        self.pace.is_none()
            && self.flow.is_none()
            && self.sync.is_none()
            && self.think.is_none()
            && self.verify.is_none()
            && self.fio_verify.is_none()
            && self.fio_fill.is_none()
            && self.fio_prio.is_none()
            && self.lat_target.is_none()
            && self.logs.is_none()
            && self.stage_log.is_none()
            && self.intervals.is_none()
            && self.live_bytes.is_none()
            && self.plan.thinkcycles == 0
    }

    /// The job's loop. `PLAIN` (see [`Job::is_plain`]): none of the
    /// per-request options is set, and their checks are compiled out, so
    /// a request runs through less code (after each system call the
    /// kernel's work has evicted much of the instruction cache, and every
    /// line of code a request runs through is fetched again).
    fn run_loop<const PLAIN: bool>(&mut self) -> Result<()> {
        let mut completions: Vec<Completion> = Vec::with_capacity(self.slots.len());
        loop {
            let queued = self.fill::<PLAIN>()?;
            if queued > 0 {
                // fio's "IO depths": the depth these went out at, and the
                // submission that handed them over (one call each where
                // each request is submitted on its own).
                let d = &mut self.io_depths;
                d.issued(self.inflight, u64::from(queued));
                if !self.engine_counts_submits {
                    if self.stamp_each {
                        for _ in 0..queued {
                            d.submitted(1);
                        }
                    } else {
                        d.submitted(queued);
                    }
                }
                self.engine.commit()?;
                // fio's slat ends when the request is handed to the kernel:
                // after io_submit or a submitting io_uring_enter returns
                // (in commit, or in queue with --submit-batch N; with
                // stamp_each each request was stamped in fill). The
                // default uring loop submits in the io_uring_enter that
                // also waits, inside reap(): this stamp is taken right
                // before that call. One clock read per loop turn; none
                // under --gtod-reduce.
                if self.coarse.is_none() {
                    let now = self.now_ns();
                    for &slot in &self.just_queued {
                        self.slots[slot as usize].submit_ns = now;
                    }
                }
                self.just_queued.clear();
            }
            if self.inflight > 0 {
                // Ending (stopped or failed) and a second interrupt came:
                // stop waiting for what is in flight; the caller abandons it.
                if (self.failure.is_some() || self.stop.load(Ordering::Relaxed))
                    && ringlab_core::gate::signals_received() >= 2
                {
                    return match self.failure.take() {
                        Some(f) => Err(f),
                        None => Ok(()),
                    };
                }
                completions.clear();
                self.engine.reap(1, &mut completions)?;
                self.io_depths.completed(completions.len() as u32);
                let now = self.completed_at(completions.len() as u32);
                self.completion_time(now);
                for c in &completions {
                    // A completion thread stamps the moment it saw the
                    // completion; the latency ends there, not here.
                    let at = c.seen.map_or(now, |t| self.clock.since_zero(t));
                    self.finish::<PLAIN>(c.slot, c.result, at);
                }
            } else if let Some(failure) = self.failure.take() {
                return Err(failure);
            } else if !self.may_issue::<PLAIN>() {
                // As in fio, a sync owed after the last N writes is not
                // made when nothing more is issued (fio's end_fsync).
                return Ok(());
            } else if let Some(until) = self
                .pace
                .as_mut()
                .filter(|_| !PLAIN)
                .and_then(|p| p.wait_until.take())
            {
                self.sleep_until(until);
            } else if queued == 0 && self.pending.is_some() {
                bail!("the engine refused a request with nothing in flight");
            }
        }
    }

    /// Accounts for one completion handed over by the engine: the slot is
    /// free again whatever the result; a failure is kept (the first one)
    /// and ends the job once nothing is in flight.
    #[inline]
    fn finish<const PLAIN: bool>(&mut self, slot: u32, result: i64, now_ns: u64) {
        self.inflight -= 1;
        if self.failure.is_some() {
            // fio's fill_device: what was in flight when the space ran
            // out still counts when it completed.
            let filled = self.failure.as_ref().is_some_and(|f| {
                f.is::<crate::fill_device::FilledUp>() || f.is::<crate::job_error::JobFailed>()
            });
            if !filled || self.complete::<PLAIN>(slot, result, now_ns).is_err() {
                self.release(slot);
            }
            return;
        }
        if let Err(e) = self.complete::<PLAIN>(slot, result, now_ns) {
            self.release(slot);
            self.failure = Some(e);
        }
    }

    /// fio's latency_target before an I/O is issued: under the search's
    /// depth, and not while the I/O in flight drains after a change of
    /// depth (fio's quiesce); a drained quiesce starts the next window
    /// (and, before the final window, the statistics again).
    fn lat_gate(&mut self) -> bool {
        let Some(t) = &self.lat_target else {
            return true;
        };
        if t.quiescing {
            if self.inflight > 0 {
                return false;
            }
            let now = self.now_ns();
            let ops = self.ops;
            let reset = t.reset_due;
            if let Some(t) = &mut self.lat_target {
                t.quiesced(now, ops);
            }
            if reset && self.ramp_end_ns == 0 {
                // fio's reset_all_stats: only the final window is
                // reported.
                self.end_ramp(now);
            }
        }
        self.lat_target
            .as_ref()
            .is_none_or(|t| self.inflight < t.qd)
    }

    /// fio's latency_target check of one completed I/O's total latency.
    fn lat_sample(&mut self, s: &SlotState, lat: u64) -> Result<()> {
        let Some(t) = &mut self.lat_target else {
            return Ok(());
        };
        if t.sample(lat) == crate::lat_target::Step::Fatal {
            let what = if s.dir == Dir::Write { "write" } else { "read" };
            bail!(
                "job {}: latency of {lat} nsec exceeds specified max ({} nsec): {} {what} {} {} (fio's latency_target: even at depth 1 an I/O took longer, with latency_percentile=100; fio ends the job with ETIMEDOUT, 'max latency exceeded')",
                self.ctx.job,
                t.plan.target_ns,
                self.ctx.target.path.display(),
                s.offset,
                s.len
            );
        }
        Ok(())
    }

    /// fio's lat_target_check after a completion (not within the ramp):
    /// at the end of a window the depth goes up or down, or the search
    /// is over and the job ends.
    fn lat_check(&mut self, now_ns: u64) {
        if self.ramp_end_ns != 0 {
            return;
        }
        let ops = self.ops;
        if let Some(t) = &mut self.lat_target {
            if t.check(now_ns, ops) == crate::lat_target::Step::Done {
                self.stop.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Frees a slot whose completion is not recorded (after a failure).
    fn release(&mut self, slot: u32) {
        if let Some(v) = &mut self.verify {
            v.inflight_blocks.remove(&self.slots[slot as usize].block);
        }
        self.free.push(slot);
    }

    /// Issues I/O until every slot is busy; returns how many were queued
    /// (not completed inline).
    ///
    /// One clock read serves as the start of every request queued in this
    /// call: they reach the kernel together (in the next io_uring_enter, or
    /// one io_submit), and a clock read per request cost a fifth of the
    /// time of a NOP. For an engine that completes inline (sync), the end
    /// of one request is the start of the next, unless think time lies
    /// between them.
    #[inline]
    fn fill<const PLAIN: bool>(&mut self) -> Result<u32> {
        let mut queued = 0;
        let mut stamp: Option<u64> = None;
        while let Some(&slot) = self.free.last() {
            if !self.may_issue::<PLAIN>() {
                break;
            }
            if !PLAIN && self.lat_target.is_some() && !self.lat_gate() {
                break;
            }
            if !PLAIN && self.sync.as_ref().is_some_and(|s| s.due) {
                if self.inflight > 0 {
                    break;
                }
                self.do_sync()?;
                // The next I/O starts after the sync, not before it.
                stamp = None;
            }
            if !PLAIN && self.think.as_ref().is_some_and(|t| t.due) {
                // fio's thinktime: the I/O in flight completes first, and
                // the pause is in no I/O's latency.
                if self.inflight > 0 {
                    break;
                }
                self.do_think();
                stamp = None;
                if !self.may_issue::<PLAIN>() {
                    break;
                }
            }
            if !PLAIN && self.pending.is_none() && self.flow.is_some() {
                match self.flow_gate() {
                    FlowGate::Go => {}
                    FlowGate::Reap => break,
                    FlowGate::Again => {
                        stamp = None;
                        continue;
                    }
                }
            }
            // The plain loop's common case first: nothing pending (an
            // Option's take() writes the None back every time).
            let (io, log_read) = match self.pending {
                None if PLAIN => (self.workload.next_io(), false),
                Some(io) => {
                    self.pending = None;
                    (io, false)
                }
                None => match self.fio_verify.as_mut().and_then(|v| v.next_read()) {
                    Some((block, len)) => (
                        NextIo {
                            dir: Dir::Read,
                            block,
                            len,
                        },
                        true,
                    ),
                    None if self.fio_verify.as_ref().is_some_and(|v| v.phase) => break,
                    None => (self.workload.next_io(), false),
                },
            };
            // With fio's verify, a read of the write log is a verify read:
            // not counted against io_size or number_ios (fio's neither).
            // A read/write mix's own reads are workload I/O.
            let verify_read = log_read
                // trimwrite: fio counts the writes against size, not the
                // trims before them.
                || (io.dir == Dir::Trim && self.plan.rw.writes_after_trim());
            if self.workload.take_new_pass() {
                // fio re-opens its file at each pass, and invalidate=1
                // drops its cache then.
                // SAFETY: a valid fd; fadvise only drops clean cached pages.
                unsafe { libc::posix_fadvise(self.fd, 0, 0, libc::POSIX_FADV_DONTNEED) };
            }
            if let Some(v) = self.verify.as_ref().filter(|_| !PLAIN) {
                if v.inflight_blocks.contains(&io.block) {
                    self.pending = Some(io);
                    break;
                }
            }
            // --rate-iops/--rate: an I/O not due yet waits; one that is
            // starts its latency at its due time, however late it leaves.
            let mut due_start: Option<u64> = None;
            let mut poisson_undo = None;
            if let Some(p) = self.pace.as_mut().filter(|_| !PLAIN) {
                let d = io.dir.size_index();
                if let Some(period) = p.period_ns[d] {
                    let period = if p.per_byte {
                        period * io.len as f64
                    } else {
                        period
                    };
                    let now = self.clock.elapsed_ns();
                    let due = p.due_ns[d] as u64;
                    if due > now {
                        p.wait_until = Some(due);
                        self.pending = Some(io);
                        break;
                    }
                    due_start = Some(due);
                    match &mut p.poisson {
                        None => p.due_ns[d] += period,
                        Some(g) => {
                            poisson_undo = Some((p.due_ns[d], g.clone()));
                            p.due_ns[d] = g.next_due_ns(d, (1e9 / period).round() as u64) as f64;
                        }
                    }
                }
            }
            self.free.pop();
            if !PLAIN && io.dir == Dir::Write {
                // fio's rule: after every N writes issued, a sync before
                // the next I/O (the writes in flight complete first).
                if let Some(sy) = &mut self.sync {
                    sy.since += 1;
                    sy.due |= sy.since >= sy.every.writes;
                }
            }
            let offset = io.block * self.bs + self.shift;
            let len = io.len;
            if !PLAIN && io.dir == Dir::Write {
                if let Some(v) = &mut self.verify {
                    let generation = v.rng.next_u64();
                    verify::stamp(self.buffers.slot_mut(slot), offset, generation);
                }
                if let Some(f) = &mut self.fio_fill {
                    let pattern = self.plan.buffer_pattern.as_deref();
                    f.fill(&mut self.buffers.slot_mut(slot)[..len as usize], pattern);
                }
                if let Some(v) = &mut self.fio_verify {
                    let seed = offset ^ ((v.numberio as u64) << 48);
                    v.spec.stamp(
                        &mut self.buffers.slot_mut(slot)[..len as usize],
                        offset,
                        seed,
                        v.numberio,
                        v.thread,
                    );
                    v.numberio = v.numberio.wrapping_add(1);
                }
            }
            let start_ns = match (due_start.or(stamp), &self.coarse) {
                (Some(t), _) => t,
                // Not timed: the start only tells the ramp from the run.
                (None, Some(c)) => c.now_ns,
                (None, None) => {
                    let t = self.now_ns();
                    stamp = Some(t);
                    t
                }
            };
            self.slots[slot as usize] = SlotState {
                offset,
                block: io.block,
                start_ns,
                submit_ns: NOT_SUBMITTED,
                len,
                dir: io.dir,
                ioprio: 0,
                high_prio: false,
                log_read,
            };
            let (ioprio, high_prio) = match self.fio_prio.as_mut().filter(|_| !PLAIN) {
                Some(p) => p.pick((io.dir == Dir::Write) as usize, len as u64),
                None => (0, false),
            };
            if !PLAIN {
                self.slots[slot as usize].ioprio = ioprio;
                self.slots[slot as usize].high_prio = high_prio;
            }
            let req = IoRequest {
                slot,
                dir: io.dir,
                offset,
                len,
                buf: self.buffers.slot_ptr(slot),
                ioprio,
            };
            match self.engine.queue(&req)? {
                QueueStatus::Completed(result) => {
                    if !verify_read {
                        self.issued_bytes += len as u64;
                        self.issued_ios += 1;
                    }
                    // As fio's synchronous engines: depth 1, one request
                    // per submission and per completion.
                    let d = &mut self.io_depths;
                    d.issued(1, 1);
                    d.submitted(1);
                    d.completed(1);
                    if !PLAIN {
                        self.count_think();
                    }
                    let now = self.completed_at(1);
                    self.completion_time(now);
                    if let Err(e) = self.complete::<PLAIN>(slot, result, now) {
                        self.release(slot);
                        self.failure = Some(e);
                        break;
                    }
                    // The next request takes its own start stamp: this
                    // one's end would put the work between them (this
                    // completion's accounting and logs, the next draw and
                    // buffer fill) into its latency, which fio's does not
                    // hold (fio stamps each I/O after preparing it).
                    stamp = None;
                }
                QueueStatus::Queued => {
                    if !verify_read {
                        self.issued_bytes += len as u64;
                        self.issued_ios += 1;
                    }
                    if !PLAIN {
                        self.count_think();
                    }
                    self.inflight += 1;
                    queued += 1;
                    if self.stamp_each && self.coarse.is_none() {
                        let now = self.now_ns();
                        self.slots[slot as usize].submit_ns = now;
                        // Not the next request's start: see Completed.
                        stamp = None;
                    } else {
                        self.just_queued.push(slot);
                    }
                    if let Some(v) = self.verify.as_mut().filter(|_| !PLAIN) {
                        v.inflight_blocks.insert(io.block);
                    }
                }
                QueueStatus::Busy => {
                    self.free.push(slot);
                    if verify_read {
                        // Back at the head of the log, not as a workload I/O.
                        if let Some(v) = &mut self.fio_verify {
                            v.queue.push_front((io.block, io.len));
                        }
                        break;
                    }
                    self.pending = Some(io);
                    if let (Some(sy), Dir::Write) = (&mut self.sync, io.dir) {
                        sy.since -= 1;
                        sy.due = sy.since >= sy.every.writes;
                    }
                    if let Some(p) = &mut self.pace {
                        // Not issued: it is still due when it was.
                        let d = io.dir.size_index();
                        if let Some((due, gaps)) = poisson_undo {
                            p.due_ns[d] = due;
                            p.poisson = Some(gaps);
                        } else if let Some(period) = p.period_ns[d] {
                            p.due_ns[d] -= if p.per_byte {
                                period * io.len as f64
                            } else {
                                period
                            };
                        }
                    }
                    break;
                }
            }
        }
        Ok(queued)
    }

    /// A completion that is not the full transfer: a failed I/O (counted
    /// under continue_on_error, the end of a fill, or the job's failure) or
    /// a short one. `Ok(true)`: measure it (as `s`, whose length may have
    /// become 0), `Ok(false)`: it was counted and released.
    #[cold]
    #[inline(never)]
    fn odd_result(&mut self, slot: u32, s: &mut SlotState, result: i64) -> Result<bool> {
        let bs = s.len as u64;
        let what = match s.dir {
            Dir::Read => "read",
            Dir::Write => "write",
            Dir::Nop => "nop",
            Dir::Trim => "trim",
        };
        if result < 0 {
            if crate::fill_device::ends_fill(self.plan, s.dir == Dir::Write, result, bs) {
                return Err(self.fill_ended(slot, s, result));
            }
            let errno = (-result) as i32;
            let err = std::io::Error::from_raw_os_error(errno);
            // fio counts a failed trim as a write error.
            let d = s.dir.size_index();
            if self.plan.continue_errnos[d].contains(&errno) {
                // fio's continue_on_error: counted, and the job goes on.
                self.io_errors += 1;
                self.first_io_error.get_or_insert_with(|| {
                    format!("{what} of {bs} bytes at offset {}: {err}", s.offset)
                });
                self.release(slot);
                return Ok(false);
            }
            if self.plan.fio_job_errors {
                return Err(self.job_failed(s, errno, what));
            }
            let hint = crate::engines::errno_hint(self.plan, errno);
            bail!(
                "job {}: {what} of {bs} bytes at offset {} failed: {err}{hint}",
                self.ctx.job,
                s.offset
            );
        }
        if result as u64 != bs {
            if crate::fill_device::ends_fill(self.plan, s.dir == Dir::Write, result, bs) {
                return Err(self.fill_ended(slot, s, result));
            }
            if self.plan.fio_job_errors
                && s.dir == Dir::Read
                && result == 0
                && self.plan.engine.is_async()
            {
                // fio's queued engines (libaio, io_uring, posixaio): a read
                // that got nothing (past the end) completes as an I/O of no
                // byte (fio 3.33 io_u.c, io_completed), and the job goes on.
                s.len = 0;
            } else {
                if self.plan.fio_job_errors && s.dir == Dir::Read && result == 0 {
                    // fio's "full resid" of its synchronous engines: a read
                    // that got nothing (past the end) ends the job with EIO.
                    return Err(self.job_failed(s, libc::EIO, "resid"));
                }
                let why = if s.dir == Dir::Read {
                    " (the end of the file came early: was the target truncated during the run?)"
                } else {
                    ""
                };
                bail!(
                    "job {}: short {what} at offset {}: {result} of {bs} bytes{why}",
                    self.ctx.job,
                    s.offset
                );
            }
        }
        Ok(true)
    }

    /// What the time of a completion decides, once for the completions
    /// handed over together at `now_ns` (a reap's, or one inline
    /// completion's), before any of them is accounted for: the end of the
    /// ramp, and the end of the job. Once per reap, not per completion:
    /// a completion a completion thread saw earlier than `now_ns` is one
    /// that started before the ramp's end whenever it completed before it,
    /// so it is not measured either way; and a job past its end at
    /// `now_ns` is past it for each of them.
    #[inline(always)]
    fn completion_time(&mut self, now_ns: u64) {
        if self.ramp_end_ns != 0 && now_ns >= self.ramp_end_ns {
            self.end_ramp(self.ramp_end_ns);
        }
        // The runtime is over, or a signal came, and the runner's thread
        // may not get the CPU to say so (see `end_ns`): stop issuing.
        if now_ns >= self.end_ns || ringlab_core::gate::signals_received() > 0 {
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    /// Accounts for one completion (after [`Job::completion_time`] for its
    /// time). The plain loop's is inlined where the loop reaps; the general
    /// one's, with every option's checks, is one function out of line.
    #[inline(always)]
    fn complete<const PLAIN: bool>(&mut self, slot: u32, result: i64, now_ns: u64) -> Result<()> {
        if PLAIN {
            self.complete_body::<true>(slot, result, now_ns)
        } else {
            self.complete_general(slot, result, now_ns)
        }
    }

    #[inline(never)]
    fn complete_general(&mut self, slot: u32, result: i64, now_ns: u64) -> Result<()> {
        self.complete_body::<false>(slot, result, now_ns)
    }

    #[inline(always)]
    fn complete_body<const PLAIN: bool>(
        &mut self,
        slot: u32,
        result: i64,
        now_ns: u64,
    ) -> Result<()> {
        let mut s = self.slots[slot as usize];
        let mut bs = s.len as u64;
        // An error or a short transfer (a negative result is never the
        // length either): out of line, so the hot path stays small.
        if result as u64 != bs {
            if !self.odd_result(slot, &mut s, result)? {
                return Ok(());
            }
            bs = s.len as u64;
        }
        // An I/O started (or due) within --ramp-time is not measured, even
        // when it completes after it (measure_from_ns is 0 without a ramp).
        if s.start_ns >= self.measure_from_ns {
            if let Some(log) = self.stage_log.as_mut().filter(|_| !PLAIN) {
                if log.requests.len() < StageLog::CAP {
                    log.requests.push((slot, s.offset, s.start_ns, now_ns));
                } else {
                    log.full = true;
                }
            }
            if self.coarse.is_some() {
                self.count_untimed(&s, now_ns)?;
            } else {
                self.record_timed::<PLAIN>(&s, now_ns)?;
            }
        }
        if let Some(v) = self.verify.as_mut().filter(|_| !PLAIN) {
            v.inflight_blocks.remove(&s.block);
            if s.dir == Dir::Write {
                v.mark_written(s.block);
            } else {
                if let Err(why) = verify::check(self.buffers.slot(slot), s.offset) {
                    bail!(
                        "verify failed: job {} read at offset {} (block {}): {why}",
                        self.ctx.job,
                        s.offset,
                        s.block
                    );
                }
                v.checked += 1;
            }
        }
        if let Some(v) = self.fio_verify.as_mut().filter(|_| !PLAIN) {
            if s.dir == Dir::Write {
                v.written(s.block, s.len);
            } else if s.dir == Dir::Read
                && s.len > 0
                && (s.log_read || !self.plan.rw.writes(self.plan.rwmixread))
            {
                let buf = &self.buffers.slot(slot)[..s.len as usize];
                if let Err(why) = v.spec.check(buf, s.offset) {
                    let dumped = if v.spec.dump {
                        crate::fio_verify::dump(&self.ctx.target.path, s.offset, buf)
                    } else {
                        String::new()
                    };
                    bail!(
                        "verify failed: job {} file {}: {why}{dumped}",
                        self.ctx.job,
                        self.ctx.target.path.display()
                    );
                }
                v.verified += 1;
            }
        }
        if !PLAIN && self.plan.thinkcycles > 0 {
            think(self.plan.thinkcycles, self.stop);
        }
        self.free.push(slot);
        self.ops += 1;
        self.progress.ops.store(self.ops, Ordering::Relaxed);
        if let Some(b) = self.live_bytes.as_mut().filter(|_| !PLAIN) {
            *b += bs;
            self.progress.bytes.store(*b, Ordering::Relaxed);
        }
        if !PLAIN && self.lat_target.is_some() {
            self.lat_check(now_ns);
        }
        Ok(())
    }

    /// fio's failed job: the I/O error that ends this job alone.
    #[cold]
    fn job_failed(&self, s: &SlotState, errno: i32, what: &str) -> anyhow::Error {
        let err = std::io::Error::from_raw_os_error(errno);
        let path = self.ctx.target.path.display();
        let detail = if what == "resid" {
            format!(
                "read of {} bytes at offset {} of {path} got no byte (past its end), which fio fails with {err}",
                s.len, s.offset
            )
        } else {
            format!(
                "{what} of {} bytes at offset {} of {path}: {err}",
                s.len, s.offset
            )
        };
        crate::job_error::JobFailed(crate::job_error::warning(
            self.ctx.job,
            errno,
            what,
            &detail,
        ))
        .into()
    }

    /// fio's fill_device: the write that found no space ends the job. It
    /// is counted as fio counts it issued; a short write's rest is issued
    /// again, as fio's requeue does (fio 3.33 io_u.c), and counted too.
    #[cold]
    fn fill_ended(&mut self, slot: u32, s: &SlotState, result: i64) -> anyhow::Error {
        let (mut result, mut offset, mut len) = (result, s.offset, s.len as u64);
        self.fill_unfinished.0 += 1;
        if result > 0 && (result as u64) < len {
            self.fill_unfinished.1 += 1;
            let done = result as u64;
            let rest = &self.buffers.slot(slot)[done as usize..len as usize];
            // SAFETY: `rest` is a live slice of the slot's buffer, whose
            // request has completed; pwrite reads at most its length.
            let n = unsafe {
                libc::pwrite(
                    self.fd,
                    rest.as_ptr().cast(),
                    rest.len(),
                    (offset + done) as libc::off_t,
                )
            };
            self.fill_unfinished.0 += 1;
            result = crate::job_error::or_errno(n as i64, n as i64);
            offset += done;
            len -= done;
        }
        let path = &self.ctx.target.path;
        crate::fill_device::FilledUp(crate::fill_device::filled_message(
            self.ctx.job,
            path,
            result,
            offset,
            len,
        ))
        .into()
    }

    /// Records a completed, measured I/O with its latencies (`now_ns`: its
    /// completion).
    #[inline]
    fn record_timed<const PLAIN: bool>(&mut self, s: &SlotState, now_ns: u64) -> Result<()> {
        let bs = s.len as u64;
        // lat = slat + clat exactly: the submission stamp is clamped into
        // [start, end] (a completion thread may see a completion before
        // the job thread took the submission stamp).
        let end = now_ns.max(s.start_ns);
        let (slat, clat) = if s.submit_ns == NOT_SUBMITTED {
            (None, end - s.start_ns)
        } else {
            let sub = s.submit_ns.clamp(s.start_ns, end);
            (Some(sub - s.start_ns), end - sub)
        };
        if !PLAIN {
            let lat = end - s.start_ns;
            if self.lat_target.is_some() {
                self.lat_sample(s, lat)?;
            }
            if let Some(r) = self.interval_recorder(now_ns, s.dir) {
                r.record(bs, lat);
            }
            self.log(s, now_ns, [Some(lat), Some(clat), slat])?;
        }
        // Runs of equal latencies (one batch: one start, submission and
        // end time) are recorded once (flush_recorded).
        match self.unrecorded.last_mut() {
            Some(u) if u.dir == s.dir && u.slat == slat && u.clat == clat => {
                u.n += 1;
                u.bytes += bs;
            }
            _ => {
                if self.unrecorded.len() == UNRECORDED_RUNS {
                    self.flush_recorded();
                }
                self.unrecorded.push(Unrecorded {
                    dir: s.dir,
                    slat,
                    clat,
                    n: 1,
                    bytes: bs,
                });
            }
        }
        Ok(())
    }

    /// Counts a completed, measured I/O under --gtod-reduce: its bytes, no
    /// latency (`now_ns`, the coarse clock, only places it in an interval
    /// and a log window).
    #[inline]
    fn count_untimed(&mut self, s: &SlotState, now_ns: u64) -> Result<()> {
        let bs = s.len as u64;
        if let Some(r) = self.interval_recorder(now_ns, s.dir) {
            r.count(bs, 1);
        }
        // The latency logs are refused with --gtod-reduce; the others take
        // no latency.
        self.log(s, now_ns, [None; 3])?;
        recorder(&mut self.measurements, s.dir).count(bs, 1);
        Ok(())
    }

    /// Under --status-interval, the recorder of the interval a completion
    /// at `now_ns` falls in (the intervals before it closed), for its
    /// direction; `None` without intervals, and for NOPs.
    #[inline]
    fn interval_recorder(
        &mut self,
        now_ns: u64,
        dir: Dir,
    ) -> Option<&mut ringlab_stats::DirectionRecorder> {
        let iv = self.intervals.as_mut()?;
        iv.cut(now_ns, self.measure_from_ns);
        match dir {
            Dir::Read => Some(&mut iv.current.read),
            Dir::Write => Some(&mut iv.current.write),
            Dir::Nop | Dir::Trim => None,
        }
    }

    /// fio's logs, once measuring has started (not within --ramp-time).
    #[inline]
    fn log(&mut self, s: &SlotState, now_ns: u64, lats: IoLatencies) -> Result<()> {
        if let Some(l) = self.logs.as_mut().filter(|_| self.ramp_end_ns == 0) {
            let at = now_ns - self.measure_from_ns.min(now_ns);
            if let Some(p) = &self.fio_prio {
                l.prio_column = Some(p.column(s.ioprio, s.high_prio));
            }
            if let Err(e) = l.record(at, s.dir, s.len as u64, s.offset, lats) {
                bail!("job {}: cannot write fio's log: {e}", self.ctx.job);
            }
        }
        Ok(())
    }

    /// Moves the completions counted in `unrecorded` to `flat`.
    #[inline(never)]
    fn flush_recorded(&mut self) {
        for u in self.unrecorded.drain(..) {
            self.flat[dir_index(u.dir)].record_split(u.bytes, u.slat, u.clat, u.n);
        }
    }

    /// Moves every completion measured to `measurements` (once the loop
    /// is over: nothing reads them before).
    fn record_all(&mut self) {
        self.flush_recorded();
        for dir in [Dir::Read, Dir::Write, Dir::Nop, Dir::Trim] {
            self.flat[dir_index(dir)].drain_into(recorder(&mut self.measurements, dir));
        }
    }

    /// Waits for every I/O in flight, ignoring results (after an error of
    /// the engine). A second interrupt stops the waiting.
    fn drain(&mut self) -> Result<Drain> {
        let mut out = Vec::new();
        while self.inflight > 0 {
            if ringlab_core::gate::signals_received() >= 2 {
                return Ok(Drain::Abandoned);
            }
            out.clear();
            self.engine.reap(1, &mut out)?;
            self.inflight = self.inflight.saturating_sub(out.len() as u32);
        }
        Ok(Drain::Done)
    }
}

/// A direction's place in per-direction arrays.
#[inline]
fn dir_index(dir: Dir) -> usize {
    match dir {
        Dir::Read => 0,
        Dir::Write => 1,
        Dir::Nop => 2,
        Dir::Trim => 3,
    }
}

/// The recorder of a direction's completions.
#[inline]
fn recorder(m: &mut ThreadMeasurements, dir: Dir) -> &mut ringlab_stats::DirectionRecorder {
    match dir {
        Dir::Read => &mut m.read,
        Dir::Write => &mut m.write,
        Dir::Nop => &mut m.nop,
        Dir::Trim => &mut m.trim,
    }
}

/// Iterations of think time between two looks at the stop flag: about a
/// millisecond of work, so a stop is seen at once and the look costs nothing.
const THINK_CHUNK: u64 = 1 << 20;

/// Pure CPU work between I/Os: a dependent multiply-add chain the compiler
/// cannot remove or vectorise, no memory traffic, no system calls. Ends
/// early when `stop` is set (it is looked at every [`THINK_CHUNK`]
/// iterations).
#[inline(never)]
pub fn think(cycles: u64, stop: &AtomicBool) {
    let mut v: u64 = 1;
    let mut done = 0;
    while done < cycles {
        let end = done + (cycles - done).min(THINK_CHUNK);
        for i in done..end {
            v = std::hint::black_box(v.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
        }
        done = end;
        if done < cycles && stop.load(Ordering::Relaxed) {
            break;
        }
    }
    std::hint::black_box(v);
}

/// What the read-back of --verify did.
struct ReadBack {
    /// Blocks checked in all, during the run and in the read-back.
    checked: u64,
    /// Blocks written during the run, and how many of them were read back
    /// (fewer when an interrupt cut the read-back short).
    to_check: u64,
    read_back: u64,
}

/// Per-job state of --verify.
struct VerifyState {
    rng: Xoshiro256PlusPlus,
    /// Blocks with an I/O in flight: a second I/O to one of them waits, so a
    /// read never races a write of the same block.
    inflight_blocks: HashSet<u64>,
    /// Blocks written during the run (bit per block of the job's slice).
    written: Vec<u64>,
    first: u64,
    checked: u64,
}

impl VerifyState {
    fn new(plan: &IoPlan, job: u32, first: u64, count: u64) -> VerifyState {
        let words = if plan.writes() {
            count.div_ceil(64) as usize
        } else {
            0
        };
        VerifyState {
            rng: Xoshiro256PlusPlus::seed_from_u64(plan.seed ^ 0x7e51f ^ job as u64),
            inflight_blocks: HashSet::new(),
            written: vec![0; words],
            first,
            checked: 0,
        }
    }

    fn mark_written(&mut self, block: u64) {
        let rel = block - self.first;
        self.written[(rel / 64) as usize] |= 1 << (rel % 64);
    }

    /// Reads back every block written during the run and checks it. An
    /// interrupt (SIGINT, SIGTERM) ends the read-back early; the result says
    /// how far it got.
    fn read_back(
        self,
        fd: i32,
        buffers: &mut BufferPool,
        plan: &IoPlan,
        job: u32,
    ) -> Result<ReadBack> {
        let to_check: u64 = self.written.iter().map(|w| w.count_ones() as u64).sum();
        let mut back = ReadBack {
            checked: self.checked,
            to_check,
            read_back: 0,
        };
        let bs = plan.bs as usize;
        for (w, &word) in self.written.iter().enumerate() {
            if ringlab_core::gate::signals_received() > 0 {
                return Ok(back);
            }
            let mut bits = word;
            while bits != 0 {
                let bit = bits.trailing_zeros() as u64;
                bits &= bits - 1;
                let block = self.first + w as u64 * 64 + bit;
                let offset = block * plan.bs;
                let buf = buffers.slot_mut(0);
                // SAFETY: buf is bs bytes, page aligned, owned by this thread.
                let n =
                    unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), bs, offset as libc::off_t) };
                if n < 0 {
                    let err = std::io::Error::last_os_error();
                    bail!(
                        "verify read-back: job {job}: read of {bs} bytes at offset {offset} failed: {err}"
                    );
                }
                if n != bs as isize {
                    bail!(
                        "verify read-back: job {job}: short read at offset {offset}: {n} of {bs} bytes (the target shrank during the run?)"
                    );
                }
                if let Err(why) = verify::check(buf, offset) {
                    bail!(
                        "verify failed: job {job} block written at offset {offset} (block {block}) reads back wrong: {why}"
                    );
                }
                back.checked += 1;
                back.read_back += 1;
            }
        }
        Ok(back)
    }
}
