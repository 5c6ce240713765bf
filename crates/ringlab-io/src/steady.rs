//! fio's steady-state detection (steadystate.c, fio 3.33): `ss=` with
//! `ss_dur` and `ss_ramp`.
//!
//! Once a second fio's helper thread takes each job's IOPS and bandwidth
//! over the last second (with group_reporting, the sum of the group's
//! jobs); after `ss_ramp` (plus one second) it keeps the last `ss_dur`
//! samples and compares either their largest deviation from their mean
//! (`iops`, `bw`) or their least-squares slope (`iops_slope`,
//! `bw_slope`) with the limit, as a value or a percentage of the mean.
//! When the criterion holds, the job (or group) ends.
//!
//! [`SteadyState`] is that arithmetic, fio's integer rounding included.
//! The sampling runs outside the job threads: [`Live`] hands the jobs'
//! published counters ([`crate::progress::JobProgress`]) to the sampler.

use crate::progress::JobProgress;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// fio's steady-state criterion (`ss=iops:10%`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Criterion {
    /// IOPS (true) or bandwidth in bytes per second.
    pub iops: bool,
    /// Least-squares slope (true) or largest deviation from the mean.
    pub slope: bool,
    /// The limit is a percentage of the mean.
    pub pct: bool,
    pub limit: f64,
}

impl Criterion {
    /// fio's `steadystate` values: `iops`, `iops_slope`, `bw`, `bw_slope`,
    /// each with `:LIMIT` or `:LIMIT%` (a bandwidth limit may have a size
    /// suffix, read by `size`).
    pub fn parse(v: &str, size: impl Fn(&str) -> Option<u64>) -> Result<Criterion, String> {
        let (kind, limit) = v.split_once(':').ok_or_else(|| {
            "fio: steadystate threshold must be specified in addition to criterion (iops:10%)"
                .to_string()
        })?;
        let (iops, slope) = match kind.trim() {
            "iops" => (true, false),
            "iops_slope" => (true, true),
            "bw" => (false, false),
            "bw_slope" => (false, true),
            other => {
                return Err(format!(
                    "'{other}': fio's criteria are iops, iops_slope, bw, bw_slope"
                ))
            }
        };
        let limit = limit.trim();
        let (pct, limit) = match limit.split_once('%') {
            Some((n, _)) => {
                let n: f64 = n
                    .trim()
                    .parse()
                    .map_err(|_| format!("'{limit}': not a percentage"))?;
                (true, n)
            }
            None if iops => (
                false,
                limit
                    .parse()
                    .map_err(|_| format!("'{limit}': not a number of IOPS"))?,
            ),
            None => (
                false,
                size(limit).ok_or_else(|| format!("'{limit}': not a bandwidth"))? as f64,
            ),
        };
        Ok(Criterion {
            iops,
            slope,
            pct,
            limit,
        })
    }

    /// As fio's json writes it (`ss`): `iops:10.000000%`.
    pub fn shown(&self) -> String {
        format!(
            "{}{}:{:.6}{}",
            if self.iops { "iops" } else { "bw" },
            if self.slope { "_slope" } else { "" },
            self.limit as f32,
            if self.pct { "%" } else { "" }
        )
    }
}

/// One job's (or group's) rolling window of samples and the criterion's
/// state, as fio's `struct steadystate_data`.
#[derive(Debug, Clone)]
pub struct SteadyState {
    pub crit: Criterion,
    /// ss_dur in seconds: the window's length in samples.
    pub dur: usize,
    head: usize,
    tail: usize,
    pub iops_data: Vec<u64>,
    pub bw_data: Vec<u64>,
    pub buffer_full: bool,
    pub attained: bool,
    pub slope: f64,
    pub deviation: f64,
    pub criterion: f64,
    sum_y: u64,
    sum_x: u64,
    sum_x_sq: u64,
    sum_xy: u64,
    oldest_y: u64,
}

impl SteadyState {
    pub fn new(crit: Criterion, dur: usize) -> SteadyState {
        let d = dur as u64;
        SteadyState {
            crit,
            dur,
            head: 0,
            tail: 0,
            iops_data: vec![0; dur],
            bw_data: vec![0; dur],
            buffer_full: false,
            attained: false,
            slope: 0.0,
            deviation: 0.0,
            criterion: 0.0,
            sum_y: 0,
            sum_x: d * d.saturating_sub(1) / 2,
            sum_x_sq: d.saturating_sub(1) * d * (2 * d).saturating_sub(1) / 6,
            sum_xy: 0,
            oldest_y: 0,
        }
    }

