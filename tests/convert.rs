//! `hrec convert`: hrec's recordings written as perf.data and read by the installed perf 6.1.
//!
//! What is compared with what, on real recordings of this machine (software events):
//!
//! * samples: `perf script -F comm,tid,time,event,period,ip` (with `cpu` for `-a`) on the
//!   converted file prints the very lines `hrec script` prints on the original, call-chain
//!   addresses included. A chain unwound while recording has no inline frames in perf's
//!   reading (the addresses alone do not say them), so the original is printed with
//!   `--no-inline`; a `dwarf,raw` recording keeps its stacks and perf unwinds them itself,
//!   inline frames and all. hrec's `[preempted]` off-CPU frame has no perf form;
//! * rows: `perf report --stdio -n --no-children --sort comm,dso,sym -g none` on the converted
//!   file gives the rows of `hrec report` (same flags) on the original;
//! * the round trip: `hrec script` and `hrec report` of the converted file equal the
//!   original's.

mod support;

use std::path::Path;
use std::process::Command;

use support::{hrec_in, hrec_ok, perf_ok, text};

/// `hrec record -q OPTS -o NAME -- WORK` in `dir`.
fn record(dir: &Path, name: &str, opts: &[&str], work: &[&str]) {
    let mut args = vec!["record", "-q", "-o", name];
    args.extend_from_slice(opts);
    args.push("--");
    args.extend_from_slice(work);
    hrec_ok(dir, &args);
}

/// `hrec convert -i FROM -o TO`; its stderr.
fn convert(dir: &Path, from: &str, to: &str) -> String {
    let (_, err) = hrec_ok(dir, &["convert", "-i", from, "-o", to]);
    assert!(err.contains(&format!("hrec: wrote {to} (")), "{err}");
    err
}

