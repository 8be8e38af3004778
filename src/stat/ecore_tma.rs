//! `hrec stat -M` on E-cores: TopDown level 1 by Intel's E-core TMA, from hrec's own table.
//!
//! **Why hrec's table.** For hybrid parts (Alder/Raptor Lake, Meteor Lake, Lunar Lake, Arrow
//! Lake) Intel's `mapfile.csv` lists one metric file, the P-core's (`Core Type` 0x40): its
//! formulas use P-core events (`PERF_METRICS.*`, `TOPDOWN.SLOTS`) that an E-core does not
//! have, so they mean nothing there. Intel publishes the E-core's TMA tree separately, and its
//! level 1 is small: each category is its TopDown event's count divided by the issue slots
//! `W x CPU_CLK_UNHALTED.CORE`, W the pipeline width (Gracemont 5, Crestmont 6, Skymont 8),
//! and on Gracemont Bad Speculation is what the other three leave. hrec carries those rules
//! ([`crate::pmu::uarch::EcoreTopDown`]) and counts them exactly as `--topdown` does: one group
//! per E-core PMU led by its cycles, the values from
//! [`crate::analysis::topdown::TdCounts::level1`]. So on an E-core PMU the level-1 names
//! (`TopdownL1`/`TmaL1`, and `tma_frontend_bound`, `tma_bad_speculation`, `tma_backend_bound`,
//! `tma_retiring` or Intel's `Frontend_Bound` ... spellings) are answered from that table, and
//! any other metric of the P-core file is refused with a line saying why.
//!
//! **Where it applies.** On a hybrid part: with `--cputype atom` (or `lowpower`), and, without
//! `--cputype`, beside the P-core's metrics for every E-core PMU whose core hrec knows (one
//! block per PMU, as perf prints a hybrid part's metrics per PMU). On a part made only of
//! E-cores (Sierra Forest, Grand Ridge, Alder Lake-N: one `cpu` PMU) Intel's own metric file,
//! when the directory has one, is the E-core's and is used as on any other part; this table
//! answers the level-1 names when there is none (Alder Lake-N has none at all).
//!
//! A value needs every count its formula reads: cycles and the category's event (on Gracemont
//! all three counted events for Bad Speculation). A count the kernel refused or never
//! scheduled leaves the metric without a value and says which; so do zero cycles (the command
//! never ran on those cores), rather than a share of nothing.

use crate::analysis::topdown::{TdEvent, TdRole};
use crate::pmu::uarch::{EcoreTopDown, TdCategory};

use super::count::{Count, Counter, topdown_counts};
use super::tma::MetricValue;

/// The level-1 categories in Intel's tree order (the order `TopdownL1` prints them).
pub const LEVEL1: [TdCategory; 4] = [
    TdCategory::FrontendBound,
    TdCategory::BadSpeculation,
    TdCategory::BackendBound,
    TdCategory::Retiring,
];

/// perf's name of a level-1 metric (`tma_frontend_bound`).
pub fn perf_name(c: TdCategory) -> &'static str {
    match c {
        TdCategory::FrontendBound => "tma_frontend_bound",
        TdCategory::BadSpeculation => "tma_bad_speculation",
        TdCategory::BackendBound => "tma_backend_bound",
        TdCategory::Retiring => "tma_retiring",
    }
}

/// Intel's name of a level-1 metric (`Frontend_Bound`).
fn intel_name(c: TdCategory) -> &'static str {
    match c {
        TdCategory::FrontendBound => "Frontend_Bound",
        TdCategory::BadSpeculation => "Bad_Speculation",
        TdCategory::BackendBound => "Backend_Bound",
        TdCategory::Retiring => "Retiring",
    }
}

/// The level-1 categories a `-M` name asks for: all four for the group (`TopdownL1`, Intel's
/// `TmaL1`), one for a level-1 metric in perf's or Intel's spelling, case-insensitively;
/// `None` for any other name.
pub fn level1_of(name: &str) -> Option<Vec<TdCategory>> {
    let name = name.trim();
    if name.eq_ignore_ascii_case("TopdownL1") || name.eq_ignore_ascii_case("TmaL1") {
        return Some(LEVEL1.to_vec());
    }
    LEVEL1
        .into_iter()
        .find(|&c| {
            name.eq_ignore_ascii_case(perf_name(c)) || name.eq_ignore_ascii_case(intel_name(c))
        })
        .map(|c| vec![c])
}

/// The level-1 metrics asked for on one E-core PMU.
#[derive(Debug, Clone, PartialEq)]
pub struct EcoreMetrics {
    /// The core PMU (`cpu_atom`, `cpu_lowpower`, or an all-E-core part's `cpu`).
    pub pmu: String,
    /// Whether the machine is hybrid: the group's cycles and the metric rows name the PMU.
    pub hybrid: bool,
    /// The core's level-1 rules.
    pub topdown: &'static EcoreTopDown,
    /// The categories asked for, in the order asked, each once.
    pub asked: Vec<TdCategory>,
}

