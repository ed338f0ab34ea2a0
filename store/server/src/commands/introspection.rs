//! Introspection: COMMAND (with Redis's own metadata for the commands Cairn
//! implements), OBJECT and MEMORY.

use super::{is, meta, table, text, CmdError, CmdResult, Ctx};

/// Subcommands Cairn implements, by parent; metadata of others is hidden.
const IMPLEMENTED_SUBCOMMANDS: &[&str] = &[
    "config|get",
    "config|set",
    "config|resetstat",
    "config|rewrite",
    "config|help",
    "client|id",
    "client|setname",
    "client|getname",
    "client|setinfo",
    "client|list",
    "client|info",
    "client|kill",
    "client|no-evict",
    "client|reply",
    "client|getredir",
    "client|pause",
    "client|unpause",
    "client|help",
    "client|unblock",
    "client|tracking",
    "client|caching",
    "client|trackinginfo",
    "command|count",
    "command|docs",
    "command|info",
    "command|list",
    "command|getkeys",
    "command|getkeysandflags",
    "command|help",
    "object|encoding",
    "object|freq",
    "object|idletime",
    "object|refcount",
    "object|help",
    "slowlog|get",
    "slowlog|len",
    "slowlog|reset",
    "slowlog|help",
    "latency|doctor",
    "latency|graph",
    "latency|help",
    "latency|histogram",
    "latency|history",
    "latency|latest",
    "latency|reset",
    "memory|usage",
    "memory|doctor",
    "memory|help",
    "memory|purge",
    "memory|malloc-stats",
    "memory|stats",
    "module|list",
    "module|help",
    "module|load",
    "module|loadex",
    "module|unload",
    "function|load",
    "function|delete",
    "function|flush",
    "function|list",
    "function|dump",
    "function|restore",
    "function|stats",
    "function|kill",
    "function|help",
    "xgroup|create",
    "xgroup|setid",
    "xgroup|destroy",
    "xgroup|createconsumer",
    "xgroup|delconsumer",
    "xgroup|help",
    "xinfo|stream",
    "xinfo|groups",
    "xinfo|consumers",
    "xinfo|help",
    "script|load",
    "script|exists",
    "script|flush",
    "script|kill",
    "script|help",
    "script|debug",
    "pubsub|channels",
    "pubsub|numsub",
    "pubsub|numpat",
    "pubsub|shardchannels",
    "pubsub|shardnumsub",
    "pubsub|help",
    "acl|setuser",
    "acl|getuser",
    "acl|deluser",
    "acl|users",
    "acl|whoami",
    "acl|list",
    "acl|cat",
    "acl|dryrun",
    "acl|genpass",
    "acl|log",
    "acl|save",
    "acl|load",
    "acl|help",
];

/// Containers all of whose Redis subcommands Cairn answers: CLUSTER refuses
/// each of them as a Redis with cluster support disabled does.
const ANSWERED_CONTAINERS: &[&str] = &["cluster"];

fn implemented_sub(name: &str) -> bool {
    IMPLEMENTED_SUBCOMMANDS.contains(&name)
        || name.split_once('|').is_some_and(|(parent, _)| ANSWERED_CONTAINERS.contains(&parent))
}

/// Whether `name` is a command of this server.
fn implemented(name: &str) -> bool {
    table::lookup(name.as_bytes()).is_some()
}

