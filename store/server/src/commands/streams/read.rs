//! XREAD and XREADGROUP (Redis's `xreadCommand`).
//!
//! Every stream that can serve something right away is answered: XREAD with
//! the entries after the given ID, XREADGROUP `>` with entries never
//! delivered to the group, XREADGROUP with an ID with the consumer's own
//! pending entries (its history). When nothing can be served the reply is a
//! null array, or with BLOCK the client blocks ([`crate::blocking`]).
//!
//! A blocked client is registered with its command rewritten as Redis
//! remembers it: `$` replaced by the IDs it stood for, and COUNT 1000 when no
//! COUNT was given. XADD (and XGROUP DESTROY, RENAME, ...) signal the key; the
//! command then runs again in retry mode ([`serve_blocked`]), Redis's
//! `serveClientsBlockedOnStreamKey`: it answers with the first stream whose
//! last ID passed the one waited for, or, for XREADGROUP, with an error when
//! the key or the group is gone.

use cairn_engine::events as ev;
use cairn_engine::types::stream::StreamId;
use cairn_engine::types::Stream;
use cairn_protocol::ReplyWriter;

use super::super::{int_arg, is, CmdError, CmdResult, Ctx};
use super::args::{int_or, strict_id};
use super::{lookup, no_key_or_group, now_ms, write_entries_by_id, write_entry, write_id};

/// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
pub fn xread(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    read(ctx, args, false)
}

/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...] id [id ...]
pub fn xreadgroup(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    read(ctx, args, true)
}

/// The parsed options.
struct ReadArgs<'a> {
    /// BLOCK's timeout in milliseconds.
    block: Option<i64>,
    /// 0: no limit.
    count: usize,
    /// Position of the first key.
    keys_at: usize,
    /// Number of streams.
    streams: usize,
    /// Group and consumer (XREADGROUP).
    group: Option<(&'a [u8], &'a [u8])>,
    noack: bool,
}

