//! Inline frames in `hrec script` by default, as in perf 6.1 (issue 29): perf's `--inline`,
//! on unless `--no-inline`, lists the functions inlined at each address of an unwound
//! (`--call-graph dwarf`) chain as entries of their own (`name+offset (inlined)`), and leaves
//! frame-pointer chains as they are.
//!
//! On perf's own `--call-graph dwarf` recordings of optimised C (gcc -O2 -g), C++ (g++ -O2
//! -g) and Rust (the `hotspots` example in release with debug info, and a rustc -O -g program
//! whose stacks go through std's iterators, sorting and HashMap), `hrec script` and
//! `perf script`, both with their default flags, print the same stacks for at least 98% of
//! the samples (`support::stacks::compare_default_stacks`: every call-chain line the same,
//! but for the two naming differences the README lists, PLT stubs and a frame-pointer
//! chain's return address at the start of the next function). Each test prints its measured
//! share (`cargo test --test inline -- --nocapture`).
//!
//! A stack perf's unwinder ends early while hrec's goes on counts as different, and is
//! counted apart in the printed line. That is perf's doing: a sample in the epilogue of
//! glibc's `realloc` (after its pops, where glibc's CFI still has the callee-saved registers
//! saved below the stack pointer, outside the stack copy the kernel took from the stack
//! pointer up) ends one frame later in perf's script, while hrec's goes on to `_start`
//! through the callers other samples show at the same return addresses.

mod support;

use std::path::Path;

use support::stacks::{build, compare_default_stacks, run};

const HREC: &str = env!("CARGO_BIN_EXE_hrec");

/// Records `cmd` in `dir` with `perf record` and `record` (`--call-graph dwarf` or `-g`,
/// cpu-clock at 2 kHz) into `<name>.data`, and compares `perf script` with `hrec script`, both
/// run with `extra` (default flags when empty): the same stacks for at least 98% of the
/// samples, printed per program. Returns how many entries perf marked `(inlined)`.
fn same_stacks_as_perf(dir: &Path, name: &str, record: &[&str], cmd: &[&str]) -> usize {
    let file = format!("{name}.data");
    let mut args = vec!["record", "-q", "-F", "2000", "-e", "cpu-clock"];
    args.extend_from_slice(record);
    args.extend(["-o", &file, "--"]);
    args.extend_from_slice(cmd);
    run(dir, "perf", &args);
    script_stacks_as_perf(dir, name, &[])
}

/// [`same_stacks_as_perf`] on `<name>.data`, already recorded, with `flags` on both sides.
fn script_stacks_as_perf(dir: &Path, name: &str, flags: &[&str]) -> usize {
    let file = format!("{name}.data");
    let mut args = vec!["script", "-i", &file];
    args.extend_from_slice(flags);
    let m = compare_default_stacks(&run(dir, "perf", &args), &run(dir, HREC, &args));
    println!(
        "{name} {flags:?}: {} of {} samples ({:.1}%) have perf's stacks ({} more where perf's ends early); perf lists {} inlined entries",
        m.same,
        m.samples,
        m.percent(),
        m.perf_ends_early,
        m.inlined
    );
    assert!(m.samples >= 100, "{name}: {} samples", m.samples);
    let (perf, hrec) = m.first_difference.clone().unzip();
    assert!(
        m.same * 50 >= m.samples * 49,
        "{name} {flags:?}: {:.1}% of {} samples have perf's stacks; first that differs:\nperf {perf:#?}\nhrec {hrec:#?}",
        m.percent(),
        m.samples
    );
    m.inlined
}

/// The entries of hrec's default script of `file` in `dir` that are marked `(inlined)`.
fn hrec_inlined(dir: &Path, file: &str, flags: &[&str]) -> usize {
    let mut args = vec!["script", "-i", file];
    args.extend_from_slice(flags);
    run(dir, HREC, &args)
        .lines()
        .filter(|l| l.starts_with('\t') && l.ends_with(" (inlined)"))
        .count()
}

