//! A connection's own buffer resizing, the connection task's half of
//! Redis's client cron (the task owns its buffers, so only it resizes them):
//!
//! - input: an empty buffer of a connection idle for [`IDLE_RELEASE_MS`] is
//!   freed; a busy one above [`QUERY_RESIZE_THRESHOLD`] and more than twice
//!   its peak since the last look shrinks toward that peak (never below
//!   [`READ_CHUNK`], which the next read would allocate again);
//! - reply: the buffer kept between batches ("rbs") shrinks to half when
//!   the peak since its last reset stayed below half (down to
//!   [`REPLY_MIN`]), and doubles (up to [`REPLY_CHUNK`]) when a batch
//!   filled it; a bigger batch grows it for that batch only, then it is
//!   trimmed back after the write (as Redis's reply list is freed). A
//!   native connection's reply buffer ([`ReplyGrowth::Kept`]) instead
//!   keeps the size a bigger batch grew it to, so that a steady pipeline
//!   allocates nothing per batch, and halves as a RESP one does.
//!
//! Per batch the connection pays a few comparisons: the peaks, the
//! trim check and whether a tune is due; stores only for changed values.
//! Each reply-buffer resize is counted in the worker's statistics (INFO
//! `reply_buffer_shrinks`, `reply_buffer_expands`), and a change of the
//! published sizes that crosses [`given_back`] moves the connection into or
//! out of the sweep's list ([`super::sweep_list`]).

use super::gauges::Shown;
use super::policy::ReplyBufferPolicy;
use super::sweep_list::given_back;
use super::tuning::Tuning;
use super::{
    IDLE_RELEASE_MS, KEPT_REPLY_MAX, QUERY_RESIZE_THRESHOLD, QUERY_WASTE_MIN, READ_CHUNK, REPLY_CHUNK, REPLY_MIN,
    TUNE_EVERY_MS,
};

/// What a batch bigger than the reply buffer leaves behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyGrowth {
    /// RESP, as Redis: the buffer is grown for that batch only and trimmed
    /// back after the write; a tune doubles it (up to [`REPLY_CHUNK`]) when
    /// a batch filled it.
    PerBatch,
    /// The native protocol (no Redis behaviour to follow, and its GET/SET
    /// path allocates nothing): the buffer keeps the size the batch grew
    /// it to, up to [`KEPT_REPLY_MAX`] (`rbs` shows it); it shrinks when
    /// idle or underused.
    Kept,
}

/// The resizing state of one connection's buffers.
#[derive(Debug)]
pub struct BufferTuner {
    growth: ReplyGrowth,
    /// The reply buffer's size between batches (Redis's `buf_usable_size`).
    reply_size: usize,
    /// Most reply bytes a batch put in it since the last reset, at most
    /// `reply_size` (Redis's `buf_peak`).
    reply_peak: usize,
    reply_peak_reset_ms: u64,
    /// Most input bytes held at once since the last tune (`querybuf_peak`).
    query_peak: usize,
    next_tune_ms: u64,
    shown: Shown,
}

impl BufferTuner {
    /// The buffers a connection starts with, and their state, published
    /// at once. A new connection gets a [`READ_CHUNK`] input buffer and a
    /// full-size reply buffer whose peak starts full and is due for a reset
    /// at the first look: so Redis 7.0.15 behaves (it stamps a new client's
    /// last reset in seconds and compares it with milliseconds), and an idle
    /// new client's reply buffer is down to [`REPLY_MIN`] after two looks.
    /// One that moved from another worker carries on with the sizes it
    /// published there (no input buffer if it had given it back), and
    /// stays in the sweep's list, or out of it, as it was; a new one joins.
    pub fn start(now_ms: u64, growth: ReplyGrowth, t: &Tuning<'_>) -> (Self, Vec<u8>, Vec<u8>) {
        let gauges = t.gauges();
        let was = gauges.read();
        let moved = was.reply_size != 0;
        let mut tuner = BufferTuner {
            growth,
            reply_size: REPLY_CHUNK,
            reply_peak: REPLY_CHUNK,
            reply_peak_reset_ms: 0,
            query_peak: 0,
            next_tune_ms: now_ms + TUNE_EVERY_MS,
            shown: Shown::default(),
        };
        let mut input_size = READ_CHUNK;
        if moved {
            tuner.reply_size = was.reply_size;
            tuner.reply_peak = was.reply_peak;
            tuner.reply_peak_reset_ms = was.reply_peak_reset_ms;
            if was.query_capacity == 0 {
                input_size = 0;
            }
        }
        let input = Vec::with_capacity(input_size);
        let output = Vec::with_capacity(tuner.reply_size);
        let now = tuner.state(input.len(), input.capacity());
        gauges.publish_all(&mut tuner.shown, now);
        if !moved {
            t.sweep.join(t.handle);
        }
        (tuner, input, output)
    }

