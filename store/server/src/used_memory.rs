//! Bytes the process has allocated and not yet freed: INFO `used_memory` and
//! what `maxmemory` is compared with, as Redis's `zmalloc_used_memory`.
//!
//! [`CountingAllocator`] wraps the system allocator and keeps a running
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

use std::alloc::{GlobalAlloc, Layout, System};
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

/// The global allocator of the `cairn` binary: the system allocator, counted.
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

// SAFETY: every call is forwarded to `System` unchanged; the counting
// touches only atomics and a const-initialised thread-local without a
// destructor, so it neither allocates nor panics.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(layout.size() as i64);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count(layout.size() as i64);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count(new_size as i64 - layout.size() as i64);
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

/// Returns free heap memory to the operating system where the allocator can
/// (glibc's `malloc_trim`), as MEMORY PURGE asks Redis's jemalloc to.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it is
    // thread-safe and has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}
