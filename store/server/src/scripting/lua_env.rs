//! The Lua 5.1 interpreters scripts run in: per thread that runs scripts,
//! one for EVAL and one for functions (FUNCTION LOAD, FCALL), as Redis 7.0
//! runs them in two Lua VMs (`used_memory_vm_eval`, alias `used_memory_lua`,
//! and `used_memory_vm_functions`); each sandboxed as Redis's (no `os`,
//! `io`, `loadfile`, `dofile`, `print`, `setfenv`, `getfenv`, `newproxy`,
//! `debug`; globals read-only), with the `redis` library of `prelude.lua`
//! (also named `server`, as in Valkey), the `bit`, `cjson`, `cmsgpack` and
//! `struct` libraries, and compiled scripts kept by SHA1.

use std::cell::RefCell;
use std::collections::HashMap;
use std::thread::LocalKey;

use std::time::{Duration, Instant};

use mlua::{Function, HookTriggers, Lua, LuaOptions, StdLib, Table, Value, VmState};

use super::library::Library;

/// Lua memory limit per interpreter: a script that allocates more fails
/// with a Lua "not enough memory" error instead of taking the server down.
pub const MEMORY_LIMIT_BYTES: usize = 1 << 30;

use super::lua_memory::{LuaMemory, Reported};
use super::prelude_chunk::Part;

/// What prelude_functions.lua defines (FUNCTION LOAD, FCALL).
struct FunctionsApi {
    /// `impl.fenv`: the environment of libraries' code.
    fenv: Table,
    /// `impl.load_library`: runs a library's code in load mode.
    load_library: Function,
    /// `impl.run_function`: calls a function as FCALL does.
    run_function: Function,
}

/// A thread's interpreter.
pub struct LuaEnv {
    pub lua: Lua,
    /// The prelude's `impl` table (with the callbacks of `callbacks.rs`).
    pub imp: Table,
    /// The prelude's `impl.run` (EVAL).
    pub run: Function,
    /// The functions API (prelude_functions.lua), once loaded.
    functions_api: Option<FunctionsApi>,
    /// The field names of returned tables (`err`, `ok`, ...).
    pub fields: super::convert::FieldNames,
    /// Compiled scripts by SHA1.
    functions: HashMap<String, Function>,
    /// Loaded function libraries by id: lowercase function name → callback.
    libraries: Table,
    /// The callbacks found in `libraries`, by library id and lowercase name
    /// (a Lua table lookup by name makes a Lua string per call).
    callbacks: HashMap<u64, HashMap<String, Function>>,
    /// The function registry generation `libraries` belongs to.
    libraries_generation: u64,
    /// Whether `libraries` holds a loaded library.
    holds_libraries: bool,
    /// The script cache generation these functions belong to (SCRIPT FLUSH).
    generation: u64,
    /// What this interpreter added to a server's figure for its engine.
    reported: Option<Reported>,
    /// Scripts since the collector's last step.
    pub gc_pace: super::lua_gc::Pace,
}

thread_local! {
    static EVAL_ENV: RefCell<Option<LuaEnv>> = const { RefCell::new(None) };
    static FUNCTIONS_ENV: RefCell<Option<LuaEnv>> = const { RefCell::new(None) };
}

/// Which of a thread's two interpreters: EVAL's (EVAL, EVALSHA and their
/// `_RO` forms) or the functions' (FUNCTION LOAD, FCALL), as Redis 7.0 keeps
/// one Lua VM for each. Both reset on SCRIPT FLUSH, as one interpreter did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Eval,
    Functions,
}

impl Engine {
    pub const BOTH: [Engine; 2] = [Engine::Eval, Engine::Functions];

    fn slot(self) -> &'static LocalKey<RefCell<Option<LuaEnv>>> {
        match self {
            Engine::Eval => &EVAL_ENV,
            Engine::Functions => &FUNCTIONS_ENV,
        }
    }
}

/// Runs `f` with this thread's interpreter of `engine`, creating it (again
/// after SCRIPT FLUSH) as needed.
pub fn with_env<R>(engine: Engine, generation: u64, f: impl FnOnce(&mut LuaEnv) -> R) -> mlua::Result<R> {
    engine.slot().with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_some_and(|env| env.generation != generation) {
            // SCRIPT FLUSH resets the interpreter, as Redis recreates its
            // Lua state: scripts, library settings (cjson's) and memory. The
            // old one goes first (its report with it), then a new one is built.
            *slot = None;
        }
        let env = match slot.as_mut() {
            Some(env) => env,
            None => slot.insert(LuaEnv::new(generation)?),
        };
        Ok(f(env))
    })
}

