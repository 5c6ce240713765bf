//! `RunResult`: the one result schema of ringlab (`schema/result.schema.json`).
//!
//! Units are in field names (`elapsed_ns`, `bw_bytes_per_s`, `lat_ns`). A
//! figure that was not measured is absent or `null`, never a made-up zero.

use crate::latency::{EncodedLatency, LatencyRecorder, LatencySummary, HISTOGRAM_ENCODING};
use serde::{Deserialize, Serialize};

/// Bumped whenever a field changes meaning or is removed.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunResult {
    pub schema_version: u32,
    pub tool: ToolInfo,
    /// The subcommand that produced this result: `io` or `http`.
    pub command: String,
    /// Start of the measured run, RFC 3339, UTC.
    pub started_at: String,
    pub host: HostInfo,
    /// The fully resolved options, keyed by their long flag names (so that a
    /// sweep plan's axes and a result's config use the same words).
    pub config: serde_json::Map<String, serde_json::Value>,
    pub target: Option<TargetInfo>,
    pub jobs: Vec<JobFigures>,
    pub total: Figures,
    /// Things the reader of the numbers must know (ignored options, odd
    /// setups), one sentence each.
    pub warnings: Vec<String>,
    /// Kernel evidence of the run; absent with --no-kstat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kstat: Option<KstatReport>,
    /// HTTP figures of `ringlab http`; absent for other commands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpFigures>,
    /// Notes derived from this run's own kernel evidence, one per rule that
    /// fired (`ringlab_kstat::explain`); absent when none fired.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnoses: Vec<Diagnosis>,
    /// The run cut into `--status-interval` intervals (all jobs together);
    /// absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<Vec<IntervalFigures>>,
    /// The latency histograms behind the summaries, for `ringlab merge`:
    /// present in every shard's result and with --histograms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<ResultHistograms>,
    /// Which shard of a sharded run this is (--shard); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// A result made by `ringlab merge`: the results it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergeInfo>,
}

/// The latency recorders of a run, whole (see [`EncodedLatency`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultHistograms {
    /// `hdrhistogram-v2-deflate-base64`.
    pub encoding: String,
    /// Behind `total.lat_ns` (for `http -R`, corrected: from when each
    /// request was due).
    pub lat_ns: EncodedLatency,
    /// Behind `total.read.lat_ns` and `total.write.lat_ns`; absent for a
    /// direction with no timed operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_lat_ns: Option<EncodedLatency>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_lat_ns: Option<EncodedLatency>,
    /// `http -R`: behind `http.lat_ns_uncorrected` (from when each request
    /// was sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_ns_uncorrected: Option<EncodedLatency>,
    /// --status-interval: one per entry of `intervals`, same order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<Vec<EncodedLatency>>,
}

impl ResultHistograms {
    /// The histograms of `total` (all jobs), with the uncorrected latency
    /// of an open-loop HTTP run.
    pub fn of(total: &ThreadMeasurements, uncorrected: Option<&LatencyRecorder>) -> Self {
        let mut all = total.read.lat.clone();
        all.merge(&total.write.lat);
        all.merge(&total.nop.lat);
        all.merge(&total.trim.lat);
        let timed = |d: &DirectionRecorder| (d.lat.count() > 0).then(|| d.lat.encode());
        ResultHistograms {
            encoding: HISTOGRAM_ENCODING.to_string(),
            lat_ns: all.encode(),
            read_lat_ns: timed(&total.read),
            write_lat_ns: timed(&total.write),
            lat_ns_uncorrected: uncorrected.map(LatencyRecorder::encode),
            intervals: (!total.intervals.is_empty()).then(|| {
                total
                    .intervals
                    .iter()
                    .map(|i| {
                        let mut l = i.read.lat.clone();
                        l.merge(&i.write.lat);
                        l.encode()
                    })
                    .collect()
            }),
        }
    }
}

