//! `hrec stat -M` on E-cores: TopDown levels 1 and 2 by Intel's E-core TMA, from hrec's own
//! table.
//!
//! **Why hrec's table.** For hybrid parts (Alder/Raptor Lake, Meteor Lake, Lunar Lake, Arrow
//! Lake) Intel's `mapfile.csv` lists one metric file, the P-core's (`Core Type` 0x40): its
//! formulas use P-core events (`PERF_METRICS.*`, `TOPDOWN.SLOTS`) that an E-core does not
//! have, so they mean nothing there. Intel publishes the E-core's TMA tree separately, and its
//! first two levels are small: each node is its TopDown event's count divided by the issue
//! slots `W x CPU_CLK_UNHALTED.CORE`, W the pipeline width (Gracemont 5, Crestmont 6, Skymont
//! 8); on Gracemont Bad Speculation is what the other three level-1 categories leave; at
//! level 2 Resource Bound is Backend Bound minus Core Bound. hrec carries those rules
//! ([`crate::pmu::uarch::EcoreTopDown`]) and counts them exactly as `--topdown` does: one group
//! per E-core PMU led by its cycles (the very same group when both are given), the values from
//! [`crate::analysis::topdown::TdCounts`]. So on an E-core PMU the level-1 names (`TopdownL1`/
//! `TmaL1`, and `tma_frontend_bound`, `tma_bad_speculation`, `tma_backend_bound`,
//! `tma_retiring` or Intel's `Frontend_Bound` ... spellings) and the level-2 ones
//! (`TopdownL2`/`TmaL2`, `tma_ifetch_latency`, `tma_ifetch_bandwidth`,
//! `tma_branch_mispredicts`, `tma_machine_clears`, `tma_core_bound`, `tma_resource_bound` or
//! `IFetch_Latency` ...) are answered from that table, and any other metric of the P-core
//! file is refused with a line saying why.
//!
//! **Level 2 and the counter budget.** The level-2 events join the group only where the
//! core's counters hold them beside level 1 and the cycles leader, by the rule `record` and
//! `--topdown` follow ([`crate::pmu::uarch::EcoreTopDown::level2_events`]): always on
//! Crestmont and Skymont, on Gracemont only with `kernel.nmi_watchdog` known to be off (a
//! group too big for the counters would never be scheduled, level 1 included). Where IFetch
//! Bandwidth and Machine Clears are not counted (all but Skymont) they are their level-1
//! parent minus the counted sibling.
//!
//! **Where it applies.** On a hybrid part: with `--cputype atom` (or `lowpower`), and, without
//! `--cputype`, beside the P-core's metrics for every E-core PMU whose core hrec knows (one
//! block per PMU, as perf prints a hybrid part's metrics per PMU); a name only the E-core
//! tree has (`tma_ifetch_latency`), and that Intel's P-core file lacks, is answered on the
//! E-cores alone. On a part made only of E-cores (Sierra Forest, Grand Ridge, Alder Lake-N:
//! one `cpu` PMU) Intel's own metric file, when the directory has one, is the E-core's and is
//! used as on any other part; this table answers the names when there is none (Alder Lake-N
//! has none at all).
//!
//! A value needs every count its formula reads: cycles and the node's event, or the events
//! it is derived from. A count the kernel refused or never scheduled, or one left out for
//! the counter budget, leaves the metric without a value and says which and why; so do zero
//! cycles (the command never ran on those cores), rather than a share of nothing.

use crate::analysis::topdown::{TdCounts, TdEvent, TdRole};
use crate::pmu::uarch::{EcoreEvent, EcoreTopDown, Level2Blocked, TdCategory, TdPart};

use super::count::{Count, Counter, topdown_counts};
use crate::metrics::MetricValue;

/// The level-1 categories in Intel's tree order (the order `TopdownL1` prints them).
pub const LEVEL1: [TdCategory; 4] = [
    TdCategory::FrontendBound,
    TdCategory::BadSpeculation,
    TdCategory::BackendBound,
    TdCategory::Retiring,
];

/// A level-2 node of Intel's E-core tree (TMA 3.6): the five with an event of their own
/// ([`TdPart`]) and Resource Bound, which has none (Backend Bound minus Core Bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum L2Node {
    /// IFetch Latency (Frontend Bound).
    IfetchLatency,
    /// IFetch Bandwidth (Frontend Bound).
    IfetchBandwidth,
    /// Branch Mispredicts (Bad Speculation).
    BranchMispredicts,
    /// Machine Clears (Bad Speculation).
    MachineClears,
    /// Core Bound: allocation restrictions (Backend Bound).
    CoreBound,
    /// Resource Bound: the rest of Backend Bound.
    ResourceBound,
}

