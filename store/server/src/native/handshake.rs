//! The first frame of a connection: HELLO. Checks the magic (in the codec)
//! and the version range, then applies the options through the same
//! commands a RESP client would send: AUTH, CLIENT SETNAME, SELECT.

use cairn_native::hello::option;
use cairn_native::{encode, Body, Frame, Status, VERSION};

use super::execute::Exec;
use super::translate::status_of;

/// The server's name in HELLO_OK.
const SERVER_NAME: &str = concat!("cairn ", env!("CARGO_PKG_VERSION"));

/// Answers the first frame: HELLO_OK (true), or an ERROR frame (false: the
/// connection closes once it is written).
pub fn greet(exec: &mut Exec<'_>, frame: &Frame<'_>, out: &mut Vec<u8>) -> bool {
    let Body::Hello(hello) = frame.body else {
        encode::fatal(out, frame.id, Status::ProtocolError, b"ERR the first frame must be HELLO");
        return false;
    };
    if hello.min_version > VERSION || hello.max_version < VERSION {
        let message = format!(
            "ERR unsupported native protocol version: the client speaks {}..={}, this server speaks {VERSION}",
            hello.min_version, hello.max_version
        );
        encode::fatal(out, frame.id, Status::UnsupportedVersion, message.as_bytes());
        return false;
    }
    if let Err(message) = apply_options(exec, &hello) {
        encode::fatal(out, frame.id, status_of(&message), &message);
        return false;
    }
    encode::hello_ok(out, VERSION, exec.client.id(), SERVER_NAME.as_bytes());
    true
}

fn apply_options(exec: &mut Exec<'_>, hello: &cairn_native::Hello<'_>) -> Result<(), Vec<u8>> {
    if let Some(password) = hello.option(option::AUTH) {
        let user = hello.option(option::USER).unwrap_or(b"default");
        // As HELLO AUTH over RESP: accepted when no password is configured.
        exec.run_checked(&[b"HELLO", b"3", b"AUTH", user, password])?;
    }
    if let Some(name) = hello.option(option::NAME) {
        exec.run_checked(&[b"CLIENT", b"SETNAME", name])?;
    }
    if let Some(db) = hello.option(option::DB) {
        exec.run_checked(&[b"SELECT", db])?;
    }
    Ok(())
}
