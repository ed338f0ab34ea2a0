//! How the `sync`-tier syncer groups many writers: one group, or two that
//! take turns.
//!
//! With one group per round (the syncer gathers every writer the last round
//! covered, see `Shared::gather`), each round is sequential: the fdatasync
//! runs while every writer waits for it, so the workers idle, then the
//! workers answer everyone and execute their next writes while the disk
//! idles. When that work takes longer than an fdatasync, two groups that
//! take turns do better: while one group's fdatasync runs, the workers
//! answer and execute the other group. The round then starts once the group
//! the round before last covered is back (about half the writers), and the
//! workers hand their CPU to the syncer when that count is reached
//! ([`super::Wal::hand_off_to_syncer`]).
//!
//! Whether to split follows from one round's timings. Let W writers cost c
//! of worker time each, and an fdatasync F. One group: a round every F + Wc.
//! Two groups: every max(F, Wc/2) per half, so W records per 2·max(F, Wc/2)
//! — better exactly when Wc > F. One group's collection time (from the
//! round that answered the writers to the round that covers them again) is
//! about Wc; a half-group's is about Wc/2. [`GroupPlanner`] splits when the
//! collection of one group exceeds [`SPLIT_ABOVE`] fdatasyncs, and merges
//! again when twice a half-group's falls below [`MERGE_BELOW`] fdatasyncs
//! (the gap is hysteresis; each extra round costs the syncer's own CPU).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::record::Lsn;

/// Split when one group's collection takes more than this many rounds'
/// write-and-fdatasync time.
pub const SPLIT_ABOVE: f64 = 1.5;

/// Merge when two half-groups' collections take less than this many.
pub const MERGE_BELOW: f64 = 1.1;

/// Fewest records a round must cover before splitting is considered: small
/// groups gain little and their rounds are short.
pub const MIN_SPLIT_GROUP: u64 = 8;

/// Weight of the newest round in the smoothed round time.
const ROUND_TIME_WEIGHT: f64 = 0.125;

/// What a round gathers before it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gathering {
    /// Every writer the last round covered (one group).
    All,
    /// This many records appended after the previous round took the buffer
    /// (two groups).
    Half(u64),
}

/// The syncer's memory of its last rounds (one per syncer thread).
#[derive(Debug, Default)]
pub struct GroupPlanner {
    split: bool,
    /// Rounds since the split began.
    split_rounds: u64,
    /// The record counts the two groups gather, by round parity.
    targets: [u64; 2],
    /// When the last two rounds ended, newest first.
    ended: [Option<Instant>; 2],
    /// Smoothed duration of a round's write and fdatasync, in µs.
    round_us: f64,
}

impl GroupPlanner {
    /// What the round after the next one gathers (set when the next one
    /// takes the buffer, so the count starts there).
    pub fn after_next(&self) -> Gathering {
        self.gathering(self.split_rounds + 1)
    }

    /// What the next round gathers.
    pub fn next(&self) -> Gathering {
        self.gathering(self.split_rounds)
    }

    fn gathering(&self, round: u64) -> Gathering {
        if self.split {
            Gathering::Half(self.targets[(round % 2) as usize].max(1))
        } else {
            Gathering::All
        }
    }

    /// After a round that took the buffer at `started`, finished at `ended`
    /// and covered `covered` records, whose gathering was complete at
    /// `gathered` (when its last expected record was appended; `started` if
    /// it never was): updates the timings and decides the next round's
    /// grouping.
    pub fn record_round(&mut self, started: Instant, ended: Instant, gathered: Instant, covered: u64) {
        if covered == 0 {
            return;
        }
        self.smooth_round_time(ended.saturating_duration_since(started));
        // The round that last answered these writers: the previous one with
        // one group, the one before it with two.
        let answered = if self.split { self.ended[1] } else { self.ended[0] };
        let collection = answered.map(|t| gathered.saturating_duration_since(t));
        self.ended = [Some(ended), self.ended[0]];
        if self.split {
            // The same group comes back two rounds later.
            self.targets[(self.split_rounds % 2) as usize] = covered;
            self.split_rounds += 1;
        }
        if let Some(collection) = collection {
            self.decide(collection, covered);
        }
    }

    fn smooth_round_time(&mut self, took: Duration) {
        let us = took.as_secs_f64() * 1e6;
        self.round_us =
            if self.round_us == 0.0 { us } else { self.round_us + ROUND_TIME_WEIGHT * (us - self.round_us) };
    }

