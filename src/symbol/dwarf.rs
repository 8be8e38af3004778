//! The DWARF of one binary for inline chains and source lines: the sections `addr2line`
//! reads, loaded from a file hrec already has open, into an `addr2line::Context`.
//!
//! `addr2line::Loader` would do this too, but it opens the file again and builds a second
//! symbol table (every ELF symbol, sorted) next to the one [`super::elf`] already built, for a
//! lookup hrec never makes. Here each section is read once into shared memory: sections
//! stored plainly are read straight into their buffer; compressed ones (`SHF_COMPRESSED`,
//! `.zdebug_*`, as distributions ship debug files) are decompressed by `object`. Sections no
//! query reads (location lists, macros) are left empty. A dwz supplementary file
//! (`.gnu_debugaltlink`) is loaded the same way.
//!
//! **Only the units an output looks in.** `addr2line` parses every unit's header and
//! abbreviations up front, and a libc debug file has a thousand units, 6 MB of compressed
//! `.debug_info` and 1 MB of abbreviations: reading all of it costs more than the rest of a
//! small report. [`Dwarf`] reads `.debug_aranges` (which unit covers which addresses) and
//! hands `addr2line` only the units that cover the addresses looked up, copied one after the
//! other into a `.debug_info` of their own, with a `.debug_aranges` written for their new
//! offsets (a unit that refers to nothing outside itself reads the same wherever it stands);
//! a compressed `.debug_info` is inflated only up to the last unit read, and a compressed
//! section once per build-id ([`super::inflated`]).
//! The answers are those of the whole file as long as every unit that covers code is in
//! `.debug_aranges` (GCC writes it for every unit) and no unit refers into another
//! (`DW_FORM_ref_addr`, as LTO and dwz write): without `.debug_aranges`, with such a
//! reference, or after many lookups that each wanted new units, the whole file is read as
//! before. Their line programs are copied the same way (each unit's `DW_AT_stmt_list` set to
//! the copy); an output that names functions but shows no source line (a flame graph) gets
//! each program cut to its header, so `addr2line` parses no line rows, the larger part of its
//! lookups; an address no function covers, whose only frame is its line, is looked up again
//! with the rows.
//!
//! Nothing in the file is trusted: `object` bounds every section by the file, a section that
//! does not read is empty (the lookups that need it find nothing), and `addr2line` parses
//! units lazily and bounds-checked.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gimli::{EndianArcSlice, Endianity as _, Reader as _, RunTimeEndian, SectionId};
use object::Object as _;
use object::read::ReadCache;

use super::inflated::{Inflated, Section};
use crate::objfile::SectionParts;

/// The reader of loaded sections.
pub(super) type Reader = EndianArcSlice<RunTimeEndian>;

/// A binary's DWARF, ready for `find_frames`.
pub(super) type Context = addr2line::Context<Reader>;

/// Sections no lookup of frames and lines reads.
const UNUSED: [SectionId; 6] = [
    SectionId::DebugLoc,
    SectionId::DebugLocLists,
    SectionId::DebugMacinfo,
    SectionId::DebugMacro,
    SectionId::DebugPubNames,
    SectionId::DebugPubTypes,
];

/// The DWARF of `file`, with the supplementary file `sup` (dwz) when given. `None` when the
/// file is not an object file or its DWARF does not parse.
pub(super) fn load(file: &File, sup: Option<&Path>, cache: Option<&Path>) -> Option<Context> {
    let mut dwarf = sections(file, cache, false)?;
    if let Some(sup) = sup.and_then(|p| File::open(p).ok())
        && let Some(s) = sections(&sup, cache, false)
    {
        dwarf.sup = Some(Arc::new(s));
    }
    dwarf.populate_abbreviations_cache(gimli::AbbreviationsCacheStrategy::Duplicates);
    Context::from_dwarf(dwarf).ok()
}

/// Every DWARF section of `file` read whole (but the location lists and macros), for readers
/// that walk all its units ([`super::datatype`]).
pub(super) fn sections_of(file: &File) -> Option<gimli::Dwarf<Reader>> {
    sections(file, None, true)
}

/// The sections of `file`; with `locations`, its location lists too (where a variable lives
/// at each PC: data types read them, frames and lines do not).
fn sections(file: &File, cache: Option<&Path>, locations: bool) -> Option<gimli::Dwarf<Reader>> {
    let read = ReadCache::new(file);
    let obj = object::File::parse(&read).ok()?;
    let endian = endian(&obj);
    let inflated = Inflated::new(cache, obj.build_id().ok().flatten());
    let load = |id: SectionId| -> Result<Reader, gimli::Error> {
        let wanted = locations && matches!(id, SectionId::DebugLoc | SectionId::DebugLocLists);
        let bytes = if UNUSED.contains(&id) && !wanted {
            None
        } else {
            obj.section_by_name(id.name())
                .and_then(|s| whole_section(file, &s, inflated.as_ref()))
        };
        Ok(EndianArcSlice::new(
            bytes.unwrap_or_else(|| Arc::from(&[][..])),
            endian,
        ))
    };
    gimli::Dwarf::load(load).ok()
}

