//! One run's kernel evidence: opened before the job threads exist, enabled
//! when the measured run starts, read when it ends.
//!
//! The tracepoints are counted by BPF programs for the whole run
//! ([`crate::bpf`]): per-task perf counters, used before, made every
//! context switch of a counted thread switch perf contexts as well and took
//! 34-45% of a CPU-bound run. IPIs come from `/proc/interrupts`, context
//! switches and CPU time of the kernel helper threads from `/proc`, read
//! by the runner's thread (see `FULL_LOOK_EVERY` for what that costs).

use crate::bpf::{report_skips, skips_between, NamedCounters, SkipCounts};
use crate::device::{irq_deltas, read_interrupts, IrqLine};
use crate::windows::{Totals, Windows};
use ringlab_stats::{HelperThread, KstatReport, UnavailableCounter};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::fs;

/// How much evidence a run collects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// [`DEFAULT_TRACEPOINTS`]: what costs under 2% of a CPU-bound run.
    #[default]
    Default,
    /// [`DEFAULT_TRACEPOINTS`] and [`FULL_ONLY_TRACEPOINTS`].
    Full,
    /// As `Full`, and each request timed through its stages from the
    /// kernel's timestamps (a copy of four events per request: costs about
    /// 30% of a CPU-bound run).
    Stages,
}

impl std::str::FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Level, String> {
        match s {
            "default" => Ok(Level::Default),
            "full" => Ok(Level::Full),
            "stages" => Ok(Level::Stages),
            other => Err(format!(
                "--evidence {other:?}: say default (cheap counters, the default), full (every io_uring tracepoint) or stages (full, and each request's time in each stage)"
            )),
        }
    }
}

impl Level {
    /// The tracepoints counted at this level.
    pub fn tracepoints(self) -> Vec<&'static str> {
        let mut all = DEFAULT_TRACEPOINTS.to_vec();
        if self != Level::Default {
            all.extend(FULL_ONLY_TRACEPOINTS);
        }
        all
    }
}

/// Counted by default: system calls (and `io_uring_enter` among them),
/// io-wq offloads (the evidence of `--force-async`, and of a device that
/// cannot complete a request without blocking) and poll arming (multishot
/// receive's proof: rare when it works), these three in windows of 100 ms
/// ([`WINDOWED_BY_DEFAULT`], [`crate::windows`]: one a second for the first
/// 3 s, then one every 4 s); the failures
/// and overflows for the whole run (rare, so free); and whatever proves a
/// knob the user asked for, for the whole run (see [`Collector::open`]). Each hit of a counted tracepoint costs about 40 ns
/// of BPF program and its call: at depth 1 on zram (about 7 us a request,
/// two context switches, six io_uring tracepoint hits) counting every
/// tracepoint took about 30% of the IOPS with the stage tracing, and three
/// per-request tracepoints (syscalls, offloads, file lookups) about 2.3% of
/// the CPU in a profile; two stay. Context switches come from /proc.
pub const DEFAULT_TRACEPOINTS: &[&str] = &[
    "raw_syscalls:sys_enter",
    "io_uring:io_uring_queue_async_work",
    "io_uring:io_uring_poll_arm",
    "io_uring:io_uring_req_failed",
    "io_uring:io_uring_cqe_overflow",
];

/// System calls, counted in windows by default.
const SYS_ENTER: &str = "raw_syscalls:sys_enter";

/// The tracepoints of [`DEFAULT_TRACEPOINTS`] that may fire on every
/// request: by default counted in windows ([`crate::windows`]) unless they
/// prove a knob the user asked for.
pub const WINDOWED_BY_DEFAULT: &[&str] = &[
    SYS_ENTER,
    "io_uring:io_uring_queue_async_work",
    "io_uring:io_uring_poll_arm",
];

/// Whether `tracepoint`'s count proves one of `proofs` (per-op figures).
fn proves(tracepoint: &str, proofs: &[&str]) -> bool {
    proofs.contains(&per_op_name(tracepoint).as_str())
        || (tracepoint == SYS_ENTER
            && proofs.contains(&per_op_name(crate::bpf::IO_URING_ENTER).as_str()))
}