    /// After a read: notes the input's peak and publishes a changed
    /// capacity (so the calling client's CLIENT LIST sees it; the first
    /// read after an idle release rejoins the sweep's list this way).
    #[inline]
    pub fn after_read(&mut self, input: &Vec<u8>, t: &Tuning<'_>) {
        self.query_peak = self.query_peak.max(input.len());
        if input.capacity() != self.shown.query_capacity {
            let now = Shown { query_capacity: input.capacity(), ..self.shown };
            self.show(now, t);
        }
    }

    /// Publishes `now` if it differs from what was shown, joining or
    /// leaving the sweep's list when the change crosses [`given_back`]
    /// (no lock unless it does).
    #[inline]
    fn show(&mut self, now: Shown, t: &Tuning<'_>) {
        if now == self.shown {
            return;
        }
        let was_given_back = given_back(&self.shown);
        t.gauges().publish(&mut self.shown, now);
        let is_given_back = given_back(&self.shown);
        if is_given_back != was_given_back {
            if is_given_back {
                t.sweep.leave(t.handle.id);
            } else {
                t.sweep.join(t.handle);
            }
        }
    }

    /// After the batch's replies were written: notes the peak, empties
    /// `output` and brings it back to the reply buffer's size (or, for a
    /// [`ReplyGrowth::Kept`] buffer, takes the size it grew to, counted as
    /// an expand).
    #[inline]
    pub fn after_reply(&mut self, output: &mut Vec<u8>, t: &Tuning<'_>) {
        match self.growth {
            ReplyGrowth::PerBatch => {
                self.reply_peak = self.reply_peak.max(output.len().min(self.reply_size));
                output.clear();
                self.trim_reply(output);
            }
            ReplyGrowth::Kept => {
                let grown = output.capacity();
                if grown > self.reply_size && grown <= KEPT_REPLY_MAX {
                    self.reply_size = grown;
                    t.stats.reply_buffer_expands.add(1);
                }
                self.reply_peak = self.reply_peak.max(output.len().min(self.reply_size));
                output.clear();
                self.trim_reply(output);
            }
        }
    }

    /// Brings an empty `output` back to the reply buffer's size.
    #[inline]
    pub fn trim_reply(&self, output: &mut Vec<u8>) {
        if output.capacity() > self.reply_size {
            output.shrink_to(self.reply_size);
        } else if output.capacity() < self.reply_size {
            output.reserve_exact(self.reply_size - output.len());
        }
    }

    /// At the end of a batch run at `now_ms`: tunes when due (and drops a
    /// tune request the sweep may have left), publishes what changed.
    #[inline]
    pub fn end_batch(&mut self, now_ms: u64, input: &mut Vec<u8>, output: &mut Vec<u8>, t: &Tuning<'_>) {
        if now_ms >= self.next_tune_ms {
            self.tune(now_ms, 0, input, output, t);
            t.gauges().drop_tidy();
        } else {
            let now = self.state(input.len(), input.capacity());
            self.show(now, t);
        }
    }

    /// The tune the sweep asked of a connection idle for `idle_ms`. The
    /// request stays pending when nothing changed (the sweep and the
    /// connection disagreed): the sweep then wakes it no more until its
    /// next batch's tune drops the request, so it can never wake it in a loop.
    pub fn tune_idle(&mut self, now_ms: u64, idle_ms: u64, input: &mut Vec<u8>, output: &mut Vec<u8>, t: &Tuning<'_>) {
        let before = self.state(input.len(), input.capacity());
        self.tune(now_ms, idle_ms, input, output, t);
        if self.shown != before {
            t.gauges().drop_tidy();
        }
    }

    /// Resizes both buffers as Redis's client cron does, and publishes.
    fn tune(&mut self, now_ms: u64, idle_ms: u64, input: &mut Vec<u8>, output: &mut Vec<u8>, t: &Tuning<'_>) {
        self.tune_input(idle_ms, input);
        if t.policy.resizing() {
            match self.tune_reply(now_ms, output, t.policy.peak_reset_ms()) {
                Some(Resize::Shrink) => t.stats.reply_buffer_shrinks.add(1),
                Some(Resize::Expand) => t.stats.reply_buffer_expands.add(1),
                None => {}
            }
        }
        self.next_tune_ms = now_ms + TUNE_EVERY_MS;
        let now = self.state(input.len(), input.capacity());
        self.show(now, t);
    }

