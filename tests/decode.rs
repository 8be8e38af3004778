//! The record decoder against records built byte for byte by `support::encode` (the kernel's
//! layout), against random bytes, and against a real software event.

mod support;

use std::time::{Duration, Instant};

use hrec::decode::{
    self, DecodeError, Decoder, FileId, Layout, RawRecord, ReadValues, Record, RecordHeader,
    Sample, Weight, branch, context, misc, records,
};
use hrec::event::Attr;
use hrec::event::attr::{flag, read, sample, types};
use hrec::kernel;
use proptest::prelude::*;
use support::encode::{
    self, BranchFields, Encoder, Mmap2Fields, Mmap2File, ReadFields, ReadValue, RegsFields,
    SampleFields, SampleId, StackFields,
};

const ALL_READ: u64 =
    read::TOTAL_TIME_ENABLED | read::TOTAL_TIME_RUNNING | read::ID | read::GROUP | read::LOST;
const REGS_USER_MASK: u64 = 0b1011; // 3 registers
const REGS_INTR_MASK: u64 = 0xf0; // 4 registers

fn attr(sample_type: u64, read_format: u64) -> Attr {
    let mut a = Attr::new(types::SOFTWARE, 0);
    a.sample_type = sample_type;
    a.read_format = read_format;
    a.sample_regs_user = REGS_USER_MASK;
    a.sample_regs_intr = REGS_INTR_MASK;
    a.branch_sample_type = branch::HW_INDEX | branch::COUNTERS;
    a.set(flag::SAMPLE_ID_ALL, true);
    a
}

fn read_fields(read_format: u64) -> ReadFields {
    let n = if read_format & read::GROUP != 0 { 3 } else { 1 };
    ReadFields {
        time_enabled: 5_000_000,
        time_running: 4_000_000,
        values: (0..n)
            .map(|i| ReadValue {
                value: 1000 * (i + 1),
                id: 200 + i,
                lost: i,
            })
            .collect(),
    }
}

/// Distinct values for every field, so a field read from the wrong place shows.
fn fields(read_format: u64) -> SampleFields {
    SampleFields {
        misc: misc::USER | misc::EXACT_IP,
        id: 77,
        ip: 0x40_1000,
        pid: 100,
        tid: 101,
        time: 1_000_000_007,
        addr: 0x7fff_0000,
        stream_id: 78,
        cpu: 3,
        period: 4000,
        read: read_fields(read_format),
        callchain: vec![context::USER, 0x40_1000, 0x40_2000],
        raw: b"hello".to_vec(),
        branch: BranchFields {
            hw_idx: 5,
            entries: vec![[0x10, 0x20, 0x1 | (7 << 4)], [0x30, 0x40, 0x2]],
            counters: vec![0xa, 0xb],
        },
        regs_user: RegsFields {
            abi: 2,
            regs: vec![1, 2, 3],
        },
        stack_user: StackFields {
            data: (0..16).collect(),
            dyn_size: 12,
        },
        weight: (123 << 48) | (45 << 32) | 999,
        data_src: 0x1234,
        transaction: 0x55,
        regs_intr: RegsFields {
            abi: 2,
            regs: vec![10, 11, 12, 13],
        },
        phys_addr: 0xdead_0000,
        cgroup: 42,
        data_page_size: 4096,
        code_page_size: 2 << 20,
        aux: (100..116).collect(),
    }
}

/// Checks read values against what was encoded.
fn check_read(read_format: u64, exp: &ReadFields, r: &ReadValues<'_>) {
    let on = |b: u64| read_format & b != 0;
    assert_eq!(r.read_format(), read_format);
    assert_eq!(r.is_group(), on(read::GROUP));
    assert_eq!(
        r.time_enabled,
        on(read::TOTAL_TIME_ENABLED).then_some(exp.time_enabled)
    );
    assert_eq!(
        r.time_running,
        on(read::TOTAL_TIME_RUNNING).then_some(exp.time_running)
    );
    let expected: Vec<ReadValue> = if on(read::GROUP) {
        exp.values.clone()
    } else {
        vec![exp.values.first().copied().unwrap_or_default()]
    };
    assert_eq!(r.len(), expected.len());
    for (got, want) in r.iter().zip(&expected) {
        assert_eq!(got.value, want.value);
        assert_eq!(got.id, on(read::ID).then_some(want.id));
        assert_eq!(got.lost, on(read::LOST).then_some(want.lost));
    }
}

