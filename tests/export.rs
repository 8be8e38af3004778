//! `hrec export --format pprof` on a real recording of the optimised example program (DWARF,
//! an inlined function) and on the checked-in recordings (perf.data and hrec files): the file
//! decodes (prost here; `protoc` with the wire schema in `tests/fixtures/pprof/` and
//! `go tool pprof` when installed), every id it references exists, each event's value column
//! adds up to `hrec report --json`'s totals, and the inlined `mix` is a `Line` of the location
//! in `hot_multiply`. A cpu-clock column is `cpu`/`nanoseconds` with the period type and
//! period to match; the duration is the span of the samples `hrec script --ns` prints; every
//! mapping is a recorded MMAP2 (`hrec script --show-mmap-events`) with its path and offset,
//! every location's address lies inside its mapping, and functions start at their line in
//! the source. A memory recording's samples carry their accesses as labels and a
//! `load-latency` column (hand-built, `support::memdata`). The retire-latency column is checked on synthetic recordings in
//! `tests/report_synthetic.rs`.
//!
//! `hrec export --format firefox` of the checked-in recordings, of a fresh recording of
//! `examples/threads` and of a perf.data recorded with `perf record -k`: the gunzipped JSON
//! has the processed-profile tables with every reference in range
//! (`support::check_processed_profile`), one thread per `(pid, tid)` with `hrec script`'s
//! samples and names, the report's sample count and periods (the weights), sample times equal
//! to `script --ns`'s, the report's functions, and inline frames of their own. Per-event
//! threads, counters and markers are checked exactly in `tests/report_synthetic.rs`.

mod support;

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use hrec::output::pprof::proto::Profile;
use serde_json::Value;
use support::{hrec_in, text};

