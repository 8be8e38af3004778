//! TopDown on AMD Zen 4/5 and Arm Neoverse: which part a core PMU counts for, the vendor's
//! level-1 events and formulas, and the groups they fit in.
//!
//! **The part.** AMD: `/proc/cpuinfo`'s family and model, in the kernel's ranges
//! (`arch/x86/kernel/cpu/amd.c`, `bsp_init_amd`: Zen 4 is family 0x19 models 0x10-0x1f and
//! 0x60-0xaf, Zen 5 family 0x1a models 0x00-0x2f, 0x40-0x4f and 0x60-0x7f). Arm: the core's
//! Main ID Register ([`Midr`]: implementer and part number, and for the N2 its revision),
//! from the PMU's first CPU's `regs/identification/midr_el1` in sysfs or `/proc/cpuinfo`'s
//! `CPU ...` lines, or perf.data's CPUID string (`0x00000000410fd4f0`). A part hrec does not
//! know gets no TopDown, never a guess ([`VendorOf::Unknown`] names it for the notice).
//!
//! **The events and formulas** are the vendors' own: AMD's pipeline utilization
//! (`PipelineL1` in perf's `amdzen4`/`amdzen5` `pipeline.json`: dispatch slots are `W x
//! ls_not_halted_cyc` with W = 6 on Zen 4 and 8 on Zen 5, and each of Frontend Bound, Bad
//! Speculation (`de_src_op_disp.all - ex_ret_ops`), Backend Bound, SMT Contention and
//! Retiring is its count over the slots: never normalised by their sum, Bad Speculation never
//! a remainder); Arm's topdown methodology (`Topdown_L1` in Arm's telemetry files for each
//! Neoverse core: slots are `W x CPU_CYCLES` with W the PMU's `caps/slots`, 5 on N2 and N3,
//! 8 on V1 and V2, 10 on V3). Arm's formulas differ per core and, on the N2, per revision
//! (before r0p3 STALL_SLOT and STALL_SLOT_FRONTEND count one slot too many per cycle, which
//! the formula takes off), and subtract a branch-mispredict or frontend-flush term from one
//! node to add it to another, so a node can come out slightly negative for one function: it
//! is shown as computed ([`level1`]). Neoverse N1 has no slot events (stall cycles only) and
//! gets no TopDown.
//!
//! **The groups** ([`VendorCore::groups`]): a sampling `cycles` leader with the level-1 events
//! as counting members, within the core's counters. AMD has 6 general counters and no fixed
//! one, Neoverse 6 general counters and a cycle counter that only CPU_CYCLES can use. The NMI
//! watchdog, when on (or unknown), holds one: on AMD a general counter, so level 1 is split
//! into `{cycles, dispatched, retired, frontend, backend}` (Bad Speculation's two events stay
//! together) and `{cycles, smt_contention}`, which the kernel multiplexes (the second is left
//! out where a core runs one thread: it counts nothing there); on Arm the cycle counter (the
//! watchdog's own CPU_CYCLES), so the leader takes a general counter and STALL_SLOT is left
//! out and taken as STALL_SLOT_FRONTEND + STALL_SLOT_BACKEND, which Arm defines it to be.
//! Counters are never chained (`long`, `config1:0`): the kernel extends 32-bit counts itself.

use std::fmt;
use std::path::Path;

use serde::Serialize;

use super::Pmu;
use super::uarch::{CpuId, Vendor};

/// An Arm core's Main ID Register (`MIDR_EL1`): implementer `[31:24]`, variant `[23:20]`,
/// architecture `[19:16]`, part number `[15:4]`, revision `[3:0]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Midr(pub u64);

impl Midr {
    /// From its fields (architecture 0xf: "defined by the ID registers").
    pub fn new(implementer: u32, variant: u32, part: u32, revision: u32) -> Midr {
        Midr(
            u64::from(implementer & 0xff) << 24
                | u64::from(variant & 0xf) << 20
                | 0xf << 16
                | u64::from(part & 0xfff) << 4
                | u64::from(revision & 0xf),
        )
    }

    /// `CPU implementer` (0x41: Arm).
    pub fn implementer(self) -> u32 {
        ((self.0 >> 24) & 0xff) as u32
    }

    /// `CPU variant`: the major revision (`r<variant>p<revision>`).
    pub fn variant(self) -> u32 {
        ((self.0 >> 20) & 0xf) as u32
    }

    /// `CPU part`.
    pub fn part(self) -> u32 {
        ((self.0 >> 4) & 0xfff) as u32
    }

    /// `CPU revision`: the minor revision.
    pub fn revision(self) -> u32 {
        (self.0 & 0xf) as u32
    }

