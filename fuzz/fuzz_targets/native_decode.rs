//! Decodes arbitrary bytes as a stream of native frames, walking every list
//! and value: the decoder must never panic, and every frame it accepts must
//! re-encode (requests) to the same bytes.
#![no_main]

use cairn_native::{decode_frame, encode, Body, Decoded, Limits, Outcome, Value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for limits in [Limits::default(), Limits { max_frame_len: 4096, max_batch_ops: 8, max_list_len: 16 }] {
        let mut pos = 0;
        while let Ok(Decoded::Complete { frame, consumed }) = decode_frame(&data[pos..], &limits) {
            match frame.body {
                Body::Request(op) => {
                    let mut again = Vec::new();
                    encode::request(&mut again, frame.id, frame.flags, &op);
                    assert_eq!(again.as_slice(), &data[pos..pos + consumed]);
                }
                Body::Batch(ops) => assert_eq!(ops.iter().count(), ops.len()),
                Body::Hello(hello) => {
                    let _ = hello.option(b"auth");
                }
                Body::Reply(outcome) => walk(outcome),
                Body::BatchReply(list) => list.iter().for_each(walk),
                Body::HelloOk(_) | Body::Error { .. } => {}
            }
            pos += consumed;
        }
    }
});

fn walk(outcome: Outcome<'_>) {
    if let Outcome::Ok(Value::Array(items)) = outcome {
        assert_eq!(items.iter().count(), items.len());
    }
}
