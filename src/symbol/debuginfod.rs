//! debuginfod: executables and debug files fetched by build-id from the servers named in
//! `DEBUGINFOD_URLS`, into the cache libdebuginfod keeps, so that `debuginfod-find`, gdb, perf
//! and hrec share one cache, its negative entries included.
//!
//! **Only with `DEBUGINFOD_URLS`.** Without it ([`Config::from_env`] is `None`) nothing is
//! contacted and the cache is not read, as libdebuginfod does. The other variables are
//! libdebuginfod's: `DEBUGINFOD_TIMEOUT` (seconds, default 90; 0: none) bounds the connection
//! and every read and asks for at least 100 KiB per that many seconds;
//! `DEBUGINFOD_MAXSIZE` (bytes) refuses larger files; the cache is `DEBUGINFOD_CACHE_PATH`,
//! else `~/.debuginfod_client_cache` where that exists, else
//! `$XDG_CACHE_HOME/debuginfod_client`, else `~/.cache/debuginfod_client`.
//!
//! **The cache** (elfutils' `debuginfod-client.c`, which calls its layout "deliberately
//! undocumented"; checked against elfutils 0.188): `<cache>/<build-id hex>/debuginfo` and
//! `.../executable`, directories 0700, files 0400, each written to a temporary file in the same
//! directory and renamed into place. A miss (every server answered with an HTTP error) leaves
//! an *empty* file there; it stands for "not on the servers" for `<cache>/cache_miss_s` seconds
//! (600 when that file is absent) after its mtime, and after that the file is asked for again.
//! A file from the cache or a server is used only when it is ELF with the build-id asked for.
//!
//! **Servers** are asked in their order in `DEBUGINFOD_URLS` (duplicates dropped), the first
//! file found wins. A server that cannot be reached (refused, timed out, no route, a TLS
//! failure) is not asked again in this run: the first request to a server is made alone, the
//! other threads wait for its outcome, so an unreachable server costs one timeout per run.
//! Every reply is bounded: a `Content-Length` above the limit is refused before reading, the
//! body is read up to the limit and never held in memory ([`store_reply`]).
//!
//! **When it is asked.** Before a symbolizer loads its files, it asks, on a few threads, for
//! what each sampled file with a recorded build-id lacks here ([`super::debuginfo::missing`]:
//! the executable when no file with its build-id is found, then its debug file when it has
//! no DWARF and none is installed); a report's resolution line says what was fetched, or why
//! not.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::elf::{build_id_matches, hex, read_elf_info};

/// libdebuginfod's default `DEBUGINFOD_TIMEOUT`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(90);
/// libdebuginfod's default for `cache_miss_s`: how long a negative entry stands.
pub const DEFAULT_CACHE_MISS: Duration = Duration::from_secs(600);
/// The most bytes one file may have without `DEBUGINFOD_MAXSIZE` (a kernel's debug file is
/// about 0.5 GB; this bounds what a broken server can write into the cache).
pub const MAX_FILE: u64 = 8 << 30;
/// At least this many bytes must arrive per timeout period (libdebuginfod's
/// `CURLOPT_LOW_SPEED_LIMIT`).
const LOW_SPEED: u64 = 100 * 1024;
/// How many redirects are followed by default.
pub const MAX_REDIRECTS: u32 = 8;
/// How many files are fetched at once.
const THREADS: usize = 4;

/// What is asked for: `/buildid/HEX/debuginfo` or `/buildid/HEX/executable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// The file with the DWARF (a separate debug file, or an unstripped binary).
    Debuginfo,
    /// The file with the loadable segments (the binary that ran).
    Executable,
}

impl Kind {
    /// The name in URLs and in the cache.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Debuginfo => "debuginfo",
            Kind::Executable => "executable",
        }
    }
}

