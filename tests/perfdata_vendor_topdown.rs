//! perf.data files as `perf record` (6.1) writes them for the vendors' level-1 TopDown groups
//! (issue 45): on an AMD Zen 4 with the NMI watchdog on,
//!
//! ```text
//! perf record -e '{cycles,de_src_op_disp.all,ex_ret_ops,
//!                  de_no_dispatch_per_slot.no_ops_from_frontend,
//!                  de_no_dispatch_per_slot.backend_stalls}:S,
//!                 {cycles,de_no_dispatch_per_slot.smt_contention}:S' ./td-work
//! ```
//!
//! (perf's names of the `cpu` PMU's raw encodings, CPUID `AuthenticAMD,25,17,1`), and on an
//! Arm Neoverse V2 (NVIDIA Grace: PMU `armv8_pmuv3_0`, type 10; CPUID the MIDR
//! `0x00000000410fd4f0`) with Arm's seven level-1 events in one group. Built byte for byte
//! with `support::perfdata` and `support::encode`, samples in two functions with known
//! deltas; every function's level 1 from `hrec report --json` is the vendor's formula applied
//! by hand to that function's summed deltas, within 0.1 point. The same for hrec's own
//! recordings of the default plans on the Zen 4, Zen 5, Neoverse N2, V1 and V2 fixtures.

mod support;

use std::path::Path;

use hrec::event::Attr;
use hrec::event::attr::{flag, read, sample, types};
use serde_json::Value;
use support::encode::{
    Encoder, Mmap2Fields, Mmap2File, ReadFields, ReadValue, SampleFields, SampleId,
};
use support::perfdata::{FINISHED_ROUND, PerfData, feature, tiny_elf};
use support::{hrec_in, text};

const PID: u32 = 4242;
const CPU: u32 = 0;

