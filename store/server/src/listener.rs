//! Listening sockets: one per worker on the same address, with SO_REUSEPORT
//! so the kernel spreads new connections over the workers.

use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};

use socket2::{Domain, Protocol, Socket, Type};

/// Resolves `--bind` and `--port` (`*` means all IPv4 interfaces).
pub fn resolve(bind: &str, port: u16) -> io::Result<SocketAddr> {
    let host = if bind == "*" { "0.0.0.0" } else { bind };
    (host, port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("cannot resolve bind address {bind}")))
}

/// Binds one non-blocking listener with SO_REUSEADDR and SO_REUSEPORT.
pub fn bind_reuseport(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    Ok(socket.into())
}

/// Fails with `AddrInUse` when anything listens on `addr` already. Without
/// this check a second server would join the first one's SO_REUSEPORT group
/// and silently share its connections, where Redis fails to start.
fn ensure_free(addr: SocketAddr) -> io::Result<()> {
    let probe = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    probe.set_reuse_address(true)?;
    probe.bind(&addr.into())
}

/// Binds `count` listeners on one address. When the port is 0, the first
/// socket picks it and the others join that port.
pub fn bind_all(addr: SocketAddr, count: usize) -> io::Result<(SocketAddr, Vec<TcpListener>)> {
    if addr.port() != 0 {
        ensure_free(addr)?;
    }
    let first = bind_reuseport(addr)?;
    let actual = first.local_addr()?;
    let mut listeners = vec![first];
    for _ in 1..count {
        listeners.push(bind_reuseport(actual)?);
    }
    Ok((actual, listeners))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_server_on_the_same_port_is_refused() {
        let loopback: SocketAddr = ([127, 0, 0, 1], 0).into();
        let (addr, _first) = bind_all(loopback, 2).expect("first bind");
        let second = bind_all(addr, 2).expect_err("the port is taken");
        assert_eq!(second.kind(), io::ErrorKind::AddrInUse);
    }

    #[test]
    fn a_free_port_binds_one_listener_per_worker() {
        let loopback: SocketAddr = ([127, 0, 0, 1], 0).into();
        let (addr, listeners) = bind_all(loopback, 3).expect("bind");
        assert_eq!(listeners.len(), 3);
        assert!(listeners.iter().all(|l| l.local_addr().ok() == Some(addr)));
    }
}
