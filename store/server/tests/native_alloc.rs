//! The native protocol's hot path allocates nothing per GET, and no more per
//! SET than RESP does (the keyspace allocates the stored value either way).
//! A counting global allocator measures the whole process while a blocking
//! client, whose loop itself allocates nothing, sends batches of requests.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};

use cairn_native::{decode_frame, encode, Decoded, Limits, Op, OpRef, SetCondition};
use cairn_server::{Config, Shutdown};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const PER_BATCH: usize = 100;
const ROUNDS: usize = 200;

/// Sends `request` and reads exactly `reply_len` bytes, `rounds` times;
/// returns the allocations counted meanwhile.
fn allocations_during(stream: &mut TcpStream, request: &[u8], reply: &mut [u8], rounds: usize) -> u64 {
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    for _ in 0..rounds {
        stream.write_all(request).unwrap();
        stream.read_exact(reply).unwrap();
    }
    ALLOCATIONS.load(Ordering::SeqCst) - before
}

/// The length of the one native frame the server answers `request` with.
fn native_reply_len(stream: &mut TcpStream, request: &[u8]) -> usize {
    stream.write_all(request).unwrap();
    let mut input = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        if let Ok(Decoded::Complete { consumed, .. }) = decode_frame(&input, &Limits::default()) {
            assert_eq!(consumed, input.len());
            return consumed;
        }
        let n = stream.read(&mut chunk).unwrap();
        assert!(n > 0);
        input.extend_from_slice(&chunk[..n]);
    }
}

fn native_batch(ops: &[OpRef<'_>]) -> Vec<u8> {
    let mut frame = Vec::new();
    encode::batch(&mut frame, 1, 0, ops);
    frame
}

fn resp_sets(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..PER_BATCH {
        out.extend_from_slice(format!("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n${}\r\n", value.len()).as_bytes());
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out
}

#[test]
fn native_get_allocates_nothing_and_set_no_more_than_resp() {
    let dir = std::env::temp_dir().join(format!("cairn-native-alloc-{}", std::process::id()));
    let mut config = Config::for_tests(&dir);
    config.durability = cairn_engine::durability::Tier::None;
    let running = cairn_server::start(config, Shutdown::new()).expect("server starts");

    let mut native = TcpStream::connect(running.native_addr.expect("native port")).unwrap();
    native.set_nodelay(true).unwrap();
    let mut hello = Vec::new();
    encode::hello(&mut hello, 1, 1, &[]);
    native_reply_len(&mut native, &hello);
    let value = [b'v'; 32];
    let set = Op::Set { key: b"key", value: &value, ttl_ms: None, condition: SetCondition::Always };
    let sets = native_batch(&vec![set; PER_BATCH]);
    let gets = native_batch(&vec![Op::Get { key: b"key" }; PER_BATCH]);
    let mut set_reply = vec![0u8; native_reply_len(&mut native, &sets)];
    let mut get_reply = vec![0u8; native_reply_len(&mut native, &gets)];
    // Warm up: buffers reach their working size.
    allocations_during(&mut native, &gets, &mut get_reply, 20);
    allocations_during(&mut native, &sets, &mut set_reply, 20);

    let requests = (PER_BATCH * ROUNDS) as u64;
    let get_allocs = allocations_during(&mut native, &gets, &mut get_reply, ROUNDS);
    assert!(get_allocs * 100 < requests, "{get_allocs} allocations for {requests} native GETs");

    let native_set_allocs = allocations_during(&mut native, &sets, &mut set_reply, ROUNDS);
    let mut resp = TcpStream::connect(running.addr).unwrap();
    resp.set_nodelay(true).unwrap();
    let resp_request = resp_sets(&value);
    let mut resp_reply = vec![0u8; PER_BATCH * b"+OK\r\n".len()];
    allocations_during(&mut resp, &resp_request, &mut resp_reply, 20);
    let resp_set_allocs = allocations_during(&mut resp, &resp_request, &mut resp_reply, ROUNDS);
    eprintln!("allocations per request: native GET {get_allocs}/{requests}, SET native {native_set_allocs}/{requests}, RESP {resp_set_allocs}/{requests}");
    assert!(
        native_set_allocs <= resp_set_allocs + requests / 100,
        "native SET: {native_set_allocs} allocations, RESP SET: {resp_set_allocs} for {requests} each"
    );
    running.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