fn parse<'a>(args: &[&'a [u8]], xreadgroup: bool, from_script: bool) -> Result<ReadArgs<'a>, CmdError> {
    let mut parsed = ReadArgs { block: None, count: 0, keys_at: 0, streams: 0, group: None, noack: false };
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = args[i];
        if is(opt, "block") && more > 0 {
            if from_script {
                // As Redis: BLOCK has no sense within Lua (not just "never blocks").
                let name = String::from_utf8_lossy(args[0]);
                return Err(CmdError::Message(format!(
                    "ERR {name} command is not allowed with BLOCK option from scripts"
                )));
            }
            i += 1;
            let timeout = int_or(args[i], "ERR timeout is not an integer or out of range")?;
            if timeout < 0 {
                return Err(CmdError::Static("ERR timeout is negative"));
            }
            parsed.block = Some(timeout);
        } else if is(opt, "count") && more > 0 {
            i += 1;
            parsed.count = int_arg(args[i])?.max(0) as usize;
        } else if is(opt, "streams") && more > 0 {
            parsed.keys_at = i + 1;
            let rest = args.len() - parsed.keys_at;
            if rest % 2 != 0 {
                return Err(CmdError::Static(
                    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                ));
            }
            parsed.streams = rest / 2;
            break;
        } else if is(opt, "group") && more >= 2 {
            if !xreadgroup {
                return Err(CmdError::Static(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            parsed.group = Some((args[i + 1], args[i + 2]));
            i += 2;
        } else if is(opt, "noack") {
            if !xreadgroup {
                return Err(CmdError::Static(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            parsed.noack = true;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if parsed.keys_at == 0 {
        return Err(CmdError::Syntax);
    }
    if xreadgroup && parsed.group.is_none() {
        return Err(CmdError::Static("ERR Missing GROUP option for XREADGROUP"));
    }
    Ok(parsed)
}

const DOLLAR_IN_GROUP: CmdError = CmdError::Static(
    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by \
     specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
);
const GT_WITHOUT_GROUP: CmdError = CmdError::Static(
    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
);

/// `>` is represented as the largest ID, as Redis does.
const NEW_ENTRIES: StreamId = StreamId::MAX;

/// COUNT of a blocked read that gave none (Redis's `XREAD_BLOCKED_DEFAULT_COUNT`).
const BLOCKED_DEFAULT_COUNT: usize = 1000;

fn read(ctx: &mut Ctx<'_>, args: &[&[u8]], xreadgroup: bool) -> CmdResult {
    let opts = parse(args, xreadgroup, ctx.client.origin == crate::client::Origin::Script)?;
    if ctx.client.block.is_retrying() {
        return serve_blocked(ctx, args, &opts);
    }
    let keys = &args[opts.keys_at..opts.keys_at + opts.streams];
    let id_args = &args[opts.keys_at + opts.streams..];
    let db = ctx.db();
    let now = ctx.now_ms;
    let server = ctx.server;
    let mut guard = server.keyspace.lock_keys(keys.iter().copied());
    let mut ids = Vec::with_capacity(keys.len());
    for (key, arg) in keys.iter().zip(id_args) {
        let stream = lookup(guard.table(db, key), key, now)?;
        if let Some((group, _)) = opts.group {
            if stream.as_ref().and_then(|s| s.group(group)).is_none() {
                return Err(no_key_or_group(key, group, " in XREADGROUP with GROUP option"));
            }
        }
        ids.push(match *arg {
            b"$" if xreadgroup => return Err(DOLLAR_IN_GROUP),
            b"$" => stream.map_or(StreamId::MIN, |s| s.last_id()),
            b">" if !xreadgroup => return Err(GT_WITHOUT_GROUP),
            b">" => NEW_ENTRIES,
            _ => strict_id(arg)?,
        });
    }
    let mut body = Vec::new();
    let mut w = ReplyWriter::new(&mut body, ctx.out.version());
    let mut served = 0;
    let now = now_ms(ctx);
    for (key, &gt) in keys.iter().zip(&ids) {
        if let Some(stream) = lookup(guard.table(db, key), key, ctx.now_ms)? {
            let had_consumer = has_consumer(stream, &opts);
            served += usize::from(serve(&mut w, key, stream, gt, &opts, now));
            if had_consumer == Some(false) && has_consumer(stream, &opts) == Some(true) {
                ctx.notify(ev::STREAM, "xgroup-createconsumer", key);
            }
        }
    }
    if served > 0 {
        drop(guard);
        if ctx.out.is_resp3() {
            ctx.out.map(served);
        } else {
            ctx.out.array(served);
        }
        ctx.out.buffer().extend_from_slice(&body);
        return Ok(());
    }
    // Block while still holding the keys, so no XADD slips in between.
    let blocked = match opts.block {
        Some(timeout) => {
            let deadline_ms = if timeout == 0 { 0 } else { ctx.now_ms.saturating_add(timeout as u64) };
            let remembered = blocked_command(args, &opts, &ids);
            let remembered: Vec<&[u8]> = remembered.iter().map(Vec::as_slice).collect();
            server.blocking.block(ctx.client, &remembered, keys, deadline_ms)
        }
        None => false,
    };
    drop(guard);
    if !blocked {
        ctx.out.null_array();
    }
    Ok(())
}

/// The command a blocked client is registered with: IDs resolved (`$`), an
/// explicit COUNT, and no options it does not need.
fn blocked_command(args: &[&[u8]], opts: &ReadArgs<'_>, ids: &[StreamId]) -> Vec<Vec<u8>> {
    let count = if opts.count == 0 { BLOCKED_DEFAULT_COUNT } else { opts.count };
    let mut out: Vec<Vec<u8>> = vec![args[0].to_vec()];
    if let Some((group, consumer)) = opts.group {
        out.extend([b"GROUP".to_vec(), group.to_vec(), consumer.to_vec()]);
    }
    out.extend([b"COUNT".to_vec(), count.to_string().into_bytes()]);
    if opts.noack {
        out.push(b"NOACK".to_vec());
    }
    out.extend([b"BLOCK".to_vec(), b"0".to_vec(), b"STREAMS".to_vec()]);
    out.extend(args[opts.keys_at..opts.keys_at + opts.streams].iter().map(|k| k.to_vec()));
    for &id in ids {
        out.push(if id == NEW_ENTRIES && opts.group.is_some() { b">".to_vec() } else { id.to_string().into_bytes() });
    }
    out
}

/// Retry mode: serves a blocked client from the first stream that moved past
/// the ID it waits for, as a one-stream reply; otherwise it stays blocked.
fn serve_blocked(ctx: &mut Ctx<'_>, args: &[&[u8]], opts: &ReadArgs<'_>) -> CmdResult {
    let keys = &args[opts.keys_at..opts.keys_at + opts.streams];
    let id_args = &args[opts.keys_at + opts.streams..];
    let db = ctx.db();
    let now = now_ms(ctx);
    let server = ctx.server;
    let mut guard = server.keyspace.lock_keys(keys.iter().copied());
    for (key, arg) in keys.iter().zip(id_args) {
        let stream = match lookup(guard.table(db, key), key, ctx.now_ms) {
            Ok(Some(stream)) => stream,
            _ if opts.group.is_some() => {
                return Err(CmdError::Static("UNBLOCKED the stream key no longer exists"));
            }
            _ => continue,
        };
        let waited_for = match opts.group {
            Some((group, _)) => match stream.group(group) {
                Some(g) => g.last_id,
                None => {
                    return Err(CmdError::Static(
                        "NOGROUP the consumer group this client was blocked on no longer exists",
                    ))
                }
            },
            None => strict_id(arg)?,
        };
        if stream.last_id() <= waited_for {
            continue;
        }
        let mut body = Vec::new();
        let mut w = ReplyWriter::new(&mut body, ctx.out.version());
        write_stream(&mut w, key, stream, waited_for, false, opts, now);
        drop(guard);
        if ctx.out.is_resp3() {
            ctx.out.map(1);
        } else {
            ctx.out.array(1);
        }
        ctx.out.buffer().extend_from_slice(&body);
        return Ok(());
    }
    server.blocking.block(ctx.client, args, keys, 0);
    Ok(())
}

/// Whether XREADGROUP's consumer exists in its group (`None`: no group, or XREAD).
fn has_consumer(stream: &Stream, opts: &ReadArgs<'_>) -> Option<bool> {
    let (group, consumer) = opts.group?;
    stream.group(group).map(|g| g.consumer(consumer).is_some())
}

/// Answers for one stream if it has something to serve; returns whether it did.
fn serve(
    w: &mut ReplyWriter<'_>,
    key: &[u8],
    stream: &mut Stream,
    gt: StreamId,
    opts: &ReadArgs<'_>,
    now: i64,
) -> bool {
    match served_after(stream, gt, opts) {
        Some((after, history)) => {
            write_stream(w, key, stream, after, history, opts, now);
            true
        }
        None => false,
    }
}

/// Whether a stream can serve right away, and after which ID (and whether
/// from the consumer's history).
fn served_after(stream: &Stream, gt: StreamId, opts: &ReadArgs<'_>) -> Option<(StreamId, bool)> {
    match opts.group {
        Some(_) if gt != NEW_ENTRIES => Some((gt, true)),
        Some((group, _)) => {
            let last = stream.group(group)?.last_id;
            stream.last_valid_id().is_some_and(|top| top > last).then_some((last, false))
        }
        None => stream.last_valid_id().is_some_and(|top| top > gt).then_some((gt, false)),
    }
}

/// One stream's part of the reply: `[key, entries]` (RESP3: the map's pair).
fn write_stream(
    w: &mut ReplyWriter<'_>,
    key: &[u8],
    stream: &mut Stream,
    after: StreamId,
    history: bool,
    opts: &ReadArgs<'_>,
    now: i64,
) {
    let start = after.next().unwrap_or(StreamId::MIN);
    if !w.is_resp3() {
        w.array(2);
    }
    w.bulk(key);
    let Some((group, consumer)) = opts.group else {
        let limit = if opts.count == 0 { usize::MAX } else { opts.count };
        let entries: Vec<_> = stream.range(start, StreamId::MAX, false).take(limit).collect();
        w.array(entries.len());
        entries.iter().for_each(|e| write_entry(w, e));
        return;
    };
    if let Some(g) = stream.group_mut(group) {
        g.touch_or_create_consumer(consumer, now);
    }
    if history {
        let found = stream.read_group_history(group, consumer, start, opts.count, now);
        w.array(found.len());
        for (id, exists) in found {
            match stream.get(id).filter(|_| exists) {
                Some(entry) => write_entry(w, &entry),
                None => {
                    w.array(2);
                    write_id(w, id);
                    w.null_array();
                }
            }
        }
    } else {
        let delivered = stream.read_group_new(group, consumer, opts.count, opts.noack, now);
        write_entries_by_id(w, stream, &delivered);
    }
}