/// Every string index is in the table, every id is unique and non-zero, and every id a
/// sample, location or line refers to exists.
fn check_references(pb: &Profile) {
    let st = &pb.string_table;
    assert_eq!(st.first().map(String::as_str), Some(""), "string_table[0]");
    let ok = |i: i64, what: &str| {
        assert!(
            i >= 0 && (i as usize) < st.len(),
            "{what}: string index {i} outside a table of {}",
            st.len()
        );
    };
    for v in pb.sample_type.iter().chain(&pb.period_type) {
        ok(v.r#type, "sample_type.type");
        ok(v.unit, "sample_type.unit");
    }
    ok(pb.default_sample_type, "default_sample_type");
    pb.comment.iter().for_each(|&c| ok(c, "comment"));
    let unique = |ids: Vec<u64>, what: &str| -> HashSet<u64> {
        let set: HashSet<u64> = ids.iter().copied().collect();
        assert_eq!(set.len(), ids.len(), "duplicate {what} ids");
        assert!(!set.contains(&0), "{what} id 0");
        set
    };
    let mappings = unique(pb.mapping.iter().map(|m| m.id).collect(), "mapping");
    let functions = unique(pb.function.iter().map(|f| f.id).collect(), "function");
    let locations = unique(pb.location.iter().map(|l| l.id).collect(), "location");
    for m in &pb.mapping {
        ok(m.filename, "mapping.filename");
        ok(m.build_id, "mapping.build_id");
        assert!(m.filename != 0, "mapping {} has no file name", m.id);
    }
    for f in &pb.function {
        ok(f.name, "function.name");
        ok(f.system_name, "function.system_name");
        ok(f.filename, "function.filename");
        assert!(f.name != 0, "function {} has no name", f.id);
    }
    for l in &pb.location {
        // 0: no mapping (an address outside every mapping).
        assert!(
            l.mapping_id == 0 || mappings.contains(&l.mapping_id),
            "location {}: mapping",
            l.id
        );
        assert!(!l.line.is_empty(), "location {} has no line", l.id);
        for line in &l.line {
            assert!(functions.contains(&line.function_id), "location {}", l.id);
        }
    }
    for s in &pb.sample {
        assert_eq!(s.value.len(), pb.sample_type.len());
        assert!(!s.location_id.is_empty());
        for id in &s.location_id {
            assert!(locations.contains(id), "sample location {id}");
        }
        for l in &s.label {
            ok(l.key, "label.key");
            ok(l.str, "label.str");
            ok(l.num_unit, "label.num_unit");
        }
    }
}

fn column(pb: &Profile, name: &str) -> usize {
    pb.sample_type
        .iter()
        .position(|v| pb.string_table[v.r#type as usize] == name)
        .unwrap_or_else(|| panic!("no sample type {name}"))
}

fn label<'a>(pb: &'a Profile, s: &hrec::output::pprof::proto::Sample, key: &str) -> &'a str {
    s.label
        .iter()
        .find(|l| pb.string_table[l.key as usize] == key)
        .map_or("", |l| pb.string_table[l.str as usize].as_str())
}

/// The source line of the first occurrence of `needle` in `file`, 1-based.
fn line_of(file: &Path, needle: &str) -> i64 {
    let text = std::fs::read_to_string(file).unwrap();
    text.lines().position(|l| l.contains(needle)).unwrap() as i64 + 1
}

/// cpu-clock and task-clock count nanoseconds of CPU time.
fn is_clock(event: &str) -> bool {
    event.starts_with("cpu-clock") || event.starts_with("task-clock")
}

/// The value column of an event: `cpu` for a clock, else its name.
fn event_column(pb: &Profile, event: &str) -> usize {
    column(pb, if is_clock(event) { "cpu" } else { event })
}

/// `hrec` in `dir`, which must succeed; its stdout.
fn hrec_ok(dir: &Path, args: &[&str]) -> String {
    let o = hrec_in(dir, args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "hrec {args:?}: {err}");
    out
}

/// The sample times `hrec script --ns` prints (`comm pid SECONDS.NANOS: ...`), in ns.
fn script_sample_times(dir: &Path, input: &[&str]) -> Vec<u64> {
    let mut args = vec!["script", "--ns"];
    args.extend(input);
    hrec_ok(dir, &args)
        .lines()
        .filter(|l| !l.starts_with('\t'))
        .filter_map(|l| {
            l.split_ascii_whitespace().find_map(|w| {
                let (s, ns) = w.strip_suffix(':')?.split_once('.')?;
                (ns.len() == 9).then_some(())?;
                Some(s.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?)
            })
        })
        .collect()
}

/// A file mapping as `hrec script --show-mmap-events` prints it.
#[derive(Debug)]
struct MmapRecord {
    start: u64,
    len: u64,
    pgoff: u64,
    path: String,
}

/// The MMAP/MMAP2 records of `hrec script --show-mmap-events`, as perf prints them:
/// `PERF_RECORD_MMAP2 pid/tid: [0xSTART(0xLEN) @ PGOFF ...]: prot path`.
fn script_mmaps(dir: &Path, input: &[&str]) -> Vec<MmapRecord> {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let mut args = vec!["script", "--show-mmap-events"];
    args.extend(input);
    hrec_ok(dir, &args)
        .lines()
        .filter(|l| l.contains("PERF_RECORD_MMAP"))
        .map(|l| {
            let (_, range) = l.split_once(": [").unwrap();
            let (start, rest) = range.split_once('(').unwrap();
            let (len, rest) = rest.split_once(") @ ").unwrap();
            let pgoff = rest.split([' ', ']']).next().unwrap();
            let (_, tail) = rest.split_once("]: ").unwrap();
            let (_prot, path) = tail.split_once(' ').unwrap();
            MmapRecord {
                start: hex(start),
                len: hex(len),
                pgoff: hex(pgoff),
                path: path.to_string(),
            }
        })
        .collect()
}

/// The units, period, duration and start time of an export of `input` (run in `dir`), and
/// its mappings and locations against the recorded MMAPs. `first` is the first event;
/// `start` the window the wall-clock start must lie in (`None`: the file has none, 0).
fn check_time_and_mappings(
    dir: &Path,
    input: &[&str],
    pb: &Profile,
    first: &str,
    start: Option<(i64, i64)>,
) {
    let st = |i: i64| pb.string_table[i as usize].as_str();
    let types: Vec<(&str, &str)> = pb
        .sample_type
        .iter()
        .map(|v| (st(v.r#type), st(v.unit)))
        .collect();
    assert!(types.contains(&("samples", "count")), "{types:?}");
    let want = if is_clock(first) {
        ("cpu", "nanoseconds")
    } else {
        (first, "count")
    };
    assert_eq!(types[0], want, "{types:?}");
    assert_eq!(st(pb.default_sample_type), want.0);
    let pt = pb.period_type.as_ref().expect("period_type");
    assert_eq!((st(pt.r#type), st(pt.unit)), want);
    // Frequency mode: the mean period of the first event's samples.
    let samples_col = column(pb, "samples");
    let (sum, n) = pb
        .sample
        .iter()
        .filter(|s| label(pb, s, "event") == first)
        .fold((0, 0), |(a, b), s| {
            (a + s.value[0], b + s.value[samples_col])
        });
    assert!(n > 0);
    assert_eq!(pb.period, (sum + n / 2) / n, "period");
    // The duration is the span of the samples.
    let times = script_sample_times(dir, input);
    let (lo, hi) = (times.iter().min().unwrap(), times.iter().max().unwrap());
    assert!(
        (pb.duration_nanos - (hi - lo) as i64).abs() <= 1000,
        "duration {} vs samples from {lo} to {hi}",
        pb.duration_nanos
    );
    match start {
        Some((from, to)) => assert!(
            from <= pb.time_nanos && pb.time_nanos <= to,
            "time_nanos {} outside {from}..{to}",
            pb.time_nanos
        ),
        None => assert_eq!(pb.time_nanos, 0),
    }
    // Every location inside its mapping; every location of a file with DWARF has one.
    let mapping = |id: u64| pb.mapping.iter().find(|m| m.id == id).unwrap();
    for l in &pb.location {
        if l.mapping_id == 0 {
            continue;
        }
        let m = mapping(l.mapping_id);
        assert!(
            m.memory_start <= l.address && l.address < m.memory_limit,
            "location {l:?} outside {m:?}"
        );
    }
    let with_source = |l: &&hrec::output::pprof::proto::Location| {
        l.line.iter().any(|x| {
            let f = pb.function.iter().find(|f| f.id == x.function_id).unwrap();
            f.filename != 0
        })
    };
    assert!(pb.location.iter().filter(with_source).count() > 0);
    assert!(
        pb.location
            .iter()
            .filter(with_source)
            .all(|l| l.mapping_id != 0)
    );
    // Every file mapping is (part of) a recorded one: its path, and its offset that of the
    // record at its start. The main binary's is the record itself.
    let mmaps = script_mmaps(dir, input);
    for m in pb
        .mapping
        .iter()
        .filter(|m| !st(m.filename).starts_with('['))
    {
        let r = mmaps
            .iter()
            .find(|r| {
                r.path == st(m.filename)
                    && r.start <= m.memory_start
                    && m.memory_limit <= r.start + r.len
                    && m.file_offset - r.pgoff == m.memory_start - r.start
            })
            .unwrap_or_else(|| panic!("mapping {m:?} ({}) is no recorded MMAP", st(m.filename)));
        if m.id == 1 {
            assert_eq!(
                (m.memory_start, m.memory_limit, m.file_offset),
                (r.start, r.start + r.len, r.pgoff),
                "{}",
                r.path
            );
        }
    }
}

/// The `start_line` of the function named `name` (which must be there).
fn start_line(pb: &Profile, name: &str) -> i64 {
    pb.function
        .iter()
        .find(|f| pb.string_table[f.name as usize] == name)
        .unwrap_or_else(|| panic!("no function {name}"))
        .start_line
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

#[test]
fn pprof_export_of_a_real_recording_matches_the_report() {
    let bin = support::release_example("hotspots");
    let dir = tempfile::tempdir().unwrap();
    let started = now_ns();
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "-F",
            "4000",
            "-g",
            "--",
            bin.to_str().unwrap(),
            "1",
        ],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let o = hrec_in(dir.path(), &["export", "--format", "pprof"]);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("wrote profile.pb.gz"), "{err}");
    let path = dir.path().join("profile.pb.gz");
    let pb = support::read_pprof(&path);
    check_references(&pb);
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    eprintln!(
        "profile.pb.gz {} bytes, hrec.data {} bytes; {} pprof samples, {} locations, {} functions",
        size(&path),
        size(&dir.path().join("hrec.data")),
        pb.sample.len(),
        pb.location.len(),
        pb.function.len()
    );

    // Per event: the column sum is the report's period, the samples labelled with the event
    // add up to its sample count.
    let o = hrec_in(dir.path(), &["report", "--json"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    let events = j["events"].as_array().unwrap();
    assert!(!events.is_empty());
    let samples_col = column(&pb, "samples");
    let mut all = 0;
    for e in events {
        let name = e["event"].as_str().unwrap();
        let c = event_column(&pb, name);
        let period: i64 = pb.sample.iter().map(|s| s.value[c]).sum();
        assert_eq!(Some(period as u64), e["period"].as_u64(), "{name}");
        let samples: i64 = pb
            .sample
            .iter()
            .filter(|s| label(&pb, s, "event") == name)
            .map(|s| s.value[samples_col])
            .sum();
        assert_eq!(Some(samples as u64), e["samples"].as_u64(), "{name}");
        all += samples;
        let unit = if is_clock(name) {
            "nanoseconds"
        } else {
            "count"
        };
        assert_eq!(pb.string_table[pb.sample_type[c].unit as usize], unit);
    }
    assert_eq!(
        pb.sample.iter().map(|s| s.value[samples_col]).sum::<i64>(),
        all
    );
    let first = events[0]["event"].as_str().unwrap();
    check_time_and_mappings(dir.path(), &[], &pb, first, Some((started, now_ns())));
    // The main binary comes first, with its path and build-id.
    let main = &pb.mapping[0];
    assert_eq!(
        pb.string_table[main.filename as usize],
        bin.to_str().unwrap()
    );
    assert!(main.build_id != 0 && main.has_inline_frames && main.has_line_numbers);
    assert!(
        pb.sample
            .iter()
            .all(|s| label(&pb, s, "comm") == "hotspots")
    );

    // `mix` inlined into `hot_multiply`: one location whose lines end with mix (at its line
    // in mix) and then hot_multiply (at the call), and it carries samples.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/hotspots.rs");
    let mix_line = line_of(&src, "x.wrapping_mul(0x5851_f42d_4c95_7f2d)");
    let call_line = line_of(&src, "x = mix(x, i);");
    let name = |id: u64| {
        let f = &pb.function[pb.function.iter().position(|f| f.id == id).unwrap()];
        pb.string_table[f.name as usize].as_str()
    };
    let inlined: Vec<u64> = pb
        .location
        .iter()
        .filter(|l| {
            let n = l.line.len();
            n >= 2
                && name(l.line[n - 1].function_id) == "hotspots::hot_multiply"
                && name(l.line[n - 2].function_id) == "hotspots::mix"
                && l.line[n - 1].line == call_line
                && (n > 2 || l.line[0].line == mix_line)
        })
        .map(|l| l.id)
        .collect();
    assert!(
        !inlined.is_empty(),
        "no location with mix inlined in hot_multiply"
    );
    // Functions start at their definitions, inlined ones too.
    assert_eq!(
        start_line(&pb, "hotspots::hot_multiply"),
        line_of(&src, "fn hot_multiply(")
    );
    assert_eq!(start_line(&pb, "hotspots::mix"), line_of(&src, "fn mix("));
    assert_eq!(
        start_line(&pb, "hotspots::hot_scan"),
        line_of(&src, "fn hot_scan(")
    );
    let weight: i64 = pb
        .sample
        .iter()
        .filter(|s| inlined.contains(&s.location_id[0]))
        .map(|s| s.value[samples_col])
        .sum();
    assert!(weight > 0);

    let col = if is_clock(first) { "cpu" } else { first };
    protoc_decodes(&path, col, &["string_table: \"hotspots::hot_multiply\""]);
    go_pprof_reads(&path, "hotspots::hot_multiply");

    // An output that cannot be written: one line naming it, exit 1, and stdout with `-o -`.
    let o = hrec_in(
        dir.path(),
        &["export", "--format", "pprof", "-o", "no/such/dir/p.pb.gz"],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("hrec: error: cannot write no/such/dir/p.pb.gz: "),
        "{err}"
    );
    let o = hrec_in(dir.path(), &["export", "--format", "pprof", "-o", "-"]);
    assert!(o.status.success());
    assert_eq!(o.stdout[..2], [0x1f, 0x8b], "gzip on stdout");
}

#[test]
fn bad_inputs_and_formats_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("junk"), b"not a recording at all").unwrap();
    for (file, want, format) in [
        ("missing.hrec", "No such file", "pprof"),
        ("junk", "is not an hrec file", "pprof"),
        ("missing.hrec", "No such file", "firefox"),
        ("junk", "is not an hrec file", "firefox"),
    ] {
        let o = hrec_in(dir.path(), &["export", "--format", format, "-i", file]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{file}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("hrec: error: ") && err.contains(want),
            "{err}"
        );
    }
    assert!(!dir.path().join("profile.pb.gz").exists());
    assert!(!dir.path().join("profile.json.gz").exists());
    // Files cut anywhere (header, attrs, records): exported as far as they read (with a
    // warning) or one error line; never a panic.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    for name in ["callchain.hrec", "callchain.perf.data"] {
        let full = std::fs::read(fixtures.join(name)).unwrap();
        for cut in [16, full.len() / 3, full.len() * 2 / 3, full.len() - 8] {
            let file = format!("cut-{cut}-{name}");
            std::fs::write(dir.path().join(&file), &full[..cut]).unwrap();
            let o = hrec_in(
                dir.path(),
                &[
                    "export",
                    "--format",
                    "firefox",
                    "-i",
                    &file,
                    "-o",
                    "cut.json.gz",
                ],
            );
            let (_, err) = text(&o);
            assert!(!err.contains("panicked"), "{file}: {err}");
            match o.status.code() {
                Some(0) => {
                    let j = support::read_firefox(&dir.path().join("cut.json.gz"));
                    support::check_processed_profile(&j);
                }
                Some(1) => {
                    assert_eq!(err.lines().count(), 1, "{file}: {err}");
                    assert!(err.starts_with("hrec: error: "), "{file}: {err}");
                }
                c => panic!("{file}: exit {c:?}: {err}"),
            }
        }
    }
    // An output that cannot be written.
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings/plain.hrec");
    let o = hrec_in(
        dir.path(),
        &[
            "export",
            "--format",
            "firefox",
            "-i",
            input.to_str().unwrap(),
            "-o",
            "no/such/dir/p.json.gz",
        ],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("hrec: error: cannot write no/such/dir/p.json.gz: "),
        "{err}"
    );
    // The format is required and checked.
    for args in [&["export"][..], &["export", "--format", "svg"][..]] {
        let o = hrec_in(dir.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(text(&o).1.contains("--format"), "{args:?}");
    }
}

/// `protoc --decode` with the wire schema, when protoc is installed: the column `event`,
/// its unit, and the `extra` lines are in the text.
fn protoc_decodes(path: &Path, event: &str, extra: &[&str]) {
    if !Command::new("protoc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("skipped: protoc not installed");
        return;
    }
    use std::io::Read as _;
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut raw)
        .unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pprof");
    let mut child = Command::new("protoc")
        .arg("--decode=perftools.profiles.Profile")
        .arg("-I")
        .arg(&fixtures)
        .arg("profile.proto")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&raw));
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "protoc: {err}");
    assert!(
        out.starts_with("sample_type {"),
        "{}",
        &out[..200.min(out.len())]
    );
    let unit = if event == "cpu" {
        "nanoseconds"
    } else {
        "count"
    };
    let mut want = vec![
        format!("string_table: {event:?}"),
        format!("string_table: {unit:?}"),
        "string_table: \"samples\"".to_string(),
        "has_inline_frames: true".to_string(),
        "duration_nanos: ".to_string(),
        "period_type {".to_string(),
        "memory_start: ".to_string(),
        "start_line: ".to_string(),
    ];
    want.extend(extra.iter().map(|s| s.to_string()));
    for s in want {
        assert!(out.contains(&s), "protoc output lacks {s}");
    }
}

/// `go tool pprof -top`, when Go is installed (optional): it shows `function` and, for a
/// time column, the profile's type, duration and total as times.
fn go_pprof_reads(path: &Path, function: &str) {
    if !Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("skipped: go not installed (go tool pprof)");
        return;
    }
    let o = Command::new("go")
        .args(["tool", "pprof", "-top", "-symbolize=none"])
        .arg(path)
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "go tool pprof: {err}");
    assert!(out.contains(function), "{out}");
    let pb = support::read_pprof(path);
    if pb.string_table[pb.default_sample_type as usize] != "cpu" {
        return;
    }
    // `Type: cpu`, `Duration: 300ms, Total samples = 280ms (93.33%)`.
    assert!(out.lines().any(|l| l == "Type: cpu"), "{out}");
    let total = out
        .lines()
        .find_map(|l| l.split_once("Total samples = "))
        .and_then(|(head, tail)| {
            assert!(head.starts_with("Duration: "), "{out}");
            tail.split_whitespace().next()
        })
        .unwrap_or_else(|| panic!("no total: {out}"));
    let unit = total.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    assert!(
        ["ns", "us", "µs", "ms", "s", "mins", "hrs"].contains(&unit),
        "total {total} is not a time: {out}"
    );
}

