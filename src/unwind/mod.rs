//! User-space stack unwinding of samples that carry the user registers and a copy of the user
//! stack (`PERF_SAMPLE_REGS_USER` + `PERF_SAMPLE_STACK_USER`, `--call-graph dwarf`): the stage
//! between ordering and symbolization.
//!
//! **Rules from `.eh_frame`** (framehop, written for exactly this by the samply author). Each
//! process gets its own framehop unwinder holding one module per executable file mapping, kept
//! in step with the records as they come in time order: an MMAP of executable code adds a
//! module (replacing any it overlaps), exec empties the process, a forked process starts with
//! its parent's modules, the exit of the main thread drops the process. A file's unwind data
//! (`.eh_frame`, `.eh_frame_hdr`, and the `.text` and `.got` addresses its pointer encodings
//! are relative to) is read once and shared by every process that maps it.
//!
//! **Where a file sits.** framehop wants the address the file's first PT_LOAD would have: the
//! mapping covers the file range `[pgoff, pgoff + len)`, and the PT_LOAD whose file range
//! contains it, or lies inside it, gives the bias between file and process addresses (the
//! segment that merely contains `pgoff` can be the wrong one: linkers leave gaps between the
//! file layout and the address layout).
//!
//! **The walk** starts from the sampled IP, SP and BP (perf's register numbers 8, 7 and 6, in
//! the order of the attr's `sample_regs_user`) and reads the stack only from the copied bytes
//! (the first `dyn_size`); it ends at the process root, or keeps the frames found when the
//! rules or the copy run out. The first frame is the instruction pointer; each caller is
//! given as the byte before its return address, inside the call instruction, which is what
//! perf's unwinder reports and prints (its frame-pointer chains keep the return address).
//!
//! **`.debug_frame`** (code built with `-fno-asynchronous-unwind-tables`) is the fallback for a
//! frame `.eh_frame` has no rule for: from the file itself, else from its separate debug file
//! (distributions strip `.debug_*` sections into one), which the caller's [`DebugFiles`]
//! finds (the recorder and the replay pass the symbolizer's debug-file search).
//!
//! **Signal frames.** A handler returns into the `rt_sigreturn` trampoline, recognised by its
//! code (`mov $15, %rax; syscall`), which no rule unwinds: the walk goes on from the
//! interrupted registers in the signal frame's `ucontext`, and the interrupted instruction is
//! a frame of its own, as perf reports it.
//!
//! **The vdso** is no file on disk: its rules come from its image ([`Unwinder::with_vdso`]: at
//! record time this machine's, [`crate::kernel::own_vdso`]; in a report the recording's, as
//! `Recording::vdso_image` finds it). At record time ([`Unwinder::with_live_maps`]) a walk
//! that meets code the records have not mapped yet reads the live process's
//! `/proc/PID/maps` again, at most every 100 ms.
//!
//! **What the walks say** ([`UnwindStats`]): how many reached the root, ran past the copied
//! stack or stopped, and per object where and why walks ended (no unwind information, no rule
//! for the address, unmapped address, stack copy too small, no vdso image), which the report
//! prints so that a short stack is never a silent one.
//!
//! Nothing read from files or samples is trusted: sections larger than the file are not read,
//! stack reads outside the copy fail the walk there, and the walk is bounded.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, Module, Unwinder as _};
use object::read::ReadCache;
use object::{Object as _, ObjectSection as _, ObjectSegment as _};

use crate::decode::{Record, Regs, StackUser};

mod cfi;
pub mod fp;

/// An address of a stack frame, with its kind (framehop's `FrameAddress`): the sampled
/// instruction, or a return address found in a call chain or by unwinding. A return address
/// points after the call, possibly into the next function or the next line, so it is looked
/// up one byte earlier, inside the call instruction; it is printed as it is, as perf prints
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameAddress {
    /// The instruction that was executing.
    Ip(u64),
    /// Where a call returns to.
    Return(u64),
}

impl FrameAddress {
    /// The address as recorded (what `script` prints).
    pub fn address(self) -> u64 {
        match self {
            FrameAddress::Ip(a) | FrameAddress::Return(a) => a,
        }
    }

    /// The address to symbolize: inside the instruction the frame was executing.
    pub fn lookup(self) -> u64 {
        match self {
            FrameAddress::Ip(a) => a,
            FrameAddress::Return(a) => a.saturating_sub(1),
        }
    }
}

/// perf's x86 register numbers.
const REG_BX: u32 = 1;
const REG_BP: u32 = 6;
const REG_SP: u32 = 7;
const REG_IP: u32 = 8;
/// `PROT_EXEC`.
const PROT_EXEC: u32 = 4;
/// Frames of one stack at most.
const MAX_FRAMES: usize = 1024;
/// Exited processes kept, at most.
const KEEP_DEAD: usize = 64;
/// framehop's module ranges are relative to `base_avma` in 32 bits.
const MAX_MODULE: u64 = u32::MAX as u64;

