//! Tracepoints (issue 43): perf's `-e subsys:event` and globs, found in tracefs; recorded
//! as perf records them (every hit, the record's fields); `--filter`; counted by `stat`.
//!
//! * On a fixture sysfs with a tracefs tree (`tests/fixtures/tracefs`), the plan is perf's
//!   attr and a glob opens its events in tracefs' directory order; unknown names get the
//!   closest ones, a missing tracefs one line.
//! * Live (root, tracefs and perf): on a workload with known system-call counts
//!   (`tests/fixtures/trace/calls.c`), `hrec record -e ...` and `perf record -e ...` give
//!   the same samples per event, `--filter` keeps exactly the matching hits, globs expand to
//!   perf's events in perf's order, and `hrec stat` counts what `perf stat` counts.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::text;

const HREC: &str = env!("CARGO_BIN_EXE_hrec");

/// A sysfs root with the `vm` fixture's PMUs and the tracefs fixture at `kernel/tracing`.
fn sysfs_with_tracefs() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let vm = support::sysfs("vm");
    for d in ["bus", "devices"] {
        std::os::unix::fs::symlink(vm.join(d), t.path().join(d)).unwrap();
    }
    std::fs::create_dir_all(t.path().join("kernel")).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tracefs");
    std::os::unix::fs::symlink(fixture, t.path().join("kernel/tracing")).unwrap();
    t
}

fn hrec_on(root: &Path, args: &[&str]) -> Output {
    Command::new(HREC)
        .args(args)
        .env("HREC_SYSFS_ROOT", root)
        .env("HREC_PROCFS_ROOT", support::procfs())
        .output()
        .unwrap()
}

/// The `perf_event_attr` lines of a dry run (or of `perf record -vv`) per event, as
/// `(field, value)` pairs, for the fields the tracepoint rules set.
fn attr_fields(dump: &str) -> Vec<Vec<(String, String)>> {
    let keep = [
        "type",
        "config",
        "{ sample_period, sample_freq }",
        "sample_type",
        "read_format",
        "freq",
    ];
    let mut out: Vec<Vec<(String, String)>> = Vec::new();
    for line in dump.lines() {
        if line.starts_with("perf_event_attr:") {
            out.push(Vec::new());
            continue;
        }
        let Some(cur) = out.last_mut() else { continue };
        let l = line.trim();
        if let Some(k) = keep.iter().find(|k| {
            l.strip_prefix(**k)
                .is_some_and(|rest| rest.starts_with("  "))
        }) {
            cur.push((k.to_string(), l[k.len()..].trim().to_string()));
        }
    }
    out
}

