//! Protocol limits, with Redis 7.0's defaults.

/// Limits applied while parsing requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest bulk string accepted (`proto-max-bulk-len`).
    pub max_bulk_len: usize,
    /// Largest number of arguments in one multibulk request.
    pub max_multibulk_len: usize,
    /// Largest inline request, and largest `*`/`$` header line.
    pub max_inline_len: usize,
    /// Largest unparsed query buffer per client (`client-query-buffer-limit`).
    pub max_query_buffer: usize,
    /// Whether the client still has to authenticate: then multibulk counts
    /// above 10 and bulks above 16 KiB are refused, as Redis does.
    pub unauthenticated: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 512 * 1024 * 1024,
            max_multibulk_len: 1024 * 1024,
            max_inline_len: 64 * 1024,
            max_query_buffer: 1024 * 1024 * 1024,
            unauthenticated: false,
        }
    }
}

/// Largest multibulk count an unauthenticated client may send.
pub const UNAUTHENTICATED_MAX_MULTIBULK: usize = 10;
/// Largest bulk an unauthenticated client may send.
pub const UNAUTHENTICATED_MAX_BULK: usize = 16 * 1024;
