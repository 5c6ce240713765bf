//! `ringlab fio ARGS...` (and the binary run under the name `fio`): fio's
//! command line and job files with fio's defaults and meaning, fio's output
//! formats, ringlab's evidence after them.
//!
//! Each fio job becomes the plan `ringlab io` would run (the same
//! translation table, the same engines); what differs is only fio's
//! defaults (psync, read, size as a bound, the random map, fadvise hints,
//! the offset-less log) and that the jobs of one group start together.

use crate::{Cli, Command};
use anyhow::{Context, Result};
use clap::Parser;
use ringlab_core::gate::GroupGate;
use ringlab_core::usage_error;
use ringlab_io::fio::json::FioJob;
use ringlab_io::fio::options::{self, Origin, Translated, Written};
use ringlab_io::fio::{jobfile, normal};
use ringlab_io::run::{run_io, RunOptions};
use ringlab_io::{IoPlan, UsageError};
use ringlab_stats::RunResult;
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// The fio release whose behaviour this personality follows.
pub const FIO_VERSION: &str = "fio-3.33";

/// Whether argv asks for the fio personality: `ringlab fio ...`, or the
/// binary invoked as `fio`.
pub fn wanted(argv: &[OsString]) -> Option<Vec<OsString>> {
    let invoked = argv
        .first()
        .map(Path::new)
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .unwrap_or("");
    if invoked == "fio" {
        return Some(argv[1..].to_vec());
    }
    if argv.get(1).and_then(|a| a.to_str()) == Some("fio") {
        return Some(argv[2..].to_vec());
    }
    None
}

/// Runs the personality; returns the exit code (0, 1 a failed run, 2 bad
/// usage as in every ringlab command).
pub fn main(args: Vec<OsString>) -> ExitCode {
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let usage = e.downcast_ref::<UsageError>().is_some();
            eprintln!("ringlab fio: {e:#}");
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Normal,
    Terse,
    Json,
    JsonPlus,
}

/// fio's command line, read.
#[derive(Default)]
struct CmdLine {
    output: Option<PathBuf>,
    formats: Vec<Format>,
    parse_only: bool,
    showcmd: bool,
    sections: Vec<String>,
    readonly: bool,
    files: Vec<PathBuf>,
    /// Job options before the first --name: defaults of every job.
    global: Vec<Written>,
    /// --name=X and the options after it.
    jobs: Vec<(String, Vec<Written>)>,
}

/// fio's options that only the command line has, and that change nothing
/// in a ringlab run (said why).
const NO_OPS: &[(&str, &str)] = &[
    ("eta", "ringlab prints no ETA line"),
    ("eta-newline", "ringlab prints no ETA line"),
    ("eta-interval", "ringlab prints no ETA line"),
    ("warnings-fatal", "ringlab's warnings are in its output"),
    ("max-jobs", "ringlab bounds jobs itself"),
    ("alloc-size", "ringlab has no shared-memory pool to size"),
    ("debug", "ringlab has no fio debug channels"),
    ("aux-path", "ringlab writes no auxiliary files"),
];

/// fio's command-line options ringlab fio refuses, with the reason.
const REFUSED: &[(&str, &str)] = &[
    ("client", "ringlab fio has no client/server mode"),
    ("server", "ringlab fio has no client/server mode"),
    ("daemonize", "ringlab fio has no client/server mode"),
    ("remote-config", "ringlab fio has no client/server mode"),
    (
        "cmdhelp",
        "see 'ringlab io --help' for the fio options ringlab knows",
    ),
    (
        "enghelp",
        "ringlab's engines are psync/sync, io_uring, libaio, posixaio",
    ),
    ("crctest", "ringlab has no checksum benchmark"),
    ("cpuclock-test", "ringlab times with CLOCK_MONOTONIC"),
    ("idle-prof", "ringlab has no idle profiler"),
    ("inflate-log", "ringlab writes no compressed logs"),
    ("trigger-file", "ringlab has no triggers"),
    ("trigger-timeout", "ringlab has no triggers"),
    ("trigger", "ringlab has no triggers"),
    ("trigger-remote", "ringlab has no triggers"),
    ("profile", "ringlab has no fio profiles"),
    ("bandwidth-log", "use write_bw_log in the job"),
    ("latency-log", "use write_lat_log in the job"),
    ("merge-blktrace-only", "ringlab has no blktrace replay"),
];

fn parse_formats(v: &str) -> Result<Vec<Format>> {
    v.split(',')
        .map(|f| match f.trim() {
            "normal" => Ok(Format::Normal),
            "terse" => Ok(Format::Terse),
            "json" => Ok(Format::Json),
            "json+" => Ok(Format::JsonPlus),
            other => Err(usage_error(format!(
                "--output-format={other}: fio's formats are normal, terse, json, json+ (comma-separated for several)"
            ))),
        })
        .collect()
}

