//! Intel's metrics per function outside `report`: `flamegraph --color metric:NAME` and
//! `diff --td-level 3` / `--metrics`, on synthetic Granite Rapids recordings of the real
//! planner's `--td-level 3` plan (Intel's files from `../shared/perfmon`), written byte for
//! byte in the kernel's layout with the real file writer. Every group's deltas follow a
//! per-function truth (events per cycle, [`support::metricgroups::rate`]); the expected values
//! are Intel's formulas on the truth by the metrics evaluator
//! ([`support::metricrec::truth`]), not through hrec's per-row code.

mod support;

use std::collections::HashMap;
use std::path::Path;

use hrec::event::plan::Plan;
use hrec::metrics::perfmon::{Metric, Perfmon};
use serde_json::Value;
use support::metricgroups::{FUNCS, needs_group3, rate, synth};
use support::metricrec::{
    Synth, groups, perfmon, perfmon_dir, plan_td3, truth, truth_path, write_plain,
};
use support::{hrec_in, text};

const MODEL: &str = "graniterapids";

/// A truth: events per cycle of a function by event key.
type Truth = dyn Fn(&str, &str) -> f64;

/// The "before" truth: [`rate`].
fn before(func: &str, k: &str) -> f64 {
    rate(func, k)
}

/// The "after" truth: `chase` waits on L3 half as long (its L2-miss stalls lose half of what
/// they have beyond the L3-miss stalls), `divide` barely divides any more.
fn after(func: &str, k: &str) -> f64 {
    let name = k.split(':').next().unwrap_or(k);
    match (func, name) {
        ("chase", "MEMORY_ACTIVITY.STALLS_L2_MISS") => {
            let l3 = rate(func, "MEMORY_ACTIVITY.STALLS_L3_MISS");
            l3 + (rate(func, k) - l3) / 2.0
        }
        ("divide", "ARITH.DIV_ACTIVE" | "ARITH.DIVIDER_ACTIVE") => 0.02,
        _ => rate(func, k),
    }
}

/// Writes the synthetic recording of `plan` made from truth `t` as `file`.
fn write_recording(file: &Path, plan: &Plan, t: &Truth) {
    Synth {
        rate: t,
        ..synth(MODEL)
    }
    .write(file, plan);
}

/// Intel's value of `m` for `func` under truth `t`; `None` for `rare` when `m` needs group 3.
fn want(pm: &Perfmon, plan: &Plan, m: &Metric, func: &str, t: &Truth) -> Option<f64> {
    if func == "rare" && needs_group3(plan, m) {
        return None;
    }
    truth(m, &|k| t(func, k), &|n| pm.default_retire_latency(n))
}

/// The fill colour and the title of the frame whose title starts with `name:`.
fn frame(svg: &str, name: &str) -> (String, String) {
    let start = format!("<title>{name}: ");
    let at = svg
        .find(&start)
        .unwrap_or_else(|| panic!("no frame titled {start}"));
    let rest = &svg[at + "<title>".len()..];
    let title = rest[..rest.find("</title>").unwrap()].to_string();
    let fill = rest
        .split("fill=\"")
        .nth(1)
        .and_then(|f| f.split('"').next())
        .unwrap()
        .to_string();
    (fill, title)
}

fn rgb(fill: &str) -> (u8, u8, u8) {
    let v: Vec<u8> = fill
        .trim_start_matches("rgb(")
        .trim_end_matches(')')
        .split(',')
        .map(|x| x.trim().parse().unwrap())
        .collect();
    (v[0], v[1], v[2])
}

