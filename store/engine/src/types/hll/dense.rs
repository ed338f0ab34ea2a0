//! The dense encoding: 16384 registers of 6 bits packed little-endian-first
//! into 12288 bytes (`HLL_DENSE_GET_REGISTER` / `HLL_DENSE_SET_REGISTER`).
//!
//! Redis reads one byte past the last register (the string's terminating
//! zero); here a missing byte reads as zero and is never written.

use super::{Histogram, REGISTER_MAX};

const BITS: usize = 6;

/// Byte offset and bit shift of register `index`.
fn position(index: usize) -> (usize, u32) {
    (index * BITS / 8, ((index * BITS) & 7) as u32)
}

/// The value of register `index`.
pub fn get(registers: &[u8], index: usize) -> u8 {
    let (byte, shift) = position(index);
    let b0 = u32::from(registers.get(byte).copied().unwrap_or(0));
    let b1 = u32::from(registers.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> shift) | (b1 << (8 - shift))) & u32::from(REGISTER_MAX)) as u8
}

/// Sets register `index` to `value` (at most 63).
pub fn put(registers: &mut [u8], index: usize, value: u8) {
    let (byte, shift) = position(index);
    let value = u32::from(value);
    let max = u32::from(REGISTER_MAX);
    if let Some(b) = registers.get_mut(byte) {
        *b &= !((max << shift) as u8);
        *b |= (value << shift) as u8;
    }
    if let Some(b) = registers.get_mut(byte + 1) {
        *b &= !((max >> (8 - shift)) as u8);
        *b |= (value >> (8 - shift)) as u8;
    }
}

/// Raises register `index` to `count` if it is lower; returns whether it did.
pub fn raise(registers: &mut [u8], index: usize, count: u8) -> bool {
    if count > get(registers, index) {
        put(registers, index, count);
        true
    } else {
        false
    }
}

/// Counts the registers holding each value, four registers per three bytes.
pub fn histogram(registers: &[u8]) -> Histogram {
    let mut histogram = [0u32; 64];
    let max = REGISTER_MAX;
    for group in registers.chunks_exact(3) {
        let (b0, b1, b2) = (group[0], group[1], group[2]);
        histogram[usize::from(b0 & max)] += 1;
        histogram[usize::from((b0 >> 6 | b1 << 2) & max)] += 1;
        histogram[usize::from((b1 >> 4 | b2 << 4) & max)] += 1;
        histogram[usize::from(b2 >> 2)] += 1;
    }
    histogram
}

#[cfg(test)]
mod tests {
    use super::super::{DENSE_LEN, HEADER_LEN, REGISTERS};
    use super::*;

    #[test]
    fn registers_keep_their_values_without_touching_neighbours() {
        let mut registers = vec![0u8; DENSE_LEN - HEADER_LEN];
        let value = |i: usize| ((i * 7 + 3) % 64) as u8;
        for i in 0..REGISTERS {
            put(&mut registers, i, value(i));
        }
        for i in 0..REGISTERS {
            assert_eq!(get(&registers, i), value(i), "register {i}");
        }
        let histogram = histogram(&registers);
        assert_eq!(histogram.iter().sum::<u32>(), REGISTERS as u32);
        assert_eq!(histogram[3], (0..REGISTERS).filter(|&i| value(i) == 3).count() as u32);
    }

    #[test]
    fn raise_only_increases() {
        let mut registers = vec![0u8; 12];
        assert!(raise(&mut registers, 5, 9));
        assert!(!raise(&mut registers, 5, 9));
        assert!(!raise(&mut registers, 5, 2));
        assert_eq!(get(&registers, 5), 9);
    }
}