fn parse_cmdline(args: &[OsString]) -> Result<CmdLine> {
    let mut c = CmdLine::default();
    let mut i = 0;
    let mut only_files = false;
    while i < args.len() {
        let tok = args[i].to_string_lossy().into_owned();
        i += 1;
        if only_files || !tok.starts_with('-') || tok == "-" {
            c.files.push(PathBuf::from(&tok));
            continue;
        }
        if tok == "--" {
            only_files = true;
            continue;
        }
        let body = tok.trim_start_matches('-');
        let (key, value) = match body.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (body.to_string(), None),
        };
        let take_value = |i: &mut usize, value: Option<String>| -> Option<String> {
            value.or_else(|| {
                let v = args.get(*i)?.to_string_lossy().into_owned();
                *i += 1;
                Some(v)
            })
        };
        let cli_key = key.replace('_', "-");
        match cli_key.as_str() {
            "output" => {
                let v = take_value(&mut i, value)
                    .ok_or_else(|| usage_error("--output needs a file"))?;
                c.output = Some(PathBuf::from(v));
            }
            "output-format" => {
                let v = take_value(&mut i, value)
                    .ok_or_else(|| usage_error("--output-format needs a format"))?;
                c.formats = parse_formats(&v)?;
            }
            "minimal" => c.formats = vec![Format::Terse],
            "append-terse" => c.formats.push(Format::Terse),
            "terse-version" => {
                let v = take_value(&mut i, value).unwrap_or_default();
                if v.trim() != "3" {
                    return Err(usage_error(format!(
                        "--terse-version={v}: ringlab fio writes terse version 3 only (fio's default)"
                    )));
                }
            }
            "parse-only" => c.parse_only = true,
            "showcmd" => c.showcmd = true,
            "readonly" => c.readonly = true,
            "section" => {
                let v = take_value(&mut i, value)
                    .ok_or_else(|| usage_error("--section needs a section name"))?;
                c.sections.push(v);
            }
            "version" => {
                println!("{FIO_VERSION} (ringlab fio {})", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            "help" | "h" => {
                print!("{}", help());
                std::process::exit(0);
            }
            k if NO_OPS.iter().any(|(n, _)| *n == k) => {
                // --eta and --eta-interval take a value; the others none.
                if value.is_none()
                    && matches!(
                        k,
                        "eta" | "eta-interval" | "debug" | "max-jobs" | "alloc-size" | "aux-path"
                    )
                {
                    i += 1;
                }
            }
            k if REFUSED.iter().any(|(n, _)| *n == k) => {
                let why = REFUSED.iter().find(|(n, _)| *n == k).map_or("", |r| r.1);
                return Err(usage_error(format!("--{key}: {why}")));
            }
            _ => {
                let value = match value {
                    Some(v) => Some(v),
                    None => {
                        let boolean = options::find(&key).is_some_and(options::is_boolean);
                        let next = args.get(i).map(|a| a.to_string_lossy().into_owned());
                        match next {
                            Some(n) if boolean && (n == "0" || n == "1") => {
                                i += 1;
                                Some(n)
                            }
                            Some(n)
                                if !boolean
                                    && !n.starts_with('-')
                                    && options::find(&key).is_some() =>
                            {
                                i += 1;
                                Some(n)
                            }
                            _ => None,
                        }
                    }
                };
                if key == "name" {
                    let name = value.ok_or_else(|| usage_error("--name needs a job name"))?;
                    c.jobs.push((name, Vec::new()));
                    continue;
                }
                // fio's keywords ($pagesize, $ncpus, $mb_memory, ${VAR})
                // are replaced on the command line too.
                let value = value
                    .map(|v| jobfile::expand(&v, &|k| std::env::var(k).ok()))
                    .transpose()
                    .map_err(|e| usage_error(format!("--{key}: {e}")))?;
                let w = Written {
                    key,
                    value,
                    origin: Origin::Cli,
                };
                match c.jobs.last_mut() {
                    Some((_, opts)) => opts.push(w),
                    None => c.global.push(w),
                }
            }
        }
    }
    if c.formats.is_empty() {
        c.formats.push(Format::Normal);
    }
    Ok(c)
}

fn help() -> String {
    format!(
        "ringlab fio: fio's command line, job files and output on ringlab's engines ({FIO_VERSION} semantics)\n\n\
         usage: ringlab fio [options] [job options] <job file(s)>\n\
         \x20 (or the ringlab binary run under the name 'fio')\n\n\
         \x20 --output=FILE          write the output to FILE\n\
         \x20 --output-format=F      normal, terse, json, json+ (several: json,normal)\n\
         \x20 --minimal              terse output (version 3)\n\
         \x20 --parse-only           check the jobs, run nothing\n\
         \x20 --showcmd              print each job as a ringlab io command line\n\
         \x20 --section=NAME         run only this section (repeatable)\n\
         \x20 --readonly             refuse jobs that write\n\
         \x20 --eta*, --warnings-fatal, --max-jobs, --alloc-size: accepted, no effect\n\n\
         Job options are fio's (--name=job starts a job; options before it are\n\
         defaults of every job). The options ringlab knows are listed in\n\
         'ringlab io --help'; an option or value it cannot honour as fio does is\n\
         refused with its place and the reason.\n"
    )
}

/// One fio job, resolved.
struct Job {
    name: String,
    /// Where it was defined (file:line, or the command line).
    place: String,
    group: u32,
    /// Runs after every job of an earlier batch ended (stonewall).
    batch: u32,
    words: Translated,
    plan: IoPlan,
    /// ringlab io's argv of this job (for --showcmd).
    argv: Vec<String>,
    /// Its own options (for fio's "job options").
    own: Vec<(String, String)>,
    lat_percentiles: bool,
    clat_percentiles: bool,
    unified: ringlab_io::fio::json::Unified,
    description: Option<String>,
    startdelay: std::time::Duration,
    /// fio's exitall (set in any job, it holds for all, as fio's global
    /// flag) and this job's exit_what: which jobs end when this one ends.
    exit: (bool, crate::fio_groups::ExitWhat),
    /// fio's numa_cpu_nodes and numa_mem_policy.
    numa: crate::fio_groups::Numa,
    /// fio's ss= and latency_target options.
    steady: crate::fio_steady::Words,
    /// Its bytes are its file's when its group starts (fio_fill.rs).
    sized_at_start: bool,
    /// fio's cpuio exit_on_io_done (fio_cpuio.rs).
    cpuio_exit: bool,
}

fn canonical(key: &str) -> String {
    options::find(key)
        .map(|o| o.name.to_string())
        .unwrap_or_else(|| key.replace('-', "_"))
}

fn is_set(o: &Written) -> bool {
    !matches!(
        o.value.as_deref().map(str::trim),
        Some("0") | Some("false") | Some("off")
    )
}

/// fio's later assignment of an option overrides an earlier one.
fn last_wins(opts: &[Written]) -> Vec<Written> {
    let mut out: Vec<Written> = Vec::new();
    for o in opts {
        let k = canonical(&o.key);
        out.retain(|p| canonical(&p.key) != k);
        out.push(o.clone());
    }
    out
}

/// Options only the personality reads (fio's meaning without a ringlab io
/// flag), taken out before the shared translation.
struct Personal {
    startdelay: std::time::Duration,
    notes: Vec<String>,
    clat_percentiles: bool,
    norandommap: bool,
    lat_percentiles: bool,
    unified: ringlab_io::fio::json::Unified,
    description: Option<String>,
    time_based: bool,
    exit: (bool, crate::fio_groups::ExitWhat),
    numa: crate::fio_groups::Numa,
}

fn take_personal(opts: &mut Vec<Written>) -> Result<Personal> {
    let mut p = Personal {
        startdelay: std::time::Duration::ZERO,
        notes: Vec::new(),
        clat_percentiles: true,
        norandommap: false,
        lat_percentiles: false,
        unified: ringlab_io::fio::json::Unified::None,
        description: None,
        time_based: false,
        exit: (false, crate::fio_groups::ExitWhat::Group),
        numa: Default::default(),
    };
    crate::fio_groups::take(opts, &mut p.exit, &mut p.numa)?;
    let mut keep = Vec::new();
    for o in opts.drain(..) {
        match canonical(&o.key).as_str() {
            "norandommap" => p.norandommap = is_set(&o),
            "lat_percentiles" => p.lat_percentiles = is_set(&o),
            "clat_percentiles" => p.clat_percentiles = is_set(&o),
            "startdelay" => {
                let v = o.value.clone().unwrap_or_default();
                let v = v.trim();
                if v.contains('-') {
                    return Err(usage_error(format!(
                        "{}={v}: a range of start delays is not supported by ringlab yet",
                        o.origin.name(&o.key)
                    )));
                }
                // fio: a bare number is seconds.
                let d = if v.chars().all(|c| c.is_ascii_digit()) {
                    v.parse::<u64>().ok().map(std::time::Duration::from_secs)
                } else {
                    ringlab_stats::units::parse_duration(v).ok()
                };
                p.startdelay = d.ok_or_else(|| {
                    usage_error(format!("{}={v}: not a time", o.origin.name(&o.key)))
                })?;
            }
            "refill_buffers" if is_set(&o) => p.notes.push(format!(
                "{}: ringlab fills each buffer once with pseudo-random data; fio refills it before every write (the I/O is the same, the bytes differ)",
                o.origin.name(&o.key)
            )),
            "rate_min" | "rate_iops_min" => p.notes.push(format!(
                "{}: fio ends the job if its rate falls below this; ringlab does not check it (the work is the same while the rate holds)",
                o.origin.name(&o.key)
            )),
            "unified_rw_reporting" => {
                let v = o.value.as_deref().unwrap_or("1").trim();
                p.unified = ringlab_io::fio::json::Unified::parse(v).ok_or_else(|| {
                    usage_error(format!(
                        "{}={v}: fio takes none (0), mixed (1) or both (2)",
                        o.origin.name(&o.key)
                    ))
                })?;
            }
            "description" => {
                p.description = o.value.clone();
                keep.push(o);
            }
            "time_based" => {
                p.time_based = is_set(&o);
                keep.push(o);
            }
            _ => keep.push(o),
        }
    }
    *opts = keep;
    Ok(p)
}

/// Options whose values are sizes in fio's units.
const SIZE_KEYS: &[&str] = &[
    "size",
    "filesize",
    "io_size",
    "offset",
    "offset_increment",
    "bs",
    "bsrange",
    "bssplit",
    "blockalign",
    "rate",
    "zonesize",
    "zonerange",
    "zoneskip",
];

/// The bytes of a file or block device, if it exists.
fn target_len(path: &Path) -> Option<u64> {
    use std::io::Seek;
    let mut f = std::fs::File::open(path).ok()?;
    f.seek(std::io::SeekFrom::End(0)).ok()
}

/// The value of option `key` as the job last wrote it (fio's rule: the
/// last one counts), by its canonical name.
fn last_value<'a>(opts: &'a [Written], key: &str) -> Option<&'a str> {
    opts.iter()
        .rev()
        .find(|o| canonical(&o.key) == key)
        .and_then(|o| o.value.as_deref())
}

