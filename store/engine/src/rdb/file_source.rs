//! The byte source of an RDB file reader: any [`Read`], with the offset
//! read so far and the running CRC-64 of it. Bytes a claimed length asks
//! for are read in bounded chunks, so a lying length allocates no more than
//! what the file really holds (plus one chunk).

use std::io::Read;

use super::crc64::crc64;
use super::file_error::RdbFileError;

/// The most bytes read (and allocated) ahead of what has arrived.
const CHUNK: usize = 64 * 1024;

/// A reader that counts and checksums what it reads.
pub struct Source<R> {
    inner: R,
    offset: u64,
    crc: u64,
}

impl<R: Read> Source<R> {
    pub fn new(inner: R) -> Self {
        Source { inner, offset: 0, crc: 0 }
    }

    /// Bytes read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The CRC-64 of every byte read so far.
    pub fn crc(&self) -> u64 {
        self.crc
    }

    /// Fills `buf`; `inside` names what was being read if the file ends.
    pub fn read_exact(&mut self, buf: &mut [u8], inside: &'static str) -> Result<(), RdbFileError> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.inner.read(&mut buf[filled..]) {
                Ok(0) => {
                    self.advance(&buf[..filled]);
                    return Err(RdbFileError::Truncated { offset: self.offset, inside });
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    self.advance(&buf[..filled]);
                    return Err(RdbFileError::Io { offset: self.offset, source });
                }
            }
        }
        self.advance(buf);
        Ok(())
    }

    fn advance(&mut self, bytes: &[u8]) {
        self.crc = crc64(self.crc, bytes);
        self.offset += bytes.len() as u64;
    }

    pub fn u8(&mut self, inside: &'static str) -> Result<u8, RdbFileError> {
        let mut b = [0u8; 1];
        self.read_exact(&mut b, inside)?;
        Ok(b[0])
    }

    pub fn array<const N: usize>(&mut self, inside: &'static str) -> Result<[u8; N], RdbFileError> {
        let mut b = [0u8; N];
        self.read_exact(&mut b, inside)?;
        Ok(b)
    }

    /// Appends `n` bytes to `out`, growing it one chunk at a time.
    pub fn copy_into(&mut self, out: &mut Vec<u8>, n: u64, inside: &'static str) -> Result<(), RdbFileError> {
        let mut left = n;
        while left > 0 {
            let step = usize::try_from(left).map_or(CHUNK, |l| l.min(CHUNK));
            let start = out.len();
            out.resize(start + step, 0);
            self.read_exact(&mut out[start..], inside)?;
            left -= step as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_checksums_and_reports_the_end() {
        let mut s = Source::new(&b"123456789"[..]);
        assert_eq!(s.array::<4>("head").unwrap(), *b"1234");
        let mut out = Vec::new();
        s.copy_into(&mut out, 5, "tail").unwrap();
        assert_eq!(out, b"56789");
        assert_eq!(s.offset(), 9);
        assert_eq!(s.crc(), 0xe9c6d914c4b8d9ca);
        assert!(matches!(s.u8("more"), Err(RdbFileError::Truncated { offset: 9, inside: "more" })));
    }

    #[test]
    fn a_huge_claimed_length_allocates_at_most_one_chunk_more_than_present() {
        let mut s = Source::new(&[7u8; 10][..]);
        let mut out = Vec::new();
        assert!(s.copy_into(&mut out, u64::MAX, "string").is_err());
        assert!(out.capacity() <= CHUNK * 2);
        assert_eq!(s.offset(), 10);
    }
}
