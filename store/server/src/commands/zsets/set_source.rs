//! Plain sets as inputs of ZUNION, ZINTER and ZDIFF: every member of a set
//! scores 1, as in Redis.

use cairn_engine::types::Set;

/// Calls `f` on every member of `set`.
pub(super) fn for_each_member(set: &Set, mut f: impl FnMut(&[u8])) {
    for member in set.iter() {
        member.with_bytes(&mut f);
    }
}

/// Whether `member` is in `set`.
pub(super) fn contains(set: &Set, member: &[u8]) -> bool {
    set.contains(member)
}
