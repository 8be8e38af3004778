//! perf.data files read into hrec's own structures, so `report`, `script`, `flamegraph` and
//! `info` take them like an hrec recording.
//!
//! A perf.data file (`PERFILE2`) holds a 104-byte header, the event attrs with their ids, a data
//! section of records, and feature sections after it (build-ids, hostname, cmdline, event names,
//! PMU mappings, groups, ...); in pipe mode (`perf record -o -`) the attrs and features come as
//! user records (`HEADER_ATTR`, `HEADER_FEATURE`) at the head of the stream instead. This module
//! turns one into a [`crate::data::Meta`] (events with their attrs in kernel layout, ids, names,
//! roles, leaders), record blocks and the side blocks hrec's own files have.
//!
//! The domain rules it follows:
//!
//! * **Records are hrec's, as bytes.** Every kernel record is kept with its header and payload
//!   exactly as the kernel wrote them and decoded later by hrec's own decoder
//!   ([`crate::decode`]): linux-perf-data's sample parser reads the group-read layout inverted
//!   and drops WEIGHT_STRUCT (crates.md 4.1), the fields hrec exists for. perf's user records
//!   (type >= 64: FINISHED_ROUND, ID_INDEX, THREAD_MAP, ...) are not kernel data; they are
//!   counted for `hrec info`, and the ones with facts in them (ID_INDEX: the CPU and thread of
//!   each id; HEADER_BUILD_ID) are read. An uncompressed data section becomes a record block
//!   as it is, perf's records included (they decode as unknown records, which every reader
//!   skips): no copy of a file that may be gigabytes. Records that come out of compressed data
//!   are copied into blocks without perf's.
//! * **Nothing in the file is trusted.** Before anything is used, hrec checks the header, the
//!   attr and id sections, every record size (and AUXTRACE's trailing data) and every feature
//!   section's bounds, and parses the feature sections itself (build-ids, strings, groups, PMU
//!   mappings, cmdline, EVENT_DESC with the raw attr bytes), one bounds-checked path for file
//!   and pipe mode.
//! * **linux-perf-data for compressed data.** `perf record -z` writes one zstd stream across
//!   its COMPRESSED records, with records straddling them; the crate decompresses it and
//!   yields the records (in FINISHED_ROUND order). It sizes allocations from counts it has not
//!   checked (`Vec::with_capacity(nr)` for event descriptions, command lines, PMU mappings),
//!   which can abort the process on a damaged file, past any `catch_unwind`; so it reads a
//!   rebuilt copy holding only what passed the checks: the data cut at the last whole record,
//!   EVENT_DESC as its only feature. A parser panic is still caught, as a last resort, and the
//!   records before it are kept. Uncompressed data needs none of that: its records are taken
//!   straight from the checked data section, since hrec orders records by time itself
//!   ([`crate::recording`]) and the crate's per-record path (a buffer per record, the round
//!   sorter) costs more than the rest of reading the file (47 of 66 ms for 367 000 samples).
//! * **A cut file is read up to the cut.** A perf.data whose data section runs past the end of
//!   the file (copied while written, disk full) or whose header has no data size (perf was
//!   killed) gives the records that are whole, with a warning; its feature sections are lost.
//! * **Kernel symbols only from the kernel that ran, where it ran.** perf.data stores no kernel
//!   symbols, only the build-id of `[kernel.kallsyms]` and, in perf's synthesized
//!   `[kernel.kallsyms]_text` MMAP record, the address `_text` had. Kernel addresses differ
//!   between kernel builds, and with KASLR between boots of one build, so `/proc/kallsyms` of
//!   this machine is used only when the recording's kernel build-id equals the running
//!   kernel's (`NT_GNU_BUILD_ID` in `/sys/kernel/notes`) and `_text` is where it was.
//!   Otherwise kernel frames stay unresolved with the reason
//!   ([`crate::symbol::Unresolved::KernelMismatch`], `KernelRelocated`, `NoKernelBuildId`)
//!   rather than resolving to the wrong functions. (perf relocates the symbols instead, the
//!   image by the `_text` difference and modules by their recorded maps; hrec does not yet.)
//! * **Roles.** An event that samples (a period or frequency) is a `sampler`, a group member
//!   that does not sample is `counted` (its values arrive in the sampler's group read),
//!   `dummy` is `tracking` (perf's carrier of MMAP/COMM records in `-a` mode).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use linux_perf_data::linux_perf_event_reader::RawData;
use linux_perf_data::{PerfFileReader, PerfFileRecord};

use crate::data::{EventId, EventMeta, Meta, PmuMeta, Trailer};
use crate::decode::{Decoder, RawRecord, kind};
use crate::event::Attr;
use crate::event::attr::{flag, types};
use crate::event::resolve::{HARDWARE_EVENTS, SOFTWARE_EVENTS};
use crate::symbol::Unresolved;
use crate::symbol::kallsyms::KernelSymbols;

/// The magic of a little-endian perf.data file (file and pipe mode).
pub const MAGIC: [u8; 8] = *b"PERFILE2";
/// The magic of a big-endian perf.data file.
const MAGIC_BIG_ENDIAN: [u8; 8] = *b"2ELIFREP";
/// The magic of perf's first file format.
const MAGIC_V1: [u8; 8] = *b"PERFFILE";
/// `sizeof(struct perf_file_header)`.
const HEADER_SIZE: u64 = 104;
/// `sizeof(struct perf_pipe_file_header)`.
const PIPE_HEADER_SIZE: u64 = 16;
/// Records of at most this many bytes go into one copied block.
const BLOCK_BYTES: usize = 16 << 20;
/// A data section up to this size is kept as one block as it is (record offsets in a block are
/// u32).
const BLOCK_BYTES_IN_PLACE: usize = 1 << 31;
/// `PERF_ATTR_SIZE_VER0`.
const ATTR_SIZE_VER0: u32 = 64;
/// `PERF_COUNT_SW_DUMMY`.
const SW_DUMMY: u64 = 9;
/// `PERF_RECORD_MISC_BUILD_ID_SIZE` in a build-id record's misc.
const MISC_BUILD_ID_SIZE: u16 = 1 << 15;
/// Where the running kernel's ELF notes are.
const KERNEL_NOTES: &str = "/sys/kernel/notes";
/// The running kernel's symbols.
const KALLSYMS: &str = "/proc/kallsyms";

/// Feature section numbers (`HEADER_*` bits of the header's feature bitmap).
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
    pub const SAMPLE_TIME: u32 = 21;
    pub const COMPRESSED: u32 = 27;

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

/// perf's user record types (>= 64), which the kernel never writes.
pub mod user {
    #![allow(missing_docs)]
    pub const HEADER_ATTR: u32 = 64;
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

/// Why a perf.data file cannot be read. One line each, naming the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PerfDataError {
    /// Reading the file failed.
    #[error("cannot read {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A perf.data variant hrec does not read.
    #[error("{}: {what} is not supported", path.display())]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What.
        what: String,
    },
    /// The header or the attrs are damaged beyond use.
    #[error("{}: damaged perf.data: {reason}", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// Whether a file starting with `first` is a perf.data file (any variant, so the ones hrec
/// cannot read get a clear error rather than "not an hrec file").
pub fn is_perf_data(first: &[u8]) -> bool {
    [MAGIC, MAGIC_BIG_ENDIAN, MAGIC_V1]
        .iter()
        .any(|m| first.starts_with(m))
}

/// One entry of the build-id table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildIdEntry {
    /// Lowercase hex.
    pub build_id: String,
    /// The file (`[kernel.kallsyms]` for the kernel, `[vdso]`, a module or a path).
    pub path: String,
    /// A kernel-side entry (the kernel image or a module).
    pub kernel: bool,
}

/// A group as `GROUP_DESC` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDesc {
    /// The group's name as perf wrote it (often `{a,b,c}` or empty).
    pub name: String,
    /// Index of the leader in the event list.
    pub leader: usize,
    /// Number of events, leader included.
    pub members: usize,
}

