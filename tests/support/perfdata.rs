//! A perf.data writer for tests: files laid out byte for byte as perf record writes them in
//! file mode, so hardware-only recordings (hybrid PMUs, TopDown groups) can be made on a
//! machine without a PMU and read by hrec and by the installed perf alike.
//!
//! Written from perf's writer, not from hrec's reader: `perf_session__write_header` and
//! `perf_header__adds_write` in `tools/perf/util/header.c` (6.1), and the `write_*` function
//! of each feature there. The layout:
//!
//! ```text
//! 0    struct perf_file_header (104 bytes): magic "PERFILE2", size 104,
//!      attr_size = sizeof(struct perf_file_attr), attrs {offset, size}, data {offset, size},
//!      event_types {0, 0}, adds_features (a 256-bit feature bitmap, 4 u64)
//! 104  every event's ids (u64 each), event after event
//!      the attrs: per event struct perf_file_attr { perf_event_attr attr; {offset, size} ids }
//!      the data section: the records
//!      the feature table: one {offset, size} per set feature bit, in bit order
//!      the feature sections, in the same order
//! ```
//!
//! Strings in feature sections are `do_write_string`'s: a u32 length that counts the NUL and
//! pads to 64 bytes (`NAME_ALIGN`), then the bytes, NUL-padded to that length. EVENT_DESC and
//! GROUP_DESC are made from the events and groups given; the other sections from the setters.
//! The attrs are written in the kernel's `perf_event_attr` layout (perf-abi.md 2.2), from the
//! fields of hrec's [`Attr`] (a plain struct of the kernel's fields) by this file's own
//! offsets; the records come from [`super::encode`].

use std::collections::BTreeMap;

use hrec::event::Attr;

/// perf's feature bits (`HEADER_*` in `tools/perf/util/header.h`).
pub mod feature {
    #![allow(missing_docs)]
    pub const BUILD_ID: u32 = 2;
    pub const HOSTNAME: u32 = 3;
    pub const OSRELEASE: u32 = 4;
    pub const VERSION: u32 = 5;
    pub const ARCH: u32 = 6;
    pub const NRCPUS: u32 = 7;
    pub const CPUDESC: u32 = 8;
    pub const CPUID: u32 = 9;
    pub const TOTAL_MEM: u32 = 10;
    pub const CMDLINE: u32 = 11;
    pub const EVENT_DESC: u32 = 12;
    pub const PMU_MAPPINGS: u32 = 16;
    pub const GROUP_DESC: u32 = 17;
    pub const NUMA_TOPOLOGY: u32 = 14;
    pub const SAMPLE_TIME: u32 = 21;
    pub const HYBRID_TOPOLOGY: u32 = 30;
}

/// `PERF_RECORD_FINISHED_ROUND`: perf's record after each pass over the ring buffers.
pub const FINISHED_ROUND: u32 = 68;

/// `NAME_ALIGN` of `do_write_string`.
const NAME_ALIGN: usize = 64;

/// `sizeof(struct perf_event_attr)` in perf 6.1 (`PERF_ATTR_SIZE_VER7`): what it writes as the
/// attr and as its `size` field.
pub const ATTR_SIZE: u32 = 128;

/// One evsel: its attr, its name (EVENT_DESC) and the ids of its fds.
#[derive(Debug, Clone)]
pub struct Event {
    /// The attr as opened.
    pub attr: Attr,
    /// `evsel__name`.
    pub name: String,
    /// One id per fd (per CPU or thread it was opened on).
    pub ids: Vec<u64>,
}

/// A group (GROUP_DESC): its name, leader index and member count (leader included).
#[derive(Debug, Clone)]
pub struct Group {
    /// `group_name`, `None` for perf's `{anon_group}`.
    pub name: Option<String>,
    /// Index of the leader among the events.
    pub leader: u32,
    /// Members, leader included; the members follow the leader.
    pub members: u32,
}

/// A perf.data file being put together.
#[derive(Debug, Clone, Default)]
pub struct PerfData {
    /// The evsels, in evlist order.
    pub events: Vec<Event>,
    /// The groups (written as GROUP_DESC when there are any).
    pub groups: Vec<Group>,
    /// Feature sections other than EVENT_DESC and GROUP_DESC, by bit.
    pub features: BTreeMap<u32, Vec<u8>>,
    /// The data section.
    pub records: Vec<u8>,
}

/// `s` as `do_write_string` writes it.
pub fn string(s: &str) -> Vec<u8> {
    let len = (s.len() + 1).next_multiple_of(NAME_ALIGN);
    let mut v = (len as u32).to_le_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v.resize(4 + len, 0);
    v
}