/// The DWARF of one file, read as lookups need it (module docs): only the units that cover
/// the addresses asked for, or the whole file where that would not give the same answers.
pub(super) struct Dwarf {
    file: File,
    sup: Option<PathBuf>,
    /// Where compressed sections are kept inflated ([`super::inflated`]).
    cache: Option<PathBuf>,
    /// Whether lookups want source lines; without, the units' line programs are handed to
    /// `addr2line` as their headers alone (module docs).
    lines: bool,
    state: State,
}

enum State {
    /// Nothing read yet.
    Unread,
    /// The units `.debug_aranges` names for the addresses asked for so far.
    Units(Units),
    /// The whole file.
    Whole(Option<Context>),
}

struct Units {
    /// `.debug_aranges`: `(begin, end, unit offset)`, sorted by begin.
    ranges: Vec<(u64, u64, u64)>,
    /// `reach[i]`: the largest end of `ranges[..=i]`.
    reach: Vec<u64>,
    /// The offsets of the units `context` holds, sorted.
    loaded: Vec<u64>,
    context: Option<Context>,
    /// The units that cover the addresses no function covers, with their line programs, when
    /// lines are not wanted (such an address's line is its only frame); their offsets, sorted.
    /// (`None`: they did not read.)
    lined: Option<(Vec<u64>, Option<Context>)>,
    /// Sections read whole, kept for the next build.
    whole: Vec<(SectionId, Reader)>,
    builds: u32,
}

/// Builds of a growing set of units before the whole file is read instead: a caller that asks
/// address by address across a binary would otherwise rebuild once per unit.
const MAX_BUILDS: u32 = 8;

impl Dwarf {
    /// The DWARF of `file` (an ELF file with DWARF sections), with the supplementary file `sup`
    /// (dwz) when given, and compressed sections kept inflated under `cache`. Reads nothing
    /// yet.
    pub(super) fn new(
        file: File,
        sup: Option<PathBuf>,
        cache: Option<PathBuf>,
        lines: bool,
    ) -> Dwarf {
        Dwarf {
            file,
            sup,
            cache,
            lines,
            state: State::Unread,
        }
    }

    /// Whether lookups skip source lines.
    pub(super) fn names_only(&self) -> bool {
        !self.lines
    }

    /// Whether a unit read covers `svma` (always, with the whole file read).
    pub(super) fn covers(&self, svma: u64) -> bool {
        match &self.state {
            State::Units(u) => u.covering(svma).next().is_some(),
            State::Whole(_) => true,
            State::Unread => false,
        }
    }

    /// [`Dwarf::context`] with the units' line programs.
    pub(super) fn lined_context(&mut self, svma: u64) -> Option<&Context> {
        self.prepare(&[svma]);
        if self.lines || !matches!(self.state, State::Units(_)) {
            return self.context(svma);
        }
        let State::Units(u) = &mut self.state else {
            return None;
        };
        let mut want = u.lined.as_ref().map(|l| l.0.clone()).unwrap_or_default();
        let had = want.len();
        want.extend(u.covering(svma));
        want.sort_unstable();
        want.dedup();
        if u.lined.is_none() || want.len() != had {
            let (sup, cache) = (self.sup.as_deref(), self.cache.as_deref());
            let built = build(&self.file, sup, cache, &want, &u.ranges, &mut u.whole, true);
            u.lined = Some((want, built));
        }
        u.lined.as_ref().and_then(|l| l.1.as_ref())
    }

    /// Reads what lookups at `svmas` need: the units that cover them, in one build.
    pub(super) fn prepare(&mut self, svmas: &[u64]) {
        if let State::Unread = self.state {
            self.state = match aranges(&self.file, self.cache.as_deref()) {
                Some(ranges) => State::Units(Units::new(ranges)),
                None => self.whole(),
            };
        }
        let State::Units(units) = &mut self.state else {
            return;
        };
        let mut new = Vec::new();
        for &svma in svmas {
            new.extend(units.covering(svma));
        }
        new.retain(|u| units.loaded.binary_search(u).is_err());
        if new.is_empty() {
            return;
        }
        let mut want = units.loaded.clone();
        want.append(&mut new);
        want.sort_unstable();
        want.dedup();
        units.builds += 1;
        let built = (units.builds <= MAX_BUILDS)
            .then(|| {
                build(
                    &self.file,
                    self.sup.as_deref(),
                    self.cache.as_deref(),
                    &want,
                    &units.ranges,
                    &mut units.whole,
                    self.lines,
                )
            })
            .flatten();
        match built {
            Some(context) => {
                units.context = Some(context);
                units.loaded = want;
            }
            None => self.state = self.whole(),
        }
    }

