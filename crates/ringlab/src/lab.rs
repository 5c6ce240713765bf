//! Glue of the lab subcommands (sweep, report, compare) to ringlab-lab.

use anyhow::{Context, Result};
use ringlab_core::usage_error;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

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
    let text = ringlab_lab::compare::compare_paths(a, b, json)?;
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

/// `ringlab advise`: the application's I/O shape, where to calibrate, and
/// what to optimise.
#[derive(clap::Args, Debug)]
pub struct AdviseArgs {
    /// A file, a block device, or a directory in which advise creates a
    /// calibration file (--size) [default: the current directory].
    #[arg(value_name = "TARGET")]
    pub target: Option<PathBuf>,
    /// The application's I/O pattern (read, write, randread, randwrite, randrw, rw).
    #[arg(long, default_value = "randread")]
    pub rw: String,
    /// Block size of each I/O.
    #[arg(long, default_value = "4k", value_name = "SIZE")]
    pub bs: String,
    /// Requests in flight per thread.
    #[arg(long, default_value_t = 32, value_name = "N")]
    pub iodepth: u32,
    /// Threads of the application doing I/O (one ring each).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub threads: u32,
    /// CPUs to use: job threads on the first ones, the rest spare (an SQPOLL
    /// poller, io-wq workers) [default: the CPUs this process may run on].
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// O_DIRECT, as the application opens its files.
    #[arg(long)]
    pub direct: bool,
    /// Time for the whole calibration, start-up of every run included.
    #[arg(long, default_value = "60s", value_name = "TIME")]
    pub budget: String,
    /// What to optimise: iops, latency (p99) or cpu (per I/O, kernel helper
    /// threads included).
    #[arg(long, value_enum, default_value_t = GoalArg::Iops)]
    pub goal: GoalArg,
    /// Size of the calibration file created in a directory TARGET.
    #[arg(long, default_value = "256M", value_name = "SIZE")]
    pub size: String,
    /// Allow writes to a block device that holds data.
    #[arg(long)]
    pub allow_destructive: bool,
    /// Advise from results on disk (a sweep, a saved calibration or a
    /// reproduce output) without running anything.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["target", "cpus", "budget", "save"])]
    pub from: Option<PathBuf>,
    /// Keep the calibration's results in DIR (sweep layout: 'ringlab report
    /// DIR' and 'ringlab advise --from DIR' read it).
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
    /// text for people, json for programs (schema/advise.schema.json).
    #[arg(long, value_enum, default_value = "text")]
    pub output_format: AdviseFormat,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum GoalArg {
    Iops,
    Latency,
    Cpu,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum AdviseFormat {
    Text,
    Json,
}

pub fn advise(a: &AdviseArgs) -> Result<()> {
    use ringlab_lab::advise::{self as adv, Goal};
    let goal = match a.goal {
        GoalArg::Iops => Goal::Iops,
        GoalArg::Latency => Goal::Latency,
        GoalArg::Cpu => Goal::Cpu,
    };
    let advice = match &a.from {
        Some(dir) => adv::advise_from(dir, goal)?,
        None => {
            let budget = ringlab_stats::units::parse_duration(&a.budget)
                .map_err(|e| usage_error(format!("--budget {}: {e}", a.budget)))?;
            let size_bytes = ringlab_stats::units::parse_size(&a.size)
                .map_err(|e| usage_error(format!("--size {}: {e}", a.size)))?;
            let cpus = match &a.cpus {
                Some(list) => ringlab_core::cpus::parse_cpu_list(list)?,
                None => ringlab_core::cpus::allowed_cpus(),
            };
            let target = a.target.clone().unwrap_or_else(|| PathBuf::from("."));
            let req = adv::calibrate::Request {
                target: target.clone(),
                shape: adv::Shape {
                    rw: a.rw.clone(),
                    bs: a.bs.clone(),
                    iodepth: a.iodepth,
                    threads: a.threads,
                    direct: a.direct,
                },
                cpus,
                budget,
                size_bytes,
                allow_destructive: a.allow_destructive,
                save: a.save.clone(),
            };
            let probe = probe(&target)?;
            let interrupted = ringlab_core::interrupt_flag()?;
            let opts = ringlab_lab::SweepOptions {
                exe: std::env::current_exe().context("finding the ringlab binary")?,
                interrupted,
                progress_bar: std::io::stderr().is_terminal(),
            };
            adv::advise_calibrated(&req, &probe, goal, &opts)?
        }
    };
    let text = match a.output_format {
        AdviseFormat::Text => adv::render::text(&advice),
        AdviseFormat::Json => serde_json::to_string_pretty(&advice)? + "\n",
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

/// What the kernel and the device behind `target` support, by `ringlab
/// features`' code; io_uring refused altogether is a usage error.
fn probe(target: &Path) -> Result<ringlab_lab::advise::Probe> {
    let f = ringlab_io::features::features(Some(target))?;
    if let Some(e) = &f.io_uring_error {
        return Err(usage_error(format!(
            "io_uring cannot be used here ({e}), so there is no io_uring setup to advise"
        )));
    }
    Ok(ringlab_lab::advise::Probe {
        setup_flags: f
            .setup_flags
            .iter()
            .map(|k| (k.flag.clone(), k.supported))
            .collect(),
        poll_queues: f.device.as_ref().and_then(|d| d.poll_queues),
        device: f.device.as_ref().map(|d| d.name.clone()),
    })
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
    /// Wall time the whole reproduce may take: while a check is
    /// inconclusive (its interval holds the claim's threshold) or a run was
    /// flagged, the points it compares are repeated (2 more repeats a round, shuffled,
    /// at most 3 rounds) until it decides or the budget is spent [default:
    /// 8m with --quick, 90m without].
    #[arg(long, value_name = "TIME")]
    budget: Option<String>,
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
        budget: match &args.budget {
            Some(b) => Some(
                ringlab_stats::units::parse_duration(b)
                    .map_err(|e| usage_error(format!("--budget {b}: {e}")))?,
            ),
            None => None,
        },
    };
    let s = reproduce::reproduce(&args.names, &opts)?;
    let mut out = String::new();
    for (name, verdict, _, figure) in &s.verdicts {
        out += &format!("{name:<32} {:<13} {figure}\n", verdict.word());
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
