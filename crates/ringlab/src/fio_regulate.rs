//! fio's options that regulate when a job issues, read for `ringlab fio`:
//! `flow`, `flow_id`, `flow_sleep` (flow.c), `rate_process`,
//! `rate_ignore_thinktime`, `rate_cycle` and `io_submit_mode`
//! (backend.c, rate-submit.c). Taken out of a job's options before the
//! shared translation and set on its plan after it
//! ([`ringlab_io::regulate`] does the work in the job loop).

use anyhow::Result;
use ringlab_core::usage_error;
use ringlab_io::fio::options::Written;
use ringlab_io::regulate::{Flow, FlowMember, PoissonSeeds};
use ringlab_io::IoPlan;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// fio's FLOW_MAX_WEIGHT.
const FLOW_MAX_WEIGHT: u64 = 1000;

/// One job's regulating options, as written.
#[derive(Default)]
pub struct RegWords {
    flow: Option<(u64, u64)>,
    flow_id: u64,
    flow_sleep_us: u64,
    poisson: Option<Written>,
    ignore_think: bool,
    offload: bool,
    rand_seed: Option<u64>,
    randrepeat: bool,
    generator: ringlab_io::workload::FioGenerator,
    verify: bool,
    split_written: [Vec<u64>; 2],
    bsrange_high: [Option<(u64, u64)>; 2],
    pub notes: Vec<String>,
}

fn key(o: &Written) -> String {
    o.key.replace('-', "_")
}

fn int(o: &Written, max: u64) -> Result<u64> {
    let v = o.value.as_deref().unwrap_or("").trim();
    v.parse::<u64>().ok().filter(|n| *n <= max).ok_or_else(|| {
        usage_error(format!(
            "{}={v}: a whole number from 0 to {max}",
            o.origin.name(&o.key)
        ))
    })
}

fn boolean(o: &Written) -> bool {
    !matches!(
        o.value.as_deref().map(str::trim),
        Some("0") | Some("false") | Some("off")
    )
}

/// Takes fio's regulating options out of `opts` (fio's later assignment
/// already won). `randseed`/`randrepeat` are read and left in place.
pub fn take(opts: &mut Vec<Written>) -> Result<RegWords> {
    let mut w = RegWords {
        randrepeat: true,
        ..RegWords::default()
    };
    let mut keep = Vec::new();
    for o in opts.drain(..) {
        match key(&o).as_str() {
            "flow" => {
                let weight = int(&o, FLOW_MAX_WEIGHT)?;
                w.flow = (weight > 0).then_some((weight, 0));
            }
            "flow_id" => w.flow_id = int(&o, u32::MAX as u64)?,
            "flow_sleep" => w.flow_sleep_us = int(&o, u32::MAX as u64)?,
            "flow_watermark" => w.notes.push(format!(
                "{}: deprecated in fio, which ignores it (so does ringlab)",
                o.origin.name(&o.key)
            )),
            "rate_process" => match o.value.as_deref().map(str::trim) {
                Some("linear") => w.poisson = None,
                Some("poisson") => w.poisson = Some(o.clone()),
                v => {
                    return Err(usage_error(format!(
                        "{}={}: fio's rate processes are linear and poisson",
                        o.origin.name(&o.key),
                        v.unwrap_or("")
                    )))
                }
            },
            "rate_ignore_thinktime" => w.ignore_think = boolean(&o),
            // fio averages rate_min over rate_cycle ms; ringlab does not
            // check rate_min (said where it is given), so this changes
            // nothing.
            "rate_cycle" => {
                int(&o, u32::MAX as u64)?;
            }
            "io_submit_mode" => match o.value.as_deref().map(str::trim) {
                Some("inline") => w.offload = false,
                Some("offload") => w.offload = true,
                v => {
                    return Err(usage_error(format!(
                        "{}={}: fio's submit modes are inline and offload",
                        o.origin.name(&o.key),
                        v.unwrap_or("")
                    )))
                }
            },
            k => {
                if k == "randseed" {
                    let v = o.value.as_deref().unwrap_or("").trim();
                    w.rand_seed = if let Some(h) = v.strip_prefix("0x") {
                        u64::from_str_radix(h, 16).ok()
                    } else {
                        v.parse().ok()
                    };
                } else if k == "randrepeat" {
                    w.randrepeat = boolean(&o);
                } else if k == "random_generator" {
                    use ringlab_io::workload::FioGenerator as G;
                    w.generator = match o.value.as_deref().map(str::trim) {
                        Some("tausworthe") => G::Tausworthe,
                        Some("tausworthe64") => G::Tausworthe64,
                        Some("lfsr") => G::Lfsr,
                        _ => G::Default,
                    };
                } else if k == "bsrange" || k == "blocksize_range" {
                    w.bsrange_high = bsrange_ends(o.value.as_deref().unwrap_or(""));
                } else if k == "bssplit" {
                    w.split_written = split_written(o.value.as_deref().unwrap_or(""));
                } else if k == "verify" {
                    w.verify =
                        !matches!(o.value.as_deref().map(str::trim), Some("none") | Some("0"));
                }
                keep.push(o);
            }
        }
    }
    *opts = keep;
    Ok(w)
}