#[test]
fn flamegraph_colours_functions_by_intels_metric() {
    let Some(pdir) = perfmon_dir() else { return };
    let pm = perfmon(&pdir, MODEL);
    let plan = plan_td3(&pdir, MODEL);
    let tmp = tempfile::tempdir().unwrap();
    write_recording(&tmp.path().join("hrec.data"), &plan, &before);
    let pdir_s = pdir.display().to_string();
    let o = hrec_in(
        tmp.path(),
        &[
            "flamegraph",
            "--color",
            "metric:tma_l3_bound",
            "--perfmon",
            &pdir_s,
            "-o",
            "l3.svg",
        ],
    );
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let svg = std::fs::read_to_string(tmp.path().join("l3.svg")).unwrap();
    let m = pm.metric("tma_l3_bound").unwrap();
    let threshold = hrec::analysis::metrics::own_threshold(m).unwrap();
    assert_eq!(threshold, 5.0, "Intel's tma_l3_bound threshold");
    // The legend: the metric, the scale up to Intel's threshold, grey.
    assert!(
        svg.contains("Intel&apos;s tma_l3_bound per function (inclusive): white 0 to red at 5.0% (Intel&apos;s threshold)")
            || svg.contains("Intel's tma_l3_bound per function (inclusive): white 0 to red at 5.0% (Intel's threshold)"),
        "{}",
        &svg[..svg.len().min(3000)]
    );
    assert!(svg.contains("grey = fewer than 20 group reads or no data"));
    let shade = |func: &str| {
        let (fill, title) = frame(&svg, func);
        let got: f64 = title
            .split("tma_l3_bound ")
            .nth(1)
            .and_then(|v| v.split('%').next())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no value in {title:?}"));
        let w = want(&pm, &plan, m, func, &before).unwrap();
        assert!((got - w).abs() < 0.06, "{func}: title {title:?}, truth {w}");
        (rgb(&fill), w)
    };
    let (chase, chase_v) = shade("chase");
    let (divide, divide_v) = shade("divide");
    assert!(
        chase_v > threshold && divide_v < threshold / 2.0,
        "{chase_v} {divide_v}"
    );
    // Past the threshold: full red; far below it: close to white.
    assert_eq!(chase, (214, 39, 40));
    let t = divide_v / threshold;
    let mix = |c: f64| (255.0 - (255.0 - c) * t).round() as u8;
    assert_eq!(divide, (mix(214.0), mix(39.0), mix(40.0)));
    assert!(divide.1 > 200, "{divide:?}");
    // A function below the read minimum is grey.
    let o = hrec_in(
        tmp.path(),
        &[
            "flamegraph",
            "--color",
            "metric:tma_l3_bound",
            "--perfmon",
            &pdir_s,
            "--metric-min-reads",
            "1000",
            "-o",
            "grey.svg",
        ],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let grey = std::fs::read_to_string(tmp.path().join("grey.svg")).unwrap();
    let (fill, title) = frame(&grey, "chase");
    assert_eq!(rgb(&fill), (190, 190, 190), "{title}");
    assert!(title.contains("fewer than 1000 reads"), "{title}");
}

#[test]
fn flamegraph_metric_colour_errors_are_one_line() {
    let Some(pdir) = perfmon_dir() else { return };
    let plan = plan_td3(&pdir, MODEL);
    let tmp = tempfile::tempdir().unwrap();
    write_recording(&tmp.path().join("hrec.data"), &plan, &before);
    let pdir_s = pdir.display().to_string();
    let run = |dir: &Path, metric: &str| {
        let color = format!("metric:{metric}");
        let o = hrec_in(
            dir,
            &[
                "flamegraph",
                "--color",
                &color,
                "--perfmon",
                &pdir_s,
                "-o",
                "x.svg",
            ],
        );
        assert!(!o.status.success());
        let (_, err) = text(&o);
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("hrec: error"))
            .collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(!err.contains("panicked"), "{err}");
        lines[0].to_string()
    };
    let unknown = run(tmp.path(), "tma_l3_bnd");
    assert!(
        unknown.contains("unknown metric")
            && unknown.contains("closest")
            && unknown.contains("tma_l3_bound"),
        "{unknown}"
    );
    // A group names several metrics.
    let group = run(tmp.path(), "TopdownL1");
    assert!(group.contains("colour by one of them"), "{group}");
    // A recording without metric groups: the default plan.
    let plain = tempfile::tempdir().unwrap();
    write_plain(&plain.path().join("hrec.data"), MODEL);
    let none = run(plain.path(), "tma_l3_bound");
    assert!(none.contains("no metric groups"), "{none}");
}

