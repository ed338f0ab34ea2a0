//! A connection's socket, in one of two I/O modes ([`Io`]).
//!
//! - **Evented** (the default for many connections per thread): a tokio `TcpStream`; a read with
//!   nothing to read parks the task and the runtime waits in `epoll_wait`.
//! - **Blocking** (one connection per driver thread): a plain `std::net::TcpStream` in blocking
//!   mode, written with ordinary system calls; a read first waits for the socket to become
//!   readable ([`BlockingSocket::wait_readable`]), then reads. A thread that drives one
//!   connection gains nothing from an event loop's bookkeeping (tokio's park/unpark and timer
//!   checks on every reply). Its calls block the calling thread, so a blocking stream is only
//!   ever driven by a thread of its own (`run::run` gives each connection one).
//!
//! How a blocking read waits was chosen by measurement (`docs/bench.md`, "Driver overhead"): on
//! this kind of virtual machine, sleeping in `epoll_wait` on a registration made for that one
//! wait costs less CPU per request than sleeping in `recv` itself or in `epoll_wait` on a
//! long-lived registration (a C loop of SET c=1 against Redis: medians 28.0, 33.7 and 33.5 µs of
//! CPU per request over 8 alternating rounds), although it makes two more system calls.
//!
//! Both implement tokio's `AsyncRead`/`AsyncWrite`, so the RESP and native connections are the
//! same code in both modes; a blocking stream's futures are always ready.
//!
//! A third variant, **TLS** (`--tls`), is an evented socket under a rustls client session
//! ([`crate::tls`]). It has no blocking form: the TLS stream reads ahead after each record,
//! which on a blocking socket would wait for bytes the server never sends.

use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// How a connection waits for its socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Io {
    /// Blocking sockets when there is at most one connection per driver thread, else evented.
    #[default]
    Auto,
    /// Every connection on the tokio event loop.
    Evented,
    /// Every connection on a thread of its own, with blocking system calls.
    Blocking,
}

impl Io {
    /// The mode a run of `clients` connections over `threads` driver threads uses.
    pub fn resolve(self, clients: u32, threads: usize) -> Io {
        match self {
            Io::Auto if clients as usize <= threads.max(1) => Io::Blocking,
            Io::Auto => Io::Evented,
            other => other,
        }
    }
}

/// A connected TCP socket in either mode, or a TLS session over an evented one.
#[derive(Debug)]
pub enum Stream {
    Evented(TcpStream),
    Blocking(BlockingSocket),
    /// Boxed: a client session is several times the size of a socket.
    Tls(Box<TlsStream<TcpStream>>),
}

/// A blocking socket and the epoll instance its reads wait in.
#[derive(Debug)]
pub struct BlockingSocket {
    socket: std::net::TcpStream,
    waiter: OwnedFd,
}

/// A libc return value as a result: negative is the thread's `errno`.
fn check(ret: libc::c_int) -> std::io::Result<libc::c_int> {
    if ret < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

impl BlockingSocket {
    fn new(socket: std::net::TcpStream) -> std::io::Result<BlockingSocket> {
        socket.set_nonblocking(false)?;
        // SAFETY: epoll_create1 takes no pointers; a non-negative result is a new descriptor
        // that nothing else owns.
        let waiter = unsafe { OwnedFd::from_raw_fd(check(libc::epoll_create1(libc::EPOLL_CLOEXEC))?) };
        Ok(BlockingSocket { socket, waiter })
    }

    /// Sleeps until the socket is readable (or at its end, or failed): registers it for this one
    /// wait, waits, and removes the registration again.
    fn wait_readable(&self) -> std::io::Result<()> {
        let (epoll, fd) = (self.waiter.as_raw_fd(), self.socket.as_raw_fd());
        let mut interest = libc::epoll_event { events: libc::EPOLLIN as u32, u64: 0 };
        // SAFETY: both descriptors are open for the life of `self`; `interest` outlives the call.
        check(unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_ADD, fd, &mut interest) })?;
        let waited = retry_interrupted(|| {
            let mut ready = [libc::epoll_event { events: 0, u64: 0 }];
            // SAFETY: `ready` has room for the one event asked for.
            check(unsafe { libc::epoll_wait(epoll, ready.as_mut_ptr(), 1, -1) })
        });
        // SAFETY: as above; DEL ignores the event argument.
        let removed = check(unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) });
        waited.and(removed).map(drop)
    }
}

