//! The server's integration tests, in one test binary: each module starts
//! servers in-process on ephemeral loopback ports (see [`common`]) and talks
//! to them over the wire, as a client would.
//!
//! # Layout
//!
//! One module per command family or subsystem; `common` holds the test
//! server, the RESP client and the reply constructors they share. They are
//! one binary, not one per file, because each test binary links the whole
//! server: one link instead of two dozen keeps the test command's build time
//! in check.

mod common;

mod acl;
mod admin;
mod allocator;
mod background_priority;
mod blocked_stats;
mod client_buffers;
mod config;
mod config_reload;
mod crash_sim;
mod dashboards;
mod debug_populate;
mod dump;
mod dump_redis;
mod eviction;
mod functions;
mod geo;
mod hashes_sets;
mod hyperloglog;
mod latency;
mod lazyfree;
mod listeners;
mod lists;
mod memory_stats;
mod migrate;
mod monitor;
mod notifications;
mod pause;
mod primary_commands;
mod pubsub;
mod rdb_file;
mod rdb_stream;
mod rebalance;
mod resp;
mod scripting;
mod scripting_keyed;
mod scripting_libs;
mod scripting_memory;
mod scripting_on_worker;
mod scripting_workers;
mod slowlog;
mod sort;
mod stream_snapshot;
mod streams;
mod tier_switch;
mod tls;
mod tracking;
mod valkey_compat;
mod valkey_rdb;
mod wait;
mod zsets;
