//! Intel's metrics per function from recordings hrec did not plan the hrec way: a perf.data
//! laid out as `perf record` (6.1) writes it for the Granite Rapids `--td-level 3` groups,
//! and an Alder Lake `--td-level 3` recording whose E-core group sits beside the P-core
//! groups.
//!
//! **perf.data.** perf records the plan's groups as `perf record -e
//! '{slots,cycles,topdown-*,...}:S,{cycles,EV1,EV2,...}:S,...' -c 1000000`: every leader is
//! named `cycles` (EVENT_DESC), half the groups' members by Intel's names (perf resolves them
//! from its JSON with Intel's sample-after value as a `period=` term, so those members
//! sample too, their samples carrying the same group read) and the other half by raw
//! `cpu/event=..,umask=../` encodings (no period: `:S` makes them count only); the slots
//! group is raw-encoded (`cpu/event=0x00,umask=0x04/`, `cpu/event=0x00,umask=0x80/`...). A
//! member's role comes from its PMU (the file's PMU_MAPPINGS) and encoding, never from its
//! name: the report must give every function Intel's formulas on the truth, toplev's
//! bottleneck path, each group's reads counted once (not again for the members' own
//! samples), and the raw slots group its `topdown` columns. The installed perf must read the
//! file too.
//!
//! **Alder Lake.** `record --td-level 3` (watchdog off) plans seven P-core (`cpu_core`)
//! groups from Intel's metric file and one E-core (`cpu_atom`) group from hrec's E-core tree
//! (levels 1 and 2). P-core samples fall in `chase` and `divide`, E-core samples in
//! `ecore_work`: the P-core functions get Intel's formulas on their truth, the E-core
//! function its `topdown` columns from the Gracemont tree (slots = 5 × cycles, Bad
//! Speculation the remainder) and no P-core metric at all; every E-core group read there
//! gives it Intel's E-core tree to level 3, in the text, the JSON, the TUI's pane (through
//! tmux), `flamegraph --color metric:` and `diff` of two such recordings.

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use hrec::event::Attr;
use hrec::event::attr::{flag, read, sample, types};
use hrec::event::plan::{Plan, RecordOptions};
use hrec::metrics::perfmon::{Encoding, EventRef, Metric, Perfmon};
use hrec::pmu::uarch::CpuId;
use serde_json::Value;
use support::adl::{
    ADL, ADL_PCORE_FUNCS, E_BE, E_BE_CORE, E_FE, E_FE_LAT, E_MISP, E_RET, ECORE_FUNC, PERIOD,
    adl_plan, ecore_truth, pcore_reads as reads, write_adl,
};
use support::encode::{
    Encoder, Mmap2Fields, Mmap2File, ReadFields, ReadValue, SampleFields, SampleId,
};
use support::metricgroups::{self as mg, rate};
use support::metricrec as mr;
use support::perfdata::{ATTR_SIZE, FINISHED_ROUND, PerfData, feature, tiny_elf};
use support::{hrec_in, procfs_of, text};

const PID: u32 = 4242;

