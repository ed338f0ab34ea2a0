//! The handshake: the first frame a client sends is a HELLO carrying the
//! protocol magic, the highest version the client speaks, and options
//! (password, user, client name, database). The server answers HELLO_OK with
//! the version both will speak, or an ERROR frame and closes.

use crate::cursor::Cursor;
use crate::error::DecodeError;
use crate::limits::Limits;
use crate::list::ByteList;

/// First bytes of a HELLO body.
pub const MAGIC: [u8; 8] = *b"CAIRNNP\0";
/// The protocol version this crate speaks.
pub const VERSION: u16 = 1;

/// Option names of the handshake.
pub mod option {
    /// The password (as `--requirepass`, or of `user`).
    pub const AUTH: &[u8] = b"auth";
    /// The user name for `auth` (default: `default`).
    pub const USER: &[u8] = b"user";
    /// CLIENT SETNAME.
    pub const NAME: &[u8] = b"name";
    /// SELECT, in decimal.
    pub const DB: &[u8] = b"db";
}

/// A client's handshake, borrowed from its frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello<'a> {
    /// The highest version the client speaks.
    pub max_version: u16,
    /// The lowest version the client speaks.
    pub min_version: u16,
    /// Name-value pairs: an even number of strings.
    pub options: ByteList<'a>,
}

impl<'a> Hello<'a> {
    pub fn decode(cursor: &mut Cursor<'a>, limits: &Limits) -> Result<Self, DecodeError> {
        if cursor.take(MAGIC.len(), "magic")? != MAGIC {
            return Err(DecodeError::BadMagic);
        }
        let min_version = cursor.u16("min version")?;
        let max_version = cursor.u16("max version")?;
        let options = ByteList::decode(cursor, 0, limits)?;
        if options.len() % 2 != 0 {
            return Err(DecodeError::OddPairs("handshake options"));
        }
        Ok(Hello { max_version, min_version, options })
    }

    /// The value of option `name`, if given.
    pub fn option(&self, name: &[u8]) -> Option<&'a [u8]> {
        let mut items = self.options.iter();
        while let (Some(key), Some(value)) = (items.next(), items.next()) {
            if key == name {
                return Some(value);
            }
        }
        None
    }
}

/// The server's answer to a good handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HelloOk<'a> {
    /// The version both sides speak from now on.
    pub version: u16,
    /// The connection's id (as CLIENT ID).
    pub client_id: u64,
    /// The server's name and version, e.g. `cairn 0.1.0`.
    pub server: &'a [u8],
}

impl<'a> HelloOk<'a> {
    pub fn decode(cursor: &mut Cursor<'a>) -> Result<Self, DecodeError> {
        Ok(HelloOk {
            version: cursor.u16("version")?,
            client_id: cursor.u64("client id")?,
            server: cursor.bytes("server name")?,
        })
    }
}
