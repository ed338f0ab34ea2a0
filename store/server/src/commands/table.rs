//! The command table: every command's name, arity, flags, key positions and
//! handler. Lookup is case-insensitive and allocation-free.

use std::sync::OnceLock;

use super::{
    acl, bits, client, connection, debug, dump, expire, functions, geo, hashes, hyperloglog, info, introspection, keys,
    latency, lists, lolwut, module, pubsub, replication, scripting, server_admin, sets, slowlog, sort, streams,
    strings, transactions, wait, zsets, Handler,
};

/// Modifies the keyspace: the write-ahead log records every command with this flag.
pub const WRITE: u32 = 1;
/// Reads the keyspace only.
pub const READONLY: u32 = 1 << 1;
/// Runs in O(1) or O(log n).
pub const FAST: u32 = 1 << 2;
/// Allowed before authentication.
pub const NO_AUTH: u32 = 1 << 3;
/// Administrative.
pub const ADMIN: u32 = 1 << 4;
/// Runs at once inside MULTI instead of being queued (EXEC, DISCARD, ...).
pub const TXN_CONTROL: u32 = 1 << 5;
/// Its keys are not all at the declared positions (a key count argument,
/// STREAMS ...): the write path holds every shard for it.
pub const MOVABLE: u32 = 1 << 6;
/// Allowed while the dataset is loading (Redis's `loading` flag).
pub const LOADING_OK: u32 = 1 << 7;
/// Replies with pub/sub frames, which CLIENT REPLY OFF/SKIP does not silence.
pub const PUSH_REPLY: u32 = 1 << 8;
/// Runs a Lua script (EVAL ...): holds every shard; EXEC holds them all for it.
pub const RUNS_SCRIPT: u32 = 1 << 9;
/// A container whose first argument names a subcommand (CLIENT, CONFIG, ...),
/// as Redis's command table has it (checked by a test).
pub const SUBCOMMANDS: u32 = 1 << 10;

/// One command.
#[derive(Debug)]
pub struct CommandSpec {
    /// Lowercase name.
    pub name: &'static str,
    /// Exact argument count including the name, or `-n` for "at least n".
    pub arity: i32,
    pub flags: u32,
    /// Position of the first key (0: none), of the last (-1: last argument), and the step.
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    pub handler: Handler,
}

impl CommandSpec {
    /// Whether the command runs a Lua script (EVAL and its kin).
    pub fn runs_script(&self) -> bool {
        self.flags & RUNS_SCRIPT != 0
    }

    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i32;
        if self.arity >= 0 {
            argc == self.arity
        } else {
            argc >= -self.arity
        }
    }

    /// Positions of the key arguments in `argc` arguments (COMMAND GETKEYS).
    /// How many keys [`CommandSpec::key_positions`] names, without building
    /// the list.
    pub fn key_count(&self, argc: usize) -> usize {
        if self.first_key <= 0 {
            return 0;
        }
        let last = if self.last_key < 0 { argc as i32 + self.last_key } else { self.last_key };
        let last = last.min(argc as i32 - 1);
        if last < self.first_key {
            return 0;
        }
        ((last - self.first_key) / self.step.max(1) + 1) as usize
    }

    /// The positions of every key the command may touch, when the table
    /// lists them all: None for a command without listed keys (FLUSHALL) or
    /// whose keys move with its arguments (ZUNIONSTORE), which may touch any.
    pub fn all_key_positions(&self, argc: usize) -> Option<Vec<usize>> {
        let positions = self.key_positions(argc);
        (!positions.is_empty() && self.flags & MOVABLE == 0).then_some(positions)
    }

    pub fn key_positions(&self, argc: usize) -> Vec<usize> {
        if self.first_key <= 0 {
            return Vec::new();
        }
        let last = if self.last_key < 0 { argc as i32 + self.last_key } else { self.last_key };
        let step = self.step.max(1);
        (self.first_key..=last).step_by(step as usize).map(|i| i as usize).filter(|&i| i < argc).collect()
    }
}

