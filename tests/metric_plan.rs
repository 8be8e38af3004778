//! `record --td-level N` and `record -M LIST` (issue 42, step 1): the groups of per-function
//! metrics on the Granite Rapids, Sapphire Rapids, Alder Lake, Arrow Lake-S and Sierra Forest
//! fixtures with Intel's files from `../shared/perfmon`. Each plan is checked by a checker of
//! this file's own, which reads Intel's event JSON itself (`Counter`, `MSRIndex`, `MSRValue`)
//! and never calls the planner's matcher: every event of the chosen metrics is in a group,
//! every group has one cycles sampler, each member sits on a counter its `Counter` field
//! allows, no two members share a counter, fixed counter 1 stays free while the NMI watchdog
//! is on, and members needing the same extra MSR agree on its value.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use hrec::event::plan::metric::{self, Counter, CounterGroup, MetricChoice, MetricPlan};
use hrec::event::plan::{self, Host, Plan, Role};
use hrec::pmu::uarch::CpuId;
use serde_json::Value;
use support::{hrec, pmus, procfs_of, text};

/// `../shared/perfmon` beside the repository, or `None` with the skip message.
fn perfmon_dir() -> Option<PathBuf> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/perfmon");
    if d.join("mapfile.csv").exists() {
        Some(d)
    } else {
        eprintln!("skipped: ../shared/perfmon not found");
        None
    }
}

fn host_of(model: &str, watchdog: bool) -> Host {
    Host {
        max_sample_rate: Some(100_000),
        x86: true,
        cpu: CpuId::read(&procfs_of(model)),
        nmi_watchdog: Some(watchdog),
    }
}

/// The plan of `choice` on `model`, its metric plan and the record plan built from it.
fn plan_of(
    dir: &Path,
    model: &str,
    watchdog: bool,
    choice: &MetricChoice,
) -> Result<(MetricPlan, Plan), String> {
    let host = host_of(model, watchdog);
    let pmus = pmus(model);
    let loaded = hrec::stat::tma::cpuid(&procfs_of(model))
        .and_then(|id| hrec::stat::tma::load(dir, &id))
        .map(|(p, _)| p)
        .map_err(|e| e.to_string());
    let m = metric::plan_metrics(&pmus, &host, loaded.as_ref().map_err(Clone::clone), choice)
        .map_err(|e| e.to_string())?;
    let p = plan::plan_record_with(&pmus, &host, &plan::RecordOptions::default(), Some(&m))
        .map_err(|e| e.to_string())?;
    Ok((m, p))
}

fn td(level: u32) -> MetricChoice {
    MetricChoice {
        td_level: Some(level),
        metrics: Vec::new(),
    }
}

/// Intel's event JSON, by event name: (`Counter`, `MSRIndex`, `MSRValue`).
fn intel_events(path: &Path) -> BTreeMap<String, (String, String, String)> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let s = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    v["Events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                s(e, "EventName"),
                (s(e, "Counter"), s(e, "MSRIndex"), s(e, "MSRValue")),
            )
        })
        .collect()
}

/// The core events file of `model`'s PMU `pmu`, and its general counters, as this test knows
/// them (Intel's files and ecore-topdown.md 1.2).
fn core_of(dir: &Path, model: &str, pmu: &str) -> (Option<PathBuf>, u32) {
    let f = |p: &str| Some(dir.join(p));
    match (model, pmu) {
        ("graniterapids", _) => (f("GNR/events/graniterapids_core.json"), 8),
        ("sapphirerapids", _) => (f("SPR/events/sapphirerapids_core.json"), 8),
        ("alderlake", "cpu_core") => (f("ADL/events/alderlake_goldencove_core.json"), 8),
        ("alderlake", _) => (f("ADL/events/alderlake_gracemont_core.json"), 6),
        ("arrowlake-s", "cpu_core") => (f("ARL/events/arrowlake_lioncove_core.json"), 10),
        ("arrowlake-s", _) => (f("ARL/events/arrowlake_skymont_core.json"), 8),
        // Crestmont: 8 general counters; Intel's Sierra Forest files are not in shared/.
        ("sierraforest", _) => (None, 8),
        _ => panic!("no table for {model}"),
    }
}

