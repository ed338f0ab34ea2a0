//! Sorted set commands against the real server over RESP: replies, errors
//! and encodings as Redis 7.0.15 gives them.

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

fn arr(items: Vec<OwnedFrame>) -> OwnedFrame {
    OwnedFrame::Array { data: items, attributes: None }
}

fn bulks(words: &[&str]) -> OwnedFrame {
    arr(words.iter().map(|w| bulk(w)).collect())
}

fn double(value: f64) -> OwnedFrame {
    OwnedFrame::Double { data: value, attributes: None }
}

#[test]
fn zadd_options_and_their_errors() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["ZADD", "z", "10", "x", "20", "y", "30", "z"]), int(3));
    assert_eq!(c.cmd(&["ZADD", "z", "GT", "CH", "5", "foo", "11", "x", "21", "y", "29", "z"]), int(3));
    assert_eq!(c.cmd(&["ZADD", "z", "LT", "CH", "5", "foo", "12", "x", "1", "y"]), int(1));
    assert_eq!(c.cmd(&["ZADD", "z", "XX", "100", "new", "1", "x"]), int(0));
    assert_eq!(c.cmd(&["ZADD", "z", "NX", "100", "x", "7", "new"]), int(1));
    assert_eq!(c.cmd(&["ZSCORE", "z", "x"]), bulk("1"));
    assert_eq!(c.cmd(&["ZADD", "z", "INCR", "0.5", "x"]), bulk("1.5"));
    assert_eq!(c.cmd(&["ZADD", "z", "LT", "INCR", "1", "x"]), null_bulk_resp2());
    assert_eq!(c.cmd(&["ZINCRBY", "z", "-0.5", "x"]), bulk("1"));
    assert_eq!(c.cmd(&["ZADD", "missing", "XX", "1", "a"]), int(0));
    assert_eq!(c.cmd(&["EXISTS", "missing"]), int(0));
    assert_eq!(
        c.cmd(&["ZADD", "z", "XX", "NX", "1", "a"]),
        err("ERR XX and NX options at the same time are not compatible")
    );
    let gt_lt = err("ERR GT, LT, and/or NX options at the same time are not compatible");
    assert_eq!(c.cmd(&["ZADD", "z", "GT", "LT", "1", "a"]), gt_lt);
    assert_eq!(c.cmd(&["ZADD", "z", "NX", "GT", "1", "a"]), gt_lt);
    assert_eq!(
        c.cmd(&["ZADD", "z", "INCR", "1", "a", "2", "b"]),
        err("ERR INCR option supports a single increment-element pair")
    );
    assert_eq!(c.cmd(&["ZADD", "z", "1", "a", "2"]), err("ERR syntax error"));
    assert_eq!(c.cmd(&["ZADD", "z", "1", "a", "nan", "b"]), err("ERR value is not a valid float"));
    assert_eq!(c.cmd(&["ZADD", "z", "", "b"]), err("ERR value is not a valid float"));
    assert_eq!(c.cmd(&["ZINCRBY", "z", "1", "a", "2"]), err("ERR wrong number of arguments for 'zincrby' command"));
    assert_eq!(c.cmd(&["ZADD", "inf", "+inf", "a"]), int(1));
    assert_eq!(c.cmd(&["ZINCRBY", "inf", "-inf", "a"]), err("ERR resulting score is not a number (NaN)"));
    c.cmd(&["SET", "s", "v"]);
    let wrongtype = err("WRONGTYPE Operation against a key holding the wrong kind of value");
    for cmd in [&["ZADD", "s", "1", "a"][..], &["ZSCORE", "s", "a"], &["ZRANGE", "s", "0", "-1"], &["ZCARD", "s"]] {
        assert_eq!(c.cmd(cmd), wrongtype, "{cmd:?}");
    }
}

