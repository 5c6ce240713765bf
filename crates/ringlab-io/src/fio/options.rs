//! fio's option names, one record each: what `ringlab io` does with it.
//!
//! Knowledge as data: an option fio users type is either the same as a
//! ringlab option, a different spelling of one, a no-op in ringlab (and the
//! record says why it changes nothing), accepted only with the value that
//! is ringlab's fixed behaviour, or refused with a hint that names the
//! ringlab option or says plainly that ringlab has none.
//!
//! [`translate`] turns a list of fio `key=value` options (from a command
//! line or a job file section) into the argv of one `ringlab io` run.

use anyhow::Result;
use ringlab_core::usage_error;
use std::path::PathBuf;

/// ringlab's options read through fio's table on the command line (the
/// words ringlab and fio share).
pub const ROUTED: &[&str] = &[
    "size",
    "runtime",
    "iodepth",
    "io-size",
    "directory",
    "direct",
];

/// What ringlab does with one fio option.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// The same meaning: the value goes to this ringlab option.
    Value(&'static str),
    /// A fio boolean (bare, `=1` or `=0`) that turns this ringlab flag on.
    Flag(&'static str),
    /// Needs other options or a changed value: [`translate`] handles it.
    Special,
    /// Changes nothing in ringlab, for the reason given.
    Ignored(&'static str),
    /// Only this value is ringlab's behaviour; any other is refused with
    /// the hint.
    Fixed(&'static str, &'static str),
    /// Refused, with the hint.
    Refused(&'static str),
}

/// One fio option: its name, fio's aliases, and what ringlab does with it.
pub struct FioOption {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub kind: Kind,
}

const NOT_YET: &str = "not yet supported by ringlab";

macro_rules! opt {
    ($name:literal, $kind:expr) => {
        FioOption {
            name: $name,
            aliases: &[],
            kind: $kind,
        }
    };
    ($name:literal, [$($alias:literal),*], $kind:expr) => {
        FioOption {
            name: $name,
            aliases: &[$($alias),*],
            kind: $kind,
        }
    };
}

/// Every fio option ringlab knows, by fio's name (underscores as fio writes
/// them; `-` is accepted for `_`).
pub const FIO_OPTIONS: &[FioOption] = &[
    // The workload: the same words in both tools.
    opt!("rw", ["readwrite"], Kind::Special),
    opt!("bs", ["blocksize"], Kind::Special),
    opt!("size", Kind::Special),
    opt!("filesize", Kind::Special),
    opt!("io_size", ["io_limit"], Kind::Value("io-size")),
    opt!("iodepth", Kind::Value("iodepth")),
    opt!("numjobs", Kind::Value("numjobs")),
    opt!("runtime", ["timeout"], Kind::Value("runtime")),
    opt!("time_based", Kind::Special),
    opt!("rwmixread", Kind::Value("rwmixread")),
    opt!("rwmixwrite", Kind::Special),
    opt!("filename", Kind::Special),
    opt!("directory", Kind::Special),
    opt!("name", Kind::Special),
    opt!("ioengine", Kind::Special),
    opt!("direct", Kind::Special),
    opt!("buffered", Kind::Special),
    opt!("cpus_allowed", Kind::Value("cpus")),
    opt!("cpus_allowed_policy", Kind::Special),
    opt!("thinkcycles", Kind::Value("thinkcycles")),
    opt!("thinktime", Kind::Value("thinktime")),
    opt!("thinktime_spin", Kind::Value("thinktime-spin")),
    opt!("thinktime_blocks", Kind::Value("thinktime-blocks")),
    opt!("randrepeat", Kind::Special),
    opt!("randseed", Kind::Value("seed")),
    opt!("allow_mounted_write", Kind::Flag("allow-destructive")),
    // io_uring and libaio, by fio's names.
    opt!("sqthread_poll", Kind::Flag("sqpoll")),
    opt!("sqthread_poll_cpu", Kind::Value("sqpoll-cpu")),
    opt!("hipri", Kind::Flag("iopoll")),
    opt!("registerfiles", Kind::Flag("fixed-files")),
    opt!("fixedbufs", Kind::Flag("fixed-buffers")),
    opt!("force_async", Kind::Special),
    opt!("iodepth_batch_submit", ["iodepth_batch"], Kind::Special),
    opt!("iodepth_batch_complete_min", ["iodepth_batch_complete"], Kind::Special),
    opt!("iodepth_batch_complete_max", Kind::Special),
    // Reporting and job-file structure.
    opt!("group_reporting", Kind::Special),
    opt!("stonewall", ["wait_for_previous"], Kind::Special),
    opt!("new_group", Kind::Special),
    opt!("wait_for", Kind::Special),
    opt!("output", Kind::Special),
    opt!("output_format", Kind::Special),
    opt!("description", Kind::Ignored("a label for people; ringlab prints the job name")),
    // No-ops in ringlab, each with its reason.
    opt!("thread", ["threads"], Kind::Ignored("ringlab's jobs are always threads of one process, which is what thread=1 asks")),
    opt!("norandommap", Kind::Ignored("ringlab io draws random offsets uniformly with repetition (norandommap is its default); ringlab fio keeps fio's random map unless norandommap is given")),
    opt!("fadvise_hint", Kind::Special),
    opt!("log_offset", Kind::Special),
    opt!("disable_slat", Kind::Ignored("ringlab stamps submissions once per loop turn, not per I/O, so there is no cost to save; slat_ns is still reported")),
    opt!("disable_clat", Kind::Ignored("ringlab's clat comes from the clock reads its lat needs anyway, so there is no cost to save; clat_ns is still reported (--gtod-reduce times nothing)")),
    opt!("disable_lat", Kind::Ignored("ringlab's lat comes from the clock reads its slat and clat need anyway, so there is no cost to save; lat_ns is still reported (--gtod-reduce times nothing)")),
    opt!("disable_bw_measurement", ["disable_bw"], Kind::Ignored("ringlab computes bandwidth from the bytes and the time at the end (and per --status-interval), with no cost per I/O to save; it is still reported")),
    opt!("kb_base", Kind::Fixed("1024", "ringlab's sizes are powers of 1024 (kb_base=1024); write sizes as 4k, 1m")),
    opt!("nrfiles", Kind::Special),
    opt!("openfiles", Kind::Special),
    opt!("file_service_type", Kind::Fixed("roundrobin", "ringlab's file engines (filecreate, filestat, filedelete) serve a job's files round robin, one I/O each in turn (fio's default); its other engines have one file per job")),
    opt!("overwrite", Kind::Fixed("1", "ringlab always lays out a new file with real data before it runs, as overwrite=1 does")),
    opt!("unlink", Kind::Fixed("0", "ringlab keeps the files it lays out for a named target (fio's unlink=0); without a target it removes its own file unless --keep")),
    opt!("invalidate", Kind::Value("invalidate")),
    opt!("loops", Kind::Value("loops")),
    opt!("ramp_time", Kind::Value("ramp-time")),
    opt!("fsync", Kind::Value("fsync")),
    opt!("fdatasync", Kind::Value("fdatasync")),
    opt!("gtod_reduce", Kind::Flag("gtod-reduce")),
    opt!("end_fsync", Kind::Flag("end-fsync")),
    opt!("offset", Kind::Value("offset")),
    opt!("bsrange", ["blocksize_range"], Kind::Special),
    opt!("bssplit", Kind::Value("bssplit")),
    opt!("blockalign", ["ba"], Kind::Value("blockalign")),
    opt!("number_ios", Kind::Value("number-ios")),
    opt!("rate", Kind::Value("rate")),
    opt!("rate_iops", Kind::Value("rate-iops")),
    opt!("rate_min", ["ratemin"], Kind::Refused(NOT_YET)),
    opt!("percentile_list", Kind::Special),
    opt!("status_interval", Kind::Value("status-interval")),
    opt!("write_lat_log", Kind::Value("write-lat-log")),
    opt!("write_bw_log", Kind::Value("write-bw-log")),
    opt!("write_iops_log", Kind::Value("write-iops-log")),
    opt!("log_avg_msec", Kind::Value("log-avg-msec")),
    opt!("write_hist_log", Kind::Value("write-hist-log")),
    opt!("buffer_pattern", Kind::Value("buffer-pattern")),
    opt!("refill_buffers", Kind::Ignored("the bytes written change, not the I/O: ringlab fills each buffer once with pseudo-random data, fio refills it before every write (a compressing or deduplicating device sees the difference)")),
    opt!("random_distribution", Kind::Value("random-distribution")),
    opt!("random_generator", Kind::Special),
    opt!("log_hist_msec", Kind::Value("log-hist-msec")),
    opt!("log_hist_coarseness", Kind::Value("log-hist-coarseness")),
    // fio options with a ringlab cousin that is not the same thing.
    // What the blocks hold: fio's verify= format and dedupe/compress
    // shares (fio/content.rs).
    opt!("verify", Kind::Special),
    opt!("do_verify", Kind::Special),
    opt!("verify_interval", Kind::Special),
    opt!("verify_pattern", Kind::Special),
    opt!("verify_backlog", Kind::Special),
    opt!("verify_backlog_batch", Kind::Special),
    opt!("verify_dump", Kind::Special),
    opt!("verify_fatal", Kind::Special),
    opt!("verify_offset", Kind::Special),
    opt!("verify_async", Kind::Special),
    opt!("dedupe_percentage", Kind::Special),
    opt!("dedupe_mode", Kind::Special),
    opt!("dedupe_working_set_percentage", Kind::Special),
    opt!("dedupe_global", Kind::Special),
    opt!("buffer_compress_percentage", Kind::Special),
    opt!("buffer_compress_chunk", Kind::Special),
    opt!("create_serialize", Kind::Ignored("ringlab lays out the files of a job file's jobs before they start; the order of the layout moves no measured I/O")),
    opt!("fill_device", ["fill_fs"], Kind::Special),
    opt!("offset_increment", Kind::Value("offset-increment")),
    opt!("prioclass", Kind::Special),
    opt!("prio", Kind::Special),
    opt!("cmdprio_percentage", Kind::Special),
    opt!("cmdprio_class", Kind::Special),
    opt!("cmdprio", Kind::Special),
    opt!("cmdprio_bssplit", Kind::Special),
    opt!("log_prio", Kind::Special),
    opt!("cpumask", Kind::Refused("use --cpus LIST (fio's cpus_allowed)")),
    opt!("ioscheduler", Kind::Refused("ringlab has no equivalent: it does not change the device's scheduler; set /sys/block/DEV/queue/scheduler (ringlab reports the one in use)")),
    opt!("fallocate", Kind::Special),
    opt!("create_on_open", Kind::Special),
    opt!("exitall", Kind::Refused("'ringlab io --fio' runs a job file's jobs one after the other; 'ringlab fio JOBFILE' runs each group at once and ends it as fio's exitall does")),
    opt!("exit_what", Kind::Refused("'ringlab io --fio' runs a job file's jobs one after the other; 'ringlab fio JOBFILE' honours exitall and exit_what (group, stonewall, all)")),
    opt!("steadystate", ["ss"], Kind::Refused("'ringlab fio' ends the job (with group_reporting its group) at fio's steady state; 'ringlab io --fio' has no equivalent")),
    opt!("steadystate_duration", ["ss_dur"], Kind::Refused("'ringlab fio': the window of once-a-second samples of ss=; 'ringlab io --fio' has no equivalent")),
    opt!("steadystate_ramp_time", ["ss_ramp"], Kind::Refused("'ringlab fio': the time before ss= samples; 'ringlab io --fio' has no equivalent")),
    opt!("latency_target", Kind::Refused("'ringlab fio' searches the highest queue depth that meets it, as fio; 'ringlab io --fio' has no equivalent")),
    opt!("latency_window", Kind::Refused("'ringlab fio': each depth's window of the latency_target search; 'ringlab io --fio' has no equivalent")),
    opt!("latency_percentile", Kind::Refused("'ringlab fio': the share of I/Os that must meet latency_target; 'ringlab io --fio' has no equivalent")),
    opt!("latency_run", Kind::Refused("'ringlab fio': keep adjusting the depth instead of ending at the one found; 'ringlab io --fio' has no equivalent")),
    opt!("numa_cpu_nodes", Kind::Refused("'ringlab fio' binds each job to the CPUs of these NUMA nodes; with 'ringlab io' give --cpus LIST")),
    opt!("numa_mem_policy", Kind::Refused("'ringlab fio' sets this memory policy (set_mempolicy) for each job; 'ringlab io' has no equivalent")),
    opt!("zonemode", Kind::Value("zonemode")),
    opt!("zonesize", Kind::Value("zonesize")),
    opt!("zonerange", Kind::Value("zonerange")),
    opt!("zoneskip", Kind::Value("zoneskip")),
    opt!("read_beyond_wp", Kind::Ignored("applies to zonemode=zbd only, which ringlab refuses; fio ignores it in every other zonemode")),
    opt!("max_open_zones", Kind::Special),
    opt!("job_max_open_zones", Kind::Special),
    opt!("zonecapacity", Kind::Special),
    opt!("continue_on_error", Kind::Special),
    opt!("ignore_error", Kind::Value("ignore-error")),
    opt!("error_dump", Kind::Ignored("fio prints each I/O error as it happens; ringlab reports the error that ended the job either way")),
    opt!("iodepth_low", Kind::Refused("ringlab has no equivalent: it refills the queue as completions are reaped")),
    opt!("clocksource", Kind::Special),
    // fio's cpuio engine (engines/cpu.c).
    opt!("cpuload", Kind::Value("cpuload")),
    opt!("cpumode", Kind::Value("cpumode")),
    opt!("cpuchunks", Kind::Value("cpuchunks")),
    // fio's filestat engine (engines/fileoperations.c).
    opt!("stat_type", Kind::Special),
    opt!("exit_on_io_done", Kind::Refused("'ringlab fio' ends a cpuio job when the I/O jobs of the run are done, as fio; 'ringlab io --fio' runs a job file's jobs one after the other")),
    opt!("nonvectored", Kind::Fixed("1", "ringlab's io_uring engine always uses the non-vectored IORING_OP_READ/WRITE (nonvectored=1); ringlab has no equivalent of vectored requests")),
];

/// The record of `key` (fio's name or alias, `-` or `_`).
pub fn find(key: &str) -> Option<&'static FioOption> {
    let k = key.replace('-', "_");
    FIO_OPTIONS
        .iter()
        .find(|o| o.name == k || o.aliases.contains(&k.as_str()))
}

/// Whether fio's option is a boolean (bare, `=1` or `=0`) rather than one
/// that needs a value.
pub fn is_boolean(rec: &FioOption) -> bool {
    match rec.kind {
        Kind::Flag(_) => true,
        Kind::Ignored(_) => rec.name != "description",
        Kind::Special => matches!(
            rec.name,
            "log_offset"
                | "time_based"
                | "direct"
                | "buffered"
                | "group_reporting"
                | "randrepeat"
                | "stonewall"
                | "new_group"
                | "do_verify"
                | "verify_dump"
                | "verify_fatal"
                | "dedupe_global"
                | "log_prio"
                | "fill_device"
                | "create_on_open"
        ),
        _ => false,
    }
}

/// Where an option was written, for error messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// On the command line.
    Cli,
    /// In a job file: its path, the section and the line (1-based).
    File {
        path: String,
        section: String,
        line: usize,
    },
}

impl Origin {
    /// `--key` on the command line, `key` with its place in a job file.
    pub fn name(&self, key: &str) -> String {
        match self {
            Origin::Cli => format!("--{key}"),
            Origin::File {
                path,
                section,
                line,
            } => format!("{path}:{line}: [{section}] {key}"),
        }
    }

    /// `key` as it is spelled where it was written, without its place:
    /// `--key` on the command line, `key` in a job file.
    pub fn spelled(&self, key: &str) -> String {
        match self {
            Origin::Cli => format!("--{key}"),
            Origin::File { .. } => key.to_string(),
        }
    }
}

/// One fio option as written: `key`, `key=value`, and where.
#[derive(Clone, Debug)]
pub struct Written {
    pub key: String,
    pub value: Option<String>,
    pub origin: Origin,
}

/// One `ringlab io` run made from fio options.
#[derive(Clone, Debug, Default)]
pub struct Translated {
    /// `ringlab io` options (without `ringlab io`).
    pub args: Vec<String>,
    /// fio's job name (`name=`, or the section), if any.
    pub jobname: Option<String>,
    pub group_reporting: bool,
    /// The options as written (`key`, value; `""` for a bare flag), for
    /// fio's "job options".
    pub options: Vec<(String, String)>,
    /// Where ringlab differs from fio in a way the user must know (said on
    /// stderr, never hidden).
    pub notes: Vec<String>,
    /// The file or device to run on (fio's filename, or the file fio would
    /// name after the job); the caller adds it as TARGET.
    pub target: Option<String>,
    /// fio's percentile_list: the percentiles of fio-json's clat_ns (the
    /// text and ringlab json outputs keep their fixed p50 to p99.99).
    pub percentiles: Option<Vec<f64>>,
    /// `--output FILE` given as fio's `--output`.
    pub output: Option<String>,
    /// `--output-format` given with fio's values.
    pub output_format: Option<String>,
    /// fio's fadvise_hint: none, random, sequential, or auto (by pattern).
    pub fadvise: Option<String>,
    /// fio's log_offset, when given.
    pub log_offset: Option<bool>,
    /// A trim of a regular file (fio 3.33's BLKDISCARD fails there): the
    /// refusal `ringlab io` gives; `ringlab fio` runs it and fails the job.
    pub trim_on_file: Option<String>,
    /// create_on_open=1 on a job that reads: the refusal `ringlab io`
    /// gives; `ringlab fio` opens the file as it is, created empty.
    pub create_on_open_reads: Option<String>,
    /// Options about the blocks' contents (verify=, dedupe, compress),
    /// turned into ringlab's by fio/content.rs.
    pub content: Vec<Written>,
}

impl Translated {
    /// Why `ringlab io` (its fio spellings and job files) refuses what
    /// `ringlab fio` runs as a failing job: a trim of a regular file, a
    /// create_on_open job that reads.
    pub fn io_refusal(&self) -> Option<&String> {
        self.trim_on_file
            .as_ref()
            .or(self.create_on_open_reads.as_ref())
    }
}

fn bool_value(o: &Written) -> Result<bool> {
    match o.value.as_deref().map(str::trim) {
        None | Some("1") | Some("true") | Some("on") | Some("yes") => Ok(true),
        Some("0") | Some("false") | Some("off") | Some("no") => Ok(false),
        Some(v) => Err(usage_error(format!(
            "{}={v}: fio's booleans are 1 or 0 (or the bare option for 1)",
            o.origin.name(&o.key)
        ))),
    }
}

fn value_of(o: &Written) -> Result<String> {
    match &o.value {
        Some(v) if !v.trim().is_empty() => Ok(v.trim().to_string()),
        _ => Err(usage_error(format!(
            "{} needs a value ({}=VALUE; a ${{VAR}} of an unset variable is empty, as in fio)",
            o.origin.name(&o.key),
            o.origin.spelled(&o.key)
        ))),
    }
}

fn refuse(o: &Written, hint: &str) -> anyhow::Error {
    let shown = match &o.value {
        Some(v) => format!("{}={v}", o.origin.name(&o.key)),
        None => o.origin.name(&o.key),
    };
    usage_error(format!("{shown}: {hint}"))
}

/// Options gathered from a list before they become ringlab's argv (some fio
/// options only mean something together).
#[derive(Default)]
struct Gathered {
    filename: Option<String>,
    directory: Option<String>,
    size: Option<String>,
    filesize: Option<String>,
    io_size_given: bool,
    time_based: bool,
    runtime: Option<String>,
    iodepth: Option<String>,
    submit_batch: Option<(Written, u32)>,
    complete_min: Option<(Written, u32)>,
    complete_max: Option<(Written, u32)>,
    engine: Option<String>,
    cpus_policy_split: bool,
    cpus_given: bool,
    randrepeat: Option<bool>,
    seed_given: bool,
    rwmixread: Option<String>,
    rwmixwrite: Option<(Written, u32)>,
    rw_given: bool,
    /// fio's fill_device: no size means "until full", not the file's size.
    fill_device: bool,
    /// fio's fill_device as written (for the refusal on a read job).
    fill_device_at: Option<Written>,
    /// rw= with a trim pattern, as written.
    trim_rw: Option<Written>,
    /// create_on_open=1, as written.
    create_on_open: Option<Written>,
    /// nrfiles, openfiles, stat_type as written (the file engines'), with
    /// the counts.
    nrfiles: Option<(Written, u64)>,
    openfiles: Option<(Written, u64)>,
    stat_type: Option<(Written, String)>,
    fallocate_given: bool,
    /// An option only fio spells this way was used (not just ringlab's).
    fio_spelling: bool,
}

/// Turns fio options into one `ringlab io` argv. `in_file`: the options come
/// from a job file, where fio's rules hold exactly (without `time_based` a
/// job stops after `size` bytes); on the command line ringlab's own rule
/// stands (`--runtime` makes a run time based), and a note says so where
/// fio would differ.
///
/// `default_name`: the job's name when no `name=` is given (a job file's
/// section).
pub fn translate(
    written: &[Written],
    in_file: bool,
    default_name: Option<&str>,
) -> Result<Translated> {
    let mut t = Translated::default();
    let mut g = Gathered::default();
    for o in written {
        t.options
            .push((o.key.replace('-', "_"), o.value.clone().unwrap_or_default()));
        let Some(rec) = find(&o.key) else {
            return Err(unknown(&o.key, &o.origin));
        };
        // Words ringlab and fio share are not a sign of fio's spelling.
        let shared = ROUTED.contains(&o.key.as_str()) || o.key == "engine";
        g.fio_spelling |= !shared;
        if in_file && matches!(rec.name, "output" | "output_format") {
            return Err(refuse(
                o,
                "a command-line option, as in fio: give it beside the job file (ringlab io --fio JOBFILE --output FILE --output-format FORMAT)",
            ));
        }
        apply(rec, o, &mut t, &mut g)?;
    }
    if t.jobname.is_none() {
        t.jobname = default_name.map(str::to_string);
    }
    finish(&mut t, g, in_file)?;
    Ok(t)
}

fn apply(rec: &FioOption, o: &Written, t: &mut Translated, g: &mut Gathered) -> Result<()> {
    let args = &mut t.args;
    match rec.kind {
        Kind::Value(flag) => {
            let v = value_of(o)?;
            match flag {
                "io-size" => g.io_size_given = true,
                "runtime" => g.runtime = Some(v.clone()),
                "rwmixread" => g.rwmixread = Some(v.clone()),
                "iodepth" => g.iodepth = Some(v.clone()),
                "cpus" => g.cpus_given = true,
                "seed" => g.seed_given = true,
                _ => {}
            }
            args.push(format!("--{flag}"));
            args.push(v);
        }
        Kind::Flag(flag) => {
            if bool_value(o)? {
                args.push(format!("--{flag}"));
            }
        }
        Kind::Ignored(_) => {}
        Kind::Fixed(value, hint) => {
            let v = o.value.as_deref().map(str::trim).unwrap_or("1");
            if v != value {
                return Err(refuse(o, hint));
            }
        }
        Kind::Refused(hint) => return Err(refuse(o, hint)),
        Kind::Special => special(rec.name, o, t, g)?,
    }
    Ok(())
}

fn batch(o: &Written) -> Result<(Written, u32)> {
    let v = value_of(o)?;
    let n = v.parse::<u32>().map_err(|_| {
        usage_error(format!(
            "{}={v}: a whole number of requests",
            o.origin.name(&o.key)
        ))
    })?;
    Ok((o.clone(), n))
}

fn special(name: &str, o: &Written, t: &mut Translated, g: &mut Gathered) -> Result<()> {
    match name {
        "rw" => {
            let mut v = value_of(o)?;
            if let Some((pattern, modifier)) = v.clone().split_once(':') {
                t.args
                    .extend(["--rw-modifier".to_string(), modifier.trim().to_string()]);
                v = pattern.trim().to_string();
            }
            if v.contains("trim") {
                if !matches!(
                    v.as_str(),
                    "trim" | "randtrim" | "trimwrite" | "randtrimwrite"
                ) {
                    return Err(refuse(
                        o,
                        "fio's trim patterns are trim, randtrim, trimwrite and randtrimwrite",
                    ));
                }
                // fio 3.33 trims with BLKDISCARD on every engine, which a
                // regular file refuses (ENOTTY): so does ringlab fio.
                t.args.push("--trim-blkdiscard".to_string());
                g.trim_rw = Some(o.clone());
            }
            g.rw_given = true;
            t.args.extend(["--rw".to_string(), v]);
        }
        "bs" => {
            let v = value_of(o)?;
            if v.contains(',') {
                // fio's R,W sizes: one size per direction, a split of one.
                t.args.extend(["--bssplit".to_string(), v]);
            } else {
                t.args.extend(["--bs".to_string(), v]);
            }
        }
        "bsrange" => {
            let v = value_of(o)?;
            match v.split_once('-') {
                Some((lo, hi)) if lo.trim().eq_ignore_ascii_case(hi.trim()) && !v.contains(',') => {
                    t.args.extend(["--bs".to_string(), lo.trim().to_string()]);
                }
                _ => t.args.extend(["--bsrange".to_string(), v]),
            }
        }
        "size" | "filesize" => {
            let v = value_of(o)?;
            if v.contains('%') || v.contains('-') {
                return Err(refuse(o, "ringlab has no equivalent of a size in percent or a range: give a size like 64m or 1g"));
            }
            if name == "size" {
                g.size = Some(v);
            } else {
                g.filesize = Some(v);
            }
        }
        "time_based" => g.time_based = bool_value(o)?,
        "rwmixwrite" => {
            let v = value_of(o)?;
            let pct: u32 = v
                .parse()
                .ok()
                .filter(|p| *p <= 100)
                .ok_or_else(|| refuse(o, "a percentage from 0 to 100"))?;
            g.rwmixwrite = Some((o.clone(), pct));
        }
        "filename" => {
            let v = value_of(o)?;
            // fio separates files with ':'; '\:' is a ':' in a name.
            let parts = split_unescaped(&v);
            if parts.len() > 1 {
                return Err(refuse(o, "ringlab has no equivalent of several files per job (fio's ':' separator; write '\\:' for a ':' in a name): name one file or device"));
            }
            g.filename = Some(parts.into_iter().next().unwrap_or_default());
        }
        "directory" => {
            let v = value_of(o)?;
            if v.contains(':') {
                return Err(refuse(
                    o,
                    "ringlab has no equivalent of several directories: name one",
                ));
            }
            g.directory = Some(v);
        }
        "name" => t.jobname = Some(value_of(o)?),
        "ioengine" => {
            let v = value_of(o)?;
            let engine = match v.as_str() {
                "psync" | "pvsync" | "sync" => "sync",
                "io_uring" | "uring" => "uring",
                "libaio" => "libaio",
                "posixaio" => "posixaio",
                "null" => "null",
                "falloc" => "falloc",
                "cpuio" => "cpuio",
                "filecreate" => "filecreate",
                "filestat" => "filestat",
                "filedelete" => "filedelete",
                "ftruncate" => "ftruncate",
                _ => return Err(refuse(o, "ringlab has no equivalent of this engine: its engines are psync/sync (ringlab's sync), io_uring, libaio, posixaio, null, falloc, cpuio, filecreate, filestat, filedelete and ftruncate")),
            };
            if o.key == "ioengine" && (v == "sync" || v == "pvsync") {
                t.notes.push(format!(
                    "ioengine={v}: ringlab's sync engine issues pread/pwrite (fio's psync); fio's {v} uses {} per I/O",
                    if v == "sync" { "lseek and read/write" } else { "preadv/pwritev" }
                ));
            }
            g.engine = Some(engine.to_string());
            t.args.extend(["--engine".to_string(), engine.to_string()]);
        }
        "direct" => {
            if bool_value(o)? && !t.args.iter().any(|a| a == "--direct") {
                t.args.push("--direct".to_string());
            }
        }
        "buffered" => {
            // buffered=0 is direct=1 (fio's job files often give both).
            if !bool_value(o)? && !t.args.iter().any(|a| a == "--direct") {
                t.args.push("--direct".to_string());
            }
        }
        "cpus_allowed_policy" => match value_of(o)?.as_str() {
            "split" => g.cpus_policy_split = true,
            "shared" => {}
            _ => return Err(refuse(
                o,
                "fio's policies are shared and split; ringlab pins one CPU per job in turn (split)",
            )),
        },
        "randrepeat" => g.randrepeat = Some(bool_value(o)?),
        "force_async" => {
            let v = value_of(o)?;
            t.args.push(format!("--force-async={v}"));
        }
        "iodepth_batch_submit" => g.submit_batch = Some(batch(o)?),
        "iodepth_batch_complete_min" => g.complete_min = Some(batch(o)?),
        "iodepth_batch_complete_max" => g.complete_max = Some(batch(o)?),
        "percentile_list" => {
            let v = value_of(o)?;
            let list: Option<Vec<f64>> = v
                .split(':')
                .map(|p| {
                    p.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|p| *p > 0.0 && *p <= 100.0)
                })
                .collect();
            match list {
                Some(l) if !l.is_empty() && l.len() <= 20 => t.percentiles = Some(l),
                _ => return Err(refuse(o, "fio's list is up to 20 percentages above 0 and up to 100, separated by ':' (99:99.9:99.99)")),
            }
        }
        "group_reporting" => t.group_reporting = bool_value(o)?,
        "fadvise_hint" => {
            let v = o.value.as_deref().map(str::trim).unwrap_or("1");
            let hint = match v {
                "0" | "none" | "normal" => "none",
                "random" => "random",
                "sequential" => "sequential",
                // fio's 1: random for a random pattern, sequential else.
                "1" => "auto",
                _ => return Err(refuse(
                    o,
                    "fio's hints are 0, 1, sequential, random (and normal, which gives no advice)",
                )),
            };
            t.fadvise = Some(hint.to_string());
        }
        "random_generator" => match value_of(o)?.as_str() {
            // Other generators of uniform offsets: the same work.
            "tausworthe" | "tausworthe64" => {}
            // ringlab fio follows fio's LFSR (workload/fio_lfsr.rs).
            "lfsr" => {}
            _ => {
                return Err(refuse(
                    o,
                    "fio's generators are tausworthe, lfsr, tausworthe64",
                ))
            }
        },
        "log_offset" => {
            t.log_offset = Some(bool_value(o)?);
        }
        "clocksource" => match value_of(o)?.as_str() {
            v @ ("cpu" | "clock_gettime") => {
                t.args.push(format!("--clocksource={v}"));
            }
            _ => return Err(refuse(
                o,
                "ringlab times with cpu (the time stamp counter, fio's default where it is reliable) or clock_gettime (CLOCK_MONOTONIC); gettimeofday's microsecond clock is not one of them",
            )),
        },
        "fill_device" => {
            g.fill_device = bool_value(o)?;
            g.fill_device_at = Some(o.clone());
            if g.fill_device {
                t.args.push("--fill-device".to_string());
            }
        }
        // Structure of a job file; on a command line with one job they
        // change nothing.
        "stonewall" | "new_group" | "wait_for" => {}
        "output" => t.output = Some(value_of(o)?),
        "output_format" => t.output_format = Some(value_of(o)?),
        "continue_on_error" => {
            let v = value_of(o)?;
            if v == "verify" {
                return Err(refuse(o, "ringlab ends a job at a verify failure; going on after it is not supported by ringlab (read, write, io and all take I/O errors)"));
            }
            t.args.push("--continue-on-error".to_string());
            t.args.push(v);
        }
        "fallocate" => {
            let v = value_of(o)?;
            crate::layout::Fallocate::parse(&v).map_err(|e| refuse(o, &e))?;
            g.fallocate_given = true;
            t.args.extend(["--fallocate".to_string(), v]);
        }
        "create_on_open" => {
            if bool_value(o)? {
                g.create_on_open = Some(o.clone());
            }
        }
        "nrfiles" | "openfiles" => {
            let v = value_of(o)?;
            let n = v.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                refuse(o, "a number of files, at least 1")
            })?;
            if name == "nrfiles" {
                g.nrfiles = Some((o.clone(), n));
            } else {
                g.openfiles = Some((o.clone(), n));
            }
        }
        "stat_type" => {
            let v = value_of(o)?;
            if !matches!(v.as_str(), "stat" | "lstat" | "statx") {
                return Err(refuse(o, "fio's stat types are stat, lstat and statx"));
            }
            g.stat_type = Some((o.clone(), v));
        }
        "max_open_zones" | "job_max_open_zones" | "zonecapacity" => {
            // Only zonemode=zbd reads them (fio ignores them otherwise),
            // and ringlab refuses zbd with its reason.
            value_of(o)?;
        }
        n if super::content::NAMES.contains(&n) => t.content.push(o.clone()),
        _ => return Err(refuse(o, "ringlab has no equivalent")),
    }
    Ok(())
}