/// The unwind data of one ELF file, shared by every process that maps it.
#[derive(Debug)]
struct FileInfo {
    /// PT_LOAD segments: (p_vaddr, p_offset, p_filesz).
    segments: Vec<(u64, u64, u64)>,
    text: Option<Range<u64>>,
    got: Option<Range<u64>>,
    eh_frame: Option<(Range<u64>, Arc<[u8]>)>,
    eh_frame_hdr: Option<(Range<u64>, Arc<[u8]>)>,
    /// `.debug_frame`: the rules a frame gets when `.eh_frame` has none for it.
    debug_frame: Option<Arc<[u8]>>,
    /// The FDEs of `.eh_frame` whose CFA is off a register framehop does not keep
    /// ([`cfi`]), in file addresses.
    odd_cfa: Vec<Range<u64>>,
}

impl FileInfo {
    /// Reads what unwinding needs from `path`; `None` when it is no ELF file or has no
    /// `.eh_frame`.
    /// `.debug_frame` comes from the file itself, else from its separate debug file when
    /// `debug_files` finds one.
    fn load(path: &Path, debug_files: Option<&DebugFiles>) -> Option<FileInfo> {
        let file = open_regular(path)?;
        let cache = ReadCache::new(&file);
        let obj = object::File::parse(&cache).ok()?;
        // Read straight from the file, and only what the file holds.
        let separate = || debug_frame_of(&debug_files?(path)?);
        FileInfo::from_object(&obj, |s| crate::objfile::section_bytes(&file, s), separate)
    }

    /// The same from an ELF image in memory (the vdso).
    fn from_image(image: &[u8]) -> Option<FileInfo> {
        let obj = object::File::parse(image).ok()?;
        FileInfo::from_object(&obj, |s| s.data().ok().map(Arc::from), || None)
    }

    /// The segments and sections of a parsed file, each section's bytes from `data`.
    fn from_object<'d, R: object::ReadRef<'d>>(
        obj: &object::File<'d, R>,
        data: impl Fn(&object::Section<'d, '_, R>) -> Option<Arc<[u8]>>,
        separate_debug_frame: impl FnOnce() -> Option<Arc<[u8]>>,
    ) -> Option<FileInfo> {
        let segments: Vec<(u64, u64, u64)> = obj
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (s.address(), off, size)
            })
            .collect();
        let range = |name: &str| {
            obj.section_by_name(name)
                .map(|s| s.address()..s.address().saturating_add(s.size()))
        };
        let bytes = |name: &str| -> Option<(Range<u64>, Arc<[u8]>)> {
            let s = obj.section_by_name(name)?;
            let buf = data(&s)?;
            Some((
                s.address()..s.address().saturating_add(buf.len() as u64),
                buf,
            ))
        };
        FileInfo::from_parts(
            segments,
            range(".text"),
            range(".got"),
            bytes,
            separate_debug_frame,
        )
    }

    fn from_parts(
        segments: Vec<(u64, u64, u64)>,
        text: Option<Range<u64>>,
        got: Option<Range<u64>>,
        bytes: impl Fn(&str) -> Option<(Range<u64>, Arc<[u8]>)>,
        separate_debug_frame: impl FnOnce() -> Option<Arc<[u8]>>,
    ) -> Option<FileInfo> {
        let eh_frame = bytes(".eh_frame");
        // Code built with -fno-asynchronous-unwind-tables has its rules in `.debug_frame`
        // only (and the startup files' in a small `.eh_frame`); a stripped binary's are in
        // its debug file.
        let debug_frame = bytes(".debug_frame")
            .map(|(_, b)| b)
            .or_else(separate_debug_frame);
        if eh_frame.is_none() && debug_frame.is_none() {
            return None;
        }
        // A header without its search table (table_enc DW_EH_PE_omit, or no entries) would
        // make every lookup fail: framehop indexes `.eh_frame` itself then.
        let eh_frame_hdr = bytes(".eh_frame_hdr").filter(|(_, h)| {
            h.get(3).is_some_and(|&enc| enc != 0xff)
                && h.get(8..12)
                    .and_then(|n| n.try_into().ok())
                    .is_some_and(|n| u32::from_le_bytes(n) > 0)
        });
        let mut info = FileInfo {
            segments,
            text,
            got,
            eh_frame,
            eh_frame_hdr,
            debug_frame,
            odd_cfa: Vec::new(),
        };
        info.odd_cfa = info
            .cfi()
            .map_or_else(Vec::new, |s| cfi::odd_cfa_ranges(&s));
        Some(info)
    }

    /// `.eh_frame` for [`cfi`]'s own evaluation.
    fn cfi(&self) -> Option<cfi::Section<'_>> {
        let (range, bytes) = self.eh_frame.as_ref()?;
        Some(cfi::Section {
            bytes,
            svma: range.start,
            text: self.text.as_ref().map(|t| t.start),
            got: self.got.as_ref().map(|g| g.start),
            hdr: self.eh_frame_hdr.as_ref().map(|(r, b)| (&b[..], r.start)),
        })
    }

    /// `base_avma` of the file mapped at `start` from file offset `pgoff`, `len` bytes: where
    /// its first PT_LOAD would be.
    fn base_avma(&self, start: u64, len: u64, pgoff: u64) -> Option<u64> {
        let end = pgoff.checked_add(len)?;
        let &(vaddr, off, _) = self.segments.iter().find(|&&(_, off, filesz)| {
            let seg_end = off.saturating_add(filesz);
            (off <= pgoff && end <= seg_end) || (pgoff <= off && seg_end <= end)
        })?;
        let seg_avma = start.wrapping_add(off).wrapping_sub(pgoff);
        let bias = seg_avma.wrapping_sub(vaddr);
        Some(self.base_svma().wrapping_add(bias))
    }

    fn base_svma(&self) -> u64 {
        self.segments.first().map_or(0, |s| s.0)
    }
}

