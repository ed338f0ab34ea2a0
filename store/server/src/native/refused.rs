//! Commands the generic COMMAND operation refuses: they change the
//! connection's protocol, or answer later or more than once, which a
//! request/reply protocol with one reply per request id cannot carry.
//! Durable acknowledgements use the per-request durable flag instead of WAITAOF.

/// Lowercase names of the refused commands.
const REFUSED: &[&str] = &[
    "subscribe",
    "psubscribe",
    "ssubscribe",
    "unsubscribe",
    "punsubscribe",
    "sunsubscribe",
    "hello",
    "reset",
    "monitor",
    "waitaof",
    "migrate",
];

/// Whether `name` (any case) cannot run over the native protocol.
pub fn is_refused(name: &[u8]) -> bool {
    REFUSED.iter().any(|r| name.eq_ignore_ascii_case(r.as_bytes()))
}

/// The error message for a refused command.
pub const MESSAGE: &[u8] =
    b"ERR this command is not available over the native protocol (pub/sub, HELLO, RESET, MONITOR, WAITAOF, MIGRATE; use the durable flag)";

#[cfg(test)]
mod tests {
    #[test]
    fn refusal_ignores_case() {
        assert!(super::is_refused(b"SubScribe"));
        assert!(!super::is_refused(b"get"));
    }
}
