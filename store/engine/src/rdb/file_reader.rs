//! Reading a whole RDB file (`rdbLoadRio`) as a stream of keys: the
//! `REDIS` or `VALKEY` magic and version ([`super::file_format`]), then
//! opcodes (AUX, SELECTDB, RESIZEDB, SLOT_INFO, EXPIRETIME/EXPIRETIME_MS,
//! IDLE/FREQ) and objects up to EOF and the CRC-64 of everything before it
//! (0: saved without a checksum). Each object is copied off the stream
//! ([`super::file_object`]) and decoded by the payload decoder, with its
//! validation. Function libraries (FUNCTION2) are collected for the caller
//! to load ([`FileReader::take_functions`]); the 7.0 release candidates'
//! FUNCTION, module data, Valkey's SLOT_IMPORT and hashes with field
//! expiration times are refused with an error naming them.

use std::io::Read;

use super::decode::decode_value;
use super::file_error::RdbFileError;
use super::file_format::{Format, Magic};
use super::file_object::ObjectCopier;
use super::file_source::Source;
use super::reader::Reader;
use super::types as t;
use super::RdbError;
use crate::value::Value;

/// Valkey 9: slots being imported when the file was saved (mandatory).
const OP_SLOT_IMPORT: u8 = 0xf3;
/// Redis 7.4 and Valkey: a slot's key counts, a hint safe to skip.
const OP_SLOT_INFO: u8 = 0xf4;
const OP_FUNCTION2: u8 = 0xf5;
const OP_FUNCTION: u8 = 0xf6;
const OP_MODULE_AUX: u8 = 0xf7;
const OP_IDLE: u8 = 0xf8;
const OP_FREQ: u8 = 0xf9;
const OP_AUX: u8 = 0xfa;
const OP_RESIZEDB: u8 = 0xfb;
const OP_EXPIRETIME_MS: u8 = 0xfc;
const OP_EXPIRETIME: u8 = 0xfd;
const OP_SELECTDB: u8 = 0xfe;
const OP_EOF: u8 = 0xff;
/// The first version with a CRC-64 after EOF.
const FIRST_CHECKSUMMED_VERSION: u32 = 5;
/// The decoder's reason for an empty collection (skipped, as Redis does).
const EMPTY_COLLECTION: &str = "empty collection";

/// One key of the file.
#[derive(Debug)]
pub struct FileItem {
    pub db: u64,
    pub key: Vec<u8>,
    pub value: Value,
    /// Unix milliseconds (negative times in the file read as 0: expired).
    pub expire_at_ms: Option<u64>,
}

/// A streaming reader of an RDB file.
pub struct FileReader<R> {
    src: Source<R>,
    format: Format,
    db: u64,
    aux: Vec<(Vec<u8>, Vec<u8>)>,
    /// The code of each FUNCTION2 library read and not taken yet.
    functions: Vec<Vec<u8>>,
    /// Empty collections skipped (Redis 7.0 skips them on load too).
    empty_skipped: u64,
    done: bool,
}

impl<R: Read> FileReader<R> {
    /// Reads and checks the header.
    pub fn new(inner: R) -> Result<Self, RdbFileError> {
        let mut src = Source::new(inner);
        let magic: [u8; 9] = src.array("the header").map_err(|_| RdbFileError::NotRdb)?;
        let format = Format::parse(&magic)?;
        Ok(FileReader { src, format, db: 0, aux: Vec::new(), functions: Vec::new(), empty_skipped: 0, done: false })
    }

    /// The file's RDB version.
    pub fn version(&self) -> u32 {
        self.format.version
    }

    /// The file's magic and version.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The AUX fields read so far (all of them once the items are read).
    pub fn aux(&self) -> &[(Vec<u8>, Vec<u8>)] {
        &self.aux
    }