/// The client's settings, from the environment as libdebuginfod reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The servers, in order, duplicates dropped.
    pub urls: Vec<String>,
    /// Connection and per-read bound (`None`: `DEBUGINFOD_TIMEOUT=0`, none).
    pub timeout: Option<Duration>,
    /// The cache directory.
    pub cache: PathBuf,
    /// `DEBUGINFOD_MAXSIZE`: larger files are refused (sent to the server as
    /// `X-DEBUGINFOD-MAXSIZE`).
    pub max_size: Option<u64>,
    /// How many redirects are followed (libdebuginfod follows them; federating servers
    /// redirect).
    pub max_redirects: u32,
}

impl Config {
    /// The settings of this process's environment; `None` without `DEBUGINFOD_URLS` (or with
    /// only spaces in it).
    pub fn from_env() -> Option<Config> {
        Config::from_vars(|name| std::env::var_os(name))
    }

    /// The settings from these variables (`var` returns a variable's value).
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Option<Config> {
        let text = |name: &str| var(name).map(|v| v.to_string_lossy().into_owned());
        let mut urls: Vec<String> = Vec::new();
        for u in text("DEBUGINFOD_URLS")?.split_ascii_whitespace() {
            if !urls.iter().any(|have| have == u) {
                urls.push(u.to_string());
            }
        }
        if urls.is_empty() {
            return None;
        }
        let timeout = match text("DEBUGINFOD_TIMEOUT").and_then(|t| leading_int(t.as_bytes())) {
            None => Some(DEFAULT_TIMEOUT),
            Some(s) if s <= 0 => None,
            Some(s) => Some(Duration::from_secs(s.unsigned_abs())),
        };
        let max_size = text("DEBUGINFOD_MAXSIZE")
            .and_then(|t| leading_int(t.as_bytes()))
            .filter(|&n| n > 0)
            .map(i64::unsigned_abs);
        let non_empty = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let cache = non_empty("DEBUGINFOD_CACHE_PATH").unwrap_or_else(|| {
            let home = non_empty("HOME").unwrap_or_else(|| PathBuf::from("/"));
            let old = home.join(".debuginfod_client_cache");
            if old.exists() {
                return old;
            }
            non_empty("XDG_CACHE_HOME")
                .unwrap_or_else(|| home.join(".cache"))
                .join("debuginfod_client")
        });
        Some(Config {
            urls,
            timeout,
            cache,
            max_size,
            max_redirects: MAX_REDIRECTS,
        })
    }

    /// The most bytes a file may have.
    pub fn limit(&self) -> u64 {
        self.max_size.unwrap_or(MAX_FILE).min(MAX_FILE)
    }
}

/// The number at the start of `text` (after blanks, with an optional sign), as C's `atol`
/// reads it; `None` when there is none or it overflows.
pub fn leading_int(text: &[u8]) -> Option<i64> {
    let text = text.trim_ascii_start();
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, text),
    };
    let end = digits
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(digits.len());
    let digits = digits.get(..end).filter(|d| !d.is_empty())?;
    let mut n: i64 = 0;
    for d in digits {
        n = n.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
    }
    Some(if negative { -n } else { n })
}

/// What the cache holds for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cached {
    /// The file, ELF with the build-id asked for.
    Hit(PathBuf),
    /// A negative entry younger than `cache_miss_s`: the servers did not have it.
    KnownMissing,
    /// Nothing usable (absent, a stale negative entry, or a file that is not the one asked for).
    Absent,
}

