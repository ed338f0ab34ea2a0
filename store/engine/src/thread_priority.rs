//! Background threads' priority: work nobody waits for (the `async` syncer,
//! snapshots) runs at a higher nice value than request processing, so a
//! saturated CPU serves requests first.

/// Raises the calling thread's nice value to `nice` (Linux: a thread's own,
/// not the process's), never lowering it: a server started under `nice`
/// keeps its priority. Raising it needs no privilege; a failure only leaves
/// the thread at its priority, so it is logged (naming `what`) and ignored.
pub fn lower_this_thread(nice: i32, what: &str) {
    if !this_threads_nice().is_ok_and(|current| current < nice) {
        return;
    }
    // SAFETY: gettid takes no arguments; setpriority with PRIO_PROCESS and a
    // thread id changes that thread's nice value.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice) };
    if rc != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), nice, thread = what, "could not lower a background thread's priority");
    }
}

/// The calling thread's nice value.
pub fn this_threads_nice() -> std::io::Result<i32> {
    // SAFETY: gettid takes no arguments; getpriority with PRIO_PROCESS and
    // a thread id reads that thread's nice value (-1 is a valid value, so
    // errno tells an error apart).
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, tid);
        match *libc::__errno_location() {
            0 => Ok(nice),
            errno => Err(std::io::Error::from_raw_os_error(errno)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raises_a_threads_nice_value_and_never_lowers_it() {
        let own = this_threads_nice().expect("own nice");
        let (raised, kept) = std::thread::spawn(move || {
            lower_this_thread(own.max(5), "test");
            let raised = this_threads_nice().expect("nice");
            lower_this_thread(own.max(5) - 1, "test");
            (raised, this_threads_nice().expect("nice"))
        })
        .join()
        .expect("thread");
        assert_eq!(raised, own.max(5));
        assert_eq!(kept, raised, "asking for a lower nice value changes nothing");
        assert_eq!(this_threads_nice().expect("own nice"), own, "other threads keep theirs");
    }
}
