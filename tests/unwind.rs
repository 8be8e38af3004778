//! Call graphs of programs without frame pointers (issue 14): `--call-graph dwarf` stacks of
//! C (`-O2 -fomit-frame-pointer`: a six-deep chain, recursion, a call through a function
//! pointer and through a shared library; a signal handler), C++, Rust and a pure-Python loop.
//!
//! * On perf's own perf.data, `hrec script` prints the stacks `perf script` prints, for at
//!   least 98% of the samples.
//! * hrec's own recording (unwound while recording) reaches the process root for at least
//!   95% of the share of samples for which perf's does, on the same workload.

mod support;

use std::path::Path;

use support::stacks::{
    Stack, build, dwarf_stacks, reaches_root, run, run_env, same_dwarf_stacks_as_perf,
    script_stacks,
};

const HREC: &str = env!("CARGO_BIN_EXE_hrec");

/// Records `cmd` with perf and with hrec (`--call-graph dwarf`, cpu-clock at 2 kHz) in `dir`
/// as `<name>.perf.data` and `<name>.hrec`; checks hrec's stacks of perf's file against
/// perf's, and the share of hrec's own stacks that reach the root against perf's share.
/// Returns perf's stacks.
fn compare(dir: &Path, name: &str, cmd: &[&str]) -> Vec<Stack> {
    compare_env(dir, name, cmd, &[])
}

/// [`compare`] with variables in the workload's environment: perf's workload gets them from
/// perf's own environment, hrec's through `env` (perf 6.1's dwarf unwinder loses most stacks
/// of a process that `env` execs, in 3 of 4 runs here; hrec's does not).
fn compare_env(dir: &Path, name: &str, cmd: &[&str], env: &[(&str, &str)]) -> Vec<Stack> {
    let perf_file = format!("{name}.perf.data");
    let hrec_file = format!("{name}.hrec");
    let mut args = vec![
        "record",
        "-q",
        "-F",
        "2000",
        "-e",
        "cpu-clock",
        "--call-graph",
        "dwarf",
        "-o",
    ];
    args.push(&perf_file);
    args.push("--");
    args.extend_from_slice(cmd);
    run_env(dir, "perf", &args, env);
    same_dwarf_stacks_as_perf(dir, &perf_file);
    let (perf, _) = dwarf_stacks(dir, &perf_file);

    let mut args = vec![
        "record",
        "-F",
        "2000",
        "-e",
        "cpu-clock",
        "--call-graph",
        "dwarf",
        "-o",
    ];
    args.push(&hrec_file);
    args.push("--");
    let assignments: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if !env.is_empty() {
        args.push("env");
        args.extend(assignments.iter().map(String::as_str));
    }
    args.extend_from_slice(cmd);
    run(dir, HREC, &args);
    let own = script_stacks(&run(
        dir,
        HREC,
        &["script", "--inline", "-F", "ip,sym", "-i", &hrec_file],
    ));
    let share =
        |s: &[Stack]| s.iter().filter(|s| reaches_root(s)).count() as f64 / s.len().max(1) as f64;
    let (perf_share, own_share) = (share(&perf), share(&own));
    assert!(own.len() > 100, "{name}: {} samples", own.len());
    assert!(
        own_share >= 0.95 * perf_share && own_share > 0.5,
        "{name}: {:.1}% of hrec's own stacks reach the root, {:.1}% of perf's; first that does not:\n{:?}",
        own_share * 100.0,
        perf_share * 100.0,
        own.iter().find(|s| !reaches_root(s))
    );
    perf
}

/// Builds `unwind/chain.c` and its shared library `unwind/hop.c` into `dir`, both
/// `-O2 -fomit-frame-pointer` plus `extra`; `None` without a compiler.
fn build_chain(dir: &Path, extra: &[&str]) -> Option<std::path::PathBuf> {
    let nofp = "-fomit-frame-pointer";
    let mut lib = vec![nofp, "-shared", "-fPIC"];
    lib.extend_from_slice(extra);
    build(dir, "unwind/hop.c", &lib)?;
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let libdir = format!("-L{}", dir.display());
    let mut flags = vec![nofp];
    flags.extend_from_slice(extra);
    flags.extend([libdir.as_str(), "-lhop", rpath.as_str()]);
    build(dir, "unwind/chain.c", &flags)
}

