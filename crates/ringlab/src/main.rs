//! `ringlab`: the binary. Flag parsing, output, exit codes; the work lives in
//! the library crates.
//!
//! Exit codes: 0 success, 1 a run that failed (I/O error, verify mismatch),
//! 2 bad usage or an unusable setup found before anything was measured.

use anyhow::Result;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use ringlab_core::output::Output;
use ringlab_io::run::{run_io, RunOptions};
use ringlab_io::{IoArgs, IoPlan, UsageError};
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod fio;
mod fio_cmd;
mod fio_cpuio;
mod fio_errors;
mod fio_exitall;
mod fio_fill;
mod fio_groups;
mod fio_regulate;
mod fio_steady;
mod lab;
mod wrk;

#[derive(Parser, Debug)]
#[command(
    name = "ringlab",
    version,
    about = "A laboratory for Linux I/O interfaces: io_uring and the interfaces it replaces, measured and explained",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Replace existing files ringlab did not write (results, logs, report
    /// pages); without it ringlab refuses to, as the file may be yours.
    #[arg(long, global = true)]
    overwrite_files: bool,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a matrix of io/http runs from a plan file, repeated, in shuffled
    /// order, into a results directory (resumes where it stopped).
    // Declared first so that merges with new commands stay clean; listed in
    // the help after the benchmarks.
    #[command(display_order = 100)]
    Sweep {
        /// The plan (TOML): command, repeats, shuffle, pause, [options], [axes].
        #[arg(value_name = "PLAN.toml")]
        plan: PathBuf,
        /// Results directory (created; a directory of the same plan resumes).
        #[arg(long, value_name = "DIR")]
        output: Option<PathBuf>,
        /// List the runs, in order, with their command lines; run nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Tables (Markdown, CSV), SVG plots and one HTML page from a sweep's results.
    #[command(display_order = 101)]
    Report {
        /// A results directory written by 'ringlab sweep'.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// Where to write the report [default: DIR/report].
        #[arg(long, value_name = "DIR")]
        output: Option<PathBuf>,
    },
    /// Two results or two sets of repeats side by side: B/A with its 95%
    /// interval and p-value, `~` where no significant difference was found.
    #[command(display_order = 102)]
    Compare {
        /// The baseline: a result (JSON, from --output-format json), or a
        /// directory of repeats (a sweep, or result files).
        #[arg(value_name = "A")]
        a: PathBuf,
        /// The result or directory compared with it.
        #[arg(value_name = "B")]
        b: PathBuf,
        /// text for people, json for programs.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        output_format: OutputFormat,
    },
    /// Which io_uring setup to deploy for an I/O shape on this kernel and
    /// device: a short calibration (or results on disk with --from), ranked,
    /// with the evidence and the studies' guidelines it confirms.
    #[command(display_order = 103)]
    Advise(Box<lab::AdviseArgs>),
    /// The five studies' findings as experiments: runs each recipe's sweeps, sets
    /// the paper's claim beside our figures, writes DIR/NAME/verdict.json
    /// and DIR/index.html.
    #[command(display_order = 104)]
    Reproduce(lab::ReproduceArgs),
    /// Add the shards of one run (--shard results, or results made with
    /// --histograms) into one ordinary result: counts, bytes and errors
    /// summed, histograms added, every percentile recomputed.
    #[command(display_order = 105)]
    Merge {
        /// Result files, or directories whose *.json files are results.
        #[arg(value_name = "RESULT|DIR", required = true)]
        inputs: Vec<PathBuf>,
        /// Where to write the merged result (JSON) ['-': standard output].
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Merge results that differ (configuration, shard count, start
        /// time, a shard twice); the differences are recorded in the result.
        #[arg(long)]
        force: bool,
        /// Merge the shards given when some of the count are missing; the
        /// result lists the missing ones.
        #[arg(long)]
        allow_missing: bool,
        /// No summary on standard error.
        #[arg(long)]
        quiet: bool,
    },
    /// Storage benchmark: one workload, one engine (fio's words for options).
    #[command(after_help = ringlab_io::fio::help_text())]
    Io {
        #[command(flatten)]
        io: Box<IoArgs>,
        #[command(flatten)]
        output: fio::IoOutputArgs,
        /// Run a fio job file: [global] and job sections, one run per
        /// section (its numjobs threads), groups (stonewall, new_group) in
        /// order. A job file given as TARGET is recognised by its content
        /// and run the same way, never written to.
        #[arg(long, value_name = "JOBFILE", help_heading = "fio")]
        fio: Option<PathBuf>,
        /// Check the options (or every job of a job file) and print the
        /// ringlab run each one is, then exit without any I/O (fio's
        /// --parse-only).
        #[arg(long, help_heading = "fio")]
        parse_only: bool,
    },
    /// fio's command line, job files, defaults and output formats
    /// (normal, terse, json, json+) on ringlab's engines; also when the
    /// binary runs under the name `fio`. 'ringlab fio --help' for more.
    #[command(disable_help_flag = true)]
    Fio {
        /// fio's arguments, as fio takes them.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "FIO ARGS"
        )]
        args: Vec<OsString>,
    },
    /// What this kernel and a device support: io_uring setup flags and
    /// opcodes (found by trying them), RLIMIT_MEMLOCK, and for a device its
    /// scheduler, queues, poll queues and interrupt CPUs.
    #[command(mut_arg("output_format", |a| a.help("text for people, json for programs (schema/features.schema.json)")))]
    Features {
        /// A block device, or a file or directory on one.
        #[arg(value_name = "TARGET")]
        target: Option<PathBuf>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// wrk's command line, defaults and output (wrk 4.1, wrk2's -R), run by
    /// ringlab http; also when this binary is invoked as `wrk`. See
    /// 'ringlab wrk --help'.
    #[command(disable_help_flag = true)]
    Wrk {
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "WRK ARGS"
        )]
        args: Vec<std::ffi::OsString>,
    },
    /// HTTP/1.1 load generator on epoll or io_uring (wrk's options, wrk2's -R).
    Http {
        #[command(flatten)]
        http: Box<ringlab_net::HttpArgs>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// RocksDB db_bench multireadrandom under the first study's backend
    /// configurations, through ringlab's io_uring FileSystem plugin.
    Rocksdb(Box<ringlab_rocksdb::RocksdbArgs>),
    /// Minimal HTTP/1.1 server on epoll or io_uring: 200 and a fixed body.
    #[command(mut_arg("output_format", |a| a.help("text for people, json for programs (schema/serve.schema.json)")))]
    Serve {
        #[command(flatten)]
        serve: ringlab_net::ServeArgs,
        #[command(flatten)]
        output: OutputArgs,
    },
}