/// Finds the separate debug file of a binary (the build-id tree, `.gnu_debuglink`): given by
/// the caller, which knows the search paths, so that this stage needs nothing from the
/// symbolizer.
pub type DebugFiles = Arc<dyn Fn(&Path) -> Option<PathBuf> + Send + Sync>;

/// A regular file opened for reading (a FIFO would block the open).
fn open_regular(path: &Path) -> Option<File> {
    std::fs::metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .and_then(|_| File::open(path).ok())
}

/// The `.debug_frame` of a (debug) file, read only as far as the file holds it.
fn debug_frame_of(path: &Path) -> Option<Arc<[u8]>> {
    let file = open_regular(path)?;
    let cache = ReadCache::new(&file);
    let obj = object::File::parse(&cache).ok()?;
    let section = obj.section_by_name(".debug_frame")?;
    crate::objfile::section_bytes(&file, &section)
}

/// An executable mapping: where, what, and from which file offset.
#[derive(Debug, Clone)]
struct Mapped {
    range: Range<u64>,
    name: Arc<str>,
    pgoff: u64,
}

/// A file mapped in a process, for [`cfi`]'s walks.
#[derive(Clone)]
struct Unit {
    range: Range<u64>,
    base_avma: u64,
    info: Arc<FileInfo>,
}

/// One process: its unwinder and the mappings its modules cover.
struct Proc {
    unwinder: UnwinderX86_64<Arc<[u8]>>,
    cache: CacheX86_64,
    modules: Vec<Range<u64>>,
    /// The files behind `modules`.
    units: Vec<Unit>,
    /// Where a frame's CFA is off a register framehop does not keep (process addresses).
    odd_cfa: Vec<Range<u64>>,
    /// Modules of the files that have `.debug_frame`, from it alone: asked when the main
    /// unwinder has no rule for a frame (framehop reads one kind of rules per module).
    fallback: UnwinderX86_64<Arc<[u8]>>,
    fallback_cache: CacheX86_64,
    fallback_modules: Vec<Range<u64>>,
    /// Every executable mapping (those without unwind data too), to say where a walk
    /// stopped and to read code bytes.
    names: Vec<Mapped>,
}

impl Clone for Proc {
    fn clone(&self) -> Proc {
        Proc {
            unwinder: self.unwinder.clone(),
            cache: CacheX86_64::new(),
            modules: self.modules.clone(),
            units: self.units.clone(),
            odd_cfa: self.odd_cfa.clone(),
            fallback: self.fallback.clone(),
            fallback_cache: CacheX86_64::new(),
            fallback_modules: self.fallback_modules.clone(),
            names: self.names.clone(),
        }
    }
}

impl Proc {
    fn new() -> Proc {
        Proc {
            unwinder: UnwinderX86_64::new(),
            cache: CacheX86_64::new(),
            modules: Vec::new(),
            units: Vec::new(),
            odd_cfa: Vec::new(),
            fallback: UnwinderX86_64::new(),
            fallback_cache: CacheX86_64::new(),
            fallback_modules: Vec::new(),
            names: Vec::new(),
        }
    }
}

/// Why stacks were not unwound to their root.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct UnwindStats {
    /// Samples with user registers and a user stack.
    pub samples: u64,
    /// Of those, walks that reached the process root.
    pub complete: u64,
    /// Walks that ran past the copied stack (`--call-graph dwarf,SIZE` too small).
    pub stack_cut: u64,
    /// Walks that ended on an error of the rules (no unwind information, bad data).
    pub stopped: u64,
    /// Samples without registers (a kernel thread) or without IP/SP/BP among them.
    pub no_regs: u64,
    /// Samples whose stack copy filled the whole `--call-graph dwarf,SIZE` (the stack may
    /// go on beyond it).
    pub stack_full: u64,
    /// Walks that did not reach the root, by where and why they ended: `object: reason`.
    pub stops: std::collections::BTreeMap<String, u64>,
}

impl UnwindStats {
    /// The commonest places walks ended, most first: `(count, "object: reason")`.
    pub fn top_stops(&self, n: usize) -> Vec<(u64, &str)> {
        let mut v: Vec<(u64, &str)> = self.stops.iter().map(|(k, &c)| (c, k.as_str())).collect();
        v.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        v.truncate(n);
        v
    }
}

/// Distinct stop places counted at most (a damaged recording must not grow the map).
const MAX_STOP_KINDS: usize = 256;

/// How a walk ended.
#[derive(Debug, Clone, Copy)]
enum Walk {
    /// At the process root.
    Complete,
    /// The process was never mapped.
    NoProcess,
    /// Short of the root: the stack copy ran out (`cut`), or no rule applied at `last`.
    Ended { cut: bool, last: u64 },
    /// A frame framehop cannot follow: walk again with [`cfi::Tracked`].
    Odd,
}

