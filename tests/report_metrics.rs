//! `hrec report --td-level 3` / `--metrics`: Intel's metrics per function from the
//! sampling-read groups of `record --td-level 3`, on a synthetic Granite Rapids recording made
//! from the real planner's plan (Intel's files from `../shared/perfmon`), byte for byte in the
//! kernel's layout and written with the real file writer. Every group's deltas follow a
//! per-function truth (events per cycle); the expected metrics are Intel's formulas evaluated
//! here on that truth with the metrics evaluator, not through the report's code.

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use hrec::data::{EventId, EventMeta, Meta, PmuMeta, Trailer, Writer};
use hrec::event::attr::{read, sample as st};
use hrec::event::plan::metric::{self, MetricChoice};
use hrec::event::plan::{self, Host, Plan, RecordOptions, Role};
use hrec::metrics::Constants;
use hrec::metrics::perfmon::{EventRef, Metric, Perfmon};
use hrec::pmu::uarch::CpuId;
use serde_json::Value;
use support::encode::{Encoder, ReadFields, ReadValue, SampleFields, SampleId};
use support::{hrec_in, pmus, procfs_of, text};

const MODEL: &str = "graniterapids";
const KALLSYMS: &str = "\
ffffffff81000000 T _text
ffffffff81001000 T chase
ffffffff81002000 T divide
ffffffff81003000 T rare
ffffffff81004000 T past_the_end
";
const FUNCS: [(&str, u64); 3] = [
    ("chase", 0xffffffff81001010),
    ("divide", 0xffffffff81002020),
    ("rare", 0xffffffff81003030),
];
/// Cycles per sample of every group's sampler.
const PERIOD: u64 = 1_000_000;
const KERNEL_EXACT: u16 = 1 | (1 << 14);

fn perfmon_dir() -> Option<PathBuf> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/perfmon");
    if d.join("mapfile.csv").exists() {
        Some(d)
    } else {
        eprintln!("skipped: ../shared/perfmon not found");
        None
    }
}

fn cpuid() -> String {
    CpuId::read(&procfs_of(MODEL)).unwrap().to_string()
}

fn perfmon(dir: &Path) -> Perfmon {
    let id = hrec::stat::tma::cpuid(&procfs_of(MODEL)).unwrap();
    hrec::stat::tma::load(dir, &id).unwrap().0
}

/// The record plan of `--td-level 3` on Granite Rapids, as `hrec record` makes it.
fn plan_td3(dir: &Path) -> Plan {
    plan_of(
        dir,
        &MetricChoice {
            td_level: Some(3),
            metrics: Vec::new(),
        },
    )
}

/// The record plan of `choice` on Granite Rapids.
fn plan_of(dir: &Path, choice: &MetricChoice) -> Plan {
    let host = Host {
        max_sample_rate: Some(100_000),
        x86: true,
        cpu: CpuId::read(&procfs_of(MODEL)),
        nmi_watchdog: Some(true),
    };
    let pmus = pmus(MODEL);
    let pm = perfmon(dir);
    let m = metric::plan_metrics(&pmus, &host, Ok(&pm), choice).unwrap();
    plan::plan_record_with(&pmus, &host, &RecordOptions::default(), Some(&m)).unwrap()
}

/// An event as the truth keys it: Intel's name and the modifiers that change the encoding.
fn key(e: &EventRef) -> String {
    let name = e.name.to_ascii_uppercase();
    let name = match name.as_str() {
        "CYCLES" | "CPU_CLK_UNHALTED.THREAD_P" => "CPU_CLK_UNHALTED.THREAD".to_string(),
        _ => name,
    };
    format!("{name}:{:?}:{}:{}", e.cmask, e.edge, e.inv)
}

/// Events per cycle of a function: the truth the recording is made from.
fn rate(func: &str, k: &str) -> f64 {
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
        "UOPS_EXECUTED.THREAD" => per_func(0.5, 0.6, 2.0),
        "FRONTEND_RETIRED.L1I_MISS" => per_func(0.002, 0.001, 0.001),
        "FRONTEND_RETIRED.L2_MISS" => per_func(0.0001, 0.0001, 0.0001),
        "UOPS_RETIRED.SLOTS" => l1[0] * slots * 0.9,
        "UOPS_ISSUED.ANY" => (l1[0] + l1[1]) * slots,
        _ => 0.01,
    }
}

