//! The bytes of client-side caching messages, as Redis 7.0 writes them:
//! `>2 invalidate <keys>` in RESP3, or in RESP2 (to a redirection client in
//! subscribed mode) a pub/sub `message` on `__redis__:invalidate` whose
//! payload is the key array; `<keys>` is an array of names, or a null for
//! "every key" (a flush). A broken redirection is `>2 tracking-redir-broken <id>`.

use cairn_protocol::{ProtocolVersion, ReplyWriter};

/// The channel RESP2 redirection clients subscribe to.
pub const CHANNEL: &[u8] = b"__redis__:invalidate";

/// An array of key names.
pub fn key_array<'a>(keys: impl ExactSizeIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + keys.len() * 16);
    let mut w = ReplyWriter::new(&mut out, ProtocolVersion::Resp2);
    w.array(keys.len());
    for key in keys {
        w.bulk(key);
    }
    out
}

/// "Every key": a null in the tracking client's own protocol (as Redis).
pub fn all_keys(resp3: bool) -> &'static [u8] {
    if resp3 {
        b"_\r\n"
    } else {
        b"$-1\r\n"
    }
}

/// An invalidation frame for a RESP3 connection (a push) or, with
/// `resp3` false, for a RESP2 one in subscribed mode (a pub/sub message).
pub fn invalidation(resp3: bool, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(48 + payload.len());
    let version = if resp3 { ProtocolVersion::Resp3 } else { ProtocolVersion::Resp2 };
    let mut w = ReplyWriter::new(&mut out, version);
    if resp3 {
        w.push(2);
        w.bulk(b"invalidate");
    } else {
        w.push(3);
        w.bulk(b"message");
        w.bulk(CHANNEL);
    }
    out.extend_from_slice(payload);
    out
}

/// The push telling a RESP3 tracking client its redirection client is gone.
pub fn redirect_broken(redirect: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(48);
    let mut w = ReplyWriter::new(&mut out, ProtocolVersion::Resp3);
    w.push(2);
    w.bulk(b"tracking-redir-broken");
    w.int(redirect as i64);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_match_redis() {
        let keys = key_array([&b"k"[..]].into_iter());
        assert_eq!(invalidation(true, &keys), b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n");
        assert_eq!(
            invalidation(false, all_keys(false)),
            b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n$-1\r\n"
        );
        assert_eq!(redirect_broken(7), b">2\r\n$21\r\ntracking-redir-broken\r\n:7\r\n");
    }
}
