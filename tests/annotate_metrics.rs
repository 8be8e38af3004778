//! `hrec annotate --td-level 3` / `--metrics`: Intel's metrics per basic block, on a synthetic
//! Granite Rapids recording made from the real planner's `--td-level 3` plan (Intel's files
//! from `../shared/perfmon`), byte for byte in the kernel's layout and written with the real
//! file writer, whose samples fall on real instructions of `chase` in the checked-in
//! `examples/topdown/tdemo` (mapped by an MMAP2 record with its build-id). Two blocks of the
//! function follow two different truths (events per cycle), a third has too few reads; the
//! expected values are Intel's formulas evaluated here on each block's truth with the metrics
//! evaluator ([`support::metricrec`]), not through annotate's code.

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use hrec::data::{EventId, EventMeta, Meta, PmuMeta, Trailer, Writer};
use hrec::event::plan::{Plan, RecordOptions};
use hrec::metrics::perfmon::{Metric, Perfmon};
use iced_x86::{Decoder, DecoderOptions, FlowControl};
use object::{Object as _, ObjectSection as _, ObjectSymbol as _};
use serde_json::Value;
use support::encode::{
    Encoder, Mmap2Fields, Mmap2File, ReadFields, ReadValue, SampleFields, SampleId,
};
use support::metricrec::{groups, perfmon, perfmon_dir, plan_of, td_level, truth, truth_path};
use support::{hrec_in, procfs_of, text};

const MODEL: &str = "graniterapids";
const FUNC: &str = "chase";
const PID: u32 = 4711;
const BASE: u64 = 0x5614_3a20_0000;
/// Cycles per sample of every group's sampler.
const PERIOD: u64 = 1_000_000;
/// User-mode, exact IP.
const USER_EXACT: u16 = 2 | (1 << 14);

/// The truths of the blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Truth {
    /// Waiting on loads that miss L2 and hit L3: Backend > Memory Bound > L3 Bound.
    Memory,
    /// Waiting on the divider: Backend > Core Bound > Divider.
    Divider,
    /// Too few reads to say.
    Rare,
}

/// Events per cycle of a block under truth `t`, by [`support::metricrec::key`].
fn rate(t: Truth, k: &str) -> f64 {
    let name = k.split(':').next().unwrap_or(k);
    // Level 1 and 2 shares of slots, 6 slots a cycle: retiring, bad spec, frontend, backend;
    // heavy ops, branch mispredicts, fetch latency, memory bound.
    let (l1, l2): ([f64; 4], [f64; 4]) = match t {
        Truth::Memory => ([0.10, 0.05, 0.05, 0.80], [0.02, 0.03, 0.03, 0.70]),
        Truth::Divider => ([0.20, 0.02, 0.03, 0.75], [0.05, 0.01, 0.02, 0.05]),
        Truth::Rare => ([0.40, 0.10, 0.20, 0.30], [0.10, 0.05, 0.10, 0.15]),
    };
    let slots = 6.0;
    let by = |memory: f64, divider: f64, rare: f64| match t {
        Truth::Memory => memory,
        Truth::Divider => divider,
        Truth::Rare => rare,
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
        "MEMORY_ACTIVITY.STALLS_L1D_MISS" => by(0.75, 0.02, 0.10),
        "MEMORY_ACTIVITY.STALLS_L2_MISS" => by(0.70, 0.01, 0.05),
        "MEMORY_ACTIVITY.STALLS_L3_MISS" => by(0.10, 0.005, 0.02),
        "EXE_ACTIVITY.BOUND_ON_LOADS" => by(0.78, 0.03, 0.12),
        "CYCLE_ACTIVITY.STALLS_TOTAL" => by(0.80, 0.72, 0.25),
        "ARITH.DIV_ACTIVE" => by(0.0, 0.70, 0.01),
        "UOPS_EXECUTED.THREAD" => by(0.5, 0.6, 2.0),
        "FRONTEND_RETIRED.L1I_MISS" => by(0.002, 0.001, 0.001),
        "FRONTEND_RETIRED.L2_MISS" => by(0.0001, 0.0001, 0.0001),
        "UOPS_RETIRED.SLOTS" => l1[0] * slots * 0.9,
        "UOPS_ISSUED.ANY" => (l1[0] + l1[1]) * slots,
        _ => 0.01,
    }
}

