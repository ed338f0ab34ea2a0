//! Time as the engine sees it.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (expiry times are absolute milliseconds).
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Microseconds since the Unix epoch.
pub fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// The access clock stored in each entry: seconds, wrapping at 2^32.
pub fn access_clock(now_ms: u64) -> u32 {
    (now_ms / 1000) as u32
}
