//! The CSV outputs, in base units at full precision, for programs (the
//! Markdown and HTML are for people): `summary.csv` with the aggregates,
//! `runs.csv` with one line per stored run.

use super::aggregate::{label, Report};
use super::chart::Plot;
use serde_json::Value as Json;

/// `summary.csv`: one line per configuration, median, min and max of each
/// figure, then each figure against the first configuration (ratio, its
/// 95% interval, p-value, whether a difference was measured; empty on the
/// first line).
pub(super) fn summary(report: &Report, _plots: &[Plot]) -> String {
    let mut head: Vec<String> = report.axes.iter().map(|a| field(a)).collect();
    head.push("runs_done".into());
    head.push("runs_planned".into());
    for m in &report.metrics {
        for s in ["median", "min", "max"] {
            head.push(format!("{}_{s}", m.key));
        }
    }
    // Against the first configuration, after every aggregate (so that
    // readers by column position still find the columns above).
    for m in &report.metrics {
        for s in ["ratio", "ratio_lo", "ratio_hi", "p", "differs"] {
            head.push(format!("{}_vs_first_{s}", m.key));
        }
    }
    let mut out = head.join(",") + "\n";
    for (ri, row) in report.rows.iter().enumerate() {
        let mut cells: Vec<String> = row.values.values().map(|v| field(&label(v))).collect();
        cells.push(row.done.to_string());
        cells.push(row.planned.to_string());
        for agg in &row.aggs {
            match agg {
                Some(a) => cells.extend([a.median, a.min, a.max].iter().map(|v| v.to_string())),
                None => cells.extend(["", "", ""].iter().map(|s| s.to_string())),
            }
        }
        for mi in 0..report.metrics.len() {
            match report.vs_first(ri, mi) {
                Some(e) => cells.extend([
                    e.ratio.to_string(),
                    e.interval.lo.to_string(),
                    e.interval.hi.to_string(),
                    e.p_value.to_string(),
                    e.differs().to_string(),
                ]),
                None => cells.extend((0..5).map(|_| String::new())),
            }
        }
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// `runs.csv`: one line per stored run, each figure as measured.
pub(super) fn runs(report: &Report, _plots: &[Plot]) -> String {
    let mut head: Vec<String> = vec!["id".into()];
    head.extend(report.axes.iter().map(|a| field(a)));
    head.push("repeat".into());
    head.extend(report.metrics.iter().map(|m| m.key.clone()));
    let mut out = head.join(",") + "\n";
    for (e, r) in &report.results {
        let mut cells = vec![e.id.clone()];
        for a in &report.axes {
            cells.push(field(&label(e.values.get(a).unwrap_or(&Json::Null))));
        }
        cells.push(e.repeat.to_string());
        for m in &report.metrics {
            cells.push(m.value(r).map(|v| v.to_string()).unwrap_or_default());
        }
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_needs_it() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("iou+k"), "iou+k");
    }
}
