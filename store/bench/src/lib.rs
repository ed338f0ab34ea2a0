//! `cairn-bench`: a load driver that checks every reply it gets, for Cairn and any other
//! Redis-compatible server, and the matrix runner that compares Cairn with Redis and Valkey.
//!
//! # Layout
//!
//! - [`cli`]: the command line (`run`, `verify`, `matrix`); [`config`]: a run's settings.
//! - [`workload`]: operations and their mix, key pattern, load shape, durations.
//! - [`keys`]: per-connection key ownership and self-describing values.
//! - [`resp`]: RESP requests (encoded by hand) and replies (parsed from a buffer).
//! - [`target`]: the [`target::Target`] / [`target::Connection`] abstraction and its RESP
//!   implementation; [`native`]: the native binary protocol as a second target; [`stream`]: a
//!   connection's socket, evented (tokio) or blocking (one connection per driver thread), or a
//!   TLS session; [`tls`]: the TLS client configuration (`--tls`).
//! - [`model`]: what each connection expects of every reply and of the final state.
//! - [`driver`]: one connection's life (prefill, warm-up, measured phase, final check);
//!   [`run`]: all connections together, merged into a [`report::RunReport`].
//! - [`stats`]: HDR latency histograms; [`latencies`]: the run's histograms, shared by its
//!   connections through small per-connection sample buffers; [`report`]: full report, 4 KiB
//!   summary, text.
//! - [`ack_log`]: the log of acknowledged writes; [`audit`]: checking it against a server.
//! - [`progress`]: the terminal progress bar.
//! - [`matrix`]: starting Redis, Valkey and Cairn, running cells, tables and plots.

pub mod ack_log;
pub mod audit;
pub mod cli;
pub mod config;
pub mod driver;
pub mod keys;
pub mod latencies;
pub mod matrix;
pub mod model;
pub mod native;
pub mod progress;
pub mod report;
pub mod resp;
pub mod run;
pub mod stats;
pub mod stream;
pub mod target;
pub mod tls;
pub mod workload;