/// Why a tracepoint of the full set has no count in a default run.
pub const NOT_BY_DEFAULT: &str = "not counted by default (a per-request tracepoint: counting every one costs a few percent of a CPU-bound run); --evidence full counts it, as does asking for the knob it proves";

/// Counted with `--evidence full` on top of [`DEFAULT_TRACEPOINTS`]: the
/// per-request io_uring tracepoints and the context switches.
pub const FULL_ONLY_TRACEPOINTS: &[&str] = &[
    "sched:sched_switch",
    "io_uring:io_uring_file_get",
    "io_uring:io_uring_submit_req",
    "io_uring:io_uring_complete",
    "io_uring:io_uring_task_add",
    "io_uring:io_uring_task_work_run",
    "io_uring:io_uring_local_work_run",
    "io_uring:io_uring_cqring_wait",
];

pub use crate::windows::OpsNow;

/// The per-op name of a counter: `raw_syscalls:sys_enter` →
/// `syscalls_per_op`.
pub fn per_op_name(counter: &str) -> String {
    match counter {
        "raw_syscalls:sys_enter" => "syscalls_per_op".into(),
        "syscalls:sys_enter_io_uring_enter" => "io_uring_enter_per_op".into(),
        "sched:sched_switch" => "context_switches_per_op".into(),
        "irq_vectors:reschedule_entry" => "reschedule_ipis_per_op".into(),
        "irq_vectors:call_function_entry" => "function_call_ipis_per_op".into(),
        other => format!("{}_per_op", other.split(':').nth(1).unwrap_or(other)),
    }
}

#[derive(Clone, Copy, Default)]
struct ThreadSample {
    cpu_ns: Option<u64>,
    voluntary: Option<u64>,
    involuntary: Option<u64>,
}

struct HelperState {
    name: String,
    baseline: ThreadSample,
    last: ThreadSample,
    /// Its CPU-time clock ([`thread_cpu_clock`]): the 50 ms ticks only
    /// read this clock.
    clock: libc::clockid_t,
}

/// A full look at the threads (new ones, names, context switches) every
/// this many 50 ms ticks; the ticks between re-read each known helper's
/// CPU time only. At depth 1 on zram the full look on every tick took
/// 0.46% of the job's CPU (the main thread shares it under `taskset`), and
/// the evidence as a whole about 1.1% of the IOPS.
///
/// What a slower full look can miss: io-wq workers leave after 5 s idle
/// (`WORKER_IDLE_TIMEOUT`, io_uring/io-wq.c) or with their ring, so a
/// worker found by one look lives to be read again unless its job ends
/// and drops the ring first; then its last 50 ms of CPU time and its last
/// second of context switches are not counted, and a worker that started
/// within that second is not seen at all.
const FULL_LOOK_EVERY: u64 = 20;

pub struct Collector {
    level: Level,
    /// The BPF counters of this process.
    counters: NamedCounters,
    /// `--evidence default`: the tracepoints counted in windows
    /// ([`WINDOWED_BY_DEFAULT`] less the proofs).
    windowed_points: Vec<&'static str>,
    /// Their windows once the run started; `Err`: why they could not be.
    windows: Option<Result<Windows, String>>,
    /// What the windows counted, once the run ended.
    windowed: Option<Result<Totals, String>>,
    /// Counts at the measured run's start and end, by tracepoint.
    at_start: BTreeMap<&'static str, u64>,
    at_end: BTreeMap<&'static str, u64>,
    /// The counters' skipped runs at the start, and over the run once it
    /// ended ([`crate::bpf::TgidCounters::skipped`]).
    skips_at_start: SkipCounts,
    skips: Option<SkipCounts>,
    unavailable: Vec<UnavailableCounter>,
    device: Option<String>,
    irq_before: Option<Vec<IrqLine>>,
    irq_after: Option<Vec<IrqLine>>,
    helpers: BTreeMap<u32, HelperState>,
    /// Helper threads present when the run started.
    preexisting: Vec<u32>,
    /// The last full look found a kernel I/O thread not yet named (see
    /// [`Collector::sample_threads`]): the next tick looks again.
    unnamed_io_thread: bool,
    enabled: bool,
}

