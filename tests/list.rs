//! `hrec list` against `perf list` on this machine (same names in the same sections), and the
//! perfmon part against Intel's files (`../shared/perfmon` or `HREC_PERFMON_DIR`) on the
//! fixture sysfs trees, with the expected values computed here from the JSON.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use support::{sysfs, text};

/// `hrec list ARGS` with the real /sys and no perfmon files (perf 6.1 has no tables for CPUs it does
/// not know, and hrec's files are not what perf has built in).
fn hrec_host(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hrec"))
        .arg("list")
        .args(args)
        .env_remove("HREC_SYSFS_ROOT")
        .env_remove("HREC_PROCFS_ROOT")
        .env("HREC_PERFMON_DIR", "/nonexistent-hrec-perfmon")
        .env_remove("COLUMNS")
        .output()
        .expect("run hrec")
}

/// hrec on a fixture model with Intel's files for `cpuid`.
fn hrec_fixture(model: &str, dir: &Path, cpuid: &str, args: &[&str]) -> Output {
    let mut all = vec!["list", "--perfmon", dir.to_str().unwrap(), "--cpuid", cpuid];
    all.extend_from_slice(args);
    Command::new(env!("CARGO_BIN_EXE_hrec"))
        .args(&all)
        .env("HREC_SYSFS_ROOT", sysfs(model))
        .env_remove("COLUMNS")
        .output()
        .expect("run hrec")
}

fn perf_list(args: &[&str]) -> Option<String> {
    let o = Command::new("perf").arg("list").args(args).output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
}

fn perfmon_dir() -> Option<PathBuf> {
    let d = std::env::var_os("HREC_PERFMON_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/perfmon"));
    if d.join("mapfile.csv").exists() {
        Some(d)
    } else {
        eprintln!("skipped: no perfmon files at {}", d.display());
        None
    }
}

/// `(name, label)` of the one-line entries (`  cpu-clock   [Software event]`).
fn entries(out: &str) -> Vec<(String, String)> {
    out.lines()
        .filter_map(|l| {
            let (name, label) = l.trim_end().rsplit_once(" [")?;
            Some((
                name.trim().to_string(),
                label.trim_end_matches(']').to_string(),
            ))
        })
        .filter(|(n, _)| !n.is_empty())
        .collect()
}

#[test]
fn classes_and_globs_list_what_perf_lists_here() {
    if perf_list(&["sw"]).is_none() {
        eprintln!("skipped: perf is not installed or cannot list events");
        return;
    }
    let host_pmu = support::host_has_core_pmu();
    let mut compared = 0;
    for args in [
        &["sw"][..],
        &["hw"],
        &["cache"],
        &["pmu"],
        &["tracepoint"],
        &["cpu-*"],
        &["cache-*"],
        &["faults"],
        &["clock"],
        &["sched:*switch*"],
        &["sw", "hw"],
        &["no-such-event-anywhere"],
    ] {
        // perf first: as root it mounts tracefs where it is not mounted yet (a fresh
        // machine), and hrec then reads the same tracepoints.
        // perf's tool events (duration_time, ...) are not events hrec can count: not listed.
        let theirs: Vec<(String, String)> = entries(&perf_list(args).unwrap())
            .into_iter()
            .filter(|(_, label)| label != "Tool event")
            .collect();
        let o = hrec_host(args);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{args:?}: {err}");
        let ours = entries(&out);
        if host_pmu && args.contains(&"cache") {
            // perf drops the cache events this model's kernel table leaves out; hrec cannot
            // tell from sysfs and lists them all.
            for e in &theirs {
                assert!(
                    ours.contains(e),
                    "{args:?}: perf lists {e:?}, hrec does not"
                );
            }
            continue;
        }
        if args == ["pmu"] {
            // Kernel PMU events only: perf's built-in JSON tables (multi-line entries) are
            // its own; hrec's come from Intel's files.
            let k = |v: &[(String, String)]| -> Vec<(String, String)> {
                v.iter()
                    .filter(|(_, l)| l == "Kernel PMU event")
                    .cloned()
                    .collect()
            };
            assert_eq!(k(&ours), k(&theirs), "{args:?}");
            compared += 1;
            continue;
        }
        if args == ["tracepoint"] && theirs.is_empty() {
            eprintln!("note: perf lists no tracepoints here (tracefs not readable)");
            continue;
        }
        assert_eq!(
            ours, theirs,
            "{args:?}:\nhrec:\n{out}\nhrec's stderr:\n{err}"
        );
        compared += 1;
    }
    assert!(compared >= 9, "only {compared} comparisons made");
}

