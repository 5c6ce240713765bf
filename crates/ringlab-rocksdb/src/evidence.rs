//! Kernel evidence for another process (db_bench): tracepoints counted by
//! BPF programs for its thread group from before it execs (so every thread
//! it creates, and the io_uring helper threads they cause, are counted),
//! IPIs from /proc/interrupts, its kernel helper threads sampled from
//! /proc, and the block device's counters from /sys/block/DEV/stat.

use ringlab_core::uring::knobs::{knob, Arg, UringOptions};
use ringlab_kstat::bpf::{report_skips, skips_between, NamedCounters, SkipCounts};
use ringlab_kstat::collector::{per_op_name, thread_cpu_ns, thread_switches};
use ringlab_kstat::device::{irq_deltas, read_interrupts, IrqLine};
use ringlab_kstat::Level;
use ringlab_stats::{HelperThread, KstatReport, UnavailableCounter};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The bios db_bench's threads (and its io_uring helper threads) submit:
/// its own device reads, apart from the other processes on the same disk
/// that /sys/block/DEV/stat also counts.
pub const OWN_IO_TRACEPOINTS: &[&str] = &["block:block_bio_queue"];

/// Counters attached to one process; [`ProcessCounters::enable`] marks the
/// start of what [`ProcessCounters::read`] returns.
pub struct ProcessCounters {
    counters: NamedCounters,
    at_start: BTreeMap<&'static str, u64>,
    skips_at_start: SkipCounts,
    irq_before: Option<Vec<IrqLine>>,
    /// Hits the kernel skipped running a counter for, since
    /// [`ProcessCounters::enable`] (set by [`ProcessCounters::read`]).
    pub skipped: BTreeMap<String, u64>,
    pub unavailable: Vec<UnavailableCounter>,
}

impl ProcessCounters {
    /// Attaches every process tracepoint to `pid`'s thread group.
    pub fn open(pid: libc::pid_t) -> ProcessCounters {
        // Every tracepoint: db_bench's figures are per request of a run
        // whose own time is what RocksDB measures, and each configuration
        // pays the same.
        let mut names = Level::Full.tracepoints();
        names.extend(OWN_IO_TRACEPOINTS);
        let counters = NamedCounters::attach(pid as u32, &names);
        let unavailable = counters
            .unavailable
            .iter()
            .map(|(counter, reason)| UnavailableCounter {
                counter: counter.clone(),
                reason: reason.clone(),
            })
            .collect();
        ProcessCounters {
            counters,
            at_start: BTreeMap::new(),
            skips_at_start: Ok(BTreeMap::new()),
            irq_before: None,
            skipped: BTreeMap::new(),
            unavailable,
        }
    }

    pub fn enable(&mut self) {
        self.at_start = self.counters.snapshot();
        self.skips_at_start = self.counters.skipped();
        self.irq_before = read_interrupts().ok();
    }

    /// Counts since [`ProcessCounters::enable`], by tracepoint, with the
    /// rescheduling and function-call IPIs of every CPU as
    /// `irq_vectors:reschedule_entry` and `irq_vectors:call_function_entry`
    /// (from /proc/interrupts).
    pub fn read(&mut self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for (name, end) in self.counters.snapshot() {
            let start = self.at_start.get(name).copied().unwrap_or(0);
            out.insert(name.to_string(), end.saturating_sub(start));
        }
        report_skips(
            skips_between(&self.skips_at_start, self.counters.skipped()),
            &mut self.skipped,
            &mut self.unavailable,
        );
        self.counters.detach_in_background();
        match (&self.irq_before, read_interrupts().ok()) {
            (Some(before), Some(after)) => {
                let d = irq_deltas(before, &after, None);
                for (per_cpu, name) in [
                    (&d.rescheduling_per_cpu, "irq_vectors:reschedule_entry"),
                    (&d.function_call_per_cpu, "irq_vectors:call_function_entry"),
                ] {
                    if !per_cpu.is_empty() {
                        out.insert(name.to_string(), per_cpu.iter().sum());
                    }
                }
            }
            _ => self.unavailable.push(UnavailableCounter {
                counter: "/proc/interrupts".into(),
                reason: "could not read /proc/interrupts".into(),
            }),
        }
        out
    }
}