#[test]
fn c_without_frame_pointers_through_a_library_and_a_function_pointer() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(chain) = build_chain(d, &[]) else {
        return;
    };
    let perf = compare(d, "c", &[chain.to_str().unwrap(), "150000"]);
    // The fixture does what it says: most samples are in the leaf under the whole chain.
    let expected = [
        "leaf",
        "descend",
        "descend",
        "descend",
        "descend",
        "level5",
        "level4",
        "hop_apply",
        "level3",
        "level2",
        "level1",
        "main",
    ];
    let full = perf
        .iter()
        .filter(|s| {
            let names: Vec<&str> = s.iter().map(|(_, n)| n.as_str()).collect();
            names.windows(expected.len()).any(|w| w == expected)
        })
        .count();
    assert!(full * 10 > perf.len() * 8, "{full} of {}", perf.len());
    same_report_trees_as_perf(d, "c.perf.data");
    // `hrec info` gives the stack copies' size and how many were full, for both files.
    let info = run(d, HREC, &["info", "-i", "c.perf.data"]);
    let line = info
        .lines()
        .find(|l| l.starts_with("# call graph : dwarf, user stack copies of 8192 bytes; "))
        .unwrap_or_else(|| panic!("{info}"));
    assert!(line.contains(" filled all 8192 bytes"), "{line}");
    let info = run(d, HREC, &["info", "-i", "c.hrec"]);
    let line = info
        .lines()
        .find(|l| l.starts_with("# call graph : dwarf, unwound while recording; user stack copies of 8192 bytes (not kept);"))
        .unwrap_or_else(|| panic!("{info}"));
    assert!(line.contains("stacks reached the process root"), "{line}");
}

/// The rows of a `report --stdio` (perf's or hrec's) with the call-graph lines under each:
/// row cells joined by one space (hrec's Samples column left out), then the tree lines.
fn report_rows(out: &str, hrec: bool) -> Vec<(String, Vec<String>)> {
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    for line in out.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        // A row: percentages, then the keys with the symbol's `[.]`/`[k]` (a flat graph's
        // value lines are a percentage alone).
        let first = line.split_whitespace().next().unwrap_or("");
        let is_row = first.ends_with('%')
            && first[..first.len() - 1].parse::<f64>().is_ok()
            && (line.contains(" [.] ") || line.contains(" [k] "));
        if is_row {
            let cells: Vec<&str> = line
                .split_whitespace()
                .enumerate()
                .filter(|&(i, c)| !(hrec && i <= 2 && c.bytes().all(|b| b.is_ascii_digit())))
                .map(|(_, c)| c)
                .collect();
            rows.push((cells.join(" "), Vec::new()));
        } else if let Some(last) = rows.last_mut() {
            // perf 6.1 prints its fractal remainder with an uninitialised `inlined` flag.
            let line = if hrec {
                line.trim_end().to_string()
            } else {
                line.trim_end().replace("[...] (inlined)", "[...]")
            };
            last.1.push(line);
        }
    }
    rows
}

/// Whether two trees have the same lines once the graph's lines are set aside: the same
/// nodes with the same values, siblings of equal weight in another order. perf orders such
/// siblings from different objects by where its objects sit in its memory.
fn same_but_tie_order(a: &[String], b: &[String]) -> bool {
    let norm = |t: &[String]| {
        let mut v: Vec<String> = t
            .iter()
            .map(|l| l.trim_start_matches([' ', '|', '-']).to_string())
            .filter(|l| !l.is_empty())
            .collect();
        v.sort();
        v
    };
    norm(a) == norm(b)
}

