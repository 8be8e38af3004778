//! A hand-built `perf mem record` recording in the kernel's layout, shared by the memory
//! tests (`tests/mem_access.rs`, `tests/mem_report.rs`): a program with known functions and
//! data objects (`perfdata::data_elf`), its text and data mappings (the data ones with
//! `MMAP_DATA`, as `mmap_data = 1` makes the kernel write them), `[heap]`, `[stack]` and
//! anonymous memory, and PEBS load samples whose data sources are chosen field by field.

use std::path::{Path, PathBuf};

use hrec::decode::datasrc::{DataSrc, blk, hops, lock, lvl, lvlnum, op, snoop, snoopx, tlb};
use hrec::event::Attr;
use hrec::event::attr::{flag, sample, types};

use super::encode::{Encoder, Mmap2Fields, Mmap2File, SampleFields, SampleId};
use super::perfdata::{DATA_BASE, FINISHED_ROUND, PerfData, data_elf, feature};

pub const PID: u32 = 5151;
/// `PERF_RECORD_MISC_MMAP_DATA`.
pub const MMAP_DATA: u16 = 1 << 13;
pub const HEAP: u64 = 0x0200_0000;
pub const STACK: u64 = 0x7ffd_0000_0000;
pub const ANON: u64 = 0x7f00_0000_0000;

/// The attr `perf mem record` (6.1) opens on x86 for `cpu/mem-loads,ldlat=30/P` alone:
/// raw event 0x1cd with ldlat in config1, precise, ADDR, WEIGHT_STRUCT and DATA_SRC; the
/// tracking bits on it (no dummy), `mmap_data` for the data mappings.
pub fn mem_loads_attr() -> Attr {
    let mut a = Attr::new(types::RAW, 0x1cd);
    a.size = super::perfdata::ATTR_SIZE;
    a.config1 = 30;
    a.sample_type = sample::IP
        | sample::TID
        | sample::TIME
        | sample::ADDR
        | sample::CPU
        | sample::PERIOD
        | sample::WEIGHT_STRUCT
        | sample::DATA_SRC;
    a.read_format = 0;
    a.sample_period_or_freq = 4000;
    a.flags = flag::DISABLED
        | flag::INHERIT
        | flag::ENABLE_ON_EXEC
        | flag::FREQ
        | flag::MMAP
        | flag::COMM
        | flag::TASK
        | flag::MMAP2
        | flag::COMM_EXEC
        | flag::MMAP_DATA
        | flag::SAMPLE_ID_ALL
        | flag::EXCLUDE_GUEST;
    a.set_precise_ip(2);
    a
}

/// One sample: where it ran (a function index), the data address, its data source, its
/// weight (load latency) and period; which event (index into the recording's events), thread
/// (0: the process's main thread) and CPU.
#[derive(Debug, Clone, Copy)]
pub struct Access {
    pub func: usize,
    pub addr: u64,
    pub src: DataSrc,
    pub weight: u64,
    pub period: u64,
    pub event: usize,
    pub tid: u32,
    pub cpu: u32,
}

/// A recording's events (attr and name; sample ids 7, 8, ...), perf's command line and the
/// CPU's cpuid (Sapphire Rapids, `GenuineIntel,6,143,8`, by default).
pub struct Events {
    pub events: Vec<(Attr, String)>,
    pub cmdline: Vec<String>,
    pub cpuid: &'static str,
}

impl Events {
    /// `perf mem record ./memwork` on one loads event.
    pub fn mem_loads() -> Events {
        Events {
            events: vec![(mem_loads_attr(), "cpu/mem-loads,ldlat=30/P".into())],
            cmdline: ["/usr/bin/perf", "mem", "record", "./memwork"]
                .map(String::from)
                .to_vec(),
            cpuid: SPR,
        }
    }
}

/// Sapphire Rapids' cpuid, as perf writes it.
pub const SPR: &str = "GenuineIntel,6,143,8";
/// Granite Rapids', whose PEBS fills the retire latency in WEIGHT_STRUCT.
pub const GNR: &str = "GenuineIntel,6,173,1";

/// The program's functions and objects.
pub const FUNCS: [&str; 2] = ["reader", "writer"];
pub const DATA: [(&str, u64); 2] = [("shared_line", 64), ("table", 4096)];
pub const BSS: [(&str, u64); 1] = [("counters", 256)];

