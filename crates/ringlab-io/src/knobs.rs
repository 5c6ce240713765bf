//! The io_uring knobs of `ringlab io`: one flag each, named after the kernel's
//! own names, the seeds' presets (`--mode`), and the rules that refuse
//! combinations the kernel rejects or that make no sense.

use crate::engines::EngineKind;
use anyhow::Result;
use clap::{Args, ValueEnum};
use ringlab_core::usage;
use serde_json::{json, Value};

/// IORING_MAX_REG_BUFFERS: the most buffers one ring can register.
pub const MAX_REGISTERED_BUFFERS: u32 = 1 << 14;
/// Twice IORING_MAX_CQ_ENTRIES' default cap on the CQ ring.
pub const CQ_SIZE_MAX: u32 = 1 << 17;

/// The seeds' named io_uring configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Default ring: interrupts, submission by io_uring_enter.
    #[value(name = "iou")]
    Iou,
    /// IOPOLL: completions found by polling the device (needs --direct and
    /// a device with poll queues).
    #[value(name = "iou+p")]
    IouP,
    /// SQPOLL: a kernel thread polls the submission ring.
    #[value(name = "iou+k")]
    IouK,
    /// Registered (fixed) files and buffers, as in the ScyllaDB article.
    #[value(name = "enhanced")]
    Enhanced,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Iou => "iou",
            Mode::IouP => "iou+p",
            Mode::IouK => "iou+k",
            Mode::Enhanced => "enhanced",
        }
    }
}

/// How the uring engine waits for completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReapMode {
    /// Sleep in io_uring_enter until enough completions arrived.
    Wait,
    /// Never sleep: look at the completion ring, and if it is short enter
    /// the kernel without waiting (io_uring_enter with min_complete 0),
    /// over and over.
    Peek,
    /// Never enter the kernel for completions: spin on the completion ring
    /// in user space (seed 003's polling of the CQ).
    Spin,
}

impl ReapMode {
    pub fn name(self) -> &'static str {
        match self {
            ReapMode::Wait => "wait",
            ReapMode::Peek => "peek",
            ReapMode::Spin => "spin",
        }
    }
}

/// The io_uring flags as the user typed them.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "io_uring knobs (--engine uring)")]
pub struct UringArgs {
    /// Preset of the seeds: iou (default ring), iou+p (--iopoll), iou+k
    /// (--sqpoll), enhanced (--fixed-files --fixed-buffers). Other knobs add
    /// to it.
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,

    /// IORING_SETUP_SQPOLL (Linux 5.1; 5.11 without root): a kernel thread
    /// (iou-sqp-*) polls the submission ring, so submitting needs no system
    /// call. Completions are reaped by spinning unless --reap says otherwise.
    #[arg(long)]
    pub sqpoll: bool,

    /// Pin the SQPOLL thread to this CPU (IORING_SETUP_SQ_AFF, Linux 5.1).
    #[arg(long, value_name = "CPU")]
    pub sqpoll_cpu: Option<u32>,

    /// Milliseconds the SQPOLL thread polls an empty ring before it sleeps
    /// [kernel default: 1000].
    #[arg(long, value_name = "MS")]
    pub sqpoll_idle: Option<u32>,

    /// IORING_SETUP_ATTACH_WQ (Linux 5.6): every job's ring shares one SQPOLL
    /// thread and one io-wq pool (seed 003's shared kernel pollers).
    #[arg(long)]
    pub attach_wq: bool,

    /// IORING_SETUP_IOPOLL (Linux 5.1): completions are found by polling the
    /// device, not by interrupts; needs --direct and a device with poll
    /// queues.
    #[arg(long)]
    pub iopoll: bool,

    /// IORING_SETUP_COOP_TASKRUN (Linux 5.19): completion work waits until
    /// the thread enters the kernel instead of interrupting it with an IPI.
    #[arg(long)]
    pub coop_taskrun: bool,

    /// IORING_SETUP_TASKRUN_FLAG (Linux 5.19): the kernel flags pending
    /// completion work in the ring, and --reap peek|spin enter to run it;
    /// needs --coop-taskrun or --defer-taskrun.
    #[arg(long)]
    pub taskrun_flag: bool,

