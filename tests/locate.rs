//! `hrec record --locate NODE`: Intel's `LocateWith` sampler of each TMA node joins the
//! recording, checked on the planned attrs (`--dry-run --json`) of the fixture machines
//! against Intel's own files (`../shared/perfmon`, read here, not through hrec): the event's
//! encoding, `SampleAfterValue` as the period, precise exactly when Intel's `Precise` says so,
//! a sampler of its own on the P-core PMU, the rest of the plan unchanged.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{hrec, text};

fn perfmon_dir() -> Option<PathBuf> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/perfmon");
    if d.join("mapfile.csv").exists() {
        Some(d)
    } else {
        eprintln!("skipped: ../shared/perfmon not found");
        None
    }
}

/// The planned events of `record ARGS --dry-run --json -- true` on `model`.
fn plan(model: &str, dir: &Path, args: &[&str]) -> (Vec<Value>, String) {
    let d = dir.display().to_string();
    let mut a = vec!["record", "--perfmon", &d, "--dry-run", "--json"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--", "true"]);
    let o = hrec(Some(model), &a);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{model} {args:?}: {err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    (v["events"].as_array().unwrap().clone(), err)
}

/// Intel's event file entries by name: (event code, umask, SampleAfterValue, precise).
fn intel_events(path: &Path) -> BTreeMap<String, (u64, u64, u64, bool)> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let num = |x: &Value| {
        let s = x.as_str().unwrap_or("0").split(',').next().unwrap().trim();
        match s.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).unwrap(),
            None => s.parse().unwrap_or(0),
        }
    };
    v["Events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let precise = e.get("Precise").or_else(|| e.get("PEBS")).map(num) != Some(0)
                && (e.get("Precise").is_some() || e.get("PEBS").is_some());
            (
                e["EventName"].as_str().unwrap().to_string(),
                (
                    num(&e["EventCode"]),
                    num(&e["UMask"]),
                    num(&e["SampleAfterValue"]),
                    precise,
                ),
            )
        })
        .collect()
}

/// Intel's `LocateWith` of a node (by Intel's name), `#NA` and empty left out.
fn locate_with(metrics: &Path, node: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(metrics).unwrap()).unwrap();
    let m = v["Metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["MetricName"] == node)
        .unwrap();
    m["LocateWith"]
        .as_str()
        .unwrap_or("")
        .split(';')
        .map(str::trim)
        .filter(|e| !e.is_empty() && *e != "#NA")
        .map(str::to_string)
        .collect()
}

/// The names of the events other than tracking ones (a hybrid plan adds a `dummy` at its
/// end).
fn names(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["role"] != "tracking")
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}

/// Granite Rapids: `--td-level 3 --locate tma_l3_bound,tma_divider` keeps every metric group
/// and adds the samplers Intel names, each as Intel's files describe it.
#[test]
fn locate_adds_intels_samplers_to_the_metric_groups() {
    let Some(dir) = perfmon_dir() else { return };
    let events = intel_events(&dir.join("GNR/events/graniterapids_core.json"));
    let metrics = dir.join("GNR/metrics/graniterapids_metrics.json");
    let (base, _) = plan("graniterapids", &dir, &["--td-level", "3"]);
    let (with, err) = plan(
        "graniterapids",
        &dir,
        &["--td-level", "3", "--locate", "tma_l3_bound,tma_divider"],
    );
    assert_eq!(names(&with[..base.len()]), names(&base));
    let wanted: Vec<String> = ["L3_Bound", "Divider"]
        .iter()
        .flat_map(|n| locate_with(&metrics, n))
        .collect();
    assert!(wanted.contains(&"MEM_LOAD_RETIRED.L3_HIT".to_string()));
    let added = &with[base.len()..];
    // Tracking (dummy) events, if any, are not samplers of ours.
    let samplers: Vec<&Value> = added.iter().filter(|e| e["role"] == "sampler").collect();
    assert_eq!(samplers.len(), wanted.len(), "{added:?}");
    for (e, name) in samplers.iter().zip(&wanted) {
        assert_eq!(e["name"].as_str(), Some(name.as_str()));
        let (code, umask, sav, precise) = events[name.as_str()];
        let attr = &e["attr"];
        assert_eq!(attr["config"].as_u64().unwrap() & 0xffff, code | umask << 8);
        assert_eq!(attr["sample_period"].as_u64(), Some(sav), "{name}");
        assert_eq!(attr["precise_ip"].as_u64().unwrap() > 0, precise, "{name}");
        assert_eq!(e["pmu"], "cpu");
        // A sampler of its own: it leads its own group.
        assert_eq!(e["leader"], e["index"], "{name}");
    }
    // MEM_LOAD_RETIRED.L3_HIT is precise, ARITH.DIV_ACTIVE is not and is said so.
    assert!(events["MEM_LOAD_RETIRED.L3_HIT"].3);
    assert!(
        err.contains("--locate tma_divider: sampling ARITH.DIV_ACTIVE"),
        "{err}"
    );
    assert!(err.contains("not a precise event"), "{err}");
    assert!(
        err.contains("hrec annotate --event MEM_LOAD_RETIRED.L3_HIT"),
        "{err}"
    );
}

