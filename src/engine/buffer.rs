//! Page-aligned I/O buffers, as O_DIRECT requires.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

pub const ALIGN: usize = 4096;

/// A heap buffer aligned to 4096 bytes, owned and movable, so a request can
/// carry its buffer through the engine and back.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer is plain owned memory; only its owner touches it.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes (rounded up to a whole page).
    pub fn new(len: usize) -> AlignedBuf {
        let cap = len.max(1).div_ceil(ALIGN) * ALIGN;
        let layout = Layout::from_size_align(cap, ALIGN).expect("valid layout");
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, len: cap }
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
        self.free
            .pop()
            .unwrap_or_else(|| AlignedBuf::new(self.size))
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
}
