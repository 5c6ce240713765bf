//! The HTML output (`report.html`): one self-contained page (inline CSS and
//! SVG, no scripts, no external requests) with every table and plot.

use super::aggregate::{label, Report};
use super::chart::Plot;
use std::fmt::Write as _;

const CSS: &str = "
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1240px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; white-space: normal; max-width: 10em; vertical-align: bottom; } td.k { text-align: left; }
figure { margin: 1.5em 0; } figure svg { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #555; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; }
.note { background: #fff8e0; padding: 0.6em 0.8em; border-left: 4px solid #e0b000; }
.tablewrap { overflow-x: auto; }
";

const CAPTION: &str =
    "Points are the median of the repeats; bars span the lowest to the highest repeat (none where a point has one run or equal repeats).";

/// `report.html`: title and status, the summary table, the throughput and
/// latency plots, the kernel evidence (table and plots), the plan.
pub(super) fn render(report: &Report, plots: &[Plot]) -> String {
    let mut out = String::new();
    let title = format!("ringlab sweep report: ringlab {}", report.command);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{}</h1>\n<p>{}; {}.</p>\n",
        escape(&title),
        escape(&title),
        escape(&report.status_line()),
        escape(&report.host_line())
    );
    out.push_str("<h2 id=\"summary\">Summary</h2>\n<p>Median of the repeats with (min–max); — marks a figure no run of that configuration measured.</p>\n");
    out.push_str(&table(report, false));
    if report.has_comparisons() {
        let _ = writeln!(
            out,
            "<h2 id=\"against-first\">Against the first configuration</h2>\n<p>{}</p>",
            escape(&report.comparison_note())
        );
        out.push_str(&comparison(report, false));
    }
    out.push_str("<h2 id=\"throughput\">Throughput and latency</h2>\n");
    for p in plots.iter().filter(|p| !report.metrics[p.metric].kernel) {
        figure(&mut out, report, p);
    }
    kernel_section(&mut out, report, plots);
    let _ = write!(
        out,
        "<h2 id=\"plan\">Plan</h2>\n<pre>{}</pre>\n<p>Results: {} (one JSON file per run in runs/, listed in index.json).</p>\n</body>\n</html>\n",
        escape(&report.plan_text),
        escape(&report.dir.display().to_string())
    );
    out
}

/// The kernel-evidence table and plots, or the note that there are none.
fn kernel_section(out: &mut String, report: &Report, plots: &[Plot]) {
    out.push_str("<h2 id=\"kernel\">Kernel evidence per operation</h2>\n");
    if !report.has_kernel_figures() {
        let _ = writeln!(
            out,
            "<p class=\"note\">{}</p>",
            escape(&report.kernel_note())
        );
        return;
    }
    out.push_str(
        "<p>Median of the repeats with (min–max), counted by the kernel (kstat.per_op).</p>\n",
    );
    out.push_str(&table(report, true));
    if report.has_comparisons() {
        out.push_str("<p>Against the first configuration:</p>\n");
        out.push_str(&comparison(report, true));
    }
    if let Some(z) = report.zero_note() {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(&z));
    }
    for p in plots.iter().filter(|p| report.metrics[p.metric].kernel) {
        figure(out, report, p);
    }
}

/// One plot, inline, with its caption.
fn figure(out: &mut String, report: &Report, p: &Plot) {
    let m = &report.metrics[p.metric];
    let _ = write!(
        out,
        "<figure id=\"{}\">\n{}\n<figcaption>{} ({}). {CAPTION}</figcaption>\n</figure>\n",
        escape(&m.key),
        p.svg,
        escape(&m.title),
        p.file
    );
}

/// The opening of a table and its header row: the axes, runs, and the
/// columns of `cols`.
fn head(report: &Report, cols: &[usize]) -> String {
    let mut out = String::from("<div class=\"tablewrap\"><table>\n<tr>");
    for a in &report.axes {
        let _ = write!(out, "<th>{}</th>", escape(a));
    }
    out.push_str("<th>runs</th>");
    for &i in cols {
        let _ = write!(
            out,
            "<th>{}</th>",
            escape(&report.metrics[i].column(&report.command))
        );
    }
    out.push_str("</tr>\n");
    out
}

/// One row per configuration, `median (min–max)` in each cell.
fn table(report: &Report, kernel: bool) -> String {
    let cols = report.table_metrics(kernel);
    let mut out = head(report, &cols);
    for row in &report.rows {
        out.push_str("<tr>");
        for v in row.values.values() {
            let _ = write!(out, "<td class=\"k\">{}</td>", escape(&label(v)));
        }
        let _ = write!(out, "<td>{}/{}</td>", row.done, row.planned);
        for &i in &cols {
            let (m, agg) = (&report.metrics[i], &row.aggs[i]);
            let cell = match agg {
                Some(a) if a.n > 1 => format!(
                    "{} <small>({}–{})</small>",
                    m.format(a.median),
                    m.format(a.min),
                    m.format(a.max)
                ),
                Some(a) => m.format(a.median),
                None => "—".to_string(),
            };
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
    out
}

/// One row per configuration after the first, each figure against the
/// first's (`~` where no difference was measured).
fn comparison(report: &Report, kernel: bool) -> String {
    let cols = report.table_metrics(kernel);
    let mut out = head(report, &cols);
    for (ri, row) in report.compared_rows() {
        out.push_str("<tr>");
        for v in row.values.values() {
            let _ = write!(out, "<td class=\"k\">{}</td>", escape(&label(v)));
        }
        let _ = write!(out, "<td>{}/{}</td>", row.done, row.planned);
        for &i in &cols {
            let _ = write!(out, "<td>{}</td>", escape(&report.vs_first_cell(ri, i)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