/// Reads of group `g` in a block of truth `t`: different per group (so each event must be
/// scaled by its own group's cycles), and below the minimum (20) in every group for `Rare`.
fn reads(t: Truth, g: usize) -> u64 {
    match t {
        Truth::Memory => 30 + 3 * g as u64,
        Truth::Divider => 48 - 2 * g as u64,
        Truth::Rare => 7,
    }
}

fn id(i: usize) -> u64 {
    1000 + i as u64
}

fn tdemo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/topdown/tdemo")
}

/// A basic block of the function: its range and the sampled addresses in it.
#[derive(Debug, Clone)]
struct Block {
    start: u64,
    end: u64,
    truth: Truth,
    addrs: Vec<u64>,
}

/// What the test needs of the binary: its build-id, text mapping and `chase`'s blocks.
struct Binary {
    build_id: Vec<u8>,
    text: (u64, u64, u64),
    /// The blocks by annotate's documented rule (`docs/annotate.md`): a block starts at the
    /// entry, at every branch target inside the function, after every jump, call or return.
    blocks: Vec<BinBlock>,
}

/// A basic block of the binary's function.
#[derive(Debug)]
struct BinBlock {
    start: u64,
    end: u64,
    /// Its instructions: address, length.
    insns: Vec<(u64, usize)>,
    /// It ends in a branch back to its start.
    looped: bool,
}

fn binary() -> Binary {
    let bytes = std::fs::read(tdemo()).unwrap();
    let obj = object::File::parse(&*bytes).unwrap();
    let build_id = obj.build_id().unwrap().unwrap().to_vec();
    let (text, _) = support::typed::segments(&bytes);
    let sym = obj.symbols().find(|s| s.name() == Ok(FUNC)).unwrap();
    let sec = obj.section_by_name(".text").unwrap();
    let at = (sym.address() - sec.address()) as usize;
    let code = &sec.data().unwrap()[at..at + sym.size() as usize];
    let insns: Vec<iced_x86::Instruction> =
        Decoder::with_ip(64, code, sym.address(), DecoderOptions::NONE)
            .iter()
            .collect();
    let end = sym.address() + sym.size();
    let mut starts = std::collections::BTreeSet::from([sym.address()]);
    for i in &insns {
        if i.flow_control() != FlowControl::Next {
            starts.insert(i.next_ip());
            let t = i.near_branch_target();
            if (sym.address()..end).contains(&t) {
                starts.insert(t);
            }
        }
    }
    let starts: Vec<u64> = starts.into_iter().filter(|&s| s < end).collect();
    let blocks = starts
        .iter()
        .enumerate()
        .map(|(k, &s)| {
            let e = starts.get(k + 1).copied().unwrap_or(end);
            let members: Vec<&iced_x86::Instruction> =
                insns.iter().filter(|i| (s..e).contains(&i.ip())).collect();
            let looped = members.last().is_some_and(|i| {
                i.flow_control() == FlowControl::ConditionalBranch && i.near_branch_target() == s
            });
            let members = members.iter().map(|i| (i.ip(), i.len())).collect();
            BinBlock {
                start: s,
                end: e,
                insns: members,
                looped,
            }
        })
        .collect();
    Binary {
        build_id,
        text,
        blocks,
    }
}

/// The three sampled blocks: the loop (its back edge's target to the branch) with the load,
/// the entry block, and the block between them, each with the addresses its samples are at.
/// One address of the loop lies inside an instruction (its second byte): annotate puts it,
/// and its group reads, on the instruction whose bytes hold it.
fn sampled_blocks(bin: &Binary) -> Vec<Block> {
    let insns_of = |k: usize| &bin.blocks[k].insns;
    let looped = bin
        .blocks
        .iter()
        .position(|b| b.looped)
        .expect("chase has a loop block");
    let entry = 0;
    let between = 1;
    assert!(looped > between, "{:x?}", bin.blocks);
    let mut lp: Vec<u64> = insns_of(looped).iter().map(|x| x.0).collect();
    let wide = insns_of(looped).iter().find(|x| x.1 > 1).unwrap();
    lp.push(wide.0 + 1);
    let mk = |k: usize, truth: Truth, addrs: Vec<u64>| Block {
        start: bin.blocks[k].start,
        end: bin.blocks[k].end,
        truth,
        addrs,
    };
    vec![
        mk(looped, Truth::Memory, lp),
        mk(
            entry,
            Truth::Divider,
            insns_of(entry).iter().map(|x| x.0).collect(),
        ),
        mk(
            between,
            Truth::Rare,
            insns_of(between).iter().map(|x| x.0).collect(),
        ),
    ]
}

