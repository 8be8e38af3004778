//! An opened recording: hrec's own file or a perf.data file, a decoder for its events, and its
//! records in time order — what `script`, `info`, `report` and `flamegraph` start from.
//!
//! **One entry, two sources.** [`Recording::open`] looks at the first bytes: `HRECDATA` is
//! hrec's file ([`crate::data::Reader`]), `PERFILE2` is perf's ([`crate::perfdata`]). Both
//! become the same things, a [`Meta`] (events with their attrs in kernel layout and ids),
//! blocks of raw kernel records and named side blocks, so everything downstream is the same
//! code for both; only `hrec info` shows source-specific details ([`Source`]).
//!
//! **Why records are sorted.** The recorder writes one block per ring buffer batch, and each
//! CPU has its own buffer, so the file holds records in CPU-major order; only the `time` field
//! orders them across CPUs (perf's ordered-events queue does the same job). Records without a
//! time (synthesized ones, taken before recording started) sort first, keeping their file
//! order, so a task's COMM and MMAP2 records are applied before its samples.
//!
//! **Why ids map to events.** Every fd of an event (one per CPU, one per thread) has its own
//! id; samples of inherited children carry the parent fd's id. The header lists every id of
//! every event, so an id found in a record names the plan event, its PMU and its CPU.

use std::collections::HashMap;
use std::io::Read as _;
use std::path::Path;
use std::sync::Arc;

use crate::data::{self, DataError, Meta, Reader};
use crate::decode::{self, DecodeError, Decoder, RawRecord, Record};
use crate::perfdata::{self, PerfData, PerfDataError};
use crate::symbol::Unresolved;
use crate::symbol::kallsyms::KernelSymbols;

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
    blocks: Vec<Vec<u8>>,
    /// Problems met while reading blocks (a corrupt block is skipped).
    pub errors: Vec<String>,
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

    /// The trailer of a finished hrec recording; for perf.data, the counts of its records.
    pub fn trailer(&self) -> Option<&data::Trailer> {
        match &self.source {
            Source::Hrec(r) => r.trailer(),
            Source::PerfData(p) => Some(&p.trailer),
        }
    }

    /// Why the file is incomplete, when it is.
    pub fn truncated(&self) -> Option<&str> {
        match &self.source {
            Source::Hrec(r) => r.truncated(),
            Source::PerfData(p) => p.info.truncated.as_deref(),
        }
    }

    /// Number of record blocks read.
    pub fn block_count(&self) -> usize {
        self.blocks.len()
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

    /// Why kernel addresses stay unresolved when the recording brings no kernel symbols: a
    /// perf.data made on another kernel says so, anything else has none.
    pub fn kernel_unresolved(&self) -> Unresolved {
        match &self.source {
            Source::Hrec(_) => Unresolved::NoKernelSymbols,
            Source::PerfData(p) => p.kernel_unresolved(),
        }
    }
}

/// Where a record lives: block index and byte offset in the decompressed block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct At {
    time: u64,
    block: u32,
    offset: u32,
    size: u16,
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
    /// Opens `path`, an hrec recording or a perf.data file (told apart by the magic), and
    /// decompresses its record blocks.
    pub fn open(path: &Path) -> Result<Recording, RecordingError> {
        if is_perf_data(path) {
            let mut p = PerfData::read(path)?;
            let blocks = std::mem::take(&mut p.blocks);
            let (decoder, id_event) = decoder_of(&p.meta);
            return Ok(Recording {
                source: Source::PerfData(Box::new(p)),
                decoder,
                id_event,
                blocks,
                errors: Vec::new(),
            });
        }
        let reader = Reader::open(path)?;
        let (decoder, id_event) = decoder_of(reader.meta());
        let (blocks, errors) = read_blocks(&reader);
        Ok(Recording {
            source: Source::Hrec(Box::new(reader)),
            decoder,
            id_event,
            blocks,
            errors,
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

    /// Calls `f` for every record in time order. Records that do not decode are passed as
    /// errors (with their offset) and skipped; the walk goes on with the next one.
    pub fn for_each<'s>(&'s self, mut f: impl FnMut(Result<Record<'s>, DecodeError>)) {
        let mut order: Vec<At> = Vec::new();
        for (bi, bytes) in self.blocks.iter().enumerate() {
            let mut it = decode::records(bytes);
            let mut off = 0usize;
            while let Some(raw) = it.next() {
                match raw {
                    Ok(raw) => {
                        let time = self.decoder.time(&raw).unwrap_or(0);
                        order.push(At {
                            time,
                            block: bi as u32,
                            offset: off as u32,
                            size: raw.header.size,
                        });
                        off = it.offset();
                    }
                    Err(e) => {
                        f(Err(e));
                        break;
                    }
                }
            }
        }
        order.sort();
        for at in order {
            let (start, end) = (
                at.offset as usize,
                at.offset as usize + usize::from(at.size),
            );
            let bytes = &self.blocks[at.block as usize][start..end];
            let raw = match RawRecord::new(bytes, start) {
                Ok(r) => r,
                Err(e) => {
                    f(Err(e));
                    continue;
                }
            };
            f(self.decoder.decode(&raw));
        }
    }
}

/// The decoder of a header's attrs and ids, and the event of every id.
pub(crate) fn decoder_of(meta: &Meta) -> (Decoder, HashMap<u64, usize>) {
    let decoder = Decoder::new(
        meta.events
            .iter()
            .flat_map(|e| e.ids.iter().map(move |i| (i.id, e.attr))),
    );
    let id_event = meta
        .events
        .iter()
        .enumerate()
        .flat_map(|(n, e)| e.ids.iter().map(move |i| (i.id, n)))
        .collect();
    (decoder, id_event)
}

/// Decompresses the record blocks, on every CPU (decoding the column codec is most of the
/// cost of reading a file). Blocks are independent, so a corrupt one is reported and skipped
/// and the others are still read: what was recorded around the damage is not lost.
fn read_blocks(reader: &Reader) -> (Vec<Vec<u8>>, Vec<String>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let infos: Vec<&data::BlockInfo> = reader
        .blocks()
        .iter()
        .filter(|b| b.kind == data::BlockKind::Records)
        .collect();
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(infos.len())
        .max(1);
    let mut done: Vec<(usize, Result<Vec<u8>, DataError>)> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                sc.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(info) = infos.get(i) else { break };
                        out.push((i, reader.read_block(info)));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    let mut blocks = Vec::new();
    let mut errors = Vec::new();
    if done.len() != infos.len() {
        errors.push(format!(
            "{} of {} record blocks could not be decoded (a decoder thread failed)",
            infos.len() - done.len(),
            infos.len()
        ));
    }
    for (_, b) in done {
        match b {
            Ok(bytes) => blocks.push(bytes),
            Err(e) => errors.push(format!("{e}; skipped that block")),
        }
    }
    (blocks, errors)
}

/// Thread names as the records set them: COMM sets a thread's name, FORK gives the child its
/// parent's name (perf's rule), so a thread that never called exec still has a name.
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
                if let Some(name) = self.0.get(&t.ptid).or_else(|| self.0.get(&t.ppid)).cloned() {
                    self.0.entry(t.tid).or_insert(name);
                }
            }
            _ => {}
        }
    }

    /// The name of a thread (`:TID` when unknown, as perf prints it).
    pub fn name(&self, tid: u32) -> String {
        self.0
            .get(&tid)
            .cloned()
            .unwrap_or_else(|| format!(":{tid}"))
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

/// Re-exported for callers that only need the block list.
pub use data::BlockInfo;
