//! The flags of `ringlab io` and the validated plan they resolve to.

use crate::config::IoConfig;
use crate::engine_kind::EngineKind;
use crate::knobs::{PlanFacts, UringArgs, UringOptions};
use crate::workload::{parse_bsrange, parse_bssplit, BlockSizes, Rw};
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
    /// io_getevents; needs --direct), uring (io_uring, batched submit and
    /// reap, set up by the io_uring options below) or null (fio's null
    /// engine: no system call, no file).
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

    /// Block sizes drawn per I/O, uniformly among the multiples of LO from
    /// LO to HI (fio's bsrange); R,W for reads and writes apart. Overrides
    /// --bs; offsets are multiples of the smallest size.
    #[arg(long, value_name = "LO-HI[,LO-HI]")]
    pub bsrange: Option<String>,

    /// Block sizes drawn per I/O in these shares (fio's bssplit):
    /// 4k/50:8k/30:64k/20; a size without /PCT shares what is left; R,W
    /// for reads and writes apart. Overrides --bs; each size is a multiple
    /// of the smallest, and offsets are multiples of it.
    #[arg(long, value_name = "SIZE/PCT:..[,..]")]
    pub bssplit: Option<String>,

    /// fio's blockalign: the boundary random offsets are aligned to.
    /// ringlab's offsets are always multiples of the smallest block size
    /// (fio's default), so only that size is taken (R,W: both); another is
    /// refused.
    #[arg(long, value_name = "SIZE[,SIZE]")]
    pub blockalign: Option<String>,

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

    /// Run this long before measuring (fio's ramp_time): I/O is issued as
    /// in the run, then every counter is reset; --runtime and --io-size
    /// count from there, and kernel evidence is enabled then too.
    #[arg(long, value_name = "TIME")]
    pub ramp_time: Option<String>,

    /// Limit each job to N I/Os per second: N for reads and writes each,
    /// or R,W (either side may be empty). Latency is measured from the
    /// moment each I/O was due, not when it was issued (no coordinated
    /// omission).
    #[arg(long, value_name = "N[,N]")]
    pub rate_iops: Option<String>,

    /// Limit each job's bandwidth: BW per second for reads and writes
    /// each, or R,W (1m = 1 MiB/s); paced per I/O like --rate-iops.
    #[arg(long, value_name = "BW[,BW]")]
    pub rate: Option<String>,

    /// fsync(2) the target after every N writes (the writes in flight
    /// are completed first); 0: never.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fsync: u64,

    /// fdatasync(2) the target after every N writes; 0: never.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fdatasync: u64,

    /// fsync(2) the target once when each job ends (fio's end_fsync),
    /// after its last I/O completed; not part of the measured time, IOPS
    /// or latency (the result counts it in `syncs`).
    #[arg(long)]
    pub end_fsync: bool,

    /// I/Os each job issues before it stops (with --runtime and --io-size,
    /// whichever comes first).
    #[arg(long, value_name = "N")]
    pub number_ios: Option<u64>,

    /// Repeat the byte or I/O budget (--io-size, --number-ios) N times.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub loops: u64,

    /// Cut the run into intervals of TIME: IOPS and bandwidth of each are
    /// printed on stderr as the run goes, and the result holds each with
    /// its mean and p99 latency (`intervals`).
    #[arg(long, value_name = "TIME")]
    pub status_interval: Option<String>,

    /// Write each job's latency log to PREFIX_lat.N.log (N: the job, from
    /// 1), in fio's log format: `time_ms, value_ns, direction, bs, offset, 0`
    /// per I/O, or the mean per --log-avg-msec window.
    #[arg(long, value_name = "PREFIX")]
    pub write_lat_log: Option<String>,

    /// Write each job's bandwidth log (KiB/s per window) to PREFIX_bw.N.log.
    #[arg(long, value_name = "PREFIX")]
    pub write_bw_log: Option<String>,

    /// Write each job's IOPS log (I/Os per second per window) to
    /// PREFIX_iops.N.log.
    #[arg(long, value_name = "PREFIX")]
    pub write_iops_log: Option<String>,

    /// Write each job's completion-latency histogram log to
    /// PREFIX_clat_hist.N.log in fio's format (fio's write_hist_log): per
    /// --log-hist-msec window, the I/Os in each of fio's 1856 latency bins.
    #[arg(long, value_name = "PREFIX")]
    pub write_hist_log: Option<String>,

    /// Window of the histogram log in milliseconds (fio's log_hist_msec;
    /// 0, fio's default, writes no entry).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub log_hist_msec: u64,

    /// Bins of the histogram log merged by 2^N (fio's log_hist_coarseness,
    /// 0 to 6).
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=6))]
    pub log_hist_coarseness: u32,

    /// Window of the logs in milliseconds: the latency log then holds the
    /// mean per window; 0: every I/O in the latency log, 500 ms windows for
    /// bandwidth and IOPS (fio's defaults).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub log_avg_msec: u64,

    /// Where the workload's region starts in the target (fio's offset), a
    /// multiple of --bs; --size then counts from there, and a file ringlab
    /// lays out is OFFSET + --size long.
    #[arg(long, value_name = "SIZE")]
    pub offset: Option<String>,

    /// Size of the created file [default: 1g]; with a TARGET, the part of it
    /// the workload uses (from offset 0).
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,

    /// Open with O_DIRECT (bypass the page cache); --bs must then be a
    /// multiple of the target's logical block size.
    #[arg(long)]
    pub direct: bool,

    /// 1: drop the target's cached pages before the run
    /// (posix_fadvise DONTNEED), so it starts cold; 0: keep them, to measure
    /// a page-cache-hot run (fio's invalidate).
    #[arg(long, value_name = "0|1", default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub invalidate: u8,

    /// Pin job threads to these CPUs, one CPU per job in turn: 1 or 0,2-3.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,

    /// Pure CPU work after each completion: N iterations of a dependent
    /// multiply-add, no system calls (fio's thinkcycles).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub thinkcycles: u64,

    /// Sleep this long after every --thinktime-blocks I/Os issued, once the
    /// I/O in flight has completed (fio's thinktime): 100us, 2ms; a bare
    /// number is microseconds, as in fio. The sleep is in the run time and
    /// in no I/O's latency.
    #[arg(long, value_name = "TIME")]
    pub thinktime: Option<String>,

    /// Of --thinktime, spin this long instead of sleeping (fio's
    /// thinktime_spin; the rest is slept); a bare number is microseconds.
    #[arg(long, value_name = "TIME")]
    pub thinktime_spin: Option<String>,

    /// I/Os issued between two --thinktime pauses (fio's thinktime_blocks).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub thinktime_blocks: u64,

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

    /// Do not time each I/O (fio's gtod_reduce): no clock read per
    /// request, so no latency figures. IOPS and bandwidth are measured as
    /// always; the clock is read once every 64 completions for the run
    /// time, --ramp-time, --status-interval and fio's bandwidth and IOPS
    /// logs, which are so at most 64 I/Os coarse.
    #[arg(long)]
    pub gtod_reduce: bool,

    /// The clock that times each I/O: `cpu` the CPU's time stamp counter
    /// (about 10 ns a read here, against 23 for clock_gettime), used only
    /// where the kernel's own clocksource is tsc; `clock_gettime`
    /// CLOCK_MONOTONIC; `auto` (the default, fio's) the counter where it is
    /// usable, else CLOCK_MONOTONIC. The stage latencies (--evidence
    /// stages) and --completion-thread time with CLOCK_MONOTONIC, the
    /// kernel's clock.
    #[arg(long, value_enum, default_value_t = ClockSourceArg::Auto)]
    pub clocksource: ClockSourceArg,

    /// Do not collect kernel evidence (tracepoint counters, interrupts,
    /// helper threads).
    #[arg(long)]
    pub no_kstat: bool,

    /// How much kernel evidence to collect: `default` (system calls,
    /// io-wq offloads, context switches, IPIs, helper threads, and the
    /// proof of each knob asked for: under 2% of a CPU-bound run), `full`
    /// (every io_uring tracepoint: about 10% of a CPU-bound run at depth 1
    /// on zram) or `stages` (full, and each request's time in each stage,
    /// `ringlab io` on io_uring: about 20% there). Both also slow other
    /// processes' io_uring requests a little while they run.
    #[arg(long, value_name = "LEVEL", default_value = "default")]
    pub evidence: ringlab_kstat::Level,

    /// fio's random map (fio's default, set by `ringlab fio`): a random
    /// pattern touches each block once per pass over the region, and an
    /// I/O that would overlap blocks already done is cut short at them.
    #[arg(long, hide = true)]
    pub random_map: bool,

    /// fio 3.33's rules for its random map (set by `ringlab fio` with
    /// --random-map): with mixed block sizes each direction picks and
    /// marks blocks of its own smallest size, and a job ends when an I/O
    /// cannot be placed (workload/fio_map.rs). `size`: the byte bound came
    /// from fio's size; `io-size`: fio's io_size was given. Without
    /// --random-map (fio's norandommap): the same end rules for fio's
    /// streams (workload/fio_rand.rs), no map.
    #[arg(long, hide = true, value_name = "size|io-size")]
    pub fio_random_map: Option<String>,

    /// fio's fadvise_hint: posix_fadvise on each job's file descriptor
    /// when it is opened (random: POSIX_FADV_RANDOM, sequential:
    /// POSIX_FADV_SEQUENTIAL); `ringlab fio` sets it as fio does.
    #[arg(long, hide = true, value_name = "none|random|sequential")]
    pub fadvise_hint: Option<String>,

    /// How random offsets are drawn (fio's random_distribution): random
    /// (uniform), zipf:THETA, pareto:H, normal:PCT.
    #[arg(long, value_name = "DIST", default_value = "random")]
    pub random_distribution: String,

    /// fio's continue_on_error: none, read, write, io, all (or 0/1): the
    /// I/O errors of these directions whose errno is listed (--ignore-error;
    /// default EIO and EILSEQ, fio's non-fatal ones) are counted and the
    /// job goes on.
    #[arg(long, hide = true, value_name = "CLASS")]
    pub continue_on_error: Option<String>,

    /// fio's ignore_error: READ_ERRNOS,WRITE_ERRNOS[,VERIFY_ERRNOS], each a
    /// ':'-separated list of names (ENOSPC) or numbers.
    #[arg(long, hide = true, value_name = "LISTS")]
    pub ignore_error: Option<String>,

    /// fio's zonemode: none or strided (zonesize bytes in each zone of
    /// zonerange bytes, then zoneskip bytes skipped); zbd is refused.
    #[arg(long, hide = true, value_name = "none|strided")]
    pub zonemode: Option<String>,

    /// fio's zonesize (with --zonemode strided).
    #[arg(long, hide = true, value_name = "SIZE")]
    pub zonesize: Option<String>,

    /// fio's zonerange (default: --zonesize).
    #[arg(long, hide = true, value_name = "SIZE")]
    pub zonerange: Option<String>,

    /// fio's zoneskip (default 0).
    #[arg(long, hide = true, value_name = "SIZE")]
    pub zoneskip: Option<String>,

    /// fio's rw offset modifier (`rw=read:8k`, `rw=randread:4`): for a
    /// sequential pattern the bytes skipped after each I/O (negative: back),
    /// for a random one a new random offset every N I/Os.
    #[arg(long, hide = true, value_name = "N", allow_hyphen_values = true)]
    pub rw_modifier: Option<String>,

    /// fio's pass over the file: every --size bytes a job issues, its
    /// file's cached pages are dropped again (fio re-opens its files, and
    /// invalidate=1 drops their cache, at each pass; `ringlab fio` sets it).
    #[arg(long, hide = true)]
    pub invalidate_each_pass: bool,

    /// fio's bandwidth and IOPS logs: without log_avg_msec one line per
    /// I/O (bandwidth: its bytes over its completion latency), with it
    /// only whole windows, as fio; `ringlab fio` sets it.
    #[arg(long, hide = true)]
    pub log_rates_per_io: bool,

    /// The bytes every write carries, repeated (fio's buffer_pattern:
    /// 0xHEX or 'text'); default: pseudo-random data.
    #[arg(long, value_name = "PATTERN")]
    pub buffer_pattern: Option<String>,

    /// fio's log_offset: the offset column of the latency log (`ringlab
    /// io` always writes it; `ringlab fio` only with log_offset=1).
    #[arg(long, hide = true, value_name = "0|1")]
    pub log_offset: Option<u8>,

    /// fio's verify= and its options, in fio's block format (`ringlab
    /// fio` sets it; see fio_verify.rs for the keys).
    #[arg(long, hide = true, value_name = "SPEC")]
    pub fio_verify: Option<String>,

    /// fio's buffer contents: dedupe_percentage, dedupe_mode, the working
    /// set, buffer_compress_percentage (`ringlab fio` sets it; see
    /// fio_buffers.rs for the keys).
    #[arg(long, hide = true, value_name = "SPEC")]
    pub fio_buffers: Option<String>,

    /// fio's prioclass/prio/cmdprio_*/log_prio (`ringlab fio` sets it; see
    /// fio_prio.rs for the keys).
    #[arg(long, hide = true, value_name = "SPEC")]
    pub fio_prio: Option<String>,

    /// fio's fill_device: write until the file system or device is full
    /// (ENOSPC ends the job without an error); see fill_device.rs.
    #[arg(long, hide = true)]
    pub fill_device: bool,

    /// fio's offset_increment: job N of --numjobs starts at --offset plus
    /// N times this (bytes, or N% of the target); see fill_device.rs.
    #[arg(long, hide = true, value_name = "SIZE|N%")]
    pub offset_increment: Option<String>,
    /// fio 3.33's trims: BLKDISCARD on every target, which a regular file
    /// refuses with ENOTTY (`ringlab fio` sets it; `ringlab io` punches a
    /// hole in a file).
    #[arg(long, hide = true)]
    pub trim_blkdiscard: bool,

    /// fio's fallocate=: how a new file is laid out for a job that reads
    /// nothing (none, posix, keep, native, truncate); see layout.rs.
    #[arg(long, hide = true, value_name = "MODE")]
    pub fallocate: Option<String>,

    #[command(flatten)]
    pub uring: UringArgs,

    #[command(flatten)]
    pub cpuio: crate::cpuio::CpuioArgs,

    #[command(flatten)]
    pub fileops: crate::fileops::FileOpsArgs,

    #[command(flatten)]
    pub shard: ringlab_core::shard::ShardArgs,

    /// With --shard and a TARGET: `split` gives each shard its own N-th of
    /// the region (disjoint blocks, as separate clients of one device);
    /// `shared`: every shard roams the whole region.
    #[arg(long, value_name = "split|shared", default_value = "split", value_parser = ["split", "shared"], help_heading = "Shards (one run over many processes or hosts)")]
    pub shard_region: String,
}

