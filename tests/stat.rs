//! `hrec stat` on the real kernel (software events count, hardware ones print `<not
//! supported>` on a machine without a PMU), its exit status, its CSV/JSON/interval outputs,
//! a comparison with `perf stat` on the same workload, and the TopDown plan on fixture
//! sysfs trees of real CPU models.

mod support;

use std::process::Command;

use hrec::analysis::topdown::TdEvent;
use hrec::stat::count::{StatOptions, StatTarget, plan};
use support::{hrec, text};

/// `name -> value` of the text block (values with `msec` in ms).
fn values(err: &str) -> Vec<(String, String)> {
    err.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let v = it.next()?;
            let mut name = it.next()?;
            if name == "msec" {
                name = it.next()?;
            }
            if v.starts_with('<') {
                // `<not supported>` is two words.
                name = it.next().unwrap_or(name);
                return Some((name.to_string(), "<not supported>".to_string()));
            }
            v.parse::<f64>().ok()?;
            Some((name.to_string(), v.to_string()))
        })
        .collect()
}

#[test]
fn default_events_count_and_the_exit_status_is_the_workloads() {
    let o = hrec(None, &["stat", "--", "sh", "-c", "echo hi; exit 3"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert_eq!(
        out, "hi\n",
        "the counts go to stderr, the workload's output stays clean"
    );
    assert!(
        err.contains(" Performance counter stats for 'sh -c echo hi; exit 3':"),
        "{err}"
    );
    let v = values(&err);
    let get = |n: &str| v.iter().find(|(k, _)| k == n).map(|(_, x)| x.clone());
    let task_ms: f64 = get("task-clock").unwrap().parse().unwrap();
    assert!(task_ms > 0.0, "{err}");
    let faults: u64 = get("page-faults").unwrap().parse().unwrap();
    assert!(faults > 10, "{err}");
    for hw in ["cycles", "instructions", "branches", "branch-misses"] {
        if !support::host_has_core_pmu() {
            assert_eq!(get(hw).as_deref(), Some("<not supported>"), "{hw}: {err}");
        } else {
            assert!(err.contains(hw), "{err}");
        }
    }
    assert!(
        err.contains("seconds time elapsed") && err.contains("seconds user"),
        "{err}"
    );
    // A command that cannot start: one line, exit 1.
    let o = hrec(None, &["stat", "--", "/nonexistent/prog"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn csv_json_and_interval_outputs() {
    let o = hrec(
        None,
        &[
            "stat",
            "-x",
            ",",
            "-e",
            "task-clock,page-faults",
            "--",
            "true",
        ],
    );
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let rows: Vec<Vec<&str>> = err.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2, "{err}");
    assert_eq!(
        (rows[0][1], rows[0][2], rows[0][6]),
        ("msec", "task-clock", "CPUs utilized")
    );
    assert_eq!(rows[1][2], "page-faults");
    assert!(rows[1][0].parse::<u64>().unwrap() > 0);
    assert_eq!(rows[1][4], "100.00");

    let o = hrec(None, &["stat", "--json", "-e", "page-faults", "--", "true"]);
    let (_, err) = text(&o);
    let j: serde_json::Value = serde_json::from_str(err.trim()).unwrap();
    assert_eq!(j["event"], "page-faults");
    assert_eq!(j["pcnt-running"], 100.0);

    let bin = support::release_example("hotspots");
    let o = hrec(
        None,
        &[
            "stat",
            "-I",
            "100",
            "-e",
            "task-clock",
            "--",
            bin.to_str().unwrap(),
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        !out.contains("task-clock"),
        "intervals go to stderr, as perf's: {out}"
    );
    let ticks: Vec<f64> = err
        .lines()
        .filter(|l| l.contains("task-clock"))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert!(ticks.len() >= 2, "{out}");
    assert!(ticks.windows(2).all(|w| w[1] > w[0]), "{ticks:?}");
}

/// `(seconds since start, msec, CPUs utilized)` of each `-I` task-clock line.
fn task_clock_intervals(err: &str) -> Vec<(f64, f64, f64)> {
    err.lines()
        .filter(|l| l.contains("msec task-clock"))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let cpus = w[w.iter().position(|&x| x == "#").unwrap() + 1];
            (
                w[0].parse().unwrap(),
                w[1].parse().unwrap(),
                cpus.parse().unwrap(),
            )
        })
        .collect()
}

/// A busy single thread counted every 500 ms: each interval, the last (shorter) one too,
/// shows its task-clock over its own length as CPUs utilized (about one on an idle machine);
/// perf's header comes first and no summary follows.
#[test]
fn intervals_of_a_busy_thread_show_one_cpu_each() {
    let o = hrec(
        None,
        &[
            "stat",
            "-I",
            "500",
            "-e",
            "task-clock",
            "--",
            "timeout",
            "1.7",
            "sh",
            "-c",
            "while :; do :; done",
        ],
    );
    let (out, err) = text(&o);
    assert_eq!(out, "");
    assert_eq!(
        err.lines().next(),
        Some("#           time             counts unit events"),
        "{err}"
    );
    assert!(!err.contains("Performance counter stats"), "{err}");
    let iv = task_clock_intervals(&err);
    assert_eq!(
        iv.len(),
        4,
        "three whole intervals and the last part: {err}"
    );
    let mut before = 0.0;
    for &(at, ms, cpus) in &iv {
        let len = at - before;
        before = at;
        // The honest unit: task-clock over the interval's own length (perf divides the
        // last, shorter one by 500 ms too).
        assert!(
            (cpus - ms / (len * 1e3)).abs() < 0.02,
            "{ms} ms in {len} s is not {cpus} CPUs: {err}"
        );
        // One busy thread: one CPU at most, about one when the machine is idle (the other
        // tests running beside it on two CPUs can leave it well under half of one).
        assert!((0.05..=1.05).contains(&cpus), "{cpus} CPUs utilized: {err}");
    }
    assert!(
        iv[3].0 - iv[2].0 < 0.45,
        "the last interval is the partial one: {err}"
    );
    // The partial interval is counted over its own length (checked above for every interval),
    // not over 500 ms as perf divides it: a 0.2 s rest shows 2.5 times perf's figure. (How
    // busy the loop was in it depends on the other tests sharing the CPUs, so it is not
    // compared with the whole intervals.)
    let (at, ms, cpus) = iv[3];
    let len = at - iv[2].0;
    let perf_figure = ms / 500.0;
    assert!(
        ms > 5.0 && (cpus - perf_figure * 0.5 / len).abs() < 0.02 && cpus > perf_figure * 1.1,
        "last {cpus} CPUs for {ms} ms in {len} s (perf's way: {perf_figure}): {err}"
    );
}

/// `-a`/`-C`/`-p`/`-t` with a command count for as long as it runs and exit with its status;
/// `-o` and `--log-fd` take the counts instead of stderr; bad targets are one line.
#[test]
fn targets_with_a_command_end_with_it() {
    let t = std::time::Instant::now();
    let o = hrec(
        None,
        &[
            "stat",
            "-a",
            "-e",
            "task-clock",
            "--",
            "sh",
            "-c",
            "sleep 1; exit 3",
        ],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        t.elapsed()
    );
    assert!(
        err.contains(" Performance counter stats for 'system wide':"),
        "{err}"
    );
    assert!(!err.contains("seconds user"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let me = std::process::id().to_string();
    let file = dir.path().join("counts.txt");
    let f = file.to_str().unwrap();
    for args in [
        vec!["-C", "0", "-o", f],
        vec!["-p", me.as_str(), "-o", f, "--append"],
        vec!["-t", me.as_str(), "-A", "-o", f],
    ] {
        let mut all = vec!["stat", "-e", "task-clock"];
        all.extend(args.iter().copied());
        all.extend(["--", "true"]);
        let o = hrec(None, &all);
        let (_, err) = text(&o);
        if args.contains(&"-A") {
            assert_eq!(o.status.code(), Some(2), "{err}");
            assert_eq!(
                err.trim(),
                "hrec: error: -A counts per CPU: it needs -a or -C"
            );
            continue;
        }
        assert!(o.status.success(), "{args:?}: {err}");
        assert!(
            !err.contains("task-clock"),
            "{args:?}: the counts went to -o: {err}"
        );
    }
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.contains("for 'CPU(s) 0':"), "{written}");
    assert!(
        written.contains(&format!("for process id '{me}':")),
        "--append kept the first: {written}"
    );

    // --log-fd: a descriptor the caller opened (here 3, the file).
    let log = dir.path().join("log.txt");
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "exec 3>{} && {} stat --log-fd 3 -e task-clock -- true",
            log.display(),
            env!("CARGO_BIN_EXE_hrec")
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("task-clock")
    );

    for (args, want) in [
        (vec!["-p", "999999999"], "process 999999999 does not exist"),
        (vec!["-C", "4095"], "CPU 4095 in -C 4095 is not online"),
        (
            vec!["--log-fd", "97"],
            "--log-fd 97: not an open descriptor",
        ),
    ] {
        let mut all = vec!["stat"];
        all.extend(args.iter().copied());
        all.extend(["--", "true"]);
        let o = hrec(None, &all);
        let (_, err) = text(&o);
        assert!(!o.status.success(), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn software_counts_match_perf_stat_on_the_same_workload() {
    if support::perf().is_none() {
        return;
    }
    let bin = support::release_example("hotspots");
    let o = Command::new("perf")
        .args(["stat", "-x", ",", "-e", "page-faults,task-clock", "--"])
        .arg(&bin)
        .output()
        .unwrap();
    let perf = String::from_utf8_lossy(&o.stderr).to_string();
    let o = hrec(
        None,
        &[
            "stat",
            "-x",
            ",",
            "-e",
            "page-faults,task-clock",
            "--",
            bin.to_str().unwrap(),
        ],
    );
    let ours = text(&o).1;
    let field = |s: &str, ev: &str| -> f64 {
        s.lines()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .find(|f| f.get(2) == Some(&ev))
            .and_then(|f| f[0].parse().ok())
            .unwrap_or_else(|| panic!("{ev} in {s}"))
    };
    // Page faults of a deterministic program: the same within a few.
    let (a, b) = (field(&perf, "page-faults"), field(&ours, "page-faults"));
    assert!(
        (a - b).abs() <= a * 0.02 + 5.0,
        "page-faults perf {a} hrec {b}"
    );
    // CPU time of the same fixed work: within 30% on a noisy VM.
    let (a, b) = (field(&perf, "task-clock"), field(&ours, "task-clock"));
    assert!((a - b).abs() <= a * 0.3, "task-clock perf {a} hrec {b}");
}

#[test]
fn topdown_plan_on_fixture_models_and_the_message_without_it() {
    let pmus = support::pmus("sapphirerapids");
    let o = StatOptions {
        topdown: true,
        td_level: 2,
        target: StatTarget::Workload,
        events: vec!["task-clock".into()],
        ..StatOptions::default()
    };
    let c = plan(&pmus, &o).unwrap();
    let names: Vec<&str> = c.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names[0], "task-clock");
    // slots leads; the 8 metric events follow in its group; all counted, none sampling.
    assert_eq!(names[1], "slots");
    assert_eq!(
        c[1].td,
        Some(hrec::analysis::topdown::TdRole::Event(TdEvent::Slots))
    );
    assert_eq!(c.len(), 10, "{names:?}");
    assert!(
        c[2..].iter().all(|m| m.leader == 1 && m.td.is_some()),
        "{names:?}"
    );
    assert!(c.iter().all(|m| m.attr.sample_type == 0));
    let o1 = StatOptions {
        td_level: 1,
        ..o.clone()
    };
    assert_eq!(plan(&pmus, &o1).unwrap().len(), 6);

    // Alder Lake: only cpu_core has TopDown.
    let c = plan(
        &support::pmus("alderlake"),
        &StatOptions {
            events: vec![],
            ..o1.clone()
        },
    )
    .unwrap();
    assert!(
        c.iter().all(|m| m.pmu.as_deref() == Some("cpu_core")),
        "{c:?}"
    );
    assert_eq!(c[0].name, "cpu_core/slots/");

    // With the cpuinfo: cpu_atom's Gracemont group too, led by its cycles (issue 30).
    let c = plan(
        &support::pmus("alderlake"),
        &StatOptions {
            events: vec![],
            cpu: hrec::pmu::uarch::CpuId::read(&support::procfs_of("alderlake")),
            ..o1.clone()
        },
    )
    .unwrap();
    let atom: Vec<_> = c
        .iter()
        .filter(|m| m.pmu.as_deref() == Some("cpu_atom"))
        .collect();
    let names: Vec<&str> = atom.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "cpu_atom/cycles/",
            "TOPDOWN_FE_BOUND.ALL",
            "TOPDOWN_BE_BOUND.ALL",
            "TOPDOWN_RETIRING.ALL"
        ]
    );
    assert_eq!(
        atom[0].td,
        Some(hrec::analysis::topdown::TdRole::EcoreCycles {
            width: 5,
            remainder: true
        })
    );
    assert_eq!(
        atom.iter().map(|m| m.attr.config).collect::<Vec<_>>(),
        [0x8_0000_0000, 0x71, 0x74, 0xc2]
    );
    assert!(atom[1..].iter().all(|m| m.leader == atom[0].leader));

    // AMD and Arm (issue 45): the vendor's level-1 groups, known as TopDown; the NMI
    // watchdog unknown, as on: AMD's SMT contention in a group of its own, Arm's STALL_SLOT
    // left out.
    use hrec::analysis::topdown::TdRole;
    use hrec::pmu::vendor::VEvent;
    for (model, sizes) in [
        ("zen4", vec![5, 2]),
        ("zen5", vec![5, 2]),
        ("neoverse-v2", vec![6]),
        ("neoverse-v1", vec![6]),
        ("neoverse-n2", vec![6]),
    ] {
        let c = plan(
            &support::pmus(model),
            &StatOptions {
                events: vec![],
                cpu: hrec::pmu::uarch::CpuId::read(&support::procfs_of(model)),
                ..o1.clone()
            },
        )
        .unwrap();
        let leaders: Vec<usize> = (0..c.len()).filter(|&i| c[i].leader == i).collect();
        let got: Vec<usize> = leaders
            .iter()
            .map(|&l| c.iter().filter(|m| m.leader == l).count())
            .collect();
        assert_eq!(got, sizes, "{model}");
        for &l in &leaders {
            assert!(
                matches!(c[l].td, Some(TdRole::VendorCycles { .. })),
                "{model}: {:?}",
                c[l].td
            );
        }
        assert!(
            c.iter()
                .any(|m| m.td == Some(TdRole::Vendor(VEvent::Retired))),
            "{model}"
        );
        assert!(c.iter().all(|m| m.td.is_some()), "{model}: {c:?}");
    }

    // The VM: a one-line explanation.
    let model = "vm";
    let o = hrec(Some(model), &["stat", "--topdown", "--", "true"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--topdown needs a core PMU with TopDown"),
        "{err}"
    );
}

/// `--topdown --td-level 2` and `-M TopdownL2` on E-cores read kernel.nmi_watchdog from the
/// procfs root, as record does: on Alder Lake's Gracemont with the watchdog on (the fixture
/// has it on) one note and a level-1 group, and each level-2 metric says why it has no value;
/// with it off (a copy of the fixture with 0) the three level-2 events join the group. Meteor
/// Lake's Crestmont has room either way. The counter lines name the planned events whether
/// or not this machine can count them.
#[test]
fn ecore_level2_follows_the_nmi_watchdog() {
    let dir = tempfile::tempdir().unwrap();
    let off = dir.path().join("procfs");
    std::fs::create_dir_all(off.join("sys/kernel")).unwrap();
    std::fs::copy(
        support::procfs_of("alderlake").join("cpuinfo"),
        off.join("cpuinfo"),
    )
    .unwrap();
    std::fs::write(off.join("sys/kernel/nmi_watchdog"), "0\n").unwrap();
    let stat = |model: &str, procfs: &std::path::Path, args: &[&str]| {
        let sysfs = support::sysfs(model);
        let mut all = args.to_vec();
        all.extend(["--", "true"]);
        let (code, _, err) = hrec_stat(
            &all,
            &[
                ("HREC_SYSFS_ROOT", sysfs.as_os_str()),
                ("HREC_PROCFS_ROOT", procfs.as_os_str()),
            ],
        );
        assert_eq!(code, 0, "{model} {args:?}: {err}");
        err
    };
    let note = "hrec: cpu_atom: gracemont E-cores have too few counters for TopDown level 2 while the NMI watchdog holds one: counting level 1 (sysctl -w kernel.nmi_watchdog=0 for level 2)";
    let level2 = [
        "TOPDOWN_FE_BOUND.FRONTEND_LATENCY",
        "TOPDOWN_BAD_SPECULATION.MISPREDICT",
        "TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS",
    ];
    let td = ["--topdown", "--td-level", "2"];
    let on = support::procfs_of("alderlake");
    let err = stat("alderlake", &on, &td);
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("too few counters"))
            .collect::<Vec<_>>(),
        [note],
        "{err}"
    );
    assert!(level2.iter().all(|e| !err.contains(e)), "{err}");
    let err = stat("alderlake", &off, &td);
    assert!(!err.contains("too few counters"), "{err}");
    assert!(level2.iter().all(|e| err.contains(e)), "{err}");
    let err = stat("meteorlake", &support::procfs_of("meteorlake"), &td);
    assert!(!err.contains("too few counters"), "{err}");
    assert!(level2.iter().all(|e| err.contains(e)), "{err}");
    // --td-level 1: no level-2 events, no note.
    let err = stat("alderlake", &on, &["--topdown"]);
    assert!(
        !err.contains("too few counters") && !err.contains(level2[0]),
        "{err}"
    );

    // -M: the same rule; the budget is named in each level-2 metric's reason.
    let m = ["-M", "TopdownL2", "--cputype", "atom"];
    let err = stat("alderlake", &on, &m);
    assert!(
        level2.iter().all(|e| !err.contains(&format!("  {e}\n"))),
        "{err}"
    );
    for metric in ["tma_ifetch_latency", "tma_resource_bound"] {
        assert!(
            err.lines().any(|l| l.contains(&format!("<not computed>      {metric}: "))
                && l.contains("too few counters for TopDown level 2 while the NMI watchdog holds one (sysctl -w kernel.nmi_watchdog=0 for level 2)")),
            "{metric}: {err}"
        );
    }
    let err = stat("alderlake", &off, &m);
    assert!(level2.iter().all(|e| err.contains(e)), "{err}");
    assert!(!err.contains("too few counters"), "{err}");
    // Both: one E-core group, not two.
    let err = stat(
        "meteorlake",
        &support::procfs_of("meteorlake"),
        &[&td[..], &m[..]].concat(),
    );
    assert_eq!(
        err.matches("TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS").count(),
        1,
        "{err}"
    );
}

fn perfmon_dir() -> Option<std::path::PathBuf> {
    let d = std::env::var_os("HREC_PERFMON_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/perfmon")
        });
    if d.join("mapfile.csv").exists() {
        Some(d)
    } else {
        eprintln!("skipped: no perfmon files at {}", d.display());
        None
    }
}

