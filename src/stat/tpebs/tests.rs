//! Tests of `tpebs`.

use super::*;

const STLB: &str = "MEM_INST_RETIRED.STLB_HIT_LOADS";

#[test]
fn modes_parse_case_insensitively_and_display() {
    for m in TpebsMode::ALL {
        assert_eq!(m.to_string().parse::<TpebsMode>(), Ok(m));
        assert_eq!(m.to_string().to_uppercase().parse::<TpebsMode>(), Ok(m));
    }
    assert_eq!("Last".parse::<TpebsMode>(), Ok(TpebsMode::Last));
    assert_eq!(TpebsMode::default(), TpebsMode::Mean);
    let e = "median".parse::<TpebsMode>().unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown --tpebs-mode \"median\": expected mean, min, max or last"
    );
}

#[test]
fn collector_statistics_are_exact() {
    let mut c = Collector::new();
    // Added out of time order: `last` is the sample at time 400 (latency 7), not the one
    // added last.
    for (t, lat) in [(100, 10), (400, 7), (200, 30), (300, 1)] {
        c.add(&format!("cpu_core/{STLB}/p"), t, lat);
    }
    let m = c.stats(STLB).unwrap();
    assert_eq!(
        m,
        Measured {
            count: 4,
            min: 1,
            max: 30,
            mean: 12.0,
            last: 7
        }
    );
    assert_eq!(m.value(TpebsMode::Mean), 12.0);
    assert_eq!(m.value(TpebsMode::Min), 1.0);
    assert_eq!(m.value(TpebsMode::Max), 30.0);
    assert_eq!(m.value(TpebsMode::Last), 7.0);
    // Every spelling is the same event.
    assert_eq!(c.stats("mem_inst_retired.stlb_hit_loads:R"), Some(m));
    assert_eq!(c.stats(&format!("{STLB}:retire_latency")), Some(m));
    // Equal times: the one added last wins.
    c.add(STLB, 400, 9);
    assert_eq!(c.stats(STLB).unwrap().last, 9);
    assert_eq!(c.stats(STLB).unwrap().count, 5);
}

#[test]
fn zero_only_events_have_no_latency_but_zeros_count_once_one_is_not() {
    let mut c = Collector::new();
    for t in 0..5 {
        c.add("X.ZERO:p", t, 0);
    }
    assert_eq!(c.stats("X.ZERO"), None);
    assert_eq!(c.samples("X.ZERO"), 5);
    assert!(c.is_empty());
    c.add("X.SOME", 1, 0);
    c.add("X.SOME", 2, 6);
    let m = c.stats("X.SOME").unwrap();
    assert_eq!((m.count, m.min, m.mean, m.last), (2, 0, 3.0, 6));
    assert_eq!(c.events().map(|(n, _)| n).collect::<Vec<_>>(), ["X.SOME"]);
    assert_eq!(c.stats("X.NEVER"), None);
    assert_eq!(c.samples("X.NEVER"), 0);
}

fn table(text: &str) -> RetireLatencies {
    RetireLatencies::parse(text, Path::new("t.json")).unwrap()
}