/// Drops this thread's interpreters SCRIPT FLUSH made stale (their share
/// of the server's figures goes with them), or else the libraries one loaded
/// if the registry changed since (see [`super::stale`]). Skips an
/// interpreter in use.
pub fn release_stale(current: super::stale::Generations) {
    for engine in Engine::BOTH {
        engine.slot().with(|cell| {
            let Ok(mut slot) = cell.try_borrow_mut() else { return };
            match slot.as_mut() {
                Some(env) if env.generation != current.scripts => *slot = None,
                Some(env) if env.holds_libraries && env.libraries_generation != current.libraries => {
                    env.release_libraries(current.libraries);
                }
                _ => {}
            }
        });
    }
}

/// Steps the collector of this thread's interpreters that ran scripts since
/// their last step, and reports their new sizes. Redis's one VM reaches its
/// next step (every 50th script, [`super::lua_gc`]) as long as scripts run;
/// an interpreter here stops receiving them when its scripts move (the
/// script thread's, once they prove short and run on the worker), and would
/// otherwise keep the garbage of its last scripts for good. Called when the
/// thread is idle or on its housekeeping tick; skips an interpreter in use.
pub fn collect_after_scripts() {
    for engine in Engine::BOTH {
        engine.slot().with(|cell| {
            let Ok(mut slot) = cell.try_borrow_mut() else { return };
            if let Some(env) = slot.as_mut() {
                if env.gc_pace.step_pending(&env.lua) {
                    if let Some(reported) = env.reported.as_mut() {
                        reported.set(env.lua.used_memory());
                    }
                }
            }
        });
    }
}

/// Whether this thread has an interpreter (tests).
pub fn has_env() -> bool {
    Engine::BOTH
        .iter()
        .any(|engine| engine.slot().with(|cell| cell.try_borrow().map(|slot| slot.is_some()).unwrap_or(true)))
}

/// Reports the bytes this thread's interpreter of `engine` uses into `total`
/// (the server's figure for that engine), if the thread has one.
pub fn report_memory(engine: Engine, total: &LuaMemory) {
    engine.slot().with(|cell| {
        if let Some(env) = cell.borrow_mut().as_mut() {
            let bytes = env.lua.used_memory();
            Reported::update(&mut env.reported, total, bytes);
        }
    });
}

impl LuaEnv {
    fn new(generation: u64) -> mlua::Result<Self> {
        // SAFETY: the debug library is loaded only so that the prelude can
        // keep `debug.getinfo` as an upvalue of its error handler; the
        // global `debug` is removed before any script runs.
        let lua = unsafe {
            Lua::unsafe_new_with(StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG, LuaOptions::new())
        };
        lua.set_memory_limit(MEMORY_LIMIT_BYTES)?;
        let globals = lua.globals();
        let debug: Table = globals.get("debug")?;
        let getinfo: Function = debug.get("getinfo")?;
        // Kept for the prelude only: code a script compiles gets the scripts'
        // environment (see `loadstring` there).
        let setfenv: Function = globals.get("setfenv")?;
        for name in ["debug", "loadfile", "dofile", "print", "setfenv", "getfenv", "newproxy", "module", "require"] {
            globals.raw_set(name, mlua::Value::Nil)?;
        }
        // `debug` stays reachable from the loaded-modules table otherwise.
        let loaded: Table = lua.named_registry_value("_LOADED")?;
        loaded.raw_set("debug", mlua::Value::Nil)?;
        let imp = lua.create_table()?;
        imp.raw_set("load_library_table", lua.create_function(load_library_table)?)?;
        imp.raw_set(
            "sha1hex",
            lua.create_function(|lua, s: mlua::String| lua.create_string(super::cache::sha1hex(&s.as_bytes())))?,
        )?;
        imp.raw_set("error_message", lua.create_function(|_, e: mlua::Error| Ok(error_message(&e)))?)?;
        imp.raw_set("error_counted", lua.create_function(|_, e: mlua::Error| Ok(error_counted(&e)))?)?;
        imp.raw_set(
            "load_log",
            lua.create_function(|_, (level, message): (i64, mlua::String)| {
                super::callbacks::log(level, &message);
                Ok(())
            })?,
        )?;
        super::prelude_chunk::load(&lua, Part::Core).call::<()>((imp.clone(), getinfo, setfenv))?;
        super::callbacks::install(&lua, &imp)?;
        let run = imp.raw_get("run")?;
        let functions = HashMap::new();
        let libraries = lua.create_table()?;
        let fields = super::convert::FieldNames::new(&lua)?;
        // The prelude's compilation leaves garbage: a new interpreter starts clean.
        lua.gc_collect()?;
        Ok(LuaEnv {
            lua,
            imp,
            run,
            functions_api: None,
            fields,
            functions,
            libraries,
            callbacks: HashMap::new(),
            libraries_generation: 0,
            holds_libraries: false,
            generation,
            reported: None,
            gc_pace: super::lua_gc::Pace::default(),
        })
    }

