//! An encoder that writes perf_event records byte for byte as the kernel does, for tests.
//!
//! It is written from the kernel's writer (`perf_output_sample`, `perf_output_read_*`,
//! `__perf_event__output_id_sample`; perf-abi.md sections 3-5), not from hrec's decoder, so the
//! two check each other. Values are plain owned data; which fields are written is decided by
//! the [`Encoder`]'s attr, exactly as the kernel decides by `sample_type` / `read_format`.
//!
//! ```ignore
//! let enc = Encoder::new(attr);
//! let bytes = enc.sample(&SampleFields { ip: 0x401000, ..SampleFields::default() });
//! let trailer_too = enc.comm(&SampleId::default(), 42, 42, b"bash", true);
//! ```

use hrec::event::Attr;
use hrec::event::attr::{flag, read, sample};

/// `PERF_RECORD_*` types used by the builders.
pub mod kind {
    #![allow(missing_docs)]
    pub const MMAP: u32 = 1;
    pub const LOST: u32 = 2;
    pub const COMM: u32 = 3;
    pub const EXIT: u32 = 4;
    pub const THROTTLE: u32 = 5;
    pub const UNTHROTTLE: u32 = 6;
    pub const FORK: u32 = 7;
    pub const READ: u32 = 8;
    pub const SAMPLE: u32 = 9;
    pub const MMAP2: u32 = 10;
    pub const LOST_SAMPLES: u32 = 13;
    pub const SWITCH: u32 = 14;
    pub const SWITCH_CPU_WIDE: u32 = 15;
    pub const KSYMBOL: u32 = 17;
}

/// `PERF_RECORD_MISC_COMM_EXEC` / `SWITCH_OUT` (bit 13).
pub const MISC_BIT13: u16 = 1 << 13;
/// `PERF_RECORD_MISC_SWITCH_OUT_PREEMPT` / `MMAP_BUILD_ID` / `EXACT_IP` (bit 14).
pub const MISC_BIT14: u16 = 1 << 14;

/// One value of a read: the counter, and its id / lost count (written only when `read_format`
/// has ID / LOST).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadValue {
    /// Counter value.
    pub value: u64,
    /// Event id.
    pub id: u64,
    /// Lost samples.
    pub lost: u64,
}

/// Read values. Without `read_format` GROUP only `values[0]` is written (zeroes if empty);
/// with GROUP, `nr = values.len()` and every entry is written in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReadFields {
    /// Written with TOTAL_TIME_ENABLED.
    pub time_enabled: u64,
    /// Written with TOTAL_TIME_RUNNING.
    pub time_running: u64,
    /// The entries (leader first for groups).
    pub values: Vec<ReadValue>,
}

/// A branch stack: `hw_idx` is written when the attr's `branch_sample_type` has HW_INDEX,
/// `counters` (one per entry, as the kernel writes them) when it has COUNTERS.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BranchFields {
    /// `hw_idx`.
    pub hw_idx: u64,
    /// `{from, to, flags}` entries.
    pub entries: Vec<[u64; 3]>,
    /// Per-entry counter words; the encoder writes exactly what is given.
    pub counters: Vec<u64>,
}

/// A register block: `abi`, then `regs` only when `abi != 0`. The kernel writes
/// `popcount(mask)` registers; the encoder writes exactly what is given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RegsFields {
    /// `PERF_SAMPLE_REGS_ABI_*`.
    pub abi: u64,
    /// Register values.
    pub regs: Vec<u64>,
}

/// STACK_USER: `size = data.len()`, the data, then `dyn_size` when the size is not 0.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StackFields {
    /// The stack copy (the kernel's is a multiple of 8 bytes).
    pub data: Vec<u8>,
    /// Bytes really copied.
    pub dyn_size: u64,
}

