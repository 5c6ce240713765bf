//! Glue of the lab subcommands (sweep, report, compare) to ringlab-lab.

use anyhow::{Context, Result};
use ringlab_core::usage_error;
use std::io::{IsTerminal, Write};
use std::path::Path;

pub fn sweep(plan_path: &Path, output: Option<&Path>, dry_run: bool) -> Result<()> {
    let plan = ringlab_lab::load_plan(plan_path)?;
    if dry_run {
        let text = ringlab_lab::dry_run(&plan, output)?;
        std::io::stdout().lock().write_all(text.as_bytes())?;
        return Ok(());
    }
    let Some(dir) = output else {
        return Err(usage_error(
            "sweep: name the results directory with --output DIR (or list the runs with --dry-run)",
        ));
    };
    let interrupted = ringlab_core::interrupt_flag()?;
    let opts = ringlab_lab::SweepOptions {
        exe: std::env::current_exe().context("finding the ringlab binary")?,
        interrupted,
        progress_bar: std::io::stderr().is_terminal(),
    };
    let s = ringlab_lab::run_sweep(&plan, dir, &opts)?;
    println!(
        "ringlab sweep: {} of {} runs done in {} ({} now, {} before); next: ringlab report {}",
        s.done,
        s.total,
        dir.display(),
        s.ran_now,
        s.done_before,
        dir.display()
    );
    Ok(())
}

pub fn report(dir: &Path, output: Option<&Path>) -> Result<()> {
    let out = output
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.join("report"));
    let written = ringlab_lab::report::write_report(dir, &out, |w| {
        eprintln!("ringlab report: warning: {w}");
    })?;
    println!(
        "ringlab report: {} files in {}; open {}",
        written.files.len(),
        out.display(),
        out.join("report.html").display()
    );
    Ok(())
}

pub fn compare(a: &Path, b: &Path, json: bool) -> Result<()> {
    let text = ringlab_lab::compare::compare_files(a, b, json)?;
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}