/// What the recording's kernel build-id says about this machine's kernel symbols.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum KernelCheck {
    /// The recording has no `[kernel.kallsyms]` build-id (no kernel samples, pipe mode, or
    /// `--no-buildid`): this machine's symbols cannot be shown to fit.
    #[default]
    NoBuildId,
    /// The build-ids are equal: kernel symbols come from this machine's `/proc/kallsyms`.
    Matches {
        /// The build-id.
        build_id: String,
    },
    /// The recording was made on another kernel.
    Differs {
        /// The recording's kernel build-id.
        recorded: String,
        /// This machine's, when readable.
        running: Option<String>,
    },
}

/// The perf.data facts that have no place in [`Meta`], for `hrec info`.
#[derive(Debug, Clone, Default)]
pub struct PerfDataInfo {
    /// The file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub file_len: u64,
    /// Pipe mode (`perf record -o -`).
    pub pipe: bool,
    /// Offset and size of the data section (file mode; the size as read, after any cut).
    pub data_section: (u64, u64),
    /// `perf version`.
    pub perf_version: Option<String>,
    /// `cpuid` (`GenuineIntel,6,167,1`).
    pub cpuid: Option<String>,
    /// CPUs available and online.
    pub nr_cpus: Option<(u32, u32)>,
    /// Total memory in kB.
    pub total_mem_kb: Option<u64>,
    /// Times of the first and last sample, as perf wrote them.
    pub sample_time: Option<(u64, u64)>,
    /// `perf record -z`: "zstd level 1, ratio 13".
    pub compression: Option<String>,
    /// The feature sections present (perf's names).
    pub features: Vec<String>,
    /// Groups.
    pub groups: Vec<GroupDesc>,
    /// PMU type → name.
    pub pmu_mappings: Vec<(u32, String)>,
    /// The build-id table.
    pub build_ids: Vec<BuildIdEntry>,
    /// The kernel build-id check.
    pub kernel: KernelCheck,
    /// Kernel records read.
    pub records: u64,
    /// Their bytes.
    pub record_bytes: u64,
    /// perf's user records by type, counted at the top level of the data (not kept).
    pub user_records: BTreeMap<u32, u64>,
    /// Why the records end early, when they do.
    pub truncated: Option<String>,
    /// Problems that did not stop the reading.
    pub warnings: Vec<String>,
}

/// A perf.data file turned into hrec's structures.
#[derive(Debug)]
pub struct PerfData {
    /// Events, attrs, ids and host facts.
    pub meta: Meta,
    /// Counts as an hrec trailer has them (samples, LOST, THROTTLE).
    pub trailer: Trailer,
    /// perf.data details.
    pub info: PerfDataInfo,
    /// Raw kernel records, concatenated, in file order (records of compressed data in the
    /// container's order); empty when they are read from the file ([`PerfData::data_file`]).
    pub blocks: Vec<Vec<u8>>,
    data: Option<DataFile>,
    build_ids_text: String,
    /// Where the recording's kernel image was (`_text`, the pgoff of perf's
    /// `[kernel.kallsyms]_text` MMAP record).
    recorded_text: Option<u64>,
    kallsyms: Mutex<Kallsyms>,
}

/// This machine's kernel symbols and where its `_text` is.
type Parsed = (Arc<KernelSymbols>, Option<u64>);

/// This machine's kernel symbols, when they fit the recording.
#[derive(Debug)]
enum Kallsyms {
    /// Not used (another kernel, or not asked for).
    None,
    /// Being read and parsed on another thread.
    Pending(std::thread::JoinHandle<Parsed>),
    /// Parsed, and the kernel sits where it sat in the recording.
    Ready(Arc<KernelSymbols>),
    /// The same kernel build, loaded at another address (KASLR after a reboot).
    Relocated {
        /// `_text` in the recording.
        recorded: u64,
        /// `_text` now.
        running: u64,
    },
}

impl PerfData {
    /// Reads `path`.
    pub fn read(path: &Path) -> Result<PerfData, PerfDataError> {
        let running = running_kernel_build_id(Path::new(KERNEL_NOTES));
        let kallsyms = Some(Path::new(KALLSYMS));
        if let Some((sparse, data)) = streamable(path)
            && let Some(p) = read_bytes(path, sparse, running.as_deref(), kallsyms, Some(data))?
        {
            return Ok(p);
        }
        let bytes = std::fs::read(path).map_err(|source| PerfDataError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        from_bytes_with(path, bytes, running.as_deref(), kallsyms)
    }

    /// The data section on disk, when the records are read from the file as they are walked
    /// (file mode, uncompressed) rather than held in [`blocks`](Self::blocks).
    pub fn data_file(&self) -> Option<&DataFile> {
        self.data.as_ref()
    }

    /// The kallsyms verdict, waiting for the reading thread if it has not finished. The same
    /// build-id does not mean the same addresses: with KASLR every boot loads the kernel
    /// elsewhere, so this machine's symbols are used only when its `_text` is where the
    /// recording's was (perf's `[kernel.kallsyms]_text` MMAP record says where).
    fn kallsyms(&self) -> std::sync::MutexGuard<'_, Kallsyms> {
        let mut k = self.kallsyms.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*k, Kallsyms::Pending(_)) {
            let Kallsyms::Pending(h) = std::mem::replace(&mut *k, Kallsyms::None) else {
                unreachable!("matched above");
            };
            let (syms, running) = h.join().unwrap_or_default();
            *k = match (self.recorded_text, running) {
                (Some(recorded), Some(running)) if recorded != running => {
                    Kallsyms::Relocated { recorded, running }
                }
                _ => Kallsyms::Ready(syms),
            };
        }
        k
    }

    /// This machine's kernel symbols when its kernel is the recording's and sits at the same
    /// address (read and parsed while the records were read); empty otherwise.
    pub fn kernel_symbols(&self) -> Arc<KernelSymbols> {
        match &*self.kallsyms() {
            Kallsyms::Ready(s) => s.clone(),
            _ => Arc::default(),
        }
    }

    /// `_text` in the recording and on this machine, when the recording's kernel (same
    /// build-id) was loaded at another address.
    pub fn kernel_relocated(&self) -> Option<(u64, u64)> {
        match &*self.kallsyms() {
            Kallsyms::Relocated { recorded, running } => Some((*recorded, *running)),
            _ => None,
        }
    }

    /// A side block in hrec's text form: `build-ids` (`hex path` lines) or `kallsyms` (this
    /// machine's, only when its kernel is the recording's).
    pub fn side(&self, name: &str) -> Option<Vec<u8>> {
        match name {
            "build-ids" if !self.build_ids_text.is_empty() => {
                Some(self.build_ids_text.clone().into_bytes())
            }
            "kallsyms" if matches!(*self.kallsyms(), Kallsyms::Ready(_)) => {
                std::fs::read(KALLSYMS).ok()
            }
            _ => None,
        }
    }

    /// Why kernel addresses have no symbols when the recording has none.
    pub fn kernel_unresolved(&self) -> Unresolved {
        match self.info.kernel {
            KernelCheck::Differs { .. } => Unresolved::KernelMismatch,
            KernelCheck::NoBuildId => Unresolved::NoKernelBuildId,
            KernelCheck::Matches { .. } if self.kernel_relocated().is_some() => {
                Unresolved::KernelRelocated
            }
            KernelCheck::Matches { .. } => Unresolved::NoKernelSymbols,
        }
    }
}

/// An attr as the file stores it.
#[derive(Debug, Clone, Default)]
struct RawAttr {
    bytes: Vec<u8>,
    ids: Vec<u64>,
    name: Option<String>,
}

/// What the checks made of the file.
#[derive(Debug, Default)]
struct Prepared {
    /// The whole records: file offsets of the first and past the last.
    records: (usize, usize),
    /// Some records are zstd-compressed (`perf record -z`).
    compressed: bool,
    /// Pipe-mode records that failed their checks, left out of the crate's copy.
    dropped: Vec<(usize, usize)>,
    /// Bodies of ID_INDEX records.
    id_index: Vec<Vec<u8>>,
    attrs: Vec<RawAttr>,
    features: BTreeMap<u32, Vec<u8>>,
    data_section: (u64, u64),
    user_records: BTreeMap<u32, u64>,
    build_id_records: Vec<Vec<u8>>,
    truncated: Option<String>,
    warnings: Vec<String>,
}

