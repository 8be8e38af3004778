//! Shared helpers for the integration tests: fixture paths, fixture PMU snapshots, running the
//! `hrec` binary with a fixture sysfs tree, and golden-file comparison (`HREC_BLESS=1` rewrites).

#![allow(dead_code)]
pub mod adl;
pub mod browser;
pub mod encode;
pub mod memdata;
pub mod metricgroups;
pub mod metricrec;
pub mod perfdata;
pub mod privilege;
pub mod stacks;
pub mod tmux;
pub mod typed;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hrec::event::plan::{self, Host, Plan, RecordOptions};
use hrec::pmu::Pmus;

/// The fixture models under `tests/fixtures/sysfs/`.
pub const MODELS: [&str; 6] = [
    "alderlake",
    "sapphirerapids",
    "graniterapids",
    "icelake",
    "zen4",
    "vm",
];

/// The fixture models added for E-core TopDown (issue 30): hybrid parts with E-core PMUs and
/// all-E-core parts, each with its own procfs (cpuinfo); golden plans like [`MODELS`].
pub const ECORE_MODELS: [&str; 6] = [
    "meteorlake",
    "lunarlake",
    "arrowlake-s",
    "arrowlake-h",
    "sierraforest",
    "alderlake-n",
];

/// The AMD and Arm fixture models added for their TopDown (issue 45), each with its own
/// procfs; golden plans like [`MODELS`].
pub const VENDOR_MODELS: [&str; 4] = ["zen5", "neoverse-v2", "neoverse-v1", "neoverse-n2"];

/// `tests/fixtures/sysfs/<model>`.
pub fn sysfs(model: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sysfs")
        .join(model)
}

/// `tests/fixtures/procfs` (perf_event_max_sample_rate = 100000).
pub fn procfs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/procfs")
}

/// `tests/fixtures/procfs/<model>`: that machine's `cpuinfo` plus perf_event_max_sample_rate
/// (100000), a whole procfs root.
pub fn procfs_of(model: &str) -> PathBuf {
    procfs().join(model)
}

/// The PMU snapshot of a fixture model.
pub fn pmus(model: &str) -> Pmus {
    Pmus::read(&sysfs(model)).unwrap_or_else(|e| panic!("fixture {model}: {e}"))
}

/// True when this machine's real /sys has a core PMU (a hardware PMU), by hrec's own discovery.
pub fn host_has_core_pmu() -> bool {
    Pmus::read(Path::new("/sys")).is_ok_and(|p| !p.core_pmus().is_empty())
}

/// The host facts the fixture procfs gives, on x86 (its cpuinfo unknown: the P-core rules
/// alone).
pub fn host() -> Host {
    Host {
        max_sample_rate: Some(100_000),
        x86: true,
        cpu: None,
        nmi_watchdog: None,
    }
}

/// Record options for a workload with these `-e` strings.
pub fn opts(events: &[&str]) -> RecordOptions {
    RecordOptions {
        events: events.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

/// Plans a record on a fixture model.
pub fn plan(model: &str, o: &RecordOptions) -> Plan {
    plan::plan_record(&pmus(model), &host(), o).unwrap_or_else(|e| panic!("{model}: {e}"))
}

/// Runs the hrec binary against a fixture model (or the real /sys with `None`).
pub fn hrec(model: Option<&str>, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hrec"));
    c.args(args)
        .env_remove("HREC_SYSFS_ROOT")
        .env_remove("HREC_PROCFS_ROOT");
    if let Some(m) = model {
        // The model's own procfs (its cpuinfo tells the E-cores apart) where it has one.
        let own = procfs_of(m);
        let proc_root = if own.join("cpuinfo").exists() {
            own
        } else {
            procfs()
        };
        c.env("HREC_SYSFS_ROOT", sysfs(m))
            .env("HREC_PROCFS_ROOT", proc_root);
    }
    c.output().expect("run hrec")
}

/// stdout and stderr as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Compares `actual` with `tests/golden/<name>`; `HREC_BLESS=1` writes it instead.
pub fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("HREC_BLESS").is_some() {
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing golden file {}; run with HREC_BLESS=1 to create it",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "{} differs from the output (HREC_BLESS=1 regenerates it after review)\n--- expected\n{expected}\n--- actual\n{actual}",
        path.display()
    );
}

/// The path of an example built by `cargo test` (`target/<profile>/examples/<name>`).
pub fn example(name: &str) -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_hrec"));
    let p = bin
        .parent()
        .expect("target dir")
        .join("examples")
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: cargo test builds the examples; run cargo build --examples",
        p.display()
    );
    p
}