/// The checked-in recordings (perf.data files of `perf record`, hrec files) exported: the
/// report's totals, time units, period, duration, mappings against the recorded MMAPs, the
/// fixture program's functions starting at their lines in `work.c`.
#[test]
fn pprof_export_of_the_checked_in_recordings() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let root = fixtures.join("root");
    let src = root.join("tmp/hrec-fixture/work.c");
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "plain.perf.data",
        "callchain.perf.data",
        "callchain-z.perf.data",
        "plain.hrec",
        "callchain.hrec",
    ] {
        let input = fixtures.join(name);
        let input = [
            "-i",
            input.to_str().unwrap(),
            "--symfs",
            root.to_str().unwrap(),
        ];
        let out = dir.path().join(format!("{name}.pb.gz"));
        let mut args = vec!["export", "--format", "pprof", "-o", out.to_str().unwrap()];
        args.extend(input);
        hrec_ok(dir.path(), &args);
        let pb = support::read_pprof(&out);
        check_references(&pb);
        // Without memory fields, no memory labels and no load-latency column.
        assert!(
            pb.sample_type
                .iter()
                .all(|v| pb.string_table[v.r#type as usize] != "load-latency")
        );
        assert!(
            pb.sample
                .iter()
                .all(|s| label(&pb, s, "data_address").is_empty())
        );
        let mut args = vec!["report", "--json"];
        args.extend(input);
        let j: Value = serde_json::from_str(&hrec_ok(dir.path(), &args)).unwrap();
        let events = j["events"].as_array().unwrap();
        for e in events {
            let event = e["event"].as_str().unwrap();
            let c = event_column(&pb, event);
            let period: i64 = pb.sample.iter().map(|s| s.value[c]).sum();
            assert_eq!(Some(period as u64), e["period"].as_u64(), "{name}: {event}");
        }
        let first = events[0]["event"].as_str().unwrap();
        assert!(is_clock(first), "{name}: {first}");
        // perf.data has no start time without `perf record -k` (CLOCK_DATA).
        let start = name
            .ends_with(".hrec")
            .then_some((1_600_000_000_000_000_000, now_ns()));
        check_time_and_mappings(dir.path(), &input, &pb, first, start);
        assert_eq!(
            pb.string_table[pb.mapping[0].filename as usize], "/tmp/hrec-fixture/work",
            "{name}"
        );
        for (function, def) in [("hot", "uint64_t hot("), ("warm", "uint64_t warm(")] {
            assert_eq!(
                start_line(&pb, function),
                line_of(&src, def),
                "{name}: {function}"
            );
        }
        if name.starts_with("callchain") {
            // mix is inlined into hot.
            assert_eq!(
                start_line(&pb, "mix"),
                line_of(&src, "static inline uint64_t mix("),
                "{name}"
            );
        }
        protoc_decodes(&out, "cpu", &[]);
        go_pprof_reads(&out, "hot");
    }
}

/// A perf.data recorded with `perf record -k CLOCK_MONOTONIC` carries CLOCK_DATA: the
/// profile's start is the first sample's wall-clock time.
#[test]
fn perf_data_with_clock_data_has_a_start_time() {
    let Some(perf) = support::perf() else {
        return;
    };
    let bin = support::release_example("hotspots");
    let dir = tempfile::tempdir().unwrap();
    let started = now_ns();
    let o = Command::new(perf)
        .args([
            "record",
            "-q",
            "-k",
            "CLOCK_MONOTONIC",
            "-e",
            "cpu-clock:u",
            "-F",
            "1000",
        ])
        .args(["-o", "perf.data", "--"])
        .arg(&bin)
        .arg("1")
        .current_dir(dir.path())
        .output()
        .unwrap();
    if !o.status.success() {
        eprintln!("skipped: perf record -k failed: {}", text(&o).1);
        return;
    }
    let input = ["-i", "perf.data"];
    hrec_ok(
        dir.path(),
        &["export", "--format", "pprof", "-i", "perf.data"],
    );
    let pb = support::read_pprof(&dir.path().join("profile.pb.gz"));
    check_references(&pb);
    check_time_and_mappings(
        dir.path(),
        &input,
        &pb,
        "cpu-clock:u",
        Some((started, now_ns())),
    );
    go_pprof_reads(&dir.path().join("profile.pb.gz"), "hotspots::hot_multiply");

    // The Firefox export of the same file: checked against the report and script, its
    // reference time is the first sample's wall-clock time, as pprof's start, and the
    // samples in `mix` inlined into `hot_multiply` have both frames, mix nearer the leaf
    // (below what is inlined into mix itself).
    let out = dir.path().join("profile.json.gz");
    let threads = check_firefox_export(dir.path(), &input, &out);
    let j = support::read_firefox(&out);
    let start = j["meta"]["startTime"].as_f64().unwrap();
    assert!(
        (start - pb.time_nanos as f64 / 1e6).abs() < 1e-3,
        "{start} ms, pprof {}",
        pb.time_nanos
    );
    assert!(
        threads.iter().flat_map(|t| &t.stacks).any(|s| s
            .windows(2)
            .any(|w| w[0] == "hotspots::mix" && w[1] == "hotspots::hot_multiply")),
        "no sample in mix inlined into hot_multiply"
    );
}

/// The report's rows of the first event for `--sort KEYS` (`-g none`), as `(key, samples)`.
fn report_rows(dir: &Path, input: &[&str], sort: &str) -> Vec<(Value, u64)> {
    let mut args = vec!["report", "--json", "-g", "none", "--sort", sort];
    args.extend(input);
    let j: Value = serde_json::from_str(&hrec_ok(dir, &args)).unwrap();
    j["events"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["key"].clone(), r["samples"].as_u64().unwrap()))
        .collect()
}

