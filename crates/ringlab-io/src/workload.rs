//! The workload: which block each I/O touches and whether it reads or writes.

use clap::ValueEnum;
use rand::{Rng, RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

mod fio_dist;
mod fio_lfsr;
mod fio_map;
mod fio_rand;
pub use fio_map::FioPasses;
pub use fio_rand::{FioGenerator, FioRand, OffsetSeed};

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
    /// fio's trims: sequential, random, and trim-then-write of the same
    /// block (sequential and random). A block device is discarded
    /// (BLKDISCARD); a regular file gets a hole punched (`ringlab io`) or,
    /// as in fio 3.33, BLKDISCARD, which a file refuses (`ringlab fio`).
    Trim,
    Randtrim,
    Trimwrite,
    Randtrimwrite,
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
            Rw::Trim => "trim",
            Rw::Randtrim => "randtrim",
            Rw::Trimwrite => "trimwrite",
            Rw::Randtrimwrite => "randtrimwrite",
        }
    }

    pub fn is_random(self) -> bool {
        matches!(
            self,
            Rw::Randread | Rw::Randwrite | Rw::Randrw | Rw::Randtrim | Rw::Randtrimwrite
        )
    }

    /// Whether the pattern trims (discards or punches holes).
    pub fn trims(self) -> bool {
        matches!(
            self,
            Rw::Trim | Rw::Randtrim | Rw::Trimwrite | Rw::Randtrimwrite
        )
    }

    /// trimwrite and randtrimwrite: each block is trimmed, then written.
    fn trim_then_write(self) -> bool {
        matches!(self, Rw::Trimwrite | Rw::Randtrimwrite)
    }

    /// trimwrite and randtrimwrite (each block trimmed, then written).
    pub fn writes_after_trim(self) -> bool {
        self.trim_then_write()
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
            Rw::Trim | Rw::Randtrim | Rw::Trimwrite | Rw::Randtrimwrite => false,
        }
    }

    pub fn writes(self, rwmixread: u32) -> bool {
        match self {
            Rw::Read | Rw::Randread => false,
            Rw::Write | Rw::Randwrite => true,
            Rw::Randrw | Rw::Rw => rwmixread < 100,
            Rw::Nop => false,
            // A trim changes the data as a write does: the target is opened
            // for writing and guarded as for writes.
            Rw::Trim | Rw::Randtrim | Rw::Trimwrite | Rw::Randtrimwrite => true,
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
    /// A discard of the block (BLKDISCARD) or a hole punched in a file:
    /// sized as writes are (fio's bs=R,W,T: trims take the write size).
    Trim,
}

impl Dir {
    /// The index of the block sizes this direction uses: reads 0, writes
    /// and trims 1.
    #[inline]
    pub fn size_index(self) -> usize {
        matches!(self, Dir::Write | Dir::Trim) as usize
    }
}

/// One I/O the workload asks for: a direction, a block of the region and
/// a length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextIo {
    pub dir: Dir,
    /// Block number within the whole target (offset = block * the smallest
    /// block size).
    pub block: u64,
    /// Bytes to move (a multiple of the smallest block size; 0 for a NOP).
    pub len: u32,
}

/// How the length of each I/O of one direction is chosen: fio's `bs`,
/// `bsrange` and `bssplit`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockSizes {
    Fixed(u64),
    /// Uniform over the multiples of `lo` from `lo` to `hi` (fio's bsrange
    /// with blockalign, the default, equal to the smallest size).
    Range {
        lo: u64,
        hi: u64,
    },
    /// fio's bssplit: `(size, cumulative percent)`, smallest size first,
    /// the last cumulative percent 100.
    Split(Vec<(u64, u32)>),
}

impl BlockSizes {
    pub fn min(&self) -> u64 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Range { lo, .. } => *lo,
            BlockSizes::Split(v) => v.iter().map(|e| e.0).min().unwrap_or(0),
        }
    }

    pub fn max(&self) -> u64 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Range { hi, .. } => *hi,
            BlockSizes::Split(v) => v.iter().map(|e| e.0).max().unwrap_or(0),
        }
    }

    /// Every size an I/O may have (a range: its ends; every size is a
    /// multiple of the low end).
    pub fn sizes(&self) -> Vec<u64> {
        match self {
            BlockSizes::Fixed(b) => vec![*b],
            BlockSizes::Range { lo, hi } => vec![*lo, *hi],
            BlockSizes::Split(v) => v.iter().map(|e| e.0).collect(),
        }
    }

    /// In fio's syntax: `4k`, `4k-64k`, `4k/50:8k/30:64k/20`.
    pub fn describe(&self) -> String {
        let sz = size_short;
        match self {
            BlockSizes::Fixed(b) => sz(*b),
            BlockSizes::Range { lo, hi } => format!("{}-{}", sz(*lo), sz(*hi)),
            BlockSizes::Split(v) => {
                let mut prev = 0;
                v.iter()
                    .map(|&(b, cum)| {
                        let pct = cum - prev;
                        prev = cum;
                        format!("{}/{pct}", sz(b))
                    })
                    .collect::<Vec<_>>()
                    .join(":")
            }
        }
    }

    /// The length of the next I/O; draws from `rng` only when the size
    /// varies (a fixed size leaves the offset sequence as it was).
    #[inline]
    fn pick(&self, rng: &mut Xoshiro256PlusPlus) -> u64 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Range { lo, hi } => lo * rng.random_range(1..=hi / lo),
            BlockSizes::Split(v) => {
                let r = rng.random_range(0..100u32);
                v.iter().find(|e| r < e.1).map_or(v[v.len() - 1].0, |e| e.0)
            }
        }
    }
}