/// The level-2 nodes in Intel's tree order (the order `TopdownL2` prints them).
pub const LEVEL2: [L2Node; 6] = [
    L2Node::IfetchLatency,
    L2Node::IfetchBandwidth,
    L2Node::BranchMispredicts,
    L2Node::MachineClears,
    L2Node::CoreBound,
    L2Node::ResourceBound,
];

impl L2Node {
    /// The node's own event, if it has one.
    pub fn part(self) -> Option<TdPart> {
        Some(match self {
            L2Node::IfetchLatency => TdPart::IfetchLatency,
            L2Node::IfetchBandwidth => TdPart::IfetchBandwidth,
            L2Node::BranchMispredicts => TdPart::BranchMispredicts,
            L2Node::MachineClears => TdPart::MachineClears,
            L2Node::CoreBound => TdPart::CoreBound,
            L2Node::ResourceBound => return None,
        })
    }

    /// The level-1 parent and the counted sibling it is the difference of, where it can be
    /// derived: IFetch Bandwidth (Frontend Bound minus IFetch Latency) and Machine Clears
    /// (Bad Speculation minus Branch Mispredicts) where not counted, Resource Bound (Backend
    /// Bound minus Core Bound) always.
    pub fn derived_from(self) -> Option<(TdCategory, TdPart)> {
        match self {
            L2Node::IfetchBandwidth => Some((TdCategory::FrontendBound, TdPart::IfetchLatency)),
            L2Node::MachineClears => Some((TdCategory::BadSpeculation, TdPart::BranchMispredicts)),
            L2Node::ResourceBound => Some((TdCategory::BackendBound, TdPart::CoreBound)),
            _ => None,
        }
    }

    /// Its index among [`crate::analysis::topdown::ECORE_L2_LABELS`] (the order of
    /// [`crate::analysis::topdown::Level2`]'s E-core values).
    fn label_index(self) -> usize {
        match self {
            L2Node::BranchMispredicts => 0,
            L2Node::MachineClears => 1,
            L2Node::IfetchLatency => 2,
            L2Node::IfetchBandwidth => 3,
            L2Node::CoreBound => 4,
            L2Node::ResourceBound => 5,
        }
    }
}

/// A metric of the E-core tree that hrec answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EcoreMetric {
    /// A level-1 category.
    Level1(TdCategory),
    /// A level-2 node.
    Level2(L2Node),
}

/// perf's name of a metric (`tma_frontend_bound`, `tma_ifetch_latency`).
pub fn perf_name(m: EcoreMetric) -> &'static str {
    match m {
        EcoreMetric::Level1(c) => match c {
            TdCategory::FrontendBound => "tma_frontend_bound",
            TdCategory::BadSpeculation => "tma_bad_speculation",
            TdCategory::BackendBound => "tma_backend_bound",
            TdCategory::Retiring => "tma_retiring",
        },
        EcoreMetric::Level2(n) => match n {
            L2Node::IfetchLatency => "tma_ifetch_latency",
            L2Node::IfetchBandwidth => "tma_ifetch_bandwidth",
            L2Node::BranchMispredicts => "tma_branch_mispredicts",
            L2Node::MachineClears => "tma_machine_clears",
            L2Node::CoreBound => "tma_core_bound",
            L2Node::ResourceBound => "tma_resource_bound",
        },
    }
}

/// Intel's name of a metric (`Frontend_Bound`, `IFetch_Latency`).
fn intel_name(m: EcoreMetric) -> &'static str {
    match m {
        EcoreMetric::Level1(c) => match c {
            TdCategory::FrontendBound => "Frontend_Bound",
            TdCategory::BadSpeculation => "Bad_Speculation",
            TdCategory::BackendBound => "Backend_Bound",
            TdCategory::Retiring => "Retiring",
        },
        EcoreMetric::Level2(n) => match n {
            L2Node::IfetchLatency => "IFetch_Latency",
            L2Node::IfetchBandwidth => "IFetch_Bandwidth",
            L2Node::BranchMispredicts => "Branch_Mispredicts",
            L2Node::MachineClears => "Machine_Clears",
            L2Node::CoreBound => "Core_Bound",
            L2Node::ResourceBound => "Resource_Bound",
        },
    }
}