/// Checks every field of a decoded sample against what was encoded under `a`.
fn check_sample(a: &Attr, f: &SampleFields, s: &Sample<'_>) {
    let st = a.sample_type;
    let on = |b: u64| st & b != 0;
    assert_eq!(s.sample_type, st);
    assert_eq!(s.misc, f.misc);
    assert_eq!(s.identifier, on(sample::IDENTIFIER).then_some(f.id));
    assert_eq!(s.ip, on(sample::IP).then_some(f.ip));
    assert_eq!(s.pid, on(sample::TID).then_some(f.pid));
    assert_eq!(s.tid, on(sample::TID).then_some(f.tid));
    assert_eq!(s.time, on(sample::TIME).then_some(f.time));
    assert_eq!(s.addr, on(sample::ADDR).then_some(f.addr));
    assert_eq!(s.id, on(sample::ID).then_some(f.id));
    assert_eq!(s.stream_id, on(sample::STREAM_ID).then_some(f.stream_id));
    assert_eq!(s.cpu, on(sample::CPU).then_some(f.cpu));
    assert_eq!(s.period, on(sample::PERIOD).then_some(f.period));
    match (on(sample::READ), &s.read) {
        (true, Some(r)) => check_read(a.read_format, &f.read, r),
        (false, None) => {}
        (want, got) => panic!("READ present {want}, decoded {got:?}"),
    }
    assert_eq!(
        s.callchain.map(|c| c.iter().collect::<Vec<_>>()),
        on(sample::CALLCHAIN).then(|| f.callchain.clone())
    );
    assert_eq!(
        s.raw.map(<[u8]>::to_vec),
        on(sample::RAW).then(|| encode::raw_padded(&f.raw))
    );
    match (on(sample::BRANCH_STACK), &s.branch_stack) {
        (true, Some(b)) => {
            let hw = a.branch_sample_type & branch::HW_INDEX != 0;
            let cn = a.branch_sample_type & branch::COUNTERS != 0;
            assert_eq!(b.hw_idx, hw.then_some(f.branch.hw_idx));
            let e: Vec<[u64; 3]> = b.iter().map(|e| [e.from, e.to, e.flags]).collect();
            assert_eq!(e, f.branch.entries);
            assert_eq!(
                b.counters.map(|c| c.iter().collect::<Vec<_>>()),
                cn.then(|| f.branch.counters.clone())
            );
        }
        (false, None) => {}
        (want, got) => panic!("BRANCH_STACK present {want}, decoded {got:?}"),
    }
    let regs = |r: &RegsFields| (r.abi, if r.abi != 0 { r.regs.clone() } else { vec![] });
    assert_eq!(
        s.regs_user
            .map(|r| (r.abi, r.regs.iter().collect::<Vec<_>>())),
        on(sample::REGS_USER).then(|| regs(&f.regs_user))
    );
    assert_eq!(
        s.stack_user.map(|u| (u.data.to_vec(), u.dyn_size)),
        on(sample::STACK_USER).then(|| {
            let d = &f.stack_user;
            (d.data.clone(), (!d.data.is_empty()).then_some(d.dyn_size))
        })
    );
    assert_eq!(
        s.weight,
        on(sample::WEIGHT | sample::WEIGHT_STRUCT).then_some(f.weight)
    );
    assert_eq!(
        s.weight_struct(),
        on(sample::WEIGHT_STRUCT).then(|| Weight::from(f.weight))
    );
    assert_eq!(s.data_src, on(sample::DATA_SRC).then_some(f.data_src));
    assert_eq!(
        s.transaction,
        on(sample::TRANSACTION).then_some(f.transaction)
    );
    assert_eq!(
        s.regs_intr
            .map(|r| (r.abi, r.regs.iter().collect::<Vec<_>>())),
        on(sample::REGS_INTR).then(|| regs(&f.regs_intr))
    );
    assert_eq!(s.phys_addr, on(sample::PHYS_ADDR).then_some(f.phys_addr));
    assert_eq!(s.cgroup, on(sample::CGROUP).then_some(f.cgroup));
    assert_eq!(
        s.data_page_size,
        on(sample::DATA_PAGE_SIZE).then_some(f.data_page_size)
    );
    assert_eq!(
        s.code_page_size,
        on(sample::CODE_PAGE_SIZE).then_some(f.code_page_size)
    );
    assert_eq!(
        s.aux.map(<[u8]>::to_vec),
        on(sample::AUX).then(|| f.aux.clone())
    );
}

fn only<'a>(bytes: &'a [u8]) -> RawRecord<'a> {
    let mut it = records(bytes);
    let raw = it.next().expect("one record").expect("well-formed");
    assert!(it.next().is_none(), "exactly one record");
    raw
}

/// Encodes `f` under `a`, decodes it with a one-attr decoder and checks every field.
fn round_trip(a: &Attr, f: &SampleFields) {
    let bytes = Encoder::new(*a).sample(f);
    let d = Decoder::new([(f.id, *a)]);
    match d.decode(&only(&bytes)) {
        Ok(Record::Sample(s)) => check_sample(a, f, &s),
        other => panic!("sample_type {:#x}: {other:?}", a.sample_type),
    }
}

#[test]
fn every_sample_type_bit_alone() {
    for (bit, name) in sample::NAMES {
        let a = attr(bit, ALL_READ);
        let f = fields(ALL_READ);
        round_trip(&a, &f);
        // Every bit writes something, so a decoder that skips one misplaces the rest.
        let bytes = Encoder::new(a).sample(&f);
        assert!(bytes.len() > 8, "{name}");
    }
}