/// The file fio opens for a job (filename joined to directory, or the
/// job's name in it).
fn fio_target(opts: &[Written], name: &str) -> PathBuf {
    let file = last_value(opts, "filename").map(|f| options::split_unescaped(f).join(":"));
    match (file, last_value(opts, "directory")) {
        (Some(f), Some(d)) => PathBuf::from(format!("{}/{f}", d.trim_end_matches('/'))),
        (Some(f), None) => PathBuf::from(f),
        (None, d) => PathBuf::from(d.unwrap_or(".")).join(format!("{name}.0.0")),
    }
}

/// fio's values as plain bytes: its unit rules (kb_base), arithmetic, and
/// sizes and offsets in percent of the target.
fn fio_values(opts: &mut Vec<Written>, name: &str) -> Result<()> {
    let mut kb_base = 1024;
    if let Some(i) = opts.iter().position(|o| canonical(&o.key) == "kb_base") {
        let o = opts.remove(i);
        kb_base = match o.value.as_deref().map(str::trim) {
            Some("1024") | None => 1024,
            Some("1000") => 1000,
            Some(v) => {
                return Err(usage_error(format!(
                    "{}={v}: fio's kb_base is 1024 or 1000",
                    o.origin.name(&o.key)
                )))
            }
        };
    }
    for o in opts.iter_mut() {
        match canonical(&o.key).as_str() {
            // fio: a log without a name is named after the job
            // (jobname_type.x.log).
            "write_bw_log" | "write_lat_log" | "write_iops_log" | "write_hist_log"
                if o.value.as_deref().is_none_or(|v| v.trim().is_empty()) =>
            {
                o.value = Some(name.to_string());
            }
            // fio's third value is for trims, which no ringlab pattern
            // issues (rw=trim is refused).
            "rate" | "rate_iops" | "rate_min" | "rate_iops_min" => {
                if let Some(v) = &o.value {
                    let parts: Vec<&str> = v.split(',').collect();
                    if parts.len() == 3 {
                        o.value = Some(parts[..2].join(","));
                    }
                }
            }
            _ => {}
        }
    }
    let target = fio_target(opts, name);
    let bs = last_value(opts, "bs")
        .and_then(|v| ringlab_io::fio::value::size(v.split(',').next().unwrap_or(v), kb_base).ok())
        .filter(|b| *b > 0)
        .unwrap_or(4096);
    for o in opts.iter_mut() {
        let key = canonical(&o.key);
        if !SIZE_KEYS.contains(&key.as_str()) {
            continue;
        }
        let Some(v) = o.value.clone() else { continue };
        if key == "offset_increment" && v.trim().ends_with('%') {
            // A share of the target when the job starts (fill_device.rs).
            continue;
        }
        if let Some(pct) = v.trim().strip_suffix('%') {
            let pct: f64 = pct.trim().parse().map_err(|_| {
                usage_error(format!("{}={v}: not a percentage", o.origin.name(&o.key)))
            })?;
            if !matches!(key.as_str(), "size" | "filesize" | "offset")
                || !(0.0..=100.0).contains(&pct)
            {
                return Err(usage_error(format!(
                    "{}={v}: fio takes a percentage from 0 to 100 for size and offset only",
                    o.origin.name(&o.key)
                )));
            }
            let Some(len) = target_len(&target) else {
                return Err(usage_error(format!(
                    "{}={v}: a percentage of {}, which does not exist yet (fio sizes it from the file or device): give a size",
                    o.origin.name(&o.key),
                    target.display()
                )));
            };
            let bytes = (len as f64 * pct / 100.0) as u64 / bs * bs;
            o.value = Some(bytes.to_string());
            continue;
        }
        let plain = ringlab_io::fio::value::plain(&v, kb_base)
            .map_err(|e| usage_error(format!("{}={v}: {e}", o.origin.name(&o.key))))?;
        o.value = Some(plain);
    }
    Ok(())
}

