//! Tests on Intel's real files in `../shared/perfmon` (or `$HREC_PERFMON_DIR`), read at test
//! time and never copied into the repository; each test skips with a message when the
//! directory is absent. Expected values are computed by hand from the formula text.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::*;
use crate::metrics::perfmon::{HistogramBucket, Selection};

/// `$HREC_PERFMON_DIR`, else `../shared/perfmon` next to the repository.
fn perfmon_path() -> PathBuf {
    std::env::var_os("HREC_PERFMON_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/perfmon"))
}

/// The perfmon directory, or `None` (after saying so) when it is not there.
fn perfmon_dir(test: &str) -> Option<PathBuf> {
    let dir = perfmon_path();
    if dir.join("mapfile.csv").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "{test}: skipped: no Intel perfmon files at {} (set HREC_PERFMON_DIR)",
            dir.display()
        );
        None
    }
}

const GNR: &str = "GenuineIntel-6-AD-1";

/// The four models' metrics files.
const MODELS: [(&str, &str); 4] = [
    ("GNR", "GNR/metrics/graniterapids_metrics.json"),
    ("SPR", "SPR/metrics/sapphirerapids_metrics.json"),
    ("ADL", "ADL/metrics/alderlake_metrics_goldencove_core.json"),
    ("ARL", "ARL/metrics/arrowlake_metrics_lioncove_core.json"),
];

/// A count table keyed by Intel's spelling of the event (`EventRef`'s `Display`).
struct Counts(HashMap<String, f64>);

impl Counts {
    fn new(pairs: &[(&str, f64)]) -> Counts {
        Counts(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect())
    }