/// The report rows (overhead, samples, comm, dso, symbol), one string each, blanks collapsed.
fn rows(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

const REPORT: [&str; 8] = [
    "report",
    "--stdio",
    "-n",
    "--no-children",
    "--sort",
    "comm,dso,sym",
    "-g",
    "none",
];

fn perf_rows(dir: &Path, file: &str) -> Vec<String> {
    let mut args = REPORT.to_vec();
    args.extend(["-i", file]);
    rows(&perf_ok(dir, &args))
}

fn hrec_rows(dir: &Path, file: &str) -> Vec<String> {
    let mut args = REPORT.to_vec();
    args.extend(["-i", file]);
    rows(&hrec_ok(dir, &args).0)
}

/// The first line where `a` and `b` differ, with the lines before it back to the sample's
/// first line.
fn first_difference(a: &str, b: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let at = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let from = a[..at]
        .iter()
        .rposition(|l| !l.starts_with('\t'))
        .unwrap_or(at);
    format!(
        "line {}:\n{}\n< {}\n> {}",
        at + 1,
        a[from..at].join("\n"),
        a.get(at).unwrap_or(&"(end)"),
        b.get(at).unwrap_or(&"(end)")
    )
}

/// Whether this runs as root, which system-wide recording, cgroup records and other
/// processes' switch records need (CI runs as root); else says the check was skipped.
fn root_or_skip(what: &str) -> bool {
    let root = support::privilege::is_root();
    if !root {
        eprintln!("skipped: {what} needs root here");
    }
    root
}

/// `hrec record -e cpu-clock -F 2000 OPTS` of the hotspots example into `name`.
fn record_hotspots(dir: &Path, name: &str, opts: &[&str]) {
    let mut args = vec!["-e", "cpu-clock", "-F", "2000"];
    args.extend_from_slice(opts);
    record(dir, name, &args, &[&hotspots(), "1"]);
}

fn hotspots() -> String {
    support::release_example("hotspots")
        .to_string_lossy()
        .into_owned()
}

/// The checks of the module docs for one recording: `fields` for both scripts, `hrec_flags`
/// for hrec's script of the original.
fn check(dir: &Path, original: &str, converted: &str, fields: &str, hrec_flags: &[&str]) {
    check_of(dir, original, converted, fields, hrec_flags, None);
}

/// The samples (a first line and its chain lines) of `comm` alone.
fn samples_of(script: &str, comm: &str) -> String {
    let mut out = String::new();
    let mut keep = false;
    for l in script.split_inclusive('\n') {
        if !l.starts_with('\t') && !l.trim().is_empty() {
            keep = l.starts_with(&format!("{comm} "));
        }
        if keep {
            out.push_str(l);
        }
    }
    out
}

/// [`check`], comparing hrec with perf on the samples of `comm` only when given (the rest
/// of a system-wide recording is whatever else ran, read by the two tools' own rules; the
/// round trip through hrec still covers every sample).
fn check_of(
    dir: &Path,
    original: &str,
    converted: &str,
    fields: &str,
    hrec_flags: &[&str],
    comm: Option<&str>,
) {
    let mut args = vec!["script", "-i", original, "-F", fields];
    args.extend_from_slice(hrec_flags);
    let all = hrec_ok(dir, &args).0;
    let perf = perf_ok(dir, &["script", "-i", converted, "-F", fields]);
    let (want, perf) = match comm {
        Some(c) => (samples_of(&all, c), samples_of(&perf, c)),
        None => (all.clone(), perf),
    };
    assert!(want.lines().count() > 200, "{want}");
    assert!(
        perf == want,
        "perf script of {converted} differs from hrec script of {original}: {}",
        first_difference(&perf, &want)
    );
    args[2] = converted;
    let again = hrec_ok(dir, &args).0;
    assert!(
        again == all,
        "hrec script of {converted} differs from {original}'s: {}",
        first_difference(&again, &all)
    );
    let h = hrec_rows(dir, original);
    assert_eq!(hrec_rows(dir, converted), h, "hrec report of both");
    let of_comm = |rows: Vec<String>| -> Vec<String> {
        match comm {
            Some(c) => rows
                .into_iter()
                .filter(|r| r.split(' ').nth(2) == Some(c))
                .collect(),
            None => rows,
        }
    };
    let (p, h) = (of_comm(perf_rows(dir, converted)), of_comm(h));
    assert!(h.len() > 3, "{h:?}");
    assert_eq!(
        p, h,
        "perf report of {converted} vs hrec report of {original}"
    );
}

#[test]
fn frame_pointer_chains_read_in_perf_as_in_hrec() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    record_hotspots(d, "g.hrec", &["-g"]);
    let err = convert(d, "g.hrec", "g.perf.data");
    // The kernel symbols hrec kept are named as left out (perf reads its own).
    assert!(
        err.contains("hrec: note: perf.data has no place for: hrec's side blocks kallsyms"),
        "{err}"
    );
    check(
        d,
        "g.hrec",
        "g.perf.data",
        "comm,tid,time,event,period,ip",
        &[],
    );
    // The kernel's frames are named in perf (its kernel map was synthesized).
    let named = perf_ok(d, &["script", "-i", "g.perf.data", "-F", "ip,sym"]);
    assert!(
        named.contains("entry_SYSCALL_64") || named.contains("asm_exc_page_fault"),
        "{named}"
    );
    // The header features perf prints.
    let header = perf_ok(d, &["report", "-i", "g.perf.data", "--header-only"]);
    for want in [
        "# hostname : ",
        "# os release : ",
        "# arch : x86_64",
        "# nrcpus online : ",
        "# cmdline : ",
        "# event : name = cpu-clock",
        "# perf version : hrec ",
    ] {
        assert!(header.contains(want), "{want}: {header}");
    }
    // The CPU and NUMA topology, as perf's own recording on this machine has them (perf
    // prints them with -I); a node's free memory changes between the recordings.
    perf_ok(
        d,
        &[
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-o",
            "own.perf.data",
            "true",
        ],
    );
    let topology = |file: &str| -> Vec<String> {
        perf_ok(d, &["report", "-i", file, "--header-only", "-I"])
            .lines()
            .filter(|l| {
                l.starts_with("# sibling")
                    || l.strip_prefix("# CPU ")
                        .is_some_and(|c| c.starts_with(char::is_numeric))
                    || (l.starts_with("# node") && !l.contains("memory"))
            })
            .map(|l| l.split(", free =").next().unwrap_or(l).to_string())
            .collect()
    };
    let own = topology("own.perf.data");
    assert!(
        own.iter().any(|l| l.starts_with("# sibling threads")),
        "{own:?}"
    );
    assert_eq!(topology("g.perf.data"), own);
}

