//! Intel's E-core TopDown tree (TMA 3.6, levels 1 to 3) as a [`Perfmon`], so that `record
//! --td-level 3` / `-M` plan E-core groups and `report` evaluates them exactly as it does
//! Intel's P-core files.
//!
//! **Why hrec builds it.** Intel's `mapfile.csv` gives a hybrid part one metric file, the
//! P-core's; the E-core tree is published separately (intel/perfmon `E-core_TMA_Metrics.csv`,
//! version 3.6, with a column per E-core generation: GRT Gracemont, CMT Crestmont, which
//! Skymont follows with its width of 8). Every node of its first three levels is one
//! TopDown event's count over the issue slots, `slots = W x CPU_CLK_UNHALTED.CORE`, with W the
//! pipeline width ([`EcoreTopDown::width`]), except two:
//!
//! * Gracemont's Bad Speculation is what the other level-1 categories leave:
//!   `(slots - (FE + BE + RET)) / slots` (Crestmont and Skymont count it);
//! * Resource Bound is Backend Bound minus Core Bound.
//!
//! The tree, parent first:
//!
//! ```text
//! Frontend_Bound      IFetch_Latency     ICache_Misses, ITLB_Misses, Branch_Detect, Branch_Resteer
//!                     IFetch_Bandwidth   Cisc, Decode, Predecode, Other_FB
//! Bad_Speculation     Branch_Mispredicts
//!                     Machine_Clears     Nuke, Fast_Nuke
//! Backend_Bound       Core_Bound         Allocation_Restriction
//!                     Resource_Bound     Mem_Scheduler, Non_Mem_Scheduler, Register,
//!                                        Reorder_Buffer, Serialization
//! Retiring            (no level 2 in 3.6)
//! ```
//!
//! Thresholds are Intel's, each with its ancestors' (`> 0.05 & P`: the node past 5% and its
//! parent past its own): level 1 Frontend Bound 20%, Bad Speculation 15%, Backend Bound
//! 10%, Retiring 75%; level 2 IFetch Latency 15%, IFetch Bandwidth 10%, Branch Mispredicts
//! and Machine Clears 5%, Core Bound 10%, Resource Bound 20%; level 3 5% under Frontend Bound
//! and Bad Speculation, 10% under Backend Bound.
//!
//! The level-3 events have the same encodings on all three cores (`TOPDOWN_FE_BOUND` 0x71,
//! `TOPDOWN_BAD_SPECULATION` 0x73, `TOPDOWN_BE_BOUND` 0x74 with the node's unit mask, as
//! Gracemont's and Skymont's event files list them; Crestmont's are the same family's), and
//! only ITLB's name differs (`TOPDOWN_FE_BOUND.ITLB` on Gracemont, `.ITLB_MISS` after). The
//! event list built here holds the events of the tree with Intel's `Counter` field: any
//! general counter of the core, and for Skymont's level-1 events also the fixed counter the
//! kernel gives them ([`crate::pmu::uarch::FixedCounter::config`]).

use std::path::Path;

use serde_json::{Value, json};

use super::perfmon::{CoreEvents, MetricFile, Perfmon, PerfmonError};
use crate::pmu::uarch::{CoreCounters, EcoreArch, EcoreTopDown, TdCategory, TdPart};