#[test]
fn a_tracepoint_is_planned_as_perf_records_it() {
    let root = sysfs_with_tracefs();
    let o = hrec_on(
        root.path(),
        &[
            "record",
            "--dry-run",
            "-e",
            "sched:sched_switch",
            "--",
            "true",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let id = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/tracefs/events/sched/sched_switch/id"),
    )
    .unwrap();
    let attrs = attr_fields(&out);
    assert_eq!(attrs.len(), 1, "{out}");
    let want: Vec<(String, String)> = [
        ("type", "2".to_string()),
        (
            "config",
            format!("{:#x}", id.trim().parse::<u64>().unwrap()),
        ),
        ("{ sample_period, sample_freq }", "1".to_string()),
        ("sample_type", "IP|TID|TIME|CPU|PERIOD|RAW".to_string()),
        ("read_format", "ID|LOST".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(attrs[0], want, "{out}");
    assert!(
        out.contains("event #0 sched:sched_switch: pmu tracepoint"),
        "{out}"
    );
    // -c and an explicit -F reach tracepoints as perf takes them; the default -F does not.
    let o = hrec_on(
        root.path(),
        &[
            "record",
            "--dry-run",
            "-F",
            "99",
            "-e",
            "sched:sched_switch",
            "--",
            "true",
        ],
    );
    let attrs = attr_fields(&text(&o).0);
    assert!(attrs[0].contains(&("freq".into(), "1".into())), "{attrs:?}");
    assert!(attrs[0].contains(&("{ sample_period, sample_freq }".into(), "99".into())));
}

#[test]
fn a_glob_opens_its_events_in_tracefs_order() {
    let root = sysfs_with_tracefs();
    let o = hrec_on(
        root.path(),
        &[
            "record",
            "--dry-run",
            "-e",
            "sched:*,syscalls:sys_*_write",
            "--",
            "true",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let planned: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("event #"))
        .filter_map(|l| l.split_once(' ')?.1.split_once(':').map(|_| l))
        .map(|l| l.split(' ').nth(1).unwrap().trim_end_matches(':'))
        .collect();
    let dir = |sys: &str| -> Vec<String> {
        let d = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/tracefs/events")
            .join(sys);
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| format!("{sys}:{}", e.unwrap().file_name().to_string_lossy()))
            .collect()
    };
    let mut want = dir("sched");
    want.extend(
        dir("syscalls")
            .into_iter()
            .filter(|n| n.ends_with("_write")),
    );
    assert_eq!(planned, want, "{out}");
}

#[test]
fn unknown_tracepoints_and_a_missing_tracefs_are_one_line_each() {
    let root = sysfs_with_tracefs();
    let o = hrec_on(
        root.path(),
        &[
            "record",
            "--dry-run",
            "-e",
            "sched:sched_swich",
            "--",
            "true",
        ],
    );
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("unknown tracepoint sched:sched_swich (closest: sched:sched_switch")
            && err.contains("'hrec list tracepoint' lists them"),
        "{err}"
    );
    let o = hrec_on(
        root.path(),
        &["record", "--dry-run", "-e", "nosuch:*", "--", "true"],
    );
    let (_, err) = text(&o);
    assert!(err.contains("no tracepoint matches nosuch:*"), "{err}");
    // `cycles:x` is still a bad modifier, not a tracepoint.
    let o = hrec_on(
        root.path(),
        &["record", "--dry-run", "-e", "cpu-clock:x", "--", "true"],
    );
    let (_, err) = text(&o);
    assert!(err.contains("unknown modifier 'x'"), "{err}");
    // The vm fixture has no tracefs.
    let o = support::hrec(
        Some("vm"),
        &[
            "record",
            "--dry-run",
            "-e",
            "sched:sched_switch",
            "--",
            "true",
        ],
    );
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("tracefs is not mounted (as root: mount -t tracefs"),
        "{err}"
    );
}

#[test]
fn a_filter_needs_a_tracepoint_before_it() {
    let root = sysfs_with_tracefs();
    for (args, want) in [
        (
            &["--filter", "count == 3", "-e", "syscalls:sys_enter_write"][..],
            "--filter 'count == 3' follows no -e",
        ),
        (
            &["-e", "cpu-clock", "--filter", "count == 3"],
            "--filter 'count == 3' follows -e cpu-clock, which has no tracepoint",
        ),
    ] {
        let mut a = vec!["record", "--dry-run"];
        a.extend_from_slice(args);
        a.extend(["--", "true"]);
        let o = hrec_on(root.path(), &a);
        let (_, err) = text(&o);
        assert!(!o.status.success(), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // Two filters on one event both hold; each -e gets its own.
    let o = hrec_on(
        root.path(),
        &[
            "record",
            "--dry-run",
            "--json",
            "-e",
            "syscalls:sys_enter_write",
            "--filter",
            "count == 3",
            "--filter",
            "fd > 2",
            "-e",
            "sched:sched_switch",
            "--filter",
            "prev_pid == 0",
            "--",
            "true",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let plan: serde_json::Value = serde_json::from_str(&out).unwrap();
    let filters: Vec<&str> = plan["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["filter"].as_str())
        .collect();
    assert_eq!(filters, ["(count == 3) && (fd > 2)", "prev_pid == 0"]);
    // --exclude-perf: hrec's own hits left out of the last -e's tracepoints, as perf's.
    let o = hrec_on(
        root.path(),
        &[
            "record",
            "--dry-run",
            "--json",
            "-e",
            "sched:sched_switch",
            "--exclude-perf",
            "--",
            "true",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let plan: serde_json::Value = serde_json::from_str(&out).unwrap();
    let f = plan["events"][0]["filter"].as_str().unwrap();
    assert!(f.starts_with("common_pid != "), "{f}");
    let o = hrec_on(
        root.path(),
        &["record", "--dry-run", "--exclude-perf", "--", "true"],
    );
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.contains("--exclude-perf follows no -e"), "{err}");
}

// ---- Live: root, tracefs and perf. ----

/// Root, a readable tracefs with the syscall tracepoints, perf and a C compiler, or why not.
fn live() -> Option<&'static str> {
    if !support::privilege::is_root() {
        eprintln!("skipped: recording tracepoints needs root here");
        return None;
    }
    if !Path::new("/sys/kernel/tracing/events/syscalls/sys_enter_openat/id").exists() {
        eprintln!("skipped: no tracefs with syscall tracepoints at /sys/kernel/tracing");
        return None;
    }
    support::perf()
}

/// `tests/fixtures/trace/calls.c` built into `dir`.
fn calls(dir: &Path) -> Option<PathBuf> {
    support::stacks::build(dir, "trace/calls.c", &[])
}

/// Samples per event of a recording, from `script -F event` of `tool`.
fn per_event(tool: &str, dir: &Path, file: &str) -> Vec<(String, usize)> {
    let o = Command::new(tool)
        .args(["script", "-F", "event", "-i", file])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{tool} script: {}", text(&o).1);
    let mut counts: Vec<(String, usize)> = Vec::new();
    for l in text(&o).0.lines() {
        let name = l.trim().trim_end_matches(':').to_string();
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some(c) => c.1 += 1,
            None => counts.push((name, 1)),
        }
    }
    counts.sort();
    counts
}

fn run_in(dir: &Path, tool: &str, args: &[&str]) -> String {
    let o = Command::new(tool)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{tool} {args:?}: {err}");
    out
}

const N: usize = 6;

#[test]
fn samples_per_event_are_perfs_on_known_calls() {
    let Some(perf) = live() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(prog) = calls(d) else { return };
    let prog = prog.to_str().unwrap();
    let n = N.to_string();
    let events = "syscalls:sys_enter_openat,syscalls:sys_enter_write,\
                  syscalls:sys_enter_clock_nanosleep,syscalls:sys_enter_nanosleep,\
                  syscalls:sys_enter_futex,sched:sched_process_exit,signal:signal_generate,\
                  signal:signal_deliver";
    run_in(
        d,
        perf,
        &[
            "record",
            "-q",
            "-e",
            events,
            "-o",
            "perf.data",
            "--",
            prog,
            &n,
        ],
    );
    run_in(
        d,
        HREC,
        &["record", "-q", "-e", events, "-o", "t.hrec", "--", prog, &n],
    );
    let theirs = per_event(perf, d, "perf.data");
    let ours = per_event(HREC, d, "t.hrec");
    assert_eq!(ours, theirs);
    let count = |name: &str| ours.iter().find(|(n, _)| n == name).map_or(0, |(_, c)| *c);
    // What the program makes exactly (the loader's opens come on top of its own).
    assert_eq!(count("syscalls:sys_enter_write"), 2 * N + 1);
    assert_eq!(count("syscalls:sys_enter_clock_nanosleep"), N);
    assert_eq!(count("syscalls:sys_enter_nanosleep"), N);
    assert_eq!(count("syscalls:sys_enter_futex"), N);
    assert_eq!(count("sched:sched_process_exit"), 2);
    assert_eq!(count("signal:signal_deliver"), 1);
    assert!(count("syscalls:sys_enter_openat") > N);
    // hrec reads perf's file the same.
    assert_eq!(per_event(HREC, d, "perf.data"), theirs);
}

#[test]
fn a_filter_keeps_exactly_the_matching_hits() {
    let Some(perf) = live() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(prog) = calls(d) else { return };
    let prog = prog.to_str().unwrap();
    let n = N.to_string();
    let args = |out: &'static str| {
        vec![
            "record",
            "-q",
            "-e",
            "syscalls:sys_enter_write",
            "--filter",
            "count == 3",
            "-e",
            "syscalls:sys_enter_nanosleep",
            "-o",
            out,
            "--",
            prog,
            &n,
        ]
    };
    run_in(d, perf, &args("perf.data"));
    run_in(d, HREC, &args("t.hrec"));
    let ours = per_event(HREC, d, "t.hrec");
    assert_eq!(ours, per_event(perf, d, "perf.data"));
    assert_eq!(
        ours,
        [
            ("syscalls:sys_enter_nanosleep".to_string(), N),
            ("syscalls:sys_enter_write".to_string(), N)
        ]
    );
    // A filter the kernel cannot read: one line naming the event's fields.
    let o = Command::new(HREC)
        .args([
            "record",
            "-q",
            "-e",
            "syscalls:sys_enter_write",
            "--filter",
            "cnt == 3",
            "-o",
            "bad.hrec",
            "--",
            prog,
            "1",
        ])
        .current_dir(d)
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("the kernel refused --filter 'cnt == 3' on syscalls:sys_enter_write")
            && err.contains("its fields: __syscall_nr, fd, buf, count"),
        "{err}"
    );
}

#[test]
fn globs_expand_to_perfs_events_in_perfs_order() {
    let Some(perf) = live() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let glob = "sched:sched_process_*,syscalls:sys_enter_open*";
    run_in(
        d,
        perf,
        &["record", "-q", "-e", glob, "-o", "perf.data", "--", "true"],
    );
    let theirs = run_in(d, perf, &["evlist", "-i", "perf.data"]);
    let theirs: Vec<&str> = theirs
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    let ours = run_in(d, HREC, &["record", "--dry-run", "-e", glob, "--", "true"]);
    let ours: Vec<&str> = ours
        .lines()
        .filter_map(|l| l.strip_prefix("event #"))
        .map(|l| l.split(' ').nth(1).unwrap().trim_end_matches(':'))
        .collect();
    assert!(ours.len() > 4, "{ours:?}");
    assert_eq!(ours, theirs);
}

#[test]
fn stat_counts_tracepoints_as_perf_stat() {
    let Some(perf) = live() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(prog) = calls(d) else { return };
    let prog = prog.to_str().unwrap();
    let n = N.to_string();
    let events = "syscalls:sys_enter_write,syscalls:sys_enter_futex,sched:sched_process_exit";
    // Both print the counts to stderr.
    let counts = |tool: &str| -> Vec<(String, u64)> {
        let o = Command::new(tool)
            .args(["stat", "-x", ",", "-e", events, "--", prog, &n])
            .current_dir(d)
            .output()
            .unwrap();
        assert!(o.status.success(), "{tool} stat: {}", text(&o).1);
        text(&o)
            .1
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                Some((f.get(2)?.to_string(), f.first()?.parse().ok()?))
            })
            .collect()
    };
    let ours = counts(HREC);
    assert_eq!(ours, counts(perf));
    assert_eq!(
        ours,
        [
            ("syscalls:sys_enter_write".to_string(), 2 * N as u64 + 1),
            ("syscalls:sys_enter_futex".to_string(), N as u64),
            ("sched:sched_process_exit".to_string(), 2),
        ]
    );
}

/// The common subsystems' events, as many as this kernel has.
const COMMON: &str = "sched:sched_switch,sched:sched_wakeup,sched:sched_waking,\
    sched:sched_process_fork,sched:sched_process_exec,sched:sched_process_exit,\
    signal:signal_generate,signal:signal_deliver,timer:hrtimer_start,\
    timer:hrtimer_expire_entry,timer:hrtimer_cancel,irq:softirq_entry,irq:softirq_raise,\
    irq:softirq_exit,raw_syscalls:sys_enter,raw_syscalls:sys_exit,syscalls:sys_enter_openat,\
    syscalls:sys_exit_openat,syscalls:sys_enter_write,syscalls:sys_exit_write,\
    syscalls:sys_enter_futex,syscalls:sys_enter_clock_nanosleep,kmem:kmalloc,kmem:kfree,\
    block:block_rq_issue,block:block_rq_complete";

/// A shell line running the calls fixture and a few direct writes (block requests) in `d`.
fn busy_line(d: &Path, prog: &str) -> String {
    format!(
        "{prog} 4; dd if=/dev/zero of={} bs=4k count=8 oflag=direct 2>/dev/null; sync",
        d.join("dd.out").display()
    )
}

/// Every line of `perf script` and `hrec script` on perf's own perf.data, the same.
fn same_script(d: &Path, perf: &str, file: &str, args: &[&str]) {
    let mut a = vec!["script", "-i", file];
    a.extend_from_slice(args);
    let theirs = run_in(d, perf, &a);
    let ours = run_in(d, HREC, &a);
    assert!(theirs.lines().count() >= 10, "{theirs}");
    let differ = theirs.lines().zip(ours.lines()).find(|(t, o)| t != o);
    assert!(
        theirs == ours,
        "{file} {args:?}: {} lines from perf, {} from hrec; first that differs:\n{differ:?}",
        theirs.lines().count(),
        ours.lines().count()
    );
}

#[test]
fn script_prints_perfs_lines_for_the_common_subsystems() {
    let Some(perf) = live() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(prog) = calls(d) else { return };
    let line = busy_line(d, prog.to_str().unwrap());
    // System-wide: every CPU's timers, interrupts and scheduling too.
    run_in(
        d,
        perf,
        &[
            "record", "-q", "-a", "-e", COMMON, "-o", "all.data", "--", "sh", "-c", &line,
        ],
    );
    same_script(d, perf, "all.data", &[]);
    same_script(d, perf, "all.data", &["-F", "event,trace"]);
    // report --sort trace: perf's rows, in perf's order; and by fields.
    let rows = same_trace_report(d, perf, "all.data", &["-F", "overhead,trace"]);
    assert!(rows > 50, "{rows}");
    let cells = same_field_report(d, perf, "all.data", "prev_comm,next_comm,prev_state");
    assert!(cells > 50, "{cells}");
    // With call chains, of the workload alone, and as a pipe.
    run_in(
        d,
        perf,
        &[
            "record", "-q", "-g", "-e", COMMON, "-o", "g.data", "--", "sh", "-c", &line,
        ],
    );
    // The sample lines (and their fields) the same; the frame-pointer chains under them perf's
    // but for the naming differences the README lists.
    let args = ["script", "-i", "g.data"];
    let m =
        support::stacks::compare_default_stacks(&run_in(d, perf, &args), &run_in(d, HREC, &args));
    assert!(m.samples > 20, "{m:?}");
    assert_eq!(m.same, m.samples, "{m:?}");
    let pipe = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{perf} record -q -e syscalls:sys_enter_write,sched:sched_process_exit -o - -- sh -c '{line}' > pipe.data"
        ))
        .current_dir(d)
        .status()
        .unwrap();
    assert!(pipe.success());
    same_script(d, perf, "pipe.data", &[]);
}

