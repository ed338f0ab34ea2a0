//! Which command arguments are credentials, shown as `(redacted)` in
//! MONITOR and SLOWLOG (Redis's `redactClientCommandArgument` callers), and
//! which parameter values logs must not show (the config file reloader's).

/// Whether argument `i` of `args` is a credential: AUTH's arguments, the
/// username and password after HELLO's AUTH option, and the value of CONFIG
/// SET `requirepass` / `masterauth`.
pub fn is_secret(args: &[&[u8]], i: usize) -> bool {
    let name = args.first().copied().unwrap_or_default();
    if name.eq_ignore_ascii_case(b"auth") {
        return i >= 1;
    }
    if name.eq_ignore_ascii_case(b"hello") {
        let option = args.iter().skip(2).position(|a| a.eq_ignore_ascii_case(b"auth")).map(|p| p + 2);
        return option.is_some_and(|at| i == at + 1 || i == at + 2);
    }
    if name.eq_ignore_ascii_case(b"migrate") {
        return migrate_secrets(args).contains(&i);
    }
    let config_set =
        name.eq_ignore_ascii_case(b"config") && args.get(1).is_some_and(|s| s.eq_ignore_ascii_case(b"set"));
    if config_set && i >= 3 && (i - 3) % 2 == 0 {
        return std::str::from_utf8(args[i - 1]).is_ok_and(is_secret_param);
    }
    false
}

/// The positions of MIGRATE's AUTH password and AUTH2 username and
/// password, found as `migrateCommand` parses its options.
fn migrate_secrets(args: &[&[u8]]) -> Vec<usize> {
    let mut secrets = Vec::new();
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if args[j].eq_ignore_ascii_case(b"auth") && more >= 1 {
            secrets.push(j + 1);
            j += 1;
        } else if args[j].eq_ignore_ascii_case(b"auth2") && more >= 2 {
            secrets.extend([j + 1, j + 2]);
            j += 2;
        } else if args[j].eq_ignore_ascii_case(b"keys") {
            break;
        }
        j += 1;
    }
    secrets
}

/// Whether a CONFIG parameter's value is a credential (`requirepass`,
/// `masterauth`): never logged nor shown.
pub fn is_secret_param(name: &str) -> bool {
    name.eq_ignore_ascii_case("requirepass") || name.eq_ignore_ascii_case("masterauth")
}

/// A parameter's value as logs may show it: `(redacted)` for a credential.
pub fn param_value<'a>(name: &str, value: &'a str) -> &'a str {
    if is_secret_param(name) {
        "(redacted)"
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(args: &[&str]) -> Vec<usize> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        (0..args.len()).filter(|&i| is_secret(&args, i)).collect()
    }

    #[test]
    fn credentials_are_found_where_redis_redacts_them() {
        assert_eq!(secrets(&["AUTH", "pass"]), [1]);
        assert_eq!(secrets(&["auth", "user", "pass"]), [1, 2]);
        assert_eq!(secrets(&["HELLO", "3", "AUTH", "u", "p", "SETNAME", "x"]), [3, 4]);
        assert_eq!(secrets(&["HELLO", "3"]), Vec::<usize>::new());
        assert_eq!(secrets(&["CONFIG", "SET", "maxmemory", "1", "requirepass", "p", "masterauth", "q"]), [5, 7]);
        assert_eq!(secrets(&["CONFIG", "GET", "requirepass"]), Vec::<usize>::new());
        assert_eq!(secrets(&["SET", "auth", "x"]), Vec::<usize>::new());
        assert_eq!(secrets(&["MIGRATE", "h", "1", "k", "0", "5", "COPY", "AUTH", "p"]), [8]);
        assert_eq!(secrets(&["MIGRATE", "h", "1", "", "0", "5", "AUTH2", "u", "p", "KEYS", "auth", "x"]), [7, 8]);
    }

    #[test]
    fn credential_parameters_are_redacted_in_logs() {
        assert_eq!(param_value("RequirePass", "p"), "(redacted)");
        assert_eq!(param_value("masterauth", "p"), "(redacted)");
        assert_eq!(param_value("maxmemory", "1mb"), "1mb");
    }
}
