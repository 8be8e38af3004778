//! Finding the separate debug file of a stripped binary, the way distributions ship them.
//!
//! Distributions strip executables and libraries and ship their DWARF (and full `.symtab`) in
//! separate packages (`libc6-dbg`, `*-debuginfo`, `*-dbgsym`). A debug file is tied to its
//! binary in two ways, which are tried in this order:
//!
//! 1. **Build id.** The linker writes a hash of the output into the `NT_GNU_BUILD_ID` note; the
//!    debug file carries the same note and is installed as
//!    `<debug dir>/.build-id/xx/rest.debug`, where `xx` is the first byte of the id in hex and
//!    `rest` the remaining bytes. This is exact and needs no reading of candidates.
//! 2. **`.gnu_debuglink`.** The binary names its debug file and stores the CRC32 of the whole
//!    debug file. The name is looked up next to the binary, in `<bindir>/.debug/`, and under
//!    each debug dir as `<debug dir>/<bindir>/name` (GDB's "global debug directory" rule). A
//!    candidate is accepted only when its CRC32 matches, so a debug file left over from another
//!    build is never used.
//!
//! `dwz` moves DWARF shared between several debug files into one *supplementary* file and
//! records its name (absolute, or relative to the debug file) and build id in
//! `.gnu_debugaltlink`; [`find_alt_file`] finds it by that name and else by the build-id
//! layout. DWARF that refers into the supplementary file (`DW_FORM_GNU_ref_alt`,
//! `DW_FORM_GNU_strp_alt`) can only be read with it.
//!
//! **perf's build-id cache.** `perf record` copies every binary with samples into
//! `~/.debug/.build-id/xx/rest/elf`, so `perf report` still names the functions of a binary
//! that was rebuilt or deleted since. [`SearchPaths::cached_binary`] finds that copy by the
//! recorded build id, for the same reason; where the cache is and its layout are
//! [`super::buildid_cache`]'s, which `hrec buildid-cache` writes with. A debug file in the
//! cache (`.build-id/xx/rest/debug`: one perf fetched, or one `hrec archive` packed) is found
//! by build id right after the debug directories' ([`SearchPaths::cached_debug_file`]), and so
//! is a dwz supplementary file packed there.
//!
//! All lookups are best effort: a missing or unreadable candidate is skipped, never an error.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::elf::{build_id_matches, read_elf_info};
use super::{buildid_cache, debuginfod};

/// Where separate debug files are searched for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchPaths {
    /// Global debug directories, searched in order, each holding a `.build-id/` tree and a
    /// mirror of the file system for `.gnu_debuglink` names (`/usr/lib/debug` by default).
    pub debug_dirs: Vec<PathBuf>,
    /// perf's build-id cache ([`buildid_cache::resolve_dir`]: `$HREC_BUILDID_DIR`,
    /// `$PERF_BUILDID_DIR`, perf's `buildid.dir`, else `~/.debug`), when there is one.
    pub build_id_cache: Option<PathBuf>,
    /// libdebuginfod's cache ([`super::debuginfod`]), read only while `DEBUGINFOD_URLS` is
    /// set (as libdebuginfod does): executables as `<cache>/<hex>/executable`, debug files as
    /// `<cache>/<hex>/debuginfo`, each used only with the build-id asked for.
    pub debuginfod_cache: Option<PathBuf>,
    /// Where compressed DWARF sections are kept inflated between runs
    /// ([`super::inflated`]: `<hrec cache>/dwarf`), when anywhere.
    pub inflated_cache: Option<PathBuf>,
}

impl Default for SearchPaths {
    fn default() -> Self {
        SearchPaths {
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            build_id_cache: buildid_cache::resolve_dir(None),
            debuginfod_cache: debuginfod::Config::from_env().map(|c| c.cache),
            inflated_cache: crate::cache::dir().map(|d| d.join("dwarf")),
        }
    }
}

impl SearchPaths {
    /// The copy of the binary with `build_id` in perf's build-id cache
    /// (`<cache>/.build-id/xx/rest/elf`), else in debuginfod's cache, when it is there.
    pub fn cached_binary(&self, build_id: &[u8]) -> Option<PathBuf> {
        self.perf_cached_binary(build_id)
            .or_else(|| self.debuginfod_file(build_id, debuginfod::Kind::Executable))
    }

