//! Where `hrec stat`'s retire latencies come from (`hrec::stat::tpebs`): `--tpebs-from` with an
//! hrec recording written by the real file writer (samples in the kernel's layout) and with a
//! JSON file in hrec's extended schema, the fallback to Intel's published defaults, and a real
//! Granite Rapids TMA metric evaluated from a resolved latency.
//!
//! Intel's files are read from `../shared/perfmon` (or `$HREC_PERFMON_DIR`) at test time;
//! tests that need them skip with a message when they are absent.

mod support;

use std::path::{Path, PathBuf};

use hrec::data::{BlockInfo, EventId, EventMeta, Meta, PmuMeta, Trailer, Writer};
use hrec::event::attr::sample as st;
use hrec::event::plan::{RecordOptions, Role};
use hrec::metrics::{Constants, EventRef, Perfmon, RetireLatencies};
use hrec::stat::tpebs::{
    self, Collector, Latencies, LatencyFile, Origin, Resolved, TpebsError, TpebsMode,
};
use support::encode::{Encoder, SampleFields};

const STLB: &str = "MEM_INST_RETIRED.STLB_HIT_LOADS";
const LOCK: &str = "MEM_INST_RETIRED.LOCK_LOADS";
const SPLIT: &str = "MEM_INST_RETIRED.SPLIT_LOADS";
/// `PERF_RECORD_MISC_USER` with `EXACT_IP`.
const USER_EXACT: u16 = 2 | (1 << 14);
const GNR: &str = "GenuineIntel-6-AD-1";

// ---------------------------------------------------------------------------------------------
// A recording built sample by sample

/// A recording of precise samplers named as the test chooses, one fd each (id 1000 + index),
/// written with hrec's real `data::Writer`.
struct Synth {
    meta: Meta,
    /// Record blocks, each written with one `write_records`.
    blocks: Vec<Vec<u8>>,
}

impl Synth {
    /// One sampler per `(name, weight_struct)`: the planner's attrs for `-W` on Granite
    /// Rapids, with `WEIGHT_STRUCT` cleared where `weight_struct` is false.
    fn new(events: &[(&str, bool)]) -> Synth {
        let generic = [
            "cycles:p",
            "instructions:p",
            "branches:p",
            "branch-misses:p",
        ];
        let opts = RecordOptions {
            weight: true,
            events: generic[..events.len()]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            ..RecordOptions::default()
        };
        let plan = support::plan("graniterapids", &opts);
        let samplers: Vec<_> = plan
            .events
            .iter()
            .filter(|e| e.role == Role::Sampler)
            .collect();
        assert_eq!(samplers.len(), events.len());
        let meta = Meta {
            hrec_version: "test".into(),
            target: "workload".into(),
            pmus: vec![PmuMeta {
                name: "cpu".into(),
                type_: 4,
                cpus: None,
            }],
            events: samplers
                .iter()
                .zip(events)
                .enumerate()
                .map(|(i, (e, &(name, ws)))| {
                    let mut attr = e.attr;
                    assert!(attr.sample_type & st::WEIGHT_STRUCT != 0, "-W sets it");
                    if !ws {
                        attr.sample_type &= !st::WEIGHT_STRUCT;
                    }
                    EventMeta {
                        name: name.to_string(),
                        pmu: e.pmu.clone(),
                        attr,
                        leader: i,
                        role: hrec::data::Role::Sampler,
                        ids: vec![EventId {
                            id: 1000 + i as u64,
                            cpu: -1,
                            tid: 500,
                        }],
                        trace_format: None,
                    }
                })
                .collect(),
            ..Meta::default()
        };
        Synth {
            meta,
            blocks: vec![Vec::new()],
        }
    }

    /// A sample of event `event` at `time` with retire latency `lat` (and other weight bits
    /// set, which must not leak into the latency).
    fn sample(&mut self, event: usize, time: u64, lat: u16) {
        let enc = Encoder::new(self.meta.events[event].attr);
        let rec = enc.sample(&SampleFields {
            misc: USER_EXACT,
            id: 1000 + event as u64,
            ip: 0x401000 + time,
            pid: 500,
            tid: 500,
            time,
            period: 1003,
            weight: (u64::from(lat) << 48) | (3 << 32) | 250,
            ..SampleFields::default()
        });
        self.blocks.last_mut().unwrap().extend(rec);
    }