/// How often a live process's maps are read again, at most.
const REFRESH_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Unwinds user stacks; see the module docs.
pub struct Unwinder {
    symfs: Option<PathBuf>,
    /// Where stripped binaries' `.debug_frame` is looked for.
    debug_files: Option<DebugFiles>,
    /// `/proc`, when the processes are live (record time).
    live_maps: Option<PathBuf>,
    /// The vdso's unwind data, when its image is known.
    vdso: Option<Arc<FileInfo>>,
    refreshed: HashMap<u32, std::time::Instant>,
    files: HashMap<Vec<u8>, Option<Arc<FileInfo>>>,
    procs: HashMap<u32, Proc>,
    /// Processes that exited, oldest first, not yet dropped.
    dead: VecDeque<u32>,
    /// What the walks met.
    pub stats: UnwindStats,
}

impl std::fmt::Debug for Unwinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unwinder")
            .field("files", &self.files.len())
            .field("processes", &self.procs.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Unwinder {
    /// An unwinder that finds binaries under `symfs` (as if it were `/`) when given.
    pub fn new(symfs: Option<PathBuf>) -> Unwinder {
        Unwinder {
            symfs,
            debug_files: None,
            live_maps: None,
            vdso: None,
            refreshed: HashMap::new(),
            files: HashMap::new(),
            procs: HashMap::new(),
            dead: VecDeque::new(),
            stats: UnwindStats::default(),
        }
    }

    /// Applies a side-band record (in time order).
    pub fn apply(&mut self, r: &Record<'_>) {
        match r {
            Record::Mmap2(m) if !m.data && m.prot & PROT_EXEC != 0 => {
                self.map(m.pid, m.addr, m.len, m.pgoff, m.filename);
            }
            Record::Mmap(m) if !m.data => self.map(m.pid, m.addr, m.len, m.pgoff, m.filename),
            Record::Comm(c) if c.exec => {
                self.procs.remove(&c.pid);
            }
            Record::Fork(t) if t.pid != t.ppid => {
                let child = self.procs.get(&t.ppid).cloned().unwrap_or_else(Proc::new);
                self.procs.insert(t.pid, child);
                self.dead.retain(|&p| p != t.pid);
            }
            // A process is dropped a while after its exit: at record time its last samples
            // can still be on their way in another CPU's buffer.
            Record::Exit(t) if t.pid == t.tid => {
                if !self.dead.contains(&t.pid) {
                    self.dead.push_back(t.pid);
                }
                if self.dead.len() > KEEP_DEAD
                    && let Some(pid) = self.dead.pop_front()
                {
                    self.procs.remove(&pid);
                }
            }
            _ => {}
        }
    }

    fn map(&mut self, pid: u32, start: u64, len: u64, pgoff: u64, name: &[u8]) {
        if pid == u32::MAX || len == 0 {
            return;
        }
        let end = start.saturating_add(len);
        {
            let proc = self.procs.entry(pid).or_insert_with(Proc::new);
            proc.names
                .retain(|m| !(m.range.start < end && start < m.range.end));
            proc.names.push(Mapped {
                range: start..end,
                name: String::from_utf8_lossy(name).into(),
                pgoff,
            });
        }
        // The vdso's image comes from the recording or this machine; other pseudo files and
        // anonymous memory have nothing to read.
        let info = if name == b"[vdso]" {
            self.vdso.clone()
        } else if !name.starts_with(b"/")
            || is_anonymous(&String::from_utf8_lossy(name))
            || len > MAX_MODULE
        {
            return;
        } else {
            self.file_info(name)
        };
        let Some(info) = info else { return };
        self.add_module(pid, start, len, pgoff, name, info);
    }

    fn file_info(&mut self, name: &[u8]) -> Option<Arc<FileInfo>> {
        let symfs = self.symfs.as_deref();
        let debug_files = self.debug_files.as_ref();
        self.files
            .entry(name.to_vec())
            .or_insert_with(|| {
                let path =
                    Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name));
                let on_disk = match symfs {
                    Some(root) => root.join(path.strip_prefix("/").unwrap_or(path)),
                    None => path.to_path_buf(),
                };
                FileInfo::load(&on_disk, debug_files).map(Arc::new)
            })
            .clone()
    }

    fn add_module(
        &mut self,
        pid: u32,
        start: u64,
        len: u64,
        pgoff: u64,
        name: &[u8],
        info: Arc<FileInfo>,
    ) {
        let end = start.saturating_add(len);
        let Some(base_avma) = info.base_avma(start, len, pgoff) else {
            return;
        };
        let proc = self.procs.entry(pid).or_insert_with(Proc::new);
        // A new mapping replaces what it overlaps (and a module must not be added twice).
        remove_overlapping(&mut proc.unwinder, &mut proc.modules, start..end);
        remove_overlapping(&mut proc.fallback, &mut proc.fallback_modules, start..end);
        let overlaps = |r: &Range<u64>| r.start < end && start < r.end;
        proc.units.retain(|u| !overlaps(&u.range));
        proc.odd_cfa.retain(|r| !overlaps(r));
        let to_avma = |svma: u64| svma.wrapping_sub(info.base_svma()).wrapping_add(base_avma);
        proc.odd_cfa.extend(
            info.odd_cfa
                .iter()
                .map(|r| to_avma(r.start)..to_avma(r.end))
                .filter(|r| start <= r.start && r.end <= end),
        );
        proc.odd_cfa.sort_by_key(|r| r.start);
        // The module of a file with some of its sections: the same layout for both unwinders.
        let module = |sections: ExplicitModuleSectionInfo<Arc<[u8]>>| {
            Module::new(
                String::from_utf8_lossy(name).into_owned(),
                start..end,
                base_avma,
                ExplicitModuleSectionInfo {
                    base_svma: info.base_svma(),
                    text_svma: info.text.clone(),
                    got_svma: info.got.clone(),
                    ..sections
                },
            )
        };
        if let Some(debug_frame) = &info.debug_frame {
            proc.fallback.add_module(module(ExplicitModuleSectionInfo {
                debug_frame: Some(debug_frame.clone()),
                ..Default::default()
            }));
            proc.fallback_modules.push(start..end);
        }
        let section =
            |s: &Option<(Range<u64>, Arc<[u8]>)>| s.as_ref().map(|(r, b)| (r.clone(), b.clone()));
        let (eh_frame_svma, eh_frame) = section(&info.eh_frame).unzip();
        let (eh_frame_hdr_svma, eh_frame_hdr) = section(&info.eh_frame_hdr).unzip();
        proc.unwinder.add_module(module(ExplicitModuleSectionInfo {
            eh_frame_svma,
            eh_frame,
            eh_frame_hdr_svma,
            eh_frame_hdr,
            ..Default::default()
        }));
        proc.modules.push(start..end);
        proc.units.push(Unit {
            range: start..end,
            base_avma,
            info,
        });
    }

    /// Unwinds the user stack of a sample of process `pid`: `mask` is the attr's
    /// `sample_regs_user`. Appends the frames, the user IP first, to `out`; returns whether
    /// the walk reached the process root.
    pub fn unwind(
        &mut self,
        pid: u32,
        mask: u64,
        regs: &Regs<'_>,
        stack: &StackUser<'_>,
        out: &mut Vec<FrameAddress>,
    ) -> bool {
        self.stats.samples += 1;
        let reg = |r: u32| -> Option<u64> {
            if regs.abi == 0 || mask & (1 << r) == 0 {
                return None;
            }
            regs.regs
                .get((mask & ((1u64 << r) - 1)).count_ones() as usize)
        };
        let (Some(ip), Some(sp), Some(bp)) = (reg(REG_IP), reg(REG_SP), reg(REG_BP)) else {
            self.stats.no_regs += 1;
            return false;
        };
        let copied = stack
            .dyn_size
            .map_or(0, |d| usize::try_from(d).unwrap_or(usize::MAX))
            .min(stack.data.len());
        if copied == stack.data.len() && copied > 0 {
            self.stats.stack_full += 1;
        }
        let bytes = stack.data.get(..copied).unwrap_or_default();
        let start = out.len();
        // Through a frame framehop cannot follow, the walk is made again with every
        // register (when the sample has rbx, it has them all).
        let walk_all = |this: &mut Unwinder, out: &mut Vec<FrameAddress>| {
            let walk = this.walk(pid, (ip, sp, bp), bytes, out, None);
            if !matches!(walk, Walk::Odd) || reg(REG_BX).is_none() {
                return walk;
            }
            out.truncate(start);
            let mut tracked = cfi::Tracked::from_sample(reg);
            this.walk(pid, (ip, sp, bp), bytes, out, Some(&mut tracked))
        };
        let mut walk = walk_all(self, out);
        // At record time a library's MMAP can still be on its way in another CPU's buffer:
        // where a walk ends outside every known mapping, the process's maps are read again.
        if let Walk::Ended { cut: false, last } = walk
            && !self.is_mapped(pid, last)
            && self.refresh_maps(pid)
        {
            out.truncate(start);
            walk = walk_all(self, out);
        }
        let (cut, last) = match walk {
            Walk::Odd => (false, out.last().map_or(ip, |f| f.lookup())),
            Walk::Complete => {
                self.stats.complete += 1;
                return true;
            }
            Walk::NoProcess => {
                self.stats.stopped += 1;
                count_stop(&mut self.stats, "[unknown process]", "no mappings seen");
                return false;
            }
            Walk::Ended { cut, last } => (cut, last),
        };
        // Where the walk ended: the object of the last frame found, and why.
        let proc = self.procs.get(&pid);
        let object = proc.and_then(|p| {
            p.names
                .iter()
                .find(|m| m.range.contains(&last))
                .map(|m| m.name.clone())
        });
        let has_rules = proc.is_some_and(|p| p.modules.iter().any(|r| r.contains(&last)));
        let (object, why) = match (&object, cut, has_rules) {
            (_, true, _) => (
                object.as_deref().unwrap_or("[unknown]"),
                "stack copy too small",
            ),
            (None, false, _) => ("[unknown]", "unmapped address"),
            (Some(o), false, true) => (o.as_ref(), "no unwind rule for the address"),
            (Some(o), false, false) if o.starts_with("[vdso]") => {
                (o.as_ref(), "vdso image not read")
            }
            // Anonymous memory (JIT compilers' code, named from /tmp/perf-PID.map): no unwind
            // rules, and perf's unwinder stops there too.
            (Some(o), false, false) if is_anonymous(o) => {
                (o.as_ref(), "JIT or other code without unwind information")
            }
            (Some(o), false, false) if o.starts_with('/') => (
                o.as_ref(),
                "no unwind information (no .eh_frame, or the file is missing)",
            ),
            (Some(o), false, false) => (o.as_ref(), "code without unwind information"),
        };
        let key_object = if is_anonymous(object) {
            object.to_string()
        } else {
            object.rsplit('/').next().unwrap_or(object).to_string()
        };
        if cut {
            self.stats.stack_cut += 1;
        } else {
            self.stats.stopped += 1;
        }
        count_stop(&mut self.stats, &key_object, why);
        false
    }

    /// One walk over the copied stack `bytes` from the registers `(ip, sp, bp)`: framehop's
    /// rules, ending in [`Walk::Odd`] at a frame it cannot follow; or, `tracked`, each frame's
    /// own rules where [`cfi`] can evaluate them and framehop's elsewhere.
    fn walk(
        &mut self,
        pid: u32,
        (ip, sp, bp): (u64, u64, u64),
        bytes: &[u8],
        out: &mut Vec<FrameAddress>,
        mut tracked: Option<&mut cfi::Tracked>,
    ) -> Walk {
        out.push(FrameAddress::Ip(ip));
        let Some(proc) = self.procs.get_mut(&pid) else {
            return Walk::NoProcess;
        };
        let mut cut = false;
        let mut read_stack = |addr: u64| -> Result<u64, ()> {
            let off = addr
                .checked_sub(sp)
                .and_then(|o| usize::try_from(o).ok())
                .ok_or(())?;
            match bytes.get(off..off.checked_add(8).ok_or(())?) {
                Some(b) => Ok(u64::from_le_bytes(b.try_into().map_err(|_| ())?)),
                None => {
                    cut = true;
                    Err(())
                }
            }
        };
        let mut regs = UnwindRegsX86_64::new(ip, sp, bp);
        let mut at = framehop::FrameAddress::from_instruction_pointer(ip);
        let mut last_ra = None;
        for _ in 0..MAX_FRAMES {
            let lookup = at.address_for_lookup();
            let mut own = None;
            match tracked.as_deref_mut() {
                None if in_ranges(&proc.odd_cfa, lookup) => return Walk::Odd,
                None => {}
                Some(t) => {
                    let unit = proc.units.iter().find(|u| u.range.contains(&lookup));
                    if let Some((u, section)) = unit.and_then(|u| Some((u, u.info.cfi()?))) {
                        let svma = lookup
                            .wrapping_sub(u.base_avma)
                            .wrapping_add(u.info.base_svma());
                        own = match t.step(&section, svma, &mut read_stack) {
                            cfi::Step::Caller(ra) => {
                                regs = UnwindRegsX86_64::new(ra, t.sp(), t.bp().unwrap_or(0));
                                Some(Ok(Some(ra)))
                            }
                            cfi::Step::Root => Some(Ok(None)),
                            cfi::Step::Cut => break,
                            cfi::Step::Unknown => None,
                        };
                    }
                }
            }
            let before = regs;
            let mut step = match own {
                Some(step) => step,
                None => proc
                    .unwinder
                    .unwind_frame(at, &mut regs, &mut proc.cache, &mut read_stack),
            };
            // No `.eh_frame` rule: the file's `.debug_frame`, if it has one for the frame.
            if step.is_err()
                && proc
                    .fallback_modules
                    .iter()
                    .any(|r| r.contains(&at.address_for_lookup()))
            {
                regs = before;
                step = proc.fallback.unwind_frame(
                    at,
                    &mut regs,
                    &mut proc.fallback_cache,
                    &mut read_stack,
                );
            }
            if let (None, Some(t), Ok(Some(ra))) = (&own, tracked.as_deref_mut(), &step) {
                t.after_framehop(*ra, regs.sp(), regs.bp());
            }
            match step {
                Ok(Some(ra)) => match framehop::FrameAddress::from_return_address(ra) {
                    Some(a) => {
                        at = a;
                        last_ra = Some(ra);
                        // As perf's unwinder reports it: the call instruction's address,
                        // one byte before the return address.
                        out.push(FrameAddress::Ip(ra.saturating_sub(1)));
                    }
                    None => return Walk::Complete,
                },
                Ok(None) => return Walk::Complete,
                // A signal handler returned into the signal trampoline: the interrupted
                // code's registers are in the signal frame's ucontext, which starts where the
                // handler's return address was popped (the stack pointer now).
                Err(_)
                    if last_ra
                        .is_some_and(|ra| is_sigreturn(&proc.names, self.symfs.as_deref(), ra)) =>
                {
                    last_ra = None;
                    let uc = regs.sp();
                    let mut word =
                        |off: u64| uc.checked_add(off).ok_or(()).and_then(&mut read_stack);
                    let (Ok(rip), Ok(rsp), Ok(rbp)) = (word(UC_RIP), word(UC_RSP), word(UC_RBP))
                    else {
                        break;
                    };
                    regs = UnwindRegsX86_64::new(rip, rsp, rbp);
                    if let Some(t) = tracked.as_deref_mut() {
                        t.after_framehop(rip, rsp, rbp);
                    }
                    at = framehop::FrameAddress::from_instruction_pointer(rip);
                    // The interrupted instruction itself, as perf reports a signal frame.
                    out.push(FrameAddress::Ip(rip));
                }
                Err(_) => break,
            }
        }
        Walk::Ended {
            cut,
            last: at.address_for_lookup(),
        }
    }

    /// Whether `addr` lies in an executable mapping of `pid` that the unwinder knows.
    fn is_mapped(&self, pid: u32, addr: u64) -> bool {
        self.procs
            .get(&pid)
            .is_some_and(|p| p.names.iter().any(|m| m.range.contains(&addr)))
    }

    /// Reads the executable mappings of a live process (`live_maps`), at most once per
    /// [`REFRESH_EVERY`] per process; whether it found mappings the unwinder lacked.
    fn refresh_maps(&mut self, pid: u32) -> bool {
        let Some(procfs) = &self.live_maps else {
            return false;
        };
        let now = std::time::Instant::now();
        if let Some(&t) = self.refreshed.get(&pid)
            && now.duration_since(t) < REFRESH_EVERY
        {
            return false;
        }
        if self.refreshed.len() > 4096 {
            self.refreshed.clear();
        }
        self.refreshed.insert(pid, now);
        let Ok(text) = std::fs::read_to_string(procfs.join(pid.to_string()).join("maps")) else {
            return false;
        };
        let mut added = false;
        for line in text.lines() {
            let mut f = line.split_whitespace();
            let (Some(range), Some(perms), Some(off)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            let name = f.nth(2).unwrap_or("");
            let (Some((a, b)), true) = (range.split_once('-'), perms.contains('x')) else {
                continue;
            };
            let (Ok(a), Ok(b), Ok(off)) = (
                u64::from_str_radix(a, 16),
                u64::from_str_radix(b, 16),
                u64::from_str_radix(off, 16),
            ) else {
                continue;
            };
            if a < b && !self.is_mapped(pid, a) {
                self.map(pid, a, b - a, off, name.as_bytes());
                added = true;
            }
        }
        added
    }

    /// Unwinds through the vdso with this image of it (the recorded one, or this machine's
    /// when it is the same).
    pub fn with_vdso(mut self, image: Option<&[u8]>) -> Unwinder {
        self.vdso = image.and_then(FileInfo::from_image).map(Arc::new);
        self
    }

    /// Takes `.debug_frame` of binaries that have none from their separate debug files,
    /// found by `find`.
    pub fn with_debug_files(mut self, find: DebugFiles) -> Unwinder {
        self.debug_files = Some(find);
        self
    }

    /// Reads a live process's maps when a walk meets code the records have not mapped yet
    /// (record time: `procfs` is `/proc`).
    pub fn with_live_maps(mut self, procfs: PathBuf) -> Unwinder {
        self.live_maps = Some(procfs);
        self
    }
}

