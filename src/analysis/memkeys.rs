//! The memory-access sort keys of a report (`symbol_daddr`, `dso_daddr`, `dcacheline`, `mem`,
//! `snoop`, `tlb`, `locked`, `blocked`, `local_weight`, `weight`, `data_page_size`,
//! `local_ins_lat`): what
//! each one keys a row by and the cell it prints, as perf 6.1 prints them.
//!
//! Rows are keyed as perf keys them except where perf loses part of the kernel's layout:
//! * `symbol_daddr`: the data address (one row per address, as perf), printed as the data
//!   object and the offset into it (`[.] table+0x40`), a function by its name, else the
//!   address; the mode letter is the sample's (`[k]` for a kernel-mode sample).
//! * `dso_daddr`: the name of the mapping the address lies in (`[unknown]` outside all).
//! * `dcacheline`: the 64-byte line (`addr & !63`) in its object (per process in anonymous
//!   memory), printed as the line's start relative to the symbol of the first address seen in
//!   it (`[.] table+0x40`, `table-0x8` for a line that starts before it), `[X]` outside every
//!   mapping. perf 6.1 prints the line of the address's offset *into its mapping* named
//!   after the symbol, which gives offsets that are no address of the line.
//! * `mem`, `snoop`: the whole name ([`DataSrc::mem_name`], [`DataSrc::snoop_name`]), which
//!   covers `mem_lvl_num`, `mem_remote`, `mem_hops` and `mem_snoopx`; perf 6.1 compares only
//!   the old `mem_lvl` and `mem_snoop` bits and merges what differs in the others.
//! * `tlb`, `locked`, `blocked`: their fields, printed by name.
//! * `local_weight`: the weight (a row's samples all have it); `weight`: the row's weight
//!   summed (the local weight times the samples, as perf prints it).
//! * `data_page_size`: the page size (`4K`, `N/A`).
//! * `local_ins_lat`: the instruction latency, WEIGHT_STRUCT's `var2_w` (bits 47:32; 0 without
//!   WEIGHT_STRUCT), as perf's `Local INSTR Latency`.
//! * `phys_daddr`: the physical address of the data (`PERF_SAMPLE_PHYS_ADDR`, `record
//!   --phys-data`; 0 without it), one row per address, printed as perf's
//!   `hist_entry__phys_daddr_snprintf`: the sample's mode letter and the address in 16 hex
//!   digits (`[.] 0x000000010a2b3c40`, `[.] 0000000000000000` for none).

use std::collections::HashMap;

use super::profile::{MemFold, MemView, NONE, Profile};
use crate::decode::datasrc::{DataSrc, page_size_name};
use crate::symbol::data::{DataLoc, hex_addr};

/// The cache line size perf uses for `dcacheline` (the running machine's, 64 on x86).
pub const CACHE_LINE: u64 = 64;

/// perf's name of the type of an access it cannot type.
pub const UNKNOWN_TYPE: &str = "(unknown)";

/// A memory-access sort key (the `--sort` keys of [`super::hist::SortKey`] that read a
/// sample's memory access).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemKey {
    /// `symbol_daddr`.
    SymbolDaddr,
    /// `dso_daddr`.
    DsoDaddr,
    /// `dcacheline`.
    Dcacheline,
    /// `mem`.
    Mem,
    /// `snoop`.
    Snoop,
    /// `tlb`.
    Tlb,
    /// `locked`.
    Locked,
    /// `blocked`.
    Blocked,
    /// `local_weight`.
    LocalWeight,
    /// `weight`.
    Weight,
    /// `data_page_size`.
    DataPageSize,
    /// `local_ins_lat`.
    LocalInsLat,
    /// `type`: the data type the access hits.
    Type,
    /// `typeoff`: the data type and the offset and member in it.
    TypeOff,
    /// `phys_daddr`: the physical address of the data.
    PhysDaddr,
}