/// Builds a table row (used by every family's `COMMANDS`).
pub const fn c(name: &'static str, arity: i32, flags: u32, keys: (i32, i32, i32), handler: Handler) -> CommandSpec {
    CommandSpec { name, arity, flags, first_key: keys.0, last_key: keys.1, step: keys.2, handler }
}

pub const NONE: (i32, i32, i32) = (0, 0, 0);
pub const K1: (i32, i32, i32) = (1, 1, 1);
pub const K12: (i32, i32, i32) = (1, 2, 1);
pub const KALL: (i32, i32, i32) = (1, -1, 1);
pub const KPAIRS: (i32, i32, i32) = (1, -1, 2);
pub const W: u32 = WRITE;
pub const R: u32 = READONLY;
pub const F: u32 = FAST;

/// The core commands; the families (lists, hashes, ...) declare theirs in
/// their own files and [`all`] joins them.
pub static CORE: &[CommandSpec] = &[
    // connection
    c("ping", -1, F, NONE, connection::ping),
    c("echo", 2, F | LOADING_OK, NONE, connection::echo),
    c("hello", -1, F | NO_AUTH | LOADING_OK, NONE, connection::hello),
    c("auth", -2, F | NO_AUTH | LOADING_OK, NONE, connection::auth),
    c("select", 2, F | LOADING_OK, NONE, connection::select),
    c("quit", -1, F | NO_AUTH | TXN_CONTROL | LOADING_OK, NONE, connection::quit),
    c("reset", 1, F | NO_AUTH | TXN_CONTROL | LOADING_OK, NONE, connection::reset),
    c("client", -2, LOADING_OK | SUBCOMMANDS, NONE, client::client),
    // server
    c("command", -1, LOADING_OK | SUBCOMMANDS, NONE, introspection::command),
    c("config", -2, ADMIN | LOADING_OK | SUBCOMMANDS, NONE, server_admin::config),
    c("info", -1, LOADING_OK, NONE, info::info),
    c("dbsize", 1, R | F, NONE, server_admin::dbsize),
    c("flushdb", -1, W, NONE, server_admin::flushdb),
    c("flushall", -1, W, NONE, server_admin::flushall),
    c("swapdb", 3, W | F, NONE, server_admin::swapdb),
    c("time", 1, F | LOADING_OK, NONE, server_admin::time),
    c("lastsave", 1, F | LOADING_OK, NONE, server_admin::lastsave),
    c("debug", -2, ADMIN | LOADING_OK, NONE, debug::debug),
    c("monitor", 1, ADMIN | LOADING_OK, NONE, client::monitor),
    c("slowlog", -2, ADMIN | LOADING_OK | SUBCOMMANDS, NONE, slowlog::slowlog),
    c("acl", -2, LOADING_OK | SUBCOMMANDS, NONE, acl::acl),
    c("latency", -2, ADMIN | LOADING_OK | SUBCOMMANDS, NONE, latency::latency),
    c("object", -2, R | SUBCOMMANDS, (2, 2, 1), introspection::object),
    c("memory", -2, R | SUBCOMMANDS, NONE, introspection::memory),
    c("save", 1, ADMIN, NONE, server_admin::save),
    c("shutdown", -1, ADMIN | LOADING_OK, NONE, server_admin::shutdown),
    c("bgsave", -1, ADMIN, NONE, server_admin::bgsave),
    c("bgrewriteaof", 1, ADMIN, NONE, server_admin::bgsave),
    c("waitaof", 4, 0, NONE, crate::persistence::waitaof::waitaof),
    c("wait", 3, 0, NONE, wait::wait),
    c("cluster", -2, SUBCOMMANDS, NONE, server_admin::cluster),
    c("role", 1, F | LOADING_OK, NONE, replication::role),
    c("replconf", -1, ADMIN | LOADING_OK, NONE, crate::rdb_file::replconf::replconf),
    c("sync", 1, ADMIN, NONE, crate::rdb_file::sync::sync),
    c("psync", -3, ADMIN, NONE, crate::rdb_file::sync::sync),
    c("replicaof", 3, ADMIN, NONE, replication::replicaof),
    c("slaveof", 3, ADMIN, NONE, replication::replicaof),
    c("failover", -1, ADMIN, NONE, replication::failover),
    c("readonly", 1, F | LOADING_OK, NONE, replication::cluster_only),
    c("readwrite", 1, F | LOADING_OK, NONE, replication::cluster_only),
    c("asking", 1, F, NONE, replication::cluster_only),
    c("module", -2, ADMIN | SUBCOMMANDS, NONE, module::module),
    c("lolwut", -1, R | F, NONE, lolwut::lolwut),
    // keys
    c("del", -2, W, KALL, keys::del),
    c("unlink", -2, W | F, KALL, keys::unlink),
    c("exists", -2, R | F, KALL, keys::exists),
    c("type", 2, R | F, K1, keys::type_),
    c("keys", 2, R, NONE, keys::keys),
    c("scan", -2, R, NONE, keys::scan),
    c("randomkey", 1, R, NONE, keys::randomkey),
    c("rename", 3, W, K12, keys::rename),
    c("renamenx", 3, W | F, K12, keys::renamenx),
    c("copy", -3, W, K12, keys::copy),
    c("move", 3, W | F, K1, keys::move_),
    c("touch", -2, R | F, KALL, keys::touch),
    c("dump", 2, R, K1, dump::dump),
    c("restore", -4, W, K1, dump::restore),
    c("restore-asking", -4, W, K1, dump::restore),
    c("migrate", -6, W | MOVABLE, (3, 3, 1), crate::migrate::command::migrate),
    c("expire", -3, W | F, K1, expire::expire),
    c("pexpire", -3, W | F, K1, expire::pexpire),
    c("expireat", -3, W | F, K1, expire::expireat),
    c("pexpireat", -3, W | F, K1, expire::pexpireat),
    c("ttl", 2, R | F, K1, expire::ttl),
    c("pttl", 2, R | F, K1, expire::pttl),
    c("expiretime", 2, R | F, K1, expire::expiretime),
    c("pexpiretime", 2, R | F, K1, expire::pexpiretime),
    c("persist", 2, W | F, K1, expire::persist),
    // strings
    c("get", 2, R | F, K1, strings::get),
    c("set", -3, W, K1, strings::set),
    c("setnx", 3, W | F, K1, strings::setnx),
    c("setex", 4, W, K1, strings::setex),
    c("psetex", 4, W, K1, strings::psetex),
    c("getset", 3, W | F, K1, strings::getset),
    c("getdel", 2, W | F, K1, strings::getdel),
    c("getex", -2, W | F, K1, strings::getex),
    c("mget", -2, R | F, KALL, strings::mget),
    c("mset", -3, W, KPAIRS, strings::mset),
    c("msetnx", -3, W, KPAIRS, strings::msetnx),
    c("append", 3, W | F, K1, strings::append),
    c("strlen", 2, R | F, K1, strings::strlen),
    c("incr", 2, W | F, K1, strings::incr),
    c("decr", 2, W | F, K1, strings::decr),
    c("incrby", 3, W | F, K1, strings::incrby),
    c("decrby", 3, W | F, K1, strings::decrby),
    c("incrbyfloat", 3, W | F, K1, strings::incrbyfloat),
    c("getrange", 4, R, K1, strings::getrange),
    c("substr", 4, R, K1, strings::getrange),
    c("setrange", 4, W, K1, strings::setrange),
    c("lcs", -3, R, K12, strings::lcs),
    c("setbit", 4, W, K1, bits::setbit),
    c("getbit", 3, R | F, K1, bits::getbit),
    c("bitcount", -2, R, K1, bits::bitcount),
    c("bitpos", -3, R, K1, bits::bitpos),
    c("bitop", -4, W, (2, -1, 1), bits::bitop),
    c("bitfield", -2, W, K1, bits::bitfield),
    c("bitfield_ro", -2, R | F, K1, bits::bitfield_ro),
];