#[derive(Args, Debug)]
#[command(next_help_heading = "Output")]
struct OutputArgs {
    /// text for people, json for programs (schema/result.schema.json).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output_format: OutputFormat,
    /// Write the result to FILE instead of standard output (whole, at the
    /// end; a failed run leaves FILE as it was). '-' is standard output.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Same as --output-format json (oha's --json).
    #[arg(long, conflicts_with = "output_format")]
    json: bool,
}

impl OutputArgs {
    fn format(&self) -> OutputFormat {
        if self.json {
            OutputFormat::Json
        } else {
            self.output_format
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum OutputFormat {
    Text,
    Json,
}

fn main() -> ExitCode {
    // Started as the cleaner of another ringlab (the hidden mode that
    // removes its temporary files if it is killed): nothing else.
    if ringlab_core::cleaner::serve_if_asked() {
        return ExitCode::SUCCESS;
    }
    ringlab_core::cleaner::enable();
    // `ringlab wrk ...`, or this binary run as `wrk`: wrk's command line.
    if let Some(args) = wrk::wrk_args(&std::env::args_os().collect::<Vec<_>>()) {
        return wrk::main(&args);
    }
    // `ringlab fio ...` or the binary run as `fio`: fio's meaning.
    if let Some(args) = fio_cmd::wanted(&std::env::args_os().collect::<Vec<_>>()) {
        quiet_closed_output();
        return fio_cmd::main(args);
    }
    // fio's spellings of `ringlab io` become ringlab's before clap parses
    // them; a job file is run as one.
    let (args, fio_words) = match fio::preprocess() {
        Ok(fio::Parsed::Args(args, words)) => (args, words),
        Ok(fio::Parsed::Done(code)) => return code,
        Err(e) => {
            eprintln!("ringlab: {e:#} (see 'ringlab io --help')");
            return ExitCode::from(2);
        }
    };
    // The arguments clap parses (fio's spellings translated), which
    // `io --parse-only` prints.
    let translated: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    let help = match &cli.command {
        Command::Io { .. } => " (see 'ringlab io --help')",
        _ => "",
    };
    quiet_closed_output();
    let ran = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run(cli, &fio_words, &translated)
    })) {
        Ok(ran) => ran,
        Err(p) if closed_output(&*p) => return ExitCode::from(1),
        Err(p) => std::panic::resume_unwind(p),
    };
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let usage = e.downcast_ref::<UsageError>().is_some();
            say(&format!("ringlab: {e:#}{}", if usage { help } else { "" }));
            if e.downcast_ref::<ringlab_lab::Interrupted>().is_some()
                || e.downcast_ref::<ringlab_core::error::Interrupted>()
                    .is_some()
            {
                ExitCode::from(130)
            } else if e.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// One line on standard error; nothing if it is closed (never a panic).
fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// A closed stdout or stderr (the reader of a pipe went away) ends the
/// command with exit 1, as a failed write to it: `println!` and
/// `eprintln!` anywhere panic on it, and those panics print nothing and
/// become exit 1 instead of 101.
fn quiet_closed_output() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !closed_output(info.payload()) {
            default(info)
        }
    }));
}

