//! Typed calls. Each encodes one REQUEST frame, waits for its reply, and
//! checks the reply's shape.

use std::time::Duration;

use cairn_native::{encode, Op, OpRef, SetCondition};

use crate::connection::{Answer, Connection};
use crate::error::Error;
use crate::value::Value;

/// SET's options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetOptions {
    /// Expire the key after this long (millisecond precision).
    pub ttl: Option<Duration>,
    /// NX (only if absent) or XX (only if present).
    pub condition: SetCondition,
}

impl SetOptions {
    /// A TTL, no condition.
    pub fn ttl(ttl: Duration) -> SetOptions {
        SetOptions { ttl: Some(ttl), condition: SetCondition::Always }
    }

    /// Only if the key does not exist (NX).
    pub fn if_absent() -> SetOptions {
        SetOptions { ttl: None, condition: SetCondition::IfAbsent }
    }

    /// Only if the key exists (XX).
    pub fn if_present() -> SetOptions {
        SetOptions { ttl: None, condition: SetCondition::IfPresent }
    }

    pub fn with_ttl(mut self, ttl: Duration) -> SetOptions {
        self.ttl = Some(ttl);
        self
    }
}

fn slices<K: AsRef<[u8]>>(items: &[K]) -> Vec<&[u8]> {
    items.iter().map(AsRef::as_ref).collect()
}

impl Connection {
    /// Sends one operation and returns its value (server errors as `Err`).
    pub async fn request(&self, op: &OpRef<'_>) -> Result<Value, Error> {
        let id = self.next_id();
        let mut frame = Vec::with_capacity(64);
        encode::request(&mut frame, id, self.flags(), op);
        match self.send(id, frame).await? {
            Answer::Single(result) => result,
            Answer::Batch(_) => Err(Error::Protocol("a batch reply to a single request".into())),
        }
    }

    /// GET: the value, or `None` when the key does not exist.
    pub async fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>, Error> {
        match self.request(&Op::Get { key: key.as_ref() }).await? {
            Value::Bytes(b) => Ok(Some(b)),
            Value::Nil => Ok(None),
            other => Err(other.unexpected("GET")),
        }
    }

    /// SET without options.
    pub async fn set(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<(), Error> {
        self.set_with(key, value, SetOptions::default()).await.map(|_| ())
    }

    /// SET with a TTL and/or NX/XX; false when the condition kept it from setting.
    pub async fn set_with(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        options: SetOptions,
    ) -> Result<bool, Error> {
        let ttl_ms = options.ttl.map(|t| t.as_millis().min(u128::from(u64::MAX)) as u64);
        let op = Op::Set { key: key.as_ref(), value: value.as_ref(), ttl_ms, condition: options.condition };
        match self.request(&op).await? {
            Value::Ok => Ok(true),
            Value::Nil => Ok(false),
            other => Err(other.unexpected("SET")),
        }
    }

    /// DEL: how many of `keys` existed.
    pub async fn del<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<u64, Error> {
        let keys = slices(keys);
        self.count(&Op::Del { keys: &keys }, "DEL").await
    }

    /// EXISTS: how many of `keys` exist (a key named twice counts twice).
    pub async fn exists<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<u64, Error> {
        let keys = slices(keys);
        self.count(&Op::Exists { keys: &keys }, "EXISTS").await
    }

    /// INCRBY: the new value.
    pub async fn incr_by(&self, key: impl AsRef<[u8]>, delta: i64) -> Result<i64, Error> {
        match self.request(&Op::IncrBy { key: key.as_ref(), delta }).await? {
            Value::Int(n) => Ok(n),
            other => Err(other.unexpected("INCRBY")),
        }
    }

    /// EXPIRE (millisecond precision): false when the key does not exist.
    pub async fn expire(&self, key: impl AsRef<[u8]>, ttl: Duration) -> Result<bool, Error> {
        let ttl_ms = ttl.as_millis().min(i64::MAX as u128) as i64;
        match self.request(&Op::Expire { key: key.as_ref(), ttl_ms }).await? {
            Value::Int(n) => Ok(n == 1),
            other => Err(other.unexpected("EXPIRE")),
        }
    }

    /// MGET: one entry per key, `None` where a key is missing.
    pub async fn mget<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>, Error> {
        let keys = slices(keys);
        match self.request(&Op::MGet { keys: &keys }).await? {
            Value::Array(items) => Ok(items),
            other => Err(other.unexpected("MGET")),
        }
    }

    /// MSET of key-value pairs.
    pub async fn mset<K: AsRef<[u8]>, V: AsRef<[u8]>>(&self, pairs: &[(K, V)]) -> Result<(), Error> {
        let items: Vec<&[u8]> = pairs.iter().flat_map(|(k, v)| [k.as_ref(), v.as_ref()]).collect();
        match self.request(&Op::MSet { items: &items }).await? {
            Value::Ok => Ok(()),
            other => Err(other.unexpected("MSET")),
        }
    }

    /// Any command, given as its argv (`["HSET", "h", "f", "v"]`): the
    /// RESP3 encoding of its reply (errors come back as `Err`).
    pub async fn command<A: AsRef<[u8]>>(&self, args: &[A]) -> Result<Vec<u8>, Error> {
        let args = slices(args);
        match self.request(&Op::Command { args: &args }).await? {
            Value::Resp(bytes) => Ok(bytes),
            Value::Nil => Ok(b"_\r\n".to_vec()),
            other => Err(other.unexpected("COMMAND")),
        }
    }

    async fn count(&self, op: &OpRef<'_>, call: &str) -> Result<u64, Error> {
        match self.request(op).await? {
            Value::Int(n) => u64::try_from(n).map_err(|_| Value::Int(n).unexpected(call)),
            other => Err(other.unexpected(call)),
        }
    }
}
