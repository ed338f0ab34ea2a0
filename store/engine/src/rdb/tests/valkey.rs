//! Payloads DUMPed by valkey-server 9.1.2 (RDB version 80, Redis 7.2's
//! types), each with what Valkey held (`HGETALL`, `XINFO STREAM x FULL`).

use super::canonical::canonical;
use super::unhex;
use crate::rdb::restore_payload;

/// `HSET h f 1 g 2`: a listpack hash.
const HASH: &str = "101111000000040081660201018167020201ff500013ca4154e6fe0bdf";
/// `XADD x 1-1 f v`, `XGROUP CREATE x g 0`, `XREADGROUP GROUP g c STREAMS x >`:
/// a type-21 stream with a group, a pending entry and a consumer.
const STREAM: &str = "150110000000000000000100000000000000011d1d0000000a0001010001010181660200010201000100018176020401ff01\
                      0101010100000101016701010101000000000000000100000000000000011610ba50a2010000010101631610ba50a2010000\
                      1610ba50a201000001000000000000000100000000000000015000c90cd6e97b4dbea4";

#[test]
fn valkey_payloads_restore() {
    let hash = restore_payload(&unhex(HASH), false).map(|v| canonical(&v));
    assert_eq!(hash.as_deref(), Ok("type=hash enc=listpack fields=f=1,g=2"));
    let stream = restore_payload(&unhex(STREAM), false).map(|v| canonical(&v));
    let expected = "type=stream enc=stream length=1 | last=1-1 | maxdel=0-0 | added=1 | first=1-1 | \
                    entries=1-1{f=v} | group=g last=1-1 read=1 lag=0 pel=[1-1:c:1796650700822:1] \
                    consumers=[c:1796650700822:[1-1]]";
    assert_eq!(stream.as_deref(), Ok(expected));
}
