//! The command examples of the README and of `docs/guide/` are run, and their shown output
//! must match what hrec prints today: a doc that drifts from the program fails here.
//!
//! A ```` ```console ```` block holds commands (`$ ` lines; a line ending in `\` goes on on the
//! next) each followed by its output. Each command runs through `bash -c` with stderr merged
//! into stdout (as a terminal shows them), so a block may pipe into `head` or `grep`. The
//! working directory is one fresh directory per doc page, with `examples/` and `tests/` of the
//! repository linked into it, so `examples/recordings/...`, `examples/topdown/tdemo` and the
//! fixture machines of `tests/fixtures/` work as they do from a clone's root, and
//! `target/release/examples/` holds the example programs this suite built (debug builds,
//! standing in for the release builds `scripts/demo` makes). What one command writes a later
//! one of that page can read; HOME and XDG_CACHE_HOME point into the directory too, so a test
//! run leaves no build-id cache behind. The `hrec` on PATH is the one this test suite built. A
//! command must exit 0, unless its block's info string says `fails` (` ```console fails `:
//! then every command of the block must fail).
//!
//! Intel's perfmon files (`../shared/perfmon` next to the repository, or `$HREC_PERFMON_DIR`
//! of the test run) are linked where hrec looks by default, `~/.cache/hrec/perfmon`, as
//! `scripts/fetch-perfmon.sh` leaves them; a block that needs them says `perfmon` in its info
//! string (` ```console perfmon `) and is skipped, with a line saying so, where they are not.
//!
//! Output is compared line by line, trailing blanks aside, with trycmd's placeholders: `[..]`
//! inside a line matches any text, and a line that is only `...` matches any number of lines
//! (none included). `HREC_BLESS=1` rewrites the output of every block that does not match with
//! what the program printed, to be placeholdered again by hand where it varies.
//!
//! Why not trycmd or snapbox: trycmd runs a command without a shell (no pipes, no `cd`, no
//! `head`, which long reports need to stay short on a page), and the runner here is the few
//! lines of its Markdown mode that the docs use, with the same placeholder syntax.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One command of a block, with the output the doc shows for it.
#[derive(Debug)]
struct Example {
    /// Line (1-based) of the `$ ` line in the doc.
    line: usize,
    command: String,
    /// Line indices (0-based) of the doc's output lines for this command: `start..end`.
    output: std::ops::Range<usize>,
    fails: bool,
    /// Its block needs Intel's perfmon files.
    perfmon: bool,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The examples of a Markdown text, in order.
fn examples(lines: &[&str]) -> Vec<Example> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim_start();
        let Some(info) = fence.strip_prefix("```console") else {
            i += 1;
            continue;
        };
        let fails = info.split_whitespace().any(|w| w == "fails");
        let perfmon = info.split_whitespace().any(|w| w == "perfmon");
        i += 1;
        let mut current: Option<Example> = None;
        while i < lines.len() && !lines[i].trim_start().starts_with("```") {
            if let Some(cmd) = lines[i].strip_prefix("$ ") {
                if let Some(mut e) = current.take() {
                    e.output.end = i;
                    out.push(e);
                }
                let first = i;
                let mut command = cmd.to_string();
                while command.ends_with('\\') && i + 1 < lines.len() {
                    i += 1;
                    command.push('\n');
                    command.push_str(lines[i]);
                }
                current = Some(Example {
                    line: first + 1,
                    command,
                    output: i + 1..i + 1,
                    fails,
                    perfmon,
                });
            }
            i += 1;
        }
        if let Some(mut e) = current.take() {
            e.output.end = i;
            out.push(e);
        }
        i += 1;
    }
    out
}

/// Whether `actual` matches `pattern`, where `[..]` stands for any text.
fn line_matches(pattern: &str, actual: &str) -> bool {
    let mut parts = pattern.split("[..]");
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = actual.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (k, part) in parts.iter().enumerate() {
        if k + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Whether `actual`'s lines match the `expected` lines, `...` lines matching any run of lines.
fn lines_match(expected: &[&str], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((&"...", rest)) => (0..=actual.len()).any(|skip| lines_match(rest, &actual[skip..])),
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(a, more)| line_matches(first, a) && lines_match(rest, more)),
    }
}