    /// The first processor's MIDR in arm64's `/proc/cpuinfo` text (`CPU implementer`, `CPU
    /// variant`, `CPU part`, `CPU revision`); `None` without them (x86 has none).
    pub fn from_cpuinfo(cpuinfo: &str) -> Option<Midr> {
        let field = |key: &str| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key).then(|| parse_int(v.trim()))?
            })
        };
        Some(Midr::new(
            field("CPU implementer")?,
            field("CPU variant")?,
            field("CPU part")?,
            field("CPU revision")?,
        ))
    }

    /// CPU `cpu`'s `midr_el1` in a sysfs snapshot
    /// (`<root>/devices/system/cpu/cpu<N>/regs/identification/midr_el1`, `0x%016llx`).
    pub fn read(sysfs_root: &Path, cpu: u32) -> Option<Midr> {
        let text = std::fs::read_to_string(sysfs_root.join(format!(
            "devices/system/cpu/cpu{cpu}/regs/identification/midr_el1"
        )))
        .ok()?;
        Midr::parse(&text)
    }

    /// perf's arm64 cpuid string, the `midr_el1` text (`0x00000000410fd4f0`).
    pub fn parse(s: &str) -> Option<Midr> {
        let hex = s.trim().strip_prefix("0x")?;
        u64::from_str_radix(hex, 16)
            .ok()
            .filter(|v| v >> 32 == 0)
            .map(Midr)
    }
}

impl fmt::Display for Midr {
    /// As perf writes it into perf.data's CPUID: `0x00000000410fd4f0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#018x}", self.0)
    }
}

/// `0x41` or `65`.
fn parse_int(s: &str) -> Option<u32> {
    match s.strip_prefix("0x") {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// A core whose vendor TopDown hrec knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum VendorCore {
    /// AMD Zen 4 (Genoa, Bergamo, Raphael, ...).
    Zen4,
    /// AMD Zen 5 (Turin, Granite Ridge, ...).
    Zen5,
    /// Arm Neoverse N1: stall cycles only, no slot-based TopDown.
    NeoverseN1,
    /// Arm Neoverse N2 (and Microsoft's Azure Cobalt 100, an N2 r0p0); `r0p3`: revision r0p3
    /// or later, whose slot counts need no correction.
    NeoverseN2 {
        /// r0p3 or later.
        r0p3: bool,
    },
    /// Arm Neoverse V1.
    NeoverseV1,
    /// Arm Neoverse V2.
    NeoverseV2,
    /// Arm Neoverse V3 (and V3AE, part 0xd83, which perf maps to V3's files).
    NeoverseV3,
    /// Arm Neoverse N3.
    NeoverseN3,
}

/// What [`vendor_of`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VendorOf {
    /// Not an AMD or Arm part (Intel's rules apply), or nothing known about it.
    No,
    /// A core hrec has the vendor's TopDown for.
    Core(VendorCore),
    /// An AMD or Arm part hrec has no TopDown for: the notice's words for it.
    Unknown(String),
}

/// Arm's implementer codes hrec knows cores of.
const ARM: u32 = 0x41;
/// Microsoft (Azure Cobalt 100: an N2 r0p0, `arch/arm64/include/asm/cputype.h`).
const MICROSOFT: u32 = 0x6d;

/// The AMD core of a CPU identity, by the kernel's family and model ranges.
pub fn amd_core(cpu: &CpuId) -> Option<VendorCore> {
    if cpu.vendor != Vendor::Amd {
        return None;
    }
    match (cpu.family, cpu.model) {
        (0x19, 0x10..=0x1f | 0x60..=0xaf) => Some(VendorCore::Zen4),
        (0x1a, 0x00..=0x2f | 0x40..=0x4f | 0x60..=0x7f) => Some(VendorCore::Zen5),
        _ => None,
    }
}

/// The Arm core of a MIDR.
pub fn arm_core(midr: Midr) -> Option<VendorCore> {
    match (midr.implementer(), midr.part()) {
        (ARM, 0xd0c) => Some(VendorCore::NeoverseN1),
        (ARM, 0xd49) => Some(VendorCore::NeoverseN2 {
            r0p3: midr.variant() > 0 || midr.revision() >= 3,
        }),
        (MICROSOFT, 0xd49) => Some(VendorCore::NeoverseN2 { r0p3: false }),
        (ARM, 0xd40) => Some(VendorCore::NeoverseV1),
        (ARM, 0xd4f) => Some(VendorCore::NeoverseV2),
        (ARM, 0xd84 | 0xd83) => Some(VendorCore::NeoverseV3),
        (ARM, 0xd8e) => Some(VendorCore::NeoverseN3),
        _ => None,
    }
}

