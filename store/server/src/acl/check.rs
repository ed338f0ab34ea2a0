//! Whether a user may run a command: the command itself, the keys it names
//! and the channels it publishes or subscribes to (Redis's
//! `ACLCheckAllUserCommandPerm`).

use cairn_engine::glob;

use super::user::Rules;
use crate::commands::{key_specs, meta};

/// What a user may not do (Redis 7.0's `NOPERM` texts through [`Denied::message`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// The command (full name, `config|get`).
    Command(String),
    /// A key (its position in the arguments).
    Key(usize),
    /// A channel (its position in the arguments).
    Channel(usize),
    /// The user was deleted (its connections are closed).
    Removed,
}

impl Denied {
    /// The error reply.
    pub fn message(&self) -> String {
        match self {
            Denied::Command(name) => format!("NOPERM this user has no permissions to run the '{name}' command"),
            Denied::Key(_) => "NOPERM this user has no permissions to access one of the keys used as arguments".into(),
            Denied::Channel(_) => {
                "NOPERM this user has no permissions to access one of the channels used as arguments".into()
            }
            Denied::Removed => "NOPERM this user was deleted".into(),
        }
    }

    /// The error of a command a script called (Redis's `scriptVerifyACL`).
    pub fn script_message(&self) -> String {
        let why = match self {
            Denied::Command(_) => "can't run this command or subcommand",
            Denied::Key(_) => "can't access at least one of the keys mentioned in the command arguments",
            Denied::Channel(_) => "can't publish to the channel mentioned in the command",
            Denied::Removed => "lacking the permissions for the command",
        };
        format!("ERR The user executing the script {why}")
    }

    /// ACL DRYRUN's answer for command `args`.
    pub fn dry_run_message(&self, args: &[&[u8]]) -> String {
        let arg = |pos: &usize| String::from_utf8_lossy(args.get(*pos).copied().unwrap_or_default()).into_owned();
        match self {
            Denied::Command(name) => format!("This user has no permissions to run the '{name}' command"),
            Denied::Key(pos) => format!("This user has no permissions to access the '{}' key", arg(pos)),
            Denied::Channel(pos) => format!("This user has no permissions to access the '{}' channel", arg(pos)),
            Denied::Removed => "This user was deleted".into(),
        }
    }
}

/// The full name of the command `args` runs (`get`, `config|get`): a
/// container's subcommand when it has one.
pub fn full_name(name: &str, args: &[&[u8]]) -> String {
    if args.len() >= 2 {
        let subs = meta::subcommand_names(name);
        if !subs.is_empty() {
            let full = format!("{name}|{}", String::from_utf8_lossy(args[1]).to_ascii_lowercase());
            if subs.contains(&full) {
                return full;
            }
        }
    }
    name.to_string()
}

/// Checks command `name` (lowercase, as in the command table) with `args`
/// (`args[0]` the name) against `rules`.
pub fn check(rules: &Rules, name: &str, args: &[&[u8]]) -> Result<(), Denied> {
    let full = full_name(name, args);
    if !rules.allows_command(&full) {
        return Err(Denied::Command(full));
    }
    if !rules.all_keys {
        check_keys(rules, args)?;
    }
    if !rules.all_channels {
        check_channels(rules, name, args)?;
    }
    Ok(())
}

fn check_keys(rules: &Rules, args: &[&[u8]]) -> Result<(), Denied> {
    let Ok(keys) = key_specs::keys_of(args) else { return Ok(()) };
    for key in keys {
        let flagged = |names: &[&str]| key.flags.iter().any(|f| names.iter().any(|n| f.eq_ignore_ascii_case(n)));
        let (mut read, mut write) = (flagged(&["RO", "RW", "access"]), flagged(&["RW", "OW", "RM"]));
        if !read && !write {
            (read, write) = (true, true);
        }
        let name = args[key.pos];
        let allowed = rules
            .keys
            .iter()
            .any(|p| (!read || p.read) && (!write || p.write) && glob::matches(&p.pattern, name, false));
        if !allowed {
            return Err(Denied::Key(key.pos));
        }
    }
    Ok(())
}

fn check_channels(rules: &Rules, name: &str, args: &[&[u8]]) -> Result<(), Denied> {
    let (last, literal) = match name {
        "publish" | "spublish" => (2.min(args.len()), false),
        "subscribe" | "ssubscribe" => (args.len(), false),
        // A pattern subscription needs the same pattern in the rules.
        "psubscribe" => (args.len(), true),
        _ => return Ok(()),
    };
    for (pos, channel) in args.iter().enumerate().take(last).skip(1) {
        let allowed = rules.channels.iter().any(|p| {
            if literal {
                p.as_slice() == *channel
            } else {
                glob::matches(p, channel, false)
            }
        });
        if !allowed {
            return Err(Denied::Channel(pos));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(list: &[&str]) -> Rules {
        Rules::with_rules(list).expect("valid rules")
    }

    #[test]
    fn commands_keys_and_channels() {
        let r = rules(&["on", "+set", "+get", "+publish", "+psubscribe", "~x*", "&news.*"]);
        assert_eq!(check(&r, "set", &[b"set", b"xx", b"1"]), Ok(()));
        assert_eq!(check(&r, "set", &[b"set", b"yy", b"1"]), Err(Denied::Key(1)));
        assert_eq!(check(&r, "hset", &[b"hset", b"xx", b"f", b"1"]), Err(Denied::Command("hset".into())));
        assert_eq!(check(&r, "publish", &[b"publish", b"news.a", b"m"]), Ok(()));
        assert_eq!(check(&r, "publish", &[b"publish", b"other", b"m"]), Err(Denied::Channel(1)));
        assert_eq!(check(&r, "psubscribe", &[b"psubscribe", b"news.*"]), Ok(()));
        assert_eq!(check(&r, "psubscribe", &[b"psubscribe", b"news.a*"]), Err(Denied::Channel(1)));
        // `off` only stops new authentications: connections keep working.
        let off = rules(&["+@all", "allkeys"]);
        assert_eq!(check(&off, "get", &[b"get", b"k"]), Ok(()));
    }

    #[test]
    fn read_and_write_key_patterns() {
        let r = rules(&["on", "+@all", "%R~r*", "%W~w*"]);
        assert_eq!(check(&r, "get", &[b"get", b"r1"]), Ok(()));
        assert_eq!(check(&r, "set", &[b"set", b"r1", b"v"]), Err(Denied::Key(1)));
        assert_eq!(check(&r, "set", &[b"set", b"w1", b"v"]), Ok(()));
        assert_eq!(check(&r, "get", &[b"get", b"w1"]), Err(Denied::Key(1)));
    }

    #[test]
    fn subcommands_are_checked_by_their_full_name() {
        let r = rules(&["on", "+config|get", "allkeys"]);
        assert_eq!(check(&r, "config", &[b"config", b"GET", b"port"]), Ok(()));
        assert_eq!(check(&r, "config", &[b"config", b"set", b"port", b"1"]), Err(Denied::Command("config|set".into())));
    }
}
