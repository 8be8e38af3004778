//! Per-function metrics: `record --td-level N` and `record -M LIST` choose Intel's metrics,
//! and this module splits the events they need into sampling-read groups the core PMUs can
//! count at once, each with the counter every member is assigned.
//!
//! **Choosing.** The metrics come from Intel's perfmon files, read as `stat -M` reads them
//! (`--td-level N`: every TMA node of levels 1 to N; `-M`: metric and group names, perf's
//! `tma_*` spellings and `TopdownL3`-style groups included, perf's `tma_<node>_group` for
//! the children of a node, and a bare `IPC` or `CPI` for Intel's `Info_Thread_*` metric).
//! Only core-PMU events are counted per function: a metric named directly that needs an
//! uncore event is refused (it belongs to
//! no function; `stat -M` counts it for the run), one whose events this CPU's event list lacks
//! is refused too; a metric that comes with a group or a level and has such events is left out
//! with a notice. Retire-latency terms (`:R`) and the TSC take no counter: they are listed as
//! [`MetricPlan::uncounted`].
//!
//! **E-cores.** Intel's hybrid metric files are the P-core's; an E-core PMU's metrics come from
//! hrec's E-core tree ([`crate::metrics::ecore`]: Intel's E-core TMA 3.6, levels 1 to 3), a
//! metric file like Intel's, planned by the same packer. Its first group is the default
//! plan's E-core TopDown group, whole (levels 1 and 2 as the counters hold them beside the
//! cycles leader, [`crate::pmu::uarch::EcoreTopDown`]), so the E-core tables keep their
//! `topdown` columns; the other events follow in groups of their own. `--td-level 2` alone
//! is that one group, as before. A part made only of E-cores (Sierra Forest) uses Intel's
//! own file when the directory has one. On a hybrid part a `-M` name goes to the core PMUs
//! whose metrics have it (`tma_fast_nuke` to the E-cores only, with a notice; a PMU left
//! with nothing keeps the default plan), `--td-level` past 3 takes the E-cores' three
//! levels with a notice, and a name no core has is an error.
//!
//! **The budget of a group** is the core's counters ([`uarch::core_counters`]): its general
//! counters and fixed counters 0-2 (instructions, cycles, reference cycles), slots (fixed 3)
//! with `PERF_METRICS` on P-cores, Skymont's TopDown fixed counters 4-6. While the NMI
//! watchdog is on (or cannot be told off) it holds fixed counter 1, so each group's cycles
//! leader takes a general counter: one fewer for the members.
//!
//! **The rules of a group.** Every group is led by a cycles sampler of its own, so each
//! sample carries the deltas of its own group; `CPU_CLK_UNHALTED.THREAD` in a formula is that
//! leader. The `PERF_METRICS` events and `TOPDOWN.SLOTS` go into one slots-led group (the
//! kernel requires slots to lead and not sample), with cycles as its first, sampling member.
//! Each member may only take the counters its `Counter` field lists (`0,1,2,3`, `Fixed counter
//! 0`), and members needing the same extra MSR (`ldlat` 0x3F6, `frontend` 0x3F7, offcore
//! response 0x1A6/0x1A7) must agree on its value: the MSR is one per core, so two values
//! cannot count at once. That is what Intel's `TakenAlone` means in practice (Granite Rapids'
//! `INT_MISC.UNKNOWN_BRANCH_CYCLES` needs `frontend=0x7`, `UOPS_RETIRED.MS` `frontend=0x8`);
//! hrec keeps one offcore-response value per group even though the kernel has two MSRs for it.
//!
//! **Packing.** Events with the fewest allowed counters go first, each into the first group
//! where the MSR rule holds and a counter assignment still exists; a new group otherwise. The
//! assignment is a bipartite matching of members to counters (augmenting paths), found
//! again for every tried insertion and kept in the plan, so `--dry-run` shows it and a later
//! step knows which counter counted what.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Host;
use super::defaults::default_events;
use crate::event::resolve::topdown_metric_names;
use crate::metrics::perfmon::{Encoding, EventRef, Metric, Perfmon, ResolveError};
use crate::pmu::uarch::{self, CoreCounters, Ecore};
use crate::pmu::{Pmu, Pmus};

/// What `--td-level` and `-M` asked for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetricChoice {
    /// `--td-level N`: every TMA node of levels 1 to N.
    pub td_level: Option<u32>,
    /// `-M`: metric and group names (comma-separated lists allowed).
    pub metrics: Vec<String>,
}

impl MetricChoice {
    /// True when nothing was asked for (the default plan).
    pub fn is_empty(&self) -> bool {
        self.td_level.is_none() && self.metrics.iter().all(|m| m.trim().is_empty())
    }
}

/// A counter of a core PMU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "index")]
pub enum Counter {
    /// General counter `IA32_PMCn`.
    General(u32),
    /// Fixed counter `IA32_FIXED_CTRn`.
    Fixed(u32),
    /// A `PERF_METRICS` field, read with slots (fixed counter 3).
    PerfMetrics,
}

impl std::fmt::Display for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Counter::General(n) => write!(f, "general counter {n}"),
            Counter::Fixed(n) => write!(f, "fixed counter {n}"),
            Counter::PerfMetrics => f.write_str("PERF_METRICS (with slots)"),
        }
    }
}

/// The extra MSR an event programs besides its event-select register.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtraMsr {
    /// `MSR_PEBS_LD_LAT_THRESHOLD` (0x3F6): perf's `ldlat=`.
    Ldlat,
    /// `MSR_PEBS_FRONTEND` (0x3F7): perf's `frontend=`.
    Frontend,
    /// `MSR_OFFCORE_RSP_0/1` (0x1A6/0x1A7): perf's `offcore_rsp=` (`config1`).
    OffcoreRsp,
}

impl ExtraMsr {
    /// The MSR that `index` (Intel's `MSRIndex`) names, if hrec knows it.
    pub fn of_index(index: u32) -> Option<ExtraMsr> {
        match index {
            0x3F6 => Some(ExtraMsr::Ldlat),
            0x3F7 => Some(ExtraMsr::Frontend),
            0x1A6 | 0x1A7 => Some(ExtraMsr::OffcoreRsp),
            _ => None,
        }
    }
}