/// An MMAP2 record's misc, start, length, page offset, protection and file name.
pub type MapSpec<'a> = (u16, u64, u64, u64, u32, &'a [u8]);

pub struct Built {
    pub functions: Vec<u64>,
    pub objects: Vec<u64>,
}

/// Writes `perf.data` and the program `memwork` into `dir`, with `accesses` in order.
pub fn build(dir: &Path, accesses: &[Access]) -> Built {
    build_events(dir, &Events::mem_loads(), accesses)
}

/// A program the samples ran in: its path, its text and data mappings as `(start, length,
/// page offset)`, and the instruction address of each `Access::func`.
pub struct Program {
    pub path: PathBuf,
    pub text: (u64, u64, u64),
    pub data: (u64, u64, u64),
    pub ips: Vec<u64>,
}

/// [`build`] with other events (more than one need `ID` in their sample type) and threads
/// (each other thread gets a FORK and a COMM record before the samples).
pub fn build_events(dir: &Path, events: &Events, accesses: &[Access]) -> Built {
    build_named(dir, events, &FUNCS, accesses)
}

/// [`build_events`] with the program's functions named `names` (one per `Access::func`).
pub fn build_named(dir: &Path, events: &Events, names: &[&str], accesses: &[Access]) -> Built {
    let body: &[u8] = &[0x55, 0x48, 0x8b, 0x07, 0x48, 0x89, 0x06, 0x5d, 0xc3];
    let funcs: Vec<(&str, &[u8])> = names.iter().map(|n| (*n, body)).collect();
    let elf = data_elf(&funcs, &DATA, &BSS);
    let prog = dir.join("memwork");
    std::fs::write(&prog, &elf.bytes).unwrap();
    let text_len = elf.functions.last().unwrap() + 0x10 - 0x40_0000;
    let program = Program {
        path: prog,
        text: (0x40_0000, text_len.next_multiple_of(0x1000), 0),
        data: (
            DATA_BASE,
            elf.data_len.next_multiple_of(0x1000),
            elf.data_offset,
        ),
        ips: elf.functions.iter().map(|f| f + 2).collect(),
    };
    write_recording(dir, events, &program, accesses);
    Built {
        functions: elf.functions,
        objects: elf.objects,
    }
}

