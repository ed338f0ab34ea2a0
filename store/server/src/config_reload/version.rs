//! One version of the config file as the reloader compares them: its
//! `[params]` (canonical names, values as CONFIG SET takes them) and a
//! fingerprint of every other top-level setting's value (not the value:
//! some are secrets, such as `requirepass` or `admin-token`).

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use crate::config::Args;
use crate::config_params;

/// The table whose entries apply without a restart.
const PARAMS_TABLE: &str = "params";

/// The file's contents as they were read, and what they configure.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Fingerprint of the bytes read ([`fingerprint`]).
    pub fingerprint: u64,
    pub version: FileVersion,
}

impl Loaded {
    /// Parses `text`, remembering its fingerprint.
    pub fn from_text(text: &str) -> Result<Loaded, String> {
        Ok(Loaded { fingerprint: fingerprint(text.as_bytes()), version: FileVersion::parse(text)? })
    }
}

/// What one version of the file configures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileVersion {
    /// `[params]`: canonical name (lowercase when unknown) → value.
    pub params: BTreeMap<String, String>,
    /// Every other top-level key → a fingerprint of its value.
    pub settings: BTreeMap<String, u64>,
}

impl FileVersion {
    /// Parses the file's text: valid TOML, only known keys of the right
    /// types (as at start), `[params]` values that are strings, numbers or
    /// booleans, and no parameter named twice (by an alias and its name).
    pub fn parse(text: &str) -> Result<FileVersion, String> {
        let args: Args = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
        let table: toml::Table = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
        let settings = table
            .iter()
            .filter(|(key, _)| key.as_str() != PARAMS_TABLE)
            .map(|(key, value)| (key.clone(), fingerprint(value.to_string().as_bytes())))
            .collect();
        Ok(FileVersion { params: canonical_params(&args.params)?, settings })
    }
}

/// Top-level keys whose values are credentials.
const SECRET_KEYS: &[&str] = &["requirepass", "masterauth", "admin-token"];

/// A TOML error as logs may show it: where, and what, without the quoted
/// source line toml's own text includes, and without the message when the
/// line sets a credential (the message may quote the value).
pub fn toml_error(text: &str, error: &toml::de::Error) -> String {
    let Some(at) = error.span().map(|span| span.start.min(text.len())) else {
        return error.message().trim().to_string();
    };
    let before = text.get(..at).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let line_text = text.lines().nth(line - 1).unwrap_or_default();
    let key = line_text.split('=').next().unwrap_or_default().trim().trim_matches(['"', '\'']);
    match crate::redact::is_secret_param(key) || SECRET_KEYS.iter().any(|k| k.eq_ignore_ascii_case(key)) {
        true => format!("line {line}, column {column}: the value of {key} is invalid (not shown: a credential)"),
        false => format!("line {line}, column {column}: {}", error.message().trim()),
    }
}

/// The `[params]` table keyed by canonical parameter names.
fn canonical_params(table: &BTreeMap<String, toml::Value>) -> Result<BTreeMap<String, String>, String> {
    let mut params = BTreeMap::new();
    for (name, value) in crate::startup_params::from_table(table)? {
        let key = canonical(&name);
        if params.insert(key.clone(), value).is_some() {
            return Err(format!("[params] {name}: {key} is given twice (under two of its names)"));
        }
    }
    Ok(params)
}

/// A parameter's canonical name (aliases resolved), or the name in
/// lowercase when no parameter has it.
pub fn canonical(name: &str) -> String {
    config_params::find(name).map_or_else(|| name.to_ascii_lowercase(), |p| p.name.to_string())
}

/// A fingerprint of `bytes` (a fixed-key hash: the same in every check).
pub fn fingerprint(bytes: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_canonical_and_settings_are_fingerprints() {
        let text = "port = 7000\nrequirepass = \"s3cret\"\n[params]\nMaxMemory = \"1mb\"\nlua-time-limit = 100\n";
        let version = FileVersion::parse(text).expect("valid");
        let params: Vec<(&str, &str)> = version.params.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        assert_eq!(params, [("busy-reply-threshold", "100"), ("maxmemory", "1mb")]);
        assert_eq!(version.settings.keys().collect::<Vec<_>>(), ["port", "requirepass"]);
        assert!(!format!("{version:?}").contains("s3cret"), "secrets are not kept");
        let changed = FileVersion::parse("port = 7001\nrequirepass = \"s3cret\"\n").expect("valid");
        assert_ne!(changed.settings["port"], version.settings["port"]);
        assert_eq!(changed.settings["requirepass"], version.settings["requirepass"]);
    }

    #[test]
    fn what_start_refuses_is_refused() {
        for bad in [
            "[params\nmaxmemory = 1",
            "prot = 7000\n",
            "port = \"x\"\n",
            "[params]\nsave = [1, 2]\n",
            "[params]\nlua-time-limit = 1\nbusy-reply-threshold = 2\n",
        ] {
            assert!(FileVersion::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(FileVersion::parse("").expect("empty is valid"), FileVersion::default());
    }

    #[test]
    fn errors_say_where_but_never_show_a_credential() {
        let error = FileVersion::parse("port = 1\nrequirepass = 12345\n").expect_err("a number");
        assert!(error.starts_with("line 2, column 15: ") && !error.contains("12345"), "{error}");
        let error = FileVersion::parse("admin-token = \"s3cret\nport = 1\n").expect_err("unterminated");
        assert!(!error.contains("s3cret"), "{error}");
        let error = FileVersion::parse("port = 1\nprot = 2\n").expect_err("unknown key");
        assert!(error.starts_with("line 2, column 1: ") && error.contains("prot"), "{error}");
    }

    #[test]
    fn unknown_parameters_keep_their_name_for_config_set_to_refuse() {
        let version = FileVersion::parse("[params]\nNo-Such-Thing = 1\n").expect("parses");
        assert_eq!(version.params.keys().collect::<Vec<_>>(), ["no-such-thing"]);
    }
}