#[test]
fn scores_are_printed_as_percent_17g() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["ZADD", "z", "0.1", "a", "1e20", "b", "1.5e-7", "c", "-inf", "d", "-0", "e"]);
    assert_eq!(
        c.cmd(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        bulks(&["d", "-inf", "e", "0", "c", "1.4999999999999999e-07", "a", "0.10000000000000001", "b", "1e+20"])
    );
    // A listpack stores -0 as the integer 0; a skiplist keeps the double.
    c.cmd(&["ZADD", "big", "1", &"x".repeat(65), "-0", "e"]);
    assert_eq!(c.cmd(&["ZSCORE", "big", "e"]), bulk("-0"));
    assert_eq!(c.cmd(&["ZMSCORE", "z", "a", "nope"]), arr(vec![bulk("0.10000000000000001"), OwnedFrame::Null]));
    c.resp3 = true;
    c.cmd(&["HELLO", "3"]);
    assert_eq!(c.cmd(&["ZSCORE", "z", "b"]), double(1e20));
    assert_eq!(
        c.cmd(&["ZRANGE", "z", "-2", "-1", "WITHSCORES"]),
        arr(vec![arr(vec![bulk("a"), double(0.1)]), arr(vec![bulk("b"), double(1e20)])])
    );
}

#[test]
fn range_forms() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["ZADD", "z", "-inf", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "f", "+inf", "g"]);
    assert_eq!(c.cmd(&["ZRANGE", "z", "1", "-2"]), bulks(&["b", "c", "d", "e", "f"]));
    assert_eq!(c.cmd(&["ZREVRANGE", "z", "0", "1", "WITHSCORES"]), bulks(&["g", "inf", "f", "5"]));
    assert_eq!(c.cmd(&["ZRANGEBYSCORE", "z", "(1", "3"]), bulks(&["c", "d"]));
    assert_eq!(c.cmd(&["ZREVRANGEBYSCORE", "z", "+inf", "(4", "LIMIT", "1", "5"]), bulks(&["f"]));
    assert_eq!(
        c.cmd(&["ZRANGE", "z", "5", "0", "BYSCORE", "REV", "LIMIT", "0", "2", "WITHSCORES"]),
        bulks(&["f", "5", "e", "4"])
    );
    assert_eq!(c.cmd(&["ZCOUNT", "z", "(0", "(3"]), int(2));
    assert_eq!(c.cmd(&["ZRANK", "z", "c"]), int(2));
    assert_eq!(c.cmd(&["ZREVRANK", "z", "c"]), int(4));
    assert_eq!(c.cmd(&["ZRANK", "z", "nope"]), null_bulk_resp2());
    assert_eq!(c.cmd(&["ZRANGEBYSCORE", "z", "str", "1"]), err("ERR min or max is not a float"));
    assert_eq!(
        c.cmd(&["ZRANGE", "z", "0", "-1", "LIMIT", "1", "2"]),
        err("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
    );
    assert_eq!(c.cmd(&["ZREVRANGE", "z", "0", "-1", "BYSCORE"]), err("ERR syntax error"));
    assert_eq!(c.cmd(&["ZRANGE", "nokey", "0", "-1"]), arr(vec![]));

    c.cmd(&["ZADD", "lex", "0", "alpha", "0", "bar", "0", "cool", "0", "down", "0", "elephant", "0", "foo"]);
    assert_eq!(c.cmd(&["ZRANGEBYLEX", "lex", "-", "[cool"]), bulks(&["alpha", "bar", "cool"]));
    assert_eq!(c.cmd(&["ZREVRANGEBYLEX", "lex", "+", "(down", "LIMIT", "0", "1"]), bulks(&["foo"]));
    assert_eq!(c.cmd(&["ZLEXCOUNT", "lex", "(bar", "+"]), int(4));
    assert_eq!(c.cmd(&["ZRANGEBYLEX", "lex", "foo", "+"]), err("ERR min or max not valid string range item"));
    assert_eq!(
        c.cmd(&["ZRANGE", "lex", "-", "+", "BYLEX", "WITHSCORES"]),
        err("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
    );

    assert_eq!(c.cmd(&["ZRANGESTORE", "dst", "z", "1", "2", "BYSCORE"]), int(2));
    assert_eq!(c.cmd(&["ZRANGE", "dst", "0", "-1", "WITHSCORES"]), bulks(&["b", "1", "c", "2"]));
    assert_eq!(c.cmd(&["ZRANGESTORE", "dst", "z", "10", "20"]), int(0));
    assert_eq!(c.cmd(&["EXISTS", "dst"]), int(0));
    assert_eq!(c.cmd(&["ZRANGESTORE", "dst", "z", "0", "-1", "WITHSCORES"]), err("ERR syntax error"));
}

#[test]
fn removals_delete_empty_keys() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"]);
    assert_eq!(c.cmd(&["ZREM", "z", "a", "nope"]), int(1));
    assert_eq!(c.cmd(&["ZREMRANGEBYRANK", "z", "0", "0"]), int(1));
    assert_eq!(c.cmd(&["ZREMRANGEBYSCORE", "z", "(3", "+inf"]), int(2));
    assert_eq!(c.cmd(&["ZRANGE", "z", "0", "-1"]), bulks(&["c"]));
    assert_eq!(c.cmd(&["ZREMRANGEBYLEX", "z", "-", "+"]), int(1));
    assert_eq!(c.cmd(&["EXISTS", "z"]), int(0));
    assert_eq!(c.cmd(&["ZREM", "z", "a"]), int(0));
}