/// Options that only mean something together.
fn finish(t: &mut Translated, mut g: Gathered, in_file: bool) -> Result<()> {
    let files = file_engine_files(t, &g)?;
    // fio: filesize is the file's size, size the bytes the job moves
    // (each defaults to the other).
    let file_size = match &files {
        Some(f) => f.file_size.clone(),
        None => g.filesize.clone().or(g.size.clone()),
    };
    if let Some(s) = &file_size {
        t.args.extend(["--size".to_string(), s.clone()]);
    }
    // A job moves size bytes, at most its file's (fio sets each file's
    // io_size to filesize: size=2m filesize=1m reads 1 MiB).
    let size = match (&files, &g.size, &g.filesize) {
        (Some(f), _, _) => f.job_bytes.clone(),
        (None, Some(s), Some(f)) => {
            let bytes = |v: &str| ringlab_stats::units::parse_size(v).ok();
            match (bytes(s), bytes(f)) {
                (Some(sb), Some(fb)) if sb < fb => Some(s.clone()),
                _ => Some(f.clone()),
            }
        }
        (None, s, f) => s.clone().or(f.clone()),
    };
    match (&g.filename, &g.directory) {
        // fio joins them whatever the filename: DIR/ then the name.
        (Some(f), Some(d)) => {
            t.target = Some(format!("{}/{f}", d.trim_end_matches('/')));
        }
        (Some(f), _) => t.target = Some(f.clone()),
        // The file engines' files: NAME.J.F in the directory (the stem is
        // TARGET, with --nrfiles).
        (None, dir) if files.is_some() => {
            let d = PathBuf::from(dir.clone().unwrap_or_else(|| ".".to_string()));
            let name = t.jobname.clone().unwrap_or_else(|| "ringlab".to_string());
            t.target = Some(d.join(name).to_string_lossy().into_owned());
        }
        // fio names a job's file after the job, in the directory given.
        (None, dir) => {
            if let Some(name) = &t.jobname {
                let d = PathBuf::from(dir.clone().unwrap_or_else(|| ".".to_string()));
                t.target = Some(d.join(format!("{name}.0.0")).to_string_lossy().into_owned());
            } else if let Some(d) = dir {
                t.args.extend(["--directory".to_string(), d.clone()]);
            }
        }
    }
    // fio without time_based stops a job after `size` bytes (io_size) or
    // at the runtime, whichever comes first; ringlab's --io-size is that.
    if g.time_based && g.runtime.is_none() {
        return Err(usage_error(
            "time_based without runtime runs forever in fio: give runtime (ringlab io --runtime TIME)",
        ));
    }
    if !g.time_based && !g.io_size_given {
        match (&size, in_file) {
            (Some(s), true) => t.args.extend(["--io-size".to_string(), s.clone()]),
            (Some(s), false) if g.runtime.is_some() && g.fio_spelling => t.notes.push(format!(
                "without --time_based fio stops each job after --size ({s}); ringlab runs for --runtime (add --io-size {s} for fio's stop)"
            )),
            _ => {}
        }
    }
    if let Some(o) = &g.trim_rw {
        // fio's falloc engine punches holes itself: no BLKDISCARD.
        if g.engine.as_deref() == Some("ftruncate") {
            return Err(refuse(o, "fio's ftruncate engine answers a trim with EINVAL (its job fails at the first one); ringlab has not built that: use rw=write or randwrite"));
        } else if files.is_some() {
            return Err(refuse(o, "fio's file engines (filecreate, filestat, filedelete) count reads and writes; ringlab has not compared their trims with fio's: use rw=read, write, randread, randwrite, rw or randrw"));
        } else if g.engine.as_deref() == Some("falloc") {
            t.args.retain(|a| a != "--trim-blkdiscard");
        } else {
            trim_target(o, t)?;
        }
    }
    if let Some(o) = g.create_on_open.as_ref().filter(|_| files.is_some()) {
        // fio's filecreate lays out nothing anyway; filestat and
        // filedelete would stat or unlink files fio never made.
        if g.engine.as_deref() != Some("filecreate") {
            return Err(refuse(o, "fio then lays out no file, and its stat or unlink of a file that does not exist fails the job; ringlab has not built that: drop create_on_open (fio lays the files out before the run)"));
        }
    } else if let Some(o) = &g.create_on_open {
        // fio lays out nothing then: the file is created empty when the
        // job opens it and its writes fill it.
        let reads = t.args.windows(2).any(|w| {
            w[0] == "--rw"
                && matches!(
                    w[1].as_str(),
                    "read" | "randread" | "rw" | "readwrite" | "randrw"
                )
        }) || !g.rw_given;
        if reads {
            // fio reads the file as it is (created empty when missing): a
            // read past its end gets no byte and fails the job (EIO, "full
            // resid"). ringlab fio does that; ringlab io refuses it.
            t.create_on_open_reads = Some(refuse(o, "fio then reads a file it never wrote (its first read past the end fails the job with EIO); ringlab io refuses it: run it with 'ringlab fio', which fails that job as fio does, or give create_on_open=1 to a job that only writes or trims").to_string());
        } else if !g.fallocate_given {
            t.args
                .extend(["--fallocate".to_string(), "none".to_string()]);
        }
    }
    if let Some((o, w)) = &g.rwmixwrite {
        // fio takes both when they add up to 100 (its examples give both).
        match g.rwmixread.as_deref().map(str::parse::<u32>) {
            None => t
                .args
                .extend(["--rwmixread".to_string(), (100 - w).to_string()]),
            Some(Ok(r)) if r + w == 100 => {}
            Some(_) => {
                return Err(refuse(
                    o,
                    "rwmixread and rwmixwrite must add up to 100; give one of them",
                ))
            }
        }
    }
    if let Some(o) = g.fill_device_at.as_ref().filter(|_| g.fill_device) {
        let writes = t
            .args
            .windows(2)
            .rfind(|w| w[0] == "--rw")
            .is_some_and(|w| w[1].contains("write") || w[1] == "rw" || w[1] == "randrw");
        if !writes {
            return Err(refuse(o, "fio lays out the file of a job that only reads until the file system is full, then reads it; ringlab has not built that: give size=, or make the job write (rw=write)"));
        }
    }
    if in_file {
        // A job file means what it means to fio: fio's defaults where
        // ringlab's differ (engine psync, pattern read).
        if g.engine.is_none() {
            t.args.extend(["--engine".to_string(), "sync".to_string()]);
        }
        if !g.rw_given {
            t.args.extend(["--rw".to_string(), "read".to_string()]);
        }
        // Without size, fio moves the whole file once (with fill_device:
        // until the file system is full).
        if !g.time_based && !g.io_size_given && size.is_none() && !g.fill_device {
            let len = t
                .target
                .as_ref()
                .and_then(|p| std::fs::metadata(p).ok())
                .and_then(|m| whole_target_bytes(&m));
            match len {
                Some(n) => t.args.extend(["--io-size".to_string(), n.to_string()]),
                None => t.notes.push(
                    "no size and no time_based: fio would move the whole target once; ringlab runs for --runtime (10s unless given)"
                        .to_string(),
                ),
            }
        }
    }
    if let Some(h) = t.fadvise.clone() {
        let hint = if h == "auto" {
            let random = t
                .args
                .windows(2)
                .any(|w| w[0] == "--rw" && w[1].starts_with("rand"));
            if random { "random" } else { "sequential" }.to_string()
        } else {
            h
        };
        t.args.extend(["--fadvise-hint".to_string(), hint]);
    }
    let content: Vec<super::content::Opt> = std::mem::take(&mut t.content)
        .into_iter()
        .map(|o| super::content::Opt {
            named: o.origin.name(&o.key),
            key: o.key,
            value: o.value,
        })
        .collect();
    let (args, notes) = super::content::finish(&content, &t.args, g.time_based)?;
    t.args.extend(args);
    t.notes.extend(notes);
    if let Some(on) = t.log_offset {
        t.args
            .extend(["--log-offset".to_string(), u8::from(on).to_string()]);
    }
    if g.cpus_given && !g.cpus_policy_split {
        t.notes.push("cpus_allowed: ringlab pins each job to one CPU of the list in turn (fio's cpus_allowed_policy=split); fio's default, shared, lets every job run on all of them".to_string());
    }
    if g.randrepeat == Some(false) && !g.seed_given {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        t.args.extend(["--seed".to_string(), seed.to_string()]);
    }
    let depth: u32 = g
        .iodepth
        .as_deref()
        .and_then(|d| d.parse().ok())
        .unwrap_or(1);
    // fio's synchronous engines (psync, sync, posixaio's one call per
    // request, null) take the batch options and ignore them: so does this.
    // Without ioengine a job file runs fio's default, psync; ringlab's own
    // command line runs ringlab's, uring.
    let batches = match g.engine.as_deref() {
        None => !in_file,
        Some(e) => matches!(e, "uring" | "libaio"),
    };
    if !batches {
        g.submit_batch = None;
        g.complete_min = None;
        g.complete_max = None;
    }
    if let Some((_, n)) = &g.submit_batch {
        // fio: 0 means "the whole iodepth at once".
        let n = if *n == 0 { depth } else { *n };
        t.args.extend(["--submit-batch".to_string(), n.to_string()]);
    } else if in_file && matches!(g.engine.as_deref(), Some("uring" | "libaio")) {
        // fio's default iodepth_batch_submit is 1: one request per
        // io_submit or io_uring_enter. A job file means what it means to
        // fio, so it gets fio's default, not ringlab's once-per-loop-turn;
        // at depth 1 too, where fio submits in one call and waits in
        // another (ringlab's default does both in one io_uring_enter).
        t.args
            .extend(["--submit-batch".to_string(), "1".to_string()]);
    }
    if let Some((o, n)) = &g.complete_min {
        if *n == 0 {
            // fio: 0 reaps without waiting, which is ringlab's --reap peek.
            if g.engine.as_deref().unwrap_or("uring") != "uring" {
                return Err(refuse(o, "0 reaps without waiting, which ringlab has only for io_uring (--reap peek); use 1 or more with this engine"));
            }
            t.args.extend(["--reap".to_string(), "peek".to_string()]);
        } else {
            t.args
                .extend(["--complete-batch".to_string(), n.to_string()]);
        }
    }
    // fio's iodepth_batch_complete_max: each getevents takes at most that
    // many completions, and fio refills before it reaps again. Unset (or
    // below the minimum) it is iodepth_batch_complete_min, 1 by default
    // (fio's init.c), so fio reaps one completion per call: a job file gets
    // that. On ringlab's own command line a reap takes every completion
    // that is ready unless the option is given.
    if batches {
        let min = g.complete_min.as_ref().map_or(1, |(_, n)| *n).max(1);
        let max = match &g.complete_max {
            Some((_, n)) => Some((*n).max(min)),
            None if in_file && matches!(g.engine.as_deref(), Some("uring" | "libaio")) => Some(min),
            None => None,
        };
        // Past the depth a limit never bites: leave it out.
        if let Some(n) = max.filter(|&n| n < depth) {
            t.args.extend(["--complete-max".to_string(), n.to_string()]);
        }
    }
    Ok(())
}