/// One member of a planned group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupMember {
    /// Intel's name with its modifiers (`UOPS_RETIRED.MS:c1:e1`), `cycles` for the leader,
    /// `TOPDOWN.SLOTS` for slots, `PERF_METRICS.*` for the kernel's `topdown-*` events.
    pub event: String,
    /// The event in perf's syntax, as the group's `-e` string holds it.
    pub spec: String,
    /// The counter it is assigned.
    pub counter: Counter,
    /// The counters it may take (`Counter` of Intel's event file, within the core's budget).
    #[serde(skip)]
    pub allowed: Vec<Counter>,
    /// The extra MSR and its value, when it needs one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msr: Option<(ExtraMsr, u64)>,
    /// It samples (the group's cycles).
    pub samples: bool,
}

/// A sampling-read group on one core PMU, with a counter assignment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CounterGroup {
    /// The core PMU.
    pub pmu: String,
    /// Its microarchitecture ([`CoreCounters::core`]).
    pub core: String,
    /// General counters of the core.
    pub general: u32,
    /// The NMI watchdog holds fixed counter 1 (on, or not known to be off).
    pub watchdog_holds_fixed1: bool,
    /// Led by slots with `PERF_METRICS` members.
    pub perf_metrics: bool,
    /// Members, leader first, as opened.
    pub members: Vec<GroupMember>,
    /// Where the members come from: `intel` (Intel's metric file) or `ecore-tree`.
    pub source: &'static str,
}

impl CounterGroup {
    /// The group as one `-e` string (`{cycles:P,cpu/event=0x9c,umask=0x1,name=X/,...}:S`).
    pub fn spec(&self) -> String {
        let members: Vec<&str> = self.members.iter().map(|m| m.spec.as_str()).collect();
        format!("{{{}}}:S", members.join(","))
    }
}

/// The groups of `--td-level` / `-M` and what goes with them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct MetricPlan {
    /// The chosen metrics, perf's names (`tma_l3_bound`), in file order, each once.
    pub metrics: Vec<String>,
    /// The chosen metrics of each core PMU with groups: its name, the source (`intel` or
    /// `ecore-tree`) and the metrics, perf's names in file order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_pmu: Vec<PmuMetrics>,
    /// The groups, per core PMU in PMU order.
    pub groups: Vec<CounterGroup>,
    /// `-e` strings of core PMUs left as in the default plan (no counter table, no metric
    /// file), each after the groups of the PMUs before it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub default_groups: Vec<String>,
    /// Terms that take no counter: retire latencies (`:R`, from `-W` samples or Intel's
    /// defaults) and the TSC.
    pub uncounted: Vec<String>,
    /// One-line notices.
    pub notices: Vec<String>,
    /// `--locate`: Intel's `LocateWith` samplers of the nodes asked for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub locate: Vec<LocateSampler>,
    /// What was asked for, as given (the recording keeps it: `Meta::metric_choice`).
    #[serde(skip)]
    pub choice: MetricChoice,
}

/// The metrics planned on one core PMU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PmuMetrics {
    /// The core PMU.
    pub pmu: String,
    /// `intel` (Intel's metric file) or `ecore-tree` (hrec's E-core tree).
    pub source: &'static str,
    /// perf's names, in file order.
    pub metrics: Vec<String>,
}

/// A sampler `record --locate NODE` adds: an event Intel's metric file names in the node's
/// `LocateWith`, sampled on its own with Intel's `SampleAfterValue` as the period, precise
/// (`:P`) where the event file says the event is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LocateSampler {
    /// The TMA node, perf's name (`tma_l3_bound`).
    pub node: String,
    /// Intel's event name (`MEM_LOAD_RETIRED.L3_HIT`).
    pub event: String,
    /// The core PMU it samples on.
    pub pmu: String,
    /// The event is precise (PEBS): its samples name the instruction itself.
    pub precise: bool,
    /// Events per sample (Intel's `SampleAfterValue`); `None`: the record's `-c`/`-F`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<u64>,
    /// The event in perf's syntax.
    pub spec: String,
}

impl MetricPlan {
    /// The groups in words, for `record --dry-run`: per group its PMU, its budget and each
    /// member with the plan's event index and its counter (`events` is the plan's, whose
    /// [`super::PlannedEvent::metric`] places each event).
    pub fn dump(&self, events: &[super::PlannedEvent]) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        if self.per_pmu.len() > 1 {
            // A hybrid part: each core's metrics from its own source.
            let _ = writeln!(out, "metric groups: {}", self.groups.len());
            for m in &self.per_pmu {
                let _ = writeln!(
                    out,
                    "  on {}, {} of {}: {}",
                    m.pmu,
                    m.metrics.len(),
                    if m.source == "ecore-tree" {
                        "hrec's E-core TopDown tree (Intel's E-core TMA 3.6)"
                    } else {
                        "Intel's metrics"
                    },
                    m.metrics.join(", ")
                );
            }
        } else if !self.groups.is_empty() || !self.metrics.is_empty() {
            let _ = write!(out, "metric groups: {}", self.groups.len());
            if !self.metrics.is_empty() {
                let _ = write!(
                    out,
                    ", for {} of Intel's metrics: {}",
                    self.metrics.len(),
                    self.metrics.join(", ")
                );
            }
            let _ = writeln!(out);
        }
        for (gi, g) in self.groups.iter().enumerate() {
            let fixed1 = if g.watchdog_holds_fixed1 {
                ", fixed counter 1 left to the NMI watchdog"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "group {gi} on {} ({}: {} general counters{fixed1}){}, {} events:",
                g.pmu,
                g.core,
                g.general,
                if g.perf_metrics {
                    ", slots-led with PERF_METRICS"
                } else {
                    ""
                },
                g.members.len()
            );
            for (mi, m) in g.members.iter().enumerate() {
                let index = events
                    .iter()
                    .filter(|e| e.metric.as_ref().is_some_and(|s| s.group == gi))
                    .nth(mi)
                    .map(|e| format!("#{}", e.index))
                    .unwrap_or_else(|| "-".into());
                let msr = match m.msr {
                    Some((ExtraMsr::Ldlat, v)) => format!(", ldlat={v}"),
                    Some((ExtraMsr::Frontend, v)) => format!(", frontend={v:#x}"),
                    Some((ExtraMsr::OffcoreRsp, v)) => format!(", offcore_rsp={v:#x}"),
                    None => String::new(),
                };
                let _ = writeln!(
                    out,
                    "  {index:>4} {:<40} {}{msr}{}",
                    m.event,
                    m.counter,
                    if m.samples { ", samples" } else { "" }
                );
            }
        }
        if !self.uncounted.is_empty() {
            let _ = writeln!(
                out,
                "not counted (retire latencies from -W samples or Intel's defaults; TSC): {}",
                self.uncounted.join(", ")
            );
        }
        for d in &self.default_groups {
            let _ = writeln!(out, "as without --td-level: {d}");
        }
        for l in &self.locate {
            let _ = writeln!(
                out,
                "--locate {}: {} on {}, {}every {} events",
                l.node,
                l.event,
                l.pmu,
                if l.precise {
                    "precise, "
                } else {
                    "not precise, "
                },
                l.period
                    .map_or_else(|| "-c/-F".to_string(), |p| p.to_string())
            );
        }
        out
    }
}