fn closed_output(payload: &(dyn std::any::Any + Send)) -> bool {
    let msg = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("");
    msg.starts_with("failed printing to std")
}

/// Help and version go out as clap writes them; a usage error becomes one
/// line (what is wrong, clap's tip, where to look) and exit code 2.
fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    // `ringlab` alone: the help, on stderr, as a usage error.
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = e.print();
        return ExitCode::from(2);
    }
    let text = e.render().to_string();
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
        })
        .collect();
    let line = parts.join("; ").replacen("error: ", "", 1);
    // Point to the help of the subcommand the user typed, if any.
    let sub = std::env::args()
        .nth(1)
        .filter(|a| Cli::command().find_subcommand(a).is_some())
        .map(|a| format!("{a} "))
        .unwrap_or_default();
    say(&format!("ringlab: {line} (see 'ringlab {sub}--help')"));
    ExitCode::from(2)
}

fn run(
    cli: Cli,
    fio_words: &ringlab_io::fio::options::Translated,
    translated: &[String],
) -> Result<()> {
    ringlab_core::files::allow_overwrite(cli.overwrite_files);
    match cli.command {
        Command::Sweep {
            plan,
            output,
            dry_run,
        } => lab::sweep(&plan, output.as_deref(), dry_run),
        Command::Report { dir, output } => lab::report(&dir, output.as_deref()),
        Command::Compare {
            a,
            b,
            output_format,
        } => lab::compare(&a, &b, matches!(output_format, OutputFormat::Json)),
        Command::Advise(args) => lab::advise(&args),
        Command::Merge {
            inputs,
            output,
            force,
            allow_missing,
            quiet,
        } => merge_command(&inputs, output.as_deref(), force, allow_missing, quiet),
        Command::Reproduce(args) => lab::reproduce(&args),
        Command::Io {
            io,
            output,
            fio,
            parse_only,
        } => match fio {
            Some(path) if parse_only => fio::run_job_file(&path, &["--parse-only".into()]),
            Some(path) => fio::run_job_file(&path, &[]),
            None if parse_only => parse_only_io(&io, fio_words, translated),
            None => run_io_command(&io, &output, fio_words),
        },
        Command::Fio { args } => match fio_cmd::main(args) {
            c if c == ExitCode::SUCCESS => Ok(()),
            _ => Err(anyhow::anyhow!("ringlab fio failed")),
        },
        Command::Http { http, output } => run_http_command(&http, &output),
        // Dispatched before clap parses (see main); here for completeness.
        Command::Wrk { args } => match wrk::main(&args) {
            ExitCode::SUCCESS => Ok(()),
            _ => Err(anyhow::anyhow!("wrk run failed")),
        },
        Command::Serve { serve, output } => run_serve_command(&serve, &output),
        Command::Rocksdb(args) => ringlab_rocksdb::run_command(&args),
        Command::Features { target, output } => {
            let f = ringlab_io::features::features(target.as_deref())?;
            let text = match output.format() {
                OutputFormat::Text => ringlab_io::features::render(&f),
                OutputFormat::Json => serde_json::to_string_pretty(&f)? + "\n",
            };
            open_output(&output, &[])?.finish(text.as_bytes())
        }
    }
}

fn merge_command(
    inputs: &[PathBuf],
    output: Option<&Path>,
    force: bool,
    allow_missing: bool,
    quiet: bool,
) -> Result<()> {
    use ringlab_lab::merge::{merge_paths, MergeOptions};
    let avoid: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let out = Output::open(output, &avoid)?;
    let merged = merge_paths(
        inputs,
        MergeOptions {
            force,
            allow_missing,
        },
    )?;
    let mut text = serde_json::to_string_pretty(&merged)?;
    text.push('\n');
    out.finish(text.as_bytes())?;
    if !quiet {
        say(&ringlab_lab::merge::summary(&merged));
    }
    Ok(())
}

/// The output of a command: checked (and its temporary file opened) before
/// the command runs, written whole at the end; see `ringlab_core::output`.
fn open_output(output: &OutputArgs, avoid: &[&Path]) -> Result<Output> {
    Output::open(output.output.as_deref(), avoid)
}

