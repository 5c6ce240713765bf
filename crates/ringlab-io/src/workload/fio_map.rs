//! fio 3.33's rules for its random map (io_u.c), for `ringlab fio`.
//!
//! They differ from `ringlab io`'s random map only when block sizes differ
//! between reads and writes, or vary (bsrange, bssplit):
//!
//! - The map (fio's axmap) has one bit per block of the smallest size over
//!   both directions (rw_min_bs), but a direction picks its random block in
//!   units of its own smallest size (last_block: size / ba[ddir], ba being
//!   min_bs[ddir] under the map), checks and marks the map at that block
//!   number, and its offset is that number times its own smallest size
//!   (mark_random_map indexes by offset / min_bs[ddir]). With reads of 64k
//!   and writes of 1m, a write's block 3 is the map's bit 3, the same bit a
//!   64k read at 192k sets.
//! - A pick on a block done moves to the next free bit after it (wrapping,
//!   axmap_next_free); an offset past the region ends the pass
//!   (get_next_offset: offset >= io_size), as does a map with no free bit.
//! - The length is drawn after the offset and must fit before the region's
//!   end (get_next_buflen: io_u_fits; a bssplit entry that does not fit
//!   falls through to the next one in fio's order, by percentage; when none
//!   fits, a new draw).
//! - An I/O marks the run of free bits from its block (axmap_set_nr stops
//!   at the first bit set) and is cut to it.
//! - When an I/O cannot be placed the pass ends; the job ends with it unless
//!   fio would start another pass (keep_running: time_based, loops left,
//!   or an io_size given with at least the largest block left to do); a new
//!   pass starts on an empty map (the file is re-opened).
//!
//! Under `ringlab fio` the direction, offset and length of each I/O come
//! from fio's own streams and seeds (fio_rand.rs: `FioRules::exact`), so a
//! job issues fio's I/O sequence, I/O for I/O; its fill follows the rules
//! above, and a new pass is also a new loop for fio (streams seeded again
//! under randrepeat). Without them (a job fio_rand.rs does not cover:
//! strided zones, trims, `rw=read:N`), directions keep the
//! workload's own draw (rwmixread per I/O) and offsets and lengths
//! ringlab's generator, so the work matches fio's on average only.

use super::{BlockSizes, Dir, NextIo, Workload};

/// How a job under fio's rules goes on when an I/O cannot be placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FioPasses {
    /// No byte bound (time_based): a new pass every time.
    Always,
    /// A byte bound: `loops` passes at least; more while fio's io_size was
    /// given (`explicit`) and at least the largest block of `io_size` (one
    /// loop's bytes) is left.
    Bounded {
        loops: u64,
        io_size: u64,
        explicit: bool,
    },
}

/// The state of fio's rules in one workload (boxed, off the hot path).
pub(super) struct FioRules {
    passes: FioPasses,
    /// Per direction: its smallest size in bytes (min_bs[ddir]); a
    /// direction's block numbers count in it.
    min_bs: [u64; 2],
    /// Per direction with a bssplit: (size, percent) in fio's order
    /// (sorted by percentage, ties in the order given by size).
    split_order: [Vec<(u64, u32)>; 2],
    /// The largest size of any direction (td_max_bs).
    max_bs: u64,
    /// The next I/O, made one ahead so the job knows it ended before it
    /// asks for one more; and whether it began a pass.
    pending: Option<(NextIo, bool)>,
    primed: bool,
    /// Passes ended because an I/O could not be placed.
    passes_ended: u64,
    /// Bytes handed out.
    issued: u64,
    /// Bytes handed out in this pass.
    pass_issued: u64,
    /// fio's own streams (fio_rand.rs), when they make this job's I/O.
    pub(super) exact: Option<Box<super::fio_rand::Exact>>,
}

impl FioRules {
    pub(super) fn new(passes: FioPasses, sizes: &[BlockSizes; 2], unit: u64) -> FioRules {
        let order = |s: &BlockSizes| match s {
            BlockSizes::Split(v) => {
                let mut prev = 0;
                let mut e: Vec<(u64, u32)> = v
                    .iter()
                    .map(|&(b, cum)| {
                        let p = cum - prev;
                        prev = cum;
                        (b, p)
                    })
                    .collect();
                e.sort_by_key(|x| x.1);
                e
            }
            _ => Vec::new(),
        };
        FioRules {
            passes,
            min_bs: [0, 1].map(|d| sizes[d].min().max(unit).max(1)),
            split_order: [order(&sizes[0]), order(&sizes[1])],
            max_bs: sizes[0].max().max(sizes[1].max()),
            pending: None,
            primed: false,
            passes_ended: 0,
            issued: 0,
            pass_issued: 0,
            exact: None,
        }
    }
}

