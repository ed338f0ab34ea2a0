//! `CONFIG GET/SET tls-cert-file|tls-key-file|tls-ca-cert-file|tls-auth-clients`.
//!
//! Setting any of them builds a new configuration from the settings in use
//! with the changes applied, rereading every file (so `CONFIG SET
//! tls-cert-file <the same path>` reloads a renewed certificate, as in
//! Redis). Nothing changes unless the whole configuration loads.

use std::path::PathBuf;

use crate::config::{TlsAuthClients, TlsSettings};

/// The CONFIG parameters this module answers for.
pub const PARAMS: &[&str] = &["tls-cert-file", "tls-key-file", "tls-ca-cert-file", "tls-auth-clients"];

/// CONFIG GET's values for `settings`.
pub fn values(settings: &TlsSettings) -> [(&'static str, String); 4] {
    let path = |p: &std::path::Path| p.display().to_string();
    [
        ("tls-cert-file", path(&settings.cert_file)),
        ("tls-key-file", path(&settings.key_file)),
        ("tls-ca-cert-file", settings.ca_cert_file.as_deref().map(path).unwrap_or_default()),
        ("tls-auth-clients", auth_clients_name(settings.auth_clients).to_string()),
    ]
}

fn auth_clients_name(auth: TlsAuthClients) -> &'static str {
    match auth {
        TlsAuthClients::Yes => "yes",
        TlsAuthClients::No => "no",
        TlsAuthClients::Optional => "optional",
    }
}

/// `current` with the TLS parameters among `updates` (validated CONFIG SET
/// values) applied, or why they do not make valid settings. `None` when
/// `updates` sets no TLS parameter.
pub fn changed(current: &TlsSettings, updates: &[(&'static str, String)]) -> Option<Result<TlsSettings, String>> {
    let mut next = current.clone();
    let mut touched = false;
    for (name, value) in updates {
        touched |= PARAMS.contains(name);
        match *name {
            "tls-cert-file" if value.is_empty() => return Some(Err("tls-cert-file cannot be empty".into())),
            "tls-key-file" if value.is_empty() => return Some(Err("tls-key-file cannot be empty".into())),
            "tls-cert-file" => next.cert_file = PathBuf::from(value),
            "tls-key-file" => next.key_file = PathBuf::from(value),
            "tls-ca-cert-file" => next.ca_cert_file = (!value.is_empty()).then(|| PathBuf::from(value)),
            "tls-auth-clients" => match parse_auth_clients(value) {
                Some(auth) => next.auth_clients = auth,
                None => return Some(Err(format!("tls-auth-clients cannot be '{value}'"))),
            },
            _ => {}
        }
    }
    if !touched {
        return None;
    }
    if next.auth_clients != TlsAuthClients::No && next.ca_cert_file.is_none() {
        return Some(Err("tls-ca-cert-file is required unless tls-auth-clients is no".into()));
    }
    Some(Ok(next))
}

/// The `tls-auth-clients` value (already checked against its three names).
fn parse_auth_clients(value: &str) -> Option<TlsAuthClients> {
    match value {
        "yes" => Some(TlsAuthClients::Yes),
        "no" => Some(TlsAuthClients::No),
        "optional" => Some(TlsAuthClients::Optional),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> TlsSettings {
        TlsSettings {
            port: 6380,
            cert_file: "a.crt".into(),
            key_file: "a.key".into(),
            ca_cert_file: Some("ca.crt".into()),
            auth_clients: TlsAuthClients::Yes,
            reload_interval_secs: 10,
        }
    }

    fn set(pairs: &[(&'static str, &str)]) -> Option<Result<TlsSettings, String>> {
        let updates: Vec<_> = pairs.iter().map(|(n, v)| (*n, v.to_string())).collect();
        changed(&settings(), &updates)
    }

    #[test]
    fn values_round_trip_and_unrelated_changes_leave_tls_alone() {
        let values = values(&settings());
        assert_eq!(values[0], ("tls-cert-file", "a.crt".to_string()));
        assert_eq!(values[3], ("tls-auth-clients", "yes".to_string()));
        assert_eq!(set(&[("maxmemory", "0")]), None);
        assert_eq!(set(&[("tls-cert-file", "a.crt")]), Some(Ok(settings())), "same path: a reload");
    }

    #[test]
    fn changes_apply_together_and_bad_combinations_are_refused() {
        let next = set(&[("tls-cert-file", "b.crt"), ("tls-auth-clients", "no"), ("tls-ca-cert-file", "")]);
        let next = next.expect("TLS change").expect("valid");
        assert_eq!(
            (next.cert_file.to_str(), next.auth_clients, next.ca_cert_file),
            (Some("b.crt"), TlsAuthClients::No, None)
        );
        assert!(set(&[("tls-ca-cert-file", "")]).expect("TLS change").is_err(), "yes needs a CA");
        assert!(set(&[("tls-key-file", "")]).expect("TLS change").is_err());
    }
}
