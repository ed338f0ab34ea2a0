//! The buffer sizes a connection publishes in its shared handle, so that
//! any client's CLIENT LIST / CLIENT INFO can show them: `qbuf`,
//! `qbuf-free`, `rbs`, `rbp`. The connection task stores a value only when
//! it changed (relaxed stores; capacities change rarely), readers load them.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Published buffer sizes of one connection, RESP or native (all 0 for a
/// client without a connection, e.g. a script's).
#[derive(Debug, Default)]
pub struct BufferGauges {
    query_len: AtomicUsize,
    query_capacity: AtomicUsize,
    reply_size: AtomicUsize,
    reply_peak: AtomicUsize,
    /// When the reply peak was last reset (ms, the server clock).
    reply_peak_reset_ms: AtomicU64,
    /// The admin thread's sweep asked the connection to tune its buffers.
    tidy_requested: AtomicBool,
}

/// One reading of a connection's buffers, in CLIENT LIST's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferSizes {
    /// Input bytes read and not yet consumed.
    pub qbuf: usize,
    /// Input buffer capacity beyond `qbuf`.
    pub qbuf_free: usize,
    /// Reply buffer size.
    pub rbs: usize,
    /// Most reply bytes the buffer held since the peak's last reset.
    pub rbp: usize,
}

/// What the connection task last published (it compares against this,
/// not the atomics, so an unchanged value costs no memory access).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shown {
    pub query_len: usize,
    pub query_capacity: usize,
    pub reply_size: usize,
    pub reply_peak: usize,
    pub reply_peak_reset_ms: u64,
}

impl BufferGauges {
    /// The sizes as CLIENT LIST shows them. `running` is the unconsumed
    /// input of the calling client, known exactly while its command runs
    /// (the published length is the one at its previous batch's end).
    pub fn sizes(&self, running: Option<usize>) -> BufferSizes {
        let capacity = self.query_capacity.load(Ordering::Relaxed);
        let qbuf = running.unwrap_or_else(|| self.query_len.load(Ordering::Relaxed));
        BufferSizes {
            qbuf,
            qbuf_free: capacity.saturating_sub(qbuf),
            rbs: self.reply_size.load(Ordering::Relaxed),
            rbp: self.reply_peak.load(Ordering::Relaxed),
        }
    }

    /// The published values, for the sweep's decision.
    pub(crate) fn read(&self) -> Shown {
        Shown {
            query_len: self.query_len.load(Ordering::Relaxed),
            query_capacity: self.query_capacity.load(Ordering::Relaxed),
            reply_size: self.reply_size.load(Ordering::Relaxed),
            reply_peak: self.reply_peak.load(Ordering::Relaxed),
            reply_peak_reset_ms: self.reply_peak_reset_ms.load(Ordering::Relaxed),
        }
    }

    /// Stores what differs between `now` and what was `shown`, and
    /// remembers `now` as shown.
    pub(crate) fn publish(&self, shown: &mut Shown, now: Shown) {
        if now.query_len != shown.query_len {
            self.query_len.store(now.query_len, Ordering::Relaxed);
        }
        if now.query_capacity != shown.query_capacity {
            self.query_capacity.store(now.query_capacity, Ordering::Relaxed);
        }
        if now.reply_size != shown.reply_size {
            self.reply_size.store(now.reply_size, Ordering::Relaxed);
        }
        if now.reply_peak != shown.reply_peak {
            self.reply_peak.store(now.reply_peak, Ordering::Relaxed);
        }
        if now.reply_peak_reset_ms != shown.reply_peak_reset_ms {
            self.reply_peak_reset_ms.store(now.reply_peak_reset_ms, Ordering::Relaxed);
        }
        *shown = now;
    }

    /// Stores every value (a connection's first publication).
    pub(crate) fn publish_all(&self, shown: &mut Shown, now: Shown) {
        self.query_len.store(now.query_len, Ordering::Relaxed);
        self.query_capacity.store(now.query_capacity, Ordering::Relaxed);
        self.reply_size.store(now.reply_size, Ordering::Relaxed);
        self.reply_peak.store(now.reply_peak, Ordering::Relaxed);
        self.reply_peak_reset_ms.store(now.reply_peak_reset_ms, Ordering::Relaxed);
        *shown = now;
    }

    /// Marks a tune as requested; false when one was already pending (the
    /// connection was woken for it and has not tuned yet: no second wake).
    pub(crate) fn request_tidy(&self) -> bool {
        !self.tidy_requested.swap(true, Ordering::Relaxed)
    }

    /// Whether the sweep asked for a tune.
    pub(crate) fn tidy_requested(&self) -> bool {
        self.tidy_requested.load(Ordering::Relaxed)
    }

    /// Drops a tune request (a store only when one is pending).
    pub(crate) fn drop_tidy(&self) {
        if self.tidy_requested.load(Ordering::Relaxed) {
            self.tidy_requested.store(false, Ordering::Relaxed);
        }
    }
}
