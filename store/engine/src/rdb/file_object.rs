//! Reading one object of an RDB file off the stream: its bytes are copied,
//! following the type's layout (lengths, strings, LZF blocks, stream
//! groups), into a buffer the payload decoder ([`super::decode`]) then reads
//! and validates. So one value at a time is in memory, never the file, and
//! every byte a claimed length asks for must be present before it is held.

use std::io::Read;

use super::file_error::RdbFileError;
use super::file_source::Source;
use super::reader::{ENC_INT16, ENC_INT32, ENC_INT8, ENC_LZF, LEN_32BIT, LEN_64BIT};
use super::types as t;

/// Bytes of a raw stream ID in a PEL.
const RAW_ID_LEN: u64 = 16;
/// Bytes of a millisecond time.
const MILLIS_LEN: u64 = 8;

/// What a length field holds.
enum Field {
    Len(u64),
    Encoded(u8),
}

/// Copies the bytes of RDB structures from a [`Source`] into `out`.
pub struct ObjectCopier<'s, R> {
    src: &'s mut Source<R>,
    pub out: Vec<u8>,
}

impl<'s, R: Read> ObjectCopier<'s, R> {
    pub fn new(src: &'s mut Source<R>) -> Self {
        ObjectCopier { src, out: Vec::new() }
    }

    fn byte(&mut self, inside: &'static str) -> Result<u8, RdbFileError> {
        let b = self.src.u8(inside)?;
        self.out.push(b);
        Ok(b)
    }

    fn bytes(&mut self, n: u64, inside: &'static str) -> Result<(), RdbFileError> {
        self.src.copy_into(&mut self.out, n, inside)
    }

    fn field(&mut self, inside: &'static str) -> Result<Field, RdbFileError> {
        let first = self.byte(inside)?;
        let mut be = |n: usize| -> Result<u64, RdbFileError> {
            let start = self.out.len();
            self.bytes(n as u64, inside)?;
            Ok(self.out[start..].iter().fold(0u64, |acc, &b| (acc << 8) | b as u64))
        };
        Ok(match first >> 6 {
            0 => Field::Len((first & 0x3f) as u64),
            1 => Field::Len((((first & 0x3f) as u64) << 8) | be(1)?),
            3 => Field::Encoded(first & 0x3f),
            _ if first == LEN_32BIT => Field::Len(be(4)?),
            _ if first == LEN_64BIT => Field::Len(be(8)?),
            _ => return Err(self.bad("unknown length encoding")),
        })
    }

    fn bad(&self, reason: &'static str) -> RdbFileError {
        RdbFileError::BadData { offset: self.src.offset(), reason }
    }

    /// A length (`rdbLoadLen`).
    pub fn len(&mut self, inside: &'static str) -> Result<u64, RdbFileError> {
        match self.field(inside)? {
            Field::Len(n) => Ok(n),
            Field::Encoded(_) => Err(self.bad("an encoded string where a length belongs")),
        }
    }

    /// A string in any encoding.
    pub fn string(&mut self, inside: &'static str) -> Result<(), RdbFileError> {
        match self.field(inside)? {
            Field::Len(n) => self.bytes(n, inside),
            Field::Encoded(ENC_INT8) => self.bytes(1, inside),
            Field::Encoded(ENC_INT16) => self.bytes(2, inside),
            Field::Encoded(ENC_INT32) => self.bytes(4, inside),
            Field::Encoded(ENC_LZF) => {
                let compressed = self.len(inside)?;
                self.len(inside)?;
                self.bytes(compressed, inside)
            }
            Field::Encoded(_) => Err(self.bad("unknown string encoding")),
        }
    }

    /// `count` times `each`.
    fn repeat(
        &mut self,
        inside: &'static str,
        mut each: impl FnMut(&mut Self) -> Result<(), RdbFileError>,
    ) -> Result<(), RdbFileError> {
        let count = self.len(inside)?;
        for _ in 0..count {
            each(self)?;
        }
        Ok(())
    }

    /// The object after its type byte (`rdbLoadObject`'s reads).
    pub fn object(&mut self, rdb_type: u8) -> Result<(), RdbFileError> {
        match rdb_type {
            t::STRING => self.string("a string value"),
            t::LIST | t::SET => self.repeat("a list or set", |c| c.string("a list or set element")),
            t::ZSET => self.repeat("a sorted set", |c| {
                c.string("a sorted set member")?;
                c.text_double()
            }),
            t::ZSET_2 => self.repeat("a sorted set", |c| {
                c.string("a sorted set member")?;
                c.bytes(8, "a sorted set score")
            }),
            t::HASH => self.repeat("a hash", |c| {
                c.string("a hash field")?;
                c.string("a hash value")
            }),
            t::HASH_ZIPMAP
            | t::LIST_ZIPLIST
            | t::SET_INTSET
            | t::ZSET_ZIPLIST
            | t::HASH_ZIPLIST
            | t::HASH_LISTPACK
            | t::ZSET_LISTPACK
            | t::SET_LISTPACK => self.string("a compact encoding"),
            t::LIST_QUICKLIST => self.repeat("a quicklist", |c| c.string("a quicklist node")),
            t::LIST_QUICKLIST_2 => self.repeat("a quicklist", |c| {
                c.len("a quicklist node container")?;
                c.string("a quicklist node")
            }),
            t::STREAM_LISTPACKS | t::STREAM_LISTPACKS_2 | t::STREAM_LISTPACKS_3 => self.stream(rdb_type),
            _ => Err(self.bad("unknown object type")),
        }
    }

    /// A score in the old text form: a length byte (253-255: NaN, +inf,
    /// -inf) then that many characters.
    fn text_double(&mut self) -> Result<(), RdbFileError> {
        let len = self.byte("a sorted set score")?;
        if len < 253 {
            self.bytes(len as u64, "a sorted set score")?;
        }
        Ok(())
    }

    fn id(&mut self, inside: &'static str) -> Result<(), RdbFileError> {
        self.len(inside)?;
        self.len(inside)?;
        Ok(())
    }

    /// A stream (`RDB_TYPE_STREAM_LISTPACKS`, `_2`, `_3`).
    fn stream(&mut self, rdb_type: u8) -> Result<(), RdbFileError> {
        const INSIDE: &str = "a stream";
        self.repeat(INSIDE, |c| {
            c.string("a stream node ID")?;
            c.string("a stream node")
        })?;
        self.len(INSIDE)?; // length
        self.id(INSIDE)?; // last ID
        if rdb_type >= t::STREAM_LISTPACKS_2 {
            self.id(INSIDE)?; // first ID
            self.id(INSIDE)?; // max deleted ID
            self.len(INSIDE)?; // entries added
        }
        self.repeat(INSIDE, |c| {
            c.string("a consumer group name")?;
            c.id("a consumer group")?;
            if rdb_type >= t::STREAM_LISTPACKS_2 {
                c.len("a consumer group")?; // entries read
            }
            c.repeat("a group PEL", |c| {
                c.bytes(RAW_ID_LEN + MILLIS_LEN, "a group PEL entry")?;
                c.len("a group PEL entry").map(drop)
            })?;
            c.repeat("a consumer list", |c| {
                c.string("a consumer name")?;
                c.bytes(MILLIS_LEN, "a consumer")?;
                if rdb_type >= t::STREAM_LISTPACKS_3 {
                    c.bytes(MILLIS_LEN, "a consumer")?;
                }
                c.repeat("a consumer PEL", |c| c.bytes(RAW_ID_LEN, "a consumer PEL entry"))
            })
        })
    }
}
