//! Busy polling before a worker sleeps.
//!
//! A worker whose event loop runs out of work parks in `epoll_wait`. On a
//! virtual machine, going to sleep and being woken again costs several
//! microseconds of scheduler and halt/IPI work, which at one request per
//! round trip (pipeline 1) is a large share of a request's cost: the worker
//! ends up sleeping between nearly every two requests. Before parking, a
//! worker therefore polls its event loop's epoll descriptor for a short,
//! bounded time (`--busy-poll-us`), so a request that arrives a few
//! microseconds later is served without a sleep and a wake-up.
//!
//! Polling an epoll descriptor with `poll(2)` only asks whether its ready
//! list is non-empty; it consumes no event, so tokio's own `epoll_wait`
//! still sees everything. tokio does not expose its descriptor, so the worker
//! finds it as the epoll instance that watches its own listening socket
//! (`/proc/self/fdinfo`). If it cannot be found, the worker simply does not
//! spin.
//!
//! A worker whose clients wait for a `sync`-tier acknowledgement spins
//! longer (`--durable-spin-us`) and whatever the payoff score: the
//! acknowledgement arrives one fdatasync later, and a virtual CPU that halts
//! meanwhile makes both the fdatasync's completion and the worker's wake-up
//! slower (docs/benchmarks.md, "Spinning while a sync is in flight"). That
//! spin yields the CPU on every turn, since the syncer may share it and must
//! run the moment its fdatasync returns.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The descriptor a parking worker polls, set once the event loop is known,
/// and how often polling has paid off lately.
#[derive(Debug, Clone)]
pub struct BusyPoll {
    epoll_fd: Arc<AtomicI32>,
    budget: Duration,
    durable_budget: Duration,
    payoff: Arc<Payoff>,
}

/// Adaptive spinning: a worker spins only while spins usually end with work
/// found. A spin that finds work raises the score by one, a spin that runs
/// out of budget lowers it by [`Payoff::MISS_COST`]; below
/// [`Payoff::THRESHOLD`] the worker parks at once, except on one park in
/// [`Payoff::PROBE_EVERY`], which spins to find out whether the load has
/// changed. So one client waiting on its own round trips (where nothing
/// arrives within the budget) costs nearly no spinning, while many clients
/// whose requests arrive microseconds apart are served without sleeping.
#[derive(Debug, Default)]
struct Payoff {
    score: std::sync::atomic::AtomicU32,
    parks: std::sync::atomic::AtomicU32,
}

impl Payoff {
    const MAX: u32 = 32;
    const THRESHOLD: u32 = 8;
    const MISS_COST: u32 = 4;
    const PROBE_EVERY: u32 = 64;

    fn should_spin(&self) -> bool {
        let parks = self.parks.fetch_add(1, Ordering::Relaxed);
        self.score.load(Ordering::Relaxed) >= Self::THRESHOLD || parks % Self::PROBE_EVERY == 0
    }

    fn record(&self, found_work: bool) {
        let score = self.score.load(Ordering::Relaxed);
        let next = if found_work { (score + 1).min(Self::MAX) } else { score.saturating_sub(Self::MISS_COST) };
        self.score.store(next, Ordering::Relaxed);
    }
}

impl BusyPoll {
    /// A poller that spins for at most `budget` before each park, or
    /// `durable_budget` while this thread's clients wait for durability; a
    /// zero budget never spins.
    pub fn new(budget: Duration, durable_budget: Duration) -> BusyPoll {
        BusyPoll { epoll_fd: Arc::new(AtomicI32::new(-1)), budget, durable_budget, payoff: Arc::default() }
    }

    /// Finds the epoll instance that watches `registered` (a socket the
    /// event loop has registered) and polls it from now on.
    pub fn attach(&self, registered: RawFd) {
        if self.budget.is_zero() && self.durable_budget.is_zero() {
            return;
        }
        match epoll_watching(registered) {
            Some(fd) => self.epoll_fd.store(fd, Ordering::Relaxed),
            None => tracing::warn!("busy polling disabled: cannot find the event loop's epoll descriptor"),
        }
    }

    /// Called by the runtime before it parks: returns as soon as the event
    /// loop has something ready, or when the budget is spent.
    pub fn spin(&self) {
        let fd = self.epoll_fd.load(Ordering::Relaxed);
        if fd < 0 {
            return;
        }
        if !self.durable_budget.is_zero() && crate::persistence::waiters::pending_on_this_thread() > 0 {
            spin_until_ready(fd, self.durable_budget, yield_cpu);
            return;
        }
        if self.budget.is_zero() || !self.payoff.should_spin() {
            return;
        }
        let found_work = spin_until_ready(fd, self.budget, std::hint::spin_loop);
        self.payoff.record(found_work);
    }
}

/// Polls `fd` until it has ready events (true) or `budget` passes (false),
/// calling `between` between two polls.
fn spin_until_ready(fd: RawFd, budget: Duration, between: fn()) -> bool {
    let deadline = Instant::now() + budget;
    loop {
        if has_ready_events(fd) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        between();
    }
}