/// Parses fio's `bsrange` value for one direction: `LO-HI`.
pub fn parse_bsrange(text: &str) -> Result<BlockSizes, String> {
    let (lo, hi) = text
        .split_once('-')
        .ok_or_else(|| format!("{text}: a range is LO-HI, like 4k-64k"))?;
    let lo = parse_size(lo.trim())?;
    let hi = parse_size(hi.trim())?;
    if lo == 0 || hi < lo {
        return Err(format!("{text}: LO must be above zero and at most HI"));
    }
    if lo == hi {
        return Ok(BlockSizes::Fixed(lo));
    }
    // fio aligns to the low end (blockalign): sizes are its multiples.
    Ok(BlockSizes::Range {
        lo,
        hi: hi / lo * lo,
    })
}

/// Parses fio's `bssplit` value for one direction: `SIZE/PCT:SIZE/PCT...`;
/// sizes without a percentage share what the others leave of 100 equally
/// (as in fio), and the percentages must come to 100.
pub fn parse_bssplit(text: &str) -> Result<BlockSizes, String> {
    let mut given: Vec<(u64, Option<u32>)> = Vec::new();
    for part in text.split(':').map(str::trim).filter(|p| !p.is_empty()) {
        let (size, pct) = match part.split_once('/') {
            Some((s, p)) if !p.trim().is_empty() => {
                let p: u32 = p.trim().parse().ok().filter(|p| *p <= 100).ok_or_else(|| {
                    format!("{part}: the percentage is a whole number from 0 to 100")
                })?;
                (s, Some(p))
            }
            Some((s, _)) => (s, None),
            None => (part, None),
        };
        let size = parse_size(size.trim())?;
        if size == 0 {
            return Err(format!("{part}: a block size must be above zero"));
        }
        given.push((size, pct));
    }
    if given.is_empty() {
        return Err(format!(
            "{text}: no sizes; write SIZE/PCT:SIZE/PCT, like 4k/50:64k/50"
        ));
    }
    let set: u32 = given.iter().filter_map(|g| g.1).sum();
    let missing = given.iter().filter(|g| g.1.is_none()).count() as u32;
    if set > 100 || (missing == 0 && set != 100) {
        return Err(format!("{text}: the percentages come to {set}, not 100"));
    }
    let mut v: Vec<(u64, u32)> = Vec::with_capacity(given.len());
    let mut share_left = 100 - set;
    let mut missing_left = missing;
    for (size, pct) in given {
        let p = match pct {
            Some(p) => p,
            None => {
                let p = share_left / missing_left;
                share_left -= p;
                missing_left -= 1;
                p
            }
        };
        // The same size twice adds up.
        match v.iter_mut().find(|e| e.0 == size) {
            Some(e) => e.1 += p,
            None => v.push((size, p)),
        }
    }
    v.retain(|e| e.1 > 0);
    v.sort_by_key(|e| e.0);
    if v.len() == 1 {
        return Ok(BlockSizes::Fixed(v[0].0));
    }
    let min = v[0].0;
    if let Some(bad) = v.iter().find(|e| e.0 % min != 0) {
        return Err(format!(
            "{}: not a multiple of the smallest size {min}; ringlab places every I/O at a multiple of the smallest size (fio's default blockalign), so the others must be its multiples",
            bad.0
        ));
    }
    let mut cum = 0;
    for e in &mut v {
        cum += e.1;
        e.1 = cum;
    }
    Ok(BlockSizes::Split(v))
}

/// A size as fio users write it: `4k`, `1m`, or bytes.
pub fn size_short(b: u64) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{}m", b >> 20)
    } else if b >= 1024 && b.is_multiple_of(1024) {
        format!("{}k", b >> 10)
    } else {
        b.to_string()
    }
}

fn parse_size(text: &str) -> Result<u64, String> {
    ringlab_stats::units::parse_size(text).map_err(|e| e.to_string())
}

