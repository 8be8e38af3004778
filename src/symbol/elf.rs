//! One ELF file (executable or shared library) parsed for symbolization: its headers, notes
//! (build-id, debug links), `PT_LOAD` segments, symbol tables and PLT stubs. The pure parser:
//! it knows nothing of debug files ([`super::debuginfo`]) or DWARF ([`super::binary`] loads
//! that).
//!
//! **Why SVMA.** A sample gives a runtime address; the mapping it falls in (MMAP2 record) says
//! which file offset `pgoff` is mapped at address `start`. Symbol tables and DWARF are keyed by
//! the address the linker assigned (the *static virtual memory address*, SVMA), which is
//! related to file offsets only through the program headers: the `PT_LOAD` segment holding
//! file offset `off` was linked at `p_vaddr` for `p_offset`, so
//! `svma = off - p_offset + p_vaddr` with `off = addr - start + pgoff`. This holds for PIE and
//! shared libraries (loaded at any base), non-PIE executables (SVMA = address) and files whose
//! segments are not linked at `vaddr == offset` alike, without knowing the load base.
//!
//! **Where names come from.** The symbol table is `.symtab` of the file; when the file is
//! stripped, the `.symtab` of its separate debug file (found as [`super::debuginfo`]
//! describes); else `.dynsym`, which every shared library keeps for the dynamic linker. Only
//! code symbols count (`STT_FUNC`, `STT_GNU_IFUNC`, and untyped symbols in executable
//! sections, as hand-written assembly defines them); the data objects (`STT_OBJECT`) are a
//! table of their own, which names data addresses (`report --sort symbol_daddr`) and never a
//! code address. Of several symbols at one address the one perf would show is kept: a sized
//! one, a function, one that is not weak (a local one counts), a global one, fewer leading
//! underscores, the longer name, then the first in the table. Names are demangled once, on
//! first use, as perf prints them ([`super::names`]).
//!
//! **PLT stubs** (`.plt`, `.plt.sec` and `.plt.got` on x86-64) are named `sym@plt` after the
//! function they jump to, as perf synthesizes them (perf 6.1 leaves `.plt.got` stubs
//! unnamed).
//!
//! Only the byte ranges asked for are read (headers, notes, symbol tables, each once), not the
//! whole file. Malformed files give [`Unresolved::NotElf`] or [`Unresolved::NoSymbols`],
//! never a panic.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use object::elf;
use object::read::ReadCache;
use object::read::elf::{
    FileHeader, ProgramHeader, Rela as _, SectionHeader, SectionTable, Sym as _, SymbolTable,
};
use object::{Endianness, FileKind};

use super::{Sym, Unresolved};

/// Demangles a symbol-table name as perf prints it ([`super::names`]).
pub(crate) fn demangle(name: &str) -> Cow<'_, str> {
    super::names::demangle(name)
}

/// Exact match, or the expected id is the file's id zero-padded (perf pads to 20 bytes).
pub(super) fn build_id_matches(expected: &[u8], actual: Option<&[u8]>) -> bool {
    let Some(actual) = actual else {
        return false;
    };
    match expected.strip_prefix(actual) {
        Some(rest) => !actual.is_empty() && rest.iter().all(|&b| b == 0),
        None => false,
    }
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One `PT_LOAD` program header.
#[derive(Debug, Clone, Copy)]
pub(super) struct Load {
    pub(super) offset: u64,
    pub(super) filesz: u64,
    pub(super) vaddr: u64,
    /// Its size in memory (`.bss` beyond the file bytes).
    pub(super) memsz: u64,
}

/// What [`read_elf`] collects besides the headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Want {
    Nothing,
    Symtab,
    AllSymbols,
}

