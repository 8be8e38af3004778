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
//! Nothing in the file is trusted: `object` bounds every section by the file, a section that
//! does not read is empty (the lookups that need it find nothing), and `addr2line` parses
//! units lazily and bounds-checked.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use gimli::{EndianArcSlice, RunTimeEndian, SectionId};
use object::Object as _;
use object::read::ReadCache;

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
pub(super) fn load(file: &File, sup: Option<&Path>) -> Option<Context> {
    let mut dwarf = sections(file)?;
    if let Some(sup) = sup.and_then(|p| File::open(p).ok())
        && let Some(s) = sections(&sup)
    {
        dwarf.sup = Some(Arc::new(s));
    }
    dwarf.populate_abbreviations_cache(gimli::AbbreviationsCacheStrategy::Duplicates);
    Context::from_dwarf(dwarf).ok()
}

fn sections(file: &File) -> Option<gimli::Dwarf<Reader>> {
    let cache = ReadCache::new(file);
    let obj = object::File::parse(&cache).ok()?;
    let endian = if obj.is_little_endian() {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    };
    let load = |id: SectionId| -> Result<Reader, gimli::Error> {
        let bytes = if UNUSED.contains(&id) {
            None
        } else {
            obj.section_by_name(id.name())
                .and_then(|s| crate::objfile::section_bytes(file, &s))
        };
        Ok(EndianArcSlice::new(
            bytes.unwrap_or_else(|| Arc::from(&[][..])),
            endian,
        ))
    };
    gimli::Dwarf::load(load).ok()
}

#[cfg(test)]
mod tests {
    use object::{Object as _, ObjectSection as _};

    use super::super::Unresolved;
    use super::super::binary::Binary;
    use super::super::debuginfo::SearchPaths;

    /// The checked-in fixture binary (C, `-g`): DWARF 5 with line and range lists.
    fn fixture() -> Vec<u8> {
        std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/recordings/root/tmp/hrec-fixture/work"
        ))
        .unwrap()
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
        };
        let lookups = |path: &std::path::Path| -> usize {
            match Binary::load(path, None, &search) {
                Ok(b) => (text_start..text_start + text_len)
                    .step_by(7)
                    .filter_map(|a| b.symbolize(a).ok())
                    .map(|s| s.frames.len())
                    .sum(),
                Err(Unresolved::NotElf) => 0,
                Err(e) => panic!("load gave {e:?}"),
            }
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
