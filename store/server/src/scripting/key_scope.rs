//! Scripts that keep to their declared keys: run holding only those keys'
//! shards, like a multi-key command, instead of stopping every worker.
//!
//! Redis asks scripts to name every key they touch in KEYS (its cluster
//! refuses anything else); most do. A script is *keyed* once a run that
//! held the whole keyspace saw every command it called stay within the
//! shards of its declared keys ([`KeyScope::observing`]; recorded in
//! [`super::speed::RunSpeed`]). A short keyed script then runs on its worker
//! holding just those shards ([`KeyScope::holding`], locked in ascending
//! order as every multi-key command locks them): no announcement, no wait
//! for the other workers, which go on serving (and running keyed scripts of
//! their own on other keys).
//!
//! Before each command such a run calls, [`KeyScope::admit`] checks the
//! command's shards (its keys by the command table; a command without
//! listed keys, or whose keys move, needs every shard, but for a few that
//! touch no data). Outside the held shards:
//!
//! - a run that has not written is abandoned ([`Admit::Abandon`]): it
//!   changed nothing, the script is marked not keyed for good, and it runs
//!   again holding the whole keyspace;
//! - a run that has written cannot be undone: it tries to take the missing
//!   shards without waiting (a thread that waited for a shard out of order
//!   could deadlock with a multi-key command waiting for one it holds),
//!   retrying for up to [`ESCALATION_PATIENCE`]; if another client still
//!   holds one, the command fails with [`OUT_OF_SCOPE`] (the script's earlier
//!   writes stay, as after any error in a Redis script).

use std::time::{Duration, Instant};

use cairn_engine::keyspace::ShardCell;
use cairn_engine::Keyspace;
use parking_lot::ReentrantMutexGuard;
use smallvec::SmallVec;

use crate::commands::table;

/// How long a keyed run that has written keeps trying for a shard outside
/// its declared keys before the command fails.
pub const ESCALATION_PATIENCE: Duration = Duration::from_millis(10);

/// The error of a command that reached outside the declared keys, after the
/// script had written, while another client held the shard it needed.
pub const OUT_OF_SCOPE: &str = "ERR Script accessed a key not declared in KEYS while another client was using it; \
declare every key a script touches";

/// Commands a script may call without any shard: they touch no data.
const DATA_FREE: &[&str] = &["ping", "echo", "time", "publish", "select"];

/// Which shards a command needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Needs {
    Nothing,
    Shards(SmallVec<[usize; 4]>),
    Everything,
}

/// The shards command `index` called with `args` may touch.
pub fn needs(keyspace: &Keyspace, index: usize, args: &[&[u8]]) -> Needs {
    let spec = table::spec(index);
    if DATA_FREE.contains(&spec.name) {
        return Needs::Nothing;
    }
    // SORT_RO's BY and GET patterns name keys the table does not list.
    match spec.all_key_positions(args.len()) {
        Some(positions) if spec.name != "sort_ro" => {
            Needs::Shards(positions.into_iter().map(|p| keyspace.shard_of(args[p])).collect())
        }
        _ => Needs::Everything,
    }
}

/// What a run may do with a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    Run,
    /// Outside the scope before any write: stop, run again with every shard.
    Abandon,
    /// Outside the scope after a write, with a needed shard busy.
    Refuse,
}

/// The shards a script run may touch.
pub struct KeyScope<'k> {
    keyspace: &'k Keyspace,
    /// Sorted, distinct: the declared keys' shards, then any taken later.
    shards: SmallVec<[usize; 4]>,
    /// The held locks (empty when observing: the caller holds every shard).
    held: Vec<ReentrantMutexGuard<'k, ShardCell>>,
    /// A keyed run (the scope is enforced), not an observed one.
    enforced: bool,
    /// Whether every command so far stayed within `shards`.
    stayed: bool,
}