    /// The file with `build_id` in debuginfod's cache (not a negative entry; the build-id
    /// checked), when there is one.
    pub fn debuginfod_file(&self, build_id: &[u8], kind: debuginfod::Kind) -> Option<PathBuf> {
        let cache = debuginfod::Cache::new(self.debuginfod_cache.clone()?);
        match cache.lookup(build_id, kind, std::time::Duration::ZERO) {
            debuginfod::Cached::Hit(p) => Some(p),
            _ => None,
        }
    }

    fn perf_cached_binary(&self, build_id: &[u8]) -> Option<PathBuf> {
        buildid_cache::Cache::new(self.build_id_cache.as_ref()?).binary(build_id)
    }

    /// The separate debug file with `build_id` in perf's build-id cache
    /// (`<cache>/.build-id/xx/rest/debug`), when it is there.
    pub fn cached_debug_file(&self, build_id: &[u8]) -> Option<PathBuf> {
        buildid_cache::Cache::new(self.build_id_cache.as_ref()?).debug_file(build_id)
    }
}

/// Finds the separate debug file for `binary` the way distributions ship it, in this order:
///
/// 1. `<dir>/.build-id/xx/rest.debug` for each debug dir (build id in hex, first byte = `xx`),
///    then perf's build-id cache, `<cache>/.build-id/xx/rest/debug`
///    ([`SearchPaths::cached_debug_file`]),
/// 2. the `.gnu_debuglink` name, checked with its CRC32, in: the binary's directory,
///    `<bindir>/.debug/`, and `<dir>/<bindir>/` for each debug dir. The binary's directory is
///    tried as given (made absolute) and, when different, with symlinks resolved;
/// 3. debuginfod's cache, `<cache>/<hex>/debuginfo` (only with `DEBUGINFOD_URLS`; see
///    [`SearchPaths::debuginfod_cache`]).
///
/// `build_id` is the binary's build id, `debuglink` its `.gnu_debuglink` (file name, CRC32).
/// Returns `None` when nothing is found.
pub fn find_debug_file(
    binary: &Path,
    build_id: Option<&[u8]>,
    debuglink: Option<(&[u8], u32)>,
    search: &SearchPaths,
) -> Option<PathBuf> {
    if let Some(id) = build_id {
        for dir in &search.debug_dirs {
            if let Some(path) = build_id_path(dir, id)
                && path.is_file()
            {
                return Some(path);
            }
        }
        if let Some(path) = search.cached_debug_file(id) {
            return Some(path);
        }
    }
    let linked = debuglink.and_then(|(name, crc)| {
        if name.is_empty() {
            return None;
        }
        let name = Path::new(OsStr::from_bytes(name));
        let binary_id = file_id(binary);
        debuglink_candidates(binary, name, search)
            .into_iter()
            .find(|candidate| {
                // The link may name the binary itself (same file name); its CRC would not
                // match, but hashing it is wasted work.
                let id = file_id(candidate);
                id.is_some() && id != binary_id && crc32_file(candidate).ok() == Some(crc)
            })
    });
    linked.or_else(|| search.debuginfod_file(build_id?, debuginfod::Kind::Debuginfo))
}

/// [`find_debug_file`] of `binary`, with the build id and `.gnu_debuglink` read from it.
pub fn debug_file_of(binary: &Path, search: &SearchPaths) -> Option<PathBuf> {
    let info = read_elf_info(binary).ok()?;
    let link = info.debuglink.as_ref().map(|(n, crc)| (n.as_slice(), *crc));
    find_debug_file(binary, info.build_id.as_deref(), link, search)
}

/// What a recorded binary (build-id `build_id`, recorded at `binary`) lacks on this machine
/// for functions and source lines, as [`super::binary::Binary::load`] would look: the file at
/// `binary` when its build-id is that one, else a cached copy
/// ([`SearchPaths::cached_binary`]); then its DWARF, or a debug file ([`find_debug_file`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// Nothing.
    Nothing,
    /// The binary is here (this path), without DWARF, and no debug file is found.
    DebugInfo(PathBuf),
    /// No file with the build-id is here.
    Binary,
}

