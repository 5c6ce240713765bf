//! One run's kernel evidence: opened before the job threads exist (so they
//! and the kernel threads they cause inherit the counters), enabled when
//! the measured run starts, read when it ends.

use crate::device::{device_irqs, read_interrupts, IrqLine};
use crate::perf::{event_id, TracepointCounter};
use crate::windows::{OpsNow, Sampler};
use ringlab_stats::{
    DeviceIrqDelta, HelperThread, InterruptDeltas, KstatReport, UnavailableCounter,
};
use std::collections::BTreeMap;
use std::fs;
use std::time::Duration;

/// Tracepoints counted for the process (and its threads).
pub const PROCESS_TRACEPOINTS: &[&str] = &[
    "raw_syscalls:sys_enter",
    "syscalls:sys_enter_io_uring_enter",
    "sched:sched_switch",
    "io_uring:io_uring_submit_req",
    "io_uring:io_uring_complete",
    "io_uring:io_uring_task_add",
    "io_uring:io_uring_task_work_run",
    "io_uring:io_uring_local_work_run",
    "io_uring:io_uring_queue_async_work",
    "io_uring:io_uring_file_get",
    "io_uring:io_uring_poll_arm",
    "io_uring:io_uring_cqring_wait",
    "io_uring:io_uring_req_failed",
    "io_uring:io_uring_cqe_overflow",
];

/// Tracepoints counted only in sampling windows: every io_uring one. A
/// tracepoint with a perf event attached costs at every hit even while the
/// event is disabled (on the development VM, submit_req and complete open
/// but disabled cut NOP requests from 10M to 7M per second), and counting
/// costs more (about 2% of the IOPS per per-request tracepoint at 130k
/// IOPS). So these are opened only for a window (every
/// [`WINDOW_PERIOD_TICKS`] ticks, one second: 50 ms or 20,000 operations),
/// on every thread of the process, and closed after it; their per-op figures divide by the
/// operations completed inside the windows ([`Collector::tick`],
/// [`crate::windows`]).
pub const WINDOWED_TRACEPOINTS: &[&str] = &[
    "io_uring:io_uring_submit_req",
    "io_uring:io_uring_complete",
    "io_uring:io_uring_task_add",
    "io_uring:io_uring_task_work_run",
    "io_uring:io_uring_local_work_run",
    "io_uring:io_uring_queue_async_work",
    "io_uring:io_uring_file_get",
    "io_uring:io_uring_poll_arm",
    "io_uring:io_uring_cqring_wait",
    "io_uring:io_uring_req_failed",
    "io_uring:io_uring_cqe_overflow",
];

/// A sampling window opens every this many ticks ([`Collector::tick`],
/// called every 50 ms): the first covers the run's first 50 ms, so every
/// run of 50 ms or longer has one.
pub const WINDOW_PERIOD_TICKS: u64 = 20;

/// Tracepoints counted on every CPU (IPIs land on the CPU they interrupt,
/// whoever sent them).
pub const SYSTEM_TRACEPOINTS: &[&str] = &[
    "irq_vectors:reschedule_entry",
    "irq_vectors:call_function_entry",
];

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
}

pub struct Collector {
    /// Counted for the whole measured run.
    counters: Vec<TracepointCounter>,
    /// The windowed tracepoints this machine has, counted by `sampler`.
    windowed: Vec<&'static str>,
    /// Runs the sampling windows (`Err`: why it could not be started).
    sampler: Option<Result<Sampler, String>>,
    /// The run's operation count, for the windows.
    ops_now: Option<OpsNow>,
    unavailable: Vec<UnavailableCounter>,
    device: Option<String>,
    irq_before: Option<Vec<IrqLine>>,
    irq_after: Option<Vec<IrqLine>>,
    helpers: BTreeMap<u32, HelperState>,
    /// Helper threads present when the run started.
    preexisting: Vec<u32>,
    enabled: bool,
}

