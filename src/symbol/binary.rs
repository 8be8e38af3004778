//! Loading one binary for symbolization: its ELF headers and symbol table
//! ([`super::elf`], the parser), its separate debug file when it is stripped
//! ([`super::debuginfo`], the search), and its DWARF through `addr2line` (`dwarf`); then
//! answering address queries (runtime address → file offset → SVMA → symbol and inline
//! chain), and giving the bytes of code for `annotate` and data types.
//!
//! The parser knows nothing of debug files and the search knows nothing of symbol tables, so
//! the files import in one direction: `binary` → `debuginfo` → `elf`, and `binary` → `dwarf`.
//! The binary and its debug file are each opened once: the ELF parser and the DWARF loader
//! read the same open file. Before its lookups the symbolizer hands a binary every address it
//! will ask for ([`Binary::prepare`]), so that only the DWARF units covering them are read.

use std::cell::RefCell;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::debuginfo::{SearchPaths, find_alt_file, find_debug_file};
use super::dwarf;
use super::elf::{Load, Symbols, Want, build_id_matches, hex, open_elf, read_elf_file};
use super::{Frame, Symbolized, Unresolved};

/// The most bytes of code [`Binary::code`] reads at once (a function larger than this is not
/// one a person reads instruction by instruction).
pub const MAX_CODE: u64 = 16 << 20;

/// The most bytes of a function decoded to type an access by the instructions before it
/// ([`Binary::access_type`]).
const MAX_TRACKED: u64 = 1 << 20;

/// The bytes at `[addr, addr + len)` of an ELF core image of memory (`/proc/kcore`, whose
/// `PT_LOAD` segments are at the kernel's virtual addresses): only from one segment's file
/// bytes, at most [`MAX_CODE`]; `None` when the range is not all in one.
pub fn core_code(path: &Path, addr: u64, len: u64) -> Option<Vec<u8>> {
    use object::{Object as _, ObjectSegment as _};
    use std::os::unix::fs::FileExt as _;
    if len == 0 || len > MAX_CODE {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    let cache = object::read::ReadCache::new(&file);
    let obj = object::File::parse(&cache).ok()?;
    let end = addr.checked_add(len)?;
    let (offset, _) = obj.segments().find_map(|s| {
        let (off, size) = s.file_range();
        (addr >= s.address() && end - s.address() <= size)
            .then(|| (off.checked_add(addr - s.address()), size))
    })?;
    let mut buf = vec![0u8; usize::try_from(len).ok()?];
    file.read_exact_at(&mut buf, offset?).ok()?;
    Some(buf)
}

/// What a binary's DWARF is read for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DwarfUse {
    /// Not at all: functions from symbol tables only.
    Off,
    /// Function names, inlined ones too, without source lines: the line tables are not
    /// parsed (most of the lookups' time), except for an address no function covers, whose
    /// only frame is its line.
    Names,
    /// Function names and source lines.
    Lines,
}

/// A loaded ELF file, ready to answer address queries. `Send` (load and query it on a worker
/// thread), not `Sync`: `addr2line` parses compilation units lazily behind cells.
pub struct Binary {
    pub(super) path: PathBuf,
    pub(super) build_id: Option<Vec<u8>>,
    pub(super) loads: Vec<Load>,
    pub(super) symbols: Symbols,
    /// The data objects, for data addresses ([`Binary::data_symbol`]).
    pub(super) objects: Symbols,
    pub(super) debug_path: Option<PathBuf>,
    pub(super) dwarf: Option<RefCell<dwarf::Dwarf>>,
    /// The variables at fixed addresses and their types, read on first use
    /// ([`Binary::data_type`]).
    pub(super) data_types: std::cell::OnceCell<super::datatype::DataTypes>,
    /// The call frame information, read on first use ([`Binary::access_type`]).
    pub(super) cfi: std::cell::OnceCell<Option<super::datatype::access::Cfi>>,
}

impl fmt::Debug for Binary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Binary")
            .field("path", &self.path)
            .field("build_id", &self.build_id.as_deref().map(hex))
            .field("loads", &self.loads)
            .field("symbols", &self.symbols.len())
            .field("debug_path", &self.debug_path)
            .finish_non_exhaustive()
    }
}

