//! The names of `spec.config`'s `[params]` table as the server reads them: case-insensitive, an
//! alias as its parameter (`lua-time-limit` is `busy-reply-threshold`), from the store contract's
//! lists ([`sc::LIVE_PARAMS`], [`sc::NOT_LIVE_PARAMS`], [`sc::PARAM_ALIASES`]). Says whether the
//! server applies a parameter live, and what in a `[params]` table the server would refuse (it
//! would not start): a name it does not know (with the nearest it knows, for a typo), a parameter
//! `[params]` may not set, a value that is not a string, number or boolean, a parameter given twice.

use crate::store_contract as sc;

/// What the server makes of a `[params]` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamName {
    /// A parameter it applies live (its canonical name).
    Live(&'static str),
    /// A parameter `[params]` may not set (its canonical name), and why.
    NotSettable { name: &'static str, why: &'static str },
    /// No parameter of the server.
    Unknown,
}

/// What the server makes of `name` (any case, or an alias).
pub fn classify(name: &str) -> ParamName {
    let lower = name.to_ascii_lowercase();
    let canonical = sc::PARAM_ALIASES.iter().find(|(alias, _)| *alias == lower).map_or(lower.as_str(), |(_, c)| *c);
    if let Some(live) = sc::LIVE_PARAMS.iter().find(|p| **p == canonical) {
        return ParamName::Live(live);
    }
    match sc::NOT_LIVE_PARAMS.iter().find(|(p, _)| *p == canonical) {
        Some((name, why)) => ParamName::NotSettable { name, why },
        None => ParamName::Unknown,
    }
}

/// The name the server keys `name` by: its parameter's canonical name, or `name` in lowercase.
pub fn canonical(name: &str) -> String {
    match classify(name) {
        ParamName::Live(name) | ParamName::NotSettable { name, .. } => name.to_string(),
        ParamName::Unknown => name.to_ascii_lowercase(),
    }
}

/// Whether the server applies a change of `name`'s value without a restart.
pub fn is_live(name: &str) -> bool {
    matches!(classify(name), ParamName::Live(_))
}

/// The value the server takes from a `[params]` entry (as CONFIG SET's argument): a string as it
/// is, a number in decimal, a boolean as `yes`/`no`; `None` for an array, a table or a date.
pub fn server_value(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(n) => Some(n.to_string()),
        toml::Value::Float(x) => Some(x.to_string()),
        toml::Value::Boolean(b) => Some(if *b { "yes" } else { "no" }.to_string()),
        toml::Value::Datetime(_) | toml::Value::Array(_) | toml::Value::Table(_) => None,
    }
}

/// The problems of a `[params]` table that the server would refuse (at start: the pod would not
/// run). The parameters the operator sets from the spec are [`crate::config_file::problems`]'s.
pub fn problems(params: &toml::Table) -> Vec<String> {
    let table = sc::CONFIG_PARAMS_TABLE;
    let mut problems = Vec::new();
    let mut seen: Vec<(String, &str)> = Vec::new();
    for (name, value) in params {
        match classify(name) {
            ParamName::Unknown => problems.push(format!(
                "config: [{table}] {name}: the server has no such parameter (the nearest it has: {})",
                nearest(name)
            )),
            ParamName::NotSettable { why, .. } => {
                problems.push(format!("config: [{table}] {name} cannot be set in [{table}]: {why}"))
            }
            ParamName::Live(_) => {}
        }
        if server_value(value).is_none() {
            problems.push(format!(
                "config: [{table}] {name}: the value is of type {}, not a string, number or boolean",
                value.type_str()
            ));
        }
        let key = canonical(name);
        match seen.iter().find(|(k, _)| *k == key) {
            Some((_, first)) => {
                problems.push(format!("config: [{table}] {first} and {name} both set {key} (names ignore case)"))
            }
            None => seen.push((key, name)),
        }
    }
    problems
}

