//! The model of one writer's keys: from its ack log and the state read back after a restart,
//! decide which writes survived, which acknowledged writes were lost, and what changed.
//!
//! Each key (each hash field) is a *slot* whose writes are numbered 1..n in the order the writer
//! sent them. The state read back tells how many of them were applied (`j`): the position of the
//! value a string or field holds, a counter's value, a list's length. Writes 1..j survived;
//! an acknowledged write after j was lost. Only the writer's last write can be uncertain (sent,
//! reply never seen), so `j` may exceed the acknowledged count by one exactly when that write
//! targets the slot. Anything else (a value never sent, a list whose contents are not the pushed
//! prefix, a counter beyond what was sent, a wrong reply) is a *change*, always a failure.

use crate::acklog::{Entry, Outcome, WriterLog};
use crate::ops::Op;
use crate::resp::Reply;
use std::collections::{BTreeMap, HashMap};

/// The family of a key decides how it is read back and how its state is interpreted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Str,
    Counter,
    List,
    Hash,
}

/// One key's writes, in order, as indexes into the writer's log entries.
#[derive(Debug, Clone)]
pub struct KeyPlan {
    pub key: String,
    pub family: Family,
    pub entries: Vec<usize>,
}

impl KeyPlan {
    /// The read command that returns this key's whole state.
    pub fn read_args(&self) -> Vec<&[u8]> {
        let key = self.key.as_bytes();
        match self.family {
            Family::Str | Family::Counter => vec![b"GET", key],
            Family::List => vec![b"LRANGE", key, b"0", b"-1"],
            Family::Hash => vec![b"HGETALL", key],
        }
    }
}

/// Groups a writer's entries by key.
pub fn plan(log: &WriterLog) -> Vec<KeyPlan> {
    let mut keys: BTreeMap<&str, KeyPlan> = BTreeMap::new();
    for (i, entry) in log.entries.iter().enumerate() {
        let family = match entry.op {
            Op::Set { .. } => Family::Str,
            Op::Incr { .. } => Family::Counter,
            Op::Lpush { .. } => Family::List,
            Op::Hset { .. } => Family::Hash,
        };
        let key = entry.op.key();
        keys.entry(key)
            .or_insert_with(|| KeyPlan { key: key.to_string(), family, entries: Vec::new() })
            .entries
            .push(i);
    }
    keys.into_values().collect()
}

/// The verdict on one writer.
#[derive(Debug, Default, Clone)]
pub struct WriterCheck {
    pub acked: u64,
    pub lost: u64,
    pub changed: u64,
    pub uncertain: u64,
    pub uncertain_landed: u64,
    /// Some acknowledged write was lost while a later one survived: not a prefix.
    pub non_prefix: bool,
    /// Time from the last acknowledged write that survived to the last acknowledged write.
    pub loss_window_us: Option<u64>,
    pub problems: Vec<String>,
}

/// Checks a writer's log against the replies to `plan`'s read commands (same order).
pub fn check_writer(log: &WriterLog, plans: &[KeyPlan], observed: &[Reply]) -> WriterCheck {
    let mut eval = Eval { log, survived: vec![false; log.entries.len()], check: WriterCheck::default() };
    for (plan, reply) in plans.iter().zip(observed) {
        match plan.family {
            Family::Str => eval.string_key(plan, reply),
            Family::Counter => eval.counter_key(plan, reply),
            Family::List => eval.list_key(plan, reply),
            Family::Hash => eval.hash_key(plan, reply),
        }
    }
    eval.finish()
}

struct Eval<'a> {
    log: &'a WriterLog,
    survived: Vec<bool>,
    check: WriterCheck,
}