/// Runs the hrec binary on the real machine in `dir`.
pub fn hrec_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hrec"))
        .args(args)
        .current_dir(dir)
        .env_remove("HREC_SYSFS_ROOT")
        .env_remove("HREC_PROCFS_ROOT")
        .output()
        .expect("run hrec")
}

/// The path of an example built optimised with debug info (`<target>/release/examples/<name>`,
/// in the target directory the tests were built in, `CARGO_TARGET_DIR` too), building it when
/// missing: profiles of optimised code are the ones worth comparing.
pub fn release_example(name: &str) -> PathBuf {
    // The binary under test is `<target>/debug/hrec`.
    let target = Path::new(env!("CARGO_BIN_EXE_hrec"))
        .parent()
        .and_then(Path::parent)
        .expect("target dir");
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--release",
            "--quiet",
            "--example",
            name,
            "--target-dir",
        ])
        .arg(target)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("run cargo");
    assert!(
        status.success(),
        "cargo build --release --example {name} failed"
    );
    target.join("release/examples").join(name)
}

/// `record -q -e page-faults -c 1 -d -o FILE -- PROG` in `dir` (every fault with its data
/// address), by hrec, or by `perf` when given; its output, for the caller to judge.
pub fn record_page_faults(perf: Option<&str>, dir: &Path, file: &str, prog: &str) -> Output {
    let args = [
        "record",
        "-q",
        "-e",
        "page-faults",
        "-c",
        "1",
        "-d",
        "-o",
        file,
        "--",
        prog,
    ];
    match perf {
        Some(perf) => Command::new(perf)
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap_or_else(|e| panic!("{perf}: {e}")),
        None => hrec_in(dir, &args),
    }
}

/// Runs hrec in `dir`, which must succeed: its stdout and stderr.
pub fn hrec_ok(dir: &Path, args: &[&str]) -> (String, String) {
    let o = hrec_in(dir, args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "hrec {args:?}: {err}");
    (out, err)
}

/// Runs the installed perf in `dir`, which must succeed: its stdout.
pub fn perf_ok(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("perf")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run perf");
    assert!(
        o.status.success(),
        "perf {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `perf` when installed (the reference peer), else `None` after saying why.
pub fn perf() -> Option<&'static str> {
    let ok = Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: perf is not installed, so there is nothing to compare with");
    }
    ok.then_some("perf")
}

/// A Python interpreter whose libpython has DWARF (pyenv builds it so), else `None` after
/// saying why.
pub fn python_with_dwarf() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, sysconfig; print(sys.executable); print(sysconfig.get_config_var('LIBDIR'))",
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut lines = text.lines();
    let exe = std::fs::canonicalize(lines.next()?).ok()?;
    let libdir = PathBuf::from(lines.next().unwrap_or(""));
    let has_dwarf =
        |p: &Path| std::fs::read(p).is_ok_and(|b| b.windows(11).any(|w| w == b".debug_info"));
    let libs = std::fs::read_dir(&libdir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("libpython"))
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    if has_dwarf(&exe) || libs.iter().any(|p| has_dwarf(p)) {
        Some(exe)
    } else {
        eprintln!(
            "skipped: {} has no DWARF (install a pyenv build or python3-dbg)",
            exe.display()
        );
        None
    }
}

