//! The eviction policy: what the server does when a write would take memory above `maxmemory`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the server does when a write would take its memory above `maxmemory` (Redis's
/// `maxmemory-policy`): refuse the write with `-OOM` (`noeviction`, the default, as in Redis), or
/// evict keys first: among all keys (`allkeys-*`) or only keys with a TTL (`volatile-*`), the
/// least recently used (`*-lru`), the least frequently used (`*-lfu`), at random (`*-random`) or
/// the nearest expiry (`volatile-ttl`).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum MaxmemoryPolicy {
    /// Evict the least recently used key among those with a TTL.
    VolatileLru,
    /// Evict the least frequently used key among those with a TTL.
    VolatileLfu,
    /// Evict a random key among those with a TTL.
    VolatileRandom,
    /// Evict the key with the nearest expiry.
    VolatileTtl,
    /// Evict the least recently used key.
    AllkeysLru,
    /// Evict the least frequently used key.
    AllkeysLfu,
    /// Evict a random key.
    AllkeysRandom,
    /// Evict nothing: writes that need memory are refused with `-OOM` (reads still work).
    #[default]
    Noeviction,
}

impl MaxmemoryPolicy {
    /// Every policy, in the server's order.
    pub const ALL: [MaxmemoryPolicy; 8] = [
        MaxmemoryPolicy::VolatileLru,
        MaxmemoryPolicy::VolatileLfu,
        MaxmemoryPolicy::VolatileRandom,
        MaxmemoryPolicy::VolatileTtl,
        MaxmemoryPolicy::AllkeysLru,
        MaxmemoryPolicy::AllkeysLfu,
        MaxmemoryPolicy::AllkeysRandom,
        MaxmemoryPolicy::Noeviction,
    ];

    /// The server's `maxmemory-policy` value.
    pub fn as_str(self) -> &'static str {
        match self {
            MaxmemoryPolicy::VolatileLru => "volatile-lru",
            MaxmemoryPolicy::VolatileLfu => "volatile-lfu",
            MaxmemoryPolicy::VolatileRandom => "volatile-random",
            MaxmemoryPolicy::VolatileTtl => "volatile-ttl",
            MaxmemoryPolicy::AllkeysLru => "allkeys-lru",
            MaxmemoryPolicy::AllkeysLfu => "allkeys-lfu",
            MaxmemoryPolicy::AllkeysRandom => "allkeys-random",
            MaxmemoryPolicy::Noeviction => "noeviction",
        }
    }
}

impl std::fmt::Display for MaxmemoryPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serialized_ones() {
        for policy in MaxmemoryPolicy::ALL {
            assert_eq!(serde_json::to_value(policy).ok(), Some(serde_json::Value::from(policy.as_str())));
        }
        assert_eq!(MaxmemoryPolicy::default().as_str(), "noeviction");
    }
}
