//! What a change of the config file does to a running store: which part of `spec.config` needs a
//! restart ([`restart_part`], hashed into the pod template, so that a change of it rolls the
//! pods), and which parameters a new version of the file changed in the running server without
//! one ([`applied_live`], reported in a `ConfigAppliedLive` Event).
//!
//! The server rereads its mounted config file and applies changed `[params]` values with one
//! CONFIG SET (`store/server/src/config_reload/`) for the parameters [`crate::params::is_live`]
//! names. So the restart part leaves out their values, but keeps their names: a parameter removed
//! from the file keeps its value in the running server, so adding or removing one rolls the pods
//! (the new pod starts from the file as it is). Parameter names compare as the server reads them
//! (case-insensitive, an alias as its parameter). Settings outside `[params]` are read at start
//! only: any change of them rolls the pods.

use std::fmt::Write as _;

use cairn_crds::KVStore;

use crate::params;
use crate::store_contract as sc;

/// What a change of needs a restart. When `spec.config` has no live `[params]` entry, its text
/// as written (as before live parameters were left out: an operator upgrade does not roll such a
/// store). Otherwise a canonical form of its TOML (keys sorted, parameter names canonical), with
/// the values of the live parameters left out. Text that is not TOML is taken as written (the
/// spec is refused anyway).
pub fn restart_part(store: &KVStore) -> String {
    let text = store.spec.config.as_deref().unwrap_or_default();
    let Ok(table) = text.parse::<toml::Table>() else {
        return text.to_string();
    };
    let params = table.get(sc::CONFIG_PARAMS_TABLE).and_then(toml::Value::as_table);
    if !params.is_some_and(|p| p.keys().any(|name| params::is_live(name))) {
        return text.to_string();
    }
    let mut out = String::new();
    for (key, value) in sorted(&table) {
        match value.as_table().filter(|_| key == sc::CONFIG_PARAMS_TABLE) {
            Some(params) => write_params(&mut out, params),
            None => {
                let _ = write!(out, "{key:?}=");
                write_value(&mut out, value);
                out.push('\n');
            }
        }
    }
    out
}

/// The canonical names of the live parameters whose values differ between two versions of the
/// config file (the ConfigMap's text, the operator's parameters included), in name order, when
/// the pods do not restart for the change (`hash_before` and `hash_after`, the pod template's
/// config hashes, are equal): empty otherwise, or when there was no earlier version.
pub fn applied_live(before: &str, after: &str, hash_before: Option<&str>, hash_after: Option<&str>) -> Vec<String> {
    if hash_before.is_none() || hash_before != hash_after {
        return Vec::new();
    }
    let (before, after) = (live_values(before), live_values(after));
    let mut changed: Vec<String> = after
        .iter()
        .filter(|(name, value)| before.iter().any(|(n, v)| n == name && v != value))
        .map(|(name, _)| name.clone())
        .collect();
    changed.sort();
    changed.dedup();
    changed
}

/// The note of the Event reporting [`applied_live`]'s parameters (`None`: there are none).
pub fn applied_live_note(names: &[String]) -> Option<String> {
    (!names.is_empty()).then(|| {
        format!(
            "config: {} changed without restart (each server applies it when it rereads its config file, once \
             the kubelet has refreshed the ConfigMap, within about a minute; a value a server refuses is not \
             applied: alert CairnConfigReloadFailed, cairn_config_reloads_total{{result=\"failed\"}})",
            names.join(", ")
        )
    })
}

/// `(canonical name, value as the server takes it)` of the live entries of a file's `[params]`.
fn live_values(text: &str) -> Vec<(String, Option<String>)> {
    let table = text.parse::<toml::Table>().unwrap_or_default();
    let Some(params) = table.get(sc::CONFIG_PARAMS_TABLE).and_then(toml::Value::as_table) else {
        return Vec::new();
    };
    params
        .iter()
        .filter(|(name, _)| params::is_live(name))
        .map(|(name, value)| (params::canonical(name), params::server_value(value)))
        .collect()
}

/// `[params]` in the restart part: a live parameter by name only, any other with its value.
fn write_params(out: &mut String, params: &toml::Table) {
    let mut entries: Vec<(String, Option<&toml::Value>)> = params
        .iter()
        .map(|(name, value)| (params::canonical(name), (!params::is_live(name)).then_some(value)))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, value) in entries {
        let _ = write!(out, "[{}]{name:?}", sc::CONFIG_PARAMS_TABLE);
        if let Some(value) = value {
            out.push('=');
            write_value(out, value);
        }
        out.push('\n');
    }
}

