//! `hrec report --td-level 3` / `--metrics`: Intel's metrics per function from the
//! sampling-read groups of `record --td-level 3`, on a synthetic Granite Rapids recording made
//! from the real planner's plan (Intel's files from `../shared/perfmon`), byte for byte in the
//! kernel's layout and written with the real file writer. Every group's deltas follow a
//! per-function truth (events per cycle, [`support::metricgroups::rate`]); the expected metrics are Intel's formulas evaluated
//! here on that truth with the metrics evaluator, not through the report's code.

mod support;

use std::path::Path;

use hrec::data::{EventId, EventMeta, MetricChoiceMeta, Trailer};
use hrec::event::attr::{read, sample as st};
use hrec::event::plan::metric::MetricChoice;
use hrec::event::plan::{RecordOptions, Role};
use hrec::metrics::perfmon::{EventRef, Metric};
use serde_json::Value;
use support::encode::{Encoder, SampleFields};
use support::metricgroups::{FUNCS, assert_metrics, metric_row, needs_group3, rate, reads, synth};
use support::metricrec::{
    KERNEL_EXACT, Synth, groups, id, perfmon, perfmon_dir, plan_of, plan_td3, truth, truth_path,
    truth_threads, write_plain,
};
use support::{hrec_in, text};

const MODEL: &str = "graniterapids";

fn report(dir: &Path, args: &[&str]) -> (Value, String) {
    let mut a = vec!["report", "--json"];
    a.extend_from_slice(args);
    let o = hrec_in(dir, &a);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    (
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}")),
        err,
    )
}

#[test]
fn td_level_3_per_function_equals_intels_formulas_on_the_truth() {
    let Some(pdir) = perfmon_dir() else { return };
    let pm = perfmon(&pdir, MODEL);
    let plan = plan_td3(&pdir, MODEL);
    let gs = groups(&plan);
    assert!(gs.len() >= 7, "{} groups", gs.len());
    let tmp = tempfile::tempdir().unwrap();
    synth(MODEL).write(&tmp.path().join("hrec.data"), &plan);
    let pdir_s = pdir.display().to_string();
    let (v, err) = report(
        tmp.path(),
        &[
            "--td-level",
            "3",
            "--perfmon",
            &pdir_s,
            "--metric-min-reads",
            "20",
        ],
    );
    assert!(!err.contains("no metrics per row"), "{err}");
    let chosen = pm.tma_metrics(3);
    assert_eq!(chosen.len(), 45);
    let no_rl = |_: &str| None;
    for (func, _) in FUNCS {
        let row = metric_row(&v, &format!("[k] {func}"));
        // Null in `rare` where a metric needs group 3 (the one it has too few reads of).
        assert_metrics(row, &chosen, func, &|m| {
            if func == "rare" && needs_group3(&plan, m) {
                None
            } else {
                truth(m, &|k| rate(func, k), &|n| pm.default_retire_latency(n))
            }
        });
        if func != "rare" {
            let value = |m: &Metric| truth(m, &|k| rate(func, k), &no_rl);
            let path = truth_path(&pm, &chosen, &value);
            let got: Vec<String> = row["bottleneck"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect();
            assert_eq!(got, path, "{func}");
            assert!(path.len() >= 3, "{func}: {path:?}");
        }
        let groups = row["metric_groups"].as_array().unwrap();
        assert_eq!(groups.len(), gs.len());
        for (g, gr) in groups.iter().enumerate() {
            assert_eq!(gr["reads"], reads(func, g), "{func} group {g}");
        }
    }
    // The intended bottlenecks.
    let path = |f: &str| metric_row(&v, &format!("[k] {f}"))["bottleneck"].clone();
    assert_eq!(
        path("chase"),
        serde_json::json!(["tma_backend_bound", "tma_memory_bound", "tma_l3_bound"])
    );
    assert_eq!(
        path("divide"),
        serde_json::json!(["tma_backend_bound", "tma_core_bound", "tma_divider"])
    );
    // Below the read minimum: null, never a number of five samples.
    let rare = metric_row(&v, "[k] rare");
    assert!(rare["metrics"]["tma_retiring"].is_f64());
    // Metrics with a number in `chase` (whose group 3 has enough reads) and none in `rare`.
    let chase_metrics = &metric_row(&v, "[k] chase")["metrics"];
    let nulls: Vec<&String> = rare["metrics"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, x)| x.is_null() && chase_metrics[k.as_str()].is_f64())
        .map(|(k, _)| k)
        .collect();
    assert!(nulls.len() >= 3, "rare: group 3 has 5 reads: {nulls:?}");
    // Today's perf-metrics columns stay as they were: each `topdown-*` over their sum.
    let chase = metric_row(&v, "[k] chase");
    assert_eq!(chase["topdown"]["level1"]["Backend Bound"], 80.0);
    assert_eq!(chase["topdown"]["level2"]["Memory Bound"], 70.0);
    // The text report: the tree under each row, the bottleneck path marked, `-` below the
    // read minimum.
    let o = hrec_in(
        tmp.path(),
        &["report", "--stdio", "--td-level", "3", "--perfmon", &pdir_s],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let block = |func: &str| -> Vec<String> {
        out.lines()
            .skip_while(|l| !l.ends_with(&format!("[k] {func}")))
            .skip(1)
            .take_while(|l| l.trim_start().starts_with('|'))
            .map(|l| l.split_once('|').unwrap().1.trim_end().to_string())
            .collect()
    };
    let chase = block("chase");
    let marked: Vec<&str> = chase
        .iter()
        .filter(|l| l.ends_with("<=="))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        marked,
        ["tma_backend_bound", "tma_memory_bound", "tma_l3_bound"],
        "{out}"
    );
    let l3 = chase.iter().find(|l| l.contains("tma_l3_bound")).unwrap();
    assert!(
        l3.starts_with("        tma_l3_bound"),
        "indented by level: {l3:?}"
    );
    let want = truth(
        pm.metric("tma_l3_bound").unwrap(),
        &|k| rate("chase", k),
        &no_rl,
    )
    .unwrap();
    assert!(l3.contains(&format!("{want:.1}")), "{l3} {want}");
}