/// The counters Intel's `Counter` field allows for `member` (`None`: any general counter).
fn allowed(
    events: &BTreeMap<String, (String, String, String)>,
    member: &str,
    general: u32,
) -> BTreeSet<Counter> {
    let base = member.split(':').next().unwrap();
    let parse = |field: &str| -> BTreeSet<Counter> {
        if let Some(n) = field.strip_prefix("Fixed counter ") {
            return [Counter::Fixed(n.trim().parse().unwrap())].into();
        }
        field
            .split(',')
            .map(|n| Counter::General(n.trim().parse().unwrap()))
            .collect()
    };
    let mut set = match events.get(base) {
        Some((field, _, _)) => parse(field),
        None if events.is_empty() => (0..general).map(Counter::General).collect(),
        None => panic!("{member} is not in Intel's event file"),
    };
    // Skymont's architectural TopDown events (`X.ALL_P`) also go on the fixed counter of
    // Intel's `X.ALL` (the kernel's fixed constraints, ecore-topdown.md 1.2).
    if let Some(stem) = base.strip_suffix(".ALL_P")
        && let Some((field, _, _)) = events.get(&format!("{stem}.ALL"))
        && field.starts_with("Fixed counter")
    {
        set.extend(parse(field));
    }
    set
}

/// The independent check of one group.
fn check_group(dir: &Path, model: &str, g: &CounterGroup, watchdog: bool) {
    let (file, general) = core_of(dir, model, &g.pmu);
    let events = file.map(|f| intel_events(&f)).unwrap_or_default();
    let what = format!("{model} {} group {:?}", g.pmu, names(g));
    assert_eq!(g.general, general, "{what}: general counters");
    let samplers: Vec<_> = g.members.iter().filter(|m| m.samples).collect();
    assert_eq!(samplers.len(), 1, "{what}: one sampler");
    assert_eq!(samplers[0].event, "cycles", "{what}: the sampler is cycles");
    if g.perf_metrics {
        assert_eq!(g.members[0].event, "TOPDOWN.SLOTS", "{what}: slots leads");
        assert_eq!(g.members[0].counter, Counter::Fixed(3));
        assert_eq!(g.members[1].event, "cycles", "{what}: cycles first member");
    } else {
        assert_eq!(g.members[0].event, "cycles", "{what}: cycles leads");
    }
    let mut used = BTreeSet::new();
    let mut msrs: BTreeMap<String, String> = BTreeMap::new();
    for m in &g.members {
        if m.counter == Counter::PerfMetrics {
            assert!(
                g.perf_metrics && m.event.starts_with("PERF_METRICS."),
                "{what}: {}",
                m.event
            );
            continue;
        }
        assert!(
            used.insert(m.counter),
            "{what}: {} shares a counter",
            m.event
        );
        if watchdog {
            assert_ne!(
                m.counter,
                Counter::Fixed(1),
                "{what}: fixed 1 is the watchdog's"
            );
        }
        let ok: BTreeSet<Counter> = match m.event.as_str() {
            "cycles" => std::iter::once(Counter::Fixed(1))
                .chain((0..general).map(Counter::General))
                .collect(),
            "TOPDOWN.SLOTS" => [Counter::Fixed(3)].into(),
            e => allowed(&events, e, general),
        };
        assert!(
            ok.contains(&m.counter),
            "{what}: {} on {} (allowed {ok:?})",
            m.event,
            m.counter
        );
        if let Counter::General(n) = m.counter {
            assert!(n < general, "{what}: {} on {}", m.event, m.counter);
        }
        // Same extra MSR, same value (offcore response's two MSRs as one).
        let base = m.event.split(':').next().unwrap();
        if let Some((_, idx, val)) = events.get(base)
            && idx != "0x00"
            && !idx.is_empty()
        {
            let class = if idx.starts_with("0x1a6") || idx.starts_with("0x1A6") {
                "offcore".to_string()
            } else {
                idx.to_ascii_lowercase()
            };
            let prev = msrs.entry(class.clone()).or_insert_with(|| val.clone());
            assert_eq!(prev, val, "{what}: two values of MSR {class}");
        }
    }
}

fn names(g: &CounterGroup) -> Vec<&str> {
    g.members.iter().map(|m| m.event.as_str()).collect()
}

/// The plan's events agree with the groups: one sampler per group, a cycles event, each
/// event keeps its group (the leader) and Intel's name.
fn check_record_plan(m: &MetricPlan, p: &Plan) {
    for (gi, g) in m.groups.iter().enumerate() {
        let evs: Vec<_> = p
            .events
            .iter()
            .filter(|e| e.metric.as_ref().is_some_and(|s| s.group == gi))
            .collect();
        assert_eq!(evs.len(), g.members.len(), "group {gi}");
        let leader = evs[0].index;
        let samplers: Vec<_> = evs.iter().filter(|e| e.role == Role::Sampler).collect();
        assert_eq!(samplers.len(), 1, "group {gi}");
        assert!(samplers[0].name.contains("cycles"), "{}", samplers[0].name);
        for (e, mem) in evs.iter().zip(&g.members) {
            assert_eq!(e.leader, leader, "{}", e.name);
            let slot = e.metric.as_ref().unwrap();
            assert_eq!((&slot.event, slot.counter), (&mem.event, mem.counter));
            if mem.spec.contains("name=") {
                assert_eq!(e.name, mem.event.replace(':', "@"));
            }
        }
    }
}

