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
//! * **Compressed data inflated by hrec, in bounded memory.** `perf record -z` writes one zstd
//!   stream across its COMPRESSED records, with records straddling them; [`Compressed`]
//!   inflates it as the records are walked into a window of fixed size, refusing a COMPRESSED
//!   record that inflates past what perf's own buffer for it (`mmap_len` of
//!   `HEADER_COMPRESSED`) could hold, so a 64 KiB zstd bomb claiming 2 GiB is one line, not
//!   2 GiB of memory. (linux-perf-data, used for this before, inflated each record whole
//!   into a buffer of whatever size the stream claimed, and sized other allocations from
//!   counts it had not checked.) Uncompressed data is taken straight from the checked data
//!   section, since hrec orders records by time itself ([`crate::recording`]).
//! * **Records are read from the file as they are walked** ([`DataFile`]): a file-mode data
//!   section or a pipe-mode stream is never held; the rest of the file (header, attrs,
//!   features) is.
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
//!
//! The parts, a file each: `layout` (magics, section and record numbers, the bounds-checked
//! readers; it imports nothing), `prepare` (the checks), `features`, `bytes` (the data section
//! read in chunks), `records` (record blocks and counts; the only part that imports
//! `recording`, for the decoder of `ids`), `compressed` (`-z` data), `kernel` (this
//! machine's kernel facts) and `to_meta` (the events in hrec's terms).

// Byte and text parsing: no indexing that can panic, no unwrap/expect outside tests.
#![cfg_attr(
    not(test),
    deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)
)]

mod bytes;
mod compressed;
mod features;
mod kernel;
mod layout;
mod prepare;
mod records;
mod to_meta;
pub mod tracing;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use bytes::{Chunks, DataFile};
pub use compressed::{Blocks, Compressed};
pub use features::{BuildIdEntry, GroupDesc};
pub use kernel::{KernelCheck, build_id_from_notes, running_kernel_build_id};
pub use layout::{MAGIC, feature, user};
pub use to_meta::PerfDataInfo;

use crate::data::{Meta, Trailer};
use crate::symbol::Unresolved;
use crate::symbol::kallsyms::KernelSymbols;
use bytes::{FileBytes, streamable};
use compressed::Source;
use features::{parse_build_ids, parse_id_index};
use kernel::{KALLSYMS, KERNEL_NOTES, Kallsyms, kernel_check, running_release};
use layout::{MAGIC_BIG_ENDIAN, MAGIC_V1, PIPE_HEADER_SIZE, u64_at};
use prepare::{Fail, prepare_file, prepare_file_with, prepare_pipe, prepare_pipe_with};
use records::{BLOCK_BYTES_IN_PLACE, Sink, records_direct};
use to_meta::meta_of;

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

/// A perf.data file turned into hrec's structures.
#[derive(Debug)]
pub struct PerfData {
    /// Events, attrs, ids and host facts.
    pub meta: Meta,
    /// Counts as an hrec trailer has them (samples, LOST, THROTTLE).
    pub trailer: Trailer,
    /// perf.data details.
    pub info: PerfDataInfo,
    /// Raw kernel records, concatenated, in file order; empty when they are read from the file
    /// ([`PerfData::data_file`]) or decompressed as they are walked
    /// ([`PerfData::compressed`]).
    pub blocks: Vec<Vec<u8>>,
    data: Option<DataFile>,
    compressed: Option<Compressed>,
    build_ids_text: String,
    /// Where the recording's kernel image was (`_text`, the pgoff of perf's
    /// `[kernel.kallsyms]_text` MMAP record).
    recorded_text: Option<u64>,
    kallsyms: Mutex<Kallsyms>,
}

impl PerfData {
    /// Reads `path`.
    pub fn read(path: &Path) -> Result<PerfData, PerfDataError> {
        PerfData::read_with(path, true)
    }

    /// Reads `path`; without `kernel_symbols` this machine's `/proc/kallsyms` is not read
    /// (for a command that names no kernel function: kernel addresses stay unresolved).
    pub fn read_with(path: &Path, kernel_symbols: bool) -> Result<PerfData, PerfDataError> {
        let build_id = running_kernel_build_id(Path::new(KERNEL_NOTES));
        let release = running_release();
        let running = Running {
            build_id: build_id.as_deref(),
            release: release.as_deref(),
            kallsyms: kernel_symbols.then_some(Path::new(KALLSYMS)),
        };
        if let Some((sparse, data)) = streamable(path)
            && let Some(p) = read_bytes(path, sparse, &running, Some(data))?
        {
            return Ok(p);
        }
        let bytes = std::fs::read(path).map_err(|source| PerfDataError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        from_bytes_with(path, bytes, &running)
    }

    /// The data section on disk, when the records are read from the file as they are walked
    /// (file mode, uncompressed) rather than held in [`blocks`](Self::blocks).
    pub fn data_file(&self) -> Option<&DataFile> {
        self.data.as_ref()
    }

    /// The records of `perf record -z` data, decompressed as they are walked.
    pub fn compressed(&self) -> Option<&Compressed> {
        self.compressed.as_ref()
    }

    /// The kallsyms verdict, waiting for the reading thread if it has not finished. The same
    /// build-id does not mean the same addresses: with KASLR every boot loads the kernel
    /// elsewhere, so this machine's symbols are used only when its `_text` is where the
    /// recording's was (perf's `[kernel.kallsyms]_text` MMAP record says where).
    fn kallsyms(&self) -> std::sync::MutexGuard<'_, Kallsyms> {
        let mut k = self.kallsyms.lock().unwrap_or_else(|e| e.into_inner());
        k.settle(
            self.recorded_text,
            matches!(self.info.kernel, KernelCheck::SameRelease { .. }),
        );
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
            KernelCheck::SameRelease { .. } if self.kernel_relocated().is_some() => {
                Unresolved::KernelRelocated
            }
            KernelCheck::SameRelease { .. } => Unresolved::NoKernelBuildId,
            KernelCheck::Matches { .. } if self.kernel_relocated().is_some() => {
                Unresolved::KernelRelocated
            }
            KernelCheck::Matches { .. } => Unresolved::NoKernelSymbols,
        }
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
    let running = Running {
        build_id: running_kernel,
        release: None,
        kallsyms: None,
    };
    from_bytes_with(path, b.to_vec(), &running)
}