pub fn command(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args.len() == 1 {
        let names: Vec<&str> = table::all().iter().map(|c| c.name).filter(|n| meta::knows(n)).collect();
        ctx.out.array(names.len());
        for name in names {
            meta::write_info_filtered(&mut ctx.out, name, &implemented_sub);
        }
        return Ok(());
    }
    let sub = args[1];
    if is(sub, "count") && args.len() == 2 {
        ctx.out.int(table::count() as i64);
    } else if is(sub, "list") {
        list(ctx, &args[2..])?;
    } else if is(sub, "info") {
        info(ctx, &args[2..]);
    } else if is(sub, "docs") {
        docs(ctx, &args[2..]);
    } else if is(sub, "getkeys") && args.len() >= 4 {
        getkeys(ctx, &args[2..], false)?;
    } else if is(sub, "getkeysandflags") && args.len() >= 4 {
        getkeys(ctx, &args[2..], true)?;
    } else if is(sub, "help") && args.len() == 2 {
        super::server_admin::write_help(
            ctx,
            &[
                "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "(no subcommand)",
                "    Return details about all Redis commands.",
                "COUNT",
                "    Return the total number of commands in this Redis server.",
                "LIST",
                "    Return a list of all commands in this Redis server.",
                "INFO [<command-name> ...]",
                "    Return details about multiple Redis commands.",
                "DOCS [<command-name> ...]",
                "    Return documentation details about multiple Redis commands.",
                "GETKEYS <full-command>",
                "    Return the keys from a full Redis command.",
                "GETKEYSANDFLAGS <full-command>",
                "    Return the keys and the access flags from a full Redis command.",
                "HELP",
                "    Print this help.",
            ],
        );
    } else if is(sub, "count") || is(sub, "getkeys") || is(sub, "getkeysandflags") || is(sub, "help") {
        return Err(CmdError::subcommand_arity("command", sub));
    } else {
        return Err(CmdError::unknown_subcommand("command", sub));
    }
    Ok(())
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN glob]:
/// every command and implemented subcommand (`client|list`), as Redis 7.
fn list(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let keep: Box<dyn Fn(&str) -> bool> = match args {
        [] => Box::new(|_| true),
        [filterby, kind, value] if is(filterby, "filterby") && is(kind, "pattern") => {
            let pattern = value.to_vec();
            Box::new(move |name| cairn_engine::glob::matches(&pattern, name.as_bytes(), true))
        }
        [filterby, kind, value] if is(filterby, "filterby") && is(kind, "aclcat") => {
            let category = text(value);
            Box::new(move |name| meta::in_acl_category(name, &category))
        }
        [filterby, kind, _] if is(filterby, "filterby") && is(kind, "module") => Box::new(|_| false),
        _ => return Err(CmdError::Syntax),
    };
    let mut names: Vec<String> = Vec::new();
    for spec in table::all() {
        names.push(spec.name.to_string());
        names.extend(meta::subcommand_names(spec.name).into_iter().filter(|full| implemented_sub(full)));
    }
    names.retain(|name| keep(name));
    ctx.out.array(names.len());
    for name in names {
        ctx.out.bulk(name.as_bytes());
    }
    Ok(())
}

fn info(ctx: &mut Ctx<'_>, names: &[&[u8]]) {
    if names.is_empty() {
        return command(ctx, &[b"command"]).unwrap_or(());
    }
    ctx.out.array(names.len());
    for name in names {
        let name = text(name).to_ascii_lowercase();
        let ours = match name.split_once('|') {
            Some(_) => implemented_sub(&name),
            None => implemented(&name),
        };
        if !(ours && meta::write_info_filtered(&mut ctx.out, &name, &implemented_sub)) {
            ctx.out.null_array();
        }
    }
}

fn docs(ctx: &mut Ctx<'_>, names: &[&[u8]]) {
    let wanted: Vec<String> = if names.is_empty() {
        table::all().iter().map(|c| c.name.to_string()).filter(|n| meta::knows(n)).collect()
    } else {
        names
            .iter()
            .map(|n| text(n).to_ascii_lowercase())
            .filter(|n| match n.split_once('|') {
                Some(_) => implemented_sub(n),
                None => implemented(n) && meta::knows(n),
            })
            .collect()
    };
    ctx.out.map(wanted.len());
    for name in &wanted {
        ctx.out.bulk(name.as_bytes());
        meta::write_docs_filtered(&mut ctx.out, name, &implemented_sub);
    }
}

/// COMMAND GETKEYS (`with_flags`: GETKEYSANDFLAGS, each key with its flags).
fn getkeys(ctx: &mut Ctx<'_>, full: &[&[u8]], with_flags: bool) -> CmdResult {
    let keys = super::key_specs::keys_of(full).map_err(|e| CmdError::Static(e.message()))?;
    ctx.out.array(keys.len());
    for key in keys {
        if with_flags {
            ctx.out.array(2);
            ctx.out.bulk(full[key.pos]);
            ctx.out.set(key.flags.len());
            for flag in key.flags {
                ctx.out.simple(flag);
            }
        } else {
            ctx.out.bulk(full[key.pos]);
        }
    }
    Ok(())
}

