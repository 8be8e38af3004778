//! Targets other than a fresh command, on the real kernel: `record -a` and `record -p PID`
//! of a process that was running before the recording started (its COMM, FORK and MMAP2 come
//! from `/proc`), with a command that only sets how long to record.

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use support::{example, hrec_in, text};

/// A busy process started before the recording: the `hotspots` example, running until killed.
struct Busy(Child);

impl Busy {
    fn start() -> Busy {
        let child = Command::new(example("hotspots"))
            .arg("100000")
            .stdout(Stdio::null())
            .spawn()
            .expect("start hotspots");
        let pid = child.id();
        // Wait until it has used some CPU time: past exec and its start-up, in its loops.
        let ticks = || -> u64 {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let after_comm = stat.rsplit_once(") ").map_or("", |(_, r)| r);
            // utime is field 14 of the line; 12th after the comm.
            after_comm
                .split(' ')
                .nth(11)
                .and_then(|t| t.parse().ok())
                .unwrap_or(0)
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while ticks() < 20 && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(ticks() >= 20, "hotspots did not start running");
        Busy(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `(comm, pid, symbol, dso)` of every sample in `file`.
fn samples(dir: &Path, file: &str) -> Vec<(String, u32, String, String)> {
    let out = hrec_in(dir, &["script", "-i", file, "-F", "comm,pid,ip,sym,dso"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    stdout
        .lines()
        .filter_map(|l| {
            // `comm pid ip sym (dso)`; the comm may hold spaces, the pid and ip never do.
            let (head, dso) = l.trim_end().rsplit_once(" (")?;
            let mut words: Vec<&str> = head.split_whitespace().collect();
            let sym = words.pop()?.to_string();
            let _ip = words.pop()?;
            let pid = words.pop()?.parse().ok()?;
            Some((
                words.join(" "),
                pid,
                sym,
                dso.trim_end_matches(')').to_string(),
            ))
        })
        .collect()
}

/// At least 90% of the busy process's samples carry its name and a symbol, and most are in
/// its own code; idle samples, when there are any, are `swapper`.
fn check(dir: &Path, file: &str, busy: u32) {
    let all = samples(dir, file);
    let mine: Vec<_> = all.iter().filter(|s| s.1 == busy).collect();
    assert!(
        mine.len() > 100,
        "{file}: {} samples of pid {busy} among {}",
        mine.len(),
        all.len()
    );
    let named = mine
        .iter()
        .filter(|s| s.0 == "hotspots" && s.2 != "[unknown]")
        .count();
    assert!(
        named * 10 >= mine.len() * 9,
        "{file}: {named} of {} samples of pid {busy} named and resolved: {:?}",
        mine.len(),
        &mine[..mine.len().min(10)]
    );
    let own = mine.iter().filter(|s| s.3.ends_with("/hotspots")).count();
    assert!(
        own * 2 > mine.len(),
        "{file}: {own} of {} samples in the program's own code",
        mine.len()
    );
    for s in all.iter().filter(|s| s.1 == 0) {
        assert_eq!(s.0, "swapper", "{file}: idle sample {s:?}");
    }
}

#[test]
fn system_wide_names_and_resolves_a_process_started_before() {
    let dir = tempfile::tempdir().unwrap();
    let busy = Busy::start();
    let out = hrec_in(
        dir.path(),
        &["record", "-a", "-o", "a.hrec", "--", "sleep", "2"],
    );
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    check(dir.path(), "a.hrec", busy.pid());
}

#[test]
fn attach_with_a_command_records_for_as_long_as_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let busy = Busy::start();
    let pid = busy.pid().to_string();
    let started = std::time::Instant::now();
    let out = hrec_in(
        dir.path(),
        &["record", "-p", &pid, "-o", "p.hrec", "--", "sleep", "1"],
    );
    let took = started.elapsed();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        took < std::time::Duration::from_secs(10),
        "-p with a command ran {took:?}"
    );
    check(dir.path(), "p.hrec", busy.pid());
    // Only the attached process is recorded, not the command.
    assert!(
        samples(dir.path(), "p.hrec")
            .iter()
            .all(|s| s.1 == busy.pid())
    );
}

/// Targets that do not exist are one line each, with nothing recorded.
#[test]
fn missing_targets_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for (args, want) in [
        (
            vec!["-p", "999999999", "--", "true"],
            "process 999999999 does not exist",
        ),
        (vec!["-t", "999999999"], "thread 999999999 does not exist"),
        (
            vec!["-C", "4095", "--", "true"],
            "CPU 4095 in -C 4095 is not online",
        ),
    ] {
        let mut all = vec!["record", "-o", "x.hrec"];
        all.extend(args.iter().copied());
        let out = hrec_in(dir.path(), &all);
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(errors.len(), 1, "{args:?}: {stderr}");
        assert!(errors[0].contains(want), "{args:?}: {stderr}");
        assert!(!dir.path().join("x.hrec").exists(), "{args:?}");
    }
}

/// The screens of `hrec top --stdio` output: each is its rows as (percent, samples, keys...).
fn top_screens(stdout: &str) -> Vec<Vec<(f64, u64, Vec<String>)>> {
    let mut screens = Vec::new();
    for part in stdout.split("   hrec top:").skip(1) {
        let rows = part
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains('%'))
            .skip(1) // the status line's own percentages
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let pct = w.next()?.strip_suffix('%')?.parse().ok()?;
                let samples = w.next()?.parse().ok()?;
                Some((pct, samples, w.map(str::to_string).collect()))
            })
            .collect();
        screens.push(rows);
    }
    screens
}

