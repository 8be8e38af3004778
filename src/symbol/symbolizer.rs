//! Symbolizing the distinct locations of a profile, each once.
//!
//! The converter interns every frame it meets as a [`LocKey`]: a file and an offset into it,
//! a kernel address, an address in an anonymous mapping (JIT code, named by
//! `/tmp/perf-PID.map`), or an address outside every mapping. A [`Symbolizer`] (built with a
//! [`SymbolizerBuilder`]: `--symfs`, debug-file directories, the recording's kernel symbols and
//! build-ids, where perf maps are) turns them into [`Loc`]s: kernel, JIT and unmapped ones on
//! the calling thread, files on a pool of workers, one file per worker at a time, because
//! loading a binary's symbol table and DWARF is the expensive part and lookups take
//! microseconds. Each binary is loaded once per symbolizer and kept, so a symbolizer asked
//! again (a later batch of locations) does not load it again. A binary is read only as far as
//! the output needs: symbol tables alone ([`SymbolizerBuilder::dwarf`]: `hrec top` unless it
//! sorts by `srcline`), DWARF names without the line programs when no source line is shown
//! ([`SymbolizerBuilder::lines`]: flame graphs), or everything.
//!
//! A frame keeps its kind ([`FrameAddress`]): a return address is looked up one byte earlier,
//! inside the call, but its location prints the address and the symbol offset perf prints.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::binary::{Binary, DwarfUse};
use super::debuginfo::{self, Missing, SearchPaths};
use super::debuginfod::{Debuginfod, Kind};
use super::kallsyms::{self, KernelSymbols};
use super::maps::{AddressSpaces, FileIdx, MappedFile};
use super::perfmap::PerfMap;
use super::{Frame, FrameAddress, Unresolved};

/// A distinct code location and what it resolved to.
#[derive(Debug, Clone)]
pub struct Loc {
    /// The address as recorded: the sampled instruction, or for a caller frame the return
    /// address (symbols, lines and `file_addr` are those of the byte before it).
    pub addr: u64,
    /// A kernel address.
    pub kernel: bool,
    /// What perf shows as the Shared Object: file name, `[kernel.kallsyms]`, `[module]`,
    /// `[unknown]`.
    pub dso: Arc<str>,
    /// The address inside the file (SVMA; for the kernel the address itself).
    pub file_addr: u64,
    /// The containing symbol.
    pub sym: Option<Arc<str>>,
    /// Offset of the address into `sym`.
    pub sym_offset: u64,
    /// Where `sym` starts, in the file's addresses (SVMA; the kernel's address; a JIT
    /// entry's start): what tells apart two symbols of one name (perf keys `sym` so). 0
    /// without a symbol, or for a name DWARF alone gives.
    pub sym_start: u64,
    /// Inline chain, innermost first; empty without DWARF.
    pub frames: Vec<Frame>,
    /// Why `sym` is `None`.
    pub unresolved: Option<Unresolved>,
    /// The address as perf prints it in call chains and for unresolved symbols: relative to
    /// the mapped file (its offset in the file, perf's `map_ip`), else the address itself.
    pub rel_addr: u64,
    /// The object as perf's `script` names it: the file's path as recorded, else as `dso`.
    pub dso_path: Arc<str>,
    /// For a location in a mapped file named by its symbol table: the file offsets `[lo, hi)`
    /// around its own where every address is named by the same symbol ([`Binary::offset_span`]),
    /// so a report keyed by symbol can take any address there as this location's row.
    pub span: Option<(u64, u64)>,
}

impl Loc {
    /// The symbol as a report shows it: the name, or when unresolved the address as perf
    /// prints it (relative to the file, 16 hex digits).
    pub fn sym_name(&self) -> String {
        match &self.sym {
            Some(s) => s.to_string(),
            // C's `%#.16llx`: no `0x` for zero (perf's `0000000000000000`).
            None => super::data::hex_addr(self.rel_addr),
        }
    }

    /// The function's own name in DWARF (the outermost frame of the inline chain), which is
    /// how perf names it in an address's inline chain; `None` without DWARF.
    pub fn dwarf_name(&self) -> Option<&str> {
        self.frames.last()?.function.as_deref()
    }

