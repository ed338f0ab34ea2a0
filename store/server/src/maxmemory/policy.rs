//! `maxmemory-policy`: which keys may be evicted, and which of them first.

/// Redis's eviction policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    NoEviction,
    AllKeysLru,
    AllKeysLfu,
    AllKeysRandom,
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
}

/// How a policy ranks the keys it may evict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rank {
    /// Longest idle first (the access clock).
    Lru,
    /// Least frequently used first (the decayed LFU counter).
    Lfu,
    /// Nearest expiry first.
    Ttl,
    /// Any sampled key.
    Random,
}

impl Policy {
    /// The policy a `maxmemory-policy` value names (already validated by
    /// CONFIG SET; anything else is `noeviction`).
    pub fn from_name(name: &str) -> Policy {
        match name {
            "allkeys-lru" => Policy::AllKeysLru,
            "allkeys-lfu" => Policy::AllKeysLfu,
            "allkeys-random" => Policy::AllKeysRandom,
            "volatile-lru" => Policy::VolatileLru,
            "volatile-lfu" => Policy::VolatileLfu,
            "volatile-random" => Policy::VolatileRandom,
            "volatile-ttl" => Policy::VolatileTtl,
            _ => Policy::NoEviction,
        }
    }

    pub fn as_u8(self) -> u8 {
        self as u8
    }

    pub fn from_u8(v: u8) -> Policy {
        const ALL: [Policy; 8] = [
            Policy::NoEviction,
            Policy::AllKeysLru,
            Policy::AllKeysLfu,
            Policy::AllKeysRandom,
            Policy::VolatileLru,
            Policy::VolatileLfu,
            Policy::VolatileRandom,
            Policy::VolatileTtl,
        ];
        ALL.get(usize::from(v)).copied().unwrap_or(Policy::NoEviction)
    }

    /// Whether only keys with an expiry may be evicted.
    pub fn volatile_only(self) -> bool {
        matches!(self, Policy::VolatileLru | Policy::VolatileLfu | Policy::VolatileRandom | Policy::VolatileTtl)
    }

    /// Whether the policy uses the LFU counter (lookups then maintain it).
    pub fn is_lfu(self) -> bool {
        matches!(self, Policy::AllKeysLfu | Policy::VolatileLfu)
    }

    /// How the policy ranks candidates; `None` for `noeviction`.
    pub fn rank(self) -> Option<Rank> {
        match self {
            Policy::NoEviction => None,
            Policy::AllKeysLru | Policy::VolatileLru => Some(Rank::Lru),
            Policy::AllKeysLfu | Policy::VolatileLfu => Some(Rank::Lfu),
            Policy::AllKeysRandom | Policy::VolatileRandom => Some(Rank::Random),
            Policy::VolatileTtl => Some(Rank::Ttl),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_the_atomic_form() {
        for name in [
            "noeviction",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
        ] {
            let policy = Policy::from_name(name);
            assert_eq!(Policy::from_u8(policy.as_u8()), policy, "{name}");
            assert_eq!(policy.volatile_only(), name.starts_with("volatile"), "{name}");
            assert_eq!(policy.is_lfu(), name.ends_with("lfu"), "{name}");
        }
        assert_eq!(Policy::from_name("bogus"), Policy::NoEviction);
    }
}
