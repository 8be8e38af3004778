//! perf.data conformance: files recorded here by the installed perf (software events), read by
//! hrec and checked against perf's own reading of **the same file**. Same data, so the numbers
//! must agree exactly: sample counts, per-symbol overheads (within the 0.01 that perf's two
//! decimals round away), group read values and weights per sample.
//!
//! What is compared with what:
//!
//! * samples: `hrec script` sample lines = `perf script -F comm,tid,time,period` lines (one line
//!   per sample without an ip field, so callchains do not add lines); for a `:S` group, perf
//!   script splits each sample into one line per member, so its leader's lines are counted,
//!   and `perf report --stats` SAMPLE events too;
//! * overheads: `hrec report --json --sort sym` rows = `perf report --stdio --no-children
//!   --sort sym -g none`; unresolved addresses (`[.] 0x...`) are one bucket per side of the
//!   address space, because perf prints them as file offsets and hrec as addresses;
//! * group values: every sample's `{cpu-clock N task-clock N page-faults N}` in `hrec script` =
//!   the `..... id X, value Y` lines of `perf report -D` (perf 6.1's `perf script` has no field
//!   for read values; it prints each member as a sample whose period is the delta, which would
//!   only check differences);
//! * weights: `hrec script -F weight,ins_lat` = `perf script -F weight,ins_lat`, byte for
//!   byte.
//!
//! Kernel symbols come from this machine's kallsyms only when the file's kernel build-id is the
//! running kernel's. perf 6.1 writes no build-ids with `-z` or in pipe mode, so there hrec's
//! kernel rows stay unresolved while perf's are named: user-space rows are compared one by
//! one and the kernel as a total.

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::{hrec_in, hrec_ok, perf_ok as run_perf, text};

/// perf prints overheads with two decimals; a bucket of unresolved rows sums a few roundings.
const ROUNDING: f64 = 0.01;

/// `perf record -q -F 4000 -o NAME OPTS -- WORK` in `dir`.
fn perf_record(dir: &Path, name: &str, opts: &[&str], work: &[&str]) -> PathBuf {
    let mut args = vec!["record", "-q", "-F", "4000", "-o", name];
    args.extend_from_slice(opts);
    args.push("--");
    args.extend_from_slice(work);
    run_perf(dir, &args);
    dir.join(name)
}

/// The same in pipe mode: `perf record -o - ... > NAME`.
fn perf_record_pipe(dir: &Path, name: &str, work: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let out = std::fs::File::create(&path).unwrap();
    let mut args = vec![
        "record",
        "-q",
        "-F",
        "4000",
        "-e",
        "cpu-clock",
        "-o",
        "-",
        "--",
    ];
    args.extend_from_slice(work);
    let st = Command::new("perf")
        .args(&args)
        .current_dir(dir)
        .stdout(out)
        .status()
        .unwrap();
    assert!(st.success());
    path
}

/// perf 6.1 names an address in a PLT stub of a binary with `.plt.sec` (built with IBT, as
/// distributions build) by the symbol before the PLT, `_init`; hrec names the stub
/// (`clock_gettime@plt`). Lines that differ in that one word only.
fn plt_named_as_init(h: &str, p: &str) -> bool {
    let (hw, pw): (Vec<&str>, Vec<&str>) = (h.split(' ').collect(), p.split(' ').collect());
    hw.len() == pw.len()
        && hw.iter().zip(&pw).all(|(a, b)| {
            a == b || (b.starts_with("_init") && a.contains("@plt") && !a.contains("_init"))
        })
        && h != p
}

/// A pipe-mode perf.data lists no build-ids, so nothing names the vdso the recorded process
/// had: perf takes its own, and hrec this machine's when the recording's kernel release is
/// this machine's. Every sample in `__vdso_clock_gettime` is named as perf names it.
#[test]
fn pipe_mode_vdso_samples_are_named_as_perf_names_them() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = support::stacks::build(dir.path(), "unwind/vdso.c", &[]) else {
        return;
    };
    let out = std::fs::File::create(dir.path().join("pipe.data")).unwrap();
    let st = Command::new("sh")
        .args([
            "-c",
            "perf record -q -F 4000 -e cpu-clock:u -o - -- \"$1\" 2000000 | cat",
            "sh",
            prog.to_str().unwrap(),
        ])
        .current_dir(dir.path())
        .stdout(out)
        .status()
        .unwrap();
    assert!(st.success());
    let args = [
        "script",
        "-F",
        "comm,tid,time,period,ip,sym",
        "-i",
        "pipe.data",
    ];
    let perf = run_perf(dir.path(), &args);
    let (hrec, err) = hrec_ok(dir.path(), &args);
    assert!(err.is_empty(), "{err}");
    let in_vdso = |s: &str| {
        s.lines()
            .filter(|l| l.ends_with(" __vdso_clock_gettime"))
            .count()
    };
    assert!(in_vdso(&perf) > 0, "{perf}");
    assert_eq!(in_vdso(&hrec), in_vdso(&perf));
    assert_eq!(hrec.lines().count(), perf.lines().count());
    for (h, p) in hrec.lines().zip(perf.lines()) {
        assert!(h == p || plt_named_as_init(h, p), "hrec {h}\nperf {p}");
    }
}

fn hotspots() -> String {
    support::release_example("hotspots")
        .to_string_lossy()
        .into_owned()
}

/// Sample lines of `hrec script` (callchain frames are tab-indented, then a blank line).
fn hrec_script(dir: &Path, file: &str, fields: &str) -> Vec<String> {
    hrec_ok(dir, &["script", "-i", file, "-F", fields])
        .0
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('\t'))
        .map(str::to_string)
        .collect()
}

/// One line per sample.
fn perf_script_samples(dir: &Path, file: &str) -> usize {
    run_perf(
        dir,
        &["script", "-i", file, "-F", "comm,tid,time,period,event"],
    )
    .lines()
    .filter(|l| !l.trim().is_empty())
    .count()
}

/// Unresolved addresses are one bucket per side: perf prints them as file offsets, hrec as
/// addresses.
fn norm(key: &str) -> String {
    let key = key.trim();
    match key.split_once(' ') {
        Some((side, rest)) if rest.starts_with("0x") => format!("{side} (unresolved)"),
        _ => key.to_string(),
    }
}

/// The first table of `perf report --stdio --no-children -g none --sort KEY EXTRA`: overhead
/// (or with `-n`, samples) per normalised key.
fn perf_table(
    dir: &Path,
    file: &str,
    key: &str,
    extra: &[&str],
    samples: bool,
) -> HashMap<String, f64> {
    let mut args = vec![
        "report",
        "-i",
        file,
        "--stdio",
        "--no-children",
        "-g",
        "none",
        "--sort",
        key,
    ];
    args.extend_from_slice(extra);
    let out = run_perf(dir, &args);
    let mut m = HashMap::new();
    let mut tables = 0;
    for l in out.lines() {
        if l.starts_with("# Samples:") {
            tables += 1;
        }
        if tables > 1 {
            break;
        }
        if l.starts_with('#') || l.trim().is_empty() {
            continue;
        }
        let (pct, rest) = l.trim().split_once('%').expect("an overhead column");
        let (v, rest) = if samples {
            let (n, rest) = rest.trim().split_once(' ').expect("a samples column");
            (n.parse::<f64>().unwrap(), rest)
        } else {
            (pct.parse::<f64>().unwrap(), rest)
        };
        *m.entry(norm(rest)).or_insert(0.0) += v;
    }
    m
}

fn hrec_report(dir: &Path, file: &str, key: &str) -> Value {
    let (out, _) = hrec_ok(dir, &["report", "--json", "--sort", key, "-i", file]);
    serde_json::from_str(&out).unwrap()
}

/// Overhead (or samples) per normalised key of hrec's first event.
fn hrec_table(j: &Value, key: &str, samples: bool) -> HashMap<String, f64> {
    let mut m = HashMap::new();
    for r in j["events"][0]["rows"].as_array().unwrap() {
        let v = if samples {
            r["samples"].as_f64().unwrap()
        } else {
            r["overhead"].as_f64().unwrap()
        };
        *m.entry(norm(r["key"][key].as_str().unwrap()))
            .or_insert(0.0) += v;
    }
    m
}

