//! perf.data reading, on files built byte by byte in perf's layout.

use super::bytes::whole_records;
use super::features::MISC_BUILD_ID_SIZE;
use super::layout::{HEADER_SIZE, u16_at, u32_at, u64_at};
use super::to_meta::SW_DUMMY;
use super::*;
use crate::decode::kind;
use crate::event::Attr;
use crate::event::attr::{flag, sample, types};

const KERNEL_ID: &str = "1111111111111111111111111111111111111111";

/// A VER7 (128-byte) attr as perf 6.1 writes it.
fn attr(config: u64, period: u64, flags: u64) -> Vec<u8> {
    let mut a = Attr::new(types::SOFTWARE, config);
    a.size = 128;
    a.sample_period_or_freq = period;
    a.sample_type = sample::IP | sample::TID | sample::TIME | sample::ID | sample::PERIOD;
    a.read_format = 4 | 16; // ID | LOST
    a.flags = flags | flag::SAMPLE_ID_ALL;
    a.to_bytes()[..128].to_vec()
}

fn string(s: &str) -> Vec<u8> {
    let len = (s.len() + 1).next_multiple_of(8);
    let mut v = (len as u32).to_le_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v.resize(4 + len, 0);
    v
}

fn record(t: u32, misc: u16, body: &[u8]) -> Vec<u8> {
    let mut v = t.to_le_bytes().to_vec();
    v.extend_from_slice(&misc.to_le_bytes());
    v.extend_from_slice(&((8 + body.len()) as u16).to_le_bytes());
    v.extend_from_slice(body);
    v
}