/// The parameter name the server knows that is nearest to `name` (fewest single-character edits;
/// the first in the contract's order on a tie): what a typo most likely meant.
pub fn nearest(name: &str) -> &'static str {
    let lower = name.to_ascii_lowercase();
    let known = sc::LIVE_PARAMS
        .iter()
        .copied()
        .chain(sc::NOT_LIVE_PARAMS.iter().map(|(n, _)| *n))
        .chain(sc::PARAM_ALIASES.iter().map(|(alias, _)| *alias));
    // The lists are not empty; "" only if they were.
    known.min_by_key(|candidate| edit_distance(&lower, candidate)).unwrap_or_default()
}

/// Levenshtein distance between two names (bytes: parameter names are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().expect("TOML")
    }

    #[test]
    fn names_ignore_case_and_aliases_are_their_parameter() {
        assert_eq!(classify("HZ"), ParamName::Live("hz"));
        assert_eq!(classify("Lua-Time-Limit"), ParamName::Live("busy-reply-threshold"));
        assert!(matches!(classify("Port"), ParamName::NotSettable { name: "port", .. }));
        assert!(matches!(classify("slaveof"), ParamName::NotSettable { name: "replicaof", .. }));
        assert_eq!(classify("no-such-thing"), ParamName::Unknown);
        assert_eq!(canonical("MIN-SLAVES-MAX-LAG"), "min-replicas-max-lag");
        assert_eq!(canonical("No-Such"), "no-such");
        assert!(is_live("Timeout") && is_live("maxmemory-clients"));
        assert!(!is_live("databases") && !is_live("appendfilename") && !is_live("nope"));
    }

    #[test]
    fn a_typo_names_the_nearest_known_parameter() {
        assert_eq!(nearest("maxmemory-sample"), "maxmemory-samples");
        assert_eq!(nearest("TIMEOT"), "timeout");
        assert_eq!(nearest("lazyfree-lazy-user-delete"), "lazyfree-lazy-user-del");
        assert_eq!(nearest("notify-keyspace-event"), "notify-keyspace-events");
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn server_values_are_config_set_arguments() {
        let t = table("a = \"1mb\"\nb = 20\nc = true\nd = false\ne = 0.5\nf = [1]\ng = { x = 1 }\n");
        let values: Vec<Option<String>> = t.values().map(server_value).collect();
        let want = [Some("1mb"), Some("20"), Some("yes"), Some("no"), Some("0.5"), None, None];
        assert_eq!(values, want.map(|v| v.map(String::from)));
    }

    #[test]
    fn what_the_server_would_refuse_is_a_problem() {
        assert!(problems(&table("hz = 20\nTimeout = 300\nlua-time-limit = 100\nsave = \"\"\n")).is_empty());
        let typo = problems(&table("maxmemory-sample = 7\n"));
        assert_eq!(
            typo,
            ["config: [params] maxmemory-sample: the server has no such parameter (the nearest it has: maxmemory-samples)"]
        );
        let own = problems(&table("port = 7000\ndatabases = 4\nappendfilename = \"x\"\n"));
        assert_eq!(own.len(), 3, "{own:?}");
        assert!(own.iter().any(|p| p.contains("appendfilename cannot be set in [params]") && p.contains("immutable")));
        assert!(own.iter().any(|p| p.contains("databases cannot be set") && p.contains("top level")), "{own:?}");
        assert!(own.iter().any(|p| p.contains("port cannot be set") && p.contains("spec.ports.resp")), "{own:?}");
        assert_eq!(
            problems(&table("save = [900, 1]\n")),
            ["config: [params] save: the value is of type array, not a string, number or boolean"]
        );
        let twice = problems(&table("busy-reply-threshold = 1\nlua-time-limit = 2\n"));
        assert_eq!(twice, ["config: [params] busy-reply-threshold and lua-time-limit both set busy-reply-threshold (names ignore case)"]);
        assert_eq!(problems(&table("hz = 1\nHZ = 2\n")).len(), 1);
    }
}
