//! A typed operation as the argv of the command it stands for. The argv
//! borrows the operation's slices (from the read buffer) and, for numbers, a
//! stack buffer: nothing is allocated.

use cairn_native::{DecodedOp, Op, SetCondition};

/// Stack space for the one number an operation may need as text.
pub type NumberText = itoa::Buffer;

/// Appends the argv of `op` to `args` (which is empty).
pub fn build<'a>(op: &DecodedOp<'a>, number: &'a mut NumberText, args: &mut Vec<&'a [u8]>) {
    match *op {
        Op::Get { key } => args.extend_from_slice(&[b"GET", key]),
        Op::Set { key, value, ttl_ms, condition } => {
            args.extend_from_slice(&[b"SET", key, value]);
            if let Some(ttl) = ttl_ms {
                args.extend_from_slice(&[b"PX", number.format(ttl).as_bytes()]);
            }
            match condition {
                SetCondition::Always => {}
                SetCondition::IfAbsent => args.push(b"NX"),
                SetCondition::IfPresent => args.push(b"XX"),
            }
        }
        Op::Del { keys } => {
            args.push(b"DEL");
            args.extend(keys.iter());
        }
        Op::Exists { keys } => {
            args.push(b"EXISTS");
            args.extend(keys.iter());
        }
        Op::IncrBy { key, delta } => args.extend_from_slice(&[b"INCRBY", key, number.format(delta).as_bytes()]),
        Op::Expire { key, ttl_ms } => args.extend_from_slice(&[b"PEXPIRE", key, number.format(ttl_ms).as_bytes()]),
        Op::MGet { keys } => {
            args.push(b"MGET");
            args.extend(keys.iter());
        }
        Op::MSet { items } => {
            args.push(b"MSET");
            args.extend(items.iter());
        }
        Op::Command { args: given } => args.extend(given.iter()),
    }
}
