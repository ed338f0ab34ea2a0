//! GEOSEARCH, GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and the `_RO`
//! forms: one parser and one search (`georadiusGeneric`).
//!
//! A search finds the cells that cover its shape ([`area::cells_covering`]),
//! reads each cell's score range from the sorted set, keeps the points inside
//! the shape, orders them by distance when asked (or when COUNT is given
//! without ANY), and replies with them or stores them as a sorted set whose
//! scores are the hashes (STORE) or the distances (STOREDIST).

use cairn_engine::types::zset::ScoreRange;
use cairn_engine::types::ZSet;

use super::super::zsets::{store_result, zset_mut};
use super::super::{int_arg, is, CmdError, CmdResult, Ctx};
use super::area::{self, Extent, Shape};
use super::hash::{self, HashBits};
use super::{double_arg, long_lat, reply_distance, reply_position, sort, unit_to_meters};

/// Which command runs (Redis's `RADIUS_COORDS`, `RADIUS_MEMBER`, `GEOSEARCH`
/// and `GEOSEARCHSTORE` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS[_RO] key longitude latitude radius unit ...
    Radius,
    /// GEORADIUSBYMEMBER[_RO] key member radius unit ...
    RadiusByMember,
    /// GEOSEARCH key ...
    Search,
    /// GEOSEARCHSTORE destination key ...
    SearchStore,
}

impl Form {
    fn is_search(self) -> bool {
        matches!(self, Form::Search | Form::SearchStore)
    }

    /// Where the source key is.
    fn source_index(self) -> usize {
        if self == Form::SearchStore {
            2
        } else {
            1
        }
    }

    /// Where the options start.
    fn options_index(self) -> usize {
        match self {
            Form::Radius => 6,
            Form::RadiusByMember => 5,
            Form::Search => 2,
            Form::SearchStore => 3,
        }
    }

    /// The keyspace event of a stored result.
    fn store_event(self) -> &'static str {
        if self.is_search() {
            "geosearchstore"
        } else {
            "georadiusstore"
        }
    }
}

/// The order of the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    Unsorted,
    Ascending,
    Descending,
}

/// A parsed search.
#[derive(Debug)]
struct Request<'a> {
    shape: Shape,
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    order: Order,
    /// Stop scanning once `count` points are found.
    any: bool,
    /// At most this many results; 0: all.
    count: usize,
    store: Option<&'a [u8]>,
    /// Store distances rather than hashes.
    store_dist: bool,
}

/// One point found.
#[derive(Debug)]
struct Point {
    longitude: f64,
    latitude: f64,
    /// Meters from the centre.
    dist: f64,
    score: f64,
    member: Box<[u8]>,
}

pub fn georadius(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run(ctx, args, Form::Radius, false)
}

pub fn georadius_ro(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run(ctx, args, Form::Radius, true)
}

pub fn georadiusbymember(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run(ctx, args, Form::RadiusByMember, false)
}

pub fn georadiusbymember_ro(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run(ctx, args, Form::RadiusByMember, true)
}

pub fn geosearch(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run(ctx, args, Form::Search, true)
}

pub fn geosearchstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run(ctx, args, Form::SearchStore, false)
}

/// A radius and its unit (`extractDistanceOrReply`): the radius and the meters per unit.
fn radius_arg(radius: &[u8], unit: &[u8]) -> Result<(f64, f64), CmdError> {
    let radius = double_arg(radius, Some("ERR need numeric radius"))?;
    if radius < 0.0 {
        return Err(CmdError::Static("ERR radius cannot be negative"));
    }
    Ok((radius, unit_to_meters(unit)?))
}

/// A box's width, height and unit (`extractBoxOrReply`).
fn box_arg(width: &[u8], height: &[u8], unit: &[u8]) -> Result<(Extent, f64), CmdError> {
    let width = double_arg(width, Some("ERR need numeric width"))?;
    let height = double_arg(height, Some("ERR need numeric height"))?;
    if height < 0.0 || width < 0.0 {
        return Err(CmdError::Static("ERR height or width cannot be negative"));
    }
    Ok((Extent::Box { width, height }, unit_to_meters(unit)?))
}

