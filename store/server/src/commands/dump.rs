//! DUMP and RESTORE, with Redis's payload format (the engine's `rdb`
//! codec: the value in RDB encoding, RDB version 10, CRC-64), so keys move
//! between Cairn and Redis in both directions (redis-shake, RIOT, MIGRATE).
//!
//! RESTORE reads the payloads of Redis up to 7.4 and of Valkey up to 9.1
//! (RDB version 80), refusing by name the types Cairn cannot hold (hashes
//! with field TTLs) before anything is written.
//!
//! RESTORE also accepts payloads DUMPed by earlier Cairn builds
//! ([`legacy`]), replaying their rebuild commands. A RESTORE is logged as
//! sent and replays by decoding the same payload again (a payload restored
//! under `DEBUG SET-SKIP-CHECKSUM-VALIDATION` is logged with its checksum
//! made right, so replay accepts it).

mod legacy;

use std::sync::atomic::Ordering;

use cairn_engine::clock::access_clock;
use cairn_engine::entry::NO_EXPIRY;
use cairn_engine::events as ev;
use cairn_engine::rdb::{self, RdbError};
use cairn_engine::{Entry, Value};

use super::{int_arg, is, CmdError, CmdResult, Ctx};
use crate::persistence::replay::Replayer;

const BAD_PAYLOAD: CmdError = CmdError::Static("ERR DUMP payload version or checksum are wrong");
/// A payload whose version and checksum are right but whose content is not.
const BAD_DATA: CmdError = CmdError::Static("ERR Bad data format");

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
    let payload = rdb::dump_payload(&entry.value);
    drop(shard);
    ctx.out.bulk(&payload);
    Ok(())
}

/// What a payload restores.
enum Restored {
    /// A Redis payload's value.
    Value(Value),
    /// An earlier Cairn payload's rebuild commands.
    Commands(Vec<legacy::Command>),
}

fn rdb_error(e: RdbError) -> CmdError {
    match e {
        RdbError::Framing => BAD_PAYLOAD,
        RdbError::BadData(_) => BAD_DATA,
        // A hash with field TTLs (Valkey 9, Redis 7.4): named, not just bad.
        RdbError::Unsupported(reply) => CmdError::Message(format!("ERR {reply}")),
    }
}

fn decode(ctx: &Ctx<'_>, payload: &[u8]) -> Result<Restored, CmdError> {
    if legacy::is_legacy(payload) {
        return legacy::decode(payload).map(Restored::Commands);
    }
    let skip_checksum = ctx.server.runtime.skip_checksum_validation.load(Ordering::Relaxed);
    rdb::restore_payload(payload, skip_checksum).map(Restored::Value).map_err(rdb_error)
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
    let restored = decode(ctx, args[3])?;
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
    match restored {
        Restored::Value(value) => {
            log_with_sound_checksum(ctx, args);
            let mut shard = ctx.server.keyspace.lock_key(key);
            shard.db(ctx.db()).insert(key, value, expire_at, now);
        }
        Restored::Commands(commands) => replay(ctx, key, &commands)?,
    }
    finish_entry(ctx, key, expire_at, &options);
    ctx.notify(ev::GENERIC, "restore", key);
    ctx.server.blocking.signal(ctx.db(), key);
    ctx.out.ok();
    Ok(())
}

/// Runs an earlier Cairn payload's rebuild commands on `key`.
fn replay(ctx: &Ctx<'_>, key: &[u8], commands: &[legacy::Command]) -> CmdResult {
    let mut replayer = Replayer::new(ctx.server);
    for command in commands {
        let argv: Vec<&[u8]> = command.iter().map(|a| a.as_deref().unwrap_or(key)).collect();
        replayer.apply(ctx.now_ms, ctx.db() as u32, &argv).map_err(|_| BAD_DATA)?;
    }
    Ok(())
}

/// Under `DEBUG SET-SKIP-CHECKSUM-VALIDATION`, logs the RESTORE with the
/// payload's checksum recomputed: replay (where the flag may be off) must
/// accept what was restored.
fn log_with_sound_checksum(ctx: &mut Ctx<'_>, args: &[&[u8]]) {
    if !ctx.server.runtime.skip_checksum_validation.load(Ordering::Relaxed) {
        return;
    }
    let payload = args[3];
    let mut fixed = payload[..payload.len() - 8].to_vec();
    let crc = rdb::crc64(0, &fixed);
    fixed.extend_from_slice(&crc.to_le_bytes());
    let mut words: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
    words[3] = fixed;
    ctx.client.log_as = Some(words);
}

/// Gives the restored key its expiry (the legacy path's commands set none)
/// and its access time or LFU counter.
fn finish_entry(ctx: &Ctx<'_>, key: &[u8], expire_at: u64, options: &RestoreOptions) {
    let lfu_policy = ctx.server.runtime.lfu_policy.load(Ordering::Relaxed);
    let mut shard = ctx.server.keyspace.lock_key(key);
    let table = shard.db(ctx.db());
    if expire_at != NO_EXPIRY {
        table.set_expire(key, expire_at, ctx.now_ms);
    }
    if let Some(entry) = table.get(key, ctx.now_ms) {
        set_lru_or_lfu(entry, options, lfu_policy, ctx.now_ms);
    }
}