/// Per `(pid, tid)`: samples and the thread's last name, from `hrec script -F
/// comm,pid,tid` (one line per sample: `COMM PID/TID`).
fn script_threads(dir: &Path, input: &[&str]) -> HashMap<(String, String), (u64, String)> {
    let mut args = vec!["script", "-F", "comm,pid,tid"];
    args.extend(input);
    let mut m = HashMap::new();
    for l in hrec_ok(dir, &args).lines() {
        let (comm, ids) = l.trim().rsplit_once(' ').unwrap();
        let (pid, tid) = ids.split_once('/').unwrap();
        let e = m
            .entry((pid.to_string(), tid.to_string()))
            .or_insert((0, String::new()));
        e.0 += 1;
        e.1 = comm.trim().to_string();
    }
    m
}

/// Exports `input` as a Firefox profile and checks it against the report of the same file:
/// the schema and references ([`support::check_processed_profile`]), one thread per
/// `(pid, tid)` with `hrec script`'s samples and thread name, the total sample count and the
/// summed weights (periods) of the report, CPU deltas equal to the periods (µs) for a clock,
/// sample times equal to `hrec script --ns`'s less the first, and every function the report
/// shows with self samples in at least that many stacks. Returns the threads.
fn check_firefox_export(dir: &Path, input: &[&str], out: &Path) -> Vec<support::FxThread> {
    let mut args = vec!["export", "--format", "firefox", "-o", out.to_str().unwrap()];
    args.extend(input);
    let o = hrec_in(dir, &args);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(&format!("wrote {}", out.display())), "{err}");
    let j = support::read_firefox(out);
    let threads = support::check_processed_profile(&j);
    assert_eq!(j["meta"]["symbolicated"], true);

    let mut args = vec!["report", "--json"];
    args.extend(input);
    let r: Value = serde_json::from_str(&hrec_ok(dir, &args)).unwrap();
    let event = &r["events"][0];
    assert_eq!(r["events"].as_array().unwrap().len(), 1, "one event");
    let samples: usize = threads.iter().map(|t| t.stacks.len()).sum();
    assert_eq!(Some(samples as u64), r["samples"].as_u64(), "sample count");
    let weight: i64 = threads.iter().flat_map(|t| &t.weights).sum();
    assert_eq!(
        Some(weight as u64),
        event["period"].as_u64(),
        "weights = periods"
    );
    if is_clock(event["event"].as_str().unwrap()) {
        for t in &threads {
            for (w, c) in t.weights.iter().zip(&t.cpu_deltas) {
                assert_eq!((*w / 1000) as f64, *c, "CPU delta of a clock sample");
            }
        }
    }

    // One thread per (pid, tid), with the report's samples and name.
    let want = script_threads(dir, input);
    let got: HashMap<(String, String), (u64, String)> = threads
        .iter()
        .map(|t| {
            (
                (t.pid.clone(), t.tid.clone()),
                (t.stacks.len() as u64, t.name.clone()),
            )
        })
        .collect();
    assert_eq!(got.len(), threads.len(), "a (pid, tid) twice");
    assert_eq!(got, want);
    for t in &threads {
        if t.pid == t.tid {
            assert_eq!(
                t.process_name, t.name,
                "a process is named by its main thread"
            );
        }
    }

    // The times are the samples' perf-clock times less the first.
    let mut script = script_sample_times(dir, input);
    script.sort_unstable();
    let first = script[0];
    let mut want: Vec<f64> = script.iter().map(|t| (t - first) as f64 / 1e6).collect();
    let mut got: Vec<f64> = threads.iter().flat_map(|t| t.times.clone()).collect();
    got.sort_by(f64::total_cmp);
    want.sort_by(f64::total_cmp);
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-5, "sample at {g} ms, script says {w} ms");
    }

    // Every function the report shows with self samples is in at least as many of the
    // profile's stacks (the leaf location's outermost frame: inlined callees come below it).
    for (k, n) in report_rows(dir, input, "sym") {
        let sym = k["sym"].as_str().unwrap();
        let name = sym.split_once("] ").map_or(sym, |(_, n)| n);
        if n > 0 && !name.starts_with("0x") {
            let with = threads
                .iter()
                .flat_map(|t| &t.stacks)
                .filter(|s| s.iter().any(|f| f == name))
                .count() as u64;
            assert!(with >= n, "{name}: {n} self samples, in {with} stacks");
        }
    }
    threads
}