/// The position of `member` (`longLatFromMember`).
fn member_position(zset: &ZSet, member: &[u8]) -> Result<[f64; 2], CmdError> {
    zset.score(member)
        .and_then(hash::decode_score)
        .ok_or(CmdError::Static("ERR could not decode requested zset member"))
}

/// Every argument that may be a STORE/STOREDIST key, so that its shard can
/// be locked with the source's before parsing decides.
fn store_key_candidates<'a>(args: &[&'a [u8]], form: Form, read_only: bool) -> Vec<&'a [u8]> {
    match form {
        Form::SearchStore => vec![args[1]],
        Form::Radius | Form::RadiusByMember if !read_only => args
            .get(form.options_index()..)
            .unwrap_or_default()
            .windows(2)
            .filter(|w| is(w[0], "store") || is(w[0], "storedist"))
            .map(|w| w[1])
            .collect(),
        _ => Vec::new(),
    }
}

/// The request before its options: the centre and radius of the GEORADIUS
/// forms (the member's position only when the set exists), the destination
/// of GEOSEARCHSTORE.
fn parse_fixed<'a>(args: &[&'a [u8]], form: Form, zset: Option<&ZSet>) -> Result<Request<'a>, CmdError> {
    let mut request = Request {
        shape: Shape { extent: Extent::Radius(0.0), xy: [0.0, 0.0], conversion: 0.0 },
        with_dist: false,
        with_hash: false,
        with_coord: false,
        order: Order::Unsorted,
        any: false,
        count: 0,
        store: None,
        store_dist: false,
    };
    match form {
        Form::Radius => {
            request.shape.xy = long_lat(args[2], args[3])?;
            let (radius, conversion) = radius_arg(args[4], args[5])?;
            request.shape.extent = Extent::Radius(radius);
            request.shape.conversion = conversion;
        }
        Form::RadiusByMember => {
            if let Some(zset) = zset {
                request.shape.xy = member_position(zset, args[2])?;
                let (radius, conversion) = radius_arg(args[3], args[4])?;
                request.shape.extent = Extent::Radius(radius);
                request.shape.conversion = conversion;
            }
        }
        Form::Search => {}
        Form::SearchStore => request.store = Some(args[1]),
    }
    Ok(request)
}

