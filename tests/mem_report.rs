//! `hrec mem report`: perf mem report's default view (report in memory mode with perf 6.1's
//! keys: `local_weight,mem,sym,dso,symbol_daddr,dso_daddr,snoop,tlb,locked,blocked,
//! local_ins_lat`; without the latency for `-t store`), as text and as JSON whose keys are
//! the sort keys. Checked on the hand-built `perf mem record` file of `support::memdata`
//! against the known truth and against `perf mem report --stdio` (perf 6.1) on the same file.

mod support;

use std::path::Path;
use std::process::Command;

use hrec::event::attr::sample;
use support::memdata::{Access, Events, accesses, build, build_events, phys_of, rows, tmp, truth};
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

/// A hand-built `perf mem record -p` file: the loads of [`with_ins_lat`] with PHYS_ADDR
/// in their sample type (the physical address of each is `memdata::phys_of` of its data
/// address).
fn phys_file(name: &str) -> (std::path::PathBuf, Vec<Access>) {
    let dir = tmp(name);
    let mut ev = Events::mem_loads();
    ev.events[0].0.sample_type |= sample::PHYS_ADDR;
    let probe = build_events(&dir, &ev, &[]);
    let acc = with_ins_lat(&probe.objects);
    build_events(&dir, &ev, &acc);
    (dir, acc)
}

/// The `--json` rows of a report: each key's cell by its sort key's name, and the period.
fn json_rows(out: &str, keys: &[&str]) -> Vec<(Vec<String>, u64)> {
    let v: serde_json::Value = serde_json::from_str(out).unwrap();
    v["events"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let cells = keys
                .iter()
                .map(|k| {
                    r["key"][*k]
                        .as_str()
                        .unwrap_or_else(|| panic!("{k}: {r}"))
                        .to_string()
                })
                .collect();
            (cells, r["period"].as_u64().unwrap())
        })
        .collect()
}