    fn y(&self, i: usize) -> u64 {
        if self.crit.iops {
            self.iops_data[i]
        } else {
            self.bw_data[i]
        }
    }

    /// One second's sample; true when the criterion holds (the window is
    /// full and within the limit), which marks it attained.
    pub fn push(&mut self, iops: u64, bw: u64) -> bool {
        if self.dur == 0 {
            return false;
        }
        self.iops_data[self.tail] = iops;
        self.bw_data[self.tail] = bw;
        let hit = if self.crit.slope {
            self.slope_check(if self.crit.iops { iops } else { bw })
        } else {
            self.deviation_check()
        };
        if hit {
            self.attained = true;
            return true;
        }
        self.tail = (self.tail + 1) % self.dur;
        if self.tail <= self.head {
            self.head = (self.head + 1) % self.dur;
        }
        false
    }

    fn window_ready(&self) -> bool {
        self.buffer_full || self.tail.wrapping_sub(self.head) == self.dur - 1
    }

    /// fio's steadystate_slope.
    fn slope_check(&mut self, new_val: u64) -> bool {
        if !self.window_ready() {
            return false;
        }
        let dur = self.dur as u64;
        if !self.buffer_full {
            self.sum_y = 0;
            for i in 0..self.dur {
                self.sum_y = self.sum_y.wrapping_add(self.y(i));
                let j = (self.head + i) % self.dur;
                self.sum_xy = self.sum_xy.wrapping_add((i as u64).wrapping_mul(self.y(j)));
            }
            self.buffer_full = true;
        } else {
            self.sum_y = self.sum_y.wrapping_sub(self.oldest_y).wrapping_add(new_val);
            self.sum_xy = self
                .sum_xy
                .wrapping_sub(self.sum_y)
                .wrapping_add(dur.wrapping_mul(new_val));
        }
        self.oldest_y = self.y(self.head);
        let n = self.dur as f64;
        self.slope = (self.sum_xy as f64 - self.sum_x as f64 * self.sum_y as f64 / n)
            / (self.sum_x_sq as f64 - self.sum_x as f64 * self.sum_x as f64 / n);
        self.criterion = if self.crit.pct {
            // fio divides the sum by the count as integers first.
            100.0 * self.slope / (self.sum_y / dur) as f64
        } else {
            self.slope
        };
        self.criterion.abs() < self.crit.limit
    }

    /// fio's steadystate_deviation.
    fn deviation_check(&mut self) -> bool {
        if !self.window_ready() {
            return false;
        }
        if !self.buffer_full {
            self.sum_y = (0..self.dur).fold(0u64, |s, i| s.wrapping_add(self.y(i)));
            self.buffer_full = true;
        } else {
            self.sum_y = self
                .sum_y
                .wrapping_sub(self.oldest_y)
                .wrapping_add(self.y(self.tail));
        }
        self.oldest_y = self.y(self.head);
        let mean = self.sum_y as f64 / self.dur as f64;
        self.deviation = (0..self.dur)
            .map(|i| (self.y(i) as f64 - mean).abs())
            .fold(0.0, f64::max);
        self.criterion = if self.crit.pct {
            100.0 * self.deviation / mean
        } else {
            self.deviation
        };
        self.criterion < self.crit.limit
    }

    /// The samples oldest first, as fio's json lists them (iops, bw).
    pub fn in_order(&self) -> (Vec<u64>, Vec<u64>) {
        let start = if self.attained || !self.buffer_full {
            self.head
        } else if self.head == 0 {
            self.dur - 1
        } else {
            self.head - 1
        };
        (0..self.dur)
            .map(|l| {
                let k = (start + l) % self.dur;
                (self.iops_data[k], self.bw_data[k])
            })
            .unzip()
    }

    /// fio's steadystate_iops_mean / steadystate_bw_mean: the window's
    /// integer means (over ss_dur slots, filled or not).
    pub fn means(&self) -> (u64, u64) {
        let d = self.dur.max(1) as u64;
        (
            self.iops_data.iter().sum::<u64>() / d,
            self.bw_data.iter().sum::<u64>() / d,
        )
    }
}

