//! Redis's DUMP payload format: one value in RDB encoding, as Redis 7.0's
//! `DUMP` writes it and `RESTORE` reads it. Pure code (no sockets, no server
//! types): the server's DUMP and RESTORE call [`dump_payload`] and
//! [`restore_payload`].
//!
//! # Layout
//!
//! - [`payload`]: the framing (`value + RDB version (2 bytes LE) + CRC-64
//!   (8 bytes LE)`), [`crc64`] the checksum; [`unsupported`] names the types
//!   a payload's version defines that Cairn refuses (field-TTL hashes).
//! - [`reader`] / [`writer`]: RDB lengths, strings (integer and LZF
//!   encodings, [`lzf`]), doubles in binary and text form, millisecond times.
//! - the compact encodings: [`listpack`] (read and write), [`ziplist`],
//!   [`intset`] (read and write), [`zipmap`]; [`element`] is one of their
//!   entries; [`score`] writes a sorted-set score as `zzlInsertAt` does.
//! - [`decode`]: every object type Redis 7.0's `rdbLoadObject` loads, plus
//!   Redis 7.2's set listpacks and third stream format, into a [`Value`];
//!   [`stream`] reads and writes streams; [`encode`] writes any value as
//!   Redis 7.0.15 would ([`types`] names the type bytes).
//! - whole RDB files (`dump.rdb`): [`file_reader`] streams the keys of one
//!   over any `Read` (Redis's `REDIS00NN` or Valkey 9's `VALKEY080`, told
//!   apart by [`file_format`]; the bytes through [`file_source`], each object copied
//!   off the stream by [`file_object`], then decoded as a payload is;
//!   errors in [`file_error`] carry the byte offset); [`file_writer`]
//!   writes one as redis-server 7.0.15 does.
//!
//! Decoding validates as Redis does with `sanitize-dump-payload yes`, always:
//! any inconsistency is [`RdbError::BadData`], never a panic, and no claimed
//! length allocates more than the bytes present. It builds the value
//! directly through the types' own insertion (so encodings follow the
//! current limits, as Redis converts on load) rather than through commands,
//! because some of what a payload holds has no command: pending entries of
//! deleted stream entries, consumer seen times, a node's tombstones.

mod crc64;
mod decode;
mod element;
mod encode;
mod error;
mod file_error;
mod file_format;
mod file_object;
mod file_reader;
mod file_source;
mod file_writer;
mod intset;
mod listpack;
mod lzf;
mod payload;
mod reader;
mod score;
mod stream;
mod types;
mod unsupported;
mod writer;
mod ziplist;
mod zipmap;

#[cfg(test)]
mod tests;

pub use crc64::crc64;
pub use error::RdbError;
pub use file_error::RdbFileError;
pub use file_format::{Format, Magic};
pub use file_reader::{FileItem, FileReader};
pub use file_writer::{key_record, FileInfo, FileWriter, REDIS_VER};
pub use payload::{NEWEST_READ_VERSION, WRITTEN_VERSION};

use crate::value::Value;

/// The DUMP payload of `value` (RDB version 10, as Redis 7.0.15 writes).
pub fn dump_payload(value: &Value) -> Vec<u8> {
    payload::seal(encode::encode_value(value))
}

/// The value a DUMP payload holds. `skip_checksum` skips the CRC-64 check
/// (Redis's `DEBUG SET-SKIP-CHECKSUM-VALIDATION 1`), not the version check.
pub fn restore_payload(payload: &[u8], skip_checksum: bool) -> Result<Value, RdbError> {
    let body = payload::open(payload, skip_checksum)?;
    if let Some(reply) = payload::version(payload).and_then(|version| unsupported::refusal(version, body)) {
        return Err(RdbError::Unsupported(reply));
    }
    decode::decode_value(body)
}