#[test]
fn metrics_list_and_retire_latency_from_the_recording() {
    let Some(pdir) = perfmon_dir() else { return };
    let pm = perfmon(&pdir, MODEL);
    // A metric with a `:R` term and the events it counts.
    let Some(m) = pm
        .all()
        .iter()
        .find(|m| m.is_tma_node() && m.used_events().any(|e| e.retire_latency))
    else {
        eprintln!("skipped: no retire-latency metric in Intel's Granite Rapids file");
        return;
    };
    let rl = m
        .used_events()
        .find(|e| e.retire_latency)
        .unwrap()
        .name
        .clone();
    // Planned as `record -M <metric>`.
    let plan = plan_of(
        &pdir,
        MODEL,
        &MetricChoice {
            td_level: None,
            metrics: vec![m.perf_name()],
        },
        &RecordOptions::default(),
    );
    // A `-W` sampler of the `:R` event (its raw encoding), 30 samples of latency 40 in chase.
    let (encoding, config1) = match pm.resolve(&EventRef::parse(&rl)).unwrap() {
        hrec::metrics::perfmon::Encoding::Counter(r) => (
            u64::from(r.event_code) | u64::from(r.umask) << 8 | u64::from(r.cmask) << 24,
            r.msr.map_or(0, |m| m.1),
        ),
        other => panic!("{other:?}"),
    };
    let first = groups(&plan)[0].0;
    let mut attr = plan.events[first].attr;
    attr.type_ = 4;
    attr.config = encoding;
    attr.config1 = config1;
    attr.sample_type = (attr.sample_type & !st::READ) | st::WEIGHT_STRUCT;
    attr.read_format &= !read::GROUP;
    let index = plan.events.len();
    let extra = vec![EventMeta {
        name: format!("{rl}:p"),
        pmu: Some("cpu".into()),
        attr,
        leader: index,
        role: Role::Sampler,
        ids: vec![EventId {
            id: id(index),
            cpu: 0,
            tid: 500,
        }],
        trace_format: None,
    }];
    let tmp = tempfile::tempdir().unwrap();
    let enc = Encoder::new(attr);
    let mut samples = Vec::new();
    for i in 0..30u64 {
        samples.extend(enc.sample(&SampleFields {
            misc: KERNEL_EXACT,
            id: id(index),
            ip: FUNCS[0].1,
            pid: 500,
            tid: 500,
            time: 10_000_000 + i,
            cpu: 0,
            period: 1000,
            weight: 40 << 48,
            ..SampleFields::default()
        }));
    }
    Synth {
        extra_events: extra,
        extra_records: samples,
        ..synth(MODEL)
    }
    .write(&tmp.path().join("hrec.data"), &plan);
    let pdir_s = pdir.display().to_string();
    let name = m.perf_name();
    let (v, _) = report(tmp.path(), &["--metrics", &name, "--perfmon", &pdir_s]);
    let chase = metric_row(&v, "[k] chase");
    let term = &chase["retire_latency_terms"][&rl];
    assert_eq!(term["source"], "recording", "{chase:#}");
    assert_eq!(term["value"], 40.0);
    let divide = metric_row(&v, "[k] divide");
    assert_eq!(divide["retire_latency_terms"][&rl]["source"], "intel");
    // The value: Intel's formula with the recording's latency where it has one (when the
    // metric's counted events are in the plan; otherwise null).
    let got = chase["metrics"][&name].as_f64();
    let want = truth(m, &|k| rate("chase", k), &|n| {
        if n.eq_ignore_ascii_case(&rl) {
            Some(40.0)
        } else {
            pm.default_retire_latency(n)
        }
    });
    match (got, want) {
        (Some(g), Some(w)) => assert!((g - w).abs() < 0.1, "{name}: {g} vs {w}"),
        _ => panic!("{name}: got {got:?}, want {want:?}"),
    }
    // Not Intel's default: the recording's 40 cycles made the value.
    let with_default = truth(m, &|k| rate("chase", k), &|n| pm.default_retire_latency(n));
    assert!(
        with_default.is_none_or(|d| (d - want.unwrap_or(0.0)).abs() > 0.1),
        "{name}: {with_default:?} {want:?}"
    );
}

