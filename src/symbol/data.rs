//! Data addresses (a sample's `PERF_SAMPLE_ADDR`) named as perf 6.1 names them in
//! `report --sort symbol_daddr,dso_daddr,dcacheline`.
//!
//! A data address is looked up in its process's mappings *including the data mappings*
//! ([`AddressSpaces::with_data`]: `record -d` sets `mmap_data`, so the kernel reports a
//! program's `.data`/`.bss`, `[heap]`, `[stack]` and anonymous memory too). In a mapped file
//! it is named by the data object (`STT_OBJECT`, `.data`/`.bss`, printed `name+0xOFF`) that
//! holds it, else the function (printed `name`, as for an instruction-fetch fault), from the
//! same symbol tables as code ([`super::binary::Binary::data_symbol`]); in anonymous memory,
//! on the heap or the stack, or without a symbol, by its address. The shared object is the
//! mapping's base name as perf writes it (`anon` for `//anon`, `[heap]`, `[stack]`), and
//! `[unknown]` outside every mapping.
//!
//! Thread-local variables are not named: their symbols hold offsets into each thread's TLS
//! block, which no record gives.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use super::maps::{AddressSpaces, FileIdx};
use super::symbolizer::{Symbolizer, on_disk};

/// Where a data address lies, interned by the converter (one per distinct address).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataKey {
    /// In a mapping of a file: the file and the offset in it.
    File(FileIdx, u64),
    /// In anonymous memory, the heap or the stack of process `pid`.
    Anon(u32, FileIdx),
    /// In the anonymous mapping of process `pid` (the second field) that continues a file's
    /// last data mapping (the zeroed `.bss` past its file bytes): named as anonymous memory,
    /// as perf does, but typed as the file's offset `off` would be (its segment's memory
    /// size covers it): `Bss(pid, anon, file, off)`.
    Bss(u32, FileIdx, FileIdx, u64),
    /// Outside every mapping of process `pid`.
    Unmapped(u32),
}

/// A data address as the converter interns it: where it lies, the address, and (when data
/// types are asked for) where the instruction that accessed it lies, as a file and an offset
/// in it: an address no variable at a fixed address holds is typed by that instruction
/// ([`super::binary::Binary::access_type`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DataAccess {
    /// Where the address lies.
    pub key: DataKey,
    /// The address.
    pub addr: u64,
    /// The accessing instruction's file and offset.
    pub code: Option<(FileIdx, u64)>,
}

/// A data address, named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataLoc {
    /// The address.
    pub addr: u64,
    /// The shared object perf names (`memwork`, `anon`, `[heap]`, `[unknown]`).
    pub dso: Arc<str>,
    /// The symbol holding it and its start address in the process, and whether it is a data
    /// object (printed with its offset) or a function.
    pub sym: Option<(Arc<str>, u64, bool)>,
    /// It lies in anonymous memory (perf keeps anonymous cache lines apart per process).
    pub anon: Option<u32>,
    /// It lies in no mapping.
    pub unmapped: bool,
    /// The variable's type and member it hits, when asked for and the file's DWARF has it
    /// ([`super::datatype`]).
    pub data_type: Option<super::datatype::TypeHit>,
}

impl DataLoc {
    /// perf's symbol cell of the address with mode letter `level`: `[.] table+0x40`,
    /// `[.] reader`, `[.] 0x00007f0000000010` (a zero address without the `0x`, as C's `%#x`
    /// prints it).
    pub fn cell(&self, level: char) -> String {
        format!("[{level}] {}", self.name_at(self.addr))
    }

    /// The name of `addr` relative to this location's symbol: `sym+0xOFF` for a data object
    /// (`sym-0xOFF` when `addr` is below its start, as for a cache line starting before it),
    /// `sym` for a function, else the address.
    pub fn name_at(&self, addr: u64) -> String {
        match &self.sym {
            Some((name, start, true)) if addr >= *start => format!("{name}+{:#x}", addr - start),
            Some((name, start, true)) => format!("{name}-{:#x}", start - addr),
            Some((name, _, false)) => name.to_string(),
            None => hex_addr(addr),
        }
    }
}

/// An address as perf prints an unresolved one: 16 hex digits after `0x`, and `0` without it.
pub fn hex_addr(addr: u64) -> String {
    if addr == 0 {
        format!("{:016x}", 0)
    } else {
        format!("{addr:#018x}")
    }
}

/// perf's base name of a mapped path: the part after the last `/` (`//anon` is `anon`).
fn base_name(path: &Path) -> Arc<str> {
    let s = path.to_string_lossy();
    match s.rsplit('/').next() {
        Some(b) if !b.is_empty() => b.into(),
        _ => s.as_ref().into(),
    }
}

