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
//! Speculation the remainder) and no P-core metric at all.

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use hrec::data::{EventId, EventMeta, Meta, PmuMeta, Trailer, Writer};
use hrec::event::Attr;
use hrec::event::attr::{flag, read, sample, types};
use hrec::event::plan::metric;
use hrec::event::plan::{self, Plan, RecordOptions};
use hrec::metrics::perfmon::{Encoding, EventRef, Metric, Perfmon};
use hrec::pmu::uarch::CpuId;
use serde_json::Value;
use support::encode::{
    Encoder, Mmap2Fields, Mmap2File, ReadFields, ReadValue, SampleFields, SampleId,
};
use support::metricgroups::{self as mg, rate};
use support::metricrec as mr;
use support::perfdata::{ATTR_SIZE, FINISHED_ROUND, PerfData, feature, tiny_elf};
use support::{hrec_in, procfs_of, text};

/// Cycles per sample of every group's sampler (`perf record -c 1000000`).
const PERIOD: u64 = 1_000_000;
const PID: u32 = 4242;

/// Reads of group `g` in the function `f` (index): different per group and function (so a
/// group's rates must be scaled by its own cycles), all above the read minimum.
fn reads(f: usize, g: usize) -> u64 {
    24 + 5 * f as u64 + 3 * g as u64
}

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
    let dummy = pd.event(d, "dummy:u", vec![id(pd.events.len())]);
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
// Alder Lake: P-core groups and the E-core group.

const ADL: &str = "alderlake";
const ADL_KALLSYMS: &str = "\
ffffffff81000000 T _text
ffffffff81001000 T chase
ffffffff81002000 T divide
ffffffff81003000 T ecore_work
ffffffff81004000 T past_the_end
";
const ADL_PCORE_FUNCS: [(&str, u64); 2] = [
    ("chase", 0xffffffff81001010),
    ("divide", 0xffffffff81002020),
];
const ECORE_FUNC: (&str, u64) = ("ecore_work", 0xffffffff81003030);
const KERNEL_EXACT: u16 = 1 | (1 << 14);
/// Gracemont issues 5 slots a cycle.
const GRACEMONT_WIDTH: f64 = 5.0;
/// The E-core function's truth, shares of the slots: frontend bound (of it latency), backend
/// bound (of it core bound: allocation restrictions), retiring, and branch mispredicts
/// (Bad Speculation being the remainder).
const E_FE: f64 = 0.30;
const E_FE_LAT: f64 = 0.20;
const E_BE: f64 = 0.45;
const E_BE_CORE: f64 = 0.10;
const E_RET: f64 = 0.15;
const E_MISP: f64 = 0.06;

/// The E-core function's level 2 and 3 truth (shares of the slots) for the rest of Intel's
/// E-core tree, each node with its Gracemont event: (node, event, share).
const E_MORE: [(&str, &str, f64); 17] = [
    (
        "IFetch_Bandwidth",
        "TOPDOWN_FE_BOUND.FRONTEND_BANDWIDTH",
        0.10,
    ),
    (
        "Machine_Clears",
        "TOPDOWN_BAD_SPECULATION.MACHINE_CLEARS",
        0.04,
    ),
    ("ICache_Misses", "TOPDOWN_FE_BOUND.ICACHE", 0.08),
    ("ITLB_Misses", "TOPDOWN_FE_BOUND.ITLB", 0.03),
    ("Branch_Detect", "TOPDOWN_FE_BOUND.BRANCH_DETECT", 0.05),
    ("Branch_Resteer", "TOPDOWN_FE_BOUND.BRANCH_RESTEER", 0.04),
    ("Cisc", "TOPDOWN_FE_BOUND.CISC", 0.02),
    ("Decode", "TOPDOWN_FE_BOUND.DECODE", 0.03),
    ("Predecode", "TOPDOWN_FE_BOUND.PREDECODE", 0.01),
    ("Other_FB", "TOPDOWN_FE_BOUND.OTHER", 0.04),
    ("Nuke", "TOPDOWN_BAD_SPECULATION.NUKE", 0.01),
    ("Fast_Nuke", "TOPDOWN_BAD_SPECULATION.FASTNUKE", 0.03),
    ("Mem_Scheduler", "TOPDOWN_BE_BOUND.MEM_SCHEDULER", 0.20),
    (
        "Non_Mem_Scheduler",
        "TOPDOWN_BE_BOUND.NON_MEM_SCHEDULER",
        0.05,
    ),
    ("Register", "TOPDOWN_BE_BOUND.REGISTER", 0.03),
    ("Reorder_Buffer", "TOPDOWN_BE_BOUND.REORDER_BUFFER", 0.04),
    ("Serialization", "TOPDOWN_BE_BOUND.SERIALIZATION", 0.03),
];

/// Events per cycle of the E-core function, by Intel's Gracemont name.
fn ecore_rate(key: &str) -> f64 {
    let name = key.split(':').next().unwrap_or(key);
    GRACEMONT_WIDTH
        * match name {
            "CPU_CLK_UNHALTED.THREAD" => return 1.0,
            "TOPDOWN_FE_BOUND.ALL" => E_FE,
            "TOPDOWN_FE_BOUND.FRONTEND_LATENCY" => E_FE_LAT,
            "TOPDOWN_BE_BOUND.ALL" => E_BE,
            "TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS" => E_BE_CORE,
            "TOPDOWN_RETIRING.ALL" => E_RET,
            "TOPDOWN_BAD_SPECULATION.MISPREDICT" => E_MISP,
            other => match E_MORE.iter().find(|(_, e, _)| *e == other) {
                Some((_, _, share)) => *share,
                None => panic!("no truth for E-core event {other}"),
            },
        }
}

