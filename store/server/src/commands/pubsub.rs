//! Pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE,
//! PUBLISH, the sharded SSUBSCRIBE, SUNSUBSCRIBE and SPUBLISH, and PUBSUB,
//! with Redis 7.0's replies (the registry and delivery are in
//! `crate::pubsub`).
//!
//! (Un)subscribe confirmations are push frames (arrays in RESP2) written
//! even under CLIENT REPLY OFF/SKIP (the `PUSH_REPLY` flag), as Redis does.
//! A RESP2 connection with subscriptions is in subscribed mode: only the
//! commands [`allowed_when_subscribed`] names run (the dispatcher asks).

use cairn_protocol::ProtocolVersion;

use super::table::{c, CommandSpec, F, LOADING_OK, NONE, PUSH_REPLY, SUBCOMMANDS};
use super::{is, CmdError, CmdResult, Ctx};
use crate::blocking::BlockState;
use crate::pubsub::Subscriptions;

/// This family's commands (joined into the command table). PUBLISH is not a
/// write: Redis flags it `pubsub`, and it never touches the keyspace.
pub static COMMANDS: &[CommandSpec] = &[
    c("subscribe", -2, PUSH_REPLY | LOADING_OK, NONE, subscribe),
    c("unsubscribe", -1, PUSH_REPLY | LOADING_OK, NONE, unsubscribe),
    c("psubscribe", -2, PUSH_REPLY | LOADING_OK, NONE, psubscribe),
    c("punsubscribe", -1, PUSH_REPLY | LOADING_OK, NONE, punsubscribe),
    c("publish", 3, F | LOADING_OK, NONE, publish),
    c("ssubscribe", -2, PUSH_REPLY | LOADING_OK, NONE, ssubscribe),
    c("sunsubscribe", -1, PUSH_REPLY | LOADING_OK, NONE, sunsubscribe),
    c("spublish", 3, F | LOADING_OK, NONE, spublish),
    c("pubsub", -2, SUBCOMMANDS, NONE, pubsub),
];

/// Commands a RESP2 connection may run in subscribed mode.
pub fn allowed_when_subscribed(name: &str) -> bool {
    matches!(
        name,
        "subscribe"
            | "unsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "ssubscribe"
            | "sunsubscribe"
            | "ping"
            | "quit"
            | "reset"
    )
}

/// Commands whose subcommand is part of the name Redis reports (`client|list`).
const CONTAINERS: &[&str] = &[
    "acl", "client", "cluster", "command", "config", "function", "latency", "memory", "module", "object", "pubsub",
    "script", "slowlog", "xgroup", "xinfo",
];

/// Redis's refusal of a command in subscribed mode.
pub fn refused_when_subscribed(name: &str, args: &[&[u8]]) -> CmdError {
    let full = match args.get(1) {
        Some(sub) if CONTAINERS.contains(&name) => format!("{name}|{}", String::from_utf8_lossy(sub).to_lowercase()),
        _ => name.to_string(),
    };
    CmdError::Message(format!(
        "ERR Can't execute '{full}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in \
         this context"
    ))
}

/// Whether the client is in RESP2 subscribed mode (PING answers differently).
pub fn in_resp2_subscribed_mode(ctx: &Ctx<'_>) -> bool {
    ctx.client.pubsub.is_some() && ctx.client.protocol == ProtocolVersion::Resp2
}

/// `[kind, name, count]` as a push frame (an array in RESP2); a missing
/// name is a null (UNSUBSCRIBE with nothing to unsubscribe).
fn confirm(ctx: &mut Ctx<'_>, kind: &[u8], name: Option<&[u8]>, count: usize) {
    ctx.out.push(3);
    ctx.out.bulk(kind);
    match name {
        Some(name) => ctx.out.bulk(name),
        None => ctx.out.null_bulk(),
    }
    ctx.out.int(count as i64);
}

