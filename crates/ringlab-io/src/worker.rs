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
use ringlab_core::cpus::pin_to_cpu;
use ringlab_kstat::ThreadUsage;
use ringlab_stats::ThreadMeasurements;
use std::collections::HashSet;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Counters a job publishes while it runs, read by the progress line. Padded
/// to its own cache line so jobs do not share one.
#[repr(align(128))]
#[derive(Default)]
pub struct JobProgress {
    pub ops: AtomicU64,
}

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
}

/// What a job measured.
pub struct JobOutcome {
    pub job: u32,
    pub cpu: Option<u32>,
    pub measurements: ThreadMeasurements,
    /// What the figures do not cover (a read-back cut short by an
    /// interruption, I/O abandoned in flight), for the result's warnings.
    pub warnings: Vec<String>,
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
    let setup = (|| -> Result<_> {
        if let Some(cpu) = cpu {
            pin_to_cpu(cpu)?;
        }
        let fd = ctx.target.open(&plan)?;
        let depth = if plan.engine.is_async() {
            plan.iodepth
        } else {
            1
        };
        let mut buffers = BufferPool::new(plan.bs as usize, depth as usize)?;
        for s in 0..depth {
            verify::fill_payload(buffers.slot_mut(s), plan.seed ^ ((s as u64) << 32) ^ 0xb0ff);
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
    let mut job = Job {
        workload: Workload::new(plan.rw, plan.rwmixread, first, count, plan.seed, ctx.job),
        slots: vec![SlotState::default(); depth as usize],
        free: (0..depth).rev().collect(),
        inflight: 0,
        pending: None,
        issued_bytes: 0,
        failure: None,
        verify: plan
            .verify
            .then(|| VerifyState::new(&plan, ctx.job, first, count)),
        measurements: ThreadMeasurements::default(),
        unrecorded: (Dir::Read, 0, 0),
        ops: 0,
        clock: Instant::now(),
        ctx: &ctx,
        plan: &plan,
        engine,
        buffers,
    };
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
                measurements.elapsed_ns = job.clock.elapsed().as_nanos() as u64;
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
    job.measurements.elapsed_ns = job.clock.elapsed().as_nanos() as u64;
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
    Ok(JobOutcome {
        job: ctx.job,
        cpu,
        measurements: job.measurements,
        warnings,
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
    dir: Dir,
}

struct Job<'a, E: Engine> {
    workload: Workload,
    slots: Vec<SlotState>,
    free: Vec<u32>,
    inflight: u32,
    /// An I/O drawn from the workload but not issued yet (engine busy, or
    /// its block is in flight under --verify).
    pending: Option<NextIo>,
    issued_bytes: u64,
    /// The first failed completion or verify mismatch: no more I/O is
    /// issued, what is in flight is reaped, then the job ends with it.
    failure: Option<anyhow::Error>,
    verify: Option<VerifyState>,
    measurements: ThreadMeasurements,
    /// Completions counted but not yet in `measurements`: `n` of one
    /// direction with one latency, `(dir, latency, n)`. Requests queued in
    /// one loop turn share their start stamp and those reaped together
    /// share their end stamp, so a batch usually has one latency: it is
    /// recorded once, `n` times (the same histogram as `n` records).
    unrecorded: (Dir, u64, u64),
    ops: u64,
    clock: Instant,
    ctx: &'a JobContext,
    plan: &'a IoPlan,
    // The engine is declared (and so dropped) before the buffers it uses.
    engine: E,
    buffers: BufferPool,
}

impl<E: Engine> Job<'_, E> {
    #[inline]
    fn now_ns(&self) -> u64 {
        self.clock.elapsed().as_nanos() as u64
    }

    fn may_issue(&self) -> bool {
        self.failure.is_none()
            && !self.ctx.stop.load(Ordering::Relaxed)
            && self
                .plan
                .io_size
                .is_none_or(|limit| self.issued_bytes < limit)
    }

    /// The loop contract, the same for every engine and depth: a failed
    /// completion or a verify mismatch stops the issuing of new I/O; every
    /// completion the engine hands over is accounted for (its slot freed,
    /// the in-flight count lowered), so the loop ends when exactly what was
    /// in flight has completed, and then returns the first failure. An
    /// error of the engine itself (a system call that failed) returns at
    /// once; the caller drains.
    fn run(&mut self) -> Result<()> {
        let r = self.run_loop();
        self.flush_recorded();
        r
    }

    fn run_loop(&mut self) -> Result<()> {
        let mut completions: Vec<Completion> = Vec::with_capacity(self.slots.len());
        self.clock = Instant::now();
        loop {
            let queued = self.fill()?;
            if queued > 0 {
                self.engine.commit()?;
            }
            if self.inflight > 0 {
                // Ending (stopped or failed) and a second interrupt came:
                // stop waiting for what is in flight; the caller abandons it.
                if (self.failure.is_some() || self.ctx.stop.load(Ordering::Relaxed))
                    && ringlab_core::gate::signals_received() >= 2
                {
                    return match self.failure.take() {
                        Some(f) => Err(f),
                        None => Ok(()),
                    };
                }
                completions.clear();
                self.engine.reap(1, &mut completions)?;
                let now = self.now_ns();
                for c in &completions {
                    // A completion thread stamps the moment it saw the
                    // completion; the latency ends there, not here.
                    let at = c.seen.map_or(now, |t| {
                        t.saturating_duration_since(self.clock).as_nanos() as u64
                    });
                    self.finish(c.slot, c.result, at);
                }
            } else if let Some(failure) = self.failure.take() {
                return Err(failure);
            } else if !self.may_issue() {
                return Ok(());
            } else if queued == 0 && self.pending.is_some() {
                bail!("the engine refused a request with nothing in flight");
            }
        }
    }

    /// Accounts for one completion handed over by the engine: the slot is
    /// free again whatever the result; a failure is kept (the first one)
    /// and ends the job once nothing is in flight.
    #[inline]
    fn finish(&mut self, slot: u32, result: i64, now_ns: u64) {
        self.inflight -= 1;
        if self.failure.is_some() {
            self.release(slot);
            return;
        }
        if let Err(e) = self.complete(slot, result, now_ns) {
            self.release(slot);
            self.failure = Some(e);
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
    fn fill(&mut self) -> Result<u32> {
        let mut queued = 0;
        let mut stamp: Option<u64> = None;
        while let Some(&slot) = self.free.last() {
            if !self.may_issue() {
                break;
            }
            let io = self
                .pending
                .take()
                .unwrap_or_else(|| self.workload.next_io());
            if let Some(v) = &self.verify {
                if v.inflight_blocks.contains(&io.block) {
                    self.pending = Some(io);
                    break;
                }
            }
            self.free.pop();
            let offset = io.block * self.plan.bs;
            if io.dir == Dir::Write {
                if let Some(v) = &mut self.verify {
                    let generation = v.rng.next_u64();
                    verify::stamp(self.buffers.slot_mut(slot), offset, generation);
                }
            }
            let start_ns = match stamp {
                Some(t) => t,
                None => {
                    let t = self.now_ns();
                    stamp = Some(t);
                    t
                }
            };
            self.slots[slot as usize] = SlotState {
                offset,
                block: io.block,
                start_ns,
                dir: io.dir,
            };
            let req = IoRequest {
                slot,
                dir: io.dir,
                offset,
                len: if io.dir == Dir::Nop {
                    0
                } else {
                    self.plan.bs as u32
                },
                buf: self.buffers.slot_ptr(slot),
            };
            match self.engine.queue(&req)? {
                QueueStatus::Completed(result) => {
                    self.issued_bytes += self.plan.bs;
                    let now = self.now_ns();
                    if let Err(e) = self.complete(slot, result, now) {
                        self.release(slot);
                        self.failure = Some(e);
                        break;
                    }
                    stamp = (self.plan.thinkcycles == 0).then_some(now);
                }
                QueueStatus::Queued => {
                    self.issued_bytes += self.plan.bs;
                    self.inflight += 1;
                    queued += 1;
                    if let Some(v) = &mut self.verify {
                        v.inflight_blocks.insert(io.block);
                    }
                }
                QueueStatus::Busy => {
                    self.free.push(slot);
                    self.pending = Some(io);
                    break;
                }
            }
        }
        Ok(queued)
    }

    #[inline]
    fn complete(&mut self, slot: u32, result: i64, now_ns: u64) -> Result<()> {
        let s = self.slots[slot as usize];
        let bs = if s.dir == Dir::Nop { 0 } else { self.plan.bs };
        let what = match s.dir {
            Dir::Read => "read",
            Dir::Write => "write",
            Dir::Nop => "nop",
        };
        if result < 0 {
            let errno = (-result) as i32;
            let err = std::io::Error::from_raw_os_error(errno);
            let hint = crate::engines::errno_hint(self.plan, errno);
            bail!(
                "job {}: {what} of {bs} bytes at offset {} failed: {err}{hint}",
                self.ctx.job,
                s.offset
            );
        }
        if result as u64 != bs {
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
        let lat = now_ns.saturating_sub(s.start_ns);
        let (dir, at, n) = &mut self.unrecorded;
        if *n > 0 && *dir == s.dir && *at == lat {
            *n += 1;
        } else {
            self.flush_recorded();
            self.unrecorded = (s.dir, lat, 1);
        }
        if let Some(v) = &mut self.verify {
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
        if self.plan.thinkcycles > 0 {
            think(self.plan.thinkcycles, &self.ctx.stop);
        }
        self.free.push(slot);
        self.ops += 1;
        self.ctx.progress.ops.store(self.ops, Ordering::Relaxed);
        Ok(())
    }

    /// Moves the completions counted in `unrecorded` to `measurements`.
    fn flush_recorded(&mut self) {
        let (dir, lat, n) = self.unrecorded;
        self.unrecorded.2 = 0;
        match dir {
            Dir::Read => self.measurements.read.record_n(self.plan.bs, lat, n),
            Dir::Write => self.measurements.write.record_n(self.plan.bs, lat, n),
            Dir::Nop => self.measurements.nop.record_n(0, lat, n),
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
