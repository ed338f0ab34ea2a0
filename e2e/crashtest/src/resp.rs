//! A minimal blocking RESP2 client: encode one command, read one reply.
//! The crash test needs nothing more, and owning the parser keeps "the reply was fully read" exact.

use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One RESP reply, as far as the crash test needs to tell them apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The reply as the text written into an ack log (no spaces).
    pub fn to_log_token(&self) -> String {
        match self {
            Reply::Status(s) => s.clone(),
            Reply::Int(n) => n.to_string(),
            Reply::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
            Reply::Bulk(None) | Reply::Array(None) => "(nil)".to_string(),
            Reply::Error(e) => format!("ERR:{}", e.replace(' ', "_")),
            Reply::Array(Some(items)) => format!("array[{}]", items.len()),
        }
    }
}

/// A connection to the server: buffered both ways, one reply read per command sent.
pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
}

impl Conn {
    /// Connects with TCP_NODELAY and a read timeout (a stuck server must not hang the test).
    pub fn connect(addr: &str, timeout: Duration) -> io::Result<Conn> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(timeout))?;
        Ok(Conn { reader: BufReader::new(stream.try_clone()?), writer: BufWriter::new(stream) })
    }

    /// Buffers one command; call `flush` to send everything buffered.
    pub fn queue(&mut self, args: &[&[u8]]) -> io::Result<()> {
        write!(self.writer, "*{}\r\n", args.len())?;
        for arg in args {
            write!(self.writer, "${}\r\n", arg.len())?;
            self.writer.write_all(arg)?;
            self.writer.write_all(b"\r\n")?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }

    /// Sends one command and reads its reply.
    pub fn call(&mut self, args: &[&[u8]]) -> io::Result<Reply> {
        self.queue(args)?;
        self.flush()?;
        self.read_reply()
    }

    /// Reads one complete reply; a connection closed mid-reply is an error.
    pub fn read_reply(&mut self) -> io::Result<Reply> {
        let line = self.read_line()?;
        let (kind, rest) = line.split_at(1);
        match kind {
            "+" => Ok(Reply::Status(rest.to_string())),
            "-" => Ok(Reply::Error(rest.to_string())),
            ":" => Ok(Reply::Int(parse_int(rest)?)),
            "$" => self.read_bulk(parse_int(rest)?),
            "*" => self.read_array(parse_int(rest)?),
            _ => Err(protocol_error(format!("unexpected reply line '{line}'"))),
        }
    }

    fn read_bulk(&mut self, len: i64) -> io::Result<Reply> {
        let Ok(len) = usize::try_from(len) else { return Ok(Reply::Bulk(None)) };
        let mut buf = vec![0; len + 2];
        self.reader.read_exact(&mut buf)?;
        if !buf.ends_with(b"\r\n") {
            return Err(protocol_error("bulk string without CRLF".to_string()));
        }
        buf.truncate(len);
        Ok(Reply::Bulk(Some(buf)))
    }

    fn read_array(&mut self, len: i64) -> io::Result<Reply> {
        let Ok(len) = usize::try_from(len) else { return Ok(Reply::Array(None)) };
        let mut items = Vec::with_capacity(len.min(1 << 16));
        for _ in 0..len {
            items.push(self.read_reply()?);
        }
        Ok(Reply::Array(Some(items)))
    }

    fn read_line(&mut self) -> io::Result<String> {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"));
        }
        if !line.ends_with("\r\n") || line.len() < 3 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "truncated reply line"));
        }
        line.truncate(line.len() - 2);
        Ok(line)
    }
}

fn parse_int(text: &str) -> io::Result<i64> {
    text.parse().map_err(|_| protocol_error(format!("bad integer '{text}'")))
}

fn protocol_error(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}
