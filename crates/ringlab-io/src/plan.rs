//! The flags of `ringlab io` and the validated plan they resolve to.

use crate::config::IoConfig;
use crate::engine_kind::EngineKind;
use crate::knobs::{PlanFacts, UringArgs, UringOptions};
use crate::workload::Rw;
use anyhow::Result;
use clap::Args;
use ringlab_core::cpus::{allowed_cpus, format_cpu_list, parse_cpu_list};
use ringlab_core::usage;
use ringlab_core::usage_error;
use ringlab_stats::units::{format_bytes, parse_duration, parse_size};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::time::Duration;

/// io_uring's own limit on ring entries (IORING_MAX_ENTRIES); no engine goes
/// deeper than this.
pub const IODEPTH_MAX: u32 = 32_768;
/// More job threads than this is a mistake, not a benchmark.
pub const NUMJOBS_MAX: u32 = 1024;
/// One I/O larger than this is refused (io_uring lengths are 32-bit).
pub const BS_MAX: u64 = 1 << 30;
/// The smallest block that holds a verify header.
pub const VERIFY_BS_MIN: u64 = 64;
/// Runtime when neither --runtime nor --io-size is given.
pub const DEFAULT_RUNTIME: Duration = Duration::from_secs(10);
/// Size of the file ringlab creates when no target is given.
pub const DEFAULT_SIZE: u64 = 1 << 30;
/// Seed of the offset generator when --seed is not given (repeatable runs,
/// as fio's randrepeat=1).
pub const DEFAULT_SEED: u64 = 0x5eed_1ab5;

/// `ringlab io [TARGET]`: one storage workload on one engine.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Workload")]
pub struct IoArgs {
    /// File or block device to run on. Omit it and ringlab creates a file of
    /// --size in --directory (filled with real data, removed afterwards
    /// unless --keep).
    #[arg(value_name = "TARGET")]
    pub target: Option<PathBuf>,

    /// Interface under test: sync (pread/pwrite, one I/O at a time per job),
    /// posixaio (glibc aio_read/aio_write), libaio (Linux AIO, io_submit and
    /// io_getevents; needs --direct) or uring (io_uring, batched submit and
    /// reap, set up by the io_uring options below).
    #[arg(long, visible_alias = "ioengine", value_enum, default_value_t = EngineKind::Uring)]
    pub engine: EngineKind,

    /// I/O pattern: read, write, randread, randwrite, randrw, rw (sequential mix).
    #[arg(long, value_enum, default_value_t = Rw::Randread)]
    pub rw: Rw,

    /// Percentage of reads in randrw and rw.
    #[arg(long, value_name = "PCT", default_value_t = 50)]
    pub rwmixread: u32,

    /// Block size of each I/O: 512, 4k, 64k, 1m (powers of 1024).
    #[arg(long, value_name = "SIZE", default_value = "4k")]
    pub bs: String,

    /// I/Os in flight per job (the sync engine always has one).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub iodepth: u32,

    /// Job threads, each with its own file descriptor and engine.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub numjobs: u32,

    /// How long to run: 500ms, 10s, 1m [default: 10s unless --io-size].
    #[arg(long, value_name = "TIME")]
    pub runtime: Option<String>,

    /// Bytes each job transfers before it stops (the first of --runtime and
    /// --io-size ends the job).
    #[arg(long, value_name = "SIZE")]
    pub io_size: Option<String>,

    /// Size of the created file [default: 1g]; with a TARGET, the part of it
    /// the workload uses (from offset 0).
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,

    /// Open with O_DIRECT (bypass the page cache); --bs must then be a
    /// multiple of the target's logical block size.
    #[arg(long)]
    pub direct: bool,

    /// Pin job threads to these CPUs, one CPU per job in turn: 1 or 0,2-3.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,

    /// Pure CPU work after each completion: N iterations of a dependent
    /// multiply-add, no system calls (fio's thinkcycles).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub thinkcycles: u64,

    /// Seed of the random offsets and the read/write mix (same seed, same
    /// sequence) [default: a fixed seed].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Stamp every written block with its offset and a CRC32C, check every
    /// block read, and read back every block written after the run; a
    /// mismatch fails the run and names the offset.
    #[arg(long)]
    pub verify: bool,

    /// Keep the file ringlab created (its path is printed).
    #[arg(long)]
    pub keep: bool,

    /// Where to create the file when no TARGET is given [default: current
    /// directory].
    #[arg(long, value_name = "DIR")]
    pub directory: Option<PathBuf>,