/// A file engine's files (filecreate, filestat, filedelete), as fio sizes
/// them: strings for ringlab's options.
struct FileWords {
    /// Each file's size (`--size`).
    file_size: Option<String>,
    /// The bytes of the job (`--io-size` without time_based).
    job_bytes: Option<String>,
}

/// For a file engine: fio's nrfiles, openfiles and stat_type as
/// `--nrfiles`, `--openfiles`, `--stat-type`, and the files' sizes as fio
/// sizes them (filesetup.c): filesize= each (size= the job's bytes, when
/// smaller than all files), or size= shared out over the files; for
/// filecreate without either, one block each (its get_file_size). With
/// filename= fio makes that one file and ignores nrfiles. For any other
/// engine: nrfiles other than 1 and stat_type are refused.
fn file_engine_files(t: &mut Translated, g: &Gathered) -> Result<Option<FileWords>> {
    let engine = g.engine.clone().unwrap_or_default();
    if !matches!(engine.as_str(), "filecreate" | "filestat" | "filedelete") {
        if let Some((o, n)) = &g.nrfiles {
            if *n != 1 {
                return Err(refuse(o, "ringlab's jobs share one file or device: only its file engines (ioengine=filecreate, filestat, filedelete) take several files per job"));
            }
        }
        // openfiles: fio caps it at nrfiles (1), which changes nothing.
        if let Some((o, _)) = &g.stat_type {
            return Err(refuse(
                o,
                "an option of fio's filestat engine: fio takes it with ioengine=filestat only",
            ));
        }
        return Ok(None);
    }
    if let Some((o, _)) = g.stat_type.as_ref().filter(|_| engine != "filestat") {
        return Err(refuse(
            o,
            "an option of fio's filestat engine: fio takes it with ioengine=filestat only",
        ));
    }
    let mut nrfiles = g.nrfiles.as_ref().map_or(1, |(_, n)| *n);
    if g.filename.is_some() {
        if let Some((o, n)) = g.nrfiles.as_ref().filter(|(_, n)| *n > 1) {
            t.notes.push(format!(
                "{}={n}: with filename= fio makes that one file and ignores nrfiles; so does ringlab",
                o.origin.name(&o.key)
            ));
        }
        nrfiles = 1;
    } else {
        t.args
            .extend(["--nrfiles".to_string(), nrfiles.to_string()]);
    }
    if let Some((_, n)) = &g.openfiles {
        t.args
            .extend(["--openfiles".to_string(), n.min(&nrfiles).to_string()]);
    }
    if let Some((_, v)) = &g.stat_type {
        t.args.extend(["--stat-type".to_string(), v.clone()]);
    }
    let bytes = |v: &str| ringlab_stats::units::parse_size(v).ok();
    let (file_size, job_bytes) = match (&g.filesize, &g.size) {
        (Some(f), s) => {
            let all = bytes(f).map(|b| b * nrfiles);
            let job = match (s.as_deref().and_then(bytes), all) {
                (Some(sb), Some(ab)) if sb < ab => sb,
                (_, Some(ab)) => ab,
                _ => {
                    return Ok(Some(FileWords {
                        file_size: Some(f.clone()),
                        job_bytes: s.clone(),
                    }))
                }
            };
            (Some(f.clone()), Some(job.to_string()))
        }
        (None, Some(s)) => match bytes(s) {
            // fio: size= shared out over the files.
            Some(sb) => ((sb / nrfiles).to_string().into(), Some(sb.to_string())),
            None => (Some(s.clone()), Some(s.clone())),
        },
        (None, None) if engine == "filecreate" => {
            // fio's filecreate sizes each file at one block.
            let bs = t
                .args
                .windows(2)
                .rfind(|w| w[0] == "--bs")
                .and_then(|w| bytes(&w[1]))
                .unwrap_or(4096);
            (Some(bs.to_string()), Some((bs * nrfiles).to_string()))
        }
        (None, None) => (None, None),
    };
    Ok(Some(FileWords {
        file_size,
        job_bytes,
    }))
}

