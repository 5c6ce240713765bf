//! fio's language at the top of `ringlab io`: the command line's fio
//! spellings (translated before clap), job files (one `ringlab io` run per
//! section), and the output formats fio's consumers read.

use crate::{Cli, Command};
use anyhow::{Context, Result};
use clap::{Args, CommandFactory, Parser, ValueEnum};
use ringlab_core::usage_error;
use ringlab_io::fio::cli::Preprocessed;
use ringlab_io::fio::json::FioJob;
use ringlab_io::fio::options::Translated;
use ringlab_io::fio::{jobfile, options};
use ringlab_io::run::{run_io, RunOptions};
use ringlab_io::{IoPlan, UsageError};
use ringlab_stats::RunResult;
use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

/// `--output-format` and `--output` of `ringlab io`.
#[derive(Args, Debug)]
#[command(next_help_heading = "Output")]
pub struct IoOutputArgs {
    /// text for people; json for programs (schema/result.schema.json);
    /// fio-json in fio's JSON shape (fio-plot and other fio consumers), json+
    /// the same with clat_ns bins (fio's json+). fio's normal is text.
    #[arg(long, value_enum, default_value_t = IoFormat::Text)]
    pub output_format: IoFormat,
    /// Write the result to FILE instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IoFormat {
    Text,
    Json,
    #[value(name = "fio-json")]
    FioJson,
    #[value(name = "json+")]
    FioJsonPlus,
}

/// What `main` does after the fio layer: parse these arguments (with the
/// fio words said on the command line), or exit with this code (a job file
/// ran).
pub enum Parsed {
    Args(Vec<OsString>, Box<Translated>),
    Done(ExitCode),
}

/// Translates fio's spellings on the command line; runs a job file.
pub fn preprocess() -> Result<Parsed> {
    let mut cli = Cli::command();
    // Built, so that the io subcommand holds the global options too.
    cli.build();
    // --overwrite-files holds for a job file run from here too.
    ringlab_core::files::allow_overwrite(std::env::args_os().any(|a| a == "--overwrite-files"));
    let io = cli
        .find_subcommand("io")
        .context("the io subcommand is defined")?;
    match ringlab_io::fio::cli::preprocess(std::env::args_os().collect(), io)? {
        Preprocessed::Run { args, fio } => Ok(Parsed::Args(args, fio)),
        Preprocessed::JobFile { path, rest } => {
            let code = match run_job_file(&path, &rest) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    let usage = e.downcast_ref::<UsageError>().is_some();
                    eprintln!(
                        "ringlab: {e:#}{}",
                        if usage {
                            " (see 'ringlab io --help')"
                        } else {
                            ""
                        }
                    );
                    ExitCode::from(if usage { 2 } else { 1 })
                }
            };
            Ok(Parsed::Done(code))
        }
    }
}

/// Says on stderr where ringlab differs from fio for this run.
pub fn print_notes(notes: &[String]) {
    for n in notes {
        eprintln!("ringlab: note: {n}");
    }
}

/// One job of a job file, checked and ready to run.
struct Job {
    name: String,
    group: u32,
    words: Translated,
    plan: IoPlan,
}

