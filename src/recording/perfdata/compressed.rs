//! `perf record -z` data, streamed: decompressed a block of records at a time each time the
//! recording is walked, never held whole.
//!
//! perf writes one zstd stream across its COMPRESSED records, with records straddling them;
//! linux-perf-data decompresses it and hands the records on sorted by perf's rounds. It sizes
//! allocations from counts it has not checked, so it reads a view that holds only what passed
//! hrec's checks ([`crate_view`]): in file mode the file up to its last whole record with the
//! data size set to theirs and EVENT_DESC as the only feature section, in pipe mode the
//! stream without the records that failed. The view is a list of segments, patched bytes
//! and ranges of the source read as they are needed, so a gigabyte file is not copied.
//!
//! The records are walked once when the file is opened (to count them) and again on every
//! walk; each walk stops after the records the first one read, so damage found at open (a cut
//! stream) is reported once, as the file's truncation, and only a file that changed after it
//! was opened makes a walk report an error. A parser panic is caught: the records before it
//! are kept.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use linux_perf_data::linux_perf_event_reader::RawData;
use linux_perf_data::{PerfFileReader, PerfFileRecord};

use super::layout::feature;
use super::prepare::Prepared;

/// Records per block handed on (each block ends with a FINISHED_ROUND marker: the crate hands
/// records on in time order, so a block's records are final).
const BLOCK_RECORDS: usize = 4096;

/// Where the view's bytes come from.
#[derive(Debug)]
pub(super) enum Source {
    /// The file (read with `pread`).
    File(File),
    /// The file's bytes, already in memory.
    Memory(Arc<[u8]>),
}

/// A piece of the view.
#[derive(Debug, Clone)]
enum Segment {
    /// Bytes of the view itself (a patched header, a feature table).
    Bytes(Arc<[u8]>),
    /// `len` bytes of the source from `offset`.
    Source { offset: u64, len: u64 },
}

/// The compressed records of a perf.data, ready to be walked.
#[derive(Debug)]
pub struct Compressed {
    source: Source,
    segments: Vec<Segment>,
    pipe: bool,
    /// Kernel records the walk at open read; later walks stop there.
    limit: Option<u64>,
    blocks: usize,
    error: Mutex<Option<String>>,
}

/// The view linux-perf-data reads, as segments (see the module docs). `head` is the file's
/// first bytes (at least the header; the rest of the file may be zeros in it).
fn crate_view(p: &Prepared, head: &[u8], pipe: bool) -> Vec<Segment> {
    let (start, end) = p.records;
    let range = |from: usize, to: usize| Segment::Source {
        offset: from as u64,
        len: (to - from) as u64,
    };
    if pipe {
        let mut segments = Vec::new();
        let mut copied = 0;
        for &(from, to) in &p.dropped {
            segments.push(range(copied, from));
            copied = to;
        }
        segments.push(range(copied, end));
        return segments;
    }
    let mut header = head[..104].to_vec();
    header[48..56].copy_from_slice(&((end - start) as u64).to_le_bytes());
    header[56..72].fill(0); // event_types: obsolete, and the crate would prefer it
    header[72..104].fill(0);
    let mut segments = vec![Segment::Bytes(Arc::default()), range(104, end)];
    if let Some(d) = p.features.get(&feature::EVENT_DESC) {
        let f = feature::EVENT_DESC as usize;
        header[72 + (f / 64) * 8..80 + (f / 64) * 8]
            .copy_from_slice(&(1u64 << (f % 64)).to_le_bytes());
        let mut table = Vec::with_capacity(16 + d.len());
        table.extend_from_slice(&(end as u64 + 16).to_le_bytes());
        table.extend_from_slice(&(d.len() as u64).to_le_bytes());
        table.extend_from_slice(d);
        segments.push(Segment::Bytes(table.into()));
    }
    segments[0] = Segment::Bytes(header.into());
    segments
}

impl Compressed {
    /// The compressed records of a checked file (`p`); `head` holds at least its header.
    pub(super) fn new(source: Source, p: &Prepared, head: &[u8], pipe: bool) -> Compressed {
        Compressed {
            source,
            segments: crate_view(p, head, pipe),
            pipe,
            limit: None,
            blocks: 0,
            error: Mutex::new(None),
        }
    }

    /// Walks the records once, handing each kernel record to `count`; from now on walks stop
    /// after these records. Returns why the records end early, when they do.
    pub(super) fn count(&mut self, mut count: impl FnMut(&[u8])) -> Option<String> {
        let (mut records, mut blocks) = (0, 0);
        for block in self.blocks() {
            blocks += 1;
            // The blocks hold whole records, built above; the round markers are not counted.
            for raw in crate::decode::records(&block).flatten() {
                if raw.header.type_ < 64 {
                    count(raw.bytes);
                    records += 1;
                }
            }
        }
        self.limit = Some(records);
        self.blocks = blocks;
        self.take_error()
    }

    /// Blocks of records read at open.
    pub fn block_count(&self) -> usize {
        self.blocks
    }