/// Writes `dir/perf.data`: `events`' recording of `program` (its text and data mappings,
/// `[heap]`, anonymous memory and `[stack]`) with `accesses` in order.
pub fn write_recording(dir: &Path, events: &Events, program: &Program, accesses: &[Access]) {
    let mut pd = PerfData::new();
    let attr = events.events[0].0;
    for (i, (a, name)) in events.events.iter().enumerate() {
        pd.event(*a, name, vec![7 + i as u64]);
    }
    pd.string_feature(feature::HOSTNAME, "spr");
    pd.string_feature(feature::OSRELEASE, "6.1.0-13-amd64");
    pd.string_feature(feature::VERSION, "6.1.55");
    pd.string_feature(feature::ARCH, "x86_64");
    pd.nrcpus(8, 8);
    pd.numa_topology(&[
        (0, 32_768_000, 16_000_000, "0-3"),
        (1, 32_768_000, 16_000_000, "4-7"),
    ]);
    pd.string_feature(feature::CPUDESC, "Intel(R) Xeon(R) Platinum 8480+");
    pd.string_feature(feature::CPUID, events.cpuid);
    pd.total_mem(65_536_000);
    let cmdline: Vec<&str> = events.cmdline.iter().map(String::as_str).collect();
    pd.cmdline(&cmdline);
    pd.pmu_mappings(&[(1, "software"), (4, "cpu")]);
    let enc = Encoder::new(attr);
    let mut time = 1_000_000u64;
    let sid = |time: u64| SampleId {
        pid: PID,
        tid: PID,
        time,
        cpu: 1,
        ..SampleId::default()
    };
    pd.records
        .extend(enc.comm(&sid(time), PID, PID, b"memwork", true));
    let path = program.path.to_str().unwrap().as_bytes().to_vec();
    let maps: [MapSpec<'_>; 5] = [
        (2, program.text.0, program.text.1, program.text.2, 5, &path),
        (
            2 | MMAP_DATA,
            program.data.0,
            program.data.1,
            program.data.2,
            3,
            &path,
        ),
        (2 | MMAP_DATA, HEAP, 0x21000, 0, 3, b"[heap]"),
        (2 | MMAP_DATA, ANON, 0x100000, 0, 3, b"//anon"),
        (2 | MMAP_DATA, STACK, 0x21000, 0, 3, b"[stack]"),
    ];
    for (misc, addr, len, pgoff, prot, name) in maps {
        time += 100;
        let file = if name.starts_with(b"/") && !name.starts_with(b"//") {
            Mmap2File::Inode {
                maj: 259,
                min: 2,
                ino: 4321,
                ino_generation: 0,
            }
        } else {
            Mmap2File::Inode {
                maj: 0,
                min: 0,
                ino: 0,
                ino_generation: 0,
            }
        };
        pd.records.extend(enc.mmap2(
            &sid(time),
            &Mmap2Fields {
                misc,
                pid: PID,
                tid: PID,
                addr,
                len,
                pgoff,
                file,
                prot,
                flags: 2,
                filename: name.to_vec(),
            },
        ));
    }
    let mut tids: Vec<u32> = accesses
        .iter()
        .map(|a| a.tid)
        .filter(|t| *t != 0 && *t != PID)
        .collect();
    tids.sort_unstable();
    tids.dedup();
    for tid in tids {
        time += 100;
        pd.records
            .extend(enc.fork(&sid(time), [PID, PID, tid, PID], time));
        pd.records
            .extend(enc.comm(&sid(time), PID, tid, b"memwork", false));
    }
    pd.records
        .extend(super::encode::record(FINISHED_ROUND, 0, &[]));
    let first = time + 1000;
    for a in accesses {
        time += 1000;
        let s = SampleFields {
            misc: 2,
            ip: program.ips[a.func],
            id: 7 + a.event as u64,
            pid: PID,
            tid: if a.tid == 0 { PID } else { a.tid },
            time,
            addr: a.addr,
            phys_addr: phys_of(a.addr),
            cpu: a.cpu,
            period: a.period,
            weight: a.weight,
            data_src: a.src.0,
            ..SampleFields::default()
        };
        pd.records.extend(enc.sample(&s));
    }
    pd.records
        .extend(super::encode::record(FINISHED_ROUND, 0, &[]));
    pd.sample_time(first, time);
    pd.write(&dir.join("perf.data"));
}

/// The physical address the hand-built samples give a data address (with PHYS_ADDR in their
/// sample type): its page moved to frames from 4 GiB up, the offset in the page kept.
pub fn phys_of(addr: u64) -> u64 {
    0x1_0000_0000 + (addr >> 12) * 0x3000 + (addr & 0xfff)
}

pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hrec-mem-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The rows of a report's text: the data lines' cells split at whitespace, perf's trailing
/// empty IPC columns (`-`) and hrec's Samples column left out.
pub fn rows(out: &str, hrec: bool) -> Vec<Vec<String>> {
    out.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter(|l| {
            l.trim_start()
                .as_bytes()
                .first()
                .is_some_and(u8::is_ascii_digit)
        })
        .map(|l| {
            let mut t: Vec<String> = l.split_whitespace().map(str::to_string).collect();
            if hrec && t.len() > 1 {
                t.remove(1);
            }
            while t.last().is_some_and(|x| x == "-") {
                t.pop();
            }
            t
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
pub fn src(
    op_: u64,
    lvl_: u64,
    snoop_: u64,
    lock_: u64,
    tlb_: u64,
    num: u64,
    remote: bool,
    snoopx_: u64,
    blk_: u64,
    hops_: u64,
) -> DataSrc {
    DataSrc::from_fields(
        op_, lvl_, snoop_, lock_, tlb_, num, remote, snoopx_, blk_, hops_,
    )
}

/// The accesses of the hand-built recording: the program's objects, the heap, the stack,
/// anonymous memory and an unmapped address, with data sources chosen field by field. Each
/// kind has its own weight so every row's total is known.
/// A load that hit L1, as Sapphire Rapids encodes it (the old level bits and the level
/// number).
pub fn l1_load() -> DataSrc {
    src(
        op::LOAD,
        lvl::HIT | lvl::L1,
        snoop::NONE,
        lock::NA,
        tlb::HIT | tlb::L1,
        lvlnum::L1,
        false,
        0,
        blk::NA,
        0,
    )
}

pub fn accesses(objects: &[u64]) -> Vec<Access> {
    let (shared, table, counters) = (objects[0], objects[1], objects[2]);
    let l1 = l1_load();
    // A remote cache line modified in another socket's cache (HITM), and a remote DRAM read:
    // the same old level bits, the rest tells them apart.
    let rem_hitm = src(
        op::LOAD,
        lvl::HIT,
        snoop::HITM,
        lock::NA,
        tlb::HIT | tlb::L1 | tlb::L2,
        lvlnum::ANY_CACHE,
        true,
        0,
        blk::NA,
        hops::SOCKET,
    );
    let rem_ram = src(
        op::LOAD,
        lvl::HIT,
        snoop::HITM,
        lock::NA,
        tlb::HIT | tlb::L1 | tlb::L2,
        lvlnum::RAM,
        true,
        0,
        blk::NA,
        hops::SOCKET,
    );
    // A locked store-forward block on the stack, a TLB walk to the heap, a peer transfer.
    let locked = src(
        op::LOAD,
        lvl::HIT | lvl::LFB,
        snoop::NONE,
        lock::LOCKED,
        tlb::HIT | tlb::L1,
        lvlnum::LFB,
        false,
        0,
        blk::DATA,
        0,
    );
    let walk = src(
        op::LOAD,
        lvl::HIT | lvl::LOC_RAM,
        snoop::MISS,
        lock::NA,
        tlb::MISS | tlb::WK,
        lvlnum::RAM,
        false,
        0,
        blk::ADDR,
        0,
    );
    let peer = src(
        op::LOAD,
        lvl::HIT | lvl::L2,
        snoop::HIT,
        lock::NA,
        tlb::HIT | tlb::L1,
        lvlnum::L2,
        false,
        snoopx::PEER,
        blk::NA,
        0,
    );
    let a = |func, addr, src, weight| Access {
        func,
        addr,
        src,
        weight,
        period: 1,
        event: 0,
        tid: 0,
        cpu: 1,
    };
    let mut v = Vec::new();
    for i in 0..4 {
        v.push(a(0, table + 64 * i, l1, 7));
    }
    v.push(a(1, shared + 8, rem_hitm, 400));
    v.push(a(1, shared + 8, rem_hitm, 400));
    v.push(a(0, shared + 16, rem_ram, 300));
    v.push(a(1, STACK + 0x100, locked, 25));
    v.push(a(0, HEAP + 0x2040, walk, 180));
    v.push(a(0, HEAP + 0x2048, walk, 180));
    v.push(a(0, ANON + 0x10, peer, 55));
    v.push(a(1, counters + 0x80, peer, 60));
    v.push(a(1, 0x1000, l1, 9));
    v
}

/// How `report --sort symbol_daddr,dso_daddr` names data address `addr` of a recording made
/// by [`build`] with `objects` (its data objects' addresses): the symbol cell without the
/// mode letter (`table+0x40`; heap, stack, anonymous memory and unmapped addresses by the
/// address) and the object.
pub fn data_name(objects: &[u64], addr: u64) -> (String, String) {
    let (shared, table, counters) = (objects[0], objects[1], objects[2]);
    let obj = [
        ("shared_line", shared),
        ("table", table),
        ("counters", counters),
    ]
    .into_iter()
    .rev()
    .find(|(_, s)| addr >= *s && addr < super::perfdata::DATA_BASE + 0x2000);
    let dso = match obj {
        Some((n, s)) => return (format!("{n}+{:#x}", addr - s), "memwork".into()),
        None if (HEAP..HEAP + 0x21000).contains(&addr) => "[heap]",
        None if (STACK..STACK + 0x21000).contains(&addr) => "[stack]",
        None if (ANON..ANON + 0x100000).contains(&addr) => "anon",
        None => "[unknown]",
    };
    (format!("{addr:#018x}"), dso.into())
}

/// The known rows of `keys` (each a function of one access), heaviest first: every access's
/// cells, its weight summed per row.
pub fn truth(acc: &[Access], cells: impl Fn(&Access) -> Vec<String>) -> Vec<(Vec<String>, u64)> {
    let mut rows: Vec<(Vec<String>, u64)> = Vec::new();
    for x in acc {
        let c = cells(x);
        match rows.iter_mut().find(|r| r.0 == c) {
            Some(r) => r.1 += x.weight,
            None => rows.push((c, x.weight)),
        }
    }
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    rows
}
