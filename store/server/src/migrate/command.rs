//! The MIGRATE command's part on the worker: its arguments checked, the
//! keys that exist serialized with DUMP's own encoder (so MIGRATE sends
//! whatever DUMP produces, whatever its layout), each with its expiry and
//! a copy of its value to recognise it by at the end; then the MIGRATE is
//! left on the client for the connection to run off the worker (see the
//! module [`super`]). Nothing is answered here unless no key exists
//! (`+NOKEY`, as Redis, without connecting) or an argument is wrong.

use cairn_protocol::{ProtocolVersion, ReplyWriter};

use super::options::{self, Options};
use super::removal::{self, Sent};
use super::transfer::{Outgoing, Request};
use super::Pending;
use crate::client::{Origin, ReplyMode};
use crate::commands::{dump, CmdError, CmdResult, Ctx};

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
        match serialize(ctx, watcher, key) {
            Ok(Some((out, snapshot))) => {
                outgoing.push(out);
                sent.push(snapshot);
            }
            Ok(None) => {}
            Err(e) => {
                removal::forget(ctx.server, ctx.db(), watcher, &sent);
                return Err(e);
            }
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

/// A live key's payload (by DUMP), expiry and value, read while its shard
/// is held so the three agree, and watched from then on (see
/// [`removal`]); None when the key does not exist.
fn serialize(ctx: &mut Ctx<'_>, watcher: u64, key: &[u8]) -> Result<Option<(Outgoing, Sent)>, CmdError> {
    let server = ctx.server;
    let db = ctx.db();
    let _held = server.keyspace.hold_shard(server.keyspace.shard_of(key));
    let snapshot = {
        let mut shard = server.keyspace.lock_key(key);
        shard.db(db).get(key, ctx.now_ms).map(|entry| (entry.value.clone(), entry.expire_at()))
    };
    let Some((value, expire_at_ms)) = snapshot else {
        return Ok(None);
    };
    let Some(payload) = dump_payload(ctx, key)? else {
        return Ok(None);
    };
    let touched = removal::watch(server, db, watcher, key);
    let out = Outgoing { key: key.to_vec(), expire_at_ms, payload };
    Ok(Some((out, Sent { key: key.to_vec(), value, expire_at_ms, touched })))
}

/// The payload `DUMP key` answers (None for a missing key): DUMP's handler
/// run into a buffer of its own.
fn dump_payload(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Option<Vec<u8>>, CmdError> {
    let mut reply = Vec::new();
    let mut dump_ctx =
        Ctx::new(ctx.server, ctx.client, ReplyWriter::new(&mut reply, ProtocolVersion::Resp2), ctx.stats, ctx.now_ms);
    dump::dump(&mut dump_ctx, &[b"DUMP", key])?;
    bulk_of(&reply).ok_or(CmdError::Static("ERR MIGRATE could not serialize a key"))
}

/// The bytes of a RESP2 bulk reply (`Some(None)` for the null bulk).
fn bulk_of(reply: &[u8]) -> Option<Option<Vec<u8>>> {
    if reply == b"$-1\r\n" {
        return Some(None);
    }
    let rest = reply.strip_prefix(b"$")?;
    let header_end = rest.windows(2).position(|w| w == b"\r\n")?;
    let len: usize = std::str::from_utf8(&rest[..header_end]).ok()?.parse().ok()?;
    let body = rest.get(header_end + 2..)?;
    (body.len() == len + 2 && body.ends_with(b"\r\n")).then(|| Some(body[..len].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::bulk_of;

    #[test]
    fn bulk_replies_are_read_back_exactly() {
        assert_eq!(bulk_of(b"$3\r\na\r\n\r\n"), Some(Some(b"a\r\n".to_vec())));
        assert_eq!(bulk_of(b"$-1\r\n"), Some(None));
        assert_eq!(bulk_of(b"$0\r\n\r\n"), Some(Some(Vec::new())));
        assert_eq!(bulk_of(b"$4\r\na\r\n"), None);
        assert_eq!(bulk_of(b"-ERR x\r\n"), None);
    }
}