/// The vendor core of a machine: an AMD `cpu` identity, or an Arm core PMU's MIDR.
pub fn vendor_of(cpu: Option<&CpuId>, midr: Option<Midr>) -> VendorOf {
    if let Some(m) = midr {
        return match arm_core(m) {
            Some(c) => VendorOf::Core(c),
            None => VendorOf::Unknown(format!(
                "Arm core implementer {:#04x} part {:#05x} (MIDR {m})",
                m.implementer(),
                m.part()
            )),
        };
    }
    match cpu {
        Some(c) if c.vendor == Vendor::Amd => match amd_core(c) {
            Some(core) => VendorOf::Core(core),
            None => VendorOf::Unknown(format!(
                "AMD family {:#x} model {:#x} ({c})",
                c.family, c.model
            )),
        },
        _ => VendorOf::No,
    }
}

/// What a vendor TopDown event counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum VEvent {
    /// Core cycles: the group's leader (`ls_not_halted_cyc`, `CPU_CYCLES`).
    Cycles,
    /// Slots the frontend left empty (`de_no_dispatch_per_slot.no_ops_from_frontend`,
    /// `STALL_SLOT_FRONTEND`).
    Frontend,
    /// Slots the backend stalled (`de_no_dispatch_per_slot.backend_stalls`,
    /// `STALL_SLOT_BACKEND`).
    Backend,
    /// AMD: slots given to the other SMT thread (`de_no_dispatch_per_slot.smt_contention`).
    Smt,
    /// Ops retired (`ex_ret_ops`, `OP_RETIRED`).
    Retired,
    /// AMD: ops dispatched (`de_src_op_disp.all`).
    Dispatched,
    /// Arm: slots without an op (`STALL_SLOT`).
    StallSlot,
    /// Arm: ops speculatively executed (`OP_SPEC`).
    OpSpec,
    /// Arm N2, V1, V2: branch mispredicts (`BR_MIS_PRED`).
    BrMisPred,
    /// Arm V3, N3: cycles the frontend stalled after a flush (`STALL_FRONTEND_FLUSH`).
    FrontendFlush,
}

/// The number of [`VEvent`]s.
pub const VEVENTS: usize = 10;

impl VEvent {
    /// Its index in [`VCounts`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One vendor TopDown event: the vendor's name and its `attr.config` on the core PMU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct VendorEvent {
    /// What it counts.
    pub event: VEvent,
    /// The vendor's (and perf's) name.
    pub name: &'static str,
    /// `attr.config`: AMD `event[7:0] | umask << 8 | event[11:8] << 32`, Arm the event number.
    pub config: u64,
}

impl VendorEvent {
    /// The event on PMU `pmu` in perf's event syntax, named as the vendor names it: AMD's
    /// `cpu/event=0x1a0,umask=0x1,name=de_no_dispatch_per_slot.no_ops_from_frontend/`
    /// (the event's bits 11:8 are `config[35:32]`), Arm's
    /// `armv8_pmuv3_0/event=0x3e,name=STALL_SLOT_FRONTEND/`.
    pub fn spec(&self, pmu: &str, amd: bool) -> String {
        if amd {
            let event = (self.config & 0xff) | ((self.config >> 32) & 0xf) << 8;
            let umask = (self.config >> 8) & 0xff;
            format!(
                "{pmu}/event={event:#x},umask={umask:#x},name={}/",
                self.name
            )
        } else {
            format!("{pmu}/event={:#x},name={}/", self.config, self.name)
        }
    }
}

/// The vendor core behind a core PMU of a sysfs snapshot rooted at `sysfs_root`: an AMD part
/// by `cpu` (`/proc/cpuinfo`), an Arm core by the `midr_el1` of the PMU's first CPU (else
/// `/proc/cpuinfo`'s, `cpuinfo_midr`).
pub fn vendor_of_pmu(
    sysfs_root: &Path,
    pmu: &Pmu,
    cpu: Option<&CpuId>,
    cpuinfo_midr: Option<Midr>,
) -> VendorOf {
    let first = pmu.cpus.as_ref().and_then(|c| c.cpus().first().copied());
    let midr = first
        .and_then(|c| Midr::read(sysfs_root, c))
        .or(cpuinfo_midr);
    vendor_of(cpu, midr)
}

