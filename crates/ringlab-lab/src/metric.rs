//! The figures a report shows: which ones a set of results holds, how each
//! is read from a result, titled and formatted.
//!
//! Results are read as JSON values, not as `RunResult`, so that figures added
//! to the schema later (the `kstat` object, HTTP results) never make an older
//! sweep unreadable, and a figure missing from a result is simply absent:
//! never a zero. This file depends on nothing else of the crate: the report
//! and the plots both build on it.

use ringlab_stats::units::format_sig;
use serde_json::Value as Json;

/// How a figure is shown: its unit decides table formatting and axis scale.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Unit {
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
pub(crate) struct Metric {
    /// Column name in CSV (`iops`, `lat_ns_p99`, `kstat_syscalls_per_op`).
    pub(crate) key: String,
    /// What a person reads (`p99 latency`, `system calls per operation`).
    pub(crate) title: String,
    pub(crate) unit: Unit,
    /// From `kstat.per_op`: plotted in the kernel-evidence section.
    pub(crate) kernel: bool,
    /// Drawn as a plot (the job-thread CPU figure is only tabled).
    pub(crate) plotted: bool,
    /// A kernel figure that was zero in every run.
    pub(crate) all_zero: bool,
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
    pub(crate) fn value(&self, result: &Json) -> Option<f64> {
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
    pub(crate) fn column(&self, command: &str) -> String {
        match self.unit {
            Unit::PerSecond => throughput_word(command).to_string(),
            Unit::BytesPerSecond => "MiB/s".to_string(),
            Unit::Nanoseconds => format!("{} (µs)", self.title),
            Unit::PerOp | Unit::MicrosPerOp => self.title.clone(),
        }
    }

    /// A value as the tables show it, in the column's unit.
    pub(crate) fn format(&self, v: f64) -> String {
        match self.unit {
            Unit::PerSecond => ringlab_stats::units::format_rate(v),
            Unit::BytesPerSecond => format!("{:.1}", v / (1024.0 * 1024.0)),
            Unit::Nanoseconds => format_sig(v / 1e3),
            Unit::PerOp | Unit::MicrosPerOp => format_sig(v),
        }
    }
}

/// What one operation is called in the throughput column of a command.
pub(crate) fn throughput_word(command: &str) -> &'static str {
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

/// The throughput, bandwidth, latency and job-thread CPU figures, in the
/// order the tables show them.
fn generic_metrics(command: &str) -> Vec<Metric> {
    let word = throughput_word(command);
    vec![
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
    ]
}

/// Names of the `kstat.per_op` figures measured in any result: the headline
/// ones first, the others as the results list them.
fn kernel_names<'a>(results: impl Iterator<Item = &'a Json>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in results {
        if let Some(per_op) = r["kstat"]["per_op"].as_object() {
            for (name, v) in per_op {
                if v.as_f64().is_some() && !names.contains(name) {
                    names.push(name.clone());
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
    names.sort_by_key(rank);
    names
}

/// The figures present in at least one result, generic ones first, then the
/// kernel-evidence ones in the order they first appear.
pub(crate) fn find_metrics<'a>(
    command: &str,
    results: impl Iterator<Item = &'a Json> + Clone,
) -> Vec<Metric> {
    let mut candidates = generic_metrics(command);
    let kernel_names = kernel_names(results.clone());
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