impl Eval<'_> {
    fn entry(&self, i: usize) -> &Entry {
        &self.log.entries[i]
    }

    fn value_of(&self, i: usize) -> Option<&str> {
        match &self.entry(i).op {
            Op::Set { value, .. } | Op::Lpush { value, .. } | Op::Hset { value, .. } => Some(value),
            Op::Incr { .. } => None,
        }
    }

    fn changed(&mut self, problem: String) {
        self.check.changed += 1;
        self.problem(problem);
    }

    fn problem(&mut self, problem: String) {
        if self.check.problems.len() < 20 {
            self.check.problems.push(problem);
        }
    }

    /// Records that the first `applied` writes of `slot` took effect.
    fn settle(&mut self, what: &str, slot: &[usize], applied: usize) {
        if applied > slot.len() {
            return self.changed(format!("{what}: {applied} writes applied but only {} sent", slot.len()));
        }
        for (pos, &i) in slot.iter().enumerate() {
            if pos < applied {
                self.survived[i] = true;
            } else if self.entry(i).is_acked() {
                let entry = self.entry(i);
                let problem =
                    format!("{what}: acknowledged write #{} ({}) lost; state holds {applied}", entry.seq, entry.op);
                self.check.lost += 1;
                self.problem(problem);
            }
        }
    }

    /// The 1-based position in `slot` of the write that put `value` there (0 when absent).
    fn position_of(&self, slot: &[usize], value: Option<&str>) -> Result<usize, String> {
        let Some(value) = value else { return Ok(0) };
        slot.iter()
            .position(|&i| self.value_of(i) == Some(value))
            .map(|p| p + 1)
            .ok_or_else(|| format!("holds '{value}', a value this writer never sent there"))
    }

    fn check_reply(&mut self, what: &str, i: usize, expected: &str) {
        if let Outcome::Acked { reply } = &self.entry(i).outcome {
            if reply != expected {
                let seq = self.entry(i).seq;
                self.changed(format!("{what}: write #{seq} was answered '{reply}', expected '{expected}'"));
            }
        }
    }

    fn string_key(&mut self, plan: &KeyPlan, reply: &Reply) {
        for &i in &plan.entries {
            self.check_reply(&plan.key, i, "OK");
        }
        let value = match reply {
            Reply::Bulk(v) => v.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()),
            other => return self.changed(format!("{}: GET answered {other:?}", plan.key)),
        };
        match self.position_of(&plan.entries, value.as_deref()) {
            Ok(applied) => self.settle(&plan.key, &plan.entries, applied),
            Err(e) => self.changed(format!("{}: {e}", plan.key)),
        }
    }

    fn counter_key(&mut self, plan: &KeyPlan, reply: &Reply) {
        for (pos, &i) in plan.entries.iter().enumerate() {
            self.check_reply(&plan.key, i, &(pos + 1).to_string());
        }
        let applied = match reply {
            Reply::Bulk(None) => Some(0),
            Reply::Bulk(Some(b)) => std::str::from_utf8(b).ok().and_then(|s| s.parse::<usize>().ok()),
            _ => None,
        };
        match applied {
            Some(applied) => self.settle(&plan.key, &plan.entries, applied),
            None => self.changed(format!("{}: counter reads {reply:?}", plan.key)),
        }
    }

    fn list_key(&mut self, plan: &KeyPlan, reply: &Reply) {
        for (pos, &i) in plan.entries.iter().enumerate() {
            self.check_reply(&plan.key, i, &(pos + 1).to_string());
        }
        let Some(items) = bulk_strings(reply) else {
            return self.changed(format!("{}: LRANGE answered {reply:?}", plan.key));
        };
        let applied = items.len();
        let pushed: Vec<Option<&str>> = plan.entries.iter().take(applied).map(|&i| self.value_of(i)).collect();
        let oldest_first: Vec<Option<&str>> = items.iter().rev().map(|s| Some(s.as_str())).collect();
        if applied <= plan.entries.len() && pushed != oldest_first {
            return self.changed(format!("{}: list of {applied} is not the first {applied} values pushed", plan.key));
        }
        self.settle(&plan.key, &plan.entries, applied);
    }

    fn hash_key(&mut self, plan: &KeyPlan, reply: &Reply) {
        let Some(flat) = bulk_strings(reply) else {
            return self.changed(format!("{}: HGETALL answered {reply:?}", plan.key));
        };
        let mut observed: HashMap<&str, &str> =
            flat.chunks(2).filter(|p| p.len() == 2).map(|p| (p[0].as_str(), p[1].as_str())).collect();
        let log = self.log;
        let mut fields: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for &i in &plan.entries {
            if let Op::Hset { field, .. } = &log.entries[i].op {
                fields.entry(field).or_default().push(i);
            }
        }
        for (field, slot) in &fields {
            let what = format!("{} field {field}", plan.key);
            for (pos, &i) in slot.iter().enumerate() {
                self.check_reply(&what, i, if pos == 0 { "1" } else { "0" });
            }
            match self.position_of(slot, observed.remove(field)) {
                Ok(applied) => self.settle(&what, slot, applied),
                Err(e) => self.changed(format!("{what}: {e}")),
            }
        }
        for field in observed.keys() {
            self.changed(format!("{}: field {field} was never written", plan.key));
        }
    }

    fn finish(mut self) -> WriterCheck {
        let entries = &self.log.entries;
        let check = &mut self.check;
        check.acked = entries.iter().filter(|e| e.is_acked()).count() as u64;
        check.uncertain = entries.len() as u64 - check.acked;
        check.uncertain_landed =
            entries.iter().zip(&self.survived).filter(|(e, s)| **s && !e.is_acked()).count() as u64;
        let last_survived = entries.iter().zip(&self.survived).rposition(|(e, s)| *s && e.is_acked());
        let first_lost = entries.iter().zip(&self.survived).position(|(e, s)| !*s && e.is_acked());
        check.non_prefix = matches!((first_lost, last_survived), (Some(lost), Some(kept)) if lost < kept);
        let last_acked = entries.iter().rev().find(|e| e.is_acked()).map(|e| e.time_us);
        check.loss_window_us = last_acked.map(|last| {
            let durable = last_survived.map_or(self.log.started_us, |i| entries[i].time_us);
            last.saturating_sub(durable)
        });
        self.check
    }
}

