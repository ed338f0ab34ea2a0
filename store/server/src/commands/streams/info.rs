//! XINFO: STREAM [FULL [COUNT n]], GROUPS, CONSUMERS, HELP — with Redis 7.0's
//! fields (entries-added, max-deleted-entry-id, recorded-first-entry-id,
//! entries-read, lag).

use cairn_engine::types::stream::{ConsumerGroup, StreamId, ENTRIES_READ_INVALID};
use cairn_engine::types::Stream;
use cairn_protocol::ReplyWriter;

use super::super::{int_arg, is, text, CmdError, CmdResult, Ctx};
use super::{check_subcommand_arity, lookup, now_ms, subcommand_syntax_error, write_entry, write_help, write_id};

const SUBCOMMANDS: &[(&str, i32)] = &[("consumers", 4), ("groups", 3), ("stream", -3), ("help", 2)];

const HELP: &[&str] = &[
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
];

/// Entries and pending entries XINFO STREAM FULL shows without COUNT.
const FULL_DEFAULT_COUNT: usize = 10;

pub fn xinfo(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let Some(&(name, arity)) = SUBCOMMANDS.iter().find(|(n, _)| is(sub, n)) else {
        return Err(CmdError::unknown_subcommand("xinfo", sub));
    };
    check_subcommand_arity("xinfo", sub, args.len(), arity)?;
    if name == "help" {
        write_help(ctx, "xinfo", HELP);
        return Ok(());
    }
    let db = ctx.db();
    let now = now_ms(ctx);
    let mut shard = ctx.server.keyspace.lock_key(args[2]);
    let stream = lookup(shard.db(db), args[2], ctx.now_ms)?.ok_or(CmdError::NoSuchKey)?;
    match name {
        "consumers" => {
            let group = stream.group(args[3]).ok_or_else(|| {
                CmdError::Message(format!(
                    "NOGROUP No such consumer group '{}' for key name '{}'",
                    text(args[3]),
                    text(args[2])
                ))
            })?;
            write_consumers(&mut ctx.out, group, now);
        }
        "groups" => write_groups(&mut ctx.out, stream),
        _ => match parse_full(args)? {
            None => write_stream(&mut ctx.out, stream),
            Some(count) => write_stream_full(&mut ctx.out, stream, count),
        },
    }
    Ok(())
}

/// `FULL [COUNT n]`: `None` without FULL, else the count (0: everything).
fn parse_full(args: &[&[u8]]) -> Result<Option<usize>, CmdError> {
    let opts = &args[3..];
    if opts.is_empty() {
        return Ok(None);
    }
    let bad = || subcommand_syntax_error("xinfo", args[1]);
    if (opts.len() != 1 && opts.len() != 3) || !is(opts[0], "full") {
        return Err(bad());
    }
    if opts.len() == 1 {
        return Ok(Some(FULL_DEFAULT_COUNT));
    }
    if !is(opts[1], "count") {
        return Err(bad());
    }
    let count = int_arg(opts[2])?;
    Ok(Some(if count < 0 { FULL_DEFAULT_COUNT } else { count as usize }))
}

/// The fields both forms of XINFO STREAM start with.
fn write_stream_header(out: &mut ReplyWriter<'_>, stream: &Stream) {
    let meta = stream.meta();
    out.bulk(b"length");
    out.int(meta.length as i64);
    out.bulk(b"radix-tree-keys");
    out.int(stream.radix_tree_keys() as i64);
    out.bulk(b"radix-tree-nodes");
    out.int(stream.radix_tree_nodes() as i64);
    out.bulk(b"last-generated-id");
    write_id(out, meta.last_id);
    out.bulk(b"max-deleted-entry-id");
    write_id(out, meta.max_deleted_entry_id);
    out.bulk(b"entries-added");
    out.int(meta.entries_added as i64);
    out.bulk(b"recorded-first-entry-id");
    write_id(out, meta.first_id);
}

