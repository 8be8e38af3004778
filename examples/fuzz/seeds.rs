//! Seed corpora, built at run time from the repository's fixtures (and Intel's perfmon files
//! when they are there), so that no large binary is committed for fuzzing.

use std::path::{Path, PathBuf};

use hrec::decode::branch;
use hrec::event::Attr;
use hrec::event::attr::{flag, read, sample};

use super::targets::{Env, MAP_BASE};

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

fn record(type_: u32, misc: u16, body: &[u8]) -> Vec<u8> {
    let size = (8 + body.len()).next_multiple_of(8);
    let mut r = type_.to_le_bytes().to_vec();
    r.extend(misc.to_le_bytes());
    r.extend(u16::try_from(size).unwrap_or(u16::MAX).to_le_bytes());
    r.extend(body);
    r.resize(size, 0);
    r
}

/// A perf.data file's sections: (attr bytes, ids) per event, the data section, and the
/// feature sections present.
struct PerfFile<'a> {
    attrs: Vec<&'a [u8]>,
    ids: Vec<Vec<u64>>,
    data: &'a [u8],
    features: Vec<(u64, &'a [u8])>,
}

fn section(b: &[u8], off: u64, size: u64) -> &[u8] {
    let (Ok(off), Ok(size)) = (usize::try_from(off), usize::try_from(size)) else {
        return &[];
    };
    b.get(off..off.saturating_add(size)).unwrap_or(&[])
}

fn perf_file(b: &[u8]) -> PerfFile<'_> {
    let attr_size = u64_at(b, 16);
    let attrs_sec = section(b, u64_at(b, 24), u64_at(b, 32));
    let (data_off, data_size) = (u64_at(b, 40), u64_at(b, 48));
    let mut f = PerfFile {
        attrs: Vec::new(),
        ids: Vec::new(),
        data: section(b, data_off, data_size),
        features: Vec::new(),
    };
    if attr_size > 16 {
        for e in attrs_sec.chunks_exact(attr_size as usize) {
            let (attr, ids) = e.split_at(e.len() - 16);
            let ids = section(b, u64_at(ids, 0), u64_at(ids, 8));
            f.attrs.push(attr);
            f.ids
                .push(ids.chunks_exact(8).map(|w| u64_at(w, 0)).collect());
        }
    }
    let mut table = (data_off + data_size) as usize;
    for bit in 0..256u64 {
        if u64_at(b, 72 + (bit / 64) as usize * 8) & (1 << (bit % 64)) != 0 {
            f.features
                .push((bit, section(b, u64_at(b, table), u64_at(b, table + 8))));
            table += 16;
        }
    }
    f
}

/// A file-mode perf.data turned into the stream `perf record -o -` writes: the 16-byte
/// header, HEADER_ATTR and HEADER_FEATURE records, then the data.
fn to_pipe(b: &[u8]) -> Vec<u8> {
    let f = perf_file(b);
    let mut out = b"PERFILE2".to_vec();
    out.extend(16u64.to_le_bytes());
    for (attr, ids) in f.attrs.iter().zip(&f.ids) {
        let mut body = attr.to_vec();
        for id in ids {
            body.extend(id.to_le_bytes());
        }
        out.extend(record(64, 0, &body));
    }
    for (feat, data) in &f.features {
        // Build ids come as records of their own in pipe mode; big features do not fit.
        if *feat == 2 || data.len() > 60_000 {
            continue;
        }
        let mut body = feat.to_le_bytes().to_vec();
        body.extend(*data);
        out.extend(record(80, 0, &body));
    }
    out.extend(record(80, 0, &32u64.to_le_bytes()));
    out.extend(f.data);
    out
}

fn read(root: &Path, rel: &str) -> Option<Vec<u8>> {
    std::fs::read(root.join(rel)).ok()
}