/// The flows of this run, by fio's flow_id (fio keeps one list per
/// process, too).
fn flow(id: u64) -> Arc<Flow> {
    static FLOWS: OnceLock<Mutex<HashMap<u64, Arc<Flow>>>> = OnceLock::new();
    let mut m = FLOWS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    m.entry(id).or_default().clone()
}

/// bsrange's (low, high) per direction as written (`R[,W]`; one part is
/// both).
fn bsrange_ends(v: &str) -> [Option<(u64, u64)>; 2] {
    let part = |p: &str| -> Option<(u64, u64)> {
        let (lo, hi) = p.split_once('-')?;
        let size = |t: &str| ringlab_stats::units::parse_size(t.trim()).ok();
        Some((size(lo)?, size(hi)?))
    };
    let mut parts = v.split(',');
    let read = part(parts.next().unwrap_or(""));
    let write = match parts.next() {
        Some(w) if !w.trim().is_empty() => part(w),
        _ => read,
    };
    [read, write]
}

/// fio draws a bsrange length as `min + max * r` rounded down to `min`
/// and capped at `max`: a high end that is not a multiple of the low end
/// is issued itself (4k-10k: 4k, 8k and 10k). `ringlab io` rounds it down
/// to a multiple; under `ringlab fio` the job keeps fio's high end (its
/// buffers sized for it), which fio's streams draw (workload/fio_rand.rs).
/// A sequential job would then move on from offsets that are not
/// multiples of the low end, which ringlab's blocks cannot hold: it keeps
/// the rounded high end, and says so.
fn keep_bsrange_high(w: &RegWords, plan: &mut IoPlan, notes: &mut Vec<String>) {
    use ringlab_io::workload::BlockSizes;
    for (d, ends) in w.bsrange_high.iter().enumerate() {
        let Some((lo, hi)) = *ends else { continue };
        if let BlockSizes::Range { lo: l, hi: h } = &mut plan.block_sizes[d] {
            if *l != lo || hi <= *h || hi % lo == 0 {
                continue;
            }
            if plan.rw.is_random() {
                *h = hi;
                plan.bs_max = plan.bs_max.max(hi);
            } else if d == 0 || !notes.iter().any(|n| n.starts_with("bsrange")) {
                notes.push(format!(
                    "bsrange: its high end {hi} is not a multiple of its low end {lo}; fio issues {hi} itself on a sequential job (from offsets that are not multiples of {lo}), ringlab rounds it down to {}: the mean block size differs from fio's",
                    *h
                ));
            }
        }
    }
}

/// bssplit's sizes per direction in the order written (`R[,W]`; one part
/// is both); a size fio's units do not give is left out.
fn split_written(v: &str) -> [Vec<u64>; 2] {
    let part = |p: &str| -> Vec<u64> {
        p.split(':')
            .filter_map(|e| {
                let size = e.split('/').next().unwrap_or("").trim();
                ringlab_stats::units::parse_size(size).ok()
            })
            .collect()
    };
    let mut parts = v.split(',');
    let read = part(parts.next().unwrap_or(""));
    let write = match parts.next() {
        Some(w) if !w.trim().is_empty() => part(w),
        _ => read.clone(),
    };
    [read, write]
}

