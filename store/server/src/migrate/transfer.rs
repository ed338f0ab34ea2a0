//! MIGRATE's network part, on a blocking thread: the commands pipelined to
//! the target (AUTH or AUTH2, SELECT when the connection's database differs,
//! then `RESTORE key ttl payload [REPLACE]` per key) and the replies read
//! back, with Redis 7.0's error handling (`migrateCommand`):
//!
//! - a target whose address cannot be resolved (or a negative port):
//!   `-IOERR error or timeout connecting to the client`, no retry; a TCP
//!   connection refused or timed out fails as Redis's does, at the first
//!   write (Redis's blocking connect does not check the socket's error);
//! - a write, or a read of the AUTH/SELECT reply or of the first RESTORE
//!   reply, failing other than by a timeout: the connection is closed and
//!   everything is tried once more on a new one;
//! - otherwise an I/O error closes the connection and answers `-IOERR error
//!   or timeout writing|reading to target instance`, the keys acknowledged
//!   before it still counting as moved;
//! - an error reply (of AUTH, SELECT or a RESTORE) answers `-ERR Target
//!   instance replied with error: ...` with the first one; the other keys'
//!   replies are still read, and those that succeeded count as moved.

use std::io::{BufRead, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::sockets::{Checkout, Conn, SocketCache};

/// Longest reply line read from the target (Redis reads 1 KiB; a longer
/// line is an I/O error here rather than a desynchronised connection).
const MAX_LINE: u64 = 64 * 1024;

/// One key to send.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub key: Vec<u8>,
    /// Absolute expiry in Unix milliseconds, if any: the TTL sent is what
    /// remains of it when the commands are built (at least 1 ms; a key
    /// expired by then is not sent, as in Redis).
    pub expire_at_ms: Option<u64>,
    /// DUMP's payload for the key.
    pub payload: Vec<u8>,
}

/// What to send where.
#[derive(Debug, Clone)]
pub struct Request {
    pub host: Vec<u8>,
    pub port: Vec<u8>,
    pub username: Option<Vec<u8>>,
    pub password: Option<Vec<u8>>,
    pub db: i64,
    pub timeout: Duration,
    pub replace: bool,
    pub keys: Vec<Outgoing>,
}

impl Request {
    /// The cache's key for the target: `host:port` as given.
    fn name(&self) -> Vec<u8> {
        [&self.host[..], b":", &self.port[..]].concat()
    }
}

/// MIGRATE's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Ok,
    ConnectFailed,
    /// An I/O error or timeout while writing (true) or reading (false).
    Io {
        writing: bool,
    },
    /// The first error line the target replied (without its `-`).
    Target(String),
}

impl Reply {
    /// The error text MIGRATE answers with (None for OK).
    pub fn error(&self) -> Option<String> {
        match self {
            Reply::Ok => None,
            Reply::ConnectFailed => Some("IOERR error or timeout connecting to the client".to_string()),
            Reply::Io { writing } => Some(format!(
                "IOERR error or timeout {} to target instance",
                if *writing { "writing" } else { "reading" }
            )),
            Reply::Target(line) => Some(format!("ERR Target instance replied with error: {line}")),
        }
    }
}

/// What a transfer did: which keys the target acknowledged (by index in
/// [`Request::keys`]), and the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub acked: Vec<bool>,
    pub reply: Reply,
}

/// An I/O failure, and whether it was a timeout (no retry then).
#[derive(Debug)]
struct Failure {
    timed_out: bool,
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure { timed_out: matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) }
    }
}

/// How one attempt ended.
enum Attempt {
    /// The reply is known; `close`: the connection failed after the
    /// target's error reply and is closed rather than cached.
    Done { outcome: Outcome, close: bool },
    /// An I/O error (the connection is closed): retry if allowed.
    Failed { writing: bool, failure: Failure, may_retry: bool },
}

/// Sends the keys and reads the replies, reusing and caching connections.
pub fn transfer(cache: &SocketCache, request: &Request) -> Outcome {
    let name = request.name();
    let mut acked = vec![false; request.keys.len()];
    let mut may_retry = true;
    loop {
        let result = match get_socket(cache, &name, request) {
            Ok(mut checkout) => Ok((attempt(&mut checkout, request, &mut acked), checkout)),
            Err(Unreachable::NoAddress) => return Outcome { acked, reply: Reply::ConnectFailed },
            Err(Unreachable::Refused(failure)) => Err(failure),
        };
        let (outcome, checkout) = match result {
            Ok(done) => done,
            Err(failure) => {
                if !failure.timed_out && may_retry {
                    may_retry = false;
                    continue;
                }
                return Outcome { acked, reply: Reply::Io { writing: true } };
            }
        };
        match outcome {
            Attempt::Done { outcome, close: false } => {
                cache.check_in(&name, checkout);
                return outcome;
            }
            Attempt::Done { outcome, close: true } => {
                if checkout.cached {
                    cache.close(&name);
                }
                return outcome;
            }
            Attempt::Failed { writing, failure, may_retry: this_may_retry } => {
                if checkout.cached {
                    cache.close(&name);
                }
                drop(checkout);
                if !failure.timed_out && may_retry && this_may_retry {
                    may_retry = false;
                    continue;
                }
                return Outcome { acked, reply: Reply::Io { writing } };
            }
        }
    }
}

