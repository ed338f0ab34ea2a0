//! ACL users, as Redis 6+ has them: `ACL SETUSER`, `AUTH <user> <password>`,
//! and a `NOPERM` error for a command, key or channel a user may not use.
//!
//! Every connection holds its user ([`User`], shared: changes apply at
//! once). The default user (`default`: on, every command, key and channel;
//! its password is `requirepass`) needs no check, so the dispatcher's cost
//! for it is one relaxed load ([`User::is_unrestricted`]).
//!
//! Not kept across restarts (no ACL file); no selectors, no ACL LOG entries.
//!
//! - `user.rs`: one user's rules, `ACL SETUSER`'s parsing, descriptions
//! - `check.rs`: whether a user may run a command

pub mod check;
pub mod user;

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;

pub use check::Denied;
pub use user::{Rules, User};

/// The name of the default user.
pub const DEFAULT_USER: &str = "default";

/// The user of the server's own clients (log replay, a blocked command run
/// again): every command, unchecked.
pub fn internal_user() -> Arc<User> {
    static INTERNAL: std::sync::OnceLock<Arc<User>> = std::sync::OnceLock::new();
    INTERNAL.get_or_init(|| Arc::new(User::new(DEFAULT_USER, Rules::default_user(None)))).clone()
}

/// The users of one server.
#[derive(Debug)]
pub struct Acl {
    users: RwLock<BTreeMap<String, Arc<User>>>,
}

impl Acl {
    pub fn new(requirepass: Option<&str>) -> Acl {
        let default = Arc::new(User::new(DEFAULT_USER, Rules::default_user(requirepass)));
        Acl { users: RwLock::new(BTreeMap::from([(DEFAULT_USER.to_string(), default)])) }
    }

    pub fn default_user(&self) -> Arc<User> {
        self.get(DEFAULT_USER).expect("the default user cannot be removed")
    }

    pub fn get(&self, name: &str) -> Option<Arc<User>> {
        self.users.read().get(name).cloned()
    }

    /// Whether a new connection must authenticate: the default user is off
    /// or has a password.
    pub fn requires_auth(&self) -> bool {
        let default = self.default_user();
        let rules = default.rules();
        !(rules.enabled && rules.nopass)
    }

    /// The user `name` if `password` opens it.
    pub fn authenticate(&self, name: &[u8], password: &[u8]) -> Option<Arc<User>> {
        let user = self.get(std::str::from_utf8(name).ok()?)?;
        let accepted = user.rules().accepts(password);
        accepted.then_some(user)
    }

    /// `ACL SETUSER`: creates or changes `name`; every rule is checked
    /// before any applies. Err: the rule refused and why.
    pub fn set_user(&self, name: &str, rules: &[&[u8]]) -> Result<(), (String, &'static str)> {
        let mut users = self.users.write();
        let existing = users.get(name).cloned();
        let mut new_rules = existing.as_ref().map_or_else(Rules::new_user, |u| u.rules().clone());
        for rule in rules {
            new_rules.apply(rule).map_err(|why| (String::from_utf8_lossy(rule).into_owned(), why))?;
        }
        match existing {
            Some(user) => user.replace(new_rules),
            None => {
                users.insert(name.to_string(), Arc::new(User::new(name, new_rules)));
            }
        }
        Ok(())
    }

    /// `CONFIG SET requirepass`: the default user's only password.
    pub fn set_requirepass(&self, password: Option<&str>) {
        let default = self.default_user();
        let mut rules = default.rules().clone();
        rules.set_password(password);
        default.replace(rules);
    }

    /// `ACL DELUSER`: removes the users that exist (never `default`);
    /// returns them (their connections are to be closed).
    pub fn delete(&self, names: &[String]) -> Vec<Arc<User>> {
        let mut users = self.users.write();
        let removed: Vec<Arc<User>> = names.iter().filter_map(|n| users.remove(n)).collect();
        for user in &removed {
            user.mark_removed();
        }
        removed
    }

    pub fn names(&self) -> Vec<String> {
        self.users.read().keys().cloned().collect()
    }

    /// `ACL LIST` lines.
    pub fn describe_all(&self) -> Vec<String> {
        self.users.read().values().map(|u| format!("user {} {}", u.name, u.rules().describe())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_authenticate_with_their_passwords() {
        let acl = Acl::new(None);
        assert!(!acl.requires_auth());
        acl.set_user("bob", &[b"on", b">123", b"+get"]).unwrap();
        assert!(acl.authenticate(b"bob", b"123").is_some());
        assert!(acl.authenticate(b"bob", b"124").is_none());
        assert!(acl.authenticate(b"nobody", b"123").is_none());
        acl.set_user("bob", &[b"off"]).unwrap();
        assert!(acl.authenticate(b"bob", b"123").is_none(), "off users cannot log in");
        acl.set_requirepass(Some("pw"));
        assert!(acl.requires_auth());
        assert!(acl.authenticate(b"default", b"pw").is_some());
    }

    #[test]
    fn a_refused_rule_changes_nothing() {
        let acl = Acl::new(None);
        acl.set_user("bob", &[b"on", b"+get"]).unwrap();
        let err = acl.set_user("bob", &[b"+set", b"+nosuch"]).unwrap_err();
        assert_eq!(err.0, "+nosuch");
        assert!(!acl.get("bob").unwrap().rules().allows_command("set"));
        assert!(acl.set_user("carol", &[b"bogus"]).is_err());
        assert!(acl.get("carol").is_none());
    }

    #[test]
    fn deleted_users_are_marked() {
        let acl = Acl::new(None);
        acl.set_user("bob", &[b"on", b"+@all", b"allkeys", b"allchannels"]).unwrap();
        let bob = acl.get("bob").unwrap();
        assert!(bob.is_unrestricted());
        let removed = acl.delete(&["bob".into(), "nobody".into()]);
        assert_eq!(removed.len(), 1);
        assert!(bob.is_removed() && !bob.is_unrestricted());
        assert_eq!(acl.names(), vec!["default".to_string()]);
    }
}