/// Enters subscribed mode (a registry handle for this connection).
fn enter(ctx: &mut Ctx<'_>) {
    if ctx.client.pubsub.is_none() {
        ctx.client.pubsub = Some(Box::new(Subscriptions::new(ctx.client.handle.clone())));
    }
}

/// Writes what was delivered but not yet sent, so it precedes this reply.
fn flush_pending(ctx: &mut Ctx<'_>) {
    if let Some(subs) = &ctx.client.pubsub {
        subs.subscriber.take_into(ctx.out.buffer());
    }
}

/// Leaves subscribed mode once nothing is subscribed any more.
fn leave_if_empty(ctx: &mut Ctx<'_>) {
    if ctx.client.pubsub.as_ref().is_some_and(|s| s.total() == 0) {
        flush_pending(ctx);
        ctx.client.pubsub = None;
    }
}

/// Drops every subscription without confirmations (RESET).
pub fn leave(ctx: &mut Ctx<'_>) {
    flush_pending(ctx);
    if let Some(subs) = ctx.client.pubsub.take() {
        ctx.server.pubsub.forget(&subs);
    }
}

/// The three kinds of subscription: each (un)subscribe command works on one.
#[derive(Clone, Copy)]
enum Namespace {
    Channels,
    Patterns,
    ShardChannels,
}

impl Namespace {
    /// The kind word of its subscribe and unsubscribe confirmations.
    fn kinds(self) -> (&'static [u8], &'static [u8]) {
        match self {
            Namespace::Channels => (b"subscribe", b"unsubscribe"),
            Namespace::Patterns => (b"psubscribe", b"punsubscribe"),
            Namespace::ShardChannels => (b"ssubscribe", b"sunsubscribe"),
        }
    }

    /// The count its confirmations carry (Redis counts channels and
    /// patterns together, shard channels apart).
    fn count(self, subs: &Subscriptions) -> usize {
        match self {
            Namespace::Channels | Namespace::Patterns => subs.count(),
            Namespace::ShardChannels => subs.shard_count(),
        }
    }

    /// What the connection is subscribed to in this namespace.
    fn names(self, subs: &Subscriptions) -> Vec<Vec<u8>> {
        match self {
            Namespace::Channels => subs.channels.iter().cloned().collect(),
            Namespace::Patterns => subs.patterns.clone(),
            Namespace::ShardChannels => subs.shard_channels.iter().cloned().collect(),
        }
    }

    fn add(self, pubsub: &crate::pubsub::PubSub, subs: &mut Subscriptions, name: &[u8]) {
        match self {
            Namespace::Channels => pubsub.subscribe(subs, name),
            Namespace::Patterns => pubsub.psubscribe(subs, name),
            Namespace::ShardChannels => pubsub.ssubscribe(subs, name),
        };
    }

    fn remove(self, pubsub: &crate::pubsub::PubSub, subs: &mut Subscriptions, name: &[u8]) {
        match self {
            Namespace::Channels => pubsub.unsubscribe(subs, name),
            Namespace::Patterns => pubsub.punsubscribe(subs, name),
            Namespace::ShardChannels => pubsub.sunsubscribe(subs, name),
        };
    }
}

/// SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE: one confirmation per name.
fn subscribe_in(ctx: &mut Ctx<'_>, namespace: Namespace, args: &[&[u8]]) -> CmdResult {
    enter(ctx);
    for name in &args[1..] {
        let Some(subs) = ctx.client.pubsub.as_deref_mut() else { break };
        namespace.add(&ctx.server.pubsub, subs, name);
        let count = namespace.count(subs);
        confirm(ctx, namespace.kinds().0, Some(name), count);
    }
    Ok(())
}

