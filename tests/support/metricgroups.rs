//! Shared pieces of the metric-group report tests (`report --td-level 3` / `--metrics`) on
//! top of [`super::metricrec`] (plans, truth keys, Intel's formulas on a truth): a
//! per-function truth of a 6-wide P-core (events per cycle) that synthetic recordings are
//! made from ([`synth`]: `chase`, `divide` and `rare` in the kernel, `rare` with too few reads
//! of group 3), and the checks of a report row against Intel's formulas on it.

use hrec::event::plan::Plan;
use hrec::metrics::perfmon::Metric;

use super::metricrec::{self, Synth};

pub use super::metricrec::cpuid;

/// The kernel's symbols of the [`FUNCS`] recordings.
pub const KALLSYMS: &str = "\
ffffffff81000000 T _text
ffffffff81001000 T chase
ffffffff81002000 T divide
ffffffff81003000 T rare
ffffffff81004000 T past_the_end
";
/// The functions sampled, each with the ip of its samples (in [`KALLSYMS`]).
pub const FUNCS: [(&str, u64); 3] = [
    ("chase", 0xffffffff81001010),
    ("divide", 0xffffffff81002020),
    ("rare", 0xffffffff81003030),
];

/// Reads of group `g` per function: different per group (so rates must be scaled by each
/// group's own cycles), and for `rare` too few in group 3.
pub fn reads(func: &str, g: usize) -> u64 {
    match func {
        "rare" if g == 3 => 5,
        "rare" => 40,
        "chase" => 30 + 7 * g as u64,
        _ => 60 - 4 * g as u64,
    }
}

/// The recording of [`FUNCS`] on fixture `model` made from truth [`rate`] with [`reads`]:
/// no more events, no topology, no stored choice, an empty trailer (override any field).
pub fn synth(model: &str) -> Synth<'static> {
    Synth {
        cpuid: cpuid(model),
        kallsyms: KALLSYMS,
        funcs: &FUNCS,
        ip: None,
        misc: metricrec::KERNEL_EXACT,
        leading_records: Vec::new(),
        rate: &rate,
        reads: &reads,
        extra_events: Vec::new(),
        extra_records: Vec::new(),
        threads_per_core: None,
        metric_choice: None,
        trailer: hrec::data::Trailer::default(),
    }
}

/// The plan's metric groups on PMU `pmu` ([`metricrec::groups`] of that core type).
pub fn groups_on(plan: &Plan, pmu: &str) -> Vec<(usize, Vec<(usize, String)>)> {
    metricrec::groups(plan)
        .into_iter()
        .filter(|(s, _)| plan.events[*s].pmu.as_deref() == Some(pmu))
        .collect()
}

