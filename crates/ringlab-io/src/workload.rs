//! The workload: which block each I/O touches and whether it reads or writes.

use clap::ValueEnum;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// fio's `rw=` patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    Read,
    Write,
    Randread,
    Randwrite,
    Randrw,
    /// Sequential mix of reads and writes (fio's rw/readwrite).
    #[value(alias = "readwrite")]
    Rw,
    /// io_uring no-op requests: no data, no file; the cost of the ring itself.
    Nop,
}

impl Rw {
    pub fn name(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::Write => "write",
            Rw::Randread => "randread",
            Rw::Randwrite => "randwrite",
            Rw::Randrw => "randrw",
            Rw::Rw => "rw",
            Rw::Nop => "nop",
        }
    }

    pub fn is_random(self) -> bool {
        matches!(self, Rw::Randread | Rw::Randwrite | Rw::Randrw)
    }

    fn is_mixed(self) -> bool {
        matches!(self, Rw::Randrw | Rw::Rw)
    }

    pub fn reads(self, rwmixread: u32) -> bool {
        match self {
            Rw::Read | Rw::Randread => true,
            Rw::Write | Rw::Randwrite => false,
            Rw::Randrw | Rw::Rw => rwmixread > 0,
            Rw::Nop => false,
        }
    }

    pub fn writes(self, rwmixread: u32) -> bool {
        match self {
            Rw::Read | Rw::Randread => false,
            Rw::Write | Rw::Randwrite => true,
            Rw::Randrw | Rw::Rw => rwmixread < 100,
            Rw::Nop => false,
        }
    }
}

/// Direction of one I/O.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dir {
    #[default]
    Read,
    Write,
    /// A request that moves no data (`--rw nop`).
    Nop,
}

/// One I/O the workload asks for: a direction and a block of the region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextIo {
    pub dir: Dir,
    /// Block number within the whole target (offset = block * bs).
    pub block: u64,
}

/// Generates the blocks of one job: uniform random (aligned to bs) or
/// sequential with wrap-around, over blocks `[first, first + count)`.
pub struct Workload {
    rw: Rw,
    rwmixread: u32,
    first: u64,
    count: u64,
    next_seq: u64,
    rng: Xoshiro256PlusPlus,
}

impl Workload {
    /// `seed` is the run's seed; each job gets its own stream from it.
    pub fn new(rw: Rw, rwmixread: u32, first: u64, count: u64, seed: u64, job: u32) -> Workload {
        assert!(count > 0, "a job's region holds at least one block");
        let stream = seed ^ (job as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Workload {
            rw,
            rwmixread,
            first,
            count,
            next_seq: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(stream),
        }
    }

    #[inline]
    pub fn next_io(&mut self) -> NextIo {
        let dir = match self.rw {
            Rw::Read | Rw::Randread => Dir::Read,
            Rw::Write | Rw::Randwrite => Dir::Write,
            Rw::Nop => Dir::Nop,
            _ if self.rw.is_mixed() => {
                if self.rng.random_range(0..100) < self.rwmixread {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
            _ => unreachable!("every Rw is handled"),
        };
        let rel = if self.rw.is_random() {
            self.rng.random_range(0..self.count)
        } else {
            let b = self.next_seq;
            self.next_seq = if b + 1 == self.count { 0 } else { b + 1 };
            b
        };
        NextIo {
            dir,
            block: self.first + rel,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(w: &mut Workload, n: usize) -> Vec<NextIo> {
        (0..n).map(|_| w.next_io()).collect()
    }

    #[test]
    fn sequential_wraps_around_its_region() {
        let mut w = Workload::new(Rw::Read, 100, 10, 3, 1, 0);
        let blocks: Vec<u64> = take(&mut w, 7).iter().map(|i| i.block).collect();
        assert_eq!(blocks, vec![10, 11, 12, 10, 11, 12, 10]);
    }

    #[test]
    fn random_stays_in_region_and_covers_it_uniformly() {
        let mut w = Workload::new(Rw::Randread, 100, 100, 16, 42, 0);
        let mut hist = [0u32; 16];
        for io in take(&mut w, 160_000) {
            assert!((100..116).contains(&io.block));
            assert_eq!(io.dir, Dir::Read);
            hist[(io.block - 100) as usize] += 1;
        }
        // Each block expects 10,000 hits; 5 sigma is about 500.
        for (b, &n) in hist.iter().enumerate() {
            assert!((9_500..=10_500).contains(&n), "block {b}: {n}");
        }
    }

    #[test]
    fn same_seed_same_sequence_other_seed_or_job_other_sequence() {
        let a = take(&mut Workload::new(Rw::Randrw, 50, 0, 1 << 20, 7, 0), 100);
        let b = take(&mut Workload::new(Rw::Randrw, 50, 0, 1 << 20, 7, 0), 100);
        let c = take(&mut Workload::new(Rw::Randrw, 50, 0, 1 << 20, 8, 0), 100);
        let d = take(&mut Workload::new(Rw::Randrw, 50, 0, 1 << 20, 7, 1), 100);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }

    #[test]
    fn mix_follows_rwmixread() {
        let mut w = Workload::new(Rw::Randrw, 70, 0, 1000, 3, 0);
        let reads = take(&mut w, 100_000)
            .iter()
            .filter(|i| i.dir == Dir::Read)
            .count();
        assert!((69_000..=71_000).contains(&reads), "{reads}");
        let mut all_writes = Workload::new(Rw::Rw, 0, 0, 10, 3, 0);
        assert!(take(&mut all_writes, 100)
            .iter()
            .all(|i| i.dir == Dir::Write));
        assert!(Rw::Randrw.writes(50) && Rw::Randrw.reads(50));
        assert!(!Rw::Randrw.writes(100) && !Rw::Rw.reads(0));
    }

    #[test]
    fn pure_write_patterns() {
        let mut w = Workload::new(Rw::Randwrite, 50, 0, 5, 3, 0);
        assert!(take(&mut w, 50)
            .iter()
            .all(|i| i.dir == Dir::Write && i.block < 5));
        assert!(Rw::Write.writes(0) && !Rw::Write.reads(100));
    }
}