    fn get(&self, e: &EventRef) -> Option<f64> {
        self.0.get(&e.to_string()).copied()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

macro_rules! assert_close {
    ($a:expr, $b:expr) => {{
        let (a, b): (f64, f64) = ($a, $b);
        assert!(close(a, b), "{a} != {b}");
    }};
}

#[test]
fn every_formula_of_the_four_models_parses() {
    let Some(dir) = perfmon_dir("every_formula_of_the_four_models_parses") else {
        return;
    };
    let mut total = 0;
    for (model, file) in MODELS {
        let f = MetricFile::load(&dir.join(file)).unwrap_or_else(|e| panic!("{e}"));
        let errors = f.formula_errors();
        assert!(errors.is_empty(), "{model}: {errors:#?}");
        let formulas = f.metrics.len();
        let thresholds = f.metrics.iter().filter(|m| m.threshold.is_some()).count();
        let constants: usize = f.metrics.iter().map(|m| m.constants.len()).sum();
        let retire: usize = f
            .metrics
            .iter()
            .flat_map(|m| &m.events)
            .filter(|e| e.event.retire_latency)
            .count();
        eprintln!(
            "{model}: {formulas} formulas, {thresholds} threshold formulas, {constants} \
             constant names parsed; {retire} retire-latency terms"
        );
        // Every alias a formula uses is an event or constant alias, or a system constant.
        for m in &f.metrics {
            let expr = m.formula().unwrap();
            for name in expr.names() {
                let known = m.event(name).is_some()
                    || m.constants.iter().any(|c| c.alias == name)
                    || name == "DURATIONTIMEINSECONDS";
                assert!(
                    known,
                    "{model} {}: '{name}' is neither alias nor constant",
                    m.name
                );
            }
            if let Some(t) = &m.threshold {
                for name in t.formula().unwrap().names() {
                    assert!(
                        t.metrics.iter().any(|tm| tm.alias == name),
                        "{model} {} threshold: unknown alias {name}",
                        m.name
                    );
                }
            }
        }
        assert!(
            formulas > 200 && thresholds > 100,
            "{model}: too few metrics"
        );
        total += formulas + thresholds + constants;
    }
    eprintln!("{total} formulas, threshold formulas and constant names in all");
}

#[test]
fn mapfile_selects_the_files_of_each_model() {
    let Some(dir) = perfmon_dir("mapfile_selects_the_files_of_each_model") else {
        return;
    };
    let map = Mapfile::load(&dir.join("mapfile.csv")).unwrap();
    let pick =
        |cpuid: &str| -> Selection<'_> { map.select(cpuid).unwrap_or_else(|e| panic!("{e}")) };

    let s = pick("GenuineIntel-6-AD-1");
    assert_eq!(
        s.metrics.filename,
        "/GNR/metrics/graniterapids_metrics.json"
    );
    assert_eq!(
        s.core_events.unwrap().filename,
        "/GNR/events/graniterapids_core.json"
    );
    assert_eq!(
        s.retire_latency.unwrap().filename,
        "/GNR/metrics/graniterapids_retire_latency.json"
    );
    // Granite Rapids-D shares the files.
    assert_eq!(
        pick("GenuineIntel-6-AE").metrics.filename,
        s.metrics.filename
    );

    let s = pick("GenuineIntel-6-8F-8");
    assert_eq!(
        s.metrics.filename,
        "/SPR/metrics/sapphirerapids_metrics.json"
    );
    assert_eq!(
        s.core_events.unwrap().filename,
        "/SPR/events/sapphirerapids_core.json"
    );
    assert!(s.retire_latency.is_none());

    for adl in [
        "GenuineIntel-6-97-2",
        "GenuineIntel-6-9A-3",
        "GenuineIntel-6-B7-1",
    ] {
        let s = pick(adl);
        assert_eq!(
            s.metrics.filename,
            "/ADL/metrics/alderlake_metrics_goldencove_core.json"
        );
        // The P-core list of the hybrid pair, not Gracemont's.
        assert_eq!(
            s.core_events.unwrap().filename,
            "/ADL/events/alderlake_goldencove_core.json"
        );
    }

    for arl in ["GenuineIntel-6-C5-2", "GenuineIntel-6-C6-2"] {
        let s = pick(arl);
        assert_eq!(
            s.metrics.filename,
            "/ARL/metrics/arrowlake_metrics_lioncove_core.json"
        );
        assert_eq!(s.metrics.core_role, "Core");
        // ARL-H lists three core types (Lion Cove, Skymont, Crestmont); the P-core's wins.
        assert_eq!(
            s.core_events.unwrap().filename,
            "/ARL/events/arrowlake_lioncove_core.json"
        );
        assert!(s.retire_latency.is_none());
    }

    // Stepping-specific rows (Skylake-X / Cascade Lake share model 0x55).
    let skx: Vec<_> = map
        .matching("GenuineIntel-6-55-4")
        .map(|e| &e.filename)
        .collect();
    let clx: Vec<_> = map
        .matching("GenuineIntel-6-55-7")
        .map(|e| &e.filename)
        .collect();
    assert!(
        skx.iter().all(|f| f.starts_with("/SKX/")) && !skx.is_empty(),
        "{skx:?}"
    );
    assert!(
        clx.iter().all(|f| f.starts_with("/CLX/")) && !clx.is_empty(),
        "{clx:?}"
    );

    // Alder Lake-N (Gracemont only) has event lists but no metrics; unknown models nothing.
    let e = map.select("GenuineIntel-6-BE-0").unwrap_err().to_string();
    assert!(
        e.ends_with("mapfile.csv: no metrics file listed for GenuineIntel-6-BE-0"),
        "{e}"
    );
    assert!(map.select("GenuineIntel-6-FF").is_err());
    assert!(map.select("AuthenticAMD-25-1-1").is_err());
}

#[test]
fn perfmon_store_lookups_on_granite_rapids() {
    let Some(dir) = perfmon_dir("perfmon_store_lookups_on_granite_rapids") else {
        return;
    };
    let p = Perfmon::load(&dir, GNR).unwrap();
    assert_eq!(p.metrics.header.version.as_deref(), Some("1.3"));

    // Intel's names, perf's names, case-insensitively, and legacy names.
    let m = p.metric("tma_dtlb_load").unwrap();
    assert_eq!(m.name, "DTLB_Load");
    assert_eq!(m.perf_name(), "tma_dtlb_load");
    assert_eq!((m.level, m.parent.as_deref()), (4, Some("L1_Bound")));
    assert!(m.is_percent() && m.is_tma_node());
    assert_eq!(p.metric("dtlb_load").unwrap().name, "DTLB_Load");
    assert_eq!(
        p.metric("TMA_INFO_THREAD_IPC").unwrap().name,
        "Info_Thread_IPC"
    );
    assert_eq!(
        p.metric("metric_TMA_......Lock_Latency(%)").unwrap().name,
        "Lock_Latency"
    );
    assert_eq!(p.metric("cpi").unwrap().category, "CPI");
    assert!(p.metric("tma_no_such_metric").is_none());

    // The TMA tree to level 2: four level-1 nodes and eight level-2 nodes.
    let l2: Vec<&str> = p.tma_metrics(2).iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        l2,
        [
            "Frontend_Bound",
            "Fetch_Latency",
            "Fetch_Bandwidth",
            "Bad_Speculation",
            "Branch_Mispredicts",
            "Machine_Clears",
            "Backend_Bound",
            "Memory_Bound",
            "Core_Bound",
            "Retiring",
            "Light_Operations",
            "Heavy_Operations"
        ]
    );
    assert_eq!(p.tma_metrics(1).len(), 4);
    let groups: Vec<&str> = p
        .metrics_in_group("TmaL1")
        .iter()
        .map(|m| m.name.as_str())
        .collect();
    assert!(
        groups.contains(&"Frontend_Bound") && groups.contains(&"Retiring"),
        "{groups:?}"
    );
    assert_eq!(p.metrics_in_group("topdownl1").len(), groups.len());

    // The events of the level-1/2 tree: TopDown metrics, slots in the TopDown group, no
    // duplicates.
    let needed = p.events_needed(p.tma_metrics(2));
    let names: Vec<String> = needed.iter().map(ToString::to_string).collect();
    for want in [
        "PERF_METRICS.FRONTEND_BOUND",
        "PERF_METRICS.BAD_SPECULATION",
        "PERF_METRICS.RETIRING",
        "PERF_METRICS.BACKEND_BOUND",
        "PERF_METRICS.FETCH_LATENCY",
        "PERF_METRICS.MEMORY_BOUND",
        "TOPDOWN.SLOTS:perf_metrics",
        "INT_MISC.UOP_DROPPING",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} missing from {names:?}"
        );
    }
    let mut dedup = names.clone();
    dedup.sort();
    dedup.dedup();
    assert_eq!(dedup.len(), names.len());
    eprintln!("GNR TMA level <= 2 needs {} events: {names:?}", names.len());

    // The whole tree on Granite Rapids needs retire latencies too.
    let all = p.events_needed(p.tma_metrics(6));
    let rl: Vec<&EventRef> = all.iter().filter(|e| !e.is_counted()).collect();
    assert!(
        rl.iter()
            .any(|e| e.name == "MEM_INST_RETIRED.STLB_HIT_LOADS")
    );
    eprintln!(
        "GNR whole TMA tree: {} distinct events, {} of them retire latencies",
        all.len(),
        rl.len()
    );
}