/// Where Intel's perfmon files are (`HREC_PERFMON_DIR`, else `../shared/perfmon`).
pub fn perfmon_dir(root: &Path) -> PathBuf {
    std::env::var_os("HREC_PERFMON_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/perfmon"))
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// One synthetic SAMPLE (and a COMM with the sample_id trailer) for `attr`, every field its
/// `sample_type`, `read_format` and `branch_sample_type` ask for present.
fn synthetic(attr: &Attr) -> Vec<u8> {
    let st = attr.sample_type;
    let rf = attr.read_format;
    let mut b = Vec::new();
    let w = |b: &mut Vec<u8>, v: u64| b.extend(v.to_le_bytes());
    if st & sample::IDENTIFIER != 0 {
        w(&mut b, 1);
    }
    if st & sample::IP != 0 {
        w(&mut b, MAP_BASE + 0x11e4);
    }
    if st & sample::TID != 0 {
        w(&mut b, (43 << 32) | 42);
    }
    if st & sample::TIME != 0 {
        w(&mut b, 1_000_000);
    }
    if st & sample::ADDR != 0 {
        w(&mut b, 0x7ffd_0000_0000);
    }
    if st & sample::ID != 0 {
        w(&mut b, 1);
    }
    if st & sample::STREAM_ID != 0 {
        w(&mut b, 1);
    }
    if st & sample::CPU != 0 {
        w(&mut b, 3);
    }
    if st & sample::PERIOD != 0 {
        w(&mut b, 100_003);
    }
    if st & sample::READ != 0 {
        let n = if rf & read::GROUP != 0 {
            w(&mut b, 2);
            2
        } else {
            1
        };
        if rf & read::GROUP == 0 {
            w(&mut b, 1234);
        }
        if rf & read::TOTAL_TIME_ENABLED != 0 {
            w(&mut b, 5000);
        }
        if rf & read::TOTAL_TIME_RUNNING != 0 {
            w(&mut b, 4000);
        }
        for i in 0..n {
            if rf & read::GROUP != 0 {
                w(&mut b, 1000 + i);
            }
            if rf & read::ID != 0 {
                w(&mut b, 1 + i);
            }
            if rf & read::LOST != 0 {
                w(&mut b, 0);
            }
        }
    }
    if st & sample::CALLCHAIN != 0 {
        w(&mut b, 3);
        w(&mut b, (-512i64) as u64);
        w(&mut b, MAP_BASE + 0x11e4);
        w(&mut b, MAP_BASE + 0x1238);
    }
    if st & sample::RAW != 0 {
        b.extend(4u32.to_le_bytes());
        b.extend([1, 2, 3, 4]);
    }
    if st & sample::BRANCH_STACK != 0 {
        w(&mut b, 2);
        if attr.branch_sample_type & branch::HW_INDEX != 0 {
            w(&mut b, 1);
        }
        for i in 0..6 {
            w(&mut b, MAP_BASE + 0x1000 + i * 8);
        }
        if attr.branch_sample_type & branch::COUNTERS != 0 {
            w(&mut b, 1);
            w(&mut b, 2);
        }
    }
    if st & sample::REGS_USER != 0 {
        w(&mut b, 2);
        for i in 0..attr.sample_regs_user.count_ones() {
            w(&mut b, 0x7ffd_0000_0000 + u64::from(i) * 8);
        }
    }
    if st & sample::STACK_USER != 0 {
        w(&mut b, 32);
        for i in 0..4 {
            w(&mut b, MAP_BASE + 0x1238 + i);
        }
        w(&mut b, 24);
    }
    if st & (sample::WEIGHT | sample::WEIGHT_STRUCT) != 0 {
        w(&mut b, (7 << 48) | (5 << 32) | 30);
    }
    for bit in [
        sample::DATA_SRC,
        sample::TRANSACTION,
        sample::REGS_INTR,
        sample::PHYS_ADDR,
        sample::CGROUP,
        sample::DATA_PAGE_SIZE,
        sample::CODE_PAGE_SIZE,
        sample::AUX,
    ] {
        if st & bit == 0 {
            continue;
        }
        match bit {
            sample::REGS_INTR => {
                w(&mut b, 2);
                for _ in 0..attr.sample_regs_intr.count_ones() {
                    w(&mut b, 9);
                }
            }
            sample::AUX => {
                w(&mut b, 8);
                w(&mut b, 0xabcd);
            }
            _ => w(&mut b, 4096),
        }
    }
    let mut out = record(9, 2, &b);
    // A COMM with the trailer, for the sample_id_all path.
    let mut comm = Vec::new();
    comm.extend(42u32.to_le_bytes());
    comm.extend(43u32.to_le_bytes());
    comm.extend(b"work\0\0\0\0");
    for (bit, v) in [
        (sample::TID, (43u64 << 32) | 42),
        (sample::TIME, 999),
        (sample::ID, 1),
        (sample::STREAM_ID, 1),
        (sample::CPU, 3),
        (sample::IDENTIFIER, 1),
    ] {
        if st & bit != 0 {
            comm.extend(v.to_le_bytes());
        }
    }
    out.extend(record(3, 0, &comm));
    out
}