/// The counters of a run's job threads, published by the run for a
/// sampler outside it (`ringlab fio`'s steady-state monitor).
#[derive(Debug, Default)]
pub struct Live {
    jobs: Mutex<Option<Vec<Arc<JobProgress>>>>,
    /// When the run published its counters (its jobs start right after).
    started: Mutex<Option<std::time::Instant>>,
    ended: std::sync::atomic::AtomicBool,
}

impl Live {
    /// The run's job counters (called by the run once its threads exist).
    pub fn publish(&self, jobs: &[Arc<JobProgress>]) {
        *self.jobs.lock().unwrap_or_else(|p| p.into_inner()) = Some(jobs.to_vec());
        *self.started.lock().unwrap_or_else(|p| p.into_inner()) = Some(std::time::Instant::now());
    }

    /// When the run's jobs started (fio's td->epoch), once published.
    pub fn started(&self) -> Option<std::time::Instant> {
        *self.started.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The run's job threads have ended (fio skips exited jobs).
    pub fn end(&self) {
        self.ended.store(true, Ordering::SeqCst);
    }

    /// Completed I/Os and bytes of every job thread so far; `None` before
    /// the run published its counters and after it ended.
    pub fn totals(&self) -> Option<(u64, u64)> {
        if self.ended.load(Ordering::SeqCst) {
            return None;
        }
        let g = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        let jobs = g.as_ref()?;
        Some(jobs.iter().fold((0, 0), |(o, b), p| {
            (
                o + p.ops.load(Ordering::Relaxed),
                b + p.bytes.load(Ordering::Relaxed),
            )
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crit(v: &str) -> Criterion {
        Criterion::parse(v, |s| s.parse().ok()).unwrap()
    }

    #[test]
    fn parses_fio_criteria() {
        let c = crit("iops:10%");
        assert!(c.iops && !c.slope && c.pct && c.limit == 10.0);
        assert_eq!(c.shown(), "iops:10.000000%");
        let c = crit("bw_slope:1%");
        assert!(!c.iops && c.slope && c.pct);
        let c = crit("iops_slope:50");
        assert!(c.slope && !c.pct && c.limit == 50.0);
        assert!(Criterion::parse("iops", |_| None).is_err());
        assert!(Criterion::parse("lat:1", |_| None).is_err());
    }

    /// The samples fio printed for a run that attained iops:10% with
    /// ss_dur=3: deviation 21243.67, criterion 1.040819%.
    #[test]
    fn deviation_matches_fios_numbers() {
        let mut s = SteadyState::new(crit("iops:10%"), 3);
        assert!(!s.push(2062296, 270309289335));
        assert!(!s.push(2028762, 265913992840));
        assert!(s.push(2032099, 266351280128));
        assert!((s.deviation - 21243.666667).abs() < 1e-3, "{}", s.deviation);
        assert!((s.criterion - 1.040819).abs() < 1e-6, "{}", s.criterion);
        assert_eq!(s.in_order().0, vec![2062296, 2028762, 2032099]);
        assert_eq!(s.means(), (2041052, 267524854101));
    }

    #[test]
    fn a_rising_rate_is_not_steady_a_flat_one_is() {
        let mut s = SteadyState::new(crit("iops_slope:1%"), 4);
        for k in 1..20u64 {
            assert!(!s.push(1000 * k, 0), "sample {k}");
        }
        let mut s = SteadyState::new(crit("iops_slope:1%"), 4);
        let got: Vec<bool> = [500u64, 1000, 1000, 1000, 1000]
            .iter()
            .map(|v| s.push(*v, 0))
            .collect();
        // The first full window holds the ramp-up sample (slope 17% of
        // the mean); the next one is flat.
        assert_eq!(got, vec![false, false, false, false, true]);
        assert!(s.attained);
    }

    #[test]
    fn rolling_window_keeps_the_last_samples() {
        let mut s = SteadyState::new(crit("bw:1"), 2);
        assert!(!s.push(1, 100));
        assert!(!s.push(1, 300));
        assert!(!s.push(1, 600));
        assert_eq!(s.in_order().1, vec![300, 600]);
        assert!(s.push(1, 600));
        assert_eq!(s.in_order().1, vec![600, 600]);
    }
}