impl MemKey {
    /// Every memory key with its `--sort` name and perf's column header.
    pub const ALL: [(MemKey, &'static str, &'static str); 15] = [
        (MemKey::SymbolDaddr, "symbol_daddr", "Data Symbol"),
        (MemKey::DsoDaddr, "dso_daddr", "Data Object"),
        (MemKey::Dcacheline, "dcacheline", "Data Cacheline"),
        (MemKey::Mem, "mem", "Memory access"),
        (MemKey::Snoop, "snoop", "Snoop"),
        (MemKey::Tlb, "tlb", "TLB access"),
        (MemKey::Locked, "locked", "Locked"),
        (MemKey::Blocked, "blocked", "Blocked"),
        (MemKey::LocalWeight, "local_weight", "Local Weight"),
        (MemKey::Weight, "weight", "Weight"),
        (MemKey::DataPageSize, "data_page_size", "Data Page Size"),
        (MemKey::LocalInsLat, "local_ins_lat", "Local INSTR Latency"),
        (MemKey::Type, "type", "Data Type"),
        (MemKey::TypeOff, "typeoff", "Data Type Offset"),
        (MemKey::PhysDaddr, "phys_daddr", "Data Physical Address"),
    ];

    fn entry(self) -> (MemKey, &'static str, &'static str) {
        Self::ALL
            .into_iter()
            .find(|e| e.0 == self)
            .unwrap_or((self, "", ""))
    }

    /// The `--sort` (and JSON) name.
    pub fn name(self) -> &'static str {
        self.entry().1
    }

    /// perf's column header.
    pub fn header(self) -> &'static str {
        self.entry().2
    }

    /// The key named `name`.
    pub fn parse(name: &str) -> Option<MemKey> {
        Self::ALL.iter().find(|e| e.1 == name).map(|e| e.0)
    }
}

/// What of the memory access the keys `sort` read ([`super::profile::FoldKeys::mem`]).
pub fn fold(sort: &[MemKey]) -> MemFold {
    let has = |ks: &[MemKey]| ks.iter().any(|k| sort.contains(k));
    MemFold {
        daddr: has(&[
            MemKey::SymbolDaddr,
            MemKey::DsoDaddr,
            MemKey::Dcacheline,
            MemKey::Type,
            MemKey::TypeOff,
        ]),
        data_src: has(&[
            MemKey::Mem,
            MemKey::Snoop,
            MemKey::Tlb,
            MemKey::Locked,
            MemKey::Blocked,
        ]),
        weight: has(&[MemKey::LocalWeight, MemKey::Weight]),
        page_size: has(&[MemKey::DataPageSize]),
        ins_lat: has(&[MemKey::LocalInsLat]),
        types: has(&[MemKey::Type, MemKey::TypeOff]),
        phys: has(&[MemKey::PhysDaddr]),
    }
}

/// Row keys and cells of the memory keys, per memory access of a profile.
#[derive(Debug, Default)]
pub struct MemCells {
    /// Per sort key position: per memory access (index into [`Profile::mems`], the last one
    /// for `NONE`), the key and the cell.
    cols: Vec<Vec<(u64, String)>>,
}