/// Reads of group `g` per function: different per group (so rates must be scaled by each
/// group's own cycles), and for `rare` too few in group 3.
fn reads(func: &str, g: usize) -> u64 {
    match func {
        "rare" if g == 3 => 5,
        "rare" => 40,
        "chase" => 30 + 7 * g as u64,
        _ => 60 - 4 * g as u64,
    }
}

fn id(i: usize) -> u64 {
    1000 + i as u64
}

/// The plan's groups: per sampler, its members (plan indexes) and each member's truth key.
fn groups(plan: &Plan) -> Vec<(usize, Vec<(usize, String)>)> {
    plan.events
        .iter()
        .filter(|e| e.role == Role::Sampler && e.metric.is_some())
        .map(|s| {
            let members = plan
                .events
                .iter()
                .filter(|e| e.leader == s.leader)
                .map(|e| {
                    let m = e.metric.as_ref().unwrap();
                    (e.index, key(&EventRef::parse(&m.event)))
                })
                .collect();
            (s.index, members)
        })
        .collect()
}

/// Writes the synthetic recording of `plan` into `dir`; `extra` are more events (a `-W`
/// sampler) with their samples made by `more`.
fn write_recording(
    dir: &Path,
    plan: &Plan,
    extra: Vec<EventMeta>,
    more: impl Fn(&Meta) -> Vec<u8>,
) {
    let mut events: Vec<EventMeta> = plan
        .events
        .iter()
        .map(|e| EventMeta {
            name: e.name.clone(),
            pmu: e.pmu.clone(),
            attr: e.attr,
            leader: e.leader,
            role: e.role,
            ids: vec![EventId {
                id: id(e.index),
                cpu: 0,
                tid: 500,
            }],
        })
        .collect();
    events.extend(extra);
    let meta = Meta {
        hrec_version: "test".into(),
        target: "workload".into(),
        cpuid: cpuid(),
        pmus: vec![PmuMeta {
            name: "cpu".into(),
            type_: 4,
        }],
        events,
        ..Meta::default()
    };
    let gs = groups(plan);
    let first = gs[0].0;
    let mut records = Vec::new();
    let enc = Encoder::new(meta.events[first].attr);
    let sid = SampleId {
        pid: 500,
        tid: 500,
        time: 1,
        id: id(first),
        ..SampleId::default()
    };
    records.extend(enc.comm(&sid, 500, 500, b"app", true));
    let mut totals: HashMap<usize, Vec<u64>> = HashMap::new();
    let mut time = 10;
    // Round-robin over groups and functions, as multiplexing interleaves them.
    let most = FUNCS
        .iter()
        .flat_map(|(f, _)| (0..gs.len()).map(|g| reads(f, g)))
        .max()
        .unwrap();
    for round in 0..most {
        for (gi, (sampler, members)) in gs.iter().enumerate() {
            for (f, ip) in FUNCS {
                if round >= reads(f, gi) {
                    continue;
                }
                let tot = totals
                    .entry(*sampler)
                    .or_insert_with(|| vec![0; members.len()]);
                for (k, (_, key)) in members.iter().enumerate() {
                    tot[k] += (rate(f, key) * PERIOD as f64).round() as u64;
                }
                time += 1000;
                let values = members
                    .iter()
                    .zip(tot.iter())
                    .map(|(&(m, _), &v)| ReadValue {
                        value: v,
                        id: id(m),
                        lost: 0,
                    })
                    .collect();
                let enc = Encoder::new(meta.events[*sampler].attr);
                records.extend(enc.sample(&SampleFields {
                    misc: KERNEL_EXACT,
                    id: id(*sampler),
                    ip,
                    pid: 500,
                    tid: 500,
                    time,
                    cpu: 0,
                    period: PERIOD,
                    read: ReadFields {
                        values,
                        ..ReadFields::default()
                    },
                    ..SampleFields::default()
                }));
            }
        }
    }
    records.extend(more(&meta));
    let mut w = Writer::create(&dir.join("hrec.data"), &meta).unwrap();
    w.write_side("kallsyms", KALLSYMS.as_bytes()).unwrap();
    w.write_records(&records, 0).unwrap();
    w.finish(Trailer::default()).unwrap();
}

