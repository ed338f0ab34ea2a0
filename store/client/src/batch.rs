//! Many operations in one BATCH frame: one write, one reply, results in
//! order. Each operation succeeds or fails on its own.
//!
//! ```no_run
//! # async fn demo(conn: cairn_client::Connection) -> Result<(), cairn_client::Error> {
//! use cairn_client::{Batch, Value};
//! let mut batch = Batch::new();
//! batch.set("a", "1").incr_by("a", 41).get("a");
//! let results = conn.batch(&batch).await?;
//! assert_eq!(results[2].as_ref().ok(), Some(&Value::Bytes(b"42".to_vec())));
//! # Ok(())
//! # }
//! ```

use std::time::Duration;

use cairn_native::op::encode_op;
use cairn_native::{encode, Kind, Op, OpRef};

use crate::commands::SetOptions;
use crate::connection::{Answer, Connection};
use crate::error::Error;
use crate::value::Value;

/// Operations to send together, already encoded.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    ops: Vec<u8>,
    count: u32,
}

impl Batch {
    pub fn new() -> Batch {
        Batch::default()
    }

    pub fn len(&self) -> usize {
        self.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Adds any operation.
    pub fn op(&mut self, op: &OpRef<'_>) -> &mut Batch {
        encode_op(&mut self.ops, op);
        self.count += 1;
        self
    }

    pub fn get(&mut self, key: impl AsRef<[u8]>) -> &mut Batch {
        self.op(&Op::Get { key: key.as_ref() })
    }

    pub fn set(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Batch {
        self.set_with(key, value, SetOptions::default())
    }

    pub fn set_with(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, options: SetOptions) -> &mut Batch {
        let ttl_ms = options.ttl.map(|t| t.as_millis().min(u128::from(u64::MAX)) as u64);
        self.op(&Op::Set { key: key.as_ref(), value: value.as_ref(), ttl_ms, condition: options.condition })
    }

    pub fn del(&mut self, key: impl AsRef<[u8]>) -> &mut Batch {
        let keys = [key.as_ref()];
        self.op(&Op::Del { keys: &keys })
    }

    pub fn exists(&mut self, key: impl AsRef<[u8]>) -> &mut Batch {
        let keys = [key.as_ref()];
        self.op(&Op::Exists { keys: &keys })
    }

    pub fn incr_by(&mut self, key: impl AsRef<[u8]>, delta: i64) -> &mut Batch {
        self.op(&Op::IncrBy { key: key.as_ref(), delta })
    }

    pub fn expire(&mut self, key: impl AsRef<[u8]>, ttl: Duration) -> &mut Batch {
        let ttl_ms = ttl.as_millis().min(i64::MAX as u128) as i64;
        self.op(&Op::Expire { key: key.as_ref(), ttl_ms })
    }

    /// Any command's argv.
    pub fn command<A: AsRef<[u8]>>(&mut self, args: &[A]) -> &mut Batch {
        let args: Vec<&[u8]> = args.iter().map(AsRef::as_ref).collect();
        self.op(&Op::Command { args: &args })
    }

    /// Forgets the operations, keeping the buffer.
    pub fn clear(&mut self) {
        self.ops.clear();
        self.count = 0;
    }
}

impl Connection {
    /// Sends a batch; one result per operation, in order.
    pub async fn batch(&self, batch: &Batch) -> Result<Vec<Result<Value, Error>>, Error> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let id = self.next_id();
        let mut frame = Vec::with_capacity(batch.ops.len() + 16);
        let start = encode::begin(&mut frame, Kind::Batch, self.flags(), id);
        frame.extend_from_slice(&batch.count.to_le_bytes());
        frame.extend_from_slice(&batch.ops);
        encode::finish(&mut frame, start);
        match self.send(id, frame).await? {
            Answer::Batch(results) if results.len() == batch.len() => Ok(results),
            Answer::Batch(results) => {
                Err(Error::Protocol(format!("{} results for a batch of {}", results.len(), batch.len())))
            }
            Answer::Single(_) => Err(Error::Protocol("a single reply to a batch".into())),
        }
    }
}
