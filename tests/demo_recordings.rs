//! The demo recordings in `examples/recordings/`: what `hrec record -W -g -- examples/topdown/tdemo
//! 0.5` would write on a Granite Rapids server, and on an Arrow Lake desktop whose scheduler
//! moves the program between P-cores and E-cores. They are SYNTHETIC: made here, from a
//! per-function model of TopDown and retire latency ([`GRANITE_RAPIDS`], [`LION_COVE`],
//! [`SKYMONT`], [`latency`]), byte for byte in the kernel's layout (`support::encode`) and
//! through the real file writer, at real instruction addresses of the checked-in
//! `examples/topdown/tdemo`, with a fixed-seed generator: for a machine without a PMU to show
//! what a TopDown report looks like. The files say so where they are shown: their names, and
//! the cmdline, host, target and a notice in their header (`hrec report`, `hrec info`).
//!
//! A third, [`GNR_L3`], is `hrec record --td-level 3 -g` on Granite Rapids: the real planner's
//! sampling-read groups for Intel's level 1 to 3 (Intel's files from `../shared/perfmon`,
//! through `support::metricrec`), each group's members counting at the rates per cycle of a
//! per-function truth ([`l3_rate`]), so `hrec report --td-level 3` shows each function's
//! level-3 bottleneck ([`L3_PATHS`]) at Intel's formula's value on that truth.
//!
//! The test makes them and compares them byte for byte with the checked-in files;
//! `HREC_BLESS=1` (`scripts/make-demo-recordings`) rewrites them. It also checks, through
//! `hrec report --json` and `hrec annotate --json` run in the repository root (the recordings
//! name the binary by its path from there), that they show what the model says.

mod support;

use std::path::{Path, PathBuf};

use hrec::data::{EventId, EventMeta, FinalCount, Meta, PmuMeta, ThreadCount, Trailer, Writer};
use hrec::event::plan::{CallGraph, Plan, RecordOptions, Role};
use iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic, OpKind};
use object::{Object as _, ObjectSection as _, ObjectSymbol as _};
use serde_json::Value;
use support::encode::{
    Encoder, Mmap2Fields, Mmap2File, ReadFields, ReadValue, SampleFields, SampleId,
};
use support::text;

/// The binary, by its path from the repository root: so the recordings' MMAP2 record names
/// it, and `hrec report` run there finds it (with its build-id checked).
const TDEMO: &str = "examples/topdown/tdemo";

/// The workload functions, in the order tdemo runs them.
const FUNCS: [&str; 5] = ["chase", "divide", "branchy", "fetch", "sum"];

/// One function's TopDown on one core, as shares of its slots: the four level-1 categories
/// (they add up to 1) and the level-2 part of each that the core counts.
#[derive(Debug, Clone, Copy)]
struct Td {
    retiring: f64,
    bad_spec: f64,
    frontend: f64,
    backend: f64,
    /// On P-cores (`topdown-*` level 2): Heavy Operations of Retiring, Branch Mispredicts of
    /// Bad Speculation, Fetch Latency of Frontend Bound, Memory Bound of Backend Bound. On
    /// E-cores (Intel's E-core tree): unused, Branch Mispredicts, IFetch Latency, Core Bound
    /// (`ALLOC_RESTRICTIONS`); the rest of each is Machine Clears, IFetch Bandwidth and
    /// Resource Bound.
    parts: [f64; 4],
}

const fn td(l1: [f64; 4], parts: [f64; 4]) -> Td {
    Td {
        retiring: l1[0],
        bad_spec: l1[1],
        frontend: l1[2],
        backend: l1[3],
        parts,
    }
}

/// The model on Granite Rapids (Redwood Cove cores, 6 slots a cycle), per function in
/// [`FUNCS`] order: `[retiring, bad spec, frontend, backend]`, then `[heavy ops, branch
/// mispredicts, fetch latency, memory bound]`, each a share of all slots. The reasoning, from
/// Intel's TMA descriptions (the perfmon metrics' BriefDescription) and the code:
///
/// - chase: one dependent load per iteration, most of them to DRAM (some 390 cycles each), 3
///   uops per iteration: the slots are almost all Backend Bound, and Memory Bound ("pipeline
///   is likely stalled due to demand load"); Retiring a few percent; the loop branch always
///   predicted.
/// - divide: 64-bit `div` (several uops, about 15 cycles of latency) whose input is the last
///   quotient: ~7 uops per ~15 cycles (90 slots) retire, heavy operations among them (the
///   div's uops); the rest waits for the divider: Core Bound ("dependencies in software's
///   instructions ... FP-chained long-latency arithmetic operations"); no loads, so Memory
///   Bound about nothing.
/// - branchy: a branch on random bits mispredicts every second iteration (~17 cycles of
///   refill each, against ~10 uops of work): Bad Speculation (Branch Mispredicts) more than
///   half the slots; the refill after each clear also shows as Fetch Latency (its
///   Mispredicts_Resteers); the load feeding the branch a little Backend.
/// - fetch: one `jmp` in each 64-byte line of 32 KiB of code: the frontend delivers about
///   one uop a cycle, fewer after an i-cache or DSB miss: Frontend Bound, split between
///   Fetch Bandwidth ("the Frontend typically delivers suboptimal amount of uops") and Fetch
///   Latency (i-cache misses and resteers of branches the predictor has not seen); Retiring
///   at most 1/6.
/// - sum: SSE loads that hit L1 and adds that do not wait: Retiring near the top (light
///   operations); the two shuffles per 16 bytes on their ports some Core Bound.
const GRANITE_RAPIDS: [Td; 5] = [
    td([0.02, 0.01, 0.02, 0.95], [0.00, 0.005, 0.015, 0.91]),
    td([0.08, 0.01, 0.03, 0.88], [0.05, 0.01, 0.02, 0.01]),
    td([0.16, 0.58, 0.16, 0.10], [0.01, 0.57, 0.13, 0.04]),
    td([0.12, 0.02, 0.80, 0.06], [0.00, 0.01, 0.35, 0.01]),
    td([0.80, 0.01, 0.04, 0.15], [0.01, 0.005, 0.02, 0.02]),
];

/// Arrow Lake's P-core (Lion Cove, 8 slots a cycle): as [`GRANITE_RAPIDS`], with the shares
/// of the throughput-bound functions (divide, fetch, sum) moved from Retiring to their
/// bottleneck, as the same uops fill fewer of the wider core's slots; DRAM is further away
/// in cycles at a desktop's clock, so chase is even more Memory Bound.
const LION_COVE: [Td; 5] = [
    td([0.015, 0.005, 0.02, 0.96], [0.00, 0.004, 0.015, 0.93]),
    td([0.06, 0.01, 0.03, 0.90], [0.04, 0.01, 0.02, 0.01]),
    td([0.13, 0.60, 0.16, 0.11], [0.01, 0.59, 0.13, 0.04]),
    td([0.09, 0.02, 0.83, 0.06], [0.00, 0.01, 0.38, 0.01]),
    td([0.66, 0.01, 0.05, 0.28], [0.01, 0.005, 0.02, 0.02]),
];

/// Arrow Lake's E-core (Skymont, 8 slots a cycle, Intel's E-core tree): `[retiring, bad
/// spec, frontend, backend]`, then `[-, branch mispredicts, ifetch latency, core bound]`.
/// Skymont has no uop cache and no level-2 Memory Bound: chase's and divide's stalls show as
/// Resource Bound (the schedulers and the ROB full of waiting uops), fetch's as IFetch
/// Latency and Bandwidth (its decoders get one instruction per line); otherwise as on the
/// P-core.
const SKYMONT: [Td; 5] = [
    td([0.02, 0.01, 0.02, 0.95], [0.0, 0.01, 0.01, 0.02]),
    td([0.05, 0.01, 0.02, 0.92], [0.0, 0.01, 0.01, 0.05]),
    td([0.20, 0.55, 0.15, 0.10], [0.0, 0.54, 0.12, 0.02]),
    td([0.10, 0.02, 0.80, 0.08], [0.0, 0.01, 0.40, 0.02]),
    td([0.70, 0.01, 0.06, 0.23], [0.0, 0.005, 0.02, 0.03]),
];

