//! The one line that says when most `-g` (frame-pointer) call chains reach addresses outside
//! any mapping (issue 29), on real recordings of `tests/fixtures/chains/walk.c` (cpu-clock
//! every 0.25 ms of CPU time over a fixed amount of work, so the number of samples does not
//! depend on the machine's speed or load):
//!
//! * built `-O2 -fomit-frame-pointer`: after `hrec record -g` (not with `-q`), and in the
//!   `#` header of `hrec report` on hrec's file and on perf's `perf record -g` file of the
//!   same program, whose share agrees with the samples `perf script` prints an unmapped
//!   `[unknown] ([unknown])` frame for;
//! * built `-fno-omit-frame-pointer` (also run by a child that execs on another CPU than the
//!   one it was forked on), or recorded with `--call-graph dwarf`: nowhere.

mod support;

use std::path::{Path, PathBuf};

use support::stacks::{build, run, script_stacks};

/// Iterations of the fixture: about half a second of CPU here, and at least a tenth of that
/// on any machine, which is still hundreds of samples.
const WORK: &str = "200000";
/// The sampling of every recording: cpu-clock every 250 µs of the task's CPU time.
const SAMPLING: [&str; 4] = ["-e", "cpu-clock", "-c", "250000"];
/// The words of the line.
const LINE: &str = "user-space call chains reach addresses outside any mapping";

/// Builds the fixture into `dir/<sub>` with `flag`; `None` without a compiler.
fn build_walk(dir: &Path, sub: &str, flag: &str) -> Option<PathBuf> {
    let d = dir.join(sub);
    std::fs::create_dir_all(&d).unwrap();
    build(&d, "chains/walk.c", &[flag])
}

/// `hrec record` of `prog` into `out` in `dir` with `args` first; its stderr.
fn hrec_record(dir: &Path, args: &[&str], out: &str, prog: &Path) -> String {
    let mut a: Vec<&str> = vec!["record"];
    a.extend_from_slice(&SAMPLING);
    a.extend_from_slice(args);
    a.extend(["-o", out, "--", prog.to_str().unwrap(), WORK]);
    let o = support::hrec_in(dir, &a);
    let (_, err) = support::text(&o);
    assert!(o.status.success(), "hrec {a:?}: {err}");
    err
}

/// `perf record` of `prog` into `out` in `dir` with `args`.
fn perf_record(dir: &Path, args: &[&str], out: &str, prog: &Path) {
    let mut a: Vec<&str> = vec!["record", "-q"];
    a.extend_from_slice(&SAMPLING);
    a.extend_from_slice(args);
    a.extend(["-o", out, "--", prog.to_str().unwrap(), WORK]);
    run(dir, "perf", &a);
}

/// The `#` lines `hrec report --stdio` prints before the first table.
fn report_header(dir: &Path, file: &str) -> Vec<String> {
    let out = run(
        dir,
        env!("CARGO_BIN_EXE_hrec"),
        &["report", "--stdio", "-i", file],
    );
    out.lines()
        .take_while(|l| l.starts_with('#') && !l.starts_with("# Samples:"))
        .map(str::to_string)
        .collect()
}

/// The lines of `text` with the warning: (share in percent, chains) of each.
fn warnings(lines: impl IntoIterator<Item = String>) -> Vec<(f64, u64)> {
    lines
        .into_iter()
        .filter(|l| l.contains(LINE))
        .map(|l| {
            let rest = l
                .strip_prefix("hrec: warning: ")
                .or_else(|| l.strip_prefix("# warning: "))
                .unwrap_or_else(|| panic!("not a warning line: {l}"));
            let (share, rest) = rest.split_once("% of the ").expect(&l);
            let chains = rest.split(' ').next().unwrap();
            assert!(
                l.ends_with(
                    "(code built without frame pointers?): record with --call-graph dwarf, or build with -fno-omit-frame-pointer"
                ),
                "{l}"
            );
            (share.parse().expect(&l), chains.parse().expect(&l))
        })
        .collect()
}

/// Whether `taskset` can put tasks on CPUs 0 and 1 (two CPUs, taskset installed).
fn moves_between_cpus(dir: &Path) -> bool {
    let ok = std::process::Command::new("taskset")
        .args(["-c", "0,1", "true"])
        .current_dir(dir)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped the exec on another CPU: taskset -c 0,1 does not run here");
    }
    ok
}

fn lines(s: &str) -> Vec<String> {
    s.lines().map(str::to_string).collect()
}