/// AMD's level 1 (perf `amdzen4/pipeline.json`, `amdzen5/pipeline.json`; the encodings in
/// `amdzen4/other.json`, `core.json`, `amdzen5/decode.json`, `execution.json`).
const AMD_L1: [VendorEvent; 6] = [
    VendorEvent {
        event: VEvent::Cycles,
        name: "ls_not_halted_cyc",
        config: 0x76,
    },
    VendorEvent {
        event: VEvent::Dispatched,
        name: "de_src_op_disp.all",
        config: 0x7aa,
    },
    VendorEvent {
        event: VEvent::Retired,
        name: "ex_ret_ops",
        config: 0xc1,
    },
    VendorEvent {
        event: VEvent::Frontend,
        name: "de_no_dispatch_per_slot.no_ops_from_frontend",
        config: 0x1_0000_01a0,
    },
    VendorEvent {
        event: VEvent::Backend,
        name: "de_no_dispatch_per_slot.backend_stalls",
        config: 0x1_0000_1ea0,
    },
    VendorEvent {
        event: VEvent::Smt,
        name: "de_no_dispatch_per_slot.smt_contention",
        config: 0x1_0000_60a0,
    },
];

/// Arm's level 1 on N2, V1 and V2 (Arm's telemetry files `neoverse-n2.json`,
/// `neoverse-n2-r0p3.json`, `neoverse-v1.json`, `neoverse-v2.json`; event numbers as the
/// kernel's `include/linux/perf/arm_pmuv3.h`).
const NEOVERSE_L1: [VendorEvent; 7] = [
    VendorEvent {
        event: VEvent::Cycles,
        name: "CPU_CYCLES",
        config: 0x11,
    },
    VendorEvent {
        event: VEvent::Frontend,
        name: "STALL_SLOT_FRONTEND",
        config: 0x3e,
    },
    VendorEvent {
        event: VEvent::Backend,
        name: "STALL_SLOT_BACKEND",
        config: 0x3d,
    },
    VendorEvent {
        event: VEvent::Retired,
        name: "OP_RETIRED",
        config: 0x3a,
    },
    VendorEvent {
        event: VEvent::OpSpec,
        name: "OP_SPEC",
        config: 0x3b,
    },
    VendorEvent {
        event: VEvent::BrMisPred,
        name: "BR_MIS_PRED",
        config: 0x10,
    },
    VendorEvent {
        event: VEvent::StallSlot,
        name: "STALL_SLOT",
        config: 0x3f,
    },
];

/// Arm's level 1 on V3 and N3 (`neoverse-v3.json`, `neoverse-n3.json`): the frontend flush
/// stalls in the place of the mispredicts (an event number the kernel does not list).
const NEOVERSE_FL_L1: [VendorEvent; 7] = [
    NEOVERSE_L1[0],
    NEOVERSE_L1[1],
    NEOVERSE_L1[2],
    NEOVERSE_L1[3],
    NEOVERSE_L1[4],
    VendorEvent {
        event: VEvent::FrontendFlush,
        name: "STALL_FRONTEND_FLUSH",
        config: 0x8162,
    },
    NEOVERSE_L1[6],
];

/// The counting groups of a core's level 1 ([`VendorCore::groups`]): each group's members
/// after its `cycles` leader, and the notices to print once.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VendorGroups {
    /// Members of each group (the leader, core cycles, not included).
    pub groups: Vec<Vec<VendorEvent>>,
    /// What the plan leaves out or takes instead, one line each.
    pub notices: Vec<String>,
}

