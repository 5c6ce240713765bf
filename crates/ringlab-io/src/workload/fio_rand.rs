//! fio 3.33's own random streams for `ringlab fio`: a random job draws its
//! direction, offset and length as fio does, from fio's generators and
//! seeds, so it issues the same I/O sequence as fio (randrepeat=1, fio's
//! default, fixes the seeds per job).
//!
//! What fio does, and this follows (fio 3.33's init.c, io_u.c, lib/rand.h):
//!
//! - Seeds (setup_random_seeds): `randseed` (0x89 unless given) times
//!   0x9e370001 four times, then once more per stream; stream `i` of the
//!   job numbered `thread_number` (1 for the first job of the run; numjobs
//!   clones count on, in file order) is that times the thread number plus
//!   `i`. The offset stream is seeded `0xb1899bed * thread_number` instead
//!   (td_fill_rand_seeds_internal, under rand_repeatable), and every
//!   stream is seeded again at each new loop over the file
//!   (clear_io_state). A `randseed` given turns rand_repeatable off, but
//!   only after the job's first clone was seeded: that clone keeps the
//!   fixed offset seed, the others take stream 6, and no loop seeds again.
//! - Streams: lengths of reads from stream 0, of writes from 1 (0 too when
//!   `verify` is set), the read/write mix from 4 (always taus88), offsets
//!   from 6. `random_generator=tausworthe64` makes offsets and lengths
//!   taus258 (a file of more than 2^32 blocks switches fio to it from its
//!   second loop: the first was seeded before the check).
//! - Direction (get_rw_ddir): a mixed job keeps its direction while the
//!   I/Os issued in it are fewer than `rwmix_issues`; then it draws
//!   `rand_between(1, 100) <= rwmixread`; on a change, `rwmix_issues`
//!   becomes the I/Os issued in the old direction times the new one's
//!   percentage over 100 (set_rwmix_bytes).
//! - Offset (__get_next_rand_offset): block `lastb * (r / (max + 1.0))`,
//!   `lastb` the region in the direction's smallest size; on a block done
//!   (random map), the next free block after it, wrapping; the offset is
//!   the block times that size.
//! - Length (get_next_buflen): a fixed size draws nothing; `bsrange` is
//!   `min + max * (r / (max_rand + 1.0))` rounded down to the smallest
//!   size and capped at the largest; `bssplit` walks its entries in fio's
//!   order (by percentage) adding percentages until `r / perc <=
//!   max_rand / 100` for an entry that fits before the region's end; a
//!   length that does not fit is drawn again.
//!
//! Not followed here (the job keeps ringlab's generator under fio's map
//! rules, fio_map.rs): strided zones, `rw=read:N`, trims other than
//! `rw=randtrim` (whose trims take the offset stream and, sized as writes
//! are here, fio's trim length stream), lfsr with zones
//! or a non-uniform distribution, a distribution other than uniform or
//! zoned where fio's file name is not known (several files,
//! filename_format). zipf, pareto and normal are fio's (fio_dist.rs). fio's `ramp_time` resets its issue counts (rwmix) at the ramp's
//! end; here they run on.

use super::{BlockSizes, Dir, NextIo, Rw, Workload};
use crate::regulate::{fio_seed, Taus88};

/// fio's FIO_RANDSEED: the offset stream's seed per thread number under
/// randrepeat.
const FIO_RANDSEED: u64 = 0xb189_9bed;

/// fio's stream indexes (FIO_RAND_*_OFF in fio.h).
const BS_OFF: usize = 0;
const BS1_OFF: usize = 1;
const BS2_OFF: usize = 2;
const MIX_OFF: usize = 4;
const BLOCK_OFF: usize = 6;
const ZONE_OFF: usize = 16;

/// fio's `random_generator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FioGenerator {
    /// Not given: taus88, or taus258 for a file of more than 2^32 blocks.
    #[default]
    Default,
    Tausworthe,
    Tausworthe64,
    /// fio's LFSR (fio_lfsr.rs): no random map.
    Lfsr,
}