#[test]
fn resolve_events_to_encodings() {
    let Some(dir) = perfmon_dir("resolve_events_to_encodings") else {
        return;
    };
    let gnr = Perfmon::load(&dir, GNR).unwrap();
    let counter = |p: &Perfmon, s: &str| match p.resolve(&EventRef::parse(s)) {
        Ok(Encoding::Counter(r)) => r,
        other => panic!("{s}: {other:?}"),
    };

    let r = counter(&gnr, "MEM_INST_RETIRED.STLB_HIT_LOADS");
    assert_eq!(
        (r.event_code, r.umask, r.cmask, r.msr),
        (0xd0, 0x09, 0, None)
    );
    assert_eq!(r.perf_terms().unwrap(), "event=0xd0,umask=0x9");

    // Modifiers on top of the list's own CounterMask/EdgeDetect.
    let r = counter(&gnr, "UOPS_RETIRED.MS:c1:e1");
    assert_eq!(
        (r.event_code, r.umask, r.cmask, r.edge),
        (0xc2, 0x04, 1, true)
    );
    assert_eq!(r.msr, Some((0x3f7, 0x8)));
    assert_eq!(
        r.perf_terms().unwrap(),
        "event=0xc2,umask=0x4,cmask=1,edge=1,frontend=0x8"
    );
    let r = counter(&gnr, "INT_MISC.CLEARS_COUNT");
    assert_eq!((r.cmask, r.edge), (1, true));

    let r = counter(&gnr, "FRONTEND_RETIRED.L2_MISS");
    assert_eq!(
        r.perf_terms().unwrap(),
        "event=0xc6,umask=0x3,frontend=0x13"
    );

    let r = counter(&gnr, "OCR.DEMAND_RFO.L3_MISS:ocr_msr_val=0x103b800002");
    assert_eq!((r.event_code, r.msr), (0x2a, Some((0x1a6, 0x103b800002))));
    assert_eq!(
        r.perf_terms().unwrap(),
        "event=0x2a,umask=0x1,offcore_rsp=0x103b800002"
    );
    let r = counter(&gnr, "OCR.DEMAND_RFO.L3_MISS");
    assert_eq!(r.msr, Some((0x1a6, 0x3f3fc00002)));

    let r = counter(&gnr, "CPU_CLK_UNHALTED.THREAD_P:SUP");
    assert!(r.kernel_only && !r.user_only);
    let r = counter(&gnr, "TOPDOWN.SLOTS:perf_metrics");
    assert!(r.perf_metrics && r.event_code == 0 && r.umask == 4);

    assert_eq!(
        gnr.resolve(&EventRef::parse("PERF_METRICS.FRONTEND_BOUND")),
        Ok(Encoding::TopdownMetric {
            umask: 0x82,
            sysfs_name: "topdown-fe-bound"
        })
    );
    assert_eq!(gnr.resolve(&EventRef::parse("TSC")), Ok(Encoding::Tsc));
    let e = gnr
        .resolve(&EventRef::parse("UNC_CHA_CLOCKTICKS:one_unit"))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "event UNC_CHA_CLOCKTICKS:one_unit is not a core event (uncore events are not supported yet)"
    );
    let e = gnr.resolve(&EventRef::parse("NO_SUCH.EVENT")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "event NO_SUCH.EVENT is not in the core event list"
    );
    let e = gnr
        .resolve(&EventRef::parse("INST_RETIRED.ANY:zz"))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "event INST_RETIRED.ANY:zz: unknown modifier ':zz'"
    );
    let e = gnr
        .resolve(&EventRef::parse(
            "MEM_INST_RETIRED.LOCK_LOADS:retire_latency",
        ))
        .unwrap_err();
    assert!(matches!(e, ResolveError::RetireLatency(_)));

    // Lion Cove: the equal bit and a umask override.
    let arl = Perfmon::load(&dir, "GenuineIntel-6-C6-2").unwrap();
    let r = counter(&arl, "IDQ.MITE_UOPS:c8:i1:eq1");
    assert_eq!(
        (r.event_code, r.umask, r.cmask, r.inv, r.eq),
        (0x79, 0x04, 8, true, true)
    );
    assert_eq!(
        r.perf_terms().unwrap(),
        "event=0x79,umask=0x4,cmask=8,inv=1,eq=1"
    );
    let r = counter(&arl, "FP_ARITH_OPS_RETIRED.VECTOR:u0x30");
    assert_eq!((r.event_code, r.umask), (0xc7, 0x30));

    // Every core event any metric of the four models needs resolves; only uncore and RAPL
    // events do not.
    for (model, cpuid) in [
        ("GNR", GNR),
        ("SPR", "GenuineIntel-6-8F-8"),
        ("ADL", "GenuineIntel-6-97-2"),
        ("ARL", "GenuineIntel-6-C6-2"),
    ] {
        let p = Perfmon::load(&dir, cpuid).unwrap();
        let (mut ok, mut not_core) = (0, 0);
        for e in p.events_needed(p.all()).iter().filter(|e| e.is_counted()) {
            match p.resolve(e) {
                Ok(enc) => {
                    if let Encoding::Counter(r) = &enc {
                        r.perf_terms()
                            .unwrap_or_else(|err| panic!("{model}: {err}"));
                    }
                    ok += 1;
                }
                Err(ResolveError::NotCore { .. }) => not_core += 1,
                Err(err) => panic!("{model}: {err}"),
            }
        }
        eprintln!("{model}: {ok} events resolve, {not_core} are uncore/RAPL");
    }
}