fn words(w: &[u64]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Two events as `perf record -a` makes them (cpu-clock sampling, dummy tracking), ids 10,
/// 11 (cpu-clock on CPUs 0, 1) and 20, 21 (dummy), and a few records.
struct Synth {
    attrs: Vec<(Vec<u8>, Vec<u64>, &'static str)>,
    records: Vec<u8>,
    features: Vec<(u32, Vec<u8>)>,
}

fn synth() -> Synth {
    let attrs = vec![
        (
            attr(0, 4000, flag::FREQ | flag::DISABLED | flag::INHERIT),
            vec![10, 11],
            "cpu-clock",
        ),
        (
            attr(SW_DUMMY, 4000, flag::FREQ | flag::MMAP | flag::COMM),
            vec![20, 21],
            "dummy:HG",
        ),
    ];
    let mut records = Vec::new();
    // perf's map of the kernel image: pid -1, pgoff = where `_text` was.
    let mut mmap = words(&[u64::from(u32::MAX), 0xffff_ffff_8100_0000, 0x100_0000]);
    mmap.extend(words(&[0xffff_ffff_8100_0000]));
    mmap.extend_from_slice(b"[kernel.kallsyms]_text\0\0");
    mmap.extend_from_slice(&words(&[0, 0, 20]));
    records.extend(record(kind::MMAP, 1, &mmap));
    // COMM of 7/7 "work", trailer {pid, tid} {time} {id}.
    let mut comm = words(&[7 | (7 << 32)]);
    comm.extend_from_slice(b"work\0\0\0\0");
    comm.extend_from_slice(&words(&[7 | (7 << 32), 100, 20]));
    records.extend(record(kind::COMM, 2, &comm));
    for (i, ip) in [0x401000u64, 0x401010, 0xffff_ffff_8100_0010]
        .iter()
        .enumerate()
    {
        let misc = if *ip > 0xffff_0000_0000_0000 { 1 } else { 2 };
        let body = words(&[
            *ip,
            7 | (7 << 32),
            200 + i as u64,
            10 + (i as u64 % 2),
            250_000,
        ]);
        records.extend(record(kind::SAMPLE, misc, &body));
    }
    records.extend(record(user::FINISHED_ROUND, 0, &[]));
    let mut idx = words(&[4]);
    for (id, cpu) in [(10u64, 0u64), (11, 1), (20, 0), (21, 1)] {
        idx.extend(words(&[id, 0, cpu, u64::MAX]));
    }
    records.extend(record(user::ID_INDEX, 0, &idx));
    let mut desc = words(&[]);
    desc.extend((attrs.len() as u32).to_le_bytes());
    desc.extend(128u32.to_le_bytes());
    for (a, ids, name) in &attrs {
        desc.extend(a);
        desc.extend((ids.len() as u32).to_le_bytes());
        desc.extend(string(name));
        desc.extend(words(ids));
    }
    let build_id = |misc: u16, id: &[u8], path: &str| {
        let mut body = (-1i32).to_le_bytes().to_vec();
        let mut b = id.to_vec();
        b.resize(24, 0);
        if misc & MISC_BUILD_ID_SIZE != 0 {
            b[20] = id.len() as u8;
        }
        body.extend(b);
        let mut p = path.as_bytes().to_vec();
        p.resize((path.len() + 1).next_multiple_of(8), 0);
        body.extend(p);
        record(user::HEADER_BUILD_ID, misc, &body)
    };
    let mut ids = build_id(1 | MISC_BUILD_ID_SIZE, &[0x11; 20], "[kernel.kallsyms]");
    ids.extend(build_id(2, &[0xab; 20], "/usr/bin/work"));
    let mut pmus = 2u32.to_le_bytes().to_vec();
    pmus.extend(1u32.to_le_bytes());
    pmus.extend(string("software"));
    pmus.extend(9u32.to_le_bytes());
    pmus.extend(string("msr"));
    let mut cmdline = 3u32.to_le_bytes().to_vec();
    for a in ["perf", "record", "-a"] {
        cmdline.extend(string(a));
    }
    let features = vec![
        (feature::BUILD_ID, ids),
        (feature::HOSTNAME, string("box")),
        (feature::NRCPUS, words(&[2 | (2 << 32)])),
        (feature::CMDLINE, cmdline),
        (feature::EVENT_DESC, desc),
        (feature::PMU_MAPPINGS, pmus),
    ];
    Synth {
        attrs,
        records,
        features,
    }
}

/// The file-mode layout perf writes: header, ids, attrs, data, feature table, features.
fn file(s: &Synth) -> Vec<u8> {
    let mut ids_at = Vec::new();
    let mut b = vec![0u8; HEADER_SIZE as usize];
    for (_, ids, _) in &s.attrs {
        ids_at.push((b.len() as u64, ids.len() as u64 * 8));
        b.extend(words(ids));
    }
    let attrs_off = b.len() as u64;
    for ((a, _, _), (off, size)) in s.attrs.iter().zip(&ids_at) {
        b.extend(a);
        b.extend(words(&[*off, *size]));
    }
    let attrs_size = b.len() as u64 - attrs_off;
    let data_off = b.len() as u64;
    b.extend(&s.records);
    let data_size = b.len() as u64 - data_off;
    let mut bits = [0u64; 4];
    let table = b.len();
    b.resize(table + 16 * s.features.len(), 0);
    for (k, (f, d)) in s.features.iter().enumerate() {
        bits[*f as usize / 64] |= 1 << (f % 64);
        let off = b.len() as u64;
        b[table + 16 * k..table + 16 * k + 16].copy_from_slice(&words(&[off, d.len() as u64]));
        b.extend(d);
    }
    let header = [
        u64::from_le_bytes(MAGIC),
        HEADER_SIZE,
        128 + 16,
        attrs_off,
        attrs_size,
        data_off,
        data_size,
        0,
        0,
        bits[0],
        bits[1],
        bits[2],
        bits[3],
    ];
    b[..104].copy_from_slice(&words(&header));
    b
}

/// The same recording in pipe mode.
fn pipe(s: &Synth) -> Vec<u8> {
    let mut b = MAGIC.to_vec();
    b.extend(words(&[PIPE_HEADER_SIZE]));
    for (a, ids, _) in &s.attrs {
        let mut body = a.clone();
        body.extend(words(ids));
        b.extend(record(user::HEADER_ATTR, 0, &body));
    }
    for (f, d) in &s.features {
        if *f == feature::BUILD_ID {
            continue;
        }
        let mut body = words(&[u64::from(*f)]);
        body.extend(d);
        b.extend(record(user::HEADER_FEATURE, 0, &body));
    }
    b.extend(record(user::HEADER_FEATURE, 0, &words(&[32])));
    b.extend(&s.records);
    b.extend(&s.features[0].1); // HEADER_BUILD_ID records, as pipe mode sends them
    b
}

fn read(b: &[u8], running: Option<&str>) -> Result<PerfData, PerfDataError> {
    from_bytes(Path::new("t.data"), b, running)
}

/// perf.data's CPUID header (`GenuineIntel,6,151,2`, decimal) becomes the cpuid string the
/// E-core rules read (`GenuineIntel-6-97-2`), in file and pipe mode alike.
#[test]
fn the_cpuid_header_names_the_cpu() {
    let mut s = synth();
    s.features
        .push((feature::CPUID, string("GenuineIntel,6,151,2")));
    // perf writes the feature sections in the order of their bits.
    s.features.sort_by_key(|(f, _)| *f);
    for b in [file(&s), pipe(&s)] {
        let p = read(&b, Some(KERNEL_ID)).unwrap();
        assert_eq!(p.meta.cpuid, "GenuineIntel-6-97-2");
    }
}

#[test]
fn file_mode_gives_events_ids_roles_and_side_blocks() {
    let p = read(&file(&synth()), Some(KERNEL_ID)).unwrap();
    let m = &p.meta;
    let names: Vec<(&str, &str, Option<&str>)> = m
        .events
        .iter()
        .map(|e| (e.name.as_str(), e.role.name(), e.pmu.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("cpu-clock", "sampler", Some("software")),
            ("dummy:HG", "tracking", Some("software"))
        ]
    );
    let ids: Vec<(u64, i32)> = m.events[0].ids.iter().map(|i| (i.id, i.cpu)).collect();
    assert_eq!(ids, [(10, 0), (11, 1)]);
    assert_eq!(m.hostname, "box");
    assert_eq!(m.command_line, ["perf", "record", "-a"]);
    assert_eq!(m.nr_cpus, 2);
    // No CPUID header: no cpuid (no E-core rules are guessed).
    assert_eq!(m.cpuid, "");
    assert_eq!(p.trailer.samples, 3);
    assert_eq!(p.trailer.samples_per_event, [3, 0]);
    assert_eq!(p.trailer.records, 5, "user records are not counted");
    assert_eq!(p.info.user_records.get(&user::ID_INDEX), Some(&1));
    assert!(p.info.truncated.is_none(), "{:?}", p.info.truncated);
    assert_eq!(
        p.info.kernel,
        KernelCheck::Matches {
            build_id: KERNEL_ID.into()
        }
    );
    assert_eq!(
        String::from_utf8(p.side("build-ids").unwrap()).unwrap(),
        format!("{} /usr/bin/work\n", "ab".repeat(20))
    );
    // The block is the data section as perf wrote it, byte for byte: the kernel records
    // and perf's own, which decode as unknown records.
    assert_eq!(p.blocks, [synth().records]);
    let kernel_records: Vec<u8> = kernel_records(&p.blocks).concat();
    assert_eq!(kernel_records.len() as u64, p.trailer.record_bytes);
}

fn kernel_records(blocks: &[Vec<u8>]) -> Vec<Vec<u8>> {
    blocks
        .iter()
        .flat_map(|b| crate::decode::records(b).map(|r| r.unwrap()))
        .filter(|r| r.header.type_ < 64)
        .map(|r| r.bytes.to_vec())
        .collect()
}

#[test]
fn pipe_mode_reads_like_file_mode() {
    let s = synth();
    let f = read(&file(&s), Some(KERNEL_ID)).unwrap();
    let p = read(&pipe(&s), Some(KERNEL_ID)).unwrap();
    assert!(p.info.pipe);
    assert_eq!(p.meta.events, f.meta.events);
    assert_eq!(kernel_records(&p.blocks), kernel_records(&f.blocks));
    assert_eq!(p.trailer, f.trailer);
    assert_eq!(p.info.build_ids, f.info.build_ids);
    assert_eq!(p.info.kernel, f.info.kernel);
    assert!(!p.info.features.iter().any(|n| n == "feature 32"));
}

#[test]
fn kernel_symbols_only_from_the_same_kernel() {
    let b = file(&synth());
    let other = "22".repeat(20);
    let p = read(&b, Some(&other)).unwrap();
    assert!(matches!(p.info.kernel, KernelCheck::Differs { .. }));
    assert_eq!(p.kernel_unresolved(), Unresolved::KernelMismatch);
    assert!(p.side("kallsyms").is_none());
    let p = read(&b, None).unwrap();
    assert!(matches!(
        p.info.kernel,
        KernelCheck::Differs { running: None, .. }
    ));
    let mut s = synth();
    s.features.retain(|(f, _)| *f != feature::BUILD_ID);
    let p = read(&file(&s), Some(KERNEL_ID)).unwrap();
    assert_eq!(p.info.kernel, KernelCheck::NoBuildId);
    assert_eq!(p.kernel_unresolved(), Unresolved::NoKernelBuildId);
}

#[test]
fn kernel_symbols_only_where_the_kernel_was_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let kallsyms = dir.path().join("kallsyms");
    let b = file(&synth());
    let read_with = |text: &str| {
        std::fs::write(&kallsyms, text).unwrap();
        let running = Running {
            build_id: Some(KERNEL_ID),
            release: None,
            kallsyms: Some(&kallsyms),
        };
        from_bytes_with(Path::new("t.data"), b.clone(), &running).unwrap()
    };
    // Loaded where it was: this machine's symbols name the kernel sample.
    let p = read_with(
        "ffffffff81000000 T _text\nffffffff81000010 T do_work\nffffffff81000100 T next\n",
    );
    assert_eq!(p.kernel_relocated(), None);
    let (sym, _) = p
        .kernel_symbols()
        .lookup(0xffff_ffff_8100_0010)
        .map(|(s, o)| (s.name.clone(), o))
        .unwrap();
    assert_eq!(&*sym, "do_work");
    assert!(p.side("kallsyms").is_some());
    // Loaded elsewhere (KASLR): none, with the reason.
    let p = read_with("ffffffff9a000000 T _text\nffffffff9a000010 T do_work\n");
    assert_eq!(
        p.kernel_relocated(),
        Some((0xffff_ffff_8100_0000, 0xffff_ffff_9a00_0000))
    );
    assert!(p.kernel_symbols().is_empty());
    assert_eq!(p.kernel_unresolved(), Unresolved::KernelRelocated);
    assert!(p.side("kallsyms").is_none());
}

/// Without a kernel build-id (`perf record -z`, pipe mode), this machine's symbols are used when
/// the recording's kernel release is this machine's and `_text` is where the recording saw it.
#[test]
fn kernel_symbols_without_a_build_id_from_the_same_release_and_boot() {
    let dir = tempfile::tempdir().unwrap();
    let kallsyms = dir.path().join("kallsyms");
    let mut s = synth();
    s.features.retain(|(f, _)| *f != feature::BUILD_ID);
    s.features.push((feature::OSRELEASE, string("6.1.0-test")));
    s.features.sort_by_key(|(f, _)| *f);
    let b = file(&s);
    let read_with = |release: &str, text: &str| {
        std::fs::write(&kallsyms, text).unwrap();
        let running = Running {
            build_id: Some(KERNEL_ID),
            release: Some(release),
            kallsyms: Some(&kallsyms),
        };
        from_bytes_with(Path::new("t.data"), b.clone(), &running).unwrap()
    };
    let here = "ffffffff81000000 T _text\nffffffff81000010 T do_work\n";
    let p = read_with("6.1.0-test", here);
    assert!(
        matches!(p.info.kernel, KernelCheck::SameRelease { .. }),
        "{:?} {:?}",
        p.info.kernel,
        p.meta.kernel_release
    );
    assert!(p.kernel_symbols().lookup(0xffff_ffff_8100_0010).is_some());
    // Another boot: `_text` moved.
    let p = read_with(
        "6.1.0-test",
        "ffffffff9a000000 T _text\nffffffff9a000010 T do_work\n",
    );
    assert!(p.kernel_symbols().is_empty());
    assert_eq!(p.kernel_unresolved(), Unresolved::KernelRelocated);
    // Another release: nothing ties the recording to this kernel.
    let p = read_with("6.2.0-other", here);
    assert_eq!(p.info.kernel, KernelCheck::NoBuildId);
    assert!(p.kernel_symbols().is_empty());
    assert_eq!(p.kernel_unresolved(), Unresolved::NoKernelBuildId);
}

#[test]
fn build_id_of_elf_notes() {
    let mut notes = Vec::new();
    // An unrelated note first ("Xen", type 5, 4 bytes), then the GNU build-id.
    notes.extend(words(&[]));
    for (name, t, desc) in [
        (&b"Xen\0"[..], 5u32, &[1u8, 2, 3, 4][..]),
        (b"GNU\0", 3, &[0x4a; 20]),
    ] {
        notes.extend((name.len() as u32).to_le_bytes());
        notes.extend((desc.len() as u32).to_le_bytes());
        notes.extend(t.to_le_bytes());
        notes.extend(name);
        notes.extend(desc);
    }
    assert_eq!(build_id_from_notes(&notes).unwrap(), "4a".repeat(20));
    assert_eq!(build_id_from_notes(&notes[..40]), None);
}

#[test]
fn every_cut_gives_a_partial_recording_or_one_error() {
    let s = synth();
    // A pipe stream has no length: one cut at a record boundary looks like its end.
    for (b, is_pipe) in [(file(&s), false), (pipe(&s), true)] {
        let full = read(&b, None).unwrap();
        for cut in 0..b.len() {
            match read(&b[..cut], None) {
                Ok(p) => {
                    assert!(p.trailer.samples <= full.trailer.samples, "cut {cut}");
                    if p.trailer.records < full.trailer.records && !is_pipe {
                        assert!(p.info.truncated.is_some(), "cut {cut}");
                    }
                }
                Err(e) => assert_eq!(e.to_string().lines().count(), 1, "cut {cut}: {e}"),
            }
        }
    }
}

#[test]
fn damaged_counts_and_sections_are_survived() {
    let s = synth();
    let good = file(&s);
    // Every byte of the header, attrs and feature area set to 0xff in turn (the data
    // section is covered by the cut test and the decoder's own tests).
    let data_off = u64_at(&good, 40).unwrap() as usize;
    let data_end = data_off + u64_at(&good, 48).unwrap() as usize;
    for i in (0..data_off).chain(data_end..good.len()) {
        let mut b = good.clone();
        b[i] = 0xff;
        if let Err(e) = read(&b, None) {
            assert_eq!(e.to_string().lines().count(), 1, "byte {i}: {e}");
        }
    }
    // A huge EVENT_DESC count: names are lost, the attr section still gives the events.
    let mut s2 = synth();
    for (f, d) in &mut s2.features {
        if *f == feature::EVENT_DESC {
            d[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        }
    }
    let p = read(&file(&s2), None).unwrap();
    assert!(p.info.warnings.iter().any(|w| w.contains("EVENT_DESC")));
    assert_eq!(p.meta.events[0].name, "cpu-clock");
    assert_eq!(p.meta.events[1].name, "dummy");
    assert_eq!(p.trailer.samples, 3);
}

#[test]
fn an_unfinished_header_reads_to_the_end_of_the_file() {
    let mut b = file(&synth());
    b[48..56].fill(0);
    let data_off = u64_at(&b, 40).unwrap() as usize;
    let records = synth().records.len();
    b.truncate(data_off + records);
    let p = read(&b, None).unwrap();
    assert_eq!(p.trailer.samples, 3);
    assert!(
        p.info
            .truncated
            .as_deref()
            .unwrap()
            .contains("did not finish")
    );
}

#[test]
fn other_variants_are_refused_by_name() {
    let mut b = file(&synth());
    b[..8].copy_from_slice(&MAGIC_BIG_ENDIAN);
    assert!(
        read(&b, None)
            .unwrap_err()
            .to_string()
            .contains("big-endian")
    );
    b[..8].copy_from_slice(&MAGIC_V1);
    assert!(
        read(&b, None)
            .unwrap_err()
            .to_string()
            .contains("version 1")
    );
    assert!(is_perf_data(b"PERFILE2\x68"));
    assert!(!is_perf_data(b"HRECDATA"));
}

#[test]
fn a_file_mode_data_section_is_read_from_the_file_in_chunks_with_the_same_result() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.data");
    let b = file(&synth());
    std::fs::write(&path, &b).unwrap();
    let whole = from_bytes(&path, &b, Some(KERNEL_ID)).unwrap();
    let streamed = PerfData::read(&path).unwrap();
    let d = streamed.data_file().expect("read in chunks");
    assert!(streamed.blocks.is_empty());
    assert_eq!(d.chunk_count(), 1);
    assert_eq!(
        d.chunks().collect::<Vec<_>>().concat(),
        whole.blocks.concat()
    );
    assert_eq!(streamed.trailer.samples, whole.trailer.samples);
    assert_eq!(streamed.trailer.records, whole.trailer.records);
    assert_eq!(streamed.meta.events.len(), whole.meta.events.len());
    // The file shrinks after it was opened: the walk stops and says why.
    let (start, end) = (d.start as usize, d.end as usize);
    std::fs::write(&path, &b[..(start + end) / 2]).unwrap();
    let got = d.chunks().collect::<Vec<_>>().concat();
    assert!(got.len() < end - start);
    let why = d.take_error().expect("a reason");
    assert!(why.contains("s.data"), "{why}");
}

/// A record damaged in the file is named as the whole-file path names it, not as a file
/// that changed after it was opened.
#[test]
fn a_damaged_record_read_in_chunks_is_named_by_its_offset_and_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.data");
    let mut b = file(&synth());
    let start = u64_at(&b, 40).unwrap() as usize;
    let second = start + usize::from(u16_at(&b, start + 6).unwrap());
    b[second + 6..second + 8].copy_from_slice(&3u16.to_le_bytes());
    std::fs::write(&path, &b).unwrap();
    let p = PerfData::read(&path).unwrap();
    assert!(p.data_file().is_some());
    let why = p.info.truncated.expect("cut short");
    assert!(
        why.contains(&format!("the record at offset {second} has size 3")),
        "{why}"
    );
}

