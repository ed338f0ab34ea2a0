//! Command errors, with Redis 7.0's exact messages.

/// Result of a command handler.
pub type CmdResult = Result<(), CmdError>;

/// An error reply. [`CmdError::message`] renders Redis's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmdError {
    WrongArity,
    WrongType,
    NotInteger,
    NotFloat,
    Syntax,
    NoSuchKey,
    Overflow,
    NoAuth,
    DbIndexOutOfRange,
    InvalidExpire,
    /// A whole message including its code (`ERR ...`).
    Message(String),
    Static(&'static str),
}

impl CmdError {
    /// The error text for command `name` (lowercase, as in the table).
    pub fn message(&self, name: &str) -> String {
        match self {
            CmdError::WrongArity => format!("ERR wrong number of arguments for '{name}' command"),
            CmdError::WrongType => "WRONGTYPE Operation against a key holding the wrong kind of value".into(),
            CmdError::NotInteger => "ERR value is not an integer or out of range".into(),
            CmdError::NotFloat => "ERR value is not a valid float".into(),
            CmdError::Syntax => "ERR syntax error".into(),
            CmdError::NoSuchKey => "ERR no such key".into(),
            CmdError::Overflow => "ERR increment or decrement would overflow".into(),
            CmdError::NoAuth => "NOAUTH Authentication required.".into(),
            CmdError::DbIndexOutOfRange => "ERR DB index is out of range".into(),
            CmdError::InvalidExpire => format!("ERR invalid expire time in '{name}' command"),
            CmdError::Message(m) => m.clone(),
            CmdError::Static(m) => (*m).to_string(),
        }
    }

    /// `ERR <text>`.
    pub fn err(text: impl std::fmt::Display) -> CmdError {
        CmdError::Message(format!("ERR {text}"))
    }

    /// Redis's reply to a subcommand given the wrong number of arguments
    /// (`'config|get'`-style name, lowercase).
    pub fn subcommand_arity(command: &str, sub: &[u8]) -> CmdError {
        let sub = String::from_utf8_lossy(sub).to_ascii_lowercase();
        CmdError::Message(format!("ERR wrong number of arguments for '{command}|{sub}' command"))
    }

    /// Redis's reply to an unknown subcommand of `command`.
    pub fn unknown_subcommand(command: &str, sub: &[u8]) -> CmdError {
        let sub = String::from_utf8_lossy(sub);
        let sub: String = sub.chars().take(128).collect();
        CmdError::Message(format!("ERR unknown subcommand '{sub}'. Try {} HELP.", command.to_ascii_uppercase()))
    }
}

/// Redis's reply to an unknown command: the name and the first arguments.
pub fn unknown_command(args: &[&[u8]]) -> String {
    let name: String = String::from_utf8_lossy(args[0]).chars().take(128).collect();
    let mut listed = String::new();
    for arg in &args[1..] {
        if listed.len() >= 128 {
            break;
        }
        let room = 128 - listed.len();
        let arg = String::from_utf8_lossy(arg);
        let arg: String = arg.chars().take(room).collect();
        listed.push_str(&format!("'{arg}' "));
    }
    format!("ERR unknown command '{name}', with args beginning with: {listed}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages() {
        assert_eq!(
            unknown_command(&[b"foo", b"a", b"b"]),
            "ERR unknown command 'foo', with args beginning with: 'a' 'b' "
        );
        assert_eq!(unknown_command(&[b"foo"]), "ERR unknown command 'foo', with args beginning with: ");
        assert_eq!(CmdError::WrongArity.message("get"), "ERR wrong number of arguments for 'get' command");
        assert_eq!(
            CmdError::unknown_subcommand("config", b"x").message("config"),
            "ERR unknown subcommand 'x'. Try CONFIG HELP."
        );
    }
}