    /// The compiled script `sha`, compiling `body` if needed. Err: Redis's
    /// compile error text (`Error compiling script ...`).
    pub fn function(&mut self, sha: &str, body: &[u8]) -> Result<Function, String> {
        if let Some(f) = self.functions.get(sha) {
            return Ok(f.clone());
        }
        let env: Table = self.imp.raw_get("script_env").map_err(|e| format!("ERR {e}"))?;
        let f = self
            .lua
            .load(super::shebang::code(body))
            .set_name("@user_script")
            .set_environment(env)
            .into_function()
            .map_err(|e| format!("ERR Error compiling script (new function): {}", syntax_message(&e)))?;
        self.functions.insert(sha.to_string(), f.clone());
        Ok(f)
    }
}

impl LuaEnv {
    /// The functions API, loading prelude_functions.lua the first time.
    fn functions_api(&mut self) -> mlua::Result<&FunctionsApi> {
        if self.functions_api.is_none() {
            let chunk = super::prelude_chunk::load(&self.lua, Part::Functions).into_function()?;
            let load_part: Function = self.imp.raw_get("load_functions_part")?;
            load_part.call::<()>(chunk)?;
            let api = FunctionsApi {
                fenv: self.imp.raw_get("fenv")?,
                load_library: self.imp.raw_get("load_library")?,
                run_function: self.imp.raw_get("run_function")?,
            };
            self.functions_api = Some(api);
        }
        match &self.functions_api {
            Some(api) => Ok(api),
            None => Err(mlua::Error::runtime("the functions API is not loaded")),
        }
    }

    /// `impl.run_function` (FCALL), if the functions API is loaded (it is
    /// once a library was loaded here).
    pub fn run_function(&self) -> Option<&Function> {
        self.functions_api.as_ref().map(|api| &api.run_function)
    }

    /// Compiles a library's code and runs it in load mode (only
    /// `redis.register_function` and `redis.log` reachable), stopping it with
    /// `FUNCTION LOAD timeout` after `timeout` (None: no limit, replay).
    /// Ok: the functions it registered (lowercase name → a table of `name`,
    /// `description`, `callback`, `flags`); Err: Redis's error text.
    pub fn load_library(&mut self, code: &[u8], timeout: Option<Duration>) -> Result<Table, String> {
        let api = self.functions_api().map_err(|e| format!("ERR {e}"))?;
        let (fenv, load) = (api.fenv.clone(), api.load_library.clone());
        let chunk = self
            .lua
            .load(code)
            .set_name("@user_function")
            .set_environment(fenv)
            .into_function()
            .map_err(|e| format!("ERR Error compiling function: {}", syntax_message(&e)))?;
        if let Some(timeout) = timeout {
            let started = Instant::now();
            self.lua.set_hook(HookTriggers::new().every_nth_instruction(100_000), move |_, _| {
                if started.elapsed() > timeout {
                    return Err(mlua::Error::runtime("FUNCTION LOAD timeout"));
                }
                Ok(VmState::Continue)
            });
        }
        let result = load.call::<(bool, Value, Value)>(chunk);
        self.lua.remove_hook();
        match result {
            Ok((true, Value::Table(functions), Value::Integer(count))) if count > 0 => Ok(functions),
            Ok((true, Value::Table(functions), Value::Number(count))) if count > 0.0 => Ok(functions),
            Ok((true, _, _)) => Err("ERR No functions registered".into()),
            Ok((false, Value::String(message), _)) => {
                Err(format!("ERR Error registering functions: {}", message.to_string_lossy()))
            }
            Ok((false, _, _)) => Err("ERR Error registering functions".into()),
            Err(e) => Err(format!("ERR Error registering functions: {}", error_message(&e))),
        }
    }

