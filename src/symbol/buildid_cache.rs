//! perf's build-id cache: where it is and how it is laid out, for both the reader (the
//! symbolizer's lookup of a binary that was deleted or rebuilt since the recording) and the
//! writer (`hrec buildid-cache`), so the two cannot disagree.
//!
//! Layout (perf 6.1, `tools/perf/util/build-id.c`), with `<hex>` the build-id in lowercase hex:
//!
//! * `<cache>/<real path of the file>/<hex>/elf`: the copy (perf also writes `debug`,
//!   `probes`, `kallsyms` there; they are removed with the entry and otherwise left alone),
//! * `<cache>/.build-id/<xx>/<rest of hex>`: a symlink to `../../<real path>/<hex>`
//!   (relative, as perf writes it), so `<cache>/.build-id/xx/rest/elf` is the copy,
//! * `<cache>/<real path>/<hex>/debug`: the file's separate debug file, where perf puts one it
//!   fetched (`dso__build_id_filename(.., is_debug)`) and `hrec archive` packs one; the
//!   symbolizer finds it as `<cache>/.build-id/xx/rest/debug` ([`Cache::debug_file`]).
//!
//! [`entry_dir`], [`link_path`] and [`link_target`] give these names relative to the cache, for
//! the cache itself and for `hrec archive`, which writes the same layout into a tar file.
//!
//! The cache directory is, in this order: `--buildid-dir DIR`, `$HREC_BUILDID_DIR`,
//! `$PERF_BUILDID_DIR` (what perf sets for the programs it runs), `buildid.dir` of perf's
//! config (`~/.perfconfig`, then `/etc/perfconfig`), `~/.debug` ([`resolve_dir`]).

use std::fmt::Write as _;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// The environment variable that names hrec's build-id cache directory.
pub const ENV: &str = "HREC_BUILDID_DIR";

/// The cache directory: `explicit` (`--buildid-dir`), else `$HREC_BUILDID_DIR`, else
/// `$PERF_BUILDID_DIR`, else `buildid.dir` in `~/.perfconfig` or `/etc/perfconfig`, else
/// `~/.debug`; `None` only without any of them and without `$HOME`.
pub fn resolve_dir(explicit: Option<&Path>) -> Option<PathBuf> {
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = env("HOME");
    explicit
        .map(Path::to_path_buf)
        .or_else(|| env(ENV))
        .or_else(|| env("PERF_BUILDID_DIR"))
        .or_else(|| {
            let user = home.as_ref().map(|h| h.join(".perfconfig"));
            user.into_iter()
                .chain([PathBuf::from("/etc/perfconfig")])
                .find_map(|f| perfconfig_buildid_dir(&std::fs::read_to_string(f).ok()?))
        })
        .or_else(|| home.map(|h| h.join(".debug")))
}

/// `buildid.dir` of a perf config file's text (git-config syntax: `[buildid]` then
/// `dir = PATH`; the last one wins), when it sets one.
pub fn perfconfig_buildid_dir(text: &str) -> Option<PathBuf> {
    let mut section = String::new();
    let mut dir = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[') {
            section = s.trim_end_matches(']').trim().to_ascii_lowercase();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if section == "buildid" && key.trim().eq_ignore_ascii_case("dir") {
            let v = value.trim().trim_matches('"');
            if !v.is_empty() {
                dir = Some(PathBuf::from(v));
            }
        }
    }
    dir
}