/// Headers, notes and (optionally) symbol tables of one ELF file.
#[derive(Debug, Default)]
pub(super) struct ElfInfo {
    /// `NT_GNU_BUILD_ID`.
    pub(super) build_id: Option<Vec<u8>>,
    /// `.gnu_debuglink`: file name, CRC32.
    pub(super) debuglink: Option<(Vec<u8>, u32)>,
    /// `.gnu_debugaltlink`: file name, build id.
    pub(super) altlink: Option<(Vec<u8>, Vec<u8>)>,
    /// Has a non-empty `.debug_info` (or `.zdebug_info`) with contents in the file.
    pub(super) has_dwarf: bool,
    pub(super) loads: Vec<Load>,
    pub(super) symtab: SymbolsBuilder,
    pub(super) dynsym: SymbolsBuilder,
    /// The data objects (`STT_OBJECT`) of `.symtab` and `.dynsym`, for naming data addresses.
    pub(super) symtab_objects: SymbolsBuilder,
    pub(super) dynsym_objects: SymbolsBuilder,
    /// `name@plt` for each PLT stub (x86 only), as perf names them.
    pub(super) plt: Vec<(u64, String)>,
}

/// Headers and notes of `path` (no symbols), for the debug-file search.
pub(super) fn read_elf_info(path: &Path) -> Result<ElfInfo, Unresolved> {
    read_elf(path, Want::Nothing)
}

fn read_elf(path: &Path, want: Want) -> Result<ElfInfo, Unresolved> {
    read_elf_file(&open_elf(path)?, want)
}

/// Opens a regular file (a FIFO would block the open; a directory is no ELF file).
pub(super) fn open_elf(path: &Path) -> Result<File, Unresolved> {
    let why = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            Unresolved::Unreadable
        } else {
            Unresolved::BinaryMissing
        }
    };
    let meta = std::fs::metadata(path).map_err(why)?;
    if !meta.is_file() {
        return Err(Unresolved::NotElf);
    }
    File::open(path).map_err(why)
}

/// [`read_elf`] of an open file.
pub(super) fn read_elf_file(file: &File, want: Want) -> Result<ElfInfo, Unresolved> {
    // Reads only the byte ranges asked for (headers, notes, symbol tables), each once.
    let data = ReadCache::new(file);
    match FileKind::parse(&data) {
        Ok(FileKind::Elf32) => parse_elf::<elf::FileHeader32<Endianness>>(&data, want),
        Ok(FileKind::Elf64) => parse_elf::<elf::FileHeader64<Endianness>>(&data, want),
        _ => Err(Unresolved::NotElf),
    }
}

type Data<'a> = &'a ReadCache<&'a File>;