#[test]
fn metrics_are_wired_to_counts_and_retire_latency_sources() {
    let Some(dir) = perfmon_dir() else { return };
    if support::host_has_core_pmu() {
        eprintln!("skipped: this checks the output when the events cannot be counted (no PMU)");
        return;
    }
    let dir = dir.to_str().unwrap();
    let base = ["stat", "--perfmon", dir, "--cpuid", "GenuineIntel-6-AD-1"];
    let run = |extra: &[&str]| {
        let mut v: Vec<&str> = base.to_vec();
        v.extend_from_slice(extra);
        v.extend_from_slice(&["--", "true"]);
        hrec(Some("graniterapids"), &v)
    };
    // Intel's Granite Rapids formula needs three events and one retire latency. Here the
    // events are opened on the fixture's PMU, which this VM lacks, so the metric says why it
    // has no value; the latency comes from Intel's defaults file.
    let o = run(&["-M", "tma_dtlb_load"]);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    for ev in [
        "MEM_INST_RETIRED.STLB_HIT_LOADS",
        "DTLB_LOAD_MISSES.WALK_ACTIVE",
        "CPU_CLK_UNHALTED.THREAD",
    ] {
        assert!(
            err.contains(&format!("<not supported>      {ev}")),
            "{ev}: {err}"
        );
    }
    assert!(
        err.contains("Metrics (Intel's formulas, graniterapids_metrics.json):"),
        "{err}"
    );
    assert!(err.contains("<not computed>      tma_dtlb_load: MEM_INST_RETIRED.STLB_HIT_LOADS was not counted here"), "{err}");
    assert!(
        err.contains("MEM_INST_RETIRED.STLB_HIT_LOADS:retire_latency = 1.57 cycles (MEAN from graniterapids_retire_latency.json, Intel's default)"),
        "{err}"
    );

    // --tpebs-from an hrec-style JSON file wins over the default, with the chosen statistic.
    let tmp = tempfile::tempdir().unwrap();
    let lat = tmp.path().join("lat.json");
    std::fs::write(
        &lat,
        r#"{"Platform": {"Source": "test"}, "Data": {"MEM_INST_RETIRED.STLB_HIT_LOADS": {"MIN": 3, "MAX": 40, "MEAN": 12.5, "COUNT": 8}}}"#,
    )
    .unwrap();
    let o = run(&[
        "-M",
        "tma_dtlb_load",
        "--tpebs-from",
        lat.to_str().unwrap(),
        "--tpebs-mode",
        "max",
        "-j",
    ]);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let rows: Vec<serde_json::Value> = err
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let m = rows
        .iter()
        .find(|r| r["metric-name"] == "tma_dtlb_load")
        .expect("metric row");
    assert!(
        m["metric-value"].is_null() && m["error"].as_str().unwrap().contains("not counted"),
        "{m}"
    );
    let l = rows
        .iter()
        .find(|r| r["retire-latency"].is_object())
        .expect("latency row");
    assert_eq!(
        l["retire-latency"]["event"],
        "MEM_INST_RETIRED.STLB_HIT_LOADS"
    );
    assert_eq!(l["retire-latency"]["value"], 40.0);
    assert_eq!(l["retire-latency"]["statistic"], "max");
    assert_eq!(l["retire-latency"]["origin"]["kind"], "json");

    // Errors: one line each.
    for (extra, want, code) in [
        (
            &["-M", "no_such_metric"][..],
            "no metric or metric group \"no_such_metric\"",
            1,
        ),
        (&["--record-tpebs"][..], "give -M too", 2),
        (
            &["-M", "tma_dtlb_load", "--tpebs-mode", "median"][..],
            "unknown --tpebs-mode",
            2,
        ),
    ] {
        let o = run(extra);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(code), "{extra:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{err}");
    }
}