    /// The entries perf lists for this address in an unwound (`--call-graph dwarf`) chain
    /// with `--inline` (its default): each function inlined here, innermost first, then the
    /// function itself, all named by DWARF; by the symbol table without DWARF. An entry is
    /// marked inlined where its name is not the symbol table's: perf's `new_inline_sym` makes
    /// every entry of the chain a fake inlined symbol unless its name equals the symbol's,
    /// then it reuses the symbol. So `__libc_start_main_impl` in DWARF under the symbol
    /// `__libc_start_main@@GLIBC_2.34` is an inlined entry, and ld.so's `call_init` inlined
    /// into its own out-of-line copy is `call_init` twice, neither inlined. Empty for an
    /// unresolved address.
    pub fn inline_entries(&self) -> Vec<InlineEntry<'_>> {
        let Some(sym) = self.sym.as_deref() else {
            return Vec::new();
        };
        if self.frames.is_empty() {
            return vec![InlineEntry {
                name: sym,
                inlined: false,
                frame: None,
            }];
        }
        self.frames
            .iter()
            .map(|f| {
                let name = f.function.as_deref().unwrap_or("??");
                InlineEntry {
                    name,
                    inlined: name != sym,
                    frame: Some(f),
                }
            })
            .collect()
    }

    /// `file:line` of the innermost frame; `full` keeps the directories.
    pub fn srcline(&self, full: bool) -> Option<String> {
        let f = self.frames.first()?;
        let file = f.file.as_deref()?;
        let file = if full {
            file
        } else {
            file.rsplit('/').next().unwrap_or(file)
        };
        Some(format!("{file}:{}", f.line))
    }
}

/// One entry of an address's inline expansion ([`Loc::inline_entries`]).
#[derive(Debug, Clone, Copy)]
pub struct InlineEntry<'a> {
    /// The function's name.
    pub name: &'a str,
    /// perf's `(inlined)` mark: a function inlined at the address, or the function itself
    /// where DWARF names it otherwise than the symbol table.
    pub inlined: bool,
    /// Its frame of the inline chain (its source line); `None` without DWARF.
    pub frame: Option<&'a Frame>,
}

/// A location before symbolization, as the converter interns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LocKey {
    /// A mapped file and the offset into it.
    File(FileIdx, u64),
    /// A kernel address.
    Kernel(u64),
    /// An anonymous mapping of a process (JIT code).
    Anon(u32, FileIdx, u64),
    /// An address of a process outside every mapping.
    Unmapped(u32, u64),
    /// A frame that stands for no code: what an off-CPU interval's stack says of itself
    /// ([`Mark`]).
    Mark(Mark),
}

/// Frames of off-CPU intervals that stand for no code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mark {
    /// `[preempted]`: the thread was runnable and waited for a CPU (the leaf of a preempted
    /// interval, above the stack it was preempted in).
    Preempted,
    /// `[no stack]`: the interval's stack was not recorded (refused or lost).
    NoStack,
}

impl Mark {
    /// The frame's name.
    pub fn name(self) -> &'static str {
        match self {
            Mark::Preempted => "[preempted]",
            Mark::NoStack => "[no stack]",
        }
    }
}

/// A loaded binary (or why it cannot be loaded), shared by the workers that need it.
type Cached = Arc<Mutex<Result<Binary, Unresolved>>>;

/// How many resolved locations a symbolizer that keeps its binaries remembers.
const MAX_KEPT_LOCS: usize = 1 << 20;

/// A binary on this machine and the build-id it must have.
type BinaryKey = (PathBuf, Option<Vec<u8>>);

/// Symbolizes locations; see the module docs. Built with [`Symbolizer::builder`].
#[derive(Debug)]
pub struct Symbolizer {
    symfs: Option<PathBuf>,
    search: SearchPaths,
    perf_map_dir: PathBuf,
    /// Perf maps stored in the recording, by pid.
    recorded_perf_maps: HashMap<u32, PerfMap>,
    threads: usize,
    kernel: Arc<KernelSymbols>,
    kernel_unresolved: Unresolved,
    build_ids: HashMap<PathBuf, Vec<u8>>,
    binaries: Mutex<HashMap<BinaryKey, Cached>>,
    /// Keep loaded binaries after a `symbolize` call (`hrec top` symbolizes every refresh
    /// with the same binaries, a report's batches of addresses the same files); otherwise each
    /// is dropped after its last use in a call.
    keep: bool,
    /// Remember resolved locations too (with `keep`).
    remember: bool,
    /// With `keep`: the locations already resolved, by binary, address and file offset (at
    /// most [`MAX_KEPT_LOCS`], then started afresh).
    kept_locs: Mutex<HashMap<(BinaryKey, FrameAddress, u64), Loc>>,
    /// Read DWARF (source lines, inline frames); off: symbol tables only.
    dwarf: bool,
    lines: bool,
    /// The vdso's image in an in-memory file, read by its `/proc/self/fd` path.
    vdso: Option<(std::fs::File, PathBuf)>,
    /// Fetches what is missing of the files to symbolize (`DEBUGINFOD_URLS`).
    debuginfod: Option<Arc<Debuginfod>>,
}

