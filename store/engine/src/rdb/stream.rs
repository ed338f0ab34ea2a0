//! Streams in RDB (`RDB_TYPE_STREAM_LISTPACKS`, `_2`, `_3`): the nodes as
//! listpacks keyed by their master ID, the counters, then each consumer
//! group with its pending entries (PEL) and consumers.
//!
//! Decoding validates each node as `streamValidateListpackIntegrity` does
//! (master entry, per-entry flags, IDs, field counts and `lp-count`), and
//! also what Cairn's stream relies on: IDs strictly ascending across nodes,
//! the last ID at or above every entry, the length equal to the live
//! entries, every pending entry owned by exactly one consumer. Deleted
//! entries stay as tombstones, as in Redis.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::element::Element;
use super::error::{bad, RdbError};
use super::listpack;
use super::reader::Reader;
use super::types as t;
use super::writer::Writer;
use crate::types::stream::{CountUpdate, Meta, Stream, StreamId, StreamNode};

/// Entry flags inside a node's listpack.
const FLAG_DELETED: i64 = 1;
const FLAG_SAMEFIELDS: i64 = 2;
/// Bytes of a raw stream ID (two big-endian u64).
const RAW_ID_LEN: usize = 16;

/// One entry of a node, as the payload holds it.
struct NodeEntry<'a> {
    id: StreamId,
    deleted: bool,
    pairs: Vec<Cow<'a, [u8]>>,
}

/// Reads a stream (the type byte already read).
pub fn decode(r: &mut Reader<'_>, rdb_type: u8) -> Result<Stream, RdbError> {
    let mut stream = Stream::new();
    let (live, last_entry) = decode_nodes(r, &mut stream)?;
    let meta = decode_meta(r, rdb_type, &stream)?;
    if meta.length != live {
        return bad("stream length does not match its entries");
    }
    if last_entry.is_some_and(|id| id > meta.last_id) {
        return bad("stream last ID below an entry");
    }
    if meta.entries_added < meta.length {
        return bad("stream entries-added below its length");
    }
    stream.set_meta(meta);
    decode_groups(r, rdb_type, &mut stream)?;
    Ok(stream)
}

/// Reads the nodes into `stream`; returns the live entries and the largest
/// ID (live or deleted).
fn decode_nodes(r: &mut Reader<'_>, stream: &mut Stream) -> Result<(u64, Option<StreamId>), RdbError> {
    let count = r.count(2)?;
    let mut live = 0;
    let mut last: Option<StreamId> = None;
    for _ in 0..count {
        let key = r.string()?;
        let master = raw_id(&key).ok_or(RdbError::BadData("stream node key is not a stream ID"))?;
        let lp = r.string()?;
        let elements = listpack::parse(&lp)?;
        if elements.is_empty() {
            return bad("empty listpack inside stream");
        }
        let entries = node_entries(&elements, master)?;
        let mut node: Option<StreamNode> = None;
        for (slot, entry) in entries.iter().enumerate() {
            if last.is_some_and(|prev| entry.id <= prev) {
                return bad("stream IDs out of order");
            }
            last = Some(entry.id);
            let pairs: Vec<&[u8]> = entry.pairs.iter().map(|p| &**p).collect();
            match node.as_mut() {
                None => node = Some(StreamNode::new(entry.id, &pairs)),
                Some(n) => n.append(entry.id, &pairs),
            }
            if entry.deleted {
                if let Some(n) = node.as_mut() {
                    n.mark_deleted(slot);
                }
            }
        }
        // A node of tombstones only holds nothing a reader can see; Cairn
        // never keeps one (Redis frees it when its last entry is deleted).
        if let Some(n) = node.filter(|n| n.live() > 0) {
            live += n.live();
            stream.push_node(n);
        }
    }
    Ok((live, last))
}

fn raw_id(bytes: &[u8]) -> Option<StreamId> {
    if bytes.len() != RAW_ID_LEN {
        return None;
    }
    let mut ms = [0u8; 8];
    let mut seq = [0u8; 8];
    ms.copy_from_slice(&bytes[..8]);
    seq.copy_from_slice(&bytes[8..]);
    Some(StreamId { ms: u64::from_be_bytes(ms), seq: u64::from_be_bytes(seq) })
}

/// Walks a node's listpack elements.
struct Elements<'e, 'a> {
    items: &'e [Element<'a>],
    pos: usize,
}

impl<'e, 'a> Elements<'e, 'a> {
    fn next(&mut self) -> Result<Element<'a>, RdbError> {
        let e = *self.items.get(self.pos).ok_or(RdbError::BadData("stream listpack ends early"))?;
        self.pos += 1;
        Ok(e)
    }

    fn int(&mut self) -> Result<i64, RdbError> {
        self.next()?.int().ok_or(RdbError::BadData("stream listpack integer expected"))
    }

    /// A non-negative count of elements that must still follow.
    fn count(&mut self) -> Result<usize, RdbError> {
        let n = self.int()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.items.len() - self.pos)
            .ok_or(RdbError::BadData("stream listpack count is wrong"))
    }
}