#[test]
fn encodings_convert_one_way_and_copy_keeps_them() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["ZADD", "z", "1", "a"]);
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "z"]), bulk("listpack"));
    let long = "x".repeat(65);
    c.cmd(&["ZADD", "z", "2", &long]);
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "z"]), bulk("skiplist"));
    c.cmd(&["ZREM", "z", &long]);
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "z"]), bulk("skiplist"));

    // No CONFIG SET here: the limits are process-wide and tests run in parallel.
    for i in 0..128 {
        c.cmd(&["ZADD", "small", &i.to_string(), &format!("m{i}")]);
    }
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "small"]), bulk("listpack"));
    c.cmd(&["ZADD", "small", "128", "m128"]);
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "small"]), bulk("skiplist"));
    assert_eq!(c.cmd(&["ZRANGESTORE", "two", "small", "0", "1"]), int(2));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "two"]), bulk("listpack"));
    assert_eq!(c.cmd(&["ZUNIONSTORE", "all", "1", "small"]), int(129));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "all"]), bulk("skiplist"));
    assert_eq!(c.cmd(&["ZREMRANGEBYRANK", "all", "2", "-1"]), int(127));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "all"]), bulk("skiplist"));

    for key in ["small", "two"] {
        let copy = format!("{key}-copy");
        assert_eq!(c.cmd(&["COPY", key, &copy]), int(1));
        assert_eq!(c.cmd(&["OBJECT", "ENCODING", &copy]), c.cmd(&["OBJECT", "ENCODING", key]));
        assert_eq!(c.cmd(&["DEBUG", "DIGEST-VALUE", &copy]), c.cmd(&["DEBUG", "DIGEST-VALUE", key]));
        assert_eq!(
            c.cmd(&["ZRANGE", &copy, "0", "-1", "WITHSCORES"]),
            c.cmd(&["ZRANGE", key, "0", "-1", "WITHSCORES"])
        );
    }
}

#[test]
fn pops_reply_shapes() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"]);
    assert_eq!(c.cmd(&["ZPOPMIN", "z"]), bulks(&["a", "1"]));
    assert_eq!(c.cmd(&["ZPOPMAX", "z", "2"]), bulks(&["d", "4", "c", "3"]));
    assert_eq!(c.cmd(&["ZPOPMIN", "z", "0"]), arr(vec![]));
    assert_eq!(c.cmd(&["ZPOPMIN", "z", "-1"]), err("ERR value is out of range, must be positive"));
    assert_eq!(
        c.cmd(&["ZMPOP", "2", "nokey", "z", "MIN", "COUNT", "5"]),
        arr(vec![bulk("z"), arr(vec![bulks(&["b", "2"])])])
    );
    assert_eq!(c.cmd(&["EXISTS", "z"]), int(0));
    assert_eq!(c.cmd(&["ZMPOP", "1", "z", "MIN"]), OwnedFrame::Null);
    assert_eq!(c.cmd(&["ZPOPMIN", "z"]), arr(vec![]));
    assert_eq!(c.cmd(&["ZMPOP", "0", "z", "MIN"]), err("ERR numkeys should be greater than 0"));
    assert_eq!(c.cmd(&["ZMPOP", "1", "z", "MIN", "COUNT", "0"]), err("ERR count should be greater than 0"));
    assert_eq!(c.cmd(&["ZMPOP", "1", "z", "MAX", "MIN"]), err("ERR syntax error"));

    c.resp3 = true;
    c.cmd(&["HELLO", "3"]);
    c.cmd(&["ZADD", "z", "1", "a", "2", "b"]);
    assert_eq!(c.cmd(&["ZPOPMIN", "z"]), arr(vec![bulk("a"), double(1.0)]));
    assert_eq!(c.cmd(&["ZPOPMAX", "z", "1"]), arr(vec![arr(vec![bulk("b"), double(2.0)])]));
    assert_eq!(c.cmd(&["ZMPOP", "1", "z", "MIN"]), OwnedFrame::Null);
}

