//! Set algebra: SINTER, SINTERCARD, SINTERSTORE, SUNION, SUNIONSTORE, SDIFF,
//! SDIFFSTORE.
//!
//! The source sets are read in place, several at once, through
//! [`MultiGuard::table_ref`]; a missing key is an empty set and any key of
//! another type is WRONGTYPE (checked for every key before any work, as Redis
//! 7.0 does). Results are built as a new [`Set`] starting as an intset, so a
//! stored result has the encoding Redis would give it.

use cairn_engine::entry::NO_EXPIRY;
use cairn_engine::events as ev;
use cairn_engine::keyspace::MultiGuard;
use cairn_engine::types::set::Member;
use cairn_engine::types::Set;
use cairn_engine::Value;

use super::reply_member;
use crate::commands::{int_arg, is, CmdError, CmdResult, Ctx};

/// The sets at `keys` (`None` for a missing key), after expiring due keys.
fn load<'g>(
    guard: &'g mut MultiGuard<'_>,
    db: usize,
    keys: &[&[u8]],
    now_ms: u64,
) -> Result<Vec<Option<&'g Set>>, CmdError> {
    for key in keys {
        // Lazy expiry, as a read lookup does.
        guard.table(db, key).get(key, now_ms);
    }
    let guard: &'g MultiGuard<'_> = guard;
    keys.iter()
        .map(|key| match guard.table_ref(db, key).peek(key, now_ms) {
            None => Ok(None),
            Some(entry) => match &entry.value {
                Value::Set(set) => Ok(Some(set)),
                _ => Err(CmdError::WrongType),
            },
        })
        .collect()
}

/// Calls `f` on each member of the intersection, stopping after `limit`
/// members (0: no limit); returns how many were found.
fn intersect<'s>(sets: &[Option<&'s Set>], limit: usize, mut f: impl FnMut(Member<'s>)) -> usize {
    let Some(mut sets) = sets.iter().copied().collect::<Option<Vec<&Set>>>() else { return 0 };
    // Walk the smallest set, probing the others.
    sets.sort_by_key(|s| s.len());
    let first = sets[0];
    let mut found = 0;
    for member in first.iter() {
        if sets[1..].iter().all(|s| std::ptr::eq(*s, first) || s.contains_member(member)) {
            f(member);
            found += 1;
            if limit > 0 && found >= limit {
                break;
            }
        }
    }
    found
}

fn union(sets: &[Option<&Set>]) -> Set {
    let mut result = Set::new();
    for set in sets.iter().flatten() {
        for member in set.iter() {
            result.add_member(member);
        }
    }
    result
}

/// The members of the first set in none of the others, choosing between
/// Redis's two algorithms by the work each would do.
fn difference(sets: &[Option<&Set>]) -> Set {
    let mut result = Set::new();
    let Some(first) = sets[0] else { return result };
    let mut others: Vec<&Set> = sets[1..].iter().flatten().copied().collect();
    if others.iter().any(|s| std::ptr::eq(*s, first)) {
        return result;
    }
    let probe_work = first.len() * (others.len() + 1) / 2;
    let remove_work = first.len() + others.iter().map(|s| s.len()).sum::<usize>();
    if probe_work <= remove_work {
        // Probe the largest sets first: most likely to hold a member.
        others.sort_by_key(|s| std::cmp::Reverse(s.len()));
        for member in first.iter() {
            if !others.iter().any(|s| s.contains_member(member)) {
                result.add_member(member);
            }
        }
    } else {
        first.iter().for_each(|member| {
            result.add_member(member);
        });
        for set in others {
            for member in set.iter() {
                member.with_bytes(|b| result.remove(b));
            }
            if result.is_empty() {
                break;
            }
        }
    }
    result
}

/// Replies with members as a set reply (an array in RESP2).
fn reply_members(ctx: &mut Ctx<'_>, members: &[Member<'_>]) {
    ctx.out.set(members.len());
    for member in members {
        reply_member(&mut ctx.out, *member);
    }
}

/// Stores `result` at `dst` (deleting `dst` when it is empty) and replies
/// with its size.
/// `event` names the command for keyspace notifications.
fn store(ctx: &mut Ctx<'_>, guard: &mut MultiGuard<'_>, dst: &[u8], result: Set, event: &str) {
    let table = guard.table(ctx.db(), dst);
    let len = result.len();
    if len == 0 {
        if table.remove(dst).is_some() {
            ctx.notify(ev::GENERIC, "del", dst);
        }
    } else {
        table.insert(dst, Value::Set(result), NO_EXPIRY, ctx.now_ms);
        ctx.notify(ev::SET, event, dst);
    }
    ctx.out.int(len as i64);
}

pub fn sinter(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let keys = &args[1..];
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut guard = ctx.server.keyspace.lock_keys(keys.iter().copied());
    let sets = load(&mut guard, db, keys, now)?;
    let mut members = Vec::new();
    intersect(&sets, 0, |m| members.push(m));
    reply_members(ctx, &members);
    Ok(())
}