/// `/sys/block/DEV/stat`: reads completed and sectors read.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DiskStat {
    pub reads: u64,
    pub read_sectors: u64,
}

pub fn disk_stat(dev: &str) -> Option<DiskStat> {
    let text = std::fs::read_to_string(format!("/sys/block/{dev}/stat")).ok()?;
    let f: Vec<u64> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    Some(DiskStat {
        reads: *f.first()?,
        read_sectors: *f.get(2)?,
    })
}

/// One helper thread's latest sample.
#[derive(Clone, Debug)]
struct Helper {
    name: String,
    cpu_ns: Option<u64>,
    voluntary: Option<u64>,
    involuntary: Option<u64>,
}

/// What the sampling loop saw while db_bench ran.
#[derive(Default)]
pub struct Samples {
    helpers: BTreeMap<u32, Helper>,
    /// (seconds since start, disk counters), every [`SAMPLE_PERIOD`].
    disk: Vec<(f64, DiskStat)>,
}

pub const SAMPLE_PERIOD: Duration = Duration::from_millis(100);

impl Samples {
    /// Reads the helper threads of `pid` and the disk counters once.
    pub fn sample(&mut self, pid: u32, dev: Option<&str>, start: Instant) {
        if let Some(d) = dev.and_then(disk_stat) {
            self.disk.push((start.elapsed().as_secs_f64(), d));
        }
        let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return;
        };
        for e in rd.flatten() {
            let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let base = e.path();
            let Ok(comm) = std::fs::read_to_string(base.join("comm")) else {
                continue;
            };
            let name = comm.trim().to_string();
            if !name.starts_with("iou-sqp") && !name.starts_with("iou-wrk") {
                continue;
            }
            let (voluntary, involuntary) = thread_switches(&base);
            self.helpers.insert(
                tid,
                Helper {
                    name,
                    cpu_ns: thread_cpu_ns(&base),
                    voluntary,
                    involuntary,
                },
            );
        }
    }

    /// Device read IOPS and bytes per second: the median over the sampling
    /// intervals (the benchmark's steady state; opening and closing the
    /// database are a few intervals at either end), with the reads counted
    /// over the whole process. `None` without two samples.
    pub fn device(&self) -> Option<DeviceFigures> {
        if self.disk.len() < 3 {
            return None;
        }
        let mut iops = Vec::new();
        let mut bw = Vec::new();
        for w in self.disk.windows(2) {
            let dt = w[1].0 - w[0].0;
            if dt <= 0.0 {
                continue;
            }
            iops.push(w[1].1.reads.saturating_sub(w[0].1.reads) as f64 / dt);
            bw.push(w[1].1.read_sectors.saturating_sub(w[0].1.read_sectors) as f64 * 512.0 / dt);
        }
        let first = self.disk.first()?.1;
        let last = self.disk.last()?.1;
        Some(DeviceFigures {
            read_iops: median(&iops)?,
            read_bytes_per_s: median(&bw)?,
            reads: last.reads.saturating_sub(first.reads),
        })
    }

    pub fn helper_threads(&self) -> Vec<HelperThread> {
        self.helpers
            .iter()
            .map(|(tid, h)| HelperThread {
                tid: *tid,
                name: h.name.clone(),
                cpu_ns: h.cpu_ns,
                ctx_voluntary: h.voluntary,
                ctx_involuntary: h.involuntary,
            })
            .collect()
    }
}

#[derive(Clone, Copy, Debug)]
pub struct DeviceFigures {
    pub read_iops: f64,
    pub read_bytes_per_s: f64,
    /// Reads completed by the device while db_bench ran (open and close
    /// included).
    pub reads: u64,
}