/// Intel's value of `m` for a function by its formula on the truth, `latency` giving `:R`
/// terms.
fn truth(m: &Metric, func: &str, latency: &dyn Fn(&str) -> Option<f64>) -> Option<f64> {
    let counts = |e: &EventRef| Some(rate(func, &key(e)) * 1e9);
    let c = Constants {
        smt_on: Some(false),
        threads_per_core: Some(1.0),
        ..Constants::default()
    };
    m.evaluate(&counts, latency, &c)
        .ok()
        .filter(|v| v.is_finite())
}

/// toplev's bottleneck path on the truth.
fn truth_path(
    pm: &Perfmon,
    chosen: &[&Metric],
    value: &dyn Fn(&Metric) -> Option<f64>,
) -> Vec<String> {
    let past = |m: &Metric| -> Option<f64> {
        let v = value(m)?;
        matches!(pm.threshold_holds(m, value), Ok(Some(true))).then_some(v)
    };
    let mut path = Vec::new();
    let mut parent: Option<String> = None;
    loop {
        let best = chosen
            .iter()
            .filter(|m| {
                m.is_tma_node()
                    && match &parent {
                        None => m.level == 1,
                        Some(p) => m.parent.as_deref() == Some(p.as_str()),
                    }
            })
            .filter_map(|m| Some((*m, past(m)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((m, _)) = best else { break };
        path.push(m.perf_name());
        parent = Some(m.name.clone());
    }
    path
}

fn report(dir: &Path, args: &[&str]) -> (Value, String) {
    let mut a = vec!["report", "--json"];
    a.extend_from_slice(args);
    let o = hrec_in(dir, &a);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    (
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}")),
        err,
    )
}

/// The first table whose rows carry metrics, and its row of `func`.
fn metric_row<'a>(v: &'a Value, func: &str) -> &'a Value {
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["rows"].as_array().unwrap())
        .find(|r| r["key"]["sym"] == format!("[k] {func}") && r.get("metrics").is_some())
        .unwrap_or_else(|| panic!("no row {func} with metrics"))
}

