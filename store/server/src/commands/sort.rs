//! SORT and SORT_RO: sort the elements of a list, set or sorted set
//! (numerically or with ALPHA, by the elements or by external keys' values
//! with BY), page them with LIMIT, project them with GET, and optionally
//! STORE the result as a list — Redis 7.0's `sort.c` semantics.

use std::cmp::Ordering;

use cairn_engine::entry::NO_EXPIRY;
use cairn_engine::events as ev;
use cairn_engine::types::List;
use cairn_engine::Value;

use super::table::{c, CommandSpec, K1, MOVABLE, R, W};
use super::{int_arg, is, CmdError, CmdResult, Ctx};

/// SORT (it writes with STORE, and its BY/GET keys are movable) and SORT_RO.
pub static COMMANDS: &[CommandSpec] = &[c("sort", -2, W | MOVABLE, K1, sort), c("sort_ro", -2, R, K1, sort_ro)];

const NOT_A_DOUBLE: CmdError = CmdError::Static("ERR One or more scores can't be converted into double");

/// SORT's options.
#[derive(Default)]
struct Options<'a> {
    by: Option<&'a [u8]>,
    dont_sort: bool,
    limit: Option<(i64, i64)>,
    gets: Vec<&'a [u8]>,
    desc: bool,
    alpha: bool,
    store: Option<&'a [u8]>,
}

fn parse<'a>(args: &[&'a [u8]], read_only: bool) -> Result<Options<'a>, CmdError> {
    let mut o = Options::default();
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - i - 1;
        let a = args[i];
        if is(a, "asc") {
            o.desc = false;
        } else if is(a, "desc") {
            o.desc = true;
        } else if is(a, "alpha") {
            o.alpha = true;
        } else if is(a, "limit") && more >= 2 {
            o.limit = Some((int_arg(args[i + 1])?, int_arg(args[i + 2])?));
            i += 2;
        } else if is(a, "store") && more >= 1 && !read_only {
            o.store = Some(args[i + 1]);
            i += 1;
        } else if is(a, "by") && more >= 1 {
            o.by = Some(args[i + 1]);
            // A BY pattern without `*` names one key for every element: no sorting.
            o.dont_sort = !args[i + 1].contains(&b'*');
            i += 1;
        } else if is(a, "get") && more >= 1 {
            o.gets.push(args[i + 1]);
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    Ok(o)
}

pub fn sort(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    sort_generic(ctx, args, false)
}

pub fn sort_ro(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    sort_generic(ctx, args, true)
}

/// The elements of the source key, and whether it is a set (unordered).
fn load(ctx: &Ctx<'_>, key: &[u8]) -> Result<(Vec<Vec<u8>>, bool), CmdError> {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(key);
    let Some(entry) = shard.db(db).get(key, ctx.now_ms) else { return Ok((Vec::new(), false)) };
    match &entry.value {
        Value::List(list) => Ok((list.iter().map(<[u8]>::to_vec).collect(), false)),
        Value::Set(set) => Ok((set.iter().map(|m| m.to_vec()).collect(), true)),
        Value::ZSet(z) => Ok((z.iter().map(|(m, _)| m.to_vec()).collect(), false)),
        _ => Err(CmdError::WrongType),
    }
}

fn sort_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], read_only: bool) -> CmdResult {
    let mut o = parse(args, read_only)?;
    let (mut elements, is_set) = load(ctx, args[1])?;
    if walks_backwards(&o, is_set) {
        elements.reverse();
    }
    if o.dont_sort && is_set && (o.store.is_some() || ctx.client.origin == crate::client::Origin::Script) {
        // Stored results and a script's must not depend on a set's internal
        // order (as Redis: they are replicated or logged as their effect).
        o.dont_sort = false;
        o.alpha = true;
        o.by = None;
    }
    let mut items = weigh(ctx, elements, &o)?;
    if !o.dont_sort {
        items.sort_by(|a, b| compare(a, b, &o));
    }
    let (start, end) = window(o.limit, items.len());
    let selected = if start <= end && end < items.len() { &items[start..=end] } else { &[][..] };
    let rows = project(ctx, selected, &o.gets);
    match o.store {
        Some(dst) => store(ctx, dst, rows),
        None => {
            ctx.out.array(rows.len());
            for row in &rows {
                match row {
                    Some(v) => ctx.out.bulk(v),
                    None => ctx.out.null_bulk(),
                }
            }
        }
    }
    Ok(())
}

/// Whether the elements are returned in their native order read from the
/// end: BY nosort with DESC on a list or sorted set (Redis reads the range
/// backwards; a set has no order to reverse).
fn walks_backwards(o: &Options<'_>, is_set: bool) -> bool {
    o.dont_sort && o.desc && !is_set
}

/// One element with what it sorts by.
struct Item {
    element: Vec<u8>,
    score: f64,
    by: Option<Vec<u8>>,
}

