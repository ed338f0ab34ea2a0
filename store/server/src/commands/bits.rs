//! Bit commands on strings: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP,
//! BITFIELD and BITFIELD_RO, with Redis 7.0's semantics and error texts.
//!
//! Bit 0 of a string is the most significant bit of its first byte. Reads past
//! the end of a string see zeros; writes grow the string with zero bytes. Bit
//! offsets are limited by `proto-max-bulk-len` (`offset / 8` must stay below
//! it), as Redis does, which also bounds the memory a write can allocate.
//!
//! The pure parts (range resolution, bit search and counting, bitfield
//! get/set and overflow rules) are free functions, tested at the bottom.

use std::sync::atomic::Ordering;

use cairn_engine::entry::NO_EXPIRY;
use cairn_engine::events as ev;
use cairn_engine::number::parse_i64;
use cairn_engine::{StrValue, Value};

use super::strings::{as_str, as_str_mut, lookup_str};
use super::{int_arg, is, CmdError, CmdResult, Ctx};

const BAD_BIT_OFFSET: CmdError = CmdError::Static("ERR bit offset is not an integer or out of range");
const BAD_BIT_VALUE: CmdError = CmdError::Static("ERR bit is not an integer or out of range");
const BAD_BITPOS_BIT: CmdError = CmdError::Static("ERR The bit argument must be 1 or 0.");
const BAD_NOT_SOURCES: CmdError = CmdError::Static("ERR BITOP NOT must be called with a single source key.");
const BAD_FIELD_TYPE: CmdError = CmdError::Static(
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
);
const BAD_OVERFLOW_TYPE: CmdError = CmdError::Static("ERR Invalid OVERFLOW type specified");
const READ_ONLY_GET_ONLY: CmdError = CmdError::Static("ERR BITFIELD_RO only supports the GET subcommand");

fn proto_max_bulk_len(ctx: &Ctx<'_>) -> usize {
    ctx.server.runtime.proto_max_bulk_len.load(Ordering::Relaxed)
}

/// Records a read lookup in the keyspace hit/miss statistics.
fn count_lookup(ctx: &Ctx<'_>, found: bool) {
    if found {
        ctx.stats.keyspace_hits.add(1);
    } else {
        ctx.stats.keyspace_misses.add(1);
    }
}

// ---------------------------------------------------------------------------
// Argument parsing
// ---------------------------------------------------------------------------

/// Parses a bit offset. When `field_bits > 0` (BITFIELD), `#N` means
/// `N * field_bits`. The offset's byte must lie below `max_bytes`.
fn parse_bit_offset(arg: &[u8], field_bits: u32, max_bytes: usize) -> Result<u64, CmdError> {
    let (digits, scale) = match arg.split_first() {
        Some((b'#', rest)) if field_bits > 0 => (rest, i64::from(field_bits)),
        _ => (arg, 1),
    };
    // Redis multiplies in C `long long`; a wrapped product shows up as negative.
    let offset = parse_i64(digits).ok_or(BAD_BIT_OFFSET)?.wrapping_mul(scale);
    if offset < 0 || (offset >> 3) as u64 >= max_bytes as u64 {
        return Err(BAD_BIT_OFFSET);
    }
    Ok(offset as u64)
}

/// SETBIT's value argument: 0 or 1.
fn parse_bit_value(arg: &[u8]) -> Result<bool, CmdError> {
    match parse_i64(arg) {
        Some(0) => Ok(false),
        Some(1) => Ok(true),
        _ => Err(BAD_BIT_VALUE),
    }
}

/// Whether BITCOUNT/BITPOS indexes count bytes or bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RangeUnit {
    Byte,
    Bit,
}

fn parse_unit(arg: &[u8]) -> Result<RangeUnit, CmdError> {
    if is(arg, "bit") {
        Ok(RangeUnit::Bit)
    } else if is(arg, "byte") {
        Ok(RangeUnit::Byte)
    } else {
        Err(CmdError::Syntax)
    }
}

// ---------------------------------------------------------------------------
// Bit math
// ---------------------------------------------------------------------------

