//! ZRANDMEMBER key [count [WITHSCORES]].
//!
//! Members are picked by uniformly random rank (O(log n) each in the skiplist
//! encoding). A negative count allows repeats; a positive count returns
//! distinct members, the whole set when it asks for at least its size.

use cairn_engine::number::parse_i64;
use rand::seq::index;
use rand::Rng;

use super::super::{is, CmdError, CmdResult, Ctx};
use super::{reply_member, zset_mut};

pub fn zrandmember(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args.len() < 3 {
        return single(ctx, args[1]);
    }
    let count = parse_i64(args[2]).ok_or(CmdError::NotInteger)?;
    if count == i64::MIN {
        return Err(CmdError::Static(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    if args.len() > 4 || (args.len() == 4 && !is(args[3], "withscores")) {
        return Err(CmdError::Syntax);
    }
    let with_scores = args.len() == 4;
    if with_scores && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return Err(CmdError::Static("ERR value is out of range"));
    }
    with_count(ctx, args[1], count, with_scores)
}

fn single(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut shard = ctx.server.keyspace.lock_key(key);
    match zset_mut(shard.db(db), key, now)? {
        Some(z) => {
            let rank = rand::thread_rng().gen_range(0..z.len());
            if let Some((member, _)) = z.get(rank) {
                ctx.out.bulk(member);
            }
        }
        None => ctx.out.null_bulk(),
    }
    Ok(())
}

fn with_count(ctx: &mut Ctx<'_>, key: &[u8], count: i64, with_scores: bool) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut shard = ctx.server.keyspace.lock_key(key);
    let Some(z) = zset_mut(shard.db(db), key, now)? else {
        drop(shard);
        ctx.out.array(0);
        return Ok(());
    };
    let size = z.len();
    let wanted = count.unsigned_abs();
    let len = if count < 0 { wanted } else { wanted.min(size as u64) } as usize;
    let pairs = with_scores && ctx.out.is_resp3();
    ctx.out.array(if with_scores && !pairs { len * 2 } else { len });
    let out = &mut ctx.out;
    let mut emit = |rank: usize| {
        if let Some((member, score)) = z.get(rank) {
            reply_member(out, member, score, with_scores, pairs);
        }
    };
    let mut rng = rand::thread_rng();
    if count < 0 {
        (0..len).for_each(|_| emit(rng.gen_range(0..size)));
    } else if len == size {
        // The whole set, from the top down as Redis's set-operation iterator walks it.
        for (member, score) in z.iter_from(size - 1, true) {
            reply_member(&mut ctx.out, member, score, with_scores, pairs);
        }
    } else {
        index::sample(&mut rng, size, len).into_iter().for_each(emit);
    }
    Ok(())
}