/// One event's table of a `report --stdio`: its name, the column headers and the rows' cells,
/// cut where the dotted rule's runs are (a right-aligned cell may be empty), and the width
/// of each column's rule.
type Cells = (String, Vec<String>, Vec<Vec<String>>, Vec<usize>);

fn table_cells(report: &str) -> Vec<Cells> {
    let mut tables: Vec<Cells> = Vec::new();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let cut = |l: &str, spans: &[(usize, usize)]| -> Vec<String> {
        let chars: Vec<char> = l.chars().collect();
        spans
            .iter()
            .enumerate()
            .map(|(i, &(a, b))| {
                let end = if i + 1 == spans.len() { chars.len() } else { b };
                chars
                    .get(a.min(chars.len())..end.min(chars.len()))
                    .map_or(String::new(), |c| {
                        c.iter().collect::<String>().trim().to_string()
                    })
            })
            .collect()
    };
    let mut head_line = String::new();
    for l in report.lines() {
        if let Some(rest) = l.strip_prefix("# Samples: ") {
            let name = rest.split('\'').nth(1).unwrap_or_default().to_string();
            tables.push((name, Vec::new(), Vec::new(), Vec::new()));
        } else if l.starts_with("# ....") {
            spans.clear();
            let mut start = None;
            for (i, c) in l.chars().enumerate().chain([(l.chars().count(), ' ')]) {
                match (c == '.', start) {
                    (true, None) => start = Some(i),
                    (false, Some(a)) => {
                        spans.push((a, i));
                        start = None;
                    }
                    _ => {}
                }
            }
            if let Some(t) = tables.last_mut() {
                t.1 = cut(&head_line, &spans);
                t.3 = spans.iter().map(|(a, b)| b - a).collect();
            }
        } else if l.starts_with("# Overhead") {
            head_line = l.to_string();
        } else if !l.starts_with('#') && !l.trim().is_empty() {
            let cells = cut(l, &spans);
            if let Some(t) = tables.last_mut() {
                t.2.push(cells);
            }
        }
    }
    tables
}

