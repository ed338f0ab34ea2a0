//! A stored value with its expiry and last access time.

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
}

impl Entry {
    pub fn new(value: Value, now_ms: u64) -> Self {
        Entry { value, expire_at_ms: NO_EXPIRY, access: crate::clock::access_clock(now_ms) }
    }

    /// Absolute expiry in Unix milliseconds, if any.
    pub fn expire_at(&self) -> Option<u64> {
        (self.expire_at_ms != NO_EXPIRY).then_some(self.expire_at_ms)
    }

    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at_ms != NO_EXPIRY && self.expire_at_ms <= now_ms
    }
}