#[test]
fn set_operations() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["ZADD", "a", "1", "a", "2", "b", "3", "c"]);
    c.cmd(&["ZADD", "b", "1", "b", "2", "c", "3", "d"]);
    assert_eq!(c.cmd(&["ZUNION", "2", "a", "b", "WITHSCORES"]), bulks(&["a", "1", "b", "3", "d", "3", "c", "5"]));
    assert_eq!(c.cmd(&["ZINTER", "2", "a", "b", "WEIGHTS", "2", "3", "WITHSCORES"]), bulks(&["b", "7", "c", "12"]));
    assert_eq!(c.cmd(&["ZUNIONSTORE", "u", "2", "a", "b", "AGGREGATE", "MAX"]), int(4));
    assert_eq!(c.cmd(&["ZRANGE", "u", "0", "-1", "WITHSCORES"]), bulks(&["a", "1", "b", "2", "c", "3", "d", "3"]));
    assert_eq!(c.cmd(&["ZDIFF", "2", "a", "b", "WITHSCORES"]), bulks(&["a", "1"]));
    assert_eq!(c.cmd(&["ZDIFFSTORE", "d", "2", "a", "a"]), int(0));
    assert_eq!(c.cmd(&["ZINTERCARD", "2", "a", "b", "LIMIT", "1"]), int(1));
    assert_eq!(c.cmd(&["ZINTERCARD", "2", "a", "b", "LIMIT", "-1"]), err("ERR LIMIT can't be negative"));
    assert_eq!(c.cmd(&["ZUNION", "0", "a"]), err("ERR at least 1 input key is needed for 'zunion' command"));
    assert_eq!(
        c.cmd(&["ZINTERSTORE", "x", "0", "a"]),
        err("ERR at least 1 input key is needed for 'zinterstore' command")
    );
    assert_eq!(c.cmd(&["ZUNION", "3", "a", "b"]), err("ERR syntax error"));
    assert_eq!(c.cmd(&["ZUNIONSTORE", "x", "2", "a", "b", "WITHSCORES"]), err("ERR syntax error"));
    assert_eq!(c.cmd(&["ZUNION", "2", "a", "b", "WEIGHTS", "nan", "1"]), err("ERR weight value is not a float"));
    c.cmd(&["SADD", "plain", "a", "b", "c", "100"]);
    assert_eq!(c.cmd(&["ZUNIONSTORE", "mixed", "2", "plain", "b", "WEIGHTS", "2", "3"]), int(5));
    assert_eq!(
        c.cmd(&["ZRANGE", "mixed", "0", "-1", "WITHSCORES"]),
        bulks(&["100", "2", "a", "2", "b", "5", "c", "8", "d", "9"])
    );
    assert_eq!(c.cmd(&["ZINTER", "2", "plain", "b", "WITHSCORES"]), bulks(&["b", "2", "c", "3"]));
    assert_eq!(c.cmd(&["ZDIFF", "2", "plain", "a"]), bulks(&["100"]));
    c.cmd(&["ZADD", "inf1", "+inf", "k"]);
    c.cmd(&["ZADD", "inf2", "-inf", "k"]);
    assert_eq!(c.cmd(&["ZUNIONSTORE", "sum", "2", "inf1", "inf2"]), int(1));
    assert_eq!(c.cmd(&["ZSCORE", "sum", "k"]), bulk("0"));
    assert_eq!(c.cmd(&["ZUNIONSTORE", "w0", "1", "inf2", "WEIGHTS", "0"]), int(1));
    assert_eq!(c.cmd(&["ZSCORE", "w0", "k"]), bulk("0"));
    c.cmd(&["SET", "str", "x"]);
    assert_eq!(
        c.cmd(&["ZUNION", "2", "a", "str"]),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
}

