//! [`Batch`]: commands applied in order as one transaction (MULTI/EXEC,
//! the server's path): atomic for other callers, one log record, one
//! durable wait.

use std::time::Duration;

use crate::db::Db;
use crate::error::{Error, Result};
use crate::reply::{self, Reply};

/// Commands to run together with [`Db::batch`].
#[derive(Clone, Debug, Default)]
pub struct Batch {
    commands: Vec<Vec<Vec<u8>>>,
}

impl Batch {
    pub fn new() -> Self {
        Batch::default()
    }

    pub fn len(&self) -> usize {
        self.commands.len()
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// Any command (`args[0]` is its name).
    pub fn command(&mut self, args: &[&[u8]]) -> &mut Self {
        self.commands.push(args.iter().map(|a| a.to_vec()).collect());
        self
    }

    pub fn set(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        self.command(&[b"SET", key.as_ref(), value.as_ref()])
    }

    pub fn incr_by(&mut self, key: impl AsRef<[u8]>, delta: i64) -> &mut Self {
        self.command(&[b"INCRBY", key.as_ref(), itoa::Buffer::new().format(delta).as_bytes()])
    }

    pub fn incr(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        self.incr_by(key, 1)
    }

    pub fn del(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        self.command(&[b"DEL", key.as_ref()])
    }

    pub fn expire(&mut self, key: impl AsRef<[u8]>, ttl: Duration) -> &mut Self {
        let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        self.command(&[b"PEXPIRE", key.as_ref(), itoa::Buffer::new().format(millis).as_bytes()])
    }
}

impl Db {
    /// Runs the batch's commands in order as one transaction (MULTI/EXEC):
    /// no other call sees a state between them, they are logged as one
    /// record (all or none survive a crash), and in the `sync` tier the call
    /// returns once that record is durable. Returns one reply per command; a
    /// command that fails at run time (WRONGTYPE, ...) gives a
    /// [`Reply::Error`] in its place and does not stop the others, as in
    /// Redis. A command refused before running (unknown, wrong arity)
    /// aborts the whole batch with an error.
    pub fn batch(&self, batch: &Batch) -> Result<Vec<Reply>> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        self.with_session(|session, server| {
            session.run(server, &[b"MULTI"])?;
            let mut refused = None;
            for command in &batch.commands {
                let args: Vec<&[u8]> = command.iter().map(Vec::as_slice).collect();
                session.run(server, &args)?;
                if let (None, Reply::Error(message)) = (&refused, reply::decode(&session.out)?) {
                    refused = Some(message);
                }
            }
            session.run(server, &[b"EXEC"])?;
            match reply::decode(&session.out)? {
                Reply::Array(replies) => Ok(replies),
                Reply::Error(message) => Err(Error::from_reply(&refused.unwrap_or(message))),
                other => Err(Error::UnexpectedReply(format!("EXEC replied {other:?}"))),
            }
        })
    }
}