    /// IORING_SETUP_SINGLE_ISSUER (Linux 6.0): only the job thread submits.
    #[arg(long)]
    pub single_issuer: bool,

    /// IORING_SETUP_DEFER_TASKRUN (Linux 6.1): completion work runs only
    /// when the thread waits for completions; needs --single-issuer.
    #[arg(long)]
    pub defer_taskrun: bool,

    /// Register the target's descriptor with the ring (IORING_REGISTER_FILES,
    /// Linux 5.1), saving a file lookup per request.
    #[arg(long)]
    pub fixed_files: bool,

    /// Register the I/O buffers with the ring (IORING_REGISTER_BUFFERS,
    /// Linux 5.1) and use READ_FIXED/WRITE_FIXED, saving the page pinning
    /// per request.
    #[arg(long)]
    pub fixed_buffers: bool,

    /// IOSQE_ASYNC (Linux 5.6) on every request, or with =N on every Nth:
    /// the request goes straight to an io-wq worker thread.
    #[arg(
        long,
        value_name = "N",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "1"
    )]
    pub force_async: Option<u32>,

    /// Hand requests to the kernel as soon as N are queued [default: once
    /// per loop turn, in the io_uring_enter that also waits]. 1 = one
    /// io_uring_enter per request.
    #[arg(long, value_name = "N")]
    pub submit_batch: Option<u32>,

    /// Wait for at least N completions per reap (fio's
    /// iodepth_batch_complete_min) [default: 1].
    #[arg(long, value_name = "N")]
    pub complete_batch: Option<u32>,

    /// How to wait for completions: wait (sleep in io_uring_enter), peek
    /// (enter without sleeping, repeatedly) or spin (poll the completion
    /// ring from user space) [default: wait; spin with --sqpoll].
    #[arg(long, value_enum)]
    pub reap: Option<ReapMode>,

    /// A second thread, pinned to CPU, reaps the completions and hands them
    /// to the job thread; latency is taken when that thread sees them (the
    /// case where COOP_TASKRUN delays completions by milliseconds).
    #[arg(long, value_name = "CPU")]
    pub completion_thread: Option<u32>,

    /// Register the ring's own descriptor (IORING_REGISTER_RING_FDS, Linux
    /// 5.18), saving a file lookup per io_uring_enter.
    #[arg(long)]
    pub register_ring: bool,

    /// Completion ring entries (IORING_SETUP_CQSIZE, Linux 5.5) [default:
    /// twice the submission ring].
    #[arg(long, value_name = "N")]
    pub cq_size: Option<u32>,

    /// Limit io-wq workers per NUMA node: bounded (file I/O) and unbounded
    /// (IORING_REGISTER_IOWQ_MAX_WORKERS, Linux 5.15); 0 leaves one as is.
    #[arg(long, value_name = "B,U")]
    pub iowq_max_workers: Option<String>,
}

/// The resolved io_uring configuration of a run (presets expanded, defaults
/// filled in, combinations checked).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UringOptions {
    pub mode: Option<Mode>,
    pub sqpoll: bool,
    pub sqpoll_cpu: Option<u32>,
    pub sqpoll_idle_ms: Option<u32>,
    pub attach_wq: bool,
    pub iopoll: bool,
    pub coop_taskrun: bool,
    pub taskrun_flag: bool,
    pub single_issuer: bool,
    pub defer_taskrun: bool,
    pub fixed_files: bool,
    pub fixed_buffers: bool,
    /// 0: off; N: IOSQE_ASYNC on every Nth request.
    pub force_async: u32,
    /// 0: submit once per loop turn; N: as soon as N are queued.
    pub submit_batch: u32,
    pub complete_batch: u32,
    /// `None` for engines other than uring, and with a completion thread.
    pub reap: Option<ReapMode>,
    pub completion_thread: Option<u32>,
    pub register_ring: bool,
    pub cq_size: Option<u32>,
    pub iowq_max_workers: Option<[u32; 2]>,
}

/// The knobs that also apply to the libaio engine: how many requests go to
/// the kernel per submission, and how many completions a reap waits for.
const BATCH_KNOBS: &[&str] = &["submit-batch", "complete-batch"];