#[test]
fn granite_rapids_formulas_by_hand() {
    let Some(dir) = perfmon_dir("granite_rapids_formulas_by_hand") else {
        return;
    };
    let p = Perfmon::load(&dir, GNR).unwrap();
    // Retire latencies from Intel's defaults (GNR retire_latency.json MEAN values).
    let defaults = |name: &str| p.default_retire_latency(name);
    assert_eq!(defaults("MEM_INST_RETIRED.STLB_HIT_LOADS"), Some(1.57));
    assert_eq!(defaults("MEM_INST_RETIRED.LOCK_LOADS"), Some(63.76));
    assert_eq!(defaults("FRONTEND_RETIRED.L2_MISS"), Some(137.41));
    assert_eq!(defaults("FRONTEND_RETIRED.L1I_MISS"), Some(9.83));

    let counts = Counts::new(&[
        ("CPU_CLK_UNHALTED.THREAD", 1_000_000.0),
        ("INST_RETIRED.ANY", 2_500_000.0),
        ("MEM_INST_RETIRED.STLB_HIT_LOADS", 1_000.0),
        ("DTLB_LOAD_MISSES.WALK_ACTIVE", 20_000.0),
        ("MEM_INST_RETIRED.LOCK_LOADS", 5_000.0),
        ("FRONTEND_RETIRED.L2_MISS", 200.0),
        ("FRONTEND_RETIRED.L1I_MISS", 3_000.0),
    ]);
    let c = |e: &EventRef| counts.get(e);
    let none = Constants::default();
    let eval = |name: &str, rl: &dyn Fn(&str) -> Option<f64>| {
        p.metric(name)
            .unwrap_or_else(|| panic!("no metric {name}"))
            .evaluate(&c, rl, &none)
            .unwrap_or_else(|e| panic!("{e}"))
    };

    // tma_dtlb_load = DTLB_Load:
    // 100 * ( ( min( ( a * b ) , a * ( ( 7 ) ) ) if ( b > = 0 ) else ( a * ( ( 7 ) ) ) ) / ( c )
    //       + ( d / ( c ) ) )
    // a = MEM_INST_RETIRED.STLB_HIT_LOADS, b = its retire latency,
    // c = CPU_CLK_UNHALTED.THREAD, d = DTLB_LOAD_MISSES.WALK_ACTIVE.
    let m = p.metric("tma_dtlb_load").unwrap();
    assert_eq!(
        m.formula().unwrap().source(),
        "100 * ( ( min( ( a * b ) , a * ( ( 7 ) ) ) if ( b > = 0 ) else ( a * ( ( 7 ) ) ) ) / ( c ) + ( d / ( c ) ) )"
    );
    // Default latency 1.57: min(1000 * 1.57, 1000 * 7) = 1570; (1570 + 20000) / 1e6 * 100.
    assert_close!(eval("tma_dtlb_load", &defaults), 2.157);
    assert_close!(
        eval("tma_dtlb_load", &defaults),
        100.0 * (1570.0 / 1e6 + 20_000.0 / 1e6)
    );
    // Measured 12 cycles: min(12000, 7000) = 7000 caps it: (7000 + 20000) / 1e6 * 100 = 2.7.
    assert_close!(eval("tma_dtlb_load", &|_| Some(12.0)), 2.7);
    // A negative latency selects Intel's fallback a * 7: also 2.7.
    assert_close!(eval("tma_dtlb_load", &|_| Some(-1.0)), 2.7);
    // Zero latency: min(0, 7000) = 0, only the walks remain: 20000 / 1e6 * 100 = 2.
    assert_close!(eval("tma_dtlb_load", &|_| Some(0.0)), 2.0);

    // tma_lock_latency = Lock_Latency: 100 * ( ( a * b ) / ( c ) ),
    // a = MEM_INST_RETIRED.LOCK_LOADS, b = its retire latency, c = CPU_CLK_UNHALTED.THREAD.
    // 5000 * 63.76 / 1e6 * 100 = 31.88.
    assert_close!(eval("tma_lock_latency", &defaults), 31.88);
    assert_close!(
        eval("tma_lock_latency", &defaults),
        100.0 * (5_000.0 * 63.76) / 1e6
    );

    // tma_code_l2_miss = Code_L2_Miss: 100 * ( ( a * b ) / ( c ) ),
    // a = FRONTEND_RETIRED.L2_MISS, b = its retire latency. 200 * 137.41 / 1e6 * 100 = 2.7482.
    assert_close!(eval("tma_code_l2_miss", &defaults), 2.7482);

    // tma_code_l2_hit = Code_L2_Hit:
    // 100 * ( max( 0 , ( a * b ) / ( c ) - ( ( d * e ) / ( c ) ) ) ),
    // a = FRONTEND_RETIRED.L1I_MISS, b its latency, d = FRONTEND_RETIRED.L2_MISS, e its latency.
    // (3000 * 9.83 - 200 * 137.41) / 1e6 * 100 = (29490 - 27482) / 1e4 = 0.2008.
    assert_close!(eval("tma_code_l2_hit", &defaults), 0.2008);
    // With a larger L2-miss latency the difference is negative and max(0, .) clamps it.
    let rl = |n: &str| {
        if n == "FRONTEND_RETIRED.L2_MISS" {
            Some(200.0)
        } else {
            defaults(n)
        }
    };
    assert_close!(eval("tma_code_l2_hit", &rl), 0.0);

    // A simple ratio: tma_info_thread_ipc = Info_Thread_IPC = a / ( b ),
    // INST_RETIRED.ANY / CPU_CLK_UNHALTED.THREAD = 2.5e6 / 1e6 = 2.5.
    assert_close!(eval("tma_info_thread_ipc", &defaults), 2.5);
    // And the non-TMA cpi = a / b with a = CPU_CLK_UNHALTED.THREAD, b = INST_RETIRED.ANY.
    assert_eq!(
        p.metric("cpi").unwrap().formula().unwrap().source(),
        "a / b"
    );
    assert_close!(eval("cpi", &defaults), 1e6 / 2.5e6);

    // A missing retire latency is an error naming the event, not a guess.
    let e = p
        .metric("tma_lock_latency")
        .unwrap()
        .evaluate(&c, &|_| None, &none)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "metric Lock_Latency: no value for 'b': no retire latency for MEM_INST_RETIRED.LOCK_LOADS"
    );
    // So is a missing count.
    let e = p
        .metric("tma_lock_latency")
        .unwrap()
        .evaluate(&|_| None, &defaults, &none)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "metric Lock_Latency: no value for 'a': event MEM_INST_RETIRED.LOCK_LOADS was not counted"
    );
}

