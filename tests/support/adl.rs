//! A synthetic Alder Lake `record --td-level 3` recording: P-core (`cpu_core`) groups from
//! Intel's metric file with their reads in `chase` and `divide` on CPU 0 (truth
//! [`super::metricgroups::rate`]), and every E-core (`cpu_atom`) group of hrec's E-core tree
//! with its reads in `ecore_work` on CPU 16, from an E-core truth ([`ecore_rate`], Intel's
//! E-core TMA 3.6 on it: [`ecore_truth`]). Written byte for byte in the kernel's layout with
//! the real file writer.

use std::collections::HashMap;
use std::path::Path;

use hrec::data::{EventId, EventMeta, Meta, PmuMeta, Trailer, Writer};
use hrec::event::plan::{self, Plan, RecordOptions, metric};

use super::encode::{Encoder, ReadFields, ReadValue, SampleFields, SampleId};
use super::metricgroups::{self as mg, rate};
use super::metricrec as mr;

/// Cycles per sample of every group's sampler.
pub const PERIOD: u64 = 1_000_000;

/// Reads of P-core group `g` in the P-core function `f` (index): different per group and
/// function (so a group's rates must be scaled by its own cycles), all above the read
/// minimum.
pub fn pcore_reads(f: usize, g: usize) -> u64 {
    24 + 5 * f as u64 + 3 * g as u64
}

pub const ADL: &str = "alderlake";
pub const ADL_KALLSYMS: &str = "\
ffffffff81000000 T _text
ffffffff81001000 T chase
ffffffff81002000 T divide
ffffffff81003000 T ecore_work
ffffffff81004000 T past_the_end
";
pub const ADL_PCORE_FUNCS: [(&str, u64); 2] = [
    ("chase", 0xffffffff81001010),
    ("divide", 0xffffffff81002020),
];
pub const ECORE_FUNC: (&str, u64) = ("ecore_work", 0xffffffff81003030);
pub const KERNEL_EXACT: u16 = 1 | (1 << 14);
/// Gracemont issues 5 slots a cycle.
pub const GRACEMONT_WIDTH: f64 = 5.0;
/// The E-core function's truth, shares of the slots: frontend bound (of it latency), backend
/// bound (of it core bound: allocation restrictions), retiring, and branch mispredicts
/// (Bad Speculation being the remainder).
pub const E_FE: f64 = 0.30;
pub const E_FE_LAT: f64 = 0.20;
pub const E_BE: f64 = 0.45;
pub const E_BE_CORE: f64 = 0.10;
pub const E_RET: f64 = 0.15;
pub const E_MISP: f64 = 0.06;

/// The E-core function's level 2 and 3 truth (shares of the slots) for the rest of Intel's
/// E-core tree, each node with its Gracemont event: (node, event, share).
pub const E_MORE: [(&str, &str, f64); 17] = [
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
pub fn ecore_rate(key: &str) -> f64 {
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
pub fn ecore_truth() -> Vec<(String, f64)> {
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
pub fn adl_plan(pdir: &Path) -> Plan {
    let mut host = mr::host(ADL);
    host.nmi_watchdog = Some(false);
    let pmus = super::pmus(ADL);
    let pm = mr::perfmon(pdir, ADL);
    let m = metric::plan_metrics(&pmus, &host, Ok(&pm), &mr::td_level(3)).unwrap();
    plan::plan_record_with(&pmus, &host, &RecordOptions::default(), Some(&m)).unwrap()
}

/// Writes the Alder Lake recording into `dir`: P-core group reads in `chase` and `divide` on
/// CPU 0, E-core group reads in `ecore_work` on CPU 16 from [`ecore_rate`]; the P-core groups
/// and the E-core reads.
pub fn write_adl(dir: &Path, plan: &Plan) -> (usize, usize) {
    write_adl_with(dir, plan, &ecore_rate)
}

/// [`write_adl`] with the E-core function's truth `truth` (events per cycle by Intel's
/// Gracemont name).
pub fn write_adl_with(dir: &Path, plan: &Plan, truth: &dyn Fn(&str) -> f64) -> (usize, usize) {
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
            // The fixture's sysfs `cpus` files.
            PmuMeta {
                name: "cpu_core".into(),
                type_: 4,
                cpus: Some("0-15".into()),
            },
            PmuMeta {
                name: "cpu_atom".into(),
                type_: 8,
                cpus: Some("16-23".into()),
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
                if round < pcore_reads(fi, gi) {
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
                truth,
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