/// `hrec report` against `perf report --stdio` on the same perf.data, in perf's call-graph
/// modes: the same rows with the same trees, line for line (siblings of equal weight may
/// come in another order), but where the two unwinders disagree ([`Disagree`]).
fn same_report_trees_as_perf(dir: &Path, name: &str) {
    let disagree = Disagree::on(dir, name);
    for args in [
        &[][..],
        &["--no-children"],
        &["-g", "fractal"],
        &["-g", "callee"],
        &["-g", "flat", "--no-children"],
        &["-g", "folded,0.1"],
        &["-g", "graph,0.05,caller,function,count", "--no-children"],
        &["-G", "--no-children", "--max-stack", "6"],
    ] {
        same_trees_in(dir, name, args, &disagree);
    }
}

/// The samples of a perf.data whose unwound stacks `perf script` and `hrec script` print
/// differently (mostly where perf's unwinder gives up early and hrec's goes on, as through
/// `exit`'s handlers): a report row of a function on such a stack may move by their share
/// and its tree may differ; a row of any other function holds none of them and must be
/// perf's exactly.
struct Disagree {
    /// Samples whose stacks differ.
    samples: usize,
    /// Samples in all.
    of: usize,
    /// The functions on either tool's stack of them (`?` for an unresolved frame).
    functions: std::collections::HashSet<String>,
}

impl Disagree {
    fn on(dir: &Path, name: &str) -> Disagree {
        let (perf, hrec) = dwarf_stacks(dir, name);
        assert_eq!(perf.len(), hrec.len(), "{name}: samples");
        let mut d = Disagree {
            samples: 0,
            of: perf.len(),
            functions: Default::default(),
        };
        let mut differ = Vec::new();
        for (i, (p, h)) in perf.iter().zip(&hrec).enumerate() {
            if p != h {
                d.samples += 1;
                differ.push(i);
                d.functions
                    .extend(p.iter().chain(h).map(|(_, sym)| sym.clone()));
            }
        }
        // The same samples' frames by their symbol-table names, as `--no-inline` report rows
        // name them (`__libc_start_main@@GLIBC_2.34`, not `__libc_start_main_impl`).
        if !differ.is_empty() {
            let (perf, hrec) = support::stacks::dwarf_stacks_with(dir, name, &["--no-inline"]);
            for &i in &differ {
                for s in [perf.get(i), hrec.get(i)].into_iter().flatten() {
                    d.functions.extend(s.iter().map(|(_, sym)| sym.clone()));
                }
            }
        }
        // same_dwarf_stacks_as_perf holds these to 2% too.
        assert!(
            d.samples * 50 <= d.of,
            "{name}: {} of {} stacks differ from perf's",
            d.samples,
            d.of
        );
        d
    }

    /// Whether a row's function (its last key) is on a stack the tools unwind differently.
    fn touches(&self, key: &str) -> bool {
        let sym = key.split_once(" [.] ").or_else(|| key.split_once(" [k] "));
        // A report names an inlined function's row `name (inlined)`; script the function.
        let sym = sym.map(|(k, s)| (k, s.strip_suffix(" (inlined)").unwrap_or(s)));
        // perf's report names an address past a symbol's end `name+0x7`; `script -F sym`
        // names it `name`.
        let sym = sym.map(|(k, s)| match s.rsplit_once("+0x") {
            Some((name, off)) if off.chars().all(|c| c.is_ascii_hexdigit()) => (k, name),
            _ => (k, s),
        });
        sym.is_some_and(|(_, sym)| {
            self.functions.contains(sym) || (sym.starts_with("0x") && self.functions.contains("?"))
        })
    }

    /// The most a row's percentages may move: the differing samples' share, in points, and
    /// a rounding step.
    fn points(&self) -> f64 {
        self.samples as f64 * 100.0 / self.of.max(1) as f64 + 0.011
    }
}

/// A row's leading percentages and the rest of it (its keys).
fn split_row(row: &str) -> (Vec<f64>, String) {
    let mut pct = Vec::new();
    let mut rest = Vec::new();
    for c in row.split_whitespace() {
        match c.strip_suffix('%').and_then(|v| v.parse::<f64>().ok()) {
            Some(v) if rest.is_empty() => pct.push(v),
            _ => rest.push(c),
        }
    }
    (pct, rest.join(" "))
}