/// The validated, fully resolved configuration of one `ringlab io` run.
#[derive(Debug, Clone)]
pub struct IoPlan {
    pub target: Option<PathBuf>,
    pub engine: EngineKind,
    pub rw: Rw,
    pub rwmixread: u32,
    /// The smallest block size: the unit of offsets (fio's blockalign).
    pub bs: u64,
    /// The largest block size: the size of each I/O buffer.
    pub bs_max: u64,
    /// How the length of each read and each write is chosen (--bs,
    /// --bsrange, --bssplit).
    pub block_sizes: [BlockSizes; 2],
    pub iodepth: u32,
    pub numjobs: u32,
    pub runtime: Option<Duration>,
    pub io_size: Option<u64>,
    pub size: Option<u64>,
    /// --ramp-time: issued but not measured.
    pub ramp: Option<Duration>,
    /// --rate-iops/--rate: nanoseconds between two I/Os of a job, reads
    /// and writes (per byte with `pace_per_byte`); `None`: unpaced.
    pub pace_ns: [Option<f64>; 2],
    /// --rate with a variable block size: `pace_ns` is per byte moved.
    pub pace_per_byte: bool,
    /// fio's rate_process, rate_ignore_thinktime and flow (set by
    /// `ringlab fio` only).
    pub regulation: crate::regulate::Regulation,
    /// --end-fsync: one fsync when each job ends.
    pub end_fsync: bool,
    /// --fsync/--fdatasync: every N writes; `data`: fdatasync.
    pub sync_every: Option<SyncEvery>,
    pub number_ios: Option<u64>,
    pub loops: u64,
    /// --status-interval.
    pub status_interval: Option<Duration>,
    /// --write-lat-log, --write-bw-log, --write-iops-log.
    pub logs: Option<LogPlan>,
    /// --offset in bytes (a multiple of bs).
    pub offset: u64,
    pub direct: bool,
    /// Drop the target's cached pages before the run (--invalidate 1).
    pub invalidate: bool,
    pub cpus: Vec<u32>,
    pub thinkcycles: u64,
    /// --gtod-reduce: no clock read per I/O, no latency figures.
    pub gtod_reduce: bool,
    /// The clock each job times its I/O with ([`Plan::job_clock`]).
    pub clocksource: ringlab_core::clock::Source,
    /// --thinktime: the pause, and every how many I/Os.
    pub thinktime: Option<ThinkTime>,
    /// --engine cpuio: the load (its think time is `thinktime`).
    pub cpuio: Option<crate::cpuio::CpuioPlan>,
    /// --engine filecreate, filestat, filedelete: each job's files.
    pub files: Option<crate::fileops::FilePlan>,
    pub seed: u64,
    pub verify: bool,
    pub keep: bool,
    pub directory: PathBuf,
    pub allow_destructive: bool,
    pub uring: UringOptions,
    /// The io_uring knobs chosen by default, not given (the default ring).
    pub uring_defaults: Vec<&'static str>,
    /// IOSQE_ASYNC is chosen once the target is open, by whether it takes
    /// non-blocking I/O ([`crate::knobs::auto_force_async`]); false with
    /// `--force-async` given, with `--mode iou`, and for `ringlab fio`
    /// (fio's io_uring engine sets IOSQE_ASYNC only with force_async).
    pub force_async_auto: bool,
    /// Collect kernel evidence (not --no-kstat).
    pub kstat: bool,
    /// How much (--evidence).
    pub evidence: ringlab_kstat::Level,
    /// --shard, --start-at, --histograms.
    pub shards: ringlab_core::shard::ShardPlan,
    /// Each shard uses its own part of a named TARGET's region
    /// (--shard-region split); a created file is each shard's own anyway.
    pub shard_region_split: bool,
    /// fio's random map: each block once per pass (--random-map).
    pub random_map: bool,
    /// fio's trims: BLKDISCARD whatever the target (--trim-blkdiscard).
    pub trim_blkdiscard: bool,
    /// fio's failed job (set by `ringlab fio`): an I/O error ends the job
    /// thread alone, with its figures and the error in a warning
    /// (`job_error`), instead of failing the run.
    pub fio_job_errors: bool,
    /// fio's create_on_open=1 on a job that reads (set by `ringlab fio`):
    /// the file is used as it is, created empty when missing, and --size is
    /// its region (a read past its end gets nothing).
    pub create_on_open: bool,
    /// fio's fallocate= for a new file of a job that reads nothing.
    pub fallocate: Option<crate::layout::Fallocate>,
    /// fio 3.33's rules for the random map (--fio-random-map).
    pub fio_map: Option<crate::workload::FioPasses>,
    /// fio's random streams and seeds (set by `ringlab fio`): a random
    /// job draws its I/O as fio does (workload/fio_rand.rs).
    pub fio_rand: Option<crate::workload::FioRand>,
    /// posix_fadvise advice given on each job's descriptor at open.
    pub fadvise: Option<i32>,
    /// Drop the cache again at each pass over the region (fio's re-open).
    pub invalidate_each_pass: bool,
    /// --random-distribution.
    pub distribution: crate::workload::Distribution,
    /// --buffer-pattern, as bytes.
    pub buffer_pattern: Option<Vec<u8>>,
    /// fio's rw modifier: blocks skipped after each sequential I/O, or the
    /// I/Os per random offset.
    pub seq_skip_blocks: i64,
    pub rand_run: u64,
    /// fio's blockalign in blocks of `bs` (1: every block).
    pub align_blocks: u64,
    /// fio's random_distribution=zoned / zoned_abs.
    pub zoned: Option<crate::zones::ZonedSplit>,
    /// fio's zonemode=strided.
    pub strided: Option<crate::zones::Strided>,
    /// fio's continue_on_error with ignore_error: per direction (read,
    /// write) the errnos a job counts and goes on after.
    pub continue_errnos: [Vec<i32>; 2],
    /// fio's verify= (`--fio-verify`).
    pub fio_verify: Option<crate::fio_verify::FioVerify>,
    /// fio's dedupe and compress buffer contents (`--fio-buffers`).
    pub fio_buffers: Option<crate::fio_buffers::FioBuffers>,
    /// fio's per-request priorities (`--fio-prio`).
    pub fio_prio: Option<crate::fio_prio::PrioPlan>,
    /// fio's fill_device (`--fill-device`).
    pub fill_device: bool,
    /// fio's offset_increment (`--offset-increment`).
    pub offset_increment: Option<Increment>,
}

