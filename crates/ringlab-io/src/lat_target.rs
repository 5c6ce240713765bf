//! fio's `latency_target` search (io_u.c `lat_target_*`, fio 3.33): the
//! highest queue depth at which `latency_percentile` percent of the I/Os
//! complete within `latency_target`, judged over `latency_window`.
//!
//! Each job thread runs its own search, as each fio thread does: it starts
//! at depth 1 and doubles while a window succeeds, bisects between the last
//! depth that held and the first that failed, and (without `latency_run`)
//! ends the job after one more window at the depth found, measured alone
//! (fio resets the job's statistics for it). A failed window, or with
//! `latency_percentile=100` any single I/O over the target, lowers the
//! depth at once; at depth 1 such an I/O ends the job with fio's error.
//!
//! Only `ringlab fio` sets [`LatTargetPlan`]; without it the worker never
//! reaches this code (one branch on an `Option` per completion).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// The options, and where each job thread leaves the depth it settled on.
#[derive(Debug)]
pub struct LatTargetPlan {
    /// fio's latency_target in nanoseconds (fio stores microseconds ×
    /// 1000 and compares each I/O's total latency with it).
    pub target_ns: u64,
    /// fio's latency_window in microseconds.
    pub window_us: u64,
    /// fio's latency_percentile (100 unless given).
    pub percentile: f64,
    /// fio's latency_run: keep adjusting instead of ending at the depth
    /// found.
    pub run: bool,
    /// Per job thread: its depth when it ended (fio's latency_depth).
    pub depths: Vec<AtomicU32>,
}

impl LatTargetPlan {
    pub fn new(target_ns: u64, window_us: u64, percentile: f64, run: bool, numjobs: u32) -> Self {
        LatTargetPlan {
            target_ns,
            window_us,
            percentile,
            run,
            depths: (0..numjobs).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// The depth job `job` ended at (0: it did not run).
    pub fn depth_of(&self, job: usize) -> u32 {
        self.depths
            .get(job)
            .map_or(0, |d| d.load(Ordering::Relaxed))
    }
}

/// What the worker must do after a step of the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Go on at [`LatTarget::qd`].
    Go,
    /// Let the I/O in flight complete first (fio's io_u_quiesce), then
    /// call [`LatTarget::quiesced`].
    Quiesce,
    /// The search is over: the job ends (fio's td->done).
    Done,
    /// An I/O over the target at depth 1 with latency_percentile=100:
    /// fio's lat_fatal, the job fails with ETIMEDOUT.
    Fatal,
}

/// One job thread's search (fio's td->latency_* fields).
#[derive(Debug)]
pub struct LatTarget {
    pub plan: Arc<LatTargetPlan>,
    pub job: usize,
    /// The depth the job may have in flight now (fio's latency_qd).
    pub qd: u32,
    qd_high: u32,
    qd_low: u32,
    stable_count: u32,
    /// The I/O options' iodepth.
    iodepth: u32,
    /// Start of the current window (job clock, ns), and the completions
    /// counted before it.
    window_start_ns: u64,
    window_ios: u64,
    failed: u64,
    /// fio's latency_end_run: the depth is found, the last window runs.
    pub end_run: bool,
    /// Waiting for the I/O in flight to complete.
    pub quiescing: bool,
    /// After the quiesce: the statistics start again (fio's
    /// reset_all_stats before the final window).
    pub reset_due: bool,
}

impl LatTarget {
    /// fio's lat_target_init at the job's start.
    pub fn new(plan: Arc<LatTargetPlan>, job: usize, iodepth: u32) -> LatTarget {
        let t = LatTarget {
            plan,
            job,
            qd: 1,
            qd_high: iodepth,
            qd_low: 1,
            stable_count: 0,
            iodepth,
            window_start_ns: 0,
            window_ios: 0,
            failed: 0,
            end_run: false,
            quiescing: false,
            reset_due: false,
        };
        t.publish();
        t
    }

    fn publish(&self) {
        if let Some(d) = self.plan.depths.get(self.job) {
            d.store(self.qd, Ordering::Relaxed);
        }
    }

    /// fio's lat_new_cycle: a window starts now, after `ios` completions.
    pub fn new_cycle(&mut self, now_ns: u64, ios: u64) {
        self.window_start_ns = now_ns;
        self.window_ios = ios;
        self.failed = 0;
    }

    /// One completed I/O's total latency (fio's check in io_completed).
    pub fn sample(&mut self, lat_ns: u64) -> Step {
        if lat_ns <= self.plan.target_ns {
            return Step::Go;
        }
        if self.plan.percentile == 100.0 {
            return self.failed_window();
        }
        self.failed += 1;
        Step::Go
    }

    /// fio's __lat_target_failed: the depth halves towards the lowest
    /// that held; at depth 1 the target cannot be met.
    fn failed_window(&mut self) -> Step {
        if self.qd == 1 {
            return Step::Fatal;
        }
        self.qd_high = self.qd;
        if self.qd == self.qd_low {
            self.qd_low -= 1;
        }
        self.qd = (self.qd + self.qd_low) / 2;
        self.stable_count = 0;
        self.publish();
        self.quiescing = true;
        Step::Quiesce
    }

