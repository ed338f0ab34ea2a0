//! The sizes the decoder enforces. Every count read from the wire is
//! checked against one of these before anything is done with it.

/// Decoder limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest frame, header included (bytes).
    pub max_frame_len: usize,
    /// Most operations in one batch frame.
    pub max_batch_ops: usize,
    /// Most byte strings in one list (DEL/EXISTS/MGET keys, MSET items,
    /// COMMAND arguments, handshake options, array items of a reply).
    pub max_list_len: usize,
}

/// Default largest frame: 64 MiB.
pub const DEFAULT_MAX_FRAME_LEN: usize = 64 << 20;
/// Default most operations per batch.
pub const DEFAULT_MAX_BATCH_OPS: usize = 65_536;
/// Default most strings per list (as Redis's multibulk limit).
pub const DEFAULT_MAX_LIST_LEN: usize = 1 << 20;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            max_batch_ops: DEFAULT_MAX_BATCH_OPS,
            max_list_len: DEFAULT_MAX_LIST_LEN,
        }
    }
}
