//! `hrec report`, `hrec flamegraph` and `hrec export` on recordings built byte for byte in the kernel's layout (the hardware-only
//! values: TopDown group reads, retire latencies, hybrid PMUs), written with the real file
//! writer. The code addresses are kernel addresses resolved through a kallsyms side block, so
//! every expected number below is exact.

mod support;

use hrec::data::{EventId, EventMeta, Meta, PmuMeta, Trailer, Writer};
use hrec::event::attr::flag;
use hrec::event::plan::{Plan, RecordOptions, Role};
use serde_json::Value;
use support::encode::{Encoder, ReadFields, ReadValue, SampleFields, SampleId};
use support::{hrec_in, text};

const KALLSYMS: &str = "\
ffffffff81000000 T _text
ffffffff81001000 T hot_a
ffffffff81002000 T hot_b
ffffffff81003000 T after_b
ffffffff81004000 T past_the_end
";
const HOT_A: u64 = 0xffffffff81001010;
const HOT_B: u64 = 0xffffffff81002020;
const KERNEL_EXACT: u16 = 1 | (1 << 14);

/// TopDown deltas in plan order of the members: slots, retiring, bad-spec, fe-bound,
/// be-bound, heavy-ops, br-mispredict, fetch-lat, mem-bound.
type Td = [u64; 9];
const TD_MEMBERS: [&str; 9] = [
    "slots",
    "topdown-retiring",
    "topdown-bad-spec",
    "topdown-fe-bound",
    "topdown-be-bound",
    "topdown-heavy-ops",
    "topdown-br-mispredict",
    "topdown-fetch-lat",
    "topdown-mem-bound",
];

/// The [`Td`] position of a group member: perf's `topdown-*` names, or Intel's E-core event
/// names (`TOPDOWN_FE_BOUND.ALL`); any other member (the sampler) counts the period.
///
/// Intel's E-core level-2 events take the P-core level-2 positions: FRONTEND_BANDWIDTH 5,
/// MISPREDICT 6, FRONTEND_LATENCY 7, ALLOC_RESTRICTIONS 8, and MACHINE_CLEARS the slots
/// position 0, which an E-core group does not have (its slots are width x the period).
fn td_member(name: &str) -> Option<usize> {
    let ecore_l2 = [
        ("TOPDOWN_BAD_SPECULATION.MACHINE_CLEARS", 0),
        ("TOPDOWN_FE_BOUND.FRONTEND_BANDWIDTH", 5),
        ("TOPDOWN_BAD_SPECULATION.MISPREDICT", 6),
        ("TOPDOWN_FE_BOUND.FRONTEND_LATENCY", 7),
        ("TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS", 8),
    ];
    if let Some((_, p)) = ecore_l2.iter().find(|(n, _)| *n == name) {
        return Some(*p);
    }
    TD_MEMBERS.iter().position(|t| *t == name).or_else(|| {
        [
            "TOPDOWN_RETIRING.",
            "TOPDOWN_BAD_SPECULATION.",
            "TOPDOWN_FE_BOUND.",
            "TOPDOWN_BE_BOUND.",
        ]
        .iter()
        .position(|p| name.starts_with(p))
        .map(|i| i + 1)
    })
}

fn base(name: &str) -> &str {
    let n = name.split('/').nth(1).unwrap_or(name);
    n.split(':').next().unwrap_or(n)
}

/// A recording of `plan`'s events, one fd per event on `cpu_of(event)`, id 1000 + index.
struct Synth {
    plan: Plan,
    meta: Meta,
    records: Vec<u8>,
    /// Cumulative group values per (tid, sampler).
    totals: std::collections::HashMap<(u32, usize), Vec<u64>>,
    time: u64,
    /// Samples are of user code (else of the kernel).
    user: bool,
}

fn id(i: usize) -> u64 {
    1000 + i as u64
}

impl Synth {
    fn new(model: &str, weight: bool, cpu_of: impl Fn(&str) -> i32) -> Synth {
        let opts = RecordOptions {
            weight,
            ..RecordOptions::default()
        };
        Synth::with(model, &opts, cpu_of)
    }

    fn with(model: &str, opts: &RecordOptions, cpu_of: impl Fn(&str) -> i32) -> Synth {
        Synth::planned(
            support::plan(model, opts),
            "",
            vec![("cpu".into(), 4)],
            cpu_of,
        )
    }

    /// A recording of the default plan on `model` made knowing its cpuinfo (E-core TopDown
    /// groups included), the file's cpuid and core PMUs as `hrec record` writes them.
    fn ecore(model: &str, cpu_of: impl Fn(&str) -> i32) -> Synth {
        Synth::ecore_with(model, false, cpu_of)
    }

    /// [`Synth::ecore`], with `-W` when `weight`.
    fn ecore_with(model: &str, weight: bool, cpu_of: impl Fn(&str) -> i32) -> Synth {
        Synth::ecore_host(model, weight, None, cpu_of)
    }

    /// [`Synth::ecore_with`], the NMI watchdog as given (off: Gracemont gets level 2 too).
    fn ecore_host(
        model: &str,
        weight: bool,
        nmi_watchdog: Option<bool>,
        cpu_of: impl Fn(&str) -> i32,
    ) -> Synth {
        let pmus = support::pmus(model);
        let cpu = hrec::pmu::uarch::CpuId::read(&support::procfs_of(model)).unwrap();
        let host = hrec::event::Host {
            cpu: Some(cpu),
            nmi_watchdog,
            ..support::host()
        };
        let opts = RecordOptions {
            weight,
            ..RecordOptions::default()
        };
        let plan = hrec::event::plan::plan_record(&pmus, &host, &opts).unwrap();
        let core = pmus
            .core_pmus()
            .iter()
            .map(|p| (p.name.clone(), p.type_))
            .collect();
        Synth::planned(plan, &cpu.to_string(), core, cpu_of)
    }

    fn planned(
        plan: Plan,
        cpuid: &str,
        pmus: Vec<(String, u32)>,
        cpu_of: impl Fn(&str) -> i32,
    ) -> Synth {
        let meta = Meta {
            hrec_version: "test".into(),
            target: "workload".into(),
            cpuid: cpuid.into(),
            pmus: pmus
                .into_iter()
                .map(|(name, type_)| PmuMeta {
                    name,
                    type_,
                    cpus: None,
                })
                .collect(),
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
                        cpu: cpu_of(e.pmu.as_deref().unwrap_or("")),
                        tid: 500,
                    }],
                    trace_format: None,
                })
                .collect(),
            ..Meta::default()
        };
        let mut s = Synth {
            plan,
            meta,
            records: Vec::new(),
            totals: Default::default(),
            time: 1,
            user: false,
        };
        let enc = s.enc(s.sampler(None));
        let sid = SampleId {
            pid: 500,
            tid: 500,
            time: 1,
            id: id(s.sampler(None)),
            ..SampleId::default()
        };
        s.records.extend(enc.comm(&sid, 500, 500, b"app", true));
        s.records.extend(enc.fork(&sid, [500, 500, 501, 500], 1));
        s
    }

    fn sampler(&self, pmu: Option<&str>) -> usize {
        self.plan
            .events
            .iter()
            .position(|e| {
                e.role == Role::Sampler && pmu.is_none_or(|p| e.pmu.as_deref() == Some(p))
            })
            .unwrap()
    }

    fn enc(&self, i: usize) -> Encoder {
        Encoder::new(self.meta.events[i].attr)
    }

    /// A sample of `sampler` by thread `tid` at `ip`, whose group read adds `td` to the
    /// thread's counts.
    fn sample(&mut self, sampler: usize, tid: u32, ip: u64, period: u64, td: Option<Td>, lat: u64) {
        self.sample_in(sampler, tid, &[ip], period, td, lat);
    }

    /// [`Synth::sample`] with a kernel call chain: `chain[0]` is the ip, then its callers.
    fn sample_in(
        &mut self,
        sampler: usize,
        tid: u32,
        chain: &[u64],
        period: u64,
        td: Option<Td>,
        lat: u64,
    ) {
        let ip = chain[0];
        self.time += 1000;
        let leader = self.plan.events[sampler].leader;
        let members: Vec<usize> = self
            .plan
            .events
            .iter()
            .filter(|e| e.leader == leader)
            .map(|e| e.index)
            .collect();
        let tot = self
            .totals
            .entry((tid, sampler))
            .or_insert_with(|| vec![0; members.len()]);
        for (k, &m) in members.iter().enumerate() {
            let name = base(&self.meta.events[m].name);
            let add = match (td, td_member(name)) {
                (Some(td), Some(p)) => td[p],
                _ => period,
            };
            tot[k] += add;
        }
        let values = members
            .iter()
            .zip(tot.iter())
            .map(|(&m, &v)| ReadValue {
                value: v,
                id: id(m),
                lost: 0,
            })
            .collect();
        let cpu = self.meta.events[sampler].ids[0].cpu as u32;
        let enc = self.enc(sampler);
        // User mode (2) or the kernel's, exact; the chain's context marker to match.
        let (misc, context) = if self.user {
            (2 | (1 << 14), -512i64 as u64)
        } else {
            (KERNEL_EXACT, -128i64 as u64)
        };
        self.records.extend(
            enc.sample(&SampleFields {
                misc,
                id: id(sampler),
                ip,
                pid: 500,
                tid,
                time: self.time,
                cpu,
                period,
                read: ReadFields {
                    values,
                    ..ReadFields::default()
                },
                weight: lat << 48,
                callchain: std::iter::once(context)
                    .chain(chain.iter().copied())
                    .collect(),
                ..SampleFields::default()
            }),
        );
    }

    /// [`Synth::sample`] of user code: `ip` in a mapping of process 500.
    fn user_sample(
        &mut self,
        sampler: usize,
        tid: u32,
        ip: u64,
        period: u64,
        td: Option<Td>,
        lat: u64,
    ) {
        self.user = true;
        self.sample_in(sampler, tid, &[ip], period, td, lat);
        self.user = false;
    }

    fn write(&self, dir: &std::path::Path) {
        self.write_with(dir, KALLSYMS);
    }

    /// [`Synth::write`] with other kernel symbols.
    fn write_with(&self, dir: &std::path::Path, kallsyms: &str) {
        let mut w = Writer::create(&dir.join("hrec.data"), &self.meta).unwrap();
        w.write_side("kallsyms", kallsyms.as_bytes()).unwrap();
        w.write_records(&self.records, 0).unwrap();
        w.finish(Trailer::default()).unwrap();
    }
}

fn report_json(dir: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = vec!["report", "--json"];
    args.extend_from_slice(extra);
    let o = hrec_in(dir, &args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn row<'a>(table: &'a Value, sym: &str) -> &'a Value {
    table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"]["sym"] == format!("[k] {sym}"))
        .unwrap_or_else(|| panic!("no row {sym} in {table:#}"))
}

fn l1(v: &Value) -> [f64; 4] {
    let m = &v["topdown"]["level1"];
    [
        "Retiring",
        "Bad Speculation",
        "Frontend Bound",
        "Backend Bound",
    ]
    .map(|k| (m[k].as_f64().unwrap_or(f64::NAN) * 1e6).round() / 1e6)
}

const CORE_BOUND: Td = [1000, 100, 100, 200, 600, 50, 50, 100, 500];
const RETIRING: Td = [1000, 600, 100, 100, 200, 300, 50, 60, 100];