    /// Why the last walk stopped early, if it did.
    pub fn take_error(&self) -> Option<String> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// The records, a block at a time, in the crate's order (time order by perf's rounds):
    /// whole kernel records, each block ended by a FINISHED_ROUND marker.
    pub fn blocks(&self) -> Blocks<'_> {
        let view = View {
            c: self,
            starts: self
                .segments
                .iter()
                .scan(0u64, |at, s| {
                    let here = *at;
                    *at += match s {
                        Segment::Bytes(b) => b.len() as u64,
                        Segment::Source { len, .. } => *len,
                    };
                    Some(here)
                })
                .collect(),
            pos: 0,
        };
        let reader = catch_unwind(AssertUnwindSafe(|| {
            if self.pipe {
                PerfFileReader::parse_pipe(view)
            } else {
                PerfFileReader::parse_file(view)
            }
        }));
        let reader = match reader {
            Ok(Ok(r)) => Some(r),
            Ok(Err(e)) => {
                self.fail(format!("the container does not parse: {e}"));
                None
            }
            Err(_) => {
                self.fail("the container parser failed".into());
                None
            }
        };
        Blocks {
            c: self,
            reader,
            records: 0,
        }
    }

    fn fail(&self, why: String) {
        *self.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
    }
}

/// Iterator of [`Compressed::blocks`].
pub struct Blocks<'a> {
    c: &'a Compressed,
    reader: Option<PerfFileReader<View<'a>>>,
    records: u64,
}

impl std::fmt::Debug for Blocks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blocks")
            .field("records", &self.records)
            .finish_non_exhaustive()
    }
}

impl Iterator for Blocks<'_> {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        let PerfFileReader {
            perf_file,
            record_iter,
        } = self.reader.as_mut()?;
        let mut block = Vec::new();
        let (c, records) = (self.c, &mut self.records);
        let end = catch_unwind(AssertUnwindSafe(|| -> Result<bool, String> {
            let mut n = 0;
            while n < BLOCK_RECORDS {
                if c.limit.is_some_and(|l| *records >= l) {
                    return Ok(true);
                }
                match record_iter.next_record(perf_file) {
                    Ok(Some(PerfFileRecord::EventRecord { record, .. })) => {
                        let body: [&[u8]; 2] = match record.data {
                            RawData::Single(a) => [a, &[]],
                            RawData::Split(a, b) => [a, b],
                        };
                        let len = 8 + body[0].len() + body[1].len();
                        let Ok(size) = u16::try_from(len) else {
                            continue;
                        };
                        block.extend_from_slice(&record.record_type.0.to_le_bytes());
                        block.extend_from_slice(&record.misc.to_le_bytes());
                        block.extend_from_slice(&size.to_le_bytes());
                        block.extend_from_slice(body[0]);
                        block.extend_from_slice(body[1]);
                        *records += 1;
                        n += 1;
                    }
                    // perf's own records were seen by the walk that checked the file.
                    Ok(Some(PerfFileRecord::UserRecord(_))) => {}
                    Ok(None) => return Ok(true),
                    Err(e) => {
                        return Err(format!(
                            "record {} does not read: {e}; the records before it are read",
                            *records + 1
                        ));
                    }
                }
            }
            Ok(false)
        }));
        let done = match end {
            Ok(Ok(done)) => done,
            Ok(Err(why)) => {
                c.fail(why);
                true
            }
            Err(_) => {
                c.fail(format!(
                    "the container parser failed after {} records; the records before it are read",
                    self.records
                ));
                true
            }
        };
        if done {
            self.reader = None;
        }
        if block.is_empty() {
            return None;
        }
        // The crate hands records on in time order: this block's records are final.
        block.extend_from_slice(&[68, 0, 0, 0, 0, 0, 8, 0]);
        Some(block)
    }
}

/// The view as a file for the crate: reads go to the segments.
struct View<'a> {
    c: &'a Compressed,
    /// Where each segment starts in the view.
    starts: Vec<u64>,
    pos: u64,
}

impl View<'_> {
    fn len(&self) -> u64 {
        match (self.starts.last(), self.c.segments.last()) {
            (Some(&at), Some(Segment::Bytes(b))) => at + b.len() as u64,
            (Some(&at), Some(Segment::Source { len, .. })) => at + len,
            _ => 0,
        }
    }
}

impl Read for View<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let i = self.starts.partition_point(|&s| s <= self.pos);
        let Some(i) = i.checked_sub(1) else {
            return Ok(0);
        };
        let within = self.pos - self.starts[i];
        let n = match &self.c.segments[i] {
            Segment::Bytes(b) => {
                let rest = b.get(within as usize..).unwrap_or_default();
                let n = rest.len().min(buf.len());
                buf[..n].copy_from_slice(&rest[..n]);
                n
            }
            Segment::Source { offset, len } => {
                let n = usize::try_from(len - within.min(*len))
                    .unwrap_or(usize::MAX)
                    .min(buf.len());
                let at = offset + within;
                match &self.c.source {
                    Source::File(f) => f.read_at(&mut buf[..n], at)?,
                    Source::Memory(m) => {
                        let from = m.get(at as usize..).unwrap_or_default();
                        let n = n.min(from.len());
                        buf[..n].copy_from_slice(&from[..n]);
                        n
                    }
                }
            }
        };
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for View<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let pos = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.len().checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = pos.ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        Ok(self.pos)
    }
}
