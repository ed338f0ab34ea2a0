//! Stored values.

/// Longest string Redis stores as `embstr`.
const EMBSTR_MAX_LEN: usize = 44;

use std::hash::Hasher;

use crate::types::{Hash, List, Set, Stream, ZSet};

/// A value of any type. Collections larger than a string's three words are
/// boxed so that `Value` (and so every table entry) stays small; hashes and
/// sets fit and are held in place (one allocation less per key: 1M small
/// hashes, docs/benchmarks.md "Memory").
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(StrValue),
    List(Box<List>),
    /// In place: a small hash is its listpack, with no box between the
    /// entry and it.
    Hash(Hash),
    /// In place, as a hash is.
    Set(Set),
    ZSet(Box<ZSet>),
    Stream(Box<Stream>),
}

// `Entry` (and so every key) grows if a variant outgrows a string.
const _: () = assert!(std::mem::size_of::<Value>() == 32);

impl Value {
    /// The name TYPE reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Stream(_) => "stream",
        }
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding(),
            Value::List(v) => v.encoding(),
            Value::Hash(v) => v.encoding(),
            Value::Set(v) => v.encoding(),
            Value::ZSet(v) => v.encoding(),
            Value::Stream(v) => v.encoding(),
        }
    }

    /// A rough count of heap bytes, for INFO memory and MEMORY USAGE.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Value::Str(StrValue::Int(_)) => 0,
            Value::Str(StrValue::Bytes { data, .. }) => data.capacity(),
            Value::List(v) => v.heap_bytes(),
            Value::Hash(v) => v.heap_bytes(),
            Value::Set(v) => v.heap_bytes(),
            Value::ZSet(v) => v.heap_bytes(),
            Value::Stream(v) => v.heap_bytes(),
        }
    }

    /// Feeds the value to a digest (DEBUG DIGEST, DEBUG DIGEST-VALUE).
    pub fn digest(&self, h: &mut dyn Hasher) {
        h.write(self.type_name().as_bytes());
        match self {
            Value::Str(s) => s.with_bytes(|b| h.write(b)),
            Value::List(v) => v.digest(h),
            Value::Hash(v) => v.digest(h),
            Value::Set(v) => v.digest(h),
            Value::ZSet(v) => v.digest(h),
            Value::Stream(v) => v.digest(h),
        }
    }

    pub fn from_bytes(data: &[u8]) -> Value {
        Value::Str(StrValue::from_bytes(data))
    }

    /// Makes this value the string `data`, as `*self = Value::from_bytes(data)`
    /// does, but into the buffer a string value already has when it fits: a
    /// SET that overwrites a string then neither allocates nor frees.
    pub fn assign_bytes(&mut self, data: &[u8]) {
        if let Value::Str(StrValue::Bytes { data: buffer, raw }) = self {
            if buffer_fits(buffer.capacity(), data.len()) && StrValue::as_int(data).is_none() {
                buffer.clear();
                buffer.extend_from_slice(data);
                *raw = false;
                return;
            }
        }
        *self = Value::from_bytes(data);
    }
}

/// Whether a buffer of `capacity` bytes may take `len` bytes without
/// holding on to more than about twice what it stores.
fn buffer_fits(capacity: usize, len: usize) -> bool {
    len <= capacity && capacity <= 2 * len.max(16)
}

/// A string value: an integer when it reads as one (as Redis's `int`
/// encoding), otherwise bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum StrValue {
    Int(i64),
    Bytes {
        data: Vec<u8>,
        /// Modified in place (APPEND, SETRANGE, SETBIT): Redis reports `raw`.
        raw: bool,
    },
}

impl StrValue {
    /// Stores `data` as an integer when Redis would (canonical decimal, fits i64).
    pub fn from_bytes(data: &[u8]) -> StrValue {
        match StrValue::as_int(data) {
            Some(n) => StrValue::Int(n),
            None => StrValue::Bytes { data: data.to_vec(), raw: false },
        }
    }

