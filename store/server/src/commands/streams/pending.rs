//! Pending entries: XACK, XPENDING, XCLAIM, XAUTOCLAIM.

use cairn_engine::events as ev;
use cairn_engine::types::stream::{ClaimOptions, ConsumerGroup, Nack, StreamId};
use cairn_engine::types::Stream;
use cairn_protocol::ReplyWriter;

use super::super::{int_arg, is, text, CmdError, CmdResult, Ctx};
use super::args::{int_or, range_end, range_start, strict_id};
use super::{lookup, no_key_or_group, now_ms, write_entries_by_id, write_id};

/// XACK key group id [id ...]
pub fn xack(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let Some(group) = lookup(shard.db(db), args[1], ctx.now_ms)?.and_then(|s| s.group_mut(args[2])) else {
        ctx.out.int(0);
        return Ok(());
    };
    let ids = args[3..].iter().map(|a| strict_id(a)).collect::<Result<Vec<_>, _>>()?;
    let acked = ids.into_iter().filter(|&id| group.ack(id)).count();
    ctx.out.int(acked as i64);
    Ok(())
}

/// XPENDING's range form.
struct PendingRange<'a> {
    min_idle: i64,
    start: StreamId,
    end: StreamId,
    count: usize,
    consumer: Option<&'a [u8]>,
}

fn parse_pending_range<'a>(args: &[&'a [u8]]) -> Result<PendingRange<'a>, CmdError> {
    let mut at = 3;
    let mut min_idle = 0;
    if is(args[3], "idle") {
        min_idle = int_arg(args[4])?;
        if args.len() < 8 {
            return Err(CmdError::Syntax);
        }
        at += 2;
    }
    let count = int_arg(args[at + 2])?.max(0) as usize;
    let start = range_start(args[at])?;
    let end = range_end(args[at + 1])?;
    Ok(PendingRange { min_idle, start, end, count, consumer: args.get(at + 3).copied() })
}

/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
pub fn xpending(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let argc = args.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(CmdError::Syntax);
    }
    let range = if argc >= 6 { Some(parse_pending_range(args)?) } else { None };
    let db = ctx.db();
    let now = now_ms(ctx);
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let Some(group) = lookup(shard.db(db), args[1], ctx.now_ms)?.and_then(|s| s.group(args[2])) else {
        return Err(no_key_or_group(args[1], args[2], ""));
    };
    match range {
        None => write_pending_summary(&mut ctx.out, group),
        Some(range) => write_pending_range(&mut ctx.out, group, &range, now),
    }
    Ok(())
}

fn write_pending_summary(out: &mut ReplyWriter<'_>, group: &ConsumerGroup) {
    let pel = group.pel();
    out.array(4);
    out.int(pel.len() as i64);
    match (pel.first_key_value(), pel.last_key_value()) {
        (Some((&first, _)), Some((&last, _))) => {
            write_id(out, first);
            write_id(out, last);
            let consumers: Vec<(&[u8], usize)> = group.pending_per_consumer().collect();
            out.array(consumers.len());
            for (name, pending) in consumers {
                out.array(2);
                out.bulk(name);
                out.bulk_int(pending as i64);
            }
        }
        _ => {
            out.null_bulk();
            out.null_bulk();
            out.null_array();
        }
    }
}

fn write_pending_range(out: &mut ReplyWriter<'_>, group: &ConsumerGroup, range: &PendingRange<'_>, now: i64) {
    let pel = group.pel();
    let ids: Box<dyn Iterator<Item = StreamId> + '_> = match range.consumer {
        Some(name) => match group.consumer(name) {
            Some(consumer) => Box::new(consumer.pending().range(range.start..).copied()),
            None => {
                out.array(0);
                return;
            }
        },
        None => Box::new(pel.range(range.start..).map(|(id, _)| *id)),
    };
    let rows: Vec<(StreamId, &Nack)> = ids
        .take_while(|&id| id <= range.end)
        .filter_map(|id| pel.get(&id).map(|nack| (id, nack)))
        .filter(|(_, nack)| range.min_idle == 0 || now - nack.delivery_time >= range.min_idle)
        .take(range.count)
        .collect();
    out.array(rows.len());
    for (id, nack) in rows {
        out.array(4);
        write_id(out, id);
        out.bulk(&nack.consumer);
        out.int((now - nack.delivery_time).max(0));
        out.int(nack.delivery_count as i64);
    }
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds]
/// [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]
pub fn xclaim(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let now = now_ms(ctx);
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let stream = match lookup(shard.db(db), args[1], ctx.now_ms)? {
        Some(s) if s.group(args[2]).is_some() => s,
        _ => return Err(no_key_or_group(args[1], args[2], "")),
    };
    let min_idle = int_or(args[4], "ERR Invalid min-idle-time argument for XCLAIM")?.max(0);
    let ids: Vec<StreamId> = args[5..].iter().map_while(|a| strict_id(a).ok()).collect();
    let (opts, justid) = parse_claim_options(&args[5 + ids.len()..], min_idle, now)?;
    let had_consumer = has_consumer(stream, args[2], args[3]);
    let claimed = stream.claim(args[2], args[3], &ids, &opts, now);
    if !had_consumer && has_consumer(stream, args[2], args[3]) {
        ctx.notify(ev::STREAM, "xgroup-createconsumer", args[1]);
    }
    write_claimed(&mut ctx.out, stream, &claimed, justid);
    Ok(())
}

