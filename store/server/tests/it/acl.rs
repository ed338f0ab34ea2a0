//! ACL users over the wire: ACL SETUSER/GETUSER/DELUSER/LIST/DRYRUN, AUTH
//! as a user, NOPERM for commands, keys and channels (also inside scripts),
//! requirepass as the default user's password, deleted users' connections.

use crate::common::{array, bulk, error_text, int, simple, TestServer};
use redis_protocol::resp3::types::OwnedFrame;

#[test]
fn a_user_runs_only_what_its_rules_allow() {
    let server = TestServer::start();
    let mut admin = server.client();
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "bob", "on", ">123", "+@scripting", "+set", "+get", "~x*"]), simple("OK"));
    let mut bob = server.client();
    assert_eq!(
        error_text(&bob.cmd(&["AUTH", "bob", "wrong"])),
        "WRONGPASS invalid username-password pair or user is disabled."
    );
    assert_eq!(bob.cmd(&["AUTH", "bob", "123"]), simple("OK"));
    assert_eq!(
        error_text(&bob.cmd(&["ACL", "WHOAMI"])),
        "NOPERM this user has no permissions to run the 'acl|whoami' command"
    );
    assert_eq!(bob.cmd(&["SET", "x1", "v"]), simple("OK"));
    assert_eq!(bob.cmd(&["GET", "x1"]), bulk("v"));
    assert_eq!(
        error_text(&bob.cmd(&["SET", "y1", "v"])),
        "NOPERM this user has no permissions to access one of the keys used as arguments"
    );
    assert_eq!(
        error_text(&bob.cmd(&["HSET", "x2", "f", "v"])),
        "NOPERM this user has no permissions to run the 'hset' command"
    );
    // Inside a script: the caller's user, Redis's script texts.
    let denied = error_text(&bob.cmd(&["EVAL", "return redis.call('set', 'y2', 1)", "0"]));
    assert!(denied.starts_with("ERR The user executing the script can't access at least one of the keys"), "{denied}");
    assert_eq!(bob.cmd(&["EVAL", "return redis.acl_check_cmd('set', 'xx', 1)", "1", "xx"]), int(1));
    assert_eq!(bob.cmd(&["EVAL", "return redis.acl_check_cmd('hset', 'xx', 'f', 1)", "1", "xx"]), OwnedFrame::Null);
    let invalid = error_text(&bob.cmd(&["EVAL", "return redis.acl_check_cmd('invalid-cmd', 'a')", "0"]));
    assert!(invalid.contains("Invalid command passed to redis.acl_check_cmd()"), "{invalid}");
    // RESET goes back to the default user.
    assert_eq!(bob.cmd(&["RESET"]), simple("RESET"));
    assert_eq!(bob.cmd(&["ACL", "WHOAMI"]), bulk("default"));
    // The admin (default user) is not restricted.
    assert_eq!(admin.cmd(&["HSET", "y3", "f", "v"]), int(1));
}

#[test]
fn acl_describes_users_as_redis_does() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["ACL", "WHOAMI"]), bulk("default"));
    assert_eq!(
        c.cmd(&["ACL", "SETUSER", "carol", "on", "nopass", "+@all", "-@dangerous", "%R~r*", "&news"]),
        simple("OK")
    );
    assert_eq!(c.cmd(&["ACL", "USERS"]), array(vec![bulk("carol"), bulk("default")]));
    assert_eq!(
        c.cmd(&["ACL", "LIST"]),
        array(vec![
            bulk("user carol on nopass %R~r* &news +@all -@dangerous"),
            bulk("user default on nopass ~* &* +@all")
        ])
    );
    assert_eq!(c.cmd(&["ACL", "DRYRUN", "carol", "GET", "r1"]), simple("OK"));
    assert_eq!(
        c.cmd(&["ACL", "DRYRUN", "carol", "SET", "r1", "v"]),
        bulk("This user has no permissions to access the 'r1' key")
    );
    assert_eq!(
        c.cmd(&["ACL", "DRYRUN", "carol", "FLUSHALL"]),
        bulk("This user has no permissions to run the 'flushall' command")
    );
    assert_eq!(error_text(&c.cmd(&["ACL", "DRYRUN", "nobody", "GET", "k"])), "ERR User 'nobody' not found");
    assert_eq!(
        error_text(&c.cmd(&["ACL", "SETUSER", "carol", "+nosuch"])),
        "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"
    );
    assert_eq!(c.cmd(&["ACL", "GETUSER", "nobody"]), OwnedFrame::Null);
    let OwnedFrame::Array { data, .. } = c.cmd(&["ACL", "GETUSER", "carol"]) else { panic!("an array") };
    assert_eq!(data[0], bulk("flags"));
    assert_eq!(data[6], bulk("keys"));
    assert_eq!(data[7], bulk("%R~r*"));
    assert_eq!(error_text(&c.cmd(&["ACL", "DELUSER", "default"])), "ERR The 'default' user cannot be removed");
    assert_eq!(
        error_text(&c.cmd(&["ACL", "SAVE"])).split('.').next(),
        Some("ERR This Redis instance is not configured to use an ACL file")
    );
}

#[test]
fn a_deleted_users_connections_are_closed() {
    let server = TestServer::start();
    let mut admin = server.client();
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "dave", "on", ">pw", "+@all", "allkeys"]), simple("OK"));
    let mut dave = server.client();
    assert_eq!(dave.cmd(&["AUTH", "dave", "pw"]), simple("OK"));
    assert_eq!(dave.cmd(&["SET", "k", "v"]), simple("OK"));
    let OwnedFrame::BlobString { data, .. } = admin.cmd(&["CLIENT", "LIST"]) else { panic!("a bulk string") };
    assert!(String::from_utf8_lossy(&data).contains("user=dave"), "CLIENT LIST shows the user");
    assert_eq!(admin.cmd(&["ACL", "DELUSER", "dave", "nobody"]), int(1));
    assert!(dave.is_closed(), "the connection was closed");
}

#[test]
fn requirepass_is_the_default_users_password() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["CONFIG", "SET", "requirepass", "s3cret"]), simple("OK"));
    let mut other = server.client();
    assert_eq!(error_text(&other.cmd(&["GET", "k"])), "NOAUTH Authentication required.");
    assert_eq!(other.cmd(&["AUTH", "default", "s3cret"]), simple("OK"));
    assert_eq!(other.cmd(&["ACL", "WHOAMI"]), bulk("default"));
    assert_eq!(c.cmd(&["CONFIG", "SET", "requirepass", ""]), simple("OK"));
    let mut third = server.client();
    assert_eq!(third.cmd(&["GET", "k"]), OwnedFrame::Null);
}