/// An expanded hrec file (see `targets::hrec_expand`) as if recorded with `--call-graph
/// dwarf`: `unwound_at_record` set in the header and two `stacks` side blocks (the tables
/// of chains unwound at record time) appended.
fn with_stacks(expanded: &[u8]) -> Vec<u8> {
    let meta_len = u64_at(expanded, 8) >> 32;
    let Ok(meta_len) = usize::try_from(meta_len) else {
        return expanded.to_vec();
    };
    let (Some(json), Some(blocks)) = (
        expanded.get(16..16 + meta_len),
        expanded.get((16 + meta_len).next_multiple_of(8)..),
    ) else {
        return expanded.to_vec();
    };
    let mut new_json = br#"{"unwound_at_record":true,"#.to_vec();
    new_json.extend(json.get(1..).unwrap_or_default());
    let mut out = expanded.get(..12).unwrap_or_default().to_vec();
    out.extend((new_json.len() as u32).to_le_bytes());
    out.extend(&new_json);
    out.resize(out.len().next_multiple_of(8), 0);
    out.extend(blocks);
    let mut interner = hrec::data::stacks::StackInterner::new();
    for round in 0..2u64 {
        for depth in 1..6u64 {
            let chain: Vec<u64> = (0..depth)
                .map(|d| MAP_BASE + 0x1200 + d * 0x10 + round)
                .collect();
            let _ = interner.intern(&chain);
        }
        let Some(payload) = interner.take_block() else {
            continue;
        };
        let name = b"stacks";
        let mut h = b"HBLK".to_vec();
        h.push(2); // side block
        h.push(0); // zstd
        h.extend((name.len() as u16).to_le_bytes());
        h.extend((payload.len() as u32).to_le_bytes());
        h.extend((payload.len() as u32).to_le_bytes());
        h.extend(0u32.to_le_bytes()); // records
        h.extend(u32::MAX.to_le_bytes()); // source
        h.extend([0u8; 16]); // first and last time
        h.extend([0u8; 8]); // check value (the target computes it), reserved
        out.extend(h);
        out.extend(name);
        out.extend(payload);
    }
    out
}

/// `sample` seeds: the fixtures' attrs with their records, then synthetic records for a
/// spread of sample_type / read_format / branch combinations.
fn sample_seeds(root: &Path) -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for name in ["plain.perf.data", "callchain.perf.data"] {
        let Some(b) = read(root, &format!("tests/fixtures/recordings/{name}")) else {
            continue;
        };
        let f = perf_file(&b);
        for attr in &f.attrs {
            let mut s = Attr::from_bytes(attr).to_bytes().to_vec();
            s.extend(f.data.get(..f.data.len().min(16 << 10)).unwrap_or(&[]));
            seeds.push(s);
        }
    }
    let mut next = {
        let mut state = 0x5eed_f022u64;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    };
    let all = (1u64 << 25) - 1;
    let mut types = vec![all & !sample::WEIGHT, all & !sample::WEIGHT_STRUCT];
    types.extend((0..25).map(|bit| 1u64 << bit));
    types.extend((0..40).map(|_| next() & all));
    for (i, st) in types.into_iter().enumerate() {
        let mut a = Attr::new(0, 0);
        a.sample_type = st;
        a.read_format = (i as u64) & 0x1f;
        a.flags |= flag::SAMPLE_ID_ALL;
        a.sample_regs_user = if i % 2 == 0 { 0x1c0 } else { 0xff0fff };
        a.sample_regs_intr = if i % 3 == 0 { 0x1 } else { 0xffff };
        a.branch_sample_type = match i % 4 {
            0 => 0,
            1 => branch::HW_INDEX,
            2 => branch::COUNTERS,
            _ => branch::HW_INDEX | branch::COUNTERS,
        };
        a.sample_stack_user = 32;
        let mut s = a.to_bytes().to_vec();
        s.extend(synthetic(&a));
        s.extend(synthetic(&a));
        seeds.push(s);
    }
    seeds
}

/// `unwind` seeds: BP, SP and IP, then a stack holding return addresses into the binary.
fn unwind_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for (ip, depth) in [(0x11e4u64, 4usize), (0x1234, 16), (0x1274, 64), (0x12b4, 2)] {
        let sp = 0x7ffd_0000_0000u64;
        let mut s = Vec::new();
        s.extend((sp + 0x40).to_le_bytes());
        s.extend(sp.to_le_bytes());
        s.extend((MAP_BASE + ip).to_le_bytes());
        for i in 0..depth {
            let v = match i % 4 {
                0 => MAP_BASE + 0x1238,
                1 => sp + 0x40 + i as u64 * 8,
                2 => MAP_BASE + 0x1078,
                _ => 0,
            };
            s.extend(v.to_le_bytes());
        }
        s.extend(((depth * 8) as u64).to_le_bytes());
        seeds.push(s);
    }
    seeds
}

