//! DEBUG: the subcommands Redis's test suite uses on the implemented units.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use super::{is, text, CmdError, CmdResult, Ctx};

/// DEBUG RELOAD NOFLUSH without MERGE keeps the function libraries, so the
/// snapshot's libraries collide with them (Redis refuses the load).
fn reload_would_collide(ctx: &Ctx<'_>, options: &[&[u8]]) -> bool {
    let has = |name: &str| options.iter().any(|o| is(o, name));
    has("noflush") && !has("merge") && !ctx.server.scripting.libraries.read().libraries.is_empty()
}

pub fn debug(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    if is(sub, "sleep") && args.len() == 3 {
        let secs = super::float_arg(args[2])?;
        if secs > 0.0 {
            // Like Redis, this blocks the whole worker: tests use it to let time pass server-side.
            std::thread::sleep(Duration::from_secs_f64(secs.min(3600.0)));
            // A script's time stands still while it runs (as in Redis 7).
            if ctx.client.origin != crate::client::Origin::Script {
                ctx.now_ms = cairn_engine::clock::now_ms();
            }
        }
        ctx.out.ok();
    } else if is(sub, "populate") && (3..=5).contains(&args.len()) {
        super::debug_populate::populate(ctx, args)?;
    } else if is(sub, "set-active-expire") && args.len() == 3 {
        ctx.server.keyspace.set_active_expire(super::int_arg(args[2])? != 0);
        ctx.out.ok();
    } else if is(sub, "object") && args.len() == 3 {
        object(ctx, args[2])?;
    } else if is(sub, "protocol") && args.len() == 3 {
        protocol(ctx, args[2])?;
    } else if is(sub, "digest") && args.len() == 2 {
        let digest = dataset_digest(ctx);
        ctx.out.simple(&hex40(digest));
    } else if is(sub, "digest-value") {
        digest_values(ctx, &args[2..]);
    } else if is(sub, "quicklist-packed-threshold") && args.len() == 3 {
        // Redis stores list elements above this size in "plain" nodes. Cairn's
        // list nodes have no plain form and 7.0 reports `quicklist` either way,
        // so only the argument is checked.
        crate::config_params::parse_memory(&text(args[2]))
            .ok_or(CmdError::Static("ERR argument must be a memory value bigger than 1 and smaller than 4gb"))?;
        ctx.out.ok();
    } else if is(sub, "set-disable-deny-scripts") && args.len() == 3 {
        let disabled = super::int_arg(args[2])? != 0;
        ctx.server.runtime.disable_deny_scripts.store(disabled, std::sync::atomic::Ordering::Relaxed);
        ctx.out.ok();
    } else if is(sub, "set-skip-checksum-validation") && args.len() == 3 {
        let skip = super::int_arg(args[2])? != 0;
        ctx.server.runtime.skip_checksum_validation.store(skip, std::sync::atomic::Ordering::Relaxed);
        ctx.out.ok();
    } else if is(sub, "jmap") || is(sub, "change-repl-id") {
        ctx.out.ok();
    } else if is(sub, "pause-cron") && args.len() == 3 {
        // Redis pauses serverCron (tests use it so that the cron does not
        // trim the tracking table). Cairn trims that table when keys are
        // remembered and on CONFIG SET, never from a timer: nothing to pause.
        super::int_arg(args[2])?;
        ctx.out.ok();
    } else if is(sub, "log") && args.len() == 3 {
        tracing::warn!(target: "cairn::debug", "DEBUG LOG: {}", text(args[2]));
        ctx.out.ok();
    } else if is(sub, "reload") || is(sub, "loadaof") {
        if is(sub, "reload") && reload_would_collide(ctx, &args[2..]) {
            return Err(CmdError::Static("ERR Error trying to load the RDB dump, check server logs."));
        }
        crate::persistence::snapshot::reload(ctx.server, is(sub, "loadaof")).map_err(CmdError::err)?;
        ctx.out.ok();
    } else if is(sub, "replybuffer") && args.len() == 4 {
        reply_buffer(ctx, sub, args[2], args[3])?;
    } else if is(sub, "help") {
        super::server_admin::write_help(
            ctx,
            &[
                "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "DIGEST",
                "DIGEST-VALUE <key> [<key> ...]",
                "LOG <message>",
                "OBJECT <key>",
                "POPULATE <count> [<prefix>] [<size>]",
                "PROTOCOL <type>",
                "SET-ACTIVE-EXPIRE <0|1>",
                "PAUSE-CRON <0|1>",
                "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
                "REPLYBUFFER RESIZING <0|1>",
                "SLEEP <seconds>",
                "JMAP",
                "CHANGE-REPL-ID",
            ],
        );
    } else {
        return Err(unknown_subcommand(sub));
    }
    Ok(())
}

/// DEBUG is not a container command in Redis 7.0: its own reply.
fn unknown_subcommand(sub: &[u8]) -> CmdError {
    CmdError::Message(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
        String::from_utf8_lossy(&sub[..sub.len().min(128)])
    ))
}