/// How a node's value is formed.
#[derive(Clone, Copy)]
enum Formula {
    /// A level-1 category's event over the slots.
    Category(TdCategory),
    /// A level-2 event over the slots.
    Part(TdPart),
    /// A level-3 event (`TOPDOWN_*` name, event code, unit mask) over the slots.
    Event(&'static str, u8, u8),
    /// Resource Bound: Backend Bound minus Core Bound.
    ResourceBound,
}

/// One node: Intel's name, its level and parent, its formula, its own threshold in percent,
/// and Intel's description.
struct Node {
    name: &'static str,
    level: u32,
    parent: Option<&'static str>,
    formula: Formula,
    threshold: f64,
    brief: &'static str,
}

const fn node(
    name: &'static str,
    level: u32,
    parent: Option<&'static str>,
    formula: Formula,
    threshold: f64,
    brief: &'static str,
) -> Node {
    Node {
        name,
        level,
        parent,
        formula,
        threshold,
        brief,
    }
}

/// The ITLB node's event: Intel calls it `TOPDOWN_FE_BOUND.ITLB` on Gracemont.
const ITLB: &str = "TOPDOWN_FE_BOUND.ITLB_MISS";

/// The tree in Intel's order (each node after its parent).
const TREE: &[Node] = &[
    node(
        "Frontend_Bound",
        1,
        None,
        Formula::Category(TdCategory::FrontendBound),
        20.0,
        "Counts the number of issue slots that were not consumed by the backend due to frontend stalls.",
    ),
    node(
        "IFetch_Latency",
        2,
        Some("Frontend_Bound"),
        Formula::Part(TdPart::IfetchLatency),
        15.0,
        "Counts the number of issue slots that were not delivered by the frontend due to frontend latency restrictions due to icache misses, itlb misses, branch detection, and resteer limitations.",
    ),
    node(
        "ICache_Misses",
        3,
        Some("IFetch_Latency"),
        Formula::Event("TOPDOWN_FE_BOUND.ICACHE", 0x71, 0x20),
        5.0,
        "Counts the number of issue slots that were not delivered by the frontend due to instruction cache misses.",
    ),
    node(
        "ITLB_Misses",
        3,
        Some("IFetch_Latency"),
        Formula::Event(ITLB, 0x71, 0x10),
        5.0,
        "Counts the number of issue slots that were not delivered by the frontend due to Instruction Table Lookaside Buffer (ITLB) misses.",
    ),
    node(
        "Branch_Detect",
        3,
        Some("IFetch_Latency"),
        Formula::Event("TOPDOWN_FE_BOUND.BRANCH_DETECT", 0x71, 0x02),
        5.0,
        "Counts the number of issue slots that were not delivered by the frontend due to BACLEARS, which occurs when the Branch Target Buffer (BTB) prediction or lack thereof, was corrected by a later branch predictor in the frontend.",
    ),
    node(
        "Branch_Resteer",
        3,
        Some("IFetch_Latency"),
        Formula::Event("TOPDOWN_FE_BOUND.BRANCH_RESTEER", 0x71, 0x40),
        5.0,
        "Counts the number of issue slots that were not delivered by the frontend due to BTCLEARS, which occurs when the Branch Target Buffer (BTB) predicts a taken branch.",
    ),
    node(
        "IFetch_Bandwidth",
        2,
        Some("Frontend_Bound"),
        Formula::Part(TdPart::IfetchBandwidth),
        10.0,
        "Counts the number of issue slots that were not delivered by the frontend due to frontend bandwidth restrictions due to decode, predecode, cisc, and other limitations.",
    ),
    node(
        "Cisc",
        3,
        Some("IFetch_Bandwidth"),
        Formula::Event("TOPDOWN_FE_BOUND.CISC", 0x71, 0x01),
        5.0,
        "Counts the number of issue slots that were not delivered by the frontend due to the microcode sequencer (MS).",
    ),
    node(
        "Decode",
        3,
        Some("IFetch_Bandwidth"),
        Formula::Event("TOPDOWN_FE_BOUND.DECODE", 0x71, 0x08),
        5.0,
        "Counts the number of issue slots that were not delivered by the frontend due to decode stalls.",
    ),
    node(
        "Predecode",
        3,
        Some("IFetch_Bandwidth"),
        Formula::Event("TOPDOWN_FE_BOUND.PREDECODE", 0x71, 0x04),
        5.0,
        "Counts the number of issue slots that were not delivered by the frontend due to wrong predecodes.",
    ),
    node(
        "Other_FB",
        3,
        Some("IFetch_Bandwidth"),
        Formula::Event("TOPDOWN_FE_BOUND.OTHER", 0x71, 0x80),
        5.0,
        "Counts the number of issue slots that were not delivered by the frontend due to other common frontend stalls not categorized.",
    ),
    node(
        "Bad_Speculation",
        1,
        None,
        Formula::Category(TdCategory::BadSpeculation),
        15.0,
        "Counts the total number of issue slots that were not consumed by the backend because allocation is stalled due to a mispredicted jump or a machine clear.",
    ),
    node(
        "Branch_Mispredicts",
        2,
        Some("Bad_Speculation"),
        Formula::Part(TdPart::BranchMispredicts),
        5.0,
        "Counts the number of issue slots that were not consumed by the backend due to branch mispredicts.",
    ),
    node(
        "Machine_Clears",
        2,
        Some("Bad_Speculation"),
        Formula::Part(TdPart::MachineClears),
        5.0,
        "Counts the total number of issue slots that were not consumed by the backend because allocation is stalled due to a machine clear (nuke) of any kind including memory ordering and memory disambiguation.",
    ),
    node(
        "Nuke",
        3,
        Some("Machine_Clears"),
        Formula::Event("TOPDOWN_BAD_SPECULATION.NUKE", 0x73, 0x01),
        5.0,
        "Counts the number of issue slots that were not consumed by the backend due to a machine clear that requires the use of microcode (slow nuke).",
    ),
    node(
        "Fast_Nuke",
        3,
        Some("Machine_Clears"),
        Formula::Event("TOPDOWN_BAD_SPECULATION.FASTNUKE", 0x73, 0x02),
        5.0,
        "Counts the number of issue slots that were not consumed by the backend due to a machine clear that does not require the use of microcode, classified as a fast nuke, due to memory ordering, memory disambiguation and memory renaming.",
    ),
    node(
        "Backend_Bound",
        1,
        None,
        Formula::Category(TdCategory::BackendBound),
        10.0,
        "Counts the total number of issue slots that were not consumed by the backend due to backend stalls.",
    ),
    node(
        "Core_Bound",
        2,
        Some("Backend_Bound"),
        Formula::Part(TdPart::CoreBound),
        10.0,
        "Counts the number of cycles due to backend bound stalls that are bounded by core restrictions and not attributed to an outstanding load or stores, or resource limitation.",
    ),
    node(
        "Allocation_Restriction",
        3,
        Some("Core_Bound"),
        Formula::Part(TdPart::CoreBound),
        10.0,
        "Counts the number of issue slots that were not consumed by the backend due to certain allocation restrictions.",
    ),
    node(
        "Resource_Bound",
        2,
        Some("Backend_Bound"),
        Formula::ResourceBound,
        20.0,
        "Counts the number of cycles the core is stalled due to a resource limitation.",
    ),
    node(
        "Mem_Scheduler",
        3,
        Some("Resource_Bound"),
        Formula::Event("TOPDOWN_BE_BOUND.MEM_SCHEDULER", 0x74, 0x02),
        10.0,
        "Counts the number of issue slots that were not consumed by the backend due to memory reservation stalls in which a scheduler is not able to accept uops.",
    ),
    node(
        "Non_Mem_Scheduler",
        3,
        Some("Resource_Bound"),
        Formula::Event("TOPDOWN_BE_BOUND.NON_MEM_SCHEDULER", 0x74, 0x08),
        10.0,
        "Counts the number of issue slots that were not consumed by the backend due to IEC or FPC RAT stalls, which can be due to FIQ or IEC reservation stalls in which the integer, floating point or SIMD scheduler is not able to accept uops.",
    ),
    node(
        "Register",
        3,
        Some("Resource_Bound"),
        Formula::Event("TOPDOWN_BE_BOUND.REGISTER", 0x74, 0x20),
        10.0,
        "Counts the number of issue slots that were not consumed by the backend due to the physical register file unable to accept an entry (marble stalls).",
    ),
    node(
        "Reorder_Buffer",
        3,
        Some("Resource_Bound"),
        Formula::Event("TOPDOWN_BE_BOUND.REORDER_BUFFER", 0x74, 0x40),
        10.0,
        "Counts the number of issue slots that were not consumed by the backend due to the reorder buffer being full (ROB stalls).",
    ),
    node(
        "Serialization",
        3,
        Some("Resource_Bound"),
        Formula::Event("TOPDOWN_BE_BOUND.SERIALIZATION", 0x74, 0x10),
        10.0,
        "Counts the number of issue slots that were not consumed by the backend due to scoreboards from the instruction queue (IQ), jump execution unit (JEU), or microcode sequencer (MS).",
    ),
    node(
        "Retiring",
        1,
        None,
        Formula::Category(TdCategory::Retiring),
        75.0,
        "Counts the number of issue slots that result in retirement slots.",
    ),
];

/// The deepest level of the E-core tree.
pub const MAX_LEVEL: u32 = 3;

/// The cycles event every node divides by (fixed counter 1, or any general counter as
/// `CPU_CLK_UNHALTED.CORE_P`): a metric group's cycles leader.
pub const CYCLES: &str = "CPU_CLK_UNHALTED.CORE";

/// Intel's `LegacyName` of a node, which thresholds refer to (`metric_TMA_..IFetch_Latency(%)`).
fn legacy(n: &Node) -> String {
    format!(
        "metric_TMA_{}{}(%)",
        "..".repeat(n.level as usize - 1),
        n.name
    )
}

fn find(name: &str) -> Option<&'static Node> {
    TREE.iter().find(|n| n.name == name)
}