#[test]
fn topdown_deltas_are_per_thread_with_inherit_and_normalised_per_symbol() {
    let mut s = Synth::new("sapphirerapids", true, |_| 0);
    let c = s.sampler(None);
    assert!(s.meta.events[c].attr.has(flag::INHERIT));
    // Two threads interleave; each group read is that thread's own running total.
    s.sample(c, 500, HOT_A, 100, Some(RETIRING), 0);
    s.sample(c, 501, HOT_B, 100, Some(CORE_BOUND), 0);
    s.sample(c, 500, HOT_B, 100, Some(CORE_BOUND), 0);
    s.sample(c, 501, HOT_A, 100, Some(RETIRING), 0);
    s.sample(c, 501, HOT_A, 100, Some(RETIRING), 0);
    let dir = tempfile::tempdir().unwrap();
    s.write(dir.path());

    let j = report_json(dir.path(), &["--sort", "sym"]);
    let t = &j["events"][0];
    assert_eq!(t["event"], "cycles:P");
    assert_eq!(t["samples"], 5);
    // hot_a: three RETIRING deltas: 1800/3000 retiring, 300 bad, 300 fe, 600 be.
    assert_eq!(l1(row(t, "hot_a")), [60.0, 10.0, 10.0, 20.0]);
    assert_eq!(row(t, "hot_a")["topdown"]["slots"], 3000);
    assert_eq!(row(t, "hot_a")["topdown"]["samples"], 3);
    // hot_b: two CORE_BOUND deltas.
    assert_eq!(l1(row(t, "hot_b")), [10.0, 10.0, 20.0, 60.0]);
    // Whole program: (1800+200)/5000, 500/5000, 700/5000, 1800/5000.
    assert_eq!(l1(t), [40.0, 10.0, 14.0, 36.0]);
    // Level 2 by subtraction, of the L1 sum: hot_a heavy 900/3000, light 900/3000, ...
    let l2 = &row(t, "hot_a")["topdown"]["level2"];
    let pairs = [
        ("Heavy Operations", 30.0),
        ("Light Operations", 30.0),
        ("Branch Mispredicts", 5.0),
        ("Machine Clears", 5.0),
        ("Fetch Latency", 6.0),
        ("Fetch Bandwidth", 4.0),
        ("Memory Bound", 10.0),
        ("Core Bound", 10.0),
    ];
    for (k, v) in pairs {
        assert!((l2[k].as_f64().unwrap() - v).abs() < 1e-9, "{k}: {l2}");
    }

    // The text table shows the same numbers, marks rows with few group reads, and the
    // header has the totals; level 2 adds the L2 columns.
    let o = hrec_in(dir.path(), &["report", "--sort", "sym", "--td-level", "2"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("# TopDown totals from 5 group reads:  Retiring 40.0%  Bad Speculation 10.0%  Frontend Bound 14.0%  Backend Bound 36.0%"),
        "{out}"
    );
    let a = out.lines().find(|l| l.ends_with("[k] hot_a")).unwrap();
    let cells: Vec<&str> = a.split_whitespace().collect();
    assert_eq!(
        &cells[..14],
        [
            "60.00%", "3", "60.0%*", "10.0%*", "10.0%*", "20.0%*", "30.0%*", "30.0%*", "5.0%*",
            "5.0%*", "6.0%*", "4.0%*", "10.0%*", "10.0%*"
        ],
        "{out}"
    );
    assert!(out.contains("fewer than 10 group reads"), "{out}");
}

/// With `--children` (on by default with call chains), a caller's TopDown columns and retire
/// latencies cover the samples its Children value covers: its callees' included.
#[test]
fn children_rows_carry_the_topdown_and_latencies_of_their_callees() {
    let opts = RecordOptions {
        weight: true,
        call_graph: Some(hrec::event::plan::CallGraph::Fp),
        ..RecordOptions::default()
    };
    let mut s = Synth::with("sapphirerapids", &opts, |_| 0);
    let c = s.sampler(None);
    // hot_a and hot_b are called from after_b (a caller of both).
    let caller = 0xffffffff81003040;
    s.sample_in(c, 500, &[HOT_A, caller], 100, Some(RETIRING), 20);
    s.sample_in(c, 500, &[HOT_B, caller], 100, Some(CORE_BOUND), 40);
    s.sample_in(c, 500, &[HOT_A, caller], 100, Some(RETIRING), 60);
    let dir = tempfile::tempdir().unwrap();
    s.write(dir.path());

    let j = report_json(dir.path(), &["--sort", "sym"]);
    let t = &j["events"][0];
    let r = row(t, "after_b");
    assert_eq!(
        (r["children"].as_f64(), r["overhead"].as_f64()),
        (Some(100.0), Some(0.0))
    );
    // Two RETIRING deltas and one CORE_BOUND: (1200+100)/3000, 300/3000, 400/3000, 1000/3000.
    let l = l1(r);
    let want = [1300.0 / 30.0, 10.0, 400.0 / 30.0, 1000.0 / 30.0];
    assert!(
        l.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-5),
        "{l:?}"
    );
    assert_eq!(r["topdown"]["samples"], 3);
    assert_eq!(r["retire_latency"]["count"], 3);
    assert_eq!(r["retire_latency"]["max"], 60);
    // The callees keep their own.
    assert_eq!(l1(row(t, "hot_a")), [60.0, 10.0, 10.0, 20.0]);
    assert_eq!(row(t, "hot_a")["retire_latency"]["count"], 2);
    // Without children, the caller has no row.
    let j = report_json(dir.path(), &["--sort", "sym", "--no-children"]);
    let rows = j["events"][0]["rows"].as_array().unwrap();
    assert!(
        !rows.iter().any(|r| r["key"]["sym"] == "[k] after_b"),
        "{j:#}"
    );
}

#[test]
fn without_inherit_deltas_are_per_counter() {
    // The same samples from a non-inherited (per-CPU) counter: the reads are one running
    // total, so the deltas are taken between consecutive samples regardless of thread.
    let mut s = Synth::new("sapphirerapids", true, |_| 0);
    for e in &mut s.meta.events {
        e.attr.set(flag::INHERIT, false);
    }
    let c = s.sampler(None);
    s.sample(c, 500, HOT_A, 100, Some(RETIRING), 0);
    s.sample(c, 500, HOT_B, 100, Some(CORE_BOUND), 0);
    let dir = tempfile::tempdir().unwrap();
    s.write(dir.path());
    let j = report_json(dir.path(), &["--sort", "sym"]);
    assert_eq!(l1(row(&j["events"][0], "hot_b")), [10.0, 10.0, 20.0, 60.0]);
    assert_eq!(l1(row(&j["events"][0], "hot_a")), [60.0, 10.0, 10.0, 20.0]);
}

#[test]
fn retire_latency_statistics_per_symbol_and_per_event() {
    let mut s = Synth::new("sapphirerapids", true, |_| 0);
    let c = s.sampler(None);
    for lat in [40, 10, 1000, 30, 20] {
        s.sample(c, 500, HOT_A, 100, Some(RETIRING), lat);
    }
    for lat in [5, 0] {
        s.sample(c, 501, HOT_B, 100, Some(CORE_BOUND), lat);
    }
    let dir = tempfile::tempdir().unwrap();
    s.write(dir.path());
    let j = report_json(
        dir.path(),
        &["--sort", "sym", "--retire-latency-json", "lat.json"],
    );
    let t = &j["events"][0];
    let a = &row(t, "hot_a")["retire_latency"];
    assert_eq!(
        [
            &a["count"],
            &a["min"],
            &a["median"],
            &a["p90"],
            &a["p99"],
            &a["max"],
            &a["total"]
        ],
        [5, 10, 30, 1000, 1000, 1000, 1100]
    );
    assert_eq!(a["mean"], 220.0);
    // Zero is a valid latency once the event has any non-zero one.
    let b = &row(t, "hot_b")["retire_latency"];
    assert_eq!(
        [
            &b["count"],
            &b["min"],
            &b["median"],
            &b["p90"],
            &b["max"],
            &b["total"]
        ],
        [2, 0, 0, 5, 5, 5]
    );
    assert_eq!(b["mean"], 2.5);
    let all = &t["retire_latency"];
    assert_eq!(
        [&all["count"], &all["median"], &all["max"], &all["total"]],
        [7, 20, 1000, 1105]
    );

    // Intel's schema: Platform, then Data with MIN/MAX/MEAN (+ COUNT, MEDIAN, histogram).
    let f: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("lat.json")).unwrap())
            .unwrap();
    let d = &f["Data"]["CYCLES"];
    assert_eq!(
        [&d["MIN"], &d["MAX"], &d["COUNT"], &d["MEDIAN"]],
        [0, 1000, 7, 20]
    );
    assert_eq!(d["MEAN"], 157.86);
    let buckets: u64 = d["HISTOGRAM"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["COUNT"].as_u64().unwrap())
        .sum();
    assert_eq!(buckets, 7);
    assert!(f["Platform"].is_object());

    // The text table has the latency columns.
    let o = hrec_in(dir.path(), &["report", "--sort", "sym", "--td-level", "0"]);
    let (out, _) = text(&o);
    assert!(
        out.contains("# Retire latency (cycles): 7 samples, mean 157.9, median 20, p90 1000, p99 1000, max 1000, total 1105 cycles"),
        "{out}"
    );
    let a = out.lines().find(|l| l.ends_with("[k] hot_a")).unwrap();
    let cells: Vec<&str> = a.split_whitespace().collect();
    assert_eq!(
        &cells[..9],
        [
            "71.43%", "5", "5", "220.0", "30", "1000", "1000", "1000", "1100"
        ],
        "{out}"
    );
}

#[test]
fn hybrid_pmus_are_separate_tables_and_zero_latencies_mean_none() {
    // Alder Lake: cpu_core (CPUs 0-15, TopDown group) and cpu_atom (16-23) each sample.
    let mut s = Synth::new(
        "alderlake",
        true,
        |pmu| if pmu == "cpu_atom" { 16 } else { 0 },
    );
    let core = s.sampler(Some("cpu_core"));
    let atom = s.sampler(Some("cpu_atom"));
    s.sample(core, 500, HOT_A, 3000, Some(RETIRING), 12);
    s.sample(core, 500, HOT_A, 3000, Some(RETIRING), 14);
    s.sample(core, 500, HOT_B, 3000, Some(CORE_BOUND), 16);
    s.sample(atom, 501, HOT_A, 1000, None, 0);
    for _ in 0..3 {
        s.sample(atom, 501, HOT_B, 1000, None, 0);
    }
    let dir = tempfile::tempdir().unwrap();
    s.write(dir.path());
    let j = report_json(dir.path(), &["--sort", "sym"]);
    let ev = j["events"].as_array().unwrap();
    assert_eq!(ev.len(), 2);
    let t = |name: &str| {
        ev.iter()
            .find(|t| t["event"] == name)
            .unwrap_or_else(|| panic!("{j:#}"))
    };
    let c = t("cpu_core/cycles/P");
    let a = t("cpu_atom/cycles/P");
    assert_eq!(
        (c["samples"].as_u64(), c["period"].as_u64()),
        (Some(3), Some(9000))
    );
    assert_eq!(
        (a["samples"].as_u64(), a["period"].as_u64()),
        (Some(4), Some(4000))
    );
    let ov = |t: &Value, s: &str| (row(t, s)["overhead"].as_f64().unwrap() * 100.0).round() / 100.0;
    assert_eq!((ov(c, "hot_a"), ov(c, "hot_b")), (66.67, 33.33));
    assert_eq!((ov(a, "hot_a"), ov(a, "hot_b")), (25.0, 75.0));
    assert_eq!(l1(row(c, "hot_a")), [60.0, 10.0, 10.0, 20.0]);
    assert!(row(a, "hot_a")["topdown"].is_null());
    assert_eq!(c["retire_latency"]["mean"], 14.0);
    assert!(a["retire_latency"].is_null());
    assert!(
        a["no_retire_latency"]
            .as_str()
            .unwrap()
            .contains("every latency is zero"),
        "{a}"
    );

    let o = hrec_in(dir.path(), &["report", "--sort", "sym"]);
    let (out, _) = text(&o);
    assert!(
        out.contains("# Samples: 3 of event 'cpu_core/cycles/P' (PMU cpu_core)"),
        "{out}"
    );
    assert!(
        out.contains("# Samples: 4 of event 'cpu_atom/cycles/P' (PMU cpu_atom)"),
        "{out}"
    );
    assert_eq!(
        out.matches("# Retire latency: none, every latency is zero")
            .count(),
        1,
        "{out}"
    );
}

