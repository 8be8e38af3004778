//! The hrec.data file: round trips, crash safety (a file cut at every length), corruption,
//! foreign and future files, random input, and the bytes per sample of real cpu-clock samples.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hrec::data::{
    BlockKind, Codec, DataError, EventId, EventMeta, FinalCount, Meta, PmuMeta, Reader,
    ThreadCount, Trailer, Writer,
};
use hrec::event::Attr;
use hrec::event::attr::{flag, sample, types};
use hrec::kernel::{self, RingBuffer};
use proptest::prelude::*;

const SAMPLE: u32 = 9;

fn record(ty: u32, misc: u16, words: &[u64]) -> Vec<u8> {
    let size = 8 + 8 * words.len() as u16;
    let mut r = Vec::new();
    r.extend_from_slice(&ty.to_le_bytes());
    r.extend_from_slice(&misc.to_le_bytes());
    r.extend_from_slice(&size.to_le_bytes());
    for w in words {
        r.extend_from_slice(&w.to_le_bytes());
    }
    r
}

/// `n` IP|TID|TIME|PERIOD samples with a COMM record in front, like a drained ring buffer.
fn samples(n: u64, t0: u64) -> Vec<u8> {
    let mut b = record(
        3,
        0,
        &[0x1234_0000_1234, u64::from_le_bytes(*b"spinner\0"), 7, 0],
    );
    for i in 0..n {
        let ip = 0x5555_0000_1000 + (i * 13 % 5) * 4;
        let t = t0 + i * 250_000 + (i * 7919) % 900;
        b.extend(record(SAMPLE, 2, &[ip, 0x1234 | 0x1234 << 32, t, 250_000]));
    }
    b
}

fn meta() -> Meta {
    let mut attr = Attr::new(types::SOFTWARE, 0);
    attr.sample_period_or_freq = 4000;
    attr.sample_type = sample::IP | sample::TID | sample::TIME | sample::PERIOD;
    attr.set(flag::FREQ | flag::SAMPLE_ID_ALL | flag::DISABLED, true);
    Meta {
        hrec_version: "0.1.0".into(),
        command_line: vec!["hrec".into(), "record".into(), "--".into(), "true".into()],
        hostname: "box".into(),
        kernel_release: "6.1.0".into(),
        arch: "x86_64".into(),
        cpu_model: "Test CPU".into(),
        cpuid: String::new(),
        cpus_online: "0-3".into(),
        nr_cpus: 4,
        page_size: 4096,
        start_time_unix_ns: 1_700_000_000_000_000_000,
        clock_start_ns: 123_456_789,
        clockid: Some(1),
        target: "workload".into(),
        workload_pid: Some(4242),
        recorder_pid: 4241,
        unwound_at_record: false,
        off_cpu_blocked_only: false,
        numa_nodes: Vec::new(),
        threads_per_core: Some(2),
        metric_choice: Some(hrec::data::MetricChoiceMeta {
            td_level: Some(3),
            metrics: vec!["IPC".into()],
        }),
        trace_printk: "0xffffffff82000000 : \"rcu_preempt\"\n".into(),
        total_mem_kb: Some(24_684_092),
        cpu_topology: Some(hrec::pmu::CpuTopology {
            packages: vec!["0-1".into()],
            cores: vec!["0".into(), "1".into()],
            dies: vec!["0-1".into()],
            ids: vec![[0, 0, 0], [1, 0, 0]],
        }),
        numa_memory_kb: vec![(0, 24_684_092, 14_606_832)],
        pmus: vec![PmuMeta {
            name: "software".into(),
            type_: 1,
            cpus: None,
        }],
        events: vec![EventMeta {
            name: "cpu-clock".into(),
            pmu: Some("software".into()),
            attr,
            leader: 0,
            role: hrec::data::Role::Sampler,
            ids: vec![EventId {
                id: 17,
                cpu: 0,
                tid: -1,
            }],
            trace_format: Some("name: x\nID: 1\nformat:\n\nprint fmt: \"\"\n".into()),
        }],
        notices: vec!["cpu-clock: no hardware PMU".into()],
        mmap_pages: 128,
    }
}

