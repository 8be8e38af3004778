//! Memory access profiling (`record -d`, `report --sort symbol_daddr,dso_daddr,mem,snoop,tlb,
//! locked,blocked,...`), checked against perf 6.1 on the same files.
//!
//! **Synthetic PEBS-like recordings.** perf.data files laid out byte for byte as `perf mem
//! record` writes them (one `cpu/mem-loads,ldlat=30/P` event with ADDR, WEIGHT_STRUCT and
//! DATA_SRC), built with `support::perfdata` and `support::encode`: a program with known
//! functions and data objects (`support::perfdata::data_elf`), its text and data mappings
//! (the data one with `MMAP_DATA`, as `mmap_data = 1` makes the kernel write it), `[heap]`,
//! `[stack]` and anonymous memory, and samples whose data sources are chosen field by field
//! (HITM, remote, `lvl_num`, hops, TLB, lock, block). hrec's rows are checked against the
//! known truth and against what the installed perf prints for the same file, where perf 6.1
//! is right.
//!
//! **Real recordings.** `record -e page-faults -d` of a C program that touches known globals
//! and heap pages, recorded by hrec and by perf: software events carry the faulting address
//! and a data source with every part "not available".

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::memdata::{accesses, build, data_name, rows, tmp, truth};
use support::{hrec_in, text};