    /// Starts a new record block.
    fn block(&mut self) {
        self.blocks.push(Vec::new());
    }

    /// Writes the file; returns the record blocks' infos.
    fn write(&self, path: &Path) -> Vec<BlockInfo> {
        let mut w = Writer::create(path, &self.meta).unwrap();
        let infos = self
            .blocks
            .iter()
            .map(|b| w.write_records(b, 0).unwrap())
            .collect();
        w.finish(Trailer::default()).unwrap();
        infos
    }
}

/// STLB latencies `(time, latency)`, written out of time order: mean 81 / 4 = 20.25, min 5,
/// max 46, last (time 4000) 5.
const STLB_SAMPLES: [(u64, u16); 4] = [(3000, 20), (1000, 10), (4000, 5), (2000, 46)];

/// The recording of most tests:
/// 0. `MEM_INST_RETIRED.STLB_HIT_LOADS:p` with [`STLB_SAMPLES`];
/// 1. `cpu_atom/MEM_INST_RETIRED.STLB_HIT_LOADS/p`: the same Intel name, only zero latencies,
///    which must not dilute event 0;
/// 2. `MEM_INST_RETIRED.LOCK_LOADS:p` without `WEIGHT_STRUCT`: no latencies;
/// 3. `MEM_INST_RETIRED.SPLIT_LOADS:p` with only zero latencies: none.
fn standard_recording(path: &Path) -> Vec<BlockInfo> {
    let mut s = Synth::new(&[
        (&format!("{STLB}:p"), true),
        (&format!("cpu_atom/{STLB}/p"), true),
        (&format!("{LOCK}:p"), false),
        (&format!("{SPLIT}:p"), true),
    ]);
    for (t, lat) in STLB_SAMPLES {
        s.sample(0, t, lat);
        s.sample(1, t + 1, 0);
        s.sample(2, t + 2, 0);
        s.sample(3, t + 3, 0);
    }
    s.write(path)
}

fn resolve_one(
    event: &str,
    mode: TpebsMode,
    measured: Option<&Collector>,
    from: Option<&LatencyFile>,
    defaults: Option<(&Path, &RetireLatencies)>,
) -> Option<Resolved> {
    let (mut r, missing) = tpebs::resolve(&[event.to_string()], mode, measured, from, defaults);
    assert!(r.len() + missing.len() == 1);
    r.pop()
}

#[test]
fn statistics_from_an_hrec_recording() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.hrec");
    standard_recording(&path);

    let c = tpebs::from_recording(&path).unwrap();
    let m = c.stats(STLB).expect("STLB has latencies");
    assert_eq!(
        (m.count, m.min, m.max, m.mean, m.last),
        (4, 5, 46, 20.25, 5)
    );
    // The zero-only cpu_atom twin was left out, not merged as four zeros.
    assert_eq!(c.samples(STLB), 4);
    // No WEIGHT_STRUCT: no latency; only zeros: none either.
    assert_eq!(c.stats(LOCK), None);
    assert_eq!(c.samples(LOCK), 0);
    assert_eq!(c.stats(SPLIT), None);
    assert_eq!(c.events().map(|(n, _)| n).collect::<Vec<_>>(), [STLB]);

    let file = tpebs::from_file(&path).unwrap();
    assert!(matches!(file.latencies, Latencies::Recording(_)));
    assert!(file.warnings.is_empty(), "{:?}", file.warnings);
    for (mode, want) in [
        (TpebsMode::Mean, 20.25),
        (TpebsMode::Min, 5.0),
        (TpebsMode::Max, 46.0),
        (TpebsMode::Last, 5.0),
    ] {
        let r = resolve_one(STLB, mode, None, Some(&file), None).unwrap();
        assert_eq!((r.value, r.statistic), (want, mode), "{mode}");
        assert_eq!(
            r.origin,
            Origin::Recording {
                path: path.clone(),
                samples: 4
            }
        );
        assert_eq!(r.note, None);
    }
    let r = resolve_one(STLB, TpebsMode::Mean, None, Some(&file), None).unwrap();
    assert_eq!(
        r.to_string(),
        format!(
            "{STLB}:retire_latency = 20.25 cycles (mean of 4 samples in {})",
            path.display()
        )
    );
    // An event the recording has no latency for is missing without other sources.
    let (r, missing) = tpebs::resolve(
        &[format!("{LOCK}:retire_latency"), SPLIT.into()],
        TpebsMode::Mean,
        None,
        Some(&file),
        None,
    );
    assert!(r.is_empty());
    assert_eq!(missing, [LOCK, SPLIT]);
}

