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
//!   trimmed back after the write (as Redis's reply list is freed).
//!
//! Per batch the connection pays a few comparisons: the peaks, the
//! trim check and whether a tune is due; stores only for changed values.

use super::gauges::{BufferGauges, Shown};
use super::policy::ReplyBufferPolicy;
use super::{
    IDLE_RELEASE_MS, QUERY_RESIZE_THRESHOLD, QUERY_WASTE_MIN, READ_CHUNK, REPLY_CHUNK, REPLY_MIN, TUNE_EVERY_MS,
};

/// The resizing state of one connection's buffers.
#[derive(Debug)]
pub struct BufferTuner {
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
    /// published there (no input buffer if it had given it back).
    pub fn start(now_ms: u64, gauges: &BufferGauges) -> (Self, Vec<u8>, Vec<u8>) {
        let was = gauges.read();
        let moved = was.reply_size != 0;
        let mut tuner = BufferTuner {
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
        (tuner, input, output)
    }

    /// After a read: notes the input's peak and publishes a changed
    /// capacity (so the calling client's CLIENT LIST sees it).
    #[inline]
    pub fn after_read(&mut self, input: &Vec<u8>, gauges: &BufferGauges) {
        self.query_peak = self.query_peak.max(input.len());
        if input.capacity() != self.shown.query_capacity {
            let now = Shown { query_capacity: input.capacity(), ..self.shown };
            gauges.publish(&mut self.shown, now);
        }
    }

    /// After the batch's replies were written: notes the peak, empties
    /// `output` and brings it back to the reply buffer's size.
    #[inline]
    pub fn after_reply(&mut self, output: &mut Vec<u8>) {
        self.reply_peak = self.reply_peak.max(output.len().min(self.reply_size));
        output.clear();
        self.trim_reply(output);
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
    pub fn end_batch(
        &mut self,
        now_ms: u64,
        input: &mut Vec<u8>,
        output: &mut Vec<u8>,
        gauges: &BufferGauges,
        policy: &ReplyBufferPolicy,
    ) {
        if now_ms >= self.next_tune_ms {
            self.tune(now_ms, 0, input, output, gauges, policy);
            gauges.drop_tidy();
        } else {
            let now = self.state(input.len(), input.capacity());
            gauges.publish(&mut self.shown, now);
        }
    }

    /// The tune the sweep asked of a connection idle for `idle_ms`. The
    /// request stays pending when nothing changed (the sweep and the
    /// connection disagreed): the sweep then wakes it no more until its
    /// next batch's tune drops the request, so it can never wake it in a loop.
    pub fn tune_idle(
        &mut self,
        now_ms: u64,
        idle_ms: u64,
        input: &mut Vec<u8>,
        output: &mut Vec<u8>,
        gauges: &BufferGauges,
        policy: &ReplyBufferPolicy,
    ) {
        let before = self.state(input.len(), input.capacity());
        self.tune(now_ms, idle_ms, input, output, gauges, policy);
        if self.shown != before {
            gauges.drop_tidy();
        }
    }

    /// Resizes both buffers as Redis's client cron does, and publishes.
    fn tune(
        &mut self,
        now_ms: u64,
        idle_ms: u64,
        input: &mut Vec<u8>,
        output: &mut Vec<u8>,
        gauges: &BufferGauges,
        policy: &ReplyBufferPolicy,
    ) {
        self.tune_input(idle_ms, input);
        if policy.resizing() {
            self.tune_reply(now_ms, output, policy.peak_reset_ms());
        }
        self.next_tune_ms = now_ms + TUNE_EVERY_MS;
        let now = self.state(input.len(), input.capacity());
        gauges.publish(&mut self.shown, now);
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

    fn tune_reply(&mut self, now_ms: u64, output: &mut Vec<u8>, peak_reset_ms: Option<u64>) {
        let size = self.reply_size;
        let resized = if size / 2 >= REPLY_MIN && self.reply_peak < size / 2 {
            Some(REPLY_MIN.max(self.reply_peak + 1))
        } else if size * 2 < REPLY_CHUNK * 2 && self.reply_peak == size {
            Some(REPLY_CHUNK.min(size * 2))
        } else {
            None
        };
        if peak_reset_ms.is_some_and(|every| now_ms.saturating_sub(self.reply_peak_reset_ms) >= every) {
            // Between batches the buffer holds nothing.
            self.reply_peak = output.len().min(size);
            self.reply_peak_reset_ms = now_ms;
        }
        if let Some(resized) = resized {
            self.reply_size = resized;
            self.trim_reply(output);
        }
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
    use super::*;
    use crate::client_buffers::BufferSizes;

    fn start(gauges: &BufferGauges) -> (BufferTuner, Vec<u8>, Vec<u8>) {
        BufferTuner::start(0, gauges)
    }

    #[test]
    fn idle_input_is_freed_after_two_seconds() {
        let gauges = BufferGauges::default();
        let policy = ReplyBufferPolicy::default();
        let (mut t, mut input, mut output) = start(&gauges);
        assert_eq!(
            gauges.sizes(None),
            BufferSizes { qbuf: 0, qbuf_free: READ_CHUNK, rbs: REPLY_CHUNK, rbp: REPLY_CHUNK }
        );
        assert!(!idle_needs_tune(&gauges.read(), 1_999, 1_999, &policy));
        t.tune_idle(1_000, 1_000, &mut input, &mut output, &gauges, &policy);
        assert_eq!(input.capacity(), READ_CHUNK);
        assert!(idle_needs_tune(&gauges.read(), 2_000, 2_000, &policy));
        t.tune_idle(2_000, 2_000, &mut input, &mut output, &gauges, &policy);
        assert_eq!(input.capacity(), 0);
        assert_eq!(gauges.sizes(None).qbuf_free, 0);
        assert!(!idle_needs_tune(&gauges.read(), 2_100, 2_100, &policy));
    }

    #[test]
    fn busy_input_shrinks_toward_its_peak() {
        let gauges = BufferGauges::default();
        let policy = ReplyBufferPolicy::default();
        let (mut t, mut input, mut output) = start(&gauges);
        input.reserve(512 * 1024);
        input.extend_from_slice(&[b'x'; 400_000]);
        t.after_read(&input, &gauges);
        input.clear();
        t.end_batch(100, &mut input, &mut output, &gauges, &policy);
        // The peak was the big request: kept this time.
        assert!(input.capacity() >= 400_000);
        input.extend_from_slice(&[b'x'; 100]);
        t.after_read(&input, &gauges);
        input.clear();
        t.end_batch(200, &mut input, &mut output, &gauges, &policy);
        assert_eq!(input.capacity(), READ_CHUNK);
        assert_eq!(gauges.sizes(None).qbuf_free, READ_CHUNK);
    }

    #[test]
    fn idle_reply_buffer_shrinks_after_its_peak_resets() {
        let gauges = BufferGauges::default();
        let policy = ReplyBufferPolicy::default();
        policy.set_peak_reset_ms(100);
        let (mut t, mut input, mut output) = start(&gauges);
        // The first look resets the peak (it starts full), the second shrinks.
        assert!(idle_needs_tune(&gauges.read(), 100, 100, &policy));
        t.tune_idle(100, 100, &mut input, &mut output, &gauges, &policy);
        assert_eq!(gauges.sizes(None).rbs, REPLY_CHUNK);
        assert!(idle_needs_tune(&gauges.read(), 150, 150, &policy));
        t.tune_idle(200, 200, &mut input, &mut output, &gauges, &policy);
        assert_eq!(gauges.sizes(None).rbs, REPLY_MIN);
        assert_eq!(output.capacity(), REPLY_MIN);
        assert!(!idle_needs_tune(&gauges.read(), 300, 300, &policy));
    }

    #[test]
    fn reply_buffer_doubles_when_filled_up_to_the_chunk() {
        let gauges = BufferGauges::default();
        let policy = ReplyBufferPolicy::default();
        policy.set_peak_reset_ms(-1);
        let (mut t, mut input, mut output) = start(&gauges);
        t.reply_size = REPLY_MIN;
        t.reply_peak = 0;
        let mut now = 0;
        for expected in [2048, 4096, 8192, 16384, 16384] {
            output.extend_from_slice(&[b'x'; 40_000]);
            t.after_reply(&mut output);
            now += TUNE_EVERY_MS;
            t.end_batch(now, &mut input, &mut output, &gauges, &policy);
            assert_eq!(gauges.sizes(None).rbs, expected);
            assert_eq!(output.capacity(), expected);
        }
    }

    #[test]
    fn a_moved_connection_carries_on_with_its_sizes() {
        let gauges = BufferGauges::default();
        let policy = ReplyBufferPolicy::default();
        policy.set_peak_reset_ms(100);
        let (mut t, mut input, mut output) = start(&gauges);
        t.tune_idle(100, 100, &mut input, &mut output, &gauges, &policy);
        t.tune_idle(2_000, 2_000, &mut input, &mut output, &gauges, &policy);
        let (_, input, output) = BufferTuner::start(2_100, &gauges);
        assert_eq!((input.capacity(), output.capacity()), (0, REPLY_MIN));
        assert_eq!(gauges.sizes(None), BufferSizes { qbuf: 0, qbuf_free: 0, rbs: REPLY_MIN, rbp: 0 });
    }

    #[test]
    fn a_tune_that_changes_nothing_leaves_the_request_pending() {
        let gauges = BufferGauges::default();
        let policy = ReplyBufferPolicy::default();
        let (mut t, mut input, mut output) = start(&gauges);
        assert!(gauges.request_tidy());
        t.tune_idle(500, 500, &mut input, &mut output, &gauges, &policy);
        assert!(!gauges.request_tidy(), "no second wake while the request is pending");
        t.end_batch(600, &mut input, &mut output, &gauges, &policy);
        assert!(gauges.request_tidy());
    }
}
