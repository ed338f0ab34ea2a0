//! The commands that rebuild a key: what a snapshot stores for each key
//! (as Redis's AOF rewrite does), so loading a snapshot runs the same code
//! as live traffic and every encoding is chosen as for fresh data.
//!
//! Collections are emitted in chunks of [`CHUNK`] elements; an expiry ends
//! with `PEXPIREAT`. Streams: entries with explicit IDs, `XSETID` with the
//! counters, groups with `XGROUP CREATE ... ENTRIESREAD`, then each consumer
//! with [`STREAM_CONSUMER`] (its seen time and its pending entries, also
//! those whose stream entry was deleted or trimmed, as Redis's RDB keeps
//! them). Snapshots written before that command existed restored pending
//! entries with `XCLAIM ... TIME RETRYCOUNT FORCE JUSTID` and idle consumers
//! with `XGROUP CREATECONSUMER`; they still load, as those commands remain.

use crate::entry::Entry;
use crate::types::stream::{Consumer, ConsumerGroup, Stream, StreamId};
use crate::value::{StrValue, Value};

/// Elements per command.
pub const CHUNK: usize = 128;

/// The rebuild-only command that restores one consumer of a stream group:
/// `CAIRN.XCONSUMER key group consumer seen-time [id delivery-time
/// delivery-count ...]` (times in Unix ms, at most [`CHUNK`] entries per
/// command, a consumer with more takes several). Only snapshot loading runs
/// it: it is not in the command table, so clients cannot call it.
pub const STREAM_CONSUMER: &[u8] = b"CAIRN.XCONSUMER";

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
        Value::Stream(stream) => stream_commands(key, stream, emit)?,
    }
    if let Some(at) = entry.expire_at() {
        let mut buf = itoa::Buffer::new();
        emit(&[b"PEXPIREAT", key, buf.format(at).as_bytes()])?;
    }
    Ok(())
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

/// Emits [`STREAM_CONSUMER`] for one consumer: once with no entries if it
/// has none pending, else once per [`CHUNK`] of its pending entries.
fn consumer_commands<E>(
    key: &[u8],
    group_name: &[u8],
    group: &ConsumerGroup,
    consumer: &[u8],
    state: &Consumer,
    emit: &mut impl FnMut(&[&[u8]]) -> Result<(), E>,
) -> Result<(), E> {
    let seen = state.seen_time.to_string().into_bytes();
    let head: [&[u8]; 5] = [STREAM_CONSUMER, key, group_name, consumer, &seen];
    let mut ids = state.pending().iter().peekable();
    if ids.peek().is_none() {
        return emit(&head);
    }
    let mut words: Vec<Vec<u8>> = Vec::with_capacity(CHUNK * 3);
    while ids.peek().is_some() {
        words.clear();
        for id in ids.by_ref().take(CHUNK) {
            if let Some(nack) = group.pel().get(id) {
                words.push(id_text(*id));
                words.push(nack.delivery_time.to_string().into_bytes());
                words.push(nack.delivery_count.to_string().into_bytes());
            }
        }
        let mut args: Vec<&[u8]> = Vec::with_capacity(head.len() + words.len());
        args.extend_from_slice(&head);
        args.extend(words.iter().map(Vec::as_slice));
        emit(&args)?;
    }
    Ok(())
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
        for (consumer, state) in group.consumers() {
            consumer_commands(key, name, group, consumer, state, emit)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::stream::NewId;

    fn id(ms: u64) -> StreamId {
        StreamId::new(ms, 0)
    }

    /// The commands that rebuild `stream`, as text.
    fn rebuild(stream: Stream) -> Vec<Vec<String>> {
        let entry = Entry::new(Value::Stream(Box::new(stream)), 0);
        let mut out = Vec::new();
        let mut emit = |args: &[&[u8]]| -> Result<(), ()> {
            out.push(args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect());
            Ok(())
        };
        commands_for(b"s", &entry, &mut emit).expect("emits");
        out
    }

    fn consumer_commands_of(commands: &[Vec<String>]) -> Vec<&Vec<String>> {
        commands.iter().filter(|c| c[0].as_bytes() == STREAM_CONSUMER).collect()
    }

    #[test]
    fn a_consumer_keeps_its_seen_time_and_pending_entries_of_deleted_entries() {
        let mut s = Stream::new();
        for ms in 1..=3 {
            s.append(NewId::Explicit(id(ms)), &[b"f", b"v"]).expect("append");
        }
        s.create_group(b"g", StreamId::MIN, 0);
        let g = s.group_mut(b"g").expect("group");
        g.create_consumer(b"alice", 1_000);
        g.create_consumer(b"idle", 2_000);
        s.read_group_new(b"g", b"alice", 2, false, 1_500);
        s.delete_entries(&[id(1)]);
        let commands = rebuild(s);
        assert!(commands.iter().all(|c| c[0] != "XCLAIM" && c[1] != "CREATECONSUMER"), "{commands:?}");
        let consumers = consumer_commands_of(&commands);
        assert_eq!(
            consumers,
            vec![
                &vec!["CAIRN.XCONSUMER", "s", "g", "alice", "1000", "1-0", "1500", "1", "2-0", "1500", "1"],
                &vec!["CAIRN.XCONSUMER", "s", "g", "idle", "2000"],
            ]
        );
        let group_at = commands.iter().position(|c| c[0] == "XGROUP").expect("group created");
        let first_consumer_at = commands.iter().position(|c| c[0] == "CAIRN.XCONSUMER").expect("consumer");
        assert!(group_at < first_consumer_at, "the group exists before its consumers");
    }

    #[test]
    fn a_big_pel_is_chunked_and_every_entry_is_emitted_once() {
        let mut s = Stream::new();
        let total = CHUNK as u64 * 2 + 5;
        for ms in 1..=total {
            s.append(NewId::Explicit(id(ms)), &[b"f", b"v"]).expect("append");
        }
        s.create_group(b"g", StreamId::MIN, 0);
        s.group_mut(b"g").expect("group").create_consumer(b"c", 7);
        s.read_group_new(b"g", b"c", 0, false, 9);
        let commands = rebuild(s);
        let consumers = consumer_commands_of(&commands);
        assert_eq!(consumers.len(), 3);
        assert!(consumers.iter().all(|c| c[4] == "7" && (c.len() - 5) % 3 == 0 && (c.len() - 5) / 3 <= CHUNK));
        let ids: Vec<&String> = consumers.iter().flat_map(|c| c[5..].iter().step_by(3)).collect();
        let expected: Vec<String> = (1..=total).map(|ms| format!("{ms}-0")).collect();
        assert_eq!(ids, expected.iter().collect::<Vec<_>>());
    }

    #[test]
    fn an_empty_stream_with_a_group_and_consumers_keeps_them() {
        let mut s = Stream::new();
        s.append(NewId::Explicit(id(5)), &[b"f", b"v"]).expect("append");
        s.create_group(b"g", StreamId::MIN, 0);
        s.group_mut(b"g").expect("group").create_consumer(b"c", 3);
        s.read_group_new(b"g", b"c", 0, false, 4);
        s.delete_entries(&[id(5)]);
        let commands = rebuild(s);
        assert_eq!(commands[0], vec!["XADD", "s", "MAXLEN", "0", "0-1", "x", "y"]);
        assert_eq!(
            consumer_commands_of(&commands),
            vec![&vec!["CAIRN.XCONSUMER", "s", "g", "c", "3", "5-0", "4", "1"]]
        );
    }
}
