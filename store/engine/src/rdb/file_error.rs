//! Why an RDB file was refused: every error names the byte offset where
//! reading stopped, so a damaged file can be looked at with a hex dump.

use thiserror::Error;

/// An RDB file the [`super::file_reader::FileReader`] refuses.
#[derive(Debug, Error)]
pub enum RdbFileError {
    #[error("cannot read the RDB file at byte {offset}: {source}")]
    Io { offset: u64, source: std::io::Error },
    #[error("the RDB file is truncated: it ends at byte {offset}, inside {inside}")]
    Truncated { offset: u64, inside: &'static str },
    #[error("not an RDB file: it does not start with REDIS and a 4-digit version")]
    NotRdb,
    #[error("RDB format version {version} is not supported (Cairn reads 1 to {newest} and Valkey's {valkey})")]
    Version { version: u32, newest: u16, valkey: u16 },
    #[error("the RDB file holds functions in the format of Redis 7.0's release candidates (opcode FUNCTION at byte {offset}): Cairn reads only Redis 7.0's FUNCTION2; save the file again with Redis 7.0 or later")]
    Functions { offset: u64 },
    #[error("the RDB file holds module data (MODULE_AUX at byte {offset}): Cairn has no modules")]
    ModuleAux { offset: u64 },
    #[error("unknown RDB opcode or value type {byte} at byte {offset}")]
    UnknownType { byte: u8, offset: u64 },
    #[error("bad data in the RDB file at byte {offset}: {reason}")]
    BadData { offset: u64, reason: &'static str },
    #[error("bad value for key '{key}' (db {db}) at byte {offset}: {reason}")]
    BadValue { offset: u64, db: u64, key: String, reason: &'static str },
    #[error("wrong RDB checksum: the file says {stored:016x}, its contents give {computed:016x}")]
    Checksum { stored: u64, computed: u64 },
}