/// Which of a job's numjobs clones seed their offset stream with
/// `0xb1899bed * thread_number` (fio seeds a job before fixup_options
/// turns rand_repeatable off for a given randseed, so with randseed only
/// the first clone does; the others take stream 6 of randseed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffsetSeed {
    /// randrepeat=1, no randseed (fio's default).
    All,
    /// randseed given.
    FirstClone,
    /// randrepeat=0, no randseed: from the seeds.
    None,
}

/// What fio seeds a job's streams from; set by `ringlab fio` on every job.
#[derive(Clone, Debug)]
pub struct FioRand {
    /// `randseed` (0x89 unless given; from the clock under randrepeat=0).
    pub rand_seed: u64,
    /// fio's thread number of the job's first clone (1-based, in order).
    pub first_thread_number: u64,
    /// Which clones seed their offset stream with fio's FIO_RANDSEED.
    pub offset_seed: OffsetSeed,
    /// fio's rand_repeatable when its loops start: randrepeat=1 and no
    /// randseed given (every stream is seeded again at each loop).
    pub reseed_each_loop: bool,
    pub generator: FioGenerator,
    /// `verify` set: writes draw lengths from the reads' seed.
    pub verify: bool,
    /// Per direction: bssplit's sizes in the order written (fio sorts its
    /// entries by percentage with a stable sort, so equal percentages
    /// keep this order); empty: by size.
    pub split_written: [Vec<u64>; 2],
    /// The engine queues (fio's FIO_Q_QUEUED: libaio, io_uring, posixaio,
    /// null at a depth above 1): only then does fio count a loop's issued
    /// bytes and end the loop at `size` (io_queue_event); a synchronous
    /// engine's loop runs on until an I/O cannot be made.
    pub loop_ends_on_bytes: bool,
    /// fio's file name per numjobs clone (its zipf, pareto and normal
    /// distributions are seeded from it); empty: not known (ringlab's
    /// generator draws those).
    pub file_names: Vec<String>,
}

/// fio's 64-bit combined Tausworthe generator (lib/rand.h, taus258).
#[derive(Debug, Clone)]
pub struct Taus258 {
    s: [u64; 5],
}

impl Taus258 {
    /// fio's `__init_rand64(state, seed)`.
    pub fn new(seed: u64) -> Taus258 {
        let lcg = |x: u64| x.wrapping_mul(6906969069) ^ seed;
        let at_least = |x: u64, m: u64| if x < m { x.wrapping_add(m) } else { x };
        // fio writes (2^31) + (2^17) + (2^7): in C, xors: 29 + 19 + 5.
        let s1 = at_least(lcg(53), 1);
        let s2 = at_least(lcg(s1), 7);
        let s3 = at_least(lcg(s2), 15);
        let s4 = at_least(lcg(s3), 33);
        let s5 = at_least(lcg(s4), 49);
        let mut t = Taus258 {
            s: [s1, s2, s3, s4, s5],
        };
        for _ in 0..6 {
            t.next_u64();
        }
        t
    }

    /// fio's `__rand64`.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let x = ((s[0] << 1) ^ s[0]) >> 53;
        s[0] = ((s[0] & 18446744073709551614) << 10) ^ x;
        let x = ((s[1] << 24) ^ s[1]) >> 50;
        s[1] = ((s[1] & 18446744073709551104) << 5) ^ x;
        let x = ((s[2] << 3) ^ s[2]) >> 23;
        s[2] = ((s[2] & 18446744073709547520) << 29) ^ x;
        let x = ((s[3] << 5) ^ s[3]) >> 24;
        s[3] = ((s[3] & 18446744073709420544) << 23) ^ x;
        let x = ((s[4] << 3) ^ s[4]) >> 33;
        s[4] = ((s[4] & 18446744073701163008) << 8) ^ x;
        s[0] ^ s[1] ^ s[2] ^ s[3] ^ s[4]
    }
}

