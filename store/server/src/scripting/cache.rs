//! The script cache: SHA1 (lowercase hex) → body, as SCRIPT LOAD and EVAL fill it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::speed::RunSpeed;

/// Lowercase hex SHA1 of `data` (redis.sha1hex, script names).
pub fn sha1hex(data: &[u8]) -> String {
    crate::hex::lower(&sha1_smol::Sha1::from(data).digest().bytes())
}

/// A cached script: its body and how long its runs take.
#[derive(Debug, Clone)]
pub struct Cached {
    pub sha: String,
    pub body: Arc<[u8]>,
    pub speed: Arc<RunSpeed>,
}

#[derive(Debug, Clone)]
struct Entry {
    body: Arc<[u8]>,
    speed: Arc<RunSpeed>,
}

#[derive(Debug, Default)]
pub struct ScriptCache {
    scripts: Mutex<HashMap<String, Entry>>,
    /// Bumped by SCRIPT FLUSH: Lua states drop their compiled functions.
    generation: AtomicU64,
}

impl ScriptCache {
    /// Adds a body (if new); returns it with its SHA1.
    pub fn insert(&self, body: &[u8]) -> Cached {
        let sha = sha1hex(body);
        let mut scripts = self.scripts.lock();
        let entry = scripts
            .entry(sha.clone())
            .or_insert_with(|| Entry { body: Arc::from(body), speed: Arc::default() })
            .clone();
        Cached { sha, body: entry.body, speed: entry.speed }
    }

    /// The script `sha` (any case).
    pub fn get(&self, sha: &[u8]) -> Option<Cached> {
        if sha.len() != 40 {
            return None;
        }
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        let entry = self.scripts.lock().get(&sha).cloned()?;
        Some(Cached { sha, body: entry.body, speed: entry.speed })
    }

    pub fn contains(&self, sha: &[u8]) -> bool {
        self.get(sha).is_some()
    }

    /// SCRIPT FLUSH.
    pub fn flush(&self) {
        self.scripts.lock().clear();
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// number_of_cached_scripts.
    pub fn len(&self) -> usize {
        self.scripts.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of cached bodies (used_memory_scripts_eval).
    pub fn body_bytes(&self) -> usize {
        self.scripts.lock().iter().map(|(k, v)| k.len() + v.body.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_matches_redis() {
        assert_eq!(sha1hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(sha1hex(b"Pizza & Mandolino"), "74822d82031af7493c20eefa13bd07ec4fada82f");
    }

    #[test]
    fn lookup_ignores_case_and_flush_empties() {
        let cache = ScriptCache::default();
        let sha = cache.insert(b"return 1").sha;
        assert!(cache.contains(sha.to_ascii_uppercase().as_bytes()));
        cache.flush();
        assert!(cache.is_empty());
    }
}