/// Builds a [`Symbolizer`]. Without settings it reads binaries where the recording saw them,
/// debug files in the default directories, no kernel symbols, perf maps in `/tmp`, one worker
/// per CPU.
#[derive(Debug)]
pub struct SymbolizerBuilder {
    s: Symbolizer,
}

impl Symbolizer {
    /// A builder with the defaults.
    pub fn builder() -> SymbolizerBuilder {
        SymbolizerBuilder {
            s: Symbolizer {
                symfs: None,
                search: SearchPaths::default(),
                perf_map_dir: PathBuf::from("/tmp"),
                recorded_perf_maps: HashMap::new(),
                threads: 0,
                kernel: Arc::default(),
                kernel_unresolved: Unresolved::NoKernelSymbols,
                build_ids: HashMap::new(),
                binaries: Mutex::new(HashMap::new()),
                keep: false,
                remember: false,
                kept_locs: Mutex::new(HashMap::new()),
                dwarf: true,
                lines: true,
                vdso: None,
                debuginfod: None,
            },
        }
    }

    /// `--symfs`, when given.
    pub(super) fn symfs_root(&self) -> Option<&Path> {
        self.symfs.as_deref()
    }

    /// The binary at `path` (on this machine) checked against `expected`, loaded on first use.
    /// The build-id of the file a mapping had: its MMAP2 record's, else the recording's
    /// build-id table's for its path.
    pub(super) fn expected_build_id<'a>(&'a self, file: &'a MappedFile) -> Option<&'a [u8]> {
        file.build_id
            .as_deref()
            .or_else(|| self.build_ids.get(&*file.path).map(Vec::as_slice))
    }

    pub(super) fn binary(&self, path: &Path, expected: Option<&[u8]>, pseudo: bool) -> Cached {
        let key = (path.to_path_buf(), expected.map(<[u8]>::to_vec));
        let mut cache = self.binaries.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(key)
            .or_insert_with(|| {
                Arc::new(Mutex::new(if pseudo {
                    Err(Unresolved::BinaryMissing)
                } else {
                    let dwarf = match (self.dwarf, self.lines) {
                        (false, _) => DwarfUse::Off,
                        (true, false) => DwarfUse::Names,
                        (true, true) => DwarfUse::Lines,
                    };
                    Binary::load_recorded(path, expected, &self.search, dwarf)
                }))
            })
            .clone()
    }

    /// Fetches from debuginfod, on a few threads, what the recorded files of `jobs` lack on
    /// this machine: the executable when no file with its build-id is here, then its debug
    /// file when it has no DWARF and none is installed. Only files with a recorded build-id.
    fn fetch_missing(
        &self,
        d: &Debuginfod,
        maps: &AddressSpaces,
        jobs: &[(FileIdx, Vec<(usize, u64)>)],
    ) {
        let mut seen = std::collections::HashSet::new();
        let mut wanted = Vec::new();
        for (f, _) in jobs {
            let file = maps.file(*f);
            let Some(id) = self.expected_build_id(file).map(<[u8]>::to_vec) else {
                continue;
            };
            if file.is_pseudo() || id.iter().all(|&b| b == 0) || !seen.insert(id.clone()) {
                continue;
            }
            let path = on_disk(&file.path, self.symfs.as_deref());
            match debuginfo::missing(&path, &id, &self.search) {
                Missing::Nothing => {}
                m => wanted.push((id, m)),
            }
        }
        d.fetch_all(&wanted, |(id, m)| match m {
            Missing::Nothing => {}
            Missing::DebugInfo(_) => {
                d.find(id, Kind::Debuginfo);
            }
            Missing::Binary => {
                if let Some(exe) = d.find(id, Kind::Executable)
                    && debuginfo::has_no_debug_info(&exe, &self.search)
                {
                    d.find(id, Kind::Debuginfo);
                }
            }
        });
    }

