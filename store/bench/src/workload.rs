//! What a run does: the operation mix, the key space and pattern, and the load shape.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

/// Bad workload flags.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    #[error("unknown operation {0:?} (expected set, get, incr, lpush, hset or mix)")]
    UnknownOp(String),
    #[error("bad weight in {0:?} (expected OP or OP:WEIGHT with WEIGHT 1..=1000)")]
    BadWeight(String),
    #[error("no operations given")]
    NoOps,
    #[error("bad duration {0:?} (expected e.g. 500ms, 10s, 2m or a number of seconds)")]
    BadDuration(String),
}

/// One operation type. Each works on its own family of keys (see [`crate::keys`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Set,
    Get,
    Incr,
    Lpush,
    Hset,
}

impl Op {
    pub const ALL: [Op; 5] = [Op::Set, Op::Get, Op::Incr, Op::Lpush, Op::Hset];

    pub fn name(self) -> &'static str {
        match self {
            Op::Set => "set",
            Op::Get => "get",
            Op::Incr => "incr",
            Op::Lpush => "lpush",
            Op::Hset => "hset",
        }
    }

    /// Whether the operation changes the server's state (and so goes to the ack log).
    pub fn is_write(self) -> bool {
        !matches!(self, Op::Get)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Op {
    type Err = WorkloadError;
    fn from_str(s: &str) -> Result<Op, WorkloadError> {
        Op::ALL
            .into_iter()
            .find(|op| op.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| WorkloadError::UnknownOp(s.into()))
    }
}

/// A weighted mix of operations, e.g. `set,get`, `set:1,get:9` or `mix` (the verifiable part of
/// redis-benchmark's default test list: SET, GET, INCR, LPUSH, HSET in equal parts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpMix {
    /// Each operation repeated by its weight; a request picks one uniformly.
    slots: Vec<Op>,
    weights: Vec<(Op, u32)>,
}

impl OpMix {
    pub fn parse(spec: &str) -> Result<OpMix, WorkloadError> {
        let mut weights: Vec<(Op, u32)> = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if part.eq_ignore_ascii_case("mix") || part.eq_ignore_ascii_case("redis-benchmark") {
                weights.extend(Op::ALL.iter().map(|&op| (op, 1)));
                continue;
            }
            let (name, weight) = match part.split_once(':') {
                Some((name, w)) => {
                    let w: u32 = w.parse().map_err(|_| WorkloadError::BadWeight(part.into()))?;
                    if !(1..=1000).contains(&w) {
                        return Err(WorkloadError::BadWeight(part.into()));
                    }
                    (name, w)
                }
                None => (part, 1),
            };
            weights.push((name.parse()?, weight));
        }
        if weights.is_empty() {
            return Err(WorkloadError::NoOps);
        }
        let slots = weights.iter().flat_map(|&(op, w)| std::iter::repeat_n(op, w as usize)).collect();
        Ok(OpMix { slots, weights })
    }

    /// The operation for a uniform random draw `r`.
    pub fn pick(&self, r: u32) -> Op {
        self.slots[r as usize % self.slots.len()]
    }

    pub fn ops(&self) -> Vec<Op> {
        let mut ops: Vec<Op> = self.weights.iter().map(|&(op, _)| op).collect();
        ops.sort();
        ops.dedup();
        ops
    }

    pub fn contains(&self, op: Op) -> bool {
        self.slots.contains(&op)
    }

    /// The mix as it would be written on the command line.
    pub fn spec(&self) -> String {
        self.weights
            .iter()
            .map(|&(op, w)| if w == 1 { op.name().to_string() } else { format!("{op}:{w}") })
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// How a connection picks the next key among its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum KeyPattern {
    Random,
    Sequential,
}

/// Closed loop, or agent-shaped: each writer sleeps uniformly 0..2x the think time before every
/// request (every batch, with a pipeline).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    ClosedLoop,
    AgentShaped,
}

/// Parses `500ms`, `10s`, `2m`, `1h`, `250us` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, WorkloadError> {
    let s = s.trim();
    let bad = || WorkloadError::BadDuration(s.into());
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let value: f64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "" | "s" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(bad()),
    };
    if !seconds.is_finite() || !(0.0..=1e7).contains(&seconds) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mixes_and_weights() {
        let mix = OpMix::parse("set:3,get").unwrap();
        assert_eq!(mix.ops(), vec![Op::Set, Op::Get]);
        let picks: Vec<Op> = (0..4).map(|r| mix.pick(r)).collect();
        assert_eq!(picks, vec![Op::Set, Op::Set, Op::Set, Op::Get]);
        assert_eq!(mix.spec(), "set:3,get");
        assert_eq!(OpMix::parse("mix").unwrap().ops(), Op::ALL.to_vec());
        assert_eq!(OpMix::parse("SET").unwrap().ops(), vec![Op::Set]);
    }

    #[test]
    fn rejects_bad_mixes() {
        assert_eq!(OpMix::parse("del"), Err(WorkloadError::UnknownOp("del".into())));
        assert_eq!(OpMix::parse("set:0"), Err(WorkloadError::BadWeight("set:0".into())));
        assert_eq!(OpMix::parse("set:x"), Err(WorkloadError::BadWeight("set:x".into())));
        assert_eq!(OpMix::parse(" , "), Err(WorkloadError::NoOps));
    }

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("50ms").unwrap(), Duration::from_millis(50));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
    }
}