// Binaries are loaded and queried on worker threads.
const _: fn() = || {
    fn assert_send<T: Send>() {}
    assert_send::<Binary>();
};

impl Binary {
    /// Loads `path`. `expected_build_id` is the build id recorded at record time (`None`, an
    /// empty or an all-zero id = unknown, no check; an id zero-padded to 20 bytes, as perf
    /// stores MD5 ids, matches the shorter id).
    ///
    /// Errors: [`Unresolved::BinaryMissing`] (cannot open), [`Unresolved::NotElf`] (not a
    /// regular file, not ELF, or headers unreadable), [`Unresolved::BuildIdMismatch`] (an id
    /// was expected and the file's differs, or the file has none).
    pub fn load(
        path: &Path,
        expected_build_id: Option<&[u8]>,
        search: &SearchPaths,
    ) -> Result<Binary, Unresolved> {
        Binary::load_with(path, expected_build_id, search, DwarfUse::Lines)
    }

    /// The file a recording mapped at `path` with `expected_build_id`: perf's build-id cache
    /// first, which holds the file that ran (the file at its path may be another build since,
    /// or never have been it, for a process in a container or a chroot, or have been stripped
    /// since), then the file at its path, as perf looks.
    pub fn load_recorded(
        path: &Path,
        expected_build_id: Option<&[u8]>,
        search: &SearchPaths,
        dwarf: DwarfUse,
    ) -> Result<Binary, Unresolved> {
        let load = |p: &Path| Binary::load_with(p, expected_build_id, search, dwarf);
        match expected_build_id
            .and_then(|id| search.cached_binary(id))
            .map(|p| load(&p))
        {
            Some(Ok(b)) => Ok(b),
            _ => load(path),
        }
    }

    /// [`Binary::load`], with `dwarf` [`DwarfUse::Off`] reading symbol tables only (a separate
    /// debug file only when the binary has no symbol table of its own): no source lines and no
    /// inline frames, but loaded at a fraction of the cost (`hrec top`, which shows
    /// functions); [`DwarfUse::Names`] without source lines.
    pub fn load_with(
        path: &Path,
        expected_build_id: Option<&[u8]>,
        search: &SearchPaths,
        dwarf_use: DwarfUse,
    ) -> Result<Binary, Unresolved> {
        let dwarf = dwarf_use != DwarfUse::Off;
        // The binary and its debug file are each opened once: the ELF parser and the DWARF
        // loader read the same open file.
        let file = open_elf(path)?;
        let info = read_elf_file(&file, Want::AllSymbols)?;
        if let Some(expected) = expected_build_id
            && expected.iter().any(|&b| b != 0)
            && !build_id_matches(expected, info.build_id.as_deref())
        {
            return Err(Unresolved::BuildIdMismatch);
        }

        let debug_path = if info.has_dwarf {
            Some(path.to_path_buf())
        } else if !dwarf && !info.symtab.is_empty() {
            None
        } else {
            find_debug_file(
                path,
                info.build_id.as_deref(),
                info.debuglink
                    .as_ref()
                    .map(|(name, crc)| (name.as_slice(), *crc)),
                search,
            )
        };

        let mut symbols = info.symtab;
        let mut objects = info.symtab_objects;
        let mut dwarf_file = info.has_dwarf.then_some(file);
        if !info.has_dwarf
            && let Some(debug) = &debug_path
            && let Ok(debug_file) = open_elf(debug)
        {
            let want = if symbols.is_empty() {
                Want::Symtab
            } else {
                Want::Nothing
            };
            if let Ok(debug_info) = read_elf_file(&debug_file, want) {
                if debug_info.has_dwarf {
                    dwarf_file = Some(debug_file);
                }
                if symbols.is_empty() {
                    symbols = debug_info.symtab;
                    objects = debug_info.symtab_objects;
                }
            }
        }
        if symbols.is_empty() {
            symbols = info.dynsym;
            objects = info.dynsym_objects;
        }
        for (addr, name) in &info.plt {
            symbols.add_synthetic(*addr, 16, name);
        }

        let dwarf = match (&debug_path, dwarf_file) {
            (Some(debug), Some(f)) if dwarf => Some(RefCell::new(dwarf::Dwarf::new(
                f,
                find_alt_file(debug, search),
                search.inflated_cache.clone(),
                dwarf_use == DwarfUse::Lines,
            ))),
            _ => None,
        };
        Ok(Binary {
            path: path.to_path_buf(),
            build_id: info.build_id,
            loads: info.loads,
            symbols: symbols.build(),
            objects: objects.build(),
            debug_path: if dwarf.is_some() { debug_path } else { None },
            dwarf,
            data_types: std::cell::OnceCell::new(),
            cfi: std::cell::OnceCell::new(),
        })
    }

