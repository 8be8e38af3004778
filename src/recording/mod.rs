//! An opened recording: hrec's own file or a perf.data file, a decoder for its events, and its
//! records in time order — what `script`, `info`, `report` and `flamegraph` start from.
//!
//! **One entry, two sources.** [`Recording::open`] looks at the first bytes: `HRECDATA` is
//! hrec's file ([`crate::data::Reader`]), `PERFILE2` is perf's ([`crate::recording::perfdata`]). Both
//! become the same things, a [`Meta`] (events with their attrs in kernel layout and ids),
//! blocks of raw kernel records and named side blocks, so everything downstream is the same
//! code for both; only `hrec info` shows source-specific details ([`Source`]).
//!
//! **Why records are ordered.** The recorder writes one block per ring buffer batch, and each
//! CPU has its own buffer, so the file holds records in CPU-major order; only the `time` field
//! orders them across CPUs (perf's ordered-events queue does the same job). Records without a
//! time (synthesized ones, taken before recording started) come first, keeping their file
//! order, so a task's COMM and MMAP2 records are applied before its samples. [`order`] does
//! this as a stream, holding a few blocks of an hrec file or two rounds of a perf.data file,
//! never the whole file.
//!
//! **Why ids map to events.** Every fd of an event (one per CPU, one per thread) has its own
//! id; samples of inherited children carry the parent fd's id. The header lists every id of
//! every event, so an id found in a record names the plan event, its PMU and its CPU.
//!
//! **What comes beside the records**, alike for both sources: the side blocks by name, the
//! stack table of a recording unwound at record time, the kernel symbols that fit the
//! recording (an hrec file's own subset; for perf.data, this machine's only where they fit,
//! else the reason, [`perfdata`]), the vdso's image, and thread names from COMM and FORK as
//! the records are applied.

pub mod ids;
pub mod order;
pub mod perfdata;

use ids::decoder_of;

use std::collections::HashMap;
use std::io::Read as _;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::data::stacks::StackTable;
use crate::data::{self, DataError, Meta, Reader};
use crate::decode::{DecodeError, Decoder, Record};
use crate::symbol::Unresolved;
use crate::symbol::kallsyms::KernelSymbols;
use perfdata::{PerfData, PerfDataError};

/// Where a recording came from, with what only that kind of file has.
#[derive(Debug)]
pub enum Source {
    /// hrec's own file.
    Hrec(Box<Reader>),
    /// A perf.data file.
    PerfData(Box<PerfData>),
}

/// A recording opened for reading.
#[derive(Debug)]
pub struct Recording {
    /// The file.
    pub source: Source,
    /// Decoder built from the header's attrs and ids.
    pub decoder: Decoder,
    id_event: HashMap<u64, usize>,
    /// perf.data's records (an hrec file's blocks are read as they are needed).
    blocks: Vec<Vec<u8>>,
    /// Decompression workers (0: one per CPU).
    threads: usize,
    /// What the last walk met: unreadable blocks, records out of order.
    walked: Mutex<order::WalkStats>,
}

impl Recording {
    /// A side block by name (`build-ids`, `kallsyms`, `modules`); `None` when absent or
    /// unreadable.
    pub fn side(&self, name: &str) -> Option<Vec<u8>> {
        match &self.source {
            Source::Hrec(r) => r.side(name).ok().flatten(),
            Source::PerfData(p) => p.side(name),
        }
    }

    /// Every side block named `name`, in file order (hrec files; none for perf.data, whose
    /// sides are single).
    pub fn sides(&self, name: &str) -> Vec<Vec<u8>> {
        match &self.source {
            Source::Hrec(r) => r.sides(name).filter_map(Result::ok).collect(),
            Source::PerfData(p) => p.side(name).into_iter().collect(),
        }
    }

    /// The trailer of a finished hrec recording; for perf.data, the counts of its records.
    pub fn trailer(&self) -> Option<&data::Trailer> {
        match &self.source {
            Source::Hrec(r) => r.trailer(),
            Source::PerfData(p) => Some(&p.trailer),
        }
    }