#[test]
fn every_pair_of_sample_type_bits() {
    for (i, (a_bit, _)) in sample::NAMES.iter().enumerate() {
        for (b_bit, _) in &sample::NAMES[i + 1..] {
            let a = attr(a_bit | b_bit, ALL_READ);
            round_trip(&a, &fields(ALL_READ));
        }
    }
}

#[test]
fn all_sample_type_bits_at_once() {
    let all: u64 = sample::NAMES.iter().map(|(b, _)| b).fold(0, |x, b| x | b);
    // WEIGHT and WEIGHT_STRUCT are exclusive for the kernel; try each, and both (one u64).
    for st in [all & !sample::WEIGHT, all & !sample::WEIGHT_STRUCT, all] {
        for rf in [ALL_READ, read::ID] {
            let a = attr(st, rf);
            round_trip(&a, &fields(rf));
        }
    }
    // Without HW_INDEX / COUNTERS the branch stack is just nr + entries.
    let mut a = attr(all & !sample::WEIGHT, ALL_READ);
    a.branch_sample_type = 0;
    round_trip(&a, &fields(ALL_READ));
    // abi 0: no registers follow; stack size 0: no dyn_size.
    let mut f = fields(ALL_READ);
    f.regs_user = RegsFields::default();
    f.regs_intr = RegsFields::default();
    f.stack_user = StackFields::default();
    f.raw.clear();
    round_trip(&a, &f);
}

#[test]
fn field_order_follows_the_kernel_writer() {
    // CGROUP and the page sizes come before AUX; IDENTIFIER is first.
    let st = sample::IDENTIFIER
        | sample::PHYS_ADDR
        | sample::CGROUP
        | sample::DATA_PAGE_SIZE
        | sample::CODE_PAGE_SIZE
        | sample::AUX;
    let a = attr(st, 0);
    let f = fields(0);
    let bytes = Encoder::new(a).sample(&f);
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
    assert_eq!(u64_at(8), 77);
    assert_eq!(u64_at(24), 42, "CGROUP right after PHYS_ADDR");
    assert_eq!(u64_at(48), 16, "AUX size last");
    round_trip(&a, &f);
}

#[test]
fn every_read_format_in_samples_and_read_records() {
    for rf in 0..32u64 {
        let a = attr(
            sample::IDENTIFIER | sample::TID | sample::TIME | sample::READ,
            rf,
        );
        let f = fields(rf);
        round_trip(&a, &f);

        let enc = Encoder::new(a);
        let sid = SampleId {
            pid: 100,
            tid: 101,
            time: 9,
            id: 77,
            ..SampleId::default()
        };
        let bytes = enc.read(&sid, 100, 102, &f.read);
        let d = Decoder::new([(77, a)]);
        let Record::Read(r) = d.decode(&only(&bytes)).unwrap() else {
            panic!("rf {rf}: not a READ")
        };
        assert_eq!((r.pid, r.tid), (100, 102));
        check_read(rf, &f.read, &r.values);
        assert_eq!(
            r.sample_id,
            decode::SampleId {
                pid: Some(100),
                tid: Some(101),
                time: Some(9),
                identifier: Some(77),
                ..Default::default()
            }
        );
    }
}

#[test]
fn empty_group_read_and_group_nr_past_the_end() {
    let a = attr(sample::READ, read::GROUP | read::ID);
    let mut f = fields(a.read_format);
    f.read.values.clear();
    round_trip(&a, &f);
    // nr claims 1000 entries in a record that has 3.
    let mut bytes = Encoder::new(a).sample(&fields(a.read_format));
    bytes[8..16].copy_from_slice(&1000u64.to_le_bytes());
    let e = Decoder::new([(77, a)]).decode(&only(&bytes)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "SAMPLE record at offset 0 too short for its sample_type (READ): needs 16016 bytes, has 64"
    );
}

