//! A stored value with its expiry, last access time and LFU counter.

use crate::access::{lfu_log_incr, ACCESS, LFU_INIT_VAL};
use crate::value::Value;

/// No expiry.
pub const NO_EXPIRY: u64 = 0;

/// One key's data.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub value: Value,
    /// Absolute expiry in Unix milliseconds, or [`NO_EXPIRY`].
    pub(crate) expire_at_ms: u64,
    /// Last access, in [`crate::clock::access_clock`] seconds (OBJECT IDLETIME).
    pub access: u32,
    /// The LFU state as Redis lays it out: the minute of the last decrement
    /// ([`crate::clock::lfu_minutes`]) above an 8-bit counter (OBJECT FREQ).
    /// Starts at [`LFU_INIT_VAL`] under an LFU policy, 0 otherwise; lookups
    /// raise it under an LFU policy ([`Entry::touch`]).
    lfu: u32,
}

impl Entry {
    pub fn new(value: Value, now_ms: u64) -> Self {
        let mut entry = Entry { value, expire_at_ms: NO_EXPIRY, access: crate::clock::access_clock(now_ms), lfu: 0 };
        if ACCESS.lfu() {
            entry.set_lfu_counter(LFU_INIT_VAL, now_ms);
        }
        entry
    }

    /// Records an access (a lookup by a command): the access clock, and under
    /// an LFU policy the decayed counter raised logarithmically (Redis's
    /// `updateLFU`).
    #[inline]
    pub fn touch(&mut self, now_ms: u64) {
        self.access = crate::clock::access_clock(now_ms);
        if ACCESS.lfu() {
            let counter = self.lfu_counter(now_ms, ACCESS.decay_minutes());
            self.set_lfu_counter(lfu_log_incr(counter, ACCESS.log_factor()), now_ms);
        }
    }

    /// Sets the LFU counter, stamped with the current minute (Redis's
    /// `objectSetLRUOrLFU` for RESTORE ... FREQ).
    pub fn set_lfu_counter(&mut self, counter: u8, now_ms: u64) {
        self.lfu = (u32::from(crate::clock::lfu_minutes(now_ms)) << 8) | u32::from(counter);
    }

    /// The LFU counter less one for every `decay_minutes` elapsed since its
    /// stamp, as Redis's `LFUDecrAndReturn` (`lfu-decay-time` 0: no decay).
    pub fn lfu_counter(&self, now_ms: u64, decay_minutes: u64) -> u8 {
        let counter = (self.lfu & 0xFF) as u8;
        if decay_minutes == 0 {
            return counter;
        }
        let stamp = (self.lfu >> 8) as u16;
        let periods = crate::clock::lfu_minutes_since(stamp, now_ms) / decay_minutes;
        counter.saturating_sub(u8::try_from(periods).unwrap_or(u8::MAX))
    }

    /// Absolute expiry in Unix milliseconds, if any.
    pub fn expire_at(&self) -> Option<u64> {
        (self.expire_at_ms != NO_EXPIRY).then_some(self.expire_at_ms)
    }

    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at_ms != NO_EXPIRY && self.expire_at_ms <= now_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lfu_counter_decays_one_per_period() {
        let minute = 60_000;
        let mut entry = Entry::new(Value::Str(crate::StrValue::Int(1)), 0);
        assert_eq!(entry.lfu_counter(0, 1), 0);
        entry.set_lfu_counter(100, 10 * minute);
        assert_eq!(entry.lfu_counter(10 * minute, 1), 100);
        assert_eq!(entry.lfu_counter(13 * minute, 1), 97);
        assert_eq!(entry.lfu_counter(14 * minute, 2), 98);
        assert_eq!(entry.lfu_counter(500 * minute, 1), 0);
        assert_eq!(entry.lfu_counter(500 * minute, 0), 100);
    }
}