/// libdebuginfod's cache directory ([module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    /// The cache at `root`.
    pub fn new(root: PathBuf) -> Cache {
        Cache { root }
    }

    /// Its directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<cache>/<hex>/<kind>`; `None` for an empty build-id or one longer than libdebuginfod
    /// accepts (64 bytes).
    pub fn entry(&self, id: &[u8], kind: Kind) -> Option<PathBuf> {
        (!id.is_empty() && id.len() < 64).then(|| self.root.join(hex(id)).join(kind.name()))
    }

    /// How long a negative entry stands: `<cache>/cache_miss_s` (a number of seconds, as
    /// libdebuginfod writes it), else 600 s.
    pub fn cache_miss(&self) -> Duration {
        let mut text = Vec::new();
        let read = File::open(self.root.join("cache_miss_s"))
            .and_then(|f| f.take(64).read_to_end(&mut text));
        match read.ok().and_then(|_| leading_int(&text)) {
            Some(s) => Duration::from_secs(s.max(0).unsigned_abs()),
            None => DEFAULT_CACHE_MISS,
        }
    }

    /// What the cache holds for the file with build-id `id`; a negative entry counts for
    /// `cache_miss`.
    pub fn lookup(&self, id: &[u8], kind: Kind, cache_miss: Duration) -> Cached {
        let Some(path) = self.entry(id, kind) else {
            return Cached::Absent;
        };
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            return Cached::Absent;
        };
        if !meta.is_file() {
            return Cached::Absent;
        }
        if meta.len() == 0 {
            let age = meta
                .modified()
                .ok()
                .and_then(|m| SystemTime::now().duration_since(m).ok())
                .unwrap_or_default();
            // libdebuginfod: `time(NULL) - mtime <= cache_miss`, in whole seconds.
            return if age.as_secs() <= cache_miss.as_secs() {
                Cached::KnownMissing
            } else {
                Cached::Absent
            };
        }
        match read_elf_info(&path) {
            Ok(info) if build_id_matches(id, info.build_id.as_deref()) => Cached::Hit(path),
            _ => Cached::Absent,
        }
    }

    /// Leaves a negative entry for the file (an empty file, as libdebuginfod does), replacing
    /// a stale one.
    pub fn store_negative(&self, id: &[u8], kind: Kind) -> io::Result<()> {
        let path = self.entry(id, kind).ok_or(io::ErrorKind::InvalidInput)?;
        self.make_dir(&path)?;
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() == 0) {
            std::fs::remove_file(&path)?;
        }
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .open(&path)
        {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            r => r.map(drop),
        }
    }

    /// Creates the cache (0777 less the umask, as libdebuginfod) and the build-id's directory
    /// (0700) of the entry `path`.
    fn make_dir(&self, path: &Path) -> io::Result<()> {
        let dir = path.parent().ok_or(io::ErrorKind::InvalidInput)?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o777)
            .create(&self.root)?;
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
            r => r,
        }
    }
}

/// Why a reply was not stored.
#[derive(Debug)]
pub enum StoreError {
    /// Reading the reply failed (the server stopped sending, or was too slow).
    Transfer(io::Error),
    /// The reply is larger than the limit (`Content-Length`, or what arrived).
    TooLarge(u64),
    /// The file is not ELF, or not the one asked for (another build-id).
    NotTheFile,
    /// Writing into the cache failed.
    Cache(io::Error),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Transfer(e) => write!(f, "transfer failed: {e}"),
            StoreError::TooLarge(n) => write!(f, "larger than the limit of {n} bytes"),
            StoreError::NotTheFile => {
                f.write_str("the reply is not an ELF file with that build-id")
            }
            StoreError::Cache(e) => write!(f, "cannot write the cache: {e}"),
        }
    }
}