/// Why preparing failed.
enum Fail {
    Unsupported(String),
    Damaged(String),
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// A `perf_header_string` (u32 length, then that many bytes, NUL-padded) at `*at`.
fn string_at(b: &[u8], at: &mut usize) -> Option<String> {
    let len = u32_at(b, *at)? as usize;
    let start = at.checked_add(4)?;
    let s = b.get(start..start.checked_add(len)?)?;
    *at = start + len;
    let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
    Some(String::from_utf8_lossy(&s[..end]).into_owned())
}

/// `EVENT_DESC`: u32 nr, u32 attr_size, then per event the attr, u32 nr_ids, the name and
/// the ids. `None` when any count does not fit the section.
fn parse_event_desc(b: &[u8]) -> Option<Vec<RawAttr>> {
    let nr = u32_at(b, 0)? as usize;
    let attr_size = u32_at(b, 4)? as usize;
    if !(ATTR_SIZE_VER0 as usize..=4096).contains(&attr_size) || nr == 0 {
        return None;
    }
    // Each event takes at least the attr, nr_ids and an empty string's length.
    if nr > b.len() / (attr_size + 8) {
        return None;
    }
    let mut at = 8usize;
    let mut out = Vec::with_capacity(nr);
    for _ in 0..nr {
        let attr = b.get(at..at.checked_add(attr_size)?)?;
        let own = u32_at(attr, 4)? as usize;
        if own < ATTR_SIZE_VER0 as usize || own > attr_size {
            return None;
        }
        at += attr_size;
        let nr_ids = u32_at(b, at)? as usize;
        at += 4;
        let name = string_at(b, &mut at)?;
        let ids_bytes = b.get(at..at.checked_add(nr_ids.checked_mul(8)?)?)?;
        at += ids_bytes.len();
        out.push(RawAttr {
            bytes: attr[..own].to_vec(),
            ids: ids_bytes
                .chunks_exact(8)
                .filter_map(|c| u64_at(c, 0))
                .collect(),
            name: Some(name),
        });
    }
    Some(out)
}

/// The header's attr section: entries of `attr_size` bytes, each an attr followed by the file
/// section of its ids. Everything must lie inside `b`.
fn parse_attr_section(
    b: &[u8],
    attr_size: u64,
    (off, size): (u64, u64),
) -> Result<Vec<RawAttr>, String> {
    let inside = |o: u64, s: u64| o.checked_add(s).is_some_and(|e| e <= b.len() as u64);
    if !(u64::from(ATTR_SIZE_VER0) + 16..=4096 + 16).contains(&attr_size) {
        return Err(format!("attr size {attr_size} in the header"));
    }
    if !inside(off, size) || size == 0 || size % attr_size != 0 {
        return Err(format!(
            "the attr section (offset {off}, {size} bytes) does not fit the file"
        ));
    }
    let mut out = Vec::new();
    for e in 0..size / attr_size {
        let at = (off + e * attr_size) as usize;
        let own = u64::from(u32_at(b, at + 4).unwrap_or(0));
        if own < u64::from(ATTR_SIZE_VER0) || own + 16 > attr_size {
            return Err(format!("attr {e} has size {own}"));
        }
        let ids_at = at + own as usize;
        let (ids_off, ids_size) = (
            u64_at(b, ids_at).unwrap_or(u64::MAX),
            u64_at(b, ids_at + 8).unwrap_or(u64::MAX),
        );
        if !inside(ids_off, ids_size) || ids_size % 8 != 0 {
            return Err(format!(
                "the ids of attr {e} (offset {ids_off}, {ids_size} bytes) do not fit the file"
            ));
        }
        let ids = b[ids_off as usize..(ids_off + ids_size) as usize]
            .chunks_exact(8)
            .filter_map(|c| u64_at(c, 0))
            .collect();
        out.push(RawAttr {
            bytes: b[at..at + own as usize].to_vec(),
            ids,
            name: None,
        });
    }
    Ok(out)
}

/// Walks records in `b[start..end]` by their sizes (plus AUXTRACE's trailing data), counting
/// perf's user records and keeping the ones with facts in them (ID_INDEX, HEADER_BUILD_ID).
/// Returns where the whole records end and, if they end early, why.
fn walk_records(
    b: &[u8],
    start: usize,
    end: usize,
    p: &mut Prepared,
    on_record: impl FnMut(usize, u32, &[u8]),
) -> (usize, Option<String>) {
    walk_records_at(b, start, end, 0, p, on_record)
}

/// [`walk_records`] of bytes that start at file offset `base` (for the messages).
fn walk_records_at(
    b: &[u8],
    start: usize,
    end: usize,
    base: usize,
    p: &mut Prepared,
    mut on_record: impl FnMut(usize, u32, &[u8]),
) -> (usize, Option<String>) {
    let mut pos = start;
    while pos < end {
        let (Some(t), Some(size)) = (u32_at(b, pos), u16_at(b, pos + 6)) else {
            return (
                pos,
                Some(format!(
                    "the data ends inside a record header at offset {}",
                    base + pos
                )),
            );
        };
        if pos + 8 > end {
            return (
                pos,
                Some(format!(
                    "the data ends inside a record header at offset {}",
                    base + pos
                )),
            );
        }
        let size = usize::from(size);
        if size < 8 {
            return (
                pos,
                Some(format!(
                    "the record at offset {} has size {size}",
                    base + pos
                )),
            );
        }
        let mut total = size;
        if t == user::AUXTRACE {
            match u64_at(b, pos + 8)
                .filter(|_| size >= 16)
                .and_then(|aux| usize::try_from(aux).ok())
                .and_then(|aux| size.checked_add(aux))
            {
                Some(n) => total = n,
                None => {
                    return (
                        pos,
                        Some(format!(
                            "the AUXTRACE record at offset {} is damaged",
                            base + pos
                        )),
                    );
                }
            }
        }
        if pos.checked_add(total).is_none_or(|e| e > end) {
            return (
                pos,
                Some(format!(
                    "the record at offset {} is cut short ({} of {total} bytes)",
                    base + pos,
                    end - pos
                )),
            );
        }
        if t >= 64 {
            *p.user_records.entry(t).or_default() += 1;
            match t {
                user::ID_INDEX => p.id_index.push(b[pos + 8..pos + size].to_vec()),
                user::HEADER_BUILD_ID => p.build_id_records.push(b[pos..pos + size].to_vec()),
                user::COMPRESSED | user::COMPRESSED2 => p.compressed = true,
                _ => {}
            }
        }
        on_record(pos, t, &b[pos..pos + total]);
        pos += total;
    }
    (pos, None)
}

/// Checks a file-mode perf.data and rebuilds the copy the crate reads.
fn prepare_file(b: &[u8]) -> Result<Prepared, Fail> {
    prepare_file_with(b, &mut |p, start, end| {
        walk_records(b, start, end, p, |_, _, _| {})
    })
}

/// The walk over the data section's records that [`prepare_file_with`] makes: from `start`
/// to at most `end`, returning where the whole records end and why they end early.
type DataWalk<'a> = dyn FnMut(&mut Prepared, usize, usize) -> (usize, Option<String>) + 'a;

/// [`prepare_file`] with the data section walked by `walk` (from the file in chunks when `b`
/// does not hold it).
fn prepare_file_with(b: &[u8], walk: &mut DataWalk<'_>) -> Result<Prepared, Fail> {
    let len = b.len() as u64;
    if len < HEADER_SIZE {
        return Err(Fail::Damaged(format!(
            "the file ends inside its header ({len} bytes, the header needs {HEADER_SIZE})"
        )));
    }
    let h = |at: usize| u64_at(b, at).unwrap_or(0);
    if h(8) != HEADER_SIZE {
        return Err(Fail::Unsupported(format!(
            "a perf.data header of {} bytes (this build reads {HEADER_SIZE})",
            h(8)
        )));
    }
    let attr_size = h(16);
    let attr_section = (h(24), h(32));
    let (data_off, mut data_size) = (h(40), h(48));
    let feature_bits = [h(72), h(80), h(88), h(96)];
    if data_off < HEADER_SIZE || data_off > len {
        return Err(Fail::Damaged(format!(
            "the data section starts at offset {data_off}, outside the file ({len} bytes)"
        )));
    }
    let mut p = Prepared::default();
    let mut keep_features = true;
    if data_size == 0 && len > data_off {
        p.truncated = Some(
            "the header has no data size (perf record did not finish?); the records up to the end of the file are read, the feature sections are missing"
                .into(),
        );
        data_size = len - data_off;
        keep_features = false;
    } else if data_off.checked_add(data_size).is_none_or(|e| e > len) {
        p.truncated = Some(format!(
            "the data section needs {data_size} bytes from offset {data_off} but the file ends after {}; the feature sections (names, build-ids, ...) are lost",
            len - data_off
        ));
        data_size = len - data_off;
        keep_features = false;
    }
    let table_off = data_off + data_size;
    let (end, stop) = walk(&mut p, data_off as usize, (data_off + data_size) as usize);
    if let Some(why) = stop {
        p.truncated
            .get_or_insert_with(|| format!("{why}; the records before it are read"));
    }
    let data_end = end as u64;
    p.data_section = (data_off, data_end - data_off);
    p.records = (data_off as usize, end);
    if keep_features {
        let mut k = 0u64;
        'bits: for (w, word) in feature_bits.iter().enumerate() {
            for bit in 0..64 {
                if word & (1 << bit) == 0 {
                    continue;
                }
                let f = (w * 64 + bit) as u32;
                let entry = (table_off + 16 * k) as usize;
                k += 1;
                let (Some(off), Some(size)) = (u64_at(b, entry), u64_at(b, entry + 8)) else {
                    p.warnings.push(format!(
                        "the feature table is cut short at {}: later feature sections are lost",
                        feature::name(f)
                    ));
                    break 'bits;
                };
                if off.checked_add(size).is_none_or(|e| e > len) {
                    p.warnings.push(format!(
                        "the {} feature section (offset {off}, {size} bytes) lies outside the file; ignored",
                        feature::name(f)
                    ));
                    continue;
                }
                p.features
                    .insert(f, b[off as usize..(off + size) as usize].to_vec());
            }
        }
    }
    let desc = p
        .features
        .get(&feature::EVENT_DESC)
        .map(|d| parse_event_desc(d));
    let from_desc = match desc {
        Some(Some(attrs)) => Some(attrs),
        Some(None) => {
            p.features.remove(&feature::EVENT_DESC);
            p.warnings
                .push("the EVENT_DESC section is damaged: event names are lost".into());
            None
        }
        None => None,
    };
    let prefix = &b[..data_end as usize];
    let from_section = parse_attr_section(prefix, attr_size, attr_section);
    p.attrs = match (from_desc, from_section) {
        (Some(a), _) => a,
        (None, Ok(a)) => a,
        (None, Err(why)) => return Err(Fail::Damaged(why)),
    };
    Ok(p)
}

