//! Which microarchitecture a core PMU counts for, and the TopDown rules of Intel's E-cores.
//!
//! **The core.** Intel's `mapfile.csv` picks event files by `family-model` and, on hybrid
//! parts, by the core type (0x40 Core, 0x20 Atom) and native model id. A process cannot ask a
//! PMU for its core type, but the kernel names the PMUs by it: `cpu_core` is the P-core,
//! `cpu_atom` the E-core and, on Arrow Lake-H only, `cpu_lowpower` the low-power E-core; a
//! part with one core type has one `cpu` PMU. So `/proc/cpuinfo`'s family and model plus the
//! PMU's directory name give the microarchitecture ([`ecore_of`]). A model hrec does not know
//! gets no E-core rules, never a guess ([`Ecore::Unknown`] carries the cpuid for the notice).
//!
//! **E-core TopDown.** E-cores have no `slots` event and no `PERF_METRICS`: their TopDown
//! events are ordinary counter events, and Intel's E-core TMA divides each by the issue slots
//! of the interval, `W x CPU_CLK_UNHALTED.CORE`, with the pipeline width W = 5 on Gracemont, 6
//! on Crestmont and 8 on Skymont. Intel's encodings differ per microarchitecture (Crestmont's
//! retiring is 0x72, Gracemont's 0xc2/0x00, Skymont's the architectural 0xc2/0x02), and the
//! kernel's `cpu_atom/topdown-*` aliases do not always follow them (Meteor Lake's sysfs names
//! Gracemont's 0xc2 retiring code), so the encodings come from [`EcoreTopDown`], checked
//! against Intel's perfmon files in the tests, not from sysfs. Gracemont's Bad Speculation is
//! the remainder `(W*CLK - (FE + BE + RET)) / (W*CLK)` in Intel's formula; the other cores
//! count all four.
//!
//! **Level 2, by counter budget.** Intel's E-core level 2 needs five more events (the same
//! encodings on every E-core). Gracemont has 6 general counters, Crestmont and Skymont 8, and
//! the NMI watchdog, when on, holds fixed counter 1 so that the group's cycles leader takes a
//! general one. Level 1 plus IFetch Latency, Branch Mispredicts and Core Bound fits
//! Crestmont always and Gracemont only without the watchdog; Skymont's fixed counters 4-6
//! hold three level-1 events, so all five level-2 events fit there. Where two are not
//! counted, IFetch Bandwidth and Machine Clears are their level-1 parent minus the counted
//! sibling; Resource Bound is always Backend Bound minus Core Bound (Intel's formula).
//! Whether the watchdog is on is `<procfs>/sys/kernel/nmi_watchdog` ([`read_nmi_watchdog`]);
//! where it cannot be read, Gracemont gets level 1 alone, as with the watchdog on
//! ([`EcoreTopDown::level2_events`] is the one place the rule lives, for `record`, `top` and
//! `stat` alike).
//!
//! **Counters.** How many general counters a core has and which fixed ones
//! ([`core_counters`]) is a table by core microarchitecture, not read from sysfs (x86 kernels
//! do not publish it there); the tests check it against the `Counter` fields of Intel's event
//! files. `record --td-level`/`-M` plans its groups within it.
//!
//! **The CPU's identity** ([`CpuId`]) is read from `<procfs>/cpuinfo` (and kept in an hrec
//! file), or parsed from perf.data's `CPUID` header string, so a report applies the rules of
//! the machine that recorded. The same identity says which cores fill the retire latency of
//! PEBS records (Timed PEBS, [`retire_latency`]) and which parts need the kernel's PEBS
//! format 6, Linux 6.13, for precise sampling ([`needs_pebs_format_6`]). `docs/hardware.md`
//! tabulates all of it per Intel part and core type.

use std::fmt;
use std::path::Path;

use serde::Serialize;

/// The CPU's identity as `/proc/cpuinfo` gives it (and perf.data's CPUID header,
/// `GenuineIntel-6-AA-4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CpuId {
    /// `vendor_id`.
    pub vendor: Vendor,
    /// `cpu family`.
    pub family: u32,
    /// `model`.
    pub model: u32,
    /// `stepping`.
    pub stepping: u32,
}

/// CPU vendors hrec tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Vendor {
    /// `GenuineIntel`.
    Intel,
    /// `AuthenticAMD`.
    Amd,
    /// Anything else.
    Other,
}