fn trailer() -> Trailer {
    Trailer {
        end_time_unix_ns: 1_700_000_001_000_000_000,
        duration_ns: 1_000_000_000,
        sample_time: Some((1_000, 1_000_000_999)),
        records: 301,
        record_bytes: 12_000,
        samples: 300,
        samples_per_event: vec![300],
        threads: vec![ThreadCount {
            pid: 4242,
            tid: 4243,
            samples: 300,
        }],
        self_samples: 0,
        lost_records: 1,
        lost_samples: 5,
        lost_samples_read: 5,
        off_cpu_lost_records: 0,
        off_cpu_lost_samples: 0,
        off_cpu_lost_samples_read: 0,
        off_cpu_switches_lost_read: 0,
        throttles: 2,
        unthrottles: 2,
        counts: vec![FinalCount {
            event: 0,
            id: 17,
            cpu: 0,
            value: 999,
            time_enabled: 10,
            time_running: 9,
        }],
        workload_status: Some(0),
        blocks: Vec::new(),
    }
}

/// The raw inputs of the standard test file, in block order: (kind, name, bytes).
fn inputs() -> Vec<(BlockKind, &'static str, Vec<u8>)> {
    vec![
        (
            BlockKind::Side,
            "kallsyms",
            b"ffffffff81000000 T _stext\n".repeat(20),
        ),
        (BlockKind::Records, "", samples(100, 1_000_000)),
        (BlockKind::Records, "", samples(100, 26_000_000)),
        // Not a whole record: stored with the plain codec, read back byte for byte.
        (
            BlockKind::Records,
            "",
            b"not records, 31 bytes long....!".to_vec(),
        ),
        (BlockKind::Records, "", samples(100, 51_000_000)),
        (
            BlockKind::Side,
            "build-ids",
            b"abcdef /usr/bin/true\n".to_vec(),
        ),
    ]
}

/// Writes the standard file; returns its path's bytes and the finish size.
fn write_standard(path: &Path) -> u64 {
    let mut w = Writer::create(path, &meta()).unwrap();
    for (kind, name, bytes) in inputs() {
        match kind {
            BlockKind::Side => w.write_side(name, &bytes).unwrap(),
            _ => w.write_records_timed(&bytes, 2, 10, 20).unwrap(),
        };
    }
    w.finish(trailer()).unwrap()
}

fn tmp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hrec.data");
    (dir, path)
}

/// A recorder pressed by the kernel writes Records blocks with zstd alone
/// (`set_columns(false)`): the block names its codec and reads back byte for byte, as a column
/// block does.
#[test]
fn records_without_the_column_transform_read_back() {
    let (_dir, path) = tmp();
    let mut w = Writer::create(&path, &meta()).unwrap();
    let a = samples(100, 1_000_000);
    let b = samples(50, 2_000_000);
    assert_eq!(w.write_records(&a, 0).unwrap().codec, Codec::Columns3);
    w.set_columns(false);
    let plain = w.write_records(&b, 1).unwrap();
    // `samples(n, _)` is n samples and a COMM record.
    assert_eq!((plain.codec, plain.records), (Codec::Zstd, 51));
    w.set_columns(true);
    assert_eq!(w.write_records(&a, 0).unwrap().codec, Codec::Columns3);
    w.finish(trailer()).unwrap();
    let r = Reader::open(&path).unwrap();
    let recs: Vec<_> = r.records().map(|x| x.unwrap()).collect();
    assert_eq!(recs.len(), 3);
    assert_eq!(recs[1].1, b);
    assert_eq!(
        (recs[0].1.as_slice(), recs[2].1.as_slice()),
        (&a[..], &a[..])
    );
}

/// A prepared file waits under a scratch name, the files at the path and `.old` untouched:
/// abandoned, nothing is left of it; published, it takes the path and the previous file
/// becomes `.old` (what `record` does around a workload that may fail to run).
#[test]
fn a_prepared_file_touches_nothing_until_published() {
    let (dir, path) = tmp();
    let old = dir.path().join("hrec.data.old");
    std::fs::write(&path, b"previous").unwrap();
    std::fs::write(&old, b"older").unwrap();
    let listing = || {
        let mut v: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let w = Writer::prepare(&path, &Meta::default()).unwrap();
    assert_eq!(listing().len(), 3, "{:?}", listing());
    w.abandon();
    assert_eq!(listing(), ["hrec.data", "hrec.data.old"]);
    assert_eq!(std::fs::read(&path).unwrap(), b"previous");
    assert_eq!(std::fs::read(&old).unwrap(), b"older");
    let mut w = Writer::prepare(&path, &Meta::default()).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"previous");
    w.publish().unwrap();
    w.finish(Trailer::default()).unwrap();
    assert_eq!(listing(), ["hrec.data", "hrec.data.old"]);
    assert_eq!(std::fs::read(&old).unwrap(), b"previous");
    assert!(Reader::open(&path).is_ok());
}

