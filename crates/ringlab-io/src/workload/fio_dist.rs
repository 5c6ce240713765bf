//! fio 3.33's non-uniform offset distributions (lib/zipf.c, lib/gauss.c,
//! filesetup.c's __init_rand_distribution) for `ringlab fio`: zipf, pareto
//! and normal, from fio's own generator, seed and hash, so a job draws
//! fio's offsets I/O for I/O.
//!
//! fio seeds each file's distribution with `jhash(file_name) *
//! thread_number` (its randrepeat; with a randseed given, the offset
//! stream's seed), counts in ranges of the smallest block size of reads
//! and writes over `min(file size, io_size)`, and draws a range number
//! that is scrambled by `__hash_u64` and shifted by a random offset.

use crate::regulate::Taus88;

/// fio's GOLDEN_RATIO_64 (hash.h `__hash_u64`).
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;
/// fio's ZIPF_MAX_GEN: zeta(n) is summed over at most this many terms.
const ZIPF_MAX_GEN: u64 = 10_000_000;

/// fio's `jhash(key, length, 0)` (hash.h; its 12-byte rounds add single
/// bytes, as fio's code does).
pub(super) fn jhash(key: &[u8]) -> u32 {
    let rol = |w: u32, s: u32| w.rotate_left(s);
    let init = 0x61C8_8647u32.wrapping_add(key.len() as u32);
    let (mut a, mut b, mut c) = (init, init, init);
    let mut k = key;
    while k.len() > 12 {
        a = a.wrapping_add(k[0] as u32);
        b = b.wrapping_add(k[4] as u32);
        c = c.wrapping_add(k[8] as u32);
        a = a.wrapping_sub(c);
        a ^= rol(c, 4);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a);
        b ^= rol(a, 6);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b);
        c ^= rol(b, 8);
        b = b.wrapping_add(a);
        a = a.wrapping_sub(c);
        a ^= rol(c, 16);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a);
        b ^= rol(a, 19);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b);
        c ^= rol(b, 4);
        b = b.wrapping_add(a);
        k = &k[12..];
    }
    if k.is_empty() {
        return c;
    }
    let byte = |i: usize, s: u32| (k.get(i).copied().unwrap_or(0) as u32) << s;
    c = c
        .wrapping_add(byte(11, 24))
        .wrapping_add(byte(10, 16))
        .wrapping_add(byte(9, 8))
        .wrapping_add(byte(8, 0));
    b = b
        .wrapping_add(byte(7, 24))
        .wrapping_add(byte(6, 16))
        .wrapping_add(byte(5, 8))
        .wrapping_add(byte(4, 0));
    a = a
        .wrapping_add(byte(3, 24))
        .wrapping_add(byte(2, 16))
        .wrapping_add(byte(1, 8))
        .wrapping_add(byte(0, 0));
    c ^= b;
    c = c.wrapping_sub(rol(b, 14));
    a ^= c;
    a = a.wrapping_sub(rol(c, 11));
    b ^= a;
    b = b.wrapping_sub(rol(a, 25));
    c ^= b;
    c = c.wrapping_sub(rol(b, 16));
    a ^= c;
    a = a.wrapping_sub(rol(c, 4));
    b ^= a;
    b = b.wrapping_sub(rol(a, 14));
    c ^= b;
    c = c.wrapping_sub(rol(b, 24));
    c
}

/// One file's distribution state (fio's zipf_state / gauss_state).
#[derive(Debug, Clone)]
pub(super) enum FioDist {
    Zipf {
        rng: Taus88,
        n: u64,
        rand_off: u64,
        theta: f64,
        zeta2: f64,
        zetan: f64,
    },
    Pareto {
        rng: Taus88,
        n: u64,
        rand_off: u64,
        pow: f64,
    },
    Gauss {
        rng: Taus88,
        n: u64,
        stddev: u32,
    },
}

impl FioDist {
    /// fio's zipf_init / pareto_init / gauss_init over `n` ranges (center
    /// -1: ringlab takes no center).
    pub(super) fn new(dist: super::Distribution, n: u64, seed: u32) -> Option<FioDist> {
        let mut rng = Taus88::new(seed);
        Some(match dist {
            super::Distribution::Uniform => return None,
            super::Distribution::Zipf(theta) => {
                let rand_off = rng.next_u32() as u64;
                let zetan = (0..n.min(ZIPF_MAX_GEN))
                    .map(|i| (1.0 / (i + 1) as f64).powf(theta))
                    .sum();
                FioDist::Zipf {
                    rng,
                    n,
                    rand_off,
                    theta,
                    zeta2: 1.0f64.powf(theta) + 0.5f64.powf(theta),
                    zetan,
                }
            }
            super::Distribution::Pareto(h) => {
                let rand_off = rng.next_u32() as u64;
                FioDist::Pareto {
                    rng,
                    n,
                    rand_off,
                    pow: h.ln() / (1.0 - h).ln(),
                }
            }
            super::Distribution::Normal(dev) => {
                let mut stddev = 0;
                if dev != 0.0 {
                    stddev = ((n as f64 * dev) / 100.0).ceil() as u32;
                    stddev = stddev.min((n / 2) as u32);
                }
                FioDist::Gauss { rng, n, stddev }
            }
        })
    }

    /// fio's zipf_next / pareto_next / gauss_next: a range number.
    pub(super) fn next(&mut self) -> u64 {
        let hash = |v: u64| v.wrapping_mul(GOLDEN_RATIO_64);
        match self {
            FioDist::Zipf {
                rng,
                n,
                rand_off,
                theta,
                zeta2,
                zetan,
            } => {
                let nf = *n as f64;
                let alpha = 1.0 / (1.0 - *theta);
                let eta = (1.0 - (2.0 / nf).powf(1.0 - *theta)) / (1.0 - *zeta2 / *zetan);
                let rand_uni = rng.next_u32() as f64 / u32::MAX as f64;
                let rand_z = rand_uni * *zetan;
                let val = if rand_z < 1.0 {
                    1
                } else if rand_z < 1.0 + 0.5f64.powf(*theta) {
                    2
                } else {
                    1 + (nf * (eta * rand_uni - eta + 1.0).powf(alpha)) as u64
                };
                hash(val - 1).wrapping_add(*rand_off) % *n
            }
            FioDist::Pareto {
                rng,
                n,
                rand_off,
                pow,
            } => {
                let r = rng.next_u32() as f64 / u32::MAX as f64;
                let v = ((*n - 1) as f64 * r.powf(*pow)) as u64;
                hash(v).wrapping_add(*rand_off) % *n
            }
            FioDist::Gauss { rng, n, stddev } => {
                let mut sum = 0u64;
                for _ in 0..12 {
                    sum = sum.wrapping_add(rng.next_u32() as u64 % (*n + 1));
                }
                sum = sum.div_ceil(12);
                if *stddev != 0 {
                    // gauss_dev: int arithmetic as fio's.
                    let r = rng.next_u32() as f64;
                    let vr = (*stddev as f64 * (r / 4294967296.0)) as i32;
                    let mut dev = vr.wrapping_sub((*stddev / 2) as i32);
                    while sum.wrapping_add(dev as i64 as u64) >= *n {
                        dev /= 2;
                    }
                    sum = sum.wrapping_add(dev as i64 as u64);
                }
                hash(sum) % *n
            }
        }
    }
}