/// Resolves one job: fio's options (defaults first, its own after) into
/// ringlab io's plan with fio's defaults.
#[allow(clippy::too_many_arguments)]
fn resolve(
    name: &str,
    place: &str,
    all: &[Written],
    own: Vec<(String, String)>,
    group: u32,
    batch: u32,
    readonly: bool,
    parse_only: bool,
) -> Result<Job> {
    let mut opts = last_wins(all);
    let p = take_personal(&mut opts)?;
    crate::fio_groups::refuse_zbd(&opts, &fio_target(&opts, name))?;
    let reg = crate::fio_regulate::take(&mut opts)?;
    let steady = crate::fio_steady::take(&mut opts)?;
    let cpuio_exit = crate::fio_cpuio::take(&mut opts)?;
    let cpuio = crate::fio_cpuio::is_cpuio(&opts);
    fio_values(&mut opts, name)?;
    let has = |k: &str| opts.iter().any(|o| canonical(&o.key) == k);
    let mut words = options::translate(&opts, true, Some(name))?;
    if cpuio {
        crate::fio_cpuio::adjust(&mut words, place, name, parse_only)?;
    }
    let rw_value = words
        .args
        .windows(2)
        .find(|w| w[0] == "--rw")
        .map(|w| w[1].clone())
        .unwrap_or_else(|| "read".to_string());
    let random = rw_value.starts_with("rand");
    let mut extra: Vec<String> = Vec::new();
    // fio turns its random map off for a distribution other than
    // `random` (init.c), and follows its own rules with it (io_u.c).
    let uniform = opts
        .iter()
        .filter(|o| canonical(&o.key) == "random_distribution")
        .all(|o| o.value.as_deref().is_none_or(|v| v.trim() == "random"));
    // Every job: fio's end rules for its streams (workload/fio_rand.rs),
    // and its random map for a uniform random job.
    {
        if random && !p.norandommap && uniform {
            extra.push("--random-map".to_string());
        }
        extra.push("--fio-random-map".to_string());
        let bound = if has("io_size") { "io-size" } else { "size" };
        extra.push(bound.to_string());
    }
    if !has("fadvise_hint") {
        extra.extend([
            "--fadvise-hint".to_string(),
            if random { "random" } else { "sequential" }.to_string(),
        ]);
    }
    if !has("invalidate")
        || opts
            .iter()
            .any(|o| canonical(&o.key) == "invalidate" && is_set(o))
    {
        extra.push("--invalidate-each-pass".to_string());
    }
    // fio writes to an existing regular file it is given (ringlab io asks
    // for --allow-destructive); a mounted device stays refused, as fio's
    // allow_mounted_write=0. fio's file engines use, lay out again or
    // unlink whatever files have their names (NAME.J.F), as fio does.
    let file_engine = last_value(&opts, "ioengine")
        .is_some_and(|v| matches!(v.trim(), "filecreate" | "filestat" | "filedelete"));
    if (fio_target(&opts, name).is_file() || file_engine) && !has("allow_mounted_write") {
        extra.push("--allow-destructive".to_string());
    }
    // fio lays out a new file by writing it only for a job that reads (or
    // with overwrite=1); a job that only writes or trims gets it allocated
    // by fio's default fallocate=native, no data written (extend_file).
    let set = |k: &str| opts.iter().any(|o| canonical(&o.key) == k && is_set(o));
    if !has("fallocate") && !set("create_on_open") && !set("overwrite") {
        extra.extend(["--fallocate".to_string(), "native".to_string()]);
    }
    // fio's bandwidth and IOPS logs: per I/O without log_avg_msec, only
    // whole windows with it.
    extra.push("--log-rates-per-io".to_string());
    if !has("log_offset") {
        extra.extend(["--log-offset".to_string(), "0".to_string()]);
    }
    let bounded = words
        .args
        .iter()
        .any(|a| a == "--io-size" || a == "--number-ios" || a == "--fill-device");
    if !bounded && !p.time_based && !parse_only && !cpuio {
        return Err(usage_error(format!(
            "{place}: [{name}] has no size and its file does not exist (fio: 'you need to specify size='): give size="
        )));
    }
    if readonly && (rw_value.contains("write") || rw_value == "rw" || rw_value == "randrw") {
        return Err(usage_error(format!(
            "{place}: [{name}] writes (rw={rw_value}) and --readonly was given"
        )));
    }
    let mut argv: Vec<String> = vec!["ringlab".into(), "io".into()];
    argv.extend(words.args.iter().cloned());
    argv.extend(extra);
    argv.extend(words.target.iter().cloned());
    let cli = Cli::try_parse_from(&argv).map_err(|e| {
        let msg = e.render().to_string();
        let first = msg
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .replacen("error: ", "", 1);
        usage_error(format!("{place}: [{name}]: {first}"))
    })?;
    let Command::Io { io, .. } = cli.command else {
        return Err(usage_error(format!("{place}: [{name}]: not an io run")));
    };
    let mut plan = IoPlan::from_args(&io).map_err(|e| {
        if e.is::<UsageError>() {
            usage_error(format!("{place}: [{name}]: {e}"))
        } else {
            e
        }
    })?;
    // fio's failed job: an I/O error ends this job alone (its figures
    // and error in the output), not the run.
    plan.fio_job_errors = true;
    // fio's io_uring engine sets IOSQE_ASYNC only with force_async=N,
    // whatever the file: so does its personality.
    plan.force_async_auto = false;
    plan.create_on_open = words.create_on_open_reads.is_some();
    words.jobname = Some(name.to_string());
    words.notes.extend(p.notes);
    words.notes.extend(reg.notes.iter().cloned());
    crate::fio_regulate::apply(&reg, &mut plan, &mut words.notes)?;
    crate::fio_regulate::file_names(&mut plan, &opts, name);
    crate::fio_steady::apply(
        &steady,
        &mut plan,
        words.group_reporting,
        &format!("{place}: [{name}]"),
    )?;
    words.notes.extend(steady.notes.iter().cloned());
    Ok(Job {
        startdelay: p.startdelay,
        clat_percentiles: p.clat_percentiles,
        name: name.to_string(),
        place: place.to_string(),
        group,
        batch,
        words,
        plan,
        argv: argv[1..].to_vec(),
        own,
        lat_percentiles: p.lat_percentiles,
        unified: p.unified,
        description: p.description,
        exit: p.exit,
        numa: p.numa,
        steady,
        sized_at_start: false,
        cpuio_exit,
    })
}

