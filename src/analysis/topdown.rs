//! TopDown per code location, from the group reads of a slots-led sampling-read group.
//!
//! **Why deltas.** With `PERF_SAMPLE_READ` every sample carries the *cumulative* counts of
//! the whole group (`slots`, `topdown-retiring`, `topdown-bad-spec`, ...). What happened
//! since the previous sample of the same counter is the difference between the two reads,
//! and that interval ends at the sampled instruction, so the delta is attributed to the
//! sample's location (perf's `--group`/`PERF_SAMPLE_READ` rule).
//!
//! **Why deltas are keyed by thread.** With `inherit`, every thread of the workload has its
//! own copy of the group, counting only that thread, but its samples carry the *parent's*
//! event id. Two threads' reads are therefore two unrelated running totals under one id; a
//! delta across them would be garbage (even negative). The previous read is looked up by
//! `(tid, id)` when the event inherits, and by `id` alone otherwise (a per-CPU or per-thread
//! fd whose counter is its own).
//!
//! **Why normalise by the L1 sum.** The kernel reports each `topdown-*` value in slots (the
//! PERF_METRICS fraction times `slots`), and rounding means the four level-1 values do not
//! add up exactly to `slots`. perf divides each by the sum of the four, so the level-1
//! percentages add up to 100; hrec does the same. Level 2 splits each level-1 category using
//! the four level-2 events by subtraction: Light Operations = Retiring − Heavy Operations,
//! Machine Clears = Bad Speculation − Branch Mispredicts, Fetch Bandwidth = Frontend Bound −
//! Fetch Latency, Core Bound = Backend Bound − Memory Bound.

use crate::decode::ReadValues;

/// A TopDown event of the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TdEvent {
    /// `slots`: the group leader, total issue slots.
    Slots = 0,
    /// `topdown-retiring`.
    Retiring = 1,
    /// `topdown-bad-spec`.
    BadSpec = 2,
    /// `topdown-fe-bound`.
    FeBound = 3,
    /// `topdown-be-bound`.
    BeBound = 4,
    /// `topdown-heavy-ops` (level 2).
    HeavyOps = 5,
    /// `topdown-br-mispredict` (level 2).
    BrMispredict = 6,
    /// `topdown-fetch-lat` (level 2).
    FetchLat = 7,
    /// `topdown-mem-bound` (level 2).
    MemBound = 8,
}

impl TdEvent {
    /// The TopDown event an event name (`slots`, `cpu_core/topdown-retiring/`,
    /// `topdown-be-bound:u`) names.
    pub fn from_name(name: &str) -> Option<TdEvent> {
        let base = crate::event::base_name(name);
        Some(match base {
            "slots" => TdEvent::Slots,
            "topdown-retiring" => TdEvent::Retiring,
            "topdown-bad-spec" => TdEvent::BadSpec,
            "topdown-fe-bound" => TdEvent::FeBound,
            "topdown-be-bound" => TdEvent::BeBound,
            "topdown-heavy-ops" => TdEvent::HeavyOps,
            "topdown-br-mispredict" => TdEvent::BrMispredict,
            "topdown-fetch-lat" => TdEvent::FetchLat,
            "topdown-mem-bound" => TdEvent::MemBound,
            _ => return None,
        })
    }
}

/// Level-1 labels, perf's wording, in [`TdCounts::level1`] order.
pub const L1_LABELS: [&str; 4] = [
    "Retiring",
    "Bad Speculation",
    "Frontend Bound",
    "Backend Bound",
];

/// Level-2 labels in [`TdCounts::level2`] order.
pub const L2_LABELS: [&str; 8] = [
    "Heavy Operations",
    "Light Operations",
    "Branch Mispredicts",
    "Machine Clears",
    "Fetch Latency",
    "Fetch Bandwidth",
    "Memory Bound",
    "Core Bound",
];

/// Slot counts attributed to a location, indexed by [`TdEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TdCounts(pub [u64; 9]);

impl TdCounts {
    /// Adds another location's counts.
    pub fn add(&mut self, o: &TdCounts) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }

    /// One event's slots.
    pub fn get(&self, e: TdEvent) -> u64 {
        self.0[e as usize]
    }

    /// The sum of the four level-1 values.
    pub fn l1_sum(&self) -> u64 {
        self.0[1..5].iter().sum()
    }

    /// Level-1 percentages (each of the four divided by their sum); `None` with no slots.
    pub fn level1(&self) -> Option<[f64; 4]> {
        let sum = self.l1_sum();
        (sum > 0).then(|| std::array::from_fn(|i| 100.0 * self.0[1 + i] as f64 / sum as f64))
    }

    /// Level-2 percentages of all slots, by subtraction from level 1; `None` with no slots
    /// or when the group had no level-2 events (all four zero while level 1 is not).
    pub fn level2(&self) -> Option<[f64; 8]> {
        let sum = self.l1_sum();
        if sum == 0 || self.0[5..9].iter().all(|&v| v == 0) {
            return None;
        }
        let pct = |v: u64| 100.0 * v as f64 / sum as f64;
        let split = |whole: TdEvent, part: TdEvent| {
            let (w, p) = (self.get(whole), self.get(part));
            [pct(p.min(w)), pct(w.saturating_sub(p))]
        };
        let [a, b] = split(TdEvent::Retiring, TdEvent::HeavyOps);
        let [c, d] = split(TdEvent::BadSpec, TdEvent::BrMispredict);
        let [e, f] = split(TdEvent::FeBound, TdEvent::FetchLat);
        let [g, h] = split(TdEvent::BeBound, TdEvent::MemBound);
        Some([a, b, c, d, e, f, g, h])
    }

    /// The dominant level-1 category (index into [`L1_LABELS`]) and its share.
    pub fn dominant(&self) -> Option<(usize, f64)> {
        let l1 = self.level1()?;
        let (i, v) = l1
            .iter()
            .enumerate()
            .fold((0, f64::MIN), |b, (i, &v)| if v > b.1 { (i, v) } else { b });
        Some((i, v))
    }
}