#[test]
fn precedence_and_origin_lines() {
    let mut run = Collector::new();
    for (t, lat) in [(1, 10), (2, 15)] {
        run.add(STLB, t, lat);
    }
    run.add("ZERO.EVENT", 1, 0);
    let file = LatencyFile {
        path: PathBuf::from("old.json"),
        latencies: Latencies::Json(table(
            r#"{"Data": {"MEM_INST_RETIRED.STLB_HIT_LOADS": {"MIN": 1, "MAX": 99, "MEAN": 50},
                         "ZERO.EVENT": {"MIN": 2, "MAX": 8, "MEAN": 4.5, "COUNT": 3}}}"#,
        )),
        warnings: Vec::new(),
    };
    let intel = table(
        r#"{"Data": {"MEM_INST_RETIRED.STLB_HIT_LOADS": {"MIN": 0, "MAX": 3424, "MEAN": 1.57},
                     "ZERO.EVENT": {"MIN": 0, "MAX": 1, "MEAN": 0.5},
                     "ONLY.DEFAULT": {"MIN": 0, "MAX": 100, "MEAN": 63.76}}}"#,
    );
    let defaults = Path::new("/p/GNR/metrics/graniterapids_retire_latency.json");
    let events: Vec<String> = [
        format!("{STLB}:retire_latency"),
        "zero.event".into(),
        "ONLY.DEFAULT".into(),
        "NOWHERE".into(),
        STLB.into(),
    ]
    .into();
    let (r, missing) = resolve(
        &events,
        TpebsMode::Mean,
        Some(&run),
        Some(&file),
        Some((defaults, &intel)),
    );
    assert_eq!(missing, ["NOWHERE"]);
    let lines: Vec<String> = r.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "MEM_INST_RETIRED.STLB_HIT_LOADS:retire_latency = 12.50 cycles (mean of 2 samples measured in this run)",
            "ZERO.EVENT:retire_latency = 4.50 cycles (MEAN of 3 samples from old.json; its 1 sample in this run has retire latency 0)",
            "ONLY.DEFAULT:retire_latency = 63.76 cycles (MEAN from graniterapids_retire_latency.json, Intel's default; no samples in this run; not in old.json)",
        ]
    );
    assert_eq!(latency_of(&r, "cpu_core/ONLY.DEFAULT/p"), Some(63.76));
    assert_eq!(latency_of(&r, "NOWHERE"), None);

    // `last` from JSON falls back to MEAN and says so; defaults are MEAN whatever the mode.
    let (r, _) = resolve(
        &["ZERO.EVENT".into(), "ONLY.DEFAULT".into()],
        TpebsMode::Last,
        None,
        Some(&file),
        Some((defaults, &intel)),
    );
    assert_eq!((r[0].value, r[0].statistic), (4.5, TpebsMode::Mean));
    assert_eq!(
        r[0].note.as_deref(),
        Some("--tpebs-mode last needs samples, and old.json has only MIN, MAX and MEAN")
    );
    assert_eq!(
        r[1].to_string(),
        "ONLY.DEFAULT:retire_latency = 63.76 cycles (MEAN from graniterapids_retire_latency.json, Intel's default; not in old.json; Intel's defaults are used as MEAN, not last)"
    );
    let (r, _) = resolve(
        &["ZERO.EVENT".into()],
        TpebsMode::Max,
        None,
        Some(&file),
        None,
    );
    assert_eq!(
        r[0].to_string(),
        "ZERO.EVENT:retire_latency = 8.00 cycles (MAX of 3 samples from old.json)"
    );

    // Nothing at all: every event is missing.
    let (r, missing) = resolve(&events, TpebsMode::Mean, None, None, None);
    assert!(r.is_empty());
    assert_eq!(missing, [STLB, "ZERO.EVENT", "ONLY.DEFAULT", "NOWHERE"]);
}

#[test]
fn resolved_serializes_for_json_output() {
    let r = Resolved {
        event: STLB.into(),
        value: 12.5,
        statistic: TpebsMode::Last,
        origin: Origin::Recording {
            path: PathBuf::from("old.hrec"),
            samples: 3,
        },
        note: None,
    };
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        serde_json::json!({
            "event": STLB, "value": 12.5, "statistic": "last",
            "origin": {"kind": "recording", "path": "old.hrec", "samples": 3},
            "note": null
        })
    );
    assert_eq!(
        r.to_string(),
        "MEM_INST_RETIRED.STLB_HIT_LOADS:retire_latency = 12.50 cycles (last of 3 samples in old.hrec)"
    );
    let d = Origin::IntelDefault {
        path: PathBuf::from("/x/gnr.json"),
    };
    assert_eq!(
        serde_json::to_value(&d).unwrap(),
        serde_json::json!({"kind": "intel_default", "path": "/x/gnr.json"})
    );
}
