//! Every input the fuzzer (`examples/fuzz`) ever found, replayed through its target: none may
//! panic, take longer than a minute (the fuzzer's hang limit is 10 s in release builds;
//! debug builds are several times slower) or raise the process's peak resident size by more
//! than 256 MiB (the fuzzer's memory bound; this test binary holds this one test, so the
//! process-wide peak is this test's). Files are `tests/fuzz-regressions/<target>/*.bin`;
//! a `*.known.bin` file is a find that is not fixed yet (named in docs/reliability.md) and is
//! skipped.

#[allow(dead_code)]
#[path = "../examples/fuzz/targets.rs"]
mod targets;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

fn regression_files() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    let mut files = Vec::new();
    for target in targets::TARGETS {
        let Ok(rd) = std::fs::read_dir(root.join(target)) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            if name
                .as_deref()
                .is_some_and(|n| n.ends_with(".bin") && !n.ends_with(".known.bin"))
            {
                files.push((target.to_string(), p));
            }
        }
    }
    files.sort();
    files
}

fn vm_hwm() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Resets the peak resident size to the current one (`clear_refs` 5).
fn reset_hwm() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

#[test]
fn every_fuzz_find_stays_fixed() {
    let env = Arc::new(
        targets::Env::new(Path::new(env!("CARGO_MANIFEST_DIR"))).expect("scratch directory"),
    );
    let files = regression_files();
    let mut failures = Vec::new();
    for (target, path) in &files {
        let input = std::fs::read(path).expect("regression file");
        reset_hwm();
        let baseline = vm_hwm();
        let (tx, rx) = std::sync::mpsc::channel();
        let env2 = env.clone();
        let t = target.clone();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| env2.run(&t, &input)));
            let _ = tx.send(r);
        });
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Ok(true)) if vm_hwm() > baseline + (256 << 20) => failures.push(format!(
                "{}: peak memory +{} MiB",
                path.display(),
                (vm_hwm() - baseline) >> 20
            )),
            Ok(Ok(true)) => {}
            Ok(Ok(false)) => failures.push(format!("{}: unknown target", path.display())),
            Ok(Err(_)) => failures.push(format!("{}: panicked", path.display())),
            Err(_) => failures.push(format!("{}: still running after 60 s", path.display())),
        }
    }
    assert!(!files.is_empty(), "no regression files found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("replayed {} fuzz regression files", files.len());
}
