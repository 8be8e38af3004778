//! Building the fixture programs and comparing call stacks with perf's (issues 14 and 20).

use std::path::{Path, PathBuf};
use std::process::Command;

/// One sample's frames: (address, name) as printed, innermost first.
pub type Stack = Vec<(String, String)>;

/// Compiles a fixture (a path under `tests/fixtures/`) into `dir` with `flags` after the
/// source (so libraries can be named there), after the defaults (`-O2 -g` for C and C++,
/// `-O -g` for Rust); `-shared` makes `lib<stem>.so`. `None` after saying why when there is
/// no compiler.
pub fn build(dir: &Path, fixture: &str, flags: &[&str]) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    let stem = src.file_stem().unwrap().to_string_lossy().into_owned();
    let shared = flags.contains(&"-shared");
    let out = dir.join(if shared {
        format!("lib{stem}.so")
    } else {
        stem
    });
    let mut c = if fixture.ends_with(".cpp") || fixture.ends_with(".c") {
        let cc = if fixture.ends_with(".c") {
            "gcc"
        } else {
            "g++"
        };
        let mut c = Command::new(cc);
        c.args(["-O2", "-g", "-o"]).arg(&out).arg(&src).args(flags);
        c
    } else {
        let mut c = Command::new("rustc");
        c.args(["-O", "-g", "--edition", "2021", "-o"])
            .arg(&out)
            .arg(&src)
            .args(flags);
        c
    };
    match c.output() {
        Ok(o) if o.status.success() => Some(out),
        Ok(o) => panic!("{fixture}: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => {
            eprintln!("skipped {fixture}: no compiler ({e})");
            None
        }
    }
}

/// Runs `program` in `dir`; panics unless it succeeds. Its stdout.
pub fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let o = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        o.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The call-chain frames of each sample of `script -F ip,sym` output (perf's or hrec's):
/// (address, name as printed).
pub fn script_stacks(out: &str) -> Vec<Stack> {
    out.split("\n\n")
        .map(|sample| {
            sample
                .lines()
                .filter(|l| l.starts_with('\t'))
                .filter_map(|l| {
                    let (ip, sym) = l.trim().split_once(' ')?;
                    Some((ip.to_string(), sym.trim().to_string()))
                })
                .collect()
        })
        .filter(|f: &Vec<_>| !f.is_empty())
        .collect()
}

/// Stacks as both tools print them, compared: perf's ` (inlined)` mark dropped, unresolved
/// frames as `?`, and the `ffffffffffffffff` frame perf's unwinder adds where it ends on a
/// bad return address left out.
fn plain(stacks: Vec<Stack>) -> Vec<Stack> {
    stacks
        .into_iter()
        .map(|s| {
            s.into_iter()
                .filter(|(ip, _)| ip != "ffffffffffffffff")
                .map(|(ip, sym)| {
                    let sym = sym.trim_end_matches(" (inlined)");
                    let sym = if sym.starts_with('[') { "?" } else { sym };
                    (ip, sym.to_string())
                })
                .collect()
        })
        .collect()
}

/// The unwound stacks of `perf script` and `hrec script --inline` on the perf.data `name`
/// (recorded with `--call-graph dwarf`) in `dir`: perf's first.
pub fn dwarf_stacks(dir: &Path, name: &str) -> (Vec<Stack>, Vec<Stack>) {
    let perf = plain(script_stacks(&run(
        dir,
        "perf",
        &["script", "-F", "ip,sym", "-i", name],
    )));
    let hrec = plain(script_stacks(&run(
        dir,
        env!("CARGO_BIN_EXE_hrec"),
        &["script", "--inline", "-F", "ip,sym", "-i", name],
    )));
    (perf, hrec)
}

/// The share of unwound stacks hrec's report header gives for recording `name` in `dir`.
pub fn unwound_share(dir: &Path, name: &str) -> f64 {
    let report = run(dir, env!("CARGO_BIN_EXE_hrec"), &["report", "-i", name]);
    report
        .lines()
        .find_map(|l| {
            l.strip_prefix("# unwound ")?
                .split('%')
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("{name}: no unwinding line in\n{report}"))
}

/// Unwound stacks of `--call-graph dwarf` samples against perf's: the same functions and
/// addresses for at least 98% of the samples. Where perf's unwinder gives up early and
/// hrec's goes on, perf's stack is the start of hrec's: that agrees.
pub fn same_dwarf_stacks_as_perf(dir: &Path, name: &str) {
    let (perf, hrec) = dwarf_stacks(dir, name);
    assert_eq!(perf.len(), hrec.len(), "{name}: samples");
    // The report says how many stacks unwound to the root: nearly all of these.
    let unwound = unwound_share(dir, name);
    assert!(unwound >= 90.0, "{name}: unwound {unwound}%");
    // perf stretches a zero-size `_init` over the `.plt` after it and names the stubs there
    // `_init`; hrec names a stub after its target (`clock_gettime@plt`, README): the same
    // frame.
    let same_frame = |p: &(String, String), h: &(String, String)| {
        p == h || (p.0 == h.0 && p.1 == "_init" && h.1.ends_with("@plt"))
    };
    let differ: Vec<_> = perf
        .iter()
        .zip(&hrec)
        .filter(|(p, h)| {
            h.len() < p.len() || !p.iter().zip(h.iter()).all(|(a, b)| same_frame(a, b))
        })
        .collect();
    let deep = perf.iter().filter(|p| p.len() > 3).count();
    assert!(
        deep * 2 > perf.len(),
        "{name}: perf unwound too few stacks to compare"
    );
    assert!(
        differ.len() * 50 <= perf.len(),
        "{name}: {} of {} stacks differ from perf's; first:\nperf {:?}\nhrec {:?}",
        differ.len(),
        perf.len(),
        differ.first().map(|d| d.0),
        differ.first().map(|d| d.1)
    );
}

/// Whether a stack (innermost frame first) reaches the root of its process: `_start`, or
/// `main` or a thread's start when the frames below those are unnamed.
pub fn reaches_root(stack: &[(String, String)]) -> bool {
    const ROOTS: [&str; 6] = [
        "_start",
        "main",
        "__libc_start_main",
        "__libc_start_call_main",
        "start_thread",
        "clone3",
    ];
    stack.iter().any(|(_, sym)| {
        let base = sym.split('+').next().unwrap_or(sym);
        ROOTS
            .iter()
            .any(|r| base == *r || base.starts_with(&format!("{r}@")))
    })
}