impl CpuId {
    /// The first processor's identity in `/proc/cpuinfo` text; `None` without the four fields.
    pub fn from_cpuinfo(cpuinfo: &str) -> Option<CpuId> {
        let field = |key: &str| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key).then(|| v.trim())
            })
        };
        Some(CpuId {
            vendor: Vendor::from_id(field("vendor_id")?),
            family: field("cpu family")?.parse().ok()?,
            model: field("model")?.parse().ok()?,
            stepping: field("stepping")?.parse().ok()?,
        })
    }

    /// `<procfs>/cpuinfo`; `None` when it cannot be read or lacks the fields.
    pub fn read(procfs_root: &Path) -> Option<CpuId> {
        let text = std::fs::read_to_string(procfs_root.join("cpuinfo")).ok()?;
        CpuId::from_cpuinfo(&text)
    }

    /// perf's cpuid string: `GenuineIntel-6-AA-4` (Intel's mapfile form: family in
    /// decimal, model and stepping in hex) or `GenuineIntel,6,170,4` (perf.data's CPUID
    /// header: all decimal).
    pub fn parse(s: &str) -> Option<CpuId> {
        let s = s.trim();
        if s.contains(',') {
            let mut parts = s.split(',').map(str::trim);
            let vendor = Vendor::from_id(parts.next()?);
            let mut num = || parts.next()?.parse::<u32>().ok();
            return Some(CpuId {
                vendor,
                family: num()?,
                model: num()?,
                stepping: num().unwrap_or(0),
            });
        }
        let mut parts = s.split('-');
        let vendor = Vendor::from_id(parts.next()?);
        let family = parts.next()?.parse().ok()?;
        let model = u32::from_str_radix(parts.next()?, 16).ok()?;
        let stepping = parts
            .next()
            .map_or(Some(0), |p| u32::from_str_radix(p, 16).ok())?;
        Some(CpuId {
            vendor,
            family,
            model,
            stepping,
        })
    }
}

impl fmt::Display for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let vendor = match self.vendor {
            Vendor::Intel => "GenuineIntel",
            Vendor::Amd => "AuthenticAMD",
            Vendor::Other => "unknown",
        };
        write!(
            f,
            "{vendor}-{}-{:X}-{:X}",
            self.family, self.model, self.stepping
        )
    }
}

impl Vendor {
    fn from_id(id: &str) -> Vendor {
        match id.trim() {
            "GenuineIntel" => Vendor::Intel,
            "AuthenticAMD" => Vendor::Amd,
            _ => Vendor::Other,
        }
    }
}

/// `<procfs>/sys/kernel/nmi_watchdog`: `Some(true)` when the NMI watchdog is on (it holds a
/// counter), `Some(false)` when off, `None` when the file cannot be read or parsed.
pub fn read_nmi_watchdog(procfs_root: &Path) -> Option<bool> {
    std::fs::read_to_string(procfs_root.join("sys/kernel/nmi_watchdog"))
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .map(|w| w != 0)
}

/// Why an E-core's level-2 events are not opened beside level 1: its core has too few
/// counters while the NMI watchdog holds one (or may: `watchdog` `None` when
/// `kernel.nmi_watchdog` could not be read).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{} E-cores have too few counters for TopDown level 2 {}", .arch.name(), match .watchdog {
    Some(_) => "while the NMI watchdog holds one",
    None => "if the NMI watchdog holds one, and kernel.nmi_watchdog cannot be read",
})]
pub struct Level2Blocked {
    /// The core.
    pub arch: EcoreArch,
    /// The watchdog's state: `Some(true)` on, `None` unknown.
    pub watchdog: Option<bool>,
}

/// Intel's E-core microarchitectures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EcoreArch {
    /// Alder Lake / Raptor Lake E-cores, Alder Lake-N.
    Gracemont,
    /// Meteor Lake E-cores and Arrow Lake-H's low-power E-cores, Sierra Forest, Grand Ridge.
    Crestmont,
    /// Lunar Lake and Arrow Lake E-cores.
    Skymont,
    /// Panther Lake E-cores and Clearwater Forest: Intel has published no E-core TMA for it.
    Darkmont,
}

/// What a core PMU is, as far as E-core TopDown cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecore {
    /// Not an E-core PMU (a P-core, or a part without E-cores).
    No,
    /// An E-core of this microarchitecture.
    Arch(EcoreArch),
    /// An E-core PMU (`cpu_atom`, `cpu_lowpower`) of a model hrec does not know.
    Unknown,
}

/// Intel family-6 models, and the E-core each PMU name has there.
const MODELS: &[(u32, &str, EcoreArch)] = &[
    // Alder Lake-S/P, Raptor Lake-S/P/HX: Golden Cove / Raptor Cove + Gracemont.
    (0x97, "cpu_atom", EcoreArch::Gracemont),
    (0x9A, "cpu_atom", EcoreArch::Gracemont),
    (0xB7, "cpu_atom", EcoreArch::Gracemont),
    (0xBA, "cpu_atom", EcoreArch::Gracemont),
    (0xBF, "cpu_atom", EcoreArch::Gracemont),
    // Alder Lake-N: Gracemont only.
    (0xBE, "cpu", EcoreArch::Gracemont),
    // Meteor Lake, Arrow Lake-U: Redwood Cove + Crestmont.
    (0xAA, "cpu_atom", EcoreArch::Crestmont),
    (0xAC, "cpu_atom", EcoreArch::Crestmont),
    (0xB5, "cpu_atom", EcoreArch::Crestmont),
    // Sierra Forest, Grand Ridge: Crestmont only.
    (0xAF, "cpu", EcoreArch::Crestmont),
    (0xB6, "cpu", EcoreArch::Crestmont),
    // Lunar Lake, Arrow Lake-S: Lion Cove + Skymont.
    (0xBD, "cpu_atom", EcoreArch::Skymont),
    (0xC6, "cpu_atom", EcoreArch::Skymont),
    // Arrow Lake-H: Lion Cove + Skymont + low-power Crestmont.
    (0xC5, "cpu_atom", EcoreArch::Skymont),
    (0xC5, "cpu_lowpower", EcoreArch::Crestmont),
    // Panther Lake, Clearwater Forest: Darkmont.
    (0xCC, "cpu_atom", EcoreArch::Darkmont),
    (0xDD, "cpu", EcoreArch::Darkmont),
];

