//! HyperLogLog sketches stored as plain strings, byte for byte as Redis 7.0
//! stores them (`hyperloglog.c`): a 16-byte header (`HYLL`, the encoding,
//! three reserved bytes, the cached cardinality little-endian with its top
//! bit set when stale) followed by 16384 six-bit registers, sparse or dense.
//!
//! Functions here take the string's bytes; [`check`] is what PFADD, PFCOUNT,
//! PFMERGE and PFDEBUG require of a string before anything else.
//!
//! - `murmur`: the hash and the register/count an element maps to;
//! - `dense`: the packed 6-bit registers;
//! - `sparse`: the run-length opcodes, their updates and promotion;
//! - `estimate`: the cardinality estimator;
//! - `selftest`: PFSELFTEST.

mod dense;
mod estimate;
mod murmur;
mod selftest;
mod sparse;

use thiserror::Error;

pub use murmur::{murmur_hash64a, register_and_count};
pub use selftest::self_test;

/// Registers index bits.
pub const P: u32 = 14;
/// Hash bits left for the `00..1` pattern.
pub const Q: usize = 64 - P as usize;
/// Number of registers.
pub const REGISTERS: usize = 1 << P;
/// Largest register value.
pub const REGISTER_MAX: u8 = 63;
/// Header bytes before the registers.
pub const HEADER_LEN: usize = 16;
/// Length of a dense sketch.
pub const DENSE_LEN: usize = HEADER_LEN + (REGISTERS * 6).div_ceil(8);

const MAGIC: &[u8; 4] = b"HYLL";
const ENCODING_OFFSET: usize = 4;
const CARD_OFFSET: usize = 8;
const STALE_BIT: u8 = 0x80;

/// How many registers hold each value.
pub type Histogram = [u32; 64];

/// A sketch's encoding (the header's fifth byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Dense = 0,
    Sparse = 1,
}

impl Encoding {
    /// The name PFDEBUG ENCODING replies.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Dense => "dense",
            Encoding::Sparse => "sparse",
        }
    }
}

/// Why a string is not a usable sketch, as Redis words it.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum HllError {
    /// Wrong header or length.
    #[error("WRONGTYPE Key is not a valid HyperLogLog string value.")]
    NotHll,
    /// Valid header, invalid sparse opcodes.
    #[error("INVALIDOBJ Corrupted HLL object detected")]
    Corrupt,
}

/// An empty sketch: sparse, every register zero, cached cardinality 0.
pub fn new_sparse() -> Vec<u8> {
    let mut hll = Vec::with_capacity(HEADER_LEN + 4);
    hll.extend_from_slice(MAGIC);
    hll.push(Encoding::Sparse as u8);
    hll.resize(HEADER_LEN, 0);
    hll.extend_from_slice(&sparse::empty_ops());
    hll
}

/// The encoding of `bytes` if they are a sketch's (`isHLLObjectOrReply`):
/// the magic, a known encoding, and a dense one's exact length.
pub fn check(bytes: &[u8]) -> Result<Encoding, HllError> {
    if bytes.len() < HEADER_LEN || &bytes[..4] != MAGIC {
        return Err(HllError::NotHll);
    }
    match bytes[ENCODING_OFFSET] {
        0 if bytes.len() == DENSE_LEN => Ok(Encoding::Dense),
        1 => Ok(Encoding::Sparse),
        _ => Err(HllError::NotHll),
    }
}

/// The encoding of a checked sketch.
fn encoding(hll: &[u8]) -> Encoding {
    if hll[ENCODING_OFFSET] == Encoding::Dense as u8 {
        Encoding::Dense
    } else {
        Encoding::Sparse
    }
}

/// The cached cardinality, unless it is stale.
pub fn cached_count(hll: &[u8]) -> Option<u64> {
    let card: [u8; 8] = hll.get(CARD_OFFSET..HEADER_LEN)?.try_into().ok()?;
    (card[7] & STALE_BIT == 0).then(|| u64::from_le_bytes(card))
}

/// Stores `count` as the cached cardinality.
pub fn cache_count(hll: &mut [u8], count: u64) {
    hll[CARD_OFFSET..HEADER_LEN].copy_from_slice(&count.to_le_bytes());
}

