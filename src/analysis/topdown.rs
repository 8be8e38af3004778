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
//! **Which group is the slots group** comes from the members' PMU and encoding, never their
//! names ([`perf_metrics_event`]): `slots` is `config` 0x400 on a P-core PMU and the
//! `topdown-*` metrics event 0 with umask 0x80 to 0x87, so perf's raw
//! `cpu/event=0x00,umask=0x04/` group is the same group as `{slots,topdown-retiring,...}`.
//!
//! **E-cores.** An E-core has no `slots` and no perf metrics: its group is led by the cycles
//! sampler with Intel's level-1 events as counting members ([`crate::pmu::uarch`]). The
//! interval's slots are `width x` the cycles delta, and each category is its count divided by
//! those slots, as Intel's E-core TMA computes it (the four need not add up to 100: there is
//! no normalising by their sum); on Gracemont Bad Speculation is the remainder
//! `slots - (FE + BE + RET)` of the summed counts. Level 2 is Intel's E-core tree
//! ([`ECORE_L2_LABELS`]), each counted node divided by the slots, the uncounted ones by
//! subtraction ([`uarch`]'s counter budget). The members' roles come from their PMU
//! and encoding, never from their names ([`roles`]): the kernel's `cpu_atom/topdown-*`
//! aliases are not always the core's TopDown events (Meteor Lake's retiring alias is
//! Gracemont's code), and perf names them either way. Which E-core a PMU is comes only from
//! the recording's cpuid (perf.data's `CPUID` header): without it no rule is guessed, and a
//! group whose members are named as TopDown events gets the reason instead of numbers
//! ([`missing`]).

use std::collections::HashMap;

use crate::data::{Meta, Role};
use crate::decode::ReadValues;
use crate::event::Attr;
use crate::pmu::uarch::{self, CpuId, Ecore, TdCategory, TdPart};
use crate::pmu::vendor::{self, Midr, VCounts, VEVENTS, VEvent, VendorCore};

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
    /// E-core `TOPDOWN_FE_BOUND.FRONTEND_BANDWIDTH` (E-core level 2; E-core IFetch Latency
    /// and Branch Mispredicts add to [`TdEvent::FetchLat`] and [`TdEvent::BrMispredict`]).
    IfetchBandwidth = 11,
    /// E-core `TOPDOWN_BAD_SPECULATION.MACHINE_CLEARS` (E-core level 2).
    MachineClears = 12,
    /// E-core `TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS`: Core Bound (E-core level 2).
    AllocRestrictions = 13,
}

impl TdEvent {
    /// The slot an E-core level-1 category's count adds to.
    pub fn of_category(c: TdCategory) -> TdEvent {
        match c {
            TdCategory::Retiring => TdEvent::Retiring,
            TdCategory::BadSpeculation => TdEvent::BadSpec,
            TdCategory::FrontendBound => TdEvent::FeBound,
            TdCategory::BackendBound => TdEvent::BeBound,
        }
    }

    /// The slot an E-core level-2 node's count adds to.
    pub fn of_part(p: TdPart) -> TdEvent {
        match p {
            TdPart::IfetchLatency => TdEvent::FetchLat,
            TdPart::BranchMispredicts => TdEvent::BrMispredict,
            TdPart::CoreBound => TdEvent::AllocRestrictions,
            TdPart::IfetchBandwidth => TdEvent::IfetchBandwidth,
            TdPart::MachineClears => TdEvent::MachineClears,
        }
    }

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

/// Level-2 labels of the P-core tree (perf's `--td-level 2`), in [`Level2`] order.
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

/// Level-2 labels of Intel's E-core tree, in [`Level2`] order (level-1 parents as in
/// [`L1_LABELS`]; Retiring has no level 2 there, and Backend Bound splits into Core Bound and
/// Resource Bound, not Memory Bound).
pub const ECORE_L2_LABELS: [&str; 6] = [
    "Branch Mispredicts",
    "Machine Clears",
    "IFetch Latency",
    "IFetch Bandwidth",
    "Core Bound",
    "Resource Bound",
];

/// Which level-2 tree a [`Level2`] is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L2Tree {
    /// perf metrics' level 2 ([`L2_LABELS`]).
    PCore,
    /// Intel's E-core level 2 ([`ECORE_L2_LABELS`]).
    ECore,
}

impl L2Tree {
    /// Full labels.
    pub fn labels(self) -> &'static [&'static str] {
        match self {
            L2Tree::PCore => &L2_LABELS,
            L2Tree::ECore => &ECORE_L2_LABELS,
        }
    }

    /// Column headers.
    pub fn headers(self) -> &'static [&'static str] {
        match self {
            L2Tree::PCore => &[
                "Heavy", "Light", "BrMisp", "MClear", "FetLat", "FetBW", "MemBnd", "CoreBnd",
            ],
            L2Tree::ECore => &["BrMisp", "MClear", "IFLat", "IFBW", "CoreBnd", "ResBnd"],
        }
    }
}

/// Level-2 percentages of all slots, labelled by their tree. Serialized as the list of
/// percentages in its tree's label order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level2 {
    tree: L2Tree,
    values: [f64; 8],
}

impl Level2 {
    /// The tree.
    pub fn tree(&self) -> L2Tree {
        self.tree
    }

    /// The percentages, one per label of the tree.
    pub fn values(&self) -> &[f64] {
        &self.values[..self.tree.labels().len()]
    }

    /// `(label, percentage)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        self.tree
            .labels()
            .iter()
            .copied()
            .zip(self.values().iter().copied())
    }
}

