//! Which client's command runs on this thread (Redis's `current_client`),
//! for NOLOOP: a tracking client is not told about keys its own command
//! changed, even when the change is a lazy expiry inside that command.
//!
//! Set by the dispatcher (and by the re-run of a blocked command) only
//! while some client tracks; 0 means "no client" (active expiry, eviction
//! of the tracking table).

use std::cell::Cell;

thread_local! {
    static CURRENT: Cell<u64> = const { Cell::new(0) };
}

/// The id of the client whose command runs on this thread (0: none).
pub fn client() -> u64 {
    CURRENT.with(Cell::get)
}

/// Marks `id` as the running client until the guard drops (which restores
/// the previous one: commands nest in EXEC and scripts).
pub fn enter(id: u64) -> Guard {
    Guard { previous: CURRENT.with(|c| c.replace(id)) }
}

/// Restores the previous running client when dropped.
#[must_use]
pub struct Guard {
    previous: u64,
}

impl Drop for Guard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn guards_nest() {
        assert_eq!(super::client(), 0);
        let outer = super::enter(3);
        {
            let _inner = super::enter(5);
            assert_eq!(super::client(), 5);
        }
        assert_eq!(super::client(), 3);
        drop(outer);
        assert_eq!(super::client(), 0);
    }
}
