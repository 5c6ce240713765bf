//! fio's controls of when a job may issue its next I/O, beyond a fixed
//! rate: `rate_process=poisson` (exponential gaps drawn from fio's own
//! generator and seeds, so a run issues the same I/Os at the same times
//! as fio's), `rate_ignore_thinktime`, and `flow` (token-based throttling
//! between jobs sharing a `flow_id`, fio's flow.c).
//!
//! Only `ringlab fio` sets these (fio's words, fio's meaning); a plain
//! `ringlab io` run has [`Regulation::default`], which changes nothing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What regulates a job's issuing beyond [`crate::IoPlan::pace_ns`].
#[derive(Debug, Clone, Default)]
pub struct Regulation {
    /// fio's `rate_process=poisson`: the gaps between paced I/Os are drawn
    /// from an exponential distribution of the rate's mean.
    pub poisson: Option<PoissonSeeds>,
    /// fio's `rate_ignore_thinktime`: time spent thinking is not owed to
    /// the rate (no burst to catch up after a pause).
    pub rate_ignore_thinktime: bool,
    /// fio's `flow`: this job's weight in its flow.
    pub flow: Option<FlowMember>,
    /// fio's `ss=`: the run publishes its jobs' counters (bytes too) here
    /// for the steady-state sampler of `ringlab fio`.
    pub live: Option<Arc<crate::steady::Live>>,
    /// fio's `latency_target`: each job thread searches its queue depth.
    pub lat_target: Option<Arc<crate::lat_target::LatTargetPlan>>,
}

/// What fio seeds its Poisson generators from: `randseed` (0x89 unless
/// given) and the job's thread number (1 for fio's first job; numjobs
/// clones count on from it).
#[derive(Debug, Clone, Copy)]
pub struct PoissonSeeds {
    pub rand_seed: u64,
    pub first_thread_number: u64,
}

/// fio's index of the read direction's Poisson seed (FIO_RAND_POISSON_OFF
/// in fio.h; FIO_RAND_POISSON2_OFF, for writes, is 17).
const POISSON_OFF: [usize; 2] = [15, 17];

/// fio's 32-bit combined Tausworthe generator (lib/rand.c, taus88).
#[derive(Debug, Clone)]
pub struct Taus88 {
    s: [u32; 3],
}

impl Taus88 {
    /// fio's `__init_rand32(state, seed)`.
    pub fn new(seed: u32) -> Taus88 {
        let lcg = |x: u32| x.wrapping_mul(69069) ^ seed;
        let at_least = |x: u32, m: u32| if x < m { x.wrapping_add(m) } else { x };
        // fio writes (2^31) + (2^17) + (2^7): in C, xors: 29 + 19 + 5.
        let s1 = at_least(lcg(53), 1);
        let s2 = at_least(lcg(s1), 7);
        let s3 = at_least(lcg(s2), 15);
        let mut t = Taus88 { s: [s1, s2, s3] };
        for _ in 0..6 {
            t.next_u32();
        }
        t
    }

    /// fio's `__rand32`.
    pub fn next_u32(&mut self) -> u32 {
        fn step(s: u32, a: u32, b: u32, c: u32, d: u32) -> u32 {
            ((s & c) << d) ^ (((s << a) ^ s) >> b)
        }
        self.s[0] = step(self.s[0], 13, 19, 4294967294, 12);
        self.s[1] = step(self.s[1], 2, 25, 4294967288, 4);
        self.s[2] = step(self.s[2], 3, 11, 4294967280, 17);
        self.s[0] ^ self.s[1] ^ self.s[2]
    }

    /// fio's `__rand_0_1` on a 32-bit state: (0, 1].
    pub fn next_0_1(&mut self) -> f64 {
        (self.next_u32() as f64 + 1.0) / 4294967296.0
    }
}

/// fio's seed number `i` of thread `thread_number` (init.c,
/// setup_random_seeds with randrepeat).
pub fn fio_seed(rand_seed: u64, thread_number: u64, i: usize) -> u64 {
    let mut seed = rand_seed;
    for _ in 0..4 {
        seed = seed.wrapping_mul(0x9e370001);
    }
    for _ in 0..i {
        seed = seed.wrapping_mul(0x9e370001);
    }
    seed.wrapping_mul(thread_number).wrapping_add(i as u64)
}

/// The Poisson gaps of one job thread, per direction, as fio draws them.
#[derive(Debug, Clone)]
pub struct PoissonGaps {
    rng: [Taus88; 2],
    /// fio's `last_usec`: the due time of the next I/O, in microseconds.
    last_us: [u64; 2],
}

impl PoissonGaps {
    pub fn new(seeds: PoissonSeeds, job: u32) -> PoissonGaps {
        let tn = seeds.first_thread_number + job as u64;
        let rng = POISSON_OFF.map(|i| Taus88::new(fio_seed(seeds.rand_seed, tn, i) as u32));
        PoissonGaps {
            rng,
            last_us: [0; 2],
        }
    }