const EVENTS: &[&str] = &[
    "cycles",
    "cycles:P",
    "instructions:u,cycles:k",
    "{cycles,instructions}:S",
    "cpu_core/cycles/",
    "cpu_atom/event=0xc0,umask=0x0,name=insts/pp",
    "cpu_core/event=0x3c,umask=0x1,cmask=1,inv,edge/",
    "{slots,topdown-retiring,topdown-bad-spec,topdown-fe-bound,topdown-be-bound}",
    "cpu_core/topdown-retiring/",
    "L1-dcache-load-misses",
    "branch-misses:ppp",
    "cpu-clock,task-clock,page-faults",
    "r01c2",
    "cpu_core/config=0x1234,config1=0x5,period=10000/",
    "mem-loads,mem-stores",
    "{cpu_core/cycles/,cpu_core/instructions/}:W",
    "cycles:R",
    "cpu_core/mem-loads-aux/",
    "msr/tsc/",
    "uncore_imc_0/cas_count_read/",
];

const EXPRS: &[&str] = &[
    "1 + 2 * 3",
    "a / b if c > 0 else 0",
    "d_ratio(INST_RETIRED.ANY, CPU_CLK_UNHALTED.THREAD)",
    "min(1, max(x, y)) - #SMT_on",
    "(a + b) * (c - d) / 1e9",
    "100 * (a > 0.5 and b < 2 or not c)",
    "source_count(x) + #num_cpus_online",
    "cpu_core@TOPDOWN.SLOTS@ / duration_time",
];