impl serde::Serialize for Level2 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.values().serialize(s)
    }
}

/// Slot counts attributed to a location, indexed by [`TdEvent`]; for E-core groups also the
/// slots (`width x` cycles) at [`TdCounts::ECORE_SLOTS`] and, where Bad Speculation is the
/// remainder, the same slots again at [`TdCounts::REMAINDER_SLOTS`].
/// For AMD and Arm groups ([`crate::pmu::vendor`]), the vendor's events at `.1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TdCounts(pub [u64; 14], pub VendorTd);

/// A location's counts of an AMD or Arm core's level-1 group: each event's sum, the cycles
/// of AMD's SMT-contention group where it had one of its own, which events were counted, and
/// the core and its slots per cycle (the formulas' inputs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VendorTd {
    /// Sums by [`VEvent::index`].
    pub sums: [u64; VEVENTS],
    /// Cycles of the group that counted SMT contention alone.
    pub smt_cycles: u64,
    /// Bit `VEvent::index` set: the event was counted.
    pub counted: u16,
    /// The core, whose formulas apply.
    pub core: Option<VendorCore>,
    /// Slots per cycle.
    pub width: u32,
}

impl VendorTd {
    /// Adds one member's delta `d` by its role (other roles add nothing here).
    pub fn add_role(&mut self, role: TdRole, d: u64) {
        let e = match role {
            TdRole::VendorCycles {
                core,
                width,
                smt_only,
            } => {
                self.core = Some(core);
                self.width = width;
                if smt_only {
                    self.smt_cycles += d;
                    return;
                }
                VEvent::Cycles
            }
            TdRole::Vendor(e) => e,
            TdRole::Event(_) | TdRole::EcoreCycles { .. } => return,
        };
        if let Some(s) = self.sums.get_mut(e.index()) {
            *s += d;
            self.counted |= 1 << e.index();
        }
    }

    fn add(&mut self, o: &VendorTd) {
        for (a, b) in self.sums.iter_mut().zip(o.sums) {
            *a += b;
        }
        self.smt_cycles += o.smt_cycles;
        self.counted |= o.counted;
        self.core = self.core.or(o.core);
        self.width = self.width.max(o.width);
    }

    /// The sums as the formulas take them: the events counted.
    fn counts(&self) -> VCounts {
        let mut c = VCounts::default();
        for (i, (v, &sum)) in c.values.iter_mut().zip(&self.sums).enumerate() {
            if self.counted >> i & 1 == 1 {
                *v = Some(sum as f64);
            }
        }
        c.smt_cycles = (self.smt_cycles > 0).then_some(self.smt_cycles as f64);
        c
    }

    /// Level 1 by the vendor's formulas.
    pub fn level1(&self) -> Option<vendor::VendorLevel1> {
        vendor::level1(self.core?, self.width, &self.counts())
    }
}

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
        self.1.add(&o.1);
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
        if self.1.core.is_some() {
            let cycles = self.1.sums[VEvent::Cycles.index()];
            return cycles.saturating_mul(u64::from(self.1.width));
        }
        match self.0[Self::ECORE_SLOTS] {
            0 => self.l1_sum(),
            e => e,
        }
    }

    /// Level-1 slot counts in [`L1_LABELS`] order, the shares [`TdCounts::level1`] divides
    /// by [`TdCounts::slots`]. P-core: the four counts (their sum is the slots); E-core: the
    /// counted categories, Bad Speculation the remainder where the core's formula says so
    /// (negative when the counted categories overshoot the slots, as Intel's formula gives).
    pub fn level1_slots(&self) -> [f64; 4] {
        if self.1.core.is_some() {
            let slots = self.slots() as f64;
            return self
                .level1()
                .map_or([0.0; 4], |l| l.map(|x| x * slots / 100.0));
        }
        let v = |i: usize| self.0[i] as f64;
        let (ret, fe, be) = (v(1), v(3), v(4));
        let bad = match (self.0[Self::ECORE_SLOTS], self.0[Self::REMAINDER_SLOTS]) {
            (e, r) if e > 0 && r > 0 => r as f64 - (ret + fe + be),
            _ => v(2),
        };
        [ret, bad, fe, be]
    }

    /// Level-1 percentages in [`L1_LABELS`] order; `None` with no slots. P-core: each of the
    /// four divided by their sum (perf's rule); E-core: each divided by the slots, Bad
    /// Speculation the remainder where the core's formula says so (Intel's E-core TMA).
    pub fn level1(&self) -> Option<[f64; 4]> {
        if self.1.core.is_some() {
            let l = self.1.level1()?;
            return Some([
                l.retiring,
                l.bad_speculation,
                l.frontend_bound,
                l.backend_bound,
            ]);
        }
        let slots = self.slots();
        (slots > 0).then(|| self.level1_slots().map(|x| 100.0 * x / slots as f64))
    }

    /// Level-2 percentages of all slots; `None` with no slots or when the group had no
    /// level-2 events (all of them zero while level 1 is not). P-core: each level-1 category
    /// split by subtraction (perf's rule). E-core: each counted node divided by the slots;
    /// Resource Bound is Backend Bound minus Core Bound, and IFetch Bandwidth and Machine
    /// Clears, where they were not counted (both zero), their parent minus the counted
    /// sibling.
    pub fn level2(&self) -> Option<Level2> {
        if self.1.core.is_some() {
            return None;
        }
        if self.0[Self::ECORE_SLOTS] > 0 {
            let counted = [
                TdEvent::FetchLat,
                TdEvent::BrMispredict,
                TdEvent::AllocRestrictions,
                TdEvent::IfetchBandwidth,
                TdEvent::MachineClears,
            ];
            if counted.iter().all(|&e| self.get(e) == 0) {
                return None;
            }
            return self.ecore_level2();
        }
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
        Some(Level2 {
            tree: L2Tree::PCore,
            values: [a, b, c, d, e, f, g, h],
        })
    }

    /// E-core level-2 percentages of the slots, whichever level-2 events were counted (an
    /// uncounted one reads 0: the caller knows which were); `None` without E-core slots.
    /// IFetch Bandwidth and Machine Clears are taken as counted when either is not zero, else
    /// derived; Resource Bound is always Backend Bound minus Core Bound.
    pub fn ecore_level2(&self) -> Option<Level2> {
        if self.0[Self::ECORE_SLOTS] == 0 {
            return None;
        }
        let slots = self.0[Self::ECORE_SLOTS] as f64;
        let v = |e: TdEvent| self.get(e) as f64;
        let bad = self.level1_slots()[1];
        let both_counted =
            self.get(TdEvent::IfetchBandwidth) > 0 || self.get(TdEvent::MachineClears) > 0;
        let rest = |whole: f64, part: TdEvent| (whole - v(part)).max(0.0);
        let (bw, clears) = if both_counted {
            (v(TdEvent::IfetchBandwidth), v(TdEvent::MachineClears))
        } else {
            (
                rest(v(TdEvent::FeBound), TdEvent::FetchLat),
                rest(bad, TdEvent::BrMispredict),
            )
        };
        let pct = |x: f64| 100.0 * x / slots;
        Some(Level2 {
            tree: L2Tree::ECore,
            values: [
                pct(v(TdEvent::BrMispredict)),
                pct(clears),
                pct(v(TdEvent::FetchLat)),
                pct(bw),
                pct(v(TdEvent::AllocRestrictions)),
                pct(rest(v(TdEvent::BeBound), TdEvent::AllocRestrictions)),
                0.0,
                0.0,
            ],
        })
    }

    /// AMD's SMT Contention in percent of its group's slots, where it was counted.
    pub fn smt_contention(&self) -> Option<f64> {
        self.1.level1()?.smt_contention
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
    /// The cycles sampler leading an AMD or Arm level-1 group ([`crate::pmu::vendor`]).
    VendorCycles {
        /// The core, whose formulas apply.
        core: VendorCore,
        /// Slots per cycle.
        width: u32,
        /// AMD's group of SMT contention alone: its cycles are that node's denominator.
        smt_only: bool,
    },
    /// A member of such a group.
    Vendor(VEvent),
}

