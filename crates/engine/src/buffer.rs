//! Page-aligned I/O buffers, as O_DIRECT requires.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;
use std::sync::Arc;

pub const ALIGN: usize = 4096;

/// Buffers this large are mapped on their own, 2 MiB-aligned and in whole
/// 2 MiB units, and offered to the kernel for transparent huge pages: a
/// physically contiguous buffer is a few large segments to the block layer
/// instead of one per 4 KiB page, so a 1 MiB request fits a device's
/// segment limit (a loop device allows 128; 4 KiB pages make 256) and is
/// not split in two.
const HUGE_FROM: usize = 512 * 1024;
const HUGE: usize = 2 * 1024 * 1024;

/// A heap buffer aligned to 4096 bytes, owned and movable, so a request can
/// carry its buffer through the engine and back.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    /// The huge-page mapping this buffer is a piece of; None: from the heap.
    mapping: Option<Arc<HugeMapping>>,
}

/// An anonymous mapping of whole huge pages, unmapped when its last buffer
/// goes.
struct HugeMapping {
    start: usize,
    len: usize,
}

impl Drop for HugeMapping {
    fn drop(&mut self) {
        // SAFETY: mapped by map_huge() with this address and length, and
        // no buffer into it is left.
        unsafe { libc::munmap(self.start as *mut libc::c_void, self.len) };
    }
}

// SAFETY: the buffer is plain owned memory; only its owner touches it.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes (rounded up to a whole page).
    pub fn new(len: usize) -> AlignedBuf {
        let cap = len.max(1).div_ceil(ALIGN) * ALIGN;
        if cap >= HUGE_FROM {
            if let Some(mut bufs) = Self::map_huge(cap, 1) {
                return bufs.remove(0);
            }
        }
        Self::from_heap(cap)
    }

    /// Buffers of `len` bytes, as many as make good use of one allocation:
    /// two 1 MiB buffers share a 2 MiB huge page instead of each rounding
    /// it up.
    pub fn new_batch(len: usize) -> Vec<AlignedBuf> {
        let cap = len.max(1).div_ceil(ALIGN) * ALIGN;
        if cap >= HUGE_FROM {
            if let Some(bufs) = Self::map_huge(cap, (HUGE / cap).max(1)) {
                return bufs;
            }
        }
        vec![Self::from_heap(cap)]
    }

    fn from_heap(cap: usize) -> AlignedBuf {
        let layout = Layout::from_size_align(cap, ALIGN).expect("valid layout");
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf {
            ptr,
            len: cap,
            mapping: None,
        }
    }

    /// `count` zeroed buffers of `cap` bytes, back to back in one mapping
    /// of whole huge pages aligned to a huge page and advised for
    /// transparent huge pages, so no buffer straddles more huge pages than
    /// it must. None if the kernel refuses the mapping (the heap serves).
    fn map_huge(cap: usize, count: usize) -> Option<Vec<AlignedBuf>> {
        let len = (cap * count).div_ceil(HUGE) * HUGE;
        // Map one huge page more, then trim to the aligned part.
        let span = len + HUGE;
        // SAFETY: an anonymous private mapping; no existing memory touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let start = (base as usize).div_ceil(HUGE) * HUGE;
        let head = start - base as usize;
        let tail = span - head - len;
        // SAFETY: both ranges lie inside the mapping just made and are not
        // used; madvise only advises, and a refusal leaves a valid mapping.
        unsafe {
            if head > 0 {
                libc::munmap(base, head);
            }
            if tail > 0 {
                libc::munmap((start + len) as *mut libc::c_void, tail);
            }
            libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
        let mapping = Arc::new(HugeMapping { start, len });
        Some(
            (0..count)
                .map(|i| AlignedBuf {
                    ptr: NonNull::new((start + i * cap) as *mut u8).expect("mapped, not null"),
                    len: cap,
                    mapping: Some(Arc::clone(&mapping)),
                })
                .collect(),
        )
    }

    pub fn capacity(&self) -> usize {
        self.len
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialised bytes (zeroed at birth).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.mapping.is_some() {
            // The mapping goes with its last buffer.
            return;
        }
        let layout = Layout::from_size_align(self.len, ALIGN).expect("valid layout");
        // SAFETY: allocated in new() with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), layout) }
    }
}