/// What an instruction is to the model: how many of its function's samples a precise
/// `cycles` event puts on it (the instruction that retires when the counter overflows: after
/// a stall, the stalled one), and what its retire latency (Timed PEBS: cycles since the
/// instruction before it retired) looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// chase's load: retires after its cache miss.
    Load,
    /// divide's `div`: retires after the divider.
    Div,
    /// branchy's branch on the random bit: retires once its load and test are done.
    Branch,
    /// The first instruction of each arm of that branch: after a mispredict it retires
    /// only when the right path was fetched again, the refill in its latency.
    Arm,
    /// branchy's load of the byte the branch tests (an L1 hit).
    ByteLoad,
    /// fetch's jumps: one a cycle, or waiting on an i-cache or uop-cache miss.
    Jump,
    /// The rest of the function's loop.
    Body,
}

/// The share of its function's samples each part of the function gets (split evenly among
/// its instructions; parts a function does not have get nothing).
fn share(func: &str, part: Part) -> f64 {
    match (func, part) {
        ("chase", Part::Load) => 0.90,
        ("chase", Part::Body) => 0.10,
        ("divide", Part::Div) => 0.80,
        ("divide", Part::Body) => 0.20,
        ("branchy", Part::Branch) => 0.35,
        ("branchy", Part::Arm) => 0.40,
        ("branchy", Part::ByteLoad) => 0.08,
        ("branchy", Part::Body) => 0.17,
        ("fetch", Part::Jump) => 0.95,
        ("fetch", Part::Body) => 0.05,
        ("sum", Part::Body) => 1.0,
        _ => 0.0,
    }
}

/// A mixture of retire latencies: `(probability, mean cycles, spread)`.
type Mixture = &'static [(f64, f64, f64)];

/// Retire latencies of a part on a core with Timed PEBS: chase's load the core's own (its
/// memory's latency in its cycles), the 64-bit divide's latency (~15 cycles), the mispredict
/// refill (~17) on half of the arms' first instructions, an i-cache miss now and then on
/// fetch's jumps; one cycle or so elsewhere.
fn latency(core: &Core, part: Part) -> Mixture {
    match part {
        Part::Load => core.load,
        Part::Div => &[(1.0, 15.0, 2.0)],
        Part::Branch => &[(1.0, 3.0, 1.0)],
        Part::Arm => &[(0.5, 18.0, 3.0), (0.5, 1.0, 0.5)],
        Part::ByteLoad => &[(1.0, 5.0, 1.0)],
        Part::Jump => &[(0.7, 1.5, 0.5), (0.3, 9.0, 3.0)],
        Part::Body => &[(1.0, 1.0, 0.5)],
    }
}

/// One kind of core of the modelled machine.
#[derive(Debug)]
struct Core {
    /// Its PMU.
    pmu: &'static str,
    /// Slots per cycle.
    width: u64,
    /// Cycles between samples (`-F 4000` at the core's clock).
    period: u64,
    /// Its TopDown per function.
    model: &'static [Td; 5],
    /// Whether it fills the retire latency (Timed PEBS).
    timed_pebs: bool,
    /// The retire latency of chase's load.
    load: Mixture,
    /// Its first CPU (the fixture's).
    cpu: i32,
}

/// A modelled machine: a fixture model, its cores, and what the recording is called.
#[derive(Debug)]
struct Machine {
    /// The fixture (`tests/fixtures/sysfs/<model>`, `procfs/<model>`).
    fixture: &'static str,
    /// The recording's file name in `examples/recordings/`.
    file: &'static str,
    /// Its name in the labels.
    name: &'static str,
    /// The core kinds; the first runs the program when the others do not.
    cores: &'static [Core],
    /// The share of the time on the first kind of core.
    first_share: f64,
    /// The generator's seed.
    seed: u64,
    /// The `hrec record` options it models.
    record: &'static str,
}

const GNR: Machine = Machine {
    fixture: "graniterapids",
    file: "tdemo-graniterapids.synthetic.hrec",
    name: "Granite Rapids",
    cores: &[Core {
        pmu: "cpu",
        width: 6,
        period: 750_000,
        model: &GRANITE_RAPIDS,
        timed_pebs: true,
        // Mostly DRAM (about 130 ns at 3 GHz); the rest of the 256 MiB in its large L3
        // (about 40 ns).
        load: &[(0.7, 390.0, 60.0), (0.3, 120.0, 20.0)],
        cpu: 0,
    }],
    first_share: 1.0,
    seed: 0x7d3e_0001,
    record: "-W -g",
};

const ARL: Machine = Machine {
    fixture: "arrowlake-s",
    file: "tdemo-arrowlake.synthetic.hrec",
    name: "Arrow Lake-S (P-cores and E-cores)",
    cores: &[
        Core {
            pmu: "cpu_core",
            width: 8,
            period: 1_300_000,
            model: &LION_COVE,
            timed_pebs: true,
            // DRAM at a desktop's 5 GHz (about 90 ns); less of the buffer in its 36 MB L3.
            load: &[(0.85, 470.0, 70.0), (0.15, 80.0, 12.0)],
            cpu: 0,
        },
        Core {
            pmu: "cpu_atom",
            width: 8,
            period: 1_150_000,
            model: &SKYMONT,
            timed_pebs: false,
            load: &[],
            cpu: 8,
        },
    ],
    first_share: 0.65,
    seed: 0x7d3e_0002,
    record: "-W -g",
};

/// Samples per function: `-F 4000` for tdemo's 0.5 s, a fifth each.
const SAMPLES_PER_FUNC: usize = 400;
/// The workload's pid (and its one thread's).
const PID: u32 = 4711;
/// Where the program is mapped (a PIE, as the kernel places one).
const BASE: u64 = 0x5614_3a20_0000;
/// The perf clock (ns) when tdemo calls chase. Its set-up before (main writing the 256 MiB
/// buffer, and the kernel's page faults) is not modelled.
const T0: u64 = 81_000_000_000;

/// splitmix64: a fixed-seed generator whose numbers are the same on every machine; floats
/// are made of them with `+ - * /` and `sqrt` only, which IEEE 754 rounds the same
/// everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// About normal, mean 0 and deviation 1 (four uniforms, Irwin-Hall), within ±3.5.
    fn normal(&mut self) -> f64 {
        let s: f64 = (0..4).map(|_| self.unit()).sum();
        (s - 2.0) * 3f64.sqrt()
    }

    /// One draw of a `(probability, mean, spread)` mixture, at least 1.
    fn mixture(&mut self, m: Mixture) -> u64 {
        let mut u = self.unit();
        let (_, mean, sd) = *m
            .iter()
            .find(|(p, _, _)| {
                u -= p;
                u < 0.0
            })
            .unwrap_or(&m[m.len() - 1]);
        (mean + sd * self.normal()).round().max(1.0) as u64
    }
}

/// One decoded instruction of tdemo.
#[derive(Debug, Clone, Copy)]
struct Insn {
    ip: u64,
    i: Instruction,
}

