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
//! Directions keep the workload's own draw (rwmixread per I/O); fio's
//! offsets come from its own generator, so the work matches fio's on
//! average, not I/O for I/O.

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
    /// Per direction: blocks of the map one unit of its smallest size
    /// covers (min_bs[ddir] / rw_min_bs).
    min_span: [u64; 2],
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
            min_span: [0, 1].map(|d| (sizes[d].min() / unit.max(1)).max(1)),
            split_order: [order(&sizes[0]), order(&sizes[1])],
            max_bs: sizes[0].max().max(sizes[1].max()),
            pending: None,
            primed: false,
            passes_ended: 0,
            issued: 0,
        }
    }
}

impl Workload {
    /// Under fio's rules (`ringlab fio`); see the module's notes.
    pub fn with_fio_rules(mut self, passes: Option<FioPasses>) -> Workload {
        if let (Some(p), Some(_)) = (passes, self.map.as_ref()) {
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
                self.new_pass |= new_pass;
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
            _ => {
                if self.rng.random_range(0..100) < self.rwmixread {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
        };
        let d = (dir == Dir::Write) as usize;
        (dir, self.sizes[d].pick(&mut self.rng))
    }

    /// Places one I/O; at the end of a pass starts another when fio would,
    /// else `None` (the job ends).
    fn fio_make(&mut self, f: &mut FioRules, dir: Dir, len: u64) -> Option<(NextIo, bool)> {
        if let Some(io) = self.fio_place(f, dir, len) {
            return Some((io, false));
        }
        let again = match f.passes {
            FioPasses::Always => true,
            FioPasses::Bounded {
                loops,
                io_size,
                explicit,
            } => {
                f.passes_ended += 1;
                f.passes_ended < loops
                    || (explicit
                        && io_size > f.issued
                        && io_size - f.issued >= f.max_bs)
            }
        };
        if !again {
            return None;
        }
        if let Some(m) = self.map.as_mut() {
            m.reset();
        }
        self.fio_place(f, dir, len).map(|io| (io, true))
    }

    /// fio's get_next_offset, get_next_buflen and mark_random_map for one
    /// I/O; `None` when it cannot be placed.
    fn fio_place(&mut self, f: &FioRules, dir: Dir, drawn: u64) -> Option<NextIo> {
        use rand::Rng;
        let d = (dir == Dir::Write) as usize;
        let span = f.min_span[d];
        let count = self.count;
        // last_block: the region in units of this direction's smallest size.
        let lastb = count / span;
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
        // The offset, in map blocks: the bit number times this direction's
        // smallest size.
        let off = b * span;
        if off >= count {
            return None;
        }
        let unit = self.unit;
        let room = (count - off) * unit;
        let min_bs = self.sizes[d].min();
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
        let want = len.div_ceil(span * unit).max(1);
        let map = self.map.as_mut()?;
        let mut set = 0;
        while set < want && b + set < map.blocks && !map.is_set(b + set) {
            map.set(b + set);
            set += 1;
        }
        let len = len.min(set.max(1) * span * unit);
        self.last_end = off + len / unit;
        Some(NextIo {
            dir,
            block: self.first + off,
            len: len as u32,
        })
    }
}