impl VendorCore {
    /// The core's name for messages.
    pub fn name(self) -> &'static str {
        match self {
            VendorCore::Zen4 => "AMD Zen 4",
            VendorCore::Zen5 => "AMD Zen 5",
            VendorCore::NeoverseN1 => "Arm Neoverse N1",
            VendorCore::NeoverseN2 { r0p3: true } => "Arm Neoverse N2 (r0p3 or later)",
            VendorCore::NeoverseN2 { r0p3: false } => "Arm Neoverse N2 (before r0p3)",
            VendorCore::NeoverseV1 => "Arm Neoverse V1",
            VendorCore::NeoverseV2 => "Arm Neoverse V2",
            VendorCore::NeoverseV3 => "Arm Neoverse V3",
            VendorCore::NeoverseN3 => "Arm Neoverse N3",
        }
    }

    /// An AMD core (else Arm).
    pub fn is_amd(self) -> bool {
        matches!(self, VendorCore::Zen4 | VendorCore::Zen5)
    }

    /// The level-1 events, the cycles leader's first; none on the N1.
    pub fn level1_events(self) -> &'static [VendorEvent] {
        match self {
            VendorCore::Zen4 | VendorCore::Zen5 => &AMD_L1,
            VendorCore::NeoverseN1 => &[],
            VendorCore::NeoverseN2 { .. } | VendorCore::NeoverseV1 | VendorCore::NeoverseV2 => {
                &NEOVERSE_L1
            }
            VendorCore::NeoverseV3 | VendorCore::NeoverseN3 => &NEOVERSE_FL_L1,
        }
    }

    /// The event of `config` among the level-1 events.
    pub fn event_of(self, config: u64) -> Option<VEvent> {
        self.level1_events()
            .iter()
            .find(|e| e.config == config)
            .map(|e| e.event)
    }

    /// Arm's slots per cycle for the core (`num_slots` in Arm's telemetry files), used when
    /// the PMU's `caps/slots` is missing or 0; AMD's dispatch width.
    pub fn default_width(self) -> Option<u32> {
        match self {
            VendorCore::Zen4 => Some(6),
            VendorCore::Zen5 => Some(8),
            VendorCore::NeoverseN1 => None,
            VendorCore::NeoverseN2 { .. } | VendorCore::NeoverseN3 => Some(5),
            VendorCore::NeoverseV1 | VendorCore::NeoverseV2 => Some(8),
            VendorCore::NeoverseV3 => Some(10),
        }
    }

    /// Slots per cycle on `pmu`: AMD's dispatch width; on Arm the PMU's `caps/slots`
    /// (PMMIR_EL1.SLOTS, `0x%08x`) when it says, else Arm's number for the core.
    pub fn width(self, pmu: Option<&Pmu>) -> Option<u32> {
        if self.is_amd() {
            return self.default_width();
        }
        pmu.and_then(caps_slots).or_else(|| self.default_width())
    }

    /// The level-1 groups within the core's counters (see the module docs), with the NMI
    /// watchdog `nmi_watchdog` (`None`: unknown, taken as on) and `threads_per_core` (`None`:
    /// unknown, taken as SMT on).
    pub fn groups(self, nmi_watchdog: Option<bool>, threads_per_core: Option<u32>) -> VendorGroups {
        let events = self.level1_events();
        let members = |pick: &[VEvent]| -> Vec<VendorEvent> {
            pick.iter()
                .filter_map(|p| events.iter().find(|e| e.event == *p).copied())
                .collect()
        };
        let watchdog_off = nmi_watchdog == Some(false);
        let mut out = VendorGroups::default();
        match self {
            VendorCore::NeoverseN1 => out.notices.push(
                "Arm Neoverse N1 has no slot-based TopDown (its PMU counts stall cycles only): \
                 sampling cycles without it"
                    .to_string(),
            ),
            VendorCore::Zen4 | VendorCore::Zen5 => {
                use VEvent::*;
                if watchdog_off {
                    out.groups
                        .push(members(&[Dispatched, Retired, Frontend, Backend, Smt]));
                } else {
                    out.groups
                        .push(members(&[Dispatched, Retired, Frontend, Backend]));
                    if threads_per_core == Some(1) {
                        out.notices.push(format!(
                            "{}: one thread per core, so SMT Contention is 0 and not counted",
                            self.name()
                        ));
                    } else {
                        out.groups.push(members(&[Smt]));
                        out.notices.push(format!(
                            "{}: the NMI watchdog holds one of the 6 counters, so SMT Contention \
                             is counted in a group of its own, multiplexed with the other four \
                             nodes' (echo 0 > /proc/sys/kernel/nmi_watchdog counts all five together)",
                            self.name()
                        ));
                    }
                }
            }
            _ => {
                use VEvent::*;
                let last = if matches!(self, VendorCore::NeoverseV3 | VendorCore::NeoverseN3) {
                    FrontendFlush
                } else {
                    BrMisPred
                };
                if watchdog_off {
                    out.groups.push(members(&[
                        Frontend, Backend, StallSlot, Retired, OpSpec, last,
                    ]));
                } else {
                    out.groups
                        .push(members(&[Frontend, Backend, Retired, OpSpec, last]));
                    out.notices.push(format!(
                        "{}: the NMI watchdog holds the cycle counter, so STALL_SLOT is taken \
                         as STALL_SLOT_FRONTEND + STALL_SLOT_BACKEND (Arm's definition) to fit \
                         the 6 counters",
                        self.name()
                    ));
                }
            }
        }
        out
    }
}

/// A PMU's `caps/slots` (`0x00000008`), `None` when missing, unreadable or 0 (a kernel that
/// does not read PMMIR, or a hypervisor that hides it).
pub fn caps_slots(pmu: &Pmu) -> Option<u32> {
    let v = pmu.caps.get("slots")?;
    let n = match v.strip_prefix("0x") {
        Some(h) => u32::from_str_radix(h, 16).ok()?,
        None => v.parse().ok()?,
    };
    (n > 0).then_some(n)
}

/// The counts of one row (a function, a whole run) by [`VEvent`]; `None` for an event that
/// was not counted. `smt_cycles`: the cycles of the group that counted SMT contention when it
/// had a group of its own (AMD with the watchdog on), whose share of the run differs from
/// the other group's.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct VCounts {
    /// By [`VEvent::index`].
    pub values: [Option<f64>; VEVENTS],
    /// Cycles of the SMT-contention group, when it had one.
    pub smt_cycles: Option<f64>,
}

