//! The server's config file as the operator writes it into the store's ConfigMap: the user's
//! `spec.config` (TOML, the server's config file format) with the CONFIG parameters the operator
//! sets from the spec (`maxmemory`, `maxmemory-policy`: [`crate::maxmemory::server_params`])
//! merged into its `[params]` table.
//!
//! The server rereads its mounted config file (`--config-reload-interval 5s`, which the operator
//! passes and refuses in `spec.config`, after
//! the kubelet has refreshed the ConfigMap volume) and applies a changed `[params]` table
//! without a restart. So the pod template carries a hash of the part of `spec.config` that needs
//! a restart only ([`crate::config_change::restart_part`]): a change of `spec.maxmemory`,
//! `spec.maxmemoryPolicy` or of a live parameter's value in `[params]` reaches the running server
//! in place, any other change of the file rolls the pod.

use cairn_crds::KVStore;

use crate::store_contract as sc;

/// The first line of the file, for whoever reads the ConfigMap.
const HEADER: &str = "# Written by the Cairn operator: spec.config, with [params] maxmemory and maxmemory-policy \
                      from spec.maxmemory and spec.maxmemoryPolicy.\n";

/// Problems of a `spec.config`: not TOML, a `params` key that is not a table, a `[params]`
/// entry the operator sets from the spec (names case-insensitive, as the server reads them), or
/// one the server would refuse ([`crate::params::problems`]: unknown, not settable there, ...).
pub fn problems(config: &str) -> Vec<String> {
    let table = match config.parse::<toml::Table>() {
        Ok(table) => table,
        Err(e) => return vec![format!("config: not valid TOML: {}", one_line(&e.to_string()))],
    };
    let mut problems = Vec::new();
    if table.keys().any(|k| k.eq_ignore_ascii_case(sc::CONFIG_RELOAD_INTERVAL_KEY)) {
        problems.push(format!(
            "config: {} is set by the operator (spec.maxmemory changes reach the server through it)",
            sc::CONFIG_RELOAD_INTERVAL_KEY
        ));
    }
    let Some(params) = table.get(sc::CONFIG_PARAMS_TABLE) else {
        return problems;
    };
    let Some(params) = params.as_table() else {
        problems.push(format!("config: {} must be a table ([{0}])", sc::CONFIG_PARAMS_TABLE));
        return problems;
    };
    let owned = [(sc::PARAM_MAXMEMORY, "spec.maxmemory"), (sc::PARAM_MAXMEMORY_POLICY, "spec.maxmemoryPolicy")];
    let owned_set = params
        .keys()
        .filter_map(|name| owned.iter().find(|(param, _)| name.eq_ignore_ascii_case(param)))
        .map(|(param, field)| {
            format!(
                "config: [{}] sets {param}, which the operator sets from {field}: use {field} instead",
                sc::CONFIG_PARAMS_TABLE
            )
        });
    problems.extend(owned_set);
    problems.extend(crate::params::problems(params));
    problems
}

/// The file's text: `spec.config` with the operator's parameters in `[params]`. A spec whose
/// config has [`problems`] is refused before anything is built; here its TOML is taken as empty.
pub fn text(store: &KVStore) -> String {
    let mut table = user_table(store);
    let params = table.entry(sc::CONFIG_PARAMS_TABLE).or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if !params.is_table() {
        *params = toml::Value::Table(toml::Table::new());
    }
    if let Some(params) = params.as_table_mut() {
        for (name, value) in crate::maxmemory::server_params(&store.spec) {
            params.insert(name.to_string(), toml::Value::String(value));
        }
    }
    // A table of strings, numbers, booleans and tables always serializes.
    format!("{HEADER}{}", toml::to_string(&table).unwrap_or_default())
}

fn user_table(store: &KVStore) -> toml::Table {
    store.spec.config.as_deref().and_then(|text| text.parse::<toml::Table>().ok()).unwrap_or_default()
}

/// A TOML error (which quotes the line and marks the column over several lines) on one line.
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::store;

    fn params_of(text: &str) -> toml::Table {
        let table: toml::Table = text.parse().expect("the operator writes TOML");
        table.get("params").and_then(toml::Value::as_table).cloned().expect("a [params] table")
    }

    #[test]
    fn the_operators_params_are_merged_into_the_users() {
        let mut s = store("demo");
        s.spec.memory = "2Gi".into();
        s.spec.config = Some("maxclients = 100 # a comment\n[params]\nhz = 20\n".into());
        let text = text(&s);
        assert!(text.starts_with("# Written by the Cairn operator"), "{text}");
        let table: toml::Table = text.parse().expect("TOML");
        assert_eq!(table.get("maxclients").and_then(toml::Value::as_integer), Some(100));
        let params = params_of(&text);
        assert_eq!(params.get("hz").and_then(toml::Value::as_integer), Some(20));
        assert_eq!(params.get("maxmemory").and_then(toml::Value::as_str), Some("1610612736"));
        assert_eq!(params.get("maxmemory-policy").and_then(toml::Value::as_str), Some("noeviction"));
    }

    #[test]
    fn no_config_and_no_limit_still_write_both_params() {
        let mut s = store("demo");
        s.spec.maxmemory = "0".into();
        s.spec.maxmemory_policy = cairn_crds::MaxmemoryPolicy::AllkeysLru;
        let params = params_of(&text(&s));
        assert_eq!(params.get("maxmemory").and_then(toml::Value::as_str), Some("0"));
        assert_eq!(params.get("maxmemory-policy").and_then(toml::Value::as_str), Some("allkeys-lru"));
    }

    #[test]
    fn only_the_users_part_needs_a_restart() {
        use crate::config_change::restart_part;
        let mut a = store("demo");
        a.spec.config = Some("maxclients = 100\n".into());
        let mut b = a.clone();
        b.spec.maxmemory = "50%".into();
        b.spec.maxmemory_policy = cairn_crds::MaxmemoryPolicy::VolatileLru;
        assert_ne!(text(&a), text(&b));
        assert_eq!(restart_part(&a), restart_part(&b));
        b.spec.config = Some("maxclients = 200\n".into());
        assert_ne!(restart_part(&a), restart_part(&b));
    }

    #[test]
    fn problems_name_what_is_wrong() {
        assert!(problems("maxclients = 10\n[params]\nhz = 20\n").is_empty());
        assert!(problems("maxmemory = 1\n").is_empty(), "only the [params] table counts");
        let bad = problems("maxclients = \n");
        assert_eq!(bad.len(), 1);
        assert!(bad[0].starts_with("config: not valid TOML: ") && !bad[0].contains('\n'), "{bad:?}");
        assert_eq!(problems("params = 3\n"), ["config: params must be a table ([params])"]);
        let owned = problems("[params]\nMaxMemory = \"1gb\"\nmaxmemory-policy = \"allkeys-lru\"\n");
        assert_eq!(owned.len(), 2, "{owned:?}");
        assert!(owned[0].contains("use spec.maxmemory instead"), "{owned:?}");
        assert!(owned[1].contains("use spec.maxmemoryPolicy instead"), "{owned:?}");
        assert_eq!(problems("params = { maxmemory = \"1gb\" }\n").len(), 1);
        let typo = problems("[params]\nmaxmemory-sample = 7\n");
        assert_eq!(typo.len(), 1);
        assert!(
            typo[0].contains("maxmemory-sample") && typo[0].contains("the nearest it has: maxmemory-samples"),
            "{typo:?}"
        );
        let reload = problems("config-reload-interval = 0\n");
        assert_eq!(reload.len(), 1);
        assert!(reload[0].contains("set by the operator"), "{reload:?}");
    }
}