/// Lets any other runnable thread on this CPU (the WAL syncer) run first.
fn yield_cpu() {
    // SAFETY: sched_yield takes no arguments and cannot fail on Linux.
    unsafe {
        libc::sched_yield();
    }
}

/// Whether epoll instance `fd` has ready events, without consuming them.
fn has_ready_events(fd: RawFd) -> bool {
    let mut poll = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, zero timeout.
    let rc = unsafe { libc::poll(&mut poll, 1, 0) };
    rc > 0
}

/// The descriptor of this process's epoll instance that has `target`
/// registered, from `/proc/self/fdinfo`.
fn epoll_watching(target: RawFd) -> Option<RawFd> {
    let entries = std::fs::read_dir("/proc/self/fd").ok()?;
    entries.filter_map(Result::ok).find_map(|entry| {
        let fd: RawFd = entry.file_name().to_str()?.parse().ok()?;
        let link = std::fs::read_link(entry.path()).ok()?;
        if link.as_os_str() != "anon_inode:[eventpoll]" {
            return None;
        }
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
        watches(&info, target).then_some(fd)
    })
}

/// Whether an epoll fdinfo text lists `target` (`tfd: N events: ...`).
fn watches(fdinfo: &str, target: RawFd) -> bool {
    fdinfo.lines().any(|line| {
        let mut words = line.split_whitespace();
        words.next() == Some("tfd:") && words.next().and_then(|n| n.parse::<RawFd>().ok()) == Some(target)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn spinning_stops_when_it_does_not_pay_and_probes_now_and_then() {
        let payoff = Payoff::default();
        for _ in 0..Payoff::MAX {
            payoff.record(true);
        }
        assert!(payoff.should_spin());
        for _ in 0..Payoff::MAX / Payoff::MISS_COST {
            payoff.record(false);
        }
        let spins = (0..Payoff::PROBE_EVERY * 4).filter(|_| payoff.should_spin()).count();
        assert_eq!(spins, 4, "only the probes spin once spinning stopped paying");
        for _ in 0..Payoff::THRESHOLD {
            payoff.record(true);
        }
        assert!(payoff.should_spin(), "hits bring spinning back");
    }

    /// Runs `test` with a listener registered on a fresh current-thread
    /// event loop, as a worker's is.
    fn with_listener(test: impl FnOnce(&tokio::net::TcpListener)) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            test(&listener);
        });
    }

    #[test]
    fn a_pending_durable_wait_spins_until_ready_even_when_spinning_does_not_pay() {
        with_listener(|listener| {
            let addr = listener.local_addr().expect("addr");
            let budget = Duration::from_millis(30);
            let poller = BusyPoll::new(Duration::ZERO, budget);
            poller.attach(listener.as_raw_fd());
            let started = Instant::now();
            poller.spin();
            assert!(started.elapsed() < budget, "no pending wait: no spin (the idle budget is zero)");
            let pending = crate::persistence::waiters::PendingHere::enter();
            let started = Instant::now();
            poller.spin();
            assert!(started.elapsed() >= budget, "a pending wait spins for its whole budget when nothing arrives");
            let _client = std::net::TcpStream::connect(addr).expect("connect");
            let started = Instant::now();
            poller.spin();
            assert!(started.elapsed() < Duration::from_secs(5), "the spin ends when the event loop has work");
            drop(pending);
            assert_eq!(crate::persistence::waiters::pending_on_this_thread(), 0);
        });
    }

    #[test]
    fn parses_fdinfo() {
        let info = "pos:\t0\nflags:\t02\nmnt_id:\t16\ntfd:        5 events:       19 data: 0 pos:0 ino:1\n\
                    tfd:       12 events: 8000001d data: 1 pos:0 ino:2\n";
        assert!(watches(info, 5));
        assert!(watches(info, 12));
        assert!(!watches(info, 1));
        assert!(!watches("", 5));
    }

    #[test]
    fn finds_the_epoll_that_watches_a_socket() {
        with_listener(|listener| {
            epoll_watching(listener.as_raw_fd()).expect("the runtime's epoll watches the listener");
            let stray = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            assert_eq!(epoll_watching(stray.as_raw_fd()), None);
        });
    }

    #[test]
    fn a_connection_makes_the_epoll_ready() {
        with_listener(|listener| {
            let addr = listener.local_addr().expect("addr");
            let poller = BusyPoll::new(Duration::from_millis(200), Duration::ZERO);
            poller.attach(listener.as_raw_fd());
            let epoll = poller.epoll_fd.load(Ordering::Relaxed);
            assert!(epoll >= 0);
            let _client = std::net::TcpStream::connect(addr).expect("connect");
            let started = Instant::now();
            poller.spin();
            assert!(has_ready_events(epoll), "a pending accept must show as a ready epoll");
            assert!(started.elapsed() < Duration::from_millis(200), "spin returns when events are ready");
        });
    }
}