    /// The remembered location for `key`, resolved (and remembered) on first use.
    fn kept_loc(&self, key: (BinaryKey, FrameAddress, u64), resolve: impl FnOnce() -> Loc) -> Loc {
        if let Some(l) = self
            .kept_locs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return l.clone();
        }
        let loc = resolve();
        let mut kept = self.kept_locs.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= MAX_KEPT_LOCS {
            kept.clear();
        }
        kept.insert(key, loc.clone());
        loc
    }

    /// Symbolizes every distinct location once: kernel, JIT and unmapped ones here, files on
    /// worker threads (one file per worker at a time). Returns the locations in key order and the
    /// files whose build-id differs from the recorded one.
    pub fn symbolize(
        &self,
        maps: &AddressSpaces,
        keys: &[(LocKey, FrameAddress)],
    ) -> (Vec<Loc>, Vec<String>) {
        let unknown: Arc<str> = "[unknown]".into();
        let ksyms = &self.kernel;
        let mut perf_maps: HashMap<u32, Option<PerfMap>> = HashMap::new();
        let mut locs: Vec<Option<Loc>> = vec![None; keys.len()];
        let mut by_file: HashMap<FileIdx, Vec<(usize, u64)>> = HashMap::new();
        let kernel_dso: Arc<str> = kallsyms::KERNEL_DSO.into();
        let mut module_dsos: HashMap<Arc<str>, Arc<str>> = HashMap::new();
        for (i, &(key, frame)) in keys.iter().enumerate() {
            let (addr, past) = (frame.lookup(), frame.address() - frame.lookup());
            locs[i] = Some(match key {
                LocKey::File(f, off) => {
                    by_file.entry(f).or_default().push((i, off));
                    continue;
                }
                LocKey::Kernel(a) => match ksyms.lookup(a) {
                    Some((s, off)) => {
                        let dso = match &s.module {
                            Some(m) => module_dsos
                                .entry(m.clone())
                                .or_insert_with(|| format!("[{m}]").into())
                                .clone(),
                            None => kernel_dso.clone(),
                        };
                        Loc {
                            addr: a,
                            kernel: true,
                            dso,
                            file_addr: a,
                            sym: Some(s.name.clone()),
                            sym_offset: off + past,
                            sym_start: a.wrapping_sub(off),
                            frames: Vec::new(),
                            unresolved: None,
                            rel_addr: 0,
                            dso_path: Arc::default(),
                            span: None,
                        }
                    }
                    None => {
                        let why = if ksyms.is_empty() {
                            self.kernel_unresolved
                        } else {
                            Unresolved::NoSymbols
                        };
                        // Outside the kernel's symbols altogether: no kernel map, as perf.
                        let dso = if ksyms.is_empty() || ksyms.spans(a) {
                            kernel_dso.clone()
                        } else {
                            unknown.clone()
                        };
                        unresolved_loc(a, true, dso, why)
                    }
                },
                LocKey::Anon(pid, f, a) => {
                    let dso: Arc<str> = maps.file(f).short.clone();
                    let pm = perf_maps.entry(pid).or_insert_with(|| {
                        self.recorded_perf_maps
                            .get(&pid)
                            .cloned()
                            .or_else(|| PerfMap::load(&self.perf_map_dir, pid))
                    });
                    match pm.as_ref().and_then(|m| m.lookup(a)) {
                        Some(j) => Loc {
                            addr: a,
                            kernel: false,
                            dso: format!("[JIT] tid {pid}").into(),
                            file_addr: a,
                            sym: Some(j.name.clone()),
                            sym_offset: a - j.start + past,
                            sym_start: j.start,
                            frames: Vec::new(),
                            unresolved: None,
                            rel_addr: 0,
                            dso_path: Arc::default(),
                            span: None,
                        },
                        None => unresolved_loc(a, false, dso, Unresolved::Anonymous),
                    }
                }
                LocKey::Unmapped(_, a) => {
                    unresolved_loc(addr.max(a), false, unknown.clone(), Unresolved::Unmapped)
                }
                LocKey::Mark(m) => Loc {
                    addr: 0,
                    kernel: false,
                    dso: "[off-cpu]".into(),
                    file_addr: 0,
                    sym: Some(m.name().into()),
                    sym_offset: 0,
                    sym_start: 0,
                    frames: Vec::new(),
                    unresolved: None,
                    rel_addr: 0,
                    dso_path: Arc::default(),
                    span: None,
                },
            });
        }
        let mut jobs: Vec<(FileIdx, Vec<(usize, u64)>)> = by_file.into_iter().collect();
        jobs.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
        let threads = match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
        .min(jobs.len())
        .max(1);
        if let Some(d) = &self.debuginfod {
            self.fetch_missing(d, maps, &jobs);
        }
        // A binary (its symbols and DWARF: tens of MB for a libc debug file) is dropped when
        // the last job that needs it is done, so memory holds the binaries being read, not
        // all of them.
        let key_of = |f: FileIdx| -> BinaryKey {
            let file = maps.file(f);
            let path = match &self.vdso {
                Some((_, vdso)) if &*file.path == Path::new("[vdso]") => vdso.clone(),
                _ => on_disk(&file.path, self.symfs.as_deref()),
            };
            (path, self.expected_build_id(file).map(<[u8]>::to_vec))
        };
        let mut uses: HashMap<BinaryKey, usize> = HashMap::new();
        // Every file offset looked up in each binary, whichever mapping of it: its DWARF is
        // read once for all of them, by the first job of the binary (which takes them).
        let mut offsets: HashMap<BinaryKey, Vec<u64>> = HashMap::new();
        for (f, addrs) in &jobs {
            let key = key_of(*f);
            if self.dwarf {
                let o = offsets.entry(key.clone()).or_default();
                o.extend(addrs.iter().map(|&(_, off)| off));
            }
            *uses.entry(key).or_default() += 1;
        }
        let uses = Mutex::new(uses);
        let offsets = Mutex::new(offsets);
        let release = |key: BinaryKey| {
            let mut u = uses.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(n) = u.get_mut(&key) {
                *n -= 1;
                if *n == 0 && !self.keep {
                    u.remove(&key);
                    self.binaries
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&key);
                }
            }
        };
        let next = AtomicUsize::new(0);
        let results: Vec<Vec<(usize, Loc, Option<String>)>> = std::thread::scope(|sc| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    sc.spawn(|| {
                        let mut out = Vec::new();
                        loop {
                            let j = next.fetch_add(1, Ordering::Relaxed);
                            let Some((f, addrs)) = jobs.get(j) else {
                                break;
                            };
                            let file = maps.file(*f);
                            let path = on_disk(&file.path, self.symfs.as_deref());
                            let expected = self.expected_build_id(file);
                            let cached = match &self.vdso {
                                Some((_, vdso)) if &*file.path == Path::new("[vdso]") => {
                                    self.binary(vdso, expected, false)
                                }
                                _ => self.binary(&path, expected, file.is_pseudo()),
                            };
                            let bin = cached.lock().unwrap_or_else(|e| e.into_inner());
                            let mut mismatch = matches!(*bin, Err(Unresolved::BuildIdMismatch))
                                .then(|| file.path.display().to_string());
                            let bkey = self.remember.then(|| key_of(*f));
                            let offs = match &*bin {
                                Ok(_) => offsets
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .remove(&key_of(*f)),
                                Err(_) => None,
                            };
                            if let (Ok(b), Some(offs)) = (&*bin, offs) {
                                let svmas: Vec<u64> =
                                    offs.iter().filter_map(|&o| b.svma(o, 0, 0)).collect();
                                b.prepare(&svmas);
                            }
                            for &(i, off) in addrs {
                                let (_, frame) = keys[i];
                                let resolve = || match &*bin {
                                    Err(why) => unresolved_loc(
                                        frame.lookup(),
                                        false,
                                        file.short.clone(),
                                        *why,
                                    ),
                                    Ok(b) => resolve_in(b, frame, off, file.short.clone()),
                                };
                                let loc = match &bkey {
                                    None => resolve(),
                                    Some(k) => self.kept_loc((k.clone(), frame, off), resolve),
                                };
                                out.push((i, loc, mismatch.take()));
                            }
                            drop(bin);
                            drop(cached);
                            release(key_of(*f));
                        }
                        out
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or_default())
                .collect()
        });
        let mut mismatches = Vec::new();
        let mut paths: HashMap<FileIdx, Arc<str>> = HashMap::new();
        for (i, loc, m) in results.into_iter().flatten() {
            locs[i] = Some(loc);
            mismatches.extend(m);
        }
        mismatches.sort();
        let locs = locs
            .into_iter()
            .zip(keys)
            .map(|(l, &(key, frame))| {
                // A worker that panicked leaves its locations unset.
                let l = l.unwrap_or_else(|| {
                    unresolved_loc(
                        frame.lookup(),
                        false,
                        unknown.clone(),
                        Unresolved::NoSymbols,
                    )
                });
                let (rel_addr, dso_path) = match key {
                    LocKey::File(f, off) => (
                        off + (frame.address() - frame.lookup()),
                        paths
                            .entry(f)
                            .or_insert_with(|| maps.file(f).path.to_string_lossy().into())
                            .clone(),
                    ),
                    _ => (frame.address(), l.dso.clone()),
                };
                Loc {
                    addr: frame.address(),
                    rel_addr,
                    dso_path,
                    ..l
                }
            })
            .collect();
        (locs, mismatches)
    }
}

