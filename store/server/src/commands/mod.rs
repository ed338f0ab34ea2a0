//! The command layer: a table of commands, the dispatcher that checks arity
//! and authentication and records statistics, and one file per command family.
//!
//! Handlers have the signature [`Handler`]: they read their arguments
//! (`args[0]` is the command name), act on the keyspace, and write their reply
//! through `ctx.out`, or return a [`CmdError`] that the dispatcher writes.

pub mod acl;
pub mod bits;
pub mod client;
pub mod client_tracking;
pub mod connection;
pub mod debug;
pub mod debug_populate;
pub mod dump;
pub mod error;
pub mod expire;
pub mod functions;
pub mod geo;
pub mod hashes;
pub mod hyperloglog;
pub mod info;
pub mod introspection;
pub mod key_specs;
pub mod keys;
pub mod latency;
pub mod lcs;
pub mod lists;
pub mod lolwut;
pub mod memory_stats;
pub mod meta;
pub mod module;
pub mod pubsub;
pub mod rebuild_only;
pub mod replication;
pub mod scripting;
pub mod server_admin;
pub mod sets;
pub mod slowlog;
pub mod sort;
pub mod streams;
pub mod strings;
pub mod table;
pub mod timing;
pub mod transactions;
pub mod typed;
pub mod wait;
pub mod zsets;

use cairn_protocol::ReplyWriter;

pub use error::{CmdError, CmdResult};

use crate::client::{Client, ReplyMode};
use crate::server::Server;
use crate::stats::WorkerStats;

/// What a handler gets.
pub struct Ctx<'a> {
    pub server: &'a Server,
    pub client: &'a mut Client,
    pub out: ReplyWriter<'a>,
    pub stats: &'a WorkerStats,
    /// Wall clock at dispatch, Unix milliseconds.
    pub now_ms: u64,
    /// Where the next command's run time starts (see [`timing`]).
    pub clock: timing::CommandClock,
    /// A worker's batch: where its short scripts run (see
    /// `scripting::on_worker`); None everywhere else.
    pub scripts_here: Option<&'a mut dyn crate::scripting::on_worker::ScriptsHere>,
}

/// A command implementation.
pub type Handler = fn(&mut Ctx<'_>, &[&[u8]]) -> CmdResult;

impl<'a> Ctx<'a> {
    /// A context for commands that start now (their run time counts from here).
    pub fn new(
        server: &'a Server,
        client: &'a mut Client,
        out: ReplyWriter<'a>,
        stats: &'a WorkerStats,
        now_ms: u64,
    ) -> Ctx<'a> {
        Ctx { server, client, out, stats, now_ms, clock: timing::CommandClock::start(), scripts_here: None }
    }

    /// The keyspace table of the client's database that holds `key`, locked.
    pub fn lock_key(&self, key: &[u8]) -> cairn_engine::ShardGuard<'_> {
        self.server.keyspace.lock_key(key)
    }

    pub fn db(&self) -> usize {
        self.client.db
    }

    /// Raises keyspace event `event` (class `class`, `cairn_engine::events::*`)
    /// on `key` in the client's database; one relaxed load when notifications are off.
    #[inline]
    pub fn notify(&self, class: u32, event: &str, key: &[u8]) {
        self.server.keyspace.events().emit(class, event, self.client.db, key);
    }

    /// Like [`Ctx::notify`], in database `db`.
    #[inline]
    pub fn notify_db(&self, class: u32, event: &str, db: usize, key: &[u8]) {
        self.server.keyspace.events().emit(class, event, db, key);
    }
}

