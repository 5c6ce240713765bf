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

use rand::{Rng, RngCore, SeedableRng};
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
    /// The seed of the last unique block (dedupe_mode=repeat).
    last_unique: u64,
    /// The seed the working set is drawn from (shared by every job with
    /// dedupe_global) and its size in blocks.
    set_seed: u64,
    set_blocks: u64,
}

impl BufferFill {
    /// `region_blocks`: the blocks of the job's region (of the whole target
    /// with dedupe_global), for the working set's size.
    pub fn new(plan: &FioBuffers, seed: u64, job: u32, region_blocks: u64) -> BufferFill {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xdede ^ dedu64_mix(job));
        let first = rng.next_u64();
        BufferFill {
            plan: plan.clone(),
            rng,
            last_unique: first,
            set_seed: if plan.global {
                seed ^ 0x5e7
            } else {
                seed ^ 0x5e7 ^ ((job as u64 + 1) << 40)
            },
            set_blocks: (region_blocks * plan.working_set_pct as u64 / 100).max(1),
        }
    }

    /// Fills one write's buffer; returns whether it is a duplicate.
    pub fn fill(&mut self, buf: &mut [u8], pattern: Option<&[u8]>) -> bool {
        let dup = self.plan.dedupe > 0 && self.rng.random_range(1..=100u32) <= self.plan.dedupe;
        let seed = if !dup {
            let s = self.rng.next_u64();
            self.last_unique = s;
            s
        } else if self.plan.working_set {
            let i = self.rng.random_range(0..self.set_blocks);
            splitmix(self.set_seed.wrapping_add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
        } else {
            self.last_unique
        };
        fill_percentage(buf, seed, self.plan.compress, self.plan.chunk as usize, pattern);
        dup
    }
}

const fn dedu64_mix(job: u32) -> u64 {
    (job as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
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
        let p = FioBuffers::parse("dedupe=100,mode=working_set,ws=1,global=1").unwrap();
        let mut a = BufferFill::new(&p, 1, 0, 100);
        let mut b = BufferFill::new(&p, 1, 1, 100);
        let (mut x, mut y) = (vec![0u8; 512], vec![0u8; 512]);
        a.fill(&mut x, None);
        b.fill(&mut y, None);
        assert_eq!(x, y, "one block in the set: both jobs write it");
    }
}