/// Writes the recording of `plan` with the blocks' samples into `dir`.
fn write_recording(dir: &Path, plan: &Plan, bin: &Binary, blocks: &[Block]) {
    let cpuid = hrec::pmu::uarch::CpuId::read(&procfs_of(MODEL))
        .unwrap()
        .to_string();
    let meta = Meta {
        hrec_version: "test".into(),
        target: "tdemo".into(),
        cpuid,
        pmus: vec![PmuMeta {
            name: "cpu".into(),
            type_: 4,
        }],
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
                    cpu: 0,
                    tid: PID as i32,
                }],
            })
            .collect(),
        ..Meta::default()
    };
    let tracking = plan.events.iter().find(|e| e.tracking).unwrap();
    let tenc = Encoder::new(tracking.attr);
    let sid = |time| SampleId {
        pid: PID,
        tid: PID,
        time,
        id: id(tracking.index),
        ..SampleId::default()
    };
    let mut records = tenc.comm(&sid(1), PID, PID, b"tdemo", true);
    let (start, len, pgoff) = bin.text;
    records.extend(tenc.mmap2(
        &sid(2),
        &Mmap2Fields {
            misc: 2,
            pid: PID,
            tid: PID,
            addr: BASE + start,
            len,
            pgoff,
            file: Mmap2File::BuildId(bin.build_id.clone()),
            prot: 5,
            flags: 2,
            filename: tdemo().to_str().unwrap().as_bytes().to_vec(),
        },
    ));
    let gs = groups(plan);
    let mut totals: HashMap<usize, Vec<u64>> = HashMap::new();
    let mut time = 10;
    let most = blocks
        .iter()
        .flat_map(|b| (0..gs.len()).map(|g| reads(b.truth, g)))
        .max()
        .unwrap();
    // Round-robin over groups and blocks, as multiplexing interleaves them; each block's
    // samples go round its addresses.
    for round in 0..most {
        for (gi, (sampler, members)) in gs.iter().enumerate() {
            for b in blocks {
                if round >= reads(b.truth, gi) {
                    continue;
                }
                let tot = totals
                    .entry(*sampler)
                    .or_insert_with(|| vec![0; members.len()]);
                for (k, (_, key)) in members.iter().enumerate() {
                    tot[k] += (rate(b.truth, key) * PERIOD as f64).round() as u64;
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
                let ip = b.addrs[(round as usize + gi) % b.addrs.len()];
                let enc = Encoder::new(meta.events[*sampler].attr);
                records.extend(enc.sample(&SampleFields {
                    misc: USER_EXACT,
                    id: id(*sampler),
                    ip: BASE + ip,
                    pid: PID,
                    tid: PID,
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
    let mut w = Writer::create(&dir.join("hrec.data"), &meta).unwrap();
    w.write_records(&records, 0).unwrap();
    w.finish(Trailer::default()).unwrap();
}

fn run_json(dir: &Path, args: &[&str]) -> Value {
    let o = hrec_in(dir, args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("no metrics per"), "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The expected value of every chosen metric on truth `t` (`:R` terms: Intel's defaults, as
/// the recording has no `-W` samples; SMT off, as the recording keeps no topology), and the
/// bottleneck path on it.
fn expected(
    pm: &Perfmon,
    chosen: &[&Metric],
    t: Truth,
) -> (Vec<(String, Option<f64>)>, Vec<String>) {
    let lat = |n: &str| pm.default_retire_latency(n);
    let value = |m: &Metric| truth(m, &|k| rate(t, k), &lat);
    let values = chosen.iter().map(|m| (m.perf_name(), value(m))).collect();
    (values, truth_path(pm, chosen, &value))
}

#[test]
fn td_level_3_per_basic_block_equals_intels_formulas_on_each_blocks_truth() {
    let Some(pdir) = perfmon_dir() else { return };
    let pm = perfmon(&pdir, MODEL);
    let plan = plan_of(&pdir, MODEL, &td_level(3), &RecordOptions::default());
    let gs = groups(&plan);
    assert!(gs.len() >= 7, "{} groups", gs.len());
    let bin = binary();
    let blocks = sampled_blocks(&bin);
    let tmp = tempfile::tempdir().unwrap();
    write_recording(tmp.path(), &plan, &bin, &blocks);
    let pdir_s = pdir.display().to_string();
    let flags = ["--td-level", "3", "--perfmon", &pdir_s];
    let mut args = vec!["annotate", "--json", FUNC];
    args.extend(flags);
    let v = run_json(tmp.path(), &args);
    let f = &v["symbols"][0];
    assert_eq!(f["name"], FUNC, "{v:#}");
    let chosen = pm.tma_metrics(3);
    let block_json = |b: &Block| -> &Value {
        f["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["start"] == b.start)
            .unwrap_or_else(|| panic!("no block at {:x}: {f:#}", b.start))
    };
    for b in &blocks {
        let bj = block_json(b);
        assert_eq!(bj["end"], b.end, "{bj:#}");
        let groups = bj["metric_groups"].as_array().unwrap();
        assert_eq!(groups.len(), gs.len());
        for (g, gr) in groups.iter().enumerate() {
            assert_eq!(gr["reads"], reads(b.truth, g), "{:x} group {g}", b.start);
        }
        let metrics = bj["metrics"].as_object().unwrap();
        assert_eq!(metrics.len(), chosen.len());
        if b.truth == Truth::Rare {
            // Below the read minimum in every group: no number, no path.
            assert!(metrics.values().all(Value::is_null), "{bj:#}");
            assert_eq!(bj["bottleneck"], serde_json::json!([]));
            continue;
        }
        let (want, path) = expected(&pm, &chosen, b.truth);
        for (name, w) in &want {
            match (metrics[name].as_f64(), w) {
                (Some(g), Some(w)) => assert!(
                    (g - w).abs() < 0.1,
                    "block {:x} {name}: got {g}, Intel's formula on its truth {w}",
                    b.start
                ),
                (None, None) => {}
                (g, w) => panic!("block {:x} {name}: got {g:?}, want {w:?}", b.start),
            }
        }
        let got: Vec<&str> = bj["bottleneck"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        assert_eq!(got, path, "block {:x}", b.start);
    }
    // The intended bottlenecks, different per block.
    let path = |k: usize| block_json(&blocks[k])["bottleneck"].clone();
    assert_eq!(
        path(0),
        serde_json::json!(["tma_backend_bound", "tma_memory_bound", "tma_l3_bound"])
    );
    assert_eq!(
        path(1),
        serde_json::json!(["tma_backend_bound", "tma_core_bound", "tma_divider"])
    );
    // The function's total is its blocks' samples together: report's row of the function.
    let mut rargs = vec!["report", "--json", "--sort", "sym"];
    rargs.extend(flags);
    let r = run_json(tmp.path(), &rargs);
    let row = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["rows"].as_array().unwrap())
        .find(|x| {
            x["key"]["sym"].as_str().is_some_and(|s| s.ends_with(FUNC))
                && x.get("metrics").is_some()
        })
        .unwrap_or_else(|| panic!("no row {FUNC} with metrics: {r:#}"));
    let total = f["metrics"].as_object().unwrap();
    let mut numbers = 0;
    for (name, rv) in row["metrics"].as_object().unwrap() {
        match (total[name].as_f64(), rv.as_f64()) {
            (Some(a), Some(b)) => {
                numbers += 1;
                assert!((a - b).abs() < 0.002, "{name}: annotate {a}, report {b}");
            }
            (None, None) => {}
            (a, b) => panic!("{name}: annotate {a:?}, report {b:?}"),
        }
    }
    assert!(numbers > 30, "{numbers} metrics with a number");
    assert_eq!(f["bottleneck"], row["bottleneck"]);

    // The text: the function first, then each block's line and its path below it; the rare
    // block says why it has no number.
    let mut targs = vec!["annotate", "--stdio", FUNC];
    targs.extend(flags);
    let o = hrec_in(tmp.path(), &targs);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let section: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with(" Intel's metrics per basic block"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(section[0].trim_start().starts_with(FUNC), "{out}");
    let below = |b: &Block| -> Vec<&str> {
        let head = format!("{:x}-{:x}", b.start, b.end);
        section
            .iter()
            .skip_while(|l| l.split_whitespace().next() != Some(head.as_str()))
            .skip(1)
            .take_while(|l| l.starts_with("       "))
            .map(|l| l.trim())
            .collect()
    };
    for b in &blocks[..2] {
        let lines = below(b);
        let (want, path) = expected(&pm, &chosen, b.truth);
        let line = lines[0]
            .strip_suffix(" <==")
            .unwrap_or_else(|| panic!("{out}"));
        let got: Vec<(&str, f64)> = line
            .split(" > ")
            .map(|p| {
                let (n, x) = p.rsplit_once(' ').unwrap();
                (n, x.parse().unwrap())
            })
            .collect();
        let names: Vec<&str> = got.iter().map(|g| g.0).collect();
        assert_eq!(names, path, "{out}");
        for (n, x) in got {
            let w = want.iter().find(|w| w.0 == n).unwrap().1.unwrap();
            assert!((x - w).abs() <= 0.1, "{n}: printed {x}, truth {w}");
        }
    }
    let rare = below(&blocks[2]);
    assert_eq!(rare.len(), 1, "{out}");
    assert_eq!(
        rare[0],
        format!(
            "metrics: 7 reads of each of the {} groups, fewer than 20",
            gs.len()
        ),
        "{out}"
    );
    assert!(!rare[0].contains('.'), "no number: {out}");
}

/// The metrics lines below a block's line in annotate's text.
fn block_lines(out: &str, b: &Block) -> Vec<String> {
    let head = format!("{:x}-{:x}", b.start, b.end);
    out.lines()
        .skip_while(|l| !l.starts_with(" Intel's metrics per basic block"))
        .skip_while(|l| l.split_whitespace().next() != Some(head.as_str()))
        .skip(1)
        .take_while(|l| l.starts_with("       "))
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn metrics_list_per_block_and_one_line_without_intels_files() {
    let Some(pdir) = perfmon_dir() else { return };
    let pm = perfmon(&pdir, MODEL);
    let plan = plan_of(&pdir, MODEL, &td_level(3), &RecordOptions::default());
    let bin = binary();
    let blocks = sampled_blocks(&bin);
    let tmp = tempfile::tempdir().unwrap();
    write_recording(tmp.path(), &plan, &bin, &blocks);
    let pdir_s = pdir.display().to_string();
    // `--metrics` with a node below level 1 and a metric outside the tree: both shown with
    // their values, no path (no level-1 node chosen).
    let o = hrec_in(
        tmp.path(),
        &[
            "annotate",
            FUNC,
            "--metrics",
            "tma_l3_bound,IPC",
            "--perfmon",
            &pdir_s,
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let lat = |n: &str| pm.default_retire_latency(n);
    // A metric counting an event the plan has in no group has no number (`-`).
    let recorded: Vec<String> = groups(&plan)
        .into_iter()
        .flat_map(|(_, m)| m.into_iter().map(|(_, k)| k))
        .collect();
    let shown = |name: &str, t: Truth| {
        let m = pm.metric(name).unwrap();
        let counted = m
            .used_events()
            .filter(|e| !e.retire_latency)
            .all(|e| recorded.contains(&support::metricrec::key(e)));
        match truth(m, &|k| rate(t, k), &lat).filter(|_| counted) {
            Some(v) => format!("{} {v:.1}", m.perf_name()),
            None => format!("{} -", m.perf_name()),
        }
    };
    let ipc = pm
        .metric("IPC")
        .or_else(|| pm.metric("Info_Thread_IPC"))
        .unwrap()
        .name
        .clone();
    let want = format!(
        "{}  {}",
        shown("tma_l3_bound", Truth::Memory),
        shown(&ipc, Truth::Memory)
    );
    assert_eq!(block_lines(&out, &blocks[0]), [want], "{out}");
    // Intel's files missing: one line, and the TopDown per block as before.
    let o = hrec_in(
        tmp.path(),
        &[
            "annotate",
            FUNC,
            "--td-level",
            "3",
            "--perfmon",
            "/nonexistent",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("no metrics per block"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(out.contains(" TopDown per basic block"), "{out}");
    assert!(!out.contains("Intel's metrics per basic block"), "{out}");
}