/// The event names of tables, in order.
fn names(t: &[Cells]) -> Vec<String> {
    t.iter().map(|t| t.0.clone()).collect()
}

/// `perf report --stdio --sort trace` and hrec's on the same perf.data: the same tables, rows
/// in the same order with the same overhead and text. perf 6.1 cuts a row's text at the
/// column's width when it never compared that row with another (a table of one row: its
/// width is then the header's, `sig=10 errno`); such a row may be a prefix of hrec's.
fn same_trace_report(d: &Path, perf: &str, file: &str, ours_args: &[&str]) -> usize {
    let theirs = table_cells(&run_in(
        d,
        perf,
        &["report", "--stdio", "--sort", "trace", "-i", file],
    ));
    let mut a = vec!["report", "--stdio", "-i", file];
    a.extend_from_slice(ours_args);
    let ours = table_cells(&run_in(d, HREC, &a));
    assert_eq!(names(&ours), names(&theirs));
    let mut rows = 0;
    for ((name, _, t, widths), (_, _, o, _)) in theirs.iter().zip(&ours) {
        assert_eq!(t.len(), o.len(), "{name}: rows");
        let width = widths.last().copied().unwrap_or(0);
        for (t, o) in t.iter().zip(o) {
            let (tt, ot) = (t.last().unwrap(), o.last().unwrap());
            let cut = tt.chars().count() == width && ot.starts_with(tt.as_str());
            assert!(
                t[0] == o[0] && (tt == ot || cut),
                "{name}: perf {t:?}, hrec {o:?}"
            );
            rows += 1;
        }
    }
    rows
}