/// The event behind a level-1 category, level-2 part or level-3 event, for `td`:
/// (Intel's name, event code, unit mask); `None` for Gracemont's uncounted Bad Speculation.
fn event_of(td: &EcoreTopDown, f: Formula) -> Option<(&'static str, u8, u8)> {
    match f {
        Formula::Category(c) => td
            .events
            .iter()
            .find(|e| e.category == c)
            .map(|e| (e.name, e.event, e.umask)),
        Formula::Part(p) => crate::pmu::uarch::level2_event(p).map(|e| (e.name, e.event, e.umask)),
        Formula::Event(name, code, umask) => {
            let name = if name == ITLB && td.arch == EcoreArch::Gracemont {
                "TOPDOWN_FE_BOUND.ITLB"
            } else {
                name
            };
            Some((name, code, umask))
        }
        Formula::ResourceBound => None,
    }
}

/// The metric file and event list of `td`'s tree on a core with counters `c`, as Intel's
/// JSON would give them, parsed by the same readers. `Err` only if hrec's own table were
/// malformed (a test parses every core's).
pub fn tree(td: &EcoreTopDown, c: &CoreCounters) -> Result<Perfmon, PerfmonError> {
    let w = td.width;
    let slots_of = |alias: &str| format!("( {w} * {alias} )");
    let mut metrics: Vec<Value> = Vec::new();
    let mut events: Vec<(&'static str, u8, u8)> = Vec::new();
    let mut note_event = |e: (&'static str, u8, u8)| {
        if !events.iter().any(|x| x.0 == e.0) {
            events.push(e);
        }
    };
    for n in TREE {
        let (evs, formula): (Vec<&str>, String) = match (n.formula, event_of(td, n.formula)) {
            (_, Some(e)) => {
                note_event(e);
                (vec![e.0, CYCLES], format!("100 * a / {}", slots_of("b")))
            }
            (Formula::Category(TdCategory::BadSpeculation), None) => {
                let three: Vec<&str> = [
                    TdCategory::FrontendBound,
                    TdCategory::BackendBound,
                    TdCategory::Retiring,
                ]
                .iter()
                .filter_map(|&c| event_of(td, Formula::Category(c)).map(|e| e.0))
                .collect();
                let mut evs = three;
                evs.push(CYCLES);
                (
                    evs,
                    format!("100 * ( {s} - ( a + b + c ) ) / {s}", s = slots_of("d")),
                )
            }
            (Formula::ResourceBound, None) => {
                let be = event_of(td, Formula::Category(TdCategory::BackendBound));
                let core = event_of(td, Formula::Part(TdPart::CoreBound));
                let (Some(be), Some(core)) = (be, core) else {
                    continue;
                };
                (
                    vec![be.0, core.0, CYCLES],
                    format!("100 * ( a / {s} - b / {s} )", s = slots_of("c")),
                )
            }
            _ => continue,
        };
        let aliases = ["a", "b", "c", "d"];
        let ev_json: Vec<Value> = evs
            .iter()
            .zip(aliases)
            .map(|(e, a)| json!({"Name": e, "Alias": a}))
            .collect();
        // The node's own clause, then each ancestor's.
        let mut chain = vec![n];
        while let Some(p) = chain.last().and_then(|x| x.parent).and_then(find) {
            chain.push(p);
        }
        let th_metrics: Vec<Value> = chain
            .iter()
            .zip(aliases)
            .map(|(x, a)| json!({"Alias": a, "Value": legacy(x)}))
            .collect();
        let th_formula: Vec<String> = chain
            .iter()
            .zip(aliases)
            .map(|(x, a)| format!("( {a} > {} )", x.threshold))
            .collect();
        let mut groups = vec![format!("TmaL{}", n.level)];
        if let Some(p) = n.parent {
            groups.push(format!("tma_{}_group", p.to_ascii_lowercase()));
        }
        let mut m = json!({
            "MetricName": n.name,
            "LegacyName": legacy(n),
            "Level": n.level,
            "BriefDescription": n.brief,
            "UnitOfMeasure": "percent",
            "Events": ev_json,
            "Constants": [],
            "Formula": formula,
            "Category": "TMA",
            "CountDomain": "Slots",
            "Threshold": {
                "ThresholdMetrics": th_metrics,
                "Formula": th_formula.join(" & "),
            },
            "MetricGroup": groups.join(";"),
        });
        if let (Some(p), Some(obj)) = (n.parent, m.as_object_mut()) {
            obj.insert("ParentCategory".into(), json!(p));
        }
        metrics.push(m);
    }
    let general: Vec<String> = (0..c.general).map(|i| i.to_string()).collect();
    let mut ev_list = vec![json!({
        "EventName": CYCLES,
        "EventCode": "0x00",
        "UMask": "0x02",
        "Counter": "Fixed counter 1",
        "SampleAfterValue": "2000003",
        "BriefDescription": "Counts the number of unhalted core clock cycles (fixed counter 1).",
    })];
    for (name, code, umask) in events {
        let config = u64::from(code) | u64::from(umask) << 8;
        let mut counters = general.clone();
        counters.extend(
            c.fixed
                .iter()
                .filter(|f| f.config == Some(config))
                .map(|f| format!("Fixed counter {}", f.index)),
        );
        ev_list.push(json!({
            "EventName": name,
            "EventCode": format!("{code:#04x}"),
            "UMask": format!("{umask:#04x}"),
            "Counter": counters.join(","),
            "SampleAfterValue": "1000003",
            "BriefDescription": format!("{name}: issue slots of the E-core TopDown tree."),
        }));
    }
    let label = format!(
        "hrec's E-core TopDown tree ({}, Intel E-core TMA 3.6)",
        td.arch.name()
    );
    let path = Path::new(&label);
    let metrics_text = json!({
        "Header": {"Info": label, "TmaVersion": "3.6"},
        "Metrics": metrics,
    })
    .to_string();
    let events_text = json!({
        "Header": {"Info": label},
        "Events": ev_list,
    })
    .to_string();
    Ok(Perfmon {
        metrics: MetricFile::parse(&metrics_text, path)?,
        events: Some(CoreEvents::parse(&events_text, path)?),
        retire_latencies: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Constants, EventRef};

    fn all() -> Vec<(EcoreArch, Perfmon)> {
        [
            EcoreArch::Gracemont,
            EcoreArch::Crestmont,
            EcoreArch::Skymont,
        ]
        .into_iter()
        .map(|a| {
            let td = a.topdown().unwrap();
            let c = crate::pmu::uarch::ecore_counters(a).unwrap();
            (a, tree(td, c).unwrap())
        })
        .collect()
    }

    #[test]
    fn every_core_has_the_whole_tree_and_every_formula_parses() {
        for (arch, pm) in all() {
            assert!(pm.metrics.formula_errors().is_empty(), "{arch:?}");
            assert_eq!(pm.tma_metrics(1).len(), 4, "{arch:?}");
            assert_eq!(pm.tma_metrics(2).len(), 10, "{arch:?}");
            assert_eq!(pm.tma_metrics(3).len(), 26, "{arch:?}");
            // Every event resolves, and every parent is a node.
            for m in pm.all() {
                for e in m.used_events() {
                    pm.resolve(e)
                        .unwrap_or_else(|r| panic!("{arch:?} {}: {r}", m.name));
                }
                if let Some(p) = &m.parent {
                    assert!(pm.metric(p).is_some(), "{arch:?} {}", m.name);
                }
            }
            assert!(pm.metric("tma_icache_misses").is_some());
            assert_eq!(pm.metrics_in_group("TopdownL3").len(), 16);
            let itlb = pm.metric("ITLB_Misses").unwrap();
            let names: Vec<&str> = itlb.used_events().map(|e| e.name.as_str()).collect();
            let want = if arch == EcoreArch::Gracemont {
                "TOPDOWN_FE_BOUND.ITLB"
            } else {
                "TOPDOWN_FE_BOUND.ITLB_MISS"
            };
            assert_eq!(names, [want, CYCLES]);
        }
    }

    /// Intel's formulas on known counts: a node is its event over W x cycles; Gracemont's
    /// Bad Speculation the remainder; Resource Bound Backend minus Core Bound; thresholds
    /// with the parent's.
    #[test]
    fn values_and_thresholds_are_intels() {
        for (arch, pm) in all() {
            let td = arch.topdown().unwrap();
            let w = f64::from(td.width);
            let cycles = 1_000_000.0;
            let count = |e: &EventRef| -> Option<f64> {
                // Level 1 as `X.ALL` or `X.ALL_P`.
                let base = e.name.strip_suffix("_P").unwrap_or(&e.name);
                Some(match base {
                    CYCLES => cycles,
                    "TOPDOWN_FE_BOUND.ALL" => 0.30 * w * cycles,
                    "TOPDOWN_BE_BOUND.ALL" => 0.40 * w * cycles,
                    "TOPDOWN_RETIRING.ALL" => 0.20 * w * cycles,
                    "TOPDOWN_BAD_SPECULATION.ALL" => 0.10 * w * cycles,
                    "TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS" => 0.15 * w * cycles,
                    "TOPDOWN_BE_BOUND.REGISTER" => 0.12 * w * cycles,
                    "TOPDOWN_FE_BOUND.FRONTEND_LATENCY" => 0.25 * w * cycles,
                    _ => 0.01 * w * cycles,
                })
            };
            let k = Constants::default();
            let v = |n: &str| {
                pm.metric(n)
                    .unwrap()
                    .evaluate(&count, &|_| None, &k)
                    .unwrap()
            };
            assert!((v("Frontend_Bound") - 30.0).abs() < 1e-9, "{arch:?}");
            assert!((v("Bad_Speculation") - 10.0).abs() < 1e-9, "{arch:?}");
            assert!((v("Resource_Bound") - 25.0).abs() < 1e-9, "{arch:?}");
            assert!((v("Register") - 12.0).abs() < 1e-9, "{arch:?}");
            assert!(
                (v("Allocation_Restriction") - 15.0).abs() < 1e-9,
                "{arch:?}"
            );
            let value = |m: &crate::metrics::Metric| Some(v(&m.name));
            let holds = |n: &str| pm.threshold_holds(pm.metric(n).unwrap(), &value).unwrap();
            // Register 12% > 10%, Resource Bound 25% > 20%, Backend 40% > 10%.
            assert_eq!(holds("Register"), Some(true), "{arch:?}");
            // ICache 1% is under 5%.
            assert_eq!(holds("ICache_Misses"), Some(false), "{arch:?}");
            // Retiring 20% is under 75%.
            assert_eq!(holds("Retiring"), Some(false), "{arch:?}");
        }
    }
}
