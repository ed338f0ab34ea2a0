//! Choosing what to evict, as Redis approximates it: sample a few keys
//! (`maxmemory-samples`) from a random spot of the hash tables, rank them by
//! the policy (idle time, LFU counter, nearest expiry), and keep the best
//! [`POOL_SIZE`] candidates seen across rounds in a pool; the best one still
//! present is evicted. Sampling costs the same whatever the table's size
//! ([`Table::sample`]).

use cairn_engine::clock::access_clock;
use cairn_engine::{Entry, Keyspace, Table};
use rand::Rng;

use super::policy::{Policy, Rank};

/// Candidates kept between rounds (Redis's `EVPOOL_SIZE`).
pub const POOL_SIZE: usize = 16;

/// A key that may be evicted, with its rank (higher: evict sooner).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub score: u64,
    pub db: usize,
    pub key: Vec<u8>,
}

/// The best candidates seen so far, lowest score first. It lives as long as
/// the server (as Redis's `EvictionPoolLRU`): an eviction usually frees one
/// key, and candidates sampled for earlier ones still compete, which is what
/// makes a few samples per eviction choose well.
#[derive(Debug, Default)]
pub struct Pool {
    best: Vec<Candidate>,
    /// The policy the scores were computed under.
    policy: Option<Policy>,
}

impl Pool {
    /// Forgets the candidates if they were ranked under another policy.
    pub fn rank_under(&mut self, policy: Policy) {
        if self.policy != Some(policy) {
            self.best.clear();
            self.policy = Some(policy);
        }
    }

    /// Keeps `candidate` if it ranks among the best [`POOL_SIZE`] (a key
    /// already in the pool is re-ranked, not duplicated).
    pub fn offer(&mut self, candidate: Candidate) {
        if let Some(i) = self.best.iter().position(|c| c.db == candidate.db && c.key == candidate.key) {
            self.best.remove(i);
        }
        if self.best.len() == POOL_SIZE && self.best[0].score >= candidate.score {
            return;
        }
        let at = self.best.partition_point(|c| c.score < candidate.score);
        self.best.insert(at, candidate);
        if self.best.len() > POOL_SIZE {
            self.best.remove(0);
        }
    }

    /// Takes the highest-ranked candidate.
    pub fn pop_best(&mut self) -> Option<Candidate> {
        self.best.pop()
    }

    pub fn is_empty(&self) -> bool {
        self.best.is_empty()
    }
}

/// What sampling needs to know.
#[derive(Debug, Clone, Copy)]
pub struct Sampling {
    pub policy: Policy,
    pub rank: Rank,
    /// Keys sampled per round (`maxmemory-samples`).
    pub samples: usize,
    pub now_ms: u64,
    /// `lfu-decay-time`, minutes.
    pub decay_minutes: u64,
}

/// The rank of `entry` under `rank`: higher is evicted sooner.
pub fn score(rank: Rank, entry: &Entry, now_ms: u64, decay_minutes: u64) -> u64 {
    match rank {
        Rank::Lru => u64::from(access_clock(now_ms).wrapping_sub(entry.access)),
        Rank::Lfu => 255 - u64::from(entry.lfu_counter(now_ms, decay_minutes)),
        Rank::Ttl => u64::MAX - entry.expire_at().unwrap_or(u64::MAX),
        Rank::Random => 0,
    }
}

/// Samples keys into `pool`, shard after shard from a random one, until
/// `samples` keys were seen or every shard was visited. Returns how many
/// keys were offered.
pub fn populate(keyspace: &Keyspace, how: &Sampling, pool: &mut Pool, rng: &mut impl Rng) -> usize {
    let shards = keyspace.num_shards();
    let first = rng.gen_range(0..shards);
    let mut offered = 0;
    for step in 0..shards {
        let mut shard = keyspace.lock((first + step) % shards);
        for db in 0..keyspace.num_dbs() {
            offered += sample_table(shard.db(db), db, how, pool, rng);
        }
        if offered >= how.samples {
            break;
        }
    }
    offered
}

/// Offers up to `samples` keys of one table.
fn sample_table(table: &Table, db: usize, how: &Sampling, pool: &mut Pool, rng: &mut impl Rng) -> usize {
    if table.is_empty() || (how.policy.volatile_only() && table.expires_len() == 0) {
        return 0;
    }
    if how.rank == Rank::Ttl {
        // The expiry index is ordered: its first key is this table's best.
        return table.soonest_expiring().map_or(0, |(at, key)| {
            pool.offer(Candidate { score: u64::MAX - at, db, key: key.as_bytes().to_vec() });
            1
        });
    }
    let mut offered = 0;
    let start = rng.gen_range(0..table.buckets().max(1));
    table.sample(start, how.samples, |key, entry| {
        if how.policy.volatile_only() && entry.expire_at().is_none() {
            return;
        }
        // Random: a random score makes the pool a random pick.
        let score =
            if how.rank == Rank::Random { rng.gen() } else { score(how.rank, entry, how.now_ms, how.decay_minutes) };
        pool.offer(Candidate { score, db, key: key.as_bytes().to_vec() });
        offered += 1;
    });
    if offered == 0 && how.policy.volatile_only() {
        // Few keys have an expiry: fall back on the nearest to expire.
        if let Some((_, key)) = table.soonest_expiring() {
            // An expired key (absent to `peek`) is the best victim of all.
            let score = table
                .peek(key.as_bytes(), how.now_ms)
                .map_or(u64::MAX, |e| score(how.rank, e, how.now_ms, how.decay_minutes));
            pool.offer(Candidate { score, db, key: key.as_bytes().to_vec() });
            offered = 1;
        }
    }
    offered
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(score: u64, key: &str) -> Candidate {
        Candidate { score, db: 0, key: key.as_bytes().to_vec() }
    }

    #[test]
    fn the_pool_keeps_the_best_and_gives_the_highest_first() {
        let mut pool = Pool::default();
        for i in 0..40 {
            pool.offer(candidate(i, &format!("k{i}")));
        }
        assert_eq!(pool.best.len(), POOL_SIZE);
        pool.offer(candidate(3, "low"));
        assert!(!pool.best.iter().any(|c| c.key == b"low"), "a full pool ignores worse candidates");
        assert_eq!(pool.pop_best(), Some(candidate(39, "k39")));
        assert_eq!(pool.pop_best(), Some(candidate(38, "k38")));
    }

    #[test]
    fn a_key_offered_twice_is_ranked_once() {
        let mut pool = Pool::default();
        pool.offer(candidate(5, "a"));
        pool.offer(candidate(9, "a"));
        assert_eq!(pool.pop_best(), Some(candidate(9, "a")));
        assert!(pool.is_empty());
    }
}