/// The E-core microarchitecture of the core PMU named `pmu` on the CPU `cpu`.
pub fn ecore_of(cpu: Option<&CpuId>, pmu: &str) -> Ecore {
    let atom_name = matches!(pmu, "cpu_atom" | "cpu_lowpower");
    let Some(cpu) = cpu.filter(|c| c.vendor == Vendor::Intel && c.family == 6) else {
        return if atom_name { Ecore::Unknown } else { Ecore::No };
    };
    match MODELS
        .iter()
        .find(|(model, name, _)| *model == cpu.model && *name == pmu)
    {
        Some((_, _, arch)) => Ecore::Arch(*arch),
        None if atom_name => Ecore::Unknown,
        None => Ecore::No,
    }
}

/// Intel's level-1 TopDown of the E-core behind PMU `pmu`, when `cpu` names one that has it.
pub fn ecore_topdown(cpu: Option<&CpuId>, pmu: &str) -> Option<&'static EcoreTopDown> {
    match ecore_of(cpu, pmu) {
        Ecore::Arch(arch) => arch.topdown(),
        Ecore::No | Ecore::Unknown => None,
    }
}

/// Whether the core behind PMU `pmu` fills the retire latency of PEBS records (Timed PEBS:
/// `WEIGHT_STRUCT` bits 63:48): `Some(true)` on Granite Rapids, Sierra Forest and the P-cores
/// of Meteor Lake, Lunar Lake, Arrow Lake and Panther Lake; `Some(false)` on parts known
/// without it (Ice Lake, Sapphire and Emerald Rapids, Alder and Raptor Lake, every hybrid
/// part's E-cores, Alder Lake-N); `None` where hrec does not know.
pub fn retire_latency(cpu: Option<&CpuId>, pmu: &str) -> Option<bool> {
    let cpu = cpu.filter(|c| c.vendor == Vendor::Intel && c.family == 6)?;
    const WITH: &[(u32, &str)] = &[
        (0xAD, "cpu"),
        (0xAE, "cpu"),
        (0xAF, "cpu"),
        (0xAA, "cpu_core"),
        (0xAC, "cpu_core"),
        (0xB5, "cpu_core"),
        (0xBD, "cpu_core"),
        (0xC6, "cpu_core"),
        (0xC5, "cpu_core"),
        (0xCC, "cpu_core"),
    ];
    const WITHOUT: &[u32] = &[
        0x6A, 0x6C, 0x7D, 0x7E, 0x8F, 0xCF, 0x97, 0x9A, 0xB7, 0xBA, 0xBF, 0xBE,
    ];
    if WITH.contains(&(cpu.model, pmu)) {
        return Some(true);
    }
    if WITHOUT.contains(&cpu.model) {
        return Some(false);
    }
    match ecore_of(Some(cpu), pmu) {
        Ecore::Arch(EcoreArch::Gracemont | EcoreArch::Crestmont | EcoreArch::Skymont)
            if pmu != "cpu" =>
        {
            Some(false)
        }
        _ => None,
    }
}

/// Lunar Lake and Arrow Lake, whose PEBS needs the kernel's PEBS format 6 (Linux 6.13):
/// before it `caps/max_precise` reads 0 there.
pub fn needs_pebs_format_6(cpu: Option<&CpuId>) -> bool {
    cpu.is_some_and(|c| {
        c.vendor == Vendor::Intel && c.family == 6 && matches!(c.model, 0xBD | 0xC6 | 0xC5)
    })
}

/// A level-1 TopDown category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TdCategory {
    /// Frontend Bound.
    FrontendBound,
    /// Bad Speculation.
    BadSpeculation,
    /// Backend Bound.
    BackendBound,
    /// Retiring.
    Retiring,
}

/// A level-2 TopDown node of Intel's E-core tree (TMA 3.6): Frontend Bound splits into
/// IFetch Latency and Bandwidth, Bad Speculation into Branch Mispredicts and Machine Clears,
/// Backend Bound into Core Bound (allocation restrictions) and Resource Bound (the rest, never
/// counted). Retiring has no level 2 on E-cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TdPart {
    /// `TOPDOWN_FE_BOUND.FRONTEND_LATENCY`.
    IfetchLatency,
    /// `TOPDOWN_FE_BOUND.FRONTEND_BANDWIDTH`.
    IfetchBandwidth,
    /// `TOPDOWN_BAD_SPECULATION.MISPREDICT`.
    BranchMispredicts,
    /// `TOPDOWN_BAD_SPECULATION.MACHINE_CLEARS`.
    MachineClears,
    /// `TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS`.
    CoreBound,
}