/// perf-abi.md 17.9: `{slots, <sampler>, topdown-retiring, -bad-spec, -fe-bound, -be-bound}`.
#[test]
fn topdown_group_read_with_retire_latency() {
    let st = sample::IP
        | sample::TID
        | sample::TIME
        | sample::PERIOD
        | sample::READ
        | sample::IDENTIFIER
        | sample::WEIGHT_STRUCT;
    let rf = read::ID | read::GROUP | read::LOST;
    let mut slots = Attr::new(types::RAW, 0x400);
    slots.sample_type = st;
    slots.read_format = rf;
    slots.set(flag::SAMPLE_ID_ALL | flag::DISABLED, true);
    let mut cycles = slots;
    cycles.config = 0x3c;
    cycles.sample_period_or_freq = 100_003;
    cycles.set(flag::DISABLED, false);
    cycles.set_precise_ip(3);
    let metric = |umask: u64| {
        let mut m = slots;
        m.config = umask << 8;
        m.set(flag::DISABLED, false);
        m
    };
    let events = [
        (101, slots),
        (102, cycles),
        (103, metric(0x80)),
        (104, metric(0x81)),
        (105, metric(0x82)),
        (106, metric(0x83)),
    ];
    let d = Decoder::new(events);
    assert_eq!(d.attrs().len(), 6);

    let values: Vec<ReadValue> = [(101, 5_000_000), (102, 1_000_000), (103, 2_000_000)]
        .into_iter()
        .chain([(104, 500_000), (105, 1_500_000), (106, 1_000_000)])
        .map(|(id, value)| ReadValue {
            value,
            id,
            lost: id - 101,
        })
        .collect();
    let (retire_lat, ins_lat, var1) = (123u64, 17u64, 0x0001_0002u64);
    let f = SampleFields {
        misc: misc::USER | misc::EXACT_IP,
        id: 102,
        ip: 0x40_1234,
        pid: 500,
        tid: 501,
        time: 77_000,
        period: 100_003,
        read: ReadFields {
            values: values.clone(),
            ..ReadFields::default()
        },
        weight: (retire_lat << 48) | (ins_lat << 32) | var1,
        ..SampleFields::default()
    };
    let bytes = Encoder::new(cycles).sample(&f);
    let (loc, rec) = d.decode_located(&only(&bytes)).unwrap();
    let loc = loc.unwrap();
    assert_eq!((loc.index, loc.id), (1, Some(102)), "the sampler's attr");
    let Record::Sample(s) = rec else {
        panic!("{rec:?}")
    };
    check_sample(&cycles, &f, &s);
    assert!(s.exact_ip());
    assert_eq!(s.cpumode(), misc::USER);
    let r = s.read.unwrap();
    let got: Vec<(Option<u64>, u64, Option<u64>)> =
        r.iter().map(|e| (e.id, e.value, e.lost)).collect();
    let want: Vec<_> = values
        .iter()
        .map(|v| (Some(v.id), v.value, Some(v.lost)))
        .collect();
    assert_eq!(got, want, "group order, leader first");
    assert_eq!(r.by_id(104).unwrap().value, 500_000);
    assert_eq!((r.time_enabled, r.time_running), (None, None));
    assert_eq!(
        s.weight_struct(),
        Some(Weight {
            var1: 0x0001_0002,
            ins_lat: 17,
            retire_lat: 123
        })
    );
}