#[test]
fn chains_without_frame_pointers_are_named_after_recording_and_in_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(prog) = build_walk(d, "nofp", "-fomit-frame-pointer") else {
        return;
    };

    let err = hrec_record(d, &["-g"], "walk.hrec", &prog);
    let after = warnings(lines(&err));
    assert_eq!(after.len(), 1, "one line after recording:\n{err}");
    let (share, chains) = after[0];
    assert!(share > 90.0 && chains >= 100, "{err}");
    // It comes with the summary, after it.
    let summary = err.find("[ hrec record:").expect(&err);
    assert!(err.find(LINE).unwrap() > summary, "{err}");

    // The report of the file says the same, once, in its header (the recorder sees records
    // per drain pass, the report in time order: a sample at the edge of a pass may differ).
    let header = report_header(d, "walk.hrec");
    let found = warnings(header.clone());
    assert_eq!(found.len(), 1, "{}", header.join("\n"));
    assert!(
        found[0].1.abs_diff(chains) <= 2 && (found[0].0 - share).abs() <= 0.2,
        "record: {share}% of {chains}; report: {}% of {}",
        found[0].0,
        found[0].1
    );

    // -q silences it with the summary.
    let quiet = hrec_record(d, &["-g", "-q"], "quiet.hrec", &prog);
    assert!(quiet.is_empty(), "{quiet}");

    // perf's file of the same program: the same line, and the share is the share of samples
    // whose chain perf prints with an unmapped frame.
    if support::perf().is_none() {
        return;
    }
    perf_record(d, &["-g"], "walk.perf.data", &prog);
    let header = report_header(d, "walk.perf.data");
    let found = warnings(header.clone());
    assert_eq!(found.len(), 1, "{}", header.join("\n"));
    let (share, chains) = found[0];
    let stacks = script_stacks(&run(
        d,
        "perf",
        &["script", "-F", "ip,sym,dso", "-i", "walk.perf.data"],
    ));
    let unmapped = stacks
        .iter()
        .filter(|s| s.iter().any(|(_, sym)| sym == "[unknown] ([unknown])"))
        .count() as f64;
    let perf_share = 100.0 * unmapped / stacks.len() as f64;
    // Samples taken before the program's mappings are known (during exec) are left out.
    assert!(chains as usize <= stacks.len() && chains as usize + 5 >= stacks.len());
    assert!(
        (share - perf_share).abs() <= 0.5,
        "hrec {share}% of {chains}, perf script {perf_share}% of {}",
        stacks.len()
    );
}

#[test]
fn sound_chains_and_dwarf_stacks_are_not_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(fp) = build_walk(d, "fp", "-fno-omit-frame-pointer") else {
        return;
    };
    let Some(nofp) = build_walk(d, "nofp", "-fomit-frame-pointer") else {
        return;
    };
    let err = hrec_record(d, &["-g"], "fp.hrec", &fp);
    assert!(warnings(lines(&err)).is_empty(), "{err}");
    assert!(err.contains("[ hrec record:"), "{err}");
    let err = hrec_record(d, &["--call-graph", "dwarf"], "dwarf.hrec", &nofp);
    assert!(warnings(lines(&err)).is_empty(), "{err}");
    let mut files = vec!["fp.hrec", "dwarf.hrec"];
    // A child that execs on another CPU than its parent forked it on: its FORK is in one ring
    // buffer, its exec and new mappings in another, which the recorder may drain first.
    if moves_between_cpus(d) {
        let work = format!("taskset -c 0 {} {WORK} >/dev/null; true", fp.display());
        let o = support::hrec_in(
            d,
            &[
                "record",
                "-e",
                "cpu-clock",
                "-c",
                "250000",
                "-g",
                "-o",
                "moved.hrec",
                "--",
                "taskset",
                "-c",
                "1",
                "sh",
                "-c",
                &work,
            ],
        );
        let (_, err) = support::text(&o);
        assert!(o.status.success(), "{err}");
        assert!(warnings(lines(&err)).is_empty(), "{err}");
        files.push("moved.hrec");
    }
    if support::perf().is_some() {
        perf_record(d, &["-g"], "fp.perf.data", &fp);
        perf_record(d, &["--call-graph", "dwarf"], "dwarf.perf.data", &nofp);
        files.extend(["fp.perf.data", "dwarf.perf.data"]);
    }
    for f in files {
        let header = report_header(d, f);
        assert!(
            warnings(header.clone()).is_empty(),
            "{f}:\n{}",
            header.join("\n")
        );
        // The report read the file's samples (a header, not an error).
        assert!(header[0].starts_with("# hrec report of"), "{f}: {header:?}");
    }
}