/// See [`Missing`].
pub fn missing(binary: &Path, build_id: &[u8], search: &SearchPaths) -> Missing {
    let Some((path, info)) = binary_with_id(binary, build_id, search) else {
        return Missing::Binary;
    };
    if lacks_debug_info(&path, &info, search) {
        Missing::DebugInfo(path)
    } else {
        Missing::Nothing
    }
}

/// The file with `build_id` for the binary recorded at `binary`, as the symbolizer looks:
/// the file at `binary` when its build-id is that one, else a cached copy
/// ([`SearchPaths::cached_binary`]); with its headers.
fn binary_with_id(
    binary: &Path,
    build_id: &[u8],
    search: &SearchPaths,
) -> Option<(PathBuf, super::elf::ElfInfo)> {
    let here = |p: &Path| {
        read_elf_info(p)
            .ok()
            .filter(|info| build_id_matches(build_id, info.build_id.as_deref()))
    };
    here(binary)
        .map(|info| (binary.to_path_buf(), info))
        .or_else(|| {
            let copy = search.cached_binary(build_id)?;
            here(&copy).map(|info| (copy, info))
        })
}

/// The files on this machine that name a recorded binary's functions and source lines, as
/// [`super::binary::Binary::load`] reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The file with the recorded build-id: the one at the recorded path, else a cached copy.
    pub binary: PathBuf,
    /// Its separate debug file ([`find_debug_file`]), when the binary has no DWARF and one is
    /// found.
    pub debug: Option<PathBuf>,
    /// The dwz supplementary file ([`find_alt_file`]) of the DWARF, with its build id.
    pub alt: Option<(PathBuf, Vec<u8>)>,
}

/// See [`Found`]; `None` when no file with `build_id` is here.
pub fn find_files(binary: &Path, build_id: &[u8], search: &SearchPaths) -> Option<Found> {
    let (path, info) = binary_with_id(binary, build_id, search)?;
    let debug = if info.has_dwarf {
        None
    } else {
        let link = info.debuglink.as_ref().map(|(n, crc)| (n.as_slice(), *crc));
        find_debug_file(&path, info.build_id.as_deref(), link, search)
    };
    let alt = find_alt_file(debug.as_deref().unwrap_or(&path), search).and_then(|alt| {
        let id = read_elf_info(&alt).ok()?.build_id?;
        Some((std::path::absolute(&alt).unwrap_or(alt), id))
    });
    Some(Found {
        binary: path,
        debug,
        alt,
    })
}

/// Whether `binary` (read as `info`) has no DWARF and no debug file is found for it.
pub fn has_no_debug_info(binary: &Path, search: &SearchPaths) -> bool {
    read_elf_info(binary).is_ok_and(|info| lacks_debug_info(binary, &info, search))
}

fn lacks_debug_info(binary: &Path, info: &super::elf::ElfInfo, search: &SearchPaths) -> bool {
    let link = info.debuglink.as_ref().map(|(n, crc)| (n.as_slice(), *crc));
    !info.has_dwarf && find_debug_file(binary, info.build_id.as_deref(), link, search).is_none()
}

/// The dwz supplementary file named by `.gnu_debugaltlink` of `debug_file`: its name as
/// recorded (relative names resolved against the debug file's directory, both as given and
/// with symlinks resolved), else `<dir>/.build-id/xx/rest.debug` with the altlink's build id,
/// else perf's build-id cache's `.build-id/xx/rest/debug` with it.
/// A candidate whose build id differs from the recorded one is skipped. `None` when the debug
/// file has no altlink or nothing is found.
pub fn find_alt_file(debug_file: &Path, search: &SearchPaths) -> Option<PathBuf> {
    let info = read_elf_info(debug_file).ok()?;
    let (name, alt_id) = info.altlink?;
    let alt_id = (!alt_id.is_empty()).then_some(alt_id);
    let matches = |candidate: &Path| -> bool {
        if !candidate.is_file() {
            return false;
        }
        match (&alt_id, read_elf_info(candidate)) {
            (_, Err(_)) => false,
            (Some(want), Ok(found)) => found.build_id.as_ref().is_none_or(|have| have == want),
            (None, Ok(_)) => true,
        }
    };

    let mut candidates = Vec::new();
    if !name.is_empty() {
        let name = Path::new(OsStr::from_bytes(&name));
        if name.is_absolute() {
            candidates.push(name.to_path_buf());
        } else {
            for dir in dirs_of(debug_file) {
                candidates.push(dir.join(name));
            }
        }
    }
    if let Some(id) = &alt_id {
        for dir in &search.debug_dirs {
            candidates.extend(build_id_path(dir, id));
        }
        candidates.extend(search.cached_debug_file(id));
    }
    dedup_in_order(&mut candidates);
    candidates.into_iter().find(|c| matches(c))
}