/// Two attrs with different sample_types (so IDENTIFIER), interleaved with every kind of
/// non-sample record; the trailers differ in size per attr.
#[test]
fn mixed_recording_with_identifier() {
    let mut a = attr(
        sample::IDENTIFIER
            | sample::IP
            | sample::TID
            | sample::TIME
            | sample::CPU
            | sample::PERIOD
            | sample::CALLCHAIN,
        0,
    );
    a.set(flag::MMAP2 | flag::COMM | flag::TASK, true);
    let b = attr(
        sample::IDENTIFIER
            | sample::IP
            | sample::TID
            | sample::TIME
            | sample::READ
            | sample::WEIGHT_STRUCT,
        read::ID | read::GROUP,
    );
    let (ea, eb) = (Encoder::new(a), Encoder::new(b));
    let sid = |id: u64, time: u64| SampleId {
        pid: 300,
        tid: 301,
        time,
        id,
        cpu: 2,
        ..SampleId::default()
    };
    let sample_a = |id: u64, ip: u64| SampleFields {
        id,
        ip,
        pid: 300,
        tid: 301,
        time: ip,
        cpu: 1,
        period: 10_000,
        callchain: vec![context::USER, ip, 0x40_0100],
        misc: misc::USER,
        ..SampleFields::default()
    };
    let sample_b = SampleFields {
        id: 10,
        ip: 0x40_3000,
        pid: 300,
        tid: 302,
        time: 15,
        read: ReadFields {
            values: vec![
                ReadValue {
                    value: 1,
                    id: 10,
                    lost: 0,
                },
                ReadValue {
                    value: 2,
                    id: 11,
                    lost: 0,
                },
            ],
            ..ReadFields::default()
        },
        weight: 200 << 48,
        ..SampleFields::default()
    };
    let inode = Mmap2Fields {
        misc: misc::USER,
        pid: 300,
        tid: 300,
        addr: 0x40_0000,
        len: 0x1000,
        pgoff: 0,
        file: Mmap2File::Inode {
            maj: 8,
            min: 1,
            ino: 12345,
            ino_generation: 7,
        },
        prot: 5,
        flags: 2,
        filename: b"/usr/bin/true".to_vec(),
    };
    let build_id = Mmap2Fields {
        file: Mmap2File::BuildId((1..=20).collect()),
        filename: b"/lib/x86_64-linux-gnu/libc.so.6".to_vec(),
        addr: 0x7f00_0000,
        ..inode.clone()
    };
    let mut stream = Vec::new();
    let mut push = |r: Vec<u8>| stream.extend_from_slice(&r);
    push(ea.mmap2(&sid(1, 1), &inode));
    push(eb.comm(&sid(10, 2), 300, 300, b"true", true));
    push(ea.sample(&sample_a(1, 10)));
    push(eb.sample(&sample_b));
    // FORK and EXIT carry their own time, taken a little before the sample id's.
    push(ea.fork(&sid(2, 3), [300, 299, 302, 301], 2));
    push(ea.sample(&sample_a(2, 20)));
    push(eb.exit(&sid(11, 4), [300, 299, 302, 301], 3));
    push(ea.lost(&sid(1, 5), 1, 17));
    push(eb.throttle(&sid(10, 6), false, 6, 10, 10));
    push(ea.switch(&sid(2, 7), true, true));
    push(eb.ksymbol(
        &sid(10, 8),
        0xffff_ffff_c000_0000,
        0x100,
        1,
        0,
        b"bpf_prog_abc",
    ));
    push(ea.mmap2(&sid(1, 9), &build_id));
    push(encode::record(21, 0, &[0xee; 16]));
    push(eb.lost_samples(&sid(11, 10), 3));
    push(encode::record(68, 0, &[]));
    push(eb.sample(&sample_b));

    let d = Decoder::new([(1, a), (2, a), (10, b), (11, b)]);
    assert_eq!(d.attrs().len(), 2);
    let mut out = Vec::new();
    for raw in records(&stream) {
        let raw = raw.unwrap();
        let decoded = d.decode_located(&raw).unwrap();
        // The fast time read (used to order records) agrees with the full decode: the
        // sample id's time, as perf orders records (FORK and EXIT too).
        let want = match &decoded.1 {
            Record::Sample(s) => s.time,
            other => other.sample_id().and_then(|s| s.time),
        };
        assert_eq!(d.time(&raw), want, "{:?}", decoded.1);
        out.push(decoded);
    }
    assert_eq!(out.len(), 16);
    let trailer = |rec: &Record<'_>| *rec.sample_id().unwrap();
    let want_a = |id: u64, time: u64| decode::SampleId {
        pid: Some(300),
        tid: Some(301),
        time: Some(time),
        cpu: Some(2),
        identifier: Some(id),
        ..Default::default()
    };
    let want_b = |id: u64, time: u64| decode::SampleId {
        cpu: None,
        ..want_a(id, time)
    };
    let index = |i: usize| out[i].0.map(|l| l.index);

    let Record::Mmap2(m) = &out[0].1 else {
        panic!("{:?}", out[0])
    };
    assert_eq!(
        (m.pid, m.tid, m.addr, m.len, m.pgoff),
        (300, 300, 0x40_0000, 0x1000, 0)
    );
    assert_eq!(
        m.file,
        FileId::Inode {
            maj: 8,
            min: 1,
            ino: 12345,
            ino_generation: 7
        }
    );
    assert_eq!((m.prot, m.flags, m.filename), (5, 2, &b"/usr/bin/true"[..]));
    assert_eq!(m.sample_id, want_a(1, 1));

    let Record::Comm(c) = &out[1].1 else {
        panic!("{:?}", out[1])
    };
    assert_eq!(
        (c.pid, c.tid, c.comm, c.exec),
        (300, 300, &b"true"[..], true)
    );
    assert_eq!(c.sample_id, want_b(10, 2));
    assert_eq!(index(1), Some(1));

    for (i, f) in [(2, sample_a(1, 10)), (5, sample_a(2, 20))] {
        let Record::Sample(s) = &out[i].1 else {
            panic!("{:?}", out[i])
        };
        check_sample(&a, &f, s);
        assert_eq!(index(i), Some(0));
    }
    for i in [3, 15] {
        let Record::Sample(s) = &out[i].1 else {
            panic!("{:?}", out[i])
        };
        check_sample(&b, &sample_b, s);
        assert_eq!(s.weight_struct().unwrap().retire_lat, 200);
        assert_eq!(index(i), Some(1));
    }

    let Record::Fork(t) = &out[4].1 else {
        panic!("{:?}", out[4])
    };
    assert_eq!(
        (t.pid, t.ppid, t.tid, t.ptid, t.time),
        (300, 299, 302, 301, 2)
    );
    assert_eq!(trailer(&out[4].1), want_a(2, 3));
    let Record::Exit(t) = &out[6].1 else {
        panic!("{:?}", out[6])
    };
    assert_eq!((t.pid, t.tid, t.time), (300, 302, 3));
    assert_eq!(trailer(&out[6].1), want_b(11, 4));

    assert_eq!(
        out[7].1,
        Record::Lost {
            id: 1,
            lost: 17,
            sample_id: want_a(1, 5)
        }
    );
    let Record::Throttle(t) = &out[8].1 else {
        panic!("{:?}", out[8])
    };
    assert_eq!((t.time, t.id, t.stream_id), (6, 10, 10));
    assert_eq!(t.sample_id, want_b(10, 6));
    assert_eq!(
        out[9].1,
        Record::Switch {
            out: true,
            preempt: true,
            sample_id: want_a(2, 7)
        }
    );
    let Record::Ksymbol(k) = &out[10].1 else {
        panic!("{:?}", out[10])
    };
    assert_eq!(
        (k.addr, k.len, k.ksym_type, k.flags, k.name),
        (0xffff_ffff_c000_0000, 0x100, 1, 0, &b"bpf_prog_abc"[..])
    );
    assert_eq!(k.sample_id, want_b(10, 8));

    let Record::Mmap2(m) = &out[11].1 else {
        panic!("{:?}", out[11])
    };
    assert_eq!(m.file, FileId::BuildId(&(1..=20).collect::<Vec<u8>>()));
    assert_eq!(m.filename, b"/lib/x86_64-linux-gnu/libc.so.6");
    assert_eq!(m.addr, 0x7f00_0000);
    assert_eq!(m.sample_id, want_a(1, 9));

    assert_eq!(
        out[12],
        (
            None,
            Record::Unknown {
                header: RecordHeader {
                    type_: 21,
                    misc: 0,
                    size: 24
                }
            }
        )
    );
    assert_eq!(
        out[13].1,
        Record::LostSamples {
            lost: 3,
            sample_id: want_b(11, 10)
        }
    );
    assert!(matches!(out[14].1, Record::Unknown { header } if header.type_ == 68));
}