#[test]
fn firefox_export_of_the_checked_in_recordings() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let root = fixtures.join("root");
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "plain.perf.data",
        "callchain.perf.data",
        "plain.hrec",
        "callchain.hrec",
    ] {
        let input = fixtures.join(name);
        let input = [
            "-i",
            input.to_str().unwrap(),
            "--symfs",
            root.to_str().unwrap(),
        ];
        let out = dir.path().join(format!("{name}.json.gz"));
        let threads = check_firefox_export(dir.path(), &input, &out);
        let j = support::read_firefox(&out);
        assert_eq!(j["meta"]["product"], "work", "{name}");
        assert!(threads.iter().all(|t| t.name == "work"), "{name}");
        let start = j["meta"]["startTime"].as_f64().unwrap();
        if name.ends_with(".hrec") {
            // The wall clock of the first sample, in ms since the epoch.
            assert!(
                start > 1.6e12 && start < now_ns() as f64 / 1e6,
                "{name}: {start}"
            );
        } else {
            assert_eq!(start, 0.0, "{name}: perf.data without -k has no wall clock");
        }
        if name.starts_with("callchain") {
            // Two threads; mix is inlined into hot: a frame of its own under hot's, and
            // the stacks go down from main or worker.
            assert_eq!(threads.len(), 2, "{name}");
            let inlined = threads
                .iter()
                .flat_map(|t| &t.stacks)
                .filter(|s| s.len() >= 2 && s[0] == "mix" && s[1] == "hot")
                .count();
            assert!(inlined > 0, "{name}: no stack with mix inlined in hot");
            for t in &threads {
                let root = if t.pid == t.tid { "main" } else { "worker" };
                assert!(
                    t.stacks.iter().any(|s| s.contains(&root.to_string())),
                    "{name}: {} has no {root}",
                    t.tid
                );
            }
        }
    }
}