    /// The times of the first and last sample (perf's `--time` percentages are of this span):
    /// from the file (perf.data's `HEADER_SAMPLE_TIME`, hrec's trailer) or, for a file without
    /// them (older writers, a recording cut short), from a walk of its samples. `None` without
    /// timed samples.
    pub fn sample_time(&self) -> Option<(u64, u64)> {
        let stored = match &self.source {
            Source::Hrec(r) => r.trailer().and_then(|t| t.sample_time),
            Source::PerfData(p) => p.info.sample_time,
        };
        stored.or_else(|| {
            let mut span: Option<(u64, u64)> = None;
            self.for_each(|r| {
                if let Ok(Record::Sample(s)) = r
                    && let Some(t) = s.time.filter(|&t| t > 0)
                {
                    span = Some(span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
                }
            });
            span
        })
    }

    /// Wall-clock time of the recording's start, ns since the epoch, when the file tells it:
    /// an hrec file's meta; for perf.data, the first sample's time put on the wall clock
    /// through `HEADER_CLOCK_DATA`, which `perf record -k CLOCK` writes (perf.data has no
    /// start time otherwise).
    pub fn start_time_unix_ns(&self) -> Option<u64> {
        match &self.source {
            Source::Hrec(r) => Some(r.meta().start_time_unix_ns).filter(|&t| t > 0),
            Source::PerfData(p) => {
                let (tod, clock) = p.info.clock_data?;
                let (first, _) = self.sample_time()?;
                tod.checked_add(first)?.checked_sub(clock)
            }
        }
    }

    /// Why the file is incomplete, when it is.
    pub fn truncated(&self) -> Option<&str> {
        match &self.source {
            Source::Hrec(r) => r.truncated(),
            Source::PerfData(p) => p.info.truncated.as_deref(),
        }
    }

    /// Number of record blocks.
    pub fn block_count(&self) -> usize {
        match &self.source {
            Source::Hrec(r) => r
                .blocks()
                .iter()
                .filter(|b| b.kind == data::BlockKind::Records)
                .count(),
            Source::PerfData(p) => match (p.data_file(), p.compressed()) {
                (Some(d), _) => d.chunk_count(),
                (None, Some(c)) => c.block_count(),
                (None, None) => self.blocks.len(),
            },
        }
    }

    /// Problems the last walk over the records met, one line each: blocks that could not be
    /// read (and were skipped), records found out of time order beyond the reorder window.
    pub fn errors(&self) -> Vec<String> {
        let w = self.walked.lock().unwrap_or_else(|e| e.into_inner());
        let mut v = one_line_per_kind(&w.block_errors);
        if w.reordered > 0 {
            v.push(format!(
                "{} records were older than records read before them (beyond the reorder window: {}); they were taken where they were found",
                w.reordered,
                match &self.source {
                    Source::Hrec(_) => "the current block of each CPU",
                    Source::PerfData(_) => "two FINISHED_ROUND rounds",
                }
            ));
        }
        v
    }

    /// The kernel symbols that fit the recording: hrec's `kallsyms` side block, or for a
    /// perf.data made on this machine's kernel, this machine's `/proc/kallsyms`.
    pub fn kernel_symbols(&self) -> Arc<KernelSymbols> {
        match &self.source {
            Source::Hrec(_) => Arc::new(
                self.side("kallsyms")
                    .map(|b| KernelSymbols::parse(&String::from_utf8_lossy(&b)))
                    .unwrap_or_default(),
            ),
            Source::PerfData(p) => p.kernel_symbols(),
        }
    }

    /// The stack table of a recording unwound at record time (empty for any other).
    pub fn stacks(&self) -> StackTable {
        let mut t = StackTable::new();
        if let Source::Hrec(r) = &self.source {
            for block in r.sides("stacks") {
                match block {
                    Ok(b) => t.add_block(&b),
                    Err(_) => t.bad_blocks += 1,
                }
            }
        }
        t
    }

    /// The image of the vdso the recorded processes had, to unwind through it and name its
    /// frames: hrec's `vdso` side block (written when the samples need it); else this
    /// machine's vdso when its build-id is the one the file lists for `[vdso]`, else the copy
    /// in perf's build-id cache `cache` (`<cache>/[vdso]/<build-id>/vdso`; `None`: the default
    /// cache, [`crate::symbol::buildid_cache::resolve_dir`]). A file that lists no build-id
    /// for the vdso (perf's pipe mode writes no build-id list, nor does `perf record -B`) gets
    /// this machine's vdso, as perf takes its own, but only when it was recorded on this
    /// machine's kernel release: another kernel's vdso has other code at the same offsets.
    pub fn vdso_image(&self, cache: Option<&std::path::Path>) -> Option<Vec<u8>> {
        if let Source::Hrec(_) = &self.source
            && let Some(image) = self.side("vdso")
        {
            return Some(image);
        }
        let listed = self
            .side("build-ids")
            .and_then(|ids| String::from_utf8(ids).ok())
            .and_then(|ids| {
                ids.lines().find_map(|l| {
                    let (id, path) = l.split_once(' ')?;
                    (path.trim() == "[vdso]").then(|| id.to_string())
                })
            });
        let Some(want) = listed else {
            let here = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
            let recorded = &self.meta().kernel_release;
            return (!recorded.is_empty() && recorded.trim() == here.trim())
                .then(|| crate::kernel::own_vdso(std::path::Path::new("/proc")))
                .flatten();
        };
        let build_id = crate::kernel::image_build_id;
        if let Some(own) = crate::kernel::own_vdso(std::path::Path::new("/proc"))
            && build_id(&own).as_deref() == Some(want.as_str())
        {
            return Some(own);
        }
        // perf's build-id cache, where hrec record and perf record save it.
        let cached = cache
            .map(std::path::Path::to_path_buf)
            .or_else(|| crate::symbol::buildid_cache::resolve_dir(None))
            .and_then(|dir| crate::symbol::buildid_cache::Cache::new(dir).vdso(&want))?;
        let image = std::fs::read(cached).ok()?;
        (build_id(&image).as_deref() == Some(want.as_str())).then_some(image)
    }

    /// Why kernel addresses stay unresolved when the recording brings no kernel symbols: a
    /// perf.data made on another kernel says so, anything else has none.
    pub fn kernel_unresolved(&self) -> Unresolved {
        match &self.source {
            Source::Hrec(_) => Unresolved::NoKernelSymbols,
            Source::PerfData(p) => p.kernel_unresolved(),
        }
    }
}

/// Why a recording cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// An hrec file.
    #[error(transparent)]
    Data(#[from] DataError),
    /// A perf.data file.
    #[error(transparent)]
    PerfData(#[from] PerfDataError),
}

/// Whether `path` starts with a perf.data magic (unreadable files are left to the hrec
/// reader, whose error names them).
fn is_perf_data(path: &Path) -> bool {
    let mut first = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut first))
        .is_ok_and(|()| perfdata::is_perf_data(&first))
}