#[test]
fn unknown_records_are_skipped_by_size() {
    let a = attr(sample::IP, 0);
    let mut stream = encode::record(200, 0x1234, &[0xff; 40]);
    stream.extend(encode::record(22, 0, &[]));
    stream.extend(Encoder::new(a).sample(&SampleFields {
        ip: 0xabc,
        ..SampleFields::default()
    }));
    let d = Decoder::new([(1, a)]);
    let recs: Vec<Record<'_>> = records(&stream)
        .map(|r| d.decode(&r.unwrap()).unwrap())
        .collect();
    assert_eq!(recs.len(), 3);
    assert!(
        matches!(recs[0], Record::Unknown { header } if header.size == 48 && header.misc == 0x1234)
    );
    assert!(matches!(recs[1], Record::Unknown { header } if header.type_ == 22));
    assert!(matches!(recs[2], Record::Sample(s) if s.ip == Some(0xabc)));
}

#[test]
fn bad_sizes_end_the_stream_with_one_error() {
    let a = attr(sample::IP, 0);
    let good = Encoder::new(a).sample(&SampleFields::default());
    for bad_size in [0u16, 7, 1000] {
        let mut s = good.clone();
        let mut bad = encode::record(9, 0, &[0; 8]);
        bad[6..8].copy_from_slice(&bad_size.to_le_bytes());
        s.extend(bad);
        s.extend(good.clone());
        let items: Vec<_> = records(&s).collect();
        assert_eq!(items.len(), 2, "size {bad_size}");
        assert!(items[0].is_ok());
        let e = items[1].as_ref().unwrap_err();
        assert!(
            e.to_string().starts_with("SAMPLE record at offset 16"),
            "{e}"
        );
    }
}

/// Every record of the mixed stream, truncated at every length: the stream splitter reports
/// the cut, and a record whose header claims the shorter size fails to decode (SAMPLE and the
/// fixed-size records) or at least does not panic (records ending in a string).
#[test]
fn truncation_at_every_length_is_an_error() {
    let a = attr(
        sample::IDENTIFIER | sample::TID | sample::TIME | sample::CPU | sample::READ,
        ALL_READ,
    );
    let all: u64 = sample::NAMES.iter().map(|(b, _)| b).fold(0, |x, b| x | b);
    let full = attr(all & !sample::WEIGHT, ALL_READ);
    let (e, ef) = (Encoder::new(a), Encoder::new(full));
    let s = SampleId {
        id: 77,
        ..SampleId::default()
    };
    let fixed = [
        ef.sample(&fields(ALL_READ)),
        e.sample(&fields(ALL_READ)),
        e.fork(&s, [1, 2, 3, 4], 5),
        e.exit(&s, [1, 2, 3, 4], 5),
        e.lost(&s, 77, 1),
        e.lost_samples(&s, 1),
        e.throttle(&s, true, 1, 77, 77),
        e.switch(&s, false, false),
        e.switch_cpu_wide(&s, true, false, 9, 9),
        e.read(&s, 1, 2, &read_fields(ALL_READ)),
    ];
    let strings = [
        e.comm(&s, 1, 1, b"a-much-longer-command-name", false),
        e.mmap(&s, 0, (1, 1), (0x1000, 0x2000, 0), b"/bin/sh"),
        e.ksymbol(&s, 1, 2, 1, 0, b"sym"),
    ];
    let d = Decoder::new([(77, a)]);
    let dfull = Decoder::new([(77, full)]);
    for (i, rec) in fixed.iter().chain(&strings).enumerate() {
        let dec = if i == 0 { &dfull } else { &d };
        assert!(dec.decode(&only(rec)).is_ok(), "record {i} decodes whole");
        for len in 0..rec.len() {
            let cut = &rec[..len];
            let items: Vec<_> = records(cut).collect();
            if len == 0 {
                assert!(items.is_empty());
            } else {
                assert!(
                    matches!(items[..], [Err(_)]),
                    "record {i} cut at {len}: {items:?}"
                );
            }
            if len < 8 {
                continue;
            }
            let mut shorter = cut.to_vec();
            shorter[6..8].copy_from_slice(&(len as u16).to_le_bytes());
            let got = dec.decode(&only(&shorter));
            if i < fixed.len() {
                assert!(got.is_err(), "record {i} with size {len}: {got:?}");
            }
        }
    }
}

