//! SORT against the real server: its keys as COMMAND GETKEYS reports them.

mod common;

use common::*;
use redis_protocol::resp3::types::OwnedFrame;

fn bulks(items: &[&str]) -> OwnedFrame {
    OwnedFrame::Array { data: items.iter().map(|s| bulk(s)).collect(), attributes: None }
}

#[test]
fn getkeys_reports_the_last_store_destination() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["COMMAND", "GETKEYS", "sort", "abc", "store", "def"]), bulks(&["abc", "def"]));
    assert_eq!(
        c.cmd(&["COMMAND", "GETKEYS", "sort", "abc", "store", "invalid", "store", "stillbad", "store", "def"]),
        bulks(&["abc", "def"])
    );
    // LIMIT, GET and BY consume their arguments, even when they read "store".
    assert_eq!(c.cmd(&["COMMAND", "GETKEYS", "sort", "abc", "limit", "store", "x", "store"]), bulks(&["abc"]));
    assert_eq!(c.cmd(&["COMMAND", "GETKEYS", "sort", "abc", "get", "store", "by", "x"]), bulks(&["abc"]));
    assert_eq!(c.cmd(&["COMMAND", "GETKEYS", "sort_ro", "abc"]), bulks(&["abc"]));
}