/// `attr` in the kernel's `struct perf_event_attr` layout, `size` bytes (the `size` field
/// says so too).
pub fn attr_bytes(a: &Attr, size: u32) -> Vec<u8> {
    let mut b = vec![0u8; 136];
    let mut put = |off: usize, v: &[u8]| b[off..off + v.len()].copy_from_slice(v);
    put(0, &a.type_.to_le_bytes());
    put(4, &size.to_le_bytes());
    put(8, &a.config.to_le_bytes());
    put(16, &a.sample_period_or_freq.to_le_bytes());
    put(24, &a.sample_type.to_le_bytes());
    put(32, &a.read_format.to_le_bytes());
    put(40, &a.flags.to_le_bytes());
    put(48, &a.wakeup.to_le_bytes());
    put(52, &a.bp_type.to_le_bytes());
    put(56, &a.config1.to_le_bytes());
    put(64, &a.config2.to_le_bytes());
    put(72, &a.branch_sample_type.to_le_bytes());
    put(80, &a.sample_regs_user.to_le_bytes());
    put(88, &a.sample_stack_user.to_le_bytes());
    put(92, &a.clockid.to_le_bytes());
    put(96, &a.sample_regs_intr.to_le_bytes());
    put(104, &a.aux_watermark.to_le_bytes());
    put(108, &a.sample_max_stack.to_le_bytes());
    put(112, &a.aux_sample_size.to_le_bytes());
    put(120, &a.sig_data.to_le_bytes());
    put(128, &a.config3.to_le_bytes());
    b.truncate(size as usize);
    b
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

impl PerfData {
    /// An empty file.
    pub fn new() -> PerfData {
        PerfData::default()
    }

    /// Adds an evsel; returns its index.
    pub fn event(&mut self, attr: Attr, name: &str, ids: Vec<u64>) -> usize {
        self.events.push(Event {
            attr,
            name: name.to_string(),
            ids,
        });
        self.events.len() - 1
    }

    /// Adds a group of `members` events (leader included) led by event `leader`.
    pub fn group(&mut self, leader: usize, members: u32) {
        self.groups.push(Group {
            name: None,
            leader: leader as u32,
            members,
        });
    }

    /// A string feature (HOSTNAME, OSRELEASE, VERSION, ARCH, CPUDESC, CPUID).
    pub fn string_feature(&mut self, f: u32, s: &str) {
        self.features.insert(f, string(s));
    }

    /// NRCPUS: CPUs available (`cpu__max_present_cpu`) and online.
    pub fn nrcpus(&mut self, available: u32, online: u32) {
        self.features
            .insert(feature::NRCPUS, u32s(&[available, online]));
    }

    /// NUMA_TOPOLOGY: per node its number, total and free memory (kB) and CPU list.
    pub fn numa_topology(&mut self, nodes: &[(u32, u64, u64, &str)]) {
        let mut b = u32s(&[nodes.len() as u32]);
        for (nr, total, free, cpus) in nodes {
            b.extend_from_slice(&nr.to_le_bytes());
            b.extend_from_slice(&total.to_le_bytes());
            b.extend_from_slice(&free.to_le_bytes());
            b.extend(string(cpus));
        }
        self.features.insert(feature::NUMA_TOPOLOGY, b);
    }

    /// TOTAL_MEM in kB.
    pub fn total_mem(&mut self, kb: u64) {
        self.features.insert(feature::TOTAL_MEM, u64s(&[kb]));
    }

    /// CMDLINE: the argument count, then each argument as a string (perf's own path first).
    pub fn cmdline(&mut self, args: &[&str]) {
        let mut b = u32s(&[args.len() as u32]);
        for a in args {
            b.extend(string(a));
        }
        self.features.insert(feature::CMDLINE, b);
    }

    /// PMU_MAPPINGS: the number of PMUs, then each PMU's type (u32) and name.
    pub fn pmu_mappings(&mut self, pmus: &[(u32, &str)]) {
        let mut b = u32s(&[pmus.len() as u32]);
        for (t, n) in pmus {
            b.extend(t.to_le_bytes());
            b.extend(string(n));
        }
        self.features.insert(feature::PMU_MAPPINGS, b);
    }

    /// HYBRID_TOPOLOGY: the number of core PMUs, then each one's name and CPU list.
    pub fn hybrid_topology(&mut self, pmus: &[(&str, &str)]) {
        let mut b = u32s(&[pmus.len() as u32]);
        for (n, cpus) in pmus {
            b.extend(string(n));
            b.extend(string(cpus));
        }
        self.features.insert(feature::HYBRID_TOPOLOGY, b);
    }

    /// SAMPLE_TIME: the first and last sample's time.
    pub fn sample_time(&mut self, first: u64, last: u64) {
        self.features
            .insert(feature::SAMPLE_TIME, u64s(&[first, last]));
    }

    /// EVENT_DESC (`write_event_desc`): the number of events and the attr size (u32 each),
    /// then per event its attr, the number of ids (u32), its name and its ids.
    fn event_desc(&self) -> Vec<u8> {
        let mut b = u32s(&[self.events.len() as u32, ATTR_SIZE]);
        for e in &self.events {
            b.extend(attr_bytes(&e.attr, ATTR_SIZE));
            b.extend((e.ids.len() as u32).to_le_bytes());
            b.extend(string(&e.name));
            b.extend(u64s(&e.ids));
        }
        b
    }

    /// GROUP_DESC (`write_group_desc`): the number of groups (u32), then per group its name
    /// (`{anon_group}` without one), the leader's index and the member count (u32 each).
    fn group_desc(&self) -> Vec<u8> {
        let mut b = u32s(&[self.groups.len() as u32]);
        for g in &self.groups {
            b.extend(string(g.name.as_deref().unwrap_or("{anon_group}")));
            b.extend(u32s(&[g.leader, g.members]));
        }
        b
    }

    /// The file's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        const HEADER: usize = 104;
        let file_attr = u64::from(ATTR_SIZE) + 16;
        let mut b = vec![0u8; HEADER];
        let mut id_sections = Vec::new();
        for e in &self.events {
            id_sections.push((b.len() as u64, 8 * e.ids.len() as u64));
            b.extend(u64s(&e.ids));
        }
        let attrs_at = b.len() as u64;
        for (e, (off, size)) in self.events.iter().zip(&id_sections) {
            b.extend(attr_bytes(&e.attr, ATTR_SIZE));
            b.extend(u64s(&[*off, *size]));
        }
        let attrs_size = b.len() as u64 - attrs_at;
        let data_at = b.len() as u64;
        b.extend(&self.records);
        let data_size = b.len() as u64 - data_at;
        // The features in bit order, the table first.
        let mut features = self.features.clone();
        if !self.events.is_empty() {
            features.insert(feature::EVENT_DESC, self.event_desc());
        }
        if !self.groups.is_empty() {
            features.insert(feature::GROUP_DESC, self.group_desc());
        }
        let table = b.len();
        b.resize(table + 16 * features.len(), 0);
        let mut bitmap = [0u64; 4];
        for (k, (bit, data)) in features.iter().enumerate() {
            bitmap[*bit as usize / 64] |= 1 << (bit % 64);
            let at = b.len() as u64;
            b[table + 16 * k..table + 16 * (k + 1)]
                .copy_from_slice(&u64s(&[at, data.len() as u64]));
            b.extend(data);
        }
        let mut header = b"PERFILE2".to_vec();
        header.extend(u64s(&[
            HEADER as u64,
            file_attr,
            attrs_at,
            attrs_size,
            data_at,
            data_size,
            0,
            0,
        ]));
        header.extend(u64s(&bitmap));
        b[..HEADER].copy_from_slice(&header);
        b
    }

    /// Writes the file to `path`.
    pub fn write(&self, path: &std::path::Path) {
        std::fs::write(path, self.bytes()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// A minimal x86-64 ELF executable: one `PT_LOAD` (read and execute) of the whole file at
/// `0x400000`, the functions' code one after another in `.text` from file offset 0x1000
/// (address 0x401000), and a symbol table naming them (global `STT_FUNC` with their sizes).
/// Returns the file and each function's address. What `perf record` would have mapped for a
/// non-PIE program (MMAP2 at 0x400000, page offset 0), and what hrec and perf resolve
/// symbols from.
pub fn tiny_elf(functions: &[(&str, &[u8])]) -> (Vec<u8>, Vec<u64>) {
    const BASE: u64 = 0x40_0000;
    const TEXT: u64 = 0x1000;
    let mut text = Vec::new();
    let mut addrs = Vec::new();
    for (_, code) in functions {
        addrs.push(BASE + TEXT + text.len() as u64);
        text.extend_from_slice(code);
        text.resize(text.len().next_multiple_of(16), 0xcc);
    }
    let mut strtab = vec![0u8];
    let mut symtab = vec![0u8; 24];
    for ((name, code), addr) in functions.iter().zip(&addrs) {
        let at = strtab.len() as u32;
        strtab.extend_from_slice(name.as_bytes());
        strtab.push(0);
        symtab.extend(at.to_le_bytes());
        symtab.push(0x12); // STB_GLOBAL, STT_FUNC
        symtab.push(0);
        symtab.extend(1u16.to_le_bytes()); // .text
        symtab.extend(addr.to_le_bytes());
        symtab.extend((code.len() as u64).to_le_bytes());
    }
    let shstrtab = b"\0.text\0.symtab\0.strtab\0.shstrtab\0".to_vec();
    let mut f = vec![0u8; TEXT as usize];
    f.extend(&text);
    let symtab_at = f.len().next_multiple_of(8);
    f.resize(symtab_at, 0);
    f.extend(&symtab);
    let strtab_at = f.len();
    f.extend(&strtab);
    let shstrtab_at = f.len();
    f.extend(&shstrtab);
    let sh_at = f.len().next_multiple_of(8);
    f.resize(sh_at, 0);
    // Section headers: null, .text, .symtab, .strtab, .shstrtab.
    let section = |name: u32,
                   type_: u32,
                   flags: u64,
                   addr: u64,
                   off: usize,
                   size: usize,
                   link: u32,
                   info: u32,
                   align: u64,
                   entsize: u64| {
        let mut s = u32s(&[name, type_]);
        s.extend(u64s(&[flags, addr, off as u64, size as u64]));
        s.extend(u32s(&[link, info]));
        s.extend(u64s(&[align, entsize]));
        s
    };
    f.extend(vec![0u8; 64]);
    f.extend(section(
        1,
        1,
        6,
        BASE + TEXT,
        TEXT as usize,
        text.len(),
        0,
        0,
        16,
        0,
    ));
    f.extend(section(7, 2, 0, 0, symtab_at, symtab.len(), 3, 1, 8, 24));
    f.extend(section(15, 3, 0, 0, strtab_at, strtab.len(), 0, 0, 1, 0));
    f.extend(section(
        23,
        3,
        0,
        0,
        shstrtab_at,
        shstrtab.len(),
        0,
        0,
        1,
        0,
    ));
    let len = f.len() as u64;
    // The ELF header and the one program header.
    let mut h = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0".to_vec();
    h.extend(2u16.to_le_bytes()); // ET_EXEC
    h.extend(62u16.to_le_bytes()); // EM_X86_64
    h.extend(1u32.to_le_bytes());
    h.extend(u64s(&[
        addrs.first().copied().unwrap_or(BASE),
        64,
        sh_at as u64,
    ]));
    h.extend(0u32.to_le_bytes()); // e_flags
    for v in [64u16, 56, 1, 64, 5, 4] {
        h.extend(v.to_le_bytes());
    }
    h.extend(u32s(&[1, 5])); // PT_LOAD, R+X
    h.extend(u64s(&[0, BASE, BASE, len, len, 0x1000]));
    f[..h.len()].copy_from_slice(&h);
    (f, addrs)
}

/// An x86-64 executable with data: [`tiny_elf`]'s `.text` (read and execute, at `0x401000`),
/// then a second `PT_LOAD` (read and write) at `0x600000` from the next page of the file
/// holding `.data` (the `data` objects, bytes in the file) followed by `.bss` (the `bss`
/// objects, no bytes in the file), each object 64-byte aligned, named by global `STT_OBJECT`
/// symbols with their sizes. Returns the file, the functions' addresses, the objects'
/// addresses (`data` then `bss`) and the data segment's file offset and size in memory.
pub struct DataElf {
    /// The file.
    pub bytes: Vec<u8>,
    /// Each function's address.
    pub functions: Vec<u64>,
    /// Each object's address, `data` then `bss`.
    pub objects: Vec<u64>,
    /// The data segment's file offset (its MMAP's `pgoff`).
    pub data_offset: u64,
    /// The data segment's size in memory (`.data` and `.bss`).
    pub data_len: u64,
}

/// Where [`data_elf`] puts the data segment.
pub const DATA_BASE: u64 = 0x60_0000;

/// See [`DataElf`].
pub fn data_elf(functions: &[(&str, &[u8])], data: &[(&str, u64)], bss: &[(&str, u64)]) -> DataElf {
    const BASE: u64 = 0x40_0000;
    const TEXT: u64 = 0x1000;
    let mut text = Vec::new();
    let mut faddrs = Vec::new();
    for (_, code) in functions {
        faddrs.push(BASE + TEXT + text.len() as u64);
        text.extend_from_slice(code);
        text.resize(text.len().next_multiple_of(16), 0xcc);
    }
    let data_at = (TEXT as usize + text.len()).next_multiple_of(0x1000);
    let mut objects = Vec::new();
    let mut at = 0u64;
    for (_, size) in data {
        objects.push(DATA_BASE + at);
        at = (at + size).next_multiple_of(64);
    }
    let data_size = at;
    for (_, size) in bss {
        objects.push(DATA_BASE + at);
        at = (at + size).next_multiple_of(64);
    }
    let bss_size = at - data_size;
    let mut strtab = vec![0u8];
    let mut symtab = vec![0u8; 24];
    let mut sym = |name: &str, info: u8, shndx: u16, addr: u64, size: u64| {
        let n = strtab.len() as u32;
        strtab.extend_from_slice(name.as_bytes());
        strtab.push(0);
        symtab.extend(n.to_le_bytes());
        symtab.push(info);
        symtab.push(0);
        symtab.extend(shndx.to_le_bytes());
        symtab.extend(addr.to_le_bytes());
        symtab.extend(size.to_le_bytes());
    };
    for ((name, code), addr) in functions.iter().zip(&faddrs) {
        sym(name, 0x12, 1, *addr, code.len() as u64); // STB_GLOBAL, STT_FUNC
    }
    for (i, (name, size)) in data.iter().chain(bss).enumerate() {
        let shndx = if i < data.len() { 2 } else { 3 };
        sym(name, 0x11, shndx, objects[i], *size); // STB_GLOBAL, STT_OBJECT
    }
    let shstrtab = b"\0.text\0.data\0.bss\0.symtab\0.strtab\0.shstrtab\0".to_vec();
    let mut f = vec![0u8; TEXT as usize];
    f.extend(&text);
    f.resize(data_at, 0);
    f.resize(data_at + data_size as usize, 0x5a);
    let symtab_at = f.len().next_multiple_of(8);
    f.resize(symtab_at, 0);
    f.extend(&symtab);
    let strtab_at = f.len();
    f.extend(&strtab);
    let shstrtab_at = f.len();
    f.extend(&shstrtab);
    let sh_at = f.len().next_multiple_of(8);
    f.resize(sh_at, 0);
    let section =
        |name: u32, type_: u32, flags: u64, addr: u64, off: usize, size: u64, link: u32| {
            let mut s = u32s(&[name, type_]);
            s.extend(u64s(&[flags, addr, off as u64, size]));
            s.extend(u32s(&[link, if type_ == 2 { 1 } else { 0 }]));
            s.extend(u64s(&[
                if type_ == 2 { 8 } else { 16 },
                if type_ == 2 { 24 } else { 0 },
            ]));
            s
        };
    f.extend(vec![0u8; 64]);
    f.extend(section(
        1,
        1,
        6,
        BASE + TEXT,
        TEXT as usize,
        text.len() as u64,
        0,
    ));
    f.extend(section(7, 1, 3, DATA_BASE, data_at, data_size, 0));
    f.extend(section(
        13,
        8,
        3,
        DATA_BASE + data_size,
        data_at + data_size as usize,
        bss_size,
        0,
    ));
    f.extend(section(18, 2, 0, 0, symtab_at, symtab.len() as u64, 5));
    f.extend(section(26, 3, 0, 0, strtab_at, strtab.len() as u64, 0));
    f.extend(section(34, 3, 0, 0, shstrtab_at, shstrtab.len() as u64, 0));
    let text_end = (TEXT as usize + text.len()) as u64;
    let mut h = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0".to_vec();
    h.extend(2u16.to_le_bytes()); // ET_EXEC
    h.extend(62u16.to_le_bytes()); // EM_X86_64
    h.extend(1u32.to_le_bytes());
    h.extend(u64s(&[
        faddrs.first().copied().unwrap_or(BASE),
        64,
        sh_at as u64,
    ]));
    h.extend(0u32.to_le_bytes()); // e_flags
    for v in [64u16, 56, 2, 64, 7, 6] {
        h.extend(v.to_le_bytes());
    }
    h.extend(u32s(&[1, 5])); // PT_LOAD, R+X
    h.extend(u64s(&[0, BASE, BASE, text_end, text_end, 0x1000]));
    h.extend(u32s(&[1, 6])); // PT_LOAD, R+W
    h.extend(u64s(&[
        data_at as u64,
        DATA_BASE,
        DATA_BASE,
        data_size,
        data_size + bss_size,
        0x1000,
    ]));
    f[..h.len()].copy_from_slice(&h);
    DataElf {
        bytes: f,
        functions: faddrs,
        objects,
        data_offset: data_at as u64,
        data_len: data_size + bss_size,
    }
}