/// fio's group and batch numbers: stonewall (wait_for_previous) starts a
/// new batch and group; new_group a new group of the same batch.
fn group_step(opts: &[Written], first: bool, group: &mut u32, batch: &mut u32) {
    if first {
        return;
    }
    let stone = opts
        .iter()
        .any(|o| matches!(canonical(&o.key).as_str(), "stonewall" | "wait_for") && is_set(o));
    let new_group = opts
        .iter()
        .any(|o| canonical(&o.key) == "new_group" && is_set(o));
    if stone {
        *batch += 1;
        *group += 1;
    } else if new_group {
        *group += 1;
    }
}

/// fio's "global options" as written (key, value).
type GlobalOptions = Vec<(String, String)>;

fn build_jobs(c: &CmdLine) -> Result<(Vec<Job>, GlobalOptions)> {
    let mut jobs = Vec::new();
    let mut global: Vec<(String, String)> = c
        .global
        .iter()
        .map(|o| (canonical(&o.key), o.value.clone().unwrap_or_default()))
        .collect();
    let (mut group, mut batch) = (0u32, 0u32);
    for path in &c.files {
        let shown = path.display().to_string();
        let bytes = jobfile::read_capped(path, &shown)?;
        let text = String::from_utf8_lossy(&bytes);
        let file = jobfile::parse(&shown, &text, &|k| std::env::var(k).ok())?;
        global.extend(file.global.iter().cloned());
        for s in &file.jobs {
            if !c.sections.is_empty() && !c.sections.contains(&s.name) {
                continue;
            }
            let mut all = c.global.clone();
            all.extend(s.options.iter().cloned());
            group_step(&s.options, jobs.is_empty(), &mut group, &mut batch);
            let own = s
                .options
                .iter()
                .filter(
                    |o| !matches!(&o.origin, Origin::File { section, .. } if section == "global"),
                )
                .map(|o| (o.key.clone(), o.value.clone().unwrap_or_default()))
                .collect();
            let name = s
                .options
                .iter()
                .rev()
                .find(|o| o.key == "name")
                .and_then(|o| o.value.clone())
                .unwrap_or_else(|| s.name.clone());
            let place = format!("{shown}:{}", s.line);
            let later = crate::fio_fill::sized_at_start(
                &last_wins(&all),
                &fio_target(&last_wins(&all), &name),
                batch,
                jobs.iter().map(|j: &Job| (j.batch, &j.plan)),
            );
            let mut job = resolve(
                &name,
                &place,
                &all,
                own,
                group,
                batch,
                c.readonly,
                c.parse_only || later,
            )?;
            if later {
                job.sized_at_start = true;
                job.words
                    .notes
                    .retain(|n| !n.starts_with("no size and no time_based"));
            }
            jobs.push(job);
        }
    }
    for (name, own) in &c.jobs {
        let mut all = c.global.clone();
        all.extend(own.iter().cloned());
        group_step(own, jobs.is_empty(), &mut group, &mut batch);
        let own_kv = own
            .iter()
            .map(|o| (o.key.clone(), o.value.clone().unwrap_or_default()))
            .collect();
        jobs.push(resolve(
            name,
            "command line",
            &all,
            own_kv,
            group,
            batch,
            c.readonly,
            c.parse_only,
        )?);
    }
    if jobs.is_empty() {
        if !c.global.is_empty() && c.files.is_empty() {
            // fio runs options given without --name as one job named
            // after nothing; a name makes its file.
            return Err(usage_error(
                "no job: give --name=NAME (fio names each job, and its file after it) or a job file",
            ));
        }
        return Err(usage_error(
            "no job file and no --name: nothing to run (ringlab fio --help)",
        ));
    }
    number_threads(&mut jobs);
    Ok((jobs, global))
}

/// fio's thread numbers, for what spans jobs (a global dedupe working
/// set, the number in a log's name): each job's first, and how many the
/// file runs.
fn number_threads(jobs: &mut [Job]) {
    let total: u32 = jobs.iter().map(|j| j.plan.numjobs).sum();
    let mut base = 0;
    for j in jobs.iter_mut() {
        if let Some(l) = &mut j.plan.logs {
            l.job_base = base;
        }
        if let Some(b) = &mut j.plan.fio_buffers {
            b.thread_base = base;
            b.threads = total;
        }
        base += j.plan.numjobs;
    }
}

/// A disk's counters from /proc/diskstats.
#[derive(Clone, Default)]
struct DiskCounters {
    ios: [u64; 2],
    merges: [u64; 2],
    sectors: [u64; 2],
    ticks: [u64; 2],
    io_ticks: u64,
    in_queue: u64,
}

fn read_diskstats(names: &[String]) -> Vec<(String, DiskCounters)> {
    let text = std::fs::read_to_string("/proc/diskstats").unwrap_or_default();
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 14 || !names.iter().any(|n| n == f[2]) {
            continue;
        }
        let n = |i: usize| f[i].parse::<u64>().unwrap_or(0);
        out.push((
            f[2].to_string(),
            DiskCounters {
                ios: [n(3), n(7)],
                merges: [n(4), n(8)],
                sectors: [n(5), n(9)],
                ticks: [n(6), n(10)],
                io_ticks: n(12),
                in_queue: n(13),
            },
        ));
    }
    out
}

fn disk_names(jobs: &[Job]) -> Vec<String> {
    let mut names = Vec::new();
    for j in jobs {
        let Some(t) = &j.plan.target else { continue };
        let probe = if t.exists() {
            t.clone()
        } else {
            t.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from("."))
        };
        if let Some(n) = ringlab_kstat::device::disk_of_path(&probe) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    names
}

