//! `hrec diff` against `perf diff` on the same pairs of perf.data files, TopDown and
//! retire-latency deltas on synthetic recordings written through the real writer, and the
//! errors.
//!
//! The perf comparison parses both tools' stdio by the columns of their dotted line, so a
//! blank cell (a row only one file has) is a blank cell on both sides: the rows, their order
//! and every printed number must be the same. hrec's JSON is checked too, rounded as perf
//! prints: its numbers are the library's, not the text's.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use hrec::data::{EventId, EventMeta, Meta, PmuMeta, Trailer, Writer};
use hrec::event::plan::{Plan, RecordOptions, Role};
use serde_json::Value;
use support::encode::{Encoder, ReadFields, ReadValue, SampleFields, SampleId};
use support::{hrec_in, text};

fn recordings() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings")
}

/// The cells of each row of a `perf diff`-style table, cut at the columns of its dotted line
/// (`# ........  .........`); the last column runs to the end of the line.
fn table_rows(out: &str) -> Vec<Vec<String>> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut rows = Vec::new();
    for l in out.lines() {
        if l.starts_with("# .") {
            spans.clear();
            let b = l.as_bytes();
            let mut i = 2;
            while i < b.len() {
                if b[i] == b'.' {
                    let start = i;
                    while i < b.len() && b[i] == b'.' {
                        i += 1;
                    }
                    spans.push((start, i));
                } else {
                    i += 1;
                }
            }
            continue;
        }
        if l.starts_with('#') || l.trim().is_empty() {
            continue;
        }
        assert!(!spans.is_empty(), "a row before the dotted line: {l}");
        let last = spans.len() - 1;
        rows.push(
            spans
                .iter()
                .enumerate()
                .map(|(k, &(a, b))| {
                    let end = if k == last { l.len() } else { b.min(l.len()) };
                    l.get(a.min(l.len())..end).unwrap_or("").trim().to_string()
                })
                .collect(),
        );
    }
    rows
}

fn run_perf(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("perf")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run perf");
    assert!(
        o.status.success(),
        "perf {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn hrec_ok(dir: &Path, args: &[&str]) -> String {
    let o = hrec_in(dir, args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "hrec {args:?}: {err}");
    out
}

/// The cells perf would print for a JSON row: baseline, the computed value, the keys.
fn json_cells(r: &Value, compute: &str, keys: &[&str]) -> Vec<String> {
    let pct = |v: &Value| v.as_f64().map_or(String::new(), |x| format!("{x:.2}%"));
    let value = if r["new"].is_null() {
        String::new()
    } else if compute.starts_with("delta") {
        format!("{:+.2}%", r["delta"].as_f64().unwrap())
    } else if r["old"].is_null() {
        "N/A".into()
    } else {
        format!("{:.6}", r["ratio"].as_f64().unwrap())
    };
    let mut v = vec![pct(&r["baseline"]), value];
    v.extend(
        keys.iter()
            .map(|k| r["key"][*k].as_str().unwrap().to_string()),
    );
    v
}

/// hrec diff = perf diff on `old`/`new` in `dir`, for each compute method, in text and JSON;
/// `keep` picks the rows compared (all, or those both tools name the same way).
fn compare(dir: &Path, old: &str, new: &str, extra: &[&str], keep: &dyn Fn(&[String]) -> bool) {
    for compute in ["delta-abs", "delta", "ratio"] {
        let mut args = vec!["diff", old, new, "-c", compute];
        args.extend_from_slice(extra);
        let perf_out = run_perf(dir, &args);
        // A key a filter pins to one value is not printed (-d prog): nor compared.
        let head = perf_out
            .lines()
            .find(|l| l.starts_with("# Baseline"))
            .unwrap();
        let keys: Vec<&str> = [("Shared Object", "dso"), ("Symbol", "sym")]
            .iter()
            .filter(|(h, _)| head.contains(h))
            .map(|&(_, k)| k)
            .collect();
        let perf: Vec<Vec<String>> = table_rows(&perf_out)
            .into_iter()
            .filter(|r| keep(r))
            .collect();
        assert!(!perf.is_empty(), "perf diff {args:?} printed no rows");
        let hrec: Vec<Vec<String>> = table_rows(&hrec_ok(dir, &args))
            .into_iter()
            .filter(|r| keep(r))
            .collect();
        assert_eq!(hrec, perf, "hrec diff {args:?} (left) vs perf diff (right)");

        args.push("--json");
        let j: Value = serde_json::from_str(&hrec_ok(dir, &args)).unwrap();
        let rows: Vec<Vec<String>> = j["events"][0]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| json_cells(r, compute, &keys))
            .filter(|r| keep(r))
            .collect();
        assert_eq!(
            rows, perf,
            "hrec diff {args:?} JSON (left) vs perf diff (right)"
        );
    }
}

