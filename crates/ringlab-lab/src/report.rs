//! `ringlab report DIR`: repeats aggregated (median, min, max) into
//! Markdown and CSV tables, SVG plots against the first numeric axis, and one
//! self-contained HTML page with all of it.
//!
//! Results are read as JSON values, not as `RunResult`, so that figures added
//! to the schema later (the `kstat` object, HTTP results) never make an older
//! sweep unreadable, and a figure missing from a result is simply absent from
//! its aggregate: never a zero.

use crate::plot::{self, Axis, Chart, Series, XScale};
use crate::store::{read_index, Index, RunEntry, Status, PLAN_FILE};
use anyhow::{Context, Result};
use indexmap::IndexMap;
use ringlab_core::usage_error;
use serde_json::Value as Json;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// How a figure is shown: its unit decides table formatting and axis scale.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unit {
    /// Operations (or requests) per second.
    PerSecond,
    BytesPerSecond,
    Nanoseconds,
    /// A count per operation (system calls, IPIs, offloads).
    PerOp,
    /// Microseconds per operation.
    MicrosPerOp,
}

/// One figure of a result that the report aggregates.
#[derive(Clone, Debug)]
pub struct Metric {
    /// Column name in CSV (`iops`, `lat_ns_p99`, `kstat_syscalls_per_op`).
    pub key: String,
    /// What a person reads (`p99 latency`, `system calls per operation`).
    pub title: String,
    pub unit: Unit,
    /// From `kstat.per_op`: plotted in the kernel-evidence section.
    pub kernel: bool,
    /// Drawn as a plot (the job-thread CPU figure is only tabled).
    pub plotted: bool,
    /// A kernel figure that was zero in every run.
    pub all_zero: bool,
    path: Vec<String>,
}

impl Metric {
    fn new(key: &str, title: &str, unit: Unit, path: &[&str]) -> Metric {
        Metric {
            key: key.to_string(),
            title: title.to_string(),
            unit,
            kernel: false,
            plotted: true,
            all_zero: false,
            path: path.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// The figure in `result`, if it was measured.
    pub fn value(&self, result: &Json) -> Option<f64> {
        if self.key == "thread_cpu_us_per_op" {
            let t = &result["total"];
            let ops = t["ops"].as_f64().filter(|&o| o > 0.0)?;
            let cpu = t["cpu_user_ns"].as_f64()? + t["cpu_sys_ns"].as_f64()?;
            return Some(cpu / ops / 1e3);
        }
        let mut v = result;
        for p in &self.path {
            v = v.get(p)?;
        }
        v.as_f64().filter(|x| x.is_finite())
    }

    /// Column header with the unit the table shows.
    fn column(&self, command: &str) -> String {
        match self.unit {
            Unit::PerSecond => throughput_word(command).to_string(),
            Unit::BytesPerSecond => "MiB/s".to_string(),
            Unit::Nanoseconds => format!("{} (µs)", self.title),
            Unit::PerOp | Unit::MicrosPerOp => self.title.clone(),
        }
    }

    /// A value as the tables show it, in the column's unit.
    fn format(&self, v: f64) -> String {
        match self.unit {
            Unit::PerSecond => ringlab_stats::units::format_rate(v),
            Unit::BytesPerSecond => format!("{:.1}", v / (1024.0 * 1024.0)),
            Unit::Nanoseconds => sig(v / 1e3),
            Unit::PerOp | Unit::MicrosPerOp => sig(v),
        }
    }
}

/// Three significant digits, no exponent: `0.0123`, `4.56`, `123`, `4567`.
fn sig(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".to_string()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
}

fn throughput_word(command: &str) -> &'static str {
    if command == "http" {
        "requests/s"
    } else {
        "IOPS"
    }
}

/// Kernel-evidence figures the issue names, in the order the report shows
/// them (first those it asks for: system calls, CPU with helpers, IPIs, io-wq
/// offloads), with their titles. Other `kstat.per_op` figures follow in the
/// order the results list them (by name).
const KERNEL_HEADLINE: [(&str, &str); 10] = [
    ("syscalls_per_op", "system calls per operation"),
    (
        "cpu_us_with_helpers_per_op",
        "CPU µs per operation (incl. kernel helper threads)",
    ),
    ("cpu_us_per_op", "CPU µs per operation (job threads)"),
    ("ipis_per_op", "IPIs per operation"),
    (
        "io_uring_queue_async_work_per_op",
        "io-wq offloads per operation",
    ),
    (
        "io_uring_enter_per_op",
        "io_uring_enter calls per operation",
    ),
    ("context_switches_per_op", "context switches per operation"),
    ("reschedule_ipis_per_op", "rescheduling IPIs per operation"),
    (
        "function_call_ipis_per_op",
        "function-call IPIs per operation",
    ),
    (
        "device_interrupts_per_op",
        "device interrupts per operation",
    ),
];

fn kernel_title(name: &str) -> (String, Unit) {
    let unit = if name.contains("cpu_us") {
        Unit::MicrosPerOp
    } else {
        Unit::PerOp
    };
    match KERNEL_HEADLINE.iter().find(|(k, _)| *k == name) {
        Some((_, t)) => (t.to_string(), unit),
        // io_uring_submit_req_per_op -> "io_uring_submit_req per operation":
        // the tracepoint's own name is what a reader can look up.
        None => (
            format!("{} per operation", name.trim_end_matches("_per_op")),
            unit,
        ),
    }
}

/// Median, min and max of one figure over a configuration's repeats.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Agg {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

pub fn aggregate(values: &[f64]) -> Option<Agg> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Agg {
        median,
        min: v[0],
        max: v[n - 1],
        n,
    })
}