/// What the model needs of the checked-in binary.
#[derive(Debug)]
struct Binary {
    build_id: Vec<u8>,
    /// The executable mapping: start, length, page offset (as the kernel maps the PT_LOAD).
    text: (u64, u64, u64),
    /// Per function of [`FUNCS`]: its sampled instructions (address, part), and the return
    /// address of main's call to it.
    funcs: Vec<(Vec<(u64, Part)>, u64)>,
    /// The last instruction (`ret`) of `frame`, the empty function each of them calls first.
    frame: u64,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The instructions of function `name`.
fn decode(obj: &object::File<'_>, name: &str) -> Vec<Insn> {
    let sym = obj
        .symbols()
        .find(|s| s.name() == Ok(name))
        .unwrap_or_else(|| panic!("{TDEMO} has no function {name}"));
    let text = obj.section_by_name(".text").unwrap();
    let at = (sym.address() - text.address()) as usize;
    let code = &text.data().unwrap()[at..at + sym.size() as usize];
    Decoder::with_ip(64, code, sym.address(), DecoderOptions::NONE)
        .iter()
        .map(|i| Insn { ip: i.ip(), i })
        .collect()
}

/// The loop of a function: from the lowest target of its backward branches to the last of
/// them.
fn body(insns: &[Insn]) -> &[Insn] {
    let back: Vec<(u64, u64)> = insns
        .iter()
        .filter(|x| {
            matches!(
                x.i.flow_control(),
                FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch
            ) && x.i.near_branch_target() < x.ip
        })
        .map(|x| (x.i.near_branch_target(), x.ip))
        .collect();
    let start = back.iter().map(|b| b.0).min().expect("a loop");
    let end = back.iter().map(|b| b.1).max().unwrap();
    let a = insns.iter().position(|x| x.ip == start).unwrap();
    let b = insns.iter().position(|x| x.ip == end).unwrap();
    &insns[a..=b]
}

fn has_memory(i: &Instruction) -> bool {
    (0..i.op_count()).any(|k| i.op_kind(k) == OpKind::Memory)
}

/// The parts of a function's loop, by what its instructions are.
fn parts(func: &str, insns: &[Insn]) -> Vec<(u64, Part)> {
    let lp = body(insns);
    // branchy's branch on the random bit: the conditional branch right after a `test`.
    let branch = lp.windows(2).find_map(|w| {
        (w[0].i.mnemonic() == Mnemonic::Test
            && w[1].i.flow_control() == FlowControl::ConditionalBranch)
            .then_some(w[1])
    });
    let arms: Vec<u64> = branch
        .map(|b| vec![b.i.near_branch_target(), b.ip + b.i.len() as u64])
        .unwrap_or_default();
    // Not the padding between fetch's jumps, which never runs.
    let v: Vec<(u64, Part)> = lp
        .iter()
        .filter(|x| x.i.mnemonic() != Mnemonic::Nop)
        .map(|x| {
            let part = match func {
                "chase" if has_memory(&x.i) => Part::Load,
                "divide" if x.i.mnemonic() == Mnemonic::Div => Part::Div,
                "branchy" if Some(x.ip) == branch.map(|b| b.ip) => Part::Branch,
                "branchy" if arms.contains(&x.ip) => Part::Arm,
                "branchy" if has_memory(&x.i) => Part::ByteLoad,
                "fetch" if x.i.mnemonic() == Mnemonic::Jmp => Part::Jump,
                _ => Part::Body,
            };
            (x.ip, part)
        })
        .collect();
    for p in [
        Part::Load,
        Part::Div,
        Part::Branch,
        Part::Arm,
        Part::ByteLoad,
        Part::Jump,
    ] {
        assert!(
            share(func, p) == 0.0 || v.iter().any(|x| x.1 == p),
            "{func} has no {p:?} in its loop: was {TDEMO} rebuilt differently?"
        );
    }
    v
}

fn binary() -> Binary {
    let bytes = std::fs::read(root().join(TDEMO)).unwrap();
    let obj = object::File::parse(&*bytes).unwrap();
    let build_id = obj
        .build_id()
        .unwrap()
        .unwrap_or_else(|| panic!("{TDEMO} has no build-id"))
        .to_vec();
    let (text, _) = support::typed::segments(&bytes);
    let main = decode(&obj, "main");
    let funcs = FUNCS
        .iter()
        .map(|f| {
            let insns = decode(&obj, f);
            let ret = main
                .iter()
                .find(|x| {
                    x.i.flow_control() == FlowControl::Call
                        && x.i.near_branch_target() == insns[0].ip
                })
                .map(|x| x.ip + x.i.len() as u64)
                .unwrap_or_else(|| panic!("main does not call {f}"));
            (parts(f, &insns), ret)
        })
        .collect();
    let frame = decode(&obj, "frame").last().expect("frame has code").ip;
    Binary {
        build_id,
        text,
        funcs,
        frame,
    }
}

/// The label every recording carries in its header.
fn label(m: &Machine) -> String {
    format!(
        "SYNTHETIC (scripts/make-demo-recordings): hrec's demo model of `hrec record {} -- \
         {TDEMO} 0.5` on {}, not measured",
        m.record, m.name
    )
}

/// The event's id: 1000 + its index.
fn id(i: usize) -> u64 {
    1000 + i as u64
}

/// The group member's share of a sample's counts, by its name: the `topdown-*` events of a
/// P-core group, the `TOPDOWN_*` events of an E-core one, the slots and the sampled cycles.
fn member_count(name: &str, slots: u64, period: u64, l1: [u64; 4], parts: [u64; 4]) -> u64 {
    let base = name.split('/').nth(1).unwrap_or(name);
    let base = base.split(':').next().unwrap_or(base);
    let [ret, bad, fe, be] = l1;
    match base {
        "slots" => slots,
        "cycles" => period,
        "topdown-retiring" | "TOPDOWN_RETIRING.ALL_P" => ret,
        "topdown-bad-spec" | "TOPDOWN_BAD_SPECULATION.ALL_P" => bad,
        "topdown-fe-bound" | "TOPDOWN_FE_BOUND.ALL_P" => fe,
        "topdown-be-bound" | "TOPDOWN_BE_BOUND.ALL_P" => be,
        "topdown-heavy-ops" => parts[0],
        "topdown-br-mispredict" | "TOPDOWN_BAD_SPECULATION.MISPREDICT" => parts[1],
        "topdown-fetch-lat" | "TOPDOWN_FE_BOUND.FRONTEND_LATENCY" => parts[2],
        "topdown-mem-bound" | "TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS" => parts[3],
        "TOPDOWN_BAD_SPECULATION.MACHINE_CLEARS" => bad - parts[1],
        "TOPDOWN_FE_BOUND.FRONTEND_BANDWIDTH" => fe - parts[2],
        _ => panic!("no model for group member {name}"),
    }
}

/// One sample's TopDown counts on `core` for `model`: the shares varied a little (each
/// interval between two samples differs), level 1 adding up to the slots.
fn counts(rng: &mut Rng, slots: u64, model: &Td) -> ([u64; 4], [u64; 4]) {
    let l1 = [
        model.retiring,
        model.bad_spec,
        model.frontend,
        model.backend,
    ];
    let varied = l1.map(|f| f * (1.0 + 0.2 * rng.normal()).max(0.05));
    let sum: f64 = varied.iter().sum();
    let of = |f: f64| (slots as f64 * f).round() as u64;
    let ret = of(varied[0] / sum);
    let bad = of(varied[1] / sum);
    let fe = of(varied[2] / sum);
    let be = slots - ret - bad - fe;
    let l1c = [ret, bad, fe, be];
    let mut parts = [0; 4];
    for k in 0..4 {
        if l1[k] > 0.0 {
            let r = (model.parts[k] / l1[k] * (1.0 + 0.03 * rng.normal())).clamp(0.0, 1.0);
            parts[k] = (l1c[k] as f64 * r).round() as u64;
        }
    }
    (l1c, parts)
}

/// The records of a recording being made, how many, and for its trailer the samples of each
/// event and the final counts.
#[derive(Default)]
struct Records {
    bytes: Vec<u8>,
    n: u64,
    per_event: Vec<u64>,
    counts: Vec<FinalCount>,
}

impl Records {
    fn push(&mut self, r: Vec<u8>) {
        self.n += 1;
        self.bytes.extend(r);
    }
}

/// The fixture machine of `m`: its PMUs, its CPU, and the plan `hrec record` makes there
/// (`metrics`: of `--td-level`/`-M`, else the default events).
fn plan_for(
    m: &Machine,
    opts: &RecordOptions,
    metrics: Option<&hrec::event::plan::metric::MetricPlan>,
) -> (hrec::pmu::Pmus, hrec::pmu::uarch::CpuId, Plan) {
    let pmus = support::pmus(m.fixture);
    let cpu = hrec::pmu::uarch::CpuId::read(&support::procfs_of(m.fixture)).unwrap();
    let host = match metrics {
        Some(_) => support::metricrec::host(m.fixture),
        None => hrec::event::Host {
            cpu: Some(cpu),
            ..support::host()
        },
    };
    let plan = hrec::event::plan::plan_record_with(&pmus, &host, opts, metrics).unwrap();
    (pmus, cpu, plan)
}

/// The header of `m`'s recording of `plan`, labelled SYNTHETIC.
fn meta_of(
    m: &Machine,
    pmus: &hrec::pmu::Pmus,
    cpu: &hrec::pmu::uarch::CpuId,
    plan: &Plan,
) -> Meta {
    let core_of = |pmu: &Option<String>| m.cores.iter().find(|c| Some(c.pmu) == pmu.as_deref());
    let cpuinfo = std::fs::read_to_string(support::procfs_of(m.fixture).join("cpuinfo")).unwrap();
    let model_name = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name")?.split(':').nth(1))
        .unwrap()
        .trim();
    let mut notices = plan.notices.clone();
    notices.push(label(m));
    Meta {
        hrec_version: "synthetic".into(),
        command_line: vec![label(m)],
        hostname: "synthetic".into(),
        kernel_release: "-".into(),
        arch: "x86_64".into(),
        cpu_model: format!("modelled {model_name}"),
        cpuid: cpu.to_string(),
        cpus_online: pmus.online.to_string(),
        nr_cpus: pmus.online.len() as u32,
        page_size: 4096,
        target: label(m),
        pmus: pmus
            .pmus
            .iter()
            .map(|p| PmuMeta {
                name: p.name.clone(),
                type_: p.type_,
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
                    cpu: core_of(&e.pmu).map_or(-1, |c| c.cpu),
                    tid: PID as i32,
                }],
                trace_format: None,
            })
            .collect(),
        notices,
        mmap_pages: 256,
        // As `record` keeps them for its metric groups (the first recordings were made
        // before it did).
        threads_per_core: plan
            .metrics
            .as_ref()
            .and_then(|_| hrec::pmu::threads_per_core(&pmus.root, &pmus.online)),
        metric_choice: plan
            .metrics
            .as_ref()
            .map(|mp| hrec::data::MetricChoiceMeta {
                td_level: mp.choice.td_level,
                metrics: mp.choice.metrics.clone(),
            }),
        ..Meta::default()
    }
}