/// The CRC the `.gnu_debuglink` section stores: the standard CRC-32 (the one of zlib and
/// Ethernet, reflected polynomial `0xEDB88320`, initial value and final XOR `0xFFFFFFFF`) of
/// the whole debug file.
pub fn gnu_debuglink_crc32(bytes: &[u8]) -> u32 {
    !crc32_update(!0, bytes)
}

/// `<dir>/.build-id/xx/rest.debug`, or `None` for a build id shorter than two bytes.
fn build_id_path(dir: &Path, id: &[u8]) -> Option<PathBuf> {
    if id.len() < 2 {
        return None;
    }
    let mut rest = String::with_capacity(id.len() * 2 + 6);
    for byte in &id[1..] {
        let _ = write!(rest, "{byte:02x}");
    }
    rest.push_str(".debug");
    Some(
        dir.join(".build-id")
            .join(format!("{:02x}", id[0]))
            .join(rest),
    )
}

/// The directory of `file` made absolute, then the same with symlinks resolved when that
/// differs (`/lib` -> `/usr/lib` on merged-usr systems; a `.build-id` symlink -> the real
/// debug file's directory).
fn dirs_of(file: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::path::absolute(file)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        dirs.push(dir);
    }
    if let Some(dir) = std::fs::canonicalize(file)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        dirs.push(dir);
    }
    dedup_in_order(&mut dirs);
    dirs
}

/// The `.gnu_debuglink` candidates in search order.
fn debuglink_candidates(binary: &Path, name: &Path, search: &SearchPaths) -> Vec<PathBuf> {
    let dirs = dirs_of(binary);
    let mut out = Vec::new();
    for dir in &dirs {
        out.push(dir.join(name));
    }
    for dir in &dirs {
        out.push(dir.join(".debug").join(name));
    }
    for debug_dir in &search.debug_dirs {
        for dir in &dirs {
            let relative = dir.strip_prefix("/").unwrap_or(dir);
            out.push(debug_dir.join(relative).join(name));
        }
    }
    dedup_in_order(&mut out);
    out
}

fn dedup_in_order(paths: &mut Vec<PathBuf>) {
    let mut seen = Vec::with_capacity(paths.len());
    paths.retain(|p| {
        if seen.contains(p) {
            false
        } else {
            seen.push(p.clone());
            true
        }
    });
}

/// (device, inode) of a regular file, `None` when it is not one.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    meta.is_file().then(|| (meta.dev(), meta.ino()))
}

/// CRC-32 of a whole file, read in blocks.
fn crc32_file(path: &Path) -> io::Result<u32> {
    let mut file = File::open(path)?;
    let mut buf = vec![0u8; 1 << 16];
    let mut crc = !0u32;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        crc = crc32_update(crc, &buf[..n]);
    }
    Ok(!crc)
}

/// Slicing-by-8 tables for the reflected CRC-32 polynomial `0xEDB88320`.
static CRC_TABLES: [[u32; 256]; 8] = crc_tables();

const fn crc_tables() -> [[u32; 256]; 8] {
    let mut tables = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                0xEDB8_8320 ^ (crc >> 1)
            } else {
                crc >> 1
            };
            bit += 1;
        }
        tables[0][i] = crc;
        i += 1;
    }
    let mut i = 0;
    while i < 256 {
        let mut t = 1;
        while t < 8 {
            let prev = tables[t - 1][i];
            tables[t][i] = (prev >> 8) ^ tables[0][(prev & 0xff) as usize];
            t += 1;
        }
        i += 1;
    }
    tables
}