/// fio 3.33 trims with the BLKDISCARD ioctl on every engine: a block
/// device takes it, a regular file refuses it (ENOTTY) and fio's job ends
/// with error 25 at its first trim. `ringlab fio` does the same (its jobs
/// fail as fio's); `ringlab io`, where any I/O error fails the run, refuses
/// such a job before it runs ([`Translated::trim_on_file`]).
fn trim_target(o: &Written, t: &mut Translated) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let target = t.target.clone().unwrap_or_default();
    let is_device = std::fs::metadata(&target).is_ok_and(|m| m.file_type().is_block_device());
    if is_device {
        return Ok(());
    }
    let shown = if target.is_empty() {
        "the job's file".to_string()
    } else {
        target
    };
    let rw = o.value.as_deref().unwrap_or("trim").trim().to_string();
    t.trim_on_file = Some(refuse(
        o,
        &format!(
            "fio 3.33 trims with the BLKDISCARD ioctl, which a regular file refuses (ENOTTY): on {shown} fio's job ends with error 25 at its first trim, so ringlab io refuses it rather than run other work; run it with 'ringlab fio' (which fails that job as fio does), trim a block device that supports discard, or punch holes in a file with ioengine=falloc (fio's too) or 'ringlab io --rw {rw} FILE'"
        ),
    ).to_string());
    Ok(())
}