/// UNSUBSCRIBE, PUNSUBSCRIBE, SUNSUBSCRIBE: the names given, or every one
/// of the namespace; one confirmation with a null name when there is none.
fn unsubscribe_in(ctx: &mut Ctx<'_>, namespace: Namespace, args: &[&[u8]]) -> CmdResult {
    flush_pending(ctx);
    let kind = namespace.kinds().1;
    let names: Vec<Vec<u8>> = if args.len() > 1 {
        args[1..].iter().map(|a| a.to_vec()).collect()
    } else {
        ctx.client.pubsub.as_deref().map(|subs| namespace.names(subs)).unwrap_or_default()
    };
    if names.is_empty() {
        let count = ctx.client.pubsub.as_deref().map_or(0, |subs| namespace.count(subs));
        confirm(ctx, kind, None, count);
    }
    for name in &names {
        let count = match ctx.client.pubsub.as_deref_mut() {
            Some(subs) => {
                namespace.remove(&ctx.server.pubsub, subs, name);
                namespace.count(subs)
            }
            None => 0,
        };
        confirm(ctx, kind, Some(name), count);
    }
    leave_if_empty(ctx);
    Ok(())
}

pub fn subscribe(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    subscribe_in(ctx, Namespace::Channels, args)
}

pub fn psubscribe(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    subscribe_in(ctx, Namespace::Patterns, args)
}

pub fn unsubscribe(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    unsubscribe_in(ctx, Namespace::Channels, args)
}

pub fn punsubscribe(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    unsubscribe_in(ctx, Namespace::Patterns, args)
}

/// SSUBSCRIBE shardchannel [shardchannel ...]. Unlike SUBSCRIBE (allowed in
/// MULTI for backward compatibility), Redis refuses it wherever a client
/// may not block.
pub fn ssubscribe(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if matches!(ctx.client.block, BlockState::Denied) {
        return Err(CmdError::Static("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client"));
    }
    subscribe_in(ctx, Namespace::ShardChannels, args)
}

/// SUNSUBSCRIBE [shardchannel ...]: the named shard channels, or all.
pub fn sunsubscribe(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    unsubscribe_in(ctx, Namespace::ShardChannels, args)
}

/// SPUBLISH shardchannel message
pub fn spublish(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let receivers = ctx.server.pubsub.spublish(args[1], args[2]);
    flush_pending(ctx);
    ctx.out.int(receivers as i64);
    Ok(())
}

pub fn publish(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let receivers = ctx.server.pubsub.publish(args[1], args[2]);
    // A subscriber publishing to itself reads the message before the count, as in Redis.
    flush_pending(ctx);
    ctx.out.int(receivers as i64);
    Ok(())
}

pub fn pubsub(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let argc = args.len();
    let syntax = || {
        CmdError::err(format!(
            "unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
            String::from_utf8_lossy(sub)
        ))
    };
    if is(sub, "channels") || is(sub, "shardchannels") {
        if argc > 3 {
            return Err(syntax());
        }
        let channels = ctx.server.pubsub.channels(is(sub, "shardchannels"), args.get(2).copied());
        ctx.out.array(channels.len());
        for channel in &channels {
            ctx.out.bulk(channel);
        }
    } else if is(sub, "numsub") || is(sub, "shardnumsub") {
        let shard = is(sub, "shardnumsub");
        ctx.out.array(2 * (argc - 2));
        for channel in &args[2..] {
            ctx.out.bulk(channel);
            ctx.out.int(ctx.server.pubsub.numsub(shard, channel) as i64);
        }
    } else if is(sub, "numpat") {
        if argc != 2 {
            return Err(CmdError::subcommand_arity("pubsub", sub));
        }
        ctx.out.int(ctx.server.pubsub.pattern_count() as i64);
    } else if is(sub, "help") {
        if argc != 2 {
            return Err(CmdError::subcommand_arity("pubsub", sub));
        }
        help(ctx);
    } else {
        return Err(CmdError::unknown_subcommand("pubsub", sub));
    }
    Ok(())
}

fn help(ctx: &mut Ctx<'_>) {
    let lines = [
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        "HELP",
        "    Print this help.",
    ];
    super::server_admin::write_help(ctx, &lines);
}
