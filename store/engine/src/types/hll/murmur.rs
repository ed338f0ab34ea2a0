//! MurmurHash64A, Redis's endian-neutral variant, and how an element picks
//! its register and the length of its `00..1` pattern (`hllPatLen`).

use super::{P, Q, REGISTERS};

/// The seed Redis hashes HyperLogLog elements with.
pub const SEED: u64 = 0xadc8_3b19;

const M: u64 = 0xc6a4_a793_5bd1_e995;
const R: u32 = 47;

/// MurmurHash2, 64-bit version, reading 8-byte words little-endian (as
/// Redis does on every architecture).
pub fn murmur_hash64a(key: &[u8], seed: u64) -> u64 {
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut words = key.chunks_exact(8);
    for word in words.by_ref() {
        let mut k = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, &byte) in tail.iter().enumerate().rev() {
            h ^= u64::from(byte) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register `element` updates and the value it proposes: the position
/// of the first 1 bit in the hash bits above the index (1 to `Q + 1`).
pub fn register_and_count(element: &[u8]) -> (usize, u8) {
    let hash = murmur_hash64a(element, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let pattern = (hash >> P) | (1u64 << Q);
    (index, pattern.trailing_zeros() as u8 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_stay_within_the_pattern_bits() {
        for n in 0..10_000u32 {
            let (index, count) = register_and_count(&n.to_le_bytes());
            assert!(index < REGISTERS);
            assert!((1..=Q as u8 + 1).contains(&count));
        }
    }

    #[test]
    fn tail_bytes_and_length_change_the_hash() {
        assert_ne!(murmur_hash64a(b"", SEED), murmur_hash64a(b"\0", SEED));
        assert_ne!(murmur_hash64a(b"abcdefgh", SEED), murmur_hash64a(b"abcdefgh\0", SEED));
        assert_ne!(murmur_hash64a(b"abcdefghi", SEED), murmur_hash64a(b"abcdefghj", SEED));
    }
}
