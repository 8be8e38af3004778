//! A fuzzing driver on the stable toolchain: no sanitizer coverage, structure-aware mutations
//! of real fixtures instead.
//!
//! ```text
//! cargo run --release --example fuzz -- TARGET|all [--seconds S] [--iterations N] [--seed N]
//!                                        [--corpus DIR] [--out DIR]
//! ```
//!
//! **Targets** are in `targets.rs` (shared with `tests/fuzz_regressions.rs`), their seeds in
//! `seeds.rs` (built from the fixtures at run time), the mutations in `mutate.rs`.
//!
//! **What counts as a find.** Each input runs under `catch_unwind` (a panic), with a watchdog
//! thread (an input running longer than 10 s is a hang: the watchdog saves it and ends the
//! worker) and a memory bound. The bound uses no allocator hook (that would need `unsafe`):
//! the kernel's peak resident size of the process, `VmHWM` in `/proc/self/status`, is read
//! after every input; an input that pushes it more than 256 MiB above the level before the
//! campaign started is an over-memory find, and writing `5` to `/proc/self/clear_refs`
//! resets the peak for the next one. An allocation too large to be satisfied aborts the
//! process instead; so each target runs in a child process (this program with `--worker`)
//! that writes the input it is about to run to a scratch file, and the parent saves that file
//! as a `crash` find when the child dies, then starts a new child for the time left.
//! `scripts/fuzz` also caps the address space (`ulimit -v`) so that such an input fails fast.
//!
//! Panics and over-memory inputs are minimised a little (cut from the end, then zeroed in
//! shrinking chunks, while the same failure persists) and written to
//! `<out>/<target>/<hash>.bin` (default `tests/fuzz-regressions`), one per panic location.

mod mutate;
mod seeds;
mod targets;

use std::collections::HashSet;
use std::hash::{Hash as _, Hasher as _};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use targets::{Env, TARGETS};

/// An input running longer than this is a hang.
const HANG: Duration = Duration::from_secs(10);
/// Peak RSS growth, over the level before the first input, that makes an over-memory find.
const MEMORY_CAP: u64 = 256 << 20;
/// The worker's exit status after its watchdog saved a hang.
const HANG_EXIT: u8 = 3;
/// The worker's exit status when it ran to the end and saved finds.
const FINDS_EXIT: u8 = 4;

#[derive(Debug, Clone)]
struct Args {
    targets: Vec<String>,
    seconds: Option<f64>,
    iterations: Option<u64>,
    seed: u64,
    corpus: Option<PathBuf>,
    out: PathBuf,
    worker: Option<PathBuf>,
    replay: Vec<PathBuf>,
}

fn usage() -> String {
    format!(
        "usage: fuzz TARGET|all [--seconds S] [--iterations N] [--seed N] [--corpus DIR] \
         [--out DIR]\n       fuzz TARGET --replay FILE [--replay FILE ...]\ntargets: {}",
        TARGETS.join(", ")
    )
}

fn parse_args() -> Result<Args, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut a = Args {
        targets: Vec::new(),
        seconds: None,
        iterations: None,
        seed: 1,
        corpus: None,
        out: root.join("tests/fuzz-regressions"),
        worker: None,
        replay: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--seconds" => {
                a.seconds = Some(value("--seconds")?.parse().map_err(|e| format!("{e}"))?);
            }
            "--iterations" => {
                a.iterations = Some(value("--iterations")?.parse().map_err(|e| format!("{e}"))?);
            }
            "--seed" => a.seed = value("--seed")?.parse().map_err(|e| format!("{e}"))?,
            "--corpus" => a.corpus = Some(value("--corpus")?.into()),
            "--out" => a.out = value("--out")?.into(),
            "--worker" => a.worker = Some(value("--worker")?.into()),
            "--replay" => a.replay.push(value("--replay")?.into()),
            "-h" | "--help" => return Err(usage()),
            "all" => a.targets.extend(TARGETS.iter().map(|t| t.to_string())),
            t if TARGETS.contains(&t) => a.targets.push(t.to_string()),
            other => return Err(format!("unknown argument {other:?}\n{}", usage())),
        }
    }
    if a.targets.is_empty() {
        return Err(usage());
    }
    if a.seconds.is_none() && a.iterations.is_none() {
        a.seconds = Some(60.0);
    }
    Ok(a)
}

/// How one run of a target ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Ok,
    /// A panic at this location.
    Panic(String),
    /// The peak RSS grew by this many bytes.
    Memory(u64),
}

