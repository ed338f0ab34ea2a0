//! The process's allocator: jemalloc (the allocator Redis ships with) under
//! the counting allocator of the `cairn` binary, and what INFO and MEMORY
//! read from it.
//!
//! The `cairn` binary installs [`crate::used_memory::CountingAllocator`],
//! which forwards every call to jemalloc. Servers started in-process (tests,
//! the embedded API) run on whatever allocator their program chose; there
//! jemalloc holds nothing, so its statistics would describe an empty heap:
//! [`installed`] tells the two apart, and the callers fall back to what
//! Redis reports without jemalloc (`libc`, figures derived from the RSS).
//!
//! jemalloc's statistics are a snapshot refreshed by advancing its epoch, a
//! few microseconds: INFO and MEMORY STATS take one per call, as Redis's
//! cron does ten times a second.

use std::ffi::c_char;

use tikv_jemalloc_ctl::{epoch, stats};

/// What `mem_allocator` shows when jemalloc serves the process.
pub const JEMALLOC_NAME: &str = "jemalloc-5.3.0";

/// jemalloc's view of the heap, in bytes (Redis's `allocator_*` fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapStats {
    /// Bytes in live allocations (size classes, not requested sizes).
    pub allocated: u64,
    /// Bytes in pages holding live allocations (allocated plus the free
    /// slots of those pages).
    pub active: u64,
    /// Bytes of physically resident pages jemalloc maps (active plus dirty
    /// pages not yet returned and its metadata).
    pub resident: u64,
}

/// Whether jemalloc serves this process (the `cairn` binary's allocator).
pub fn installed() -> bool {
    crate::used_memory::is_counted()
}

/// The allocator's name as INFO `mem_allocator` shows it.
pub fn name() -> &'static str {
    if installed() {
        JEMALLOC_NAME
    } else {
        "libc"
    }
}

/// A fresh snapshot of jemalloc's heap figures, or `None` when jemalloc does
/// not serve this process or cannot report.
pub fn heap_stats() -> Option<HeapStats> {
    if !installed() {
        return None;
    }
    epoch::advance().ok()?;
    Some(HeapStats {
        allocated: stats::allocated::read().ok()? as u64,
        active: stats::active::read().ok()? as u64,
        resident: stats::resident::read().ok()? as u64,
    })
}

/// Returns unused dirty pages to the operating system (MEMORY PURGE): every
/// jemalloc arena's, or the C library's free memory (`malloc_trim`) when
/// jemalloc does not serve this process.
pub fn purge() {
    if installed() {
        // "arena.<MALLCTL_ARENAS_ALL>.purge" takes and returns nothing.
        let name = b"arena.4096.purge\0";
        // SAFETY: a NUL-terminated control name; null old/new pointers with
        // zero lengths are how jemalloc's void controls are called.
        let rc = unsafe {
            tikv_jemalloc_sys::mallctl(
                name.as_ptr() as *const c_char,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        if rc != 0 {
            tracing::warn!(errno = rc, "jemalloc refused to purge its arenas");
        }
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it is
    // thread-safe and has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// jemalloc's own statistics report (MEMORY MALLOC-STATS), or `None` when
/// jemalloc does not serve this process.
pub fn report() -> Option<String> {
    if !installed() {
        return None;
    }
    let mut text = Vec::new();
    tikv_jemalloc_ctl::stats_print::stats_print(&mut text, tikv_jemalloc_ctl::stats_print::Options::default()).ok()?;
    Some(String::from_utf8_lossy(&text).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Unit tests run on the test harness's allocator, not jemalloc: every
    // figure must say so rather than describe jemalloc's empty heap.
    #[test]
    fn without_jemalloc_installed_nothing_claims_it() {
        assert_eq!(name(), "libc");
        assert_eq!(heap_stats(), None);
        assert_eq!(report(), None);
        purge();
    }
}
