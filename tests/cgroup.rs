//! `record --all-cgroups` and `report --sort cgroup` on the real kernel: a workload moved into
//! a fresh child cgroup of the cgroup2 mount is found under that cgroup's path, recorded
//! system-wide and as the workload itself (the cgroup made before the recording comes from the
//! synthesized CGROUP records), and perf's own `perf record --all-cgroups` file reads as
//! `perf report --sort cgroup` reads it. Needs root (a writable cgroup2 tree); skipped with a
//! message otherwise.

mod support;

use std::path::{Path, PathBuf};

use support::{hrec, hrec_in, text};

/// A child cgroup of the cgroup2 mount, removed when dropped.
struct Cgroup {
    dir: PathBuf,
    /// Its path as the kernel's CGROUP records name it (`/hrec-test-...`).
    path: String,
}

impl Cgroup {
    fn make(tag: &str) -> Option<Cgroup> {
        let Some(mount) = hrec::record::synth::cgroup2_mount(Path::new("/proc")) else {
            eprintln!("skipped: no cgroup2 mount in /proc/self/mountinfo");
            return None;
        };
        let name = format!("hrec-test-{tag}-{}", std::process::id());
        let dir = mount.join(&name);
        if let Err(e) = std::fs::create_dir(&dir) {
            eprintln!(
                "skipped: cannot make a cgroup under {} ({e}): run as root",
                mount.display()
            );
            return None;
        }
        Some(Cgroup {
            dir,
            path: format!("/{name}"),
        })
    }

    /// A shell command that moves its shell into this cgroup, then spins for a while.
    fn busy_command(&self) -> String {
        format!(
            "echo $$ > {}/cgroup.procs && i=0; while [ $i -lt 500000 ]; do i=$((i+1)); done",
            self.dir.display()
        )
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // The workload has exited; the kernel may take a moment to let the cgroup go.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// `report --sort cgroup,comm --json` rows as `(cgroup, comm, samples)`.
fn rows(dir: &Path, file: &str) -> Vec<(String, String, u64)> {
    let o = hrec_in(
        dir,
        &["report", "-i", file, "--sort", "cgroup,comm", "--json"],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "report failed: {err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("report JSON");
    let mut v = Vec::new();
    for ev in j["events"].as_array().expect("events") {
        for r in ev["rows"].as_array().expect("rows") {
            v.push((
                r["key"]["cgroup"].as_str().expect("cgroup key").to_string(),
                r["key"]["comm"].as_str().expect("comm key").to_string(),
                r["samples"].as_u64().expect("samples"),
            ));
        }
    }
    v
}

/// The workload's samples are under its cgroup's path, and only its own (`sh`) are.
fn assert_workload_in(rows: &[(String, String, u64)], cg: &Cgroup) {
    let mine: Vec<_> = rows.iter().filter(|r| r.0 == cg.path).collect();
    let samples: u64 = mine.iter().map(|r| r.2).sum();
    assert!(
        samples >= 20,
        "too few samples in {}: {mine:?} (all rows: {rows:?})",
        cg.path
    );
    assert!(
        mine.iter().all(|r| r.1 == "sh"),
        "other commands in {}: {mine:?}",
        cg.path
    );
    assert!(
        rows.iter().all(|r| r.0 != "unknown"),
        "a sample's cgroup id had no CGROUP record: {rows:?}"
    );
}

#[test]
fn system_wide_recording_reads_per_cgroup() {
    let Some(cg) = Cgroup::make("a") else { return };
    let dir = tempfile::tempdir().unwrap();
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "-a",
            "--all-cgroups",
            "-o",
            "t.hrec",
            "--",
            "sh",
            "-c",
            &cg.busy_command(),
        ],
    );
    let (_, err) = text(&o);
    assert!(o.status.success(), "record failed: {err}");
    let r = rows(dir.path(), "t.hrec");
    assert_workload_in(&r, &cg);
    // The rest of the machine is under the root, named "/" as perf names it.
    assert!(r.iter().any(|r| r.0 == "/"), "{r:?}");
    // The text table: perf's header for the key.
    let o = hrec_in(
        dir.path(),
        &["report", "-i", "t.hrec", "--sort", "cgroup", "--stdio"],
    );
    let (out, _) = text(&o);
    assert!(out.contains("  Cgroup\n"), "{out}");
    assert!(out.contains(&format!("  {}\n", cg.path)), "{out}");
}

#[test]
fn workload_recording_names_a_cgroup_made_before_it() {
    let Some(cg) = Cgroup::make("b") else { return };
    let dir = tempfile::tempdir().unwrap();
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "--all-cgroups",
            "-o",
            "t.hrec",
            "--",
            "sh",
            "-c",
            &cg.busy_command(),
        ],
    );
    let (_, err) = text(&o);
    assert!(o.status.success(), "record failed: {err}");
    let r = rows(dir.path(), "t.hrec");
    assert_workload_in(&r, &cg);
    // Without --all-cgroups the samples carry no cgroup: one row, perf's N/A.
    let o = hrec_in(
        dir.path(),
        &["record", "-o", "n.hrec", "--", "sh", "-c", "true"],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let o = hrec_in(
        dir.path(),
        &["report", "-i", "n.hrec", "--sort", "cgroup", "--json"],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    for r in j["events"][0]["rows"].as_array().unwrap() {
        assert_eq!(r["key"]["cgroup"], "N/A", "{r}");
    }
}

/// The rows of a `--stdio` table as their fields, hrec's Samples column (the second; perf
/// has none by default) left out.
fn table(out: &str, hrec: bool) -> Vec<Vec<String>> {
    out.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut f: Vec<String> = l.split_whitespace().map(str::to_string).collect();
            if hrec && f.len() > 1 {
                f.remove(1);
            }
            f
        })
        .collect()
}