/// A member: its name as perf prints it, attr type and config.
type Member = (&'static str, u32, u64);

fn id(event: usize) -> u64 {
    (event as u64 + 1) * 100
}

/// perf 6.1's attr of a `:S` group member in a workload recording with a tracking dummy.
fn group_attr(type_: u32, config: u64) -> Attr {
    let mut a = Attr::new(type_, config);
    a.size = support::perfdata::ATTR_SIZE;
    a.sample_type = sample::IDENTIFIER
        | sample::IP
        | sample::TID
        | sample::TIME
        | sample::CPU
        | sample::PERIOD
        | sample::READ;
    a.read_format = read::ID | read::GROUP | read::LOST;
    a.flags = flag::SAMPLE_ID_ALL | flag::EXCLUDE_GUEST;
    a
}

/// The file being built: its groups (event indexes, leader first) and running totals.
struct File {
    pd: PerfData,
    groups: Vec<Vec<usize>>,
    totals: Vec<Vec<u64>>,
    dummy: usize,
    time: u64,
}

impl File {
    fn new(groups: &[&[Member]], cpuid: &str, pmus: &[(u32, &str)]) -> File {
        let mut pd = PerfData::new();
        let mut out = Vec::new();
        for members in groups {
            let mut g = Vec::new();
            for (k, &(name, t, config)) in members.iter().enumerate() {
                let mut a = group_attr(t, config);
                if k == 0 {
                    a.flags |= flag::DISABLED | flag::ENABLE_ON_EXEC | flag::FREQ;
                    a.sample_period_or_freq = 4000;
                }
                let i = pd.events.len();
                pd.event(a, name, vec![id(i)]);
                g.push(i);
            }
            pd.group(g[0], g.len() as u32);
            out.push(g);
        }
        let mut d = Attr::new(types::SOFTWARE, 9);
        d.size = support::perfdata::ATTR_SIZE;
        d.sample_type = sample::IDENTIFIER
            | sample::IP
            | sample::TID
            | sample::TIME
            | sample::CPU
            | sample::PERIOD;
        d.read_format = read::ID | read::LOST;
        d.sample_period_or_freq = 4000;
        d.flags = flag::DISABLED
            | flag::ENABLE_ON_EXEC
            | flag::FREQ
            | flag::MMAP
            | flag::COMM
            | flag::TASK
            | flag::MMAP2
            | flag::COMM_EXEC
            | flag::SAMPLE_ID_ALL
            | flag::EXCLUDE_KERNEL
            | flag::EXCLUDE_HV;
        let dummy = pd.events.len();
        pd.event(d, "dummy:u", vec![id(dummy)]);
        pd.string_feature(feature::HOSTNAME, "server");
        pd.string_feature(feature::OSRELEASE, "6.1.0-13");
        pd.string_feature(feature::VERSION, "6.1.55");
        pd.nrcpus(1, 1);
        pd.string_feature(feature::CPUID, cpuid);
        pd.pmu_mappings(pmus);
        let totals = out.iter().map(|g| vec![0; g.len()]).collect();
        File {
            pd,
            groups: out,
            totals,
            dummy,
            time: 1_000_000,
        }
    }

    fn enc(&self, i: usize) -> Encoder {
        Encoder::new(self.pd.events[i].attr)
    }

    fn round(&mut self) {
        self.pd
            .records
            .extend(support::encode::record(FINISHED_ROUND, 0, &[]));
    }

    fn exec(&mut self, program: &Path, len: u64) {
        let enc = self.enc(self.dummy);
        let sid = SampleId {
            pid: PID,
            tid: PID,
            time: self.time,
            id: id(self.dummy),
            cpu: CPU,
            ..SampleId::default()
        };
        self.pd
            .records
            .extend(enc.comm(&sid, PID, PID, b"td-work", true));
        self.pd.records.extend(enc.mmap2(
            &sid,
            &Mmap2Fields {
                misc: 2,
                pid: PID,
                tid: PID,
                addr: 0x40_0000,
                len: len.next_multiple_of(0x1000),
                pgoff: 0,
                file: Mmap2File::Inode {
                    maj: 259,
                    min: 2,
                    ino: 1234,
                    ino_generation: 0,
                },
                prot: 5,
                flags: 2,
                filename: program.to_str().unwrap().as_bytes().to_vec(),
            },
        ));
        self.round();
    }

    /// A sample of group `g` at `ip`: the group's running totals after adding `deltas`
    /// (leader first).
    fn sample(&mut self, g: usize, ip: u64, deltas: &[u64]) {
        self.time += 10_000;
        let members = self.groups[g].clone();
        for (t, d) in self.totals[g].iter_mut().zip(deltas) {
            *t += d;
        }
        let values = members
            .iter()
            .zip(&self.totals[g])
            .map(|(&i, &value)| ReadValue {
                value,
                id: id(i),
                lost: 0,
            })
            .collect();
        let s = SampleFields {
            misc: 2,
            id: id(members[0]),
            ip,
            pid: PID,
            tid: PID,
            time: self.time,
            cpu: CPU,
            period: deltas[0],
            read: ReadFields {
                values,
                ..ReadFields::default()
            },
            ..SampleFields::default()
        };
        let bytes = self.enc(members[0]).sample(&s);
        self.pd.records.extend(bytes);
    }

    fn finish(mut self, path: &Path) {
        self.round();
        let first = 1_000_000 + 10_000;
        self.pd.sample_time(first, self.time);
        self.pd.write(path);
    }
}

/// `td_alpha` and `td_beta`: (path, length, alpha, beta).
fn program(dir: &Path) -> (std::path::PathBuf, u64, u64, u64) {
    let body: &[u8] = &[
        0x55, 0x48, 0x89, 0xe5, 0x31, 0xc0, 0x83, 0xc0, 0x01, 0x83, 0xf8, 0x64, 0x75, 0xf8, 0x5d,
        0xc3,
    ];
    let (elf, addrs) = tiny_elf(&[("td_alpha", body), ("td_beta", body)]);
    let path = dir.join("td-work");
    std::fs::write(&path, &elf).unwrap();
    (path, elf.len() as u64, addrs[0], addrs[1])
}

/// `hrec report --json --sort sym`: each function's `topdown.level1` of the first table.
fn level1_of(dir: &Path, sym: &str) -> serde_json::Map<String, Value> {
    let o = hrec_in(
        dir,
        &["report", "-i", "perf.data", "--json", "--sort", "sym"],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    let rows = j["events"][0]["rows"].as_array().unwrap();
    let row = rows
        .iter()
        .find(|r| {
            r["key"]["sym"]
                .as_str()
                .is_some_and(|k| k.ends_with(&format!("] {sym}")))
        })
        .unwrap_or_else(|| panic!("no {sym}: {j:#}"));
    row["topdown"]["level1"]
        .as_object()
        .unwrap_or_else(|| panic!("{sym} has no level 1: {row:#}"))
        .clone()
}

fn assert_close(got: &serde_json::Map<String, Value>, want: &[(&str, f64)], what: &str) {
    for &(k, w) in want {
        let g = got[k].as_f64().unwrap_or_else(|| panic!("{what}: no {k}"));
        assert!((g - w).abs() < 0.1, "{what}: {k} {g} != {w}: {got:?}");
    }
    assert_eq!(got.len(), want.len(), "{what}: {got:?}");
}

/// AMD's PipelineL1 on each function's sums: every node over 6 x cycles, Bad Speculation
/// dispatched - retired, SMT Contention over its group's cycles. With the NMI watchdog off
/// the six events share one group; with it on, SMT contention has a group (and a `cycles`
/// table) of its own, which the report joins to the other group's rows by function.
#[test]
fn zen4_groups_read_with_amds_formulas() {
    let cycles = ("cycles", types::HARDWARE, 0);
    let disp = ("de_src_op_disp.all", 4, 0x7aa);
    let ret = ("ex_ret_ops", 4, 0xc1);
    let fe = (
        "de_no_dispatch_per_slot.no_ops_from_frontend",
        4,
        0x1_0000_01a0,
    );
    let be = ("de_no_dispatch_per_slot.backend_stalls", 4, 0x1_0000_1ea0);
    let smt = ("de_no_dispatch_per_slot.smt_contention", 4, 0x1_0000_60a0);
    let pmus = [
        (1, "software"),
        (4, "cpu"),
        (10, "ibs_fetch"),
        (11, "ibs_op"),
    ];
    for split in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (prog, len, alpha, beta) = program(d);
        let one: [Member; 6] = [cycles, disp, ret, fe, be, smt];
        let main: [Member; 5] = [cycles, disp, ret, fe, be];
        let alone: [Member; 2] = [cycles, smt];
        let groups: Vec<&[Member]> = if split {
            vec![&main, &alone]
        } else {
            vec![&one]
        };
        let mut f = File::new(&groups, "AuthenticAMD,25,17,1", &pmus);
        f.exec(&prog, len);
        // (cycles, dispatched, retired, frontend, backend[, smt])
        let samples: [(u64, [u64; 6]); 3] = [
            (alpha + 6, [1000, 2700, 2400, 1200, 1800, 300]),
            (alpha + 6, [1000, 3300, 3000, 600, 2400, 900]),
            (beta, [2000, 4000, 2000, 6000, 3000, 2400]),
        ];
        for (ip, v) in samples {
            if split {
                f.sample(0, ip, &v[..5]);
                f.sample(1, ip, &[v[0], v[5]]);
            } else {
                f.sample(0, ip, &v);
            }
        }
        f.finish(&d.join("perf.data"));
        let what = if split { "split" } else { "one group" };
        // td_alpha: cycles 2000 (12000 slots): DISP 6000, RET 5400, FE 1800, BE 4200, SMT
        // 1200. td_beta: 12000 slots: DISP 4000, RET 2000, FE 6000, BE 3000, SMT 2400.
        for (sym, want) in [
            ("td_alpha", [45.0, 5.0, 15.0, 35.0, 10.0]),
            ("td_beta", [100.0 / 6.0, 100.0 / 6.0, 50.0, 25.0, 20.0]),
        ] {
            let names = [
                "Retiring",
                "Bad Speculation",
                "Frontend Bound",
                "Backend Bound",
                "SMT Contention",
            ];
            let want: Vec<(&str, f64)> = names.into_iter().zip(want).collect();
            assert_close(&level1_of(d, sym), &want, &format!("{sym}, {what}"));
        }
        // The text report: SMT Contention is a fifth column.
        let o = hrec_in(
            d,
            &["report", "-i", "perf.data", "--stdio", "--sort", "sym"],
        );
        let (out, err) = text(&o);
        assert!(o.status.success(), "{err}");
        let header = out
            .lines()
            .find(|l| l.contains("FEBound"))
            .unwrap_or_else(|| panic!("{out}"));
        let words = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
        let h = words(header);
        let at = h
            .iter()
            .position(|w| w == "SMT")
            .unwrap_or_else(|| panic!("{header}"));
        assert_eq!(h[at - 1], "BEBound", "{header}");
        let alpha_row = out
            .lines()
            .find(|l| l.ends_with("td_alpha"))
            .unwrap_or_else(|| panic!("{out}"));
        // The row has no `#` column: one word fewer before the TopDown columns (marked `*`:
        // under the sample count that makes a share reliable).
        let r: Vec<String> = words(alpha_row)
            .into_iter()
            .map(|w| w.trim_end_matches('*').to_string())
            .collect();
        assert_eq!(r[at - 2..at], ["35.0%", "10.0%"], "{what}: {alpha_row}");
    }
}

/// Arm's neoverse-v2.json on each function's sums (8 slots per cycle), on the core PMU's own
/// type with Arm's event names; a node can come out negative and is shown so.
#[test]
fn neoverse_v2_group_reads_with_arms_formulas() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (prog, len, alpha, beta) = program(d);
    let pmu = 10;
    let group: [Member; 7] = [
        ("armv8_pmuv3_0/CPU_CYCLES/", pmu, 0x11),
        ("armv8_pmuv3_0/STALL_SLOT_FRONTEND/", pmu, 0x3e),
        ("armv8_pmuv3_0/STALL_SLOT_BACKEND/", pmu, 0x3d),
        ("armv8_pmuv3_0/STALL_SLOT/", pmu, 0x3f),
        ("armv8_pmuv3_0/OP_RETIRED/", pmu, 0x3a),
        ("armv8_pmuv3_0/OP_SPEC/", pmu, 0x3b),
        ("armv8_pmuv3_0/BR_MIS_PRED/", pmu, 0x10),
    ];
    let mut f = File::new(
        &[&group],
        "0x00000000410fd4f0",
        &[(1, "software"), (2, "tracepoint"), (pmu, "armv8_pmuv3_0")],
    );
    f.exec(&prog, len);
    // (C, SF, SB, S, OPR, OPS, M)
    f.sample(0, alpha + 6, &[1000, 2000, 3000, 5000, 2400, 3000, 10]);
    f.sample(0, alpha + 6, &[1000, 2000, 1000, 3000, 4000, 4000, 0]);
    f.sample(0, beta, &[1000, 500, 1000, 1500, 6000, 8000, 100]);
    f.finish(&d.join("perf.data"));
    let arm = |c: f64, sf: f64, sb: f64, s: f64, opr: f64, ops: f64, m: f64| {
        let slots = 8.0 * c;
        let r = opr / ops;
        [
            ("Retiring", 100.0 * r * (1.0 - s / slots)),
            (
                "Bad Speculation",
                100.0 * ((1.0 - r) * (1.0 - s / slots) + 4.0 * m / c),
            ),
            ("Frontend Bound", 100.0 * (sf / slots - m / c)),
            ("Backend Bound", 100.0 * (sb / slots - 3.0 * m / c)),
        ]
    };
    assert_close(
        &level1_of(d, "td_alpha"),
        &arm(2000.0, 4000.0, 4000.0, 8000.0, 6400.0, 7000.0, 10.0),
        "td_alpha",
    );
    let beta_l1 = arm(1000.0, 500.0, 1000.0, 1500.0, 6000.0, 8000.0, 100.0);
    assert!(beta_l1[2].1 < 0.0, "the frontend node comes out negative");
    assert_close(&level1_of(d, "td_beta"), &beta_l1, "td_beta");
}