#[test]
fn a_truncated_recording_gives_the_samples_it_has() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.hrec");
    let mut s = Synth::new(&[(&format!("{STLB}:p"), true)]);
    for (t, lat) in [(1000, 8), (2000, 4)] {
        s.sample(0, t, lat);
    }
    s.block();
    for (t, lat) in [(3000, 100), (4000, 200)] {
        s.sample(0, t, lat);
    }
    let blocks = s.write(&path);
    // Cut inside the second record block: the trailer and that block are gone.
    let cut = blocks[1].offset + blocks[1].file_len() / 2;
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(cut).unwrap();
    drop(f);

    let c = tpebs::from_recording(&path).unwrap();
    let m = c.stats(STLB).unwrap();
    assert_eq!((m.count, m.min, m.max, m.mean, m.last), (2, 4, 8, 6.0, 4));
    let file = tpebs::from_file(&path).unwrap();
    assert_eq!(file.warnings.len(), 1, "{:?}", file.warnings);
    assert!(
        file.warnings[0].contains("the samples before the cut"),
        "{}",
        file.warnings[0]
    );
}

#[test]
fn statistics_from_a_json_file_in_hrecs_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lat.json");
    // What `hrec report --retire-latency-json` writes: Intel's schema plus COUNT, MEDIAN, P90,
    // P99 and HISTOGRAM (event names in any case are accepted).
    let json = serde_json::json!({
        "Platform": {"Model": "173", "Source": "hrec report"},
        "Data": {
            STLB: {"MIN": 2, "MAX": 300, "MEAN": 17.5, "COUNT": 40, "MEDIAN": 12, "P90": 40,
                   "P99": 300, "HISTOGRAM": [{"LE": 0, "COUNT": 0}, {"LE": 16, "COUNT": 30},
                                             {"LE": 512, "COUNT": 10}]},
            "mem_inst_retired.lock_loads": {"MIN": 15, "MAX": 900, "MEAN": 70.25}
        }
    });
    std::fs::write(&path, serde_json::to_string_pretty(&json).unwrap()).unwrap();

    let file = tpebs::from_file(&path).unwrap();
    assert!(matches!(file.latencies, Latencies::Json(_)));
    let json_origin = |samples| Origin::Json {
        path: path.clone(),
        samples,
    };
    for (mode, want, stat) in [
        (TpebsMode::Mean, 17.5, TpebsMode::Mean),
        (TpebsMode::Min, 2.0, TpebsMode::Min),
        (TpebsMode::Max, 300.0, TpebsMode::Max),
        // `last` needs samples: MEAN, with a note.
        (TpebsMode::Last, 17.5, TpebsMode::Mean),
    ] {
        let r = resolve_one(STLB, mode, None, Some(&file), None).unwrap();
        assert_eq!((r.value, r.statistic), (want, stat), "{mode}");
        assert_eq!(r.origin, json_origin(Some(40)));
        assert_eq!(r.note.is_some(), mode == TpebsMode::Last, "{mode}");
    }
    let r = resolve_one(STLB, TpebsMode::Last, None, Some(&file), None).unwrap();
    assert_eq!(
        r.to_string(),
        format!(
            "{STLB}:retire_latency = 17.50 cycles (MEAN of 40 samples from {p}; --tpebs-mode last needs samples, and {p} has only MIN, MAX and MEAN)",
            p = path.display()
        )
    );
    // Intel's schema has no COUNT.
    let r = resolve_one(LOCK, TpebsMode::Max, None, Some(&file), None).unwrap();
    assert_eq!((r.value, &r.origin), (900.0, &json_origin(None)));
    assert_eq!(
        r.to_string(),
        format!(
            "{LOCK}:retire_latency = 900.00 cycles (MAX from {})",
            path.display()
        )
    );
}