/// Feeds `bytes` into a running CRC-32 state (without the initial and final inversion).
fn crc32_update(mut crc: u32, bytes: &[u8]) -> u32 {
    let t = &CRC_TABLES;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let lo = crc ^ u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let hi = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
        crc = t[7][(lo & 0xff) as usize]
            ^ t[6][((lo >> 8) & 0xff) as usize]
            ^ t[5][((lo >> 16) & 0xff) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][(hi & 0xff) as usize]
            ^ t[2][((hi >> 8) & 0xff) as usize]
            ^ t[1][((hi >> 16) & 0xff) as usize]
            ^ t[0][(hi >> 24) as usize];
    }
    for &byte in chunks.remainder() {
        crc = t[0][((crc ^ u32::from(byte)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::super::binary::Binary;
    use super::super::elf::fixtures::{PROG, build_id, gcc, objcopy, run};
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(gnu_debuglink_crc32(b""), 0);
        assert_eq!(gnu_debuglink_crc32(b"123456789"), 0xCBF4_3926);
        // Slicing-by-8 and the byte loop agree at every split.
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        let whole = gnu_debuglink_crc32(&data);
        for split in [0, 1, 7, 8, 9, 500, 999] {
            let crc = !crc32_update(crc32_update(!0, &data[..split]), &data[split..]);
            assert_eq!(crc, whole);
        }
    }

    /// `bin/prog` stripped of DWARF with a `.gnu_debuglink` to `prog.debug`, which is returned
    /// (not yet placed anywhere).
    struct Linked {
        dir: tempfile::TempDir,
        prog: PathBuf,
        debug: PathBuf,
        build_id: Vec<u8>,
        link: (Vec<u8>, u32),
    }

    fn linked() -> Linked {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let full = gcc(dir.path(), "full", PROG, &["-g", "-O2"]);
        let debug = dir.path().join("prog.debug");
        objcopy(&["--only-keep-debug"], &full, &debug);
        let prog = bin.join("prog");
        let add = format!("--add-gnu-debuglink={}", debug.display());
        objcopy(&["--strip-debug", &add], &full, &prog);
        let info = read_elf_info(&prog).unwrap();
        let link = info.debuglink.expect(".gnu_debuglink");
        assert_eq!(link.0, b"prog.debug");
        assert_eq!(
            link.1,
            gnu_debuglink_crc32(&std::fs::read(&debug).unwrap()),
            "objcopy's CRC"
        );
        Linked {
            build_id: build_id(&prog),
            dir,
            prog,
            debug,
            link,
        }
    }

    impl Linked {
        fn find(&self, search: &SearchPaths) -> Option<PathBuf> {
            let link = (self.link.0.as_slice(), self.link.1);
            find_debug_file(&self.prog, Some(&self.build_id), Some(link), search)
        }
    }

    fn dirs(dirs: &[&Path]) -> SearchPaths {
        SearchPaths {
            debug_dirs: dirs.iter().map(|d| d.to_path_buf()).collect(),
            build_id_cache: None,
            debuginfod_cache: None,
            inflated_cache: None,
        }
    }

    #[test]
    fn debuglink_next_to_the_binary() {
        let l = linked();
        let none = dirs(&[]);
        assert_eq!(l.find(&none), None);
        let target = l.prog.with_file_name("prog.debug");
        std::fs::copy(&l.debug, &target).unwrap();
        assert_eq!(l.find(&none), Some(target.clone()));
        // Binary::load follows it: DWARF from the debug file, symbols from the binary.
        let binary = Binary::load(&l.prog, Some(&l.build_id), &none).unwrap();
        assert_eq!(binary.debug_path(), Some(target.as_path()));
    }

    #[test]
    fn debuglink_in_dot_debug() {
        let l = linked();
        let dot_debug = l.prog.parent().unwrap().join(".debug");
        std::fs::create_dir(&dot_debug).unwrap();
        let target = dot_debug.join("prog.debug");
        std::fs::copy(&l.debug, &target).unwrap();
        assert_eq!(l.find(&dirs(&[])), Some(target));
    }

    #[test]
    fn debuglink_under_global_debug_dir() {
        let l = linked();
        let global = l.dir.path().join("global");
        let bindir = std::path::absolute(l.prog.parent().unwrap()).unwrap();
        let mirror = global.join(bindir.strip_prefix("/").unwrap());
        std::fs::create_dir_all(&mirror).unwrap();
        let target = mirror.join("prog.debug");
        std::fs::copy(&l.debug, &target).unwrap();
        let elsewhere = l.dir.path().join("elsewhere");
        assert_eq!(l.find(&dirs(&[&elsewhere, &global])), Some(target));
        assert_eq!(l.find(&dirs(&[&elsewhere])), None);
    }

    #[test]
    fn debuglink_with_wrong_crc_is_rejected() {
        let l = linked();
        let mut bytes = std::fs::read(&l.debug).unwrap();
        bytes.push(0);
        let target = l.prog.with_file_name("prog.debug");
        std::fs::write(&target, &bytes).unwrap();
        assert_eq!(l.find(&dirs(&[])), None);
        let binary = Binary::load(&l.prog, None, &dirs(&[])).unwrap();
        assert_eq!(binary.debug_path(), None);
        // Without any link information nothing is searched.
        assert_eq!(find_debug_file(&l.prog, None, None, &dirs(&[])), None);
    }

    #[test]
    fn build_id_layout_comes_first() {
        let l = linked();
        let debug_dir = l.dir.path().join("debug");
        let path = build_id_path(&debug_dir, &l.build_id).unwrap();
        let hex: String = l.build_id.iter().map(|b| format!("{b:02x}")).collect();
        assert!(path.ends_with(format!(".build-id/{}/{}.debug", &hex[..2], &hex[2..])));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::copy(&l.debug, &path).unwrap();
        // A debuglink candidate exists too; the build-id file wins.
        std::fs::copy(&l.debug, l.prog.with_file_name("prog.debug")).unwrap();
        assert_eq!(l.find(&dirs(&[&debug_dir])), Some(path.clone()));
        assert_eq!(
            find_debug_file(&l.prog, Some(&l.build_id), None, &dirs(&[&debug_dir])),
            Some(path)
        );
        assert_eq!(build_id_path(&debug_dir, &[0xab]), None);
    }

    /// A debug file packed into perf's build-id cache beside the binary's copy
    /// (`<cache>/<path>/<hex>/debug`, as `hrec archive` writes it) is found by build id, after
    /// the debug directories' and before a `.gnu_debuglink` candidate; `Binary::load` reads
    /// its DWARF.
    #[test]
    fn debug_file_in_the_build_id_cache() {
        let l = linked();
        let cache_dir = l.dir.path().join("cache");
        let cache = buildid_cache::Cache::new(&cache_dir);
        let entry = cache.add(&l.prog).unwrap();
        let packed = cache_dir
            .join(buildid_cache::entry_dir(&entry.path, &entry.build_id))
            .join("debug");
        std::fs::copy(&l.debug, &packed).unwrap();
        let mut search = dirs(&[]);
        assert_eq!(l.find(&search), None, "no cache, no debug file");
        search.build_id_cache = Some(cache_dir.clone());
        let via_link = cache_dir
            .join(buildid_cache::link_path(&entry.build_id).unwrap())
            .join("debug");
        assert_eq!(
            search.cached_debug_file(&l.build_id),
            Some(via_link.clone())
        );
        // A debuglink candidate next to the binary loses to it.
        std::fs::copy(&l.debug, l.prog.with_file_name("prog.debug")).unwrap();
        assert_eq!(l.find(&search), Some(via_link.clone()));
        // The cached copy of the binary (the binary itself moved away) finds it too.
        std::fs::remove_file(&l.prog).unwrap();
        let copy = search.cached_binary(&l.build_id).unwrap();
        let binary = Binary::load(&copy, Some(&l.build_id), &search).unwrap();
        assert_eq!(binary.debug_path(), Some(via_link.as_path()));
        // A debug directory's build-id file comes first.
        let debug_dir = l.dir.path().join("debug");
        let by_id = build_id_path(&debug_dir, &l.build_id).unwrap();
        std::fs::create_dir_all(by_id.parent().unwrap()).unwrap();
        std::fs::copy(&l.debug, &by_id).unwrap();
        search.debug_dirs.push(debug_dir);
        assert_eq!(
            find_debug_file(&copy, Some(&l.build_id), None, &search),
            Some(by_id)
        );
    }

    fn have_dwz() -> bool {
        Command::new("dwz")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    const SHARED_H: &str = r#"struct shared_state { long counters[8]; double weights[4]; const char *label; };
static inline __attribute__((always_inline)) long shared_step(struct shared_state *s, int i)
{
    s->counters[i & 7] += (long)(s->weights[i & 3] * i); /* SHARED */
    return s->counters[(i + 1) & 7];
}
"#;

    fn dwz_user(name: &str) -> String {
        format!(
            r#"#include <stdio.h>
#include "shared.h"
__attribute__((noinline, noipa)) long {name}_work(struct shared_state *s, int n)
{{
    long t = 0;
    for (int i = 0; i < n; i++)
        t += shared_step(s, i);
    return t;
}}
int main(int argc, char **argv)
{{
    struct shared_state s = {{ {{0}}, {{1.5, 2.5, 3.5, 4.5}}, "{name}" }};
    printf("%ld %s\n", {name}_work(&s, argc * 100), s.label);
    return 0;
}}
"#
        )
    }

    /// dwz moves the DWARF two programs share into a supplementary file; it is found through
    /// the recorded (relative) name and through the build-id layout, and the inline chain
    /// still resolves.
    #[test]
    fn dwz_supplementary_file() {
        if !have_dwz() {
            eprintln!("skipped: dwz not installed");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("shared.h"), SHARED_H).unwrap();
        let one = gcc(dir.path(), "one", &dwz_user("one"), &["-g", "-O2"]);
        let two = gcc(dir.path(), "two", &dwz_user("two"), &["-g", "-O2"]);
        run(Command::new("dwz")
            .args(["-m", "common.debug"])
            .arg(&one)
            .arg(&two)
            .current_dir(dir.path()));
        let common = dir.path().join("common.debug");
        let alt = read_elf_info(&one)
            .unwrap()
            .altlink
            .expect("dwz wrote an altlink");
        assert_eq!(alt.0, b"common.debug", "relative name as given to -m");
        assert_eq!(alt.1, build_id(&common));

        let none = dirs(&[]);
        assert_eq!(
            find_alt_file(&one, &none),
            Some(dir.path().join("common.debug"))
        );
        assert_eq!(find_alt_file(&common, &none), None, "no altlink");

        let binary = Binary::load(&one, None, &none).unwrap();
        assert_eq!(binary.debug_path(), Some(one.as_path()));
        let (start, size) = super::super::elf::fixtures::symbol(&one, "one_work");
        let shared_line = super::super::elf::fixtures::line_of(SHARED_H, "SHARED");
        // The abstract DIE of `shared_step` lives in the supplementary file.
        let inlined = |binary: &Binary| {
            (start..start + size)
                .filter_map(|addr| binary.symbolize(addr).ok())
                .filter(|s| {
                    s.frames.len() == 2
                        && s.frames[0].function.as_deref() == Some("shared_step")
                        && s.frames[0]
                            .file
                            .as_deref()
                            .is_some_and(|f| f.ends_with("/shared.h"))
                        && s.frames[0].line == shared_line
                        && s.frames[1].function.as_deref() == Some("one_work")
                })
                .count()
        };
        assert!(
            inlined(&binary) > 0,
            "no inline frame of shared_step through the dwz file"
        );

        // Moved away from the recorded name: found through the build-id layout.
        let debug_dir = dir.path().join("debug");
        let by_id = build_id_path(&debug_dir, &alt.1).unwrap();
        std::fs::create_dir_all(by_id.parent().unwrap()).unwrap();
        std::fs::rename(&common, &by_id).unwrap();
        assert_eq!(find_alt_file(&one, &none), None);
        assert_eq!(find_alt_file(&one, &dirs(&[&debug_dir])), Some(by_id));
        let binary = Binary::load(&one, None, &dirs(&[&debug_dir])).unwrap();
        assert!(inlined(&binary) > 0);
        // Without it the inlined function has no name.
        let binary = Binary::load(&one, None, &none).unwrap();
        assert_eq!(inlined(&binary), 0);
    }
}