/// One of fio's `frand_state`s: taus88 or taus258.
#[derive(Debug, Clone)]
pub enum Frand {
    T32(Taus88),
    T64(Taus258),
}

impl Frand {
    /// fio's `init_rand_seed` (a 32-bit state takes the seed's low half).
    pub fn new(seed: u64, use64: bool) -> Frand {
        if use64 {
            Frand::T64(Taus258::new(seed))
        } else {
            Frand::T32(Taus88::new(seed as u32))
        }
    }

    /// fio's `__rand`.
    pub fn next(&mut self) -> u64 {
        match self {
            Frand::T32(t) => t.next_u32() as u64,
            Frand::T64(t) => t.next_u64(),
        }
    }

    /// fio's `rand_max`.
    pub fn max(&self) -> u64 {
        match self {
            Frand::T32(_) => u32::MAX as u64,
            Frand::T64(_) => u64::MAX,
        }
    }

    /// fio's `rand_max(...) + 1.0`, in double as fio computes it.
    fn max_plus_one(&self) -> f64 {
        self.max() as f64 + 1.0
    }

    /// fio's `lastb * (__rand / (rand_max + 1.0))`.
    pub fn scaled(&mut self, n: u64) -> u64 {
        let r = self.next() as f64;
        (n as f64 * (r / self.max_plus_one())) as u64
    }

    /// fio's `rand_between(start, end)`, both inclusive.
    pub fn between(&mut self, start: u64, end: u64) -> u64 {
        let span = end - start + 1;
        match self {
            Frand::T32(t) => {
                let r = t.next_u32() as f64;
                // (int)((double)end * (r / FRAND32_MAX_PLUS_ONE))
                start + (span as f64 * (r / 4294967296.0)) as i32 as u64
            }
            Frand::T64(t) => {
                let r = t.next_u64() as f64;
                start + (span as f64 * (r / 18446744073709551616.0)) as u64
            }
        }
    }
}

/// A job's streams as fio seeds them (td_fill_rand_seeds).
#[derive(Debug, Clone)]
struct Streams {
    offset: Frand,
    /// Lengths of reads, and of writes or (a trim job's) trims.
    bsrange: [Frand; 2],
    rwmix: Frand,
    /// random_distribution=zoned/zoned_abs: the zone of each offset.
    zone: Frand,
}

impl Streams {
    /// The offset stream's seed (and the LFSR's).
    fn block_seed(cfg: &FioRand, thread_number: u64) -> u64 {
        let fixed = match cfg.offset_seed {
            OffsetSeed::All => true,
            OffsetSeed::FirstClone => thread_number == cfg.first_thread_number,
            OffsetSeed::None => false,
        };
        if fixed {
            FIO_RANDSEED.wrapping_mul(thread_number)
        } else {
            fio_seed(cfg.rand_seed, thread_number, BLOCK_OFF)
        }
    }

    /// `trims`: a trim job (rw=randtrim), whose lengths fio draws from
    /// its trim stream (FIO_RAND_BS2_OFF), held here where writes' are.
    fn new(cfg: &FioRand, thread_number: u64, use64: bool, trims: bool) -> Streams {
        let seed = |i| fio_seed(cfg.rand_seed, thread_number, i);
        let block = Streams::block_seed(cfg, thread_number);
        let write = if trims {
            seed(BS2_OFF)
        } else if cfg.verify {
            seed(BS_OFF)
        } else {
            seed(BS1_OFF)
        };
        Streams {
            offset: Frand::new(block, use64),
            bsrange: [Frand::new(seed(BS_OFF), use64), Frand::new(write, use64)],
            rwmix: Frand::new(seed(MIX_OFF), false),
            zone: Frand::new(seed(ZONE_OFF), false),
        }
    }
}

/// Why an I/O could not be made: its offset (the map is full; a
/// time_based job empties it and draws again), or anything else (fio's
/// loop ends).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Fail {
    Offset,
    Other,
}

