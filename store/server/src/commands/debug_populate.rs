//! DEBUG POPULATE count [prefix] [size]: creates `count` string keys
//! `prefix:N` (prefix `key` by default) holding `value:N`, cut or padded with
//! zero bytes to `size` when a size is given, skipping keys that exist, as
//! Redis 7.0's `debugCommand` does (no keyspace events, WATCHers touched).
//!
//! Redis does not propagate DEBUG to its AOF; Cairn logs every write, so the
//! keys go through the write path in chunks, each logged as the MSET of the
//! keys it created (nothing when it created none), which replays to the same
//! state.

use super::strings::store_string;
use super::table::{c, CommandSpec, KPAIRS, WRITE};
use super::{int_arg, CmdError, CmdResult, Ctx};
use crate::commands::strings::ExpirySpec;

/// Redis formats each key into a 128-byte buffer: longer names are cut.
const MAX_KEY_LEN: usize = 127;
/// Keys per chunk, and the bytes of keys and values above which a chunk ends
/// early (each chunk holds its shards and is one log record).
const CHUNK_KEYS: usize = 1024;
const CHUNK_BYTES: usize = 1 << 20;
/// What the table spends per key beyond its name and value, for the check
/// against the machine's memory (a generous estimate).
const OVERHEAD_PER_KEY: u64 = 64;

const NOT_POSITIVE: CmdError = CmdError::Static("ERR value is out of range, must be positive");

/// One chunk as the write path sees it: an MSET of the chunk's candidate
/// keys (so exactly their shards are held), never in the command table.
static POPULATE_CHUNK: CommandSpec = c("mset", -3, WRITE, KPAIRS, populate_chunk);

/// DEBUG POPULATE (`args` from `DEBUG`).
pub fn populate(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let count = positive(args[2])?;
    let prefix = args.get(3).map_or(&b"key"[..], |p| until_nul(p));
    let size = match args.get(4) {
        Some(arg) => positive(arg)?,
        None => 0,
    };
    check_memory(count, prefix.len() as u64, size)?;
    let mut next = 0;
    while next < count {
        let chunk = chunk_from(next, count, prefix, size);
        next += (chunk.len() / 2) as u64;
        let mut mset: Vec<&[u8]> = Vec::with_capacity(chunk.len() + 1);
        mset.push(b"MSET");
        mset.extend(chunk.iter().map(Vec::as_slice));
        crate::persistence::logging::run(ctx, &POPULATE_CHUNK, &mset)?;
        ctx.client.write_was_noop = false;
    }
    ctx.out.ok();
    Ok(())
}

/// A non-negative integer argument, with Redis's one error for anything else.
fn positive(arg: &[u8]) -> Result<u64, CmdError> {
    int_arg(arg).ok().and_then(|n| u64::try_from(n).ok()).ok_or(NOT_POSITIVE)
}

/// The prefix as C's `%s` reads it: up to its first NUL byte.
fn until_nul(prefix: &[u8]) -> &[u8] {
    prefix.iter().position(|&b| b == 0).map_or(prefix, |end| &prefix[..end])
}

/// Refuses a population that cannot fit in this machine's memory, rather
/// than run out of it part way (Redis fails its table's expansion there).
fn check_memory(count: u64, prefix_len: u64, size: u64) -> CmdResult {
    let value_len = if size == 0 { 26 } else { size };
    let per_key = (prefix_len + 21).min(MAX_KEY_LEN as u64) + value_len + OVERHEAD_PER_KEY;
    let needed = count.saturating_mul(per_key);
    let available = physical_memory();
    if needed > available {
        return Err(CmdError::Message(format!(
            "ERR DEBUG POPULATE would need about {needed} bytes, more than this machine's memory ({available} bytes)"
        )));
    }
    Ok(())
}

fn physical_memory() -> u64 {
    // SAFETY: sysconf only reads system configuration.
    let (pages, page_size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    match (u64::try_from(pages), u64::try_from(page_size)) {
        (Ok(pages), Ok(size)) if pages > 0 && size > 0 => pages.saturating_mul(size),
        _ => u64::MAX,
    }
}

/// Key/value pairs `first..` up to a chunk's limits, flattened.
fn chunk_from(first: u64, count: u64, prefix: &[u8], size: u64) -> Vec<Vec<u8>> {
    let mut pairs = Vec::new();
    let mut bytes = 0;
    let mut n = first;
    while n < count && pairs.len() < CHUNK_KEYS * 2 && (bytes < CHUNK_BYTES || pairs.is_empty()) {
        let key = key_name(prefix, n);
        let value = value_of(n, size);
        bytes += key.len() + value.len();
        pairs.push(key);
        pairs.push(value);
        n += 1;
    }
    pairs
}

fn key_name(prefix: &[u8], n: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(prefix.len() + 21);
    key.extend_from_slice(prefix);
    key.push(b':');
    key.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    key.truncate(MAX_KEY_LEN);
    key
}

/// `value:N`, or `size` bytes: its start, then zeros.
fn value_of(n: u64, size: u64) -> Vec<u8> {
    let mut value = b"value:".to_vec();
    value.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    if size > 0 {
        value.resize(size as usize, 0);
    }
    value
}

/// The handler of [`POPULATE_CHUNK`]: stores the pairs whose key does not
/// exist and has the write path log them.
fn populate_chunk(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let pairs = &args[1..];
    let db = ctx.db();
    let now = ctx.now_ms;
    let mut created: Vec<Vec<u8>> = vec![b"MSET".to_vec()];
    {
        let mut guard = ctx.server.keyspace.lock_keys(pairs.iter().step_by(2).copied());
        for pair in pairs.chunks_exact(2) {
            let table = guard.table(db, pair[0]);
            if table.get(pair[0], now).is_none() {
                store_string(table, pair[0], pair[1], ExpirySpec::None, now);
                created.push(pair[0].to_vec());
                created.push(pair[1].to_vec());
            }
        }
    }
    if created.len() == 1 {
        ctx.client.write_was_noop = true;
        return Ok(());
    }
    for key in created[1..].iter().step_by(2) {
        crate::modified::key(ctx.server, db, key);
    }
    ctx.client.log_as = Some(created);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values_are_redis_s() {
        assert_eq!(key_name(b"key", 7), b"key:7");
        assert_eq!(key_name(&[b'p'; 200], 1).len(), MAX_KEY_LEN);
        assert_eq!(value_of(12, 0), b"value:12");
        assert_eq!(value_of(12, 3), b"val");
        assert_eq!(value_of(3, 10), b"value:3\0\0\0");
        assert_eq!(until_nul(b"ab\0cd"), b"ab");
    }

    #[test]
    fn chunks_cover_every_key_once() {
        let mut next = 0;
        let mut seen = 0;
        while next < 5000 {
            let chunk = chunk_from(next, 5000, b"k", 0);
            assert!(!chunk.is_empty() && chunk.len() <= CHUNK_KEYS * 2);
            assert_eq!(chunk[0], key_name(b"k", next));
            next += (chunk.len() / 2) as u64;
            seen += chunk.len() / 2;
        }
        assert_eq!(seen, 5000);
        // Big values end a chunk by bytes; one key always fits.
        assert_eq!(chunk_from(0, 10, b"k", 4 << 20).len(), 2);
    }

    #[test]
    fn a_population_beyond_memory_is_refused() {
        assert!(check_memory(u64::MAX / 2, 3, 0).is_err());
        assert!(check_memory(10, 3, 0).is_ok());
    }
}