/// Resolves an inclusive `start..=end` (negative counts from the end) over
/// `total` units with Redis's clamping; `None` when the range is empty.
fn resolve_range(mut start: i64, mut end: i64, total: i64) -> Option<(i64, i64)> {
    if start < 0 {
        start += total;
    }
    if end < 0 {
        end += total;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= total {
        end = total - 1;
    }
    (start <= end).then_some((start, end))
}

/// The inclusive bit range `start..=end` in `unit`s selects on a string of
/// `len` bytes, or `None` when it is empty.
fn bit_range(start: i64, end: i64, len: usize, unit: RangeUnit) -> Option<(u64, u64)> {
    let len = len as i64;
    match unit {
        RangeUnit::Byte => resolve_range(start, end, len).map(|(s, e)| (s as u64 * 8, e as u64 * 8 + 7)),
        RangeUnit::Bit => resolve_range(start, end, len * 8).map(|(s, e)| (s as u64, e as u64)),
    }
}

/// Number of set bits, a word at a time.
fn popcount(bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    let mut count: u64 = 0;
    for word in words.by_ref() {
        let mut buf = [0u8; 8];
        buf.copy_from_slice(word);
        count += u64::from(u64::from_ne_bytes(buf).count_ones());
    }
    count + words.remainder().iter().map(|b| u64::from(b.count_ones())).sum::<u64>()
}

/// Mask of the bits of a byte at or after bit `first % 8` (bit 0 is the MSB).
fn mask_from(first: u64) -> u8 {
    0xff >> (first % 8)
}

/// Mask of the bits of a byte at or before bit `last % 8`.
fn mask_through(last: u64) -> u8 {
    0xff << (7 - last % 8)
}

/// Set bits among bits `first..=last`, which must lie inside `data`.
fn count_ones(data: &[u8], first: u64, last: u64) -> u64 {
    let (first_byte, last_byte) = ((first / 8) as usize, (last / 8) as usize);
    let outside_head = data[first_byte] & !mask_from(first);
    let outside_tail = data[last_byte] & !mask_through(last);
    popcount(&data[first_byte..=last_byte])
        - u64::from(outside_head.count_ones())
        - u64::from(outside_tail.count_ones())
}

/// How many leading bytes of `bytes` equal `value`, a word at a time.
fn uniform_prefix_len(bytes: &[u8], value: u8) -> usize {
    let word_value = u64::from_ne_bytes([value; 8]);
    let mut skipped = 0;
    for word in bytes.chunks_exact(8) {
        let mut buf = [0u8; 8];
        buf.copy_from_slice(word);
        if u64::from_ne_bytes(buf) != word_value {
            break;
        }
        skipped += 8;
    }
    skipped + bytes[skipped..].iter().take_while(|&&b| b == value).count()
}

/// Position of the first bit equal to `bit` among bits `first..=last`, which
/// must lie inside `data`.
fn find_bit(data: &[u8], bit: bool, first: u64, last: u64) -> Option<u64> {
    let (first_byte, last_byte) = ((first / 8) as usize, (last / 8) as usize);
    // After XOR with `flip`, the bits we look for are ones.
    let flip = if bit { 0x00 } else { 0xff };
    let mut index = first_byte;
    while index <= last_byte {
        let mut hits = data[index] ^ flip;
        if index == first_byte {
            hits &= mask_from(first);
        }
        if index == last_byte {
            hits &= mask_through(last);
        }
        if hits != 0 {
            return Some(index as u64 * 8 + u64::from(hits.leading_zeros()));
        }
        index += 1;
        if index < last_byte {
            index += uniform_prefix_len(&data[index..last_byte], flip);
        }
    }
    None
}

/// BITCOUNT on `data` with the arguments after the key.
fn bitcount_of(data: &[u8], range_args: &[&[u8]]) -> Result<i64, CmdError> {
    let (first, last) = match range_args {
        [] => match bit_range(0, -1, data.len(), RangeUnit::Byte) {
            Some(range) => range,
            None => return Ok(0),
        },
        [start, end, unit @ ..] if unit.len() <= 1 => {
            let start = int_arg(start)?;
            let end = int_arg(end)?;
            if start < 0 && end < 0 && start > end {
                return Ok(0);
            }
            let unit = unit.first().map_or(Ok(RangeUnit::Byte), |u| parse_unit(u))?;
            match bit_range(start, end, data.len(), unit) {
                Some(range) => range,
                None => return Ok(0),
            }
        }
        _ => return Err(CmdError::Syntax),
    };
    Ok(count_ones(data, first, last) as i64)
}

/// BITPOS on an existing string `data` with the arguments after the bit.
fn bitpos_of(data: &[u8], bit: bool, range_args: &[&[u8]]) -> Result<i64, CmdError> {
    if range_args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let start = range_args.first().map_or(Ok(0), |a| int_arg(a))?;
    let unit = range_args.get(2).map_or(Ok(RangeUnit::Byte), |u| parse_unit(u))?;
    let end = range_args.get(1).map_or(Ok(-1), |a| int_arg(a))?;
    let end_given = range_args.len() >= 2;
    let Some((first, last)) = bit_range(start, end, data.len(), unit) else {
        return Ok(-1);
    };
    Ok(match find_bit(data, bit, first, last) {
        Some(pos) => pos as i64,
        // With no explicit end, the string counts as padded with zeros on the right.
        None if !bit && !end_given => last as i64 + 1,
        None => -1,
    })
}

// ---------------------------------------------------------------------------
// SETBIT, GETBIT, BITCOUNT, BITPOS
// ---------------------------------------------------------------------------

/// Sets or clears one bit in `data`, which must hold it; returns the old bit.
fn write_bit(data: &mut [u8], offset: u64, on: bool) -> bool {
    let byte = &mut data[(offset >> 3) as usize];
    let mask = 0x80u8 >> (offset & 7);
    let old = *byte & mask != 0;
    if on {
        *byte |= mask;
    } else {
        *byte &= !mask;
    }
    old
}

fn read_bit(data: &[u8], offset: u64) -> bool {
    data.get((offset >> 3) as usize).is_some_and(|byte| byte & (0x80 >> (offset & 7)) != 0)
}

/// A new string value of `len` zero bytes, marked raw as Redis creates it.
fn zeroed_string(len: usize) -> Vec<u8> {
    vec![0u8; len]
}

fn raw_value(data: Vec<u8>) -> Value {
    Value::Str(StrValue::Bytes { data, raw: true })
}

/// Grows `data` with zero bytes to at least `len`.
fn grow_zeroed(data: &mut Vec<u8>, len: usize) {
    if data.len() < len {
        data.resize(len, 0);
    }
}

pub fn setbit(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let offset = parse_bit_offset(args[2], 0, proto_max_bulk_len(ctx))?;
    let on = parse_bit_value(args[3])?;
    let needed_len = (offset >> 3) as usize + 1;
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    let (old, changed) = match lookup_str(table, args[1], ctx.now_ms)? {
        Some(entry) => {
            let data = as_str_mut(&mut entry.value)?.make_raw();
            let grown = data.len() < needed_len;
            grow_zeroed(data, needed_len);
            let old = write_bit(data, offset, on);
            (old, grown || old != on)
        }
        None => {
            let mut data = zeroed_string(needed_len);
            write_bit(&mut data, offset, on);
            table.insert(args[1], raw_value(data), NO_EXPIRY, ctx.now_ms);
            (false, true)
        }
    };
    if changed {
        ctx.notify(ev::STRING, "setbit", args[1]);
    } else {
        ctx.client.write_was_noop = true;
    }
    drop(shard);
    ctx.out.int(i64::from(old));
    Ok(())
}

pub fn getbit(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let offset = parse_bit_offset(args[2], 0, proto_max_bulk_len(ctx))?;
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let bit = match lookup_str(shard.db(db), args[1], ctx.now_ms)? {
        Some(entry) => Some(as_str(&entry.value)?.with_bytes(|data| read_bit(data, offset))),
        None => None,
    };
    drop(shard);
    count_lookup(ctx, bit.is_some());
    ctx.out.int(i64::from(bit.unwrap_or(false)));
    Ok(())
}

pub fn bitcount(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    // Redis looks the key up before it parses the range: a missing key answers 0 to any range.
    let count = match lookup_str(shard.db(db), args[1], ctx.now_ms)? {
        Some(entry) => Some(as_str(&entry.value)?.with_bytes(|data| bitcount_of(data, &args[2..]))),
        None => None,
    };
    drop(shard);
    count_lookup(ctx, count.is_some());
    ctx.out.int(count.transpose()?.unwrap_or(0));
    Ok(())
}

pub fn bitpos(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let bit = match int_arg(args[2])? {
        0 => false,
        1 => true,
        _ => return Err(BAD_BITPOS_BIT),
    };
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let pos = match lookup_str(shard.db(db), args[1], ctx.now_ms)? {
        Some(entry) => Some(as_str(&entry.value)?.with_bytes(|data| bitpos_of(data, bit, &args[3..]))),
        None => None,
    };
    drop(shard);
    count_lookup(ctx, pos.is_some());
    // A missing key is an infinite string of zeros.
    let missing = if bit { -1 } else { 0 };
    ctx.out.int(pos.transpose()?.unwrap_or(missing));
    Ok(())
}

// ---------------------------------------------------------------------------
// BITOP
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

impl BitOp {
    fn parse(arg: &[u8]) -> Option<BitOp> {
        [("and", BitOp::And), ("or", BitOp::Or), ("xor", BitOp::Xor), ("not", BitOp::Not)]
            .into_iter()
            .find(|(name, _)| is(arg, name))
            .map(|(_, op)| op)
    }
}

/// Folds source `src` into `acc` (as long as the longest source, zero
/// padded). `is_first` marks the first source, which initializes `acc`.
fn fold_source(op: BitOp, acc: &mut [u8], src: &[u8], is_first: bool) {
    let (head, tail) = acc.split_at_mut(src.len().min(acc.len()));
    if is_first {
        head.copy_from_slice(&src[..head.len()]);
        tail.fill(0);
        if op == BitOp::Not {
            acc.iter_mut().for_each(|b| *b = !*b);
        }
        return;
    }
    let pairs = head.iter_mut().zip(src);
    match op {
        BitOp::And => {
            pairs.for_each(|(a, s)| *a &= s);
            tail.fill(0);
        }
        BitOp::Or => pairs.for_each(|(a, s)| *a |= s),
        BitOp::Xor => pairs.for_each(|(a, s)| *a ^= s),
        BitOp::Not => {}
    }
}

pub fn bitop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let op = BitOp::parse(args[1]).ok_or(CmdError::Syntax)?;
    if op == BitOp::Not && args.len() != 4 {
        return Err(BAD_NOT_SOURCES);
    }
    let (dest, sources) = (args[2], &args[3..]);
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut guard = ctx.server.keyspace.lock_keys(args[2..].iter().copied());

    // First pass: types and the result's length.
    let mut max_len = 0;
    let (mut hits, mut misses) = (0, 0);
    for key in sources {
        match guard.table(db, key).get(key, now) {
            Some(entry) => {
                hits += 1;
                max_len = max_len.max(as_str(&entry.value)?.len());
            }
            None => misses += 1,
        }
    }

    let mut result = zeroed_string(max_len);
    if max_len > 0 {
        for (i, key) in sources.iter().enumerate() {
            match guard.table(db, key).get(key, now) {
                Some(entry) => as_str(&entry.value)?.with_bytes(|src| fold_source(op, &mut result, src, i == 0)),
                None => fold_source(op, &mut result, &[], i == 0),
            }
        }
        guard.table(db, dest).insert(dest, raw_value(result), NO_EXPIRY, now);
        ctx.notify(ev::STRING, "set", dest);
    } else if guard.table(db, dest).remove(dest).is_some() {
        ctx.notify(ev::GENERIC, "del", dest);
    }
    drop(guard);
    ctx.stats.keyspace_hits.add(hits);
    ctx.stats.keyspace_misses.add(misses);
    ctx.out.int(max_len as i64);
    Ok(())
}