/// One TopDown event of an E-core: Intel's name and encoding, and the level-1 category
/// ([`TdCategory`]) or level-2 node ([`TdPart`]) it counts slots of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EcoreEvent<C = TdCategory> {
    /// The category it counts slots of.
    pub category: C,
    /// Intel's event name (`TOPDOWN_FE_BOUND.ALL`).
    pub name: &'static str,
    /// `EventCode`.
    pub event: u8,
    /// `UMask`.
    pub umask: u8,
}

impl<C> EcoreEvent<C> {
    /// `attr.config` on the core PMU (`event | umask << 8`).
    pub fn config(&self) -> u64 {
        u64::from(self.event) | u64::from(self.umask) << 8
    }

    /// The event on PMU `pmu` in perf's event syntax, named as Intel names it
    /// (`cpu_atom/event=0x71,umask=0x0,name=TOPDOWN_FE_BOUND.ALL/`).
    pub fn spec(&self, pmu: &str) -> String {
        format!(
            "{pmu}/event={:#x},umask={:#x},name={}/",
            self.event, self.umask, self.name
        )
    }
}

/// The level-1 TopDown rules of one E-core microarchitecture (Intel's E-core TMA).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EcoreTopDown {
    /// The microarchitecture.
    pub arch: EcoreArch,
    /// Issue slots per cycle: slots = width x `CPU_CLK_UNHALTED.CORE`.
    pub width: u32,
    /// The counted level-1 events, in the order hrec opens them.
    pub events: &'static [EcoreEvent],
    /// Bad Speculation is what is left of the slots after the three counted categories
    /// (Gracemont's formula); otherwise it is counted too.
    pub bad_spec_by_remainder: bool,
    /// The level-2 events hrec opens beside level 1, as many as the core's counters hold
    /// with the cycles leader and the NMI watchdog's counter taken: IFetch Latency, Branch
    /// Mispredicts and Core Bound always (IFetch Bandwidth and Machine Clears are then level
    /// 1 minus them), all five where they fit (Skymont, whose fixed counters 4-6 hold three
    /// level-1 events).
    pub level2: &'static [EcoreEvent<TdPart>],
    /// Level 2 fits only when the NMI watchdog leaves the cycles counter free (Gracemont: 6
    /// general counters, all taken by level 1 and level 2).
    pub level2_needs_free_cycles_counter: bool,
}

const fn ev<C>(category: C, name: &'static str, event: u8, umask: u8) -> EcoreEvent<C> {
    EcoreEvent {
        category,
        name,
        event,
        umask,
    }
}

use TdPart::{BranchMispredicts, CoreBound, IfetchBandwidth, IfetchLatency, MachineClears};

/// Intel's E-core level-2 events: the same encodings on Gracemont, Crestmont and Skymont.
const L2_EVENTS: [EcoreEvent<TdPart>; 5] = [
    ev(
        IfetchLatency,
        "TOPDOWN_FE_BOUND.FRONTEND_LATENCY",
        0x71,
        0x72,
    ),
    ev(
        BranchMispredicts,
        "TOPDOWN_BAD_SPECULATION.MISPREDICT",
        0x73,
        0x04,
    ),
    ev(CoreBound, "TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS", 0x74, 0x01),
    ev(
        IfetchBandwidth,
        "TOPDOWN_FE_BOUND.FRONTEND_BANDWIDTH",
        0x71,
        0x8d,
    ),
    ev(
        MachineClears,
        "TOPDOWN_BAD_SPECULATION.MACHINE_CLEARS",
        0x73,
        0x03,
    ),
];

use TdCategory::{BackendBound, BadSpeculation, FrontendBound, Retiring};

const GRACEMONT: EcoreTopDown = EcoreTopDown {
    arch: EcoreArch::Gracemont,
    width: 5,
    events: &[
        ev(FrontendBound, "TOPDOWN_FE_BOUND.ALL", 0x71, 0x00),
        ev(BackendBound, "TOPDOWN_BE_BOUND.ALL", 0x74, 0x00),
        ev(Retiring, "TOPDOWN_RETIRING.ALL", 0xc2, 0x00),
    ],
    bad_spec_by_remainder: true,
    // 3 level-1 + 3 level-2 events fill the 6 general counters: cycles needs fixed counter 1.
    level2: L2_EVENTS.split_at(3).0,
    level2_needs_free_cycles_counter: true,
};

const CRESTMONT: EcoreTopDown = EcoreTopDown {
    arch: EcoreArch::Crestmont,
    width: 6,
    events: &[
        ev(FrontendBound, "TOPDOWN_FE_BOUND.ALL", 0x71, 0x00),
        ev(BadSpeculation, "TOPDOWN_BAD_SPECULATION.ALL", 0x73, 0x00),
        ev(BackendBound, "TOPDOWN_BE_BOUND.ALL", 0x74, 0x00),
        ev(Retiring, "TOPDOWN_RETIRING.ALL", 0x72, 0x00),
    ],
    bad_spec_by_remainder: false,
    // 4 + 3 general counters of 8, and one more for cycles when the watchdog holds fixed 1.
    level2: L2_EVENTS.split_at(3).0,
    level2_needs_free_cycles_counter: false,
};