/// One shard of a sharded run: which, where, and when it started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardInfo {
    /// 0-based index of this shard, of `count`.
    pub index: u32,
    pub count: u32,
    /// Where index and count came from (`--shard`, or the launcher's
    /// variables: `SLURM_PROCID/SLURM_NTASKS`, ...).
    pub source: String,
    /// The launcher's job id where it gives one (`SLURM_JOB_ID`, ...).
    pub job_id: Option<String>,
    pub host: String,
    /// --start-at, RFC 3339 with nanoseconds; `null` without it.
    pub start_at: Option<String>,
    /// When measuring began and ended, Unix time in nanoseconds (this
    /// host's clock).
    pub started_unix_ns: u64,
    pub ended_unix_ns: u64,
    /// With --start-at: how much later than it measuring began.
    pub start_late_ns: Option<u64>,
    /// Whether that is more than the tolerance (10 ms): the shards did not
    /// all run over the same window.
    pub late: bool,
    /// This host's clock as the kernel's NTP discipline sees it; `null`
    /// where adjtimex cannot be read.
    pub clock: Option<ClockInfo>,
    /// `io` on a shared target: the part of the region this shard used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region_offset_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region_bytes: Option<u64>,
    /// `http -R`: this shard's share of the rate (requests/s) and the
    /// phase of its schedule (its first request is due this long after
    /// the start), so that the shards' requests interleave evenly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase_ns: Option<u64>,
}

/// The kernel's view of this host's clock (adjtimex): a host whose clock
/// is off starts its shard off by as much.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockInfo {
    /// Whether an NTP/PTP daemon keeps the clock synchronised.
    pub synchronized: bool,
    /// Current offset being corrected, in nanoseconds.
    pub offset_ns: i64,
    /// Maximum and estimated error of the clock, in nanoseconds.
    pub maxerror_ns: u64,
    pub esterror_ns: u64,
}

/// What `ringlab merge` put together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MergeInfo {
    /// The results merged, in input order.
    pub shards: Vec<MergedShard>,
    /// Shard indexes of the count that were not given (--allow-missing).
    pub missing: Vec<u32>,
    /// Differences between the inputs that --force let through.
    pub forced: Vec<String>,
    /// The run window: earliest start to latest end, Unix nanoseconds.
    pub started_unix_ns: u64,
    pub ended_unix_ns: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MergedShard {
    /// The file it was read from.
    pub file: String,
    /// Its shard index and count; `null` for a result that was no shard.
    pub index: Option<u32>,
    pub count: Option<u32>,
    pub host: String,
    pub started_unix_ns: u64,
    /// How long after the earliest shard it began measuring.
    pub start_offset_ns: u64,
    /// How late after --start-at it began (`null` without --start-at).
    pub start_late_ns: Option<u64>,
    pub late: bool,
    pub ops: u64,
}

impl RunResult {
    /// The result every command starts from: the header (tool, version,
    /// `command`, `started_at` in RFC 3339 seconds, `host`, `config`) and
    /// the total figures, nothing else yet. The one place the header is
    /// built; the caller fills in its jobs, target, warnings and the rest.
    pub fn new(
        command: &str,
        started_at: std::time::SystemTime,
        host: HostInfo,
        config: serde_json::Map<String, serde_json::Value>,
        total: Figures,
    ) -> RunResult {
        RunResult {
            schema_version: SCHEMA_VERSION,
            tool: ToolInfo {
                name: "ringlab".to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
            },
            command: command.to_string(),
            started_at: humantime::format_rfc3339_seconds(started_at).to_string(),
            host,
            config,
            target: None,
            jobs: Vec::new(),
            total,
            warnings: Vec::new(),
            kstat: None,
            http: None,
            diagnoses: Vec::new(),
            intervals: None,
            histograms: None,
            shard: None,
            merged: None,
        }
    }
}

/// One diagnosis: a named rule, the figure that triggered it and what to try.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Diagnosis {
    /// The rule's name (`iowq-offload`, `enter-per-request`, ...).
    pub rule: String,
    /// The figure the rule looked at (`io_uring_queue_async_work_per_op`).
    pub figure: String,
    /// Its value in this run.
    pub value: f64,
    /// The rule's threshold that the value crossed.
    pub threshold: f64,
    /// What the figure means here, with the likely cause.
    pub message: String,
    /// What to try.
    pub try_next: String,
}

/// One interval of `--status-interval`: what every job completed in it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntervalFigures {
    /// Start of the interval, nanoseconds since measuring began.
    pub start_ns: u64,
    pub elapsed_ns: u64,
    pub ops: u64,
    pub bytes: u64,
    pub iops: f64,
    pub bw_bytes_per_s: f64,
    pub read_ops: u64,
    pub read_bytes: u64,
    pub write_ops: u64,
    pub write_bytes: u64,
    /// Mean and 99th percentile of the latency of the I/Os completed in
    /// the interval; `null` if none completed.
    pub lat_mean_ns: Option<f64>,
    pub lat_p99_ns: Option<u64>,
}