#[test]
fn whole_records_stop_before_a_cut_or_bad_record() {
    let rec = |size: u16| {
        let mut r = vec![0u8; usize::from(size)];
        r[0] = 9;
        r[6..8].copy_from_slice(&size.to_le_bytes());
        r
    };
    let b = [rec(16), rec(24)].concat();
    assert_eq!(whole_records(&b), 40);
    assert_eq!(whole_records(&b[..39]), 16);
    assert_eq!(whole_records(&[rec(16), vec![0; 8]].concat()), 16);
    assert_eq!(whole_records(&[]), 0);
}

/// Every byte of the data section damaged in turn, read through the chunked path and
/// walked: no panic, and a file either reads or gives one error.
#[test]
fn damaged_data_read_in_chunks_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.data");
    let b = file(&synth());
    let start = u64_at(&b, 40).unwrap() as usize;
    let end = start + u64_at(&b, 48).unwrap() as usize;
    // A pipe-mode stream too: its attrs, features and records all come through the walk.
    let s = pipe(&synth());
    for (b, start, end) in [(b, start, end), (s.clone(), 16, s.len())] {
        for at in start..end {
            for v in [0x00, 0xff, 0x41] {
                let mut bad = b.clone();
                bad[at] = v;
                std::fs::write(&path, &bad).unwrap();
                if let Ok(p) = PerfData::read(&path)
                    && let Some(d) = p.data_file()
                {
                    let n: usize = d.chunks().map(|c| c.len()).sum();
                    assert!(n <= end - start);
                }
            }
        }
    }
}