// Skymont's architectural encodings (the `_P` forms of Intel's file); the kernel places
// 0x73/0x00, 0x9c/0x01 and 0xc2/0x02 on fixed counters 4-6 and falls back to general ones.
const SKYMONT: EcoreTopDown = EcoreTopDown {
    arch: EcoreArch::Skymont,
    width: 8,
    events: &[
        ev(FrontendBound, "TOPDOWN_FE_BOUND.ALL_P", 0x9c, 0x01),
        ev(BadSpeculation, "TOPDOWN_BAD_SPECULATION.ALL_P", 0x73, 0x00),
        ev(BackendBound, "TOPDOWN_BE_BOUND.ALL_P", 0xa4, 0x02),
        ev(Retiring, "TOPDOWN_RETIRING.ALL_P", 0xc2, 0x02),
    ],
    bad_spec_by_remainder: false,
    // Backend Bound + 5 level-2 events on general counters (fixed 4-6 hold the rest), cycles
    // on fixed 1 or a seventh of 8. A kernel without the fixed 4-6 constraints refuses the
    // group at open, and level 2 is dropped there ([`crate::event::plan::IfRefused`]).
    level2: &L2_EVENTS,
    level2_needs_free_cycles_counter: false,
};

impl EcoreArch {
    /// Intel's level-1 TopDown for this core; `None` where Intel has published none
    /// (Darkmont).
    pub fn topdown(self) -> Option<&'static EcoreTopDown> {
        match self {
            EcoreArch::Gracemont => Some(&GRACEMONT),
            EcoreArch::Crestmont => Some(&CRESTMONT),
            EcoreArch::Skymont => Some(&SKYMONT),
            EcoreArch::Darkmont => None,
        }
    }

    /// Lower-case name (`gracemont`).
    pub fn name(self) -> &'static str {
        match self {
            EcoreArch::Gracemont => "gracemont",
            EcoreArch::Crestmont => "crestmont",
            EcoreArch::Skymont => "skymont",
            EcoreArch::Darkmont => "darkmont",
        }
    }
}

impl EcoreTopDown {
    /// The counting group of these events on the core PMU `pmu` in perf's event syntax, led
    /// by core cycles (the slots are `width x` its count): `{cpu_atom/cycles/,cpu_atom/event=
    /// 0x71,umask=0x0,name=TOPDOWN_FE_BOUND.ALL/,...}`. On a hybrid part (`hybrid`) the cycles
    /// event names its PMU, since a bare `cycles` means every core PMU there.
    /// With `level2`, the level-2 events ([`EcoreTopDown::level2`]) follow level 1; the caller
    /// has checked that they fit ([`EcoreTopDown::level2_events`]).
    pub fn group_spec(&self, pmu: &str, hybrid: bool, level2: bool) -> String {
        let mut members = vec![if hybrid {
            format!("{pmu}/cycles/")
        } else {
            "cycles".to_string()
        }];
        members.extend(self.events.iter().map(|e| e.spec(pmu)));
        if level2 {
            members.extend(self.level2.iter().map(|e| e.spec(pmu)));
        }
        format!("{{{}}}", members.join(","))
    }

    /// The level-2 events that fit in the group beside level 1 with the NMI watchdog in state
    /// `nmi_watchdog` (`None`: unknown), or why none do: all of [`EcoreTopDown::level2`],
    /// except on a core whose level 2 needs the cycles counter the watchdog may hold
    /// (Gracemont), which gets them only with the watchdog known to be off.
    pub fn level2_events(
        &self,
        nmi_watchdog: Option<bool>,
    ) -> Result<&'static [EcoreEvent<TdPart>], Level2Blocked> {
        if self.level2_needs_free_cycles_counter && nmi_watchdog != Some(false) {
            return Err(Level2Blocked {
                arch: self.arch,
                watchdog: nmi_watchdog,
            });
        }
        Ok(self.level2)
    }

    /// The category counted by `config` on this core, if any.
    pub fn category_of(&self, config: u64) -> Option<TdCategory> {
        self.events
            .iter()
            .find(|e| e.config() == config)
            .map(|e| e.category)
    }

    /// The level-2 node counted by `config` on this core, if any (any of Intel's five, also
    /// those hrec does not open here: another tool's recording may have them).
    pub fn part_of(&self, config: u64) -> Option<TdPart> {
        L2_EVENTS
            .iter()
            .find(|e| e.config() == config)
            .map(|e| e.category)
    }
}

/// Intel's E-core level-2 event of `part` (the same encoding on Gracemont, Crestmont and
/// Skymont); `None` for none.
pub fn level2_event(part: TdPart) -> Option<&'static EcoreEvent<TdPart>> {
    L2_EVENTS.iter().find(|e| e.category == part)
}

/// One fixed counter of a core PMU: its index (`IA32_FIXED_CTRn`) and the event it counts,
/// as Intel's event files name it (`Counter` "Fixed counter N").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FixedCounter {
    /// `n` of `IA32_FIXED_CTRn`.
    pub index: u32,
    /// Intel's name of the event it counts (`CPU_CLK_UNHALTED.THREAD`).
    pub event: &'static str,
    /// The encoding (`event | umask << 8`) the kernel places on it besides the generic
    /// hardware event, when the event may also take a general counter (Skymont's
    /// architectural TopDown events, which the kernel moves to a general counter when the
    /// fixed one is taken); `None` for the fixed-only pseudo encodings.
    pub config: Option<u64>,
}