    fn tune_input(&mut self, idle_ms: u64, input: &mut Vec<u8>) {
        let capacity = input.capacity();
        if capacity - input.len() > QUERY_WASTE_MIN {
            if input.is_empty() && idle_ms >= IDLE_RELEASE_MS {
                *input = Vec::new();
            } else if capacity > QUERY_RESIZE_THRESHOLD && capacity / 2 > self.query_peak {
                input.shrink_to(input.len().max(self.query_peak).max(READ_CHUNK));
            }
        }
        self.query_peak = input.len();
    }

    /// Halves or doubles the reply buffer as its peak says, and resets
    /// the peak when due; returns the resize done, if any.
    fn tune_reply(&mut self, now_ms: u64, output: &mut Vec<u8>, peak_reset_ms: Option<u64>) -> Option<Resize> {
        let size = self.reply_size;
        let resized = if size / 2 >= REPLY_MIN && self.reply_peak < size / 2 {
            Some((REPLY_MIN.max(self.reply_peak + 1), Resize::Shrink))
        } else if self.growth == ReplyGrowth::PerBatch && size * 2 < REPLY_CHUNK * 2 && self.reply_peak == size {
            Some((REPLY_CHUNK.min(size * 2), Resize::Expand))
        } else {
            None
        };
        if peak_reset_ms.is_some_and(|every| now_ms.saturating_sub(self.reply_peak_reset_ms) >= every) {
            // Between batches the buffer holds nothing.
            self.reply_peak = output.len().min(size);
            self.reply_peak_reset_ms = now_ms;
        }
        let (resized, resize) = resized?;
        self.reply_size = resized;
        self.trim_reply(output);
        if self.growth == ReplyGrowth::Kept {
            // What the allocator gave, so the next batch sees no growth.
            self.reply_size = output.capacity();
        }
        Some(resize)
    }

    fn state(&self, query_len: usize, query_capacity: usize) -> Shown {
        Shown {
            query_len,
            query_capacity,
            reply_size: self.reply_size,
            reply_peak: self.reply_peak,
            reply_peak_reset_ms: self.reply_peak_reset_ms,
        }
    }
}

/// A reply buffer's resize (Redis counts each in INFO stats).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resize {
    Shrink,
    Expand,
}