/// Checks a pipe-mode perf.data and copies the records the crate may read.
fn prepare_pipe(b: &[u8]) -> Result<Prepared, Fail> {
    let size = u64_at(b, 8).ok_or_else(|| {
        Fail::Damaged(format!(
            "the file ends inside its header ({} bytes)",
            b.len()
        ))
    })?;
    if size != PIPE_HEADER_SIZE {
        return Err(Fail::Unsupported(format!(
            "a perf.data pipe header of {size} bytes (this build reads {PIPE_HEADER_SIZE})"
        )));
    }
    let mut p = Prepared::default();
    let mut names: Vec<(Vec<u64>, String)> = Vec::new();
    let mut warnings = Vec::new();
    let mut attrs = Vec::new();
    let mut features = BTreeMap::new();
    let mut dropped = Vec::new();
    let (end, stop) = walk_records(b, 16, b.len(), &mut p, |here, t, rec| {
        let body = &rec[8..];
        let mut keep = true;
        match t {
            user::HEADER_ATTR => {
                let own = u32_at(body, 4).unwrap_or(0) as usize;
                if own >= ATTR_SIZE_VER0 as usize && own <= body.len() {
                    attrs.push(RawAttr {
                        bytes: body[..own].to_vec(),
                        ids: body[own..]
                            .chunks_exact(8)
                            .filter_map(|c| u64_at(c, 0))
                            .collect(),
                        name: None,
                    });
                } else {
                    warnings.push(format!("a HEADER_ATTR record has attr size {own}; dropped"));
                    keep = false;
                }
            }
            user::HEADER_FEATURE => {
                let f = u64_at(body, 0).unwrap_or(u64::MAX);
                let data = body.get(8..).unwrap_or_default();
                if f == u64::from(feature::EVENT_DESC) {
                    match parse_event_desc(data) {
                        Some(d) => {
                            names.extend(d.into_iter().filter_map(|a| Some((a.ids, a.name?))))
                        }
                        None => {
                            warnings.push(
                                "the EVENT_DESC record is damaged: event names are lost".into(),
                            );
                            keep = false;
                        }
                    }
                }
                // perf ends the features with an empty HEADER_LAST_FEATURE record.
                if let Ok(f) = u32::try_from(f)
                    && !data.is_empty()
                {
                    features.insert(f, data.to_vec());
                }
            }
            _ => {}
        }
        if !keep {
            dropped.push((here, here + rec.len()));
        }
    });
    if let Some(why) = stop {
        p.truncated = Some(format!("{why}; the records before it are read"));
    }
    for a in &mut attrs {
        a.name = names
            .iter()
            .find(|(ids, _)| !ids.is_empty() && a.ids.first() == ids.first())
            .map(|(_, n)| n.clone());
    }
    if attrs.is_empty() {
        return Err(Fail::Damaged(
            "the stream has no HEADER_ATTR record: there are no events".into(),
        ));
    }
    p.attrs = attrs;
    p.features = features;
    p.warnings = warnings;
    p.dropped = dropped;
    p.data_section = (16, (end - 16) as u64);
    p.records = (16, end);
    Ok(p)
}

/// The bytes the crate reads for compressed data, built from what passed the checks. File
/// mode: everything up to the end of the whole records, the data size set to theirs, then a
/// feature table with EVENT_DESC alone (when it passed; the crate prefers it over the attr
/// section) and no other feature. Pipe mode: the stream without the records that failed.
fn crate_copy(p: &Prepared, b: &[u8], pipe: bool) -> Vec<u8> {
    let (start, end) = p.records;
    if pipe {
        let mut buf = b[..start].to_vec();
        let mut copied = start;
        for &(from, to) in &p.dropped {
            buf.extend_from_slice(&b[copied..from]);
            copied = to;
        }
        buf.extend_from_slice(&b[copied..end]);
        return buf;
    }
    let mut buf = Vec::with_capacity(end + 64 * 1024);
    buf.extend_from_slice(&b[..end]);
    buf[48..56].copy_from_slice(&((end - start) as u64).to_le_bytes());
    buf[56..72].fill(0); // event_types: obsolete, and the crate would prefer it
    buf[72..104].fill(0);
    if let Some(d) = p.features.get(&feature::EVENT_DESC) {
        let f = feature::EVENT_DESC as usize;
        buf[72 + (f / 64) * 8..80 + (f / 64) * 8]
            .copy_from_slice(&(1u64 << (f % 64)).to_le_bytes());
        let off = buf.len() as u64 + 16;
        buf.extend_from_slice(&off.to_le_bytes());
        buf.extend_from_slice(&(d.len() as u64).to_le_bytes());
        buf.extend_from_slice(d);
    }
    buf
}

