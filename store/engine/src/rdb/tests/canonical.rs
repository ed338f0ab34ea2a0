//! A value's canonical readback, in the same text the fixture generator
//! derived from redis-server's replies (TYPE, OBJECT ENCODING, sorted
//! contents, `XINFO STREAM key FULL COUNT 0`), so a decoded value can be
//! compared with what Redis holds after RESTORE.

use crate::types::stream::StreamId;
use crate::types::stream::{Stream, ENTRIES_READ_INVALID};
use crate::value::Value;

/// Bytes with separators and non-printables escaped as `\xHH`.
pub fn esc(b: &[u8]) -> String {
    b.iter()
        .map(|&c| {
            if (0x21..=0x7e).contains(&c) && !b"\\,=;[]{}:|".contains(&c) {
                (c as char).to_string()
            } else {
                format!("\\x{c:02x}")
            }
        })
        .collect()
}

fn score(s: f64) -> String {
    let mut out = Vec::new();
    crate::number::format_f64_reply(s, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn id(id: StreamId) -> String {
    format!("{}-{}", id.ms, id.seq)
}

pub fn canonical(value: &Value) -> String {
    let head = format!("type={} enc={} ", value.type_name(), value.encoding());
    match value {
        Value::Str(s) => head + "value=" + &s.with_bytes(esc),
        Value::List(l) => head + "items=" + &l.iter().map(esc).collect::<Vec<_>>().join(","),
        Value::Set(s) => {
            let mut members: Vec<String> = s.iter().map(|m| m.with_bytes(esc)).collect();
            members.sort();
            head + "members=" + &members.join(",")
        }
        Value::Hash(h) => {
            let mut fields: Vec<String> = h.iter().map(|(f, v)| format!("{}={}", esc(f), esc(v))).collect();
            fields.sort();
            head + "fields=" + &fields.join(",")
        }
        Value::ZSet(z) => {
            let members: Vec<String> = z.iter().map(|(m, s)| format!("{}={}", esc(m), score(s))).collect();
            head + "members=" + &members.join(",")
        }
        Value::Stream(s) => head + &stream(s),
    }
}

fn stream(s: &Stream) -> String {
    let meta = s.meta();
    let mut parts = vec![
        format!("length={}", meta.length),
        format!("last={}", id(meta.last_id)),
        format!("maxdel={}", id(meta.max_deleted_entry_id)),
        format!("added={}", meta.entries_added),
        format!("first={}", id(meta.first_id)),
    ];
    let entries: Vec<String> = s
        .range(StreamId::MIN, StreamId::MAX, false)
        .map(|e| {
            let fields: Vec<String> = e.fields().map(|(f, v)| format!("{}={}", esc(f), esc(v))).collect();
            format!("{}{{{}}}", id(e.id), fields.join(";"))
        })
        .collect();
    parts.push(format!("entries={}", entries.join(",")));
    for (name, g) in s.groups() {
        let pel: Vec<String> = g
            .pel()
            .iter()
            .map(|(i, n)| format!("{}:{}:{}:{}", id(*i), esc(&n.consumer), n.delivery_time, n.delivery_count))
            .collect();
        let consumers: Vec<String> = g
            .consumers()
            .map(|(c, state)| {
                let ids: Vec<String> = state.pending().iter().map(|i| id(*i)).collect();
                format!("{}:{}:[{}]", esc(c), state.seen_time, ids.join(","))
            })
            .collect();
        let read = if g.entries_read == ENTRIES_READ_INVALID { "nil".to_string() } else { g.entries_read.to_string() };
        let lag = meta.group_lag(g).map_or("nil".to_string(), |l| l.to_string());
        parts.push(format!(
            "group={} last={} read={} lag={} pel=[{}] consumers=[{}]",
            esc(name),
            id(g.last_id),
            read,
            lag,
            pel.join(","),
            consumers.join(",")
        ));
    }
    parts.join(" | ")
}
