//! The durability audit (`cairn-bench verify`): every write in an ack log must still be on the
//! server (typically after a crash and restart). A key may be *newer* than its last
//! acknowledged write (a write in flight at the crash may have landed), never older.

use serde::Serialize;

use crate::ack_log::AckLogContents;
use crate::keys::{parse_value, Family, KeyNamer};
use crate::resp::{short, Reply};
use crate::target::{Connection, Target, TargetError};

/// Keys read per round trip.
const BATCH: usize = 256;
/// Examples kept for the report.
const EXAMPLES: usize = 10;

/// What the audit found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AuditReport {
    pub target: String,
    pub key_prefix: String,
    pub acknowledged_writes: u64,
    pub keys_checked: u64,
    /// Acknowledged writes the server no longer shows.
    pub lost_writes: u64,
    pub keys_with_lost_writes: u64,
    /// Keys holding something this run never wrote (garbled, wrong type, foreign value).
    pub changed_keys: u64,
    pub examples: Vec<String>,
    pub ok: bool,
}

/// What the server holds for one key, as a version comparable with the acked ones.
enum Found {
    Version(u64),
    Changed(String),
}

/// Checks every key of `log` against `target`.
pub async fn audit<T: Target>(target: &T, log: &AckLogContents) -> Result<AuditReport, TargetError> {
    let namer = KeyNamer { prefix: log.prefix.clone(), value_size: log.value_size };
    let mut keys: Vec<_> = log.keys.iter().collect();
    keys.sort_by_key(|(key, _)| **key);
    let mut report = AuditReport {
        target: target.describe(),
        key_prefix: log.prefix.clone(),
        acknowledged_writes: log.acks,
        ..AuditReport::default()
    };
    let mut conn = target.connect().await?;
    let (mut key, mut field, mut value) = (Vec::new(), Vec::new(), Vec::new());
    for chunk in keys.chunks(BATCH) {
        for ((family, c, k), _) in chunk {
            namer.key(&mut key, *family, *c, *k);
            match family {
                Family::Strings | Family::Counters => conn.queue(&[b"GET", &key]),
                Family::Lists => conn.queue(&[b"LLEN", &key]),
                Family::Hashes => {
                    KeyNamer::field(&mut field, *k);
                    conn.queue(&[b"HGET", &key, &field]);
                }
            }
        }
        conn.flush().await?;
        for ((family, c, k), versions) in chunk {
            let reply = conn.read_reply().await?;
            namer.key(&mut key, *family, *c, *k);
            let found = interpret(&namer, &mut value, *family, *c, *k, &reply);
            report.keys_checked += 1;
            record(&mut report, &String::from_utf8_lossy(&key), versions, found);
        }
    }
    report.ok = report.lost_writes == 0 && report.changed_keys == 0;
    Ok(report)
}

fn interpret(namer: &KeyNamer, scratch: &mut Vec<u8>, family: Family, conn: u32, k: u64, reply: &Reply) -> Found {
    match (family, reply) {
        (Family::Lists, Reply::Integer(n)) => Found::Version(u64::try_from(*n).unwrap_or(0)),
        (Family::Counters, Reply::Bulk(Some(text))) => {
            match std::str::from_utf8(text).ok().and_then(|t| t.parse::<u64>().ok()) {
                Some(n) => Found::Version(n),
                None => Found::Changed(format!("not a counter: {:?}", short(text))),
            }
        }
        (Family::Strings | Family::Hashes | Family::Counters, Reply::Bulk(None)) => Found::Version(0),
        (Family::Strings | Family::Hashes, Reply::Bulk(Some(got))) => match parse_value(got) {
            Some((version, c, key)) if c == conn && key == k => {
                namer.value(scratch, conn, k, version);
                if scratch == got {
                    Found::Version(version)
                } else {
                    Found::Changed(format!("garbled value {:?}", short(got)))
                }
            }
            _ => Found::Changed(format!("a value this run never wrote: {:?}", short(got))),
        },
        (_, other) => Found::Changed(format!("unexpected reply {other:?}")),
    }
}

fn record(report: &mut AuditReport, key: &str, versions: &[u64], found: Found) {
    let newest = versions.iter().copied().max().unwrap_or(0);
    match found {
        Found::Version(v) => {
            let lost = versions.iter().filter(|&&acked| acked > v).count() as u64;
            if lost > 0 {
                report.lost_writes += lost;
                report.keys_with_lost_writes += 1;
                if report.examples.len() < EXAMPLES {
                    report.examples.push(format!(
                        "{key}: newest acknowledged version {newest}, server has {v} ({lost} acknowledged writes lost)"
                    ));
                }
            }
        }
        Found::Changed(what) => {
            report.changed_keys += 1;
            if report.examples.len() < EXAMPLES {
                report.examples.push(format!("{key}: newest acknowledged version {newest}, server has {what}"));
            }
        }
    }
}

impl AuditReport {
    pub fn human(&self) -> String {
        let verdict = if self.ok { "no acknowledged write lost" } else { "ACKNOWLEDGED WRITES LOST OR CHANGED" };
        let mut out = format!(
            "{verdict}: {} acknowledged writes on {} keys checked against {}; lost writes {} (on {} keys), changed keys {}\n",
            self.acknowledged_writes,
            self.keys_checked,
            self.target,
            self.lost_writes,
            self.keys_with_lost_writes,
            self.changed_keys
        );
        for e in &self.examples {
            out.push_str(&format!("  {e}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_is_lost_newer_is_fine_foreign_is_changed() {
        let namer = KeyNamer { prefix: "p".into(), value_size: 16 };
        let mut scratch = Vec::new();
        let mut report = AuditReport::default();
        let mut v = Vec::new();
        namer.value(&mut v, 1, 2, 3);
        let found = interpret(&namer, &mut scratch, Family::Strings, 1, 2, &Reply::Bulk(Some(v.clone())));
        record(&mut report, "p:s:1:2", &[1, 2, 3], found);
        assert_eq!(report.lost_writes, 0);
        let found = interpret(&namer, &mut scratch, Family::Strings, 1, 2, &Reply::Bulk(Some(v.clone())));
        record(&mut report, "p:s:1:2", &[1, 2, 4, 5], found);
        assert_eq!((report.lost_writes, report.keys_with_lost_writes), (2, 1));
        let found = interpret(&namer, &mut scratch, Family::Strings, 1, 9, &Reply::Bulk(Some(v)));
        record(&mut report, "p:s:1:9", &[1], found);
        assert_eq!(report.changed_keys, 1);
        let found = interpret(&namer, &mut scratch, Family::Lists, 1, 2, &Reply::Integer(0));
        record(&mut report, "p:l:1:2", &[1], found);
        assert_eq!(report.lost_writes, 3);
        let found = interpret(&namer, &mut scratch, Family::Counters, 1, 2, &Reply::Bulk(Some(b"7".to_vec())));
        record(&mut report, "p:n:1:2", &[5, 6, 7], found);
        assert_eq!(report.lost_writes, 3);
        assert_eq!(report.examples.len(), 3);
    }
}
