//! Aggregation: the repeats of each configuration (one combination of axis
//! values) reduced to median, min and max per figure, and the sentences
//! every output shares (status, host, what was not measured).

use super::load::Loaded;
use crate::metric::{find_metrics, Metric};
use crate::store::{Index, RunEntry, Status};
use indexmap::IndexMap;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};

/// Median, min and max of one figure over a configuration's repeats.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Agg {
    pub(super) median: f64,
    pub(super) min: f64,
    pub(super) max: f64,
    pub(super) n: usize,
}

pub(super) fn aggregate(values: &[f64]) -> Option<Agg> {
    let s = ringlab_stats::spread::Spread::of(values)?;
    Some(Agg {
        median: s.median,
        min: s.min,
        max: s.max,
        n: values.len(),
    })
}

/// One combination of axis values with its aggregated figures.
#[derive(Debug)]
pub(super) struct Row {
    pub(super) values: IndexMap<String, Json>,
    pub(super) planned: usize,
    pub(super) done: usize,
    /// Per metric (same order as [`Report::metrics`]).
    pub(super) aggs: Vec<Option<Agg>>,
}

/// Everything the report shows, computed from a results directory.
pub(super) struct Report {
    pub(super) dir: PathBuf,
    pub(super) index: Index,
    pub(super) plan_text: String,
    pub(super) command: String,
    pub(super) axes: Vec<String>,
    pub(super) metrics: Vec<Metric>,
    pub(super) rows: Vec<Row>,
    /// Done runs with their results, in id order.
    pub(super) results: Vec<(RunEntry, Json)>,
    /// `kstat.unavailable` reasons found in the results, deduplicated.
    pub(super) kernel_unavailable: Vec<String>,
}

impl Report {
    /// Aggregates what was loaded from `dir`.
    pub(super) fn new(dir: &Path, loaded: Loaded) -> Report {
        let Loaded {
            index,
            plan_text,
            entries,
            results,
            ..
        } = loaded;
        let command = index.command().to_string();
        let axes = index.axes();
        let metrics = find_metrics(&command, results.iter().map(|(_, r)| r));
        let mut rows = planned_rows(&axes, &entries);
        for row in &mut rows {
            fill_row(row, &axes, &metrics, &results);
        }
        let kernel_unavailable = unavailable_reasons(results.iter().map(|(_, r)| r));
        Report {
            dir: dir.to_path_buf(),
            index,
            plan_text,
            command,
            axes,
            metrics,
            rows,
            results,
            kernel_unavailable,
        }
    }

    /// Indexes of the metrics of one table: the generic figures, or the
    /// kernel ones that were not zero everywhere.
    pub(super) fn table_metrics(&self, kernel: bool) -> Vec<usize> {
        (0..self.metrics.len())
            .filter(|&i| self.metrics[i].kernel == kernel && !self.metrics[i].all_zero)
            .collect()
    }

    /// Names of kernel figures that were zero in every run.
    fn zero_kernel_figures(&self) -> Vec<&str> {
        self.metrics
            .iter()
            .filter(|m| m.all_zero)
            .map(|m| m.key.trim_start_matches("kstat_"))
            .collect()
    }

    pub(super) fn has_kernel_figures(&self) -> bool {
        self.metrics.iter().any(|m| m.kernel)
    }

    pub(super) fn host_line(&self) -> String {
        let Some((_, r)) = self.results.first() else {
            return "no results yet".to_string();
        };
        let h = &r["host"];
        format!(
            "host {}, kernel {}, {} ({} CPUs), ringlab {}",
            h["hostname"].as_str().unwrap_or("?"),
            h["kernel"].as_str().unwrap_or("?"),
            h["cpu_model"].as_str().unwrap_or("unknown CPU"),
            h["cpus_online"],
            r["tool"]["version"].as_str().unwrap_or("?")
        )
    }