fn parse_elf<'a, Elf: FileHeader<Endian = Endianness>>(
    data: Data<'a>,
    want: Want,
) -> Result<ElfInfo, Unresolved> {
    let header = Elf::parse(data).map_err(|_| Unresolved::NotElf)?;
    let endian = header.endian().map_err(|_| Unresolved::NotElf)?;
    let segments = header
        .program_headers(endian, data)
        .map_err(|_| Unresolved::NotElf)?;
    let sections = header
        .sections(endian, data)
        .map_err(|_| Unresolved::NotElf)?;
    let mut info = ElfInfo {
        loads: segments
            .iter()
            .filter(|p| p.p_type(endian) == elf::PT_LOAD)
            .map(|p| Load {
                offset: p.p_offset(endian).into(),
                filesz: p.p_filesz(endian).into(),
                vaddr: p.p_vaddr(endian).into(),
                memsz: p.p_memsz(endian).into(),
            })
            .collect(),
        ..ElfInfo::default()
    };

    for section in sections.iter().skip(1) {
        let sh_type = section.sh_type(endian);
        if info.build_id.is_none()
            && let Ok(Some(mut notes)) = section.notes(endian, data)
        {
            info.build_id = gnu_build_id(&mut notes, endian);
        }
        let Ok(name) = sections.section_name(endian, section) else {
            continue;
        };
        match name {
            b".gnu_debuglink" => {
                info.debuglink = section
                    .data(endian, data)
                    .ok()
                    .and_then(|bytes| parse_debuglink(bytes, endian));
            }
            b".gnu_debugaltlink" => {
                info.altlink = section.data(endian, data).ok().and_then(|bytes| {
                    let nul = bytes.iter().position(|&b| b == 0)?;
                    Some((bytes.get(..nul)?.to_vec(), bytes.get(nul + 1..)?.to_vec()))
                });
            }
            b".debug_info" | b".zdebug_info" => {
                info.has_dwarf |= sh_type != elf::SHT_NOBITS && section.sh_size(endian).into() > 0;
            }
            _ => {}
        }
    }
    if info.build_id.is_none() {
        for segment in segments {
            if let Ok(Some(mut notes)) = segment.notes(endian, data) {
                info.build_id = gnu_build_id(&mut notes, endian);
                if info.build_id.is_some() {
                    break;
                }
            }
        }
    }

    if want != Want::Nothing {
        if let Ok(table) = sections.symbols(endian, data, elf::SHT_SYMTAB) {
            info.symtab.collect(endian, data, &sections, &table);
            info.symtab_objects.objects = true;
            info.symtab_objects.collect(endian, data, &sections, &table);
        }
        if want == Want::AllSymbols
            && let Ok(table) = sections.symbols(endian, data, elf::SHT_DYNSYM)
        {
            info.dynsym.collect(endian, data, &sections, &table);
            info.dynsym_objects.objects = true;
            info.dynsym_objects.collect(endian, data, &sections, &table);
            let machine = header.e_machine(endian);
            if machine == elf::EM_X86_64 || machine == elf::EM_386 {
                info.plt = plt_stubs(endian, data, &sections, &table);
            }
            if machine == elf::EM_X86_64 {
                info.plt
                    .extend(plt_got_stubs(endian, data, &sections, &table));
            }
        }
    }
    Ok(info)
}

/// PLT stubs named after the function they jump to (`PyObject_Malloc@plt`), as perf
/// synthesizes them: entry `i` of `.rela.plt` belongs to stub `i` of `.plt.sec` (with IBT),
/// else to stub `i + 1` of `.plt` (stub 0 calls the resolver). x86 stubs are 16 bytes.
fn plt_stubs<'a, Elf: FileHeader<Endian = Endianness>>(
    endian: Endianness,
    data: Data<'a>,
    sections: &SectionTable<'a, Elf, Data<'a>>,
    dynsym: &SymbolTable<'a, Elf, Data<'a>>,
) -> Vec<(u64, String)> {
    const STUB: u64 = 16;
    let by_name = |n: &[u8]| sections.section_by_name(endian, n).map(|(_, s)| s);
    let Some(rela) = by_name(b".rela.plt") else {
        return Vec::new();
    };
    let (first, base) = match (by_name(b".plt.sec"), by_name(b".plt")) {
        (Some(sec), _) => (0, sec.sh_addr(endian).into()),
        (None, Some(plt)) => (1, plt.sh_addr(endian).into()),
        _ => return Vec::new(),
    };
    let Ok(Some((relocs, _))) = rela.rela(endian, data) else {
        return Vec::new();
    };
    relocs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            // Addresses come from the file: wrapping, never an overflow panic.
            let addr = base.wrapping_add(STUB.wrapping_mul(i as u64 + first));
            // A slot without a symbol (R_X86_64_IRELATIVE: an ifunc resolved at load time)
            // is `@plt`, as perf names it.
            let name = plt_name(endian, dynsym, r.r_sym(endian, false))
                .unwrap_or_else(|| super::names::plt(""));
            (addr, name)
        })
        .collect()
}