/// Why per-function metrics cannot be planned: each one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetricPlanError {
    /// A name that is neither a metric nor a group of the file.
    #[error("-M {name}: no such metric or metric group in {file}{}", closest_text(.closest))]
    Unknown {
        /// The name.
        name: String,
        /// The metric file.
        file: String,
        /// The closest names, best first.
        closest: Vec<String>,
    },
    /// A metric counting uncore events.
    #[error(
        "-M {name}: it counts uncore event {event}, which belongs to no function or thread, so it cannot be had per function; count it for the whole run with hrec stat -M {name}"
    )]
    Uncore {
        /// The metric.
        name: String,
        /// Its first uncore event.
        event: String,
    },
    /// A metric whose event the CPU lacks.
    #[error("-M {name}: this CPU cannot count it: {why}")]
    MissingEvent {
        /// The metric.
        name: String,
        /// Which event, and why.
        why: String,
    },
    /// `--td-level` out of range.
    #[error("--td-level {asked}: Intel's TMA file for this CPU ({file}) has levels 1 to {max}")]
    Level {
        /// The level asked.
        asked: u32,
        /// The deepest level.
        max: u32,
        /// The metric file.
        file: String,
    },
    /// `--td-level 0`.
    #[error(
        "--td-level 0: TopDown levels start at 1 (level 1: frontend bound, bad speculation, backend bound, retiring)"
    )]
    LevelZero,
    /// `-M` without Intel's files.
    #[error("-M needs Intel's metric files for this CPU: {0}")]
    NoPerfmon(String),
    /// An event no group of the core can count.
    #[error("{event} cannot be counted in any group on {pmu}: {why}")]
    Unplaceable {
        /// The event.
        event: String,
        /// The PMU.
        pmu: String,
        /// Why.
        why: String,
    },
    /// No core PMU.
    #[error("--td-level and -M need a core PMU, and this machine has none (no cpu PMU in sysfs)")]
    NoCorePmu,
    /// `--locate` of a name that is no TMA node.
    #[error(
        "--locate {name}: not a TMA node of {file} (--locate takes nodes such as tma_l3_bound){}",
        closest_text(.closest)
    )]
    LocateUnknown {
        /// The name.
        name: String,
        /// The metric file.
        file: String,
        /// The closest names, best first.
        closest: Vec<String>,
    },
    /// `--locate` of a node without a `LocateWith` event.
    #[error("--locate {name}: Intel's file names no event to locate it with{}", locate_children(.children))]
    LocateNone {
        /// The node.
        name: String,
        /// Its children that have one.
        children: Vec<String>,
    },
    /// `--locate` without Intel's files, or without a core PMU.
    #[error("--locate needs Intel's metric files for this CPU and a core PMU: {0}")]
    LocateCannot(String),
}

fn locate_children(children: &[String]) -> String {
    if children.is_empty() {
        String::new()
    } else {
        format!(" (its children have: {})", children.join(", "))
    }
}

fn closest_text(closest: &[String]) -> String {
    if closest.is_empty() {
        String::new()
    } else {
        format!(" (closest: {})", closest.join(", "))
    }
}

