//! LATENCY: the latency monitor's events (LATEST, HISTORY, RESET, GRAPH,
//! DOCTOR; see [`crate::latency`]) and the per-command latency histograms
//! (HISTOGRAM; see [`crate::latency_stats`]), with Redis 7.0's replies.

use super::{table, CmdError, CmdResult, Ctx};
use crate::latency_stats::{self, Buckets};

/// Each subcommand's exact argument count (negative: at least), from Redis's table.
const ARITIES: &[(&str, i32)] =
    &[("doctor", 2), ("graph", 3), ("help", 2), ("histogram", -2), ("history", 3), ("latest", 2), ("reset", -2)];

pub fn latency(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match super::subcommand("latency", args, ARITIES)? {
        "latest" => latest(ctx),
        "history" => history(ctx, args[2]),
        "reset" => reset(ctx, &args[2..]),
        "graph" => return graph(ctx, args[2]),
        "doctor" => doctor(ctx),
        "histogram" => histogram(ctx, &args[2..]),
        _ => help(ctx),
    }
    Ok(())
}

fn now_secs() -> u64 {
    cairn_engine::clock::now_ms() / 1000
}

/// Per event: name, time of the latest sample, its latency, the all-time high.
fn latest(ctx: &mut Ctx<'_>) {
    let events = ctx.server.runtime.latency.all();
    ctx.out.array(events.len());
    for (name, series) in &events {
        let last = series.latest();
        ctx.out.array(4);
        ctx.out.bulk(name.as_bytes());
        ctx.out.int(last.time as i64);
        ctx.out.int(last.latency_ms as i64);
        ctx.out.int(series.max_ms as i64);
    }
}

/// `[time, latency]` pairs, oldest first (empty for an unknown event).
fn history(ctx: &mut Ctx<'_>, event: &[u8]) {
    let samples = ctx.server.runtime.latency.series(event).map(|(_, s)| s.samples()).unwrap_or_default();
    ctx.out.array(samples.len());
    for s in samples {
        ctx.out.array(2);
        ctx.out.int(s.time as i64);
        ctx.out.int(s.latency_ms as i64);
    }
}

fn reset(ctx: &mut Ctx<'_>, events: &[&[u8]]) {
    let monitor = &ctx.server.runtime.latency;
    let forgotten =
        if events.is_empty() { monitor.reset(None) } else { events.iter().map(|e| monitor.reset(Some(e))).sum() };
    ctx.out.int(forgotten as i64);
}

fn graph(ctx: &mut Ctx<'_>, event: &[u8]) -> CmdResult {
    let Some((name, series)) = ctx.server.runtime.latency.series(event) else {
        return Err(CmdError::Message(format!("ERR No samples available for event '{}'", super::text(event))));
    };
    let text = crate::latency_report::graph(&name, &series, now_secs());
    ctx.out.verbatim("txt", text.as_bytes());
    Ok(())
}

fn doctor(ctx: &mut Ctx<'_>) {
    let threshold: u64 = ctx.server.runtime.get("latency-monitor-threshold").and_then(|v| v.parse().ok()).unwrap_or(0);
    let text = crate::latency_report::doctor(&ctx.server.runtime.latency.all(), threshold, now_secs());
    ctx.out.verbatim("txt", text.as_bytes());
}

/// A map from command name to its histogram, for every command with calls
/// (no names), or for the named ones (a container stands for its
/// subcommands too; unknown names are skipped).
fn histogram(ctx: &mut Ctx<'_>, names: &[&[u8]]) {
    let counts = ctx.server.command_latency.read(&ctx.server.workers);
    let wanted: Vec<usize> = if names.is_empty() {
        (0..counts.len()).collect()
    } else {
        names.iter().filter_map(|name| table::stat_by_name(name)).flat_map(with_subcommands).collect()
    };
    let with_calls: Vec<(usize, &Buckets)> = wanted
        .into_iter()
        .filter_map(|stat| counts.get(stat).map(|b| (stat, b)))
        .filter(|(_, b)| latency_stats::calls(b) > 0)
        .collect();
    ctx.out.map(with_calls.len());
    for (stat, buckets) in with_calls {
        ctx.out.bulk(table::stat_name(stat).as_bytes());
        latency_stats::write_histogram(&mut ctx.out, buckets);
    }
}

/// A statistics slot, followed by its subcommands' when it is a container.
fn with_subcommands(stat: usize) -> Vec<usize> {
    let mut stats = vec![stat];
    if stat < table::count() {
        stats.extend(table::stat_subcommands(stat));
    }
    stats
}

fn help(ctx: &mut Ctx<'_>) {
    super::server_admin::write_help(
        ctx,
        &[
            "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
            "HELP",
            "    Prints this help.",
        ],
    );
}