impl SymbolizerBuilder {
    /// Look for binaries under this directory instead of `/` (perf's `--symfs`).
    pub fn symfs(mut self, root: Option<PathBuf>) -> Self {
        self.s.symfs = root;
        self
    }

    /// Where separate debug files are searched.
    pub fn search(mut self, search: SearchPaths) -> Self {
        self.s.search = search;
        self
    }

    /// Where `perf-PID.map` files are read from.
    pub fn perf_map_dir(mut self, dir: PathBuf) -> Self {
        self.s.perf_map_dir = dir;
        self
    }

    /// Worker threads for files (0: one per CPU).
    pub fn threads(mut self, n: usize) -> Self {
        self.s.threads = n;
        self
    }

    /// The kernel symbols that fit the recording, and why kernel addresses stay unresolved
    /// when there are none.
    pub fn kernel(mut self, symbols: Arc<KernelSymbols>, unresolved: Unresolved) -> Self {
        self.s.kernel = symbols;
        self.s.kernel_unresolved = unresolved;
        self
    }

    /// The build-ids recorded for mapped files: the `build-ids` side block (`hex path` lines).
    /// A file on this machine whose build-id differs is not used.
    pub fn recorded_build_ids(mut self, text: &[u8]) -> Self {
        self.s.build_ids = parse_build_ids(text);
        self
    }

