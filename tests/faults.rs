//! Faults while recording and reading, each made for real on this machine: a file-size limit
//! (`ulimit -f`), a full tmpfs, an unwritable directory, symlinks at the output, too few file
//! descriptors (`ulimit -n`), `perf_event_paranoid` as an unprivileged user, signals to hrec
//! and a workload that ignores them or crashes, a fork storm at the highest frequency, and
//! binaries rebuilt, removed, unreadable or huge since the recording. Where the machine cannot
//! make the condition (not root, no `setpriv`, no tmpfs), the test says why it is skipped.
//! `docs/reliability.md` lists each case with what hrec and perf 6.1 print.

mod support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::privilege::{command_as, is_root, open_tempdir, unprivileged};
use support::{await_cond, hrec_in, text};

const HREC: &str = env!("CARGO_BIN_EXE_hrec");

/// A shell loop of `n` iterations: a workload that runs a second or so without any binary of
/// this repository.
fn busy(n: u32) -> String {
    format!("i=0; while [ $i -lt {n} ]; do i=$((i+1)); done")
}

/// `sh -c SCRIPT` in `dir`, with `$HREC` the hrec binary.
fn sh_in(dir: &Path, script: &str) -> Output {
    Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .env("HREC", HREC)
        .env_remove("HREC_SYSFS_ROOT")
        .env_remove("HREC_PROCFS_ROOT")
        .output()
        .expect("run sh")
}

/// `hrec record ARGS` in `dir`, running in the background with stderr piped.
fn spawn_hrec(dir: &Path, args: &[&str]) -> Child {
    // hrec starts with the signals it forwards at their defaults, whatever this test was
    // started with (`nohup` ignores SIGHUP, a script's `cmd &` SIGINT): an ignored SIGHUP is
    // inherited by the workload, which then outlives a forwarded one. `env` execs hrec, so
    // the child's pid is hrec's.
    Command::new("env")
        .args(["--default-signal=HUP,INT,TERM", HREC])
        .args(args)
        .current_dir(dir)
        .env_remove("HREC_SYSFS_ROOT")
        .env_remove("HREC_PROCFS_ROOT")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hrec")
}

/// `hrec info -i FILE`: its text, after checking it read the file.
fn info(dir: &Path, file: &str) -> String {
    let o = hrec_in(dir, &["info", "-i", file]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "info {file}: {err}");
    out
}

/// The sample count `hrec info` reads from the file.
fn info_samples(info: &str) -> u64 {
    info.lines()
        .find_map(|l| l.strip_prefix("# samples : "))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no sample count in:\n{info}"))
}

/// The number in `text` right after `key`.
fn number_after(text: &str, key: &str) -> u64 {
    let at = text
        .find(key)
        .unwrap_or_else(|| panic!("{key:?} in {text}"))
        + key.len();
    text[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("number after {key:?} in {text}"))
}

/// The `hrec: error:` lines of stderr.
fn error_lines(err: &str) -> Vec<&str> {
    err.lines()
        .filter(|l| l.starts_with("hrec: error:"))
        .collect()
}

/// Checks the outcome of a recording cut by a write error: exit 1, one error line naming the
/// cause and the samples kept, the workload ran to its end, and the file reads back with
/// exactly the samples said to be kept.
fn assert_cut_short(
    dir: &Path,
    file: &str,
    (code, out, err): (Option<i32>, &str, &str),
    cause: &str,
) {
    assert_eq!(code, Some(1), "{err}");
    assert!(
        out.contains("workload-done"),
        "the workload did not finish: {out}\n{err}"
    );
    let errors = error_lines(err);
    assert_eq!(errors.len(), 1, "{err}");
    let line = errors[0];
    assert!(line.contains(cause), "{line}");
    assert!(
        line.contains("the file is readable up to its last complete block"),
        "{line}"
    );
    let kept = number_after(line, &format!("stopped writing {file} after "));
    assert!(kept > 0, "{line}");
    // No summary line: the recording did not finish.
    assert!(!err.contains("[ hrec record:"), "{err}");
    let info = info(dir, file);
    assert!(info.contains("# TRUNCATED"), "{info}");
    assert_eq!(info_samples(&info), kept, "{info}\n{line}");
    let report = hrec_in(dir, &["report", "-i", file]);
    let (rout, rerr) = text(&report);
    assert!(report.status.success(), "{rerr}");
    assert!(
        rout.contains(&format!("({kept} samples, TRUNCATED")),
        "{rout}"
    );
}