/// [`same_report_trees_as_perf`] in one mode. Every row of perf's is hrec's with the same
/// tree; a row of a function on a stack the two unwind differently ([`Disagree`]) may
/// have moved by those samples' share, with its tree, or be left out when that share is
/// all it had.
fn same_trees_in(dir: &Path, name: &str, args: &[&str], disagree: &Disagree) {
    let mut perf_args = vec!["report", "--stdio", "-i", name];
    perf_args.extend_from_slice(args);
    let mut hrec_args = vec!["report", "-i", name];
    hrec_args.extend_from_slice(args);
    let perf = report_rows(&run(dir, "perf", &perf_args), false);
    let hrec = report_rows(&run(dir, HREC, &hrec_args), true);
    assert!(
        !perf.is_empty() && perf.iter().any(|r| !r.1.is_empty()),
        "{args:?}: {perf:?}"
    );
    let points = disagree.points();
    let mut differ = Vec::new();
    for (row, tree) in &perf {
        if hrec
            .iter()
            .any(|h| &h.0 == row && (&h.1 == tree || same_but_tie_order(&h.1, tree)))
        {
            continue;
        }
        let (pct, key) = split_row(row);
        let moved_by_disagreement = disagree.touches(&key)
            && match hrec.iter().map(|h| split_row(&h.0)).find(|h| h.1 == key) {
                Some((own, _)) => {
                    own.len() == pct.len()
                        && own.iter().zip(&pct).all(|(a, b)| (a - b).abs() <= points)
                }
                None => pct.iter().all(|p| *p <= points),
            };
        if !moved_by_disagreement {
            differ.push((row, tree));
        }
    }
    assert!(
        differ.is_empty(),
        "{args:?}: {} of {} rows differ ({} of {} samples unwound differently, {points:.2} \
         points); first:\nperf {:#?}\nhrec {:#?}",
        differ.len(),
        perf.len(),
        disagree.samples,
        disagree.of,
        differ[0],
        hrec.iter()
            .find(|h| split_row(&h.0).1 == split_row(differ[0].0).1)
    );
}

/// `--no-inline` leaves the functions inlined at each address out of unwound chains, as
/// perf's does, and the trees are perf's in both settings: on a Rust release binary whose
/// `mix` is inlined into `hot_multiply`.
#[test]
fn no_inline_drops_inlined_entries_as_perf_does() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bin = support::release_example("hotspots");
    run(
        d,
        "perf",
        &[
            "record",
            "-q",
            "--call-graph",
            "dwarf",
            "-F",
            "2000",
            "-o",
            "hs.data",
            "--",
            bin.to_str().unwrap(),
            "1",
        ],
    );
    let disagree = Disagree::on(d, "hs.data");
    for args in [
        &["--no-children"][..],
        &["--no-inline"],
        &["--no-inline", "--no-children", "-g", "caller"],
    ] {
        same_trees_in(d, "hs.data", args, &disagree);
        let mut a = vec!["report", "-i", "hs.data"];
        a.extend_from_slice(args);
        let inlined = run(d, HREC, &a).matches("(inlined)").count();
        assert_eq!(inlined == 0, args.contains(&"--no-inline"), "{args:?}");
    }
}

/// Samples in a signal handler unwind through the signal frame into the interrupted code.
#[test]
fn through_a_signal_frame() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(prog) = build(d, "unwind/signal.c", &["-fomit-frame-pointer"]) else {
        return;
    };
    let perf = compare(d, "signal", &[prog.to_str().unwrap(), "3000"]);
    let (_, hrec) = dwarf_stacks(d, "signal.perf.data");
    let through = |stacks: &[Stack]| {
        stacks
            .iter()
            .filter(|s| {
                let names: Vec<&str> = s.iter().map(|(_, n)| n.as_str()).collect();
                let handler = names.iter().position(|n| *n == "on_signal");
                let main = names.iter().position(|n| *n == "main");
                matches!((handler, main), (Some(h), Some(m)) if h < m)
            })
            .count()
    };
    // The handler runs a third of the time, and its stacks reach main through the signal
    // frame (into raise, in libc), as perf's do.
    assert!(
        through(&perf) * 5 > perf.len(),
        "{} of {}",
        through(&perf),
        perf.len()
    );
    assert!(
        through(&hrec) >= through(&perf),
        "{} < {}",
        through(&hrec),
        through(&perf)
    );
}

