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

/// Binds `count` listeners on one address. When the port is 0, the first
/// socket picks it and the others join that port.
pub fn bind_all(addr: SocketAddr, count: usize) -> io::Result<(SocketAddr, Vec<TcpListener>)> {
    let first = bind_reuseport(addr)?;
    let actual = first.local_addr()?;
    let mut listeners = vec![first];
    for _ in 1..count {
        listeners.push(bind_reuseport(actual)?);
    }
    Ok((actual, listeners))
}