/// A knob and the Linux release that introduced it.
pub struct KnobInfo {
    pub flag: &'static str,
    pub kernel_name: &'static str,
    pub since: &'static str,
}

/// The setup flags, in the order they are tried when the kernel refuses a
/// combination.
pub const SETUP_KNOBS: &[KnobInfo] = &[
    KnobInfo {
        flag: "iopoll",
        kernel_name: "IORING_SETUP_IOPOLL",
        since: "5.1",
    },
    KnobInfo {
        flag: "sqpoll",
        kernel_name: "IORING_SETUP_SQPOLL",
        since: "5.1 (5.11 without root)",
    },
    KnobInfo {
        flag: "sqpoll-cpu",
        kernel_name: "IORING_SETUP_SQ_AFF",
        since: "5.1",
    },
    KnobInfo {
        flag: "cq-size",
        kernel_name: "IORING_SETUP_CQSIZE",
        since: "5.5",
    },
    KnobInfo {
        flag: "attach-wq",
        kernel_name: "IORING_SETUP_ATTACH_WQ",
        since: "5.6",
    },
    KnobInfo {
        flag: "coop-taskrun",
        kernel_name: "IORING_SETUP_COOP_TASKRUN",
        since: "5.19",
    },
    KnobInfo {
        flag: "taskrun-flag",
        kernel_name: "IORING_SETUP_TASKRUN_FLAG",
        since: "5.19",
    },
    KnobInfo {
        flag: "single-issuer",
        kernel_name: "IORING_SETUP_SINGLE_ISSUER",
        since: "6.0",
    },
    KnobInfo {
        flag: "defer-taskrun",
        kernel_name: "IORING_SETUP_DEFER_TASKRUN",
        since: "6.1",
    },
];

/// Knobs that are registrations or per-request flags rather than setup flags.
pub const OTHER_KNOBS: &[KnobInfo] = &[
    KnobInfo {
        flag: "fixed-files",
        kernel_name: "IORING_REGISTER_FILES",
        since: "5.1",
    },
    KnobInfo {
        flag: "fixed-buffers",
        kernel_name: "IORING_REGISTER_BUFFERS",
        since: "5.1",
    },
    KnobInfo {
        flag: "force-async",
        kernel_name: "IOSQE_ASYNC",
        since: "5.6",
    },
    KnobInfo {
        flag: "iowq-max-workers",
        kernel_name: "IORING_REGISTER_IOWQ_MAX_WORKERS",
        since: "5.15",
    },
    KnobInfo {
        flag: "register-ring",
        kernel_name: "IORING_REGISTER_RING_FDS",
        since: "5.18",
    },
];

/// The Linux release that introduced `flag`.
pub fn since(flag: &str) -> &'static str {
    SETUP_KNOBS
        .iter()
        .chain(OTHER_KNOBS)
        .find(|k| k.flag == flag)
        .map_or("?", |k| k.since)
}

