//! DUMP and RESTORE.
//!
//! The payload is Cairn's own, not Redis's RDB serialization: the commands
//! that rebuild the value (the engine's `durability::rebuild`, what snapshots
//! store), with the key's positions marked so RESTORE can target any key, a
//! version and a CRC-32C. RESTORE runs those commands through the command
//! table (as recovery does), so the encodings follow the current
//! configuration. A Redis payload is refused with Redis's checksum error.
//!
//! Layout (integers little-endian):
//! `"CAIRNDUMP" version:u8 commands:u32 { argc:u32 { tag:u8 [len:u32 bytes] }* }* crc32c:u32`
//! where tag 0 is "the key" and tag 1 is a literal argument.

use cairn_engine::clock::access_clock;
use cairn_engine::durability::rebuild;
use cairn_engine::entry::NO_EXPIRY;
use cairn_engine::Entry;

use super::{int_arg, is, CmdError, CmdResult, Ctx};
use crate::persistence::replay::Replayer;

const MAGIC: &[u8] = b"CAIRNDUMP";
const VERSION: u8 = 1;
const BAD_PAYLOAD: CmdError = CmdError::Static("ERR DUMP payload version or checksum are wrong");
/// A payload whose version and checksum are right but whose content is not.
const BAD_DATA: CmdError = CmdError::Static("ERR Bad data format");

/// One rebuild command; `None` stands for the key.
type Command = Vec<Option<Vec<u8>>>;

/// DUMP key
pub fn dump(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let Some(entry) = shard.db(db).get(args[1], ctx.now_ms) else {
        drop(shard);
        ctx.out.null_bulk();
        return Ok(());
    };
    // DUMP carries no expiry: RESTORE takes its own.
    let value = cairn_engine::Entry::new(entry.value.clone(), ctx.now_ms);
    drop(shard);
    let key = args[1];
    let mut commands: Vec<Command> = Vec::new();
    let _ = rebuild::commands_for::<()>(key, &value, &mut |argv| {
        let is_key = |a: &[u8]| a.as_ptr() == key.as_ptr() && a.len() == key.len();
        commands.push(argv.iter().map(|a| (!is_key(a)).then(|| a.to_vec())).collect());
        Ok(())
    });
    ctx.out.bulk(&encode(&commands));
    Ok(())
}

fn encode(commands: &[Command]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.push(VERSION);
    out.extend_from_slice(&(commands.len() as u32).to_le_bytes());
    for command in commands {
        out.extend_from_slice(&(command.len() as u32).to_le_bytes());
        for arg in command {
            match arg {
                None => out.push(0),
                Some(bytes) => {
                    out.push(1);
                    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                    out.extend_from_slice(bytes);
                }
            }
        }
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Reads `n` bytes at `*pos`.
fn take<'a>(data: &'a [u8], pos: &mut usize, n: usize) -> Option<&'a [u8]> {
    let bytes = data.get(*pos..pos.checked_add(n)?)?;
    *pos += n;
    Some(bytes)
}

fn take_u32(data: &[u8], pos: &mut usize) -> Option<usize> {
    let bytes: [u8; 4] = take(data, pos, 4)?.try_into().ok()?;
    Some(u32::from_le_bytes(bytes) as usize)
}

/// The body of a payload whose magic, version and CRC-32C are right.
fn verify(payload: &[u8]) -> Option<&[u8]> {
    let body_len = payload.len().checked_sub(4)?;
    let (body, crc) = payload.split_at(body_len);
    if !body.starts_with(MAGIC) || body.get(MAGIC.len()) != Some(&VERSION) {
        return None;
    }
    (crc32c::crc32c(body) == u32::from_le_bytes(crc.try_into().ok()?)).then_some(body)
}

/// The rebuild commands a verified body holds, if it parses to its end.
fn parse_body(body: &[u8]) -> Option<Vec<Command>> {
    let mut pos = MAGIC.len() + 1;
    let count = take_u32(body, &mut pos)?;
    let mut commands = Vec::new();
    for _ in 0..count {
        let argc = take_u32(body, &mut pos)?;
        let mut command = Vec::new();
        for _ in 0..argc {
            match take(body, &mut pos, 1)?[0] {
                0 => command.push(None),
                1 => {
                    let len = take_u32(body, &mut pos)?;
                    command.push(Some(take(body, &mut pos, len)?.to_vec()));
                }
                _ => return None,
            }
        }
        commands.push(command);
    }
    (pos == body.len()).then_some(commands)
}

/// A payload's commands: Redis's checksum error when its version or CRC is
/// wrong, `Bad data format` when they are right but the content is not.
fn decode(payload: &[u8]) -> Result<Vec<Command>, CmdError> {
    let body = verify(payload).ok_or(BAD_PAYLOAD)?;
    parse_body(body).ok_or(BAD_DATA)
}

/// RESTORE's options.
#[derive(Default)]
struct RestoreOptions {
    replace: bool,
    absolute: bool,
    /// IDLETIME: the seconds the key should look idle (under a non-LFU policy).
    idle_secs: Option<u64>,
    /// FREQ: the key's LFU counter (under an LFU policy).
    freq: Option<u8>,
}