impl<'k> KeyScope<'k> {
    /// For a run that holds every shard: notes whether it keeps to `keys`.
    pub fn observing(keyspace: &'k Keyspace, keys: &[Vec<u8>]) -> KeyScope<'k> {
        KeyScope { keyspace, shards: declared_shards(keyspace, keys), held: Vec::new(), enforced: false, stayed: true }
    }

    /// For a keyed run: holds the shards of `keys` (ascending, waiting for
    /// each as a multi-key command does).
    pub fn holding(keyspace: &'k Keyspace, keys: &[Vec<u8>]) -> KeyScope<'k> {
        let shards = declared_shards(keyspace, keys);
        let held = shards.iter().map(|&i| keyspace.hold_shard(i)).collect();
        KeyScope { keyspace, shards, held, enforced: true, stayed: true }
    }

    /// Whether every command of the run stayed within the declared keys' shards.
    pub fn stayed(&self) -> bool {
        self.stayed
    }

    /// Before a command that needs `needs`; `wrote`: the run has written.
    pub fn admit(&mut self, needs: &Needs, wrote: bool) -> Admit {
        let missing: SmallVec<[usize; 4]> = match needs {
            Needs::Nothing => return Admit::Run,
            Needs::Shards(shards) => shards.iter().copied().filter(|s| self.shards.binary_search(s).is_err()).collect(),
            Needs::Everything => {
                (0..self.keyspace.num_shards()).filter(|s| self.shards.binary_search(s).is_err()).collect()
            }
        };
        if missing.is_empty() {
            return Admit::Run;
        }
        self.stayed = false;
        if !self.enforced {
            return Admit::Run;
        }
        if !wrote {
            return Admit::Abandon;
        }
        if self.take_without_waiting(&missing) {
            Admit::Run
        } else {
            Admit::Refuse
        }
    }

    /// Takes `missing` (sorted) with try-locks only, retrying for a while.
    fn take_without_waiting(&mut self, missing: &[usize]) -> bool {
        let give_up = Instant::now() + ESCALATION_PATIENCE;
        let mut taken = Vec::with_capacity(missing.len());
        loop {
            for &shard in &missing[taken.len()..] {
                match self.keyspace.try_hold_shard(shard) {
                    Some(guard) => taken.push(guard),
                    None => break,
                }
            }
            if taken.len() == missing.len() {
                break;
            }
            if Instant::now() >= give_up {
                return false;
            }
            std::thread::yield_now();
        }
        self.held.extend(taken);
        self.shards.extend_from_slice(missing);
        self.shards.sort_unstable();
        true
    }
}

/// The sorted, distinct shards of `keys`.
fn declared_shards(keyspace: &Keyspace, keys: &[Vec<u8>]) -> SmallVec<[usize; 4]> {
    let mut shards: SmallVec<[usize; 4]> = keys.iter().map(|k| keyspace.shard_of(k)).collect();
    shards.sort_unstable();
    shards.dedup();
    shards
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyspace() -> Keyspace {
        Keyspace::new(1, 16)
    }

    fn key_in_other_shard(ks: &Keyspace, than: &[u8]) -> Vec<u8> {
        (0..1000).map(|i| format!("other:{i}").into_bytes()).find(|k| ks.shard_of(k) != ks.shard_of(than)).expect("key")
    }

    #[test]
    fn a_command_on_declared_keys_runs_and_one_elsewhere_is_caught() {
        let ks = keyspace();
        let declared = vec![b"a".to_vec()];
        let other = key_in_other_shard(&ks, b"a");
        let mut scope = KeyScope::holding(&ks, &declared);
        assert_eq!(scope.admit(&Needs::Shards([ks.shard_of(b"a")].into_iter().collect()), false), Admit::Run);
        assert_eq!(scope.admit(&Needs::Nothing, false), Admit::Run);
        assert!(scope.stayed());
        assert_eq!(scope.admit(&Needs::Shards([ks.shard_of(&other)].into_iter().collect()), false), Admit::Abandon);
        assert!(!scope.stayed());
    }

    #[test]
    fn after_a_write_a_free_shard_is_taken_and_a_busy_one_refused() {
        let ks = std::sync::Arc::new(keyspace());
        let declared = vec![b"a".to_vec()];
        let other = key_in_other_shard(&ks, b"a");
        let other_shard = ks.shard_of(&other);
        {
            let mut scope = KeyScope::holding(&ks, &declared);
            assert_eq!(scope.admit(&Needs::Shards([other_shard].into_iter().collect()), true), Admit::Run);
            assert_eq!(scope.admit(&Needs::Shards([other_shard].into_iter().collect()), true), Admit::Run);
        }
        // Another thread holds the shard: the run gives up after its patience.
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let holder = {
            let ks = ks.clone();
            std::thread::spawn(move || {
                let _guard = ks.hold_shard(other_shard);
                held_tx.send(()).expect("send");
                done_rx.recv().expect("recv");
            })
        };
        held_rx.recv().expect("held");
        let mut scope = KeyScope::holding(&ks, &declared);
        let started = Instant::now();
        assert_eq!(scope.admit(&Needs::Shards([other_shard].into_iter().collect()), true), Admit::Refuse);
        assert!(started.elapsed() >= ESCALATION_PATIENCE);
        drop(scope);
        done_tx.send(()).expect("send");
        holder.join().expect("holder");
    }

    #[test]
    fn observing_never_refuses_but_notes_leaving() {
        let ks = keyspace();
        let mut scope = KeyScope::observing(&ks, &[b"a".to_vec()]);
        assert_eq!(scope.admit(&Needs::Everything, false), Admit::Run);
        assert!(!scope.stayed());
    }

    #[test]
    fn what_commands_need() {
        let ks = keyspace();
        let index = |name: &str| table::lookup(name.as_bytes()).expect("command");
        assert_eq!(needs(&ks, index("ping"), &[b"ping"]), Needs::Nothing);
        assert_eq!(needs(&ks, index("keys"), &[b"keys", b"*"]), Needs::Everything);
        assert_eq!(needs(&ks, index("sort_ro"), &[b"sort_ro", b"k"]), Needs::Everything);
        assert_eq!(needs(&ks, index("zunionstore"), &[b"zunionstore", b"d", b"1", b"k"]), Needs::Everything);
        let Needs::Shards(shards) = needs(&ks, index("mset"), &[b"mset", b"k1", b"v", b"k2", b"v"]) else {
            panic!("mset has keys")
        };
        assert_eq!(shards.as_slice(), &[ks.shard_of(b"k1"), ks.shard_of(b"k2")]);
    }
}