/// fio's list of files: split at each ':' not escaped as '\:', with the
/// escapes removed.
pub fn split_unescaped(v: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                chars.next();
                if let Some(p) = parts.last_mut() {
                    p.push(':')
                }
            }
            ':' => parts.push(String::new()),
            c => {
                if let Some(p) = parts.last_mut() {
                    p.push(c)
                }
            }
        }
    }
    parts.retain(|p| !p.is_empty());
    parts
}

/// Levenshtein distance, for suggestions.
pub fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The nearest name among `names` (fio's and ringlab's), if close enough to
/// be a likely misspelling.
pub fn suggest<'a>(key: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let k = key.replace('-', "_").to_ascii_lowercase();
    names
        .into_iter()
        .map(|n| (distance(&k, &n.replace('-', "_")), n))
        .filter(|(d, n)| *d <= 2.max(n.len() / 4) && *d < k.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// fio's aliases of options it lists under another name (`fio --cmdhelp`
/// shows only the names).
const FIO_ALIASES: &[(&str, &str)] = &[
    ("ss", "steadystate"),
    ("ss_dur", "steadystate_duration"),
    ("ss_ramp", "steadystate_ramp_time"),
];

/// fio's name of `key` (an option name or alias fio 3.33 knows), if any.
fn fio_name(key: &str) -> Option<&'static str> {
    let plain = key.replace('-', "_");
    FIO_ALIASES
        .iter()
        .find(|(alias, _)| *alias == plain)
        .map(|(_, name)| *name)
        .or_else(|| {
            super::names::FIO_NAMES
                .iter()
                .copied()
                .find(|n| *n == plain)
        })
}