#[test]
fn same_rows_and_numbers_as_perf_diff_on_the_fixtures() {
    if support::perf().is_none() {
        return;
    }
    let dir = recordings();
    let all = |_: &[String]| true;
    for (old, new) in [
        ("plain.perf.data", "callchain.perf.data"),
        ("callchain.perf.data", "plain.perf.data"),
        ("plain.perf.data", "callchain-z.perf.data"),
    ] {
        compare(&dir, old, new, &["--symfs", "root"], &all);
    }
    // The whole text, headers and widths included, with the periods and formulas.
    let args = [
        "diff",
        "plain.perf.data",
        "callchain.perf.data",
        "--symfs",
        "root",
        "-p",
        "-F",
    ];
    assert_eq!(hrec_ok(&dir, &args), run_perf(&dir, &args));
}

/// Two builds of one C program, the second moving the functions and changing their balance:
/// rows both files have (matched by name across the rebuild), rows only one has, and the
/// orders of every method.
#[test]
fn same_rows_and_numbers_as_perf_diff_across_a_rebuild() {
    if support::perf().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let src = r#"
#include <stdlib.h>
volatile long sink;
#ifdef NEW
__attribute__((noinline)) void pad(long n) { for (long i = 0; i < n; i++) sink += i * 3; }
#endif
__attribute__((noinline)) void hot(long n) { for (long i = 0; i < n; i++) sink += i; }
__attribute__((noinline)) void warm(long n) { for (long i = 0; i < n; i++) sink ^= i; }
#ifdef NEW
__attribute__((noinline)) void added(long n) { for (long i = 0; i < n; i++) sink -= i; }
#else
__attribute__((noinline)) void gone(long n) { for (long i = 0; i < n; i++) sink -= i; }
#endif
int main(int argc, char **argv) {
    long a = atol(argv[1]), b = atol(argv[2]), c = atol(argv[3]);
    hot(a); warm(b);
#ifdef NEW
    added(c); pad(c / 10);
#else
    gone(c);
#endif
    return 0;
}
"#;
    std::fs::write(dir.join("prog.c"), src).unwrap();
    for (sub, def) in [("v1", "-DOLD"), ("v2", "-DNEW")] {
        std::fs::create_dir(dir.join(sub)).unwrap();
        let st = Command::new("cc")
            .args(["-O1", "-g", def, "-o", &format!("{sub}/prog"), "prog.c"])
            .current_dir(dir)
            .status();
        if !st.is_ok_and(|s| s.success()) {
            eprintln!("skipped: no C compiler (cc) to build the program to profile");
            return;
        }
    }
    for (name, prog, args) in [
        ("old.data", "v1/prog", ["60000000", "20000000", "10000000"]),
        ("new.data", "v2/prog", ["20000000", "60000000", "10000000"]),
    ] {
        let mut a = vec![
            "record",
            "-q",
            "-F",
            "4000",
            "-e",
            "cpu-clock:u",
            "-o",
            name,
            "--",
            prog,
        ];
        a.extend(args);
        run_perf(dir, &a);
    }
    // perf prints an unresolved address as a file offset, hrec as the address: such rows
    // are left out of the comparison (of the matching, on both sides alike).
    let named = |r: &[String]| !r.last().is_some_and(|s| s.contains(" 0x"));
    compare(dir, "old.data", "new.data", &[], &named);
    compare(dir, "old.data", "new.data", &["-o", "0"], &named);
    compare(dir, "old.data", "new.data", &["-b"], &named);
    compare(
        dir,
        "old.data",
        "new.data",
        &["-d", "prog", "-S", "hot,warm"],
        &named,
    );

    // The functions both builds have are found again at their new addresses.
    let j: Value =
        serde_json::from_str(&hrec_ok(dir, &["diff", "old.data", "new.data", "--json"])).unwrap();
    let rows = j["events"][0]["rows"].as_array().unwrap();
    let row = |s: &str| {
        rows.iter()
            .find(|r| r["key"]["sym"] == format!("[.] {s}"))
            .unwrap_or_else(|| panic!("no {s} in {j:#}"))
    };
    assert!(!row("hot")["old"].is_null() && !row("hot")["new"].is_null());
    assert!(row("hot")["delta"].as_f64().unwrap() < 0.0);
    assert!(row("warm")["delta"].as_f64().unwrap() > 0.0);
    assert!(row("gone")["new"].is_null() && row("gone")["delta"].is_null());
    assert!(row("added")["old"].is_null() && row("added")["ratio"].is_null());
}

