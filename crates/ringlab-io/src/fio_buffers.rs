//! fio's buffer contents for writes: `dedupe_percentage` (with
//! `dedupe_mode=repeat|working_set`, `dedupe_working_set_percentage`,
//! `dedupe_global`) and `buffer_compress_percentage` /
//! `buffer_compress_chunk`.
//!
//! As in fio (io_u.c get_buf_state, lib/rand.c
//! fill_random_buf_percentage), every write's buffer is regenerated from a
//! seed: a new one for a unique block; for a duplicate (drawn with
//! probability dedupe_percentage) the seed of the last unique block
//! (`repeat`) or one of a working set of seeds (`working_set`; the same set
//! for every job with `dedupe_global`). Within a block, each
//! buffer_compress_chunk (default 512 bytes, fio's) is random for
//! (100 - compress)% of its bytes and zero (or buffer_pattern) for the rest.
//! The bytes differ from fio's (another generator); the shares of
//! duplicate blocks and of compressible bytes are fio's.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FioBuffers {
    /// dedupe_percentage.
    pub dedupe: u32,
    /// dedupe_mode=working_set (else repeat).
    pub working_set: bool,
    /// dedupe_working_set_percentage (of the region).
    pub working_set_pct: u32,
    /// dedupe_global.
    pub global: bool,
    /// buffer_compress_percentage.
    pub compress: u32,
    /// buffer_compress_chunk in bytes.
    pub chunk: u32,
    /// fio's thread number of the run's first job, less one, and the
    /// number of jobs in the whole job file (`ringlab fio` sets them: a
    /// global working set spans every job's unique blocks).
    pub thread_base: u32,
    pub threads: u32,
}

impl FioBuffers {
    /// The hidden `--fio-buffers` value: `dedupe=N,mode=repeat|working_set,
    /// ws=N,global=0|1,compress=N,chunk=N`.
    pub fn parse(spec: &str) -> Result<FioBuffers, String> {
        let mut b = FioBuffers {
            dedupe: 0,
            working_set: false,
            working_set_pct: 5,
            global: false,
            compress: 0,
            chunk: 512,
            thread_base: 0,
            threads: 0,
        };
        for part in spec.split(',').filter(|p| !p.is_empty()) {
            let (k, x) = part
                .split_once('=')
                .ok_or_else(|| format!("{part}: KEY=VALUE"))?;
            let n = || {
                x.parse::<u32>()
                    .map_err(|_| format!("{k}={x}: a whole number"))
            };
            match k {
                "dedupe" => b.dedupe = n()?.min(100),
                "mode" => b.working_set = x == "working_set",
                "ws" => b.working_set_pct = n()?.min(100),
                "global" => b.global = x == "1",
                "compress" => b.compress = n()?.min(100),
                "chunk" => b.chunk = n()?,
                _ => return Err(format!("{k}: not a --fio-buffers key")),
            }
        }
        Ok(b)
    }
}

/// One job's buffer generator.
pub struct BufferFill {
    plan: FioBuffers,
    rng: Xoshiro256PlusPlus,
    seed: u64,
    /// This job's fio thread number (0-based) and the jobs of the file.
    thread: u64,
    threads: u64,
    /// Unique blocks written so far: the next one is this page.
    next_page: u64,
    /// The seed of the last unique block (dedupe_mode=repeat).
    last_unique: u64,
    /// fio's num_unique_pages: the working set, in blocks.
    set_pages: u64,
}

