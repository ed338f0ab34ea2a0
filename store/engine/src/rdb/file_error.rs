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
    #[error("not an RDB file: it does not start with REDIS and 4 digits or VALKEY and 3 digits")]
    NotRdb,
    #[error(
        "RDB header {header} is not supported ({why}): Cairn reads REDIS0001 to REDIS0012 \
         (Redis up to 7.4, Valkey up to 8.1) and VALKEY080 (Valkey 9.0 and 9.1)"
    )]
    Version { header: String, why: &'static str },
    #[error("the RDB file holds functions in the format of Redis 7.0's release candidates (opcode FUNCTION at byte {offset}): Cairn reads only Redis 7.0's FUNCTION2; save the file again with Redis 7.0 or later")]
    Functions { offset: u64 },
    #[error("the RDB file holds module data (MODULE_AUX at byte {offset}): Cairn has no modules")]
    ModuleAux { offset: u64 },
    #[error(
        "the RDB file was saved during a slot migration (Valkey's SLOT_IMPORT opcode at byte {offset}): \
         it holds keys of slots still being imported and Cairn has no cluster slots; save it again once \
         the migration has finished"
    )]
    SlotImport { offset: u64 },
    #[error(
        "key '{key}' (db {db}) at byte {offset} is {what} (RDB type {rdb_type}): Cairn has no field \
         expiration times, so the import stops rather than drop them; remove the field TTLs (HPERSIST) \
         or the key, and save the file again"
    )]
    FieldTtlHash { offset: u64, db: u64, key: String, rdb_type: u8, what: &'static str },
    #[error("unknown RDB opcode or value type {byte} at byte {offset}")]
    UnknownType { byte: u8, offset: u64 },
    #[error("bad data in the RDB file at byte {offset}: {reason}")]
    BadData { offset: u64, reason: &'static str },
    #[error("bad value for key '{key}' (db {db}) at byte {offset}: {reason}")]
    BadValue { offset: u64, db: u64, key: String, reason: &'static str },
    #[error("wrong RDB checksum: the file says {stored:016x}, its contents give {computed:016x}")]
    Checksum { stored: u64, computed: u64 },
}
