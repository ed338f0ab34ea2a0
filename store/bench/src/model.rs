//! What a connection expects of the server: the state of every key it owns, the reply each
//! request must get, and the reads that check the final state.

use crate::keys::{Family, KeyNamer};
use crate::resp::{short, Reply};
use crate::target::Connection;
use crate::workload::Op;

/// The reply a request must get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// `+OK`.
    Ok,
    /// The value of the `version`th write of `(family, k)`; version 0 means nil.
    Value { family: Family, k: u64, version: u64 },
    /// An integer reply.
    Integer(i64),
    /// A counter read with GET: the integer as a bulk string.
    Decimal(i64),
}

/// A request in flight: what it was and what it must get back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    /// The operation, or `None` for a final-state read.
    pub op: Option<Op>,
    pub family: Family,
    pub k: u64,
    pub expect: Expect,
    /// For a write: the version it writes (a counter's new value, a list's new length).
    pub version: u64,
}

/// A write the server acknowledged correctly: `(family, conn, k, version)`, where the version of
/// a counter is its value and of a list its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    pub family: Family,
    pub conn: u32,
    pub k: u64,
    pub version: u64,
}

/// The state of one connection's keys, as this run wrote them.
#[derive(Debug, Clone)]
pub struct Model {
    pub conn: u32,
    keys: u64,
    strings: Vec<u64>,
    counters: Vec<i64>,
    lists: Vec<u64>,
    hashes: Vec<u64>,
    /// Each family's key stem ([`KeyNamer::stem`]), made on first use.
    stems: [Vec<u8>; 4],
    key: Vec<u8>,
    field: Vec<u8>,
    value: Vec<u8>,
}

impl Model {
    pub fn new(conn: u32, keys: u64) -> Model {
        Model {
            conn,
            keys,
            strings: Vec::new(),
            counters: Vec::new(),
            lists: Vec::new(),
            hashes: Vec::new(),
            stems: Default::default(),
            key: Vec::with_capacity(64),
            field: Vec::with_capacity(8),
            value: Vec::new(),
        }
    }

    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// Advances the model by `op` on key `k` and returns the request, with the reply it must
    /// get; [`Model::queue`] sends it. Kept apart from formatting so that a pipelined batch
    /// updates the state of all its keys before it formats any request: the per-key state is
    /// large (8 bytes per key and family, 800 KB at 100,000 keys) and read at random, so nearly
    /// every access misses the cache, and back to back the CPU overlaps the misses (with a
    /// request formatted after each, one waited after another: 14% of a pipelined SET's CPU).
    pub fn advance(&mut self, op: Op, k: u64) -> Pending {
        let (family, expect, version) = match op {
            Op::Set => {
                let v = bump(&mut self.strings, k, self.keys);
                (Family::Strings, Expect::Ok, v)
            }
            Op::Get => {
                let version = self.strings.get(k as usize).copied().unwrap_or(0);
                (Family::Strings, Expect::Value { family: Family::Strings, k, version }, version)
            }
            Op::Incr => {
                let slot = slot(&mut self.counters, k, self.keys);
                *slot += 1;
                let value = *slot;
                (Family::Counters, Expect::Integer(value), u64::try_from(value).unwrap_or(0))
            }
            Op::Lpush => {
                let len = bump(&mut self.lists, k, self.keys);
                (Family::Lists, Expect::Integer(len as i64), len)
            }
            Op::Hset => {
                let v = bump(&mut self.hashes, k, self.keys);
                (Family::Hashes, Expect::Integer(i64::from(v == 1)), v)
            }
        };
        Pending { op: Some(op), family, k, expect, version }
    }

    /// Queues the request behind `pending` on `conn`: a load request from [`Model::advance`]
    /// or a final-state read from [`Model::final_reads`].
    pub fn queue<C: Connection>(&mut self, conn: &mut C, namer: &KeyNamer, pending: &Pending) {
        let Some(op) = pending.op else {
            return self.queue_read(conn, namer, pending);
        };
        let (k, version) = (pending.k, pending.version);
        self.name_key(namer, pending.family, k);
        match op {
            Op::Set => {
                namer.value(&mut self.value, self.conn, k, version);
                conn.queue(&[b"SET", &self.key, &self.value]);
            }
            Op::Get => conn.queue(&[b"GET", &self.key]),
            Op::Incr => conn.queue(&[b"INCR", &self.key]),
            Op::Lpush => {
                namer.value(&mut self.value, self.conn, k, version);
                conn.queue(&[b"LPUSH", &self.key, &self.value]);
            }
            Op::Hset => {
                KeyNamer::field(&mut self.field, k);
                namer.value(&mut self.value, self.conn, k, version);
                conn.queue(&[b"HSET", &self.key, &self.field, &self.value]);
            }
        }
    }