/// Intel's perfmon files for the examples: `$HREC_PERFMON_DIR`, else `../shared/perfmon` next
/// to the repository, if they are there.
fn perfmon_files() -> Option<PathBuf> {
    std::env::var_os("HREC_PERFMON_DIR")
        .map(PathBuf::from)
        .or_else(|| Some(repo().join("../shared/perfmon")))
        .filter(|d| d.join("mapfile.csv").exists())
}

/// A fresh working directory for one doc page: `examples/` and `tests/` linked in, the
/// example programs this suite built (`target/debug/examples`) standing in for the release
/// builds the docs name (`target/release/examples`, which `scripts/demo` builds), its own HOME.
fn workdir() -> tempfile::TempDir {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    symlink(repo().join("examples"), d.join("examples")).unwrap();
    symlink(repo().join("tests"), d.join("tests")).unwrap();
    let built = Path::new(env!("CARGO_BIN_EXE_hrec"))
        .parent()
        .unwrap()
        .join("examples");
    std::fs::create_dir_all(d.join("target/release")).unwrap();
    symlink(built, d.join("target/release/examples")).unwrap();
    std::fs::create_dir(d.join("home")).unwrap();
    if let Some(p) = perfmon_files() {
        std::fs::create_dir_all(d.join("home/.cache/hrec")).unwrap();
        symlink(p, d.join("home/.cache/hrec/perfmon")).unwrap();
    }
    dir
}

fn run(dir: &Path, command: &str) -> (bool, String) {
    let bin = Path::new(env!("CARGO_BIN_EXE_hrec")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!("{{\n{command}\n}} 2>&1"))
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", dir.join("home"))
        .env("XDG_CACHE_HOME", dir.join("home/.cache"))
        .env("COLUMNS", "100")
        .env_remove("HREC_SYSFS_ROOT")
        .env_remove("HREC_PROCFS_ROOT")
        .env_remove("HREC_PERFMON_DIR")
        .env_remove("DEBUGINFOD_URLS")
        .env_remove("PERF_BUILDID_DIR")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    (o.status.success(), text)
}

/// Runs every example of `doc` (relative to the repository) and fails with each mismatch;
/// `HREC_BLESS=1` writes the program's output into the doc instead.
fn check(doc: &str) {
    let path = repo().join(doc);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{doc}: {e}"));
    let lines: Vec<&str> = text.lines().collect();
    let found = examples(&lines);
    let dir = workdir();
    let bless = std::env::var_os("HREC_BLESS").is_some();
    let mut failures = Vec::new();
    let mut replaced: Vec<(std::ops::Range<usize>, Vec<String>)> = Vec::new();
    let skipped = found
        .iter()
        .filter(|e| e.perfmon && perfmon_files().is_none())
        .count();
    if skipped > 0 {
        eprintln!(
            "{doc}: {skipped} examples skipped: no Intel perfmon files (../shared/perfmon or HREC_PERFMON_DIR)"
        );
    }
    for e in found
        .iter()
        .filter(|e| !e.perfmon || perfmon_files().is_some())
    {
        let (ok, out) = run(dir.path(), &e.command);
        let actual: Vec<&str> = out.lines().map(str::trim_end).collect();
        let expected: Vec<&str> = lines[e.output.clone()]
            .iter()
            .map(|l| l.trim_end())
            .collect();
        let status_ok = ok != e.fails;
        let matched = lines_match(&expected, &actual);
        if matched && status_ok {
            continue;
        }
        if bless && status_ok {
            replaced.push((
                e.output.clone(),
                actual.iter().map(|l| l.to_string()).collect(),
            ));
            continue;
        }
        let status = if status_ok {
            String::new()
        } else if e.fails {
            "\n(it exited 0; the block says `fails`)".to_string()
        } else {
            "\n(it failed)".to_string()
        };
        failures.push(format!(
            "{doc}:{}: `{}`{status}\n--- shown:\n{}\n--- printed:\n{}",
            e.line,
            e.command,
            expected.join("\n"),
            actual.join("\n")
        ));
    }
    if bless && !replaced.is_empty() {
        let mut new: Vec<String> = Vec::new();
        let mut at = 0;
        for (range, with) in &replaced {
            new.extend(lines[at..range.start].iter().map(|l| l.to_string()));
            new.extend(with.iter().cloned());
            at = range.end;
        }
        new.extend(lines[at..].iter().map(|l| l.to_string()));
        std::fs::write(&path, new.join("\n") + "\n").unwrap();
        eprintln!("{doc}: {} example outputs rewritten", replaced.len());
    }
    assert!(
        failures.is_empty(),
        "{} of {} examples of {doc} do not print what the doc shows (HREC_BLESS=1 rewrites \
         them):\n\n{}",
        failures.len(),
        found.len(),
        failures.join("\n\n")
    );
    eprintln!("{doc}: {} examples ran and matched", found.len() - skipped);
}