#[test]
fn round_trip_meta_records_side_trailer() {
    let (_dir, path) = tmp();
    let size = write_standard(&path);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
    let r = Reader::open(&path).unwrap();
    assert_eq!(r.truncated(), None);
    assert_eq!(*r.meta(), meta());
    let t = r.trailer().expect("finished file has a trailer");
    assert_eq!(t.samples, 300);
    assert_eq!(t.counts, trailer().counts);
    assert_eq!(t.blocks, r.blocks());
    let want = inputs();
    assert_eq!(r.blocks().len(), want.len());
    for (b, (kind, name, bytes)) in r.blocks().iter().zip(&want) {
        assert_eq!(b.kind, *kind);
        assert_eq!(b.name, *name);
        assert_eq!(b.raw_len, bytes.len() as u64);
        assert_eq!(r.read_block(b).unwrap(), *bytes);
    }
    let recs: Vec<_> = r.records().map(|x| x.unwrap()).collect();
    assert_eq!(recs.len(), 4);
    assert_eq!(recs[0].1, samples(100, 1_000_000));
    assert_eq!(recs[0].0.codec, Codec::Columns3);
    assert_eq!(recs[0].0.records, 101);
    assert_eq!(recs[0].0.source, 2);
    assert_eq!((recs[0].0.first_time, recs[0].0.last_time), (10, 20));
    assert_eq!(recs[2].0.codec, Codec::Zstd, "malformed input falls back");
    assert_eq!(recs[2].0.records, 0);
    assert_eq!(
        r.side("kallsyms").unwrap().unwrap(),
        b"ffffffff81000000 T _stext\n".repeat(20)
    );
    assert_eq!(
        r.side("build-ids").unwrap().unwrap(),
        b"abcdef /usr/bin/true\n"
    );
    assert_eq!(r.side("modules").unwrap(), None);
    // The header is "HRECDATA", version 3 (the metadata one zstd frame), and the file ends
    // with the footer magic.
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..12], b"HRECDATA\x03\0\0\0");
    assert_eq!(&bytes[16..20], &[0x28, 0xb5, 0x2f, 0xfd], "a zstd frame");
    assert_eq!(&bytes[bytes.len() - 8..], b"HREC_END");
}

#[test]
fn existing_file_becomes_old_and_new_one_is_private() {
    let (dir, path) = tmp();
    std::fs::write(&path, b"previous recording").unwrap();
    let mut w = Writer::create(&path, &meta()).unwrap();
    w.write_records(&samples(10, 0), u32::MAX).unwrap();
    let size = w.finish(Trailer::default()).unwrap();
    let old = dir.path().join("hrec.data.old");
    assert_eq!(std::fs::read(&old).unwrap(), b"previous recording");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
    // A second recording replaces the .old one.
    Writer::create(&path, &meta()).unwrap();
    assert_eq!(std::fs::metadata(&old).unwrap().len(), size);
}

#[test]
fn file_cut_at_every_length_is_an_error_or_a_readable_prefix() {
    let (dir, path) = tmp();
    write_standard(&path);
    let full = std::fs::read(&path).unwrap();
    let whole = Reader::open(&path).unwrap();
    let blocks = whole.blocks().to_vec();
    let header_end = blocks[0].offset as usize;
    let trailer_at = {
        let last = blocks.last().unwrap();
        (last.offset + last.file_len()) as usize
    };
    let want = inputs();
    let cut = dir.path().join("cut.data");
    for len in 0..=full.len() {
        std::fs::write(&cut, &full[..len]).unwrap();
        let opened = Reader::open(&cut);
        if len < header_end {
            let err = opened.unwrap_err();
            assert!(
                matches!(err, DataError::TruncatedHeader { .. }),
                "cut at {len}: {err}"
            );
            assert!(
                err.to_string()
                    .contains("truncated header: the recording did not start"),
                "{err}"
            );
            continue;
        }
        let r = opened.unwrap_or_else(|e| panic!("cut at {len}: {e}"));
        // Exactly the blocks that end at or before the cut.
        let complete = blocks
            .iter()
            .filter(|b| (b.offset + b.file_len()) as usize <= len)
            .count();
        assert_eq!(r.blocks().len(), complete, "cut at {len}");
        for (b, (_, _, bytes)) in r.blocks().iter().zip(&want) {
            assert_eq!(r.read_block(b).unwrap(), *bytes, "cut at {len}");
        }
        if len == full.len() {
            assert_eq!(r.truncated(), None);
            continue;
        }
        let why = r
            .truncated()
            .unwrap_or_else(|| panic!("cut at {len}: not truncated"));
        let at_boundary = len == header_end
            || blocks
                .iter()
                .any(|b| (b.offset + b.file_len()) as usize == len);
        if at_boundary && len <= trailer_at {
            assert!(
                why.starts_with("no trailer: the recording did not finish"),
                "{why}"
            );
        } else if len < trailer_at {
            assert!(why.contains("is cut short"), "cut at {len}: {why}");
        }
        // Cut inside the footer: the trailer is found by the walk.
        assert_eq!(
            r.trailer().is_some(),
            len >= full.len() - 24,
            "cut at {len}"
        );
    }
}