#[test]
fn granite_rapids_topdown_constants_and_instances() {
    let Some(dir) = perfmon_dir("granite_rapids_topdown_constants_and_instances") else {
        return;
    };
    let p = Perfmon::load(&dir, GNR).unwrap();
    let counts = Counts::new(&[
        ("PERF_METRICS.FRONTEND_BOUND", 2e6),
        ("PERF_METRICS.BAD_SPECULATION", 1e6),
        ("PERF_METRICS.RETIRING", 4e6),
        ("PERF_METRICS.BACKEND_BOUND", 3e6),
        ("INT_MISC.UOP_DROPPING", 1e5),
        ("TOPDOWN.SLOTS:perf_metrics", 1e7),
        ("CPU_CLK_UNHALTED.THREAD", 6e9),
        ("CPU_CLK_UNHALTED.REF_TSC", 4e9),
        ("CPU_CLK_UNHALTED.DISTRIBUTED", 5e9),
        ("UNC_P_CLOCKTICKS[0]", 1e9),
        ("UNC_P_POWER_STATE_OCCUPANCY_CORES_C0", 5e10),
    ]);
    let c = |e: &EventRef| counts.get(e);
    let no_rl = |_: &str| None;
    let k = Constants {
        smt_on: Some(true),
        threads_per_core: Some(2.0),
        duration_seconds: Some(2.0),
        tsc_frequency_hz: Some(2e9),
        socket_count: Some(2.0),
        cpus_per_socket: Some(128.0),
        ..Constants::default()
    };
    let eval = |name: &str, k: &Constants| {
        p.metric(name)
            .unwrap()
            .evaluate(&c, &no_rl, k)
            .unwrap_or_else(|e| panic!("{e}"))
    };

    // tma_frontend_bound = 100 * ( a / ( a + b + c + d ) - e / ( f ) ) with the four
    // PERF_METRICS and e = INT_MISC.UOP_DROPPING, f = TOPDOWN.SLOTS:perf_metrics:
    // 100 * (2e6 / 1e7 - 1e5 / 1e7) = 100 * (0.2 - 0.01) = 19.
    assert_close!(eval("tma_frontend_bound", &k), 19.0);
    // tma_retiring = 100 * ( a / ( b + c + a + d ) ) = 100 * 4e6 / 1e7 = 40.
    assert_close!(eval("tma_retiring", &k), 40.0);

    // tma_info_core_core_clks = a if smt_on else ( b ): CPU_CLK_UNHALTED.DISTRIBUTED with SMT.
    assert_close!(eval("tma_info_core_core_clks", &k), 5e9);
    let no_smt = Constants {
        smt_on: Some(false),
        ..k.clone()
    };
    assert_close!(eval("tma_info_core_core_clks", &no_smt), 6e9);
    let e = p
        .metric("tma_info_core_core_clks")
        .unwrap()
        .evaluate(&c, &no_rl, &Constants::default())
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "metric Info_Core_CORE_CLKS: no value for 'smt_on': constant HYPERTHREADING_ON was not provided"
    );

    // SYSTEM_TSC_FREQ in a TMA metric is the TSC ticks of the run (2e9 Hz * 2 s = 4e9):
    // Info_System_Core_Frequency = ( ( a ) / b ) * c / ( 1000000000 )
    //                              / ( ( durationtimeinmilliseconds / 1000 ) )
    // = (6e9 / 4e9) * 4e9 / 1e9 / (2000 / 1000) = 3 GHz.
    assert_close!(eval("tma_info_system_core_frequency", &k), 3.0);
    // ... and the frequency in Hz in cpu_operating_frequency = (a / b * c) / 1000000000
    // = 6e9 / 4e9 * 2e9 / 1e9 = 3 GHz as well.
    assert_close!(eval("cpu_operating_frequency", &k), 3.0);
    // Info_System_CPU_Utilization = ( a / b ) / c, b = SYSTEM_TSC_FREQ (ticks),
    // c = system.sockets[0].cpus.count * system.socket_count: 4e9 / 4e9 / (128 * 2).
    assert_close!(eval("tma_info_system_cpu_utilization", &k), 1.0 / 256.0);

    // Indexed instance: cpu_cstate_c0 = (b / a[0]) * socket_count = 5e10 / 1e9 * 2 = 100.
    assert_close!(eval("cpu_cstate_c0", &k), 100.0);

    // A bare system constant in the formula: uncore_frequency =
    // (a / (b * socket_count) / 1000000000) / DURATIONTIMEINSECONDS, b = CHAS_PER_SOCKET.
    let counts2 = Counts::new(&[("UNC_CHA_CLOCKTICKS", 4.8e12)]);
    let k2 = Constants {
        chas_per_socket: Some(120.0),
        ..k.clone()
    };
    let v = p
        .metric("uncore_frequency")
        .unwrap()
        .evaluate(&|e| counts2.get(e), &no_rl, &k2)
        .unwrap();
    // 4.8e12 / (120 * 2) / 1e9 / 2 = 10.
    assert_close!(v, 10.0);

    // Division by zero is NaN (no cycles counted), not an error.
    let zero = Counts::new(&[("INST_RETIRED.ANY", 5.0), ("CPU_CLK_UNHALTED.THREAD", 0.0)]);
    let v = p
        .metric("tma_info_thread_ipc")
        .unwrap()
        .evaluate(&|e| zero.get(e), &no_rl, &k)
        .unwrap();
    assert!(v.is_nan());
}

