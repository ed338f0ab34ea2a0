//! Sorted set commands, with Redis 7.0's replies and errors.
//!
//! # Layout
//!
//! - `write`: ZADD, ZINCRBY, ZREM, ZREMRANGEBYRANK/SCORE/LEX.
//! - `read`: ZCARD, ZSCORE, ZMSCORE, ZRANK, ZREVRANK, ZCOUNT, ZLEXCOUNT, ZSCAN.
//! - `range`: ZRANGE (BYSCORE, BYLEX, REV, LIMIT), ZRANGESTORE and the
//!   older ZREVRANGE, Z[REV]RANGEBYSCORE, Z[REV]RANGEBYLEX.
//! - `setops`: ZUNION, ZINTER, ZDIFF, their STORE forms, ZINTERCARD.
//! - `pop`: ZPOPMIN, ZPOPMAX, ZMPOP and the blocking BZPOPMIN, BZPOPMAX,
//!   BZMPOP. Commands that create a sorted set signal the blocking registry
//!   (a key that exists is never empty, so only creation can serve a waiter).
//! - `random`: ZRANDMEMBER.
//! - `set_source`: reading plain sets as inputs of the set operations.
//!
//! The GEO family (`geo.rs`) stores its indexes as sorted sets and reuses
//! ZADD, `zset_mut` and `store_result`.
//!
//! Scores are written with `ReplyWriter::double` (`%.17g` in RESP2, a RESP3
//! double otherwise); WITHSCORES replies are flat in RESP2 and pairs in RESP3.

mod pop;
mod random;
mod range;
mod read;
mod set_source;
mod setops;
mod write;

/// ZADD, which GEOADD runs with its positions turned into scores.
pub(super) use write::zadd;

use cairn_engine::events as ev;
use cairn_engine::types::ZSet;
use cairn_engine::{Table, Value};
use cairn_protocol::ReplyWriter;

use super::table::{c, CommandSpec, F, K1, K12, MOVABLE, NONE, R, W};
use super::CmdError;

/// This family's commands (joined into the command table).
pub static COMMANDS: &[CommandSpec] = &[
    c("zadd", -4, W | F, K1, write::zadd),
    c("zincrby", 4, W | F, K1, write::zincrby),
    c("zrem", -3, W | F, K1, write::zrem),
    c("zremrangebyrank", 4, W, K1, write::zremrangebyrank),
    c("zremrangebyscore", 4, W, K1, write::zremrangebyscore),
    c("zremrangebylex", 4, W, K1, write::zremrangebylex),
    c("zcard", 2, R | F, K1, read::zcard),
    c("zscore", 3, R | F, K1, read::zscore),
    c("zmscore", -3, R | F, K1, read::zmscore),
    c("zrank", 3, R | F, K1, read::zrank),
    c("zrevrank", 3, R | F, K1, read::zrevrank),
    c("zcount", 4, R | F, K1, read::zcount),
    c("zlexcount", 4, R | F, K1, read::zlexcount),
    c("zscan", -3, R, K1, read::zscan),
    c("zrange", -4, R, K1, range::zrange),
    c("zrangestore", -5, W, K12, range::zrangestore),
    c("zrevrange", -4, R, K1, range::zrevrange),
    c("zrangebyscore", -4, R, K1, range::zrangebyscore),
    c("zrevrangebyscore", -4, R, K1, range::zrevrangebyscore),
    c("zrangebylex", -4, R, K1, range::zrangebylex),
    c("zrevrangebylex", -4, R, K1, range::zrevrangebylex),
    c("zunion", -3, R, NONE, setops::zunion),
    c("zinter", -3, R, NONE, setops::zinter),
    c("zdiff", -3, R, NONE, setops::zdiff),
    c("zunionstore", -4, W | MOVABLE, K1, setops::zunionstore),
    c("zinterstore", -4, W | MOVABLE, K1, setops::zinterstore),
    c("zdiffstore", -4, W | MOVABLE, K1, setops::zdiffstore),
    c("zintercard", -3, R, NONE, setops::zintercard),
    c("zpopmin", -2, W | F, K1, pop::zpopmin),
    c("zpopmax", -2, W | F, K1, pop::zpopmax),
    c("zmpop", -4, W | MOVABLE, NONE, pop::zmpop),
    c("bzpopmin", -3, W | F, (1, -2, 1), pop::bzpopmin),
    c("bzpopmax", -3, W | F, (1, -2, 1), pop::bzpopmax),
    c("bzmpop", -5, W | MOVABLE, NONE, pop::bzmpop),
    c("zrandmember", -2, R, K1, random::zrandmember),
];

/// The sorted set under `key`: `None` when absent, WRONGTYPE for other types.
pub(super) fn zset_mut<'t>(table: &'t mut Table, key: &[u8], now_ms: u64) -> Result<Option<&'t mut ZSet>, CmdError> {
    match table.get(key, now_ms) {
        None => Ok(None),
        Some(entry) => match &mut entry.value {
            Value::ZSet(z) => Ok(Some(z)),
            _ => Err(CmdError::WrongType),
        },
    }
}

/// Stores a computed result under `dst` (replacing any value and expiry), or
/// deletes `dst` when the result is empty; returns the result's size.
/// `event` names the command for keyspace notifications.
pub(super) fn store_result(table: &mut Table, dst: &[u8], result: ZSet, now_ms: u64, event: &str) -> usize {
    let len = result.len();
    if len == 0 {
        if table.remove(dst).is_some() {
            table.emit(ev::GENERIC, "del", dst);
        }
    } else {
        table.insert(dst, Value::ZSet(Box::new(result)), cairn_engine::entry::NO_EXPIRY, now_ms);
        table.emit(ev::ZSET, event, dst);
    }
    len
}

/// Removes `key` if its sorted set became empty.
fn drop_if_empty(table: &mut Table, key: &[u8], now_ms: u64) {
    if let Ok(Some(z)) = zset_mut(table, key, now_ms) {
        if z.is_empty() {
            table.remove(key);
            table.emit(ev::GENERIC, "del", key);
        }
    }
}

/// Writes `len` members with optional scores: a flat array in RESP2, an
/// array of `[member, score]` pairs in RESP3 when `with_scores`.
fn reply_members<'a>(
    out: &mut ReplyWriter<'_>,
    len: usize,
    items: impl Iterator<Item = (&'a [u8], f64)>,
    with_scores: bool,
) {
    let pairs = with_scores && out.is_resp3();
    out.array(if with_scores && !pairs { len * 2 } else { len });
    for (member, score) in items.take(len) {
        reply_member(out, member, score, with_scores, pairs);
    }
}

/// One member (and score), as a pair when `pair`.
fn reply_member(out: &mut ReplyWriter<'_>, member: &[u8], score: f64, with_score: bool, pair: bool) {
    if pair {
        out.array(2);
    }
    out.bulk(member);
    if with_score {
        out.double(score);
    }
}

/// Redis's `getRangeLongFromObjectOrReply` with a custom message: `msg` for
/// both a non-integer and a value outside `min..=max`.
fn ranged_int(arg: &[u8], min: i64, max: i64, msg: &'static str) -> Result<i64, CmdError> {
    cairn_engine::number::parse_i64(arg).filter(|n| (min..=max).contains(n)).ok_or(CmdError::Static(msg))
}
