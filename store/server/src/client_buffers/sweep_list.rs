//! The connections the buffer sweep ([`super::cron`]) looks at: those that
//! have not given all their buffers back yet.
//!
//! A connection is a member exactly while its published sizes are not
//! [`given_back`]: it joins when it starts, and again when the first read
//! after an idle release allocates its input buffer; it leaves when a tune
//! gave everything back, and when it closes (the client registry's
//! `unregister`). Only the connection's own task changes its membership
//! (besides its close), each time on a change of its published sizes that
//! crosses [`given_back`], so a connection pays the lock at most once per
//! idle period, never per batch; the sweep only reads the list.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::gauges::Shown;
use super::REPLY_MIN;
use crate::client::ClientHandle;

/// Whether published sizes leave nothing for an idle connection to give
/// back, whatever the reply-buffer policy becomes: no input buffer, a
/// reply buffer that cannot halve, and no peak left to reset.
pub(crate) fn given_back(shown: &Shown) -> bool {
    shown.query_capacity == 0 && shown.reply_size / 2 < REPLY_MIN && shown.reply_peak == 0
}

/// The connections with buffers they may still give back, by id.
#[derive(Debug, Default)]
pub struct SweepList {
    members: Mutex<BTreeMap<u64, Arc<ClientHandle>>>,
}

impl SweepList {
    /// Adds a connection (again: no effect).
    pub fn join(&self, handle: &Arc<ClientHandle>) {
        self.members.lock().insert(handle.id, handle.clone());
    }

    /// Removes a connection (not a member: no effect).
    pub fn leave(&self, id: u64) {
        self.members.lock().remove(&id);
    }

    /// How many connections the sweep looks at per tick.
    pub fn len(&self) -> usize {
        self.members.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The members for which `pick` holds (the list is locked meanwhile:
    /// `pick` must only read). Allocates only when one is picked.
    pub(crate) fn picked(&self, mut pick: impl FnMut(&ClientHandle) -> bool) -> Vec<Arc<ClientHandle>> {
        self.members.lock().values().filter(|handle| pick(handle)).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client_buffers::{READ_CHUNK, REPLY_CHUNK};

    fn handle(id: u64) -> Arc<ClientHandle> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 6379));
        Arc::new(ClientHandle::new(id, addr, addr, -1, 0, 0))
    }

    #[test]
    fn only_a_released_input_a_minimal_reply_buffer_and_no_peak_are_given_back() {
        let released = Shown { reply_size: REPLY_MIN, ..Shown::default() };
        assert!(given_back(&released));
        assert!(given_back(&Shown { reply_size: 2 * REPLY_MIN - 1, ..released }));
        assert!(!given_back(&Shown { query_capacity: READ_CHUNK, ..released }));
        assert!(!given_back(&Shown { reply_size: 2 * REPLY_MIN, ..released }));
        assert!(!given_back(&Shown { reply_size: REPLY_CHUNK, ..released }));
        assert!(!given_back(&Shown { reply_peak: 1, ..released }));
    }

    #[test]
    fn members_join_once_and_leave() {
        let list = SweepList::default();
        let (a, b) = (handle(1), handle(2));
        list.join(&a);
        list.join(&a);
        list.join(&b);
        assert_eq!(list.len(), 2);
        let picked = list.picked(|h| h.id == 2);
        assert_eq!(picked.iter().map(|h| h.id).collect::<Vec<_>>(), vec![2]);
        list.leave(1);
        list.leave(1);
        assert_eq!(list.len(), 1);
        list.leave(2);
        assert!(list.is_empty());
    }
}