/// Values for a SAMPLE. Only the fields whose `sample_type` bit is set are written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SampleFields {
    /// `header.misc`.
    pub misc: u16,
    /// Written for IDENTIFIER and for ID.
    pub id: u64,
    /// IP.
    pub ip: u64,
    /// TID (pid half).
    pub pid: u32,
    /// TID (tid half).
    pub tid: u32,
    /// TIME.
    pub time: u64,
    /// ADDR.
    pub addr: u64,
    /// STREAM_ID.
    pub stream_id: u64,
    /// CPU (the `res` half is written as 0).
    pub cpu: u32,
    /// PERIOD.
    pub period: u64,
    /// READ.
    pub read: ReadFields,
    /// CALLCHAIN (`nr = len`).
    pub callchain: Vec<u64>,
    /// RAW data; padded with zeroes like the kernel (see [`raw_padded`]).
    pub raw: Vec<u8>,
    /// BRANCH_STACK.
    pub branch: BranchFields,
    /// REGS_USER.
    pub regs_user: RegsFields,
    /// STACK_USER.
    pub stack_user: StackFields,
    /// WEIGHT or WEIGHT_STRUCT (one u64 for either bit).
    pub weight: u64,
    /// DATA_SRC.
    pub data_src: u64,
    /// TRANSACTION.
    pub transaction: u64,
    /// REGS_INTR.
    pub regs_intr: RegsFields,
    /// PHYS_ADDR.
    pub phys_addr: u64,
    /// CGROUP.
    pub cgroup: u64,
    /// DATA_PAGE_SIZE.
    pub data_page_size: u64,
    /// CODE_PAGE_SIZE.
    pub code_page_size: u64,
    /// AUX data (`size = len`).
    pub aux: Vec<u8>,
}

/// Values for the sample_id trailer; `id` is written for both ID and IDENTIFIER.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleId {
    /// TID (pid half).
    pub pid: u32,
    /// TID (tid half).
    pub tid: u32,
    /// TIME.
    pub time: u64,
    /// ID and IDENTIFIER.
    pub id: u64,
    /// STREAM_ID.
    pub stream_id: u64,
    /// CPU.
    pub cpu: u32,
}

/// MMAP2 file identity: inode form, or build-id form (sets `misc` MMAP_BUILD_ID).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mmap2File {
    /// `maj, min, ino, ino_generation`.
    Inode {
        /// Device major.
        maj: u32,
        /// Device minor.
        min: u32,
        /// Inode.
        ino: u64,
        /// Inode generation.
        ino_generation: u64,
    },
    /// Up to 20 bytes of build id (`build_id_size` = len, the rest zero-padded).
    BuildId(Vec<u8>),
}

/// Values for an MMAP2 record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mmap2Fields {
    /// `header.misc` (cpumode, MMAP_DATA); MMAP_BUILD_ID is added for [`Mmap2File::BuildId`].
    pub misc: u16,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Start address.
    pub addr: u64,
    /// Length.
    pub len: u64,
    /// File offset.
    pub pgoff: u64,
    /// Inode or build id.
    pub file: Mmap2File,
    /// `PROT_*`.
    pub prot: u32,
    /// `MAP_*`.
    pub flags: u32,
    /// File name (written NUL-terminated, padded to 8).
    pub filename: Vec<u8>,
}

/// Little-endian byte sink.
#[derive(Debug, Default)]
struct Out(Vec<u8>);

impl Out {
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
}

/// `data` with zeroes appended so that `4 + len` is a multiple of 8: what the kernel writes
/// after RAW's u32 size (and what that size counts).
pub fn raw_padded(data: &[u8]) -> Vec<u8> {
    let mut v = data.to_vec();
    while !(4 + v.len()).is_multiple_of(8) {
        v.push(0);
    }
    v
}

/// `s`, a NUL, and zeroes up to a multiple of 8 (how the kernel writes comm and file names).
pub fn cstr_padded(s: &[u8]) -> Vec<u8> {
    let mut v = s.to_vec();
    v.push(0);
    while !v.len().is_multiple_of(8) {
        v.push(0);
    }
    v
}

/// A record: header (`size` = 8 + body) followed by `body`. Panics above 64 KiB.
pub fn record(type_: u32, misc: u16, body: &[u8]) -> Vec<u8> {
    let size = u16::try_from(8 + body.len()).expect("record larger than 64 KiB");
    let mut o = Out::default();
    o.u32(type_);
    o.u16(misc);
    o.u16(size);
    o.bytes(body);
    o.0
}