/// Runs a fio job file: every section is checked before any runs (an
/// option ringlab cannot honour stops it with its place named), then the
/// sections run in order, each as one `ringlab io` run.
pub fn run_job_file(path: &Path, rest: &[OsString]) -> Result<()> {
    let shown = path.display().to_string();
    let max = jobfile::JOB_FILE_MAX_BYTES;
    let meta = std::fs::metadata(path)
        .map_err(|e| usage_error(format!("cannot read job file {shown}: {e}")))?;
    if !meta.is_file() || meta.len() > max {
        return Err(usage_error(format!(
            "job file {shown}: not a regular file of at most {max} bytes ({} bytes): fio job files are small text files",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(
            std::fs::File::open(path)
                .map_err(|e| usage_error(format!("cannot read job file {shown}: {e}")))?,
            max + 1,
        ),
        &mut bytes,
    )
    .map_err(|e| usage_error(format!("cannot read job file {shown}: {e}")))?;
    if !jobfile::looks_like_job_file(&bytes) {
        return Err(usage_error(format!(
            "{shown} does not read as a fio job file: it must be text with a [section] first and fio options (key=value) in it"
        )));
    }
    let parse_only = rest.iter().any(|a| a == "--parse-only");
    let rest: Vec<OsString> = rest
        .iter()
        .filter(|a| *a != "--parse-only")
        .cloned()
        .collect();
    let text = String::from_utf8_lossy(&bytes);
    let file = jobfile::parse(&shown, &text, &|k| std::env::var(k).ok())?;
    let mut jobs = Vec::new();
    let mut output: Option<IoOutputArgs> = None;
    for s in &file.jobs {
        let mut words = options::translate(&s.options, true, Some(&s.name))?;
        if let Some(why) = words.io_refusal() {
            return Err(ringlab_core::usage_error(why.clone()));
        }
        // fio's "job options" are the section's own; [global]'s are listed
        // once, as "global options".
        words.options = s
            .options
            .iter()
            .filter(|o| {
                !matches!(&o.origin, options::Origin::File { section, .. } if section == "global")
            })
            .map(|o| (o.key.clone(), o.value.clone().unwrap_or_default()))
            .collect();
        let mut argv: Vec<OsString> = vec!["ringlab".into(), "io".into()];
        argv.extend(words.args.iter().map(OsString::from));
        argv.extend(words.target.iter().map(OsString::from));
        argv.extend(rest.iter().cloned());
        let where_ = format!("{shown}:{}: [{}]", s.line, s.name);
        let cli = Cli::try_parse_from(&argv).map_err(|e| {
            let msg = e.render().to_string();
            let first = msg
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .replacen("error: ", "", 1);
            usage_error(format!("{where_}: {first}"))
        })?;
        let Command::Io {
            io, output: out, ..
        } = cli.command
        else {
            return Err(usage_error(format!("{where_}: not an io run")));
        };
        let plan = IoPlan::from_args(&io).map_err(|e| {
            if e.is::<UsageError>() {
                usage_error(format!("{where_}: {e}"))
            } else {
                e
            }
        })?;
        output.get_or_insert(out);
        jobs.push(Job {
            name: words.jobname.clone().unwrap_or_else(|| s.name.clone()),
            group: s.group,
            words,
            plan,
        });
    }
    let output = output.context("a job file has at least one job")?;
    if parse_only {
        for j in &jobs {
            print_notes(&j.words.notes);
            let mut words: Vec<&str> = vec!["io"];
            words.extend(j.words.args.iter().map(String::as_str));
            words.extend(j.words.target.iter().map(String::as_str));
            println!(
                "[{}] group {}: ringlab {}",
                j.name,
                j.group,
                ringlab_core::shell::join(&words)
            );
        }
        println!(
            "parse only: {} job{} of {shown} checked; no I/O was done",
            jobs.len(),
            if jobs.len() == 1 { "" } else { "s" }
        );
        return Ok(());
    }
    let targets: Vec<&std::path::Path> = jobs
        .iter()
        .filter_map(|j| j.plan.target.as_deref())
        .collect();
    let out = ringlab_core::output::Output::open(output.output.as_deref(), &targets)?;
    say_how_groups_run(&jobs);
    let interrupted = ringlab_core::interrupt_flag()?;
    let opts = RunOptions {
        progress: std::io::stdout().is_terminal(),
        interrupted: interrupted.clone(),
        group: None,
        start_delay: std::time::Duration::ZERO,
        prepare_lock: None,
    };
    let mut results: Vec<RunResult> = Vec::new();
    for j in &jobs {
        if interrupted.load(Ordering::SeqCst) {
            break;
        }
        print_notes(&j.words.notes);
        eprintln!("ringlab: job [{}] (group {})", j.name, j.group);
        let r = run_io(&j.plan, &opts).with_context(|| format!("job [{}]", j.name))?;
        results.push(r);
    }
    let ran: Vec<(&Translated, u32, &RunResult)> = jobs
        .iter()
        .zip(&results)
        .map(|(j, r)| (&j.words, j.group, r))
        .collect();
    let named: Vec<(&str, &Translated)> =
        jobs.iter().map(|j| (j.name.as_str(), &j.words)).collect();
    let rendered = render_named(&ran, &named, &file.global, output.output_format)?;
    out.finish(rendered.as_bytes())
}

/// fio runs the jobs of one group at the same time; ringlab's runner runs
/// one workload at a time, so it runs them one after the other and says
/// so rather than let the numbers pass for concurrent ones.
fn say_how_groups_run(jobs: &[Job]) {
    let mut g = 0;
    while g < jobs.len() {
        let same: Vec<&str> = jobs[g..]
            .iter()
            .take_while(|j| j.group == jobs[g].group)
            .map(|j| j.name.as_str())
            .collect();
        if same.len() > 1 {
            eprintln!(
                "ringlab: note: jobs [{}] form one group, which fio runs at the same time; ringlab runs them one after the other (its runner runs one workload at a time), so each job's figures are its own, not measured alongside the others ('ringlab fio JOBFILE' runs them together, as fio)",
                same.join("], [")
            );
        }
        g += same.len();
    }
}

/// Renders results of a command line or a job file in `format`.
pub fn render_io(
    runs: &[(&Translated, u32, &RunResult)],
    global: &[(String, String)],
    format: IoFormat,
) -> Result<String> {
    let named: Vec<(&str, &Translated)> = runs
        .iter()
        .map(|(w, _, _)| (w.jobname.as_deref().unwrap_or("ringlab"), *w))
        .collect();
    render_named(runs, &named, global, format)
}

fn render_named(
    runs: &[(&Translated, u32, &RunResult)],
    names: &[(&str, &Translated)],
    global: &[(String, String)],
    format: IoFormat,
) -> Result<String> {
    let fio_shape = matches!(format, IoFormat::FioJson | IoFormat::FioJsonPlus);
    if !fio_shape && runs.iter().any(|(w, _, _)| w.percentiles.is_some()) {
        print_notes(&[
            "percentile_list shapes only --output-format fio-json and json+; text and json show p50, p90, p99, p99.9 and p99.99".to_string(),
        ]);
    }
    Ok(match format {
        IoFormat::Text if runs.len() == 1 && names[0].1.jobname.is_none() => {
            crate::io_text(runs[0].2)
        }
        IoFormat::Text => {
            let mut s = String::new();
            for ((_, group, r), (name, _)) in runs.iter().zip(names) {
                s.push_str(&format!("fio job [{name}] (group {group})\n"));
                s.push_str(&crate::io_text(r));
            }
            s
        }
        IoFormat::Json if runs.len() == 1 => serde_json::to_string_pretty(runs[0].2)? + "\n",
        IoFormat::Json => {
            let all: Vec<&RunResult> = runs.iter().map(|(_, _, r)| *r).collect();
            serde_json::to_string_pretty(&all)? + "\n"
        }
        IoFormat::FioJson | IoFormat::FioJsonPlus => {
            let jobs: Vec<FioJob> = runs
                .iter()
                .zip(names)
                .map(|((w, group, r), (name, _))| FioJob {
                    name: name.to_string(),
                    groupid: *group,
                    options: w.options.clone(),
                    group_reporting: w.group_reporting,
                    percentiles: w.percentiles.clone(),
                    unified: ringlab_io::fio::json::Unified::None,
                    result: r,
                })
                .collect();
            let doc = ringlab_io::fio::json::render(&jobs, global, format == IoFormat::FioJsonPlus);
            serde_json::to_string_pretty(&doc)? + "\n"
        }
    })
}