    fn decide(&mut self, collection: Duration, covered: u64) {
        let collection_us = collection.as_secs_f64() * 1e6;
        if !self.split {
            if covered >= MIN_SPLIT_GROUP && collection_us > SPLIT_ABOVE * self.round_us {
                self.split = true;
                self.split_rounds = 0;
                self.targets = [covered / 2, covered - covered / 2];
            }
        } else if self.split_rounds >= 2
            && (2.0 * collection_us < MERGE_BELOW * self.round_us || covered < MIN_SPLIT_GROUP / 2)
        {
            self.split = false;
        }
    }

    /// Whether rounds alternate between two groups.
    pub fn is_split(&self) -> bool {
        self.split
    }
}

/// The appenders' side of the grouping: which LSN completes the group the
/// syncer gathers, when it was appended, and whether the thread that
/// appended it should hand its CPU to the syncer (two groups only).
#[derive(Debug)]
pub struct Handoff {
    epoch: Instant,
    /// Appending this LSN completes the gathering (`Lsn::MAX`: none armed,
    /// or already completed).
    armed: AtomicU64,
    /// The LSN the round being gathered waits for (kept after completion).
    target: AtomicU64,
    /// Whether completing it asks the appender to yield.
    yields: AtomicBool,
    /// Completed with `yields`, not yet taken by [`Handoff::take_due`].
    due: AtomicBool,
    /// When it was completed, in ns since `epoch` (0: not yet).
    gathered_ns: AtomicU64,
    /// Records the round after the next one gathers (0: one group); armed
    /// when the next round takes the buffer.
    after_next: AtomicU64,
}

impl Handoff {
    pub fn new() -> Self {
        Handoff {
            epoch: Instant::now(),
            armed: AtomicU64::new(Lsn::MAX),
            target: AtomicU64::new(0),
            yields: AtomicBool::new(false),
            due: AtomicBool::new(false),
            gathered_ns: AtomicU64::new(0),
            after_next: AtomicU64::new(0),
        }
    }

    /// After each append (one atomic load unless it completes the group).
    #[inline]
    pub fn appended(&self, lsn: Lsn) {
        let armed = self.armed.load(Ordering::Relaxed);
        if lsn >= armed {
            self.complete(armed);
        }
    }

