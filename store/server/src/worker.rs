//! Worker threads: each is pinned to one CPU and runs its own single-threaded
//! event loop with its own listener. A connection lives on the worker that
//! accepted it; workers share only the keyspace (sharded locks) and the
//! client registry (touched on connect and disconnect).

use std::net::TcpListener as StdListener;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::LocalSet;

use crate::busy_poll::BusyPoll;
use crate::server::Server;

/// A worker's listening sockets.
pub struct Listeners {
    /// Plaintext RESP, unless `--port off`.
    pub resp: Option<StdListener>,
    /// RESP over TLS, when `--tls-port` is set (the handshake uses the
    /// server's TLS configuration in use at each accept).
    pub tls: Option<StdListener>,
    /// The native protocol's listener, unless `--native-port off`.
    pub native: Option<StdListener>,
}

/// Starts worker `index` on its own thread.
pub fn spawn(
    server: Arc<Server>,
    index: usize,
    cpu: Option<usize>,
    listener: Listeners,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let thread = std::thread::Builder::new().name(format!("cairn-worker-{index}"));
    thread.stack_size(crate::scripting::SCRIPT_THREAD_STACK_BYTES).spawn(move || {
        if let Some(cpu) = cpu {
            if !core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
                tracing::warn!(worker = index, cpu, "could not pin worker to CPU");
            }
        }
        // `start` resolved both budgets against the CPU quota; no quota is read here.
        let poller = BusyPoll::new(
            Duration::from_micros(server.config.busy_poll_budget_us(None)),
            Duration::from_micros(server.config.durable_spin_budget_us(None)),
        );
        let spinner = poller.clone();
        let parking = server.persistence.worker_activity.clone();
        let waking = parking.clone();
        // Parked time only matters to the rebalancer (off with one worker).
        let parked_at = Arc::new(ParkClock { on: server.rebalance.is_enabled(), ..ParkClock::default() });
        let unparked_at = parked_at.clone();
        let waking_server = server.clone();
        let built = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_stack_size(crate::scripting::SCRIPT_THREAD_STACK_BYTES)
            .on_thread_park(move || {
                parking.leave();
                parked_at.start();
                spinner.spin();
            })
            .on_thread_unpark(move || {
                waking.enter();
                if let Some(parked) = unparked_at.stop() {
                    waking_server.rebalance.add_parked(index, parked);
                }
            })
            .build();
        let runtime = match built {
            Ok(rt) => rt,
            Err(e) => {
                tracing::error!(worker = index, error = %e, "cannot build the worker's event loop");
                server.shutdown.trigger();
                return;
            }
        };
        let local = LocalSet::new();
        local.block_on(&runtime, run(server, index, listener, poller));
    })
}

/// A worker's listeners on its event loop.
struct Registered {
    resp: Option<TcpListener>,
    tls: Option<TcpListener>,
    native: Option<TcpListener>,
}

impl Registered {
    fn new(listeners: Listeners) -> std::io::Result<Registered> {
        Ok(Registered {
            resp: listeners.resp.map(TcpListener::from_std).transpose()?,
            tls: listeners.tls.map(TcpListener::from_std).transpose()?,
            native: listeners.native.map(TcpListener::from_std).transpose()?,
        })
    }

    /// Swaps in the sockets of a CONFIG SET that moved the listeners; a
    /// socket the event loop cannot register leaves that door as it was.
    fn take(&mut self, index: usize, handover: crate::rebind::Handover) {
        let doors =
            [(&mut self.resp, handover.resp), (&mut self.tls, handover.tls), (&mut self.native, handover.native)];
        for (door, new) in doors {
            let Some(new) = new else { continue };
            match new.map(TcpListener::from_std).transpose() {
                Ok(registered) => *door = registered,
                Err(e) => {
                    tracing::error!(worker = index, error = %e, "cannot register a moved listener; keeping the old one")
                }
            }
        }
    }

    /// A socket the event loop watches (the busy poller finds its epoll
    /// instance through it).
    fn any_fd(&self) -> Option<std::os::fd::RawFd> {
        self.resp.as_ref().or(self.tls.as_ref()).or(self.native.as_ref()).map(|l| l.as_raw_fd())
    }
}

