//! A server's Lua memory figures: `used_memory_lua` (EVAL's interpreters)
//! and `used_memory_vm_functions` (the functions' interpreters), each the
//! bytes of every interpreter of its kind (one per thread that has run such
//! a script) summed per server. Each interpreter remembers what it last
//! added to which server's total, moves it when it runs for another server
//! (the embedded database's caller threads may serve several), and takes it
//! back when its thread ends.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A server's total (INFO `used_memory_lua` or `used_memory_vm_functions`).
#[derive(Debug, Default)]
pub struct LuaMemory(Arc<AtomicUsize>);

impl LuaMemory {
    pub fn bytes(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// What one interpreter has added to a server's total.
#[derive(Debug)]
pub struct Reported {
    total: Arc<AtomicUsize>,
    bytes: usize,
}

impl Reported {
    /// The interpreter now uses `bytes` and last ran for `total`'s server.
    pub fn update(slot: &mut Option<Reported>, total: &LuaMemory, bytes: usize) {
        match slot {
            Some(reported) if Arc::ptr_eq(&reported.total, &total.0) => {
                reported.total.fetch_add(bytes, Ordering::Relaxed);
                reported.total.fetch_sub(reported.bytes, Ordering::Relaxed);
                reported.bytes = bytes;
            }
            _ => {
                // Dropping the old report takes its bytes back from its server.
                total.0.fetch_add(bytes, Ordering::Relaxed);
                *slot = Some(Reported { total: total.0.clone(), bytes });
            }
        }
    }
}

impl Reported {
    /// The interpreter now uses `bytes` (for the server it last reported to).
    pub fn set(&mut self, bytes: usize) {
        self.total.fetch_add(bytes, Ordering::Relaxed);
        self.total.fetch_sub(self.bytes, Ordering::Relaxed);
        self.bytes = bytes;
    }
}

impl Drop for Reported {
    fn drop(&mut self) {
        self.total.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_total_is_the_sum_of_the_interpreters_last_reports() {
        let server = LuaMemory::default();
        let (mut first, mut second) = (None, None);
        Reported::update(&mut first, &server, 100);
        Reported::update(&mut second, &server, 40);
        assert_eq!(server.bytes(), 140);
        Reported::update(&mut first, &server, 70);
        assert_eq!(server.bytes(), 110);
        drop(second.take());
        assert_eq!(server.bytes(), 70);
    }

    #[test]
    fn an_interpreter_moves_its_bytes_to_the_server_it_last_ran_for() {
        let (a, b) = (LuaMemory::default(), LuaMemory::default());
        let mut interpreter = None;
        Reported::update(&mut interpreter, &a, 50);
        Reported::update(&mut interpreter, &b, 60);
        assert_eq!((a.bytes(), b.bytes()), (0, 60));
    }
}
