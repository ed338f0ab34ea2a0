//! Test helpers: start a server in-process on an ephemeral port, and a tiny
//! blocking RESP client whose replies are decoded by the `redis-protocol`
//! crate (an independent decoder).

#![allow(dead_code)]
#![allow(clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

pub mod http;
pub mod sim_node;

use cairn_server::{Config, RunningServer, Shutdown};
use redis_protocol::resp3::decode::complete::decode;
use redis_protocol::resp3::types::OwnedFrame;

pub struct TestServer {
    pub running: Option<RunningServer>,
    pub dir: PathBuf,
    /// Encoding limits (CONFIG SET hash-max-listpack-entries, ...) are
    /// process-wide, so the servers of one test binary run one at a time
    /// (a server started [beside](TestServer::start_beside) another shares its turn).
    _serial: Option<std::sync::MutexGuard<'static, ()>>,
}

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl TestServer {
    pub fn start() -> TestServer {
        Self::start_with(|_| {})
    }

    pub fn start_with(tweak: impl FnOnce(&mut Config)) -> TestServer {
        let serial = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let dir = std::env::temp_dir().join(format!(
            "cairn-it-{}-{}",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_nanos()
        ));
        let mut config = Config::for_tests(&dir);
        tweak(&mut config);
        let running = cairn_server::start(config, Shutdown::new()).expect("server starts");
        TestServer { running: Some(running), dir, _serial: Some(serial) }
    }

    /// A second server running alongside this one, in this one's turn (a
    /// MIGRATE target): the test must leave process-wide settings alone.
    pub fn start_beside(&self, tweak: impl FnOnce(&mut Config)) -> TestServer {
        let dir = self.dir.with_extension("beside");
        let mut config = Config::for_tests(&dir);
        tweak(&mut config);
        let running = cairn_server::start(config, Shutdown::new()).expect("server starts");
        TestServer { running: Some(running), dir, _serial: None }
    }

    /// Stops the server (a clean shutdown) and starts a new one on the same
    /// data directory, its configuration tweaked as at the first start.
    pub fn restart_with(&mut self, tweak: impl FnOnce(&mut Config)) {
        if let Some(running) = self.running.take() {
            running.stop();
        }
        let mut config = Config::for_tests(&self.dir);
        tweak(&mut config);
        self.running = Some(cairn_server::start(config, Shutdown::new()).expect("server restarts"));
    }

    pub fn addr(&self) -> SocketAddr {
        self.running.as_ref().expect("running").addr
    }

    /// The HTTP admin server's address.
    pub fn admin_addr(&self) -> SocketAddr {
        self.running.as_ref().expect("running").admin_addr
    }

    pub fn client(&self) -> Client {
        Client::connect(self.addr())
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub struct Client {
    pub stream: TcpStream,
    buf: Vec<u8>,
    /// Decode replies as RESP3 (after `HELLO 3`); RESP2 frames are converted
    /// to the RESP3 frame type so tests compare one type.
    pub resp3: bool,
}

fn from_resp2(frame: redis_protocol::resp2::types::OwnedFrame) -> OwnedFrame {
    use redis_protocol::resp2::types::OwnedFrame as F2;
    match frame {
        F2::SimpleString(data) => OwnedFrame::SimpleString { data, attributes: None },
        F2::Error(data) => OwnedFrame::SimpleError { data, attributes: None },
        F2::Integer(data) => OwnedFrame::Number { data, attributes: None },
        F2::BulkString(data) => OwnedFrame::BlobString { data, attributes: None },
        F2::Array(items) => OwnedFrame::Array { data: items.into_iter().map(from_resp2).collect(), attributes: None },
        F2::Null => OwnedFrame::Null,
    }
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        Client { stream, buf: Vec::new(), resp3: false }
    }

    /// Encodes a command as a RESP multibulk.
    pub fn encode(args: &[&[u8]]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    /// Reads one reply frame.
    pub fn read(&mut self) -> OwnedFrame {
        loop {
            // The decoder reports an incomplete frame as an error: read more;
            // a genuinely malformed reply ends in the read timeout below.
            let decoded = if self.resp3 {
                decode(&self.buf)
            } else {
                redis_protocol::resp2::decode::decode(&self.buf).map(|d| d.map(|(f, used)| (from_resp2(f), used)))
            };
            if let Ok(Some((frame, used))) = decoded {
                self.buf.drain(..used);
                return frame;
            }
            let mut chunk = [0u8; 65536];
            let n = self.stream.read(&mut chunk).unwrap_or_else(|e| panic!("read ({e}); last decode: {decoded:?}"));
            assert!(n > 0, "server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Sends a command given as words and reads its reply.
    pub fn cmd(&mut self, words: &[&str]) -> OwnedFrame {
        let args: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        self.send_raw(&Self::encode(&args));
        self.read()
    }

    /// Field `field` of INFO `section`, as text.
    pub fn info_field(&mut self, section: &str, field: &str) -> String {
        let OwnedFrame::BlobString { data, .. } = self.cmd(&["INFO", section]) else { panic!("INFO reply") };
        let text = String::from_utf8_lossy(&data).into_owned();
        let prefix = format!("{field}:");
        let value = text.lines().find_map(|l| l.strip_prefix(prefix.as_str())).map(str::trim);
        value.unwrap_or_else(|| panic!("INFO {section} has no {field}")).to_string()
    }

    /// Field `field` of INFO `section`, a number.
    pub fn info_number(&mut self, section: &str, field: &str) -> u64 {
        self.info_field(section, field).parse().expect("a number")
    }

    /// Waits (at most 5 s) until INFO reports `n` blocked clients.
    pub fn wait_blocked(&mut self, n: u64) {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while self.info_number("clients", "blocked_clients") != n {
            assert!(std::time::Instant::now() < deadline, "never {n} blocked clients");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Whether the server closed the connection (reads until EOF or timeout).
    pub fn is_closed(&mut self) -> bool {
        let mut chunk = [0u8; 1024];
        matches!(self.stream.read(&mut chunk), Ok(0))
    }
}

pub fn bulk(s: &str) -> OwnedFrame {
    OwnedFrame::BlobString { data: s.as_bytes().to_vec(), attributes: None }
}

pub fn simple(s: &str) -> OwnedFrame {
    OwnedFrame::SimpleString { data: s.as_bytes().to_vec(), attributes: None }
}

pub fn int(n: i64) -> OwnedFrame {
    OwnedFrame::Number { data: n, attributes: None }
}

/// An array reply of `items`.
pub fn array(items: Vec<OwnedFrame>) -> OwnedFrame {
    OwnedFrame::Array { data: items, attributes: None }
}

/// The text of an error reply (panics on any other reply).
pub fn error_text(frame: &OwnedFrame) -> String {
    match frame {
        OwnedFrame::SimpleError { data, .. } => data.clone(),
        other => panic!("expected an error, got {other:?}"),
    }
}

pub fn err(s: &str) -> OwnedFrame {
    OwnedFrame::SimpleError { data: s.to_string(), attributes: None }
}

pub fn null_bulk_resp2() -> OwnedFrame {
    // The RESP3 decoder reads RESP2's `$-1` as Null.
    OwnedFrame::Null
}