/// `mov $15, %rax; syscall`: x86-64 `rt_sigreturn`, the code a signal handler returns into
/// (glibc's `__restore_rt`, the restorer every libc installs).
const SIGRETURN: [u8; 9] = [0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05];
/// Where `struct ucontext` keeps the interrupted RBP, RSP and RIP (its `uc_mcontext` starts at
/// 40: `uc_flags`, `uc_link`, `uc_stack`; then r8-r15, rdi, rsi, rbp, rbx, rdx, rax, rcx,
/// rsp, rip).
const UC_RBP: u64 = 40 + 10 * 8;
const UC_RSP: u64 = 40 + 15 * 8;
const UC_RIP: u64 = 40 + 16 * 8;

/// Whether the code at `addr` of a process with these mappings is the signal trampoline,
/// read from the mapped file (looked for under `symfs` when given).
fn is_sigreturn(names: &[Mapped], symfs: Option<&Path>, addr: u64) -> bool {
    use std::os::unix::fs::FileExt as _;
    let Some(m) = names.iter().find(|m| m.range.contains(&addr)) else {
        return false;
    };
    if !m.name.starts_with('/') {
        return false;
    }
    let path = Path::new(&*m.name);
    let on_disk = match symfs {
        Some(root) => root.join(path.strip_prefix("/").unwrap_or(path)),
        None => path.to_path_buf(),
    };
    let Some(off) = (addr - m.range.start).checked_add(m.pgoff) else {
        return false;
    };
    let mut code = [0u8; SIGRETURN.len()];
    File::open(on_disk)
        .and_then(|f| f.read_exact_at(&mut code, off))
        .is_ok_and(|()| code == SIGRETURN)
}

