//! Keyspace notifications (`notify-keyspace-events`): delivers the keyspace
//! events that the engine and the command handlers raise as pub/sub messages
//! on `__keyspace@<db>__:<key>` (message: the event) and
//! `__keyevent@<db>__:<event>` (message: the key), as Redis 7.0 does.
//!
//! The enabled classes live in the engine's [`KeyEvents`] (an atomic that
//! CONFIG SET writes); with notifications off an event site costs one relaxed
//! load and a branch, and nothing here runs.

use std::sync::Arc;

use cairn_engine::events::{KeyEvents, KEYEVENT, KEYSPACE};

use crate::pubsub::PubSub;

/// Makes `events` publish through `pubsub`.
pub fn install(events: &KeyEvents, pubsub: Arc<PubSub>) {
    events.set_sink(Box::new(move |flags, event, db, key| publish(&pubsub, flags, event, db, key)));
}

/// Publishes one event on the channels `flags` enable (keyspace first, as Redis).
fn publish(pubsub: &PubSub, flags: u32, event: &str, db: usize, key: &[u8]) {
    if flags & KEYSPACE != 0 {
        let mut channel = format!("__keyspace@{db}__:").into_bytes();
        channel.extend_from_slice(key);
        pubsub.publish(&channel, event.as_bytes());
    }
    if flags & KEYEVENT != 0 {
        let channel = format!("__keyevent@{db}__:{event}");
        pubsub.publish(channel.as_bytes(), key);
    }
}
