//! `ringlab`: the binary. Flag parsing, output, exit codes; the work lives in
//! the library crates.
//!
//! Exit codes: 0 success, 1 a run that failed (I/O error, verify mismatch),
//! 2 bad usage or an unusable setup found before anything was measured.

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use ringlab_io::run::{run_io, RunOptions};
use ringlab_io::{IoArgs, IoPlan, UsageError};
use ringlab_stats::RunResult;
use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

mod lab;

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
    /// Two results side by side with their ratios (B/A).
    #[command(display_order = 102)]
    Compare {
        /// The baseline result (JSON, from --output-format json).
        #[arg(value_name = "A.json")]
        a: PathBuf,
        /// The result compared with it.
        #[arg(value_name = "B.json")]
        b: PathBuf,
        /// text for people, json for programs.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        output_format: OutputFormat,
    },
    /// The seeds' findings as experiments: runs each recipe's sweeps, sets
    /// the paper's claim beside our figures, writes DIR/NAME/verdict.json
    /// and DIR/index.html.
    #[command(display_order = 103)]
    Reproduce(lab::ReproduceArgs),
    /// Storage benchmark: one workload, one engine (fio's words for options).
    Io {
        #[command(flatten)]
        io: Box<IoArgs>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// What this kernel and a device support: io_uring setup flags and
    /// opcodes (found by trying them), RLIMIT_MEMLOCK, and for a device its
    /// scheduler, queues, poll queues and interrupt CPUs.
    Features {
        /// A block device, or a file or directory on one.
        #[arg(value_name = "TARGET")]
        target: Option<PathBuf>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// HTTP/1.1 load generator on epoll or io_uring (wrk's options, wrk2's -R).
    Http {
        #[command(flatten)]
        http: ringlab_net::HttpArgs,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Minimal HTTP/1.1 server on epoll or io_uring: 200 and a fixed body.
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
    /// Write the result to FILE instead of standard output.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum OutputFormat {
    Text,
    Json,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ringlab: {e:#}");
            if e.downcast_ref::<ringlab_lab::Interrupted>().is_some() {
                ExitCode::from(130)
            } else if e.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
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
    eprintln!("ringlab: {line} (see 'ringlab --help')");
    ExitCode::from(2)
}

fn run(cli: Cli) -> Result<()> {
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
        Command::Reproduce(args) => lab::reproduce(&args),
        Command::Io { io, output } => run_io_command(&io, &output),
        Command::Http { http, output } => run_http_command(&http, &output),
        Command::Serve { serve, output } => run_serve_command(&serve, &output),
        Command::Features { target, output } => {
            let f = ringlab_io::features::features(target.as_deref())?;
            let text = match output.output_format {
                OutputFormat::Text => ringlab_io::features::render(&f),
                OutputFormat::Json => serde_json::to_string_pretty(&f)? + "\n",
            };
            write_output(output.output.as_deref(), &text)
        }
    }
}

/// Writes `text` to FILE, or to standard output.
fn write_output(path: Option<&std::path::Path>, text: &str) -> Result<()> {
    match path {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| anyhow::Error::new(UsageError(format!("--output {}: {e}", p.display())))),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
            stdout.flush()?;
            Ok(())
        }
    }
}

/// The file of --output, opened before the run so a bad path fails at once.
fn open_output(output: &OutputArgs) -> Result<Option<File>> {
    match &output.output {
        Some(p) => Ok(Some(File::create(p).map_err(|e| {
            anyhow::Error::new(UsageError(format!("--output {}: {e}", p.display())))
        })?)),
        None => Ok(None),
    }
}

fn emit(out_file: &mut Option<File>, rendered: &str) -> Result<()> {
    match out_file {
        Some(f) => f.write_all(rendered.as_bytes()).context("writing --output"),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(rendered.as_bytes())?;
            stdout.flush()?;
            Ok(())
        }
    }
}

fn run_http_command(args: &ringlab_net::HttpArgs, output: &OutputArgs) -> Result<()> {
    let plan = ringlab_net::HttpPlan::from_args(args)?;
    let mut out_file = open_output(output)?;
    let interrupted = ringlab_core::interrupt_flag()?;
    let outcome = ringlab_net::run::run_http(&plan, interrupted)?;
    let rendered = match output.output_format {
        OutputFormat::Text => outcome.text,
        OutputFormat::Json => {
            let mut s = serde_json::to_string_pretty(&outcome.result)?;
            s.push('\n');
            s
        }
    };
    emit(&mut out_file, &rendered)
}

fn run_serve_command(args: &ringlab_net::ServeArgs, output: &OutputArgs) -> Result<()> {
    let mut out_file = open_output(output)?;
    let interrupted = ringlab_core::interrupt_flag()?;
    let summary = ringlab_net::serve::serve(args, interrupted, |addr| {
        // On stderr, so that stdout holds only the summary (text or JSON).
        eprintln!("ringlab serve: listening on {addr}");
    })?;
    let rendered = match output.output_format {
        OutputFormat::Text => summary.text(),
        OutputFormat::Json => summary.json(),
    };
    emit(&mut out_file, &rendered)
}

fn run_io_command(args: &IoArgs, output: &OutputArgs) -> Result<()> {
    let plan = IoPlan::from_args(args)?;
    // Open the output before the run, so a bad path fails in a second, not
    // after the whole runtime.
    let mut out_file = match &output.output {
        Some(p) => Some(File::create(p).map_err(|e| {
            anyhow::Error::new(UsageError(format!("--output {}: {e}", p.display())))
        })?),
        None => None,
    };
    let interrupted = ringlab_core::interrupt_flag()?;
    let opts = RunOptions {
        progress: std::io::stdout().is_terminal(),
        interrupted,
    };
    let result = run_io(&plan, &opts)?;
    let rendered = render(&result, output.output_format)?;
    match &mut out_file {
        Some(f) => f
            .write_all(rendered.as_bytes())
            .context("writing --output")?,
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(rendered.as_bytes())?;
            stdout.flush()?;
        }
    }
    Ok(())
}

fn render(result: &RunResult, format: OutputFormat) -> Result<String> {
    Ok(match format {
        OutputFormat::Text => ringlab_io::text::render(result),
        OutputFormat::Json => {
            let mut s = serde_json::to_string_pretty(result)?;
            s.push('\n');
            s
        }
    })
}