    /// The file's GNU build id (`NT_GNU_BUILD_ID` note), if it has one.
    pub fn build_id(&self) -> Option<&[u8]> {
        self.build_id.as_deref()
    }

    /// The file DWARF is read from (the binary itself or its separate debug file); `None` when
    /// there is no DWARF.
    pub fn debug_path(&self) -> Option<&Path> {
        self.debug_path.as_deref()
    }

    /// Runtime address -> SVMA, given the mapping (`map_start`, and `pgoff` = file offset
    /// mapped at `map_start`): `svma = off - p_offset + p_vaddr` for the `PT_LOAD` segment
    /// holding `off = addr - map_start + pgoff` in its file bytes. `None` when no segment
    /// holds the offset (or `addr` is below `map_start`).
    pub fn svma(&self, addr: u64, map_start: u64, pgoff: u64) -> Option<u64> {
        let offset = addr.checked_sub(map_start)?.checked_add(pgoff)?;
        self.loads
            .iter()
            .find(|load| offset >= load.offset && offset - load.offset < load.filesz)
            .map(|load| (offset - load.offset).wrapping_add(load.vaddr))
    }

    /// The symbol a data address at file offset `offset` of a mapping falls in, as perf names
    /// data addresses: a data object (`true`) or else a function (`false`). The offset may
    /// lie past a segment's file bytes, in its `.bss`.
    pub fn data_symbol(&self, offset: u64) -> Option<(super::Sym, bool)> {
        let svma = self.data_svma(offset)?;
        match self.objects.lookup(svma) {
            Some(s) => Some((s, true)),
            // A function only where its size says it is: perf's one table of functions and
            // objects ends an unsized label (`_etext`) at the next object, this one's table
            // at the next function.
            None => self
                .symbols
                .lookup(svma)
                .filter(|s| {
                    svma - s.start < s.size
                        || (s.size == 0
                            && self.objects.next_start(s.start).is_none_or(|n| n > svma))
                })
                .map(|s| (s, false)),
        }
    }

    /// What an access at file offset `offset` of a data mapping hits: the variable there and
    /// the member of its type ([`super::datatype`]), from the DWARF read whole on first use.
    pub fn data_type(&self, offset: u64) -> Option<super::datatype::TypeHit> {
        let svma = self.data_svma(offset)?;
        self.data_types().lookup(svma)
    }

    /// What the instruction at file offset `offset` of a code mapping accesses: its memory
    /// operand's type from the variable its base register holds or points into there, or a
    /// global's by its address ([`super::datatype::DataTypes::at_operand`]).
    pub fn access_type(&self, offset: u64) -> Option<super::datatype::TypeHit> {
        use super::datatype::access;
        let pc = self.data_svma(offset)?;
        // An instruction is at most 15 bytes, fewer at the end of the segment's bytes.
        let room = self
            .loads
            .iter()
            .find(|l| pc >= l.vaddr && pc - l.vaddr < l.filesz)
            .map(|l| l.filesz - (pc - l.vaddr))?;
        let bytes = self.code(pc, room.min(15))?;
        let op = access::operand(&bytes, pc)?;
        let cfa = |pc| {
            self.cfi
                .get_or_init(|| access::Cfi::load(&self.path))
                .as_ref()?
                .cfa(pc)
        };
        let types = self.data_types();
        if let Some(hit) = types.at_operand(pc, op, cfa) {
            return Some(hit);
        }
        // The base register holds no variable DWARF describes here: what the function's
        // instructions before the access put in it (unoptimized code's reloaded pointers).
        let sym = self.symbols.lookup(pc)?;
        let len = if sym.size > 0 {
            sym.size
        } else {
            pc.checked_sub(sym.start)?.checked_add(room.min(15))?
        };
        let code = self.code(sym.start, len.min(MAX_TRACKED))?;
        let steps = super::datatype::track::steps(&code, sym.start, pc)?;
        types.at_tracked(op, &steps, cfa)
    }