/// Parses the whole command in Redis's order, so that the first error is
/// Redis's: FROMMEMBER is looked up as it is met (unless the set is missing).
fn parse<'a>(args: &[&'a [u8]], form: Form, read_only: bool, zset: Option<&ZSet>) -> Result<Request<'a>, CmdError> {
    let mut request = parse_fixed(args, form, zset)?;
    let search = form.is_search();
    let store_allowed = !read_only && !search;
    let (mut from_member, mut from_lonlat, mut by_radius, mut by_box) = (false, false, false, false);
    let mut i = form.options_index();
    while i < args.len() {
        let arg = args[i];
        let following = args.len() - i - 1;
        if is(arg, "withdist") {
            request.with_dist = true;
        } else if is(arg, "withhash") {
            request.with_hash = true;
        } else if is(arg, "withcoord") {
            request.with_coord = true;
        } else if is(arg, "any") {
            request.any = true;
        } else if is(arg, "asc") {
            request.order = Order::Ascending;
        } else if is(arg, "desc") {
            request.order = Order::Descending;
        } else if is(arg, "count") && following >= 1 {
            let count = int_arg(args[i + 1])?;
            if count <= 0 {
                return Err(CmdError::Static("ERR COUNT must be > 0"));
            }
            request.count = usize::try_from(count).unwrap_or(usize::MAX);
            i += 1;
        } else if (is(arg, "store") || is(arg, "storedist")) && following >= 1 && store_allowed {
            request.store = Some(args[i + 1]);
            request.store_dist = is(arg, "storedist");
            i += 1;
        } else if is(arg, "storedist") && form == Form::SearchStore {
            request.store_dist = true;
        } else if is(arg, "frommember") && following >= 1 && search && !from_lonlat {
            if let Some(zset) = zset {
                request.shape.xy = member_position(zset, args[i + 1])?;
            }
            from_member = true;
            i += 1;
        } else if is(arg, "fromlonlat") && following >= 2 && search && !from_member {
            request.shape.xy = long_lat(args[i + 1], args[i + 2])?;
            from_lonlat = true;
            i += 2;
        } else if is(arg, "byradius") && following >= 2 && search && !by_box {
            let (radius, conversion) = radius_arg(args[i + 1], args[i + 2])?;
            request.shape.extent = Extent::Radius(radius);
            request.shape.conversion = conversion;
            by_radius = true;
            i += 2;
        } else if is(arg, "bybox") && following >= 3 && search && !by_radius {
            (request.shape.extent, request.shape.conversion) = box_arg(args[i + 1], args[i + 2], args[i + 3])?;
            by_box = true;
            i += 3;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    check_combinations(&request, args[0], form, from_member || from_lonlat, by_radius || by_box)?;
    Ok(request)
}

/// The errors of options that do not go together.
fn check_combinations(request: &Request<'_>, name: &[u8], form: Form, has_from: bool, has_by: bool) -> CmdResult {
    if request.store.is_some() && (request.with_dist || request.with_hash || request.with_coord) {
        let what = if form == Form::SearchStore { "GEOSEARCHSTORE" } else { "STORE option in GEORADIUS" };
        return Err(CmdError::Message(format!(
            "ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        )));
    }
    let name = String::from_utf8_lossy(name);
    if form.is_search() && !has_from {
        return Err(CmdError::Message(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )));
    }
    if form.is_search() && !has_by {
        return Err(CmdError::Message(format!("ERR exactly one of BYRADIUS and BYBOX can be specified for {name}")));
    }
    if request.any && request.count == 0 {
        return Err(CmdError::Static("ERR the ANY argument requires COUNT argument"));
    }
    Ok(())
}

/// Whether `limit` points (0: no limit) have been found.
fn reached(points: &[Point], limit: usize) -> bool {
    !points.is_empty() && limit != 0 && points.len() >= limit
}

/// Adds the points of `cell` inside the shape (`membersOfGeoHashBox` and
/// `geoGetPointsInRange`): the scores from the cell's first 52-bit score,
/// included, to the next cell's, excluded.
fn add_points_in_cell(zset: &ZSet, cell: HashBits, shape: &Shape, points: &mut Vec<Point>, limit: usize) {
    let min = hash::align_52_bits(cell) as f64;
    let max = hash::align_52_bits(HashBits { bits: cell.bits + 1, step: cell.step }) as f64;
    let span = zset.score_span(&ScoreRange { min, max, min_exclusive: false, max_exclusive: true });
    if span.is_empty() {
        return;
    }
    for (member, score) in zset.iter_from(span.start, false).take(span.len()) {
        let Some([longitude, latitude]) = hash::decode_score(score) else { continue };
        if let Some(dist) = area::distance_if_within(shape, longitude, latitude) {
            points.push(Point { longitude, latitude, dist, score, member: member.into() });
        }
        if reached(points, limit) {
            break;
        }
    }
}

/// The points inside the shape, cell by cell (`membersOfAllNeighbors`);
/// with a `limit` (ANY), the scan stops once that many are found.
fn find_points(zset: &ZSet, shape: &Shape, limit: usize) -> Vec<Point> {
    let cells = area::cells_covering(shape).in_scan_order();
    let mut points = Vec::new();
    // Index of the last cell scanned; 0 (the centre) never counts, as in Redis.
    let mut last_scanned = 0;
    for (i, &cell) in cells.iter().enumerate() {
        if cell.is_zero() {
            continue;
        }
        // Around the poles and with huge radii, adjacent neighbours can be one cell.
        if last_scanned != 0 && cell == cells[last_scanned] {
            continue;
        }
        if reached(&points, limit) {
            break;
        }
        add_points_in_cell(zset, cell, shape, &mut points, limit);
        last_scanned = i;
    }
    points
}

/// `sort_gp_asc`: nearer first.
fn nearer_first(a: &Point, b: &Point) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    if a.dist > b.dist {
        Ordering::Greater
    } else if a.dist == b.dist {
        Ordering::Equal
    } else {
        Ordering::Less
    }
}

/// Orders the points as asked, as far as the first `returned` of them.
fn order_points(points: &mut [Point], order: Order, returned: usize) {
    match order {
        Order::Unsorted => {}
        Order::Ascending => sort::sort_prefix(points, returned, nearer_first),
        Order::Descending => sort::sort_prefix(points, returned, |a, b| nearer_first(a, b).reverse()),
    }
}

fn run(ctx: &mut Ctx<'_>, args: &[&[u8]], form: Form, read_only: bool) -> CmdResult {
    let (src, db, now) = (args[form.source_index()], ctx.db(), ctx.now_ms);
    let candidates = store_key_candidates(args, form, read_only);
    let mut guard = ctx.server.keyspace.lock_keys(std::iter::once(src).chain(candidates.iter().copied()));
    let zset = zset_mut(guard.table(db, src), src, now)?.map(|z| &*z);
    let mut request = parse(args, form, read_only, zset)?;
    let points = zset.map(|z| search(z, &mut request)).unwrap_or_default();
    match request.store {
        Some(dst) => {
            let result = stored_set(&request, points);
            let stored = store_result(guard.table(db, dst), dst, result, now, form.store_event());
            drop(guard);
            if stored > 0 {
                ctx.server.blocking.signal(db, dst);
            }
            if !form.is_search() {
                // The destination is not at a declared key position: touch its WATCHers here.
                crate::modified::key(ctx.server, db, dst);
            }
            ctx.out.int(stored as i64);
        }
        None => {
            drop(guard);
            if !read_only && !form.is_search() {
                // GEORADIUS without STORE wrote nothing: nothing to log.
                ctx.client.write_was_noop = true;
            }
            reply_points(ctx, &request, &points);
        }
    }
    Ok(())
}

/// Runs a parsed search on an existing set: the points found, ordered and
/// cut to COUNT.
fn search(zset: &ZSet, request: &mut Request<'_>) -> Vec<Point> {
    // COUNT without ANY means "the nearest COUNT".
    if request.count != 0 && request.order == Order::Unsorted && !request.any {
        request.order = Order::Ascending;
    }
    let limit = if request.any { request.count } else { 0 };
    let mut points = find_points(zset, &request.shape, limit);
    let returned = if request.count == 0 { points.len() } else { points.len().min(request.count) };
    order_points(&mut points, request.order, returned);
    points.truncate(returned);
    points
}

/// The points as an array: bare members, or `[member, dist?, hash?, [lon, lat]?]`.
fn reply_points(ctx: &mut Ctx<'_>, request: &Request<'_>, points: &[Point]) {
    let options = usize::from(request.with_dist) + usize::from(request.with_hash) + usize::from(request.with_coord);
    let out = &mut ctx.out;
    out.array(points.len());
    for point in points {
        if options > 0 {
            out.array(options + 1);
        }
        out.bulk(&point.member);
        if request.with_dist {
            reply_distance(out, point.dist / request.shape.conversion);
        }
        if request.with_hash {
            out.int(point.score as i64);
        }
        if request.with_coord {
            reply_position(out, [point.longitude, point.latitude]);
        }
    }
}

/// The sorted set STORE writes: the points scored by hash, or with
/// STOREDIST by distance in the request's unit.
fn stored_set(request: &Request<'_>, points: Vec<Point>) -> ZSet {
    let conversion = request.shape.conversion;
    let entries = points
        .into_iter()
        .map(|p| {
            let score = if request.store_dist { p.dist / conversion } else { p.score };
            (p.member, score)
        })
        .collect();
    ZSet::from_entries(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_engine::types::zset::AddFlags;

    fn set(points: &[(f64, f64, &str)]) -> ZSet {
        let mut z = ZSet::new();
        for &(lon, lat, name) in points {
            let score = hash::score_of(lon, lat).expect("valid") as f64;
            z.add(score, name.as_bytes(), AddFlags::default());
        }
        z
    }

    fn names(points: &[Point]) -> Vec<String> {
        points.iter().map(|p| String::from_utf8_lossy(&p.member).into_owned()).collect()
    }

    fn sicily() -> ZSet {
        set(&[(13.361389, 38.115556, "Palermo"), (15.087269, 37.502669, "Catania")])
    }

    #[test]
    fn radius_search() {
        let z = sicily();
        let shape = Shape { extent: Extent::Radius(200.0), xy: [15.0, 37.0], conversion: 1000.0 };
        let mut points = find_points(&z, &shape, 0);
        order_points(&mut points, Order::Ascending, 2);
        assert_eq!(names(&points), ["Catania", "Palermo"]);
        let shape = Shape { extent: Extent::Radius(100.0), ..shape };
        assert_eq!(names(&find_points(&z, &shape, 0)), ["Catania"]);
    }

    #[test]
    fn box_search() {
        let z = sicily();
        let shape = Shape { extent: Extent::Box { width: 400.0, height: 400.0 }, xy: [15.0, 37.0], conversion: 1000.0 };
        assert_eq!(find_points(&z, &shape, 0).len(), 2);
        let narrow = Shape { extent: Extent::Box { width: 400.0, height: 2.0 }, ..shape };
        assert!(find_points(&z, &narrow, 0).is_empty());
    }

    fn parse_words(words: &[&str], form: Form, zset: Option<&ZSet>) -> Result<Request<'static>, CmdError> {
        let args: Vec<&'static [u8]> =
            words.iter().map(|w| &*Box::leak(w.as_bytes().to_vec().into_boxed_slice())).collect();
        parse(&args, form, false, zset)
    }

    #[test]
    fn parse_errors_in_redis_order() {
        let z = sicily();
        let e = parse_words(&["GEOSEARCH", "k", "frommember", "x", "byradius", "-1", "km"], Form::Search, Some(&z));
        assert_eq!(e.err(), Some(CmdError::Static("ERR could not decode requested zset member")));
        let e = parse_words(&["GEOSEARCH", "k", "frommember", "x", "byradius", "-1", "km"], Form::Search, None);
        assert_eq!(e.err(), Some(CmdError::Static("ERR radius cannot be negative")));
        let e = parse_words(&["geoSearch", "k", "bybox", "1", "1", "km"], Form::Search, None);
        assert_eq!(
            e.err(),
            Some(CmdError::Message(
                "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for geoSearch".into()
            ))
        );
        let e = parse_words(&["GEORADIUS", "k", "1", "2", "3", "km", "count", "0"], Form::Radius, None);
        assert_eq!(e.err(), Some(CmdError::Static("ERR COUNT must be > 0")));
        let e = parse_words(&["GEORADIUS", "k", "1", "2", "3", "km", "store", "d", "withdist"], Form::Radius, None);
        assert!(matches!(e.err(), Some(CmdError::Message(m)) if m.starts_with("ERR STORE option in GEORADIUS")));
        let e = parse_words(
            &["GEOSEARCH", "k", "fromlonlat", "1", "2", "byradius", "1", "km", "storedist"],
            Form::Search,
            None,
        );
        assert_eq!(e.err(), Some(CmdError::Syntax));
        // Without the set, GEORADIUSBYMEMBER does not read its radius.
        assert!(parse_words(&["GEORADIUSBYMEMBER", "k", "m", "-1", "x"], Form::RadiusByMember, None).is_ok());
    }

    #[test]
    fn store_keys_are_locked_up_front() {
        let args: [&[u8]; 9] = [b"georadius", b"k", b"1", b"2", b"3", b"km", b"STORE", b"d", b"storedist"];
        assert_eq!(store_key_candidates(&args, Form::Radius, false), [&b"d"[..]]);
        assert!(store_key_candidates(&args, Form::Radius, true).is_empty());
    }
}
