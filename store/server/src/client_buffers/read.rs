//! The read of more request bytes into a connection's input buffer. Once
//! an idle connection's input buffer was released (capacity 0), the wait
//! for its next request holds no buffer: the first bytes land in a small
//! array and the buffer is allocated only when they arrived.

use tokio::io::AsyncReadExt;

use super::READ_CHUNK;
use crate::connection::Stream;

/// Bytes read into the array when the input buffer is released.
const FIRST_READ: usize = 512;

/// Reads more bytes into `input`, keeping at least a quarter of
/// [`READ_CHUNK`] free before the read; returns how many were read
/// (0: the peer closed).
pub(crate) async fn read_more<S: Stream>(stream: &mut S, input: &mut Vec<u8>) -> std::io::Result<usize> {
    if input.capacity() == 0 {
        let mut first = [0u8; FIRST_READ];
        let n = stream.read(&mut first).await?;
        if n > 0 {
            input.reserve(READ_CHUNK);
            input.extend_from_slice(&first[..n]);
        }
        return Ok(n);
    }
    if input.capacity() - input.len() < READ_CHUNK / 4 {
        input.reserve(READ_CHUNK.max(input.len()));
    }
    stream.read_buf(input).await
}