async fn run(server: Arc<Server>, index: usize, listeners: Listeners, poller: BusyPoll) {
    let mut listeners = match Registered::new(listeners) {
        Ok(registered) => registered,
        Err(e) => {
            tracing::error!(worker = index, error = %e, "cannot register the listener");
            server.shutdown.trigger();
            return;
        }
    };
    if let Some(fd) = listeners.any_fd() {
        poller.attach(fd);
    }
    tokio::task::spawn_local(housekeeping(server.clone(), index));
    let stats = server.workers[index].clone();
    let mut arrivals = server.rebalance.take_inbox(index);
    loop {
        tokio::select! {
            _ = server.shutdown.wait() => break,
            handover = server.rebind.handover(index) => listeners.take(index, handover),
            Some(moving) = arrive(arrivals.as_mut()) => {
                tokio::task::spawn_local(crate::connection::resume(server.clone(), moving, index, stats.clone()));
            }
            accepted = accept_on(listeners.resp.as_ref()) => match accepted {
                Ok((stream, peer)) => {
                    tokio::task::spawn_local(crate::connection::serve(server.clone(), stream, peer, index, stats.clone()));
                }
                Err(e) => accept_failed(index, "RESP", e).await,
            },
            accepted = accept_on(listeners.tls.as_ref()) => match accepted {
                Ok((stream, peer)) => {
                    tokio::task::spawn_local(crate::tls::serve(server.clone(), stream, peer, index, stats.clone()));
                }
                Err(e) => accept_failed(index, "TLS", e).await,
            },
            accepted = accept_on(listeners.native.as_ref()) => match accepted {
                Ok((stream, peer)) => {
                    tokio::task::spawn_local(crate::native::serve(server.clone(), stream, peer, index, stats.clone()));
                }
                Err(e) => accept_failed(index, "native", e).await,
            },
        }
    }
}

/// Logs a failed accept (out of descriptors, usually) and backs off a little.
async fn accept_failed(index: usize, port: &str, error: std::io::Error) {
    tracing::warn!(worker = index, port, error = %error, "accept failed");
    tokio::time::sleep(Duration::from_millis(10)).await;
}

/// The next connection moving here from another worker; `None` once the
/// channel closed (never resolves without a channel).
async fn arrive(
    arrivals: Option<&mut tokio::sync::mpsc::UnboundedReceiver<crate::rebalance::Moving>>,
) -> Option<crate::rebalance::Moving> {
    match arrivals {
        Some(inbox) => inbox.recv().await,
        None => std::future::pending().await,
    }
}

/// When the event loop parked (spinning before the park counts as parked:
/// it is time the loop had nothing to do).
#[derive(Debug, Default)]
struct ParkClock {
    on: bool,
    since: parking_lot::Mutex<Option<std::time::Instant>>,
}

impl ParkClock {
    fn start(&self) {
        if self.on {
            *self.since.lock() = Some(std::time::Instant::now());
        }
    }

    fn stop(&self) -> Option<Duration> {
        self.since.lock().take().map(|since| since.elapsed())
    }
}

/// Accepts on `listener`; never resolves when there is none.
async fn accept_on(listener: Option<&TcpListener>) -> std::io::Result<(tokio::net::TcpStream, std::net::SocketAddr)> {
    match listener {
        Some(l) => l.accept().await,
        None => std::future::pending().await,
    }
}

/// Periodic work: releasing this thread's stale Lua interpreters (see
/// crate::scripting::stale) and the garbage of the scripts they ran since
/// their last collection step, active expiry of this worker's shards, and
/// (worker 0) the ops/s sampler.
async fn housekeeping(server: Arc<Server>, index: usize) {
    let workers = server.workers.len();
    let mut tick = tokio::time::interval(crate::expiry::EXPIRE_PERIOD);
    let mut planner = crate::rebalance::Planner::default();
    loop {
        tokio::select! {
            _ = server.shutdown.wait() => return,
            _ = tick.tick() => {}
        }
        crate::scripting::stale::release(crate::scripting::stale::Generations::of(&server.scripting));
        crate::scripting::lua_env::collect_after_scripts();
        if server.persistence.is_loading() {
            continue;
        }
        crate::expiry::expire_pass(&server, index, workers);
        if index == 0 {
            server.sample_ops();
            planner.tick(&server.rebalance);
        }
    }
}