impl Recording {
    /// Opens `path`, an hrec recording or a perf.data file (told apart by the magic).
    pub fn open(path: &Path) -> Result<Recording, RecordingError> {
        Recording::open_with(path, 0)
    }

    /// [`open`](Self::open) with `threads` decompression workers (0: one per CPU).
    pub fn open_with(path: &Path, threads: usize) -> Result<Recording, RecordingError> {
        Recording::open_with_kernel(path, threads, true)
    }

    /// [`Recording::open_with`]; without `kernel_symbols` a perf.data's kernel addresses are
    /// not named from this machine's `/proc/kallsyms` (which takes tens of milliseconds to
    /// read), for commands that show no kernel function.
    pub fn open_with_kernel(
        path: &Path,
        threads: usize,
        kernel_symbols: bool,
    ) -> Result<Recording, RecordingError> {
        if is_perf_data(path) {
            let mut p = PerfData::read_with(path, kernel_symbols)?;
            let blocks = std::mem::take(&mut p.blocks);
            let (decoder, id_event) = decoder_of(&p.meta);
            return Ok(Recording {
                source: Source::PerfData(Box::new(p)),
                decoder,
                id_event,
                blocks,
                threads,
                walked: Mutex::default(),
            });
        }
        let reader = Reader::open(path)?;
        let (decoder, id_event) = decoder_of(reader.meta());
        Ok(Recording {
            source: Source::Hrec(Box::new(reader)),
            decoder,
            id_event,
            blocks: Vec::new(),
            threads,
            walked: Mutex::default(),
        })
    }

