//! GEO commands against the real server over RESP: replies (byte for byte
//! where Redis's number formats matter), errors, stored results and their
//! keyspace events, blocked clients, WATCH, and a restart from the log. The
//! expected values are Redis 7.0.15's.

use std::io::{Read, Write};

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

fn arr(items: Vec<OwnedFrame>) -> OwnedFrame {
    OwnedFrame::Array { data: items, attributes: None }
}

fn bulks(words: &[&str]) -> OwnedFrame {
    arr(words.iter().map(|w| bulk(w)).collect())
}

fn sicily(c: &mut Client, key: &str) {
    let reply = c.cmd(&["GEOADD", key, "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"]);
    assert_eq!(reply, int(2));
}

/// Sends a command and returns its reply's raw bytes (one complete frame).
fn raw(c: &mut Client, words: &[&str]) -> Vec<u8> {
    let args: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
    c.stream.write_all(&Client::encode(&args)).expect("write");
    let mut buf = Vec::new();
    loop {
        let used = if c.resp3 {
            redis_protocol::resp3::decode::complete::decode(&buf).ok().flatten().map(|(_, used)| used)
        } else {
            redis_protocol::resp2::decode::decode(&buf).ok().flatten().map(|(_, used)| used)
        };
        if let Some(used) = used {
            assert_eq!(used, buf.len(), "one reply");
            return buf;
        }
        let mut chunk = [0u8; 4096];
        let n = c.stream.read(&mut chunk).expect("read");
        assert!(n > 0, "closed");
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[test]
fn geoadd_options_and_errors() {
    let server = TestServer::start();
    let mut c = server.client();
    sicily(&mut c, "Sicily");
    assert_eq!(c.cmd(&["GEOADD", "Sicily", "13.361389", "38.115556", "Palermo"]), int(0));
    assert_eq!(c.cmd(&["GEOADD", "Sicily", "CH", "13", "38", "Palermo", "15", "37", "New"]), int(2));
    assert_eq!(c.cmd(&["GEOADD", "Sicily", "XX", "CH", "1", "1", "Palermo", "2", "2", "Other"]), int(1));
    assert_eq!(c.cmd(&["GEOADD", "Sicily", "NX", "0", "0", "Palermo"]), int(0));
    assert_eq!(c.cmd(&["ZSCORE", "Sicily", "Catania"]), bulk("3479447370796909"));
    assert_eq!(c.cmd(&["GEOADD", "Sicily", "XX", "NX", "1", "1", "a"]), err("ERR syntax error"));
    assert_eq!(c.cmd(&["GEOADD", "Sicily", "CH", "XX", "foo", "1", "1", "a"]), err("ERR syntax error"));
    assert_eq!(c.cmd(&["GEOADD", "Sicily", "1", "2", "a", "3"]), err("ERR syntax error"));
    assert_eq!(
        c.cmd(&["GEOADD", "Sicily", "1", "1", "a", "200", "0", "b"]),
        err("ERR invalid longitude,latitude pair 200.000000,0.000000")
    );
    assert_eq!(
        c.cmd(&["GEOADD", "Sicily", "0", "-85.06", "b"]),
        err("ERR invalid longitude,latitude pair 0.000000,-85.060000")
    );
    assert_eq!(c.cmd(&["GEOADD", "Sicily", "x", "0", "b"]), err("ERR value is not a valid float"));
    assert_eq!(c.cmd(&["GEOADD", "Sicily", "1e400", "0", "b"]), err("ERR value is not a valid float"));
    assert_eq!(c.cmd(&["ZCARD", "Sicily"]), int(3), "a failed GEOADD adds nothing");
    assert_eq!(c.cmd(&["GEOADD", "Sicily"]), err("ERR wrong number of arguments for 'geoadd' command"));
    c.cmd(&["SET", "s", "v"]);
    let wrongtype = err("WRONGTYPE Operation against a key holding the wrong kind of value");
    for cmd in [
        &["GEOADD", "s", "1", "1", "a"][..],
        &["GEOPOS", "s", "a"],
        &["GEODIST", "s", "a", "b"],
        &["GEOHASH", "s", "a"],
        &["GEOSEARCH", "s", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"],
        &["GEOSEARCHSTORE", "d", "s", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"],
        &["GEORADIUS", "s", "0", "0", "1", "km"],
        &["GEORADIUSBYMEMBER_RO", "s", "a", "1", "km"],
    ] {
        assert_eq!(c.cmd(cmd), wrongtype, "{cmd:?}");
    }
}

#[test]
fn positions_distances_and_hashes_are_formatted_as_redis_does() {
    let server = TestServer::start();
    let mut c = server.client();
    sicily(&mut c, "Sicily");
    assert_eq!(
        raw(&mut c, &["GEOPOS", "Sicily", "Palermo", "nope"]),
        b"*2\r\n*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n*-1\r\n"
    );
    assert_eq!(raw(&mut c, &["GEODIST", "Sicily", "Palermo", "Catania"]), b"$11\r\n166274.1516\r\n");
    assert_eq!(c.cmd(&["GEODIST", "Sicily", "Palermo", "Catania", "KM"]), bulk("166.2742"));
    assert_eq!(c.cmd(&["GEODIST", "Sicily", "Palermo", "Catania", "mi"]), bulk("103.3182"));
    assert_eq!(c.cmd(&["GEODIST", "Sicily", "Palermo", "Palermo"]), bulk("0.0000"));
    assert_eq!(c.cmd(&["GEODIST", "Sicily", "Palermo", "nope"]), OwnedFrame::Null);
    assert_eq!(c.cmd(&["GEODIST", "nokey", "Palermo", "Catania"]), OwnedFrame::Null);
    assert_eq!(
        c.cmd(&["GEODIST", "Sicily", "Palermo", "Catania", "yd"]),
        err("ERR unsupported unit provided. please use M, KM, FT, MI")
    );
    assert_eq!(c.cmd(&["GEODIST", "Sicily", "Palermo", "Catania", "km", "x"]), err("ERR syntax error"));
    assert_eq!(
        raw(&mut c, &["GEOHASH", "Sicily", "Palermo", "Catania", "nope"]),
        b"*3\r\n$11\r\nsqc8b49rny0\r\n$11\r\nsqdtr74hyu0\r\n$-1\r\n"
    );
    assert_eq!(c.cmd(&["GEOHASH", "nokey", "a"]), arr(vec![OwnedFrame::Null]));
    // RESP3: coordinates are doubles, distances stay bulk strings.
    c.resp3 = true;
    c.cmd(&["HELLO", "3"]);
    assert_eq!(
        raw(&mut c, &["GEOPOS", "Sicily", "Palermo", "nope"]),
        b"*2\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n_\r\n"
    );
    assert_eq!(raw(&mut c, &["GEODIST", "Sicily", "Palermo", "Catania", "km"]), b"$8\r\n166.2742\r\n");
}

#[test]
fn searches_by_radius_and_box() {
    let server = TestServer::start();
    let mut c = server.client();
    sicily(&mut c, "Sicily");
    assert_eq!(
        c.cmd(&[
            "GEOSEARCH",
            "Sicily",
            "FROMLONLAT",
            "15",
            "37",
            "BYRADIUS",
            "200",
            "km",
            "ASC",
            "WITHCOORD",
            "WITHDIST",
            "WITHHASH"
        ]),
        arr(vec![
            arr(vec![
                bulk("Catania"),
                bulk("56.4413"),
                int(3479447370796909),
                bulks(&["15.08726745843887329", "37.50266842333162032"]),
            ]),
            arr(vec![
                bulk("Palermo"),
                bulk("190.4424"),
                int(3479099956230698),
                bulks(&["13.36138933897018433", "38.11555639549629859"]),
            ]),
        ])
    );
    assert_eq!(c.cmd(&["GEORADIUS", "Sicily", "15", "37", "100", "km"]), bulks(&["Catania"]));
    assert_eq!(c.cmd(&["GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "DESC"]), bulks(&["Palermo", "Catania"]));
    assert_eq!(c.cmd(&["GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "1"]), bulks(&["Catania"]));
    // ANY stops at the first point found, scanning cell by cell.
    assert_eq!(
        c.cmd(&["GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "1", "ANY", "WITHDIST"]),
        arr(vec![arr(vec![bulk("Palermo"), bulk("190.4424")])])
    );
    assert_eq!(
        c.cmd(&["GEORADIUSBYMEMBER", "Sicily", "Palermo", "170", "km", "WITHDIST"]),
        arr(vec![arr(vec![bulk("Palermo"), bulk("0.0000")]), arr(vec![bulk("Catania"), bulk("166.2742")])])
    );
    assert_eq!(
        c.cmd(&["GEOSEARCH", "Sicily", "FROMMEMBER", "Catania", "BYBOX", "400", "400", "km", "ASC"]),
        bulks(&["Catania", "Palermo"])
    );
    assert_eq!(c.cmd(&["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "2", "km"]), arr(vec![]));
    assert_eq!(c.cmd(&["GEOSEARCH", "nokey", "FROMMEMBER", "x", "BYRADIUS", "1", "km"]), arr(vec![]));
    assert_eq!(c.cmd(&["GEORADIUSBYMEMBER", "nokey", "x", "-1", "km"]), arr(vec![]), "no set: radius unread");
}

#[test]
fn search_errors() {
    let server = TestServer::start();
    let mut c = server.client();
    sicily(&mut c, "Sicily");
    let cases: &[(&[&str], &str)] = &[
        (
            &["GEOSEARCH", "Sicily", "FROMMEMBER", "nope", "BYRADIUS", "-1", "km"],
            "ERR could not decode requested zset member",
        ),
        (&["GEORADIUSBYMEMBER", "Sicily", "nope", "1", "km"], "ERR could not decode requested zset member"),
        (&["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "-1", "km"], "ERR radius cannot be negative"),
        (&["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "x", "km"], "ERR need numeric radius"),
        (&["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "x", "y", "km"], "ERR need numeric width"),
        (&["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "1", "y", "km"], "ERR need numeric height"),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "1", "-1", "km"],
            "ERR height or width cannot be negative",
        ),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "1", "1", "yd"],
            "ERR unsupported unit provided. please use M, KM, FT, MI",
        ),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "COUNT", "0"],
            "ERR COUNT must be > 0",
        ),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "COUNT", "x"],
            "ERR value is not an integer or out of range",
        ),
        (&["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "COUNT"], "ERR syntax error"),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "ANY"],
            "ERR the ANY argument requires COUNT argument",
        ),
        (&["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "STOREDIST"], "ERR syntax error"),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km"],
            "ERR syntax error",
        ),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "BYBOX", "1", "1", "km"],
            "ERR syntax error",
        ),
        (
            &["geoSearch", "Sicily", "BYRADIUS", "1", "km", "ASC", "DESC"],
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for geoSearch",
        ),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "ASC", "DESC"],
            "ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH",
        ),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "99", "BYRADIUS", "1", "km"],
            "ERR invalid longitude,latitude pair 15.000000,99.000000",
        ),
        (
            &["GEORADIUS", "Sicily", "15", "37", "1", "km", "STORE", "d", "WITHDIST"],
            "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
        ),
        (
            &["GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "WITHHASH"],
            "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
        ),
        (
            &["GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "STORE", "d"],
            "ERR syntax error",
        ),
        (&["GEORADIUS_RO", "Sicily", "15", "37", "1", "km", "STORE", "d"], "ERR syntax error"),
        (&["GEORADIUS", "Sicily", "15", "37", "1", "km", "FROMMEMBER", "x"], "ERR syntax error"),
        (&["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37"], "ERR wrong number of arguments for 'geosearch' command"),
    ];
    for (cmd, message) in cases {
        assert_eq!(c.cmd(cmd), err(message), "{cmd:?}");
    }
}

#[test]
fn stores_notify_and_serve_blocked_clients() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    sicily(&mut c, "src");
    let mut sub = server.client();
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    let next_event = |sub: &mut Client| match sub.read() {
        OwnedFrame::Array { data, .. } => match (&data[2], &data[3]) {
            (OwnedFrame::BlobString { data: channel, .. }, OwnedFrame::BlobString { data: key, .. }) => {
                (String::from_utf8_lossy(channel).into_owned(), String::from_utf8_lossy(key).into_owned())
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };

    let mut waiter = server.client();
    waiter.send_raw(&Client::encode(&[b"BZPOPMIN", b"dst", b"0"]));
    std::thread::sleep(std::time::Duration::from_millis(100));
    let store = ["GEOSEARCHSTORE", "dst", "src", "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km", "ASC", "COUNT", "1"];
    assert_eq!(c.cmd(&store), int(1));
    assert_eq!(waiter.read(), arr(vec![bulk("dst"), bulk("Palermo"), bulk("3479099956230698")]));
    assert_eq!(next_event(&mut sub), ("__keyevent@0__:geosearchstore".into(), "dst".into()));
    assert_eq!(next_event(&mut sub), ("__keyevent@0__:zpopmin".into(), "dst".into()));
    assert_eq!(next_event(&mut sub), ("__keyevent@0__:del".into(), "dst".into()));

    assert_eq!(c.cmd(&["GEORADIUS", "src", "15", "37", "200", "km", "STOREDIST", "dst"]), int(2));
    assert_eq!(next_event(&mut sub), ("__keyevent@0__:georadiusstore".into(), "dst".into()));
    assert_eq!(
        c.cmd(&["ZRANGE", "dst", "0", "-1", "WITHSCORES"]),
        bulks(&["Catania", "56.441257870158204", "Palermo", "190.44242984775784"])
    );
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "dst"]), bulk("listpack"));
    assert_eq!(c.cmd(&["GEORADIUSBYMEMBER", "src", "Palermo", "1", "m", "STORE", "dst"]), int(1));
    assert_eq!(next_event(&mut sub), ("__keyevent@0__:georadiusstore".into(), "dst".into()));
    // Nothing found: the destination is deleted.
    assert_eq!(c.cmd(&["GEORADIUS", "src", "0", "0", "1", "m", "STORE", "dst"]), int(0));
    assert_eq!(next_event(&mut sub), ("__keyevent@0__:del".into(), "dst".into()));
    assert_eq!(c.cmd(&["GEOSEARCHSTORE", "dst", "nokey", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"]), int(0));
    assert_eq!(c.cmd(&["EXISTS", "dst"]), int(0));
    c.cmd(&["GEOADD", "src", "10", "10", "x"]);
    assert_eq!(next_event(&mut sub), ("__keyevent@0__:zadd".into(), "src".into()));
}

#[test]
fn georadius_touches_watchers_of_its_destination_only() {
    let server = TestServer::start();
    let mut c = server.client();
    sicily(&mut c, "src");
    let mut other = server.client();
    c.cmd(&["WATCH", "dst"]);
    assert_eq!(other.cmd(&["GEORADIUS", "src", "15", "37", "200", "km", "STORE", "dst"]), int(2));
    c.cmd(&["MULTI"]);
    c.cmd(&["PING"]);
    assert_eq!(c.cmd(&["EXEC"]), OwnedFrame::Null);
    // Without STORE, GEORADIUS writes nothing: its source's WATCHers are left alone.
    c.cmd(&["WATCH", "src"]);
    assert_eq!(other.cmd(&["GEORADIUS", "src", "15", "37", "100", "km"]), bulks(&["Catania"]));
    c.cmd(&["MULTI"]);
    c.cmd(&["PING"]);
    assert_eq!(c.cmd(&["EXEC"]), arr(vec![simple("PONG")]));
    assert_eq!(
        c.cmd(&["COMMAND", "GETKEYS", "GEORADIUS", "src", "0", "0", "1", "m", "STORE", "dst"]),
        bulks(&["src", "dst"])
    );
    assert_eq!(
        c.cmd(&["COMMAND", "GETKEYS", "GEOSEARCHSTORE", "dst", "src", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"]),
        bulks(&["dst", "src"])
    );
}

#[test]
fn geo_data_survives_a_restart() {
    let sync = |config: &mut cairn_server::Config| config.durability = cairn_engine::durability::Tier::Sync;
    let mut first = TestServer::start_with(sync);
    {
        let mut c = first.client();
        sicily(&mut c, "Sicily");
        assert_eq!(c.cmd(&["GEOADD", "Sicily", "XX", "CH", "13.5", "38.2", "Palermo"]), int(1));
        assert_eq!(
            c.cmd(&["GEOSEARCHSTORE", "near", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "100", "km"]),
            int(1)
        );
        assert_eq!(c.cmd(&["GEORADIUS", "Sicily", "15", "37", "300", "km", "STOREDIST", "dist"]), int(2));
        assert_eq!(c.cmd(&["GEORADIUS", "Sicily", "15", "37", "300", "km", "ASC"]), bulks(&["Catania", "Palermo"]));
        c.cmd(&["MULTI"]);
        c.cmd(&["GEOADD", "Sicily", "12.5", "37.8", "Marsala"]);
        c.cmd(&["GEORADIUSBYMEMBER", "Sicily", "Marsala", "1", "km", "STORE", "marsala"]);
        assert_eq!(c.cmd(&["EXEC"]), arr(vec![int(1), int(1)]));
    }
    let expected: Vec<(Vec<&str>, OwnedFrame)> = {
        let mut c = first.client();
        [
            vec!["GEOPOS", "Sicily", "Palermo", "Catania", "Marsala"],
            vec!["ZRANGE", "near", "0", "-1", "WITHSCORES"],
            vec!["ZRANGE", "dist", "0", "-1", "WITHSCORES"],
            vec!["ZRANGE", "marsala", "0", "-1", "WITHSCORES"],
        ]
        .into_iter()
        .map(|cmd| {
            let reply = c.cmd(&cmd);
            (cmd, reply)
        })
        .collect()
    };
    let dir = first.dir.clone();
    first.running.take().expect("running").stop();
    // The log replays every write through the same handlers.
    let mut config = cairn_server::Config::for_tests(&dir);
    sync(&mut config);
    let second = cairn_server::start(config, cairn_server::Shutdown::new()).expect("restart");
    let mut c = Client::connect(second.addr);
    for (cmd, reply) in &expected {
        assert_eq!(&c.cmd(cmd), reply, "{cmd:?}");
    }
    assert_eq!(c.cmd(&["GEODIST", "Sicily", "Palermo", "Marsala", "km"]), bulk("98.2924"));
    second.stop();
}
