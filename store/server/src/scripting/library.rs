//! Function libraries (Redis 7 FUNCTION): what `FUNCTION LOAD` registered,
//! shared by every thread. A library is its code (the `#!lua name=<lib>`
//! shebang included, as FUNCTION LIST WITHCODE shows it) and the functions
//! its load registered; each thread's interpreter loads the code again the
//! first time it calls one of them (see `lua_env::LuaEnv::library_function`).
//!
//! Library and function names are matched case-insensitively, as Redis's
//! dictionaries do. Every change bumps [`Libraries::generation`], so that
//! interpreters drop the libraries they loaded.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{RwLock, RwLockWriteGuard};

/// `no-writes`: the function may not write (FCALL_RO may call it).
pub const NO_WRITES: u8 = 1;
/// `allow-oom`: FCALL runs it above `maxmemory`.
pub const ALLOW_OOM: u8 = 2;
/// The flags Redis 7.0 defines, in its order, with their bits.
pub const FLAG_NAMES: &[(u8, &str)] =
    &[(1, "no-writes"), (2, "allow-oom"), (4, "allow-stale"), (8, "no-cluster"), (16, "allow-cross-slot-keys")];

const BAD_NAME: &str =
    "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// One registered function.
#[derive(Debug, Clone)]
pub struct FunctionInfo {
    pub name: String,
    pub description: Option<Vec<u8>>,
    /// Bits of [`FLAG_NAMES`].
    pub flags: u8,
    /// How long its runs take (whether it may run on a worker).
    pub speed: Arc<super::speed::RunSpeed>,
}

/// One library.
#[derive(Debug)]
pub struct Library {
    /// Unique per load: interpreters cache a library's callbacks by it.
    pub id: u64,
    pub name: String,
    /// The code as sent, shebang included.
    pub code: Vec<u8>,
    /// By lowercase name.
    pub functions: BTreeMap<String, FunctionInfo>,
}

impl Library {
    /// What Lua compiles: the code without its shebang line (its newline
    /// kept, so line numbers count the shebang as Redis's do).
    pub fn body(&self) -> &[u8] {
        let end = self.code.iter().position(|&b| b == b'\n').unwrap_or(self.code.len());
        &self.code[end..]
    }
}

/// What a library's shebang declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    pub name: String,
}

/// Reads `#!<engine> name=<lib>` (functionExtractLibMetaData), checks the
/// name and the engine. Err: Redis's error reply text.
pub fn metadata(code: &[u8]) -> Result<Metadata, String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let end = code.iter().position(|&b| b == b'\n').ok_or("ERR Invalid library metadata")?;
    let line = String::from_utf8_lossy(&code[..end]);
    let mut parts = line.split_ascii_whitespace();
    let engine = parts.next().ok_or("ERR Invalid library metadata")?.trim_start_matches("#!").to_string();
    let mut name = None;
    for part in parts {
        // sdssplitargs drops the quotes of `name="lib"`.
        let part = part.replace('"', "");
        match part.get(..5) {
            Some(prefix) if prefix.eq_ignore_ascii_case("name=") => {
                if name.is_some() {
                    return Err("ERR Invalid metadata value, name argument was given multiple times".into());
                }
                name = Some(part[5..].to_string());
            }
            _ => return Err(format!("ERR Invalid metadata value given: {part}")),
        }
    }
    let name = name.ok_or("ERR Library name was not given")?;
    if !valid_name(&name) {
        return Err(BAD_NAME.into());
    }
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    Ok(Metadata { name })
}

/// Letters, digits and underscores, at least one (functionsVerifyName).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The registry's content.
#[derive(Debug, Default, Clone)]
pub struct Registry {
    /// By lowercase library name.
    pub libraries: BTreeMap<String, Arc<Library>>,
    /// Lowercase function name → lowercase name of its library.
    functions: HashMap<String, String>,
}

impl Registry {
    /// The function `name` (any case) and its library.
    pub fn function(&self, name: &[u8]) -> Option<(Arc<Library>, &FunctionInfo)> {
        let key = String::from_utf8_lossy(name).to_ascii_lowercase();
        let library = self.libraries.get(self.functions.get(&key)?)?;
        let info = library.functions.get(&key)?;
        Some((library.clone(), info))
    }

    pub fn library(&self, name: &[u8]) -> Option<&Arc<Library>> {
        self.libraries.get(&String::from_utf8_lossy(name).to_ascii_lowercase())
    }