#[test]
fn thresholds_over_legacy_names() {
    let Some(dir) = perfmon_dir("thresholds_over_legacy_names") else {
        return;
    };
    let p = Perfmon::load(&dir, GNR).unwrap();
    let m = p.metric("tma_dtlb_load").unwrap();
    let t = m.threshold.as_ref().unwrap();
    assert_eq!(
        t.formula().unwrap().source(),
        "( a > 10 ) & ( b > 10 ) & ( c > 20 ) & ( d > 20 )"
    );
    assert_eq!(t.issues, ["$issueTLB"]);
    // a = DTLB_Load, b = L1_Bound, c = Memory_Bound, d = Backend_Bound (percentages).
    let mut values: HashMap<&str, f64> = [
        ("DTLB_Load", 12.0),
        ("L1_Bound", 15.0),
        ("Memory_Bound", 30.0),
        ("Backend_Bound", 40.0),
    ]
    .into_iter()
    .collect();
    let holds = |values: &HashMap<&str, f64>| {
        p.threshold_holds(m, &|x| values.get(x.name.as_str()).copied())
    };
    assert_eq!(holds(&values), Ok(Some(true)));
    values.insert("Memory_Bound", 19.0);
    assert_eq!(holds(&values), Ok(Some(false)));
    values.remove("Backend_Bound");
    // `&` short-circuits: Memory_Bound fails first, Backend_Bound is not needed.
    assert_eq!(holds(&values), Ok(Some(false)));
    values.insert("Memory_Bound", 30.0);
    let e = holds(&values).unwrap_err().to_string();
    assert_eq!(
        e,
        "metric DTLB_Load: no value for 'd': no value for metric metric_TMA_Backend_Bound(%)"
    );
    // Retiring's threshold uses '|'.
    let r = p.metric("tma_retiring").unwrap();
    let v = |x: &Metric| match x.name.as_str() {
        "Retiring" => Some(50.0),
        "Heavy_Operations" => Some(11.0),
        _ => None,
    };
    assert_eq!(p.threshold_holds(r, &v), Ok(Some(true)));
    // No threshold formula: None.
    let ipc = p.metric("tma_info_thread_ipc").unwrap();
    assert_eq!(p.threshold_holds(ipc, &|_| None), Ok(None));
}

