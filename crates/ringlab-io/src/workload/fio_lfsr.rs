//! fio 3.33's LFSR offset generator (lib/lfsr.c, `random_generator=lfsr`):
//! every block of the file once per pass, in the order of a maximal
//! Galois LFSR of the smallest width above the block count, without a
//! random map.

/// fio's tap positions per LFSR width (lfsr_taps; widths below 3 unused).
const TAPS: [&[u8]; 64] = [
    &[],
    &[],
    &[],
    &[3, 2],
    &[4, 3],
    &[5, 3],
    &[6, 5],
    &[7, 6],
    &[8, 6, 5, 4],
    &[9, 5],
    &[10, 7],
    &[11, 9],
    &[12, 6, 4, 1],
    &[13, 4, 3, 1],
    &[14, 5, 3, 1],
    &[15, 14],
    &[16, 15, 13, 4],
    &[17, 14],
    &[18, 11],
    &[19, 6, 2, 1],
    &[20, 17],
    &[21, 19],
    &[22, 21],
    &[23, 18],
    &[24, 23, 22, 17],
    &[25, 22],
    &[26, 6, 2, 1],
    &[27, 5, 2, 1],
    &[28, 25],
    &[29, 27],
    &[30, 6, 4, 1],
    &[31, 28],
    &[32, 31, 29, 1],
    &[33, 20],
    &[34, 27, 2, 1],
    &[35, 33],
    &[36, 25],
    &[37, 5, 4, 3, 2, 1],
    &[38, 6, 5, 1],
    &[39, 35],
    &[40, 38, 21, 19],
    &[41, 38],
    &[42, 41, 20, 19],
    &[43, 42, 38, 37],
    &[44, 43, 18, 17],
    &[45, 44, 42, 41],
    &[46, 45, 26, 25],
    &[47, 42],
    &[48, 47, 21, 20],
    &[49, 40],
    &[50, 49, 24, 23],
    &[51, 50, 36, 35],
    &[52, 49],
    &[53, 52, 38, 37],
    &[54, 53, 18, 17],
    &[55, 31],
    &[56, 55, 35, 34],
    &[57, 50],
    &[58, 39],
    &[59, 58, 38, 37],
    &[60, 59],
    &[61, 60, 46, 45],
    &[62, 61, 6, 5],
    &[63, 62],
];

/// fio's `struct fio_lfsr` with spin 0 (fio's only use for offsets).
#[derive(Debug, Clone)]
pub(super) struct Lfsr {
    xormask: u64,
    last_val: u64,
    cached_bit: u64,
    max_val: u64,
    num_vals: u64,
    cycle_length: u64,
    cached_cycle_length: u64,
}

impl Lfsr {
    /// fio's `lfsr_init(fl, nums, seed, 0)`; `None` where fio fails (the
    /// seed is the all-ones state, or too many numbers).
    pub(super) fn new(nums: u64, seed: u64) -> Option<Lfsr> {
        let taps = (3..64).find(|&i| (1u64 << i) > nums).map(|i| TAPS[i])?;
        let xormask = taps.iter().fold(0u64, |m, &t| m | 1 << (t - 1));
        // prepare_spin(0): no cycle, and cycle_length 0 + 1: fio's first
        // draw steps twice.
        let mut l = Lfsr {
            xormask,
            last_val: 0,
            cached_bit: 1 << (taps[0] - 1),
            max_val: nums.wrapping_sub(1),
            num_vals: 0,
            cycle_length: 1,
            cached_cycle_length: 0,
        };
        l.reset(seed).then_some(l)
    }

    /// fio's `lfsr_reset`: `false` on the illegal all-ones state.
    pub(super) fn reset(&mut self, seed: u64) -> bool {
        let mask = (self.cached_bit << 1).wrapping_sub(1);
        self.num_vals = 0;
        self.last_val = seed & mask;
        self.last_val != mask
    }

    fn step(&mut self, times: u32) {
        for _ in 0..times {
            let v = self.last_val;
            self.last_val = ((v >> 1) | self.cached_bit) ^ ((v & 1).wrapping_sub(1) & self.xormask);
        }
    }

    /// fio's `lfsr_next`: the next number below `nums`, `None` once all
    /// were given.
    pub(super) fn next(&mut self) -> Option<u64> {
        let n = self.num_vals;
        self.num_vals += 1;
        if n > self.max_val {
            return None;
        }
        loop {
            if self.cycle_length != 0 {
                self.cycle_length -= 1;
                if self.cycle_length == 0 {
                    self.step(2);
                    self.cycle_length = self.cached_cycle_length;
                } else {
                    self.step(1);
                }
            } else {
                self.step(1);
            }
            if self.last_val <= self.max_val {
                return Some(self.last_val);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_number_once() {
        for nums in [5u64, 64, 100, 4096, 5000] {
            let mut l = Lfsr::new(nums, 0xb189_9bed).unwrap();
            let mut seen = vec![false; nums as usize];
            while let Some(v) = l.next() {
                assert!(!seen[v as usize], "{v} twice of {nums}");
                seen[v as usize] = true;
            }
            assert!(seen.iter().all(|&s| s), "{nums}");
        }
    }
}