/// `perf report --stdio --sort KEYS` and `hrec report --stdio -F overhead,KEYS` on the same
/// perf.data, with tracepoint fields among the keys: the same tables, columns and rows in the
/// same order. perf takes a field's value from the event's text, from the word that *begins*
/// with the field's name, so `fd: 0x3` gives it an empty cell where hrec prints the field; and
/// perf cuts a value at its column's width (`ARRAY[...]`): there hrec's cell may hold more.
fn same_field_report(d: &Path, perf: &str, file: &str, keys: &str) -> usize {
    let theirs = table_cells(&run_in(
        d,
        perf,
        &["report", "--stdio", "--sort", keys, "-i", file],
    ));
    let fields = format!("overhead,{keys}");
    let ours = table_cells(&run_in(
        d,
        HREC,
        &["report", "--stdio", "-F", &fields, "-i", file],
    ));
    assert_eq!(names(&ours), names(&theirs));
    let mut cells = 0;
    for ((name, th, t, _), (_, oh, o, _)) in theirs.iter().zip(&ours) {
        assert_eq!(th, oh, "{name}: columns");
        assert_eq!(t.len(), o.len(), "{name}: rows");
        for (t, o) in t.iter().zip(o) {
            for (tc, oc) in t.iter().zip(o) {
                assert!(
                    tc == oc || tc.is_empty() || oc.starts_with(tc.as_str()),
                    "{name}: perf {t:?}, hrec {o:?}"
                );
                cells += usize::from(tc == oc && !tc.is_empty());
            }
        }
    }
    cells
}

