//! fio's options that end a job by what it measures, read by the fio
//! personality: `ss=` (alias of `steadystate`) with `ss_dur` and
//! `ss_ramp` (steadystate.c), and the `latency_target` queue-depth search
//! with `latency_window`, `latency_percentile` and `latency_run`
//! (io_u.c).
//!
//! The steady-state samples are taken once a second by [`monitor`], a
//! thread beside the jobs that reads their published counters (the job
//! threads only count); the depth search runs in each job thread
//! ([`ringlab_io::lat_target`]). Both are off unless a job names them.

use anyhow::Result;
use ringlab_core::usage_error;
use ringlab_io::fio::options::Written;
use ringlab_io::lat_target::LatTargetPlan;
use ringlab_io::steady::{Criterion, Live, SteadyState};
use ringlab_io::IoPlan;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// fio's default criterion (`steadystate`'s .def).
const DEFAULT_SS: &str = "iops_slope:0.01%";

/// One job's steady-state and latency-target options.
#[derive(Clone, Debug, Default)]
pub struct Words {
    /// The criterion, ss_dur (whole seconds, as fio divides it) and
    /// ss_ramp (µs); `None` without ss_dur (fio: no detection).
    pub ss: Option<(Criterion, u64, u64)>,
    /// latency_target (ns), latency_window (µs), latency_percentile,
    /// latency_run.
    pub lat: Option<(u64, u64, f64, bool)>,
    pub notes: Vec<String>,
}

fn canonical(k: &str) -> String {
    let k = k.replace('-', "_");
    match k.as_str() {
        "ss" => "steadystate".to_string(),
        "ss_dur" => "steadystate_duration".to_string(),
        "ss_ramp" => "steadystate_ramp_time".to_string(),
        _ => k,
    }
}