/// Whether a mapping's name says anonymous memory (perf's `//anon`, memfd, `[anon:...]`).
fn is_anonymous(name: &str) -> bool {
    name.starts_with("//anon") || name.starts_with("/memfd:") || name.starts_with("[anon")
}

/// Removes the modules of `unwinder` (their ranges in `modules`) that overlap `new`.
fn remove_overlapping(
    unwinder: &mut UnwinderX86_64<Arc<[u8]>>,
    modules: &mut Vec<Range<u64>>,
    new: Range<u64>,
) {
    modules.retain(|m| {
        let overlaps = m.start < new.end && new.start < m.end;
        if overlaps {
            unwinder.remove_module(m.start);
        }
        !overlaps
    });
}

/// Whether `addr` is in one of the sorted, disjoint `ranges`.
fn in_ranges(ranges: &[Range<u64>], addr: u64) -> bool {
    let i = ranges.partition_point(|r| r.end <= addr);
    ranges.get(i).is_some_and(|r| r.contains(&addr))
}

/// Counts a walk that ended in `object` for `why`.
fn count_stop(stats: &mut UnwindStats, object: &str, why: &str) {
    let key = format!("{object}: {why}");
    if stats.stops.len() < MAX_STOP_KINDS || stats.stops.contains_key(&key) {
        *stats.stops.entry(key).or_default() += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Mmap, SampleId, U64s};

    /// The checked-in fixture binary (C, `-g`, with `.eh_frame`).
    const FIXTURE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/recordings/root/tmp/hrec-fixture/work"
    );

    fn map(u: &mut Unwinder, pid: u32, path: &[u8], addr: u64, len: u64, pgoff: u64) {
        u.apply(&Record::Mmap(Mmap {
            pid,
            tid: pid,
            addr,
            len,
            pgoff,
            data: false,
            filename: path,
            sample_id: SampleId::default(),
        }));
    }

    /// The bias between file and process addresses comes from the PT_LOAD that holds the
    /// mapped file range, even where file and address layouts differ (a gap).
    #[test]
    fn base_address_from_the_segment_of_the_mapping() {
        let info = FileInfo {
            segments: vec![(0, 0, 0x17b24), (0x18b30, 0x17b30, 0x20000)],
            text: None,
            got: None,
            eh_frame: None,
            eh_frame_hdr: None,
            debug_frame: None,
            odd_cfa: Vec::new(),
        };
        // The executable mapping: file page 0x17000 at 0x5555_0000_0000 + 0x17000.
        let start = 0x5555_0001_7000;
        let base = info.base_avma(start, 0x21000, 0x17000).unwrap();
        // 0x17b30 in the file is at start + 0xb30 and is linked at 0x18b30.
        assert_eq!(base + 0x18b30, start + 0xb30);
        // Not PIE: loaded where linked.
        let fixed = FileInfo {
            segments: vec![(0x400000, 0, 0x1000), (0x401000, 0x1000, 0x2000)],
            ..info
        };
        assert_eq!(fixed.base_avma(0x401000, 0x2000, 0x1000), Some(0x400000));
        assert_eq!(fixed.base_avma(0x401000, 0x2000, 0x9000), None);
    }

    /// This machine's vdso has unwind rules, and a damaged image is no image, never a panic.
    #[test]
    fn vdso_images_read_from_memory() {
        let Some(image) = crate::kernel::own_vdso(Path::new("/proc")) else {
            eprintln!("skipped: this kernel maps no vdso");
            return;
        };
        let info = FileInfo::from_image(&image).expect("the vdso has .eh_frame");
        assert!(info.eh_frame.is_some() && !info.segments.is_empty());
        let mut next = crate::testutil::xorshift(99);
        for _ in 0..2000 {
            let mut b = image.clone();
            for _ in 0..(1 + next() % 8) {
                let at = (next() % b.len() as u64) as usize;
                b[at] = next() as u8;
            }
            b.truncate(1 + (next() % b.len() as u64) as usize);
            let _ = FileInfo::from_image(&b);
        }
    }

    /// Whatever the registers, the stack bytes or the unwind rules hold, a walk ends, within
    /// the frame bound, and keeps what it found; damaged `.eh_frame` bytes included.
    #[test]
    fn hostile_stacks_and_rules_never_panic() {
        let bytes = std::fs::read(FIXTURE).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut next = crate::testutil::xorshift(0x2545_f491_4f6c_dd1d_u64);
        let mask = 0xff0fff_u64;
        for round in 0..300 {
            // Every tenth round a fresh copy with random bytes overwritten.
            let path = dir.path().join(format!("w{}", round / 10));
            if round % 10 == 0 {
                let mut b = bytes.clone();
                for _ in 0..(round / 10) * 4 {
                    let at = (next() % b.len() as u64) as usize;
                    b[at] = next() as u8;
                }
                std::fs::write(&path, &b).unwrap();
            }
            let mut u = Unwinder::new(None);
            let name = path.to_str().unwrap().as_bytes().to_vec();
            map(&mut u, 7, &name, 0x5555_0000_0000, 0x10000, 0);
            let regs_bytes: Vec<u8> = (0..17)
                .flat_map(|i| {
                    let v = match i {
                        8 => 0x5555_0000_1000 + next() % 0x2000,
                        6 | 7 => 0x7ffd_0000_0000 + next() % 0x4000,
                        _ => next(),
                    };
                    v.to_le_bytes()
                })
                .collect();
            let regs = Regs {
                abi: 2,
                regs: U64s::new(&regs_bytes),
            };
            let stack_bytes: Vec<u8> = (0..(next() % 4096)).map(|_| next() as u8).collect();
            let stack = StackUser {
                data: &stack_bytes,
                dyn_size: Some(next() % 8192),
            };
            let mut out = Vec::new();
            u.unwind(7, mask, &regs, &stack, &mut out);
            assert!(!out.is_empty() && out.len() <= MAX_FRAMES + 1);
            assert_eq!(u.stats.samples, 1);
        }
        // No registers (a kernel thread): nothing, counted.
        let mut u = Unwinder::new(None);
        let mut out = Vec::new();
        let none = Regs {
            abi: 0,
            regs: U64s::default(),
        };
        let stack = StackUser {
            data: &[],
            dyn_size: None,
        };
        assert!(!u.unwind(1, mask, &none, &stack, &mut out));
        assert!(out.is_empty());
        assert_eq!(u.stats.no_regs, 1);
    }
}
