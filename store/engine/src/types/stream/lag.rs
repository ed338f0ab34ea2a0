//! Consumer group read counters and lag (Redis 7.0's `entries-read` and
//! `lag`): whether a range holds tombstones, and the estimated position of an
//! ID counted from the first entry ever added. All of it reads only the
//! stream's counters ([`Meta`]).

use super::group::{ConsumerGroup, ENTRIES_READ_INVALID};
use super::id::StreamId;
use super::Meta;

impl Meta {
    /// Whether entries were deleted somewhere in `start..=end` (Redis's
    /// `streamRangeHasTombstones`: judged by the largest deleted ID only).
    pub fn range_has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        let max_deleted = self.max_deleted_entry_id;
        if self.length == 0 || max_deleted.is_zero() || self.first_id > max_deleted {
            return false;
        }
        start <= max_deleted && max_deleted <= end
    }

    /// The logical read counter of `id` (how many entries were added up to
    /// it), or [`ENTRIES_READ_INVALID`] when it cannot be known.
    pub fn estimate_distance_from_first_ever_entry(&self, id: StreamId) -> i64 {
        let added = self.entries_added as i64;
        if self.entries_added == 0 {
            return 0;
        }
        if (self.length == 0 && id <= self.last_id) || id == self.last_id {
            return added;
        }
        if id > self.last_id {
            return ENTRIES_READ_INVALID;
        }
        let max_deleted = self.max_deleted_entry_id;
        if max_deleted.is_zero() || max_deleted < self.first_id {
            if id < self.first_id {
                return added - self.length as i64;
            }
            if id == self.first_id {
                return added - self.length as i64 + 1;
            }
        }
        ENTRIES_READ_INVALID
    }

    /// A group's lag: entries not yet delivered to it, if it can be known.
    pub fn group_lag(&self, group: &ConsumerGroup) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if group.entries_read != ENTRIES_READ_INVALID && !self.range_has_tombstones(group.last_id, StreamId::MAX) {
            return Some(self.entries_added as i64 - group.entries_read);
        }
        let read = self.estimate_distance_from_first_ever_entry(group.last_id);
        (read != ENTRIES_READ_INVALID).then(|| self.entries_added as i64 - read)
    }

    /// Moves a group's last ID forward to a newly delivered `id`, keeping its
    /// read counter exact when it can.
    pub(super) fn advance_group(&self, group: &mut ConsumerGroup, id: StreamId) {
        if group.entries_read != ENTRIES_READ_INVALID && !self.range_has_tombstones(id, StreamId::MAX) {
            group.entries_read += 1;
        } else if self.entries_added != 0 {
            group.entries_read = self.estimate_distance_from_first_ever_entry(id);
        }
        group.last_id = id;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates() {
        let meta = Meta {
            length: 3,
            last_id: StreamId::new(5, 0),
            first_id: StreamId::new(3, 0),
            max_deleted_entry_id: StreamId::MIN,
            entries_added: 5,
        };
        assert_eq!(meta.estimate_distance_from_first_ever_entry(StreamId::new(5, 0)), 5);
        assert_eq!(meta.estimate_distance_from_first_ever_entry(StreamId::new(3, 0)), 3);
        assert_eq!(meta.estimate_distance_from_first_ever_entry(StreamId::new(1, 0)), 2);
        assert_eq!(meta.estimate_distance_from_first_ever_entry(StreamId::new(4, 0)), ENTRIES_READ_INVALID);
        assert_eq!(meta.estimate_distance_from_first_ever_entry(StreamId::new(9, 0)), ENTRIES_READ_INVALID);
        let group = ConsumerGroup::new(StreamId::MIN, ENTRIES_READ_INVALID);
        assert_eq!(meta.group_lag(&group), Some(3));
    }
}