/// Generates the I/O of one job over blocks `[first, first + count)` of
/// the smallest block size `unit`: uniform random (aligned to `unit`) or
/// sequential with wrap-around; an I/O never runs past the region's end.
pub struct Workload {
    rw: Rw,
    rwmixread: u32,
    first: u64,
    count: u64,
    next_seq: u64,
    rng: Xoshiro256PlusPlus,
    /// Block sizes of reads and writes.
    sizes: [BlockSizes; 2],
    unit: u64,
    /// Blocks a read and a write cover when their size is fixed (0: it
    /// varies), so the common case divides nothing per I/O.
    fixed_span: [u64; 2],
    /// fio's random map: the blocks done in this pass (random patterns
    /// with --random-map).
    map: Option<RandomMap>,
    /// Bytes of one pass over the region (0: passes not tracked), the
    /// bytes issued in this pass, and whether a new pass began.
    pass_bytes: u64,
    pass_issued: u64,
    new_pass: bool,
    dist: Distribution,
    zipf: Option<rand_distr::Zipf<f64>>,
    /// fio's `rw=read:N`: blocks skipped (negative: back) after each
    /// sequential I/O.
    skip: i64,
    /// fio's `rw=randread:N`: a new random offset every N I/Os, the ones
    /// between follow on sequentially (0 and 1: every I/O).
    rand_run: u64,
    in_run: u64,
    last_end: u64,
    /// fio's fixed placement: zones, alignment, strided mode.
    place: Option<Box<Placement>>,
    /// trimwrite: the write that follows the last trim, on its block.
    then_write: Option<NextIo>,
    /// fio 3.33's rules for the random map (`ringlab fio`), and whether
    /// they ended the job.
    fio: Option<Box<fio_map::FioRules>>,
    ended: bool,
    /// The common case's figures ([`Simple`]), or `Some(None)` when the
    /// job is not that case; found at the first [`Workload::next_io`]
    /// (every option is set before it, by the `with_*` builders).
    simple: Option<Option<Simple>>,
}

/// Uniform random I/O of one direction and one size over the whole
/// region, with no placement, map, run or fio rule: [`Workload::next_io`]
/// then draws the offset and nothing else (the same draw, so the same
/// offsets, as the general path). The profile at depth 8 on zram had
/// next_io and its draw at 31 ns per request against t/io_uring's 13.
#[derive(Clone, Copy)]
struct Simple {
    dir: Dir,
    len: u64,
    span: u64,
    /// The places an I/O can start at: count - span + 1.
    places: u64,
}

/// A uniform draw in `0..n` (`n > 0`), the same one `rng.random_range(0..n)`
/// makes (rand 0.9's biased Canon method for u64, without its `unbiased`
/// feature: one widening multiply, a second only when the low half is
/// within `n` of overflowing), inlined: rand's own is an out-of-line call
/// of about 37 instructions a draw in the job loop (bench/io-instructions.sh).
/// The test `below_matches_random_range` holds it to rand's.
#[inline(always)]
fn below(rng: &mut Xoshiro256PlusPlus, n: u64) -> u64 {
    let m = u128::from(rng.next_u64()) * u128::from(n);
    let (mut hi, lo) = ((m >> 64) as u64, m as u64);
    if lo > n.wrapping_neg() {
        let hi2 = ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64;
        hi += u64::from(lo.checked_add(hi2).is_none());
    }
    hi
}

/// fio's options that place random and sequential offsets beyond the
/// distribution: blockalign, random_distribution=zoned, zonemode=strided.
#[derive(Default)]
struct Placement {
    /// Random offsets are multiples of this many blocks (fio's blockalign
    /// over the smallest size).
    align: u64,
    /// Per direction: 100 entries `(first, len)` in `align` units (fio's
    /// zone_state_index).
    zoned: [Option<Vec<(u64, u64)>>; 2],
    strided: Option<StridedState>,
}

/// Where a strided job is: its zone's first block, bytes done in it.
struct StridedState {
    size: u64,
    range: u64,
    step: u64,
    /// Blocks from the region's first to the end of the target (fio wraps
    /// at the file's end).
    wrap: u64,
    zone: u64,
    bytes: u64,
    pos: u64,
}

/// fio's random_distribution: how random offsets are drawn over the
/// region's blocks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    /// Every block alike (fio's `random`).
    Uniform,
    /// Zipf with this theta (fio's `zipf:THETA`).
    Zipf(f64),
    /// Pareto with this power (fio's `pareto:H`, 0 < H < 1).
    Pareto(f64),
    /// Normal around the middle, deviation this percent of the region
    /// (fio's `normal:P` / `gauss:P`).
    Normal(f64),
}

impl Distribution {
    /// fio's syntax: `random`, `zipf:1.2`, `pareto:0.9`, `normal:5`.
    pub fn parse(text: &str) -> Result<Distribution, String> {
        let (name, arg) = match text.split_once(':') {
            Some((n, a)) => (n.trim(), Some(a.trim())),
            None => (text.trim(), None),
        };
        let num = |a: Option<&str>| -> Result<f64, String> {
            a.and_then(|a| a.parse::<f64>().ok())
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("{text}: {name} needs a number after ':' ({name}:VALUE)"))
        };
        Ok(match name {
            "random" => Distribution::Uniform,
            "zipf" => {
                let t = num(arg)?;
                if t <= 0.0 || t == 1.0 {
                    return Err(format!(
                        "{text}: zipf's theta must be above 0 and not 1 (fio's rule)"
                    ));
                }
                Distribution::Zipf(t)
            }
            "pareto" => {
                let h = num(arg)?;
                if h <= 0.0 || h >= 1.0 {
                    return Err(format!("{text}: pareto's power must be between 0 and 1"));
                }
                Distribution::Pareto(h)
            }
            "normal" | "gauss" => {
                let p = num(arg)?;
                if !(0.0..=100.0).contains(&p) {
                    return Err(format!(
                        "{text}: the deviation is a percentage from 0 to 100"
                    ));
                }
                Distribution::Normal(p)
            }
            "zoned" | "zoned_abs" => {
                return Err(format!(
                    "{text}: zoned distributions are not supported by ringlab yet"
                ))
            }
            _ => {
                return Err(format!(
                    "{text}: fio's distributions are random, zipf:T, pareto:H, normal:P"
                ))
            }
        })
    }
}

