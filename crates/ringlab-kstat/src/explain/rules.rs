//! The diagnosis rules, one record each: which runs a rule looks at, the
//! figure it reads, its threshold, what it means and what to try. Adding a
//! rule is adding a record to [`RULES`].

use ringlab_core::uring::knobs::FILE_LOOKUPS_PER_REQUEST;
use ringlab_stats::RunResult;
use serde_json::Value as Json;

/// What the rules need to know about a run, read once from its result.
#[derive(Clone, Debug, Default)]
pub struct Ctx {
    pub uring: bool,
    pub depth: u64,
    pub threads: u64,
    pub sqpoll: bool,
    pub coop: bool,
    pub defer: bool,
    pub fixed_files: bool,
    pub force_async: bool,
    /// IOSQE_ASYNC was chosen by default: the target takes no non-blocking
    /// I/O.
    pub force_async_default: bool,
    pub submit_batch: u64,
    pub completion_thread: bool,
    pub sqpoll_cpu_in_job_cpus: bool,
    pub per_op: std::collections::BTreeMap<String, f64>,
    /// Voluntary and involuntary context switches of the iou-sqp-* threads
    /// per I/O; `None` without a poller or its figures.
    pub sqpoll_voluntary_per_op: Option<f64>,
    pub sqpoll_involuntary_per_op: Option<f64>,
    /// p99 latency in ms when it is at least 8 times the median.
    pub tick_stall_ms: Option<f64>,
}

impl Ctx {
    pub fn per_op(&self, key: &str) -> Option<f64> {
        self.per_op.get(key).copied()
    }

    /// Reads the rule inputs from a result (`io` or `http`).
    pub fn of(r: &RunResult) -> Ctx {
        let cfg = &r.config;
        let flag = |k: &str| cfg.get(k).and_then(Json::as_bool).unwrap_or(false);
        let num = |k: &str| cfg.get(k).and_then(Json::as_u64).unwrap_or(0);
        let (uring, depth, threads) = if r.command == "http" {
            let io = cfg.get("io").and_then(Json::as_str).unwrap_or("");
            let t = num("threads").max(1);
            (io.starts_with("uring"), num("connections") / t, t)
        } else {
            let e = cfg.get("engine").and_then(Json::as_str).unwrap_or("");
            (e == "uring", num("iodepth"), num("numjobs").max(1))
        };
        let ops = r.total.ops;
        let sqpoll = flag("sqpoll") || cfg.get("mode").and_then(Json::as_str) == Some("iou+k");
        let job_cpus: Vec<u64> = cfg
            .get("cpus")
            .and_then(Json::as_array)
            .map(|a| a.iter().filter_map(Json::as_u64).collect())
            .unwrap_or_default();
        let sqpoll_cpu = cfg.get("sqpoll-cpu").and_then(Json::as_u64);
        let mut ctx = Ctx {
            uring,
            depth,
            threads,
            sqpoll,
            coop: flag("coop-taskrun"),
            defer: flag("defer-taskrun"),
            fixed_files: flag("fixed-files")
                || cfg.get("mode").and_then(Json::as_str) == Some("enhanced"),
            force_async: num("force-async") > 0,
            force_async_default: cfg
                .get("default-knobs")
                .and_then(Json::as_array)
                .is_some_and(|a| a.iter().any(|k| k.as_str() == Some("force-async"))),
            submit_batch: num("submit-batch"),
            completion_thread: cfg.get("completion-thread").is_some_and(|v| !v.is_null()),
            sqpoll_cpu_in_job_cpus: sqpoll_cpu.is_some_and(|c| job_cpus.contains(&c)),
            ..Ctx::default()
        };
        if let Some(k) = &r.kstat {
            ctx.per_op = k.per_op.clone();
            let sqp: Vec<_> = k
                .helper_threads
                .iter()
                .filter(|h| h.name.starts_with("iou-sqp"))
                .collect();
            if !sqp.is_empty() && ops > 0 {
                let sum = |f: fn(&ringlab_stats::HelperThread) -> Option<u64>| {
                    sqp.iter()
                        .map(|h| f(h))
                        .sum::<Option<u64>>()
                        .map(|n| n as f64 / ops as f64)
                };
                ctx.sqpoll_voluntary_per_op = sum(|h| h.ctx_voluntary);
                ctx.sqpoll_involuntary_per_op = sum(|h| h.ctx_involuntary);
            }
        }
        if let Some(lat) = &r.total.lat_ns {
            if lat.p50 > 0 && lat.p99 >= 8 * lat.p50 {
                ctx.tick_stall_ms = Some(lat.p99 as f64 / 1e6);
            }
        }
        ctx
    }
}