/// The build-id table: records of header, pid, 24 bytes of build-id (the length at byte 20
/// when misc has `BUILD_ID_SIZE`, else the 20 bytes less trailing zero words) and the path.
fn parse_build_ids(b: &[u8], out: &mut Vec<BuildIdEntry>) {
    let mut at = 0usize;
    while let Some(size) = u16_at(b, at + 6) {
        let size = usize::from(size);
        let Some(rec) = b.get(at..at + size).filter(|_| size >= 36) else {
            break;
        };
        let misc = u16_at(rec, 4).unwrap_or(0);
        let id = &rec[12..36];
        let n = if misc & MISC_BUILD_ID_SIZE != 0 {
            usize::from(id[20]).min(20)
        } else {
            let mut n = 20;
            while n >= 4 && id[n - 4..n].iter().all(|&x| x == 0) {
                n -= 4;
            }
            n
        };
        let path = &rec[36..];
        let path_end = path.iter().position(|&c| c == 0).unwrap_or(path.len());
        out.push(BuildIdEntry {
            build_id: hex(&id[..n]),
            path: String::from_utf8_lossy(&path[..path_end]).into_owned(),
            kernel: misc & 7 == 1 || misc & 7 == 4,
        });
        at += size;
    }
}

/// `GROUP_DESC`: u32 nr, then per group its name, leader index and member count.
fn parse_group_desc(b: &[u8], events: usize) -> Vec<GroupDesc> {
    let mut out = Vec::new();
    let Some(nr) = u32_at(b, 0) else { return out };
    let mut at = 4usize;
    for _ in 0..nr.min(4096) {
        let Some(name) = string_at(b, &mut at) else {
            break;
        };
        let (Some(leader), Some(members)) = (u32_at(b, at), u32_at(b, at + 4)) else {
            break;
        };
        at += 8;
        let (leader, members) = (leader as usize, members as usize);
        if leader < events && members >= 1 && leader + members <= events {
            out.push(GroupDesc {
                name,
                leader,
                members,
            });
        }
    }
    out
}

/// `PMU_MAPPINGS`: u32 nr, then per PMU its type and name.
fn parse_pmu_mappings(b: &[u8]) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let Some(nr) = u32_at(b, 0) else { return out };
    let mut at = 4usize;
    for _ in 0..nr.min(65536) {
        let Some(t) = u32_at(b, at) else { break };
        at += 4;
        let Some(name) = string_at(b, &mut at) else {
            break;
        };
        out.push((t, name));
    }
    out.sort();
    out
}

/// `CMDLINE`: u32 nr, then nr strings.
fn parse_string_list(b: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(nr) = u32_at(b, 0) else { return out };
    let mut at = 4usize;
    for _ in 0..nr.min(1 << 16) {
        match string_at(b, &mut at) {
            Some(s) => out.push(s),
            None => break,
        }
    }
    out
}

/// `ID_INDEX`: u64 nr, then nr entries of {id, idx, cpu, tid}.
fn parse_id_index(body: &[u8], out: &mut HashMap<u64, (i32, i32)>) {
    let Some(nr) = u64_at(body, 0) else { return };
    let Some(entries) = body.get(8..) else { return };
    let nr = usize::try_from(nr)
        .unwrap_or(usize::MAX)
        .min(entries.len() / 32);
    for e in entries.chunks_exact(32).take(nr) {
        let (Some(id), Some(cpu), Some(tid)) = (u64_at(e, 0), u64_at(e, 16), u64_at(e, 24)) else {
            continue;
        };
        out.insert(id, (cpu as i64 as i32, tid as i64 as i32));
    }
}

/// The GNU build-id among the ELF notes of a running kernel (`/sys/kernel/notes`).
pub fn running_kernel_build_id(notes: &Path) -> Option<String> {
    let b = std::fs::read(notes).ok()?;
    build_id_from_notes(&b)
}

/// The `NT_GNU_BUILD_ID` note (name "GNU", type 3) in a sequence of ELF notes.
pub fn build_id_from_notes(b: &[u8]) -> Option<String> {
    let align4 = |n: usize| n.checked_add(3).map(|n| n & !3);
    let mut at = 0usize;
    while let (Some(namesz), Some(descsz), Some(t)) =
        (u32_at(b, at), u32_at(b, at + 4), u32_at(b, at + 8))
    {
        let name_at = at + 12;
        let desc_at = name_at.checked_add(align4(namesz as usize)?)?;
        let next = desc_at.checked_add(align4(descsz as usize)?)?;
        let name = b.get(name_at..name_at + namesz as usize)?;
        if t == 3 && name == b"GNU\0" {
            return Some(hex(b.get(desc_at..desc_at + descsz as usize)?));
        }
        at = next;
    }
    None
}

/// perf's name of an event without EVENT_DESC: the legacy name, else `pmu/config=0x../`.
fn fallback_name(attr: &Attr, pmus: &[(u32, String)]) -> String {
    let legacy = |table: &[(&str, u64)], id: u64| {
        table
            .iter()
            .find(|(_, v)| *v == id)
            .map(|(n, _)| (*n).to_string())
    };
    let named = match attr.type_ {
        types::HARDWARE => legacy(HARDWARE_EVENTS, attr.config & 0xffff_ffff),
        types::SOFTWARE => legacy(SOFTWARE_EVENTS, attr.config),
        _ => None,
    };
    named.unwrap_or_else(|| {
        let pmu = pmu_of(attr, pmus).unwrap_or_else(|| format!("type{}", attr.type_));
        format!("{pmu}/config={:#x}/", attr.config)
    })
}

/// The PMU of an attr by the PMU mappings: its type, or for legacy hardware and cache events
/// the extended type in `config[63:32]` (hybrid), else the core PMU `cpu`.
fn pmu_of(attr: &Attr, pmus: &[(u32, String)]) -> Option<String> {
    let name = |t: u32| pmus.iter().find(|(x, _)| *x == t).map(|(_, n)| n.clone());
    match attr.type_ {
        types::HARDWARE | types::HW_CACHE => match (attr.config >> 32) as u32 {
            0 => pmus
                .iter()
                .find(|(_, n)| n == "cpu")
                .map(|(_, n)| n.clone()),
            ext => name(ext),
        },
        types::SOFTWARE => name(types::SOFTWARE).or_else(|| Some("software".into())),
        t => name(t),
    }
}

/// `dummy` carries side-band records; an event with a period or frequency samples; anything
/// else only counts (in a group with READ, its values come with the sampler's samples).
fn role(attr: &Attr) -> &'static str {
    if attr.type_ == types::SOFTWARE && attr.config == SW_DUMMY {
        "tracking"
    } else if attr.sample_period_or_freq != 0 {
        "sampler"
    } else {
        "counted"
    }
}

fn fail(path: &Path, f: Fail) -> PerfDataError {
    match f {
        Fail::Unsupported(what) => PerfDataError::Unsupported {
            path: path.to_path_buf(),
            what,
        },
        Fail::Damaged(reason) => PerfDataError::Damaged {
            path: path.to_path_buf(),
            reason,
        },
    }
}

/// Reads perf.data bytes; `running_kernel` is this machine's kernel build-id.
pub fn from_bytes(
    path: &Path,
    b: &[u8],
    running_kernel: Option<&str>,
) -> Result<PerfData, PerfDataError> {
    from_bytes_with(path, b.to_vec(), running_kernel, None)
}

/// Bytes of the data section read at a time when it is walked from the file.
const CHUNK: usize = 4 << 20;

/// The data section of a file-mode perf.data, read from the file in chunks of whole records
/// each time it is walked and never held whole: a day-long recording reads in the memory of a
/// few chunks. The file is checked when it is opened; if it changes afterwards, the walk stops
/// at the first record that does not fit and says so ([`take_error`](Self::take_error)).
#[derive(Debug)]
pub struct DataFile {
    path: PathBuf,
    file: std::fs::File,
    start: u64,
    end: u64,
    chunk_count: usize,
    error: Mutex<Option<String>>,
}

/// Iterator of [`DataFile::chunks`].
#[derive(Debug)]
pub struct Chunks<'a> {
    d: &'a DataFile,
    pos: u64,
    end: u64,
    /// A record that does not read is an error of the walk (the file changed after it was
    /// checked); the checking walk itself finds the reason on its own.
    report: bool,
}