/// Events per cycle of a function on a 6-wide P-core (Golden Cove and later): the truth the
/// recordings are made from. `chase` waits on memory (L3), `divide` in the divider, any other
/// function is mixed.
pub fn rate(func: &str, k: &str) -> f64 {
    let name = k.split(':').next().unwrap_or(k);
    // Level 1 and 2 shares of slots, 6 slots a cycle.
    let (l1, l2): ([f64; 4], [f64; 4]) = match func {
        // retiring, bad spec, frontend, backend; heavy ops, br mispredict, fetch lat, mem bound.
        "chase" => ([0.10, 0.05, 0.05, 0.80], [0.02, 0.03, 0.03, 0.70]),
        "divide" => ([0.20, 0.02, 0.03, 0.75], [0.05, 0.01, 0.02, 0.05]),
        _ => ([0.40, 0.10, 0.20, 0.30], [0.10, 0.05, 0.10, 0.15]),
    };
    let slots = 6.0;
    let per_func = |chase: f64, divide: f64, other: f64| match func {
        "chase" => chase,
        "divide" => divide,
        _ => other,
    };
    match name {
        "CPU_CLK_UNHALTED.THREAD" => 1.0,
        "TOPDOWN.SLOTS" => slots,
        "PERF_METRICS.RETIRING" => l1[0] * slots,
        "PERF_METRICS.BAD_SPECULATION" => l1[1] * slots,
        "PERF_METRICS.FRONTEND_BOUND" => l1[2] * slots,
        "PERF_METRICS.BACKEND_BOUND" => l1[3] * slots,
        "PERF_METRICS.HEAVY_OPERATIONS" => l2[0] * slots,
        "PERF_METRICS.BRANCH_MISPREDICTS" => l2[1] * slots,
        "PERF_METRICS.FETCH_LATENCY" => l2[2] * slots,
        "PERF_METRICS.MEMORY_BOUND" => l2[3] * slots,
        "MEMORY_ACTIVITY.STALLS_L1D_MISS" => per_func(0.75, 0.02, 0.10),
        "MEMORY_ACTIVITY.STALLS_L2_MISS" => per_func(0.70, 0.01, 0.05),
        "MEMORY_ACTIVITY.STALLS_L3_MISS" => per_func(0.10, 0.005, 0.02),
        "EXE_ACTIVITY.BOUND_ON_LOADS" => per_func(0.78, 0.03, 0.12),
        "CYCLE_ACTIVITY.STALLS_TOTAL" => per_func(0.80, 0.72, 0.25),
        "ARITH.DIV_ACTIVE" => per_func(0.0, 0.70, 0.01),
        "ARITH.DIVIDER_ACTIVE" => per_func(0.0, 0.70, 0.01),
        "UOPS_EXECUTED.THREAD" => per_func(0.5, 0.6, 2.0),
        "FRONTEND_RETIRED.L1I_MISS" => per_func(0.002, 0.001, 0.001),
        "FRONTEND_RETIRED.L2_MISS" => per_func(0.0001, 0.0001, 0.0001),
        "UOPS_RETIRED.SLOTS" => l1[0] * slots * 0.9,
        "UOPS_ISSUED.ANY" => (l1[0] + l1[1]) * slots,
        _ => 0.01,
    }
}

/// Whether `m` needs an event that only group 3 (in [`metricrec::groups`] order) counts: the
/// group `rare` has too few [`reads`] of, so its value there is null.
pub fn needs_group3(plan: &Plan, m: &Metric) -> bool {
    let gs = metricrec::groups(plan);
    let in_other = |k: &String| {
        gs.iter()
            .enumerate()
            .any(|(g, (_, ms))| g != 3 && ms.iter().any(|(_, x)| x == k))
    };
    m.used_events()
        .filter(|e| !e.retire_latency)
        .map(metricrec::key)
        .any(|k| gs[3].1.iter().any(|(_, x)| *x == k) && !in_other(&k))
}

/// The first table whose rows carry metrics, and its row whose symbol is `sym` (`[k] chase`).
pub fn metric_row<'a>(v: &'a serde_json::Value, sym: &str) -> &'a serde_json::Value {
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["rows"].as_array().unwrap())
        .find(|r| r["key"]["sym"] == sym && r.get("metrics").is_some())
        .unwrap_or_else(|| panic!("no row {sym} with metrics"))
}

/// Asserts that every chosen metric of `row` is Intel's formula on the truth within 0.1
/// point (`want` gives the expected value, `None` for null).
pub fn assert_metrics(
    row: &serde_json::Value,
    chosen: &[&Metric],
    what: &str,
    want: &dyn Fn(&Metric) -> Option<f64>,
) {
    let metrics = row["metrics"].as_object().unwrap();
    assert_eq!(metrics.len(), chosen.len(), "{what}");
    for m in chosen {
        let got = metrics[&m.perf_name()].as_f64();
        match (got, want(m)) {
            (Some(g), Some(w)) => assert!(
                (g - w).abs() < 0.1,
                "{what} {}: got {g}, Intel's formula on the truth {w}",
                m.perf_name()
            ),
            (None, None) => {}
            (g, w) => panic!("{what} {}: got {g:?}, want {w:?}", m.perf_name()),
        }
    }
}

/// The row's bottleneck path.
pub fn bottleneck(row: &serde_json::Value) -> Vec<String> {
    row["bottleneck"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}
