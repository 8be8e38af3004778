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