/// `perf report` and `hrec report` of a perf.data with these `--sort` keys, as rows.
fn both_reports(dir: &Path, perf: &str, file: &str, sort: &str) -> [Vec<Vec<String>>; 2] {
    let theirs = std::process::Command::new(perf)
        .args(["report", "-i", file, "--sort", sort, "--stdio"])
        .current_dir(dir)
        .output()
        .expect("run perf report");
    let o = hrec_in(dir, &["report", "-i", file, "--sort", sort, "--stdio"]);
    // Rows of equal overhead may come in another order (README); the overheads order the rest.
    let mut ours = table(&text(&o).0, true);
    let mut theirs = table(&String::from_utf8_lossy(&theirs.stdout), false);
    ours.sort();
    theirs.sort();
    [ours, theirs]
}

/// perf records the file; `extra` are further `perf record` flags.
fn perf_record(dir: &Path, perf: &str, cg: &Cgroup, extra: &[&str]) -> bool {
    let st = std::process::Command::new(perf)
        .args(["record", "-q", "-a", "--all-cgroups", "-o", "p.data"])
        .args(extra)
        .args(["--", "sh", "-c", &cg.busy_command()])
        .current_dir(dir)
        .output()
        .expect("run perf");
    if !st.status.success() {
        eprintln!(
            "skipped: perf record --all-cgroups {extra:?} failed: {}",
            String::from_utf8_lossy(&st.stderr)
        );
    }
    st.status.success()
}

#[test]
fn perf_all_cgroups_file_reads_as_perf_reads_it() {
    let Some(perf) = support::perf() else { return };
    let Some(cg) = Cgroup::make("p") else { return };
    let dir = tempfile::tempdir().unwrap();
    if !perf_record(dir.path(), perf, &cg, &[]) {
        return;
    }
    let r = rows(dir.path(), "p.data");
    assert_workload_in(&r, &cg);
    let [ours, theirs] = both_reports(dir.path(), perf, "p.data", "cgroup");
    assert!(!theirs.is_empty());
    assert_eq!(ours, theirs);
}