/// Whether `key` is an option of fio's (ringlab may still lack it).
pub fn is_fio_name(key: &str) -> bool {
    fio_name(key).is_some()
}

/// What an unknown option gets: the nearest fio or ringlab name, or the
/// plain statement that ringlab has no equivalent.
pub fn unknown(key: &str, origin: &Origin) -> anyhow::Error {
    let names = FIO_OPTIONS
        .iter()
        .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()));
    let shown = origin.name(key);
    if let Some(fio_name) = fio_name(key) {
        let alias = if fio_name == key.replace('-', "_") {
            String::new()
        } else {
            format!(" ({fio_name})")
        };
        return usage_error(format!(
            "{shown}: fio's option{alias} has no equivalent in ringlab"
        ));
    }
    match suggest(key, names) {
        Some(near) => usage_error(format!(
            "{shown}: unknown option; did you mean fio's {}? {}",
            origin.spelled(near),
            describe(near)
        )),
        None => usage_error(format!(
            "{shown}: ringlab has no equivalent of this option (it knows ringlab's options and the fio options listed in 'ringlab io --help')"
        )),
    }
}

/// What ringlab does with fio's `name`, in a few words.
pub fn describe(name: &str) -> String {
    let Some(rec) = find(name) else {
        return String::new();
    };
    match rec.kind {
        Kind::Value(flag) => format!("(ringlab's --{flag})"),
        Kind::Flag(flag) => format!("(ringlab's --{flag})"),
        Kind::Special => match rec.name {
            "filename" => "(ringlab's TARGET)".to_string(),
            "ioengine" => "(ringlab's --engine)".to_string(),
            "direct" | "buffered" => "(ringlab's --direct)".to_string(),
            "iodepth_batch_submit" => "(ringlab's --submit-batch)".to_string(),
            "iodepth_batch_complete_min" => "(ringlab's --complete-batch)".to_string(),
            "randrepeat" => "(ringlab's fixed --seed)".to_string(),
            _ => String::new(),
        },
        Kind::Ignored(why) => format!("(accepted: {why})"),
        Kind::Fixed(v, hint) => format!("(only ={v}: {hint})"),
        Kind::Refused(hint) => format!("({hint})"),
    }
}