/// fio's logs: the prefixes given and the averaging window.
#[derive(Debug, Clone)]
pub struct LogPlan {
    pub lat: Option<String>,
    pub bw: Option<String>,
    pub iops: Option<String>,
    pub avg_msec: u64,
    /// Write the offset column (fio's log_offset; ringlab io: always).
    pub offset: bool,
    /// fio's bandwidth and IOPS logs (`ringlab fio`): a line per I/O
    /// without log_avg_msec; with it only whole windows (fio writes them at
    /// each window's end, so the run's last, partial window is not logged;
    /// `ringlab io` writes that one too).
    pub fio_rates: bool,
    /// --write-hist-log, its window and coarseness.
    pub hist: Option<String>,
    pub hist_msec: u64,
    pub hist_coarseness: u32,
    /// Added to the job number in the logs' names: fio numbers them by
    /// the job's thread number in the whole job file (`ringlab fio` sets
    /// it; 0 for `ringlab io`).
    pub job_base: u32,
}

/// --thinktime: after every `blocks` I/Os issued, wait for the I/O in
/// flight, spin `spin_ns`, then sleep the rest of `total_ns`.
#[derive(Debug, Clone, Copy)]
pub struct ThinkTime {
    pub total_ns: u64,
    pub spin_ns: u64,
    pub blocks: u64,
}

