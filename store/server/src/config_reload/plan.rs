//! What a new version of the config file asks for, compared with the last
//! version applied (pure: no server, no I/O).
//!
//! - `[params]` entries whose value differs from the last applied file
//!   value are set (all in one CONFIG SET), unless `--param` sets them: the
//!   command line wins, as at start.
//! - An entry removed from the file keeps the value in use.
//! - Other top-level settings (`port`, `durability`, `threads`, ...) are
//!   read at start only: a change is reported, for the next restart.

use super::version::FileVersion;

/// The changes between two versions of the file.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Parameters to set, `(canonical name, value)`, in name order.
    pub set: Vec<(String, String)>,
    /// Parameters no longer in the file: they keep their current values.
    pub kept: Vec<String>,
    /// Parameters the file changes (or removes) but `--param` sets.
    pub ignored: Vec<String>,
    /// Top-level settings added, changed or removed (they need a restart).
    pub restart: Vec<String>,
}

/// Compares `next` with `applied`; `flag_owned` holds the canonical names
/// `--param` sets.
pub fn plan(applied: &FileVersion, next: &FileVersion, flag_owned: &[String]) -> Plan {
    let owned = |name: &str| flag_owned.iter().any(|o| o == name);
    let mut plan = Plan::default();
    for (name, value) in &next.params {
        if applied.params.get(name) == Some(value) {
            continue;
        }
        match owned(name) {
            true => plan.ignored.push(name.clone()),
            false => plan.set.push((name.clone(), value.clone())),
        }
    }
    for name in applied.params.keys().filter(|n| !next.params.contains_key(*n)) {
        match owned(name) {
            true => plan.ignored.push(name.clone()),
            false => plan.kept.push(name.clone()),
        }
    }
    plan.ignored.sort();
    plan.restart = changed_keys(&applied.settings, &next.settings);
    plan
}

/// Keys present in one map only, or with different values.
fn changed_keys<V: PartialEq>(
    before: &std::collections::BTreeMap<String, V>,
    after: &std::collections::BTreeMap<String, V>,
) -> Vec<String> {
    let mut keys: Vec<String> =
        before.keys().chain(after.keys()).filter(|k| before.get(*k) != after.get(*k)).cloned().collect();
    keys.sort();
    keys.dedup();
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(text: &str) -> FileVersion {
        FileVersion::parse(text).expect("valid")
    }

    fn owned(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn only_changed_values_are_set() {
        let applied = version("[params]\nmaxmemory = \"1mb\"\nhz = 10\n");
        let next = version("[params]\nmaxmemory = \"2mb\"\nhz = 10\nmaxmemory-policy = \"allkeys-lru\"\n");
        let plan = plan(&applied, &next, &[]);
        let set = [("maxmemory".to_string(), "2mb".to_string()), ("maxmemory-policy".into(), "allkeys-lru".into())];
        assert_eq!(plan, Plan { set: set.to_vec(), ..Plan::default() });
    }

    #[test]
    fn the_same_version_sets_nothing() {
        let applied = version("port = 1\n[params]\nmaxmemory = \"1mb\"\n");
        assert_eq!(plan(&applied, &applied.clone(), &[]), Plan::default());
    }

    #[test]
    fn removed_parameters_keep_their_values() {
        let applied = version("[params]\nmaxmemory = \"1mb\"\nhz = 20\n");
        let next = version("[params]\nhz = 20\n");
        assert_eq!(plan(&applied, &next, &[]), Plan { kept: owned(&["maxmemory"]), ..Plan::default() });
    }

    #[test]
    fn parameters_the_command_line_sets_are_ignored() {
        let applied = version("[params]\nmaxmemory = \"1mb\"\nhz = 20\n");
        let next = version("[params]\nmaxmemory = \"9mb\"\nmaxmemory-samples = 7\n");
        let plan = plan(&applied, &next, &owned(&["maxmemory", "hz", "maxmemory-samples"]));
        assert_eq!(plan, Plan { ignored: owned(&["hz", "maxmemory", "maxmemory-samples"]), ..Plan::default() });
    }

    #[test]
    fn aliases_compare_as_their_canonical_name() {
        let applied = version("[params]\nlua-time-limit = 100\n");
        let next = version("[params]\nbusy-reply-threshold = 100\n");
        assert_eq!(plan(&applied, &next, &[]), Plan::default());
        let owned_by_alias = owned(&[super::super::version::canonical("lua-time-limit").as_str()]);
        let next = version("[params]\nbusy-reply-threshold = 200\n");
        assert_eq!(plan(&applied, &next, &owned_by_alias).ignored, ["busy-reply-threshold"]);
    }

    #[test]
    fn top_level_changes_are_for_the_next_restart() {
        let applied = version("port = 7000\nthreads = 2\ndurability = \"sync\"\n");
        let next = version("port = 7001\nthreads = 2\nbind = \"0.0.0.0\"\n[params]\nhz = 20\n");
        let plan = plan(&applied, &next, &[]);
        assert_eq!(plan.restart, ["bind", "durability", "port"]);
        assert_eq!(plan.set, [("hz".to_string(), "20".to_string())]);
    }
}