    #[cold]
    fn complete(&self, armed: Lsn) {
        if self.armed.compare_exchange(armed, Lsn::MAX, Ordering::AcqRel, Ordering::Relaxed).is_err() {
            return;
        }
        let ns = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX).max(1);
        self.gathered_ns.store(ns, Ordering::Release);
        if self.yields.load(Ordering::Acquire) {
            self.due.store(true, Ordering::Release);
        }
    }

    /// Whether this thread should yield to the syncer now (once per group).
    #[inline]
    pub fn take_due(&self) -> bool {
        self.due.load(Ordering::Relaxed) && self.due.swap(false, Ordering::AcqRel)
    }

    /// The round being gathered is complete once `lsn` is appended;
    /// `next_lsn` is the log's next LSN now (completed at once if past it).
    pub fn arm(&self, lsn: Lsn, yields: bool, next_lsn: Lsn) {
        self.yields.store(yields, Ordering::Release);
        self.due.store(false, Ordering::Release);
        self.gathered_ns.store(0, Ordering::Release);
        self.target.store(lsn, Ordering::Release);
        self.armed.store(lsn, Ordering::Release);
        if next_lsn > lsn {
            self.complete(lsn);
        }
    }

    /// The LSN the round being gathered waits for.
    pub fn target(&self) -> Lsn {
        self.target.load(Ordering::Acquire)
    }

    /// When the round being gathered was complete, if it was; resets it.
    pub fn take_gathered_at(&self) -> Option<Instant> {
        let ns = self.gathered_ns.swap(0, Ordering::AcqRel);
        (ns != 0).then(|| self.epoch + Duration::from_nanos(ns))
    }

    /// What the round after the next one gathers.
    pub fn plan_after_next(&self, gathering: Gathering) {
        let count = match gathering {
            Gathering::Half(count) => count,
            Gathering::All => 0,
        };
        self.after_next.store(count, Ordering::Release);
    }

    /// A round took the buffer through `last` (buffer lock held; `next_lsn`
    /// is `last + 1`): with two groups, the next round's group counts from
    /// here.
    pub fn taken(&self, last: Lsn, next_lsn: Lsn) {
        let count = self.after_next.swap(0, Ordering::AcqRel);
        if count > 0 {
            self.arm(last + count, true, next_lsn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds rounds `(covered, collection_us, round_us)`: each round's group
    /// is complete `collection_us` after the round that last answered it,
    /// and starts then or when the previous round ends, whichever is later.
    fn run(planner: &mut GroupPlanner, start: Instant, rounds: &[(u64, u64, u64)]) -> Instant {
        let mut now = start;
        for &(covered, collection_us, round_us) in rounds {
            let answered = if planner.is_split() { planner.ended[1] } else { planner.ended[0] };
            let gathered = answered.map_or(now, |t| t + Duration::from_micros(collection_us));
            let started = gathered.max(now);
            let ended = started + Duration::from_micros(round_us);
            planner.record_round(started, ended, gathered, covered);
            now = ended;
        }
        now
    }

    #[test]
    fn few_writers_stay_in_one_group() {
        let mut planner = GroupPlanner::default();
        // 8 writers whose work (60 µs) is shorter than a round (150 µs).
        run(&mut planner, Instant::now(), &[(8, 60, 150); 10]);
        assert_eq!(planner.next(), Gathering::All);
    }

    #[test]
    fn many_writers_split_in_halves_that_keep_their_size() {
        let mut planner = GroupPlanner::default();
        let now = run(&mut planner, Instant::now(), &[(64, 500, 150); 2]);
        assert_eq!(planner.next(), Gathering::Half(32), "the first split round takes half");
        assert_eq!(planner.after_next(), Gathering::Half(32), "the second the rest");
        let now = run(&mut planner, now, &[(30, 250, 150)]);
        assert_eq!(planner.next(), Gathering::Half(32));
        run(&mut planner, now, &[(34, 260, 150)]);
        assert_eq!(planner.next(), Gathering::Half(30), "then each group its own size");
        assert_eq!(planner.after_next(), Gathering::Half(34));
    }

    #[test]
    fn merges_again_when_the_halves_are_collected_within_half_a_round() {
        let mut planner = GroupPlanner::default();
        let now = run(&mut planner, Instant::now(), &[(64, 500, 150); 2]);
        assert!(planner.is_split());
        run(&mut planner, now, &[(32, 50, 150); 4]);
        assert_eq!(planner.next(), Gathering::All);
    }

    #[test]
    fn stays_split_while_the_halves_take_longer_than_half_a_round() {
        let mut planner = GroupPlanner::default();
        let now = run(&mut planner, Instant::now(), &[(64, 500, 150); 2]);
        run(&mut planner, now, &[(32, 100, 150); 6]);
        assert!(planner.is_split(), "two groups of 100 µs beat one of 200 µs behind a 150 µs round");
    }

    #[test]
    fn small_groups_never_split() {
        let mut planner = GroupPlanner::default();
        run(&mut planner, Instant::now(), &[(4, 5000, 150); 5]);
        assert_eq!(planner.next(), Gathering::All);
    }

    #[test]
    fn the_appender_that_completes_a_yielding_group_is_told_once() {
        let handoff = Handoff::new();
        handoff.arm(10, true, 5);
        handoff.appended(9);
        assert!(!handoff.take_due());
        assert!(handoff.take_gathered_at().is_none());
        handoff.appended(10);
        assert!(handoff.take_due());
        assert!(!handoff.take_due(), "only once");
        handoff.appended(11);
        assert!(!handoff.take_due(), "completed: later appends change nothing");
        assert!(handoff.take_gathered_at().is_some());
        assert_eq!(handoff.target(), 10);
    }

    #[test]
    fn one_group_is_timed_without_yielding() {
        let handoff = Handoff::new();
        handoff.arm(10, false, 11);
        assert!(!handoff.take_due());
        assert!(handoff.take_gathered_at().is_some(), "already appended when armed");
    }

    #[test]
    fn a_taken_buffer_arms_the_half_after_it() {
        let handoff = Handoff::new();
        handoff.taken(100, 101);
        handoff.appended(200);
        assert!(!handoff.take_due(), "nothing planned: nothing armed");
        handoff.plan_after_next(Gathering::Half(32));
        handoff.taken(100, 101);
        handoff.appended(131);
        assert!(!handoff.take_due());
        handoff.appended(132);
        assert!(handoff.take_due());
    }
}
