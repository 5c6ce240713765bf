//! fio's failed jobs under `ringlab fio` (fio 3.33 backend.c `td_verror`):
//! a job ended by an I/O error is said on stderr as fio says it
//! (`fio: pid=N, err=E/file:...`), its output carries the error (json
//! `error`, the normal header's `err=E (...)`, terse's error field, set by
//! `ringlab_io::fio::json::job_error`), the other jobs go on (or end at
//! exitall, as fio's), and the run exits 1 once every job's output is
//! written.

use anyhow::Result;
use ringlab_io::job_error;
use ringlab_stats::RunResult;

/// The failures of job section `name`'s run, each said on stderr in
/// fio's words; returns one line per failure for the closing message.
pub fn said(name: &str, r: &RunResult) -> Vec<String> {
    let mut out = Vec::new();
    for f in r.warnings.iter().filter_map(|w| job_error::parse(w)) {
        // fio prints this line when the job ends (fio 3.33: on stdout,
        // before the report; here on stderr, so a json report stays
        // parseable).
        eprintln!(
            "fio: pid={}, err={}/{}",
            std::process::id(),
            f.errno,
            job_error::verror(f.errno, &f.dir)
        );
        out.push(format!(
            "[{name}] job {}: err={} ({}): {}",
            f.job,
            f.errno,
            job_error::strerror(f.errno),
            f.detail
        ));
    }
    out
}

/// fio exits 1 when a job failed: the error after the output is written.
pub fn exit_status(failed: &[String]) -> Result<()> {
    if failed.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "{} job{} ended with an I/O error, as fio ends a failed job (the other jobs ran on, or ended with it under exitall; fio exits 1 too): {}",
        failed.len(),
        if failed.len() == 1 { "" } else { "s" },
        failed.join("; ")
    )
}

/// fio's error counts of an entry of a job with continue_on_error (fio
/// writes them only then: json `total_err` and `first_error`, the normal
/// output's `errors` line): the errors gone on after plus the one that
/// ended the job, and the first of them. `job`: the entry's thread, None
/// for a reporting group's entry.
///
/// An error gone on after is also the entry's `error` when none ended the
/// job (fio 3.33 keeps it there and still exits 0), its I/Os counted
/// issued in their direction, and its header text is fio's for the
/// engine: the sync engines' `file:engines/sync.c:126, func=xfer, error=...`,
/// nothing for the asynchronous ones (`err=28 ()`).
pub fn error_counts(e: &mut serde_json::Value, r: &RunResult, job: Option<u64>, sync_engine: bool) {
    let mut total = 0u64;
    let mut first: Option<i32> = None;
    let mut continued: Vec<(i32, String, u64)> = Vec::new();
    for w in &r.warnings {
        if let Some(f) = job_error::parse(w) {
            if job.is_none_or(|n| n == u64::from(f.job)) {
                total += 1;
                first.get_or_insert(f.errno);
            }
            continue;
        }
        // "job N: continue_on_error: K I/O error(s) counted ... (first:
        // ...: TEXT (os error E))".
        let Some((head, rest)) = w.split_once(": continue_on_error: ") else {
            continue;
        };
        let n = head
            .strip_prefix("job ")
            .and_then(|n| n.parse::<u64>().ok());
        if job.is_some() && n != job {
            continue;
        }
        let k = rest
            .split_whitespace()
            .next()
            .and_then(|k| k.parse::<u64>().ok())
            .unwrap_or(0);
        total += k;
        let errno = rest
            .rsplit_once("(os error ")
            .and_then(|(_, e)| e.split(')').next())
            .and_then(|e| e.parse::<i32>().ok());
        // The errors gone on after came before the one that ended the job.
        if let Some(errno) = errno {
            first = Some(errno);
            let dir = rest
                .split_once("(first: ")
                .and_then(|(_, d)| d.split_whitespace().next())
                .unwrap_or("write")
                .to_string();
            continued.push((errno, dir, k));
        }
    }
    if e["error"].as_u64() == Some(0) {
        if let Some((errno, _, _)) = continued.last() {
            e["error"] = serde_json::json!(errno);
            e["ringlab"]["verror"] = serde_json::json!(if sync_engine {
                format!(
                    "file:engines/sync.c:126, func=xfer, error={}",
                    job_error::strerror(*errno)
                )
            } else {
                String::new()
            });
        }
    }
    for (_, dir, k) in &continued {
        for key in [dir.as_str(), "mixed"] {
            if let Some(n) = e[key]["total_ios"].as_u64() {
                e[key]["total_ios"] = serde_json::json!(n + k);
            }
        }
    }
    e["total_err"] = serde_json::json!(total);
    e["first_error"] = serde_json::json!(first.unwrap_or(0));
}
