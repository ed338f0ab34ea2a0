//! The CPUs a thread may run on, captured on one thread and applied on
//! another: a syncer started at runtime (a tier change, spawned from a
//! pinned worker thread) takes the mask of the thread that opened the log,
//! not the pinned worker's single CPU it would otherwise inherit.

/// A thread's CPU affinity mask.
#[derive(Clone, Copy)]
pub struct CpuMask(libc::cpu_set_t);

impl std::fmt::Debug for CpuMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // SAFETY: CPU_COUNT reads the set it is given.
        let count = unsafe { libc::CPU_COUNT(&self.0) };
        f.debug_struct("CpuMask").field("cpus", &count).finish()
    }
}

impl CpuMask {
    /// The calling thread's mask; None if it cannot be read.
    pub fn of_this_thread() -> Option<CpuMask> {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity
        // with pid 0 fills it for the calling thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            let rc = libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
            (rc == 0).then_some(CpuMask(set))
        }
    }

    /// Applies the mask to the calling thread (logged and ignored on failure:
    /// the thread then keeps the mask it inherited).
    pub fn apply_to_this_thread(&self, what: &str) {
        // SAFETY: sched_setaffinity with pid 0 sets the calling thread's mask
        // from a valid cpu_set_t.
        let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.0) };
        if rc != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), thread = what, "could not set a thread's CPU mask");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mask_read_on_one_thread_applies_on_another() {
        let mask = CpuMask::of_this_thread().expect("own mask");
        let applied = std::thread::spawn(move || {
            mask.apply_to_this_thread("test");
            CpuMask::of_this_thread().expect("mask")
        })
        .join()
        .expect("thread");
        // SAFETY: CPU_EQUAL compares two valid sets.
        assert!(unsafe { libc::CPU_EQUAL(&mask.0, &applied.0) });
    }
}