/// Plans the groups of `choice` on every core PMU. `perfmon` is Intel's files for this CPU,
/// or why they could not be loaded (needed for `-M`; `--td-level` without them keeps the
/// default TopDown of levels 1 and 2, with a notice). Pure: reads nothing but its arguments.
pub fn plan_metrics(
    pmus: &Pmus,
    host: &Host,
    perfmon: Result<&Perfmon, String>,
    choice: &MetricChoice,
) -> Result<MetricPlan, MetricPlanError> {
    let cpu = host.cpu.as_ref();
    let core = pmus.core_pmus();
    if core.is_empty() {
        return Err(MetricPlanError::NoCorePmu);
    }
    let hybrid = core.len() > 1;
    let names: Vec<&str> = choice
        .metrics
        .iter()
        .flat_map(|n| n.split(','))
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    let watchdog = host.nmi_watchdog != Some(false);
    let mut out = MetricPlan {
        choice: choice.clone(),
        ..MetricPlan::default()
    };
    if host.nmi_watchdog.is_none() {
        out.notices.push(
            "kernel.nmi_watchdog could not be read: planning the groups as if the watchdog holds fixed counter 1".into(),
        );
    }
    if choice.td_level == Some(0) {
        return Err(MetricPlanError::LevelZero);
    }
    let (defaults, default_notices) = default_events(pmus, host);
    // The metric source of each core PMU: Intel's file (P-cores, and a part made only of
    // E-cores when Intel publishes one for it), else hrec's E-core tree.
    let trees: Vec<Option<Perfmon>> = core
        .iter()
        .map(|p| {
            let c = uarch::core_counters(cpu, &p.name)?;
            let td = uarch::ecore_topdown(cpu, &p.name)?;
            if !hybrid && perfmon.is_ok() {
                return None;
            }
            crate::metrics::ecore::tree(td, c).ok()
        })
        .collect();
    // Names need Intel's files, unless hrec's E-core tree stands in for them (a part made
    // only of E-cores without Intel's files, a hybrid part's E-cores).
    if !names.is_empty()
        && let Err(why) = &perfmon
        && trees.iter().all(Option::is_none)
    {
        return Err(MetricPlanError::NoPerfmon(why.clone()));
    }
    // On a hybrid part each name goes to the core PMUs whose source knows it; a name none
    // knows is an error, one some lack is said once.
    let mut names_of: Vec<Vec<&str>> = vec![names.clone(); core.len()];
    if hybrid && !names.is_empty() {
        let intel = perfmon.as_ref().ok().copied();
        let source_of = |i: usize| trees[i].as_ref().or(intel);
        for &n in &names {
            let knows: Vec<bool> = (0..core.len())
                .map(|i| source_of(i).is_some_and(|pm| knows_name(pm, n)))
                .collect();
            if !knows.iter().any(|k| *k) {
                let pm = intel.or(source_of(0));
                return Err(MetricPlanError::Unknown {
                    name: n.to_string(),
                    file: pm
                        .map(|pm| pm.metrics.path.display().to_string())
                        .unwrap_or_default(),
                    closest: pm.map(|pm| closest_names(pm, n)).unwrap_or_default(),
                });
            }
            let lacking: Vec<&str> = (0..core.len())
                .filter(|&i| !knows[i] && source_of(i).is_some())
                .map(|i| core[i].name.as_str())
                .collect();
            if !lacking.is_empty() {
                out.notices.push(format!(
                    "-M {n}: not a metric of {} (not counted there)",
                    lacking.join(", ")
                ));
            }
            for (i, k) in knows.iter().enumerate() {
                if !k {
                    names_of[i].retain(|x| *x != n);
                }
            }
        }
    }
    for (i, p) in core.iter().enumerate() {
        let counters = uarch::core_counters(cpu, &p.name);
        let ecore = uarch::ecore_of(cpu, &p.name);
        let names = &names_of[i];
        // Nothing left for this PMU (every name was another core's): the default plan.
        let nothing = choice.td_level.is_none() && names.is_empty();
        match (ecore, counters, &perfmon) {
            (Ecore::No, Some(_), Ok(_)) if nothing => {
                default_for(&mut out, &defaults, i, &p.name, &default_notices);
            }
            // Intel's file: the P-cores, and a part made only of E-cores that it covers.
            (Ecore::No, Some(c), Ok(pm)) | (Ecore::Arch(_), Some(c), Ok(pm))
                if ecore == Ecore::No || !hybrid =>
            {
                intel_groups(
                    &mut out,
                    pm,
                    p,
                    c,
                    hybrid,
                    watchdog,
                    choice,
                    names,
                    "intel",
                    Vec::new(),
                )?;
            }
            (Ecore::Arch(_), Some(c), _) => {
                let Some(td) = uarch::ecore_topdown(cpu, &p.name) else {
                    default_for(&mut out, &defaults, i, &p.name, &default_notices);
                    continue;
                };
                match &trees[i] {
                    // Level 3, or metrics by name: the whole tree, packed as Intel's files
                    // are; levels 1 and 2 alone: the one group of the default plan.
                    Some(tree) if choice.td_level.is_some_and(|l| l >= 3) || !names.is_empty() => {
                        let mut choice = choice.clone();
                        if hybrid
                            && let Some(l) = choice.td_level
                            && l > crate::metrics::ecore::MAX_LEVEL
                        {
                            out.notices.push(format!(
                                "{}: hrec's E-core TopDown tree has levels 1 to {m}: recording levels 1 to {m} there",
                                p.name,
                                m = crate::metrics::ecore::MAX_LEVEL
                            ));
                            choice.td_level = Some(crate::metrics::ecore::MAX_LEVEL);
                        }
                        // With a level, the default plan's TopDown group comes first, whole,
                        // so that the E-core tables keep their `topdown` columns.
                        // (Level 2 where it fits beside level 1; the tree's other groups hold
                        // it where it does not, so nothing is left out and nothing is said.)
                        let seed = match choice.td_level {
                            Some(_) => {
                                let l = if td.level2_events(host.nmi_watchdog).is_ok() {
                                    2
                                } else {
                                    1
                                };
                                ecore_members(&mut out, td, p, c, hybrid, host, l)
                            }
                            None => Vec::new(),
                        };
                        intel_groups(
                            &mut out,
                            tree,
                            p,
                            c,
                            hybrid,
                            watchdog,
                            &choice,
                            names,
                            "ecore-tree",
                            seed,
                        )?;
                    }
                    _ => ecore_group(&mut out, td, p, c, hybrid, host, choice),
                }
            }
            (Ecore::No, Some(_), Err(why)) => {
                out.notices.push(format!(
                    "{}: no Intel metric file for this CPU ({why}): recording TopDown levels 1 and 2 as without --td-level",
                    p.name
                ));
                default_for(&mut out, &defaults, i, &p.name, &default_notices);
            }
            _ => {
                out.notices.push(format!(
                    "{}: hrec has no counter table for this core{}: recording it as without --td-level",
                    p.name,
                    cpu.map(|c| format!(" (CPU {c})")).unwrap_or_default()
                ));
                default_for(&mut out, &defaults, i, &p.name, &default_notices);
            }
        }
    }
    Ok(out)
}

/// The default plan's group of the `i`-th core PMU `pmu`, with the default plan's notices
/// about it.
fn default_for(out: &mut MetricPlan, defaults: &[String], i: usize, pmu: &str, notices: &[String]) {
    if let Some(d) = defaults.get(i) {
        out.default_groups.push(d.clone());
    }
    let prefix = format!("{pmu}:");
    out.notices
        .extend(notices.iter().filter(|n| n.starts_with(&prefix)).cloned());
}

/// The allowed counters of a `Counter` field (`0,1,2,3`, `Fixed counter 1`) within `c`'s
/// budget.
fn parse_counter_field(field: &str, c: &CoreCounters, fixed1_free: bool) -> Vec<Counter> {
    let f = field.trim();
    if let Some(n) = f
        .strip_prefix("Fixed counter ")
        .and_then(|n| n.trim().parse::<u32>().ok())
    {
        let have = c.fixed.iter().any(|x| x.index == n) && (n != 1 || fixed1_free);
        return if have {
            vec![Counter::Fixed(n)]
        } else {
            Vec::new()
        };
    }
    f.split(',')
        .filter_map(|x| x.trim().parse::<u32>().ok())
        .filter(|&n| n < c.general)
        .map(Counter::General)
        .collect()
}

fn all_general(c: &CoreCounters) -> Vec<Counter> {
    (0..c.general).map(Counter::General).collect()
}

fn cycles_allowed(c: &CoreCounters, fixed1_free: bool) -> Vec<Counter> {
    let mut v = Vec::new();
    if fixed1_free {
        v.push(Counter::Fixed(1));
    }
    v.extend(all_general(c));
    v
}