/// The side band before the samples, from the tracking event of `plan`: the exec, and the
/// program's text mapping with its build-id.
fn side_band(plan: &Plan, bin: &Binary, records: &mut Records) -> Encoder {
    let tracking = plan.events.iter().find(|e| e.tracking).unwrap();
    let tenc = Encoder::new(tracking.attr);
    let sid = |time| SampleId {
        pid: PID,
        tid: PID,
        time,
        id: id(tracking.index),
        ..SampleId::default()
    };
    records.push(tenc.comm(&sid(T0 - 2_000_000), PID, PID, b"tdemo", true));
    let (start, len, pgoff) = bin.text;
    records.push(tenc.mmap2(
        &sid(T0 - 1_900_000),
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
            filename: TDEMO.as_bytes().to_vec(),
        },
    ));
    tenc
}

/// The file of `m`: `records` (the last sample at `last`), the exit, the build-ids, and the
/// trailer; as bytes.
fn write_file(
    m: &Machine,
    bin: &Binary,
    meta: &Meta,
    plan: &Plan,
    mut records: Records,
    last: u64,
) -> Vec<u8> {
    let tracking = plan.events.iter().find(|e| e.tracking).unwrap();
    let tenc = Encoder::new(tracking.attr);
    let sid = SampleId {
        pid: PID,
        tid: PID,
        time: last + 50_000,
        id: id(tracking.index),
        ..SampleId::default()
    };
    records.push(tenc.exit(&sid, [PID, PID, PID, PID], last + 50_000));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(m.file);
    let mut w = Writer::create(&path, meta).unwrap();
    let ids = format!(
        "{} {TDEMO}\n",
        bin.build_id
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    w.write_records(&records.bytes, 0).unwrap();
    w.write_side("build-ids", ids.as_bytes()).unwrap();
    let samples: u64 = records.per_event.iter().sum();
    w.finish(Trailer {
        duration_ns: last + 100_000 - (T0 - 2_000_000),
        sample_time: Some((T0 + 250_000, last)),
        records: records.n,
        record_bytes: records.bytes.len() as u64,
        samples,
        samples_per_event: records.per_event,
        threads: vec![ThreadCount {
            pid: PID,
            tid: PID,
            samples,
        }],
        workload_status: Some(0),
        counts: records.counts,
        ..Trailer::default()
    })
    .unwrap();
    std::fs::read(&path).unwrap()
}

/// Each instruction's share of function `func`'s samples: its part's, split evenly.
fn weights(func: &str, insns: &[(u64, Part)]) -> Vec<f64> {
    insns
        .iter()
        .map(|(_, p)| {
            let n = insns.iter().filter(|(_, q)| q == p).count();
            share(func, *p) / n as f64
        })
        .collect()
}

/// A draw of an index by `weights`.
fn pick(rng: &mut Rng, weights: &[f64]) -> usize {
    let total: f64 = weights.iter().sum();
    let mut u = rng.unit() * total;
    weights
        .iter()
        .position(|w| {
            u -= w;
            u < 0.0
        })
        .unwrap_or(weights.len() - 1)
}

/// The recording of `m`, as the bytes of its file.
fn build(m: &Machine, bin: &Binary) -> Vec<u8> {
    let opts = RecordOptions {
        weight: true,
        call_graph: Some(CallGraph::Fp),
        ..RecordOptions::default()
    };
    let (pmus, cpu, plan) = plan_for(m, &opts, None);
    let meta = meta_of(m, &pmus, &cpu, &plan);
    let mut records = Records::default();
    side_band(&plan, bin, &mut records);

    // The samples: each function in turn, on one kind of core or another.
    let mut rng = Rng(m.seed);
    let samplers: Vec<usize> = m
        .cores
        .iter()
        .map(|c| {
            plan.events
                .iter()
                .position(|e| e.role == Role::Sampler && e.pmu.as_deref() == Some(c.pmu))
                .unwrap()
        })
        .collect();
    let mut totals: Vec<Vec<u64>> = vec![Vec::new(); plan.events.len()];
    let mut per_event = vec![0u64; plan.events.len()];
    let mut time = T0;
    let mut on = 0usize;
    let mut run_left = 0u32;
    for (f, (func, (insns, ret))) in FUNCS.iter().zip(&bin.funcs).enumerate() {
        let weights = weights(func, insns);
        for _ in 0..SAMPLES_PER_FUNC {
            // The scheduler keeps the thread on one kind of core for 2 to 6 ms.
            if run_left == 0 {
                on = usize::from(m.cores.len() > 1 && rng.unit() >= m.first_share);
                run_left = 8 + (rng.unit() * 16.0) as u32;
            }
            run_left -= 1;
            let core = &m.cores[on];
            let sampler = samplers[on];
            let leader = plan.events[sampler].leader;
            let period = (core.period as f64 * (1.0 + 0.03 * rng.normal())) as u64;
            time += 250_000 + (rng.unit() * 2000.0) as u64;
            let (ip, part) = insns[pick(&mut rng, &weights)];
            let lat = if core.timed_pebs {
                rng.mixture(latency(core, part))
            } else {
                0
            };
            let (l1, parts) = counts(&mut rng, core.width * period, &core.model[f]);
            let members: Vec<usize> = plan
                .events
                .iter()
                .filter(|e| e.leader == leader)
                .map(|e| e.index)
                .collect();
            let tot = &mut totals[sampler];
            tot.resize(members.len(), 0);
            let values = members
                .iter()
                .zip(tot.iter_mut())
                .map(|(&e, t)| {
                    let name = &plan.events[e].name;
                    *t += member_count(name, core.width * period, period, l1, parts);
                    ReadValue {
                        value: *t,
                        id: id(e),
                        lost: 0,
                    }
                })
                .collect();
            let enc = Encoder::new(plan.events[sampler].attr);
            records.push(enc.sample(&SampleFields {
                misc: 2 | (1 << 14), // user, exact IP
                id: id(sampler),
                ip: BASE + ip,
                pid: PID,
                tid: PID,
                time,
                period,
                read: ReadFields {
                    values,
                    ..ReadFields::default()
                },
                // PERF_CONTEXT_USER, the IP, and main's return address.
                callchain: vec![-512i64 as u64, BASE + ip, BASE + ret],
                weight: lat << 48,
                ..SampleFields::default()
            }));
            per_event[sampler] += 1;
        }
    }
    records.per_event = per_event;
    write_file(m, bin, &meta, &plan, records, time)
}

/// The level-3 recording: `hrec record --td-level 3 -g` on Granite Rapids, the real planner's
/// sampling-read groups (Intel's files from `../shared/perfmon`).
const GNR_L3: Machine = Machine {
    fixture: "graniterapids",
    file: "tdemo-graniterapids-l3.synthetic.hrec",
    name: "Granite Rapids",
    cores: GNR.cores,
    first_share: 1.0,
    seed: 0x7d3e_0003,
    record: "--td-level 3 -g",
};

/// Samples in a row of one group before the kernel rotates the next onto the PMU (4 ms at
/// 4000 a second).
const MUX_RUN: usize = 16;

/// One in this many of a function's samples falls in `frame`, the empty function each
/// workload function calls once per call: a row with too few reads of every group for a
/// metric (the report's minimum is 20).
const FRAME_ONE_IN: f64 = 150.0;

/// The level-3 model: events per cycle of each function of [`FUNCS`] on Granite Rapids, by
/// the event's truth key (`support::metricrec::key`). Levels 1 and 2 are [`GRANITE_RAPIDS`]'s
/// shares of the 6 slots a cycle (so this recording's `topdown` columns are the other's);
/// below them, from what each loop does (the reasoning of [`GRANITE_RAPIDS`]) and Intel's
/// event descriptions:
///
/// - chase: its loads miss L1 and L2 on almost every cycle; by its loads' latencies (7 in 10
///   to DRAM at ~390 cycles, the rest L3 hits at ~120) some 88% of the memory stall is past
///   the L3: `MEMORY_ACTIVITY.STALLS_L3_MISS` 0.76 of cycles, `STALLS_L2_MISS` 0.87: L3 Miss
///   Bound (Granite Rapids has no DRAM Bound node) well above L3 Bound.
/// - divide: the divider busy 85% of cycles (`ARITH.DIV_ACTIVE`) on a dependent chain,
///   nothing loaded: Core Bound's Divider.
/// - branchy: one mispredicted conditional branch every ~34 cycles, taken or not about as
///   often (`BR_MISP_RETIRED.COND_TAKEN`/`COND_NTAKEN` ~0.51/0.48 of them): Cond TK and Cond
///   NT Mispredicts split Branch Mispredicts; the refill after each shows as Branch Resteers
///   under Fetch Latency.
/// - fetch: one `jmp` a 64-byte line; the 32 KiB fit the uop cache, which delivers the one
///   uop of each line a cycle, so the DSB is active (`IDQ.DSB_CYCLES_ANY` 0.90) but hardly
///   ever delivers its full width (`_OK` 0.02): Fetch Bandwidth's DSB; i-cache misses and
///   unknown-branch resteers make the Fetch Latency part.
/// - sum: 8 uops an iteration (a load, two `paddq`, two unpacks, two moves, a fused
///   compare-and-branch) at 4.8 a cycle: Int Operations (the `paddq`s,
///   `INT_VEC_RETIRED.ADD_128`) a quarter of the retired uops, loads and fused branches an
///   eighth each, and the unpacks and moves the rest: Other Light Ops.
fn l3_rate(f: usize, k: &str) -> f64 {
    use support::metricrec::key_parts;
    let td = &GRANITE_RAPIDS[f];
    let slots = 6.0;
    let by = |x: [f64; 5]| x[f];
    let (name, cmask, edge) = key_parts(k);
    let mispredicts = by([0.0001, 0.0001, 0.03, 0.0005, 0.0001]);
    let clears = by([0.00001, 0.00001, 0.0001, 0.00001, 0.00001]);
    match (name, cmask, edge) {
        ("CPU_CLK_UNHALTED.THREAD" | "CPU_CLK_UNHALTED.DISTRIBUTED", None, false) => 1.0,
        ("CPU_CLK_UNHALTED.C02" | "EXE.AMX_BUSY" | "UOPS_EXECUTED.X87" | "DECODE.LCP", ..) => 0.0,
        ("TOPDOWN.SLOTS", ..) => slots,
        ("PERF_METRICS.RETIRING", ..) => td.retiring * slots,
        ("PERF_METRICS.BAD_SPECULATION", ..) => td.bad_spec * slots,
        ("PERF_METRICS.FRONTEND_BOUND", ..) => td.frontend * slots,
        ("PERF_METRICS.BACKEND_BOUND", ..) => td.backend * slots,
        ("PERF_METRICS.HEAVY_OPERATIONS", ..) => td.parts[0] * slots,
        ("PERF_METRICS.BRANCH_MISPREDICTS", ..) => td.parts[1] * slots,
        ("PERF_METRICS.FETCH_LATENCY", ..) => td.parts[2] * slots,
        ("PERF_METRICS.MEMORY_BOUND", ..) => td.parts[3] * slots,
        // Frontend.
        ("INT_MISC.UOP_DROPPING", ..) => by([0.005, 0.005, 0.02, 0.01, 0.005]),
        ("ICACHE_DATA.STALLS", ..) => by([0.002, 0.001, 0.01, 0.06, 0.001]),
        ("ICACHE_TAG.STALLS", ..) => by([0.001, 0.001, 0.002, 0.02, 0.001]),
        ("DSB2MITE_SWITCHES.PENALTY_CYCLES", ..) => by([0.002, 0.002, 0.01, 0.05, 0.002]),
        ("INT_MISC.CLEAR_RESTEER_CYCLES", ..) => by([0.002, 0.003, 0.10, 0.01, 0.002]),
        ("INT_MISC.UNKNOWN_BRANCH_CYCLES", ..) => by([0.001, 0.001, 0.002, 0.08, 0.001]),
        ("IDQ.MITE_CYCLES_ANY", ..) => by([0.01, 0.02, 0.05, 0.10, 0.02]),
        ("IDQ.MITE_CYCLES_OK", ..) => by([0.005, 0.01, 0.03, 0.02, 0.015]),
        ("IDQ.DSB_CYCLES_ANY", ..) => by([0.05, 0.20, 0.60, 0.90, 0.95]),
        ("IDQ.DSB_CYCLES_OK", ..) => by([0.03, 0.15, 0.40, 0.02, 0.80]),
        ("IDQ.MS_CYCLES_ANY", ..) => by([0.0005, 0.002, 0.001, 0.0005, 0.0005]),
        ("UOPS_RETIRED.MS", Some(1), true) => by([0.0002, 0.001, 0.0005, 0.0002, 0.0002]),
        ("UOPS_RETIRED.MS", Some(1), false) => by([0.0005, 0.002, 0.001, 0.0005, 0.0005]),
        ("UOPS_RETIRED.MS", None, _) => by([0.001, 0.004, 0.002, 0.001, 0.001]),
        ("UOPS_RETIRED.SLOTS", ..) => td.retiring * slots,
        ("UOPS_ISSUED.ANY", ..) => (td.retiring + td.bad_spec) * slots,
        // Bad speculation.
        ("BR_MISP_RETIRED.ALL_BRANCHES", ..) => mispredicts,
        ("BR_MISP_RETIRED.COND_NTAKEN", ..) => mispredicts * by([0.4, 0.4, 0.48, 0.3, 0.4]),
        ("BR_MISP_RETIRED.COND_TAKEN", ..) => mispredicts * by([0.5, 0.5, 0.51, 0.4, 0.5]),
        ("BR_MISP_RETIRED.RET", ..) => mispredicts * by([0.1, 0.1, 0.005, 0.3, 0.1]),
        ("BR_MISP_RETIRED.INDIRECT" | "BR_MISP_RETIRED.INDIRECT_CALL", ..) => 0.0,
        ("INT_MISC.CLEARS_COUNT", ..) => mispredicts * 1.02 + clears,
        ("MACHINE_CLEARS.COUNT", ..) => clears,
        ("MACHINE_CLEARS.MEMORY_ORDERING", ..) => clears * 0.3,
        // Backend.
        ("MEMORY_ACTIVITY.STALLS_L1D_MISS", ..) => by([0.885, 0.002, 0.02, 0.01, 0.005]),
        ("MEMORY_ACTIVITY.STALLS_L2_MISS", ..) => by([0.87, 0.001, 0.005, 0.005, 0.001]),
        ("MEMORY_ACTIVITY.STALLS_L3_MISS", ..) => by([0.76, 0.0005, 0.001, 0.002, 0.0005]),
        ("EXE_ACTIVITY.BOUND_ON_LOADS", ..) => by([0.90, 0.005, 0.06, 0.02, 0.04]),
        ("EXE_ACTIVITY.BOUND_ON_STORES", ..) => by([0.001, 0.001, 0.005, 0.002, 0.002]),
        ("CYCLE_ACTIVITY.STALLS_TOTAL", ..) => by([0.93, 0.80, 0.35, 0.55, 0.08]),
        ("ARITH.DIV_ACTIVE", ..) => by([0.0, 0.85, 0.0, 0.0, 0.0]),
        ("RESOURCE_STALLS.SCOREBOARD", ..) => by([0.002, 0.01, 0.005, 0.005, 0.002]),
        ("EXE_ACTIVITY.EXE_BOUND_0_PORTS", ..) => by([0.01, 0.05, 0.05, 0.10, 0.01]),
        ("EXE_ACTIVITY.1_PORTS_UTIL", ..) => by([0.03, 0.08, 0.20, 0.60, 0.10]),
        ("EXE_ACTIVITY.2_3_PORTS_UTIL", ..) => by([0.02, 0.05, 0.30, 0.10, 0.50]),
        // Retiring.
        ("UOPS_EXECUTED.THREAD", ..) => (td.retiring + 0.5 * td.bad_spec) * slots,
        (n, ..) if n.starts_with("FP_ARITH_INST_RETIRED") => 0.0,
        ("INT_VEC_RETIRED.ADD_128", ..) => by([0.0, 0.0, 0.0, 0.0, 1.2]),
        (n, ..) if n.starts_with("INT_VEC_RETIRED.") => 0.0,
        ("MEM_UOP_RETIRED.ANY", ..) => by([0.04, 0.0, 0.1, 0.0, 0.6]),
        ("INST_RETIRED.MACRO_FUSED", ..) => by([0.04, 0.067, 0.1, 0.0, 0.6]),
        ("BR_INST_RETIRED.ALL_BRANCHES", ..) => by([0.04, 0.067, 0.2, 0.70, 0.6]),
        _ => panic!("the level-3 model has no rate for {k}"),
    }
}

/// The bottleneck path each function was written to show at level 3.
const L3_PATHS: [[&str; 3]; 5] = [
    ["tma_backend_bound", "tma_memory_bound", "tma_l3_miss_bound"],
    ["tma_backend_bound", "tma_core_bound", "tma_divider"],
    [
        "tma_bad_speculation",
        "tma_branch_mispredicts",
        "tma_cond_tk_mispredicts",
    ],
    ["tma_frontend_bound", "tma_fetch_bandwidth", "tma_dsb"],
    [
        "tma_retiring",
        "tma_light_operations",
        "tma_other_light_ops",
    ],
];

/// The plan of `hrec record --td-level 3 -g` on Granite Rapids, with Intel's files of `dir`.
fn l3_plan(dir: &Path) -> (hrec::pmu::Pmus, hrec::pmu::uarch::CpuId, Plan) {
    let m = &GNR_L3;
    let pm = support::metricrec::perfmon(dir, m.fixture);
    let mp = hrec::event::plan::metric::plan_metrics(
        &support::pmus(m.fixture),
        &support::metricrec::host(m.fixture),
        Ok(&pm),
        &support::metricrec::td_level(3),
    )
    .unwrap();
    let opts = RecordOptions {
        call_graph: Some(CallGraph::Fp),
        ..RecordOptions::default()
    };
    plan_for(m, &opts, Some(&mp))
}

/// The level-3 recording ([`GNR_L3`]): each function in turn, the metric groups taking turns
/// on the PMU, every member's delta its rate ([`l3_rate`]) times the sample's cycles.
fn build_l3(bin: &Binary, dir: &Path) -> Vec<u8> {
    let m = &GNR_L3;
    let (pmus, cpu, plan) = l3_plan(dir);
    let meta = meta_of(m, &pmus, &cpu, &plan);
    let mut records = Records::default();
    side_band(&plan, bin, &mut records);
    let groups = support::metricrec::groups(&plan);
    let core = &m.cores[0];
    let mut rng = Rng(m.seed);
    let mut totals: Vec<Vec<u64>> = groups.iter().map(|g| vec![0; g.1.len()]).collect();
    // Each group's time on the PMU: the intervals ending in its samples (enabled: all).
    let mut running = vec![0u64; groups.len()];
    let mut per_event = vec![0u64; plan.events.len()];
    let mut time = T0;
    let mut n = 0usize;
    for (f, (func, (insns, ret))) in FUNCS.iter().zip(&bin.funcs).enumerate() {
        let weights = weights(func, insns);
        for _ in 0..SAMPLES_PER_FUNC {
            let g = (n / MUX_RUN) % groups.len();
            n += 1;
            let (sampler, members) = &groups[g];
            let period = (core.period as f64 * (1.0 + 0.03 * rng.normal())) as u64;
            let dt = 250_000 + (rng.unit() * 2000.0) as u64;
            time += dt;
            running[g] += dt;
            let (ip, chain) = if rng.unit() * FRAME_ONE_IN < 1.0 {
                // In `frame`, a leaf without a frame of its own: the frame-pointer walk goes
                // from its IP straight to main, its caller's caller.
                (
                    bin.frame,
                    vec![-512i64 as u64, BASE + bin.frame, BASE + ret],
                )
            } else {
                let ip = insns[pick(&mut rng, &weights)].0;
                (ip, vec![-512i64 as u64, BASE + ip, BASE + ret])
            };
            let values = members
                .iter()
                .zip(totals[g].iter_mut())
                .map(|((e, key), t)| {
                    *t += (l3_rate(f, key) * period as f64).round() as u64;
                    ReadValue {
                        value: *t,
                        id: id(*e),
                        lost: 0,
                    }
                })
                .collect();
            let enc = Encoder::new(plan.events[*sampler].attr);
            records.push(enc.sample(&SampleFields {
                misc: 2 | (1 << 14), // user, exact IP
                id: id(*sampler),
                ip: BASE + ip,
                pid: PID,
                tid: PID,
                time,
                period,
                read: ReadFields {
                    time_enabled: time - T0,
                    time_running: running[g],
                    values,
                },
                callchain: chain,
                ..SampleFields::default()
            }));
            per_event[*sampler] += 1;
        }
    }
    // The trailer's final counts: each group leader's read, with the group's times.
    let counts = groups
        .iter()
        .zip(&totals)
        .zip(&running)
        .flat_map(|(((_, members), tot), &run)| {
            members
                .iter()
                .zip(tot)
                .map(move |(&(e, _), &value)| FinalCount {
                    event: e,
                    id: id(e),
                    cpu: 0,
                    value,
                    time_enabled: time - T0,
                    time_running: run,
                })
        })
        .collect();
    records.per_event = per_event;
    records.counts = counts;
    write_file(m, bin, &meta, &plan, records, time)
}

/// `examples/recordings/<file>`.
fn checked_in(m: &Machine) -> PathBuf {
    root().join("examples/recordings").join(m.file)
}

/// The recordings are what the model makes of the checked-in binary, byte for byte;
/// `HREC_BLESS=1` (scripts/make-demo-recordings) writes them.
#[test]
fn recordings_are_what_the_model_makes() {
    let bin = binary();
    let mut made: Vec<(&Machine, Vec<u8>)> = [&GNR, &ARL].map(|m| (m, build(m, &bin))).into();
    // The level-3 recording needs Intel's files to plan its groups.
    match support::metricrec::perfmon_dir() {
        Some(dir) => made.push((&GNR_L3, build_l3(&bin, &dir))),
        None => eprintln!("{}: not checked", GNR_L3.file),
    }
    for (m, made) in made {
        let path = checked_in(m);
        if std::env::var_os("HREC_BLESS").is_some() {
            std::fs::write(&path, &made).unwrap();
            continue;
        }
        let have = std::fs::read(&path).unwrap_or_default();
        assert!(
            have == made,
            "{} is not what the demo model makes of {TDEMO} ({} bytes against {}): run \
             scripts/make-demo-recordings (HREC_BLESS=1 cargo test --test demo_recordings) \
             and review the difference",
            path.display(),
            have.len(),
            made.len()
        );
    }
}

/// `hrec ARGS` in the repository root (where the recordings find the binary); its stdout.
fn run(args: &[&str]) -> String {
    let o = support::hrec_in(root(), args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "hrec {args:?}: {err}");
    out
}

fn json(args: &[&str]) -> Value {
    let out = run(args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The table of `event` in a report.
fn table<'a>(j: &'a Value, event: &str) -> &'a Value {
    j["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["event"] == event)
        .unwrap_or_else(|| panic!("no table of {event}: {j:#}"))
}

/// A function's row.
fn row<'a>(t: &'a Value, func: &str) -> &'a Value {
    t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"]["sym"] == format!("[.] {func}"))
        .unwrap_or_else(|| panic!("no row {func} in {t:#}"))
}

