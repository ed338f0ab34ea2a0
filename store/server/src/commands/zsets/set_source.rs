//! Plain sets as inputs of ZUNION, ZINTER and ZDIFF: every member of a set
//! scores 1, as in Redis.
//!
//! The Set type is being written in parallel; until it lands, its
//! placeholder exposes no members, so a set input reads as empty here.

use cairn_engine::types::Set;

/// Calls `f` on every member of `set`.
pub(super) fn for_each_member(set: &Set, f: impl FnMut(&[u8])) {
    let _ = (set, f);
}

/// Whether `member` is in `set`.
pub(super) fn contains(set: &Set, member: &[u8]) -> bool {
    let _ = (set, member);
    false
}
