//! The sparse encoding: a run-length sequence of opcodes after the header.
//!
//! - `ZERO` `00xxxxxx`: 1 to 64 registers at zero;
//! - `XZERO` `01xxxxxx yyyyyyyy`: 1 to 16384 registers at zero;
//! - `VAL` `1vvvvvxx`: 1 to 4 registers at value 1 to 32.
//!
//! Setting a register splits the opcode covering it in place and merges
//! equal neighbouring `VAL`s, as `hllSparseSet` does; a value above 32, or a
//! sequence growing past `hll-sparse-max-bytes`, promotes to dense.

use super::{
    dense, invalidate_cache, Encoding, Histogram, HllError, DENSE_LEN, ENCODING_OFFSET, HEADER_LEN, REGISTERS,
};

const VAL_BIT: u8 = 0x80;
const XZERO_BIT: u8 = 0x40;
const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;
const XZERO_MAX_LEN: usize = 16384;

/// One decoded opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Zero(usize),
    XZero(usize),
    Val { value: u8, len: usize },
}

impl Op {
    /// Registers covered.
    pub fn span(self) -> usize {
        match self {
            Op::Zero(len) | Op::XZero(len) | Op::Val { len, .. } => len,
        }
    }

    /// Bytes taken.
    pub fn width(self) -> usize {
        match self {
            Op::XZero(_) => 2,
            _ => 1,
        }
    }

    /// The registers' value (0 for the zero runs).
    pub fn value(self) -> u8 {
        match self {
            Op::Val { value, .. } => value,
            _ => 0,
        }
    }
}

fn is_zero(byte: u8) -> bool {
    byte & 0xc0 == 0
}

fn is_xzero(byte: u8) -> bool {
    byte & 0xc0 == XZERO_BIT
}

fn is_val(byte: u8) -> bool {
    byte & VAL_BIT != 0
}

fn val_value(byte: u8) -> u8 {
    ((byte >> 2) & 0x1f) + 1
}

fn val_len(byte: u8) -> usize {
    usize::from(byte & 0x3) + 1
}

/// The byte at `i`; past the end reads as zero, as the terminator Redis
/// reads there does.
fn byte_at(bytes: &[u8], i: usize) -> u8 {
    bytes.get(i).copied().unwrap_or(0)
}

/// The opcode starting at `p` (which must be inside `bytes`).
pub fn read_op(bytes: &[u8], p: usize) -> Op {
    let byte = byte_at(bytes, p);
    if is_zero(byte) {
        Op::Zero(usize::from(byte & 0x3f) + 1)
    } else if is_xzero(byte) {
        Op::XZero((usize::from(byte & 0x3f) << 8 | usize::from(byte_at(bytes, p + 1))) + 1)
    } else {
        Op::Val { value: val_value(byte), len: val_len(byte) }
    }
}

fn val_op(value: u8, len: usize) -> u8 {
    ((value - 1) << 2 | (len as u8 - 1)) | VAL_BIT
}

fn xzero_op(len: usize) -> [u8; 2] {
    let l = len - 1;
    [(l >> 8) as u8 | XZERO_BIT, (l & 0xff) as u8]
}

/// The opcodes of an empty sketch: XZEROs covering every register.
pub fn empty_ops() -> Vec<u8> {
    let mut ops = Vec::with_capacity(REGISTERS.div_ceil(XZERO_MAX_LEN) * 2);
    let mut left = REGISTERS;
    while left > 0 {
        let run = left.min(XZERO_MAX_LEN);
        ops.extend_from_slice(&xzero_op(run));
        left -= run;
    }
    ops
}

/// Calls `visit(first_register, op)` for each opcode of the sketch `hll`;
/// `Corrupt` when the runs overflow the registers or do not cover them all.
fn walk(hll: &[u8], mut visit: impl FnMut(usize, Op)) -> Result<(), HllError> {
    let mut p = HEADER_LEN;
    let mut index = 0;
    while p < hll.len() {
        let op = read_op(hll, p);
        if index + op.span() > REGISTERS {
            return Err(HllError::Corrupt);
        }
        visit(index, op);
        index += op.span();
        p += op.width();
    }
    if index == REGISTERS {
        Ok(())
    } else {
        Err(HllError::Corrupt)
    }
}

/// The register histogram of a sparse sketch.
pub fn histogram(hll: &[u8]) -> Result<Histogram, HllError> {
    let mut histogram = [0u32; 64];
    walk(hll, |_, op| histogram[usize::from(op.value())] += op.span() as u32)?;
    Ok(histogram)
}

/// Raises `max[i]` to each register of a sparse sketch.
pub fn merge_into(hll: &[u8], max: &mut [u8]) -> Result<(), HllError> {
    walk(hll, |first, op| {
        let value = op.value();
        if value > 0 {
            for slot in &mut max[first..first + op.span()] {
                *slot = (*slot).max(value);
            }
        }
    })
}

/// The sketch `hll` (sparse) in the dense encoding, header kept (magic,
/// cached cardinality); `Corrupt` if its opcodes are invalid.
pub fn to_dense(hll: &[u8]) -> Result<Vec<u8>, HllError> {
    let mut out = vec![0u8; DENSE_LEN];
    out[..HEADER_LEN].copy_from_slice(&hll[..HEADER_LEN]);
    out[ENCODING_OFFSET] = Encoding::Dense as u8;
    let registers = &mut out[HEADER_LEN..];
    walk(hll, |first, op| {
        let value = op.value();
        if value > 0 {
            for index in first..first + op.span() {
                dense::put(registers, index, value);
            }
        }
    })?;
    Ok(out)
}

