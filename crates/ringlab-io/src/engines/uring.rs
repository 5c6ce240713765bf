//! `uring`: io_uring through the io-uring crate, with every knob of the
//! kernel (see [`crate::knobs`]).
//!
//! Requests are pushed to the submission ring as they are queued. By
//! default the batch reaches the kernel in the one `io_uring_enter` that also
//! waits for completions, so a loop turn costs one system call; the knobs
//! change when submission happens (`--submit-batch`, SQPOLL), how the job
//! waits (`--reap wait|peek|spin`) and who reaps (`--completion-thread`).
//!
//! `io_uring_enter` is called directly rather than through the crate's
//! `Submitter`, because the crate forgets a registered ring descriptor
//! (`--register-ring`) between two `Submitter`s, and because the reap modes
//! need exact control over `min_complete` and the flags. The call is
//! [`ringlab_core::uring::enter`], which issues the system call inline (see
//! there why).

use super::{Completion, Engine, EngineSetup, IoRequest, QueueStatus};
use crate::knobs::{self, ReapMode, UringOptions};
use crate::plan::IoPlan;
use crate::workload::Dir;
use anyhow::{bail, Context, Result};
use io_uring::{opcode, squeue, types, EnterFlags, IoUring};
use ringlab_core::uring::ring::{build_ring, explain_setup_error, register_ring_fd};
use ringlab_core::usage_error;
use ringlab_stats::IoDepths;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// user_data of the NOP that tells the completion thread to leave.
const STOP_TAG: u64 = u64::MAX;

/// The SQPOLL ring whose poller thread and io-wq every job ring attaches to
/// (`--attach-wq`); it submits nothing itself.
pub struct UringShared {
    anchor: IoUring,
}

pub struct UringEngine {
    /// fio's submit counts since the last take_submit_counts.
    submits: [u64; 7],
    ring: Arc<IoUring>,
    /// What io_uring_enter is called with: the ring's descriptor, or its
    /// registered index (with IORING_ENTER_REGISTERED_RING in `enter_flags`).
    enter_fd: i32,
    enter_flags: u32,
    fd: RawFd,
    trim: crate::trim::TrimHow,
    fixed_file: bool,
    fixed_buffers: bool,
    sqpoll: bool,
    taskrun_flag: bool,
    submit_batch: u32,
    complete_batch: u32,
    /// `--complete-max`: at most this many completions per reap (the
    /// depth without it).
    complete_max: u32,
    reap: ReapMode,
    /// Pushed to the submission ring, not yet handed to the kernel.
    unsubmitted: u32,
    /// Queued and not yet reaped.
    inflight: u32,
    /// Which requests get IOSQE_ASYNC (--force-async N).
    async_every: EveryNth,
    completer: Option<Completer>,
}

/// Ring entries for a queue depth: the kernel rounds up to a power of two.
fn ring_entries(iodepth: u32) -> u32 {
    iodepth.max(1).next_power_of_two()
}