/// Parses RESTORE's options as Redis does: IDLETIME and FREQ exclude each
/// other (the second one is a syntax error).
fn parse_options(args: &[&[u8]]) -> Result<RestoreOptions, CmdError> {
    let mut o = RestoreOptions::default();
    let mut i = 0;
    while i < args.len() {
        let more = args.len() - i - 1;
        if is(args[i], "replace") {
            o.replace = true;
        } else if is(args[i], "absttl") {
            o.absolute = true;
        } else if is(args[i], "idletime") && more > 0 && o.freq.is_none() {
            o.idle_secs = Some(parse_idle_secs(args[i + 1])?);
            i += 1;
        } else if is(args[i], "freq") && more > 0 && o.idle_secs.is_none() {
            o.freq = Some(parse_freq(args[i + 1])?);
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    Ok(o)
}

/// IDLETIME's seconds: an integer >= 0.
fn parse_idle_secs(arg: &[u8]) -> Result<u64, CmdError> {
    u64::try_from(int_arg(arg)?).map_err(|_| CmdError::Static("ERR Invalid IDLETIME value, must be >= 0"))
}

/// FREQ's counter: an integer in 0..=255.
fn parse_freq(arg: &[u8]) -> Result<u8, CmdError> {
    u8::try_from(int_arg(arg)?).map_err(|_| CmdError::Static("ERR Invalid FREQ value, must be >= 0 and <= 255"))
}

/// Sets the restored entry's access time or LFU counter as Redis's
/// `objectSetLRUOrLFU`: FREQ under an LFU policy, IDLETIME under any other
/// (the other option is ignored).
fn set_lru_or_lfu(entry: &mut Entry, options: &RestoreOptions, lfu_policy: bool, now_ms: u64) {
    if lfu_policy {
        if let Some(freq) = options.freq {
            entry.set_lfu_counter(freq, now_ms);
        }
    } else if let Some(idle_secs) = options.idle_secs {
        // The access clock wraps at 2^32 seconds, and so does the idle time.
        entry.access = access_clock(now_ms).wrapping_sub(idle_secs as u32);
    }
}

/// Whether `key` holds a live value in the client's database.
fn key_exists(ctx: &Ctx<'_>, key: &[u8]) -> bool {
    ctx.server.keyspace.lock_key(key).db(ctx.db()).get(key, ctx.now_ms).is_some()
}

/// REPLACE: deletes the key's live value, if any.
fn remove_live(ctx: &Ctx<'_>, key: &[u8]) {
    let mut shard = ctx.server.keyspace.lock_key(key);
    let table = shard.db(ctx.db());
    if table.get(key, ctx.now_ms).is_some() {
        table.remove(key);
    }
}

/// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
///
/// Checks in Redis's order: options, an existing key (unless REPLACE), the
/// TTL, then the payload.
pub fn restore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let options = parse_options(&args[4..])?;
    if !options.replace && key_exists(ctx, key) {
        return Err(CmdError::Static("BUSYKEY Target key name already exists."));
    }
    let ttl = int_arg(args[2])?;
    if ttl < 0 {
        return Err(CmdError::Static("ERR Invalid TTL value, must be >= 0"));
    }
    let commands = decode(args[3])?;
    let db = ctx.db();
    let now = ctx.now_ms;
    if options.replace {
        remove_live(ctx, key);
    }
    let expire_at = match (ttl, options.absolute) {
        (0, _) => NO_EXPIRY,
        (t, true) => t as u64,
        (t, false) => now.saturating_add(t as u64),
    };
    if expire_at != NO_EXPIRY && expire_at <= now {
        // Already expired: the key is gone, as in Redis.
        ctx.out.ok();
        return Ok(());
    }
    let mut replayer = Replayer::new(ctx.server);
    for command in &commands {
        let argv: Vec<&[u8]> = command.iter().map(|a| a.as_deref().unwrap_or(key)).collect();
        replayer.apply(now, db as u32, &argv).map_err(|_| BAD_DATA)?;
    }
    finish_entry(ctx, key, expire_at, &options);
    ctx.server.blocking.signal(db, key);
    ctx.out.ok();
    Ok(())
}

/// Gives the rebuilt key its expiry and its access time or LFU counter.
fn finish_entry(ctx: &Ctx<'_>, key: &[u8], expire_at: u64, options: &RestoreOptions) {
    let lfu_policy = ctx.server.runtime.lfu_policy.load(std::sync::atomic::Ordering::Relaxed);
    let mut shard = ctx.server.keyspace.lock_key(key);
    let table = shard.db(ctx.db());
    if expire_at != NO_EXPIRY {
        table.set_expire(key, expire_at, ctx.now_ms);
    }
    if let Some(entry) = table.get(key, ctx.now_ms) {
        set_lru_or_lfu(entry, options, lfu_policy, ctx.now_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_round_trips_and_rejects_damage() {
        let commands: Vec<Command> = vec![vec![Some(b"RPUSH".to_vec()), None, Some(b"a".to_vec())]];
        let payload = encode(&commands);
        assert_eq!(decode(&payload), Ok(commands));
        let mut damaged = payload.clone();
        damaged[12] ^= 1;
        assert_eq!(decode(&damaged), Err(BAD_PAYLOAD));
        assert_eq!(decode(b"\x0e\x01\x00"), Err(BAD_PAYLOAD));
    }

    #[test]
    fn a_sound_checksum_over_bad_content_is_bad_data() {
        let mut body = MAGIC.to_vec();
        body.push(VERSION);
        body.extend_from_slice(&1u32.to_le_bytes());
        body.extend_from_slice(&1u32.to_le_bytes());
        body.push(7); // neither "the key" nor a literal
        let crc = crc32c::crc32c(&body);
        body.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(decode(&body), Err(BAD_DATA));
    }
}
