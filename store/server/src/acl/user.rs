//! One ACL user: its flags, passwords and what it may run and touch, the
//! rules of `ACL SETUSER` that change them, and their description for
//! `ACL LIST` and `ACL GETUSER`.

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::RwLock;

use crate::commands::meta;

/// A user. Connections hold it and see its changes at once.
#[derive(Debug)]
pub struct User {
    pub name: String,
    rules: RwLock<Rules>,
    /// Every command, every key, every channel: nothing to check.
    unrestricted: AtomicBool,
    /// Deleted by `ACL DELUSER`: its connections are closed.
    removed: AtomicBool,
}

impl User {
    pub fn new(name: &str, rules: Rules) -> User {
        let user = User {
            name: name.to_string(),
            unrestricted: AtomicBool::new(rules.is_unrestricted()),
            rules: RwLock::new(rules),
            removed: AtomicBool::new(false),
        };
        user.refresh();
        user
    }

    /// Whether no check is needed (one relaxed load on the hot path).
    #[inline]
    pub fn is_unrestricted(&self) -> bool {
        self.unrestricted.load(Ordering::Relaxed)
    }

    pub fn is_removed(&self) -> bool {
        self.removed.load(Ordering::Acquire)
    }

    pub fn mark_removed(&self) {
        self.removed.store(true, Ordering::Release);
        self.unrestricted.store(false, Ordering::Release);
    }

    pub fn rules(&self) -> parking_lot::RwLockReadGuard<'_, Rules> {
        self.rules.read()
    }

    /// Replaces the rules (already validated as a whole).
    pub fn replace(&self, rules: Rules) {
        *self.rules.write() = rules;
        self.refresh();
    }

    fn refresh(&self) {
        let unrestricted = !self.is_removed() && self.rules.read().is_unrestricted();
        self.unrestricted.store(unrestricted, Ordering::Release);
    }
}

/// A key pattern and the access it grants (`~p` both, `%R~p`, `%W~p`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPattern {
    pub pattern: Vec<u8>,
    pub read: bool,
    pub write: bool,
}

/// What a user is and may do.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    pub enabled: bool,
    pub nopass: bool,
    /// SHA-256 of each password, lowercase hex.
    pub passwords: BTreeSet<String>,
    /// Full command names allowed (`get`, `config|get`).
    pub commands: HashSet<String>,
    /// The command rules as given since the last `+@all`/`-@all`, for the
    /// description (Redis 7.0 describes them the same way).
    pub command_rules: Vec<String>,
    pub all_keys: bool,
    pub keys: Vec<KeyPattern>,
    pub all_channels: bool,
    pub channels: Vec<Vec<u8>>,
}

/// Why a rule was refused (Redis 7.0's texts).
pub const SYNTAX: &str = "Syntax error";
pub const UNKNOWN_COMMAND: &str = "Unknown command or category name in ACL";
const KEYS_AFTER_ALL: &str = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does \
                              not have any effect. Try 'resetkeys' to start with an empty list of patterns";
const CHANNELS_AFTER_ALL: &str = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid \
                                  and does not have any effect. Try 'resetchannels' to start with an empty list \
                                  of channels";
const NO_SUCH_PASSWORD: &str = "The password you are trying to remove from the user does not exist";
const BAD_HASH: &str =
    "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters";

/// The ACL categories of Redis 7.0, in `ACL CAT`'s order.
pub const CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

impl Rules {
    /// A new user: off, no password, no commands, keys or channels.
    pub fn new_user() -> Rules {
        Rules { command_rules: vec!["-@all".into()], ..Rules::default() }
    }

    /// The default user: on, every command, key and channel, `nopass`
    /// unless `requirepass` sets its password.
    pub fn default_user(requirepass: Option<&str>) -> Rules {
        let mut rules = Rules::with_rules(&["on", "allkeys", "allchannels", "allcommands"])
            .expect("the default user's rules are valid");
        rules.set_password(requirepass);
        rules
    }