impl UringArgs {
    /// The knobs given on the command line, by flag name.
    pub fn given(&self) -> Vec<&'static str> {
        [
            (self.mode.is_some(), "mode"),
            (self.sqpoll, "sqpoll"),
            (self.sqpoll_cpu.is_some(), "sqpoll-cpu"),
            (self.sqpoll_idle.is_some(), "sqpoll-idle"),
            (self.attach_wq, "attach-wq"),
            (self.iopoll, "iopoll"),
            (self.coop_taskrun, "coop-taskrun"),
            (self.taskrun_flag, "taskrun-flag"),
            (self.single_issuer, "single-issuer"),
            (self.defer_taskrun, "defer-taskrun"),
            (self.fixed_files, "fixed-files"),
            (self.fixed_buffers, "fixed-buffers"),
            (self.force_async.is_some(), "force-async"),
            (self.submit_batch.is_some(), "submit-batch"),
            (self.complete_batch.is_some(), "complete-batch"),
            (self.reap.is_some(), "reap"),
            (self.completion_thread.is_some(), "completion-thread"),
            (self.register_ring, "register-ring"),
            (self.cq_size.is_some(), "cq-size"),
            (self.iowq_max_workers.is_some(), "iowq-max-workers"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }
}

/// What the knob rules need to know about the rest of the plan.
pub struct PlanFacts {
    pub engine: EngineKind,
    pub iodepth: u32,
    pub direct: bool,
}

impl UringOptions {
    /// Expands the preset, fills defaults and refuses what the kernel would
    /// refuse or what makes no sense, with the reason and the fix.
    pub fn resolve(a: &UringArgs, facts: &PlanFacts) -> Result<UringOptions> {
        if facts.engine != EngineKind::Uring {
            // Batch sizes are a property of any queue of requests, and fio
            // applies its iodepth_batch_* options to libaio too; the other
            // knobs exist only in io_uring.
            let batches = facts.engine == EngineKind::Libaio;
            let refused = a
                .given()
                .into_iter()
                .find(|k| !(batches && BATCH_KNOBS.contains(k)));
            if let Some(first) = refused {
                let also = if batches {
                    " (libaio takes --submit-batch and --complete-batch)"
                } else {
                    ""
                };
                usage!(
                    "--{first} is an io_uring knob and --engine {} does not use io_uring{also}: drop it or use --engine uring",
                    facts.engine.name()
                );
            }
            if !batches {
                return Ok(UringOptions::default());
            }
            let o = UringOptions {
                submit_batch: a.submit_batch.unwrap_or(0),
                complete_batch: a.complete_batch.unwrap_or(1),
                ..UringOptions::default()
            };
            o.check_batches(facts.iodepth)?;
            return Ok(o);
        }
        let mut o = UringOptions {
            mode: a.mode,
            sqpoll: a.sqpoll,
            sqpoll_cpu: a.sqpoll_cpu,
            sqpoll_idle_ms: a.sqpoll_idle,
            attach_wq: a.attach_wq,
            iopoll: a.iopoll,
            coop_taskrun: a.coop_taskrun,
            taskrun_flag: a.taskrun_flag,
            single_issuer: a.single_issuer,
            defer_taskrun: a.defer_taskrun,
            fixed_files: a.fixed_files,
            fixed_buffers: a.fixed_buffers,
            force_async: a.force_async.unwrap_or(0),
            submit_batch: a.submit_batch.unwrap_or(0),
            complete_batch: a.complete_batch.unwrap_or(1),
            reap: None,
            completion_thread: a.completion_thread,
            register_ring: a.register_ring,
            cq_size: a.cq_size,
            iowq_max_workers: None,
        };
        match a.mode {
            Some(Mode::Iou) | None => {}
            Some(Mode::IouP) => o.iopoll = true,
            Some(Mode::IouK) => o.sqpoll = true,
            Some(Mode::Enhanced) => {
                o.fixed_files = true;
                o.fixed_buffers = true;
            }
        }
        let via = |flag: &str| -> String {
            match (flag, a.mode) {
                ("sqpoll", Some(Mode::IouK)) if !a.sqpoll => "--mode iou+k (SQPOLL)".to_string(),
                ("iopoll", Some(Mode::IouP)) if !a.iopoll => "--mode iou+p (IOPOLL)".to_string(),
                _ => format!("--{flag}"),
            }
        };
        if o.defer_taskrun && !o.single_issuer {
            usage!("--defer-taskrun needs --single-issuer (the kernel refuses it alone): add --single-issuer");
        }
        if o.sqpoll {
            for (on, flag) in [
                (o.coop_taskrun, "coop-taskrun"),
                (o.defer_taskrun, "defer-taskrun"),
                (o.taskrun_flag, "taskrun-flag"),
            ] {
                if on {
                    usage!(
                        "--{flag} cannot be combined with {}: the kernel refuses it (EINVAL), since with SQPOLL the poller thread, not yours, runs the completion work; drop one of them",
                        via("sqpoll")
                    );
                }
            }
        }
        if o.taskrun_flag && !o.coop_taskrun && !o.defer_taskrun {
            usage!("--taskrun-flag needs --coop-taskrun or --defer-taskrun (the kernel refuses it alone): add one");
        }
        for (on, flag) in [
            (o.sqpoll_cpu.is_some(), "sqpoll-cpu"),
            (o.sqpoll_idle_ms.is_some(), "sqpoll-idle"),
            (o.attach_wq, "attach-wq"),
        ] {
            if on && !o.sqpoll {
                usage!("--{flag} only applies to an SQPOLL ring: add --sqpoll (or --mode iou+k)");
            }
        }
        if let Some(cpu) = o.sqpoll_cpu {
            check_cpu("sqpoll-cpu", cpu)?;
        }
        if o.iopoll && !facts.direct {
            usage!(
                "{} needs --direct: the kernel polls only for O_DIRECT I/O (buffered I/O gets EOPNOTSUPP)",
                via("iopoll")
            );
        }
        if let Some(cpu) = o.completion_thread {
            if o.defer_taskrun || o.single_issuer {
                let flag = if o.defer_taskrun {
                    "defer-taskrun"
                } else {
                    "single-issuer"
                };
                usage!(
                    "--completion-thread cannot be combined with --{flag}: that ring may only be entered by the thread that submits, and the completion thread must enter it to wait; drop one of them"
                );
            }
            check_cpu("completion-thread", cpu)?;
        }
        let entries = facts.iodepth.max(1).next_power_of_two();
        o.check_batches(facts.iodepth)?;
        if a.force_async == Some(0) {
            usage!("--force-async=0: N must be at least 1 (every Nth request); drop the flag to turn it off");
        }
        if let Some(cq) = o.cq_size {
            if cq < entries || cq > CQ_SIZE_MAX {
                usage!(
                    "--cq-size {cq}: must be between the submission ring's {entries} entries (--iodepth rounded up to a power of two) and {CQ_SIZE_MAX}"
                );
            }
        }
        if o.fixed_buffers && facts.iodepth > MAX_REGISTERED_BUFFERS {
            usage!(
                "--fixed-buffers registers one buffer per request in flight, and the kernel takes at most {MAX_REGISTERED_BUFFERS}: lower --iodepth"
            );
        }
        if let Some(text) = &a.iowq_max_workers {
            o.iowq_max_workers = Some(parse_worker_limits(text)?);
        }
        let default_reap = if o.sqpoll {
            ReapMode::Spin
        } else {
            ReapMode::Wait
        };
        let reap = a.reap.unwrap_or(default_reap);
        if reap == ReapMode::Spin && o.completion_thread.is_none() {
            if o.defer_taskrun {
                usage!("--reap spin never sees a completion with --defer-taskrun: its completion work runs only inside io_uring_enter; use --reap wait or peek");
            }
            if o.iopoll && !o.sqpoll {
                usage!(
                    "--reap spin never sees a completion with {} alone: the device is polled only inside io_uring_enter (or by an SQPOLL thread); use --reap wait or peek, or add --sqpoll",
                    via("iopoll")
                );
            }
        }
        if o.completion_thread.is_some() && a.reap.is_some() {
            usage!("--reap applies to the job thread's own reaping; with --completion-thread that thread waits in io_uring_enter: drop --reap");
        }
        // With a completion thread the job thread does not reap at all.
        o.reap = o.completion_thread.is_none().then_some(reap);
        Ok(o)
    }