    /// The context for a lookup at `svma` (reading the units that cover it first).
    pub(super) fn context(&mut self, svma: u64) -> Option<&Context> {
        self.prepare(&[svma]);
        match &self.state {
            State::Units(u) => u.context.as_ref(),
            State::Whole(c) => c.as_ref(),
            State::Unread => None,
        }
    }

    fn whole(&self) -> State {
        State::Whole(load(&self.file, self.sup.as_deref(), self.cache.as_deref()))
    }
}

impl Units {
    fn new(mut ranges: Vec<(u64, u64, u64)>) -> Units {
        ranges.sort_unstable();
        let mut reach = Vec::with_capacity(ranges.len());
        let mut max = 0;
        for &(_, end, _) in &ranges {
            max = max.max(end);
            reach.push(max);
        }
        Units {
            ranges,
            reach,
            loaded: Vec::new(),
            context: None,
            lined: None,
            whole: Vec::new(),
            builds: 0,
        }
    }

    /// The offsets of the units whose ranges hold `svma`.
    fn covering(&self, svma: u64) -> impl Iterator<Item = u64> + '_ {
        let below = self.ranges.partition_point(|r| r.0 <= svma);
        (0..below)
            .rev()
            .take_while(move |&i| self.reach[i] > svma)
            .filter(move |&i| svma < self.ranges[i].1)
            .map(move |i| self.ranges[i].2)
    }
}