/// The previous group read of every counter, to turn cumulative reads into deltas.
#[derive(Debug, Default)]
pub struct DeltaTracker {
    prev: super::FastMap<(u32, u64), Vec<u64>>,
    /// Samples whose group read showed `time_running < time_enabled` (multiplexed).
    pub multiplexed: u64,
    /// Samples whose read went backwards (a counter reset); the new value counts as the delta.
    pub resets: u64,
}

impl DeltaTracker {
    /// Empty.
    pub fn new() -> DeltaTracker {
        DeltaTracker::default()
    }

    /// The slots each TopDown member added since the previous sample with the same key.
    /// `tid` is `Some` when the event inherits (values are per thread); `kind_of` maps a
    /// member id to its TopDown event. `None` when the read has no TopDown member.
    pub fn delta(
        &mut self,
        tid: Option<u32>,
        id: u64,
        read: &ReadValues<'_>,
        kind_of: impl Fn(u64) -> Option<TdEvent>,
    ) -> Option<TdCounts> {
        if let (Some(e), Some(r)) = (read.time_enabled, read.time_running)
            && r < e
        {
            self.multiplexed += 1;
        }
        let key = (tid.unwrap_or(u32::MAX), id);
        let prev = self.prev.entry(key).or_default();
        prev.resize(read.len(), 0);
        let mut out = TdCounts::default();
        let mut any = false;
        for (i, entry) in read.iter().enumerate() {
            let before = prev[i];
            let d = if entry.value >= before {
                entry.value - before
            } else {
                self.resets += 1;
                entry.value
            };
            prev[i] = entry.value;
            if let Some(k) = entry.id.and_then(&kind_of) {
                out.0[k as usize] += d;
                any = true;
            }
        }
        any.then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group read (TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING | ID | GROUP) in the kernel layout.
    fn group(enabled: u64, running: u64, values: &[(u64, u64)]) -> Vec<u8> {
        let mut w = vec![values.len() as u64, enabled, running];
        for &(v, id) in values {
            w.extend([v, id]);
        }
        w.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn deltas_per_key_resets_and_multiplexing() {
        let kind = |id: u64| match id {
            1 => Some(TdEvent::Slots),
            2 => Some(TdEvent::Retiring),
            _ => None,
        };
        let rf = 1 | 2 | 4 | 8;
        let mut t = DeltaTracker::new();
        let b = group(10, 10, &[(100, 1), (40, 2), (7, 9)]);
        let r = ReadValues::from_read(&b, rf).unwrap();
        let d = t.delta(Some(5), 77, &r, kind).unwrap();
        assert_eq!((d.get(TdEvent::Slots), d.get(TdEvent::Retiring)), (100, 40));
        // Same key: the difference. Another thread: its own running total from zero.
        let b = group(20, 15, &[(250, 1), (100, 2), (9, 9)]);
        let r = ReadValues::from_read(&b, rf).unwrap();
        let d = t.delta(Some(5), 77, &r, kind).unwrap();
        assert_eq!((d.get(TdEvent::Slots), d.get(TdEvent::Retiring)), (150, 60));
        let d = t.delta(Some(6), 77, &r, kind).unwrap();
        assert_eq!(d.get(TdEvent::Slots), 250);
        assert_eq!(t.multiplexed, 2);
        // A read that went backwards counts from zero and is reported.
        let b = group(30, 30, &[(20, 1), (5, 2), (9, 9)]);
        let r = ReadValues::from_read(&b, rf).unwrap();
        let d = t.delta(Some(5), 77, &r, kind).unwrap();
        assert_eq!(d.get(TdEvent::Slots), 20);
        assert_eq!(t.resets, 2);
        // A group without TopDown members gives nothing.
        assert!(t.delta(None, 78, &r, |_| None).is_none());
    }

    #[test]
    fn names_with_pmu_and_modifiers() {
        assert_eq!(TdEvent::from_name("slots"), Some(TdEvent::Slots));
        assert_eq!(
            TdEvent::from_name("cpu_core/topdown-retiring/"),
            Some(TdEvent::Retiring)
        );
        assert_eq!(
            TdEvent::from_name("topdown-be-bound:u"),
            Some(TdEvent::BeBound)
        );
        assert_eq!(
            TdEvent::from_name("cpu/topdown-mem-bound/k"),
            Some(TdEvent::MemBound)
        );
        assert_eq!(TdEvent::from_name("cycles:P"), None);
        assert_eq!(TdEvent::from_name("cpu_core/cycles/"), None);
    }

    #[test]
    fn level1_is_normalised_by_the_sum_and_level2_split_by_subtraction() {
        // slots 1000 but the four L1 values add up to 800: percentages are of 800.
        let c = TdCounts([1000, 400, 80, 120, 200, 100, 60, 90, 150]);
        assert_eq!(c.level1().unwrap(), [50.0, 10.0, 15.0, 25.0]);
        assert_eq!(
            c.level2().unwrap(),
            [12.5, 37.5, 7.5, 2.5, 11.25, 3.75, 18.75, 6.25]
        );
        assert_eq!(c.dominant(), Some((0, 50.0)));
        assert_eq!(TdCounts::default().level1(), None);
        assert_eq!(TdCounts([10, 1, 1, 1, 1, 0, 0, 0, 0]).level2(), None);
    }
}