/// A pprof file written by `hrec export --format pprof`: gunzipped and decoded with prost.
pub fn read_pprof(path: &Path) -> hrec::output::pprof::proto::Profile {
    use prost::Message as _;
    use std::io::Read as _;
    let gz = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_end(&mut raw)
        .unwrap_or_else(|e| panic!("{} is not gzip: {e}", path.display()));
    hrec::output::pprof::proto::Profile::decode(raw.as_slice())
        .unwrap_or_else(|e| panic!("{} does not decode: {e}", path.display()))
}

/// A Firefox Profiler file written by `hrec export --format firefox`: gunzipped and parsed.
pub fn read_firefox(path: &Path) -> serde_json::Value {
    use std::io::Read as _;
    let gz = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_end(&mut raw)
        .unwrap_or_else(|e| panic!("{} is not gzip: {e}", path.display()));
    serde_json::from_slice(&raw).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// One thread of a processed profile, as [`check_processed_profile`] read it.
#[derive(Debug, Clone)]
pub struct FxThread {
    /// `pid` and `tid` (the crate writes them as strings; a repeated tid gets `.N`).
    pub pid: String,
    /// Thread id.
    pub tid: String,
    /// Thread name.
    pub name: String,
    /// Its process's name.
    pub process_name: String,
    /// Sample times, ms from the profile's zero (the running sum of `timeDeltas`).
    pub times: Vec<f64>,
    /// Sample weights.
    pub weights: Vec<i64>,
    /// `threadCPUDelta` of each sample (µs, as `meta.sampleUnits` says).
    pub cpu_deltas: Vec<f64>,
    /// Per sample: the function names of its stack, leaf first.
    pub stacks: Vec<Vec<String>>,
    /// Per sample: its category's name (its leaf frame's).
    pub categories: Vec<String>,
    /// Markers: name and `data`.
    pub markers: Vec<(String, serde_json::Value)>,
}

/// Checks a processed profile (the Firefox Profiler's format, as `fxprof-processed-profile`
/// writes it: one string array per thread) for what the profiler relies on, and returns its
/// threads: `meta.version` and `preprocessedProfileVersion` present; per thread, every table
/// has as many entries in each column as its `length`; every sample's stack is in the stack
/// table (or null), every stack's prefix is an earlier stack, its frame in the frame table,
/// every frame's function in the function table and category in `meta.categories`, every
/// function's name in the string array, and the time deltas are not negative.
pub fn check_processed_profile(j: &serde_json::Value) -> Vec<FxThread> {
    use serde_json::Value;
    let meta = &j["meta"];
    assert!(meta["version"].is_u64(), "meta.version");
    assert!(
        meta["preprocessedProfileVersion"].is_u64(),
        "preprocessedProfileVersion"
    );
    assert!(
        meta["interval"].as_f64().is_some_and(|i| i > 0.0),
        "meta.interval"
    );
    let categories = meta["categories"].as_array().expect("categories").len();
    let len = |t: &Value, table: &str| -> usize {
        let tb = &t[table];
        let n = tb["length"]
            .as_u64()
            .unwrap_or_else(|| panic!("{table}.length")) as usize;
        for (k, v) in tb.as_object().unwrap() {
            if let Some(a) = v.as_array() {
                assert_eq!(
                    a.len(),
                    n,
                    "{table}.{k} has {} entries, length {n}",
                    a.len()
                );
            }
        }
        n
    };
    let idx = |v: &Value, what: &str| -> usize {
        v.as_u64().unwrap_or_else(|| panic!("{what}: {v}")) as usize
    };
    let col = |t: &Value, table: &str, c: &str| -> Vec<Value> {
        t[table][c]
            .as_array()
            .unwrap_or_else(|| panic!("{table}.{c}"))
            .clone()
    };
    let mut out = Vec::new();
    for t in j["threads"].as_array().expect("threads") {
        let strings: Vec<&str> = t["stringArray"]
            .as_array()
            .expect("stringArray")
            .iter()
            .map(|s| s.as_str().expect("string"))
            .collect();
        let (ns, nst, nf, nfu) = (
            len(t, "samples"),
            len(t, "stackTable"),
            len(t, "frameTable"),
            len(t, "funcTable"),
        );
        len(t, "markers");
        let func_names: Vec<String> = col(t, "funcTable", "name")
            .iter()
            .map(|v| {
                let i = idx(v, "funcTable.name");
                assert!(i < strings.len(), "func name {i} >= {}", strings.len());
                strings[i].to_string()
            })
            .collect();
        let frame_func: Vec<usize> = col(t, "frameTable", "func")
            .iter()
            .map(|v| idx(v, "frameTable.func"))
            .collect();
        assert!(
            frame_func.iter().all(|&f| f < nfu),
            "frame's func out of range"
        );
        assert!(
            col(t, "frameTable", "category")
                .iter()
                .all(|c| idx(c, "category") < categories),
            "frame category out of range"
        );
        let prefix: Vec<Option<usize>> = col(t, "stackTable", "prefix")
            .iter()
            .map(|v| v.as_u64().map(|p| p as usize))
            .collect();
        let frame: Vec<usize> = col(t, "stackTable", "frame")
            .iter()
            .map(|v| idx(v, "stackTable.frame"))
            .collect();
        for (i, (&p, &f)) in prefix.iter().zip(&frame).enumerate() {
            assert!(
                p.is_none_or(|p| p < i),
                "stack {i}'s prefix {p:?} is not before it"
            );
            assert!(f < nf, "stack {i}'s frame {f} >= {nf}");
        }
        let category_names: Vec<String> = meta["categories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap_or("?").to_string())
            .collect();
        let frame_category: Vec<usize> = col(t, "frameTable", "category")
            .iter()
            .map(|v| idx(v, "frameTable.category"))
            .collect();
        let mut categories = Vec::new();
        let mut stacks = Vec::new();
        for s in col(t, "samples", "stack") {
            categories.push(s.as_u64().map_or_else(String::new, |s| {
                category_names[frame_category[frame[s as usize]]].clone()
            }));
            let mut names = Vec::new();
            let mut at = s.as_u64().map(|s| s as usize);
            if let Some(s) = at {
                assert!(s < nst, "sample's stack {s} >= {nst}");
            }
            while let Some(s) = at {
                names.push(func_names[frame_func[frame[s]]].clone());
                at = prefix[s];
            }
            stacks.push(names);
        }
        let mut now = 0.0;
        let times = col(t, "samples", "timeDeltas")
            .iter()
            .map(|d| {
                let d = d.as_f64().expect("timeDeltas");
                assert!(d >= 0.0, "negative time delta {d}");
                now += d;
                now
            })
            .collect();
        let weights = col(t, "samples", "weight")
            .iter()
            .map(|w| w.as_i64().expect("weight"))
            .collect();
        let cpu_deltas = col(t, "samples", "threadCPUDelta")
            .iter()
            .map(|w| w.as_f64().expect("threadCPUDelta"))
            .collect();
        let markers = col(t, "markers", "name")
            .iter()
            .zip(col(t, "markers", "data"))
            .map(|(n, d)| (strings[idx(n, "marker name")].to_string(), d))
            .collect();
        assert_eq!(stacks.len(), ns);
        let s = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
        out.push(FxThread {
            pid: s(&t["pid"]),
            tid: s(&t["tid"]),
            name: s(&t["name"]),
            process_name: s(&t["processName"]),
            times,
            weights,
            cpu_deltas,
            stacks,
            categories,
            markers,
        });
    }
    out
}

/// Waits until `cond` holds, polling every 20 ms, or panics after `secs` seconds.
pub fn await_cond(what: &str, secs: u64, mut cond: impl FnMut() -> bool) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !cond() {
        assert!(
            std::time::Instant::now() < end,
            "{what}: not within {secs} s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
