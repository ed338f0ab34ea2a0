//! Pub/sub: which connection listens to which channel or pattern, and how a
//! PUBLISH on one worker reaches connections on any other.
//!
//! - [`PubSub`] (one per server): channel → subscribers, pattern →
//!   subscribers and shard channel → subscribers, behind one lock that only
//!   (un)subscribe and publish take (publish takes it shared). Shard
//!   channels (SSUBSCRIBE, SPUBLISH: Redis 7.0's sharded pub/sub) are a
//!   namespace of their own, without patterns; with no cluster, as in Redis
//!   without cluster mode, every shard channel lives on this server.
//! - [`Subscriber`] (one per subscribed connection): a queue of messages
//!   already encoded for the connection's protocol (RESP2 array or RESP3
//!   push) plus a [`Notify`]. The connection loop waits on it while idle and
//!   writes what is queued; after each batch it appends the queue to the
//!   batch's replies, so messages and replies leave in one ordered stream.
//! - [`Subscriptions`] (the connection's own view): its channels and
//!   patterns, and its handle in the registry. `Client::pubsub` is `Some`
//!   exactly while the connection is in subscribed mode.
//!
//! A subscriber whose queue passes [`OUTPUT_LIMIT`] bytes (Redis's default
//! hard `client-output-buffer-limit pubsub 32mb`) is disconnected, as Redis
//! does; the soft limit is not applied.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use cairn_protocol::ProtocolVersion;
use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;

use crate::client::ClientHandle;

/// Queued bytes past which a subscriber is disconnected.
pub const OUTPUT_LIMIT: usize = 32 * 1024 * 1024;

type Members = hashbrown::HashMap<u64, Arc<Subscriber>, foldhash::fast::RandomState>;
type ByName = hashbrown::HashMap<Vec<u8>, Members, foldhash::fast::RandomState>;

/// One subscribed connection, as publishers see it.
#[derive(Debug)]
pub struct Subscriber {
    pub handle: Arc<ClientHandle>,
    pending: Mutex<Vec<u8>>,
    notify: Notify,
}

impl Subscriber {
    pub fn new(handle: Arc<ClientHandle>) -> Subscriber {
        Subscriber { handle, pending: Mutex::new(Vec::new()), notify: Notify::new() }
    }

    fn resp3(&self) -> bool {
        self.handle.resp.load(Ordering::Relaxed) == 3
    }

    /// Queues an encoded message and wakes the connection.
    pub(crate) fn deliver(&self, frame: &[u8]) {
        let mut pending = self.pending.lock();
        if pending.len() + frame.len() > OUTPUT_LIMIT {
            drop(pending);
            if !self.handle.is_killed() {
                tracing::warn!(client = self.handle.id, "closing subscriber over the pubsub output buffer limit");
                self.handle.kill();
            }
            return;
        }
        pending.extend_from_slice(frame);
        drop(pending);
        self.notify.notify_one();
    }

    /// Moves the queued messages to the end of `out`.
    pub fn take_into(&self, out: &mut Vec<u8>) {
        let mut pending = self.pending.lock();
        if out.is_empty() {
            std::mem::swap(out, &mut *pending);
        } else {
            out.append(&mut pending);
        }
    }

    /// Resolves when messages may have been queued since the last wait.
    pub async fn ready(&self) {
        self.notify.notified().await;
    }
}

/// A connection's subscriptions (`Client::pubsub`).
#[derive(Debug)]
pub struct Subscriptions {
    pub subscriber: Arc<Subscriber>,
    pub channels: hashbrown::HashSet<Vec<u8>, foldhash::fast::RandomState>,
    /// In subscription order, as Redis keeps them.
    pub patterns: Vec<Vec<u8>>,
    pub shard_channels: hashbrown::HashSet<Vec<u8>, foldhash::fast::RandomState>,
}

impl Subscriptions {
    pub fn new(handle: Arc<ClientHandle>) -> Subscriptions {
        Subscriptions {
            subscriber: Arc::new(Subscriber::new(handle)),
            channels: Default::default(),
            patterns: Vec::new(),
            shard_channels: Default::default(),
        }
    }

    /// The count (p)subscribe/(p)unsubscribe replies carry: channels and
    /// patterns (Redis's `clientSubscriptionsCount`).
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// The count ssubscribe/sunsubscribe replies carry: shard channels.
    pub fn shard_count(&self) -> usize {
        self.shard_channels.len()
    }

    /// Every subscription: the connection is in subscribed mode while this
    /// is not 0.
    pub fn total(&self) -> usize {
        self.count() + self.shard_count()
    }

    /// Shows the counts to other connections (CLIENT LIST sub=, psub=, ssub=).
    fn publish_counts(&self) {
        let handle = &self.subscriber.handle;
        handle.sub_channels.store(self.channels.len(), Ordering::Relaxed);
        handle.sub_patterns.store(self.patterns.len(), Ordering::Relaxed);
        handle.sub_shard_channels.store(self.shard_channels.len(), Ordering::Relaxed);
    }
}