/// Spreads a rank over the region, as fio's hash does (hot blocks are
/// not all at its start).
fn scatter(rank: u64, n: u64) -> u64 {
    let mut z = rank.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) % n.max(1)
}

/// fio's random map (its axmap): one bit per block of the region, set when
/// an I/O covers it. A random pick that lands on a block done moves on to
/// the next free one; an I/O stops at the first block already done; when
/// every block is done, a new pass begins.
pub struct RandomMap {
    bits: Vec<u64>,
    /// One bit per word of `bits`: set when that word is full.
    full: Vec<u64>,
    blocks: u64,
    free: u64,
}

impl RandomMap {
    pub fn new(blocks: u64) -> RandomMap {
        let words = blocks.div_ceil(64) as usize;
        let mut m = RandomMap {
            bits: vec![0; words],
            full: vec![0; words.div_ceil(64)],
            blocks,
            free: blocks,
        };
        m.clear_tail();
        m
    }

    /// Marks the bits past the last block as done, so words fill up.
    fn clear_tail(&mut self) {
        let used = self.blocks % 64;
        if used != 0 {
            let last = self.bits.len() - 1;
            self.bits[last] = !0u64 << used;
            if self.bits[last] == !0 {
                self.full[last / 64] |= 1 << (last % 64);
            }
        }
    }

    fn reset(&mut self) {
        self.bits.iter_mut().for_each(|w| *w = 0);
        self.full.iter_mut().for_each(|w| *w = 0);
        self.free = self.blocks;
        self.clear_tail();
    }

    fn is_set(&self, b: u64) -> bool {
        self.bits[(b / 64) as usize] & (1 << (b % 64)) != 0
    }

    fn set(&mut self, b: u64) {
        let w = (b / 64) as usize;
        self.bits[w] |= 1 << (b % 64);
        self.free -= 1;
        if self.bits[w] == !0 {
            self.full[w / 64] |= 1 << (w % 64);
        }
    }

    /// The first free block at or after `from`, wrapping to 0.
    fn next_free(&self, from: u64) -> Option<u64> {
        if self.free == 0 {
            return None;
        }
        let start = (from / 64) as usize;
        let words = self.bits.len();
        // The word of `from`, above it first.
        let w = self.bits[start] | ((1u64 << (from % 64)) - 1);
        if w != !0 {
            return Some(start as u64 * 64 + (!w).trailing_zeros() as u64);
        }
        let mut i = (start + 1) % words;
        let mut seen = 0;
        while seen < words {
            // 64 full words at a time through the summary.
            if i.is_multiple_of(64) && i + 64 <= words && self.full[i / 64] == !0 {
                i = (i + 64) % words;
                seen += 64;
                continue;
            }
            let w = self.bits[i];
            if w != !0 {
                return Some(i as u64 * 64 + (!w).trailing_zeros() as u64);
            }
            i = (i + 1) % words;
            seen += 1;
        }
        // Found nothing in a whole turn (cannot happen with free > 0).
        (0..self.blocks).find(|&b| !self.is_set(b))
    }

    /// Takes up to `span` blocks from a random pick `pick`: the first free
    /// block at or after it, and the free blocks after that one (an I/O
    /// never covers a block done, nor runs past the region). Returns the
    /// first block and how many were taken.
    pub fn claim(&mut self, pick: u64, span: u64) -> (u64, u64) {
        let first = match self.next_free(pick) {
            Some(b) => b,
            None => {
                self.reset();
                pick
            }
        };
        let mut n = 0;
        while n < span && first + n < self.blocks && !self.is_set(first + n) {
            self.set(first + n);
            n += 1;
        }
        (first, n.max(1))
    }
}

impl Workload {
    /// With fio's random map (random patterns only; sequential ones touch
    /// each block once per pass anyway).
    pub fn with_random_map(mut self, on: bool) -> Workload {
        if on && self.rw.is_random() {
            self.map = Some(RandomMap::new(self.count));
        }
        self
    }

    /// `seed` is the run's seed; each job gets its own stream from it.
    pub fn new(rw: Rw, rwmixread: u32, first: u64, count: u64, seed: u64, job: u32) -> Workload {
        Workload::with_sizes(
            rw,
            rwmixread,
            (first, count),
            [BlockSizes::Fixed(1), BlockSizes::Fixed(1)],
            1,
            seed,
            job,
        )
    }