/// The counters of one core microarchitecture: how many general ones each logical CPU has
/// and which fixed ones, for planning groups that the kernel can schedule at once.
///
/// Sources (x86 kernels expose neither number in sysfs: `caps/` holds `max_precise`,
/// `pmu_name` and `branches`): the `Counter` fields of Intel's event files, whose widest
/// list is the general counters (`0,1,2,3,4,5,6,7` on Golden Cove, Raptor Cove and Redwood
/// Cove: Sapphire and Emerald Rapids, Alder and Raptor Lake's P-cores, Granite Rapids, Meteor
/// Lake's P-cores; `0..9` on Lion Cove: Lunar and Arrow Lake's P-cores; `0..5` on Gracemont,
/// `0..7` on Crestmont and Skymont, `shared/reference/ecore-topdown.md` 1.2) and `Fixed
/// counter N` (0 instructions, 1 cycles, 2 reference cycles, 3 slots on P-cores, whose
/// `PERF_METRICS` rides on it, perf-abi.md 12.1; Skymont's 4-6 TopDown bad speculation,
/// frontend bound and retiring, ecore-topdown.md 1.2). The NMI watchdog, when on, holds
/// fixed counter 1 (ecore-topdown.md 3), which a planner leaves free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CoreCounters {
    /// The microarchitecture, lower-case (`redwood cove`).
    pub core: &'static str,
    /// General counters per logical CPU (`IA32_PMCx`).
    pub general: u32,
    /// Fixed counters.
    pub fixed: &'static [FixedCounter],
}

const fn fixed(index: u32, event: &'static str, config: Option<u64>) -> FixedCounter {
    FixedCounter {
        index,
        event,
        config,
    }
}

const PCORE_FIXED: &[FixedCounter] = &[
    fixed(0, "INST_RETIRED.ANY", None),
    fixed(1, "CPU_CLK_UNHALTED.THREAD", None),
    fixed(2, "CPU_CLK_UNHALTED.REF_TSC", None),
    fixed(3, "TOPDOWN.SLOTS", None),
];
const ECORE_FIXED: &[FixedCounter] = &[
    fixed(0, "INST_RETIRED.ANY", None),
    fixed(1, "CPU_CLK_UNHALTED.CORE", None),
    fixed(2, "CPU_CLK_UNHALTED.REF_TSC", None),
];
const SKYMONT_FIXED: &[FixedCounter] = &[
    fixed(0, "INST_RETIRED.ANY", None),
    fixed(1, "CPU_CLK_UNHALTED.CORE", None),
    fixed(2, "CPU_CLK_UNHALTED.REF_TSC", None),
    fixed(4, "TOPDOWN_BAD_SPECULATION.ALL", Some(0x0073)),
    fixed(5, "TOPDOWN_FE_BOUND.ALL", Some(0x019c)),
    fixed(6, "TOPDOWN_RETIRING.ALL", Some(0x02c2)),
];

const GOLDEN_COVE: CoreCounters = CoreCounters {
    core: "golden cove",
    general: 8,
    fixed: PCORE_FIXED,
};
const REDWOOD_COVE: CoreCounters = CoreCounters {
    core: "redwood cove",
    general: 8,
    fixed: PCORE_FIXED,
};
const LION_COVE: CoreCounters = CoreCounters {
    core: "lion cove",
    general: 10,
    fixed: PCORE_FIXED,
};
const GRACEMONT_COUNTERS: CoreCounters = CoreCounters {
    core: "gracemont",
    general: 6,
    fixed: ECORE_FIXED,
};
const CRESTMONT_COUNTERS: CoreCounters = CoreCounters {
    core: "crestmont",
    general: 8,
    fixed: ECORE_FIXED,
};
const SKYMONT_COUNTERS: CoreCounters = CoreCounters {
    core: "skymont",
    general: 8,
    fixed: SKYMONT_FIXED,
};

/// P-core models and their core (the PMU is `cpu` on a part with one core type, `cpu_core`
/// on a hybrid one).
const PCORE_MODELS: &[(u32, &CoreCounters)] = &[
    // Sapphire Rapids, Emerald Rapids (Raptor Cove: Golden Cove's counters).
    (0x8F, &GOLDEN_COVE),
    (0xCF, &GOLDEN_COVE),
    // Alder Lake, Raptor Lake.
    (0x97, &GOLDEN_COVE),
    (0x9A, &GOLDEN_COVE),
    (0xB7, &GOLDEN_COVE),
    (0xBA, &GOLDEN_COVE),
    (0xBF, &GOLDEN_COVE),
    // Granite Rapids, Meteor Lake.
    (0xAD, &REDWOOD_COVE),
    (0xAE, &REDWOOD_COVE),
    (0xAA, &REDWOOD_COVE),
    (0xAC, &REDWOOD_COVE),
    (0xB5, &REDWOOD_COVE),
    // Lunar Lake, Arrow Lake.
    (0xBD, &LION_COVE),
    (0xC5, &LION_COVE),
    (0xC6, &LION_COVE),
];