#[test]
fn unusable_files_are_one_line_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let err = |path: &Path| {
        let e = tpebs::from_file(path).unwrap_err();
        let text = e.to_string();
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains(&path.display().to_string()), "{text}");
        (e, text)
    };

    let (e, text) = err(&p("absent.json"));
    assert!(matches!(e, TpebsError::Io { .. }), "{text}");
    assert!(text.starts_with("cannot read "), "{text}");

    // A perf.data is read like a recording: this one is only a cut header.
    std::fs::write(p("perf.data"), b"PERFILE2\x68\0\0\0\0\0\0\0").unwrap();
    let (e, text) = err(&p("perf.data"));
    assert!(matches!(e, TpebsError::Recording(_)), "{text}");
    assert!(text.contains("ends inside its header"), "{text}");

    std::fs::write(p("notes.txt"), "MEM_INST_RETIRED.STLB_HIT_LOADS = 12\n").unwrap();
    let (e, text) = err(&p("notes.txt"));
    assert!(matches!(e, TpebsError::NotLatencies { .. }), "{text}");
    assert!(
        text.contains("neither an hrec recording nor a retire-latency JSON file: invalid JSON"),
        "{text}"
    );

    std::fs::write(p("binary"), [0xffu8, 0xfe, 0, 1, 2, 3, 4, 5, 6, 7]).unwrap();
    let (e, _) = err(&p("binary"));
    assert!(matches!(e, TpebsError::NotLatencies { .. }));

    std::fs::write(p("nodata.json"), r#"{"Platform": {}}"#).unwrap();
    let (e, text) = err(&p("nodata.json"));
    assert!(matches!(e, TpebsError::NotLatencies { .. }), "{text}");
    assert!(text.contains("Data"), "{text}");

    std::fs::write(p("empty.json"), r#"{"Data": {}}"#).unwrap();
    let (e, _) = err(&p("empty.json"));
    assert!(matches!(e, TpebsError::EmptyJson { .. }));

    // A recording made without -W.
    let mut s = Synth::new(&[(&format!("{STLB}:p"), false)]);
    s.sample(0, 1000, 0);
    s.write(&p("noweight.hrec"));
    let (e, text) = err(&p("noweight.hrec"));
    assert!(matches!(e, TpebsError::NoWeightStruct { .. }), "{text}");
    assert!(text.contains("hrec record -W"), "{text}");

    // A recording whose latencies are all zero (no Timed PEBS).
    let mut s = Synth::new(&[(&format!("{STLB}:p"), true)]);
    for t in 1..=3 {
        s.sample(0, t * 1000, 0);
    }
    s.write(&p("zeros.hrec"));
    let (e, text) = err(&p("zeros.hrec"));
    assert!(
        matches!(e, TpebsError::NoLatencies { samples: 3, .. }),
        "{text}"
    );

    // A file with hrec's magic and nothing after it.
    std::fs::write(p("stub.hrec"), hrec::data::MAGIC).unwrap();
    let (e, text) = err(&p("stub.hrec"));
    assert!(matches!(e, TpebsError::Recording(_)), "{text}");
}

// ---------------------------------------------------------------------------------------------
// Intel's defaults and the precedence rule

/// `$HREC_PERFMON_DIR`, else `../shared/perfmon` next to the repository; `None` (after saying
/// so) when Intel's files are not there.
fn perfmon_dir(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("HREC_PERFMON_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/perfmon"));
    if dir.join("mapfile.csv").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "{test}: skipped: no Intel perfmon files at {} (set HREC_PERFMON_DIR)",
            dir.display()
        );
        None
    }
}

/// Granite Rapids' `graniterapids_retire_latency.json`.
fn gnr_defaults(dir: &Path) -> (PathBuf, RetireLatencies) {
    let path = dir.join("GNR/metrics/graniterapids_retire_latency.json");
    let table = RetireLatencies::load(&path).unwrap();
    (path, table)
}