    /// The data types of the DWARF, read whole on first use.
    fn data_types(&self) -> &super::datatype::DataTypes {
        self.data_types.get_or_init(|| {
            let src = self.debug_path.as_deref().unwrap_or(&self.path);
            std::fs::File::open(src)
                .ok()
                .and_then(|f| dwarf::sections_of(&f))
                .map(super::datatype::DataTypes::from_dwarf)
                .unwrap_or_default()
        })
    }

    /// The SVMA of file offset `offset` of a data mapping: in a `PT_LOAD` segment's file bytes
    /// or in its `.bss` after them.
    pub fn data_svma(&self, offset: u64) -> Option<u64> {
        self.loads
            .iter()
            .find(|l| offset >= l.offset && offset - l.offset < l.memsz.max(l.filesz))
            .map(|l| (offset - l.offset).wrapping_add(l.vaddr))
    }

    /// The file bytes of `[svma, svma + len)`, for disassembly: only from one `PT_LOAD`
    /// segment's file bytes, and at most [`MAX_CODE`] of them; `None` when the range is not
    /// all in the file.
    pub fn code(&self, svma: u64, len: u64) -> Option<Vec<u8>> {
        use std::os::unix::fs::FileExt as _;
        if len == 0 || len > MAX_CODE {
            return None;
        }
        let load = self.loads.iter().find(|l| {
            svma >= l.vaddr
                && svma
                    .checked_add(len)
                    .is_some_and(|end| end - l.vaddr <= l.filesz)
        })?;
        let offset = load.offset.checked_add(svma - load.vaddr)?;
        let file = open_elf(&self.path).ok()?;
        let mut buf = vec![0u8; usize::try_from(len).ok()?];
        file.read_exact_at(&mut buf, offset).ok()?;
        Some(buf)
    }

    /// Everything known at `svma`: the containing symbol-table symbol and the DWARF inline
    /// chain (innermost first, the last frame being the out-of-line function). Frames are
    /// empty when DWARF says nothing about the address. `Err(NoSymbols)` when there is
    /// neither a symbol nor a DWARF frame.
    pub fn symbolize(&self, svma: u64) -> Result<Symbolized, Unresolved> {
        let (sym, span) = self.symbols.lookup_span(svma).unzip();
        let frames = self.frames(svma);
        if sym.is_none() && frames.is_empty() {
            return Err(Unresolved::NoSymbols);
        }
        Ok(Symbolized { sym, frames, span })
    }

    /// The file offsets of the SVMAs `[lo, hi)` (a [`Symbolized::span`]) around file offset
    /// `offset`: clipped to the `PT_LOAD` segment [`Binary::svma`] maps `offset` by, and `None`
    /// when another segment shares its file bytes (an offset there could map either way).
    pub fn offset_span(&self, offset: u64, (lo, hi): (u64, u64)) -> Option<(u64, u64)> {
        let at = self
            .loads
            .iter()
            .position(|l| offset >= l.offset && offset - l.offset < l.filesz)?;
        let load = &self.loads[at];
        let end = load.offset.checked_add(load.filesz)?;
        let shared = self.loads.iter().enumerate().any(|(i, l)| {
            i != at && l.offset < end && load.offset < l.offset.saturating_add(l.filesz)
        });
        if shared {
            return None;
        }
        let to_offset = |svma: u64| {
            svma.checked_sub(load.vaddr)
                .and_then(|d| load.offset.checked_add(d))
        };
        let lo = to_offset(lo.max(load.vaddr))?.max(load.offset);
        let hi = to_offset(hi.max(load.vaddr))?.min(end);
        (lo <= offset && offset < hi).then_some((lo, hi))
    }