/// The entries of one node (`streamValidateListpackIntegrity`, deep).
fn node_entries<'a>(items: &[Element<'a>], master: StreamId) -> Result<Vec<NodeEntry<'a>>, RdbError> {
    let mut it = Elements { items, pos: 0 };
    let live = it.int()?;
    let deleted = it.int()?;
    let master_count = it.count()?;
    let master_fields: Vec<Element<'a>> = (0..master_count).map(|_| it.next()).collect::<Result<_, _>>()?;
    if it.int()? != 0 {
        return bad("stream master entry terminator is not zero");
    }
    let total = live.checked_add(deleted).filter(|&n| n >= 0).ok_or(RdbError::BadData("stream node counts"))?;
    let mut entries = Vec::new();
    for _ in 0..total {
        let flags = it.int()?;
        let ms = master.ms.wrapping_add(it.int()? as u64);
        let seq = master.seq.wrapping_add(it.int()? as u64);
        let mut pairs = Vec::new();
        let expected_lp_count = if flags & FLAG_SAMEFIELDS != 0 {
            for field in &master_fields {
                pairs.push(field.bytes());
                pairs.push(it.next()?.bytes());
            }
            master_count + 3
        } else {
            let fields = it.count()?;
            for _ in 0..fields * 2 {
                pairs.push(it.next()?.bytes());
            }
            2 * fields + 4
        };
        if it.int()? != expected_lp_count as i64 {
            return bad("stream entry lp-count is wrong");
        }
        entries.push(NodeEntry { id: StreamId { ms, seq }, deleted: flags & FLAG_DELETED != 0, pairs });
    }
    if it.pos != items.len() {
        return bad("stream listpack has trailing elements");
    }
    Ok(entries)
}

fn read_id(r: &mut Reader<'_>) -> Result<StreamId, RdbError> {
    Ok(StreamId { ms: r.len()?, seq: r.len()? })
}

/// The counters; types before `_2` carry only length and last ID, the rest
/// derived as Redis does on load.
fn decode_meta(r: &mut Reader<'_>, rdb_type: u8, stream: &Stream) -> Result<Meta, RdbError> {
    let length = r.len()?;
    let last_id = read_id(r)?;
    if rdb_type >= t::STREAM_LISTPACKS_2 {
        let first_id = read_id(r)?;
        let max_deleted_entry_id = read_id(r)?;
        let entries_added = r.len()?;
        return Ok(Meta { length, last_id, first_id, max_deleted_entry_id, entries_added });
    }
    // `streamGetEdgeID`: the first live entry, or the largest ID if none.
    let first_id = stream.range(StreamId::MIN, StreamId::MAX, false).next().map_or(StreamId::MAX, |e| e.id);
    Ok(Meta { length, last_id, first_id, max_deleted_entry_id: StreamId::MIN, entries_added: length })
}

/// A group's pending entry before its consumer is known.
struct Pending {
    delivery_time: i64,
    delivery_count: u64,
    owned: bool,
}

fn decode_groups(r: &mut Reader<'_>, rdb_type: u8, stream: &mut Stream) -> Result<(), RdbError> {
    let groups = r.count(3)?;
    for _ in 0..groups {
        let name = r.string()?;
        let last_id = read_id(r)?;
        let entries_read = if rdb_type >= t::STREAM_LISTPACKS_2 {
            r.len()? as i64
        } else {
            stream.meta().estimate_distance_from_first_ever_entry(last_id)
        };
        if !stream.create_group(&name, last_id, entries_read) {
            return bad("duplicated consumer group name");
        }
        let mut pel = decode_group_pel(r)?;
        decode_consumers(r, rdb_type, stream, &name, &mut pel)?;
        if pel.values().any(|p| !p.owned) {
            return bad("stream group PEL entry without consumer");
        }
    }
    Ok(())
}

fn decode_group_pel(r: &mut Reader<'_>) -> Result<BTreeMap<StreamId, Pending>, RdbError> {
    let count = r.count(RAW_ID_LEN + 9)?;
    let mut pel = BTreeMap::new();
    for _ in 0..count {
        let id = raw_id(r.bytes(RAW_ID_LEN)?).ok_or(RdbError::BadData("stream PEL ID"))?;
        let delivery_time = r.millis()?;
        let delivery_count = r.len()?;
        if pel.insert(id, Pending { delivery_time, delivery_count, owned: false }).is_some() {
            return bad("duplicated global PEL entry");
        }
    }
    Ok(pel)
}