/// Records into `file` (after `setup`, a shell command) with user stack copies kept raw
/// (`--call-graph dwarf,raw`: kilobytes a sample, so any limit is soon reached) while the
/// workload runs until hrec says it stopped writing (a warning at once, on its stderr, kept
/// in `err.txt`); then `echo workload-done`. Returns the exit status, output and errors.
fn record_until_writing_stops(
    dir: &Path,
    setup: &str,
    file: &str,
) -> (Option<i32>, String, String) {
    let o = sh_in(
        dir,
        &format!(
            "{setup}; exec \"$HREC\" record -F 20000 --call-graph dwarf,raw -o {file} -- sh -c 'until grep -q \"nothing more is written\" err.txt; do {}; done; echo workload-done' 2> err.txt",
            busy(20_000)
        ),
    );
    let err = std::fs::read_to_string(dir.join("err.txt")).unwrap();
    (o.status.code(), text(&o).0, err)
}

/// `ulimit -f` (SIGXFSZ at its default: hrec ignores it, so the write fails with EFBIG): the
/// blocks written before stay readable, hrec says at once that it stopped writing, the error
/// at the end says how many samples the blocks hold, and the workload runs to its end.
#[test]
fn a_file_size_limit_keeps_the_blocks_written_and_the_workload_finishes() {
    let dir = tempfile::tempdir().unwrap();
    // 4096 blocks of 512 bytes (2 MiB): the header and a first block of records (a batch
    // is handed over at 128 KiB, or what one pass drains) fit whatever the machine's speed.
    let (code, out, err) = record_until_writing_stops(dir.path(), "ulimit -f 4096", "fs.hrec");
    assert_cut_short(
        dir.path(),
        "fs.hrec",
        (code, &out, &err),
        "File too large (os error 27)",
    );
    assert!(err.contains("hrec: warning: cannot write"), "{err}");
    assert!(std::fs::metadata(dir.path().join("fs.hrec")).unwrap().len() <= 4096 * 512);
}

/// Unmounts a tmpfs when dropped.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A tmpfs of `size` at `dir/small`, unmounted when dropped; `None` (after saying why) where
/// it cannot be mounted.
fn small_tmpfs(dir: &Path, size: &str) -> Option<Mounted> {
    if !is_root() {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return None;
    }
    let mnt = dir.join("small");
    std::fs::create_dir(&mnt).unwrap();
    let m = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(&mnt)
        .output()
        .expect("run mount");
    if !m.status.success() {
        eprintln!(
            "skipped: cannot mount a tmpfs here: {}",
            String::from_utf8_lossy(&m.stderr).trim()
        );
        return None;
    }
    Some(Mounted(mnt))
}

/// A disk too full for even the file's header: one line, no empty file left, and the previous
/// recording is where it was (not renamed `.old` for a recording that never started).
#[test]
fn a_disk_too_full_for_the_header_keeps_the_previous_recording() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mounted) = small_tmpfs(dir.path(), "8k") else {
        return;
    };
    std::fs::write(mounted.0.join("x.hrec"), b"previous").unwrap();
    // Fill what is left.
    let _ = std::fs::write(mounted.0.join("fill"), vec![0u8; 8192]);
    let o = hrec_in(
        dir.path(),
        &["record", "-o", "small/x.hrec", "--", "sh", "-c", "exit 0"],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(
        error_lines(&err),
        ["hrec: error: cannot write to small/x.hrec: No space left on device (os error 28)"],
        "{err}"
    );
    assert_eq!(
        std::fs::read(mounted.0.join("x.hrec")).unwrap(),
        b"previous"
    );
    assert!(!mounted.0.join("x.hrec.old").exists());
}

