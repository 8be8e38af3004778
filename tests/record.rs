//! `hrec record` end to end on the real kernel (software events), read back with `hrec info`
//! and `hrec script`: threads and child processes followed, counts that agree, sampling-read
//! groups with weights, exit statuses, signals and crash safety.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{example, hrec_in, text};

/// `(samples, threads, lost)` from the summary line.
fn summary(stderr: &str) -> (u64, u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("[ hrec record:"))
        .unwrap_or_else(|| panic!("no summary line in:\n{stderr}"));
    let num_before = |key: &str| -> u64 {
        let at = line.find(key).unwrap_or_else(|| panic!("{key} in {line}"));
        line[..at]
            .trim_end()
            .rsplit(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("number before {key} in {line}"))
    };
    (
        num_before(" samples:"),
        num_before(" threads;"),
        num_before(" lost"),
    )
}

/// Sample lines of `hrec script` (callchain lines start with a tab).
fn sample_lines(script: &str) -> Vec<&str> {
    script
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('\t'))
        .collect()
}

/// `pid/tid` -> samples, from script lines.
fn per_thread(lines: &[&str]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in lines {
        let pt = l
            .split_whitespace()
            .find(|w| w.contains('/') && w.split('/').all(|x| x.parse::<u32>().is_ok()))
            .unwrap_or_else(|| panic!("no pid/tid in {l}"));
        *m.entry(pt.to_string()).or_default() += 1;
    }
    m
}

/// `pid/tid` -> samples, from `hrec info`'s thread list.
fn info_threads(info: &str) -> BTreeMap<String, u64> {
    info.lines()
        .filter_map(|l| l.strip_prefix("#   "))
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let pt = w.next()?.to_string();
            let n = w.next()?.parse().ok()?;
            Some((pt, n))
        })
        .collect()
}