/// A counter for each member, from the counters each may take (`allowed[i]`), no two the
/// same: a bipartite matching found by augmenting paths (Kuhn); `None` when none exists.
fn assign(allowed: &[&[Counter]]) -> Option<Vec<Counter>> {
    let mut owner: BTreeMap<Counter, usize> = BTreeMap::new();
    fn try_place(
        m: usize,
        allowed: &[&[Counter]],
        owner: &mut BTreeMap<Counter, usize>,
        seen: &mut Vec<Counter>,
    ) -> bool {
        let Some(list) = allowed.get(m) else {
            return false;
        };
        for &c in list.iter() {
            if seen.contains(&c) {
                continue;
            }
            seen.push(c);
            match owner.get(&c).copied() {
                None => {
                    owner.insert(c, m);
                    return true;
                }
                Some(o) => {
                    if try_place(o, allowed, owner, seen) {
                        owner.insert(c, m);
                        return true;
                    }
                }
            }
        }
        false
    }
    for m in 0..allowed.len() {
        let mut seen = Vec::new();
        if !try_place(m, allowed, &mut owner, &mut seen) {
            return None;
        }
    }
    let mut out = vec![Counter::PerfMetrics; allowed.len()];
    for (c, m) in owner {
        if let Some(slot) = out.get_mut(m) {
            *slot = c;
        }
    }
    Some(out)
}

/// Gives every member of `members` that takes a counter (all but the `PERF_METRICS` ones)
/// its counter; false (counters unchanged) when no assignment exists.
fn reassign(members: &mut [GroupMember]) -> bool {
    let takes: Vec<usize> = (0..members.len())
        .filter(|&i| {
            members
                .get(i)
                .is_some_and(|m| m.counter != Counter::PerfMetrics)
        })
        .collect();
    let allowed: Vec<&[Counter]> = takes
        .iter()
        .filter_map(|&i| members.get(i).map(|m| m.allowed.as_slice()))
        .collect();
    let Some(a) = assign(&allowed) else {
        return false;
    };
    for (i, c) in takes.into_iter().zip(a) {
        if let Some(m) = members.get_mut(i) {
            m.counter = c;
        }
    }
    true
}

fn fits(members: &[GroupMember]) -> bool {
    let allowed: Vec<&[Counter]> = members
        .iter()
        .filter(|m| m.counter != Counter::PerfMetrics)
        .map(|m| m.allowed.as_slice())
        .collect();
    assign(&allowed).is_some()
}

fn msr_ok(members: &[GroupMember], msr: Option<(ExtraMsr, u64)>) -> bool {
    match msr {
        None => true,
        Some((kind, value)) => members
            .iter()
            .filter_map(|m| m.msr)
            .all(|(k, v)| k != kind || v == value),
    }
}