#[test]
fn report_sorts_by_tracepoint_fields_as_perf() {
    let Some(perf) = support::perf() else { return };
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/recordings");
    let file = "trace-calls.perf.data";
    // Every field of every event; one field of the events that have it; one event's; its
    // N-th event's all.
    assert!(same_field_report(&d, perf, file, "trace_fields") > 30);
    assert!(same_field_report(&d, perf, file, "comm,sig") > 10);
    assert!(same_field_report(&d, perf, file, "sched:sched_process_exit.pid") > 5);
    assert!(same_field_report(&d, perf, file, "%6.*") > 5);
    // Where perf's cell is empty (`fd: 0x..` in the text), hrec's holds the field.
    let ours = run_in(
        &d,
        HREC,
        &[
            "report",
            "--stdio",
            "--sort",
            "sys_enter_write.fd,count",
            "-i",
            file,
        ],
    );
    assert!(
        ours.contains("60.00%        3                   3                   5"),
        "{ours}"
    );
    // Bad keys, one line each.
    for (key, says) in [
        (
            "prev_comm",
            "no tracepoint of the recording has a field prev_comm",
        ),
        (
            "sched_process_exit.nope",
            "its fields are comm, pid, prio, group_dead",
        ),
        (
            "nosuch:event.pid",
            "the recording has no event nosuch:event",
        ),
        ("pid/raw", "leave out /raw"),
    ] {
        let o = Command::new(HREC)
            .args(["report", "--stdio", "--sort", key, "-i", file])
            .current_dir(&d)
            .output()
            .unwrap();
        let (_, err) = text(&o);
        assert!(!o.status.success(), "{key}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{key}: {err}");
    }
}

#[test]
fn report_sorts_a_tracepoint_recording_by_its_text_as_perf() {
    let Some(perf) = support::perf() else { return };
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/recordings");
    let file = "trace-calls.perf.data";
    // A recording of tracepoints alone sorts by `trace` without being told (perf's default).
    let rows = same_trace_report(&d, perf, file, &["-F", "overhead,trace"]);
    assert_eq!(rows, 9);
    let default = run_in(&d, HREC, &["report", "--stdio", "-i", file]);
    assert!(default.contains("Trace output"), "{default}");
    assert!(
        default.contains("comm=calls pid=8136 prio=120 group_dead=true"),
        "{default}"
    );
    // Asked for by name beside other keys.
    let both = run_in(
        &d,
        HREC,
        &["report", "--stdio", "--sort", "comm,trace", "-i", file],
    );
    assert!(both.contains("calls    0x5"), "{both}");
    let json = run_in(
        &d,
        HREC,
        &["report", "--json", "--sort", "trace", "-i", file],
    );
    assert!(
        json.contains("\"trace\": \"sig=10 errno=0 code=0"),
        "{json}"
    );
}

/// perf's off-CPU recipe (`sched:sched_switch -g --switch-events`), which hrec reads for
/// off-CPU time: its sched_switch samples print as perf prints them, fields and chains; hrec
/// adds only the `offcpu-time` samples it pairs from the switch records.
#[test]
fn switch_recordings_print_the_switch_fields() {
    let Some(perf) = live() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    run_in(
        d,
        perf,
        &[
            "record",
            "-q",
            "-e",
            "sched:sched_switch",
            "-g",
            "--switch-events",
            "-o",
            "sw.data",
            "--",
            "sh",
            "-c",
            "sleep 0.05; ls >/dev/null; sleep 0.02",
        ],
    );
    let theirs = run_in(d, perf, &["script", "-i", "sw.data"]);
    let ours = run_in(d, HREC, &["script", "-i", "sw.data"]);
    // Samples are a line each, their chains lines below it: drop hrec's offcpu-time samples
    // with their chains.
    let mut kept = Vec::new();
    let mut skipping = false;
    for l in ours.lines() {
        if !l.starts_with(char::is_whitespace) && !l.is_empty() {
            skipping = l.contains(" offcpu-time: ");
        }
        if !skipping {
            kept.push(l);
        }
    }
    assert!(theirs.contains("prev_comm="), "{theirs}");
    // The same sample lines, and chains the same but for the README's naming differences (a
    // return address at the next function's first byte is its caller's in hrec).
    let mut ours = kept.join("\n");
    ours.push('\n');
    let m = support::stacks::compare_default_stacks(&theirs, &ours);
    assert!(m.samples > 3, "{m:?}");
    assert_eq!(m.same, m.samples, "{m:?}");
}