/// One diagnosis rule.
pub struct Rule {
    /// Its name, shown in brackets (`iowq-offload`).
    pub name: &'static str,
    /// The figure it reads: a `kstat.per_op` key, or a name of its own.
    pub figure: &'static str,
    /// The rule fires when the figure is above this.
    pub threshold: f64,
    /// Which runs the rule applies to, in words (for the README and tests).
    pub applies_to: &'static str,
    /// Whether the rule applies to this run.
    pub applies: fn(&Ctx) -> bool,
    /// The figure's value in this run; `None` when it was not measured.
    pub value: fn(&Ctx) -> Option<f64>,
    /// What the figure means; `{value}` and `{cause}` are filled in.
    pub message: &'static str,
    /// The likely cause in this run.
    pub cause: fn(&Ctx) -> &'static str,
    /// What to try, in this run.
    pub try_next: fn(&Ctx) -> &'static str,
}

pub static RULES: &[Rule] = &[
    Rule {
        name: "iowq-offload",
        figure: "io_uring_queue_async_work_per_op",
        threshold: 0.1,
        applies_to: "io_uring runs",
        applies: |c| c.uring,
        value: |c| c.per_op("io_uring_queue_async_work_per_op"),
        message: "{value} io_uring requests per I/O were handed to io-wq worker threads (io_uring_queue_async_work): {cause}",
        cause: |c| {
            if c.force_async_default {
                "IOSQE_ASYNC, chosen by default because the target takes no non-blocking I/O: io_uring would hand every request to io-wq anyway, after trying it inline"
            } else if c.force_async {
                "forced by --force-async (IOSQE_ASYNC), each one a hop to an iou-wrk thread and back"
            } else {
                "the request could not be done without blocking, likely no NOWAIT support for this I/O on this file system or device (buffered writes, some file systems, devices without nowait)"
            }
        },
        try_next: |c| {
            if c.force_async_default {
                // Dropping IOSQE_ASYNC here only adds the inline try, and
                // io-wq then runs the requests one worker at a time
                // (README, "IOSQE_ASYNC where the target takes no
                // non-blocking I/O"): the way out is the target.
                "a device or file system that takes non-blocking I/O (FMODE_NOWAIT: a blk-mq device, ext4/xfs files), where io_uring completes requests inline; cap the workers with --iowq-max-workers; --force-async=0 only to compare"
            } else {
                "drop IOSQE_ASYNC unless inode-lock contention or a spare core makes it pay; try --direct, or a file system/device with NOWAIT support; cap the workers with --iowq-max-workers"
            }
        },
    },
    Rule {
        name: "enter-per-request",
        figure: "io_uring_enter_per_op",
        threshold: 0.9,
        applies_to: "io_uring runs at depth > 1 without SQPOLL",
        applies: |c| c.uring && c.depth > 1 && !c.sqpoll,
        value: |c| c.per_op("io_uring_enter_per_op"),
        message: "{value} io_uring_enter calls per I/O at depth > 1: no batching, {cause}",
        cause: |c| {
            if c.submit_batch == 1 {
                "--submit-batch 1 enters the kernel for every request"
            } else {
                "each call submits or reaps about one request"
            }
        },
        try_next: |_| "queue several requests before one io_uring_enter and reap every completion that is ready (--submit-batch N, --complete-batch N), or --sqpoll to submit without system calls",
    },
    Rule {
        name: "file-lookup-shared",
        figure: "io_uring_file_get_per_op",
        // The fixed-files knob's own bar: above it, there are lookups that
        // --fixed-files would remove.
        threshold: FILE_LOOKUPS_PER_REQUEST,
        applies_to: "io_uring runs with more than one thread and no registered files",
        applies: |c| c.uring && c.threads > 1 && !c.fixed_files,
        value: |c| c.per_op("io_uring_file_get_per_op"),
        message: "{value} file lookups (io_uring_file_get) per I/O with {cause}",
        cause: |_| "several threads in the process: each lookup takes a reference on a file table they share",
        try_next: |_| "register the files (--fixed-files: IORING_REGISTER_FILES and IOSQE_FIXED_FILE), which skips the lookup",
    },
    Rule {
        name: "ipi-without-coop",
        figure: "reschedule_ipis_per_op",
        threshold: 0.05,
        applies_to: "io_uring runs without COOP_TASKRUN, DEFER_TASKRUN or SQPOLL",
        applies: |c| c.uring && !c.coop && !c.defer && !c.sqpoll,
        value: |c| c.per_op("reschedule_ipis_per_op"),
        message: "{value} rescheduling IPIs per I/O: {cause}",
        cause: |_| "completion work interrupts the submitting thread, which COOP_TASKRUN would defer to its next kernel entry",
        try_next: |_| "ringlab's default ring (no --mode iou): COOP_TASKRUN, with SINGLE_ISSUER and DEFER_TASKRUN when one thread owns the ring; or --coop-taskrun alone; not with completions reaped on another thread",
    },
    Rule {
        name: "sqpoll-preempted",
        figure: "sqpoll_involuntary_switches_per_op",
        threshold: 0.001,
        applies_to: "SQPOLL runs",
        applies: |c| c.sqpoll,
        value: |c| c.sqpoll_involuntary_per_op,
        message: "the SQPOLL poller was preempted {value} times per I/O: {cause}",
        cause: |c| {
            if c.sqpoll_cpu_in_job_cpus {
                "--sqpoll-cpu is one of the job's CPUs, so the poller and the job take turns on it"
            } else {
                "it shares a CPU with other work"
            }
        },
        try_next: |_| "give the poller a CPU of its own (--sqpoll-cpu outside --cpus), or share one poller between rings with --attach-wq",
    },
    Rule {
        name: "sqpoll-wakeups",
        figure: "sqpoll_voluntary_switches_per_op",
        threshold: 0.01,
        applies_to: "SQPOLL runs",
        applies: |c| c.sqpoll,
        value: |c| c.sqpoll_voluntary_per_op,
        message: "the SQPOLL poller went to sleep {value} times per I/O: {cause}",
        cause: |_| "it idles longer than sq_thread_idle between requests, and each wake-up costs an io_uring_enter and a context switch",
        try_next: |_| "raise --sqpoll-idle, or drop --sqpoll for a workload this sparse",
    },
    Rule {
        name: "cq-overflow",
        figure: "io_uring_cqe_overflow_per_op",
        threshold: 0.0,
        applies_to: "io_uring runs",
        applies: |c| c.uring,
        value: |c| c.per_op("io_uring_cqe_overflow_per_op"),
        message: "{value} completions per I/O overflowed the completion ring: {cause}",
        cause: |_| "completions arrive faster than they are reaped, and the kernel keeps them on a slow overflow list",
        try_next: |_| "a larger completion ring (--cq-size), or reap more often",
    },
    Rule {
        name: "tick-stalls",
        figure: "lat_ms_p99",
        threshold: 1.0,
        applies_to: "runs whose p99 latency is at least 8 times the median",
        applies: |_| true,
        value: |c| c.tick_stall_ms,
        message: "p99 latency of {value} ms, at least 8 times the median: {cause}",
        cause: |c| {
            if c.coop && c.completion_thread {
                "COOP_TASKRUN with completions reaped on another thread: they wait for the submitting thread's next kernel entry, often a timer tick (seed 000)"
            } else {
                "millisecond stalls of the size of the timer tick (1, 4 or 10 ms at HZ 1000, 250, 100): a thread waiting for the scheduler, not for the device"
            }
        },
        try_next: |_| "give every thread (job, completion thread, SQPOLL poller) a CPU of its own; without a completion thread, COOP_TASKRUN cannot delay completions",
    },
];