/// Samples taken while the dynamic linker binds a call (`LD_BIND_NOT=1`: every call) unwind
/// through glibc's `_dl_runtime_resolve_xsavec`, whose CFA is `rbx + 32`, to the function
/// that made the call, as perf's do: framehop alone skipped it for `main`.
#[test]
fn through_the_lazy_binding_trampoline() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let flags = ["-fomit-frame-pointer", "-fno-builtin", "-Wl,-z,lazy"];
    let Some(prog) = build(d, "unwind/lazy.c", &flags) else {
        return;
    };
    let prog = prog.to_str().unwrap();
    let perf = compare_env(d, "lazy", &[prog, "600000"], &[("LD_BIND_NOT", "1")]);
    let (_, hrec) = dwarf_stacks(d, "lazy.perf.data");
    let own = script_stacks(&run(
        d,
        HREC,
        &["script", "--inline", "-F", "ip,sym", "-i", "lazy.hrec"],
    ));
    // Of the stacks through the trampoline, those whose next frame is `work`.
    let through = |stacks: &[Stack]| {
        let mut callers = (0, 0);
        for s in stacks {
            let names: Vec<&str> = s.iter().map(|(_, n)| n.as_str()).collect();
            if let Some(at) = names
                .iter()
                .position(|n| n.starts_with("_dl_runtime_resolve"))
            {
                callers.0 += 1;
                callers.1 += usize::from(names.get(at + 1) == Some(&"work"));
            }
        }
        callers
    };
    let (perf_all, perf_work) = through(&perf);
    assert!(
        perf_all * 4 > perf.len() && perf_work * 10 >= perf_all * 9,
        "perf: {perf_work} of {perf_all} stacks through the trampoline go on to work, of {}",
        perf.len()
    );
    let (all, work) = through(&hrec);
    assert_eq!(all, perf_all, "perf's file: stacks through the trampoline");
    assert!(
        work >= perf_work,
        "perf's file: {work} of {all} stacks through the trampoline go on to work, perf {perf_work}"
    );
    let (all, work) = through(&own);
    assert!(
        all * 4 > own.len() && work * 10 >= all * 9,
        "hrec's recording: {work} of {all} stacks through the trampoline go on to work"
    );
}