fn run_http_command(args: &ringlab_net::HttpArgs, output: &OutputArgs) -> Result<()> {
    let ran = run_http_inner(args, output);
    // os.exit in the script: the run stopped there (its results, if any,
    // are out); ringlab exits with the script's code, saying so.
    if let Some((code, hook)) = ringlab_net::script::watchdog::exit_requested() {
        let _ = std::io::stdout().flush();
        let had = if ran.is_ok() {
            "; the results up to then are above"
        } else {
            ""
        };
        if let Err(e) = &ran {
            say(&format!("ringlab: {e:#}"));
        }
        say(&format!(
            "ringlab: the script called os.exit({code}) in {hook}: the run stopped there{had}; exit code {code}"
        ));
        std::process::exit(code);
    }
    ran
}

fn run_http_inner(args: &ringlab_net::HttpArgs, output: &OutputArgs) -> Result<()> {
    let plan = ringlab_net::HttpPlan::from_args(args)?;
    let path = plan.shards.output_path(output.output.as_deref());
    let out = Output::open(path.as_deref(), &[])?;
    let interrupted = ringlab_core::interrupt_flag()?;
    let outcome = ringlab_net::run::run_http(&plan, interrupted)?;
    let rendered = match output.format() {
        OutputFormat::Text => outcome.text.clone(),
        OutputFormat::Json => {
            let mut s = serde_json::to_string_pretty(&outcome.result)?;
            s.push('\n');
            s
        }
    };
    out.finish(rendered.as_bytes())?;
    // A script's done() writes after the report, as in wrk.
    outcome.script_done()?;
    // A run in which not one response completed measured nothing: the
    // report above says why, and the run failed.
    if outcome.result.total.ops == 0 && ringlab_net::script::watchdog::exit_requested().is_none() {
        let why = outcome
            .result
            .warnings
            .iter()
            .find(|w| w.starts_with("no response completed"))
            .cloned()
            .unwrap_or_else(|| "no response completed".to_string());
        anyhow::bail!("{why}: nothing was measured (the run failed)");
    }
    Ok(())
}

fn run_serve_command(args: &ringlab_net::ServeArgs, output: &OutputArgs) -> Result<()> {
    let out = open_output(output, &[])?;
    let interrupted = ringlab_core::interrupt_flag()?;
    let summary = ringlab_net::serve::serve(args, interrupted, |addr| {
        // On stderr, so that stdout holds only the summary (text or JSON).
        say(&format!("ringlab serve: listening on {addr}"));
    })?;
    let rendered = match output.format() {
        OutputFormat::Text => summary.text(),
        OutputFormat::Json => summary.json(),
    };
    out.finish(rendered.as_bytes())
}

/// `ringlab io ... --parse-only`: the options are checked as for a run
/// (the plan is built), the run they make is printed, nothing is opened.
fn parse_only_io(
    args: &IoArgs,
    fio_words: &ringlab_io::fio::options::Translated,
    translated: &[String],
) -> Result<()> {
    IoPlan::from_args(args)?;
    fio::print_notes(&fio_words.notes);
    let words: Vec<&str> = translated
        .iter()
        .map(String::as_str)
        .filter(|w| *w != "--parse-only")
        .collect();
    println!("ringlab {}", ringlab_core::shell::join(&words));
    println!("parse only: the options are valid; no I/O was done");
    Ok(())
}

fn run_io_command(
    args: &IoArgs,
    output: &fio::IoOutputArgs,
    fio_words: &ringlab_io::fio::options::Translated,
) -> Result<()> {
    let plan = IoPlan::from_args(args)?;
    // Check the output before the run, so a bad path fails in a second,
    // not after the whole runtime, and never names the target.
    let target: Vec<&Path> = plan.target.as_deref().into_iter().collect();
    let path = plan.shards.output_path(output.output.as_deref());
    let out = Output::open(path.as_deref(), &target)?;
    let interrupted = ringlab_core::interrupt_flag()?;
    let opts = RunOptions {
        progress: std::io::stdout().is_terminal(),
        interrupted,
        group: None,
        start_delay: std::time::Duration::ZERO,
        prepare_lock: None,
    };
    fio::print_notes(&fio_words.notes);
    let result = run_io(&plan, &opts)?;
    let rendered = fio::render_io(&[(fio_words, 0, &result)], &[], output.output_format)?;
    out.finish(rendered.as_bytes())
}

/// The text of one io result, its diagnoses at the end.
fn io_text(result: &ringlab_stats::RunResult) -> String {
    ringlab_io::text::render(result)
}
