//! GEO commands, with Redis 7.0.15's replies and errors. A geo index is a
//! sorted set whose scores are 52-bit interleaved geohashes, so every sorted
//! set command works on it and GEOADD is ZADD with positions turned into
//! scores.
//!
//! # Layout
//!
//! - `hash`: geohash encoding, decoding, neighbour cells and the score of a
//!   position (`geohash.c`), and the standard geohash strings of GEOHASH.
//! - `area`: search shapes, their bounding boxes, the step and the nine
//!   cells that cover them, and the haversine distances (`geohash_helper.c`).
//! - `points`: GEOADD, GEOPOS, GEODIST, GEOHASH.
//! - `search`: GEOSEARCH, GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and
//!   their `_RO` forms (`georadiusGeneric`).
//! - `sort`: ordering results by distance, Redis's partial quicksort included.
//! - `format`: distances (`%.4f`) and coordinates (`%.17Lf`, trimmed) as Redis
//!   writes them.

mod area;
mod format;
mod hash;
mod points;
mod search;
mod sort;

use cairn_protocol::ReplyWriter;

use super::table::{c, CommandSpec, K1, K12, MOVABLE, R, W};
use cairn_engine::types::zset::parse_score;

use super::{is, CmdError};

/// This family's commands (joined into the command table). GEORADIUS and
/// GEORADIUSBYMEMBER write only with STORE/STOREDIST, whose key is not at a
/// fixed position: like Redis, they are write commands with movable keys.
pub static COMMANDS: &[CommandSpec] = &[
    c("geoadd", -5, W, K1, points::geoadd),
    c("geopos", -2, R, K1, points::geopos),
    c("geodist", -4, R, K1, points::geodist),
    c("geohash", -2, R, K1, points::geohash),
    c("geosearch", -7, R, K1, search::geosearch),
    c("geosearchstore", -8, W, K12, search::geosearchstore),
    c("georadius", -6, W | MOVABLE, K1, search::georadius),
    c("georadius_ro", -6, R, K1, search::georadius_ro),
    c("georadiusbymember", -5, W | MOVABLE, K1, search::georadiusbymember),
    c("georadiusbymember_ro", -5, R, K1, search::georadiusbymember_ro),
];

/// A double argument as Redis reads one (`getDoubleFromObject`: hexadecimal
/// accepted, overflow refused); `message` replaces "value is not a valid float".
fn double_arg(arg: &[u8], message: Option<&'static str>) -> Result<f64, CmdError> {
    parse_score(arg).ok_or(message.map_or(CmdError::NotFloat, CmdError::Static))
}

/// Meters per unit (`extractUnitOrReply`).
fn unit_to_meters(unit: &[u8]) -> Result<f64, CmdError> {
    if is(unit, "m") {
        Ok(1.0)
    } else if is(unit, "km") {
        Ok(1000.0)
    } else if is(unit, "ft") {
        Ok(0.3048)
    } else if is(unit, "mi") {
        Ok(1609.34)
    } else {
        Err(CmdError::Static("ERR unsupported unit provided. please use M, KM, FT, MI"))
    }
}

/// A longitude and a latitude inside Redis's limits (`extractLongLatOrReply`).
fn long_lat(longitude: &[u8], latitude: &[u8]) -> Result<[f64; 2], CmdError> {
    let xy = [double_arg(longitude, None)?, double_arg(latitude, None)?];
    let valid = (hash::LONG_MIN..=hash::LONG_MAX).contains(&xy[0]) && (hash::LAT_MIN..=hash::LAT_MAX).contains(&xy[1]);
    if !valid {
        return Err(CmdError::Message(format!("ERR invalid longitude,latitude pair {:.6},{:.6}", xy[0], xy[1])));
    }
    Ok(xy)
}

/// A coordinate: a bulk string in RESP2, a RESP3 double, in Redis's
/// "human" format either way (`addReplyHumanLongDouble`).
fn reply_coordinate(out: &mut ReplyWriter<'_>, value: f64) {
    let text = format::coordinate(value);
    if out.is_resp3() {
        let buffer = out.buffer();
        buffer.push(b',');
        buffer.extend_from_slice(text.as_bytes());
        buffer.extend_from_slice(b"\r\n");
    } else {
        out.bulk(text.as_bytes());
    }
}

/// A position as a `[longitude, latitude]` pair.
fn reply_position(out: &mut ReplyWriter<'_>, [longitude, latitude]: [f64; 2]) {
    out.array(2);
    reply_coordinate(out, longitude);
    reply_coordinate(out, latitude);
}

/// A distance, as a bulk string with four decimals (`addReplyDoubleDistance`).
fn reply_distance(out: &mut ReplyWriter<'_>, meters_or_units: f64) {
    out.bulk(format::distance(meters_or_units).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_positions() {
        assert_eq!(unit_to_meters(b"KM"), Ok(1000.0));
        assert_eq!(unit_to_meters(b"Mi"), Ok(1609.34));
        assert!(unit_to_meters(b"yd").is_err());
        assert_eq!(long_lat(b"-180", b"85.05112878"), Ok([-180.0, 85.05112878]));
        assert_eq!(
            long_lat(b"1", b"100"),
            Err(CmdError::Message("ERR invalid longitude,latitude pair 1.000000,100.000000".into()))
        );
        assert_eq!(long_lat(b"x", b"1"), Err(CmdError::NotFloat));
        assert_eq!(long_lat(b"1e400", b"1"), Err(CmdError::NotFloat));
        assert_eq!(long_lat(b"0x10", b"-0x1p3"), Ok([16.0, -8.0]));
    }
}