/// Every key that `keep` selects has the same value on both sides (within `tol`). A row only
/// perf has and a row only hrec has with the same value are one function under two alias
/// names (`write` and `__GI___libc_write` share an address; perf and hrec pick differently):
/// such pairs are accepted, anything else is a mismatch.
fn assert_same(
    perf: &HashMap<String, f64>,
    hrec: &HashMap<String, f64>,
    tol: f64,
    keep: impl Fn(&str) -> bool,
    what: &str,
) {
    let mut keys: Vec<&String> = perf.keys().chain(hrec.keys()).filter(|k| keep(k)).collect();
    keys.sort();
    keys.dedup();
    assert!(!keys.is_empty(), "{what}: nothing to compare");
    let value = |t: &HashMap<String, f64>, k: &str| t.get(k).copied().unwrap_or(0.0);
    let differ: Vec<&String> = keys
        .into_iter()
        .filter(|k| (value(perf, k) - value(hrec, k)).abs() > tol)
        .collect();
    let mut hrec_only: Vec<&String> = differ
        .iter()
        .copied()
        .filter(|k| !perf.contains_key(*k))
        .collect();
    let mut bad = Vec::new();
    for k in differ.iter().filter(|k| perf.contains_key(**k)) {
        let p = value(perf, k);
        let alias = hrec.get(*k).is_none()
            && hrec_only
                .iter()
                .position(|h| (value(hrec, h) - p).abs() <= tol)
                .map(|i| hrec_only.remove(i))
                .inspect(|h| eprintln!("{what}: alias: perf {k} = hrec {h} ({p})"))
                .is_some();
        if !alias {
            bad.push(format!("{k}: perf {p} hrec {:.4}", value(hrec, k)));
        }
    }
    bad.extend(
        hrec_only
            .iter()
            .map(|k| format!("{k}: perf 0 hrec {:.4}", value(hrec, k))),
    );
    assert!(
        bad.is_empty(),
        "{what}: {} rows differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

fn total(t: &HashMap<String, f64>, keep: impl Fn(&str) -> bool) -> f64 {
    t.iter().filter(|(k, _)| keep(k)).map(|(_, v)| v).sum()
}

/// Samples and per-symbol overheads of one file, all rows or those `keep` selects.
fn check_counts_and_symbols(dir: &Path, file: &str, keep: impl Fn(&str) -> bool + Copy) -> Value {
    let hrec_lines = hrec_script(dir, file, "+pid");
    let perf_n = perf_script_samples(dir, file);
    let j = hrec_report(dir, file, "sym");
    assert_eq!(
        hrec_lines.len(),
        perf_n,
        "{file}: samples in hrec script vs perf script"
    );
    assert_eq!(
        j["samples"].as_u64(),
        Some(perf_n as u64),
        "{file}: samples in the report"
    );
    let perf = perf_table(dir, file, "sym", &[], false);
    assert_same(&perf, &hrec_table(&j, "sym", false), ROUNDING, keep, file);
    j
}

fn unresolved_reasons(j: &Value) -> Vec<String> {
    j["unresolved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u[0].as_str().unwrap().to_string())
        .collect()
}

/// A fixed period whose samples carry no PERIOD (`-c N` without `-P`): each sample stands for
/// the attr's period, as perf takes it. `script` prints it (by default and with `-F period`)
/// and `report` weighs by it, as perf does.
#[test]
fn a_fixed_period_without_period_in_the_samples_is_the_attrs() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bin = hotspots();
    // perf record's own -F would add PERIOD: -c alone leaves it out.
    run_perf(
        d,
        &[
            "record",
            "-q",
            "-e",
            "page-faults",
            "-c",
            "1",
            "-o",
            "pf.data",
            "--",
            &bin,
            "1",
        ],
    );
    run_perf(
        d,
        &[
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-c",
            "250000",
            "-o",
            "c.data",
            "--",
            &bin,
            "1",
        ],
    );
    for file in ["pf.data", "c.data"] {
        for args in [
            &[
                "script",
                "-i",
                file,
                "-F",
                "comm,pid,tid,time,event,ip,period",
            ][..],
            &["script", "-i", file, "-F", "period,event"],
        ] {
            let theirs = run_perf(d, args);
            let (ours, _) = hrec_ok(d, args);
            assert!(theirs.lines().count() > 5, "{theirs}");
            assert_eq!(ours, theirs, "{args:?}");
        }
    }
    let (ours, _) = hrec_ok(d, &["script", "-i", "c.data", "-F", "period"]);
    assert!(ours.lines().all(|l| l.trim() == "250000"), "{ours}");
    let n = |s: &str| s.lines().count();
    let j = hrec_report(d, "c.data", "sym");
    let period: u64 = j["events"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["period"].as_u64().unwrap())
        .sum();
    let (samples, _) = hrec_ok(d, &["script", "-i", "c.data", "-F", "event"]);
    assert_eq!(period, 250000 * n(&samples) as u64);
}

/// Code run from a memfd mapped twice (`tests/fixtures/memfd/twice.c`): perf takes a memfd
/// for a file, so `script` names it by its path (`/memfd:jitcode (deleted)`) and prints each
/// sample's own address, and `report` has one row per file offset, not one per address.
#[test]
fn code_in_a_memfd_mapped_twice_reads_as_perf_reads_it() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(prog) = support::stacks::build(d, "memfd/twice.c", &[]) else {
        return;
    };
    let prog = prog.to_str().unwrap();
    run_perf(
        d,
        &[
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-o",
            "m.data",
            "--",
            prog,
        ],
    );
    for args in [
        &["script", "-i", "m.data"][..],
        &[
            "script",
            "-i",
            "m.data",
            "-F",
            "comm,pid,tid,time,event,ip,sym,dso,period",
        ],
    ] {
        let theirs = run_perf(d, args);
        let (ours, _) = hrec_ok(d, args);
        assert!(theirs.contains("(/memfd:jitcode (deleted))"), "{theirs}");
        assert_eq!(ours, theirs, "{args:?}");
    }
    let rows = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| !l.starts_with('#') && l.contains("memfd:jitcode"))
            .map(|l| l.split_whitespace().last().unwrap_or_default().to_string())
            .collect()
    };
    let theirs = run_perf(
        d,
        &["report", "--stdio", "--sort", "dso,sym", "-i", "m.data"],
    );
    let (ours, _) = hrec_ok(
        d,
        &["report", "--stdio", "--sort", "dso,sym", "-i", "m.data"],
    );
    // The loop's two instructions, whichever mapping ran them: the same rows as perf's.
    assert_eq!(rows(&ours), rows(&theirs), "{ours}\n{theirs}");
    assert!(rows(&ours).len() <= 3, "{ours}");
}

#[test]
fn plain_recording_matches_perf() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = hotspots();
    perf_record(dir.path(), "plain.data", &["-e", "cpu-clock"], &[&bin, "1"]);
    let j = check_counts_and_symbols(dir.path(), "plain.data", |_| true);
    assert!(
        j["events"][0]["rows"][0]["key"]["sym"]
            .as_str()
            .unwrap()
            .contains("hot_multiply"),
        "{j}"
    );
    // perf script's default output, byte for byte: its column widths, `[unknown]` where no
    // symbol covers an address.
    let perf = Command::new("perf")
        .args(["script", "-i", "plain.data"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let (script, _) = hrec_ok(dir.path(), &["script", "-i", "plain.data"]);
    let perf = String::from_utf8_lossy(&perf.stdout);
    assert!(script.lines().count() > 100, "{script}");
    let differ: Vec<(&str, &str)> = perf
        .lines()
        .zip(script.lines())
        .filter(|(a, b)| a != b)
        .take(5)
        .collect();
    assert!(
        differ.is_empty() && perf.lines().count() == script.lines().count(),
        "perf script and hrec script differ: {differ:#?}"
    );
    // The info dump names the file's facts.
    let (info, _) = hrec_ok(dir.path(), &["info", "-i", "plain.data"]);
    for want in [
        "perf.data (file mode)",
        "# event 0 : name = cpu-clock, pmu = software, role = sampler",
        "# perf version : 6.",
        "# cmdline : ",
        "kernel build-id",
    ] {
        assert!(info.contains(want), "{want}:\n{info}");
    }
}

#[test]
fn callchains_match_perf() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = hotspots();
    perf_record(
        dir.path(),
        "g.data",
        &["-e", "cpu-clock", "-g"],
        &[&bin, "1"],
    );
    check_counts_and_symbols(dir.path(), "g.data", |_| true);
    // The same callchain frames (perf prints them without the context markers), at the same
    // addresses: return addresses as recorded, not the byte before them that is looked up.
    // perf 6.1 prints user frames relative to their mapping and hrec the runtime address;
    // mappings start on a page, so the offsets into the page agree.
    let in_page = |out: &str| -> Vec<u64> {
        out.lines()
            .filter(|l| l.starts_with('\t') && !l.trim().is_empty())
            .map(|l| u64::from_str_radix(l.trim(), 16).expect("an address") & 0xfff)
            .collect()
    };
    let perf_frames = in_page(&run_perf(
        dir.path(),
        &["script", "-i", "g.data", "-F", "ip"],
    ));
    let (out, _) = hrec_ok(dir.path(), &["script", "-i", "g.data", "-F", "ip"]);
    let hrec_frames = in_page(&out);
    assert!(perf_frames.len() > 100, "{}", perf_frames.len());
    assert_eq!(hrec_frames, perf_frames);
    // hrec's callers come out in the report.
    let (report, _) = hrec_ok(dir.path(), &["report", "-g", "-i", "g.data"]);
    assert!(report.contains("hotspots::main"), "{report}");
}

/// A chain holding a context value perf does not know (-1, read off a user stack by the
/// kernel's frame-pointer walk, as seen in `-a` recordings) is discarded whole, as perf
/// discards it: `script` prints no frame under the sample, and `report --children` has the
/// sample's own address alone. The chains of a `-g` recording are made so by hand, every
/// other sample's (a C program with frame pointers).
#[test]
fn a_chain_with_an_unknown_context_is_discarded_as_perf_does() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A C program with frame pointers: user chains of several entries.
    let Some(prog) = support::stacks::build(d, "unwind/lazy.c", &["-fno-omit-frame-pointer"])
    else {
        return;
    };
    let prog = prog.to_str().unwrap();
    perf_record(d, "g.data", &["-e", "cpu-clock", "-g"], &[prog, "3000000"]);
    let mut b = std::fs::read(d.join("g.data")).unwrap();
    let user = (-512i64 as u64).to_le_bytes();
    let (records, _, _) = data_records(&b);
    let mut patched = 0;
    for (at, _, size) in records.into_iter().filter(|r| r.1 == 9).step_by(2) {
        // The entry two after the USER marker, inside the record.
        let marker = (at + 8..at + size - 8)
            .step_by(8)
            .find(|&o| b[o..o + 8] == user);
        if let Some(m) = marker.filter(|&m| m + 24 <= at + size) {
            b[m + 16..m + 24].copy_from_slice(&u64::MAX.to_le_bytes());
            patched += 1;
        }
    }
    assert!(patched > 50, "{patched} chains patched");
    std::fs::write(d.join("bad.data"), &b).unwrap();
    // (Addresses only: names differ where the README says they do.)
    let fields = ["-F", "comm,tid,time,ip"];
    let perf = run_perf(d, &["script", "-i", "bad.data", fields[0], fields[1]]);
    let (hrec, _) = hrec_ok(d, &["script", "-i", "bad.data", fields[0], fields[1]]);
    let empty = |out: &str| out.matches(": \n\n").count();
    assert!(
        empty(&perf) >= patched,
        "perf printed {} empty chains",
        empty(&perf)
    );
    assert!(perf == hrec, "perf:\n{perf}\nhrec:\n{hrec}");
    // `report --children`: the callers of the discarded chains lose those samples in both.
    // (children, self) per symbol; hrec has a Samples column after Self.
    let rows = |out: &str, skip: usize| -> HashMap<String, (String, String)> {
        out.lines()
            .filter(|l| !l.starts_with('#') && l.contains("%"))
            .filter_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let name = w.get(skip + 2..)?.join(" ");
                Some((name, (w.first()?.to_string(), w.get(1)?.to_string())))
            })
            .collect()
    };
    let args = [
        "report",
        "--stdio",
        "--children",
        "--sort",
        "sym",
        "-g",
        "none",
        "-i",
        "bad.data",
    ];
    let theirs = rows(&run_perf(d, &args), 0);
    let ours = rows(&hrec_ok(d, &args).0, 1);
    let main = theirs
        .iter()
        .find(|(k, _)| k.ends_with("] main"))
        .expect("perf has main");
    assert_eq!(ours.get(main.0), Some(main.1), "{ours:?}");
    // Every row of perf's is hrec's with the same shares, but for the README's naming
    // differences (perf's `_init` over `.plt` is hrec's `sym@plt`, its `_dl_start_user` at
    // ld.so's start hrec's `_start`), whose samples are then under hrec's name.
    for (k, v) in &theirs {
        match ours.get(k) {
            Some(o) => assert_eq!(o, v, "{k}: hrec {ours:?}"),
            None => assert!(
                k.ends_with("] _init") || k.ends_with("] _dl_start_user"),
                "perf's row {k} is not hrec's:\nperf {theirs:?}\nhrec {ours:?}"
            ),
        }
    }
}

