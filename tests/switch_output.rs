//! `record --switch-output`: a recording cut into files named as perf names them, each of
//! which reads alone (issue 17), compared with perf 6.1 on the same workload.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::{example, hrec_in, perf, text};

/// The files `<dir>/<stem>.<16 digits>` (perf's `%Y%m%d%H%M%S` and centiseconds), sorted.
fn series(dir: &Path, stem: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.strip_prefix(stem)
                .and_then(|r| r.strip_prefix('.'))
                .is_some_and(|ts| ts.len() == 16 && ts.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    v.sort();
    v
}

/// Samples per (comm, symbol) of a file, from `hrec report -n` (perf's columns).
fn rows(dir: &Path, file: &Path) -> BTreeMap<(String, String), u64> {
    let o = hrec_in(
        dir,
        &[
            "report",
            "--stdio",
            "-n",
            "--sort",
            "comm,sym",
            "-i",
            file.to_str().unwrap(),
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{}: {err}", file.display());
    out.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n: u64 = f[1].parse().unwrap_or_else(|_| panic!("{l}"));
            ((f[2].to_string(), f[3..].join(" ")), n)
        })
        .collect()
}

/// The sample count hrec's summary line gives.
fn summary_samples(stderr: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("[ hrec record: woken up"))
        .unwrap_or_else(|| panic!("no summary in {stderr}"));
    let at = line.find(" samples:").unwrap();
    let start = line[..at].rfind('(').unwrap() + 1;
    line[start..at].parse().unwrap()
}

/// Held by each test here: their workloads switch files at set times, and a window in which
/// a thread got no CPU (the other tests' recordings sharing the two CPUs) has none of its
/// samples.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The workload of the signal tests: a busy process started before the first switch (so
/// the later files know it only from what hrec synthesizes), and two SIGUSR2 to the
/// recorder (its parent) while it runs.
fn workload(threads: &Path) -> String {
    format!(
        "{t} 2 & sleep 0.3; kill -USR2 $PPID; sleep 1; kill -USR2 $PPID; wait",
        t = threads.display()
    )
}

#[test]
fn signal_switches_into_files_that_each_read_alone() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let threads = example("threads");
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "--switch-output",
            "-o",
            "run.data",
            "--",
            "sh",
            "-c",
            &workload(&threads),
        ],
    );
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let files = series(dir.path(), "run.data");
    assert_eq!(files.len(), 3, "{err}");
    assert!(
        !dir.path().join("run.data").exists(),
        "the last file is renamed too"
    );
    // One dump line per file, named as on disk, and the series in the summary.
    let dumps: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("[ hrec record: dump "))
        .map(|l| l.trim_end_matches(" ]"))
        .collect();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(dumps, names, "{err}");
    assert!(err.contains("to 3 files run.data.<timestamp>"), "{err}");

    // Every file resolves the busy process's function by itself, and the samples add up to
    // what was recorded.
    let mut total = 0;
    for f in &files {
        let r = rows(dir.path(), f);
        total += r.values().sum::<u64>();
        let spin: u64 = r
            .iter()
            .filter(|((comm, sym), _)| comm.starts_with("worker") && sym.contains("spin"))
            .map(|(_, n)| n)
            .sum();
        assert!(
            spin > 0,
            "{}: no worker samples in spin: {r:?}",
            f.display()
        );
        assert!(
            !r.keys()
                .any(|(comm, sym)| comm.starts_with("worker") && sym.contains("[unknown]")),
            "{}: unresolved worker samples: {r:?}",
            f.display()
        );
    }
    assert_eq!(total, summary_samples(&err));

    // perf on the same workload: the same number of files, named the same way.
    let Some(perf) = perf() else { return };
    let p = Command::new(perf)
        .args([
            "record",
            "-e",
            "cpu-clock",
            "--switch-output",
            "-o",
            "perf.data",
            "--",
            "sh",
            "-c",
            &workload(&threads),
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let perr = String::from_utf8_lossy(&p.stderr);
    assert!(p.status.success(), "{perr}");
    assert_eq!(series(dir.path(), "perf.data").len(), files.len(), "{perr}");
    assert!(!dir.path().join("perf.data").exists());
}

#[test]
fn size_switches_keep_the_newest_files() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let threads = example("threads");
    // 1B: every file is due as soon as it has its header, so each pass of the drain loop
    // (at least every 100 ms) starts a new one.
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "--switch-output=1B",
            "--switch-max-files=2",
            "-o",
            "s.data",
            "--",
            threads.to_str().unwrap(),
            "0.6",
        ],
    );
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let dumped = err
        .lines()
        .filter(|l| l.contains("hrec record: dump"))
        .count();
    assert!(dumped > 2, "{err}");
    let files = series(dir.path(), "s.data");
    assert_eq!(files.len(), 2, "{err}");
    for f in &files {
        let o = hrec_in(dir.path(), &["info", "-i", f.to_str().unwrap()]);
        let (out, e) = text(&o);
        assert!(o.status.success(), "{e}");
        assert!(!out.contains("truncated"), "{out}");
    }
}

#[test]
fn dwarf_chains_are_defined_again_in_each_file() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let threads = example("threads");
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "--call-graph",
            "dwarf",
            // A debug build unwinds slower than 8 threads at 4 kHz fill the buffers; a writer
            // far behind takes the two SIGUSR2 in one switch.
            "-F",
            "500",
            "--switch-output",
            "-o",
            "g.data",
            "--",
            "sh",
            "-c",
            &workload(&threads),
        ],
    );
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let files = series(dir.path(), "g.data");
    assert_eq!(files.len(), 3, "{err}");
    for f in &files {
        let o = hrec_in(
            dir.path(),
            &[
                "script",
                "-F",
                "comm,ip,sym",
                "--comm",
                "worker-0",
                "-i",
                f.to_str().unwrap(),
            ],
        );
        let (out, e) = text(&o);
        assert!(o.status.success(), "{e}");
        // Unwound through the thread's entry: spin's callers are in the chains.
        let samples = out.split("\n\n").filter(|s| s.contains("spin")).count();
        let deep = out
            .split("\n\n")
            .filter(|s| s.contains("spin") && s.contains("std::thread"))
            .count();
        assert!(samples > 0, "{}: {out}", f.display());
        assert!(
            deep * 10 >= samples * 9,
            "{}: {deep} of {samples} chains reach the thread start",
            f.display()
        );
    }
}

#[test]
fn system_wide_files_know_the_tasks_running_before() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let threads = example("threads");
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "-a",
            "--switch-output",
            "-o",
            "a.data",
            "--",
            "sh",
            "-c",
            &workload(&threads),
        ],
    );
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let files = series(dir.path(), "a.data");
    assert_eq!(files.len(), 3, "{err}");
    let last = rows(dir.path(), &files[1]);
    let spin: u64 = last
        .iter()
        .filter(|((comm, sym), _)| comm.starts_with("worker") && sym.contains("spin"))
        .map(|(_, n)| n)
        .sum();
    assert!(spin > 0, "{last:?}");
}

#[test]
fn bad_switch_values_are_one_line_usage_errors() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--switch-output=banana"][..],
        &["--switch-output=0s"],
        &["--switch-output=10"],
        &["--switch-output=5k"],
        &["--switch-output", "--switch-max-files=0"],
        &["--switch-max-files=3"],
    ] {
        let mut a = vec!["record"];
        a.extend_from_slice(args);
        a.extend(["--", "true"]);
        let o = hrec_in(dir.path(), &a);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("hrec: error: "), "{err}");
        assert!(err.contains("switch"), "{args:?}: {err}");
    }
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "no file left"
    );
}
