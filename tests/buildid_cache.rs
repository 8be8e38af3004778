//! `hrec buildid-cache` (issue 32) in perf's layout, checked against perf 6.1 itself:
//!
//! * add, list, remove and purge in a cache directory of their own, and one line for each
//!   error (missing file, not ELF, no build-id, a cache that cannot be written);
//! * perf lists what hrec added exactly as hrec does (`perf --buildid-dir DIR buildid-cache
//!   --list`);
//! * hrec reads what perf added: a perf recording of a C program that was moved away after
//!   the program was cached by perf is named from the cache by `hrec report --buildid-dir`
//!   (and by `HREC_BUILDID_DIR`), and not without it.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use support::stacks::{build, run};

/// `hrec ARGS` in `dir` with `HOME` there, so the machine's `~/.debug` is never read.
fn hrec(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hrec"));
    c.args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("HREC_BUILDID_DIR")
        .env_remove("PERF_BUILDID_DIR");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn sorted_lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(str::to_owned).collect();
    v.sort();
    v
}

/// A C program with a build-id (gcc's default) at `dir/work`, else `None` without gcc.
fn program(dir: &Path) -> Option<std::path::PathBuf> {
    build(
        dir,
        "recordings/root/tmp/hrec-fixture/work.c",
        &["-Wl,--build-id=sha1", "-pthread"],
    )
}

#[test]
fn add_list_remove_purge_in_perfs_layout() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(work) = program(d) else { return };
    let cache = d.join("cache");
    let c = cache.to_str().unwrap();
    let w = work.to_str().unwrap();
    let id = hrec::symbol::buildid_cache::read_build_id(&work).unwrap();
    let hex = hrec::symbol::buildid_cache::hex(&id);
    let real = std::fs::canonicalize(&work).unwrap();

    stdout(&hrec(
        d,
        &["buildid-cache", "--buildid-dir", c, "--add", w],
        &[],
    ));
    let elf = cache
        .join(real.strip_prefix("/").unwrap())
        .join(&hex)
        .join("elf");
    assert_eq!(std::fs::read(&elf).unwrap(), std::fs::read(&work).unwrap());
    let link = cache.join(".build-id").join(&hex[..2]).join(&hex[2..]);
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("../..")
            .join(real.strip_prefix("/").unwrap())
            .join(&hex),
        "the link perf writes"
    );
    // A second file, by HREC_BUILDID_DIR this time.
    let other = d.join("true-copy");
    std::fs::copy("/bin/true", &other).unwrap();
    stdout(&hrec(
        d,
        &["buildid-cache", "-a", other.to_str().unwrap()],
        &[("HREC_BUILDID_DIR", &cache)],
    ));
    let listed = stdout(&hrec(
        d,
        &["buildid-cache", "--buildid-dir", c, "--list"],
        &[],
    ));
    assert!(
        listed.contains(&format!("{hex} {}\n", real.display())),
        "{listed}"
    );
    assert_eq!(listed.lines().count(), 2, "{listed}");
    if let Some(perf) = support::perf() {
        let theirs = run(d, perf, &["--buildid-dir", c, "buildid-cache", "--list"]);
        assert_eq!(sorted_lines(&theirs), sorted_lines(&listed), "perf's list");
    }

    // --remove by the file's build-id; then --purge of the path, with two builds cached.
    stdout(&hrec(
        d,
        &["buildid-cache", "--buildid-dir", c, "-r", w],
        &[],
    ));
    let listed = stdout(&hrec(d, &["buildid-cache", "--buildid-dir", c, "-l"], &[]));
    assert!(!listed.contains(&hex), "{listed}");
    assert!(!elf.exists() && std::fs::symlink_metadata(&link).is_err());
    stdout(&hrec(
        d,
        &["buildid-cache", "--buildid-dir", c, "-a", w],
        &[],
    ));
    program_rebuilt(d, &work);
    stdout(&hrec(
        d,
        &["buildid-cache", "--buildid-dir", c, "-a", w],
        &[],
    ));
    let listed = stdout(&hrec(
        d,
        &["buildid-cache", "--buildid-dir", c, "-l", "--all"],
        &[],
    ));
    assert_eq!(
        listed.matches(&format!(" {}\n", real.display())).count(),
        2,
        "{listed}"
    );
    std::fs::remove_file(&work).unwrap();
    stdout(&hrec(
        d,
        &["buildid-cache", "--buildid-dir", c, "-p", w],
        &[],
    ));
    let listed = stdout(&hrec(d, &["buildid-cache", "--buildid-dir", c, "-l"], &[]));
    assert_eq!(listed.lines().count(), 1, "only the other file: {listed}");
    assert!(listed.ends_with(" true-copy\n") || listed.contains("true-copy"));
}

