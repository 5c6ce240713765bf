//! The SVG output: one chart per plotted figure, against the first numeric
//! axis of the plan, one series per combination of the other axes.

use super::aggregate::{label, Report};
use crate::metric::throughput_word;
use crate::plot::{self, Axis, Chart, Series, XScale};
use anyhow::Result;
use serde_json::Value as Json;

/// One rendered plot: its file name, the metric it shows and the SVG text.
pub(super) struct Plot {
    pub(super) file: String,
    /// Index into [`Report::metrics`].
    pub(super) metric: usize,
    pub(super) svg: String,
}

/// The SVG of every plotted figure, in metric order.
pub(super) fn render_plots(report: &Report) -> Result<Vec<Plot>> {
    let mut plots = Vec::new();
    for (i, m) in report.metrics.iter().enumerate() {
        if !m.plotted {
            continue;
        }
        plots.push(Plot {
            file: format!("{}.svg", m.key),
            metric: i,
            svg: plot::render_svg(&report.chart(i))?,
        });
    }
    Ok(plots)
}

/// Description of well-known x axes, with their unit.
fn axis_description(name: &str) -> String {
    let known = [
        ("iodepth", "iodepth (I/Os in flight per job)"),
        ("numjobs", "numjobs (job threads)"),
        ("thinkcycles", "thinkcycles (multiply-adds per I/O)"),
        ("connections", "connections (open TCP connections)"),
        ("threads", "threads (load generator threads)"),
        ("rate", "rate (requests/s offered)"),
        ("rwmixread", "rwmixread (% reads)"),
    ];
    known
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, d)| d.to_string())
        .unwrap_or_else(|| name.to_string())
}

impl Report {
    /// The x axis of the plots: the first axis whose values are all
    /// numbers, else the first axis as categories.
    fn x_axis(&self) -> Option<(String, XScale)> {
        let plan_axes = self.index.plan["axes"].as_object()?;
        let numeric = plan_axes.iter().find(|(_, vals)| {
            vals.as_array()
                .is_some_and(|a| !a.is_empty() && a.iter().all(|v| v.as_f64().is_some()))
        });
        if let Some((name, vals)) = numeric {
            let xs: Vec<f64> = vals
                .as_array()
                .map(|a| a.iter().filter_map(Json::as_f64).collect())
                .unwrap_or_default();
            return Some((name.clone(), XScale::for_values(&xs)));
        }
        let (name, vals) = plan_axes.iter().next()?;
        let cats = vals
            .as_array()
            .map(|a| a.iter().map(label).collect())
            .unwrap_or_default();
        Some((name.clone(), XScale::Category(cats)))
    }

    /// The chart of one metric: one series per combination of the other
    /// axes, points at the x axis values (median, min-max bars).
    fn chart(&self, mi: usize) -> Chart {
        let metric = &self.metrics[mi];
        let (x_name, scale) = self.x_axis().unwrap_or_else(|| {
            (
                "runs".to_string(),
                XScale::Category(vec!["all runs".to_string()]),
            )
        });
        let others: Vec<&String> = self.axes.iter().filter(|a| **a != x_name).collect();
        let series = self.series(mi, &x_name, &scale, &others);
        let log = matches!(scale, XScale::Log2 { .. });
        Chart {
            title: format!("{} vs {x_name}", metric.title),
            x: Axis {
                desc: format!(
                    "{}{}",
                    axis_description(&x_name),
                    if log { ", log2 scale" } else { "" }
                ),
            },
            y_unit: metric.unit,
            y_title: metric.title.clone(),
            throughput_word: throughput_word(&self.command).to_string(),
            scale,
            series,
            legend_title: others
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            points_note: "median of repeats".into(),
            repeats: true,
        }
    }

    /// The points of metric `mi`, one series per combination of the axes
    /// `others`, each sorted by x.
    fn series(&self, mi: usize, x_name: &str, scale: &XScale, others: &[&String]) -> Vec<Series> {
        let mut series: Vec<Series> = Vec::new();
        for row in &self.rows {
            let Some(agg) = row.aggs[mi] else { continue };
            let name = if others.is_empty() {
                self.metrics[mi].title.clone()
            } else {
                others
                    .iter()
                    .map(|a| format!("{a}={}", label(&row.values[a.as_str()])))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let x = match row.values.get(x_name) {
                Some(v) => scale.position(v),
                None => Some(0.0),
            };
            let Some(x) = x else { continue };
            let point = (x, agg.median, agg.min, agg.max);
            match series.iter_mut().find(|s| s.name == name) {
                Some(s) => s.points.push(point),
                None => series.push(Series {
                    name,
                    points: vec![point],
                }),
            }
        }
        for s in &mut series {
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        series
    }
}