/// The seeds of `target`.
pub fn seeds(env: &Env, target: &str) -> Vec<Vec<u8>> {
    let root = &env.root;
    let rec = |n: &str| read(root, &format!("tests/fixtures/recordings/{n}"));
    match target {
        "hrec" => {
            let files: Vec<Vec<u8>> = ["plain.hrec", "callchain.hrec"]
                .iter()
                .filter_map(|n| rec(n))
                .collect();
            let expanded: Vec<Vec<u8>> = files
                .iter()
                .map(|f| super::targets::hrec_expand(f))
                .collect();
            let stacks: Vec<Vec<u8>> = expanded.iter().map(|f| with_stacks(f)).collect();
            files.into_iter().chain(expanded).chain(stacks).collect()
        }
        "perfdata" => {
            let mut s: Vec<Vec<u8>> = ["plain.perf.data", "callchain.perf.data"]
                .iter()
                .filter_map(|n| rec(n))
                .collect();
            let pipes: Vec<Vec<u8>> = s.iter().map(|b| to_pipe(b)).collect();
            s.extend(pipes);
            s.extend(rec("callchain-z.perf.data"));
            s
        }
        "sample" => sample_seeds(root),
        "unwind" => unwind_seeds(),
        "elf" => env
            .symfs
            .join(super::targets::WORK_BINARY.trim_start_matches('/'))
            .canonicalize()
            .ok()
            .and_then(|p| std::fs::read(p).ok())
            .into_iter()
            .collect(),
        "disasm" => {
            let mut s = Vec::new();
            if let Some(bin) = std::fs::read(env.symfs.join("tmp/hrec-fixture/work")).ok()
                && let Some(text) = bin.get(0x1070..0x12f5)
            {
                s.push(text.to_vec());
                s.extend(text.chunks(48).map(<[u8]>::to_vec));
            }
            s.push(vec![
                0x0f, 0x0b, 0xc3, 0x90, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0,
            ]);
            s
        }
        "event" => EVENTS.iter().map(|e| e.as_bytes().to_vec()).collect(),
        "sysfs" => env
            .sysfs_files
            .iter()
            .enumerate()
            .filter_map(|(i, rel)| {
                let mut s = u16::try_from(i).ok()?.to_le_bytes().to_vec();
                s.extend(std::fs::read(env.sysfs.join(rel)).ok()?);
                Some(s)
            })
            .collect(),
        "perfmon" => {
            let mut files = Vec::new();
            files_under(&perfmon_dir(root), &mut files);
            let mut s = Vec::new();
            for f in files {
                let name = f.to_string_lossy();
                let kind = if name.ends_with("mapfile.csv") {
                    3u8
                } else if name.contains("retire_latency") {
                    2
                } else if name.contains("/metrics/") {
                    0
                } else if name.contains("/events/") {
                    1
                } else {
                    continue;
                };
                if let Ok(b) = std::fs::read(&f) {
                    let mut seed = vec![kind];
                    seed.extend(b);
                    s.push(seed);
                }
            }
            if s.is_empty() {
                s.push(b"\0[{\"MetricName\": \"ipc\", \"MetricExpr\": \"a / b\"}]".to_vec());
                s.push(b"\x03Family-model,Version,Filename,EventType\nGenuineIntel-6-97,V1,/ADL/events/x.json,core\n".to_vec());
            }
            s
        }
        "expr" => {
            let mut s: Vec<Vec<u8>> = EXPRS.iter().map(|e| e.as_bytes().to_vec()).collect();
            let mut files = Vec::new();
            files_under(&perfmon_dir(root).join("SPR/metrics"), &mut files);
            for f in files {
                let Some(v) = std::fs::read(&f)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                else {
                    continue;
                };
                let list = v.get("Metrics").unwrap_or(&v);
                for m in list.as_array().into_iter().flatten() {
                    for key in ["MetricExpr", "Formula"] {
                        if let Some(e) = m.get(key).and_then(|e| e.as_str()) {
                            s.push(e.as_bytes().to_vec());
                        }
                    }
                }
            }
            s.truncate(2000);
            s
        }
        "text" => TEXTS
            .iter()
            .map(|(k, t)| {
                let mut s = vec![*k];
                s.extend(t.as_bytes());
                s
            })
            .collect(),
        "debuginfod" => debuginfod_seeds(env),
        "trace" => {
            // The tracefs fixture's format files, each with a record of its size.
            let mut files = Vec::new();
            files_under(&root.join("tests/fixtures/tracefs/events"), &mut files);
            files
                .iter()
                .filter(|f| f.ends_with("format"))
                .filter_map(|f| std::fs::read(f).ok())
                .map(|mut s| {
                    s.push(0);
                    s.extend((0..64u8).map(|i| i.wrapping_mul(37)));
                    s
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

/// Replies of a debuginfod server (the fixture binary, plain and chunked; a miss; a size that
/// lies), a body with its declared length, and the cache's files.
fn debuginfod_seeds(env: &Env) -> Vec<Vec<u8>> {
    let bin = std::fs::read(env.symfs.join("tmp/hrec-fixture/work")).unwrap_or_default();
    let with = |kind: u8, head: &[u8], body: &[u8]| {
        let mut s = vec![kind];
        s.extend_from_slice(head);
        s.extend_from_slice(body);
        s
    };
    let mut chunked = Vec::new();
    for c in bin.chunks(4000) {
        chunked.extend(format!("{:x}\r\n", c.len()).bytes());
        chunked.extend_from_slice(c);
        chunked.extend(b"\r\n");
    }
    chunked.extend(b"0\r\n\r\n");
    vec![
        with(
            0,
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nX-DEBUGINFOD-SIZE: {0}\r\n\
                 X-DEBUGINFOD-FILE: work\r\nContent-Length: {0}\r\n\r\n",
                bin.len()
            )
            .as_bytes(),
            &bin,
        ),
        with(
            0,
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            &chunked,
        ),
        with(0, b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\n", b"not found"),
        with(
            0,
            b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999\r\n\r\n",
            &bin[..bin.len().min(64)],
        ),
        with(1, &(bin.len() as u64).to_le_bytes(), &bin),
        with(1, &u64::MAX.to_le_bytes(), &bin),
        with(2, b"600\0", &bin),
        with(2, b"5\0", b""),
    ]
}

const TEXTS: &[(u8, &str)] = &[
    (
        0,
        "ffffffff81000000 T _text\nffffffff81001000 t do_one [mod]\nffffffff81001000 T alias\n",
    ),
    (
        1,
        "7f0000001000 40 jitted_fn\n7f0000001040 0x20 other one\n",
    ),
    (2, "config:0-7,32-35"),
    (2, "config1:63"),
    (3, "event=0xc0,umask=0x1,period=2000003,name='x'"),
    (4, "0x1f"),
    (5, "0-3,8,10-11"),
    (6, "10%/2,30%/2"),
    (6, "1.5,2.25"),
    (7, "comm,dso,sym,srcline"),
    (8, "graph,0.5,caller,function,percent"),
    (9, "+srcline,-cpu"),
    (
        10,
        "thousands_sep=\",\"\ndecimal_point=\".\"\ngrouping=3;3\n",
    ),
    (11, "cpu_*/cy[a-c]les?/\ncpu_core/cycles/"),
    (
        12,
        "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 151\nstepping\t: 2\n",
    ),
];
