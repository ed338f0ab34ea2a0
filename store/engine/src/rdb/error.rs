//! Why a DUMP payload was refused. RESTORE turns these into Redis's two
//! replies: `DUMP payload version or checksum are wrong` for the framing,
//! `Bad data format` for everything inside it (followed by what it is when
//! the payload holds a type Cairn does not support).

use thiserror::Error;

/// A payload the codec refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum RdbError {
    /// Shorter than its footer, an RDB version newer than we read, or a
    /// CRC-64 that does not match.
    #[error("DUMP payload version or checksum are wrong")]
    Framing,
    /// The version and checksum are right but the value is not (the reason
    /// is for tests and logs; the client sees `Bad data format`).
    #[error("Bad data format ({0})")]
    BadData(&'static str),
    /// A type the payload's RDB version defines but Cairn cannot hold (a
    /// hash with field TTLs): the whole reply text, naming it.
    #[error("{0}")]
    Unsupported(&'static str),
}

impl RdbError {
    /// The reply RESTORE gives, without the `ERR ` prefix.
    pub fn reply(&self) -> &'static str {
        match self {
            RdbError::Framing => "DUMP payload version or checksum are wrong",
            RdbError::BadData(_) => "Bad data format",
            RdbError::Unsupported(reply) => reply,
        }
    }
}

/// Shorthand for a bad-data error.
pub(crate) fn bad<T>(reason: &'static str) -> Result<T, RdbError> {
    Err(RdbError::BadData(reason))
}
