//! `hrec archive` (issue 32): a recording reports the same from its archive, unpacked with
//! the real `tar` into a fresh directory, after its program was moved away:
//!
//! * an hrec recording of a C program whose DWARF is split into a debug file linked by
//!   `.gnu_debuglink`: `report --sort dso,sym` and `--sort sym,srcline` byte for byte, the
//!   default archive name and zstd;
//! * a perf.data of the same program recorded by perf, the binary taken from perf's own
//!   build-id cache and the debug file from a `--debug-dir` (both gone before the report),
//!   gzip: hrec's reports byte for byte, and perf's `--sort dso,sym` report reads the archive
//!   as its own cache (`perf --buildid-dir`);
//! * a file not found is one warning and the rest is packed; nothing to pack, a missing or
//!   corrupt recording, an archive that cannot be written and perf's `.tar.bz2` are one line
//!   each with exit status 1 (2 for the name).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hrec::symbol::buildid_cache::{self, hex, read_build_id};
use support::stacks::{build, run};

/// `hrec ARGS` in `dir` with `HOME` there, so the machine's `~/.debug` is never read.
fn hrec(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hrec"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("HREC_BUILDID_DIR")
        .env_remove("PERF_BUILDID_DIR")
        .env_remove("DEBUGINFOD_URLS")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `bin/work` in `dir`: the fixture program built `-O2 -g` with a build-id, its DWARF moved
/// into `bin/work.debug`, which a `.gnu_debuglink` names; `None` without gcc or objcopy.
fn split_program(dir: &Path) -> Option<PathBuf> {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let work = build(
        &bin,
        "recordings/root/tmp/hrec-fixture/work.c",
        &["-Wl,--build-id=sha1", "-pthread"],
    )?;
    let objcopy = |args: &[&str]| {
        Command::new("objcopy")
            .args(args)
            .current_dir(&bin)
            .status()
            .is_ok_and(|s| s.success())
    };
    if !objcopy(&["--only-keep-debug", "work", "work.debug"])
        || !objcopy(&["--strip-debug", "--add-gnu-debuglink=work.debug", "work"])
    {
        eprintln!("skipped: objcopy could not split the debug file");
        return None;
    }
    Some(work)
}

/// `report --stdio` of `input` by `dso,sym` and by `sym,srcline`, with `extra` flags.
fn reports(dir: &Path, input: &str, extra: &[&str]) -> [String; 2] {
    ["dso,sym", "sym,srcline"].map(|sort| {
        let mut args = vec!["report", "--stdio", "-i", input, "--sort", sort];
        args.extend_from_slice(extra);
        stdout(&hrec(dir, &args))
    })
}

/// The archive's names, as `tar tf` lists them.
fn listed(dir: &Path, archive: &str) -> Vec<String> {
    run(dir, "tar", &["tf", archive])
        .lines()
        .map(|l| l.trim_end_matches('/').to_string())
        .collect()
}

/// `tar xf ARCHIVE -C DIR/NAME` into a new directory; returns it.
fn unpack(dir: &Path, archive: &str, name: &str) -> PathBuf {
    let into = dir.join(name);
    std::fs::create_dir(&into).unwrap();
    run(dir, "tar", &["xf", archive, "-C", into.to_str().unwrap()]);
    into
}

/// perf's cache names for `file` (real path, build-id): `<path>/<hex>` and `.build-id/xx/rest`.
fn cache_names(file: &Path) -> (String, String) {
    let hex = hex(&read_build_id(file).unwrap());
    let real = std::fs::canonicalize(file).unwrap();
    let entry = buildid_cache::entry_dir(&real, &hex);
    let link = buildid_cache::link_path(&hex).unwrap();
    (
        entry.to_string_lossy().into_owned(),
        link.to_string_lossy().into_owned(),
    )
}

#[test]
fn hrec_recording_reports_the_same_from_its_archive() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(work) = split_program(d) else { return };
    let (entry, link) = cache_names(&work);
    let rec = hrec(
        d,
        &[
            "record",
            "-q",
            "-F",
            "2000",
            "-e",
            "cpu-clock",
            "-o",
            "h.data",
            "--",
            "bin/work",
            "3000000",
        ],
    );
    stdout(&rec);
    let before = reports(d, "h.data", &[]);
    assert!(before[0].contains("[.] hot"), "{}", before[0]);
    assert!(
        before[1].contains("work.c:"),
        "lines from the debug file: {}",
        before[1]
    );

    // perf archive's way: the recording as the one argument, the archive beside it.
    let out = stdout(&hrec(d, &["archive", "h.data"]));
    assert!(
        out.contains("tar xf h.data.tar.zst -C ~/.debug") && out.contains("--buildid-dir DIR"),
        "{out}"
    );
    let names = listed(d, "h.data.tar.zst");
    for want in [format!("{entry}/elf"), format!("{entry}/debug"), link] {
        assert!(names.contains(&want), "{want} not in {names:?}");
    }

    std::fs::rename(d.join("bin"), d.join("moved")).unwrap();
    let gone = reports(d, "h.data", &[]);
    assert!(!gone[0].contains("[.] hot"), "moved away: {}", gone[0]);
    let fresh = unpack(d, "h.data.tar.zst", "fresh");
    let after = reports(d, "h.data", &["--buildid-dir", fresh.to_str().unwrap()]);
    assert_eq!(after[0], before[0], "--sort dso,sym from the archive");
    assert_eq!(after[1], before[1], "--sort sym,srcline from the archive");

    // Archived again without the program: one warning for it, the libraries still packed.
    let o = hrec(d, &["archive", "-i", "h.data", "-o", "again.tar"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let real = std::fs::canonicalize(d).unwrap().join("bin/work");
    let hex = hex(&read_build_id(&d.join("moved/work")).unwrap());
    assert_eq!(
        err.trim_end(),
        format!(
            "hrec: warning: {} (build-id {hex}): not found on this machine or in the build-id cache, left out",
            real.display()
        )
    );
    assert!(listed(d, "again.tar").iter().any(|n| n.ends_with("/elf")));
}

#[test]
fn perf_data_reports_the_same_from_hrecs_archive() {
    let Some(perf) = support::perf() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(work) = split_program(d) else { return };
    let rec = Command::new(perf)
        .args([
            "record",
            "-q",
            "-N",
            "-F",
            "2000",
            "-e",
            "cpu-clock",
            "-o",
            "p.data",
        ])
        .args(["--", "bin/work", "3000000"])
        .current_dir(d)
        .env("HOME", d)
        .output()
        .unwrap();
    if !rec.status.success() {
        eprintln!(
            "skipped: perf record refused (perf_event_paranoid?): {}",
            String::from_utf8_lossy(&rec.stderr).trim()
        );
        return;
    }
    let perf_report = |extra: &[&str]| {
        let mut args = extra.to_vec();
        args.extend(["report", "-i", "p.data", "--stdio", "--sort", "dso,sym"]);
        let o = Command::new(perf)
            .args(&args)
            .current_dir(d)
            .env("HOME", d)
            .output()
            .unwrap();
        // perf's random tip is the one line that differs between two runs.
        stdout(&o)
            .lines()
            .filter(|l| !l.starts_with("# (Tip:"))
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    };
    let before = reports(d, "p.data", &[]);
    assert!(before[0].contains("[.] hot"), "{}", before[0]);
    assert!(before[1].contains("work.c:"), "{}", before[1]);
    let perf_before = perf_report(&[]);
    assert!(perf_before.contains("[.] hot"), "{perf_before}");

    // The binary from perf's own cache, the debug file from a debug directory by build-id.
    let pcache = d.join("perf-cache");
    let w = work.to_str().unwrap();
    run(
        d,
        perf,
        &[
            "--buildid-dir",
            pcache.to_str().unwrap(),
            "buildid-cache",
            "--add",
            w,
        ],
    );
    let hex = hex(&read_build_id(&work).unwrap());
    let by_id = d
        .join("dbg/.build-id")
        .join(&hex[..2])
        .join(format!("{}.debug", &hex[2..]));
    std::fs::create_dir_all(by_id.parent().unwrap()).unwrap();
    std::fs::copy(d.join("bin/work.debug"), &by_id).unwrap();
    std::fs::rename(d.join("bin"), d.join("moved")).unwrap();
    let out = stdout(&hrec(
        d,
        &[
            "archive",
            "-i",
            "p.data",
            "-o",
            "p.tar.gz",
            "--buildid-dir",
            pcache.to_str().unwrap(),
            "--debug-dir",
            d.join("dbg").to_str().unwrap(),
        ],
    ));
    assert!(out.contains("tar xf p.tar.gz -C ~/.debug"), "{out}");
    std::fs::remove_dir_all(d.join("dbg")).unwrap();
    std::fs::remove_dir_all(&pcache).unwrap();

    let fresh = unpack(d, "p.tar.gz", "fresh");
    let f = fresh.to_str().unwrap();
    let after = reports(d, "p.data", &["--buildid-dir", f]);
    assert_eq!(after[0], before[0], "--sort dso,sym from the archive");
    assert_eq!(after[1], before[1], "--sort sym,srcline from the archive");
    assert_eq!(
        perf_report(&["--buildid-dir", f]),
        perf_before,
        "perf reads the archive as its cache"
    );
}

/// One line each, `hrec: ...`, and the status.
fn fails(dir: &Path, args: &[&str], code: i32, want: &str) {
    let o = hrec(dir, args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(
        err.starts_with("hrec: ") && err.contains(want),
        "{args:?}: {err}"
    );
}

#[test]
fn each_failure_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("notes.txt"), "not a recording\n").unwrap();
    fails(d, &["archive", "-i", "missing.data"], 1, "missing.data");
    fails(d, &["archive", "-i", "notes.txt"], 1, "error:");
    fails(
        d,
        &["archive", "-i", "notes.txt", "-o", "x.tar.bz2"],
        2,
        ".tar.zst",
    );
    // A recording without a build-ids block (-B) needs nothing.
    stdout(&hrec(
        d,
        &["record", "-q", "-B", "-o", "nb.data", "--", "true"],
    ));
    fails(d, &["archive", "nb.data"], 1, "nothing to archive");
    assert!(!d.join("nb.data.tar.zst").exists());
    stdout(&hrec(d, &["record", "-q", "-o", "t.data", "--", "true"]));
    fails(
        d,
        &["archive", "t.data", "-o", "no/such/dir/t.tar.zst"],
        1,
        "cannot write no/such/dir/t.tar.zst",
    );
    fails(
        d,
        &["archive", "t.data", "-o", "t.data"],
        2,
        "the recording",
    );
    assert!(hrec(d, &["info", "-i", "t.data"]).status.success());
    let o = stdout(&hrec(d, &["archive", "t.data", "-o", "t.tar"]));
    assert!(o.contains("archived in t.tar"), "{o}");
}