/// Why no connection was made.
#[derive(Debug)]
enum Unreachable {
    /// The host or port names no address (Redis: "connecting to the client").
    NoAddress,
    /// The addresses refused the connection, or did not answer in time.
    Refused(Failure),
}

/// A connection to the target: the cached one, or a new one (cached when
/// no other MIGRATE holds the cached one).
fn get_socket(cache: &SocketCache, name: &[u8], request: &Request) -> Result<Checkout, Unreachable> {
    let (cached, in_use) = cache.check_out(name);
    if let Some(checkout) = cached {
        return Ok(checkout);
    }
    let stream = connect(&request.host, &request.port, request.timeout)?;
    if !in_use {
        cache.add_checked_out(name);
    }
    Ok(Checkout { conn: Conn::new(stream), last_db: None, cached: !in_use })
}

/// The port as Redis reads it: C's `atoi` into an `int`, printed and given
/// to `getaddrinfo`, which refuses a negative one and keeps the low 16 bits
/// of a larger one.
fn port_number(port: &[u8]) -> Option<u16> {
    let text = String::from_utf8_lossy(port);
    let text = text.trim_start();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let digits: String = digits.chars().take_while(char::is_ascii_digit).take(18).collect();
    let magnitude: i64 = digits.parse().unwrap_or(0);
    let value = (if negative { -magnitude } else { magnitude }) as i32;
    (value >= 0).then_some((value & 0xffff) as u16)
}

/// Connects within `timeout` to the first address of `host` that accepts.
fn connect(host: &[u8], port: &[u8], timeout: Duration) -> Result<TcpStream, Unreachable> {
    let host = std::str::from_utf8(host).map_err(|_| Unreachable::NoAddress)?;
    let port = port_number(port).ok_or(Unreachable::NoAddress)?;
    let addrs: Vec<_> = (host, port).to_socket_addrs().map_err(|_| Unreachable::NoAddress)?.collect();
    if addrs.is_empty() {
        return Err(Unreachable::NoAddress);
    }
    let mut last = Failure { timed_out: false };
    for addr in addrs {
        let ready = TcpStream::connect_timeout(&addr, timeout).and_then(|stream| {
            stream.set_nodelay(true)?;
            stream.set_read_timeout(Some(timeout))?;
            stream.set_write_timeout(Some(timeout))?;
            Ok(stream)
        });
        match ready {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e.into(),
        }
    }
    Err(Unreachable::Refused(last))
}

/// Appends one command in RESP (an array of bulk strings).
fn put_command(out: &mut Vec<u8>, args: &[&[u8]]) {
    let mut writer = cairn_protocol::ReplyWriter::new(out, cairn_protocol::ProtocolVersion::Resp2);
    writer.array(args.len());
    for arg in args {
        writer.bulk(arg);
    }
}

/// The commands to send, and the keys (indexes) they restore.
fn commands(request: &Request, select: bool, now_ms: u64) -> (Vec<u8>, Vec<usize>) {
    let mut out = Vec::new();
    if let Some(password) = &request.password {
        match &request.username {
            Some(user) => put_command(&mut out, &[b"AUTH", user, password]),
            None => put_command(&mut out, &[b"AUTH", password]),
        }
    }
    if select {
        put_command(&mut out, &[b"SELECT", request.db.to_string().as_bytes()]);
    }
    let mut sent = Vec::new();
    for (index, key) in request.keys.iter().enumerate() {
        let ttl = match key.expire_at_ms {
            None => 0,
            Some(at) if at < now_ms => continue,
            Some(at) => (at - now_ms).max(1),
        };
        let ttl = ttl.to_string();
        let mut args: Vec<&[u8]> = vec![b"RESTORE", &key.key, ttl.as_bytes(), &key.payload];
        if request.replace {
            args.push(b"REPLACE");
        }
        put_command(&mut out, &args);
        sent.push(index);
    }
    (out, sent)
}