/// A level-1 or level-2 share, in percent.
fn pct(r: &Value, level: &str, node: &str) -> f64 {
    r["topdown"][level][node]
        .as_f64()
        .unwrap_or_else(|| panic!("no {level} {node} in {r:#}"))
}

/// The largest level-1 category of a row.
fn top(r: &Value) -> String {
    let l1 = r["topdown"]["level1"].as_object().unwrap();
    l1.iter()
        .max_by(|a, b| a.1.as_f64().unwrap().total_cmp(&b.1.as_f64().unwrap()))
        .unwrap()
        .0
        .clone()
}

/// Each function's report row shows the node it was written to stress, every function
/// resolves to its source, the retire latency is highest on chase, and the headers say the
/// recording is synthetic.
#[test]
fn granite_rapids_recording_teaches_one_node_per_function() {
    let file = checked_in(&GNR);
    let file = file.to_str().unwrap();
    let j = json(&[
        "report",
        "--json",
        "-i",
        file,
        "--sort",
        "sym",
        "--td-level",
        "2",
    ]);
    let t = table(&j, "cycles:P");
    assert_eq!(t["samples"], 5 * SAMPLES_PER_FUNC as u64);
    let rows: Vec<(&str, &Value)> = FUNCS.iter().map(|f| (*f, row(t, f))).collect();
    for (f, r) in &rows {
        assert_eq!(r["samples"], SAMPLES_PER_FUNC as u64, "{f}");
    }
    let r = |f: &str| rows.iter().find(|x| x.0 == f).unwrap().1;
    assert!(pct(r("chase"), "level1", "Backend Bound") >= 80.0);
    assert!(pct(r("chase"), "level2", "Memory Bound") >= 80.0);
    assert_eq!(top(r("divide")), "Backend Bound");
    assert!(
        pct(r("divide"), "level2", "Core Bound")
            > 10.0 * pct(r("divide"), "level2", "Memory Bound")
    );
    assert_eq!(top(r("branchy")), "Bad Speculation");
    assert!(pct(r("branchy"), "level2", "Branch Mispredicts") >= 50.0);
    // branchy has the most Bad Speculation of all.
    for (f, x) in &rows {
        if *f != "branchy" {
            assert!(pct(x, "level1", "Bad Speculation") < 5.0, "{f}");
        }
    }
    assert_eq!(top(r("fetch")), "Frontend Bound");
    assert_eq!(top(r("sum")), "Retiring");
    // Retire latency: chase's loads wait for memory, divide's for the divider.
    let mean = |f: &str| r(f)["retire_latency"]["mean"].as_f64().unwrap();
    assert!(mean("chase") > 200.0, "{}", mean("chase"));
    assert!((10.0..20.0).contains(&mean("divide")), "{}", mean("divide"));
    assert!(mean("sum") < 3.0);

    // The text report's header says what it is.
    let out = run(&["report", "--stdio", "-i", file, "--sort", "sym"]);
    assert!(
        out.contains("# cmdline: SYNTHETIC (scripts/make-demo-recordings)"),
        "{out}"
    );
    assert!(out.contains("not measured"), "{out}");
    let info = run(&["info", "-i", file]);
    assert!(info.contains("# target : SYNTHETIC"), "{info}");
    assert!(info.contains("# notice : SYNTHETIC"), "{info}");

    // annotate: chase's hottest instruction is its load, with the memory latency, at a
    // source line of tdemo.c.
    let a = json(&["annotate", "--json", "-i", file, "chase"]);
    let f = &a["symbols"][0];
    let insns = f["instructions"].as_array().unwrap();
    let hot = insns
        .iter()
        .max_by_key(|i| i["samples"].as_u64().unwrap_or(0))
        .unwrap();
    assert!(
        hot["text"].as_str().unwrap_or("").starts_with("mov"),
        "{hot:#}"
    );
    assert!(
        hot["retire_latency"]["mean"].as_f64().unwrap() > 200.0,
        "{hot:#}"
    );
    let text = run(&["annotate", "-i", file, "chase"]);
    assert!(text.contains("tdemo.c"), "{text}");
}