/// HW_INDEX for bit 0 of `br`, COUNTERS for bit 1.
fn branch_bits(br: u64) -> u64 {
    (if br & 1 != 0 { branch::HW_INDEX } else { 0 })
        | (if br & 2 != 0 { branch::COUNTERS } else { 0 })
}

fn any_attr() -> impl Strategy<Value = Attr> {
    (
        prop_oneof![any::<u64>(), (0u64..1 << 25)],
        prop_oneof![any::<u64>(), (0u64..32)],
        any::<u64>(),
        any::<u64>(),
        0u64..4,
        any::<bool>(),
    )
        .prop_map(|(st, rf, ru, ri, br, all)| {
            let mut a = Attr {
                sample_type: st,
                read_format: rf,
                sample_regs_user: ru,
                sample_regs_intr: ri,
                branch_sample_type: branch_bits(br),
                ..Attr::default()
            };
            a.set(flag::SAMPLE_ID_ALL, all);
            a
        })
}

/// Records with sane headers around random bodies, then random trailing bytes.
fn any_stream() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(
            (
                0u32..24,
                any::<u16>(),
                prop::collection::vec(any::<u8>(), 0..160),
            ),
            0..6,
        ),
        prop::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(|(recs, tail)| {
            let mut out = Vec::new();
            for (t, m, body) in recs {
                out.extend(encode::record(t, m, &body));
            }
            out.extend(tail);
            out
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(
        attrs in prop::collection::vec((0u64..4, any_attr()), 1..4),
        stream in any_stream(),
        junk in prop::collection::vec(any::<u8>(), 0..128),
    ) {
        let d = Decoder::new(attrs.clone());
        for bytes in [&stream, &junk] {
            let mut n = 0;
            for raw in records(bytes) {
                n += 1;
                prop_assert!(n <= bytes.len() / 8 + 1, "the iterator ends");
                if let Ok(raw) = raw {
                    let _ = d.decode(&raw);
                    for (_, a) in &attrs {
                        let _ = Record::parse(&raw, &Layout::from_attr(a));
                    }
                }
            }
        }
    }

    #[test]
    fn random_samples_round_trip(
        st in 0u64..1 << 25,
        rf in 0u64..32,
        (nu, ni, br) in (0u32..6, 0u32..6, 0u64..4),
        (id, ip, pid, tid, time, addr, stream_id, cpu, period) in (
            any::<u64>(), any::<u64>(), any::<u32>(), any::<u32>(), any::<u64>(),
            any::<u64>(), any::<u64>(), any::<u32>(), any::<u64>(),
        ),
        (te, tr, values) in (
            any::<u64>(), any::<u64>(),
            prop::collection::vec(any::<(u64, u64, u64)>(), 0..5),
        ),
        (callchain, raw, entries, hw_idx) in (
            prop::collection::vec(any::<u64>(), 0..8),
            prop::collection::vec(any::<u8>(), 0..20),
            prop::collection::vec(any::<[u64; 3]>(), 0..4),
            any::<u64>(),
        ),
        (regs, abi_u, abi_i, stack_words, dyn_size) in (
            prop::collection::vec(any::<u64>(), 6), 0u64..3, 0u64..3, 0usize..4, any::<u64>(),
        ),
        (weight, data_src, transaction, phys, cgroup, dps, cps, aux, misc) in (
            any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>(),
            any::<u64>(), any::<u64>(), prop::collection::vec(any::<u8>(), 0..24), any::<u16>(),
        ),
    ) {
        let a = Attr {
            sample_type: st,
            read_format: rf,
            sample_regs_user: (1u64 << nu) - 1,
            sample_regs_intr: ((1u64 << ni) - 1) << 8,
            branch_sample_type: branch_bits(br),
            ..Attr::default()
        };
        let mut values: Vec<ReadValue> =
            values.into_iter().map(|(value, id, lost)| ReadValue { value, id, lost }).collect();
        if rf & read::GROUP == 0 {
            values.truncate(1);
        }
        let f = SampleFields {
            misc, id, ip, pid, tid, time, addr, stream_id, cpu, period,
            read: ReadFields { time_enabled: te, time_running: tr, values },
            callchain,
            raw,
            branch: BranchFields {
                hw_idx,
                counters: entries.iter().map(|e| e[0] ^ e[2]).collect(),
                entries,
            },
            regs_user: RegsFields { abi: abi_u, regs: regs[..nu as usize].to_vec() },
            stack_user: StackFields {
                data: (0..stack_words * 8).map(|i| i as u8).collect(),
                dyn_size,
            },
            weight, data_src, transaction,
            regs_intr: RegsFields { abi: abi_i, regs: regs[..ni as usize].to_vec() },
            phys_addr: phys, cgroup, data_page_size: dps, code_page_size: cps, aux,
        };
        round_trip(&a, &f);
    }
}

/// A real cpu-clock sampling-read group (user space only, so it runs unprivileged): the samples
/// decode with the test thread's tid, increasing times, a zero WEIGHT_STRUCT and the group
/// values leader first.
#[test]
fn real_cpu_clock_group_decodes() {
    let st = sample::IP
        | sample::TID
        | sample::TIME
        | sample::PERIOD
        | sample::CALLCHAIN
        | sample::WEIGHT_STRUCT
        | sample::READ
        | sample::IDENTIFIER;
    let rf = read::ID | read::GROUP | read::LOST;
    let clock = |config: u64, period: u64| {
        let mut a = Attr::new(types::SOFTWARE, config);
        a.sample_period_or_freq = period;
        a.sample_type = st;
        a.read_format = rf;
        a.set(
            flag::DISABLED | flag::SAMPLE_ID_ALL | flag::EXCLUDE_KERNEL | flag::EXCLUDE_HV,
            true,
        );
        a
    };
    let leader_attr = clock(1, 0);
    let mut member_attr = clock(0, 200_000);
    member_attr.set(flag::DISABLED, false);
    let leader = kernel::open(&leader_attr, 0, -1, None)
        .unwrap_or_else(|e| panic!("perf_event_open (perf_event_paranoid?): {e}"));
    let member = kernel::open(&member_attr, 0, -1, Some(&leader)).unwrap();
    let mut rb = kernel::RingBuffer::new(&member, 16).unwrap();
    leader.set_output(&member).unwrap();
    let (lid, mid) = (leader.id().unwrap(), member.id().unwrap());
    leader.enable(true).unwrap();
    let end = Instant::now() + Duration::from_millis(100);
    let mut x = 1u64;
    while Instant::now() < end {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    leader.disable(true).unwrap();
    let mut bytes = Vec::new();
    rb.drain(&mut bytes).unwrap();

    let d = Decoder::new([(lid, leader_attr), (mid, member_attr)]);
    let tid = kernel::gettid();
    let mut times = Vec::new();
    let mut last_leader = 0;
    for raw in records(&bytes) {
        let raw = raw.unwrap();
        let (loc, rec) = d.decode_located(&raw).unwrap();
        let Record::Sample(s) = rec else { continue };
        assert_eq!(loc.unwrap().id, Some(mid), "the member samples");
        assert_eq!(s.tid, Some(tid));
        assert_eq!(s.period, Some(200_000));
        assert_eq!(s.weight, Some(0), "software events write a zero weight");
        assert_eq!(s.weight_struct(), Some(Weight::default()));
        assert_eq!(s.cpumode(), misc::USER);
        let c = s.callchain.unwrap();
        assert_eq!(c.get(0), Some(context::USER));
        assert_eq!(c.get(1), s.ip);
        let r = s.read.unwrap();
        let ids: Vec<_> = r.iter().map(|e| e.id).collect();
        assert_eq!(ids, [Some(lid), Some(mid)]);
        let leader_value = r.get(0).unwrap().value;
        assert!(leader_value >= last_leader, "cumulative task-clock");
        last_leader = leader_value;
        times.push(s.time.unwrap());
    }
    assert!(times.len() >= 20, "{} samples", times.len());
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "time goes forward");
}

#[test]
fn errors_name_type_offset_and_field() {
    let a = attr(sample::IP | sample::CALLCHAIN, 0);
    let mut bytes = encode::record(3, 0, &[0; 8]);
    let mut s = Encoder::new(a).sample(&fields(0));
    s[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    bytes.extend(s);
    let d = Decoder::new([(1, a)]);
    let raws: Vec<_> = records(&bytes).map(Result::unwrap).collect();
    let e: DecodeError = d.decode(&raws[1]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "SAMPLE record at offset 16 too short for its sample_type (CALLCHAIN): needs {} bytes, has 48",
            usize::MAX
        )
    );
}

/// Without `sample_id_all`, FORK and EXIT are ordered by their own time (no other record has
/// one), and a sample by its TIME.
#[test]
fn task_records_without_sample_ids_keep_their_own_time() {
    let mut a = attr(sample::IP | sample::TID | sample::TIME, 0);
    a.set(flag::SAMPLE_ID_ALL, false);
    a.set(flag::TASK, true);
    let e = Encoder::new(a);
    let none = SampleId::default();
    let d = Decoder::new([(1, a)]);
    let fork = e.fork(&none, [300, 299, 302, 301], 77);
    let exit = e.exit(&none, [300, 299, 302, 301], 88);
    let comm = e.comm(&none, 300, 300, b"true", false);
    for (bytes, want) in [(fork, Some(77)), (exit, Some(88)), (comm, None)] {
        let raw = records(&bytes).next().unwrap().unwrap();
        assert_eq!(d.time(&raw), want);
    }
}