#[test]
fn without_metric_groups_or_intels_files_one_line_and_levels_1_and_2() {
    let Some(pdir) = perfmon_dir() else { return };
    let plan = plan_td3(&pdir, MODEL);
    let tmp = tempfile::tempdir().unwrap();
    synth(MODEL).write(&tmp.path().join("hrec.data"), &plan);
    // Intel's files missing.
    let (v, err) = report(
        tmp.path(),
        &["--td-level", "3", "--perfmon", "/nonexistent"],
    );
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("no metrics per row"))
        .collect();
    assert_eq!(lines.len(), 1, "{err:?}");
    assert!(v["events"][0]["rows"][0].get("metrics").is_none());
    assert!(v["events"][0]["topdown"]["level1"].is_object());
    // A recording without metric groups: the default plan.
    let plain = tempfile::tempdir().unwrap();
    write_plain(&plain.path().join("hrec.data"), MODEL);
    let pdir_s = pdir.display().to_string();
    let o = hrec_in(
        plain.path(),
        &["report", "--stdio", "--td-level", "3", "--perfmon", &pdir_s],
    );
    let (_, err) = text(&o);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("no metrics per row"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("no metric groups"), "{err}");
}

/// A recording that keeps the CPU's threads per core (2: SMT on) evaluates Intel's `smt_on`
/// branches: `tma_ms` and `tma_info_core_coreipc` divide by `CPU_CLK_UNHALTED.DISTRIBUTED`
/// instead of the thread's cycles, so each equals Intel's formula on the truth with
/// `smt_on` true (and differs from the SMT-off value). Each group's time on the PMU comes
/// from the trailer's final counts, in the header notes and each row's `metric_groups`.
/// Without a stored topology the notes say smt_on is Intel's default.
#[test]
fn smt_from_the_recording_and_each_groups_time_on_the_pmu() {
    let Some(pdir) = perfmon_dir() else { return };
    let pm = perfmon(&pdir, MODEL);
    let names = ["tma_ms", "tma_info_core_coreipc"];
    // Two more metrics, for more than one group.
    let chosen = [&names[..], &["tma_l3_bound", "tma_divider"]]
        .concat()
        .join(",");
    let plan = plan_of(
        &pdir,
        MODEL,
        &MetricChoice {
            td_level: None,
            metrics: vec![chosen.clone()],
        },
        &RecordOptions::default(),
    );
    let gs = groups(&plan);
    assert!(gs.len() >= 2, "{} groups", gs.len());
    // The group reads carry the times the trailer's counts report.
    for (sampler, _) in &gs {
        let rf = plan.events[*sampler].attr.read_format;
        assert_eq!(
            rf & (read::TOTAL_TIME_ENABLED | read::TOTAL_TIME_RUNNING),
            read::TOTAL_TIME_ENABLED | read::TOTAL_TIME_RUNNING
        );
    }
    // Group g ran (g + 1) / (groups + 1) of the time it was enabled.
    let share = |g: usize| (g + 1) as f64 / (gs.len() + 1) as f64;
    let trailer = Trailer {
        counts: gs
            .iter()
            .enumerate()
            .map(|(g, (sampler, _))| hrec::data::FinalCount {
                event: *sampler,
                id: id(*sampler),
                cpu: 0,
                value: 1,
                time_enabled: 1_000_000 * (gs.len() as u64 + 1),
                time_running: 1_000_000 * (g as u64 + 1),
            })
            .collect(),
        ..Trailer::default()
    };
    let pdir_s = pdir.display().to_string();
    let args = ["--metrics", &chosen, "--perfmon", &pdir_s];
    let no_rl = |_: &str| None;
    for threads in [Some(2), None] {
        let tmp = tempfile::tempdir().unwrap();
        Synth {
            threads_per_core: threads,
            trailer: trailer.clone(),
            ..synth(MODEL)
        }
        .write(&tmp.path().join("hrec.data"), &plan);
        let (v, err) = report(tmp.path(), &args);
        assert!(!err.contains("no metrics per row"), "{err}");
        let header: Vec<&str> = v["header"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let default_note = header
            .iter()
            .any(|h| h.contains("smt_on is Intel's default"));
        assert_eq!(default_note, threads.is_none(), "{header:?}");
        let times = header
            .iter()
            .find(|h| h.contains("time on the PMU"))
            .unwrap_or_else(|| panic!("{header:?}"));
        for g in 0..gs.len() {
            assert!(
                times.contains(&format!("#{g} {:.1}%", 100.0 * share(g))),
                "{times}"
            );
        }
        for (func, _) in FUNCS {
            let row = metric_row(&v, &format!("[k] {func}"));
            for name in names {
                let m = pm.metric(name).unwrap();
                let got = row["metrics"][name].as_f64().unwrap();
                let on = truth_threads(m, &|k| rate(func, k), &no_rl, 2).unwrap();
                let off = truth(m, &|k| rate(func, k), &no_rl).unwrap();
                assert!(
                    (on - off).abs() > 0.5,
                    "{name}: smt_on must matter: {on} {off}"
                );
                let want = if threads == Some(2) { on } else { off };
                assert!(
                    (got - want).abs() < 0.1,
                    "{func} {name} threads {threads:?}: got {got}, Intel's formula on the truth {want}"
                );
            }
            let groups = row["metric_groups"].as_array().unwrap();
            assert_eq!(groups.len(), gs.len());
            for (g, gr) in groups.iter().enumerate() {
                let s = gr["time_running_share"].as_f64().unwrap();
                assert!((s - share(g)).abs() < 1e-9, "{func} group {g}: {s}");
            }
        }
    }
    // A trailer without the times: no shares, and the note says why.
    let tmp = tempfile::tempdir().unwrap();
    synth(MODEL).write(&tmp.path().join("hrec.data"), &plan);
    let (v, _) = report(tmp.path(), &args);
    let header = v["header"].to_string();
    assert!(
        header.contains("keeps no group's time on the PMU"),
        "{header}"
    );
    assert!(
        metric_row(&v, "[k] chase")["metric_groups"][0]
            .get("time_running_share")
            .is_none()
    );
}

/// A recording of `record --td-level 3` keeps the choice: a report given neither
/// `--td-level 3` nor `--metrics` says in one header line how to see the metrics, and one
/// given them says nothing of it; `hrec info` shows the choice.
#[test]
fn the_recordings_choice_is_named_in_the_header() {
    let Some(pdir) = perfmon_dir() else { return };
    let plan = plan_td3(&pdir, MODEL);
    let tmp = tempfile::tempdir().unwrap();
    Synth {
        metric_choice: Some(MetricChoiceMeta {
            td_level: Some(3),
            metrics: Vec::new(),
        }),
        ..synth(MODEL)
    }
    .write(&tmp.path().join("hrec.data"), &plan);
    let said = |v: &Value| {
        v["header"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .filter(|h| h.contains("this recording has metric groups"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let (v, _) = report(tmp.path(), &[]);
    let lines = said(&v);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("`hrec report --td-level 3`"),
        "{}",
        lines[0]
    );
    let pdir_s = pdir.display().to_string();
    let (v, _) = report(tmp.path(), &["--td-level", "3", "--perfmon", &pdir_s]);
    assert!(said(&v).is_empty(), "{:?}", said(&v));
    // The text report says it in its `#` header.
    let o = hrec_in(tmp.path(), &["report", "--stdio"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with('#') && l.contains("hrec report --td-level 3")),
        "{out}"
    );
    let o = hrec_in(tmp.path(), &["info"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("# metric groups for : --td-level 3"), "{out}");
}
