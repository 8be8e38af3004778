//! Shared helpers for the integration tests: fixture paths, fixture PMU snapshots, running the
//! `hrec` binary with a fixture sysfs tree, and golden-file comparison (`HREC_BLESS=1` rewrites).

#![allow(dead_code)]
pub mod encode;
pub mod stacks;
pub mod tmux;

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

/// The PMU snapshot of a fixture model.
pub fn pmus(model: &str) -> Pmus {
    Pmus::read(&sysfs(model)).unwrap_or_else(|e| panic!("fixture {model}: {e}"))
}

/// True when this machine's real /sys has a core PMU (a hardware PMU), by hrec's own discovery.
pub fn host_has_core_pmu() -> bool {
    Pmus::read(Path::new("/sys")).is_ok_and(|p| !p.core_pmus().is_empty())
}

/// The host facts the fixture procfs gives, on x86.
pub fn host() -> Host {
    Host {
        max_sample_rate: Some(100_000),
        x86: true,
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
        c.env("HREC_SYSFS_ROOT", sysfs(m))
            .env("HREC_PROCFS_ROOT", procfs());
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

/// The path of an example built optimised with debug info (`target/release/examples/<name>`),
/// building it when missing: profiles of optimised code are the ones worth comparing.
pub fn release_example(name: &str) -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--quiet", "--example", name])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("run cargo");
    assert!(
        status.success(),
        "cargo build --release --example {name} failed"
    );
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/release/examples")
        .join(name)
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