/// Checks, before any file is laid out, that io_uring with these knobs can
/// be used here: setup flags, registrations, and IOPOLL's poll queues.
pub fn probe_io_uring(plan: &IoPlan) -> Result<()> {
    let o = &plan.uring;
    let before = if o.sqpoll { own_threads() } else { Vec::new() };
    let r = probe_ring(plan);
    if o.sqpoll {
        // The probe ring's SQPOLL thread ends after the ring is closed, in
        // the kernel's own time (about 25-45 ms here): wait for it, so the
        // run's kernel evidence does not count a poller that was never the
        // run's. It is recognised as a thread that was not there before
        // (it may not have run yet to take its "iou-sqp" name); nothing
        // else starts threads during the probe.
        let deadline = Instant::now() + std::time::Duration::from_millis(500);
        while Instant::now() < deadline && own_threads().iter().any(|t| !before.contains(t)) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    r
}

/// The thread ids of this process.
fn own_threads() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

fn probe_ring(plan: &IoPlan) -> Result<()> {
    let o = &plan.uring;
    let entries = ring_entries(plan.iodepth.min(8));
    let probe_opts = UringOptions {
        cq_size: o.cq_size.map(|_| entries * 2),
        ..o.clone()
    };
    let ring = build_ring(entries, &probe_opts, None).map_err(|e| setup_error(e, o))?;
    if o.register_ring {
        register_ring_fd(ring.as_raw_fd()).map_err(|e| {
            register_error(e, "register-ring", "cannot register the ring's descriptor")
        })?;
    }
    if let Some(limits) = o.iowq_max_workers {
        let mut l = limits;
        ring.submitter()
            .register_iowq_max_workers(&mut l)
            .map_err(|e| register_error(e, "iowq-max-workers", "cannot limit the io-wq workers"))?;
    }
    if o.iopoll {
        check_poll_queues(plan)?;
    }
    Ok(())
}

/// Sets up the ring the jobs attach to with `--attach-wq`.
pub fn prepare_shared(plan: &IoPlan) -> Result<Option<UringShared>> {
    if !plan.uring.attach_wq {
        return Ok(None);
    }
    let opts = UringOptions {
        cq_size: None,
        ..plan.uring.clone()
    };
    let anchor = build_ring(2, &opts, None).map_err(|e| setup_error(e, &plan.uring))?;
    Ok(Some(UringShared { anchor }))
}

/// IOPOLL needs a device with poll queues; without them every request fails
/// with EOPNOTSUPP, so say it before the run.
fn check_poll_queues(plan: &IoPlan) -> Result<()> {
    let path = plan
        .target
        .clone()
        .unwrap_or_else(|| plan.directory.clone());
    if let Some((dev, false)) = crate::target::poll_queues(&path) {
        ringlab_core::usage!(
            "--iopoll{}: device {dev} (behind {}) has no poll queues (/sys/block/{dev}/queue/io_poll is 0), so the kernel answers EOPNOTSUPP; drop --iopoll, or use a device with poll queues (NVMe with nvme.poll_queues=N, virtio-blk with virtio_blk.poll_queues=N, null_blk with poll_queues=N)",
            if plan.uring.hybrid_iopoll { " (and --hybrid-iopoll, which polls too)" } else { "" },
            path.display()
        );
    }
    Ok(())
}

fn register_error(e: io::Error, flag: &str, what: &str) -> anyhow::Error {
    match e.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) => usage_error(format!(
            "--{flag}: {what}: this kernel ({}) refuses it ({e}); it needs Linux {}",
            ringlab_core::uring::ring::kernel_release(),
            knobs::since(flag)
        )),
        Some(libc::ENOMEM) => usage_error(format!(
            "--{flag}: {what}: not enough locked memory ({e}): raise `ulimit -l`"
        )),
        _ => usage_error(format!("--{flag}: {what}: {e}")),
    }
}

/// Turns an `io_uring_setup` failure into a usage error that says why and
/// what to do.
fn setup_error(e: io::Error, o: &UringOptions) -> anyhow::Error {
    usage_error(explain_setup_error(&e, o, "--engine sync"))
}

