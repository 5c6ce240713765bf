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
        "{} job{} ended with an I/O error, as fio ends a failed job (the other jobs ran on; fio exits 1 too): {}",
        failed.len(),
        if failed.len() == 1 { "" } else { "s" },
        failed.join("; ")
    )
}