/// The counted events of Intel's metrics `chosen` (perf names) as Intel's metric JSON lists
/// them, read by this test: the aliases each formula uses.
fn metric_events(metrics_json: &Path, chosen: &[String]) -> BTreeSet<String> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(metrics_json).unwrap()).unwrap();
    let mut out = BTreeSet::new();
    for m in v["Metrics"].as_array().unwrap() {
        let name = m["MetricName"].as_str().unwrap();
        let perf = format!("tma_{}", name.to_ascii_lowercase());
        if !chosen.contains(&perf) && !chosen.contains(&name.to_ascii_lowercase()) {
            continue;
        }
        let formula = m["Formula"].as_str().unwrap();
        for e in m["Events"].as_array().unwrap() {
            let alias = e["Alias"].as_str().unwrap();
            let used = formula
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|t| t == alias);
            if used {
                out.insert(e["Name"].as_str().unwrap().to_string());
            }
        }
    }
    out
}

/// Every counted event of the chosen metrics is in a group (the cycles leaders stand for
/// `CPU_CLK_UNHALTED.THREAD`, slots for `TOPDOWN.SLOTS`).
fn check_coverage(m: &MetricPlan, metrics_json: &Path, pmu: &str) {
    let have: BTreeSet<BTreeSet<String>> = m
        .groups
        .iter()
        .filter(|g| g.pmu == pmu)
        .flat_map(|g| g.members.iter().map(|x| norm(&x.event)))
        .collect();
    let mine = &m
        .per_pmu
        .iter()
        .find(|x| x.pmu == pmu)
        .unwrap_or_else(|| panic!("no metrics on {pmu}"))
        .metrics;
    for e in metric_events(metrics_json, mine) {
        let upper = e.to_ascii_uppercase();
        if upper.ends_with(":R") || upper == "TSC" || upper.contains(":RETIRE_LATENCY") {
            continue;
        }
        let key = match upper.as_str() {
            "CPU_CLK_UNHALTED.THREAD" => norm("cycles"),
            u if u.starts_with("TOPDOWN.SLOTS") => norm("TOPDOWN.SLOTS"),
            _ => norm(&e),
        };
        assert!(have.contains(&key), "{e} is in no group on {pmu}");
    }
}

/// An event with its modifiers as a set (Intel writes `:c1:e1`, hrec may order them
/// otherwise).
fn norm(e: &str) -> BTreeSet<String> {
    e.split(':').map(str::to_ascii_lowercase).collect()
}

/// Levels 1-3 on every fixture, the watchdog off and on.
#[test]
fn td_level_3_groups_fit_every_core() {
    let Some(dir) = perfmon_dir() else { return };
    let metrics_json = |model: &str| match model {
        "graniterapids" => Some(dir.join("GNR/metrics/graniterapids_metrics.json")),
        "sapphirerapids" => Some(dir.join("SPR/metrics/sapphirerapids_metrics.json")),
        "alderlake" => Some(dir.join("ADL/metrics/alderlake_metrics_goldencove_core.json")),
        "arrowlake-s" => Some(dir.join("ARL/metrics/arrowlake_metrics_lioncove_core.json")),
        _ => None,
    };
    for model in [
        "graniterapids",
        "sapphirerapids",
        "alderlake",
        "arrowlake-s",
        "sierraforest",
    ] {
        for watchdog in [false, true] {
            let (m, p) =
                plan_of(&dir, model, watchdog, &td(3)).unwrap_or_else(|e| panic!("{model}: {e}"));
            assert!(!m.groups.is_empty(), "{model}");
            assert!(
                m.default_groups.is_empty(),
                "{model}: {:?}",
                m.default_groups
            );
            for g in &m.groups {
                assert_eq!(g.watchdog_holds_fixed1, watchdog);
                check_group(&dir, model, g, watchdog);
            }
            check_record_plan(&m, &p);
            if let Some(j) = metrics_json(model) {
                let pcore = if model == "alderlake" || model == "arrowlake-s" {
                    "cpu_core"
                } else {
                    "cpu"
                };
                check_coverage(&m, &j, pcore);
            }
            // Every core PMU has its groups.
            let core: BTreeSet<String> = pmus(model)
                .core_pmus()
                .iter()
                .map(|p| p.name.clone())
                .collect();
            let planned: BTreeSet<String> = m.groups.iter().map(|g| g.pmu.clone()).collect();
            assert_eq!(core, planned, "{model}");
        }
    }
}