/// Computes each element's sort weight (a score, or the BY value for ALPHA).
fn weigh(ctx: &Ctx<'_>, elements: Vec<Vec<u8>>, o: &Options<'_>) -> Result<Vec<Item>, CmdError> {
    let mut items = Vec::with_capacity(elements.len());
    for element in elements {
        let mut item = Item { element, score: 0.0, by: None };
        if !o.dont_sort {
            let weight = match o.by {
                Some(pattern) => lookup_pattern(ctx, pattern, &item.element),
                None => Some(item.element.clone()),
            };
            if o.alpha {
                item.by = if o.by.is_some() { weight } else { None };
            } else if let Some(w) = weight {
                item.score = parse_score(&w).ok_or(NOT_A_DOUBLE)?;
            }
        }
        items.push(item);
    }
    Ok(items)
}

/// strtod-like: the whole text must be a number (the empty string is 0).
fn parse_score(text: &[u8]) -> Option<f64> {
    if text.is_empty() {
        return Some(0.0);
    }
    cairn_engine::number::parse_f64(text).filter(|f| !f.is_nan())
}

fn compare(a: &Item, b: &Item, o: &Options<'_>) -> Ordering {
    let primary = if !o.alpha {
        a.score.partial_cmp(&b.score).unwrap_or(Ordering::Equal)
    } else if o.by.is_some() {
        a.by.cmp(&b.by)
    } else {
        Ordering::Equal
    };
    let cmp = primary.then_with(|| a.element.cmp(&b.element));
    if o.desc {
        cmp.reverse()
    } else {
        cmp
    }
}

/// Redis's LIMIT arithmetic: the inclusive `[start, end]` to return.
fn window(limit: Option<(i64, i64)>, len: usize) -> (usize, usize) {
    let len = len as i64;
    let (offset, count) = limit.unwrap_or((0, -1));
    let mut start = offset.max(0);
    let mut end = if count < 0 { len - 1 } else { start.saturating_add(count) - 1 };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }
    if start < 0 || end < start {
        return (1, 0);
    }
    (start as usize, end as usize)
}

/// The reply rows: each element, or each GET pattern's value for it.
fn project(ctx: &Ctx<'_>, items: &[Item], gets: &[&[u8]]) -> Vec<Option<Vec<u8>>> {
    if gets.is_empty() {
        return items.iter().map(|i| Some(i.element.clone())).collect();
    }
    let mut rows = Vec::with_capacity(items.len() * gets.len());
    for item in items {
        rows.extend(gets.iter().map(|pattern| lookup_pattern(ctx, pattern, &item.element)));
    }
    rows
}

/// Redis's `lookupKeyByPattern`: `#` is the element itself; otherwise the
/// first `*` becomes the element and the key's string value (or, with
/// `key->field`, the hash field) is returned.
fn lookup_pattern(ctx: &Ctx<'_>, pattern: &[u8], element: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(element.to_vec());
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    let arrow = pattern.windows(2).position(|w| w == b"->").filter(|&p| p > star && p + 2 < pattern.len());
    let key_end = arrow.unwrap_or(pattern.len());
    let mut key = pattern[..star].to_vec();
    key.extend_from_slice(element);
    key.extend_from_slice(&pattern[star + 1..key_end]);
    let mut shard = ctx.server.keyspace.lock_key(&key);
    let entry = shard.db(ctx.db()).get(&key, ctx.now_ms)?;
    match (&entry.value, arrow) {
        (Value::Str(s), None) => Some(s.to_vec()),
        (Value::Hash(h), Some(p)) => h.get(&pattern[p + 2..]).map(<[u8]>::to_vec),
        _ => None,
    }
}

/// STORE: the rows as a list at `dst` (missing values as empty strings),
/// or `dst` deleted when there are none; replies with the count.
fn store(ctx: &mut Ctx<'_>, dst: &[u8], rows: Vec<Option<Vec<u8>>>) {
    let db = ctx.db();
    let count = rows.len();
    let mut shard = ctx.server.keyspace.lock_key(dst);
    let table = shard.db(db);
    if count == 0 {
        if table.remove(dst).is_some() {
            ctx.notify(ev::GENERIC, "del", dst);
        }
    } else {
        let mut list = List::new();
        rows.iter().for_each(|r| list.push_back(r.as_deref().unwrap_or_default()));
        table.insert(dst, Value::List(Box::new(list)), NO_EXPIRY, ctx.now_ms);
        ctx.notify(ev::LIST, "sortstore", dst);
        ctx.server.blocking.signal(db, dst);
    }
    drop(shard);
    // The destination is not at a declared key position: touch its WATCHers here.
    crate::modified::key(ctx.server, db, dst);
    ctx.out.int(count as i64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_window_matches_redis() {
        assert_eq!(window(None, 3), (0, 2));
        assert_eq!(window(Some((1, 1)), 3), (1, 1));
        assert_eq!(window(Some((-5, 2)), 3), (0, 1));
        assert_eq!(window(Some((5, 2)), 3), (1, 0));
        assert_eq!(window(Some((0, 0)), 3), (1, 0));
        assert_eq!(window(None, 0), (1, 0));
    }

    #[test]
    fn scores_parse_like_strtod() {
        assert_eq!(parse_score(b""), Some(0.0));
        assert_eq!(parse_score(b"1.5"), Some(1.5));
        assert_eq!(parse_score(b"x"), None);
    }
}