/// `name@plt` for dynamic symbol `index`, demangled; `None` for a missing or empty name.
fn plt_name<'a, Elf: FileHeader<Endian = Endianness>>(
    endian: Endianness,
    dynsym: &SymbolTable<'a, Elf, Data<'a>>,
    index: u32,
) -> Option<String> {
    let sym = dynsym.symbol(object::SymbolIndex(index as usize)).ok()?;
    let name = sym.name(endian, dynsym.strings()).ok()?;
    (!name.is_empty()).then(|| super::names::plt(&String::from_utf8_lossy(name)))
}

/// `.plt.got` stubs (x86-64), named `sym@plt` after the GOT slot they jump through: each
/// stub is `[endbr64] jmp *disp(%rip)` into a slot that a `GLOB_DAT` (or `JUMP_SLOT`)
/// relocation of `.rela.dyn` fills with the function (the linker makes these for functions
/// whose address is also taken, or with `-z now`). perf 6.1 leaves them unnamed.
fn plt_got_stubs<'a, Elf: FileHeader<Endian = Endianness>>(
    endian: Endianness,
    data: Data<'a>,
    sections: &SectionTable<'a, Elf, Data<'a>>,
    dynsym: &SymbolTable<'a, Elf, Data<'a>>,
) -> Vec<(u64, String)> {
    let by_name = |n: &[u8]| sections.section_by_name(endian, n).map(|(_, s)| s);
    let (Some(stubs), Some(rela)) = (by_name(b".plt.got"), by_name(b".rela.dyn")) else {
        return Vec::new();
    };
    let base: u64 = stubs.sh_addr(endian).into();
    let entsize = match stubs.sh_entsize(endian).into() {
        e @ (8 | 16) => e as usize,
        _ => 8,
    };
    // Stubs are a few bytes each: a section too big for that is damage, not stubs.
    let Some(bytes) = stubs.data(endian, data).ok().filter(|b| b.len() <= 1 << 20) else {
        return Vec::new();
    };
    let Ok(Some((relocs, _))) = rela.rela(endian, data) else {
        return Vec::new();
    };
    let slots: std::collections::HashMap<u64, u32> = relocs
        .iter()
        .filter(|r| {
            let t = r.r_type(endian, false);
            t == elf::R_X86_64_GLOB_DAT || t == elf::R_X86_64_JUMP_SLOT
        })
        .map(|r| (r.r_offset(endian).into(), r.r_sym(endian, false)))
        .collect();
    bytes
        .chunks_exact(entsize)
        .enumerate()
        .filter_map(|(i, stub)| {
            let at = stub.windows(2).position(|w| w == [0xff, 0x25])?;
            let disp = i32::from_le_bytes(stub.get(at + 2..at + 6)?.try_into().ok()?);
            let addr = base.wrapping_add((i * entsize) as u64);
            let slot = addr
                .wrapping_add(at as u64 + 6)
                .wrapping_add_signed(i64::from(disp));
            Some((addr, plt_name(endian, dynsym, *slots.get(&slot)?)?))
        })
        .collect()
}

fn gnu_build_id<Elf: FileHeader<Endian = Endianness>>(
    notes: &mut object::read::elf::NoteIterator<'_, Elf>,
    endian: Endianness,
) -> Option<Vec<u8>> {
    while let Ok(Some(note)) = notes.next() {
        if note.name() == elf::ELF_NOTE_GNU && note.n_type(endian) == elf::NT_GNU_BUILD_ID {
            return Some(note.desc().to_vec());
        }
    }
    None
}

/// `.gnu_debuglink`: a NUL-terminated file name, padding to 4 bytes, the CRC32.
fn parse_debuglink(bytes: &[u8], endian: Endianness) -> Option<(Vec<u8>, u32)> {
    let nul = bytes.iter().position(|&b| b == 0)?;
    let crc_at = (nul + 1).next_multiple_of(4);
    let crc: [u8; 4] = bytes.get(crc_at..crc_at + 4)?.try_into().ok()?;
    let crc = match endian {
        Endianness::Little => u32::from_le_bytes(crc),
        Endianness::Big => u32::from_be_bytes(crc),
    };
    Some((bytes.get(..nul)?.to_vec(), crc))
}