/// fio's think times: a bare number is microseconds.
fn micros_flag(flag: &str, text: &str) -> Result<Duration> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        let us: u64 = t
            .parse()
            .map_err(|_| usage_error(format!("--{flag} {text}: too large")))?;
        return bounded(flag, text, Duration::from_micros(us));
    }
    let d = parse_duration(t).map_err(|e| usage_error(format!("--{flag}: {e}")))?;
    bounded(flag, text, d)
}

/// The longest time any option may give: a year (times are kept in u64
/// nanoseconds, and sums of them must not overflow).
const DURATION_MAX: Duration = Duration::from_secs(365 * 24 * 3600);

/// Refuses a time longer than [`DURATION_MAX`] instead of letting it wrap.
fn bounded(flag: &str, text: &str, d: Duration) -> Result<Duration> {
    if d > DURATION_MAX {
        usage!("--{flag} {text}: longer than a year, the most ringlab takes (a larger figure would overflow its nanosecond clock)");
    }
    Ok(d)
}

/// --fsync N or --fdatasync N.
#[derive(Debug, Clone, Copy)]
pub struct SyncEvery {
    pub writes: u64,
    pub data: bool,
}

/// `N`, `R,W`, `,W` or `R,`: per direction (read, write); one value is both.
fn per_direction(
    flag: &str,
    text: &str,
    parse: impl Fn(&str) -> Result<f64>,
) -> Result<[Option<f64>; 2]> {
    let one = |t: &str| -> Result<Option<f64>> {
        let t = t.trim();
        if t.is_empty() {
            return Ok(None);
        }
        let v = parse(t)?;
        if !v.is_finite() || v <= 0.0 {
            usage!("--{flag} {text}: a limit must be larger than zero (leave a side empty for no limit)");
        }
        Ok(Some(v))
    };
    let both = match text.split_once(',') {
        Some((r, w)) => [one(r)?, one(w)?],
        None => {
            let v = one(text)?;
            [v, v]
        }
    };
    if both == [None, None] {
        usage!("--{flag} '{text}': no limit given; write N, or R,W with one side empty for no limit on it (or drop --{flag})");
    }
    Ok(both)
}

/// fio's blockalign in blocks of the smallest size `bs`: one value for
/// reads and writes (fio's `R,W`), a multiple of `bs`.
fn blockalign(args: &IoArgs, bs: u64) -> Result<u64> {
    let Some(text) = &args.blockalign else {
        return Ok(1);
    };
    let mut align = None;
    for part in text
        .split(',')
        .take(2)
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let a = size_flag("blockalign", part)?;
        if a == 0 || a % bs != 0 {
            usage!(
                "--blockalign {text}: {a} bytes is not a multiple of the smallest block size ({}); ringlab's offsets are whole blocks of it, so it places I/O at multiples of that size and its multiples only",
                format_bytes(bs)
            );
        }
        if align.is_some_and(|x| x != a) {
            usage!("--blockalign {text}: reads and writes aligned apart is not supported by ringlab; give one alignment");
        }
        align = Some(a);
    }
    Ok(align.unwrap_or(bs) / bs)
}

/// fio's zonemode=strided and its sizes; zbd is refused here (the fio
/// personality names the device's zoned model).
fn strided(args: &IoArgs, bs: u64) -> Result<Option<crate::zones::Strided>> {
    let mode = args.zonemode.as_deref().map(str::trim);
    let size = args
        .zonesize
        .as_deref()
        .map(|t| size_flag("zonesize", t))
        .transpose()?;
    match (mode, size) {
        (None | Some("none"), None) => Ok(None),
        (Some("none"), Some(_)) => {
            usage!("--zonemode none and --zonesize are not compatible (fio refuses them too)")
        }
        (None | Some("strided"), Some(size)) => {
            let range = args
                .zonerange
                .as_deref()
                .map(|t| size_flag("zonerange", t))
                .transpose()?;
            let skip = args
                .zoneskip
                .as_deref()
                .map(|t| size_flag("zoneskip", t))
                .transpose()?;
            crate::zones::Strided::new(size, range, skip, bs)
                .map(Some)
                .map_err(|e| usage_error(format!("--zonemode strided: {e}")))
        }
        (Some("strided"), None) => {
            usage!("--zonemode strided needs --zonesize (fio: '--zonesize must be specified when using --zonemode=strided')")
        }
        (Some(m), _) => usage!(
            "--zonemode {m}: ringlab has no equivalent of it: its zone modes are none and strided (zbd needs a zoned block device and fio's write-pointer bookkeeping; 'ringlab fio' names the device's zoned model)"
        ),
    }
}

/// The files of fio's file engines (filecreate, filestat, filedelete), or
/// a refusal of what ringlab does not do with them as fio does; and
/// ftruncate's refusals.
fn file_plan(
    args: &IoArgs,
    bs: u64,
    bs_max: u64,
    runtime: Option<Duration>,
) -> Result<Option<crate::fileops::FilePlan>> {
    let engine = args.engine.name();
    if args.engine == EngineKind::Ftruncate && (args.verify || args.fio_verify.is_some()) {
        usage!("--engine ftruncate moves no data, so there is nothing to verify: drop --verify");
    }
    let size = match &args.size {
        Some(t) => Some(size_flag("size", t)?),
        None => None,
    };
    // Per loop.
    let io_size = match &args.io_size {
        Some(t) => Some(size_flag("io-size", t)?),
        None => None,
    };
    let Some(files) = crate::fileops::resolve(
        &args.fileops,
        &crate::fileops::Facts {
            engine: args.engine,
            target: args.target.as_deref(),
            size,
            bs,
        },
    )?
    else {
        return Ok(None);
    };
    // What fio does with these engines that ringlab has not built: each
    // refused with its reason rather than run as other work.
    if args.rw.trims() || args.rw == Rw::Nop {
        usage!("--engine {engine} --rw {}: fio's file engines count reads and writes; ringlab has not compared trims or NOPs with fio's: use read, write, randread, randwrite, rw or randrw", args.rw.name());
    }
    if bs != bs_max {
        usage!("--engine {engine}: several block sizes (--bsrange, --bssplit) over several files are not supported by ringlab; give one --bs");
    }
    let refuse = |given: bool, what: &str, why: &str| -> Result<()> {
        if given {
            usage!("--engine {engine} with {what}: {why}");
        }
        Ok(())
    };
    refuse(
        args.ramp_time.is_some(),
        "--ramp-time",
        "fio drops the file operations timed within the ramp with every other figure; ringlab has not built that: drop --ramp-time",
    )?;
    refuse(
        args.status_interval.is_some(),
        "--status-interval",
        "the intervals would time the I/Os, which these engines count but do not do (fio times only the file operations): drop it",
    )?;
    refuse(
        args.write_lat_log.is_some()
            || args.write_bw_log.is_some()
            || args.write_iops_log.is_some()
            || args.write_hist_log.is_some(),
        "fio's logs",
        "fio logs only the file operations' times here (in its clat log); ringlab's logs would hold the I/Os, which are not done: drop the log options",
    )?;
    refuse(
        args.verify || args.fio_verify.is_some(),
        "--verify",
        "no data moves, so there is nothing to verify: drop it",
    )?;
    refuse(
        args.offset.is_some() || args.offset_increment.is_some(),
        "--offset or --offset-increment",
        "each file is used from its start in ringlab: drop them",
    )?;
    refuse(
        args.fill_device,
        "--fill-device",
        "no data is written, so nothing fills: drop it",
    )?;
    // A pass cut short by --io-size (or --number-ios) and started again:
    // fio's next loop walks its files from where it stopped, which ringlab
    // has not built.
    let per_pass = files.region() / bs;
    let short = io_size.is_some_and(|n| n < files.region())
        || args.number_ios.is_some_and(|n| n < per_pass);
    let again =
        args.loops > 1 || (runtime.is_some() && io_size.is_none() && args.number_ios.is_none());
    if short && again {
        usage!("--engine {engine}: a pass over the files cut short by --io-size or --number-ios, then started again (--loops, or a time-based run): not supported by ringlab; give --io-size {} (every file once, --nrfiles x --size) or one pass", files.region());
    }
    if args.engine == EngineKind::Filedelete {
        if again {
            usage!("--engine filedelete with --loops {} or a time-based run (--runtime without --io-size): each pass unlinks the files again, and fio's second unlink fails its job (ENOENT); make one pass", args.loops);
        }
        if matches!(files.naming, crate::fileops::FileNaming::Shared(_)) && args.numjobs > 1 {
            usage!("--engine filedelete: {} jobs unlinking one file ({}), and fio's second unlink fails (ENOENT): give each job its files with --nrfiles, or run one job", args.numjobs, files.describe());
        }
    }
    Ok(Some(files))
}