/// Runs one request. `args` is never empty.
pub fn dispatch(ctx: &mut Ctx<'_>, args: &[&[u8]]) {
    let previous = ctx.client.handle.last_command.load(std::sync::atomic::Ordering::Relaxed);
    let Some(index) = table::lookup_hinted(args[0], usize::from(previous)) else {
        ctx.out.error(&error::unknown_command(args));
        record_error(ctx);
        abort_multi(ctx);
        return;
    };
    let spec = table::spec(index);
    ctx.client.handle.last_command.store(index as u16, std::sync::atomic::Ordering::Relaxed);
    let mut stat = index;
    if spec.flags & table::SUBCOMMANDS != 0 {
        let slot = args.get(1).map_or(0, |sub| table::subcommand_slot(index, sub));
        ctx.client.handle.last_subcommand.store(slot, std::sync::atomic::Ordering::Relaxed);
        // Statistics per subcommand (`client|list`), as Redis 7 keeps them.
        stat = table::stat_index(index, slot);
    }
    let counters = &ctx.stats.per_command[stat];
    if let Err(e) = admit(ctx, spec, args) {
        ctx.out.error(&e.message(spec.name));
        record_error(ctx);
        counters.rejected.add(1);
        abort_multi(ctx);
        return;
    }
    if spec.flags & table::WRITE != 0 && no_good_replicas(ctx) {
        ctx.out.error(NOREPLICAS);
        record_error(ctx);
        counters.rejected.add(1);
        abort_multi(ctx);
        return;
    }
    if out_of_memory(ctx, index) {
        ctx.out.error(crate::maxmemory::OOM);
        record_error(ctx);
        counters.rejected.add(1);
        abort_multi(ctx);
        return;
    }
    if ctx.client.multi.is_some() && spec.flags & table::TXN_CONTROL == 0 && transactions::no_multi(index) {
        ctx.out.error("ERR Command not allowed inside a transaction");
        record_error(ctx);
        counters.rejected.add(1);
        abort_multi(ctx);
        return;
    }
    if let Some(multi) = ctx.client.multi.as_mut() {
        if spec.flags & table::TXN_CONTROL == 0 {
            multi.queued.push(args.iter().map(|a| a.to_vec()).collect());
            ctx.out.simple("QUEUED");
            return;
        }
    }
    if spec.flags & table::LOADING_OK == 0 && ctx.server.persistence.is_loading() {
        ctx.out.error("LOADING Cairn is loading the dataset in memory");
        record_error(ctx);
        return;
    }
    // One relaxed load per command while nobody tracks (client-side caching).
    let tracking = ctx.server.tracking.is_active();
    let _running = tracking.then(|| crate::tracking::current::enter(ctx.client.id()));
    if ctx.client.tracking.is_some() && spec.flags & table::READONLY != 0 && !spec.runs_script() {
        crate::tracking::hooks::before_read(ctx, spec, args);
    }
    let monitored = ctx.server.monitors.active();
    // A script's own line comes before the commands it runs, as in Redis.
    if monitored && spec.runs_script() {
        crate::monitor::feed(ctx, index, args);
    }
    let reply_start = ctx.out.buffer().len();
    let started = ctx.clock.mark();
    let result = crate::persistence::logging::run(ctx, spec, args);
    let duration_us = ctx.clock.finish(started);
    let blocked = matches!(ctx.client.block, crate::blocking::BlockState::Blocked(_));
    crate::blocked_stats::on_call(counters, duration_us, blocked);
    if let crate::blocking::BlockState::Blocked(waiter) = &ctx.client.block {
        // Its histogram and SLOWLOG wait until it is served, this time included.
        waiter.note_call_us(duration_us);
    } else if ctx.server.runtime.slowlog.wants(index, duration_us)
        && ctx.client.origin != crate::client::Origin::Internal
    {
        log_slow(ctx, args, duration_us);
    }
    if ctx.server.runtime.latency.wants(duration_us) {
        record_latency_event(ctx, spec, duration_us);
    }
    counters.calls.add(1);
    ctx.stats.commands.add(1);
    // A write that changed nothing (SETBIT of the same bit, GEORADIUS without
    // STORE) modified no key, so its WATCHers are left alone, as in Redis.
    let noop = std::mem::take(&mut ctx.client.write_was_noop);
    match result {
        Err(e) => ctx.out.error(&e.message(spec.name)),
        Ok(()) if spec.flags & table::WRITE != 0 && !noop && !blocked => {
            // A command that blocked changed nothing yet (its re-run signals).
            count_changes(ctx, spec, args);
            if tracking || ctx.server.watches.is_active() {
                touch_keys(ctx, spec, args)
            }
        }
        Ok(()) => {}
    }
    if record_error(ctx) {
        counters.failed.add(1);
    }
    if monitored && !spec.runs_script() {
        crate::monitor::feed(ctx, index, args);
    }
    apply_reply_mode(ctx, reply_start, spec.name == "client", spec.flags & table::PUSH_REPLY != 0);
    if tracking {
        crate::tracking::hooks::after_command(ctx, spec);
    }
}