    /// The callback of function `name` (lowercase) of `library`, loading the
    /// library into this interpreter the first time (and again after the
    /// registry changed: `generation`).
    pub fn library_function(&mut self, generation: u64, library: &Library, name: &str) -> Result<Function, String> {
        if self.libraries_generation != generation {
            self.libraries = self.lua.create_table().map_err(|e| format!("ERR {e}"))?;
            self.callbacks.clear();
            self.libraries_generation = generation;
            self.holds_libraries = false;
        }
        if let Some(callback) = self.callbacks.get(&library.id).and_then(|functions| functions.get(name)) {
            return Ok(callback.clone());
        }
        let callback = self.load_library_function(library, name)?;
        self.callbacks.entry(library.id).or_default().insert(name.to_string(), callback.clone());
        Ok(callback)
    }

    /// Drops the libraries loaded for an older registry, collects, and
    /// reports the smaller size to the server it last ran for.
    fn release_libraries(&mut self, generation: u64) {
        match self.lua.create_table() {
            Ok(empty) => self.libraries = empty,
            Err(_) => return,
        }
        self.callbacks.clear();
        self.libraries_generation = generation;
        self.holds_libraries = false;
        let _ = self.lua.gc_collect();
        if let Some(reported) = self.reported.as_mut() {
            reported.set(self.lua.used_memory());
        }
    }

    fn load_library_function(&mut self, library: &Library, name: &str) -> Result<Function, String> {
        let functions = match self.libraries.raw_get::<Option<Table>>(library.id) {
            Ok(Some(functions)) => functions,
            _ => {
                let functions = self.load_library(library.body(), None)?;
                self.libraries.raw_set(library.id, functions.clone()).map_err(|e| format!("ERR {e}"))?;
                self.holds_libraries = true;
                functions
            }
        };
        let entry: Table = functions.raw_get(name).map_err(|_| "ERR Function not found".to_string())?;
        entry.raw_get("callback").map_err(|_| "ERR Function not found".to_string())
    }
}

/// The table of library `name` (bit, cjson, cmsgpack, struct), built when a
/// script first uses it (see prelude.lua).
fn load_library_table(lua: &Lua, name: mlua::String) -> mlua::Result<Value> {
    let maker = std::rc::Rc::new(super::lua_lib::Maker::new(lua)?);
    let holder = lua.create_table()?;
    match &*name.as_bytes() {
        b"bit" => super::lua_bit::install(lua, &holder)?,
        b"cjson" => super::lua_cjson::install(lua, &maker, &holder)?,
        b"cmsgpack" => super::lua_cmsgpack::install(lua, &maker, &holder)?,
        b"struct" => super::lua_struct::install(lua, &maker, &holder)?,
        _ => return Ok(Value::Nil),
    }
    holder.raw_get(name)
}

/// An error a Rust function raised, as the text of a Redis error reply:
/// `redis.call`'s [`CallError`] as it is, anything else after `ERR `.
fn error_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => error_message(cause),
        mlua::Error::ExternalError(inner) => match inner.downcast_ref::<CallError>() {
            Some(call) => call.0.clone(),
            None => format!("ERR {inner}"),
        },
        mlua::Error::RuntimeError(message) => format!("ERR {message}"),
        other => format!("ERR {other}"),
    }
}

/// The error reply of a command `redis.call` ran, raised as a Lua error,
/// and whether it was counted in the error statistics already (a command's
/// error or refusal, not a bad argument to `redis.call` itself).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CallError(pub String, pub bool);

/// Whether a raised error is a [`CallError`] counted where it arose.
fn error_counted(e: &mlua::Error) -> bool {
    match e {
        mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => error_counted(cause),
        mlua::Error::ExternalError(inner) => inner.downcast_ref::<CallError>().is_some_and(|call| call.1),
        _ => false,
    }
}

/// The message of a compile error, without mlua's decoration.
fn syntax_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes `lua` uses once collected.
    fn live_bytes(lua: &Lua) -> usize {
        lua.gc_collect().expect("collects");
        lua.gc_collect().expect("collects");
        lua.used_memory()
    }

    /// The footprint docs/scripting.md reports ("Interpreter size"); was
    /// 64,166 bytes before the prelude was precompiled and split.
    #[test]
    fn a_new_interpreter_is_small() {
        let mut env = LuaEnv::new(0).expect("interpreter");
        let new = live_bytes(&env.lua);
        env.functions_api().expect("functions API");
        let with_functions = live_bytes(&env.lua);
        eprintln!("a new interpreter: {new} bytes; with the functions API: {with_functions} bytes");
        assert!(new < 46 * 1024, "{new}");
        assert!(with_functions < 56 * 1024, "{with_functions}");
    }
}