/// Read values in `read_format`'s layout (perf-abi.md 3.3).
pub fn read_values(read_format: u64, r: &ReadFields) -> Vec<u8> {
    let mut o = Out::default();
    let zero = ReadValue::default();
    let entry = |o: &mut Out, v: &ReadValue| {
        o.u64(v.value);
        if read_format & read::ID != 0 {
            o.u64(v.id);
        }
        if read_format & read::LOST != 0 {
            o.u64(v.lost);
        }
    };
    let times = |o: &mut Out| {
        if read_format & read::TOTAL_TIME_ENABLED != 0 {
            o.u64(r.time_enabled);
        }
        if read_format & read::TOTAL_TIME_RUNNING != 0 {
            o.u64(r.time_running);
        }
    };
    if read_format & read::GROUP != 0 {
        o.u64(r.values.len() as u64);
        times(&mut o);
        for v in &r.values {
            entry(&mut o, v);
        }
    } else {
        let v = r.values.first().unwrap_or(&zero);
        o.u64(v.value);
        times(&mut o);
        if read_format & read::ID != 0 {
            o.u64(v.id);
        }
        if read_format & read::LOST != 0 {
            o.u64(v.lost);
        }
    }
    o.0
}

/// `PERF_SAMPLE_BRANCH_HW_INDEX`.
pub const BRANCH_HW_INDEX: u64 = 1 << 17;
/// `PERF_SAMPLE_BRANCH_COUNTERS`.
pub const BRANCH_COUNTERS: u64 = 1 << 19;

/// Builds records for one attr: its `sample_type`, `read_format`, `branch_sample_type` and
/// `sample_id_all` decide what is written.
#[derive(Debug, Clone, Copy)]
pub struct Encoder {
    /// The attr the records belong to.
    pub attr: Attr,
}

impl Encoder {
    /// An encoder for `attr`'s records.
    pub fn new(attr: Attr) -> Self {
        Encoder { attr }
    }

    fn has(&self, bit: u64) -> bool {
        self.attr.sample_type & bit != 0
    }

    /// The SAMPLE body (without header), in `perf_output_sample` order.
    pub fn sample_body(&self, f: &SampleFields) -> Vec<u8> {
        let mut o = Out::default();
        let regs = |o: &mut Out, r: &RegsFields| {
            o.u64(r.abi);
            if r.abi != 0 {
                r.regs.iter().for_each(|&v| o.u64(v));
            }
        };
        if self.has(sample::IDENTIFIER) {
            o.u64(f.id);
        }
        if self.has(sample::IP) {
            o.u64(f.ip);
        }
        if self.has(sample::TID) {
            o.u32(f.pid);
            o.u32(f.tid);
        }
        if self.has(sample::TIME) {
            o.u64(f.time);
        }
        if self.has(sample::ADDR) {
            o.u64(f.addr);
        }
        if self.has(sample::ID) {
            o.u64(f.id);
        }
        if self.has(sample::STREAM_ID) {
            o.u64(f.stream_id);
        }
        if self.has(sample::CPU) {
            o.u32(f.cpu);
            o.u32(0);
        }
        if self.has(sample::PERIOD) {
            o.u64(f.period);
        }
        if self.has(sample::READ) {
            o.bytes(&read_values(self.attr.read_format, &f.read));
        }
        if self.has(sample::CALLCHAIN) {
            o.u64(f.callchain.len() as u64);
            f.callchain.iter().for_each(|&v| o.u64(v));
        }
        if self.has(sample::RAW) {
            let data = raw_padded(&f.raw);
            o.u32(data.len() as u32);
            o.bytes(&data);
        }
        if self.has(sample::BRANCH_STACK) {
            o.u64(f.branch.entries.len() as u64);
            if self.attr.branch_sample_type & BRANCH_HW_INDEX != 0 {
                o.u64(f.branch.hw_idx);
            }
            for e in &f.branch.entries {
                e.iter().for_each(|&v| o.u64(v));
            }
            if self.attr.branch_sample_type & BRANCH_COUNTERS != 0 {
                f.branch.counters.iter().for_each(|&v| o.u64(v));
            }
        }
        if self.has(sample::REGS_USER) {
            regs(&mut o, &f.regs_user);
        }
        if self.has(sample::STACK_USER) {
            o.u64(f.stack_user.data.len() as u64);
            o.bytes(&f.stack_user.data);
            if !f.stack_user.data.is_empty() {
                o.u64(f.stack_user.dyn_size);
            }
        }
        if self.has(sample::WEIGHT | sample::WEIGHT_STRUCT) {
            o.u64(f.weight);
        }
        if self.has(sample::DATA_SRC) {
            o.u64(f.data_src);
        }
        if self.has(sample::TRANSACTION) {
            o.u64(f.transaction);
        }
        if self.has(sample::REGS_INTR) {
            regs(&mut o, &f.regs_intr);
        }
        if self.has(sample::PHYS_ADDR) {
            o.u64(f.phys_addr);
        }
        if self.has(sample::CGROUP) {
            o.u64(f.cgroup);
        }
        if self.has(sample::DATA_PAGE_SIZE) {
            o.u64(f.data_page_size);
        }
        if self.has(sample::CODE_PAGE_SIZE) {
            o.u64(f.code_page_size);
        }
        if self.has(sample::AUX) {
            o.u64(f.aux.len() as u64);
            o.bytes(&f.aux);
        }
        o.0
    }