/// `perf record -z` data is decompressed as it is walked, not held: the file's records come
/// out the same on every walk, and a cut stream reads up to the
/// cut, said once at open and not again by each walk.
#[test]
fn compressed_data_streams_on_every_walk() {
    let path = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/recordings/callchain-z.perf.data"
    ));
    let p = PerfData::read(path).unwrap();
    assert!(p.blocks.is_empty() && p.data_file().is_none());
    let c = p.compressed().expect("streamed");
    let walk = || {
        let mut n = 0u64;
        let mut bytes = 0u64;
        for b in c.blocks() {
            let mut at = 0;
            while at + 8 <= b.len() {
                let size = usize::from(u16_at(&b, at + 6).unwrap());
                if u32_at(&b, at).unwrap() < 64 {
                    n += 1;
                    bytes += size as u64;
                }
                at += size;
            }
        }
        (n, bytes, c.take_error())
    };
    let first = walk();
    assert_eq!(first, (p.trailer.records, p.trailer.record_bytes, None));
    assert!(first.0 > 100, "{first:?}");
    assert_eq!(walk(), first);
    // Cut inside the second COMPRESSED record: the records of the first, the reason once.
    let bytes = std::fs::read(path).unwrap();
    let (off, size) = p.info.data_section;
    let mut at = off as usize;
    let mut compressed = Vec::new();
    while at < (off + size) as usize {
        if u32_at(&bytes, at) == Some(81) {
            compressed.push(at);
        }
        at += usize::from(u16_at(&bytes, at + 6).unwrap());
    }
    assert_eq!(compressed.len(), 2);
    let cut = &bytes[..compressed[1] + 100];
    let q = from_bytes(path, cut, None).unwrap();
    assert!(q.info.truncated.is_some());
    let c = q.compressed().unwrap();
    let n = c.blocks().count();
    assert!(n > 0);
    assert_eq!(
        c.take_error(),
        None,
        "the walk stops where the count stopped, quietly"
    );
}