impl UringEngine {
    pub fn new(setup: &EngineSetup) -> Result<UringEngine> {
        let plan = setup.plan;
        let o = &plan.uring;
        let attach = setup.shared.uring.as_ref().map(|s| s.anchor.as_raw_fd());
        let ring =
            build_ring(ring_entries(plan.iodepth), o, attach).map_err(|e| setup_error(e, o))?;
        let submitter = ring.submitter();
        if o.fixed_files {
            submitter
                .register_files(&[setup.fd])
                .map_err(|e| register_error(e, "fixed-files", "cannot register the file"))?;
        }
        if o.fixed_buffers {
            let iovecs: Vec<libc::iovec> = (0..setup.buffers.count() as u32)
                .map(|s| libc::iovec {
                    iov_base: setup.buffers.slot_ptr(s).cast(),
                    iov_len: setup.buffers.slot_len(),
                })
                .collect();
            // SAFETY: the iovecs cover the job's buffer pool, which outlives
            // the ring (the worker drops the engine first).
            unsafe { submitter.register_buffers(&iovecs) }
                .map_err(|e| register_error(e, "fixed-buffers", "cannot register the buffers"))?;
        }
        if let Some(limits) = o.iowq_max_workers {
            let mut l = limits;
            submitter.register_iowq_max_workers(&mut l).map_err(|e| {
                register_error(e, "iowq-max-workers", "cannot limit the io-wq workers")
            })?;
        }
        let (enter_fd, enter_flags) = if o.register_ring {
            let index = register_ring_fd(ring.as_raw_fd()).map_err(|e| {
                register_error(e, "register-ring", "cannot register the ring's descriptor")
            })?;
            (index, EnterFlags::REGISTERED_RING.bits())
        } else {
            (ring.as_raw_fd(), 0)
        };
        let ring = Arc::new(ring);
        let completer = match o.completion_thread {
            Some(cpu) => Some(Completer::start(ring.clone(), cpu)?),
            None => None,
        };
        Ok(UringEngine {
            submits: [0; 7],
            ring,
            enter_fd,
            enter_flags,
            fd: setup.fd,
            trim: crate::trim::how(setup.plan, setup.fd),
            fixed_file: o.fixed_files,
            fixed_buffers: o.fixed_buffers,
            sqpoll: o.sqpoll,
            taskrun_flag: o.taskrun_flag,
            submit_batch: o.submit_batch,
            complete_batch: o.complete_batch.max(1),
            complete_max: o.reap_cap(plan.iodepth),
            reap: o.reap.unwrap_or(ReapMode::Wait),
            unsubmitted: 0,
            inflight: 0,
            async_every: EveryNth::new(o.force_async),
            completer,
        })
    }

    #[inline(always)]
    fn enter(&self, to_submit: u32, min_complete: u32, flags: u32) -> io::Result<u32> {
        // SAFETY: no argument pointer is passed (size 0); the descriptor or
        // registered index belongs to this engine's ring.
        unsafe {
            ringlab_core::uring::enter(
                self.enter_fd,
                to_submit,
                min_complete,
                flags | self.enter_flags,
                std::ptr::null(),
                0,
            )
        }
    }

