//! Bytes the process has allocated and not yet freed: INFO `used_memory` and
//! what `maxmemory` is compared with, as Redis's `zmalloc_used_memory`.
//!
//! [`CountingAllocator`] wraps jemalloc (see [`crate::allocator`]) and keeps a running
//! total per thread: each of the first [`OWNED_SLOTS`] threads that
//! allocates gets a counter of its own (a plain load and store, no atomic
//! read-modify-write, no shared cache line), later threads share one more
//! counter with atomic adds. The total is the sum of the counters; memory
//! allocated on one thread and freed on another nets out in the sum, and a
//! thread that ends leaves its counter behind, so the sum stays exact.
//!
//! The `cairn` binary installs it as the global allocator. Where it is not
//! installed (tests that start servers in-process, the embedded API), every
//! counter stays zero and [`used_memory`] falls back to the resident set
//! size, which does not shrink when keys are freed.

use std::alloc::{GlobalAlloc, Layout};

use tikv_jemallocator::Jemalloc;

/// The allocator underneath the counting.
static INNER: Jemalloc = Jemalloc;
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

/// Threads with a counter of their own; the rest share the last one.
pub const OWNED_SLOTS: usize = 127;

#[repr(align(128))]
struct Slot(AtomicI64);

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: Slot = Slot(AtomicI64::new(0));
static SLOTS: [Slot; OWNED_SLOTS + 1] = [ZERO; OWNED_SLOTS + 1];
/// Slots handed out so far (may exceed `OWNED_SLOTS`).
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's slot index plus one (0: not assigned yet).
    static MY_SLOT: Cell<usize> = const { Cell::new(0) };
}

/// The global allocator of the `cairn` binary: jemalloc, counted.
pub struct CountingAllocator;

/// Adds `delta` bytes to the calling thread's counter.
#[inline]
fn count(delta: i64) {
    let owned = MY_SLOT
        .try_with(|slot| {
            let mut index = slot.get();
            if index == 0 {
                index = NEXT_SLOT.fetch_add(1, Ordering::Relaxed).min(OWNED_SLOTS) + 1;
                slot.set(index);
            }
            index - 1
        })
        .unwrap_or(OWNED_SLOTS);
    let counter = &SLOTS[owned].0;
    if owned < OWNED_SLOTS {
        // Only this thread writes this counter.
        counter.store(counter.load(Ordering::Relaxed) + delta, Ordering::Relaxed);
    } else {
        counter.fetch_add(delta, Ordering::Relaxed);
    }
}

/// The bytes jemalloc hands out for `size` bytes at `align`: its size class
/// (8, 16, then multiples of 16 up to 128, then four classes per doubling:
/// 160, 192, 224, 256, 320, ...), which is what Redis counts
/// (`zmalloc_size`). Pure arithmetic, no call into the allocator.
#[inline]
pub fn size_class(size: usize, align: usize) -> usize {
    let size = size.max(1).next_multiple_of(align.max(1));
    if size <= 8 {
        return 8;
    }
    if size <= 128 {
        return size.next_multiple_of(16);
    }
    // Four classes between 2^g and 2^(g+1): steps of 2^(g-2).
    let group = usize::BITS - 1 - (size - 1).leading_zeros();
    let step = 1usize << (group - 2);
    size.next_multiple_of(step)
}

#[inline]
fn class_of(layout: Layout) -> i64 {
    size_class(layout.size(), layout.align()) as i64
}

// SAFETY: every call is forwarded to jemalloc unchanged; the counting
// touches only atomics and a const-initialised thread-local without a
// destructor, so it neither allocates nor panics.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { INNER.alloc(layout) };
        if !ptr.is_null() {
            count(class_of(layout));
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { INNER.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count(class_of(layout));
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { INNER.dealloc(ptr, layout) };
        count(-class_of(layout));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = unsafe { INNER.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count(size_class(new_size, layout.align()) as i64 - class_of(layout));
        }
        new
    }
}

/// Bytes allocated through [`CountingAllocator`] and not freed, or `None`
/// when it is not the global allocator.
pub fn allocated_bytes() -> Option<u64> {
    let used = NEXT_SLOT.load(Ordering::Relaxed).min(OWNED_SLOTS);
    let mut total: i64 = SLOTS[..used].iter().map(|s| s.0.load(Ordering::Relaxed)).sum();
    total += SLOTS[OWNED_SLOTS].0.load(Ordering::Relaxed);
    (used > 0 && total > 0).then_some(total as u64)
}

/// The process's resident set size in bytes (`/proc/self/statm`).
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

/// Used memory as INFO and `maxmemory` see it: allocated bytes when counted,
/// else the resident set size.
pub fn used_memory() -> u64 {
    allocated_bytes().unwrap_or_else(rss_bytes)
}

/// Whether used memory is exact (the counting allocator is installed).
pub fn is_counted() -> bool {
    allocated_bytes().is_some()
}

#[cfg(test)]
mod tests {
    use super::size_class;

    /// jemalloc's own answer (`nallocx`) for what `Jemalloc` asks it: an
    /// alignment flag unless the alignment is at most 16 and the size.
    fn jemalloc_class(size: usize, align: usize) -> usize {
        let flags = if align <= 16 && align <= size { 0 } else { align.trailing_zeros() as i32 };
        // SAFETY: nallocx only computes a size class; it allocates nothing.
        unsafe { tikv_jemalloc_sys::nallocx(size, flags) }
    }

    #[test]
    fn size_classes_are_jemallocs() {
        let mut size = 1;
        while size <= 4 << 20 {
            assert_eq!(size_class(size, 8), jemalloc_class(size, 8), "size {size}");
            assert_eq!(size_class(size, 16), jemalloc_class(size, 16), "size {size}");
            size += if size < 4096 { 1 } else { size / 64 + 1 };
        }
    }

    #[test]
    fn aligned_requests_round_to_an_aligned_class() {
        for size in [1, 24, 48, 100, 200, 1000] {
            for align in [32, 64] {
                let class = size_class(size, align);
                assert_eq!(class, jemalloc_class(size, align), "size {size} align {align}");
                assert_eq!(class % align, 0, "size {size} align {align}");
            }
        }
    }
}
