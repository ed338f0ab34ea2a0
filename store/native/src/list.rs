//! Lists on the wire: a u32 count, then the items. The decoder validates a
//! whole list once and keeps it as a slice of the frame; iterating it again
//! reads the items in place, without allocating.

use crate::cursor::Cursor;
use crate::error::DecodeError;
use crate::limits::Limits;
use crate::op::{decode_op, DecodedOp, Op};

/// A list of byte strings, either decoded ([`ByteList`]) or given by a
/// caller to encode (`&[&[u8]]`).
pub trait Strings {
    /// How many strings.
    fn count(&self) -> usize;
    /// The strings, in order.
    fn items(&self) -> impl Iterator<Item = &[u8]>;
}

impl Strings for &[&[u8]] {
    fn count(&self) -> usize {
        self.len()
    }

    fn items(&self) -> impl Iterator<Item = &[u8]> {
        self.iter().copied()
    }
}

/// A validated list of byte strings, borrowed from a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteList<'a> {
    count: usize,
    /// The encoded items (without the count).
    raw: &'a [u8],
}

impl<'a> ByteList<'a> {
    /// Reads a count in `min..=limits.max_list_len` and that many strings.
    pub fn decode(cursor: &mut Cursor<'a>, min: usize, limits: &Limits) -> Result<Self, DecodeError> {
        let count = cursor.u32("list count")? as u64;
        let max = limits.max_list_len;
        if count < min as u64 || count > max as u64 {
            return Err(DecodeError::ListSize { count, min, max });
        }
        let start = cursor.position();
        for _ in 0..count {
            cursor.bytes("list item")?;
        }
        Ok(ByteList { count: count as usize, raw: cursor.since(start) })
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The strings, in order.
    pub fn iter(&self) -> ByteListIter<'a> {
        ByteListIter { cursor: Cursor::new(self.raw), left: self.count }
    }
}

impl Strings for ByteList<'_> {
    fn count(&self) -> usize {
        self.count
    }

    fn items(&self) -> impl Iterator<Item = &[u8]> {
        self.iter()
    }
}

/// Iterator over a [`ByteList`].
#[derive(Clone, Debug)]
pub struct ByteListIter<'a> {
    cursor: Cursor<'a>,
    left: usize,
}

impl<'a> Iterator for ByteListIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // Validated when the list was decoded: this read cannot fail.
        self.cursor.bytes("list item").ok()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for ByteListIter<'_> {}

/// The validated operations of a batch frame, borrowed from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpList<'a> {
    count: usize,
    /// How many are generic COMMAND operations.
    generic: usize,
    raw: &'a [u8],
    limits: Limits,
}

impl<'a> OpList<'a> {
    /// Reads a count in `1..=limits.max_batch_ops` and that many operations.
    pub fn decode(cursor: &mut Cursor<'a>, limits: &Limits) -> Result<Self, DecodeError> {
        let count = cursor.u32("batch count")? as u64;
        let max = limits.max_batch_ops;
        if count == 0 || count > max as u64 {
            return Err(DecodeError::BatchSize { count, max });
        }
        let start = cursor.position();
        let mut generic = 0;
        for _ in 0..count {
            if matches!(decode_op(cursor, limits)?, Op::Command { .. }) {
                generic += 1;
            }
        }
        Ok(OpList { count: count as usize, generic, raw: cursor.since(start), limits: *limits })
    }

    /// Whether any operation is a generic COMMAND operation (the typed ones
    /// name their command, so a server need not look at them to know it).
    pub fn has_generic(&self) -> bool {
        self.generic > 0
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The operations, in order.
    pub fn iter(&self) -> OpListIter<'a> {
        OpListIter { cursor: Cursor::new(self.raw), left: self.count, limits: self.limits }
    }
}

/// Iterator over an [`OpList`].
#[derive(Clone, Debug)]
pub struct OpListIter<'a> {
    cursor: Cursor<'a>,
    left: usize,
    limits: Limits,
}

impl<'a> Iterator for OpListIter<'a> {
    type Item = DecodedOp<'a>;

    fn next(&mut self) -> Option<DecodedOp<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // Validated when the batch was decoded: this decode cannot fail.
        decode_op(&mut self.cursor, &self.limits).ok()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for OpListIter<'_> {}