/// What is known of this machine's kernel: its build-id, its release, and where its symbols
/// are (read and parsed on another thread, while the records are read, when the recording's
/// kernel is this one).
struct Running<'a> {
    build_id: Option<&'a str>,
    release: Option<&'a str>,
    kallsyms: Option<&'a Path>,
}

/// [`from_bytes`] with this machine's kernel facts.
fn from_bytes_with(
    path: &Path,
    bytes: Vec<u8>,
    running: &Running<'_>,
) -> Result<PerfData, PerfDataError> {
    read_bytes(path, FileBytes::Whole(bytes), running, None)?.ok_or_else(|| {
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
    running: &Running<'_>,
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
    // Read from the file in chunks, the records are counted by the walk that checks them:
    // one pass over the data section.
    let mut counted: Option<Sink> = None;
    let mut chunk_count = 0;
    let p = match (&data, pipe) {
        (None, true) => prepare_pipe(b),
        (None, false) => prepare_file(b),
        // A stream's attrs come as records of the stream: its records are counted in a
        // second walk, below.
        (Some(d), true) => prepare_pipe_with(b, &mut |p, start, end, on_record| {
            d.walk(p, start, end, &mut chunk_count, on_record)
        }),
        (Some(d), false) => prepare_file_with(b, &mut |p, start, end| {
            let mut sink = Sink::new(&meta_of(p, &mut PerfDataInfo::default()));
            let walked = d.walk(p, start, end, &mut chunk_count, &mut |_, t, rec| {
                if t < 64 {
                    sink.count(rec);
                }
            });
            counted = Some(sink);
            walked
        }),
    }
    .map_err(|f| fail(path, f))?;
    if data.is_some() && p.user_records.keys().any(|&t| layout::has_trailing(t)) {
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
    info.kernel = kernel_check(
        &info.build_ids,
        running.build_id,
        (&meta.kernel_release, running.release),
    );
    let mut pending = match (&info.kernel, running.kallsyms) {
        (KernelCheck::Matches { .. }, Some(k)) => Kallsyms::start(k),
        _ => Kallsyms::None,
    };
    // Compressed records are counted as they are inflated, not by the walk above.
    let mut sink = match counted {
        Some(s) if !p.compressed => s,
        _ => Sink::new(&meta),
    };
    // Uncompressed data without bytes after records (AUXTRACE payloads, a pipe's tracing
    // data) is a sequence of records: it becomes the one block as it is, perf's user records
    // left in it (they decode as unknown records and are skipped), which saves copying and
    // faulting in a second buffer of its size.
    let (start, end) = p.records;
    let in_place = !p.compressed
        && !p.user_records.keys().any(|&t| layout::has_trailing(t))
        && end - start <= BLOCK_BYTES_IN_PLACE;
    let mut data = data.map(|d| DataFile {
        start: start as u64,
        end: end as u64,
        ..d
    });
    let mut compressed = None;
    let stop = if p.compressed {
        // Streamed from the file when it is open for that, else from the bytes read.
        let source = match data.take() {
            Some(d) => Source::File(d.into_file()),
            None => Source::Memory(Arc::from(b)),
        };
        let mut c = Compressed::new(source, &p);
        let stop = c.count(|rec| sink.count(rec));
        compressed = Some(c);
        stop
    } else if let Some(d) = &mut data {
        // Counted by the walk above (file mode), which also said where the records stop, if
        // early; a stream's records are counted now.
        if pipe {
            for chunk in d.chunks() {
                records_direct(&chunk, (0, chunk.len()), &mut sink, false);
            }
        }
        d.chunk_count = chunk_count;
        d.take_error()
    } else {
        records_direct(b, p.records, &mut sink, !in_place);
        None
    };
    let group_reads = std::mem::take(&mut sink.counter.group_reads);
    let (mut blocks, mut t, recorded_text) = sink.finish();
    if info.groups.is_empty() {
        // No GROUP_DESC (older perf, `perf inject`): the groups are those the samples read.
        for events in &group_reads {
            let [leader, members @ ..] = events.as_slice() else {
                continue;
            };
            let leader = *leader;
            for &m in members {
                if let Some(e) = meta.events.get_mut(m) {
                    e.leader = leader;
                }
            }
            if events.iter().enumerate().all(|(k, &e)| e == leader + k) {
                info.groups.push(features::GroupDesc {
                    name: String::new(),
                    leader,
                    members: events.len(),
                });
            }
        }
    }
    // Without a build-id, only the kernel's address in the recording can tie it to this boot.
    if matches!(info.kernel, KernelCheck::SameRelease { .. }) {
        match (recorded_text, running.kallsyms) {
            (None, _) => info.kernel = KernelCheck::NoBuildId,
            (Some(_), Some(k)) => pending = Kallsyms::start(k),
            (Some(_), None) => {}
        }
    }
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
        compressed,
        build_ids_text,
        recorded_text,
        kallsyms: Mutex::new(pending),
    }))
}

#[cfg(test)]
mod tests;