    /// Hands what is queued to the kernel and, with `min > 0`, waits in the
    /// same call until `min` completions are there.
    #[inline(always)]
    fn submit(&mut self, min: u32) -> Result<()> {
        let mut flags = 0;
        if min > 0 {
            flags |= EnterFlags::GETEVENTS.bits();
        }
        if self.sqpoll {
            // The poller may have gone to sleep after we published the
            // tail: the fence orders our tail store before reading its flag.
            fence(Ordering::SeqCst);
            // SAFETY: only the job thread touches the submission ring.
            if unsafe { self.ring.submission_shared() }.need_wakeup() {
                flags |= EnterFlags::SQ_WAKEUP.bits();
            } else if min == 0 {
                self.submits[IoDepths::batch(self.unsubmitted)] += 1;
                self.unsubmitted = 0;
                return Ok(());
            }
        }
        loop {
            match self.enter(self.unsubmitted, min, flags) {
                Ok(n) => {
                    let handed = if self.sqpoll { self.unsubmitted } else { n };
                    if handed > 0 {
                        self.submits[IoDepths::batch(handed)] += 1;
                    }
                    self.unsubmitted = if self.sqpoll {
                        0
                    } else {
                        self.unsubmitted.saturating_sub(n)
                    };
                    return Ok(());
                }
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                // The kernel could not take more now (EAGAIN) or the
                // completion ring is full (EBUSY): reap what is there.
                Err(e)
                    if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EBUSY))
                        && self.cq_ready() > 0 =>
                {
                    return Ok(())
                }
                Err(e) => return Err(e).context("io_uring_enter failed"),
            }
        }
    }

    fn cq_ready(&self) -> usize {
        // SAFETY: without a completion thread only the job thread touches
        // the completion ring.
        unsafe { self.ring.completion_shared() }.len()
    }

    /// Moves the completions in the ring to `out`, at most `max`; returns
    /// how many. What is left stays in the ring for the next reap.
    #[inline(always)]
    fn drain_cq(&mut self, out: &mut Vec<Completion>, max: u32) -> u32 {
        // SAFETY: without a completion thread only the job thread touches
        // the completion ring.
        let mut cq = unsafe { self.ring.completion_shared() };
        let n = cq.len().min(max as usize);
        out.reserve(n);
        // Reserve once and push, not extend(take(map)): at low depth a
        // reap moves one entry or none, and extend's adapters cost more
        // than that (bench/io-instructions.sh).
        for cqe in cq.by_ref().take(n) {
            out.push(Completion::new(cqe.user_data() as u32, cqe.result() as i64));
        }
        self.inflight -= n as u32;
        n as u32
    }

    /// Whether the kernel asks to be entered: completion work pending
    /// (TASKRUN_FLAG) or completions held back by an overflow.
    fn kernel_wants_entry(&self) -> bool {
        // SAFETY: only the job thread touches the submission ring.
        let sq = unsafe { self.ring.submission_shared() };
        (self.taskrun_flag && sq.taskrun()) || sq.cq_overflow()
    }

    #[inline]
    fn entry(&self, req: &IoRequest) -> squeue::Entry {
        macro_rules! rw {
            ($file:expr) => {
                match (req.dir, self.fixed_buffers) {
                    (Dir::Read, false) => opcode::Read::new($file, req.buf, req.len)
                        .offset(req.offset)
                        .ioprio(req.ioprio)
                        .build(),
                    (Dir::Write, false) => opcode::Write::new($file, req.buf, req.len)
                        .offset(req.offset)
                        .ioprio(req.ioprio)
                        .build(),
                    (Dir::Read, true) => {
                        opcode::ReadFixed::new($file, req.buf, req.len, req.slot as u16)
                            .offset(req.offset)
                            .ioprio(req.ioprio)
                            .build()
                    }
                    (Dir::Write, true) => {
                        opcode::WriteFixed::new($file, req.buf, req.len, req.slot as u16)
                            .offset(req.offset)
                            .ioprio(req.ioprio)
                            .build()
                    }
                    // Trims never reach the ring (see queue); a NOP if one did.
                    (Dir::Nop | Dir::Trim, _) => opcode::Nop::new().build(),
                }
            };
        }
        if self.fixed_file {
            rw!(types::Fixed(0))
        } else {
            rw!(types::Fd(self.fd))
        }
    }
}