    /// fio's lat_target_success.
    fn success(&mut self) -> Step {
        let qd = self.qd;
        self.qd_low = self.qd;
        if self.qd + 1 == self.qd_high {
            self.stable_count += 1;
            if self.stable_count >= 3 {
                self.qd_high += 1;
                self.stable_count = 0;
            }
        }
        if self.qd_high != self.iodepth {
            self.qd = (self.qd + self.qd_high) / 2;
        } else {
            self.qd *= 2;
        }
        if self.qd > self.iodepth {
            self.qd = self.iodepth;
        }
        self.publish();
        if !self.plan.run && self.qd == qd {
            if self.end_run {
                return Step::Done;
            }
            self.end_run = true;
            self.reset_due = true;
            self.quiescing = true;
            return Step::Quiesce;
        }
        Step::Go
    }

    /// fio's lat_target_check, with the job clock and the completions so
    /// far: at the end of a window, up or down.
    pub fn check(&mut self, now_ns: u64, ios: u64) -> Step {
        if self.quiescing {
            return Step::Go;
        }
        let window_us = now_ns.saturating_sub(self.window_start_ns) / 1000;
        if window_us < self.plan.window_us {
            return Step::Go;
        }
        let n = ios - self.window_ios;
        // fio divides as doubles: no I/O in the window is NaN, a failure.
        let success = (n as f64 - self.failed as f64) / n as f64 * 100.0;
        let step = if success >= self.plan.percentile {
            self.success()
        } else {
            self.failed_window()
        };
        if step == Step::Go {
            self.new_cycle(now_ns, ios);
        }
        step
    }

    /// fio's lat_target_reset, from reset_all_stats (the end of the ramp):
    /// the search starts again at depth 1, unless it is in its final
    /// window (whose own reset this is).
    pub fn reset(&mut self, now_ns: u64, ios: u64) {
        if self.end_run {
            return;
        }
        self.qd = 1;
        self.qd_high = self.iodepth;
        self.qd_low = 1;
        self.new_cycle(now_ns, ios);
        self.publish();
    }

    /// The quiesce is over (nothing in flight): the next window starts.
    pub fn quiesced(&mut self, now_ns: u64, ios: u64) {
        self.quiescing = false;
        self.reset_due = false;
        self.new_cycle(now_ns, ios);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lt(iodepth: u32, pct: f64) -> LatTarget {
        LatTarget::new(
            Arc::new(LatTargetPlan::new(1_000, 1_000, pct, false, 1)),
            0,
            iodepth,
        )
    }

    /// Windows that all hold: 1, 2, 4, ... up to iodepth, then one final
    /// window at it, then done.
    #[test]
    fn doubles_to_the_iodepth_then_one_final_window() {
        let mut t = lt(16, 99.0);
        let mut seen = vec![t.qd];
        let mut now = 0;
        let mut ios = 0;
        loop {
            now += 2_000_000;
            ios += 100;
            match t.check(now, ios) {
                Step::Go => seen.push(t.qd),
                Step::Quiesce => {
                    assert!(t.reset_due && t.end_run);
                    t.quiesced(now, ios);
                }
                Step::Done => break,
                Step::Fatal => panic!("fatal"),
            }
        }
        assert_eq!(seen, vec![1, 2, 4, 8, 16]);
        assert_eq!(t.plan.depth_of(0), 16);
    }

    /// A window with too many slow I/Os bisects back down: 1, 2, 4 (fails
    /// at 4: 3), then 3 holds (stable below high) and is the answer.
    #[test]
    fn a_failed_window_bisects() {
        let mut t = lt(32, 90.0);
        let mut now = 0;
        let mut ios = 0;
        let mut path = vec![t.qd];
        for _ in 0..20 {
            now += 2_000_000;
            // Depth 4 and above: half the I/Os are slow.
            if t.qd >= 4 {
                for _ in 0..50 {
                    t.sample(5_000);
                }
            }
            ios += 100;
            match t.check(now, ios) {
                Step::Go => path.push(t.qd),
                Step::Quiesce => {
                    path.push(t.qd);
                    t.quiesced(now, ios)
                }
                Step::Done => break,
                Step::Fatal => panic!("fatal"),
            }
        }
        assert_eq!(&path[..4], &[1, 2, 4, 3]);
        assert_eq!(t.qd, 3);
    }

    #[test]
    fn percentile_100_fails_on_one_io_and_is_fatal_at_depth_1() {
        let mut t = lt(8, 100.0);
        assert_eq!(t.sample(999), Step::Go);
        assert_eq!(t.sample(1_001), Step::Fatal);
        let mut t = lt(8, 100.0);
        t.qd = 4;
        assert_eq!(t.sample(1_001), Step::Quiesce);
        assert_eq!(t.qd, 2);
    }

    #[test]
    fn the_end_of_the_ramp_restarts_the_search_but_not_the_final_window() {
        let mut t = lt(8, 99.0);
        assert_eq!(t.check(2_000_000, 10), Step::Go);
        assert_eq!(t.qd, 2);
        t.reset(3_000_000, 20);
        assert_eq!(t.qd, 1);
        // Not before a whole window from the reset.
        assert_eq!(t.check(3_500_000, 30), Step::Go);
        assert_eq!(t.qd, 1);
        t.end_run = true;
        t.qd = 4;
        t.reset(9_000_000, 90);
        assert_eq!(t.qd, 4);
    }

    #[test]
    fn latency_run_keeps_going() {
        let mut t = LatTarget::new(
            Arc::new(LatTargetPlan::new(1_000, 1_000, 99.0, true, 1)),
            0,
            2,
        );
        for k in 1..10u64 {
            assert_eq!(t.check(k * 2_000_000, k * 100), Step::Go);
        }
        assert_eq!(t.qd, 2);
    }
}