/// `report --children`'s rows of call-chain entries no mapping covers (frame-pointer garbage
/// under a program built without frame pointers): perf's rows, one per address as recorded
/// (a return address of 1 is not 0's), `0000000000000000` for zero, and the level of the
/// sample they are in (`[k]` under a kernel sample).
#[test]
fn unmapped_chain_entries_are_perfs_children_rows() {
    if support::perf().is_none() {
        return;
    }
    if !support::privilege::is_root() {
        eprintln!("skipped: kernel call chains need root here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    run_perf(
        d,
        &[
            "record",
            "-q",
            "-g",
            "-e",
            "cpu-clock",
            "-o",
            "k.data",
            "--",
            "sh",
            "-c",
            "ls -R /usr/share > /dev/null",
        ],
    );
    // (children, self, [level] address) of the unresolved rows.
    let rows = |out: &str, skip: usize| -> Vec<String> {
        let mut v: Vec<String> = out
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|w| {
                w.len() == skip + 4
                    && w[skip + 3]
                        .bytes()
                        .all(|b| b.is_ascii_hexdigit() || b == b'x')
            })
            .map(|w| format!("{} {} {} {}", w[0], w[1], w[skip + 2], w[skip + 3]))
            .collect();
        v.sort();
        v
    };
    let args = [
        "report",
        "--stdio",
        "--children",
        "--sort",
        "sym",
        "-g",
        "none",
        "-i",
        "k.data",
    ];
    let theirs = rows(&run_perf(d, &args), 0);
    let (ours, _) = hrec_ok(d, &args);
    // hrec's rows have a Samples column after Children and Self.
    let ours = rows(&ours, 1);
    assert!(!theirs.is_empty(), "no unresolved rows to compare");
    // Every row of hrec's is perf's. perf may have a few more: an address in a PLT stub,
    // which perf leaves unresolved (two rows for one sample in `malloc@plt`: the leaf by its
    // file offset, self and children, and the chain entry by its address, children only)
    // and hrec names `malloc@plt` (the README's naming difference); seen so in a run with 2
    // such rows of 220.
    for r in &ours {
        assert!(theirs.contains(r), "{r} is not perf's: {theirs:?}");
    }
    let only_perf = theirs.len().saturating_sub(ours.len());
    // (How many samples land in a PLT varies from run to run: a clean-clone run had 4 of
    // 174 rows, past the 2% this allowed before; 5% now.)
    assert!(
        only_perf * 20 <= theirs.len().max(50),
        "{only_perf} of {} rows: {theirs:?}",
        theirs.len()
    );
}

#[test]
fn weight_struct_samples_decode_with_their_weight() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = hotspots();
    perf_record(
        dir.path(),
        "w.data",
        &["-W", "-e", "cpu-clock"],
        &[&bin, "1"],
    );
    let j = check_counts_and_symbols(dir.path(), "w.data", |_| true);
    assert_eq!(
        j["events"][0]["retire_latency"],
        Value::Null,
        "all zero: no latencies"
    );
    // Sample by sample, in time order: var1 and ins_lat as perf prints them (0 here: cpu-clock
    // fills no weight), byte for byte.
    let args = ["script", "-i", "w.data", "-F", "weight,ins_lat"];
    let perf = run_perf(dir.path(), &args);
    let (hrec, _) = hrec_ok(dir.path(), &args);
    assert!(perf.lines().count() > 100, "{perf}");
    assert_eq!(hrec, perf);
    let samples_of_file = perf.lines().count() as u64;
    // `hrec stat --tpebs-from` reads it too: its samples, all without a retire latency here.
    match hrec::stat::tpebs::from_file(&dir.path().join("w.data")) {
        Err(hrec::stat::tpebs::TpebsError::NoLatencies { samples, .. }) => {
            assert_eq!(samples, samples_of_file)
        }
        other => panic!("{other:?}"),
    }
}

/// `perf report -D`: the read values of each sample, keyed by (time in µs, tid), in group order.
fn perf_group_reads(dir: &Path, file: &str) -> Vec<((u64, u32), Vec<u64>)> {
    let dump = run_perf(dir, &["report", "-D", "-i", file]);
    let mut out: Vec<((u64, u32), Vec<u64>)> = Vec::new();
    let mut cur: Option<usize> = None;
    for l in dump.lines() {
        if l.contains("PERF_RECORD_SAMPLE") {
            // "TIME 0xOFF [0xSIZE]: PERF_RECORD_SAMPLE(IP, 0x2): PID/TID: ..."
            let time: u64 = l.split_whitespace().next().unwrap().parse().unwrap();
            let tid: u32 = l
                .split("): ")
                .nth(1)
                .and_then(|r| r.split(':').next())
                .and_then(|pt| pt.split('/').nth(1))
                .unwrap()
                .parse()
                .unwrap();
            out.push(((time / 1000, tid), Vec::new()));
            cur = Some(out.len() - 1);
        } else if let (Some(i), Some(v)) = (cur, l.trim().strip_prefix("..... id ")) {
            let value = v.split("value ").nth(1).unwrap().split(',').next().unwrap();
            out[i]
                .1
                .push(u64::from_str_radix(value.trim(), 16).unwrap());
        } else if !l.starts_with('.') {
            cur = None;
        }
    }
    out
}

