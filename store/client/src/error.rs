//! Every failure as a typed value.

use std::sync::Arc;
use std::time::Duration;

use cairn_native::Status;

/// A failed call. `Clone`, because one broken connection fails every
/// request in flight on it with the same error.
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot connect to {addr}: {source}")]
    Connect { addr: String, source: Arc<std::io::Error> },
    #[error("I/O error: {0}")]
    Io(Arc<std::io::Error>),
    /// The server's bytes were not valid frames, or not the expected ones.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The handshake was refused (version, password, ...).
    #[error("handshake refused ({status:?}): {message}")]
    Handshake { status: Status, message: String },
    /// The request failed on the server (WRONGTYPE, syntax, ...).
    #[error("server error ({status:?}): {message}")]
    Server { status: Status, message: String },
    /// The server sent a fatal ERROR frame and closed the connection.
    #[error("connection refused by the server ({status:?}): {message}")]
    Fatal { status: Status, message: String },
    #[error("no reply within {0:?}")]
    Timeout(Duration),
    #[error("the connection is closed")]
    Closed,
    /// A reply of a shape the call does not expect.
    #[error("unexpected reply: {0}")]
    UnexpectedReply(String),
}

impl Error {
    /// The server's status code, for server-side errors.
    pub fn status(&self) -> Option<Status> {
        match self {
            Error::Handshake { status, .. } | Error::Server { status, .. } | Error::Fatal { status, .. } => {
                Some(*status)
            }
            _ => None,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(Arc::new(e))
    }
}
