//! CAIRN.XCONSUMER: the rebuild-only command with which a snapshot restores
//! one consumer of a stream group, its seen time and its pending entries
//! exactly (also those whose stream entry was deleted or trimmed, which
//! XCLAIM would drop), as Redis's RDB keeps them. The command table does
//! not hold it, so clients cannot call it: only the replayer runs it (see
//! `commands::rebuild_only`), and it does the same if a log ever holds it.
//!
//! `CAIRN.XCONSUMER key group consumer seen-time [id delivery-time delivery-count ...]`

use cairn_engine::types::stream::StreamId;

use super::super::{int_arg, CmdError, CmdResult, Ctx};
use super::args::strict_id;
use super::{lookup, no_key_or_group};

/// One pending entry as the command carries it.
struct Pending {
    id: StreamId,
    delivery_time: i64,
    delivery_count: u64,
}

/// Creates the consumer if missing, sets its seen time, and makes each listed
/// entry pending for it with the given delivery time and count.
pub fn xconsumer(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (key, group_name, consumer) = (args[1], args[2], args[3]);
    let seen_time = int_arg(args[4])?;
    let pending = parse_pending(&args[5..])?;
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(key);
    let Some(group) = lookup(shard.db(db), key, ctx.now_ms)?.and_then(|s| s.group_mut(group_name)) else {
        return Err(no_key_or_group(key, group_name, ""));
    };
    group.restore_consumer(consumer, seen_time);
    for p in pending {
        group.restore_pending(p.id, consumer, p.delivery_time, p.delivery_count);
    }
    ctx.out.ok();
    Ok(())
}

/// The `id delivery-time delivery-count` triples, all checked before any is applied.
fn parse_pending(words: &[&[u8]]) -> Result<Vec<Pending>, CmdError> {
    if words.len() % 3 != 0 {
        return Err(CmdError::Syntax);
    }
    words
        .chunks_exact(3)
        .map(|triple| {
            Ok(Pending {
                id: strict_id(triple[0])?,
                delivery_time: int_arg(triple[1])?,
                delivery_count: count(triple[2])?,
            })
        })
        .collect()
}

/// A delivery count: a decimal u64.
fn count(word: &[u8]) -> Result<u64, CmdError> {
    std::str::from_utf8(word).ok().and_then(|s| s.parse().ok()).ok_or(CmdError::Syntax)
}