    /// Refuses batch sizes a queue of `iodepth` requests can never reach.
    fn check_batches(&self, iodepth: u32) -> Result<()> {
        if self.submit_batch > iodepth {
            usage!(
                "--submit-batch {} is larger than --iodepth {iodepth}: a batch can never fill; lower it",
                self.submit_batch
            );
        }
        if self.complete_batch == 0 || self.complete_batch > iodepth {
            usage!(
                "--complete-batch {} must be between 1 and --iodepth {iodepth}",
                self.complete_batch
            );
        }
        Ok(())
    }

    /// Whether a ring must be set up with anything but the defaults.
    pub fn setup_flag_names(&self) -> Vec<&'static str> {
        [
            (self.iopoll, "iopoll"),
            (self.sqpoll, "sqpoll"),
            (self.sqpoll_cpu.is_some(), "sqpoll-cpu"),
            (self.cq_size.is_some(), "cq-size"),
            (self.attach_wq, "attach-wq"),
            (self.coop_taskrun, "coop-taskrun"),
            (self.taskrun_flag, "taskrun-flag"),
            (self.single_issuer, "single-issuer"),
            (self.defer_taskrun, "defer-taskrun"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }

    /// The knobs in effect, as a person would type them (`--sqpoll
    /// --reap spin`); empty for a default ring.
    pub fn describe(&self) -> String {
        describe_config(
            &self
                .config_entries()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }

    /// The knobs as `config` entries of the result, by flag name.
    pub fn config_entries(&self) -> Vec<(&'static str, Value)> {
        vec![
            ("mode", json!(self.mode.map(Mode::name))),
            ("sqpoll", json!(self.sqpoll)),
            ("sqpoll-cpu", json!(self.sqpoll_cpu)),
            ("sqpoll-idle", json!(self.sqpoll_idle_ms)),
            ("attach-wq", json!(self.attach_wq)),
            ("iopoll", json!(self.iopoll)),
            ("coop-taskrun", json!(self.coop_taskrun)),
            ("taskrun-flag", json!(self.taskrun_flag)),
            ("single-issuer", json!(self.single_issuer)),
            ("defer-taskrun", json!(self.defer_taskrun)),
            ("fixed-files", json!(self.fixed_files)),
            ("fixed-buffers", json!(self.fixed_buffers)),
            ("force-async", json!(self.force_async)),
            ("submit-batch", json!(self.submit_batch)),
            ("complete-batch", json!(self.complete_batch)),
            ("reap", json!(self.reap.map(ReapMode::name))),
            ("completion-thread", json!(self.completion_thread)),
            ("register-ring", json!(self.register_ring)),
            ("cq-size", json!(self.cq_size)),
            ("iowq-max-workers", json!(self.iowq_max_workers)),
        ]
    }
}

/// The io_uring knobs of a result's `config` as flags, defaults and the
/// preset name left out (the preset is already expanded into its knobs).
pub fn describe_config(c: &serde_json::Map<String, Value>) -> String {
    let mut parts = Vec::new();
    for (key, default) in UringOptions::default().config_entries() {
        let v = c.get(key).cloned().unwrap_or(Value::Null);
        match &v {
            _ if key == "mode" => {}
            Value::Bool(true) => parts.push(format!("--{key}")),
            Value::Null | Value::Bool(false) => {}
            _ if key == "complete-batch" && v == 1 => {}
            _ if v == default => {}
            _ if key == "force-async" && v == 1 => parts.push("--force-async".to_string()),
            _ if key == "force-async" => parts.push(format!("--force-async={v}")),
            Value::Array(a) => parts.push(format!(
                "--{key} {}",
                a.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            )),
            Value::String(t) => parts.push(format!("--{key} {t}")),
            other => parts.push(format!("--{key} {other}")),
        }
    }
    parts.join(" ")
}

fn check_cpu(flag: &str, cpu: u32) -> Result<()> {
    let allowed = ringlab_core::cpus::allowed_cpus();
    if !allowed.is_empty() && !allowed.contains(&cpu) {
        usage!(
            "--{flag} {cpu}: CPU {cpu} is not available to this process (it may run on {}); pick from those",
            ringlab_core::cpus::format_cpu_list(&allowed)
        );
    }
    Ok(())
}

/// Parses `B,U` (bounded, unbounded io-wq workers; 0 leaves one as is).
fn parse_worker_limits(text: &str) -> Result<[u32; 2]> {
    let parsed = text
        .split_once(',')
        .and_then(|(b, u)| Some([b.trim().parse::<u32>().ok()?, u.trim().parse::<u32>().ok()?]));
    match parsed {
        Some(limits) if limits != [0, 0] => Ok(limits),
        Some(_) => usage!("--iowq-max-workers 0,0 changes nothing: give a limit for bounded (file I/O) or unbounded workers, like 4,0"),
        None => usage!(
            "--iowq-max-workers {text}: write two numbers, bounded and unbounded workers, like 4,4 (0 leaves one as is)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> PlanFacts {
        PlanFacts {
            engine: EngineKind::Uring,
            iodepth: 8,
            direct: true,
        }
    }

    fn resolve(a: UringArgs) -> Result<UringOptions> {
        UringOptions::resolve(&a, &facts())
    }

    #[test]
    fn presets_expand_and_add_to_explicit_knobs() {
        let o = resolve(UringArgs {
            mode: Some(Mode::Enhanced),
            register_ring: true,
            ..Default::default()
        })
        .unwrap();
        assert!(o.fixed_files && o.fixed_buffers && o.register_ring && !o.sqpoll);
        let k = resolve(UringArgs {
            mode: Some(Mode::IouK),
            ..Default::default()
        })
        .unwrap();
        assert!(k.sqpoll);
        assert_eq!(k.reap, Some(ReapMode::Spin), "SQPOLL reaps by spinning");
        let p = resolve(UringArgs {
            mode: Some(Mode::IouP),
            ..Default::default()
        })
        .unwrap();
        assert!(p.iopoll);
        assert_eq!(p.reap, Some(ReapMode::Wait));
    }

    #[test]
    fn refusals_name_the_flags() {
        let cases: Vec<(UringArgs, &str)> = vec![
            (
                UringArgs {
                    defer_taskrun: true,
                    ..Default::default()
                },
                "--single-issuer",
            ),
            (
                UringArgs {
                    sqpoll: true,
                    coop_taskrun: true,
                    ..Default::default()
                },
                "EINVAL",
            ),
            (
                UringArgs {
                    mode: Some(Mode::IouK),
                    single_issuer: true,
                    defer_taskrun: true,
                    ..Default::default()
                },
                "--mode iou+k",
            ),
            (
                UringArgs {
                    attach_wq: true,
                    ..Default::default()
                },
                "add --sqpoll",
            ),
            (
                UringArgs {
                    taskrun_flag: true,
                    ..Default::default()
                },
                "--coop-taskrun or --defer-taskrun",
            ),
            (
                UringArgs {
                    completion_thread: Some(0),
                    single_issuer: true,
                    ..Default::default()
                },
                "--single-issuer",
            ),
            (
                UringArgs {
                    single_issuer: true,
                    defer_taskrun: true,
                    reap: Some(ReapMode::Spin),
                    ..Default::default()
                },
                "never sees a completion",
            ),
            (
                UringArgs {
                    submit_batch: Some(9),
                    ..Default::default()
                },
                "larger than --iodepth 8",
            ),
            (
                UringArgs {
                    cq_size: Some(4),
                    ..Default::default()
                },
                "--cq-size 4",
            ),
            (
                UringArgs {
                    iowq_max_workers: Some("4".into()),
                    ..Default::default()
                },
                "like 4,4",
            ),
            (
                UringArgs {
                    force_async: Some(0),
                    ..Default::default()
                },
                "--force-async=0",
            ),
        ];
        for (args, want) in cases {
            let err = resolve(args.clone()).expect_err(&format!("{args:?} accepted"));
            assert!(err.is::<crate::UsageError>(), "{args:?}: not a usage error");
            assert!(err.to_string().contains(want), "{args:?}: {err}");
        }
    }

    #[test]
    fn iopoll_needs_direct_and_knobs_need_uring() {
        let buffered = PlanFacts {
            direct: false,
            ..facts()
        };
        let err = UringOptions::resolve(
            &UringArgs {
                iopoll: true,
                ..Default::default()
            },
            &buffered,
        )
        .unwrap_err();
        assert!(err.to_string().contains("needs --direct"), "{err}");
        let sync = PlanFacts {
            engine: EngineKind::Sync,
            ..facts()
        };
        let err = UringOptions::resolve(
            &UringArgs {
                fixed_buffers: true,
                ..Default::default()
            },
            &sync,
        )
        .unwrap_err();
        assert!(err
            .to_string()
            .contains("--fixed-buffers is an io_uring knob"));
    }

    #[test]
    fn describe_and_config_use_flag_names() {
        let o = resolve(UringArgs {
            sqpoll: true,
            sqpoll_idle: Some(50),
            force_async: Some(4),
            iowq_max_workers: Some("2, 0".into()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            o.describe(),
            "--sqpoll --sqpoll-idle 50 --force-async=4 --reap spin --iowq-max-workers 2,0"
        );
        let cfg = o.config_entries();
        assert!(cfg
            .iter()
            .any(|(k, v)| *k == "iowq-max-workers" && *v == json!([2, 0])));
        assert_eq!(since("defer-taskrun"), "6.1");
    }
}