/// Whether an idle connection has something to give back, judged from what
/// it published (the admin thread's sweep asks it to tune only then, so a
/// connection that gave everything back is never woken).
pub(crate) fn idle_needs_tune(shown: &Shown, idle_ms: u64, now_ms: u64, policy: &ReplyBufferPolicy) -> bool {
    if idle_ms < TUNE_EVERY_MS {
        // Busy: it tunes itself at the end of its batches.
        return false;
    }
    let query_free = shown.query_capacity.saturating_sub(shown.query_len);
    if idle_ms >= IDLE_RELEASE_MS && shown.query_len == 0 && query_free > QUERY_WASTE_MIN {
        return true;
    }
    if !policy.resizing() {
        return false;
    }
    let shrinks = shown.reply_size / 2 >= REPLY_MIN && shown.reply_peak < shown.reply_size / 2;
    let peak_resets = shown.reply_peak > 0
        && policy.peak_reset_ms().is_some_and(|every| now_ms.saturating_sub(shown.reply_peak_reset_ms) >= every);
    shrinks || peak_resets
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::client::ClientHandle;
    use crate::client_buffers::{BufferGauges, BufferSizes, SweepList};
    use crate::stats::WorkerStats;

    /// What a tuner reaches, owned by the test.
    struct Shared {
        handle: Arc<ClientHandle>,
        sweep: SweepList,
        policy: ReplyBufferPolicy,
        stats: WorkerStats,
    }

    impl Shared {
        fn new() -> Self {
            let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 6379));
            Shared {
                handle: Arc::new(ClientHandle::new(7, addr, addr, -1, 0, 0)),
                sweep: SweepList::default(),
                policy: ReplyBufferPolicy::default(),
                stats: WorkerStats::new(0),
            }
        }

        fn t(&self) -> Tuning<'_> {
            Tuning { handle: &self.handle, sweep: &self.sweep, policy: &self.policy, stats: &self.stats }
        }

        fn gauges(&self) -> &BufferGauges {
            &self.handle.buffers
        }

        fn start(&self) -> (BufferTuner, Vec<u8>, Vec<u8>) {
            BufferTuner::start(0, ReplyGrowth::PerBatch, &self.t())
        }

        /// (shrinks, expands) counted.
        fn resizes(&self) -> (u64, u64) {
            (self.stats.reply_buffer_shrinks.get(), self.stats.reply_buffer_expands.get())
        }

        fn listed(&self) -> bool {
            !self.sweep.picked(|h| h.id == self.handle.id).is_empty()
        }
    }

    #[test]
    fn idle_input_is_freed_after_two_seconds() {
        let s = Shared::new();
        let (mut t, mut input, mut output) = s.start();
        assert_eq!(
            s.gauges().sizes(None),
            BufferSizes { qbuf: 0, qbuf_free: READ_CHUNK, rbs: REPLY_CHUNK, rbp: REPLY_CHUNK }
        );
        assert!(!idle_needs_tune(&s.gauges().read(), 1_999, 1_999, &s.policy));
        t.tune_idle(1_000, 1_000, &mut input, &mut output, &s.t());
        assert_eq!(input.capacity(), READ_CHUNK);
        assert!(idle_needs_tune(&s.gauges().read(), 2_000, 2_000, &s.policy));
        t.tune_idle(2_000, 2_000, &mut input, &mut output, &s.t());
        assert_eq!(input.capacity(), 0);
        assert_eq!(s.gauges().sizes(None).qbuf_free, 0);
        assert!(!idle_needs_tune(&s.gauges().read(), 2_100, 2_100, &s.policy));
    }

    #[test]
    fn busy_input_shrinks_toward_its_peak() {
        let s = Shared::new();
        let (mut t, mut input, mut output) = s.start();
        input.reserve(512 * 1024);
        input.extend_from_slice(&[b'x'; 400_000]);
        t.after_read(&input, &s.t());
        input.clear();
        t.end_batch(100, &mut input, &mut output, &s.t());
        // The peak was the big request: kept this time.
        assert!(input.capacity() >= 400_000);
        input.extend_from_slice(&[b'x'; 100]);
        t.after_read(&input, &s.t());
        input.clear();
        t.end_batch(200, &mut input, &mut output, &s.t());
        assert_eq!(input.capacity(), READ_CHUNK);
        assert_eq!(s.gauges().sizes(None).qbuf_free, READ_CHUNK);
    }

    #[test]
    fn idle_reply_buffer_shrinks_after_its_peak_resets() {
        let s = Shared::new();
        s.policy.set_peak_reset_ms(100);
        let (mut t, mut input, mut output) = s.start();
        // The first look resets the peak (it starts full), the second shrinks.
        assert!(idle_needs_tune(&s.gauges().read(), 100, 100, &s.policy));
        t.tune_idle(100, 100, &mut input, &mut output, &s.t());
        assert_eq!(s.gauges().sizes(None).rbs, REPLY_CHUNK);
        assert_eq!(s.resizes(), (0, 0));
        assert!(idle_needs_tune(&s.gauges().read(), 150, 150, &s.policy));
        t.tune_idle(200, 200, &mut input, &mut output, &s.t());
        assert_eq!(s.gauges().sizes(None).rbs, REPLY_MIN);
        assert_eq!(output.capacity(), REPLY_MIN);
        assert_eq!(s.resizes(), (1, 0), "one shrink counted, as Redis counts a new idle client's");
        assert!(!idle_needs_tune(&s.gauges().read(), 300, 300, &s.policy));
    }

    #[test]
    fn reply_buffer_doubles_when_filled_up_to_the_chunk() {
        let s = Shared::new();
        s.policy.set_peak_reset_ms(-1);
        let (mut t, mut input, mut output) = s.start();
        t.reply_size = REPLY_MIN;
        t.reply_peak = 0;
        let mut now = 0;
        for expected in [2048, 4096, 8192, 16384, 16384] {
            output.extend_from_slice(&[b'x'; 40_000]);
            t.after_reply(&mut output, &s.t());
            now += TUNE_EVERY_MS;
            t.end_batch(now, &mut input, &mut output, &s.t());
            assert_eq!(s.gauges().sizes(None).rbs, expected);
            assert_eq!(output.capacity(), expected);
        }
        // 1 KiB to 16 KiB: four expands (as redis-server 7.0.15 counts them).
        assert_eq!(s.resizes(), (0, 4));
    }

    #[test]
    fn a_kept_reply_buffer_holds_a_big_batch_size_then_shrinks_when_underused() {
        let s = Shared::new();
        s.policy.set_peak_reset_ms(1_000);
        let (mut t, mut input, mut output) = BufferTuner::start(0, ReplyGrowth::Kept, &s.t());
        let mut now = 0;
        for _ in 0..3 {
            output.extend_from_slice(&[b'x'; 40_000]);
            let grown = output.capacity();
            t.after_reply(&mut output, &s.t());
            assert_eq!(output.capacity(), grown, "no allocation after the first big batch");
            now += TUNE_EVERY_MS;
            t.end_batch(now, &mut input, &mut output, &s.t());
            assert_eq!(s.gauges().sizes(None).rbs, output.capacity());
            assert!(output.capacity() >= 40_000);
        }
        assert_eq!(s.resizes(), (0, 1), "one growth");
        // A batch above the most it keeps is trimmed back after the write.
        let kept = output.capacity();
        output.extend_from_slice(&vec![b'x'; 2 * KEPT_REPLY_MAX]);
        t.after_reply(&mut output, &s.t());
        assert_eq!(output.capacity(), kept);
        assert_eq!(s.resizes(), (0, 1));
        // Small batches from now on: once the peak resets, it shrinks to fit.
        while now < 2_200 {
            output.extend_from_slice(&[b'x'; 100]);
            t.after_reply(&mut output, &s.t());
            now += TUNE_EVERY_MS;
            t.end_batch(now, &mut input, &mut output, &s.t());
        }
        assert_eq!(output.capacity(), REPLY_MIN);
        assert_eq!(s.gauges().sizes(None), BufferSizes { qbuf: 0, qbuf_free: READ_CHUNK, rbs: REPLY_MIN, rbp: 100 });
        assert_eq!(s.resizes(), (1, 1));
    }

    #[test]
    fn no_resize_is_counted_when_resizing_is_off() {
        let s = Shared::new();
        s.policy.set_resizing(false);
        let (mut t, mut input, mut output) = s.start();
        t.tune_idle(10_000, 10_000, &mut input, &mut output, &s.t());
        t.tune_idle(20_000, 20_000, &mut input, &mut output, &s.t());
        assert_eq!(s.gauges().sizes(None).rbs, REPLY_CHUNK);
        assert_eq!(s.resizes(), (0, 0));
    }

    #[test]
    fn a_moved_connection_carries_on_with_its_sizes() {
        let s = Shared::new();
        s.policy.set_peak_reset_ms(100);
        let (mut t, mut input, mut output) = s.start();
        t.tune_idle(100, 100, &mut input, &mut output, &s.t());
        t.tune_idle(2_000, 2_000, &mut input, &mut output, &s.t());
        let (_, input, output) = BufferTuner::start(2_100, ReplyGrowth::PerBatch, &s.t());
        assert_eq!((input.capacity(), output.capacity()), (0, REPLY_MIN));
        assert_eq!(s.gauges().sizes(None), BufferSizes { qbuf: 0, qbuf_free: 0, rbs: REPLY_MIN, rbp: 0 });
        assert!(!s.listed(), "a connection that gave everything back stays out of the list when it moves");
    }

    #[test]
    fn a_tune_that_changes_nothing_leaves_the_request_pending() {
        let s = Shared::new();
        let (mut t, mut input, mut output) = s.start();
        assert!(s.gauges().request_tidy());
        t.tune_idle(500, 500, &mut input, &mut output, &s.t());
        assert!(!s.gauges().request_tidy(), "no second wake while the request is pending");
        t.end_batch(600, &mut input, &mut output, &s.t());
        assert!(s.gauges().request_tidy());
    }

    #[test]
    fn the_sweep_list_holds_a_connection_until_it_gave_everything_back() {
        let s = Shared::new();
        s.policy.set_peak_reset_ms(100);
        let (mut t, mut input, mut output) = s.start();
        assert!(s.listed(), "a new connection joins");
        t.tune_idle(100, 100, &mut input, &mut output, &s.t());
        t.tune_idle(200, 200, &mut input, &mut output, &s.t());
        assert!(s.listed(), "the input buffer is still held");
        t.tune_idle(2_000, 2_000, &mut input, &mut output, &s.t());
        assert_eq!(input.capacity(), 0);
        assert!(!s.listed(), "everything given back: it leaves");
        // The next request's read allocates the input buffer again: it rejoins.
        input.reserve(READ_CHUNK);
        input.extend_from_slice(b"PING\r\n");
        t.after_read(&input, &s.t());
        assert!(s.listed());
        input.clear();
        t.end_batch(2_100, &mut input, &mut output, &s.t());
        assert!(s.listed());
    }
}