impl IntervalFigures {
    /// Adds another's I/O and byte counts (overall and per direction) to
    /// these: the sum of two jobs' same interval (rates and latencies are
    /// the caller's to recompute).
    pub fn add_counts(&mut self, o: &IntervalFigures) {
        self.ops += o.ops;
        self.bytes += o.bytes;
        self.read_ops += o.read_ops;
        self.read_bytes += o.read_bytes;
        self.write_ops += o.write_ops;
        self.write_bytes += o.write_bytes;
    }
}

/// One interval as a job records it.
#[derive(Clone, Debug, Default)]
pub struct IntervalRecorder {
    pub start_ns: u64,
    pub elapsed_ns: u64,
    pub read: DirectionRecorder,
    pub write: DirectionRecorder,
}

impl IntervalRecorder {
    pub fn merge(&mut self, o: &IntervalRecorder) {
        self.elapsed_ns = self.elapsed_ns.max(o.elapsed_ns);
        self.read.merge(&o.read);
        self.write.merge(&o.write);
    }

    pub fn figures(&self) -> IntervalFigures {
        let mut lat = self.read.lat.clone();
        lat.merge(&self.write.lat);
        let ops = self.read.ops + self.write.ops;
        let bytes = self.read.bytes + self.write.bytes;
        let summary = lat.summary();
        IntervalFigures {
            start_ns: self.start_ns,
            elapsed_ns: self.elapsed_ns,
            ops,
            bytes,
            iops: per_second(ops, self.elapsed_ns),
            bw_bytes_per_s: per_second(bytes, self.elapsed_ns),
            read_ops: self.read.ops,
            read_bytes: self.read.bytes,
            write_ops: self.write.ops,
            write_bytes: self.write.bytes,
            lat_mean_ns: summary.as_ref().map(|l| l.mean),
            lat_p99_ns: summary.map(|l| l.p99),
        }
    }
}

/// What `ringlab http` measured beyond the shared [`Figures`]: responses by
/// status, socket errors by kind, and the open-loop uncorrected latency.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpFigures {
    /// Connections the run kept open (--connections).
    pub connections: u64,
    /// Connections opened, the first ones included (reconnects after a
    /// close or an error add to it).
    pub connects: u64,
    pub requests_sent: u64,
    pub responses: u64,
    pub bytes_written: u64,
    pub bytes_read: u64,
    /// Responses by status code ("200": count).
    pub status: std::collections::BTreeMap<String, u64>,
    /// Responses whose status is not 2xx or 3xx.
    pub non_2xx_3xx: u64,
    pub errors: HttpErrors,
    /// Open loop (--rate): latency from when each request was sent, beside
    /// `total.lat_ns` which counts from when it was due. `null` in closed loop.
    pub lat_ns_uncorrected: Option<LatencySummary>,
    /// Requests per second of each thread, sampled every 100 ms (wrk's
    /// Req/Sec row); `null` when the run was shorter than one sample.
    pub thread_req_per_s: Option<RateSummary>,
    /// Client CPU time (user + system, all client threads) per response.
    pub cpu_ns_per_request: Option<f64>,
    /// System calls per response; `null` when not counted (see
    /// `syscalls_source`).
    pub syscalls_per_request: Option<f64>,
    /// Where `syscalls_per_request` comes from, or why it is null.
    pub syscalls_source: String,
    /// --percentile-list: latency at each asked percentile ("95": ns), of
    /// `total.lat_ns`; absent without the flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_ns_percentiles: Option<std::collections::BTreeMap<String, u64>>,
}

/// Socket errors by kind; each one closed its connection, which reconnected.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpErrors {
    pub connect: u64,
    pub read: u64,
    pub write: u64,
    pub timeout: u64,
    pub parse: u64,
    pub closed: u64,
}

impl HttpErrors {
    pub fn total(&self) -> u64 {
        self.connect + self.read + self.write + self.timeout + self.parse + self.closed
    }

    pub fn merge(&mut self, o: &HttpErrors) {
        self.connect += o.connect;
        self.read += o.read;
        self.write += o.write;
        self.timeout += o.timeout;
        self.parse += o.parse;
        self.closed += o.closed;
    }
}

/// Mean, spread and maximum of a sampled rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateSummary {
    pub mean: f64,
    pub stdev: f64,
    pub max: f64,
    /// Percentage of samples within one standard deviation of the mean.
    pub within_stdev_pct: f64,
}

impl RateSummary {
    /// Summary of `samples`, or `None` for none.
    pub fn of(samples: &[f64]) -> Option<RateSummary> {
        if samples.is_empty() {
            return None;
        }
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let var = samples.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
        let stdev = var.sqrt();
        let within = samples
            .iter()
            .filter(|&&x| (x - mean).abs() <= stdev)
            .count() as f64;
        Some(RateSummary {
            mean,
            stdev,
            max: samples.iter().cloned().fold(0.0, f64::max),
            within_stdev_pct: within * 100.0 / n,
        })
    }
}

