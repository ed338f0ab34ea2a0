//! The text reports of the latency monitor: LATENCY GRAPH's ASCII sparkline
//! (Redis's sparkline.c: 4 rows of `_o#`, labels read downwards) and LATENCY
//! DOCTOR's plain-text analysis (Cairn's own wording).

use crate::latency::{Sample, Series};

const COLUMNS: usize = 80;
const ROWS: usize = 4;
const CHARSET: &[u8] = b"_o#";

/// LATENCY GRAPH's text for `event`.
pub fn graph(event: &str, series: &Series, now_secs: u64) -> String {
    let samples = series.samples();
    let min = samples.iter().map(|s| s.latency_ms).min().unwrap_or(0);
    let max = samples.iter().map(|s| s.latency_ms).max().unwrap_or(0);
    let mut out = format!("{event} - high {max} ms, low {min} ms (all time high {} ms)\n", series.max_ms);
    out.push_str(&"-".repeat(COLUMNS));
    out.push('\n');
    let labels: Vec<String> = samples.iter().map(|s| age_label(now_secs.saturating_sub(s.time))).collect();
    for (i, chunk) in samples.chunks(COLUMNS).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        render_range(&mut out, chunk, &labels[i * COLUMNS..], min, max);
    }
    out
}

/// How long ago, as Redis labels a sample: `12s`, `5m`, `3h`, `2d`.
fn age_label(elapsed: u64) -> String {
    match elapsed {
        e if e < 60 => format!("{e}s"),
        e if e < 3600 => format!("{}m", e / 60),
        e if e < 86_400 => format!("{}h", e / 3600),
        e => format!("{}d", e / 86_400),
    }
}

/// The rows of one chunk of at most [`COLUMNS`] samples, then their labels
/// written vertically after one blank line.
fn render_range(out: &mut String, samples: &[Sample], labels: &[String], min: u64, max: u64) {
    let steps = (CHARSET.len() * ROWS) as f64;
    let range = if max == min { 1.0 } else { (max - min) as f64 };
    let step_of = |s: &Sample| (((s.latency_ms - min) as f64 * steps / range) as usize).min(CHARSET.len() * ROWS - 1);
    for row in 0..ROWS {
        let line: String = samples
            .iter()
            .map(|s| {
                let index = step_of(s) as isize - ((ROWS - row - 1) * CHARSET.len()) as isize;
                match index {
                    i if i >= CHARSET.len() as isize => '|',
                    i if i >= 0 => char::from(CHARSET[i as usize]),
                    _ => ' ',
                }
            })
            .collect();
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&" ".repeat(samples.len()));
    out.push('\n');
    let longest = labels.iter().take(samples.len()).map(String::len).max().unwrap_or(0);
    for row in 0..longest {
        let line: String = labels
            .iter()
            .take(samples.len())
            .map(|label| label.as_bytes().get(row).map_or(' ', |&b| char::from(b)))
            .collect();
        out.push_str(&line);
        out.push('\n');
    }
}

/// Average, mean absolute deviation, extremes and span of an event's samples.
struct Analysis {
    samples: usize,
    avg: u64,
    mad: u64,
    min: u64,
    max: u64,
    period_secs: u64,
}

fn analyze(series: &Series, now_secs: u64) -> Analysis {
    let samples = series.samples();
    let n = samples.len().max(1) as u64;
    let avg = samples.iter().map(|s| s.latency_ms).sum::<u64>() / n;
    let mad = samples.iter().map(|s| s.latency_ms.abs_diff(avg)).sum::<u64>() / n;
    let oldest = samples.iter().map(|s| s.time).min().unwrap_or(now_secs);
    Analysis {
        samples: samples.len(),
        avg,
        mad,
        min: samples.iter().map(|s| s.latency_ms).min().unwrap_or(0),
        max: samples.iter().map(|s| s.latency_ms).max().unwrap_or(0),
        period_secs: now_secs.saturating_sub(oldest).max(1),
    }
}