/// The TopDown role of each event id of a recording. A group with a `slots` member is a
/// perf-metrics group and its members are known by PMU and encoding
/// ([`perf_metrics_event`]: perf's `slots` and `topdown-*`, or the same events raw-encoded,
/// whatever their names); a group led
/// by the cycles sampler of an E-core PMU whose core the recording's cpuid tells, with every
/// counted level-1 event of that core among its members, is an E-core group and its members
/// are known by PMU type and encoding. Any other group has no TopDown.
pub fn roles(meta: &Meta) -> HashMap<u64, TdRole> {
    let cpu = CpuId::parse(&meta.cpuid);
    let mut out = HashMap::new();
    for members in groups(meta) {
        for (i, role) in group_roles(meta, cpu.as_ref(), &members).unwrap_or_default() {
            out.extend(meta.events[i].ids.iter().map(|id| (id.id, role)));
        }
    }
    out
}

/// Why a group that asks for TopDown has none, by the event index of its sampler: a group
/// asks when a counted member is named as a TopDown event (perf's `topdown-*` aliases,
/// Intel's `TOPDOWN_*` names) yet [`roles`] gave it no roles (no cpuid in the recording, a
/// core without Intel's E-core TopDown, a member missing, a lead that is not core cycles).
/// So a report can say why rather than show no TopDown or guess a rule.
pub fn missing(meta: &Meta) -> HashMap<usize, String> {
    let cpu = CpuId::parse(&meta.cpuid);
    let mut out = HashMap::new();
    for members in groups(meta) {
        let asks = members.iter().any(|&i| {
            let e = &meta.events[i];
            e.role == Role::Counted
                && crate::event::base_name(&e.name)
                    .to_ascii_lowercase()
                    .starts_with("topdown")
        });
        let sampler = members
            .iter()
            .find(|&&i| meta.events[i].role == Role::Sampler);
        if let (true, Some(&sampler), Err(why)) =
            (asks, sampler, group_roles(meta, cpu.as_ref(), &members))
        {
            out.insert(sampler, why);
        }
    }
    out
}

/// The groups of a recording: each group's member indexes in event order.
fn groups(meta: &Meta) -> Vec<Vec<usize>> {
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, e) in meta.events.iter().enumerate() {
        match groups.iter_mut().find(|(l, _)| *l == e.leader) {
            Some((_, m)) => m.push(i),
            None => groups.push((e.leader, vec![i])),
        }
    }
    groups.into_iter().map(|(_, m)| m).collect()
}

/// The roles of a group's members, or why it has none.
fn group_roles(
    meta: &Meta,
    cpu: Option<&CpuId>,
    members: &[usize],
) -> Result<Vec<(usize, TdRole)>, String> {
    let by_encoding: Vec<(usize, TdEvent)> = members
        .iter()
        .filter_map(|&i| Some((i, perf_metrics_event(meta, cpu, i)?)))
        .collect();
    if by_encoding.iter().any(|(_, k)| *k == TdEvent::Slots) {
        return Ok(by_encoding
            .into_iter()
            .map(|(i, k)| (i, TdRole::Event(k)))
            .collect());
    }
    match vendor_core_of(meta, cpu) {
        Some(core) => vendor_group(meta, core, members),
        None => ecore_group(meta, cpu, members),
    }
}

