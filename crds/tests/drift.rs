//! The committed CRD YAML (crds/yaml/ and the Helm chart's crds/) must equal what the code
//! generates. Regenerate with `cargo run -p cairn-crds --bin crdgen -- --out crds/yaml` and copy
//! into `charts/cairn-operator/crds/` (e2e/k8s/regen-crds.sh does both).

use std::path::Path;

#[test]
fn committed_crd_yaml_matches_the_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let chart = root.join("../charts/cairn-operator/crds");
    for (file, crd) in cairn_crds::crds() {
        let generated = cairn_crds::render_yaml(&crd).expect("render");
        for dir in [root.join("yaml"), chart.clone()] {
            let path = dir.join(file);
            let committed =
                std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            assert!(committed == generated, "{} drifted from the code: run e2e/k8s/regen-crds.sh", path.display());
        }
    }
}

#[test]
fn crds_carry_the_validation_rules_and_columns() {
    let all = serde_json::to_string(&cairn_crds::crds()).expect("json");
    for needle in [
        "replicas must be 1 until Cairn supports replication",
        "replicas must be at least 1",
        "durability must be none, async, everysec or sync",
        "storage.storageClassName is immutable",
        "storage.size can only grow",
        "cpus must be a whole number of cores",
        "maxmemory must not exceed memory",
        "a benchmark's spec is immutable",
        "\"Fsync class\"",
        "\"shortNames\":[\"kvs\",\"cairn\"]",
    ] {
        assert!(all.contains(needle), "CRDs lack {needle}");
    }
}

#[test]
fn crd_yaml_reads_the_same_in_yaml_1_1() {
    // kubectl (go-yaml) reads YAML 1.1: an unquoted `no`/`yes` in an enum or a default would be
    // a boolean there, and the API server would refuse the CRD (a string field's default false).
    for (file, crd) in cairn_crds::crds() {
        let yaml = cairn_crds::render_yaml(&crd).expect("render");
        assert_eq!(cairn_crds::yaml11::quote_booleans(&yaml), yaml, "{file} has a plain YAML 1.1 boolean word");
        if file.starts_with("kvstores") {
            assert!(yaml.contains("default: 'no'") && yaml.contains("- 'yes'"), "{file}: authClients quoted");
        }
    }
}