/// perf's default names: `perf diff` alone compares perf.data.old with perf.data; hrec takes
/// them when there are no hrec files and says so.
#[test]
fn default_files_fall_back_to_perfs_and_are_named_on_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(
        recordings().join("plain.perf.data"),
        tmp.path().join("perf.data.old"),
    )
    .unwrap();
    std::fs::copy(
        recordings().join("callchain.perf.data"),
        tmp.path().join("perf.data"),
    )
    .unwrap();
    let symfs = recordings().join("root");
    let o = hrec_in(tmp.path(), &["diff", "--symfs", symfs.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("comparing perf.data.old (baseline) with perf.data"),
        "{err}"
    );
    let explicit = hrec_ok(
        &recordings(),
        &[
            "diff",
            "plain.perf.data",
            "callchain.perf.data",
            "--symfs",
            "root",
        ],
    );
    assert_eq!(out, explicit);
}

#[test]
fn bad_input_is_one_line_with_exit_1_for_files_and_2_for_usage() {
    let dir = recordings();
    let one_line = |args: &[&str], code: i32, what: &str| {
        let o = hrec_in(&dir, args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?} printed {out}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        assert!(lines[0].starts_with("hrec: error: "), "{err}");
        assert!(lines[0].contains(what), "{args:?}: {err}");
    };
    one_line(
        &["diff", "plain.perf.data", "no-such.data"],
        1,
        "no-such.data",
    );
    one_line(
        &["diff", "no-such.data", "plain.perf.data"],
        1,
        "no-such.data",
    );
    let not_one = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    one_line(
        &["diff", "plain.perf.data", not_one.to_str().unwrap()],
        1,
        "is not an hrec file",
    );
    one_line(
        &["diff", "plain.perf.data", "plain.perf.data", "-c", "cycles"],
        2,
        "unknown compute method \"cycles\"",
    );
    one_line(
        &[
            "diff",
            "plain.perf.data",
            "plain.perf.data",
            "-c",
            "wdiff:1",
        ],
        2,
        "wdiff:W1,W2",
    );
    one_line(
        &["diff", "plain.perf.data", "plain.perf.data", "-o", "2"],
        2,
        "--order",
    );
    one_line(
        &["diff", "plain.perf.data", "plain.perf.data", "-s", "nope"],
        2,
        "--sort",
    );
}

// ---- Synthetic TopDown recordings -------------------------------------------------------

const KALLSYMS: &str = "\
ffffffff81000000 T _text
ffffffff81001000 T hot_a
ffffffff81002000 T hot_b
ffffffff81003000 T after_b
";
const HOT_A: u64 = 0xffffffff81001010;
const HOT_B: u64 = 0xffffffff81002020;
/// Kernel mode, exact ip.
const KERNEL_EXACT: u16 = 1 | (1 << 14);

/// TopDown deltas of one group read, in the members' order: slots, retiring, bad-spec,
/// fe-bound, be-bound, heavy-ops, br-mispredict, fetch-lat, mem-bound.
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
const RETIRING: Td = [1000, 600, 100, 100, 200, 300, 50, 60, 100];
const CORE_BOUND: Td = [1000, 100, 100, 200, 600, 50, 50, 100, 500];
const FRONTEND: Td = [1000, 200, 100, 500, 200, 100, 50, 300, 100];

