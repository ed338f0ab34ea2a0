//! The commands that rebuild a key: what a snapshot stores for each key
//! (as Redis's AOF rewrite does), so loading a snapshot runs the same code
//! as live traffic and every encoding is chosen as for fresh data.
//!
//! Collections are emitted in chunks of [`CHUNK`] elements; an expiry ends
//! with `PEXPIREAT`. Streams: entries with explicit IDs, `XSETID` with the
//! counters, groups with `XGROUP CREATE ... ENTRIESREAD`, pending entries
//! with `XCLAIM ... TIME RETRYCOUNT FORCE JUSTID`, idle consumers with
//! `XGROUP CREATECONSUMER`; a stream whose groups hold pending entries of
//! deleted entries (which no command recreates) as `RESTORE` of its DUMP
//! payload.

use crate::entry::Entry;
use crate::types::stream::{Stream, StreamId};
use crate::value::{StrValue, Value};

/// Elements per command.
pub const CHUNK: usize = 128;

/// Calls `emit` with each command that rebuilds `key`.
pub fn commands_for<E>(key: &[u8], entry: &Entry, emit: &mut impl FnMut(&[&[u8]]) -> Result<(), E>) -> Result<(), E> {
    match &entry.value {
        Value::Str(StrValue::Int(i)) => {
            let mut buf = itoa::Buffer::new();
            emit(&[b"SET", key, buf.format(*i).as_bytes()])?;
        }
        Value::Str(s) => s.with_bytes(|b| emit(&[b"SET", key, b]))?,
        Value::List(list) => chunked(b"RPUSH", key, 1, list.iter().map(|e| e.to_vec()), emit)?,
        Value::Hash(hash) => {
            let pairs = hash.iter().flat_map(|(f, v)| [f.to_vec(), v.to_vec()]);
            chunked(b"HSET", key, 2, pairs, emit)?
        }
        Value::Set(set) => chunked(b"SADD", key, 1, set.iter().map(|m| m.with_bytes(|b| b.to_vec())), emit)?,
        Value::ZSet(zset) => {
            let pairs = zset.iter().flat_map(|(m, score)| [format_score(score), m.to_vec()]);
            chunked(b"ZADD", key, 2, pairs, emit)?
        }
        Value::Stream(stream) if has_pending_of_deleted(stream) => {
            // No command recreates a pending entry whose stream entry was
            // deleted (XCLAIM drops it), so such a stream is stored whole,
            // as the DUMP payload RESTORE reads back.
            emit(&[b"RESTORE", key, b"0", &crate::rdb::dump_payload(&entry.value)])?
        }
        Value::Stream(stream) => stream_commands(key, stream, emit)?,
    }
    if let Some(at) = entry.expire_at() {
        let mut buf = itoa::Buffer::new();
        emit(&[b"PEXPIREAT", key, buf.format(at).as_bytes()])?;
    }
    Ok(())
}

/// Whether a group of `stream` has a pending entry whose stream entry is gone.
fn has_pending_of_deleted(stream: &Stream) -> bool {
    stream.groups().any(|(_, group)| group.pel().keys().any(|id| stream.range(*id, *id, false).next().is_none()))
}

/// A score as text that parses back to the same double.
fn format_score(score: f64) -> Vec<u8> {
    let mut out = Vec::new();
    crate::number::format_f64_reply(score, &mut out);
    out
}

/// Emits `command key items...` with at most `CHUNK` elements (of `per`
/// items each: 1 for members, 2 for field/value or score/member pairs) per
/// command.
fn chunked<E>(
    command: &[u8],
    key: &[u8],
    per: usize,
    items: impl Iterator<Item = Vec<u8>>,
    emit: &mut impl FnMut(&[&[u8]]) -> Result<(), E>,
) -> Result<(), E> {
    let mut batch: Vec<Vec<u8>> = Vec::with_capacity(CHUNK * per);
    for item in items {
        batch.push(item);
        if batch.len() == CHUNK * per {
            emit_batch(command, key, &batch, emit)?;
            batch.clear();
        }
    }
    if !batch.is_empty() {
        emit_batch(command, key, &batch, emit)?;
    }
    Ok(())
}

fn emit_batch<E>(
    command: &[u8],
    key: &[u8],
    batch: &[Vec<u8>],
    emit: &mut impl FnMut(&[&[u8]]) -> Result<(), E>,
) -> Result<(), E> {
    let mut args: Vec<&[u8]> = Vec::with_capacity(batch.len() + 2);
    args.push(command);
    args.push(key);
    args.extend(batch.iter().map(Vec::as_slice));
    emit(&args)
}

fn id_text(id: StreamId) -> Vec<u8> {
    format!("{}-{}", id.ms, id.seq).into_bytes()
}

fn stream_commands<E>(key: &[u8], stream: &Stream, emit: &mut impl FnMut(&[&[u8]]) -> Result<(), E>) -> Result<(), E> {
    let meta = *stream.meta();
    let mut entries =
        stream.range(StreamId { ms: 0, seq: 0 }, StreamId { ms: u64::MAX, seq: u64::MAX }, false).peekable();
    if entries.peek().is_none() {
        // An empty stream: create it with a throwaway entry trimmed at once
        // (ID 0-1, the smallest XADD accepts); XSETID below restores the
        // real last ID and counters.
        emit(&[b"XADD", key, b"MAXLEN", b"0", b"0-1", b"x", b"y"])?;
    }
    for entry in entries {
        let id = id_text(entry.id);
        let mut args: Vec<&[u8]> = vec![b"XADD", key, &id];
        for (field, value) in entry.fields() {
            args.push(field);
            args.push(value);
        }
        emit(&args)?;
    }
    let last = id_text(meta.last_id);
    let added = meta.entries_added.to_string().into_bytes();
    let max_deleted = id_text(meta.max_deleted_entry_id);
    emit(&[b"XSETID", key, &last, b"ENTRIESADDED", &added, b"MAXDELETEDID", &max_deleted])?;
    for (name, group) in stream.groups() {
        let group_last = id_text(group.last_id);
        let read = group.entries_read.to_string().into_bytes();
        emit(&[b"XGROUP", b"CREATE", key, name, &group_last, b"ENTRIESREAD", &read])?;
        for (id, nack) in group.pel() {
            let id = id_text(*id);
            let time = nack.delivery_time.to_string().into_bytes();
            let count = nack.delivery_count.to_string().into_bytes();
            emit(&[
                b"XCLAIM",
                key,
                name,
                &nack.consumer,
                b"0",
                &id,
                b"TIME",
                &time,
                b"RETRYCOUNT",
                &count,
                b"FORCE",
                b"JUSTID",
            ])?;
        }
        for (consumer, state) in group.consumers() {
            if state.pending().is_empty() {
                emit(&[b"XGROUP", b"CREATECONSUMER", key, name, consumer])?;
            }
        }
    }
    Ok(())
}
