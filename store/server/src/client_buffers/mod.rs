//! A connection's input (query) and reply buffers: how big they are kept,
//! when they shrink or grow, and how their sizes reach CLIENT LIST, as in
//! Redis 7.0 (`clientsCronResizeQueryBuffer`, `clientsCronResizeOutputBuffer`).
//!
//! - [`gauges`]: the sizes a connection publishes in its shared handle
//!   (`qbuf`, `qbuf-free`, `rbs`, `rbp`), read by any client's CLIENT LIST;
//! - [`tuner`]: the connection's own resizing, run by the connection task
//!   (it owns its buffers) at most every [`TUNE_EVERY_MS`] while busy;
//! - [`cron`]: the sweep on the admin thread that asks idle connections
//!   with something to give back to tune themselves;
//! - [`sweep_list`]: the connections the sweep looks at (those that have
//!   not given everything back);
//! - [`tuning`]: what a tuner reaches beyond its buffers (handle, list,
//!   policy, the worker's resize counters);
//! - [`policy`]: `DEBUG REPLYBUFFER peak-reset-time|resizing`;
//! - [`read`]: the read that waits without a buffer once the input
//!   buffer of an idle connection was released.

pub mod cron;
pub mod gauges;
pub mod policy;
pub mod read;
pub mod sweep_list;
pub mod tuner;
pub mod tuning;

pub use gauges::{BufferGauges, BufferSizes};
pub use policy::ReplyBufferPolicy;
pub use sweep_list::SweepList;
pub use tuner::{BufferTuner, ReplyGrowth};
pub use tuning::Tuning;

/// Redis's `PROTO_IOBUF_LEN`: the input buffer's usual size, and the least
/// free space kept before a read.
pub const READ_CHUNK: usize = 16 * 1024;
/// Redis's `PROTO_RESIZE_THRESHOLD`: a busy connection's input buffer
/// above this size shrinks when it is more than twice its recent peak.
pub const QUERY_RESIZE_THRESHOLD: usize = 32 * 1024;
/// The input buffer is resized only when it wastes more than this.
pub const QUERY_WASTE_MIN: usize = 4 * 1024;
/// After this long without a command, a connection's empty input buffer
/// is freed.
pub const IDLE_RELEASE_MS: u64 = 2_000;
/// Redis's `PROTO_REPLY_MIN_BYTES`: the smallest reply buffer.
pub const REPLY_MIN: usize = 1024;
/// Redis's `PROTO_REPLY_CHUNK_BYTES`: the reply buffer grows up to this.
pub const REPLY_CHUNK: usize = 16 * 1024;
/// A [`ReplyGrowth::Kept`] reply buffer (the native protocol's) keeps at
/// most this size between batches: a bigger batch's buffer is trimmed back
/// after the write, so one huge reply is not held until the peak resets.
pub const KEPT_REPLY_MAX: usize = 1024 * 1024;
/// How often a connection's buffers are looked at (Redis's client cron
/// at its default `hz` 10).
pub const TUNE_EVERY_MS: u64 = 100;
