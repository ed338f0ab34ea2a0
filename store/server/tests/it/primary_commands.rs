//! Commands a Redis primary without replicas, cluster mode or modules
//! answers, each expected reply as Debian's redis-server 7.0.15 gave it
//! (except where Cairn refuses what it cannot do: REPLICAOF host port,
//! SCRIPT DEBUG YES).

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

fn verbatim_text(frame: &OwnedFrame) -> String {
    match frame {
        OwnedFrame::BlobString { data, .. } => String::from_utf8_lossy(data).into_owned(),
        OwnedFrame::VerbatimString { data, .. } => String::from_utf8_lossy(data).into_owned(),
        other => panic!("expected text, got {other:?}"),
    }
}

#[test]
fn role_and_replicaof_answer_as_a_primary() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["ROLE"]), array(vec![bulk("master"), int(0), array(vec![])]));
    assert_eq!(c.cmd(&["REPLICAOF", "NO", "ONE"]), simple("OK"));
    assert_eq!(c.cmd(&["SLAVEOF", "no", "one"]), simple("OK"));
    assert_eq!(c.cmd(&["REPLICAOF", "h", "x"]), err("ERR Invalid master port"));
    assert_eq!(c.cmd(&["REPLICAOF", "h", "99999"]), err("ERR Invalid master port"));
    let refused = error_text(&c.cmd(&["REPLICAOF", "127.0.0.1", "6380"]));
    assert!(refused.starts_with("ERR Cairn has no replication"), "{refused}");
    assert_eq!(c.info_field("replication", "role"), "master");
}

#[test]
fn failover_checks_its_arguments_then_wants_replicas() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["FAILOVER"]), err("ERR FAILOVER requires connected replicas."));
    assert_eq!(c.cmd(&["FAILOVER", "ABORT"]), err("ERR No failover in progress."));
    assert_eq!(c.cmd(&["FAILOVER", "TIMEOUT", "0"]), err("ERR FAILOVER timeout must be greater than 0"));
    assert_eq!(c.cmd(&["FAILOVER", "TIMEOUT", "x"]), err("ERR value is not an integer or out of range"));
    assert_eq!(c.cmd(&["FAILOVER", "TO", "h", "1"]), err("ERR FAILOVER requires connected replicas."));
    assert_eq!(c.cmd(&["FAILOVER", "TO", "h"]), err("ERR syntax error"));
    assert_eq!(c.cmd(&["FAILOVER", "ABORT", "x"]), err("ERR syntax error"));
}

#[test]
fn cluster_client_probes_are_refused_as_without_cluster_mode() {
    let server = TestServer::start();
    let mut c = server.client();
    for probe in ["READONLY", "READWRITE", "ASKING"] {
        assert_eq!(c.cmd(&[probe]), err("ERR This instance has cluster support disabled"), "{probe}");
    }
}

#[test]
fn module_list_is_empty_and_loading_is_not_allowed() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["MODULE", "LIST"]), array(vec![]));
    let not_allowed = "ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you \
                       can run it from a local connection, otherwise you need to set this option in the \
                       configuration file, and then restart the server.";
    assert_eq!(c.cmd(&["MODULE", "LOAD", "/x.so"]), err(not_allowed));
    assert_eq!(c.cmd(&["MODULE", "UNLOAD", "foo"]), err(not_allowed));
    assert_eq!(c.cmd(&["MODULE", "LIST", "x"]), err("ERR wrong number of arguments for 'module|list' command"));
    assert_eq!(c.cmd(&["MODULE", "FOO"]), err("ERR unknown subcommand 'FOO'. Try MODULE HELP."));
    let OwnedFrame::Array { data, .. } = c.cmd(&["MODULE", "HELP"]) else { panic!("MODULE HELP") };
    assert_eq!(data.len(), 11);
}

#[test]
fn memory_purge_malloc_stats_lolwut_and_script_debug() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["MEMORY", "PURGE"]), simple("OK"));
    assert_eq!(c.cmd(&["MEMORY", "PURGE", "x"]), err("ERR wrong number of arguments for 'memory|purge' command"));
    assert_eq!(verbatim_text(&c.cmd(&["MEMORY", "MALLOC-STATS"])), "Stats not supported for the current allocator");
    assert_eq!(verbatim_text(&c.cmd(&["LOLWUT", "VERSION", "1"])), "Redis ver. 7.0.15\n");
    assert_eq!(c.cmd(&["LOLWUT", "VERSION", "x"]), err("ERR value is not an integer or out of range"));
    assert_eq!(c.cmd(&["SCRIPT", "DEBUG", "NO"]), simple("OK"));
    assert_eq!(c.cmd(&["SCRIPT", "DEBUG", "maybe"]), err("ERR Use SCRIPT DEBUG YES/SYNC/NO"));
    let refused = error_text(&c.cmd(&["SCRIPT", "DEBUG", "YES"]));
    assert!(refused.starts_with("ERR Cairn has no Lua debugger"), "{refused}");
}