/// The location and message of the last panic (the hook keeps it instead of printing it).
static LAST_PANIC: Mutex<Option<(String, String)>> = Mutex::new(None);

fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = Some((at, msg));
    }));
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

fn reset_hwm() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

struct Runner<'a> {
    env: &'a Env,
    target: &'a str,
    baseline: u64,
}

impl Runner<'_> {
    fn run(&self, input: &[u8]) -> Outcome {
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| self.env.run(self.target, input)));
        if r.is_err() {
            let (at, _) = LAST_PANIC
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
                .unwrap_or_default();
            return Outcome::Panic(at);
        }
        let hwm = vm_hwm();
        if hwm > self.baseline + MEMORY_CAP {
            reset_hwm();
            return Outcome::Memory(hwm - self.baseline);
        }
        Outcome::Ok
    }

    /// Whether `input` fails the way `want` did (a panic at the same place, or over memory).
    fn same(&self, input: &[u8], want: &Outcome) -> bool {
        reset_hwm();
        let got = self.run(input);
        match (want, &got) {
            (Outcome::Memory(_), Outcome::Memory(_)) => true,
            _ => &got == want,
        }
    }

    /// Cuts from the end and zeroes chunks while the failure persists (bounded in time).
    fn minimise(&self, input: &[u8], want: &Outcome) -> Vec<u8> {
        let start = Instant::now();
        let budget = Duration::from_secs(20);
        let mut best = input.to_vec();
        let mut cut = best.len() / 2;
        while cut > 0 && start.elapsed() < budget {
            let shorter = best.get(..best.len().saturating_sub(cut)).unwrap_or(&[]);
            if !shorter.is_empty() && self.same(shorter, want) {
                best = shorter.to_vec();
            } else {
                cut /= 2;
            }
        }
        let mut chunk = 64.min(best.len().max(1));
        while chunk > 0 && start.elapsed() < budget {
            let mut at = 0;
            while at < best.len() && start.elapsed() < budget {
                let end = (at + chunk).min(best.len());
                if best.get(at..end).is_some_and(|c| c.iter().any(|&b| b != 0)) {
                    let mut t = best.clone();
                    t.get_mut(at..end)
                        .into_iter()
                        .flatten()
                        .for_each(|b| *b = 0);
                    if self.same(&t, want) {
                        best = t;
                    }
                }
                at = end;
            }
            chunk /= 4;
        }
        best
    }
}

fn hash_of(b: &[u8]) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    b.hash(&mut h);
    format!("{:016x}", h.finish())
}

fn save(out: &Path, target: &str, bytes: &[u8]) -> PathBuf {
    let dir = out.join(target);
    let path = dir.join(format!("{}.bin", hash_of(bytes)));
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, bytes)) {
        eprintln!("fuzz: cannot write {}: {e}", path.display());
    }
    path
}

fn load_dir(dir: &Path, into: &mut Vec<Vec<u8>>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        // A `*.known.bin` find is not fixed yet: as a seed it would be found again each run.
        let known = p.to_string_lossy().ends_with(".known.bin");
        if p.is_file()
            && !known
            && let Ok(b) = std::fs::read(&p)
            && b.len() < (4 << 20)
        {
            into.push(b);
        }
    }
}

/// Writes the input about to run to the state file: its length, the count of inputs run
/// before it, then the bytes. Written in place, never truncated (a file rewritten from zero
/// length is flushed to disk by ext4 every time).
fn write_state(f: &mut Option<std::fs::File>, n: u64, input: &[u8]) {
    use std::os::unix::fs::FileExt as _;
    if let Some(file) = f {
        let mut b = (input.len() as u64).to_le_bytes().to_vec();
        b.extend(n.to_le_bytes());
        b.extend(input);
        let _ = file.write_all_at(&b, 0);
    }
}

/// Reads what [`write_state`] wrote: the count and the input; `None` when the worker never
/// got to an input.
fn read_state(path: &Path) -> Option<(u64, Vec<u8>)> {
    let b = std::fs::read(path).ok().filter(|b| b.len() >= 16)?;
    let word = |at: usize| {
        b.get(at..at + 8)
            .and_then(|w| w.try_into().ok())
            .map_or(0, u64::from_le_bytes)
    };
    let len = usize::try_from(word(0)).unwrap_or(0);
    let input = b
        .get(16..16usize.saturating_add(len))
        .unwrap_or(&[])
        .to_vec();
    Some((word(8), input))
}