fn size_flag(flag: &str, text: &str) -> Result<u64> {
    parse_size(text).map_err(|e| usage_error(format!("--{flag}: {e}")))
}

impl IoPlan {
    /// Validates flags that do not depend on the target.
    pub fn from_args(args: &IoArgs) -> Result<IoPlan> {
        let (block_sizes, bs, bs_max) = block_sizes(args)?;
        let align_blocks = blockalign(args, bs)?;
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
                let d = bounded("runtime", t, d)?;
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
        if args.loops == 0 {
            usage!("--loops 0: must be at least 1");
        }
        if args.loops > 1 && io_size.is_none() && args.number_ios.is_none() {
            usage!("--loops {} repeats the byte or I/O budget of a job: add --io-size or --number-ios (a run bounded by --runtime alone has none to repeat)", args.loops);
        }
        if args.number_ios == Some(0) {
            usage!("--number-ios 0: must be at least 1");
        }
        let io_size = io_size.map(|n| n.saturating_mul(args.loops));
        let number_ios = args.number_ios.map(|n| n.saturating_mul(args.loops));
        let ramp = match &args.ramp_time {
            Some(t) => {
                let d = parse_duration(t).map_err(|e| usage_error(format!("--ramp-time: {e}")))?;
                let d = bounded("ramp-time", t, d)?;
                (!d.is_zero()).then_some(d)
            }
            None => None,
        };
        let mut pace_ns = [None, None];
        let mut pace_per_byte = false;
        if let Some(t) = &args.rate_iops {
            let iops = per_direction("rate-iops", t, |v| {
                v.parse::<f64>().map_err(|_| {
                    usage_error(format!("--rate-iops {t}: not a number of I/Os per second"))
                })
            })?;
            pace_ns = iops.map(|r| r.map(|r| 1e9 / r));
        }
        if let Some(t) = &args.rate {
            if args.rate_iops.is_some() {
                usage!("--rate and --rate-iops both limit the pace: give one");
            }
            let bw = per_direction("rate", t, |v| Ok(size_flag("rate", v)? as f64))?;
            if bs == bs_max {
                pace_ns = bw.map(|r| r.map(|r| bs as f64 * 1e9 / r));
            } else {
                // Sizes vary: each I/O is due after the bytes before it.
                pace_ns = bw.map(|r| r.map(|r| 1e9 / r));
                pace_per_byte = true;
            }
        }
        if pace_ns.iter().any(|p| p.is_some()) && args.rw == Rw::Nop {
            usage!("--rate-iops and --rate pace reads and writes; --rw nop has neither");
        }
        let sync_every = match (args.fsync, args.fdatasync) {
            (0, 0) => None,
            (n, 0) => Some(SyncEvery {
                writes: n,
                data: false,
            }),
            (0, n) => Some(SyncEvery {
                writes: n,
                data: true,
            }),
            _ => usage!("--fsync and --fdatasync both sync after writes: give one"),
        };
        if sync_every.is_some() && !args.rw.writes(args.rwmixread) {
            usage!("--fsync/--fdatasync sync after writes, and --rw {} issues none: drop it or use a write workload", args.rw.name());
        }
        let status_interval = match &args.status_interval {
            Some(t) => {
                let d = parse_duration(t)
                    .map_err(|e| usage_error(format!("--status-interval: {e}")))?;
                let d = bounded("status-interval", t, d)?;
                if d < Duration::from_millis(10) {
                    usage!("--status-interval {t}: at least 10ms");
                }
                if args.rw == Rw::Nop {
                    usage!("--status-interval series reads and writes; --rw nop has neither");
                }
                Some(d)
            }
            None => None,
        };
        let logs = (args.write_lat_log.is_some()
            || args.write_bw_log.is_some()
            || args.write_iops_log.is_some()
            || args.write_hist_log.is_some())
        .then(|| LogPlan {
            hist: args.write_hist_log.clone(),
            fio_rates: args.log_rates_per_io,
            hist_msec: args.log_hist_msec,
            hist_coarseness: args.log_hist_coarseness,
            lat: args.write_lat_log.clone(),
            bw: args.write_bw_log.clone(),
            iops: args.write_iops_log.clone(),
            avg_msec: args.log_avg_msec,
            offset: args.log_offset != Some(0),
            job_base: 0,
        });
        if logs.is_some() && args.rw == Rw::Nop {
            usage!("fio's logs hold reads and writes; --rw nop has neither");
        }
        if args.clocksource == ClockSourceArg::Cpu {
            if let Err(why) = ringlab_core::clock::tsc_rate() {
                usage!("--clocksource cpu: the time stamp counter cannot time this run: {why}; use --clocksource clock_gettime (or auto)");
            }
            if args.evidence == ringlab_kstat::Level::Stages && !args.no_kstat {
                usage!("--clocksource cpu cannot time the stage latencies (--evidence stages): they join ringlab's stamps with the kernel's CLOCK_MONOTONIC timestamps; drop one of them");
            }
        }
        if args.gtod_reduce && args.write_hist_log.is_some() {
            usage!("--write-hist-log logs the latency of each I/O, and --gtod-reduce times none: drop one of them");
        }
        if args.gtod_reduce && args.write_lat_log.is_some() {
            usage!("--write-lat-log logs the latency of each I/O, and --gtod-reduce times none: drop one of them");
        }
        let offset = match &args.offset {
            Some(t) => {
                let o = size_flag("offset", t)?;
                // fio places I/O at offset + k * bs, whatever the offset;
                // ringlab's own --verify counts whole blocks from 0.
                if o % bs != 0 && args.verify {
                    usage!("--offset {t}: not a multiple of --bs {} (--verify counts whole blocks from the start of the target)", args.bs);
                }
                if o % 512 != 0 {
                    usage!("--offset {t}: not a multiple of 512 bytes (a sector), let alone a multiple of --bs {}: I/O goes at --offset plus whole blocks of --bs, as in fio", args.bs);
                }
                if o > 0 && args.rw == Rw::Nop {
                    usage!("--offset places I/O in a target; --rw nop has none");
                }
                o
            }
            None => 0,
        };
        let files = file_plan(args, bs, bs_max, runtime)?;
        // A file engine's job without a bound makes one pass over its
        // files, as fio's (size bytes).
        let io_size = match (&files, io_size, runtime, args.number_ios) {
            (Some(f), None, None, None) => Some(f.region()),
            _ => io_size,
        };
        let runtime = match (runtime, io_size) {
            // fio's fill_device ends at ENOSPC (or after one pass).
            (None, None) if number_ios.is_none() && !args.fill_device => Some(DEFAULT_RUNTIME),
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
        let thinktime = match &args.thinktime {
            Some(t) => {
                let total = micros_flag("thinktime", t)?;
                let spin = match &args.thinktime_spin {
                    Some(s) => micros_flag("thinktime-spin", s)?,
                    None => Duration::ZERO,
                };
                if spin > total {
                    usage!("--thinktime-spin is part of --thinktime and cannot be longer than it");
                }
                if args.thinktime_blocks == 0 {
                    usage!("--thinktime-blocks 0: must be at least 1");
                }
                if args.rw == Rw::Nop {
                    usage!("--thinktime pauses between reads and writes; --rw nop has neither");
                }
                (!total.is_zero()).then_some(ThinkTime {
                    total_ns: total.as_nanos() as u64,
                    spin_ns: spin.as_nanos() as u64,
                    blocks: args.thinktime_blocks,
                })
            }
            None => {
                if args.thinktime_spin.is_some() || args.thinktime_blocks != 1 {
                    usage!("--thinktime-spin and --thinktime-blocks shape --thinktime: add --thinktime TIME");
                }
                None
            }
        };
        // fio's cpuio sets the job's think time from the load, over any
        // thinktime given (engines/cpu.c).
        let cpuio = crate::cpuio::resolve(&args.cpuio, args.engine)?;
        let thinktime = match &cpuio {
            Some(c) => c.think_after_each_us().map(|us| ThinkTime {
                total_ns: us * 1000,
                spin_ns: 0,
                blocks: 1,
            }),
            None => thinktime,
        };
        if args.verify && args.offset_increment.is_some() {
            usage!("--verify gives each job its own slice of the region, and --offset-increment places each job: drop one of them (fio's verify= checks blocks wherever they are)");
        }
        if args.fill_device && (args.rw == Rw::Nop || args.target.is_none()) {
            usage!("--fill-device writes a TARGET until its file system or device is full: name the file or device, with a write workload");
        }
        if args.verify && bs != bs_max {
            usage!("--verify checks blocks of one size, and --bsrange/--bssplit vary it ({}): drop one of them", block_sizes[0].describe());
        }
        if args.end_fsync && !args.rw.writes(args.rwmixread) {
            usage!("--end-fsync syncs the writes of a job, and --rw {} issues none: drop it or use a write workload", args.rw.name());
        }
        if args.verify && bs < VERIFY_BS_MIN {
            usage!(
                "--verify needs blocks of at least {VERIFY_BS_MIN} bytes to hold its header: raise --bs"
            );
        }
        check_buffer_memory(bs_max, args.iodepth, args.numjobs, args.engine)?;
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
        let shards = args.shard.plan()?;
        if args.shard_region != "split" && shards.shard.is_none() {
            usage!(
                "--shard-region {} says how shards share a target: add --shard",
                args.shard_region
            );
        }
        Ok(IoPlan {
            target: args.target.clone(),
            engine: args.engine,
            rw: args.rw,
            rwmixread: args.rwmixread,
            bs,
            bs_max,
            block_sizes,
            iodepth: args.iodepth,
            numjobs: args.numjobs,
            runtime,
            io_size,
            size,
            ramp,
            pace_ns,
            pace_per_byte,
            regulation: Default::default(),
            end_fsync: args.end_fsync,
            sync_every,
            number_ios,
            loops: args.loops,
            status_interval,
            logs,
            offset,
            direct: args.direct,
            invalidate: args.invalidate == 1,
            cpus,
            thinkcycles: args.thinkcycles,
            gtod_reduce: args.gtod_reduce,
            clocksource: args.clocksource.source(),
            thinktime,
            cpuio,
            files,
            seed: args.seed.unwrap_or(DEFAULT_SEED),
            verify: args.verify,
            keep: args.keep,
            directory,
            allow_destructive: args.allow_destructive,
            uring: resolved.options,
            uring_defaults: resolved.defaults,
            force_async_auto: resolved.force_async_auto,
            kstat: !args.no_kstat,
            evidence: args.evidence,
            shards,
            shard_region_split: args.shard_region == "split" && args.target.is_some(),
            // fio: a blockalign other than the smallest size turns the
            // random map off (init.c).
            random_map: args.random_map && align_blocks == 1,
            trim_blkdiscard: args.trim_blkdiscard,
            fio_job_errors: false,
            create_on_open: false,
            fallocate: match &args.fallocate {
                Some(m) => Some(crate::layout::Fallocate::parse(m).map_err(usage_error)?),
                None => None,
            },
            fio_map: fio_map_passes(args, io_size)?,
            fio_rand: None,
            invalidate_each_pass: args.invalidate_each_pass && args.invalidate == 1,
            seq_skip_blocks: rw_skip(args, bs)?,
            fio_verify: fio_verify_plan(args, bs, bs_max)?,
            fill_device: args.fill_device,
            offset_increment: increment(args, bs)?,
            fio_prio: match &args.fio_prio {
                Some(spec) => {
                    let p = crate::fio_prio::PrioPlan::parse(spec)
                        .map_err(|e| usage_error(format!("--fio-prio {spec}: {e}")))?;
                    let cmd = p.dirs.iter().any(|d| d.pct > 0 || !d.split.is_empty());
                    if cmd && !matches!(args.engine, EngineKind::Uring | EngineKind::Libaio) {
                        usage!("cmdprio_percentage/cmdprio_bssplit are options of fio's io_uring and libaio engines (fio refuses them with {}): use ioengine=io_uring or libaio", args.engine.name());
                    }
                    Some(p)
                }
                None => None,
            },
            fio_buffers: match &args.fio_buffers {
                Some(spec) => Some(
                    crate::fio_buffers::FioBuffers::parse(spec)
                        .map_err(|e| usage_error(format!("--fio-buffers {spec}: {e}")))?,
                ),
                None => None,
            },
            buffer_pattern: match &args.buffer_pattern {
                Some(p) if args.verify => {
                    usage!("--buffer-pattern {p}: --verify writes its own header and payload in every block: drop one of them")
                }
                Some(p) => Some(parse_pattern(p)?),
                None => None,
            },
            rand_run: match (&args.rw_modifier, args.rw.is_random()) {
                (Some(m), true) => m.trim().parse().map_err(|_| {
                    usage_error(format!(
                        "rw modifier {m}: a random pattern takes a number of I/Os (randread:N)"
                    ))
                })?,
                _ => 0,
            },
            distribution: match crate::zones::ZonedSplit::parse(&args.random_distribution) {
                Some(_) => crate::workload::Distribution::Uniform,
                None => crate::workload::Distribution::parse(&args.random_distribution)
                    .map_err(|e| usage_error(format!("--random-distribution {e}")))?,
            },
            zoned: crate::zones::ZonedSplit::parse(&args.random_distribution)
                .transpose()
                .map_err(|e| usage_error(format!("--random-distribution {e}")))?,
            strided: strided(args, bs)?,
            continue_errnos: crate::continue_on_error::errnos(
                args.continue_on_error.as_deref(),
                args.ignore_error.as_deref(),
            )
            .map_err(usage_error)?,
            align_blocks,
            fadvise: match args.fadvise_hint.as_deref() {
                None | Some("none") => None,
                Some("random") => Some(libc::POSIX_FADV_RANDOM),
                Some("sequential") => Some(libc::POSIX_FADV_SEQUENTIAL),
                Some(other) => usage!("--fadvise-hint {other}: none, random or sequential"),
            },
        })
    }

    /// The per-op figures that prove the ring knobs the user gave (not
    /// those of the default ring), for the kernel evidence to count.
    pub fn knob_proofs(&self) -> Vec<&'static str> {
        ringlab_core::uring::knobs::given_proofs(&self.uring, &self.uring_defaults)
    }

