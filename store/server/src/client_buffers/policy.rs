//! `DEBUG REPLYBUFFER`: how often a connection's reply peak is reset
//! (`peak-reset-time <ms>|never|reset`) and whether reply buffers are
//! resized at all (`resizing 0|1`). Server-wide, as in Redis.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// Redis's `REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME`.
pub const DEFAULT_PEAK_RESET_MS: i64 = 5_000;

/// The reply buffers' resizing settings.
#[derive(Debug)]
pub struct ReplyBufferPolicy {
    /// Negative: the peak is never reset.
    peak_reset_ms: AtomicI64,
    resizing: AtomicBool,
}

impl Default for ReplyBufferPolicy {
    fn default() -> Self {
        ReplyBufferPolicy { peak_reset_ms: AtomicI64::new(DEFAULT_PEAK_RESET_MS), resizing: AtomicBool::new(true) }
    }
}

impl ReplyBufferPolicy {
    /// How long a reply peak lasts before it is reset; `None`: never.
    pub fn peak_reset_ms(&self) -> Option<u64> {
        u64::try_from(self.peak_reset_ms.load(Ordering::Relaxed)).ok()
    }

    /// Sets the peak's lifetime (a negative value: never reset).
    pub fn set_peak_reset_ms(&self, ms: i64) {
        self.peak_reset_ms.store(ms, Ordering::Relaxed);
    }

    pub fn resizing(&self) -> bool {
        self.resizing.load(Ordering::Relaxed)
    }

    pub fn set_resizing(&self, on: bool) {
        self.resizing.store(on, Ordering::Relaxed);
    }
}
