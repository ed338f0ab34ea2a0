//! What a key lookup records about the access, for the eviction policies:
//! the access clock always (OBJECT IDLETIME, the `*-lru` policies), and under
//! an LFU policy the logarithmic access counter (OBJECT FREQ, `*-lfu`), as
//! Redis's `updateLFU` does.
//!
//! Process-wide, like the encoding limits: the server sets it from
//! `maxmemory-policy`, `lfu-log-factor` and `lfu-decay-time`.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The counter a new key starts with under an LFU policy (Redis's
/// `LFU_INIT_VAL`), so a key is not evicted before it had a chance to be read.
pub const LFU_INIT_VAL: u8 = 5;

/// Access tracking settings, readable from any thread.
#[derive(Debug)]
pub struct AccessTracking {
    lfu: AtomicBool,
    log_factor: AtomicU64,
    decay_minutes: AtomicU64,
}

/// The settings every lookup reads.
pub static ACCESS: AccessTracking =
    AccessTracking { lfu: AtomicBool::new(false), log_factor: AtomicU64::new(10), decay_minutes: AtomicU64::new(1) };

impl AccessTracking {
    /// Whether an LFU policy is in force (lookups bump the counter).
    #[inline]
    pub fn lfu(&self) -> bool {
        self.lfu.load(Ordering::Relaxed)
    }

    pub fn set_lfu(&self, on: bool) {
        self.lfu.store(on, Ordering::Relaxed);
    }

    /// `lfu-log-factor`: how many accesses it takes to raise the counter.
    pub fn log_factor(&self) -> u64 {
        self.log_factor.load(Ordering::Relaxed)
    }

    pub fn set_log_factor(&self, factor: u64) {
        self.log_factor.store(factor, Ordering::Relaxed);
    }

    /// `lfu-decay-time`: minutes per step the counter decays (0: never).
    pub fn decay_minutes(&self) -> u64 {
        self.decay_minutes.load(Ordering::Relaxed)
    }

    pub fn set_decay_minutes(&self, minutes: u64) {
        self.decay_minutes.store(minutes, Ordering::Relaxed);
    }
}

/// Redis's `LFULogIncr`: raises `counter` by one with probability
/// 1 / ((counter - LFU_INIT_VAL) * log_factor + 1), so it grows with the
/// logarithm of the accesses and saturates at 255.
pub fn lfu_log_incr(counter: u8, log_factor: u64) -> u8 {
    if counter == u8::MAX {
        return counter;
    }
    let base = u64::from(counter.saturating_sub(LFU_INIT_VAL));
    let odds = base.saturating_mul(log_factor).saturating_add(1);
    if odds == 1 || unit_random() * (odds as f64) < 1.0 {
        counter + 1
    } else {
        counter
    }
}

/// A uniform number in [0, 1) from a per-thread xorshift generator: cheap
/// enough for every read under an LFU policy, and the counter needs no more.
fn unit_random() -> f64 {
    thread_local! {
        static STATE: Cell<u64> = const { Cell::new(0) };
    }
    STATE.with(|state| {
        let mut x = state.get();
        if x == 0 {
            x = rand::random::<u64>() | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_grows_with_the_logarithm_of_accesses() {
        let mut counter = LFU_INIT_VAL;
        for _ in 0..100 {
            counter = lfu_log_incr(counter, 10);
        }
        // Reaching c takes about 5 * (c - 5)^2 hits at lfu-log-factor 10
        // (Redis's table: 100 hits reach about 10).
        assert!((7..=14).contains(&counter), "counter after 100 hits: {counter}");
        let mut counter = LFU_INIT_VAL;
        for _ in 0..10_000 {
            counter = lfu_log_incr(counter, 10);
        }
        assert!((35..=65).contains(&counter), "counter after 10k hits: {counter}");
        assert_eq!(lfu_log_incr(255, 10), 255);
        assert_eq!(lfu_log_incr(0, 10), 1, "below the initial value every hit counts");
    }
}
