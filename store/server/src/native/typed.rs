//! Typed operations served straight from the keyspace, with their outcome
//! written in the native format: no argv, no command-name lookup, no RESP
//! reply to translate (`translate.rs`). The dispatcher's bookkeeping is kept
//! (`commands::typed`). Anything but the plain case returns false and the
//! operation takes the generic path (`execute::outcome`), which gives the same
//! answer more slowly.

use cairn_native::reply::{put_error, put_ok};
use cairn_native::Value;
use cairn_protocol::ErrorCode;

use super::execute::Exec;
use super::translate::status_of;
use crate::commands::strings::read_string;
use crate::commands::typed::{get_index, record_run, shortcut_allowed};

/// GET `key`; false when the generic path must run it.
pub fn get(exec: &mut Exec<'_>, key: &[u8], out: &mut Vec<u8>) -> bool {
    if !shortcut_allowed(exec.server, exec.client) {
        return false;
    }
    let started = exec.clock.mark();
    let result = read_string(exec.server, exec.stats, exec.client.db, key, exec.now_ms, |value| match value {
        Some(bytes) => put_ok(out, &Value::Bytes(bytes)),
        None => put_ok(out, &Value::Nil),
    });
    let error = result.err().map(|e| e.message("get"));
    if let Some(message) = &error {
        put_error(out, status_of(message.as_bytes()), message.as_bytes());
    }
    let code = error.as_deref().map(ErrorCode::of);
    record_run(exec.client, exec.stats, &mut exec.clock, get_index(), started, code.as_ref().map(ErrorCode::as_str));
    true
}