impl EcoreMetrics {
    /// The `-e` string of the counting group: cycles leading the core's level-1 events.
    pub fn group_spec(&self) -> String {
        self.topdown.group_spec(&self.pmu, self.hybrid)
    }

    /// Where the formulas come from, for the output's header: `Intel's E-core TMA, level 1:
    /// Gracemont, slots = 5 x cycles, Bad Speculation the remainder`.
    pub fn source(&self) -> String {
        let arch = self.topdown.arch.name();
        let mut arch_name = arch.to_string();
        if let Some(first) = arch_name.get_mut(..1) {
            first.make_ascii_uppercase();
        }
        format!(
            "Intel's E-core TMA, level 1: {arch_name}, slots = {} x cycles{}",
            self.topdown.width,
            if self.topdown.bad_spec_by_remainder {
                ", Bad Speculation the remainder"
            } else {
                ""
            }
        )
    }

    /// The asked metrics' values from the counts of this PMU's TopDown counters (roles set by
    /// the plan), in percent of the slots.
    pub fn evaluate(&self, counters: &[Counter], counts: &[Count]) -> Vec<MetricValue> {
        let mine: Vec<(&Counter, &Count)> = counters
            .iter()
            .zip(counts)
            .filter(|(c, _)| c.pmu.as_deref() == Some(self.pmu.as_str()) && c.td.is_some())
            .collect();
        // Why a role has no count: refused, never scheduled or not opened; `None` when counted.
        let missing = |role: &dyn Fn(&TdRole) -> bool, what: &str| -> Option<String> {
            let found: Vec<&Count> = mine
                .iter()
                .filter(|(c, _)| c.td.as_ref().is_some_and(role))
                .map(|(_, n)| *n)
                .collect();
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
        let event_of = |c: TdCategory| self.topdown.events.iter().find(|e| e.category == c);
        let td_event = |c: TdCategory| match c {
            TdCategory::FrontendBound => TdEvent::FeBound,
            TdCategory::BadSpeculation => TdEvent::BadSpec,
            TdCategory::BackendBound => TdEvent::BeBound,
            TdCategory::Retiring => TdEvent::Retiring,
        };
        let td = topdown_counts(counters, counts, Some(&self.pmu));
        let shares = td.level1();
        self.asked
            .iter()
            .map(|&c| {
                // The counts the category's formula reads.
                let needed: Vec<TdCategory> = match event_of(c) {
                    Some(_) => vec![c],
                    None => self.topdown.events.iter().map(|e| e.category).collect(),
                };
                let mut why = missing(
                    &|r| matches!(r, TdRole::EcoreCycles { .. }),
                    &format!("CPU_CLK_UNHALTED.CORE ({cycles_name})"),
                );
                for n in needed {
                    if why.is_some() {
                        break;
                    }
                    let name = event_of(n).map_or("?", |e| e.name);
                    why = missing(&|r| *r == TdRole::Event(td_event(n)), name);
                }
                let value = match (why, shares) {
                    (Some(w), _) => Err(w),
                    (None, _) if td.0[crate::analysis::topdown::TdCounts::ECORE_SLOTS] == 0 => {
                        Err(format!(
                            "no cycles counted on {}: the command did not run on its cores",
                            self.pmu
                        ))
                    }
                    (None, Some(l1)) => Ok(match c {
                        TdCategory::Retiring => l1[0],
                        TdCategory::BadSpeculation => l1[1],
                        TdCategory::FrontendBound => l1[2],
                        TdCategory::BackendBound => l1[3],
                    }),
                    (None, None) => Err(format!("no slots counted on {}", self.pmu)),
                };
                MetricValue {
                    name: perf_name(c).to_string(),
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

    #[test]
    fn level1_names_in_both_spellings() {
        assert_eq!(level1_of("TopdownL1"), Some(LEVEL1.to_vec()));
        assert_eq!(level1_of("tmal1"), Some(LEVEL1.to_vec()));
        assert_eq!(
            level1_of("tma_bad_speculation"),
            Some(vec![TdCategory::BadSpeculation])
        );
        assert_eq!(level1_of("Retiring"), Some(vec![TdCategory::Retiring]));
        assert_eq!(level1_of("tma_dtlb_load"), None);
        assert_eq!(level1_of("TopdownL2"), None);
    }

    fn counter(pmu: &str, td: TdRole) -> Counter {
        Counter {
            name: String::new(),
            pmu: Some(pmu.into()),
            attr: Attr::default(),
            leader: 0,
            td: Some(td),
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
        let m = EcoreMetrics {
            pmu: "cpu_atom".into(),
            hybrid: true,
            topdown: grt,
            asked: LEVEL1.to_vec(),
        };
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
        let m = EcoreMetrics {
            pmu: "cpu".into(),
            hybrid: false,
            topdown: cmt,
            asked: vec![TdCategory::BadSpeculation, TdCategory::Retiring],
        };
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
}