/// Code built without `.eh_frame` rules (`-fno-asynchronous-unwind-tables`: only
/// `.debug_frame`) unwinds from `.debug_frame`, in perf's file and in hrec's own recording
/// (perf's own unwinder stops at the first frame there).
#[test]
fn from_debug_frame_when_eh_frame_has_no_rule() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Program and library with `.debug_frame` only (the startup files keep `.eh_frame`).
    let Some(chain) = build_chain(
        d,
        &["-fno-asynchronous-unwind-tables", "-fno-unwind-tables"],
    ) else {
        return;
    };
    let chain = chain.to_str().unwrap();
    let record = [
        "record",
        "-q",
        "-F",
        "2000",
        "-e",
        "cpu-clock",
        "--call-graph",
        "dwarf",
    ];
    let mut args = record.to_vec();
    args.extend(["-o", "df.perf.data", "--", chain, "100000"]);
    run(d, "perf", &args);
    let mut args = record[..1].to_vec();
    args.extend(&record[2..]);
    args.extend(["-o", "df.hrec", "--", chain, "100000"]);
    run(d, HREC, &args);
    let rooted = |file: &str| {
        let stacks = script_stacks(&run(d, HREC, &["script", "-F", "ip,sym", "-i", file]));
        let rooted = stacks.iter().filter(|s| reaches_root(s)).count();
        (rooted, stacks.len())
    };
    let mostly = |(rooted, all): (usize, usize)| all > 100 && rooted * 10 >= all * 9;
    for file in ["df.perf.data", "df.hrec"] {
        let (r, all) = rooted(file);
        assert!(
            mostly((r, all)),
            "{file}: {r} of {all} stacks reach the root"
        );
    }

    // Stripped as distributions ship them: `.debug_frame` moves to a separate debug file,
    // found by `.gnu_debuglink` next to the binary.
    for f in ["chain", "libhop.so"] {
        let debug = format!("{f}.debug");
        let link = format!("--add-gnu-debuglink={debug}");
        let stripped = format!("{f}.stripped");
        run(d, "objcopy", &["--only-keep-debug", f, &debug]);
        run(d, "objcopy", &["--strip-debug", &link, f, &stripped]);
        std::fs::rename(d.join(&stripped), d.join(f)).unwrap();
    }
    let mut args = record[..1].to_vec();
    args.extend(&record[2..]);
    args.extend(["-o", "stripped.hrec", "--", chain, "100000"]);
    run(d, HREC, &args);
    for file in ["df.perf.data", "stripped.hrec"] {
        let (r, all) = rooted(file);
        assert!(
            mostly((r, all)),
            "{file}, stripped binaries: {r} of {all} stacks reach the root"
        );
    }
    // Without the debug files the rules are gone: the walks end early.
    for f in ["chain", "libhop.so"] {
        std::fs::remove_file(d.join(format!("{f}.debug"))).unwrap();
    }
    let (r, all) = rooted("df.perf.data");
    assert!(
        r * 2 < all,
        "{r} of {all} stacks reach the root without any .debug_frame"
    );
}

/// JIT code (anonymous executable memory named in `/tmp/perf-PID.map`): its frames are named
/// from the map and the walk stops there, as perf's does, in perf's file and in hrec's own
/// recording; the report says where the walks ended.
#[test]
fn stops_in_jit_code_named_from_the_perf_map() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(prog) = build(d, "unwind/jit.c", &["-fomit-frame-pointer"]) else {
        return;
    };
    let prog = prog.to_str().unwrap();
    let record = ["-F", "2000", "-e", "cpu-clock", "--call-graph", "dwarf"];
    let mut args = vec!["record", "-q"];
    args.extend(record);
    args.extend(["-o", "jit.perf.data", "--", prog, "1000"]);
    run(d, "perf", &args);
    let mut args = vec!["record"];
    args.extend(record);
    args.extend(["-o", "jit.hrec", "--", prog, "1000"]);
    run(d, HREC, &args);
    // The programs leave their maps behind, as JITs do, for the reports; removed at the end.
    let pids: Vec<String> = ["jit.perf.data", "jit.hrec"]
        .iter()
        .filter_map(|f| {
            let out = run(d, HREC, &["script", "-F", "pid", "-i", f]);
            out.lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()))
                .map(str::to_string)
        })
        .collect();
    let jitted = |stacks: &[Stack]| {
        stacks
            .iter()
            .filter(|s| s.first().is_some_and(|f| f.1 == "jitted_loop"))
            .count()
    };
    let (perf, hrec) = dwarf_stacks(d, "jit.perf.data");
    let own = script_stacks(&run(d, HREC, &["script", "-F", "ip,sym", "-i", "jit.hrec"]));
    let report = run(d, HREC, &["report", "-i", "jit.hrec"]);
    for pid in &pids {
        let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
    }
    assert!(
        jitted(&perf) * 2 > perf.len(),
        "{} of {}",
        jitted(&perf),
        perf.len()
    );
    // The same stacks as perf's (perf's may end earlier), for 98% of the samples at least.
    let differ = perf
        .iter()
        .zip(&hrec)
        .filter(|(p, h)| !h.starts_with(p))
        .count();
    assert!(
        perf.len() == hrec.len() && differ * 50 <= perf.len(),
        "{differ} of {} differ",
        perf.len()
    );
    assert!(
        jitted(&own) * 2 > own.len(),
        "{} of {}",
        jitted(&own),
        own.len()
    );
    assert!(
        report.contains("//anon: JIT or other code without unwind information"),
        "{report}"
    );
}

