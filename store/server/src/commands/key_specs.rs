//! Which arguments of a command are keys, and how it uses them: COMMAND
//! GETKEYS and GETKEYSANDFLAGS, with Redis 7.0's `getKeysFromCommandWithSpecs`.
//!
//! A command's key specs come from Redis's own table (`redis_meta.json`, the
//! 9th element of COMMAND INFO, per subcommand too): where the search begins
//! (an index, or after a keyword searched from some position) and how keys
//! are found from there (a range, or a count argument). Commands whose specs
//! are incomplete (SORT, MIGRATE) or whose flags depend on the arguments
//! (SET with GET, BITFIELD) use the same hand-written rules as Redis's
//! `*GetKeys` functions in db.c, as does a spec that does not fit the
//! arguments (the `genericGetKeys` fallback of commands with a key count).

/// Where the search for a spec's keys begins.
#[derive(Clone, Debug, PartialEq)]
pub enum BeginSearch {
    /// At this argument.
    Index(i64),
    /// After `keyword`, searched from `startfrom` (negative: from the end, backwards).
    Keyword { keyword: String, startfrom: i64 },
    /// Not expressible (SORT's BY/GET/STORE keys).
    Unknown,
}

/// How a spec's keys are found from where the search began.
#[derive(Clone, Debug, PartialEq)]
pub enum FindKeys {
    /// Keys up to `lastkey` (relative; negative: from the end), every `keystep`;
    /// `limit` > 0 takes 1/limit of what remains (XREAD's keys, then IDs).
    Range {
        lastkey: i64,
        keystep: i64,
        limit: i64,
    },
    /// The argument at `keynumidx` counts the keys, which start `firstkey` after it.
    Keynum {
        keynumidx: i64,
        firstkey: i64,
        keystep: i64,
    },
    Unknown,
}

/// One key spec of a command.
#[derive(Clone, Debug, PartialEq)]
pub struct KeySpec {
    /// Redis's flags, in its order (`RW`, `access`, `update`, ...).
    pub flags: Vec<String>,
    pub begin: BeginSearch,
    pub find: FindKeys,
}

impl KeySpec {
    fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }
}

/// A key found in a command: its argument position and its flags.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyRef {
    pub pos: usize,
    pub flags: Vec<&'static str>,
}

/// Why COMMAND GETKEYS cannot answer (Redis's messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GetKeysError {
    InvalidCommand,
    NoKeyArguments,
    WrongArity,
    InvalidArguments,
}

impl GetKeysError {
    pub fn message(self) -> &'static str {
        match self {
            GetKeysError::InvalidCommand => "ERR Invalid command specified",
            GetKeysError::NoKeyArguments => "ERR The command has no key arguments",
            GetKeysError::WrongArity => "ERR Invalid number of arguments specified for command",
            GetKeysError::InvalidArguments => "ERR Invalid arguments specified for command",
        }
    }
}

/// The keys of the full command `argv` (`argv[0]` the command name; a
/// container's subcommand in `argv[1]`), as COMMAND GETKEYSANDFLAGS finds them.
pub fn keys_of(argv: &[&[u8]]) -> Result<Vec<KeyRef>, GetKeysError> {
    let name = resolve(argv).ok_or(GetKeysError::InvalidCommand)?;
    let specs = super::meta::key_specs(&name);
    let has_proc = legacy_proc(&name).is_some();
    if !has_proc && !specs.iter().any(|s| !s.has("not_key")) {
        return Err(GetKeysError::NoKeyArguments);
    }
    let arity = super::meta::arity(&name).unwrap_or(0);
    let argc = argv.len() as i64;
    if (arity > 0 && arity != argc) || argc < -arity {
        return Err(GetKeysError::WrongArity);
    }
    let varflags = specs.iter().any(|s| s.has("variable_flags"));
    let from_specs = if varflags { None } else { keys_from_specs(&specs, argv) };
    let keys = match (from_specs, legacy_proc(&name)) {
        (Some(keys), _) => keys,
        (None, Some(proc_)) => proc_(argv),
        (None, None) => Vec::new(),
    };
    if keys.is_empty() && !super::meta::has_flag(&name, "no_mandatory_keys") {
        return Err(GetKeysError::InvalidArguments);
    }
    Ok(keys)
}