/// What one of Intel's metric events is on this core.
enum Need {
    /// The group's cycles leader (`CPU_CLK_UNHALTED.THREAD`).
    Cycles,
    /// `TOPDOWN.SLOTS`: the slots leader of the perf-metrics group.
    Slots,
    /// A `PERF_METRICS` field: Intel's name, the kernel's sysfs name.
    Metric(String, &'static str),
    /// A general or fixed counter event.
    Raw(GroupMember),
    /// No counter (retire latency, TSC).
    Uncounted(String),
}

#[allow(clippy::too_many_arguments)]
fn intel_groups(
    out: &mut MetricPlan,
    perfmon: &Perfmon,
    pmu: &Pmu,
    c: &'static CoreCounters,
    hybrid: bool,
    watchdog: bool,
    choice: &MetricChoice,
    names: &[&str],
    source: &'static str,
    seed: Vec<GroupMember>,
) -> Result<(), MetricPlanError> {
    let file = perfmon.metrics.path.display().to_string();
    let q = |ev: &str, mods: &str| {
        if hybrid {
            format!("{}/{ev}/{mods}", pmu.name)
        } else if mods.is_empty() {
            ev.to_string()
        } else {
            format!("{ev}:{mods}")
        }
    };
    // The metrics: the tree to --td-level, then -M's, each once; `direct` when named.
    let mut chosen: Vec<(&Metric, bool)> = Vec::new();
    if let Some(n) = choice.td_level {
        let max = perfmon
            .all()
            .iter()
            .filter(|m| m.is_tma_node())
            .map(|m| m.level)
            .max()
            .unwrap_or(0);
        if n == 0 || n > max {
            return Err(MetricPlanError::Level {
                asked: n,
                max,
                file,
            });
        }
        chosen.extend(perfmon.tma_metrics(n).into_iter().map(|m| (m, false)));
    }
    for &n in names {
        // A bare per-thread Info name (`IPC`, `CPI`) as older perf files spelled Intel's
        // `Info_Thread_IPC`.
        let named = perfmon
            .metric(n)
            .or_else(|| perfmon.metric(&format!("Info_Thread_{n}")));
        let found: Vec<(&Metric, bool)> = match named {
            Some(m) => vec![(m, true)],
            None => perfmon
                .metrics_in_group(n)
                .into_iter()
                .chain(node_group(perfmon, n))
                .map(|m| (m, false))
                .collect(),
        };
        if found.is_empty() {
            return Err(MetricPlanError::Unknown {
                name: n.to_string(),
                file,
                closest: closest_names(perfmon, n),
            });
        }
        for (m, direct) in found {
            match chosen.iter_mut().find(|(x, _)| x.name == m.name) {
                Some(x) => x.1 |= direct,
                None => chosen.push((m, direct)),
            }
        }
    }

    let perf_metrics: Vec<&'static str> =
        topdown_metric_names(pmu).iter().map(|(n, _)| *n).collect();
    let fixed1_free = !watchdog;
    let mut needs: Vec<(String, Need)> = Vec::new();
    let mut left_out: Vec<String> = Vec::new();
    let mut mine_names: Vec<String> = Vec::new();
    for (m, direct) in &chosen {
        let mut mine: Vec<(String, Need)> = Vec::new();
        let mut problem: Option<MetricPlanError> = None;
        for e in m.used_events() {
            match classify(perfmon, e, c, fixed1_free, &perf_metrics, pmu) {
                Ok(n) => mine.push((e.to_string(), n)),
                Err(p) => {
                    problem = Some(match p {
                        Problem::Uncore(event) => MetricPlanError::Uncore {
                            name: m.perf_name(),
                            event,
                        },
                        Problem::Missing(why) => MetricPlanError::MissingEvent {
                            name: m.perf_name(),
                            why,
                        },
                    });
                    break;
                }
            }
        }
        match problem {
            Some(p) if *direct => return Err(p),
            Some(p) => left_out.push(p.to_string().trim_start_matches("-M ").to_string()),
            None => {
                mine_names.push(m.perf_name());
                for (k, n) in mine {
                    if !needs.iter().any(|(x, _)| *x == k) {
                        needs.push((k, n));
                    }
                }
            }
        }
    }
    for n in &mine_names {
        if !out.metrics.contains(n) {
            out.metrics.push(n.clone());
        }
    }
    out.per_pmu.push(PmuMetrics {
        pmu: pmu.name.clone(),
        source,
        metrics: mine_names,
    });
    if !left_out.is_empty() {
        out.notices.push(format!(
            "{}: {} metric(s) left out: {}",
            pmu.name,
            left_out.len(),
            left_out.join("; ")
        ));
    }

    let leader = |samples: bool| GroupMember {
        event: "cycles".into(),
        spec: q("cycles", "P"),
        counter: Counter::General(0),
        allowed: cycles_allowed(c, fixed1_free),
        msr: None,
        samples,
    };
    let mut groups: Vec<Vec<GroupMember>> = Vec::new();
    // A group given whole (the E-cores' TopDown group): its events are not placed again.
    let seeded: Vec<String> = seed.iter().map(|m| m.event.clone()).collect();
    if !seed.is_empty() {
        groups.push(seed);
    }
    let metrics: Vec<(String, &'static str)> = needs
        .iter()
        .filter_map(|(_, n)| match n {
            Need::Metric(intel, sysfs) => Some((intel.clone(), *sysfs)),
            _ => None,
        })
        .collect();
    let slots = needs.iter().any(|(_, n)| matches!(n, Need::Slots));
    if slots || !metrics.is_empty() {
        let mut g = vec![
            GroupMember {
                event: "TOPDOWN.SLOTS".into(),
                spec: q("slots", ""),
                counter: Counter::Fixed(3),
                allowed: vec![Counter::Fixed(3)],
                msr: None,
                samples: false,
            },
            leader(true),
        ];
        // In the kernel's order of the PERF_METRICS bytes, as the default group has them.
        for (sysfs, _) in topdown_metric_names(pmu) {
            if let Some((intel, _)) = metrics.iter().find(|(_, s)| s == sysfs) {
                g.push(GroupMember {
                    event: intel.clone(),
                    spec: q(sysfs, ""),
                    counter: Counter::PerfMetrics,
                    allowed: Vec::new(),
                    msr: None,
                    samples: false,
                });
            }
        }
        groups.push(g);
    }
    let mut raw: Vec<GroupMember> = needs
        .iter()
        .filter_map(|(_, n)| match n {
            Need::Raw(m) if !seeded.contains(&m.event) => Some(m.clone()),
            _ => None,
        })
        .collect();
    raw.sort_by_key(|m| m.allowed.len());
    for m in raw {
        let mut placed = false;
        for g in groups.iter_mut() {
            if !msr_ok(g, m.msr) {
                continue;
            }
            g.push(m.clone());
            if fits(g) {
                placed = true;
                break;
            }
            g.pop();
        }
        if placed {
            continue;
        }
        let g = vec![leader(true), m.clone()];
        if !fits(&g) {
            return Err(MetricPlanError::Unplaceable {
                event: m.event,
                pmu: pmu.name.clone(),
                why: if m.allowed.is_empty() {
                    "its counter is not one this core has free (fixed counter 1 is the NMI watchdog's while it is on)".into()
                } else {
                    "no counter is left beside the group's cycles".into()
                },
            });
        }
        groups.push(g);
    }
    for (_, n) in &needs {
        if let Need::Uncounted(u) = n
            && !out.uncounted.contains(u)
        {
            out.uncounted.push(u.clone());
        }
    }
    if groups.is_empty() && needs.iter().any(|(_, n)| matches!(n, Need::Cycles)) {
        groups.push(vec![leader(true)]);
    }
    for mut members in groups {
        if !reassign(&mut members) {
            return Err(MetricPlanError::Unplaceable {
                event: members.last().map(|m| m.event.clone()).unwrap_or_default(),
                pmu: pmu.name.clone(),
                why: "the group has no counter assignment".into(),
            });
        }
        out.groups.push(CounterGroup {
            pmu: pmu.name.clone(),
            core: c.core.to_string(),
            general: c.general,
            watchdog_holds_fixed1: watchdog,
            perf_metrics: members.iter().any(|m| m.counter == Counter::PerfMetrics),
            members,
            source,
        });
    }
    Ok(())
}

enum Problem {
    Uncore(String),
    Missing(String),
}

fn classify(
    perfmon: &Perfmon,
    e: &EventRef,
    c: &CoreCounters,
    fixed1_free: bool,
    perf_metrics: &[&str],
    pmu: &Pmu,
) -> Result<Need, Problem> {
    let display = e.to_string();
    if e.retire_latency {
        return Ok(Need::Uncounted(display));
    }
    let upper = e.name.to_ascii_uppercase();
    if upper.starts_with("UNC_") {
        return Err(Problem::Uncore(display));
    }
    if upper == "TOPDOWN.SLOTS" {
        return if perf_metrics.is_empty() {
            Err(Problem::Missing(format!(
                "{display} needs slots with perf-metrics, which {} lacks",
                pmu.name
            )))
        } else {
            Ok(Need::Slots)
        };
    }
    // The cycles of the thread (P-cores) or of the core (E-cores, one thread each).
    if (upper == "CPU_CLK_UNHALTED.THREAD" || upper == "CPU_CLK_UNHALTED.CORE")
        && display.eq_ignore_ascii_case(&e.name)
    {
        return Ok(Need::Cycles);
    }
    match perfmon.resolve(e) {
        Ok(Encoding::Tsc) => Ok(Need::Uncounted(display)),
        Ok(Encoding::TopdownMetric { sysfs_name, .. }) => {
            if perf_metrics.contains(&sysfs_name) {
                Ok(Need::Metric(display, sysfs_name))
            } else {
                Err(Problem::Missing(format!(
                    "{display} is the kernel's {sysfs_name}, which {} does not have",
                    pmu.name
                )))
            }
        }
        Ok(Encoding::Counter(raw)) => {
            let terms = raw
                .perf_terms()
                .map_err(|r| Problem::Missing(r.to_string()))?;
            // A field this kernel's PMU does not describe (`umask2` before Linux 6.11).
            if let Some(t) = terms
                .split(',')
                .filter_map(|t| t.split('=').next())
                .find(|t| !pmu.formats.contains_key(*t))
            {
                return Err(Problem::Missing(format!(
                    "{display} needs the {t} field, which this kernel's {} PMU lacks (no format/{t} in sysfs)",
                    pmu.name
                )));
            }
            let field = perfmon
                .events
                .as_ref()
                .and_then(|l| l.get(&e.name))
                .map(|ev| ev.counter.clone())
                .unwrap_or_default();
            let allowed = parse_counter_field(&field, c, fixed1_free);
            let msr = raw
                .msr
                .and_then(|(i, v)| ExtraMsr::of_index(i).map(|k| (k, v)));
            let mods = match (raw.kernel_only, raw.user_only) {
                (true, false) => "k",
                (false, true) => "u",
                _ => "",
            };
            let name = spec_name(&display);
            let spec = format!("{}/{terms},name={name}/{mods}", pmu.name);
            Ok(Need::Raw(GroupMember {
                event: display,
                spec,
                counter: Counter::General(0),
                allowed,
                msr,
                samples: false,
            }))
        }
        Err(ResolveError::NotCore { .. }) => Err(Problem::Uncore(display)),
        Err(r) => Err(Problem::Missing(format!(
            "{r} ({})",
            perfmon
                .events
                .as_ref()
                .map(|l| l.path.display().to_string())
                .unwrap_or_else(|| "no event list".into())
        ))),
    }
}

#[allow(clippy::too_many_arguments)]
fn ecore_group(
    out: &mut MetricPlan,
    td: &'static uarch::EcoreTopDown,
    pmu: &Pmu,
    c: &'static CoreCounters,
    hybrid: bool,
    host: &Host,
    choice: &MetricChoice,
) {
    let members = ecore_members(out, td, pmu, c, hybrid, host, choice.td_level.unwrap_or(2));
    out.groups.push(CounterGroup {
        pmu: pmu.name.clone(),
        core: c.core.to_string(),
        general: c.general,
        watchdog_holds_fixed1: host.nmi_watchdog != Some(false),
        perf_metrics: false,
        members,
        source: "ecore-tree",
    });
}

/// The E-core TopDown group of the default plan (`--topdown`'s): cycles, the level-1 events
/// and, with `level` 2 or more, the level-2 events the counters hold beside them, with
/// counters assigned; a notice when level 2 does not fit.
fn ecore_members(
    out: &mut MetricPlan,
    td: &'static uarch::EcoreTopDown,
    pmu: &Pmu,
    c: &'static CoreCounters,
    hybrid: bool,
    host: &Host,
    level: u32,
) -> Vec<GroupMember> {
    let watchdog = host.nmi_watchdog != Some(false);
    let fixed1_free = !watchdog;
    let q = |ev: &str, mods: &str| {
        if hybrid {
            format!("{}/{ev}/{mods}", pmu.name)
        } else if mods.is_empty() {
            ev.to_string()
        } else {
            format!("{ev}:{mods}")
        }
    };
    let allowed_for = |config: u64| {
        let mut v = all_general(c);
        v.extend(
            c.fixed
                .iter()
                .filter(|f| f.config == Some(config))
                .map(|f| Counter::Fixed(f.index)),
        );
        v
    };
    let member = |name: &str, spec: String, config: u64| GroupMember {
        event: name.to_string(),
        spec,
        counter: Counter::General(0),
        allowed: allowed_for(config),
        msr: None,
        samples: false,
    };
    let mut members = vec![GroupMember {
        event: "cycles".into(),
        spec: q("cycles", "P"),
        counter: Counter::General(0),
        allowed: cycles_allowed(c, fixed1_free),
        msr: None,
        samples: true,
    }];
    members.extend(
        td.events
            .iter()
            .map(|e| member(e.name, e.spec(&pmu.name), e.config())),
    );
    if level >= 2 {
        match td.level2_events(host.nmi_watchdog) {
            Ok(l2) => members.extend(
                l2.iter()
                    .map(|e| member(e.name, e.spec(&pmu.name), e.config())),
            ),
            Err(why) => out.notices.push(format!(
                "{}: {why}: recording level 1 (sysctl -w kernel.nmi_watchdog=0 for level 2)",
                pmu.name
            )),
        }
    }
    if !reassign(&mut members) {
        // Never with hrec's tables (the tests check it); level 1 alone fits every E-core.
        members.truncate(1 + td.events.len());
        let _ = reassign(&mut members);
    }
    members
}

/// Adds to `plan` the `LocateWith` samplers of the TMA nodes `nodes` (perf's or Intel's
/// names, comma-separated lists allowed) on every P-core PMU (Intel's metric file of a hybrid
/// part is the P-core's). Each event is sampled alone, never in a metric group: a sampler of
/// its own with Intel's `SampleAfterValue`, precise where the event file says so (a
/// non-precise one is kept, with a notice that its samples skid). An event this CPU cannot
/// count is left out with a notice; a node without any event is an error.
pub fn plan_locate(
    pmus: &Pmus,
    host: &Host,
    perfmon: Result<&Perfmon, String>,
    nodes: &[String],
    plan: &mut MetricPlan,
) -> Result<(), MetricPlanError> {
    let names: Vec<&str> = nodes
        .iter()
        .flat_map(|n| n.split(','))
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    let perfmon = perfmon.map_err(MetricPlanError::LocateCannot)?;
    let cpu = host.cpu.as_ref();
    let pcores: Vec<&Pmu> = pmus
        .core_pmus()
        .into_iter()
        .filter(|p| uarch::ecore_of(cpu, &p.name) == Ecore::No)
        .collect();
    if pcores.is_empty() {
        return Err(MetricPlanError::LocateCannot(
            "this machine has no core PMU Intel's metric file is for (no cpu or cpu_core PMU in sysfs)".into(),
        ));
    }
    let file = perfmon.metrics.path.display().to_string();
    let events_of = |m: &Metric| -> Vec<String> {
        m.locate_with
            .as_deref()
            .unwrap_or("")
            .split(';')
            .map(str::trim)
            .filter(|e| !e.is_empty() && *e != "#NA")
            .map(str::to_string)
            .collect()
    };
    for name in names {
        let Some(node) = perfmon.metric(name).filter(|m| m.is_tma_node()) else {
            return Err(MetricPlanError::LocateUnknown {
                name: name.to_string(),
                file,
                closest: closest_names(perfmon, name)
                    .into_iter()
                    .filter(|c| perfmon.metric(c).is_some_and(Metric::is_tma_node))
                    .collect(),
            });
        };
        let events = events_of(node);
        if events.is_empty() {
            return Err(MetricPlanError::LocateNone {
                name: node.perf_name(),
                children: perfmon
                    .all()
                    .iter()
                    .filter(|c| c.parent.as_deref() == Some(node.name.as_str()))
                    .filter(|c| !events_of(c).is_empty())
                    .map(Metric::perf_name)
                    .collect(),
            });
        }
        for ev in events {
            let e = EventRef::parse(&ev);
            let display = e.to_string();
            let raw = match perfmon.resolve(&e) {
                Ok(Encoding::Counter(raw)) => raw,
                Ok(_) => {
                    plan.notices.push(format!(
                        "--locate {}: {display} is no counter event, so it cannot be sampled: left out",
                        node.perf_name()
                    ));
                    continue;
                }
                Err(why) => {
                    plan.notices.push(format!(
                        "--locate {}: {display} cannot be sampled on this CPU ({why}): left out",
                        node.perf_name()
                    ));
                    continue;
                }
            };
            let terms = match raw.perf_terms() {
                Ok(t) => t,
                Err(why) => {
                    plan.notices.push(format!(
                        "--locate {}: {display} cannot be sampled on this CPU ({why}): left out",
                        node.perf_name()
                    ));
                    continue;
                }
            };
            let info = perfmon.events.as_ref().and_then(|l| l.get(&e.name));
            let precise = info.is_some_and(|i| i.precise);
            let period = raw
                .sample_after_value
                .or_else(|| info.and_then(|i| i.sample_after_value))
                .filter(|&p| p > 0);
            let mut mods = String::new();
            match (raw.kernel_only, raw.user_only) {
                (true, false) => mods.push('k'),
                (false, true) => mods.push('u'),
                _ => {}
            }
            if precise {
                mods.push('P');
            }
            let name = spec_name(&display);
            for p in &pcores {
                if plan
                    .locate
                    .iter()
                    .any(|l| l.event == display && l.pmu == p.name)
                {
                    continue;
                }
                let period_term = period.map(|n| format!(",period={n}")).unwrap_or_default();
                let spec = if mods.is_empty() {
                    format!("{}/{terms}{period_term},name={name}/", p.name)
                } else {
                    format!("{}/{terms}{period_term},name={name}/{mods}", p.name)
                };
                plan.locate.push(LocateSampler {
                    node: node.perf_name(),
                    event: display.clone(),
                    pmu: p.name.clone(),
                    precise,
                    period,
                    spec,
                });
            }
            plan.notices.push(format!(
                "--locate {}: sampling {display}{} every {} events{}; `hrec annotate --event {name} SYMBOL` shows the instructions behind the node",
                node.perf_name(),
                if precise { " (precise)" } else { "" },
                period.map_or_else(|| "-c/-F".to_string(), |p| p.to_string()),
                if precise {
                    ""
                } else {
                    " (not a precise event: its samples skid past the instruction that caused them)"
                },
            ));
        }
    }
    Ok(())
}

/// An event reference as the `name=` term of a spec: the event language's name characters
/// only (`UOPS_RETIRED.MS:c1:e1` → `UOPS_RETIRED.MS@c1@e1`, an `ocr_msr_val=V` modifier →
/// `ocr_msr_val_V`).
fn spec_name(display: &str) -> String {
    display.replace(':', "@").replace('=', "_")
}

/// Whether `name` is a metric, a metric group or a `tma_<node>_group` of `perfmon` (as
/// [`intel_groups`] looks names up).
fn knows_name(perfmon: &Perfmon, name: &str) -> bool {
    perfmon.metric(name).is_some()
        || perfmon.metric(&format!("Info_Thread_{name}")).is_some()
        || !perfmon.metrics_in_group(name).is_empty()
        || !node_group(perfmon, name).is_empty()
}

/// perf's `tma_<node>_group`: the children of TMA node `tma_<node>` (their `ParentCategory`
/// is its `MetricName`).
pub fn node_group<'a>(perfmon: &'a Perfmon, name: &str) -> Vec<&'a Metric> {
    let lower = name.to_ascii_lowercase();
    let Some(node) = lower.strip_suffix("_group").and_then(|n| perfmon.metric(n)) else {
        return Vec::new();
    };
    perfmon
        .all()
        .iter()
        .filter(|m| m.parent.as_deref() == Some(node.name.as_str()))
        .collect()
}