/// Every command family's table.
fn families() -> [&'static [CommandSpec]; 13] {
    [
        CORE,
        lists::COMMANDS,
        hashes::COMMANDS,
        sets::COMMANDS,
        zsets::COMMANDS,
        geo::COMMANDS,
        streams::COMMANDS,
        transactions::COMMANDS,
        pubsub::COMMANDS,
        sort::COMMANDS,
        scripting::COMMANDS,
        functions::COMMANDS,
        hyperloglog::COMMANDS,
    ]
}

/// Every command; the position identifies a command in statistics.
/// For every command of [`all`], whether Redis's own command table
/// (`redis_meta.json`) gives it `flag` (`denyoom`, `noscript`, ...).
pub fn redis_flagged(flag: &str) -> Vec<bool> {
    let meta: serde_json::Value = serde_json::from_str(include_str!("redis_meta.json")).unwrap_or_default();
    all()
        .iter()
        .map(|spec| {
            let flags = &meta[spec.name][0][2];
            let list = flags.get("~+").or_else(|| flags.get("~")).and_then(|f| f.as_array());
            list.is_some_and(|l| l.iter().any(|v| v.as_str() == Some(flag)))
        })
        .collect()
}

pub fn all() -> &'static [&'static CommandSpec] {
    static ALL: OnceLock<Vec<&'static CommandSpec>> = OnceLock::new();
    ALL.get_or_init(|| families().iter().flat_map(|f| f.iter()).collect())
}

