//! The write operations a crash-test writer issues, the keys it owns, and how an operation
//! is written to and read back from an ack log line.

use std::fmt;

/// Keys each writer owns, per family. A writer's keys are its own: nobody else writes them.
pub const SET_KEYS: u64 = 16;
pub const COUNTERS: u64 = 2;
pub const LISTS: u64 = 2;
pub const HASHES: u64 = 2;
pub const HASH_FIELDS: u64 = 8;

/// One write operation with everything needed to check it later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Set { key: String, value: String },
    Incr { key: String },
    Lpush { key: String, value: String },
    Hset { key: String, field: String, value: String },
}

impl Op {
    /// The RESP arguments of the command.
    pub fn args(&self) -> Vec<&[u8]> {
        match self {
            Op::Set { key, value } => vec![b"SET", key.as_bytes(), value.as_bytes()],
            Op::Incr { key } => vec![b"INCR", key.as_bytes()],
            Op::Lpush { key, value } => vec![b"LPUSH", key.as_bytes(), value.as_bytes()],
            Op::Hset { key, field, value } => vec![b"HSET", key.as_bytes(), field.as_bytes(), value.as_bytes()],
        }
    }

    pub fn key(&self) -> &str {
        match self {
            Op::Set { key, .. } | Op::Incr { key } | Op::Lpush { key, .. } | Op::Hset { key, .. } => key,
        }
    }

    /// Parses the fields written by `Display` (already split on spaces).
    pub fn parse(fields: &[&str]) -> Option<Op> {
        let owned = |i: usize| fields.get(i).map(|s| s.to_string());
        match *fields.first()? {
            "S" => Some(Op::Set { key: owned(1)?, value: owned(2)? }),
            "I" => Some(Op::Incr { key: owned(1)? }),
            "L" => Some(Op::Lpush { key: owned(1)?, value: owned(2)? }),
            "H" => Some(Op::Hset { key: owned(1)?, field: owned(2)?, value: owned(3)? }),
            _ => None,
        }
    }

    /// How many space-separated fields `Display` writes for this kind of operation.
    pub fn field_count(tag: &str) -> Option<usize> {
        match tag {
            "S" | "L" => Some(3),
            "I" => Some(2),
            "H" => Some(4),
            _ => None,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Set { key, value } => write!(f, "S {key} {value}"),
            Op::Incr { key } => write!(f, "I {key}"),
            Op::Lpush { key, value } => write!(f, "L {key} {value}"),
            Op::Hset { key, field, value } => write!(f, "H {key} {field} {value}"),
        }
    }
}

/// Generates one writer's operations: a seeded mix of 40% SET, 20% each INCR/LPUSH/HSET.
pub struct OpGenerator {
    rng: XorShift,
    prefix: String,
    writer: usize,
    value_size: usize,
}

impl OpGenerator {
    pub fn new(seed: u64, prefix: &str, writer: usize, value_size: usize) -> OpGenerator {
        let rng = XorShift::new(seed ^ (writer as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        OpGenerator { rng, prefix: prefix.to_string(), writer, value_size }
    }

    /// The operation with sequence number `seq` (the values embed it, so each is unique).
    pub fn next(&mut self, seq: u64) -> Op {
        let roll = self.rng.below(10);
        let (prefix, w) = (&self.prefix, self.writer);
        let value = self.value(seq);
        match roll {
            0..=3 => Op::Set { key: format!("{prefix}:w{w}:s{}", self.rng.below(SET_KEYS)), value },
            4 | 5 => Op::Incr { key: format!("{prefix}:w{w}:c{}", self.rng.below(COUNTERS)) },
            6 | 7 => Op::Lpush { key: format!("{prefix}:w{w}:l{}", self.rng.below(LISTS)), value },
            _ => {
                let key = format!("{prefix}:w{w}:h{}", self.rng.below(HASHES));
                Op::Hset { key, field: format!("f{}", self.rng.below(HASH_FIELDS)), value }
            }
        }
    }

    fn value(&self, seq: u64) -> String {
        let mut value = format!("w{}.{}", self.writer, seq);
        while value.len() < self.value_size {
            value.push('x');
        }
        value
    }
}

/// xorshift64*: small, seedable, good enough to pick keys.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> XorShift {
        XorShift(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_parse_round_trip() {
        let mut generator = OpGenerator::new(7, "c1", 3, 20);
        for seq in 1..200 {
            let op = generator.next(seq);
            let text = op.to_string();
            let fields: Vec<&str> = text.split(' ').collect();
            assert_eq!(Op::field_count(fields[0]), Some(fields.len()));
            assert_eq!(Op::parse(&fields), Some(op));
        }
    }

    #[test]
    fn values_are_unique_and_padded() {
        let generator = OpGenerator::new(1, "p", 0, 12);
        assert_eq!(generator.value(5), "w0.5xxxxxxxx");
        assert_ne!(generator.value(5), generator.value(50));
    }

    #[test]
    fn the_same_seed_gives_the_same_operations() {
        let mut a = OpGenerator::new(42, "p", 1, 0);
        let mut b = OpGenerator::new(42, "p", 1, 0);
        for seq in 0..50 {
            assert_eq!(a.next(seq), b.next(seq));
        }
    }
}
