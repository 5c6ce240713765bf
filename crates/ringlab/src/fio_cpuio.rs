//! fio's cpuio engine under `ringlab fio`: what fio 3.33 does around it
//! (engines/cpu.c, and the FIO_NOIO flag in fio's core).
//!
//! - The job is bounded by its runtime only: fio counts no bytes for a
//!   cpuio "I/O", so `size` never ends it.
//! - nrfiles/openfiles are forced to 1; no file is opened.
//! - `exit_on_io_done=1` ends the job once every other (I/O) job of the
//!   run has ended; with no I/O job in the run it never fires (fio's
//!   fio_running_or_pending_io_threads returns -1).
//! - Outputs: each burn is one read of 0 bytes (io_bytes, bw, iops and
//!   runtime 0 in json, no read line in normal output), fio's header line
//!   is not printed for the job, and fio's init line
//!   `NAME (MODE): ioengine=cpuio, cpuload=L, cpucycle=C` comes once per
//!   thread before the results.

use anyhow::Result;
use ringlab_core::usage_error;
use ringlab_io::fio::options::{Translated, Written};
use ringlab_io::IoPlan;
use serde_json::{json, Value};

fn key(o: &Written) -> String {
    o.key.replace('-', "_")
}

/// Whether the job's options pick fio's cpuio engine.
pub fn is_cpuio(opts: &[Written]) -> bool {
    opts.iter()
        .rev()
        .find(|o| key(o) == "ioengine")
        .and_then(|o| o.value.as_deref())
        .is_some_and(|v| v.trim() == "cpuio")
}

/// Takes the options of fio's cpuio engine that only the personality
/// reads; returns exit_on_io_done. Refuses cpuio's options without it.
pub fn take(opts: &mut Vec<Written>) -> Result<bool> {
    let cpuio = is_cpuio(opts);
    let mut exit = false;
    let mut keep = Vec::with_capacity(opts.len());
    for o in opts.drain(..) {
        let k = key(&o);
        if !cpuio
            && matches!(
                k.as_str(),
                "cpuload" | "cpumode" | "cpuchunks" | "exit_on_io_done"
            )
        {
            return Err(usage_error(format!(
                "{}: an option of fio's cpuio engine: add ioengine=cpuio",
                o.origin.name(&o.key)
            )));
        }
        match k.as_str() {
            "exit_on_io_done" => {
                exit = !matches!(
                    o.value.as_deref().map(str::trim),
                    Some("0") | Some("false") | Some("off")
                );
            }
            // fio forces both to 1 for cpuio (no file is opened).
            "nrfiles" | "openfiles" if cpuio => {}
            _ => keep.push(o),
        }
    }
    *opts = keep;
    Ok(exit)
}

/// A cpuio job's ringlab io words: no byte bound (fio counts none), and a
/// runtime it must have.
pub fn adjust(words: &mut Translated, place: &str, name: &str, parse_only: bool) -> Result<()> {
    let mut i = 0;
    while i < words.args.len() {
        if words.args[i] == "--io-size" {
            words.args.drain(i..(i + 2).min(words.args.len()));
        } else {
            i += 1;
        }
    }
    let bounded = words
        .args
        .iter()
        .any(|a| a == "--runtime" || a == "--number-ios");
    if !bounded && !parse_only {
        return Err(usage_error(format!(
            "{place}: [{name}] ioengine=cpuio without runtime runs forever in fio 3.33 (it counts no bytes, so size never ends it): give runtime="
        )));
    }
    words
        .notes
        .retain(|n| !n.starts_with("without --time_based"));
    // fio's cpuio opens no file and has no disk (FIO_DISKLESSIO).
    words.target = None;
    Ok(())
}

/// fio's init line of a cpuio job, once per thread.
pub fn init_lines(name: &str, plan: &IoPlan) -> String {
    let Some(c) = plan.cpuio else {
        return String::new();
    };
    format!(
        "{name} ({}): ioengine=cpuio, cpuload={}, cpucycle={}\n",
        c.mode.name(),
        c.load,
        c.cycle_us
    )
    .repeat(plan.numjobs as usize)
}

/// fio's figures of a cpuio job's entry: its burns are I/Os of 0 bytes, so
/// fio shows no bytes, bandwidth, IOPS or runtime (the counts, latencies
/// and IOPS samples stay).
pub fn fio_figures(entry: &mut Value) {
    for d in ["read", "write", "trim"] {
        let Some(s) = entry[d].as_object_mut() else {
            continue;
        };
        for k in [
            "io_bytes",
            "io_kbytes",
            "bw_bytes",
            "bw",
            "runtime",
            "bw_min",
            "bw_max",
            "bw_samples",
        ] {
            if s.contains_key(k) {
                s.insert(k.to_string(), json!(0));
            }
        }
        for k in ["iops", "bw_agg", "bw_mean", "bw_dev"] {
            if s.contains_key(k) {
                s.insert(k.to_string(), json!(0.0));
            }
        }
    }
    entry["ringlab"]["cpuio"] = json!(
        "fio's cpuio engine: each burn is counted as one read of 0 bytes, as fio 3.33 counts it"
    );
}
