//! What a native connection keeps between requests: buffers reused for
//! every request, so that a GET or SET allocates nothing on the protocol
//! path once they have grown to the size of the connection's replies.

/// Per-connection reusable state.
#[derive(Debug)]
pub struct Session {
    /// The dispatcher writes each command's RESP3 reply here; it is then
    /// translated into the output buffer and cleared. Not one of the
    /// buffers CLIENT LIST shows (Redis has no such buffer): it holds one
    /// reply at a time, shrinks when empty above 1 MiB, and is freed with
    /// the input buffer when the connection is idle (it grows back with
    /// the next reply).
    pub scratch: Vec<u8>,
    /// The argv vector's allocation, recycled between requests.
    pub spare: Vec<&'static [u8]>,
    /// Whether the handshake succeeded.
    pub greeted: bool,
}

impl Default for Session {
    fn default() -> Self {
        Session { scratch: Vec::with_capacity(4096), spare: Vec::with_capacity(16), greeted: false }
    }
}
