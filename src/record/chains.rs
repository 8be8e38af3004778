//! The recorder's check of `-g` (frame-pointer) call chains: how many reach addresses outside
//! any mapping of their process ([`crate::unwind::fp`] has the rule), for the one warning
//! after the summary.
//!
//! It keeps what it needs of each process's address space, the address ranges of its
//! MMAP/MMAP2 records (data mappings left out, as `symbol::maps` does), as the drain loop
//! moves them: a FORK of a new process copies its parent's, an exec (COMM with `COMM_EXEC`)
//! empties it, the exit of its main thread drops it. Only membership matters, so a process is
//! a sorted list of disjoint ranges: a mapping that replaces part of another covers the same
//! addresses as the two did.
//!
//! Records reach the drain loop per CPU, one buffer after the other, so within one drain pass
//! they are not in time order: a process's FORK can come after its exec and MMAPs (read from
//! another CPU's buffer later), and a sample before the MMAP it depends on. The side-band
//! records of a pass are therefore applied when the pass ends ([`ChainMaps::end_pass`]),
//! sorted by time (a record older than one drained from another buffer in the same pass is
//! always drained in that pass too, as every buffer is read to its head). Samples are looked
//! at as they come, against the mappings known up to the previous pass; a chain that reaches
//! an unknown address, or whose process is not known yet, is copied and looked at again once
//! the pass's records are applied. The chains of a sound recording seldom wait. Exits are
//! applied last, so the samples a thread took just before its process ended still find its
//! mappings. Samples of a process whose mappings are still unknown then are left out, as the
//! report leaves them out.

use std::collections::HashMap;

use crate::decode::{kind, misc};
use crate::unwind::fp::{self, FpChains, Reach};

/// The address ranges of each process, and the chains waiting for the end of the pass.
#[derive(Debug, Clone, Default)]
pub struct ChainMaps {
    procs: HashMap<u32, Vec<(u64, u64)>>,
    /// Chains that reached an unknown address, or of a process not known yet: (pid,
    /// kernel_mode, start, end) of the chain in `words`.
    waiting: Vec<(u32, bool, usize, usize)>,
    words: Vec<u64>,
    /// Processes whose main thread exited in this pass.
    exited: Vec<u32>,
    /// The side-band records of this pass: (time, start, end) in `side_bytes`.
    side: Vec<(u64, usize, usize)>,
    side_bytes: Vec<u8>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The range of `ranges` (sorted, disjoint) that holds `a`.
fn find(ranges: &[(u64, u64)], a: u64) -> Option<(u64, u64)> {
    let i = ranges.partition_point(|&(s, _)| s <= a);
    let r = *ranges.get(i.checked_sub(1)?)?;
    (a < r.1).then_some(r)
}

/// Adds `[start, end)` to sorted disjoint `ranges`, merging what it overlaps or touches.
fn insert(ranges: &mut Vec<(u64, u64)>, start: u64, end: u64) {
    let from = ranges.partition_point(|&(_, e)| e < start);
    let to = ranges.partition_point(|&(s, _)| s <= end);
    if from == to {
        ranges.insert(from, (start, end));
        return;
    }
    let merged = (start.min(ranges[from].0), end.max(ranges[to - 1].1));
    ranges.splice(from..to, [merged]);
}

impl ChainMaps {
    /// Takes a side-band record (`r` is the whole record, header included) with its `time`,
    /// to be applied in time order at the end of the pass; one without a time at once.
    pub fn side_band(&mut self, r: &[u8], time: Option<u64>) {
        match time {
            Some(t) => {
                let start = self.side_bytes.len();
                self.side_bytes.extend_from_slice(r);
                self.side.push((t, start, self.side_bytes.len()));
            }
            None => self.apply(r),
        }
    }

    /// Applies a side-band record; other kinds are ignored.
    fn apply(&mut self, r: &[u8]) {
        let (Some(ty), Some(misc)) = (u32_at(r, 0), r.get(4..6)) else {
            return;
        };
        let misc = u16::from_le_bytes([misc[0], misc[1]]);
        // MMAP and MMAP2 both start with pid, tid, addr, len; FORK and EXIT with pid, ppid,
        // tid; COMM with pid, tid.
        match ty {
            kind::MMAP | kind::MMAP2 if misc & misc::MMAP_DATA == 0 => {
                if let (Some(pid), Some(addr), Some(len)) =
                    (u32_at(r, 8), u64_at(r, 16), u64_at(r, 24))
                    && pid != u32::MAX
                    && len > 0
                {
                    let ranges = self.procs.entry(pid).or_default();
                    insert(ranges, addr, addr.saturating_add(len));
                }
            }
            kind::COMM if misc & misc::COMM_EXEC != 0 => {
                if let (Some(pid), Some(tid)) = (u32_at(r, 8), u32_at(r, 12))
                    && pid == tid
                {
                    self.procs.remove(&pid);
                }
            }
            kind::FORK => {
                if let (Some(pid), Some(ppid)) = (u32_at(r, 8), u32_at(r, 12))
                    && pid != ppid
                    && let Some(parent) = self.procs.get(&ppid).cloned()
                {
                    self.procs.insert(pid, parent);
                }
            }
            kind::EXIT => {
                if let (Some(pid), Some(tid)) = (u32_at(r, 8), u32_at(r, 16))
                    && pid == tid
                {
                    self.exited.push(pid);
                }
            }
            _ => {}
        }
    }

