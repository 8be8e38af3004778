//! `hrec mem report`: perf mem report's default view (report in memory mode with perf 6.1's
//! keys: `local_weight,mem,sym,dso,symbol_daddr,dso_daddr,snoop,tlb,locked,blocked,
//! local_ins_lat`; without the latency for `-t store`), as text and as JSON whose keys are
//! the sort keys. Checked on the hand-built `perf mem record` file of `support::memdata`
//! against the known truth and against `perf mem report --stdio` (perf 6.1) on the same file.

mod support;

use std::path::Path;
use std::process::Command;

use support::memdata::{Access, accesses, build, rows, tmp};
use support::{hrec_in, text};

/// The accesses of `support::memdata::accesses` with instruction latencies in
/// WEIGHT_STRUCT's `var2_w` (bits 47:32) on the HITM loads and the heap walks.
fn with_ins_lat(objects: &[u64]) -> Vec<Access> {
    accesses(objects)
        .into_iter()
        .map(|mut a| {
            match a.weight {
                400 => a.weight |= 12 << 32,
                180 => a.weight |= 3 << 32,
                _ => {}
            }
            a
        })
        .collect()
}

fn file(name: &str) -> std::path::PathBuf {
    let dir = tmp(name);
    let probe = build(&dir, &[]);
    build(&dir, &with_ins_lat(&probe.objects));
    dir
}

fn hrec_ok(dir: &Path, args: &[&str]) -> String {
    let o = hrec_in(dir, args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{args:?}: {err}");
    out
}

fn perf_mem(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("perf")
        .arg("mem")
        .args(args)
        .args(["report", "-i", "perf.data", "--stdio"])
        .current_dir(dir)
        .env("PERF_PAGER", "cat")
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn default_view_has_perf_mem_reports_keys_and_the_known_rows() {
    let dir = file("default");
    let out = hrec_ok(&dir, &["mem", "report", "-i", "perf.data", "--stdio"]);
    let header = out
        .lines()
        .find(|l| l.starts_with("# Overhead"))
        .unwrap_or_else(|| panic!("{out}"));
    let cols: Vec<&str> = header
        .trim_start_matches('#')
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(
        cols,
        [
            "Overhead",
            "Samples",
            "Local Weight",
            "Memory access",
            "Symbol",
            "Shared Object",
            "Data Symbol",
            "Data Object",
            "Snoop",
            "TLB access",
            "Locked",
            "Blocked",
            "Local INSTR Latency"
        ]
    );
    let r = rows(&out, false);
    // Heaviest first: the two HITM loads of shared_line+0x8 (400 each, of 1637).
    assert_eq!(r.len(), 12, "{out}");
    assert_eq!(
        r[0].join(" "),
        "48.87% 2 400 Remote socket, same board Any cache hit [.] writer memwork [.] shared_line+0x8 memwork HitM L1 or L2 hit N/A N/A 12"
    );
    assert_eq!(
        r[2].join(" "),
        "11.00% 1 180 Local RAM or RAM hit [.] reader memwork [.] 0x0000000002002040 [heap] Miss Walker miss N/A Addr 3"
    );
    // JSON: the same rows, each key under its sort key's name.
    let v: serde_json::Value = serde_json::from_str(&hrec_ok(
        &dir,
        &["mem", "report", "-i", "perf.data", "--json"],
    ))
    .unwrap();
    let rows = v["events"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 12);
    let top = &rows[0]["key"];
    for (k, want) in [
        ("local_weight", "400"),
        ("mem", "Remote socket, same board Any cache hit"),
        ("sym", "[.] writer"),
        ("dso", "memwork"),
        ("symbol_daddr", "[.] shared_line+0x8"),
        ("dso_daddr", "memwork"),
        ("snoop", "HitM"),
        ("tlb", "L1 or L2 hit"),
        ("locked", "N/A"),
        ("blocked", " N/A"),
        ("local_ins_lat", "12"),
    ] {
        assert_eq!(top[k].as_str(), Some(want), "{k}: {top}");
    }
    assert_eq!(rows[0]["period"].as_u64(), Some(800));
    // Stores alone: no latency keys.
    let out = hrec_ok(
        &dir,
        &["mem", "report", "-t", "store", "-i", "perf.data", "--stdio"],
    );
    assert!(
        out.contains("# Overhead  Samples  Memory access") && !out.contains("Local Weight"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn perf_6_1_mem_report_gives_the_same_rows() {
    if support::perf().is_none() {
        return;
    }
    let dir = file("perf");
    for (ops, hrec_args) in [
        (
            &[][..],
            &["mem", "report", "-i", "perf.data", "--stdio"][..],
        ),
        (
            &["-t", "store"][..],
            &["mem", "report", "-t", "store", "-i", "perf.data", "--stdio"][..],
        ),
    ] {
        let theirs = rows(&perf_mem(&dir, ops), false);
        let ours = rows(&hrec_ok(&dir, hrec_args), false);
        assert!(!ours.is_empty(), "{ops:?}");
        assert_eq!(ours, theirs, "perf mem {ops:?} report");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
