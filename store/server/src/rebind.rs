//! Moving the listening sockets at runtime: `CONFIG SET port`, `tls-port`
//! and `bind`, as Redis's `changeListenPort` and `changeBindAddr` do.
//!
//! A change is all or nothing, like every CONFIG SET: [`Rebind::prepare`]
//! binds the new sockets (one per worker, `SO_REUSEPORT`) before anything
//! changes, so a port in use or an address that does not exist refuses the
//! whole command and the server keeps listening where it did. Once the rest
//! of the command succeeded, [`Rebind::install`] leaves each worker its new
//! sockets in a mailbox and wakes it; the worker's event loop swaps them in
//! and closes the old ones. The new port accepts connections from the
//! moment it is bound (the kernel queues them until the worker takes the
//! socket); connections already open stay open, as in Redis.
//!
//! Port 0 closes a door, as in Redis (`port 0`: no plaintext TCP), but
//! one of `port` and `tls-port` must stay open. `bind` moves every door
//! (plaintext, TLS and native) to the new address and keeps their ports;
//! Cairn binds one address (or `*`), as its `--bind` flag.

use std::net::{SocketAddr, TcpListener};

use parking_lot::Mutex;

use crate::config_params::SetError;
use crate::listener;

/// Where the server listens now (ports as bound: never 0; `None` is off).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Addresses {
    pub bind: String,
    pub resp: Option<u16>,
    pub tls: Option<u16>,
    pub native: Option<u16>,
}

/// New sockets for one worker: per door, `None` leaves it alone,
/// `Some(None)` closes it, `Some(Some(l))` replaces it with `l`.
#[derive(Debug, Default)]
pub struct Handover {
    pub resp: Option<Option<TcpListener>>,
    pub tls: Option<Option<TcpListener>>,
    pub native: Option<Option<TcpListener>>,
}

impl Handover {
    /// Adds `later`'s changes on top of this one's (two CONFIG SETs before
    /// the worker took the first).
    fn merge(&mut self, later: Handover) {
        if later.resp.is_some() {
            self.resp = later.resp;
        }
        if later.tls.is_some() {
            self.tls = later.tls;
        }
        if later.native.is_some() {
            self.native = later.native;
        }
    }
}

/// One worker's mailbox.
#[derive(Debug, Default)]
struct Mailbox {
    handover: Mutex<Option<Handover>>,
    ready: tokio::sync::Notify,
}

/// The listeners' addresses and the workers' mailboxes.
#[derive(Debug)]
pub struct Rebind {
    current: Mutex<Addresses>,
    mailboxes: Vec<Mailbox>,
    /// Held from prepare to install, so two changes do not interleave.
    changing: Mutex<()>,
}

/// Sockets bound for every worker, not in use yet.
#[derive(Debug)]
pub struct Prepared {
    addresses: Addresses,
    per_worker: Vec<Handover>,
}

/// The parameters this module applies.
pub const PARAMS: [&str; 3] = ["port", "tls-port", "bind"];

/// A door: which listener of a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Door {
    Resp,
    Tls,
    Native,
}

impl Door {
    const ALL: [Door; 3] = [Door::Resp, Door::Tls, Door::Native];

    fn port(self, addresses: &Addresses) -> Option<u16> {
        match self {
            Door::Resp => addresses.resp,
            Door::Tls => addresses.tls,
            Door::Native => addresses.native,
        }
    }

    /// The CONFIG parameter named in an error about this door.
    fn param(self) -> &'static str {
        match self {
            Door::Resp | Door::Native => "port",
            Door::Tls => "tls-port",
        }
    }

    fn slot(self, handover: &mut Handover) -> &mut Option<Option<TcpListener>> {
        match self {
            Door::Resp => &mut handover.resp,
            Door::Tls => &mut handover.tls,
            Door::Native => &mut handover.native,
        }
    }
}

impl Rebind {
    pub fn new(addresses: Addresses, workers: usize) -> Rebind {
        Rebind {
            current: Mutex::new(addresses),
            mailboxes: (0..workers).map(|_| Mailbox::default()).collect(),
            changing: Mutex::new(()),
        }
    }

    /// Where the server listens now.
    pub fn addresses(&self) -> Addresses {
        self.current.lock().clone()
    }

    /// Serializes listener changes: held across prepare and install.
    pub fn lock(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.changing.lock()
    }