impl Engine for UringEngine {
    #[inline(always)]
    fn queue(&mut self, req: &IoRequest) -> Result<QueueStatus> {
        if req.dir == Dir::Trim {
            // fio 3.33's io_uring engine trims synchronously
            // (do_io_u_trim), as every engine does.
            return Ok(QueueStatus::Completed(crate::trim::trim(
                self.fd, self.trim, req.offset, req.len,
            )));
        }
        let mut sqe = self.entry(req).user_data(req.slot as u64);
        if self.async_every.due() {
            sqe = sqe.flags(squeue::Flags::ASYNC);
        }
        // SAFETY: only the job thread touches the submission ring; the
        // buffer stays valid and untouched by the worker until the
        // completion for this slot is reaped.
        let mut pushed = unsafe { self.ring.submission_shared().push(&sqe) };
        if pushed.is_err() && self.sqpoll {
            // The poller may post a completion before it publishes the new
            // ring head, so the ring can look full with nothing in flight:
            // wait for it to make room (IORING_ENTER_SQ_WAIT), then retry.
            match self.enter(0, 0, EnterFlags::SQ_WAIT.bits()) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => return Err(e).context("io_uring_enter (SQ_WAIT) failed"),
            }
            // SAFETY: as above.
            pushed = unsafe { self.ring.submission_shared().push(&sqe) };
        }
        if pushed.is_err() {
            return Ok(QueueStatus::Busy);
        }
        // Counted once the request is in the ring (a busy ring hands it
        // back, to be queued again with the same flags).
        self.async_every.advance();
        self.unsubmitted += 1;
        self.inflight += 1;
        if self.submit_batch > 0 && self.unsubmitted >= self.submit_batch {
            self.submit(0)?;
        }
        Ok(QueueStatus::Queued)
    }

    #[inline(always)]
    fn commit(&mut self) -> Result<()> {
        // With a completion thread, or SQPOLL, nobody enters the kernel for
        // us later: hand the batch over now. So with --reap peek/spin,
        // whose reap() would submit first thing anyway: submitting here
        // lets the worker's slat stamp (taken after commit) include it.
        // With --reap wait it goes with the io_uring_enter of the next
        // reap().
        if (self.completer.is_some() || self.sqpoll || self.reap != ReapMode::Wait)
            && self.unsubmitted > 0
        {
            self.submit(0)?;
        }
        Ok(())
    }

    fn take_submit_counts(&mut self) -> Option<[u64; 7]> {
        Some(std::mem::take(&mut self.submits))
    }

    #[inline(always)]
    fn reap(&mut self, min: u32, out: &mut Vec<Completion>) -> Result<()> {
        if self.unsubmitted > 0 && (self.completer.is_some() || self.reap != ReapMode::Wait) {
            self.submit(0)?;
        }
        if let Some(c) = &self.completer {
            let n = c.wait(min, out)?;
            self.inflight -= n;
            return Ok(());
        }
        let min = min.max(self.complete_batch).min(self.inflight);
        // --complete-max (at least --complete-batch, so at least min).
        let max = self.complete_max;
        // Nothing reached the kernel yet (everything in flight waits to be
        // submitted): nothing can be in the completion ring.
        let mut got = if self.inflight == self.unsubmitted {
            0
        } else {
            self.drain_cq(out, max)
        };
        match self.reap {
            ReapMode::Wait => {
                if got >= min && self.unsubmitted > 0 {
                    self.submit(0)?;
                }
                while got < min {
                    self.submit(min - got)?;
                    got += self.drain_cq(out, max - got);
                }
            }
            ReapMode::Peek => {
                while got < min {
                    match self.enter(0, 0, EnterFlags::GETEVENTS.bits()) {
                        Ok(_) => {}
                        Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                        Err(e) => return Err(e).context("io_uring_enter (peek) failed"),
                    }
                    got += self.drain_cq(out, max - got);
                }
            }
            ReapMode::Spin => {
                while got < min {
                    if self.kernel_wants_entry() {
                        match self.enter(0, 0, EnterFlags::GETEVENTS.bits()) {
                            Ok(_) => {}
                            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                            Err(e) => return Err(e).context("io_uring_enter failed"),
                        }
                    }
                    std::hint::spin_loop();
                    got += self.drain_cq(out, max - got);
                }
            }
        }
        Ok(())
    }
}

impl Drop for UringEngine {
    fn drop(&mut self) {
        if let Some(c) = self.completer.take() {
            // Tell the completion thread to leave: a NOP it recognises.
            let stop = opcode::Nop::new().build().user_data(STOP_TAG);
            // SAFETY: only the job thread touches the submission ring.
            let pushed = unsafe { self.ring.submission_shared().push(&stop) }.is_ok();
            if pushed {
                self.unsubmitted += 1;
                let _ = self.submit(0);
            }
            c.stop(pushed);
        }
    }
}

/// The thread of `--completion-thread`: waits in io_uring_enter for
/// completions, stamps when it saw each, and hands them to the job thread.
struct Completer {
    shared: Arc<CompleterShared>,
    handle: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct CompleterState {
    ready: Vec<Completion>,
    failed: Option<String>,
    done: bool,
}

#[derive(Default)]
struct CompleterShared {
    state: Mutex<CompleterState>,
    arrived: Condvar,
}

impl Completer {
    fn start(ring: Arc<IoUring>, cpu: u32) -> Result<Completer> {
        let shared = Arc::new(CompleterShared::default());
        let s = shared.clone();
        let handle = std::thread::Builder::new()
            .name("ringlab-reaper".into())
            .spawn(move || {
                let outcome =
                    ringlab_core::cpus::pin_to_cpu(cpu).and_then(|()| reap_loop(&ring, &s));
                let mut st = s.state.lock().unwrap_or_else(|p| p.into_inner());
                if let Err(e) = outcome {
                    st.failed = Some(format!("{e:#}"));
                }
                st.done = true;
                s.arrived.notify_all();
            })
            .context("cannot start the completion thread")?;
        Ok(Completer {
            shared,
            handle: Some(handle),
        })
    }

