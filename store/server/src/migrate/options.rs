//! MIGRATE's arguments, parsed and checked in the order of Redis 7.0's
//! `migrateCommand` (so the first error is Redis's): the options from the
//! sixth argument on, then the timeout, then the destination database.

use crate::commands::{int_arg, is, CmdError};

/// Where the keys are named: the key argument, or the arguments after KEYS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRange {
    pub first: usize,
    pub count: usize,
}

/// A parsed `MIGRATE host port key|"" destination-db timeout [COPY]
/// [REPLACE] [AUTH password] [AUTH2 username password] [KEYS key ...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub copy: bool,
    pub replace: bool,
    pub username: Option<Vec<u8>>,
    pub password: Option<Vec<u8>>,
    pub keys: KeyRange,
    /// Milliseconds for the connection and for each read and write (Redis
    /// uses 1000 when it is not positive).
    pub timeout_ms: u64,
    pub destination_db: i64,
}

/// Redis's message when KEYS comes with a non-empty key argument.
pub const KEYS_NEED_EMPTY_KEY: &str =
    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string";

/// Parses MIGRATE's arguments (`args[0]` is the command name; at least six).
pub fn parse(args: &[&[u8]]) -> Result<Options, CmdError> {
    let mut options = Options {
        copy: false,
        replace: false,
        username: None,
        password: None,
        keys: KeyRange { first: 3, count: 1 },
        timeout_ms: 0,
        destination_db: 0,
    };
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let arg = args[j];
        if is(arg, "copy") {
            options.copy = true;
        } else if is(arg, "replace") {
            options.replace = true;
        } else if is(arg, "auth") {
            if more == 0 {
                return Err(CmdError::Syntax);
            }
            j += 1;
            options.password = Some(args[j].to_vec());
        } else if is(arg, "auth2") {
            if more < 2 {
                return Err(CmdError::Syntax);
            }
            options.username = Some(args[j + 1].to_vec());
            options.password = Some(args[j + 2].to_vec());
            j += 2;
        } else if is(arg, "keys") {
            if !args[3].is_empty() {
                return Err(CmdError::Static(KEYS_NEED_EMPTY_KEY));
            }
            options.keys = KeyRange { first: j + 1, count: args.len() - j - 1 };
            break;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let timeout = int_arg(args[5])?;
    options.destination_db = int_arg(args[4])?;
    options.timeout_ms = if timeout <= 0 { 1000 } else { timeout as u64 };
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_words(words: &[&str]) -> Result<Options, CmdError> {
        let args: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        parse(&args)
    }

    #[test]
    fn options_keys_and_defaults() {
        let o = parse_words(&["migrate", "h", "1", "", "2", "0", "copy", "AUTH2", "u", "p", "keys", "a", "b"]).unwrap();
        assert!(o.copy && !o.replace);
        assert_eq!(o.username.as_deref(), Some(&b"u"[..]));
        assert_eq!(o.password.as_deref(), Some(&b"p"[..]));
        assert_eq!(o.keys, KeyRange { first: 11, count: 2 });
        assert_eq!(o.timeout_ms, 1000);
        assert_eq!(o.destination_db, 2);
        let o = parse_words(&["migrate", "h", "1", "k", "0", "50", "replace", "auth", "pw"]).unwrap();
        assert!(o.replace);
        assert_eq!(o.keys, KeyRange { first: 3, count: 1 });
        assert_eq!(o.timeout_ms, 50);
        // KEYS with nothing after it names no key.
        let o = parse_words(&["migrate", "h", "1", "", "0", "5", "keys"]).unwrap();
        assert_eq!(o.keys.count, 0);
    }

    #[test]
    fn errors_come_in_redis_order() {
        assert_eq!(parse_words(&["migrate", "h", "1", "k", "x", "y", "bogus"]), Err(CmdError::Syntax));
        assert_eq!(parse_words(&["migrate", "h", "1", "k", "0", "5", "auth"]), Err(CmdError::Syntax));
        assert_eq!(parse_words(&["migrate", "h", "1", "k", "0", "5", "auth2", "u"]), Err(CmdError::Syntax));
        assert_eq!(
            parse_words(&["migrate", "h", "1", "k", "0", "5", "keys", "a"]),
            Err(CmdError::Static(KEYS_NEED_EMPTY_KEY))
        );
        // The timeout is checked before the database.
        assert_eq!(parse_words(&["migrate", "h", "1", "k", "x", "y"]), Err(CmdError::NotInteger));
        assert_eq!(parse_words(&["migrate", "h", "1", "k", "x", "5"]), Err(CmdError::NotInteger));
    }
}
