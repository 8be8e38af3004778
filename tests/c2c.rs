//! `hrec c2c report`: perf c2c's Shared Data Cache Line Table and its per-offset Pareto
//! breakdown, on hand-built `perf c2c record` files in the kernel's layout (loads and stores
//! with ID, ADDR, PHYS_ADDR, CPU, WEIGHT_STRUCT and DATA_SRC; two NUMA nodes of four CPUs):
//! two threads writing neighbouring fields of one cache line, each loading the field it
//! writes and finding the line modified by the other (HITM), must give that line first with
//! both offsets and both threads; the rows are compared with `perf c2c report --stdio` 6.1
//! where perf is right.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use hrec::decode::datasrc::{DataSrc, blk, hops, lock, lvl, lvlnum, op, snoop, snoopx, tlb};
use hrec::event::attr::{flag, sample};
use support::memdata::{
    Access, Events, PID, build_events, build_named, l1_load, mem_loads_attr, src, tmp,
};
use support::{hrec_in, text};

const T1: u32 = PID + 1;
const T2: u32 = PID + 2;

/// `perf c2c record`'s events on a non-aux PMU: loads (the tracking event) and stores, with
/// `-W -d --phys-data --sample-cpu`.
fn c2c_events() -> Events {
    let mut loads = mem_loads_attr();
    loads.sample_type |= sample::ID | sample::PHYS_ADDR;
    let mut stores = loads;
    stores.config = 0x2cd;
    stores.config1 = 0;
    stores.flags &=
        !(flag::MMAP | flag::COMM | flag::TASK | flag::MMAP2 | flag::COMM_EXEC | flag::MMAP_DATA);
    Events {
        events: vec![
            (loads, "cpu/mem-loads,ldlat=30/P".into()),
            (stores, "cpu/mem-stores/P".into()),
        ],
        cmdline: ["/usr/bin/perf", "c2c", "record", "./memwork"]
            .map(String::from)
            .to_vec(),
        cpuid: support::memdata::SPR,
    }
}

/// A load that found the line modified in another core's cache: local (same socket, LLC)
/// or remote.
fn hitm(remote: bool) -> DataSrc {
    if remote {
        src(
            op::LOAD,
            lvl::HIT | lvl::REM_CCE1,
            snoop::HITM,
            lock::NA,
            tlb::HIT | tlb::L1,
            lvlnum::ANY_CACHE,
            true,
            0,
            blk::NA,
            hops::SOCKET,
        )
    } else {
        src(
            op::LOAD,
            lvl::HIT | lvl::L3,
            snoop::HITM,
            lock::NA,
            tlb::HIT | tlb::L1,
            lvlnum::L3,
            false,
            0,
            blk::NA,
            0,
        )
    }
}

fn store(hit: bool) -> DataSrc {
    src(
        op::STORE,
        (if hit { lvl::HIT } else { lvl::MISS }) | lvl::L1,
        snoop::NA,
        lock::NA,
        tlb::NA,
        lvlnum::L1,
        false,
        0,
        blk::NA,
        0,
    )
}

/// The false-sharing case: thread 1 (CPU 2, node 0) works on `shared_line+0x0` in `reader`,
/// thread 2 (CPU 5, node 1) on `shared_line+0x8` in `writer`; each stores to its field and
/// its loads of it hit the line modified by the other (local HITMs for thread 1, remote for
/// thread 2). Besides: L1 loads of `table` and a single local HITM there, and stores to
/// `counters`.
fn false_sharing(objects: &[u64]) -> Vec<Access> {
    let (shared, table, counters) = (objects[0], objects[1], objects[2]);
    let a = |func, addr, src, weight, event, tid, cpu| Access {
        func,
        addr,
        src,
        weight,
        period: 1,
        event,
        tid,
        cpu,
    };
    let mut v = Vec::new();
    for i in 0..4 {
        v.push(a(0, shared, store(true), 0, 1, T1, 2));
        v.push(a(0, shared, hitm(false), 200 + i, 0, T1, 2));
        v.push(a(1, shared + 8, store(i != 3), 0, 1, T2, 5));
        v.push(a(1, shared + 8, hitm(true), 300 + 2 * i, 0, T2, 5));
        v.push(a(0, table + 64 * i, l1_load(), 5, 0, T1, 2));
    }
    v.push(a(0, table + 64, hitm(false), 90, 0, T1, 3));
    v.push(a(1, counters + 0x80, store(true), 0, 1, T2, 6));
    v
}

fn file(name: &str) -> (PathBuf, Vec<u64>) {
    let dir = tmp(name);
    let ev = c2c_events();
    let probe = build_events(&dir, &ev, &[]);
    build_events(&dir, &ev, &false_sharing(&probe.objects));
    (dir, probe.objects)
}