#[test]
fn corrupt_payload_names_the_block_offset() {
    let (dir, path) = tmp();
    write_standard(&path);
    let full = std::fs::read(&path).unwrap();
    let blocks = Reader::open(&path).unwrap().blocks().to_vec();
    let victim = &blocks[2];
    let mut bad = full.clone();
    let at = (victim.payload_offset() + victim.compressed_len / 2) as usize;
    bad[at] ^= 0x55;
    let p = dir.path().join("bad.data");
    std::fs::write(&p, &bad).unwrap();
    let r = Reader::open(&p).unwrap();
    assert_eq!(r.truncated(), None, "the index is intact");
    let err = r.read_block(&r.blocks()[2]).unwrap_err();
    assert!(
        matches!(err, DataError::Corrupt { offset, .. } if offset == victim.offset),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains(&format!("corrupt block at offset {}", victim.offset)),
        "{err}"
    );
    // The blocks before it still read; iterating records stops with the same error.
    assert!(r.read_block(&r.blocks()[1]).is_ok());
    let results: Vec<_> = r.records().collect();
    assert!(results[0].is_ok() && results[1].is_err() && results[2].is_ok());

    // Same damage in a file without a trailer (killed recording): still named on read.
    let trailer_at = (blocks[5].offset + blocks[5].file_len()) as usize;
    std::fs::write(&p, &bad[..trailer_at]).unwrap();
    let r = Reader::open(&p).unwrap();
    assert!(r.truncated().is_some());
    assert_eq!(r.blocks().len(), 6);
    assert!(matches!(
        r.read_block(&r.blocks()[2]),
        Err(DataError::Corrupt { offset, .. }) if offset == victim.offset
    ));

    // A damaged block header: the walk stops there and says where.
    let mut bad = full[..trailer_at].to_vec();
    bad[blocks[3].offset as usize + 9] ^= 1;
    std::fs::write(&p, &bad).unwrap();
    let r = Reader::open(&p).unwrap();
    assert_eq!(r.blocks().len(), 3);
    let why = r.truncated().unwrap();
    assert!(
        why.contains(&format!("no valid block at offset {}", blocks[3].offset)),
        "{why}"
    );
}

#[test]
fn damaged_trailer_falls_back_to_walking() {
    let (dir, path) = tmp();
    write_standard(&path);
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 40] ^= 0xff; // inside the trailer's zstd frame
    let p = dir.path().join("t.data");
    std::fs::write(&p, &bytes).unwrap();
    let r = Reader::open(&p).unwrap();
    assert_eq!(r.blocks().len(), 6);
    assert!(r.trailer().is_none());
    let why = r.truncated().unwrap();
    assert!(why.contains("damaged trailer"), "{why}");
    assert_eq!(
        r.side("build-ids").unwrap().unwrap(),
        b"abcdef /usr/bin/true\n"
    );
}