/// DEBUG REPLYBUFFER PEAK-RESET-TIME <ms>|NEVER|RESET and RESIZING <0|1>
/// (see [`crate::client_buffers`]); as in Redis, a negative time never
/// resets the peak and RESIZING reads its value as C's `atoi`.
fn reply_buffer(ctx: &mut Ctx<'_>, sub: &[u8], setting: &[u8], value: &[u8]) -> CmdResult {
    let policy = &ctx.server.runtime.reply_buffer;
    if is(setting, "peak-reset-time") {
        if is(value, "never") {
            policy.set_peak_reset_ms(-1);
        } else if is(value, "reset") {
            policy.set_peak_reset_ms(crate::client_buffers::policy::DEFAULT_PEAK_RESET_MS);
        } else {
            policy.set_peak_reset_ms(super::int_arg(value)?);
        }
    } else if is(setting, "resizing") {
        policy.set_resizing(super::key_specs::atoi(value) as i32 != 0);
    } else {
        return Err(unknown_subcommand(sub));
    }
    ctx.out.ok();
    Ok(())
}

fn object(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(key);
    // As Redis, a key whose time has passed but is not deleted yet is found
    // (DEBUG OBJECT looks at the table, not at expiry).
    let Some(entry) = shard.db(db).peek(key, 0) else { return Err(CmdError::NoSuchKey) };
    let idle = cairn_engine::clock::access_clock(ctx.now_ms).wrapping_sub(entry.access);
    let line = format!(
        "Value at:{:p} refcount:1 encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{}",
        entry as *const _,
        entry.value.encoding(),
        entry.value.heap_bytes().max(1),
        entry.access & 0xFF_FFFF,
        idle
    );
    drop(shard);
    ctx.out.simple(&line);
    Ok(())
}

fn protocol(ctx: &mut Ctx<'_>, kind: &[u8]) -> CmdResult {
    let out = &mut ctx.out;
    if is(kind, "string") {
        out.bulk(b"Hello World");
    } else if is(kind, "integer") {
        out.int(12345);
    } else if is(kind, "double") {
        #[allow(clippy::approx_constant)] // Redis's DEBUG PROTOCOL double is literally 3.141.
        out.double(3.141);
    } else if is(kind, "bignum") {
        out.big_number("1234567999999999999999999999999999999");
    } else if is(kind, "null") {
        out.null_bulk();
    } else if is(kind, "array") || is(kind, "set") {
        if is(kind, "array") {
            out.array(3);
        } else {
            out.set(3);
        }
        (0..3).for_each(|j| out.int(j));
    } else if is(kind, "map") {
        out.map(3);
        for j in 0..3 {
            out.int(j);
            out.boolean(j == 1);
        }
    } else if is(kind, "attrib") {
        if out.is_resp3() {
            out.attribute(1);
            out.bulk(b"key-popularity");
            out.array(2);
            out.bulk(b"key:123");
            out.int(90);
        }
        out.bulk(b"Some real reply following the attribute");
    } else if is(kind, "push") {
        if !out.is_resp3() {
            return Err(CmdError::Static("ERR RESP2 is not supported by this command"));
        }
        out.push(2);
        out.bulk(b"server-cpu-usage");
        out.int(42);
        out.bulk(b"Some real reply following the push reply");
    } else if is(kind, "true") {
        out.boolean(true);
    } else if is(kind, "false") {
        out.boolean(false);
    } else if is(kind, "verbatim") {
        out.verbatim("txt", b"This is a verbatim\nstring");
    } else {
        return Err(CmdError::Static(
            "ERR Wrong protocol type name. Please use one of the following: \
             string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
        ));
    }
    Ok(())
}

fn hasher() -> foldhash::fast::FixedState {
    foldhash::fast::FixedState::with_seed(0x6469_6765_7374)
}

/// A digest of one key's value and expiry.
fn entry_digest(key: &[u8], entry: &cairn_engine::Entry) -> u64 {
    let mut h = hasher().build_hasher();
    h.write(key);
    entry.value.digest(&mut h);
    h.write_u64(entry.expire_at().unwrap_or(0));
    h.finish()
}

/// An order-independent digest of every database (DEBUG DIGEST); zero when empty.
fn dataset_digest(ctx: &Ctx<'_>) -> u64 {
    let ks = &ctx.server.keyspace;
    let mut digest = 0u64;
    for index in 0..ks.num_shards() {
        let shard = ks.lock(index);
        for db in 0..ks.num_dbs() {
            for (key, entry) in shard.db_ref(db).iter(ctx.now_ms) {
                digest ^= entry_digest(key, entry).wrapping_mul(db as u64 * 2 + 1);
            }
        }
    }
    digest
}

fn digest_values(ctx: &mut Ctx<'_>, keys: &[&[u8]]) {
    let db = ctx.db();
    ctx.out.array(keys.len());
    for key in keys {
        let mut shard = ctx.server.keyspace.lock_key(key);
        let digest = shard.db(db).get(key, ctx.now_ms).map(|e| entry_digest(b"", e)).unwrap_or(0);
        drop(shard);
        ctx.out.simple(&hex40(digest));
    }
}

/// 40 hex characters, like Redis's SHA1-based digests.
fn hex40(digest: u64) -> String {
    if digest == 0 {
        return "0".repeat(40);
    }
    let mut h = hasher().build_hasher();
    h.write_u64(digest);
    format!("{:016x}{:016x}{:08x}", digest, h.finish(), (digest >> 32) as u32)
}