/// `--locate` alone keeps the default plan; on a hybrid part the sampler goes to the P-cores
/// only (Intel's metric file there is the P-core's).
#[test]
fn locate_alone_keeps_the_default_plan_and_the_p_cores() {
    let Some(dir) = perfmon_dir() else { return };
    let (base, _) = plan("alderlake", &dir, &[]);
    let (with, _) = plan("alderlake", &dir, &["--locate", "tma_l3_bound"]);
    let (old, new) = (names(&base), names(&with));
    assert_eq!(new[..old.len()], old[..]);
    let added: Vec<&Value> = with
        .iter()
        .filter(|e| e["role"] == "sampler" && !old.contains(&e["name"].as_str().unwrap().into()))
        .collect();
    let metrics = dir.join("ADL/metrics/alderlake_metrics_goldencove_core.json");
    assert_eq!(added.len(), locate_with(&metrics, "L3_Bound").len());
    assert!(added.iter().all(|e| e["pmu"] == "cpu_core"), "{added:?}");
    // The dry run in words says what the samplers are.
    let d = dir.display().to_string();
    let o = hrec(
        Some("alderlake"),
        &[
            "record",
            "--perfmon",
            &d,
            "--locate",
            "tma_l3_bound",
            "--dry-run",
            "--",
            "true",
        ],
    );
    let (out, _) = text(&o);
    assert!(
        out.contains("--locate tma_l3_bound: MEM_LOAD_RETIRED.L3_HIT on cpu_core, precise"),
        "{out}"
    );
}

/// Bad input: one line each, nothing opened.
#[test]
fn locate_bad_input_is_one_line() {
    let Some(dir) = perfmon_dir() else { return };
    let d = dir.display().to_string();
    let cases: [(&str, &[&str], &str); 5] = [
        (
            "graniterapids",
            &["--locate", "tma_l3_bund"],
            "--locate tma_l3_bund: not a TMA node of",
        ),
        (
            "graniterapids",
            &["--locate", "tma_info_thread_ipc"],
            "not a TMA node",
        ),
        // Intel names no event for Memory_Bound (`#NA`); its children have theirs.
        (
            "graniterapids",
            &["--locate", "tma_memory_bound"],
            "--locate tma_memory_bound: Intel's file names no event to locate it with (its children have: tma_l1_bound",
        ),
        (
            "vm",
            &["--locate", "tma_l3_bound"],
            "--locate needs Intel's metric files for this CPU and a core PMU",
        ),
        (
            "graniterapids",
            &["--locate", "tma_l3_bound", "--perfmon", "/nonexistent"],
            "--locate needs Intel's metric files",
        ),
    ];
    for (model, args, want) in cases {
        let mut a = vec!["record"];
        if !args.contains(&"--perfmon") {
            a.extend_from_slice(&["--perfmon", &d]);
        }
        a.extend_from_slice(args);
        a.extend_from_slice(&["--dry-run", "--", "true"]);
        let o = hrec(Some(model), &a);
        let (out, err) = text(&o);
        assert!(!o.status.success(), "{model} {args:?}: {out}");
        assert!(err.contains(want), "{model} {args:?}: {err}");
        let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(errors.len(), 1, "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