#[test]
fn foreign_and_future_files_are_refused_with_advice() {
    let (dir, path) = tmp();
    let perf = dir.path().join("perf.data");
    std::fs::write(&perf, b"PERFILE2\x68\0\0\0\0\0\0\0 and more header bytes").unwrap();
    let err = Reader::open(&perf).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, DataError::NotHrec { .. }));
    assert!(
        msg.contains("is not an hrec file (magic \"PERFILE2\""),
        "{msg}"
    );
    assert!(msg.contains("or perf.data's"), "{msg}");

    write_standard(&path);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8] = 4;
    std::fs::write(&path, &bytes).unwrap();
    let err = Reader::open(&path).unwrap_err();
    assert!(matches!(err, DataError::NewerVersion { version: 4, .. }));
    assert!(
        err.to_string()
            .contains("written by a newer hrec (format version 4, this build reads 3)"),
        "{err}"
    );
    // A version 3 header whose metadata is not a zstd frame, or one that lies about its size.
    for (at, byte) in [(16, 0u8), (20, 0xff)] {
        write_standard(&path);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[at] ^= byte.max(1);
        std::fs::write(&path, &bytes).unwrap();
        let err = Reader::open(&path).unwrap_err().to_string();
        assert!(err.contains("metadata"), "{err}");
    }

    let missing = dir.path().join("nope.data");
    let err = Reader::open(&missing).unwrap_err();
    assert!(err.to_string().starts_with("cannot open "), "{err}");
    assert!(err.to_string().contains("nope.data"), "{err}");
    let err = Writer::create(&dir.path().join("no/such/dir/hrec.data"), &meta()).unwrap_err();
    assert!(err.to_string().starts_with("cannot create "), "{err}");
}