/// The length of the whole records at the start of `b` (AUXTRACE payloads are not walked
/// here: such files are read whole).
fn whole_records(b: &[u8]) -> usize {
    let mut off = 0usize;
    while let (Some(t), Some(size)) = (u32_at(b, off), u16_at(b, off + 6)) {
        let size = usize::from(size);
        if size < 8 || t == user::AUXTRACE || off + size > b.len() {
            break;
        }
        off += size;
    }
    off
}

impl DataFile {
    /// Chunks of whole records from the start of the records to their end.
    pub fn chunks(&self) -> Chunks<'_> {
        Chunks {
            d: self,
            pos: self.start,
            end: self.end,
            report: true,
        }
    }

    /// The chunks the records are read in.
    pub fn chunk_count(&self) -> usize {
        self.chunk_count
    }

    /// Why the last walk stopped early, if it did.
    pub fn take_error(&self) -> Option<String> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn fail(&self, why: String) {
        *self.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
    }

    fn read_at(&self, pos: u64, len: usize) -> Option<Vec<u8>> {
        use std::os::unix::fs::FileExt as _;
        let mut buf = vec![0u8; len];
        match self.file.read_exact_at(&mut buf, pos) {
            Ok(()) => Some(buf),
            Err(e) => {
                self.fail(format!(
                    "cannot read {} at offset {pos}: {e}; the records after it are lost",
                    self.path.display()
                ));
                None
            }
        }
    }

    /// [`walk_records`] over the file's data section from `start` to at most `end`, a chunk
    /// at a time.
    fn walk(&self, p: &mut Prepared, start: usize, end: usize) -> (usize, Option<String>) {
        let mut pos = start;
        let chunks = Chunks {
            d: self,
            pos: start as u64,
            end: end as u64,
            report: false,
        };
        for chunk in chunks {
            let (done, stop) = walk_records_at(&chunk, 0, chunk.len(), pos, p, |_, _, _| {});
            if stop.is_some() {
                return (pos + done, stop);
            }
            pos += chunk.len();
        }
        if let Some(why) = self.take_error() {
            return (pos, Some(why));
        }
        if pos < end {
            // What stopped the chunks: the record there, walked alone for its message.
            let n = (end - pos).min(usize::from(u16::MAX) + 16);
            if let Some(tail) = self.read_at(pos as u64, n) {
                if u32_at(&tail, 0) == Some(user::AUXTRACE) {
                    // Its payload is not walked in chunks: the file is read whole instead.
                    *p.user_records.entry(user::AUXTRACE).or_default() += 1;
                    return (pos, None);
                }
                let (done, stop) = walk_records_at(&tail, 0, tail.len(), pos, p, |_, _, _| {});
                return (pos + done, stop);
            }
            return (pos, self.take_error());
        }
        (pos, None)
    }
}

impl Iterator for Chunks<'_> {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        if self.pos >= self.end {
            return None;
        }
        let len = usize::try_from(self.end - self.pos).map_or(CHUNK, |n| n.min(CHUNK));
        let mut buf = self.d.read_at(self.pos, len)?;
        let whole = whole_records(&buf);
        if whole == 0 {
            if self.report {
                self.d.fail(format!(
                    "the record at offset {} of {} does not read (the file changed after it was opened?); the records after it are lost",
                    self.pos,
                    self.d.path.display()
                ));
            }
            return None;
        }
        buf.truncate(whole);
        self.pos += whole as u64;
        Some(buf)
    }
}

/// A perf.data file's bytes: the whole file, or the file without its data section.
enum FileBytes {
    /// The whole file.
    Whole(Vec<u8>),
    /// The file with zeros in place of its data section, in an anonymous mapping: its pages
    /// are the kernel's shared zero page until written, so the data section's span takes no
    /// memory (an allocator's zeroed buffer may be written over to zero it).
    Sparse(memmap2::MmapMut),
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Whole(v) => v,
            FileBytes::Sparse(m) => m,
        }
    }
}

/// A file-mode perf.data whose data section can be read from the file as it is walked: the
/// file without its data section ([`FileBytes::Sparse`]) and the open data section. `None` for anything else (pipe mode, no data size, sections
/// outside the file, unreadable): those take the whole-file path, whose checks say what is
/// wrong.
fn streamable(path: &Path) -> Option<(FileBytes, DataFile)> {
    use std::os::unix::fs::FileExt as _;
    let file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let mut head = [0u8; HEADER_SIZE as usize];
    file.read_exact_at(&mut head, 0).ok()?;
    let h = |at: usize| u64_at(&head, at).unwrap_or(0);
    if head[..8] != MAGIC || h(8) != HEADER_SIZE {
        return None;
    }
    let (data_off, data_size) = (h(40), h(48));
    let data_end = data_off.checked_add(data_size)?;
    if data_off < HEADER_SIZE || data_size == 0 || data_end > len {
        return None;
    }
    let mut sparse = memmap2::MmapOptions::new()
        .len(usize::try_from(len).ok()?)
        .map_anon()
        .ok()?;
    let (a, b) = (data_off as usize, data_end as usize);
    file.read_exact_at(&mut sparse[..a], 0).ok()?;
    file.read_exact_at(&mut sparse[b..], data_end).ok()?;
    Some((
        FileBytes::Sparse(sparse),
        DataFile {
            path: path.to_path_buf(),
            file,
            start: data_off,
            end: data_end,
            chunk_count: 0,
            error: Mutex::new(None),
        },
    ))
}

/// Kernel records collected into blocks, counted as an hrec trailer counts them.
struct Sink {
    blocks: Vec<Vec<u8>>,
    block: Vec<u8>,
    counter: Counter,
}

/// The counts of an hrec trailer, taken from raw records, and where the kernel image was.
struct Counter {
    t: Trailer,
    decoder: Decoder,
    id_event: HashMap<u64, usize>,
    recorded_text: Option<u64>,
}

impl Sink {
    fn new(meta: &Meta) -> Sink {
        let (decoder, id_event) = crate::recording::ids::decoder_of(meta);
        Sink {
            blocks: Vec::new(),
            block: Vec::new(),
            counter: Counter {
                t: Trailer {
                    samples_per_event: vec![0; meta.events.len()],
                    ..Trailer::default()
                },
                decoder,
                id_event,
                recorded_text: None,
            },
        }
    }

    /// Appends one record given as header fields and body parts.
    fn push(&mut self, type_: u32, misc: u16, body: &[&[u8]]) {
        let len: usize = 8 + body.iter().map(|p| p.len()).sum::<usize>();
        let Ok(size) = u16::try_from(len) else { return };
        if self.block.len() + len > BLOCK_BYTES {
            self.blocks.push(std::mem::take(&mut self.block));
        }
        let start = self.block.len();
        self.block.extend_from_slice(&type_.to_le_bytes());
        self.block.extend_from_slice(&misc.to_le_bytes());
        self.block.extend_from_slice(&size.to_le_bytes());
        for p in body {
            self.block.extend_from_slice(p);
        }
        self.counter.count(&self.block[start..]);
    }

    /// Appends a `FINISHED_ROUND` record (not counted): the records before it are in time
    /// order, so a reader may hand them on (see `recording::order`).
    fn push_round_marker(&mut self) {
        self.block.extend_from_slice(&[68, 0, 0, 0, 0, 0, 8, 0]);
    }

    /// Appends one whole record.
    fn push_raw(&mut self, rec: &[u8]) {
        if self.block.len() + rec.len() > BLOCK_BYTES {
            let next = Vec::with_capacity(BLOCK_BYTES);
            self.blocks.push(std::mem::replace(&mut self.block, next));
        }
        self.block.extend_from_slice(rec);
        self.counter.count(rec);
    }

    fn finish(mut self) -> (Vec<Vec<u8>>, Trailer, Option<u64>) {
        if !self.block.is_empty() {
            self.blocks.push(self.block);
        }
        (self.blocks, self.counter.t, self.counter.recorded_text)
    }
}