/// What to look at for an event, by its name.
fn advice(event: &str) -> &'static str {
    match event {
        "command" => {
            "Slow commands: check SLOWLOG GET for commands that are O(N) on big values (KEYS, SMEMBERS, \
             LRANGE 0 -1, SORT, long scripts) and prefer SCAN-style iteration or smaller values."
        }
        "fast-command" => {
            "O(1)/O(log N) commands were slow: the machine may be overloaded, swapping, or the process \
             descheduled (check CPU steal and memory pressure)."
        }
        "command-unblocking" => {
            "Serving blocked clients took long: a write woke a BLMPOP, BZMPOP or XREAD with a large \
             COUNT. Ask for fewer elements per call."
        }
        "expire-cycle" => {
            "Active expiry took long: many keys expire at the same time, or big values expire. Spread \
             the expiry times, or set lazyfree-lazy-expire yes."
        }
        "eviction-cycle" => {
            "Eviction took long: memory is above maxmemory and big values are evicted. Raise maxmemory, \
             or set lazyfree-lazy-eviction yes."
        }
        "aof-fsync-always" | "aof-fdatasync" => {
            "The write-ahead log's fdatasync was slow: the disk is slow or shared. Put the data directory \
             on a faster device, or use a durability tier whose replies do not wait for the disk."
        }
        _ => "No specific advice for this event.",
    }
}

/// LATENCY DOCTOR's report.
pub fn doctor(events: &[(String, Series)], threshold_ms: u64, now_secs: u64) -> String {
    if events.is_empty() {
        let state = if threshold_ms == 0 {
            "The latency monitor is disabled: set latency-monitor-threshold to a number of milliseconds \
             (CONFIG SET latency-monitor-threshold 100) to record events that take at least that long."
                .to_string()
        } else {
            format!("No latency event of {threshold_ms} ms or more was recorded: nothing to report.")
        };
        return format!("Cairn latency doctor\n\n{state}\n");
    }
    let mut out =
        format!("Cairn latency doctor\n\n{} event(s) of at least {threshold_ms} ms were recorded:\n\n", events.len());
    for (i, (name, series)) in events.iter().enumerate() {
        let a = analyze(series, now_secs);
        out.push_str(&format!(
            "{}. {name}: {} latency spike(s) in the last {} s (average {} ms, mean deviation {} ms, \
             min {} ms, max {} ms, all time high {} ms).\n   {}\n",
            i + 1,
            a.samples,
            a.period_secs,
            a.avg,
            a.mad,
            a.min,
            a.max,
            series.max_ms,
            advice(name)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::LatencyMonitor;

    #[test]
    fn a_graph_has_a_title_a_rule_rows_and_labels() {
        let m = LatencyMonitor::default();
        m.set_threshold_ms(1);
        m.record("command", 300);
        let (name, series) = m.series(b"command").expect("recorded");
        let now = cairn_engine::clock::now_ms() / 1000;
        let text = graph(&name, &series, now);
        assert!(text.starts_with("command - high 300 ms, low 300 ms (all time high 300 ms)\n"), "{text}");
        assert!(text.contains(&"-".repeat(80)));
        assert!(text.lines().count() >= 2 + ROWS + 2, "{text}");
        assert_eq!(age_label(59), "59s");
        assert_eq!(age_label(60), "1m");
        assert_eq!(age_label(7200), "2h");
        assert_eq!(age_label(200_000), "2d");
    }

    #[test]
    fn the_doctor_reports_each_event() {
        let m = LatencyMonitor::default();
        m.record("expire-cycle", 40);
        let text = doctor(&m.all(), 20, cairn_engine::clock::now_ms() / 1000);
        assert!(text.contains("expire-cycle: 1 latency spike(s)"), "{text}");
        assert!(doctor(&[], 0, 0).contains("disabled"));
    }
}