/// A value with its tables' keys sorted (whatever order the TOML map keeps).
fn write_value(out: &mut String, value: &toml::Value) {
    match value {
        toml::Value::Table(table) => {
            out.push('{');
            for (key, value) in sorted(table) {
                let _ = write!(out, "{key:?}=");
                write_value(out, value);
                out.push(',');
            }
            out.push('}');
        }
        toml::Value::Array(items) => {
            out.push('[');
            for item in items {
                write_value(out, item);
                out.push(',');
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn sorted(table: &toml::Table) -> Vec<(&String, &toml::Value)> {
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::store;

    fn part(config: &str) -> String {
        let mut s = store("demo");
        s.spec.config = Some(config.into());
        restart_part(&s)
    }

    #[test]
    fn a_live_parameters_value_needs_no_restart() {
        let base = part("maxclients = 100\n[params]\nhz = 20\ntimeout = 300\n");
        assert_eq!(base, part("maxclients = 100\n[params]\nhz = 50\ntimeout = 0\n"));
        assert_eq!(base, part("maxclients = 100\n[params]\ntimeout = \"7\"\nhz = 1 # comment\n"), "order, comments");
        assert!(!base.contains("300") && !base.contains("20"), "{base}");
    }

    #[test]
    fn names_compare_as_the_server_reads_them() {
        let base = part("[params]\nhz = 20\nbusy-reply-threshold = 100\n");
        assert_eq!(base, part("[params]\nHZ = 30\nLua-Time-Limit = 200\n"));
    }

    #[test]
    fn adding_or_removing_a_live_parameter_needs_a_restart() {
        let base = part("[params]\nhz = 20\n");
        assert_ne!(base, part("[params]\nhz = 20\ntimeout = 300\n"));
        assert_ne!(base, part("[params]\ntimeout = 300\n"));
        assert_ne!(base, part(""));
    }

    #[test]
    fn anything_else_needs_a_restart() {
        let base = part("maxclients = 100\n[params]\nhz = 20\n");
        assert_ne!(base, part("maxclients = 200\n[params]\nhz = 20\n"), "a top-level setting");
        assert_ne!(base, part("maxclients = 100\ndatabases = 4\n[params]\nhz = 20\n"), "a setting added");
        // A parameter the server does not apply live (the spec is refused, but it still rolls).
        let with = |v: u32| part(&format!("[params]\nhz = 20\ndatabases = {v}\n"));
        assert_ne!(with(4), with(8));
        let unknown = |v: u32| part(&format!("[params]\nhz = 20\nno-such = {v}\n"));
        assert_ne!(unknown(1), unknown(2));
    }

    #[test]
    fn without_live_parameters_the_text_is_as_written() {
        assert_eq!(part("maxclients = 100 # a comment\n"), "maxclients = 100 # a comment\n");
        assert_eq!(part("[params]\ndatabases = 4\n"), "[params]\ndatabases = 4\n");
        assert_eq!(part("maxclients = [\n"), "maxclients = [\n");
        assert_eq!(restart_part(&store("demo")), "");
    }

    #[test]
    fn nested_tables_are_sorted() {
        let a = part("[params]\nhz = 1\n[x]\nb = 1\na = { d = 1, c = [2, 3] }\n");
        assert_eq!(a, part("[x]\na = { c = [2, 3], d = 1 }\nb = 1\n[params]\nhz = 9\n"));
        assert_ne!(a, part("[params]\nhz = 1\n[x]\nb = 1\na = { d = 1, c = [3, 2] }\n"));
    }

    #[test]
    fn live_changes_are_reported_only_when_the_pods_do_not_roll() {
        let before = "[params]\nhz = 20\ntimeout = 300\nmaxmemory = \"100\"\nslowlog-max-len = 5\n";
        let after = "[params]\nHZ = 20\ntimeout = 600\nmaxmemory = \"200\"\nslowlog-max-len = \"5\"\n";
        let same = Some("abc");
        assert_eq!(applied_live(before, after, same, same), ["maxmemory", "timeout"]);
        assert!(applied_live(before, after, same, Some("def")).is_empty(), "the pods roll");
        assert!(applied_live(before, after, None, same).is_empty(), "no earlier pods");
        assert!(applied_live(before, before, same, same).is_empty());
        assert!(applied_live("", after, same, same).is_empty(), "names added roll, they are not live");
        let aliases =
            applied_live("[params]\nlua-time-limit = 1\n", "[params]\nbusy-reply-threshold = 2\n", same, same);
        assert_eq!(aliases, ["busy-reply-threshold"]);
    }

    #[test]
    fn the_note_names_the_parameters() {
        assert_eq!(applied_live_note(&[]), None);
        let note = applied_live_note(&["maxmemory-clients".into(), "timeout".into()]).expect("a note");
        assert!(note.starts_with("config: maxmemory-clients, timeout changed without restart"), "{note}");
    }
}