#[test]
fn record_tpebs_samples_during_the_run_and_falls_back_when_latencies_are_zero() {
    let Some(dir) = perfmon_dir() else { return };
    let bin = support::release_example("hotspots");
    let run = |extra: &[&str], standin: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_hrec"));
        c.env("HREC_SYSFS_ROOT", support::sysfs("graniterapids"))
            .env("HREC_PROCFS_ROOT", support::procfs())
            .args([
                "stat",
                "--perfmon",
                dir.to_str().unwrap(),
                "--cpuid",
                "GenuineIntel-6-AD-1",
            ])
            .args(["-M", "tma_dtlb_load", "--record-tpebs"])
            .args(extra)
            .arg("--")
            .arg(&bin);
        if standin {
            // The software clock stands in for the precise event: the same sampling path
            // (per-CPU rings of the workload's tasks, WEIGHT_STRUCT samples, decoding), with
            // retire latencies that are always 0 because cpu-clock has no Timed PEBS.
            c.env("HREC_TPEBS_STANDIN", "cpu-clock");
        } else {
            c.env_remove("HREC_TPEBS_STANDIN");
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    let err = run(&[], true);
    let line = err
        .lines()
        .find(|l| l.contains("MEM_INST_RETIRED.STLB_HIT_LOADS:retire_latency ="))
        .unwrap_or_else(|| panic!("{err}"));
    // Thousands of samples arrived (0.4 s at one per 100 µs of CPU), all with latency 0, so
    // the latency is Intel's default and the line says why.
    let n: u64 = line
        .split("its ")
        .nth(1)
        .and_then(|r| r.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(n > 500, "{line}");
    assert!(
        line.contains(
            "= 1.57 cycles (MEAN from graniterapids_retire_latency.json, Intel's default; its "
        ),
        "{line}"
    );
    assert!(
        line.ends_with("samples in this run all have retire latency 0)"),
        "{line}"
    );

    // With --tpebs-from, the file comes after this run's samples and before the defaults.
    let tmp = tempfile::tempdir().unwrap();
    let lat = tmp.path().join("lat.json");
    std::fs::write(
        &lat,
        r#"{"Platform": {}, "Data": {"MEM_INST_RETIRED.STLB_HIT_LOADS": {"MIN": 2, "MAX": 9, "MEAN": 4.25}}}"#,
    )
    .unwrap();
    let err = run(
        &["--tpebs-from", lat.to_str().unwrap(), "--tpebs-mode", "min"],
        true,
    );
    assert!(
        err.contains("MEM_INST_RETIRED.STLB_HIT_LOADS:retire_latency = 2.00 cycles (MIN from"),
        "{err}"
    );

    // Without the stand-in on a machine without the PMU, the sampler cannot open: one line
    // says so and the default is used.
    if !support::host_has_core_pmu() {
        let err = run(&[], false);
        assert!(
            err.contains("hrec: --record-tpebs: cannot sample MEM_INST_RETIRED.STLB_HIT_LOADS"),
            "{err}"
        );
        assert!(
            err.contains("Intel's default; no samples in this run)"),
            "{err}"
        );
    }
}

#[test]
fn fetch_perfmon_script_picks_this_models_files() {
    let Some(dir) = perfmon_dir() else { return };
    let dest = tempfile::tempdir().unwrap();
    let o = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/fetch-perfmon.sh"
    ))
    .args([
        "--from",
        dir.to_str().unwrap(),
        "--cpuid",
        "GenuineIntel-6-AD-1",
        "--dest",
    ])
    .arg(dest.path())
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    for f in [
        "mapfile.csv",
        "GNR/metrics/graniterapids_metrics.json",
        "GNR/metrics/graniterapids_retire_latency.json",
        "GNR/events/graniterapids_core.json",
    ] {
        assert!(dest.path().join(f).exists(), "{f}: {err}");
    }
    // The copy is what hrec stat -M reads.
    let o = hrec(
        Some("graniterapids"),
        &[
            "stat",
            "--perfmon",
            dest.path().to_str().unwrap(),
            "--cpuid",
            "GenuineIntel-6-AD-1",
            "-M",
            "tma_dtlb_load",
            "--",
            "true",
        ],
    );
    assert!(
        text(&o).1.contains("graniterapids_metrics.json"),
        "{}",
        text(&o).1
    );
}