/// perf's `report --stdio --mem-mode --sort KEYS` on `dir/perf.data`.
fn perf_report(dir: &Path, keys: &str) -> String {
    let o = Command::new("perf")
        .args([
            "report",
            "-i",
            "perf.data",
            "--stdio",
            "--mem-mode",
            "--sort",
            keys,
        ])
        .current_dir(dir)
        .env("PERF_PAGER", "cat")
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

fn hrec_report(dir: &Path, keys: &str, input: &str) -> String {
    let o = hrec_in(
        dir,
        &[
            "report",
            "-i",
            input,
            "--stdio",
            "--mem-mode",
            "--sort",
            keys,
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    out
}

/// hrec's JSON rows of `--mem-mode --sort keys`: each row's cells (by key name) and period.
fn json_rows(dir: &Path, keys: &str) -> Vec<(Vec<String>, u64)> {
    let o = hrec_in(
        dir,
        &[
            "report",
            "-i",
            "perf.data",
            "--json",
            "--mem-mode",
            "--sort",
            keys,
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["events"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let cells = keys
                .split(',')
                .map(|k| r["key"][k].as_str().unwrap().to_string())
                .collect();
            (cells, r["period"].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn hand_built_pebs_samples_give_the_known_rows() {
    let dir = tmp("truth");
    let probe = build(&dir, &[]);
    let acc = accesses(&probe.objects);
    let built = build(&dir, &acc);
    assert_eq!(built.functions.len(), 2);
    let sorted = |mut v: Vec<(Vec<String>, u64)>| {
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    };
    // The data source keys, each against its field's name.
    let keys = "mem,snoop,tlb,locked,blocked";
    let want = truth(&acc, |x| {
        vec![
            x.src.mem_name(),
            x.src.snoop_name(),
            x.src.tlb_name(),
            x.src.locked_name().to_string(),
            x.src.blocked_name(),
        ]
    });
    assert_eq!(sorted(json_rows(&dir, keys)), want);
    // The names themselves, heaviest first.
    let mem = json_rows(&dir, "mem");
    let names: Vec<(&str, u64)> = mem.iter().map(|(c, w)| (c[0].as_str(), *w)).collect();
    assert_eq!(
        names.tap_sort(),
        vec![
            ("Remote socket, same board Any cache hit", 800),
            ("Remote socket, same board RAM hit", 300),
            ("Local RAM or RAM hit", 360),
            ("L2 or L2 hit", 115),
            ("L1 or L1 hit", 37),
            ("LFB/MAB or LFB/MAB hit", 25),
        ]
        .into_iter()
        .collect::<Vec<_>>()
        .tap_sort()
    );
    let snoop = json_rows(&dir, "snoop");
    assert!(snoop.contains(&(vec!["HitM".into()], 1100)), "{snoop:?}");
    assert!(
        snoop.contains(&(vec!["Hit or Peer".into()], 115)),
        "{snoop:?}"
    );
    let other = json_rows(&dir, "tlb,locked,blocked");
    assert!(
        other.contains(&(
            vec!["Walker miss".into(), "N/A".into(), " Addr".into()],
            360
        )),
        "{other:?}"
    );
    assert!(
        other.contains(&(vec!["L1 hit".into(), "Yes".into(), " Data".into()], 25)),
        "{other:?}"
    );
    // Data symbols: one row per address, objects with their offsets, heap, stack, anonymous
    // memory and an unmapped address by their addresses.
    let name = |addr: u64| -> (String, String) {
        let (sym, dso) = data_name(&built.objects, addr);
        (format!("[.] {sym}"), dso)
    };
    let want = truth(&acc, |x| {
        let (s, d) = name(x.addr);
        vec![s, d]
    });
    assert_eq!(sorted(json_rows(&dir, "symbol_daddr,dso_daddr")), want);
    let dso = json_rows(&dir, "dso_daddr");
    assert_eq!(
        dso.tap_sort(),
        vec![
            (vec!["memwork".to_string()], 28 + 800 + 300 + 60),
            (vec!["[heap]".to_string()], 360),
            (vec!["anon".to_string()], 55),
            (vec!["[stack]".to_string()], 25),
            (vec!["[unknown]".to_string()], 9),
        ]
        .tap_sort()
    );
    // Cache lines: the four table lines, shared_line's one line for both offsets.
    let lines = json_rows(&dir, "dcacheline");
    assert!(
        lines.contains(&(vec!["[.] shared_line+0x0".into()], 1100)),
        "{lines:?}"
    );
    assert!(
        lines.contains(&(vec!["[.] table+0xc0".into()], 7)),
        "{lines:?}"
    );
    assert!(
        lines.contains(&(vec!["[X] 0x0000000000001000".into()], 9)),
        "{lines:?}"
    );
    // Weights: one row per weight, the row's sum in `weight`.
    let w = json_rows(&dir, "local_weight,weight");
    assert!(
        w.contains(&(vec!["400".into(), "800".into()], 800)),
        "{w:?}"
    );
    assert!(w.contains(&(vec!["7".into(), "28".into()], 28)), "{w:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

trait TapSort {
    fn tap_sort(self) -> Self;
}

impl<T: Ord> TapSort for Vec<T> {
    fn tap_sort(mut self) -> Self {
        self.sort();
        self
    }
}

#[test]
fn perf_6_1_agrees_on_the_hand_built_file_where_it_is_right() {
    if support::perf().is_none() {
        return;
    }
    let dir = tmp("perf");
    let probe = build(&dir, &[]);
    build(&dir, &accesses(&probe.objects));
    // Keys perf 6.1 gets right: the same rows, shares and order.
    for keys in [
        "symbol_daddr,dso_daddr",
        "dso_daddr",
        "snoop",
        "tlb,locked,blocked",
        "local_weight",
        "symbol_daddr,tlb",
    ] {
        let ours = rows(&hrec_report(&dir, keys, "perf.data"), true);
        let theirs = rows(&perf_report(&dir, keys), false);
        assert!(!ours.is_empty(), "{keys}");
        assert_eq!(ours, theirs, "--sort {keys}");
    }
    // `mem`: perf compares only the old level bits, so the remote-RAM load (300 of 1637)
    // falls into the remote-cache HITM row (800); hrec keeps them apart.
    for keys in ["mem", "mem,snoop"] {
        let ours = rows(&hrec_report(&dir, keys, "perf.data"), true);
        let theirs = rows(&perf_report(&dir, keys), false);
        assert_eq!(ours.len(), theirs.len() + 1, "{ours:?}\n{theirs:?}");
        let line = |r: &Vec<String>| r.join(" ");
        assert!(
            theirs
                .iter()
                .any(|r| line(r).starts_with("67.20% Remote socket, same board Any cache hit")),
            "{theirs:?}"
        );
        assert!(
            ours.iter()
                .any(|r| line(r).starts_with("18.33% Remote socket, same board RAM hit")),
            "{ours:?}"
        );
        assert!(
            ours.iter()
                .any(|r| line(r).starts_with("48.87% Remote socket, same board Any cache hit")),
            "{ours:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A program that faults on known pages: 32 pages of `big_data` (.data), 64 of `big_bss`,
/// 16 of a static in .bss, 200 of a malloc'd block and 50 of an anonymous mapping.
const FAULTS_C: &str = r#"#include <stdlib.h>
#include <sys/mman.h>
#define PG 4096
char big_bss[64 * PG];
char big_data[32 * PG] = {1};
static char local_bss[16 * PG];
int main(void) {
    for (int i = 0; i < 64; i++) big_bss[i * PG] = 1;
    for (int i = 0; i < 32; i++) big_data[i * PG] = 2;
    for (int i = 0; i < 16; i++) local_bss[i * PG] = 3;
    char *h = malloc(200 * PG);
    for (int i = 0; i < 200; i++) h[i * PG] = 4;
    char *m = mmap(0, 50 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (int i = 0; i < 50; i++) m[i * PG] = 5;
    return big_bss[5] + big_data[7] + local_bss[3] + h[9] + m[3] == 99;
}
"#;

fn faults_program(dir: &Path) -> Option<PathBuf> {
    std::fs::write(dir.join("faults.c"), FAULTS_C).unwrap();
    let ok = Command::new("gcc")
        .args(["-O1", "-g", "-no-pie", "-o", "faults", "faults.c"])
        .current_dir(dir)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: gcc could not build the workload");
    }
    ok.then(|| dir.join("faults"))
}

/// `record -e page-faults -d` of a real program, by perf and by hrec: the same data symbols
/// as perf names them on perf's file, every user-mode fault on `big_data` named in hrec's.
#[test]
fn page_faults_with_data_addresses_against_perf() {
    let dir = tmp("faults");
    let Some(_) = faults_program(&dir) else {
        return;
    };
    // hrec's own recording: the flags show in the plan, the addresses in the report.
    let dry = hrec_in(
        &dir,
        &[
            "record",
            "-e",
            "page-faults",
            "-d",
            "--data-page-size",
            "--phys-data",
            "--dry-run",
            "--json",
            "--",
            "./faults",
        ],
    );
    let (plan, err) = text(&dry);
    assert!(dry.status.success(), "{err}");
    let plan: serde_json::Value = serde_json::from_str(&plan).unwrap();
    let ev = &plan["events"][0]["attr"];
    assert_eq!(
        ev["sample_type_names"].as_str().unwrap(),
        "IP|TID|TIME|ADDR|PERIOD|DATA_SRC|PHYS_ADDR|DATA_PAGE_SIZE",
        "{ev}"
    );
    assert_eq!(ev["mmap_data"], 1, "{ev}");
    let rec = support::record_page_faults(None, &dir, "h.data", "./faults");
    assert!(rec.status.success(), "{}", text(&rec).1);
    let ours = rows(&hrec_report(&dir, "symbol_daddr,dso_daddr", "h.data"), true);
    let big_data = ours
        .iter()
        .filter(|r| {
            r.get(2).is_some_and(|s| s.starts_with("big_data+0x"))
                && r.get(3).is_some_and(|d| d == "faults")
        })
        .count();
    assert!((31..=32).contains(&big_data), "{ours:?}");
    let mem = rows(
        &hrec_report(&dir, "mem,snoop,tlb,locked,blocked", "h.data"),
        true,
    );
    assert_eq!(mem.len(), 1, "{mem:?}");
    assert_eq!(
        mem[0][1..].join(" "),
        "N/A or N/A N/A N/A N/A N/A",
        "{mem:?}"
    );
    // perf's recording, read by both.
    if support::perf().is_none() {
        return;
    }
    let ok = support::record_page_faults(Some("perf"), &dir, "perf.data", "./faults")
        .status
        .success();
    if !ok {
        eprintln!("skipped: perf record -e page-faults failed here");
        return;
    }
    // The data source of a software event: every part not available, one row.
    let keys = "mem,snoop,tlb,locked,blocked";
    assert_eq!(
        rows(&hrec_report(&dir, keys, "perf.data"), true),
        rows(&perf_report(&dir, keys), false)
    );
    for keys in ["symbol_daddr,dso_daddr", "symbol_daddr"] {
        let ours = rows(&hrec_report(&dir, keys, "perf.data"), true);
        let theirs = rows(&perf_report(&dir, keys), false);
        assert_eq!(ours.len(), theirs.len(), "{keys}");
        // perf looks up the data address of a kernel-mode sample (a fault the kernel took
        // writing to the process: exec's .bss clearing, copy_to_user) among the kernel's maps
        // only: `[unknown]`. hrec names it in the process's maps.
        let differ: Vec<_> = ours.iter().zip(&theirs).filter(|(a, b)| a != b).collect();
        for (a, b) in &differ {
            assert_eq!(
                b.get(1).map(String::as_str),
                Some("[k]"),
                "{keys}: {a:?} vs {b:?}"
            );
            assert!(
                b.get(2).is_some_and(|c| c.starts_with("0x")),
                "{keys}: {a:?} vs {b:?}"
            );
        }
        assert!(differ.len() <= 4, "{keys}: {differ:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
