//! Where things are in a perf.data file: the magics and header sizes, the numbers of the
//! feature sections and of perf's own record types, and bounds-checked little-endian readers.
//! Every read of file bytes goes through these readers: an offset or length taken from the file
//! that points outside it gives `None`, never a panic.

use std::fmt::Write as _;

/// The magic of a little-endian perf.data file (file and pipe mode).
pub const MAGIC: [u8; 8] = *b"PERFILE2";
/// The magic of a big-endian perf.data file.
pub(super) const MAGIC_BIG_ENDIAN: [u8; 8] = *b"2ELIFREP";
/// The magic of perf's first file format.
pub(super) const MAGIC_V1: [u8; 8] = *b"PERFFILE";
/// `sizeof(struct perf_file_header)`.
pub(super) const HEADER_SIZE: u64 = 104;
/// `sizeof(struct perf_pipe_file_header)`.
pub(super) const PIPE_HEADER_SIZE: u64 = 16;

/// `PERF_ATTR_SIZE_VER0`.
pub(super) const ATTR_SIZE_VER0: u32 = 64;

/// Feature section numbers (`HEADER_*` bits of the header's feature bitmap).
pub mod feature {
    #![allow(missing_docs)]
    pub const TRACING_DATA: u32 = 1;
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
    pub const CPU_TOPOLOGY: u32 = 13;
    pub const NUMA_TOPOLOGY: u32 = 14;
    pub const PMU_MAPPINGS: u32 = 16;
    pub const GROUP_DESC: u32 = 17;
    pub const SAMPLE_TIME: u32 = 21;
    pub const COMPRESSED: u32 = 27;
    pub const CLOCK_DATA: u32 = 29;
    pub const HYBRID_TOPOLOGY: u32 = 30;

    /// perf's name of a feature section.
    pub fn name(f: u32) -> String {
        const NAMES: [&str; 32] = [
            "RESERVED",
            "TRACING_DATA",
            "BUILD_ID",
            "HOSTNAME",
            "OSRELEASE",
            "VERSION",
            "ARCH",
            "NRCPUS",
            "CPUDESC",
            "CPUID",
            "TOTAL_MEM",
            "CMDLINE",
            "EVENT_DESC",
            "CPU_TOPOLOGY",
            "NUMA_TOPOLOGY",
            "BRANCH_STACK",
            "PMU_MAPPINGS",
            "GROUP_DESC",
            "AUXTRACE",
            "STAT",
            "CACHE",
            "SAMPLE_TIME",
            "MEM_TOPOLOGY",
            "CLOCKID",
            "DIR_FORMAT",
            "BPF_PROG_INFO",
            "BPF_BTF",
            "COMPRESSED",
            "CPU_PMU_CAPS",
            "CLOCK_DATA",
            "HYBRID_TOPOLOGY",
            "PMU_CAPS",
        ];
        match NAMES.get(f as usize) {
            Some(n) => (*n).to_string(),
            None => format!("feature {f}"),
        }
    }
}

/// Bytes a record carries after its own header size: AUXTRACE's payload (u64 after the
/// header) and a pipe's HEADER_TRACING_DATA tracing data (u32 after the header, padded to 8
/// bytes); 0 for every other record; `None` when the length is missing.
pub fn trailing_len(t: u32, rec: &[u8]) -> Option<u64> {
    match t {
        user::AUXTRACE => u64_at(rec, 8),
        user::HEADER_TRACING_DATA => Some(u64::from(u32_at(rec, 8)?).div_ceil(8) * 8),
        _ => Some(0),
    }
}

/// Whether a record has bytes after its header size ([`trailing_len`]): the chunked reader
/// leaves such files to the whole-file path.
pub fn has_trailing(t: u32) -> bool {
    matches!(t, user::AUXTRACE | user::HEADER_TRACING_DATA)
}

/// perf's user record types (>= 64), which the kernel never writes.
pub mod user {
    #![allow(missing_docs)]
    pub const HEADER_ATTR: u32 = 64;
    pub const HEADER_TRACING_DATA: u32 = 66;
    pub const HEADER_BUILD_ID: u32 = 67;
    pub const FINISHED_ROUND: u32 = 68;
    pub const ID_INDEX: u32 = 69;
    pub const AUXTRACE: u32 = 71;
    pub const HEADER_FEATURE: u32 = 80;
    pub const COMPRESSED: u32 = 81;
    pub const COMPRESSED2: u32 = 83;

    /// The `PERF_RECORD_*` name without the prefix.
    pub fn name(t: u32) -> String {
        const NAMES: [&str; 20] = [
            "HEADER_ATTR",
            "HEADER_EVENT_TYPE",
            "HEADER_TRACING_DATA",
            "HEADER_BUILD_ID",
            "FINISHED_ROUND",
            "ID_INDEX",
            "AUXTRACE_INFO",
            "AUXTRACE",
            "AUXTRACE_ERROR",
            "THREAD_MAP",
            "CPU_MAP",
            "STAT_CONFIG",
            "STAT",
            "STAT_ROUND",
            "EVENT_UPDATE",
            "TIME_CONV",
            "HEADER_FEATURE",
            "COMPRESSED",
            "FINISHED_INIT",
            "COMPRESSED2",
        ];
        match t.checked_sub(64).and_then(|i| NAMES.get(i as usize)) {
            Some(n) => (*n).to_string(),
            None => format!("type {t}"),
        }
    }
}

pub(super) fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

pub(super) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

pub(super) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

pub(super) fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// A `perf_header_string` (u32 length, then that many bytes, NUL-padded) at `*at`.
pub(super) fn string_at(b: &[u8], at: &mut usize) -> Option<String> {
    let len = u32_at(b, *at)? as usize;
    let start = at.checked_add(4)?;
    let s = b.get(start..start.checked_add(len)?)?;
    *at = start + len;
    let s = s.split(|&c| c == 0).next().unwrap_or(s);
    Some(String::from_utf8_lossy(s).into_owned())
}