fn decode_consumers(
    r: &mut Reader<'_>,
    rdb_type: u8,
    stream: &mut Stream,
    group: &[u8],
    pel: &mut BTreeMap<StreamId, Pending>,
) -> Result<(), RdbError> {
    let count = r.count(10)?;
    let g = stream.group_mut(group).ok_or(RdbError::BadData("group vanished"))?;
    for _ in 0..count {
        let name = r.string()?;
        let seen_time = r.millis()?;
        if rdb_type >= t::STREAM_LISTPACKS_3 {
            r.millis()?; // active time (Redis 7.2): Cairn keeps the seen time only
        }
        if !g.create_consumer(&name, seen_time) {
            return bad("duplicate stream consumer");
        }
        let owned = r.count(RAW_ID_LEN)?;
        for _ in 0..owned {
            let id = raw_id(r.bytes(RAW_ID_LEN)?).ok_or(RdbError::BadData("stream PEL ID"))?;
            let pending = pel.get_mut(&id).ok_or(RdbError::BadData("consumer entry not in the group PEL"))?;
            if pending.owned {
                return bad("duplicated consumer PEL entry");
            }
            pending.owned = true;
            g.insert_unowned(id, &name, pending.delivery_time);
            g.transfer(id, &name, pending.delivery_time, CountUpdate::Set(pending.delivery_count));
        }
    }
    Ok(())
}

/// Writes a stream as Redis 7.0 does (`RDB_TYPE_STREAM_LISTPACKS_2`).
pub fn encode(w: &mut Writer, stream: &Stream) {
    w.u8(t::STREAM_LISTPACKS_2);
    let nodes: Vec<&StreamNode> = stream.nodes().collect();
    w.len(nodes.len() as u64);
    for node in nodes {
        w.string(&raw_id_bytes(node.master_id()));
        w.string(&node_listpack(node));
    }
    let meta = stream.meta();
    w.len(meta.length);
    write_id(w, meta.last_id);
    write_id(w, meta.first_id);
    write_id(w, meta.max_deleted_entry_id);
    w.len(meta.entries_added);
    w.len(stream.groups().len() as u64);
    for (name, group) in stream.groups() {
        w.string(name);
        write_id(w, group.last_id);
        w.len(group.entries_read as u64);
        w.len(group.pel().len() as u64);
        for (id, nack) in group.pel() {
            w.raw(&raw_id_bytes(*id));
            w.millis(nack.delivery_time);
            w.len(nack.delivery_count);
        }
        w.len(group.consumer_count() as u64);
        for (consumer_name, consumer) in group.consumers() {
            w.string(consumer_name);
            w.millis(consumer.seen_time);
            w.len(consumer.pending().len() as u64);
            consumer.pending().iter().for_each(|id| w.raw(&raw_id_bytes(*id)));
        }
    }
}

fn write_id(w: &mut Writer, id: StreamId) {
    w.len(id.ms);
    w.len(id.seq);
}

fn raw_id_bytes(id: StreamId) -> [u8; RAW_ID_LEN] {
    let mut out = [0u8; RAW_ID_LEN];
    out[..8].copy_from_slice(&id.ms.to_be_bytes());
    out[8..].copy_from_slice(&id.seq.to_be_bytes());
    out
}

/// The listpack Redis holds for a node: the master entry (live count,
/// deleted count, master field names, 0), then each entry's flags, ID
/// deltas, fields (or only values, with SAMEFIELDS) and `lp-count`.
fn node_listpack(node: &StreamNode) -> Vec<u8> {
    let mut lp = listpack::Writer::new();
    let master = node.master_id();
    lp.push_int(node.live() as i64);
    lp.push_int((node.total() - node.live()) as i64);
    lp.push_int(node.master_fields().len() as i64);
    node.master_fields().iter().for_each(|f| lp.push_str(f));
    lp.push_int(0);
    for slot in 0..node.slot_count() {
        let id = node.id_at(slot);
        let same = node.has_master_fields(slot);
        let mut flags = if same { FLAG_SAMEFIELDS } else { 0 };
        if node.is_deleted(slot) {
            flags |= FLAG_DELETED;
        }
        lp.push_int(flags);
        lp.push_int(id.ms.wrapping_sub(master.ms) as i64);
        lp.push_int(id.seq.wrapping_sub(master.seq) as i64);
        let fields = node.num_fields(slot);
        if same {
            node.fields(slot).for_each(|(_, value)| lp.push_str(value));
            lp.push_int(fields as i64 + 3);
        } else {
            lp.push_int(fields as i64);
            node.fields(slot).for_each(|(field, value)| {
                lp.push_str(field);
                lp.push_str(value);
            });
            lp.push_int(2 * fields as i64 + 4);
        }
    }
    lp.finish()
}
