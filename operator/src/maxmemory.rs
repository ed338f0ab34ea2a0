//! The server's memory limit: `spec.maxmemory` (a Kubernetes quantity, a percentage of
//! `spec.memory`, or `"0"`) resolved into the bytes passed as `--param maxmemory=<bytes>`, with
//! `spec.maxmemoryPolicy` as `--param maxmemory-policy=<policy>`.
//!
//! The pod's memory limit (`spec.memory`, requests = limits) is where the kubelet OOM-kills the
//! server; `maxmemory` is where the server itself starts evicting or refusing writes (`-OOM`).
//! It must sit below the limit because it counts only what the dataset allocates: allocator
//! fragmentation, client and WAL buffers, Lua, thread stacks and the binary come on top. Hence
//! the default, [`cairn_crds::kvstore::DEFAULT_MAXMEMORY`] (75 %).

use cairn_crds::{parse_binary_bytes, parse_quantity_bytes, KVStoreSpec};

use crate::store_contract as sc;

/// Why `spec.maxmemory` (with `spec.memory`) cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MaxmemoryError {
    #[error("maxmemory: {0:?} is not a quantity (800Mi, 1G, 1.5Gi), a percentage of memory (75%) or \"0\" (no limit)")]
    Unparsable(String),
    #[error("maxmemory: {0:?}: a percentage of memory must be between 1% and 100% (\"0\" for no limit)")]
    Percent(String),
    #[error("maxmemory: {maxmemory} ({bytes} bytes) is above memory {memory} ({memory_bytes} bytes), the pod's limit")]
    AboveMemory { maxmemory: String, bytes: u64, memory: String, memory_bytes: u64 },
    #[error("maxmemory: memory {0:?} is not a size like 512Mi or 2Gi")]
    Memory(String),
}

/// The `maxmemory` in bytes for a pod of `memory` (0: no limit).
pub fn maxmemory_bytes(memory: &str, maxmemory: &str) -> Result<u64, MaxmemoryError> {
    let memory_bytes = parse_binary_bytes(memory).map_err(|_| MaxmemoryError::Memory(memory.to_string()))?;
    let bytes = match maxmemory.strip_suffix('%') {
        Some(percent) => {
            if percent.is_empty() || percent.len() > 3 || !percent.bytes().all(|b| b.is_ascii_digit()) {
                return Err(MaxmemoryError::Unparsable(maxmemory.to_string()));
            }
            let percent: u64 = percent.parse().map_err(|_| MaxmemoryError::Unparsable(maxmemory.to_string()))?;
            if !(1..=100).contains(&percent) {
                return Err(MaxmemoryError::Percent(maxmemory.to_string()));
            }
            memory_bytes / 100 * percent + memory_bytes % 100 * percent / 100
        }
        None => parse_quantity_bytes(maxmemory).ok_or_else(|| MaxmemoryError::Unparsable(maxmemory.to_string()))?,
    };
    if bytes > memory_bytes {
        return Err(MaxmemoryError::AboveMemory {
            maxmemory: maxmemory.to_string(),
            bytes,
            memory: memory.to_string(),
            memory_bytes,
        });
    }
    Ok(bytes)
}

/// The CONFIG parameters the operator sets from the spec, as `(name, value)` for the config
/// file's `[params]` table: `maxmemory` in bytes (0: no limit, written too, so that a limit
/// removed from the spec is removed from the running server) and `maxmemory-policy`. The server
/// applies a changed `[params]` without a restart. A spec whose maxmemory is invalid gets 0 here;
/// [`crate::validate::resolve`] refuses it before anything is built.
pub fn server_params(spec: &KVStoreSpec) -> Vec<(&'static str, String)> {
    let bytes = maxmemory_bytes(&spec.memory, &spec.maxmemory).unwrap_or(0);
    vec![
        (sc::PARAM_MAXMEMORY, bytes.to_string()),
        (sc::PARAM_MAXMEMORY_POLICY, spec.maxmemory_policy.as_str().to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_crds::MaxmemoryPolicy;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    #[test]
    fn a_percentage_is_of_memory() {
        assert_eq!(maxmemory_bytes("1Gi", "75%"), Ok(GIB / 4 * 3));
        assert_eq!(maxmemory_bytes("512Mi", "75%"), Ok(384 * MIB));
        assert_eq!(maxmemory_bytes("16Gi", "100%"), Ok(16 * GIB));
        assert_eq!(maxmemory_bytes("1Mi", "1%"), Ok(MIB / 100));
        // No overflow at the largest memory the schema takes.
        assert_eq!(maxmemory_bytes("999999999Ti", "100%"), Ok(999_999_999u64 << 40));
        for bad in ["0%", "101%", "%", "7.5%", "-5%", "1000%"] {
            assert!(maxmemory_bytes("1Gi", bad).is_err(), "{bad} accepted");
        }
        assert!(matches!(maxmemory_bytes("1Gi", "101%"), Err(MaxmemoryError::Percent(_))));
    }

    #[test]
    fn a_quantity_must_fit_in_memory() {
        assert_eq!(maxmemory_bytes("1Gi", "800Mi"), Ok(800 * MIB));
        assert_eq!(maxmemory_bytes("1Gi", "1Gi"), Ok(GIB));
        assert_eq!(maxmemory_bytes("1Gi", "1G"), Ok(1_000_000_000));
        assert_eq!(maxmemory_bytes("1Gi", "0"), Ok(0));
        let err = maxmemory_bytes("1Gi", "1025Mi").expect_err("above memory");
        assert!(matches!(err, MaxmemoryError::AboveMemory { bytes, .. } if bytes == 1025 * MIB), "{err}");
        assert!(err.to_string().contains("above memory 1Gi"), "{err}");
        assert_eq!(maxmemory_bytes("1Gi", "lots"), Err(MaxmemoryError::Unparsable("lots".into())));
        assert_eq!(maxmemory_bytes("lots", "75%"), Err(MaxmemoryError::Memory("lots".into())));
    }

    #[test]
    fn params_are_the_bytes_and_the_policy() {
        let mut spec = crate::testdata::store("demo").spec;
        assert_eq!(
            server_params(&spec),
            vec![("maxmemory", (GIB / 4 * 3).to_string()), ("maxmemory-policy", "noeviction".to_string())]
        );
        spec.maxmemory = "0".into();
        spec.maxmemory_policy = MaxmemoryPolicy::AllkeysLru;
        assert_eq!(
            server_params(&spec),
            vec![("maxmemory", "0".to_string()), ("maxmemory-policy", "allkeys-lru".to_string())]
        );
    }
}