/// A pipe-mode file is read from the file in chunks too, with the result of reading it whole.
#[test]
fn a_pipe_mode_stream_is_read_from_the_file_in_chunks_with_the_same_result() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.data");
    let b = pipe(&synth());
    std::fs::write(&path, &b).unwrap();
    let whole = from_bytes(&path, &b, None).unwrap();
    let streamed = PerfData::read(&path).unwrap();
    assert!(streamed.info.pipe && streamed.blocks.is_empty());
    let d = streamed.data_file().expect("read in chunks");
    assert_eq!(
        kernel_records(&d.chunks().collect::<Vec<_>>()),
        kernel_records(&whole.blocks)
    );
    assert_eq!(streamed.trailer, whole.trailer);
    assert_eq!(streamed.meta.events, whole.meta.events);
    assert_eq!(streamed.info.warnings, whole.info.warnings);
    assert_eq!(streamed.info.user_records, whole.info.user_records);
    // Cut inside a record: the records before it, the same reason as read whole.
    let cut = &b[..b.len() - 5];
    std::fs::write(&path, cut).unwrap();
    let whole = from_bytes(&path, cut, None).unwrap();
    let streamed = PerfData::read(&path).unwrap();
    assert!(streamed.data_file().is_some());
    assert_eq!(streamed.trailer, whole.trailer);
    assert_eq!(streamed.info.truncated, whole.info.truncated);
    assert!(whole.info.truncated.is_some());
}

