//! CLIENT and its subcommands: ID, SETNAME, GETNAME, SETINFO, LIST, INFO,
//! KILL, NO-EVICT, REPLY, PAUSE, UNPAUSE, HELP (TRACKING, CACHING, GETREDIR and
//! TRACKINGINFO are in [`super::client_tracking`]); and MONITOR, which
//! turns a connection into a watcher of every command.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{int_arg, is, text, CmdError, CmdResult, Ctx};
use crate::client::{ClientHandle, ReplyMode};

pub fn client(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let argc = args.len();
    let arity = |ok: bool| if ok { Ok(()) } else { Err(subcommand_arity(sub)) };
    if is(sub, "id") {
        arity(argc == 2)?;
        ctx.out.int(ctx.client.id() as i64);
    } else if is(sub, "setname") {
        arity(argc == 3)?;
        set_name(ctx, args[2])?;
        ctx.out.ok();
    } else if is(sub, "getname") {
        arity(argc == 2)?;
        match ctx.client.handle.name.lock().as_deref() {
            Some(name) => ctx.out.bulk(name),
            None => ctx.out.null_bulk(),
        }
    } else if is(sub, "setinfo") {
        arity(argc == 4)?;
        set_info(ctx, args[2], args[3])?;
    } else if is(sub, "list") {
        list(ctx, &args[2..])?;
    } else if is(sub, "info") {
        arity(argc == 2)?;
        let running = Some(ctx.client.query_pending);
        let line = describe(&ctx.client.handle, ctx.now_ms, false, running, &ctx.server.tracking);
        ctx.out.verbatim("txt", line.as_bytes());
    } else if is(sub, "kill") {
        arity(argc >= 3)?;
        kill(ctx, &args[2..])?;
    } else if is(sub, "no-evict") {
        arity(argc == 3)?;
        let on = on_off(args[2])?;
        ctx.client.handle.no_evict.store(on, Ordering::Relaxed);
        ctx.out.ok();
    } else if is(sub, "reply") {
        arity(argc == 3)?;
        reply_mode(ctx, args[2])?;
    } else if is(sub, "unblock") {
        arity(argc == 3 || argc == 4)?;
        let error = match args.get(3) {
            None => false,
            Some(a) if is(a, "timeout") => false,
            Some(a) if is(a, "error") => true,
            Some(_) => return Err(CmdError::Static("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")),
        };
        let id = int_arg(args[2])?;
        ctx.out.int(ctx.server.blocking.unblock(id as u64, error, ctx.server, ctx.stats) as i64);
    } else if is(sub, "pause") {
        arity(argc == 3 || argc == 4)?;
        pause(ctx, args[2], args.get(3).copied())?;
    } else if is(sub, "unpause") {
        arity(argc == 2)?;
        ctx.server.pause.unpause();
        ctx.out.ok();
    } else if is(sub, "tracking") {
        arity(argc >= 3)?;
        super::client_tracking::tracking(ctx, args)?;
    } else if is(sub, "caching") {
        arity(argc == 3)?;
        super::client_tracking::caching(ctx, args[2])?;
    } else if is(sub, "getredir") {
        arity(argc == 2)?;
        super::client_tracking::getredir(ctx)?;
    } else if is(sub, "trackinginfo") {
        arity(argc == 2)?;
        super::client_tracking::trackinginfo(ctx)?;
    } else if is(sub, "help") {
        arity(argc == 2)?;
        help(ctx);
    } else {
        return Err(CmdError::unknown_subcommand("client", sub));
    }
    Ok(())
}

fn subcommand_arity(sub: &[u8]) -> CmdError {
    CmdError::subcommand_arity("client", sub)
}

fn on_off(arg: &[u8]) -> Result<bool, CmdError> {
    if is(arg, "on") {
        Ok(true)
    } else if is(arg, "off") {
        Ok(false)
    } else {
        Err(CmdError::Syntax)
    }
}