impl FioRules {
    /// Orders each direction's bssplit entries as fio does: by percentage,
    /// equal ones in the order `written` gives (sizes; a size not in it
    /// goes after, by size).
    pub(super) fn order_as_written(&mut self, written: &[Vec<u64>; 2]) {
        for (order, w) in self.split_order.iter_mut().zip(written) {
            let at = |b: u64| w.iter().position(|&x| x == b).unwrap_or(usize::MAX);
            order.sort_by_key(|e| (e.1, at(e.0), e.0));
        }
    }
}

impl Workload {
    /// Draws this job's I/O from fio's streams (`ringlab fio`), job `job`
    /// of its numjobs clones; `passes`: how fio goes on when an I/O cannot
    /// be made (the job's fio rules, set with or without the random map).
    pub fn with_fio_rand(
        mut self,
        passes: Option<FioPasses>,
        rand: Option<super::fio_rand::FioRand>,
        job: u32,
    ) -> Workload {
        let (Some(rand), Some(passes)) = (rand, passes) else {
            return self;
        };
        if !self.fio_streams_apply(&rand) {
            return self;
        }
        if self.fio.is_none() {
            // norandommap: fio's rules without the map.
            self.fio = Some(Box::new(FioRules::new(passes, &self.sizes, self.unit)));
        }
        let Some(exact) = self.fio_exact(&rand, job) else {
            return self;
        };
        if let Some(f) = self.fio.as_mut() {
            f.order_as_written(&rand.split_written);
            f.exact = Some(Box::new(exact));
        }
        self
    }
}

impl Workload {
    /// Under fio's rules (`ringlab fio`); see the module's notes.
    pub fn with_fio_rules(mut self, passes: Option<FioPasses>) -> Workload {
        if let (Some(p), Some(_)) = (passes, self.map.as_ref()) {
            // fio's axmap: one bit per block of the smallest size of any
            // direction (rw_min_bs), whether the job issues it or not.
            let rw_min = self.sizes[0].min().min(self.sizes[1].min()).max(1);
            self.map = Some(super::RandomMap::new(
                (self.count * self.unit / rw_min).max(1),
            ));
            self.fio = Some(Box::new(FioRules::new(p, &self.sizes, self.unit)));
        }
        self
    }

    /// Whether the job has no I/O left under fio's rules (never without
    /// them).
    #[inline]
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The next I/O under fio's rules, from this call's direction and
    /// drawn length; returns the one made before and makes the next.
    #[cold]
    pub(super) fn fio_next(&mut self, dir: Dir, len: u64) -> NextIo {
        let Some(mut f) = self.fio.take() else {
            unreachable!("fio_next is called under fio's rules only")
        };
        if !f.primed {
            f.primed = true;
            f.pending = self.fio_make(&mut f, dir, len);
            if f.exact.is_some() {
                // fio's streams draw the direction and length themselves.
                return self.fio_hand_out(f, dir, len);
            }
            let (d, l) = self.fio_draw();
            return self.fio_hand_out(f, d, l);
        }
        self.fio_hand_out(f, dir, len)
    }

    fn fio_hand_out(&mut self, mut f: Box<FioRules>, dir: Dir, len: u64) -> NextIo {
        let out = f.pending.take();
        let io = match out {
            Some((io, new_pass)) => {
                f.issued += io.len as u64;
                f.pass_issued = if new_pass { 0 } else { f.pass_issued } + io.len as u64;
                // Passes are told only when tracked (invalidate=1).
                self.new_pass |= new_pass && self.pass_bytes > 0;
                f.pending = self.fio_make(&mut f, dir, len);
                io
            }
            // Asked again after the end: the same last answer, never
            // issued (the worker checks `ended` first).
            None => NextIo {
                dir,
                block: self.first,
                len: 0,
            },
        };
        self.ended = f.pending.is_none();
        self.fio = Some(f);
        io
    }