impl VCounts {
    /// The count of `e`.
    pub fn get(&self, e: VEvent) -> Option<f64> {
        self.values.get(e.index()).copied().flatten()
    }

    /// Sets the count of `e`.
    pub fn set(&mut self, e: VEvent, v: f64) {
        if let Some(slot) = self.values.get_mut(e.index()) {
            *slot = Some(v);
        }
    }
}

/// Level 1 in percent of the slots, as the vendor's formulas give it (no clamping).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct VendorLevel1 {
    /// Frontend Bound.
    pub frontend_bound: f64,
    /// Bad Speculation.
    pub bad_speculation: f64,
    /// Backend Bound.
    pub backend_bound: f64,
    /// Retiring.
    pub retiring: f64,
    /// AMD's SMT Contention; `None` on Arm and where it was not counted.
    pub smt_contention: Option<f64>,
}

/// Level 1 of `counts` on `core` with `width` slots per cycle; `None` without cycles or
/// without an event the core's formulas need (or `OP_SPEC` of 0).
pub fn level1(core: VendorCore, width: u32, counts: &VCounts) -> Option<VendorLevel1> {
    use VEvent::*;
    let w = f64::from(width);
    let c = counts.get(Cycles).filter(|&c| c > 0.0 && w > 0.0)?;
    let slots = w * c;
    let get = |e| counts.get(e);
    if core.is_amd() {
        // perf's PipelineL1: each node's count over W x ls_not_halted_cyc.
        let ret = get(Retired)?;
        let smt_slots = counts.smt_cycles.map_or(slots, |s| w * s);
        return Some(VendorLevel1 {
            frontend_bound: 100.0 * get(Frontend)? / slots,
            bad_speculation: 100.0 * (get(Dispatched)? - ret) / slots,
            backend_bound: 100.0 * get(Backend)? / slots,
            retiring: 100.0 * ret / slots,
            smt_contention: get(Smt)
                .filter(|_| smt_slots > 0.0)
                .map(|s| 100.0 * s / smt_slots),
        });
    }
    let (sf, sb) = (get(Frontend)?, get(Backend)?);
    // STALL_SLOT, or its definition where the plan left it out.
    let s = get(StallSlot).unwrap_or(sf + sb);
    let r = get(Retired)? / get(OpSpec).filter(|&o| o > 0.0)?;
    let level1 =
        |fe: f64, be: f64, busy: f64, fe_fix: f64, be_fix: f64, spec_fix: f64| VendorLevel1 {
            frontend_bound: 100.0 * (fe / slots - fe_fix),
            backend_bound: 100.0 * (be / slots - be_fix),
            retiring: 100.0 * r * (1.0 - busy / slots),
            bad_speculation: 100.0 * ((1.0 - r) * (1.0 - busy / slots) + spec_fix),
            smt_contention: None,
        };
    Some(match core {
        // Arm's neoverse-n2.json (r0p0 to r0p2): STALL_SLOT and STALL_SLOT_FRONTEND count
        // one slot too many per cycle.
        VendorCore::NeoverseN2 { r0p3: false } => {
            let m = get(BrMisPred)? / c;
            level1(sf - c, sb, s - c, m, 3.0 * m, 4.0 * m)
        }
        // neoverse-n2-r0p3.json, neoverse-v2.json.
        VendorCore::NeoverseN2 { r0p3: true } | VendorCore::NeoverseV2 => {
            let m = get(BrMisPred)? / c;
            level1(sf, sb, s, m, 3.0 * m, 4.0 * m)
        }
        // neoverse-v1.json.
        VendorCore::NeoverseV1 => {
            let m = get(BrMisPred)? / c;
            level1(sf, sb, s, 4.0 * m, 0.0, 4.0 * m)
        }
        // neoverse-v3.json, neoverse-n3.json.
        VendorCore::NeoverseV3 | VendorCore::NeoverseN3 => {
            let fl = get(FrontendFlush)? / c;
            level1(sf, sb, s, fl, 0.0, fl)
        }
        VendorCore::NeoverseN1 | VendorCore::Zen4 | VendorCore::Zen5 => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn midr_fields_and_text() {
        let grace = Midr::parse("0x00000000410fd4f0\n").unwrap();
        assert_eq!(
            (
                grace.implementer(),
                grace.variant(),
                grace.part(),
                grace.revision()
            ),
            (0x41, 0, 0xd4f, 0)
        );
        assert_eq!(grace.to_string(), "0x00000000410fd4f0");
        assert_eq!(Midr::new(0x41, 1, 0xd40, 1), Midr(0x411fd401));
        assert_eq!(Midr::parse("410fd4f0"), None);
        assert_eq!(Midr::parse("0x1ffffffff"), None);
        let cpuinfo = "processor\t: 0\nBogoMIPS\t: 2000.00\nCPU implementer\t: 0x6d\n\
                       CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd49\nCPU revision\t: 0\n";
        let cobalt = Midr::from_cpuinfo(cpuinfo).unwrap();
        assert_eq!(cobalt, Midr(0x6d0fd490));
        assert_eq!(
            arm_core(cobalt),
            Some(VendorCore::NeoverseN2 { r0p3: false })
        );
        assert_eq!(Midr::from_cpuinfo("vendor_id\t: AuthenticAMD\n"), None);
    }

    #[test]
    fn parts_by_the_kernels_ranges() {
        let amd = |family, model| CpuId {
            vendor: Vendor::Amd,
            family,
            model,
            stepping: 0,
        };
        assert_eq!(amd_core(&amd(0x19, 0x11)), Some(VendorCore::Zen4));
        assert_eq!(amd_core(&amd(0x19, 0x61)), Some(VendorCore::Zen4));
        assert_eq!(amd_core(&amd(0x19, 0x01)), None, "Zen 3");
        assert_eq!(amd_core(&amd(0x1a, 0x02)), Some(VendorCore::Zen5));
        assert_eq!(amd_core(&amd(0x1a, 0x6f)), Some(VendorCore::Zen5));
        assert_eq!(amd_core(&amd(0x1a, 0x50)), None, "Zen 6");
        assert!(matches!(
            vendor_of(Some(&amd(0x1a, 0x50)), None),
            VendorOf::Unknown(s) if s.contains("family 0x1a model 0x50")
        ));
        let intel = CpuId {
            vendor: Vendor::Intel,
            family: 6,
            model: 0xad,
            stepping: 1,
        };
        assert_eq!(vendor_of(Some(&intel), None), VendorOf::No);
        let n2 = |var, rev| arm_core(Midr::new(0x41, var, 0xd49, rev));
        assert_eq!(n2(0, 2), Some(VendorCore::NeoverseN2 { r0p3: false }));
        assert_eq!(n2(0, 3), Some(VendorCore::NeoverseN2 { r0p3: true }));
        assert_eq!(n2(1, 0), Some(VendorCore::NeoverseN2 { r0p3: true }));
        assert_eq!(
            arm_core(Midr::new(0x41, 0, 0xd83, 0)),
            Some(VendorCore::NeoverseV3)
        );
        assert!(matches!(
            vendor_of(None, Some(Midr::new(0x51, 0, 0x001, 0))),
            VendorOf::Unknown(s) if s.contains("implementer 0x51")
        ));
    }

    /// The encodings as perf's event syntax spells them on the `cpu` PMU (`event` in
    /// `config:0-7,32-35`, `umask` in `config:8-15`).
    #[test]
    fn amd_encodings() {
        let enc = |event: u64, umask: u64| (event & 0xff) | umask << 8 | (event >> 8) << 32;
        let want = [
            ("ls_not_halted_cyc", enc(0x76, 0)),
            ("de_src_op_disp.all", enc(0xaa, 0x07)),
            ("ex_ret_ops", enc(0xc1, 0)),
            (
                "de_no_dispatch_per_slot.no_ops_from_frontend",
                enc(0x1a0, 0x01),
            ),
            ("de_no_dispatch_per_slot.backend_stalls", enc(0x1a0, 0x1e)),
            ("de_no_dispatch_per_slot.smt_contention", enc(0x1a0, 0x60)),
        ];
        for (e, (name, config)) in AMD_L1.iter().zip(want) {
            assert_eq!((e.name, e.config), (name, config));
        }
    }

    /// The budget table of the module docs.
    #[test]
    fn groups_fit_the_counters() {
        let sizes = |core: VendorCore, wd, threads| -> Vec<usize> {
            core.groups(wd, threads)
                .groups
                .iter()
                .map(|g| g.len() + 1)
                .collect()
        };
        for zen in [VendorCore::Zen4, VendorCore::Zen5] {
            assert_eq!(sizes(zen, Some(false), Some(2)), [6]);
            assert_eq!(sizes(zen, Some(true), Some(2)), [5, 2]);
            assert_eq!(sizes(zen, None, None), [5, 2]);
            assert_eq!(sizes(zen, Some(true), Some(1)), [5]);
            // Bad Speculation's two events always share a group.
            for g in zen.groups(None, None).groups {
                let has = |e| g.iter().any(|m| m.event == e);
                assert_eq!(has(VEvent::Dispatched), has(VEvent::Retired));
            }
        }
        for arm in [
            VendorCore::NeoverseN2 { r0p3: false },
            VendorCore::NeoverseV1,
            VendorCore::NeoverseV2,
            VendorCore::NeoverseV3,
        ] {
            // Leader on the cycle counter + 6 general; with the watchdog, 1 + 5 general.
            assert_eq!(sizes(arm, Some(false), None), [7]);
            assert_eq!(sizes(arm, Some(true), None), [6]);
            assert_eq!(sizes(arm, None, Some(1)), [6]);
        }
        let n1 = VendorCore::NeoverseN1.groups(Some(false), None);
        assert!(n1.groups.is_empty() && n1.notices[0].contains("no slot-based TopDown"));
    }

    /// Each core's formulas on known counts (computed by hand from the vendors' files).
    #[test]
    fn level1_is_the_vendors_formula() {
        use VEvent::*;
        let counts = |pairs: &[(VEvent, f64)]| {
            let mut c = VCounts::default();
            for &(e, v) in pairs {
                c.set(e, v);
            }
            c
        };
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // Zen 4: 1000 cycles, 6000 slots.
        let z = counts(&[
            (Cycles, 1000.0),
            (Frontend, 1200.0),
            (Backend, 1800.0),
            (Smt, 300.0),
            (Retired, 2400.0),
            (Dispatched, 2700.0),
        ]);
        let l = level1(VendorCore::Zen4, 6, &z).unwrap();
        assert!(close(l.frontend_bound, 20.0) && close(l.backend_bound, 30.0));
        assert!(close(l.retiring, 40.0) && close(l.bad_speculation, 5.0));
        assert_eq!(l.smt_contention, Some(5.0));
        // The SMT group's own cycles.
        let mut z2 = z;
        z2.smt_cycles = Some(500.0);
        assert_eq!(
            level1(VendorCore::Zen4, 6, &z2).unwrap().smt_contention,
            Some(10.0)
        );
        // Zen 5's width.
        assert!(close(
            level1(VendorCore::Zen5, 8, &z).unwrap().retiring,
            30.0
        ));
        // Arm V2: 1000 cycles x 8 slots; SF 2000, SB 3000, S 5000, R/OPS 0.8, M 10.
        let a = counts(&[
            (Cycles, 1000.0),
            (Frontend, 2000.0),
            (Backend, 3000.0),
            (StallSlot, 5000.0),
            (Retired, 2400.0),
            (OpSpec, 3000.0),
            (BrMisPred, 10.0),
        ]);
        let l = level1(VendorCore::NeoverseV2, 8, &a).unwrap();
        assert!(close(l.frontend_bound, 100.0 * (0.25 - 0.01)));
        assert!(close(l.backend_bound, 100.0 * (0.375 - 0.03)));
        assert!(close(l.retiring, 100.0 * 0.8 * (1.0 - 0.625)));
        assert!(close(
            l.bad_speculation,
            100.0 * (0.2 * (1.0 - 0.625) + 0.04)
        ));
        let sum = l.frontend_bound + l.backend_bound + l.retiring + l.bad_speculation;
        assert!(close(sum, 100.0), "S = SF + SB: the nodes add up ({sum})");
        // Without STALL_SLOT (the watchdog plan): SF + SB, the same here.
        let mut no_s = a;
        no_s.values[StallSlot.index()] = None;
        assert_eq!(level1(VendorCore::NeoverseV2, 8, &no_s), Some(l));
        // N2 before r0p3: one slot per cycle off SF and S.
        let l = level1(VendorCore::NeoverseN2 { r0p3: false }, 5, &a).unwrap();
        assert!(close(l.frontend_bound, 100.0 * (1000.0 / 5000.0 - 0.01)));
        assert!(close(l.retiring, 100.0 * 0.8 * (1.0 - 4000.0 / 5000.0)));
        // V1: 4 x mispredicts off the frontend, nothing off the backend.
        let l = level1(VendorCore::NeoverseV1, 8, &a).unwrap();
        assert!(close(l.frontend_bound, 100.0 * (0.25 - 0.04)));
        assert!(close(l.backend_bound, 37.5));
        // V3: frontend flushes instead; a node can be negative and stays so.
        let mut v3 = a;
        v3.set(FrontendFlush, 300.0);
        let l = level1(VendorCore::NeoverseV3, 10, &v3).unwrap();
        assert!(close(l.frontend_bound, 100.0 * (2000.0 / 10000.0 - 0.3)));
        assert!(l.frontend_bound < 0.0);
        // Without cycles, or OP_SPEC 0: nothing.
        let mut none = a;
        none.set(OpSpec, 0.0);
        assert_eq!(level1(VendorCore::NeoverseV2, 8, &none), None);
        assert_eq!(level1(VendorCore::Zen4, 6, &VCounts::default()), None);
    }
}