    /// Allow writing to a block device that is mounted, holds a file-system
    /// signature or a partition table. Destroys its data.
    #[arg(long)]
    pub allow_destructive: bool,

    /// Do not collect kernel evidence (tracepoint counters, interrupts,
    /// helper threads).
    #[arg(long)]
    pub no_kstat: bool,

    #[command(flatten)]
    pub uring: UringArgs,
}

/// The validated, fully resolved configuration of one `ringlab io` run.
#[derive(Debug, Clone)]
pub struct IoPlan {
    pub target: Option<PathBuf>,
    pub engine: EngineKind,
    pub rw: Rw,
    pub rwmixread: u32,
    pub bs: u64,
    pub iodepth: u32,
    pub numjobs: u32,
    pub runtime: Option<Duration>,
    pub io_size: Option<u64>,
    pub size: Option<u64>,
    pub direct: bool,
    pub cpus: Vec<u32>,
    pub thinkcycles: u64,
    pub seed: u64,
    pub verify: bool,
    pub keep: bool,
    pub directory: PathBuf,
    pub allow_destructive: bool,
    pub uring: UringOptions,
    /// The io_uring knobs chosen by default, not given (the default ring).
    pub uring_defaults: Vec<&'static str>,
    /// Collect kernel evidence (not --no-kstat).
    pub kstat: bool,
}

fn size_flag(flag: &str, text: &str) -> Result<u64> {
    parse_size(text).map_err(|e| usage_error(format!("--{flag}: {e}")))
}

impl IoPlan {
    /// Validates flags that do not depend on the target.
    pub fn from_args(args: &IoArgs) -> Result<IoPlan> {
        let bs = size_flag("bs", &args.bs)?;
        if bs == 0 || bs > BS_MAX {
            usage!(
                "--bs {}: a block must be between 1 byte and {}",
                args.bs,
                format_bytes(BS_MAX)
            );
        }
        if args.iodepth == 0 || args.iodepth > IODEPTH_MAX {
            usage!(
                "--iodepth {}: must be between 1 and {IODEPTH_MAX} (io_uring's limit on ring entries)",
                args.iodepth
            );
        }
        if args.numjobs == 0 || args.numjobs > NUMJOBS_MAX {
            usage!(
                "--numjobs {}: must be between 1 and {NUMJOBS_MAX}",
                args.numjobs
            );
        }
        if args.rwmixread > 100 {
            usage!("--rwmixread {}: a percentage from 0 to 100", args.rwmixread);
        }
        let runtime = match &args.runtime {
            Some(t) => {
                let d = parse_duration(t).map_err(|e| usage_error(format!("--runtime: {e}")))?;
                if d.is_zero() {
                    usage!("--runtime {t}: must be longer than zero");
                }
                Some(d)
            }
            None => None,
        };
        let io_size = match &args.io_size {
            Some(t) => {
                let n = size_flag("io-size", t)?;
                if n < bs {
                    usage!("--io-size {t}: smaller than one block (--bs {})", args.bs);
                }
                Some(n)
            }
            None => None,
        };
        let runtime = match (runtime, io_size) {
            (None, None) => Some(DEFAULT_RUNTIME),
            (r, _) => r,
        };
        let size = match &args.size {
            Some(t) => {
                let n = size_flag("size", t)?;
                if n == 0 {
                    usage!("--size {t}: must be larger than zero");
                }
                Some(n)
            }
            None => None,
        };
        if args.verify && bs < VERIFY_BS_MIN {
            usage!(
                "--verify needs blocks of at least {VERIFY_BS_MIN} bytes to hold its header: raise --bs"
            );
        }
        check_buffer_memory(bs, args.iodepth, args.numjobs, args.engine)?;
        let cpus = match &args.cpus {
            Some(list) => parse_cpu_list(list)?,
            None => Vec::new(),
        };
        check_cpus_allowed(&cpus)?;
        let directory = match &args.directory {
            Some(d) => {
                if !d.is_dir() {
                    usage!(
                        "--directory {}: no such directory; create it or pick another",
                        d.display()
                    );
                }
                d.clone()
            }
            None => PathBuf::from("."),
        };
        if args.target.is_some() && args.directory.is_some() {
            usage!("--directory only applies when ringlab creates its own file: drop it, or drop TARGET");
        }
        if args.target.is_some() && args.keep {
            usage!(
                "--keep only applies to a file ringlab creates; a TARGET you name is never removed"
            );
        }
        let resolved = crate::knobs::resolve(
            &args.uring,
            &PlanFacts {
                engine: args.engine,
                iodepth: args.iodepth,
                direct: args.direct,
                kernel_has: ringlab_core::uring::ring::kernel_has,
            },
        )?;
        check_engine_and_pattern(args)?;
        Ok(IoPlan {
            target: args.target.clone(),
            engine: args.engine,
            rw: args.rw,
            rwmixread: args.rwmixread,
            bs,
            iodepth: args.iodepth,
            numjobs: args.numjobs,
            runtime,
            io_size,
            size,
            direct: args.direct,
            cpus,
            thinkcycles: args.thinkcycles,
            seed: args.seed.unwrap_or(DEFAULT_SEED),
            verify: args.verify,
            keep: args.keep,
            directory,
            allow_destructive: args.allow_destructive,
            uring: resolved.options,
            uring_defaults: resolved.defaults,
            kstat: !args.no_kstat,
        })
    }