/// The chosen metrics' checks on one function's row: every metric Intel's formula on the
/// truth within 0.1 point, toplev's path, and each group's reads.
fn check_row(
    pm: &Perfmon,
    chosen: &[&Metric],
    row: &Value,
    func: &str,
    want_reads: &[u64],
) -> Vec<String> {
    let truth = |k: &str| rate(func, k);
    let rl = |n: &str| pm.default_retire_latency(n);
    mg::assert_metrics(row, chosen, func, &|m| mr::truth(m, &truth, &rl));
    let no_rl = |_: &str| None;
    let path = mr::truth_path(pm, chosen, &|m| mr::truth(m, &truth, &no_rl));
    assert!(path.len() >= 2, "{func}: {path:?}");
    assert_eq!(mg::bottleneck(row), path, "{func}");
    let groups = row["metric_groups"].as_array().unwrap();
    let got: Vec<u64> = groups
        .iter()
        .map(|g| g["reads"].as_u64().unwrap())
        .collect();
    assert_eq!(
        got, want_reads,
        "{func}: reads per group, each counted once"
    );
    path
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let o = hrec_in(dir, args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

// ---------------------------------------------------------------------------------------
// perf.data with perf's names.

/// How perf names a member of a raw encoding: `cpu/event=0x47,umask=0x3,cmask=0x3/`.
fn raw_name(a: &Attr) -> String {
    let c = a.config;
    let mut s = format!("event={:#04x},umask={:#04x}", c & 0xff, (c >> 8) & 0xff);
    if c >> 18 & 1 == 1 {
        s += ",edge";
    }
    if c >> 23 & 1 == 1 {
        s += ",inv";
    }
    if c >> 24 & 0xff != 0 {
        s += &format!(",cmask={:#x}", c >> 24 & 0xff);
    }
    if a.config1 != 0 {
        s += &format!(",config1={:#x}", a.config1);
    }
    format!("cpu/{s}/")
}

/// How perf names a member given by Intel's name: the name, with the modifiers as terms.
fn intel_name(e: &EventRef) -> String {
    let mut terms = String::new();
    if let Some(c) = e.cmask {
        terms += &format!(",cmask={c}");
    }
    if e.edge {
        terms += ",edge=1";
    }
    if e.inv {
        terms += ",inv=1";
    }
    if terms.is_empty() {
        e.name.clone()
    } else {
        format!("cpu/{}{terms}/", e.name)
    }
}

/// The attr perf 6.1 opens for an event of a `:S` group in a workload recording beside a
/// tracking dummy (every group event's sample_type alike, hence IDENTIFIER).
fn perf_attr(type_: u32, config: u64, config1: u64) -> Attr {
    let mut a = Attr::new(type_, config);
    a.config1 = config1;
    a.size = ATTR_SIZE;
    a.sample_type = sample::IDENTIFIER
        | sample::IP
        | sample::TID
        | sample::TIME
        | sample::PERIOD
        | sample::READ;
    a.read_format = read::ID | read::GROUP | read::LOST;
    a.flags = flag::SAMPLE_ID_ALL | flag::EXCLUDE_GUEST;
    a
}

/// One group of the perf.data: its sampler (event index), members (event index, truth key)
/// and, when its members are named by Intel's names, the first member's sample-after value.
struct PerfGroup {
    sampler: usize,
    members: Vec<(usize, String)>,
    member_sampler: Option<(usize, u64, String)>,
}

/// Writes `perf.data` (and the workload's ELF) into `dir`; returns the groups and the number
/// of member samples written per member sampler.
fn write_perf_data(
    dir: &Path,
    plan: &Plan,
    pm: &Perfmon,
    cpuid: &CpuId,
) -> (Vec<PerfGroup>, HashMap<usize, u64>) {
    let body: &[u8] = &[
        0x55, 0x48, 0x89, 0xe5, 0x31, 0xc0, 0x83, 0xc0, 0x01, 0x83, 0xf8, 0x64, 0x75, 0xf8, 0x5d,
        0xc3,
    ];
    let funcs: Vec<(&str, &[u8])> = FUNCS.iter().map(|f| (*f, body)).collect();
    let (elf, addrs) = tiny_elf(&funcs);
    let prog = dir.join("mg-work");
    std::fs::write(&prog, &elf).unwrap();

    let plan_groups = mr::groups(plan);
    let mut pd = PerfData::new();
    let id = |event: usize| 100 + event as u64;
    let mut groups = Vec::new();
    for (g, (sampler, members)) in plan_groups.iter().enumerate() {
        // The slots group and every even group raw-encoded, the odd ones by Intel's names.
        let by_intel = g % 2 == 1;
        let first = pd.events.len();
        let mut out = Vec::new();
        let mut member_sampler = None;
        for (k, (pi, key)) in members.iter().enumerate() {
            let pe = &plan.events[*pi];
            let ev = EventRef::parse(&pe.metric.as_ref().unwrap().event);
            let (name, mut attr) = if pi == sampler {
                // perf's `cycles` (legacy hardware cycles), the read sampler.
                let mut a = perf_attr(types::HARDWARE, 0, 0);
                a.sample_period_or_freq = PERIOD;
                ("cycles".to_string(), a)
            } else {
                let a = perf_attr(types::RAW, pe.attr.config, pe.attr.config1);
                (
                    if by_intel {
                        intel_name(&ev)
                    } else {
                        raw_name(&a)
                    },
                    a,
                )
            };
            if by_intel && pi != sampler {
                // A `period=` term from perf's JSON: Intel's sample-after value.
                let sav = match pm.resolve(&ev).unwrap() {
                    Encoding::Counter(r) => r.sample_after_value.unwrap_or(2_000_003),
                    other => panic!("{other:?}"),
                };
                attr.sample_period_or_freq = sav;
                if member_sampler.is_none() {
                    member_sampler = Some((first + k, sav, name.clone()));
                }
            }
            if k == 0 {
                attr.flags |= flag::DISABLED | flag::ENABLE_ON_EXEC;
            }
            let i = pd.event(attr, &name, vec![id(first + k)]);
            out.push((i, key.clone()));
        }
        pd.group(first, out.len() as u32);
        groups.push(PerfGroup {
            sampler: first + members.iter().position(|(pi, _)| pi == sampler).unwrap(),
            members: out,
            member_sampler,
        });
    }
    // The tracking dummy: COMM, MMAP2 and EXIT.
    let mut d = Attr::new(types::SOFTWARE, 9);
    d.size = ATTR_SIZE;
    d.sample_type = sample::IDENTIFIER | sample::IP | sample::TID | sample::TIME | sample::PERIOD;
    d.read_format = read::ID | read::LOST;
    d.sample_period_or_freq = 1;
    d.flags = flag::DISABLED
        | flag::ENABLE_ON_EXEC
        | flag::MMAP
        | flag::COMM
        | flag::TASK
        | flag::MMAP2
        | flag::COMM_EXEC
        | flag::SAMPLE_ID_ALL
        | flag::EXCLUDE_KERNEL
        | flag::EXCLUDE_HV;
    let n = pd.events.len();
    let dummy = pd.event(d, "dummy:u", vec![id(n)]);
    pd.string_feature(feature::HOSTNAME, "gnr");
    pd.string_feature(feature::OSRELEASE, "6.1.0-13-amd64");
    pd.string_feature(feature::VERSION, "6.1.55");
    pd.string_feature(feature::ARCH, "x86_64");
    pd.nrcpus(1, 1);
    pd.string_feature(feature::CPUDESC, "Intel(R) Xeon(R) 6");
    pd.string_feature(
        feature::CPUID,
        &format!(
            "GenuineIntel,{},{},{}",
            cpuid.family, cpuid.model, cpuid.stepping
        ),
    );
    pd.total_mem(65_536_000);
    pd.cmdline(&[
        "/usr/bin/perf",
        "record",
        "-e",
        "...",
        "-c",
        "1000000",
        "./mg-work",
    ]);
    pd.pmu_mappings(&[
        (1, "software"),
        (2, "tracepoint"),
        (4, "cpu"),
        (5, "breakpoint"),
        (8, "kprobe"),
        (9, "uprobe"),
        (10, "msr"),
    ]);

    let denc = Encoder::new(pd.events[dummy].attr);
    let sid = SampleId {
        pid: PID,
        tid: PID,
        time: 1000,
        id: id(dummy),
        ..SampleId::default()
    };
    pd.records
        .extend(denc.comm(&sid, PID, PID, b"mg-work", true));
    pd.records.extend(denc.mmap2(
        &sid,
        &Mmap2Fields {
            misc: 2,
            pid: PID,
            tid: PID,
            addr: 0x40_0000,
            len: (elf.len() as u64).next_multiple_of(0x1000),
            pgoff: 0,
            file: Mmap2File::Inode {
                maj: 259,
                min: 2,
                ino: 1234,
                ino_generation: 0,
            },
            prot: 5,
            flags: 2,
            filename: prog.to_str().unwrap().as_bytes().to_vec(),
        },
    ));
    pd.records
        .extend(support::encode::record(FINISHED_ROUND, 0, &[]));

    let mut totals: HashMap<usize, Vec<u64>> = HashMap::new();
    let mut member_samples: HashMap<usize, u64> = HashMap::new();
    let mut time = 10_000u64;
    let first_time = time + 1000;
    let most = (0..FUNCS.len())
        .flat_map(|f| (0..groups.len()).map(move |g| reads(f, g)))
        .max()
        .unwrap();
    let read_of = |g: &PerfGroup, tot: &[u64]| ReadFields {
        values: g
            .members
            .iter()
            .zip(tot)
            .map(|(&(i, _), &value)| ReadValue {
                value,
                id: id(i),
                lost: 0,
            })
            .collect(),
        ..ReadFields::default()
    };
    // Round-robin over groups and functions, as multiplexing interleaves them.
    for round in 0..most {
        for (gi, g) in groups.iter().enumerate() {
            for (fi, func) in FUNCS.iter().enumerate() {
                if round >= reads(fi, gi) {
                    continue;
                }
                // At the function's loop.
                let ip = addrs[fi] + 6;
                let tot = totals
                    .entry(g.sampler)
                    .or_insert_with(|| vec![0; g.members.len()]);
                let adds: Vec<u64> = g
                    .members
                    .iter()
                    .map(|(_, key)| (rate(func, key) * PERIOD as f64).round() as u64)
                    .collect();
                // Every third interval the member with Intel's period overflows halfway: a
                // sample of that member carrying the group's read at that moment.
                if let Some((ms, sav, _)) = g.member_sampler
                    && round % 3 == 0
                {
                    for (t, a) in tot.iter_mut().zip(&adds) {
                        *t += a / 2;
                    }
                    time += 500;
                    let s = SampleFields {
                        misc: 2,
                        id: id(ms),
                        ip,
                        pid: PID,
                        tid: PID,
                        time,
                        period: sav,
                        read: read_of(g, tot),
                        ..SampleFields::default()
                    };
                    pd.records
                        .extend(Encoder::new(pd.events[ms].attr).sample(&s));
                    *member_samples.entry(ms).or_default() += 1;
                    for (t, a) in tot.iter_mut().zip(&adds) {
                        *t += a - a / 2;
                    }
                } else {
                    for (t, a) in tot.iter_mut().zip(&adds) {
                        *t += a;
                    }
                }
                time += 500;
                let s = SampleFields {
                    misc: 2,
                    id: id(g.sampler),
                    ip,
                    pid: PID,
                    tid: PID,
                    time,
                    period: PERIOD,
                    read: read_of(g, tot),
                    ..SampleFields::default()
                };
                pd.records
                    .extend(Encoder::new(pd.events[g.sampler].attr).sample(&s));
            }
        }
        pd.records
            .extend(support::encode::record(FINISHED_ROUND, 0, &[]));
    }
    time += 1000;
    let sid = SampleId { time, ..sid };
    pd.records.extend(denc.exit(&sid, [PID, 1, PID, 1], time));
    pd.records
        .extend(support::encode::record(FINISHED_ROUND, 0, &[]));
    pd.sample_time(first_time, time - 1000);
    pd.write(&dir.join("perf.data"));
    (groups, member_samples)
}

const FUNCS: [&str; 3] = ["chase", "divide", "mixed"];

#[test]
fn perf_data_with_perfs_names_gives_intels_formulas_per_function() {
    let Some(pdir) = mr::perfmon_dir() else {
        return;
    };
    let model = "graniterapids";
    let pm = mr::perfmon(&pdir, model);
    let plan = mr::plan_of(&pdir, model, &mr::td_level(3), &RecordOptions::default());
    let cpuid = CpuId::read(&procfs_of(model)).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (groups, member_samples) = write_perf_data(tmp.path(), &plan, &pm, &cpuid);
    assert!(groups.len() >= 7, "{} groups", groups.len());
    assert!(!member_samples.is_empty());
    let pdir_s = pdir.display().to_string();
    let v = json(
        tmp.path(),
        &[
            "report",
            "-i",
            "perf.data",
            "--json",
            "--sort",
            "sym",
            "--td-level",
            "3",
            "--perfmon",
            &pdir_s,
            "--metric-min-reads",
            "20",
        ],
    );
    let chosen = pm.tma_metrics(3);
    assert_eq!(chosen.len(), 45);
    let mut paths = HashMap::new();
    for (fi, func) in FUNCS.iter().enumerate() {
        let row = mg::metric_row(&v, &format!("[.] {func}"));
        let want: Vec<u64> = (0..groups.len()).map(|g| reads(fi, g)).collect();
        paths.insert(*func, check_row(&pm, &chosen, row, func, &want));
    }
    assert_eq!(
        paths["chase"],
        ["tma_backend_bound", "tma_memory_bound", "tma_l3_bound"]
    );
    assert_eq!(
        paths["divide"],
        ["tma_backend_bound", "tma_core_bound", "tma_divider"]
    );
    // Every leader is named `cycles`; the members with Intel's period are samplers of their
    // own: tables of their own samples, without metrics.
    let tables = v["events"].as_array().unwrap();
    let cycles: Vec<&Value> = tables.iter().filter(|t| t["event"] == "cycles").collect();
    assert_eq!(cycles.len(), groups.len());
    for (&ms, &n) in &member_samples {
        let (_, _, name) = groups
            .iter()
            .find_map(|g| g.member_sampler.as_ref().filter(|(m, _, _)| *m == ms))
            .unwrap();
        let t = tables
            .iter()
            .find(|t| t["event"] == name.as_str())
            .unwrap_or_else(|| panic!("no table of the member sampler {name}"));
        assert_eq!(t["samples"], n, "{name}");
        assert!(
            t["rows"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r.get("metrics").is_none()),
            "{name}: a member's samples are no group reads"
        );
    }
    // The raw-encoded slots group: today's `topdown` columns, in a plain report too.
    let plain = json(
        tmp.path(),
        &["report", "-i", "perf.data", "--json", "--sort", "sym"],
    );
    let with_td: Vec<&Value> = plain["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| !t["topdown"].is_null())
        .collect();
    assert_eq!(with_td.len(), 1, "one slots group");
    let chase = with_td[0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"]["sym"] == "[.] chase")
        .unwrap();
    assert_eq!(chase["topdown"]["level1"]["Backend Bound"], 80.0);
    assert_eq!(chase["topdown"]["level2"]["Memory Bound"], 70.0);
    assert!(with_td[0].get("no_topdown").is_none());
    perf_reads(tmp.path());
}

/// The installed perf reads the file: `perf report --stdio` accepts it and finds the
/// functions.
fn perf_reads(dir: &Path) {
    let Some(perf) = support::perf() else { return };
    let o = Command::new(perf)
        .args(["report", "--stdio", "-i", "perf.data", "--sort", "sym"])
        .current_dir(dir)
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "perf report: {err}");
    for f in FUNCS {
        assert!(out.contains(f), "perf report lacks {f}:\n{out}\n{err}");
    }
}

// ---------------------------------------------------------------------------------------
// Alder Lake: P-core groups and the E-core groups ([`support::adl`]).

#[test]
fn alder_lake_pcore_metrics_and_ecore_topdown_per_function() {
    let Some(pdir) = mr::perfmon_dir() else {
        return;
    };
    let pm = mr::perfmon(&pdir, ADL);
    let plan = adl_plan(&pdir);
    let ecore = mg::groups_on(&plan, "cpu_atom");
    assert_eq!(
        ecore[0].1.len(),
        7,
        "the E-cores' TopDown group first: levels 1 and 2"
    );
    let tmp = tempfile::tempdir().unwrap();
    let (n_pcore, ecore_reads) = write_adl(tmp.path(), &plan);
    assert!(n_pcore >= 5, "{n_pcore} P-core groups");
    let pdir_s = pdir.display().to_string();
    let v = json(
        tmp.path(),
        &[
            "report",
            "--json",
            "--sort",
            "sym",
            "--td-level",
            "3",
            "--perfmon",
            &pdir_s,
            "--metric-min-reads",
            "20",
        ],
    );
    let chosen = pm.tma_metrics(3);
    assert!(chosen.len() >= 30, "{} metrics", chosen.len());
    // P-core functions: Intel's formulas on their truth, toplev's path.
    for (fi, (func, _)) in ADL_PCORE_FUNCS.iter().enumerate() {
        let row = mg::metric_row(&v, &format!("[k] {func}"));
        let want: Vec<u64> = (0..n_pcore).map(|g| reads(fi, g).min(30)).collect();
        let path = check_row(&pm, &chosen, row, func, &want);
        assert_eq!(path[0], "tma_backend_bound", "{func}");
    }
    // The E-core function: no P-core metric anywhere, its TopDown from the E-core tree.
    let tables = v["events"].as_array().unwrap();
    let sym = format!("[k] {}", ECORE_FUNC.0);
    for t in tables.iter().filter(|t| t["pmu"] != "cpu_atom") {
        for r in t["rows"].as_array().unwrap() {
            if r["key"]["sym"] == sym.as_str() {
                assert!(
                    r.get("metrics").is_none()
                        || r["metrics"]
                            .as_object()
                            .unwrap()
                            .values()
                            .all(Value::is_null),
                    "{}: P-core metrics for the E-core function: {r:#}",
                    t["event"]
                );
            }
        }
    }
    // Its E-core tree, levels 1 to 3, from every E-core group: Intel's formulas on the
    // truth, and toplev's path by Intel's thresholds (Backend Bound 45% > 10%, Resource
    // Bound 35% > 20%, Mem Scheduler 20% > 10%; Core Bound's 10% is not past its 10%).
    let want = ecore_truth();
    for t in tables.iter().filter(|t| t["pmu"] == "cpu_atom") {
        let row = t["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"]["sym"] == sym.as_str())
            .unwrap();
        let m = row["metrics"].as_object().expect("E-core metrics");
        assert_eq!(m.len(), want.len(), "{m:?}");
        for (name, w) in &want {
            let got = m[name].as_f64().unwrap_or_else(|| panic!("{name}: {m:?}"));
            assert!((got - w).abs() < 0.1, "E-core {name}: {got}, want {w}");
        }
        assert_eq!(
            mg::bottleneck(row),
            [
                "tma_backend_bound",
                "tma_resource_bound",
                "tma_mem_scheduler"
            ]
        );
        let reads: Vec<u64> = row["metric_groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["reads"].as_u64().unwrap())
            .collect();
        assert_eq!(reads, vec![ecore_reads as u64; ecore.len()]);
    }
    // The text report: the E-core tree under the E-core function's row of the first E-core
    // table, the path marked.
    let o = hrec_in(
        tmp.path(),
        &[
            "report",
            "--stdio",
            "--sort",
            "sym",
            "--td-level",
            "3",
            "--perfmon",
            &pdir_s,
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let at = out
        .find("Intel's E-core metrics on cpu_atom (group reads:")
        .unwrap_or_else(|| panic!("no E-core tree:\n{out}"));
    let tree = &out[at..];
    for line in [
        "tma_backend_bound",
        "tma_resource_bound",
        "tma_mem_scheduler",
    ] {
        assert!(
            tree.lines()
                .any(|l| l.contains(line) && l.trim_end().ends_with("<==")),
            "{line} not marked:\n{tree}"
        );
    }
    // `flamegraph --color metric:` of a node only the E-core tree has, drawing the E-core
    // samplers: the E-core function's frame carries Intel's value on its truth (Mem
    // Scheduler, 20%).
    let o = hrec_in(
        tmp.path(),
        &[
            "flamegraph",
            "--color",
            "metric:tma_mem_scheduler",
            "--event",
            "cpu_atom/cycles/P",
            "--perfmon",
            &pdir_s,
            "-o",
            "e.svg",
        ],
    );
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let svg = std::fs::read_to_string(tmp.path().join("e.svg")).unwrap();
    let start = format!("<title>{}: ", ECORE_FUNC.0);
    let at = svg
        .find(&start)
        .unwrap_or_else(|| panic!("no frame {start}"));
    let title = &svg[at..at + svg[at..].find("</title>").unwrap()];
    let got: f64 = title
        .split("tma_mem_scheduler ")
        .nth(1)
        .and_then(|v| v.split('%').next())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no value in {title:?}"));
    assert!((got - 20.0).abs() < 0.1, "{title}");
    let atom = tables
        .iter()
        .find(|t| t["pmu"] == "cpu_atom")
        .expect("the E-core table");
    assert_eq!(atom["samples"], ecore_reads);
    let row = atom["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"]["sym"] == sym.as_str())
        .unwrap();
    let td = &row["topdown"];
    let pct = |x: f64| 100.0 * x;
    let bad = 1.0 - E_FE - E_BE - E_RET;
    let want_l1 = [
        ("Retiring", pct(E_RET)),
        ("Bad Speculation", pct(bad)),
        ("Frontend Bound", pct(E_FE)),
        ("Backend Bound", pct(E_BE)),
    ];
    let want_l2 = [
        ("Branch Mispredicts", pct(E_MISP)),
        ("Machine Clears", pct(bad - E_MISP)),
        ("IFetch Latency", pct(E_FE_LAT)),
        ("IFetch Bandwidth", pct(E_FE - E_FE_LAT)),
        ("Core Bound", pct(E_BE_CORE)),
        ("Resource Bound", pct(E_BE - E_BE_CORE)),
    ];
    for (level, want) in [("level1", &want_l1[..]), ("level2", &want_l2[..])] {
        for (label, w) in want {
            let got = td[level][label]
                .as_f64()
                .unwrap_or_else(|| panic!("no {level} {label}: {td:#}"));
            assert!(
                (got - w).abs() < 0.1,
                "E-core {level} {label}: {got}, want {w}"
            );
        }
    }
}

/// The E-core tree where `report` is not the view: `diff --td-level 3` of two Alder Lake
/// recordings whose E-core function changed (Mem Scheduler from 20% to 5% of the slots,
/// Backend Bound from 45% to 35%) gives the E-core tables' row the change of every E-core
/// node, the truths' difference within 0.1 point, and the paths `report` gives each file,
/// while the P-core functions, unchanged, keep Intel's P-core nodes at zero change; the TUI
/// (through tmux) shows the E-core function's tree, the text report's lines, in the pane
/// under an E-core table.
#[test]
fn alder_lake_ecore_tree_in_diff_and_the_tui() {
    let Some(pdir) = mr::perfmon_dir() else {
        return;
    };
    let plan = adl_plan(&pdir);
    let tmp = tempfile::tempdir().unwrap();
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    std::fs::create_dir_all(&old).unwrap();
    std::fs::create_dir_all(&new).unwrap();
    write_adl(&old, &plan);
    const MEM_AFTER: f64 = 0.05;
    const BE_AFTER: f64 = 0.35;
    let after = |k: &str| match k.split(':').next().unwrap_or(k) {
        "TOPDOWN_BE_BOUND.MEM_SCHEDULER" => support::adl::GRACEMONT_WIDTH * MEM_AFTER,
        "TOPDOWN_BE_BOUND.ALL" => support::adl::GRACEMONT_WIDTH * BE_AFTER,
        _ => support::adl::ecore_rate(k),
    };
    support::adl::write_adl_with(&new, &plan, &after);
    let pdir_s = pdir.display().to_string();
    let metric_flags = ["--td-level", "3", "--perfmon", &pdir_s];
    let o = hrec_in(
        tmp.path(),
        &[
            &["diff", "--json", "--sort", "sym"][..],
            &metric_flags,
            &["old/hrec.data", "new/hrec.data"],
        ]
        .concat(),
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("no metrics per row"), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    // The truth's change, in points: Mem Scheduler and Backend Bound (and so Resource Bound)
    // down, Bad Speculation (the remainder) up by as much as Backend Bound fell.
    let mem = support::adl::E_MORE
        .iter()
        .find(|(n, _, _)| *n == "Mem_Scheduler")
        .unwrap()
        .2;
    let moved = [
        ("tma_mem_scheduler", -100.0 * (mem - MEM_AFTER)),
        ("tma_backend_bound", -100.0 * (E_BE - BE_AFTER)),
        ("tma_resource_bound", -100.0 * (E_BE - BE_AFTER)),
        ("tma_bad_speculation", 100.0 * (E_BE - BE_AFTER)),
    ];
    let sym = format!("[k] {}", ECORE_FUNC.0);
    let row_of = |t: &Value, sym: &str| -> Option<Value> {
        t["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"]["sym"] == sym)
            .cloned()
    };
    let tables = v["events"].as_array().unwrap();
    let atom: Vec<&Value> = tables.iter().filter(|t| t["pmu"] == "cpu_atom").collect();
    assert!(atom.len() >= 3, "{} E-core tables", atom.len());
    // Each file's path, from its own report.
    let report_json = [&["report", "--json", "--sort", "sym"][..], &metric_flags].concat();
    let (old_report, new_report) = (json(&old, &report_json), json(&new, &report_json));
    let path_of = |r: &Value| -> Vec<String> {
        let t = r["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["pmu"] == "cpu_atom")
            .unwrap()
            .clone();
        mg::bottleneck(&row_of(&t, &sym).unwrap())
    };
    let (old_path, new_path) = (path_of(&old_report), path_of(&new_report));
    assert_eq!(
        old_path,
        [
            "tma_backend_bound",
            "tma_resource_bound",
            "tma_mem_scheduler"
        ]
    );
    assert_ne!(old_path, new_path);
    for t in &atom {
        let r = row_of(t, &sym).unwrap_or_else(|| panic!("no {sym}: {t:#}"));
        let d = r["metrics_delta"]
            .as_object()
            .unwrap_or_else(|| panic!("no metrics_delta: {r:#}"));
        assert_eq!(d.len(), ecore_truth().len(), "{d:?}");
        for (name, _) in ecore_truth() {
            let want = moved
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(0.0, |(_, w)| *w);
            let got = d[&name].as_f64().unwrap_or_else(|| panic!("{name}: {d:?}"));
            assert!((got - want).abs() < 0.1, "{name}: {got}, want {want}");
        }
        assert_eq!(r["bottleneck"]["old"], serde_json::json!(old_path));
        assert_eq!(r["bottleneck"]["new"], serde_json::json!(new_path));
        assert_eq!(r["bottleneck"]["changed"], true);
    }
    // The P-core functions: Intel's P-core nodes, unchanged.
    let pm = mr::perfmon(&pdir, ADL);
    let pcore_names: Vec<String> = pm.tma_metrics(3).iter().map(|m| m.perf_name()).collect();
    let mut seen = 0;
    for t in tables.iter().filter(|t| t["pmu"] == "cpu_core") {
        for (func, _) in ADL_PCORE_FUNCS {
            let Some(r) = row_of(t, &format!("[k] {func}")) else {
                continue;
            };
            let Some(d) = r["metrics_delta"].as_object() else {
                continue;
            };
            seen += 1;
            let names: Vec<&String> = d.keys().collect();
            assert_eq!(names.len(), pcore_names.len(), "{names:?}");
            assert!(d.contains_key("tma_l3_bound"), "{names:?}");
            // (A node whose formula has no value on the P-core truth is null in both.)
            let mut numbers = 0;
            for (n, x) in d {
                if let Some(x) = x.as_f64() {
                    numbers += 1;
                    assert!(x.abs() < 1e-6, "{func} {n}: {x}");
                }
            }
            assert!(numbers > 30, "{func}: {numbers} numbers in {d:?}");
        }
    }
    assert!(seen > 0, "no P-core row with metrics_delta");

    // The TUI: the E-core function's tree in the pane under the first E-core table, the text
    // report's lines.
    if !support::tmux::available() {
        eprintln!("skipped: tmux not installed (the TUI part)");
        return;
    }
    let report = [
        &["report", "--sort", "sym", "--no-children"][..],
        &metric_flags,
    ]
    .concat();
    let o = hrec_in(&old, &[&report[..], &["--stdio", "-g", "none"]].concat());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let at = out
        .find("Intel's E-core metrics on cpu_atom")
        .unwrap_or_else(|| panic!("no E-core tree:\n{out}"));
    let tree: Vec<&str> = out[at..]
        .lines()
        .skip(1)
        .take_while(|l| l.trim_start().starts_with('|'))
        .map(|l| l.split_once("|  ").unwrap().1.trim_end())
        .collect();
    assert!(
        tree.iter()
            .any(|l| l.trim_start().starts_with("tma_mem_scheduler") && l.ends_with("<==")),
        "{out}"
    );
    // The TUI's `s` steps through the tables in the JSON report's order.
    let first_atom = old_report["events"]
        .as_array()
        .unwrap()
        .iter()
        .position(|t| t["pmu"] == "cpu_atom")
        .unwrap();
    let wait = std::time::Duration::from_secs(60);
    let t = support::tmux::Tmux::start(
        &old,
        120,
        50,
        &format!("{} {}", env!("CARGO_BIN_EXE_hrec"), report.join(" ")),
    );
    t.wait_screen(wait, |s| s.contains("(m: hide)"));
    for _ in 0..first_atom {
        t.send_keys(&["s"]);
    }
    let head = format!("[k] {}  (m: hide)", ECORE_FUNC.0);
    let screen = t.wait_screen(wait, |s| {
        let lines: Vec<&str> = s.lines().map(str::trim_end).collect();
        lines
            .iter()
            .position(|l| l.starts_with(&head))
            .is_some_and(|start| {
                tree.iter()
                    .enumerate()
                    .all(|(i, want)| lines.get(start + 1 + i) == Some(want))
            })
    });
    assert!(
        screen.contains("Intel's E-core metrics on cpu_atom"),
        "{screen}"
    );
    t.send_keys(&["q"]);
    assert_eq!(t.wait_exit(wait), 0);
}