/// The lower-case name Redis's table knows the command by (`memory|usage`
/// for a container's subcommand), as `lookupCommand` resolves it.
fn resolve(argv: &[&[u8]]) -> Option<String> {
    let base = String::from_utf8_lossy(argv.first()?).to_ascii_lowercase();
    super::table::lookup(base.as_bytes())?;
    if !super::meta::knows(&base) || base.contains('|') {
        return None;
    }
    let subs = super::meta::subcommand_names(&base);
    if argv.len() == 1 || subs.is_empty() {
        return Some(base);
    }
    let full = format!("{base}|{}", String::from_utf8_lossy(argv[1]).to_ascii_lowercase());
    subs.contains(&full).then_some(full)
}

/// Redis's `getKeysUsingKeySpecs`: `None` when a spec is incomplete or does
/// not fit the arguments (the caller then falls back to the command's rule).
fn keys_from_specs(specs: &[KeySpec], argv: &[&[u8]]) -> Option<Vec<KeyRef>> {
    let argc = argv.len() as i64;
    let mut keys = Vec::new();
    for spec in specs.iter().filter(|s| !s.has("not_key")) {
        let Some(first) = begin(spec, argv)? else { continue };
        let (first, last, step) = match spec.find {
            FindKeys::Range { lastkey, keystep, limit } => {
                let last = match (lastkey >= 0, limit) {
                    (true, _) => first + lastkey,
                    (false, 0) => argc + lastkey,
                    (false, limit) => first + ((argc - first) / limit + lastkey),
                };
                (first, last, keystep)
            }
            FindKeys::Keynum { keynumidx, firstkey, keystep } => {
                let count_at = usize::try_from(first + keynumidx).ok().filter(|&i| i < argv.len())?;
                let count = cairn_engine::number::parse_i64(argv[count_at]).filter(|n| *n >= 0)?;
                let first = first + firstkey;
                (first, first + count - 1, keystep)
            }
            FindKeys::Unknown => return None,
        };
        if last >= argc || last < first || first >= argc {
            return None;
        }
        let flags = static_flags(&spec.flags);
        let mut pos = first;
        while pos <= last {
            keys.push(KeyRef { pos: pos as usize, flags: flags.clone() });
            pos += step.max(1);
        }
        if spec.has("incomplete") {
            return None;
        }
    }
    Some(keys)
}

/// Where a spec's keys begin: `Some(None)` when its keyword is absent (the
/// spec gives no keys), `None` when the spec cannot say.
fn begin(spec: &KeySpec, argv: &[&[u8]]) -> Option<Option<i64>> {
    let argc = argv.len() as i64;
    match &spec.begin {
        BeginSearch::Index(i) => Some(Some(*i)),
        BeginSearch::Keyword { keyword, startfrom } => {
            let start = if *startfrom > 0 { *startfrom } else { argc + startfrom };
            let end = if *startfrom > 0 { argc - 1 } else { 1 };
            let mut i = start;
            while i != end {
                if i >= argc || i < 1 {
                    break;
                }
                if super::is(argv[i as usize], keyword) {
                    return Some(Some(i + 1));
                }
                i = if start <= end { i + 1 } else { i - 1 };
            }
            Some(None)
        }
        BeginSearch::Unknown => None,
    }
}

/// Redis's flag names as static strings, in the order given.
fn static_flags(flags: &[String]) -> Vec<&'static str> {
    const NAMES: &[&str] =
        &["RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key", "incomplete", "variable_flags"];
    flags.iter().filter_map(|f| NAMES.iter().find(|n| **n == f).copied()).collect()
}

/// A command's hand-written key rule (Redis's `getkeys_proc`).
type Proc = fn(&[&[u8]]) -> Vec<KeyRef>;

fn legacy_proc(name: &str) -> Option<Proc> {
    Some(match name {
        "set" => set_keys,
        "bitfield" => bitfield_keys,
        "sort" => sort_keys,
        "sort_ro" => |_: &[&[u8]]| vec![key(1, &["RO", "access"])],
        "migrate" => migrate_keys,
        "zunionstore" | "zinterstore" | "zdiffstore" => |a: &[&[u8]]| counted_keys(a, 1, 2, 3),
        "zunion" | "zinter" | "zdiff" | "sintercard" | "zintercard" | "lmpop" | "zmpop" => {
            |a: &[&[u8]]| counted_keys(a, 0, 1, 2)
        }
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" | "blmpop" | "bzmpop" => {
            |a: &[&[u8]]| counted_keys(a, 0, 2, 3)
        }
        _ => return None,
    })
}