/// fio's time values (FIO_OPT_STR_VAL_TIME): a number with an optional
/// unit (us, usec, ms, msec, s, m, h, d); without one, seconds if
/// `seconds`, else microseconds. In microseconds.
pub fn time_us(v: &str, seconds: bool) -> Option<u64> {
    let v = v.trim();
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let n: u64 = v[..digits].parse().ok()?;
    let unit = v[digits..].trim().to_ascii_lowercase();
    let mult = match unit.as_str() {
        "" => {
            if seconds {
                1_000_000
            } else {
                1
            }
        }
        u if u.starts_with("us") => 1,
        u if u.starts_with("ms") => 1_000,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// Takes the options out of `opts` (fio's later assignment already won).
pub fn take(opts: &mut Vec<Written>) -> Result<Words> {
    let mut w = Words::default();
    let mut ss: Option<(Written, String)> = None;
    let mut dur: Option<u64> = None;
    let mut ramp_us = 0u64;
    let mut target: Option<u64> = None;
    let mut window_us = 0u64;
    let mut pct = 100.0f64;
    let mut run = false;
    let mut keep = Vec::new();
    for o in opts.drain(..) {
        let v = o.value.clone().unwrap_or_default();
        let bad = |what: &str| usage_error(format!("{}={v}: {what}", o.origin.name(&o.key)));
        match canonical(&o.key).as_str() {
            "steadystate" => ss = Some((o.clone(), v.trim().to_string())),
            "steadystate_duration" => {
                // fio keeps whole seconds (o->ss_dur /= 1000000).
                dur =
                    Some(time_us(&v, true).ok_or_else(|| bad("not a time (30s, 1m)"))? / 1_000_000)
            }
            "steadystate_ramp_time" => {
                ramp_us = time_us(&v, true).ok_or_else(|| bad("not a time (10s)"))?
            }
            "latency_target" => {
                target = Some(
                    time_us(&v, false)
                        .ok_or_else(|| bad("not a time (in µs without a unit, as fio)"))?,
                )
            }
            "latency_window" => {
                window_us = time_us(&v, false)
                    .ok_or_else(|| bad("not a time (in µs without a unit, as fio)"))?
            }
            "latency_percentile" => {
                pct = v
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|p| (0.0..=100.0).contains(p))
                    .ok_or_else(|| bad("fio takes a percentage from 0 to 100"))?
            }
            "latency_run" => run = !matches!(v.trim(), "0" | "false" | "off" | "no"),
            _ => keep.push(o),
        }
    }
    *opts = keep;
    match (dur, &ss) {
        (Some(d), _) if d > 0 => {
            let (text, place) = match &ss {
                Some((o, v)) => (v.clone(), o.origin.name(&o.key)),
                None => (DEFAULT_SS.to_string(), "ss_dur".to_string()),
            };
            let crit = Criterion::parse(&text, |s| ringlab_io::fio::value::size(s, 1024).ok())
                .map_err(|e| usage_error(format!("{place}={text}: {e}")))?;
            w.ss = Some((crit, d, ramp_us));
        }
        (_, Some((o, v))) => {
            // fio's check runs only with ss_dur (td_steadystate_init).
            Criterion::parse(v, |s| ringlab_io::fio::value::size(s, 1024).ok())
                .map_err(|e| usage_error(format!("{}={v}: {e}", o.origin.name(&o.key))))?;
            w.notes.push(format!(
                "{}: without ss_dur (or with ss_dur under a second) fio checks no steady state, and neither does ringlab",
                o.origin.name(&o.key)
            ));
        }
        _ => {}
    }
    if let Some(t) = target.filter(|t| *t > 0) {
        // fio compares nanoseconds with latency_target × 1000.
        w.lat = Some((t * 1000, window_us, pct, run));
    }
    Ok(w)
}

/// Sets the options on the job's plan.
pub fn apply(w: &Words, plan: &mut IoPlan, group_reporting: bool, place: &str) -> Result<()> {
    if w.ss.is_some() {
        if !group_reporting && plan.numjobs > 1 {
            return Err(usage_error(format!(
                "{place}: ss= with numjobs={} and no group_reporting: fio ends each thread at its own steady state, and ringlab ends a job's threads together; add group_reporting (the group's sum is judged, as fio does) or run one thread per job",
                plan.numjobs
            )));
        }
        plan.regulation.live = Some(Arc::new(Live::default()));
    }
    if let Some((target_ns, window_us, pct, run)) = w.lat {
        plan.regulation.lat_target = Some(Arc::new(LatTargetPlan::new(
            target_ns,
            window_us,
            pct,
            run,
            plan.numjobs,
        )));
    }
    Ok(())
}

/// A job of a batch, for the monitor.
pub struct Member {
    pub live: Arc<Live>,
    pub stop: Arc<AtomicBool>,
    pub group: u32,
    pub group_reporting: bool,
    pub ss: (Criterion, u64, u64),
}

/// One steady-state check (a job, or a reporting group's jobs together).
pub struct Unit {
    pub members: Vec<usize>,
    pub state: SteadyState,
    ramp_us: u64,
}

/// A job's steady-state options: criterion, ss_dur (s), ss_ramp (µs).
pub type SsOptions = (Criterion, u64, u64);

/// The batch's checks: one per job, or one per group under
/// group_reporting. fio rejects a group whose jobs' options differ
/// (td_steadystate_init compares every job of the group, with ss or
/// without): `all` holds each member's name, group and options.
pub fn units(
    members: &[Option<Member>],
    all: &[(String, u32, Option<SsOptions>)],
) -> Result<Vec<Unit>> {
    for (name, g, ss) in all {
        if all.iter().any(|(_, g2, ss2)| g2 == g && ss2 != ss) {
            return Err(usage_error(format!(
                "[{name}]: job rejected: steadystate options must be consistent within reporting groups (fio's rule: every job of group {g} needs the same ss, ss_dur and ss_ramp)"
            )));
        }
    }
    let mut out: Vec<Unit> = Vec::new();
    let mut by_group: Vec<(u32, usize)> = Vec::new();
    for (k, m) in members.iter().enumerate() {
        let Some(m) = m else { continue };
        if m.group_reporting {
            if let Some((_, u)) = by_group.iter().find(|(g, _)| *g == m.group) {
                out[*u].members.push(k);
                continue;
            }
            by_group.push((m.group, out.len()));
        }
        out.push(Unit {
            members: vec![k],
            state: SteadyState::new(m.ss.0, m.ss.1 as usize),
            ramp_us: m.ss.2,
        });
    }
    Ok(out)
}

/// What a member reports at the end.
#[derive(Clone, Debug)]
pub struct Report {
    pub state: SteadyState,
}

/// fio's helper-thread check, once a second until `done`: each member's
/// I/Os and bytes over the last second (after its ss_ramp plus one
/// second), summed per unit, pushed into the unit's window; a unit whose
/// criterion holds has its jobs stopped. `clock_zero`: the start of the
/// run (fio's clock), from which a job without ss_ramp takes its first
/// sample, as fio's does. Returns each member's report (its unit's).
pub fn monitor(
    members: &[Option<Member>],
    mut units: Vec<Unit>,
    done: &AtomicBool,
    clock_zero: Instant,
    attained_by: &Mutex<Vec<bool>>,
) -> Vec<Option<Report>> {
    struct Track {
        epoch: Option<Instant>,
        prev_time: Instant,
        prev: (u64, u64),
        ramp_over: bool,
    }
    let mut track: Vec<Track> = members
        .iter()
        .map(|_| Track {
            epoch: None,
            prev_time: clock_zero,
            prev: (0, 0),
            ramp_over: false,
        })
        .collect();
    let tick = Duration::from_millis(1000);
    // The first tick a second after the first job started (its counters
    // published), so a job's ramp ends on a tick, not just after one.
    let first = loop {
        if done.load(Ordering::SeqCst) {
            break None;
        }
        let t = members
            .iter()
            .flatten()
            .filter_map(|m| m.live.started())
            .min();
        if t.is_some() {
            break t;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut next = first.unwrap_or_else(Instant::now) + tick + Duration::from_millis(10);
    'outer: loop {
        // Sleep to the next tick in short steps, so the end is seen soon.
        loop {
            if done.load(Ordering::SeqCst) {
                break 'outer;
            }
            let now = Instant::now();
            if now >= next {
                break;
            }
            std::thread::sleep((next - now).min(Duration::from_millis(20)));
        }
        next += tick;
        for u in units.iter_mut().filter(|u| !u.state.attained) {
            let (mut iops, mut bw, mut over) = (0u64, 0u64, 0u32);
            for &k in &u.members {
                let Some(m) = &members[k] else { continue };
                let Some((ios, bytes)) = m.live.totals() else {
                    continue;
                };
                let t = &mut track[k];
                let now = Instant::now();
                let epoch = *t.epoch.get_or_insert(m.live.started().unwrap_or(now));
                // fio: over from the start without ss_ramp, else from a
                // second after it.
                t.ramp_over |= u.ramp_us == 0
                    || now.duration_since(epoch).as_micros() as u64 >= u.ramp_us + 1_000_000;
                let ms = now.duration_since(t.prev_time).as_millis().max(1) as u64;
                t.prev_time = now;
                if t.ramp_over {
                    bw += 1000 * bytes.saturating_sub(t.prev.1) / ms;
                    iops += 1000 * ios.saturating_sub(t.prev.0) / ms;
                    over += 1;
                }
                t.prev = (ios, bytes);
            }
            if over == 0 {
                continue;
            }
            if u.state.push(iops, bw) {
                let mut by = attained_by.lock().unwrap_or_else(|p| p.into_inner());
                for &k in &u.members {
                    if let Some(m) = &members[k] {
                        if let Some(b) = by.get_mut(k) {
                            *b = true;
                        }
                        m.stop.store(true, Ordering::SeqCst);
                    }
                }
            }
        }
    }
    let mut out: Vec<Option<Report>> = members.iter().map(|_| None).collect();
    for u in units {
        for &k in &u.members {
            out[k] = Some(Report {
                state: u.state.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringlab_io::fio::options::Origin;

    fn w(k: &str, v: &str) -> Written {
        Written {
            key: k.into(),
            value: Some(v.into()),
            origin: Origin::Cli,
        }
    }

    #[test]
    fn fio_times_and_options() {
        assert_eq!(time_us("30s", true), Some(30_000_000));
        assert_eq!(time_us("30", true), Some(30_000_000));
        assert_eq!(time_us("500000", false), Some(500_000));
        assert_eq!(time_us("5ms", false), Some(5_000));
        assert_eq!(time_us("1m", true), Some(60_000_000));
        assert_eq!(time_us("x", true), None);
        let mut o = vec![
            w("ss", "bw_slope:1%"),
            w("ss_dur", "10s"),
            w("ss_ramp", "5s"),
            w("latency_target", "500000"),
            w("latency_window", "5000000"),
            w("latency_percentile", "99.9"),
            w("bs", "4k"),
        ];
        let t = take(&mut o).unwrap();
        assert_eq!(o.len(), 1);
        let (c, d, r) = t.ss.unwrap();
        assert!(c.slope && !c.iops && c.pct);
        assert_eq!((d, r), (10, 5_000_000));
        assert_eq!(t.lat, Some((500_000_000, 5_000_000, 99.9, false)));
        let mut o = vec![w("ss", "iops:10%")];
        let t = take(&mut o).unwrap();
        assert!(t.ss.is_none() && !t.notes.is_empty());
        let mut o = vec![w("ss", "lat:10%"), w("ss_dur", "1")];
        assert!(take(&mut o).is_err());
        let mut o = vec![w("ss_dur", "2")];
        let t = take(&mut o).unwrap();
        assert_eq!(t.ss.unwrap().0.shown(), "iops_slope:0.010000%");
    }
}
