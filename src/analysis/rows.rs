//! Locations merged into the rows of a report while the samples stream by.
//!
//! **The domain rule.** A report whose sort keys read of a location only its shared object
//! and its symbol (every key but `srcline` and `ip`) prints one row for all the addresses of
//! a function, and its filters and notes read no more of them either: `--dsos`,
//! `--symbols`, `--symbol-filter` and `-U` read the shared object and the symbol, the
//! resolution note reads why a location did not resolve and its shared object. So two
//! locations that agree on whether they are kernel code, their shared object, their symbol
//! (its name and its address in the file: perf keys `sym` by the symbol's start, so two
//! `static` functions of one name are two rows) and, when they have no symbol, their address
//! (perf names an unresolved location by its address) and the reason, can be one location of
//! the profile: the report prints the same bytes. [`RowLocs`] keeps one location per such row, the first met, and gives every other
//! address its id.
//!
//! **In batches.** Symbolizing is per batch of distinct addresses (a binary is loaded once
//! per batch, not per address): the converter ([`super::replay`]) interns addresses as
//! pending ids ([`super::profile::PENDING`]) until a batch is full, hands the batch's keys
//! here, and passes the ids returned on to the folder ([`super::profile::Folder::remap`]),
//! which merges the groups that now fall in one row. Memory then grows with the rows and one
//! batch, not with the distinct addresses of the recording.

use std::collections::HashMap;
use std::sync::Arc;

use crate::symbol::maps::AddressSpaces;
use crate::symbol::symbolizer::{Loc, LocKey, Symbolizer};
use crate::symbol::{FrameAddress, Unresolved};

/// What a report row reads of a location (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Row {
    kernel: bool,
    dso: Arc<str>,
    sym: Option<Arc<str>>,
    /// Without a symbol, the addresses it is named by (`rel_addr`, `addr`); else the
    /// symbol's address in the file (two symbols of one name are two rows) and zero.
    addrs: (u64, u64),
    unresolved: Option<Unresolved>,
}

impl Row {
    fn of(l: &Loc) -> Row {
        Row {
            kernel: l.kernel,
            dso: l.dso.clone(),
            sym: l.sym.clone(),
            addrs: if l.sym.is_none() {
                (l.rel_addr, l.addr)
            } else {
                (l.sym_start, 0)
            },
            unresolved: l.unresolved,
        }
    }
}

/// The row locations of a profile, found batch by batch (see the module docs).
#[derive(Debug)]
pub struct RowLocs<'s> {
    symbolizer: &'s Symbolizer,
    batch: usize,
    rows: HashMap<Row, u32>,
    locs: Vec<Loc>,
    keys: Vec<(LocKey, FrameAddress)>,
    mismatches: Vec<String>,
}

/// What the batches found: the row locations, what each was interned as (its first
/// address), and the files whose build-id differs from the recorded one (sorted).
pub type Found = (Vec<Loc>, Vec<(LocKey, FrameAddress)>, Vec<String>);

