//! Encoding limits: Redis 7.0's size thresholds for compact encodings, set by
//! CONFIG SET and read by the types when they report (and switch) encoding.

use std::sync::atomic::{AtomicI64, Ordering};

/// One limit, readable from any thread.
#[derive(Debug)]
pub struct Limit(AtomicI64);

impl Limit {
    const fn new(v: i64) -> Self {
        Limit(AtomicI64::new(v))
    }

    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }

    pub fn set(&self, v: i64) {
        self.0.store(v, Ordering::Relaxed);
    }
}

/// The limits, with Redis 7.0's defaults.
#[derive(Debug)]
pub struct EncodingLimits {
    pub hash_max_listpack_entries: Limit,
    pub hash_max_listpack_value: Limit,
    pub set_max_intset_entries: Limit,
    pub zset_max_listpack_entries: Limit,
    pub zset_max_listpack_value: Limit,
    /// Positive: entries per node; -1..-5: node size class (4, 8, 16, 32, 64 KiB).
    pub list_max_listpack_size: Limit,
    pub list_compress_depth: Limit,
    pub stream_node_max_bytes: Limit,
    pub stream_node_max_entries: Limit,
    /// Largest sparse HyperLogLog, in bytes, before it turns dense.
    pub hll_sparse_max_bytes: Limit,
}

/// The process-wide limits.
pub static LIMITS: EncodingLimits = EncodingLimits {
    hash_max_listpack_entries: Limit::new(512),
    hash_max_listpack_value: Limit::new(64),
    set_max_intset_entries: Limit::new(512),
    zset_max_listpack_entries: Limit::new(128),
    zset_max_listpack_value: Limit::new(64),
    list_max_listpack_size: Limit::new(-2),
    list_compress_depth: Limit::new(0),
    stream_node_max_bytes: Limit::new(4096),
    stream_node_max_entries: Limit::new(100),
    hll_sparse_max_bytes: Limit::new(3000),
};

impl EncodingLimits {
    /// The limit behind a CONFIG parameter name (including the old
    /// `*-ziplist-*` aliases), if it is one.
    pub fn by_name(&self, name: &str) -> Option<&Limit> {
        Some(match name {
            "hash-max-listpack-entries" | "hash-max-ziplist-entries" => &self.hash_max_listpack_entries,
            "hash-max-listpack-value" | "hash-max-ziplist-value" => &self.hash_max_listpack_value,
            "set-max-intset-entries" => &self.set_max_intset_entries,
            "zset-max-listpack-entries" | "zset-max-ziplist-entries" => &self.zset_max_listpack_entries,
            "zset-max-listpack-value" | "zset-max-ziplist-value" => &self.zset_max_listpack_value,
            "list-max-listpack-size" | "list-max-ziplist-size" => &self.list_max_listpack_size,
            "list-compress-depth" => &self.list_compress_depth,
            "stream-node-max-bytes" => &self.stream_node_max_bytes,
            "stream-node-max-entries" => &self.stream_node_max_entries,
            "hll-sparse-max-bytes" => &self.hll_sparse_max_bytes,
            _ => return None,
        })
    }
}