    /// Looks at the call chain of a sample of process `pid` (`kernel_mode`: its cpumode) and
    /// counts it in `counts`, or holds it to the end of the pass when it reaches an address
    /// not mapped yet or its process is not known yet.
    pub fn sample(
        &mut self,
        pid: u32,
        chain: crate::decode::Callchain<'_>,
        kernel_mode: bool,
        counts: &mut FpChains,
    ) {
        if let Some(ranges) = self.procs.get(&pid) {
            let r = fp::reach(chain.iter(), kernel_mode, |a| find(ranges, a));
            if !matches!(r, Reach::Outside(_)) {
                counts.add(r);
                return;
            }
        }
        let start = self.words.len();
        self.words.extend(chain.iter());
        self.waiting
            .push((pid, kernel_mode, start, self.words.len()));
    }

    /// The end of a drain pass: the pass's side-band records are applied in time order, the
    /// waiting chains counted against the result, then the exits of the pass applied.
    pub fn end_pass(&mut self, counts: &mut FpChains) {
        let mut side = std::mem::take(&mut self.side);
        let bytes = std::mem::take(&mut self.side_bytes);
        // Stable: records of one time keep the order they were drained in.
        side.sort_by_key(|&(t, _, _)| t);
        for &(_, a, b) in &side {
            self.apply(&bytes[a..b]);
        }
        side.clear();
        self.side = side;
        self.side_bytes = bytes;
        self.side_bytes.clear();
        for &(pid, kernel_mode, a, b) in &self.waiting {
            // Samples of a process whose mappings are unknown are left out (its maps could
            // not be read, or it exec'd again before the pass ended).
            if let Some(ranges) = self.procs.get(&pid) {
                let chain = self.words[a..b].iter().copied();
                counts.add(fp::reach(chain, kernel_mode, |x| find(ranges, x)));
            }
        }
        self.waiting.clear();
        self.words.clear();
        for pid in self.exited.drain(..) {
            self.procs.remove(&pid);
        }
    }

    /// Processes whose mappings are known.
    pub fn processes(&self) -> usize {
        self.procs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{U64s, context};

    fn rec(ty: u32, misc: u16, body: &[u64]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&ty.to_le_bytes());
        v.extend_from_slice(&misc.to_le_bytes());
        v.extend_from_slice(&((8 + 8 * body.len()) as u16).to_le_bytes());
        for w in body {
            v.extend_from_slice(&w.to_le_bytes());
        }
        v
    }

    fn pair(lo: u32, hi: u32) -> u64 {
        u64::from(lo) | (u64::from(hi) << 32)
    }

    fn mmap(pid: u32, addr: u64, len: u64) -> Vec<u8> {
        // pid/tid, addr, len, pgoff, then a file name.
        rec(
            kind::MMAP2,
            0,
            &[pair(pid, pid), addr, len, 0, 0, 0, 0, 0, 0, 0x2f],
        )
    }

