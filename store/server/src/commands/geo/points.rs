//! GEOADD (ZADD of positions turned into scores), and the per-member reads
//! GEOPOS, GEODIST and GEOHASH.

use cairn_protocol::ReplyWriter;

use super::super::zsets::{zadd, zset_mut};
use super::super::{is, CmdError, CmdResult, Ctx};
use super::{hash, long_lat, reply_distance, reply_position, unit_to_meters};

/// GEOADD's options before the first longitude: NX, XX (with whether both
/// were given) and the index of the first longitude. CH is left to ZADD.
fn parse_add_options(args: &[&[u8]]) -> (bool, usize) {
    let (mut nx, mut xx) = (false, false);
    let mut first = 2;
    while first < args.len() {
        let option = args[first];
        if is(option, "nx") {
            nx = true;
        } else if is(option, "xx") {
            xx = true;
        } else if !is(option, "ch") {
            break;
        }
        first += 1;
    }
    (nx && xx, first)
}

/// GEOADD key [NX|XX] [CH] longitude latitude member [...]: runs ZADD with
/// the options as given and each position's score (`geoaddCommand`).
pub fn geoadd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (conflicting, first) = parse_add_options(args);
    if (args.len() - first) % 3 != 0 || conflicting {
        return Err(CmdError::Syntax);
    }
    let triples: Vec<&[&[u8]]> = args[first..].chunks_exact(3).collect();
    let mut scores = Vec::with_capacity(triples.len());
    for triple in &triples {
        let [longitude, latitude] = long_lat(triple[0], triple[1])?;
        let score = hash::score_of(longitude, latitude).ok_or(CmdError::Syntax)?;
        scores.push(score.to_string());
    }
    let mut zadd_args: Vec<&[u8]> = Vec::with_capacity(first + 2 * triples.len());
    zadd_args.push(b"zadd");
    zadd_args.extend_from_slice(&args[1..first]);
    for (score, triple) in scores.iter().zip(&triples) {
        zadd_args.push(score.as_bytes());
        zadd_args.push(triple[2]);
    }
    zadd(ctx, &zadd_args)
}

/// GEOPOS key member [...]: each member's position, or a null array.
pub fn geopos(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    per_member(ctx, args, |out, score| match score.and_then(hash::decode_score) {
        Some(position) => reply_position(out, position),
        None => out.null_array(),
    })
}

/// GEODIST key member1 member2 [M|KM|FT|MI]: the distance between two
/// members, or null when either is missing.
pub fn geodist(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let to_meters = match args.len() {
        5 => unit_to_meters(args[4])?,
        n if n > 5 => return Err(CmdError::Syntax),
        _ => 1.0,
    };
    let (key, db, now) = (args[1], ctx.db(), ctx.now_ms);
    let mut shard = ctx.server.keyspace.lock_key(key);
    let Some(zset) = zset_mut(shard.db(db), key, now)? else {
        drop(shard);
        ctx.out.null_bulk();
        return Ok(());
    };
    let position = |member: &[u8]| zset.score(member).and_then(hash::decode_score);
    match (position(args[2]), position(args[3])) {
        (Some([lon1, lat1]), Some([lon2, lat2])) => {
            reply_distance(&mut ctx.out, super::area::distance(lon1, lat1, lon2, lat2) / to_meters);
        }
        _ => ctx.out.null_bulk(),
    }
    Ok(())
}

/// GEOHASH key member [...]: each member's 11-character standard geohash,
/// or a null bulk string.
pub fn geohash(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    per_member(ctx, args, |out, score| match score.and_then(hash::standard_geohash) {
        Some(text) => out.bulk(&text),
        None => out.null_bulk(),
    })
}

/// `KEY member [...]` read per member: an array with `reply`'s answer for
/// each member's score (`None`: no such member or key).
fn per_member(ctx: &mut Ctx<'_>, args: &[&[u8]], reply: impl Fn(&mut ReplyWriter<'_>, Option<f64>)) -> CmdResult {
    let (key, db, now) = (args[1], ctx.db(), ctx.now_ms);
    let mut shard = ctx.server.keyspace.lock_key(key);
    let zset = zset_mut(shard.db(db), key, now)?;
    let members = &args[2..];
    ctx.out.array(members.len());
    for member in members {
        reply(&mut ctx.out, zset.as_ref().and_then(|z| z.score(member)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_options() {
        assert_eq!(parse_add_options(&[b"geoadd", b"k", b"CH", b"nx", b"1", b"2", b"m"]), (false, 4));
        assert_eq!(parse_add_options(&[b"geoadd", b"k", b"xx", b"NX", b"1", b"2", b"m"]), (true, 4));
        assert_eq!(parse_add_options(&[b"geoadd", b"k", b"1", b"2", b"m"]), (false, 2));
    }
}