/// What fio's disk_util holds: the disks' counters over the run.
fn disk_util(
    before: &[(String, DiskCounters)],
    after: &[(String, DiskCounters)],
    wall_ms: u64,
) -> Value {
    let mut list = Vec::new();
    for (name, a) in after {
        let Some((_, b)) = before.iter().find(|(n, _)| n == name) else {
            continue;
        };
        let d = |x: u64, y: u64| x.saturating_sub(y);
        let io_ticks = d(a.io_ticks, b.io_ticks);
        let util = if wall_ms > 0 {
            (io_ticks as f64 * 100.0 / wall_ms as f64).min(100.0)
        } else {
            0.0
        };
        list.push(json!({
            "name": name,
            "read_ios": d(a.ios[0], b.ios[0]),
            "write_ios": d(a.ios[1], b.ios[1]),
            "read_sectors": d(a.sectors[0], b.sectors[0]),
            "write_sectors": d(a.sectors[1], b.sectors[1]),
            "read_merges": d(a.merges[0], b.merges[0]),
            "write_merges": d(a.merges[1], b.merges[1]),
            "read_ticks": d(a.ticks[0], b.ticks[0]),
            "write_ticks": d(a.ticks[1], b.ticks[1]),
            "in_queue": d(a.in_queue, b.in_queue),
            "util": util,
        }));
    }
    Value::Array(list)
}

/// Page faults of this process so far (minor, major).
fn faults() -> (u64, u64) {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return (0, 0);
    }
    (ru.ru_minflt as u64, ru.ru_majflt as u64)
}

/// fio's header before the jobs run (normal output).
fn header(jobs: &[Job], cpuio_lines: &str) -> String {
    let mut s = String::new();
    for j in jobs {
        let p = &j.plan;
        if p.cpuio.is_some() {
            // fio prints no line for a job that does no I/O (FIO_NOIO).
            if p.numjobs > 1 {
                s.push_str("...\n");
            }
            continue;
        }
        let sizes = |d: usize| {
            let b = &p.block_sizes[d];
            format!("{}B-{}B", b.min(), b.max())
        };
        s.push_str(&format!(
            "{}: (g={}): rw={}, bs=(R) {}, (W) {}, (T) {}, ioengine={}, iodepth={}\n",
            j.name,
            j.group,
            p.rw.name(),
            sizes(0),
            sizes(1),
            sizes(0),
            match p.engine.name() {
                "uring" => "io_uring",
                "sync" => "psync",
                other => other,
            },
            p.iodepth
        ));
        if p.numjobs > 1 {
            s.push_str("...\n");
        }
    }
    let threads: u32 = jobs.iter().map(|j| j.plan.numjobs).sum();
    s.push_str(&format!(
        "{FIO_VERSION} (ringlab fio {})\nStarting {threads} thread{}\n{cpuio_lines}\n",
        env!("CARGO_PKG_VERSION"),
        if threads == 1 { "" } else { "s" }
    ));
    s
}

