//! A connection's inbox of push messages that other clients' commands
//! produce for it (client-side caching invalidations), on any worker.
//!
//! Writers append encoded frames under a short lock and set a flag; the
//! connection takes everything at once. The flag lets the connection skip
//! the lock when nothing is queued.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use crate::pubsub::OUTPUT_LIMIT;

/// Encoded frames waiting for their connection.
#[derive(Debug, Default)]
pub struct Inbox {
    frames: Mutex<Vec<u8>>,
    pending: AtomicBool,
}

impl Inbox {
    /// Appends a frame; false (nothing appended) past [`OUTPUT_LIMIT`] bytes.
    pub fn append(&self, frame: &[u8]) -> bool {
        let mut frames = self.frames.lock();
        if frames.len() + frame.len() > OUTPUT_LIMIT {
            return false;
        }
        frames.extend_from_slice(frame);
        self.pending.store(true, Ordering::Release);
        true
    }

    /// Whether something may be queued.
    #[inline]
    pub fn has_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Moves the queued frames to the end of `out`.
    pub fn take_into(&self, out: &mut Vec<u8>) {
        if !self.has_pending() {
            return;
        }
        let mut frames = self.frames.lock();
        self.pending.store(false, Ordering::Release);
        if out.is_empty() {
            std::mem::swap(out, &mut *frames);
        } else {
            out.append(&mut frames);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_come_out_in_order_once() {
        let inbox = Inbox::default();
        assert!(inbox.append(b"a"));
        assert!(inbox.append(b"b"));
        let mut out = b"x".to_vec();
        inbox.take_into(&mut out);
        assert_eq!(out, b"xab");
        assert!(!inbox.has_pending());
        inbox.take_into(&mut out);
        assert_eq!(out, b"xab");
    }
}