/// Records a command in SLOWLOG.
#[cold]
fn log_slow(ctx: &Ctx<'_>, args: &[&[u8]], duration_us: u64) {
    ctx.server.runtime.slowlog.record(crate::slowlog::Logged::by(&ctx.client.handle, args, duration_us));
}

/// Adds a latency monitor sample for a command that took at least the
/// threshold (`fast-command` for a FAST one, as Redis).
#[cold]
fn record_latency_event(ctx: &Ctx<'_>, spec: &table::CommandSpec, duration_us: u64) {
    let event = if spec.flags & table::FAST != 0 { "fast-command" } else { "command" };
    ctx.server.runtime.latency.record(event, duration_us / 1000);
}

/// Redis's reply to a write when `min-replicas-to-write` is not met.
pub const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";

/// A write command while `min-replicas-to-write` is not met (a command of
/// EXEC or of a script was checked by them: their clients do not block).
fn no_good_replicas(ctx: &Ctx<'_>) -> bool {
    ctx.server.runtime.lacks_good_replicas() && !matches!(ctx.client.block, crate::blocking::BlockState::Denied)
}

/// A `denyoom` command while memory is above `maxmemory` after eviction,
/// which every command runs first, as in Redis's `processCommand`; commands
/// inside EXEC were checked by EXEC. One relaxed load when no limit is set.
fn out_of_memory(ctx: &mut Ctx<'_>, index: usize) -> bool {
    if ctx.server.runtime.maxmemory.load(std::sync::atomic::Ordering::Relaxed) == 0 {
        return false;
    }
    let in_exec = matches!(ctx.client.block, crate::blocking::BlockState::Denied);
    if in_exec {
        return false;
    }
    let refused = crate::maxmemory::make_room(ctx.server, ctx.now_ms) && crate::maxmemory::denyoom(index);
    // Invalidations of the keys just evicted come before this command's reply (as Redis).
    if ctx.server.tracking.is_active() && ctx.client.origin == crate::client::Origin::Connection {
        ctx.client.handle.inbox.take_into(ctx.out.buffer());
    }
    refused
}

/// A command was refused inside MULTI: EXEC will answer EXECABORT.
fn abort_multi(ctx: &mut Ctx<'_>) {
    if let Some(multi) = ctx.client.multi.as_mut() {
        multi.aborted = true;
    }
}

/// Counts the keys a write command named as changes, for save points and
/// INFO `rdb_changes_since_last_save` (as Redis's `dirty`: MSET of three
/// keys counts three; a write without keys counts one).
fn count_changes(ctx: &Ctx<'_>, spec: &table::CommandSpec, args: &[&[u8]]) {
    let keys = spec.key_count(args.len()).max(1);
    ctx.server.persistence.snapshot.changes.add(keys as u64);
}

/// Signals the keys a write command named as modified (WATCHers, tracking clients).
fn touch_keys(ctx: &Ctx<'_>, spec: &table::CommandSpec, args: &[&[u8]]) {
    for position in spec.key_positions(args.len()) {
        crate::modified::key(ctx.server, ctx.client.db, args[position]);
    }
}

