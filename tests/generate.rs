//! `hrec generate man|completions` and the completions' source, `hrec list --raw-dump`: the
//! man pages render with `man -l` without a groff warning and carry every flag of `--help`;
//! the bash completion, run in bash as bash runs it, completes commands, flags and (from
//! `hrec list --raw-dump` on a fixture tree) event names.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{sysfs, text};

/// The pages `hrec generate man` writes: one per command, nested ones too.
const PAGES: [&str; 24] = [
    "hrec",
    "hrec-record",
    "hrec-report",
    "hrec-script",
    "hrec-flamegraph",
    "hrec-export",
    "hrec-convert",
    "hrec-stat",
    "hrec-list",
    "hrec-info",
    "hrec-evlist",
    "hrec-buildid-list",
    "hrec-buildid-cache",
    "hrec-archive",
    "hrec-annotate",
    "hrec-diff",
    "hrec-top",
    "hrec-mem",
    "hrec-mem-record",
    "hrec-mem-report",
    "hrec-c2c",
    "hrec-c2c-record",
    "hrec-c2c-report",
    "hrec-probe",
];

/// hrec with `args`, on the alderlake fixture tree and without perfmon files (the event
/// names are sysfs's and perf's tables, the same on every machine).
fn hrec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hrec"))
        .args(args)
        .env("HREC_SYSFS_ROOT", sysfs("alderlake"))
        .env("HREC_PERFMON_DIR", "/nonexistent-hrec-perfmon")
        .output()
        .expect("run hrec")
}