/// Every block of a reader, read; errors are fine, panics are not.
fn read_everything(r: &Reader) -> usize {
    r.blocks()
        .iter()
        .filter_map(|b| r.read_block(b).ok())
        .map(|v| v.len())
        .sum()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_garbage_is_an_error_not_a_panic(
        body in prop::collection::vec(any::<u8>(), 0..400),
        with_header in any::<bool>(),
    ) {
        let (_dir, path) = tmp();
        let mut bytes = Vec::new();
        if with_header {
            bytes.extend_from_slice(b"HRECDATA\x01\0\0\0\x02\0\0\0{}\0\0\0\0\0\0");
        }
        bytes.extend_from_slice(&body);
        std::fs::write(&path, &bytes).unwrap();
        match Reader::open(&path) {
            Ok(r) => {
                prop_assert!(with_header);
                prop_assert!(r.truncated().is_some());
                read_everything(&r);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn damaged_files_never_panic(flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let (dir, path) = tmp();
        write_standard(&path);
        let mut bytes = std::fs::read(&path).unwrap();
        for (i, x) in &flips {
            let i = i.index(bytes.len());
            bytes[i] ^= x | 1;
        }
        let p = dir.path().join("d.data");
        std::fs::write(&p, &bytes).unwrap();
        if let Ok(r) = Reader::open(&p) {
            // Whatever reads back is what was written.
            let want = inputs();
            for b in r.blocks() {
                if let Ok(got) = r.read_block(b) {
                    prop_assert!(want.iter().any(|(_, _, w)| *w == got));
                }
            }
        }
    }
}

/// Counts SAMPLE records in well-formed record bytes.
fn count_samples(bytes: &[u8]) -> u64 {
    let mut n = 0;
    let mut at = 0;
    while at + 8 <= bytes.len() {
        let ty = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let size = u16::from_le_bytes(bytes[at + 6..at + 8].try_into().unwrap());
        n += u64::from(ty == SAMPLE);
        at += usize::from(size.max(8));
    }
    n
}

/// Payload bytes of `batches` as the writer stores them (columns + zstd) and as plain zstd.
fn payload_sizes(batches: &[Vec<u8>]) -> (usize, usize) {
    let columns = batches
        .iter()
        .map(|b| {
            let enc = hrec::data::codec::encode(b).expect("kernel records are well-formed");
            zstd::bulk::compress(&enc, hrec::data::ZSTD_LEVEL)
                .unwrap()
                .len()
        })
        .sum();
    let plain = batches
        .iter()
        .map(|b| {
            zstd::bulk::compress(b, hrec::data::ZSTD_LEVEL)
                .unwrap()
                .len()
        })
        .sum();
    (columns, plain)
}

/// Real cpu-clock samples of this thread (the default plan: 4000 Hz, IP|TID|TIME|PERIOD,
/// sample_id_all and the tracking flags) through the writer, in blocks of
/// [`hrec::data::BATCH_BYTES`]: the column codec must store them in at most 0.6 of what
/// plain zstd at the same level takes, and under 4 bytes per sample (measured: ~2.55 in a
/// debug build, whose slower busy loop spreads the ips over more values, ~1.95 in a release
/// build; byte planes and zstd alone took ~2.8 and ~2.2). The bound is relative because the
/// bytes depend on the machine: under load the sample times and ips spread, and a clean-clone
/// run on a busy machine measured 2.74 bytes per sample against plain zstd's 6.16.
/// It also prints the figure for 100 ms blocks (~400 samples, where the per-block zstd frame
/// and ip dictionary weigh more) and for plain zstd.
///
/// `cargo test --test data_file real_samples -- --nocapture` prints the figures.
#[test]
fn real_samples_take_at_most_0_6_of_plain_zstd() {
    let mut attr = Attr::new(types::SOFTWARE, 0);
    attr.sample_period_or_freq = 4000;
    attr.sample_type = sample::IP | sample::TID | sample::TIME | sample::PERIOD;
    attr.set(
        flag::FREQ
            | flag::DISABLED
            | flag::SAMPLE_ID_ALL
            | flag::EXCLUDE_KERNEL
            | flag::EXCLUDE_HV
            | flag::MMAP
            | flag::MMAP2
            | flag::COMM
            | flag::COMM_EXEC
            | flag::TASK,
        true,
    );
    let fd = kernel::open(&attr, 0, -1, None)
        .unwrap_or_else(|e| panic!("perf_event_open (perf_event_paranoid?): {e}"));
    let mut rb = RingBuffer::new(&fd, 64).unwrap();
    // Drained every 100 ms, like a writer thread on a timer.
    let mut drains: Vec<Vec<u8>> = Vec::new();
    fd.enable(false).unwrap();
    let end = Instant::now() + Duration::from_millis(1000);
    let mut next = Instant::now() + Duration::from_millis(100);
    let mut x = 1u64;
    while Instant::now() < end {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        if Instant::now() >= next {
            let mut buf = Vec::new();
            rb.drain(&mut buf).unwrap();
            drains.push(buf);
            next += Duration::from_millis(100);
        }
    }
    fd.disable(false).unwrap();
    let mut buf = Vec::new();
    rb.drain(&mut buf).unwrap();
    drains.push(buf);
    drains.retain(|b| !b.is_empty());
    let all = drains.concat();
    let samples = count_samples(&all);
    assert!(samples >= 500, "only {samples} samples in 1 s at 4000 Hz");

    // Blocks as the writer thread should make them: drains coalesced up to BATCH_BYTES.
    let mut blocks: Vec<Vec<u8>> = vec![Vec::new()];
    for d in &drains {
        let last = blocks.last_mut().unwrap();
        if !last.is_empty() && last.len() + d.len() > hrec::data::BATCH_BYTES {
            blocks.push(d.clone());
        } else {
            last.extend_from_slice(d);
        }
    }
    let (_dir, path) = tmp();
    let mut w = Writer::create(&path, &meta()).unwrap();
    for b in &blocks {
        let info = w.write_records(b, 0).unwrap();
        assert_eq!(
            info.codec,
            Codec::Columns3,
            "kernel records are well-formed"
        );
    }
    let size = w.finish(Trailer::default()).unwrap();
    let r = Reader::open(&path).unwrap();
    let payload: u64 = r
        .blocks()
        .iter()
        .filter(|b| b.kind == BlockKind::Records)
        .map(|b| b.compressed_len)
        .sum();
    let back: Vec<u8> = r.records().flat_map(|b| b.unwrap().1).collect();
    assert_eq!(back, all, "the file gives back the exact records");

    let per = |bytes: usize| bytes as f64 / samples as f64;
    let per_sample = per(payload as usize);
    let (_, plain) = payload_sizes(&blocks);
    let (small, small_plain) = payload_sizes(&drains);
    println!(
        "{samples} samples, {} raw bytes ({:.1} B/sample)\n\
         {} blocks of <= {} KiB: columns+zstd {payload} B = {per_sample:.2} B/sample \
         (whole file {size} B = {:.2}); plain zstd {plain} B = {:.2} B/sample\n\
         {} blocks of 100 ms: columns+zstd {small} B = {:.2} B/sample; plain zstd {small_plain} B = {:.2} B/sample",
        all.len(),
        per(all.len()),
        blocks.len(),
        hrec::data::BATCH_BYTES >> 10,
        per(size as usize),
        per(plain),
        drains.len(),
        per(small),
        per(small_plain),
    );
    assert!(
        per_sample <= 0.6 * per(plain) && per_sample < 4.0,
        "{per_sample:.2} bytes per sample (plain zstd: {:.2})",
        per(plain)
    );
    assert!(per(small) < per(small_plain));
}
