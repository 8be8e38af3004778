//! The binary: dry-run plans per model (golden files), list, exit codes and error lines.

mod support;

use std::path::Path;

use support::{golden, hrec, text};

fn dry_run(model: &str, extra: &[&str]) -> String {
    let mut args = vec!["record", "--dry-run"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "true"]);
    let o = hrec(Some(model), &args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{model} {extra:?}: {err}");
    // Paths in notices depend on the checkout; golden files use a placeholder.
    format!("{err}{out}").replace(env!("CARGO_MANIFEST_DIR"), "$REPO")
}

#[test]
fn dry_run_plans_match_golden_files() {
    for model in support::MODELS
        .into_iter()
        .chain(support::ECORE_MODELS)
        .chain(support::VENDOR_MODELS)
    {
        golden(&format!("dry-run-{model}.txt"), &dry_run(model, &[]));
        golden(&format!("dry-run-W-{model}.txt"), &dry_run(model, &["-W"]));
    }
}

#[test]
fn dry_run_shows_the_done_means_facts() {
    let adl = dry_run("alderlake", &[]);
    assert!(adl.contains("  config                           0x400000000\n"));
    assert!(adl.contains("  config                           0x800000000\n"));
    assert!(adl.contains("event #1 cpu_core/cycles/P: pmu cpu_core, pid workload, cpus 0-15, group leader #0 cpu_core/slots/, samples"));
    assert!(adl.contains("event #10 cpu_atom/cycles/P: pmu cpu_atom, pid workload, cpus 16-23, group leader none (leader), samples"));
    let vm = dry_run("vm", &["-W"]);
    assert!(vm.starts_with("hrec: no hardware PMU"), "{vm}");
    assert!(vm.contains("IP|TID|TIME|PERIOD|WEIGHT_STRUCT"));
    let spr = dry_run("sapphirerapids", &["-W"]);
    assert_eq!(
        spr.matches("WEIGHT_STRUCT").count(),
        10,
        "every member of the sampling-read group"
    );
}

#[test]
fn dry_run_json() {
    let o = hrec(
        Some("alderlake"),
        &["record", "--dry-run", "--json", "-W", "--", "true"],
    );
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    let events = v["events"].as_array().unwrap();
    // P-core: slots, cycles, 8 metrics; E-core (Gracemont): cycles + 3; the tracking dummy.
    assert_eq!(events.len(), 15);
    assert_eq!(events[1]["name"], "cpu_core/cycles/P");
    assert_eq!(events[1]["attr"]["config"], 0x4_0000_0000u64);
    assert_eq!(events[1]["attr"]["sample_freq"], 4000);
    assert_eq!(events[1]["placement"]["cpus"], "0-15");
    assert_eq!(events[1]["role"], "sampler");
    assert_eq!(events[10]["attr"]["config"], 0x8_0000_0000u64);
    assert_eq!(events[13]["name"], "TOPDOWN_RETIRING.ALL");
    assert_eq!(events[13]["attr"]["config"], 0xc2);
    assert_eq!(events[13]["leader"], 10);
    assert!(events[1]["attr"]["sample_type"].as_u64().unwrap() & (1 << 24) != 0);
}