impl MemCells {
    /// The keys and cells of `sort`'s memory keys (`None` for the other keys) for every
    /// memory access of `p`.
    pub fn new(p: &Profile, sort: &[Option<MemKey>]) -> MemCells {
        let unknown = DataLoc {
            addr: 0,
            dso: "[unknown]".into(),
            sym: None,
            anon: None,
            unmapped: true,
            data_type: None,
        };
        let none = MemView {
            daddr: NONE,
            data_src: DataSrc::NONE.0,
            ..MemView::default()
        };
        let mut strings: HashMap<String, u64> = HashMap::new();
        let mut intern = |s: &str| -> u64 {
            let n = strings.len() as u64;
            *strings.entry(s.to_string()).or_insert(n)
        };
        let cols = sort
            .iter()
            .map(|&k| {
                let Some(k) = k else {
                    return Vec::new();
                };
                p.mems
                    .iter()
                    .chain(std::iter::once(&none))
                    .map(|m| {
                        let d = p.data_locs.get(m.daddr as usize).unwrap_or(&unknown);
                        let level = if m.kernel { 'k' } else { '.' };
                        let src = DataSrc(m.data_src);
                        let named =
                            |s: String, intern: &mut dyn FnMut(&str) -> u64| (intern(&s), s);
                        match k {
                            MemKey::SymbolDaddr => (m.addr, d.cell(level)),
                            MemKey::DsoDaddr => named(d.dso.to_string(), &mut intern),
                            MemKey::Dcacheline => {
                                let line = m.addr & !(CACHE_LINE - 1);
                                let key = format!("{}\0{:?}\0{line}", d.dso, d.anon);
                                let cell = if d.unmapped {
                                    format!("[X] {}", hex_addr(line))
                                } else {
                                    format!("[{level}] {}", d.name_at(line))
                                };
                                (intern(&key), cell)
                            }
                            MemKey::Mem => named(src.mem_name(), &mut intern),
                            MemKey::Snoop => named(src.snoop_name(), &mut intern),
                            MemKey::Tlb => named(src.tlb_name(), &mut intern),
                            MemKey::Locked => named(src.locked_name().into(), &mut intern),
                            MemKey::Blocked => named(src.blocked_name(), &mut intern),
                            MemKey::LocalWeight | MemKey::Weight => {
                                (m.weight, m.weight.to_string())
                            }
                            MemKey::DataPageSize => (m.page_size, page_size_name(m.page_size)),
                            MemKey::LocalInsLat => (m.ins_lat, m.ins_lat.to_string()),
                            MemKey::Type => named(
                                d.data_type.as_ref().map_or_else(
                                    || UNKNOWN_TYPE.to_string(),
                                    |t| t.type_name.clone(),
                                ),
                                &mut intern,
                            ),
                            MemKey::TypeOff => named(
                                d.data_type
                                    .as_ref()
                                    .map_or_else(|| UNKNOWN_TYPE.to_string(), |t| t.typeoff()),
                                &mut intern,
                            ),
                            MemKey::PhysDaddr => {
                                (m.phys_addr, format!("[{level}] {}", hex_addr(m.phys_addr)))
                            }
                        }
                    })
                    .collect()
            })
            .collect();
        MemCells { cols }
    }

    fn at(&self, col: usize, mem: u32) -> Option<&(u64, String)> {
        let c = self.cols.get(col)?;
        c.get(mem as usize).or_else(|| c.last())
    }

    /// The row key of memory access `mem` for the key at position `col`.
    pub fn key(&self, col: usize, mem: u32) -> u64 {
        self.at(col, mem).map_or(0, |c| c.0)
    }

    /// The cell of memory access `mem` for the key at position `col`.
    pub fn cell(&self, col: usize, mem: u32) -> String {
        self.at(col, mem).map(|c| c.1.clone()).unwrap_or_default()
    }
}

/// How two rows' keys at one position order when their weights tie, as perf's comparison of
/// the key orders them: data addresses ascending, weights descending; `None`: by the cells
/// as printed.
pub fn tie_order(k: MemKey, a: u64, b: u64) -> Option<std::cmp::Ordering> {
    match k {
        MemKey::SymbolDaddr | MemKey::PhysDaddr => Some(a.cmp(&b)),
        MemKey::LocalWeight | MemKey::Weight | MemKey::LocalInsLat => Some(b.cmp(&a)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::hist::SortKey;

    /// One list names every memory key: each name parses back to its key, as a `--sort` key
    /// too, and no two keys share a name or header.
    #[test]
    fn every_key_has_one_name_and_header() {
        let mut names = std::collections::HashSet::new();
        let mut headers = std::collections::HashSet::new();
        for (k, name, header) in MemKey::ALL {
            assert_eq!((k.name(), k.header()), (name, header));
            assert_eq!(MemKey::parse(name), Some(k));
            assert_eq!(name.parse::<SortKey>().ok(), Some(SortKey::Memory(k)));
            assert_eq!(SortKey::Memory(k).name(), name);
            assert!(SortKey::ALL.contains(name), "{name}");
            assert!(names.insert(name) && headers.insert(header), "{name}");
        }
        assert_eq!(MemKey::parse("sym"), None);
    }
}