    /// A new user with `rules` applied in order (as `ACL SETUSER` would).
    pub fn with_rules(rules: &[&str]) -> Result<Rules, &'static str> {
        let mut built = Rules::new_user();
        for rule in rules {
            built.apply(rule.as_bytes())?;
        }
        Ok(built)
    }

    /// `requirepass`: the only password, or `nopass` when empty.
    pub fn set_password(&mut self, password: Option<&str>) {
        self.passwords.clear();
        match password {
            Some(p) => {
                self.nopass = false;
                self.passwords.insert(hash_password(p.as_bytes()));
            }
            None => self.nopass = true,
        }
    }

    /// Every command, key and channel (`off` only stops new
    /// authentications: connections already in keep working, as in Redis).
    pub fn is_unrestricted(&self) -> bool {
        self.all_keys && self.all_channels && self.allows_every_command()
    }

    fn allows_every_command(&self) -> bool {
        self.command_rules.len() == 1 && self.command_rules[0] == "+@all"
    }

    /// Whether `password` opens this user.
    pub fn accepts(&self, password: &[u8]) -> bool {
        self.enabled && (self.nopass || self.passwords.contains(&hash_password(password)))
    }

    /// Applies one `ACL SETUSER` rule.
    pub fn apply(&mut self, rule: &[u8]) -> Result<(), &'static str> {
        let text = std::str::from_utf8(rule).map_err(|_| SYNTAX)?;
        let lower = text.to_ascii_lowercase();
        match lower.as_str() {
            "on" => self.enabled = true,
            "off" => self.enabled = false,
            "nopass" | "resetpass" => {
                self.nopass = lower == "nopass";
                self.passwords.clear();
            }
            "allkeys" | "resetkeys" => self.set_all_keys(lower == "allkeys"),
            "allchannels" | "resetchannels" => self.set_all_channels(lower == "allchannels"),
            "allcommands" | "+@all" => self.allow_all(true),
            "nocommands" | "-@all" => self.allow_all(false),
            "reset" => *self = Rules::new_user(),
            _ => return self.apply_prefixed(text, rule),
        }
        Ok(())
    }

    fn apply_prefixed(&mut self, text: &str, rule: &[u8]) -> Result<(), &'static str> {
        match rule[0] {
            b'>' => {
                self.passwords.insert(hash_password(&rule[1..]));
                self.nopass = false;
            }
            b'<' => {
                if !self.passwords.remove(&hash_password(&rule[1..])) {
                    return Err(NO_SUCH_PASSWORD);
                }
            }
            b'#' => {
                let hash = &text[1..];
                if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
                    return Err(BAD_HASH);
                }
                self.passwords.insert(hash.to_string());
                self.nopass = false;
            }
            b'!' => {
                if !self.passwords.remove(&text[1..]) {
                    return Err(NO_SUCH_PASSWORD);
                }
            }
            b'~' => self.add_keys(&rule[1..], true, true)?,
            b'%' => {
                let (access, pattern) = text[1..].split_once('~').ok_or(SYNTAX)?;
                let (read, write) = match access.to_ascii_uppercase().as_str() {
                    "R" => (true, false),
                    "W" => (false, true),
                    "RW" | "WR" => (true, true),
                    _ => return Err(SYNTAX),
                };
                self.add_keys(pattern.as_bytes(), read, write)?;
            }
            b'&' => {
                if self.all_channels {
                    return Err(CHANNELS_AFTER_ALL);
                }
                if &rule[1..] == b"*" {
                    self.set_all_channels(true);
                } else if !self.channels.iter().any(|c| c == &rule[1..]) {
                    self.channels.push(rule[1..].to_vec());
                }
            }
            b'+' | b'-' => self.apply_command_rule(text)?,
            _ => return Err(SYNTAX),
        }
        Ok(())
    }

    fn add_keys(&mut self, pattern: &[u8], read: bool, write: bool) -> Result<(), &'static str> {
        if self.all_keys {
            return Err(KEYS_AFTER_ALL);
        }
        if pattern == b"*" && read && write {
            self.set_all_keys(true);
            return Ok(());
        }
        match self.keys.iter_mut().find(|k| k.pattern == pattern) {
            Some(k) => {
                k.read |= read;
                k.write |= write;
            }
            None => self.keys.push(KeyPattern { pattern: pattern.to_vec(), read, write }),
        }
        Ok(())
    }

    /// `allkeys` (true) or `resetkeys` (false): no patterns left either way.
    fn set_all_keys(&mut self, all: bool) {
        self.all_keys = all;
        self.keys.clear();
    }

    /// `allchannels` (true) or `resetchannels` (false).
    fn set_all_channels(&mut self, all: bool) {
        self.all_channels = all;
        self.channels.clear();
    }

    fn allow_all(&mut self, allow: bool) {
        self.commands.clear();
        if allow {
            for name in meta::all_names() {
                self.commands.insert(name.to_string());
                self.commands.extend(meta::subcommand_names(name));
            }
        }
        self.command_rules = vec![if allow { "+@all" } else { "-@all" }.to_string()];
    }

    /// `+cmd`, `-cmd`, `+cmd|sub`, `-cmd|sub`, `+@category`, `-@category`.
    fn apply_command_rule(&mut self, text: &str) -> Result<(), &'static str> {
        let allow = text.starts_with('+');
        let target = text[1..].to_ascii_lowercase();
        let names: Vec<String> = if let Some(category) = target.strip_prefix('@') {
            if !CATEGORIES.contains(&category) {
                return Err(UNKNOWN_COMMAND);
            }
            in_category(category)
        } else if let Some((parent, _)) = target.split_once('|') {
            if !meta::subcommand_names(parent).contains(&target) {
                return Err(UNKNOWN_COMMAND);
            }
            vec![target.clone()]
        } else {
            if !meta::knows(&target) {
                return Err(UNKNOWN_COMMAND);
            }
            let mut names = meta::subcommand_names(&target);
            names.push(target.clone());
            names
        };
        for name in names {
            if allow {
                self.commands.insert(name);
            } else {
                self.commands.remove(&name);
            }
        }
        let rule = format!("{}{}", if allow { '+' } else { '-' }, target);
        self.command_rules.retain(|r| r[1..] != rule[1..]);
        self.command_rules.push(rule);
        Ok(())
    }

    /// Whether the full command name (`get`, `config|get`) is allowed.
    pub fn allows_command(&self, full_name: &str) -> bool {
        self.commands.contains(full_name)
    }

    /// The flags of `ACL GETUSER`.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags = vec![if self.enabled { "on" } else { "off" }];
        if self.all_keys {
            flags.push("allkeys");
        }
        if self.all_channels {
            flags.push("allchannels");
        }
        if self.allows_every_command() {
            flags.push("allcommands");
        }
        if self.nopass {
            flags.push("nopass");
        }
        flags
    }

    /// The commands, as `ACL GETUSER` and `ACL LIST` describe them.
    pub fn describe_commands(&self) -> String {
        self.command_rules.join(" ")
    }

    /// The keys (`~*`, `%R~a ~b`, or empty).
    pub fn describe_keys(&self) -> String {
        if self.all_keys {
            return "~*".into();
        }
        let words: Vec<String> = self
            .keys
            .iter()
            .map(|k| {
                let access = match (k.read, k.write) {
                    (true, true) => "",
                    (true, false) => "%R",
                    _ => "%W",
                };
                format!("{access}~{}", String::from_utf8_lossy(&k.pattern))
            })
            .collect();
        words.join(" ")
    }

    /// The channels (`&*`, `&a &b`, or empty).
    pub fn describe_channels(&self) -> String {
        if self.all_channels {
            return "&*".into();
        }
        let words: Vec<String> = self.channels.iter().map(|c| format!("&{}", String::from_utf8_lossy(c))).collect();
        words.join(" ")
    }

    /// One `ACL LIST` line without the `user <name>` prefix.
    pub fn describe(&self) -> String {
        let mut words: Vec<String> = vec![if self.enabled { "on" } else { "off" }.into()];
        if self.nopass {
            words.push("nopass".into());
        }
        words.extend(self.passwords.iter().map(|h| format!("#{h}")));
        let keys = self.describe_keys();
        words.push(if keys.is_empty() { "resetkeys".into() } else { keys });
        let channels = self.describe_channels();
        words.push(if channels.is_empty() { "resetchannels".into() } else { channels });
        words.push(self.describe_commands());
        words.join(" ")
    }
}

