//! `GET /v1/info[?section=a,b]`: INFO as JSON, `{section: {field: value}}`.
//! Sections as INFO takes them (`default`, `all`, `everything`, names);
//! values that are integers become JSON numbers, the rest stay strings.

use axum::extract::{Query, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::router::AdminState;

#[derive(Debug, Deserialize)]
pub struct InfoQuery {
    section: Option<String>,
}

pub async fn get(State(state): State<AdminState>, Query(query): Query<InfoQuery>) -> Json<Value> {
    let wanted = query.section.unwrap_or_else(|| "default".into());
    let words: Vec<&[u8]> = wanted.split(',').map(|w| w.trim().as_bytes()).filter(|w| !w.is_empty()).collect();
    let sections = crate::commands::info::requested_sections(&words);
    let text = crate::commands::info::render(&state.server, &sections, cairn_engine::clock::now_ms());
    Json(to_json(&text))
}

/// INFO text (`# Title` lines, then `field:value` lines) as a JSON object.
pub fn to_json(text: &str) -> Value {
    let mut sections = Map::new();
    let mut current: Option<(String, Map<String, Value>)> = None;
    for line in text.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
        if let Some(title) = line.strip_prefix("# ") {
            if let Some((name, fields)) = current.take() {
                sections.insert(name, Value::Object(fields));
            }
            current = Some((title.to_ascii_lowercase(), Map::new()));
        } else if let (Some((_, fields)), Some((name, value))) = (current.as_mut(), line.split_once(':')) {
            let value = match value.parse::<i64>() {
                Ok(n) if n.to_string() == value => Value::from(n),
                _ => Value::from(value),
            };
            fields.insert(name.to_string(), value);
        }
    }
    if let Some((name, fields)) = current {
        sections.insert(name, Value::Object(fields));
    }
    Value::Object(sections)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_text_to_json() {
        let json = to_json("# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\nuptime_in_seconds:3\r\n\r\n# Keyspace\r\ndb0:keys=1,expires=0\r\n");
        assert_eq!(json["server"]["redis_version"], "7.0.15");
        assert_eq!(json["server"]["uptime_in_seconds"], 3);
        assert_eq!(json["server"]["redis_git_sha1"], "00000000");
        assert_eq!(json["keyspace"]["db0"], "keys=1,expires=0");
    }
}
