//! The kernel records of a checked, uncompressed data section, collected into record blocks
//! and counted as an hrec trailer counts them, taken straight from the checked bytes
//! (`perf record -z` data is streamed by [`super::compressed`]).

use std::collections::HashMap;

use super::layout::{u16_at, u32_at, u64_at};
use crate::data::{Meta, Trailer};
use crate::decode::{Decoder, RawRecord, kind};

/// Records of at most this many bytes go into one copied block.
pub(super) const BLOCK_BYTES: usize = 16 << 20;
/// A data section up to this size is kept as one block as it is (record offsets in a block are
/// u32).
pub(super) const BLOCK_BYTES_IN_PLACE: usize = 1 << 31;

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
    /// Per event with a group `read_format`: its first sample's group read was looked at.
    pub(super) read_seen: Vec<bool>,
    /// The events of each group read met (leader first, as the kernel lists them): where a
    /// file has no GROUP_DESC (older perf, `perf inject`), its groups.
    pub(super) group_reads: Vec<Vec<usize>>,
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
                // Events without a group read_format have nothing to look at.
                read_seen: meta
                    .events
                    .iter()
                    .map(|e| e.attr.read_format & crate::event::attr::read::GROUP == 0)
                    .collect(),
                group_reads: Vec::new(),
            },
        }
    }

    /// Counts one kernel record without keeping it.
    pub(super) fn count(&mut self, rec: &[u8]) {
        self.counter.count(rec);
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
                if let Some(seen) = ev.and_then(|e| self.read_seen.get_mut(e))
                    && !*seen
                {
                    *seen = true;
                    let group = RawRecord::new(bytes, 0)
                        .ok()
                        .and_then(|r| self.decoder.decode(&r).ok());
                    if let Some(crate::decode::Record::Sample(s)) = group
                        && let Some(read) = &s.read
                    {
                        let events: Option<Vec<usize>> = read
                            .iter()
                            .map(|e| e.id.and_then(|id| self.id_event.get(&id).copied()))
                            .collect();
                        if let Some(events) = events.filter(|v| v.len() > 1)
                            && !self.group_reads.contains(&events)
                        {
                            self.group_reads.push(events);
                        }
                    }
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
/// was checked by [`walk_records`](super::prepare::walk_records), and hrec orders records by time itself, so a
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
        let aux = super::layout::trailing_len(t, b.get(pos..).unwrap_or_default())
            .and_then(|a| usize::try_from(a).ok());
        let Some(next) = aux.and_then(|a| pos.checked_add(size)?.checked_add(a)) else {
            break;
        };
        let Some(rec) = b.get(pos..pos + size).filter(|_| size >= 8 && next <= end) else {
            break;
        };
        if t < 64 {
            if copy {
                sink.push_raw(rec);
            } else {
                sink.counter.count(rec);
            }
        }
        pos = next;
    }
}