/// The worker: fuzzes one target in this process. `state` receives each input (after an
/// 8-byte count of the inputs run before it) just before it runs.
fn worker(args: &Args, target: &str, state: &Path) -> ExitCode {
    let deadline = args
        .seconds
        .map(|s| Instant::now() + Duration::from_secs_f64(s));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let env = match Env::new(root) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("fuzz: cannot set up the scratch directory: {e}");
            return ExitCode::from(2);
        }
    };
    let mut corpus = seeds::seeds(&env, target);
    if let Some(dir) = &args.corpus {
        load_dir(&dir.join(target), &mut corpus);
        load_dir(dir, &mut corpus);
    }
    load_dir(&args.out.join(target), &mut corpus);
    if corpus.is_empty() {
        corpus.push(Vec::new());
    }
    let corpus: Vec<mutate::Seed> = corpus.into_iter().map(mutate::Seed::new).collect();
    let text = matches!(target, "event" | "expr" | "perfmon");
    let mut m = mutate::Mutator::new(args.seed, text);
    install_panic_hook();
    reset_hwm();
    let runner = Runner {
        env: &env,
        target,
        baseline: 0,
    };
    // Run the seeds once so that the caches they fill count in the baseline.
    for s in &corpus {
        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| env.run(target, &s.bytes)));
    }
    reset_hwm();
    let runner = Runner {
        baseline: vm_hwm(),
        ..runner
    };

    let mut state_file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(state)
        .ok();
    let started = Arc::new(AtomicU64::new(0));
    let current = Arc::new(Mutex::new(Vec::<u8>::new()));
    let epoch = Instant::now();
    {
        let (started, current) = (started.clone(), current.clone());
        let (out, target) = (args.out.clone(), target.to_string());
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(200));
                let s = started.load(Ordering::Relaxed);
                if s != 0 && epoch.elapsed().as_millis() as u64 > s + HANG.as_millis() as u64 {
                    let input = current.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    let p = save(&out, &target, &input);
                    eprintln!("fuzz: {target}: HANG (> {HANG:?}), saved {}", p.display());
                    std::process::exit(HANG_EXIT.into());
                }
            }
        });
    }

    let mut seen: HashSet<String> = HashSet::new();
    let mut finds = 0u64;
    let mut n = 0u64;
    while args.iterations.is_none_or(|max| n < max) && deadline.is_none_or(|d| Instant::now() < d) {
        let input = m.mutant(&corpus);
        write_state(&mut state_file, n, &input);
        input.clone_into(&mut current.lock().unwrap_or_else(|e| e.into_inner()));
        started.store(epoch.elapsed().as_millis() as u64 + 1, Ordering::Relaxed);
        let outcome = runner.run(&input);
        started.store(0, Ordering::Relaxed);
        n += 1;
        let key = match &outcome {
            Outcome::Ok => continue,
            Outcome::Panic(at) => at.clone(),
            Outcome::Memory(_) => "memory".to_string(),
        };
        if !seen.insert(key.clone()) {
            continue;
        }
        let msg = LAST_PANIC
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .map(|(_, m)| m)
            .unwrap_or_default();
        let small = runner.minimise(&input, &outcome);
        let p = save(&args.out, target, &small);
        finds += 1;
        match outcome {
            Outcome::Memory(b) => eprintln!(
                "fuzz: {target}: OVER MEMORY (peak +{} MiB), {} bytes saved as {}",
                b >> 20,
                small.len(),
                p.display()
            ),
            _ => eprintln!(
                "fuzz: {target}: PANIC at {key}: {msg}; {} bytes saved as {}",
                small.len(),
                p.display()
            ),
        }
    }
    let secs = epoch.elapsed().as_secs_f64();
    println!("{n} {secs} {finds} {}", corpus.len());
    let _ = std::fs::remove_file(state);
    if finds > 0 {
        ExitCode::from(FINDS_EXIT)
    } else {
        ExitCode::SUCCESS
    }
}