#[test]
fn retire_latency_files() {
    let Some(dir) = perfmon_dir("retire_latency_files") else {
        return;
    };
    let rl =
        RetireLatencies::load(&dir.join("GNR/metrics/graniterapids_retire_latency.json")).unwrap();
    assert_eq!(rl.len(), 26);
    assert_eq!(rl.platform.get("Model").map(String::as_str), Some("173"));
    assert_eq!(
        rl.platform.get("TMA version").map(String::as_str),
        Some("5.01-full-perf")
    );
    let get = |n: &str| rl.get(n).unwrap_or_else(|| panic!("{n}"));
    let l = get("MEM_INST_RETIRED.LOCK_LOADS");
    assert_eq!((l.min, l.max, l.mean), (15.0, 5156.0, 63.76));
    assert_eq!(
        (l.count, l.median, l.histogram.as_ref()),
        (None, None, None)
    );
    let l = get("FRONTEND_RETIRED.L2_MISS");
    assert_eq!((l.min, l.max, l.mean), (0.0, 2854.0, 137.41));
    let l = get("BR_MISP_RETIRED.RET_COST");
    assert_eq!((l.min, l.max, l.mean), (9.0, 1082.0, 32.37));
    // The 16-bit field saturates.
    assert_eq!(get("FRONTEND_RETIRED.MS_FLOWS").max, 65535.0);
    // Lookups ignore case and modifiers.
    assert_eq!(
        rl.get("mem_inst_retired.stlb_hit_loads:retire_latency")
            .unwrap()
            .mean,
        1.57
    );
    assert!(rl.get("INST_RETIRED.ANY").is_none());
}

#[test]
fn retire_latency_hrec_extended_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("hrec_retire_latency.json");
    // The shape hrec's `report --retire-latency-json` writes.
    std::fs::write(
        &path,
        r#"{
  "Platform": {"Model name": "test", "CPU family": "6", "Model": "173"},
  "Data": {
    "MEM_INST_RETIRED.LOCK_LOADS": {
      "MIN": 12, "MAX": 900, "MEAN": 41.5, "COUNT": 1000,
      "MEDIAN": 30, "P90": 80, "P99": 400,
      "HISTOGRAM": [{"LE": 0, "COUNT": 0}, {"LE": 1, "COUNT": 0}, {"LE": 16, "COUNT": 100},
                    {"LE": 32, "COUNT": 500}, {"LE": 1024, "COUNT": 400}]
    },
    "FRONTEND_RETIRED.L2_MISS": {"MIN": 0, "MAX": 10, "MEAN": 5}
  }
}"#,
    )
    .unwrap();
    let rl = RetireLatencies::load(&path).unwrap();
    let l = rl.get("MEM_INST_RETIRED.LOCK_LOADS").unwrap();
    assert_eq!((l.min, l.max, l.mean), (12.0, 900.0, 41.5));
    assert_eq!(
        (l.count, l.median, l.p90, l.p99),
        (Some(1000), Some(30.0), Some(80.0), Some(400.0))
    );
    let h = l.histogram.as_ref().unwrap();
    assert_eq!(h.len(), 5);
    assert_eq!(h[3], HistogramBucket { le: 32, count: 500 });
    assert_eq!(h.iter().map(|b| b.count).sum::<u64>(), 1000);
    let l = rl.get("FRONTEND_RETIRED.L2_MISS").unwrap();
    assert_eq!((l.mean, l.count, l.histogram.as_ref()), (5.0, None, None));
    assert_eq!(rl.platform["Model"], "173");
}