    /// A whole PERF_RECORD_SAMPLE.
    pub fn sample(&self, f: &SampleFields) -> Vec<u8> {
        record(kind::SAMPLE, f.misc, &self.sample_body(f))
    }

    /// The sample_id trailer (empty without `sample_id_all`), in
    /// `__perf_event__output_id_sample` order.
    pub fn trailer(&self, s: &SampleId) -> Vec<u8> {
        let mut o = Out::default();
        if !self.attr.has(flag::SAMPLE_ID_ALL) {
            return o.0;
        }
        if self.has(sample::TID) {
            o.u32(s.pid);
            o.u32(s.tid);
        }
        if self.has(sample::TIME) {
            o.u64(s.time);
        }
        if self.has(sample::ID) {
            o.u64(s.id);
        }
        if self.has(sample::STREAM_ID) {
            o.u64(s.stream_id);
        }
        if self.has(sample::CPU) {
            o.u32(s.cpu);
            o.u32(0);
        }
        if self.has(sample::IDENTIFIER) {
            o.u64(s.id);
        }
        o.0
    }

    /// A non-SAMPLE record: header, `body`, then the trailer.
    pub fn with_trailer(&self, type_: u32, misc: u16, body: &[u8], s: &SampleId) -> Vec<u8> {
        let mut b = body.to_vec();
        b.extend_from_slice(&self.trailer(s));
        record(type_, misc, &b)
    }

    /// PERF_RECORD_MMAP.
    pub fn mmap(
        &self,
        s: &SampleId,
        misc: u16,
        pid_tid: (u32, u32),
        addr_len_pgoff: (u64, u64, u64),
        filename: &[u8],
    ) -> Vec<u8> {
        let mut o = Out::default();
        o.u32(pid_tid.0);
        o.u32(pid_tid.1);
        o.u64(addr_len_pgoff.0);
        o.u64(addr_len_pgoff.1);
        o.u64(addr_len_pgoff.2);
        o.bytes(&cstr_padded(filename));
        self.with_trailer(kind::MMAP, misc, &o.0, s)
    }

    /// PERF_RECORD_MMAP2 in either form.
    pub fn mmap2(&self, s: &SampleId, m: &Mmap2Fields) -> Vec<u8> {
        let mut o = Out::default();
        let mut misc = m.misc;
        o.u32(m.pid);
        o.u32(m.tid);
        o.u64(m.addr);
        o.u64(m.len);
        o.u64(m.pgoff);
        match &m.file {
            Mmap2File::Inode {
                maj,
                min,
                ino,
                ino_generation,
            } => {
                o.u32(*maj);
                o.u32(*min);
                o.u64(*ino);
                o.u64(*ino_generation);
            }
            Mmap2File::BuildId(id) => {
                misc |= MISC_BIT14;
                let mut b = [0u8; 24];
                b[0] = id.len().min(20) as u8;
                b[4..4 + id.len().min(20)].copy_from_slice(&id[..id.len().min(20)]);
                o.bytes(&b);
            }
        }
        o.u32(m.prot);
        o.u32(m.flags);
        o.bytes(&cstr_padded(&m.filename));
        self.with_trailer(kind::MMAP2, misc, &o.0, s)
    }