/// hrec's own recordings of the default plan on the Zen 4 and Zen 5 (watchdog off: one group
/// of six), Neoverse N2 r0p0 and V1 (watchdog on: STALL_SLOT left out) and V2 (watchdog off:
/// with STALL_SLOT) fixtures, written with the real file writer from the plan's attrs, group
/// reads of known deltas in two kernel functions: each function's level 1 is the vendor's
/// formula on its sums (STALL_SLOT, where left out, taken as STALL_SLOT_FRONTEND +
/// STALL_SLOT_BACKEND).
#[test]
fn hrec_recordings_of_the_default_plans() {
    use hrec::data::{EventId, EventMeta, Meta, PmuMeta, Trailer, Writer};
    use hrec::event::plan;
    const KALLSYMS: &str = "ffffffff81000000 T _text\nffffffff81001000 T td_alpha\nffffffff81002000 T td_beta\nffffffff81003000 T past_the_end\n";
    let (alpha, beta) = (0xffff_ffff_8100_1010_u64, 0xffff_ffff_8100_2010_u64);
    for (model, watchdog) in [
        ("zen4", false),
        ("zen5", false),
        ("neoverse-n2", true),
        ("neoverse-v1", true),
        ("neoverse-v2", false),
    ] {
        let pmus = support::pmus(model);
        let cpuinfo = std::fs::read_to_string(support::procfs_of(model).join("cpuinfo")).unwrap();
        let host = hrec::event::Host {
            cpu: hrec::pmu::uarch::CpuId::from_cpuinfo(&cpuinfo),
            nmi_watchdog: Some(watchdog),
            ..support::host()
        };
        let p = plan::plan_record(&pmus, &host, &support::opts(&[])).unwrap();
        let cpuid = hrec::pmu::uarch::CpuId::from_cpuinfo(&cpuinfo)
            .map(|c| c.to_string())
            .or_else(|| hrec::pmu::vendor::Midr::from_cpuinfo(&cpuinfo).map(|m| m.to_string()))
            .unwrap();
        let rid = |i: usize| 1000 + i as u64;
        let meta = Meta {
            hrec_version: "test".into(),
            target: "workload".into(),
            cpuid,
            pmus: pmus
                .core_pmus()
                .iter()
                .map(|c| PmuMeta {
                    name: c.name.clone(),
                    type_: c.type_,
                    cpus: c.cpus.as_ref().map(ToString::to_string),
                })
                .collect(),
            events: p
                .events
                .iter()
                .map(|e| EventMeta {
                    name: e.name.clone(),
                    pmu: e.pmu.clone(),
                    attr: e.attr,
                    leader: e.leader,
                    role: e.role,
                    ids: vec![EventId {
                        id: rid(e.index),
                        cpu: 0,
                        tid: 500,
                    }],
                    trace_format: None,
                })
                .collect(),
            ..Meta::default()
        };
        assert_eq!(p.events.iter().filter(|e| e.leader == e.index).count(), 1);
        let group: Vec<usize> = (0..p.events.len()).collect();
        // Deltas by the member's config (the leader's cycles first): two samples in
        // td_alpha, one in td_beta.
        let amd = model.starts_with("zen");
        let delta = |config: u64, lead: bool, s: usize| -> u64 {
            let v: [u64; 3] = match (lead, config) {
                (true, _) => [1000, 1000, 2000],
                (_, 0x7aa) => [2700, 3300, 4000],
                (_, 0xc1) => [2400, 3000, 2000],
                (_, 0x1_0000_01a0) => [1200, 600, 6000],
                (_, 0x1_0000_1ea0) => [1800, 2400, 3000],
                (_, 0x1_0000_60a0) => [300, 900, 2400],
                (_, 0x3e) => [3000, 2500, 4000],
                (_, 0x3d) => [1000, 1500, 2000],
                (_, 0x3a) => [2400, 1600, 2000],
                (_, 0x3b) => [3000, 2000, 4000],
                (_, 0x10) => [10, 0, 50],
                (_, 0x3f) => [4500, 4200, 6500],
                _ => panic!("{model}: unexpected member {config:#x}"),
            };
            v[s]
        };
        let mut records = Vec::new();
        let lead_attr = meta.events[0].attr;
        let sid = SampleId {
            pid: 500,
            tid: 500,
            time: 1,
            id: rid(0),
            ..SampleId::default()
        };
        records.extend(Encoder::new(lead_attr).comm(&sid, 500, 500, b"app", true));
        let mut totals = vec![0u64; group.len()];
        for (s, ip) in [alpha, alpha, beta].into_iter().enumerate() {
            for (t, &i) in totals.iter_mut().zip(&group) {
                *t += delta(meta.events[i].attr.config, i == 0, s);
            }
            let values = group
                .iter()
                .zip(&totals)
                .map(|(&i, &value)| ReadValue {
                    value,
                    id: rid(i),
                    lost: 0,
                })
                .collect();
            records.extend(Encoder::new(lead_attr).sample(&SampleFields {
                misc: 1 | (1 << 14),
                id: rid(0),
                ip,
                pid: 500,
                tid: 500,
                time: 1000 * (s as u64 + 1),
                period: 1000,
                read: ReadFields {
                    values,
                    ..ReadFields::default()
                },
                ..SampleFields::default()
            }));
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut w = Writer::create(&d.join("perf.data"), &meta).unwrap();
        w.write_side("kallsyms", KALLSYMS.as_bytes()).unwrap();
        w.write_records(&records, 0).unwrap();
        w.finish(Trailer::default()).unwrap();
        let names = [
            "Retiring",
            "Bad Speculation",
            "Frontend Bound",
            "Backend Bound",
            "SMT Contention",
        ];
        let sums = |range: std::ops::Range<usize>, config: u64, lead: bool| -> f64 {
            range.map(|s| delta(config, lead, s) as f64).sum()
        };
        for (sym, range) in [("td_alpha", 0..2), ("td_beta", 2..3)] {
            let c = sums(range.clone(), 0, true);
            let get = |config: u64| sums(range.clone(), config, false);
            let want: Vec<(&str, f64)> = if amd {
                let slots = if model == "zen4" { 6.0 } else { 8.0 } * c;
                let v = [
                    get(0xc1) / slots,
                    (get(0x7aa) - get(0xc1)) / slots,
                    get(0x1_0000_01a0) / slots,
                    get(0x1_0000_1ea0) / slots,
                    get(0x1_0000_60a0) / slots,
                ];
                names.into_iter().zip(v.map(|x| 100.0 * x)).collect()
            } else {
                // Arm's files: neoverse-n2.json (r0p0: one slot per cycle off STALL_SLOT and
                // STALL_SLOT_FRONTEND), neoverse-v1.json, neoverse-v2.json; STALL_SLOT,
                // where the watchdog left it out, STALL_SLOT_FRONTEND + STALL_SLOT_BACKEND.
                let (sf, sb, m) = (get(0x3e), get(0x3d), get(0x10) / c);
                let s = if watchdog { sf + sb } else { get(0x3f) };
                let r = get(0x3a) / get(0x3b);
                let v = match model {
                    "neoverse-n2" => {
                        let slots = 5.0 * c;
                        let busy = (s - c) / slots;
                        [
                            r * (1.0 - busy),
                            (1.0 - r) * (1.0 - busy) + 4.0 * m,
                            (sf - c) / slots - m,
                            sb / slots - 3.0 * m,
                        ]
                    }
                    "neoverse-v1" => {
                        let slots = 8.0 * c;
                        let busy = s / slots;
                        [
                            r * (1.0 - busy),
                            (1.0 - r) * (1.0 - busy) + 4.0 * m,
                            sf / slots - 4.0 * m,
                            sb / slots,
                        ]
                    }
                    _ => {
                        let slots = 8.0 * c;
                        let busy = s / slots;
                        [
                            r * (1.0 - busy),
                            (1.0 - r) * (1.0 - busy) + 4.0 * m,
                            sf / slots - m,
                            sb / slots - 3.0 * m,
                        ]
                    }
                };
                names.into_iter().zip(v.map(|x| 100.0 * x)).collect()
            };
            assert_close(&level1_of(d, sym), &want, &format!("{model} {sym}"));
        }
    }
}