/// The AMD or Arm core a recording was made on: perf's arm64 CPUID (the MIDR,
/// `0x00000000410fd4f0`), or an AMD family and model hrec has TopDown for.
fn vendor_core_of(meta: &Meta, cpu: Option<&CpuId>) -> Option<VendorCore> {
    match Midr::parse(&meta.cpuid) {
        Some(m) => vendor::arm_core(m),
        None => cpu.and_then(vendor::amd_core),
    }
}

/// The sampling event of a group's `members`.
fn sampler_of(meta: &Meta, members: &[usize]) -> Result<usize, String> {
    members
        .iter()
        .copied()
        .find(|&i| meta.events[i].role == Role::Sampler)
        .ok_or_else(|| "the group has no sampling event".to_string())
}

/// The members of a group that were opened (a member with no ids was left out by the
/// recorder), the sampler included, and their attrs with `true` for the sampler.
fn opened_attrs(meta: &Meta, members: &[usize], sampler: usize) -> (Vec<usize>, Vec<(Attr, bool)>) {
    let kept: Vec<usize> = members
        .iter()
        .copied()
        .filter(|&i| {
            i == sampler || (meta.events[i].role == Role::Counted && !meta.events[i].ids.is_empty())
        })
        .collect();
    let attrs = kept
        .iter()
        .map(|&i| (meta.events[i].attr, i == sampler))
        .collect();
    (kept, attrs)
}

/// The roles of an AMD or Arm level-1 group's members ([`crate::pmu::vendor`]) in a
/// recording, or why `members` is not one ([`vendor_roles`]).
fn vendor_group(
    meta: &Meta,
    core: VendorCore,
    members: &[usize],
) -> Result<Vec<(usize, TdRole)>, String> {
    let sampler = sampler_of(meta, members)?;
    let (kept, attrs) = opened_attrs(meta, members, sampler);
    let roles = vendor_roles_or_why(core, &attrs)?;
    Ok(roles.into_iter().map(|(k, r)| (kept[k], r)).collect())
}

/// The roles in an AMD or Arm level-1 group of core `core`: `members` are the group's attrs,
/// `true` for the cycles event that leads it. Led by the core PMU's cycles (legacy `cycles`,
/// or the core's own cycles event), with the level-1 events the core's formulas need as
/// members, known by their encodings on that PMU (the members' type); AMD's group of SMT
/// contention alone (the NMI watchdog's split) is one too. The slots per cycle are the
/// vendor's for the core (Arm's `caps/slots` gives the same number on the cores hrec knows).
/// `None` when it is not such a group; the result indexes `members`.
pub fn vendor_roles(core: VendorCore, members: &[(Attr, bool)]) -> Option<Vec<(usize, TdRole)>> {
    vendor_roles_or_why(core, members).ok()
}

/// [`vendor_roles`], or why the group has none.
fn vendor_roles_or_why(
    core: VendorCore,
    members: &[(Attr, bool)],
) -> Result<Vec<(usize, TdRole)>, String> {
    use crate::event::attr::types::HARDWARE;
    let lead = members
        .iter()
        .position(|(_, lead)| *lead)
        .ok_or("the group has no lead event")?;
    let s = &members[lead].0;
    // The core PMU's type: the members' (a legacy `cycles` leader has the HARDWARE type, and
    // perf.data may name its PMU with type 0).
    let pmu_type = members
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != lead)
        .map(|(_, (a, _))| a.type_)
        .find(|&t| t != HARDWARE)
        .ok_or("the group has no member on the core PMU")?;
    let width = core
        .default_width()
        .ok_or_else(|| format!("{} has no slot-based TopDown", core.name()))?;
    let cycles = core.level1_events().first().map(|e| e.config);
    let legacy = s.type_ == HARDWARE && s.config & 0xffff_ffff == 0;
    if !(legacy || (s.type_ == pmu_type && Some(s.config) == cycles)) {
        return Err(format!(
            "the group is not led by core cycles, whose {width} x are the slots"
        ));
    }
    let mut out = Vec::new();
    for (i, (attr, _)) in members.iter().enumerate() {
        if i == lead || attr.type_ != pmu_type {
            continue;
        }
        if let Some(v) = core.event_of(attr.config)
            && v != VEvent::Cycles
            && !out.iter().any(|(_, r)| *r == TdRole::Vendor(v))
        {
            out.push((i, TdRole::Vendor(v)));
        }
    }
    let has = |v: VEvent| out.iter().any(|(_, r)| *r == TdRole::Vendor(v));
    let smt_only = core.is_amd() && out.len() == 1 && has(VEvent::Smt);
    let needed: &[VEvent] = match core {
        _ if smt_only => &[],
        VendorCore::Zen4 | VendorCore::Zen5 => &[
            VEvent::Dispatched,
            VEvent::Retired,
            VEvent::Frontend,
            VEvent::Backend,
        ],
        VendorCore::NeoverseV3 | VendorCore::NeoverseN3 => &[
            VEvent::Frontend,
            VEvent::Backend,
            VEvent::Retired,
            VEvent::OpSpec,
            VEvent::FrontendFlush,
        ],
        _ => &[
            VEvent::Frontend,
            VEvent::Backend,
            VEvent::Retired,
            VEvent::OpSpec,
            VEvent::BrMisPred,
        ],
    };
    let lacking: Vec<&str> = needed
        .iter()
        .filter(|&&v| !has(v))
        .filter_map(|&v| core.level1_events().iter().find(|e| e.event == v))
        .map(|e| e.name)
        .collect();
    if !lacking.is_empty() {
        return Err(format!(
            "the group lacks {}'s {} (members are known by their encoding, not by their names)",
            core.name(),
            lacking.join(", ")
        ));
    }
    out.insert(
        0,
        (
            lead,
            TdRole::VendorCycles {
                core,
                width,
                smt_only,
            },
        ),
    );
    Ok(out)
}