#[derive(Debug, Default)]
struct Registry {
    channels: ByName,
    patterns: ByName,
    shard_channels: ByName,
}

/// The server's pub/sub registry.
#[derive(Debug, Default)]
pub struct PubSub {
    inner: RwLock<Registry>,
}

/// Whether a subscription was added or removed (false: nothing changed).
pub type Changed = bool;

impl PubSub {
    pub fn subscribe(&self, subs: &mut Subscriptions, channel: &[u8]) -> Changed {
        self.join(subs, channel, false)
    }

    pub fn unsubscribe(&self, subs: &mut Subscriptions, channel: &[u8]) -> Changed {
        self.leave(subs, channel, false)
    }

    pub fn psubscribe(&self, subs: &mut Subscriptions, pattern: &[u8]) -> Changed {
        if subs.patterns.iter().any(|p| p == pattern) {
            return false;
        }
        subs.patterns.push(pattern.to_vec());
        add(&mut self.inner.write().patterns, pattern, &subs.subscriber);
        subs.publish_counts();
        true
    }

    pub fn punsubscribe(&self, subs: &mut Subscriptions, pattern: &[u8]) -> Changed {
        let Some(at) = subs.patterns.iter().position(|p| p == pattern) else {
            return false;
        };
        subs.patterns.remove(at);
        remove(&mut self.inner.write().patterns, pattern, subs.subscriber.handle.id);
        subs.publish_counts();
        true
    }

    pub fn ssubscribe(&self, subs: &mut Subscriptions, channel: &[u8]) -> Changed {
        self.join(subs, channel, true)
    }

    pub fn sunsubscribe(&self, subs: &mut Subscriptions, channel: &[u8]) -> Changed {
        self.leave(subs, channel, true)
    }

    /// Subscribes to a channel, or with `shard` to a shard channel.
    fn join(&self, subs: &mut Subscriptions, channel: &[u8], shard: bool) -> Changed {
        let mine = if shard { &mut subs.shard_channels } else { &mut subs.channels };
        if !mine.insert(channel.to_vec()) {
            return false;
        }
        let mut registry = self.inner.write();
        let members = if shard { &mut registry.shard_channels } else { &mut registry.channels };
        add(members, channel, &subs.subscriber);
        drop(registry);
        subs.publish_counts();
        true
    }

    /// Unsubscribes from a channel, or with `shard` from a shard channel.
    fn leave(&self, subs: &mut Subscriptions, channel: &[u8], shard: bool) -> Changed {
        let mine = if shard { &mut subs.shard_channels } else { &mut subs.channels };
        if !mine.remove(channel) {
            return false;
        }
        let mut registry = self.inner.write();
        let members = if shard { &mut registry.shard_channels } else { &mut registry.channels };
        remove(members, channel, subs.subscriber.handle.id);
        drop(registry);
        subs.publish_counts();
        true
    }

    /// Drops every subscription of a connection (disconnect, RESET).
    pub fn forget(&self, subs: &Subscriptions) {
        let id = subs.subscriber.handle.id;
        let mut registry = self.inner.write();
        for channel in &subs.channels {
            remove(&mut registry.channels, channel, id);
        }
        for pattern in &subs.patterns {
            remove(&mut registry.patterns, pattern, id);
        }
        for channel in &subs.shard_channels {
            remove(&mut registry.shard_channels, channel, id);
        }
        drop(registry);
        let handle = &subs.subscriber.handle;
        handle.sub_channels.store(0, Ordering::Relaxed);
        handle.sub_patterns.store(0, Ordering::Relaxed);
        handle.sub_shard_channels.store(0, Ordering::Relaxed);
    }

    /// Delivers `message` to the subscribers of `channel` and of every
    /// matching pattern; returns how many received it.
    pub fn publish(&self, channel: &[u8], message: &[u8]) -> usize {
        let registry = self.inner.read();
        let mut receivers = 0;
        if let Some(members) = registry.channels.get(channel) {
            let mut frames = Frames::default();
            for subscriber in members.values() {
                subscriber.deliver(frames.get(subscriber.resp3(), || (Kind::Message, channel, message)));
            }
            receivers += members.len();
        }
        for (pattern, members) in &registry.patterns {
            if !cairn_engine::glob::matches(pattern, channel, false) {
                continue;
            }
            let mut frames = Frames::default();
            for subscriber in members.values() {
                subscriber.deliver(frames.get(subscriber.resp3(), || (Kind::PMessage(pattern), channel, message)));
            }
            receivers += members.len();
        }
        receivers
    }

