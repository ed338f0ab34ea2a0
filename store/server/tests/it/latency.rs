//! Integration tests of LATENCY (the latency monitor and the per-command
//! histograms), INFO latencystats and commandstats per subcommand, and
//! COMMAND GETKEYS / GETKEYSANDFLAGS, with Redis 7.0's replies.

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

fn items(frame: OwnedFrame) -> Vec<OwnedFrame> {
    match frame {
        OwnedFrame::Array { data, .. } => data,
        other => panic!("an array: {other:?}"),
    }
}

fn text(frame: &OwnedFrame) -> String {
    match frame {
        OwnedFrame::BlobString { data, .. } | OwnedFrame::SimpleString { data, .. } => {
            String::from_utf8_lossy(data).into_owned()
        }
        OwnedFrame::VerbatimString { data, .. } => String::from_utf8_lossy(data).into_owned(),
        other => panic!("a string: {other:?}"),
    }
}

fn number(frame: &OwnedFrame) -> i64 {
    match frame {
        OwnedFrame::Number { data, .. } => *data,
        other => panic!("an integer: {other:?}"),
    }
}

fn info_text(c: &mut Client, section: &str) -> String {
    text(&c.cmd(&["INFO", section]))
}

/// LATENCY HISTOGRAM's reply (RESP2: flat pairs) as (name, calls) pairs.
fn histogram_calls(c: &mut Client, names: &[&str]) -> Vec<(String, i64)> {
    let mut words = vec!["LATENCY", "HISTOGRAM"];
    words.extend_from_slice(names);
    let flat = items(c.cmd(&words));
    flat.chunks(2)
        .map(|pair| {
            let body = items(pair[1].clone());
            assert_eq!(text(&body[0]), "calls");
            assert_eq!(text(&body[2]), "histogram_usec");
            (text(&pair[0]), number(&body[1]))
        })
        .collect()
}

#[test]
fn slow_commands_become_latency_events_once_a_threshold_is_set() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["CONFIG", "GET", "latency-monitor-threshold"]), items_of(&["latency-monitor-threshold", "0"]));
    // Off by default: nothing is recorded.
    c.cmd(&["DEBUG", "SLEEP", "0.02"]);
    assert_eq!(items(c.cmd(&["LATENCY", "LATEST"])).len(), 0);

    assert_eq!(c.cmd(&["CONFIG", "SET", "latency-monitor-threshold", "10"]), simple("OK"));
    c.cmd(&["DEBUG", "SLEEP", "0.03"]);
    let latest = items(c.cmd(&["LATENCY", "LATEST"]));
    assert_eq!(latest.len(), 1);
    let event = items(latest[0].clone());
    assert_eq!(text(&event[0]), "command");
    assert!(number(&event[2]) >= 30, "{event:?}");
    assert_eq!(number(&event[2]), number(&event[3]));

    let history = items(c.cmd(&["LATENCY", "HISTORY", "command"]));
    assert_eq!(history.len(), 1);
    let sample = items(history[0].clone());
    assert_eq!(number(&sample[0]), number(&event[1]));
    assert_eq!(items(c.cmd(&["LATENCY", "HISTORY", "blabla"])).len(), 0);

    let graph = text(&c.cmd(&["LATENCY", "GRAPH", "command"]));
    assert!(graph.starts_with("command - high "), "{graph}");
    assert_eq!(c.cmd(&["LATENCY", "GRAPH", "nosuch"]), err("ERR No samples available for event 'nosuch'"));
    assert!(text(&c.cmd(&["LATENCY", "DOCTOR"])).contains("command"));

    assert_eq!(c.cmd(&["LATENCY", "RESET", "blabla"]), int(0));
    assert_eq!(c.cmd(&["LATENCY", "RESET"]), int(1));
    assert_eq!(items(c.cmd(&["LATENCY", "LATEST"])).len(), 0);
}

fn items_of(words: &[&str]) -> OwnedFrame {
    OwnedFrame::Array { data: words.iter().map(|w| bulk(w)).collect(), attributes: None }
}

#[test]
fn latency_subcommands_check_their_arity_as_redis() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["LATENCY", "help", "xxx"]), err("ERR wrong number of arguments for 'latency|help' command"));
    assert_eq!(c.cmd(&["LATENCY", "nosuch"]), err("ERR unknown subcommand 'nosuch'. Try LATENCY HELP."));
    let help = items(c.cmd(&["LATENCY", "HELP"]));
    assert_eq!(text(&help[0]), "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
}

