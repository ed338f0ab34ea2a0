//! The typed calls: each builds the command's arguments, runs it through
//! [`Db::command`]'s path and narrows the reply to a Rust type.

use std::time::Duration;

use crate::db::Db;
use crate::error::{Error, Result};
use crate::options::{SetCondition, SetOptions};
use crate::reply::Reply;

/// A key's time to live ([`Db::ttl`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ttl {
    /// The key does not exist.
    Missing,
    /// The key exists and never expires.
    Persistent,
    /// The key expires after this long (millisecond resolution).
    Expires(Duration),
}

impl Db {
    /// GET: the value, or `None` when the key does not exist.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        match self.command(&[b"GET", key.as_ref()])? {
            Reply::Bulk(value) => Ok(Some(value)),
            Reply::Nil => Ok(None),
            other => Err(unexpected("GET", &other)),
        }
    }

    /// SET: stores `value`, replacing any value and time to live.
    pub fn set(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.set_with(key, value, SetOptions::default()).map(|_| ())
    }

    /// SET with a time to live and/or a condition; false when the condition
    /// (NX/XX) prevented the write.
    pub fn set_with(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, options: SetOptions) -> Result<bool> {
        let mut millis = itoa::Buffer::new();
        let mut args: Vec<&[u8]> = vec![b"SET", key.as_ref(), value.as_ref()];
        if let Some(ttl) = options.ttl {
            args.extend_from_slice(&[b"PX", millis.format(ttl_millis(ttl)?).as_bytes()]);
        } else if options.keep_ttl {
            args.push(b"KEEPTTL");
        }
        match options.condition {
            SetCondition::Always => {}
            SetCondition::IfAbsent => args.push(b"NX"),
            SetCondition::IfPresent => args.push(b"XX"),
        }
        match self.command(&args)? {
            Reply::Status(s) if s == "OK" => Ok(true),
            Reply::Nil => Ok(false),
            other => Err(unexpected("SET", &other)),
        }
    }

    /// INCR: adds one to the integer stored at `key` (0 when missing).
    pub fn incr(&self, key: impl AsRef<[u8]>) -> Result<i64> {
        self.incr_by(key, 1)
    }

    /// INCRBY: adds `delta`; [`Error::NotInteger`] when the value is not an
    /// integer or the sum overflows.
    pub fn incr_by(&self, key: impl AsRef<[u8]>, delta: i64) -> Result<i64> {
        let mut digits = itoa::Buffer::new();
        int(self.command(&[b"INCRBY", key.as_ref(), digits.format(delta).as_bytes()])?, "INCRBY")
    }

    /// DEL of one key: whether it existed.
    pub fn del(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        Ok(int(self.command(&[b"DEL", key.as_ref()])?, "DEL")? > 0)
    }

    /// DEL of several keys at once: how many existed.
    pub fn del_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<u64> {
        let mut args: Vec<&[u8]> = Vec::with_capacity(keys.len() + 1);
        args.push(b"DEL");
        args.extend(keys.iter().map(AsRef::as_ref));
        Ok(int(self.command(&args)?, "DEL")?.max(0) as u64)
    }

    /// EXISTS of one key.
    pub fn exists(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        Ok(int(self.command(&[b"EXISTS", key.as_ref()])?, "EXISTS")? > 0)
    }

    /// PEXPIRE: the key expires after `ttl`; false when it does not exist.
    pub fn expire(&self, key: impl AsRef<[u8]>, ttl: Duration) -> Result<bool> {
        let mut millis = itoa::Buffer::new();
        let millis = millis.format(ttl_millis(ttl)?);
        Ok(int(self.command(&[b"PEXPIRE", key.as_ref(), millis.as_bytes()])?, "PEXPIRE")? > 0)
    }

    /// PERSIST: removes the time to live; false when there was none.
    pub fn persist(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        Ok(int(self.command(&[b"PERSIST", key.as_ref()])?, "PERSIST")? > 0)
    }

    /// PTTL: the key's time to live.
    pub fn ttl(&self, key: impl AsRef<[u8]>) -> Result<Ttl> {
        match int(self.command(&[b"PTTL", key.as_ref()])?, "PTTL")? {
            -2 => Ok(Ttl::Missing),
            -1 => Ok(Ttl::Persistent),
            ms if ms >= 0 => Ok(Ttl::Expires(Duration::from_millis(ms as u64))),
            other => Err(unexpected("PTTL", &Reply::Int(other))),
        }
    }
}

/// A TTL in whole milliseconds, at least 1 (Redis refuses PX 0).
fn ttl_millis(ttl: Duration) -> Result<u64> {
    match u64::try_from(ttl.as_millis()) {
        Ok(0) => Err(Error::Server("ERR invalid expire time: a TTL must be at least 1 ms".to_string())),
        Ok(ms) if ms <= i64::MAX as u64 / 2 => Ok(ms),
        _ => Err(Error::Server("ERR invalid expire time: TTL too large".to_string())),
    }
}

fn int(reply: Reply, command: &str) -> Result<i64> {
    match reply {
        Reply::Int(n) => Ok(n),
        other => Err(unexpected(command, &other)),
    }
}

fn unexpected(command: &str, reply: &Reply) -> Error {
    Error::UnexpectedReply(format!("{command} replied {reply:?}"))
}