/// fio's per-job state of its streams and rwmix cycle.
pub(super) struct Exact {
    cfg: FioRand,
    thread_number: u64,
    use64: bool,
    /// rw=randtrim: every I/O a trim, sized and placed as fio's trims.
    trims: bool,
    streams: Streams,
    /// fio's rwmix_ddir (0 read, 1 write), rwmix_issues and io_issues.
    rwmix_ddir: usize,
    rwmix_issues: u64,
    io_issues: [u64; 2],
    /// zipf, pareto, normal: the file's distribution (fio keeps it across
    /// loops).
    dist: Option<super::fio_dist::FioDist>,
    /// random_generator=lfsr: the file's LFSR and its seed (fio's offset
    /// seed), reset at each loop (fio_file_reset).
    lfsr: Option<(super::fio_lfsr::Lfsr, u64)>,
    /// rw=randread:N: N (fio's ddir_seq_nr option; 1 without), and the
    /// I/Os left to the next random offset (fio starts at 1).
    seq_nr: u64,
    seq_left: u64,
    /// fio's last_pos per direction (sequential jobs), from the region's
    /// start.
    pos: [u64; 2],
    /// Per direction: smallest and largest size (min_bs, max_bs).
    min_bs: [u64; 2],
    max_bs: [u64; 2],
    /// Per direction: fio's ba (blockalign, else the smallest size).
    ba: [u64; 2],
}

impl Exact {
    /// Seeds every stream again (fio's new loop under randrepeat) and
    /// clears rwmix_issues (reset_io_counters).
    pub(super) fn new_loop(&mut self) {
        if self.cfg.reseed_each_loop {
            self.streams = Streams::new(&self.cfg, self.thread_number, self.use64, self.trims);
        }
        self.rwmix_issues = 0;
        // The file is opened again: fio_file_reset.
        self.pos = [0; 2];
        if let Some((l, seed)) = self.lfsr.as_mut() {
            l.reset(*seed);
        }
    }

    /// Whether fio's LFSR draws the offsets (no random map, but fio's
    /// norandommap is not set).
    pub(super) fn has_lfsr(&self) -> bool {
        self.lfsr.is_some()
    }

    /// Whether a loop ends after `size` bytes (an engine that queues).
    pub(super) fn loop_ends_on_bytes(&self) -> bool {
        self.cfg.loop_ends_on_bytes
    }
}

impl Workload {
    /// Whether fio's streams can make this job's I/O (see the module's
    /// notes for what they do not cover).
    /// fio's ba per direction: blockalign when given, else the
    /// direction's smallest size.
    fn fio_ba(&self) -> [u64; 2] {
        let align = self.place.as_ref().map_or(1, |p| p.align.max(1));
        [0, 1].map(|d| {
            if align > 1 {
                align * self.unit
            } else {
                self.sizes[d].min().max(1)
            }
        })
    }

    pub(super) fn fio_streams_apply(&self, rand: &FioRand) -> bool {
        let varies = |s: &BlockSizes| !matches!(s, BlockSizes::Fixed(_));
        // A sequential job draws from fio's streams when it mixes
        // directions or sizes vary (else it has nothing random).
        let sequential = self.skip == 0
            && (self.rw == Rw::Rw
                || (matches!(self.rw, Rw::Read | Rw::Write) && self.sizes.iter().any(varies)));
        // Zoned tables are made in blocks of blockalign (or the unit):
        // fio's match when every direction the job issues has that ba.
        let placed_ok = match self.place.as_deref() {
            None => true,
            Some(p) => {
                let table_ba = p.align.max(1) * self.unit;
                let ba = self.fio_ba();
                let dirs = [
                    self.rw.reads(self.rwmixread),
                    self.rw.writes(self.rwmixread),
                ];
                p.strided.is_none()
                    && (p.zoned.iter().all(Option::is_none)
                        || (0..2).all(|d| !dirs[d] || ba[d] == table_ba))
            }
        };
        // zipf, pareto, normal: fio seeds them from the file's name.
        let dist_ok = self.dist == super::Distribution::Uniform
            || (self.rw.is_random()
                && self.place.is_none()
                && !rand.file_names.is_empty()
                && rand.generator != FioGenerator::Lfsr);
        (matches!(
            self.rw,
            Rw::Randread | Rw::Randwrite | Rw::Randrw | Rw::Randtrim
        ) || sequential)
            && dist_ok
            && placed_ok
            && (rand.generator != FioGenerator::Lfsr
                || (self.rw.is_random()
                    && self
                        .place
                        .as_ref()
                        .is_none_or(|p| p.zoned.iter().all(Option::is_none))))
    }