/// `.debug_aranges` of `file` as `(begin, end, unit offset)`; `None` when it is missing, empty
/// or damaged (entries that do not read are skipped, as `addr2line` skips them).
fn aranges(file: &File, cache: Option<&Path>) -> Option<Vec<(u64, u64, u64)>> {
    let read = ReadCache::new(file);
    let obj = object::File::parse(&read).ok()?;
    let section = obj.section_by_name(SectionId::DebugAranges.name())?;
    let inflated = Inflated::new(cache, obj.build_id().ok().flatten());
    let bytes = whole_section(file, &section, inflated.as_ref())?;
    let aranges = gimli::DebugAranges::from(EndianArcSlice::new(bytes, endian(&obj)));
    let mut out = Vec::new();
    let mut headers = aranges.headers();
    while let Some(header) = headers.next().ok()? {
        let unit = header.debug_info_offset().0 as u64;
        let mut entries = header.entries();
        while let Some(entry) = entries.next().transpose() {
            if let Ok(e) = entry
                && e.length() != 0
            {
                let r = e.range();
                out.push((r.begin, r.end, unit));
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A context of the units at `units` (sorted) alone. `None` when they do not read, one is not
/// a compilation unit, or one may refer into another unit.
///
/// The units are copied one after the other into a `.debug_info` of their own, and
/// `.debug_aranges` is written anew for their new offsets: a unit that refers to nothing
/// outside itself (checked here) refers to its entries by offsets from its own start, so it
/// reads the same wherever it stands, and `addr2line` takes each unit's ranges from the same
/// place as it would in the whole file. Their line programs are copied the same way into a
/// `.debug_line` of their own (each unit's `DW_AT_stmt_list` set to its program's new
/// offset); without `lines`, each program is cut to its header (its unit length made to end
/// where the header does), so `addr2line` still finds the file table the call sites of
/// inlined functions name their files by, but no rows to parse.
#[allow(clippy::too_many_arguments)]
fn build(
    file: &File,
    sup: Option<&Path>,
    cache: Option<&Path>,
    units: &[u64],
    ranges: &[(u64, u64, u64)],
    whole: &mut Vec<(SectionId, Reader)>,
    lines: bool,
) -> Option<Context> {
    let read = ReadCache::new(file);
    let obj = object::File::parse(&read).ok()?;
    let endian = endian(&obj);
    let inflated = Inflated::new(cache, obj.build_id().ok().flatten());
    let info_section = obj.section_by_name(".debug_info")?;
    let saved = saved_section(file, &info_section, inflated.as_ref());
    let mut parts = parts(file, &info_section, &saved)?;
    let mut info = Vec::new();
    let mut moved = Vec::with_capacity(units.len());
    for &unit in units {
        let len = unit_length(&mut parts, unit, endian)?;
        moved.push((unit, info.len() as u64));
        parts.append(unit, len, &mut info)?;
    }
    let mut section = |id: SectionId| -> Reader {
        if let Some((_, r)) = whole.iter().find(|(s, _)| *s == id) {
            return r.clone();
        }
        let bytes = obj
            .section_by_name(id.name())
            .and_then(|s| whole_section(file, &s, inflated.as_ref()));
        let r = EndianArcSlice::new(bytes.unwrap_or_else(|| Arc::from(&[][..])), endian);
        whole.push((id, r.clone()));
        r
    };
    let abbrev = section(SectionId::DebugAbbrev);
    let line = relocate_lines(
        obj.section_by_name(".debug_line").as_ref(),
        file,
        inflated.as_ref(),
        &mut info,
        &moved,
        &abbrev,
        endian,
        lines,
    )?;
    let info = EndianArcSlice::new(Arc::from(info), endian);
    let line = EndianArcSlice::new(Arc::from(line), endian);
    let address_size = if obj.is_64() { 8 } else { 4 };
    let aranges = EndianArcSlice::new(
        Arc::from(write_aranges(&moved, ranges, address_size, endian)?),
        endian,
    );
    let empty = EndianArcSlice::new(Arc::from(&[][..]), endian);
    let mut dwarf = gimli::Dwarf::load(|id| -> Result<Reader, gimli::Error> {
        Ok(match id {
            SectionId::DebugInfo => info.clone(),
            SectionId::DebugAranges => aranges.clone(),
            SectionId::DebugLine => line.clone(),
            SectionId::DebugAbbrev => abbrev.clone(),
            SectionId::DebugTypes => empty.clone(),
            _ if UNUSED.contains(&id) => empty.clone(),
            _ => section(id),
        })
    })
    .ok()?;
    if let Some(sup) = sup.and_then(|p| File::open(p).ok())
        && let Some(s) = sections(&sup, cache, false)
    {
        dwarf.sup = Some(Arc::new(s));
    }
    Context::from_dwarf(dwarf).ok()
}

/// The length of the unit (or line program) at `at`, its length field included.
fn unit_length(parts: &mut SectionParts<'_>, at: u64, endian: RunTimeEndian) -> Option<u64> {
    let mut head = Vec::with_capacity(12);
    parts.append(at, 4, &mut head)?;
    let len = match endian.read_u32(&head) {
        0xffff_ffff => {
            parts.append(at + 4, 8, &mut head)?;
            endian.read_u64(&head[4..]).checked_add(12)?
        }
        n if n >= 0xffff_fff0 => return None,
        n => u64::from(n) + 4,
    };
    (len <= parts.size()).then_some(len)
}

/// Checks the moved units (compilation units that refer to nothing outside themselves) and
/// copies their line programs into a `.debug_line` of their own, whole or (without `lines`)
/// cut to their headers, setting each unit's `DW_AT_stmt_list` in `info` to the new offset.
#[allow(clippy::too_many_arguments)]
fn relocate_lines<'d>(
    line_section: Option<&impl object::ObjectSection<'d>>,
    file: &File,
    inflated: Option<&Inflated>,
    info: &mut [u8],
    moved: &[(u64, u64)],
    abbrev: &Reader,
    endian: RunTimeEndian,
    lines: bool,
) -> Option<Vec<u8>> {
    // (where in `info` a unit's DW_AT_stmt_list is, its size, the program's old offset)
    let mut lists = Vec::new();
    {
        let units = gimli::DebugInfo::from(gimli::EndianSlice::new(&*info, endian));
        let abbrevs = gimli::DebugAbbrev::from(abbrev.clone());
        for &(_, at) in moved {
            let header = units
                .header_from_offset(gimli::DebugInfoOffset(usize::try_from(at).ok()?))
                .ok()?;
            if header.type_() != gimli::UnitType::Compilation
                || refers_out(abbrev, header.debug_abbrev_offset())?
            {
                return None;
            }
            let set = abbrevs.abbreviations(header.debug_abbrev_offset()).ok()?;
            let mut entries = header.entries_raw(&set, None).ok()?;
            let Some(root) = entries.read_abbreviation().ok()? else {
                continue;
            };
            for spec in root.attributes() {
                let pos = entries.next_offset().0;
                let attr = entries.read_attribute(*spec).ok()?;
                if attr.name() != gimli::DW_AT_stmt_list {
                    continue;
                }
                let size = match (spec.form(), header.format()) {
                    (gimli::DW_FORM_sec_offset, gimli::Format::Dwarf32)
                    | (gimli::DW_FORM_data4, _) => 4,
                    (gimli::DW_FORM_sec_offset, gimli::Format::Dwarf64)
                    | (gimli::DW_FORM_data8, _) => 8,
                    _ => return None,
                };
                let gimli::AttributeValue::DebugLineRef(offset) = attr.value() else {
                    return None;
                };
                lists.push((at as usize + pos, size, offset.0 as u64));
            }
        }
    }
    let mut out = Vec::new();
    if lists.is_empty() {
        return Some(out);
    }
    let section = line_section?;
    let saved = saved_section(file, section, inflated);
    let mut parts = parts(file, section, &saved)?;
    let mut placed: Vec<(u64, u64)> = Vec::new();
    for (pos, size, old) in lists {
        let new = match placed.iter().find(|p| p.0 == old) {
            Some(&(_, new)) => new,
            None => {
                let new = out.len() as u64;
                copy_program(&mut parts, old, endian, lines, &mut out)?;
                placed.push((old, new));
                new
            }
        };
        set_uint(info.get_mut(pos..pos + size)?, new, endian)?;
    }
    Some(out)
}

/// Appends the line program at `at` to `out`: whole, or (without `lines`) its header alone,
/// with its unit length made to end where the header does.
fn copy_program(
    parts: &mut SectionParts<'_>,
    at: u64,
    endian: RunTimeEndian,
    lines: bool,
    out: &mut Vec<u8>,
) -> Option<()> {
    let total = unit_length(parts, at, endian)?;
    if lines {
        return parts.append(at, total, out);
    }
    // unit_length, version, [address_size, segment_selector_size (DWARF 5)], header_length
    let mut head = Vec::with_capacity(24);
    parts.append(at, total.min(24), &mut head)?;
    let (len_field, offset_size) = if endian.read_u32(&head) == 0xffff_ffff {
        (12usize, 8usize)
    } else {
        (4, 4)
    };
    let version = endian.read_u16(head.get(len_field..len_field + 2)?);
    let at_header_length = len_field + 2 + if version >= 5 { 2 } else { 0 };
    let field = head.get(at_header_length..at_header_length + offset_size)?;
    let header_length = if offset_size == 8 {
        endian.read_u64(field)
    } else {
        u64::from(endian.read_u32(field))
    };
    let end = ((at_header_length + offset_size) as u64).checked_add(header_length)?;
    if end > total {
        return None;
    }
    let start = out.len();
    parts.append(at, end, out)?;
    let len = end - len_field as u64;
    set_uint(
        out.get_mut(start + len_field - offset_size..start + len_field)?,
        len,
        endian,
    )
}

/// Writes `v` into `field` (2, 4 or 8 bytes) in `endian`; `None` when it does not fit.
fn set_uint(field: &mut [u8], v: u64, endian: RunTimeEndian) -> Option<()> {
    match field.len() {
        2 => endian.write_u16(field, u16::try_from(v).ok()?),
        4 => endian.write_u32(field, u32::try_from(v).ok()?),
        8 => endian.write_u64(field, v),
        _ => return None,
    }
    Some(())
}

/// Appends `v` as `size` bytes (2, 4 or 8) in `endian`; `None` when it does not fit.
fn push_uint(out: &mut Vec<u8>, v: u64, size: u8, endian: RunTimeEndian) -> Option<()> {
    let at = out.len();
    out.resize(at + usize::from(size), 0);
    set_uint(&mut out[at..], v, endian)
}

/// Section `s` of `file` inflated through the cache, when it is compressed and there is one.
fn saved_section<'d>(
    file: &File,
    s: &impl object::ObjectSection<'d>,
    inflated: Option<&Inflated>,
) -> Option<Section> {
    inflated.and_then(|c| c.section(file, s))
}

/// Section `s` of `file` for reading in parts: from `saved` when it was inflated through the
/// cache, else from the file.
fn parts<'a, 'd>(
    file: &'a File,
    s: &impl object::ObjectSection<'d>,
    saved: &'a Option<Section>,
) -> Option<SectionParts<'a>> {
    match saved {
        Some(Section::Saved(f)) => SectionParts::whole_file(f),
        Some(Section::Bytes(b)) => Some(SectionParts::memory(b.clone())),
        None => SectionParts::new(file, s),
    }
}

/// Section `s` of `file` whole: inflated from the cache (or inflated now and saved) when it
/// is compressed and `inflated` is given, else read or inflated here.
fn whole_section<'d>(
    file: &File,
    s: &impl object::ObjectSection<'d>,
    inflated: Option<&Inflated>,
) -> Option<Arc<[u8]>> {
    match saved_section(file, s, inflated) {
        Some(Section::Saved(f)) => {
            let len = f.metadata().ok()?.len();
            crate::objfile::read_range(&f, 0, len)
        }
        Some(Section::Bytes(b)) => Some(b),
        None => crate::objfile::section_bytes(file, s),
    }
}

