//! Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET.

use cairn_protocol::ProtocolVersion;

use super::{is, CmdError, CmdResult, Ctx};
use crate::client::ReplyMode;

/// The Redis version Cairn is compatible with (HELLO, INFO redis_version).
pub const REDIS_COMPAT_VERSION: &str = "7.0.15";

pub fn ping(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args.len() <= 2 && super::pubsub::in_resp2_subscribed_mode(ctx) {
        // Redis's subscribed-mode PING: ["pong", message or ""].
        ctx.out.array(2);
        ctx.out.bulk(b"pong");
        ctx.out.bulk(args.get(1).copied().unwrap_or(b""));
        return Ok(());
    }
    match args.len() {
        1 => ctx.out.simple("PONG"),
        2 => ctx.out.bulk(args[1]),
        _ => return Err(CmdError::WrongArity),
    }
    Ok(())
}

pub fn echo(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    ctx.out.bulk(args[1]);
    Ok(())
}

pub fn select(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = super::keys::db_index(ctx, args[1])?;
    ctx.client.select(db);
    ctx.out.ok();
    Ok(())
}

pub fn quit(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    ctx.out.ok();
    ctx.client.close_after_reply = true;
    Ok(())
}

const WRONGPASS: CmdError = CmdError::Static("WRONGPASS invalid username-password pair or user is disabled.");

/// Checks a username/password pair against the ACL users; on success the
/// connection runs as that user from now on.
fn log_in(ctx: &mut Ctx<'_>, user: &[u8], password: &[u8]) -> CmdResult {
    let user = ctx.server.runtime.acl.authenticate(user, password).ok_or(WRONGPASS)?;
    ctx.client.handle.set_user(user.clone());
    ctx.client.user = user;
    ctx.client.authenticated = true;
    Ok(())
}

pub fn auth(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (user, password): (&[u8], &[u8]) = match args.len() {
        2 => (b"default", args[1]),
        3 => (args[1], args[2]),
        _ => return Err(CmdError::Syntax),
    };
    if args.len() == 2 && !ctx.server.requires_auth() {
        return Err(CmdError::Static(
            "ERR AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?",
        ));
    }
    log_in(ctx, user, password)?;
    ctx.out.ok();
    Ok(())
}

pub fn hello(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut protocol = ctx.client.protocol;
    if args.len() >= 2 {
        protocol = match cairn_engine::number::parse_i64(args[1]) {
            Some(2) => ProtocolVersion::Resp2,
            Some(3) => ProtocolVersion::Resp3,
            Some(_) => return Err(CmdError::Static("NOPROTO unsupported protocol version")),
            None => return Err(CmdError::Static("ERR Protocol version is not an integer or out of range")),
        };
    }
    let mut credentials: Option<(&[u8], &[u8])> = None;
    let mut name: Option<&[u8]> = None;
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - i - 1;
        if is(args[i], "auth") && more >= 2 {
            credentials = Some((args[i + 1], args[i + 2]));
            i += 3;
        } else if is(args[i], "setname") && more >= 1 {
            name = Some(args[i + 1]);
            i += 2;
        } else {
            return Err(CmdError::err(format!("Syntax error in HELLO option '{}'", super::text(args[i]))));
        }
    }
    if let Some((user, password)) = credentials {
        log_in(ctx, user, password)?;
    }
    if !ctx.client.authenticated {
        return Err(CmdError::Static(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> \
             AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol \
             version at the same time",
        ));
    }
    if let Some(name) = name {
        super::client::set_name(ctx, name)?;
    }
    ctx.client.set_protocol(protocol);
    ctx.out.set_version(protocol);
    write_hello_map(ctx, protocol);
    Ok(())
}

fn write_hello_map(ctx: &mut Ctx<'_>, protocol: ProtocolVersion) {
    let out = &mut ctx.out;
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(REDIS_COMPAT_VERSION.as_bytes());
    out.bulk(b"proto");
    out.int(if protocol == ProtocolVersion::Resp3 { 3 } else { 2 });
    out.bulk(b"id");
    out.int(ctx.client.id() as i64);
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
}

pub fn reset(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    // Redis's clearClientConnectionState: the transaction and WATCHes go too.
    ctx.client.multi = None;
    super::transactions::unwatch_all(ctx);
    super::pubsub::leave(ctx);
    if ctx.client.monitor.take().is_some() {
        ctx.server.monitors.remove(ctx.client.id());
    }
    ctx.client.tracking = None;
    ctx.server.tracking.disable(ctx.client.id());
    ctx.client.select(0);
    ctx.client.set_protocol(ProtocolVersion::Resp2);
    ctx.client.reply_mode = ReplyMode::On;
    ctx.client.authenticated = !ctx.server.requires_auth();
    // Back to the default user, as a new connection.
    let default = ctx.server.runtime.acl.default_user();
    ctx.client.handle.set_user(default.clone());
    ctx.client.user = default;
    *ctx.client.handle.name.lock() = None;
    ctx.client.handle.no_evict.store(false, std::sync::atomic::Ordering::Relaxed);
    ctx.out.set_version(ProtocolVersion::Resp2);
    ctx.out.simple("RESET");
    Ok(())
}