#[test]
fn histograms_and_commandstats_are_per_subcommand() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["CONFIG", "RESETSTAT"]);
    assert_eq!(histogram_calls(&mut c, &[]), vec![("config|resetstat".to_string(), 1)]);
    c.cmd(&["CLIENT", "ID"]);
    c.cmd(&["CLIENT", "LIST"]);
    c.cmd(&["SET", "a", "b"]);
    c.cmd(&["SET", "c", "d"]);
    let mut client = histogram_calls(&mut c, &["client"]);
    client.sort();
    assert_eq!(client, vec![("client|id".to_string(), 1), ("client|list".to_string(), 1)]);
    assert_eq!(histogram_calls(&mut c, &["CLIENT|ID"]), vec![("client|id".to_string(), 1)]);
    assert_eq!(
        histogram_calls(&mut c, &["blabla", "set", "get"]),
        vec![("set".to_string(), 2)],
        "unknown names and commands without calls are skipped"
    );
    let stats = info_text(&mut c, "commandstats");
    assert!(stats.contains("cmdstat_client|id:calls=1,"), "{stats}");
    assert!(stats.contains("cmdstat_client|list:calls=1,"), "{stats}");
    assert!(!stats.contains("cmdstat_client:"), "{stats}");
    // The histogram's buckets are cumulative powers of two.
    let flat = items(c.cmd(&["LATENCY", "HISTOGRAM", "set"]));
    let body = items(flat[1].clone());
    let buckets = items(body[3].clone());
    let bounds: Vec<i64> = buckets.iter().step_by(2).map(number).collect();
    assert!(bounds.iter().all(|b| b.count_ones() == 1), "{bounds:?}");
    assert_eq!(buckets.last().map(number), Some(2));
}

#[test]
fn latencystats_follow_tracking_and_percentile_settings() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["CONFIG", "RESETSTAT"]);
    c.cmd(&["CONFIG", "SET", "latency-tracking", "no"]);
    c.cmd(&["SET", "a", "b"]);
    assert!(!info_text(&mut c, "latencystats").contains("latency_percentiles_usec_set:"));
    c.cmd(&["CONFIG", "SET", "latency-tracking", "yes"]);
    assert!(!info_text(&mut c, "latencystats").contains("latency_percentiles_usec_set:"), "calls made while off");
    c.cmd(&["SET", "a", "b"]);
    let stats = info_text(&mut c, "latencystats");
    let line = stats.lines().find(|l| l.starts_with("latency_percentiles_usec_set:")).expect("set has a line");
    assert!(line.contains(":p50=") && line.contains(",p99=") && line.contains(",p99.9="), "{line}");
    assert_eq!(histogram_calls(&mut c, &["set"]), vec![("set".to_string(), 1)]);

    c.cmd(&["CONFIG", "SET", "latency-tracking-info-percentiles", "0.0 50.0 100.0"]);
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "latency-tracking-info-percentiles"]),
        items_of(&["latency-tracking-info-percentiles", "0 50 100"])
    );
    let stats = info_text(&mut c, "latencystats");
    assert!(stats.contains("latency_percentiles_usec_set:p0="), "{stats}");
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "latency-tracking-info-percentiles", "10.0 50.0 101.0"]),
        err("ERR CONFIG SET failed (possibly related to argument 'latency-tracking-info-percentiles') - \
             latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
    );

    c.cmd(&["CONFIG", "SET", "latency-tracking-info-percentiles", "50"]);
    c.cmd(&["DEBUG", "SLEEP", "0.05"]);
    let stats = info_text(&mut c, "latencystats");
    let line = stats.lines().find(|l| l.starts_with("latency_percentiles_usec_debug:p50=")).expect("debug line");
    let p50: f64 = line.trim_start_matches("latency_percentiles_usec_debug:p50=").parse().expect("a number");
    assert!(p50 >= 50_000.0, "{line}");
    c.cmd(&["CONFIG", "RESETSTAT"]);
    assert!(!info_text(&mut c, "latencystats").contains("latency_percentiles_usec_set:"));
}