impl Collector {
    /// Attaches the counters of this process (they count from now; the
    /// measured run is the difference between [`Collector::enable`] and
    /// [`Collector::disable`]). `device` is the target's disk (`vda`).
    /// `proofs`: per-op figures (`io_uring_file_get_per_op`) that prove a
    /// knob the user asked for; their tracepoints are counted at every
    /// level (a knob's proof costs least where the knob works: fixed files
    /// make no file lookups).
    pub fn open(device: Option<String>, level: Level, proofs: &[&str]) -> Collector {
        let mut points = level.tracepoints();
        let mut windowed_points = Vec::new();
        if level == Level::Default {
            // Counted in windows instead (crate::windows), unless a knob's
            // proof: that is counted for the whole run.
            windowed_points = WINDOWED_BY_DEFAULT
                .iter()
                .copied()
                .filter(|p| !proves(p, proofs))
                .collect();
            points.retain(|p| !windowed_points.contains(p));
        }
        for &name in FULL_ONLY_TRACEPOINTS {
            if !points.contains(&name) && proves(name, proofs) {
                points.push(name);
            }
        }
        let counters = NamedCounters::attach(std::process::id(), &points);
        let mut unavailable: Vec<UnavailableCounter> = counters
            .unavailable
            .iter()
            .map(|(counter, reason)| UnavailableCounter {
                counter: counter.clone(),
                reason: reason.clone(),
            })
            .collect();
        if level == Level::Default {
            // sched_switch is left out too, but its count comes from /proc.
            for &name in FULL_ONLY_TRACEPOINTS {
                if points.contains(&name) || name == "sched:sched_switch" {
                    continue;
                }
                unavailable.push(UnavailableCounter {
                    counter: name.to_string(),
                    reason: NOT_BY_DEFAULT.into(),
                });
            }
        }
        Collector {
            windowed_points,
            windows: None,
            windowed: None,
            level,
            counters,
            at_start: BTreeMap::new(),
            at_end: BTreeMap::new(),
            skips_at_start: Ok(BTreeMap::new()),
            skips: None,
            unavailable,
            device,
            irq_before: None,
            irq_after: None,
            helpers: BTreeMap::new(),
            preexisting: Vec::new(),
            unnamed_io_thread: false,
            enabled: false,
        }
    }

    /// The measured run starts now; `ops_now` gives the run's operations
    /// so far (the windows divide by the operations inside them).
    pub fn enable(&mut self, ops_now: OpsNow) {
        if !self.windowed_points.is_empty() {
            self.windows = Some(Windows::start(
                std::process::id(),
                &self.windowed_points,
                ops_now,
            ));
        }
        self.irq_before = read_interrupts().ok();
        // Helpers are the threads alive from now on: one sampled before
        // (a probe ring's poller, gone since) was never the run's.
        self.helpers.clear();
        self.sample_threads();
        for h in self.helpers.values_mut() {
            h.baseline = h.last;
        }
        self.preexisting = self.helpers.keys().copied().collect();
        self.at_start = self.counters.snapshot();
        self.skips_at_start = self.counters.skipped();
        self.enabled = true;
    }

    /// The runner's periodic call, every 50 ms of the measured run: samples
    /// the helper threads while they are alive (they leave with their
    /// rings).
    pub fn tick(&mut self, tick: u64) {
        if tick.is_multiple_of(FULL_LOOK_EVERY) || self.unnamed_io_thread {
            self.sample_threads();
        } else {
            self.sample_helper_cpu();
        }
    }

    /// Re-reads each known helper's CPU time from its clock.
    fn sample_helper_cpu(&mut self) {
        for h in self.helpers.values_mut() {
            if let Some(ns) = ringlab_core::clock::clock_ns(h.clock) {
                h.last.cpu_ns = Some(ns);
            }
        }
    }