impl Collector {
    /// Opens every whole-run counter (disabled) and checks that each
    /// windowed tracepoint exists (attaching one only to check would cost a
    /// grace period to detach; a window that cannot attach it says why).
    /// Call before the threads to be counted are created. `device` is the
    /// target's disk (`vda`).
    pub fn open(device: Option<String>) -> Collector {
        let mut windowed = Vec::new();
        let mut unavailable = Vec::new();
        for &name in WINDOWED_TRACEPOINTS {
            match event_id(name) {
                Ok(_) => windowed.push(name),
                Err(reason) => unavailable.push(UnavailableCounter {
                    counter: name.to_string(),
                    reason,
                }),
            }
        }
        // Started before the whole-run counters exist, so that they are
        // not inherited by the sampler's thread.
        let sampler = (!windowed.is_empty()).then(|| {
            Sampler::start(windowed.clone())
                .map_err(|e| format!("could not start the sampling thread: {e}"))
        });
        let mut counters = Vec::new();
        for (names, system_wide) in [(PROCESS_TRACEPOINTS, false), (SYSTEM_TRACEPOINTS, true)] {
            for &name in names {
                if WINDOWED_TRACEPOINTS.contains(&name) {
                    continue;
                }
                match TracepointCounter::open(name, system_wide) {
                    Ok(c) => counters.push(c),
                    Err(reason) => unavailable.push(UnavailableCounter {
                        counter: name.to_string(),
                        reason,
                    }),
                }
            }
        }
        Collector {
            counters,
            windowed,
            sampler,
            ops_now: None,
            unavailable,
            device,
            irq_before: None,
            irq_after: None,
            helpers: BTreeMap::new(),
            preexisting: Vec::new(),
            enabled: false,
        }
    }

    /// The measured run starts now; `ops_now` gives the operations it has
    /// completed so far (read by the sampling windows).
    pub fn enable(&mut self, ops_now: OpsNow) {
        if let Some(Ok(s)) = &self.sampler {
            s.window_from_now(&ops_now, Duration::from_secs(2));
        }
        self.ops_now = Some(ops_now);
        self.irq_before = read_interrupts().ok();
        // Helpers are the threads alive from now on: one sampled before
        // (a probe ring's poller, gone since) was never the run's.
        self.helpers.clear();
        self.sample_threads();
        for h in self.helpers.values_mut() {
            h.baseline = h.last;
        }
        self.preexisting = self.helpers.keys().copied().collect();
        for c in &self.counters {
            c.enable();
        }
        self.enabled = true;
    }

    /// The runner's periodic call, every 50 ms of the measured run (tick 0
    /// at its start): samples the helper threads while they are alive (they
    /// leave with their rings) and asks for a sampling window every
    /// [`WINDOW_PERIOD_TICKS`] ticks (the first, at the start, was opened by
    /// [`Collector::enable`]). Never blocks on the windows.
    pub fn tick(&mut self, tick: u64) {
        self.sample_threads();
        if !self.enabled || tick == 0 {
            return;
        }
        if let (Some(Ok(s)), Some(ops)) = (&self.sampler, &self.ops_now) {
            if tick.is_multiple_of(WINDOW_PERIOD_TICKS) {
                s.request_window(ops);
            }
        }
    }

    /// The measured run ends now: no window counts past this. Returns at
    /// once; [`Collector::finish`] waits for the counters to be detached.
    pub fn disable(&mut self) {
        if !self.enabled {
            return;
        }
        if let Some(Ok(s)) = &self.sampler {
            s.stop();
        }
        for c in &self.counters {
            c.disable();
        }
        self.sample_threads();
        self.irq_after = read_interrupts().ok();
        self.enabled = false;
    }