/// `synth`'s recording as `perf record -z` writes it: the kernel records in one zstd stream
/// over COMPRESSED records, each made by `parts` (byte ranges of the kernel records, each
/// compressed and flushed as perf does after a copy out of a ring buffer), then perf's
/// FINISHED_ROUND and ID_INDEX uncompressed; HEADER_COMPRESSED with `mmap_len`.
fn compressed_synth(cuts: &[usize], mmap_len: u32) -> (Synth, Vec<u8>) {
    use std::io::Write as _;
    let mut s = synth();
    // The first five records are the kernel's (MMAP, COMM, three SAMPLEs).
    let mut at = 0;
    for _ in 0..5 {
        at += usize::from(u16_at(&s.records, at + 6).unwrap());
    }
    let kernel = s.records[..at].to_vec();
    let perfs = s.records[at..].to_vec();
    let mut z = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
    let mut records = Vec::new();
    let mut from = 0;
    for &cut in cuts.iter().chain([&kernel.len()]) {
        z.write_all(&kernel[from..cut]).unwrap();
        z.flush().unwrap();
        let frame = std::mem::take(z.get_mut());
        records.extend(record(user::COMPRESSED, 0, &frame));
        from = cut;
    }
    records.extend(perfs);
    s.records = records;
    let mut comp = Vec::new();
    for v in [1u32, 1, 1, 10, mmap_len] {
        comp.extend(v.to_le_bytes());
    }
    s.features.push((feature::COMPRESSED, comp));
    (s, kernel)
}