/// Granite Rapids' levels 1-3: 45 nodes, 64 events, at least 7 groups (8 with the watchdog).
#[test]
fn granite_rapids_level_3() {
    let Some(dir) = perfmon_dir() else { return };
    for (watchdog, at_least) in [(false, 7), (true, 8)] {
        let (m, _) = plan_of(&dir, "graniterapids", watchdog, &td(3)).unwrap();
        assert_eq!(m.metrics.len(), 45, "{:?}", m.metrics);
        for node in [
            "tma_frontend_bound",
            "tma_fetch_latency",
            "tma_icache_misses",
            "tma_backend_bound",
            "tma_memory_bound",
            "tma_l1_bound",
            "tma_l3_bound",
            "tma_l3_miss_bound",
            "tma_store_bound",
            "tma_divider",
            "tma_ports_utilization",
            "tma_light_operations",
            "tma_microcode_sequencer",
        ] {
            assert!(m.metrics.iter().any(|x| x == node), "{node}");
        }
        assert!(!m.metrics.iter().any(|x| x == "tma_dram_bound"));
        assert!(
            m.groups.len() >= at_least,
            "watchdog {watchdog}: {} groups",
            m.groups.len()
        );
        // Exactly one group is slots-led, and the two frontend values never meet.
        assert_eq!(m.groups.iter().filter(|g| g.perf_metrics).count(), 1);
        let events: usize = m.groups.iter().map(|g| g.members.len()).sum();
        // 64 events, the cycles leaders standing for CPU_CLK_UNHALTED.THREAD.
        assert_eq!(events, 63 + m.groups.len(), "{events}");
    }
}

/// `-M` with metric and group names as stat -M takes them.
#[test]
fn metrics_by_name_and_group() {
    let Some(dir) = perfmon_dir() else { return };
    let choice = MetricChoice {
        td_level: None,
        metrics: vec![
            "tma_l3_bound,TopdownL2".into(),
            "tma_memory_bound_group".into(),
        ],
    };
    let (m, p) = plan_of(&dir, "graniterapids", false, &choice).unwrap();
    for want in [
        "tma_l3_bound",
        "tma_core_bound",
        "tma_store_bound",
        "tma_memory_bound",
    ] {
        assert!(
            m.metrics.iter().any(|x| x == want),
            "{want}: {:?}",
            m.metrics
        );
    }
    for g in &m.groups {
        check_group(&dir, "graniterapids", g, false);
    }
    check_record_plan(&m, &p);
    let ipc = MetricChoice {
        td_level: None,
        metrics: vec!["IPC".into()],
    };
    let (m, _) = plan_of(&dir, "graniterapids", true, &ipc).unwrap();
    assert_eq!(m.metrics, ["tma_info_thread_ipc"]);
    for g in &m.groups {
        check_group(&dir, "graniterapids", g, true);
    }
}

/// Without the flags the plan is the default one, byte for byte.
#[test]
fn default_plan_unchanged() {
    let model = "graniterapids";
    let o = plan::RecordOptions::default();
    let host = host_of(model, true);
    let a = plan::plan_record(&pmus(model), &host, &o).unwrap();
    assert!(a.metrics.is_none() && a.events.iter().all(|e| e.metric.is_none()));
    let j = serde_json::to_string(&a).unwrap();
    assert!(
        !j.contains("\"metric\":") && !j.contains("\"metrics\":"),
        "{j}"
    );
}