/// A code symbol as read from a table, before de-duplication.
#[derive(Debug, Clone)]
struct Candidate {
    start: u64,
    size: u64,
    /// End of the symbol's section: bounds a size-0 symbol that is last in its section.
    section_end: u64,
    /// Preference among symbols at the same address; larger wins.
    rank: u32,
    /// Order of appearance: of equally ranked symbols the first wins, as in perf.
    order: u32,
    name: (usize, usize),
}

/// Symbols collected from one table; [`SymbolsBuilder::build`] sorts and de-duplicates.
#[derive(Debug, Default)]
pub(super) struct SymbolsBuilder {
    candidates: Vec<Candidate>,
    names: String,
    /// Collect data objects (`STT_OBJECT`) instead of code symbols.
    pub(super) objects: bool,
}

impl SymbolsBuilder {
    pub(super) fn is_empty(&self) -> bool {
        self.candidates.is_empty()
    }

    /// Adds a symbol no table holds (a PLT stub), ranked below every real symbol.
    pub(super) fn add_synthetic(&mut self, start: u64, size: u64, name: &str) {
        let at = self.names.len();
        self.names.push_str(name);
        self.candidates.push(Candidate {
            start,
            size,
            section_end: start.saturating_add(size),
            rank: 0,
            order: self.candidates.len() as u32,
            name: (at, name.len()),
        });
    }

    fn collect<'a, Elf: FileHeader<Endian = Endianness>>(
        &mut self,
        endian: Endianness,
        data: Data<'a>,
        sections: &SectionTable<'a, Elf, Data<'a>>,
        table: &SymbolTable<'a, Elf, Data<'a>>,
    ) {
        if table.is_empty() {
            return;
        }
        // The string table in one read, instead of one read per name.
        let Ok(strings) = sections
            .section(table.string_section())
            .and_then(|s| s.data(endian, data))
        else {
            return;
        };
        for (index, sym) in table.enumerate() {
            let kind = sym.st_type();
            let is_func = kind == elf::STT_FUNC || kind == elf::STT_GNU_IFUNC;
            let wanted = if self.objects {
                kind == elf::STT_OBJECT
            } else {
                is_func || kind == elf::STT_NOTYPE
            };
            if !wanted {
                continue;
            }
            let Ok(Some(section_index)) = table.symbol_section(endian, sym, index) else {
                continue;
            };
            let Ok(section) = sections.section(section_index) else {
                continue;
            };
            if !self.objects && !is_func && !section.sh_flags(endian).contains(elf::SHF_EXECINSTR) {
                continue;
            }
            let Some(name) = cstr_at(strings, sym.st_name(endian)) else {
                continue;
            };
            // Untyped local labels and ARM/AArch64 mapping symbols are not functions.
            if name.is_empty() || (!is_func && (name.starts_with(b"$") || name.starts_with(b".L")))
            {
                continue;
            }
            let size: u64 = sym.st_size(endian).into();
            let section_addr: u64 = section.sh_addr(endian).into();
            let section_size: u64 = section.sh_size(endian).into();
            // perf's order among aliases: sized, not weak (a local counts), global; then (in
            // `build`, on the names as printed) fewer leading underscores, the longer name,
            // the first in the table.
            let bind = sym.st_bind();
            let rank = (u32::from(size != 0) << 3)
                | (u32::from(is_func) << 2)
                | (u32::from(bind != elf::STB_WEAK) << 1)
                | u32::from(bind == elf::STB_GLOBAL);
            let name = String::from_utf8_lossy(name);
            let at = self.names.len();
            self.names.push_str(&name);
            self.candidates.push(Candidate {
                start: sym.st_value(endian).into(),
                size,
                section_end: section_addr.saturating_add(section_size),
                rank,
                order: self.candidates.len() as u32,
                name: (at, name.len()),
            });
        }
    }

    pub(super) fn build(mut self) -> Symbols {
        self.candidates.sort_unstable_by(|a, b| {
            a.start
                .cmp(&b.start)
                .then(b.rank.cmp(&a.rank))
                .then(a.order.cmp(&b.order))
        });
        // Of aliases equal so far, perf keeps the one whose printed name has fewer leading
        // underscores, then the longer one, then the first (`<usize as Display>::fmt` over
        // `<u64 as Display>::fmt`, whose v0-mangled names are as long): demangled only here,
        // for the few addresses with several equal candidates.
        let names = &self.names;
        let mut i = 0;
        while let Some(rest) = self.candidates.get(i..) {
            let Some(c) = rest.first() else {
                break;
            };
            let tied = rest
                .iter()
                .take_while(|d| d.start == c.start && d.rank == c.rank)
                .count();
            if tied > 1 {
                let key = |d: &Candidate| {
                    let name = demangle(name_of(names, d.name));
                    let underscores = name.bytes().take_while(|&b| b == b'_').count();
                    (
                        std::cmp::Reverse(underscores),
                        name.len(),
                        std::cmp::Reverse(d.order),
                    )
                };
                let best = rest
                    .get(..tied)
                    .unwrap_or_default()
                    .iter()
                    .enumerate()
                    .max_by_key(|&(_, d)| key(d))
                    .map_or(i, |(j, _)| i + j);
                self.candidates.swap(i, best);
            }
            i += tied.max(1);
        }
        self.candidates.dedup_by_key(|c| c.start);
        let mut entries = Vec::with_capacity(self.candidates.len());
        for (i, c) in self.candidates.iter().enumerate() {
            let end = if c.size != 0 {
                c.start.saturating_add(c.size)
            } else {
                let next = self.candidates.get(i + 1).map_or(u64::MAX, |n| n.start);
                let bound = if c.section_end > c.start {
                    c.section_end
                } else {
                    u64::MAX
                };
                next.min(bound)
            };
            entries.push(Entry {
                start: c.start,
                end,
                size: c.size,
                name: c.name,
                demangled: OnceCell::new(),
            });
        }
        Symbols {
            entries,
            names: self.names,
        }
    }
}