#[test]
fn malformed_files_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = tmp.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let one_line = |e: &PerfmonError, path: &Path, needle: &str| {
        let s = e.to_string();
        assert!(!s.contains('\n'), "{s}");
        assert!(s.contains(&path.display().to_string()), "{s}");
        assert!(s.contains(needle), "{s:?} lacks {needle:?}");
    };

    // Truncated real metrics file, or a small one if the directory is absent.
    let text = std::fs::read_to_string(perfmon_path().join(MODELS[0].1)).unwrap_or_else(|_| {
        r#"{"Header": {}, "Metrics": [{"MetricName": "x", "Formula": "a"}]}"#.into()
    });
    let p = write("truncated_metrics.json", &text[..text.len() / 3]);
    let e = MetricFile::load(&p).unwrap_err();
    one_line(&e, &p, "invalid JSON: EOF while parsing");

    // Wrong types.
    let p = write(
        "types_metrics.json",
        r#"{"Header": {}, "Metrics": [{"MetricName": 5, "Formula": "a"}]}"#,
    );
    let e = MetricFile::load(&p).unwrap_err();
    one_line(
        &e,
        &p,
        "invalid type: integer `5`, expected a string at line 1",
    );
    let p = write(
        "level_metrics.json",
        r#"{"Metrics": [{"MetricName": "x", "Level": "two", "Formula": "a"}]}"#,
    );
    one_line(
        &MetricFile::load(&p).unwrap_err(),
        &p,
        "invalid type: string \"two\"",
    );
    let p = write("array.json", "[1, 2, 3]");
    one_line(&MetricFile::load(&p).unwrap_err(), &p, "invalid JSON");
    one_line(&RetireLatencies::load(&p).unwrap_err(), &p, "invalid JSON");
    one_line(&CoreEvents::load(&p).unwrap_err(), &p, "invalid JSON");

    let p = write(
        "rl.json",
        r#"{"Platform": {}, "Data": {"X.Y": {"MIN": "zero", "MAX": 1, "MEAN": 1}}}"#,
    );
    one_line(
        &RetireLatencies::load(&p).unwrap_err(),
        &p,
        "invalid type: string \"zero\"",
    );
    let p = write("rl2.json", r#"{"Data": {"X.Y": {"MIN": 0, "MAX": 1}}}"#);
    one_line(
        &RetireLatencies::load(&p).unwrap_err(),
        &p,
        "missing field `MEAN`",
    );

    let p = write(
        "core.json",
        r#"{"Header": {}, "Events": [{"EventName": "A.B", "EventCode": ["0x10"], "UMask": "0x1"}]}"#,
    );
    one_line(
        &CoreEvents::load(&p).unwrap_err(),
        &p,
        r#"event A.B: field "EventCode" is ["0x10"], expected a string or a number"#,
    );
    let p = write(
        "core2.json",
        r#"{"Events": [{"EventName": "A.B", "EventCode": "0x10", "UMask": "0xZZ"}]}"#,
    );
    one_line(
        &CoreEvents::load(&p).unwrap_err(),
        &p,
        r#"event A.B: field "UMask" is "0xZZ", expected a number"#,
    );
    let p = write("core3.json", r#"{"Events": [{"EventCode": "0x10"}]}"#);
    one_line(
        &CoreEvents::load(&p).unwrap_err(),
        &p,
        "event #1: missing or non-string \"EventName\"",
    );
    // Numbers instead of strings are fine.
    let p = write(
        "core4.json",
        r#"{"Events": [{"EventName": "A.B", "EventCode": 16, "UMask": 1, "CounterMask": "2"}]}"#,
    );
    let ev = CoreEvents::load(&p).unwrap();
    let a = ev.get("a.b").unwrap();
    assert_eq!(
        (a.event_codes.as_slice(), a.umasks.as_slice(), a.cmask),
        (&[16][..], &[1][..], 2)
    );

    let p = write(
        "mapfile.csv",
        "Family-model,Version,Filename,EventType\nGenuineIntel-6-AD,V1\n",
    );
    one_line(
        &Mapfile::load(&p).unwrap_err(),
        &p,
        "line 2: expected at least 4",
    );
    let p = write("mapfile2.csv", "not a header\n");
    one_line(
        &Mapfile::load(&p).unwrap_err(),
        &p,
        "line 1: expected the header",
    );
    let missing = tmp.path().join("nope.json");
    one_line(
        &MetricFile::load(&missing).unwrap_err(),
        &missing,
        "cannot read",
    );

    // A formula that does not parse fails only its metric, when evaluated.
    let p = write(
        "bad_formula_metrics.json",
        r#"{"Metrics": [{"MetricName": "ok", "Formula": "a", "Events": [{"Name": "X", "Alias": "a"}]},
                        {"MetricName": "bad", "Formula": "( a +", "Events": []}]}"#,
    );
    let f = MetricFile::load(&p).unwrap();
    assert_eq!(f.formula_errors().len(), 1);
    let k = Constants::default();
    assert_eq!(
        f.metrics[0].evaluate(&|_| Some(3.0), &|_| None, &k),
        Ok(3.0)
    );
    let e = f.metrics[1]
        .evaluate(&|_| Some(3.0), &|_| None, &k)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "metric bad: bad formula at column 6: formula ends where a value is expected (at the end)"
    );
}