#[test]
fn random_members_and_scan() {
    let server = TestServer::start();
    let mut c = server.client();
    let mut args: Vec<String> = vec!["ZADD".into(), "big".into()];
    for i in 0..1000 {
        args.push(i.to_string());
        args.push(format!("key:{i}"));
    }
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(c.cmd(&words), int(1000));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "big"]), bulk("skiplist"));
    let mut seen = std::collections::HashSet::new();
    let mut cursor = "0".to_string();
    loop {
        let OwnedFrame::Array { data, .. } = c.cmd(&["ZSCAN", "big", &cursor, "COUNT", "50"]) else { panic!("array") };
        let [OwnedFrame::BlobString { data: next, .. }, OwnedFrame::Array { data: items, .. }] = &data[..] else {
            panic!("scan reply shape")
        };
        for pair in items.chunks(2) {
            let (OwnedFrame::BlobString { data: m, .. }, OwnedFrame::BlobString { data: s, .. }) = (&pair[0], &pair[1])
            else {
                panic!("member/score")
            };
            assert_eq!(String::from_utf8_lossy(m), format!("key:{}", String::from_utf8_lossy(s)));
            seen.insert(m.clone());
        }
        cursor = String::from_utf8_lossy(next).into_owned();
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 1000);

    let OwnedFrame::Array { data, .. } = c.cmd(&["ZRANDMEMBER", "big", "20"]) else { panic!("array") };
    let distinct: std::collections::HashSet<_> = data.iter().collect();
    assert_eq!(distinct.len(), 20);
    let OwnedFrame::Array { data, .. } = c.cmd(&["ZRANDMEMBER", "big", "-5", "WITHSCORES"]) else { panic!("array") };
    assert_eq!(data.len(), 10);
    assert_eq!(c.cmd(&["ZRANDMEMBER", "nokey"]), null_bulk_resp2());
    assert_eq!(c.cmd(&["ZRANDMEMBER", "nokey", "5"]), arr(vec![]));
    assert_eq!(
        c.cmd(&["ZRANDMEMBER", "big", "-9223372036854775808"]),
        err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    );
    assert_eq!(c.cmd(&["ZRANDMEMBER", "big", "-9223372036854770000", "WITHSCORES"]), err("ERR value is out of range"));
}

#[test]
fn blocking_pops_wait_for_a_sorted_set() {
    let server = TestServer::start();
    let mut c = server.client();
    let mut waiter = server.client();
    c.cmd(&["ZADD", "z", "1", "a", "2", "b"]);
    assert_eq!(c.cmd(&["BZPOPMAX", "none", "z", "0"]), bulks(&["z", "b", "2"]));
    assert_eq!(
        c.cmd(&["BZMPOP", "0", "1", "z", "MIN", "COUNT", "5"]),
        arr(vec![bulk("z"), arr(vec![bulks(&["a", "1"])])])
    );
    assert_eq!(c.cmd(&["BZPOPMIN", "z", "0.01"]), OwnedFrame::Null);
    assert_eq!(c.cmd(&["BZPOPMIN", "z", "-1"]), err("ERR timeout is negative"));
    c.cmd(&["SET", "s", "x"]);
    assert_eq!(
        c.cmd(&["BZPOPMIN", "s", "0"]),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );

    waiter.send_raw(&Client::encode(&[b"BZPOPMIN", b"q1", b"q2", b"0"]));
    let blocked = |c: &mut Client| match c.cmd(&["INFO", "clients"]) {
        OwnedFrame::BlobString { data, .. } => String::from_utf8_lossy(&data).contains("blocked_clients:1"),
        _ => false,
    };
    while !blocked(&mut c) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    c.cmd(&["ZUNIONSTORE", "q2", "1", "nokey"]);
    c.cmd(&["ZADD", "q2", "7", "m"]);
    assert_eq!(waiter.read(), bulks(&["q2", "m", "7"]));
    assert_eq!(c.cmd(&["EXISTS", "q2"]), int(0));
}
