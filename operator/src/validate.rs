//! Checks of a `KVStore` spec beyond what the CRD schema enforces (or for API servers that do
//! not evaluate its CEL rules), resolving it into the values the builders use.
//!
//! An invalid spec is not an error of the controller: the reconciler reports it in the status
//! (Degraded, reason `InvalidSpec`) and an Event, and waits for the next change.

use cairn_crds::{parse_binary_bytes, KVStore};

use crate::maxmemory::{maxmemory_bytes, MaxmemoryError};
use crate::sizing::{plan_volume, SizingInput, VolumePlan};

/// Longest store name: pods are `<name>-<ordinal>` and the StatefulSet adds a revision label.
pub const MAX_NAME_LEN: usize = 52;

/// A spec the operator cannot run, with a message for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidSpec(pub String);

/// What a valid spec resolves to.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub volume: VolumePlan,
    pub memory_bytes: u64,
    /// The server's `maxmemory` in bytes (0: no limit), from `spec.maxmemory`.
    pub maxmemory_bytes: u64,
}

/// Validates a store's spec and chooses its volume.
pub fn resolve(store: &KVStore) -> Result<Resolved, InvalidSpec> {
    let spec = &store.spec;
    let name = store.metadata.name.as_deref().unwrap_or_default();
    let mut problems = Vec::new();
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        problems.push(format!("metadata.name must have 1 to {MAX_NAME_LEN} characters"));
    }
    if spec.replicas != 1 {
        problems.push(format!("replicas is {}: it must be 1 until Cairn supports replication", spec.replicas));
    }
    if !(1..=256).contains(&spec.cpus) {
        problems.push(format!("cpus is {}: it must be a whole number of cores between 1 and 256", spec.cpus));
    }
    if spec.tls_secret.is_some() && !crate::store_contract::tls_supported() {
        problems.push(
            "tlsSecret is set but the Cairn server does not support TLS yet: remove it (the operator will not \
             serve plaintext to a store that asked for TLS)"
                .to_string(),
        );
    }
    if spec.image.trim().is_empty() {
        problems.push("image must not be empty".to_string());
    }
    let ports = [spec.ports.resp, spec.ports.native, spec.ports.admin];
    if ports.iter().any(|p| !(1..=65535).contains(p)) {
        problems.push("ports must be between 1 and 65535".to_string());
    } else if ports[0] == ports[1] || ports[0] == ports[2] || ports[1] == ports[2] {
        problems.push("ports.resp, ports.native and ports.admin must differ".to_string());
    }
    let memory_bytes = parse_binary_bytes(&spec.memory).map_err(|e| problems.push(format!("memory: {e}"))).unwrap_or(0);
    let maxmemory_bytes = match maxmemory_bytes(&spec.memory, &spec.maxmemory) {
        Ok(bytes) => bytes,
        // The memory's own problem is reported above.
        Err(MaxmemoryError::Memory(_)) => 0,
        Err(e) => {
            problems.push(e.to_string());
            0
        }
    };
    if let Some(config) = &spec.config {
        problems.extend(crate::config_file::problems(config));
    }
    let requested = match &spec.storage.size {
        Some(size) => parse_binary_bytes(size).map(|bytes| Some((size.clone(), bytes))).unwrap_or_else(|e| {
            problems.push(format!("storage.size: {e}"));
            None
        }),
        None => None,
    };
    let expected_data_bytes = match &spec.storage.expected_data_size {
        Some(size) => parse_binary_bytes(size).map(Some).unwrap_or_else(|e| {
            problems.push(format!("storage.expectedDataSize: {e}"));
            None
        }),
        None => None,
    };
    if !problems.is_empty() {
        return Err(InvalidSpec(problems.join("; ")));
    }
    let volume = plan_volume(&SizingInput {
        fsync_class: spec.fsync_class,
        durability: spec.durability,
        target_acks_per_sec: spec.storage.target_acks_per_second,
        expected_data_bytes,
        requested,
        storage_class: spec.storage.storage_class_name.clone(),
    });
    Ok(Resolved { volume, memory_bytes, maxmemory_bytes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::store;

    #[test]
    fn the_default_spec_is_valid() {
        let resolved = resolve(&store("demo")).expect("valid");
        assert_eq!(resolved.volume.size, "10Gi");
        assert_eq!(resolved.memory_bytes, 1 << 30);
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let mut s = store("demo");
        s.spec.replicas = 3;
        s.spec.cpus = 0;
        s.spec.memory = "lots".into();
        s.spec.ports.native = s.spec.ports.resp;
        let err = resolve(&s).expect_err("invalid").0;
        for needle in ["replicas is 3", "cpus is 0", "memory:", "must differ"] {
            assert!(err.contains(needle), "{err}");
        }
    }

    #[test]
    fn tls_is_refused_while_the_server_has_none() {
        let mut s = store("demo");
        s.spec.tls_secret =
            Some(cairn_crds::TlsSecretRef { name: "demo-tls".into(), auth_clients: Default::default() });
        let result = resolve(&s);
        assert_eq!(result.is_ok(), crate::store_contract::tls_supported());
        if let Err(InvalidSpec(message)) = result {
            assert!(message.contains("does not support TLS"), "{message}");
        }
    }

    #[test]
    fn maxmemory_defaults_to_three_quarters_of_memory() {
        let mut s = store("demo");
        assert_eq!(resolve(&s).expect("valid").maxmemory_bytes, 3 << 28);
        s.spec.memory = "4Gi".into();
        s.spec.maxmemory = "3G".into();
        assert_eq!(resolve(&s).expect("valid").maxmemory_bytes, 3_000_000_000);
        s.spec.maxmemory = "0".into();
        assert_eq!(resolve(&s).expect("valid").maxmemory_bytes, 0);
    }

    #[test]
    fn a_bad_maxmemory_is_rejected() {
        for (maxmemory, needle) in [
            ("lots", "is not a quantity"),
            ("150%", "between 1% and 100%"),
            ("0%", "between 1% and 100%"),
            ("2Gi", "above memory 1Gi"),
            ("1.1G", "above memory 1Gi"),
        ] {
            let mut s = store("demo");
            s.spec.maxmemory = maxmemory.into();
            let err = resolve(&s).expect_err(maxmemory).0;
            assert!(err.contains(needle) && err.starts_with("maxmemory: "), "{maxmemory}: {err}");
        }
        // A bad memory is reported once, as memory's problem.
        let mut s = store("demo");
        s.spec.memory = "lots".into();
        let err = resolve(&s).expect_err("invalid").0;
        assert!(err.starts_with("memory: ") && !err.contains("maxmemory"), "{err}");
    }

    #[test]
    fn the_config_must_leave_maxmemory_to_the_spec() {
        let mut s = store("demo");
        s.spec.config = Some("maxclients = 100\n[params]\nhz = 20\n".into());
        assert!(resolve(&s).is_ok());
        s.spec.config = Some("[params]\nmaxmemory = \"1gb\"\nmaxmemory-policy = \"allkeys-lru\"\n".into());
        let err = resolve(&s).expect_err("invalid").0;
        assert!(err.contains("sets maxmemory") && err.contains("use spec.maxmemory instead"), "{err}");
        assert!(err.contains("sets maxmemory-policy") && err.contains("use spec.maxmemoryPolicy instead"), "{err}");
        s.spec.config = Some("maxclients = [\n".into());
        let err = resolve(&s).expect_err("invalid").0;
        assert!(err.starts_with("config: not valid TOML"), "{err}");
    }

    #[test]
    fn a_params_name_the_server_would_refuse_is_rejected() {
        let mut s = store("demo");
        s.spec.config = Some("[params]\nTimeout = 300\nmaxmemory-clients = \"5%\"\n".into());
        assert!(resolve(&s).is_ok(), "live parameters, any case");
        s.spec.config = Some("[params]\ntimout = 300\nmaxmemory = \"1gb\"\n".into());
        let err = resolve(&s).expect_err("invalid").0;
        assert!(
            err.contains("[params] timout: the server has no such parameter (the nearest it has: timeout)"),
            "{err}"
        );
        assert!(err.contains("use spec.maxmemory instead"), "the existing refusal is kept: {err}");
        s.spec.config = Some("[params]\ndatabases = 4\n".into());
        let err = resolve(&s).expect_err("invalid").0;
        assert!(err.contains("[params] databases cannot be set in [params]"), "{err}");
    }

    #[test]
    fn a_long_name_is_rejected() {
        let err = resolve(&store(&"x".repeat(53))).expect_err("invalid").0;
        assert!(err.contains("metadata.name"), "{err}");
    }
}