    /// Binds the sockets the `port`, `tls-port` and `bind` values among
    /// `updates` ask for (`None` when they change nothing). `tls` says
    /// whether the server has a TLS configuration to serve a TLS port with.
    pub fn prepare(&self, updates: &[(&'static str, String)], tls: bool) -> Result<Option<Prepared>, SetError> {
        let current = self.addresses();
        let wanted = wanted(&current, updates)?;
        if wanted == current {
            return Ok(None);
        }
        if wanted.resp.is_none() && wanted.tls.is_none() {
            let name = if wanted.resp != current.resp { "port" } else { "tls-port" };
            return Err(refused(name, "port and tls-port cannot both be 0: clients would have no way in"));
        }
        if wanted.tls.is_some() && wanted.tls != current.tls && !tls {
            return Err(refused("tls-port", "TLS is off: start the server with --tls-port to serve TLS"));
        }
        let mut per_worker: Vec<Handover> = (0..self.mailboxes.len()).map(|_| Handover::default()).collect();
        for door in Door::ALL {
            let (old, new) = (door.port(&current), door.port(&wanted));
            let moved = new != old || (wanted.bind != current.bind && new.is_some());
            if !moved {
                continue;
            }
            let sockets = match new {
                None => (0..per_worker.len()).map(|_| None).collect(),
                Some(port) => bind_door(&wanted.bind, port, new != old, per_worker.len())
                    .map_err(|e| bind_error(door, &wanted, &current, e))?
                    .into_iter()
                    .map(Some)
                    .collect::<Vec<_>>(),
            };
            for (handover, socket) in per_worker.iter_mut().zip(sockets) {
                *door.slot(handover) = Some(socket);
            }
        }
        Ok(Some(Prepared { addresses: wanted, per_worker }))
    }

    /// Puts prepared sockets in use: each worker takes its own.
    pub fn install(&self, prepared: Prepared) {
        let Prepared { addresses, per_worker } = prepared;
        tracing::info!(
            bind = %addresses.bind,
            port = ?addresses.resp,
            tls_port = ?addresses.tls,
            native_port = ?addresses.native,
            "CONFIG SET: listeners moved"
        );
        *self.current.lock() = addresses;
        for (mailbox, handover) in self.mailboxes.iter().zip(per_worker) {
            mailbox.handover.lock().get_or_insert_with(Handover::default).merge(handover);
            mailbox.ready.notify_one();
        }
    }

    /// Waits until worker `index` has new sockets, and takes them.
    pub async fn handover(&self, index: usize) -> Handover {
        let Some(mailbox) = self.mailboxes.get(index) else {
            return std::future::pending().await;
        };
        loop {
            mailbox.ready.notified().await;
            if let Some(handover) = mailbox.handover.lock().take() {
                return handover;
            }
        }
    }
}

/// The addresses `updates` ask for (values already checked as numbers).
fn wanted(current: &Addresses, updates: &[(&'static str, String)]) -> Result<Addresses, SetError> {
    let mut wanted = current.clone();
    for (name, value) in updates {
        let port = || value.parse::<u16>().map(|p| (p != 0).then_some(p));
        match *name {
            "port" => wanted.resp = port().map_err(|_| refused(name, "argument must be a port number"))?,
            "tls-port" => wanted.tls = port().map_err(|_| refused(name, "argument must be a port number"))?,
            "bind" => wanted.bind = one_address(value)?,
            _ => {}
        }
    }
    Ok(wanted)
}

/// `bind`'s value: one address (Redis takes several; Cairn's `--bind` one).
fn one_address(value: &str) -> Result<String, SetError> {
    let mut words = value.split_whitespace();
    match (words.next(), words.next()) {
        (Some(address), None) => Ok(address.to_string()),
        (None, _) => Err(refused("bind", "Failed to bind to specified addresses.")),
        (Some(_), Some(_)) => Err(refused("bind", "Cairn listens on one address (or *); give one")),
    }
}

/// Binds one socket per worker on `bind`:`port`. A new port must be free
/// (not another server's `SO_REUSEPORT` group); a door that only changes
/// address may overlap its own old socket until the worker closes it.
fn bind_door(bind: &str, port: u16, new_port: bool, workers: usize) -> std::io::Result<Vec<TcpListener>> {
    let addr: SocketAddr = listener::resolve(bind, port)?;
    if new_port {
        return Ok(listener::bind_all(addr, workers)?.1);
    }
    (0..workers).map(|_| listener::bind_reuseport(addr)).collect()
}

/// Redis's messages: a bad address is the bind's fault, anything else the port's.
fn bind_error(door: Door, wanted: &Addresses, current: &Addresses, e: std::io::Error) -> SetError {
    tracing::warn!(bind = %wanted.bind, door = ?door, error = %e, "CONFIG SET: cannot listen; keeping the listeners in use");
    let port_changed = door.port(wanted) != door.port(current);
    if wanted.bind != current.bind && !(port_changed && e.kind() == std::io::ErrorKind::AddrInUse) {
        return refused("bind", &format!("Failed to bind to specified addresses. ({e})"));
    }
    refused(door.param(), &format!("Unable to listen on this port: {e}"))
}

fn refused(name: &str, reason: &str) -> SetError {
    SetError::Refused { name: name.to_string(), reason: reason.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(resp: Option<u16>, tls: Option<u16>) -> Addresses {
        Addresses { bind: "127.0.0.1".into(), resp, tls, native: None }
    }

    fn free_port() -> u16 {
        TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("ephemeral port")
    }

    #[test]
    fn the_same_values_change_nothing() {
        let rebind = Rebind::new(at(Some(6379), None), 2);
        let same = [("port", "6379".to_string()), ("bind", "127.0.0.1".to_string()), ("tls-port", "0".to_string())];
        assert!(rebind.prepare(&same, false).expect("no change").is_none());
    }

    #[test]
    fn a_free_port_is_bound_for_every_worker_and_installed() {
        let rebind = Rebind::new(at(Some(free_port()), None), 3);
        let port = free_port();
        let prepared = rebind.prepare(&[("port", port.to_string())], false).expect("bound").expect("a change");
        assert_eq!(prepared.per_worker.len(), 3);
        assert!(prepared.per_worker.iter().all(|h| matches!(&h.resp, Some(Some(_))) && h.tls.is_none()));
        rebind.install(prepared);
        assert_eq!(rebind.addresses().resp, Some(port));
    }

    #[test]
    fn a_port_in_use_is_refused_with_redis_message() {
        let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = taken.local_addr().expect("addr").port();
        let rebind = Rebind::new(at(Some(free_port()), None), 1);
        let err = rebind.prepare(&[("port", port.to_string())], false).expect_err("in use");
        let text = err.to_string();
        assert!(
            text.starts_with("CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port"),
            "{text}"
        );
    }

    #[test]
    fn a_bad_address_is_refused_as_redis_does() {
        let rebind = Rebind::new(at(Some(free_port()), None), 1);
        let err = rebind.prepare(&[("bind", "999.999.999.999".to_string())], false).expect_err("bad address");
        assert!(err.to_string().contains("Failed to bind to specified addresses."), "{err}");
        let err = rebind.prepare(&[("bind", "127.0.0.1 ::1".to_string())], false).expect_err("two addresses");
        assert!(err.to_string().contains("one address"), "{err}");
    }

    #[test]
    fn both_resp_doors_closed_or_tls_without_a_configuration_are_refused() {
        let rebind = Rebind::new(at(Some(6379), None), 1);
        assert!(rebind.prepare(&[("port", "0".to_string())], false).is_err());
        let err = rebind.prepare(&[("tls-port", free_port().to_string())], false).expect_err("no TLS");
        assert!(err.to_string().contains("TLS is off"), "{err}");
    }

    #[test]
    fn port_zero_closes_the_plaintext_door_when_tls_stays_open() {
        let rebind = Rebind::new(at(Some(6379), Some(6380)), 2);
        let prepared = rebind.prepare(&[("port", "0".to_string())], true).expect("ok").expect("a change");
        assert!(prepared.per_worker.iter().all(|h| matches!(h.resp, Some(None))));
    }

    #[test]
    fn a_later_handover_keeps_the_earlier_ones_other_doors() {
        let mut first = Handover { resp: Some(None), ..Handover::default() };
        first.merge(Handover { tls: Some(None), ..Handover::default() });
        assert!(matches!(first.resp, Some(None)) && matches!(first.tls, Some(None)));
    }
}