/// The perf-metrics TopDown event event `i` of `meta` is, by its PMU and encoding (perf's
/// `arch_is_topdown_slots` / `arch_is_topdown_metrics`): on a P-core PMU (`cpu` or
/// `cpu_core`, not an E-core by the recording's cpuid; a PMU the recording does not name is
/// the core's when its type is `PERF_TYPE_RAW`), `config` 0x400 is `slots` (`TOPDOWN.SLOTS`,
/// `event=0x00,umask=0x04`) and event 0 with umask 0x80 to 0x87 the `topdown-*` metrics
/// (retiring, bad-spec, fe-bound, be-bound, heavy-ops, br-mispredict, fetch-lat,
/// mem-bound). So `slots`, `cpu/event=0x00,umask=0x04/` and `r0400` are one event, whatever
/// the name.
pub fn perf_metrics_event(meta: &Meta, cpu: Option<&CpuId>, i: usize) -> Option<TdEvent> {
    let e = meta.events.get(i)?;
    let core = match e.pmu.as_deref() {
        Some(pmu @ ("cpu" | "cpu_core")) => {
            if matches!(uarch::ecore_of(cpu, pmu), Ecore::Arch(_)) {
                return None;
            }
            let type_ = meta
                .pmus
                .iter()
                .find(|p| p.name == pmu)
                .map_or(crate::event::attr::types::RAW, |p| p.type_);
            e.attr.type_ == type_
        }
        Some(_) => false,
        None => e.attr.type_ == crate::event::attr::types::RAW,
    };
    if !core {
        return None;
    }
    Some(match e.attr.config {
        0x0400 => TdEvent::Slots,
        0x8000 => TdEvent::Retiring,
        0x8100 => TdEvent::BadSpec,
        0x8200 => TdEvent::FeBound,
        0x8300 => TdEvent::BeBound,
        0x8400 => TdEvent::HeavyOps,
        0x8500 => TdEvent::BrMispredict,
        0x8600 => TdEvent::FetchLat,
        0x8700 => TdEvent::MemBound,
        _ => return None,
    })
}

/// The roles of an E-core group's members, or why `members` is not one.
fn ecore_group(
    meta: &Meta,
    cpu: Option<&CpuId>,
    members: &[usize],
) -> Result<Vec<(usize, TdRole)>, String> {
    let sampler = sampler_of(meta, members)?;
    let pmu = meta.events[sampler]
        .pmu
        .as_deref()
        .ok_or("the PMU of the group's sampler is unknown")?;
    let pmu_type = meta
        .pmus
        .iter()
        .find(|p| p.name == pmu)
        .ok_or_else(|| format!("the recording does not give the type of PMU {pmu}"))?
        .type_;
    let (kept, attrs) = opened_attrs(meta, members, sampler);
    let roles = ecore_roles_or_why(cpu, pmu, pmu_type, &attrs)?;
    Ok(roles.into_iter().map(|(k, r)| (kept[k], r)).collect())
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
    ecore_roles_or_why(cpu, pmu, pmu_type, members).ok()
}