fn run(args: Vec<OsString>) -> Result<()> {
    let c = parse_cmdline(&args)?;
    let (mut jobs, global) = build_jobs(&c)?;
    for j in &jobs {
        for n in &j.words.notes {
            eprintln!("ringlab fio: note: {}: [{}]: {n}", j.place, j.name);
        }
    }
    if c.showcmd || c.parse_only {
        for j in &jobs {
            eprintln!(
                "ringlab fio: [{}] (group {}): ringlab {}",
                j.name,
                j.group,
                ringlab_core::shell::join(&j.argv.iter().map(String::as_str).collect::<Vec<_>>())
            );
        }
    }
    if c.parse_only {
        return Ok(());
    }
    let targets: Vec<PathBuf> = jobs.iter().filter_map(|j| j.plan.target.clone()).collect();
    let target_refs: Vec<&Path> = targets.iter().map(PathBuf::as_path).collect();
    let out = ringlab_core::output::Output::open(c.output.as_deref(), &target_refs)?;
    let interrupted = ringlab_core::interrupt_flag()?;
    let disks = disk_names(&jobs);
    let mut results: Vec<Option<RunResult>> = Vec::new();
    let mut faults_of: Vec<Option<(u64, u64)>> = Vec::new();
    let mut starts: Vec<Option<std::time::SystemTime>> = Vec::new();
    // fio's ss=: each job's (or group's) steady-state check, by job.
    let mut ss_reports: Vec<Option<crate::fio_steady::Report>> =
        jobs.iter().map(|_| None).collect();
    let disk_before = read_diskstats(&disks);
    let wall = std::time::Instant::now();
    let exitall = jobs.iter().any(|j| j.exit.0);
    // fio's failed jobs: each said on stderr as it is found; the run
    // exits 1 once every job's output is written.
    let mut failed: Vec<String> = Vec::new();
    // fio's cpuio exit_on_io_done: the I/O jobs of the run not ended yet.
    let io_jobs = jobs.iter().filter(|j| j.plan.cpuio.is_none()).count();
    let io_left = std::sync::atomic::AtomicUsize::new(io_jobs);
    let batches: Vec<u32> = {
        let mut b: Vec<u32> = jobs.iter().map(|j| j.batch).collect();
        b.dedup();
        b
    };
    for b in batches {
        if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
        let members: Vec<usize> = (0..jobs.len()).filter(|&i| jobs[i].batch == b).collect();
        for &i in &members {
            if jobs[i].sized_at_start {
                let j = &mut jobs[i];
                crate::fio_fill::size_now(&mut j.plan, &j.argv, &j.name)?;
            }
        }
        // Kernel evidence counts the whole process: one collector per
        // batch, on its first job.
        for (k, &i) in members.iter().enumerate() {
            if k > 0 {
                jobs[i].plan.kstat = false;
            }
        }
        let gate = Arc::new(GroupGate::new(members.len()));
        if exitall {
            // fio's start-up order: a job whose first I/O ends it goes first.
            crate::fio_exitall::order(
                &gate,
                &members
                    .iter()
                    .map(|&i| (&jobs[i].plan, jobs[i].startdelay))
                    .collect::<Vec<_>>(),
            );
        }
        let prepare_lock = Arc::new(std::sync::Mutex::new(()));
        let f0 = faults();
        // Each job ends on its own flag: the interruption, or fio's
        // exitall when another job ends.
        let exits = crate::fio_groups::Exits::new(
            &members
                .iter()
                .map(|&i| (jobs[i].name.clone(), jobs[i].group, jobs[i].exit))
                .collect::<Vec<_>>(),
            exitall,
        );
        // fio's ss=: a sampler beside the jobs, once a second.
        let ss_members: Vec<Option<crate::fio_steady::Member>> = members
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let j = &jobs[i];
                Some(crate::fio_steady::Member {
                    live: j.plan.regulation.live.clone()?,
                    stop: exits.flag(k),
                    group: j.group,
                    group_reporting: j.words.group_reporting,
                    ss: j.steady.ss?,
                })
            })
            .collect();
        let ss_all: Vec<_> = members
            .iter()
            .map(|&i| (jobs[i].name.clone(), jobs[i].group, jobs[i].steady.ss))
            .collect();
        let ss_units = crate::fio_steady::units(&ss_members, &ss_all)?;
        // cpuio jobs that end when the I/O jobs are done (none left at
        // the start: they end at once, as fio's first burn would).
        let cpuio_stops: Vec<_> = members
            .iter()
            .enumerate()
            .filter(|(_, &i)| jobs[i].cpuio_exit)
            .map(|(k, _)| exits.flag(k))
            .collect();
        let io_done = || {
            for f in &cpuio_stops {
                f.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        };
        if io_jobs > 0 && io_left.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            io_done();
        }
        let ss_done = std::sync::atomic::AtomicBool::new(false);
        let ss_attained = std::sync::Mutex::new(vec![false; members.len()]);
        let mut ss_out: Vec<Option<crate::fio_steady::Report>> = Vec::new();
        let outcomes: Vec<Result<RunResult>> = std::thread::scope(|s| {
            let forward = s.spawn(|| exits.forward(&interrupted));
            let sampler = (!ss_units.is_empty()).then(|| {
                s.spawn(|| {
                    crate::fio_steady::monitor(&ss_members, ss_units, &ss_done, wall, &ss_attained)
                })
            });
            let handles: Vec<_> = members
                .iter()
                .enumerate()
                .map(|(k, &i)| {
                    let plan = &jobs[i].plan;
                    let name = &jobs[i].name;
                    let numa = &jobs[i].numa;
                    let start_delay = jobs[i].startdelay;
                    let gate = gate.clone();
                    let prepare_lock = prepare_lock.clone();
                    let stop = exits.flag(k);
                    let exits = &exits;
                    let io_left = &io_left;
                    let io_done = &io_done;
                    s.spawn(move || {
                        let opts = RunOptions {
                            progress: false,
                            interrupted: stop,
                            group: Some((gate.clone(), k)),
                            start_delay,
                            prepare_lock: Some(prepare_lock),
                        };
                        let r = numa
                            .apply()
                            .and_then(|()| run_io(plan, &opts))
                            .with_context(|| format!("job [{name}]"));
                        if r.is_err() {
                            gate.fail();
                        }
                        if plan.cpuio.is_none()
                            && io_left.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1
                        {
                            io_done();
                        }
                        exits.ended(k);
                        gate.ended(k);
                        r
                    })
                })
                .collect();
            let out = handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("a job panicked")))
                })
                .collect();
            exits.all_ended();
            let _ = forward.join();
            ss_done.store(true, std::sync::atomic::Ordering::SeqCst);
            if let Some(h) = sampler {
                ss_out = h.join().unwrap_or_default();
            }
            out
        });
        let ss_attained = ss_attained.into_inner().unwrap_or_else(|p| p.into_inner());
        for (k, r) in ss_out.into_iter().enumerate() {
            ss_reports[members[k]] = r;
        }
        let outcomes: Vec<Result<RunResult>> = outcomes
            .into_iter()
            .enumerate()
            .map(|(k, r)| r.map(|r| exits.explain(k, r)))
            .collect();
        let outcomes: Vec<Result<RunResult>> = outcomes
            .into_iter()
            .enumerate()
            .map(|(k, r)| {
                r.map(|mut r| {
                    if jobs[members[k]].cpuio_exit
                        && !interrupted.load(std::sync::atomic::Ordering::SeqCst)
                        && r.warnings.iter().any(|w| w.starts_with("interrupted:"))
                    {
                        r.warnings.retain(|w| !w.starts_with("interrupted:"));
                        r.warnings.push("ended when the I/O jobs of the run were done (exit_on_io_done), as fio ends it".to_string());
                    }
                    if ss_attained.get(k) == Some(&true) {
                        // Ended by its steady state, as fio ends it.
                        r.warnings.retain(|w| !w.starts_with("interrupted:"));
                        r.warnings.push("ended when its steady state was attained (ss=), as fio ends it: the figures cover the run up to then".to_string());
                    }
                    r
                })
            })
            .collect();
        let stop_later = exits.stop_later();
        let f1 = faults();
        let single = members.len() == 1;
        let mut first_err: Option<anyhow::Error> = None;
        for (k, r) in outcomes.into_iter().enumerate() {
            match r {
                // The explain step of the run gave it its diagnoses.
                Ok(r) => {
                    failed.extend(crate::fio_errors::said(&jobs[members[k]].name, &r));
                    results.push(Some(r));
                }
                // Ended by exitall before it measured anything.
                Err(e) if exits.stopped(k) => {
                    eprintln!(
                        "ringlab fio: [{}] ended by exitall before it ran ({e:#})",
                        jobs[members[k]].name
                    );
                    results.push(None);
                }
                Err(e) => {
                    // The job that failed, not the ones sent home for it.
                    let aborted = e.chain().any(|c| c.to_string().contains("aborted"));
                    if first_err.is_none() || !aborted {
                        first_err = Some(e);
                    }
                    results.push(None);
                }
            }
            faults_of.push(single.then_some((f1.0 - f0.0, f1.1 - f0.1)));
        }
        starts.extend(gate.starts());
        if let Some(e) = first_err {
            return Err(e);
        }
        if stop_later {
            // exit_what=all: fio starts none of the later jobs.
            for j in jobs.iter().filter(|j| j.batch > b) {
                eprintln!(
                    "ringlab fio: [{}] not started: a job ended with exitall and exit_what=all",
                    j.name
                );
            }
            break;
        }
    }
    let disk_after = read_diskstats(&disks);
    let wall_ms = wall.elapsed().as_millis() as u64;
    let ran: Vec<(&Job, &RunResult)> = jobs
        .iter()
        .zip(&results)
        .filter_map(|(j, r)| r.as_ref().map(|r| (j, r)))
        .collect();
    let fio_jobs: Vec<FioJob> = ran
        .iter()
        .map(|(j, r)| FioJob {
            name: j.name.clone(),
            groupid: j.group,
            options: j.own.clone(),
            group_reporting: j.words.group_reporting,
            percentiles: j.words.percentiles.clone(),
            unified: j.unified,
            result: r,
        })
        .collect();
    let plus = c.formats.contains(&Format::JsonPlus);
    let mut doc = ringlab_io::fio::json::render_groups(&fio_jobs, &global, plus);
    doc["fio version"] = json!(FIO_VERSION);
    doc["disk_util"] = disk_util(&disk_before, &disk_after, wall_ms);
    // Per entry: what the personality knows beyond the result.
    if let Some(entries) = doc["jobs"].as_array_mut() {
        for e in entries.iter_mut() {
            let name = e["jobname"].as_str().unwrap_or("").to_string();
            let gid = e["groupid"].as_u64().unwrap_or(0) as u32;
            let Some(k) = ran
                .iter()
                .position(|(j, _)| j.name == name && j.group == gid)
            else {
                continue;
            };
            let j = ran[k].0;
            let idx = jobs.iter().position(|x| std::ptr::eq(x, j)).unwrap_or(0);
            if j.plan.cpuio.is_some() {
                crate::fio_cpuio::fio_figures(e);
            }
            // group_reporting over several sections: their faults added.
            let sections = e["ringlab"]["sections"].as_array().map_or(1, Vec::len);
            let faults: Vec<(u64, u64)> = ran[k..(k + sections).min(ran.len())]
                .iter()
                .filter_map(|(m, _)| {
                    let i = jobs.iter().position(|x| std::ptr::eq(x, *m))?;
                    faults_of.get(i).copied().flatten()
                })
                .collect();
            if !faults.is_empty() {
                e["minf"] = json!(faults.iter().map(|f| f.0).sum::<u64>());
                e["majf"] = json!(faults.iter().map(|f| f.1).sum::<u64>());
            }
            if let Some(d) = &j.description {
                e["desc"] = json!(d);
            }
            e["ringlab"]["lat_percentiles"] = json!(j.lat_percentiles);
            if !j.clat_percentiles && !j.lat_percentiles {
                // fio writes no percentiles then.
                for d in ["read", "write", "trim"] {
                    if let Some(c) = e[d]["clat_ns"].as_object_mut() {
                        c.remove("percentile");
                    }
                }
            }
            if !j.numa.shown.is_empty() {
                e["ringlab"]["numa"] = json!(j.numa.shown);
            }
            if let Some(Some(t)) = starts.get(idx) {
                let ms = t
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs_f64() * 1e3)
                    .unwrap_or(0.0);
                e["ringlab"]["start_unix_ms"] = json!(ms);
            }
            e["ringlab"]["runs_as"] = json!(format!("ringlab {}", j.argv.join(" ")));
            if j.plan.continue_errnos.iter().any(|v| !v.is_empty()) {
                let thread = e["ringlab"]["job"].as_u64();
                let sync = !j.plan.engine.is_async();
                crate::fio_errors::error_counts(e, ran[k].1, thread, sync);
            }
            if let Some(r) = ss_reports.get(idx).and_then(Option::as_ref) {
                e["steadystate"] = ringlab_io::fio::json::steadystate(&r.state);
            }
            if let Some(lt) = &j.plan.regulation.lat_target {
                // fio's latency_depth: the thread's, or with
                // group_reporting the last thread's.
                let thread = e["ringlab"]["job"]
                    .as_u64()
                    .map_or(j.plan.numjobs.saturating_sub(1) as usize, |n| n as usize);
                ringlab_io::fio::json::latency_target(e, lt.depth_of(thread), lt);
            }
        }
    }
    let cpuio_lines: String = jobs
        .iter()
        .map(|j| crate::fio_cpuio::init_lines(&j.name, &j.plan))
        .collect();
    let mut text = String::new();
    if !c.formats.contains(&Format::Normal) {
        // fio prints them on its output as each job starts, before any
        // format's report (the json too).
        text.push_str(&cpuio_lines);
    }
    for f in [
        Format::Terse,
        Format::Json,
        Format::JsonPlus,
        Format::Normal,
    ] {
        if !c.formats.contains(&f) {
            continue;
        }
        match f {
            Format::Terse => text.push_str(&normal::terse(&doc)),
            Format::Json | Format::JsonPlus => {
                if f == Format::Json && plus {
                    continue;
                }
                text.push_str(&serde_json::to_string_pretty(&doc)?);
                text.push('\n');
            }
            Format::Normal => {
                text.push_str(&header(&jobs, &cpuio_lines));
                text.push_str(&normal::normal(&doc));
                text.push_str(&evidence(&ran));
            }
        }
    }
    out.finish(text.as_bytes())?;
    crate::fio_errors::exit_status(&failed)
}

