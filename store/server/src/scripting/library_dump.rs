//! FUNCTION DUMP's payload: Cairn's own format, not Redis's RDB encoding.
//!
//! `"CAIRNFN" version:u8 count:u32 { len:u32 code }* crc32c:u32` (integers
//! little-endian): each library's code as FUNCTION LOAD received it, and a
//! CRC-32C over everything before it. FUNCTION RESTORE loads each code again.

/// The format's version byte.
const VERSION: u8 = 1;
const MAGIC: &[u8] = b"CAIRNFN";

/// Redis's reply to a payload it cannot verify.
pub const BAD_PAYLOAD: &str = "ERR DUMP payload version or checksum are wrong";

/// The payload holding `codes`.
pub fn encode<'a>(codes: impl ExactSizeIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + 9);
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    out.extend_from_slice(&(codes.len() as u32).to_le_bytes());
    for code in codes {
        out.extend_from_slice(&(code.len() as u32).to_le_bytes());
        out.extend_from_slice(code);
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The library codes of a payload; Err: Redis's error text.
pub fn decode(payload: &[u8]) -> Result<Vec<Vec<u8>>, &'static str> {
    let body = verified_body(payload).ok_or(BAD_PAYLOAD)?;
    parse(body).ok_or("ERR failed loading the given functions payload")
}

fn verified_body(payload: &[u8]) -> Option<&[u8]> {
    let body_len = payload.len().checked_sub(4)?;
    let (body, crc) = payload.split_at(body_len);
    if !body.starts_with(MAGIC) || body.get(MAGIC.len()) != Some(&VERSION) {
        return None;
    }
    (crc32c::crc32c(body) == u32::from_le_bytes(crc.try_into().ok()?)).then_some(body)
}

fn parse(body: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut pos = MAGIC.len() + 1;
    let count = take_u32(body, &mut pos)?;
    let mut codes = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let len = take_u32(body, &mut pos)?;
        let code = body.get(pos..pos.checked_add(len)?)?;
        pos += len;
        codes.push(code.to_vec());
    }
    (pos == body.len()).then_some(codes)
}

fn take_u32(data: &[u8], pos: &mut usize) -> Option<usize> {
    let bytes = data.get(*pos..*pos + 4)?;
    *pos += 4;
    Some(u32::from_le_bytes(bytes.try_into().ok()?) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip_and_damage_is_detected() {
        let codes: Vec<&[u8]> = vec![b"#!lua name=a\nx", b"#!lua name=b\ny"];
        let payload = encode(codes.iter().copied());
        assert_eq!(decode(&payload), Ok(codes.iter().map(|c| c.to_vec()).collect()));
        let mut damaged = payload.clone();
        damaged[12] ^= 1;
        assert_eq!(decode(&damaged), Err(BAD_PAYLOAD));
        assert_eq!(decode(b"bad_payload"), Err(BAD_PAYLOAD));
        assert_eq!(decode(&encode(std::iter::empty())), Ok(Vec::new()));
    }
}
