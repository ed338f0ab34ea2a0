//! Seeded randomized tests of the codec, run by `cargo test`: random
//! operations, batches and replies round-trip through encode → decode, and
//! random or mutated bytes never make the decoder panic (the cargo-fuzz
//! target in `fuzz/` explores the same property without a time bound).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use cairn_native::encode;
use cairn_native::reply::{put_array_item, put_ok, put_ok_array};
use cairn_native::{
    decode_frame, Body, Decoded, DecodedOp, Limits, Op, OpRef, Outcome, SetCondition, Status, Strings, Value,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// An operation with owned strings, to compare what went in with what came out.
#[derive(Debug, Clone, PartialEq)]
enum Owned {
    Get(Vec<u8>),
    Set(Vec<u8>, Vec<u8>, Option<u64>, SetCondition),
    Del(Vec<Vec<u8>>),
    Exists(Vec<Vec<u8>>),
    IncrBy(Vec<u8>, i64),
    Expire(Vec<u8>, i64),
    MGet(Vec<Vec<u8>>),
    MSet(Vec<Vec<u8>>),
    Command(Vec<Vec<u8>>),
}

fn own_list<L: Strings>(list: &L) -> Vec<Vec<u8>> {
    list.items().map(<[u8]>::to_vec).collect()
}

fn own<L: Strings>(op: &Op<'_, L>) -> Owned {
    match op {
        Op::Get { key } => Owned::Get(key.to_vec()),
        Op::Set { key, value, ttl_ms, condition } => Owned::Set(key.to_vec(), value.to_vec(), *ttl_ms, *condition),
        Op::Del { keys } => Owned::Del(own_list(keys)),
        Op::Exists { keys } => Owned::Exists(own_list(keys)),
        Op::IncrBy { key, delta } => Owned::IncrBy(key.to_vec(), *delta),
        Op::Expire { key, ttl_ms } => Owned::Expire(key.to_vec(), *ttl_ms),
        Op::MGet { keys } => Owned::MGet(own_list(keys)),
        Op::MSet { items } => Owned::MSet(own_list(items)),
        Op::Command { args } => Owned::Command(own_list(args)),
    }
}

fn bytes(rng: &mut StdRng) -> Vec<u8> {
    let len = if rng.gen_bool(0.9) { rng.gen_range(0..24) } else { rng.gen_range(0..600) };
    (0..len).map(|_| rng.gen()).collect()
}

fn strings(rng: &mut StdRng, min: usize, even: bool) -> Vec<Vec<u8>> {
    let mut n = rng.gen_range(min..min + 6);
    if even && n % 2 == 1 {
        n += 1;
    }
    (0..n).map(|_| bytes(rng)).collect()
}

/// A random operation; lists are built in `store` (kept alive by the caller).
fn random_op(rng: &mut StdRng) -> Owned {
    match rng.gen_range(0..9) {
        0 => Owned::Get(bytes(rng)),
        1 => {
            let condition =
                [SetCondition::Always, SetCondition::IfAbsent, SetCondition::IfPresent][rng.gen_range(0..3)];
            let ttl = rng.gen_bool(0.5).then(|| rng.gen());
            Owned::Set(bytes(rng), bytes(rng), ttl, condition)
        }
        2 => Owned::Del(strings(rng, 1, false)),
        3 => Owned::Exists(strings(rng, 1, false)),
        4 => Owned::IncrBy(bytes(rng), rng.gen()),
        5 => Owned::Expire(bytes(rng), rng.gen()),
        6 => Owned::MGet(strings(rng, 1, false)),
        7 => Owned::MSet(strings(rng, 2, true)),
        _ => Owned::Command(strings(rng, 1, false)),
    }
}

/// Encodes an owned operation through the borrowed `Op` the encoder takes.
fn with_op<R>(owned: &Owned, f: impl FnOnce(&OpRef<'_>) -> R) -> R {
    let empty = Vec::new();
    let list: Vec<&[u8]> = match owned {
        Owned::Del(l) | Owned::Exists(l) | Owned::MGet(l) | Owned::MSet(l) | Owned::Command(l) => l,
        _ => &empty,
    }
    .iter()
    .map(Vec::as_slice)
    .collect();
    let list = list.as_slice();
    let op: OpRef<'_> = match owned {
        Owned::Get(k) => Op::Get { key: k },
        Owned::Set(k, v, ttl, c) => Op::Set { key: k, value: v, ttl_ms: *ttl, condition: *c },
        Owned::Del(_) => Op::Del { keys: list },
        Owned::Exists(_) => Op::Exists { keys: list },
        Owned::IncrBy(k, d) => Op::IncrBy { key: k, delta: *d },
        Owned::Expire(k, t) => Op::Expire { key: k, ttl_ms: *t },
        Owned::MGet(_) => Op::MGet { keys: list },
        Owned::MSet(_) => Op::MSet { items: list },
        Owned::Command(_) => Op::Command { args: list },
    };
    f(&op)
}

fn decode_whole(wire: &[u8]) -> cairn_native::Frame<'_> {
    match decode_frame(wire, &Limits::default()).expect("valid frame") {
        Decoded::Complete { frame, consumed } => {
            assert_eq!(consumed, wire.len());
            frame
        }
        Decoded::Incomplete => panic!("whole frame reported incomplete"),
    }
}