#[test]
fn stacks_unwound_while_recording_become_perfs_call_chains() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let work = [hotspots(), "1".to_string()];
    let work: Vec<&str> = work.iter().map(String::as_str).collect();
    let dwarf = ["-e", "cpu-clock", "-F", "2000", "--call-graph", "dwarf"];
    record(d, "d.hrec", &dwarf, &work);
    let err = convert(d, "d.hrec", "d.perf.data");
    assert!(
        err.contains("with the stacks unwound while recording as call chains"),
        "{err}"
    );
    check(
        d,
        "d.hrec",
        "d.perf.data",
        "comm,tid,time,event,period,ip",
        &["--no-inline"],
    );
    // Kept stacks: perf unwinds them itself and finds what hrec found, inline frames too.
    let raw = [
        "-e",
        "cpu-clock",
        "-F",
        "2000",
        "--call-graph",
        "dwarf,8192,raw",
    ];
    record(d, "r.hrec", &raw, &work);
    convert(d, "r.hrec", "r.perf.data");
    check(
        d,
        "r.hrec",
        "r.perf.data",
        "comm,tid,time,event,period,ip",
        &[],
    );
}

#[test]
fn a_system_wide_recording_converts_with_its_cpus() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    if !root_or_skip("hrec record -a") {
        return;
    }
    record(
        d,
        "a.hrec",
        &["-a", "-e", "cpu-clock", "-F", "1000", "-g"],
        &[&hotspots(), "1"],
    );
    convert(d, "a.hrec", "a.perf.data");
    check_of(
        d,
        "a.hrec",
        "a.perf.data",
        "comm,tid,cpu,time,event,period,ip",
        &[],
        Some("hotspots"),
    );
}

#[test]
fn off_cpu_time_is_perfs_offcpu_time_event() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let work = support::release_example("offcpu");
    if !root_or_skip("hrec record --off-cpu") {
        return;
    }
    record(
        d,
        "o.hrec",
        &["-e", "cpu-clock", "-g", "--off-cpu"],
        &[&work.to_string_lossy()],
    );
    let err = convert(d, "o.hrec", "o.perf.data");
    let fields = "comm,tid,time,event,period,ip";
    let want = hrec_ok(d, &["script", "-i", "o.hrec", "-F", fields]).0;
    let perf = perf_ok(d, &["script", "-i", "o.perf.data", "-F", fields]);
    assert!(perf.contains("offcpu-time:"), "{perf}");
    // hrec's `[preempted]` and `[no stack]` frames (address 0, first in an off-CPU chain)
    // are the one difference, and the note counts the samples that lose the first.
    let named = hrec_ok(d, &["script", "-i", "o.hrec"]).0;
    let preempted = named.matches("[preempted]").count();
    let marks = preempted + named.matches("[no stack]").count();
    let mut without = String::new();
    let mut after_offcpu = false;
    let mut dropped = 0;
    for l in want.split_inclusive('\n') {
        if after_offcpu && l.trim() == "0" {
            dropped += 1;
        } else {
            without.push_str(l);
        }
        after_offcpu = l.trim_end().ends_with("offcpu-time:");
    }
    assert_eq!(dropped, marks, "the marked off-CPU samples");
    assert!(
        perf == without,
        "perf script of the converted file: {}",
        first_difference(&perf, &without)
    );
    if preempted > 0 {
        assert!(
            err.contains(&format!(
                "the preempted mark of {preempted} offcpu-time samples"
            )),
            "{err}"
        );
    }
    let again = hrec_ok(d, &["script", "-i", "o.perf.data", "-F", fields]).0;
    assert!(
        again == perf,
        "hrec script of the converted file: {}",
        first_difference(&again, &perf)
    );
}

