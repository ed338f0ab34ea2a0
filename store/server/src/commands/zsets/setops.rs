//! ZUNION, ZINTER, ZDIFF, ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE and ZINTERCARD
//! (`zunionInterDiffGenericCommand`). Inputs may be sorted sets or plain sets
//! (whose members score 1).
//!
//! The inputs are read one at a time under the locks of all the keys: the
//! intersection starts from the smallest input and filters it through the
//! others in order of size, as Redis does, so sums are added in the same
//! order and come out bit-identical.

use cairn_engine::types::zset::parse_score;
use cairn_engine::types::{Set, ZSet};
use cairn_engine::{Table, Value};
use std::collections::HashMap;

use super::super::{int_arg, is, CmdError, CmdResult, Ctx};
use super::{ranged_int, reply_members, set_source, store_result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// Folds `value` into `target` (`zunionInterAggregate`): a sum that is NaN
    /// (inf + -inf) counts as 0.
    fn apply(self, target: &mut f64, value: f64) {
        match self {
            Aggregate::Sum => {
                *target += value;
                if target.is_nan() {
                    *target = 0.0;
                }
            }
            Aggregate::Min => {
                if value < *target {
                    *target = value;
                }
            }
            Aggregate::Max => {
                if value > *target {
                    *target = value;
                }
            }
        }
    }
}

/// One input key.
#[derive(Debug, Clone, Copy)]
struct Source<'k> {
    key: &'k [u8],
    weight: f64,
    len: usize,
}

/// An input's value, borrowed for one pass.
enum Input<'a> {
    Missing,
    ZSet(&'a ZSet),
    Set(&'a Set),
}

impl Input<'_> {
    fn for_each(&self, mut f: impl FnMut(&[u8], f64)) {
        match self {
            Input::Missing => {}
            Input::ZSet(z) => z.iter().for_each(|(member, score)| f(member, score)),
            Input::Set(s) => set_source::for_each_member(s, |member| f(member, 1.0)),
        }
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Input::Missing => None,
            Input::ZSet(z) => z.score(member),
            Input::Set(s) => set_source::contains(s, member).then_some(1.0),
        }
    }

    fn len(&self) -> usize {
        match self {
            Input::Missing => 0,
            Input::ZSet(z) => z.len(),
            Input::Set(s) => s.len(),
        }
    }
}

/// The input under `key`, or WRONGTYPE for a type other than set and zset.
fn input<'t>(table: &'t mut Table, key: &[u8], now_ms: u64) -> Result<Input<'t>, CmdError> {
    match table.get(key, now_ms).map(|e| &e.value) {
        None => Ok(Input::Missing),
        Some(Value::ZSet(z)) => Ok(Input::ZSet(z)),
        Some(Value::Set(s)) => Ok(Input::Set(s)),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// The options after the keys.
#[derive(Debug)]
struct Options {
    aggregate: Aggregate,
    with_scores: bool,
    /// ZINTERCARD's LIMIT; 0 is none.
    limit: i64,
}

/// What the command is.
#[derive(Debug, Clone, Copy)]
struct Command<'a> {
    name: &'static str,
    op: Op,
    dst: Option<&'a [u8]>,
    cardinality_only: bool,
}

pub fn zunion(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    generic(ctx, args, Command { name: "zunion", op: Op::Union, dst: None, cardinality_only: false })
}

pub fn zinter(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    generic(ctx, args, Command { name: "zinter", op: Op::Inter, dst: None, cardinality_only: false })
}

pub fn zdiff(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    generic(ctx, args, Command { name: "zdiff", op: Op::Diff, dst: None, cardinality_only: false })
}

pub fn zintercard(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    generic(ctx, args, Command { name: "zintercard", op: Op::Inter, dst: None, cardinality_only: true })
}

pub fn zunionstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    generic(ctx, args, Command { name: "zunionstore", op: Op::Union, dst: Some(args[1]), cardinality_only: false })
}

pub fn zinterstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    generic(ctx, args, Command { name: "zinterstore", op: Op::Inter, dst: Some(args[1]), cardinality_only: false })
}

pub fn zdiffstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    generic(ctx, args, Command { name: "zdiffstore", op: Op::Diff, dst: Some(args[1]), cardinality_only: false })
}

fn generic(ctx: &mut Ctx<'_>, args: &[&[u8]], cmd: Command<'_>) -> CmdResult {
    let numkeys_index = if cmd.dst.is_some() { 2 } else { 1 };
    let setnum = int_arg(args[numkeys_index])?;
    if setnum < 1 {
        return Err(CmdError::Message(format!("ERR at least 1 input key is needed for '{}' command", cmd.name)));
    }
    let first_key = numkeys_index + 1;
    if setnum as u64 > (args.len() - first_key) as u64 {
        return Err(CmdError::Syntax);
    }
    let keys = &args[first_key..first_key + setnum as usize];
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut guard = ctx.server.keyspace.lock_keys(keys.iter().copied().chain(cmd.dst));
    let mut sources = Vec::with_capacity(keys.len());
    for &key in keys {
        let len = input(guard.table(db, key), key, now)?.len();
        sources.push(Source { key, weight: 1.0, len });
    }
    let options = parse_options(&args[first_key + keys.len()..], &mut sources, cmd)?;
    if cmd.op != Op::Diff {
        sources.sort_by_key(|s| s.len);
    }
    let mut pass = |key: &[u8], f: &mut dyn FnMut(&Input<'_>)| -> CmdResult {
        f(&input(guard.table(db, key), key, now)?);
        Ok(())
    };
    let result = match cmd.op {
        Op::Union => union(&sources, options.aggregate, &mut pass)?,
        Op::Inter => inter(&sources, options.aggregate, &mut pass)?,
        Op::Diff => diff(&sources, &mut pass)?,
    };
    if let Some(dst) = cmd.dst {
        let stored = store_result(guard.table(db, dst), dst, ZSet::from_entries(result), now, cmd.name);
        if stored > 0 {
            ctx.server.blocking.signal(db, dst);
        }
        drop(guard);
        ctx.out.int(stored as i64);
        return Ok(());
    }
    drop(guard);
    if cmd.cardinality_only {
        let limit = if options.limit > 0 { options.limit as usize } else { usize::MAX };
        ctx.out.int(result.len().min(limit) as i64);
        return Ok(());
    }
    let mut result = result;
    result.sort_by(|a, b| cairn_engine::types::zset::compare(a.1, &a.0, b.1, &b.0));
    let items = result.iter().map(|(member, score)| (&**member, *score));
    reply_members(&mut ctx.out, result.len(), items, options.with_scores);
    Ok(())
}

