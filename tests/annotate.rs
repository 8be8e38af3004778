//! `hrec annotate` against `perf annotate` on the same perf.data (a gcc -O2 program with three
//! hot functions): the same instructions with the same sample counts; the JSON document; and
//! functions whose binary is missing or changed, each one line while the rest annotates.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use support::stacks::{build, run};
use support::{hrec_in, text};

const HOT: [&str; 3] = ["branchy", "sum_array", "mul_chain"];

/// `address -> samples` of the instruction lines of `perf annotate --stdio
/// --show-nr-samples` (or hrec's, which has the same layout).
fn counts(out: &str) -> BTreeMap<u64, u64> {
    out.lines()
        .filter_map(|l| {
            let (count, rest) = l.split_once(" : ")?;
            let count = count.trim().parse().ok()?;
            let (addr, _) = rest.trim_start().split_once(':')?;
            Some((u64::from_str_radix(addr, 16).ok()?, count))
        })
        .collect()
}

/// The program, recorded by perf in `dir` (`p.data`), or `None` without perf or gcc.
fn recorded(dir: &Path) -> Option<std::path::PathBuf> {
    support::perf()?;
    let prog = build(dir, "annotate/three.c", &[])?;
    let p = prog.to_str().unwrap();
    run(
        dir,
        "perf",
        &[
            "record",
            "-q",
            "-N",
            "-e",
            "cpu-clock",
            "-F",
            "4000",
            "-o",
            "p.data",
            p,
            "60000000",
        ],
    );
    Some(prog)
}

#[test]
fn instruction_counts_equal_perf_annotate() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    if recorded(d).is_none() {
        return;
    }
    for sym in HOT {
        let perf = Command::new("perf")
            .args([
                "annotate",
                "-i",
                "p.data",
                "--stdio",
                "--show-nr-samples",
                "-s",
                sym,
            ])
            .current_dir(d)
            .output()
            .unwrap();
        let perf = counts(&String::from_utf8_lossy(&perf.stdout));
        let out = hrec_in(d, &["annotate", "-i", "p.data", "-n", sym]);
        let (hrec_text, err) = text(&out);
        assert!(out.status.success(), "{err}");
        let hrec = counts(&hrec_text);
        assert!(perf.len() > 5, "perf annotated {sym}: {perf:?}");
        assert!(
            perf.values().sum::<u64>() > 20,
            "{sym} has too few samples to compare: {perf:?}"
        );
        assert_eq!(hrec, perf, "{sym}: (address, samples) of every instruction");
        // The instruction lines themselves, objdump's text included (these functions refer
        // to no data symbol, whose names hrec does not print yet).
        let lines = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| {
                    l.split_once(" : ")
                        .is_some_and(|(c, _)| c.trim().parse::<u64>().is_ok())
                })
                .map(|l| l.trim_end().to_string())
                .collect()
        };
        let perf_text = Command::new("perf")
            .args([
                "annotate",
                "-i",
                "p.data",
                "--stdio",
                "--show-nr-samples",
                "-s",
                sym,
            ])
            .current_dir(d)
            .output()
            .unwrap();
        assert_eq!(
            lines(&hrec_text),
            lines(&String::from_utf8_lossy(&perf_text.stdout)),
            "{sym}: instruction lines"
        );
    }
}

#[test]
fn json_lists_instructions_blocks_and_problems() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    if recorded(d).is_none() {
        return;
    }
    let out = hrec_in(
        d,
        &[
            "annotate",
            "-i",
            "p.data",
            "--json",
            "mul_chain",
            "no_such_function",
        ],
    );
    let (stdout, err) = text(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("no_such_function"))
            .count(),
        1,
        "{err}"
    );
    let j: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let f = &j["symbols"][0];
    assert_eq!(f["name"], "mul_chain");
    assert!(f["dso"].as_str().unwrap().ends_with("/three"));
    let insns = f["instructions"].as_array().unwrap();
    let start = f["start"].as_u64().unwrap();
    assert_eq!(insns[0]["address"].as_u64(), Some(start));
    let samples: u64 = insns.iter().map(|i| i["samples"].as_u64().unwrap()).sum();
    assert_eq!(Some(samples), f["samples"].as_u64());
    // Source lines from DWARF: the multiply's line of three.c.
    assert!(
        insns.iter().any(|i| i["source"]["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("three.c"))),
        "{f}"
    );
    let blocks = f["blocks"].as_array().unwrap();
    assert!(blocks.len() >= 2, "{f}");
    let in_blocks: u64 = blocks.iter().map(|b| b["samples"].as_u64().unwrap()).sum();
    assert_eq!(in_blocks, samples);
    assert_eq!(j["problems"].as_array().unwrap().len(), 1);
}

#[test]
fn missing_or_changed_binaries_are_one_line_per_function() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(prog) = recorded(d) else {
        return;
    };
    // Changed since the recording: rebuilt with other flags (another build-id).
    let changed = Command::new("gcc")
        .args(["-O1", "-g", "-o"])
        .arg(&prog)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/annotate/three.c"))
        .status()
        .unwrap();
    assert!(changed.success());
    // No build-id cache, which would hold the file as it ran (annotate reads it first).
    let no_cache = d.join("no-cache");
    let no_cache = no_cache.to_str().unwrap();
    let mut args = vec!["annotate", "-i", "p.data", "--buildid-dir", no_cache];
    args.extend(HOT);
    let out = hrec_in(d, &args);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for sym in HOT {
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(sym)).collect();
        assert_eq!(lines.len(), 1, "{sym}: {err}");
    }
    assert!(err.contains("changed since the recording"), "{err}");
    // Missing.
    std::fs::remove_file(&prog).unwrap();
    let out = hrec_in(
        d,
        &[
            "annotate",
            "-i",
            "p.data",
            "--buildid-dir",
            no_cache,
            "branchy",
        ],
    );
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is missing"), "{err}");
}

/// Two programs in one recording, one stripped afterwards: the other's functions annotate,
/// and the stripped one's samples are one line.
#[test]
fn a_stripped_program_is_one_line_and_the_rest_annotates() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    if support::perf().is_none() {
        return;
    }
    let Some(prog) = build(d, "annotate/three.c", &[]) else {
        return;
    };
    let other = d.join("other");
    std::fs::copy(&prog, &other).unwrap();
    let script = format!(
        "{} 20000000 && {} 20000000",
        prog.display(),
        other.display()
    );
    run(
        d,
        "perf",
        &[
            "record",
            "-q",
            "-N",
            "-e",
            "cpu-clock",
            "-F",
            "4000",
            "-o",
            "p.data",
            "sh",
            "-c",
            &script,
        ],
    );
    run(d, "strip", &[other.to_str().unwrap()]);
    // No build-id cache: perf's would hold the file as it ran, which annotate reads first.
    let out = hrec_in(
        d,
        &[
            "annotate",
            "-i",
            "p.data",
            "--json",
            "--buildid-dir",
            d.join("no-cache").to_str().unwrap(),
        ],
    );
    let (stdout, err) = text(&out);
    assert!(out.status.success(), "{err}");
    let j: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let names: Vec<&str> = j["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["dso"].as_str().unwrap().ends_with("/three"))
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    for sym in HOT {
        assert!(names.contains(&sym), "{sym} in {names:?}");
    }
    assert!(
        j["symbols"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| !f["dso"].as_str().unwrap().ends_with("/other")),
        "{stdout}"
    );
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("/other")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("has no symbols"), "{err}");
}