/// Every prefix of a valid frame is incomplete, never an error.
fn check_prefixes(wire: &[u8]) {
    for cut in [0, 1, 3, 4, 11, 12, wire.len() / 2, wire.len() - 1] {
        if cut < wire.len() {
            assert_eq!(decode_frame(&wire[..cut], &Limits::default()), Ok(Decoded::Incomplete), "prefix {cut}");
        }
    }
}

/// Decodes anything, walking every list, and must not panic.
fn exercise(bytes: &[u8], limits: &Limits) {
    let mut pos = 0;
    while let Ok(Decoded::Complete { frame, consumed }) = decode_frame(&bytes[pos..], limits) {
        match frame.body {
            Body::Request(op) => drop(own_decoded(&op)),
            Body::Batch(ops) => ops.iter().for_each(|op| drop(own_decoded(&op))),
            Body::Hello(hello) => drop(hello.option(b"auth")),
            Body::Reply(outcome) => walk_outcome(outcome),
            Body::BatchReply(list) => list.iter().for_each(walk_outcome),
            Body::HelloOk(_) | Body::Error { .. } => {}
        }
        pos += consumed;
    }
}

fn own_decoded(op: &DecodedOp<'_>) -> Owned {
    own(op)
}

fn walk_outcome(outcome: Outcome<'_>) {
    if let Outcome::Ok(Value::Array(items)) = outcome {
        assert_eq!(items.iter().count(), items.len());
    }
}

#[test]
fn operations_round_trip() {
    let mut rng = StdRng::seed_from_u64(0xCA1B);
    let mut wire = Vec::new();
    for i in 0..40_000u32 {
        let op = random_op(&mut rng);
        let flags = if rng.gen_bool(0.5) { cairn_native::FLAG_DURABLE } else { 0 };
        wire.clear();
        with_op(&op, |o| encode::request(&mut wire, i, flags, o));
        let frame = decode_whole(&wire);
        assert_eq!((frame.id, frame.flags), (i, flags));
        let Body::Request(decoded) = frame.body else { panic!("not a request") };
        assert_eq!(own_decoded(&decoded), op);
        if i % 16 == 0 {
            check_prefixes(&wire);
        }
    }
}

#[test]
fn batches_round_trip() {
    let mut rng = StdRng::seed_from_u64(0xBA7C);
    let mut wire = Vec::new();
    for i in 0..5_000u32 {
        let ops: Vec<Owned> = (0..rng.gen_range(1..20)).map(|_| random_op(&mut rng)).collect();
        wire.clear();
        let start = encode::begin(&mut wire, cairn_native::Kind::Batch, 0, i);
        wire.extend_from_slice(&(ops.len() as u32).to_le_bytes());
        for op in &ops {
            with_op(op, |o| cairn_native::op::encode_op(&mut wire, o));
        }
        encode::finish(&mut wire, start);
        let Body::Batch(list) = decode_whole(&wire).body else { panic!("not a batch") };
        let decoded: Vec<Owned> = list.iter().map(|op| own_decoded(&op)).collect();
        assert_eq!(decoded, ops);
        let generic = ops.iter().any(|op| matches!(op, Owned::Command(_)));
        assert_eq!(list.has_generic(), generic, "batch {i}");
    }
}