/// The hybrid recording: a table per core kind, each with its own TopDown tree (Skymont's
/// E-core level 2), retire latencies on the P-cores only.
#[test]
fn arrow_lake_recording_has_each_cores_own_topdown() {
    let file = checked_in(&ARL);
    let file = file.to_str().unwrap();
    let j = json(&[
        "report",
        "--json",
        "-i",
        file,
        "--sort",
        "sym",
        "--td-level",
        "2",
    ]);
    let p = table(&j, "cpu_core/cycles/P");
    let e = table(&j, "cpu_atom/cycles/P");
    let n = |t: &Value| t["samples"].as_u64().unwrap();
    assert_eq!(n(p) + n(e), 5 * SAMPLES_PER_FUNC as u64);
    assert!(n(p) > n(e) && n(e) > 0, "{} {}", n(p), n(e));
    for t in [p, e] {
        assert_eq!(top(row(t, "chase")), "Backend Bound");
        assert_eq!(top(row(t, "branchy")), "Bad Speculation");
        assert_eq!(top(row(t, "fetch")), "Frontend Bound");
        assert_eq!(top(row(t, "sum")), "Retiring");
    }
    assert!(pct(row(p, "chase"), "level2", "Memory Bound") >= 80.0);
    assert!(pct(row(e, "chase"), "level2", "Resource Bound") >= 80.0);
    assert!(pct(row(e, "branchy"), "level2", "Branch Mispredicts") >= 40.0);
    assert!(p["retire_latency"]["mean"].as_f64().unwrap() > 10.0);
    assert!(e["retire_latency"].is_null(), "{e:#}");
    let out = run(&["report", "--stdio", "-i", file, "--sort", "sym"]);
    assert!(
        out.contains("# cmdline: SYNTHETIC (scripts/make-demo-recordings)"),
        "{out}"
    );
}