/// C with static functions inlined three deep (`mix` in `round2` in `fold_block` in
/// `checksum`) and a comparator under glibc's qsort (whose `msort_with_tmp` is inlined into
/// itself): perf's stacks by default and with `--no-inline`; a frame-pointer chain is not
/// expanded by either; hrec's own `--call-graph dwarf` recording lists the inlined functions
/// by default too.
#[test]
fn c_static_functions_inlined() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(prog) = build(d, "inline/kernels.c", &[]) else {
        return;
    };
    let prog = prog.to_str().unwrap();
    let inlined = same_stacks_as_perf(d, "c", &["--call-graph", "dwarf"], &[prog, "600"]);
    assert!(inlined > 100, "{inlined} inlined entries");
    // The inline chain the fixture builds, as perf prints it (and so hrec).
    let script = run(d, HREC, &["script", "-F", "ip,sym", "-i", "c.data"]);
    let chain = [
        "mix (inlined)",
        "round2 (inlined)",
        "fold_block (inlined)",
        "checksum",
    ];
    let names: Vec<&str> = script
        .lines()
        .filter_map(|l| Some(l.trim().split_once(' ')?.1))
        .collect();
    assert!(
        names.windows(chain.len()).any(|w| w == chain),
        "no {chain:?} in\n{script}"
    );
    assert_eq!(script_stacks_as_perf(d, "c", &["--no-inline"]), 0);
    assert_eq!(hrec_inlined(d, "c.data", &["--no-inline"]), 0);

    // Frame-pointer chains (the program built with frame pointers): not expanded by
    // default, by either; hrec's `--inline` given expands them too.
    let fp_dir = d.join("fp");
    std::fs::create_dir(&fp_dir).unwrap();
    let Some(fp_prog) = build(&fp_dir, "inline/kernels.c", &["-fno-omit-frame-pointer"]) else {
        return;
    };
    let fp_prog = fp_prog.to_str().unwrap();
    assert_eq!(same_stacks_as_perf(d, "fp", &["-g"], &[fp_prog, "300"]), 0);
    assert_eq!(hrec_inlined(d, "fp.data", &[]), 0);
    assert!(hrec_inlined(d, "fp.data", &["--inline"]) > 50);

    // hrec's own recording, unwound while recording: inlined entries by default.
    run(
        d,
        HREC,
        &[
            "record",
            "-F",
            "2000",
            "-e",
            "cpu-clock",
            "--call-graph",
            "dwarf",
            "-o",
            "c.hrec",
            "--",
            prog,
            "300",
        ],
    );
    assert!(hrec_inlined(d, "c.hrec", &[]) > 50);
    assert_eq!(hrec_inlined(d, "c.hrec", &["--no-inline"]), 0);
}

/// C++: libstdc++'s unordered_map, std::to_string, std::sort and std::function inlined into
/// the program's functions, several levels deep.
#[test]
fn cpp_library_templates_inlined() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(book) = build(d, "names/book.cpp", &[]) else {
        return;
    };
    let inlined = same_stacks_as_perf(
        d,
        "cpp",
        &["--call-graph", "dwarf"],
        &[book.to_str().unwrap(), "10000000"],
    );
    assert!(inlined > 100, "{inlined} inlined entries");
}

/// Rust: the `hotspots` example as cargo builds it in release (debug info on), whose `mix`
/// is inlined into `hot_multiply`, and a program built with rustc -O -g whose stacks go
/// through std's iterator adapters, closures, sorting and HashMap, inlined.
#[test]
fn rust_release_builds() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let hotspots = support::release_example("hotspots");
    let inlined = same_stacks_as_perf(
        d,
        "hotspots",
        &["--call-graph", "dwarf"],
        &[hotspots.to_str().unwrap(), "1"],
    );
    assert!(inlined > 100, "{inlined} inlined entries");
    let Some(shapes) = build(d, "names/shapes.rs", &[]) else {
        return;
    };
    let inlined = same_stacks_as_perf(
        d,
        "shapes",
        &["--call-graph", "dwarf"],
        &[shapes.to_str().unwrap(), "12000000"],
    );
    assert!(inlined > 100, "{inlined} inlined entries");
}