    /// The clock a job times its I/O with: CLOCK_MONOTONIC where its stamps
    /// meet the kernel's (the stage latencies, a completion thread's
    /// stamps), else --clocksource.
    pub fn job_clock(&self) -> ringlab_core::clock::Source {
        if self.stage_latencies() || self.uring.completion_thread.is_some() {
            ringlab_core::clock::Source::Mono
        } else {
            self.clocksource
        }
    }

    /// Whether the run logs each request for the stage latencies:
    /// `--evidence stages` on io_uring with one job (the kernel's events are
    /// joined by user_data, which is per ring).
    pub fn stage_latencies(&self) -> bool {
        self.kstat
            && self.evidence == ringlab_kstat::Level::Stages
            && self.engine == crate::engine_kind::EngineKind::Uring
            && self.numjobs == 1
            && self.rw != crate::workload::Rw::Nop
    }

    /// Whether the block size varies (--bsrange, --bssplit).
    pub fn variable_bs(&self) -> bool {
        self.bs != self.bs_max
    }

    /// The block sizes in fio's syntax: `4k`, `4k-64k`, `4k/50:64k/50`,
    /// and `R,W` when reads and writes differ.
    pub fn sizes_text(&self) -> String {
        let [r, w] = &self.block_sizes;
        if r == w || !self.writes() {
            r.describe()
        } else if !self.reads() {
            w.describe()
        } else {
            format!("{},{}", r.describe(), w.describe())
        }
    }