#[test]
fn workload_threads_and_children_are_recorded_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let threads = example("threads");
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "-o",
            "t.hrec",
            "--",
            threads.to_str().unwrap(),
            "0.4",
        ],
    );
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let (samples, nthreads, lost) = summary(&err);
    assert_eq!(lost, 0, "{err}");
    // main + 3 workers + the child process (and its pre-exec thread) all sampled.
    assert!(nthreads >= 5, "{err}");
    assert!(samples > 500, "{err}");

    let info = hrec_in(dir.path(), &["info", "-i", "t.hrec"]);
    let (info_out, info_err) = text(&info);
    assert!(info.status.success(), "{info_err}");
    assert!(info_out.contains("# complete"), "{info_out}");
    assert!(info_out.contains("name = cpu-clock"), "{info_out}");
    assert!(
        info_out.contains(&format!("# samples : {samples} ")),
        "{info_out}"
    );

    let script = hrec_in(dir.path(), &["script", "-i", "t.hrec", "-F", "+pid"]);
    let (out, serr) = text(&script);
    assert!(script.status.success(), "{serr}");
    let lines = sample_lines(&out);
    assert_eq!(lines.len() as u64, samples, "script vs summary");
    let by_thread = per_thread(&lines);
    assert_eq!(by_thread.len() as u64, nthreads);
    assert_eq!(
        by_thread,
        info_threads(&info_out),
        "script vs recorded per-thread counts"
    );
    // Thread names come from COMM (exec) and FORK (inherited) records.
    for name in ["worker-0", "worker-1", "worker-2", "threads"] {
        assert!(
            lines.iter().any(|l| l.trim_start().starts_with(name)),
            "{name}:\n{out}"
        );
    }
    // Times are in order.
    let times: Vec<f64> = lines
        .iter()
        .filter_map(|l| {
            l.split_whitespace()
                .find(|w| w.ends_with(':') && w.contains('.'))
        })
        .filter_map(|w| w.trim_end_matches(':').parse().ok())
        .collect();
    assert_eq!(times.len(), lines.len());
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn sampling_read_group_with_weight_and_callchain() {
    let dir = tempfile::tempdir().unwrap();
    let threads = example("threads");
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "-e",
            "{cpu-clock,task-clock,page-faults}:S",
            "-W",
            "-g",
            "-o",
            "g.hrec",
            "--",
            threads.to_str().unwrap(),
            "0.2",
        ],
    );
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let (samples, _, _) = summary(&err);
    assert!(samples > 100, "{err}");
    let script = hrec_in(
        dir.path(),
        &[
            "script",
            "-i",
            "g.hrec",
            "-F",
            "+pid,+weight,+ins_lat,+retire_lat,+read",
        ],
    );
    let (out, serr) = text(&script);
    assert!(script.status.success(), "{serr}");
    // A line per member that counted (as perf script): the leader's are the samples.
    let lines: Vec<&str> = sample_lines(&out)
        .into_iter()
        .filter(|l| l.contains(" cpu-clock:"))
        .collect();
    assert_eq!(lines.len() as u64, samples);
    for l in &lines {
        // weight, ins_lat and retire_lat: 16 columns each, as perf prints them.
        assert!(l.contains(&format!("{:>16}{:>16}{:>16}", 0, 0, 0)), "{l}");
        assert!(l.contains("{cpu-clock "), "{l}");
        assert!(l.contains(" task-clock "), "{l}");
        assert!(l.contains(" page-faults "), "{l}");
    }
    // The group values are cumulative counts of the sampled thread: task-clock grows.
    let tc: Vec<u64> = lines
        .iter()
        .filter(|l| l.contains("worker-0"))
        .filter_map(|l| {
            let at = l.find(" task-clock ")? + " task-clock ".len();
            l[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .collect();
    assert!(tc.len() > 2 && tc.iter().any(|&v| v > 0), "{tc:?}");
    // Frame-pointer callchains: indented address lines under the samples.
    assert!(
        out.lines().any(|l| l.starts_with('\t')),
        "no callchain lines"
    );
}

#[test]
fn exit_status_is_the_workloads() {
    let dir = tempfile::tempdir().unwrap();
    let o = hrec_in(
        dir.path(),
        &["record", "-o", "e.hrec", "--", "sh", "-c", "exit 3"],
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o).1);
    let o = hrec_in(
        dir.path(),
        &["record", "-o", "k.hrec", "--", "sh", "-c", "kill -TERM $$"],
    );
    assert_eq!(o.status.code(), Some(128 + 15), "{}", text(&o).1);
    assert!(dir.path().join("k.hrec").exists());
}

#[test]
fn a_command_that_cannot_run_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.hrec"), b"previous").unwrap();
    let o = hrec_in(
        dir.path(),
        &["record", "-o", "x.hrec", "--", "/nonexistent/program"],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot execute \"/nonexistent/program\""),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.contains("error")).count(),
        1,
        "{err}"
    );
    // The previous file is untouched and not renamed, and nothing else is left.
    assert_eq!(
        std::fs::read(dir.path().join("x.hrec")).unwrap(),
        b"previous"
    );
    assert!(!dir.path().join("x.hrec.old").exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    // An older `.old` stays too.
    std::fs::write(dir.path().join("x.hrec.old"), b"older").unwrap();
    let o = hrec_in(
        dir.path(),
        &["record", "-o", "x.hrec", "--", "/nonexistent/program"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o).1);
    assert_eq!(
        std::fs::read(dir.path().join("x.hrec.old")).unwrap(),
        b"older"
    );
    assert_eq!(
        std::fs::read(dir.path().join("x.hrec")).unwrap(),
        b"previous"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn an_existing_file_becomes_old() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hrec.data"), b"previous").unwrap();
    let o = hrec_in(dir.path(), &["record", "--", "true"]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(
        std::fs::read(dir.path().join("hrec.data.old")).unwrap(),
        b"previous"
    );
    let info = hrec_in(dir.path(), &["info"]);
    assert!(info.status.success(), "{}", text(&info).1);
}

fn spawn_record(dir: &Path, file: &str, secs: &str) -> std::process::Child {
    let threads = example("threads");
    Command::new(env!("CARGO_BIN_EXE_hrec"))
        .args(["record", "-o", file, "--", threads.to_str().unwrap(), secs])
        .current_dir(dir)
        .env_remove("HREC_SYSFS_ROOT")
        .env_remove("HREC_PROCFS_ROOT")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn sigkill_leaves_a_readable_truncated_file() {
    let dir = tempfile::tempdir().unwrap();
    // A duration no other test uses: the workload is stopped below by matching it.
    let mut child = spawn_record(dir.path(), "killed.hrec", "6");
    // Until a block of samples has reached the file (a batch is written at least every
    // 1 s; a loaded machine may take longer, so the test waits for the file, not a time).
    let has_samples = || {
        let (out, _) = text(&hrec_in(dir.path(), &["info", "-i", "killed.hrec"]));
        out.lines()
            .find_map(|l| l.strip_prefix("# samples : "))
            .and_then(|l| l.split_whitespace().next()?.parse::<u64>().ok())
            .is_some_and(|n| n > 0)
    };
    let mut waited = 0;
    while !has_samples() {
        assert!(
            waited < 1200 && child.try_wait().unwrap().is_none(),
            "no samples reached the file"
        );
        std::thread::sleep(Duration::from_millis(100));
        waited += 1;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The workload keeps running without its recorder; stop it.
    let _ = Command::new("pkill").args(["-f", "threads 6$"]).status();
    let info = hrec_in(dir.path(), &["info", "-i", "killed.hrec"]);
    let (out, err) = text(&info);
    assert!(info.status.success(), "{err}");
    assert!(out.contains("# TRUNCATED"), "{out}");
    let n: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("# samples : "))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(n > 0, "{out}");
    let script = hrec_in(dir.path(), &["script", "-i", "killed.hrec", "-F", "+pid"]);
    let (sout, serr) = text(&script);
    assert!(script.status.success(), "{serr}");
    assert!(serr.contains("truncated"), "{serr}");
    assert_eq!(sample_lines(&sout).len() as u64, n);
}

#[test]
fn sigint_ends_with_a_complete_file() {
    let dir = tempfile::tempdir().unwrap();
    let child = spawn_record(dir.path(), "int.hrec", "5");
    // The file appears once the workload runs and hrec's signal handlers are in place; under
    // load (parallel tests building examples) that can take a while.
    let file = dir.path().join("int.hrec");
    for _ in 0..200 {
        if file.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(file.exists(), "hrec did not start recording within 10 s");
    std::thread::sleep(Duration::from_millis(500));
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // The workload got the SIGINT too and died of it.
    assert_eq!(o.status.code(), Some(128 + 2), "{err}");
    let (samples, _, _) = summary(&err);
    assert!(samples > 0);
    let info = hrec_in(dir.path(), &["info", "-i", "int.hrec"]);
    let (out, _) = text(&info);
    assert!(out.contains("# complete"), "{out}");
    assert!(out.contains(&format!("# samples : {samples} ")), "{out}");
}

/// perf's everyday record flags: `-q` prints nothing on success, `-z N` changes only how hard
/// the blocks are compressed (the samples read back the same), `-B` leaves the build-ids out,
/// `-N` is accepted, and bad values are one line with exit 2.
#[test]
fn quiet_compression_level_and_no_buildid() {
    let dir = tempfile::tempdir().unwrap();
    let bin = support::release_example("hotspots");
    let spin = bin.to_str().unwrap();
    let mut scripts = Vec::new();
    for (file, level) in [
        ("fast.hrec", "-z=1"),
        ("small.hrec", "--compression-level=19"),
    ] {
        let o = hrec_in(
            dir.path(),
            &[
                "record", "-q", level, "-F", "2000", "-o", file, "--", spin, "1",
            ],
        );
        let (out, err) = text(&o);
        assert!(o.status.success(), "{err}");
        // Only the workload's own output (its checksum line) is left.
        assert!(err.is_empty(), "-q printed: {err}");
        assert!(
            out.starts_with("hotspots:") && !out.contains("hrec"),
            "{out}"
        );
        // Both files read back whole: every sample of one is a sample line of the other's
        // format, and the recorded levels do not change what is read.
        let (script, _) = text(&hrec_in(dir.path(), &["script", "-i", file]));
        assert!(script.lines().count() > 50, "{file}: {script}");
        scripts.push(script);
    }
    for s in &scripts {
        assert!(s.lines().all(|l| l.contains("cpu-clock")), "{s}");
    }
    // Without -q the same recording prints its summary line.
    let o = hrec_in(dir.path(), &["record", "-o", "loud.hrec", "--", "true"]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(text(&o).1.contains("samples"), "{}", text(&o).1);
    // -B: no build-ids stored; without it, the workload's binary has one.
    let ids = |file: &str| text(&hrec_in(dir.path(), &["buildid-list", "-i", file])).0;
    assert!(ids("fast.hrec").contains(spin), "{}", ids("fast.hrec"));
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "-q",
            "-B",
            "-N",
            "-o",
            "noid.hrec",
            "--",
            spin,
            "1",
        ],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(ids("noid.hrec"), "");
    for bad in [&["-z=0"][..], &["-z=23"], &["--compression-level=x"]] {
        let mut args = vec!["record", "-o", "bad.hrec"];
        args.extend(bad);
        args.extend(["--", "true"]);
        let o = hrec_in(dir.path(), &args);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{bad:?}: {err}");
        assert!(!dir.path().join("bad.hrec").exists(), "{bad:?}");
    }
}

/// Records `plan` into `out` through the library's recorder while a shell counts to 30,000;
/// the recording must succeed. Returns what it wrote to stderr.
fn record_shell_loop(plan: &hrec::event::plan::Plan, pmus: &hrec::pmu::Pmus, out: &Path) -> String {
    let session = hrec::record::Session {
        plan,
        pmus,
        output: out.to_path_buf(),
        mmap_pages: None,
        command: [
            "sh",
            "-c",
            "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done",
        ]
        .map(String::from)
        .to_vec(),
        command_line: vec!["hrec".into(), "record".into()],
        procfs_root: "/proc".into(),
        verbose: 0,
        keep_raw_stacks: false,
        zstd_level: None,
        no_buildid: true,
        buildid_cache: None,
        switch_output: None,
        on_file: None,
        stop: None,
        live: false,
    };
    let mut err = Vec::new();
    let outcome = hrec::record::record(&session, &mut err)
        .unwrap_or_else(|e| panic!("the recording failed: {e}"));
    assert_eq!(outcome.exit_code, 0);
    String::from_utf8(err).unwrap()
}

/// Issue 30: members hrec adds on its own (the E-core TopDown events of the default groups)
/// that the kernel refuses are left out with one line, never the recording: a refused
/// level-2 member drops the group's level 2, a refused level-1 member all its TopDown. On the
/// real kernel, with a software group whose marked member has a PMU type no kernel has.
#[test]
fn refused_topdown_members_are_left_out_with_one_line() {
    use hrec::event::plan::{self, IfRefused, RecordOptions};
    let pmus = hrec::pmu::Pmus::read(Path::new("/sys")).unwrap();
    let opts = RecordOptions {
        events: vec!["{cpu-clock,task-clock,page-faults,context-switches}:S".into()],
        ..Default::default()
    };
    let base = plan::plan_record(&pmus, &hrec::event::Host::default(), &opts).unwrap();
    for (refused, how, kept) in [
        (2, IfRefused::DropLevel2, [true, true, false, false]),
        (1, IfRefused::DropTopdown, [true, false, false, false]),
    ] {
        let mut plan = base.clone();
        plan.events[1].if_refused = Some(IfRefused::DropTopdown);
        plan.events[2].if_refused = Some(IfRefused::DropLevel2);
        plan.events[3].if_refused = Some(IfRefused::DropLevel2);
        plan.events[refused].attr.type_ = 0x7fff_0000;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("t.hrec");
        let err = record_shell_loop(&plan, &pmus, &out);
        let lines: Vec<&str> = err.lines().filter(|l| l.contains("refused")).collect();
        let rest = match how {
            IfRefused::DropLevel2 => "recording TopDown level 1 only",
            IfRefused::DropTopdown | IfRefused::OffCpuStacks => "sampling without TopDown",
            IfRefused::DropGroup => unreachable!("not in this test"),
        };
        assert_eq!(lines.len(), 1, "{err}");
        assert!(
            lines[0].starts_with("hrec: software: the kernel refused ")
                && lines[0].contains(&format!(" in {}'s group (", plan.events[0].name))
                && lines[0].ends_with(rest),
            "{}",
            lines[0]
        );
        // The file lists every planned event; those left out have no ids.
        let r = hrec::data::Reader::open(&out).unwrap();
        let opened: Vec<bool> = r.meta().events[..4]
            .iter()
            .map(|e| !e.ids.is_empty())
            .collect();
        assert_eq!(opened, kept, "{how:?}");
        assert!(r.meta().notices.iter().any(|n| n.ends_with(rest)));
        // And it reads: the samples are there.
        let o = hrec_in(dir.path(), &["report", "--stdio", "-i", "t.hrec"]);
        let (stdout, stderr) = text(&o);
        assert!(o.status.success(), "{stderr}");
        assert!(stdout.contains("# Samples: "), "{stdout}");
    }
}

/// Issue 42: a metric group of `--td-level` / `-M` that the kernel refuses at open is left
/// out whole, leader and members, with one line, and the rest is recorded. On the real
/// kernel, with two software groups whose second has a member of a PMU type no kernel has.
#[test]
fn a_refused_metric_group_is_left_out_and_the_rest_recorded() {
    use hrec::event::plan::{self, IfRefused, RecordOptions};
    let pmus = hrec::pmu::Pmus::read(Path::new("/sys")).unwrap();
    let opts = RecordOptions {
        events: vec![
            "{cpu-clock,task-clock,page-faults}:S".into(),
            "{cpu-clock,task-clock,context-switches}:S".into(),
        ],
        ..Default::default()
    };
    let mut plan = plan::plan_record(&pmus, &hrec::event::Host::default(), &opts).unwrap();
    let second: Vec<usize> = plan
        .events
        .iter()
        .filter(|e| e.leader == 3)
        .map(|e| e.index)
        .collect();
    assert_eq!(second, [3, 4, 5], "{:?}", plan.events);
    for &i in &second {
        plan.events[i].if_refused = Some(IfRefused::DropGroup);
    }
    plan.events[5].attr.type_ = 0x7fff_0000;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.hrec");
    let err = record_shell_loop(&plan, &pmus, &out);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("refused")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains(&format!(" in {}'s group (", plan.events[3].name))
            && lines[0].contains("recording without this metric group"),
        "{}",
        lines[0]
    );
    let r = hrec::data::Reader::open(&out).unwrap();
    let opened: Vec<bool> = r.meta().events[..6]
        .iter()
        .map(|e| !e.ids.is_empty())
        .collect();
    assert_eq!(opened, [true, true, true, false, false, false]);
    let o = hrec_in(dir.path(), &["report", "--stdio", "-i", "t.hrec"]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(stdout.contains("# Samples: "), "{stdout}");
}

/// The vdso image goes into a file only when its samples need it: a program that spends its
/// time in `clock_gettime` gets it, one that never enters the vdso does not. Both list the
/// vdso's build-id, by which a file without the image (as perf.data is) finds this machine's
/// own vdso again.
#[test]
fn the_vdso_image_only_in_files_whose_samples_are_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(prog) = support::stacks::build(d, "unwind/vdso.c", &[]) else {
        return;
    };
    let spin = support::release_example("hotspots");
    let side_blocks = |file: &str| {
        let r = hrec::data::Reader::open(&d.join(file)).unwrap();
        r.blocks()
            .iter()
            .filter(|b| b.kind == hrec::data::BlockKind::Side)
            .map(|b| b.name.clone())
            .collect::<Vec<_>>()
    };
    let cache = d.join("cache");
    let cache_arg = cache.to_str().unwrap();
    for (file, cmd, no_cache) in [
        // -N: no build-id cache, so the image goes into the file.
        ("vdso.hrec", vec![prog.to_str().unwrap(), "20000000"], true),
        (
            "cached.hrec",
            vec![prog.to_str().unwrap(), "20000000"],
            false,
        ),
        ("spin.hrec", vec![spin.to_str().unwrap(), "1"], false),
    ] {
        let mut args = vec!["record", "-q", "-F", "2000", "--buildid-dir", cache_arg];
        if no_cache {
            args.push("-N");
        }
        args.extend(["-o", file, "--"]);
        args.extend(&cmd);
        let o = hrec_in(d, &args);
        assert!(o.status.success(), "{}", text(&o).1);
        let ids = text(&hrec_in(d, &["buildid-list", "-i", file])).0;
        assert!(ids.lines().any(|l| l.ends_with(" [vdso]")), "{ids}");
    }
    assert!(side_blocks("vdso.hrec").contains(&"vdso".to_string()));
    assert!(!side_blocks("spin.hrec").contains(&"vdso".to_string()));
    // With the build-id cache, the image is saved there (perf's `[vdso]/<hex>/vdso`, with its
    // `.build-id` link), not in the file, and found there by the build-id the file lists.
    assert!(!side_blocks("cached.hrec").contains(&"vdso".to_string()));
    let ids = text(&hrec_in(d, &["buildid-list", "-i", "cached.hrec"])).0;
    let hex = ids
        .lines()
        .find_map(|l| l.strip_suffix(" [vdso]"))
        .unwrap()
        .to_string();
    let saved = cache.join("[vdso]").join(&hex).join("vdso");
    let image = std::fs::read(&saved).unwrap();
    assert_eq!(
        hrec::kernel::image_build_id(&image).as_deref(),
        Some(hex.as_str())
    );
    let link = cache.join(".build-id").join(&hex[..2]).join(&hex[2..]);
    assert_eq!(
        std::fs::canonicalize(&link).unwrap(),
        std::fs::canonicalize(saved.parent().unwrap()).unwrap()
    );
    let in_vdso = |file: &str| {
        let (out, err) = text(&hrec_in(d, &["report", "--stdio", "-i", file]));
        assert!(!out.is_empty(), "{err}");
        out.lines()
            .find(|l| l.contains("[vdso]") && l.contains("__vdso_clock_gettime"))
            .map(str::to_string)
    };
    let own = in_vdso("vdso.hrec").expect("the vdso's samples named");
    assert!(
        in_vdso("cached.hrec").is_some(),
        "named from the cached image"
    );
    // `hrec archive` packs the cached image where perf's layout puts it.
    let o = hrec_in(
        d,
        &[
            "archive",
            "-i",
            "cached.hrec",
            "--buildid-dir",
            cache_arg,
            "-o",
            "c.tar",
        ],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let tar = std::process::Command::new("tar")
        .args(["tf", "c.tar"])
        .current_dir(d)
        .output()
        .unwrap();
    let names = String::from_utf8_lossy(&tar.stdout).into_owned();
    assert!(
        names.lines().any(|l| l == format!("[vdso]/{hex}/vdso")),
        "{names}"
    );
    // The same file without its image: named from this machine's vdso, found by build-id.
    let r = hrec::data::Reader::open(&d.join("vdso.hrec")).unwrap();
    let mut w = hrec::data::Writer::create(&d.join("bare.hrec"), r.meta()).unwrap();
    for b in r.blocks() {
        let bytes = r.read_block(b).unwrap();
        match b.kind {
            hrec::data::BlockKind::Records => {
                w.write_records_timed(&bytes, b.source, b.first_time, b.last_time)
                    .unwrap();
            }
            hrec::data::BlockKind::Trailer => {}
            _ if b.name == "vdso" => {}
            hrec::data::BlockKind::Side => {
                w.write_side(&b.name, &bytes).unwrap();
            }
        }
    }
    w.finish(r.trailer().cloned().unwrap_or_default()).unwrap();
    assert!(!side_blocks("bare.hrec").contains(&"vdso".to_string()));
    assert_eq!(in_vdso("bare.hrec"), Some(own));
}