    /// What every key this connection wrote must show at the end.
    pub fn final_reads(&self) -> Vec<Pending> {
        let written = |values: &[u64]| -> Vec<(u64, u64)> {
            values.iter().enumerate().filter(|(_, &v)| v > 0).map(|(k, &v)| (k as u64, v)).collect()
        };
        let read =
            |family: Family, k: u64, expect: Expect, version: u64| Pending { op: None, family, k, expect, version };
        let mut reads = Vec::new();
        for (k, v) in written(&self.strings) {
            reads.push(read(Family::Strings, k, Expect::Value { family: Family::Strings, k, version: v }, v));
        }
        for (k, &n) in self.counters.iter().enumerate().filter(|(_, &n)| n != 0) {
            reads.push(read(Family::Counters, k as u64, Expect::Decimal(n), 0));
        }
        for (k, v) in written(&self.lists) {
            reads.push(read(Family::Lists, k, Expect::Integer(v as i64), v));
        }
        for (k, v) in written(&self.hashes) {
            reads.push(read(Family::Hashes, k, Expect::Value { family: Family::Hashes, k, version: v }, v));
        }
        reads
    }

    /// Names key `k` of `family` in `self.key`: its stem, then `k`.
    fn name_key(&mut self, namer: &KeyNamer, family: Family, k: u64) {
        let stem = &mut self.stems[family as usize];
        if stem.is_empty() {
            namer.stem(stem, family, self.conn);
        }
        self.key.clear();
        self.key.extend_from_slice(stem);
        KeyNamer::finish_key(&mut self.key, family, k);
    }

    /// Queues the read behind a final-state check from [`Model::final_reads`].
    fn queue_read<C: Connection>(&mut self, conn: &mut C, namer: &KeyNamer, read: &Pending) {
        self.name_key(namer, read.family, read.k);
        match read.family {
            Family::Strings | Family::Counters => conn.queue(&[b"GET", &self.key]),
            Family::Lists => conn.queue(&[b"LLEN", &self.key]),
            Family::Hashes => {
                KeyNamer::field(&mut self.field, read.k);
                conn.queue(&[b"HGET", &self.key, &self.field]);
            }
        }
    }

    /// Checks `reply` against `pending`: the acknowledged write it proves (for writes), or a
    /// description of the mismatch.
    pub fn check(&mut self, namer: &KeyNamer, pending: &Pending, reply: &Reply) -> Result<Option<Ack>, String> {
        let matches = match (pending.expect, reply) {
            (Expect::Ok, Reply::Simple(s)) => s.as_ref() == b"OK",
            (Expect::Integer(n), Reply::Integer(got)) => n == *got,
            (Expect::Decimal(n), Reply::Bulk(Some(got))) => got.as_slice() == n.to_string().as_bytes(),
            (Expect::Value { version: 0, .. }, Reply::Bulk(None)) => true,
            (Expect::Value { k, version, .. }, Reply::Bulk(Some(got))) if version > 0 => {
                namer.value(&mut self.value, self.conn, k, version);
                got == &self.value
            }
            _ => false,
        };
        if !matches {
            return Err(self.describe_mismatch(namer, pending, reply));
        }
        Ok(self.ack_of(pending))
    }

    fn ack_of(&self, pending: &Pending) -> Option<Ack> {
        pending.op.filter(|op| op.is_write())?;
        Some(Ack { family: pending.family, conn: self.conn, k: pending.k, version: pending.version })
    }

    fn describe_mismatch(&mut self, namer: &KeyNamer, pending: &Pending, reply: &Reply) -> String {
        namer.key(&mut self.key, pending.family, self.conn, pending.k);
        let expected = match pending.expect {
            Expect::Ok => "+OK".to_string(),
            Expect::Integer(n) => format!(":{n}"),
            Expect::Decimal(n) => format!("\"{n}\""),
            Expect::Value { version: 0, .. } => "(nil)".to_string(),
            Expect::Value { k, version, .. } => {
                namer.value(&mut self.value, self.conn, k, version);
                format!("{:?}", short(&self.value))
            }
        };
        let what = pending.op.map_or_else(|| "final-state read".to_string(), |op| op.name().to_uppercase());
        format!("{what} {}: expected {expected}, got {reply:?}", String::from_utf8_lossy(&self.key))
    }
}

fn slot<T: Default + Clone>(values: &mut Vec<T>, k: u64, keys: u64) -> &mut T {
    if values.is_empty() {
        values.resize(keys as usize, T::default());
    }
    &mut values[k as usize]
}

fn bump(values: &mut Vec<u64>, k: u64, keys: u64) -> u64 {
    let slot = slot(values, k, keys);
    *slot += 1;
    *slot
}