/// What the kernel did during the run: raw counters, per-operation figures,
/// helper threads, interrupts, and whether each requested knob took effect.
/// A counter that could not be read is listed in `unavailable`, never
/// reported as zero.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KstatReport {
    /// Tracepoint counts over the measured run, by `system:event`, counted
    /// by BPF for the process's thread group (its threads and the kernel
    /// helper threads of its rings); which ones follows `--evidence`.
    pub counters: std::collections::BTreeMap<String, u64>,
    /// Counted only inside sampling windows, per-op figures dividing by
    /// `sampled_ops`: system calls under `--evidence default` (windows of
    /// 100 ms, one a second for the first 3 s, then one every 4 s); in
    /// results made before BPF counting, the per-request io_uring
    /// tracepoints.
    pub sampled_counters: std::collections::BTreeMap<String, u64>,
    /// Operations completed inside the sampling windows.
    pub sampled_ops: u64,
    /// How many sampling windows there were; absent in results made when
    /// one opened every second of the run, and where nothing was sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled_windows: Option<u32>,
    /// System calls of ringlab's own sampling thread during the run
    /// (attaching and detaching the windowed counters), left out of
    /// `counters`: what a count of the whole process (`perf stat`) has on
    /// top of `raw_syscalls:sys_enter`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampler_syscalls: Option<u64>,
    /// Hits the kernel skipped running a counter's BPF program for during
    /// the measured run, by tracepoint, nonzero ones only: a raw tracepoint
    /// program is not run nested into itself on a CPU (its tracepoint hit
    /// again from an interrupt while it ran). A skipped hit may have been
    /// another process's, which the counter would have passed over, so
    /// the count in `counters` (or `sampled_counters`) is at most this much
    /// short. Where the kernel cannot say (before Linux 5.12), `unavailable`
    /// says so.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub counter_runs_skipped: std::collections::BTreeMap<String, u64>,
    pub unavailable: Vec<UnavailableCounter>,
    /// Derived figures per operation (`syscalls_per_op`, ...), only from
    /// counters that were measured.
    pub per_op: std::collections::BTreeMap<String, f64>,
    /// Deltas of /proc/interrupts over the run; `null` if unreadable.
    pub interrupts: Option<InterruptDeltas>,
    /// Kernel helper threads (iou-sqp-*, iou-wrk-*) alive during the run.
    pub helper_threads: Vec<HelperThread>,
    /// Helper threads that appeared during the run.
    pub helper_threads_created: u64,
    /// One line per requested io_uring knob: did the counters show it?
    pub evidence: Vec<KnobEvidence>,
    /// `--evidence stages`: each request's time in each stage, from the
    /// kernel's own timestamps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<StageReport>,
}

/// Per-request stage latencies (`--evidence stages`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageReport {
    /// Requests ringlab logged (issue and reap times).
    pub requests_logged: u64,
    /// Of those, requests whose io_uring_submit_req and io_uring_complete
    /// were found.
    pub requests_matched: u64,
    /// Of those, requests whose block request was found too (`null` where
    /// the disk has no request queue or was not traced).
    pub requests_matched_block: Option<u64>,
    /// Of those, requests whose block_rq_complete was found too: the
    /// device's stages are timed over these (nearly all, where ringlab's BPF
    /// copy of the completions loads; by perf sample, Linux 6.18 delivers none
    /// raised on an idle CPU; absent in results written before
    /// 2026-11-25).
    #[serde(default)]
    pub requests_block_completed: Option<u64>,
    /// Kernel events lost (a ring buffer full, or a block completion whose
    /// copier the kernel skipped because another BPF program held that
    /// CPU: a skip may have been another disk's, so at most) or dropped
    /// (over the cap).
    pub events_lost: u64,
    /// ringlab stopped logging requests (over its cap) before the run
    /// ended.
    pub requests_not_logged: bool,
    pub stages: Vec<StageLatency>,
}