    /// The function libraries (their code, as FUNCTION LOAD takes it) read
    /// since the last call.
    pub fn take_functions(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.functions)
    }

    /// Empty collections skipped so far.
    pub fn empty_skipped(&self) -> u64 {
        self.empty_skipped
    }

    /// The next key, `None` after EOF (and a checksum that matches).
    pub fn next_item(&mut self) -> Result<Option<FileItem>, RdbFileError> {
        if self.done {
            return Ok(None);
        }
        let mut expire: Option<i64> = None;
        loop {
            let at = self.src.offset();
            let op = self.src.u8("an opcode")?;
            match op {
                OP_EXPIRETIME => expire = Some(i32::from_le_bytes(self.src.array("an expire time")?) as i64 * 1000),
                OP_EXPIRETIME_MS => expire = Some(i64::from_le_bytes(self.src.array("an expire time")?)),
                OP_FREQ => drop(self.src.u8("an LFU frequency")?),
                OP_IDLE => drop(self.length("an LRU idle time")?),
                OP_SELECTDB => self.db = self.length("SELECTDB")?,
                OP_RESIZEDB => {
                    self.length("RESIZEDB")?;
                    self.length("RESIZEDB")?;
                }
                OP_SLOT_INFO => {
                    for _ in 0..3 {
                        self.length("SLOT_INFO")?;
                    }
                }
                OP_SLOT_IMPORT if self.format.magic == Magic::Valkey => {
                    return Err(RdbFileError::SlotImport { offset: at })
                }
                OP_AUX => {
                    let key = self.string("an AUX field")?;
                    let value = self.string("an AUX field")?;
                    self.aux.push((key, value));
                }
                OP_FUNCTION2 => {
                    let code = self.string("a function library")?;
                    self.functions.push(code);
                }
                OP_FUNCTION => return Err(RdbFileError::Functions { offset: at }),
                OP_MODULE_AUX => return Err(RdbFileError::ModuleAux { offset: at }),
                OP_EOF => {
                    self.finish()?;
                    return Ok(None);
                }
                t::MODULE | t::MODULE_2 => return Err(self.bad(at, "module types are not supported")),
                rdb_type if rdb_type <= t::STREAM_LISTPACKS_3 && rdb_type != 8 => {
                    match self.object(rdb_type, at, expire)? {
                        Some(item) => return Ok(Some(item)),
                        None => expire = None,
                    }
                }
                rdb_type if self.format.field_ttl_hash(rdb_type).is_some() => {
                    return Err(self.field_ttl_hash(rdb_type, at))
                }
                byte => return Err(RdbFileError::UnknownType { byte, offset: at }),
            }
        }
    }

    /// A key and its value; `None` for an empty collection (skipped).
    fn object(&mut self, rdb_type: u8, at: u64, expire: Option<i64>) -> Result<Option<FileItem>, RdbFileError> {
        let key = self.string("a key")?;
        let mut copier = ObjectCopier::new(&mut self.src);
        copier.out.push(rdb_type);
        copier.object(rdb_type)?;
        let raw = copier.out;
        match decode_value(&raw) {
            Ok(value) => {
                let expire_at_ms = expire.map(|ms| u64::try_from(ms).unwrap_or(0));
                Ok(Some(FileItem { db: self.db, key, value, expire_at_ms }))
            }
            Err(RdbError::BadData(EMPTY_COLLECTION)) => {
                self.empty_skipped += 1;
                Ok(None)
            }
            Err(e) => {
                let reason = match e {
                    RdbError::BadData(reason) => reason,
                    RdbError::Framing => "bad framing",
                    RdbError::Unsupported(reason) => reason,
                };
                let key = String::from_utf8_lossy(&key).into_owned();
                Err(RdbFileError::BadValue { offset: at, db: self.db, key, reason })
            }
        }
    }

    /// The refusal of a hash with field expiration times, naming its key.
    fn field_ttl_hash(&mut self, rdb_type: u8, at: u64) -> RdbFileError {
        let key = match self.string("a key") {
            Ok(key) => String::from_utf8_lossy(&key).into_owned(),
            Err(e) => return e,
        };
        let what = self.format.field_ttl_hash(rdb_type).unwrap_or("a hash with field expiration times");
        RdbFileError::FieldTtlHash { offset: at, db: self.db, key, rdb_type, what }
    }

    /// The checksum after EOF (files of version 5 and later).
    fn finish(&mut self) -> Result<(), RdbFileError> {
        self.done = true;
        if self.format.version < FIRST_CHECKSUMMED_VERSION {
            return Ok(());
        }
        let computed = self.src.crc();
        let stored = u64::from_le_bytes(self.src.array("the checksum")?);
        if stored != 0 && stored != computed {
            return Err(RdbFileError::Checksum { stored, computed });
        }
        Ok(())
    }

    fn bad(&self, offset: u64, reason: &'static str) -> RdbFileError {
        RdbFileError::BadData { offset, reason }
    }

    fn length(&mut self, inside: &'static str) -> Result<u64, RdbFileError> {
        ObjectCopier::new(&mut self.src).len(inside)
    }

    /// A string in any encoding, decoded.
    fn string(&mut self, inside: &'static str) -> Result<Vec<u8>, RdbFileError> {
        let at = self.src.offset();
        let mut copier = ObjectCopier::new(&mut self.src);
        copier.string(inside)?;
        let raw = copier.out;
        Reader::new(&raw).string().map_err(|e| match e {
            RdbError::BadData(reason) => self.bad(at, reason),
            RdbError::Framing | RdbError::Unsupported(_) => self.bad(at, "bad string"),
        })
    }
}

impl<R: Read> Iterator for FileReader<R> {
    type Item = Result<FileItem, RdbFileError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.next_item();
        if item.is_err() {
            self.done = true;
        }
        item.transpose()
    }
}
