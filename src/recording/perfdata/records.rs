//! The kernel records of a checked data section, collected into record blocks and counted as
//! an hrec trailer counts them. Uncompressed data is taken straight from the checked bytes;
//! `perf record -z` data goes through linux-perf-data, which reads a rebuilt copy holding only
//! what passed the checks, behind `catch_unwind` as a last resort.

use std::collections::HashMap;
use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};

use linux_perf_data::linux_perf_event_reader::RawData;
use linux_perf_data::{PerfFileReader, PerfFileRecord};

use super::layout::{feature, u16_at, u32_at, u64_at, user};
use super::prepare::Prepared;
use crate::data::{Meta, Trailer};
use crate::decode::{Decoder, RawRecord, kind};

/// Records of at most this many bytes go into one copied block.
pub(super) const BLOCK_BYTES: usize = 16 << 20;
/// A data section up to this size is kept as one block as it is (record offsets in a block are
/// u32).
pub(super) const BLOCK_BYTES_IN_PLACE: usize = 1 << 31;

/// The bytes the crate reads for compressed data, built from what passed the checks. File
/// mode: everything up to the end of the whole records, the data size set to theirs, then a
/// feature table with EVENT_DESC alone (when it passed; the crate prefers it over the attr
/// section) and no other feature. Pipe mode: the stream without the records that failed.
pub(super) fn crate_copy(p: &Prepared, b: &[u8], pipe: bool) -> Vec<u8> {
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

/// Kernel records collected into blocks, counted as an hrec trailer counts them.
pub(super) struct Sink {
    pub(super) blocks: Vec<Vec<u8>>,
    pub(super) block: Vec<u8>,
    pub(super) counter: Counter,
}

/// The counts of an hrec trailer, taken from raw records, and where the kernel image was.
pub(super) struct Counter {
    pub(super) t: Trailer,
    pub(super) decoder: Decoder,
    pub(super) id_event: HashMap<u64, usize>,
    pub(super) recorded_text: Option<u64>,
}

impl Sink {
    pub(super) fn new(meta: &Meta) -> Sink {
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

    /// Counts one kernel record without keeping it.
    pub(super) fn count(&mut self, rec: &[u8]) {
        self.counter.count(rec);
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

    pub(super) fn finish(mut self) -> (Vec<Vec<u8>>, Trailer, Option<u64>) {
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
/// was checked by [`walk_records`](super::prepare::walk_records), and hrec orders records by time itself, so the crate's
/// per-record path (a buffer per record, the round sorter) would only add time. With `copy`
/// false they are only counted (the caller keeps the data section itself as the block).
pub(super) fn records_direct(b: &[u8], (start, end): (usize, usize), sink: &mut Sink, copy: bool) {
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
pub(super) fn records_via_crate(buf: &[u8], pipe: bool, sink: &mut Sink) -> Option<String> {
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
