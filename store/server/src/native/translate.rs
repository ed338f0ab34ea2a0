//! The dispatcher's RESP3 reply, translated into a native outcome. Typed
//! operations get typed values (the small, known reply shapes: status,
//! integer, bulk, null, array of bulks); anything else, and every reply of
//! the generic COMMAND operation, travels as its RESP3 bytes. Values are
//! copied once, from the scratch buffer into the output.

use cairn_native::reply::{put_array_item, put_error, put_ok, put_ok_array};
use cairn_native::{Status, Value};

/// Appends the outcome of one request whose RESP3 reply is `reply`.
/// `generic`: the request was a COMMAND operation (non-error replies are
/// passed on as RESP3).
pub fn write_outcome(out: &mut Vec<u8>, reply: &[u8], generic: bool) {
    match reply.first() {
        // CLIENT REPLY OFF/SKIP dropped the reply.
        None => put_ok(out, &Value::Nil),
        Some(b'-') => {
            let message = first_line(&reply[1..]);
            put_error(out, status_of(message), message);
        }
        Some(b'!') => match bulk(&reply[1..]) {
            Some((message, _)) => put_error(out, status_of(message), message),
            None => put_error(out, Status::Err, b"ERR malformed error reply"),
        },
        _ if generic => put_ok(out, &Value::Resp(reply)),
        Some(_) => write_typed(out, reply),
    }
}

/// A non-error reply of a typed operation.
fn write_typed(out: &mut Vec<u8>, reply: &[u8]) {
    let value = match reply[0] {
        b'+' if first_line(&reply[1..]) == b"OK" => Value::Ok,
        b'+' => Value::Bytes(first_line(&reply[1..])),
        b':' => match cairn_engine::number::parse_i64(first_line(&reply[1..])) {
            Some(n) => Value::Int(n),
            None => Value::Resp(reply),
        },
        b'_' => Value::Nil,
        b'$' => match bulk(&reply[1..]) {
            Some((data, _)) => Value::Bytes(data),
            None => Value::Resp(reply),
        },
        b'*' => {
            if write_array(out, reply) {
                return;
            }
            Value::Resp(reply)
        }
        _ => Value::Resp(reply),
    };
    put_ok(out, &value);
}

/// An array of bulk strings and nulls (MGET) as an array value; false (and
/// nothing written) when the array holds anything else.
fn write_array(out: &mut Vec<u8>, reply: &[u8]) -> bool {
    let mark = out.len();
    let header = first_line(&reply[1..]);
    let Some(count) = cairn_engine::number::parse_i64(header).and_then(|n| usize::try_from(n).ok()) else {
        return false;
    };
    put_ok_array(out, count);
    let mut rest = &reply[1 + header.len() + 2..];
    for _ in 0..count {
        let item = match rest.first() {
            Some(b'$') => bulk(&rest[1..]).map(|(data, used)| (Some(data), 1 + used)),
            Some(b'_') => Some((None, 3)),
            _ => None,
        };
        let Some((item, used)) = item else {
            out.truncate(mark);
            return false;
        };
        put_array_item(out, item);
        rest = rest.get(used..).unwrap_or(&[]);
    }
    true
}

/// The bytes up to the first CRLF (all of `bytes` when there is none).
fn first_line(bytes: &[u8]) -> &[u8] {
    match bytes.windows(2).position(|w| w == b"\r\n") {
        Some(end) => &bytes[..end],
        None => bytes,
    }
}

/// A length-prefixed body (after its type byte): `len\r\ndata\r\n`.
/// Returns the data and how many bytes the whole took.
fn bulk(bytes: &[u8]) -> Option<(&[u8], usize)> {
    let header = first_line(bytes);
    let len = usize::try_from(cairn_engine::number::parse_i64(header)?).ok()?;
    let start = header.len() + 2;
    let data = bytes.get(start..start + len)?;
    Some((data, start + len + 2))
}

/// The status for an error reply, from its first word.
pub fn status_of(message: &[u8]) -> Status {
    let word = message.split(|&b| b == b' ').next().unwrap_or(b"");
    match word {
        b"WRONGTYPE" => Status::WrongType,
        b"NOAUTH" => Status::NoAuth,
        b"WRONGPASS" => Status::AuthFailed,
        b"OOM" => Status::OutOfMemory,
        b"LOADING" => Status::Loading,
        b"ERR" if message.starts_with(b"ERR unknown command") => Status::UnknownCommand,
        _ => Status::Err,
    }
}

#[cfg(test)]
mod tests {
    use cairn_native::cursor::Cursor;
    use cairn_native::reply::decode_outcome;
    use cairn_native::{Limits, Outcome};

    use super::*;

    fn translate(reply: &[u8], generic: bool) -> Vec<u8> {
        let mut out = Vec::new();
        write_outcome(&mut out, reply, generic);
        out
    }

    fn outcome(bytes: &[u8]) -> Outcome<'_> {
        let mut cursor = Cursor::new(bytes);
        let outcome = decode_outcome(&mut cursor, &Limits::default()).expect("valid outcome");
        assert_eq!(cursor.remaining(), 0);
        outcome
    }

    #[test]
    fn typed_shapes() {
        assert_eq!(outcome(&translate(b"+OK\r\n", false)), Outcome::Ok(Value::Ok));
        assert_eq!(outcome(&translate(b"+QUEUED\r\n", false)), Outcome::Ok(Value::Bytes(b"QUEUED")));
        assert_eq!(outcome(&translate(b":-42\r\n", false)), Outcome::Ok(Value::Int(-42)));
        assert_eq!(outcome(&translate(b"_\r\n", false)), Outcome::Ok(Value::Nil));
        assert_eq!(outcome(&translate(b"$5\r\nab\r\nc\r\n", false)), Outcome::Ok(Value::Bytes(b"ab\r\nc")));
        let array = translate(b"*3\r\n$1\r\na\r\n_\r\n$0\r\n\r\n", false);
        let Outcome::Ok(Value::Array(items)) = outcome(&array) else {
            panic!("not an array");
        };
        let items: Vec<Option<&[u8]>> = items.iter().collect();
        assert_eq!(items, vec![Some(&b"a"[..]), None, Some(&b""[..])]);
        let nested = b"*1\r\n*0\r\n";
        assert_eq!(outcome(&translate(nested, false)), Outcome::Ok(Value::Resp(nested)));
    }

    #[test]
    fn errors_and_generic() {
        let error = translate(b"-WRONGTYPE Operation\r\n", false);
        let Outcome::Error { status, message } = outcome(&error) else {
            panic!("not an error");
        };
        assert_eq!((status, message), (Status::WrongType, &b"WRONGTYPE Operation"[..]));
        let Outcome::Error { status, .. } = outcome(&translate(b"-ERR unknown command 'x'\r\n", true)) else {
            panic!("not an error");
        };
        assert_eq!(status, Status::UnknownCommand);
        assert_eq!(outcome(&translate(b":1\r\n", true)), Outcome::Ok(Value::Resp(b":1\r\n")));
    }
}