    /// The measured run ends now: nothing counts past this.
    pub fn disable(&mut self) {
        if !self.enabled {
            return;
        }
        self.at_end = self.counters.snapshot();
        self.skips = Some(skips_between(&self.skips_at_start, self.counters.skipped()));
        self.windowed = self.windows.take().map(|w| w.and_then(Windows::finish));
        self.sample_threads();
        self.irq_after = read_interrupts().ok();
        self.enabled = false;
    }

    /// Records the CPU time and context switches of the kernel helper
    /// threads alive now, and finds new ones; call it while the run goes
    /// on, since they exit with their rings.
    pub fn sample_threads(&mut self) {
        let Ok(dir) = fs::read_dir("/proc/self/task") else {
            return;
        };
        let mut unnamed = false;
        for entry in dir.flatten() {
            let Some(tid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            let base = entry.path();
            let h = match self.helpers.entry(tid) {
                Entry::Occupied(known) => known.into_mut(),
                Entry::Vacant(slot) => {
                    // A new io-wq worker carries its creator's name until
                    // it names itself: looked at again next time until then.
                    let Ok(comm) = fs::read_to_string(base.join("comm")) else {
                        continue;
                    };
                    let comm = comm.trim();
                    if !comm.starts_with("iou-") {
                        // One not named yet is looked at again on the next
                        // tick, not a second later: a short run's SQPOLL
                        // thread, created as the rings were set up on a
                        // busy machine, was otherwise never seen (its
                        // ring gone before the last look).
                        unnamed |= is_io_thread(&base);
                        continue;
                    }
                    slot.insert(HelperState {
                        name: comm.to_string(),
                        baseline: ThreadSample::default(),
                        last: ThreadSample::default(),
                        clock: thread_cpu_clock(tid),
                    })
                }
            };
            let (voluntary, involuntary) = thread_switches(&base);
            let cpu_ns = ringlab_core::clock::clock_ns(h.clock);
            // A thread gone since the directory was read keeps its last
            // figures.
            if cpu_ns.is_some() || voluntary.is_some() {
                h.last = ThreadSample {
                    cpu_ns,
                    voluntary,
                    involuntary,
                };
            }
        }
        self.unnamed_io_thread = unnamed;
    }

    /// The report: counters, per-op figures (over `ops` operations, with
    /// `app_cpu_ns` of application-thread CPU and `app_ctx_switches`
    /// context switches of those threads, from getrusage), helpers and
    /// interrupts.
    pub fn finish(mut self, ops: u64, app_cpu_ns: u64, app_ctx_switches: u64) -> KstatReport {
        self.disable();
        let mut counters = BTreeMap::new();
        let mut unavailable = std::mem::take(&mut self.unavailable);
        for (&name, &end) in &self.at_end {
            match self.at_start.get(name) {
                Some(&start) => {
                    counters.insert(name.to_string(), end.saturating_sub(start));
                }
                None => unavailable.push(UnavailableCounter {
                    counter: name.to_string(),
                    reason: "could not be read at the start of the run".into(),
                }),
            }
        }
        self.counters.detach_in_background();
        let mut skipped = BTreeMap::new();
        if let Some(s) = self.skips.take() {
            report_skips(s, &mut skipped, &mut unavailable);
        }
        let mut sampled = BTreeMap::new();
        let mut sampled_ops = 0;
        let mut sampled_windows = None;
        // The windowed tracepoints, and io_uring_enter with sys_enter.
        let windowed_names: Vec<&'static str> = self
            .windowed_points
            .iter()
            .flat_map(|&p| {
                std::iter::once(p).chain((p == SYS_ENTER).then_some(crate::bpf::IO_URING_ENTER))
            })
            .collect();
        let window_note = format!(
            "counted in windows {} (--evidence full counts the whole run)",
            crate::windows::LAYOUT
        );
        match self.windowed.take() {
            None => {}
            Some(Err(reason)) => {
                for counter in &windowed_names {
                    unavailable.push(UnavailableCounter {
                        counter: counter.to_string(),
                        reason: reason.clone(),
                    });
                }
            }
            Some(Ok(t)) if t.ops == 0 => {
                for counter in &windowed_names {
                    unavailable.push(UnavailableCounter {
                        counter: counter.to_string(),
                        reason: format!("{window_note}, and no operation completed inside one"),
                    });
                }
            }
            Some(Ok(t)) => {
                for (name, why) in &t.failed {
                    unavailable.push(UnavailableCounter {
                        counter: name.to_string(),
                        reason: why.clone(),
                    });
                }
                for (name, v) in t.counts {
                    sampled.insert(name.to_string(), v);
                }
                report_skips(t.skipped, &mut skipped, &mut unavailable);
                sampled_ops = t.ops;
                sampled_windows = Some(t.windows);
            }
        }
        let helper_threads: Vec<HelperThread> = self
            .helpers
            .iter()
            .map(|(&tid, h)| HelperThread {
                tid,
                name: h.name.clone(),
                cpu_ns: sub(h.last.cpu_ns, h.baseline.cpu_ns),
                ctx_voluntary: sub(h.last.voluntary, h.baseline.voluntary),
                ctx_involuntary: sub(h.last.involuntary, h.baseline.involuntary),
            })
            .collect();
        let created = self
            .helpers
            .keys()
            .filter(|t| !self.preexisting.contains(t))
            .count() as u64;
        let interrupts = match (&self.irq_before, &self.irq_after) {
            (Some(a), Some(b)) => Some(irq_deltas(a, b, self.device.as_deref())),
            _ => {
                unavailable.push(UnavailableCounter {
                    counter: "/proc/interrupts".into(),
                    reason: "could not read /proc/interrupts".into(),
                });
                None
            }
        };
        let mut per_op = BTreeMap::new();
        if ops > 0 {
            let per = |v: u64| v as f64 / ops as f64;
            for (name, &v) in &counters {
                per_op.insert(per_op_name(name), per(v));
            }
            for (name, &v) in &sampled {
                per_op.insert(per_op_name(name), v as f64 / sampled_ops as f64);
            }
            if let Some(i) = &interrupts {
                let res: u64 = i.rescheduling_per_cpu.iter().sum();
                let cal: u64 = i.function_call_per_cpu.iter().sum();
                if !i.rescheduling_per_cpu.is_empty() {
                    per_op.insert("reschedule_ipis_per_op".into(), per(res));
                }
                if !i.function_call_per_cpu.is_empty() {
                    per_op.insert("function_call_ipis_per_op".into(), per(cal));
                }
                if !i.rescheduling_per_cpu.is_empty() && !i.function_call_per_cpu.is_empty() {
                    per_op.insert("ipis_per_op".into(), per(res + cal));
                }
                let dev: u64 = i.device.iter().flat_map(|d| d.per_cpu.iter()).sum();
                if !i.device.is_empty() {
                    per_op.insert("device_interrupts_per_op".into(), per(dev));
                }
            }
            if self.level == Level::Default {
                // sched_switch would cost two hits a request at depth 1;
                // the same count is in getrusage and /proc (the helpers'
                // switches up to their last 50 ms sample).
                let helpers: Option<u64> = helper_threads
                    .iter()
                    .map(|h| Some(h.ctx_voluntary? + h.ctx_involuntary?))
                    .sum();
                if let Some(h) = helpers {
                    per_op.insert("context_switches_per_op".into(), per(app_ctx_switches + h));
                }
            }
            per_op.insert("cpu_us_per_op".into(), app_cpu_ns as f64 / 1e3 / ops as f64);
            let helper_cpu: Option<u64> = helper_threads.iter().map(|h| h.cpu_ns).sum();
            if let Some(h) = helper_cpu {
                per_op.insert(
                    "cpu_us_with_helpers_per_op".into(),
                    (app_cpu_ns + h) as f64 / 1e3 / ops as f64,
                );
            }
        }
        KstatReport {
            counters,
            sampled_counters: sampled,
            sampled_ops,
            sampled_windows,
            sampler_syscalls: None,
            counter_runs_skipped: skipped,
            unavailable,
            per_op,
            interrupts,
            helper_threads,
            helper_threads_created: created,
            evidence: Vec::new(),
            stages: None,
        }
    }
}

fn sub(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(a?.saturating_sub(b.unwrap_or(0)))
}

/// A thread's voluntary and involuntary context switches, from one read
/// of its `status` (`task`: a `/proc/PID/task/TID` directory).
pub fn thread_switches(task: &std::path::Path) -> (Option<u64>, Option<u64>) {
    let Ok(text) = fs::read_to_string(task.join("status")) else {
        return (None, None);
    };
    let field = |key: &str| {
        text.lines().find_map(|l| {
            l.strip_prefix(key)?
                .trim_start_matches(':')
                .trim()
                .parse()
                .ok()
        })
    };
    (
        field("voluntary_ctxt_switches"),
        field("nonvoluntary_ctxt_switches"),
    )
}

/// A thread's CPU time in ns, from its `schedstat` (`task`: a
/// `/proc/PID/task/TID` directory).
pub fn thread_cpu_ns(task: &std::path::Path) -> Option<u64> {
    schedstat_ns(&fs::read_to_string(task.join("schedstat")).ok()?)
}

/// The CPU-time clock of thread `tid` of this process: Linux's
/// per-thread scheduler clock (`MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`,
/// include/linux/posix-timers_types.h), which `clock_gettime` reads for
/// any thread of the caller's process, io-wq workers and SQPOLL threads
/// included. It gives the time `schedstat` gives, plus the running
/// slice not yet accounted, and costs a third of a `pread` of `schedstat`
/// (133 against 577 ns, 2026-12-07). Reading it fails once the thread
/// has exited (a TID is not reused before the kernel's PIDs wrap around).
fn thread_cpu_clock(tid: u32) -> libc::clockid_t {
    const CPUCLOCK_SCHED: libc::clockid_t = 2;
    const CPUCLOCK_PERTHREAD: libc::clockid_t = 4;
    (!(tid as libc::clockid_t) << 3) | CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD
}

/// Whether thread `task` (a `/proc/PID/task/TID` directory) is a kernel
/// I/O thread, an io-wq worker or SQPOLL thread: `PF_IO_WORKER` in the
/// flags of its `stat`, set from its creation, before it names itself
/// `iou-wrk-*` or `iou-sqp-*`.
fn is_io_thread(task: &std::path::Path) -> bool {
    const PF_IO_WORKER: u64 = 0x10;
    fs::read_to_string(task.join("stat"))
        .ok()
        .and_then(|s| stat_flags(&s))
        .is_some_and(|f| f & PF_IO_WORKER != 0)
}

/// The flags (the 9th field) of a `/proc/.../stat` line; the name in
/// parentheses (the 2nd) may hold spaces and parentheses itself.
fn stat_flags(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(6)?.parse().ok()
}

/// The first figure of a `schedstat` line: time spent on the CPU, ns.
fn schedstat_ns(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ticks read a helper's CPU time from its thread's clock: it is
    /// that thread's (not the reader's), agrees with its `schedstat`, and
    /// is unreadable once the thread is gone.
    #[test]
    fn a_thread_cpu_clock_reads_that_threads_cpu_time() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let spinner = std::thread::spawn(move || {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
            let own = thread_cpu_clock(tid);
            let mut x = 0u64;
            while ringlab_core::clock::clock_ns(own).unwrap() < 30_000_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            tx.send(tid).unwrap();
            done_rx.recv().unwrap();
        });
        let tid = rx.recv().unwrap();
        let clock = thread_cpu_clock(tid);
        let ns = ringlab_core::clock::clock_ns(clock).unwrap();
        let schedstat =
            thread_cpu_ns(std::path::Path::new(&format!("/proc/self/task/{tid}"))).unwrap();
        // The spinner ran 30 ms of CPU, this thread hardly any; it sleeps
        // now, so both figures are the same, accounted time.
        assert!(ns >= 30_000_000, "{ns} ns");
        assert!(
            ns.abs_diff(schedstat) < 1_000_000,
            "clock {ns}, schedstat {schedstat}"
        );
        done_tx.send(()).unwrap();
        spinner.join().unwrap();
        assert_eq!(
            ringlab_core::clock::clock_ns(clock),
            None,
            "read a gone thread's clock"
        );
    }