/// Up to three metric or group names closest to `name` (edit distance), best first.
pub fn closest_names(perfmon: &Perfmon, name: &str) -> Vec<String> {
    let want = name.to_ascii_lowercase();
    let mut candidates: Vec<String> = Vec::new();
    for m in perfmon.all() {
        candidates.push(m.perf_name());
        if let Some(p) = m.parent.as_deref().and_then(|p| perfmon.metric(p)) {
            let g = format!("{}_group", p.perf_name());
            if !candidates.contains(&g) {
                candidates.push(g);
            }
        }
        for g in &m.groups {
            let g = g.to_string();
            if !candidates.contains(&g) {
                candidates.push(g);
            }
        }
    }
    crate::names::closest(&want, candidates, 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_moves_members_to_make_room() {
        let g = |n: u32| Counter::General(n);
        // The first member could take 0 or 1; the second only 0: augmenting path moves it.
        let wide = [g(0), g(1)];
        let narrow = [g(0)];
        let a = assign(&[&wide, &narrow]).unwrap();
        assert_eq!(a, vec![g(1), g(0)]);
        assert!(assign(&[&narrow, &narrow]).is_none());
    }

    #[test]
    fn spec_names_keep_to_name_characters() {
        assert_eq!(spec_name("UOPS_RETIRED.MS:c1:e1"), "UOPS_RETIRED.MS@c1@e1");
        assert_eq!(
            spec_name("OCR.DEMAND_RFO.L3_MISS:ocr_msr_val=0x103b800002"),
            "OCR.DEMAND_RFO.L3_MISS@ocr_msr_val_0x103b800002"
        );
    }

    #[test]
    fn counter_fields() {
        let c = uarch::core_counters(uarch::CpuId::parse("GenuineIntel-6-AD-1").as_ref(), "cpu")
            .unwrap();
        assert_eq!(parse_counter_field("0,1,2,3", c, true).len(), 4);
        assert_eq!(
            parse_counter_field("Fixed counter 1", c, true),
            vec![Counter::Fixed(1)]
        );
        assert!(parse_counter_field("Fixed counter 1", c, false).is_empty());
    }
}