fn key(pos: usize, flags: &[&'static str]) -> KeyRef {
    KeyRef { pos, flags: flags.to_vec() }
}

/// Redis's `genericGetKeys`: a key count at `count_at`, keys from `first`,
/// and a destination at `store` (0: none) listed last; nothing when the
/// count (read as `atoi` does) does not fit.
fn counted_keys(argv: &[&[u8]], store: usize, count_at: usize, first: usize) -> Vec<KeyRef> {
    let Some(count) = argv.get(count_at).map(|a| atoi(a)) else { return Vec::new() };
    if count < 1 || count > argv.len().saturating_sub(first) as i64 {
        return Vec::new();
    }
    let mut keys: Vec<KeyRef> = (0..count as usize).map(|i| key(first + i, &[])).collect();
    if store != 0 {
        keys.push(key(store, &[]));
    }
    keys
}

/// C's `atoi`: optional sign and leading digits, 0 when there are none.
pub(super) fn atoi(arg: &[u8]) -> i64 {
    let text = String::from_utf8_lossy(arg);
    let text = text.trim_start();
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, text.strip_prefix('+').unwrap_or(text)),
    };
    let digits: String = digits.chars().take_while(char::is_ascii_digit).take(18).collect();
    sign * digits.parse::<i64>().unwrap_or(0)
}

/// Redis's `setGetKeys`: read-write with GET, overwrite otherwise.
fn set_keys(argv: &[&[u8]]) -> Vec<KeyRef> {
    let get = argv.iter().skip(3).any(|a| super::is(a, "get"));
    vec![key(1, if get { &["RW", "access", "update"] } else { &["OW", "update"] })]
}

/// Redis's `bitfieldGetKeys`: read-only when only GET (and OVERFLOW) appear.
fn bitfield_keys(argv: &[&[u8]]) -> Vec<KeyRef> {
    let mut readonly = true;
    let mut i = 2;
    while i < argv.len() {
        let remaining = argv.len() - i - 1;
        let arg = argv[i];
        if super::is(arg, "get") && remaining >= 2 {
            i += 3;
        } else if (super::is(arg, "set") || super::is(arg, "incrby")) && remaining >= 3 {
            readonly = false;
            break;
        } else if super::is(arg, "overflow") && remaining >= 1 {
            i += 2;
        } else {
            readonly = false;
            break;
        }
    }
    vec![key(1, if readonly { &["RO", "access"] } else { &["RW", "access", "update"] })]
}

/// Redis's `sortGetKeys`: the sorted key, and the last STORE's destination.
fn sort_keys(argv: &[&[u8]]) -> Vec<KeyRef> {
    let mut keys = vec![key(1, &["RO", "access"])];
    let mut store = None;
    let mut i = 2;
    while i < argv.len() {
        let arg = argv[i];
        if super::is(arg, "limit") {
            i += 2;
        } else if super::is(arg, "get") || super::is(arg, "by") {
            i += 1;
        } else if super::is(arg, "store") && i + 1 < argv.len() {
            store = Some(i + 1);
        }
        i += 1;
    }
    keys.extend(store.map(|pos| key(pos, &["OW", "update"])));
    keys
}