    /// A direction and a length as next_io draws them.
    fn fio_draw(&mut self) -> (Dir, u64) {
        use rand::Rng;
        let dir = match self.rw {
            super::Rw::Read | super::Rw::Randread => Dir::Read,
            super::Rw::Write | super::Rw::Randwrite => Dir::Write,
            // trimwrite keeps ringlab's map (plan.rs): its write follows
            // each trim on the same block.
            super::Rw::Trim | super::Rw::Randtrim => Dir::Trim,
            _ => {
                if self.rng.random_range(0..100) < self.rwmixread {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
        };
        let d = dir.size_index();
        (dir, self.sizes[d].pick(&mut self.rng))
    }

    /// Places one I/O; at the end of a pass starts another when fio would,
    /// else `None` (the job ends).
    fn fio_make(&mut self, f: &mut FioRules, dir: Dir, len: u64) -> Option<(NextIo, bool)> {
        if let Some(mut x) = f.exact.take() {
            let out = self.fio_make_exact(f, &mut x);
            f.exact = Some(x);
            return out;
        }
        if let Some(io) = self.fio_place(f, dir, len) {
            return Some((io, false));
        }
        if !Self::fio_again(f) {
            return None;
        }
        if let Some(m) = self.map.as_mut() {
            m.reset();
        }
        self.fio_place(f, dir, len).map(|io| (io, true))
    }

    /// Whether fio starts another loop after one ended on an I/O that
    /// could not be made (keep_running).
    fn fio_again(f: &mut FioRules) -> bool {
        match f.passes {
            FioPasses::Always => true,
            FioPasses::Bounded {
                loops,
                io_size,
                explicit,
            } => {
                f.passes_ended += 1;
                f.passes_ended < loops
                    || (explicit && io_size > f.issued && io_size - f.issued >= f.max_bs)
            }
        }
    }

    /// As fio_make, from fio's own streams: a failed fill ends fio's loop;
    /// the next loop starts on an empty map with its streams seeded again
    /// (randrepeat).
    fn fio_make_exact(
        &mut self,
        f: &mut FioRules,
        x: &mut super::fio_rand::Exact,
    ) -> Option<(NextIo, bool)> {
        let time_based = f.passes == FioPasses::Always;
        // do_io: a loop ends when an I/O cannot be made; on an engine that
        // queues, also once it issued `size` bytes (a random write job
        // without a map: io_size if larger), before it tries one more.
        let loop_done = match f.passes {
            _ if !x.loop_ends_on_bytes() => false,
            FioPasses::Always => false,
            FioPasses::Bounded { loops, io_size, .. } => {
                let region = self.count * self.unit;
                let bound = if self.rw.is_random()
                    && self.rw.writes(self.rwmixread)
                    && self.map.is_none()
                    && !x.has_lfsr()
                {
                    region.max(io_size.saturating_mul(loops))
                } else {
                    region
                };
                f.pass_issued >= bound
            }
        };
        if !loop_done {
            if let Ok(made) = self.fio_fill(x, &f.split_order, time_based) {
                return Some(made);
            }
        }
        if !Self::fio_again(f) {
            return None;
        }
        if let Some(m) = self.map.as_mut() {
            m.reset();
        }
        x.new_loop();
        self.fio_fill(x, &f.split_order, time_based)
            .ok()
            .map(|(io, _)| (io, true))
    }

    /// fio's get_next_offset, get_next_buflen and mark_random_map for one
    /// I/O; `None` when it cannot be placed.
    fn fio_place(&mut self, f: &FioRules, dir: Dir, drawn: u64) -> Option<NextIo> {
        use rand::Rng;
        let d = dir.size_index();
        let min_bs = f.min_bs[d];
        let unit = self.unit;
        let region = self.count * unit;
        // last_block: the region in units of this direction's smallest size.
        let lastb = region / min_bs;
        if lastb == 0 {
            return None;
        }
        let mut b = self.rng.random_range(0..lastb);
        let map = self.map.as_ref()?;
        if b >= map.blocks {
            return None;
        }
        if map.is_set(b) {
            b = map.next_free((b + 1) % map.blocks)?;
        }
        // The offset: the bit number times this direction's smallest size
        // (a multiple of the unit: every size of a direction issued is).
        let off = b * min_bs;
        if off >= region {
            return None;
        }
        let room = region - off;
        let len = match &self.sizes[d] {
            BlockSizes::Fixed(b) => *b,
            _ if min_bs > room => return None,
            BlockSizes::Range { .. } => {
                let mut l = drawn;
                while l > room {
                    l = self.sizes[d].pick(&mut self.rng);
                }
                l
            }
            BlockSizes::Split(_) => {
                let order = &f.split_order[d];
                let mut l = drawn;
                loop {
                    // The drawn entry, or the next one in fio's order that
                    // fits; none: a new draw.
                    let at = order.iter().position(|e| e.0 == l).unwrap_or(0);
                    if let Some(e) = order[at..].iter().find(|e| e.1 > 0 && e.0 <= room) {
                        break e.0;
                    }
                    l = self.sizes[d].pick(&mut self.rng);
                }
            }
        };
        if len > room {
            return None;
        }
        // mark_random_map: from bit b, (len + min_bs - 1) / min_bs bits,
        // as many as are free in a row; the I/O is cut to them.
        let want = len.div_ceil(min_bs).max(1);
        let map = self.map.as_mut()?;
        let mut set = 0;
        while set < want && b + set < map.blocks && !map.is_set(b + set) {
            map.set(b + set);
            set += 1;
        }
        let len = len.min(set.max(1) * min_bs);
        self.last_end = (off + len) / unit;
        Some(NextIo {
            dir,
            block: self.first + off / unit,
            len: len as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Rw;

    fn job(rw: Rw, sizes: [BlockSizes; 2], count: u64, seed: u64, passes: FioPasses) -> Workload {
        Workload::with_sizes(rw, 50, (0, count), sizes, 1, seed, 0)
            .with_random_map(true)
            .with_fio_rules(Some(passes))
    }

    const ONE_PASS: FioPasses = FioPasses::Bounded {
        loops: 1,
        io_size: 256,
        explicit: false,
    };

    /// Runs a job as the worker does: until it ended or `bound` bytes.
    fn run(w: &mut Workload, bound: u64) -> Vec<NextIo> {
        let mut out = Vec::new();
        let mut bytes = 0;
        while !w.ended() && bytes < bound {
            let io = w.next_io();
            bytes += io.len as u64;
            out.push(io);
        }
        out
    }

    #[test]
    fn each_block_once_per_pass_and_the_job_ends_with_it() {
        let split = crate::workload::parse_bssplit("1/50:4/30:16/20").unwrap();
        for seed in 0..20 {
            let mut w = job(
                Rw::Randread,
                [split.clone(), split.clone()],
                256,
                seed,
                ONE_PASS,
            );
            // No byte bound: fio's rules end the job when the map is full.
            let ios = run(&mut w, u64::MAX);
            let mut seen = [0u32; 256];
            for io in &ios {
                assert!(io.block + io.len as u64 <= 256, "{io:?}");
                for b in io.block..io.block + io.len as u64 {
                    seen[b as usize] += 1;
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "seed {seed}: {seen:?}");
            assert!(w.ended());
        }
    }

    #[test]
    fn passes_go_on_for_loops_and_time_based_jobs() {
        let split = crate::workload::parse_bssplit("1/50:4/50").unwrap();
        let two = FioPasses::Bounded {
            loops: 2,
            io_size: 256,
            explicit: false,
        };
        let mut w = job(Rw::Randread, [split.clone(), split.clone()], 256, 3, two);
        let ios = run(&mut w, u64::MAX);
        let bytes: u64 = ios.iter().map(|i| i.len as u64).sum();
        assert_eq!(bytes, 512, "two passes of 256 blocks");
        let mut w = job(
            Rw::Randread,
            [split.clone(), split],
            256,
            3,
            FioPasses::Always,
        );
        let ios = run(&mut w, 256 * 5);
        assert!(!w.ended());
        assert_eq!(ios.iter().map(|i| i.len as u64).sum::<u64>(), 256 * 5);
    }

    /// fio's mixed-size rule on its own: writes of 16 blocks on a map of
    /// 1-block units (reads' smallest size) pick one of `count / 16` bit
    /// numbers, mark only that bit, and a busy pick moves to the next free
    /// bit; once that bit is past the last write slot its offset lies past
    /// the region and the job ends. The expected number of writes is
    /// computed here from that rule over the sets of bits done.
    #[test]
    fn mixed_sizes_end_where_fios_rule_says() {
        const L: usize = 4;
        // expect[s]: writes still to come from the set s of slots done.
        let mut expect = [0f64; 1 << L];
        for s in (0..(1usize << L) - 1).rev() {
            let mut e = 0.0;
            for b in 0..L {
                let next = (b..L).find(|&c| s & (1 << c) == 0);
                e += match next {
                    Some(c) => 1.0 + expect[s | (1 << c)],
                    None => 0.0,
                };
            }
            expect[s] = e / L as f64;
        }
        // All slots done: every pick ends the job.
        let want = expect[0];
        let sizes = [BlockSizes::Fixed(1), BlockSizes::Fixed(16)];
        let n = 4000;
        let mut total = 0usize;
        for seed in 0..n {
            let mut w = job(Rw::Randwrite, sizes.clone(), 16 * L as u64, seed, ONE_PASS);
            let ios = run(&mut w, u64::MAX);
            assert!(w.ended());
            for io in &ios {
                assert_eq!(io.dir, Dir::Write);
                assert_eq!(io.len, 16);
                assert_eq!(io.block % 16, 0, "{io:?}");
            }
            // The map's bits set are the write slots, not the blocks.
            let m = w.map.as_ref().unwrap();
            let set: Vec<u64> = (0..m.blocks).filter(|&b| m.is_set(b)).collect();
            let mut slots: Vec<u64> = ios.iter().map(|i| i.block / 16).collect();
            slots.sort();
            assert_eq!(set, slots);
            total += ios.len();
        }
        let mean = total as f64 / n as f64;
        // Writes per job vary by about 1; 4000 jobs: a standard error of
        // about 0.016.
        assert!(
            (mean - want).abs() < 0.08,
            "mean {mean}, the rule gives {want}"
        );
        assert!(
            want < L as f64,
            "the rule ends jobs before every slot is written"
        );
    }

    #[test]
    fn an_io_size_given_goes_on_past_a_pass_that_cannot_go_on() {
        // Writes of 16 blocks over 64 blocks with reads of 1: passes end
        // early (see above); with fio's io_size given, fio starts another
        // while at least the largest block is left.
        let sizes = [BlockSizes::Fixed(1), BlockSizes::Fixed(16)];
        let given = FioPasses::Bounded {
            loops: 1,
            io_size: 16 * 40,
            explicit: true,
        };
        for seed in 0..20 {
            let mut w = job(Rw::Randwrite, sizes.clone(), 64, seed, given).with_passes(true);
            let mut passes = 0;
            let mut bytes = 0;
            while !w.ended() && bytes < 16 * 40 {
                bytes += w.next_io().len as u64;
                passes += w.take_new_pass() as u32;
            }
            assert_eq!(bytes, 16 * 40, "seed {seed}");
            // At most 4 writes a pass: at least 9 new passes.
            assert!(passes >= 9, "seed {seed}: {passes} passes");
            let mut w = job(Rw::Randwrite, sizes.clone(), 64, seed, ONE_PASS);
            let ios = run(&mut w, u64::MAX);
            assert!(ios.len() <= 4 && w.ended());
        }
    }

    #[test]
    fn lengths_fit_before_the_end_as_fio_draws_them() {
        // 64 blocks: near the end a 32-block size cannot fit, and the
        // drawn length falls to one that does (fio never cuts at the end).
        let split = crate::workload::parse_bssplit("1/10:32/90").unwrap();
        for seed in 0..50 {
            let mut w = job(
                Rw::Randread,
                [split.clone(), split.clone()],
                64,
                seed,
                ONE_PASS,
            );
            for io in run(&mut w, u64::MAX) {
                assert!(io.block + io.len as u64 <= 64, "{io:?}");
            }
        }
    }

    #[test]
    fn off_without_fio_rules() {
        let mut w = Workload::new(Rw::Randread, 100, 0, 8, 1, 0).with_fio_rules(Some(ONE_PASS));
        assert!(w.fio.is_none(), "no map, no rules");
        for _ in 0..100 {
            w.next_io();
        }
        assert!(!w.ended());
    }
}