/// `hrec top --stdio -d 1 -n 3`: three refreshes, and a busy process started before is in
/// them by name and function; with `-p` only that process is sampled.
#[test]
fn top_shows_a_busy_process_by_name_and_function() {
    let busy = Busy::start();
    let dir = tempfile::tempdir().unwrap();
    // Its own TMPDIR, to see that hrec top leaves nothing behind there.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hrec"))
        .args(["top", "--stdio", "-d", "1", "-n", "3", "-E", "50"])
        .current_dir(dir.path())
        .env("TMPDIR", &tmp)
        .output()
        .expect("run hrec");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let screens = top_screens(&stdout);
    assert_eq!(screens.len(), 3, "{stdout}");
    assert!(
        stdout.contains("# Overhead  Samples  Shared Object"),
        "{stdout}"
    );
    // The last screen has the hot function among its rows, under the program's name.
    let last = screens.last().unwrap();
    let busy_rows: Vec<_> = last
        .iter()
        .filter(|r| r.2.first().is_some_and(|d| d == "hotspots"))
        .collect();
    assert!(
        busy_rows
            .iter()
            .any(|r| r.2.join(" ").contains("hotspots::hot_")),
        "no hot function of hotspots in the last screen:\n{stdout}"
    );
    // Shares are of the table's total: they add up to at most 100%.
    let sum: f64 = last.iter().map(|r| r.0).sum();
    assert!(sum <= 100.5, "{sum}\n{stdout}");
    // The table is decayed, not reset: a row of one screen is in the next with at least 7/8
    // of its samples (perf top's decay; new samples only add). This holds whatever else runs
    // on the machine; how many samples the busy process gets does not (other jobs share the
    // CPUs), so no share is asserted. The decay's arithmetic is unit-tested in
    // analysis::top.
    for pair in screens.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        let once = |s: &[(f64, u64, Vec<String>)], k: &Vec<String>| {
            s.iter().filter(|r| &r.2 == k).count() <= 1
        };
        for row in before
            .iter()
            .filter(|r| r.1 >= 8 && once(before, &r.2) && once(after, &r.2))
        {
            if let Some(next) = after.iter().find(|n| n.2 == row.2) {
                assert!(next.1 >= row.1 * 7 / 8, "{row:?} then {next:?}\n{stdout}");
            } else {
                // Only a row cut by the number of rows shown (-E 50) may go. Rows are
                // ordered by period, which for cpu-clock is the time a sample stands for,
                // not by samples: a row of more samples may sit below one of fewer, so
                // only the screen being full is asserted.
                assert_eq!(after.len(), 50, "{row:?} gone\n{stdout}");
            }
        }
    }
    // Nothing left behind in the temporary directory.
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);

    // -p: only the busy process, by command name and function, one refresh; -z shows the
    // interval alone.
    let pid = busy.pid().to_string();
    let out = hrec_in(
        dir.path(),
        &[
            "top", "--stdio", "-d", "0.5", "-n", "2", "-z", "-p", &pid, "-s", "comm,sym",
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains(&format!("(target_pid: {pid})")), "{stdout}");
    let screens = top_screens(&stdout);
    assert_eq!(screens.len(), 2, "{stdout}");
    for s in &screens {
        assert!(!s.is_empty(), "{stdout}");
        assert!(s.iter().all(|r| r.2[0] == "hotspots"), "{stdout}");
        let sum: f64 = s.iter().map(|r| r.0).sum();
        assert!((sum - 100.0).abs() < 1.0, "{sum}\n{stdout}");
    }
    assert!(
        stdout.contains("hot_multiply") || stdout.contains("hot_scan"),
        "{stdout}"
    );
}

/// Bad `hrec top` values are one line and exit 2.
#[test]
fn top_bad_values_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["top", "-d", "0"][..],
        &["top", "-d", "x"][..],
        &["top", "-n", "0"][..],
        &["top", "-s", "banana"][..],
        &["top", "-p", "1", "-C", "0"][..],
        &["top", "-m", "3", "-n", "1"][..],
    ] {
        let out = hrec_in(dir.path(), args);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("hrec: error: "), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
    }
}

/// On a terminal `hrec top` is a live view (alternate screen, a key line): the busy process's
/// function shows up, the arrow keys scroll, `q` quits with status 0 and restores the screen.
#[test]
fn top_on_a_terminal_is_a_live_view_that_q_quits() {
    if !support::tmux::available() {
        eprintln!("skipped: tmux not installed");
        return;
    }
    let busy = Busy::start();
    let dir = tempfile::tempdir().unwrap();
    let hrec = env!("CARGO_BIN_EXE_hrec");
    let t = support::tmux::Tmux::start(
        dir.path(),
        100,
        24,
        &format!("{hrec} top -d 0.5 -p {}", busy.pid()),
    );
    let wait = std::time::Duration::from_secs(120);
    let screen = t.wait_screen(wait, |s| s.contains("hotspots::hot_"));
    assert!(screen.contains("   hrec top: "), "{screen}");
    assert!(screen.contains("# Overhead  Samples"), "{screen}");
    assert!(screen.contains("q: quit  z: "), "{screen}");
    t.send_keys(&["z"]);
    t.wait_screen(wait, |s| s.contains("(now: zero each refresh)"));
    t.send_keys(&["q"]);
    assert_eq!(t.wait_exit(wait), 0);
    // It entered the alternate screen and left it.
    t.wait_log(wait, |log| {
        log.contains("\u{1b}[?1049h") && log.contains("\u{1b}[?1049l")
    });
}
