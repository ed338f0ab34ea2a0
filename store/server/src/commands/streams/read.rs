//! XREAD and XREADGROUP (Redis's `xreadCommand`).
//!
//! Every stream that can serve something right away is answered: XREAD with
//! the entries after the given ID, XREADGROUP `>` with entries never
//! delivered to the group, XREADGROUP with an ID with the consumer's own
//! pending entries (its history). When nothing can be served the reply is a
//! null array; with BLOCK the client would have to wait, which this server
//! does not support yet, and it says so rather than pretending to time out.

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

fn parse<'a>(args: &[&'a [u8]], xreadgroup: bool) -> Result<ReadArgs<'a>, CmdError> {
    let mut parsed = ReadArgs { block: None, count: 0, keys_at: 0, streams: 0, group: None, noack: false };
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = args[i];
        if is(opt, "block") && more > 0 {
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

fn read(ctx: &mut Ctx<'_>, args: &[&[u8]], xreadgroup: bool) -> CmdResult {
    let opts = parse(args, xreadgroup)?;
    let keys = &args[opts.keys_at..opts.keys_at + opts.streams];
    let id_args = &args[opts.keys_at + opts.streams..];
    let db = ctx.db();
    let now = ctx.now_ms;
    let mut guard = ctx.server.keyspace.lock_keys(keys.iter().copied());
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
            served += usize::from(serve(&mut w, key, stream, gt, &opts, now));
        }
    }
    drop(guard);
    if served > 0 {
        if ctx.out.is_resp3() {
            ctx.out.map(served);
        } else {
            ctx.out.array(served);
        }
        ctx.out.buffer().extend_from_slice(&body);
        return Ok(());
    }
    if opts.block.is_some() {
        return Err(CmdError::Message(format!(
            "ERR {} with BLOCK is not supported yet when no data is available",
            if xreadgroup { "XREADGROUP" } else { "XREAD" }
        )));
    }
    ctx.out.null_array();
    Ok(())
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
    let mut after = gt;
    let history = opts.group.is_some() && gt != NEW_ENTRIES;
    let serve = match opts.group {
        Some(_) if history => true,
        Some((group, _)) => {
            let last = stream.group(group).map_or(StreamId::MAX, |g| g.last_id);
            after = last;
            stream.last_valid_id().is_some_and(|top| top > last)
        }
        None => stream.last_valid_id().is_some_and(|top| top > gt),
    };
    if !serve {
        return false;
    }
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
        return true;
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
    true
}