    /// The mean length of reads and of writes, in bytes.
    pub fn mean_bs(&self) -> [f64; 2] {
        self.block_sizes.clone().map(|b| match b {
            BlockSizes::Fixed(s) => s as f64,
            BlockSizes::Range { lo, hi } => (lo + hi) as f64 / 2.0,
            BlockSizes::Split(v) => {
                let mut prev = 0;
                v.iter()
                    .map(|&(s, cum)| {
                        let p = cum - prev;
                        prev = cum;
                        s as f64 * p as f64 / 100.0
                    })
                    .sum()
            }
        })
    }

    /// The mean length of an I/O of the workload's mix, in bytes.
    pub fn mean_io_bytes(&self) -> f64 {
        let [r, w] = self.mean_bs();
        let read_share = match (self.reads(), self.writes()) {
            (true, false) => 1.0,
            (false, _) => 0.0,
            (true, true) => self.rwmixread as f64 / 100.0,
        };
        r * read_share + w * (1.0 - read_share)
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
            bsrange: match &self.block_sizes {
                [BlockSizes::Range { .. }, _] | [_, BlockSizes::Range { .. }] => {
                    Some(self.sizes_text())
                }
                _ => None,
            },
            bssplit: match &self.block_sizes {
                [BlockSizes::Split(_), _] | [_, BlockSizes::Split(_)] => Some(self.sizes_text()),
                _ => None,
            },
            end_fsync: self.end_fsync,
            iodepth: self.iodepth,
            numjobs: self.numjobs,
            runtime: self.runtime.map(|d| d.as_secs_f64()),
            io_size: self.io_size,
            size: self.size,
            ramp_time: self.ramp.map(|d| d.as_secs_f64()),
            rate_iops: if self.pace_per_byte {
                // Per byte: the I/O rate is the byte rate over the mean size.
                let mean = self.mean_bs();
                [0, 1].map(|d| self.pace_ns[d].map(|ns| 1e9 / ns / mean[d]))
            } else {
                self.pace_ns.map(|p| p.map(|ns| 1e9 / ns))
            },
            fsync: self.sync_every.filter(|s| !s.data).map_or(0, |s| s.writes),
            fdatasync: self.sync_every.filter(|s| s.data).map_or(0, |s| s.writes),
            number_ios: self.number_ios,
            status_interval: self.status_interval.map(|d| d.as_secs_f64()),
            offset: self.offset,
            direct: self.direct,
            invalidate: self.invalidate,
            cpus: self.cpus.clone(),
            thinkcycles: self.thinkcycles,
            gtod_reduce: self.gtod_reduce,
            clock: Some(self.job_clock().name().to_string()),
            thinktime_us: self.thinktime.map(|t| t.total_ns as f64 / 1e3),
            thinktime_spin_us: self.thinktime.map(|t| t.spin_ns as f64 / 1e3),
            thinktime_blocks: self.thinktime.map(|t| t.blocks),
            seed: self.seed,
            verify: self.verify,
            keep: self.keep,
            directory: self.directory.display().to_string(),
            allow_destructive: self.allow_destructive,
            no_kstat: !self.kstat,
            evidence: self.evidence,
            uring: self.uring.clone(),
            default_knobs: self.uring_defaults.iter().map(|s| s.to_string()).collect(),
        }
    }

    pub fn config_map(&self) -> Map<String, Value> {
        self.config().to_map()
    }
}

/// --bs, --bsrange, --bssplit: the sizes of reads and writes, the smallest
/// and the largest size the workload uses.
fn block_sizes(args: &IoArgs) -> Result<([BlockSizes; 2], u64, u64)> {
    type Parser = fn(&str) -> Result<BlockSizes, String>;
    let (flag, text, parse): (&str, &String, Parser) = match (&args.bsrange, &args.bssplit) {
        (Some(_), Some(_)) => {
            usage!("--bsrange and --bssplit both choose the block sizes: give one")
        }
        (Some(t), None) => ("bsrange", t, parse_bsrange),
        (None, Some(t)) => ("bssplit", t, parse_bssplit),
        (None, None) => {
            let bs = size_flag("bs", &args.bs)?;
            if bs == 0 || bs > BS_MAX {
                usage!(
                    "--bs {}: a block must be between 1 byte and {}",
                    args.bs,
                    format_bytes(BS_MAX)
                );
            }
            return Ok(([BlockSizes::Fixed(bs), BlockSizes::Fixed(bs)], bs, bs));
        }
    };
    if args.rw == Rw::Nop {
        usage!("--{flag} sizes reads and writes; --rw nop moves no data");
    }
    let one = |t: &str| parse(t).map_err(|e| usage_error(format!("--{flag} {text}: {e}")));
    let sizes = match text.split_once(',') {
        // fio: an empty side keeps the other's sizes.
        Some((r, w)) => {
            let r = if r.trim().is_empty() {
                one(w)?
            } else {
                one(r)?
            };
            let w = if w.trim().is_empty() {
                r.clone()
            } else {
                one(w)?
            };
            [r, w]
        }
        None => {
            let b = one(text)?;
            [b.clone(), b]
        }
    };
    // Only the directions the workload issues set the unit and the buffers.
    let used: Vec<&BlockSizes> = [
        (args.rw.reads(args.rwmixread), &sizes[0]),
        (args.rw.writes(args.rwmixread), &sizes[1]),
    ]
    .into_iter()
    .filter(|u| u.0)
    .map(|u| u.1)
    .collect();
    let used = if used.is_empty() {
        vec![&sizes[0]]
    } else {
        used
    };
    let min = used.iter().map(|b| b.min()).min().unwrap_or(1);
    let max = used.iter().map(|b| b.max()).max().unwrap_or(1);
    if max > BS_MAX {
        usage!(
            "--{flag} {text}: a block must be at most {}",
            format_bytes(BS_MAX)
        );
    }
    for b in &used {
        if let Some(bad) = b.sizes().into_iter().find(|s| s % min != 0) {
            usage!("--{flag} {text}: {bad} bytes is not a multiple of the smallest size {min}; ringlab places every I/O at a multiple of the smallest size (fio's default blockalign)");
        }
    }
    Ok((sizes, min, max))
}

