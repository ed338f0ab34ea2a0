//! Operations that touch both the entries and a consumer group: XREADGROUP
//! (new entries and history), XCLAIM and XAUTOCLAIM. Each follows the order
//! of effects of Redis 7.0's implementation, since replies and read counters
//! depend on it. Groups and consumers named here must exist (the command
//! layer checks and creates them first); a missing group is a no-op.

use std::ops::Bound;

use super::group::CountUpdate;
use super::id::StreamId;
use super::Stream;

/// XCLAIM's options, resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClaimOptions {
    /// Only claim entries idle at least this long (0: any).
    pub min_idle_ms: i64,
    /// The delivery time to record (IDLE/TIME, or now).
    pub delivery_time: i64,
    /// RETRYCOUNT, if given.
    pub retry_count: Option<u64>,
    /// FORCE: create missing pending entries for existing stream entries.
    pub force: bool,
    /// JUSTID: do not count a delivery.
    pub justid: bool,
    /// LASTID: raise the group's last ID to this.
    pub last_id: StreamId,
}

/// XAUTOCLAIM's outcome.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AutoClaim {
    /// Claimed entries, in order.
    pub claimed: Vec<StreamId>,
    /// Pending entries whose stream entry was gone; they were dropped.
    pub deleted: Vec<StreamId>,
    /// Where the next call should start (0-0: the PEL was exhausted).
    pub next: StreamId,
}

impl Stream {
    /// XREADGROUP with `>`: delivers up to `count` (0: no limit) entries
    /// after the group's last ID to `consumer`, advancing the group and, unless
    /// `noack`, recording them as pending. Returns the delivered IDs.
    pub fn read_group_new(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        count: usize,
        noack: bool,
        now_ms: i64,
    ) -> Vec<StreamId> {
        let Some(start) = self.group(group).and_then(|g| g.last_id.next()) else { return Vec::new() };
        let limit = if count == 0 { usize::MAX } else { count };
        let ids: Vec<StreamId> = self.range(start, StreamId::MAX, false).take(limit).map(|e| e.id).collect();
        let meta = self.meta;
        let Some(g) = self.groups.get_mut(group) else { return Vec::new() };
        for &id in &ids {
            if id > g.last_id {
                meta.advance_group(g, id);
            }
            if !noack {
                g.deliver(id, consumer, now_ms);
            }
        }
        ids
    }

    /// XREADGROUP with an explicit ID: up to `count` (0: no limit) of the
    /// consumer's own pending entries from `start` on. Each comes with
    /// whether its stream entry still exists; existing ones count as
    /// delivered again.
    pub fn read_group_history(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        start: StreamId,
        count: usize,
        now_ms: i64,
    ) -> Vec<(StreamId, bool)> {
        let limit = if count == 0 { usize::MAX } else { count };
        let ids: Vec<StreamId> = match self.group(group).and_then(|g| g.consumer(consumer)) {
            Some(c) => c.pending().range(start..).take(limit).copied().collect(),
            None => return Vec::new(),
        };
        let found: Vec<(StreamId, bool)> = ids.into_iter().map(|id| (id, self.contains(id))).collect();
        if let Some(g) = self.groups.get_mut(group) {
            for &(id, exists) in &found {
                if exists {
                    g.redeliver(id, now_ms);
                }
            }
        }
        found
    }

    /// XCLAIM: gives the listed pending entries to `consumer`. Entries gone
    /// from the stream are dropped from the PEL. Returns the claimed IDs in
    /// argument order.
    pub fn claim(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        ids: &[StreamId],
        opts: &ClaimOptions,
        now_ms: i64,
    ) -> Vec<StreamId> {
        let mut claimed = Vec::new();
        let Some(g) = self.groups.get_mut(group) else { return claimed };
        if opts.last_id > g.last_id {
            g.last_id = opts.last_id;
        }
        let mut consumer_ready = false;
        for &id in ids {
            let exists = self.contains(id);
            let Some(g) = self.groups.get_mut(group) else { break };
            let nack_idle = g.pel().get(&id).map(|n| now_ms - n.delivery_time);
            if !exists {
                if nack_idle.is_some() {
                    g.ack(id);
                }
                continue;
            }
            let created = opts.force && nack_idle.is_none();
            match nack_idle {
                None if !created => continue,
                Some(idle) if opts.min_idle_ms != 0 && idle < opts.min_idle_ms => continue,
                _ => {}
            }
            if !consumer_ready {
                g.touch_or_create_consumer(consumer, now_ms);
                consumer_ready = true;
            }
            if created {
                g.insert_unowned(id, consumer, now_ms);
            }
            let update = match opts.retry_count {
                Some(n) => CountUpdate::Set(n),
                None if opts.justid => CountUpdate::Keep,
                None => CountUpdate::Increment,
            };
            g.transfer(id, consumer, opts.delivery_time, update);
            claimed.push(id);
        }
        claimed
    }

    /// XAUTOCLAIM: scans the group's PEL from `start`, claiming for
    /// `consumer` entries idle at least `min_idle_ms`, until `count` entries
    /// were claimed or dropped, or `count * 10` were looked at.
    #[allow(clippy::too_many_arguments)]
    pub fn autoclaim(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        min_idle_ms: i64,
        start: StreamId,
        mut count: u64,
        justid: bool,
        now_ms: i64,
    ) -> AutoClaim {
        let mut out = AutoClaim::default();
        let mut attempts = count.saturating_mul(10);
        let mut lower = Bound::Included(start);
        let mut consumer_ready = false;
        while attempts > 0 {
            attempts -= 1;
            if count == 0 {
                break;
            }
            let Some((id, delivered)) = self.next_pending(group, lower) else { break };
            lower = Bound::Excluded(id);
            let exists = self.contains(id);
            let Some(g) = self.groups.get_mut(group) else { break };
            if !exists {
                g.ack(id);
                out.deleted.push(id);
                count -= 1;
                continue;
            }
            if min_idle_ms != 0 && now_ms - delivered < min_idle_ms {
                continue;
            }
            if !consumer_ready {
                g.touch_or_create_consumer(consumer, now_ms);
                consumer_ready = true;
            }
            let update = if justid { CountUpdate::Keep } else { CountUpdate::Increment };
            g.transfer(id, consumer, now_ms, update);
            out.claimed.push(id);
            count -= 1;
        }
        out.next = self.next_pending(group, lower).map_or(StreamId::MIN, |(id, _)| id);
        out
    }

    /// The first pending entry of `group` after `lower`, with its delivery time.
    fn next_pending(&self, group: &[u8], lower: Bound<StreamId>) -> Option<(StreamId, i64)> {
        let g = self.group(group)?;
        g.pel().range((lower, Bound::Unbounded)).next().map(|(id, n)| (*id, n.delivery_time))
    }
}
