//! The global allocator: mimalloc, asked for alignment only when a type needs more than a word.
//!
//! The per-frame paths allocate a few small objects per frame (events, typed views, argument
//! lists, message sections), where glibc's malloc/free cost a quarter of the decode time.
//! `mimalloc::MiMalloc` passes every request through `mi_malloc_aligned`, whose fast path
//! takes a block only when the free one happens to sit at the alignment asked for, and
//! otherwise over-allocates (about one allocation in five on a flood of small transfers,
//! each costing several times a plain one). Every mimalloc block is aligned to at least a
//! word, so a request for word alignment or less is a plain `mi_malloc`.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The alignment every mimalloc block has (a machine word).
const WORD: usize = std::mem::size_of::<usize>();

/// mimalloc, with plain (unaligned) calls where a word's alignment suffices.
pub struct Allocator;

// SAFETY: every call forwards to mimalloc, which returns blocks aligned to at least a word
// (`MI_INTPTR_SIZE`) from `mi_malloc`/`mi_zalloc`/`mi_realloc` and to the alignment asked for
// from the `_aligned` variants; `mi_free` frees blocks of either kind.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            unsafe { mi::mi_malloc(layout.size()) as *mut u8 }
        } else {
            unsafe { mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8 }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            unsafe { mi::mi_zalloc(layout.size()) as *mut u8 }
        } else {
            unsafe { mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8 }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        unsafe { mi::mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= WORD {
            unsafe { mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8 }
        } else {
            unsafe {
                mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of every small size and alignment come back aligned, hold what was written,
    /// keep it across a realloc, and free without complaint.
    #[test]
    fn blocks_are_aligned_and_usable() {
        let a = Allocator;
        for align in [1, 2, 4, 8, 16, 32, 64] {
            for size in [1, 7, 8, 16, 24, 40, 56, 100, 520, 4096] {
                let layout = Layout::from_size_align(size, align).unwrap();
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    p.write_bytes(0xa5, size);
                    let q = a.realloc(p, layout, size * 3);
                    assert_eq!(q as usize % align, 0, "realloc size {size} align {align}");
                    assert!((0..size).all(|i| *q.add(i) == 0xa5));
                    a.dealloc(q, Layout::from_size_align(size * 3, align).unwrap());
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