/// Number of commands.
pub fn count() -> usize {
    all().len()
}

pub fn spec(index: usize) -> &'static CommandSpec {
    all()[index]
}

/// The full names (`client|list`, ...) of each command's subcommands, by
/// command index, sorted; empty for a command without subcommands.
fn subcommands() -> &'static [Vec<String>] {
    static SUBCOMMANDS: OnceLock<Vec<Vec<String>>> = OnceLock::new();
    SUBCOMMANDS.get_or_init(|| all().iter().map(|c| super::meta::subcommand_names(c.name)).collect())
}

/// Commands Redis 7.0 flags `may_replicate` (src/commands.c; COMMAND INFO
/// does not show the flag): they write nothing themselves but may propagate.
const MAY_REPLICATE: &[&str] = &["pfcount", "publish", "spublish", "eval", "evalsha", "fcall"];

/// Whether command `index` is one Redis flags `may_replicate`.
pub fn may_replicate(index: usize) -> bool {
    MAY_REPLICATE.contains(&spec(index).name)
}

/// Builds the tables derived from Redis's command metadata (parsing it), so
/// that the first CLIENT LIST or CONFIG GET does not pay for it.
pub fn warm_up() {
    let _ = stat_slots();
}

/// Where `arg` sits among command `index`'s subcommands, plus one (0: the
/// command has no subcommands, or none is named `arg`). Remembered per client
/// for CLIENT LIST's `cmd=` field.
pub fn subcommand_slot(index: usize, arg: &[u8]) -> u8 {
    let names = &subcommands()[index];
    if names.is_empty() {
        return 0;
    }
    let name = spec(index).name;
    let position = names.iter().position(|full| {
        full.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('|'))
            .is_some_and(|sub| sub.as_bytes().eq_ignore_ascii_case(arg))
    });
    position.map_or(0, |p| u8::try_from(p + 1).unwrap_or(0))
}

/// A command's full name as Redis prints it (`set`, `client|list`), from
/// its index and [`subcommand_slot`].
pub fn full_name(index: usize, slot: u8) -> &'static str {
    match slot.checked_sub(1).and_then(|p| subcommands()[index].get(usize::from(p))) {
        Some(full) => full,
        None => spec(index).name,
    }
}