/// A `.debug_aranges` (version 2, 32-bit) with one set per moved unit `(old offset, new
/// offset)`, holding that unit's `ranges`.
fn write_aranges(
    moved: &[(u64, u64)],
    ranges: &[(u64, u64, u64)],
    address_size: u8,
    endian: RunTimeEndian,
) -> Option<Vec<u8>> {
    let put = |out: &mut Vec<u8>, v: u64, n: u8| push_uint(out, v, n, endian);
    let mut out = Vec::new();
    for &(old, new) in moved {
        let start = out.len();
        put(&mut out, 0, 4)?; // unit length, set below
        put(&mut out, 2, 2)?; // version
        put(&mut out, new, 4)?;
        out.push(address_size);
        out.push(0); // segment selector size
        // Tuples start at a multiple of twice the address size from the set's start.
        let tuple = 2 * usize::from(address_size);
        out.resize(start + (out.len() - start).div_ceil(tuple) * tuple, 0);
        for &(begin, end, _) in ranges.iter().filter(|r| r.2 == old) {
            put(&mut out, begin, address_size)?;
            put(&mut out, end - begin, address_size)?;
        }
        put(&mut out, 0, address_size)?;
        put(&mut out, 0, address_size)?;
        let len = (out.len() - start - 4) as u64;
        set_uint(&mut out[start..start + 4], len, endian)?;
    }
    Some(out)
}