    /// As [`Workload::new`], with the block sizes of reads and writes;
    /// blocks are `unit` bytes (the smallest size, which divides all).
    pub fn with_sizes(
        rw: Rw,
        rwmixread: u32,
        (first, count): (u64, u64),
        sizes: [BlockSizes; 2],
        unit: u64,
        seed: u64,
        job: u32,
    ) -> Workload {
        let span = sizes.iter().map(|s| s.max() / unit).max().unwrap_or(1);
        assert!(
            count >= span.max(1),
            "a job's region holds the largest block"
        );
        let stream = seed ^ (job as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Workload {
            rw,
            rwmixread,
            first,
            count,
            next_seq: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(stream),
            fixed_span: [0, 1].map(|d| match sizes[d] {
                BlockSizes::Fixed(b) => (b / unit).max(1),
                _ => 0,
            }),
            sizes,
            unit,
            map: None,
            pass_bytes: 0,
            pass_issued: 0,
            new_pass: false,
            dist: Distribution::Uniform,
            zipf: None,
            skip: 0,
            rand_run: 0,
            in_run: 0,
            last_end: 0,
            place: None,
            then_write: None,
            fio: None,
            ended: false,
            simple: None,
        }
    }

    /// fio's blockalign: random offsets at multiples of `align` blocks.
    pub fn with_align(mut self, align: u64) -> Workload {
        if align > 1 {
            self.place.get_or_insert_with(Default::default).align = align;
        }
        self
    }

    /// fio's zoned distributions: each random offset first picks a zone by
    /// its share of the accesses, then a block uniformly inside it.
    pub fn with_zoned(
        mut self,
        split: Option<&crate::zones::ZonedSplit>,
    ) -> Result<Workload, String> {
        let Some(split) = split else { return Ok(self) };
        let p = self.place.get_or_insert_with(Default::default);
        let align = p.align.max(1);
        let lastb = self.count / align;
        for d in 0..2 {
            p.zoned[d] = split.table(d, lastb, align * self.unit)?;
        }
        Ok(self)
    }

    /// fio's zonemode=strided; `wrap`: blocks from the region's first to
    /// the target's end.
    pub fn with_strided(mut self, s: Option<crate::zones::Strided>, wrap: u64) -> Workload {
        let Some(s) = s else { return self };
        let unit = self.unit;
        let range = (s.range / unit).max(1);
        if let Some(map) = self.map.as_mut() {
            // fio's random map covers one zone, and is cleared at each.
            *map = RandomMap::new(range.min(self.count));
        }
        self.place.get_or_insert_with(Default::default).strided = Some(StridedState {
            size: s.size,
            range,
            step: range + s.skip / unit,
            wrap: wrap.max(1),
            zone: 0,
            bytes: 0,
            pos: 0,
        });
        self
    }

    /// The offset of the next I/O under fio's placement options: `None`
    /// when none applies to it (the ordinary draw stands).
    fn placed(&mut self, dir: Dir, span: u64) -> Option<u64> {
        let p = self.place.as_mut()?;
        let align = p.align.max(1);
        if let Some(z) = p.strided.as_mut() {
            // setup_strided_zone_mode: on to the next zone after `size`
            // bytes, wrapping at the target's end.
            if z.bytes >= z.size {
                z.bytes = 0;
                z.zone += z.step;
                if z.zone + span > z.wrap {
                    z.zone = 0;
                }
                z.pos = z.zone;
                if let Some(m) = self.map.as_mut() {
                    m.reset();
                }
            }
            let end = (z.zone + z.range).min(z.wrap);
            if z.pos + span > end {
                z.pos = z.zone;
            }
            // The blocks of this zone an I/O may start at.
            let room = end.saturating_sub(z.zone).max(span) - span + 1;
            let b = if self.rw.is_random() {
                let pick = self.rng.random_range(0..room);
                let rel = match self.map.as_mut() {
                    Some(m) => m.claim(pick.min(m.blocks - 1), span).0,
                    None => pick / align * align,
                };
                z.zone + rel.min(room - 1)
            } else {
                let b = z.pos;
                z.pos += span;
                b
            };
            z.bytes += span * self.unit;
            return Some(b);
        }
        if !self.rw.is_random() || self.map.is_some() {
            return None;
        }
        let d = dir.size_index();
        let last = self.count - span;
        if p.zoned[d].is_some() {
            return Some(self.zoned_pick(d, span));
        }
        if align > 1 {
            let n = last / align + 1;
            return Some(self.rng.random_range(0..n) * align);
        }
        None
    }

    /// fio's zoned draw: a zone by its share of the accesses (1..=100),
    /// then a block inside it; at most `count - span`.
    fn zoned_pick(&mut self, d: usize, span: u64) -> u64 {
        let last = self.count - span;
        let Some(p) = self.place.as_ref() else {
            return self.draw(last + 1);
        };
        let align = p.align.max(1);
        let Some(t) = p.zoned[d].as_ref() else {
            return self.draw(last + 1);
        };
        let v = self.rng.random_range(0..t.len());
        let (first, len) = t[v];
        let off = if len > 0 {
            self.rng.random_range(0..len)
        } else {
            0
        };
        ((first + off) * align).min(last / align * align)
    }

    /// fio's offset modifiers: `skip` blocks after each sequential I/O, or
    /// a new random offset every `rand_run` I/Os.
    pub fn with_modifier(mut self, skip: i64, rand_run: u64) -> Workload {
        self.skip = skip;
        self.rand_run = rand_run;
        self
    }

    /// Draws random offsets from `dist` (random patterns only).
    pub fn with_distribution(mut self, dist: Distribution) -> Workload {
        self.dist = dist;
        if let Distribution::Zipf(t) = dist {
            self.zipf = rand_distr::Zipf::new(self.count as f64, t).ok();
        }
        self
    }

    /// A random block in `[0, n)` from the distribution.
    fn draw(&mut self, n: u64) -> u64 {
        use rand_distr::Distribution as _;
        match self.dist {
            Distribution::Uniform => self.rng.random_range(0..n),
            Distribution::Zipf(_) => match &self.zipf {
                Some(z) => {
                    let rank = z.sample(&mut self.rng) as u64;
                    scatter(rank.saturating_sub(1), n)
                }
                None => self.rng.random_range(0..n),
            },
            Distribution::Pareto(h) => {
                let pow = h.ln() / (1.0 - h).ln();
                let r: f64 = self.rng.random();
                let rank = ((n.saturating_sub(1)) as f64 * r.powf(pow)) as u64;
                scatter(rank, n)
            }
            Distribution::Normal(pct) => {
                let mid = n as f64 / 2.0;
                let dev = (n as f64 * pct / 100.0).max(f64::MIN_POSITIVE);
                let x = rand_distr::Normal::new(mid, dev)
                    .map(|d| d.sample(&mut self.rng))
                    .unwrap_or(mid);
                (x.max(0.0) as u64).min(n - 1)
            }
        }
    }

    /// Tracks passes over the region (fio's loop of `size` bytes).
    pub fn with_passes(mut self, on: bool) -> Workload {
        if on {
            self.pass_bytes = self.count * self.unit;
        }
        self
    }

    /// Whether a new pass over the region began since the last call.
    pub fn take_new_pass(&mut self) -> bool {
        std::mem::take(&mut self.new_pass)
    }

    #[inline(always)]
    fn count_pass(&mut self, len: u64) {
        if self.pass_bytes == 0 {
            return;
        }
        if self.pass_issued >= self.pass_bytes {
            self.pass_issued -= self.pass_bytes;
            self.new_pass = true;
        }
        self.pass_issued += len;
    }

    /// [`Simple`]'s figures, when the job is that case.
    #[cold]
    fn simple_case(&self) -> Option<Simple> {
        let dir = match self.rw {
            Rw::Randread => Dir::Read,
            Rw::Randwrite => Dir::Write,
            _ => return None,
        };
        let d = dir.size_index();
        let BlockSizes::Fixed(len) = self.sizes[d] else {
            return None;
        };
        let span = self.fixed_span[d];
        let plain = self.rand_run <= 1
            && self.place.is_none()
            && self.map.is_none()
            && self.fio.is_none()
            && self.dist == Distribution::Uniform
            && span > 0
            && span <= self.count;
        plain.then_some(Simple {
            dir,
            len,
            span,
            places: self.count - span + 1,
        })
    }

    /// The next I/O. The [`Simple`] case is drawn inline, in the caller's
    /// loop; every other one out of line.
    #[inline(always)]
    pub fn next_io(&mut self) -> NextIo {
        if let Some(Some(s)) = self.simple {
            return self.draw_simple(s);
        }
        self.next_io_general()
    }

    #[inline(always)]
    fn draw_simple(&mut self, s: Simple) -> NextIo {
        let rel = below(&mut self.rng, s.places);
        self.count_pass(s.len);
        self.last_end = rel + s.span;
        NextIo {
            dir: s.dir,
            block: self.first + rel,
            len: s.len as u32,
        }
    }

    #[inline(never)]
    fn next_io_general(&mut self) -> NextIo {
        let simple = match self.simple {
            Some(s) => s,
            None => *self.simple.insert(self.simple_case()),
        };
        if let Some(s) = simple {
            return self.draw_simple(s);
        }
        let dir = match self.rw {
            Rw::Read | Rw::Randread => Dir::Read,
            Rw::Write | Rw::Randwrite => Dir::Write,
            Rw::Nop => Dir::Nop,
            Rw::Trim | Rw::Randtrim => Dir::Trim,
            Rw::Trimwrite | Rw::Randtrimwrite => match self.then_write.take() {
                Some(io) => return io,
                None => Dir::Trim,
            },
            _ if self.rw.is_mixed() => {
                if self.rng.random_range(0..100) < self.rwmixread {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
            _ => unreachable!("every Rw is handled"),
        };
        // The length, and the blocks the I/O covers: it starts at most at
        // count - span.
        let (len, span) = match dir {
            Dir::Nop => (0, 1),
            _ => {
                let d = dir.size_index();
                let len = self.sizes[d].pick(&mut self.rng);
                match self.fixed_span[d] {
                    0 => (len, len / self.unit),
                    span => (len, span),
                }
            }
        };
        // rw=randread:N: the I/Os between two random offsets follow on.
        if self.rand_run > 1 && self.fio.as_ref().is_some_and(|f| f.exact.is_some()) {
            // fio's streams follow rw=randread:N themselves.
            return self.fio_next(dir, len);
        }
        let follow = self.rw.is_random() && self.rand_run > 1 && {
            self.in_run += 1;
            if self.in_run >= self.rand_run {
                self.in_run = 0;
            }
            self.in_run != 1
        };
        // One branch when no placement option is given (the common case).
        let placed = if follow || self.place.is_none() {
            None
        } else if self.fio.as_ref().is_some_and(|f| f.exact.is_some()) {
            // fio's streams place zoned and block-aligned offsets themselves.
            return self.fio_next(dir, len);
        } else {
            self.placed(dir, span)
        };
        let rel = if let Some(b) = placed {
            b
        } else if follow && self.last_end + span <= self.count {
            let b = self.last_end;
            if let Some(map) = self.map.as_mut() {
                let (first, _) = map.claim(b, span);
                first
            } else {
                b
            }
        } else if self.map.is_some() {
            if self.fio.is_some() {
                return self.fio_next(dir, len);
            }
            let d = dir.size_index();
            let zoned = self.place.as_ref().is_some_and(|p| p.zoned[d].is_some());
            let pick = if zoned {
                self.zoned_pick(d, 1)
            } else {
                self.draw(self.count)
            };
            let Some(map) = self.map.as_mut() else {
                unreachable!("checked above")
            };
            let (first, n) = map.claim(pick, span);
            if n < span {
                // fio cuts the I/O at the first block already done.
                self.count_pass(n * self.unit);
                let io = NextIo {
                    dir,
                    block: self.first + first,
                    len: (n * self.unit) as u32,
                };
                if self.rw.trim_then_write() {
                    self.then_write = Some(NextIo {
                        dir: Dir::Write,
                        ..io
                    });
                }
                return io;
            }
            first
        } else if self.rw.is_random() {
            if self.fio.is_some() {
                // fio's streams without its map (norandommap).
                return self.fio_next(dir, len);
            }
            self.draw(self.count - span + 1)
        } else {
            if self.fio.is_some() {
                // fio's streams for a sequential job (mixed or sizes vary).
                return self.fio_next(dir, len);
            }
            let mut b = self.next_seq;
            if b + span > self.count {
                b = 0;
            }
            self.next_seq = if self.skip != 0 {
                // fio's rw=read:N: on past N bytes (back if negative),
                // wrapping around the region.
                let places = (self.count - span + 1) as i64;
                ((b + span) as i64 + self.skip).rem_euclid(places) as u64
            } else if b + span == self.count {
                0
            } else {
                b + span
            };
            b
        };
        self.count_pass(len);
        self.last_end = rel + span;
        let io = NextIo {
            dir,
            block: self.first + rel,
            len: len as u32,
        };
        if dir == Dir::Trim && self.rw.trim_then_write() {
            self.then_write = Some(NextIo {
                dir: Dir::Write,
                ..io
            });
        }
        io
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(w: &mut Workload, n: usize) -> Vec<NextIo> {
        (0..n).map(|_| w.next_io()).collect()
    }

    #[test]
    fn below_matches_random_range() {
        // Small, odd, power-of-two and huge ranges; the huge ones take the
        // second multiply often (the low half lands within n of overflow).
        let ranges = [
            1u64,
            2,
            3,
            7,
            1000,
            4096,
            262_143,
            (1 << 40) + 12_345,
            u64::MAX / 3,
            u64::MAX - 1,
            u64::MAX,
        ];
        for (seed, &n) in ranges.iter().enumerate() {
            let mut a = Xoshiro256PlusPlus::seed_from_u64(seed as u64);
            let mut b = a.clone();
            for _ in 0..20_000 {
                assert_eq!(below(&mut a, n), b.random_range(0..n), "range {n}");
            }
        }
    }

    #[test]
    fn the_simple_case_draws_what_the_general_path_draws() {
        for rw in [Rw::Randread, Rw::Randwrite] {
            let make = || {
                Workload::with_sizes(
                    rw,
                    50,
                    (7, 1000),
                    [BlockSizes::Fixed(8192), BlockSizes::Fixed(16384)],
                    4096,
                    42,
                    3,
                )
                .with_passes(true)
            };
            let (mut fast, mut general) = (make(), make());
            general.simple = Some(None);
            let mut passes = 0;
            for _ in 0..5000 {
                let io = fast.next_io();
                assert_eq!(io, general.next_io(), "{rw:?}");
                assert!(io.block >= 7 && io.block + io.len as u64 / 4096 <= 1007);
                let new_pass = fast.take_new_pass();
                assert_eq!(new_pass, general.take_new_pass());
                passes += new_pass as u32;
            }
            assert!(matches!(fast.simple, Some(Some(_))), "{rw:?}");
            assert!(passes > 5, "{passes} passes");
        }
        // Not the simple case: a mix, a distribution, a run, a map.
        for w in [
            Workload::new(Rw::Randrw, 50, 0, 100, 1, 0),
            Workload::new(Rw::Read, 50, 0, 100, 1, 0),
            Workload::new(Rw::Randread, 50, 0, 100, 1, 0)
                .with_distribution(Distribution::Zipf(1.2)),
            Workload::new(Rw::Randread, 50, 0, 100, 1, 0).with_modifier(0, 4),
            Workload::new(Rw::Randread, 50, 0, 100, 1, 0).with_random_map(true),
        ] {
            assert!(w.simple_case().is_none());
        }
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
    fn bssplit_sizes_follow_the_split_and_stay_in_the_region() {
        let split = parse_bssplit("4k/50:8k/30:64k/20").unwrap();
        assert_eq!(
            split,
            BlockSizes::Split(vec![(4096, 50), (8192, 80), (65536, 100)])
        );
        assert_eq!(split.describe(), "4k/50:8k/30:64k/20");
        // 100 blocks of 4k: a 64k I/O (16 blocks) starts at block 84 at most.
        let mut w = Workload::with_sizes(
            Rw::Randrw,
            50,
            (10, 100),
            [split.clone(), split],
            4096,
            9,
            0,
        );
        let mut n = [0u32; 3];
        for io in take(&mut w, 100_000) {
            let i = match io.len {
                4096 => 0,
                8192 => 1,
                65536 => 2,
                other => panic!("size {other}"),
            };
            n[i] += 1;
            assert!(io.block >= 10);
            assert!(
                (io.block - 10) * 4096 + io.len as u64 <= 100 * 4096,
                "{io:?}"
            );
        }
        // 50/30/20 of 100,000, within 5 sigma (about 800).
        assert!((49_200..=50_800).contains(&n[0]), "{n:?}");
        assert!((29_200..=30_800).contains(&n[1]), "{n:?}");
        assert!((19_200..=20_800).contains(&n[2]), "{n:?}");
    }

    #[test]
    fn bsrange_is_uniform_over_multiples_of_lo() {
        let r = parse_bsrange("4k-16k").unwrap();
        assert_eq!(
            r,
            BlockSizes::Range {
                lo: 4096,
                hi: 16384
            }
        );
        assert_eq!(parse_bsrange("4k-4k").unwrap(), BlockSizes::Fixed(4096));
        assert_eq!(parse_bsrange("4k-10k").unwrap().max(), 8192);
        let mut w = Workload::with_sizes(Rw::Read, 100, (0, 64), [r.clone(), r], 4096, 3, 0);
        let mut n = [0u32; 4];
        let mut next = 0;
        for io in take(&mut w, 40_000) {
            n[(io.len / 4096 - 1) as usize] += 1;
            // Sequential: each I/O starts where the last ended, or wraps.
            assert!(io.block == next || io.block == 0, "{io:?} {next}");
            assert!(io.block * 4096 + io.len as u64 <= 64 * 4096);
            next = io.block + io.len as u64 / 4096;
        }
        for c in n {
            assert!((9_500..=10_500).contains(&c), "{n:?}");
        }
    }

    #[test]
    fn bssplit_fills_missing_percentages_and_refuses_bad_ones() {
        assert_eq!(
            parse_bssplit("4k/50:8k:16k").unwrap(),
            BlockSizes::Split(vec![(4096, 50), (8192, 75), (16384, 100)])
        );
        assert_eq!(parse_bssplit("4k/100").unwrap(), BlockSizes::Fixed(4096));
        assert!(parse_bssplit("4k/50:8k/30")
            .unwrap_err()
            .contains("come to 80"));
        assert!(parse_bssplit("4k/60:8k/60")
            .unwrap_err()
            .contains("come to 120"));
        assert!(parse_bssplit("4k/50:6k/50")
            .unwrap_err()
            .contains("multiple"));
        assert!(parse_bssplit("4k/x").is_err());
    }

    #[test]
    fn random_map_reads_each_block_once_per_pass() {
        let mut w = Workload::new(Rw::Randread, 100, 10, 1000, 7, 0).with_random_map(true);
        for _pass in 0..3 {
            let mut seen = std::collections::HashSet::new();
            for io in take(&mut w, 1000) {
                assert!(io.block >= 10 && io.block < 1010);
                assert!(seen.insert(io.block), "block {} twice in a pass", io.block);
            }
            assert_eq!(seen.len(), 1000);
        }
    }

    #[test]
    fn random_map_cuts_ios_at_blocks_done() {
        let sizes = [
            BlockSizes::Range { lo: 1, hi: 8 },
            BlockSizes::Range { lo: 1, hi: 8 },
        ];
        let mut w = Workload::with_sizes(Rw::Randread, 100, (0, 4096), sizes, 1, 3, 0)
            .with_random_map(true);
        let mut covered = vec![0u32; 4096];
        let mut total = 0;
        while total < 4096 {
            let io = w.next_io();
            for b in io.block..io.block + io.len as u64 {
                covered[b as usize] += 1;
            }
            total += io.len as u64;
        }
        assert!(covered.iter().all(|&c| c == 1));
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