#[test]
fn measured_beats_file_beats_intels_default() {
    let Some(dir) = perfmon_dir("measured_beats_file_beats_intels_default") else {
        return;
    };
    let (defaults_path, defaults) = gnr_defaults(&dir);
    // Intel's numbers for the three events (graniterapids_retire_latency.json).
    let intel = |e: &str| defaults.get(e).unwrap().mean;
    assert_eq!(intel(STLB), 1.57);
    assert_eq!(intel(LOCK), 63.76);
    assert_eq!(intel(SPLIT), 3.97);
    let defaults_arg = Some((defaults_path.as_path(), &defaults));

    let tmp = tempfile::tempdir().unwrap();
    let rec_path = tmp.path().join("old.hrec");
    standard_recording(&rec_path);
    let file = tpebs::from_file(&rec_path).unwrap();

    // This run measured LOCK (and only zeros for SPLIT); the file has STLB; Intel has all.
    let mut run = Collector::new();
    for (t, lat) in [(10, 30), (20, 90), (30, 60)] {
        run.add(&format!("cpu_core/{LOCK}/p"), t, lat);
    }
    run.add(SPLIT, 40, 0);
    run.add(SPLIT, 50, 0);
    let events: Vec<String> = [LOCK, STLB, SPLIT, "NO_SUCH.EVENT"]
        .iter()
        .map(|e| format!("{e}:retire_latency"))
        .collect();

    let (r, missing) = tpebs::resolve(
        &events,
        TpebsMode::Mean,
        Some(&run),
        Some(&file),
        defaults_arg,
    );
    assert_eq!(missing, ["NO_SUCH.EVENT"]);
    let lines: Vec<String> = r.iter().map(ToString::to_string).collect();
    let rec = rec_path.display();
    assert_eq!(
        lines,
        [
            format!(
                "{LOCK}:retire_latency = 60.00 cycles (mean of 3 samples measured in this run)"
            ),
            format!(
                "{STLB}:retire_latency = 20.25 cycles (mean of 4 samples in {rec}; no samples in this run)"
            ),
            format!(
                "{SPLIT}:retire_latency = 3.97 cycles (MEAN from graniterapids_retire_latency.json, Intel's default; its 2 samples in this run all have retire latency 0; not in {rec})"
            ),
        ]
    );
    assert_eq!(
        r[2].origin,
        Origin::IntelDefault {
            path: defaults_path.clone()
        }
    );

    // Without this run's samples the file wins; without the file, Intel's default; the
    // defaults are MEAN whatever the mode.
    let r = resolve_one(LOCK, TpebsMode::Max, None, Some(&file), defaults_arg).unwrap();
    assert_eq!(
        (r.value, r.statistic, &r.origin),
        (
            63.76,
            TpebsMode::Mean,
            &Origin::IntelDefault {
                path: defaults_path.clone()
            }
        )
    );
    assert_eq!(
        r.note.as_deref(),
        Some(format!("not in {rec}; Intel's defaults are used as MEAN, not max").as_str())
    );
    let r = resolve_one(STLB, TpebsMode::Max, None, Some(&file), defaults_arg).unwrap();
    assert_eq!(r.value, 46.0);
    let r = resolve_one(STLB, TpebsMode::Max, Some(&run), None, defaults_arg).unwrap();
    assert_eq!((r.value, r.statistic), (1.57, TpebsMode::Mean));
    let r = resolve_one(LOCK, TpebsMode::Last, Some(&run), Some(&file), defaults_arg).unwrap();
    assert_eq!(
        (r.value, &r.origin),
        (60.0, &Origin::Measured { samples: 3 })
    );

    // JSON output of the whole list.
    let (r, _) = tpebs::resolve(&events, TpebsMode::Mean, Some(&run), None, defaults_arg);
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(
        v[0]["origin"],
        serde_json::json!({"kind": "measured", "samples": 3})
    );
    assert_eq!(v[1]["origin"]["kind"], "intel_default");
    assert_eq!(v[1]["value"], 1.57);
    assert_eq!(v[1]["statistic"], "mean");
}

// ---------------------------------------------------------------------------------------------
// End to end: a real TMA metric from a resolved latency

