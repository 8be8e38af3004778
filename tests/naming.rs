//! Names as perf prints them (issue 20): hrec's name pipeline against the reference tools on
//! the same inputs.
//!
//! * every C++ symbol of libstdc++ against `c++filt -p` (libiberty, the demangler perf uses),
//!   and every Rust symbol of a Rust binary: nothing that demangles is left mangled, nothing
//!   is cut;
//! * recordings of a C program, a C++ program (`-O2 -g`: templates, lambdas,
//!   `std::function`, virtual calls, `std::sort`, `std::unordered_map`) and a Rust program
//!   (release with debug info: closures, trait objects, generics) by `perf record -g`,
//!   `--call-graph dwarf` and `-z`: `hrec report --sort sym` names and percentages equal
//!   `perf report --sort sym`'s, and `hrec script`'s frames perf script's.

mod support;

use support::stacks::{build, run, same_dwarf_stacks_as_perf, script_stacks};

use std::path::Path;
use std::process::Command;

use hrec::symbol::names::demangle;

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The `_Z` symbols of the C++ standard library this test runs against.
fn libstdcxx_symbols() -> Option<Vec<String>> {
    let lib = [
        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
        "/usr/lib64/libstdc++.so.6",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists())?;
    let o = Command::new("nm")
        .args(["-D", "--defined-only", lib])
        .output()
        .ok()?;
    let mut syms: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .map(|s| s.split('@').next().unwrap_or(s).to_string())
        .filter(|s| s.starts_with("_Z"))
        .collect();
    syms.sort();
    syms.dedup();
    Some(syms)
}

/// `c++filt -p` of each line (libiberty without the function's parameters).
fn cxxfilt(names: &[String]) -> Vec<String> {
    let mut child = Command::new("c++filt")
        .arg("-p")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("c++filt runs");
    let input = names.join("\n") + "\n";
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write as _;
        stdin.write_all(input.as_bytes()).unwrap();
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn every_libstdcxx_symbol_demangles_as_libiberty_prints_it() {
    let (Some(syms), true) = (libstdcxx_symbols(), have("c++filt")) else {
        eprintln!("skipped: no libstdc++ or c++filt");
        return;
    };
    assert!(syms.len() > 1000, "{}", syms.len());
    // c++filt prints with DMGL_VERBOSE (std::basic_string<char, ...> for `Ss`) and with the
    // parameters of special names; perf prints without DMGL_VERBOSE. Names that use one of the
    // standard abbreviations are compared for being demangled, not letter for letter.
    let reference = cxxfilt(
        &syms
            .iter()
            .map(|s| s.split('.').next().unwrap().to_string())
            .collect::<Vec<_>>(),
    );
    assert_eq!(reference.len(), syms.len());
    let abbreviated = |s: &str| ["Ss", "Si", "So", "Sd"].iter().any(|a| s.contains(a));
    let mut compared = 0;
    let mut differ = Vec::new();
    for (raw, want) in syms.iter().zip(&reference) {
        let got = demangle(raw);
        if !want.starts_with("_Z") {
            assert!(
                !got.starts_with("_Z"),
                "left mangled: {raw} (c++filt: {want})"
            );
        }
        if abbreviated(raw) || raw.starts_with("_ZTI") || raw.starts_with("_ZTS") {
            continue;
        }
        compared += 1;
        if got != *want {
            differ.push(format!("{raw}\n  hrec:     {got}\n  c++filt:  {want}"));
        }
    }
    assert!(compared > 1000, "{compared}");
    assert!(
        differ.is_empty(),
        "{} of {compared} differ:\n{}",
        differ.len(),
        differ[..differ.len().min(20)].join("\n")
    );
}

#[test]
fn every_rust_symbol_of_a_rust_binary_demangles_as_libiberty_prints_it() {
    if !have("c++filt") {
        eprintln!("skipped: no c++filt");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path(), "names/shapes.rs", &[]) else {
        return;
    };
    let o = Command::new("nm").arg(&bin).output().unwrap();
    let syms: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|s| s.starts_with("_R") || s.starts_with("_ZN"))
        .map(str::to_string)
        .collect();
    assert!(syms.len() > 300, "{}", syms.len());
    // c++filt prints with DMGL_VERBOSE: crate disambiguators (`core[c1f1a4ba060b9bfa]`) and
    // legacy hashes (`::h0123456789abcdef`), which perf does not print.
    let reference = cxxfilt(&syms);
    let plain = |s: &str| -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find('[') {
            let (head, tail) = rest.split_at(i);
            out.push_str(head);
            match tail[1..].find(']') {
                Some(j) if j > 0 && tail[1..1 + j].bytes().all(|b| b.is_ascii_hexdigit()) => {
                    rest = &tail[j + 2..];
                }
                _ => {
                    out.push('[');
                    rest = &tail[1..];
                }
            }
        }
        out.push_str(rest);
        // Verbose only, too: the type of a const generic argument (`<10: usize>`).
        for ty in [
            "usize", "isize", "u8", "u16", "u32", "u64", "u128", "i8", "i16", "i32", "i64", "i128",
            "bool", "char",
        ] {
            out = out
                .replace(&format!(": {ty}>"), ">")
                .replace(&format!(": {ty},"), ",");
        }
        match out.rsplit_once("::h") {
            Some((head, hash))
                if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                head.to_string()
            }
            _ => out,
        }
    };
    let mut differ = Vec::new();
    for (raw, want) in syms.iter().zip(&reference) {
        let got = demangle(raw);
        assert!(!got.starts_with("_R"), "left mangled: {raw}");
        if *got != plain(want) {
            differ.push(format!("{raw}\n  hrec:    {got}\n  c++filt: {want}"));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} differ:\n{}",
        differ.len(),
        syms.len(),
        differ[..differ.len().min(10)].join("\n")
    );
}