/// Stores a `200` reply's body as the cache's file for `id`: refused unread when `declared`
/// (its `Content-Length`) exceeds `limit`; read up to `limit` bytes into a temporary file
/// next to the entry (a longer body is refused); at least 100 KiB must arrive per `timeout`;
/// kept only when it is ELF with that build-id; made read-only (0400) and renamed into place.
pub fn store_reply(
    cache: &Cache,
    id: &[u8],
    kind: Kind,
    declared: Option<u64>,
    body: &mut dyn Read,
    limit: u64,
    timeout: Option<Duration>,
) -> Result<PathBuf, StoreError> {
    if let Some(n) = declared
        && n > limit
    {
        return Err(StoreError::TooLarge(limit));
    }
    let path = cache
        .entry(id, kind)
        .ok_or(StoreError::Cache(io::ErrorKind::InvalidInput.into()))?;
    cache.make_dir(&path).map_err(StoreError::Cache)?;
    let tmp = temp_name(&path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(StoreError::Cache)?;
    let result = copy_bounded(body, &mut file, limit, timeout).and_then(|()| {
        file.sync_all().map_err(StoreError::Cache)?;
        match read_elf_info(&tmp) {
            Ok(info) if build_id_matches(id, info.build_id.as_deref()) => {}
            _ => return Err(StoreError::NotTheFile),
        }
        file.set_permissions(std::fs::Permissions::from_mode(0o400))
            .map_err(StoreError::Cache)?;
        std::fs::rename(&tmp, &path).map_err(StoreError::Cache)
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map(|()| path)
}

/// `<entry>.hrec-<pid>-<n>`: unique among this process's threads and other processes.
fn temp_name(path: &Path) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let mut name = path.as_os_str().to_owned();
    name.push(format!(
        ".hrec-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    PathBuf::from(name)
}

/// Copies at most `limit` bytes (one more is an error), checking the rate per `timeout`.
fn copy_bounded(
    from: &mut dyn Read,
    to: &mut File,
    limit: u64,
    timeout: Option<Duration>,
) -> Result<(), StoreError> {
    let mut buf = vec![0u8; 64 << 10];
    let (mut total, mut window_start, mut window_bytes) = (0u64, Instant::now(), 0u64);
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(StoreError::Transfer(e)),
        };
        total += n as u64;
        if total > limit {
            return Err(StoreError::TooLarge(limit));
        }
        to.write_all(buf.get(..n).unwrap_or_default())
            .map_err(StoreError::Cache)?;
        window_bytes += n as u64;
        if let Some(t) = timeout
            && window_start.elapsed() >= t
        {
            if window_bytes < LOW_SPEED {
                return Err(StoreError::Transfer(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("less than 100 KiB in {} s", t.as_secs()),
                )));
            }
            (window_start, window_bytes) = (Instant::now(), 0);
        }
    }
}

/// What one server's replies came to, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerSummary {
    /// The URL as given.
    pub url: String,
    /// Debug files fetched from it.
    pub debuginfo: u64,
    /// Executables fetched from it.
    pub executables: u64,
    /// Files it does not have (HTTP 404 or another client error).
    pub not_found: u64,
    /// Replies that could not be used, and the first one's reason.
    pub failed: (u64, Option<String>),
    /// Why it was not asked again: it could not be reached.
    pub unreachable: Option<String>,
}

/// What debuginfod did in a run, for the report's resolution line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Per server, in `DEBUGINFOD_URLS` order.
    pub servers: Vec<ServerSummary>,
    /// Files the cache's negative entries say the servers do not have.
    pub known_missing: u64,
    /// Files that could not be asked for at all (every server unreachable).
    pub not_asked: u64,
}

impl Summary {
    /// Whether there is nothing to say: nothing was missing.
    pub fn is_empty(&self) -> bool {
        self.known_missing == 0
            && self.servers.iter().all(|s| {
                s.debuginfo == 0
                    && s.executables == 0
                    && s.not_found == 0
                    && s.failed.0 == 0
                    && s.unreachable.is_none()
            })
    }
}

/// A server and whether it can be reached.
#[derive(Debug)]
struct Server {
    url: String,
    health: Mutex<Health>,
    changed: Condvar,
    stats: Mutex<ServerSummary>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Health {
    /// Not asked yet.
    Unknown,
    /// The first request is on its way; the others wait for it.
    Probing,
    /// It answered.
    Alive,
    /// It could not be reached: not asked again.
    Dead,
}

/// How one request to one server ended.
#[derive(Debug)]
enum Reply {
    Stored(PathBuf),
    NotFound,
    Failed(String),
    Unreachable(String),
}

/// The files looked for (build-id, kind) and what was found.
type Asked = std::collections::HashMap<(Vec<u8>, Kind), Option<PathBuf>>;

/// Progress of a batch of fetches: `(done, total)`, from `(0, total)` to `(total, total)`.
pub type OnProgress = Arc<dyn Fn(u64, u64) + Send + Sync>;

/// The debuginfod client of one run ([module docs](self)).
pub struct Debuginfod {
    config: Config,
    cache: Cache,
    cache_miss: Duration,
    agent: ureq::Agent,
    servers: Vec<Server>,
    /// Files already looked for in this run, and what was found.
    asked: Mutex<Asked>,
    known_missing: AtomicU64,
    not_asked: AtomicU64,
    progress: Mutex<Option<OnProgress>>,
}

impl std::fmt::Debug for Debuginfod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Debuginfod")
            .field("config", &self.config)
            .field("servers", &self.servers)
            .finish_non_exhaustive()
    }
}