impl Symbolizer {
    /// Names data addresses (`keys`, with each one's address) found in `maps` (the address
    /// spaces of data addresses), in order. Each binary is loaded once (through the same cache
    /// as code), its data objects looked up by file offset; with `types`, also the variable's
    /// type and member from its DWARF: by the address, else by the accessing instruction.
    pub fn symbolize_data(
        &self,
        maps: &AddressSpaces,
        keys: &[DataAccess],
        types: bool,
    ) -> Vec<DataLoc> {
        let mut by_code: HashMap<(FileIdx, u64), Option<super::datatype::TypeHit>> = HashMap::new();
        let mut locs = self.symbolize_addresses(maps, keys, types);
        if types {
            for (loc, k) in locs.iter_mut().zip(keys) {
                if loc.data_type.is_none()
                    && let Some(code) = k.code
                {
                    loc.data_type = by_code
                        .entry(code)
                        .or_insert_with(|| {
                            self.with_binary(maps, code.0, |b| b.access_type(code.1))
                        })
                        .clone();
                }
            }
        }
        locs
    }

    fn symbolize_addresses(
        &self,
        maps: &AddressSpaces,
        keys: &[DataAccess],
        types: bool,
    ) -> Vec<DataLoc> {
        let unknown: Arc<str> = "[unknown]".into();
        let mut names: HashMap<FileIdx, Arc<str>> = HashMap::new();
        let mut name_of = |f: FileIdx| {
            names
                .entry(f)
                .or_insert_with(|| base_name(&maps.file(f).path))
                .clone()
        };
        keys.iter()
            .map(|&DataAccess { key, addr, .. }| match key {
                DataKey::Unmapped(_) => DataLoc {
                    addr,
                    dso: unknown.clone(),
                    sym: None,
                    anon: None,
                    unmapped: true,
                    data_type: None,
                },
                DataKey::Anon(pid, f) => DataLoc {
                    addr,
                    dso: name_of(f),
                    sym: None,
                    anon: Some(pid),
                    unmapped: false,
                    data_type: None,
                },
                DataKey::Bss(pid, f, file, off) => DataLoc {
                    addr,
                    dso: name_of(f),
                    sym: None,
                    anon: Some(pid),
                    unmapped: false,
                    data_type: if types {
                        self.with_binary(maps, file, |b| b.data_type(off))
                    } else {
                        None
                    },
                },
                DataKey::File(f, off) => {
                    let file = maps.file(f);
                    let path = on_disk(&file.path, self.symfs_root());
                    let cached = self.binary(&path, self.expected_build_id(file), file.is_pseudo());
                    let bin = cached.lock().unwrap_or_else(|e| e.into_inner());
                    let sym =
                        bin.as_ref()
                            .ok()
                            .and_then(|b| b.data_symbol(off))
                            .map(|(s, object)| {
                                // The symbol's start in the process: the address less its
                                // distance into the symbol.
                                let into = b_offset_into(off, &s, &bin);
                                (s.name.clone(), addr.wrapping_sub(into), object)
                            });
                    let data_type = bin
                        .as_ref()
                        .ok()
                        .filter(|_| types)
                        .and_then(|b| b.data_type(off));
                    DataLoc {
                        addr,
                        dso: name_of(f),
                        sym,
                        anon: None,
                        unmapped: false,
                        data_type,
                    }
                }
            })
            .collect()
    }
}

impl Symbolizer {
    /// `query` of the loaded binary of mapped file `f` (`None` when it does not load): its
    /// data type at a data offset or the type its instruction at a code offset accesses
    /// ([`super::datatype`]).
    fn with_binary<T>(
        &self,
        maps: &AddressSpaces,
        f: FileIdx,
        query: impl FnOnce(&super::binary::Binary) -> Option<T>,
    ) -> Option<T> {
        let file = maps.file(f);
        let path = on_disk(&file.path, self.symfs_root());
        let cached = self.binary(&path, self.expected_build_id(file), file.is_pseudo());
        let bin = cached.lock().unwrap_or_else(|e| e.into_inner());
        query(bin.as_ref().ok()?)
    }
}

/// How far into symbol `s` the data at file offset `off` of binary `bin` lies.
fn b_offset_into(
    off: u64,
    s: &super::Sym,
    bin: &Result<super::binary::Binary, super::Unresolved>,
) -> u64 {
    bin.as_ref()
        .ok()
        .and_then(|b| b.data_svma(off))
        .map_or(0, |svma| svma.wrapping_sub(s.start))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(sym: Option<(&str, u64, bool)>) -> DataLoc {
        DataLoc {
            addr: 0x600048,
            dso: "memwork".into(),
            sym: sym.map(|(n, s, o)| (n.into(), s, o)),
            anon: None,
            unmapped: false,
            data_type: None,
        }
    }

    #[test]
    fn cells_as_perf_prints_them() {
        assert_eq!(
            loc(Some(("table", 0x600040, true))).cell('.'),
            "[.] table+0x8"
        );
        assert_eq!(
            loc(Some(("table", 0x600048, true))).cell('.'),
            "[.] table+0x0"
        );
        assert_eq!(
            loc(Some(("reader", 0x600040, false))).cell('k'),
            "[k] reader"
        );
        assert_eq!(loc(None).cell('.'), "[.] 0x0000000000600048");
        assert_eq!(
            loc(Some(("table", 0x600048, true))).name_at(0x600040),
            "table-0x8"
        );
        assert_eq!(hex_addr(0), "0000000000000000");
        assert_eq!(&*base_name(Path::new("//anon")), "anon");
        assert_eq!(&*base_name(Path::new("[heap]")), "[heap]");
        assert_eq!(&*base_name(Path::new("/usr/lib/libc.so.6")), "libc.so.6");
    }
}