    /// Delivers `message` to the subscribers of shard channel `channel`
    /// (SPUBLISH: no patterns); returns how many received it.
    pub fn spublish(&self, channel: &[u8], message: &[u8]) -> usize {
        let registry = self.inner.read();
        let Some(members) = registry.shard_channels.get(channel) else { return 0 };
        let mut frames = Frames::default();
        for subscriber in members.values() {
            subscriber.deliver(frames.get(subscriber.resp3(), || (Kind::SMessage, channel, message)));
        }
        members.len()
    }

    /// Channels with at least one subscriber, optionally filtered by a glob
    /// (PUBSUB CHANNELS); shard channels with `shard` (PUBSUB SHARDCHANNELS).
    pub fn channels(&self, shard: bool, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let registry = self.inner.read();
        let by_name = if shard { &registry.shard_channels } else { &registry.channels };
        by_name.keys().filter(|c| pattern.is_none_or(|p| cairn_engine::glob::matches(p, c, false))).cloned().collect()
    }

    /// Subscribers of one channel (PUBSUB NUMSUB) or shard channel (PUBSUB
    /// SHARDNUMSUB).
    pub fn numsub(&self, shard: bool, channel: &[u8]) -> usize {
        let registry = self.inner.read();
        let by_name = if shard { &registry.shard_channels } else { &registry.channels };
        by_name.get(channel).map_or(0, |m| m.len())
    }

    /// Distinct channels with subscribers (INFO pubsub_channels).
    pub fn channel_count(&self) -> usize {
        self.inner.read().channels.len()
    }

    /// Distinct shard channels with subscribers (INFO pubsubshard_channels).
    pub fn shard_channel_count(&self) -> usize {
        self.inner.read().shard_channels.len()
    }

    /// Distinct patterns with subscribers (PUBSUB NUMPAT, INFO pubsub_patterns).
    pub fn pattern_count(&self) -> usize {
        self.inner.read().patterns.len()
    }
}

fn add(map: &mut ByName, name: &[u8], subscriber: &Arc<Subscriber>) {
    match map.get_mut(name) {
        Some(members) => {
            members.insert(subscriber.handle.id, subscriber.clone());
        }
        None => {
            let mut members = Members::default();
            members.insert(subscriber.handle.id, subscriber.clone());
            map.insert(name.to_vec(), members);
        }
    }
}

fn remove(map: &mut ByName, name: &[u8], id: u64) {
    if let Some(members) = map.get_mut(name) {
        members.remove(&id);
        if members.is_empty() {
            map.remove(name);
        }
    }
}

/// One message encoded at most once per protocol.
#[derive(Default)]
struct Frames {
    resp2: Option<Vec<u8>>,
    resp3: Option<Vec<u8>>,
}

/// What kind of message a subscriber gets.
#[derive(Clone, Copy, Debug)]
pub enum Kind<'a> {
    /// `message`: a channel it subscribed to.
    Message,
    /// `pmessage`: a channel matching this pattern it subscribed to.
    PMessage(&'a [u8]),
    /// `smessage`: a shard channel it subscribed to.
    SMessage,
}

type Parts<'a> = (Kind<'a>, &'a [u8], &'a [u8]);

impl Frames {
    fn get<'a>(&mut self, resp3: bool, parts: impl FnOnce() -> Parts<'a>) -> &[u8] {
        let slot = if resp3 { &mut self.resp3 } else { &mut self.resp2 };
        slot.get_or_insert_with(|| {
            let (kind, channel, message) = parts();
            encode_message(resp3, kind, channel, message)
        })
    }
}

/// `message`, `pmessage` or `smessage` as the subscriber reads it.
pub fn encode_message(resp3: bool, kind: Kind<'_>, channel: &[u8], message: &[u8]) -> Vec<u8> {
    let pattern_len = if let Kind::PMessage(pattern) = kind { pattern.len() } else { 0 };
    let mut out = Vec::with_capacity(32 + channel.len() + message.len() + pattern_len);
    let version = if resp3 { ProtocolVersion::Resp3 } else { ProtocolVersion::Resp2 };
    let mut w = cairn_protocol::ReplyWriter::new(&mut out, version);
    match kind {
        Kind::PMessage(pattern) => {
            w.push(4);
            w.bulk(b"pmessage");
            w.bulk(pattern);
        }
        Kind::Message => {
            w.push(3);
            w.bulk(b"message");
        }
        Kind::SMessage => {
            w.push(3);
            w.bulk(b"smessage");
        }
    }
    w.bulk(channel);
    w.bulk(message);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_encode_per_protocol() {
        assert_eq!(
            encode_message(false, Kind::Message, b"ch", b"hi"),
            b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"
        );
        assert_eq!(
            encode_message(false, Kind::SMessage, b"ch", b"hi"),
            b"*3\r\n$8\r\nsmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"
        );
        assert_eq!(
            encode_message(true, Kind::PMessage(b"c*"), b"ch", b"hi"),
            b">4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$2\r\nhi\r\n"
        );
    }
}