fn write_stream(out: &mut ReplyWriter<'_>, stream: &Stream) {
    out.map(10);
    write_stream_header(out, stream);
    out.bulk(b"groups");
    out.int(stream.groups().len() as i64);
    for (label, rev) in [(&b"first-entry"[..], false), (&b"last-entry"[..], true)] {
        out.bulk(label);
        match stream.range(StreamId::MIN, StreamId::MAX, rev).next() {
            Some(entry) => write_entry(out, &entry),
            None => out.null_bulk(),
        }
    }
}

fn write_stream_full(out: &mut ReplyWriter<'_>, stream: &Stream, count: usize) {
    let limit = if count == 0 { usize::MAX } else { count };
    out.map(9);
    write_stream_header(out, stream);
    out.bulk(b"entries");
    let entries: Vec<_> = stream.range(StreamId::MIN, StreamId::MAX, false).take(limit).collect();
    out.array(entries.len());
    entries.iter().for_each(|e| write_entry(out, e));
    out.bulk(b"groups");
    out.array(stream.groups().len());
    for (name, group) in stream.groups() {
        out.map(7);
        out.bulk(b"name");
        out.bulk(name);
        out.bulk(b"last-delivered-id");
        write_id(out, group.last_id);
        write_read_counters(out, stream, group);
        out.bulk(b"pel-count");
        out.int(group.pel().len() as i64);
        out.bulk(b"pending");
        let pel: Vec<_> = group.pel().iter().take(limit).collect();
        out.array(pel.len());
        for (&id, nack) in pel {
            out.array(4);
            write_id(out, id);
            out.bulk(&nack.consumer);
            out.int(nack.delivery_time);
            out.int(nack.delivery_count as i64);
        }
        out.bulk(b"consumers");
        out.array(group.consumer_count());
        for (name, consumer) in group.consumers() {
            out.map(4);
            out.bulk(b"name");
            out.bulk(name);
            out.bulk(b"seen-time");
            out.int(consumer.seen_time);
            out.bulk(b"pel-count");
            out.int(consumer.pending().len() as i64);
            out.bulk(b"pending");
            let ids: Vec<StreamId> = consumer.pending().iter().take(limit).copied().collect();
            out.array(ids.len());
            for id in ids {
                let nack = group.pel().get(&id);
                out.array(3);
                write_id(out, id);
                out.int(nack.map_or(0, |n| n.delivery_time));
                out.int(nack.map_or(0, |n| n.delivery_count as i64));
            }
        }
    }
}

/// `entries-read` and `lag`, each null when unknown.
fn write_read_counters(out: &mut ReplyWriter<'_>, stream: &Stream, group: &ConsumerGroup) {
    out.bulk(b"entries-read");
    match group.entries_read {
        ENTRIES_READ_INVALID => out.null_bulk(),
        n => out.int(n),
    }
    out.bulk(b"lag");
    match stream.meta().group_lag(group) {
        Some(lag) => out.int(lag),
        None => out.null_bulk(),
    }
}

fn write_groups(out: &mut ReplyWriter<'_>, stream: &Stream) {
    out.array(stream.groups().len());
    for (name, group) in stream.groups() {
        out.map(6);
        out.bulk(b"name");
        out.bulk(name);
        out.bulk(b"consumers");
        out.int(group.consumer_count() as i64);
        out.bulk(b"pending");
        out.int(group.pel().len() as i64);
        out.bulk(b"last-delivered-id");
        write_id(out, group.last_id);
        write_read_counters(out, stream, group);
    }
}

fn write_consumers(out: &mut ReplyWriter<'_>, group: &ConsumerGroup, now: i64) {
    out.array(group.consumer_count());
    for (name, consumer) in group.consumers() {
        out.map(3);
        out.bulk(b"name");
        out.bulk(name);
        out.bulk(b"pending");
        out.int(consumer.pending().len() as i64);
        out.bulk(b"idle");
        out.int((now - consumer.seen_time).max(0));
    }
}