/// `--dry-run` shows each group, its members and their counters; `--json` too.
#[test]
fn dry_run_shows_the_groups() {
    let Some(dir) = perfmon_dir() else { return };
    let d = dir.display().to_string();
    let o = hrec(
        Some("graniterapids"),
        &[
            "record",
            "--perfmon",
            &d,
            "--td-level",
            "3",
            "--dry-run",
            "--",
            "true",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("metric groups: "), "{out}");
    assert!(out.contains("slots-led with PERF_METRICS"), "{out}");
    assert!(
        out.contains("fixed counter 1 left to the NMI watchdog"),
        "{out}"
    );
    assert!(out.contains("INT_MISC.UNKNOWN_BRANCH_CYCLES"), "{out}");
    assert!(
        out.contains("frontend=0x7") && out.contains("frontend=0x8"),
        "{out}"
    );
    assert!(out.contains("general counter 0"), "{out}");
    let o = hrec(
        Some("graniterapids"),
        &[
            "record",
            "--perfmon",
            &d,
            "-M",
            "tma_l3_bound",
            "--dry-run",
            "--json",
            "--",
            "true",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    let groups = j["metrics"]["groups"].as_array().unwrap();
    assert!(!groups.is_empty());
    assert_eq!(groups[0]["members"][0]["event"], "cycles");
    assert!(groups[0]["members"][0]["counter"]["kind"].is_string());
    assert!(j["events"][0]["metric"]["group"].is_u64(), "{out}");
}

/// Bad input: one line each, through the binary.
#[test]
fn bad_input_is_one_line() {
    let Some(dir) = perfmon_dir() else { return };
    let d = dir.display().to_string();
    let cases: [(&str, &[&str], &str); 6] = [
        (
            "graniterapids",
            &["-M", "tma_l3_bond"],
            "no such metric or metric group",
        ),
        (
            "graniterapids",
            &["-M", "memory_bandwidth_read"],
            "hrec stat -M memory_bandwidth_read",
        ),
        (
            "arrowlake-s",
            &["-M", "tma_cond_tk_fwd_mispredicts"],
            "this CPU cannot count it",
        ),
        ("graniterapids", &["--td-level", "9"], "has levels 1 to"),
        ("sierraforest", &["--td-level", "0"], "levels start at 1"),
        ("vm", &["--td-level", "2"], "need a core PMU"),
    ];
    for (model, args, want) in cases {
        let mut a = vec!["record", "--perfmon", &d];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--dry-run", "--", "true"]);
        let o = hrec(Some(model), &a);
        let (_, err) = text(&o);
        assert!(!o.status.success(), "{model} {args:?}");
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("hrec: error:"))
            .collect();
        assert_eq!(lines.len(), 1, "{model} {args:?}: {err}");
        assert_eq!(
            err.lines().filter(|l| l.contains("error")).count(),
            1,
            "{err}"
        );
        assert!(lines[0].contains(want), "{model} {args:?}: {err}");
    }
    // The unknown name gets the closest ones.
    let o = hrec(
        Some("graniterapids"),
        &[
            "record",
            "--perfmon",
            &d,
            "-M",
            "tma_l3_bond",
            "--dry-run",
            "--",
            "true",
        ],
    );
    assert!(
        text(&o).1.contains("closest: tma_l3_bound"),
        "{}",
        text(&o).1
    );
    // -M without Intel's files.
    let o = hrec(
        Some("graniterapids"),
        &[
            "record",
            "--perfmon",
            "/nonexistent",
            "-M",
            "IPC",
            "--dry-run",
            "--",
            "true",
        ],
    );
    let err = text(&o).1;
    assert!(
        err.starts_with("hrec: error: -M needs Intel's metric files"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// `--td-level` without Intel's files keeps levels 1 and 2 as today, with a notice.
#[test]
fn td_level_without_files_keeps_the_default() {
    let o = hrec(
        Some("graniterapids"),
        &[
            "record",
            "--perfmon",
            "/nonexistent",
            "--td-level",
            "3",
            "--dry-run",
            "--",
            "true",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("no Intel metric file for this CPU"), "{err}");
    assert!(
        out.contains("as without --td-level: {slots,cycles:P,topdown-retiring"),
        "{out}"
    );
}

/// hrec's counter table ([`hrec::pmu::uarch::core_counters`]) against Intel's `Counter`
/// fields: the widest list is the general counters, and the `Fixed counter N` events are the
/// fixed ones.
#[test]
fn counter_table_matches_intel_files() {
    let Some(dir) = perfmon_dir() else { return };
    for (model, pmu) in [
        ("graniterapids", "cpu"),
        ("sapphirerapids", "cpu"),
        ("alderlake", "cpu_core"),
        ("alderlake", "cpu_atom"),
        ("arrowlake-s", "cpu_core"),
        ("arrowlake-s", "cpu_atom"),
    ] {
        let (file, _) = core_of(&dir, model, pmu);
        let events = intel_events(&file.unwrap());
        let mut general = 0;
        let mut fixed = BTreeSet::new();
        for (field, _, _) in events.values() {
            if let Some(n) = field.strip_prefix("Fixed counter ") {
                fixed.insert(n.trim().parse::<u32>().unwrap());
            } else {
                for n in field
                    .split(',')
                    .filter_map(|n| n.trim().parse::<u32>().ok())
                {
                    general = general.max(n + 1);
                }
            }
        }
        let cpu = CpuId::read(&procfs_of(model));
        let c = hrec::pmu::uarch::core_counters(cpu.as_ref(), pmu).unwrap();
        assert_eq!(c.general, general, "{model} {pmu}");
        let table: BTreeSet<u32> = c.fixed.iter().map(|f| f.index).collect();
        assert_eq!(table, fixed, "{model} {pmu}");
    }
    // No table entry, no guess: Ice Lake (its counters depend on SMT) and a VM.
    let icl = CpuId::read(&procfs_of("icelake"));
    assert!(hrec::pmu::uarch::core_counters(icl.as_ref(), "cpu").is_none());
}

/// E-cores: hrec's tree, level 2 where the counters hold it (Gracemont only with the watchdog
/// off), Skymont's TopDown events on its fixed counters 4-6 when the general ones run out.
#[test]
fn ecore_groups_follow_the_counters() {
    let Some(dir) = perfmon_dir() else { return };
    let atom = |model: &str, watchdog: bool| {
        let (m, _) = plan_of(&dir, model, watchdog, &td(2)).unwrap();
        m.groups
            .into_iter()
            .find(|g| g.pmu == "cpu_atom" || (model == "sierraforest" && g.pmu == "cpu"))
            .unwrap()
    };
    assert_eq!(atom("alderlake", false).members.len(), 7);
    assert_eq!(atom("alderlake", true).members.len(), 4);
    assert_eq!(atom("sierraforest", true).members.len(), 8);
    let skt = atom("arrowlake-s", true);
    assert_eq!(skt.members.len(), 10);
    assert!(
        skt.members
            .iter()
            .any(|m| matches!(m.counter, Counter::Fixed(4..=6))),
        "{:?}",
        skt.members
    );
    check_group(&dir, "arrowlake-s", &skt, true);
}

/// `record -vv` prints the metric groups as `--dry-run` does, to stderr, before recording;
/// more than 8 groups on a core PMU get one warning with each group's share of the time
/// (Granite Rapids' level 3 is 8 groups: no warning).
#[test]
fn verbose_plan_and_the_share_of_many_groups() {
    let Some(dir) = perfmon_dir() else { return };
    let d = dir.display().to_string();
    let tmp = tempfile::tempdir().unwrap();
    let out_file = tmp.path().join("td.data").display().to_string();
    // Recording itself fails here (fixture PMUs on this machine, or too many fds for 512
    // CPUs): the plan comes first either way.
    let o = hrec(
        Some("graniterapids"),
        &[
            "record",
            "-vv",
            "--perfmon",
            &d,
            "--td-level",
            "3",
            "-o",
            &out_file,
            "--",
            "true",
        ],
    );
    let (_, err) = text(&o);
    assert!(err.contains("metric groups: 8, for 45"), "{err}");
    assert!(err.contains("group 0 on cpu"), "{err}");
    assert!(!err.contains("take turns on the PMU"), "{err}");
    // -v alone does not print it.
    let o = hrec(
        Some("graniterapids"),
        &[
            "record",
            "-v",
            "--perfmon",
            &d,
            "--td-level",
            "3",
            "-o",
            &out_file,
            "--",
            "true",
        ],
    );
    let (_, err) = text(&o);
    assert!(!err.contains("group 0 on cpu"), "{err}");
    // Level 3 and three more metrics: 9 groups, each about 1/9 of the time.
    let o = hrec(
        Some("graniterapids"),
        &[
            "record",
            "--perfmon",
            &d,
            "--td-level",
            "3",
            "-M",
            "tma_info_core_coreipc,tma_info_core_flopc,tma_info_memory_tlb_page_walks_utilization",
            "--dry-run",
            "--",
            "true",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let groups = out
        .lines()
        .find_map(|l| l.strip_prefix("metric groups: "))
        .and_then(|l| l.split(',').next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(groups > 8, "{out}");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("take turns on the PMU"))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].starts_with("hrec: warning: cpu: ")
            && warnings[0].contains(&format!("about 1/{groups} of the time")),
        "{}",
        warnings[0]
    );
}

/// Every level down to the deepest of Intel's file plans, resolves (the `-e` strings of the
/// groups parse: member names keep to the event language's name characters, an offcore
/// event's `ocr_msr_val=V` included) and fits, on every fixture with Intel's files.
#[test]
fn every_level_down_to_the_deepest_plans_and_resolves() {
    let Some(dir) = perfmon_dir() else { return };
    for model in [
        "graniterapids",
        "sapphirerapids",
        "alderlake",
        "arrowlake-s",
    ] {
        let mut level = 1;
        let deepest = loop {
            match plan_of(&dir, model, true, &td(level)) {
                Ok((m, _)) => {
                    for g in &m.groups {
                        check_group(&dir, model, g, true);
                    }
                    level += 1;
                }
                Err(e) if e.contains("has levels 1 to") => break level - 1,
                Err(e) => panic!("{model} --td-level {level}: {e}"),
            }
        };
        assert!(deepest >= 4, "{model}: deepest level {deepest}");
    }
}

/// Intel's E-core TMA 3.6 tree (`E-core_TMA_Metrics.csv`), as this test reads it: node,
/// level, and the event of its formula in the GRT (Gracemont) and CMT columns (`-` where the
/// formula is not one event over the slots).
const ECORE_TREE: &[(&str, u32, &str, &str)] = &[
    (
        "Frontend_Bound",
        1,
        "TOPDOWN_FE_BOUND.ALL",
        "TOPDOWN_FE_BOUND.ALL_P",
    ),
    (
        "IFetch_Latency",
        2,
        "TOPDOWN_FE_BOUND.FRONTEND_LATENCY",
        "TOPDOWN_FE_BOUND.FRONTEND_LATENCY",
    ),
    (
        "ICache_Misses",
        3,
        "TOPDOWN_FE_BOUND.ICACHE",
        "TOPDOWN_FE_BOUND.ICACHE",
    ),
    (
        "ITLB_Misses",
        3,
        "TOPDOWN_FE_BOUND.ITLB",
        "TOPDOWN_FE_BOUND.ITLB_MISS",
    ),
    (
        "Branch_Detect",
        3,
        "TOPDOWN_FE_BOUND.BRANCH_DETECT",
        "TOPDOWN_FE_BOUND.BRANCH_DETECT",
    ),
    (
        "Branch_Resteer",
        3,
        "TOPDOWN_FE_BOUND.BRANCH_RESTEER",
        "TOPDOWN_FE_BOUND.BRANCH_RESTEER",
    ),
    (
        "IFetch_Bandwidth",
        2,
        "TOPDOWN_FE_BOUND.FRONTEND_BANDWIDTH",
        "TOPDOWN_FE_BOUND.FRONTEND_BANDWIDTH",
    ),
    ("Cisc", 3, "TOPDOWN_FE_BOUND.CISC", "TOPDOWN_FE_BOUND.CISC"),
    (
        "Decode",
        3,
        "TOPDOWN_FE_BOUND.DECODE",
        "TOPDOWN_FE_BOUND.DECODE",
    ),
    (
        "Predecode",
        3,
        "TOPDOWN_FE_BOUND.PREDECODE",
        "TOPDOWN_FE_BOUND.PREDECODE",
    ),
    (
        "Other_FB",
        3,
        "TOPDOWN_FE_BOUND.OTHER",
        "TOPDOWN_FE_BOUND.OTHER",
    ),
    ("Bad_Speculation", 1, "-", "TOPDOWN_BAD_SPECULATION.ALL_P"),
    (
        "Branch_Mispredicts",
        2,
        "TOPDOWN_BAD_SPECULATION.MISPREDICT",
        "TOPDOWN_BAD_SPECULATION.MISPREDICT",
    ),
    (
        "Machine_Clears",
        2,
        "TOPDOWN_BAD_SPECULATION.MACHINE_CLEARS",
        "TOPDOWN_BAD_SPECULATION.MACHINE_CLEARS",
    ),
    (
        "Nuke",
        3,
        "TOPDOWN_BAD_SPECULATION.NUKE",
        "TOPDOWN_BAD_SPECULATION.NUKE",
    ),
    (
        "Fast_Nuke",
        3,
        "TOPDOWN_BAD_SPECULATION.FASTNUKE",
        "TOPDOWN_BAD_SPECULATION.FASTNUKE",
    ),
    (
        "Backend_Bound",
        1,
        "TOPDOWN_BE_BOUND.ALL",
        "TOPDOWN_BE_BOUND.ALL_P",
    ),
    (
        "Core_Bound",
        2,
        "TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS",
        "TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS",
    ),
    (
        "Allocation_Restriction",
        3,
        "TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS",
        "TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS",
    ),
    ("Resource_Bound", 2, "-", "-"),
    (
        "Mem_Scheduler",
        3,
        "TOPDOWN_BE_BOUND.MEM_SCHEDULER",
        "TOPDOWN_BE_BOUND.MEM_SCHEDULER",
    ),
    (
        "Non_Mem_Scheduler",
        3,
        "TOPDOWN_BE_BOUND.NON_MEM_SCHEDULER",
        "TOPDOWN_BE_BOUND.NON_MEM_SCHEDULER",
    ),
    (
        "Register",
        3,
        "TOPDOWN_BE_BOUND.REGISTER",
        "TOPDOWN_BE_BOUND.REGISTER",
    ),
    (
        "Reorder_Buffer",
        3,
        "TOPDOWN_BE_BOUND.REORDER_BUFFER",
        "TOPDOWN_BE_BOUND.REORDER_BUFFER",
    ),
    (
        "Serialization",
        3,
        "TOPDOWN_BE_BOUND.SERIALIZATION",
        "TOPDOWN_BE_BOUND.SERIALIZATION",
    ),
    (
        "Retiring",
        1,
        "TOPDOWN_RETIRING.ALL",
        "TOPDOWN_RETIRING.ALL_P",
    ),
];

/// `--td-level 3` on E-cores: every node of Intel's E-core tree down to level 3 is planned,
/// each node's event is in a group (the counter rules checked against Intel's Gracemont and
/// Skymont event files), Gracemont with the watchdog on and off; `--td-level 4` on a hybrid
/// part takes the E-cores' three levels with a notice; `-M` of an E-core-only node counts it
/// on the E-cores alone.
#[test]
fn ecore_level_3_is_intels_tree() {
    let Some(dir) = perfmon_dir() else { return };
    for (model, pmu) in [
        ("alderlake", "cpu_atom"),
        ("arrowlake-s", "cpu_atom"),
        ("sierraforest", "cpu"),
    ] {
        for watchdog in [false, true] {
            let (m, p) = plan_of(&dir, model, watchdog, &td(3)).unwrap();
            let mine = m.per_pmu.iter().find(|x| x.pmu == pmu).unwrap();
            assert_eq!(mine.source, "ecore-tree", "{model}");
            let want: Vec<String> = ECORE_TREE
                .iter()
                .map(|(n, _, _, _)| format!("tma_{}", n.to_ascii_lowercase()))
                .collect();
            assert_eq!(mine.metrics, want, "{model}");
            let members: BTreeSet<&str> = m
                .groups
                .iter()
                .filter(|g| g.pmu == pmu)
                .flat_map(|g| g.members.iter().map(|x| x.event.as_str()))
                .collect();
            for (node, _, grt, cmt) in ECORE_TREE {
                // Skymont names its level-1 events as Crestmont does (`_P`); on Crestmont
                // `X.ALL_P` is `X.ALL` by another name (the same encoding), which hrec uses.
                let ev = if model == "alderlake" { grt } else { cmt };
                let alias = ev.strip_suffix("_P").unwrap_or(ev);
                if *ev != "-" {
                    assert!(
                        members.contains(ev)
                            || (model == "sierraforest" && members.contains(alias)),
                        "{model} {node}: {ev} in {members:?}"
                    );
                }
            }
            for g in m.groups.iter().filter(|g| g.pmu == pmu) {
                assert_eq!(g.source, "ecore-tree");
                check_group(&dir, model, g, watchdog);
            }
            check_record_plan(&m, &p);
        }
    }
    // Level 4: the P-cores' file goes deeper, the E-cores stop at 3.
    let (m, _) = plan_of(&dir, "alderlake", true, &td(4)).unwrap();
    assert!(
        m.notices
            .iter()
            .any(|n| n.starts_with("cpu_atom: hrec's E-core TopDown tree has levels 1 to 3")),
        "{:?}",
        m.notices
    );
    let atom = m.per_pmu.iter().find(|x| x.pmu == "cpu_atom").unwrap();
    assert_eq!(atom.metrics.len(), ECORE_TREE.len());
    // A node only the E-core tree has: counted there, said for the P-cores, which keep the
    // default plan.
    let nuke = MetricChoice {
        td_level: None,
        metrics: vec!["tma_fast_nuke".into()],
    };
    let (m, _) = plan_of(&dir, "alderlake", true, &nuke).unwrap();
    assert_eq!(m.per_pmu.len(), 1, "{:?}", m.per_pmu);
    assert_eq!(m.per_pmu[0].pmu, "cpu_atom");
    assert_eq!(m.per_pmu[0].metrics, ["tma_fast_nuke"]);
    assert!(
        m.notices
            .iter()
            .any(|n| n == "-M tma_fast_nuke: not a metric of cpu_core (not counted there)"),
        "{:?}",
        m.notices
    );
    assert_eq!(m.default_groups.len(), 1, "{:?}", m.default_groups);
    // A name neither knows: one error with the closest names.
    let e = plan_of(
        &dir,
        "alderlake",
        true,
        &MetricChoice {
            td_level: None,
            metrics: vec!["tma_fast_nuk".into()],
        },
    )
    .unwrap_err();
    assert!(e.contains("no such metric"), "{e}");
    // `-M` on a part made only of E-cores without Intel's files (Sierra Forest's are not in
    // shared/): hrec's tree takes the names.
    let mem = MetricChoice {
        td_level: None,
        metrics: vec!["tma_mem_scheduler".into()],
    };
    let (m, p) = plan_of(&dir, "sierraforest", true, &mem).unwrap();
    assert_eq!(m.per_pmu.len(), 1, "{:?}", m.per_pmu);
    assert_eq!(m.per_pmu[0].source, "ecore-tree");
    assert_eq!(m.per_pmu[0].metrics, ["tma_mem_scheduler"]);
    for g in &m.groups {
        check_group(&dir, "sierraforest", g, true);
    }
    check_record_plan(&m, &p);
}