impl<'s> RowLocs<'s> {
    /// Row locations symbolized by `symbolizer`, `batch` distinct addresses at a time (at
    /// least one).
    pub fn new(symbolizer: &'s Symbolizer, batch: usize) -> RowLocs<'s> {
        RowLocs {
            symbolizer,
            batch: batch.max(1),
            rows: HashMap::new(),
            locs: Vec::new(),
            keys: Vec::new(),
            mismatches: Vec::new(),
        }
    }

    /// Distinct addresses per batch.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Symbolizes a batch of locations (as the converter interned them, with the address
    /// spaces they were found in) and returns the row location id of each, in order, with
    /// the file offsets around it that fall in the same row ([`Loc::span`]: the addresses
    /// its symbol covers, which name the same row as it does).
    pub fn resolve(
        &mut self,
        maps: &AddressSpaces,
        keys: &[(LocKey, FrameAddress)],
    ) -> Vec<(u32, Option<(u64, u64)>)> {
        if keys.is_empty() {
            return Vec::new();
        }
        let (locs, mismatches) = self.symbolizer.symbolize(maps, keys);
        for m in mismatches {
            if !self.mismatches.contains(&m) {
                self.mismatches.push(m);
            }
        }
        locs.into_iter()
            .zip(keys)
            .map(|(l, &key)| {
                let next = self.locs.len() as u32;
                let span = l.span;
                let id = *self.rows.entry(Row::of(&l)).or_insert(next);
                if id == next {
                    self.locs.push(l);
                    self.keys.push(key);
                }
                (id, span)
            })
            .collect()
    }

    /// The row locations found, in the order first met.
    pub fn finish(mut self) -> Found {
        self.mismatches.sort();
        (self.locs, self.keys, self.mismatches)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::analysis::hist::{self, HistOptions, SortKey, Table};
    use crate::analysis::profile::{FoldKeys, Profile, ProfileOptions};
    use crate::analysis::replay;
    use crate::recording::Recording;

    /// The checked-in recordings without call chains, read with their `--symfs` tree (as
    /// tests/recordings.rs reads them).
    fn profile(name: &str, fold: FoldKeys, threads: usize) -> Profile {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
        let rec = Recording::open(&dir.join(name)).unwrap();
        let mut o = ProfileOptions {
            symfs: Some(dir.join("root")),
            threads,
            symbols_only: true,
            fold,
            ..ProfileOptions::default()
        };
        o.search.build_id_cache = None;
        replay::build(&rec, &o, &mut |_| {})
    }

    /// A table as printed: each row's cells and counts, in order.
    fn rows(t: &Table) -> Vec<(Vec<String>, u64, u64)> {
        t.rows
            .iter()
            .map(|r| (r.key.clone(), r.samples, r.period))
            .collect()
    }

    fn tables(p: &Profile, o: &HistOptions) -> Vec<Vec<(Vec<String>, u64, u64)>> {
        hist::tables(p, o).iter().map(rows).collect()
    }

    #[test]
    fn rows_in_batches_give_the_tables_of_every_address_kept() {
        let sorts: [&[SortKey]; 4] = [
            &[SortKey::Comm, SortKey::Dso, SortKey::Sym],
            &[SortKey::Tid, SortKey::Sym],
            &[SortKey::Pid, SortKey::Cpu, SortKey::Dso],
            &[SortKey::Sym],
        ];
        for name in ["plain.perf.data", "plain.hrec"] {
            let all = profile(name, FoldKeys::ALL, 1);
            assert!(all.locs.len() > 10, "{name}: {} locations", all.locs.len());
            for sort in sorts {
                let o = HistOptions {
                    sort: sort.to_vec(),
                    ..HistOptions::default()
                };
                let want = tables(&all, &o);
                assert!(want[0].len() >= 2, "{name} {sort:?}: {want:?}");
                for batch in [1, 2, 7, FoldKeys::ROW_BATCH] {
                    for threads in [1, 2] {
                        let fold = FoldKeys {
                            rows: Some(batch),
                            ..hist::fold_keys(&o)
                        };
                        let p = profile(name, fold, threads);
                        let why = format!("{name} {sort:?} batch {batch} threads {threads}");
                        assert_eq!(tables(&p, &o), want, "{why}");
                        assert_eq!(p.total_samples, all.total_samples, "{why}");
                        assert_eq!(p.resolution.resolved, all.resolution.resolved, "{why}");
                        // One location per symbol (`hot`, `warm`, and the rest), not per
                        // address.
                        assert!(p.locs.len() < all.locs.len() / 2, "{why}");
                        assert_eq!(p.sites.keys.len(), p.locs.len(), "{why}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_sort_by_thread_keeps_the_threads_apart() {
        let o = HistOptions {
            sort: vec![SortKey::Tid, SortKey::Sym],
            ..HistOptions::default()
        };
        let keys = hist::fold_keys(&o);
        assert!(keys.tid && !keys.cpu && keys.rows.is_some());
        let p = profile("plain.perf.data", keys, 2);
        let t = tables(&p, &o);
        let tids: std::collections::BTreeSet<&str> = t[0].iter().map(|r| r.0[0].as_str()).collect();
        assert_eq!(tids.len(), 2, "{t:?}");
        // Without the thread in the key, one row per symbol.
        let by_sym = HistOptions {
            sort: vec![SortKey::Sym],
            ..HistOptions::default()
        };
        let merged = profile("plain.perf.data", hist::fold_keys(&by_sym), 2);
        assert!(merged.groups.len() < p.groups.len());
        let syms = tables(&merged, &by_sym);
        assert_eq!(syms[0].len(), t[0].len() / 2, "{syms:?} {t:?}");
        assert_eq!(
            syms[0].iter().map(|r| r.1).sum::<u64>(),
            t[0].iter().map(|r| r.1).sum::<u64>()
        );
    }
}