/// hrec's own recording prints what perf's of the same workload prints, for the fields that
/// do not change between runs (return values).
#[test]
fn hrec_recordings_print_their_fields() {
    let Some(perf) = live() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(prog) = calls(d) else { return };
    let prog = prog.to_str().unwrap();
    let n = N.to_string();
    let events = "syscalls:sys_exit_write,syscalls:sys_exit_nanosleep,syscalls:sys_exit_futex";
    run_in(
        d,
        perf,
        &[
            "record",
            "-q",
            "-e",
            events,
            "-o",
            "perf.data",
            "--",
            prog,
            &n,
        ],
    );
    run_in(
        d,
        HREC,
        &["record", "-q", "-e", events, "-o", "t.hrec", "--", prog, &n],
    );
    let theirs = run_in(d, perf, &["script", "-F", "event,trace", "-i", "perf.data"]);
    let ours = run_in(d, HREC, &["script", "-F", "event,trace", "-i", "t.hrec"]);
    assert_eq!(ours, theirs);
    assert!(ours.contains("syscalls:sys_exit_write: 0x5"), "{ours}");
}

/// As an unprivileged user, where tracefs is root's (its default mode): one line saying so,
/// for record and stat alike (perf says "can't access trace events").
#[test]
fn an_unprivileged_user_gets_one_line_for_what_it_cannot_trace() {
    use std::os::unix::fs::PermissionsExt;
    if live().is_none() {
        return;
    }
    let mode = std::fs::metadata("/sys/kernel/tracing").map(|m| m.permissions().mode());
    if mode.is_ok_and(|m| m & 0o005 != 0) {
        eprintln!("skipped: /sys/kernel/tracing is readable by others here");
        return;
    }
    let Some(prefix) = support::privilege::unprivileged("an unreadable tracefs") else {
        return;
    };
    let dir = support::privilege::open_tempdir();
    for args in [
        &[
            "record",
            "-e",
            "syscalls:sys_enter_write",
            "-o",
            "x.hrec",
            "--",
            "true",
        ][..],
        &["stat", "-e", "syscalls:sys_enter_write", "--", "true"],
    ] {
        let o = support::privilege::command_as(&prefix, HREC)
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let (_, err) = text(&o);
        assert!(!o.status.success(), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("is readable by root only"), "{err}");
    }
    kernel_tracepoints_are_refused_not_counted_as_zero(&prefix, dir.path());
}

/// Puts back what a test changed (tracefs' mount mode, files' modes, the paranoid level),
/// even when it fails.
struct Restore(Vec<Box<dyn FnMut()>>);

impl Drop for Restore {
    fn drop(&mut self) {
        for f in self.0.iter_mut().rev() {
            f();
        }
    }
}

/// Where tracefs and two events' files are readable by others and the paranoid level is 2
/// (perf's fallback then counts user space only): a tracepoint that fires in the kernel is
/// refused in one line, for stat and record (perf stat prints 0 for it), and a system call's
/// event, which fires with the user's registers, counts what perf counts.
fn kernel_tracepoints_are_refused_not_counted_as_zero(prefix: &[&str], dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Some(perf) = support::perf() else { return };
    let tracefs = Path::new("/sys/kernel/tracing");
    let mut restore = Restore(Vec::new());
    let mode = std::fs::metadata(tracefs).unwrap().permissions().mode() & 0o7777;
    let remount = |m: u32| {
        Command::new("mount")
            .args(["-o", &format!("remount,mode={m:o}"), "/sys/kernel/tracing"])
            .status()
            .is_ok_and(|s| s.success())
    };
    if !remount(0o755) {
        eprintln!("skipped: cannot remount /sys/kernel/tracing");
        return;
    }
    restore.0.push(Box::new(move || {
        remount(mode);
    }));
    for e in ["sched/sched_process_exec", "syscalls/sys_enter_write"] {
        for f in ["id", "format"] {
            let path = tracefs.join("events").join(e).join(f);
            let old = std::fs::metadata(&path).unwrap().permissions();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
            restore.0.push(Box::new(move || {
                let _ = std::fs::set_permissions(&path, old.clone());
            }));
        }
    }
    let knob = "/proc/sys/kernel/perf_event_paranoid";
    let level = std::fs::read_to_string(knob).unwrap();
    std::fs::write(knob, "2").unwrap();
    restore.0.push(Box::new(move || {
        let _ = std::fs::write(knob, &level);
    }));
    let run = |tool: &str, args: &[&str]| {
        support::privilege::command_as(prefix, tool)
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap()
    };
    let kernel = "sched:sched_process_exec";
    for args in [
        &["stat", "-e", kernel, "--", "true"][..],
        &["record", "-e", kernel, "-o", "k.hrec", "--", "true"],
    ] {
        let o = run(HREC, args);
        let (_, err) = text(&o);
        assert!(!o.status.success(), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("fires in the kernel"), "{err}");
    }
    let theirs = text(&run(perf, &["stat", "-x,", "-e", kernel, "--", "true"])).1;
    assert!(theirs.starts_with("0,"), "perf stat counts 0: {theirs}");
    // A system call's event counts as perf counts it (echo writes once).
    let args = [
        "stat",
        "-x,",
        "-e",
        "syscalls:sys_enter_write",
        "--",
        "/bin/echo",
        "hi",
    ];
    let ours = run(HREC, &args);
    let theirs = run(perf, &args);
    let first = |o: &Output| {
        text(o)
            .1
            .lines()
            .find(|l| l.contains(','))
            .map(|l| l.split(',').next().unwrap_or_default().to_string())
    };
    assert!(ours.status.success(), "{}", text(&ours).1);
    assert_eq!(first(&ours), Some("1".to_string()), "{}", text(&ours).1);
    assert_eq!(first(&ours), first(&theirs));
}

