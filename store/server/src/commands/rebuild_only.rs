//! Rebuild-only commands: what a snapshot holds where no client command
//! restores a value exactly (see `cairn_engine::durability::rebuild`). They
//! are not in the command table, so no client can call them, COMMAND does
//! not list them and ACL rules do not name them; the replayer (snapshot and
//! log loading) looks them up here after the table.

use super::streams;
use super::table::{c, CommandSpec, K1, W};

/// The rebuild-only commands.
static COMMANDS: &[CommandSpec] = &[c("cairn.xconsumer", -5, W, K1, streams::xconsumer)];

/// The rebuild-only command named `name` (any case).
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    COMMANDS.iter().find(|spec| spec.name.as_bytes().eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_engine::durability::rebuild::STREAM_CONSUMER;

    #[test]
    fn the_snapshot_s_consumer_command_is_here_and_not_in_the_table() {
        assert_eq!(lookup(STREAM_CONSUMER).map(|s| s.name), Some("cairn.xconsumer"));
        assert_eq!(super::super::table::lookup(STREAM_CONSUMER), None);
        assert!(lookup(b"xclaim").is_none());
    }
}
