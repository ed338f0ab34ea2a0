//! One tracking client as the rest of the server sees it: its options
//! (CLIENT TRACKING ON ... ), the one-shot CLIENT CACHING choice, and
//! whether its redirection broke.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::client::ClientHandle;

/// The options of CLIENT TRACKING ON.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Client id that receives the invalidations (0: this connection).
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
}

/// A tracking client's mutable state.
#[derive(Debug, Default)]
pub struct TrackerState {
    pub options: Options,
    /// CLIENT CACHING YES (under OPTIN) or NO (under OPTOUT) applies to the
    /// next command (or transaction).
    pub caching: bool,
    /// The redirection client was gone when an invalidation was due.
    pub broken_redirect: bool,
    /// BCAST prefixes, in key order (the empty prefix when none was given).
    pub prefixes: Vec<Vec<u8>>,
}

impl TrackerState {
    /// Whether the keys of the current command are remembered (OPTIN needs
    /// CACHING YES, OPTOUT stops at CACHING NO).
    pub fn caches_this_command(&self) -> bool {
        let o = &self.options;
        !((o.optin && !self.caching) || (o.optout && self.caching))
    }

    /// CLIENT TRACKINGINFO's flags, in Redis's order.
    pub fn flag_names(&self) -> Vec<&'static str> {
        let o = &self.options;
        let mut flags = vec!["on"];
        let named = [
            (o.bcast, "bcast"),
            (o.optin, "optin"),
            (o.optin && self.caching, "caching-yes"),
            (o.optout, "optout"),
            (o.optout && self.caching, "caching-no"),
            (o.noloop, "noloop"),
            (self.broken_redirect, "broken_redirect"),
        ];
        flags.extend(named.iter().filter(|(on, _)| *on).map(|(_, name)| *name));
        flags
    }
}

/// A client with tracking on.
#[derive(Debug)]
pub struct Tracker {
    pub handle: Arc<ClientHandle>,
    pub state: Mutex<TrackerState>,
    /// Entries of this client in the key table (to skip sweeping the table
    /// when it has none).
    pub items: AtomicUsize,
}

impl Tracker {
    pub fn new(handle: Arc<ClientHandle>) -> Tracker {
        Tracker { handle, state: Mutex::new(TrackerState::default()), items: AtomicUsize::new(0) }
    }

    pub fn id(&self) -> u64 {
        self.handle.id
    }

    pub fn resp3(&self) -> bool {
        self.handle.resp.load(Ordering::Relaxed) == 3
    }

    /// Counts one entry fewer (its key was invalidated or evicted).
    pub fn entry_removed(&self) {
        let _ = self.items.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caching_choice_per_mode() {
        let mut state = TrackerState::default();
        assert!(state.caches_this_command());
        state.options.optin = true;
        assert!(!state.caches_this_command());
        state.caching = true;
        assert!(state.caches_this_command());
        assert_eq!(state.flag_names(), vec!["on", "optin", "caching-yes"]);
        state.options = Options { optout: true, ..Options::default() };
        assert!(!state.caches_this_command());
    }
}