fn valid_name_chars(name: &[u8]) -> bool {
    name.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

/// CLIENT SETNAME (and HELLO SETNAME): an empty name clears it.
pub fn set_name(ctx: &mut Ctx<'_>, name: &[u8]) -> CmdResult {
    if !valid_name_chars(name) {
        return Err(CmdError::Static("ERR Client names cannot contain spaces, newlines or special characters."));
    }
    *ctx.client.handle.name.lock() = (!name.is_empty()).then(|| name.to_vec());
    Ok(())
}

fn set_info(ctx: &mut Ctx<'_>, attr: &[u8], value: &[u8]) -> CmdResult {
    let slot = if is(attr, "lib-name") {
        if value.contains(&b' ') || !valid_name_chars(value) {
            return Err(CmdError::Static("ERR lib-name cannot contain spaces, newlines or special characters."));
        }
        &ctx.client.handle.lib_name
    } else if is(attr, "lib-ver") {
        if !valid_name_chars(value) {
            return Err(CmdError::Static("ERR lib-ver cannot contain spaces, newlines or special characters."));
        }
        &ctx.client.handle.lib_version
    } else {
        return Err(CmdError::err(format!("Unrecognized option '{}'", text(attr))));
    };
    *slot.lock() = (!value.is_empty()).then(|| value.to_vec());
    ctx.out.ok();
    Ok(())
}

fn reply_mode(ctx: &mut Ctx<'_>, mode: &[u8]) -> CmdResult {
    if is(mode, "on") {
        ctx.client.reply_mode = ReplyMode::On;
        ctx.out.ok();
    } else if is(mode, "off") {
        ctx.client.reply_mode = ReplyMode::Off;
    } else if is(mode, "skip") {
        if ctx.client.reply_mode != ReplyMode::Off {
            ctx.client.reply_mode = ReplyMode::Skip;
        }
    } else {
        return Err(CmdError::Syntax);
    }
    Ok(())
}

/// One CLIENT LIST line (without the trailing newline), in Redis's field
/// order. `running`: for the calling client, the bytes of input it has read
/// and not yet consumed, the running command's included (others' `qbuf` is
/// the one they published, see [`crate::client_buffers`]).
pub fn describe(
    c: &ClientHandle,
    now_ms: u64,
    blocked: bool,
    running: Option<usize>,
    tracking: &crate::tracking::Tracking,
) -> String {
    let buffers = c.buffers.sizes(running);
    let name = c.name.lock().as_deref().map(|n| String::from_utf8_lossy(n).into_owned()).unwrap_or_default();
    let lib_name = c.lib_name.lock().as_deref().map(|n| String::from_utf8_lossy(n).into_owned()).unwrap_or_default();
    let lib_ver = c.lib_version.lock().as_deref().map(|n| String::from_utf8_lossy(n).into_owned()).unwrap_or_default();
    let cmd = match c.last_command.load(Ordering::Relaxed) as usize {
        i if i < super::table::count() => super::table::full_name(i, c.last_subcommand.load(Ordering::Relaxed)),
        _ => "NULL",
    };
    let age = now_ms.saturating_sub(c.created_ms) / 1000;
    let idle = now_ms.saturating_sub(c.last_interaction_ms.load(Ordering::Relaxed)) / 1000;
    let sub = c.sub_channels.load(Ordering::Relaxed);
    let psub = c.sub_patterns.load(Ordering::Relaxed);
    let ssub = c.sub_shard_channels.load(Ordering::Relaxed);
    // Tracking: `t`, `R` (broken redirection), `B` (BCAST), and `redir=`.
    let tracked = tracking.tracker(c.id).map(|t| {
        let state = t.state.lock();
        (state.broken_redirect, state.options.bcast, state.options.redirect as i64)
    });
    let (broken, bcast, redir) = tracked.map_or((false, false, -1), |t| t);
    let mut flags = String::new();
    let named = [
        (sub + psub + ssub > 0, 'P'),
        (blocked, 'b'),
        (tracked.is_some(), 't'),
        (broken, 'R'),
        (bcast, 'B'),
        (c.no_evict.load(Ordering::Relaxed), 'e'),
    ];
    for (on, flag) in named {
        if on {
            flags.push(flag);
        }
    }
    if flags.is_empty() {
        flags.push('N');
    }
    format!(
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi=-1 \
         qbuf={} qbuf-free={} argv-mem=0 multi-mem=0 rbs={} rbp={} obl=0 oll=0 omem=0 tot-mem={} events=r cmd={} \
         user={} redir={} resp={} lib-name={} lib-ver={}",
        c.id,
        c.addr,
        c.local_addr,
        c.fd,
        name,
        age,
        idle,
        flags,
        c.db.load(Ordering::Relaxed),
        sub,
        psub,
        ssub,
        buffers.qbuf,
        buffers.qbuf_free,
        buffers.rbs,
        buffers.rbp,
        crate::client_memory::of(&buffers),
        cmd,
        c.user_name(),
        redir,
        c.resp.load(Ordering::Relaxed),
        lib_name,
        lib_ver,
    )
}

fn list(ctx: &mut Ctx<'_>, filters: &[&[u8]]) -> CmdResult {
    let mut ids: Option<Vec<u64>> = None;
    // TYPE normal / pubsub: whether the listed clients have subscriptions.
    let mut subscribed: Option<bool> = None;
    if !filters.is_empty() {
        if is(filters[0], "type") && filters.len() == 2 {
            let t = filters[1];
            if !(is(t, "normal") || is(t, "master") || is(t, "replica") || is(t, "slave") || is(t, "pubsub")) {
                return Err(CmdError::err(format!("Unknown client type '{}'", text(t))));
            }
            if is(t, "normal") || is(t, "pubsub") {
                subscribed = Some(is(t, "pubsub"));
            } else {
                ids = Some(Vec::new());
            }
        } else if is(filters[0], "id") && filters.len() >= 2 {
            let parsed: Result<Vec<u64>, CmdError> = filters[1..]
                .iter()
                .map(|a| {
                    int_arg(a)
                        .ok()
                        .filter(|n| *n > 0)
                        .map(|n| n as u64)
                        .ok_or(CmdError::Static("ERR Invalid client ID"))
                })
                .collect();
            ids = Some(parsed?);
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let mut text = String::new();
    for c in ctx.server.clients.snapshot() {
        if ids.as_ref().is_some_and(|ids| !ids.contains(&c.id)) {
            continue;
        }
        if subscribed.is_some_and(|want| want != c.is_subscriber()) {
            continue;
        }
        let running = (c.id == ctx.client.handle.id).then_some(ctx.client.query_pending);
        let blocked = ctx.server.blocking.is_blocked(c.id);
        text.push_str(&describe(&c, ctx.now_ms, blocked, running, &ctx.server.tracking));
        text.push('\n');
    }
    ctx.out.verbatim("txt", text.as_bytes());
    Ok(())
}

/// CLIENT PAUSE timeout [WRITE|ALL] (see [`crate::pause`]).
fn pause(ctx: &mut Ctx<'_>, timeout: &[u8], mode: Option<&[u8]>) -> CmdResult {
    use crate::pause::PauseMode;
    let mode = match mode {
        None => PauseMode::All,
        Some(m) if is(m, "write") => PauseMode::Write,
        Some(m) if is(m, "all") => PauseMode::All,
        Some(_) => return Err(CmdError::Static("ERR CLIENT PAUSE mode must be WRITE or ALL")),
    };
    let ms = int_arg(timeout).map_err(|_| CmdError::Static("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::Static("ERR timeout is negative"));
    }
    let now = cairn_engine::clock::now_ms();
    ctx.server.pause.pause(mode, now.saturating_add(ms as u64), now);
    ctx.out.ok();
    Ok(())
}

/// MONITOR: from now on the connection also receives a line for every
/// command the server runs (see [`crate::monitor`]).
pub fn monitor(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    let denies_blocking = ctx.client.in_exec || matches!(ctx.client.block, crate::blocking::BlockState::Denied);
    if denies_blocking || ctx.client.origin != crate::client::Origin::Connection {
        return Err(CmdError::Static("ERR MONITOR isn't allowed for DENY BLOCKING client"));
    }
    if ctx.client.monitor.is_none() {
        let queue = Arc::new(crate::pubsub::Subscriber::new(ctx.client.handle.clone()));
        ctx.server.monitors.add(queue.clone());
        ctx.client.monitor = Some(queue);
    }
    ctx.out.ok();
    Ok(())
}

/// A CLIENT KILL filter.
#[derive(Default)]
struct KillFilter {
    id: Option<u64>,
    addr: Option<String>,
    laddr: Option<String>,
    /// TYPE: `Some(Some(subscribed))` for normal/pubsub, `Some(None)` for
    /// replication types (no such client here).
    client_type: Option<Option<bool>>,
    user: Option<String>,
    skip_me: bool,
    max_age: Option<u64>,
}

impl KillFilter {
    fn matches(&self, c: &ClientHandle, me: u64, now_ms: u64) -> bool {
        !(self.skip_me && c.id == me)
            && self.id.is_none_or(|id| id == c.id)
            && self.addr.as_ref().is_none_or(|a| *a == c.addr.to_string())
            && self.laddr.as_ref().is_none_or(|a| *a == c.local_addr.to_string())
            && self.client_type.is_none_or(|t| t == Some(c.is_subscriber()))
            && self.user.as_ref().is_none_or(|u| *u == c.user_name())
            && self.max_age.is_none_or(|age| now_ms.saturating_sub(c.created_ms) / 1000 >= age)
    }
}

fn parse_kill_filter(args: &[&[u8]], acl: &crate::acl::Acl) -> Result<KillFilter, CmdError> {
    let mut f = KillFilter { skip_me: true, ..KillFilter::default() };
    for pair in args.chunks(2) {
        let [key, value] = pair else { return Err(CmdError::Syntax) };
        if is(key, "id") {
            let id = int_arg(value)
                .ok()
                .filter(|n| *n > 0)
                .ok_or(CmdError::Static("ERR client-id should be greater than 0"))?;
            f.id = Some(id as u64);
        } else if is(key, "addr") {
            f.addr = Some(text(value));
        } else if is(key, "laddr") {
            f.laddr = Some(text(value));
        } else if is(key, "type") {
            if is(value, "normal") || is(value, "pubsub") {
                f.client_type = Some(Some(is(value, "pubsub")));
            } else if is(value, "master") || is(value, "replica") || is(value, "slave") {
                f.client_type = Some(None);
            } else {
                return Err(CmdError::err(format!("Unknown client type '{}'", text(value))));
            }
        } else if is(key, "user") {
            if acl.get(&text(value)).is_none() {
                return Err(CmdError::err(format!("No such user '{}'", text(value))));
            }
            f.user = Some(text(value));
        } else if is(key, "skipme") {
            f.skip_me = on_off_yes_no(value)?;
        } else if is(key, "maxage") {
            f.max_age = Some(int_arg(value)?.max(0) as u64);
        } else {
            return Err(CmdError::Syntax);
        }
    }
    Ok(f)
}

fn on_off_yes_no(arg: &[u8]) -> Result<bool, CmdError> {
    if is(arg, "yes") {
        Ok(true)
    } else if is(arg, "no") {
        Ok(false)
    } else {
        Err(CmdError::Syntax)
    }
}

fn kill(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let me = ctx.client.id();
    if args.len() == 1 {
        // Old form: CLIENT KILL addr:port.
        let addr = text(args[0]);
        let target = ctx.server.clients.snapshot().into_iter().find(|c| c.addr.to_string() == addr);
        let Some(target) = target else { return Err(CmdError::Static("ERR No such client")) };
        kill_one(ctx, &target, me);
        ctx.out.ok();
        return Ok(());
    }
    let filter = parse_kill_filter(args, &ctx.server.runtime.acl)?;
    let victims: Vec<Arc<ClientHandle>> =
        ctx.server.clients.snapshot().into_iter().filter(|c| filter.matches(c, me, ctx.now_ms)).collect();
    for victim in &victims {
        kill_one(ctx, victim, me);
    }
    ctx.out.int(victims.len() as i64);
    Ok(())
}

fn kill_one(ctx: &mut Ctx<'_>, victim: &ClientHandle, me: u64) {
    if victim.id == me {
        ctx.client.close_after_reply = true;
    } else {
        victim.kill();
    }
}

fn help(ctx: &mut Ctx<'_>) {
    let lines = [
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GETNAME",
        "    Return the name of the current connection.",
        "ID",
        "    Return the ID of the current connection.",
        "INFO",
        "    Return information about the current client connection.",
        "KILL <ip:port>",
        "    Kill connection made from <ip:port>.",
        "KILL <option> <value> [<option> <value> [...]]",
        "    Kill connections. Options are: ID, TYPE, USER, ADDR, LADDR, SKIPME, MAXAGE.",
        "LIST [options ...]",
        "    Return information about client connections. Options: TYPE <type>, ID <id> [...].",
        "NO-EVICT (ON|OFF)",
        "    Protect current client connection from eviction.",
        "UNPAUSE",
        "    Stop the current client pause, resuming traffic.",
        "PAUSE <timeout> [WRITE|ALL]",
        "    Suspend all, or just write, clients for <timeout> milliseconds.",
        "REPLY (ON|OFF|SKIP)",
        "    Control the replies sent to the current connection.",
        "SETNAME <name>",
        "    Assign the name <name> to the current connection.",
        "SETINFO <LIB-NAME|LIB-VER> <value>",
        "    Set client library name or version.",
        "GETREDIR",
        "    Return the client ID we are redirecting to when tracking is enabled.",
        "HELP",
        "    Print this help.",
    ];
    super::server_admin::write_help(ctx, &lines);
}
