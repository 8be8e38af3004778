//! `hrec annotate --td-level 3` / `--metrics`: Intel's metrics per basic block, on a synthetic
//! Granite Rapids recording made from the real planner's `--td-level 3` plan (Intel's files
//! from `../shared/perfmon`), byte for byte in the kernel's layout and written with the real
//! file writer, whose samples fall on real instructions of `chase` in the checked-in
//! `examples/topdown/tdemo` (mapped by an MMAP2 record with its build-id). Two blocks of the
//! function follow two different truths (events per cycle), a third has too few reads; the
//! expected values are Intel's formulas evaluated here on each block's truth with the metrics
//! evaluator ([`support::metricrec`]), not through annotate's code.

mod support;

use std::path::{Path, PathBuf};

use hrec::event::plan::{Plan, RecordOptions};
use hrec::metrics::perfmon::{Metric, Perfmon};
use iced_x86::{Decoder, DecoderOptions, FlowControl};
use object::{Object as _, ObjectSection as _, ObjectSymbol as _};
use serde_json::Value;
use support::encode::{Encoder, Mmap2Fields, Mmap2File, SampleId};
use support::metricgroups::synth;
use support::metricrec::{
    Synth, groups, id, perfmon, perfmon_dir, plan_of, td_level, truth, truth_path,
};
use support::{hrec_in, text};

const MODEL: &str = "graniterapids";
const FUNC: &str = "chase";
/// [`Synth`]'s thread.
const PID: u32 = 500;
const BASE: u64 = 0x5614_3a20_0000;
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

/// The function of [`support::metricgroups::rate`]'s truth a block follows: `chase` waits
/// on memory, `divide` on the divider, `rare` is the third truth.
fn func_of(t: Truth) -> &'static str {
    match t {
        Truth::Memory => "chase",
        Truth::Divider => "divide",
        Truth::Rare => "rare",
    }
}

fn truth_of(func: &str) -> Truth {
    [Truth::Memory, Truth::Divider, Truth::Rare]
        .into_iter()
        .find(|&t| func_of(t) == func)
        .expect("a truth's function")
}

/// Events per cycle of a block under truth `t`, by [`support::metricrec::key`].
fn rate(t: Truth, k: &str) -> f64 {
    support::metricgroups::rate(func_of(t), k)
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

/// The MMAP2 of tdemo's text in thread [`PID`], by the plan's tracking event.
fn mmap_of(plan: &Plan, bin: &Binary) -> Vec<u8> {
    let tracking = plan.events.iter().find(|e| e.tracking).unwrap();
    let sid = SampleId {
        pid: PID,
        tid: PID,
        time: 2,
        id: id(tracking.index),
        ..SampleId::default()
    };
    let (start, len, pgoff) = bin.text;
    Encoder::new(tracking.attr).mmap2(
        &sid,
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
    )
}

/// Writes the recording of `plan` with the blocks' samples into `dir`: [`Synth`]'s, its
/// samples user-mode at the blocks' addresses in turn, after an MMAP2 of tdemo.
fn write_recording(dir: &Path, plan: &Plan, bin: &Binary, blocks: &[Block]) {
    let mmap = mmap_of(plan, bin);
    let funcs: Vec<(&str, u64)> = blocks.iter().map(|b| (func_of(b.truth), 0)).collect();
    let ip = |f: &str, round: u64, gi: usize| {
        let b = blocks.iter().find(|b| func_of(b.truth) == f).unwrap();
        BASE + b.addrs[(round as usize + gi) % b.addrs.len()]
    };
    Synth {
        funcs: &funcs,
        reads: &|f, g| reads(truth_of(f), g),
        ip: Some(&ip),
        misc: USER_EXACT,
        leading_records: mmap,
        ..synth(MODEL)
    }
    .write(&dir.join("hrec.data"), plan);
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

/// An E-core event's blocks get hrec's E-core tree: an Alder Lake `--td-level 3` recording
/// ([`support::adl::adl_plan`]) whose E-core groups read in `chase`'s loop block, from the
/// E-core truth of [`support::adl::ecore_rate`] (the P-core groups not sampled).
/// `annotate --event cpu_atom/cycles/P` gives the block every node of Intel's E-core tree
/// within 0.1 point of Intel's formulas on the truth, toplev's path, each E-core group's
/// reads, and the path in the text.
#[test]
fn ecore_tree_per_basic_block_on_alder_lake() {
    use support::adl::{ADL, adl_plan, ecore_rate, ecore_truth};
    let Some(pdir) = perfmon_dir() else { return };
    let plan = adl_plan(&pdir);
    let ecore: Vec<usize> = groups(&plan)
        .iter()
        .enumerate()
        .filter(|(_, (s, _))| plan.events[*s].pmu.as_deref() == Some("cpu_atom"))
        .map(|(g, _)| g)
        .collect();
    assert!(ecore.len() >= 3, "{} E-core groups", ecore.len());
    let bin = binary();
    let block = sampled_blocks(&bin).swap_remove(0);
    let tmp = tempfile::tempdir().unwrap();
    let ip = |_: &str, round: u64, gi: usize| {
        BASE + block.addrs[(round as usize + gi) % block.addrs.len()]
    };
    let e_reads = 30;
    Synth {
        funcs: &[("ecore", 0)],
        rate: &|_, k| ecore_rate(k),
        reads: &|_, g| if ecore.contains(&g) { e_reads } else { 0 },
        ip: Some(&ip),
        misc: USER_EXACT,
        leading_records: mmap_of(&plan, &bin),
        ..synth(ADL)
    }
    .write(&tmp.path().join("hrec.data"), &plan);
    let pdir_s = pdir.display().to_string();
    let flags = [
        "--td-level",
        "3",
        "--perfmon",
        &pdir_s,
        "--event",
        "cpu_atom/cycles/P",
    ];
    let mut args = vec!["annotate", "--json", FUNC];
    args.extend(flags);
    let v = run_json(tmp.path(), &args);
    let f = &v["symbols"][0];
    assert_eq!(f["name"], FUNC, "{v:#}");
    let bj = f["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["start"] == block.start)
        .unwrap_or_else(|| panic!("no block at {:x}: {f:#}", block.start));
    let reads: Vec<&Value> = bj["metric_groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| &g["reads"])
        .collect();
    assert_eq!(reads, vec![&Value::from(e_reads); ecore.len()], "{bj:#}");
    let metrics = bj["metrics"].as_object().unwrap();
    let want = ecore_truth();
    assert_eq!(metrics.len(), want.len(), "{metrics:?}");
    for (name, w) in &want {
        let got = metrics[name]
            .as_f64()
            .unwrap_or_else(|| panic!("{name}: {bj:#}"));
        assert!(
            (got - w).abs() < 0.1,
            "E-core block {name}: {got}, want {w}"
        );
    }
    let path = [
        "tma_backend_bound",
        "tma_resource_bound",
        "tma_mem_scheduler",
    ];
    assert_eq!(bj["bottleneck"], serde_json::json!(path), "{bj:#}");
    // The text: the block's path, marked.
    let mut targs = vec!["annotate", "--stdio", FUNC];
    targs.extend(flags);
    let o = hrec_in(tmp.path(), &targs);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let lines = block_lines(&out, &block);
    let first = lines.first().unwrap_or_else(|| panic!("{out}"));
    let names: Vec<&str> = first
        .strip_suffix(" <==")
        .unwrap_or_else(|| panic!("{out}"))
        .split(" > ")
        .map(|p| p.rsplit_once(' ').unwrap().0)
        .collect();
    assert_eq!(names, path, "{out}");
}