/// One combination of axis values with its aggregated figures.
#[derive(Debug)]
pub struct Row {
    pub values: IndexMap<String, Json>,
    pub planned: usize,
    pub done: usize,
    /// Per metric (same order as [`Report::metrics`]).
    pub aggs: Vec<Option<Agg>>,
}

/// Everything the report shows, computed from a results directory.
pub struct Report {
    pub dir: PathBuf,
    pub index: Index,
    pub plan_text: String,
    pub command: String,
    pub axes: Vec<String>,
    pub metrics: Vec<Metric>,
    pub rows: Vec<Row>,
    /// Done runs with their results, in id order.
    pub results: Vec<(RunEntry, Json)>,
    /// `kstat.unavailable` reasons found in the results, deduplicated.
    pub kernel_unavailable: Vec<String>,
}

pub struct Written {
    pub files: Vec<PathBuf>,
}

/// Reads DIR and aggregates it.
pub fn load(dir: &Path) -> Result<Report> {
    let index = read_index(dir)?;
    let plan_text = std::fs::read_to_string(dir.join(PLAN_FILE)).unwrap_or_default();
    let command = index.command().to_string();
    let axes = index.axes();
    let mut entries = index.runs.clone();
    entries.sort_by(|a, b| a.id.cmp(&b.id));
    let mut results = Vec::new();
    for e in &entries {
        if e.status != Status::Done {
            continue;
        }
        let path = dir.join(&e.result);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            // Listed done but gone: the table shows it as not done.
            Err(_) => continue,
        };
        let v: Json = serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not a JSON result", path.display()))?;
        results.push((e.clone(), v));
    }
    let metrics = find_metrics(&command, results.iter().map(|(_, r)| r));
    let mut rows: Vec<Row> = Vec::new();
    for e in &entries {
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
    for row in &mut rows {
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
    let kernel_unavailable = unavailable_reasons(results.iter().map(|(_, r)| r));
    Ok(Report {
        dir: dir.to_path_buf(),
        index,
        plan_text,
        command,
        axes,
        metrics,
        rows,
        results,
        kernel_unavailable,
    })
}

/// The figures present in at least one result, generic ones first, then the
/// kernel-evidence ones in the order they first appear.
fn find_metrics<'a>(command: &str, results: impl Iterator<Item = &'a Json> + Clone) -> Vec<Metric> {
    let word = throughput_word(command);
    let mut candidates = vec![
        Metric::new(
            "iops",
            &format!("throughput ({word})"),
            Unit::PerSecond,
            &["total", "iops"],
        ),
        Metric::new(
            "bw_bytes_per_s",
            "bandwidth",
            Unit::BytesPerSecond,
            &["total", "bw_bytes_per_s"],
        ),
        Metric::new(
            "lat_ns_p50",
            "p50 latency",
            Unit::Nanoseconds,
            &["total", "lat_ns", "p50"],
        ),
        Metric::new(
            "lat_ns_p99",
            "p99 latency",
            Unit::Nanoseconds,
            &["total", "lat_ns", "p99"],
        ),
        Metric {
            plotted: false,
            ..Metric::new(
                "thread_cpu_us_per_op",
                "CPU µs per operation (job threads, rusage)",
                Unit::MicrosPerOp,
                &[],
            )
        },
    ];
    let mut kernel_names: Vec<String> = Vec::new();
    for r in results.clone() {
        if let Some(per_op) = r["kstat"]["per_op"].as_object() {
            for (name, v) in per_op {
                if v.as_f64().is_some() && !kernel_names.contains(name) {
                    kernel_names.push(name.clone());
                }
            }
        }
    }
    let rank = |n: &String| {
        KERNEL_HEADLINE
            .iter()
            .position(|(k, _)| k == n)
            .unwrap_or(KERNEL_HEADLINE.len())
    };
    // Stable: the headline figures first, the others as the results list them.
    kernel_names.sort_by_key(rank);
    if kernel_names.iter().any(|n| n == "cpu_us_per_op") {
        // The kernel's figure supersedes the one derived here from rusage.
        candidates.retain(|m| m.key != "thread_cpu_us_per_op");
    }
    for name in kernel_names {
        let (title, unit) = kernel_title(&name);
        let mut m = Metric::new(
            &format!("kstat_{name}"),
            &title,
            unit,
            &["kstat", "per_op", &name],
        );
        m.kernel = true;
        candidates.push(m);
    }
    let mut present: Vec<Metric> = candidates
        .into_iter()
        .filter(|m| results.clone().any(|r| m.value(r).is_some()))
        .collect();
    for m in present.iter_mut().filter(|m| m.kernel) {
        // Measured, and zero in every run: one sentence says so instead of
        // a flat plot and a column of zeros (the CSV keeps them).
        m.all_zero = results.clone().filter_map(|r| m.value(r)).all(|v| v == 0.0);
        m.plotted = !m.all_zero;
    }
    present
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
fn label(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Null => "-".to_string(),
        other => other.to_string(),
    }
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
    pub fn x_axis(&self) -> Option<(String, XScale)> {
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
    pub fn chart(&self, mi: usize) -> Chart {
        let metric = &self.metrics[mi];
        let (x_name, scale) = self.x_axis().unwrap_or_else(|| {
            (
                "runs".to_string(),
                XScale::Category(vec!["all runs".to_string()]),
            )
        });
        let others: Vec<&String> = self.axes.iter().filter(|a| **a != x_name).collect();
        let mut series: Vec<Series> = Vec::new();
        for row in &self.rows {
            let Some(agg) = row.aggs[mi] else { continue };
            let name = if others.is_empty() {
                metric.title.clone()
            } else {
                others
                    .iter()
                    .map(|a| format!("{a}={}", label(&row.values[a.as_str()])))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let x = match row.values.get(&x_name) {
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
            legend_title: if others.is_empty() {
                String::new()
            } else {
                others
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        }
    }

    /// Indexes of the metrics of one table: the generic figures, or the
    /// kernel ones that were not zero everywhere.
    fn table_metrics(&self, kernel: bool) -> Vec<usize> {
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

    /// Markdown table: one row per configuration, `median (min–max)`.
    pub fn markdown_table(&self, kernel: bool) -> String {
        let cols = self.table_metrics(kernel);
        let mut out = String::new();
        let mut head: Vec<String> = self.axes.clone();
        head.push("runs".to_string());
        head.extend(cols.iter().map(|&i| self.metrics[i].column(&self.command)));
        let _ = writeln!(out, "| {} |", head.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(head.len()));
        for row in &self.rows {
            let mut cells: Vec<String> = row.values.values().map(label).collect();
            cells.push(format!("{}/{}", row.done, row.planned));
            for &i in &cols {
                let (m, agg) = (&self.metrics[i], &row.aggs[i]);
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

    /// CSV of the aggregates, in base units at full precision (for
    /// programs; the Markdown is for people).
    pub fn summary_csv(&self) -> String {
        let mut head: Vec<String> = self.axes.iter().map(|a| csv_field(a)).collect();
        head.push("runs_done".into());
        head.push("runs_planned".into());
        for m in &self.metrics {
            for s in ["median", "min", "max"] {
                head.push(format!("{}_{s}", m.key));
            }
        }
        let mut out = head.join(",") + "\n";
        for row in &self.rows {
            let mut cells: Vec<String> =
                row.values.values().map(|v| csv_field(&label(v))).collect();
            cells.push(row.done.to_string());
            cells.push(row.planned.to_string());
            for agg in &row.aggs {
                match agg {
                    Some(a) => cells.extend([a.median, a.min, a.max].iter().map(|v| v.to_string())),
                    None => cells.extend(["", "", ""].iter().map(|s| s.to_string())),
                }
            }
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    }

    /// CSV with one line per stored run.
    pub fn runs_csv(&self) -> String {
        let mut head: Vec<String> = vec!["id".into()];
        head.extend(self.axes.iter().map(|a| csv_field(a)));
        head.push("repeat".into());
        head.extend(self.metrics.iter().map(|m| m.key.clone()));
        let mut out = head.join(",") + "\n";
        for (e, r) in &self.results {
            let mut cells = vec![e.id.clone()];
            for a in &self.axes {
                cells.push(csv_field(&label(e.values.get(a).unwrap_or(&Json::Null))));
            }
            cells.push(e.repeat.to_string());
            for m in &self.metrics {
                cells.push(m.value(r).map(|v| v.to_string()).unwrap_or_default());
            }
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    }

    fn host_line(&self) -> String {
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

    fn status_line(&self) -> String {
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

    fn zero_note(&self) -> Option<String> {
        let z = self.zero_kernel_figures();
        if z.is_empty() {
            return None;
        }
        Some(format!(
            "Measured and zero in every run (not plotted; their columns are in summary.csv): {}.",
            z.join(", ")
        ))
    }

    fn kernel_note(&self) -> String {
        let mut s = "No kernel-evidence figures in these results: none of them holds kstat.per_op figures, so there is nothing to plot (no zeros are drawn for figures that were not measured).".to_string();
        if !self.kernel_unavailable.is_empty() {
            s.push_str(" The runs reported as unavailable: ");
            s.push_str(&self.kernel_unavailable.join("; "));
            s.push('.');
        }
        s
    }

    pub fn markdown(&self, plots: &[(String, &Metric)]) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# ringlab sweep report: `ringlab {}`\n", self.command);
        let _ = writeln!(out, "{}; {}.\n", self.status_line(), self.host_line());
        let _ = writeln!(
            out,
            "Each cell is the median of the repeats with (min–max); `—` marks a figure no run of that configuration measured.\n"
        );
        out.push_str(&self.markdown_table(false));
        out.push_str("\n## Kernel evidence per operation\n\n");
        if self.metrics.iter().any(|m| m.kernel) {
            out.push_str(&self.markdown_table(true));
            if let Some(z) = self.zero_note() {
                let _ = writeln!(out, "\n{z}");
            }
        } else {
            let _ = writeln!(out, "{}", self.kernel_note());
        }
        out.push_str("\n## Plots\n\n");
        for (file, m) in plots {
            let _ = writeln!(out, "![{}]({file})\n", m.title);
        }
        let _ = writeln!(out, "## Plan\n\n```toml\n{}```", self.plan_text);
        out
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

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

impl Report {
    fn html_table(&self, kernel: bool) -> String {
        let cols = self.table_metrics(kernel);
        let mut out = String::from("<div class=\"tablewrap\"><table>\n<tr>");
        for a in &self.axes {
            let _ = write!(out, "<th>{}</th>", html_escape(a));
        }
        out.push_str("<th>runs</th>");
        for &i in &cols {
            let _ = write!(
                out,
                "<th>{}</th>",
                html_escape(&self.metrics[i].column(&self.command))
            );
        }
        out.push_str("</tr>\n");
        for row in &self.rows {
            out.push_str("<tr>");
            for v in row.values.values() {
                let _ = write!(out, "<td class=\"k\">{}</td>", html_escape(&label(v)));
            }
            let _ = write!(out, "<td>{}/{}</td>", row.done, row.planned);
            for &i in &cols {
                let (m, agg) = (&self.metrics[i], &row.aggs[i]);
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

    pub fn html(&self, plots: &[(String, &Metric, String)]) -> String {
        let mut out = String::new();
        let title = format!("ringlab sweep report: ringlab {}", self.command);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{}</h1>\n<p>{}; {}.</p>\n",
            html_escape(&title),
            html_escape(&title),
            html_escape(&self.status_line()),
            html_escape(&self.host_line())
        );
        out.push_str("<h2 id=\"summary\">Summary</h2>\n<p>Median of the repeats with (min–max); — marks a figure no run of that configuration measured.</p>\n");
        out.push_str(&self.html_table(false));
        let caption = "Points are the median of the repeats; bars span min to max.";
        out.push_str("<h2 id=\"throughput\">Throughput and latency</h2>\n");
        for (file, m, svg) in plots.iter().filter(|(_, m, _)| !m.kernel) {
            let _ = write!(
                out,
                "<figure id=\"{}\">\n{svg}\n<figcaption>{} ({file}). {caption}</figcaption>\n</figure>\n",
                html_escape(&m.key),
                html_escape(&m.title)
            );
        }
        out.push_str("<h2 id=\"kernel\">Kernel evidence per operation</h2>\n");
        if self.metrics.iter().any(|m| m.kernel) {
            out.push_str("<p>Median of the repeats with (min–max), counted by the kernel (kstat.per_op).</p>\n");
            out.push_str(&self.html_table(true));
            if let Some(z) = self.zero_note() {
                let _ = writeln!(out, "<p class=\"note\">{}</p>", html_escape(&z));
            }
            for (file, m, svg) in plots.iter().filter(|(_, m, _)| m.kernel) {
                let _ = write!(
                    out,
                    "<figure id=\"{}\">\n{svg}\n<figcaption>{} ({file}). {caption}</figcaption>\n</figure>\n",
                    html_escape(&m.key),
                    html_escape(&m.title)
                );
            }
        } else {
            let _ = writeln!(
                out,
                "<p class=\"note\">{}</p>",
                html_escape(&self.kernel_note())
            );
        }
        let _ = write!(
            out,
            "<h2 id=\"plan\">Plan</h2>\n<pre>{}</pre>\n<p>Results: {} (one JSON file per run in runs/, listed in index.json).</p>\n</body>\n</html>\n",
            html_escape(&self.plan_text),
            html_escape(&self.dir.display().to_string())
        );
        out
    }
}

/// Writes report.md, summary.csv, runs.csv, one SVG per plotted figure and
/// report.html into `out`.
pub fn write_report(dir: &Path, out: &Path) -> Result<Written> {
    let report = load(dir)?;
    if report.results.is_empty() {
        return Err(usage_error(format!(
            "{}: no finished runs to report yet; run 'ringlab sweep PLAN --output {}' first",
            dir.display(),
            dir.display()
        )));
    }
    std::fs::create_dir_all(out)
        .map_err(|e| usage_error(format!("--output {}: cannot create it: {e}", out.display())))?;
    let mut files = Vec::new();
    let mut plots: Vec<(String, &Metric, String)> = Vec::new();
    for (i, m) in report.metrics.iter().enumerate() {
        if !m.plotted {
            continue;
        }
        let svg = plot::render_svg(&report.chart(i))?;
        let file = format!("{}.svg", m.key);
        write(out, &file, &svg, &mut files)?;
        plots.push((file, m, svg));
    }
    let md_plots: Vec<(String, &Metric)> = plots.iter().map(|(f, m, _)| (f.clone(), *m)).collect();
    write(out, "report.md", &report.markdown(&md_plots), &mut files)?;
    write(out, "summary.csv", &report.summary_csv(), &mut files)?;
    write(out, "runs.csv", &report.runs_csv(), &mut files)?;
    write(out, "report.html", &report.html(&plots), &mut files)?;
    Ok(Written { files })
}

fn write(dir: &Path, name: &str, text: &str, files: &mut Vec<PathBuf>) -> Result<()> {
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    files.push(path);
    Ok(())
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
    fn metrics_are_read_where_present_and_never_invented() {
        let r: Json = serde_json::json!({
            "command": "io",
            "total": {"iops": 10.0, "ops": 100, "cpu_user_ns": 1000, "cpu_sys_ns": 3000,
                      "lat_ns": {"p50": 5, "p99": 9}},
            "kstat": {"per_op": {"syscalls_per_op": 1.5}}
        });
        let ms = find_metrics("io", std::iter::once(&r));
        let keys: Vec<&str> = ms.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "iops",
                "lat_ns_p50",
                "lat_ns_p99",
                "thread_cpu_us_per_op",
                "kstat_syscalls_per_op"
            ],
            "bandwidth is absent from this result, so it is no column"
        );
        let cpu = ms.iter().find(|m| m.key == "thread_cpu_us_per_op").unwrap();
        assert_eq!(cpu.value(&r), Some(0.04));
        let sys = ms.iter().find(|m| m.kernel).unwrap();
        assert_eq!(sys.value(&r), Some(1.5));
        assert_eq!(sys.title, "system calls per operation");
    }

    #[test]
    fn kernel_figures_come_headline_first_and_all_zero_ones_are_not_plotted() {
        let r: Json = serde_json::json!({
            "command": "io",
            "total": {"iops": 10.0, "ops": 100, "cpu_user_ns": 1000, "cpu_sys_ns": 3000},
            "kstat": {"per_op": {"io_uring_submit_req_per_op": 1.0, "cpu_us_per_op": 2.0,
                                 "io_uring_cqe_overflow_per_op": 0.0, "syscalls_per_op": 0.3}}
        });
        let ms = find_metrics("io", std::iter::once(&r));
        let keys: Vec<&str> = ms.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "iops",
                "kstat_syscalls_per_op",
                "kstat_cpu_us_per_op",
                "kstat_io_uring_cqe_overflow_per_op",
                "kstat_io_uring_submit_req_per_op"
            ],
            "the kernel's CPU figure replaces the rusage one"
        );
        let zero = &ms[3];
        assert!(zero.all_zero && !zero.plotted);
        assert_eq!(ms[4].title, "io_uring_submit_req per operation");
        assert!(ms[4].plotted && !ms[4].all_zero);
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

    #[test]
    fn csv_quotes_what_needs_it() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("iou+k"), "iou+k");
    }
}
