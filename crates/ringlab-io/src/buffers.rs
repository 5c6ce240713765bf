//! Page-aligned I/O buffers, one slot per I/O in flight.

use std::alloc::{alloc_zeroed, dealloc, Layout};

/// Alignment of every slot: a page, which satisfies O_DIRECT's memory
/// alignment on every device ringlab targets.
pub const BUFFER_ALIGN: usize = 4096;

/// One contiguous, page-aligned region split into `count` slots of
/// `slot_len` bytes (rounded up to the alignment).
pub struct BufferPool {
    ptr: *mut u8,
    layout: Layout,
    slot_stride: usize,
    slot_len: usize,
    count: usize,
}

// SAFETY: the pool owns its memory; slots are handed out by index to one
// worker thread, which is the only user.
unsafe impl Send for BufferPool {}

impl BufferPool {
    pub fn new(slot_len: usize, count: usize) -> anyhow::Result<BufferPool> {
        let slot_stride = slot_len.div_ceil(BUFFER_ALIGN) * BUFFER_ALIGN;
        let total = slot_stride
            .checked_mul(count)
            .ok_or_else(|| anyhow::anyhow!("buffer size overflows"))?;
        let layout = Layout::from_size_align(total.max(BUFFER_ALIGN), BUFFER_ALIGN)?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            anyhow::bail!(
                "could not allocate {} of I/O buffers: lower --bs, --iodepth or --numjobs",
                ringlab_stats::units::format_bytes(total as u64)
            );
        }
        Ok(BufferPool {
            ptr,
            layout,
            slot_stride,
            slot_len,
            count,
        })
    }

    pub fn slot_ptr(&self, slot: u32) -> *mut u8 {
        assert!((slot as usize) < self.count);
        // SAFETY: slot < count, so the offset stays inside the allocation.
        unsafe { self.ptr.add(slot as usize * self.slot_stride) }
    }

    pub fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
        let p = self.slot_ptr(slot);
        // SAFETY: the slot lies inside the allocation and &mut self makes
        // this the only reference handed out.
        unsafe { std::slice::from_raw_parts_mut(p, self.slot_len) }
    }

    pub fn slot(&self, slot: u32) -> &[u8] {
        let p = self.slot_ptr(slot);
        // SAFETY: as in slot_mut; shared access only.
        unsafe { std::slice::from_raw_parts(p, self.slot_len) }
    }

    pub fn count(&self) -> usize {
        self.count
    }

    pub fn slot_len(&self) -> usize {
        self.slot_len
    }

    /// The whole region, for registering with the kernel.
    pub fn region(&self) -> (*mut u8, usize) {
        (self.ptr, self.layout.size())
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        // SAFETY: allocated in new() with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_aligned_and_disjoint() {
        let mut pool = BufferPool::new(1000, 3).unwrap();
        for s in 0..3 {
            assert_eq!(pool.slot_ptr(s) as usize % BUFFER_ALIGN, 0);
            pool.slot_mut(s).fill(s as u8 + 1);
        }
        for s in 0..3 {
            assert!(pool.slot(s).iter().all(|&b| b == s as u8 + 1));
            assert_eq!(pool.slot(s).len(), 1000);
        }
    }
}