/// `perf stat ARGS` (its report is on stderr, like hrec's), with `env`; `None` after saying
/// why when perf is missing or refuses to count (kernel.perf_event_paranoid).
fn perf_stat(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Option<(i32, String)> {
    support::perf()?;
    let o = Command::new("perf")
        .arg("stat")
        .args(args)
        .envs(env.iter().copied())
        .output()
        .ok()?;
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    if err.contains("perf_event_paranoid") || err.contains("Permission denied") {
        eprintln!("skipped: perf may not count here (perf_event_paranoid): {err}");
        return None;
    }
    Some((o.status.code().unwrap_or(-1), err))
}

/// hrec stat with the same arguments and environment.
fn hrec_stat(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_hrec"))
        .arg("stat")
        .args(args)
        .env_remove("HREC_SYSFS_ROOT")
        .env_remove("HREC_PROCFS_ROOT")
        .envs(env.iter().copied())
        .output()
        .expect("run hrec");
    let (out, err) = text(&o);
    (o.status.code().unwrap_or(-1), out, err)
}

/// The counter lines of a text report: (event name, `<not supported>`, the column of the
/// variance `( +-` when the line has one).
fn counter_lines(err: &str) -> Vec<(String, bool, Option<usize>)> {
    err.lines()
        .filter(|l| l.len() > 24 && !l.contains("seconds") && !l.contains("Performance"))
        .map(|l| {
            // The value takes 18 columns, the unit 4 more after a blank: the name follows.
            let name = l[24..].split_whitespace().next().unwrap_or("").to_string();
            (name, l.contains("<not supported>"), l.find("( +-"))
        })
        .collect()
}

/// perf's variance text at the end of a line: `( +-` then `%6.2f` then `% )`.
fn is_variance(tail: &str) -> bool {
    let Some(v) = tail
        .strip_prefix("( +-")
        .and_then(|t| t.strip_suffix("% )"))
    else {
        return false;
    };
    v.len() >= 6
        && v.trim_start().parse::<f64>().is_ok()
        && v.split('.').nth(1).map(str::len) == Some(2)
}

/// `MEAN +- STDERR seconds time elapsed  ( +- x.xx% )`: its decimals, after checking the
/// line's shape.
fn repeated_elapsed(err: &str) -> usize {
    let line = err
        .lines()
        .find(|l| l.contains("seconds time elapsed"))
        .unwrap_or_else(|| panic!("no elapsed line: {err}"));
    let (nums, rest) = line.split_once(" seconds time elapsed").unwrap();
    let (mean, sd) = nums
        .trim()
        .split_once(" +- ")
        .unwrap_or_else(|| panic!("{line}"));
    let decimals = |x: &str| {
        x.parse::<f64>().unwrap_or_else(|_| panic!("{x} in {line}"));
        x.split('.').nth(1).map_or(0, str::len)
    };
    assert_eq!(decimals(mean), decimals(sd), "{line}");
    assert!(
        rest.is_empty() || (rest.starts_with("  ") && is_variance(&rest[2..])),
        "{line}"
    );
    decimals(mean)
}

/// `-r 3` against perf's on the same command: the header's run count, the same events with
/// the same `<not supported>` ones, the variance column at the same place and in the same
/// format, the `MEAN +- STDERR` elapsed line, no user/system times, each run's output, the
/// last run's exit status; CSV's variance field and JSON's `variance`.
#[test]
fn repeat_prints_perfs_variance_column_and_run_count() {
    let args = [
        "-r",
        "3",
        "-e",
        "task-clock,context-switches,page-faults,cycles",
        "--",
        "sh",
        "-c",
        "echo run; exit 3",
    ];
    let Some((perf_code, perf)) = perf_stat(&args, &[]) else {
        return;
    };
    let (code, out, ours) = hrec_stat(&args, &[]);
    // perf 6.1's own status after -r is the last run's only when its last wait sees it (0
    // under load at times), so only hrec's is held to it.
    assert_eq!(code, 3, "the last run's status: {ours}");
    assert!(matches!(perf_code, 0 | 3), "perf: {perf_code}");
    assert_eq!(out, "run\nrun\nrun\n", "three runs");
    let header = " Performance counter stats for 'sh -c echo run; exit 3' (3 runs):";
    for r in [&perf, &ours] {
        assert!(r.lines().any(|l| l == header), "{r}");
        assert!(!r.contains("seconds user"), "no user time with -r: {r}");
    }
    let (p, h) = (counter_lines(&perf), counter_lines(&ours));
    let names = |v: &[(String, bool, Option<usize>)]| {
        v.iter()
            .map(|(n, ns, _)| (n.clone(), *ns))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&h), names(&p), "perf:\n{perf}\nhrec:\n{ours}");
    // task-clock never repeats to the nanosecond: both print its spread, at the same column.
    assert!(
        p[0].2.is_some() && p[0].2 == h[0].2,
        "perf:\n{perf}\nhrec:\n{ours}"
    );
    let columns: Vec<usize> = p.iter().chain(&h).filter_map(|x| x.2).collect();
    assert!(columns.iter().all(|&c| c == columns[0]), "{columns:?}");
    for l in ours.lines().chain(perf.lines()) {
        if let Some(at) = l.find("( +-") {
            assert!(is_variance(&l[at..]), "{l}");
        }
    }
    repeated_elapsed(&perf);
    let decimals = repeated_elapsed(&ours);
    assert!(decimals >= 2, "{ours}");

    // CSV: the variance after the event name on every line, `<not supported>` ones included.
    let csv = [
        "-x",
        ",",
        "-r",
        "2",
        "-e",
        "task-clock,cycles",
        "--",
        "true",
    ];
    let (_, perf) = perf_stat(&csv, &[]).unwrap();
    let (code, _, ours) = hrec_stat(&csv, &[]);
    assert_eq!(code, 0, "{ours}");
    let rows = |s: &str| -> Vec<(usize, String, bool)> {
        s.lines()
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (f.len(), f[2].to_string(), f[3].ends_with('%'))
            })
            .collect()
    };
    assert_eq!(rows(&ours), rows(&perf), "perf:\n{perf}\nhrec:\n{ours}");
    assert!(rows(&ours).iter().all(|r| r.2), "{ours}");
    // JSON: "variance" on every line.
    let json = ["-j", "-r", "2", "-e", "task-clock,cycles", "--", "true"];
    let (_, perf) = perf_stat(&json, &[]).unwrap();
    let (_, _, ours) = hrec_stat(&json, &[]);
    let keyed = |s: &str| -> Vec<(String, bool)> {
        s.lines()
            .map(|l| {
                let v: serde_json::Value =
                    serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
                (
                    v["event"].as_str().unwrap_or("").to_string(),
                    v["variance"].is_number(),
                )
            })
            .collect()
    };
    assert_eq!(keyed(&ours), keyed(&perf), "perf:\n{perf}\nhrec:\n{ours}");
    assert!(keyed(&ours).iter().all(|k| k.1), "{ours}");
}

