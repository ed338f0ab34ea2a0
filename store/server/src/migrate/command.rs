//! The MIGRATE command's part on the worker: its arguments checked, the
//! keys that exist serialized with DUMP's encoder (the engine's
//! `rdb::dump_payload`), each with its expiry and a copy of its value to
//! recognise it by at the end; then the MIGRATE is
//! left on the client for the connection to run off the worker (see the
//! module [`super`]). Nothing is answered here unless no key exists
//! (`+NOKEY`, as Redis, without connecting) or an argument is wrong.

use cairn_engine::rdb;

use super::options::{self, Options};
use super::removal::{self, Sent};
use super::transfer::{Outgoing, Request};
use super::Pending;
use crate::client::{Origin, ReplyMode};
use crate::commands::{CmdError, CmdResult, Ctx};

/// The error where a MIGRATE cannot wait for the network: inside
/// MULTI/EXEC (Redis runs it there, blocking the whole server) and in
/// scripts (likewise). Cairn refuses rather than hold a worker and every
/// shard for the network round trip.
pub const NOT_HERE: &str = "ERR MIGRATE cannot run inside MULTI/EXEC or a script in Cairn";

/// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
/// [AUTH password] [AUTH2 username password] [KEYS key [key ...]]
pub fn migrate(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let options = options::parse(args)?;
    let names = &args[options.keys.first..options.keys.first + options.keys.count];
    let watcher = removal::new_watcher();
    let mut outgoing = Vec::new();
    let mut sent = Vec::new();
    for &key in names {
        if let Some((out, snapshot)) = serialize(ctx, watcher, key) {
            outgoing.push(out);
            sent.push(snapshot);
        }
    }
    if outgoing.is_empty() {
        ctx.out.simple("NOKEY");
        return Ok(());
    }
    if !may_wait(ctx) {
        removal::forget(ctx.server, ctx.db(), watcher, &sent);
        return Err(CmdError::Static(NOT_HERE));
    }
    let request = request(args, &options, outgoing);
    let silent = ctx.client.reply_mode != ReplyMode::On;
    ctx.client.pending_migrate = Some(Box::new(Pending { request, copy: options.copy, sent, watcher, silent }));
    // Nothing changed yet: no log record, no WATCH touched. The deletes
    // that follow the transfer are logged and signalled by themselves.
    ctx.client.write_was_noop = true;
    Ok(())
}

/// Whether the client's connection can await the transfer: a network
/// client running its own command, not EXEC's or a script's.
fn may_wait(ctx: &Ctx<'_>) -> bool {
    ctx.client.origin == Origin::Connection
        && !ctx.client.in_exec
        && !ctx.client.off_worker
        && !matches!(ctx.client.block, crate::blocking::BlockState::Denied)
}

fn request(args: &[&[u8]], options: &Options, keys: Vec<Outgoing>) -> Request {
    Request {
        host: args[1].to_vec(),
        port: args[2].to_vec(),
        username: options.username.clone(),
        password: options.password.clone(),
        db: options.destination_db,
        timeout: std::time::Duration::from_millis(options.timeout_ms),
        replace: options.replace,
        keys,
    }
}

/// A live key's payload (as DUMP's), expiry and value, read under one lock
/// of its shard so the three agree, and watched from then on (see
/// [`removal`]); None when the key does not exist.
fn serialize(ctx: &Ctx<'_>, watcher: u64, key: &[u8]) -> Option<(Outgoing, Sent)> {
    let server = ctx.server;
    let db = ctx.db();
    let _held = server.keyspace.hold_shard(server.keyspace.shard_of(key));
    let snapshot = {
        let mut shard = server.keyspace.lock_key(key);
        shard.db(db).get(key, ctx.now_ms).map(|entry| (entry.value.clone(), entry.expire_at()))
    };
    let (value, expire_at_ms) = snapshot?;
    let payload = rdb::dump_payload(&value);
    let touched = removal::watch(server, db, watcher, key);
    let out = Outgoing { key: key.to_vec(), expire_at_ms, payload };
    Some((out, Sent { key: key.to_vec(), value, expire_at_ms, touched }))
}