#[test]
fn real_sys_dry_run_and_list() {
    let o = hrec(None, &["record", "--dry-run", "--", "true"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("perf_event_attr:"), "{out}");
    if !support::host_has_core_pmu() {
        // This VM: cpu-clock with the one-line notice.
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("sampling cpu-clock instead of cycles"),
            "{err}"
        );
    }
    let o = hrec(None, &["list"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("  cpu-clock ") && l.ends_with("[Software event]")),
        "{out}"
    );
    let o = hrec(None, &["list", "--pmus"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("software") && out.contains("cpu-clock"),
        "{out}"
    );
    let o = hrec(None, &["list", "--pmus", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    assert!(
        v["pmus"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "software")
    );
}

#[test]
fn list_shows_topdown_and_hybrid() {
    let o = hrec(Some("alderlake"), &["list", "--pmus"]);
    let (out, _) = text(&o);
    let line = |name: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap()
            .to_string()
    };
    let core = line("cpu_core");
    assert!(
        core.contains(" 4 ")
            && core.contains("0-15")
            && core.contains("yes")
            && core.contains("L2"),
        "{core}"
    );
    let atom = line("cpu_atom");
    assert!(
        atom.contains(" 8 ") && atom.contains("16-23") && atom.contains(" - "),
        "{atom}"
    );
    assert!(out.contains("Hardware events (on cpu_core, cpu_atom):"));
    assert!(out.contains("topdown-retiring"));
}

#[test]
fn errors_are_one_line_with_exit_codes() {
    // Bad event: exit 1, one line, position given.
    let o = hrec(
        Some("sapphirerapids"),
        &["record", "--dry-run", "-e", "cycles:x", "--", "true"],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        err,
        "hrec: error: bad event \"cycles:x\" at column 8 (\"x\"): unknown modifier 'x' (valid: ukhGHIpPSDWeR)\n"
    );
    // Usage errors: exit 2.
    assert_eq!(
        hrec(None, &["record", "--no-such-flag"]).status.code(),
        Some(2)
    );
    assert_eq!(
        hrec(None, &["record", "-a", "-p", "1", "--dry-run"])
            .status
            .code(),
        Some(2)
    );
    let o = hrec(None, &["record", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("nothing to record"));
    let o = hrec(None, &["record", "-m", "3", "--dry-run", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("power of two"));
    // Conflicting options found while planning are usage errors too.
    for args in [&["-F", "0"][..], &["-F", "max", "-c", "5"][..]] {
        let mut v = vec!["record", "--dry-run"];
        v.extend_from_slice(args);
        v.extend_from_slice(&["--", "true"]);
        assert_eq!(hrec(Some("zen4"), &v).status.code(), Some(2), "{args:?}");
    }
    // Reading a file that is missing or not a recording: one line naming it.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("junk"), b"not a recording at all").unwrap();
    for (sub, file, want) in [
        ("info", "missing.hrec", "cannot open"),
        ("script", "missing.hrec", "No such file"),
        ("info", "junk", "is not an hrec file"),
        ("script", "junk", "is not an hrec file"),
        ("report", "missing.hrec", "No such file"),
        ("report", "junk", "is not an hrec file"),
        ("flamegraph", "missing.hrec", "No such file"),
        ("flamegraph", "junk", "is not an hrec file"),
    ] {
        let path = dir.path().join(file);
        let o = hrec(None, &[sub, "-i", path.to_str().unwrap()]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{sub} {file}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("hrec: error: ") && err.contains(want),
            "{err}"
        );
    }
    // Bad report options are usage errors naming the choices. (A key that may name a
    // tracepoint field is checked against the recording's events.)
    let tdemo = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/recordings/tdemo-graniterapids.synthetic.hrec"
    );
    for (args, want) in [
        (
            &["--sort", "comm,bogus", "-i", tdemo][..],
            "unknown sort key \"bogus\"; the keys are: comm",
        ),
        (
            &["--sort", "comm,sym(x)"][..],
            "unknown sort key \"sym(x)\"; the keys are: comm",
        ),
        (&["--time", "5,1"][..], "\"5,1\" ends before it starts"),
        (&["--time", "x"][..], "is not START,END"),
    ] {
        let mut v = vec!["report"];
        v.extend_from_slice(args);
        let o = hrec(None, &v);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{err}");
    }
    // A sysfs root that is not one: the error names the directory and its cause.
    let o = hrec(None, &["--sysfs-root", "/nonexistent", "list"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("/nonexistent/bus/event_source/devices") && err.contains("No such file"),
        "{err}"
    );
}

/// `--symfs`, `--debug-dir`, `--time`, `--comm`, `--pid`, `--dso` and `--sym` are declared once
/// and mean the same in every command that reads samples: filtering to the `warm` function
/// leaves only its samples in script, report, flamegraph --folded and export.
#[test]
fn shared_reading_flags_filter_every_reading_command() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let file = dir.join("plain.hrec");
    let root = dir.join("root");
    let (file, root) = (file.to_str().unwrap(), root.to_str().unwrap());
    let common = [
        "-i",
        file,
        "--symfs",
        root,
        "--debug-dir",
        "/nonexistent",
        "--sym",
        "warm",
        "--dso",
        "work",
        "--comm",
        "work",
        "--time",
        "0,",
    ];
    let run = |cmd: &[&str]| {
        let mut args = cmd.to_vec();
        args.extend_from_slice(&common);
        let o = hrec(None, &args);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{cmd:?}: {err}");
        out
    };
    let all = text(&hrec(
        None,
        &["script", "-i", file, "--symfs", root, "-F", "ip,sym"],
    ))
    .0;
    let is_warm = |l: &str| l.split_whitespace().nth(1) == Some("warm");
    let warm_samples = all.lines().filter(|l| is_warm(l)).count();
    assert!(
        warm_samples > 0 && warm_samples < all.lines().count(),
        "{all}"
    );
    let script = run(&["script", "-F", "ip,sym"]);
    assert_eq!(script.lines().count(), warm_samples, "{script}");
    assert!(script.lines().all(is_warm), "{script}");
    // The row keeps its share of all samples (perf's --percentage absolute, the default).
    let report = run(&["report", "-s", "sym"]);
    assert!(
        !report.contains("100.00%") && report.contains("[.] warm"),
        "{report}"
    );
    let relative = run(&["report", "-s", "sym", "--percentage", "relative"]);
    assert!(relative.contains("100.00%"), "{relative}");
    assert!(!report.contains("[.] hot"), "{report}");
    let folded = run(&["flamegraph", "--folded"]);
    assert_eq!(folded.lines().count(), 1, "{folded}");
    assert!(
        folded.trim().ends_with(&format!(";warm {warm_samples}")),
        "{folded}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let pb = tmp.path().join("p.pb.gz");
    run(&["export", "--format", "pprof", "-o", pb.to_str().unwrap()]);
    assert!(pb.metadata().unwrap().len() > 0);
    // --pid of no process leaves nothing, in each command alike.
    let none = |cmd: &[&str]| {
        let mut args = cmd.to_vec();
        args.extend_from_slice(&["-i", file, "--symfs", root, "--pid", "1"]);
        text(&hrec(None, &args))
    };
    assert_eq!(none(&["script"]).0, "");
    assert!(none(&["flamegraph", "--folded"]).1.contains("no samples"));
    // A bad --time is one usage error line in every command.
    for cmd in [
        &["report"][..],
        &["script"],
        &["flamegraph"],
        &["export", "--format", "pprof"],
    ] {
        let mut args = cmd.to_vec();
        args.extend_from_slice(&["-i", file, "--time", "3,1"]);
        let o = hrec(None, &args);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}: {err}");
        assert!(err.contains("ends before it starts"), "{cmd:?}: {err}");
    }
}

/// Without `-i`, the reading commands take `hrec.data`, else `perf.data` when only that is in
/// the directory (saying so), as `perf report` users expect where perf recorded.
#[test]
fn without_input_perf_data_is_read_when_hrec_data_is_absent() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    std::fs::copy(
        fixture.join("plain.perf.data"),
        dir.path().join("perf.data"),
    )
    .unwrap();
    let o = support::hrec_in(dir.path(), &["report"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("reading perf.data (there is no hrec.data here"),
        "{err}"
    );
    let o = support::hrec_in(dir.path(), &["report", "-i", "perf.data"]);
    assert_eq!(text(&o).0, out, "the same report as with -i perf.data");
    // With hrec.data present, it is the one read, silently.
    std::fs::copy(fixture.join("plain.hrec"), dir.path().join("hrec.data")).unwrap();
    let o = support::hrec_in(dir.path(), &["script"]);
    let (_, err) = text(&o);
    assert!(o.status.success() && !err.contains("perf.data"), "{err}");
}

/// A period of 0 events is one line and exit 2, as a frequency of 0 is.
#[test]
fn zero_periods_and_frequencies_are_usage_errors() {
    for args in [["-c", "0"], ["-F", "0"]] {
        let mut all = vec!["record"];
        all.extend(args);
        all.extend(["--", "true"]);
        let o = hrec(None, &all);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

/// `--time` percentages on an hrec recording are of the span from its first to its last
/// sample, with perf's slice rule: computed here from the sample times `script --ns` prints.
#[test]
fn time_percentages_are_slices_of_the_sample_span() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let file = dir.join("plain.hrec");
    let file = file.to_str().unwrap();
    let times = |extra: &[&str]| -> Vec<u64> {
        let mut args = vec!["script", "-i", file, "--ns", "-F", "time"];
        args.extend_from_slice(extra);
        let o = hrec(None, &args);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{err}");
        out.lines()
            .map(|l| {
                l.trim()
                    .trim_end_matches(':')
                    .replace('.', "")
                    .parse()
                    .unwrap()
            })
            .collect()
    };
    let all = times(&[]);
    assert!(all.len() > 100, "{} samples", all.len());
    let (first, last) = (*all.iter().min().unwrap(), *all.iter().max().unwrap());
    let span = (last - first) as f64;
    for (arg, a, b) in [
        ("10%/2", 0.1, 0.2),
        ("0%-50%", 0.0, 0.5),
        ("50%-100%", 0.5, 1.0),
    ] {
        let start = first + (a * span).round() as u64;
        let mut end = first + (b * span).round() as u64;
        if end > start && end != last {
            end -= 1;
        }
        let want = all.iter().filter(|&&t| start <= t && t <= end).count();
        assert!(want > 0, "{arg}");
        assert_eq!(times(&["--time", arg]).len(), want, "--time {arg}");
    }
}

/// Usage errors found by the flag parser are one line (the message, clap's suggestion when it
/// has one, where the flags are listed) and exit 2, as hrec's own usage errors are; `--help`
/// still prints the whole usage and exits 0.
#[test]
fn flag_parser_errors_are_one_line() {
    for (args, want) in [
        (
            &["report", "--percent-limit", "x"][..],
            "invalid value 'x' for '--percent-limit",
        ),
        (
            &["report", "--sortt", "sym"][..],
            "unexpected argument '--sortt'",
        ),
        (&["report", "--sortt", "sym"][..], "'--sort'"),
        (&["record", "-c"][..], "a value is required for '--count"),
        (&["frobnicate"][..], "unrecognized subcommand 'frobnicate'"),
        (
            &["export"][..],
            "the following required arguments were not provided: --format",
        ),
    ] {
        let o = hrec(None, args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("hrec: error: "), "{err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(err.contains("(--help lists the flags)"), "{err}");
    }
    let o = hrec(None, &["report", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o).0.contains("--percent-limit"));
}

/// `hrec --version` names the commit it was built from in a git checkout (build.rs), and is
/// the plain version out of one.
#[test]
fn version_names_the_commit() {
    let o = hrec(None, &["--version"]);
    assert_eq!(o.status.code(), Some(0));
    let out = text(&o).0;
    let plain = format!("hrec {}", env!("CARGO_PKG_VERSION"));
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let git = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["log", "-1", "--date=short", "--format=%h %cd"])
        .output()
        .ok()
        .filter(|g| g.status.success() && repo.join(".git").exists());
    match git {
        Some(g) => {
            let commit = String::from_utf8_lossy(&g.stdout).trim().to_string();
            assert_eq!(out, format!("{plain} ({commit})\n"));
        }
        None => assert_eq!(out, format!("{plain}\n")),
    }
    // Every command says the same (clap names it `hrec-record`).
    let record = text(&hrec(None, &["record", "--version"])).0;
    assert_eq!(record.strip_prefix("hrec-record"), out.strip_prefix("hrec"));
}

/// `--help` of a command: its `about` first, its everyday flags first (perf's man pages'
/// order), an `Examples:` section last; `hrec help CMD` is the same text.
#[test]
fn help_puts_everyday_flags_first_and_ends_with_examples() {
    let help = |args: &[&str]| {
        let o = hrec(None, args);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        text(&o).0
    };
    let record = help(&["record", "--help"]);
    assert_eq!(help(&["help", "record"]), record);
    assert!(record.starts_with("Sample a command (or CPUs, or processes) into a file\n"));
    let order = |text: &str, flags: &[&str]| {
        let at: Vec<usize> = flags
            .iter()
            .map(|f| {
                text.find(&format!("\n  {f}"))
                    .or_else(|| text.find(&format!("\n      {f}")))
                    .unwrap_or_else(|| panic!("{f} not listed:\n{text}"))
            })
            .collect();
        assert!(at.is_sorted(), "{flags:?} out of order:\n{text}");
    };
    order(
        &record,
        &[
            "-e, --event",
            "-F, --freq",
            "-c, --count",
            "-g\n",
            "--call-graph",
            "-W, --weight",
            "-o, --output",
            "-a, --all-cpus",
            "-C, --cpu",
            "-p, --pid",
            "-t, --tid",
            "-d, --data",
            "--dry-run",
            "-v, --verbose",
            "-h, --help",
        ],
    );
    let report = help(&["report", "--help"]);
    order(
        &report,
        &[
            "-i, --input",
            "--stdio",
            "-s, --sort",
            "-g, --call-graph",
            "--children",
            "--percent-limit",
            "-c, --comm",
            "-d, --dso",
            "-S, --sym",
            "--json",
            "-h, --help",
        ],
    );
    for cmd in [
        &["record"][..],
        &["report"],
        &["script"],
        &["flamegraph"],
        &["export"],
        &["convert"],
        &["stat"],
        &["list"],
        &["info"],
        &["evlist"],
        &["buildid-list"],
        &["buildid-cache"],
        &["archive"],
        &["annotate"],
        &["diff"],
        &["top"],
        &["mem"],
        &["mem", "record"],
        &["mem", "report"],
        &["c2c"],
        &["c2c", "record"],
        &["c2c", "report"],
    ] {
        let mut args = cmd.to_vec();
        args.push("--help");
        let h = help(&args);
        let examples = h
            .split_once("\nExamples:\n")
            .unwrap_or_else(|| panic!("{cmd:?}: no examples:\n{h}"))
            .1;
        let own = format!("hrec {}", cmd.join(" "));
        let commands: Vec<&str> = examples
            .lines()
            .filter_map(|l| l.strip_prefix("  "))
            .filter(|l| !l.starts_with(' '))
            .collect();
        assert!((3..=6).contains(&commands.len()), "{cmd:?}: {commands:?}");
        for c in commands {
            assert!(
                c == own || c.starts_with(&format!("{own} ")),
                "{cmd:?}: an example of another command: {c}"
            );
        }
    }
}
