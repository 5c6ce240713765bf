//! `ringlab wrk ARGS...`, and the binary invoked as `wrk` (a symlink named
//! wrk): wrk's command line, defaults and output (see
//! `ringlab_net::wrk`). stdout carries wrk's bytes only; `--ringlab` adds
//! ringlab's lines on stderr after the run.

use anyhow::Result;
use ringlab_net::wrk::{self, WrkCommand};
use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

/// The arguments of a wrk command line, if this is one: the program is
/// named `wrk`, or the first argument is the `wrk` subcommand.
pub fn wrk_args(args: &[OsString]) -> Option<Vec<OsString>> {
    let prog = args.first()?;
    let base = std::path::Path::new(prog).file_name()?;
    if base == "wrk" {
        return Some(args[1..].to_vec());
    }
    if args.get(1).is_some_and(|a| a == "wrk") {
        return Some(args[2..].to_vec());
    }
    None
}

/// Runs a wrk command line; the exit code follows ringlab's rules (2 for
/// bad usage or an unusable setup, 1 for a failed run).
pub fn main(args: &[OsString]) -> ExitCode {
    let ran = run(args);
    // os.exit in the script: the run stopped there, its results (if it
    // got as far) are above; exit with the script's code, naming it.
    if let Some((code, hook)) = ringlab_net::script::watchdog::exit_requested() {
        let _ = std::io::stdout().flush();
        let shown = if ran.is_ok() {
            "; the results up to then are above"
        } else {
            ""
        };
        let mut err = std::io::stderr().lock();
        if let Err(e) = &ran {
            let _ = writeln!(err, "ringlab wrk: {e:#}");
        }
        let _ = writeln!(
            err,
            "ringlab wrk: the script called os.exit({code}) in {hook}: the run stopped there{shown}; exit code {code}"
        );
        return ExitCode::from(code as u8);
    }
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of stdout went away (`| head`): exit 1 quietly, as
        // the other commands do.
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::from(1)
        }
        Err(e) => {
            let usage = e.downcast_ref::<ringlab_core::UsageError>().is_some();
            let _ = writeln!(std::io::stderr().lock(), "ringlab wrk: {e:#}");
            if e.downcast_ref::<ringlab_core::error::Interrupted>()
                .is_some()
            {
                ExitCode::from(130)
            } else if usage {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn run(args: &[OsString]) -> Result<()> {
    let cmd = wrk::parse(args)?;
    let run = match cmd {
        WrkCommand::Print(text) => {
            print!("{text}");
            return Ok(());
        }
        WrkCommand::Run(r) => r,
    };
    let plan = wrk::plan(&run)?;
    if run.version_line {
        print!("{}", wrk::version_line(plan.io));
    }
    let interrupted = ringlab_core::interrupt_flag()?;
    let header = |text: &str| -> usize {
        // The "Running ..." line and the threads line.
        text.match_indices('\n').nth(1).map_or(0, |(i, _)| i + 1)
    };
    let mut printed_header = None;
    let outcome = ringlab_net::run::run_http_with(&plan, interrupted, || {
        // wrk prints its two header lines before the threads run; the
        // text of the (empty) result has them in the same bytes.
        let empty = ringlab_net::text::header(&plan.config());
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(empty.as_bytes());
        let _ = out.flush();
        printed_header = Some(empty);
    })?;
    let text = &outcome.text;
    let rest = match &printed_header {
        Some(h) if text.starts_with(h.as_str()) => &text[header(text)..],
        _ => text.as_str(),
    };
    {
        let mut out = std::io::stdout().lock();
        out.write_all(rest.as_bytes())?;
        out.flush()?;
    }
    // done() prints after the report, as in wrk.
    outcome.script_done()?;
    if run.ringlab_lines {
        let lat = &outcome.lat_uncorrected;
        let block = ringlab_net::text::ringlab_block(
            &outcome.result,
            outcome.result.http.as_ref(),
            lat,
            plan.latency,
        );
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(block.as_bytes());
    }
    Ok(())
}