/// Whether `consumer` exists in `group`.
fn has_consumer(stream: &Stream, group: &[u8], consumer: &[u8]) -> bool {
    stream.group(group).is_some_and(|g| g.consumer(consumer).is_some())
}

fn parse_claim_options(opts: &[&[u8]], min_idle: i64, now: i64) -> Result<(ClaimOptions, bool), CmdError> {
    let mut claim = ClaimOptions {
        min_idle_ms: min_idle,
        delivery_time: -1,
        retry_count: None,
        force: false,
        justid: false,
        last_id: StreamId::MIN,
    };
    let mut i = 0;
    while i < opts.len() {
        let more = i + 1 < opts.len();
        let opt = opts[i];
        if is(opt, "force") {
            claim.force = true;
        } else if is(opt, "justid") {
            claim.justid = true;
        } else if is(opt, "idle") && more {
            i += 1;
            let idle = int_or(opts[i], "ERR Invalid IDLE option argument for XCLAIM")?;
            claim.delivery_time = now.wrapping_sub(idle);
        } else if is(opt, "time") && more {
            i += 1;
            claim.delivery_time = int_or(opts[i], "ERR Invalid TIME option argument for XCLAIM")?;
        } else if is(opt, "retrycount") && more {
            i += 1;
            let count = int_or(opts[i], "ERR Invalid RETRYCOUNT option argument for XCLAIM")?;
            claim.retry_count = u64::try_from(count).ok();
        } else if is(opt, "lastid") && more {
            i += 1;
            claim.last_id = strict_id(opts[i])?;
        } else {
            return Err(CmdError::Message(format!("ERR Unrecognized XCLAIM option '{}'", text(opt))));
        }
        i += 1;
    }
    if claim.delivery_time < 0 || claim.delivery_time > now {
        claim.delivery_time = now;
    }
    Ok((claim, claim.justid))
}

/// Claimed entries: their IDs (JUSTID) or the entries.
fn write_claimed(out: &mut ReplyWriter<'_>, stream: &Stream, ids: &[StreamId], justid: bool) {
    if justid {
        out.array(ids.len());
        ids.iter().for_each(|&id| write_id(out, id));
    } else {
        write_entries_by_id(out, stream, ids);
    }
}

/// Largest COUNT XAUTOCLAIM accepts (Redis: `LONG_MAX / max(sizeof(streamID), 10)`).
const AUTOCLAIM_MAX_COUNT: i64 = i64::MAX / 16;

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
pub fn xautoclaim(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let min_idle = int_or(args[4], "ERR Invalid min-idle-time argument for XAUTOCLAIM")?.max(0);
    let start = range_start(args[5])?;
    let mut count = 100;
    let mut justid = false;
    let mut i = 6;
    while i < args.len() {
        if is(args[i], "count") && i + 1 < args.len() {
            count = int_or(args[i + 1], "ERR COUNT must be > 0")?;
            if !(1..=AUTOCLAIM_MAX_COUNT).contains(&count) {
                return Err(CmdError::Static("ERR COUNT must be > 0"));
            }
            i += 1;
        } else if is(args[i], "justid") {
            justid = true;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    let db = ctx.db();
    let now = now_ms(ctx);
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let stream = match lookup(shard.db(db), args[1], ctx.now_ms)? {
        Some(s) if s.group(args[2]).is_some() => s,
        _ => return Err(no_key_or_group(args[1], args[2], "")),
    };
    let had_consumer = has_consumer(stream, args[2], args[3]);
    let outcome = stream.autoclaim(args[2], args[3], min_idle, start, count as u64, justid, now);
    if !had_consumer && has_consumer(stream, args[2], args[3]) {
        ctx.notify(ev::STREAM, "xgroup-createconsumer", args[1]);
    }
    ctx.out.array(3);
    write_id(&mut ctx.out, outcome.next);
    write_claimed(&mut ctx.out, stream, &outcome.claimed, justid);
    ctx.out.array(outcome.deleted.len());
    outcome.deleted.iter().for_each(|&id| write_id(&mut ctx.out, id));
    Ok(())
}