/// One stage's latency over the matched requests.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageLatency {
    /// `from -> to`, the two timestamps.
    pub stage: String,
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    /// The whole histogram, HdrHistogram V2 + DEFLATE, base64.
    pub hdr_v2_deflate_base64: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnavailableCounter {
    pub counter: String,
    pub reason: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterruptDeltas {
    /// Rescheduling IPIs (RES) per CPU.
    pub rescheduling_per_cpu: Vec<u64>,
    /// Function-call IPIs (CAL) per CPU.
    pub function_call_per_cpu: Vec<u64>,
    /// The target device's own vectors, per CPU.
    pub device: Vec<DeviceIrqDelta>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceIrqDelta {
    pub irq: u32,
    pub name: String,
    pub per_cpu: Vec<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HelperThread {
    pub tid: u32,
    /// `iou-sqp-1234` (SQPOLL poller) or `iou-wrk-1234` (io-wq worker).
    pub name: String,
    /// Run time during the measured run (schedstat); `null` if unreadable.
    pub cpu_ns: Option<u64>,
    pub ctx_voluntary: Option<u64>,
    pub ctx_involuntary: Option<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnobEvidence {
    /// The flag, as typed (`--sqpoll`).
    pub knob: String,
    /// `true`: the counters show it working; `false`: they show it did
    /// nothing; `null`: no counter can tell.
    pub in_effect: Option<bool>,
    pub detail: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostInfo {
    pub hostname: String,
    /// `uname -r`.
    pub kernel: String,
    pub cpu_model: Option<String>,
    pub cpus_online: u32,
    /// `/proc/sys/kernel/io_uring_disabled` (0, 1 or 2); `null` where the
    /// kernel has no such sysctl.
    pub io_uring_disabled: Option<u32>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetInfo {
    pub path: String,
    /// `file` or `block`.
    pub kind: String,
    pub size_bytes: u64,
    /// The part of the target the workload uses (`--size`, whole blocks).
    pub region_bytes: u64,
    /// Whether ringlab created this file for the run.
    pub created: bool,
    /// Whether a created file was kept (`--keep`).
    pub kept: bool,
    /// File system of a regular file (`ext4`, `xfs`, `tmpfs`, ...), or the
    /// hexadecimal magic where the name is unknown; `null` for a device.
    pub fs_type: Option<String>,
    pub logical_block_size: u32,
    /// I/O scheduler of the device behind the target, where sysfs shows it.
    pub scheduler: Option<String>,
}

/// One job's figures: [`Figures`] plus which job and where it ran.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobFigures {
    pub job: u32,
    /// The CPU the job thread was pinned to (`--cpus`), `null` if unpinned.
    pub cpu: Option<u32>,
    #[serde(flatten)]
    pub figures: Figures,
}

/// Throughput, latency and CPU figures of a job or of the whole run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figures {
    pub elapsed_ns: u64,
    pub ops: u64,
    pub bytes: u64,
    pub iops: f64,
    pub bw_bytes_per_s: f64,
    /// Latency of every I/O, submission to completion; `null` if none.
    pub lat_ns: Option<LatencySummary>,
    pub read: DirectionFigures,
    pub write: DirectionFigures,
    /// Trims (--rw trim, randtrim, trimwrite, randtrimwrite); absent in a
    /// run without any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trim: Option<DirectionFigures>,
    /// CPU time of the job threads (getrusage RUSAGE_THREAD), summed over
    /// jobs in the total.
    pub cpu_user_ns: u64,
    pub cpu_sys_ns: u64,
    pub ctx_voluntary: u64,
    pub ctx_involuntary: u64,
    /// Blocks whose content --verify checked (reads in the run plus the
    /// read-back of written blocks); `null` without --verify.
    pub verified_blocks: Option<u64>,
    /// fsync/fdatasync calls made (--fsync/--fdatasync N); absent without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syncs: Option<u64>,
    /// fio's "IO depths" counts; absent in results from before they were
    /// counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_depths: Option<IoDepths>,
}

/// fio's "IO depths": how deep the queue was as I/Os went out, and how
/// many requests each submission handed over and each reap returned
/// (fio's `io_u_map`, `io_u_submit`, `io_u_complete`, same buckets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoDepths {
    /// I/Os by the requests in flight once they were queued: 1, 2-3, 4-7,
    /// 8-15, 16-31, 32-63, 64 and more (fio's `1, 2, 4, ..., >=64`).
    pub depth: [u64; 7],
    /// Submissions by the requests each handed to the kernel: 0, 1-4,
    /// 5-8, 9-16, 17-32, 33-64, more (fio's `0, 4, 8, ..., >=64`).
    pub submit: [u64; 7],
    /// Reaps by the completions each returned (the same buckets).
    pub complete: [u64; 7],
}

impl IoDepths {
    /// `n` I/Os went out with `depth` in flight.
    #[inline]
    pub fn issued(&mut self, depth: u32, n: u64) {
        let i = match depth {
            0 | 1 => 0,
            2..=3 => 1,
            4..=7 => 2,
            8..=15 => 3,
            16..=31 => 4,
            32..=63 => 5,
            _ => 6,
        };
        self.depth[i] += n;
    }

    /// The bucket of a submission or reap of `n` requests.
    #[inline]
    pub fn batch(n: u32) -> usize {
        match n {
            0 => 0,
            1..=4 => 1,
            5..=8 => 2,
            9..=16 => 3,
            17..=32 => 4,
            33..=64 => 5,
            _ => 6,
        }
    }

    /// One submission handed `n` requests to the kernel.
    #[inline]
    pub fn submitted(&mut self, n: u32) {
        self.submit[Self::batch(n)] += 1;
    }

    /// One reap returned `n` completions.
    #[inline]
    pub fn completed(&mut self, n: u32) {
        self.complete[Self::batch(n)] += 1;
    }

    /// Adds submission counts an engine kept itself (by [`IoDepths::batch`]).
    pub fn add_submits(&mut self, counts: &[u64; 7]) {
        for (x, y) in self.submit.iter_mut().zip(counts) {
            *x += y;
        }
    }

    pub fn merge(&mut self, other: &IoDepths) {
        for (a, b) in [
            (&mut self.depth, &other.depth),
            (&mut self.submit, &other.submit),
            (&mut self.complete, &other.complete),
        ] {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.depth
            .iter()
            .chain(&self.submit)
            .chain(&self.complete)
            .all(|&n| n == 0)
    }

    /// Each bucket's share of its counts in percent, as fio prints them
    /// (all zeros where nothing was counted).
    pub fn percent(counts: &[u64; 7]) -> [f64; 7] {
        let total: u64 = counts.iter().sum();
        let mut out = [0.0; 7];
        if total > 0 {
            for (o, &c) in out.iter_mut().zip(counts) {
                *o = c as f64 * 100.0 / total as f64;
            }
        }
        out
    }
}

/// Figures of one direction (reads or writes).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionFigures {
    pub ops: u64,
    pub bytes: u64,
    pub iops: f64,
    pub bw_bytes_per_s: f64,
    pub lat_ns: Option<LatencySummary>,
    /// Submission latency (fio's slat): from the start of each I/O to the
    /// moment it was handed to the kernel; `lat = slat + clat` for every
    /// I/O. Absent where the engine has no separate submission (sync).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slat_ns: Option<LatencySummary>,
    /// Completion latency (fio's clat): from the hand-over to the kernel to
    /// the completion; the whole latency for the sync engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clat_ns: Option<LatencySummary>,
    /// The latency histogram behind `lat_ns`, for exporters that need more
    /// than the summary (fio-json's percentiles, buckets and bins). Not
    /// part of the JSON schema; `None` in a result read back from JSON.
    #[serde(skip)]
    pub lat_recorder: Option<LatencyRecorder>,
    /// The histograms behind `slat_ns` and `clat_ns` (as `lat_recorder`).
    #[serde(skip)]
    pub slat_recorder: Option<LatencyRecorder>,
    #[serde(skip)]
    pub clat_recorder: Option<LatencyRecorder>,
}

/// What a worker thread measured, before it becomes [`Figures`].
#[derive(Clone, Debug, Default)]
pub struct ThreadMeasurements {
    pub elapsed_ns: u64,
    pub read: DirectionRecorder,
    pub write: DirectionRecorder,
    /// Requests that move no data (io_uring NOPs): counted in the total
    /// only, not in `read` or `write`.
    pub nop: DirectionRecorder,
    /// Trims (discards, holes punched): counted in the total and in their
    /// own direction, not in `read` or `write`.
    pub trim: DirectionRecorder,
    pub cpu_user_ns: u64,
    pub cpu_sys_ns: u64,
    pub ctx_voluntary: u64,
    pub ctx_involuntary: u64,
    pub verified_blocks: Option<u64>,
    /// fsync/fdatasync calls (None: the run made no sync calls by plan).
    pub syncs: Option<u64>,
    /// fio's "IO depths" counts.
    pub io_depths: IoDepths,
    /// --status-interval: the job's intervals, in order.
    pub intervals: Vec<IntervalRecorder>,
}

/// Counts and latencies of one direction, owned by one thread.
#[derive(Clone, Debug, Default)]
pub struct DirectionRecorder {
    pub ops: u64,
    pub bytes: u64,
    pub lat: LatencyRecorder,
    /// Submission and completion latency, where they are measured apart
    /// ([`DirectionRecorder::record_split`]); `None` until then (a
    /// histogram is not allocated for what is never recorded).
    pub slat: Option<LatencyRecorder>,
    pub clat: Option<LatencyRecorder>,
}

impl DirectionRecorder {
    #[inline]
    pub fn record(&mut self, bytes: u64, lat_ns: u64) {
        self.ops += 1;
        self.bytes += bytes;
        self.lat.record(lat_ns);
    }

    /// `n` operations of `bytes` each, all with latency `lat_ns`.
    #[inline]
    pub fn record_n(&mut self, bytes: u64, lat_ns: u64, n: u64) {
        self.ops += n;
        self.bytes += bytes * n;
        self.lat.record_n(lat_ns, n);
    }

    /// `n` operations of `bytes` each, not timed (--gtod-reduce): counted
    /// in IOPS and bandwidth, in no latency.
    #[inline]
    pub fn count(&mut self, bytes: u64, n: u64) {
        self.ops += n;
        self.bytes += bytes * n;
    }

    /// `n` operations moving `bytes` in all, each with submission latency
    /// `slat_ns` (`None`: no separate submission, as for pread) and
    /// completion latency `clat_ns`; their latency is the sum.
    #[inline]
    pub fn record_split(&mut self, bytes: u64, slat_ns: Option<u64>, clat_ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.ops += n;
        self.bytes += bytes;
        self.lat.record_n(slat_ns.unwrap_or(0) + clat_ns, n);
        if let Some(s) = slat_ns {
            self.slat
                .get_or_insert_with(LatencyRecorder::new)
                .record_n(s, n);
        }
        self.clat
            .get_or_insert_with(LatencyRecorder::new)
            .record_n(clat_ns, n);
    }

    pub fn merge(&mut self, other: &DirectionRecorder) {
        self.ops += other.ops;
        self.bytes += other.bytes;
        self.lat.merge(&other.lat);
        for (mine, theirs) in [(&mut self.slat, &other.slat), (&mut self.clat, &other.clat)] {
            if let Some(t) = theirs {
                mine.get_or_insert_with(LatencyRecorder::new).merge(t);
            }
        }
    }

    fn figures(&self, elapsed_ns: u64) -> DirectionFigures {
        DirectionFigures {
            ops: self.ops,
            bytes: self.bytes,
            iops: per_second(self.ops, elapsed_ns),
            bw_bytes_per_s: per_second(self.bytes, elapsed_ns),
            lat_ns: self.lat.summary(),
            slat_ns: self.slat.as_ref().and_then(LatencyRecorder::summary),
            clat_ns: self.clat.as_ref().and_then(LatencyRecorder::summary),
            lat_recorder: Some(self.lat.clone()),
            slat_recorder: self.slat.clone(),
            clat_recorder: self.clat.clone(),
        }
    }
}

fn per_second(count: u64, elapsed_ns: u64) -> f64 {
    if elapsed_ns == 0 {
        0.0
    } else {
        count as f64 * 1e9 / elapsed_ns as f64
    }
}

impl ThreadMeasurements {
    /// Adds another thread's measurements (elapsed time is the longest).
    pub fn merge(&mut self, other: &ThreadMeasurements) {
        self.elapsed_ns = self.elapsed_ns.max(other.elapsed_ns);
        self.read.merge(&other.read);
        self.write.merge(&other.write);
        self.nop.merge(&other.nop);
        self.trim.merge(&other.trim);
        self.cpu_user_ns += other.cpu_user_ns;
        self.cpu_sys_ns += other.cpu_sys_ns;
        self.ctx_voluntary += other.ctx_voluntary;
        self.ctx_involuntary += other.ctx_involuntary;
        self.verified_blocks = match (self.verified_blocks, other.verified_blocks) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.syncs = match (self.syncs, other.syncs) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.io_depths.merge(&other.io_depths);
        // Jobs cut their intervals at the same multiples of the period on
        // clocks started together: interval i of each job is the same span.
        for (i, iv) in other.intervals.iter().enumerate() {
            match self.intervals.get_mut(i) {
                Some(mine) => mine.merge(iv),
                None => self.intervals.push(iv.clone()),
            }
        }
    }

    /// Figures over `elapsed_ns` (a job's own time, or the run's wall time).
    pub fn figures(&self, elapsed_ns: u64) -> Figures {
        let mut both = self.read.lat.clone();
        both.merge(&self.write.lat);
        both.merge(&self.nop.lat);
        both.merge(&self.trim.lat);
        let ops = self.read.ops + self.write.ops + self.nop.ops + self.trim.ops;
        let bytes = self.read.bytes + self.write.bytes + self.trim.bytes;
        Figures {
            elapsed_ns,
            ops,
            bytes,
            iops: per_second(ops, elapsed_ns),
            bw_bytes_per_s: per_second(bytes, elapsed_ns),
            lat_ns: both.summary(),
            read: self.read.figures(elapsed_ns),
            write: self.write.figures(elapsed_ns),
            trim: (self.trim.ops > 0).then(|| self.trim.figures(elapsed_ns)),
            cpu_user_ns: self.cpu_user_ns,
            cpu_sys_ns: self.cpu_sys_ns,
            ctx_voluntary: self.ctx_voluntary,
            ctx_involuntary: self.ctx_involuntary,
            verified_blocks: self.verified_blocks,
            syncs: self.syncs,
            io_depths: (!self.io_depths.is_empty()).then_some(self.io_depths),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_divide_by_elapsed_time() {
        let mut m = ThreadMeasurements {
            elapsed_ns: 2_000_000_000,
            ..Default::default()
        };
        for _ in 0..1000 {
            m.read.record(4096, 10_000);
        }
        for _ in 0..500 {
            m.write.record(4096, 30_000);
        }
        let f = m.figures(m.elapsed_ns);
        assert_eq!(f.ops, 1500);
        assert_eq!(f.iops, 750.0);
        assert_eq!(f.read.iops, 500.0);
        assert_eq!(f.write.bw_bytes_per_s, 1024.0 * 1000.0);
        let lat = f.lat_ns.unwrap();
        assert_eq!(lat.min, 10_000);
        assert_eq!(lat.max, 30_000);
        assert!((lat.mean - (1000.0 * 10_000.0 + 500.0 * 30_000.0) / 1500.0).abs() < 1e-6);
    }

    #[test]
    fn split_latency_adds_up_and_merges() {
        let mut a = DirectionRecorder::default();
        a.record_split(3 * 4096, Some(1_000), 9_000, 3);
        a.record_split(65_536, Some(2_000), 30_000, 1);
        let mut b = DirectionRecorder::default();
        b.record_split(8192, None, 5_000, 1);
        a.merge(&b);
        let f = a.figures(1_000_000_000);
        assert_eq!(f.ops, 5);
        assert_eq!(f.bytes, 3 * 4096 + 65_536 + 8192);
        let (lat, slat, clat) = (f.lat_ns.unwrap(), f.slat_ns.unwrap(), f.clat_ns.unwrap());
        assert_eq!(lat.max, 32_000);
        assert_eq!(slat.min, 1_000);
        assert_eq!(clat.min, 5_000);
        assert_eq!(a.slat.as_ref().unwrap().count(), 4);
        assert_eq!(a.clat.as_ref().unwrap().count(), 5);
        // Over the I/O that have both, the means add up exactly.
        let mut c = DirectionRecorder::default();
        c.record_split(1, Some(700), 1_300, 2);
        c.record_split(1, Some(100), 7_900, 2);
        let f = c.figures(1);
        let sum = f.slat_ns.unwrap().mean + f.clat_ns.unwrap().mean;
        assert!((f.lat_ns.unwrap().mean - sum).abs() < 1e-9);
        // A recorder without the split has no slat/clat and stays loadable.
        let plain = DirectionRecorder::default().figures(1);
        assert!(plain.slat_ns.is_none() && plain.clat_ns.is_none());
        let json = serde_json::to_string(&plain).unwrap();
        assert!(!json.contains("slat_ns"));
        let back: DirectionFigures = serde_json::from_str(&json).unwrap();
        assert!(back.clat_ns.is_none());
    }

    #[test]
    fn unmeasured_direction_has_no_latency() {
        let mut m = ThreadMeasurements::default();
        m.read.record(512, 1);
        let f = m.figures(1_000_000_000);
        assert!(f.write.lat_ns.is_none());
        assert_eq!(f.write.ops, 0);
    }

    #[test]
    fn merge_sums_counts_and_keeps_longest_time() {
        let mut a = ThreadMeasurements {
            elapsed_ns: 5,
            cpu_user_ns: 10,
            ..Default::default()
        };
        let b = ThreadMeasurements {
            elapsed_ns: 7,
            cpu_user_ns: 3,
            ctx_voluntary: 2,
            ..Default::default()
        };
        a.merge(&b);
        assert_eq!(a.elapsed_ns, 7);
        assert_eq!(a.cpu_user_ns, 13);
        assert_eq!(a.ctx_voluntary, 2);
    }
}