#[test]
fn firefox_export_of_a_fresh_multithreaded_recording_has_a_thread_per_tid() {
    let bin = support::example("threads");
    let dir = tempfile::tempdir().unwrap();
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "-g",
            "-o",
            "t.hrec",
            "--",
            bin.to_str().unwrap(),
            "0.3",
        ],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let threads =
        check_firefox_export(dir.path(), &["-i", "t.hrec"], &dir.path().join("t.json.gz"));
    // The main thread and three named workers in one process, the child process (the
    // program again, comm `threads`) with its own pid.
    let names: Vec<&str> = threads.iter().map(|t| t.name.as_str()).collect();
    for n in ["worker-0", "worker-1", "worker-2"] {
        assert_eq!(
            names.iter().filter(|&&m| m == n).count(),
            1,
            "{n}: {names:?}"
        );
    }
    let mains: Vec<&support::FxThread> = threads.iter().filter(|t| t.pid == t.tid).collect();
    assert_eq!(mains.len(), 2, "{names:?}");
    assert!(mains.iter().all(|t| t.name == "threads"), "{names:?}");
    let parent = &threads.iter().find(|t| t.name == "worker-0").unwrap().pid;
    assert_eq!(threads.iter().filter(|t| &t.pid == parent).count(), 4);
    // The default output name, and `-o -` writes gzip to stdout.
    let o = hrec_in(
        dir.path(),
        &["export", "--format", "firefox", "-i", "t.hrec"],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(text(&o).1.contains("wrote profile.json.gz"));
    assert!(dir.path().join("profile.json.gz").exists());
    let o = hrec_in(
        dir.path(),
        &["export", "--format", "firefox", "-i", "t.hrec", "-o", "-"],
    );
    assert!(o.status.success());
    assert_eq!(o.stdout[..2], [0x1f, 0x8b], "gzip on stdout");
}

