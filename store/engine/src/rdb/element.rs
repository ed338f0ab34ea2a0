//! One element of a listpack or ziplist: an integer or a string, as the
//! compact encodings store them.

use std::borrow::Cow;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Element<'a> {
    Int(i64),
    Str(&'a [u8]),
}

impl<'a> Element<'a> {
    /// The element as the bytes a command would have written.
    pub fn bytes(&self) -> Cow<'a, [u8]> {
        match *self {
            Element::Int(v) => Cow::Owned(itoa::Buffer::new().format(v).as_bytes().to_vec()),
            Element::Str(s) => Cow::Borrowed(s),
        }
    }

    /// The element as an integer: an integer element, or a string that reads
    /// as one (Redis's `lpGetIntegerIfValid`).
    pub fn int(&self) -> Option<i64> {
        match *self {
            Element::Int(v) => Some(v),
            Element::Str(s) => crate::number::parse_i64(s),
        }
    }
}
