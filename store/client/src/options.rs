//! Connection settings.

use std::time::Duration;

/// Where and how to connect.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    /// `host:port` of the native listener (default port 7379).
    pub addr: String,
    /// Password (`--requirepass`), sent in the handshake.
    pub password: Option<String>,
    /// User for the password (default `default`).
    pub user: Option<String>,
    /// Client name (CLIENT SETNAME).
    pub name: Option<String>,
    /// Database to select.
    pub db: Option<u32>,
    /// Limit on connecting plus the handshake.
    pub connect_timeout: Duration,
    /// Default limit on each request (until its reply arrives).
    pub request_timeout: Duration,
    /// Largest reply frame accepted (bytes).
    pub max_reply_len: usize,
}

impl ConnectOptions {
    /// Defaults: no password, 5 s to connect, 30 s per request.
    pub fn new(addr: impl Into<String>) -> ConnectOptions {
        ConnectOptions {
            addr: addr.into(),
            password: None,
            user: None,
            name: None,
            db: None,
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            max_reply_len: 1 << 30,
        }
    }

    pub fn password(mut self, password: impl Into<String>) -> Self {
        self.password = Some(password.into());
        self
    }

    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self
    }

    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    pub fn db(mut self, db: u32) -> Self {
        self.db = Some(db);
        self
    }

    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }
}