#[test]
fn getkeys_follows_key_specs_for_movable_keys() {
    let server = TestServer::start();
    let mut c = server.client();
    let mut words = vec!["COMMAND", "GETKEYS", "ZUNIONSTORE", "target", "260"];
    let keys: Vec<String> = (1..=260).map(|i| format!("key{i}")).collect();
    words.extend(keys.iter().map(String::as_str));
    let mut expected = vec!["target"];
    expected.extend(keys.iter().map(String::as_str));
    assert_eq!(c.cmd(&words), items_of(&expected));
    assert_eq!(c.cmd(&["COMMAND", "GETKEYS", "ZINTER", "2", "a", "b", "WITHSCORES"]), items_of(&["a", "b"]));
    assert_eq!(c.cmd(&["COMMAND", "GETKEYS", "LMPOP", "2", "a", "b", "LEFT"]), items_of(&["a", "b"]));
    assert_eq!(c.cmd(&["COMMAND", "GETKEYS", "BZMPOP", "0", "1", "z", "MIN"]), items_of(&["z"]));
    assert_eq!(c.cmd(&["COMMAND", "GETKEYS", "SINTERCARD", "2", "a", "b"]), items_of(&["a", "b"]));
    assert_eq!(
        c.cmd(&["COMMAND", "GETKEYS", "XREAD", "COUNT", "2", "STREAMS", "s1", "s2", "0", "0"]),
        items_of(&["s1", "s2"])
    );
    assert_eq!(c.cmd(&["COMMAND", "GETKEYS", "MEMORY", "USAGE", "key"]), items_of(&["key"]));
    assert_eq!(c.cmd(&["COMMAND", "GETKEYS", "EVAL", "return 1", "0"]), items_of(&[]));
    assert_eq!(
        c.cmd(&["COMMAND", "GETKEYS", "ZUNIONSTORE", "t", "3", "a"]),
        err("ERR Invalid arguments specified for command")
    );
    assert_eq!(c.cmd(&["COMMAND", "GETKEYS", "PING", "x"]), err("ERR The command has no key arguments"));
    assert_eq!(
        c.cmd(&["COMMAND", "GETKEYS", "GET"]),
        err("ERR wrong number of arguments for 'command|getkeys' command")
    );
}

#[test]
fn getkeysandflags_reports_each_key_s_access() {
    let server = TestServer::start();
    let mut c = server.client();
    let pair = |key: &str, flags: &[&str]| OwnedFrame::Array {
        data: vec![bulk(key), OwnedFrame::Array { data: flags.iter().map(|f| simple(f)).collect(), attributes: None }],
        attributes: None,
    };
    let list = |pairs: Vec<OwnedFrame>| OwnedFrame::Array { data: pairs, attributes: None };
    assert_eq!(c.cmd(&["COMMAND", "GETKEYSANDFLAGS", "set", "k1", "v1"]), list(vec![pair("k1", &["OW", "update"])]));
    assert_eq!(
        c.cmd(&["COMMAND", "GETKEYSANDFLAGS", "LMOVE", "k1", "k2", "left", "right"]),
        list(vec![pair("k1", &["RW", "access", "delete"]), pair("k2", &["RW", "insert"])])
    );
    assert_eq!(
        c.cmd(&["COMMAND", "GETKEYSANDFLAGS", "sort", "k1", "store", "k2"]),
        list(vec![pair("k1", &["RO", "access"]), pair("k2", &["OW", "update"])])
    );
}

#[test]
fn command_list_names_subcommands_and_filters_by_category() {
    let server = TestServer::start();
    let mut c = server.client();
    let names: Vec<String> = items(c.cmd(&["COMMAND", "LIST"])).iter().map(text).collect();
    assert!(names.iter().any(|n| n == "client|list"));
    let scripting: Vec<String> =
        items(c.cmd(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "scripting"])).iter().map(text).collect();
    assert!(scripting.iter().any(|n| n == "eval") && scripting.iter().any(|n| n == "script|kill"));
    assert!(!scripting.iter().any(|n| n == "set"));
    let config: Vec<String> =
        items(c.cmd(&["COMMAND", "LIST", "FILTERBY", "PATTERN", "config|*re*"])).iter().map(text).collect();
    assert!(config.iter().any(|n| n == "config|resetstat"));
}

#[test]
fn command_list_names_every_subcommand_the_server_answers() {
    let server = TestServer::start();
    let mut c = server.client();
    let help: Vec<String> =
        items(c.cmd(&["COMMAND", "LIST", "FILTERBY", "PATTERN", "cl*help"])).iter().map(text).collect();
    assert_eq!(help.len(), 2, "{help:?}");
    assert!(help.contains(&"client|help".to_string()) && help.contains(&"cluster|help".to_string()), "{help:?}");
    let names: Vec<String> = items(c.cmd(&["COMMAND", "LIST"])).iter().map(text).collect();
    for name in ["client|tracking", "client|unblock", "function|load", "function|stats", "acl|setuser", "acl|whoami"] {
        assert!(names.iter().any(|n| n == name), "{name} missing");
    }
    assert!(names.iter().any(|n| n == "memory|stats"), "MEMORY STATS is answered");
    let exact: Vec<String> =
        items(c.cmd(&["COMMAND", "LIST", "FILTERBY", "PATTERN", "set"])).iter().map(text).collect();
    assert_eq!(exact, vec!["set".to_string()]);
    assert!(items(c.cmd(&["COMMAND", "LIST", "FILTERBY", "PATTERN", "non_exists*"])).is_empty());
    // COMMAND INFO shows the subcommands too, as Redis's does.
    let info = items(c.cmd(&["COMMAND", "INFO", "cluster|keyslot"]));
    assert_eq!(info.len(), 1);
    assert_eq!(text(&items(info[0].clone())[0]), "cluster|keyslot");
}