    /// Whether the workload issues writes.
    pub fn writes(&self) -> bool {
        self.rw.writes(self.rwmixread)
    }

    /// Whether the workload issues reads.
    pub fn reads(&self) -> bool {
        self.rw.reads(self.rwmixread)
    }

    /// The CPU job `job` is pinned to, if any.
    pub fn cpu_of_job(&self, job: u32) -> Option<u32> {
        if self.cpus.is_empty() {
            None
        } else {
            Some(self.cpus[job as usize % self.cpus.len()])
        }
    }

    /// The resolved options keyed by their long flag names; sizes in bytes,
    /// durations in seconds.
    /// The resolved options as a result's typed `config`.
    pub fn config(&self) -> IoConfig {
        IoConfig {
            target: self.target.as_ref().map(|p| p.display().to_string()),
            engine: self.engine,
            rw: self.rw,
            rwmixread: self.rwmixread,
            bs: self.bs,
            iodepth: self.iodepth,
            numjobs: self.numjobs,
            runtime: self.runtime.map(|d| d.as_secs_f64()),
            io_size: self.io_size,
            size: self.size,
            direct: self.direct,
            cpus: self.cpus.clone(),
            thinkcycles: self.thinkcycles,
            seed: self.seed,
            verify: self.verify,
            keep: self.keep,
            directory: self.directory.display().to_string(),
            allow_destructive: self.allow_destructive,
            no_kstat: !self.kstat,
            uring: self.uring.clone(),
            default_knobs: self.uring_defaults.iter().map(|s| s.to_string()).collect(),
        }
    }

    pub fn config_map(&self) -> Map<String, Value> {
        self.config().to_map()
    }
}

fn check_engine_and_pattern(args: &IoArgs) -> Result<()> {
    if args.engine == EngineKind::Libaio && !args.direct {
        usage!("--engine libaio needs --direct: Linux AIO is asynchronous only for O_DIRECT (buffered requests block in io_submit); add --direct, or use --engine uring or posixaio for buffered I/O");
    }
    if args.rw == Rw::Nop {
        if args.engine != EngineKind::Uring {
            usage!(
                "--rw nop is io_uring's no-op request and --engine {} has none: use --engine uring",
                args.engine.name()
            );
        }
        if args.verify {
            usage!("--rw nop moves no data, so there is nothing to --verify: drop --verify");
        }
        if args.target.is_some() {
            usage!("--rw nop touches no file or device: drop TARGET");
        }
    }
    Ok(())
}

/// Refuses buffers (bs x iodepth x numjobs) larger than half the memory
/// available, before anything is laid out.
fn check_buffer_memory(bs: u64, iodepth: u32, numjobs: u32, engine: EngineKind) -> Result<()> {
    let depth = if engine.is_async() { iodepth as u64 } else { 1 };
    let slot =
        bs.div_ceil(crate::buffers::BUFFER_ALIGN as u64) * crate::buffers::BUFFER_ALIGN as u64;
    let need = slot.saturating_mul(depth).saturating_mul(numjobs as u64);
    if let Some(avail) = mem_available() {
        if need > avail / 2 {
            usage!(
                "I/O buffers of --bs x --iodepth x --numjobs need {}, more than half the memory available ({}): lower one of them",
                format_bytes(need),
                format_bytes(avail)
            );
        }
    }
    Ok(())
}

fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn check_cpus_allowed(cpus: &[u32]) -> Result<()> {
    if cpus.is_empty() {
        return Ok(());
    }
    let allowed = allowed_cpus();
    if let Some(bad) = cpus.iter().find(|c| !allowed.contains(c)) {
        usage!(
            "--cpus: CPU {bad} is not available to this process (it may run on {}); pick from those",
            format_cpu_list(&allowed)
        );
    }
    Ok(())
}