    /// fio's per-job state of its streams for this workload, job `job` of
    /// its numjobs clones (`ringlab fio`); None where fio's LFSR cannot
    /// cover the region. Installed by [`Workload::with_fio_rand`].
    pub(super) fn fio_exact(&mut self, rand: &FioRand, job: u32) -> Option<Exact> {
        let rw_min = self.sizes[0].min().min(self.sizes[1].min()).max(1);
        let blocks = self.count * self.unit / rw_min;
        // check_rand_gen_limits: past 2^32 blocks fio 3.33 switches an
        // unset generator to taus258, but only after the job's streams were
        // seeded as taus88: the switch shows from the next loop's seeding.
        let use64 = match rand.generator {
            FioGenerator::Tausworthe64 => true,
            FioGenerator::Default => blocks > u32::MAX as u64,
            _ => false,
        };
        let first64 = rand.generator == FioGenerator::Tausworthe64;
        let thread_number = rand.first_thread_number + job as u64;
        let lfsr = if rand.generator == FioGenerator::Lfsr {
            // init_random_map: one number per block of rw_min_bs; fio's
            // LFSR replaces its map.
            let seed = Streams::block_seed(rand, thread_number);
            let l = super::fio_lfsr::Lfsr::new(blocks, seed)?;
            self.map = None;
            Some((l, seed))
        } else {
            None
        };
        // __init_rand_distribution: ranges of the smallest size of reads
        // and writes; seeded from the file's name under randrepeat, else
        // from the offset stream's seed.
        let dist = if self.dist == super::Distribution::Uniform {
            None
        } else {
            let clone = (job as usize).min(rand.file_names.len().saturating_sub(1));
            let seed = if rand.reseed_each_loop {
                let name = rand.file_names.get(clone).map_or(&[][..], |n| n.as_bytes());
                super::fio_dist::jhash(name).wrapping_mul(thread_number as u32)
            } else {
                Streams::block_seed(rand, thread_number) as u32
            };
            let n = (self.count * self.unit).div_ceil(rw_min);
            super::fio_dist::FioDist::new(self.dist, n, seed)
        };
        let exact = Exact {
            dist,
            lfsr,
            seq_nr: self.rand_run.max(1),
            seq_left: 1,
            cfg: rand.clone(),
            thread_number,
            use64,
            trims: self.rw == Rw::Randtrim,
            streams: Streams::new(rand, thread_number, first64, self.rw == Rw::Randtrim),
            rwmix_ddir: 0,
            rwmix_issues: 0,
            io_issues: [0; 2],
            pos: [0; 2],
            min_bs: [0, 1].map(|d| self.sizes[d].min().max(1)),
            max_bs: [0, 1].map(|d| self.sizes[d].max().max(1)),
            ba: self.fio_ba(),
        };
        Some(exact)
    }