    /// The integer `data` is stored as (`int` encoding), if it is one.
    fn as_int(data: &[u8]) -> Option<i64> {
        if data.len() <= 20 {
            crate::number::parse_i64(data)
        } else {
            None
        }
    }

    pub fn encoding(&self) -> &'static str {
        match self {
            StrValue::Int(_) => "int",
            StrValue::Bytes { data, raw } if !raw && data.len() <= EMBSTR_MAX_LEN => "embstr",
            StrValue::Bytes { .. } => "raw",
        }
    }

    pub fn len(&self) -> usize {
        match self {
            StrValue::Int(n) => itoa::Buffer::new().format(*n).len(),
            StrValue::Bytes { data, .. } => data.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` with the bytes of the value (integers formatted on the stack).
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            StrValue::Int(n) => f(itoa::Buffer::new().format(*n).as_bytes()),
            StrValue::Bytes { data, .. } => f(data),
        }
    }

    pub fn to_vec(&self) -> Vec<u8> {
        self.with_bytes(|b| b.to_vec())
    }

    /// The value as bytes that can be modified in place; marks it `raw`.
    pub fn make_raw(&mut self) -> &mut Vec<u8> {
        if let StrValue::Int(n) = self {
            *self = StrValue::Bytes { data: itoa::Buffer::new().format(*n).as_bytes().to_vec(), raw: true };
        }
        match self {
            StrValue::Bytes { data, raw } => {
                *raw = true;
                data
            }
            StrValue::Int(_) => unreachable!("converted above"),
        }
    }

    /// The value as an integer, if it reads as one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            StrValue::Int(n) => Some(*n),
            StrValue::Bytes { data, .. } => crate::number::parse_i64(data),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings() {
        assert_eq!(StrValue::from_bytes(b"123").encoding(), "int");
        assert_eq!(StrValue::from_bytes(b"0123").encoding(), "embstr");
        assert_eq!(StrValue::from_bytes(&[b'a'; 45]).encoding(), "raw");
        let mut v = StrValue::from_bytes(b"12");
        v.make_raw().push(b'3');
        assert_eq!(v.encoding(), "raw");
        assert_eq!(v.as_i64(), Some(123));
    }

    fn bytes_ptr(v: &Value) -> Option<*const u8> {
        match v {
            Value::Str(StrValue::Bytes { data, .. }) => Some(data.as_ptr()),
            _ => None,
        }
    }

    #[test]
    fn assigning_bytes_reuses_a_fitting_buffer_and_stores_as_from_bytes_does() {
        let mut v = Value::from_bytes(b"a 32-byte value ................");
        let before = bytes_ptr(&v);
        v.assign_bytes(b"another 32-byte value ..........");
        assert_eq!(bytes_ptr(&v), before, "same size: same buffer");
        assert_eq!(v, Value::from_bytes(b"another 32-byte value .........."));
        if let Value::Str(s) = &mut v {
            s.make_raw();
        }
        v.assign_bytes(b"shorter but reused");
        assert_eq!(bytes_ptr(&v), before);
        assert_eq!(v, Value::from_bytes(b"shorter but reused"), "embstr again, not raw");
        v.assign_bytes(b"12345");
        assert_eq!(v, Value::Str(StrValue::Int(12345)), "an integer is stored as one");
        let mut big = Value::from_bytes(&[b'x'; 4096]);
        big.assign_bytes(b"tiny");
        assert_eq!(big, Value::from_bytes(b"tiny"));
        match &big {
            Value::Str(StrValue::Bytes { data, .. }) => {
                assert!(data.capacity() < 64, "a large buffer is not kept for a small value")
            }
            other => panic!("not bytes: {other:?}"),
        }
        let mut list = Value::List(Box::default());
        list.assign_bytes(b"now a string");
        assert_eq!(list, Value::from_bytes(b"now a string"));
    }
}