/// Statistics slots: one per command (at the command's index), then one per
/// subcommand of every container, so INFO commandstats and LATENCY HISTOGRAM
/// report `client|list` rather than `client`, as Redis 7 does.
struct StatSlots {
    /// Per command index: where its subcommands' slots start (0: none).
    first_sub: Vec<usize>,
    /// Per slot: the full name and the command index it belongs to.
    names: Vec<(&'static str, usize)>,
}

fn stat_slots() -> &'static StatSlots {
    static SLOTS: OnceLock<StatSlots> = OnceLock::new();
    SLOTS.get_or_init(|| {
        let mut names: Vec<(&'static str, usize)> = all().iter().enumerate().map(|(i, c)| (c.name, i)).collect();
        let mut first_sub = vec![0; all().len()];
        for (index, subs) in subcommands().iter().enumerate() {
            if !subs.is_empty() {
                first_sub[index] = names.len();
                names.extend(subs.iter().map(|full| (full.as_str(), index)));
            }
        }
        StatSlots { first_sub, names }
    })
}

/// Number of statistics slots (commands and subcommands).
pub fn stat_count() -> usize {
    stat_slots().names.len()
}

/// The statistics slot of command `index` run with subcommand `slot`
/// ([`subcommand_slot`]; 0: the command itself).
#[inline]
pub fn stat_index(index: usize, slot: u8) -> usize {
    match slot {
        0 => index,
        s => stat_slots().first_sub[index] + usize::from(s) - 1,
    }
}

/// The statistics slot of a request for command `index` (its subcommand's
/// slot when it is a container), off the dispatcher's path.
pub fn stat_of_request(index: usize, args: &[&[u8]]) -> usize {
    if spec(index).flags & SUBCOMMANDS == 0 {
        return index;
    }
    stat_index(index, args.get(1).map_or(0, |sub| subcommand_slot(index, sub)))
}

/// The full name (`set`, `client|list`) of a statistics slot.
pub fn stat_name(stat: usize) -> &'static str {
    stat_slots().names.get(stat).map_or("", |(name, _)| name)
}

/// The command index a statistics slot belongs to.
pub fn stat_command(stat: usize) -> usize {
    stat_slots().names.get(stat).map_or(0, |(_, index)| *index)
}

/// The statistics slot named `name` (`get`, `CLIENT|LIST`), if any.
pub fn stat_by_name(name: &[u8]) -> Option<usize> {
    match name.iter().position(|&b| b == b'|') {
        None => lookup(name),
        Some(bar) => {
            let index = lookup(&name[..bar])?;
            let slot = subcommand_slot(index, &name[bar + 1..]);
            (slot != 0).then(|| stat_index(index, slot))
        }
    }
}

/// The statistics slots of command `index`'s subcommands.
pub fn stat_subcommands(index: usize) -> std::ops::Range<usize> {
    let first = stat_slots().first_sub[index];
    first..first + subcommands()[index].len()
}

/// Name → index. foldhash rather than SipHash: the names are ours, not an
/// attacker's, and lookup runs once per request.
type NameIndex = hashbrown::HashMap<&'static [u8], usize, foldhash::fast::FixedState>;

fn index() -> &'static NameIndex {
    static INDEX: OnceLock<NameIndex> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut map = NameIndex::with_hasher(foldhash::fast::FixedState::with_seed(7));
        map.extend(all().iter().enumerate().map(|(i, c)| (c.name.as_bytes(), i)));
        map
    })
}

/// Whether `name` is a command that runs a Lua script.
pub fn names_script(name: &[u8]) -> bool {
    lookup(name).is_some_and(|index| spec(index).runs_script())
}

/// Finds a command by name, ignoring case, without allocating.
#[inline]
pub fn lookup(name: &[u8]) -> Option<usize> {
    let mut buf = [0u8; 32];
    if name.len() > buf.len() {
        return None;
    }
    let lower = &mut buf[..name.len()];
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    index().get(&*lower).copied()
}