    /// fio's fill_io_u for one I/O from its streams: direction, offset
    /// (with the random map when there is one), length, and the map
    /// marked. `time_based`: a full map may be emptied and the offset
    /// drawn again, and a sequential job goes back to the region's start
    /// at its end; returns whether the map was emptied.
    pub(super) fn fio_fill(
        &mut self,
        x: &mut Exact,
        split_order: &[Vec<(u64, u32)>; 2],
        time_based: bool,
    ) -> Result<(NextIo, bool), Fail> {
        // get_rw_ddir
        let d = match self.rw {
            Rw::Randread | Rw::Read => 0,
            // A trim job's trims are sized as writes here (Dir::size_index).
            Rw::Randwrite | Rw::Write | Rw::Randtrim => 1,
            _ => {
                if x.io_issues[x.rwmix_ddir] >= x.rwmix_issues {
                    let v = x.streams.rwmix.between(1, 100);
                    let d = if v <= self.rwmixread as u64 { 0 } else { 1 };
                    if d != x.rwmix_ddir {
                        let pct = if d == 0 {
                            self.rwmixread as u64
                        } else {
                            100 - self.rwmixread as u64
                        };
                        x.rwmix_issues = x.io_issues[x.rwmix_ddir] * pct / 100;
                    }
                    x.rwmix_ddir = d;
                }
                x.rwmix_ddir
            }
        };
        let dir = match (d, x.trims) {
            (0, _) => Dir::Read,
            (_, true) => Dir::Trim,
            _ => Dir::Write,
        };
        let region = self.count * self.unit;
        let (min_bs, max_bs, ba) = (x.min_bs[d], x.max_bs[d], x.ba[d]);
        // last_block
        let lastb = (region - min_bs.saturating_sub(ba).min(region)) / ba;
        if lastb == 0 {
            return Err(Fail::Other);
        }
        let mut reset = false;
        // rw=randread:N (fio's ddir_seq_nr): one random offset, then N-1
        // on from the last end, not marked in the map (IO_U_F_BUSY_OK).
        let seq_run = self.rw.is_random() && x.seq_nr > 1 && {
            x.seq_left -= 1;
            if x.seq_left == 0 {
                x.seq_left = x.seq_nr;
            }
            x.seq_left != x.seq_nr
        };
        let sequential = !self.rw.is_random() || (seq_run && x.pos[d] < region);
        let b = if sequential {
            // get_next_seq_offset: on from this direction's last end; a
            // time_based job goes back to the start at the region's end.
            if x.pos[d] >= region && time_based {
                x.pos[d] = 0;
            }
            x.pos[d] / min_bs
        } else if let Some((first, n)) = self.fio_zone(x, d) {
            // __get_next_rand_offset_zoned(_abs): a zone from the zone
            // stream, a block inside it from the offset stream.
            x.streams.offset.scaled(n) + first
        } else {
            self.fio_rand_block(x, lastb, time_based, &mut reset)?
        };
        let off = if sequential { x.pos[d] } else { b * ba };
        if off >= region {
            return Err(Fail::Other);
        }
        let fits = |l: u64| off + l <= region;
        let len = if min_bs == max_bs {
            min_bs
        } else {
            if !fits(min_bs) {
                return Err(Fail::Other);
            }
            let rng = &mut x.streams.bsrange[d];
            let max_rand = rng.max();
            let mut tries = 0u32;
            loop {
                let r = rng.next();
                let mut l = if let BlockSizes::Split(_) = self.sizes[d] {
                    let mut perc = 0u64;
                    let mut l = 0;
                    for &(bs, p) in &split_order[d] {
                        if p == 0 {
                            continue;
                        }
                        l = bs;
                        perc += p as u64;
                        if r / perc <= max_rand / 100 && fits(l) {
                            break;
                        }
                    }
                    l
                } else {
                    min_bs + (max_bs as f64 * (r as f64 / rng.max_plus_one())) as u64
                };
                if min_bs.is_power_of_two() {
                    l &= !(min_bs - 1);
                } else {
                    l -= l % min_bs;
                }
                l = l.min(max_bs);
                if fits(l) {
                    break l;
                }
                tries += 1;
                if tries > 100_000 {
                    return Err(Fail::Other);
                }
            }
        };
        // mark_random_map: the run of free blocks from b, the I/O cut to it
        // (the map is fio's only where ba is the smallest size).
        let mut len = len;
        if let Some(map) = self.map.as_mut().filter(|_| !sequential) {
            let want = len.div_ceil(min_bs).max(1);
            let mut set = 0;
            while set < want && b + set < map.blocks && !map.is_set(b + set) {
                map.set(b + set);
                set += 1;
            }
            len = len.min(set.max(1) * min_bs);
        }
        x.io_issues[d] += 1;
        x.pos[d] = off + len;
        self.last_end = (off + len) / self.unit;
        Ok((
            NextIo {
                dir,
                block: self.first + off / self.unit,
                len: len as u32,
            },
            reset,
        ))
    }
}

