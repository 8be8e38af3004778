//! The folder: batches of pending locations fold as folding at once does.
use super::*;
use crate::testutil::view;

/// Samples as `(tid, address, TopDown slots, retire latency)`: rows are `address / 10`.
const SAMPLES: [(u32, u32, u64, u16); 12] = [
    (1, 13, 5, 30),
    (2, 27, 0, 0),
    (1, 15, 7, 30),
    (1, 41, 1, 12),
    (2, 13, 2, 30),
    (2, 22, 0, 7),
    (1, 45, 3, 0),
    (1, 13, 4, 12),
    (2, 99, 9, 99),
    (1, 27, 0, 0),
    (2, 46, 6, 7),
    (1, 21, 8, 30),
];

fn sample(tid: u32, leaf: u32, td: u64, lat: u16) -> SampleView<'static> {
    let mut v = view(0, leaf, &[], 10 + u64::from(lat));
    v.tid = tid;
    v.cpu = tid % 2;
    v.callchain = false;
    v.td = (td > 0).then(|| TdCounts::pcore([td, td, 0, 0, 0, 0, 0, 0, 0]));
    v.retire_lat = (lat > 0).then_some(lat);
    v
}

fn events() -> Vec<EventInfo> {
    vec![EventInfo {
        name: "cycles".into(),
        ..EventInfo::default()
    }]
}

/// A group's thread, leaf, samples, period, TopDown sum, TopDown samples and latencies.
type Said = (u32, u32, u64, u64, Option<TdCounts>, u64, Option<LatHist>);

/// What a profile's groups say, comparable across foldings.
fn groups(p: &Profile) -> Vec<Said> {
    p.groups
        .iter()
        .map(|g| {
            (
                g.tid,
                g.leaf,
                g.samples,
                g.period,
                p.td(g).copied(),
                g.td_samples,
                p.latency(g).cloned(),
            )
        })
        .collect()
}

/// Folds the samples with every address its row location given up front (rows numbered
/// in the order first met).
fn fold_at_once(keys: FoldKeys) -> Profile {
    let mut rows: Vec<u32> = Vec::new();
    let mut f = Folder::new(events(), false).with_keys(keys);
    for &(tid, addr, td, lat) in &SAMPLES {
        let row = addr / 10;
        let id = match rows.iter().position(|&r| r == row) {
            Some(i) => i as u32,
            None => {
                rows.push(row);
                rows.len() as u32 - 1
            }
        };
        f.add(&sample(tid, id, td, lat));
    }
    f.finish()
}

/// Folds the samples as the converter hands them over with rows in batches of `batch`
/// distinct addresses: pending ids, resolved when a batch is full (before the sample that
/// would start the next), remembered or forgotten (`remember`) afterwards.
fn fold_in_batches(keys: FoldKeys, batch: usize, remember: bool) -> Profile {
    let mut rows: Vec<u32> = Vec::new();
    let mut known: Vec<(u32, u32)> = Vec::new();
    let mut pending: Vec<u32> = Vec::new();
    let mut f = Folder::new(events(), false).with_keys(keys);
    let mut resolve = |pending: &mut Vec<u32>, known: &mut Vec<(u32, u32)>| -> Vec<u32> {
        let ids: Vec<u32> = pending
            .iter()
            .map(|&addr| {
                let row = addr / 10;
                match rows.iter().position(|&r| r == row) {
                    Some(i) => i as u32,
                    None => {
                        rows.push(row);
                        rows.len() as u32 - 1
                    }
                }
            })
            .collect();
        known.retain(|&(_, id)| id & PENDING == 0);
        if remember {
            known.extend(pending.iter().copied().zip(ids.iter().copied()));
        } else {
            known.clear();
        }
        pending.clear();
        ids
    };
    for &(tid, addr, td, lat) in &SAMPLES {
        if pending.len() >= batch {
            let ids = resolve(&mut pending, &mut known);
            f.remap(&ids);
        }
        let id = match known.iter().find(|k| k.0 == addr) {
            Some(&(_, id)) => id,
            None => {
                pending.push(addr);
                let id = PENDING | (pending.len() as u32 - 1);
                known.push((addr, id));
                id
            }
        };
        f.add(&sample(tid, id, td, lat));
    }
    let ids = resolve(&mut pending, &mut known);
    f.remap(&ids);
    f.finish()
}