/// Records cut across COMPRESSED records (inside a record's header, inside its body, on its
/// edge) come out whole and equal to the records compressed, in file and pipe mode, read
/// whole and from the file.
#[test]
fn compressed_records_straddling_their_compressed_records_come_out_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.data");
    let plain = read(&file(&synth()), None).unwrap();
    for cuts in [&[][..], &[3], &[60, 61, 100], &[8, 16, 24, 200]] {
        let (s, kernel) = compressed_synth(cuts, 528384);
        for b in [file(&s), pipe(&s)] {
            let whole = read(&b, None).unwrap();
            std::fs::write(&path, &b).unwrap();
            let streamed = PerfData::read(&path).unwrap();
            for p in [&whole, &streamed] {
                assert_eq!(p.info.truncated, None, "{cuts:?}");
                let c = p.compressed().expect("compressed");
                let blocks: Vec<Vec<u8>> = c.blocks().collect();
                assert_eq!(kernel_records(&blocks).concat(), kernel, "{cuts:?}");
                assert_eq!(p.trailer, plain.trailer, "{cuts:?}");
                // perf's FINISHED_ROUND is handed on for the ordering.
                assert!(
                    blocks
                        .concat()
                        .windows(8)
                        .any(|w| w == [68, 0, 0, 0, 0, 0, 8, 0])
                );
                assert_eq!(c.take_error(), None);
            }
        }
    }
}

/// A zstd frame of `blocks` RLE blocks of 128 KiB of `byte`: four bytes of the file inflate to
/// 128 KiB, so 64 KiB claim 2 GiB.
fn rle_frame(byte: u8, blocks: usize) -> Vec<u8> {
    let mut f = 0xFD2F_B528u32.to_le_bytes().to_vec();
    // No content size, no checksum; window 128 KiB.
    f.extend([0x00, 0x38]);
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let header = last | 1 << 1 | (128 << 10) << 3;
        f.extend(&header.to_le_bytes()[..3]);
        f.push(byte);
    }
    f
}

/// What a damaged or hostile stream gives: the records before the damage and one reason
/// naming the COMPRESSED record's file offset, in bounded memory.
#[test]
fn compressed_streams_that_lie_are_one_reason_with_the_offset() {
    let data_off = |b: &[u8]| u64_at(b, 40).unwrap();
    // The stream ends inside the COMM record: the MMAP before it is kept.
    let mmap = usize::from(u16_at(&synth().records, 6).unwrap());
    let (mut s, kernel) = compressed_synth(&[mmap + 12], 528384);
    let second = usize::from(u16_at(&s.records, 6).unwrap());
    let cut_len = usize::from(u16_at(&s.records, second + 6).unwrap());
    s.records.drain(second..second + cut_len);
    let b = file(&s);
    let p = read(&b, None).unwrap();
    let why = p.info.truncated.clone().unwrap();
    assert!(
        why.contains(&format!(
            "ends inside a record (12 bytes of {} bytes) after the COMPRESSED record at offset {}",
            u16_at(&kernel, mmap + 6).unwrap(),
            data_off(&b)
        )),
        "{why}"
    );
    assert_eq!(p.trailer.records, 1);
    // Valid-looking records inflating past the cap (1 MiB with perf's usual mmap_len): the
    // records of 0x0808 bytes are not the kernel's and are not kept.
    for (byte, want) in [
        (
            8u8,
            "inflates past 1048576 bytes (perf's buffer for one is mmap_len, 528384 bytes)",
        ),
        (0, "has size 0: the stream is damaged"),
    ] {
        let (mut s, _) = compressed_synth(&[], 528384);
        let first = usize::from(u16_at(&s.records, 6).unwrap());
        s.records
            .splice(..first, record(user::COMPRESSED, 0, &rle_frame(byte, 16)));
        let b = file(&s);
        let at = data_off(&b);
        match read(&b, None) {
            Err(e) => {
                let e = e.to_string();
                assert!(
                    e.contains(want) && e.contains(&format!("offset {at}")),
                    "{e}"
                );
            }
            Ok(p) => panic!("{byte}: {:?}", p.info.truncated),
        }
    }
    // A larger mmap_len allows more, up to 64 MiB.
    assert_eq!(compressed::cap_of(Some(528384)), 1 << 20);
    assert_eq!(compressed::cap_of(Some(8 << 20)), 8 << 20);
    assert_eq!(compressed::cap_of(Some(u32::MAX)), 64 << 20);
    assert_eq!(compressed::cap_of(None), 1 << 20);
}