    pub(super) fn status_line(&self) -> String {
        let total = self.index.runs.len();
        let done = self.results.len();
        let failed = self
            .index
            .runs
            .iter()
            .filter(|r| r.status == Status::Failed)
            .count();
        let mut s = format!("{done} of {total} runs done");
        if failed > 0 {
            s.push_str(&format!(", {failed} failed (see index.json)"));
        }
        if done + failed < total {
            s.push_str(&format!(
                ", {} not run yet (run the sweep again to complete it)",
                total - done - failed
            ));
        }
        s
    }

    pub(super) fn zero_note(&self) -> Option<String> {
        let z = self.zero_kernel_figures();
        if z.is_empty() {
            return None;
        }
        Some(format!(
            "Measured and zero in every run (not plotted; their columns are in summary.csv): {}.",
            z.join(", ")
        ))
    }

    pub(super) fn kernel_note(&self) -> String {
        let mut s = "No kernel-evidence figures in these results: none of them holds kstat.per_op figures, so there is nothing to plot (no zeros are drawn for figures that were not measured).".to_string();
        if !self.kernel_unavailable.is_empty() {
            s.push_str(" The runs reported as unavailable: ");
            s.push_str(&self.kernel_unavailable.join("; "));
            s.push('.');
        }
        s
    }
}

/// One row per combination of axis values, in the order the runs' ids
/// first name it, with the number of runs planned for it.
fn planned_rows(axes: &[String], entries: &[RunEntry]) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for e in entries {
        let values: IndexMap<String, Json> = axes
            .iter()
            .map(|a| (a.clone(), e.values.get(a).cloned().unwrap_or(Json::Null)))
            .collect();
        match rows.iter_mut().find(|r| r.values == values) {
            Some(r) => r.planned += 1,
            None => rows.push(Row {
                values,
                planned: 1,
                done: 0,
                aggs: Vec::new(),
            }),
        }
    }
    rows
}

/// Counts the row's done runs and aggregates each metric over them.
fn fill_row(row: &mut Row, axes: &[String], metrics: &[Metric], results: &[(RunEntry, Json)]) {
    let mine: Vec<&Json> = results
        .iter()
        .filter(|(e, _)| axes.iter().all(|a| e.values.get(a) == row.values.get(a)))
        .map(|(_, r)| r)
        .collect();
    row.done = mine.len();
    row.aggs = metrics
        .iter()
        .map(|m| {
            let vals: Vec<f64> = mine.iter().filter_map(|r| m.value(r)).collect();
            aggregate(&vals)
        })
        .collect();
}

/// Human lines from `kstat.unavailable` (an object name -> reason, or a
/// list of strings or objects), so the report can say why figures are absent.
fn unavailable_reasons<'a>(results: impl Iterator<Item = &'a Json>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let text = |v: &Json| match v {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    };
    for r in results {
        let mut lines = Vec::new();
        match &r["kstat"]["unavailable"] {
            Json::Object(m) => lines.extend(m.iter().map(|(k, v)| format!("{k}: {}", text(v)))),
            Json::Array(a) => lines.extend(a.iter().map(|v| match v {
                Json::Object(m) => m.values().map(text).collect::<Vec<_>>().join(": "),
                other => text(other),
            })),
            _ => {}
        }
        for l in lines {
            if !out.contains(&l) {
                out.push(l);
            }
        }
    }
    out
}

/// The value of an axis as a label (`uring`, `4`).
pub(super) fn label(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Null => "-".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregate_takes_median_min_max() {
        assert_eq!(aggregate(&[]), None);
        let a = aggregate(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((a.median, a.min, a.max, a.n), (2.0, 1.0, 3.0, 3));
        let b = aggregate(&[4.0, 1.0]).unwrap();
        assert_eq!(b.median, 2.5);
    }

    #[test]
    fn unavailable_reasons_accept_object_or_list() {
        let a = serde_json::json!({"kstat": {"unavailable": {"ipis_per_op": "no permission"}}});
        let b = serde_json::json!({"kstat": {"unavailable": [{"name": "x", "reason": "y"}, "z"]}});
        assert_eq!(
            unavailable_reasons([&a, &b, &a].into_iter()),
            ["ipis_per_op: no permission", "x: y", "z"]
        );
    }
}