    /// Records the CPU time of kernel helper threads alive now; call it
    /// while the run goes on, since they exit with their rings.
    pub fn sample_threads(&mut self) {
        let Ok(dir) = fs::read_dir("/proc/self/task") else {
            return;
        };
        for entry in dir.flatten() {
            let Some(tid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            let base = entry.path();
            let Ok(comm) = fs::read_to_string(base.join("comm")) else {
                continue;
            };
            let comm = comm.trim();
            if !comm.starts_with("iou-") {
                continue;
            }
            let sample = ThreadSample {
                cpu_ns: fs::read_to_string(base.join("schedstat"))
                    .ok()
                    .and_then(|s| s.split_whitespace().next()?.parse().ok()),
                voluntary: status_field(&base, "voluntary_ctxt_switches"),
                involuntary: status_field(&base, "nonvoluntary_ctxt_switches"),
            };
            let h = self.helpers.entry(tid).or_insert_with(|| HelperState {
                name: comm.to_string(),
                baseline: ThreadSample::default(),
                last: sample,
            });
            h.last = sample;
        }
    }

    /// The report: counters, per-op figures (over `ops` operations, with
    /// `app_cpu_ns` of application-thread CPU), helpers and interrupts.
    pub fn finish(mut self, ops: u64, app_cpu_ns: u64) -> KstatReport {
        self.disable();
        let mut counters = BTreeMap::new();
        let mut sampled = BTreeMap::new();
        let mut unavailable = std::mem::take(&mut self.unavailable);
        for c in &self.counters {
            match c.read() {
                Ok(v) => {
                    counters.insert(c.name.clone(), v);
                }
                Err(e) => unavailable.push(UnavailableCounter {
                    counter: c.name.clone(),
                    reason: format!("read failed: {e}"),
                }),
            }
        }
        let mut sampled_ops = 0;
        let mut sampler_syscalls = None;
        match self.sampler.take() {
            None => {}
            Some(Err(reason)) => {
                for name in &self.windowed {
                    unavailable.push(UnavailableCounter {
                        counter: name.to_string(),
                        reason: reason.clone(),
                    });
                }
            }
            Some(Ok(s)) => {
                let totals = s.finish();
                sampled_ops = totals.ops;
                sampler_syscalls = totals.own_syscalls;
                for (name, count) in self.windowed.iter().zip(totals.counts) {
                    let reason = match count {
                        Err(e) => e,
                        Ok(_) if totals.ops == 0 => "counted only in sampling windows, and the run completed no operation inside one (runs shorter than 50 ms)".into(),
                        Ok(n) => {
                            sampled.insert(name.to_string(), n);
                            continue;
                        }
                    };
                    unavailable.push(UnavailableCounter {
                        counter: name.to_string(),
                        reason,
                    });
                }
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
            if let (Some(&r), Some(&c)) = (
                counters.get("irq_vectors:reschedule_entry"),
                counters.get("irq_vectors:call_function_entry"),
            ) {
                per_op.insert("ipis_per_op".into(), per(r + c));
            }
            per_op.insert("cpu_us_per_op".into(), app_cpu_ns as f64 / 1e3 / ops as f64);
            let helper_cpu: Option<u64> = helper_threads.iter().map(|h| h.cpu_ns).sum();
            if let Some(h) = helper_cpu {
                per_op.insert(
                    "cpu_us_with_helpers_per_op".into(),
                    (app_cpu_ns + h) as f64 / 1e3 / ops as f64,
                );
            }
            if let Some(i) = &interrupts {
                let dev: u64 = i.device.iter().flat_map(|d| d.per_cpu.iter()).sum();
                if !i.device.is_empty() {
                    per_op.insert("device_interrupts_per_op".into(), per(dev));
                }
            }
        }
        KstatReport {
            counters,
            sampled_counters: sampled,
            sampled_ops,
            sampler_syscalls,
            unavailable,
            per_op,
            interrupts,
            helper_threads,
            helper_threads_created: created,
            evidence: Vec::new(),
        }
    }
}

fn sub(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(a?.saturating_sub(b.unwrap_or(0)))
}

fn status_field(task: &std::path::Path, key: &str) -> Option<u64> {
    let text = fs::read_to_string(task.join("status")).ok()?;
    text.lines().find_map(|l| {
        l.strip_prefix(key)?
            .trim_start_matches(':')
            .trim()
            .parse()
            .ok()
    })
}

fn per_cpu_delta(a: &[IrqLine], b: &[IrqLine], irq: &str) -> Vec<u64> {
    let find = |lines: &[IrqLine]| {
        lines
            .iter()
            .find(|l| l.irq == irq)
            .map(|l| l.per_cpu.clone())
    };
    match (find(a), find(b)) {
        (Some(x), Some(y)) => y
            .iter()
            .zip(x.iter().chain(std::iter::repeat(&0)))
            .map(|(after, before)| after.saturating_sub(*before))
            .collect(),
        _ => Vec::new(),
    }
}

fn irq_deltas(a: &[IrqLine], b: &[IrqLine], device: Option<&str>) -> InterruptDeltas {
    let device_vectors = device.map(device_irqs).unwrap_or_default();
    InterruptDeltas {
        rescheduling_per_cpu: per_cpu_delta(a, b, "RES"),
        function_call_per_cpu: per_cpu_delta(a, b, "CAL"),
        device: device_vectors
            .into_iter()
            .map(|d| DeviceIrqDelta {
                irq: d.irq,
                per_cpu: per_cpu_delta(a, b, &d.irq.to_string()),
                name: d.name,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut c = Collector::open(None);
        c.enable(std::sync::Arc::new(|| 100));
        for _ in 0..100 {
            // A cheap system call.
            std::hint::black_box(rustix::process::getppid());
        }
        let r = c.finish(100, 1000);
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