    /// The perf maps the recording holds (`perf-map` side blocks: the host pid on the first
    /// line, the map's text after it), which `record` read from the `/tmp` of processes in
    /// other namespaces; they come before `/tmp/perf-PID.map` on this machine.
    pub fn recorded_perf_maps(mut self, blocks: &[Vec<u8>]) -> Self {
        for b in blocks {
            let text = String::from_utf8_lossy(b);
            if let Some((pid, map)) = text.split_once('\n')
                && let Ok(pid) = pid.trim().parse::<u32>()
            {
                self.s.recorded_perf_maps.insert(pid, PerfMap::parse(map));
            }
        }
        self
    }

    /// Names the frames of the `[vdso]` mapping from this image of it (see
    /// [`crate::recording::Recording::vdso_image`]).
    pub fn vdso(mut self, image: Option<&[u8]>) -> Self {
        self.s.vdso = image
            .and_then(|b| crate::kernel::memfd_with("hrec-vdso", b).ok())
            .map(|f| {
                use std::os::fd::AsRawFd as _;
                let path = PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()));
                (f, path)
            });
        self
    }

    /// Keep every binary loaded, and every location resolved, for later calls (a live view
    /// symbolizing the same processes again and again) instead of dropping each binary after
    /// its last use in a call.
    pub fn keep_binaries(mut self, keep: bool) -> Self {
        self.s.keep = keep;
        self.s.remember = keep;
        self
    }

    /// Keep every binary loaded for later calls, but not the locations resolved (a report
    /// symbolizing its addresses in batches: each batch has addresses of its own, in the same
    /// files).
    pub fn keep_loaded(mut self, keep: bool) -> Self {
        self.s.keep = keep;
        self
    }

    /// Whether to read DWARF (the default): without it, functions come from symbol tables
    /// only, with no source lines or inline frames.
    pub fn dwarf(mut self, on: bool) -> Self {
        self.s.dwarf = on;
        self
    }

    /// Whether locations need source lines (the default). Without, DWARF is read for
    /// function names, inlined ones too, and the line tables are left unparsed.
    pub fn lines(mut self, on: bool) -> Self {
        self.s.lines = on;
        self
    }

    /// Fetch what the files to symbolize lack from debuginfod (and find what an earlier run
    /// fetched in its cache).
    pub fn debuginfod(mut self, client: Option<Arc<Debuginfod>>) -> Self {
        self.s.debuginfod = client;
        self
    }

    /// The symbolizer.
    pub fn build(mut self) -> Symbolizer {
        if let Some(d) = &self.s.debuginfod {
            self.s.search.debuginfod_cache = Some(d.cache().root().to_path_buf());
        }
        self.s
    }
}

/// The build-ids recorded for mapped files (`build-ids` side block: `hex path` lines).
pub fn parse_build_ids(text: &[u8]) -> HashMap<PathBuf, Vec<u8>> {
    parse_build_id_lines(text).into_iter().collect()
}