/// Whether the abbreviations at `offset` let a unit refer into another unit
/// (`DW_FORM_ref_addr`) or name its forms in the entries (`DW_FORM_indirect`, which may be
/// one). `None` when they do not read.
fn refers_out(abbrev: &Reader, offset: gimli::DebugAbbrevOffset) -> Option<bool> {
    let mut r = abbrev.clone();
    r.skip(offset.0).ok()?;
    // Every read takes at least one byte, so the loops end with the section.
    loop {
        if r.read_uleb128().ok()? == 0 {
            return Some(false);
        }
        r.read_uleb128().ok()?; // tag
        r.read_u8().ok()?; // children
        loop {
            let name = r.read_uleb128().ok()?;
            let form = r.read_uleb128().ok()?;
            if name == 0 && form == 0 {
                break;
            }
            match gimli::DwForm(u16::try_from(form).ok()?) {
                gimli::DW_FORM_ref_addr | gimli::DW_FORM_indirect => return Some(true),
                gimli::DW_FORM_implicit_const => {
                    r.read_sleb128().ok()?;
                }
                _ => {}
            }
        }
    }
}

fn endian<'d>(obj: &object::File<'d, &'d ReadCache<&File>>) -> RunTimeEndian {
    if obj.is_little_endian() {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use object::{Object as _, ObjectSection as _};

    use super::*;

    use super::super::Unresolved;
    use super::super::binary::{Binary, DwarfUse};
    use super::super::debuginfo::SearchPaths;

    /// The checked-in fixture binary (C, `-g`): DWARF 5 with line and range lists.
    fn fixture() -> Vec<u8> {
        std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/recordings/root/tmp/hrec-fixture/work"
        ))
        .unwrap()
    }

    /// Three units with inline functions (one calls into another unit), as a C program.
    const UNITS: [(&str, &str); 3] = [
        (
            "a.c",
            "static inline __attribute__((always_inline)) int ia(int x) { return x * 3 + 1; }\n\
             __attribute__((noinline)) int fa(int n)\n\
             { int s = 0; for (int i = 0; i < n; i++) s += ia(i) ^ s; return s; }\n",
        ),
        (
            "b.c",
            "int fa(int n);\n\
             static inline __attribute__((always_inline)) int ib(int x) { return fa(x) * 5; }\n\
             __attribute__((noinline)) int fb(int n) { return ib(n) + 2; }\n",
        ),
        (
            "m.c",
            "#include <stdio.h>\nint fb(int n);\n\
             int main(int c, char **v) { (void)v; printf(\"%d\\n\", fb(c + 100)); return 0; }\n",
        ),
    ];

    /// `gcc -g -O2 EXTRA a.c b.c m.c -o dir/NAME`.
    fn program(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
        for (file, text) in UNITS {
            std::fs::write(dir.join(file), text).unwrap();
        }
        let out = dir.join(name);
        crate::symbol::elf::fixtures::run(
            std::process::Command::new("gcc")
                .args(["-g", "-O2"])
                .args(extra)
                .arg("-o")
                .arg(&out)
                .args(UNITS.map(|u| u.0))
                .current_dir(dir),
        );
        out
    }

    /// Name, file and line of each frame at `probe`.
    fn chain(ctx: &Context, probe: u64) -> Vec<(Option<String>, Option<String>, Option<u32>)> {
        let mut out = Vec::new();
        if let Ok(mut it) = ctx.find_frames(probe).skip_all_loads() {
            while let Ok(Some(f)) = it.next() {
                let name = f.function.as_ref().and_then(|n| n.raw_name().ok());
                let loc = f.location.as_ref();
                out.push((
                    name.map(|n| n.into_owned()),
                    loc.and_then(|l| l.file).map(str::to_owned),
                    loc.and_then(|l| l.line),
                ));
            }
        }
        out
    }

    /// The `.text` addresses of `path`.
    fn text(path: &Path) -> Vec<u64> {
        let bytes = std::fs::read(path).unwrap();
        let obj = object::File::parse(&*bytes).unwrap();
        let text = obj.section_by_name(".text").unwrap();
        (text.address()..text.address() + text.size()).collect()
    }

    /// Asks `path`'s DWARF for `asked` first, then checks every address of `probes` against
    /// the whole file's answers; returns whether only some units were read, and how many
    /// probes had frames.
    fn compare(path: &Path, asked: &[u64], probes: &[u64]) -> (bool, usize) {
        let whole = load(&File::open(path).unwrap(), None, None).unwrap();
        let mut lazy = Dwarf::new(File::open(path).unwrap(), None, None, true);
        lazy.prepare(asked);
        let partial = match &lazy.state {
            State::Units(u) => {
                u.loaded.len()
                    < u.ranges
                        .iter()
                        .map(|r| r.2)
                        .collect::<std::collections::BTreeSet<_>>()
                        .len()
            }
            _ => false,
        };
        // Names alone: the same functions; lines only where no function covers an address.
        let mut names = Dwarf::new(File::open(path).unwrap(), None, None, false);
        names.prepare(asked);
        let (mut found, mut unlined) = (0, 0);
        for &p in probes {
            let want = chain(&whole, p);
            let got = lazy.context(p).map(|c| chain(c, p)).unwrap_or_default();
            assert_eq!(got, want, "{}: frames at {p:#x}", path.display());
            found += usize::from(!want.is_empty());
            let mut named = names.context(p).map(|c| chain(c, p)).unwrap_or_default();
            if named.is_empty() && names.covers(p) {
                named = names
                    .lined_context(p)
                    .map(|c| chain(c, p))
                    .unwrap_or_default();
            }
            let name =
                |c: &[(Option<String>, Option<String>, Option<u32>)]| -> Vec<Option<String>> {
                    c.iter().map(|f| f.0.clone()).collect()
                };
            assert_eq!(
                name(&named),
                name(&want),
                "{}: names at {p:#x}",
                path.display()
            );
            unlined += usize::from(
                want.first().is_some_and(|f| f.2.is_some())
                    && named
                        .first()
                        .is_some_and(|f| f.0.is_some() && f.2.is_none()),
            );
        }
        let read_whole = !matches!(names.state, State::Units(_));
        assert!(
            found == 0 || unlined > 0 || read_whole,
            "names alone parse no line rows"
        );
        (partial, found)
    }

    /// The units `.debug_aranges` names for the addresses asked for give the same frames
    /// (names, files, lines; inline chains across units) as the whole file, read plainly or
    /// compressed with zlib or zstd; asking for one function reads only its unit.
    #[test]
    fn the_units_asked_for_answer_as_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let plain = program(dir.path(), "plain", &[]);
        let mut files = vec![plain.clone()];
        for kind in ["zlib", "zstd"] {
            let out = dir.path().join(kind);
            let ok = std::process::Command::new("objcopy")
                .arg(format!("--compress-debug-sections={kind}"))
                .arg(&plain)
                .arg(&out)
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                files.push(out);
            } else {
                eprintln!("skipped: objcopy cannot compress with {kind}");
            }
        }
        assert!(files.len() >= 2, "objcopy compresses with zlib");
        for path in &files {
            let all = text(path);
            let (partial, found) = compare(path, &all, &all);
            assert!(!partial, "every unit with code is read for every address");
            assert!(
                found > 60,
                "{}: {found} addresses with frames",
                path.display()
            );
            let (fb, size) = crate::symbol::elf::fixtures::symbol(path, "fb");
            let one: Vec<u64> = (fb..fb + size).collect();
            let (partial, found) = compare(path, &one, &one);
            assert!(partial, "{}: fb's unit alone", path.display());
            assert_eq!(found, one.len(), "every address of fb has frames");
        }
    }

    /// A compressed section read once is saved inflated under the cache root, named by the
    /// file's build-id, and read from there next time with the same answers; a saved file
    /// of the wrong size is saved again; a cache that cannot be written changes nothing.
    #[test]
    fn compressed_sections_are_kept_inflated() {
        let dir = tempfile::tempdir().unwrap();
        let plain = program(dir.path(), "plain", &[]);
        let zlib = dir.path().join("zlib");
        crate::symbol::elf::fixtures::objcopy(&["--compress-debug-sections=zlib"], &plain, &zlib);
        let root = dir.path().join("cache");
        let saved = root.join(super::super::elf::hex(
            &crate::symbol::elf::fixtures::build_id(&zlib),
        ));
        let all = text(&zlib);
        let whole = load(&File::open(&zlib).unwrap(), None, None).unwrap();
        let check = |cache: &Path| {
            let mut d = Dwarf::new(
                File::open(&zlib).unwrap(),
                None,
                Some(cache.to_path_buf()),
                true,
            );
            d.prepare(&all);
            for &p in &all {
                let got = d.context(p).map(|c| chain(c, p)).unwrap_or_default();
                assert_eq!(got, chain(&whole, p), "frames at {p:#x}");
            }
        };
        check(&root);
        let info = saved.join("debug_info");
        let size = |p: &Path| std::fs::metadata(p).unwrap().len();
        let plain_info = {
            let bytes = std::fs::read(&plain).unwrap();
            let obj = object::File::parse(&*bytes).unwrap();
            obj.section_by_name(".debug_info").unwrap().size()
        };
        assert_eq!(size(&info), plain_info, "saved inflated");
        assert!(saved.join("debug_line").exists() && saved.join("debug_abbrev").exists());
        std::fs::write(&info, b"short").unwrap();
        check(&root);
        assert_eq!(size(&info), plain_info, "saved again");
        // A FIFO in a section's place is not opened (that would block), but replaced.
        std::fs::remove_file(&info).unwrap();
        crate::symbol::elf::fixtures::run(std::process::Command::new("mkfifo").arg(&info));
        check(&root);
        assert!(std::fs::metadata(&info).unwrap().is_file());
        assert_eq!(size(&info), plain_info, "saved again");
        let not_a_dir = dir.path().join("file");
        std::fs::write(&not_a_dir, b"").unwrap();
        check(&not_a_dir);
    }

    /// A unit that refers into another (`DW_FORM_ref_addr`, as GCC's LTO writes) is read
    /// with the whole file, with the same answers.
    #[test]
    fn units_that_refer_into_others_read_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let lto = program(dir.path(), "lto", &["-flto"]);
        let all = text(&lto);
        let mut lazy = Dwarf::new(File::open(&lto).unwrap(), None, None, true);
        lazy.prepare(&all);
        assert!(matches!(lazy.state, State::Whole(Some(_))), "read whole");
        let (_, found) = compare(&lto, &all, &all);
        assert!(found > 50, "{found} addresses with frames");
    }

    /// `DW_FORM_ref_addr` and `DW_FORM_indirect` in an abbreviation set are found; a set
    /// without them is not; a set cut short does not read.
    #[test]
    fn references_out_of_a_unit_are_seen_in_its_abbreviations() {
        let set = |form: u8| -> Reader {
            // code 1, DW_TAG_subprogram, no children, (DW_AT_name, FORM), (0, 0), end of set.
            let b = vec![1, 0x2e, 0, 0x03, form, 0, 0, 0];
            EndianArcSlice::new(Arc::from(b), RunTimeEndian::Little)
        };
        let at0 = gimli::DebugAbbrevOffset(0);
        assert_eq!(refers_out(&set(0x08), at0), Some(false)); // DW_FORM_string
        assert_eq!(refers_out(&set(0x10), at0), Some(true)); // DW_FORM_ref_addr
        assert_eq!(refers_out(&set(0x16), at0), Some(true)); // DW_FORM_indirect
        let cut = EndianArcSlice::new(Arc::from(&[1u8, 0x2e, 0, 0x03][..]), RunTimeEndian::Little);
        assert_eq!(refers_out(&cut, at0), None);
    }

    /// Thousands of mutants of the DWARF sections and the section headers that say where
    /// they are and how big: loading and looking up never panics, never allocates what the
    /// file cannot hold, and the intact file still gives its inline chains.
    #[test]
    fn damaged_dwarf_never_panics() {
        let bytes = fixture();
        let obj = object::File::parse(&*bytes).unwrap();
        let text = obj.section_by_name(".text").unwrap();
        let (text_start, text_len) = (text.address(), text.size());
        let debug: Vec<(usize, usize)> = obj
            .sections()
            .filter(|s| s.name().is_ok_and(|n| n.starts_with(".debug_")))
            .filter_map(|s| s.file_range())
            .map(|(o, n)| (o as usize, n as usize))
            .collect();
        let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
        let mut targets = debug.clone();
        targets.push((shoff, bytes.len() - shoff));
        let dir = tempfile::tempdir().unwrap();
        let search = SearchPaths {
            debug_dirs: Vec::new(),
            build_id_cache: None,
            debuginfod_cache: None,
            inflated_cache: None,
        };
        // Address by address (units read one build at a time, then the whole file), and all
        // addresses at once without lines (line programs cut to their headers).
        let lookups = |path: &std::path::Path| -> usize {
            let probes: Vec<u64> = (text_start..text_start + text_len).step_by(7).collect();
            let mut n = 0;
            for (dwarf, batch) in [(DwarfUse::Lines, false), (DwarfUse::Names, true)] {
                match Binary::load_with(path, None, &search, dwarf) {
                    Ok(b) => {
                        if batch {
                            b.prepare(&probes);
                        }
                        n += probes
                            .iter()
                            .filter_map(|&a| b.symbolize(a).ok())
                            .map(|s| s.frames.len())
                            .sum::<usize>();
                    }
                    Err(Unresolved::NotElf) => {}
                    Err(e) => panic!("load gave {e:?}"),
                }
            }
            n
        };
        let intact = dir.path().join("intact");
        std::fs::write(&intact, &bytes).unwrap();
        assert!(lookups(&intact) > 0, "the intact fixture has DWARF frames");
        let mut next = crate::testutil::xorshift(0x2545_f491_4f6c_dd1d_u64);
        let path = dir.path().join("mutant");
        for round in 0..2000 {
            let mut m = bytes.clone();
            for _ in 0..1 + round % 8 {
                let (start, len) = targets[(next() % targets.len() as u64) as usize];
                let at = start + (next() % len.max(1) as u64) as usize;
                if let Some(b) = m.get_mut(at) {
                    // Half the time a byte of all ones: sizes and offsets become huge.
                    *b = if next().is_multiple_of(2) {
                        0xff
                    } else {
                        next() as u8
                    };
                }
            }
            std::fs::write(&path, &m).unwrap();
            lookups(&path);
        }
    }
}