fn generate(args: &[&str]) -> String {
    let o = hrec(args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{args:?}: {err}");
    out
}

fn has(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The long flags a `--help` lists (`      --call-graph <...>`, `  -e, --event <EVENT>`).
fn help_flags(help: &str) -> Vec<String> {
    // clap's flag lines are indented by 2 (`-e, --event`) or 6 (`--call-graph`); wrapped
    // help text by 10.
    help.lines()
        .filter_map(|l| l.strip_prefix("  "))
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .filter(|l| l.starts_with('-'))
        .filter_map(|l| {
            let long = l.split_whitespace().find(|w| w.starts_with("--"))?;
            let name: String = long
                .trim_start_matches("--")
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            Some(name)
        })
        .collect()
}

#[test]
fn man_pages_render_with_every_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let man_dir = dir.path().join("man1");
    generate(&["generate", "man", man_dir.to_str().expect("utf-8 path")]);
    let mut written: Vec<String> = std::fs::read_dir(&man_dir)
        .expect("man dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    let mut want: Vec<String> = PAGES.iter().map(|p| format!("{p}.1")).collect();
    want.sort();
    assert_eq!(written, want);

    for page in PAGES {
        let roff = std::fs::read_to_string(man_dir.join(format!("{page}.1"))).expect("page");
        // Every flag `--help` lists is in OPTIONS, in the same order.
        // The command of the page: `hrec-buildid-list` is `buildid-list`, `hrec-mem-record`
        // is `mem record`.
        let mut args: Vec<&str> = match page.strip_prefix("hrec-") {
            None => Vec::new(),
            Some(name) => match name.split_once('-') {
                Some((parent @ ("mem" | "c2c"), child)) => vec![parent, child],
                _ => vec![name],
            },
        };
        args.push("--help");
        let flags = help_flags(&generate(&args));
        assert!(flags.contains(&"help".to_string()), "{page}: {flags:?}");
        let mut at = 0;
        for f in &flags {
            let roffed = format!("\\fB\\-\\-{}\\fR", f.replace('-', "\\-"));
            let found = roff[at..].find(&roffed).map(|i| at + i);
            assert!(
                found.is_some(),
                "{page}: --{f} missing or out of --help's order"
            );
            at = found.unwrap_or(at);
        }
        for section in [
            "NAME",
            "SYNOPSIS",
            "DESCRIPTION",
            "OPTIONS",
            "EXAMPLES",
            "SEE ALSO",
        ] {
            assert!(
                roff.contains(&format!(".SH {}\n", section.replace(' ', "\\ ")))
                    || roff.contains(&format!(".SH \"{section}\"\n")),
                "{page}: no {section}"
            );
        }
    }
    let record = std::fs::read_to_string(man_dir.join("hrec-record.1")).expect("page");
    assert!(
        record.contains("perf\\-record"),
        "SEE ALSO names perf's page"
    );
    assert!(
        record.contains("hrec\\-report"),
        "SEE ALSO names the report page"
    );
    let top = std::fs::read_to_string(man_dir.join("hrec.1")).expect("page");
    assert!(top.contains("hrec\\-mem\\-record(1)") || top.contains("hrec\\-mem(1)"));

    if !has("man") {
        eprintln!("skipped: man not installed");
        return;
    }
    for page in PAGES {
        let path = man_dir.join(format!("{page}.1"));
        let o = Command::new("man")
            .arg("--warnings")
            .arg("-l")
            .arg(&path)
            .env("MANWIDTH", "80")
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("LC_ALL", "C.UTF-8")
            .output()
            .expect("run man");
        let (out, err) = text(&o);
        assert!(o.status.success(), "man -l {page}.1: {err}");
        assert!(err.trim().is_empty(), "man -l {page}.1 warns: {err}");
        for section in ["NAME", "SYNOPSIS", "OPTIONS", "EXAMPLES", "SEE ALSO"] {
            assert!(
                out.lines().any(|l| l == section),
                "{page}: no {section} in\n{out}"
            );
        }
        // Justified: the words, whatever the spaces between them.
        let name_line = out
            .lines()
            .skip_while(|l| *l != "NAME")
            .nth(1)
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            name_line.starts_with(&format!("{page} - ")),
            "{page}: {name_line}"
        );
    }
}

/// A bash that completes the words of `line` (the last one being completed) as bash does
/// for `complete -F`, with the generated script sourced; prints COMPREPLY one per line.
fn bash_complete(script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
        .collect();
    let program = format!(
        r#"source '{script}'
COMP_WORDS=({words})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
complete -p hrec >/dev/null || exit 3
_hrec hrec "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}""#,
        script = script.display(),
        words = quoted.join(" "),
    );
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_hrec"))
        .parent()
        .expect("bin dir");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .env("PATH", path)
        .env("HREC_SYSFS_ROOT", sysfs("alderlake"))
        .env("HREC_PERFMON_DIR", "/nonexistent-hrec-perfmon")
        .output()
        .expect("run bash");
    let (out, err) = text(&o);
    assert!(o.status.success(), "{words:?}: {err}");
    out.lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_commands_flags_and_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    generate(&[
        "generate",
        "completions",
        "bash",
        dir.path().to_str().expect("utf-8 path"),
    ]);
    let script = dir.path().join("hrec");
    let printed = generate(&["generate", "completions", "bash"]);
    assert_eq!(std::fs::read_to_string(&script).expect("script"), printed);
    assert!(
        !printed.contains("_init_completion"),
        "needs bash alone, not bash-completion"
    );

    assert_eq!(bash_complete(&script, &["hrec", "rec"]), ["record"]);
    assert_eq!(
        bash_complete(&script, &["hrec", "report", "--so"]),
        ["--sort"]
    );
    // Hidden commands and flags are not offered.
    assert!(bash_complete(&script, &["hrec", "g"]).is_empty());
    assert!(bash_complete(&script, &["hrec", "list", "--sysfs"]).is_empty());

    let events = bash_complete(&script, &["hrec", "record", "-e", "cpu_"]);
    assert!(
        events.contains(&"cpu_core/cpu-cycles/".to_string()),
        "{events:?}"
    );
    assert!(
        events.contains(&"cpu_atom/instructions/".to_string()),
        "{events:?}"
    );
    assert!(events.iter().all(|e| e.starts_with("cpu_")), "{events:?}");
    assert_eq!(
        bash_complete(&script, &["hrec", "stat", "--event", "task-c"]),
        ["task-clock"]
    );
    assert_eq!(
        bash_complete(&script, &["hrec", "top", "-e", "cycles,cpu_core/cpu-c"]),
        ["cycles,cpu_core/cpu-cycles/"]
    );
    assert_eq!(
        bash_complete(&script, &["hrec", "mem", "record", "-e", "cpu_core/mem-st"]),
        ["cpu_core/mem-stores/"]
    );
    assert_eq!(
        bash_complete(
            &script,
            &["hrec", "c2c", "record", "--event", "L1-dcache-l"]
        ),
        ["L1-dcache-load-misses", "L1-dcache-loads"]
    );
}

#[test]
fn zsh_and_fish_completions_are_scripts_of_their_shell() {
    for (shell, file, check) in [
        ("zsh", "_hrec", ["zsh", "-n"]),
        ("fish", "hrec.fish", ["fish", "--no-execute"]),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        generate(&[
            "generate",
            "completions",
            shell,
            dir.path().to_str().expect("utf-8 path"),
        ]);
        let path: PathBuf = dir.path().join(file);
        let script = std::fs::read_to_string(&path).expect("script");
        assert!(script.contains("list --raw-dump"), "{shell}: events");
        assert!(script.contains("record"), "{shell}");
        if !has(check[0]) {
            eprintln!("skipped: {shell} not installed, its script is not parsed");
            continue;
        }
        let o = Command::new(check[0])
            .arg(check[1])
            .arg(&path)
            .output()
            .expect("run shell");
        assert!(o.status.success(), "{shell}: {}", text(&o).1);
    }
}

/// perf's `--raw-dump` layout: every name followed by one space, one line, no newline.
#[test]
fn list_raw_dump_is_names_on_one_line() {
    let out = generate(&["list", "--raw-dump"]);
    assert!(out.ends_with(' ') && !out.contains('\n'), "{out:?}");
    let names: Vec<&str> = out.split(' ').filter(|n| !n.is_empty()).collect();
    assert_eq!(out.len(), names.iter().map(|n| n.len() + 1).sum::<usize>());
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "each name once");
    for n in [
        "cpu-cycles",
        "cycles",
        "task-clock",
        "cs",
        "L1-dcache-loads",
        "cpu_core/cpu-cycles/",
        "cpu_atom/cpu-cycles/",
    ] {
        assert!(names.contains(&n), "{n}: {out}");
    }
    assert!(!names.iter().any(|n| n.starts_with("rNNN")), "{out}");

    let sw = generate(&["list", "--raw-dump", "sw"]);
    assert_eq!(
        sw,
        "alignment-faults bpf-output cgroup-switches context-switches cs cpu-clock \
         cpu-migrations migrations dummy emulation-faults major-faults minor-faults \
         page-faults faults task-clock "
    );
    // The same names as perf 6.1's where perf runs (less its tool events, which hrec has
    // not), on this machine's /sys.
    let perf = Command::new("perf")
        .args(["list", "--raw-dump", "sw"])
        .output()
        .ok()
        .filter(|o| o.status.success());
    let Some(perf) = perf else {
        eprintln!("skipped: perf not installed, the names are not compared with perf's");
        return;
    };
    let host = Command::new(env!("CARGO_BIN_EXE_hrec"))
        .args(["list", "--raw-dump", "sw"])
        .env_remove("HREC_SYSFS_ROOT")
        .output()
        .expect("run hrec");
    let ours = text(&host).0;
    for name in text(&perf).0.split(' ').filter(|n| !n.is_empty()) {
        if ["duration_time", "user_time", "system_time"].contains(&name) {
            continue;
        }
        assert!(ours.split(' ').any(|n| n == name), "perf's {name}: {ours}");
    }
}