/// The opcode covering register `index`: its position, the first register
/// it covers, and the position of the opcode before it.
struct Located {
    at: usize,
    first: usize,
    previous: Option<usize>,
    op: Op,
}

fn locate(hll: &[u8], index: usize) -> Result<Located, HllError> {
    let mut p = HEADER_LEN;
    let mut first = 0;
    let mut previous = None;
    while p < hll.len() {
        let op = read_op(hll, p);
        if index < first + op.span() {
            return Ok(Located { at: p, first, previous, op });
        }
        previous = Some(p);
        p += op.width();
        first += op.span();
    }
    Err(HllError::Corrupt)
}

/// Up to five opcodes replacing one when a register is set inside a run.
struct Sequence {
    bytes: [u8; 5],
    len: usize,
}

impl Sequence {
    fn new() -> Sequence {
        Sequence { bytes: [0; 5], len: 0 }
    }

    fn push(&mut self, byte: u8) {
        self.bytes[self.len] = byte;
        self.len += 1;
    }

    fn push_zeros(&mut self, len: usize) {
        if len > ZERO_MAX_LEN {
            let [a, b] = xzero_op(len);
            self.push(a);
            self.push(b);
        } else {
            self.push((len - 1) as u8);
        }
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The opcodes that set register `index` to `count` inside the run `found`.
fn split(found: &Located, index: usize, count: u8) -> Sequence {
    let last = found.first + found.op.span() - 1;
    let mut seq = Sequence::new();
    match found.op {
        Op::Zero(_) | Op::XZero(_) => {
            if index != found.first {
                seq.push_zeros(index - found.first);
            }
            seq.push(val_op(count, 1));
            if index != last {
                seq.push_zeros(last - index);
            }
        }
        Op::Val { value, .. } => {
            if index != found.first {
                seq.push(val_op(value, index - found.first));
            }
            seq.push(val_op(count, 1));
            if index != last {
                seq.push(val_op(value, last - index));
            }
        }
    }
    seq
}

/// Replaces the opcode at `found.at` with `seq`, as Redis's memmove does
/// (an XZERO cut short by the end of the string loses its missing byte).
fn substitute(hll: &mut Vec<u8>, found: &Located, seq: &[u8]) {
    let end = hll.len();
    let new_len = end + seq.len() - found.op.width();
    let next = (found.at + found.op.width()).min(end);
    hll.splice(found.at..next, seq.iter().copied());
    hll.truncate(new_len);
}

/// Merges adjacent `VAL`s of equal value, scanning up to five opcodes from
/// `from` (the opcode before the one just changed).
fn merge_adjacent_values(hll: &mut Vec<u8>, from: usize) {
    let mut p = from;
    let mut budget = 5;
    while p < hll.len() && budget > 0 {
        budget -= 1;
        let byte = hll[p];
        if is_xzero(byte) {
            p += 2;
            continue;
        }
        if is_zero(byte) {
            p += 1;
            continue;
        }
        if let Some(&next) = hll.get(p + 1) {
            if is_val(next) && val_value(byte) == val_value(next) {
                let len = val_len(byte) + val_len(next);
                if len <= VAL_MAX_LEN {
                    hll[p + 1] = val_op(val_value(byte), len);
                    hll.remove(p);
                    continue;
                }
            }
        }
        p += 1;
    }
}

/// Raises register `index` of the sparse sketch `hll` to `count`; returns
/// whether it changed. May promote `hll` to dense (then the register always
/// changes). `Corrupt` when the opcodes do not cover the register, or the
/// promotion finds them invalid.
pub fn raise(hll: &mut Vec<u8>, index: usize, count: u8, max_bytes: usize) -> Result<bool, HllError> {
    if count > VAL_MAX_VALUE {
        return promote_and_raise(hll, index, count);
    }
    let found = locate(hll, index)?;
    match found.op {
        Op::Val { value, .. } if value >= count => return Ok(false),
        Op::Val { len: 1, .. } | Op::Zero(1) => hll[found.at] = val_op(count, 1),
        _ => {
            let seq = split(&found, index, count);
            let grows = seq.len > found.op.width();
            if grows && hll.len() + seq.len - found.op.width() > max_bytes {
                return promote_and_raise(hll, index, count);
            }
            substitute(hll, &found, seq.as_slice());
        }
    }
    merge_adjacent_values(hll, found.previous.unwrap_or(HEADER_LEN));
    invalidate_cache(hll);
    Ok(true)
}

fn promote_and_raise(hll: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, HllError> {
    *hll = to_dense(hll)?;
    Ok(dense::raise(&mut hll[HEADER_LEN..], index, count))
}

/// PFDEBUG DECODE's text: `z:<len>`, `Z:<len>`, `v:<value>,<len>` per opcode.
pub fn describe(hll: &[u8]) -> String {
    let mut parts = Vec::new();
    let mut p = HEADER_LEN;
    while p < hll.len() {
        let op = read_op(hll, p);
        parts.push(match op {
            Op::Zero(len) => format!("z:{len}"),
            Op::XZero(len) => format!("Z:{len}"),
            Op::Val { value, len } => format!("v:{value},{len}"),
        });
        p += op.width();
    }
    parts.join(" ")
}