/// The counters of an E-core microarchitecture; `None` for Darkmont (unpublished).
pub fn ecore_counters(arch: EcoreArch) -> Option<&'static CoreCounters> {
    match arch {
        EcoreArch::Gracemont => Some(&GRACEMONT_COUNTERS),
        EcoreArch::Crestmont => Some(&CRESTMONT_COUNTERS),
        EcoreArch::Skymont => Some(&SKYMONT_COUNTERS),
        EcoreArch::Darkmont => None,
    }
}

/// The counters of the core behind PMU `pmu` on `cpu` ([`CoreCounters`]); `None` for a core
/// hrec has no table entry for (Ice Lake's depend on SMT, Darkmont's are unpublished).
pub fn core_counters(cpu: Option<&CpuId>, pmu: &str) -> Option<&'static CoreCounters> {
    match ecore_of(cpu, pmu) {
        Ecore::Arch(arch) => return ecore_counters(arch),
        Ecore::Unknown => return None,
        Ecore::No => {}
    }
    let cpu = cpu.filter(|c| c.vendor == Vendor::Intel && c.family == 6)?;
    if !matches!(pmu, "cpu" | "cpu_core") {
        return None;
    }
    PCORE_MODELS
        .iter()
        .find(|(m, _)| *m == cpu.model)
        .map(|(_, c)| *c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_and_cpuid_strings() {
        let text = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 170\nmodel name\t: Intel(R) Core(TM) Ultra 7 155H\nstepping\t: 4\n";
        let c = CpuId::from_cpuinfo(text).unwrap();
        assert_eq!(
            (c.vendor, c.family, c.model, c.stepping),
            (Vendor::Intel, 6, 0xAA, 4)
        );
        assert_eq!(c.to_string(), "GenuineIntel-6-AA-4");
        assert_eq!(CpuId::parse("GenuineIntel-6-AA-4"), Some(c));
        assert_eq!(
            CpuId::parse("GenuineIntel-6-AA").map(|c| c.model),
            Some(0xAA)
        );
        assert_eq!(CpuId::from_cpuinfo("vendor_id: GenuineIntel\n"), None);
        assert_eq!(CpuId::parse("GenuineIntel,6,170,4"), Some(c));
        assert_eq!(CpuId::parse("banana"), None);
    }

    #[test]
    fn each_pmu_gets_its_cores_rules() {
        let cpu = |model| CpuId {
            vendor: Vendor::Intel,
            family: 6,
            model,
            stepping: 0,
        };
        let arch = |model, pmu| ecore_of(Some(&cpu(model)), pmu);
        assert_eq!(arch(0x97, "cpu_atom"), Ecore::Arch(EcoreArch::Gracemont));
        assert_eq!(arch(0x97, "cpu_core"), Ecore::No);
        assert_eq!(arch(0xAA, "cpu_atom"), Ecore::Arch(EcoreArch::Crestmont));
        assert_eq!(arch(0xC5, "cpu_atom"), Ecore::Arch(EcoreArch::Skymont));
        assert_eq!(
            arch(0xC5, "cpu_lowpower"),
            Ecore::Arch(EcoreArch::Crestmont)
        );
        assert_eq!(arch(0xAF, "cpu"), Ecore::Arch(EcoreArch::Crestmont));
        // P-core servers and unknown hybrids.
        assert_eq!(arch(0xAD, "cpu"), Ecore::No);
        assert_eq!(arch(0xFF, "cpu_atom"), Ecore::Unknown);
        assert_eq!(ecore_of(None, "cpu_atom"), Ecore::Unknown);
        assert_eq!(ecore_of(None, "cpu"), Ecore::No);
        let amd = CpuId {
            vendor: Vendor::Amd,
            family: 25,
            model: 0x61,
            stepping: 2,
        };
        assert_eq!(ecore_of(Some(&amd), "cpu"), Ecore::No);
        assert_eq!(EcoreArch::Darkmont.topdown(), None);
    }

    #[test]
    fn retire_latency_only_where_timed_pebs_is() {
        let cpu = |model| CpuId {
            vendor: Vendor::Intel,
            family: 6,
            model,
            stepping: 0,
        };
        let rl = |model, pmu| retire_latency(Some(&cpu(model)), pmu);
        assert_eq!(rl(0xAD, "cpu"), Some(true));
        assert_eq!(rl(0x8F, "cpu"), Some(false));
        assert_eq!(rl(0xAA, "cpu_core"), Some(true));
        assert_eq!(rl(0xAA, "cpu_atom"), Some(false));
        assert_eq!(rl(0x97, "cpu_core"), Some(false));
        assert_eq!(rl(0xC5, "cpu_lowpower"), Some(false));
        assert_eq!(rl(0xCC, "cpu_atom"), None);
        assert_eq!(retire_latency(None, "cpu"), None);
        assert!(needs_pebs_format_6(Some(&cpu(0xBD))));
        assert!(!needs_pebs_format_6(Some(&cpu(0xAA))));
    }

    #[test]
    fn widths_and_remainder_follow_intels_formulas() {
        let w = |a: EcoreArch| a.topdown().map(|t| (t.width, t.events.len()));
        assert_eq!(w(EcoreArch::Gracemont), Some((5, 3)));
        assert_eq!(w(EcoreArch::Crestmont), Some((6, 4)));
        assert_eq!(w(EcoreArch::Skymont), Some((8, 4)));
        let grt = EcoreArch::Gracemont.topdown().unwrap();
        assert!(grt.bad_spec_by_remainder);
        assert_eq!(grt.category_of(0xc2), Some(TdCategory::Retiring));
        let cmt = EcoreArch::Crestmont.topdown().unwrap();
        assert_eq!(cmt.category_of(0x72), Some(TdCategory::Retiring));
        assert_eq!(cmt.category_of(0xc2), None);
        let skt = EcoreArch::Skymont.topdown().unwrap();
        assert_eq!(skt.category_of(0x02a4), Some(TdCategory::BackendBound));
        // Level 2: three everywhere, five on Skymont; Gracemont's need the cycles counter.
        let l2 = |t: &EcoreTopDown| t.level2.iter().map(|e| e.category).collect::<Vec<_>>();
        let three = vec![IfetchLatency, BranchMispredicts, CoreBound];
        assert_eq!(
            (l2(grt), grt.level2_needs_free_cycles_counter),
            (three.clone(), true)
        );
        assert_eq!(
            (l2(cmt), cmt.level2_needs_free_cycles_counter),
            (three, false)
        );
        assert_eq!(l2(skt).len(), 5);
        assert_eq!(grt.part_of(0x0373), Some(MachineClears));
        assert_eq!(grt.part_of(0x0073), None);
    }

    /// The budget rule: Gracemont's level 2 only with the watchdog known off, the others'
    /// whatever the watchdog; the refusal says why in one phrase.
    #[test]
    fn level2_fits_by_watchdog() {
        let grt = EcoreArch::Gracemont.topdown().unwrap();
        let cmt = EcoreArch::Crestmont.topdown().unwrap();
        let skt = EcoreArch::Skymont.topdown().unwrap();
        assert_eq!(grt.level2_events(Some(false)).unwrap().len(), 3);
        for w in [Some(true), None] {
            assert_eq!(cmt.level2_events(w).unwrap().len(), 3);
            assert_eq!(skt.level2_events(w).unwrap().len(), 5);
        }
        assert_eq!(
            grt.level2_events(Some(true)).unwrap_err().to_string(),
            "gracemont E-cores have too few counters for TopDown level 2 while the NMI watchdog holds one"
        );
        assert_eq!(
            grt.level2_events(None).unwrap_err().to_string(),
            "gracemont E-cores have too few counters for TopDown level 2 if the NMI watchdog holds one, and kernel.nmi_watchdog cannot be read"
        );
        // The group spec with level 2 appends exactly those events.
        let spec = cmt.group_spec("cpu_atom", true, true);
        assert!(spec.starts_with("{cpu_atom/cycles/,"), "{spec}");
        assert!(
            spec.ends_with("name=TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS/}"),
            "{spec}"
        );
        assert_eq!(spec.matches("cpu_atom/event=").count(), 4 + 3);
    }

    #[test]
    fn nmi_watchdog_from_procfs() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_nmi_watchdog(dir.path()), None);
        std::fs::create_dir_all(dir.path().join("sys/kernel")).unwrap();
        for (text, want) in [("1\n", Some(true)), ("0\n", Some(false)), ("x", None)] {
            std::fs::write(dir.path().join("sys/kernel/nmi_watchdog"), text).unwrap();
            assert_eq!(read_nmi_watchdog(dir.path()), want, "{text:?}");
        }
    }

    /// The encodings are Intel's: each name's `EventCode`/`UMask` in the E-core event file of
    /// `../shared/perfmon` (Gracemont: Alder Lake's, Skymont: Arrow Lake's; Crestmont's
    /// file is not among them). Skipped when the files are absent.
    #[test]
    fn encodings_match_intels_event_files() {
        let dir = std::env::var_os("HREC_PERFMON_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/perfmon"));
        for (arch, file) in [
            (
                EcoreArch::Gracemont,
                "ADL/events/alderlake_gracemont_core.json",
            ),
            (EcoreArch::Skymont, "ARL/events/arrowlake_skymont_core.json"),
        ] {
            let Ok(text) = std::fs::read_to_string(dir.join(file)) else {
                eprintln!("skipped: {} not found", dir.join(file).display());
                return;
            };
            let json: serde_json::Value = serde_json::from_str(&text).unwrap();
            let events = json["Events"].as_array().unwrap();
            let hex = |v: &serde_json::Value| {
                u8::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
            };
            let td = arch.topdown().unwrap();
            let l1 = td.events.iter().map(|e| (e.name, e.event, e.umask));
            for (name, event, umask) in
                l1.chain(L2_EVENTS.iter().map(|e| (e.name, e.event, e.umask)))
            {
                let found = events
                    .iter()
                    .find(|j| j["EventName"] == name)
                    .unwrap_or_else(|| panic!("{file}: no {name}"));
                assert_eq!(
                    (hex(&found["EventCode"]), hex(&found["UMask"])),
                    (event, umask),
                    "{file}: {name}"
                );
            }
        }
    }
}