#[test]
fn td_level_3_per_function_equals_intels_formulas_on_the_truth() {
    let Some(pdir) = perfmon_dir() else { return };
    let pm = perfmon(&pdir);
    let plan = plan_td3(&pdir);
    let gs = groups(&plan);
    assert!(gs.len() >= 7, "{} groups", gs.len());
    let tmp = tempfile::tempdir().unwrap();
    write_recording(tmp.path(), &plan, Vec::new(), |_| Vec::new());
    let pdir_s = pdir.display().to_string();
    let (v, err) = report(
        tmp.path(),
        &[
            "--td-level",
            "3",
            "--perfmon",
            &pdir_s,
            "--metric-min-reads",
            "20",
        ],
    );
    assert!(!err.contains("no metrics per row"), "{err}");
    let chosen = pm.tma_metrics(3);
    assert_eq!(chosen.len(), 45);
    let no_rl = |_: &str| None;
    for (func, _) in FUNCS {
        let row = metric_row(&v, func);
        let metrics = row["metrics"].as_object().unwrap();
        assert_eq!(metrics.len(), chosen.len(), "{func}");
        // Which metrics need group 3 (the one `rare` has too few reads of).
        let group3: Vec<&String> = gs[3].1.iter().map(|(_, k)| k).collect();
        let in_other = |k: &String| {
            gs.iter()
                .enumerate()
                .any(|(g, (_, m))| g != 3 && m.iter().any(|(_, x)| x == k))
        };
        for m in &chosen {
            let got = metrics[&m.perf_name()].as_f64();
            let needs3 = m
                .used_events()
                .filter(|e| !e.retire_latency)
                .any(|e| group3.contains(&&key(e)) && !in_other(&key(e)));
            let want = if func == "rare" && needs3 {
                None
            } else {
                truth(m, func, &|n| pm.default_retire_latency(n))
            };
            match (got, want) {
                (Some(g), Some(w)) => assert!(
                    (g - w).abs() < 0.1,
                    "{func} {}: got {g}, Intel's formula on the truth {w}",
                    m.perf_name()
                ),
                (None, None) => {}
                _ => panic!("{func} {}: got {got:?}, want {want:?}", m.perf_name()),
            }
        }
        if func != "rare" {
            let value = |m: &Metric| truth(m, func, &no_rl);
            let path = truth_path(&pm, &chosen, &value);
            let got: Vec<String> = row["bottleneck"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect();
            assert_eq!(got, path, "{func}");
            assert!(path.len() >= 3, "{func}: {path:?}");
        }
        let groups = row["metric_groups"].as_array().unwrap();
        assert_eq!(groups.len(), gs.len());
        for (g, gr) in groups.iter().enumerate() {
            assert_eq!(gr["reads"], reads(func, g), "{func} group {g}");
        }
    }
    // The intended bottlenecks.
    let path = |f: &str| metric_row(&v, f)["bottleneck"].clone();
    assert_eq!(
        path("chase"),
        serde_json::json!(["tma_backend_bound", "tma_memory_bound", "tma_l3_bound"])
    );
    assert_eq!(
        path("divide"),
        serde_json::json!(["tma_backend_bound", "tma_core_bound", "tma_divider"])
    );
    // Below the read minimum: null, never a number of five samples.
    let rare = metric_row(&v, "rare");
    assert!(rare["metrics"]["tma_retiring"].is_f64());
    // Metrics with a number in `chase` (whose group 3 has enough reads) and none in `rare`.
    let chase_metrics = &metric_row(&v, "chase")["metrics"];
    let nulls: Vec<&String> = rare["metrics"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, x)| x.is_null() && chase_metrics[k.as_str()].is_f64())
        .map(|(k, _)| k)
        .collect();
    assert!(nulls.len() >= 3, "rare: group 3 has 5 reads: {nulls:?}");
    // Today's perf-metrics columns stay as they were: each `topdown-*` over their sum.
    let chase = metric_row(&v, "chase");
    assert_eq!(chase["topdown"]["level1"]["Backend Bound"], 80.0);
    assert_eq!(chase["topdown"]["level2"]["Memory Bound"], 70.0);
    // The text report: the tree under each row, the bottleneck path marked, `-` below the
    // read minimum.
    let o = hrec_in(
        tmp.path(),
        &["report", "--stdio", "--td-level", "3", "--perfmon", &pdir_s],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let block = |func: &str| -> Vec<String> {
        out.lines()
            .skip_while(|l| !l.ends_with(&format!("[k] {func}")))
            .skip(1)
            .take_while(|l| l.trim_start().starts_with('|'))
            .map(|l| l.split_once('|').unwrap().1.trim_end().to_string())
            .collect()
    };
    let chase = block("chase");
    let marked: Vec<&str> = chase
        .iter()
        .filter(|l| l.ends_with("<=="))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        marked,
        ["tma_backend_bound", "tma_memory_bound", "tma_l3_bound"],
        "{out}"
    );
    let l3 = chase.iter().find(|l| l.contains("tma_l3_bound")).unwrap();
    assert!(
        l3.starts_with("        tma_l3_bound"),
        "indented by level: {l3:?}"
    );
    let want = truth(pm.metric("tma_l3_bound").unwrap(), "chase", &no_rl).unwrap();
    assert!(l3.contains(&format!("{want:.1}")), "{l3} {want}");
}