// ---------------------------------------------------------------------------
// BITFIELD
// ---------------------------------------------------------------------------

/// What INCRBY and SET do when the result does not fit the field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// A field type: `i1`..`i64` or `u1`..`u63`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FieldType {
    signed: bool,
    bits: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FieldAction {
    Get,
    Set(i64),
    IncrBy(i64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FieldOp {
    action: FieldAction,
    ty: FieldType,
    offset: u64,
    overflow: Overflow,
}

impl FieldOp {
    fn writes(&self) -> bool {
        self.action != FieldAction::Get
    }

    /// The last bit the operation touches.
    fn last_bit(&self) -> u64 {
        self.offset + u64::from(self.ty.bits) - 1
    }
}

fn parse_field_type(arg: &[u8]) -> Result<FieldType, CmdError> {
    let (signed, max_bits) = match arg.first() {
        Some(b'i') => (true, 64),
        Some(b'u') => (false, 63),
        _ => return Err(BAD_FIELD_TYPE),
    };
    match parse_i64(&arg[1..]) {
        Some(bits) if (1..=max_bits).contains(&bits) => Ok(FieldType { signed, bits: bits as u32 }),
        _ => Err(BAD_FIELD_TYPE),
    }
}

fn parse_overflow(arg: &[u8]) -> Result<Overflow, CmdError> {
    if is(arg, "wrap") {
        Ok(Overflow::Wrap)
    } else if is(arg, "sat") {
        Ok(Overflow::Sat)
    } else if is(arg, "fail") {
        Ok(Overflow::Fail)
    } else {
        Err(BAD_OVERFLOW_TYPE)
    }
}

/// Parses BITFIELD's subcommands (the arguments after the key), in order,
/// stopping at the first error as Redis does.
fn parse_field_ops(args: &[&[u8]], max_bytes: usize) -> Result<Vec<FieldOp>, CmdError> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 0;
    while j < args.len() {
        let (sub, remaining) = (args[j], args.len() - j - 1);
        let action = if is(sub, "get") && remaining >= 2 {
            FieldAction::Get
        } else if is(sub, "set") && remaining >= 3 {
            FieldAction::Set(0)
        } else if is(sub, "incrby") && remaining >= 3 {
            FieldAction::IncrBy(0)
        } else if is(sub, "overflow") && remaining >= 1 {
            overflow = parse_overflow(args[j + 1])?;
            j += 2;
            continue;
        } else {
            return Err(CmdError::Syntax);
        };
        let ty = parse_field_type(args[j + 1])?;
        let offset = parse_bit_offset(args[j + 2], ty.bits, max_bytes)?;
        let action = match action {
            FieldAction::Get => FieldAction::Get,
            FieldAction::Set(_) => FieldAction::Set(int_arg(args[j + 3])?),
            FieldAction::IncrBy(_) => FieldAction::IncrBy(int_arg(args[j + 3])?),
        };
        ops.push(FieldOp { action, ty, offset, overflow });
        j += if action == FieldAction::Get { 3 } else { 4 };
    }
    Ok(ops)
}

/// Reads a `bits`-wide unsigned field at bit `offset`; bits past the end of
/// `data` read as zero. A field spans at most 9 bytes.
fn get_unsigned(data: &[u8], offset: u64, bits: u32) -> u64 {
    let byte = (offset >> 3) as usize;
    let mut buf = [0u8; 16];
    if byte < data.len() {
        let available = (data.len() - byte).min(9);
        buf[..available].copy_from_slice(&data[byte..byte + available]);
    }
    let word = u128::from_be_bytes(buf) << (offset & 7);
    (word >> (128 - bits)) as u64
}

/// Reads a two's-complement field of `bits` bits.
fn get_signed(data: &[u8], offset: u64, bits: u32) -> i64 {
    sign_extend(get_unsigned(data, offset, bits), bits)
}

/// Writes the low `bits` bits of `value` at bit `offset`; `data` must hold them.
fn set_field(data: &mut [u8], offset: u64, bits: u32, value: u64) {
    let byte = (offset >> 3) as usize;
    let shift = (offset & 7) as u32;
    let span = ((shift + bits).div_ceil(8)) as usize;
    let mut buf = [0u8; 16];
    buf[..span].copy_from_slice(&data[byte..byte + span]);
    let low = 128 - shift - bits;
    let field_mask = (u128::MAX >> (128 - bits)) << low;
    let word = (u128::from_be_bytes(buf) & !field_mask) | ((u128::from(value) << low) & field_mask);
    data[byte..byte + span].copy_from_slice(&word.to_be_bytes()[..span]);
}

/// The value a signed field gets from `value + incr` (SET passes `incr = 0`)
/// under `overflow`, or `None` when FAIL refuses it. Mirrors Redis's
/// `checkSignedBitfieldOverflow`, including its wrapping intermediate math.
fn signed_outcome(value: i64, incr: i64, bits: u32, overflow: Overflow) -> Option<i64> {
    let max = if bits == 64 { i64::MAX } else { (1i64 << (bits - 1)) - 1 };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let above = value > max || (bits != 64 && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr);
    let below =
        !above && (value < min || (bits != 64 && incr < min_incr) || (value < 0 && incr < 0 && incr < min_incr));
    if !above && !below {
        return Some(value.wrapping_add(incr));
    }
    match overflow {
        Overflow::Fail => None,
        Overflow::Sat => Some(if above { max } else { min }),
        Overflow::Wrap => {
            let sum = (value as u64).wrapping_add(incr as u64);
            Some(sign_extend(sum, bits))
        }
    }
}

/// The low `bits` bits of `raw` as a two's-complement number.
fn sign_extend(raw: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((raw << shift) as i64) >> shift
}

/// The unsigned counterpart of [`signed_outcome`] (Redis's
/// `checkUnsignedBitfieldOverflow`); `value` is a stored field or a SET
/// argument reinterpreted as unsigned.
fn unsigned_outcome(value: u64, incr: i64, bits: u32, overflow: Overflow) -> Option<u64> {
    let max = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = value.wrapping_neg() as i64;
    let above = value > max || (incr > 0 && incr > max_incr);
    let below = !above && incr < 0 && incr < min_incr;
    if !above && !below {
        return Some(value.wrapping_add(incr as u64));
    }
    match overflow {
        Overflow::Fail => None,
        Overflow::Sat => Some(if above { max } else { 0 }),
        Overflow::Wrap => Some(value.wrapping_add(incr as u64) & max),
    }
}

/// Runs one operation on `data` (which holds every field a write touches);
/// the reply value, or `None` for a write refused by OVERFLOW FAIL.
fn apply_field_op(data: &mut [u8], op: &FieldOp) -> Option<i64> {
    let FieldOp { action, ty, offset, overflow } = *op;
    // SET checks its value with an increment of 0; INCRBY checks the old value plus the increment.
    let (set_value, incr) = match action {
        FieldAction::Get => return Some(read_field(data, ty, offset)),
        FieldAction::Set(value) => (Some(value), 0),
        FieldAction::IncrBy(incr) => (None, incr),
    };
    let (old, new) = if ty.signed {
        let old = get_signed(data, offset, ty.bits);
        (old, signed_outcome(set_value.unwrap_or(old), incr, ty.bits, overflow)?)
    } else {
        let old = get_unsigned(data, offset, ty.bits);
        let base = set_value.map_or(old, |v| v as u64);
        (old as i64, unsigned_outcome(base, incr, ty.bits, overflow)? as i64)
    };
    set_field(data, offset, ty.bits, new as u64);
    // SET replies with the old value, INCRBY with the new one.
    Some(if set_value.is_some() { old } else { new })
}

fn read_field(data: &[u8], ty: FieldType, offset: u64) -> i64 {
    if ty.signed {
        get_signed(data, offset, ty.bits)
    } else {
        get_unsigned(data, offset, ty.bits) as i64
    }
}

fn write_field_replies(ctx: &mut Ctx<'_>, replies: &[Option<i64>]) {
    ctx.out.array(replies.len());
    for reply in replies {
        match reply {
            Some(v) => ctx.out.int(*v),
            None => ctx.out.null_bulk(),
        }
    }
}

fn bitfield_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], read_only_command: bool) -> CmdResult {
    let ops = parse_field_ops(&args[2..], proto_max_bulk_len(ctx))?;
    let last_write_bit = ops.iter().filter(|op| op.writes()).map(FieldOp::last_bit).max();
    let replies = match last_write_bit {
        None => bitfield_read(ctx, args[1], &ops)?,
        Some(_) if read_only_command => return Err(READ_ONLY_GET_ONLY),
        Some(last_bit) => bitfield_write(ctx, args[1], &ops, (last_bit >> 3) as usize + 1)?,
    };
    write_field_replies(ctx, &replies);
    Ok(())
}