impl Counter {
    fn count(&mut self, bytes: &[u8]) {
        let t = &mut self.t;
        t.records += 1;
        t.record_bytes += bytes.len() as u64;
        match u32_at(bytes, 0).unwrap_or(0) {
            kind::SAMPLE => {
                t.samples += 1;
                let ev = if t.samples_per_event.len() == 1 {
                    Some(0)
                } else {
                    RawRecord::new(bytes, 0)
                        .ok()
                        .and_then(|r| self.decoder.locate(&r).ok())
                        .and_then(|l| l.id)
                        .and_then(|id| self.id_event.get(&id).copied())
                };
                if let Some(c) = ev.and_then(|e| t.samples_per_event.get_mut(e)) {
                    *c += 1;
                }
            }
            kind::LOST => {
                t.lost_records += 1;
                t.lost_samples += u64_at(bytes, 16).unwrap_or(0);
            }
            kind::LOST_SAMPLES => t.lost_samples += u64_at(bytes, 8).unwrap_or(0),
            kind::THROTTLE => t.throttles += 1,
            kind::UNTHROTTLE => t.unthrottles += 1,
            // perf's synthesized map of the kernel image: pid -1, `[kernel.kallsyms]_text`,
            // pgoff = the address of `_text` when it recorded.
            kind::MMAP | kind::MMAP2 if u32_at(bytes, 8) == Some(u32::MAX) => {
                let name_at = if u32_at(bytes, 0) == Some(kind::MMAP) {
                    40
                } else {
                    72
                };
                if bytes
                    .get(name_at..)
                    .is_some_and(|n| n.starts_with(b"[kernel.kallsyms]"))
                {
                    self.recorded_text = self.recorded_text.or(u64_at(bytes, 32));
                }
            }
            _ => {}
        }
    }
}

/// The kernel records of checked, uncompressed data, taken straight from the file: every size
/// was checked by [`walk_records`], and hrec orders records by time itself, so the crate's
/// per-record path (a buffer per record, the round sorter) would only add time. With `copy`
/// false they are only counted (the caller keeps the data section itself as the block).
fn records_direct(b: &[u8], (start, end): (usize, usize), sink: &mut Sink, copy: bool) {
    if copy {
        sink.block.reserve((end - start).min(BLOCK_BYTES));
    }
    let mut pos = start;
    while pos < end {
        let (Some(t), Some(size)) = (u32_at(b, pos), u16_at(b, pos + 6)) else {
            break;
        };
        let size = usize::from(size);
        let aux = if t == user::AUXTRACE {
            u64_at(b, pos + 8).and_then(|a| usize::try_from(a).ok())
        } else {
            Some(0)
        };
        let Some(next) = aux.and_then(|a| pos.checked_add(size)?.checked_add(a)) else {
            break;
        };
        if size < 8 || next > end {
            break;
        }
        if t < 64 {
            if copy {
                sink.push_raw(&b[pos..pos + size]);
            } else {
                sink.counter.count(&b[pos..pos + size]);
            }
        }
        pos = next;
    }
}

/// The kernel records of data with zstd-compressed records, through linux-perf-data: one zstd
/// stream runs across the COMPRESSED records, and records may straddle them. Returns why the
/// records end early, when they do.
fn records_via_crate(buf: &[u8], pipe: bool, sink: &mut Sink) -> Option<String> {
    let read = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
        let reader = if pipe {
            PerfFileReader::parse_pipe(Cursor::new(buf))
        } else {
            PerfFileReader::parse_file(Cursor::new(buf))
        };
        let PerfFileReader {
            mut perf_file,
            mut record_iter,
        } = reader.map_err(|e| format!("the container does not parse: {e}"))?;
        loop {
            match record_iter.next_record(&mut perf_file) {
                Ok(Some(PerfFileRecord::EventRecord { record, .. })) => {
                    let body: [&[u8]; 2] = match record.data {
                        RawData::Single(a) => [a, &[]],
                        RawData::Split(a, b) => [a, b],
                    };
                    sink.push(record.record_type.0, record.misc, &body);
                    // The crate hands records on sorted by perf's rounds: every 4096 of them
                    // make a round, which bounds the reader's reorder queue.
                    if sink.counter.t.records.is_multiple_of(4096) {
                        sink.push_round_marker();
                    }
                }
                // perf's own records were seen by the walk that checked the file.
                Ok(Some(PerfFileRecord::UserRecord(_))) => {}
                Ok(None) => return Ok(()),
                Err(e) => {
                    return Err(format!(
                        "record {} does not read: {e}; the records before it are read",
                        sink.counter.t.records + 1
                    ));
                }
            }
        }
    }));
    match read {
        Ok(r) => r.err(),
        Err(_) => Some(format!(
            "the container parser failed after {} records; the records before it are read",
            sink.counter.t.records
        )),
    }
}

/// [`from_bytes`], and with `kallsyms` (the running kernel's symbols) read and parsed on
/// another thread when the recording's kernel is this one, while the records are read.
fn from_bytes_with(
    path: &Path,
    bytes: Vec<u8>,
    running_kernel: Option<&str>,
    kallsyms: Option<&Path>,
) -> Result<PerfData, PerfDataError> {
    read_bytes(
        path,
        FileBytes::Whole(bytes),
        running_kernel,
        kallsyms,
        None,
    )?
    .ok_or_else(|| {
        // Only a file read in chunks can need the whole-file path.
        fail(path, Fail::Damaged("the records could not be read".into()))
    })
}

