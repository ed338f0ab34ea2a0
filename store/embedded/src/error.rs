//! What the embedded API returns when something goes wrong.

use std::path::PathBuf;

use cairn_server::persistence::lock::LockError;
use cairn_server::persistence::recover::RecoverError;

/// An embedded database error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The data directory (or its lock file) cannot be created or opened.
    #[error("cannot open {path}: {source}")]
    Open { path: PathBuf, source: std::io::Error },
    /// A server or another `Db` holds the data directory's lock file.
    #[error("data directory is in use: {path} is locked by another process or Db handle{holder}")]
    Locked { path: PathBuf, holder: String },
    /// The snapshot or the log is damaged (see `cairn check DATA_DIR`).
    #[error("recovery failed: {0}")]
    Recovery(#[from] RecoverError),
    #[error("cannot start a background thread: {0}")]
    Thread(std::io::Error),
    /// The key holds a value of another type.
    #[error("WRONGTYPE Operation against a key holding the wrong kind of value")]
    WrongType,
    /// INCR and friends on a value that is not an integer, or overflow.
    #[error("value is not an integer or out of range")]
    NotInteger,
    /// The write was applied in memory but the log failed: it is not durable
    /// (and the log refuses writes until the directory is reopened).
    #[error("the write cannot be made durable: {0}")]
    NotDurable(String),
    /// Any other error reply of the command (the server's message).
    #[error("{0}")]
    Server(String),
    /// [`crate::Db::close`] while other handles of the directory are open:
    /// it closes when the last of them is dropped.
    #[error("{0} other handle(s) of the data directory are still open; it closes when the last is dropped")]
    InUse(usize),
    /// A reply of a shape the typed call did not expect.
    #[error("unexpected reply: {0}")]
    UnexpectedReply(String),
}

impl Error {
    /// The typed form of an error reply's message.
    pub(crate) fn from_reply(message: &str) -> Error {
        if message.starts_with("WRONGTYPE") {
            Error::WrongType
        } else if message.contains("not an integer or out of range") || message.contains("would overflow") {
            Error::NotInteger
        } else {
            Error::Server(message.to_string())
        }
    }

    pub(crate) fn from_lock(e: LockError) -> Error {
        match e {
            LockError::Held { path, holder } => Error::Locked { path, holder },
            LockError::Io { path, source } => Error::Open { path, source },
        }
    }
}

/// A result of the embedded API.
pub type Result<T, E = Error> = std::result::Result<T, E>;