/// The `hex path` lines of a `build-ids` side block, in order, a path as often as it is
/// listed (the path as bytes, as the MMAP records name it); lines that are not such a pair
/// are skipped.
pub fn parse_build_id_lines(text: &[u8]) -> Vec<(PathBuf, Vec<u8>)> {
    use std::os::unix::ffi::OsStrExt as _;
    text.split(|&b| b == b'\n')
        .filter_map(|l| {
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            let space = l.iter().position(|&b| b == b' ')?;
            let (hex, path) = (l.get(..space)?, l.get(space + 1..)?);
            if hex.len() % 2 != 0 || path.is_empty() {
                return None;
            }
            let bytes = hex
                .chunks(2)
                .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
                .collect::<Option<Vec<u8>>>()?;
            Some((PathBuf::from(std::ffi::OsStr::from_bytes(path)), bytes))
        })
        .collect()
}

fn unresolved_loc(addr: u64, kernel: bool, dso: Arc<str>, why: Unresolved) -> Loc {
    Loc {
        addr,
        kernel,
        dso,
        file_addr: addr,
        sym: None,
        sym_offset: 0,
        sym_start: 0,
        frames: Vec::new(),
        unresolved: Some(why),
        rel_addr: 0,
        dso_path: Arc::default(),
        span: None,
    }
}

/// The location of `frame` at file offset `offset` (of its lookup address) in `b`; a return
/// address's symbol offset is that of the return address, as perf prints it.
fn resolve_in(b: &Binary, frame: FrameAddress, offset: u64, dso: Arc<str>) -> Loc {
    let (addr, past) = (frame.lookup(), frame.address() - frame.lookup());
    let Some(svma) = b.svma(offset, 0, 0) else {
        return unresolved_loc(addr, false, dso, Unresolved::NoSymbols);
    };
    match b.symbolize(svma) {
        Ok(s) => {
            let span = s
                .sym
                .as_ref()
                .and(s.span)
                .and_then(|sp| b.offset_span(offset, sp));
            let (sym, off, start) = match (&s.sym, s.frames.last()) {
                (Some(sym), _) => (
                    Some(sym.name.clone()),
                    svma.wrapping_sub(sym.start).wrapping_add(past),
                    sym.start,
                ),
                (None, Some(f)) => (f.function.clone(), 0, 0),
                (None, None) => (None, 0, 0),
            };
            Loc {
                addr,
                kernel: false,
                dso,
                file_addr: svma,
                unresolved: sym.is_none().then_some(Unresolved::NoSymbols),
                rel_addr: 0,
                dso_path: Arc::default(),
                sym,
                sym_offset: off,
                sym_start: start,
                frames: s.frames,
                span,
            }
        }
        Err(why) => Loc {
            file_addr: svma,
            ..unresolved_loc(addr, false, dso, why)
        },
    }
}