    /// fio's usec_for_io under rate_process=poisson: the due time (ns on
    /// the job clock) of the I/O after the one just issued in direction
    /// `d`, for a mean rate of `iops`.
    pub fn next_due_ns(&mut self, d: usize, iops: u64) -> u64 {
        let iops = iops.max(1);
        // fio: (int64_t)(1000000 / iops) * -logf(__rand_0_1(...)), in
        // float, truncated to whole microseconds.
        let u = self.rng[d].next_0_1() as f32;
        let gap = ((1_000_000 / iops) as f32 * -u.ln()) as u64;
        self.last_us[d] += gap;
        self.last_us[d] * 1000
    }

    /// rate_ignore_thinktime: the pause of `us` is not owed to the rate.
    pub fn skip(&mut self, d: usize, us: u64) {
        self.last_us[d] += us;
    }
}

/// One flow (fio's `flow_id`): the I/Os its jobs issued, and their weights.
#[derive(Debug)]
pub struct Flow {
    counter: AtomicU64,
    total_weight: AtomicU64,
}

impl Default for Flow {
    fn default() -> Flow {
        // fio starts a flow's counter at 1.
        Flow {
            counter: AtomicU64::new(1),
            total_weight: AtomicU64::new(0),
        }
    }
}

impl Flow {
    /// I/Os issued by the flow's jobs so far (plus fio's 1).
    pub fn counter(&self) -> u64 {
        self.counter.load(Ordering::Relaxed)
    }
}

/// A job's place in a flow: its weight and fio's `flow_sleep`.
#[derive(Debug, Clone)]
pub struct FlowMember {
    pub flow: Arc<Flow>,
    pub weight: u64,
    pub sleep_us: u64,
}

/// One job thread's share of a flow; joins on creation, leaves on drop
/// (fio's flow_init_job / flow_exit_job).
#[derive(Debug)]
pub struct FlowState {
    member: FlowMember,
    own: u64,
}

impl FlowState {
    pub fn join(member: &FlowMember) -> FlowState {
        member
            .flow
            .total_weight
            .fetch_add(member.weight, Ordering::Relaxed);
        FlowState {
            member: member.clone(),
            own: 0,
        }
    }

    /// fio's flow_threshold_exceeded: `true` when this job is ahead of its
    /// share (it must wait); else its next I/O is counted and `false`.
    pub fn exceeded(&mut self) -> bool {
        let f = &self.member.flow;
        let counter = f.counter.load(Ordering::Relaxed).max(1) as f64;
        let total = f.total_weight.load(Ordering::Relaxed).max(1) as f64;
        if self.own as f64 / counter > self.member.weight as f64 / total {
            return true;
        }
        f.counter.fetch_add(1, Ordering::Relaxed);
        self.own += 1;
        false
    }

    /// fio's flow_sleep, in microseconds (0: none).
    pub fn sleep_us(&self) -> u64 {
        self.member.sleep_us
    }

    /// I/Os this job counted in its flow.
    pub fn own(&self) -> u64 {
        self.own
    }
}

impl Drop for FlowState {
    fn drop(&mut self) {
        let f = &self.member.flow;
        f.counter.fetch_sub(self.own, Ordering::Relaxed);
        f.total_weight
            .fetch_sub(self.member.weight, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_keeps_the_weights_ratio() {
        let flow = Arc::new(Flow::default());
        let m = |w| FlowMember {
            flow: flow.clone(),
            weight: w,
            sleep_us: 0,
        };
        let (mut a, mut b) = (FlowState::join(&m(1)), FlowState::join(&m(8)));
        for _ in 0..9000 {
            let _ = a.exceeded();
            let _ = b.exceeded();
        }
        let ratio = b.own() as f64 / a.own() as f64;
        assert!((ratio - 8.0).abs() < 0.1, "ratio {ratio}");
        drop(a);
        drop(b);
        assert_eq!(flow.counter(), 1);
    }

    /// fio 3.33 ran poisson-rate-submission.fio (rate_iops=50, randseed
    /// 0x89, its first job) for runtime=3 and issued 138 I/Os: the I/Os
    /// due before 3 s here, the first at 0, are as many.
    #[test]
    fn poisson_due_times_are_fio_s() {
        let mut g = PoissonGaps::new(
            PoissonSeeds {
                rand_seed: 0x89,
                first_thread_number: 1,
            },
            0,
        );
        let mut n = 1;
        while g.next_due_ns(0, 50) < 3_000_000_000 {
            n += 1;
        }
        assert_eq!(n, 138);
    }

    #[test]
    fn poisson_gaps_have_the_rate_as_mean() {
        let mut g = PoissonGaps::new(
            PoissonSeeds {
                rand_seed: 0x89,
                first_thread_number: 1,
            },
            0,
        );
        let mut last = 0;
        for _ in 0..10_000 {
            last = g.next_due_ns(0, 1000);
        }
        // 10,000 gaps of mean 1 ms: about 10 s.
        let secs = last as f64 / 1e9;
        assert!((secs - 10.0).abs() < 0.5, "{secs}");
    }
}
