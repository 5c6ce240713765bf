//! The Markdown output (`report.md`): for people reading in a terminal or
//! a code forge.

use super::aggregate::{label, Report};
use super::chart::Plot;
use std::fmt::Write as _;

/// `report.md`: status, the summary table, the kernel-evidence table, links
/// to the plots and the plan.
pub(super) fn render(report: &Report, plots: &[Plot]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# ringlab sweep report: `ringlab {}`\n",
        report.command
    );
    let _ = writeln!(out, "{}; {}.\n", report.status_line(), report.host_line());
    let _ = writeln!(
        out,
        "Each cell is the median of the repeats with (min–max); `—` marks a figure no run of that configuration measured.\n"
    );
    out.push_str(&table(report, false));
    if report.has_comparisons() {
        let _ = writeln!(
            out,
            "\n## Against the first configuration\n\n{}\n",
            report.comparison_note()
        );
        out.push_str(&comparison(report, false));
    }
    out.push_str("\n## Kernel evidence per operation\n\n");
    if report.has_kernel_figures() {
        out.push_str(&table(report, true));
        if report.has_comparisons() {
            out.push_str("\nAgainst the first configuration:\n\n");
            out.push_str(&comparison(report, true));
        }
        if let Some(z) = report.zero_note() {
            let _ = writeln!(out, "\n{z}");
        }
    } else {
        let _ = writeln!(out, "{}", report.kernel_note());
    }
    out.push_str("\n## Plots\n\n");
    for p in plots {
        let _ = writeln!(out, "![{}]({})\n", report.metrics[p.metric].title, p.file);
    }
    let _ = writeln!(out, "## Plan\n\n```toml\n{}```", report.plan_text);
    out
}

/// A table's header and rule: the axes, runs, and the columns of `cols`.
fn head(report: &Report, cols: &[usize]) -> String {
    let mut out = String::new();
    let mut head: Vec<String> = report.axes.clone();
    head.push("runs".to_string());
    head.extend(
        cols.iter()
            .map(|&i| report.metrics[i].column(&report.command)),
    );
    let _ = writeln!(out, "| {} |", head.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(head.len()));
    out
}

/// Markdown table: one row per configuration, `median (min–max)`.
fn table(report: &Report, kernel: bool) -> String {
    let cols = report.table_metrics(kernel);
    let mut out = head(report, &cols);
    for row in &report.rows {
        let mut cells: Vec<String> = row.values.values().map(label).collect();
        cells.push(format!("{}/{}", row.done, row.planned));
        for &i in &cols {
            let (m, agg) = (&report.metrics[i], &row.aggs[i]);
            cells.push(match agg {
                Some(a) if a.n > 1 => {
                    format!(
                        "{} ({}–{})",
                        m.format(a.median),
                        m.format(a.min),
                        m.format(a.max)
                    )
                }
                Some(a) => m.format(a.median),
                None => "—".to_string(),
            });
        }
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

/// Markdown table: one row per configuration after the first, each figure
/// against the first's (`~` where no difference was measured).
fn comparison(report: &Report, kernel: bool) -> String {
    let cols = report.table_metrics(kernel);
    let mut out = head(report, &cols);
    for (ri, row) in report.compared_rows() {
        let mut cells: Vec<String> = row.values.values().map(label).collect();
        cells.push(format!("{}/{}", row.done, row.planned));
        cells.extend(cols.iter().map(|&i| report.vs_first_cell(ri, i)));
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}
