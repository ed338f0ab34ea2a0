//! Owned reply values.

use cairn_native::Outcome;

use crate::error::Error;

/// The value of a successful request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// No value (missing key, SET NX that did not set).
    Nil,
    /// Done (SET, MSET).
    Ok,
    Int(i64),
    Bytes(Vec<u8>),
    /// Items that may be missing (MGET).
    Array(Vec<Option<Vec<u8>>>),
    /// The RESP3 bytes of a generic command's reply.
    Resp(Vec<u8>),
}

impl Value {
    /// Copies a decoded outcome.
    pub fn from_outcome(outcome: &Outcome<'_>) -> Result<Value, Error> {
        match outcome {
            Outcome::Ok(value) => Ok(match value {
                cairn_native::Value::Nil => Value::Nil,
                cairn_native::Value::Ok => Value::Ok,
                cairn_native::Value::Int(n) => Value::Int(*n),
                cairn_native::Value::Bytes(b) => Value::Bytes(b.to_vec()),
                cairn_native::Value::Array(items) => {
                    Value::Array(items.iter().map(|i| i.map(<[u8]>::to_vec)).collect())
                }
                cairn_native::Value::Resp(b) => Value::Resp(b.to_vec()),
            }),
            Outcome::Error { status, message } => {
                Err(Error::Server { status: *status, message: String::from_utf8_lossy(message).into_owned() })
            }
        }
    }

    pub(crate) fn unexpected(&self, call: &str) -> Error {
        Error::UnexpectedReply(format!("{call} got {self:?}"))
    }
}
