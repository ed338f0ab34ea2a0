//! Writing a whole RDB file as redis-server 7.0.15 writes one
//! (`rdbSaveRio`): `REDIS0010`, the AUX fields (`redis-ver`, `redis-bits`,
//! `ctime`, `used-mem`, `aof-base`), the function libraries (FUNCTION2),
//! per database SELECTDB and RESIZEDB,
//! then each key (EXPIRETIME_MS before it when it has a TTL, the value by
//! the payload encoder), EOF and the CRC-64 of everything before it.
//! Bytes go to the inner [`Write`] as they are produced (nothing is held
//! back but the running CRC), so a file of any size streams in constant
//! memory; a caller may select a database more than once (Redis's loader
//! switches database at each SELECTDB, RESIZEDB being only a size hint).

use std::io::Write;

use super::crc64::crc64;
use super::encode::encode_value;
use super::payload::WRITTEN_VERSION;
use super::writer::Writer;
use crate::value::Value;

const OP_FUNCTION2: u8 = 0xf5;
const OP_AUX: u8 = 0xfa;
const OP_RESIZEDB: u8 = 0xfb;
const OP_EXPIRETIME_MS: u8 = 0xfc;
const OP_SELECTDB: u8 = 0xfe;
const OP_EOF: u8 = 0xff;
/// The Redis version the AUX field names: the one whose format is written.
pub const REDIS_VER: &str = "7.0.15";

/// The AUX fields' values that vary.
#[derive(Debug, Clone, Copy)]
pub struct FileInfo {
    /// Unix seconds the image was taken.
    pub ctime_secs: u64,
    /// Bytes in use (INFO `used_memory`).
    pub used_mem: u64,
}

/// One key's record (`rdbSaveKeyValuePair`), appended to `out`: for
/// callers that build a database's records apart (several threads, or
/// while counting its keys) and hand them to [`FileWriter::records`].
pub fn key_record(out: &mut Vec<u8>, key: &[u8], value: &Value, expire_at_ms: Option<u64>) {
    let mut w = Writer { out: std::mem::take(out) };
    if let Some(ms) = expire_at_ms {
        w.u8(OP_EXPIRETIME_MS);
        w.millis(i64::try_from(ms).unwrap_or(i64::MAX));
    }
    let body = encode_value(value);
    // The body starts with the type byte; the key goes between it and the object.
    w.u8(body[0]);
    w.string(key);
    w.raw(&body[1..]);
    *out = w.out;
}

/// A streaming writer of an RDB file over any [`Write`].
pub struct FileWriter<W> {
    inner: W,
    crc: u64,
    bytes: u64,
}

impl<W: Write> FileWriter<W> {
    /// Writes the header and the AUX fields.
    pub fn new(inner: W, info: FileInfo) -> std::io::Result<Self> {
        let mut writer = FileWriter { inner, crc: 0, bytes: 0 };
        let mut w = Writer::new();
        w.raw(format!("REDIS{WRITTEN_VERSION:04}").as_bytes());
        aux(&mut w, "redis-ver", REDIS_VER.as_bytes());
        aux(&mut w, "redis-bits", b"64");
        aux(&mut w, "ctime", info.ctime_secs.to_string().as_bytes());
        aux(&mut w, "used-mem", info.used_mem.to_string().as_bytes());
        aux(&mut w, "aof-base", b"0");
        writer.put(&w.out)?;
        Ok(writer)
    }

    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.inner.write_all(bytes)?;
        self.crc = crc64(self.crc, bytes);
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    /// A function library (FUNCTION2 and its code), before the databases.
    pub fn function(&mut self, code: &[u8]) -> std::io::Result<()> {
        let mut w = Writer::new();
        w.u8(OP_FUNCTION2);
        w.string(code);
        self.put(&w.out)
    }

    /// SELECTDB and RESIZEDB for a database of `keys` keys (`expires` of
    /// them with a TTL); its records follow.
    pub fn select_db(&mut self, db: u64, keys: u64, expires: u64) -> std::io::Result<()> {
        let mut w = Writer::new();
        w.u8(OP_SELECTDB);
        w.len(db);
        w.u8(OP_RESIZEDB);
        w.len(keys);
        w.len(expires);
        self.put(&w.out)
    }

    /// One key of the database selected last.
    pub fn key(&mut self, key: &[u8], value: &Value, expire_at_ms: Option<u64>) -> std::io::Result<()> {
        let mut out = Vec::new();
        key_record(&mut out, key, value, expire_at_ms);
        self.put(&out)
    }

    /// Records built with [`key_record`], for the database selected last.
    pub fn records(&mut self, records: &[u8]) -> std::io::Result<()> {
        self.put(records)
    }

    /// EOF and the checksum; returns the inner writer and the file's size.
    pub fn finish(mut self) -> std::io::Result<(W, u64)> {
        self.put(&[OP_EOF])?;
        let crc = self.crc.to_le_bytes();
        self.inner.write_all(&crc)?;
        self.inner.flush()?;
        Ok((self.inner, self.bytes + crc.len() as u64))
    }
}

/// An AUX field (`rdbSaveAuxField`): both parts as RDB strings (so an
/// integer value is integer-encoded, as `rdbSaveAuxFieldStrInt` writes it).
fn aux(w: &mut Writer, key: &str, value: &[u8]) {
    w.u8(OP_AUX);
    w.string(key.as_bytes());
    w.string(value);
}