/// [`from_bytes_with`]; with `data`, `bytes` holds the file without its data section (zeros
/// there) and the records are read from the file in chunks. `None` when such a file needs the
/// whole-file path after all (compressed records, AUXTRACE).
fn read_bytes(
    path: &Path,
    bytes: FileBytes,
    running_kernel: Option<&str>,
    kallsyms: Option<&Path>,
    data: Option<DataFile>,
) -> Result<Option<PerfData>, PerfDataError> {
    let b = &bytes[..];
    let magic = b.get(..8).unwrap_or(b);
    if magic == MAGIC_BIG_ENDIAN {
        return Err(fail(
            path,
            Fail::Unsupported("a big-endian perf.data".into()),
        ));
    }
    if magic == MAGIC_V1 {
        return Err(fail(
            path,
            Fail::Unsupported("perf.data format version 1 (PERFFILE)".into()),
        ));
    }
    if magic != MAGIC {
        return Err(fail(
            path,
            Fail::Damaged(format!(
                "magic {:?}, expected \"PERFILE2\"",
                String::from_utf8_lossy(magic)
            )),
        ));
    }
    let pipe = u64_at(b, 8) == Some(PIPE_HEADER_SIZE);
    let p = match (&data, pipe) {
        (_, true) => prepare_pipe(b),
        (None, false) => prepare_file(b),
        (Some(d), false) => prepare_file_with(b, &mut |p, start, end| d.walk(p, start, end)),
    }
    .map_err(|f| fail(path, f))?;
    if data.is_some() && (p.compressed || p.user_records.contains_key(&user::AUXTRACE)) {
        return Ok(None);
    }
    let mut info = PerfDataInfo {
        path: path.to_path_buf(),
        file_len: b.len() as u64,
        pipe,
        data_section: p.data_section,
        user_records: p.user_records.clone(),
        truncated: p.truncated.clone(),
        warnings: p.warnings.clone(),
        ..PerfDataInfo::default()
    };
    let mut meta = meta_of(&p, &mut info);
    for r in &p.build_id_records {
        parse_build_ids(r, &mut info.build_ids);
    }
    info.kernel = kernel_check(&info.build_ids, running_kernel);
    let pending = match (&info.kernel, kallsyms) {
        (KernelCheck::Matches { .. }, Some(k)) => {
            let k = k.to_path_buf();
            Some(std::thread::spawn(move || {
                let text = std::fs::read(k).unwrap_or_default();
                let text = String::from_utf8_lossy(&text);
                let start = text.lines().find_map(|l| {
                    let mut it = l.split_ascii_whitespace();
                    let addr = it.next()?;
                    (it.nth(1)? == "_text").then(|| u64::from_str_radix(addr, 16).ok())?
                });
                (Arc::new(KernelSymbols::parse(&text)), start)
            }))
        }
        _ => None,
    };
    let mut sink = Sink::new(&meta);
    // Uncompressed data without AUXTRACE payloads is a sequence of records: it becomes the one
    // block as it is, perf's user records left in it (they decode as unknown records and are
    // skipped), which saves copying and faulting in a second buffer of its size.
    let (start, end) = p.records;
    let in_place = !p.compressed
        && !p.user_records.contains_key(&user::AUXTRACE)
        && end - start <= BLOCK_BYTES_IN_PLACE;
    let mut data = data.map(|d| DataFile {
        start: start as u64,
        end: end as u64,
        ..d
    });
    let stop = if p.compressed {
        records_via_crate(&crate_copy(&p, b, pipe), pipe, &mut sink)
    } else if let Some(d) = &mut data {
        let mut n = 0;
        for chunk in d.chunks() {
            records_direct(&chunk, (0, chunk.len()), &mut sink, false);
            n += 1;
        }
        d.chunk_count = n;
        d.take_error()
    } else {
        records_direct(b, p.records, &mut sink, !in_place);
        None
    };
    let (mut blocks, mut t, recorded_text) = sink.finish();
    if data.is_some() {
        blocks.clear();
    } else if in_place
        && end > start
        && let FileBytes::Whole(mut data) = bytes
    {
        data.truncate(end);
        data.drain(..start);
        blocks = vec![data];
    }
    if let Some(why) = stop {
        if t.records == 0 && info.truncated.is_none() {
            return Err(fail(path, Fail::Damaged(why)));
        }
        info.truncated.get_or_insert(why);
    }
    let mut ids: HashMap<u64, (i32, i32)> = HashMap::new();
    for body in &p.id_index {
        parse_id_index(body, &mut ids);
    }
    for e in &mut meta.events {
        for i in &mut e.ids {
            if let Some(&(cpu, tid)) = ids.get(&i.id) {
                i.cpu = cpu;
                i.tid = tid;
            }
        }
    }
    info.records = t.records;
    info.record_bytes = t.record_bytes;
    if let Some((first, last)) = info.sample_time {
        t.duration_ns = last.saturating_sub(first);
    }
    let mut build_ids_text = String::new();
    for e in info.build_ids.iter().filter(|e| !e.kernel) {
        let _ = writeln!(build_ids_text, "{} {}", e.build_id, e.path);
    }
    Ok(Some(PerfData {
        meta,
        trailer: t,
        info,
        blocks,
        data,
        build_ids_text,
        recorded_text,
        kallsyms: Mutex::new(match pending {
            Some(h) => Kallsyms::Pending(h),
            None => Kallsyms::None,
        }),
    }))
}

fn kernel_check(build_ids: &[BuildIdEntry], running: Option<&str>) -> KernelCheck {
    let Some(k) = build_ids
        .iter()
        .find(|e| e.kernel && e.path.starts_with("[kernel.kallsyms]"))
    else {
        return KernelCheck::NoBuildId;
    };
    if running == Some(k.build_id.as_str()) {
        KernelCheck::Matches {
            build_id: k.build_id.clone(),
        }
    } else {
        KernelCheck::Differs {
            recorded: k.build_id.clone(),
            running: running.map(str::to_string),
        }
    }
}

/// The header of the recording in hrec's terms, and the feature facts for `info`.
fn meta_of(p: &Prepared, info: &mut PerfDataInfo) -> Meta {
    let string = |f: u32| {
        p.features.get(&f).and_then(|d| {
            let mut at = 0;
            string_at(d, &mut at)
        })
    };
    info.features = p.features.keys().map(|&f| feature::name(f)).collect();
    info.perf_version = string(feature::VERSION);
    info.cpuid = string(feature::CPUID);
    info.nr_cpus = p
        .features
        .get(&feature::NRCPUS)
        .and_then(|d| Some((u32_at(d, 0)?, u32_at(d, 4)?)));
    info.total_mem_kb = p
        .features
        .get(&feature::TOTAL_MEM)
        .and_then(|d| u64_at(d, 0));
    info.sample_time = p
        .features
        .get(&feature::SAMPLE_TIME)
        .and_then(|d| Some((u64_at(d, 0)?, u64_at(d, 8)?)))
        .filter(|&(first, last)| last > 0 && first <= last);
    info.compression = p.features.get(&feature::COMPRESSED).and_then(|d| {
        let (ty, level, ratio) = (u32_at(d, 4)?, u32_at(d, 8)?, u32_at(d, 12)?);
        let name = if ty == 1 {
            "zstd".to_string()
        } else {
            format!("type {ty}")
        };
        Some(format!("{name} level {level}, ratio {ratio}"))
    });
    info.pmu_mappings = p
        .features
        .get(&feature::PMU_MAPPINGS)
        .map(|d| parse_pmu_mappings(d))
        .unwrap_or_default();
    info.groups = p
        .features
        .get(&feature::GROUP_DESC)
        .map(|d| parse_group_desc(d, p.attrs.len()))
        .unwrap_or_default();
    if let Some(d) = p.features.get(&feature::BUILD_ID) {
        parse_build_ids(d, &mut info.build_ids);
    }
    let leader_of = |i: usize| {
        info.groups
            .iter()
            .find(|g| (g.leader..g.leader + g.members).contains(&i))
            .map_or(i, |g| g.leader)
    };
    let mut events = Vec::with_capacity(p.attrs.len());
    let mut pmus: Vec<PmuMeta> = Vec::new();
    for (i, a) in p.attrs.iter().enumerate() {
        let attr = Attr::from_bytes(&a.bytes);
        let pmu = pmu_of(&attr, &info.pmu_mappings);
        if let Some(name) = &pmu
            && !pmus.iter().any(|p| &p.name == name)
        {
            let type_ = match attr.type_ {
                types::HARDWARE | types::HW_CACHE if attr.config >> 32 != 0 => {
                    (attr.config >> 32) as u32
                }
                t => t,
            };
            pmus.push(PmuMeta {
                name: name.clone(),
                type_,
            });
        }
        let leader = leader_of(i);
        events.push(EventMeta {
            name: a
                .name
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| fallback_name(&attr, &info.pmu_mappings)),
            pmu,
            attr,
            leader,
            role: role(&attr).to_string(),
            ids: a
                .ids
                .iter()
                .map(|&id| EventId {
                    id,
                    cpu: -1,
                    tid: -1,
                })
                .collect(),
        });
    }
    let clockid = events
        .iter()
        .find(|e| e.attr.has(flag::USE_CLOCKID))
        .map(|e| e.attr.clockid);
    Meta {
        hrec_version: String::new(),
        command_line: p
            .features
            .get(&feature::CMDLINE)
            .map(|d| parse_string_list(d))
            .unwrap_or_default(),
        hostname: string(feature::HOSTNAME).unwrap_or_default(),
        kernel_release: string(feature::OSRELEASE).unwrap_or_default(),
        arch: string(feature::ARCH).unwrap_or_default(),
        cpu_model: string(feature::CPUDESC).unwrap_or_default(),
        nr_cpus: info.nr_cpus.map_or(0, |(avail, _)| avail),
        clockid,
        target: if info.pipe {
            "perf record (pipe mode)".into()
        } else {
            "perf record".into()
        },
        pmus,
        events,
        ..Meta::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::attr::sample;

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

    #[test]
    fn file_mode_gives_events_ids_roles_and_side_blocks() {
        let p = read(&file(&synth()), Some(KERNEL_ID)).unwrap();
        let m = &p.meta;
        let names: Vec<(&str, &str, Option<&str>)> = m
            .events
            .iter()
            .map(|e| (e.name.as_str(), e.role.as_str(), e.pmu.as_deref()))
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
            from_bytes_with(
                Path::new("t.data"),
                b.clone(),
                Some(KERNEL_ID),
                Some(&kallsyms),
            )
            .unwrap()
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