/// An array of bulk strings (missing or nil elements make it None).
fn bulk_strings(reply: &Reply) -> Option<Vec<String>> {
    match reply {
        Reply::Array(Some(items)) => items
            .iter()
            .map(|item| match item {
                Reply::Bulk(Some(b)) => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            })
            .collect(),
        Reply::Array(None) => Some(Vec::new()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acked(seq: u64, op: Op, reply: &str) -> Entry {
        Entry { seq, time_us: seq * 1000, op, outcome: Outcome::Acked { reply: reply.into() } }
    }

    fn uncertain(seq: u64, op: Op) -> Entry {
        Entry { seq, time_us: seq * 1000, op, outcome: Outcome::Uncertain { reason: "reset".into() } }
    }

    fn set(key: &str, value: &str) -> Op {
        Op::Set { key: key.into(), value: value.into() }
    }

    fn bulk(s: &str) -> Reply {
        Reply::Bulk(Some(s.as_bytes().to_vec()))
    }

    fn array(items: &[&str]) -> Reply {
        Reply::Array(Some(items.iter().map(|s| bulk(s)).collect()))
    }

    fn log(entries: Vec<Entry>) -> WriterLog {
        WriterLog { name: "w".into(), started_us: 0, entries }
    }

    fn check(log: &WriterLog, observed: &[Reply]) -> WriterCheck {
        check_writer(log, &plan(log), observed)
    }

    #[test]
    fn string_with_last_acked_value_passes() {
        let log = log(vec![acked(1, set("k", "a"), "OK"), acked(2, set("k", "b"), "OK")]);
        let c = check(&log, &[bulk("b")]);
        assert_eq!((c.acked, c.lost, c.changed), (2, 0, 0));
        assert_eq!(c.loss_window_us, Some(0));
    }

    #[test]
    fn string_with_an_older_value_is_a_loss_with_a_window() {
        let log = log(vec![acked(1, set("k", "a"), "OK"), acked(2, set("k", "b"), "OK")]);
        let c = check(&log, &[bulk("a")]);
        assert_eq!((c.lost, c.changed), (1, 0));
        assert_eq!(c.loss_window_us, Some(1000));
        assert!(!c.non_prefix);
    }

    #[test]
    fn the_uncertain_last_write_may_or_may_not_land() {
        let entries = vec![acked(1, set("k", "a"), "OK"), uncertain(2, set("k", "b"))];
        let c = check(&log(entries.clone()), &[bulk("b")]);
        assert_eq!((c.lost, c.changed, c.uncertain_landed), (0, 0, 1));
        let c = check(&log(entries), &[bulk("a")]);
        assert_eq!((c.lost, c.changed, c.uncertain_landed), (0, 0, 0));
    }

    #[test]
    fn a_value_never_sent_is_a_change() {
        let c = check(&log(vec![acked(1, set("k", "a"), "OK")]), &[bulk("zzz")]);
        assert_eq!(c.changed, 1);
    }

    #[test]
    fn counters_must_hold_the_last_acked_reply_or_one_more_if_uncertain() {
        let incr = || Op::Incr { key: "c".into() };
        let entries = vec![acked(1, incr(), "1"), acked(2, incr(), "2"), uncertain(3, incr())];
        assert_eq!(check(&log(entries.clone()), &[bulk("2")]).lost, 0);
        assert_eq!(check(&log(entries.clone()), &[bulk("3")]).uncertain_landed, 1);
        assert_eq!(check(&log(entries.clone()), &[bulk("1")]).lost, 1);
        assert_eq!(check(&log(entries.clone()), &[Reply::Bulk(None)]).lost, 2);
        assert_eq!(check(&log(entries), &[bulk("4")]).changed, 1);
    }

    #[test]
    fn lists_must_be_the_pushed_prefix() {
        let push = |v: &str| Op::Lpush { key: "l".into(), value: v.into() };
        let entries = vec![acked(1, push("a"), "1"), acked(2, push("b"), "2")];
        assert_eq!(check(&log(entries.clone()), &[array(&["b", "a"])]).lost, 0);
        assert_eq!(check(&log(entries.clone()), &[array(&["a"])]).lost, 1);
        assert_eq!(check(&log(entries.clone()), &[array(&["a", "b"])]).changed, 1);
        assert_eq!(check(&log(entries), &[array(&["x", "b", "a"])]).changed, 1);
    }

    #[test]
    fn hash_fields_are_checked_one_by_one() {
        let hset = |f: &str, v: &str| Op::Hset { key: "h".into(), field: f.into(), value: v.into() };
        let entries =
            vec![acked(1, hset("f1", "a"), "1"), acked(2, hset("f2", "b"), "1"), acked(3, hset("f1", "c"), "0")];
        assert_eq!(check(&log(entries.clone()), &[array(&["f1", "c", "f2", "b"])]).lost, 0);
        let c = check(&log(entries.clone()), &[array(&["f1", "a", "f2", "b"])]);
        assert_eq!((c.lost, c.loss_window_us), (1, Some(1000)));
        assert_eq!(check(&log(entries.clone()), &[array(&["f1", "c", "f2", "b", "f9", "x"])]).changed, 1);
        assert!(check(&log(entries), &[array(&["f1", "c"])]).non_prefix);
    }

    #[test]
    fn a_wrong_reply_is_a_change() {
        let c = check(&log(vec![acked(1, Op::Incr { key: "c".into() }, "7")]), &[bulk("1")]);
        assert_eq!(c.changed, 1);
    }

    #[test]
    fn losing_everything_measures_the_window_from_the_start() {
        let mut log = log(vec![acked(1, set("k", "a"), "OK"), acked(2, set("k", "b"), "OK")]);
        log.started_us = 500;
        let c = check(&log, &[Reply::Bulk(None)]);
        assert_eq!((c.lost, c.loss_window_us), (2, Some(1500)));
    }
}