/// `-r 1` is one ordinary run (no run count, no spread, user and system times).
#[test]
fn repeat_once_is_a_plain_run() {
    let args = ["-r", "1", "-e", "task-clock", "--", "true"];
    let Some((_, perf)) = perf_stat(&args, &[]) else {
        return;
    };
    let (code, _, ours) = hrec_stat(&args, &[]);
    assert_eq!(code, 0, "{ours}");
    for r in [&perf, &ours] {
        assert!(
            r.contains(" Performance counter stats for 'true':\n"),
            "{r}"
        );
        assert!(!r.contains("+-") && r.contains("seconds user"), "{r}");
    }
}

/// Bad `-r` values and refused combinations: one line, exit 2 (perf refuses the same ones it
/// can parse, except that it takes `-r 0` as "forever" and accepts `-r N -I` with an
/// output that mixes the runs).
#[test]
fn bad_repeat_and_big_num_values_are_one_line() {
    for (args, want, perf_refuses) in [
        (&["-r", "0"][..], "give at least 1 run", false),
        (&["-r", "abc"][..], "whole number", true),
        (&["-r", "-1"][..], "whole number", true),
        (&["-r", "2.5"][..], "whole number", false),
        (
            &["-r", "2", "-I", "100"][..],
            "-r 2 and -I cannot be combined",
            false,
        ),
        (
            &["-B", "-x", ","][..],
            "-B/--big-num and -x cannot be combined",
            true,
        ),
    ] {
        let mut all = args.to_vec();
        all.extend(["-e", "task-clock", "--", "true"]);
        let (code, _, err) = hrec_stat(&all, &[]);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("hrec: error: ") && err.contains(want),
            "{args:?}: {err}"
        );
        if perf_refuses && let Some((perf_code, perf)) = perf_stat(&all, &[]) {
            assert_ne!(perf_code, 0, "perf refuses {args:?} too: {perf}");
        }
    }
    // -r without a command has nothing to repeat.
    let (code, _, err) = hrec_stat(&["-r", "2", "-a"], &[]);
    assert_eq!((code, err.lines().count()), (2, 1), "{err}");
}