/// [`ecore_roles`], or why the group has no E-core TopDown.
fn ecore_roles_or_why(
    cpu: Option<&CpuId>,
    pmu: &str,
    pmu_type: u32,
    members: &[(Attr, bool)],
) -> Result<Vec<(usize, TdRole)>, String> {
    let td = match (uarch::ecore_of(cpu, pmu), cpu) {
        (Ecore::Arch(arch), _) => arch.topdown().ok_or_else(|| {
            format!(
                "Intel has published no E-core TopDown for {} ({pmu})",
                arch.name()
            )
        })?,
        (_, None) => {
            return Err(format!(
                "the recording does not say which CPU it was made on (no cpuid), so the \
                 E-core behind {pmu} and its TopDown events are unknown"
            ));
        }
        (Ecore::Unknown, Some(c)) => {
            return Err(format!("hrec does not know the E-core behind {pmu} on {c}"));
        }
        (Ecore::No, Some(c)) => {
            return Err(format!(
                "{pmu} on {c} is not an E-core PMU, and the group has no slots event"
            ));
        }
    };
    let lead = members
        .iter()
        .position(|(_, lead)| *lead)
        .ok_or("the group has no lead event")?;
    let s = &members[lead].0;
    // The lead counts core cycles: legacy cycles (on this PMU) or CPU_CLK_UNHALTED.CORE_P.
    let legacy_cycles =
        s.type_ == crate::event::attr::types::HARDWARE && s.config & 0xffff_ffff == 0;
    if !(legacy_cycles || (s.type_ == pmu_type && s.config == 0x3c)) {
        return Err(format!(
            "the group is not led by core cycles, whose {} x are the slots",
            td.width
        ));
    }
    let mut out = vec![(
        lead,
        TdRole::EcoreCycles {
            width: td.width,
            remainder: td.bad_spec_by_remainder,
        },
    )];
    let mut level2 = Vec::new();
    for (i, (attr, _)) in members.iter().enumerate() {
        if i == lead || attr.type_ != pmu_type {
            continue;
        }
        let k = match (td.category_of(attr.config), td.part_of(attr.config)) {
            (Some(c), _) => TdEvent::of_category(c),
            (None, Some(p)) => {
                let k = TdEvent::of_part(p);
                if !level2.iter().any(|(_, r)| *r == TdRole::Event(k)) {
                    level2.push((i, TdRole::Event(k)));
                }
                continue;
            }
            (None, None) => continue,
        };
        if !out.iter().any(|(_, r)| *r == TdRole::Event(k)) {
            out.push((i, TdRole::Event(k)));
        }
    }
    // Every counted category of the core, or no TopDown at all.
    let lacking: Vec<String> = td
        .events
        .iter()
        .filter(|e| {
            !out.iter()
                .any(|(_, r)| *r == TdRole::Event(TdEvent::of_category(e.category)))
        })
        .map(|e| format!("{} (event {:#x}, umask {:#x})", e.name, e.event, e.umask))
        .collect();
    if !lacking.is_empty() {
        return Err(format!(
            "the group lacks {}'s {} on {pmu} (members are known by their encoding, not by \
             their names)",
            td.arch.name(),
            lacking.join(", ")
        ));
    }
    // Level 2 as a whole or not at all: IFetch Latency, Branch Mispredicts and Core Bound,
    // and IFetch Bandwidth with Machine Clears only as a pair ([`TdCounts::level2`] takes
    // both as counted when either is not zero).
    let has = |k: TdEvent| level2.iter().any(|(_, r)| *r == TdRole::Event(k));
    if [
        TdEvent::FetchLat,
        TdEvent::BrMispredict,
        TdEvent::AllocRestrictions,
    ]
    .into_iter()
    .all(has)
    {
        let pair = has(TdEvent::IfetchBandwidth) && has(TdEvent::MachineClears);
        out.extend(level2.into_iter().filter(|(_, r)| {
            pair || !matches!(
                r,
                TdRole::Event(TdEvent::IfetchBandwidth | TdEvent::MachineClears)
            )
        }));
    }
    Ok(out)
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
                Some(r @ (TdRole::VendorCycles { .. } | TdRole::Vendor(_))) => {
                    out.1.add_role(r, d);
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

    /// A slots group whose events are named anything (perf's raw `cpu/event=0x00,umask=0x04/`,
    /// `r8000`) is known by PMU and encoding; a name alone makes no TopDown event.
    #[test]
    fn perf_metrics_events_by_encoding_not_name() {
        use crate::data::{EventId, EventMeta, PmuMeta};
        let ev = |name: &str, pmu: Option<&str>, type_: u32, config: u64, role: Role| EventMeta {
            name: name.into(),
            pmu: pmu.map(Into::into),
            attr: Attr::new(type_, config),
            leader: 0,
            role,
            ids: vec![EventId {
                id: 10 + config,
                cpu: 0,
                tid: -1,
            }],
            trace_format: None,
        };
        let mut meta = Meta {
            pmus: vec![PmuMeta {
                name: "cpu".into(),
                type_: 4,
                cpus: None,
            }],
            events: vec![
                ev(
                    "cpu/event=0x00,umask=0x04/",
                    Some("cpu"),
                    4,
                    0x400,
                    Role::Counted,
                ),
                ev("cycles", Some("cpu"), 0, 0, Role::Sampler),
                ev("r8000", Some("cpu"), 4, 0x8000, Role::Counted),
                ev(
                    "cpu/event=0x00,umask=0x87/",
                    Some("cpu"),
                    4,
                    0x8700,
                    Role::Counted,
                ),
                // Named as TopDown, encoded otherwise: nothing.
                ev("topdown-fe-bound", Some("cpu"), 4, 0x3c, Role::Counted),
            ],
            ..Meta::default()
        };
        let kinds = |meta: &Meta| {
            (0..meta.events.len())
                .map(|i| perf_metrics_event(meta, None, i))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            kinds(&meta),
            [
                Some(TdEvent::Slots),
                None,
                Some(TdEvent::Retiring),
                Some(TdEvent::MemBound),
                None
            ]
        );
        let r = roles(&meta);
        assert_eq!(r.get(&(10 + 0x400)), Some(&TdRole::Event(TdEvent::Slots)));
        assert_eq!(
            r.get(&(10 + 0x8700)),
            Some(&TdRole::Event(TdEvent::MemBound))
        );
        assert_eq!(r.get(&(10 + 0x3c)), None);
        // Unnamed PMUs: the core's when of type RAW. An E-core `cpu` (Sierra Forest) has no
        // perf metrics.
        for e in &mut meta.events {
            e.pmu = None;
        }
        assert_eq!(kinds(&meta)[0], Some(TdEvent::Slots));
        for e in &mut meta.events {
            e.pmu = Some("cpu".into());
        }
        let srf = CpuId::parse("GenuineIntel,6,175,3").unwrap();
        assert_eq!(perf_metrics_event(&meta, Some(&srf), 0), None);
    }

    #[test]
    fn level1_is_normalised_by_the_sum_and_level2_split_by_subtraction() {
        // slots 1000 but the four L1 values add up to 800: percentages are of 800.
        let c = TdCounts::pcore([1000, 400, 80, 120, 200, 100, 60, 90, 150]);
        assert_eq!(c.level1().unwrap(), [50.0, 10.0, 15.0, 25.0]);
        let l2 = c.level2().unwrap();
        assert_eq!(l2.tree(), L2Tree::PCore);
        assert_eq!(
            l2.values(),
            [12.5, 37.5, 7.5, 2.5, 11.25, 3.75, 18.75, 6.25]
        );
        assert_eq!(c.dominant(), Some((0, 50.0)));
        assert_eq!(TdCounts::default().level1(), None);
        assert_eq!(TdCounts::pcore([10, 1, 1, 1, 1, 0, 0, 0, 0]).level2(), None);
    }

    /// E-core counts: `width x cycles` slots, the given categories and level-2 nodes.
    fn ecore(slots: u64, remainder: bool, set: &[(TdEvent, u64)]) -> TdCounts {
        let mut c = TdCounts::default();
        c.0[TdEvent::Slots as usize] = slots;
        c.0[TdCounts::ECORE_SLOTS] = slots;
        if remainder {
            c.0[TdCounts::REMAINDER_SLOTS] = slots;
        }
        for &(k, v) in set {
            c.0[k as usize] = v;
        }
        c
    }

    #[test]
    fn ecore_level2_follows_intels_tree() {
        use TdEvent::*;
        // Gracemont, 1000 slots: FE 300 (latency 200), BE 200 (alloc 50), RET 400, so Bad
        // Speculation is the remainder 100 (mispredicts 60). Bandwidth and clears are not
        // counted: 300 - 200 and 100 - 60.
        let l1 = [(FeBound, 300), (BeBound, 200), (Retiring, 400)];
        let l2 = [(FetchLat, 200), (BrMispredict, 60), (AllocRestrictions, 50)];
        let grt = ecore(1000, true, &[&l1[..], &l2[..]].concat());
        assert_eq!(grt.level1().unwrap(), [40.0, 10.0, 30.0, 20.0]);
        let v = grt.level2().unwrap();
        assert_eq!(v.tree(), L2Tree::ECore);
        assert_eq!(v.values(), [6.0, 4.0, 20.0, 10.0, 5.0, 15.0]);
        assert_eq!(v.iter().nth(5), Some(("Resource Bound", 15.0)));
        // Level 1 alone: no level 2.
        assert_eq!(ecore(1000, true, &l1).level2(), None);
        // Skymont counts all five: bandwidth and clears are taken as counted, not derived.
        let skt = ecore(
            1000,
            false,
            &[
                &l1[..],
                &l2[..],
                &[(BadSpec, 100), (IfetchBandwidth, 90), (MachineClears, 35)],
            ]
            .concat(),
        );
        assert_eq!(
            skt.level2().unwrap().values(),
            [6.0, 3.5, 20.0, 9.0, 5.0, 15.0]
        );
    }

    #[test]
    fn ecore_groups_take_level2_whole_or_not_at_all() {
        use crate::event::attr::types::HARDWARE;
        let cpu = CpuId::parse("GenuineIntel-6-97-2");
        let raw = |config: u64| (Attr::new(10, config), false);
        let mut m = vec![
            (Attr::new(HARDWARE, 0), true),
            raw(0x71),
            raw(0x74),
            raw(0xc2),
        ];
        let roles = |m: &[(Attr, bool)]| {
            let r = ecore_roles(cpu.as_ref(), "cpu_atom", 10, m).unwrap();
            r.into_iter().map(|(_, r)| r).collect::<Vec<_>>()
        };
        assert_eq!(roles(&m).len(), 4);
        // Two of the three level-2 events: none of them.
        m.extend([raw(0x7271), raw(0x0473)]);
        assert_eq!(roles(&m).len(), 4);
        m.push(raw(0x0174));
        assert!(roles(&m).contains(&TdRole::Event(TdEvent::AllocRestrictions)));
        assert_eq!(roles(&m).len(), 7);
        // Bandwidth without clears is left out; with them both count.
        m.push(raw(0x8d71));
        assert_eq!(roles(&m).len(), 7);
        m.push(raw(0x0373));
        assert_eq!(roles(&m).len(), 9);
        // A missing level-1 event: no TopDown at all.
        m.remove(2);
        assert!(ecore_roles(cpu.as_ref(), "cpu_atom", 10, &m).is_none());
    }

    /// AMD and Arm level-1 groups as perf records them (`{cycles,cpu/event=0x1a0,umask=0x1/,
    /// ...}:S`; Arm's on its own PMU type): known by the recording's CPU and the members'
    /// encodings, their deltas summed per location, level 1 by the vendor's formula; AMD's
    /// SMT-contention group of its own divides by its own cycles; a member missing, no
    /// TopDown.
    #[test]
    fn vendor_groups_read_by_encoding() {
        use crate::data::{EventId, EventMeta, PmuMeta};
        use crate::event::attr::types::HARDWARE;
        let ev = |leader: usize, type_: u32, config: u64, role: Role, id: u64| EventMeta {
            name: format!("e{id}"),
            pmu: None,
            attr: Attr::new(type_, config),
            leader,
            role,
            ids: vec![EventId {
                id,
                cpu: 0,
                tid: -1,
            }],
            trace_format: None,
        };
        // Zen 4 with the watchdog's split: {cycles, DISP, RET, FE, BE} and {cycles, SMT}.
        let zen = Meta {
            cpuid: "AuthenticAMD-25-11-1".into(),
            events: vec![
                ev(0, HARDWARE, 0, Role::Sampler, 1),
                ev(0, 4, 0x7aa, Role::Counted, 2),
                ev(0, 4, 0xc1, Role::Counted, 3),
                ev(0, 4, 0x1_0000_01a0, Role::Counted, 4),
                ev(0, 4, 0x1_0000_1ea0, Role::Counted, 5),
                ev(5, HARDWARE, 0, Role::Sampler, 6),
                ev(5, 4, 0x1_0000_60a0, Role::Counted, 7),
            ],
            ..Meta::default()
        };
        let r = roles(&zen);
        assert_eq!(r.len(), 7, "{r:?}");
        assert_eq!(r[&4], TdRole::Vendor(VEvent::Frontend));
        assert_eq!(
            r[&6],
            TdRole::VendorCycles {
                core: VendorCore::Zen4,
                width: 6,
                smt_only: true
            }
        );
        let rf = 1 | 2 | 4 | 8;
        let mut t = DeltaTracker::new();
        let mut total = TdCounts::default();
        // Cycles 1000: DISP 2700, RET 2400, FE 1200, BE 1800 (6000 slots); the SMT group
        // 500 cycles, 300 slots of contention.
        for (id, vals) in [
            (
                1,
                vec![(1000, 1), (2700, 2), (2400, 3), (1200, 4), (1800, 5)],
            ),
            (6, vec![(500, 6), (300, 7)]),
        ] {
            let b = group(10, 10, &vals);
            let read = ReadValues::from_read(&b, rf).unwrap();
            let d = t.delta(None, id, &read, |i| r.get(&i).copied()).unwrap();
            total.add(&d);
        }
        let l1 = total.level1().unwrap();
        let want = [40.0, 5.0, 20.0, 30.0];
        assert!(
            l1.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-9),
            "{l1:?}"
        );
        assert_eq!(total.smt_contention(), Some(10.0));
        assert_eq!(total.slots(), 6000);
        assert_eq!(total.level2(), None);
        // Without the frontend event: none.
        let mut lacking = zen.clone();
        lacking.events.remove(3);
        for e in &mut lacking.events[3..] {
            e.leader = e.leader.saturating_sub(usize::from(e.leader > 3));
        }
        assert!(roles(&lacking).values().all(|r| matches!(
            r,
            TdRole::Vendor(VEvent::Smt) | TdRole::VendorCycles { smt_only: true, .. }
        )));
        // Neoverse V2 (perf's CPUID is the MIDR), on its own PMU type.
        let arm = Meta {
            cpuid: "0x00000000410fd4f0".into(),
            pmus: vec![PmuMeta {
                name: "armv8_pmuv3_0".into(),
                type_: 10,
                cpus: None,
            }],
            events: [0x11, 0x3e, 0x3d, 0x3a, 0x3b, 0x10, 0x3f]
                .iter()
                .enumerate()
                .map(|(i, &c)| {
                    let role = if i == 0 { Role::Sampler } else { Role::Counted };
                    EventMeta {
                        pmu: Some("armv8_pmuv3_0".into()),
                        ..ev(0, 10, c, role, 20 + i as u64)
                    }
                })
                .collect(),
            ..Meta::default()
        };
        let r = roles(&arm);
        assert_eq!(r.len(), 7, "{r:?}");
        let b = group(
            10,
            10,
            &[
                (1000, 20),
                (2000, 21),
                (3000, 22),
                (2400, 23),
                (3000, 24),
                (10, 25),
                (5000, 26),
            ],
        );
        let read = ReadValues::from_read(&b, rf).unwrap();
        let d = DeltaTracker::new()
            .delta(None, 20, &read, |i| r.get(&i).copied())
            .unwrap();
        let l1 = d.level1().unwrap();
        // Arm's neoverse-v2.json on these counts (as in pmu::vendor's test).
        let want = [30.0, 11.5, 24.0, 34.5];
        assert!(
            l1.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-9),
            "{l1:?}"
        );
        assert_eq!(d.smt_contention(), None);
    }

    /// The slot counts behind level 1 are what it divides by the slots, on every core: the
    /// P-core's four (their sum is the slots), Gracemont's with Bad Speculation the remainder
    /// (the four add up to the slots), Skymont's as counted (they need not).
    #[test]
    fn level1_slots_are_the_shares_numerators() {
        let p = TdCounts::pcore([1000, 400, 80, 120, 200, 0, 0, 0, 0]);
        assert_eq!(p.level1_slots(), [400.0, 80.0, 120.0, 200.0]);
        assert_eq!(p.slots(), 800);
        let mut grt = TdCounts::default();
        // 2000 cycles x 5: RET 5000, FE 2000, BE 1000; the 0x73 count is not Gracemont's.
        grt.0[..5].copy_from_slice(&[10000, 5000, 0, 2000, 1000]);
        grt.0[TdCounts::ECORE_SLOTS] = 10000;
        grt.0[TdCounts::REMAINDER_SLOTS] = 10000;
        assert_eq!(grt.level1_slots(), [5000.0, 2000.0, 2000.0, 1000.0]);
        assert_eq!(grt.level1_slots().iter().sum::<f64>(), grt.slots() as f64);
        assert_eq!(grt.level1(), Some([50.0, 20.0, 20.0, 10.0]));
        let mut skt = TdCounts::default();
        skt.0[..5].copy_from_slice(&[8000, 4000, 400, 800, 2400]);
        skt.0[TdCounts::ECORE_SLOTS] = 8000;
        assert_eq!(skt.level1_slots(), [4000.0, 400.0, 800.0, 2400.0]);
        assert_eq!(skt.level1(), Some([50.0, 5.0, 10.0, 30.0]));
    }
}