/// `mem report -p`: perf's keys for it (its list without `local_ins_lat`, then
/// `phys_daddr`), the Data Physical Address printed as perf prints it, one row per physical
/// address under `--sort phys_daddr`; the same rows as perf 6.1's `perf mem -p report` and
/// `perf report --mem-mode --sort phys_daddr,sym`.
#[test]
fn phys_data_adds_the_data_physical_address() {
    let (dir, acc) = phys_file("phys");
    let phys_cell = |a: &Access| vec![format!("[.] {:#018x}", phys_of(a.addr))];
    let weight = |a: &Access| Access {
        weight: a.weight & 0xffff_ffff,
        ..*a
    };
    let acc: Vec<Access> = acc.iter().map(weight).collect();
    // One row per physical address, heaviest first, ties by address.
    let by_phys = json_rows(
        &hrec_ok(
            &dir,
            &[
                "report",
                "--mem-mode",
                "-s",
                "phys_daddr",
                "-i",
                "perf.data",
                "--json",
            ],
        ),
        &["phys_daddr"],
    );
    assert_eq!(by_phys, truth(&acc, phys_cell));
    // mem report -p: perf's header, and every row's physical address is its own.
    let out = hrec_ok(&dir, &["mem", "report", "-p", "-i", "perf.data", "--stdio"]);
    let header = out
        .lines()
        .find(|l| l.starts_with("# Overhead"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        header.ends_with("Blocked  Data Physical Address") && !header.contains("INSTR"),
        "{header}"
    );
    let json = hrec_ok(&dir, &["mem", "report", "-p", "-i", "perf.data", "--json"]);
    let mut summed: Vec<(Vec<String>, u64)> = Vec::new();
    for (cells, period) in json_rows(&json, &["phys_daddr"]) {
        match summed.iter_mut().find(|r| r.0 == cells) {
            Some(r) => r.1 += period,
            None => summed.push((cells, period)),
        }
    }
    summed.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    assert_eq!(summed, truth(&acc, phys_cell));
    if support::perf().is_some() {
        let theirs = rows_of(&perf_mem(&dir, &["-p"]));
        assert!(!theirs.is_empty());
        assert_eq!(rows_of(&out), theirs, "perf mem -p report");
        let o = Command::new("perf")
            .args([
                "report",
                "--mem-mode",
                "-s",
                "phys_daddr,sym",
                "-i",
                "perf.data",
                "--stdio",
            ])
            .current_dir(&dir)
            .env("PERF_PAGER", "cat")
            .output()
            .unwrap();
        let theirs = rows(&String::from_utf8_lossy(&o.stdout), false);
        let ours = rows(
            &hrec_ok(
                &dir,
                &[
                    "report",
                    "--mem-mode",
                    "-s",
                    "phys_daddr,sym",
                    "-i",
                    "perf.data",
                    "--stdio",
                ],
            ),
            true,
        );
        assert_eq!(ours, theirs, "perf report --sort phys_daddr,sym");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn rows_of(out: &str) -> Vec<Vec<String>> {
    rows(out, false)
}

/// The stderr warnings of a command that succeeds, and its output.
fn warned(dir: &Path, args: &[&str]) -> (String, Vec<String>) {
    let o = hrec_in(dir, args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let w = err
        .lines()
        .filter(|l| l.starts_with("hrec: "))
        .map(str::to_string)
        .collect();
    (out, w)
}

/// A hand-built recording of `Events::mem_loads` less the sample type bits `drop`.
fn file_without(name: &str, drop: u64) -> (std::path::PathBuf, Vec<Access>) {
    let dir = tmp(name);
    let mut ev = Events::mem_loads();
    ev.events[0].0.sample_type &= !drop;
    let probe = build_events(&dir, &ev, &[]);
    let acc = accesses(&probe.objects);
    build_events(&dir, &ev, &acc);
    (dir, acc)
}

/// `-p` of a recording without physical addresses: one warning, every address 0 (as perf).
#[test]
fn phys_data_without_physical_addresses_is_one_warning() {
    let dir = file("nophys");
    let (out, w) = warned(&dir, &["mem", "report", "-p", "-i", "perf.data", "--json"]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].starts_with("hrec: warning: perf.data") && w[0].contains("--phys-data"));
    let cells = json_rows(&out, &["phys_daddr"]);
    assert_eq!(cells.len(), 12);
    assert!(
        cells.iter().all(|(c, _)| c[0] == "[.] 0000000000000000"),
        "{cells:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A plain sampling recording (no data source, data address or weight, as `record -e
/// cpu-clock` writes): one warning, and the code keys still give each function its samples
/// (each weighs 1).
#[test]
fn a_recording_without_memory_fields_is_one_warning() {
    let (dir, acc) = file_without(
        "plain",
        sample::ADDR | sample::DATA_SRC | sample::WEIGHT_STRUCT,
    );
    let (_, w) = warned(&dir, &["mem", "report", "-i", "perf.data", "--stdio"]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("no memory samples") && w[0].contains("code keys"),
        "{w:?}"
    );
    let (out, _) = warned(&dir, &["mem", "report", "-i", "perf.data", "--json"]);
    let mut got = json_rows(&out, &["sym", "mem", "symbol_daddr"]);
    got.sort();
    let mut want: Vec<(Vec<String>, u64)> = Vec::new();
    for a in &acc {
        let cells = vec![
            format!("[.] {}", support::memdata::FUNCS[a.func]),
            hrec::decode::datasrc::DataSrc::NONE.mem_name(),
            "[.] 0000000000000000".to_string(),
        ];
        match want.iter_mut().find(|r| r.0 == cells) {
            Some(r) => r.1 += 1,
            None => want.push((cells, 1)),
        }
    }
    want.sort();
    assert_eq!(got, want);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Data sources without data addresses: one warning, and the data sources still give the
/// rows of `--sort mem` with their weights.
#[test]
fn a_recording_without_data_addresses_is_one_warning() {
    let (dir, acc) = file_without("noaddr", sample::ADDR);
    let (_, w) = warned(&dir, &["mem", "report", "-i", "perf.data", "--stdio"]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("no data address") && w[0].contains("other keys"),
        "{w:?}"
    );
    let (out, w) = warned(
        &dir,
        &["mem", "report", "-s", "mem", "-i", "perf.data", "--json"],
    );
    assert!(w.is_empty(), "--sort mem reads no address: {w:?}");
    assert_eq!(
        json_rows(&out, &["mem"]),
        truth(&acc, |a| vec![a.src.mem_name()])
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `report --json --sort <every memory key>`: each row's cells under the keys' `--sort`
/// names, as the other keys are.
#[test]
fn json_names_every_memory_key_by_its_sort_name() {
    let (dir, _) = phys_file("jsonkeys");
    let keys = "symbol_daddr,dso_daddr,dcacheline,mem,snoop,tlb,locked,blocked,local_weight,\
                weight,data_page_size,local_ins_lat,type,typeoff,phys_daddr,sym";
    let out = hrec_ok(
        &dir,
        &[
            "report",
            "--mem-mode",
            "-s",
            keys,
            "-i",
            "perf.data",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows = v["events"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 12);
    for r in rows {
        let mut got: Vec<&str> = r["key"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        got.sort_unstable();
        let mut want: Vec<&str> = keys.split(',').collect();
        want.sort_unstable();
        assert_eq!(got, want);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