#[test]
fn an_existing_output_is_kept_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    record(d, "s.hrec", &["-e", "cpu-clock", "-F", "1000"], &["true"]);
    std::fs::write(d.join("out.data"), "keep").unwrap();
    let o = hrec_in(d, &["convert", "-i", "s.hrec", "-o", "out.data"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(
        err,
        "hrec: error: out.data exists; use --force to overwrite it\n"
    );
    assert_eq!(std::fs::read_to_string(d.join("out.data")).unwrap(), "keep");
    let o = hrec_in(
        d,
        &[
            "convert", "-i", "s.hrec", "--to", "json", "--pipe", "-o", "j",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).1.contains("--pipe is perf.data's pipe mode"),
        "{}",
        text(&o).1
    );
    let o = hrec_in(d, &["convert", "-i", "s.hrec", "-o", "s.hrec", "-f"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("is the input"), "{}", text(&o).1);
    hrec_ok(d, &["convert", "-i", "s.hrec", "-o", "out.data", "--force"]);
    let b = std::fs::read(d.join("out.data")).unwrap();
    assert_eq!(&b[..8], b"PERFILE2");
    // Nothing is left beside it.
    let names: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

/// hotspot's parser (Debian's `hotspot` package), which the GUI runs on a perf.data.
const PERFPARSER: &str = "/usr/lib/x86_64-linux-gnu/libexec/hotspot-perfparser";

/// The messages of `hotspot-perfparser --output`'s stream by type: after the magic
/// `QPERFSTREAM\0` and a u32 stream version, each message is a little-endian u32 length and a
/// payload whose first byte is its type. `None` when the stream does not parse.
fn perfparser_messages(stream: &[u8]) -> Option<std::collections::BTreeMap<u8, u64>> {
    let mut at = stream.strip_prefix(b"QPERFSTREAM\0")?.get(4..)?;
    let mut out = std::collections::BTreeMap::new();
    while !at.is_empty() {
        let len = u32::from_le_bytes(at.get(..4)?.try_into().ok()?) as usize;
        let payload = at.get(4..4 + len)?;
        *out.entry(*payload.first()?).or_insert(0) += 1;
        at = &at[4 + len..];
    }
    Some(out)
}

/// Runs hotspot's parser on `file`: its messages by type.
fn perfparser(dir: &Path, file: &str) -> std::collections::BTreeMap<u8, u64> {
    let out = dir.join(format!("{file}.qt"));
    let o = Command::new(PERFPARSER)
        .args(["--input", file, "--output"])
        .arg(&out)
        .current_dir(dir)
        .output()
        .expect("run hotspot-perfparser");
    assert!(
        o.status.success(),
        "hotspot-perfparser {file}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    perfparser_messages(&std::fs::read(&out).unwrap())
        .unwrap_or_else(|| panic!("{file}: hotspot-perfparser's stream does not parse"))
}

/// hotspot reads the converted files: its parser exits 0 with every sample. Which message
/// type is a sample is read off a file perf recorded in the same run (its count is perf's
/// sample count), so the check does not hang on one parser version's numbering.
#[test]
fn hotspots_parser_reads_every_sample() {
    if support::perf().is_none() {
        return;
    }
    if !Path::new(PERFPARSER).exists() {
        eprintln!("skipped: {PERFPARSER} is not installed (Debian's hotspot package)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let work = hotspots();
    perf_ok(
        d,
        &[
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-F",
            "2000",
            "-g",
            "-o",
            "perf.data",
            "--",
            &work,
            "1",
        ],
    );
    let perf_samples = perf_ok(d, &["script", "-i", "perf.data", "-F", "comm,tid,time"])
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count() as u64;
    let types: Vec<u8> = perfparser(d, "perf.data")
        .into_iter()
        .filter(|&(_, n)| n == perf_samples)
        .map(|(t, _)| t)
        .collect();
    assert_eq!(
        types.len(),
        1,
        "no one message type counts {perf_samples} samples: {types:?}"
    );
    let sample = types[0];
    for (name, opts) in [("g", &["-g"][..]), ("d", &["--call-graph", "dwarf"])] {
        let hrec_file = format!("{name}.hrec");
        record_hotspots(d, &hrec_file, opts);
        let converted = format!("{name}.perf.data");
        let err = convert(d, &hrec_file, &converted);
        let samples: u64 = err
            .rsplit_once(" records, ")
            .and_then(|(_, r)| r.split_once(" samples"))
            .and_then(|(n, _)| n.parse().ok())
            .unwrap_or_else(|| panic!("{err}"));
        assert!(samples > 100, "{err}");
        assert_eq!(
            perfparser(d, &converted).get(&sample).copied(),
            Some(samples),
            "hotspot-perfparser's samples of {converted}"
        );
        hotspot_gui_opens(d, &converted);
    }
}

/// The hotspot GUI, headless (`QT_QPA_PLATFORM=offscreen`), opens `file` and shows its
/// results: it runs the parser, builds its views and switches to the results page, which
/// Qt's offscreen platform marks with a second "does not support propagateSizeHints" line on
/// stderr (the first is the start page). A parser failure ("... exited with code") or the
/// process ending (a crash) before that fails; once there, hotspot is ended with SIGTERM and
/// must die of it, not of a crash of its own.
fn hotspot_gui_opens(dir: &Path, file: &str) {
    use std::io::BufRead as _;
    use std::os::unix::process::ExitStatusExt as _;
    let Ok(mut child) = Command::new("hotspot")
        .arg(file)
        .current_dir(dir)
        .env("QT_QPA_PLATFORM", "offscreen")
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join(".config"))
        .env("XDG_RUNTIME_DIR", dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
    else {
        eprintln!("skipped: the hotspot GUI is not installed");
        return;
    };
    // Read on its own thread to the end, so that hotspot never writes into a closed pipe.
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in stderr.lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let mut pages = 0;
    while pages < 2 {
        let Ok(line) = rx.recv() else { break };
        if line.contains("does not support propagateSizeHints") {
            pages += 1;
        }
        let failed = line.contains("exited with code");
        if !line.starts_with("kf.i18n") {
            seen.push(line);
        }
        assert!(!failed, "hotspot {file}:\n{}", seen.join("\n"));
    }
    assert_eq!(
        pages,
        2,
        "hotspot {file} ended before its results page ({:?}):\n{}",
        child.try_wait(),
        seen.join("\n")
    );
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    let _ = reader.join();
    assert_eq!(
        status.signal(),
        Some(libc::SIGTERM),
        "hotspot {file}: {status}:\n{}",
        seen.join("\n")
    );
}

/// The synthetic TopDown recordings of `examples/recordings/` (hrec's `-W -g` groups of
/// Granite Rapids and of Arrow Lake's P-cores and E-cores, made byte for byte in the kernel's
/// layout): perf reads every member of every group read, as hrec does, and the groups keep
/// their names (`perf evlist -g` shows perf's TopDown events, not `raw 0x400:HG`).
#[test]
fn topdown_group_recordings_read_in_perf_as_in_hrec() {
    if support::perf().is_none() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    for (model, group) in [
        ("graniterapids", "{slots,cycles:P,topdown-retiring,"),
        (
            "arrowlake",
            "{cpu_core/slots/,cpu_core/cycles/P,cpu_core/topdown-retiring/,",
        ),
    ] {
        let original = format!("examples/recordings/tdemo-{model}.synthetic.hrec");
        let converted = dir.path().join(format!("{model}.perf.data"));
        let converted = converted.to_str().unwrap();
        // In the repository's root, where the recordings' binary path leads.
        let (_, err) = hrec_ok(root, &["convert", "-i", &original, "-o", converted]);
        assert!(err.contains("hrec: wrote"), "{err}");
        let fields = "comm,tid,time,event,period,ip";
        let want = hrec_ok(root, &["script", "-i", &original, "-F", fields]).0;
        let perf = perf_ok(root, &["script", "-i", converted, "-F", fields]);
        assert!(want.lines().count() > 10_000, "{model}");
        assert!(
            perf == want,
            "{model}: perf script of the converted file: {}",
            first_difference(&perf, &want)
        );
        let evlist = perf_ok(root, &["evlist", "-g", "-i", converted]);
        assert!(evlist.contains(group), "{model}: {evlist}");
        let report = |file: &str| -> String {
            let out = hrec_ok(root, &["report", "--stdio", "-i", file]).0;
            out.lines()
                .filter(|l| !l.starts_with("# hrec report of "))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let (a, b) = (report(&original), report(converted));
        assert!(a.contains("TopDown totals"), "{a}");
        assert!(a == b, "{model}: hrec report: {}", first_difference(&b, &a));
    }
}

/// `-d` data addresses and `--all-cgroups` (CGROUP records, the cgroup of every sample) carry
/// over: perf's samples and cgroup rows are hrec's, and hrec reads the same data addresses
/// back.
#[test]
fn data_addresses_and_cgroups_carry_over() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    if !root_or_skip("hrec record --all-cgroups") {
        return;
    }
    record(
        d,
        "m.hrec",
        &["-d", "--all-cgroups", "-e", "page-faults", "-c", "1"],
        &[&hotspots(), "1"],
    );
    convert(d, "m.hrec", "m.perf.data");
    check(
        d,
        "m.hrec",
        "m.perf.data",
        "comm,tid,time,event,period,ip",
        &[],
    );
    let sorted = |tool: &str, file: &str, key: &str| -> Vec<String> {
        let args = [
            "report",
            "--stdio",
            "-n",
            "--no-children",
            "-g",
            "none",
            "--sort",
            key,
            "-i",
            file,
        ];
        match tool {
            "perf" => rows(&perf_ok(d, &args)),
            _ => rows(&hrec_ok(d, &args).0),
        }
    };
    let cgroups = sorted("hrec", "m.hrec", "cgroup,comm");
    assert!(!cgroups.is_empty());
    assert_eq!(sorted("perf", "m.perf.data", "cgroup,comm"), cgroups);
    let daddr = sorted("hrec", "m.hrec", "symbol_daddr,dso_daddr");
    assert!(daddr.len() > 100, "{daddr:?}");
    assert_eq!(
        sorted("hrec", "m.perf.data", "symbol_daddr,dso_daddr"),
        daddr
    );
}

/// Reads a JSON file of `dir`.
fn json_file(dir: &Path, file: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap())
        .unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// hrec's JSON is perf's, key for key. The one difference allowed is the README's naming of
/// a caller's return address by the function of the call before it, where that call ends
/// one function and the next begins (hrec `_start`, perf `_dl_start_user`): same address,
/// same object, another name, and rare.
fn assert_perfs_json(what: &str, hrec: &serde_json::Value, perf: &serde_json::Value) {
    assert_eq!(hrec["headers"], perf["headers"], "{what}");
    let (hs, ps) = (
        hrec["samples"].as_array().unwrap(),
        perf["samples"].as_array().unwrap(),
    );
    assert!(ps.len() > 10, "{what}: {} samples", ps.len());
    assert_eq!(hs.len(), ps.len(), "{what}");
    let (mut frames, mut renamed) = (0, 0);
    for (h, p) in hs.iter().zip(ps) {
        let keys = |v: &serde_json::Value| -> Vec<String> {
            v.as_object().unwrap().keys().cloned().collect()
        };
        assert_eq!(keys(h), keys(p), "{what}: the keys of a sample");
        for k in ["timestamp", "pid", "tid", "cpu", "comm"] {
            assert_eq!(h[k], p[k], "{what}: {k} of a sample at {}", p["timestamp"]);
        }
        let (hc, pc) = (
            h["callchain"].as_array().unwrap(),
            p["callchain"].as_array().unwrap(),
        );
        assert_eq!(
            hc.len(),
            pc.len(),
            "{what}: the frames of the sample at {}",
            p["timestamp"]
        );
        for (i, (x, y)) in hc.iter().zip(pc).enumerate() {
            frames += 1;
            if x != y {
                renamed += 1;
                assert!(
                    i > 0
                        && x["ip"] == y["ip"]
                        && x["dso"] == y["dso"]
                        && x["symbol"].is_string()
                        && y["symbol"].is_string(),
                    "{what}: frame {i}: hrec {x} perf {y}"
                );
            }
        }
    }
    assert!(
        renamed * 100 <= frames,
        "{what}: {renamed} of {frames} frames named otherwise"
    );
}

/// `hrec convert --to json -i perf.data`: the JSON `perf data convert --to-json` writes, on
/// perf's own recordings (frame-pointer and dwarf chains, tracepoints of the whole machine).
#[test]
fn json_of_perfs_files_is_perfs_json() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let work = hotspots();
    for (name, opts) in [
        ("fp", &["-e", "cpu-clock", "-F", "2000", "-g"][..]),
        (
            "dwarf",
            &["-e", "cpu-clock", "-F", "2000", "--call-graph", "dwarf"],
        ),
        (
            "tp",
            &["-e", "sched:sched_switch", "-e", "page-faults", "-c", "1"],
        ),
    ] {
        let data = format!("{name}.data");
        let mut args = vec!["record", "-q", "-o", &data];
        args.extend_from_slice(opts);
        args.extend(["--", &work, "1"]);
        perf_ok(d, &args);
        let perf_json = format!("{name}.perf.json");
        perf_ok(
            d,
            &["data", "convert", "--to-json", &perf_json, "-i", &data],
        );
        let hrec_json = format!("{name}.hrec.json");
        hrec_ok(
            d,
            &["convert", "--to", "json", "-i", &data, "-o", &hrec_json],
        );
        assert_perfs_json(name, &json_file(d, &hrec_json), &json_file(d, &perf_json));
    }
}

/// `--to json` of an hrec recording is the JSON of its perf.data, and that is perf's (the
/// data section's place aside: an hrec file has none).
#[test]
fn json_of_hrec_recordings_is_their_perf_datas() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (name, opts) in [("fp", &["-g"][..]), ("dwarf", &["--call-graph", "dwarf"])] {
        let original = format!("{name}.hrec");
        record_hotspots(d, &original, opts);
        let converted = format!("{name}.perf.data");
        convert(d, &original, &converted);
        let (a, b, p) = (
            format!("{name}.a.json"),
            format!("{name}.b.json"),
            format!("{name}.p.json"),
        );
        hrec_ok(d, &["convert", "--to", "json", "-i", &original, "-o", &a]);
        hrec_ok(d, &["convert", "--to", "json", "-i", &converted, "-o", &b]);
        perf_ok(d, &["data", "convert", "--to-json", &p, "-i", &converted]);
        let (mut a, mut b) = (json_file(d, &a), json_file(d, &b));
        assert_perfs_json(name, &b, &json_file(d, &p));
        // hrec's JSON of the original is that of the converted file, but for where the data
        // lies and when the file was written.
        for h in [&mut a, &mut b] {
            let h = h["headers"].as_object_mut().unwrap();
            for k in ["data-offset", "data-size", "feat-offset", "captured-on"] {
                h.remove(k);
            }
        }
        assert!(
            a == b,
            "{name}: hrec's JSON of {original} and of {converted} differ"
        );
    }
}

/// `--pipe` (and `-o -`): perf.data in pipe mode, the stream `perf record -o -` writes. perf
/// reads it, from a file and from stdin, as it reads the file-mode conversion (perf 6.1's
/// script adds the symbol to `ip` in pipe mode, so the file mode's side is asked for it).
#[test]
fn pipe_mode_reads_in_perf_as_the_file_mode_does() {
    if support::perf().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    record_hotspots(d, "g.hrec", &["-g"]);
    convert(d, "g.hrec", "file.data");
    let (_, err) = hrec_ok(d, &["convert", "-i", "g.hrec", "--pipe", "-o", "pipe.data"]);
    assert!(err.contains("hrec: wrote pipe.data ("), "{err}");
    let o = hrec_in(d, &["convert", "-i", "g.hrec", "-o", "-"]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(
        o.stdout,
        std::fs::read(d.join("pipe.data")).unwrap(),
        "-o - writes what --pipe does"
    );
    assert_eq!(&o.stdout[..16], b"PERFILE2\x10\0\0\0\0\0\0\0");
    let fields = "comm,tid,time,event,period,ip";
    let file = perf_ok(
        d,
        &["script", "-i", "file.data", "-F", &format!("{fields},sym")],
    );
    let pipe = perf_ok(d, &["script", "-i", "pipe.data", "-F", fields]);
    assert!(file.lines().count() > 200);
    assert!(pipe == file, "{}", first_difference(&pipe, &file));
    // hrec reads a pipe as perf does: `ip` gets its `sym` there too.
    let hrec_pipe = hrec_ok(d, &["script", "-i", "pipe.data", "-F", fields]).0;
    let hrec_file = hrec_ok(
        d,
        &["script", "-i", "file.data", "-F", &format!("{fields},sym")],
    )
    .0;
    assert!(hrec_pipe.lines().count() > 200);
    assert!(
        hrec_pipe == hrec_file,
        "{}",
        first_difference(&hrec_pipe, &hrec_file)
    );
    // From stdin, as `hrec convert -o - | perf report -i -`.
    let mut args = REPORT.to_vec();
    args.extend(["-i", "-"]);
    let report = Command::new("perf")
        .args(&args)
        .current_dir(d)
        .stdin(std::fs::File::open(d.join("pipe.data")).unwrap())
        .output()
        .unwrap();
    assert!(report.status.success());
    assert_eq!(
        rows(&String::from_utf8_lossy(&report.stdout)),
        perf_rows(d, "file.data")
    );
    // The event's name from its EVENT_UPDATE record (perf's evlist reads none from a pipe).
    let report = perf_ok(d, &["report", "--stdio", "-i", "pipe.data"]);
    assert!(report.contains(" of event 'cpu-clock'"), "{report}");
}

/// Tracepoints: the converted file carries their formats (TRACING_DATA; in pipe mode a
/// HEADER_TRACING_DATA record and the data after it), so perf prints every sample with its
/// fields as hrec does, from the file and from the pipe. Without them perf refuses the file
/// ("incompatible file format").
#[test]
fn tracepoint_samples_print_in_perf_with_their_fields() {
    if support::perf().is_none() {
        return;
    }
    if !support::privilege::is_root()
        || !Path::new("/sys/kernel/tracing/events/sched/sched_switch/id").exists()
    {
        eprintln!("skipped: recording tracepoints needs root and tracefs here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let work = support::release_example("offcpu");
    record(
        d,
        "tp.hrec",
        &["-e", "sched:sched_switch", "-e", "sched:sched_wakeup"],
        &[&work.to_string_lossy()],
    );
    convert(d, "tp.hrec", "tp.perf.data");
    hrec_ok(d, &["convert", "-i", "tp.hrec", "--pipe", "-o", "tp.pipe"]);
    let want = hrec_ok(d, &["script", "-i", "tp.hrec"]).0;
    assert!(want.contains("prev_comm=offcpu"), "{want}");
    for file in ["tp.perf.data", "tp.pipe"] {
        let perf = perf_ok(d, &["script", "-i", file]);
        assert!(perf == want, "{file}: {}", first_difference(&perf, &want));
    }
}

/// A hybrid part's recording (the synthetic Alder Lake file of `support::adl`: P-core and
/// E-core TopDown groups): the converted header says which CPUs are P-cores and which
/// E-cores (HYBRID_TOPOLOGY, from the core PMUs' `cpus` hrec kept), and perf reads every
/// group member of both core types as hrec does.
#[test]
fn a_hybrid_recording_keeps_its_core_types() {
    if support::perf().is_none() {
        return;
    }
    let Some(pdir) = support::metricrec::perfmon_dir() else {
        return;
    };
    let plan = support::adl::adl_plan(&pdir);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    support::adl::write_adl(d, &plan);
    convert(d, "hrec.data", "adl.perf.data");
    // (perf prints HYBRID_TOPOLOGY with -I only.)
    let header = perf_ok(d, &["report", "-i", "adl.perf.data", "--header-only", "-I"]);
    for want in ["cpu_core cpu list : 0-15", "cpu_atom cpu list : 16-23"] {
        assert!(header.contains(want), "{want}: {header}");
    }
    // perf.data to perf.data keeps them.
    convert(d, "adl.perf.data", "again.perf.data");
    let again = perf_ok(
        d,
        &["report", "-i", "again.perf.data", "--header-only", "-I"],
    );
    for want in ["cpu_core cpu list : 0-15", "cpu_atom cpu list : 16-23"] {
        assert!(again.contains(want), "{want}: {again}");
    }
    let fields = "tid,time,event,period,ip";
    let want = hrec_ok(d, &["script", "-i", "hrec.data", "-F", fields]).0;
    let perf = perf_ok(d, &["script", "-i", "adl.perf.data", "-F", fields]);
    assert!(want.contains("cpu_atom/"), "{want}");
    assert!(perf == want, "{}", first_difference(&perf, &want));
}

/// Bad input and output are one line each: a recording cut in the middle converts what was
/// written before the cut (perf reads it), a missing input and an output that cannot be
/// written are errors that name them, and nothing is left behind.
#[test]
fn a_cut_recording_converts_what_is_readable_and_bad_paths_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Many blocks (a block holds up to 128 KiB of records).
    record(
        d,
        "g.hrec",
        &["-e", "cpu-clock", "-F", "20000", "-g"],
        &[&hotspots(), "2"],
    );
    let whole = std::fs::read(d.join("g.hrec")).unwrap();
    std::fs::write(d.join("cut.hrec"), &whole[..whole.len() * 2 / 3]).unwrap();
    let (_, err) = hrec_ok(d, &["convert", "-i", "cut.hrec", "-o", "cut.data"]);
    assert!(
        err.contains("hrec: warning: cut.hrec is truncated"),
        "{err}"
    );
    let written: u64 = err
        .rsplit_once("hrec: wrote cut.data (")
        .and_then(|(_, r)| r.split_once(" records"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(written > 10, "{err}");
    if support::perf().is_some() {
        let perf = perf_ok(d, &["script", "-i", "cut.data", "-F", "comm,tid,time"]);
        assert!(perf.lines().count() > 10, "{perf}");
    }
    for (args, want) in [
        (
            &["convert", "-i", "missing.hrec", "-o", "x.data"][..],
            "hrec: error: cannot open missing.hrec",
        ),
        (
            &["convert", "-i", "g.hrec", "-o", "no/such/dir/x.data"],
            "hrec: error: cannot write no/such/dir/x.data: ",
        ),
    ] {
        let o = hrec_in(d, args);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with(want), "{err}");
    }
    let left: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') || n == "x.data")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
