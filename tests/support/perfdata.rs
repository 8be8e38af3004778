//! perf.data files for tests: hardware-only recordings (hybrid PMUs, TopDown groups) made on a
//! machine without a PMU, read by hrec and by the installed perf alike. The header, attrs and
//! features are hrec's perf.data writer's ([`hrec::output::perfdata`], written from perf's
//! own writer); the records come from [`super::encode`], and the ELF files here are what such
//! recordings map.

pub use hrec::output::perfdata::ATTR_SIZE;
use hrec::output::perfdata::Header;

/// perf's feature bits (`HEADER_*` in `tools/perf/util/header.h`).
pub mod feature {
    pub use hrec::recording::perfdata::feature::*;
}

/// `PERF_RECORD_FINISHED_ROUND`: perf's record after each pass over the ring buffers.
pub const FINISHED_ROUND: u32 = hrec::recording::perfdata::user::FINISHED_ROUND;

/// A perf.data file being put together: the header parts (events, groups, features, through
/// `Deref`) and the data section.
#[derive(Debug, Clone, Default)]
pub struct PerfData {
    /// Events, groups and features.
    pub header: Header,
    /// The data section.
    pub records: Vec<u8>,
}

impl std::ops::Deref for PerfData {
    type Target = Header;
    fn deref(&self) -> &Header {
        &self.header
    }
}

impl std::ops::DerefMut for PerfData {
    fn deref_mut(&mut self) -> &mut Header {
        &mut self.header
    }
}

impl PerfData {
    /// An empty file.
    pub fn new() -> PerfData {
        PerfData::default()
    }

    /// The file's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        self.header.bytes(&self.records)
    }

    /// Writes the file to `path`.
    pub fn write(&self, path: &std::path::Path) {
        std::fs::write(path, self.bytes()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
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