fn diff_json(dir: &Path, args: &[&str]) -> Value {
    let mut a = vec!["diff", "--json"];
    a.extend_from_slice(args);
    let o = hrec_in(dir, &a);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("no metrics per row"), "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn diff_per_function_metric_changes_equal_the_truths_difference() {
    let Some(pdir) = perfmon_dir() else { return };
    let pm = perfmon(&pdir, MODEL);
    let plan = plan_td3(&pdir, MODEL);
    let tmp = tempfile::tempdir().unwrap();
    write_recording(&tmp.path().join("before.data"), &plan, &before);
    write_recording(&tmp.path().join("after.data"), &plan, &after);
    let pdir_s = pdir.display().to_string();
    let v = diff_json(
        tmp.path(),
        &[
            "--td-level",
            "3",
            "--perfmon",
            &pdir_s,
            "before.data",
            "after.data",
        ],
    );
    let chosen = pm.tma_metrics(3);
    // Both recordings spend the same cycles per function in each group: every group's
    // `cycles:P` table pairs with its own in NEW (in order, the names being one), so no
    // share changes.
    let tables = v["events"].as_array().unwrap();
    assert_eq!(tables.len(), groups(&plan).len());
    for t in tables {
        for r in t["rows"].as_array().unwrap() {
            assert!(r["delta"].as_f64().unwrap().abs() < 1e-9, "{r}");
        }
    }
    let row = |func: &str| -> Value {
        v["events"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|t| t["rows"].as_array().unwrap())
            .find(|r| r["key"]["sym"] == format!("[k] {func}") && r.get("metrics_delta").is_some())
            .unwrap_or_else(|| panic!("no row {func} with metrics_delta"))
            .clone()
    };
    let mut changed_paths = Vec::new();
    for (func, _) in FUNCS {
        let r = row(func);
        let d = r["metrics_delta"].as_object().unwrap();
        assert_eq!(d.len(), chosen.len(), "{func}");
        for m in &chosen {
            let got = d[&m.perf_name()].as_f64();
            let w = want(&pm, &plan, m, func, &after)
                .zip(want(&pm, &plan, m, func, &before))
                .map(|(b, a)| b - a);
            match (got, w) {
                (Some(g), Some(w)) => assert!(
                    (g - w).abs() < 0.1,
                    "{func} {}: got {g}, the truths' difference {w}",
                    m.perf_name()
                ),
                (None, None) => {}
                _ => panic!("{func} {}: got {got:?}, want {w:?}", m.perf_name()),
            }
        }
        if func != "rare" {
            let path = |t: &Truth| {
                let value = |m: &Metric| truth(m, &|k| t(func, k), &|_| None);
                truth_path(&pm, &chosen, &value)
            };
            let (old, new) = (path(&before), path(&after));
            assert_eq!(r["bottleneck"]["old"], serde_json::json!(old), "{func}");
            assert_eq!(r["bottleneck"]["new"], serde_json::json!(new), "{func}");
            assert_eq!(r["bottleneck"]["changed"], old != new, "{func}");
            if old != new {
                changed_paths.push(func);
            }
        }
    }
    // chase's L3 share halved; divide's divider gone, so its path changed.
    let l3 = row("chase")["metrics_delta"]["tma_l3_bound"]
        .as_f64()
        .unwrap();
    let l3_before = want(
        &pm,
        &plan,
        pm.metric("tma_l3_bound").unwrap(),
        "chase",
        &before,
    )
    .unwrap();
    assert!((l3 + l3_before / 2.0).abs() < 1.0, "{l3} vs {l3_before}");
    assert!(changed_paths.contains(&"divide"), "{changed_paths:?}");
    // Below the read minimum in a recording: null.
    let rare = row("rare");
    let nulls = chosen
        .iter()
        .filter(|m| rare["metrics_delta"][m.perf_name()].is_null())
        .count();
    assert!(nulls >= 3, "rare: group 3 has 5 reads");

    // The text: the changes under each row (name, value pairs), `-` below the minimum,
    // both paths where they differ.
    let o = hrec_in(
        tmp.path(),
        &[
            "diff",
            "--td-level",
            "3",
            "--perfmon",
            &pdir_s,
            "before.data",
            "after.data",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("# Intel's metrics under each row"), "{out}");
    let block = |func: &str| -> Vec<String> {
        out.lines()
            .skip_while(|l| !l.ends_with(&format!("[k] {func}")))
            .skip(1)
            .take_while(|l| l.trim_start().starts_with('|'))
            .map(|l| l.split_once('|').unwrap().1.trim().to_string())
            .collect()
    };
    let cells = |func: &str| -> HashMap<String, String> {
        let b = block(func);
        let toks: Vec<String> = b
            .iter()
            .filter(|l| !l.starts_with("bottleneck"))
            .flat_map(|l| l.split_whitespace().map(str::to_string))
            .collect();
        toks.chunks(2)
            .map(|c| (c[0].clone(), c[1].clone()))
            .collect()
    };
    let chase = cells("chase");
    assert_eq!(chase.len(), chosen.len(), "{out}");
    assert_eq!(chase["tma_l3_bound"], format!("{l3:+.1}"), "{out}");
    let rare_text = cells("rare");
    for m in &chosen {
        if rare["metrics_delta"][m.perf_name()].is_null() {
            assert_eq!(rare_text[&m.perf_name()], "-", "{out}");
        }
    }
    let paths = |func: &str| -> Vec<String> {
        block(func)
            .into_iter()
            .filter(|l| l.starts_with("bottleneck"))
            .collect()
    };
    let joined = |p: &Value| {
        p.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect::<Vec<_>>()
            .join(" > ")
    };
    for func in ["chase", "divide"] {
        let lines = paths(func);
        if !changed_paths.contains(&func) {
            assert!(lines.is_empty(), "{func}: {out}");
            continue;
        }
        let r = row(func);
        assert_eq!(
            lines,
            [
                format!("bottleneck old: {}", joined(&r["bottleneck"]["old"])),
                format!("bottleneck new: {}", joined(&r["bottleneck"]["new"]))
            ],
            "{out}"
        );
    }
}

/// `top --metrics` cannot open the groups on a machine without a PMU, so its live path is
/// not run here; its table and screen are, as `top` uses them on each interval's file: the
/// rows' member sums added to the decayed table, the metric evaluated on them, and the column.
#[test]
fn top_metric_column_follows_the_decayed_member_sums() {
    use hrec::analysis::metrics::{MetricOptions, RowMetricsSetup};
    use hrec::analysis::{hist, replay, top};
    let Some(pdir) = perfmon_dir() else { return };
    let pm = perfmon(&pdir, MODEL);
    let plan = plan_td3(&pdir, MODEL);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("hrec.data");
    write_recording(&file, &plan, &before);
    let rec = hrec::recording::Recording::open(&file).unwrap();
    let popts = hrec::analysis::profile::ProfileOptions {
        member_sums: true,
        ..Default::default()
    };
    let p = replay::build(&rec, &popts, &mut |_| {});
    let hopts = hist::HistOptions {
        sort: hist::parse_sort("dso,sym").unwrap(),
        ..Default::default()
    };
    let tables = hist::tables(&p, &hopts);
    let mo = MetricOptions {
        metrics: vec!["tma_l3_bound,tma_divider".into()],
        ..MetricOptions::default()
    };
    let setup = RowMetricsSetup::new(&pm, rec.meta(), &p, &mo).unwrap();
    let mut live = top::Live::new();
    live.add(&tables[0]);
    live.add_member_tables(&tables, &setup.group_events());
    let key = |f: &str| vec!["[kernel.kallsyms]".to_string(), format!("[k] {f}")];
    let check = |live: &top::Live, what: &str| {
        for (func, _) in FUNCS {
            let got = live.metrics(&key(func), &setup);
            for (name, v) in got {
                let m = pm.metric(&name).unwrap();
                match (v, want(&pm, &plan, m, func, &before)) {
                    (Some(g), Some(w)) => {
                        assert!((g - w).abs() < 0.1, "{what} {func} {name}: {g} vs {w}")
                    }
                    (None, None) => {}
                    (g, w) => panic!("{what} {func} {name}: got {g:?}, want {w:?}"),
                }
            }
        }
    };
    check(&live, "first refresh");
    // A second interval and a decay: the sums and reads decay alike, the ratios stay.
    live.decay();
    live.add_member_tables(&tables, &setup.group_events());
    check(&live, "decayed");
    // Decayed until a group's reads fall below the minimum: `-`.
    for _ in 0..12 {
        live.decay();
    }
    assert!(
        live.metrics(&key("chase"), &setup)
            .iter()
            .all(|(_, v)| v.is_none()),
        "{:?}",
        live.metrics(&key("chase"), &setup)
    );
    // The screen's column.
    let mut live = top::Live::new();
    live.add(&tables[0]);
    live.add_member_tables(&tables, &setup.group_events());
    let names: Vec<String> = setup.nodes().into_iter().map(|n| n.name).collect();
    let values = |k: &[String]| -> Vec<Option<f64>> {
        live.metrics(k, &setup)
            .into_iter()
            .map(|(_, v)| v)
            .collect()
    };
    let cols = hrec::output::top::MetricColumns {
        names: names.clone(),
        values: &values,
    };
    let iv = top::Interval::default();
    let st = hrec::output::top::Status {
        event: "cycles:P".into(),
        target: "all".into(),
    };
    let screen =
        hrec::output::top::screen_with_metrics(&live, &iv, &st, &hopts.sort, 10, Some(&cols));
    assert!(screen.contains("tma_l3_bound"), "{screen}");
    let l3 = want(
        &pm,
        &plan,
        pm.metric("tma_l3_bound").unwrap(),
        "chase",
        &before,
    )
    .unwrap();
    let line = screen
        .lines()
        .find(|l| l.ends_with("[k] chase"))
        .unwrap_or_else(|| panic!("{screen}"));
    let col = names.iter().position(|n| n == "tma_l3_bound").unwrap();
    let cells: Vec<&str> = line.split_whitespace().collect();
    // The metrics come before the keys (`[kernel.kallsyms]`, `[k]`, `chase`).
    let first_metric = cells.len() - 3 - names.len();
    let got: f64 = cells[first_metric + col].parse().unwrap();
    assert!((got - l3).abs() < 0.06, "{line}: {l3}");
}
