//! `--config-reload-interval`: how often the config file is checked, as
//! whole seconds (`5`), or with a unit (`5s`, `100ms`); `0` turns the
//! watcher off (SIGHUP still rereads the file).

use std::time::Duration;

use serde::Deserialize;

/// Default `--config-reload-interval`.
pub const DEFAULT: Duration = Duration::from_secs(5);

/// The shortest interval accepted (other than 0): the check reads the file.
pub const MIN: Duration = Duration::from_millis(10);

/// The longest interval accepted.
pub const MAX: Duration = Duration::from_secs(24 * 3600);

/// Parses `5`, `5s` or `100ms` (and `0`).
pub fn parse(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    let (digits, millis_per_unit) = match trimmed.strip_suffix("ms") {
        Some(ms) => (ms, 1),
        None => (trimmed.strip_suffix('s').unwrap_or(trimmed), 1000),
    };
    let n: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not an interval (seconds, or with a unit: 5s, 100ms; 0 turns it off)"))?;
    let interval = Duration::from_millis(n.saturating_mul(millis_per_unit));
    if interval != Duration::ZERO && !(MIN..=MAX).contains(&interval) {
        return Err(format!("`{text}` is outside 10ms..24h (0 turns checking off)"));
    }
    Ok(interval)
}

/// In the config file: `config-reload-interval = 5` (seconds) or `"100ms"`.
pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Seconds(u64),
        Text(String),
    }
    let text = match Raw::deserialize(d)? {
        Raw::Seconds(n) => n.to_string(),
        Raw::Text(t) => t,
    };
    parse(&text).map(Some).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_or_a_unit() {
        assert_eq!(parse("5"), Ok(Duration::from_secs(5)));
        assert_eq!(parse("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse(" 100ms "), Ok(Duration::from_millis(100)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        assert_eq!(parse("0ms"), Ok(Duration::ZERO));
        for bad in ["", "x", "-1", "1.5", "5m", "1ms", "90000"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
