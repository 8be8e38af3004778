//! `record --off-cpu` on the real kernel: a workload that blocks for times it measures itself
//! (`examples/offcpu.rs`), its off-CPU time per blocking function from the `offcpu-time`
//! event, checked against the program's own figures and against perf's records of the same
//! workload (`sched:sched_switch` samples paired with perf's switch records, paired here from
//! `perf script`'s text); preempted time never counted as blocked; and the intervals alone,
//! with one line, where the stacks are refused.

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use support::privilege::{command_as, open_tempdir, unprivileged};
use support::{hrec_in, release_example, text};

/// The program's own figures: function → (calls, ms).
fn figures(stdout: &str) -> HashMap<String, (u64, f64)> {
    stdout
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w[..] {
                ["blocked", name, "calls", n, "ms", ms] => {
                    Some((name.to_string(), (n.parse().ok()?, ms.parse().ok()?)))
                }
                _ => None,
            }
        })
        .collect()
}

/// `flamegraph --folded` of the `offcpu-time` event: (stack, weight) lines.
fn folded(dir: &Path, file: &str, weight: &str) -> Vec<(String, u64)> {
    let o = hrec_in(
        dir,
        &[
            "flamegraph",
            "-i",
            file,
            "--folded",
            "--event",
            "offcpu-time",
            "--weight",
            weight,
            "-o",
            "-",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    out.lines()
        .filter_map(|l| {
            let (stack, n) = l.rsplit_once(' ')?;
            Some((stack.to_string(), n.parse().ok()?))
        })
        .collect()
}

/// Off-CPU time under `frame` in folded lines: the blocked (not preempted) intervals, their
/// ms, and the ms of all of them, preempted ones too.
fn off_cpu_under(
    by_period: &[(String, u64)],
    by_samples: &[(String, u64)],
    frame: &str,
) -> (u64, f64, f64) {
    let under = |s: &str| s.split(';').any(|f| f == frame);
    let blocked = |s: &str| under(s) && !s.ends_with(";[preempted]");
    let ms = |keep: &dyn Fn(&str) -> bool| {
        by_period
            .iter()
            .filter(|(s, _)| keep(s))
            .map(|(_, n)| *n as f64 / 1e6)
            .sum::<f64>()
    };
    let n: u64 = by_samples
        .iter()
        .filter(|(s, _)| blocked(s))
        .map(|(_, n)| n)
        .sum();
    (n, ms(&blocked), ms(&under))
}

/// Whether `got` ms of `calls` intervals is the program's `want` ms: within 5%, or 1 ms per
/// interval. The program's figure is all the time inside the function, so it is compared with
/// all the off-CPU time under it: on a busy machine the thread is also preempted there (on its
/// way into or out of the wait), which is off-CPU time but not blocked time.
fn close(got: f64, want: f64, calls: u64) -> bool {
    (got - want).abs() <= (0.05 * want).max(calls as f64)
}

/// Kernel samples are allowed: root, or `perf_event_paranoid` 1 or lower.
fn kernel_samples_allowed() -> bool {
    support::privilege::is_root()
        || std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
            .is_some_and(|l| l <= 1)
}

/// perf's off-CPU time per frame name, from `perf script --show-switch-events` of a recording
/// of `sched:sched_switch` with call chains: each thread's switch-out to its next switch-in,
/// attributed to every distinct frame of the thread's last `sched:sched_switch` sample since
/// it last took a CPU; per frame the blocked intervals (perf prints `OUT preempt` for the
/// others) and the ms of all.
fn perf_off_cpu(script: &str) -> HashMap<String, (u64, f64)> {
    let ns_of = |t: &str| -> Option<u64> {
        let (s, frac) = t.trim_end_matches(':').split_once('.')?;
        Some(s.parse::<u64>().ok()? * 1_000_000_000 + frac.parse::<u64>().ok()?)
    };
    let mut stacks: HashMap<u32, Vec<String>> = HashMap::new();
    let mut outs: HashMap<u32, (u64, bool)> = HashMap::new();
    let mut current: Option<u32> = None;
    let mut out: HashMap<String, (u64, f64)> = HashMap::new();
    for line in script.lines() {
        if line.starts_with('\t') {
            if let (Some(tid), Some(sym)) = (current, line.split_whitespace().nth(1)) {
                stacks.entry(tid).or_default().push(sym.to_string());
            }
            continue;
        }
        current = None;
        let w: Vec<&str> = line.split_whitespace().collect();
        let (Some(tid), Some(time)) = (
            w.first().and_then(|t| t.parse::<u32>().ok()),
            w.get(1).and_then(|t| ns_of(t)),
        ) else {
            continue;
        };
        if line.contains("sched:sched_switch:") {
            stacks.insert(tid, Vec::new());
            current = Some(tid);
        } else if line.contains("PERF_RECORD_SWITCH OUT") {
            outs.insert(tid, (time, line.contains("preempt")));
        } else if line.contains("PERF_RECORD_SWITCH IN") {
            let stack = stacks.remove(&tid).unwrap_or_default();
            if let Some((start, preempted)) = outs.remove(&tid) {
                let mut seen: Vec<&String> = Vec::new();
                for f in &stack {
                    if !seen.contains(&f) {
                        seen.push(f);
                        let e = out.entry(f.clone()).or_default();
                        e.0 += u64::from(!preempted);
                        e.1 += (time - start) as f64 / 1e6;
                    }
                }
            }
        }
    }
    out
}

/// Off-CPU time per blocking function: the program's figures, hrec's recording and perf's.
#[test]
fn off_cpu_time_per_blocking_function_matches_the_program_and_perf() {
    if !kernel_samples_allowed() {
        eprintln!(
            "skipped: off-CPU stacks need kernel samples (root or kernel.perf_event_paranoid <= 1)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = release_example("offcpu");
    let prog = prog.to_str().unwrap();
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "--off-cpu",
            "--call-graph",
            "dwarf",
            "-o",
            "o.hrec",
            "--",
            prog,
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let own = figures(&out);
    assert_eq!(own.len(), 4, "{out}");
    let period = folded(dir.path(), "o.hrec", "period");
    let samples = folded(dir.path(), "o.hrec", "samples");
    for f in ["nap", "take_lock", "join_sleepy"] {
        let (calls, ms) = own[f];
        let (n, _, got) = off_cpu_under(&period, &samples, &format!("offcpu::{f}"));
        assert_eq!(n, calls, "{f}: blocked intervals\n{period:#?}");
        assert!(
            close(got, ms, calls),
            "{f}: hrec {got:.3} ms, the program {ms:.3} ms"
        );
    }
    // Spinning is never blocked: whatever off-CPU time it has is preemption.
    let (_, spin, _) = off_cpu_under(&period, &samples, "offcpu::spin_phase");
    assert!(spin < 1.0, "spin_phase blocked {spin:.3} ms:\n{period:#?}");
    // The report has the event with the intervals' nanoseconds as its count.
    let r = hrec_in(dir.path(), &["report", "--stdio", "-i", "o.hrec"]);
    let (rout, _) = text(&r);
    assert!(rout.contains("of event 'offcpu-time'"), "{rout}");
    // Per thread (`report -T`, from the switch records alone): on-CPU + off-CPU is the span,
    // and the off-CPU time is the offcpu-time event's, thread by thread.
    let r = hrec_in(dir.path(), &["report", "--stdio", "-T", "-i", "o.hrec"]);
    let (rout, _) = text(&r);
    let at = rout.find("# Time per thread").expect("the thread times");
    let times: Vec<(String, [f64; 5])> = rout[at..]
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let v = |i: usize| w[i].parse::<f64>().unwrap();
            (w[1].to_string(), [v(2), v(3), v(4), v(5), v(6)])
        })
        .collect();
    assert!(times.len() >= 6, "main, 4 holders, sleepy:\n{rout}");
    let j = hrec_in(
        dir.path(),
        &["report", "--json", "--sort", "tid", "-i", "o.hrec"],
    );
    let j: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    let off = j["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "offcpu-time")
        .unwrap();
    for (tid, [on, off_ms, blocked, preempted, span]) in &times {
        assert!(
            (on + off_ms - span).abs() < 0.003,
            "{tid}: {on} + {off_ms} != {span}"
        );
        assert!((blocked + preempted - off_ms).abs() < 0.003, "{tid}");
        let ns: u64 = off["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["key"]["tid"] == tid.as_str())
            .map(|r| r["period"].as_u64().unwrap())
            .sum();
        assert!(
            (ns as f64 / 1e6 - off_ms).abs() < 0.001,
            "{tid}: offcpu-time {ns} ns, switch records {off_ms} ms"
        );
    }

    // `--off-cpu=blocked`: no preempted interval at all, the blocked ones as before.
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "--off-cpu=blocked",
            "--call-graph",
            "dwarf",
            "-o",
            "b.hrec",
            "--",
            prog,
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let own = figures(&out);
    let period = folded(dir.path(), "b.hrec", "period");
    let samples = folded(dir.path(), "b.hrec", "samples");
    assert!(
        !period.iter().any(|(s, _)| s.contains("[preempted]")),
        "{period:#?}"
    );
    let (calls, _) = own["nap"];
    let (n, blocked, all) = off_cpu_under(&period, &samples, "offcpu::nap");
    assert_eq!((n, blocked), (calls, all));

    // perf on the same workload: its switch records and sched_switch stacks, paired from its
    // own script output; and hrec reading perf's file into the same event.
    let tracefs = Path::new("/sys/kernel/tracing/events/sched/sched_switch");
    let perf_ok = Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !perf_ok || !tracefs.exists() {
        eprintln!("skipped the comparison with perf: no perf, or no tracefs sched_switch");
        return;
    }
    let o = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "sched:sched_switch",
            "--call-graph",
            "dwarf",
            "--switch-events",
            "-o",
            "p.data",
            "--",
            prog,
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let (pout, perr) = text(&o);
    assert!(o.status.success(), "{perr}");
    let own = figures(&pout);
    let script = Command::new("perf")
        .args([
            "script",
            "-i",
            "p.data",
            "--ns",
            "--show-switch-events",
            "-F",
            "tid,time,event,ip,sym",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let theirs = perf_off_cpu(&String::from_utf8_lossy(&script.stdout));
    let period = folded(dir.path(), "p.data", "period");
    let samples = folded(dir.path(), "p.data", "samples");
    for f in ["nap", "take_lock", "join_sleepy"] {
        let (calls, ms) = own[f];
        let frame = format!("offcpu::{f}");
        let (pn, pms) = theirs.get(&frame).copied().unwrap_or_default();
        assert_eq!(pn, calls, "{f}: perf's intervals");
        assert!(
            close(pms, ms, calls),
            "{f}: perf {pms:.3} ms, the program {ms:.3} ms"
        );
        let (n, _, got) = off_cpu_under(&period, &samples, &frame);
        assert_eq!(n, calls, "{f}: hrec on perf.data, intervals\n{period:#?}");
        assert!(
            close(got, pms, calls),
            "{f}: hrec on perf.data {got:.3} ms, perf {pms:.3} ms"
        );
    }
}

/// Without kernel samples (an unprivileged user at `perf_event_paranoid` 2) the stacks are
/// refused: one line says so and how to get them, and the intervals are still recorded, under
/// a `[no stack]` frame, with all the blocked time.
#[test]
fn without_kernel_samples_the_intervals_are_recorded_and_one_line_says_why() {
    let level = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    if level != Some(2) {
        eprintln!("skipped: perf_event_paranoid is {level:?}, not 2");
        return;
    }
    let Some(prefix) = unprivileged("off-CPU without kernel samples") else {
        return;
    };
    let dir = open_tempdir();
    let prog = release_example("offcpu");
    let o = command_as(&prefix, env!("CARGO_BIN_EXE_hrec"))
        .args(["record", "--off-cpu", "-o", "o.hrec", "--"])
        .arg(&prog)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("off-CPU stacks"))
        .collect();
    assert_eq!(
        lines,
        [
            "hrec: off-CPU stacks need kernel samples, which kernel.perf_event_paranoid=2 does not allow: recording the off-CPU intervals without their stacks (run as root, or sysctl -w kernel.perf_event_paranoid=1, for the stacks)"
        ],
        "{err}"
    );
    let own = figures(&out);
    let want: f64 = own.values().map(|(_, ms)| ms).sum();
    let period = folded(dir.path(), "o.hrec", "period");
    let no_stack: f64 = period
        .iter()
        .filter(|(s, _)| s.ends_with(";[no stack]"))
        .map(|(_, n)| *n as f64 / 1e6)
        .sum();
    assert!(
        no_stack >= 0.95 * want,
        "[no stack] {no_stack:.3} ms, the program blocked {want:.3} ms:\n{period:#?}"
    );
}

/// The program's wall-clock figure `ran WHAT ms X` (`spin_phase`, `main`).
fn ran(stdout: &str, what: &str) -> f64 {
    stdout
        .lines()
        .find_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            ["ran", w, "ms", ms] if w == what => ms.parse().ok(),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no `ran {what}` line in {stdout}"))
}

/// `hrec record -e cpu-clock --off-cpu --call-graph dwarf -o FILE -- offcpu SCALE` in `dir`:
/// the program's output.
fn record_offcpu(dir: &Path, file: &str, scale: &str) -> String {
    record_offcpu_with(dir, file, scale, &[])
}

/// [`record_offcpu`] with more options for `record`.
fn record_offcpu_with(dir: &Path, file: &str, scale: &str, extra: &[&str]) -> String {
    let prog = release_example("offcpu");
    let mut args = vec![
        "record",
        "-q",
        "-e",
        "cpu-clock",
        "--off-cpu",
        "--call-graph",
        "dwarf",
        "-o",
        file,
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", prog.to_str().unwrap(), scale]);
    let o = hrec_in(dir, &args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    out
}

/// Folded lines of `hrec flamegraph --folded ARGS -o -`.
fn folded_with(dir: &Path, args: &[&str]) -> Vec<(String, u64)> {
    let mut all = vec!["flamegraph", "--folded", "-o", "-"];
    all.extend_from_slice(args);
    let o = hrec_in(dir, &all);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{args:?}: {err}");
    out.lines()
        .filter_map(|l| {
            let (stack, n) = l.rsplit_once(' ')?;
            Some((stack.to_string(), n.parse().ok()?))
        })
        .collect()
}

/// `got` ms is the program's wall-clock `want` ms: within 3%, or 3 ms.
fn close_wall(got: f64, want: f64) -> bool {
    (got - want).abs() <= (0.03 * want).max(3.0)
}

/// `hrec report --json`'s total period of each event.
fn event_periods(dir: &Path, file: &str) -> HashMap<String, u64> {
    let o = hrec_in(dir, &["report", "--json", "-g", "none", "-i", file]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    j["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap().to_string(),
                e["period"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// `flamegraph --wall`: the on-CPU samples (cpu-clock periods, nanoseconds) and the off-CPU
/// intervals in one graph. Its lines are exactly the two events' own (the off-CPU ones with an
/// `[off-cpu]` frame at the leaf); each blocking function's off-CPU time is the program's; the
/// spin phase's on- plus off-CPU time is its wall-clock time as the program measured it, and so
/// is the main thread's, from the start of `main` to its end.
#[test]
fn wall_flame_graph_adds_on_and_off_cpu_time_to_the_programs_wall_clock_time() {
    if !kernel_samples_allowed() {
        eprintln!(
            "skipped: off-CPU stacks need kernel samples (root or kernel.perf_event_paranoid <= 1)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = record_offcpu(dir.path(), "w.hrec", "1");
    let own = figures(&out);
    let wall = folded_with(dir.path(), &["-i", "w.hrec", "--wall"]);
    let mut off_cpu = folded(dir.path(), "w.hrec", "period");
    let mut on_cpu = folded_with(
        dir.path(),
        &["-i", "w.hrec", "--event", "cpu-clock", "--weight", "period"],
    );
    // The two events' lines, the off-CPU ones ending in [off-cpu].
    type Lines = Vec<(String, u64)>;
    let (mut off, mut on): (Lines, Lines) = wall
        .iter()
        .cloned()
        .partition(|(s, _)| s.ends_with(";[off-cpu]"));
    for l in &mut off {
        l.0.truncate(l.0.len() - ";[off-cpu]".len());
    }
    for v in [&mut off, &mut on, &mut off_cpu, &mut on_cpu] {
        v.sort();
    }
    assert_eq!(off, off_cpu, "off-CPU lines");
    assert_eq!(on, on_cpu, "on-CPU lines");
    assert!(!on.is_empty() && !off.is_empty());
    // Off-CPU time per blocking function: the program's.
    let samples = folded(dir.path(), "w.hrec", "samples");
    for f in ["nap", "take_lock", "join_sleepy"] {
        let (calls, ms) = own[f];
        let frame = format!("offcpu::{f}");
        let (n, _, _) = off_cpu_under(&off_cpu, &samples, &frame);
        assert_eq!(n, calls, "{f}: blocked intervals");
        let got: f64 = wall
            .iter()
            .filter(|(s, _)| s.ends_with(";[off-cpu]") && s.split(';').any(|x| x == frame))
            .map(|(_, n)| *n as f64 / 1e6)
            .sum();
        assert!(
            close(got, ms, calls),
            "{f}: {got:.3} ms off the CPU, the program {ms:.3} ms"
        );
    }
    // Wall-clock time: where the program spun (on the CPU or preempted), and its main thread
    // inside `main`, which is what the program times (the loader before it and the exit after
    // it grow without bound on a loaded machine).
    let ms_where = |keep: &dyn Fn(&str) -> bool| -> f64 {
        wall.iter()
            .filter(|(s, _)| keep(s))
            .map(|(_, n)| *n as f64 / 1e6)
            .sum()
    };
    let spin = ms_where(&|s| s.split(';').any(|f| f == "offcpu::spin_phase"));
    let spin_on =
        ms_where(&|s| s.split(';').any(|f| f == "offcpu::spin_phase") && !s.ends_with("[off-cpu]"));
    let want = ran(&out, "spin_phase");
    assert!(
        close_wall(spin, want) && spin_on > 0.0,
        "spin_phase: {spin:.3} ms wall ({spin_on:.3} ms on the CPU), the program {want:.3} ms"
    );
    let main = ms_where(&|s| {
        s.split(';').next() == Some("offcpu") && s.split(';').any(|f| f == "offcpu::main")
    });
    let want = ran(&out, "main");
    assert!(
        close_wall(main, want),
        "the main thread: {main:.3} ms wall, the program ran {want:.3} ms"
    );

    // The SVG: hot/cold colours (the all-off-CPU frames blue) and the subtitle's note.
    let o = hrec_in(
        dir.path(),
        &["flamegraph", "-i", "w.hrec", "--wall", "-o", "w.svg"],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let svg = std::fs::read_to_string(dir.path().join("w.svg")).unwrap();
    assert!(svg.contains("[off-cpu] ("), "no [off-cpu] frame");
    assert!(svg.contains("rgb(60,120,220)"), "no blue frame");
    assert!(svg.contains("off-CPU stacks end in [off-cpu]"));
    // --wall with another weight, or on a recording without switch records: one line.
    let o = hrec_in(
        dir.path(),
        &[
            "flamegraph",
            "-i",
            "w.hrec",
            "--wall",
            "--weight",
            "samples",
        ],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let o = hrec_in(
        dir.path(),
        &["record", "-q", "-o", "plain.hrec", "--", "true"],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let o = hrec_in(dir.path(), &["flamegraph", "-i", "plain.hrec", "--wall"]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert_eq!(
        err.trim(),
        "hrec: error: --wall needs off-CPU time: the recording has no switch records (record with --off-cpu, or perf record --switch-events)"
    );
}

/// The pprof export of an `--off-cpu` recording: the off-CPU time is the column `off_cpu` in
/// nanoseconds beside `cpu`; per blocking function its intervals and time are the program's,
/// and each column adds up to its event's total in the report.
#[test]
fn pprof_export_has_off_cpu_nanoseconds_beside_cpu() {
    if !kernel_samples_allowed() {
        eprintln!(
            "skipped: off-CPU stacks need kernel samples (root or kernel.perf_event_paranoid <= 1)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let own = figures(&record_offcpu(dir.path(), "o.hrec", "1"));
    let o = hrec_in(
        dir.path(),
        &[
            "export", "--format", "pprof", "-i", "o.hrec", "-o", "o.pb.gz",
        ],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let pb = support::read_pprof(&dir.path().join("o.pb.gz"));
    let s = |i: i64| pb.string_table[i as usize].as_str();
    let types: Vec<(&str, &str)> = pb
        .sample_type
        .iter()
        .map(|v| (s(v.r#type), s(v.unit)))
        .collect();
    assert_eq!(
        types,
        [
            ("cpu", "nanoseconds"),
            ("off_cpu", "nanoseconds"),
            ("samples", "count")
        ]
    );
    let totals = event_periods(dir.path(), "o.hrec");
    for (c, event) in [(0, "cpu-clock"), (1, "offcpu-time")] {
        let sum: i64 = pb.sample.iter().map(|x| x.value[c]).sum();
        assert_eq!(sum as u64, totals[event], "{event}");
    }
    // Per sample: its functions, leaf first.
    let functions = |x: &hrec::output::pprof::proto::Sample| -> Vec<&str> {
        x.location_id
            .iter()
            .flat_map(|&l| &pb.location[l as usize - 1].line)
            .map(|line| s(pb.function[line.function_id as usize - 1].name))
            .collect()
    };
    for f in ["nap", "take_lock", "join_sleepy"] {
        let (calls, ms) = own[f];
        let frame = format!("offcpu::{f}");
        let under: Vec<_> = pb
            .sample
            .iter()
            .filter(|x| x.value[1] > 0 && functions(x).contains(&frame.as_str()))
            .collect();
        let blocked: i64 = under
            .iter()
            .filter(|x| functions(x)[0] != "[preempted]")
            .map(|x| x.value[2])
            .sum();
        let got: f64 = under.iter().map(|x| x.value[1] as f64 / 1e6).sum();
        assert_eq!(blocked as u64, calls, "{f}: blocked intervals");
        assert!(
            close(got, ms, calls),
            "{f}: off_cpu {got:.3} ms, the program {ms:.3} ms"
        );
    }
}

/// The Firefox export of an `--off-cpu` recording: one track per thread holding its cpu-clock
/// samples (CPU delta = period) and its off-CPU intervals (weight = ns, CPU delta 0, leaf in
/// the Off-CPU category, a sample of no weight where each ends); per blocking function the
/// intervals and time are the program's, and the main thread's weights add up to its
/// wall-clock time.
#[test]
fn firefox_export_puts_off_cpu_time_on_the_threads_track() {
    if !kernel_samples_allowed() {
        eprintln!(
            "skipped: off-CPU stacks need kernel samples (root or kernel.perf_event_paranoid <= 1)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Every interval a sample of its own, each drawn where it was.
    let out = record_offcpu_with(dir.path(), "o.hrec", "1", &["--off-cpu-thresh", "0"]);
    let own = figures(&out);
    let path = dir.path().join("o.json.gz");
    let o = hrec_in(
        dir.path(),
        &[
            "export",
            "--format",
            "firefox",
            "-i",
            "o.hrec",
            "-o",
            path.to_str().unwrap(),
        ],
    );
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("off-CPU intervals"), "{err}");
    let threads = support::check_processed_profile(&support::read_firefox(&path));
    // One track per thread, named by the thread alone.
    let mut ids: Vec<(&str, &str)> = threads
        .iter()
        .map(|t| (t.pid.as_str(), t.tid.as_str()))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), threads.len(), "a thread with two tracks");
    assert!(
        threads.iter().all(|t| !t.name.contains('[')),
        "{threads:#?}"
    );
    let totals = event_periods(dir.path(), "o.hrec");
    let weight: i64 = threads.iter().flat_map(|t| &t.weights).sum();
    assert_eq!(weight as u64, totals["cpu-clock"] + totals["offcpu-time"]);
    let mut intervals: HashMap<String, (u64, f64)> = HashMap::new();
    for t in &threads {
        let n = t.weights.len();
        for i in 0..n {
            let (w, cpu, cat) = (t.weights[i], t.cpu_deltas[i], t.categories[i].as_str());
            if cat != "Off-CPU" {
                // On the CPU: the clock's period, in µs.
                assert_eq!(
                    (w / 1000) as f64,
                    cpu,
                    "{}: CPU delta of a clock sample",
                    t.tid
                );
                continue;
            }
            assert_eq!(cpu, 0.0, "{}: an off-CPU sample with CPU time", t.tid);
            if w == 0 {
                continue;
            }
            // An interval: the next sample of the track is its end, with no weight.
            assert!(
                i + 1 < n,
                "{}: no end to the interval at {}",
                t.tid,
                t.times[i]
            );
            assert_eq!(
                (
                    t.weights[i + 1],
                    &t.stacks[i + 1],
                    t.categories[i + 1].as_str()
                ),
                (0, &t.stacks[i], "Off-CPU")
            );
            let end = t.times[i] + w as f64 / 1e6;
            assert!((t.times[i + 1] - end).abs() < 1e-5, "{}: end", t.tid);
            if t.pid == t.tid {
                let blocked = t.stacks[i][0] != "[preempted]";
                for f in ["nap", "take_lock", "join_sleepy"] {
                    if t.stacks[i].iter().any(|x| x == &format!("offcpu::{f}")) {
                        let e = intervals.entry(f.to_string()).or_default();
                        e.0 += u64::from(blocked);
                        e.1 += w as f64 / 1e6;
                    }
                }
            }
        }
    }
    for f in ["nap", "take_lock", "join_sleepy"] {
        let (calls, ms) = own[f];
        let (n, got) = intervals.get(f).copied().unwrap_or_default();
        assert_eq!(n, calls, "{f}: blocked intervals");
        assert!(
            close(got, ms, calls),
            "{f}: {got:.3} ms off the CPU, the program {ms:.3} ms"
        );
    }
    let main = threads
        .iter()
        .find(|t| t.pid == t.tid && t.name == "offcpu")
        .expect("the main thread");
    // The program times `main` alone; the track also has the process's start (the loader,
    // the runtime) and its exit, which grow without bound on a loaded machine (CI saw 9 ms
    // more): compare the samples and intervals inside `offcpu::main`.
    let in_main: i64 = main
        .weights
        .iter()
        .zip(&main.stacks)
        .filter(|(_, s)| s.iter().any(|f| f == "offcpu::main"))
        .map(|(w, _)| w)
        .sum();
    let wall = in_main as f64 / 1e6;
    let whole = main.weights.iter().sum::<i64>() as f64 / 1e6;
    let want = ran(&out, "main");
    assert!(
        close_wall(wall, want),
        "the main thread's track inside main: {wall:.3} ms ({whole:.3} ms in all), the program ran {want:.3} ms"
    );
}

/// `hrec diff` of two `--off-cpu` recordings (the workload at two scales) pairs their
/// `offcpu-time` events and shows nanoseconds: the note's totals and each row's periods are
/// the sums of each recording's own off-CPU samples (`hrec script`), `wdiff:1,1` their change.
#[test]
fn diff_pairs_off_cpu_time_and_shows_nanoseconds() {
    if !kernel_samples_allowed() {
        eprintln!(
            "skipped: off-CPU stacks need kernel samples (root or kernel.perf_event_paranoid <= 1)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    record_offcpu(dir.path(), "old.hrec", "0.5");
    record_offcpu(dir.path(), "new.hrec", "1");
    // Per leaf symbol, the off-CPU ns of a recording's samples.
    let by_sym = |file: &str| -> HashMap<String, u64> {
        let o = hrec_in(
            dir.path(),
            &["script", "-i", file, "-G", "-F", "event,period,ip,sym"],
        );
        let (out, err) = text(&o);
        assert!(o.status.success(), "{err}");
        let mut m = HashMap::new();
        for l in out.lines() {
            let w: Vec<&str> = l.split_whitespace().collect();
            if let [period, "offcpu-time:", _ip, sym @ ..] = &w[..] {
                *m.entry(sym.join(" ")).or_default() += period.parse::<u64>().unwrap();
            }
        }
        m
    };
    let (old, new) = (by_sym("old.hrec"), by_sym("new.hrec"));
    let (old_total, new_total): (u64, u64) = (old.values().sum(), new.values().sum());
    assert!(old_total > 0 && new_total > old_total, "{old:?} {new:?}");
    let o = hrec_in(
        dir.path(),
        &["diff", "-s", "sym", "--json", "old.hrec", "new.hrec"],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let t = j["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "offcpu-time")
        .expect("an offcpu-time table");
    assert_eq!(t["matched"], true);
    assert_eq!(t["old_total_period"].as_u64(), Some(old_total));
    assert_eq!(t["new_total_period"].as_u64(), Some(new_total));
    let mut rows = 0;
    for r in t["rows"].as_array().unwrap() {
        let sym = r["key"]["sym"].as_str().unwrap();
        let name = sym.split_once("] ").map_or(sym, |(_, n)| n);
        let period = |side: &str| r[side]["period"].as_u64().unwrap_or(0);
        assert_eq!(period("old"), old.get(name).copied().unwrap_or(0), "{sym}");
        assert_eq!(period("new"), new.get(name).copied().unwrap_or(0), "{sym}");
        rows += 1;
    }
    assert!(rows > 0);
    // The text table says the totals and their change in ns.
    let o = hrec_in(
        dir.path(),
        &[
            "diff",
            "-s",
            "sym",
            "-c",
            "wdiff:1,1",
            "old.hrec",
            "new.hrec",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let note = format!(
        "# (off-CPU time in ns: old {old_total} ns, new {new_total} ns, +{} ns;",
        new_total - old_total
    );
    assert!(out.contains(&note), "{note}\n{out}");
    let section = out.split("# Event 'offcpu-time'").nth(1).unwrap();
    let schedule_change = new.get("schedule").copied().unwrap_or(0) as i64
        - old.get("schedule").copied().unwrap_or(0) as i64;
    let line = section
        .lines()
        .find(|l| l.ends_with("[k] schedule"))
        .unwrap_or_else(|| panic!("no schedule row:\n{section}"));
    assert!(
        line.split_whitespace()
            .any(|w| w == schedule_change.to_string()),
        "schedule's change {schedule_change} ns: {line}"
    );
}

/// One switch storm at a time: on two CPUs, storms recorded side by side only slow each
/// other down.
static STORM: Mutex<()> = Mutex::new(());

/// The off-CPU line of a recording's summary or a report's header: `off-CPU: N intervals, ...`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct OffCpuLine {
    intervals: u64,
    aggregated: u64,
    aggregate_samples: u64,
    direct: u64,
}

fn off_cpu_line(text: &str) -> Option<OffCpuLine> {
    let l = text.lines().find(|l| l.contains("off-CPU: "))?;
    let w: Vec<&str> = l.split_whitespace().collect();
    let after = |word: &str, back: usize| -> Option<u64> {
        let at = w.iter().position(|x| *x == word)?;
        w.get(at.checked_sub(back)?)?.parse().ok()
    };
    Some(OffCpuLine {
        intervals: after("intervals,", 1)?,
        aggregated: after("under", 1).unwrap_or(0),
        aggregate_samples: w
            .iter()
            .position(|x| *x == "into")
            .and_then(|at| w.get(at + 1)?.parse().ok())
            .unwrap_or(0),
        direct: after("at", 1).or_else(|| after("each", 1)).unwrap_or(0),
    })
}

/// The kernel's own count of the workload's switch-outs while it was recorded: the final
/// counts of `record --off-cpu`'s `context-switches` event, summed over its fds (`hrec info`).
fn kernel_switch_outs(dir: &Path, file: &str) -> u64 {
    let o = hrec_in(dir, &["info", "-i", file]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    out.lines()
        .filter(|l| l.starts_with("# count : context-switches "))
        .filter_map(|l| l.rsplit_once("= ")?.1.trim().parse::<u64>().ok())
        .sum()
}

/// The number after `prefix` in the record summary line (`4 threads; 0 lost`: "; " then it).
fn summary_number(err: &str, before: &str) -> Option<u64> {
    let l = err.lines().find(|l| l.starts_with("[ hrec record:"))?;
    let at = l.find(before)?;
    l[..at].rsplit([' ', '(']).next()?.parse().ok()
}

/// A switch storm (two threads ping-ponging a byte, tens of thousands of switches a second,
/// beside a spinning thread) with stacks rings of one page, which the stacks overflow: the
/// on-CPU samples lose nothing (they have rings of their own); every interval is counted,
/// exactly as many as the kernel's own count of the threads' switch-outs (unless the kernel
/// lost switch records, which the recording then says, with the intervals dropped); the
/// intervals whose stacks the kernel dropped are counted and said; and the report says how
/// many intervals were aggregated, with the same counts.
#[test]
fn a_switch_storm_loses_no_on_cpu_sample_and_counts_every_interval() {
    if !kernel_samples_allowed() {
        eprintln!(
            "skipped: off-CPU stacks need kernel samples (root or kernel.perf_event_paranoid <= 1)"
        );
        return;
    }
    let _one = STORM.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let prog = release_example("switchstorm");
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "--off-cpu",
            "--off-cpu-mmap-pages",
            "1",
            "-o",
            "s.hrec",
            "--",
            prog.to_str().unwrap(),
            "10000",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    // The on-CPU samples: none lost, and the spinner has its share.
    assert_eq!(summary_number(&err, " lost"), Some(0), "{err}");
    assert!(
        summary_number(&err, " samples:").is_some_and(|n| n > 0),
        "{err}"
    );
    let rec = off_cpu_line(&err).unwrap_or_else(|| panic!("no off-CPU line:\n{err}"));
    assert_eq!(rec.intervals, rec.aggregated + rec.direct, "{err}");
    // The program's own count of its threads' switches (/proc, at the end of each thread's
    // work) is a lower bound: the main thread and the last moments are not in it.
    let own: u64 = out
        .lines()
        .filter(|l| l.starts_with("switches "))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w[3].parse::<u64>().unwrap() + w[5].parse::<u64>().unwrap()
        })
        .sum();
    assert!(own >= 20_000, "{out}");
    let kernel = kernel_switch_outs(dir.path(), "s.hrec");
    // Switch records missing (the kernel's rings full, or left unread while hrec's writer
    // was behind, which a loaded machine can cause): the recording says so, and has fewer.
    let lost_switches = err.lines().find(|l| {
        l.contains("off-CPU intervals dropped for a missing switch record")
            || l.contains("switch records (their ring buffers were full)")
    });
    match lost_switches {
        None => {
            assert!(rec.intervals >= own, "{} < {own}\n{err}", rec.intervals);
            assert_eq!(rec.intervals, kernel, "{err}");
        }
        Some(l) => {
            eprintln!("switch records were missing here, so intervals are dropped: {l}");
            assert!(rec.intervals <= kernel, "{err}");
        }
    }
    // Stacks lost in the one-page rings: their intervals are counted and said to have none,
    // as many as the profile shows without a stack (`[no stack]`, or `[preempted]` alone).
    let no_stack = err
        .lines()
        .find(|l| l.contains("off-CPU intervals have no stack"));
    let stackless: u64 = folded(dir.path(), "s.hrec", "samples")
        .iter()
        .filter(|(s, _)| s.ends_with(";[no stack]") || s.split(';').skip(1).eq(["[preempted]"]))
        .map(|(_, n)| n)
        .sum();
    match no_stack {
        Some(w) => {
            let n: u64 = w
                .split_whitespace()
                .nth(2)
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{w}"));
            assert_eq!(n, stackless, "{w}");
            assert!(
                w.contains("the kernel lost") || w.contains("left unread"),
                "no reason given: {w}"
            );
        }
        None => assert_eq!(stackless, 0, "{err}"),
    }
    if err.contains("off-CPU records (switch records or stacks") {
        assert!(no_stack.is_some() || lost_switches.is_some(), "{err}");
    }

    // The report: the same line, the samples of offcpu-time count the intervals, and the
    // warnings are there too.
    let r = hrec_in(dir.path(), &["report", "--stdio", "-i", "s.hrec"]);
    let (rout, rerr) = text(&r);
    assert!(r.status.success(), "{rerr}");
    let header: String = rout
        .lines()
        .take_while(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(off_cpu_line(&header), Some(rec), "{header}");
    assert!(
        rout.contains(&format!(
            "# Samples: {} of event 'offcpu-time'",
            rec.intervals
        )),
        "{header}"
    );
    if let Some(w) = no_stack {
        let w = w.trim_start_matches("hrec: warning: ");
        assert!(header.contains(&format!("# warning: {w}")), "{header}\n{w}");
    }
}

/// The file grows with the distinct (thread, stack) pairs, not with the switches: the same
/// storm recorded with every interval a sample (`--off-cpu-thresh 0`) and with the short
/// ones added up (a threshold of 1 s, so that how long a loaded machine keeps a thread
/// waiting does not matter): a few samples stand for all the intervals, in a file several
/// times smaller, with the same number of intervals and the same time off the CPU.
#[test]
fn the_threshold_bounds_the_file_by_stacks_not_switches() {
    if !kernel_samples_allowed() {
        eprintln!(
            "skipped: off-CPU stacks need kernel samples (root or kernel.perf_event_paranoid <= 1)"
        );
        return;
    }
    let _one = STORM.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let prog = release_example("switchstorm");
    let run = |file: &str, thresh: &str| {
        let o = hrec_in(
            dir.path(),
            &[
                "record",
                "--off-cpu",
                "--off-cpu-thresh",
                thresh,
                "-o",
                file,
                "--",
                prog.to_str().unwrap(),
                "10000",
            ],
        );
        let (_, err) = text(&o);
        assert!(o.status.success(), "{err}");
        let line = off_cpu_line(&err).unwrap_or_else(|| panic!("no off-CPU line:\n{err}"));
        let size = std::fs::metadata(dir.path().join(file)).unwrap().len();
        // Every interval is one the kernel counted (or the recording says what it lost).
        if !err.contains("off-CPU intervals dropped for a missing switch record")
            && !err.contains("switch records (their ring buffers were full)")
        {
            assert_eq!(
                line.intervals,
                kernel_switch_outs(dir.path(), file),
                "{err}"
            );
        }
        (line, size, err)
    };
    let (all, all_size, all_err) = run("all.hrec", "0");
    assert_eq!(
        (all.direct, all.aggregated),
        (all.intervals, 0),
        "{all_err}"
    );
    let (agg, agg_size, agg_err) = run("agg.hrec", "1000");
    assert!(agg.intervals >= 20_000, "{agg_err}");
    // A handful of threads, stacks and preempted-or-not; a few long waits.
    assert!(
        agg.aggregate_samples + agg.direct <= 500,
        "{} samples for {} intervals:\n{agg_err}",
        agg.aggregate_samples + agg.direct,
        agg.intervals
    );
    assert!(
        agg_size * 3 < all_size,
        "aggregated {agg_size} bytes for {} intervals, every interval {all_size} bytes for {}",
        agg.intervals,
        all.intervals
    );
    // Both files read back to their intervals, each aggregated one counted.
    for (file, line) in [("all.hrec", all), ("agg.hrec", agg)] {
        let r = hrec_in(dir.path(), &["report", "--stdio", "-i", file]);
        let (rout, rerr) = text(&r);
        assert!(r.status.success(), "{rerr}");
        assert!(
            rout.contains(&format!(
                "# Samples: {} of event 'offcpu-time'",
                line.intervals
            )),
            "{file}:\n{rout}"
        );
    }
}

/// `--switch-output`: each file ends with the intervals it closed (aggregated ones too) and
/// reads alone; an interval open at a switch is counted in the file where it closes, so the
/// files' intervals add up to the recording's, and to the kernel's count.
#[test]
fn each_switch_output_file_has_the_intervals_it_closed() {
    if !kernel_samples_allowed() {
        eprintln!(
            "skipped: off-CPU stacks need kernel samples (root or kernel.perf_event_paranoid <= 1)"
        );
        return;
    }
    let _one = STORM.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let prog = release_example("switchstorm");
    // The ping-pong, then 2.5 s of spinning: at least two files.
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "--off-cpu",
            "--switch-output=1s",
            "-o",
            "s.hrec",
            "--",
            prog.to_str().unwrap(),
            "20000",
            "2500",
        ],
    );
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let total = off_cpu_line(&err).unwrap_or_else(|| panic!("no off-CPU line:\n{err}"));
    let mut files: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.starts_with("s.hrec.").then_some(name)
        })
        .collect();
    files.sort();
    assert!(files.len() >= 2, "{files:?}\n{err}");
    let mut sum = OffCpuLine::default();
    for f in &files {
        let r = hrec_in(dir.path(), &["report", "--stdio", "-i", f]);
        let (rout, rerr) = text(&r);
        assert!(r.status.success(), "{f}: {rerr}");
        let line = off_cpu_line(&rout).unwrap_or_else(|| panic!("{f}: no off-CPU line\n{rout}"));
        if line.intervals > 0 {
            assert!(
                rout.contains(&format!(
                    "# Samples: {} of event 'offcpu-time'",
                    line.intervals
                )),
                "{f}:\n{rout}"
            );
        }
        sum.intervals += line.intervals;
        sum.aggregated += line.aggregated;
        sum.direct += line.direct;
    }
    assert_eq!(
        (sum.intervals, sum.aggregated, sum.direct),
        (total.intervals, total.aggregated, total.direct),
        "{err}"
    );
    if !err.contains("off-CPU intervals dropped for a missing switch record")
        && !err.contains("switch records (their ring buffers were full)")
    {
        let last = files.last().unwrap();
        assert_eq!(sum.intervals, kernel_switch_outs(dir.path(), last), "{err}");
    }
}
