//! `ringlab report DIR`: repeats aggregated (median, min, max) into
//! Markdown and CSV tables, every configuration against the first (ratio
//! with its 95% interval and p-value from the statistics layer, `~` where
//! no difference was measured), SVG plots against the first numeric axis,
//! and one self-contained HTML page with all of it.
//!
//! By role: [`load`] reads the results directory, [`aggregate`] reduces the
//! repeats, and each output has its file ([`chart`] for the SVG plots,
//! [`markdown`], [`csv`], [`html`]), listed once in [`OUTPUTS`].

mod aggregate;
mod chart;
mod csv;
mod html;
mod load;
mod markdown;

use aggregate::Report;
use anyhow::{Context, Result};
use chart::Plot;
use ringlab_core::files::NewFile;
use ringlab_core::usage_error;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The files `report` wrote.
pub struct Written {
    pub files: Vec<PathBuf>,
}

/// One text output of the report: its file name and how it is rendered
/// from the aggregated report and the plots (which only some outputs show).
struct Output {
    file: &'static str,
    render: fn(&Report, &[Plot]) -> String,
}

/// Every text output, in the order they are written (after the plots).
const OUTPUTS: [Output; 4] = [
    Output {
        file: "report.md",
        render: markdown::render,
    },
    Output {
        file: "summary.csv",
        render: csv::summary,
    },
    Output {
        file: "runs.csv",
        render: csv::runs,
    },
    Output {
        file: "report.html",
        render: html::render,
    },
];

/// Writes one SVG per plotted figure, then report.md, summary.csv, runs.csv
/// and report.html into `out`. `warn` gets one line per input file that was
/// skipped (not a result, unreadable), as it is found.
pub fn write_report(dir: &Path, out: &Path, mut warn: impl FnMut(&str)) -> Result<Written> {
    let mut loaded = load::load(dir)?;
    let skipped = loaded.warnings.len();
    for w in loaded.warnings.drain(..) {
        warn(&w);
    }
    let report = Report::new(dir, loaded);
    if report.results.is_empty() {
        let why = if skipped > 0 {
            format!("no readable results ({skipped} skipped, see the warnings above)")
        } else {
            "no finished runs to report yet".to_string()
        };
        return Err(usage_error(format!(
            "{}: {why}; run 'ringlab sweep PLAN --output {}' first",
            dir.display(),
            dir.display()
        )));
    }
    refuse_inside_results(dir, out)?;
    std::fs::create_dir_all(out)
        .map_err(|e| usage_error(format!("--output {}: cannot create it: {e}", out.display())))?;
    let plots = chart::render_plots(&report)?;
    let mut pages: Vec<(String, String)> = plots
        .iter()
        .map(|p| (p.file.clone(), p.svg.clone()))
        .collect();
    for o in &OUTPUTS {
        pages.push((o.file.to_string(), (o.render)(&report, &plots)));
    }
    // Every page is checked (none replaces a file ringlab did not write)
    // before any is written; each is written beside its name and renamed
    // into place.
    let mut pending = Vec::new();
    for (name, _) in &pages {
        pending.push(NewFile::create(&out.join(name), "--output", &[])?);
    }
    let mut files = Vec::new();
    for (mut f, (name, text)) in pending.into_iter().zip(&pages) {
        let path = out.join(name);
        f.write_all(text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        f.commit()?;
        files.push(path);
    }
    Ok(Written { files })
}

/// A report written into a sweep's own `runs/` or `.scratch/` would be
/// read back as results, or removed with the scratch files: refused.
fn refuse_inside_results(dir: &Path, out: &Path) -> Result<()> {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    // The nearest existing ancestor of `out`, resolved, with the rest.
    let mut existing = out.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name(), existing.parent()) {
            (Some(n), Some(p)) => {
                rest.push(n.to_os_string());
                existing = if p.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    p.to_path_buf()
                };
            }
            _ => break,
        }
    }
    let mut resolved = canon(&existing);
    for n in rest.iter().rev() {
        resolved.push(n);
    }
    let d = canon(dir);
    for inner in [crate::store::RUNS_DIR, crate::store::SCRATCH_DIR] {
        if resolved.starts_with(d.join(inner)) {
            return Err(usage_error(format!(
                "--output {}: inside the sweep's {inner}/ directory, which holds its runs; name a directory outside it (the default is {})",
                out.display(),
                dir.join("report").display()
            )));
        }
    }
    Ok(())
}
