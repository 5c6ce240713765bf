//! `cpuio`: fio's cpuio engine. No data moves and no system call is made
//! for a request: each one burns the CPU, then the worker's think time
//! (set from --cpuload, see crate::cpuio) sleeps so that the job loads its
//! CPU at that share.
//!
//! noop spins on the clock for --cpuchunks µs (fio's usec_spin). qsort
//! sorts 256K 32-bit integers four times (ascending, descending, by signed
//! byte, descending), the data filled once by fio's multiply-with-carry
//! generator with fio's seeds; the time it took is the cycle, and the next
//! think time follows it (fio's do_qsort).

use super::{Completion, Engine, EngineSetup, IoRequest, QueueStatus};
use crate::cpuio::{CpuMode, CpuioPlan};
use anyhow::{anyhow, Result};
use ringlab_core::clock::mono_ns;

/// fio's qsort_size: 256K 32-bit integers.
const QSORT_LEN: usize = 256 * 1024;

pub struct CpuioEngine {
    plan: CpuioPlan,
    /// qsort: the integers sorted by every burn, and the bytes of the
    /// byte-wise sort (allocated once).
    data: Vec<i32>,
    bytes: Vec<i8>,
    /// qsort: the think time that follows the last burn (ns).
    think_ns: Option<u64>,
}

/// fio's mwc32: Marsaglia's multiply-with-carry.
fn mwc32(w: &mut u32, z: &mut u32) -> u32 {
    *z = 36969u32.wrapping_mul(*z & 65535).wrapping_add(*z >> 16);
    *w = 18000u32.wrapping_mul(*w & 65535).wrapping_add(*w >> 16);
    (*z << 16).wrapping_add(*w)
}

/// fio's qsort_data: 256K integers from seeds w=521288629, z=362436069.
pub fn qsort_data() -> Vec<i32> {
    let (mut w, mut z) = (521_288_629u32, 362_436_069u32);
    (0..QSORT_LEN)
        .map(|_| mwc32(&mut w, &mut z) as i32)
        .collect()
}

impl CpuioEngine {
    pub fn new(setup: &EngineSetup) -> Result<CpuioEngine> {
        let plan = setup
            .plan
            .cpuio
            .ok_or_else(|| anyhow!("the cpuio engine runs without its plan (--cpuload)"))?;
        let (data, bytes) = match plan.mode {
            CpuMode::Noop => (Vec::new(), Vec::new()),
            CpuMode::Qsort => (qsort_data(), vec![0i8; QSORT_LEN * 4]),
        };
        Ok(CpuioEngine {
            plan,
            data,
            bytes,
            think_ns: None,
        })
    }

    /// fio's do_qsort: four sorts by the C library's qsort with fio's
    /// comparisons (the same algorithm and work as fio's), timed.
    fn qsort(&mut self) {
        let start = mono_ns();
        c_qsort(&mut self.data, cmp_i32);
        c_qsort(&mut self.data, cmp_i32_rev);
        // fio sorts the same memory as bytes, compared as signed 8-bit.
        for (chunk, v) in self.bytes.chunks_exact_mut(4).zip(&self.data) {
            for (b, x) in chunk.iter_mut().zip(v.to_ne_bytes()) {
                *b = x as i8;
            }
        }
        c_qsort(&mut self.bytes, cmp_i8);
        for (v, c) in self.data.iter_mut().zip(self.bytes.chunks_exact(4)) {
            *v = i32::from_ne_bytes([c[0] as u8, c[1] as u8, c[2] as u8, c[3] as u8]);
        }
        c_qsort(&mut self.data, cmp_i32_rev);
        let cycle_us = (mono_ns() - start) / 1000;
        self.think_ns = Some(self.plan.think_us(cycle_us) * 1000);
    }
}

type Cmp = extern "C" fn(*const libc::c_void, *const libc::c_void) -> libc::c_int;

/// The C library's qsort over `v` with `cmp` (fio's sort, and its cost).
fn c_qsort<T: Copy>(v: &mut [T], cmp: Cmp) {
    // SAFETY: v is a valid, exclusively borrowed slice of v.len() elements
    // of size_of::<T>() bytes; cmp reads two elements of that type.
    unsafe {
        libc::qsort(
            v.as_mut_ptr().cast(),
            v.len(),
            std::mem::size_of::<T>(),
            Some(cmp),
        )
    }
}

/// fio's stress_qsort_cmp_1: ascending int32.
extern "C" fn cmp_i32(a: *const libc::c_void, b: *const libc::c_void) -> libc::c_int {
    // SAFETY: qsort passes pointers to two elements of the i32 slice.
    let (a, b) = unsafe { (*(a as *const i32), *(b as *const i32)) };
    a.cmp(&b) as libc::c_int
}

/// fio's stress_qsort_cmp_2: descending int32.
extern "C" fn cmp_i32_rev(a: *const libc::c_void, b: *const libc::c_void) -> libc::c_int {
    // SAFETY: qsort passes pointers to two elements of the i32 slice.
    let (a, b) = unsafe { (*(a as *const i32), *(b as *const i32)) };
    b.cmp(&a) as libc::c_int
}

/// fio's stress_qsort_cmp_3: signed bytes, by difference.
extern "C" fn cmp_i8(a: *const libc::c_void, b: *const libc::c_void) -> libc::c_int {
    // SAFETY: qsort passes pointers to two elements of the i8 slice.
    let (a, b) = unsafe { (*(a as *const i8), *(b as *const i8)) };
    a as libc::c_int - b as libc::c_int
}

/// fio's usec_spin: spin until `us` microseconds have passed.
fn spin(us: u64) {
    let end = mono_ns() + us * 1000;
    while mono_ns() < end {
        std::hint::spin_loop();
    }
}

impl Engine for CpuioEngine {
    fn queue(&mut self, req: &IoRequest) -> Result<QueueStatus> {
        match self.plan.mode {
            CpuMode::Noop => spin(self.plan.cycle_us),
            CpuMode::Qsort => self.qsort(),
        }
        // Counted as one I/O of the block size; fio's json shows 0 bytes
        // for it (ringlab fio writes fio's figures).
        Ok(QueueStatus::Completed(req.len as i64))
    }

    fn commit(&mut self) -> Result<()> {
        Ok(())
    }

    fn reap(&mut self, _min: u32, _out: &mut Vec<Completion>) -> Result<()> {
        Ok(())
    }

    fn think_ns(&mut self) -> Option<u64> {
        self.think_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mwc32_is_fio_s() {
        let (mut w, mut z) = (521_288_629u32, 362_436_069u32);
        // z = 36969*(z&65535)+(z>>16), w = 18000*(w&65535)+(w>>16),
        // (z<<16)+w, all mod 2^32.
        let z1 = 36969u64 * (362_436_069u64 & 65535) + (362_436_069u64 >> 16);
        let w1 = 18000u64 * (521_288_629u64 & 65535) + (521_288_629u64 >> 16);
        let want = (((z1 as u32) as u64) << 16).wrapping_add(w1) as u32;
        assert_eq!(mwc32(&mut w, &mut z), want);
        assert_eq!(qsort_data().len(), QSORT_LEN);
    }
}