/// A full disk (a 2 MiB tmpfs, where this test may mount one): as with the size limit.
#[test]
fn a_full_disk_keeps_the_blocks_written_and_the_workload_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let Some(_mounted) = small_tmpfs(dir.path(), "2m") else {
        return;
    };
    let (code, out, err) = record_until_writing_stops(dir.path(), "true", "small/full.hrec");
    assert_cut_short(
        dir.path(),
        "small/full.hrec",
        (code, &out, &err),
        "No space left on device (os error 28)",
    );
}

/// An output directory hrec may not write in: one line before the workload runs (it would
/// otherwise run unrecorded), and no file.
#[test]
fn an_unwritable_directory_is_one_error_before_the_workload_runs() {
    let Some(prefix) = unprivileged("an unwritable directory (root writes anywhere)") else {
        return;
    };
    let dir = open_tempdir();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let ran = dir.path().join("ran");
    let script = format!("touch {}", ran.display());
    let o = command_as(&prefix, HREC)
        .args(["record", "-o", "ro/x.hrec", "--", "sh", "-c", &script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(
        error_lines(&err),
        ["hrec: error: cannot create ro/x.hrec: Permission denied (os error 13)"],
        "{err}"
    );
    assert!(!ran.exists(), "the workload ran");
    assert_eq!(std::fs::read_dir(&ro).unwrap().count(), 0);
}

/// A symlink at the output path is moved aside as `.old` (as perf moves an existing file) and
/// never written through: not to the file it points to, not to a dangling target. The new
/// file is a regular file with mode 0600 whatever the umask.
#[test]
fn symlinks_at_the_output_are_moved_aside_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("victim"), b"precious").unwrap();
    std::os::unix::fs::symlink("victim", d.join("link.hrec")).unwrap();
    std::os::unix::fs::symlink(d.join("nowhere"), d.join("dangling.hrec")).unwrap();
    for file in ["link.hrec", "dangling.hrec"] {
        let o = sh_in(
            d,
            &format!("umask 000; exec \"$HREC\" record -q -o {file} -- sh -c 'exit 0'"),
        );
        assert!(o.status.success(), "{file}: {}", text(&o).1);
        let new = std::fs::symlink_metadata(d.join(file)).unwrap();
        assert!(new.file_type().is_file(), "{file} is not a regular file");
        assert_eq!(new.mode() & 0o777, 0o600, "{file}");
        let old = d.join(format!("{file}.old"));
        assert!(
            std::fs::symlink_metadata(&old)
                .unwrap()
                .file_type()
                .is_symlink(),
            "{file}.old is not the old symlink"
        );
        assert!(info(d, file).contains("# complete"));
    }
    assert_eq!(std::fs::read(d.join("victim")).unwrap(), b"precious");
    assert!(
        !d.join("nowhere").exists(),
        "wrote through a dangling symlink"
    );
}

/// `ulimit -n 6`: one line with the cause once, how many descriptors are needed and how to
/// raise the limit; with the limit raised to that number, the same recording works.
#[test]
fn too_many_open_files_says_how_many_and_how_to_raise_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let record = "\"$HREC\" record -e cpu-clock,task-clock -o n.hrec -- sh -c 'exit 0'";
    let o = sh_in(dir.path(), &format!("ulimit -n 6; exec {record}"));
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let errors = error_lines(&err);
    assert_eq!(errors.len(), 1, "{err}");
    let line = errors[0];
    assert!(line.contains("too many open files"), "{line}");
    assert!(line.contains("the limit is 6"), "{line}");
    assert!(
        !line.contains("os error 24): Too many open files"),
        "{line}"
    );
    let needed = number_after(line, "recording needs about ");
    assert!(
        line.contains(&format!("raise it with ulimit -n {needed} ")),
        "{line}"
    );
    assert!(!dir.path().join("n.hrec").exists());
    // The number is enough.
    let o = sh_in(dir.path(), &format!("ulimit -n {needed}; exec {record}"));
    assert!(o.status.success(), "ulimit -n {needed}: {}", text(&o).1);
    assert!(info(dir.path(), "n.hrec").contains("# complete"));
}

/// True when process `pid` belongs to another user than the one [`unprivileged`] runs hrec
/// as (this test's user, or nobody under root).
fn owned_by_another_user(pid: u32) -> bool {
    let runner = if is_root() {
        Some(65534)
    } else {
        std::fs::metadata("/proc/self").map(|m| m.uid()).ok()
    };
    let theirs = std::fs::metadata(format!("/proc/{pid}"))
        .map(|m| m.uid())
        .ok();
    theirs.is_some() && theirs != runner
}

fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `perf_event_paranoid` as an unprivileged user, at whatever level this machine has (the
/// test does not change it): what is refused names the sysctl, and what is allowed (user
/// space of one's own processes) still records.
#[test]
fn paranoid_refusals_name_the_sysctl_and_user_space_still_records() {
    let Some(level) = paranoid() else {
        eprintln!("skipped: no /proc/sys/kernel/perf_event_paranoid");
        return;
    };
    if level < 1 {
        eprintln!(
            "skipped: perf_event_paranoid is {level}: an unprivileged user is refused nothing to test"
        );
        return;
    }
    let Some(prefix) = unprivileged("perf_event_paranoid") else {
        return;
    };
    let dir = open_tempdir();
    let run = |args: &[&str]| -> Output {
        command_as(&prefix, HREC)
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let sysctl = format!("kernel.perf_event_paranoid={level}");
    // Whole CPUs: refused from level 1.
    let o = run(&["record", "-a", "-o", "a.hrec", "--", "sh", "-c", "exit 0"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let errors = error_lines(&err);
    assert_eq!(errors.len(), 1, "{err}");
    assert!(errors[0].contains(&sysctl), "{err}");
    assert!(
        errors[0].contains("sysctl -w kernel.perf_event_paranoid="),
        "{err}"
    );
    // ... and says what still works.
    assert!(
        errors[0].contains("or record a command or your own processes (-p PID) instead"),
        "{err}"
    );
    assert!(!dir.path().join("a.hrec").exists());
    // Another user's process (init's), whatever the level: one line naming the rule.
    if owned_by_another_user(1) {
        let o = run(&[
            "record", "-p", "1", "-o", "p1.hrec", "--", "sh", "-c", "exit 0",
        ]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(
            error_lines(&err),
            [format!(
                "hrec: error: permission denied recording cpu-clock on task 1: without root only your own processes can be recorded ({sysctl}); run as root or as the process's user"
            )],
            "{err}"
        );
    }
    // One's own workload.
    let script = busy(200_000);
    let o = run(&["record", "-o", "u.hrec", "--", "sh", "-c", &script]);
    let (_, err) = text(&o);
    if level >= 3 {
        // Debian's level 3: nothing at all without CAP_PERFMON.
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(error_lines(&err)[0].contains(&sysctl), "{err}");
        return;
    }
    assert!(o.status.success(), "{err}");
    if level >= 2 {
        assert!(
            err.contains(&format!(
                "hrec: {sysctl} does not allow kernel profiling: recording user space only"
            )),
            "{err}"
        );
    }
    let info = info(dir.path(), "u.hrec");
    assert!(info_samples(&info) > 0, "{info}");
    if level >= 2 {
        // A kernel-only event cannot fall back to user space: refused, with what to do.
        let o = run(&[
            "record",
            "-e",
            "cpu-clock:k",
            "-o",
            "k.hrec",
            "--",
            "sh",
            "-c",
            "exit 0",
        ]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(
            error_lines(&err),
            [format!(
                "hrec: error: {sysctl} does not allow kernel profiling, and cpu-clock:k counts only the kernel; run as root, or sysctl -w kernel.perf_event_paranoid=1, or count user space (cpu-clock:u)"
            )],
            "{err}"
        );
    }
    // One's own running process (-p), user space.
    let o = command_as(&prefix, "sh")
        .args([
            "-c",
            &format!(
                "sh -c '{script}; {script}; {script}' & pid=$!; \"$HREC\" record -p $pid -o own.hrec -- sleep 0.3; rc=$?; kill $pid; exit $rc"
            ),
        ])
        .env("HREC", HREC)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(info_samples(&self::info(dir.path(), "own.hrec")) > 0);
    // `:u` asks for user space only: no fallback to announce.
    let o = run(&[
        "record",
        "-e",
        "cpu-clock:u",
        "-o",
        "uu.hrec",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("does not allow kernel profiling"), "{err}");
    assert!(info_samples(&self::info(dir.path(), "uu.hrec")) > 0);
}

/// The pid a workload wrote to `ready` once it runs (and has set up its traps).
fn ready_pid(dir: &Path) -> i32 {
    let ready = dir.join("ready");
    let mut pid = None;
    await_cond("the workload to start", 30, || {
        pid = std::fs::read_to_string(&ready)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        pid.is_some()
    });
    pid.unwrap()
}

/// Sends `sig` to hrec once its workload runs; returns hrec's output and the workload's pid.
fn signal_recording(dir: &Path, traps: &str, sig: &str) -> (Output, i32) {
    let script = format!("{traps} echo $$ > ready.tmp; mv ready.tmp ready; while :; do :; done");
    let child = spawn_hrec(dir, &["record", "-o", "s.hrec", "--", "sh", "-c", &script]);
    let pid = ready_pid(dir);
    let hrec = child.id().to_string();
    assert!(
        Command::new("kill")
            .args([&format!("-{sig}"), &hrec])
            .status()
            .unwrap()
            .success()
    );
    (child.wait_with_output().unwrap(), pid)
}

/// The file of a signalled recording is complete, with samples, and its workload is gone
/// (reaped by hrec, not left running).
fn assert_complete_and_gone(dir: &Path, pid: i32, err: &str) {
    let info = info(dir, "s.hrec");
    assert!(info.contains("# complete"), "{info}");
    let n = info_samples(&info);
    assert!(n > 0, "{info}");
    assert!(err.contains(&format!("({n} samples")), "{err}");
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the workload {pid} is still there"
    );
}

/// SIGTERM and SIGHUP to hrec are forwarded to the workload, which dies of them; the file is
/// complete and hrec exits as the workload did.
#[test]
fn sigterm_and_sighup_are_forwarded_and_the_file_is_complete() {
    for (sig, num) in [("TERM", 15), ("HUP", 1)] {
        let dir = tempfile::tempdir().unwrap();
        let (o, pid) = signal_recording(dir.path(), "", sig);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(128 + num), "SIG{sig}: {err}");
        assert!(!err.contains("warning: the workload"), "{err}");
        assert_complete_and_gone(dir.path(), pid, &err);
    }
}

/// hrec catches SIGHUP (to end the recording cleanly and forward it), unless it was started
/// with SIGHUP ignored (`nohup hrec record ...`): then it leaves it ignored, as perf does, so a
/// hangup neither ends the recording nor reaches the workload. The workload reads hrec's
/// dispositions from `/proc/<hrec>/status` (`SigCgt`, `SigIgn`) while hrec records.
#[test]
fn sighup_ignored_at_start_stays_ignored() {
    for ignored in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        // The workload's parent is hrec.
        let workload = "grep -E '^Sig(Cgt|Ign):' /proc/$PPID/status > sig";
        let trap = if ignored { "trap '' HUP; " } else { "" };
        let o = Command::new("env")
            .args(["--default-signal=HUP,INT,TERM", "sh", "-c"])
            .arg(format!(
                "{trap}exec \"$0\" record -q -e cpu-clock -o s.hrec -- sh -c \"$1\""
            ))
            .args([HREC, workload])
            .current_dir(dir.path())
            .env_remove("HREC_SYSFS_ROOT")
            .env_remove("HREC_PROCFS_ROOT")
            .output()
            .unwrap();
        let (_, err) = text(&o);
        assert!(o.status.success(), "{err}");
        let sig = std::fs::read_to_string(dir.path().join("sig")).unwrap();
        let mask = |key: &str| -> u64 {
            sig.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
                .unwrap_or_else(|| panic!("no {key} in {sig}"))
        };
        // Bit N-1 is signal N: SIGHUP 1, SIGINT 2, SIGTERM 15.
        let hup = 1;
        assert_eq!(
            mask("SigIgn:") & hup != 0,
            ignored,
            "ignored={ignored}: {sig}"
        );
        assert_eq!(
            mask("SigCgt:") & hup != 0,
            !ignored,
            "ignored={ignored}: {sig}"
        );
        // SIGINT and SIGTERM are caught either way.
        assert_eq!(
            mask("SigCgt:") & (1 << 1 | 1 << 14),
            1 << 1 | 1 << 14,
            "{sig}"
        );
        assert!(info(dir.path(), "s.hrec").contains("# complete"));
    }
}

/// A workload that ignores SIGINT gets SIGTERM 2 s later; one that ignores SIGTERM too gets
/// SIGKILL 2 s after that. Either way it is not left running, the file is complete, and one
/// line says what was done.
#[test]
fn a_workload_that_ignores_sigint_gets_sigterm_then_sigkill() {
    for (traps, code, said) in [
        (
            "trap '' INT;",
            128 + 15,
            "hrec: warning: the workload did not exit within 2 s of SIGINT: ended it with SIGTERM",
        ),
        (
            "trap '' INT TERM;",
            128 + 9,
            "hrec: warning: the workload did not exit on SIGINT or SIGTERM: ended it with SIGKILL",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let began = Instant::now();
        let (o, pid) = signal_recording(dir.path(), traps, "INT");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{traps}: {err}");
        assert_eq!(
            err.lines()
                .filter(|l| l.contains("warning: the workload"))
                .collect::<Vec<_>>(),
            [said],
            "{err}"
        );
        assert_complete_and_gone(dir.path(), pid, &err);
        assert!(began.elapsed() < Duration::from_secs(30));
    }
}

/// A workload that dies of SIGSEGV: hrec exits 139 as the shell would for it, with one line
/// saying so, and the file is complete.
#[test]
fn a_workload_killed_by_sigsegv_is_one_line_and_exit_139() {
    let dir = tempfile::tempdir().unwrap();
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "-o",
            "segv.hrec",
            "--",
            "sh",
            "-c",
            &format!("{}; kill -SEGV $$", busy(50_000)),
        ],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(139), "{err}");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("warning: the workload"))
        .collect();
    assert_eq!(
        warnings,
        [
            "hrec: warning: the workload was killed by SIGSEGV (exit status 139); the recording up to then is complete"
        ],
        "{err}"
    );
    let info = info(dir.path(), "segv.hrec");
    assert!(info.contains("# complete"), "{info}");
    assert!(info_samples(&info) > 0, "{info}");
}

/// `(fd count, VmHWM in kB)` of a running process, `None` once it is gone.
fn fds_and_peak(pid: u32) -> Option<(usize, u64)> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some((fds, hwm))
}

/// A thousand short-lived processes forked at the highest frequency: hrec's descriptors stay
/// the same (inherited events need none per child), its memory stays bounded, lost samples
/// are counted in the summary and the file alike, and the file is complete.
#[test]
fn a_thousand_short_lived_processes_at_max_frequency() {
    let dir = tempfile::tempdir().unwrap();
    let script = "i=0; while [ $i -lt 1000 ]; do /bin/true & i=$((i+1)); done; wait";
    let mut child = spawn_hrec(
        dir.path(),
        &[
            "record",
            "-F",
            "max",
            "-o",
            "fork.hrec",
            "--",
            "sh",
            "-c",
            script,
        ],
    );
    let pid = child.id();
    let (mut min_fds, mut max_fds, mut peak_kb) = (usize::MAX, 0, 0u64);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        // Counted once the recording runs (its file exists), not while hrec starts.
        if dir.path().join("fork.hrec").exists()
            && let Some((fds, hwm)) = fds_and_peak(pid)
        {
            min_fds = min_fds.min(fds);
            max_fds = max_fds.max(fds);
            peak_kb = peak_kb.max(hwm);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(max_fds > 0, "hrec's descriptors were never seen");
    // One event fd per CPU and hrec's own (stdio, pipes, epoll, the file, a binary read for
    // its build-id): none per child, whatever the number of children.
    let cpus = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    assert!(
        max_fds <= cpus + 16,
        "fds went from {min_fds} to {max_fds} with {cpus} CPUs"
    );
    assert!(peak_kb < 256 * 1024, "peak RSS {peak_kb} kB");
    let summary = err
        .lines()
        .find(|l| l.starts_with("[ hrec record:"))
        .unwrap_or_else(|| panic!("{err}"));
    // "...; N lost..." counts what the kernel dropped (LOST records and read_format LOST).
    let lost = summary
        .find(" lost")
        .and_then(|at| summary[..at].rsplit(' ').next()?.parse::<u64>().ok());
    assert!(lost.is_some(), "no lost count in {summary}");
    let info = info(dir.path(), "fork.hrec");
    assert!(info.contains("# complete"), "{info}");
    let n = info_samples(&info);
    assert!(
        n > 0 && summary.contains(&format!("({n} samples")),
        "{summary}\n{info}"
    );
    // The losses are in the file too, and said in a warning past 0.1%.
    let lost = lost.unwrap();
    if lost > 0 {
        assert!(
            info.contains(&format!("({lost} samples)"))
                || info.contains(&format!(" {lost} by read_format LOST")),
            "{info}"
        );
        if lost * 1000 > n + lost {
            assert!(
                err.contains(&format!("hrec: warning: {lost} of {} samples", n + lost)),
                "{err}"
            );
        }
    }
}

const PROG: &str = r#"
#include <stdio.h>
volatile unsigned long sink;
__attribute__((noinline)) void spin_here(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) sink += i * VARIANT;
}
int main(void) { spin_here(100000000UL); printf("%lu\n", sink); return 0; }
"#;

/// Compiles `prog` in `dir` with `-DVARIANT=variant` (another variant: another build-id).
fn build_prog(dir: &Path, variant: u32) -> bool {
    std::fs::write(dir.join("prog.c"), PROG).unwrap();
    Command::new("gcc")
        .args([
            "-O1",
            "-g",
            &format!("-DVARIANT={variant}"),
            "-o",
            "prog",
            "prog.c",
        ])
        .current_dir(dir)
        .status()
        .is_ok_and(|s| s.success())
}

/// A recording `p.hrec` of a freshly compiled `prog` in a directory anyone may read, whose
/// report names `spin_here`; `None` (after saying why) without gcc.
fn recorded_prog() -> Option<tempfile::TempDir> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    if !build_prog(dir.path(), 3) {
        eprintln!("skipped: gcc cannot compile the test program");
        return None;
    }
    let o = hrec_in(dir.path(), &["record", "-q", "-o", "p.hrec", "./prog"]);
    assert!(o.status.success(), "{}", text(&o).1);
    std::fs::set_permissions(
        dir.path().join("p.hrec"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let (out, _) = report(dir.path(), &[]);
    assert!(out.contains("[.] spin_here"), "{out}");
    Some(dir)
}

/// `hrec report -i p.hrec ARGS`: stdout and stderr, after checking it succeeded.
fn report(dir: &Path, args: &[&str]) -> (String, String) {
    let mut all = vec!["report", "-i", "p.hrec"];
    all.extend(args);
    let o = hrec_in(dir, &all);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    (out, err)
}

/// A binary rebuilt since the recording: the report says so for that file, and does not name
/// the new file's functions at the old addresses.
#[test]
fn a_rebuilt_binary_is_named_and_not_symbolized() {
    let Some(dir) = recorded_prog() else { return };
    assert!(build_prog(dir.path(), 5));
    let (out, _) = report(dir.path(), &[]);
    assert!(out.contains("% build-id mismatch (prog)"), "{out}");
    let path = dir.path().join("prog");
    assert!(
        out.contains(&format!(
            "# warning: {} on this machine is not the file that was recorded (another build: rebuilt since, or the file of a container or chroot), and the build-id cache has no copy; its samples are unresolved",
            path.display()
        )),
        "{out}"
    );
    assert!(!out.contains("spin_here"), "{out}");
}

/// A binary removed since: named as missing, its samples shown as addresses.
#[test]
fn a_removed_binary_is_named_as_missing() {
    let Some(dir) = recorded_prog() else { return };
    std::fs::remove_file(dir.path().join("prog")).unwrap();
    let (out, _) = report(dir.path(), &[]);
    assert!(out.contains("% binary missing (prog)"), "{out}");
    assert!(out.contains("[.] 0x"), "{out}");
    assert!(!out.contains("spin_here"), "{out}");
}

/// A binary the reader may not read (mode 000, read as an unprivileged user): named as
/// unreadable, not as missing.
#[test]
fn an_unreadable_binary_is_named_as_unreadable() {
    let Some(prefix) = unprivileged("an unreadable binary (root reads anything)") else {
        return;
    };
    let Some(dir) = recorded_prog() else { return };
    std::fs::set_permissions(
        dir.path().join("prog"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    let o = command_as(&prefix, HREC)
        .args(["report", "-i", "p.hrec"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("% binary unreadable (permission denied) (prog)"),
        "{out}"
    );
    assert!(!out.contains("spin_here"), "{out}");
}

/// A huge binary (the same ELF file grown to 8 GiB, sparse): read in the few ranges it needs
/// under a 4 GiB address-space limit, and symbolized as before.
#[test]
fn a_huge_binary_is_read_in_bounded_memory() {
    let Some(dir) = recorded_prog() else { return };
    let grown = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("prog"))
        .and_then(|f| f.set_len(8 << 30));
    if let Err(e) = grown {
        eprintln!("skipped: cannot make an 8 GiB sparse file here: {e}");
        return;
    }
    let o = sh_in(
        dir.path(),
        "ulimit -v 4194304; exec \"$HREC\" report -i p.hrec",
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("[.] spin_here"), "{out}");
}

/// `--symfs` naming no directory is one line and exit 2 (it would leave every binary
/// unresolved); an empty directory is accepted, and the binaries are missing from it.
#[test]
fn a_symfs_that_is_not_a_directory_is_refused() {
    let Some(dir) = recorded_prog() else { return };
    for (symfs, why) in [
        (
            "/nonexistent/symfs",
            "No such file or directory (os error 2)",
        ),
        ("p.hrec", "not a directory"),
    ] {
        let o = hrec_in(dir.path(), &["report", "-i", "p.hrec", "--symfs", symfs]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err, format!("hrec: error: --symfs {symfs}: {why}\n"));
        assert!(out.is_empty(), "{out}");
    }
    let empty = tempfile::tempdir().unwrap();
    let (out, _) = report(dir.path(), &["--symfs", empty.path().to_str().unwrap()]);
    assert!(out.contains("% binary missing (prog)"), "{out}");
}

/// Stopped by SIGINT, hrec exits 130 as perf does when the workload was not killed by a
/// signal: one that catches SIGINT and exits 0, and a `-a` recording without a command.
#[test]
fn sigint_exits_130_when_the_workload_exits_by_itself_or_there_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let (o, pid) = signal_recording(dir.path(), "trap 'exit 0' INT;", "INT");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(!err.contains("warning: the workload"), "{err}");
    assert_complete_and_gone(dir.path(), pid, &err);

    if !is_root() {
        eprintln!(
            "skipped: -a without root depends on perf_event_paranoid (the test above checks it)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let child = spawn_hrec(dir.path(), &["record", "-a", "-o", "s.hrec"]);
    // The file is made once the signal handlers are in place.
    await_cond("hrec -a to start", 30, || {
        dir.path().join("s.hrec").exists()
    });
    assert!(
        Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(info(dir.path(), "s.hrec").contains("# complete"), "{err}");
}

/// The workload starts with SIGPIPE and SIGXFSZ at their defaults although hrec ignores both
/// (Rust's runtime ignores SIGPIPE; the recorder ignores SIGXFSZ): `yes | head` ends as in a
/// shell, and a workload past `ulimit -f` dies as it would without hrec. SIGINT and SIGTERM,
/// which hrec forwards, start at their defaults even when hrec was started with them ignored
/// (`nohup`, `cmd &` in a script), as perf's workload does.
#[test]
fn the_workload_does_not_inherit_the_signals_hrec_ignores() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new("sh")
        .args([
            "-c",
            "trap '' INT TERM; exec \"$0\" record -q -o sig.hrec -- sh -c 'grep SigIgn /proc/$$/status'",
            HREC,
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let mask = out
        .trim()
        .strip_prefix("SigIgn:")
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .unwrap_or_else(|| panic!("{out}"));
    for (name, sig) in [
        ("SIGINT", 2),
        ("SIGPIPE", 13),
        ("SIGTERM", 15),
        ("SIGXFSZ", 25),
    ] {
        assert_eq!(
            mask & (1 << (sig - 1)),
            0,
            "{name} ignored: SigIgn {mask:#x}"
        );
    }
}