/// Checks arity and authentication before running a command.
fn admit(ctx: &Ctx<'_>, spec: &table::CommandSpec, args: &[&[u8]]) -> CmdResult {
    if !spec.arity_ok(args.len()) {
        return Err(CmdError::WrongArity);
    }
    if !ctx.client.authenticated && spec.flags & table::NO_AUTH == 0 {
        return Err(CmdError::NoAuth);
    }
    if !ctx.client.user.is_unrestricted() {
        check_acl(ctx, spec, args)?;
    }
    if ctx.client.pubsub.is_some()
        && ctx.client.protocol == cairn_protocol::ProtocolVersion::Resp2
        && !pubsub::allowed_when_subscribed(spec.name)
    {
        return Err(pubsub::refused_when_subscribed(spec.name, args));
    }
    Ok(())
}

/// A restricted ACL user's command (the default user never gets here): a
/// `NOPERM` error for a command, key or channel it may not use. A deleted
/// user's connection is closed (as Redis does).
#[cold]
fn check_acl(ctx: &Ctx<'_>, spec: &table::CommandSpec, args: &[&[u8]]) -> CmdResult {
    let user = &ctx.client.user;
    if user.is_removed() {
        ctx.client.handle.kill();
        return Err(CmdError::Message(crate::acl::Denied::Removed.message()));
    }
    // AUTH, HELLO and the like run whatever the user (as in Redis).
    if spec.flags & table::NO_AUTH != 0 {
        return Ok(());
    }
    crate::acl::check::check(&user.rules(), spec.name, args).map_err(|denied| {
        CmdError::Message(match ctx.client.origin {
            crate::client::Origin::Script => denied.script_message(),
            _ => denied.message(),
        })
    })
}

/// Counts an error reply the command wrote, if any; returns whether it did.
fn record_error(ctx: &mut Ctx<'_>) -> bool {
    match ctx.out.take_error() {
        Some((code, counted_already)) => {
            if !counted_already {
                ctx.stats.record_error(code.as_str());
            }
            true
        }
        None => false,
    }
}

/// CLIENT REPLY OFF/SKIP: drops the reply just written.
/// Pub/sub frames (`pushes`) are written whatever the mode, as in Redis.
fn apply_reply_mode(ctx: &mut Ctx<'_>, reply_start: usize, was_client_command: bool, pushes: bool) {
    match ctx.client.reply_mode {
        ReplyMode::On => {}
        ReplyMode::Off if pushes => {}
        ReplyMode::Off => ctx.out.buffer().truncate(reply_start),
        ReplyMode::Skip if was_client_command => {}
        ReplyMode::Skip => {
            if !pushes {
                ctx.out.buffer().truncate(reply_start);
            }
            ctx.client.reply_mode = ReplyMode::On;
        }
    }
}

/// A container's subcommand (`args[1]`) looked up in `arities` (name and
/// Redis's argument count, negative: at least); Redis's errors for an
/// unknown one and for a wrong count.
pub fn subcommand(command: &str, args: &[&[u8]], arities: &[(&'static str, i32)]) -> Result<&'static str, CmdError> {
    let sub = args[1];
    let Some((name, arity)) = arities.iter().find(|(name, _)| is(sub, name)) else {
        return Err(CmdError::unknown_subcommand(command, sub));
    };
    if !arity_fits(i64::from(*arity), args.len()) {
        return Err(CmdError::subcommand_arity(command, sub));
    }
    Ok(name)
}

/// Whether `argc` arguments (the name included) fit Redis's `arity`
/// (negative: at least that many).
pub fn arity_fits(arity: i64, argc: usize) -> bool {
    let argc = argc as i64;
    if arity >= 0 {
        argc == arity
    } else {
        argc >= -arity
    }
}

/// ASCII case-insensitive comparison of an argument with a keyword.
#[inline]
pub fn is(arg: &[u8], keyword: &str) -> bool {
    arg.eq_ignore_ascii_case(keyword.as_bytes())
}

/// An integer argument.
pub fn int_arg(arg: &[u8]) -> Result<i64, CmdError> {
    cairn_engine::number::parse_i64(arg).ok_or(CmdError::NotInteger)
}

/// A float argument.
pub fn float_arg(arg: &[u8]) -> Result<f64, CmdError> {
    cairn_engine::number::parse_f64(arg).ok_or(CmdError::NotFloat)
}

/// An argument as text, for messages.
pub fn text(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).into_owned()
}