/// fio's file name of each numjobs clone of the job `name` (add_file:
/// `directory/` before `filename`, or fio's `NAME.CLONE.0`), which seeds
/// its zipf, pareto and normal distributions; left unknown for several
/// files, directories or a filename_format.
pub fn file_names(plan: &mut IoPlan, opts: &[Written], name: &str) {
    let get = |k: &str| {
        opts.iter()
            .rev()
            .find(|o| key(o) == k)
            .and_then(|o| o.value.clone())
    };
    let Some(rand) = plan.fio_rand.as_mut() else {
        return;
    };
    let nrfiles = get("nrfiles").map_or(1, |v| v.trim().parse().unwrap_or(0));
    if get("filename_format").is_some() || nrfiles != 1 {
        return;
    }
    let dir = match get("directory") {
        Some(d) if d.contains(':') => return,
        Some(d) => format!("{d}/"),
        None => String::new(),
    };
    rand.file_names = match get("filename") {
        Some(f) if f.replace("\\:", "").contains(':') => return,
        Some(f) => vec![format!("{dir}{}", f.replace("\\:", ":")); plan.numjobs as usize],
        None => (0..plan.numjobs)
            .map(|i| format!("{dir}{name}.{i}.0"))
            .collect(),
    };
}

/// A seed from the clock (fio's randrepeat=0 takes the system's).
fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0x89)
}

/// fio's thread numbers, in the order jobs are added (numjobs clones
/// count on).
static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);

/// Sets the regulating options on the job's plan; notes go to `notes`.
pub fn apply(w: &RegWords, plan: &mut IoPlan, notes: &mut Vec<String>) -> Result<()> {
    let first_thread = NEXT_THREAD.fetch_add(plan.numjobs as u64, Ordering::Relaxed);
    // fio's seeds: randseed (0x89), and under randrepeat without randseed
    // the offset stream's own seed and seeding at each loop; randrepeat=0
    // without randseed: seeds from the clock (fio: the system's).
    use ringlab_io::workload::OffsetSeed;
    let (rand_seed, offset_seed) = match (w.rand_seed, w.randrepeat) {
        (Some(s), _) => (s, OffsetSeed::FirstClone),
        (None, true) => (0x89, OffsetSeed::All),
        (None, false) => (clock_seed(), OffsetSeed::None),
    };
    plan.fio_rand = Some(ringlab_io::workload::FioRand {
        rand_seed,
        first_thread_number: first_thread,
        offset_seed,
        reseed_each_loop: offset_seed == OffsetSeed::All,
        generator: w.generator,
        verify: w.verify,
        split_written: w.split_written.clone(),
        file_names: Vec::new(),
        loop_ends_on_bytes: plan.engine.is_async()
            || (plan.engine == ringlab_io::engines::EngineKind::Null && plan.iodepth != 1),
    });
    let paced = plan.pace_ns.iter().any(Option::is_some);
    if let Some(o) = &w.poisson {
        if !paced {
            // fio draws nothing without a rate: the option changes nothing.
        } else if plan.pace_per_byte {
            return Err(usage_error(format!(
                "{}: rate_process=poisson with rate= and several block sizes: fio draws gaps from rate/min_bs, which ringlab does not match; give rate_iops=",
                o.origin.name(&o.key)
            )));
        } else {
            plan.regulation.poisson = Some(PoissonSeeds {
                rand_seed,
                first_thread_number: first_thread,
            });
        }
    }
    keep_bsrange_high(w, plan, notes);
    plan.regulation.rate_ignore_thinktime = w.ignore_think;
    if w.offload && paced && plan.iodepth > 1 && plan.engine.is_async() {
        notes.push(
            "io_submit_mode=offload: ringlab issues each paced I/O at its due time from the job's own thread; with I/O in flight it is issued at the next completion after that time (fio's submit threads do not wait), so an I/O leaves late only when the device is slower than the rate at this depth; its latency still starts at its due time, as fio's"
            .to_string(),
        );
    }
    if let Some((weight, _)) = w.flow {
        plan.regulation.flow = Some(FlowMember {
            flow: flow(w.flow_id),
            weight,
            sleep_us: w.flow_sleep_us,
        });
    }
    Ok(())
}