/// A data size damaged so that the feature table lands on the records: one warning naming
/// every section lost, not one line each.
#[test]
fn a_feature_table_on_garbage_is_one_warning() {
    let s = synth();
    let mut b = file(&s);
    let size = u64_at(&b, 48).unwrap();
    // The table now starts 40 bytes before the real one, inside the records.
    b[48..56].copy_from_slice(&(size - 40).to_le_bytes());
    let p = read(&b, None).unwrap();
    let lost: Vec<&String> = p
        .info
        .warnings
        .iter()
        .filter(|w| w.contains("feature"))
        .collect();
    assert_eq!(lost.len(), 1, "{:?}", p.info.warnings);
    assert!(
        lost[0].starts_with("6 feature sections unreadable (")
            && lost[0].ends_with(
                "): BUILD_ID, HOSTNAME, NRCPUS, CMDLINE, EVENT_DESC, PMU_MAPPINGS not used"
            ),
        "{}",
        lost[0]
    );
    // Past the end of the file: the same one line.
    let mut b = file(&s);
    let size = b.len() as u64 - data_off_of(&b) - 8;
    b[48..56].copy_from_slice(&size.to_le_bytes());
    let p = read(&b, None).unwrap();
    let w: Vec<&String> = p.info.warnings.iter().collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("lies outside the file"), "{}", w[0]);
}

fn data_off_of(b: &[u8]) -> u64 {
    u64_at(b, 40).unwrap()
}

/// Attrs whose id sections all name one large range would copy it once per attr: refused.
#[test]
fn overlapping_attr_id_sections_are_refused() {
    use super::prepare::parse_attr_section;
    let mut b = vec![0u8; 4096];
    let attr_size = 128 + 16;
    let n = 20u64;
    for e in 0..n as usize {
        let at = 1024 + e * attr_size;
        if at + attr_size > b.len() {
            b.resize(at + attr_size, 0);
        }
        b[at + 4..at + 8].copy_from_slice(&128u32.to_le_bytes());
        b[at + 128..at + 136].copy_from_slice(&0u64.to_le_bytes());
        b[at + 136..at + 144].copy_from_slice(&1024u64.to_le_bytes());
    }
    let len = b.len() as u64;
    let e = parse_attr_section(&b, attr_size as u64, (1024, n * attr_size as u64))
        .map(|a| a.len())
        .unwrap_err();
    assert!(
        e.contains(&format!("more than the file's {len} bytes")),
        "{e}"
    );
}

/// Every byte of a compressed recording damaged in turn, file and pipe mode: it reads or gives
/// one error, and walking it never panics.
#[test]
fn damaged_compressed_data_never_panics() {
    let (s, _) = compressed_synth(&[100], 528384);
    for b in [file(&s), pipe(&s)] {
        for at in 0..b.len() {
            for v in [0x00, 0xff, 0x08] {
                let mut bad = b.clone();
                bad[at] = v;
                if let Ok(p) = read(&bad, None)
                    && let Some(c) = p.compressed()
                {
                    let n: usize = c.blocks().map(|b| b.len()).sum();
                    assert!(n <= 1 << 21);
                }
            }
        }
    }
}

/// `/proc/kallsyms` through hrec's cache: read and saved the first time, then taken from the
/// cache while the boot and the modules are the same, read again when the cache is damaged.
#[test]
fn kallsyms_are_cached_for_the_boot() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("kallsyms");
    let cache = d.path().join("cache");
    std::fs::write(&src, "ffffffff81000000 T _text\n").unwrap();
    let first = super::kernel::cached_kallsyms(&src, Some(&cache));
    assert_eq!(first, b"ffffffff81000000 T _text\n");
    let saved = std::fs::read(cache.join("kallsyms")).unwrap();
    assert!(saved.starts_with(b"hrec-kallsyms-cache "), "{saved:?}");
    // The same boot and modules: the cache, not the file.
    std::fs::write(&src, "ffffffff82000000 T _text\n").unwrap();
    assert_eq!(super::kernel::cached_kallsyms(&src, Some(&cache)), first);
    // A damaged cache is read past: the file again, saved again.
    std::fs::write(cache.join("kallsyms"), b"garbage").unwrap();
    let again = super::kernel::cached_kallsyms(&src, Some(&cache));
    assert_eq!(again, b"ffffffff82000000 T _text\n");
    assert_eq!(super::kernel::cached_kallsyms(&src, Some(&cache)), again);
    // No cache directory: the file.
    assert_eq!(super::kernel::cached_kallsyms(&src, None), again);
}
