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
//!
//! **E-cores.** An E-core has no `slots` and no perf metrics: its group is led by the cycles
//! sampler with Intel's level-1 events as counting members ([`crate::pmu::uarch`]). The
//! interval's slots are `width x` the cycles delta, and each category is its count divided by
//! those slots, as Intel's E-core TMA computes it (the four need not add up to 100: there is
//! no normalising by their sum); on Gracemont Bad Speculation is the remainder
//! `slots - (FE + BE + RET)` of the summed counts. The members' roles come from their PMU
//! and encoding, never from their names ([`roles`]): the kernel's `cpu_atom/topdown-*`
//! aliases are not always the core's TopDown events (Meteor Lake's retiring alias is
//! Gracemont's code), and perf names them either way.

use std::collections::HashMap;

use crate::data::{Meta, Role};
use crate::decode::ReadValues;
use crate::event::Attr;
use crate::pmu::uarch::{self, CpuId, TdCategory};

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

/// Slot counts attributed to a location, indexed by [`TdEvent`]; then, for E-core groups,
/// the slots (`width x` cycles) at [`TdCounts::ECORE_SLOTS`] and, where Bad Speculation is
/// the remainder, the same slots again at [`TdCounts::REMAINDER_SLOTS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TdCounts(pub [u64; 11]);

impl TdCounts {
    /// Index of an E-core group's slots (`width x` cycles): Intel's denominator.
    pub const ECORE_SLOTS: usize = 9;
    /// Index of the slots of E-core groups whose Bad Speculation is the remainder.
    pub const REMAINDER_SLOTS: usize = 10;

    /// P-core counts in [`TdEvent`] order (slots, four level-1, four level-2).
    pub fn pcore(v: [u64; 9]) -> TdCounts {
        let mut c = TdCounts::default();
        c.0[..9].copy_from_slice(&v);
        c
    }

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

    /// The slots the level-1 shares are of: an E-core group's `width x` cycles, else the
    /// level-1 sum.
    pub fn slots(&self) -> u64 {
        match self.0[Self::ECORE_SLOTS] {
            0 => self.l1_sum(),
            e => e,
        }
    }

    /// Level-1 percentages in [`L1_LABELS`] order; `None` with no slots. P-core: each of the
    /// four divided by their sum (perf's rule); E-core: each divided by the slots, Bad
    /// Speculation the remainder where the core's formula says so (Intel's E-core TMA).
    pub fn level1(&self) -> Option<[f64; 4]> {
        let e = self.0[Self::ECORE_SLOTS];
        if e > 0 {
            let v = |i: usize| self.0[i] as f64;
            let pct = |x: f64| 100.0 * x / e as f64;
            let (ret, fe, be) = (v(1), v(3), v(4));
            let bad = match self.0[Self::REMAINDER_SLOTS] {
                0 => v(2),
                r => r as f64 - (ret + fe + be),
            };
            return Some([pct(ret), pct(bad), pct(fe), pct(be)]);
        }
        let sum = self.l1_sum();
        (sum > 0).then(|| std::array::from_fn(|i| 100.0 * self.0[1 + i] as f64 / sum as f64))
    }