    /// Bytes of the libraries' code and names (INFO `used_memory_functions`,
    /// MEMORY STATS `functions.caches`).
    pub fn code_bytes(&self) -> usize {
        self.libraries.values().map(|l| l.code.len() + l.name.len()).sum()
    }

    pub fn function_count(&self) -> usize {
        self.functions.len()
    }

    /// Adds `library`, replacing a library of the same name if `replace`.
    /// Err (nothing changed): the name is taken, or one of its functions
    /// belongs to another library.
    pub fn add(&mut self, library: Library, replace: bool) -> Result<(), String> {
        let key = library.name.to_ascii_lowercase();
        if self.libraries.contains_key(&key) && !replace {
            return Err(format!("ERR Library '{}' already exists", library.name));
        }
        for name in library.functions.keys() {
            if self.functions.get(name).is_some_and(|owner| *owner != key) {
                return Err(format!("ERR Function {} already exists", library.functions[name].name));
            }
        }
        self.remove(&key);
        for name in library.functions.keys() {
            self.functions.insert(name.clone(), key.clone());
        }
        self.libraries.insert(key, Arc::new(library));
        Ok(())
    }

    /// Removes the library `key` (lowercase); whether it existed.
    pub fn remove(&mut self, key: &str) -> bool {
        let Some(old) = self.libraries.remove(key) else { return false };
        for name in old.functions.keys() {
            self.functions.remove(name);
        }
        true
    }
}

/// The server's function libraries.
#[derive(Debug, Default)]
pub struct Libraries {
    registry: RwLock<Registry>,
    generation: AtomicU64,
    next_id: AtomicU64,
}

impl Libraries {
    /// A consistent view for reading (FCALL, FUNCTION LIST, snapshots).
    pub fn read(&self) -> parking_lot::RwLockReadGuard<'_, Registry> {
        self.registry.read()
    }

    /// Changes the registry: `change` edits a copy, which replaces the
    /// registry only if it returns Ok (so a failed RESTORE or LOAD leaves
    /// everything as it was). `commit` runs with the lock still held, before
    /// the copy is installed (the caller logs the command there, so the log's
    /// order is the registry's).
    pub fn change<T>(
        &self,
        change: impl FnOnce(&mut Registry) -> Result<T, String>,
        commit: impl FnOnce() -> Result<(), String>,
    ) -> Result<T, String> {
        let mut registry: RwLockWriteGuard<'_, Registry> = self.registry.write();
        let mut copy = registry.clone();
        let value = change(&mut copy)?;
        commit()?;
        *registry = copy;
        self.generation.fetch_add(1, Ordering::SeqCst);
        Ok(value)
    }

    /// Bumped by every change.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// A fresh library id.
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_errors_are_redis_s() {
        assert_eq!(metadata(b"#!lua name=lib\nx").map(|m| m.name), Ok("lib".into()));
        assert_eq!(metadata(b"#!LUA NAME=lib\nx").map(|m| m.name), Ok("lib".into()));
        assert_eq!(metadata(b"return 1"), Err("ERR Missing library metadata".into()));
        assert_eq!(metadata(b"#!lua name=x"), Err("ERR Invalid library metadata".into()));
        assert_eq!(metadata(b"#!lua\n"), Err("ERR Library name was not given".into()));
        assert_eq!(metadata(b"#!lua name=a foo=bar\n"), Err("ERR Invalid metadata value given: foo=bar".into()));
        assert_eq!(metadata(b"#!bad name=a\n"), Err("ERR Engine 'bad' not found".into()));
        assert_eq!(metadata(b"#!lua name=a-b\n"), Err(BAD_NAME.into()));
    }

    fn library(name: &str, functions: &[&str]) -> Library {
        let functions = functions
            .iter()
            .map(|f| {
                (
                    f.to_ascii_lowercase(),
                    FunctionInfo { name: f.to_string(), description: None, flags: 0, speed: Arc::default() },
                )
            })
            .collect();
        Library { id: 0, name: name.into(), code: Vec::new(), functions }
    }

    #[test]
    fn names_collide_case_insensitively() {
        let mut registry = Registry::default();
        registry.add(library("lib", &["f1"]), false).expect("added");
        assert!(registry.add(library("LIB", &["f2"]), false).is_err());
        assert_eq!(registry.add(library("other", &["F1"]), false), Err("ERR Function F1 already exists".into()));
        registry.add(library("lib", &["f3"]), true).expect("replaced");
        assert!(registry.function(b"F3").is_some());
        assert!(registry.function(b"f1").is_none());
    }
}