    /// The header.
    pub fn meta(&self) -> &Meta {
        match &self.source {
            Source::Hrec(r) => r.meta(),
            Source::PerfData(p) => &p.meta,
        }
    }

    /// The plan event an id belongs to.
    pub fn event_of(&self, id: u64) -> Option<usize> {
        self.id_event.get(&id).copied()
    }

    /// The event a record belongs to: by its id, or the only event when there is one.
    pub fn event_of_record(&self, r: &Record<'_>) -> Option<usize> {
        let id = match r {
            Record::Sample(s) => s.event_id(),
            other => other.sample_id().and_then(|s| s.event_id()),
        };
        match id {
            Some(id) => self.event_of(id),
            None => (self.meta().events.len() == 1).then_some(0),
        }
    }

    /// Reads every record block of an hrec file once without decoding it, so that
    /// [`errors`](Self::errors) names every block that cannot be read.
    pub fn check_blocks(&self) {
        let Source::Hrec(r) = &self.source else {
            return;
        };
        let block_errors = r
            .records()
            .filter_map(|b| b.err().map(|e| order::skipped_block(&e)))
            .collect();
        *self.walked.lock().unwrap_or_else(|e| e.into_inner()) = order::WalkStats {
            reordered: 0,
            block_errors,
        };
    }

    /// Calls `f` for every record in time order ([`order`]). Records that do not decode are
    /// passed as errors (with their offset) and skipped; the walk goes on with the next one.
    /// A block that cannot be read is skipped and named in [`errors`](Self::errors).
    pub fn for_each(&self, mut f: impl for<'a> FnMut(Result<Record<'a>, DecodeError>)) {
        self.for_each_raw(|_, r| f(r));
    }

    /// [`for_each`](Self::for_each) with each record's bytes as they are in the file
    /// (header included; empty beside an error), for writers that copy records on.
    pub fn for_each_raw(
        &self,
        mut f: impl for<'a> FnMut(&'a [u8], Result<Record<'a>, DecodeError>),
    ) {
        let stats = match &self.source {
            Source::Hrec(r) => order::walk_hrec(r, &self.decoder, self.threads, &mut f),
            Source::PerfData(p) => match (p.data_file(), p.compressed()) {
                (Some(d), _) => {
                    let mut chunks = d.chunks().map(std::borrow::Cow::Owned);
                    let mut stats = order::walk_rounds(&mut chunks, &self.decoder, &mut f);
                    stats.block_errors.extend(d.take_error());
                    stats
                }
                (None, Some(c)) => {
                    let mut blocks = c.blocks().map(std::borrow::Cow::Owned);
                    let mut stats = order::walk_rounds(&mut blocks, &self.decoder, &mut f);
                    stats.block_errors.extend(c.take_error());
                    stats
                }
                (None, None) => {
                    let mut blocks = self
                        .blocks
                        .iter()
                        .map(|b| std::borrow::Cow::Borrowed(&b[..]));
                    order::walk_rounds(&mut blocks, &self.decoder, &mut f)
                }
            },
        };
        *self.walked.lock().unwrap_or_else(|e| e.into_inner()) = stats;
    }
}

/// Thread names as the records set them: COMM sets a thread's name, FORK gives the child its
/// parent's name (perf's rule, replacing what an earlier thread of that tid was called), so a
/// thread that never called exec still has a name.
#[derive(Debug, Clone, Default)]
pub struct Comms(HashMap<u32, String>);