#[test]
fn a_glob_that_matches_nothing_prints_nothing_and_bad_flags_are_one_line() {
    let o = hrec_host(&["no-such-event-anywhere"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.is_empty(), "{out}");
    let o = hrec_host(&["--frobnicate"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("hrec: error: ") && err.contains("--frobnicate"),
        "{err}"
    );
}

#[test]
fn hardware_events_are_the_core_pmus_legacy_aliases() {
    for model in ["graniterapids", "zen4", "vm"] {
        let o = support::hrec(Some(model), &["list", "hw"]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{err}");
        let listed: Vec<String> = entries(&out)
            .into_iter()
            .flat_map(|(n, _)| n.split(" OR ").map(str::to_string).collect::<Vec<String>>())
            .collect();
        let events = sysfs(model).join("bus/event_source/devices/cpu/events");
        let legacy = [
            "cpu-cycles",
            "instructions",
            "cache-references",
            "cache-misses",
            "branch-instructions",
            "branch-misses",
            "bus-cycles",
            "stalled-cycles-frontend",
            "stalled-cycles-backend",
            "ref-cycles",
        ];
        for name in legacy {
            assert_eq!(
                listed.iter().any(|l| l == name),
                events.join(name).exists(),
                "{model}: {name}\n{out}"
            );
        }
    }
}

/// The files mapfile.csv lists for `cpuid` with this `EventType` (and core role, on hybrid
/// parts), read without hrec's code.
fn mapfile_files(dir: &Path, cpuid_prefix: &str, event_type: &str, role: &str) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(dir.join("mapfile.csv")).unwrap();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            (c.len() >= 4
                && c[0] == cpuid_prefix
                && c[3] == event_type
                && c.get(6).copied().unwrap_or("") == role)
                .then(|| dir.join(c[2].trim_start_matches('/')))
        })
        .collect()
}

fn events_of(path: &Path) -> Vec<Value> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["Events"].as_array().unwrap().clone()
}

fn deprecated(e: &Value) -> bool {
    e["Deprecated"].as_str() == Some("1")
}

fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn granite_rapids_lists_intels_events_under_topics() {
    let Some(dir) = perfmon_dir() else { return };
    let core = mapfile_files(&dir, "GenuineIntel-6-AD", "core", "");
    assert_eq!(core.len(), 1, "{core:?}");
    let events = events_of(&core[0]);
    let l3 = events
        .iter()
        .find(|e| e["EventName"] == "MEM_LOAD_RETIRED.L3_MISS")
        .expect("MEM_LOAD_RETIRED.L3_MISS in Intel's file");
    let o = hrec_fixture("graniterapids", &dir, "GenuineIntel-6-AD-1", &[]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim_end() == "  mem_load_retired.l3_miss")
        .unwrap_or_else(|| panic!("no mem_load_retired.l3_miss line:\n{out}"));
    // Its topic is the nearest header above: perf files it under cache.
    let topic = lines[..at]
        .iter()
        .rev()
        .find(|l| !l.starts_with(' ') && l.ends_with(':'))
        .unwrap();
    assert_eq!(*topic, "cache:");
    // The description, wrapped in brackets over the following lines, is Intel's.
    let mut desc = String::new();
    for l in &lines[at + 1..] {
        desc.push_str(l);
        desc.push(' ');
        if l.ends_with(']') {
            break;
        }
    }
    let desc = words(desc.trim().trim_start_matches('[').trim_end_matches(']'));
    // perf's wording: Intel's text without its full stop, then the precise notes.
    let brief = l3["BriefDescription"]
        .as_str()
        .unwrap()
        .trim_end_matches('.');
    let mut want_desc = words(brief);
    if l3["Data_LA"] == "1" {
        want_desc += " Supports address when precise";
    }
    if l3["Precise"] == "1" {
        want_desc += " (Precise event)";
    }
    assert_eq!(desc, want_desc);
    // Thousands of lines, as perf on such a machine.
    assert!(lines.len() > 2000, "{} lines", lines.len());

    // One JSON object per non-deprecated event of Intel's file, on the cpu PMU.
    let o = hrec_fixture("graniterapids", &dir, "GenuineIntel-6-AD-1", &["--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    let listed: Vec<&Value> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e.get("Topic").is_some())
        .collect();
    let want = events.iter().filter(|e| !deprecated(e)).count();
    assert_eq!(listed.len(), want);
    assert!(listed.iter().all(|e| e["Unit"] == "cpu"));
    let e = listed
        .iter()
        .find(|e| e["EventName"] == "mem_load_retired.l3_miss")
        .unwrap();
    assert_eq!(e["Topic"], "cache");
    assert_eq!(words(e["BriefDescription"].as_str().unwrap()), want_desc);
    let public = l3["PublicDescription"]
        .as_str()
        .unwrap()
        .trim_end_matches('.');
    assert!(
        e["PublicDescription"].as_str().unwrap().starts_with(public),
        "{e:?}"
    );
    // The encoding is the event code and unit mask of the file.
    let hex = |s: &Value| u64::from_str_radix(s.as_str().unwrap().trim_start_matches("0x"), 16);
    let want_enc = format!(
        "cpu/event={:#x},umask={:#x}/",
        hex(&l3["EventCode"]).unwrap(),
        hex(&l3["UMask"]).unwrap()
    );
    assert_eq!(e["Encoding"], want_enc.as_str());
    // The text count matches too: one name line per event between the first topic header and
    // the metrics.
    let first_topic = lines
        .iter()
        .position(|l| !l.starts_with(' ') && l.ends_with(':'))
        .unwrap();
    let text_events = lines[first_topic..]
        .iter()
        .take_while(|l| **l != "Metric Groups:")
        .filter(|l| l.starts_with("  ") && !l.starts_with("   ") && !l.contains(" ["))
        .count();
    assert_eq!(text_events, want);
}

#[test]
fn details_print_the_encoding_and_globs_match_topics_and_names() {
    let Some(dir) = perfmon_dir() else { return };
    let events = events_of(&mapfile_files(&dir, "GenuineIntel-6-AD", "core", "")[0]);
    let o = hrec_fixture(
        "graniterapids",
        &dir,
        "GenuineIntel-6-AD-1",
        &["--details", "MEM_LOAD*"],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let want: Vec<String> = events
        .iter()
        .filter(|e| !deprecated(e))
        .map(|e| e["EventName"].as_str().unwrap().to_ascii_lowercase())
        .filter(|n| n.contains("mem_load"))
        .collect();
    let names: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .map(str::trim)
        .collect();
    let mut sorted_want = want.clone();
    sorted_want.sort();
    let mut got: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    got.sort();
    assert_eq!(got, sorted_want, "{out}");
    // Each name is followed by its description and the encoding line.
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == "mem_load_retired.l3_miss")
        .unwrap();
    let enc = lines[at + 1..]
        .iter()
        .find(|l| l.trim_start().starts_with("cpu/"))
        .unwrap();
    assert!(enc.starts_with("        cpu/event=0x"), "{enc:?}");

    // A topic matches too (perf matches the alias's topic): every listed event is in it.
    let o = hrec_fixture(
        "graniterapids",
        &dir,
        "GenuineIntel-6-AD-1",
        &["--json", "virtual memory"],
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let v = v.as_array().unwrap();
    assert!(!v.is_empty());
    assert!(v.iter().all(|e| e["Topic"] == "virtual memory"), "{v:?}");
}

#[test]
fn tma_metrics_are_listed_under_their_groups() {
    let Some(dir) = perfmon_dir() else { return };
    let metrics_file = &mapfile_files(&dir, "GenuineIntel-6-AD", "metrics", "")[0];
    let m: Value = serde_json::from_str(&std::fs::read_to_string(metrics_file).unwrap()).unwrap();
    let fe = m["Metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["MetricName"] == "Frontend_Bound")
        .unwrap();
    let groups: Vec<String> = fe["MetricGroup"]
        .as_str()
        .unwrap()
        .split(';')
        .map(|g| g.replace("TmaL", "TopdownL"))
        .collect();
    assert!(groups.iter().any(|g| g == "TopdownL1"), "{groups:?}");
    let o = hrec_fixture("graniterapids", &dir, "GenuineIntel-6-AD-1", &[]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let metric_part = out
        .split("\nMetric Groups:\n\n")
        .nth(1)
        .expect("Metric Groups");
    // Blocks: "Group:" then "  metric" / "       [desc]" lines, then a blank line.
    for block in metric_part.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut lines = block.lines();
        let head = lines.next().unwrap();
        let group = head.strip_suffix(':').unwrap_or_else(|| panic!("{head:?}"));
        let has = block.lines().any(|l| l == "  tma_frontend_bound");
        assert_eq!(has, groups.iter().any(|g| g == group), "group {group}");
    }
    for g in &groups {
        assert!(
            metric_part.contains(&format!("\n{g}:\n"))
                || metric_part.starts_with(&format!("{g}:\n")),
            "{g}"
        );
    }
    let at = out.find("  tma_frontend_bound\n").unwrap();
    let desc_line = out[at..].lines().nth(1).unwrap();
    assert_eq!(
        desc_line,
        format!("       [{}]", fe["BriefDescription"].as_str().unwrap())
    );
    // `metricgroup` lists the group names alone, `metric` the metrics alone.
    let o = hrec_fixture(
        "graniterapids",
        &dir,
        "GenuineIntel-6-AD-1",
        &["metricgroup"],
    );
    let (out, _) = text(&o);
    assert!(out.starts_with("\nMetric Groups:\n\n"), "{out}");
    assert!(out.lines().any(|l| l == "TopdownL1"), "{out}");
    assert!(!out.contains("tma_"), "{out}");
    let o = hrec_fixture("graniterapids", &dir, "GenuineIntel-6-AD-1", &["metric"]);
    let (out, _) = text(&o);
    assert!(out.starts_with("\nMetrics:\n\n"), "{out}");
    let n = m["Metrics"].as_array().unwrap().len();
    let names: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .collect();
    assert_eq!(names.len(), n);
    assert!(names.is_sorted(), "perf sorts the metrics by name");
}

#[test]
fn hybrid_parts_list_both_core_types_and_deprecated_events_on_request() {
    let Some(dir) = perfmon_dir() else { return };
    let count = |args: &[&str]| -> (usize, usize) {
        let o = hrec_fixture("alderlake", &dir, "GenuineIntel-6-97-2", args);
        let (_, err) = text(&o);
        assert!(o.status.success(), "{err}");
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let of = |pmu: &str| {
            v.as_array()
                .unwrap()
                .iter()
                .filter(|e| e.get("Topic").is_some() && e["Unit"] == pmu)
                .count()
        };
        (of("cpu_core"), of("cpu_atom"))
    };
    let p = events_of(&mapfile_files(&dir, "GenuineIntel-6-97", "hybridcore", "Core")[0]);
    let e = events_of(&mapfile_files(&dir, "GenuineIntel-6-97", "hybridcore", "Atom")[0]);
    let live = |v: &[Value]| v.iter().filter(|x| !deprecated(x)).count();
    assert_eq!(count(&["--json"]), (live(&p), live(&e)));
    assert_eq!(count(&["--json", "--deprecated"]), (p.len(), e.len()));
}

#[test]
fn a_broken_event_file_is_one_line_naming_it() {
    let Some(dir) = perfmon_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let row = std::fs::read_to_string(dir.join("mapfile.csv"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("GenuineIntel-6-AD,") && l.contains(",core,"))
        .unwrap()
        .to_string();
    let rel = row.split(',').nth(2).unwrap().trim_start_matches('/');
    std::fs::write(
        tmp.path().join("mapfile.csv"),
        format!("Family-model,Version,Filename,EventType,Core Type,Native Model ID,Core Role Name\n{row}\n"),
    )
    .unwrap();
    let broken = tmp.path().join(rel);
    std::fs::create_dir_all(broken.parent().unwrap()).unwrap();
    let good = std::fs::read_to_string(dir.join(rel)).unwrap();
    std::fs::write(&broken, &good[..good.len() / 2]).unwrap();
    let o = hrec_fixture("graniterapids", tmp.path(), "GenuineIntel-6-AD-1", &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(broken.to_str().unwrap()) && err.contains("invalid JSON"),
        "{err}"
    );
}

/// `list metric` marks the metrics hrec computes per function (`record -M`): core events
/// only; an uncore event, the TSC or the run's duration make a metric the run's.
#[test]
fn metrics_per_function_are_marked() {
    let Some(dir) = perfmon_dir() else { return };
    let o = hrec_fixture("graniterapids", &dir, "GenuineIntel-6-AD-1", &["metric"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let marked = |name: &str| {
        let at = out
            .find(&format!("\n  {name}\n"))
            .unwrap_or_else(|| panic!("{name}"));
        out[at + 1..]
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("       ["))
            .any(|l| l == format!("       [per function: hrec record -M {name}]"))
    };
    // Core events only.
    assert!(marked("tma_l3_bound"));
    assert!(marked("tma_info_thread_ipc"));
    assert!(marked("cpu_operating_frequency"));
    // Uncore (memory controller), the TSC, the run's duration.
    assert!(!marked("memory_bandwidth_read"));
    assert!(!marked("cpu_utilization"));
    let o = hrec_fixture(
        "graniterapids",
        &dir,
        "GenuineIntel-6-AD-1",
        &["metric", "-j"],
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let per = |name: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|m| m["MetricName"] == name)
            .map(|m| m["PerFunction"].clone())
    };
    assert_eq!(per("tma_l3_bound"), Some(Value::Bool(true)));
    assert_eq!(per("memory_bandwidth_read"), Some(Value::Bool(false)));
}

/// An unprivileged user and tracefs' default mode 0700: the note says tracefs is root's, and
/// how to open it up, not that it is missing. Needs tracefs at /sys/kernel/tracing with that
/// mode and a way to run as nobody; says it was skipped otherwise.
#[test]
fn unreadable_tracefs_is_named_as_root_only() {
    use std::os::unix::fs::PermissionsExt;
    let Ok(m) = std::fs::metadata("/sys/kernel/tracing/events")
        .and_then(|_| std::fs::metadata("/sys/kernel/tracing"))
    else {
        eprintln!("skipped: no tracefs at /sys/kernel/tracing (or not readable here)");
        return;
    };
    if m.permissions().mode() & 0o005 != 0 {
        eprintln!("skipped: /sys/kernel/tracing is readable by others here");
        return;
    }
    let Some(prefix) = support::privilege::unprivileged("an unreadable tracefs") else {
        return;
    };
    let o = support::privilege::command_as(&prefix, env!("CARGO_BIN_EXE_hrec"))
        .args(["list", "tracepoint"])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let notes: Vec<&str> = err.lines().collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(
        notes[0].contains("/sys/kernel/tracing is readable by root only")
            && notes[0].contains("mount -o remount,mode=755 /sys/kernel/tracing"),
        "{err}"
    );
}
