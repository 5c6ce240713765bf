//! Aggregation: the repeats of each configuration (one combination of axis
//! values) reduced to median, min and max per figure, and the sentences
//! every output shares (status, host, what was not measured).

use super::load::Loaded;
use crate::metric::{find_metrics, Metric};
use crate::store::{Index, RunEntry, Status};
use indexmap::IndexMap;
use ringlab_stats::effect::{Effect, TILDE_LEGEND};
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
    /// Per metric, every repeat's value (for the comparisons).
    pub(super) samples: Vec<Vec<f64>>,
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

    /// The baseline of the comparison tables: the first configuration
    /// with a done run.
    pub(super) fn baseline(&self) -> Option<usize> {
        self.rows.iter().position(|r| r.done > 0)
    }

    /// Metric `mi` of configuration `row` against the baseline: None for
    /// the baseline itself, or where either has no value.
    pub(super) fn vs_first(&self, row: usize, mi: usize) -> Option<Effect> {
        let base = self.baseline()?;
        if row == base {
            return None;
        }
        let first = self.rows.get(base)?.samples.get(mi)?;
        Effect::of(self.rows.get(row)?.samples.get(mi)?, first)
    }

    /// The rows of the comparison tables: every configuration but the
    /// baseline (and those before it, which have no results).
    pub(super) fn compared_rows(&self) -> impl Iterator<Item = (usize, &Row)> {
        let base = self.baseline().unwrap_or(self.rows.len());
        self.rows.iter().enumerate().skip(base + 1)
    }

    /// Whether there is anything to compare with the baseline.
    pub(super) fn has_comparisons(&self) -> bool {
        self.compared_rows().next().is_some()
    }

    /// The cell of a comparison table: `+12% [+8.0%, +15%] p=0.008`, or
    /// `~ p=0.42`, or `—` where there is nothing to compare.
    pub(super) fn vs_first_cell(&self, row: usize, mi: usize) -> String {
        match self.vs_first(row, mi) {
            Some(e) => format!("{} p={:.3}", e.delta(), e.p_value),
            None => "—".to_string(),
        }
    }

    /// The baseline configuration, as `axis=value` pairs.
    pub(super) fn first_label(&self) -> String {
        self.baseline()
            .and_then(|i| self.rows.get(i))
            .map(|r| {
                r.values
                    .iter()
                    .map(|(k, v)| format!("{k}={}", label(v)))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    }

    /// What the comparison tables show, in a sentence.
    pub(super) fn comparison_note(&self) -> String {
        let few = if self.rows.iter().any(|r| r.done > 0 && r.done < 3) {
            " Configurations with fewer than 3 done runs never show a difference."
        } else {
            ""
        };
        format!(
            "Each configuration against the first with results ({}): the ratio of medians as a change with its 95% bootstrap interval over the repeats, and the Mann-Whitney U p-value. {}.{few}",
            self.first_label(),
            TILDE_LEGEND
        )
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
                samples: Vec::new(),
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
    row.samples = metrics
        .iter()
        .map(|m| mine.iter().filter_map(|r| m.value(r)).collect())
        .collect();
    row.aggs = row.samples.iter().map(|v| aggregate(v)).collect();
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

    /// A report of made-up repeats: configuration `engine` = each name,
    /// with the IOPS of each repeat.
    fn made_up(configs: &[(&str, &[f64])]) -> Report {
        use crate::store::{Index, RunEntry, Status, INDEX_FORMAT};
        let mut entries = Vec::new();
        let mut results = Vec::new();
        for (name, iops) in configs {
            for (i, v) in iops.iter().enumerate() {
                let mut values = serde_json::Map::new();
                values.insert("engine".into(), Json::from(*name));
                let e = RunEntry {
                    id: format!("{name}-{i}"),
                    values,
                    repeat: i as u32 + 1,
                    status: Status::Done,
                    result: format!("runs/{name}-{i}.json"),
                    args: vec![],
                    error: None,
                    wall_s: None,
                };
                let r = serde_json::json!({"command": "io", "total": {"iops": v, "ops": 1000}});
                entries.push(e.clone());
                results.push((e, r));
            }
        }
        let names: Vec<&str> = configs.iter().map(|c| c.0).collect();
        let index = Index {
            format: INDEX_FORMAT.into(),
            version: 1,
            plan: serde_json::json!({"command": "io", "axes": {"engine": names}}),
            runs: entries.clone(),
        };
        let loaded = Loaded {
            index,
            plan_text: String::new(),
            entries,
            results,
            warnings: vec![],
        };
        Report::new(Path::new("made-up"), loaded)
    }

    fn iops_index(r: &Report) -> usize {
        r.metrics.iter().position(|m| m.key == "iops").unwrap()
    }

    #[test]
    fn a_directory_compared_with_itself_shows_no_difference() {
        // The same repeats under two names: a directory with itself.
        let same: &[f64] = &[100.0, 104.0, 96.0, 102.0, 98.0];
        let r = made_up(&[("a", same), ("b", same)]);
        let mi = iops_index(&r);
        assert!(r.vs_first(0, mi).is_none(), "the first has no comparison");
        let cell = r.vs_first_cell(1, mi);
        assert_eq!(cell, "~ p=1.000");
        let md = super::super::markdown::render(&r, &[]);
        assert!(md.contains("## Against the first configuration"), "{md}");
        assert!(md.contains("| b | 5/5 | ~ p=1.000"), "{md}");
        assert!(md.contains("(engine=a)"), "{md}");
        let html = super::super::html::render(&r, &[]);
        assert!(html.contains("<td>~ p=1.000</td>"), "{html}");
        let csv = super::super::csv::summary(&r, &[]);
        let line = csv.lines().nth(2).unwrap();
        assert!(
            line.starts_with("b,5,5,") && line.ends_with(",1,false"),
            "{csv}"
        );
    }

    #[test]
    fn configurations_that_differ_show_the_ratio_with_its_interval() {
        let base: &[f64] = &[100.0, 104.0, 96.0, 102.0, 98.0];
        let inside: &[f64] = &[101.0, 105.0, 97.0, 103.0, 99.0];
        let outside: &[f64] = &[120.0, 124.0, 116.0, 122.0, 118.0];
        let r = made_up(&[("a", base), ("b", inside), ("c", outside)]);
        let mi = iops_index(&r);
        assert!(r.vs_first_cell(1, mi).starts_with("~ p="));
        let c = r.vs_first_cell(2, mi);
        assert!(c.starts_with("+20% [+"), "{c}");
        assert!(c.ends_with("p=0.008"), "{c}");
        // The median with its spread stays in the main table.
        let md = super::super::markdown::render(&r, &[]);
        assert!(
            md.contains("(96.0–104.0)") || md.contains("(96–104)"),
            "{md}"
        );
        // Too few repeats: never a difference, and the note says so.
        let r = made_up(&[("a", &[100.0, 101.0]), ("b", &[200.0, 201.0])]);
        assert!(r.vs_first_cell(1, iops_index(&r)).starts_with("~"));
        assert!(r.comparison_note().contains("fewer than 3"));
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