#[test]
fn group_reads_match_perf_sample_by_sample() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = hotspots();
    perf_record(
        dir.path(),
        "grp.data",
        &["-e", "{cpu-clock,task-clock,page-faults}:S"],
        &[&bin, "1"],
    );
    let f = "grp.data";
    // perf script prints one line per member with a non-zero delta: count the leader's.
    let perf_leader = run_perf(dir.path(), &["script", "-i", f, "-F", "tid,time,event"])
        .lines()
        .filter(|l| l.contains(" cpu-clock:"))
        .count();
    let stats = run_perf(dir.path(), &["report", "--stats", "-i", f]);
    let perf_samples: usize = stats
        .lines()
        .find_map(|l| l.trim().strip_prefix("SAMPLE events:"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // Both print a line per member that counted, each with its delta as the period.
    let args = ["script", "-i", f, "-F", "tid,time,period,event"];
    let (ours, _) = hrec_ok(dir.path(), &args);
    assert_eq!(ours, run_perf(dir.path(), &args));
    let lines: Vec<String> = hrec_script(dir.path(), f, "+pid,+read")
        .into_iter()
        .filter(|l| l.contains(" cpu-clock:"))
        .collect();
    assert_eq!(lines.len(), perf_leader);
    assert_eq!(lines.len(), perf_samples);
    // Group values: every sample, every member, equal.
    let mut perf = perf_group_reads(dir.path(), f);
    let mut hrec: Vec<((u64, u32), Vec<u64>)> = lines
        .iter()
        .map(|l| {
            let mut w = l.split_whitespace();
            let _comm = w.next();
            let tid: u32 = w
                .next()
                .unwrap()
                .split('/')
                .nth(1)
                .unwrap()
                .parse()
                .unwrap();
            let t = w.next().unwrap().trim_end_matches(':').replace('.', "");
            let group = l.split_once('{').unwrap().1.split_once('}').unwrap().0;
            let names: Vec<&str> = group.split_whitespace().step_by(2).collect();
            assert_eq!(names, ["cpu-clock", "task-clock", "page-faults"], "{l}");
            let values = group
                .split_whitespace()
                .skip(1)
                .step_by(2)
                .map(|v| v.parse().unwrap())
                .collect();
            ((t.parse().unwrap(), tid), values)
        })
        .collect();
    perf.sort();
    hrec.sort();
    assert_eq!(hrec.len(), perf.len());
    assert!(hrec.iter().all(|(_, v)| v.len() == 3));
    assert_eq!(hrec, perf);
    // The report: the sampler's samples per symbol equal perf's (perf weights a group member
    // by the delta of its own read value, hrec the sampler by its period, so overheads may
    // differ by a few hundredths; the sample counts may not).
    let j = hrec_report(dir.path(), f, "sym");
    let perf_n = perf_table(dir.path(), f, "sym", &["--no-group", "-n"], true);
    assert_same(
        &perf_n,
        &hrec_table(&j, "sym", true),
        0.0,
        |_| true,
        "grp samples",
    );
    let roles: Vec<String> = hrec_ok(dir.path(), &["info", "-i", f])
        .0
        .lines()
        .filter(|l| l.starts_with("# event"))
        .map(|l| {
            l.split(", role = ")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(roles, ["sampler", "counted", "counted"]);
}

#[test]
fn compressed_and_pipe_files_match_perf_kernel_names_included() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = hotspots();
    perf_record(
        dir.path(),
        "z.data",
        &["-e", "cpu-clock", "-z"],
        &[&bin, "1"],
    );
    perf_record_pipe(dir.path(), "pipe.data", &[&bin, "1"]);
    for f in ["z.data", "pipe.data"] {
        // perf 6.1 writes no kernel build-id here: hrec names kernel frames from this
        // machine's kallsyms because the recording's kernel release and `_text` are this
        // machine's (the same boot), as perf names them.
        let j = check_counts_and_symbols(dir.path(), f, |_| true);
        let hrec = hrec_table(&j, "sym", false);
        assert!(
            !hrec.contains_key("[k] (unresolved)"),
            "{f}: {hrec:?} {:?}",
            unresolved_reasons(&j)
        );
    }
    let (info, _) = hrec_ok(dir.path(), &["info", "-i", "z.data"]);
    assert!(info.contains("# compressed : zstd"), "{info}");
    let (info, _) = hrec_ok(dir.path(), &["info", "-i", "pipe.data"]);
    assert!(info.contains("perf.data (pipe mode)"), "{info}");
}

#[test]
fn system_wide_recording_matches_perf() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new("perf")
        .args([
            "record",
            "-q",
            "-F",
            "4000",
            "-o",
            "a.data",
            "-e",
            "cpu-clock",
            "-a",
        ])
        .args(["--", "sleep", "0.5"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    if !o.status.success() {
        // System-wide recording needs root or perf_event_paranoid <= 0.
        eprintln!(
            "skipped: perf record -a is not allowed here: {}",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .next()
                .unwrap_or("")
        );
        return;
    }
    let f = "a.data";
    // Every sample lands in the same binary on both sides, and every kernel symbol matches.
    // (User-space symbols of whatever else ran are compared by binary only: perf and hrec name
    // C++ functions differently, with and without parameter lists, and pick different aliases
    // among identical folded functions.)
    let j = check_counts_and_symbols(dir.path(), f, |k| k.starts_with("[k]"));
    let dso = hrec_report(dir.path(), f, "dso");
    assert_eq!(dso["samples"], j["samples"]);
    let perf = perf_table(dir.path(), f, "dso", &[], false);
    assert_same(
        &perf,
        &hrec_table(&dso, "dso", false),
        ROUNDING,
        |_| true,
        "a.data dsos",
    );
    let (info, _) = hrec_ok(dir.path(), &["info", "-i", f]);
    assert!(
        info.contains("role = tracking"),
        "perf's dummy event: {info}"
    );
    // The side-band of a whole machine (threads forked by the idle task, tids reused by new
    // threads) prints as perf prints it, thread names included.
    let args = [
        "script",
        "-i",
        f,
        "--show-task-events",
        "--show-mmap-events",
    ];
    let side = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.contains(": PERF_RECORD_"))
            .map(str::to_string)
            .collect()
    };
    let perf = side(&run_perf(dir.path(), &args));
    let hrec = side(&hrec_ok(dir.path(), &args).0);
    assert!(perf.len() > 20, "{perf:?}");
    for (a, b) in perf.iter().zip(&hrec) {
        assert_eq!(a, b, "a.data side-band");
    }
    assert_eq!(perf.len(), hrec.len(), "a.data side-band lines");
}

#[test]
fn another_kernels_recording_leaves_kernel_frames_unresolved_with_the_reason() {
    if support::perf().is_none() {
        return;
    }
    let Some(running) =
        hrec::recording::perfdata::running_kernel_build_id(Path::new("/sys/kernel/notes"))
    else {
        eprintln!("skipped: /sys/kernel/notes has no build-id");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bin = hotspots();
    // Page faults of a fresh 32 MiB buffer: kernel samples for sure.
    let p = perf_record(dir.path(), "k.data", &["-e", "cpu-clock"], &[&bin, "1"]);
    let mut bytes = std::fs::read(&p).unwrap();
    let id: Vec<u8> = (0..running.len() / 2)
        .map(|i| u8::from_str_radix(&running[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let at = bytes
        .windows(id.len())
        .position(|w| w == id)
        .expect("the kernel build-id is in the build-id table");
    bytes[at] ^= 0xff;
    std::fs::write(dir.path().join("other.data"), &bytes).unwrap();
    let same = hrec_report(dir.path(), "k.data", "sym");
    let other = hrec_report(dir.path(), "other.data", "sym");
    let (ks, ko) = (
        hrec_table(&same, "sym", false),
        hrec_table(&other, "sym", false),
    );
    let kernel = |k: &str| k.starts_with("[k]");
    assert!(total(&ks, kernel) > 0.0, "no kernel samples: {ks:?}");
    assert!(ks.keys().any(|k| kernel(k) && k != "[k] (unresolved)"));
    assert_eq!(
        ko.keys().filter(|k| kernel(k)).collect::<Vec<_>>(),
        ["[k] (unresolved)"]
    );
    assert!((total(&ks, kernel) - total(&ko, kernel)).abs() < 1e-9);
    assert!(
        unresolved_reasons(&other).contains(&"kernel differs from the recording's".into()),
        "{other}"
    );
    let (text, _) = hrec_ok(dir.path(), &["report", "-i", "other.data"]);
    assert!(
        text.contains("kernel differs from the recording's"),
        "{text}"
    );
    let (info, _) = hrec_ok(dir.path(), &["info", "-i", "other.data"]);
    assert!(info.contains("is not this machine's"), "{info}");
}

#[test]
fn cut_and_damaged_files_give_a_partial_result_or_one_error_line() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = hotspots();
    let p = perf_record(
        dir.path(),
        "full.data",
        &["-e", "cpu-clock", "-g"],
        &[&bin, "1"],
    );
    let full = std::fs::read(&p).unwrap();
    let full_samples = perf_script_samples(dir.path(), "full.data");
    let data_off = u64::from_le_bytes(full[40..48].try_into().unwrap()) as usize;
    let data_end = data_off + u64::from_le_bytes(full[48..56].try_into().unwrap()) as usize;
    let mut cuts: Vec<usize> = (0..24).map(|i| i * full.len() / 24).collect();
    cuts.extend([
        0,
        7,
        8,
        103,
        104,
        data_off - 1,
        data_off,
        data_off + 3,
        data_end,
        data_end + 9,
    ]);
    for cut in cuts {
        let name = format!("cut{cut}.data");
        std::fs::write(dir.path().join(&name), &full[..cut]).unwrap();
        for cmd in ["report", "script", "info", "flamegraph"] {
            let mut args = vec![cmd, "-i", name.as_str()];
            if cmd == "flamegraph" {
                args.extend(["-o", "cut.svg"]);
            }
            let o = hrec_in(dir.path(), &args);
            let (out, err) = text(&o);
            assert!(!err.contains("panicked"), "{cmd} cut {cut}: {err}");
            match o.status.code() {
                Some(0) => {
                    if cut < data_end && cut > data_off && cmd == "report" {
                        assert!(err.contains("is cut short"), "{cmd} cut {cut}: {err}");
                    }
                    if cmd == "script" {
                        let n = out
                            .lines()
                            .filter(|l| !l.is_empty() && !l.starts_with('\t'))
                            .count();
                        assert!(n <= full_samples, "cut {cut}: {n} samples");
                    }
                }
                Some(1) => {
                    // Nothing readable (a header or the attrs cut off), or nothing to draw:
                    // one error line, after the warning about the cut if there was one.
                    let errors = err.lines().filter(|l| l.starts_with("hrec: error: "));
                    assert_eq!(errors.count(), 1, "{cmd} cut {cut}: {err}");
                    assert!(
                        err.lines().all(|l| l.starts_with("hrec: ")),
                        "{cmd} cut {cut}: {err}"
                    );
                }
                other => panic!("{cmd} cut {cut}: exit {other:?}: {err}"),
            }
        }
    }
    // Damaged bytes in the header, the attrs and the feature sections.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..40 {
        let mut b = full.clone();
        for _ in 0..4 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let outside = (0..data_off).chain(data_end..full.len());
            let n = outside.clone().count();
            let i = outside.clone().nth((state >> 33) as usize % n).unwrap();
            b[i] = (state >> 17) as u8;
        }
        std::fs::write(dir.path().join("bad.data"), &b).unwrap();
        let o = hrec_in(dir.path(), &["report", "-i", "bad.data"]);
        let (_, err) = text(&o);
        assert!(!err.contains("panicked"), "round {round}: {err}");
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "round {round}: {err}"
        );
    }
}

/// `--percentage`: with a filter, each row keeps its share of all samples (perf's default,
/// absolute) or gets its share of the kept ones (relative), with the header's event count to
/// match, as perf report prints them on the same file.
#[test]
fn percentage_absolute_and_relative_match_perf() {
    if support::perf().is_none() {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    // `(overhead of hot, event count)` of a report.
    let parse = |out: &str| -> (String, String) {
        let hot = out
            .lines()
            .find(|l| l.trim_end().ends_with("[.] hot"))
            .and_then(|l| l.split_whitespace().next())
            .unwrap_or_default()
            .to_string();
        let count = out
            .lines()
            .find_map(|l| l.strip_prefix("# Event count (approx.): "))
            .unwrap_or_default()
            .to_string();
        (hot, count)
    };
    for mode in [None, Some("absolute"), Some("relative")] {
        let mut perf = vec![
            "report",
            "-i",
            "plain.perf.data",
            "--symfs",
            "root",
            "--stdio",
            "--sort",
            "sym",
        ];
        perf.extend(["--symbols", "hot"]);
        let mut hrec = vec![
            "report",
            "-i",
            "plain.perf.data",
            "--symfs",
            "root",
            "--sort",
            "sym",
            "--sym",
            "hot",
        ];
        if let Some(m) = mode {
            perf.extend(["--percentage", m]);
            hrec.extend(["--percentage", m]);
        }
        let p = Command::new("perf")
            .args(&perf)
            .current_dir(&dir)
            .output()
            .unwrap();
        let want = parse(&String::from_utf8_lossy(&p.stdout));
        let (out, _) = hrec_ok(&dir, &hrec);
        let got = parse(&out);
        assert!(!want.0.is_empty(), "perf printed no row for hot");
        assert_eq!(got, want, "{mode:?}");
        if mode == Some("relative") {
            assert_eq!(got.0, "100.00%");
        } else {
            assert_ne!(
                got.0, "100.00%",
                "{mode:?}: the filter keeps the row's share"
            );
        }
    }
    let o = hrec_in(
        &dir,
        &["report", "-i", "plain.perf.data", "--percentage", "most"],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// `-q`: the rows and their call-graph trees only, as perf's `-q` prints them (hrec keeps its
/// Samples column, and leaves out perf's two trailing blank lines).
#[test]
fn quiet_report_is_perfs_rows_and_trees() {
    if support::perf().is_none() {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let args = ["-i", "callchain.perf.data", "-q", "--no-children"];
    let p = Command::new("perf")
        .args(["report", "--stdio"])
        .args(args)
        .current_dir(&dir)
        .output()
        .unwrap();
    let perf = String::from_utf8_lossy(&p.stdout);
    let mut hrec_args = vec!["report"];
    hrec_args.extend(args);
    let (hrec, _) = hrec_ok(&dir, &hrec_args);
    assert!(!hrec.contains('#'), "{hrec}");
    // Row lines without hrec's Samples column, tree lines as printed.
    let norm = |t: &str, samples_column: bool| -> Vec<String> {
        let mut v: Vec<String> = t
            .lines()
            .map(|l| {
                if l.trim_start().starts_with(|c: char| c.is_ascii_digit()) {
                    let mut w: Vec<&str> = l.split_whitespace().collect();
                    if samples_column {
                        w.remove(1);
                    }
                    w.join(" ")
                } else {
                    l.trim_end().to_string()
                }
            })
            .collect();
        while v.last().is_some_and(|l| l.is_empty()) {
            v.pop();
        }
        v
    };
    let want = norm(&perf, false);
    assert!(want.len() > 5, "{perf}");
    assert_eq!(norm(&hrec, true), want);
}

/// `script --ns` (times to the nanosecond) and `-G` (one line per sample, no call chain)
/// print what perf script prints on the same files, byte for byte.
#[test]
fn script_ns_and_hide_call_graph_equal_perf_script() {
    if support::perf().is_none() {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    for file in ["callchain.perf.data", "plain.perf.data"] {
        for flags in [&["--ns"][..], &["-G"], &["-G", "--ns"]] {
            let mut args = vec!["script", "--symfs", "root", "-i", file];
            args.extend(flags);
            let p = Command::new("perf")
                .args(&args)
                .current_dir(&dir)
                .output()
                .unwrap();
            let (hrec, _) = hrec_ok(&dir, &args);
            let perf = String::from_utf8_lossy(&p.stdout);
            assert!(perf.lines().count() > 100, "{file} {flags:?}: {perf}");
            assert!(
                hrec == perf,
                "{file} {flags:?}: hrec script differs from perf script"
            );
        }
    }
}

/// `script --show-mmap-events` / `--show-task-events` print the side-band records (COMM, FORK,
/// EXIT, MMAP2) where they occur, byte for byte as perf script prints them on the same files,
/// with and without call chains and times to the nanosecond.
#[test]
fn script_side_band_events_equal_perf_script() {
    if support::perf().is_none() {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    for file in ["callchain.perf.data", "plain.perf.data"] {
        for flags in [
            &["--show-mmap-events"][..],
            &["--show-task-events"],
            &["--show-task-events", "--show-mmap-events", "-G", "--ns"],
        ] {
            let mut args = vec!["script", "--symfs", "root", "-i", file];
            args.extend(flags);
            let perf = run_perf(&dir, &args);
            let (hrec, _) = hrec_ok(&dir, &args);
            let records = perf.matches(": PERF_RECORD_").count();
            assert!(records >= 4, "{file} {flags:?}: {perf}");
            assert_eq!(hrec.matches(": PERF_RECORD_").count(), records);
            assert!(
                hrec == perf,
                "{file} {flags:?}: hrec script differs from perf script"
            );
        }
    }
}

/// `script --show-switch-events` prints the context-switch records of perf's `--switch-events`
/// (`PERF_RECORD_SWITCH` of a followed task, `PERF_RECORD_SWITCH_CPU_WIDE` of `-a`) where they
/// occur, byte for byte as perf script prints them on the same files, alone and with the other
/// side-band records, `--ns`, `-G` and field lists; the samples between them too, in the same
/// order (hrec's `offcpu-time` samples, which it makes of those records, left out: perf has no
/// such event in these files).
#[test]
fn script_switch_events_equal_perf_script() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = support::release_example("offcpu");
    let prog = prog.to_str().unwrap();
    let mut files = vec![perf_record(
        dir.path(),
        "switch.data",
        &["-e", "cpu-clock", "--switch-events"],
        &[prog, "0.3"],
    )];
    let wide = Command::new("perf")
        .args(["record", "-q", "-a", "-e", "cpu-clock", "--switch-events"])
        .args(["-o", "wide.data", "--", prog, "0.3"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    if wide.status.success() {
        files.push(dir.path().join("wide.data"));
    } else {
        eprintln!("skipped the CPU-wide records: perf record -a is not allowed here");
    }
    for file in &files {
        let file = file.to_str().unwrap();
        for (flags, whole) in [
            (&["--show-switch-events"][..], false),
            (&["--show-switch-events", "--ns"], false),
            (
                &[
                    "--show-switch-events",
                    "--show-task-events",
                    "--show-mmap-events",
                    "-G",
                ],
                false,
            ),
            (
                &[
                    "--show-switch-events",
                    "-F",
                    "comm,pid,tid,time,period,event",
                ],
                true,
            ),
            (
                &["--show-switch-events", "--ns", "-F", "tid,time,event"],
                true,
            ),
        ] {
            let mut args = vec!["script", "-i", file];
            args.extend(flags);
            let perf = run_perf(dir.path(), &args);
            let (hrec, _) = hrec_ok(dir.path(), &args);
            let switches = perf.matches(": PERF_RECORD_SWITCH").count();
            assert!(switches >= 20, "{file} {flags:?}: {perf}");
            assert_eq!(hrec.matches(": PERF_RECORD_SWITCH").count(), switches);
            assert!(
                hrec.lines().any(|l| l.contains(" offcpu-time: ")),
                "{file} {flags:?}: no offcpu-time sample"
            );
            let keep = |l: &&str| {
                if whole {
                    !l.contains(" offcpu-time: ")
                } else {
                    l.contains(": PERF_RECORD_")
                }
            };
            let perf: Vec<&str> = perf.lines().filter(keep).collect();
            let hrec: Vec<&str> = hrec.lines().filter(keep).collect();
            for (a, b) in perf.iter().zip(&hrec) {
                assert_eq!(a, b, "{file} {flags:?}");
            }
            assert_eq!(perf.len(), hrec.len(), "{file} {flags:?}: lines");
        }
    }
}

/// `script -F` prints what perf prints for the same field lists on the same files: each
/// field followed by its blank, call chains and `sym`/`dso`/`srcline` only with `ip`, `+`/`-`
/// changes to the defaults. With call chains, perf finds source lines of libc frames it has no
/// symbol for (its debug file is outside `--symfs`); those `srcline` lines are the only ones
/// left out of the comparison. Fields the samples lack, or `symoff` without `sym`, are one
/// line and exit 2.
#[test]
fn script_field_lists_equal_perf_script() {
    if support::perf().is_none() {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    for file in ["callchain.perf.data", "plain.perf.data"] {
        for f in [
            "comm,tid",
            "comm,tid,time",
            "+srcline",
            "+period",
            "ip,sym",
            "comm,event",
            "+dso",
            "-ip",
            "tid,ip",
            "ip",
            "ip,dso",
            "comm,sym",
            "-symoff",
            "+pid",
            "pid,tid,ip,sym,srcline",
        ] {
            let args = ["script", "--symfs", "root", "-i", file, "-F", f];
            let mut perf = run_perf(&dir, &args);
            if f.contains("srcline") && file.starts_with("callchain") {
                // Drop the lines perf found for `[unknown]` frames (see above).
                let mut kept = String::new();
                let mut unknown = false;
                for l in perf.lines() {
                    if !(unknown && l.starts_with("  ")) {
                        kept.push_str(l);
                        kept.push('\n');
                    }
                    unknown = l.contains("[unknown]");
                }
                perf = kept;
            }
            let (hrec, _) = hrec_ok(&dir, &args);
            assert!(perf.lines().count() > 100, "{file} -F {f}: {perf}");
            assert!(
                hrec == perf,
                "{file} -F {f}: hrec script differs from perf script"
            );
        }
        for f in ["weight", "+ins_lat", "-sym", "cpu"] {
            let o = hrec_in(&dir, &["script", "-i", file, "-F", f]);
            let (out, err) = text(&o);
            assert_eq!(o.status.code(), Some(2), "-F {f}: {err}");
            assert!(out.is_empty() && err.lines().count() == 1, "-F {f}: {err}");
            let p = Command::new("perf")
                .args(["script", "-i", file, "-F", f])
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(!p.status.success(), "perf accepts -F {f}");
        }
    }
}

/// `report --header-only` gives the header lines perf gives for a perf.data (host, kernel,
/// perf version, CPUs, memory, command line, first and last sample); `--header` puts the same
/// block before the report or the samples, which are unchanged.
#[test]
fn header_lines_match_perf() {
    if support::perf().is_none() {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let keys = [
        "hostname",
        "os release",
        "perf version",
        "arch",
        "nrcpus online",
        "nrcpus avail",
        "cpudesc",
        "cpuid",
        "total memory",
        "cmdline",
        "time of first sample",
        "time of last sample",
        "sample duration",
    ];
    let fields = |s: &str| -> HashMap<String, String> {
        s.lines()
            .filter_map(|l| l.strip_prefix("# ")?.split_once(" : "))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect()
    };
    for file in ["callchain.perf.data", "plain.perf.data"] {
        let perf = fields(&run_perf(&dir, &["report", "-i", file, "--header-only"]));
        let (out, _) = hrec_ok(&dir, &["report", "-i", file, "--header-only"]);
        assert!(out.starts_with("# ========\n") && out.ends_with("# ========\n#\n"));
        let hrec = fields(&out);
        for k in keys {
            assert!(perf.contains_key(k), "{file}: perf has no {k:?}");
            assert_eq!(hrec.get(k), perf.get(k), "{file}: {k}");
        }
        for sub in ["report", "script"] {
            let (plain, _) = hrec_ok(&dir, &[sub, "--symfs", "root", "-i", file]);
            let (with, _) = hrec_ok(&dir, &[sub, "--symfs", "root", "-i", file, "--header"]);
            assert_eq!(with, format!("{out}{plain}"), "{sub} --header {file}");
        }
    }
    // hrec's own file: the block is `hrec info` framed, with the sample span perf prints.
    let (out, _) = hrec_ok(&dir, &["report", "-i", "callchain.hrec", "--header-only"]);
    let (info, _) = hrec_ok(&dir, &["info", "-i", "callchain.hrec"]);
    assert_eq!(out, format!("# ========\n{info}# ========\n#\n"));
    let (script, _) = hrec_ok(&dir, &["script", "-i", "callchain.hrec", "--ns"]);
    let times: Vec<&str> = script
        .lines()
        .filter(|l| l.contains("cpu-clock"))
        .filter_map(|l| {
            l.split_whitespace()
                .find(|w| w.ends_with(':') && w.contains('.'))
        })
        .collect();
    let usecs = |t: &str| t.trim_end_matches(':')[..t.len() - 4].to_string();
    let h = fields(&out);
    assert_eq!(h["time of first sample"], usecs(times[0]));
    assert_eq!(h["time of last sample"], usecs(times[times.len() - 1]));
}

/// `--time` in all of perf's forms (absolute ranges, several of them, percentages of the
/// recording as slices, dashes and lists) keeps the samples perf keeps: `script` prints the
/// same bytes and `report` the same rows on the same files.
#[test]
fn time_ranges_keep_the_samples_perf_keeps() {
    if support::perf().is_none() {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    for file in ["callchain.perf.data", "plain.perf.data"] {
        // Absolute ranges from the file's own sample times (perf script's -F time column).
        let times: Vec<String> = run_perf(&dir, &["script", "-i", file, "-F", "time"])
            .lines()
            .map(|l| l.trim().trim_end_matches(':').to_string())
            .filter(|l| !l.is_empty())
            .collect();
        assert!(times.len() > 100, "{file}: {} samples", times.len());
        let at = |i: usize| times[i].clone();
        let ranges = [
            format!("{},{}", at(10), at(60)),
            format!("{},", at(times.len() - 30)),
            format!(",{}", at(20)),
            format!("{},{} {},{}", at(5), at(15), at(40), at(80)),
            "10%/2".to_string(),
            "0%-25%,50%-75%".to_string(),
            "33%".to_string(),
            "90%-100%".to_string(),
        ];
        for t in &ranges {
            let args = ["script", "--symfs", "root", "-i", file, "--time", t];
            let perf = run_perf(&dir, &args);
            let (hrec, _) = hrec_ok(&dir, &args);
            assert!(
                perf.contains("cpu-clock"),
                "{file} --time {t}: perf kept nothing"
            );
            assert!(
                hrec == perf,
                "{file} --time {t}: hrec script differs from perf script"
            );
        }
        for t in ["10%/3", "20%-60%"] {
            let perf = perf_table(&dir, file, "sym", &["--time", t, "-n"], true);
            let (out, _) = hrec_ok(
                &dir,
                &["report", "--json", "--sort", "sym", "-i", file, "--time", t],
            );
            let j: Value = serde_json::from_str(&out).unwrap();
            let hrec = hrec_table(&j, "sym", true);
            assert_same(&perf, &hrec, 0.0, |_| true, &format!("{file} --time {t}"));
        }
    }
    // Bad ranges: one line, exit 2.
    for t in ["5%-1%", "3,2", "banana", "2,3 1,4", "10%/0"] {
        let o = hrec_in(&dir, &["report", "-i", "plain.perf.data", "--time", t]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "--time {t}: {err}");
        assert_eq!(err.lines().count(), 1, "--time {t}: {err}");
        assert!(err.contains("--time"), "{err}");
    }
}

/// Builds `three.c` as `dir/NAME` with a build-id of its own (so no earlier recording's copy
/// in perf's build-id cache has it), records it with perf (`-N`: without caching it), and
/// deletes it.
fn record_vanished_binary(dir: &Path, name: &str, cache: bool) -> String {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/annotate/three.c");
    let id: String = (0..20)
        .map(|i| {
            format!(
                "{:02x}",
                (std::process::id() as usize * 31 + i * 7 + name.len()) as u8
            )
        })
        .collect();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let id = format!("{}{nanos:08x}", &id[..32]);
    let o = Command::new("gcc")
        .args(["-O2", "-o", name])
        .arg(&src)
        .arg(format!("-Wl,--build-id=0x{id}"))
        .current_dir(dir)
        .output()
        .expect("gcc");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let data = format!("{name}.data");
    let mut opts = vec!["-e", "cpu-clock"];
    if !cache {
        opts.push("-N");
    }
    perf_record(dir, &data, &opts, &[&format!("./{name}"), "20000000"]);
    std::fs::remove_file(dir.join(name)).unwrap();
    data
}

/// Report's row filters as perf has them, on the same files: `--symbol-filter` (the part of a
/// name), `--tid`, `-S`, `-c`, `-d` hide rows (each row keeps its share); `-U` leaves samples of unknown
/// symbols out of everything, totals included. A binary deleted after `perf record` is still
/// named from perf's build-id cache, as perf names it.
#[test]
fn report_filters_and_the_build_id_cache_match_perf() {
    if support::perf().is_none() {
        return;
    }
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let tid = run_perf(
        &fixtures,
        &["script", "-i", "callchain.perf.data", "-F", "tid"],
    )
    .lines()
    .next()
    .unwrap()
    .trim()
    .to_string();
    // The first key is the thread (perf's `pid`: tid:comm) or the dso.
    let report = |dir: &Path, file: &str, extra: &[&str]| -> HashMap<String, f64> {
        let first = if extra.contains(&"--tid") {
            "pid"
        } else {
            "dso"
        };
        let sort = format!("{first},sym");
        let mut args = vec!["report", "--json", "--sort", &sort, "-i", file];
        if dir == fixtures {
            args.extend(["--symfs", "root"]);
        }
        args.extend_from_slice(extra);
        let (out, _) = hrec_ok(dir, &args);
        let j: Value = serde_json::from_str(&out).unwrap();
        let mut m = HashMap::new();
        for r in j["events"][0]["rows"].as_array().unwrap() {
            let key = format!(
                "{}  {}",
                r["key"][first].as_str().unwrap(),
                r["key"]["sym"].as_str().unwrap()
            );
            m.insert(key, r["overhead"].as_f64().unwrap());
        }
        m
    };
    // perf decides --tid (and --pid) per merged row, by the thread of the row's first sample,
    // so its rows are per-sample right only when the thread is a sort key: hrec filters every
    // sample, and is compared with perf sorted by thread.
    let perf = |dir: &Path, file: &str, extra: &[&str]| -> HashMap<String, f64> {
        let first = if extra.contains(&"--tid") {
            "pid"
        } else {
            "dso"
        };
        let mut extra = extra.to_vec();
        if dir == fixtures {
            extra.extend(["--symfs", "root"]);
        }
        let t = perf_table(dir, file, &format!("{first},sym"), &extra, false);
        t.into_iter()
            .map(|(k, v)| (k.split_whitespace().collect::<Vec<_>>().join("  "), v))
            .collect()
    };
    let hrec_keyed = |m: HashMap<String, f64>| -> HashMap<String, f64> {
        m.into_iter()
            .map(|(k, v)| (k.split_whitespace().collect::<Vec<_>>().join("  "), v))
            .collect()
    };
    // perf 6.1 applies --symbol-filter only in its TUI (--stdio prints every row); the rows
    // it selects there are those of the one symbol containing "ot", which -S names.
    for (perf_args, hrec_args) in [
        (&["-S", "hot"][..], &["--symbol-filter", "ot"][..]),
        (&["--tid", &tid], &["--tid", &tid]),
        (&["-S", "hot,warm"], &["-S", "hot,warm"]),
        (&["-c", "work"], &["-c", "work"]),
        (&["-d", "work"], &["-d", "work"]),
    ] {
        let p = perf(&fixtures, "callchain.perf.data", perf_args);
        let h = hrec_keyed(report(&fixtures, "callchain.perf.data", hrec_args));
        assert_same(&p, &h, ROUNDING, |_| true, &format!("{hrec_args:?}"));
    }
    let dir = tempfile::tempdir().unwrap();
    let gone = record_vanished_binary(dir.path(), "gone", false);
    let all = hrec_keyed(report(dir.path(), &gone, &[]));
    assert!(
        all.keys().any(|k| k.starts_with("gone  [.]  0x")),
        "the deleted binary's addresses stay unresolved: {all:?}"
    );
    let p = perf(dir.path(), &gone, &["-U"]);
    let h = hrec_keyed(report(dir.path(), &gone, &["-U"]));
    assert!(h.keys().all(|k| !k.contains("0x")), "{h:?}");
    assert_same(&p, &h, ROUNDING, |_| true, "-U");
    let cached = record_vanished_binary(dir.path(), "cached", true);
    let p = perf(dir.path(), &cached, &[]);
    let h = hrec_keyed(report(dir.path(), &cached, &[]));
    for f in ["mul_chain", "sum_array", "branchy"] {
        assert!(h.contains_key(&format!("cached  [.]  {f}")), "{f}: {h:?}");
    }
    assert_same(
        &p,
        &h,
        ROUNDING,
        |k| !k.starts_with("[kernel"),
        "build-id cache",
    );
}

/// `evlist` (plain, `-v`, `-F`, `-g`) and `buildid-list` print what perf prints on the same
/// files, a group of two events included.
#[test]
fn evlist_and_buildid_list_equal_perf() {
    if support::perf().is_none() {
        return;
    }
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let tmp = tempfile::tempdir().unwrap();
    let group = perf_record(
        tmp.path(),
        "group.data",
        &["-e", "{cpu-clock,task-clock}"],
        &["sleep", "0.05"],
    );
    let mut files = vec![
        fixtures.join("callchain.perf.data"),
        fixtures.join("plain.perf.data"),
    ];
    files.push(group);
    for f in &files {
        let f = f.to_str().unwrap();
        for flags in [&[][..], &["-v"], &["-F"], &["-g"], &["-v", "-F"]] {
            let mut args = vec!["evlist", "-i", f];
            args.extend(flags);
            let perf = run_perf(tmp.path(), &args);
            assert!(!perf.is_empty(), "{f} {flags:?}");
            assert_eq!(hrec_ok(tmp.path(), &args).0, perf, "{f} {flags:?}");
        }
    }
    for f in &files[..2] {
        let args = ["buildid-list", "-i", f.to_str().unwrap()];
        let perf = run_perf(tmp.path(), &args);
        assert!(perf.lines().count() >= 2, "{perf}");
        assert_eq!(hrec_ok(tmp.path(), &args).0, perf, "{f:?}");
    }
}

/// `report -T` prints the per-thread counts of `record -s` (READ records written as each
/// inherited thread exits) as perf prints them, on perf's file; hrec's own `record -s` gives a
/// table of the same shape whose threads are the recording's.
#[test]
fn per_thread_counts_of_record_s_match_perf() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let threads = support::example("threads");
    let threads = threads.to_str().unwrap();
    perf_record(
        dir.path(),
        "s.data",
        &["-s", "-e", "cpu-clock,task-clock"],
        &[threads, "0.3"],
    );
    let table = |s: &str| -> Vec<String> {
        s.lines()
            .skip_while(|l| !(l.starts_with('#') && l.contains("PID") && l.contains("TID")))
            .take_while(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect()
    };
    let perf = table(&run_perf(
        dir.path(),
        &["report", "-i", "s.data", "-T", "--stdio"],
    ));
    assert!(perf.len() >= 2, "perf -T printed no thread: {perf:?}");
    let hrec = table(&hrec_ok(dir.path(), &["report", "-i", "s.data", "-T"]).0);
    assert_eq!(hrec, perf);
    // Without -T no table; a file recorded without -s has no counts: the header alone, as
    // perf prints it.
    let plain = table(&hrec_ok(dir.path(), &["report", "-i", "s.data"]).0);
    assert!(plain.is_empty(), "{plain:?}");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let args = ["report", "-i", "plain.perf.data", "-T", "--stdio"];
    let perf = table(&run_perf(&fixtures, &args));
    assert_eq!(perf, ["# PID  TID"]);
    assert_eq!(table(&hrec_ok(&fixtures, &args).0), perf);
    let o = hrec_in(
        dir.path(),
        &["record", "-q", "-s", "-o", "s.hrec", "--", threads, "0.3"],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let own = table(&hrec_ok(dir.path(), &["report", "-i", "s.hrec", "-T"]).0);
    assert!(own.len() >= 2, "{own:?}");
    assert!(own[0].ends_with("TID  cpu-clock"), "{own:?}");
    let tids: std::collections::HashSet<String> =
        hrec_ok(dir.path(), &["script", "-i", "s.hrec", "-F", "tid"])
            .0
            .split_whitespace()
            .map(str::to_string)
            .collect();
    for row in &own[1..] {
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols.len(), 3, "{row}");
        assert!(
            tids.contains(cols[1]),
            "{row}: not a thread of the recording"
        );
        assert!(cols[2].parse::<u64>().unwrap() > 0, "{row}");
    }
}

/// `report -F` picks perf's output fields (overhead, overhead_children, sample, period, then
/// sort keys) and sorts by them as perf does: the same header names and the same rows with
/// the same numbers on the same files (rows of equal values may come in another order);
/// `N/A` for Children without call chains, as perf prints it.
#[test]
fn report_output_fields_match_perf() {
    if support::perf().is_none() {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let rows = |s: &str| -> (Vec<String>, Vec<Vec<String>>) {
        // The header is the line above perf's dotted rule.
        let lines: Vec<&str> = s.lines().collect();
        let head = lines
            .windows(2)
            .rev()
            .find(|w| w[1].starts_with("# .."))
            .map(|w| {
                let l = w[0];
                l.trim_start_matches('#')
                    .split("  ")
                    .map(str::trim)
                    .filter(|w| !w.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let body = s
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect();
        (head, body)
    };
    for file in ["plain.perf.data", "callchain.perf.data"] {
        for f in [
            "overhead,sym",
            "overhead,period,sample,comm,sym",
            "sample,dso",
            "period,overhead,dso,sym",
            "overhead,overhead_children,sym",
            "overhead_children,overhead,sym",
            // No sort key: perf sums every sample into one row.
            "overhead,sample",
            "period",
            "sample,overhead_children",
        ] {
            let args = [
                "report", "--symfs", "root", "-i", file, "-g", "none", "-F", f,
            ];
            let mut perf_args = args.to_vec();
            perf_args.push("--stdio");
            let (perf_head, mut perf) = rows(&run_perf(&dir, &perf_args));
            let (hrec_head, mut hrec) = rows(&hrec_ok(&dir, &args).0);
            assert_eq!(hrec_head, perf_head, "{file} -F {f}");
            assert!(!perf.is_empty(), "{file} -F {f}");
            // Sorted by the first field, largest first, on both sides.
            let first = |r: &Vec<String>| r[0].trim_end_matches('%').parse::<f64>().unwrap_or(0.0);
            assert!(
                hrec.windows(2).all(|w| first(&w[0]) >= first(&w[1])),
                "{hrec:?}"
            );
            perf.sort();
            hrec.sort();
            assert_eq!(hrec, perf, "{file} -F {f}");
        }
    }
}

/// The fixture's records: (offset, type, size) of each in the data section, and the header's
/// data offset and size.
fn data_records(b: &[u8]) -> (Vec<(usize, u32, usize)>, usize, usize) {
    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
    let (off, size) = (u64_at(40), u64_at(48));
    let mut v = Vec::new();
    let mut at = off;
    while at < off + size {
        let t = u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let n = usize::from(u16::from_le_bytes([b[at + 6], b[at + 7]]));
        v.push((at, t, n));
        at += n;
    }
    (v, off, size)
}

/// A zstd frame crafted by hand: `blocks` RLE blocks (a 3-byte block header and the byte) of
/// 128 KiB of `byte` each, so four bytes of the file inflate to 128 KiB.
fn rle_frame(byte: u8, blocks: usize) -> Vec<u8> {
    let mut f = 0xFD2F_B528u32.to_le_bytes().to_vec();
    // Frame header: no content size, no checksum, single byte window descriptor of 128 KiB.
    f.extend([0x00, 0x38]);
    for i in 0..blocks {
        let header = u32::from(i + 1 == blocks) | 1 << 1 | (128 << 10) << 3;
        f.extend(&header.to_le_bytes()[..3]);
        f.push(byte);
    }
    f
}

/// `file` (a `perf record -z` recording) with its first COMPRESSED record replaced by
/// `frame`: the data size and the feature table's offsets move with it. Returns the bytes and
/// the COMPRESSED record's offset.
fn with_first_compressed(file: &[u8], frame: &[u8]) -> (Vec<u8>, usize) {
    let (records, off, size) = data_records(file);
    let &(at, _, old) = records.iter().find(|r| r.1 == 81).unwrap();
    let mut rec = 81u32.to_le_bytes().to_vec();
    rec.extend([0, 0]);
    rec.extend(u16::try_from(8 + frame.len()).unwrap().to_le_bytes());
    rec.extend(frame);
    let delta = rec.len() as i64 - old as i64;
    let mut b = file[..at].to_vec();
    b.extend(&rec);
    b.extend(&file[at + old..]);
    let new_size = (size as i64 + delta) as u64;
    b[48..56].copy_from_slice(&new_size.to_le_bytes());
    let features: u32 = (0..4)
        .map(|w| u64::from_le_bytes(b[72 + 8 * w..80 + 8 * w].try_into().unwrap()).count_ones())
        .sum();
    let table = off + new_size as usize;
    for k in 0..features as usize {
        let e = table + 16 * k;
        let o = u64::from_le_bytes(b[e..e + 8].try_into().unwrap());
        b[e..e + 8].copy_from_slice(&((o as i64 + delta) as u64).to_le_bytes());
    }
    (b, at)
}

/// Runs `hrec ARGS` in `dir` and returns its output with its peak resident memory in KiB:
/// GNU time's `%M` (the child's `ru_maxrss` from wait4) when `/usr/bin/time` is installed,
/// else the highest `VmHWM` of `/proc/<pid>/status` seen while it ran (which can miss growth
/// in its last milliseconds).
fn hrec_peak_kib(dir: &Path, args: &[&str]) -> (std::process::Output, u64) {
    let time = Path::new("/usr/bin/time");
    if time.exists() {
        let report = dir.join("maxrss");
        let o = Command::new(time)
            .arg("-o")
            .arg(&report)
            .args(["-f", "%M", env!("CARGO_BIN_EXE_hrec")])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run /usr/bin/time hrec");
        let kib = std::fs::read_to_string(&report).unwrap();
        let kib = kib.lines().last().unwrap().trim().parse().unwrap();
        return (o, kib);
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_hrec"))
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    // The pipes are drained on other threads so the child never blocks on them.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).unwrap();
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).unwrap();
        v
    });
    let mut peak = 0;
    loop {
        if let Ok(s) = std::fs::read_to_string(&status)
            && let Some(l) = s.lines().find(|l| l.starts_with("VmHWM:"))
        {
            let kib: u64 = l.split_whitespace().nth(1).unwrap().parse().unwrap();
            peak = peak.max(kib);
        }
        if let Some(st) = child.try_wait().unwrap() {
            let o = std::process::Output {
                status: st,
                stdout: out.join().unwrap(),
                stderr: err.join().unwrap(),
            };
            return (o, peak);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// A `-z` recording whose first COMPRESSED record is a 64 KiB zstd frame inflating to 2 GiB
/// (of zeros, and of 0x08 bytes, which parse as records of 2056 bytes): info, report and
/// script each say so in one line naming the record's offset, exit as for other damage, and
/// stay under 256 MB. (hrec through linux-perf-data took 2.1 GB and 19 s; perf 6.1 stops at
/// its buffer of mmap_len bytes with "failed to decompress (B): ... Destination buffer is
/// too small".)
#[test]
fn a_zstd_bomb_in_a_compressed_record_is_one_line_in_bounded_memory() {
    const LIMIT_KIB: u64 = 256 * 1024;
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let z = std::fs::read(fixtures.join("callchain-z.perf.data")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // As many blocks as one COMPRESSED record holds: 65,527 bytes of payload.
    let blocks = (65527 - 6) / 4;
    for byte in [0u8, 8] {
        let frame = rle_frame(byte, blocks);
        assert!(
            frame.len() > 65000 && frame.len() <= 65527,
            "{}",
            frame.len()
        );
        // The zstd crate agrees that it inflates to 2 GiB (streamed, not held).
        let inflated = std::io::copy(
            &mut zstd::stream::read::Decoder::new(&frame[..]).unwrap(),
            &mut std::io::sink(),
        )
        .unwrap();
        assert_eq!(inflated, blocks as u64 * (128 << 10));
        assert!(inflated > (2 << 30) - (16 << 20), "{inflated}");
        let (bomb, at) = with_first_compressed(&z, &frame);
        std::fs::write(dir.path().join("bomb.data"), &bomb).unwrap();
        for cmd in ["info", "report", "script"] {
            let (o, kib) = hrec_peak_kib(dir.path(), &[cmd, "-i", "bomb.data"]);
            let (_, err) = text(&o);
            assert!(kib < LIMIT_KIB, "{cmd} {byte}: peak {kib} KiB");
            let lines: Vec<&str> = err.lines().collect();
            assert_eq!(lines.len(), 1, "{cmd} {byte}: {err}");
            let why = if byte == 0 {
                "has size 0: the stream is damaged"
            } else {
                "inflates past 1048576 bytes (perf's buffer for one is mmap_len, 528384 bytes)"
            };
            assert!(
                lines[0].contains(why)
                    && lines[0].contains(&format!("COMPRESSED record at offset {at}"))
                    && lines[0].contains("the 1 COMPRESSED record after it"),
                "{cmd} {byte}: {err}"
            );
            // As other damaged files: the whole records before it with a warning, or
            // nothing readable and one error.
            match o.status.code() {
                Some(0) => assert!(lines[0].starts_with("hrec: warning: "), "{err}"),
                Some(1) => assert!(lines[0].starts_with("hrec: error: "), "{err}"),
                other => panic!("{cmd} {byte}: exit {other:?}: {err}"),
            }
        }
    }
}

/// A data size damaged so that the feature table lands on the records: one warning for all
/// the feature sections lost, then the records' own message, not a line per section.
#[test]
fn a_damaged_data_size_is_one_feature_warning() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let mut b = std::fs::read(fixtures.join("callchain.perf.data")).unwrap();
    let (records, _, size) = data_records(&b);
    let features: u32 = (0..4)
        .map(|w| u64::from_le_bytes(b[72 + 8 * w..80 + 8 * w].try_into().unwrap()).count_ones())
        .sum();
    assert!(features >= 6, "{features}");
    // The data ends 12 bytes into the tenth record from the end.
    let (at, _, _) = records[records.len() - 10];
    let cut = size - (records.last().unwrap().0 + records.last().unwrap().2 - at) + 12;
    b[48..56].copy_from_slice(&(cut as u64).to_le_bytes());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.data"), &b).unwrap();
    for cmd in ["report", "script", "info"] {
        let o = hrec_in(dir.path(), &[cmd, "-i", "bad.data"]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{cmd}: {err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 2, "{cmd}: {err}");
        assert!(
            lines[0].contains(&format!(
                "is cut short (the record at offset {at} is cut short"
            )),
            "{cmd}: {err}"
        );
        assert!(
            lines[1].contains(&format!("{features} feature sections unreadable (")),
            "{cmd}: {err}"
        );
    }
}

/// `perf record -z -o - | cat > f`: a pipe-mode stream of COMPRESSED records (its attrs and
/// features as records in front), read by `hrec script` as `perf script` reads the same file,
/// byte for byte. With `--call-graph dwarf` each sample carries 8 KiB of stack, so perf
/// writes over a hundred COMPRESSED records with records cut across them.
#[test]
fn compressed_pipe_mode_script_equals_perf_script() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = hotspots();
    for (name, call_graph, fields) in [
        ("fp.data", "fp", &["script"][..]),
        (
            "dwarf.data",
            "dwarf",
            &["script", "-G", "-F", "comm,tid,time,period,ip,sym"],
        ),
    ] {
        let path = dir.path().join(name);
        let out = std::fs::File::create(&path).unwrap();
        let st = Command::new("sh")
            .args([
                "-c",
                "perf record -q -z -F 4000 --call-graph \"$1\" -e cpu-clock:u -o - -- \"$2\" 1 | cat",
                "sh",
                call_graph,
                &bin,
            ])
            .current_dir(dir.path())
            .stdout(out)
            .status()
            .unwrap();
        assert!(st.success());
        let dump = run_perf(dir.path(), &["report", "-D", "-i", name]);
        // perf's statistics at the end of the dump: `COMPRESSED events: N (...)`.
        let compressed: usize = dump
            .lines()
            .find_map(|l| l.trim().strip_prefix("COMPRESSED events:"))
            .and_then(|n| n.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        assert!(compressed >= 1, "{name}: no COMPRESSED records");
        let mut args = fields.to_vec();
        args.extend(["-i", name]);
        let perf = run_perf(dir.path(), &args);
        let (hrec, err) = hrec_ok(dir.path(), &args);
        assert!(perf.lines().count() > 500, "{name}: {perf}");
        assert!(err.is_empty(), "{name}: {err}");
        // A frame-pointer chain through code built without frame pointers can hold a stray
        // "return address" that is a function's first byte: perf names that function
        // (`f+0x0`), hrec looks return addresses up a byte earlier (README). Those lines may
        // differ in the name only; every other byte is perf's. So may a PLT stub's
        // (`plt_named_as_init`).
        assert_eq!(hrec.lines().count(), perf.lines().count(), "{name}");
        for (h, p) in hrec.lines().zip(perf.lines()) {
            let addr = |l: &str| l.split_whitespace().next().map(str::to_string);
            assert!(
                h == p
                    || (p.starts_with('\t') && p.contains("+0x0 (") && addr(h) == addr(p))
                    || plt_named_as_init(h, p),
                "{name}: hrec script differs from perf script:\nhrec {h}\nperf {p}"
            );
        }
        let (info, _) = hrec_ok(dir.path(), &["info", "-i", name]);
        assert!(
            info.contains("perf.data (pipe mode)") && info.contains("# compressed : zstd"),
            "{info}"
        );
        if call_graph == "dwarf" {
            assert!(compressed > 20, "{name}: {compressed} COMPRESSED records");
        }
    }
}

/// A perf.data without GROUP_DESC (older perf, a rewritten file) gets its groups from the
/// events its samples read (leader first), so a sampling-read group reads as with the
/// feature; a single-event file whose attrs list no ids still maps every sample to its event
/// (perf 6.1 fails on it: `failed to process type: 69`).
#[test]
fn groups_without_group_desc_and_events_without_ids() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = hotspots();
    perf_record(
        dir.path(),
        "g.data",
        &["-e", "{cpu-clock,task-clock}:S"],
        &[&bin, "1"],
    );
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    // Drop GROUP_DESC (feature 17): its bit in the header and its entry in the section table.
    let mut b = std::fs::read(dir.path().join("g.data")).unwrap();
    let table = (u64_at(&b, 40) + u64_at(&b, 48)) as usize;
    let bits: Vec<usize> = (0..256)
        .filter(|&i| u64_at(&b, 72 + 8 * (i / 64)) >> (i % 64) & 1 == 1)
        .collect();
    let k = bits
        .iter()
        .position(|&f| f == 17)
        .expect("perf wrote GROUP_DESC");
    let entries: Vec<u8> = b[table..table + 16 * bits.len()].to_vec();
    let mut kept = entries[..16 * k].to_vec();
    kept.extend_from_slice(&entries[16 * (k + 1)..]);
    b[table..table + kept.len()].copy_from_slice(&kept);
    b[72 + 2] &= !(1 << 1); // bit 17: byte 2 of the first word, bit 1
    std::fs::write(dir.path().join("nodesc.data"), &b).unwrap();
    let leaders = |f: &str| -> Vec<String> {
        hrec_ok(dir.path(), &["info", "-i", f])
            .0
            .lines()
            .filter(|l| l.starts_with("# event "))
            .map(|l| {
                l.split(", ")
                    .find(|w| w.starts_with("leader = "))
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(leaders("g.data"), ["leader = 0", "leader = 0"]);
    assert_eq!(leaders("nodesc.data"), leaders("g.data"));
    let args = |f: &'static str| ["script", "-i", f, "-F", "+read"];
    let with = hrec_ok(dir.path(), &args("g.data")).0;
    assert!(with.contains("{cpu-clock "), "{with}");
    assert_eq!(hrec_ok(dir.path(), &args("nodesc.data")).0, with);
    // No ids in the attr section of a single-event file.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let mut b = std::fs::read(fixtures.join("plain.perf.data")).unwrap();
    let (attr_size, attrs, len) = (
        u64_at(&b, 16) as usize,
        u64_at(&b, 24) as usize,
        u64_at(&b, 32) as usize,
    );
    for e in (attrs..attrs + len).step_by(attr_size) {
        b[e + attr_size - 16..e + attr_size].fill(0);
    }
    let noids = dir.path().join("noids.data");
    std::fs::write(&noids, &b).unwrap();
    let script = |f: &str| hrec_ok(&fixtures, &["script", "--symfs", "root", "-i", f]).0;
    let plain = script("plain.perf.data");
    assert!(plain.lines().count() > 100);
    assert_eq!(script(noids.to_str().unwrap()), plain);
}