    fn words(v: &[u64]) -> Vec<u8> {
        v.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn check(m: &mut ChainMaps, pid: u32, chain: &[u64], c: &mut FpChains) {
        let b = words(chain);
        m.sample(pid, U64s::new(&b), false, c);
    }

    const U: u64 = context::USER;

    #[test]
    fn ranges_merge_and_are_found() {
        let mut r = Vec::new();
        insert(&mut r, 0x3000, 0x4000);
        insert(&mut r, 0x1000, 0x2000);
        insert(&mut r, 0x6000, 0x7000);
        assert_eq!(r, [(0x1000, 0x2000), (0x3000, 0x4000), (0x6000, 0x7000)]);
        insert(&mut r, 0x1800, 0x3800);
        assert_eq!(r, [(0x1000, 0x4000), (0x6000, 0x7000)]);
        insert(&mut r, 0x4000, 0x5000);
        assert_eq!(r, [(0x1000, 0x5000), (0x6000, 0x7000)]);
        insert(&mut r, 0x0, 0x8000);
        assert_eq!(r, [(0x0, 0x8000)]);
        assert_eq!(find(&r, 0x7fff), Some((0, 0x8000)));
        assert_eq!(find(&r, 0x8000), None);
        let r = [(0x1000, 0x2000), (0x3000, 0x4000)];
        assert_eq!(find(&r, 0xfff), None);
        assert_eq!(find(&r, 0x2000), None);
        assert_eq!(find(&r, 0x3000), Some((0x3000, 0x4000)));
    }

    #[test]
    fn a_chain_waits_for_the_mappings_of_its_pass() {
        let mut m = ChainMaps::default();
        let mut c = FpChains::default();
        m.side_band(&mmap(7, 0x1000, 0x1000), None);
        // Garbage: counted at the end of the pass.
        check(&mut m, 7, &[U, 0x1010, 0x1020, 0x30], &mut c);
        // A library whose MMAP comes later in the same pass (another CPU's buffer).
        check(&mut m, 7, &[U, 0x1010, 0x9010, 0x1020], &mut c);
        // Sound, at once.
        check(&mut m, 7, &[U, 0x1010, 0x1020], &mut c);
        // A process not known yet waits too, and is left out if it stays unknown.
        check(&mut m, 8, &[U, 0x1010, 0x30], &mut c);
        check(&mut m, 9, &[U, 0x1010, 0x1020], &mut c);
        assert_eq!(
            c,
            FpChains {
                chains: 1,
                outside: 0
            }
        );
        m.side_band(&mmap(7, 0x9000, 0x1000), None);
        // FORK: pid, ppid, tid, ptid, time.
        m.side_band(&rec(kind::FORK, 0, &[pair(9, 7), pair(9, 7), 0]), None);
        m.end_pass(&mut c);
        assert_eq!(
            c,
            FpChains {
                chains: 4,
                outside: 1
            }
        );
    }

    #[test]
    fn fork_copies_exec_empties_and_exit_drops_after_the_pass() {
        let mut m = ChainMaps::default();
        let mut c = FpChains::default();
        m.side_band(&mmap(7, 0x1000, 0x1000), None);
        // A data mapping is not code.
        m.side_band(
            &rec(
                kind::MMAP2,
                misc::MMAP_DATA,
                &[pair(7, 7), 0x5000, 0x1000, 0, 0, 0, 0, 0, 0, 0],
            ),
            None,
        );
        // FORK: pid, ppid, tid, ptid, time.
        m.side_band(&rec(kind::FORK, 0, &[pair(9, 7), pair(9, 7), 0]), None);
        check(&mut m, 9, &[U, 0x1010, 0x1020, 0x5010], &mut c);
        // A thread exits: its process keeps its mappings.
        m.side_band(&rec(kind::EXIT, 0, &[pair(9, 7), pair(10, 7), 0]), None);
        m.end_pass(&mut c);
        assert_eq!(
            c,
            FpChains {
                chains: 1,
                outside: 1
            }
        );
        assert_eq!(m.processes(), 2);
        // exec: the old image is gone until the new one's MMAPs.
        m.side_band(
            &rec(kind::COMM, misc::COMM_EXEC, &[pair(9, 9), 0x6873]),
            None,
        );
        assert_eq!(m.processes(), 1);
        // The main thread exits: still there for the rest of the pass.
        m.side_band(&rec(kind::EXIT, 0, &[pair(7, 1), pair(7, 1), 0]), None);
        check(&mut m, 7, &[U, 0x1010, 0x1020], &mut c);
        m.end_pass(&mut c);
        assert_eq!(
            c,
            FpChains {
                chains: 2,
                outside: 1
            }
        );
        assert_eq!(m.processes(), 0);
    }

    #[test]
    fn a_pass_applies_its_records_in_time_order() {
        let mut m = ChainMaps::default();
        let mut c = FpChains::default();
        // The parent (time 1) and, from one CPU's buffer, its child's exec and new image
        // (times 3 and 4); from another CPU's buffer, drained later, the FORK (time 2).
        m.side_band(&mmap(7, 0x1000, 0x1000), Some(1));
        m.side_band(
            &rec(kind::COMM, misc::COMM_EXEC, &[pair(9, 9), 0x6873]),
            Some(3),
        );
        m.side_band(&mmap(9, 0x4000, 0x1000), Some(4));
        m.side_band(&rec(kind::FORK, 0, &[pair(9, 7), pair(9, 7), 2]), Some(2));
        // Nothing is applied before the pass ends: both processes' chains wait.
        check(&mut m, 7, &[U, 0x1010, 0x1020], &mut c);
        check(&mut m, 9, &[U, 0x4010, 0x4020], &mut c);
        assert_eq!(m.processes(), 0);
        m.end_pass(&mut c);
        // The child runs its new image, not its parent's.
        assert_eq!(
            c,
            FpChains {
                chains: 2,
                outside: 0
            }
        );
        check(&mut m, 9, &[U, 0x4010, 0x1020], &mut c);
        m.end_pass(&mut c);
        assert_eq!(
            c,
            FpChains {
                chains: 3,
                outside: 1
            }
        );
    }

    #[test]
    fn cut_records_are_ignored() {
        let mut m = ChainMaps::default();
        let r = mmap(7, 0x1000, 0x1000);
        for n in 0..r.len() {
            m.side_band(&r[..n], None);
        }
        assert!(m.processes() <= 1);
    }
}