#[test]
fn filters_time_range_and_percent_limit() {
    let mut s = Synth::new("sapphirerapids", true, |_| 0);
    let c = s.sampler(None);
    // Times 1001, 2001, 3001, 4001, 5001 ns: a, b, a, a, b.
    for ip in [HOT_A, HOT_B, HOT_A, HOT_A, HOT_B] {
        s.sample(c, 500, ip, 100, Some(RETIRING), 3);
    }
    let dir = tempfile::tempdir().unwrap();
    s.write(dir.path());
    let total = |j: &Value| j["events"][0]["samples"].as_u64().unwrap();
    let rows = |j: &Value| j["events"][0]["rows"].as_array().unwrap().len();

    // --time START,END in seconds: [2 µs, 4 µs) keeps the samples at 2001 and 3001 ns.
    let j = report_json(
        dir.path(),
        &["--sort", "sym", "--time", "0.000002,0.000004"],
    );
    assert_eq!(total(&j), 2);
    assert_eq!(row(&j["events"][0], "hot_a")["samples"], 1);
    let j = report_json(dir.path(), &["--sort", "sym", "--time", "0.000004,"]);
    assert_eq!(total(&j), 2);

    let j = report_json(dir.path(), &["--sort", "sym", "--sym", "hot_b"]);
    assert_eq!((total(&j), rows(&j)), (2, 1));
    let j = report_json(dir.path(), &["--sort", "sym", "--dso", "[kernel.kallsyms]"]);
    assert_eq!(total(&j), 5);
    let j = report_json(dir.path(), &["--sort", "sym", "--dso", "libc.so.6"]);
    assert_eq!(total(&j), 0);
    let j = report_json(
        dir.path(),
        &["--sort", "sym", "--comm", "app", "--pid", "500"],
    );
    assert_eq!(total(&j), 5);
    let j = report_json(dir.path(), &["--sort", "sym", "--pid", "7"]);
    assert_eq!(total(&j), 0);

    // hot_b has 40%: hidden by --percent-limit 50, with a line saying so.
    let o = hrec_in(
        dir.path(),
        &["report", "--sort", "sym", "--percent-limit", "50"],
    );
    let (out, _) = text(&o);
    assert!(
        out.contains("[k] hot_a") && !out.contains("[k] hot_b"),
        "{out}"
    );
    assert!(
        out.contains("# 1 rows below --percent-limit 50 not shown"),
        "{out}"
    );

    // Other sort keys: pid, tid, cpu, event, pmu, ip.
    let j = report_json(dir.path(), &["--sort", "pid,tid,cpu,event,pmu,ip"]);
    let r = &j["events"][0]["rows"][0]["key"];
    assert_eq!(r["pid"], "500:app");
    // The CPU is "-" unless the event samples it (perf record samples CPU only with -a/-C).
    let has_cpu = s.meta.events[c].attr.sample_type & hrec::event::attr::sample::CPU != 0;
    let cpu = if has_cpu { "0" } else { "-" };
    assert_eq!(
        (r["tid"].as_str(), r["cpu"].as_str()),
        (Some("500"), Some(cpu))
    );
    assert_eq!(
        (r["event"].as_str(), r["pmu"].as_str()),
        (Some("cycles:P"), Some("cpu"))
    );
    assert_eq!(r["ip"], "hot_a+0x10");
}