fn base(name: &str) -> &str {
    let n = name.split('/').nth(1).unwrap_or(name);
    n.split(':').next().unwrap_or(n)
}

/// A sapphirerapids `record -W` recording (the cycles:P sampler leading a slots group),
/// samples of kernel code named by a kallsyms side block.
struct Synth {
    plan: Plan,
    meta: Meta,
    records: Vec<u8>,
    totals: Vec<u64>,
    time: u64,
}

impl Synth {
    fn new() -> Synth {
        let opts = RecordOptions {
            weight: true,
            ..RecordOptions::default()
        };
        let plan = support::plan("sapphirerapids", &opts);
        let meta = Meta {
            hrec_version: "test".into(),
            target: "workload".into(),
            pmus: vec![PmuMeta {
                name: "cpu".into(),
                type_: 4,
                cpus: None,
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
                        id: 1000 + e.index as u64,
                        cpu: 0,
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
            totals: Vec::new(),
            time: 1,
        };
        let c = s.sampler();
        let sid = SampleId {
            pid: 500,
            tid: 500,
            time: 1,
            id: 1000 + c as u64,
            ..SampleId::default()
        };
        let enc = Encoder::new(s.meta.events[c].attr);
        s.records.extend(enc.comm(&sid, 500, 500, b"app", true));
        s
    }

    fn sampler(&self) -> usize {
        self.plan
            .events
            .iter()
            .position(|e| e.role == Role::Sampler)
            .unwrap()
    }

    /// A sample at `ip` whose group read adds `td` to the running totals, with retire
    /// latency `lat`.
    fn sample(&mut self, ip: u64, td: Td, lat: u64) {
        let c = self.sampler();
        self.time += 1000;
        let leader = self.plan.events[c].leader;
        let members: Vec<usize> = self
            .plan
            .events
            .iter()
            .filter(|e| e.leader == leader)
            .map(|e| e.index)
            .collect();
        self.totals.resize(members.len(), 0);
        for (k, &m) in members.iter().enumerate() {
            let name = base(&self.plan.events[m].name);
            self.totals[k] += TD_MEMBERS
                .iter()
                .position(|t| *t == name)
                .map_or(100, |p| td[p]);
        }
        let values = members
            .iter()
            .zip(&self.totals)
            .map(|(&m, &v)| ReadValue {
                value: v,
                id: 1000 + m as u64,
                lost: 0,
            })
            .collect();
        let enc = Encoder::new(self.meta.events[c].attr);
        self.records.extend(enc.sample(&SampleFields {
            misc: KERNEL_EXACT,
            id: 1000 + c as u64,
            ip,
            pid: 500,
            tid: 500,
            time: self.time,
            cpu: 0,
            period: 100,
            read: ReadFields {
                values,
                ..ReadFields::default()
            },
            weight: lat << 48,
            callchain: vec![-128i64 as u64, ip],
            ..SampleFields::default()
        }));
    }

    fn write(&self, path: &Path) {
        let mut w = Writer::create(path, &self.meta).unwrap();
        w.write_side("kallsyms", KALLSYMS.as_bytes()).unwrap();
        w.write_records(&self.records, 0).unwrap();
        w.finish(Trailer::default()).unwrap();
    }
}

/// Level-1 shares (retiring, bad spec, frontend, backend) of a sum of group-read deltas, as
/// percentages of the sum of the four.
fn l1(reads: &[Td]) -> [f64; 4] {
    let sum = |i: usize| reads.iter().map(|t| t[i]).sum::<u64>() as f64;
    let all: f64 = (1..5).map(sum).sum();
    std::array::from_fn(|i| 100.0 * sum(i + 1) / all)
}

fn mean(v: &[u64]) -> f64 {
    v.iter().sum::<u64>() as f64 / v.len() as f64
}

#[test]
fn topdown_and_retire_latency_deltas_per_symbol() {
    // OLD: hot_a retires well, hot_b is core bound. NEW: hot_a turns core bound and slower,
    // hot_b frontend bound and faster.
    let (old_a, old_b) = ([RETIRING; 12], [CORE_BOUND; 12]);
    let new_a: Vec<Td> = [RETIRING; 4].into_iter().chain([CORE_BOUND; 8]).collect();
    let new_b = [FRONTEND; 12];
    let lat = |base: u64| -> Vec<u64> { (0..12).map(|i| base + 3 * i).collect() };
    let (old_lat_a, old_lat_b, new_lat_a, new_lat_b) = (lat(20), lat(50), lat(45), lat(8));
    let tmp = tempfile::tempdir().unwrap();
    let write = |name: &str, a: &[Td], la: &[u64], b: &[Td], lb: &[u64]| {
        let mut s = Synth::new();
        for i in 0..a.len().max(b.len()) {
            if let Some(td) = a.get(i) {
                s.sample(HOT_A, *td, la[i]);
            }
            if let Some(td) = b.get(i) {
                s.sample(HOT_B, *td, lb[i]);
            }
        }
        s.write(&tmp.path().join(name));
    };
    write("old.hrec", &old_a, &old_lat_a, &old_b, &old_lat_b);
    write("new.hrec", &new_a, &new_lat_a, &new_b, &new_lat_b);

    let j: Value = serde_json::from_str(&hrec_ok(
        tmp.path(),
        &["diff", "old.hrec", "new.hrec", "--json"],
    ))
    .unwrap();
    let t = &j["events"][0];
    assert_eq!(t["event"], "cycles:P");
    let row = |s: &str| {
        t["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"]["sym"] == format!("[k] {s}"))
            .unwrap_or_else(|| panic!("no {s} in {t:#}"))
    };
    let labels = [
        "Retiring",
        "Bad Speculation",
        "Frontend Bound",
        "Backend Bound",
    ];
    for (sym, old, new, lo, ln) in [
        ("hot_a", &old_a[..], &new_a[..], &old_lat_a, &new_lat_a),
        ("hot_b", &old_b[..], &new_b[..], &old_lat_b, &new_lat_b),
    ] {
        let r = row(sym);
        let (a, b) = (l1(old), l1(new));
        for (i, k) in labels.iter().enumerate() {
            let got = r["topdown_delta"][k].as_f64().unwrap();
            assert!(
                (got - (b[i] - a[i])).abs() < 1e-9,
                "{sym} {k}: {got} in {r:#}"
            );
            let old_share = r["old"]["topdown"]["level1"][k].as_f64().unwrap();
            assert!((old_share - a[i]).abs() < 1e-9, "{sym} {k}: {r:#}");
        }
        let d = r["retire_latency_mean_delta"].as_f64().unwrap();
        assert!((d - (mean(ln) - mean(lo))).abs() < 1e-9, "{sym}: {r:#}");
        // Same periods in both: no change of share.
        assert_eq!(r["delta"].as_f64(), Some(0.0));
    }

    // The text: hrec's columns after perf's, with their values to one decimal.
    let out = hrec_ok(tmp.path(), &["diff", "old.hrec", "new.hrec"]);
    assert!(
        out.contains("# TopDown of the old recording (24 group reads):"),
        "{out}"
    );
    let rows = table_rows(&out);
    let head = out
        .lines()
        .find(|l| l.starts_with("# Baseline"))
        .unwrap()
        .split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>();
    assert_eq!(
        head,
        [
            "# Baseline",
            "Delta Abs",
            "dRetiring",
            "dBadSpec",
            "dFEBound",
            "dBEBound",
            "dRetLat",
            "Shared Object",
            "Symbol"
        ],
        "{out}"
    );
    let a = rows.iter().find(|r| r[8] == "[k] hot_a").unwrap();
    let (o, n) = (l1(&old_a), l1(&new_a));
    let want: Vec<String> = (0..4).map(|i| format!("{:+.1}%", n[i] - o[i])).collect();
    assert_eq!(&a[2..6], want.as_slice(), "{out}");
    assert_eq!(
        a[6],
        format!("{:+.1}", mean(&new_lat_a) - mean(&old_lat_a)),
        "{out}"
    );

    // A recording without TopDown (a perf.data of cpu-clock) has no such columns.
    let out = hrec_ok(
        &recordings(),
        &[
            "diff",
            "plain.perf.data",
            "callchain.perf.data",
            "--symfs",
            "root",
        ],
    );
    assert!(
        !out.contains("dRetiring") && !out.contains("dRetLat"),
        "{out}"
    );
}