pub fn sinterstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (dst, keys) = (args[1], &args[2..]);
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut guard = ctx.server.keyspace.lock_keys(args[1..].iter().copied());
    let sets = load(&mut guard, db, keys, now)?;
    let mut result = Set::new();
    intersect(&sets, 0, |m| {
        result.add_member(m);
    });
    store(ctx, &mut guard, dst, result, "sinterstore");
    Ok(())
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit]
pub fn sintercard(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    const BAD_NUMKEYS: CmdError = CmdError::Static("ERR numkeys should be greater than 0");
    let numkeys = int_arg(args[1]).map_err(|_| BAD_NUMKEYS)?;
    if numkeys < 1 {
        return Err(BAD_NUMKEYS);
    }
    if numkeys as u64 > (args.len() - 2) as u64 {
        return Err(CmdError::Static("ERR Number of keys can't be greater than number of args"));
    }
    let keys = &args[2..2 + numkeys as usize];
    let limit = parse_limit(&args[2 + keys.len()..])?;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut guard = ctx.server.keyspace.lock_keys(keys.iter().copied());
    let sets = load(&mut guard, db, keys, now)?;
    let found = intersect(&sets, limit, |_| {});
    ctx.out.int(found as i64);
    Ok(())
}

/// SINTERCARD's options: `LIMIT n`, 0 meaning no limit.
fn parse_limit(options: &[&[u8]]) -> Result<usize, CmdError> {
    const BAD_LIMIT: CmdError = CmdError::Static("ERR LIMIT can't be negative");
    let mut limit = 0;
    let mut i = 0;
    while i < options.len() {
        if is(options[i], "limit") && i + 1 < options.len() {
            let n = int_arg(options[i + 1]).map_err(|_| BAD_LIMIT)?;
            limit = usize::try_from(n).map_err(|_| BAD_LIMIT)?;
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    Ok(limit)
}

/// SUNION / SDIFF: replies with the result's members.
fn combine(ctx: &mut Ctx<'_>, keys: &[&[u8]], op: fn(&[Option<&Set>]) -> Set) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut guard = ctx.server.keyspace.lock_keys(keys.iter().copied());
    let sets = load(&mut guard, db, keys, now)?;
    let result = op(&sets);
    let members: Vec<Member<'_>> = result.iter().collect();
    reply_members(ctx, &members);
    Ok(())
}

/// SUNIONSTORE / SDIFFSTORE.
fn combine_store(ctx: &mut Ctx<'_>, args: &[&[u8]], op: fn(&[Option<&Set>]) -> Set, event: &str) -> CmdResult {
    let (dst, keys) = (args[1], &args[2..]);
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut guard = ctx.server.keyspace.lock_keys(args[1..].iter().copied());
    let sets = load(&mut guard, db, keys, now)?;
    let result = op(&sets);
    store(ctx, &mut guard, dst, result, event);
    Ok(())
}

pub fn sunion(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    combine(ctx, &args[1..], union)
}

pub fn sunionstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    combine_store(ctx, args, union, "sunionstore")
}

pub fn sdiff(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    combine(ctx, &args[1..], difference)
}

pub fn sdiffstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    combine_store(ctx, args, difference, "sdiffstore")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(members: &[&str]) -> Set {
        let mut s = Set::for_first(members[0].as_bytes());
        for m in members {
            s.add(m.as_bytes());
        }
        s
    }

    fn sorted(s: &Set) -> Vec<String> {
        let mut v: Vec<String> = s.iter().map(|m| String::from_utf8_lossy(&m.to_vec()).into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn intersection_across_encodings_with_limit() {
        let (a, b) = (set(&["1", "2", "3"]), set(&["x", "1", "2", "3"]));
        let sets = [Some(&a), Some(&b)];
        assert_eq!(intersect(&sets, 0, |_| {}), 3);
        assert_eq!(intersect(&sets, 2, |_| {}), 2);
        assert_eq!(intersect(&[Some(&a), None], 0, |_| {}), 0);
        assert_eq!(intersect(&[Some(&a), Some(&a)], 0, |_| {}), 3);
    }

    #[test]
    fn union_result_keeps_intset_when_it_can() {
        let (a, b) = (set(&["1", "2"]), set(&["2", "3"]));
        let u = union(&[Some(&a), None, Some(&b)]);
        assert_eq!(u.encoding(), "intset");
        assert_eq!(sorted(&u), vec!["1", "2", "3"]);
    }

    #[test]
    fn difference_both_algorithms() {
        let big: Vec<String> = (0..100).map(|i| i.to_string()).collect();
        let big: Vec<&str> = big.iter().map(String::as_str).collect();
        let (a, b, c) = (set(&["1", "2", "3", "a"]), set(&big), set(&["a"]));
        // Probe: the first set is small.
        assert_eq!(sorted(&difference(&[Some(&a), Some(&c)])), vec!["1", "2", "3"]);
        // Remove: many sets to probe relative to their sizes.
        let d = difference(&[Some(&b), Some(&a), Some(&c), None, Some(&c)]);
        assert_eq!(d.len(), 97);
        assert!(difference(&[Some(&a), Some(&a)]).is_empty());
        assert!(difference(&[None, Some(&a)]).is_empty());
    }
}