/// `-d`, `-dd`, `-ddd`: the same events as perf's, after the defaults or the `-e` ones, and
/// the same `<not supported>` ones (all of them on a machine without a PMU).
#[test]
fn detailed_event_sets_match_perf() {
    for args in [
        &["-d"][..],
        &["-dd"][..],
        &["-ddd"][..],
        &["--detailed", "--detailed"][..],
        &["-d", "-e", "task-clock"][..],
    ] {
        let mut all = args.to_vec();
        all.extend(["--", "true"]);
        let Some((_, perf)) = perf_stat(&all, &[]) else {
            return;
        };
        let (code, _, ours) = hrec_stat(&all, &[]);
        assert_eq!(code, 0, "{ours}");
        let set = |s: &str| -> Vec<(String, bool)> {
            values(s)
                .into_iter()
                .map(|(n, v)| (n, v == "<not supported>"))
                .collect()
        };
        assert_eq!(
            set(&ours),
            set(&perf),
            "{args:?}\nperf:\n{perf}\nhrec:\n{ours}"
        );
        assert!(
            set(&ours).iter().any(|(n, _)| n == "LLC-load-misses"),
            "{ours}"
        );
        if !support::host_has_core_pmu() {
            assert!(
                set(&ours)
                    .iter()
                    .filter(|(n, _)| n.contains("cache")
                        || n.contains("TLB")
                        || n.starts_with("LLC"))
                    .all(|x| x.1),
                "{ours}"
            );
        }
    }
}

/// Digits as `9`: a line's shape without its values.
fn shape(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect()
}

