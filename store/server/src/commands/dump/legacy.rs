//! Payloads DUMPed by Cairn builds before DUMP spoke Redis's format, which
//! RESTORE still accepts: the commands that rebuild the value (the engine's
//! `durability::rebuild`), with the key's positions marked, a version and a
//! CRC-32C. RESTORE replays them through the command table.
//!
//! Layout (integers little-endian):
//! `"CAIRNDUMP" version:u8 commands:u32 { argc:u32 { tag:u8 [len:u32 bytes] }* }* crc32c:u32`
//! where tag 0 is "the key" and tag 1 is a literal argument.

use super::super::CmdError;
use super::{BAD_DATA, BAD_PAYLOAD};

pub const MAGIC: &[u8] = b"CAIRNDUMP";
const VERSION: u8 = 1;

/// One rebuild command; `None` stands for the key.
pub type Command = Vec<Option<Vec<u8>>>;

/// Whether a payload is one of these (no RDB type byte is `C`).
pub fn is_legacy(payload: &[u8]) -> bool {
    payload.starts_with(MAGIC)
}

/// Reads `n` bytes at `*pos`.
fn take<'a>(data: &'a [u8], pos: &mut usize, n: usize) -> Option<&'a [u8]> {
    let bytes = data.get(*pos..pos.checked_add(n)?)?;
    *pos += n;
    Some(bytes)
}

fn take_u32(data: &[u8], pos: &mut usize) -> Option<usize> {
    let bytes: [u8; 4] = take(data, pos, 4)?.try_into().ok()?;
    Some(u32::from_le_bytes(bytes) as usize)
}

/// The body of a payload whose magic, version and CRC-32C are right.
fn verify(payload: &[u8]) -> Option<&[u8]> {
    let body_len = payload.len().checked_sub(4)?;
    let (body, crc) = payload.split_at(body_len);
    if !body.starts_with(MAGIC) || body.get(MAGIC.len()) != Some(&VERSION) {
        return None;
    }
    (crc32c::crc32c(body) == u32::from_le_bytes(crc.try_into().ok()?)).then_some(body)
}

/// The rebuild commands a verified body holds, if it parses to its end.
fn parse_body(body: &[u8]) -> Option<Vec<Command>> {
    let mut pos = MAGIC.len() + 1;
    let count = take_u32(body, &mut pos)?;
    let mut commands = Vec::new();
    for _ in 0..count {
        let argc = take_u32(body, &mut pos)?;
        let mut command = Vec::new();
        for _ in 0..argc {
            match take(body, &mut pos, 1)?[0] {
                0 => command.push(None),
                1 => {
                    let len = take_u32(body, &mut pos)?;
                    command.push(Some(take(body, &mut pos, len)?.to_vec()));
                }
                _ => return None,
            }
        }
        commands.push(command);
    }
    (pos == body.len()).then_some(commands)
}

/// A payload's commands: Redis's checksum error when its version or CRC is
/// wrong, `Bad data format` when they are right but the content is not, or
/// when a command is not one that DUMP ever wrote.
pub fn decode(payload: &[u8]) -> Result<Vec<Command>, CmdError> {
    let body = verify(payload).ok_or(BAD_PAYLOAD)?;
    let commands = parse_body(body).ok_or(BAD_DATA)?;
    if commands.iter().all(is_rebuild_command) {
        Ok(commands)
    } else {
        Err(BAD_DATA)
    }
}

/// Commands whose key is their first argument, as the rebuild wrote them.
const KEY_FIRST: &[&str] = &["set", "rpush", "hset", "sadd", "zadd", "xadd", "xsetid", "xclaim", "pexpireat"];

/// Whether `command` is one the rebuild wrote, on the restored key only: a
/// checksum is no protection, so a crafted payload must not run any other
/// command (FLUSHALL, CONFIG ...) or name any other key (a tag-1 argument
/// where the key goes).
fn is_rebuild_command(command: &Command) -> bool {
    let literal = |i: usize| command.get(i).and_then(Option::as_deref);
    let is_key = |i: usize| matches!(command.get(i), Some(None));
    let named = |i: usize, names: &[&str]| {
        literal(i).is_some_and(|word| names.iter().any(|n| word.eq_ignore_ascii_case(n.as_bytes())))
    };
    if named(0, KEY_FIRST) {
        return is_key(1);
    }
    named(0, &["xgroup"]) && named(1, &["create", "createconsumer"]) && is_key(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(body: &[u8]) -> Vec<u8> {
        let mut payload = MAGIC.to_vec();
        payload.push(VERSION);
        payload.extend_from_slice(body);
        let crc = crc32c::crc32c(&payload);
        payload.extend_from_slice(&crc.to_le_bytes());
        payload
    }

    #[test]
    fn reads_commands_and_rejects_damage() {
        // RPUSH <key> a
        let body = [1, 0, 0, 0, 3, 0, 0, 0, 1, 5, 0, 0, 0, b'R', b'P', b'U', b'S', b'H', 0, 1, 1, 0, 0, 0, b'a'];
        let payload = sealed(&body);
        let expected: Vec<Command> = vec![vec![Some(b"RPUSH".to_vec()), None, Some(b"a".to_vec())]];
        assert_eq!(decode(&payload), Ok(expected));
        let mut damaged = payload.clone();
        damaged[12] ^= 1;
        assert_eq!(decode(&damaged), Err(BAD_PAYLOAD));
    }

    /// A command as the body encodes it: `None` for the key.
    fn encoded(command: &[Option<&[u8]>]) -> Vec<u8> {
        let mut body = 1u32.to_le_bytes().to_vec();
        body.extend_from_slice(&(command.len() as u32).to_le_bytes());
        for arg in command {
            match arg {
                None => body.push(0),
                Some(bytes) => {
                    body.push(1);
                    body.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                    body.extend_from_slice(bytes);
                }
            }
        }
        body
    }

    #[test]
    fn only_the_rebuild_s_commands_on_the_key_are_accepted() {
        let accepted: &[&[Option<&[u8]>]] = &[
            &[Some(b"SET"), None, Some(b"v")],
            &[Some(b"zadd"), None, Some(b"1"), Some(b"m")],
            &[Some(b"XGROUP"), Some(b"CREATE"), None, Some(b"g"), Some(b"0-0")],
            &[Some(b"PEXPIREAT"), None, Some(b"1")],
        ];
        for command in accepted {
            assert!(decode(&sealed(&encoded(command))).is_ok(), "{command:?}");
        }
        let refused: &[&[Option<&[u8]>]] = &[
            &[Some(b"FLUSHALL")],
            &[Some(b"CONFIG"), Some(b"SET"), Some(b"dir"), Some(b"/")],
            &[Some(b"SET"), Some(b"other-key"), Some(b"v")],
            &[Some(b"XGROUP"), Some(b"DESTROY"), None, Some(b"g")],
            &[Some(b"XGROUP"), Some(b"CREATE"), Some(b"other"), Some(b"g"), Some(b"0")],
            &[None, None],
            &[Some(b"CAIRN.XCONSUMER"), None, Some(b"g"), Some(b"c"), Some(b"0")],
        ];
        for command in refused {
            assert_eq!(decode(&sealed(&encoded(command))), Err(BAD_DATA), "{command:?}");
        }
    }

    #[test]
    fn a_sound_checksum_over_bad_content_is_bad_data() {
        // One command of one argument whose tag is neither 0 nor 1.
        assert_eq!(decode(&sealed(&[1, 0, 0, 0, 1, 0, 0, 0, 7])), Err(BAD_DATA));
    }
}