impl Stream {
    /// `stream` in mode `io` (`Auto` counts as evented: resolve it first).
    pub fn new(stream: TcpStream, io: Io) -> std::io::Result<Stream> {
        if io != Io::Blocking {
            return Ok(Stream::Evented(stream));
        }
        Ok(Stream::Blocking(BlockingSocket::new(stream.into_std()?)?))
    }

    /// A completed TLS session (always evented).
    pub fn tls(session: TlsStream<TcpStream>) -> Stream {
        Stream::Tls(Box::new(session))
    }
}

/// Retries a system call interrupted by a signal, as `std`'s own `read_exact` does.
fn retry_interrupted<T>(mut call: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
    loop {
        match call() {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// One `recv` into the unfilled (possibly uninitialized) part of `buf`; returns the bytes read.
/// Reading through `std::io::Read` would need the buffer zeroed first (64 KiB per read here).
fn recv_uninit(stream: &std::net::TcpStream, buf: &mut ReadBuf<'_>) -> std::io::Result<usize> {
    // SAFETY: the slice is only written by the kernel, never read, and never de-initialized.
    let unfilled = unsafe { buf.unfilled_mut() };
    // SAFETY: `recv` writes at most `unfilled.len()` bytes into memory this slice owns.
    let n = unsafe { libc::recv(stream.as_raw_fd(), unfilled.as_mut_ptr().cast(), unfilled.len(), 0) };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Evented(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Stream::Blocking(s) => {
                s.wait_readable()?;
                let n = retry_interrupted(|| recv_uninit(&s.socket, buf))?;
                // SAFETY: `recv_uninit` initialized the first `n` bytes of the unfilled part.
                unsafe { buf.assume_init(n) };
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Evented(s) => Pin::new(s).poll_write(cx, data),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, data),
            Stream::Blocking(s) => Poll::Ready(retry_interrupted(|| s.socket.write(data))),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Evented(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            Stream::Blocking(_) => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Evented(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Stream::Blocking(s) => Poll::Ready(s.socket.shutdown(std::net::Shutdown::Write)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn auto_is_blocking_only_with_a_thread_per_connection() {
        assert_eq!(Io::Auto.resolve(1, 1), Io::Blocking);
        assert_eq!(Io::Auto.resolve(4, 4), Io::Blocking);
        assert_eq!(Io::Auto.resolve(8, 1), Io::Evented);
        assert_eq!(Io::Evented.resolve(1, 1), Io::Evented);
        assert_eq!(Io::Blocking.resolve(64, 1), Io::Blocking);
    }

    #[tokio::test]
    async fn a_blocking_stream_round_trips_bytes() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let echo = std::thread::spawn(move || {
            let (mut peer, _) = listener.accept().unwrap();
            let mut got = [0u8; 5];
            peer.read_exact(&mut got).unwrap();
            peer.write_all(&got).unwrap();
        });
        let tcp = TcpStream::connect(addr).await.unwrap();
        let mut stream = Stream::new(tcp, Io::Blocking).unwrap();
        assert!(matches!(stream, Stream::Blocking(_)));
        stream.write_all(b"hello").await.unwrap();
        let mut back = Vec::new();
        while back.len() < 5 {
            stream.read_buf(&mut back).await.unwrap();
        }
        assert_eq!(back, b"hello");
        echo.join().unwrap();
    }
}