/// Every metric of the table, level 1 then level 2, each in tree order.
fn all_metrics() -> impl Iterator<Item = EcoreMetric> {
    LEVEL1
        .into_iter()
        .map(EcoreMetric::Level1)
        .chain(LEVEL2.into_iter().map(EcoreMetric::Level2))
}

/// The metrics a `-M` name asks for: a level's whole set for its group (`TopdownL1`/`TmaL1`,
/// `TopdownL2`/`TmaL2`), one for a metric in perf's or Intel's spelling, case-insensitively;
/// `None` for any other name.
pub fn metrics_of(name: &str) -> Option<Vec<EcoreMetric>> {
    let name = name.trim();
    let group = |l: &str| {
        name.eq_ignore_ascii_case(&format!("TopdownL{l}"))
            || name.eq_ignore_ascii_case(&format!("TmaL{l}"))
    };
    if group("1") {
        return Some(LEVEL1.into_iter().map(EcoreMetric::Level1).collect());
    }
    if group("2") {
        return Some(LEVEL2.into_iter().map(EcoreMetric::Level2).collect());
    }
    all_metrics()
        .find(|&m| {
            name.eq_ignore_ascii_case(perf_name(m)) || name.eq_ignore_ascii_case(intel_name(m))
        })
        .map(|m| vec![m])
}

/// The E-core metrics asked for on one E-core PMU.
#[derive(Debug, Clone, PartialEq)]
pub struct EcoreMetrics {
    /// The core PMU (`cpu_atom`, `cpu_lowpower`, or an all-E-core part's `cpu`).
    pub pmu: String,
    /// Whether the machine is hybrid: the group's cycles and the metric rows name the PMU.
    pub hybrid: bool,
    /// The core's TopDown rules.
    pub topdown: &'static EcoreTopDown,
    /// The metrics asked for, in the order asked, each once.
    pub asked: Vec<EcoreMetric>,
    /// The level-2 events the group has (none when no level-2 metric is asked), or why the
    /// counters do not hold them.
    pub level2: Result<&'static [EcoreEvent<TdPart>], Level2Blocked>,
}

impl EcoreMetrics {
    /// The metrics `asked` on PMU `pmu` of core `topdown`, with the NMI watchdog in state
    /// `nmi_watchdog` (`None`: unknown), which decides whether level 2 fits.
    pub fn new(
        pmu: &str,
        hybrid: bool,
        topdown: &'static EcoreTopDown,
        asked: Vec<EcoreMetric>,
        nmi_watchdog: Option<bool>,
    ) -> EcoreMetrics {
        let level2 = if asked.iter().any(|m| matches!(m, EcoreMetric::Level2(_))) {
            topdown.level2_events(nmi_watchdog)
        } else {
            Ok(&[][..])
        };
        EcoreMetrics {
            pmu: pmu.to_string(),
            hybrid,
            topdown,
            asked,
            level2,
        }
    }

    /// The `-e` string of the counting group: cycles leading the core's level-1 events, and
    /// its level-2 events where asked for and they fit.
    pub fn group_spec(&self) -> String {
        let level2 = matches!(self.level2, Ok(l) if !l.is_empty());
        self.topdown.group_spec(&self.pmu, self.hybrid, level2)
    }

    /// Whether the group counts the level-2 node `n` with an event of its own.
    fn counts_part(&self, n: L2Node) -> bool {
        let opened = self.level2.as_ref().map_or(&[][..], |l| *l);
        n.part()
            .is_some_and(|p| opened.iter().any(|e| e.category == p))
    }

    /// Where the formulas come from, for the output's header: `Intel's E-core TMA, level 1:
    /// Gracemont, slots = 5 x cycles, Bad Speculation the remainder`.
    pub fn source(&self) -> String {
        let arch = self.topdown.arch.name();
        let mut arch_name = arch.to_string();
        if let Some(first) = arch_name.get_mut(..1) {
            first.make_ascii_uppercase();
        }
        let l1 = self
            .asked
            .iter()
            .any(|m| matches!(m, EcoreMetric::Level1(_)));
        let l2 = self
            .asked
            .iter()
            .any(|m| matches!(m, EcoreMetric::Level2(_)));
        let levels = match (l1, l2) {
            (true, true) => "levels 1 and 2",
            (false, true) => "level 2",
            _ => "level 1",
        };
        let mut s = format!(
            "Intel's E-core TMA, {levels}: {arch_name}, slots = {} x cycles",
            self.topdown.width
        );
        let bad_spec_read = self.asked.iter().any(|m| {
            matches!(
                m,
                EcoreMetric::Level1(TdCategory::BadSpeculation)
                    | EcoreMetric::Level2(L2Node::MachineClears)
            )
        });
        if self.topdown.bad_spec_by_remainder && (l1 || bad_spec_read) {
            s.push_str(", Bad Speculation the remainder");
        }
        let derived: Vec<&str> = [L2Node::IfetchBandwidth, L2Node::MachineClears]
            .into_iter()
            .filter(|&n| self.asked.contains(&EcoreMetric::Level2(n)) && !self.counts_part(n))
            .map(|n| match n {
                L2Node::IfetchBandwidth => "IFetch Bandwidth",
                _ => "Machine Clears",
            })
            .collect();
        if !derived.is_empty() && self.level2.is_ok() {
            s.push_str(&format!(", {} by subtraction", derived.join(" and ")));
        }
        s
    }

