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

/// The LFU clock: minutes, wrapping at 2^16 (Redis's `LFUGetTimeInMinutes`).
pub fn lfu_minutes(now_ms: u64) -> u16 {
    (now_ms / 60_000) as u16
}

/// Minutes from LFU clock reading `stamp` to `now_ms`, across one wrap
/// (Redis's `LFUTimeElapsed`).
pub fn lfu_minutes_since(stamp: u16, now_ms: u64) -> u64 {
    let now = lfu_minutes(now_ms);
    if now >= stamp {
        u64::from(now - stamp)
    } else {
        u64::from(u16::MAX - stamp) + u64::from(now)
    }
}

/// The latest time handed out by [`monotonic_now_ms`].
static LAST_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Wall-clock milliseconds that never go backwards across the process: a
/// command that runs after another (on the same key) sees a time at least as
/// late, which keeps logged times consistent with what commands saw.
pub fn monotonic_now_ms() -> u64 {
    use std::sync::atomic::Ordering;
    let now = now_ms();
    let last = LAST_MS.load(Ordering::Relaxed);
    if now <= last {
        return last;
    }
    LAST_MS.fetch_max(now, Ordering::AcqRel).max(now)
}