impl Debuginfod {
    /// The client of this process's environment; `None` without `DEBUGINFOD_URLS`.
    pub fn from_env() -> Option<Debuginfod> {
        Config::from_env().map(Debuginfod::new)
    }

    /// A client with these settings.
    pub fn new(config: Config) -> Debuginfod {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .user_agent(concat!("hrec/", env!("CARGO_PKG_VERSION")))
            .timeout_resolve(config.timeout)
            .timeout_connect(config.timeout)
            .timeout_send_request(config.timeout)
            .timeout_per_read(config.timeout)
            .max_redirects(config.max_redirects)
            .build()
            .new_agent();
        let cache = Cache::new(config.cache.clone());
        Debuginfod {
            cache_miss: cache.cache_miss(),
            cache,
            agent,
            servers: config
                .urls
                .iter()
                .map(|u| Server {
                    url: u.clone(),
                    health: Mutex::new(Health::Unknown),
                    changed: Condvar::new(),
                    stats: Mutex::new(ServerSummary {
                        url: u.clone(),
                        ..ServerSummary::default()
                    }),
                })
                .collect(),
            config,
            asked: Mutex::default(),
            known_missing: AtomicU64::new(0),
            not_asked: AtomicU64::new(0),
            progress: Mutex::new(None),
        }
    }

    /// Its settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Its cache.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// Called as each batch of [`Debuginfod::fetch_all`] goes on (a progress bar).
    pub fn set_progress(&self, on: Option<OnProgress>) {
        *self.progress.lock().unwrap_or_else(|e| e.into_inner()) = on;
    }