/// Every command and subcommand Redis puts in `category`.
pub fn in_category(category: &str) -> Vec<String> {
    let mut names = Vec::new();
    for name in meta::all_names() {
        if meta::in_acl_category(name, category) {
            names.push(name.to_string());
        }
        names.extend(meta::subcommand_names(name).into_iter().filter(|sub| meta::in_acl_category(sub, category)));
    }
    names
}

/// SHA-256 of a password, lowercase hex (as Redis keeps them).
pub fn hash_password(password: &[u8]) -> String {
    use sha2::Digest;
    crate::hex::lower(&sha2::Sha256::digest(password))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(rules: &[&str]) -> Rules {
        Rules::with_rules(rules).expect("valid rules")
    }

    #[test]
    fn a_new_user_is_off_and_may_do_nothing() {
        let r = Rules::new_user();
        assert!(!r.enabled && !r.allows_command("get") && !r.is_unrestricted());
        assert_eq!(r.describe(), "off resetkeys resetchannels -@all");
    }

    #[test]
    fn the_default_user_may_do_everything() {
        let r = Rules::default_user(None);
        assert!(r.is_unrestricted() && r.allows_command("config|get") && r.accepts(b"anything"));
        assert_eq!(r.describe(), "on nopass ~* &* +@all");
        let r = Rules::default_user(Some("secret"));
        assert!(r.accepts(b"secret") && !r.accepts(b"other"));
    }

    #[test]
    fn categories_commands_and_subcommands() {
        let r = user(&["on", ">123", "+@scripting", "+set", "~x*"]);
        assert!(r.allows_command("eval") && r.allows_command("set") && !r.allows_command("hset"));
        assert!(r.accepts(b"123") && !r.accepts(b"124"));
        assert_eq!(r.describe_commands(), "-@all +@scripting +set");
        let r = user(&["+config", "-config|set"]);
        assert!(r.allows_command("config|get") && !r.allows_command("config|set"));
        let r = user(&["+@all", "-@dangerous"]);
        assert!(r.allows_command("get") && !r.allows_command("flushall"));
    }

    #[test]
    fn bad_rules_are_refused_with_redis_texts() {
        let mut r = Rules::new_user();
        assert_eq!(r.apply(b"+nosuch"), Err(UNKNOWN_COMMAND));
        assert_eq!(r.apply(b"+@nosuch"), Err(UNKNOWN_COMMAND));
        assert_eq!(r.apply(b"bogus"), Err(SYNTAX));
        assert_eq!(r.apply(b"<missing"), Err(NO_SUCH_PASSWORD));
        assert_eq!(r.apply(b"#abc"), Err(BAD_HASH));
        r.apply(b"allkeys").unwrap();
        assert_eq!(r.apply(b"~foo"), Err(KEYS_AFTER_ALL));
    }

    #[test]
    fn key_patterns_keep_their_access() {
        let r = user(&["%R~read*", "%W~write*", "~both*"]);
        assert_eq!(r.describe_keys(), "%R~read* %W~write* ~both*");
        assert!(!r.all_keys);
        let r = user(&["~*"]);
        assert!(r.all_keys);
    }

    #[test]
    fn passwords_are_kept_as_sha256() {
        assert_eq!(hash_password(b"foo"), "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae");
    }
}
