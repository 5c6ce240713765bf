//! `ringlab report DIR`: repeats aggregated (median, min, max) into
//! Markdown and CSV tables, SVG plots against the first numeric axis, and one
//! self-contained HTML page with all of it.
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
use ringlab_core::usage_error;
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
    std::fs::create_dir_all(out)
        .map_err(|e| usage_error(format!("--output {}: cannot create it: {e}", out.display())))?;
    let mut files = Vec::new();
    let plots = chart::render_plots(&report)?;
    for p in &plots {
        write(out, &p.file, &p.svg, &mut files)?;
    }
    for o in &OUTPUTS {
        write(out, o.file, &(o.render)(&report, &plots), &mut files)?;
    }
    Ok(Written { files })
}

fn write(dir: &Path, name: &str, text: &str, files: &mut Vec<PathBuf>) -> Result<()> {
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    files.push(path);
    Ok(())
}
