//! CONFIG parameters set at start: `--param NAME=VALUE` (repeatable) and the
//! config file's `[params]` table, applied as one `CONFIG SET` before the
//! server accepts connections, so `maxmemory`, `maxmemory-policy`,
//! `notify-keyspace-events`, `save` and the rest need no client afterwards
//! (Redis takes them in redis.conf or as `--maxmemory 1gb`).
//!
//! The same checks as CONFIG SET apply (unknown, immutable, bad value: the
//! start fails with Redis's message). Parameters that have a flag of their
//! own (`port`, `durability`, `dir`, ...) are refused here, naming the flag,
//! so one setting never has two sources.
//!
//! Later versions of the file's `[params]` are applied by
//! [`crate::config_reload`], with the same checks.

use std::collections::BTreeMap;

use crate::config_params;
use crate::server::Server;

/// Parameters set by their own flag (and config-file key) instead.
const OWN_FLAG: &[(&str, &str)] = &[
    ("port", "--port"),
    ("tls-port", "--tls-port"),
    ("bind", "--bind"),
    ("dir", "--data-dir"),
    ("databases", "--databases"),
    ("requirepass", "--requirepass"),
    ("maxclients", "--maxclients"),
    ("appendonly", "--durability"),
    ("appendfsync", "--durability"),
    ("durability", "--durability"),
    ("tls-cert-file", "--tls-cert-file"),
    ("tls-key-file", "--tls-key-file"),
    ("tls-ca-cert-file", "--tls-ca-cert-file"),
    ("tls-auth-clients", "--tls-auth-clients"),
];

/// Parses one `--param NAME=VALUE`.
pub fn parse_flag(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_ascii_lowercase(), value.to_string())),
        _ => Err(format!("`{text}` is not NAME=VALUE (e.g. maxmemory=1gb)")),
    }
}

/// The `[params]` table's entries as CONFIG SET values: strings as they
/// are, numbers in decimal, booleans as yes/no.
pub fn from_table(table: &BTreeMap<String, toml::Value>) -> Result<Vec<(String, String)>, String> {
    table
        .iter()
        .map(|(name, value)| {
            let text = match value {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::Float(x) => x.to_string(),
                toml::Value::Boolean(b) => if *b { "yes" } else { "no" }.to_string(),
                other => return Err(format!("[params] {name}: a {} is not a parameter value", other.type_str())),
            };
            Ok((name.to_ascii_lowercase(), text))
        })
        .collect()
}

/// The file's parameters with the command line's on top (a name given in
/// both takes the command line's value), in a stable order.
pub fn merge(file: Vec<(String, String)>, flags: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut merged: BTreeMap<String, String> = file.into_iter().collect();
    merged.extend(flags);
    merged.into_iter().collect()
}

/// Refuses the first of `names` that has a flag of its own, naming the flag
/// (at start, and when the config file is reloaded).
pub fn refuse_own_flags<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<(), String> {
    for name in names {
        let canonical = config_params::find(name).map_or(name, |p| p.name);
        if let Some((_, flag)) = OWN_FLAG.iter().find(|(n, _)| *n == canonical) {
            return Err(format!("parameter {name}: set it with {flag} (or its config-file key), not as a parameter"));
        }
    }
    Ok(())
}

/// Applies the configured parameters to `server` (before it serves).
pub fn apply(server: &Server) -> Result<(), String> {
    let params = &server.config.params;
    if params.is_empty() {
        return Ok(());
    }
    refuse_own_flags(params.iter().map(|(name, _)| name.as_str()))?;
    let pairs = params.iter().map(|(n, v)| (n.as_str(), v.as_str()));
    let updates = config_params::validate_changes(&server.runtime, pairs).map_err(|e| e.to_string())?;
    server.set_config(&updates).map_err(|e| e.to_string())?;
    tracing::info!(params = ?updates, "parameters set at start");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_name_equals_value() {
        assert_eq!(parse_flag("maxmemory=1gb"), Ok(("maxmemory".into(), "1gb".into())));
        assert_eq!(parse_flag("save="), Ok(("save".into(), String::new())));
        assert_eq!(parse_flag("MaxMemory-Policy=allkeys-lru"), Ok(("maxmemory-policy".into(), "allkeys-lru".into())));
        assert!(parse_flag("maxmemory").is_err());
        assert!(parse_flag("=1").is_err());
    }

    #[test]
    fn table_values_become_config_set_values() {
        let table: BTreeMap<String, toml::Value> =
            toml::from_str("maxmemory = \"100mb\"\nhz = 20\nlazyfree-lazy-user-del = true\n").expect("toml");
        let mut values = from_table(&table).expect("values");
        values.sort();
        assert_eq!(
            values,
            vec![
                ("hz".to_string(), "20".to_string()),
                ("lazyfree-lazy-user-del".to_string(), "yes".to_string()),
                ("maxmemory".to_string(), "100mb".to_string()),
            ]
        );
        let nested: BTreeMap<String, toml::Value> = toml::from_str("save = [1, 2]\n").expect("toml");
        assert!(from_table(&nested).is_err());
    }

    #[test]
    fn the_command_line_wins_over_the_file() {
        let file = vec![("maxmemory".to_string(), "1mb".to_string()), ("hz".to_string(), "20".to_string())];
        let flags = vec![("maxmemory".to_string(), "2mb".to_string())];
        assert_eq!(
            merge(file, flags),
            vec![("hz".to_string(), "20".to_string()), ("maxmemory".to_string(), "2mb".to_string())]
        );
    }
}