/// `--big-num` (the default) groups counts as the locale does, like perf: no separators in
/// the C locale, `4,185` in en_US.UTF-8 (built with localedef when its source is installed);
/// `--no-big-num` never groups.
#[test]
fn big_num_follows_the_locale_like_perf() {
    // Some 4,000 page faults: a 16 MiB buffer touched once.
    let workload = [
        "-e",
        "page-faults",
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=16M",
        "count=1",
    ];
    let count_shape = |s: &str| {
        let l = s
            .lines()
            .find(|l| l.contains("page-faults"))
            .unwrap_or_else(|| panic!("{s}"));
        shape(l.split_whitespace().next().unwrap())
    };
    let c: [(&str, &std::ffi::OsStr); 1] = [("LC_ALL", "C".as_ref())];
    let Some((_, perf)) = perf_stat(&workload, &c) else {
        return;
    };
    let (_, _, ours) = hrec_stat(&workload, &c);
    assert_eq!(count_shape(&ours), "9999", "{ours}");
    assert_eq!(count_shape(&perf), count_shape(&ours), "{perf}");

    let src = std::path::Path::new("/usr/share/i18n/locales/en_US");
    if !src.exists() {
        eprintln!(
            "skipped: no en_US locale source ({}) to build a grouping locale with",
            src.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let built = Command::new("localedef")
        .args(["-i", "en_US", "-f", "UTF-8"])
        .arg(dir.path().join("en_US.UTF-8"))
        .output();
    if !dir.path().join("en_US.UTF-8/LC_NUMERIC").exists() {
        eprintln!("skipped: localedef could not build en_US.UTF-8: {built:?}");
        return;
    }
    let en: [(&str, &std::ffi::OsStr); 2] = [
        ("LOCPATH", dir.path().as_os_str()),
        ("LC_ALL", "en_US.UTF-8".as_ref()),
    ];
    let (_, perf) = perf_stat(&workload, &en).unwrap();
    let (_, _, ours) = hrec_stat(&workload, &en);
    assert_eq!(count_shape(&ours), "9,999", "{ours}");
    assert_eq!(count_shape(&perf), count_shape(&ours), "{perf}");
    let mut plain = vec!["--no-big-num"];
    plain.extend(workload);
    let (_, perf) = perf_stat(&plain, &en).unwrap();
    let (_, _, ours) = hrec_stat(&plain, &en);
    assert_eq!(count_shape(&ours), "9999", "{ours}");
    assert_eq!(count_shape(&perf), count_shape(&ours), "{perf}");
    // -B after --no-big-num turns it back on, as in perf.
    let mut again = vec!["--no-big-num", "-B"];
    again.extend(workload);
    let (_, _, ours) = hrec_stat(&again, &en);
    assert_eq!(count_shape(&ours), "9,999", "{ours}");
}

/// `-n`: no counters, only the elapsed (and user/system) time, in perf's layout; `-e` events
/// are still counted, and with `-r` the elapsed line carries the spread.
#[test]
fn null_run_times_the_command_like_perf() {
    let args = ["-n", "--", "true"];
    let Some((_, perf)) = perf_stat(&args, &[]) else {
        return;
    };
    let (code, _, ours) = hrec_stat(&args, &[]);
    assert_eq!(code, 0, "{ours}");
    assert_eq!(shape(&ours), shape(&perf), "perf:\n{perf}\nhrec:\n{ours}");
    let args = ["-n", "-e", "task-clock", "--", "true"];
    let (_, perf) = perf_stat(&args, &[]).unwrap();
    let (_, _, ours) = hrec_stat(&args, &[]);
    let skeleton = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| {
                l.split_whitespace()
                    .filter(|w| !w.starts_with(|c: char| c.is_ascii_digit()))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    };
    assert_eq!(
        skeleton(&ours),
        skeleton(&perf),
        "perf:\n{perf}\nhrec:\n{ours}"
    );
    let args = ["-n", "-r", "3", "--", "true"];
    let (_, perf) = perf_stat(&args, &[]).unwrap();
    let (_, _, ours) = hrec_stat(&args, &[]);
    assert_eq!(
        skeleton(&ours),
        skeleton(&perf),
        "perf:\n{perf}\nhrec:\n{ours}"
    );
    repeated_elapsed(&ours);
    // CSV and JSON of a null run: nothing to print.
    for fmt in [&["-x", ","][..], &["-j"][..]] {
        let mut all = fmt.to_vec();
        all.extend(["-n", "--", "true"]);
        let (_, perf) = perf_stat(&all, &[]).unwrap();
        let (_, _, ours) = hrec_stat(&all, &[]);
        assert_eq!((ours.as_str(), perf.as_str()), ("", ""), "{fmt:?}");
    }
}

/// `comm-tid -> msec` of `stat --per-thread` task-clock rows (perf's layout).
fn per_thread_rows(err: &str) -> std::collections::BTreeMap<String, f64> {
    err.lines()
        .filter(|l| l.contains("msec task-clock"))
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let who = it.next()?;
            let v: f64 = it.next()?.parse().ok()?;
            Some((who.to_string(), v))
        })
        .collect()
}

#[test]
fn per_thread_rows_match_perf_on_the_same_process() {
    let threads = support::example("threads");
    let mut busy = Command::new(&threads).arg("3").spawn().unwrap();
    let pid = busy.id().to_string();
    // Wait until its workers exist (they name themselves at start).
    let task_dir = format!("/proc/{pid}/task");
    let named = || {
        std::fs::read_dir(&task_dir)
            .map(|d| {
                d.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
                    .filter(|c| c.starts_with("worker-"))
                    .count()
            })
            .unwrap_or(0)
    };
    let t = std::time::Instant::now();
    while named() < 3 && t.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::yield_now();
    }
    let args = [
        "--per-thread",
        "-p",
        &pid,
        "-e",
        "task-clock",
        "--",
        "sleep",
        "0.4",
    ];
    let (code, _, err) = hrec_stat(&args, &[]);
    assert_eq!(code, 0, "{err}");
    let ours = per_thread_rows(&err);
    let perf = perf_stat(&args, &[]);
    let _ = busy.kill();
    let _ = busy.wait();
    // The process's threads, each as comm-tid, the busy workers with time counted.
    for n in 0..3 {
        let w = ours
            .iter()
            .find(|(k, _)| k.starts_with(&format!("worker-{n}-")))
            .unwrap_or_else(|| panic!("no worker-{n} row: {err}"));
        assert!(*w.1 > 10.0, "{err}");
    }
    let Some((pcode, perr)) = perf else { return };
    assert_eq!(pcode, 0, "{perr}");
    let theirs = per_thread_rows(&perr);
    let labels =
        |m: &std::collections::BTreeMap<String, f64>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        labels(&ours),
        labels(&theirs),
        "hrec:\n{err}\nperf:\n{perr}"
    );
    assert!(err.contains(&format!(
        " Performance counter stats for process id '{pid}':"
    )));
}

/// `--cputype TYPE` (and `--unit`) through the binary on fixture machines: the default
/// events of the chosen core PMU alone; bad values, a part with one core PMU and an `-e`
/// event of another core PMU are one line each. perf 6.1 refuses `--cputype` on this VM (not
/// hybrid) with "--cputype core is not supported!", as hrec does.
#[test]
fn cputype_counts_one_core_pmu_and_bad_values_are_one_line() {
    for (model, args, want, not) in [
        (
            "alderlake",
            &["--cputype", "atom"][..],
            "cpu_atom/cycles/",
            "cpu_core/",
        ),
        (
            "alderlake",
            &["--unit", "cpu_core"][..],
            "cpu_core/cycles/",
            "cpu_atom/",
        ),
        (
            "arrowlake-h",
            &["--cputype", "lowpower"][..],
            "cpu_lowpower/cycles/",
            "cpu_atom/",
        ),
    ] {
        let mut all = vec!["stat"];
        all.extend(args);
        all.extend(["--", "true"]);
        let o = hrec(Some(model), &all);
        let (_, err) = text(&o);
        assert!(o.status.success(), "{model} {args:?}: {err}");
        assert!(
            err.contains(want) && !err.contains(not),
            "{model} {args:?}: {err}"
        );
        // Software events are counted as without --cputype.
        assert!(err.contains(" msec task-clock"), "{err}");
    }
    for (model, args, want, code) in [
        (
            "vm",
            &["--cputype", "atom"][..],
            "--cputype atom: this machine has no cpu_atom PMU (it has no core PMU at all: a VM or a non-x86 machine)",
            2,
        ),
        (
            "sierraforest",
            &["--cputype", "atom"][..],
            "--cputype atom: this machine has no cpu_atom PMU (its core PMUs: cpu; it is not hybrid)",
            2,
        ),
        (
            "sierraforest",
            &["--cputype", "cpu"][..],
            "--cputype cpu: this machine is not hybrid: its one core PMU, cpu, counts on every CPU (leave --cputype out)",
            2,
        ),
        (
            "alderlake",
            &["--cputype", "lowpower"][..],
            "--cputype lowpower: this machine has no cpu_lowpower PMU (its core PMUs: cpu_core, cpu_atom)",
            2,
        ),
        (
            "alderlake",
            &["--cputype", "big"][..],
            "--cputype big: not a core type: give core, atom, lowpower or a core PMU's name (its core PMUs: cpu_core, cpu_atom)",
            2,
        ),
        (
            "alderlake",
            &["--cputype", "atom", "-e", "cpu_core/cycles/"][..],
            "cpu_core is not cpu_atom, the core PMU chosen with --cputype",
            1,
        ),
    ] {
        let mut all = vec!["stat"];
        all.extend(args);
        all.extend(["--", "true"]);
        let o = hrec(Some(model), &all);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(code), "{model} {args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("hrec: error: ") && err.contains(want),
            "{err}"
        );
    }
    // perf refuses --cputype on a machine that is not hybrid too.
    if !support::host_has_core_pmu()
        && let Some((code, perf)) = perf_stat(
            &["--cputype", "core", "-e", "task-clock", "--", "true"],
            &[],
        )
    {
        assert_ne!(code, 0, "{perf}");
        assert!(perf.contains("--cputype core is not supported"), "{perf}");
    }
}