#[test]
fn folding_in_batches_gives_the_groups_of_folding_at_once() {
    for keys in [
        FoldKeys::ALL,
        FoldKeys {
            tid: false,
            cpu: false,
            ..FoldKeys::ALL
        },
    ] {
        let want = fold_at_once(keys);
        for batch in [1, 2, 3, 5, 100] {
            for remember in [true, false] {
                let got = fold_in_batches(keys, batch, remember);
                assert_eq!(
                    groups(&got),
                    groups(&want),
                    "batch {batch} {remember} {keys:?}"
                );
                assert_eq!(got.total_samples, 12);
                assert_eq!(got.events[0].samples, 12);
                assert_eq!(got.events[0].topdown_samples, 9);
            }
        }
    }
    // By thread: rows 1 and 2 of thread 1, in the order first met, with their sums.
    let p = fold_at_once(FoldKeys::ALL);
    let g = groups(&p);
    assert_eq!(g.len(), 7);
    assert_eq!(g[0].0, 1);
    assert_eq!(g[0].1, 0);
    assert_eq!(g[0].2, 3);
    assert_eq!(g[0].3, 40 + 40 + 22);
    assert_eq!(g[0].4.map(|t| t.0[0]), Some(5 + 7 + 4));
    assert_eq!(g[0].5, 3);
    let lat = p.latency(&p.groups[0]).map(LatHist::count);
    assert_eq!(lat, Some(3));
}

#[test]
fn a_fold_without_threads_merges_them_and_keeps_the_first_samples_thread() {
    let keys = FoldKeys {
        tid: false,
        cpu: false,
        ..FoldKeys::ALL
    };
    let p = fold_in_batches(keys, 1, false);
    let g = groups(&p);
    // One group per row (1, 2, 4, 9), in the order first met, each with the thread of
    // its first sample.
    assert_eq!(
        g.iter().map(|g| (g.0, g.1, g.2)).collect::<Vec<_>>(),
        vec![(1, 0, 4), (2, 1, 4), (1, 2, 3), (2, 3, 1)]
    );
    assert_eq!(p.groups[1].cpu, 0);
    // Kept apart, the two threads of row 1 are two groups.
    let by_tid = fold_in_batches(FoldKeys::ALL, 1, false);
    let of_row_1: Vec<u32> = by_tid
        .groups
        .iter()
        .filter(|g| g.leaf == 0)
        .map(|g| g.tid)
        .collect();
    assert_eq!(of_row_1, vec![1, 2]);
}

/// The physical data address keeps memory accesses apart only when a key reads it
/// (`phys_daddr`): then each address is an access of its own, with its address.
#[test]
fn physical_addresses_fold_apart_only_when_kept() {
    let fold = |phys: bool| {
        let keys = FoldKeys {
            mem: MemFold {
                weight: true,
                phys,
                ..MemFold::default()
            },
            ..FoldKeys::ALL
        };
        let mut f = Folder::new(events(), false).with_keys(keys);
        for (i, phys_addr) in [0x1000u64, 0x2000, 0x1000].into_iter().enumerate() {
            let mut v = sample(1, 0, 0, 0);
            v.mem = Some(MemView {
                weight: 7,
                phys_addr,
                ..MemView::default()
            });
            v.time = i as u64;
            f.add(&v);
        }
        f.finish()
    };
    let p = fold(true);
    let phys: Vec<u64> = p.mems.iter().map(|m| m.phys_addr).collect();
    assert_eq!(phys, [0x1000, 0x2000]);
    assert_eq!(p.mems.len(), 2);
    let samples: Vec<u64> = p.groups.iter().map(|g| g.samples).collect();
    assert_eq!(samples, [2, 1]);
    let p = fold(false);
    assert_eq!(p.mems.iter().map(|m| m.phys_addr).collect::<Vec<_>>(), [0]);
    assert_eq!(p.groups.iter().map(|g| g.samples).sum::<u64>(), 3);
    assert_eq!(p.groups.len(), 1);
}