    /// The asked metrics' values from the counts of this PMU's TopDown counters (roles set by
    /// the plan), in percent of the slots.
    pub fn evaluate(&self, counters: &[Counter], counts: &[Count]) -> Vec<MetricValue> {
        let mine: Vec<(&Counter, &Count)> = counters
            .iter()
            .zip(counts)
            .filter(|(c, _)| c.pmu.as_deref() == Some(self.pmu.as_str()) && c.td.is_some())
            .collect();
        // The counts of a role (the cycles whatever their width).
        let found = |role: TdRole| -> Vec<&Count> {
            mine.iter()
                .filter(|(c, _)| match (c.td, role) {
                    (Some(TdRole::EcoreCycles { .. }), TdRole::EcoreCycles { .. }) => true,
                    (r, _) => r == Some(role),
                })
                .map(|(_, n)| *n)
                .collect()
        };
        // Why a level-2 event is not in the group at all: the counter budget (said first,
        // whatever else is missing: it is what to change).
        let left_out = |role: TdRole, what: &str| -> Option<String> {
            let level2 = matches!(
                role,
                TdRole::Event(
                    TdEvent::FetchLat
                        | TdEvent::BrMispredict
                        | TdEvent::AllocRestrictions
                        | TdEvent::IfetchBandwidth
                        | TdEvent::MachineClears
                )
            );
            match &self.level2 {
                Err(blocked) if level2 && found(role).is_empty() => Some(format!(
                    "{what} was not counted: {blocked} (sysctl -w kernel.nmi_watchdog=0 for level 2)"
                )),
                _ => None,
            }
        };
        // Why an event has no count: refused, never scheduled or not opened; `None` when
        // counted.
        let missing = |role: TdRole, what: &str| -> Option<String> {
            let found = found(role);
            if found.iter().any(|n| n.value().is_some()) {
                return None;
            }
            let why = match found.first() {
                Some(Count::NotSupported(_)) => "<not supported>",
                Some(_) => "<not counted>",
                None => "not opened",
            };
            Some(format!("{what} was not counted here ({why})"))
        };
        let cycles_name = if self.hybrid {
            format!("{}/cycles/", self.pmu)
        } else {
            "cycles".to_string()
        };
        let cycles = TdRole::EcoreCycles {
            width: self.topdown.width,
            remainder: self.topdown.bad_spec_by_remainder,
        };
        let level1_event = |c: TdCategory| {
            let td = TdEvent::of_category(c);
            let name = self
                .topdown
                .events
                .iter()
                .find(|e| e.category == c)
                .map_or("?", |e| e.name);
            (TdRole::Event(td), name)
        };
        let level2_event = |p: TdPart| {
            let td = TdEvent::of_part(p);
            let name = self
                .topdown
                .level2
                .iter()
                .find(|e| e.category == p)
                .map_or("?", |e| e.name);
            (TdRole::Event(td), name)
        };
        // The counted level-1 categories a category's value reads: its own event, or on
        // Gracemont all three for Bad Speculation (the remainder).
        let reads_level1 = |c: TdCategory| -> Vec<TdCategory> {
            if self.topdown.events.iter().any(|e| e.category == c) {
                vec![c]
            } else {
                self.topdown.events.iter().map(|e| e.category).collect()
            }
        };
        let td = topdown_counts(counters, counts, Some(&self.pmu));
        let shares = td.level1();
        let level2 = td.ecore_level2();
        self.asked
            .iter()
            .map(|&m| {
                // The counts the metric's formula reads, after cycles.
                let mut needed: Vec<(TdRole, &str)> = Vec::new();
                match m {
                    EcoreMetric::Level1(c) => {
                        needed.extend(reads_level1(c).into_iter().map(level1_event));
                    }
                    EcoreMetric::Level2(n) => {
                        // Its own event where counted (or where it has no other formula),
                        // else the parent minus the counted sibling.
                        let own = n
                            .part()
                            .filter(|_| self.counts_part(n) || n.derived_from().is_none());
                        match (own, n.derived_from()) {
                            (Some(p), _) => needed.push(level2_event(p)),
                            (None, Some((parent, sibling))) => {
                                needed.extend(reads_level1(parent).into_iter().map(level1_event));
                                needed.push(level2_event(sibling));
                            }
                            (None, None) => {}
                        }
                    }
                }
                let mut why = needed.iter().find_map(|&(role, name)| left_out(role, name));
                if why.is_none() {
                    why = missing(cycles, &format!("CPU_CLK_UNHALTED.CORE ({cycles_name})"));
                }
                for (role, name) in needed {
                    if why.is_some() {
                        break;
                    }
                    why = missing(role, name);
                }
                let value = match why {
                    Some(w) => Err(w),
                    None if td.0[TdCounts::ECORE_SLOTS] == 0 => Err(format!(
                        "no cycles counted on {}: the command did not run on its cores",
                        self.pmu
                    )),
                    None => match (m, shares, level2) {
                        (EcoreMetric::Level1(c), Some(l1), _) => Ok(match c {
                            TdCategory::Retiring => l1[0],
                            TdCategory::BadSpeculation => l1[1],
                            TdCategory::FrontendBound => l1[2],
                            TdCategory::BackendBound => l1[3],
                        }),
                        (EcoreMetric::Level2(n), _, Some(l2)) => Ok(l2.values()[n.label_index()]),
                        _ => Err(format!("no slots counted on {}", self.pmu)),
                    },
                };
                MetricValue {
                    name: perf_name(m).to_string(),
                    unit: "%".into(),
                    value,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Attr;
    use crate::pmu::uarch::EcoreArch;

    use EcoreMetric::{Level1, Level2};

    #[test]
    fn names_in_both_spellings() {
        let l1: Vec<EcoreMetric> = LEVEL1.map(Level1).to_vec();
        let l2: Vec<EcoreMetric> = LEVEL2.map(Level2).to_vec();
        assert_eq!(metrics_of("TopdownL1"), Some(l1.clone()));
        assert_eq!(metrics_of("tmal1"), Some(l1));
        assert_eq!(
            metrics_of("tma_bad_speculation"),
            Some(vec![Level1(TdCategory::BadSpeculation)])
        );
        assert_eq!(
            metrics_of("Retiring"),
            Some(vec![Level1(TdCategory::Retiring)])
        );
        assert_eq!(metrics_of("TopdownL2"), Some(l2.clone()));
        assert_eq!(metrics_of("TmaL2"), Some(l2));
        assert_eq!(
            metrics_of("tma_ifetch_latency"),
            Some(vec![Level2(L2Node::IfetchLatency)])
        );
        assert_eq!(
            metrics_of("Resource_Bound"),
            Some(vec![Level2(L2Node::ResourceBound)])
        );
        assert_eq!(
            LEVEL2.map(|n| perf_name(Level2(n))),
            [
                "tma_ifetch_latency",
                "tma_ifetch_bandwidth",
                "tma_branch_mispredicts",
                "tma_machine_clears",
                "tma_core_bound",
                "tma_resource_bound"
            ]
        );
        assert_eq!(metrics_of("tma_dtlb_load"), None);
        assert_eq!(metrics_of("tma_memory_bound"), None);
        assert_eq!(metrics_of("TopdownL3"), None);
    }

    fn counter(pmu: &str, td: TdRole) -> Counter {
        Counter {
            name: String::new(),
            pmu: Some(pmu.into()),
            attr: Attr::default(),
            leader: 0,
            td: Some(td),
            kernel_tracepoint: false,
        }
    }

    fn val(v: u64) -> Count {
        Count::Value {
            scaled: v as f64,
            raw: v,
            enabled: 1,
            running: 1,
        }
    }

    /// Gracemont: each share is of 5 x cycles and Bad Speculation is the remainder; a
    /// refused count leaves the metrics that read it without a value, naming it.
    #[test]
    fn gracemont_shares_and_missing_counts() {
        let grt = EcoreArch::Gracemont.topdown().unwrap();
        let m = EcoreMetrics::new(
            "cpu_atom",
            true,
            grt,
            LEVEL1.map(Level1).to_vec(),
            Some(true),
        );
        assert_eq!(
            m.source(),
            "Intel's E-core TMA, level 1: Gracemont, slots = 5 x cycles, Bad Speculation the remainder"
        );
        let counters = vec![
            counter(
                "cpu_atom",
                TdRole::EcoreCycles {
                    width: 5,
                    remainder: true,
                },
            ),
            counter("cpu_atom", TdRole::Event(TdEvent::FeBound)),
            counter("cpu_atom", TdRole::Event(TdEvent::BeBound)),
            counter("cpu_atom", TdRole::Event(TdEvent::Retiring)),
            // Another PMU's TopDown does not mix in.
            counter("cpu_core", TdRole::Event(TdEvent::Retiring)),
        ];
        let counts = vec![val(1000), val(1000), val(1500), val(2000), val(7)];
        let v = m.evaluate(&counters, &counts);
        let got: Vec<(&str, f64)> = v
            .iter()
            .map(|x| (x.name.as_str(), *x.value.as_ref().unwrap()))
            .collect();
        assert_eq!(
            got,
            [
                ("tma_frontend_bound", 20.0),
                ("tma_bad_speculation", 10.0),
                ("tma_backend_bound", 30.0),
                ("tma_retiring", 40.0),
            ]
        );
        assert!(v.iter().all(|x| x.unit == "%"));

        // BE refused: backend and bad speculation (the remainder) have no value, the others do.
        let mut refused = counts.clone();
        refused[2] = Count::NotSupported(libc::ENOENT);
        let v = m.evaluate(&counters, &refused);
        assert_eq!(v[0].value, Ok(20.0));
        assert_eq!(v[3].value, Ok(40.0));
        for i in [1, 2] {
            assert_eq!(
                v[i].value,
                Err("TOPDOWN_BE_BOUND.ALL was not counted here (<not supported>)".into())
            );
        }
        // No cycles at all (never ran on these cores): no shares.
        let mut idle = counts.clone();
        idle[0] = val(0);
        let v = m.evaluate(&counters, &idle);
        assert!(
            v.iter()
                .all(|x| x.value.as_ref().is_err_and(|w| w.contains("did not run"))),
            "{v:?}"
        );
        // Cycles refused: named as the kernel's event and Intel's.
        let mut nocyc = counts;
        nocyc[0] = Count::NotSupported(libc::ENOENT);
        assert_eq!(
            m.evaluate(&counters, &nocyc)[0].value,
            Err(
                "CPU_CLK_UNHALTED.CORE (cpu_atom/cycles/) was not counted here (<not supported>)"
                    .into()
            )
        );
    }

    /// Crestmont on an all-E-core part (`cpu`): four counted categories of 6 x cycles.
    #[test]
    fn crestmont_counts_all_four() {
        let cmt = EcoreArch::Crestmont.topdown().unwrap();
        let m = EcoreMetrics::new(
            "cpu",
            false,
            cmt,
            vec![
                Level1(TdCategory::BadSpeculation),
                Level1(TdCategory::Retiring),
            ],
            None,
        );
        assert_eq!(m.group_spec().split(',').next(), Some("{cycles"));
        let counters = vec![
            counter(
                "cpu",
                TdRole::EcoreCycles {
                    width: 6,
                    remainder: false,
                },
            ),
            counter("cpu", TdRole::Event(TdEvent::FeBound)),
            counter("cpu", TdRole::Event(TdEvent::BadSpec)),
            counter("cpu", TdRole::Event(TdEvent::BeBound)),
            counter("cpu", TdRole::Event(TdEvent::Retiring)),
        ];
        let counts = vec![val(100), val(150), val(60), val(240), val(120)];
        let v = m.evaluate(&counters, &counts);
        assert_eq!(v[0].name, "tma_bad_speculation");
        assert_eq!(v[0].value, Ok(10.0));
        assert_eq!(v[1].name, "tma_retiring");
        assert_eq!(v[1].value, Ok(20.0));
    }

    /// (name, value) of each metric, the values unwrapped.
    fn values(v: &[MetricValue]) -> Vec<(&str, f64)> {
        v.iter()
            .map(|x| (x.name.as_str(), *x.value.as_ref().unwrap()))
            .collect()
    }

    /// Gracemont level 2 with the NMI watchdog off: IFetch Latency, Branch Mispredicts and
    /// Core Bound counted, the rest derived. Slots = 5 x 1000 cycles = 5000; FE 1000, BE 1500,
    /// RET 2000, so Bad Speculation = 5000 - 4500 = 500. Then IFetch Latency 600/5000 = 12%,
    /// IFetch Bandwidth (1000 - 600)/5000 = 8%, Branch Mispredicts 400/5000 = 8%, Machine
    /// Clears (500 - 400)/5000 = 2%, Core Bound 500/5000 = 10%, Resource Bound
    /// (1500 - 500)/5000 = 20%.
    #[test]
    fn gracemont_level2_counted_and_derived() {
        let grt = EcoreArch::Gracemont.topdown().unwrap();
        let m = EcoreMetrics::new(
            "cpu_atom",
            true,
            grt,
            LEVEL2.map(Level2).to_vec(),
            Some(false),
        );
        assert_eq!(m.level2.map(<[_]>::len), Ok(3));
        assert_eq!(
            m.source(),
            "Intel's E-core TMA, level 2: Gracemont, slots = 5 x cycles, Bad Speculation the remainder, IFetch Bandwidth and Machine Clears by subtraction"
        );
        let spec = m.group_spec();
        assert!(
            spec.ends_with(",cpu_atom/event=0x71,umask=0x72,name=TOPDOWN_FE_BOUND.FRONTEND_LATENCY/,cpu_atom/event=0x73,umask=0x4,name=TOPDOWN_BAD_SPECULATION.MISPREDICT/,cpu_atom/event=0x74,umask=0x1,name=TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS/}"),
            "{spec}"
        );
        let counters = vec![
            counter(
                "cpu_atom",
                TdRole::EcoreCycles {
                    width: 5,
                    remainder: true,
                },
            ),
            counter("cpu_atom", TdRole::Event(TdEvent::FeBound)),
            counter("cpu_atom", TdRole::Event(TdEvent::BeBound)),
            counter("cpu_atom", TdRole::Event(TdEvent::Retiring)),
            counter("cpu_atom", TdRole::Event(TdEvent::FetchLat)),
            counter("cpu_atom", TdRole::Event(TdEvent::BrMispredict)),
            counter("cpu_atom", TdRole::Event(TdEvent::AllocRestrictions)),
        ];
        let counts: Vec<Count> = [1000, 1000, 1500, 2000, 600, 400, 500].map(val).to_vec();
        assert_eq!(
            values(&m.evaluate(&counters, &counts)),
            [
                ("tma_ifetch_latency", 12.0),
                ("tma_ifetch_bandwidth", 8.0),
                ("tma_branch_mispredicts", 8.0),
                ("tma_machine_clears", 2.0),
                ("tma_core_bound", 10.0),
                ("tma_resource_bound", 20.0),
            ]
        );
        // Branch Mispredicts refused: it and Machine Clears (derived from it) have no value.
        let mut refused = counts.clone();
        refused[5] = Count::NotSupported(libc::ENOENT);
        let v = m.evaluate(&counters, &refused);
        for i in [2, 3] {
            assert_eq!(
                v[i].value,
                Err(
                    "TOPDOWN_BAD_SPECULATION.MISPREDICT was not counted here (<not supported>)"
                        .into()
                ),
                "{}",
                v[i].name
            );
        }
        assert_eq!(v[0].value, Ok(12.0));
        // Retiring not counted: Machine Clears (Bad Speculation is the remainder) is lost.
        let mut unscheduled = counts;
        unscheduled[3] = Count::NotCounted;
        let v = m.evaluate(&counters, &unscheduled);
        assert_eq!(
            v[3].value,
            Err("TOPDOWN_RETIRING.ALL was not counted here (<not counted>)".into())
        );
        assert_eq!(v[5].value, Ok(20.0));
    }

    /// Gracemont with the watchdog on (or unknown): the level-2 events are left out of the
    /// group, and every level-2 metric says so and how to make room; level 1 is unaffected.
    #[test]
    fn gracemont_level2_needs_the_watchdog_off() {
        let grt = EcoreArch::Gracemont.topdown().unwrap();
        let asked = vec![
            Level1(TdCategory::Retiring),
            Level2(L2Node::IfetchLatency),
            Level2(L2Node::ResourceBound),
        ];
        for watchdog in [Some(true), None] {
            let m = EcoreMetrics::new("cpu_atom", true, grt, asked.clone(), watchdog);
            assert!(m.level2.is_err());
            assert_eq!(m.group_spec(), grt.group_spec("cpu_atom", true, false));
            let counters = vec![
                counter(
                    "cpu_atom",
                    TdRole::EcoreCycles {
                        width: 5,
                        remainder: true,
                    },
                ),
                counter("cpu_atom", TdRole::Event(TdEvent::FeBound)),
                counter("cpu_atom", TdRole::Event(TdEvent::BeBound)),
                counter("cpu_atom", TdRole::Event(TdEvent::Retiring)),
            ];
            let counts: Vec<Count> = [1000, 1000, 1500, 2000].map(val).to_vec();
            let v = m.evaluate(&counters, &counts);
            assert_eq!(v[0].value, Ok(40.0));
            let why = match watchdog {
                Some(_) => "while the NMI watchdog holds one",
                None => "if the NMI watchdog holds one, and kernel.nmi_watchdog cannot be read",
            };
            for (i, event) in [
                (1, "TOPDOWN_FE_BOUND.FRONTEND_LATENCY"),
                (2, "TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS"),
            ] {
                assert_eq!(
                    v[i].value,
                    Err(format!(
                        "{event} was not counted: gracemont E-cores have too few counters for TopDown level 2 {why} (sysctl -w kernel.nmi_watchdog=0 for level 2)"
                    ))
                );
            }
            // The budget is named first even when other counts are missing too (a machine
            // without the counters): it is what to change.
            let none = vec![Count::NotSupported(libc::ENOENT); counts.len()];
            let v = m.evaluate(&counters, &none);
            assert!(
                v[0].value
                    .as_ref()
                    .is_err_and(|w| w.starts_with("CPU_CLK_UNHALTED.CORE")),
                "{v:?}"
            );
            assert!(
                v[1].value
                    .as_ref()
                    .is_err_and(|w| w.contains("too few counters")),
                "{v:?}"
            );
        }
    }

    /// Skymont counts all five level-2 events: IFetch Bandwidth and Machine Clears are their
    /// own counts, not the differences. Slots = 8 x 100 = 800; FE 200, Bad Speculation 80, BE
    /// 240, RET 280; IFetch Latency 120/800 = 15%, IFetch Bandwidth 72/800 = 9% (FE minus
    /// IFetch Latency would be 10%), Branch Mispredicts 40/800 = 5%, Machine Clears 24/800 =
    /// 3% (not 80 - 40), Core Bound 96/800 = 12%, Resource Bound (240 - 96)/800 = 18%; level 1
    /// FE 25%, Bad Speculation 10%.
    #[test]
    fn skymont_counts_all_five() {
        let skt = EcoreArch::Skymont.topdown().unwrap();
        let mut asked = vec![
            Level1(TdCategory::FrontendBound),
            Level1(TdCategory::BadSpeculation),
        ];
        asked.extend(LEVEL2.map(Level2));
        let m = EcoreMetrics::new("cpu_atom", true, skt, asked, None);
        assert_eq!(m.level2.map(<[_]>::len), Ok(5));
        assert_eq!(
            m.source(),
            "Intel's E-core TMA, levels 1 and 2: Skymont, slots = 8 x cycles"
        );
        let roles = [
            TdEvent::FeBound,
            TdEvent::BadSpec,
            TdEvent::BeBound,
            TdEvent::Retiring,
            TdEvent::FetchLat,
            TdEvent::BrMispredict,
            TdEvent::AllocRestrictions,
            TdEvent::IfetchBandwidth,
            TdEvent::MachineClears,
        ];
        let mut counters = vec![counter(
            "cpu_atom",
            TdRole::EcoreCycles {
                width: 8,
                remainder: false,
            },
        )];
        counters.extend(roles.map(|r| counter("cpu_atom", TdRole::Event(r))));
        let counts: Vec<Count> = [100, 200, 80, 240, 280, 120, 40, 96, 72, 24]
            .map(val)
            .to_vec();
        assert_eq!(
            values(&m.evaluate(&counters, &counts)),
            [
                ("tma_frontend_bound", 25.0),
                ("tma_bad_speculation", 10.0),
                ("tma_ifetch_latency", 15.0),
                ("tma_ifetch_bandwidth", 9.0),
                ("tma_branch_mispredicts", 5.0),
                ("tma_machine_clears", 3.0),
                ("tma_core_bound", 12.0),
                ("tma_resource_bound", 18.0),
            ]
        );
        // Machine Clears refused: it alone has no value, naming its event.
        let mut refused = counts;
        refused[9] = Count::NotSupported(libc::EINVAL);
        let v = m.evaluate(&counters, &refused);
        assert_eq!(
            v[5].value,
            Err(
                "TOPDOWN_BAD_SPECULATION.MACHINE_CLEARS was not counted here (<not supported>)"
                    .into()
            )
        );
        assert_eq!(v[3].value, Ok(9.0));
    }
}