/// The build-id as lowercase hex.
pub fn hex(build_id: &[u8]) -> String {
    let mut s = String::with_capacity(build_id.len() * 2);
    for b in build_id {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The name the vdso is mapped and cached under (`[vdso]/<hex>/vdso`).
pub const VDSO: &str = "[vdso]";

/// `<real path>/<hex>`, an entry's directory relative to the cache (`path` absolute; its
/// root and `..` are dropped lexically, so the entry stays under the cache).
pub fn entry_dir(path: &Path, hex: &str) -> PathBuf {
    relative(path).join(hex)
}

/// `.build-id/xx/rest`, the link for the build-id `hex` relative to the cache; `None` for an
/// id shorter than two bytes.
pub fn link_path(hex: &str) -> Option<PathBuf> {
    if hex.len() < 4 || !hex.is_char_boundary(2) {
        return None;
    }
    Some(Path::new(".build-id").join(&hex[..2]).join(&hex[2..]))
}

/// `../../<real path>/<hex>`: what the link of an entry points to, relative to the link's
/// directory `.build-id/xx/`, as perf writes it.
pub fn link_target(path: &Path, hex: &str) -> PathBuf {
    Path::new("../..").join(entry_dir(path, hex))
}

/// Why a cache operation failed; each displays as one line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The file could not be read (missing, unreadable).
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The file is not an ELF file.
    #[error("{}: not an ELF file", path.display())]
    NotElf {
        /// The file.
        path: PathBuf,
    },
    /// The ELF file has no `NT_GNU_BUILD_ID` note.
    #[error("{}: no build-id (link with -Wl,--build-id to get one)", path.display())]
    NoBuildId {
        /// The file.
        path: PathBuf,
    },
    /// The file is not the build that was mapped.
    #[error("{}: another build than the one mapped", path.display())]
    OtherBuild {
        /// The file.
        path: PathBuf,
    },
    /// The cache could not be written or read.
    #[error("build-id cache {}: {source}", path.display())]
    Cache {
        /// The file or directory in the cache.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// The GNU build-id of the ELF file at `path`.
pub fn read_build_id(path: &Path) -> Result<Vec<u8>, CacheError> {
    use object::Object as _;
    let read = |source| CacheError::Read {
        path: path.to_path_buf(),
        source,
    };
    let data = std::fs::read(path).map_err(read)?;
    if !data.starts_with(b"\x7fELF") {
        return Err(CacheError::NotElf {
            path: path.to_path_buf(),
        });
    }
    let obj = object::File::parse(&*data).map_err(|_| CacheError::NotElf {
        path: path.to_path_buf(),
    })?;
    match obj.build_id() {
        Ok(Some(id)) if !id.is_empty() => Ok(id.to_vec()),
        _ => Err(CacheError::NoBuildId {
            path: path.to_path_buf(),
        }),
    }
}

/// One cached file: its build-id (hex) and the absolute path it was cached from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    /// Lowercase hex.
    pub build_id: String,
    /// The real path of the file when it was added.
    pub path: PathBuf,
}

/// A build-id cache directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    /// The cache at `root` (nothing is read or created yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Cache { root: root.into() }
    }

    /// The cache directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<cache>/.build-id/xx/rest`, the link for `build_id` (hex); `None` for an id shorter
    /// than two bytes.
    fn link(&self, hex: &str) -> Option<PathBuf> {
        Some(self.root.join(link_path(hex)?))
    }

    /// `<cache>/<path>/<hex>`, the entry's directory (`path` absolute, without `..`).
    fn entry_dir(&self, path: &Path, hex: &str) -> PathBuf {
        self.root.join(entry_dir(path, hex))
    }

    /// The cached copy of the binary with `build_id` (`<cache>/.build-id/xx/rest/elf`), when it
    /// is there.
    pub fn binary(&self, build_id: &[u8]) -> Option<PathBuf> {
        let p = self.link(&hex(build_id))?.join("elf");
        p.is_file().then_some(p)
    }

    /// The separate debug file cached for the binary with `build_id`
    /// (`<cache>/.build-id/xx/rest/debug`), when it is there.
    pub fn debug_file(&self, build_id: &[u8]) -> Option<PathBuf> {
        let p = self.link(&hex(build_id))?.join("debug");
        p.is_file().then_some(p)
    }

    /// The vdso image with build-id `hex` (`<cache>/[vdso]/<hex>/vdso`, perf's layout), when
    /// it is there.
    pub fn vdso(&self, hex: &str) -> Option<PathBuf> {
        let p = self.entry_dir(Path::new(VDSO), hex).join("vdso");
        p.is_file().then_some(p)
    }

    /// Saves the vdso `image` (build-id `hex`) as `<cache>/[vdso]/<hex>/vdso` with its
    /// `.build-id` link, as perf record saves it; an image already there of the same size is
    /// kept. Returns its path.
    pub fn add_vdso(&self, hex: &str, image: &[u8]) -> Result<PathBuf, CacheError> {
        let link = self.link(hex).ok_or_else(|| CacheError::NoBuildId {
            path: PathBuf::from(VDSO),
        })?;
        let dir = self.entry_dir(Path::new(VDSO), hex);
        let cache_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| CacheError::Cache { path, source }
        };
        let file = dir.join("vdso");
        if std::fs::metadata(&file).is_ok_and(|m| m.len() == image.len() as u64) {
            return Ok(file);
        }
        std::fs::create_dir_all(&dir).map_err(cache_err(&dir))?;
        let tmp = dir.join(format!(".vdso.{}.tmp", std::process::id()));
        std::fs::write(&tmp, image).map_err(cache_err(&tmp))?;
        std::fs::rename(&tmp, &file).map_err(cache_err(&file))?;
        let link_dir = link.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(link_dir).map_err(cache_err(link_dir))?;
        if std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(link_target(Path::new(VDSO), hex), &link)
                .map_err(cache_err(&link))?;
        }
        Ok(file)
    }

    /// Copies the ELF file at `file` into the cache under its build-id and real path, with its
    /// `.build-id` link; an entry already there is replaced.
    pub fn add(&self, file: &Path) -> Result<Entry, CacheError> {
        let id = read_build_id(file)?;
        let real = std::fs::canonicalize(file).map_err(|source| CacheError::Read {
            path: file.to_path_buf(),
            source,
        })?;
        self.insert(&real, &real, &id)
    }

    /// Copies `source`, the file a process mapped as `path` (read through `/proc/PID/root`
    /// or `/proc/PID/map_files` while the process lived: `path` may name another file, or
    /// none, in this mount namespace), into the cache under `path`, after checking that its
    /// build-id is `build_id`.
    pub fn add_mapped(
        &self,
        source: &Path,
        path: &Path,
        build_id: &[u8],
    ) -> Result<Entry, CacheError> {
        let id = read_build_id(source)?;
        if id != build_id {
            return Err(CacheError::OtherBuild {
                path: source.to_path_buf(),
            });
        }
        self.insert(source, path, &id)
    }

    /// Copies `source`, the separate debug file of the binary mapped as `path` with
    /// `build_id` (its build-id checked), next to the binary's copy as `debug`, where
    /// [`Cache::debug_file`] finds it: the binary's entry must be there already.
    pub fn add_debug_mapped(
        &self,
        source: &Path,
        path: &Path,
        build_id: &[u8],
    ) -> Result<PathBuf, CacheError> {
        if read_build_id(source)? != build_id {
            return Err(CacheError::OtherBuild {
                path: source.to_path_buf(),
            });
        }
        let dir = self.entry_dir(path, &hex(build_id));
        let cache_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| CacheError::Cache { path, source }
        };
        let debug = dir.join("debug");
        let tmp = dir.join(format!(".debug.{}.tmp", std::process::id()));
        std::fs::copy(source, &tmp).map_err(cache_err(&tmp))?;
        std::fs::rename(&tmp, &debug).map_err(cache_err(&debug))?;
        Ok(debug)
    }

    /// Copies `source` into the entry of `path` and `id`, with its `.build-id` link.
    fn insert(&self, source: &Path, real: &Path, id: &[u8]) -> Result<Entry, CacheError> {
        let real = real.to_path_buf();
        let file = source;
        let hex = hex(id);
        let link = self.link(&hex).ok_or_else(|| CacheError::NoBuildId {
            path: file.to_path_buf(),
        })?;
        let dir = self.entry_dir(&real, &hex);
        let cache_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| CacheError::Cache { path, source }
        };
        std::fs::create_dir_all(&dir).map_err(cache_err(&dir))?;
        let elf = dir.join("elf");
        let tmp = dir.join(format!(".elf.{}.tmp", std::process::id()));
        std::fs::copy(source, &tmp).map_err(cache_err(&tmp))?;
        std::fs::rename(&tmp, &elf).map_err(cache_err(&elf))?;
        let link_dir = link.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(link_dir).map_err(cache_err(link_dir))?;
        let target = link_target(&real, &hex);
        match std::fs::symlink_metadata(&link) {
            Ok(_) => std::fs::remove_file(&link).map_err(cache_err(&link))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(cache_err(&link)(e)),
        }
        std::os::unix::fs::symlink(&target, &link).map_err(cache_err(&link))?;
        Ok(Entry {
            build_id: hex,
            path: real,
        })
    }

    /// Every entry with a `.build-id` link to an existing directory, sorted by build-id; with
    /// `valid_only`, as `perf buildid-cache --list` (`build_id_cache__valid_id`), only those
    /// whose file is still at its path with that build-id. A cache that does not exist is
    /// empty.
    pub fn list(&self, valid_only: bool) -> Result<Vec<Entry>, CacheError> {
        let top = self.root.join(".build-id");
        let mut out = Vec::new();
        let firsts = match std::fs::read_dir(&top) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(source) => return Err(CacheError::Cache { path: top, source }),
        };
        for first in firsts.flatten() {
            let Ok(links) = std::fs::read_dir(first.path()) else {
                continue;
            };
            for link in links.flatten() {
                let Some(e) = self.entry_of_link(&first.file_name(), &link.path()) else {
                    continue;
                };
                if !valid_only || read_build_id(&e.path).is_ok_and(|id| hex(&id) == e.build_id) {
                    out.push(e);
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// The entry a `.build-id/xx/rest` link stands for: its target must be
    /// `../../<path>/<xx><rest>` and exist.
    fn entry_of_link(&self, first: &std::ffi::OsStr, link: &Path) -> Option<Entry> {
        let target = std::fs::read_link(link).ok()?;
        let hex = format!(
            "{}{}",
            first.to_str()?,
            link.file_name()?.to_str()?.trim_end_matches(".debug")
        );
        if target.file_name()?.as_bytes() != hex.as_bytes() {
            return None;
        }
        let path = target.parent()?.strip_prefix("../..").ok()?;
        if !link.is_dir() {
            return None;
        }
        Some(Entry {
            build_id: hex,
            path: Path::new("/").join(path),
        })
    }

    /// Removes the entry with the build-id of the file at `file` (whatever path it was cached
    /// under) and its link; `None` when the cache has no such entry.
    pub fn remove(&self, file: &Path) -> Result<Option<Entry>, CacheError> {
        let hex = hex(&read_build_id(file)?);
        let Some(link) = self.link(&hex) else {
            return Ok(None);
        };
        let first = std::ffi::OsString::from(&hex[..2]);
        let Some(entry) = self.entry_of_link(&first, &link) else {
            return Ok(None);
        };
        self.remove_entry(&entry)?;
        Ok(Some(entry))
    }

    /// Removes every entry cached from the path of `file` (the file need not exist any more),
    /// whatever its build-id; returns them.
    pub fn purge(&self, file: &Path) -> Result<Vec<Entry>, CacheError> {
        let real = std::fs::canonicalize(file)
            .or_else(|_| std::path::absolute(file))
            .map_err(|source| CacheError::Read {
                path: file.to_path_buf(),
                source,
            })?;
        let dir = self.root.join(relative(&real));
        let mut gone = Vec::new();
        let Ok(ids) = std::fs::read_dir(&dir) else {
            return Ok(gone);
        };
        for id in ids.flatten() {
            let Some(hex) = id.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if hex.len() < 4 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let entry = Entry {
                build_id: hex,
                path: real.clone(),
            };
            self.remove_entry(&entry)?;
            gone.push(entry);
        }
        gone.sort();
        // The path's directory, when nothing else is left in it.
        let _ = std::fs::remove_dir(&dir);
        Ok(gone)
    }

    /// Removes the entry's directory, and its link when the link points there.
    fn remove_entry(&self, entry: &Entry) -> Result<(), CacheError> {
        let dir = self.entry_dir(&entry.path, &entry.build_id);
        if let Some(link) = self.link(&entry.build_id) {
            let target = link_target(&entry.path, &entry.build_id);
            if std::fs::read_link(&link).is_ok_and(|t| t == target) {
                std::fs::remove_file(&link).map_err(|source| CacheError::Cache {
                    path: link.clone(),
                    source,
                })?;
            }
        }
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(CacheError::Cache { path: dir, source }),
        }
    }
}

/// `path` without its root and without `.`/`..` (lexically), to be joined under the cache.
fn relative(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buildid_dir_is_read_from_perfs_config() {
        let text = "# perf\n[report]\n\tdir = /no\n[buildid]\n\tdir = /var/cache/perf\n";
        assert_eq!(
            perfconfig_buildid_dir(text),
            Some(PathBuf::from("/var/cache/perf"))
        );
        assert_eq!(perfconfig_buildid_dir("[report]\ndir = /x\n"), None);
        assert_eq!(
            perfconfig_buildid_dir("[BuildID]\n DIR = \"/q\"\n"),
            Some(PathBuf::from("/q"))
        );
    }

    #[test]
    fn explicit_dir_comes_first() {
        assert_eq!(
            resolve_dir(Some(Path::new("/given"))),
            Some(PathBuf::from("/given"))
        );
    }

    #[test]
    fn paths_stay_under_the_cache() {
        assert_eq!(relative(Path::new("/a/../../b/./c")), PathBuf::from("b/c"));
    }

    #[test]
    fn layout_names_relative_to_the_cache() {
        let (path, hex) = (Path::new("/usr/bin/prog"), "ab01cd");
        assert_eq!(entry_dir(path, hex), PathBuf::from("usr/bin/prog/ab01cd"));
        assert_eq!(link_path(hex), Some(PathBuf::from(".build-id/ab/01cd")));
        assert_eq!(link_path("ab"), None);
        assert_eq!(
            link_target(path, hex),
            PathBuf::from("../../usr/bin/prog/ab01cd")
        );
        // The link resolves to the entry from its own directory.
        let mut resolved = link_path(hex).unwrap().parent().unwrap().to_path_buf();
        for c in link_target(path, hex).components() {
            match c {
                Component::ParentDir => assert!(resolved.pop()),
                other => resolved.push(other),
            }
        }
        assert_eq!(resolved, entry_dir(path, hex));
    }

    #[test]
    fn add_list_remove_purge_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path().join("cache"));
        let exe = std::env::current_exe().unwrap();
        let Ok(id) = read_build_id(&exe) else {
            return; // a test binary linked without a build-id
        };
        let e = cache.add(&exe).unwrap();
        assert_eq!(e.build_id, hex(&id));
        let link = std::fs::read_link(cache.link(&e.build_id).unwrap()).unwrap();
        assert!(link.starts_with("../.."), "{link:?}");
        assert_eq!(cache.list(true).unwrap(), vec![e.clone()]);
        assert!(cache.binary(&id).is_some());
        assert_eq!(cache.debug_file(&id), None, "add copies no debug file");
        assert_eq!(cache.remove(&exe).unwrap(), Some(e.clone()));
        assert!(cache.list(false).unwrap().is_empty());
        assert_eq!(cache.remove(&exe).unwrap(), None);
        cache.add(&exe).unwrap();
        assert_eq!(cache.purge(&exe).unwrap(), vec![e]);
        assert!(cache.binary(&id).is_none());
    }
}