impl Workload {
    /// random_distribution=zoned/zoned_abs: the zone (first block, blocks)
    /// an offset of direction `d` falls in, drawn as fio does
    /// (`rand_between(1, 100)` on its zone stream); `None` without zones.
    fn fio_zone(&self, x: &mut Exact, d: usize) -> Option<(u64, u64)> {
        let t = self.place.as_ref()?.zoned[d].as_ref()?;
        let v = x.streams.zone.between(1, 100) as usize;
        t.get(v - 1).or(t.last()).copied()
    }

    /// fio's get_next_rand_block: a block from the offset stream, moved
    /// to the next free one on a block done (random map); a time_based
    /// job whose map is full starts over on an empty map and draws again,
    /// once.
    fn fio_rand_block(
        &mut self,
        x: &mut Exact,
        lastb: u64,
        time_based: bool,
        reset: &mut bool,
    ) -> Result<u64, Fail> {
        loop {
            if let Some(d) = x.dist.as_mut() {
                // __get_next_rand_offset_zipf/pareto/gauss: no map.
                return Ok(d.next());
            }
            if let Some((l, seed)) = x.lfsr.as_mut() {
                if let Some(b) = l.next() {
                    return Ok(b);
                }
                if !time_based || *reset {
                    return Err(Fail::Offset);
                }
                l.reset(*seed);
                *reset = true;
                continue;
            }
            let b = x.streams.offset.scaled(lastb);
            let Some(map) = self.map.as_mut() else {
                return Ok(b);
            };
            if b >= map.blocks || !map.is_set(b) {
                return Ok(b);
            }
            if let Some(free) = map.next_free((b + 1) % map.blocks) {
                return Ok(free);
            }
            if !time_based || *reset {
                return Err(Fail::Offset);
            }
            map.reset();
            *reset = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio 3.33's first offset draws ("off rand") of its first job under
    /// its defaults, printed by `fio --name=x --filename=F --size=16m
    /// --rw=randread --bs=4k --number_ios=5 --debug=random`.
    #[test]
    fn offset_stream_is_fios() {
        let mut s = Streams::new(
            &FioRand {
                rand_seed: 0x89,
                first_thread_number: 1,
                offset_seed: OffsetSeed::All,
                reseed_each_loop: true,
                generator: FioGenerator::Default,
                verify: false,
                split_written: [Vec::new(), Vec::new()],
                file_names: Vec::new(),
                loop_ends_on_bytes: false,
            },
            1,
            false,
            false,
        );
        let got: Vec<u64> = (0..5).map(|_| s.offset.next()).collect();
        assert_eq!(
            got,
            [259043585, 3179521932, 3621444214, 2018697059, 1726199243]
        );
    }

    /// The same under random_generator=tausworthe64 (taus258): `fio
    /// --name=x --filename=F --size=16m --rw=randread --bs=4k
    /// --number_ios=3 --random_generator=tausworthe64 --debug=random`.
    #[test]
    fn taus258_offset_stream_is_fios() {
        let cfg = FioRand {
            rand_seed: 0x89,
            first_thread_number: 1,
            offset_seed: OffsetSeed::All,
            reseed_each_loop: true,
            generator: FioGenerator::Tausworthe64,
            verify: false,
            split_written: [Vec::new(), Vec::new()],
            file_names: Vec::new(),
            loop_ends_on_bytes: false,
        };
        let mut s = Streams::new(&cfg, 1, true, false);
        let got: Vec<u64> = (0..3).map(|_| s.offset.next()).collect();
        assert_eq!(
            got,
            [
                17311067694306724737,
                485009114434689783,
                1488059811897507987
            ]
        );
    }
}