/// The level-3 recording: `hrec report --td-level 3 --json` gives every function Intel's
/// formulas on the model's truth ([`l3_rate`]) within 0.1 point, the bottleneck path it was
/// written to show (the same as toplev's path on the truth), and well over the read minimum
/// of every group; `frame`, with a handful of samples, gets no number; the text tree marks
/// the path.
#[test]
fn granite_rapids_level_3_recording_shows_each_functions_bottleneck() {
    use hrec::metrics::perfmon::Metric;
    use support::metricrec::{perfmon, perfmon_dir, truth_path, truth_threads as truth};
    let Some(dir) = perfmon_dir() else { return };
    let pm = perfmon(&dir, GNR_L3.fixture);
    let (_, _, plan) = l3_plan(&dir);
    let groups = support::metricrec::groups(&plan);
    let file = checked_in(&GNR_L3);
    let file = file.to_str().unwrap();
    let dir_s = dir.to_str().unwrap();
    let j = json(&[
        "report",
        "--json",
        "-i",
        file,
        "--sort",
        "sym",
        "--td-level",
        "3",
        "--perfmon",
        dir_s,
    ]);
    let t = table(&j, "cycles:P");
    let chosen = pm.tma_metrics(3);
    let no_latency = |_: &str| None;
    for (f, func) in FUNCS.iter().enumerate() {
        let r = row(t, func);
        let rate = |k: &str| l3_rate(f, k);
        let metrics = r["metrics"].as_object().unwrap();
        assert_eq!(metrics.len(), chosen.len(), "{func}");
        for m in &chosen {
            let want = truth(m, &rate, &no_latency, 2)
                .unwrap_or_else(|| panic!("{func} {}: no value on the truth", m.perf_name()));
            let got = metrics[&m.perf_name()]
                .as_f64()
                .unwrap_or_else(|| panic!("{func} {}: not computed: {r:#}", m.perf_name()));
            assert!(
                (got - want).abs() < 0.1,
                "{func} {}: report {got}, Intel's formula on the truth {want}",
                m.perf_name()
            );
        }
        let value = |m: &Metric| truth(m, &rate, &no_latency, 2);
        let path: Vec<String> = r["bottleneck"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect();
        assert_eq!(path, truth_path(&pm, &chosen, &value), "{func}");
        assert_eq!(path, L3_PATHS[f], "{func}");
        let reads: Vec<u64> = r["metric_groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["reads"].as_u64().unwrap())
            .collect();
        assert_eq!(reads.len(), groups.len(), "{func}");
        assert!(reads.iter().all(|&n| n >= 40), "{func}: {reads:?}");
    }
    // `frame`: a few samples, below the minimum of every group.
    let frame = row(t, "frame");
    let reads: Vec<u64> = frame["metric_groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["reads"].as_u64().unwrap())
        .collect();
    assert!(
        reads.iter().all(|&n| n < 20) && reads.iter().sum::<u64>() >= 5,
        "frame: {reads:?}"
    );
    assert!(
        frame["metrics"]
            .as_object()
            .unwrap()
            .values()
            .all(Value::is_null),
        "{frame:#}"
    );
    // The text tree of divide: the path marked, the divider's value the truth's.
    let out = run(&[
        "report",
        "--stdio",
        "-i",
        file,
        "--sort",
        "sym",
        "--td-level",
        "3",
        "--perfmon",
        dir_s,
        "--symbol-filter",
        "divide",
        "--no-children",
        "-g",
        "none",
    ]);
    let marked: Vec<&str> = out
        .lines()
        .filter(|l| l.ends_with("<=="))
        .filter_map(|l| l.split('|').nth(1)?.split_whitespace().next())
        .collect();
    assert_eq!(marked, L3_PATHS[1], "{out}");
    let divider = truth(
        pm.metric("tma_divider").unwrap(),
        &|k| l3_rate(1, k),
        &no_latency,
        2,
    );
    assert!(
        out.contains(&format!("{:.1}  <==", divider.unwrap())),
        "{out}"
    );
    assert!(
        out.contains("--td-level 3 -g -- examples/topdown/tdemo"),
        "{out}"
    );
    // The groups took turns on the PMU: the note of their times names each.
    let note = out
        .lines()
        .find(|l| l.starts_with("# metrics:") && l.contains("time on the PMU"))
        .unwrap_or_else(|| panic!("no note of the groups' times: {out}"));
    assert_eq!(note.matches("cycles:P #").count(), groups.len(), "{note}");
}

/// The level-3 recording's eight `cycles:P` samplers (one per metric group) are one event to
/// the user: the flame graph draws all their samples, the run's whole cycles profile, and
/// says so once.
#[test]
fn flame_graph_of_a_level_3_recording_draws_every_groups_samples() {
    let file = "examples/recordings/tdemo-graniterapids-l3.synthetic.hrec";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.txt");
    let o = support::hrec_in(
        root(),
        &[
            "flamegraph",
            "-i",
            file,
            "--folded",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let folded = std::fs::read_to_string(&out).unwrap();
    let drawn: u64 = folded
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    let samples: u64 = hrec::data::Reader::open(&root().join(file))
        .unwrap()
        .trailer()
        .unwrap()
        .samples;
    assert_eq!(drawn, samples);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("hrec: drawing the 8 events named cycles:P as one"),
        "{err}"
    );
}