/// Samples in the vdso unwind through it and name it as perf does.
#[test]
fn through_the_vdso() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(prog) = build(d, "unwind/vdso.c", &["-fomit-frame-pointer"]) else {
        return;
    };
    let perf = compare(d, "vdso", &[prog.to_str().unwrap(), "20000000"]);
    let (_, hrec) = dwarf_stacks(d, "vdso.perf.data");
    let own = script_stacks(&run(
        d,
        HREC,
        &["script", "-F", "ip,sym", "-i", "vdso.hrec"],
    ));
    let through = |stacks: &[Stack]| {
        stacks
            .iter()
            .filter(|s| {
                s.first()
                    .is_some_and(|f| f.1.starts_with("__vdso_clock_gettime"))
                    && s.iter().any(|f| f.1.starts_with("main"))
            })
            .count()
    };
    // Most samples are in the vdso; their stacks reach main in perf's file as read by
    // hrec and in hrec's own recording.
    assert!(
        through(&perf) * 2 > perf.len(),
        "{} of {}",
        through(&perf),
        perf.len()
    );
    assert!(
        through(&hrec) >= through(&perf),
        "{} < {}",
        through(&hrec),
        through(&perf)
    );
    assert!(
        through(&own) * 2 > own.len(),
        "{} of {}",
        through(&own),
        own.len()
    );
}

#[test]
fn cpp_and_rust_release_builds() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    if let Some(book) = build(d, "names/book.cpp", &[]) {
        compare(d, "cpp", &[book.to_str().unwrap(), "6000000"]);
    }
    if let Some(shapes) = build(d, "names/shapes.rs", &["-C", "force-frame-pointers=no"]) {
        compare(d, "rust", &[shapes.to_str().unwrap(), "6000000"]);
    }
}

/// Long enough that start-up (lazy binding in `ld.so`, whose `_dl_runtime_resolve_*` framehop
/// cannot unwind: `docs/unwinding-notes.md`) is under 1% of the samples, so the comparison is
/// of the loop's stacks.
#[test]
fn a_pure_python_loop() {
    if support::perf().is_none() {
        return;
    }
    let Ok(o) = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
    else {
        eprintln!("skipped: no python3");
        return;
    };
    let python = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let script = d.join("loop.py");
    std::fs::write(
        &script,
        "def inner(n):\n    s = 0\n    for i in range(n):\n        s += i * i\n    return s\n\n\
         def outer():\n    return sum(inner(20000) for _ in range(1500))\n\nprint(outer())\n",
    )
    .unwrap();
    compare(d, "python", &[&python, script.to_str().unwrap()]);
}

/// `--call-graph dwarf,SIZE,raw` keeps the stack copies: unwinding them again gives the
/// chains found while recording, and without `raw` the file is a fraction of the size.
#[test]
fn raw_stacks_unwind_again_to_the_chains_found_while_recording() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(chain) = build_chain(d, &[]) else {
        return;
    };
    let chain = chain.to_str().unwrap();
    run(
        d,
        HREC,
        &[
            "record",
            "--call-graph",
            "dwarf,4096,raw",
            "-o",
            "raw.hrec",
            "--",
            chain,
            "60000",
        ],
    );
    let stored = run(d, HREC, &["script", "-i", "raw.hrec"]);
    let again = run(d, HREC, &["script", "--reunwind", "-i", "raw.hrec"]);
    assert!(stored.lines().filter(|l| l.contains("level1")).count() > 100);
    assert_eq!(stored, again);
    run(
        d,
        HREC,
        &[
            "record",
            "--call-graph",
            "dwarf,4096",
            "-o",
            "plain.hrec",
            "--",
            chain,
            "60000",
        ],
    );
    let size = |f: &str| std::fs::metadata(d.join(f)).unwrap().len();
    assert!(
        size("plain.hrec") * 2 < size("raw.hrec"),
        "{} vs {} bytes",
        size("plain.hrec"),
        size("raw.hrec")
    );
}