fn run_ok(dir: &std::path::Path, args: &[&str]) -> (String, String) {
    let o = hrec_in(dir, args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{args:?}: {err}");
    (out, err)
}

#[test]
fn flamegraph_weights_by_retire_latency_and_colours_by_topdown() {
    let mut s = Synth::new("sapphirerapids", true, |_| 0);
    let c = s.sampler(None);
    s.sample(c, 500, HOT_A, 100, Some(RETIRING), 10);
    s.sample(c, 500, HOT_A, 100, Some(RETIRING), 20);
    s.sample(c, 500, HOT_B, 300, Some(CORE_BOUND), 5);
    let dir = tempfile::tempdir().unwrap();
    s.write(dir.path());

    // No callchains: comm;dso;symbol stacks. Each weight in its own unit.
    let folded = |w: &str| run_ok(dir.path(), &["flamegraph", "--folded", "--weight", w]).0;
    assert_eq!(
        folded("retire-latency"),
        "app;[kernel.kallsyms];hot_a 30\napp;[kernel.kallsyms];hot_b 5\n"
    );
    assert_eq!(
        folded("samples"),
        "app;[kernel.kallsyms];hot_a 2\napp;[kernel.kallsyms];hot_b 1\n"
    );
    assert_eq!(
        folded("period"),
        "app;[kernel.kallsyms];hot_a 200\napp;[kernel.kallsyms];hot_b 300\n"
    );
    // hrec report --folded gives the same collapsed stacks (samples).
    assert_eq!(
        run_ok(dir.path(), &["report", "--folded"]).0,
        folded("samples")
    );

    // TopDown colours: hot_a is 60% Retiring (green), hot_b 60% Backend Bound (blue), each
    // 0.5 + 0.5 * (60 - 25) / 75 of the way from white to the base colour; the tooltip has
    // the four shares. Units and the legend are in the SVG.
    run_ok(
        dir.path(),
        &[
            "flamegraph",
            "--color",
            "topdown",
            "--weight",
            "retire-latency",
            "-o",
            "td.svg",
        ],
    );
    let svg = std::fs::read_to_string(dir.path().join("td.svg")).unwrap();
    let t = 0.5 + 0.5 * 35.0 / 75.0;
    let mix = |c: f64| (255.0 - (255.0 - c) * t).round() as u8;
    let green = format!("rgb({},{},{})", mix(46.0), mix(139.0), mix(87.0));
    let blue = format!("rgb({},{},{})", mix(31.0), mix(119.0), mix(180.0));
    assert_eq!(
        (green.as_str(), blue.as_str()),
        ("rgb(102,170,132)", "rgb(91,155,200)")
    );
    let frame = |name: &str| {
        let at = svg
            .find(&format!("<title>{name}"))
            .unwrap_or_else(|| panic!("{name}: {svg}"));
        svg[at..(at + 600).min(svg.len())].to_string()
    };
    let a = frame(
        "hot_a: TopDown Retiring 60.0%, Bad Speculation 10.0%, Frontend Bound 10.0%, Backend Bound 20.0%",
    );
    assert!(a.contains(&format!("fill=\"{green}\"")), "{a}");
    let b = frame(
        "hot_b: TopDown Retiring 10.0%, Bad Speculation 10.0%, Frontend Bound 20.0%, Backend Bound 60.0%",
    );
    assert!(b.contains(&format!("fill=\"{blue}\"")), "{b}");
    assert!(svg.contains("retire-cycles"), "count name");
    // In a real browser: search covers hot_a's 30 of the 35 retire cycles; a click on hot_b
    // zooms it to the full width.
    if let Some(chromium) = support::browser::chromium() {
        let url = format!("file://{}?s=hot_a", dir.path().join("td.svg").display());
        let dom = support::browser::dom_after_scripts(chromium, &url);
        let matched = support::browser::matched_percent(&dom);
        assert!((matched - 100.0 * 30.0 / 35.0).abs() < 0.06, "{matched}");
        let dom = support::browser::zoom_by_click(chromium, &svg, "hot_b:", dir.path());
        let at = dom.find("<title>hot_b").expect("hot_b's frame");
        let rect = &dom[at..];
        let rect = &rect[rect.find("<rect").unwrap()..];
        let rect = &rect[..rect.find('>').unwrap()];
        let width: f64 = support::browser::attr(rect, "width")
            .trim_end_matches('%')
            .parse()
            .unwrap();
        assert!(
            width > 99.0,
            "hot_b is not zoomed to the full width: {rect}"
        );
        let a = dom.find("<title>hot_a").map(|i| &dom[..i]).unwrap_or("");
        let a_class = a.rsplit("<g").next().unwrap_or("");
        assert!(
            a_class.contains("hide"),
            "hot_a is not hidden after zooming into hot_b"
        );
        assert!(!support::browser::unzoom_button(&dom).contains("hide"));
    } else {
        eprintln!(
            "skipped the browser check: no chromium (scripts/test installs Debian's when it can)"
        );
    }
    assert!(
        svg.contains("Retiring green, Bad Speculation red"),
        "legend"
    );
    assert!(svg.contains("no callchains in the recording"), "subtitle");
}

#[test]
fn flamegraph_event_choice_and_errors() {
    let mut s = Synth::new(
        "alderlake",
        true,
        |pmu| if pmu == "cpu_atom" { 16 } else { 0 },
    );
    let core = s.sampler(Some("cpu_core"));
    let atom = s.sampler(Some("cpu_atom"));
    s.sample(core, 500, HOT_A, 3000, Some(RETIRING), 12);
    s.sample(atom, 501, HOT_B, 1000, None, 0);
    let dir = tempfile::tempdir().unwrap();
    s.write(dir.path());
    // Several events and none named: the first is drawn and the others are listed.
    let (out, err) = run_ok(dir.path(), &["flamegraph", "--folded"]);
    assert_eq!(out, "app;[kernel.kallsyms];hot_a 1\n");
    assert!(
        err.contains("has 2 events (cpu_core/cycles/P, cpu_atom/cycles/P); drawing cpu_core/cycles/P (choose with --event)"),
        "{err}"
    );
    let (out, _) = run_ok(
        dir.path(),
        &["flamegraph", "--folded", "--event", "cpu_atom/cycles/P"],
    );
    assert_eq!(out, "app;[kernel.kallsyms];hot_b 1\n");
    // Errors: one line each, naming what exists or why.
    for (args, want) in [
        (
            &["--event", "nope"][..],
            "no event \"nope\" in the recording; it has: cpu_core/cycles/P, cpu_atom/cycles/P",
        ),
        (
            &["--event", "cpu_atom/cycles/P", "--weight", "retire-latency"][..],
            "cannot weight by retire latency: event cpu_atom/cycles/P has none (every latency is zero",
        ),
    ] {
        let mut v = vec!["flamegraph", "--folded"];
        v.extend_from_slice(args);
        let o = hrec_in(dir.path(), &v);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{err}");
    }
}

#[test]
fn pprof_export_has_a_column_per_event_and_the_retire_latency_sum() {
    // Hybrid: cpu_core samples with retire latencies, cpu_atom samples whose latencies are all
    // zero (none): the latency column holds only cpu_core's, and each event has its column.
    let mut s = Synth::new(
        "alderlake",
        true,
        |pmu| if pmu == "cpu_atom" { 16 } else { 0 },
    );
    let core = s.sampler(Some("cpu_core"));
    let atom = s.sampler(Some("cpu_atom"));
    s.sample(core, 500, HOT_A, 3000, Some(RETIRING), 12);
    s.sample(core, 500, HOT_A, 3000, Some(RETIRING), 14);
    s.sample(core, 500, HOT_B, 3000, Some(CORE_BOUND), 16);
    s.sample(atom, 501, HOT_A, 1000, None, 0);
    for _ in 0..3 {
        s.sample(atom, 501, HOT_B, 1000, None, 0);
    }
    let dir = tempfile::tempdir().unwrap();
    s.write(dir.path());
    run_ok(
        dir.path(),
        &["export", "--format", "pprof", "-o", "p.pb.gz"],
    );
    let pb = support::read_pprof(&dir.path().join("p.pb.gz"));
    let st = |i: i64| pb.string_table[i as usize].as_str();
    let types: Vec<(&str, &str)> = pb
        .sample_type
        .iter()
        .map(|v| (st(v.r#type), st(v.unit)))
        .collect();
    assert_eq!(
        types,
        [
            ("cpu_core/cycles/P", "count"),
            ("cpu_atom/cycles/P", "count"),
            ("samples", "count"),
            ("retire-latency", "cycles")
        ]
    );
    let total = |c: usize| pb.sample.iter().map(|x| x.value[c]).sum::<i64>();
    assert_eq!([0, 1, 2, 3].map(total), [9000, 4000, 7, 42]);
    // The report says the same.
    let j = report_json(dir.path(), &["--sort", "sym"]);
    let core_json = j["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "cpu_core/cycles/P")
        .unwrap();
    assert_eq!(core_json["retire_latency"]["total"], 42);
    // Per symbol: hot_a's location carries 26 cycles of cpu_core's latency.
    let loc_of = |sym: &str| {
        pb.location
            .iter()
            .find(|l| {
                let f = &pb.function[l.line[0].function_id as usize - 1];
                st(f.name) == sym
            })
            .unwrap_or_else(|| panic!("no location {sym}"))
            .id
    };
    let lat_at = |sym: &str| {
        pb.sample
            .iter()
            .filter(|x| x.location_id == [loc_of(sym)])
            .map(|x| x.value[3])
            .sum::<i64>()
    };
    assert_eq!((lat_at("hot_a"), lat_at("hot_b")), (26, 16));
    // The kernel mapping; labels with the thread.
    assert_eq!(st(pb.mapping[0].filename), "[kernel.kallsyms]");
    let keys: Vec<&str> = pb.sample[0].label.iter().map(|l| st(l.key)).collect();
    assert_eq!(&keys[..4], ["event", "comm", "pid", "tid"]);
}

/// `hrec annotate` on a synthetic recording of user code: samples at three instructions of a
/// real gcc -O2 function (mapped by an MMAP2), with retire latencies and TopDown group reads:
/// per-instruction latency statistics and per-block TopDown fractions, exactly.
#[test]
fn annotate_attributes_latency_per_instruction_and_topdown_per_block() {
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = support::stacks::build(dir.path(), "annotate/three.c", &[]) else {
        return;
    };
    // The function's instructions from objdump: the entry, and the loop's head (the target of
    // its backward jump) and the instruction after it.
    let dump = std::process::Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(&prog)
        .output()
        .unwrap();
    let dump = String::from_utf8_lossy(&dump.stdout);
    let body: Vec<(u64, &str)> = dump
        .split("<mul_chain>:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let (a, text) = l.trim().split_once(":\t")?;
            Some((u64::from_str_radix(a, 16).ok()?, text))
        })
        .collect();
    let entry = body[0].0;
    let head = body
        .iter()
        .filter_map(|(_, t)| t.strip_prefix("jne"))
        .filter_map(|t| u64::from_str_radix(t.split_whitespace().next()?, 16).ok())
        .next()
        .expect("mul_chain's loop");
    let next = body[body.iter().position(|(a, _)| *a == head).unwrap() + 1].0;

    const BASE: u64 = 0x5555_5555_0000;
    let mut s = Synth::new("sapphirerapids", true, |_| 0);
    let c = s.sampler(None);
    let enc = s.enc(c);
    let sid = SampleId {
        pid: 500,
        tid: 500,
        time: 2,
        id: id(c),
        ..SampleId::default()
    };
    s.records.extend(enc.mmap2(
        &sid,
        &support::encode::Mmap2Fields {
            misc: 2,
            pid: 500,
            tid: 500,
            addr: BASE,
            len: 0x4000,
            pgoff: 0,
            file: support::encode::Mmap2File::Inode {
                maj: 0,
                min: 0,
                ino: 1,
                ino_generation: 0,
            },
            prot: 5,
            flags: 2,
            filename: prog.to_str().unwrap().as_bytes().to_vec(),
        },
    ));
    const FRONT: Td = [1000, 100, 100, 700, 100, 50, 50, 500, 50];
    for (at, lat, td) in [
        (head, 10, RETIRING),
        (head, 20, RETIRING),
        (head, 30, CORE_BOUND),
        (next, 100, CORE_BOUND),
        (next, 0, RETIRING),
        (entry, 5, FRONT),
    ] {
        s.user_sample(c, 500, BASE + at, 100, Some(td), lat);
    }
    s.write(dir.path());
    let o = hrec_in(dir.path(), &["annotate", "--json", "mul_chain"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    let f = &j["symbols"][0];
    let insn = |a: u64| {
        f["instructions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["address"].as_u64() == Some(a))
            .unwrap()
            .clone()
    };
    let stats = |a: u64| {
        let l = &insn(a)["retire_latency"];
        (
            l["count"].as_u64().unwrap(),
            l["mean"].as_f64().unwrap(),
            l["p90"].as_u64().unwrap(),
            l["max"].as_u64().unwrap(),
        )
    };
    assert_eq!(stats(head), (3, 20.0, 30, 30));
    assert_eq!(stats(next), (2, 50.0, 100, 100), "a zero latency counts");
    assert_eq!(stats(entry), (1, 5.0, 5, 5));
    assert_eq!(insn(head)["samples"], 3);
    // Blocks: the entry's, and the loop's (head and next), each with its samples' deltas.
    let block = |a: u64| {
        f["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["start"].as_u64().unwrap() <= a && a < b["end"].as_u64().unwrap())
            .unwrap()
            .clone()
    };
    let l1 = |tds: &[Td]| -> Vec<f64> {
        let sum: u64 = tds.iter().map(|t| t[1] + t[2] + t[3] + t[4]).sum();
        (1..5)
            .map(|k| 100.0 * tds.iter().map(|t| t[k]).sum::<u64>() as f64 / sum as f64)
            .collect()
    };
    let got = |b: &Value| -> Vec<f64> {
        b["topdown_l1"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let lp = block(head);
    assert_eq!(lp, block(next), "head and next share the loop's block");
    assert_eq!(lp["samples"], 5);
    assert_eq!(
        got(&lp),
        l1(&[RETIRING, RETIRING, CORE_BOUND, CORE_BOUND, RETIRING])
    );
    assert_eq!(got(&block(entry)), l1(&[FRONT]));
    // The text shows the same, with a histogram of the hottest instruction's latencies.
    let o = hrec_in(dir.path(), &["annotate", "mul_chain"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("# retire lat n=3 mean=20.0 p90=30 max=30"),
        "{out}"
    );
    assert!(out.contains("TopDown per basic block"), "{out}");
}

/// An ELF core image of memory, as `/proc/kcore` is: one `PT_LOAD` holding `code` at the
/// virtual address `vaddr`.
fn core_image(vaddr: u64, code: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0"); // 64-bit, little-endian
    b.extend_from_slice(&4u16.to_le_bytes()); // ET_CORE
    b.extend_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes()); // e_entry
    b.extend_from_slice(&64u64.to_le_bytes()); // e_phoff
    b.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    b.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    for v in [64u16, 56, 1, 64, 0, 0] {
        // e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
        b.extend_from_slice(&v.to_le_bytes());
    }
    let offset = 0x1000u64;
    b.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
    b.extend_from_slice(&5u32.to_le_bytes()); // R|X
    for v in [
        offset,
        vaddr,
        0,
        code.len() as u64,
        code.len() as u64,
        0x1000,
    ] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.resize(offset as usize, 0);
    b.extend_from_slice(code);
    b
}

/// Kernel functions are read from `/proc/kcore` (here a core image in a stand-in `/proc`),
/// their ends from the next kernel symbol; without it they are one line.
#[test]
fn annotate_reads_kernel_code_from_kcore() {
    let mut s = Synth::new("sapphirerapids", true, |_| 0);
    let c = s.sampler(None);
    s.sample(c, 500, HOT_A, 100, Some(RETIRING), 7);
    s.sample(c, 500, HOT_A, 100, Some(RETIRING), 9);
    let dir = tempfile::tempdir().unwrap();
    s.write(dir.path());
    // hot_a (0xffffffff81001000, up to hot_b) : `push %rbp; mov %rsp,%rbp; ...` with the
    // sampled address 0x10 bytes in, then int3 padding.
    let mut code = vec![0x55, 0x48, 0x89, 0xe5];
    code.resize(0x10, 0x90);
    code.extend_from_slice(&[0x48, 0x01, 0xd8]); // add %rbx,%rax at HOT_A
    code.resize(0x2000, 0xcc);
    let proc = dir.path().join("proc");
    std::fs::create_dir(&proc).unwrap();
    std::fs::write(proc.join("kcore"), core_image(0xffff_ffff_8100_1000, &code)).unwrap();
    let run = |procfs: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_hrec"))
            .args(["annotate", "--json", "hot_a"])
            .current_dir(dir.path())
            .env("HREC_PROCFS_ROOT", procfs)
            .output()
            .unwrap()
    };
    let o = run(&proc);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    let f = &j["symbols"][0];
    assert_eq!(f["start"].as_u64(), Some(0xffff_ffff_8100_1000));
    assert_eq!(f["size"].as_u64(), Some(0x1000), "up to hot_b");
    let insns = f["instructions"].as_array().unwrap();
    assert_eq!(insns[0]["text"], "push   %rbp");
    let hot = insns
        .iter()
        .find(|i| i["address"].as_u64() == Some(HOT_A))
        .unwrap();
    assert_eq!(hot["text"], "add    %rbx,%rax");
    assert_eq!(hot["samples"], 2);
    assert_eq!(hot["retire_latency"]["max"], 9);
    // Without a readable kcore: one line.
    let o = run(&dir.path().join("nothing"));
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("hot_a")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("/proc/kcore"), "{err}");
}

/// Samples whose IPs are inside instructions (the bytes decoded from another start, or the
/// file changed since) are on the instruction that holds them, with everything they carry:
/// annotate's per-instruction retire-latency counts add up to report's per-function count,
/// and its blocks' TopDown slots to report's per-function TopDown. The code is known bytes in
/// a stand-in `/proc/kcore` (no compiler), the samples' IPs chosen against them.
#[test]
fn annotate_moves_samples_inside_instructions_whole_and_agrees_with_report() {
    const A: u64 = 0xffff_ffff_8100_1000; // hot_a, up to hot_b
    const B: u64 = 0xffff_ffff_8100_2000; // hot_b, up to after_b
    #[rustfmt::skip]
    let hot_a: &[u8] = &[
        0x55,                   // 00 push %rbp
        0x48, 0x89, 0xe5,       // 01 mov %rsp,%rbp
        0x48, 0x8b, 0x07,       // 04 mov (%rdi),%rax     (the loop's head)
        0x48, 0x01, 0xd8,       // 07 add %rbx,%rax
        0x48, 0xff, 0xc9,       // 0a dec %rcx
        0x75, 0xf5,             // 0d jne 04
        0x5d,                   // 0f pop %rbp
        0xc3,                   // 10 ret
    ];
    #[rustfmt::skip]
    let hot_b: &[u8] = &[
        0x48, 0xb8, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // 00 movabs $..,%rax
        0x48, 0x0f, 0xaf, 0xc1, // 0a imul %rcx,%rax
        0xc3,                   // 0e ret
    ];
    let mut code = hot_a.to_vec();
    code.resize(0x1000, 0xcc);
    code.extend_from_slice(hot_b);
    code.resize(0x2000, 0xcc);
    const FRONT: Td = [1000, 100, 100, 700, 100, 50, 50, 500, 50];
    // (IP, retire latency, TopDown delta); `true`: the IP is inside an instruction.
    let samples: [(u64, u64, Td, bool); 12] = [
        (A, 4, RETIRING, false),
        (A + 0x02, 6, RETIRING, true), // in mov %rsp,%rbp (01)
        (A + 0x04, 30, CORE_BOUND, false),
        (A + 0x05, 50, CORE_BOUND, true), // in mov (%rdi),%rax (04)
        (A + 0x06, 0, CORE_BOUND, true),  // there too; a zero latency counts
        (A + 0x09, 12, RETIRING, true),   // in add (07)
        (A + 0x0e, 8, FRONT, true),       // in jne (0d)
        (A + 0x10, 2, RETIRING, false),
        (B, 20, RETIRING, false),
        (B + 0x03, 100, CORE_BOUND, true), // in movabs (00)
        (B + 0x09, 60, CORE_BOUND, true),  // its last byte
        (B + 0x0c, 10, FRONT, true),       // in imul (0a)
    ];
    let mut s = Synth::new("sapphirerapids", true, |_| 0);
    let c = s.sampler(None);
    for &(ip, lat, td, _) in &samples {
        s.sample(c, 500, ip, 100, Some(td), lat);
    }
    let dir = tempfile::tempdir().unwrap();
    s.write(dir.path());
    let proc = dir.path().join("proc");
    std::fs::create_dir(&proc).unwrap();
    std::fs::write(proc.join("kcore"), core_image(A, &code)).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_hrec"))
        .args(["annotate", "--json", "hot_a", "hot_b"])
        .current_dir(dir.path())
        .env("HREC_PROCFS_ROOT", &proc)
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("warning"), "nothing left out: {err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    let func = |name: &str| {
        j["symbols"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {j:#}"))
            .clone()
    };
    let (fa, fb) = (func("hot_a"), func("hot_b"));
    let addrs = |f: &Value| -> Vec<u64> {
        f["instructions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["address"].as_u64().unwrap())
            .collect()
    };
    // The code decodes as written, so the IPs marked inside are no instruction's start.
    let starts_a = [0x00, 0x01, 0x04, 0x07, 0x0a, 0x0d, 0x0f, 0x10].map(|o| A + o);
    let starts_b = [0x00, 0x0a, 0x0e].map(|o| B + o);
    assert_eq!(addrs(&fa)[..8], starts_a);
    assert_eq!(addrs(&fb)[..3], starts_b);
    for &(ip, _, _, inside) in &samples {
        assert_eq!(
            !addrs(&fa).contains(&ip) && !addrs(&fb).contains(&ip),
            inside,
            "{ip:x}"
        );
    }
    // Each instruction: (samples, latency count, latency total) of the IPs it holds.
    let insn = |f: &Value, a: u64| {
        let i = f["instructions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["address"].as_u64() == Some(a))
            .unwrap()
            .clone();
        let l = &i["retire_latency"];
        (
            i["samples"].as_u64().unwrap(),
            l["count"].as_u64().unwrap_or(0),
            l["total"].as_u64().unwrap_or(0),
        )
    };
    let want_a = [
        (1, 1, 4),
        (1, 1, 6),
        (3, 3, 80),
        (1, 1, 12),
        (0, 0, 0),
        (1, 1, 8),
    ];
    for (a, w) in starts_a.iter().zip(want_a) {
        assert_eq!(insn(&fa, *a), w, "{a:x}");
    }
    assert_eq!(insn(&fa, A + 0x10), (1, 1, 2));
    assert_eq!(insn(&fb, B), (3, 3, 180));
    assert_eq!(insn(&fb, B + 0x0a), (1, 1, 10));
    assert_eq!(insn(&fb, B + 0x0e), (0, 0, 0));

    // Summed per function, they are report's numbers.
    let j = report_json(dir.path(), &["--sort", "sym"]);
    let t = &j["events"][0];
    for (name, f, n) in [("hot_a", &fa, 8), ("hot_b", &fb, 4)] {
        let r = row(t, name);
        let sum = |k: &dyn Fn(&Value) -> u64| -> u64 {
            f["instructions"].as_array().unwrap().iter().map(k).sum()
        };
        let lat_count = sum(&|i| i["retire_latency"]["count"].as_u64().unwrap_or(0));
        let lat_total = sum(&|i| i["retire_latency"]["total"].as_u64().unwrap_or(0));
        assert_eq!(r["retire_latency"]["count"], n, "{name}");
        assert_eq!(lat_count, n, "{name}: annotate's latency count");
        assert_eq!(
            lat_total,
            r["retire_latency"]["total"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(sum(&|i| i["samples"].as_u64().unwrap()), n, "{name}");
        assert_eq!(f["samples"], n, "{name}");
        assert_eq!(r["samples"], n, "{name}");
        assert!(f.get("outside_samples").is_none(), "{f}");
        // TopDown: the blocks' slots add up to the function's, and their level 1 weighed by
        // them is the function's.
        let blocks = f["blocks"].as_array().unwrap();
        let slots: u64 = blocks
            .iter()
            .map(|b| b["topdown_slots"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(slots, 1000 * n, "{name}");
        assert_eq!(r["topdown"]["slots"], slots, "{name}");
        let weighed: Vec<f64> = (0..4)
            .map(|k| {
                blocks
                    .iter()
                    .filter(|b| b["topdown_slots"].is_u64())
                    .map(|b| {
                        b["topdown_l1"][k].as_f64().unwrap()
                            * b["topdown_slots"].as_u64().unwrap() as f64
                    })
                    .sum::<f64>()
                    / slots as f64
            })
            .collect();
        let report = l1(r);
        assert!(
            weighed
                .iter()
                .zip(report)
                .all(|(a, b)| (a - b).abs() < 1e-6),
            "{name}: annotate {weighed:?}, report {report:?}"
        );
        // And both are the truth of the samples' deltas.
        let tds: Vec<Td> = samples
            .iter()
            .filter(|e| (e.0 & !0xfff) == f["start"].as_u64().unwrap())
            .map(|e| e.2)
            .collect();
        let sum: u64 = tds.iter().map(|t| t[1] + t[2] + t[3] + t[4]).sum();
        for (k, r) in report.iter().enumerate() {
            let truth = 100.0 * tds.iter().map(|t| t[k + 1]).sum::<u64>() as f64 / sum as f64;
            assert!((r - truth).abs() < 1e-6, "{name}: {report:?}");
        }
    }
    // hot_a's loop block (04-0f) holds the IPs inside its instructions.
    let lp = fa["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["start"].as_u64() == Some(A + 0x04))
        .unwrap();
    assert_eq!(lp["end"].as_u64(), Some(A + 0x0f));
    assert_eq!(
        (&lp["samples"], &lp["topdown_slots"]),
        (&5.into(), &5000.into())
    );
}

/// Two functions of one name (static functions of different sources, as the kernel has many)
/// are two functions, each with its own samples and latencies: none of their samples is lost
/// between them.
#[test]
fn annotate_tells_apart_functions_of_one_name() {
    const KALLSYMS_TWICE: &str = "\
ffffffff81000000 T _text
ffffffff81001000 t twice
ffffffff81002000 t twice
ffffffff81003000 T after
";
    const A: u64 = 0xffff_ffff_8100_1000;
    const B: u64 = 0xffff_ffff_8100_2000;
    let mut s = Synth::new("sapphirerapids", true, |_| 0);
    let c = s.sampler(None);
    // The later one first: its start is the one seen first.
    s.sample(c, 500, B + 1, 100, Some(CORE_BOUND), 9);
    s.sample(c, 500, A, 100, Some(RETIRING), 5);
    s.sample(c, 500, A + 1, 100, Some(RETIRING), 7);
    let dir = tempfile::tempdir().unwrap();
    s.write_with(dir.path(), KALLSYMS_TWICE);
    // Each: `push %rbp; mov %rsp,%rbp; ret`, then int3 padding.
    let mut code = Vec::new();
    for _ in 0..2 {
        code.extend_from_slice(&[0x55, 0x48, 0x89, 0xe5, 0xc3]);
        code.resize(code.len().next_multiple_of(0x1000), 0xcc);
    }
    let proc = dir.path().join("proc");
    std::fs::create_dir(&proc).unwrap();
    std::fs::write(proc.join("kcore"), core_image(A, &code)).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_hrec"))
        .args(["annotate", "--json", "twice"])
        .current_dir(dir.path())
        .env("HREC_PROCFS_ROOT", &proc)
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("warning"), "nothing left out: {err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    let got: Vec<(u64, u64, u64, u64)> = j["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let i = &f["instructions"][1]; // mov %rsp,%rbp, which holds start + 1
            (
                f["start"].as_u64().unwrap(),
                f["samples"].as_u64().unwrap(),
                i["samples"].as_u64().unwrap(),
                i["retire_latency"]["count"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(got, [(A, 2, 1, 1), (B, 1, 1, 1)], "{out}");
}

/// `hrec export --format firefox` of a hybrid recording with retire latencies, TopDown group
/// reads, a LOST record and a throttled interval: a thread per event, weights the periods,
/// the retire latencies and the level-1 slot deltas as counters, and the markers on the
/// thread of their records.
#[test]
fn firefox_export_has_a_thread_per_event_counters_and_markers() {
    let mut s = Synth::new(
        "alderlake",
        true,
        |pmu| if pmu == "cpu_atom" { 16 } else { 0 },
    );
    let core = s.sampler(Some("cpu_core"));
    let atom = s.sampler(Some("cpu_atom"));
    s.sample(core, 500, HOT_A, 3000, Some(RETIRING), 12);
    s.sample(core, 500, HOT_A, 3000, Some(RETIRING), 14);
    // Sample times are 1 + 1000 k: the records between the second and third samples.
    let enc = s.enc(core);
    let sid = |time: u64| SampleId {
        pid: 500,
        tid: 500,
        time,
        id: id(core),
        ..SampleId::default()
    };
    let t = s.time;
    s.records.extend(enc.lost(&sid(t + 100), id(core), 7));
    s.records
        .extend(enc.throttle(&sid(t + 200), false, t + 200, id(core), id(core)));
    s.records
        .extend(enc.throttle(&sid(t + 700), true, t + 700, id(core), id(core)));
    s.sample(core, 500, HOT_B, 3000, Some(CORE_BOUND), 16);
    s.sample(atom, 501, HOT_A, 1000, None, 0);
    for _ in 0..3 {
        s.sample(atom, 501, HOT_B, 1000, None, 0);
    }
    let dir = tempfile::tempdir().unwrap();
    s.write(dir.path());
    let (_, err) = run_ok(
        dir.path(),
        &["export", "--format", "firefox", "-o", "p.json.gz"],
    );
    assert!(
        err.contains("7 samples in 2 threads of 1 processes, 2 markers"),
        "{err}"
    );
    let j = support::read_firefox(&dir.path().join("p.json.gz"));
    let threads = support::check_processed_profile(&j);
    let by_name = |n: &str| {
        threads
            .iter()
            .find(|t| t.name == n)
            .unwrap_or_else(|| panic!("no thread {n}: {threads:?}"))
    };
    // The format names a main thread by its process: the main thread's first track.
    let c = by_name("app");
    let a = by_name("app [cpu_atom/cycles/P]");
    assert_eq!((c.tid.as_str(), a.tid.as_str()), ("500", "501"));
    assert_eq!(c.weights, [3000, 3000, 3000]);
    assert_eq!(a.weights, [1000; 4]);
    let leaves =
        |t: &support::FxThread| -> Vec<String> { t.stacks.iter().map(|s| s[0].clone()).collect() };
    assert_eq!(leaves(c), ["hot_a", "hot_a", "hot_b"]);
    assert_eq!(leaves(a), ["hot_a", "hot_b", "hot_b", "hot_b"]);
    // Times in ms from the first sample (1 µs apart); cycles are not time, so the CPU delta
    // is the time since the thread's previous sample of the event (µs).
    assert_eq!(c.times, [0.0, 0.001, 0.002]);
    assert_eq!(c.cpu_deltas, [0.0, 1.0, 1.0]);
    assert_eq!(a.cpu_deltas, [0.0, 1.0, 1.0, 1.0]);
    // Markers on thread 500's track: the lost samples, the throttled interval.
    let names: Vec<&str> = c.markers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["Lost samples", "Throttled"]);
    assert_eq!(c.markers[0].1["lost"].as_f64(), Some(7.0));
    assert!(a.markers.is_empty());
    // At the records' times, from the first sample (time 1001): lost at 2101, throttled
    // from 2201 to 2701.
    let m = &j["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "app")
        .unwrap()["markers"];
    let ms = |v: &Value| v.as_f64().map(|x| (x * 1e6).round() as i64);
    assert_eq!(ms(&m["startTime"][0]), Some(1100));
    assert_eq!(ms(&m["startTime"][1]), Some(1200));
    assert_eq!(ms(&m["endTime"][1]), Some(1700));
    // Counters: retire latency (cpu_core's; cpu_atom's are all zero, so it has none) and the
    // four level-1 slot deltas of each cpu_core sample.
    let counters = j["counters"].as_array().unwrap();
    let counter = |n: &str| -> Vec<f64> {
        let c = counters
            .iter()
            .find(|c| c["name"] == n)
            .unwrap_or_else(|| panic!("no counter {n}"));
        assert_eq!(c["pid"], "500");
        c["samples"]["count"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    assert_eq!(counter("retire latency"), [12.0, 14.0, 16.0]);
    let td = |i: usize| [RETIRING[i], RETIRING[i], CORE_BOUND[i]].map(|v| v as f64);
    assert_eq!(counter("topdown retiring"), td(1));
    assert_eq!(counter("topdown bad-spec"), td(2));
    assert_eq!(counter("topdown fe-bound"), td(3));
    assert_eq!(counter("topdown be-bound"), td(4));
    // The slots the shares are of: on this P-core the sum of the four.
    assert_eq!(counter("topdown slots"), [1000.0; 3]);
}

/// The exports of E-core TopDown. Firefox: per event with TopDown its own five counters (a
/// hybrid part's P-core and E-core slots follow different rules, so they are not summed),
/// Gracemont's Bad Speculation the remainder (it is not counted: the four add up to the
/// slots), Skymont's counted (they need not); a range's shares, each counter's increase over
/// the slots counter's, are the report's level 1. pprof: a column per sampling event, none
/// for the group's counted members, and no TopDown.
#[test]
fn exports_carry_ecore_topdown_by_each_cores_formula() {
    let td = |ret, bad, fe, be| Some([0, ret, bad, fe, be, 0, 0, 0, 0]);
    let dir = tempfile::tempdir().unwrap();
    let mut s = Synth::ecore("alderlake", |pmu| if pmu == "cpu_atom" { 16 } else { 0 });
    let (core, atom) = (s.sampler(Some("cpu_core")), s.sampler(Some("cpu_atom")));
    s.sample(core, 500, HOT_A, 3000, Some(RETIRING), 0);
    // 1000 cycles = 5000 Gracemont slots each; Bad Speculation 500, 700, 500.
    s.sample(atom, 501, HOT_A, 1000, td(2000, 0, 1000, 1500), 0);
    s.sample(core, 500, HOT_B, 3000, Some(CORE_BOUND), 0);
    s.sample(atom, 501, HOT_A, 1000, td(2200, 0, 600, 1500), 0);
    s.sample(atom, 501, HOT_B, 1000, td(500, 0, 500, 3500), 0);
    s.write(dir.path());
    run_ok(
        dir.path(),
        &["export", "--format", "firefox", "-o", "p.json.gz"],
    );
    let j = support::read_firefox(&dir.path().join("p.json.gz"));
    support::check_processed_profile(&j);
    let counter = |n: &str| -> Vec<f64> {
        j["counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == n)
            .unwrap_or_else(|| panic!("no counter {n}: {:#}", j["counters"]))["samples"]["count"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let cats = ["retiring", "bad-spec", "fe-bound", "be-bound", "slots"];
    let of = |event: &str| cats.map(|c| counter(&format!("topdown {c} [{event}]")));
    let [ret, bad, fe, be, slots] = of("cpu_atom/cycles/P");
    assert_eq!(ret, [2000.0, 2200.0, 500.0]);
    assert_eq!(bad, [500.0, 700.0, 500.0]);
    assert_eq!(fe, [1000.0, 600.0, 500.0]);
    assert_eq!(be, [1500.0, 1500.0, 3500.0]);
    assert_eq!(slots, [5000.0; 3]);
    let [ret, bad, fe, be, slots] = of("cpu_core/cycles/P");
    assert_eq!(ret, [600.0, 100.0]);
    assert_eq!(bad, [100.0, 100.0]);
    assert_eq!(fe, [100.0, 200.0]);
    assert_eq!(be, [200.0, 600.0]);
    assert_eq!(slots, [1000.0; 2]);
    // Over the whole recording, each event's shares are the report's.
    let report = report_json(dir.path(), &["--sort", "sym"]);
    for event in ["cpu_atom/cycles/P", "cpu_core/cycles/P"] {
        let c = of(event).map(|v| v.iter().sum::<f64>());
        let shares: Vec<f64> = c[..4].iter().map(|x| 100.0 * x / c[4]).collect();
        let t = report["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["event"] == event)
            .unwrap();
        let want = l1(t);
        assert!(
            shares.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-6),
            "{event}: {shares:?} against the report's {want:?}"
        );
    }
    // Gracemont's table: slots 15000; RET 4700, Bad 1700, FE 2100, BE 6500.
    let atom_l1 = l1(&report["events"][1]);
    let want = [4700.0, 1700.0, 2100.0, 6500.0].map(|x: f64| (x / 150.0 * 1e6).round() / 1e6);
    assert_eq!(atom_l1, want);

    // pprof: the two samplers' periods, the samples; the counted members are no columns.
    run_ok(
        dir.path(),
        &["export", "--format", "pprof", "-o", "p.pb.gz"],
    );
    let pb = support::read_pprof(&dir.path().join("p.pb.gz"));
    let st = |i: i64| pb.string_table[i as usize].as_str();
    let types: Vec<&str> = pb.sample_type.iter().map(|v| st(v.r#type)).collect();
    assert_eq!(types, ["cpu_core/cycles/P", "cpu_atom/cycles/P", "samples"]);
    let total = |c: usize| pb.sample.iter().map(|x| x.value[c]).sum::<i64>();
    assert_eq!([0, 1, 2].map(total), [6000, 3000, 5]);

    // Lunar Lake's Skymont alone: unsuffixed counters; 1000 cycles = 8000 slots, the four
    // counted add up to 7600: the shares are of the 8000.
    let mut s = Synth::ecore("lunarlake", |pmu| if pmu == "cpu_atom" { 4 } else { 0 });
    let atom = s.sampler(Some("cpu_atom"));
    s.sample(atom, 501, HOT_A, 1000, td(4000, 400, 800, 2400), 0);
    s.write(dir.path());
    run_ok(
        dir.path(),
        &["export", "--format", "firefox", "-o", "l.json.gz"],
    );
    let j = support::read_firefox(&dir.path().join("l.json.gz"));
    let counter = |n: &str| -> Vec<f64> {
        j["counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == n)
            .unwrap_or_else(|| panic!("no counter {n}: {:#}", j["counters"]))["samples"]["count"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let got = cats.map(|c| counter(&format!("topdown {c}"))[0]);
    assert_eq!(got, [4000.0, 400.0, 800.0, 2400.0, 8000.0]);
    let report = report_json(dir.path(), &["--sort", "sym"]);
    let t = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["event"] == "cpu_atom/cycles/P")
        .unwrap();
    assert_eq!(l1(t), [50.0, 5.0, 10.0, 30.0]);
}

/// `hrec annotate` of E-core samples: each basic block's TopDown is Intel's E-core formula of
/// the block's samples (Gracemont: slots 5 x cycles, Bad Speculation the remainder; Skymont:
/// slots 8 x cycles, the four counted), and the blocks weighed by their slots give report's
/// per-function level 1. The code is known bytes in a stand-in `/proc/kcore`.
#[test]
fn annotate_blocks_of_ecore_samples_follow_the_cores_formula() {
    const A: u64 = 0xffff_ffff_8100_1000; // hot_a, up to hot_b
    #[rustfmt::skip]
    let hot_a: &[u8] = &[
        0x55,                   // 00 push %rbp           (entry block)
        0x48, 0x89, 0xe5,       // 01 mov %rsp,%rbp
        0x48, 0x8b, 0x07,       // 04 mov (%rdi),%rax     (the loop's block)
        0x48, 0x01, 0xd8,       // 07 add %rbx,%rax
        0x48, 0xff, 0xc9,       // 0a dec %rcx
        0x75, 0xf5,             // 0d jne 04
        0x5d,                   // 0f pop %rbp            (exit block)
        0xc3,                   // 10 ret
    ];
    let mut code = hot_a.to_vec();
    code.resize(0x2000, 0xcc);
    let td = |ret, bad, fe, be| Some([0, ret, bad, fe, be, 0, 0, 0, 0]);
    // (model, E-core samples: IP, cycles, TopDown deltas; the blocks' shares (entry, loop),
    // the function's).
    type Case = (&'static str, Vec<(u64, u64, Option<Td>)>, [[f64; 4]; 3]);
    let cases: [Case; 2] = [
        (
            "alderlake",
            vec![
                // Entry: 5000 slots; RET 1000, FE 2500, BE 500, Bad 1000.
                (A, 1000, td(1000, 0, 2500, 500)),
                // Loop: 5000 + 3000 slots; RET 4000, FE 1000, BE 2000, Bad 1000.
                (A + 0x04, 1000, td(3000, 0, 500, 1000)),
                (A + 0x07, 600, td(1000, 0, 500, 1000)),
            ],
            [
                [20.0, 20.0, 50.0, 10.0],
                [50.0, 12.5, 12.5, 25.0],
                // hot_a: 13000 slots; RET 5000, Bad 2000, FE 3500, BE 2500.
                [5000.0, 2000.0, 3500.0, 2500.0].map(|x| 100.0 * x / 13000.0),
            ],
        ),
        (
            "lunarlake",
            vec![
                // Entry: 8000 slots; RET 2000, Bad 800, FE 4000, BE 800 (95 %).
                (A, 1000, td(2000, 800, 4000, 800)),
                // Loop: 4000 + 4000 slots; RET 3200, Bad 800, FE 1200, BE 2200.
                (A + 0x04, 500, td(2000, 400, 400, 1000)),
                (A + 0x0d, 500, td(1200, 400, 800, 1200)),
            ],
            [
                [25.0, 10.0, 50.0, 10.0],
                [40.0, 10.0, 15.0, 27.5],
                // hot_a: 16000 slots; RET 5200, Bad 1600, FE 5200, BE 3000.
                [32.5, 10.0, 32.5, 18.75],
            ],
        ),
    ];
    let near = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6);
    for (model, samples, [entry, lp, whole]) in cases {
        // The first E-core: CPU 16 on Alder Lake, 4 on Lunar Lake.
        let first = if model == "alderlake" { 16 } else { 4 };
        let mut s = Synth::ecore(model, |pmu| if pmu == "cpu_atom" { first } else { 0 });
        let (core, atom) = (s.sampler(Some("cpu_core")), s.sampler(Some("cpu_atom")));
        // A P-core sample in the function too: it is another event's, not in these blocks.
        s.sample(core, 500, A + 0x04, 3000, Some(CORE_BOUND), 0);
        for (ip, cycles, d) in samples {
            s.sample(atom, 501, ip, cycles, d, 0);
        }
        let dir = tempfile::tempdir().unwrap();
        s.write(dir.path());
        let proc = dir.path().join("proc");
        std::fs::create_dir(&proc).unwrap();
        std::fs::write(proc.join("kcore"), core_image(A, &code)).unwrap();
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_hrec"))
            .args([
                "annotate",
                "--json",
                "--event",
                "cpu_atom/cycles/P",
                "hot_a",
            ])
            .current_dir(dir.path())
            .env("HREC_PROCFS_ROOT", &proc)
            .output()
            .unwrap();
        let (out, err) = text(&o);
        assert!(o.status.success(), "{model}: {err}");
        let j: Value = serde_json::from_str(&out).unwrap();
        let f = &j["symbols"][0];
        assert_eq!(f["name"], "hot_a", "{model}: {j:#}");
        let blocks = f["blocks"].as_array().unwrap();
        let block = |at: u64| {
            blocks
                .iter()
                .find(|b| b["start"].as_u64() == Some(at))
                .unwrap_or_else(|| panic!("{model}: no block at {at:x}: {f:#}"))
        };
        let shares = |b: &Value| -> Vec<f64> {
            b["topdown_l1"]
                .as_array()
                .unwrap_or_else(|| panic!("{model}: no TopDown in {b:#}"))
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect()
        };
        assert!(near(&shares(block(A)), &entry), "{model} entry: {f:#}");
        assert!(near(&shares(block(A + 0x04)), &lp), "{model} loop: {f:#}");
        assert!(block(A + 0x0f)["topdown_l1"].is_null(), "{model}: {f:#}");
        // The blocks weighed by their slots: the function, as report has it.
        let slots: u64 = blocks
            .iter()
            .map(|b| b["topdown_slots"].as_u64().unwrap_or(0))
            .sum();
        let weighed: Vec<f64> = (0..4)
            .map(|k| {
                blocks
                    .iter()
                    .filter(|b| b["topdown_slots"].is_u64())
                    .map(|b| {
                        shares(b)[k] * b["topdown_slots"].as_u64().unwrap() as f64 / slots as f64
                    })
                    .sum()
            })
            .collect();
        assert!(near(&weighed, &whole), "{model}: {weighed:?}");
        let j = report_json(dir.path(), &["--sort", "sym"]);
        let t = j["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["event"] == "cpu_atom/cycles/P")
            .unwrap();
        let r = row(t, "hot_a");
        assert_eq!(r["topdown"]["slots"], slots, "{model}");
        assert!(near(&l1(r), &whole), "{model}: report {:?}", l1(r));
    }
}

/// `hrec top`'s TopDown columns (driven here through the library: top records live) on an
/// E-core part, Alder Lake-N (Gracemont as `cpu`, the table top shows): each row's level 1 is
/// Intel's formula of its samples, and it stays so within 0.1 point as perf top's 7/8 decay
/// shrinks every count (the slots and the remainder included).
#[test]
fn top_rows_of_ecore_samples_follow_the_cores_formula() {
    use hrec::analysis::hist::{self, HistOptions, SortKey};
    use hrec::analysis::top::{Interval, Live};
    let td = |ret, bad, fe, be| Some([0, ret, bad, fe, be, 0, 0, 0, 0]);
    let mut s = Synth::ecore("alderlake-n", |_| 0);
    let c = s.sampler(None);
    assert_eq!(s.meta.events[c].pmu.as_deref(), Some("cpu"));
    // 1000 cycles = 5000 slots each. hot_a: slots 10000; RET 4200, FE 1600, BE 3000, Bad
    // 1200. hot_b: slots 5000; RET 500, FE 500, BE 3500, Bad 500.
    s.sample(c, 501, HOT_A, 1000, td(2000, 0, 1000, 1500), 0);
    s.sample(c, 501, HOT_A, 1000, td(2200, 0, 600, 1500), 0);
    s.sample(c, 501, HOT_B, 1000, td(500, 0, 500, 3500), 0);
    let dir = tempfile::tempdir().unwrap();
    s.write(dir.path());
    let rec = hrec::recording::Recording::open(&dir.path().join("hrec.data")).unwrap();
    let p = hrec::analysis::replay::build(&rec, &Default::default(), &mut |_| {});
    let sort = [SortKey::Dso, SortKey::Sym];
    let tables = hist::tables(
        &p,
        &HistOptions {
            sort: sort.to_vec(),
            ..HistOptions::default()
        },
    );
    let mut live = Live::new();
    live.add(&tables[0]);
    let status = hrec::output::top::Status {
        event: "4000Hz cycles:P".into(),
        target: "all, 8 CPUs".into(),
    };
    let screen = hrec::output::top::screen(&live, &Interval::default(), &status, &sort, 10);
    let line = |sym: &str| {
        screen
            .lines()
            .find(|l| l.ends_with(&format!("[k] {sym}")))
            .unwrap_or_else(|| panic!("no {sym}: {screen}"))
            .split_whitespace()
            .take(6)
            .collect::<Vec<_>>()
    };
    assert!(
        screen.contains("Retiring  BadSpec  FEBound  BEBound"),
        "{screen}"
    );
    assert_eq!(
        line("hot_a"),
        ["66.67%", "2", "42.0%", "12.0%", "16.0%", "30.0%"]
    );
    assert_eq!(
        line("hot_b"),
        ["33.33%", "1", "10.0%", "10.0%", "10.0%", "70.0%"]
    );
    for _ in 0..5 {
        live.decay();
    }
    let rows = live.rows();
    let a = rows.iter().find(|r| r.0[1] == "[k] hot_a").unwrap().1;
    let l1 = a.td.level1().unwrap();
    assert!(
        l1.iter()
            .zip([42.0, 12.0, 16.0, 30.0])
            .all(|(g, w)| (g - w).abs() < 0.1),
        "{l1:?}"
    );
}

/// Issue 30: E-core TopDown per symbol and per PMU, against Intel's E-core TMA computed by
/// hand. Alder Lake's Gracemont (width 5, Bad Speculation the remainder) beside its P-core
/// slots group, Lunar Lake's Skymont (width 8, four counted categories divided by the slots,
/// not by their sum) and Arrow Lake-H's two E-core PMUs (Skymont and the low-power
/// Crestmont, width 6).
#[test]
fn ecore_topdown_per_symbol_follows_intels_ecore_formulas() {
    // Deltas per sample: [unused slots, retiring, bad-spec, fe-bound, be-bound, ...]; the
    // E-core slots are width x the cycles (the period).
    let td = |ret, bad, fe, be| Some([0, ret, bad, fe, be, 0, 0, 0, 0]);
    let dir = tempfile::tempdir().unwrap();

    // Alder Lake: hot_a 2 samples, hot_b 1, each 1000 cycles = 5000 slots.
    let mut s = Synth::ecore("alderlake", |pmu| if pmu == "cpu_atom" { 16 } else { 0 });
    let (core, atom) = (s.sampler(Some("cpu_core")), s.sampler(Some("cpu_atom")));
    s.sample(core, 500, HOT_A, 3000, Some(RETIRING), 0);
    s.sample(atom, 501, HOT_A, 1000, td(2000, 0, 1000, 1500), 0);
    s.sample(atom, 501, HOT_A, 1000, td(2200, 0, 600, 1500), 0);
    s.sample(atom, 501, HOT_B, 1000, td(500, 0, 500, 3500), 0);
    s.write(dir.path());
    let j = report_json(dir.path(), &["--sort", "sym", "--td-level", "1"]);
    let t = |j: &Value, name: &str| -> Value {
        j["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["event"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name}: {j:#}"))
    };
    // Gracemont hot_a: slots 10000; RET 4200, FE 1600, BE 3000; Bad = 10000 - 8800 = 1200.
    let a = t(&j, "cpu_atom/cycles/P");
    assert_eq!(l1(row(&a, "hot_a")), [42.0, 12.0, 16.0, 30.0]);
    // hot_b: slots 5000; RET 500, FE 500, BE 3500; Bad = 500.
    assert_eq!(l1(row(&a, "hot_b")), [10.0, 10.0, 10.0, 70.0]);
    assert_eq!(row(&a, "hot_a")["topdown"]["slots"], 10000);
    // The P-core group beside it keeps perf's rule.
    assert_eq!(
        l1(row(&t(&j, "cpu_core/cycles/P"), "hot_a")),
        [60.0, 10.0, 10.0, 20.0]
    );
    // The same shares in the flame graph's tooltips.
    run_ok(
        dir.path(),
        &[
            "flamegraph",
            "--color",
            "topdown",
            "--event",
            "cpu_atom/cycles/P",
            "-o",
            "atom.svg",
        ],
    );
    let svg = std::fs::read_to_string(dir.path().join("atom.svg")).unwrap();
    assert!(
        svg.contains("<title>hot_a: TopDown Retiring 42.0%, Bad Speculation 12.0%, Frontend Bound 16.0%, Backend Bound 30.0%"),
        "{svg}"
    );
    std::fs::rename(dir.path().join("hrec.data"), dir.path().join("adl.hrec")).unwrap();

    // Lunar Lake's Skymont: 1000 cycles = 8000 slots; the four add up to 95 %.
    let mut s = Synth::ecore("lunarlake", |pmu| if pmu == "cpu_atom" { 4 } else { 0 });
    let atom = s.sampler(Some("cpu_atom"));
    s.sample(atom, 501, HOT_A, 1000, td(4000, 400, 800, 2400), 0);
    s.sample(atom, 501, HOT_B, 1000, td(800, 800, 4000, 1600), 0);
    s.write(dir.path());
    let j = report_json(dir.path(), &["--sort", "sym"]);
    let a = t(&j, "cpu_atom/cycles/P");
    assert_eq!(l1(row(&a, "hot_a")), [50.0, 5.0, 10.0, 30.0]);
    assert_eq!(l1(row(&a, "hot_b")), [10.0, 10.0, 50.0, 20.0]);
    // diff of the Gracemont file (baseline) with the Skymont one: each side's own shares.
    let (out, _) = run_ok(
        dir.path(),
        &["diff", "adl.hrec", "hrec.data", "--json", "-s", "sym"],
    );
    let d: Value = serde_json::from_str(&out).unwrap();
    let atom = d["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"].as_str().is_some_and(|n| n.contains("cpu_atom")))
        .unwrap_or_else(|| panic!("{d:#}"));
    let r = atom["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"]["sym"] == "[k] hot_a")
        .unwrap_or_else(|| panic!("{atom:#}"));
    let share = |side: &str, k: &str| r[side]["topdown"]["level1"][k].as_f64().unwrap();
    assert_eq!(
        (share("old", "Retiring"), share("new", "Retiring")),
        (42.0, 50.0)
    );
    assert_eq!(
        (
            share("old", "Bad Speculation"),
            share("new", "Bad Speculation")
        ),
        (12.0, 5.0)
    );
    assert!((r["topdown_delta"]["Retiring"].as_f64().unwrap() - 8.0).abs() < 1e-9);

    // Arrow Lake-H: Skymont (width 8) and the low-power Crestmont (width 6) side by side.
    let mut s = Synth::ecore("arrowlake-h", |pmu| match pmu {
        "cpu_atom" => 6,
        "cpu_lowpower" => 14,
        _ => 0,
    });
    let (skt, cmt) = (s.sampler(Some("cpu_atom")), s.sampler(Some("cpu_lowpower")));
    s.sample(skt, 501, HOT_A, 1000, td(4000, 400, 800, 2400), 0);
    s.sample(cmt, 502, HOT_A, 1000, td(3000, 600, 1200, 1200), 0);
    s.write(dir.path());
    let j = report_json(dir.path(), &["--sort", "sym"]);
    assert_eq!(
        l1(row(&t(&j, "cpu_atom/cycles/P"), "hot_a")),
        [50.0, 5.0, 10.0, 30.0]
    );
    assert_eq!(
        l1(row(&t(&j, "cpu_lowpower/cycles/P"), "hot_a")),
        [50.0, 10.0, 20.0, 20.0]
    );
}

/// Level 2 on E-cores is Intel's E-core tree: each counted node over the slots, Resource
/// Bound = Backend Bound - Core Bound, and where IFetch Bandwidth and Machine Clears are not
/// counted (Gracemont and Crestmont, whose counters hold three level-2 events) their parent
/// minus the counted sibling; Skymont counts all five. Report's JSON and text columns use
/// the E-core labels for an E-core table.
#[test]
fn ecore_level2_follows_intels_ecore_tree() {
    // [machine-clears, ret, bad, fe, be, fe-bandwidth, mispredict, fe-latency, alloc].
    let dir = tempfile::tempdir().unwrap();
    let level2 = |v: &Value| -> Vec<(String, f64)> {
        v["topdown"]["level2"]
            .as_object()
            .unwrap_or_else(|| panic!("no level 2: {v:#}"))
            .iter()
            .map(|(k, x)| (k.clone(), (x.as_f64().unwrap() * 1e6).round() / 1e6))
            .collect()
    };
    let want = |v: [f64; 6]| -> Vec<(String, f64)> {
        [
            "Branch Mispredicts",
            "Machine Clears",
            "IFetch Latency",
            "IFetch Bandwidth",
            "Core Bound",
            "Resource Bound",
        ]
        .iter()
        .map(|k| k.to_string())
        .zip(v)
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect()
    };
    // Gracemont with the NMI watchdog off: 2 samples of 1000 cycles = 10000 slots. RET 4000,
    // FE 3000 (latency 2000), BE 2000 (alloc 500), so Bad Speculation is the remainder 1000
    // (mispredicts 600): IFetch Bandwidth 3000 - 2000, Machine Clears 1000 - 600.
    let mut s = Synth::ecore_host("alderlake", false, Some(false), |pmu| {
        if pmu == "cpu_atom" { 16 } else { 0 }
    });
    let atom = s.sampler(Some("cpu_atom"));
    let members = s.plan.events.iter().filter(|e| e.leader == atom).count();
    assert_eq!(members, 7, "cycles, 3 level-1 and 3 level-2 events");
    for _ in 0..2 {
        let td = [0, 2000, 0, 1500, 1000, 0, 300, 1000, 250];
        s.sample(atom, 501, HOT_A, 1000, Some(td), 0);
    }
    s.write(dir.path());
    let j = report_json(dir.path(), &["--sort", "sym", "--td-level", "2"]);
    let table = j["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["event"] == "cpu_atom/cycles/P")
        .unwrap()
        .clone();
    assert_eq!(l1(row(&table, "hot_a")), [40.0, 10.0, 30.0, 20.0]);
    assert_eq!(
        level2(row(&table, "hot_a")),
        want([6.0, 4.0, 20.0, 10.0, 5.0, 15.0])
    );
    let (out, _) = run_ok(
        dir.path(),
        &["report", "--stdio", "--sort", "sym", "--td-level", "2"],
    );
    let atom_part = &out[out.find("cpu_atom/cycles/P").unwrap()..];
    assert!(
        atom_part.contains("#   level 2:  Branch Mispredicts 6.0%  Machine Clears 4.0%  IFetch Latency 20.0%  IFetch Bandwidth 10.0%  Core Bound 5.0%  Resource Bound 15.0%"),
        "{atom_part}"
    );
    let header = atom_part.lines().find(|l| l.contains("Overhead")).unwrap();
    assert!(
        header.contains("BrMisp") && header.contains("ResBnd") && !header.contains("Heavy"),
        "{header}"
    );
    let hot_a = atom_part.lines().find(|l| l.ends_with("hot_a")).unwrap();
    assert!(
        hot_a.contains(" 6.0%* ") && hot_a.contains(" 15.0%* "),
        "{hot_a}"
    );

    // Skymont counts all five: one sample of 1000 cycles = 8000 slots. RET 4000, BS 400
    // (mispredicts 240, clears 160), FE 800 (latency 480, bandwidth 320), BE 2400 (alloc 800).
    let mut s = Synth::ecore("lunarlake", |pmu| if pmu == "cpu_atom" { 4 } else { 0 });
    let atom = s.sampler(Some("cpu_atom"));
    let td = [160, 4000, 400, 800, 2400, 320, 240, 480, 800];
    s.sample(atom, 501, HOT_A, 1000, Some(td), 0);
    s.write(dir.path());
    let j = report_json(dir.path(), &["--sort", "sym", "--td-level", "2"]);
    let table = &j["events"].as_array().unwrap()[..]
        .iter()
        .find(|t| t["event"] == "cpu_atom/cycles/P")
        .unwrap()
        .clone();
    assert_eq!(
        level2(row(table, "hot_a")),
        want([3.0, 2.0, 6.0, 4.0, 10.0, 20.0])
    );
}

/// An E-core group whose members carry the kernel's `topdown-*` alias names (as perf writes
/// them) is read by encoding: Gracemont's aliases are its events. Meteor Lake's retiring alias
/// is Gracemont's code (0xc2), not Crestmont's (0x72): that group gets no TopDown rather
/// than numbers of the wrong event; and without the recording's cpuid no E-core rule is
/// guessed.
#[test]
fn ecore_groups_are_read_by_encoding_not_by_name() {
    let td = |ret, bad, fe, be| Some([0, ret, bad, fe, be, 0, 0, 0, 0]);
    let dir = tempfile::tempdir().unwrap();
    let alias = |s: &mut Synth, pmu: &str| {
        for e in &mut s.meta.events {
            if e.pmu.as_deref() == Some(pmu) && e.role == Role::Counted {
                let n = match e.attr.config & 0xff {
                    0x71 | 0x9c => "topdown-fe-bound",
                    0x73 => "topdown-bad-spec",
                    0x74 | 0xa4 => "topdown-be-bound",
                    _ => "topdown-retiring",
                };
                e.name = format!("{pmu}/{n}/");
            }
        }
    };
    let mut s = Synth::ecore("alderlake", |pmu| if pmu == "cpu_atom" { 16 } else { 0 });
    alias(&mut s, "cpu_atom");
    let atom = s.sampler(Some("cpu_atom"));
    s.sample(atom, 501, HOT_A, 1000, td(2000, 0, 1000, 1500), 0);
    s.write(dir.path());
    let j = report_json(dir.path(), &["--sort", "sym"]);
    let a = &j["events"].as_array().unwrap()[1];
    assert_eq!(a["event"], "cpu_atom/cycles/P");
    assert_eq!(l1(row(a, "hot_a")), [40.0, 10.0, 20.0, 30.0]);

    // Meteor Lake's kernel alias: retiring as event 0xc2 on a Crestmont.
    let mut s = Synth::ecore("meteorlake", |pmu| if pmu == "cpu_atom" { 12 } else { 0 });
    for e in &mut s.meta.events {
        if e.pmu.as_deref() == Some("cpu_atom") && e.attr.config == 0x72 {
            e.attr.config = 0xc2;
        }
    }
    alias(&mut s, "cpu_atom");
    let atom = s.sampler(Some("cpu_atom"));
    s.sample(atom, 501, HOT_A, 1000, td(2000, 600, 1000, 1500), 0);
    s.write(dir.path());
    let j = report_json(dir.path(), &["--sort", "sym"]);
    let a = &j["events"].as_array().unwrap()[1];
    assert!(row(a, "hot_a")["topdown"].is_null(), "{a:#}");
    // And the report says which of Crestmont's events the group lacks.
    assert_eq!(
        a["no_topdown"],
        "the group lacks crestmont's TOPDOWN_RETIRING.ALL (event 0x72, umask 0x0) on cpu_atom \
         (members are known by their encoding, not by their names)",
        "{a:#}"
    );

    // No cpuid in the file: no E-core rules.
    let mut s = Synth::ecore("alderlake", |pmu| if pmu == "cpu_atom" { 16 } else { 0 });
    s.meta.cpuid.clear();
    let atom = s.sampler(Some("cpu_atom"));
    s.sample(atom, 501, HOT_A, 1000, td(2000, 0, 1000, 1500), 0);
    s.write(dir.path());
    let j = report_json(dir.path(), &["--sort", "sym"]);
    let a = &j["events"].as_array().unwrap()[1];
    assert!(row(a, "hot_a")["topdown"].is_null(), "{a:#}");
    assert!(
        a["no_topdown"]
            .as_str()
            .is_some_and(|w| w.contains("(no cpuid)")),
        "{a:#}"
    );
    // The P-core group is known by its names and needs no cpuid: it has no reason.
    assert!(j["events"][0].get("no_topdown").is_none(), "{j:#}");
}

/// Retire latency is shown only for cores that fill it: Meteor Lake's P-core (Timed PEBS) has
/// its statistics; its Crestmont E-core has none even when a record's reserved bits read
/// non-zero, and the report says the core does not fill it rather than showing cycles.
#[test]
fn retire_latency_only_for_cores_with_timed_pebs() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Synth::ecore_with(
        "meteorlake",
        true,
        |pmu| {
            if pmu == "cpu_atom" { 12 } else { 0 }
        },
    );
    let (core, atom) = (s.sampler(Some("cpu_core")), s.sampler(Some("cpu_atom")));
    s.sample(core, 500, HOT_A, 3000, Some(RETIRING), 12);
    s.sample(core, 500, HOT_A, 3000, Some(RETIRING), 16);
    s.sample(atom, 501, HOT_A, 1000, None, 40);
    s.write(dir.path());
    let j = report_json(dir.path(), &["--sort", "sym"]);
    let ev = j["events"].as_array().unwrap();
    let t = |name: &str| ev.iter().find(|t| t["event"] == name).unwrap();
    assert_eq!(t("cpu_core/cycles/P")["retire_latency"]["mean"], 14.0);
    let a = t("cpu_atom/cycles/P");
    assert!(a["retire_latency"].is_null(), "{a:#}");
    assert!(
        a["no_retire_latency"]
            .as_str()
            .unwrap()
            .starts_with("not filled on this core (cpu_atom)"),
        "{a:#}"
    );
}

/// A sample taken in the kernel carries, after its USER marker, the interrupted user pc (an
/// exact address) and then the return addresses. The pc is looked up as it is, as perf looks
/// it up: a pc at the first byte of a mapping (a fault on the first instruction of a
/// library's `_init`) is in that mapping; looked up one byte earlier, as a return address is,
/// it fell before it. The return address after it, at the mapping's start too, is not.
#[test]
fn the_user_pc_of_a_kernel_sample_is_looked_up_as_it_is() {
    const BASE: u64 = 0x7f44_8000_0000;
    let dir = tempfile::tempdir().unwrap();
    let opts = RecordOptions {
        call_graph: Some(hrec::event::plan::CallGraph::Fp),
        ..RecordOptions::default()
    };
    let mut s = Synth::with("sapphirerapids", &opts, |_| 0);
    let c = s.sampler(None);
    let enc = s.enc(c);
    let sid = SampleId {
        pid: 500,
        tid: 500,
        time: 2,
        id: id(c),
        ..SampleId::default()
    };
    s.records.extend(enc.mmap2(
        &sid,
        &support::encode::Mmap2Fields {
            misc: 2,
            pid: 500,
            tid: 500,
            addr: BASE,
            len: 0x4000,
            pgoff: 0x10000,
            file: support::encode::Mmap2File::Inode {
                maj: 0,
                min: 0,
                ino: 1,
                ino_generation: 0,
            },
            prot: 5,
            flags: 2,
            filename: b"/nonexistent/libm.so.6".to_vec(),
        },
    ));
    let user = -512i64 as u64;
    // The pc, then a return address, both at the first byte of the mapping.
    s.sample_in(c, 500, &[HOT_A, user, BASE, BASE], 100, None, 0);
    s.write(dir.path());
    let (out, err) = run_ok(dir.path(), &["script", "-F", "ip,sym,dso"]);
    // The sample reads its group: a line per member, each with the same chain; the first's.
    let frames: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with('\t'))
        .take_while(|l| l.starts_with('\t'))
        .map(str::trim)
        .collect();
    assert_eq!(frames.len(), 3, "{out}\n{err}");
    assert!(frames[0].contains("hot_a"), "{out}");
    assert!(
        frames[1].contains("libm.so.6"),
        "the pc is in the mapping:\n{out}"
    );
    assert!(
        !frames[2].contains("libm.so.6"),
        "the return address is looked up one byte earlier, before the mapping:\n{out}"
    );
}