/// `hrec probe` makes perf's probes: the line perf writes, listed by `perf probe --list`, one
/// sample per call at entry and at return; hrec records perf's probes, and prints their
/// samples as perf does. A kernel without kprobe events gets one line.
#[test]
fn probes_are_perfs_and_perfs_are_hrecs() {
    let Some(perf) = live() else { return };
    let uprobes = Path::new("/sys/kernel/tracing/uprobe_events");
    if !uprobes.exists() {
        eprintln!("skipped: this kernel has no uprobe_events");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(built) = calls(d) else { return };
    // A name of its own: its probes' group, probe_callsp, is this test's alone.
    let bin = d.join("callsp");
    std::fs::copy(&built, &bin).unwrap();
    let bin_s = bin.to_str().unwrap();
    let n = N.to_string();
    let probe = |tool: &str, args: &[&str]| {
        let mut a = vec!["probe"];
        a.extend_from_slice(args);
        Command::new(tool).args(&a).current_dir(d).output().unwrap()
    };
    let clean = || {
        let _ = probe(HREC, &["--del", "probe_callsp:*"]);
    };
    let lines = || -> Vec<String> {
        std::fs::read_to_string(uprobes)
            .unwrap()
            .lines()
            .filter(|l| l.contains("probe_callsp/"))
            .map(str::to_string)
            .collect()
    };
    clean();
    // The line perf writes, then hrec's.
    let perf_list = || -> String {
        text(&probe(perf, &["--list"]))
            .0
            .lines()
            .filter(|l| l.contains("probe_callsp:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let o = probe(perf, &["-x", bin_s, "probe_me"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let (theirs, their_list) = (lines(), perf_list());
    clean();
    let o = probe(HREC, &["-x", bin_s, "probe_me"]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(lines(), theirs);
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    // perf lists hrec's probe as its own.
    assert_eq!(perf_list(), their_list);
    assert!(their_list.contains("probe_callsp:probe_me"), "{their_list}");
    let o = probe(HREC, &["-x", bin_s, "probe_me%return"]);
    assert!(o.status.success(), "{}", text(&o).1);
    // One sample per call, at entry and at return.
    let events = "probe_callsp:probe_me,probe_callsp:probe_me__return";
    run_in(
        d,
        HREC,
        &[
            "record", "-q", "-e", events, "-o", "p.hrec", "--", bin_s, &n,
        ],
    );
    assert_eq!(
        per_event(HREC, d, "p.hrec"),
        [
            ("probe_callsp:probe_me".to_string(), N),
            ("probe_callsp:probe_me__return".to_string(), N)
        ]
    );
    // perf records them too, and hrec prints perf's file as perf does.
    run_in(
        d,
        perf,
        &[
            "record", "-q", "-e", events, "-o", "p.data", "--", bin_s, &n,
        ],
    );
    same_script(d, perf, "p.data", &[]);
    // A probe perf made, recorded by hrec.
    clean();
    assert!(lines().is_empty());
    let o = probe(perf, &["-x", bin_s, "probe_me"]);
    assert!(o.status.success(), "{}", text(&o).1);
    run_in(
        d,
        HREC,
        &[
            "record",
            "-q",
            "-e",
            "probe_callsp:probe_me",
            "-o",
            "q.hrec",
            "--",
            bin_s,
            &n,
        ],
    );
    assert_eq!(
        per_event(HREC, d, "q.hrec"),
        [("probe_callsp:probe_me".to_string(), N)]
    );
    clean();
    assert!(lines().is_empty());
    // No kprobe events in this kernel: one line.
    if !Path::new("/sys/kernel/tracing/kprobe_events").exists() {
        let o = probe(HREC, &["do_sys_openat2"]);
        let (_, err) = text(&o);
        assert!(!o.status.success());
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("has no kprobe_events"), "{err}");
    }
}
