//! `hrec export --format pprof` on a real recording of the optimised example program (DWARF,
//! an inlined function): the file decodes (prost here; `protoc` with the wire schema in
//! `tests/fixtures/pprof/` and `go tool pprof` when installed), every id it references
//! exists, each event's value column adds up to `hrec report --json`'s totals, and the inlined
//! `mix` is a `Line` of the location in `hot_multiply`. The retire-latency column is checked
//! on synthetic recordings in `tests/report_synthetic.rs`.

mod support;

use std::collections::HashSet;
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
        assert!(
            mappings.contains(&l.mapping_id),
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

#[test]
fn pprof_export_of_a_real_recording_matches_the_report() {
    let bin = support::release_example("hotspots");
    let dir = tempfile::tempdir().unwrap();
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
        let c = column(&pb, name);
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
        assert_eq!(pb.string_table[pb.sample_type[c].unit as usize], "count");
    }
    assert_eq!(
        pb.sample.iter().map(|s| s.value[samples_col]).sum::<i64>(),
        all
    );
    let first = events[0]["event"].as_str().unwrap();
    assert_eq!(pb.string_table[pb.default_sample_type as usize], first);
    assert!(
        pb.time_nanos > 1_600_000_000_000_000_000,
        "{}",
        pb.time_nanos
    );
    assert!(pb.duration_nanos > 0);
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
    let weight: i64 = pb
        .sample
        .iter()
        .filter(|s| inlined.contains(&s.location_id[0]))
        .map(|s| s.value[samples_col])
        .sum();
    assert!(weight > 0);

    protoc_decodes(&path, first);
    go_pprof_reads(&path);

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
    for (file, want) in [
        ("missing.hrec", "No such file"),
        ("junk", "is not an hrec file"),
    ] {
        let o = hrec_in(dir.path(), &["export", "--format", "pprof", "-i", file]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{file}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("hrec: error: ") && err.contains(want),
            "{err}"
        );
    }
    assert!(!dir.path().join("profile.pb.gz").exists());
    // The format is required and checked.
    for args in [&["export"][..], &["export", "--format", "svg"][..]] {
        let o = hrec_in(dir.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(text(&o).1.contains("--format"), "{args:?}");
    }
}

/// `protoc --decode` with the wire schema, when protoc is installed.
fn protoc_decodes(path: &Path, event: &str) {
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
    for s in [
        format!("string_table: {event:?}"),
        "string_table: \"samples\"".to_string(),
        "string_table: \"hotspots::hot_multiply\"".to_string(),
        "has_inline_frames: true".to_string(),
    ] {
        assert!(out.contains(&s), "protoc output lacks {s}");
    }
}

/// `go tool pprof -top`, when Go is installed (optional).
fn go_pprof_reads(path: &Path) {
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
    assert!(out.contains("hotspots::hot_multiply"), "{out}");
}