    /// Waits until `min` completions were handed over, moves them to `out`.
    fn wait(&self, min: u32, out: &mut Vec<Completion>) -> Result<u32> {
        let mut st = self.shared.state.lock().unwrap_or_else(|p| p.into_inner());
        while (st.ready.len() as u32) < min {
            if let Some(why) = &st.failed {
                bail!("completion thread failed: {why}");
            }
            if st.done {
                bail!("completion thread ended with requests in flight");
            }
            st = self
                .shared
                .arrived
                .wait(st)
                .unwrap_or_else(|p| p.into_inner());
        }
        let n = st.ready.len() as u32;
        out.append(&mut st.ready);
        Ok(n)
    }

    fn stop(mut self, signalled: bool) {
        if let Some(h) = self.handle.take() {
            if signalled {
                let _ = h.join();
            }
            // Without the stop NOP the thread cannot be woken; it ends with
            // the process, and the ring stays alive through its Arc.
        }
    }
}

fn reap_loop(ring: &IoUring, s: &CompleterShared) -> Result<()> {
    let mut batch = Vec::new();
    loop {
        // SAFETY: with a completion thread, only this thread touches the
        // completion ring.
        let cq = unsafe { ring.completion_shared() };
        let seen = ringlab_core::clock::mono_ns();
        let mut stop = false;
        for cqe in cq {
            if cqe.user_data() == STOP_TAG {
                stop = true;
                continue;
            }
            batch.push(Completion {
                slot: cqe.user_data() as u32,
                result: cqe.result() as i64,
                seen: Some(seen),
            });
        }
        if !batch.is_empty() {
            let mut st = s.state.lock().unwrap_or_else(|p| p.into_inner());
            st.ready.append(&mut batch);
            s.arrived.notify_one();
        }
        if stop {
            return Ok(());
        }
        // SAFETY: no argument pointer; the ring's own descriptor. Submits
        // nothing (to_submit 0): only the job thread submits.
        match unsafe {
            ringlab_core::uring::enter(
                ring.as_raw_fd(),
                0,
                1,
                EnterFlags::GETEVENTS.bits(),
                std::ptr::null(),
                0,
            )
        } {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) => return Err(e).context("io_uring_enter (completion thread) failed"),
        }
    }
}

/// The first request and then every Nth (N = 0: none), as a countdown:
/// the remainder of a running count cost a 64-bit division per request.
#[derive(Clone, Copy)]
struct EveryNth {
    n: u32,
    /// Requests until the next one due, this one included; 0 (N = 0):
    /// never.
    left: u32,
}

impl EveryNth {
    fn new(n: u32) -> EveryNth {
        EveryNth {
            n,
            left: u32::from(n > 0),
        }
    }

    /// Whether the request about to be queued is one of them.
    #[inline(always)]
    fn due(&self) -> bool {
        self.left == 1
    }

    /// The request was queued (no test of N on the hot path: with N = 0
    /// the countdown stays at 0, with N = 1 at 1).
    #[inline(always)]
    fn advance(&mut self) {
        self.left = if self.left == 1 {
            self.n
        } else {
            self.left.saturating_sub(1)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nth_marks_the_first_request_and_then_every_nth() {
        let marked = |n: u32| -> Vec<usize> {
            let mut e = EveryNth::new(n);
            (0..9)
                .filter(|_| {
                    let due = e.due();
                    e.advance();
                    due
                })
                .collect()
        };
        assert_eq!(marked(0), Vec::<usize>::new());
        assert_eq!(marked(1), (0..9).collect::<Vec<_>>());
        assert_eq!(marked(3), [0, 3, 6]);
        assert_eq!(marked(4), [0, 4, 8]);
    }

    #[test]
    fn ring_entries_round_up() {
        assert_eq!(ring_entries(1), 1);
        assert_eq!(ring_entries(3), 4);
        assert_eq!(ring_entries(32), 32);
        assert_eq!(ring_entries(33), 64);
    }
}