/// The fio spellings for `ringlab io --help`.
pub fn help_text() -> String {
    let mut s = String::from(
        "fio's spellings (--opt=value or --opt value; booleans bare, =1 or =0), also the words of job files (--fio JOBFILE):\n",
    );
    for o in FIO_OPTIONS {
        let mut names = o.name.to_string();
        for a in o.aliases {
            names.push('/');
            names.push_str(a);
        }
        let what = match (o.kind, o.name) {
            (Kind::Special, "rw") => "--rw; :N offset modifiers (read:8k, randread:4); trim, randtrim, trimwrite, randtrimwrite with BLKDISCARD as fio 3.33 (a regular file refuses it: ENOTTY)".to_string(),
            (Kind::Special, "create_on_open") => {
                "=1: the file is created when the job opens it, with no data written (a job that reads is refused)".to_string()
            }
            (Kind::Special, "fallocate") => {
                "none/posix/keep/native/truncate/0/1: how a new file of a job that reads nothing is allocated (no data written); a job that reads gets its file written, as fio".to_string()
            }
            (Kind::Special, "bs") => "--bs; R,W (sizes of reads and writes): --bssplit R,W".to_string(),
            (Kind::Special, "size") | (Kind::Special, "filesize") => {
                "--size; in a job file without time_based also --io-size (fio stops after size bytes)".to_string()
            }
            (Kind::Special, "time_based") => {
                "ringlab is time based whenever --runtime is given".to_string()
            }
            (Kind::Special, "rwmixwrite") => "--rwmixread 100-N".to_string(),
            (Kind::Special, "filename") => {
                "TARGET (laid out at --size if missing, and kept)".to_string()
            }
            (Kind::Special, "directory") => {
                "with filename: DIR/FILE; with name: DIR/NAME.0.0 (as fio names it); else --directory"
                    .to_string()
            }
            (Kind::Special, "name") => {
                "the job's name (fio-json jobname); without filename the target is NAME.0.0".to_string()
            }
            (Kind::Special, "ioengine") => {
                "--engine: psync/sync/pvsync=sync, io_uring=uring, libaio, posixaio, null, falloc (fallocate per request: write allocates, read allocates keeping the length, trim punches a hole), cpuio (burns the CPU: --cpuload, --cpumode, --cpuchunks), filecreate/filestat/filedelete (each of a job's nrfiles files created, stat'ed or unlinked, timed; the I/Os counted, not done), ftruncate (each write truncates the file to its offset)".to_string()
            }
            (Kind::Special, "nrfiles") => {
                "--nrfiles: files per job for filecreate, filestat, filedelete (NAME.J.F, as fio names them; filename= makes one file); only 1 with the other engines, whose jobs share one file or device".to_string()
            }
            (Kind::Special, "openfiles") => {
                "--openfiles: files open at once per job (filecreate, filestat, filedelete); the other engines have one".to_string()
            }
            (Kind::Special, "stat_type") => {
                "--stat-type: stat, lstat or statx (ioengine=filestat)".to_string()
            }
            (Kind::Special, "direct") => "=1: --direct".to_string(),
            (Kind::Special, "buffered") => "=0: --direct".to_string(),
            (Kind::Special, "cpus_allowed_policy") => {
                "split is ringlab's behaviour; shared is accepted with a note".to_string()
            }
            (Kind::Special, "randrepeat") => {
                "=1: ringlab's fixed seed; =0: a seed from the clock".to_string()
            }
            (Kind::Special, "percentile_list") => {
                "the percentiles of fio-json's clat_ns (P:P:..); text and json keep p50 to p99.99".to_string()
            }
            (Kind::Special, "force_async") => "--force-async=N".to_string(),
            (Kind::Special, "fadvise_hint") => {
                "posix_fadvise on each job's file at open (1: by pattern; ringlab fio's default)".to_string()
            }
            (Kind::Special, "random_generator") => {
                "tausworthe/tausworthe64/lfsr: ringlab fio draws offsets and sizes from fio's own generators and seeds".to_string()
            }
            (Kind::Special, "fill_device") => {
                "write until the file system or device is full: ENOSPC ends the job without an error; a file is re-created empty, and without size the region is the free space".to_string()
            }
            (Kind::Special, "clocksource") => {
                "--clocksource: cpu (the time stamp counter; fio's default and ringlab's where the kernel's clocksource is tsc) or clock_gettime; gettimeofday refused".to_string()
            }
            (Kind::Special, "log_offset") => {
                "the offset column of per-I/O latency logs (ringlab io writes it always)".to_string()
            }
            (Kind::Special, "iodepth_batch_submit") => {
                "--submit-batch N (0: iodepth)".to_string()
            }
            (Kind::Special, "iodepth_batch_complete_min") => {
                "--complete-batch N (0: --reap peek)".to_string()
            }
            (Kind::Special, "iodepth_batch_complete_max") => {
                "--complete-max N (unset: iodepth_batch_complete_min, as fio)".to_string()
            }
            (Kind::Special, "bsrange") => "--bsrange LO-HI[,LO-HI] (LO-LO: --bs LO)".to_string(),
            (Kind::Special, "group_reporting") => {
                "one fio-json entry per job-file section instead of one per thread".to_string()
            }
            (Kind::Special, "stonewall") | (Kind::Special, "new_group") => {
                "job files: starts a new group (groups run one after the other)".to_string()
            }
            (Kind::Special, "wait_for") => {
                "job files: an earlier section (sections run in order)".to_string()
            }
            (Kind::Special, "output") => "--output FILE".to_string(),
            (Kind::Special, "output_format") => {
                "normal=text, json+=fio json with clat_ns bins; json stays ringlab's schema, fio-json is fio's"
                    .to_string()
            }
            (Kind::Special, n) if super::content::NAMES.contains(&n) => {
                super::content::help(n).to_string()
            }
            (Kind::Value(_), "offset_increment") => {
                "job N of numjobs starts at offset + N * this (bytes, or N% of the target with starts aligned up to bs)".to_string()
            }
            (Kind::Value(f), _) => format!("--{f}"),
            (Kind::Flag(f), _) => format!("--{f}"),
            (Kind::Ignored(why), _) => format!("accepted, changes nothing: {why}"),
            (Kind::Fixed(v, hint), _) => format!("only {v}; otherwise refused: {hint}"),
            (Kind::Refused(hint), _) => format!("refused: {hint}"),
            (Kind::Special, _) => String::new(),
        };
        s.push_str(&format!("  {names}: {what}\n"));
    }
    s
}