/// ringlab's own lines after fio's normal output: what ran, warnings,
/// diagnoses.
fn evidence(ran: &[(&Job, &RunResult)]) -> String {
    let mut s = String::from("\nringlab evidence:\n");
    for (j, r) in ran {
        s.push_str(&format!(
            "  [{}] ran as: ringlab {}\n",
            j.name,
            j.argv.join(" ")
        ));
        for w in &r.warnings {
            s.push_str(&format!("  [{}] warning: {w}\n", j.name));
        }
        let d = ringlab_kstat::explain::diagnose::render(&r.diagnoses);
        for line in d.lines().filter(|l| !l.trim().is_empty()) {
            s.push_str(&format!("  [{}] {}\n", j.name, line.trim_start()));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(line: &str) -> Vec<OsString> {
        line.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn invoked_as_fio_or_as_a_subcommand() {
        assert_eq!(
            wanted(&os("/usr/bin/fio --name=x")).unwrap(),
            os("--name=x")
        );
        assert_eq!(wanted(&os("ringlab fio a.fio")).unwrap(), os("a.fio"));
        assert!(wanted(&os("ringlab io --rw read")).is_none());
    }

    #[test]
    fn command_line_globals_jobs_and_formats() {
        let c = parse_cmdline(&os(
            "--bs=8k --eta=never --eta-newline=1 --output-format=json,normal --name=a --size=1m --name b --rw randread x.fio",
        ))
        .unwrap();
        assert_eq!(c.global.len(), 1);
        assert_eq!(c.jobs.len(), 2);
        assert_eq!(c.jobs[1].0, "b");
        assert_eq!(c.jobs[1].1[0].value.as_deref(), Some("randread"));
        assert_eq!(c.files, vec![PathBuf::from("x.fio")]);
        assert_eq!(c.formats, vec![Format::Json, Format::Normal]);
        let c = parse_cmdline(&os("--minimal --name=a")).unwrap();
        assert_eq!(c.formats, vec![Format::Terse]);
        assert!(parse_cmdline(&os("--client=h")).is_err());
    }

    #[test]
    fn later_options_override_earlier_ones() {
        let w = |k: &str, v: &str| Written {
            key: k.into(),
            value: Some(v.into()),
            origin: Origin::Cli,
        };
        let l = last_wins(&[w("bs", "4k"), w("rw", "read"), w("blocksize", "8k")]);
        assert_eq!(l.len(), 2);
        assert_eq!(l[1].value.as_deref(), Some("8k"));
    }
}