impl BufferFill {
    /// `job_blocks`: the blocks of the job's size (fio's working set is a
    /// share of it).
    pub fn new(plan: &FioBuffers, seed: u64, job: u32, job_blocks: u64) -> BufferFill {
        let thread = (plan.thread_base + job) as u64;
        BufferFill {
            plan: plan.clone(),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xdede ^ (thread << 32)),
            seed,
            thread,
            threads: (plan.threads as u64).max(thread + 1),
            next_page: 0,
            last_unique: page_seed(seed, thread, 0),
            set_pages: (job_blocks * plan.working_set_pct as u64 / 100).max(1),
        }
    }

    /// Fills one write's buffer; returns whether it is a duplicate.
    pub fn fill(&mut self, buf: &mut [u8], pattern: Option<&[u8]>) -> bool {
        let dup = self.plan.dedupe > 0 && self.rng.random_range(1..=100u32) <= self.plan.dedupe;
        let seed = if !dup {
            let s = page_seed(self.seed, self.thread, self.next_page);
            self.next_page += 1;
            self.last_unique = s;
            s
        } else if self.plan.working_set {
            // fio's working set: the first pages of this job's own unique
            // sequence; with dedupe_global, runs of pages of every job's
            // sequence in turn (dedupe.c).
            let i = self.rng.random_range(0..self.set_pages);
            if self.plan.global {
                let per = (self.set_pages / self.threads).max(1);
                let t = (self.thread + i / per) % self.threads;
                page_seed(self.seed, t, i % per)
            } else {
                page_seed(self.seed, self.thread, i)
            }
        } else {
            self.last_unique
        };
        fill_percentage(
            buf,
            seed,
            self.plan.compress,
            self.plan.chunk as usize,
            pattern,
        );
        dup
    }
}

/// The seed of a job's `page`-th unique block.
fn page_seed(seed: u64, thread: u64, page: u64) -> u64 {
    splitmix(seed ^ (thread << 40) ^ page.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

fn splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// fio's fill_random_buf_percentage: per `chunk` bytes, the first
/// (100 - `pct`)% random (at least one byte), the rest zero or `pattern`.
pub fn fill_percentage(buf: &mut [u8], seed: u64, pct: u32, chunk: usize, pattern: Option<&[u8]>) {
    let fill_rest = |b: &mut [u8]| match pattern {
        Some(p) => {
            for (x, v) in b.iter_mut().zip(p.iter().cycle()) {
                *x = *v;
            }
        }
        None => b.fill(0),
    };
    if pct >= 100 {
        fill_rest(buf);
        return;
    }
    let chunk = if chunk == 0 { buf.len() } else { chunk };
    let mut s = seed;
    let mut at = 0;
    while at < buf.len() {
        let this = chunk.min(buf.len() - at);
        let random = ((this as u64 * (100 - pct) as u64) / 100).max(1) as usize;
        crate::verify::fill_payload(&mut buf[at..at + random], s);
        s = splitmix(s.wrapping_add(1));
        fill_rest(&mut buf[at + random..at + this]);
        at += this;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn blocks(spec: &str, n: usize) -> Vec<Vec<u8>> {
        let p = FioBuffers::parse(spec).unwrap();
        let mut f = BufferFill::new(&p, 1, 0, 1000);
        (0..n)
            .map(|_| {
                let mut b = vec![0u8; 4096];
                f.fill(&mut b, None);
                b
            })
            .collect()
    }

    #[test]
    fn half_of_the_blocks_are_duplicates_with_dedupe_50() {
        for mode in ["repeat", "working_set"] {
            let all = blocks(&format!("dedupe=50,mode={mode},ws=10"), 4000);
            let unique: HashSet<&Vec<u8>> = all.iter().collect();
            let dup_share = 1.0 - unique.len() as f64 / all.len() as f64;
            assert!((0.45..0.56).contains(&dup_share), "{mode}: {dup_share}");
        }
    }

    #[test]
    fn compress_50_zeroes_half_of_every_chunk() {
        let all = blocks("compress=50", 4);
        for b in &all {
            for c in b.chunks(512) {
                assert!(c[256..].iter().all(|&x| x == 0));
                assert!(c[..256].iter().any(|&x| x != 0));
            }
        }
    }

    #[test]
    fn a_global_working_set_is_shared_by_jobs() {
        // Two jobs, a set of 2 pages each: page 0 of each job's unique
        // sequence; a duplicate of job 1 can be job 0's first unique block.
        let mut p = FioBuffers::parse("dedupe=50,mode=working_set,ws=2,global=1").unwrap();
        p.threads = 2;
        let mut a = BufferFill::new(&p, 1, 0, 100);
        let mut b = BufferFill::new(&p, 1, 1, 100);
        let mut first = vec![0u8; 512];
        while a.fill(&mut first, None) {}
        let mut seen = false;
        for _ in 0..200 {
            let mut y = vec![0u8; 512];
            seen |= b.fill(&mut y, None) && y == first;
        }
        assert!(seen, "job 1 wrote a duplicate of job 0's block");
    }
}