    /// PERF_RECORD_COMM (`exec` sets COMM_EXEC).
    pub fn comm(&self, s: &SampleId, pid: u32, tid: u32, comm: &[u8], exec: bool) -> Vec<u8> {
        let mut o = Out::default();
        o.u32(pid);
        o.u32(tid);
        o.bytes(&cstr_padded(comm));
        let misc = if exec { MISC_BIT13 } else { 0 };
        self.with_trailer(kind::COMM, misc, &o.0, s)
    }

    fn task(&self, type_: u32, s: &SampleId, pid_ppid_tid_ptid: [u32; 4], time: u64) -> Vec<u8> {
        let mut o = Out::default();
        pid_ppid_tid_ptid.iter().for_each(|&v| o.u32(v));
        o.u64(time);
        self.with_trailer(type_, 0, &o.0, s)
    }

    /// PERF_RECORD_FORK: `[pid, ppid, tid, ptid]`, time.
    pub fn fork(&self, s: &SampleId, ids: [u32; 4], time: u64) -> Vec<u8> {
        self.task(kind::FORK, s, ids, time)
    }

    /// PERF_RECORD_EXIT: `[pid, ppid, tid, ptid]`, time.
    pub fn exit(&self, s: &SampleId, ids: [u32; 4], time: u64) -> Vec<u8> {
        self.task(kind::EXIT, s, ids, time)
    }

    /// PERF_RECORD_LOST.
    pub fn lost(&self, s: &SampleId, id: u64, lost: u64) -> Vec<u8> {
        let mut o = Out::default();
        o.u64(id);
        o.u64(lost);
        self.with_trailer(kind::LOST, 0, &o.0, s)
    }

    /// PERF_RECORD_LOST_SAMPLES.
    pub fn lost_samples(&self, s: &SampleId, lost: u64) -> Vec<u8> {
        self.with_trailer(kind::LOST_SAMPLES, 0, &lost.to_le_bytes(), s)
    }

    /// PERF_RECORD_THROTTLE, or UNTHROTTLE with `unthrottle`.
    pub fn throttle(
        &self,
        s: &SampleId,
        unthrottle: bool,
        time: u64,
        id: u64,
        stream_id: u64,
    ) -> Vec<u8> {
        let mut o = Out::default();
        o.u64(time);
        o.u64(id);
        o.u64(stream_id);
        let t = if unthrottle {
            kind::UNTHROTTLE
        } else {
            kind::THROTTLE
        };
        self.with_trailer(t, 0, &o.0, s)
    }

    fn switch_misc(out: bool, preempt: bool) -> u16 {
        (if out { MISC_BIT13 } else { 0 }) | (if preempt { MISC_BIT14 } else { 0 })
    }

    /// PERF_RECORD_SWITCH (no body).
    pub fn switch(&self, s: &SampleId, out: bool, preempt: bool) -> Vec<u8> {
        self.with_trailer(kind::SWITCH, Self::switch_misc(out, preempt), &[], s)
    }

    /// PERF_RECORD_SWITCH_CPU_WIDE.
    pub fn switch_cpu_wide(
        &self,
        s: &SampleId,
        out: bool,
        preempt: bool,
        next_prev_pid: u32,
        next_prev_tid: u32,
    ) -> Vec<u8> {
        let mut o = Out::default();
        o.u32(next_prev_pid);
        o.u32(next_prev_tid);
        let misc = Self::switch_misc(out, preempt);
        self.with_trailer(kind::SWITCH_CPU_WIDE, misc, &o.0, s)
    }

    /// PERF_RECORD_KSYMBOL.
    pub fn ksymbol(
        &self,
        s: &SampleId,
        addr: u64,
        len: u32,
        ksym_type: u16,
        flags: u16,
        name: &[u8],
    ) -> Vec<u8> {
        let mut o = Out::default();
        o.u64(addr);
        o.u32(len);
        o.u16(ksym_type);
        o.u16(flags);
        o.bytes(&cstr_padded(name));
        self.with_trailer(kind::KSYMBOL, 0, &o.0, s)
    }

    /// PERF_RECORD_READ: pid, tid and the values in the attr's `read_format`.
    pub fn read(&self, s: &SampleId, pid: u32, tid: u32, r: &ReadFields) -> Vec<u8> {
        let mut o = Out::default();
        o.u32(pid);
        o.u32(tid);
        o.bytes(&read_values(self.attr.read_format, r));
        self.with_trailer(kind::READ, 0, &o.0, s)
    }
}