/// The guide's pages, each checked by a test of its own below.
const GUIDE: &[&str] = &[
    "README.md",
    "getting-started.md",
    "topdown.md",
    "retire-latency.md",
    "hybrid.md",
    "call-graphs.md",
    "off-cpu.md",
    "memory.md",
    "tracepoints.md",
    "symbols.md",
    "coming-from-perf.md",
    "troubleshooting.md",
];

macro_rules! guide_page {
    ($($name:ident => $page:literal),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                check(concat!("docs/guide/", $page));
            }
        )*
    };
}

guide_page! {
    guide_index => "README.md",
    guide_getting_started => "getting-started.md",
    guide_topdown => "topdown.md",
    guide_retire_latency => "retire-latency.md",
    guide_hybrid => "hybrid.md",
    guide_call_graphs => "call-graphs.md",
    guide_off_cpu => "off-cpu.md",
    guide_memory => "memory.md",
    guide_tracepoints => "tracepoints.md",
    guide_symbols => "symbols.md",
    guide_coming_from_perf => "coming-from-perf.md",
    guide_troubleshooting => "troubleshooting.md",
}

#[test]
fn every_guide_page_is_checked() {
    let dir = repo().join("docs/guide");
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".md"))
                .collect()
        })
        .unwrap_or_default();
    pages.sort();
    let mut listed: Vec<String> = GUIDE.iter().map(|p| p.to_string()).collect();
    listed.sort();
    assert_eq!(
        pages, listed,
        "docs/guide's pages and tests/docs.rs's GUIDE list differ"
    );
}

#[test]
fn readme() {
    check("README.md");
}

#[test]
fn placeholders() {
    assert!(line_matches("a [..] c", "a b c"));
    assert!(line_matches("[..]", ""));
    assert!(line_matches("x[..]", "xyz"));
    assert!(line_matches("[..]z", "xyz"));
    assert!(!line_matches("a [..] c", "a b d"));
    assert!(!line_matches("abc", "abcd"));
    assert!(line_matches("[..]b[..]b", "abab"));
    assert!(lines_match(&["a", "...", "d"], &["a", "b", "c", "d"]));
    assert!(lines_match(&["a", "...", "d"], &["a", "d"]));
    assert!(!lines_match(&["a", "...", "d"], &["a", "b"]));
    assert!(lines_match(&["..."], &[]));
    let doc = "text\n```console\n$ echo a \\\nb\na b\n$ false\n```\n```sh\n$ x\n```\n";
    let lines: Vec<&str> = doc.lines().collect();
    let e = examples(&lines);
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].command, "echo a \\\nb");
    assert_eq!(&lines[e[0].output.clone()], &["a b"]);
    assert_eq!(e[1].command, "false");
    assert!(e[1].output.is_empty());
    assert!(!e[0].perfmon && !e[1].fails);
    let doc = "```console perfmon fails\n$ hrec x\n```\n";
    let lines: Vec<&str> = doc.lines().collect();
    let e = examples(&lines);
    assert!(e[0].perfmon && e[0].fails);
}
