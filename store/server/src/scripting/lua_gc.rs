//! When an interpreter collects garbage between scripts: Redis's policy
//! (`script_lua.c`, `LUA_GC_CYCLE_PERIOD`): after every 50th script, one
//! collection step of 50 KB worth of work (`lua_gc(LUA_GCSTEP, 50)`), which
//! on an interpreter of a few tens of KB completes a cycle. Without it Lua's
//! own pace (a cycle starts once memory doubled since the last) lets an
//! interpreter that runs only short scripts carry up to its own size again
//! in garbage, and `used_memory_lua` reports it.

/// Scripts between collection steps, and the step's size in KB.
pub const PERIOD: u32 = 50;

/// Counts an interpreter's scripts since its last collection step.
#[derive(Debug, Default)]
pub struct Pace {
    scripts: u32,
}

impl Pace {
    /// A script ran in `lua`: steps the collector every [`PERIOD`] scripts.
    pub fn script_ran(&mut self, lua: &mlua::Lua) {
        self.scripts += 1;
        if self.scripts >= PERIOD {
            self.scripts = 0;
            // A failed step (out of memory) leaves the garbage for Lua's own pace.
            let _ = lua.gc_step_kbytes(PERIOD as i32);
        }
    }

    /// Takes the step now if scripts ran since the last one (see
    /// `lua_env::collect_after_scripts`); whether it did.
    pub fn step_pending(&mut self, lua: &mlua::Lua) -> bool {
        if self.scripts == 0 {
            return false;
        }
        self.scripts = 0;
        let _ = lua.gc_step_kbytes(PERIOD as i32);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_collector_steps_every_period_scripts() {
        let lua = mlua::Lua::new();
        let mut pace = Pace::default();
        lua.gc_stop();
        let garbage = |lua: &mlua::Lua| {
            for i in 0..200 {
                let _ = lua.create_table_from([(i, i)]);
            }
        };
        garbage(&lua);
        let before = lua.used_memory();
        for _ in 0..PERIOD - 1 {
            pace.script_ran(&lua);
        }
        assert_eq!(lua.used_memory(), before, "no step before the period");
        pace.script_ran(&lua);
        assert!(lua.used_memory() < before, "{} < {before}", lua.used_memory());
    }

    #[test]
    fn a_pending_step_is_taken_once_and_only_after_scripts() {
        let lua = mlua::Lua::new();
        let mut pace = Pace::default();
        lua.gc_stop();
        assert!(!pace.step_pending(&lua), "no script, no step");
        pace.script_ran(&lua);
        for i in 0..200 {
            let _ = lua.create_table_from([(i, i)]);
        }
        let before = lua.used_memory();
        assert!(pace.step_pending(&lua));
        assert!(lua.used_memory() < before, "{} < {before}", lua.used_memory());
        assert!(!pace.step_pending(&lua), "taken already");
    }
}