/// `-M` on E-cores with hrec's own perfmon fixture (tests/fixtures/perfmon): on a hybrid
/// part the P-core's metrics from Intel's (P-core only) file and the E-core's level 1 from
/// hrec's table, a block each; `--cputype atom` the E-core's alone, without any file; other
/// metrics there are one line naming the file; an all-E-core part uses its own file (plain
/// counters, no slots group), or hrec's table where it has none. The events cannot count on
/// this machine (fixture PMUs), so the values say why they are missing.
#[test]
fn metrics_on_ecores_come_from_hrecs_table_per_pmu() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perfmon");
    let fixture = fixture.to_str().unwrap();
    let run_in = |dir: &str, model: &str, extra: &[&str]| {
        let mut v = vec!["stat", "--perfmon", dir];
        v.extend_from_slice(extra);
        v.extend_from_slice(&["--", "true"]);
        let o = hrec(Some(model), &v);
        let (_, err) = text(&o);
        (o.status.code(), err)
    };
    let run = |model: &str, extra: &[&str]| run_in(fixture, model, extra);
    let grt = " Metrics on cpu_atom (Intel's E-core TMA, level 1: Gracemont, slots = 5 x cycles, Bad Speculation the remainder):";
    let l1 = [
        "tma_frontend_bound",
        "tma_bad_speculation",
        "tma_backend_bound",
        "tma_retiring",
    ];
    // The P-core-only line: one line, exit 1, with or without the file.
    let (code, err) = run(
        "alderlake",
        &["--cputype", "atom", "-M", "TopdownL1,Info_Thread_IPC"],
    );
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("-M Info_Thread_IPC on cpu_atom: Intel's metric file for this CPU (hybrid_pcore_metrics.json) covers only the P-core (cpu_core); on cpu_atom, E-core TopDown level 1 is available with --topdown or -M TopdownL1"), "{err}");

    if support::host_has_core_pmu() {
        eprintln!("skipped: the rest checks the output when the events cannot be counted (no PMU)");
        return;
    }
    let (code, err) = run("alderlake", &["-M", "TopdownL1"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(" Metrics on cpu_core (Intel's formulas, hybrid_pcore_metrics.json):"),
        "{err}"
    );
    let block = &err[err.find(grt).expect(grt)..];
    for m in l1 {
        assert!(
            block.contains(&format!("<not computed>      {m}: CPU_CLK_UNHALTED.CORE (cpu_atom/cycles/) was not counted here (<not supported>)")),
            "{m}: {block}"
        );
    }
    for ev in [
        "cpu_atom/cycles/",
        "TOPDOWN_FE_BOUND.ALL",
        "TOPDOWN_BE_BOUND.ALL",
        "TOPDOWN_RETIRING.ALL",
    ] {
        assert!(
            err.contains(&format!("<not supported>      {ev}\n")),
            "{ev}: {err}"
        );
    }

    // --cputype atom: no metric file needed; the E-core block alone.
    let (code, err) = run_in(
        "/nonexistent",
        "alderlake",
        &["-M", "tma_retiring", "--cputype", "atom"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(grt) && !err.contains("Intel's formulas") && !err.contains("slots/"),
        "{err}"
    );
    // JSON rows carry the PMU and the source; CSV rows name the PMU.
    let (_, err) = run(
        "meteorlake",
        &["-M", "TopdownL1", "--cputype", "atom", "-j"],
    );
    let rows: Vec<serde_json::Value> = err
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|r: &serde_json::Value| r["metric-name"].is_string())
        .collect();
    assert_eq!(
        rows.iter()
            .map(|r| r["metric-name"].as_str().unwrap())
            .collect::<Vec<_>>(),
        l1
    );
    assert!(rows.iter().all(|r| r["pmu"] == "cpu_atom"
        && r["source"] == "Intel's E-core TMA, level 1: Crestmont, slots = 6 x cycles"
        && r["metric-value"].is_null()));
    let (_, err) = run(
        "arrowlake-h",
        &["-M", "tma_retiring", "--cputype", "lowpower", "-x", ","],
    );
    assert!(
        err.lines()
            .any(|l| l == ",,cpu_lowpower/tma_retiring/,,,,%"),
        "{err}"
    );

    // Sierra Forest: its own file, TopDown events as plain counters on cpu.
    let (code, err) = run("sierraforest", &["-M", "TopdownL1"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(" Metrics (Intel's formulas, ecore_only_metrics.json):"),
        "{err}"
    );
    assert!(
        err.contains("<not supported>      TOPDOWN_FE_BOUND.ALL_P\n") && !err.contains("slots"),
        "{err}"
    );
    // Without it (and Alder Lake-N, which has none): hrec's table.
    let (code, err) = run_in("/nonexistent", "sierraforest", &["-M", "TopdownL1"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(" Metrics (Intel's E-core TMA, level 1: Crestmont, slots = 6 x cycles):"),
        "{err}"
    );
    let (_, err) = run("alderlake-n", &["-M", "tma_bad_speculation"]);
    assert!(err.contains(" Metrics (Intel's E-core TMA, level 1: Gracemont, slots = 5 x cycles, Bad Speculation the remainder):"), "{err}");
}