/// Rebuilds `work` with another build-id (a different optimisation level).
fn program_rebuilt(dir: &Path, work: &Path) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recordings/root/tmp/hrec-fixture/work.c");
    run(
        dir,
        "gcc",
        &[
            "-O0",
            "-pthread",
            "-o",
            work.to_str().unwrap(),
            src.to_str().unwrap(),
        ],
    );
}

#[test]
fn each_error_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cache = d.join("cache");
    let c = cache.to_str().unwrap();
    let text = d.join("notes.txt");
    std::fs::write(&text, "not a program\n").unwrap();
    let mut cases = vec![
        (d.join("missing"), "No such file"),
        (text.clone(), "not an ELF file"),
    ];
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recordings/root/tmp/hrec-fixture/work.c");
    let bare = d.join("bare");
    let built = Command::new("gcc")
        .args(["-O1", "-pthread", "-Wl,--build-id=none", "-o"])
        .arg(&bare)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if built {
        cases.push((bare, "no build-id"));
    }
    for (file, want) in cases {
        let o = hrec(
            d,
            &[
                "buildid-cache",
                "--buildid-dir",
                c,
                "--add",
                file.to_str().unwrap(),
            ],
            &[],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{file:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(want) && err.contains(file.to_str().unwrap()),
            "{err}"
        );
    }
    // A cache "directory" that is a file cannot be written (root may write anywhere else).
    let o = hrec(
        d,
        &[
            "buildid-cache",
            "--buildid-dir",
            text.to_str().unwrap(),
            "-a",
            "/bin/true",
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("build-id cache"), "{err}");
}

#[test]
fn report_names_a_moved_binary_from_the_cache_perf_wrote() {
    let Some(perf) = support::perf() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(work) = program(d) else { return };
    let cache = d.join("perf-cache");
    let c = cache.to_str().unwrap();
    let w = work.to_str().unwrap();
    // perf's own cache (--no-buildid-cache keeps its record from writing anywhere else).
    run(
        d,
        perf,
        &[
            "record",
            "-q",
            "-F",
            "2000",
            "-e",
            "cpu-clock",
            "-N",
            "-o",
            "p.data",
            "--",
            w,
            "3000000",
        ],
    );
    run(d, perf, &["--buildid-dir", c, "buildid-cache", "--add", w]);
    std::fs::rename(&work, d.join("moved")).unwrap();

    let report = |args: &[&str], env: &[(&str, &Path)]| {
        let mut a = vec!["report", "--stdio", "--sort", "sym", "-i", "p.data"];
        a.extend_from_slice(args);
        stdout(&hrec(d, &a, env))
    };
    let without = report(&[], &[]);
    assert!(!without.contains("hot"), "no cache, no names:\n{without}");
    let with = report(&["--buildid-dir", c], &[]);
    assert!(with.contains("hot") && with.contains("warm"), "{with}");
    let by_env = report(&[], &[("HREC_BUILDID_DIR", &cache)]);
    assert!(by_env.contains("hot"), "{by_env}");
    // hrec lists perf's cache as perf does: nothing, since perf lists only files still at
    // their path with that build-id; `--all` lists the moved one too.
    let theirs = run(d, perf, &["--buildid-dir", c, "buildid-cache", "--list"]);
    let ours = stdout(&hrec(d, &["buildid-cache", "--buildid-dir", c, "-l"], &[]));
    assert_eq!(sorted_lines(&ours), sorted_lines(&theirs));
    let all = stdout(&hrec(
        d,
        &["buildid-cache", "--buildid-dir", c, "-l", "--all"],
        &[],
    ));
    let real = std::fs::canonicalize(d).unwrap().join("work");
    assert!(all.ends_with(&format!(" {}\n", real.display())), "{all}");
}