fn name_of(names: &str, (at, len): (usize, usize)) -> &str {
    names.get(at..at + len).unwrap_or("")
}

/// The NUL-terminated string at `offset`, `None` when out of range or unterminated.
fn cstr_at(strings: &[u8], offset: u32) -> Option<&[u8]> {
    let rest = strings.get(usize::try_from(offset).ok()?..)?;
    let len = rest.iter().position(|&b| b == 0)?;
    rest.get(..len)
}

/// Sorted, de-duplicated code symbols.
#[derive(Debug, Default)]
pub(super) struct Symbols {
    entries: Vec<Entry>,
    /// All mangled names, back to back.
    names: String,
}

#[derive(Debug)]
struct Entry {
    start: u64,
    /// Exclusive: `start + size`, or for a size-0 symbol the next symbol's start (or its
    /// section's end).
    end: u64,
    size: u64,
    name: (usize, usize),
    demangled: OnceCell<Arc<str>>,
}

/// How many earlier symbols are tried when the closest one does not contain the address
/// (a sized symbol that encloses smaller ones).
const ENCLOSING_LOOKBACK: usize = 8;

impl Symbols {
    /// Number of symbols.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The start of the first symbol after `addr`.
    pub(super) fn next_start(&self, addr: u64) -> Option<u64> {
        let i = self.entries.partition_point(|e| e.start <= addr);
        self.entries.get(i).map(|e| e.start)
    }

    pub(super) fn lookup(&self, addr: u64) -> Option<Sym> {
        self.lookup_span(addr).map(|(sym, _)| sym)
    }

