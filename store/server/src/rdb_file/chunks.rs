//! The RDB image's bytes in bounded chunks, from the blocking thread that
//! writes the image to the connection task that sends it: a [`Write`] that
//! fills a buffer of at most [`CHUNK_BYTES`] and hands it over a bounded
//! channel of [`CHUNKS_QUEUED`]. When the channel is full (the client reads
//! slower than the image is written) the writer waits, so at most
//! `CHUNKS_QUEUED + 2` chunks exist at once (queued, being filled, being
//! sent): 1 MiB whatever the dataset's size. When the connection is gone
//! (the receiver dropped) every write fails, which stops the image.

use std::io::{Error, ErrorKind, Write};

use tokio::sync::mpsc;

/// The most bytes one chunk holds.
pub const CHUNK_BYTES: usize = 256 * 1024;
/// Chunks waiting in the channel at most.
pub const CHUNKS_QUEUED: usize = 2;

/// A new channel of chunks: the writer's end and the connection's end.
pub fn channel() -> (ChunkWriter, mpsc::Receiver<Vec<u8>>) {
    let (tx, rx) = mpsc::channel(CHUNKS_QUEUED);
    (ChunkWriter { tx, buf: Vec::with_capacity(CHUNK_BYTES) }, rx)
}

/// The blocking thread's end: buffers up to a chunk, then sends it,
/// waiting while the channel is full. Must not be used on a runtime worker.
pub struct ChunkWriter {
    tx: mpsc::Sender<Vec<u8>>,
    buf: Vec<u8>,
}

impl ChunkWriter {
    /// Sends the buffered bytes (if any) as one chunk.
    fn send_buffered(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK_BYTES));
        self.tx.blocking_send(chunk).map_err(|_| Error::new(ErrorKind::BrokenPipe, "the client is gone"))
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() == CHUNK_BYTES {
            self.send_buffered()?;
        }
        let taken = bytes.len().min(CHUNK_BYTES - self.buf.len());
        self.buf.extend_from_slice(&bytes[..taken]);
        Ok(taken)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send_buffered()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_arrive_in_order_in_chunks_no_larger_than_the_limit() {
        let (mut writer, mut rx) = channel();
        let bytes: Vec<u8> = (0..CHUNK_BYTES * 3 + 17).map(|i| (i % 251) as u8).collect();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            while let Some(chunk) = rx.blocking_recv() {
                assert!(!chunk.is_empty() && chunk.len() <= CHUNK_BYTES, "{}", chunk.len());
                got.extend_from_slice(&chunk);
            }
            got
        });
        writer.write_all(&bytes[..10]).expect("write");
        writer.write_all(&bytes[10..]).expect("write");
        writer.flush().expect("flush");
        drop(writer);
        assert_eq!(reader.join().expect("reader"), bytes);
    }

    #[test]
    fn writes_fail_once_the_receiver_is_gone() {
        let (mut writer, rx) = channel();
        drop(rx);
        let error = writer.write_all(&vec![0u8; CHUNK_BYTES * 2]).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::BrokenPipe);
    }
}