    #[test]
    fn stat_flags_are_the_ninth_field_whatever_the_name() {
        let line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194368 12 0 0 0 5 3 0 0 20 0 1 0";
        assert_eq!(stat_flags(line), Some(4194368));
        assert_eq!(stat_flags("4242 (x) S 1"), None);
        // This thread is not an I/O thread.
        assert!(!is_io_thread(std::path::Path::new("/proc/thread-self")));
    }

    /// A ring with SQPOLL has its poller thread from its setup on: that
    /// thread is told apart by its flags, named yet or not.
    #[test]
    fn a_sqpoll_ring_poller_is_an_io_thread() {
        // io_uring_params (120 bytes), flags at byte 8: IORING_SETUP_SQPOLL.
        let mut params = [0u32; 30];
        params[2] = 1 << 1;
        // SAFETY: io_uring_setup reads and writes the 120-byte params.
        let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, 4, params.as_mut_ptr()) };
        assert!(
            fd >= 0,
            "io_uring_setup with SQPOLL: {}",
            std::io::Error::last_os_error()
        );
        let io_threads = fs::read_dir("/proc/self/task")
            .unwrap()
            .flatten()
            .filter(|e| is_io_thread(&e.path()))
            .count();
        // SAFETY: the ring's descriptor, closed once.
        unsafe { libc::close(fd as i32) };
        // At least: another test of this binary may have a ring's workers.
        assert!(io_threads >= 1, "no poller among this process's threads");
    }

    #[test]
    fn per_op_names_follow_the_counters() {
        assert_eq!(per_op_name("raw_syscalls:sys_enter"), "syscalls_per_op");
        assert_eq!(
            per_op_name("io_uring:io_uring_file_get"),
            "io_uring_file_get_per_op"
        );
        assert_eq!(
            per_op_name("syscalls:sys_enter_io_uring_enter"),
            "io_uring_enter_per_op"
        );
    }

    #[test]
    fn interrupt_deltas_per_cpu() {
        use crate::device::per_cpu_delta;
        let a = crate::device::parse_interrupts(
            "  CPU0 CPU1\nRES: 1 2 Resched\n 36: 5 5 virtio1-req.0\n",
        );
        let b = crate::device::parse_interrupts(
            "  CPU0 CPU1\nRES: 4 2 Resched\n 36: 5 9 virtio1-req.0\n",
        );
        assert_eq!(per_cpu_delta(&a, &b, "RES"), vec![3, 0]);
        assert_eq!(per_cpu_delta(&a, &b, "36"), vec![0, 4]);
        assert!(per_cpu_delta(&a, &b, "CAL").is_empty());
    }

    #[test]
    fn counts_this_process_when_permitted() {
        let mut c = Collector::open(None, Level::Default, &[]);
        c.enable(std::sync::Arc::new(|| 100));
        for _ in 0..100 {
            // A cheap system call.
            std::hint::black_box(rustix::process::getppid());
        }
        let r = c.finish(100, 1000, 0);
        match r.counters.get("raw_syscalls:sys_enter") {
            Some(&n) => assert!(n >= 100, "counted {n} system calls, made 100"),
            None => {
                let why = r
                    .unavailable
                    .iter()
                    .find(|u| u.counter == "raw_syscalls:sys_enter")
                    .expect("a counter is either measured or listed as unavailable");
                assert!(!why.reason.is_empty());
            }
        }
        assert!(r.per_op.contains_key("cpu_us_per_op"));
    }
}