/// `percent name` rows of a `--sort sym` table (perf's or hrec's), names with their `[.]`.
fn sym_rows(table: &str) -> Vec<(f64, String)> {
    table
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains('%'))
        .filter_map(|l| {
            let pct: f64 = l
                .split_whitespace()
                .next()?
                .strip_suffix('%')?
                .parse()
                .ok()?;
            Some((pct, l[l.find('[')?..].trim().to_string()))
        })
        .collect()
}

/// Records `program` with perf (`opts`) and compares `hrec report --sort sym` with
/// `perf report --sort sym` on the file: the share of perf's samples whose symbol hrec names
/// the same with the same percentage.
fn same_names_as_perf(dir: &Path, program: &Path, arg: &str, name: &str, opts: &[&str]) {
    let mut args = vec!["record", "-q", "-F", "2000", "-e", "cpu-clock", "-o", name];
    args.extend_from_slice(opts);
    args.push("--");
    args.push(program.to_str().unwrap());
    args.push(arg);
    run(dir, "perf", &args);
    let perf = sym_rows(&run(
        dir,
        "perf",
        &[
            "report",
            "--stdio",
            "--no-children",
            "-g",
            "none",
            "--sort",
            "sym",
            "-i",
            name,
        ],
    ));
    let hrec = sym_rows(&run(
        dir,
        env!("CARGO_BIN_EXE_hrec"),
        &["report", "--no-children", "--sort", "sym", "-i", name],
    ));
    let total: f64 = perf.iter().map(|(p, _)| p).sum();
    let same: f64 = perf
        .iter()
        .filter(|(p, n)| hrec.iter().any(|(q, m)| m == n && (p - q).abs() < 0.015))
        .map(|(p, _)| p)
        .sum();
    let differ: Vec<_> = perf
        .iter()
        .filter(|(p, n)| !hrec.iter().any(|(q, m)| m == n && (p - q).abs() < 0.015))
        .take(10)
        .collect();
    assert!(total > 99.0, "{name}: perf's rows add up to {total}");
    // `--call-graph dwarf`: perf unwinds the stacks and lists the functions inlined at each
    // address (`name (inlined)`), as `hrec script` does by default: the same stacks, names and
    // addresses for at least 98% of the samples (frames either leaves unresolved count as
    // equal; a stack perf ends early may go on in hrec).
    if opts.contains(&"dwarf") {
        same_dwarf_stacks_as_perf(dir, name);
        return;
    }
    let perf_frames = script_stacks(&run(
        dir,
        "perf",
        &["script", "-F", "ip,sym,symoff", "-i", name],
    ));
    let hrec_frames = script_stacks(&run(
        dir,
        env!("CARGO_BIN_EXE_hrec"),
        &["script", "-F", "ip,sym", "-i", name],
    ));
    assert_eq!(perf_frames.len(), hrec_frames.len(), "{name}: samples");
    let (mut compared, mut bad) = (0, Vec::new());
    for (p, h) in perf_frames.iter().zip(&hrec_frames) {
        for (i, (pf, hf)) in p.iter().zip(h).enumerate() {
            // A frame neither resolves (frame-pointer garbage) is not compared at all.
            if pf.1 == "[unknown]" && hf.1.starts_with('[') {
                continue;
            }
            assert_eq!(
                pf.0, hf.0,
                "{name}: frame address in\nperf: {p:?}\nhrec: {h:?}"
            );
            // perf looks a return address up as it is: where the call was the last
            // instruction of a function, that names the next function (`+0x0`); hrec names
            // the caller, deliberately (README).
            let (perf_name, at_start) = match pf.1.rsplit_once('+') {
                Some((n, off)) if off.starts_with("0x") => (n, off == "0x0"),
                _ => (pf.1.as_str(), false),
            };
            if perf_name == "[unknown]" || hf.1.starts_with('[') || (i > 0 && at_start) {
                continue;
            }
            compared += 1;
            if perf_name != hf.1 {
                bad.push((perf_name.to_string(), hf.1.clone()));
            }
        }
    }
    assert!(compared > 100, "{name}: {compared} frames compared");
    assert!(
        bad.is_empty(),
        "{name}: {} of {compared} frames named differently: {:?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
    assert!(
        same >= 0.995 * total,
        "{name} {opts:?}: {same:.2}% of {total:.2}% named alike; perf rows hrec does not have: {differ:?}\nhrec: {:?}",
        &hrec[..hrec.len().min(10)]
    );
}

#[test]
fn cpp_and_rust_recordings_are_named_as_perf_names_them() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    if let Some(work) = build(d, "recordings/root/tmp/hrec-fixture/work.c", &[]) {
        same_names_as_perf(d, &work, "30000000", "c.data", &["-g"]);
        same_names_as_perf(
            d,
            &work,
            "30000000",
            "c-dwarf-z.data",
            &["-z", "--call-graph", "dwarf"],
        );
    }
    if let Some(book) = build(d, "names/book.cpp", &[]) {
        same_names_as_perf(d, &book, "6000000", "fp.data", &["-g"]);
        same_names_as_perf(
            d,
            &book,
            "6000000",
            "dwarf.data",
            &["--call-graph", "dwarf"],
        );
        // `-z` writes no build-ids: kernel frames are named from the same release and boot.
        same_names_as_perf(d, &book, "6000000", "z.data", &["-z", "-g"]);
    }
    if let Some(shapes) = build(d, "names/shapes.rs", &[]) {
        same_names_as_perf(d, &shapes, "6000000", "rust.data", &["-g"]);
        same_names_as_perf(
            d,
            &shapes,
            "6000000",
            "rust-z.data",
            &["-z", "--call-graph", "dwarf"],
        );
    }
}
