//! Releasing what SCRIPT FLUSH and library changes leave behind in the
//! threads' interpreters, without waiting for a script to run there.
//!
//! SCRIPT FLUSH resets scripting as Redis's `scriptingReset` does: a thread
//! whose interpreter belongs to an older script cache drops it (a new one is
//! built when the thread next runs a script), and with it its share of
//! `used_memory_lua` (or `used_memory_vm_functions`). A change to the function libraries (FUNCTION LOAD,
//! DELETE, FLUSH, RESTORE) makes the libraries an interpreter loaded stale:
//! it drops them and collects, keeping the rest (Redis keeps EVAL's
//! interpreter then). Each worker checks on its housekeeping tick; the script
//! thread is told ([`super::runner::Runner::release_stale`]); a thread of
//! tokio's blocking pool (EXEC, native frames that call scripts) releases
//! its interpreter when it next runs a script or when the pool ends it after
//! its idle keep-alive (10 s).

use super::Scripting;

/// The generations current interpreters must belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generations {
    /// The script cache's (bumped by SCRIPT FLUSH).
    pub scripts: u64,
    /// The function registry's (bumped by every library change).
    pub libraries: u64,
}

impl Generations {
    pub fn of(scripting: &Scripting) -> Generations {
        Generations { scripts: scripting.cache.generation(), libraries: scripting.libraries.generation() }
    }
}

/// Releases this thread's interpreter, or the libraries it loaded, if stale.
pub fn release(current: Generations) {
    super::lua_env::release_stale(current);
}