    /// [`Symbols::lookup`], with the interval around `addr` in which every address finds the
    /// same symbol: from the symbol's start, or the end of the last smaller symbol it encloses
    /// below `addr`, to the symbol's end or the next symbol's start, whichever comes first.
    pub(super) fn lookup_span(&self, addr: u64) -> Option<(Sym, (u64, u64))> {
        let below = self.entries.partition_point(|e| e.start <= addr);
        let window = self
            .entries
            .get(below.saturating_sub(ENCLOSING_LOOKBACK)..below)?;
        let k = window.iter().rposition(|e| addr < e.end)?;
        let (entry, passed) = window.get(k..)?.split_first()?;
        // The symbols passed over (inside the one found, ended at or below `addr`).
        let lo = passed.iter().map(|e| e.end).fold(entry.start, u64::max);
        let hi = self
            .entries
            .get(below)
            .map_or(entry.end, |next| next.start.min(entry.end));
        let name = entry
            .demangled
            .get_or_init(|| Arc::from(demangle(name_of(&self.names, entry.name)).as_ref()))
            .clone();
        Some((
            Sym {
                name,
                start: entry.start,
                size: entry.size,
            },
            (lo, hi),
        ))
    }
}

/// C fixtures compiled at test time (gcc, objcopy and optionally dwz are needed).
#[cfg(test)]
pub(super) mod fixtures {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use object::{Object, ObjectSymbol};

    /// An `always_inline` helper inlined into a `noinline` function.
    pub(crate) const PROG: &str = r#"#include <stdio.h>
#include <stdlib.h>

static inline __attribute__((always_inline)) int inner_mix(const int *p, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += (p[i] * 31) ^ (s >> 3); /* INNER */
    return s;
}

__attribute__((noinline, noipa)) int outer_fn(const int *p, int n)
{
    return inner_mix(p, n) * 7 + 1; /* OUTER */
}

int main(int argc, char **argv)
{
    int a[8];
    for (int i = 0; i < 8; i++)
        a[i] = atoi(argc > 1 ? argv[1] : "3") + i;
    printf("%d\n", outer_fn(a, argc + 6));
    return 0;
}
"#;

    /// 1-based line of the first line of `source` containing `marker`.
    pub(crate) fn line_of(source: &str, marker: &str) -> u32 {
        let index = source.lines().position(|l| l.contains(marker)).unwrap();
        u32::try_from(index + 1).unwrap()
    }

    /// Runs a command, panicking with its stderr when it fails.
    pub(crate) fn run(cmd: &mut Command) {
        let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
        assert!(
            out.status.success(),
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Writes `source` to `dir/<name>.c` and compiles it to `dir/<name>` with `args`.
    pub(crate) fn gcc(dir: &Path, name: &str, source: &str, args: &[&str]) -> PathBuf {
        let src = dir.join(format!("{name}.c"));
        std::fs::write(&src, source).unwrap();
        let out = dir.join(name);
        run(Command::new("gcc")
            .args(args)
            .arg("-o")
            .arg(&out)
            .arg(&src)
            .current_dir(dir));
        out
    }

    /// `objcopy ARGS... IN OUT`.
    pub(crate) fn objcopy(args: &[&str], input: &Path, output: &Path) {
        run(Command::new("objcopy").args(args).arg(input).arg(output));
    }

    /// (address, size) of a symbol, from `.symtab` or `.dynsym`.
    pub(crate) fn symbol(path: &Path, name: &str) -> (u64, u64) {
        let bytes = std::fs::read(path).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        file.symbols()
            .chain(file.dynamic_symbols())
            .find(|s| s.name() == Ok(name))
            .map(|s| (s.address(), s.size()))
            .unwrap_or_else(|| panic!("no symbol {name} in {}", path.display()))
    }

    /// The GNU build id of a file.
    pub(crate) fn build_id(path: &Path) -> Vec<u8> {
        let bytes = std::fs::read(path).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        file.build_id().unwrap().unwrap().to_vec()
    }
}

#[cfg(test)]
mod tests;
