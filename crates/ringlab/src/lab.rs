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
    let written = ringlab_lab::report::write_report(dir, &out)?;
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

#[derive(clap::Args, Debug)]
pub struct ReproduceArgs {
    /// Recipe names (see --list), or 'all'.
    #[arg(value_name = "NAME")]
    names: Vec<String>,
    /// List the recipes: study, section, claim, needs, and whether this
    /// machine can run them.
    #[arg(long)]
    list: bool,
    /// Short runs (30 s or less per recipe) for a first look or CI.
    #[arg(long)]
    quick: bool,
    /// Results directory: DIR/NAME/ per recipe, DIR/index.html.
    #[arg(long, value_name = "DIR", default_value = "ringlab-reproduce")]
    output: std::path::PathBuf,
    /// File or block device the read-only recipes run on [default: a file
    /// laid out in DIR, removed afterwards]. Recipes that write always use
    /// their own file.
    #[arg(long, value_name = "PATH")]
    target: Option<std::path::PathBuf>,
    /// text for people, json for programs (with --list).
    #[arg(long, value_enum, default_value_t = ListFormat::Text)]
    output_format: ListFormat,
    /// Judge the runs already stored in DIR again (after editing a recipe's
    /// rule); run nothing.
    #[arg(long)]
    judge_only: bool,
    /// Every run this long, with the quick axes and small files (tests).
    #[arg(long, value_name = "TIME", hide = true)]
    run_time: Option<String>,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum ListFormat {
    Text,
    Json,
}

pub fn reproduce(args: &ReproduceArgs) -> Result<()> {
    use ringlab_lab::reproduce::{self, recipe::Scale};
    if args.list {
        let entries = reproduce::list(args.target.as_deref())?;
        let text = match args.output_format {
            ListFormat::Text => reproduce::list_text(&entries),
            ListFormat::Json => serde_json::to_string_pretty(&entries)? + "\n",
        };
        std::io::stdout().lock().write_all(text.as_bytes())?;
        return Ok(());
    }
    let scale = match (&args.run_time, args.quick) {
        (Some(t), _) => {
            let d = ringlab_stats::units::parse_duration(t)
                .map_err(|e| usage_error(format!("--run-time {t}: {e}")))?;
            Scale::Tiny(d)
        }
        (None, true) => Scale::Quick,
        (None, false) => Scale::Default,
    };
    let opts = reproduce::ReproduceOptions {
        exe: std::env::current_exe().context("finding the ringlab binary")?,
        output: args.output.clone(),
        target: args.target.clone(),
        scale,
        interrupted: ringlab_core::interrupt_flag()?,
        progress_bar: false,
        judge_only: args.judge_only,
    };
    let s = reproduce::reproduce(&args.names, &opts)?;
    let mut out = String::new();
    for (name, verdict, _) in &s.verdicts {
        out += &format!("{name:<32} {}\n", verdict.word());
    }
    out += &format!(
        "ringlab reproduce: {} recipe(s); verdicts in {}/NAME/verdict.json; open {}\n",
        s.verdicts.len(),
        args.output.display(),
        s.index_html.display()
    );
    std::io::stdout().lock().write_all(out.as_bytes())?;
    if !s.failed.is_empty() {
        let list: Vec<String> = s
            .failed
            .iter()
            .map(|(n, why)| format!("{n}: {why}"))
            .collect();
        return Err(anyhow::anyhow!(
            "{} of the requested recipes could not run: {}",
            s.failed.len(),
            list.join("; ")
        ));
    }
    Ok(())
}
