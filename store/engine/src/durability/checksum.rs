//! CRC-32C of log records, fast on the short records most writes produce.
//!
//! The `crc32c` crate is fast on long buffers (three interleaved streams of
//! the SSE 4.2 `crc32` instruction, tables to combine them) but pays that
//! set-up on every call: about 160 instructions for a 70-byte `SET` record,
//! 6% of the server's instructions per `SET` under callgrind
//! (docs/benchmarks.md, "CPU cost per operation"). Buffers up to
//! [`SHORT_MAX`] bytes take one `crc32` per 8 bytes instead; longer ones,
//! and CPUs without SSE 4.2, go to the crate. Both compute the same CRC-32C
//! (Castagnoli, reflected, initial and final value `!0`), which the tests
//! check against the crate on every length and alignment up to past the
//! boundary.

/// The longest buffer the one-stream loop takes; beyond it the crate's
/// interleaved streams win.
const SHORT_MAX: usize = 256;

/// CRC-32C of `data`, as `crc32c::crc32c` computes it.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if data.len() <= SHORT_MAX && std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2 (checked just above).
        return unsafe { short_sse42(data) };
    }
    ::crc32c::crc32c(data)
}

/// One `crc32` instruction per 8 bytes, then per byte for the tail.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn short_sse42(data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let mut crc = u64::from(u32::MAX);
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        crc = _mm_crc32_u64(crc, u64::from_le_bytes(bytes));
    }
    // _mm_crc32_u64 leaves the CRC in the low 32 bits.
    let mut crc = crc as u32;
    for &byte in words.remainder() {
        crc = _mm_crc32_u8(crc, byte);
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answer() {
        assert_eq!(crc32c(b""), 0);
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn agrees_with_the_crate_on_every_length_and_alignment() {
        // A fixed pseudo-random buffer (xorshift), so failures reproduce.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let buffer: Vec<u8> = (0..SHORT_MAX * 2 + 16)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        for offset in 0..8 {
            for len in 0..=SHORT_MAX * 2 {
                let data = &buffer[offset..offset + len];
                assert_eq!(crc32c(data), ::crc32c::crc32c(data), "offset {offset} length {len}");
            }
        }
    }
}