/// Redis's `migrateGetKeys`: the key argument, or the keys after KEYS.
fn migrate_keys(argv: &[&[u8]]) -> Vec<KeyRef> {
    let (mut first, mut count) = (3, 1);
    let mut i = 6;
    while i < argv.len() {
        let arg = argv[i];
        if super::is(arg, "keys") {
            if argv[3].is_empty() {
                first = i + 1;
                count = argv.len() - first;
            } else {
                count = 0;
            }
            break;
        }
        i += if super::is(arg, "auth") {
            2
        } else if super::is(arg, "auth2") {
            3
        } else {
            1
        };
    }
    (first..first + count).filter(|&p| p < argv.len()).map(|p| key(p, &["RW", "access", "delete"])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn positions(argv: &[&str]) -> Result<Vec<usize>, GetKeysError> {
        let args: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
        keys_of(&args).map(|keys| keys.into_iter().map(|k| k.pos).collect())
    }

    fn flags(argv: &[&str]) -> Vec<Vec<&'static str>> {
        let args: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
        keys_of(&args).map(|keys| keys.into_iter().map(|k| k.flags).collect()).unwrap_or_default()
    }

    #[test]
    fn movable_keys_follow_their_specs() {
        assert_eq!(positions(&["zunionstore", "d", "2", "a", "b", "weights", "1", "2"]), Ok(vec![1, 3, 4]));
        assert_eq!(positions(&["zinter", "2", "a", "b"]), Ok(vec![2, 3]));
        assert_eq!(positions(&["lmpop", "2", "a", "b", "left"]), Ok(vec![2, 3]));
        assert_eq!(positions(&["blmpop", "0", "2", "a", "b", "left"]), Ok(vec![3, 4]));
        assert_eq!(positions(&["bzmpop", "0", "1", "a", "min"]), Ok(vec![3]));
        assert_eq!(positions(&["sintercard", "2", "a", "b", "limit", "1"]), Ok(vec![2, 3]));
        assert_eq!(positions(&["eval", "return 1", "2", "a", "b", "x"]), Ok(vec![3, 4]));
        assert_eq!(positions(&["eval", "return 1", "0"]), Ok(vec![]));
        assert_eq!(positions(&["xread", "count", "1", "streams", "s1", "s2", "0", "0"]), Ok(vec![4, 5]));
        assert_eq!(positions(&["xreadgroup", "group", "g", "c", "streams", "s1", "0"]), Ok(vec![5]));
        assert_eq!(positions(&["sort", "a", "by", "w", "store", "d"]), Ok(vec![1, 5]));
        // SORT (Redis's `sortGetKeys`): the last STORE wins; LIMIT, GET and BY skip their arguments.
        assert_eq!(positions(&["sort", "abc", "store", "x", "STORE", "y", "store", "def"]), Ok(vec![1, 7]));
        assert_eq!(positions(&["sort", "abc", "limit", "store", "x", "store"]), Ok(vec![1]));
        assert_eq!(positions(&["sort", "abc", "get", "store", "by", "x"]), Ok(vec![1]));
        assert_eq!(positions(&["sort", "abc", "store", "store"]), Ok(vec![1, 3]));
        // Redis 7.0.15 reports both STORE and STOREDIST keys here.
        assert_eq!(
            positions(&["georadius", "k", "0", "0", "1", "m", "STORE", "a", "storedist", "b"]),
            Ok(vec![1, 7, 9])
        );
        assert_eq!(positions(&["georadius", "g", "0", "0", "1", "km", "store", "d"]), Ok(vec![1, 7]));
        let migrate: Vec<&[u8]> = vec![b"migrate", b"h", b"1", b"", b"0", b"5", b"auth", b"p", b"keys", b"a", b"b"];
        assert_eq!(migrate_keys(&migrate).iter().map(|k| k.pos).collect::<Vec<_>>(), vec![9, 10]);
        assert_eq!(positions(&["memory", "usage", "k"]), Ok(vec![2]));
        assert_eq!(positions(&["xgroup", "create", "k", "g", "$"]), Ok(vec![2]));
    }

    #[test]
    fn errors_are_redis_s() {
        assert_eq!(positions(&["nosuch", "a"]), Err(GetKeysError::InvalidCommand));
        assert_eq!(positions(&["ping"]), Err(GetKeysError::NoKeyArguments));
        assert_eq!(positions(&["get"]), Err(GetKeysError::WrongArity));
        assert_eq!(positions(&["zunionstore", "d", "5", "a"]), Err(GetKeysError::InvalidArguments));
        assert_eq!(positions(&["zinter", "0", "a"]), Err(GetKeysError::InvalidArguments));
    }

    #[test]
    fn flags_come_from_specs_or_the_command_s_rule() {
        assert_eq!(flags(&["set", "k", "v"]), vec![vec!["OW", "update"]]);
        assert_eq!(flags(&["set", "k", "v", "get"]), vec![vec!["RW", "access", "update"]]);
        assert_eq!(
            flags(&["lmove", "a", "b", "left", "right"]),
            vec![vec!["RW", "access", "delete"], vec!["RW", "insert"]]
        );
        assert_eq!(flags(&["sort", "a", "store", "b"]), vec![vec!["RO", "access"], vec!["OW", "update"]]);
        assert_eq!(flags(&["bitfield", "k", "get", "u8", "0"]), vec![vec!["RO", "access"]]);
        assert_eq!(atoi(b"12abc"), 12);
        assert_eq!(atoi(b"x"), 0);
    }
}