/// The bytes fio moves when a job gives no size: a regular file's length,
/// or a block device's size (from sysfs, in 512-byte sectors); `None` for
/// an empty file or anything else.
fn whole_target_bytes(m: &std::fs::Metadata) -> Option<u64> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    if m.is_file() {
        return (m.len() > 0).then_some(m.len());
    }
    if !m.file_type().is_block_device() {
        return None;
    }
    let rdev = m.rdev();
    let sectors: u64 = std::fs::read_to_string(format!(
        "/sys/dev/block/{}:{}/size",
        libc::major(rdev),
        libc::minor(rdev)
    ))
    .ok()?
    .trim()
    .parse()
    .ok()?;
    (sectors > 0).then_some(sectors * 512)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(line: &str) -> Vec<Written> {
        line.split_whitespace()
            .map(|kv| {
                let (k, v) = match kv.split_once('=') {
                    Some((k, v)) => (k, Some(v.to_string())),
                    None => (kv, None),
                };
                Written {
                    key: k.to_string(),
                    value: v,
                    origin: Origin::Cli,
                }
            })
            .collect()
    }

    fn args(line: &str, in_file: bool) -> String {
        let t = translate(&w(line), in_file, None).unwrap();
        let mut a = t.args;
        a.extend(t.target);
        a.join(" ")
    }

    fn err(line: &str) -> String {
        translate(&w(line), true, None).unwrap_err().to_string()
    }

    #[test]
    fn fio_first_command_line_maps() {
        let a = args("filename=x.dat size=64M rw=randread bs=4k ioengine=io_uring iodepth=32 direct=1 runtime=2 time_based name=test numjobs=2 group_reporting", false);
        assert_eq!(a, "--rw randread --bs 4k --engine uring --iodepth 32 --direct --runtime 2 --numjobs 2 --size 64M x.dat");
    }

    #[test]
    fn job_files_without_time_based_stop_after_size() {
        assert_eq!(
            args("size=1m rw=read runtime=5", true),
            "--rw read --runtime 5 --size 1m --io-size 1m --engine sync"
        );
        assert_eq!(
            args(
                "size=1m runtime=5 time_based=1 ioengine=libaio iodepth=4",
                true
            ),
            "--runtime 5 --engine libaio --iodepth 4 --size 1m --rw read --submit-batch 1 --complete-max 1"
        );
        let t = translate(&w("size=1m runtime=5 thread"), false, None).unwrap();
        assert!(t.notes[0].contains("--io-size 1m"), "{:?}", t.notes);
        assert!(err("time_based").contains("runs forever"));
    }

    #[test]
    fn filesize_sizes_the_file_and_bounds_the_io() {
        // fio: the file is filesize; the job moves size, at most the file.
        assert_eq!(
            args("size=2m filesize=1m rw=read", true),
            "--rw read --size 1m --io-size 1m --engine sync"
        );
        assert_eq!(
            args("size=1m filesize=2m rw=read", true),
            "--rw read --size 2m --io-size 1m --engine sync"
        );
    }

    #[test]
    fn io_uring_names_and_booleans() {
        assert_eq!(
            args("hipri sqthread_poll=1 sqthread_poll_cpu=0 registerfiles fixedbufs=0 direct=0 buffered=0", false),
            "--iopoll --sqpoll --sqpoll-cpu 0 --fixed-files --direct"
        );
        assert_eq!(
            args(
                "iodepth=8 iodepth_batch_submit=0 iodepth_batch_complete_min=2",
                false
            ),
            "--iodepth 8 --submit-batch 8 --complete-batch 2"
        );
        assert_eq!(args("iodepth_batch_complete_min=0", false), "--reap peek");
    }

    /// fio reaps at most iodepth_batch_complete_max completions per call,
    /// and that is iodepth_batch_complete_min (1) when unset.
    #[test]
    fn reaps_are_capped_as_fio_caps_them() {
        let tail = |line: &str, in_file: bool| {
            let a = args(line, in_file);
            a.find("--complete-max").map(|i| a[i..].to_string())
        };
        let e = "ioengine=libaio iodepth=8";
        assert_eq!(tail(e, true).as_deref(), Some("--complete-max 1"));
        assert_eq!(
            tail(&format!("{e} iodepth_batch_complete_min=2"), true).as_deref(),
            Some("--complete-max 2")
        );
        assert_eq!(
            tail(&format!("{e} iodepth_batch_complete_max=4"), true).as_deref(),
            Some("--complete-max 4")
        );
        // Below the minimum fio raises it to the minimum.
        assert_eq!(
            tail(
                &format!("{e} iodepth_batch_complete_min=4 iodepth_batch_complete_max=2"),
                true
            )
            .as_deref(),
            Some("--complete-max 4")
        );
        // At the depth the cap never bites; synchronous engines have none.
        assert_eq!(
            tail(&format!("{e} iodepth_batch_complete_max=8"), true),
            None
        );
        assert_eq!(tail("ioengine=psync iodepth=8", true), None);
        // A job file without ioengine runs fio's psync, which ignores them.
        assert_eq!(
            args(
                "iodepth=8 iodepth_batch_submit=2 iodepth_batch_complete_max=2",
                true
            ),
            "--iodepth 8 --engine sync --rw read"
        );
        // ringlab's own command line keeps its default unless told.
        assert_eq!(tail(e, false), None);
        assert_eq!(
            tail(&format!("{e} iodepth_batch_complete_max=3"), false).as_deref(),
            Some("--complete-max 3")
        );
        assert!(err("direct=yes2").contains("1 or 0"));
    }

    #[test]
    fn names_become_targets_as_fio_names_them() {
        assert_eq!(args("name=j directory=/d", false), "/d/j.0.0");
        assert_eq!(args("filename=f directory=/d", false), "/d/f");
        assert_eq!(args("filename=/abs directory=/d", false), "/d//abs");
        assert_eq!(args(r"filename=a\:b", false), "a:b");
        assert_eq!(args("directory=/d", false), "--directory /d");
        assert_eq!(args("name=j", false), "./j.0.0");
    }

    #[test]
    fn refusals_say_why_or_not_yet() {
        assert_eq!(
            args(
                "end_fsync=1 bssplit=4k/50:64k/50 bsrange=4k-16k bs=4k,64k",
                false
            ),
            "--end-fsync --bssplit 4k/50:64k/50 --bsrange 4k-16k --bssplit 4k,64k"
        );
        assert_eq!(args("end_fsync=0", false), "");
        assert_eq!(args("thread norandommap", false), "");
        assert_eq!(
            args(
                "ramp_time=5 rate_iops=100,50 fsync=4 number_ios=9 loops=2",
                false
            ),
            "--ramp-time 5 --rate-iops 100,50 --fsync 4 --number-ios 9 --loops 2"
        );
        assert!(err("rate_min=100").contains("not yet supported"));
        assert!(err("output=x.json").contains("command-line option"));
        assert!(err("percentile_list=99:x").contains("up to 20 percentages"));
        let t = translate(&w("percentile_list=99:99.9"), false, None).unwrap();
        assert_eq!(t.percentiles, Some(vec![99.0, 99.9]));
        assert!(err("ioengine=mmap").contains("no equivalent"));
        assert!(err("filename=a:b").contains("several files"));
        assert!(err("verify=sha256").contains("not the standard"));
        assert!(args("verify=crc32c verify_backlog=8", true)
            .contains("--fio-verify kind=crc32c,do_verify=1,backlog=8"));
        assert_eq!(
            args("rw=randread:8", false),
            "--rw-modifier 8 --rw randread"
        );
        assert_eq!(
            args("thinktime=10 thinktime_spin=5 thinktime_blocks=4", false),
            "--thinktime 10 --thinktime-spin 5 --thinktime-blocks 4"
        );
        assert_eq!(args("bsrange=4k-4k", false), "--bs 4k");
    }

    #[test]
    fn file_engines_size_their_files_as_fio() {
        // filesize each: the job moves nrfiles x filesize, in NAME.J.F.
        assert_eq!(
            args("name=t0 ioengine=filestat nrfiles=200 filesize=4k", true),
            "--engine filestat --nrfiles 200 --size 4k --io-size 819200 --rw read ./t0"
        );
        // size shared out over the files; openfiles capped at nrfiles.
        assert_eq!(
            args(
                "name=t0 directory=/d ioengine=filedelete nrfiles=3 openfiles=9 size=24k",
                true
            ),
            "--engine filedelete --nrfiles 3 --openfiles 3 --size 8192 --io-size 24576 --rw read /d/t0"
        );
        // size below all the files' bytes ends the job early.
        assert!(args(
            "name=t0 ioengine=filestat nrfiles=3 filesize=8k size=8k",
            true
        )
        .contains("--size 8k --io-size 8192"));
        // filecreate without sizes: one block per file (fio's
        // get_file_size); filename= is one file, nrfiles ignored.
        assert!(args("name=t0 ioengine=filecreate nrfiles=5 bs=8k", true)
            .contains("--nrfiles 5 --size 8192 --io-size 40960"));
        let t = translate(
            &w("name=t0 ioengine=filecreate nrfiles=5 filename=x filesize=8k"),
            true,
            None,
        )
        .unwrap();
        assert!(!t.args.contains(&"--nrfiles".to_string()), "{:?}", t.args);
        assert_eq!(t.target.as_deref(), Some("x"));
        assert!(t.notes[0].contains("ignores nrfiles"), "{:?}", t.notes);
        assert!(args("ioengine=filestat stat_type=statx filesize=4k", true)
            .contains("--stat-type statx"));
        // The other engines: one file per job.
        assert!(err("nrfiles=2 size=1m").contains("only its file engines"));
        assert!(err("ioengine=filecreate stat_type=lstat").contains("filestat engine"));
        assert!(err("ioengine=filestat stat_type=fstat").contains("stat, lstat and statx"));
        assert!(err("ioengine=ftruncate rw=trim size=1m").contains("EINVAL"));
        assert!(err("ioengine=filestat create_on_open=1 filesize=4k")
            .contains("does not exist fails the job"));
        assert!(err("ioengine=mmap").contains("filecreate, filestat, filedelete and ftruncate"));
    }

    #[test]
    fn readme_and_help_list_every_fio_option() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
                .unwrap();
        let help = help_text();
        for o in FIO_OPTIONS {
            for n in std::iter::once(o.name).chain(o.aliases.iter().copied()) {
                assert!(
                    readme.contains(&format!("| `{n}`")) || readme.contains(&format!(", `{n}`")),
                    "README lacks {n}"
                );
                assert!(help.contains(n), "help lacks {n}");
            }
        }
    }

    #[test]
    fn unknown_options_get_fio_suggestions() {
        let e = unknown("registerfile", &Origin::Cli).to_string();
        assert!(
            e.contains("fio's --registerfiles") && e.contains("--fixed-files"),
            "{e}"
        );
        let e = unknown("iodepth_batch_complete_mn", &Origin::Cli).to_string();
        assert!(e.contains("--iodepth_batch_complete_min"), "{e}");
        let e = unknown("zone_reset_threshold", &Origin::Cli).to_string();
        assert!(e.contains("no equivalent"), "{e}");
    }
}