fn parse_options(rest: &[&[u8]], sources: &mut [Source<'_>], cmd: Command<'_>) -> Result<Options, CmdError> {
    let mut options = Options { aggregate: Aggregate::Sum, with_scores: false, limit: 0 };
    let weighted = cmd.op != Op::Diff && !cmd.cardinality_only;
    let mut j = 0;
    while j < rest.len() {
        let (a, remaining) = (rest[j], rest.len() - j);
        if weighted && remaining > sources.len() && is(a, "weights") {
            for (source, arg) in sources.iter_mut().zip(&rest[j + 1..]) {
                source.weight = parse_score(arg).ok_or(CmdError::Static("ERR weight value is not a float"))?;
            }
            j += sources.len() + 1;
        } else if weighted && remaining >= 2 && is(a, "aggregate") {
            options.aggregate = match rest[j + 1] {
                v if is(v, "sum") => Aggregate::Sum,
                v if is(v, "min") => Aggregate::Min,
                v if is(v, "max") => Aggregate::Max,
                _ => return Err(CmdError::Syntax),
            };
            j += 2;
        } else if cmd.dst.is_none() && !cmd.cardinality_only && is(a, "withscores") {
            options.with_scores = true;
            j += 1;
        } else if cmd.cardinality_only && remaining >= 2 && is(a, "limit") {
            options.limit = ranged_int(rest[j + 1], 0, i64::MAX, "ERR LIMIT can't be negative")?;
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    Ok(options)
}

/// Runs `f` on the input under a key, once.
type Pass<'p> = dyn FnMut(&[u8], &mut dyn FnMut(&Input<'_>)) -> CmdResult + 'p;

type Entries = Vec<(Box<[u8]>, f64)>;

/// `weight * score`, with NaN (0 * inf) read as 0.
fn weighted(score: f64, weight: f64) -> f64 {
    let value = score * weight;
    if value.is_nan() {
        0.0
    } else {
        value
    }
}

fn union(sources: &[Source<'_>], aggregate: Aggregate, pass: &mut Pass<'_>) -> Result<Entries, CmdError> {
    let mut acc: HashMap<Box<[u8]>, f64> = HashMap::new();
    for source in sources.iter().filter(|s| s.len > 0) {
        pass(source.key, &mut |input| {
            input.for_each(|member, score| {
                let value = weighted(score, source.weight);
                match acc.get_mut(member) {
                    Some(target) => aggregate.apply(target, value),
                    None => {
                        acc.insert(member.into(), value);
                    }
                }
            })
        })?;
    }
    Ok(acc.into_iter().collect())
}

fn inter(sources: &[Source<'_>], aggregate: Aggregate, pass: &mut Pass<'_>) -> Result<Entries, CmdError> {
    let Some((first, others)) = sources.split_first() else { return Ok(Vec::new()) };
    if first.len == 0 {
        return Ok(Vec::new());
    }
    let mut acc: Entries = Vec::with_capacity(first.len);
    pass(first.key, &mut |input| {
        input.for_each(|member, score| acc.push((member.into(), weighted(score, first.weight))))
    })?;
    for source in others {
        pass(source.key, &mut |input| {
            acc.retain_mut(|(member, target)| match input.score(member) {
                Some(score) => {
                    aggregate.apply(target, score * source.weight);
                    true
                }
                None => false,
            })
        })?;
    }
    Ok(acc)
}

fn diff(sources: &[Source<'_>], pass: &mut Pass<'_>) -> Result<Entries, CmdError> {
    let Some((first, others)) = sources.split_first() else { return Ok(Vec::new()) };
    let mut acc: Entries = Vec::with_capacity(first.len);
    pass(first.key, &mut |input| input.for_each(|member, score| acc.push((member.into(), score))))?;
    for source in others.iter().filter(|s| s.len > 0) {
        pass(source.key, &mut |input| acc.retain(|(member, _)| input.score(member).is_none()))?;
    }
    Ok(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates() {
        let mut t = f64::INFINITY;
        Aggregate::Sum.apply(&mut t, f64::NEG_INFINITY);
        assert_eq!(t, 0.0);
        let mut t = 2.0;
        Aggregate::Min.apply(&mut t, f64::NAN);
        assert_eq!(t, 2.0);
        Aggregate::Max.apply(&mut t, 3.0);
        assert_eq!(t, 3.0);
        assert_eq!(weighted(f64::NEG_INFINITY, 0.0), 0.0);
    }
}