impl Comms {
    /// Applies a side-band record.
    pub fn apply(&mut self, r: &Record<'_>) {
        match r {
            Record::Comm(c) => {
                self.0
                    .insert(c.tid, String::from_utf8_lossy(c.comm).into_owned());
            }
            Record::Fork(t) => {
                // The child is a new thread, whatever had its tid before (tids are reused):
                // it has its parent's name, the idle task's `swapper` too, or none yet.
                let parent = self
                    .0
                    .get(&t.ptid)
                    .or_else(|| self.0.get(&t.ppid))
                    .cloned()
                    .or_else(|| (t.ptid == 0).then(|| "swapper".to_string()));
                match parent {
                    Some(name) => self.0.insert(t.tid, name),
                    None => self.0.remove(&t.tid),
                };
            }
            _ => {}
        }
    }

    /// The name of a thread (`:TID` when unknown, as perf prints it, the tid signed: some
    /// CPU-wide switch records carry tid -1; the idle task, pid 0, is `swapper`, as perf
    /// names it: no record ever names it).
    pub fn name(&self, tid: u32) -> String {
        match self.0.get(&tid) {
            Some(name) => name.clone(),
            None if tid == 0 => "swapper".to_string(),
            None => format!(":{}", tid as i32),
        }
    }
}

/// The statistics of a file whose recording did not finish (no trailer): counted from its
/// records.
pub fn count_samples(rec: &Recording) -> (u64, Vec<u64>) {
    let mut per_event = vec![0u64; rec.meta().events.len()];
    let mut total = 0;
    rec.for_each(|r| {
        if let Ok(r @ Record::Sample(_)) = r {
            total += 1;
            if let Some(e) = rec.event_of_record(&r)
                && let Some(c) = per_event.get_mut(e)
            {
                *c += 1;
            }
        }
    });
    (total, per_event)
}

/// The user stack copies of `--call-graph dwarf` samples: how many samples carry one, and
/// how many of those filled the whole `sample_stack_user` (the stack may go on past it).
pub fn stack_copies(rec: &Recording) -> (u64, u64) {
    let (mut with, mut full) = (0, 0);
    rec.for_each(|r| {
        if let Ok(Record::Sample(s)) = r
            && let Some(st) = s.stack_user
            && !st.data.is_empty()
        {
            with += 1;
            if st.dyn_size == Some(st.data.len() as u64) {
                full += 1;
            }
        }
    });
    (with, full)
}

/// Re-exported for callers that only need the block list.
pub use data::BlockInfo;

/// Block errors as warnings: one line per kind of damage (lines that differ only in their
/// numbers, the blocks' offsets), the first block's with how many more there were.
fn one_line_per_kind(errors: &[String]) -> Vec<String> {
    // Each run of digits as one `#`.
    let kind = |e: &str| -> String {
        let mut k = String::with_capacity(e.len());
        for c in e.chars() {
            if !c.is_ascii_digit() {
                k.push(c);
            } else if !k.ends_with('#') {
                k.push('#');
            }
        }
        k
    };
    let mut out: Vec<(String, String, usize)> = Vec::new();
    for e in errors {
        let k = kind(e);
        match out.iter_mut().find(|(ok, _, _)| *ok == k) {
            Some(o) => o.2 += 1,
            None => out.push((k, e.clone(), 1)),
        }
    }
    out.into_iter()
        .map(|(_, first, n)| match n {
            1 => first,
            n => format!("{first} (and {} more blocks like it)", n - 1),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn block_errors_are_one_line_per_kind_of_damage() {
        let e = |at: u32, why: &str| {
            format!("r.hrec: corrupt block at offset {at}: {why}; skipped that block")
        };
        let lines = super::one_line_per_kind(&[
            e(100, "zstd: checksum"),
            e(2000, "zstd: checksum"),
            e(30000, "zstd: checksum"),
            e(400, "the block header does not match"),
        ]);
        assert_eq!(
            lines,
            [
                format!("{} (and 2 more blocks like it)", e(100, "zstd: checksum")),
                e(400, "the block header does not match"),
            ]
        );
    }
}