/// Reads one reply line (without its CRLF); an empty line or the end of
/// the stream is a failure, as in Redis's `connSyncReadLine`.
fn read_line(conn: &mut Conn) -> Result<Vec<u8>, Failure> {
    let mut line = Vec::new();
    let read = conn.by_ref().take(MAX_LINE).read_until(b'\n', &mut line)?;
    if read == 0 || line.last() != Some(&b'\n') {
        return Err(Failure { timed_out: false });
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.is_empty() {
        return Err(Failure { timed_out: false });
    }
    Ok(line)
}

/// One try over one connection.
fn attempt(checkout: &mut Checkout, request: &Request, acked: &mut [bool]) -> Attempt {
    let select = checkout.last_db != Some(request.db);
    let (bytes, sent) = commands(request, select, cairn_engine::clock::now_ms());
    if let Err(e) = checkout.conn.get_mut().write_all(&bytes).and_then(|()| checkout.conn.get_mut().flush()) {
        return Attempt::Failed { writing: true, failure: e.into(), may_retry: true };
    }
    let auth_reply = match request.password.is_some().then(|| read_line(&mut checkout.conn)).transpose() {
        Ok(line) => line,
        Err(failure) => return Attempt::Failed { writing: false, failure, may_retry: true },
    };
    let select_reply = match select.then(|| read_line(&mut checkout.conn)).transpose() {
        Ok(line) => line,
        Err(failure) => return Attempt::Failed { writing: false, failure, may_retry: true },
    };
    let is_error = |line: &Option<Vec<u8>>| line.as_ref().is_some_and(|l| l.first() == Some(&b'-'));
    let mut target_error: Option<String> = None;
    for (read, &index) in sent.iter().enumerate() {
        let line = match read_line(&mut checkout.conn) {
            Ok(line) => line,
            Err(failure) => {
                if let Some(error) = target_error {
                    // The target's error stays the reply; the connection goes.
                    return Attempt::Done {
                        outcome: Outcome { acked: acked.to_vec(), reply: Reply::Target(error) },
                        close: true,
                    };
                }
                return Attempt::Failed { writing: false, failure, may_retry: read == 0 };
            }
        };
        let line = Some(line);
        let error = [&auth_reply, &select_reply, &line].into_iter().find(|l| is_error(l)).cloned().flatten();
        match error {
            Some(error) => {
                if target_error.is_none() {
                    checkout.last_db = None;
                    target_error = Some(String::from_utf8_lossy(&error[1..]).into_owned());
                }
            }
            None => acked[index] = true,
        }
    }
    match target_error {
        Some(error) => {
            Attempt::Done { outcome: Outcome { acked: acked.to_vec(), reply: Reply::Target(error) }, close: false }
        }
        None => {
            checkout.last_db = Some(request.db);
            Attempt::Done { outcome: Outcome { acked: acked.to_vec(), reply: Reply::Ok }, close: false }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_read_as_redis_reads_them() {
        assert_eq!(port_number(b"6379"), Some(6379));
        assert_eq!(port_number(b"abc"), Some(0));
        assert_eq!(port_number(b"16399x"), Some(16399));
        assert_eq!(port_number(b"65536"), Some(0));
        assert_eq!(port_number(b"99999"), Some(34463));
        assert_eq!(port_number(b"-5"), None);
    }

    #[test]
    fn commands_are_auth_select_then_one_restore_per_live_key() {
        let key = |name: &str, expire_at_ms| Outgoing { key: name.into(), expire_at_ms, payload: b"P".to_vec() };
        let request = Request {
            host: b"h".to_vec(),
            port: b"1".to_vec(),
            username: Some(b"u".to_vec()),
            password: Some(b"p".to_vec()),
            db: 9,
            timeout: Duration::from_millis(5),
            replace: true,
            keys: vec![key("a", None), key("gone", Some(999)), key("b", Some(1500))],
        };
        let (bytes, sent) = commands(&request, true, 1000);
        let expected = "*3\r\n$4\r\nAUTH\r\n$1\r\nu\r\n$1\r\np\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n9\r\n\
            *5\r\n$7\r\nRESTORE\r\n$1\r\na\r\n$1\r\n0\r\n$1\r\nP\r\n$7\r\nREPLACE\r\n\
            *5\r\n$7\r\nRESTORE\r\n$1\r\nb\r\n$3\r\n500\r\n$1\r\nP\r\n$7\r\nREPLACE\r\n";
        assert_eq!(String::from_utf8_lossy(&bytes), expected);
        assert_eq!(sent, vec![0, 2]);
        let (bytes, _) = commands(
            &Request { password: None, replace: false, keys: vec![key("a", Some(1000))], ..request },
            false,
            1000,
        );
        assert_eq!(String::from_utf8_lossy(&bytes), "*4\r\n$7\r\nRESTORE\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nP\r\n");
    }

    #[test]
    fn replies_are_redis_texts() {
        assert_eq!(Reply::Ok.error(), None);
        assert_eq!(Reply::ConnectFailed.error().unwrap(), "IOERR error or timeout connecting to the client");
        assert_eq!(Reply::Io { writing: true }.error().unwrap(), "IOERR error or timeout writing to target instance");
        assert_eq!(Reply::Io { writing: false }.error().unwrap(), "IOERR error or timeout reading to target instance");
        assert_eq!(
            Reply::Target("BUSYKEY x".into()).error().unwrap(),
            "ERR Target instance replied with error: BUSYKEY x"
        );
    }
}