    /// Level-2 percentages of all slots, by subtraction from level 1; `None` with no slots
    /// or when the group had no level-2 events (all four zero while level 1 is not).
    pub fn level2(&self) -> Option<[f64; 8]> {
        let sum = self.l1_sum();
        if sum == 0 || self.0[5..9].iter().all(|&v| v == 0) || self.0[Self::ECORE_SLOTS] > 0 {
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

/// What a group member's delta adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TdRole {
    /// A TopDown event: its delta adds to that slot count.
    Event(TdEvent),
    /// The cycles sampler leading an E-core group: `width x` its delta are the interval's
    /// slots; `remainder`: Bad Speculation is what the counted categories leave.
    EcoreCycles {
        /// Issue slots per cycle.
        width: u32,
        /// Gracemont's rule.
        remainder: bool,
    },
}

/// The TopDown role of each event id of a recording. A group with a `slots` member is a
/// perf-metrics group and its members are known by name (perf's `topdown-*`); a group led
/// by the cycles sampler of an E-core PMU whose core the recording's cpuid tells, with every
/// counted level-1 event of that core among its members, is an E-core group and its members
/// are known by PMU type and encoding. Any other group has no TopDown.
pub fn roles(meta: &Meta) -> HashMap<u64, TdRole> {
    let cpu = CpuId::parse(&meta.cpuid);
    let mut out = HashMap::new();
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, e) in meta.events.iter().enumerate() {
        match groups.iter_mut().find(|(l, _)| *l == e.leader) {
            Some((_, m)) => m.push(i),
            None => groups.push((e.leader, vec![i])),
        }
    }
    for (_, members) in &groups {
        let by_name: Vec<(usize, TdEvent)> = members
            .iter()
            .filter_map(|&i| Some((i, TdEvent::from_name(&meta.events[i].name)?)))
            .collect();
        let assigned: Vec<(usize, TdRole)> = if by_name.iter().any(|(_, k)| *k == TdEvent::Slots) {
            by_name
                .into_iter()
                .map(|(i, k)| (i, TdRole::Event(k)))
                .collect()
        } else {
            ecore_group(meta, cpu.as_ref(), members).unwrap_or_default()
        };
        for (i, role) in assigned {
            out.extend(meta.events[i].ids.iter().map(|id| (id.id, role)));
        }
    }
    out
}

/// The roles of an E-core group's members, if `members` is one.
fn ecore_group(
    meta: &Meta,
    cpu: Option<&CpuId>,
    members: &[usize],
) -> Option<Vec<(usize, TdRole)>> {
    let sampler = *members
        .iter()
        .find(|&&i| meta.events[i].role == Role::Sampler)?;
    let pmu = meta.events[sampler].pmu.as_deref()?;
    let pmu_type = meta.pmus.iter().find(|p| p.name == pmu)?.type_;
    let kept: Vec<usize> = members
        .iter()
        .copied()
        .filter(|&i| i == sampler || meta.events[i].role == Role::Counted)
        .collect();
    let attrs: Vec<(Attr, bool)> = kept
        .iter()
        .map(|&i| (meta.events[i].attr, i == sampler))
        .collect();
    let roles = ecore_roles(cpu, pmu, pmu_type, &attrs)?;
    Some(roles.into_iter().map(|(k, r)| (kept[k], r)).collect())
}

/// The roles in an E-core TopDown group of the PMU `pmu` (of type `pmu_type`): `members` are
/// the group's attrs, `true` for the cycles event that leads it (the sampler when recording,
/// the leader when counting). `None` unless `cpu` names the PMU's core, the lead counts core
/// cycles and every counted level-1 event of that core is a member; the result indexes
/// `members`.
pub fn ecore_roles(
    cpu: Option<&CpuId>,
    pmu: &str,
    pmu_type: u32,
    members: &[(Attr, bool)],
) -> Option<Vec<(usize, TdRole)>> {
    let td = uarch::ecore_topdown(cpu, pmu)?;
    let lead = members.iter().position(|(_, lead)| *lead)?;
    let s = &members[lead].0;
    // The lead counts core cycles: legacy cycles (on this PMU) or CPU_CLK_UNHALTED.CORE_P.
    let legacy_cycles =
        s.type_ == crate::event::attr::types::HARDWARE && s.config & 0xffff_ffff == 0;
    if !(legacy_cycles || (s.type_ == pmu_type && s.config == 0x3c)) {
        return None;
    }
    let mut out = vec![(
        lead,
        TdRole::EcoreCycles {
            width: td.width,
            remainder: td.bad_spec_by_remainder,
        },
    )];
    for (i, (attr, _)) in members.iter().enumerate() {
        if i == lead || attr.type_ != pmu_type {
            continue;
        }
        if let Some(c) = td.category_of(attr.config) {
            let k = match c {
                TdCategory::Retiring => TdEvent::Retiring,
                TdCategory::BadSpeculation => TdEvent::BadSpec,
                TdCategory::FrontendBound => TdEvent::FeBound,
                TdCategory::BackendBound => TdEvent::BeBound,
            };
            if !out.iter().any(|(_, r)| *r == TdRole::Event(k)) {
                out.push((i, TdRole::Event(k)));
            }
        }
    }
    // Every counted category of the core, or no TopDown at all.
    (out.len() == 1 + td.events.len()).then_some(out)
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
    /// member id to its TopDown role. `None` when the read has no TopDown member.
    pub fn delta(
        &mut self,
        tid: Option<u32>,
        id: u64,
        read: &ReadValues<'_>,
        kind_of: impl Fn(u64) -> Option<TdRole>,
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
            match entry.id.and_then(&kind_of) {
                Some(TdRole::Event(k)) => out.0[k as usize] += d,
                Some(TdRole::EcoreCycles { width, remainder }) => {
                    let slots = d.saturating_mul(u64::from(width));
                    out.0[TdEvent::Slots as usize] += slots;
                    out.0[TdCounts::ECORE_SLOTS] += slots;
                    if remainder {
                        out.0[TdCounts::REMAINDER_SLOTS] += slots;
                    }
                }
                None => continue,
            }
            any = true;
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
            1 => Some(TdRole::Event(TdEvent::Slots)),
            2 => Some(TdRole::Event(TdEvent::Retiring)),
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
        let c = TdCounts::pcore([1000, 400, 80, 120, 200, 100, 60, 90, 150]);
        assert_eq!(c.level1().unwrap(), [50.0, 10.0, 15.0, 25.0]);
        assert_eq!(
            c.level2().unwrap(),
            [12.5, 37.5, 7.5, 2.5, 11.25, 3.75, 18.75, 6.25]
        );
        assert_eq!(c.dominant(), Some((0, 50.0)));
        assert_eq!(TdCounts::default().level1(), None);
        assert_eq!(TdCounts::pcore([10, 1, 1, 1, 1, 0, 0, 0, 0]).level2(), None);
    }
}