/// fio's verify= as planned: one block size, one direction at a time.
fn fio_verify_plan(
    args: &IoArgs,
    bs: u64,
    bs_max: u64,
) -> Result<Option<crate::fio_verify::FioVerify>> {
    let Some(spec) = &args.fio_verify else {
        return Ok(None);
    };
    let v = crate::fio_verify::FioVerify::parse(spec)
        .map_err(|e| usage_error(format!("verify: {e}")))?;
    if args.verify {
        usage!("fio's verify= and ringlab's --verify write different blocks: use one");
    }
    if bs != bs_max {
        usage!("verify={}: ringlab checks fio's verify blocks of one size, and bsrange/bssplit vary it: give one bs", v.kind.name());
    }
    if args.rw.is_random() && args.rw.writes(args.rwmixread) && !args.random_map && v.do_verify {
        usage!("verify={} with norandommap: fio then verifies only the last write of a block written twice; ringlab has not built that: drop norandommap", v.kind.name());
    }
    v.check_block(bs).map_err(usage_error)?;
    Ok(Some(v))
}

/// fio's buffer_pattern: `0x` and hex digits, or a quoted string.
fn parse_pattern(text: &str) -> Result<Vec<u8>> {
    let t = text.trim();
    let bytes = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        let hex = if hex.len() % 2 == 1 {
            format!("0{hex}")
        } else {
            hex.to_string()
        };
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
            .collect::<Option<Vec<u8>>>()
    } else if t.len() >= 2
        && ((t.starts_with('\'') && t.ends_with('\'')) || (t.starts_with('"') && t.ends_with('"')))
    {
        Some(t.as_bytes()[1..t.len() - 1].to_vec())
    } else {
        None
    };
    match bytes {
        Some(b) if !b.is_empty() => Ok(b),
        _ => usage!("--buffer-pattern {text}: ringlab takes 0xHEX or a quoted 'string' (fio's other forms, numbers and '|' combinations, are not supported yet)"),
    }
}

/// fio's `rw=read:N` as blocks of `bs` (signed).
/// How a job under fio's random map rules goes on when an I/O cannot be
/// placed (--fio-random-map).
fn fio_map_passes(
    args: &IoArgs,
    io_size: Option<u64>,
) -> Result<Option<crate::workload::FioPasses>> {
    let Some(mode) = args.fio_random_map.as_deref() else {
        return Ok(None);
    };
    if matches!(
        args.rw,
        crate::workload::Rw::Trimwrite | crate::workload::Rw::Randtrimwrite
    ) {
        // The write that follows each trim on its block is ringlab's
        // map's (workload.rs, then_write); fio's rules are not built for it.
        return Ok(None);
    }
    let explicit = match mode {
        "size" => false,
        "io-size" => true,
        other => usage!("--fio-random-map {other}: size or io-size"),
    };
    let loops = args.loops.max(1);
    Ok(Some(match io_size {
        None => crate::workload::FioPasses::Always,
        Some(total) => crate::workload::FioPasses::Bounded {
            loops,
            io_size: total / loops,
            explicit,
        },
    }))
}

fn rw_skip(args: &IoArgs, bs: u64) -> Result<i64> {
    let Some(m) = &args.rw_modifier else {
        return Ok(0);
    };
    if args.rw.is_random() {
        return Ok(0);
    }
    let t = m.trim();
    let (neg, abs) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    let n = size_flag("rw modifier", abs)?;
    if n % bs != 0 {
        usage!("rw modifier {m}: not a multiple of the block size {bs} (ringlab places I/O at whole blocks)");
    }
    let blocks = (n / bs) as i64;
    Ok(if neg { -blocks } else { blocks })
}

fn check_engine_and_pattern(args: &IoArgs) -> Result<()> {
    if args.rw.trims() && (args.verify || args.fio_verify.is_some()) {
        usage!(
            "--rw {}: a trimmed block holds no data to verify: drop --verify (verify a write job)",
            args.rw.name()
        );
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
/// available (the host's, or the memory cgroup's room where that is less),
/// before anything is laid out.
fn check_buffer_memory(bs: u64, iodepth: u32, numjobs: u32, engine: EngineKind) -> Result<()> {
    let depth = if engine.is_async() { iodepth as u64 } else { 1 };
    let slot =
        bs.div_ceil(crate::buffers::BUFFER_ALIGN as u64) * crate::buffers::BUFFER_ALIGN as u64;
    let need = slot.saturating_mul(depth).saturating_mul(numjobs as u64);
    if let Some((avail, by)) = ringlab_core::limits::memory_available() {
        if need > avail / 2 {
            usage!(
                "I/O buffers of --bs x --iodepth x --numjobs need {}, more than half the memory available ({}, set by {by}): lower one of them",
                format_bytes(need),
                format_bytes(avail)
            );
        }
    }
    Ok(())
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

/// fio's offset_increment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Increment {
    Bytes(u64),
    /// A share of the target's size; starts aligned up to the block size.
    Percent(f64),
}

/// Parses `--offset-increment` (used by fill_device.rs's job_start).
pub fn increment(args: &IoArgs, _bs: u64) -> Result<Option<Increment>> {
    let Some(t) = args.offset_increment.as_deref().map(str::trim) else {
        return Ok(None);
    };
    if let Some(p) = t.strip_suffix('%') {
        let pct: f64 = match p.trim().parse() {
            Ok(v) if (0.0..=100.0).contains(&v) => v,
            _ => usage!("--offset-increment {t}: a percentage from 0 to 100"),
        };
        return Ok(Some(Increment::Percent(pct)));
    }
    match parse_size(t) {
        Ok(n) => Ok(Some(Increment::Bytes(n))),
        Err(e) => usage!("--offset-increment: {e}"),
    }
}

/// `--clocksource`, fio's names for the clocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ClockSourceArg {
    /// The time stamp counter where the kernel times with it, else
    /// clock_gettime.
    Auto,
    /// The CPU's time stamp counter (refused where it is not usable).
    Cpu,
    /// clock_gettime(CLOCK_MONOTONIC).
    #[value(name = "clock_gettime")]
    ClockGettime,
}

impl ClockSourceArg {
    /// The job clock it asks for.
    pub fn source(self) -> ringlab_core::clock::Source {
        match self {
            ClockSourceArg::Auto => ringlab_core::clock::Source::Auto,
            ClockSourceArg::Cpu => ringlab_core::clock::Source::Tsc,
            ClockSourceArg::ClockGettime => ringlab_core::clock::Source::Mono,
        }
    }
}