/// Marks the cached cardinality stale.
pub fn invalidate_cache(hll: &mut [u8]) {
    hll[HEADER_LEN - 1] |= STALE_BIT;
}

/// Adds `element` to the checked sketch `hll`; returns whether a register
/// changed (the cache is then stale). A sparse sketch growing past
/// `sparse_max_bytes` becomes dense.
pub fn add(hll: &mut Vec<u8>, element: &[u8], sparse_max_bytes: usize) -> Result<bool, HllError> {
    let (index, count) = register_and_count(element);
    raise(hll, index, count, sparse_max_bytes)
}

/// Raises register `index` of the checked sketch `hll` to `count`.
fn raise(hll: &mut Vec<u8>, index: usize, count: u8, sparse_max_bytes: usize) -> Result<bool, HllError> {
    match encoding(hll) {
        Encoding::Dense => Ok(dense::raise(&mut hll[HEADER_LEN..], index, count)),
        Encoding::Sparse => sparse::raise(hll, index, count, sparse_max_bytes),
    }
}

/// The estimated cardinality of the checked sketch `hll` (not its cache).
pub fn count(hll: &[u8]) -> Result<u64, HllError> {
    let histogram = match encoding(hll) {
        Encoding::Dense => dense::histogram(&hll[HEADER_LEN..]),
        Encoding::Sparse => sparse::histogram(hll)?,
    };
    Ok(estimate::cardinality(&histogram))
}

/// Converts the checked sketch `hll` to dense; returns whether it was sparse.
pub fn to_dense(hll: &mut Vec<u8>) -> Result<bool, HllError> {
    if encoding(hll) == Encoding::Dense {
        return Ok(false);
    }
    *hll = sparse::to_dense(hll)?;
    Ok(true)
}

/// The encoding of a checked sketch, for PFDEBUG ENCODING.
pub fn encoding_of(hll: &[u8]) -> Encoding {
    encoding(hll)
}

/// Register values of a checked dense sketch, for PFDEBUG GETREG.
pub fn dense_registers(hll: &[u8]) -> impl Iterator<Item = u8> + '_ {
    let registers = &hll[HEADER_LEN..];
    (0..REGISTERS).map(move |i| dense::get(registers, i))
}

/// PFDEBUG DECODE's listing of a sparse sketch's opcodes.
pub fn decode_sparse(hll: &[u8]) -> String {
    sparse::describe(hll)
}

/// Register-wise maximum of several sketches, one byte per register
/// (PFCOUNT of many keys, PFMERGE).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registers(Vec<u8>);

impl Default for Registers {
    fn default() -> Self {
        Registers(vec![0; REGISTERS])
    }
}

impl Registers {
    /// Takes each register's maximum with the checked sketch `hll`.
    pub fn merge(&mut self, hll: &[u8]) -> Result<(), HllError> {
        match encoding(hll) {
            Encoding::Dense => {
                let registers = &hll[HEADER_LEN..];
                for (i, slot) in self.0.iter_mut().enumerate() {
                    *slot = (*slot).max(dense::get(registers, i));
                }
                Ok(())
            }
            Encoding::Sparse => sparse::merge_into(hll, &mut self.0),
        }
    }

    /// The estimated cardinality of the union.
    pub fn count(&self) -> u64 {
        let mut histogram = [0u32; 64];
        for &value in &self.0 {
            histogram[usize::from(value.min(REGISTER_MAX))] += 1;
        }
        estimate::cardinality(&histogram)
    }

    /// Raises the checked sketch `hll`'s registers to these (PFMERGE's
    /// destination) and marks its cache stale. Registers a corrupt sparse
    /// destination cannot take are skipped, as Redis skips them.
    pub fn store_into(&self, hll: &mut Vec<u8>, sparse_max_bytes: usize) {
        for (index, &value) in self.0.iter().enumerate() {
            if value > 0 {
                // Redis ignores a failed sparse update here: the sources
                // (destination included) were validated by `merge`.
                let _ = raise(hll, index, value, sparse_max_bytes);
            }
        }
        invalidate_cache(hll);
    }
}

#[cfg(test)]
mod tests;