fn median(v: &[f64]) -> Option<f64> {
    ringlab_stats::spread::Spread::of(v).map(|s| s.median)
}

/// File lookups per io_uring request (not per key): the figure registered
/// files change. Read from the counters, since per-op figures are per key.
pub fn file_get_per_request(k: &KstatReport) -> Option<f64> {
    let get = *k.counters.get("io_uring:io_uring_file_get")?;
    let sub = *k.counters.get("io_uring:io_uring_submit_req")?;
    (sub > 0).then(|| get as f64 / sub as f64)
}

/// The kernel-evidence part of a result. `ops` are db_bench's operations
/// (keys read). Its knob evidence is filled in by the explain step
/// ([`ringlab_kstat::explain`], called by the runner) with the plugin's
/// knobs ([`ring_options`]).
pub fn report(
    counters: BTreeMap<String, u64>,
    counter_runs_skipped: BTreeMap<String, u64>,
    mut unavailable: Vec<UnavailableCounter>,
    samples: &Samples,
    ops: u64,
    device: Option<(&str, Option<DeviceFigures>)>,
) -> KstatReport {
    let mut per_op = BTreeMap::new();
    if ops > 0 {
        for (name, v) in &counters {
            per_op.insert(per_op_name(name), *v as f64 / ops as f64);
        }
    }
    // The disk's own counters (/sys/block) include other processes, so no
    // per-op figure is made from them; db_bench's own reads are
    // block_bio_queue_per_op.
    if let Some((dev, None)) = device {
        unavailable.push(UnavailableCounter {
            counter: format!("/sys/block/{dev}/stat"),
            reason: "fewer than three samples (a run shorter than 300 ms) or unreadable".into(),
        });
    }
    let helpers = samples.helper_threads();
    KstatReport {
        counters,
        sampled_counters: BTreeMap::new(),
        sampled_ops: 0,
        sampled_windows: None,
        sampler_syscalls: None,
        counter_runs_skipped,
        unavailable,
        per_op,
        interrupts: None,
        helper_threads_created: helpers.len() as u64,
        helper_threads: helpers,
        evidence: Vec::new(),
        stages: None,
    }
}

/// The plugin's knobs (`sqpoll`, `sqpoll_cpu=1`, `fixed_files`: `ringlab
/// io`'s flags with `_` for `-`) as the knob table's options, for the
/// explain step; words the table does not have (`depth=64`) are left out.
pub fn ring_options(knobs: &[String]) -> UringOptions {
    let mut o = UringOptions::default();
    for k in knobs {
        let (name, value) = match k.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (k.as_str(), None),
        };
        if let Some(row) = knob(&name.replace('_', "-")) {
            let value = match (value, row.arg) {
                (None, Arg::OptionalValue { missing, .. }) => Some(missing),
                (v, _) => v,
            };
            let _ = (row.set)(&mut o, value);
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_rate_is_the_median_interval() {
        let mut s = Samples::default();
        let pts = [
            (0.0, 0),
            (0.1, 500),
            (0.2, 600),
            (0.3, 700),
            (0.4, 800),
            (0.5, 3000),
        ];
        for (t, r) in pts {
            s.disk.push((
                t,
                DiskStat {
                    reads: r,
                    read_sectors: r * 8,
                },
            ));
        }
        let d = s.device().unwrap();
        assert!((d.read_iops - 1000.0).abs() < 1e-6, "{}", d.read_iops);
        assert!((d.read_bytes_per_s - 1000.0 * 4096.0).abs() < 1e-3);
        assert_eq!(d.reads, 3000);
    }

    #[test]
    fn plugin_knobs_become_the_tables_options() {
        let o = ring_options(&[
            "sqpoll".into(),
            "sqpoll_cpu=1".into(),
            "fixed_files".into(),
            "depth=64".into(),
        ]);
        assert!(o.sqpoll && o.fixed_files);
        assert_eq!(o.sqpoll_cpu, Some(1));
        assert_eq!(ring_options(&["force_async".into()]).force_async, 1);
    }
}