/// [`lookup`], trying `hint` (the client's previous command) first: clients
/// mostly repeat a command, and comparing one name costs less than hashing.
#[inline]
pub fn lookup_hinted(name: &[u8], hint: usize) -> Option<usize> {
    match all().get(hint) {
        Some(spec) if spec.name.as_bytes().eq_ignore_ascii_case(name) => Some(hint),
        _ => lookup(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_count_agrees_with_key_positions() {
        let specs = [NONE, K1, K12, KALL, KPAIRS, (2, -2, 1), (1, -1, 3), (3, 3, 1)];
        for keys in specs {
            let spec = c("x", -1, W, keys, |_, _| Ok(()));
            for argc in 0..12 {
                assert_eq!(spec.key_count(argc), spec.key_positions(argc).len(), "{keys:?} argc {argc}");
            }
        }
    }

    #[test]
    fn a_hint_is_only_taken_when_it_names_the_command() {
        let get = lookup(b"get").expect("get");
        let set = lookup(b"set").expect("set");
        assert_eq!(lookup_hinted(b"GET", get), Some(get));
        assert_eq!(lookup_hinted(b"get", set), Some(get));
        assert_eq!(lookup_hinted(b"nosuchcommand", get), None);
        assert_eq!(lookup_hinted(b"ge", get), None);
        assert_eq!(lookup_hinted(b"set", usize::from(u16::MAX)), Some(set));
    }

    #[test]
    fn lookup_ignores_case_and_names_are_unique() {
        assert_eq!(lookup(b"GeT").map(|i| spec(i).name), Some("get"));
        assert_eq!(lookup(b"nosuchcommand"), None);
        assert_eq!(index().len(), all().len(), "duplicate command name");
    }

    /// Every command Redis flags `write` is flagged WRITE here (so the log
    /// records it), and the other way round; write commands whose keys
    /// Redis calls movable are flagged MOVABLE (so all their shards are held).
    #[test]
    fn write_and_movable_flags_match_redis() {
        let meta: serde_json::Value =
            serde_json::from_str(include_str!("redis_meta.json")).expect("redis_meta.json parses");
        for spec in all() {
            let Some(entry) = meta.get(spec.name) else { continue };
            let flags = &entry[0][2];
            let flags =
                flags.get("~+").or_else(|| flags.get("~")).and_then(|f| f.as_array()).cloned().unwrap_or_default();
            let has = |f: &str| flags.iter().any(|v| v.as_str() == Some(f));
            if spec.name == "xgroup" {
                continue; // a container: Redis flags its subcommands
            }
            assert_eq!(has("write"), spec.flags & WRITE != 0, "WRITE flag of {}", spec.name);
            if has("write") && has("movablekeys") {
                assert!(spec.flags & MOVABLE != 0, "{} has movable keys", spec.name);
            }
            assert_eq!(
                has("loading"),
                spec.flags & LOADING_OK != 0 && !["client", "config", "slowlog", "latency", "acl"].contains(&spec.name),
                "LOADING_OK flag of {}",
                spec.name
            );
        }
    }

    #[test]
    fn containers_are_flagged_as_redis_has_them() {
        for spec in all() {
            let has = !super::super::meta::subcommand_names(spec.name).is_empty();
            assert_eq!(spec.flags & SUBCOMMANDS != 0, has, "SUBCOMMANDS flag of {}", spec.name);
        }
    }

    #[test]
    fn subcommands_have_statistics_slots_of_their_own() {
        let client = lookup(b"client").expect("client");
        let list = stat_by_name(b"CLIENT|list").expect("client|list");
        assert!(list >= count());
        assert_eq!(stat_name(list), "client|list");
        assert_eq!(stat_command(list), client);
        assert!(stat_subcommands(client).contains(&list));
        assert_eq!(stat_of_request(client, &[b"client", b"LIST"]), list);
        assert_eq!(stat_of_request(client, &[b"client", b"nosuch"]), client);
        let get = lookup(b"get").expect("get");
        assert_eq!(stat_by_name(b"get"), Some(get));
        assert_eq!(stat_name(get), "get");
        assert_eq!(stat_by_name(b"get|x"), None);
        assert_eq!(stat_by_name(b"client|nosuch"), None);
    }

    #[test]
    fn key_positions() {
        let mset = spec(lookup(b"mset").unwrap());
        assert_eq!(mset.key_positions(5), vec![1, 3]);
        let get = spec(lookup(b"get").unwrap());
        assert_eq!(get.key_positions(2), vec![1]);
    }
}