/// perf's `cgroup_id` key: the cgroup namespace of each thread from `--namespaces`'
/// NAMESPACES records as `dev/0xinode`, `0/0x0` for a thread without one.
#[test]
fn perf_namespaces_file_reads_by_cgroup_id_as_perf_reads_it() {
    let Some(perf) = support::perf() else { return };
    let Some(cg) = Cgroup::make("n") else { return };
    let dir = tempfile::tempdir().unwrap();
    if !perf_record(dir.path(), perf, &cg, &["--namespaces"]) {
        return;
    }
    let [ours, theirs] = both_reports(dir.path(), perf, "p.data", "cgroup_id,cgroup");
    assert!(!theirs.is_empty());
    assert!(theirs.iter().any(|r| r[1] != "0/0x0"), "{theirs:?}");
    assert_eq!(ours, theirs);
}

/// The plan: `attr.cgroup` on the tracking event, `PERF_SAMPLE_CGROUP` on every event.
#[test]
fn all_cgroups_plan_sets_the_cgroup_bits() {
    let o = hrec(
        Some("vm"),
        &["record", "--dry-run", "--json", "-a", "--all-cgroups"],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let events = j["events"].as_array().unwrap();
    assert!(events.len() >= 2);
    for e in events {
        let st = e["attr"]["sample_type_names"].as_str().unwrap_or_default();
        assert!(st.split('|').any(|b| b == "CGROUP"), "{e}");
        let tracking = e["tracking"].as_bool().unwrap_or(false);
        assert_eq!(e["attr"]["cgroup"] == 1, tracking, "{e}");
    }
}

/// `hrec record --namespaces`: every thread's cgroup namespace, from the workload's own
/// NAMESPACES record (written from /proc, as perf writes it) and the kernel's at `unshare
/// --cgroup`, as `report --sort cgroup_id` shows it: the host's namespace as perf's report of
/// perf's own recording of the same workload names it, the unshared one another.
#[test]
fn record_namespaces_gives_each_thread_its_cgroup_namespace() {
    use std::os::unix::fs::MetadataExt;
    if !support::privilege::is_root() {
        eprintln!("skipped: unshare --cgroup needs root");
        return;
    }
    let spin = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done";
    let script = format!("{spin}; unshare --cgroup sh -c '{spin}'");
    let dir = tempfile::tempdir().unwrap();
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "-q",
            "--namespaces",
            "-o",
            "n.hrec",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let o = hrec_in(
        dir.path(),
        &[
            "report",
            "--stdio",
            "-i",
            "n.hrec",
            "--sort",
            "cgroup_id,comm",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let rows = table(&out, true);
    let host = std::fs::metadata("/proc/self/ns/cgroup").unwrap();
    let host = format!("{}/0x{:x}", host.dev(), host.ino());
    let share = |f: &dyn Fn(&str) -> bool| -> f64 {
        rows.iter()
            .filter(|r| r.len() == 3 && r[2] == "sh" && f(&r[1]))
            .map(|r| r[0].trim_end_matches('%').parse::<f64>().unwrap())
            .sum()
    };
    assert!(share(&|k| k == host) > 30.0, "{host}:\n{out}");
    assert!(
        share(&|k| k != host && k != "0/0x0") > 30.0,
        "no unshared namespace:\n{out}"
    );
    assert_eq!(
        share(&|k| k == "0/0x0"),
        0.0,
        "a thread without a record:\n{out}"
    );
    // perf names the host's namespace the same way in its own recording.
    let Some(perf) = support::perf() else { return };
    let st = std::process::Command::new(perf)
        .args([
            "record",
            "-q",
            "--namespaces",
            "-o",
            "p.data",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    if !st.status.success() {
        eprintln!("skipped: perf record --namespaces failed");
        return;
    }
    let theirs = std::process::Command::new(perf)
        .args([
            "report",
            "-i",
            "p.data",
            "--sort",
            "cgroup_id,comm",
            "--stdio",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let theirs = table(&String::from_utf8_lossy(&theirs.stdout), false);
    assert!(
        theirs
            .iter()
            .any(|r| r.len() == 3 && r[1] == host && r[2] == "sh"),
        "perf: {theirs:?}"
    );
}