/// Intel's E-core TMA 3.6 formulas (GRT column) on the E-core function's truth, in
/// percent, by perf's name: each node its event over the slots, Bad Speculation the
/// remainder of the slots, Resource Bound Backend Bound minus Core Bound.
fn ecore_truth() -> Vec<(String, f64)> {
    let bad = 1.0 - E_FE - E_BE - E_RET;
    let mut v: Vec<(&str, f64)> = vec![
        ("Frontend_Bound", E_FE),
        ("Bad_Speculation", bad),
        ("Backend_Bound", E_BE),
        ("Retiring", E_RET),
        ("IFetch_Latency", E_FE_LAT),
        ("Branch_Mispredicts", E_MISP),
        ("Core_Bound", E_BE_CORE),
        ("Allocation_Restriction", E_BE_CORE),
        ("Resource_Bound", E_BE - E_BE_CORE),
    ];
    v.extend(E_MORE.iter().map(|(n, _, s)| (*n, *s)));
    v.into_iter()
        .map(|(n, s)| (format!("tma_{}", n.to_ascii_lowercase()), 100.0 * s))
        .collect()
}

/// `record --td-level 3` on the Alder Lake fixture with the NMI watchdog off (the E-core
/// group then holds level 2 too).
fn adl_plan(pdir: &Path) -> Plan {
    let mut host = mr::host(ADL);
    host.nmi_watchdog = Some(false);
    let pmus = support::pmus(ADL);
    let pm = mr::perfmon(pdir, ADL);
    let m = metric::plan_metrics(&pmus, &host, Ok(&pm), &mr::td_level(3)).unwrap();
    plan::plan_record_with(&pmus, &host, &RecordOptions::default(), Some(&m)).unwrap()
}

/// Writes the Alder Lake recording into `dir`: P-core group reads in `chase` and `divide` on
/// CPU 0, E-core group reads in `ecore_work` on CPU 16.
fn write_adl(dir: &Path, plan: &Plan) -> (usize, usize) {
    let ecore_cpu: u32 = 16;
    let id = |i: usize| 1000 + i as u64;
    let cpu_of = |e: &plan::PlannedEvent| {
        if e.pmu.as_deref() == Some("cpu_atom") {
            ecore_cpu
        } else {
            0
        }
    };
    let meta = Meta {
        hrec_version: "test".into(),
        target: "workload".into(),
        cpuid: mg::cpuid(ADL),
        pmus: vec![
            PmuMeta {
                name: "cpu_core".into(),
                type_: 4,
            },
            PmuMeta {
                name: "cpu_atom".into(),
                type_: 8,
            },
        ],
        events: plan
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
                    cpu: cpu_of(e) as i32,
                    tid: 500,
                }],
                trace_format: None,
            })
            .collect(),
        ..Meta::default()
    };
    let pcore = mg::groups_on(plan, "cpu_core");
    let ecore = mg::groups_on(plan, "cpu_atom");
    assert!(ecore.len() >= 3, "{} E-core groups", ecore.len());
    let mut records = Vec::new();
    let enc = Encoder::new(meta.events[pcore[0].0].attr);
    let sid = SampleId {
        pid: 500,
        tid: 500,
        time: 1,
        id: id(pcore[0].0),
        ..SampleId::default()
    };
    records.extend(enc.comm(&sid, 500, 500, b"app", true));
    let mut totals: HashMap<usize, Vec<u64>> = HashMap::new();
    let mut time = 10;
    let mut sample = |sampler: usize,
                      members: &[(usize, String)],
                      ip: u64,
                      cpu: u32,
                      rate: &dyn Fn(&str) -> f64,
                      records: &mut Vec<u8>| {
        let tot = totals
            .entry(sampler)
            .or_insert_with(|| vec![0; members.len()]);
        for (t, (_, key)) in tot.iter_mut().zip(members) {
            *t += (rate(key) * PERIOD as f64).round() as u64;
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
        records.extend(
            Encoder::new(meta.events[sampler].attr).sample(&SampleFields {
                misc: KERNEL_EXACT,
                id: id(sampler),
                ip,
                pid: 500,
                tid: 500,
                time,
                cpu,
                period: PERIOD,
                read: ReadFields {
                    values,
                    ..ReadFields::default()
                },
                ..SampleFields::default()
            }),
        );
    };
    let rounds = 30;
    let mut ecore_reads = 0;
    for round in 0..rounds {
        for (gi, (sampler, members)) in pcore.iter().enumerate() {
            for (fi, (f, ip)) in ADL_PCORE_FUNCS.iter().enumerate() {
                if round < reads(fi, gi) {
                    sample(*sampler, members, *ip, 0, &|k| rate(f, k), &mut records);
                }
            }
        }
        for (sampler, members) in &ecore {
            sample(
                *sampler,
                members,
                ECORE_FUNC.1,
                ecore_cpu,
                &ecore_rate,
                &mut records,
            );
        }
        ecore_reads += 1;
    }
    let mut w = Writer::create(&dir.join("hrec.data"), &meta).unwrap();
    w.write_side("kallsyms", ADL_KALLSYMS.as_bytes()).unwrap();
    w.write_records(&records, 0).unwrap();
    w.finish(Trailer::default()).unwrap();
    (pcore.len(), ecore_reads)
}

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