#[test]
fn metrics_list_and_retire_latency_from_the_recording() {
    let Some(pdir) = perfmon_dir() else { return };
    let pm = perfmon(&pdir);
    // A metric with a `:R` term and the events it counts.
    let Some(m) = pm
        .all()
        .iter()
        .find(|m| m.is_tma_node() && m.used_events().any(|e| e.retire_latency))
    else {
        eprintln!("skipped: no retire-latency metric in Intel's Granite Rapids file");
        return;
    };
    let rl = m
        .used_events()
        .find(|e| e.retire_latency)
        .unwrap()
        .name
        .clone();
    // Planned as `record -M <metric>`.
    let plan = plan_of(
        &pdir,
        &MetricChoice {
            td_level: None,
            metrics: vec![m.perf_name()],
        },
    );
    // A `-W` sampler of the `:R` event (its raw encoding), 30 samples of latency 40 in chase.
    let (encoding, config1) = match pm.resolve(&EventRef::parse(&rl)).unwrap() {
        hrec::metrics::perfmon::Encoding::Counter(r) => (
            u64::from(r.event_code) | u64::from(r.umask) << 8 | u64::from(r.cmask) << 24,
            r.msr.map_or(0, |m| m.1),
        ),
        other => panic!("{other:?}"),
    };
    let first = groups(&plan)[0].0;
    let mut attr = plan.events[first].attr;
    attr.type_ = 4;
    attr.config = encoding;
    attr.config1 = config1;
    attr.sample_type = (attr.sample_type & !st::READ) | st::WEIGHT_STRUCT;
    attr.read_format &= !read::GROUP;
    let index = plan.events.len();
    let extra = vec![EventMeta {
        name: format!("{rl}:p"),
        pmu: Some("cpu".into()),
        attr,
        leader: index,
        role: Role::Sampler,
        ids: vec![EventId {
            id: id(index),
            cpu: 0,
            tid: 500,
        }],
    }];
    let tmp = tempfile::tempdir().unwrap();
    write_recording(tmp.path(), &plan, extra, |meta| {
        let enc = Encoder::new(meta.events[index].attr);
        let mut out = Vec::new();
        for i in 0..30u64 {
            out.extend(enc.sample(&SampleFields {
                misc: KERNEL_EXACT,
                id: id(index),
                ip: FUNCS[0].1,
                pid: 500,
                tid: 500,
                time: 10_000_000 + i,
                cpu: 0,
                period: 1000,
                weight: 40 << 48,
                ..SampleFields::default()
            }));
        }
        out
    });
    let pdir_s = pdir.display().to_string();
    let name = m.perf_name();
    let (v, _) = report(tmp.path(), &["--metrics", &name, "--perfmon", &pdir_s]);
    let chase = metric_row(&v, "chase");
    let term = &chase["retire_latency_terms"][&rl];
    assert_eq!(term["source"], "recording", "{chase:#}");
    assert_eq!(term["value"], 40.0);
    let divide = metric_row(&v, "divide");
    assert_eq!(divide["retire_latency_terms"][&rl]["source"], "intel");
    // The value: Intel's formula with the recording's latency where it has one (when the
    // metric's counted events are in the plan; otherwise null).
    let got = chase["metrics"][&name].as_f64();
    let want = truth(m, "chase", &|n| {
        if n.eq_ignore_ascii_case(&rl) {
            Some(40.0)
        } else {
            pm.default_retire_latency(n)
        }
    });
    match (got, want) {
        (Some(g), Some(w)) => assert!((g - w).abs() < 0.1, "{name}: {g} vs {w}"),
        _ => panic!("{name}: got {got:?}, want {want:?}"),
    }
    // Not Intel's default: the recording's 40 cycles made the value.
    let with_default = truth(m, "chase", &|n| pm.default_retire_latency(n));
    assert!(
        with_default.is_none_or(|d| (d - want.unwrap_or(0.0)).abs() > 0.1),
        "{name}: {with_default:?} {want:?}"
    );
}

#[test]
fn without_metric_groups_or_intels_files_one_line_and_levels_1_and_2() {
    let Some(pdir) = perfmon_dir() else { return };
    let plan = plan_td3(&pdir);
    let tmp = tempfile::tempdir().unwrap();
    write_recording(tmp.path(), &plan, Vec::new(), |_| Vec::new());
    // Intel's files missing.
    let (v, err) = report(
        tmp.path(),
        &["--td-level", "3", "--perfmon", "/nonexistent"],
    );
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("no metrics per row"))
        .collect();
    assert_eq!(lines.len(), 1, "{err:?}");
    assert!(v["events"][0]["rows"][0].get("metrics").is_none());
    assert!(v["events"][0]["topdown"]["level1"].is_object());
    // A recording without metric groups: the default plan.
    let plain = tempfile::tempdir().unwrap();
    let default_plan = support::plan(MODEL, &RecordOptions::default());
    let meta = Meta {
        hrec_version: "test".into(),
        target: "workload".into(),
        cpuid: cpuid(),
        events: default_plan
            .events
            .iter()
            .map(|e| EventMeta {
                name: e.name.clone(),
                pmu: e.pmu.clone(),
                attr: e.attr,
                leader: e.leader,
                role: e.role,
                ids: vec![EventId {
                    id: id(e.index),
                    cpu: 0,
                    tid: 500,
                }],
            })
            .collect(),
        ..Meta::default()
    };
    let w = Writer::create(&plain.path().join("hrec.data"), &meta).unwrap();
    w.finish(Trailer::default()).unwrap();
    let pdir_s = pdir.display().to_string();
    let o = hrec_in(
        plain.path(),
        &["report", "--stdio", "--td-level", "3", "--perfmon", &pdir_s],
    );
    let (_, err) = text(&o);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("no metrics per row"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("no metric groups"), "{err}");
}