    /// The symbol-table symbol holding `svma`, without DWARF (names of call targets).
    pub fn symbol(&self, svma: u64) -> Option<super::Sym> {
        self.symbols.lookup(svma)
    }

    /// Reads, in one go, the DWARF that [`Binary::symbolize`] of each of `svmas` will look in
    /// (only the compilation units that cover them, where that gives the same answers); a
    /// caller that knows its addresses up front saves reading units one lookup at a time.
    pub fn prepare(&self, svmas: &[u64]) {
        if let Some(dwarf) = &self.dwarf {
            dwarf.borrow_mut().prepare(svmas);
        }
    }

    fn frames(&self, svma: u64) -> Vec<Frame> {
        let frames = Vec::new();
        // addr2line looks up `[probe, probe + 1)`, which overflows (a panic in debug builds).
        if svma == u64::MAX {
            return frames;
        }
        let Some(cell) = &self.dwarf else {
            return frames;
        };
        let mut cell = cell.borrow_mut();
        let frames = frames_in(cell.context(svma), svma);
        if frames.is_empty() && cell.names_only() && cell.covers(svma) {
            // An address no function covers has its line for its only frame.
            return frames_in(cell.lined_context(svma), svma);
        }
        frames
    }
}

/// The frames of `svma` in `dwarf` (none without DWARF).
fn frames_in(dwarf: Option<&dwarf::Context>, svma: u64) -> Vec<Frame> {
    let mut frames = Vec::new();
    {
        let Some(dwarf) = dwarf else {
            return frames;
        };
        let Ok(mut iter) = dwarf.find_frames(svma).skip_all_loads() else {
            return frames;
        };
        // The unit the frames' DIEs are in, for their declaration lines.
        let unit = dwarf.find_dwarf_and_unit(svma).skip_all_loads();
        while let Ok(Some(frame)) = iter.next() {
            let function = frame
                .function
                .as_ref()
                .and_then(|name| name.raw_name().ok())
                .map(|name| Arc::<str>::from(super::names::demangle(&name).as_ref()));
            let (file, line) = match &frame.location {
                Some(location) => (location.file.map(Arc::from), location.line.unwrap_or(0)),
                None => (None, 0),
            };
            if function.is_none() && file.is_none() {
                continue;
            }
            let decl_line = match (unit, frame.dw_die_offset) {
                (Some(unit), Some(die)) => decl_line(unit, die),
                _ => 0,
            };
            frames.push(Frame {
                function,
                file,
                line,
                decl_line,
            });
        }
        frames
    }
}

/// `DW_AT_decl_line` of the function whose DIE is at `die`: a subprogram has it, or the
/// declaration it points to does (`DW_AT_specification`), or for an inlined instance or an
/// out-of-line copy the abstract instance (`DW_AT_abstract_origin`). References into other
/// units (LTO) are not followed: 0, unknown.
fn decl_line(unit: gimli::UnitRef<'_, dwarf::Reader>, die: gimli::UnitOffset) -> u32 {
    let mut at = die;
    // Chains are a link or two long; the bound stops a reference cycle in damaged DWARF.
    for _ in 0..8 {
        let Ok(entry) = unit.entry(at) else {
            return 0;
        };
        if let Some(line) = entry
            .attr_value(gimli::DW_AT_decl_line)
            .and_then(|v| v.udata_value())
        {
            return u32::try_from(line).unwrap_or(0);
        }
        at = match entry
            .attr_value(gimli::DW_AT_abstract_origin)
            .or_else(|| entry.attr_value(gimli::DW_AT_specification))
        {
            Some(gimli::AttributeValue::UnitRef(o)) => o,
            Some(gimli::AttributeValue::DebugInfoRef(o)) => match o.to_unit_offset(&unit.header) {
                Some(o) => o,
                None => return 0,
            },
            _ => return 0,
        };
    }
    0
}