fn hrec_ok(dir: &Path, args: &[&str]) -> String {
    let o = hrec_in(dir, args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{args:?}: {err}");
    out
}

/// `perf c2c report -i perf.data --stdio ARGS` in `dir`: its standard output.
fn perf_c2c(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("perf")
        .args(["c2c", "report", "-i", "perf.data", "--stdio"])
        .args(args)
        .current_dir(dir)
        .env("PERF_PAGER", "cat")
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `hrec c2c report --stdio ARGS` prints byte for byte what `perf c2c report --stdio ARGS`
/// 6.1 prints for the file in `dir`.
fn same_as_perf(dir: &Path, args: &[&str]) {
    let theirs = perf_c2c(dir, args);
    let mut a = vec!["c2c", "report", "-i", "perf.data", "--stdio"];
    a.extend_from_slice(args);
    let ours = hrec_ok(dir, &a);
    assert!(ours.contains("Cachelines sort on"), "{args:?}\n{ours}");
    assert_eq!(ours, theirs, "{args:?}");
}

/// The data rows of a section of a c2c report (between its banner and the next one), split
/// at whitespace; the Pareto's dashed rules left out.
fn section(out: &str, title: &str) -> Vec<Vec<String>> {
    let mut lines = out.lines().skip_while(|l| l.trim() != title).skip(2);
    let mut rows = Vec::new();
    for l in lines.by_ref() {
        if l.starts_with("=====") {
            break;
        }
        if l.starts_with('#') || l.trim().is_empty() || l.trim_start().starts_with("---") {
            continue;
        }
        rows.push(l.split_whitespace().map(str::to_string).collect());
    }
    rows
}

/// An offset's row: offset, function, reader tids, writer tids, NUMA nodes.
type OffsetRow<'a> = (u64, &'a str, Vec<u64>, Vec<u64>, Vec<u64>);

#[test]
fn false_sharing_line_comes_first_with_both_offsets_and_threads() {
    let (dir, objects) = file("truth");
    let v: serde_json::Value = serde_json::from_str(&hrec_ok(
        &dir,
        &["c2c", "report", "-i", "perf.data", "--json"],
    ))
    .unwrap();
    let lines = v["lines"].as_array().unwrap();
    // shared_line (8 HITMs), then table's line (1 HITM); counters' line has stores but no
    // HITM: not shared.
    let addrs: Vec<u64> = lines.iter().map(|l| l["addr"].as_u64().unwrap()).collect();
    assert_eq!(addrs, [objects[0], objects[1] + 64]);
    let first = &lines[0];
    assert_eq!(first["symbol"], "[.] shared_line+0x0");
    let s = &first["stats"];
    assert_eq!(
        (s["lcl_hitm"].as_u64(), s["rmt_hitm"].as_u64()),
        (Some(4), Some(4))
    );
    assert_eq!(
        (s["st_l1hit"].as_u64(), s["st_l1miss"].as_u64()),
        (Some(7), Some(1))
    );
    let offs = first["offsets"].as_array().unwrap();
    let got: Vec<OffsetRow<'_>> = offs
        .iter()
        .map(|o| {
            let tids = |k: &str| -> Vec<u64> {
                o[k].as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t[1].as_u64().unwrap())
                    .collect()
            };
            let nodes = o["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_u64().unwrap())
                .collect();
            (
                o["offset"].as_u64().unwrap(),
                o["symbol"].as_str().unwrap(),
                tids("readers"),
                tids("writers"),
                nodes,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (0, "[.] reader", vec![T1 as u64], vec![T1 as u64], vec![0]),
            (8, "[.] writer", vec![T2 as u64], vec![T2 as u64], vec![1]),
        ]
    );
    // The text: the same line first in both tables, its offsets with their HITM shares and
    // mean latencies (local 201.5 → 202, remote 303).
    let out = hrec_ok(&dir, &["c2c", "report", "-i", "perf.data", "--stdio"]);
    let table = section(&out, "Shared Data Cache Line Table");
    assert_eq!(
        table[0][..5],
        ["0", &format!("{:#x}", objects[0]), "N/A", "0", "88.89%"]
    );
    let pareto = section(&out, "Shared Cache Line Distribution Pareto");
    assert_eq!(pareto[1][..2], ["0.00%", "100.00%"]);
    assert_eq!(pareto[1][5..6], ["0x0"]);
    assert_eq!(pareto[1][9..12], ["0", "202", "0"]);
    assert_eq!(pareto[2][..2], ["100.00%", "0.00%"]);
    assert_eq!(pareto[2][9..12], ["303", "0", "0"]);
    assert_eq!(
        pareto[2].last().map(String::as_str),
        Some("1"),
        "node of CPU 5"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn perf_6_1_c2c_report_gives_the_same_tables() {
    if support::perf().is_none() {
        return;
    }
    let (dir, _) = file("perf");
    // Every section byte for byte, and the rows per thread (and process).
    for args in [&[][..], &["-c", "tid,iaddr"], &["-c", "pid,tid,iaddr"]] {
        same_as_perf(&dir, args);
    }
    let ours = hrec_ok(&dir, &["c2c", "report", "-i", "perf.data", "-c", "tid"]);
    assert!(ours.contains(&format!("{T1}:memwork")) && ours.contains(&format!("{T2}:memwork")));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A remote HITM whose level is given only by the level number (`mem_lvl_num` RAM,
/// `mem_remote`, snoop HITM; the old `mem_lvl` bits say just HIT): one load, one class, a
/// remote HITM by the kernel's layout. perf 6.1 reads only the old level bits: it counts the
/// load in no class and leaves it out of its line (README, differences).
#[test]
fn remote_hitm_given_by_the_level_number_counts_as_a_hitm() {
    let dir = tmp("ramhitm");
    let ev = c2c_events();
    let probe = build_events(&dir, &ev, &[]);
    let ram_hitm = src(
        op::LOAD,
        lvl::HIT,
        snoop::HITM,
        lock::NA,
        tlb::HIT | tlb::L1,
        lvlnum::RAM,
        true,
        0,
        blk::NA,
        hops::SOCKET,
    );
    let mut acc = false_sharing(&probe.objects);
    acc.push(Access {
        func: 1,
        addr: probe.objects[0] + 8,
        src: ram_hitm,
        weight: 350,
        period: 1,
        event: 0,
        tid: T2,
        cpu: 5,
    });
    build_events(&dir, &ev, &acc);
    let ours = hrec_ok(&dir, &["c2c", "report", "-i", "perf.data", "--stdio"]);
    let row = &section(&ours, "Shared Data Cache Line Table")[0];
    // Hitm total, LclHitm, RmtHitm, records; RmtHitm again in the RMT group; no DRAM load.
    assert_eq!(row[5..9], ["9", "4", "5", "17"]);
    assert_eq!(row[20..23], ["5", "0", "0"]);
    if support::perf().is_some() {
        let theirs = perf_c2c(&dir, &[]);
        let theirs = &section(&theirs, "Shared Data Cache Line Table")[0];
        assert_eq!(theirs[5..9], ["8", "4", "4", "16"], "{theirs:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_recording_without_memory_samples_is_one_warning() {
    let dir = tmp("nomem");
    // The hand-built file's events without DATA_SRC: plain samples.
    let mut ev = c2c_events();
    for (a, _) in &mut ev.events {
        a.sample_type &= !(sample::DATA_SRC | sample::ADDR | sample::PHYS_ADDR);
    }
    let probe = build_events(&dir, &ev, &[]);
    build_events(&dir, &ev, &false_sharing(&probe.objects));
    let o = hrec_in(&dir, &["c2c", "report", "-i", "perf.data", "--stdio"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains("no load or store samples"), "{err}");
    assert!(
        out.contains("Total Shared Cache Lines          :          0"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// [`false_sharing`] and more: `counters`' first line is written by thread 2 and loaded
/// from the other socket (5 remote HITMs, the most of any line, and no local one); thread 1
/// also loads `shared_line+0x8` once finding it modified in its own socket (one local HITM
/// beside thread 2's four remote ones at that offset), and loads `shared_line+0x10` only from
/// L1 (a row with neither a HITM nor a store).
fn contended(objects: &[u64]) -> Vec<Access> {
    let (shared, counters) = (objects[0], objects[2]);
    let a = |func, addr, src, weight, event, tid, cpu| Access {
        func,
        addr,
        src,
        weight,
        period: 1,
        event,
        tid,
        cpu,
    };
    let mut v = false_sharing(objects);
    for i in 0..5 {
        v.push(a(0, counters, hitm(true), 400 + i, 0, T1, 1));
    }
    v.push(a(1, counters + 8, store(true), 0, 1, T2, 6));
    v.push(a(0, shared + 8, hitm(false), 150, 0, T1, 3));
    v.push(a(0, shared + 16, l1_load(), 4, 0, T1, 2));
    v
}

fn contended_file(name: &str) -> (PathBuf, Vec<u64>, Vec<Access>) {
    let dir = tmp(name);
    let ev = c2c_events();
    let probe = build_events(&dir, &ev, &[]);
    let acc = contended(&probe.objects);
    build_events(&dir, &ev, &acc);
    (dir, probe.objects, acc)
}

/// Per cache line of `acc` (line address, then offset and function): local HITMs, remote
/// HITMs and stores, the truth the displays sort and filter by.
fn hitm_truth(acc: &[Access]) -> Vec<(u64, u64, usize, [u64; 3])> {
    let mut rows: Vec<(u64, u64, usize, [u64; 3])> = Vec::new();
    for a in acc {
        let line = a.addr & !63;
        let i = match rows
            .iter()
            .position(|r| (r.0, r.1, r.2) == (line, a.addr - line, a.func))
        {
            Some(i) => i,
            None => {
                rows.push((line, a.addr - line, a.func, [0; 3]));
                rows.len() - 1
            }
        };
        let c = &mut rows[i].3;
        if a.src.op() & op::STORE != 0 {
            c[2] += 1;
        } else if a.src.snoop() & snoop::HITM != 0 {
            c[usize::from(a.src.remote())] += 1;
        }
    }
    rows
}

/// `-d tot|lcl|rmt`: lines with none of the displayed HITMs are left out, the others come
/// most displayed HITMs first with their share of them; rows with neither a displayed HITM
/// nor a store are left out, the others by offset then displayed HITMs. The expected order is
/// worked out from the accesses.
#[test]
fn display_sorts_and_filters_lines_and_rows_by_its_hitms() {
    let (dir, _, acc) = contended_file("display");
    let truth = hitm_truth(&acc);
    for (d, count) in [
        ("tot", (|c: &[u64; 3]| c[0] + c[1]) as fn(&[u64; 3]) -> u64),
        ("lcl", |c| c[0]),
        ("rmt", |c| c[1]),
    ] {
        let mut lines: Vec<(u64, u64)> = Vec::new();
        for r in &truth {
            match lines.iter_mut().find(|l| l.0 == r.0) {
                Some(l) => l.1 += count(&r.3),
                None => lines.push((r.0, count(&r.3))),
            }
        }
        let sum: u64 = lines.iter().map(|l| l.1).sum();
        lines.retain(|l| l.1 > 0);
        lines.sort_by_key(|l| std::cmp::Reverse(l.1));
        let v: serde_json::Value = serde_json::from_str(&hrec_ok(
            &dir,
            &["c2c", "report", "-i", "perf.data", "--json", "-d", d],
        ))
        .unwrap();
        let got: Vec<u64> = v["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["addr"].as_u64().unwrap())
            .collect();
        let want: Vec<u64> = lines.iter().map(|l| l.0).collect();
        assert_eq!(got, want, "-d {d}");
        assert_eq!(v["display"], d);
        // Each line's rows: (offset, function) with a store or a displayed HITM.
        for (l, json) in lines.iter().zip(v["lines"].as_array().unwrap()) {
            let mut rows: Vec<&(u64, u64, usize, [u64; 3])> = truth
                .iter()
                .filter(|r| r.0 == l.0 && (r.3[2] > 0 || count(&r.3) > 0))
                .collect();
            let key = |r: &[u64; 3]| match d {
                "lcl" => (r[0], r[1]),
                "rmt" => (r[1], r[0]),
                _ => (r[0] + r[1], 0),
            };
            rows.sort_by(|a, b| a.1.cmp(&b.1).then(key(&b.3).cmp(&key(&a.3))));
            let want: Vec<(u64, String)> = rows
                .iter()
                .map(|r| (r.1, format!("[.] {}", support::memdata::FUNCS[r.2])))
                .collect();
            let got: Vec<(u64, String)> = json["offsets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| {
                    (
                        o["offset"].as_u64().unwrap(),
                        o["symbol"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            assert_eq!(got, want, "-d {d}, line {:#x}", l.0);
        }
        // The text: the share of the displayed HITMs, under the display's header.
        let out = hrec_ok(&dir, &["c2c", "report", "-i", "perf.data", "-d", d]);
        let table = section(&out, "Shared Data Cache Line Table");
        let shares: Vec<String> = table.iter().map(|r| r[4].clone()).collect();
        let want: Vec<String> = lines
            .iter()
            .map(|l| format!("{:.2}%", l.1 as f64 * 100.0 / sum as f64))
            .collect();
        assert_eq!(shares, want, "-d {d}\n{out}");
        let label = &d[..1].to_uppercase();
        assert!(
            out.contains(&format!("{label}{}  ------- Load Hitm", &d[1..])),
            "{out}"
        );
        // Every line with a HITM stays a shared line, whatever is displayed.
        assert!(
            out.contains("Total Shared Cache Lines          :          3"),
            "{out}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The cells of the Pareto rows of the first line, split at whitespace.
fn first_line_rows(out: &str) -> Vec<Vec<String>> {
    let pareto = section(out, "Shared Cache Line Distribution Pareto");
    pareto
        .into_iter()
        .skip(1)
        .take_while(|r| r[0].ends_with('%'))
        .collect()
}

/// `-N`, `-NN`: the Node column per node of the row's CPUs (CPUs 0-3 are node 0, 4-7 node
/// 1): its number; its CPU count, share of the row's displayed HITMs and of its stores; its
/// CPU list. `shared_line+0x8` is loaded by thread 1 on CPU 3 (one local HITM) and stored
/// and loaded by thread 2 on CPU 5 (four remote HITMs, four stores).
#[test]
fn node_info_levels_show_each_nodes_cpus_and_shares() {
    let (dir, _, _) = contended_file("nodes");
    // Rows per offset and object: 0x8's two functions are one row.
    let out = hrec_ok(&dir, &["c2c", "report", "-i", "perf.data", "-c", "dso"]);
    let rows = first_line_rows(&out);
    assert_eq!(rows.len(), 2, "{out}");
    // 0x8: 9 records on 2 CPUs, in memwork, nodes 0 and 1.
    assert_eq!(rows[1][5..6], ["0x8"]);
    assert_eq!(rows[1][11..], ["9", "2", "memwork", "0", "1"], "{out}");
    let node_cells = |args: &[&str]| -> Vec<String> {
        let mut a = vec!["c2c", "report", "-i", "perf.data", "-c", "dso"];
        a.extend_from_slice(args);
        let out = hrec_ok(&dir, &a);
        assert!(
            out.contains("Cacheline data grouping           : offset,dso"),
            "{out}"
        );
        first_line_rows(&out)[1][14..].to_vec()
    };
    // Node 0: CPU 3, 1 of 5 HITMs, no store; node 1: CPU 5, 4 of 5, all 4 stores.
    assert_eq!(
        node_cells(&["-N"]),
        ["0{", "1", "20.0%", "0.0%}", "1{", "1", "80.0%", "100.0%}"]
    );
    // Local HITMs only: all on node 0, none on node 1.
    assert_eq!(
        node_cells(&["-N", "-d", "lcl"]),
        ["0{", "1", "100.0%", "0.0%}", "1{", "1", "0.0%", "100.0%}"]
    );
    assert_eq!(node_cells(&["-NN"]), ["0{3}", "1{5}"]);
    assert_eq!(
        node_cells(&["-NNN"]),
        ["0{3}", "1{5}"],
        "more than -NN is -NN"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// perf 6.1's tables for each display, node level and grouping on the same file.
#[test]
fn perf_6_1_c2c_report_flags_give_the_same_tables() {
    if support::perf().is_none() {
        return;
    }
    let (dir, _, _) = contended_file("perfflags");
    for args in [
        &["-d", "lcl"][..],
        &["-d", "rmt"],
        &["-N"],
        &["-N", "-d", "lcl"],
        &["-NN", "-c", "pid,dso"],
        &["-c", "dso"],
        &["-c", "tid"],
        &["-N", "-d", "rmt", "-c", "tid,iaddr"],
    ] {
        same_as_perf(&dir, args);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Loads and stores with data sources but no data addresses: one warning; no line can be
/// told, the load and store totals still count every sample, as accesses without an
/// address (in no level class).
#[test]
fn a_recording_without_data_addresses_is_one_warning_and_counts_its_loads() {
    let dir = tmp("noaddr");
    let mut ev = c2c_events();
    for (a, _) in &mut ev.events {
        a.sample_type &= !(sample::ADDR | sample::PHYS_ADDR);
    }
    let probe = build_events(&dir, &ev, &[]);
    let acc = false_sharing(&probe.objects);
    build_events(&dir, &ev, &acc);
    let o = hrec_in(&dir, &["c2c", "report", "-i", "perf.data", "--stdio"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("hrec:")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains("no data address"), "{err}");
    let loads = acc.iter().filter(|a| a.src.op() & op::LOAD != 0).count();
    let stores = acc.len() - loads;
    for (label, n) in [
        ("Load Operations", loads),
        ("Store Operations", stores),
        // perf's classes of accesses without an address (its `ld_noadrs`, `st_noadrs`);
        // its page-map rejects are addresses in no mapping.
        ("Loads - no mapping", loads),
        ("Store - no mapping", stores),
        ("No Page Map Rejects", 0),
        ("Load L1D hit", 0),
        ("Total Shared Cache Lines", 0),
    ] {
        assert!(
            out.contains(&format!("  {label:<34}:{n:>11}")),
            "{label}\n{out}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// perf's line limit: a line with under 0.1% of the displayed HITMs of all shared lines is
/// not shown (it still counts as a shared line); at 0.1% it is.
#[test]
fn a_line_under_a_thousandth_of_the_hitms_is_not_shown() {
    let dir = tmp("limit");
    let ev = c2c_events();
    let probe = build_events(&dir, &ev, &[]);
    let (shared, table) = (probe.objects[0], probe.objects[1]);
    let load = |addr, tid, cpu| Access {
        func: 0,
        addr,
        src: hitm(false),
        weight: 100,
        period: 1,
        event: 0,
        tid,
        cpu,
    };
    // 1000 HITMs on shared_line, 1 on table's first line: 1/1001 < 0.001 of them.
    let mut acc: Vec<Access> = (0..1000).map(|_| load(shared, T1, 2)).collect();
    acc.push(load(table, T1, 2));
    build_events(&dir, &ev, &acc);
    let lines = |dir: &Path| -> Vec<u64> {
        let v: serde_json::Value = serde_json::from_str(&hrec_ok(
            dir,
            &["c2c", "report", "-i", "perf.data", "--json"],
        ))
        .unwrap();
        assert_eq!(v["shared_lines"].as_u64(), Some(2));
        v["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["addr"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(lines(&dir), [shared]);
    if support::perf().is_some() {
        let theirs = section(&perf_c2c(&dir, &[]), "Shared Data Cache Line Table");
        let ours = section(
            &hrec_ok(&dir, &["c2c", "report", "-i", "perf.data"]),
            "Shared Data Cache Line Table",
        );
        assert_eq!(ours, theirs);
    }
    // 999 and 1: exactly 0.1%, shown.
    acc.truncate(999);
    acc.push(load(table, T1, 2));
    build_events(&dir, &ev, &acc);
    assert_eq!(lines(&dir), [shared, table]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every class of perf c2c's Trace Event and Global Shared Cache Line lines on known
/// accesses: locked, blocked (data, address), uncacheable and I/O loads, a load that missed,
/// DRAM loads in MESI state shared and exclusive, local and remote peer hits, an uncacheable
/// store and an access that is neither load nor store; and the same lines as perf 6.1 prints
/// them for the same file.
#[test]
fn every_trace_event_class_counts_as_perf_6_1_counts_it() {
    let dir = tmp("classes");
    let ev = c2c_events();
    let probe = build_events(&dir, &ev, &[]);
    let (shared, table) = (probe.objects[0], probe.objects[1]);
    #[allow(clippy::too_many_arguments)]
    let ds =
        |o, l, sn, lk, num, remote, sx, b, h| src(o, l, sn, lk, tlb::NA, num, remote, sx, b, h);
    let locked_l1 = ds(
        op::LOAD,
        lvl::HIT | lvl::L1,
        snoop::NONE,
        lock::LOCKED,
        lvlnum::L1,
        false,
        0,
        blk::NA,
        0,
    );
    let blk_data = ds(
        op::LOAD,
        lvl::HIT | lvl::L1,
        snoop::NONE,
        lock::NA,
        lvlnum::L1,
        false,
        0,
        blk::DATA,
        0,
    );
    let blk_addr = ds(
        op::LOAD,
        lvl::HIT | lvl::L1,
        snoop::NONE,
        lock::NA,
        lvlnum::L1,
        false,
        0,
        blk::ADDR,
        0,
    );
    let dram_shared = ds(
        op::LOAD,
        lvl::HIT | lvl::LOC_RAM,
        snoop::HIT,
        lock::NA,
        lvlnum::RAM,
        false,
        0,
        blk::NA,
        0,
    );
    let dram_excl = ds(
        op::LOAD,
        lvl::HIT | lvl::LOC_RAM,
        snoop::MISS,
        lock::NA,
        lvlnum::RAM,
        false,
        0,
        blk::NA,
        0,
    );
    let rmt_dram = ds(
        op::LOAD,
        lvl::HIT | lvl::REM_RAM1,
        snoop::MISS,
        lock::NA,
        lvlnum::RAM,
        true,
        0,
        blk::NA,
        hops::SOCKET,
    );
    let uncached = ds(
        op::LOAD,
        lvl::HIT | lvl::UNC,
        snoop::NA,
        lock::NA,
        lvlnum::NA,
        false,
        0,
        blk::NA,
        0,
    );
    let io = ds(
        op::LOAD,
        lvl::HIT | lvl::IO,
        snoop::NA,
        lock::NA,
        lvlnum::IO,
        false,
        0,
        blk::NA,
        0,
    );
    let l2_peer = ds(
        op::LOAD,
        lvl::HIT | lvl::L2,
        snoop::NONE,
        lock::NA,
        lvlnum::L2,
        false,
        snoopx::PEER,
        blk::NA,
        0,
    );
    let rmt_peer = ds(
        op::LOAD,
        lvl::HIT | lvl::REM_CCE1,
        snoop::NONE,
        lock::NA,
        lvlnum::ANY_CACHE,
        true,
        snoopx::PEER,
        blk::NA,
        hops::SOCKET,
    );
    let missed = ds(
        op::LOAD,
        lvl::MISS | lvl::L3,
        snoop::NA,
        lock::NA,
        lvlnum::L3,
        false,
        0,
        blk::NA,
        0,
    );
    let lfb = ds(
        op::LOAD,
        lvl::HIT | lvl::LFB,
        snoop::NONE,
        lock::NA,
        lvlnum::LFB,
        false,
        0,
        blk::NA,
        0,
    );
    let st_unc = ds(
        op::STORE,
        lvl::HIT | lvl::UNC,
        snoop::NA,
        lock::NA,
        lvlnum::NA,
        false,
        0,
        blk::NA,
        0,
    );
    let prefetch = ds(
        op::PFETCH,
        lvl::NA,
        snoop::NA,
        lock::NA,
        0,
        false,
        0,
        blk::NA,
        0,
    );
    let locked_hitm = ds(
        op::LOAD,
        lvl::HIT | lvl::L3,
        snoop::HITM,
        lock::LOCKED,
        lvlnum::L3,
        false,
        0,
        blk::DATA,
        0,
    );
    let mut acc = Vec::new();
    let mut add = |src: DataSrc, n: usize, addr: u64, event: usize| {
        for i in 0..n {
            acc.push(Access {
                func: 0,
                addr: addr + 8 * i as u64,
                src,
                weight: 40,
                period: 1,
                event,
                tid: T1,
                cpu: 2,
            });
        }
    };
    add(locked_l1, 2, table, 0);
    add(blk_data, 3, table + 64, 0);
    add(blk_addr, 1, table + 128, 0);
    add(dram_shared, 2, table + 192, 0);
    add(dram_excl, 4, table + 256, 0);
    add(rmt_dram, 1, table + 320, 0);
    add(uncached, 2, table + 384, 0);
    add(io, 1, table + 448, 0);
    add(l2_peer, 2, table + 512, 0);
    add(rmt_peer, 1, table + 576, 0);
    add(missed, 1, table + 640, 0);
    add(lfb, 1, table + 704, 0);
    add(st_unc, 1, table + 768, 1);
    add(prefetch, 1, table + 832, 0);
    // A line shared by HITMs: two locked, blocked local HITMs, a peer hit and a store.
    add(locked_hitm, 2, shared, 0);
    add(l2_peer, 1, shared + 16, 0);
    add(store(true), 1, shared + 24, 1);
    build_events(&dir, &ev, &acc);
    let ours = hrec_ok(&dir, &["c2c", "report", "-i", "perf.data", "--stdio"]);
    let value = |label: &str| -> String {
        ours.lines()
            .find(|l| l.split(':').next().map(str::trim) == Some(label))
            .and_then(|l| l.split(':').nth(1))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| panic!("{label}\n{ours}"))
    };
    for (label, want) in [
        ("Total records", "27"),
        ("Locked Load/Store Operations", "4"),
        ("Load Operations", "24"),
        ("Loads - uncacheable", "2"),
        ("Loads - IO", "1"),
        ("Loads - Miss", "1"),
        ("Load Fill Buffer Hit", "1"),
        ("Load L1D hit", "6"),
        ("Load L2D hit", "3"),
        ("Load LLC hit", "2"),
        ("Load Local HITM", "2"),
        ("Load Remote HIT", "1"),
        ("Load Local DRAM", "6"),
        ("Load Remote DRAM", "1"),
        ("Load MESI State Exclusive", "5"),
        ("Load MESI State Shared", "2"),
        ("Load LLC Misses", "8"),
        ("Load access blocked by data", "5"),
        ("Load access blocked by address", "1"),
        ("Load HIT Local Peer", "3"),
        ("Load HIT Remote Peer", "1"),
        ("LLC Misses to Local DRAM", "75.0%"),
        ("LLC Misses to Remote DRAM", "12.5%"),
        ("LLC Misses to Remote cache (HIT)", "12.5%"),
        ("LLC Misses to Remote cache (HITM)", "0.0%"),
        ("Store Operations", "2"),
        ("Store - uncacheable", "1"),
        ("Store L1D Hit", "1"),
        ("Store No available memory level", "0"),
        ("Unable to parse data source", "1"),
        // The shared line, and the two lines of peer hits only (perf 6.1 counts a line with
        // a peer hit as shared; it shows none of them without a HITM).
        ("Total Shared Cache Lines", "3"),
        ("Load HITs on shared lines", "6"),
        ("Load hits on peer cache or nodes", "4"),
        ("Locked Access on shared lines", "2"),
        ("Blocked Access on shared lines", "2"),
        ("Total Merged records", "3"),
    ] {
        assert_eq!(value(label), want, "{label}\n{ours}");
    }
    if support::perf().is_some() {
        same_as_perf(&dir, &[]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// [`contended`] and peer loads: `shared_line+0x18` loaded by thread 1 from a peer cache of
/// its own socket (latency 40) and by thread 2 from another socket's (70), and from L1 (6);
/// `counters+0x20` loaded from a local peer cache (30); `table+0x8` loaded from L1 (a line
/// with no HITM, no peer load and no store).
fn with_peers(objects: &[u64]) -> Vec<Access> {
    let (shared, table, counters) = (objects[0], objects[1], objects[2]);
    let peer = |remote: bool| {
        let (level, num, h) = if remote {
            (lvl::HIT | lvl::REM_CCE1, lvlnum::ANY_CACHE, hops::SOCKET)
        } else {
            (lvl::HIT | lvl::L2, lvlnum::L2, 0)
        };
        src(
            op::LOAD,
            level,
            snoop::NONE,
            lock::NA,
            tlb::NA,
            num,
            remote,
            snoopx::PEER,
            blk::NA,
            h,
        )
    };
    let load = |addr, src, weight, tid, cpu| Access {
        func: 0,
        addr,
        src,
        weight,
        period: 1,
        event: 0,
        tid,
        cpu,
    };
    let mut v = contended(objects);
    v.push(load(shared + 0x18, peer(false), 40, T1, 1));
    v.push(load(shared + 0x18, peer(true), 70, T2, 5));
    v.push(load(shared + 0x18, l1_load(), 6, T1, 1));
    v.push(load(counters + 0x20, peer(false), 30, T2, 5));
    v.push(load(table + 8, l1_load(), 5, T2, 5));
    v
}

/// `-d peer`: lines sorted and filtered by their peer loads, each with its share of them and
/// its local and remote peer loads; rows with a peer load or a store, each peer class with
/// its own mean latency and the other loads' mean without them. `--show-all` shows every
/// line with a sample, `--stats` the totals alone, `--no-source` no Source:Line column. Each
/// byte for byte as perf 6.1 prints it.
#[test]
fn peer_display_show_all_stats_and_no_source() {
    let dir = tmp("peer");
    let ev = c2c_events();
    let probe = build_events(&dir, &ev, &[]);
    let (shared, table, counters) = (probe.objects[0], probe.objects[1], probe.objects[2]);
    build_events(&dir, &ev, &with_peers(&probe.objects));
    let json = |args: &[&str]| -> serde_json::Value {
        let mut a = vec!["c2c", "report", "-i", "perf.data", "--json"];
        a.extend_from_slice(args);
        serde_json::from_str(&hrec_ok(&dir, &a)).unwrap()
    };
    let v = json(&["-d", "peer"]);
    let lines: Vec<(u64, u64, u64)> = v["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let s = &l["stats"];
            (
                l["addr"].as_u64().unwrap(),
                s["lcl_peer"].as_u64().unwrap(),
                s["rmt_peer"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(lines, [(shared, 1, 1), (counters & !63, 1, 0)]);
    let text = hrec_ok(&dir, &["c2c", "report", "-i", "perf.data", "-d", "peer"]);
    let table_rows = section(&text, "Shared Data Cache Line Table");
    let shares: Vec<&str> = table_rows.iter().map(|r| r[4].as_str()).collect();
    assert_eq!(shares, ["66.67%", "33.33%"]);
    assert!(text.contains("Cachelines sort on                : Peer Snoop"));
    // The row of offset 0x18: remote and local peer means 70 and 40, the L1 load's 6.
    let row = first_line_rows(&text)
        .into_iter()
        .find(|r| r[5] == "0x18")
        .unwrap();
    assert_eq!(row[0..2], ["100.00%", "100.00%"], "{row:?}");
    assert_eq!(row[9..14], ["70", "40", "6", "3", "2"], "{row:?}");
    // Under tot the peer-only row is not shown, and a peer load is not in the load mean.
    let tot = json(&[]);
    let first = &tot["lines"][0];
    assert_eq!(first["addr"].as_u64(), Some(shared));
    assert!(
        first["offsets"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["offset"] != 0x18)
    );
    // --show-all: every line with a sample, table's too, ties by address.
    let all: Vec<u64> = json(&["--show-all"])["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["addr"].as_u64().unwrap())
        .collect();
    assert!(all.contains(&table) && all.len() > 3, "{all:x?}");
    let stats = hrec_ok(&dir, &["c2c", "report", "-i", "perf.data", "--stats"]);
    assert!(stats.ends_with("Cacheline data grouping           : offset,iaddr\n"));
    assert!(text.starts_with(stats.replace("Total HITMs", "Peer Snoop").as_str()));
    let plain = hrec_ok(&dir, &["c2c", "report", "-i", "perf.data", "--no-source"]);
    assert!(!plain.contains("Source:Line") && !plain.contains("??:0"));
    if support::perf().is_some() {
        for args in [
            &["-d", "peer"][..],
            &["-d", "peer", "-N"],
            &["-d", "peer", "-NN", "-c", "tid,iaddr"],
            &["-d", "peer", "--show-all"],
            &["--show-all"],
            &["--show-all", "-d", "lcl", "-c", "pid,dso"],
            &["--stats"],
            &["--stats", "-d", "rmt"],
            &["--no-source"],
            &["--no-source", "-d", "peer", "-c", "tid,iaddr"],
        ] {
            same_as_perf(&dir, args);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// On a terminal (tmux), `hrec c2c report` is perf's interactive view: the Shared Data Cache
/// Line Table's rows as the text prints them, `d` opens the selected line's offsets with
/// their functions, `Esc` goes back, `q` quits; `--stdio` prints the text there.
#[test]
fn the_interactive_view_lists_lines_and_opens_ones_offsets() {
    use support::tmux::{Tmux, available};
    if !available() {
        eprintln!("skipped: tmux not installed");
        return;
    }
    let wait = std::time::Duration::from_secs(300);
    let (dir, objects, _) = contended_file("tui");
    let stdio = hrec_ok(&dir, &["c2c", "report", "-i", "perf.data", "--stdio"]);
    let rows = section(&stdio, "Shared Data Cache Line Table");
    assert_eq!(rows.len(), 3, "{stdio}");
    let hrec = env!("CARGO_BIN_EXE_hrec");
    let t = Tmux::start(&dir, 250, 30, &format!("{hrec} c2c report -i perf.data"));
    // Every row, cell for cell.
    let screen = t.wait_screen(wait, |s| {
        s.contains("(3 entries, sorted on Total HITMs)")
            && rows.iter().all(|r| {
                s.lines()
                    .any(|l| l.split_whitespace().eq(r.iter().map(String::as_str)))
            })
    });
    assert!(screen.contains("Index"), "{screen}");
    // The first line is `shared_line`'s (9 HITMs): its offsets, read by `reader` and
    // written by `writer`.
    t.send_keys(&["d"]);
    let line = t.wait_screen(wait, |s| {
        s.contains(&format!("Cacheline {:#x}", objects[0])) && s.contains("[.] writer")
    });
    assert!(line.contains("[.] reader"), "{line}");
    t.send_keys(&["Escape"]);
    t.wait_screen(wait, |s| s.contains("entries, sorted on"));
    t.send_keys(&["q"]);
    assert_eq!(t.wait_exit(wait), 0);
    // --tui without a terminal: one line.
    let o = hrec_in(&dir, &["c2c", "report", "-i", "perf.data", "--tui"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(out.is_empty() && err.trim().lines().count() == 1, "{err}");
    assert!(err.contains("--tui needs a terminal"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A function name longer than perf c2c's 30-column Symbol column is cut there, and whole with
/// `--full-symbols`: byte for byte perf 6.1's Pareto either way.
#[test]
fn long_symbols_are_cut_at_thirty_columns_unless_full_symbols() {
    let dir = tmp("longsym");
    let ev = c2c_events();
    let names = ["a_reader_with_a_name_far_longer_than_thirty_columns", "w"];
    let probe = build_named(&dir, &ev, &names, &[]);
    build_named(&dir, &ev, &names, &false_sharing(&probe.objects));
    let whole = format!("[.] {}", names[0]);
    let cut: String = whole.chars().take(30).collect();
    let plain = hrec_ok(&dir, &["c2c", "report", "-i", "perf.data", "--stdio"]);
    assert!(
        plain.contains(&format!("  {cut}  ")) && !plain.contains(&whole),
        "{plain}"
    );
    let full = hrec_ok(
        &dir,
        &[
            "c2c",
            "report",
            "-i",
            "perf.data",
            "--stdio",
            "--full-symbols",
        ],
    );
    assert!(full.contains(&format!("  {whole}  ")), "{full}");
    if support::perf().is_some() {
        for args in [
            &[][..],
            &["--full-symbols"],
            &["-c", "tid,iaddr", "--full-symbols"],
        ] {
            same_as_perf(&dir, args);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