pub fn object(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    if is(sub, "help") {
        super::server_admin::write_help(
            ctx,
            &[
                "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "ENCODING <key>",
                "    Return the kind of internal representation used in order to store the value",
                "    associated with a <key>.",
                "FREQ <key>",
                "    Return the access frequency index of the <key>. The returned integer is",
                "    proportional to the logarithm of the recent access frequency of the key.",
                "IDLETIME <key>",
                "    Return the idle time of the <key>, that is the approximated number of",
                "    seconds elapsed since the last access to the key.",
                "REFCOUNT <key>",
                "    Return the number of references of the value associated with the specified",
                "    <key>.",
                "HELP",
                "    Print this help.",
            ],
        );
        return Ok(());
    }
    if args.len() != 3 {
        if ["encoding", "freq", "idletime", "refcount"].iter().any(|s| is(sub, s)) {
            return Err(CmdError::subcommand_arity("object", sub));
        }
        return Err(CmdError::unknown_subcommand("object", sub));
    }
    let lfu = ctx.server.runtime.lfu_policy.load(std::sync::atomic::Ordering::Relaxed);
    let decay_minutes = if is(sub, "freq") { lfu_decay_minutes(ctx.server) } else { 0 };
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[2]);
    let Some(entry) = shard.db(db).peek(args[2], ctx.now_ms) else {
        drop(shard);
        ctx.out.null_bulk();
        return Ok(());
    };
    let (encoding, access) = (entry.value.encoding(), entry.access);
    let freq = entry.lfu_counter(ctx.now_ms, decay_minutes);
    // Redis shares the objects of the integers 0..9999 (OBJ_SHARED_REFCOUNT).
    let shared =
        matches!(entry.value, cairn_engine::Value::Str(cairn_engine::StrValue::Int(n)) if (0..10_000).contains(&n));
    drop(shard);
    if is(sub, "encoding") {
        ctx.out.bulk(encoding.as_bytes());
    } else if is(sub, "refcount") {
        ctx.out.int(if shared { i64::from(i32::MAX) } else { 1 });
    } else if is(sub, "idletime") {
        if lfu {
            return Err(CmdError::Static(
                "ERR An LRU maxmemory policy is not selected, access time not tracked. Please note that when \
                 switching between policies at runtime LRU and LFU data will take some time to adjust.",
            ));
        }
        let idle = cairn_engine::clock::access_clock(ctx.now_ms).wrapping_sub(access);
        ctx.out.int(i64::from(idle));
    } else if is(sub, "freq") {
        if !lfu {
            return Err(CmdError::Static(
                "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when \
                 switching between policies at runtime LRU and LFU data will take some time to adjust.",
            ));
        }
        ctx.out.int(i64::from(freq));
    } else {
        return Err(CmdError::unknown_subcommand("object", sub));
    }
    Ok(())
}

/// `lfu-decay-time`: the minutes it takes an LFU counter to lose one.
fn lfu_decay_minutes(server: &crate::server::Server) -> u64 {
    server.runtime.get("lfu-decay-time").and_then(|v| v.parse().ok()).unwrap_or(1)
}

pub fn memory(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let known = super::meta::arity(&format!("memory|{}", text(sub).to_lowercase()));
    if known.is_some_and(|arity| !super::arity_fits(arity, args.len())) {
        return Err(CmdError::subcommand_arity("memory", sub));
    }
    if is(sub, "usage") && (args.len() == 3 || args.len() == 5) {
        if args.len() == 5 && !is(args[3], "samples") {
            return Err(CmdError::Syntax);
        }
        let db = ctx.db();
        let mut shard = ctx.server.keyspace.lock_key(args[2]);
        let usage = shard
            .db(db)
            .get(args[2], ctx.now_ms)
            .map(|e| args[2].len() + e.value.heap_bytes() + std::mem::size_of::<cairn_engine::Entry>() + 16);
        drop(shard);
        match usage {
            Some(bytes) => ctx.out.int(bytes as i64),
            None => ctx.out.null_bulk(),
        }
    } else if is(sub, "doctor") && args.len() == 2 {
        ctx.out.verbatim(
            "txt",
            b"Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.",
        );
    } else if is(sub, "stats") && args.len() == 2 {
        return super::memory_stats::stats(ctx);
    } else if is(sub, "purge") && args.len() == 2 {
        crate::allocator::purge();
        ctx.out.ok();
    } else if is(sub, "malloc-stats") && args.len() == 2 {
        match crate::allocator::report() {
            Some(report) => ctx.out.verbatim("txt", report.as_bytes()),
            // What Redis answers when built without jemalloc (a server
            // started in-process runs on its program's allocator).
            None => ctx.out.verbatim("txt", b"Stats not supported for the current allocator"),
        }
    } else if is(sub, "help") && args.len() == 2 {
        super::server_admin::write_help(
            ctx,
            &[
                "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "DOCTOR",
                "    Return memory problems reports.",
                "MALLOC-STATS",
                "    Return internal statistics report from the memory allocator.",
                "PURGE",
                "    Attempt to purge dirty pages for reclamation by the allocator.",
                "STATS",
                "    Return information about the memory usage of the server.",
                "USAGE <key> [SAMPLES <count>]",
                "    Return memory in bytes used by <key> and its value. Nested values are",
                "    sampled up to <count> times (default: 5, 0 means sample all).",
                "HELP",
                "    Print this help.",
            ],
        );
    } else {
        return Err(CmdError::unknown_subcommand("memory", sub));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Redis's subcommands of containers Cairn has that it does not answer.
    const NOT_IMPLEMENTED: &[&str] = &[];

    #[test]
    fn every_subcommand_of_a_container_is_listed_or_known_to_be_missing() {
        for spec in table::all().iter().filter(|spec| spec.flags & table::SUBCOMMANDS != 0) {
            for full in meta::subcommand_names(spec.name) {
                let missing = NOT_IMPLEMENTED.contains(&full.as_str());
                assert!(
                    implemented_sub(&full) != missing,
                    "{full}: list it in IMPLEMENTED_SUBCOMMANDS or NOT_IMPLEMENTED"
                );
            }
        }
    }
}
