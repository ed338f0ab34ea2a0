//! The durability tier: when the reply to a write is sent, relative to `fdatasync`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// When Cairn sends the reply to a write. `none`: at once, no log. `async`: before the fsync,
/// a syncer fsyncs continuously. `everysec`: before the fsync, fsync once a second. `sync`: after
/// the fdatasync that covers the write (group commit); nothing acknowledged is lost.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Reply at once, no write-ahead log: a restart loses everything since the last snapshot.
    None,
    /// Reply before the fsync; a syncer fsyncs continuously (loses about one fsync time).
    #[default]
    Async,
    /// Reply before the fsync; fsync once a second (loses up to one second).
    Everysec,
    /// Reply after the fdatasync that covers the write: nothing acknowledged is lost.
    Sync,
}

impl Durability {
    /// The value of the server's `--durability` flag.
    pub fn as_flag(self) -> &'static str {
        match self {
            Durability::None => "none",
            Durability::Async => "async",
            Durability::Everysec => "everysec",
            Durability::Sync => "sync",
        }
    }
}

impl std::fmt::Display for Durability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_flag())
    }
}