/// Where a recorded path is found on this machine (under `--symfs` when given).
pub(super) fn on_disk(path: &Path, symfs: Option<&Path>) -> PathBuf {
    match symfs {
        Some(root) => root.join(path.strip_prefix("/").unwrap_or(path)),
        None => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `hex path` lines in order, a path listed twice kept twice (the map keeps the last);
    /// paths as bytes; malformed lines skipped.
    #[test]
    fn build_id_lines() {
        let text = b"abcd /usr/bin/a b\n0102 /p\nzz /bad\nabc /odd\nnospace\n0304 /p\r\n\xff00 /x\n0a0b /n\xff\n";
        let lines = parse_build_id_lines(text);
        use std::os::unix::ffi::OsStrExt as _;
        let path = |b: &[u8]| PathBuf::from(std::ffi::OsStr::from_bytes(b));
        assert_eq!(
            lines,
            vec![
                (path(b"/usr/bin/a b"), vec![0xab, 0xcd]),
                (path(b"/p"), vec![1, 2]),
                (path(b"/p"), vec![3, 4]),
                (path(b"/n\xff"), vec![0x0a, 0x0b]),
            ]
        );
        assert_eq!(
            parse_build_ids(text).get(Path::new("/p")),
            Some(&vec![3, 4])
        );
    }

    /// perf's entries of an address's inline chain: inlined functions innermost first, then
    /// the function itself, marked inlined only where DWARF names it otherwise than the symbol
    /// table; the symbol alone without DWARF; nothing unresolved.
    #[test]
    fn inline_entries_as_perf_lists_them() {
        let frame = |name: &str, line| Frame {
            function: Some(name.into()),
            file: Some("a.c".into()),
            line,
            decl_line: 0,
        };
        let mut l = unresolved_loc(0x1234, false, "a".into(), Unresolved::NoSymbols);
        assert!(l.inline_entries().is_empty());
        l.sym = Some("checksum".into());
        l.unresolved = None;
        let names = |l: &Loc| -> Vec<(String, bool, Option<u32>)> {
            l.inline_entries()
                .iter()
                .map(|e| (e.name.to_string(), e.inlined, e.frame.map(|f| f.line)))
                .collect()
        };
        assert_eq!(names(&l), [("checksum".to_string(), false, None)]);
        l.frames = vec![frame("mix", 3), frame("round2", 9), frame("checksum", 20)];
        assert_eq!(
            names(&l),
            [
                ("mix".to_string(), true, Some(3)),
                ("round2".to_string(), true, Some(9)),
                ("checksum".to_string(), false, Some(20)),
            ]
        );
        // glibc's `__libc_start_main_impl` under the versioned `__libc_start_main@@GLIBC_2.34`.
        l.sym = Some("__libc_start_main@@GLIBC_2.34".into());
        l.frames = vec![frame("__libc_start_main_impl", 360)];
        assert_eq!(
            names(&l),
            [("__libc_start_main_impl".to_string(), true, Some(360))]
        );
        // ld.so's `call_init` inlined into its own out-of-line copy: the symbol twice.
        l.sym = Some("call_init".into());
        l.frames = vec![frame("call_init", 74), frame("call_init", 70)];
        assert_eq!(
            names(&l),
            [
                ("call_init".to_string(), false, Some(74)),
                ("call_init".to_string(), false, Some(70)),
            ]
        );
    }

    #[inline(never)]
    fn probe(x: u64) -> u64 {
        std::hint::black_box(x).wrapping_mul(31)
    }

    /// This test binary's mapping holding `addr`: (start, pgoff, path).
    fn own_mapping(addr: u64) -> (u64, u64, String) {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines()
            .find_map(|line| {
                let mut f = line.split_whitespace();
                let (lo, hi) = f.next()?.split_once('-')?;
                let (lo, hi) = (
                    u64::from_str_radix(lo, 16).ok()?,
                    u64::from_str_radix(hi, 16).ok()?,
                );
                let pgoff = u64::from_str_radix(f.nth(1)?, 16).ok()?;
                let path = f.nth(2)?.to_string();
                (lo <= addr && addr < hi).then_some((lo, pgoff, path))
            })
            .expect("a file mapping holds the address")
    }

    #[test]
    fn frames_print_as_recorded_and_each_binary_loads_once() {
        assert_ne!(probe(3), 0);
        let addr = probe as fn(u64) -> u64 as usize as u64;
        let (start, pgoff, path) = own_mapping(addr);
        let mut maps = AddressSpaces::new();
        maps.map(7, start, 1 << 40, pgoff, path.as_bytes());
        let m = maps.find(7, addr + 1).unwrap();
        let (file, off) = (m.file, m.file_offset(addr));
        let s = Symbolizer::builder().threads(2).build();
        // The sampled instruction at the function's start, and a return address one byte
        // past it: both look up `probe`, each prints its own address and offset.
        let keys = [
            (LocKey::File(file, off), FrameAddress::Ip(addr)),
            (LocKey::File(file, off), FrameAddress::Return(addr + 1)),
            (LocKey::Unmapped(7, 0x10), FrameAddress::Return(0x11)),
        ];
        let (locs, mismatches) = s.symbolize(&maps, &keys);
        assert!(mismatches.is_empty());
        for (l, (at, offset)) in locs.iter().zip([(addr, 0), (addr + 1, 1)]) {
            assert!(l.sym.as_deref().unwrap().contains("probe"), "{l:?}");
            assert_eq!((l.addr, l.sym_offset), (at, offset), "{l:?}");
            assert_eq!(l.file_addr, locs[0].file_addr, "looked up at the same byte");
        }
        assert_eq!(locs[2].addr, 0x11);
        assert_eq!(locs[2].unresolved, Some(Unresolved::Unmapped));
        // Done with, the binary is dropped; asked again, the symbolizer loads it again.
        assert_eq!(s.binaries.lock().unwrap().len(), 0);
        let (again, _) = s.symbolize(&maps, &keys[..1]);
        assert_eq!(again[0].sym, locs[0].sym);
    }
}