/// BITFIELD with GETs only: a read lookup, nothing is created.
fn bitfield_read(ctx: &mut Ctx<'_>, key: &[u8], ops: &[FieldOp]) -> Result<Vec<Option<i64>>, CmdError> {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(key);
    let read_all = |data: &[u8]| ops.iter().map(|op| Some(read_field(data, op.ty, op.offset))).collect();
    let replies = match lookup_str(shard.db(db), key, ctx.now_ms)? {
        Some(entry) => Some(as_str(&entry.value)?.with_bytes(read_all)),
        None => None,
    };
    drop(shard);
    count_lookup(ctx, replies.is_some());
    Ok(replies.unwrap_or_else(|| read_all(&[])))
}

/// BITFIELD with writes: the string is created or grown to `needed_len`
/// bytes first (even if every write then fails), as Redis does.
fn bitfield_write(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    ops: &[FieldOp],
    needed_len: usize,
) -> Result<Vec<Option<i64>>, CmdError> {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(key);
    let table = shard.db(db);
    let mut changed = false;
    let mut run_all = |data: &mut [u8]| -> Vec<Option<i64>> {
        ops.iter()
            .map(|op| {
                let before = read_field(data, op.ty, op.offset);
                let reply = apply_field_op(data, op);
                changed |= read_field(data, op.ty, op.offset) != before;
                reply
            })
            .collect()
    };
    let replies = match lookup_str(table, key, ctx.now_ms)? {
        Some(entry) => {
            let data = as_str_mut(&mut entry.value)?.make_raw();
            let grown = data.len() < needed_len;
            grow_zeroed(data, needed_len);
            let replies = run_all(data);
            changed |= grown;
            replies
        }
        None => {
            let mut data = zeroed_string(needed_len);
            let replies = run_all(&mut data);
            table.insert(key, raw_value(data), NO_EXPIRY, ctx.now_ms);
            changed = true;
            replies
        }
    };
    if changed {
        ctx.notify(ev::STRING, "setbit", key);
    } else {
        ctx.client.write_was_noop = true;
    }
    Ok(replies)
}