/// A free list of equally sized buffers, so the hot path allocates nothing.
pub struct BufferPool {
    size: usize,
    free: Vec<AlignedBuf>,
}

impl BufferPool {
    pub fn new(size: usize) -> BufferPool {
        BufferPool {
            size,
            free: Vec::new(),
        }
    }

    pub fn get(&mut self) -> AlignedBuf {
        if let Some(buf) = self.free.pop() {
            return buf;
        }
        let mut batch = AlignedBuf::new_batch(self.size);
        let buf = batch.pop().expect("a batch holds at least one buffer");
        self.free.extend(batch);
        buf
    }

    pub fn put(&mut self, buf: AlignedBuf) {
        if buf.capacity() >= self.size {
            self.free.push(buf);
        }
    }
}

/// Pools by buffer size: a buffer goes back to the pool of its own size.
#[derive(Default)]
pub struct BufferPools {
    pools: Vec<BufferPool>,
}

impl BufferPools {
    fn pool(&mut self, size: usize) -> &mut BufferPool {
        let size = size.max(1).div_ceil(ALIGN) * ALIGN;
        match self.pools.iter().position(|p| p.size == size) {
            Some(i) => &mut self.pools[i],
            None => {
                self.pools.push(BufferPool::new(size));
                self.pools.last_mut().expect("just pushed")
            }
        }
    }

    pub fn get(&mut self, size: usize) -> AlignedBuf {
        self.pool(size).get()
    }

    pub fn put(&mut self, buf: AlignedBuf) {
        let cap = buf.capacity();
        self.pool(cap).put(buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_rounded() {
        let mut b = AlignedBuf::new(1536);
        assert_eq!(b.as_ptr() as usize % ALIGN, 0);
        assert_eq!(b.capacity(), 4096);
        b.as_mut_slice()[4095] = 7;
        assert_eq!(b.as_slice()[4095], 7);
        let mut pool = BufferPool::new(8192);
        let x = pool.get();
        assert_eq!(x.capacity(), 8192);
        pool.put(x);
        assert_eq!(pool.get().capacity(), 8192);
    }

    #[test]
    fn large_buffers_share_huge_page_mappings_and_outlive_each_other() {
        let mut batch = AlignedBuf::new_batch(1 << 20);
        assert_eq!(batch.len(), 2, "two 1 MiB buffers to a 2 MiB huge page");
        let first = batch[0].as_ptr() as usize;
        assert_eq!(first % HUGE, 0, "the mapping starts on a huge page");
        assert_eq!(batch[1].as_ptr() as usize, first + (1 << 20));
        for b in &mut batch {
            assert_eq!(b.capacity(), 1 << 20);
            assert!(b.as_slice().iter().all(|&x| x == 0));
            b.as_mut_slice().fill(0x5a);
        }
        // Dropping one leaves the other's memory mapped and intact.
        let second = batch.pop().unwrap();
        drop(batch);
        assert!(second.as_slice().iter().all(|&x| x == 0x5a));
        // A pool hands out both halves before mapping again, and small
        // buffers still come from the heap.
        let mut pool = BufferPool::new(1 << 20);
        let (a, b) = (pool.get(), pool.get());
        assert_eq!((a.as_ptr() as usize).abs_diff(b.as_ptr() as usize), 1 << 20);
        assert!(AlignedBuf::new(4096).mapping.is_none());
        // Sizes that do not divide a huge page still get whole ones.
        let odd = AlignedBuf::new_batch(768 * 1024);
        assert_eq!(odd.len(), 2);
        let big = AlignedBuf::new(3 << 20);
        assert_eq!(big.mapping.as_ref().map(|m| m.len), Some(4 << 20));
    }
}