/// The parent: runs each target in a worker process, restarting it after a hang or a crash
/// for the time (or iterations) left.
fn supervise(args: &Args) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("fuzz: cannot find this program: {e}");
            return ExitCode::from(2);
        }
    };
    let scratch = targets::scratch_dir();
    let mut failed = false;
    let mut totals = Vec::new();
    for target in &args.targets {
        let start = Instant::now();
        let mut done = 0u64;
        let mut restarts = 0u64;
        let (mut inputs, mut finds, mut seeds) = (0u64, 0u64, 0u64);
        loop {
            let state = scratch.join(format!("hrec-fuzz-{}-{target}.current", std::process::id()));
            let mut cmd = std::process::Command::new(&exe);
            cmd.arg(target).arg("--worker").arg(&state);
            cmd.arg("--seed").arg((args.seed + restarts).to_string());
            cmd.arg("--out").arg(&args.out);
            if let Some(c) = &args.corpus {
                cmd.arg("--corpus").arg(c);
            }
            if let Some(s) = args.seconds {
                let left = s - start.elapsed().as_secs_f64();
                if left <= 0.0 {
                    break;
                }
                cmd.arg("--seconds").arg(format!("{left:.3}"));
            }
            if let Some(i) = args.iterations {
                if done >= i {
                    break;
                }
                cmd.arg("--iterations").arg((i - done).to_string());
            }
            cmd.stderr(std::process::Stdio::inherit());
            let output = match cmd.output() {
                Ok(o) => o,
                Err(e) => {
                    eprintln!("fuzz: cannot start a worker: {e}");
                    return ExitCode::from(2);
                }
            };
            let status = output.status;
            let stats: Vec<u64> = String::from_utf8_lossy(&output.stdout)
                .split_whitespace()
                .filter_map(|w| w.parse::<f64>().ok().map(|v| v as u64))
                .collect();
            if let [n, _, f, s] = stats[..] {
                inputs += n;
                finds += f;
                seeds = s;
            }
            if status.code() == Some(FINDS_EXIT.into()) {
                failed = true;
            }
            if status.success() || status.code() == Some(FINDS_EXIT.into()) {
                break;
            }
            failed = true;
            restarts += 1;
            let Some((count, input)) = read_state(&state) else {
                eprintln!("fuzz: {target}: the worker failed before its first input ({status})");
                break;
            };
            let _ = std::fs::remove_file(&state);
            let ran = count + 1;
            done += ran;
            inputs += ran;
            finds += 1;
            if status.code() != Some(HANG_EXIT.into()) {
                let p = save(&args.out, target, &input);
                eprintln!(
                    "fuzz: {target}: CRASH ({status}), {} bytes saved as {}",
                    input.len(),
                    p.display()
                );
            }
            if restarts > 50 {
                eprintln!("fuzz: {target}: giving up after {restarts} restarts");
                break;
            }
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "fuzz: {target:<9} {inputs:>10} inputs in {secs:>7.1} s ({:>8.0}/s), {seeds} seeds, \
             {finds} finds",
            inputs as f64 / secs.max(1e-9)
        );
        totals.push((inputs, secs, finds));
    }
    if totals.len() > 1 {
        let (n, s, f) = totals
            .iter()
            .fold((0, 0.0, 0), |(n, s, f), t| (n + t.0, s + t.1, f + t.2));
        println!("fuzz: total     {n:>10} inputs in {s:>7.1} s, {f} finds");
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Runs each file once through the target, with the panic and memory checks, and says how
/// it went (a hang is left to the caller's patience: nothing stops it).
fn replay(target: &str, files: &[PathBuf]) -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let env = match Env::new(root) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("fuzz: cannot set up the scratch directory: {e}");
            return ExitCode::from(2);
        }
    };
    install_panic_hook();
    reset_hwm();
    let runner = Runner {
        env: &env,
        target,
        baseline: vm_hwm(),
    };
    let mut failed = false;
    for f in files {
        let input = match std::fs::read(f) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("fuzz: {}: {e}", f.display());
                failed = true;
                continue;
            }
        };
        let start = Instant::now();
        reset_hwm();
        let outcome = runner.run(&input);
        let took = start.elapsed();
        match outcome {
            Outcome::Ok => println!("{}: ok ({took:.1?})", f.display()),
            Outcome::Panic(at) => {
                failed = true;
                println!("{}: PANIC at {at}", f.display());
            }
            Outcome::Memory(b) => {
                failed = true;
                println!("{}: OVER MEMORY (peak +{} MiB)", f.display(), b >> 20);
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if !args.replay.is_empty() {
        return match args.targets.as_slice() {
            [target] => replay(target, &args.replay),
            _ => {
                eprintln!("fuzz: --replay takes one target");
                ExitCode::from(2)
            }
        };
    }
    match (&args.worker, args.targets.as_slice()) {
        (Some(state), [target]) => worker(&args, target, state),
        (Some(_), _) => {
            eprintln!("fuzz: --worker takes one target");
            ExitCode::from(2)
        }
        (None, _) => supervise(&args),
    }
}
