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
    run_env(dir, program, args, &[])
}

/// [`run`] with variables added to the environment.
pub fn run_env(dir: &Path, program: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let o = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
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

/// The unwound stacks of `perf script` and `hrec script` (both listing inlined functions, by
/// default) on the perf.data `name` (recorded with `--call-graph dwarf`) in `dir`: perf's
/// first.
pub fn dwarf_stacks(dir: &Path, name: &str) -> (Vec<Stack>, Vec<Stack>) {
    dwarf_stacks_with(dir, name, &[])
}

/// [`dwarf_stacks`] with more `script` flags (`--no-inline`: each frame by its symbol-table
/// name, `__libc_start_main@@GLIBC_2.34` where the inlined view names
/// `__libc_start_main_impl`).
pub fn dwarf_stacks_with(dir: &Path, name: &str, more: &[&str]) -> (Vec<Stack>, Vec<Stack>) {
    let mut args = vec!["script", "-F", "ip,sym", "-i", name];
    args.extend_from_slice(more);
    let perf = plain(script_stacks(&run(dir, "perf", &args)));
    let hrec = plain(script_stacks(&run(dir, env!("CARGO_BIN_EXE_hrec"), &args)));
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
    let same_frame = |p: &(String, String), h: &(String, String)| {
        p == h || (p.0 == h.0 && same_plt_stub(&p.1, &h.1))
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

/// Whether perf's and hrec's names of one frame name the same PLT stub: perf stretches a
/// zero-size `_init` over the `.plt` after it and names the stubs there `_init`; hrec names a
/// stub after its target (`clock_gettime@plt`, README). Offsets (`+0x..`) are left out.
pub fn same_plt_stub(perf: &str, hrec: &str) -> bool {
    let name = |s: &str| s.split_once("+0x").map_or(s, |(n, _)| n).to_string();
    name(perf) == "_init" && name(hrec).ends_with("@plt")
}

/// `perf script` and `hrec script` with the default fields on one perf.data, sample by
/// sample: the sample lines (thread, CPU, time, period, event) must be the same; a sample's
/// stack is the same when every call-chain line is (address, `function+offset`, and the object
/// or perf's `(inlined)` mark), but for the two naming differences the README lists: a PLT
/// stub named after its target by hrec and `_init` by perf ([`same_plt_stub`]), and a caller
/// whose return address is the first byte of the next function (`next+0x0` in perf's,
/// looked up as it is; the caller in hrec's, looked up a byte earlier: frame-pointer chains
/// only, as perf reports an unwound caller at the byte before its return address).
#[derive(Debug)]
pub struct DefaultStacks {
    /// Samples compared.
    pub samples: usize,
    /// Samples whose stacks are the same.
    pub same: usize,
    /// Samples whose stacks differ only in that perf's ends early: perf's stack is the start
    /// of hrec's (perf's unwinder gave up where hrec's went on).
    pub perf_ends_early: usize,
    /// Entries perf marks `(inlined)`.
    pub inlined: usize,
    /// The first sample whose stacks differ: perf's, then hrec's.
    pub first_difference: Option<(Stack, Stack)>,
}

impl DefaultStacks {
    /// The share of samples with the same stacks, in percent.
    pub fn percent(&self) -> f64 {
        100.0 * self.same as f64 / self.samples.max(1) as f64
    }
}

/// Compares the default `script` output of perf (`perf`) and hrec (`hrec`) on one file, as
/// [`DefaultStacks`] says.
pub fn compare_default_stacks(perf: &str, hrec: &str) -> DefaultStacks {
    let headers = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| !l.is_empty() && !l.starts_with('\t'))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(headers(perf), headers(hrec), "the sample lines differ");
    let (p, h) = (script_stacks(perf), script_stacks(hrec));
    assert_eq!(p.len(), h.len(), "samples with call chains");
    let next_function = |perf: &str| {
        perf.rsplit_once(" (")
            .is_some_and(|(name, _)| name.ends_with("+0x0"))
    };
    let same_entry = |i: usize, a: &(String, String), b: &(String, String)| {
        a == b || (a.0 == b.0 && (same_plt_stub(&a.1, &b.1) || (i > 0 && next_function(&a.1))))
    };
    let mut first_difference = None;
    let (mut same, mut perf_ends_early) = (0, 0);
    for (p, h) in p.iter().zip(&h) {
        let prefix = p.len() <= h.len()
            && p.iter()
                .zip(h.iter())
                .enumerate()
                .all(|(i, (a, b))| same_entry(i, a, b));
        if prefix && p.len() == h.len() {
            same += 1;
        } else if prefix {
            perf_ends_early += 1;
        }
        if !(prefix && p.len() == h.len()) && first_difference.is_none() {
            first_difference = Some((p.clone(), h.clone()));
        }
    }
    let inlined = p
        .iter()
        .flatten()
        .filter(|(_, rest)| rest.ends_with(" (inlined)"))
        .count();
    DefaultStacks {
        samples: p.len(),
        same,
        perf_ends_early,
        inlined,
        first_difference,
    }
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