    /// The file with build-id `id`: from the cache, else from the first server that has it
    /// (stored in the cache). `None` when no server has it or none can be reached. Each file
    /// is looked for once per client.
    pub fn find(&self, id: &[u8], kind: Kind) -> Option<PathBuf> {
        let key = (id.to_vec(), kind);
        if let Some(found) = self
            .asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return found.clone();
        }
        let found = self.look(id, kind);
        self.asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, found.clone());
        found
    }

    fn look(&self, id: &[u8], kind: Kind) -> Option<PathBuf> {
        match self.cache.lookup(id, kind, self.cache_miss) {
            Cached::Hit(p) => return Some(p),
            Cached::KnownMissing => {
                self.known_missing.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            Cached::Absent => {}
        }
        let (mut answered, mut all_not_found) = (false, true);
        for s in &self.servers {
            if !self.usable(s) {
                // It might have had the file: no negative entry.
                all_not_found = false;
                continue;
            }
            let reply = self.ask(s, id, kind);
            let mut st = s.stats.lock().unwrap_or_else(|e| e.into_inner());
            let reachable = !matches!(reply, Reply::Unreachable(_));
            match reply {
                Reply::Stored(p) => {
                    match kind {
                        Kind::Debuginfo => st.debuginfo += 1,
                        Kind::Executable => st.executables += 1,
                    }
                    drop(st);
                    self.settle(s, true);
                    return Some(p);
                }
                Reply::NotFound => st.not_found += 1,
                Reply::Failed(why) => {
                    st.failed.0 += 1;
                    st.failed.1.get_or_insert(why);
                    all_not_found = false;
                }
                Reply::Unreachable(why) => {
                    st.unreachable.get_or_insert(why);
                    all_not_found = false;
                }
            }
            drop(st);
            self.settle(s, reachable);
            answered |= reachable;
        }
        if !answered {
            self.not_asked.fetch_add(1, Ordering::Relaxed);
        } else if all_not_found {
            // Every server answered that it has no such file: libdebuginfod's negative entry.
            let _ = self.cache.store_negative(id, kind);
        }
        None
    }

    /// Whether `s` may be asked: waits while another thread's first request to it is on its
    /// way; makes this request the first when none was made.
    fn usable(&self, s: &Server) -> bool {
        let mut h = s.health.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match *h {
                Health::Unknown => {
                    *h = Health::Probing;
                    return true;
                }
                Health::Probing => h = s.changed.wait(h).unwrap_or_else(|e| e.into_inner()),
                Health::Alive => return true,
                Health::Dead => return false,
            }
        }
    }

    /// Records whether `s` answered.
    fn settle(&self, s: &Server, reachable: bool) {
        let mut h = s.health.lock().unwrap_or_else(|e| e.into_inner());
        *h = if reachable {
            Health::Alive
        } else {
            Health::Dead
        };
        s.changed.notify_all();
    }

    fn ask(&self, s: &Server, id: &[u8], kind: Kind) -> Reply {
        let base = s.url.strip_suffix('/').unwrap_or(&s.url);
        let url = format!("{base}/buildid/{}/{}", hex(id), kind.name());
        let mut req = self.agent.get(&url);
        if let Some(max) = self.config.max_size {
            req = req.header("X-DEBUGINFOD-MAXSIZE", max.to_string());
        }
        let resp = match req.call() {
            Ok(r) => r,
            Err(e) => return Reply::Unreachable(self.why(&e)),
        };
        match resp.status().as_u16() {
            200 => {}
            406 => return Reply::Failed("larger than DEBUGINFOD_MAXSIZE".to_string()),
            400..=499 => return Reply::NotFound,
            code => return Reply::Failed(format!("HTTP {code}")),
        }
        let body = resp.into_body();
        let declared = body.content_length();
        // Unlimited here: store_reply bounds it, and refuses a Content-Length over the limit.
        let mut reader = body.into_reader();
        let stored = store_reply(
            &self.cache,
            id,
            kind,
            declared,
            &mut reader,
            self.config.limit(),
            self.config.timeout,
        );
        match stored {
            Ok(p) => Reply::Stored(p),
            Err(StoreError::Transfer(e)) if e.kind() == io::ErrorKind::TimedOut => {
                Reply::Unreachable(self.timed_out())
            }
            Err(e) => Reply::Failed(e.to_string()),
        }
    }

    fn timed_out(&self) -> String {
        match self.config.timeout {
            Some(t) => format!("no answer within {} s (DEBUGINFOD_TIMEOUT)", t.as_secs()),
            None => "timed out".to_string(),
        }
    }

    /// A short reason for a failed request.
    fn why(&self, e: &ureq::Error) -> String {
        match e {
            ureq::Error::Timeout(_) => self.timed_out(),
            ureq::Error::Io(io) if io.kind() == io::ErrorKind::TimedOut => self.timed_out(),
            ureq::Error::Io(io) => match io.kind() {
                io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
                io::ErrorKind::NetworkUnreachable | io::ErrorKind::HostUnreachable => {
                    "no route to it".to_string()
                }
                _ => io.to_string(),
            },
            ureq::Error::HostNotFound => "host not found".to_string(),
            other => other.to_string(),
        }
    }

    /// Runs `fetch` for every item on a few threads, reporting progress as each ends.
    pub fn fetch_all<T: Sync>(&self, items: &[T], fetch: impl Fn(&T) + Sync) {
        if items.is_empty() {
            return;
        }
        let total = items.len() as u64;
        let progress = self
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let report = |done: u64| {
            if let Some(p) = &progress {
                p(done, total);
            }
        };
        report(0);
        let (next, done) = (AtomicUsize::new(0), AtomicU64::new(0));
        std::thread::scope(|sc| {
            for _ in 0..THREADS.min(items.len()) {
                sc.spawn(|| {
                    while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
                        fetch(item);
                        report(done.fetch_add(1, Ordering::Relaxed) + 1);
                    }
                });
            }
        });
    }

    /// What was found and fetched so far.
    pub fn summary(&self) -> Summary {
        Summary {
            servers: self
                .servers
                .iter()
                .map(|s| s.stats.lock().unwrap_or_else(|e| e.into_inner()).clone())
                .collect(),
            known_missing: self.known_missing.load(Ordering::Relaxed),
            not_asked: self.not_asked.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests;