#[test]
fn replies_round_trip() {
    let mut rng = StdRng::seed_from_u64(0x5E1F);
    let mut wire = Vec::new();
    for i in 0..20_000u32 {
        wire.clear();
        let payload = bytes(&mut rng);
        let items: Vec<Option<Vec<u8>>> =
            (0..rng.gen_range(0..8)).map(|_| rng.gen_bool(0.7).then(|| bytes(&mut rng))).collect();
        let kind = rng.gen_range(0..7);
        let start = encode::begin(&mut wire, cairn_native::Kind::Reply, 0, i);
        match kind {
            0 => put_ok(&mut wire, &Value::Nil),
            1 => put_ok(&mut wire, &Value::Ok),
            2 => put_ok(&mut wire, &Value::Int(i64::from(i) - 7)),
            3 => put_ok(&mut wire, &Value::Bytes(&payload)),
            4 => put_ok(&mut wire, &Value::Resp(&payload)),
            5 => {
                put_ok_array(&mut wire, items.len());
                items.iter().for_each(|item| put_array_item(&mut wire, item.as_deref()));
            }
            _ => cairn_native::reply::put_error(&mut wire, Status::from_code(rng.gen_range(1..40)), &payload),
        }
        encode::finish(&mut wire, start);
        let Body::Reply(outcome) = decode_whole(&wire).body else { panic!("not a reply") };
        match (kind, outcome) {
            (0, Outcome::Ok(Value::Nil)) | (1, Outcome::Ok(Value::Ok)) => {}
            (2, Outcome::Ok(Value::Int(n))) => assert_eq!(n, i64::from(i) - 7),
            (3, Outcome::Ok(Value::Bytes(b))) | (4, Outcome::Ok(Value::Resp(b))) => assert_eq!(b, payload),
            (5, Outcome::Ok(Value::Array(list))) => {
                let got: Vec<Option<Vec<u8>>> = list.iter().map(|x| x.map(<[u8]>::to_vec)).collect();
                assert_eq!(got, items);
            }
            (6, Outcome::Error { status, message }) => {
                assert_ne!(status, Status::Ok);
                assert_eq!(message, payload);
            }
            other => panic!("kind {kind} decoded as {other:?}"),
        }
    }
}

#[test]
fn mutated_and_random_bytes_never_panic() {
    let mut rng = StdRng::seed_from_u64(0xF022);
    let small = Limits { max_frame_len: 4096, max_batch_ops: 8, max_list_len: 16 };
    let mut wire = Vec::new();
    for _ in 0..100_000 {
        wire.clear();
        let op = random_op(&mut rng);
        with_op(&op, |o| encode::request(&mut wire, rng.gen(), 0, o));
        match rng.gen_range(0..5) {
            0 => {
                let at = rng.gen_range(0..wire.len());
                wire[at] ^= 1 << rng.gen_range(0..8);
            }
            1 => {
                let at = rng.gen_range(0..wire.len());
                wire[at] = rng.gen();
            }
            2 => wire.truncate(rng.gen_range(0..wire.len())),
            3 => {
                let at = rng.gen_range(0..=wire.len());
                wire.insert(at, rng.gen());
            }
            _ => {
                let n = rng.gen_range(0..64);
                wire = (0..n).map(|_| rng.gen()).collect();
                if wire.len() >= 4 && rng.gen_bool(0.5) {
                    let len = (wire.len() - 4) as u32;
                    wire[..4].copy_from_slice(&len.to_le_bytes());
                }
            }
        }
        exercise(&wire, &Limits::default());
        exercise(&wire, &small);
    }
}

#[test]
fn limits_are_enforced() {
    let limits = Limits { max_frame_len: 64, max_batch_ops: 2, max_list_len: 3 };
    let mut wire = Vec::new();
    encode::request(&mut wire, 1, 0, &OpRef::Get { key: &[0u8; 100] });
    assert!(matches!(decode_frame(&wire[..4], &limits), Err(cairn_native::DecodeError::FrameTooLarge { .. })));
    wire.clear();
    let keys: &[&[u8]] = &[b"a", b"b", b"c", b"d"];
    encode::request(&mut wire, 1, 0, &OpRef::Del { keys });
    assert!(matches!(decode_frame(&wire, &limits), Err(cairn_native::DecodeError::ListSize { count: 4, .. })));
    wire.clear();
    let ops: [OpRef<'_>; 3] = [Op::Get { key: b"a" }, Op::Get { key: b"b" }, Op::Get { key: b"c" }];
    encode::batch(&mut wire, 1, 0, &ops);
    assert!(matches!(decode_frame(&wire, &limits), Err(cairn_native::DecodeError::BatchSize { count: 3, .. })));
    wire.clear();
    encode::request(&mut wire, 1, 0x80, &OpRef::Get { key: b"a" });
    assert!(matches!(decode_frame(&wire, &limits), Err(cairn_native::DecodeError::UnknownFlags { .. })));
}