#[test]
fn gnr_metrics_evaluate_with_resolved_latencies() {
    let Some(dir) = perfmon_dir("gnr_metrics_evaluate_with_resolved_latencies") else {
        return;
    };
    let perfmon = Perfmon::load(&dir, GNR).unwrap();
    let (defaults_path, defaults) = gnr_defaults(&dir);
    let lock = perfmon.metric("Lock_Latency").unwrap();
    let dtlb = perfmon.metric("tma_dtlb_load").unwrap();

    // The retire-latency terms the two formulas use.
    let needed: Vec<String> = perfmon
        .events_needed([lock, dtlb])
        .into_iter()
        .filter(|e| e.retire_latency)
        .map(|e| e.name)
        .collect();
    assert_eq!(needed, [LOCK, STLB]);

    // Counts of the interval.
    let counts = |e: &EventRef| match e.name.as_str() {
        LOCK => Some(1_000.0),
        STLB => Some(2_000.0),
        "CPU_CLK_UNHALTED.THREAD" => Some(1_000_000.0),
        "DTLB_LOAD_MISSES.WALK_ACTIVE" => Some(20_000.0),
        _ => None,
    };
    let constants = Constants::default();

    // This run measured LOCK_LOADS at 40, 80 and 90 cycles (mean 70, max 90) and
    // STLB_HIT_LOADS at 4, 6 (mean 5, max 6, last 4).
    let mut run = Collector::new();
    for (t, lat) in [(1, 40), (2, 80), (3, 90)] {
        run.add(LOCK, t, lat);
    }
    run.add(STLB, 5, 4);
    run.add(STLB, 4, 6);

    let eval = |metric: &hrec::metrics::Metric, resolved: &[Resolved]| {
        metric
            .evaluate(
                &counts,
                &|name| tpebs::latency_of(resolved, name),
                &constants,
            )
            .unwrap()
    };
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b.abs().max(1.0);

    // Lock_Latency = 100 * (a * b) / c.
    // mean: 100 * 1000 * 70 / 1e6 = 7.0; max: 100 * 1000 * 90 / 1e6 = 9.0.
    // DTLB_Load = 100 * ((min(a*b, a*7) if b >= 0 else a*7) / c + d / c), a = 2000,
    // d = 20000: mean b = 5: min(10000, 14000) = 10000, 100 * (0.01 + 0.02) = 3.0;
    // max b = 6: min(12000, 14000), 100 * (0.012 + 0.02) = 3.2.
    for (mode, want_lock, want_dtlb) in [(TpebsMode::Mean, 7.0, 3.0), (TpebsMode::Max, 9.0, 3.2)] {
        let (r, missing) = tpebs::resolve(
            &needed,
            mode,
            Some(&run),
            None,
            Some((&defaults_path, &defaults)),
        );
        assert!(missing.is_empty());
        assert!(
            r.iter()
                .all(|r| matches!(r.origin, Origin::Measured { .. }))
        );
        let (l, d) = (eval(lock, &r), eval(dtlb, &r));
        assert!(
            close(l, want_lock),
            "{mode}: Lock_Latency {l} != {want_lock}"
        );
        assert!(close(d, want_dtlb), "{mode}: DTLB_Load {d} != {want_dtlb}");
    }

    // A large latency hits DTLB_Load's cap of 7 cycles per load: b = 12.5 gives
    // min(25000, 14000) = 14000, 100 * (0.014 + 0.02) = 3.4.
    let mut slow = Collector::new();
    slow.add(STLB, 1, 10);
    slow.add(STLB, 2, 15);
    let (r, _) = tpebs::resolve(
        &needed,
        TpebsMode::Mean,
        Some(&slow),
        None,
        Some((&defaults_path, &defaults)),
    );
    // LOCK_LOADS had no samples: Intel's MEAN 63.76 -> 100 * 1000 * 63.76 / 1e6 = 6.376.
    assert_eq!(
        r[0].origin,
        Origin::IntelDefault {
            path: defaults_path.clone()
        }
    );
    assert_eq!(r[0].note.as_deref(), Some("no samples in this run"));
    assert!(close(eval(lock, &r), 6.376), "{}", eval(lock, &r));
    assert!(close(eval(dtlb, &r), 3.4), "{}", eval(dtlb, &r));

    // Nothing measured and no defaults: the metric cannot be computed, and the error names the
    // event.
    let (r, missing) = tpebs::resolve(
        &needed,
        TpebsMode::Mean,
        Some(&Collector::new()),
        None,
        None,
    );
    assert_eq!(missing, [LOCK, STLB]);
    let e = lock
        .evaluate(&counts, &|name| tpebs::latency_of(&r, name), &constants)
        .unwrap_err();
    assert!(e.to_string().contains(LOCK), "{e}");
}