/// A memory recording (hand-built `perf mem record`: loads with known data addresses, data
/// sources and latencies, `support::memdata`) exports each sample's access as labels:
/// `data_address`, `data_symbol` and `data_object` as `report --sort symbol_daddr,dso_daddr`
/// names them, `mem` as the data source's level; the `load-latency` column (cycles) adds up
/// to each address's known latencies, and each sample's leaf is the function that loaded.
#[test]
fn pprof_export_labels_memory_accesses() {
    use support::memdata::{accesses, build, data_name, tmp};
    let dir = tmp("export-mem");
    let probe = build(&dir, &[]);
    let acc = accesses(&probe.objects);
    let built = build(&dir, &acc);
    let out = dir.join("mem.pb.gz");
    hrec_ok(
        &dir,
        &[
            "export",
            "--format",
            "pprof",
            "-i",
            "perf.data",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    let pb = support::read_pprof(&out);
    check_references(&pb);
    let lat = column(&pb, "load-latency");
    assert_eq!(pb.string_table[pb.sample_type[lat].unit as usize], "cycles");
    let name = |addr: u64| data_name(&built.objects, addr);
    // The truth per (address, symbol, object, level, function): summed latencies, samples.
    let mut want: HashMap<Vec<String>, (i64, i64)> = HashMap::new();
    for a in &acc {
        let (sym, obj) = name(a.addr);
        let key = vec![
            format!("{:#x}", a.addr),
            sym,
            obj,
            a.src.mem_name(),
            support::memdata::FUNCS[a.func].to_string(),
        ];
        let e = want.entry(key).or_default();
        e.0 += a.weight as i64;
        e.1 += 1;
    }
    let function_of = |location_id: u64| -> String {
        let l = pb.location.iter().find(|l| l.id == location_id).unwrap();
        let f = pb
            .function
            .iter()
            .find(|f| f.id == l.line[0].function_id)
            .unwrap();
        pb.string_table[f.name as usize].clone()
    };
    let samples = column(&pb, "samples");
    let mut got: HashMap<Vec<String>, (i64, i64)> = HashMap::new();
    for s in &pb.sample {
        let key = vec![
            label(&pb, s, "data_address").to_string(),
            label(&pb, s, "data_symbol").to_string(),
            label(&pb, s, "data_object").to_string(),
            label(&pb, s, "mem").to_string(),
            function_of(s.location_id[0]),
        ];
        let e = got.entry(key).or_default();
        e.0 += s.value[lat];
        e.1 += s.value[samples];
    }
    assert_eq!(got, want);
}