pub fn bitfield(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    bitfield_generic(ctx, args, false)
}

pub fn bitfield_ro(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    bitfield_generic(ctx, args, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit-at-a-time reference implementations.
    fn bit_at(data: &[u8], i: u64) -> bool {
        data[(i / 8) as usize] & (0x80 >> (i % 8)) != 0
    }

    fn slow_count(data: &[u8], first: u64, last: u64) -> u64 {
        (first..=last).filter(|&i| bit_at(data, i)).count() as u64
    }

    fn slow_find(data: &[u8], bit: bool, first: u64, last: u64) -> Option<u64> {
        (first..=last).find(|&i| bit_at(data, i) == bit)
    }

    fn sample(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..len)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Runs of 0x00 and 0xff exercise the word skipping.
                match (i / 11) % 3 {
                    0 => 0x00,
                    1 => 0xff,
                    _ => x as u8,
                }
            })
            .collect()
    }

    #[test]
    fn ranges_follow_redis_clamping() {
        assert_eq!(resolve_range(0, -1, 5), Some((0, 4)));
        assert_eq!(resolve_range(-3, -1, 5), Some((2, 4)));
        assert_eq!(resolve_range(3, 1, 5), None);
        assert_eq!(resolve_range(0, 100, 5), Some((0, 4)));
        assert_eq!(resolve_range(-100, -100, 5), Some((0, 0)));
        assert_eq!(resolve_range(0, -1, 0), None);
        assert_eq!(bit_range(1, 1, 3, RangeUnit::Byte), Some((8, 15)));
        assert_eq!(bit_range(5, 30, 3, RangeUnit::Bit), Some((5, 23)));
        assert_eq!(bit_range(-1, -1, 3, RangeUnit::Bit), Some((23, 23)));
    }

    #[test]
    fn counting_matches_bit_by_bit() {
        for len in [1, 2, 7, 8, 9, 33, 100] {
            let data = sample(len, len as u64);
            assert_eq!(popcount(&data), slow_count(&data, 0, len as u64 * 8 - 1));
            let bits = len as u64 * 8;
            for first in (0..bits).step_by(3) {
                for last in (first..bits).step_by(5) {
                    assert_eq!(count_ones(&data, first, last), slow_count(&data, first, last), "{first}..{last}");
                }
            }
        }
    }

    #[test]
    fn searching_matches_bit_by_bit() {
        for len in [1, 3, 8, 17, 64, 130] {
            let data = sample(len, 7 + len as u64);
            let bits = len as u64 * 8;
            for first in (0..bits).step_by(7) {
                for last in (first..bits).step_by(11) {
                    for bit in [false, true] {
                        assert_eq!(find_bit(&data, bit, first, last), slow_find(&data, bit, first, last));
                    }
                }
            }
        }
        assert_eq!(find_bit(&[0u8; 40], true, 0, 319), None);
        assert_eq!(find_bit(&[0xffu8; 40], false, 0, 319), None);
        let mut data = [0xffu8; 40];
        data[37] = 0xfe;
        assert_eq!(find_bit(&data, false, 0, 319), Some(37 * 8 + 7));
    }

    #[test]
    fn bitcount_arguments() {
        let args = |a: &[&'static str]| a.iter().map(|s| s.as_bytes()).collect::<Vec<_>>();
        let data = b"foobar";
        assert_eq!(bitcount_of(data, &[]), Ok(26));
        assert_eq!(bitcount_of(data, &args(&["1", "1"])), Ok(6));
        assert_eq!(bitcount_of(data, &args(&["5", "30", "bit"])), Ok(17));
        assert_eq!(bitcount_of(data, &args(&["-1", "-2", "nonsense"])), Ok(0));
        assert_eq!(bitcount_of(data, &args(&["0", "1", "nonsense"])), Err(CmdError::Syntax));
        assert_eq!(bitcount_of(data, &args(&["0"])), Err(CmdError::Syntax));
        assert_eq!(bitcount_of(data, &args(&["a", "1"])), Err(CmdError::NotInteger));
        assert_eq!(bitcount_of(b"", &[]), Ok(0));
    }

    #[test]
    fn bitpos_special_cases() {
        let args = |a: &[&'static str]| a.iter().map(|s| s.as_bytes()).collect::<Vec<_>>();
        let ones = [0xffu8, 0xff, 0xff];
        assert_eq!(bitpos_of(&ones, false, &[]), Ok(24));
        assert_eq!(bitpos_of(&ones, false, &args(&["1"])), Ok(24));
        assert_eq!(bitpos_of(&ones, false, &args(&["0", "-1"])), Ok(-1));
        assert_eq!(bitpos_of(&ones, false, &args(&["0", "-1", "bit"])), Ok(-1));
        assert_eq!(bitpos_of(&[0u8; 3], true, &[]), Ok(-1));
        assert_eq!(bitpos_of(b"", false, &[]), Ok(-1));
        assert_eq!(bitpos_of(&[0x00, 0xff, 0xf0], true, &args(&["2", "-1", "byte"])), Ok(16));
        assert_eq!(bitpos_of(&[0x00, 0xff, 0xf0], false, &args(&["7", "15", "bit"])), Ok(7));
        assert_eq!(bitpos_of(&ones, true, &args(&["0", "1", "bogus"])), Err(CmdError::Syntax));
        assert_eq!(bitpos_of(&ones, true, &args(&["x", "1", "bogus"])), Err(CmdError::NotInteger));
    }

    #[test]
    fn bit_offsets() {
        let max = 512 * 1024 * 1024;
        assert_eq!(parse_bit_offset(b"4294967295", 0, max), Ok(4_294_967_295));
        assert_eq!(parse_bit_offset(b"4294967296", 0, max), Err(BAD_BIT_OFFSET));
        assert_eq!(parse_bit_offset(b"-1", 0, max), Err(BAD_BIT_OFFSET));
        assert_eq!(parse_bit_offset(b"#3", 0, max), Err(BAD_BIT_OFFSET));
        assert_eq!(parse_bit_offset(b"#3", 8, max), Ok(24));
        assert_eq!(parse_bit_offset(b"#9223372036854775807", 8, max), Err(BAD_BIT_OFFSET));
        assert_eq!(parse_bit_value(b"1"), Ok(true));
        assert_eq!(parse_bit_value(b"2"), Err(BAD_BIT_VALUE));
        assert_eq!(parse_bit_value(b"x"), Err(BAD_BIT_VALUE));
    }

    #[test]
    fn single_bits() {
        let mut data = vec![0u8; 2];
        assert!(!write_bit(&mut data, 9, true));
        assert_eq!(data, [0x00, 0x40]);
        assert!(read_bit(&data, 9));
        assert!(write_bit(&mut data, 9, false));
        assert!(!read_bit(&data, 100));
    }

    #[test]
    fn bitop_folds() {
        let fold = |op, sources: &[&[u8]]| {
            let len = sources.iter().map(|s| s.len()).max().unwrap_or(0);
            let mut acc = vec![0u8; len];
            for (i, s) in sources.iter().enumerate() {
                fold_source(op, &mut acc, s, i == 0);
            }
            acc
        };
        assert_eq!(fold(BitOp::And, &[b"\xff\x0f", b"\x3c"]), b"\x3c\x00");
        assert_eq!(fold(BitOp::Or, &[b"\x01", b"\x10\x20"]), b"\x11\x20");
        assert_eq!(fold(BitOp::Xor, &[b"\xff\x0f", b"\x0f", b""]), b"\xf0\x0f");
        assert_eq!(fold(BitOp::Not, &[b"\x0f\xf0"]), b"\xf0\x0f");
        assert_eq!(fold(BitOp::And, &[b"", b"\xff"]), b"\x00");
        assert_eq!(BitOp::parse(b"xOr"), Some(BitOp::Xor));
        assert_eq!(BitOp::parse(b"nand"), None);
    }

    #[test]
    fn field_types() {
        assert_eq!(parse_field_type(b"i64"), Ok(FieldType { signed: true, bits: 64 }));
        assert_eq!(parse_field_type(b"u63"), Ok(FieldType { signed: false, bits: 63 }));
        for bad in [&b"u64"[..], b"i65", b"i0", b"x8", b"", b"I8", b"u", b"i08"] {
            assert_eq!(parse_field_type(bad), Err(BAD_FIELD_TYPE), "{bad:?}");
        }
    }

    #[test]
    fn field_get_and_set() {
        // Redis's example: u5 = 23 at offset 7 gives 00000001 01110000.
        let mut data = vec![0u8; 2];
        set_field(&mut data, 7, 5, 23);
        assert_eq!(data, [0b0000_0001, 0b0111_0000]);
        assert_eq!(get_unsigned(&data, 7, 5), 23);
        assert_eq!(get_signed(&data, 7, 5), -9);
        // A 64-bit field at an unaligned offset spans 9 bytes.
        let mut data = vec![0u8; 9];
        set_field(&mut data, 3, 64, 0x8123_4567_89ab_cdef);
        assert_eq!(get_unsigned(&data, 3, 64), 0x8123_4567_89ab_cdef);
        assert_eq!(get_signed(&data, 3, 64), 0x8123_4567_89ab_cdef_u64 as i64);
        // Bits 0..3 are untouched; bits 3..8 hold the field's top five bits (10000).
        assert_eq!(data[0], 0b0001_0000);
        // Reads past the end see zeros.
        assert_eq!(get_unsigned(&[0xff], 4, 8), 0xf0);
        assert_eq!(get_unsigned(&[], 1000, 63), 0);
        // Neighbouring bits are preserved.
        let mut data = vec![0xffu8; 3];
        set_field(&mut data, 4, 8, 0);
        assert_eq!(data, [0xf0, 0x0f, 0xff]);
    }

    #[test]
    fn signed_overflow() {
        use Overflow::*;
        assert_eq!(signed_outcome(100, 100, 8, Wrap), Some(-56));
        assert_eq!(signed_outcome(100, 100, 8, Sat), Some(127));
        assert_eq!(signed_outcome(100, 100, 8, Fail), None);
        assert_eq!(signed_outcome(-100, -100, 8, Wrap), Some(56));
        assert_eq!(signed_outcome(-100, -100, 8, Sat), Some(-128));
        assert_eq!(signed_outcome(-128, 255, 8, Sat), Some(127));
        assert_eq!(signed_outcome(5, -3, 8, Fail), Some(2));
        assert_eq!(signed_outcome(i64::MAX, 1, 64, Wrap), Some(i64::MIN));
        assert_eq!(signed_outcome(i64::MAX, 1, 64, Sat), Some(i64::MAX));
        assert_eq!(signed_outcome(i64::MIN, -1, 64, Sat), Some(i64::MIN));
        assert_eq!(signed_outcome(i64::MIN, -1, 64, Fail), None);
        assert_eq!(signed_outcome(-1, i64::MIN, 64, Fail), None);
        // SET with a value outside the field (incr 0).
        assert_eq!(signed_outcome(200, 0, 8, Wrap), Some(-56));
        assert_eq!(signed_outcome(-200, 0, 8, Sat), Some(-128));
        // Redis's quirk: values near i64::MIN wrap its intermediate and saturate high.
        assert_eq!(signed_outcome(i64::MIN, 0, 8, Sat), Some(127));
        assert_eq!(signed_outcome(1, 0, 1, Sat), Some(0));
        assert_eq!(signed_outcome(-1, 0, 1, Fail), Some(-1));
    }

    #[test]
    fn unsigned_overflow() {
        use Overflow::*;
        assert_eq!(unsigned_outcome(250, 10, 8, Wrap), Some(4));
        assert_eq!(unsigned_outcome(250, 10, 8, Sat), Some(255));
        assert_eq!(unsigned_outcome(250, 10, 8, Fail), None);
        assert_eq!(unsigned_outcome(5, -10, 8, Wrap), Some(251));
        assert_eq!(unsigned_outcome(5, -10, 8, Sat), Some(0));
        assert_eq!(unsigned_outcome(5, -5, 8, Fail), Some(0));
        // SET -1 on u8: reinterpreted as u64::MAX, above the maximum.
        assert_eq!(unsigned_outcome(-1i64 as u64, 0, 8, Wrap), Some(255));
        assert_eq!(unsigned_outcome(-1i64 as u64, 0, 8, Sat), Some(255));
        assert_eq!(unsigned_outcome(1 << 62, 1 << 62, 63, Wrap), Some(0));
        assert_eq!(unsigned_outcome(0, i64::MIN, 63, Sat), Some(0));
    }

    #[test]
    fn field_ops_reply_like_redis() {
        let op = |action, signed, bits, offset, overflow| FieldOp {
            action,
            ty: FieldType { signed, bits },
            offset,
            overflow,
        };
        let mut data = vec![0u8; 2];
        assert_eq!(apply_field_op(&mut data, &op(FieldAction::Set(-1), true, 8, 0, Overflow::Wrap)), Some(0));
        assert_eq!(apply_field_op(&mut data, &op(FieldAction::Get, false, 8, 0, Overflow::Wrap)), Some(255));
        assert_eq!(apply_field_op(&mut data, &op(FieldAction::IncrBy(1), true, 8, 0, Overflow::Wrap)), Some(0));
        assert_eq!(apply_field_op(&mut data, &op(FieldAction::IncrBy(300), false, 8, 8, Overflow::Fail)), None);
        assert_eq!(data, [0, 0]);
        assert_eq!(apply_field_op(&mut data, &op(FieldAction::IncrBy(300), false, 8, 8, Overflow::Sat)), Some(255));
        assert_eq!(apply_field_op(&mut data, &op(FieldAction::Set(7), false, 4, 8, Overflow::Wrap)), Some(15));
        assert_eq!(data, [0, 0x7f]);
    }

    #[test]
    fn bitfield_parsing() {
        let args = |a: &[&'static str]| a.iter().map(|s| s.as_bytes()).collect::<Vec<_>>();
        let max = 512 * 1024 * 1024;
        let ops = parse_field_ops(&args(&["get", "u8", "#2", "overflow", "sat", "incrby", "i5", "100", "1"]), max);
        let ops = ops.expect("valid");
        assert_eq!(ops.len(), 2);
        assert_eq!(ops[0].offset, 16);
        assert_eq!(ops[1].overflow, Overflow::Sat);
        assert_eq!(ops[1].action, FieldAction::IncrBy(1));
        assert_eq!(ops[1].last_bit(), 104);
        assert_eq!(parse_field_ops(&args(&["get", "u8"]), max), Err(CmdError::Syntax));
        assert_eq!(parse_field_ops(&args(&["overflow", "bogus"]), max), Err(BAD_OVERFLOW_TYPE));
        assert_eq!(parse_field_ops(&args(&["set", "u64", "0", "1"]), max), Err(BAD_FIELD_TYPE));
        assert_eq!(parse_field_ops(&args(&["set", "u8", "-1", "1"]), max), Err(BAD_BIT_OFFSET));
        assert_eq!(parse_field_ops(&args(&["set", "u8", "0", "x"]), max), Err(CmdError::NotInteger));
        assert_eq!(parse_field_ops(&args(&["overflow"]), max), Err(CmdError::Syntax));
    }
}
