//! Decoding perf_event records from bytes: one decoder for live ring-buffer data and perf.data.
//!
//! hrec owns this decoder because the existing crates drop or misplace exactly the fields it
//! exists for (WEIGHT_STRUCT, group reads with LOST; crates.md 4). The rules it follows, all
//! from the kernel writer (`perf_output_sample`, `__perf_event__output_id_sample` in
//! `kernel/events/core.c`) and perf's parser (`evsel__parse_sample`):
//!
//! * **Records.** Each starts with `struct perf_event_header { u32 type; u16 misc; u16 size; }`;
//!   `size` includes the header. [`records`] splits a byte stream by `size` and stops with one
//!   error at a size below 8 or past the end, so corrupt data can never make it loop.
//! * **SAMPLE field order** is the kernel's: IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID,
//!   CPU, PERIOD, READ, CALLCHAIN, RAW, BRANCH_STACK, REGS_USER, STACK_USER, WEIGHT /
//!   WEIGHT_STRUCT, DATA_SRC, TRANSACTION, REGS_INTR, PHYS_ADDR, CGROUP, DATA_PAGE_SIZE,
//!   CODE_PAGE_SIZE, AUX. The uapi comment lists AUX before the page sizes and omits CGROUP;
//!   the code writes CGROUP and the page sizes first, and so does perf's parser.
//! * **Which attr a record belongs to.** Nothing in a record says what its `sample_type` is, so
//!   with several attrs the decoder first needs the event id. `PERF_SAMPLE_IDENTIFIER` exists for
//!   this: it puts the id at a fixed place regardless of the other bits, the first u64 after the
//!   header in a SAMPLE and the last u64 of every other record. Plain `PERF_SAMPLE_ID` sits after
//!   IP/TID/TIME/ADDR, so it is only usable when those bits agree across the attrs. [`Decoder`]
//!   computes each attr's id position and reads the id where all of them agree.
//! * **The sample_id trailer** (`sample_id_all`) ends every non-SAMPLE record with
//!   `{pid, tid} {time} {id} {stream_id} {cpu, res} {identifier}`, each present per
//!   `sample_type`. It is read **backwards from the end**, because the body before it often has
//!   a variable length (file names, comm strings) that is only known once the trailer is
//!   subtracted; the end of the record is the one fixed reference point.
//! * **Weights.** WEIGHT and WEIGHT_STRUCT write the same single u64. With WEIGHT_STRUCT it is
//!   `union perf_sample_weight`: `var1_dw` bits 31:0, `var2_w` (instruction latency) bits 47:32
//!   and `var3_w` bits 63:48, which the x86 PEBS code fills with the **retire latency** (the
//!   hardware reports it at bits 47:32 of the PEBS basic group; the kernel copies it into
//!   `var3_w`). See [`Weight`].
//! * **Read values** come in two layouts (GROUP or not), and a group's `nr` is checked against
//!   the bytes left before any entry is read. See [`ReadValues`].
//! * **Branch stacks**: `nr`, then `hw_idx` when `branch_sample_type` has HW_INDEX (as perf
//!   assumes, even for `nr = 0`), `nr` 24-byte entries, then, with BRANCH_COUNTERS, `nr` u64
//!   counter words (the kernel's `br_stack_cntr`).
//!
//! Every read is bounds-checked through a small cursor; arbitrary bytes give a
//! [`DecodeError`], never a panic. Decoded values borrow from the input: nothing is allocated
//! per record. Extra bytes after the last SAMPLE field are ignored, as perf does.
//!
//! ```
//! use hrec::decode::{Decoder, Record, records};
//! use hrec::event::Attr;
//! use hrec::event::attr::sample;
//!
//! let attr = Attr { sample_type: sample::IP | sample::TID, ..Attr::default() };
//! let decoder = Decoder::new([(7, attr)]);
//! let mut bytes = Vec::new();
//! bytes.extend_from_slice(&9u32.to_le_bytes()); // PERF_RECORD_SAMPLE
//! bytes.extend_from_slice(&2u16.to_le_bytes()); // misc: user
//! bytes.extend_from_slice(&24u16.to_le_bytes()); // size
//! bytes.extend_from_slice(&0x401000u64.to_le_bytes()); // ip
//! bytes.extend_from_slice(&((43u64 << 32) | 42).to_le_bytes()); // pid 42, tid 43
//! for raw in records(&bytes) {
//!     let Record::Sample(s) = decoder.decode(&raw.unwrap()).unwrap() else { panic!() };
//!     assert_eq!((s.ip, s.pid, s.tid), (Some(0x401000), Some(42), Some(43)));
//! }
//! ```

// Bytes from files and ring buffers are untrusted: every read goes through the cursor's
// checked accessors, and the lints keep it that way.
#![cfg_attr(
    not(test),
    deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)
)]

mod cursor;
pub mod datasrc;
mod layout;
mod record;
mod sample;

use std::collections::HashMap;
use std::fmt;

use crate::event::Attr;

pub use layout::{Layout, branch};
pub use record::{
    Aux, BpfEvent, Cgroup, Comm, FileId, Ksymbol, Mmap, Mmap2, Namespaces, Read, Record, SampleId,
    Task, TextPoke, Throttle,
};
pub use sample::{
    BranchEntry, BranchStack, Callchain, ReadEntry, ReadValues, Regs, Sample, StackUser, U64s,
    Weight, context,
};

/// `enum perf_event_type`: the kernel's record types.
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
    pub const AUX: u32 = 11;
    pub const ITRACE_START: u32 = 12;
    pub const LOST_SAMPLES: u32 = 13;
    pub const SWITCH: u32 = 14;
    pub const SWITCH_CPU_WIDE: u32 = 15;
    pub const NAMESPACES: u32 = 16;
    pub const KSYMBOL: u32 = 17;
    pub const BPF_EVENT: u32 = 18;
    pub const CGROUP: u32 = 19;
    pub const TEXT_POKE: u32 = 20;

    /// The `PERF_RECORD_*` name without the prefix, for known kernel types.
    pub fn name(type_: u32) -> Option<&'static str> {
        const NAMES: [&str; 20] = [
            "MMAP",
            "LOST",
            "COMM",
            "EXIT",
            "THROTTLE",
            "UNTHROTTLE",
            "FORK",
            "READ",
            "SAMPLE",
            "MMAP2",
            "AUX",
            "ITRACE_START",
            "LOST_SAMPLES",
            "SWITCH",
            "SWITCH_CPU_WIDE",
            "NAMESPACES",
            "KSYMBOL",
            "BPF_EVENT",
            "CGROUP",
            "TEXT_POKE",
        ];
        let i = usize::try_from(type_.checked_sub(1)?).ok()?;
        NAMES.get(i).copied()
    }
}

/// `header.misc` bits.
pub mod misc {
    /// `PERF_RECORD_MISC_CPUMODE_MASK`.
    pub const CPUMODE_MASK: u16 = 7;
    /// cpumode: unknown.
    pub const CPUMODE_UNKNOWN: u16 = 0;
    /// cpumode: kernel.
    pub const KERNEL: u16 = 1;
    /// cpumode: user.
    pub const USER: u16 = 2;
    /// cpumode: hypervisor.
    pub const HYPERVISOR: u16 = 3;
    /// cpumode: guest kernel.
    pub const GUEST_KERNEL: u16 = 4;
    /// cpumode: guest user.
    pub const GUEST_USER: u16 = 5;
    /// MMAP/MMAP2: a data (non-executable) mapping.
    pub const MMAP_DATA: u16 = 1 << 13;
    /// COMM: the name changed because of exec.
    pub const COMM_EXEC: u16 = 1 << 13;
    /// SWITCH/SWITCH_CPU_WIDE: switching out.
    pub const SWITCH_OUT: u16 = 1 << 13;
    /// SAMPLE: the IP is exact (precise event).
    pub const EXACT_IP: u16 = 1 << 14;
    /// SWITCH/SWITCH_CPU_WIDE: switched out by preemption.
    pub const SWITCH_OUT_PREEMPT: u16 = 1 << 14;
    /// MMAP2: the record carries a build id instead of maj/min/ino.
    pub const MMAP_BUILD_ID: u16 = 1 << 14;
}

/// `struct perf_event_header`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecordHeader {
    /// `PERF_RECORD_*` (see [`kind`]).
    pub type_: u32,
    /// See [`misc`].
    pub misc: u16,
    /// Size of the whole record, header included.
    pub size: u16,
}

impl RecordHeader {
    /// The header at the start of `b`, if there are 8 bytes.
    pub fn parse(b: &[u8]) -> Option<RecordHeader> {
        let v = cursor::u64_at(b, 0)?;
        Some(RecordHeader {
            type_: v as u32,
            misc: (v >> 32) as u16,
            size: (v >> 48) as u16,
        })
    }

    /// The header in the kernel's byte layout.
    pub fn to_bytes(&self) -> [u8; 8] {
        let v = u64::from(self.type_) | (u64::from(self.misc) << 32) | (u64::from(self.size) << 48);
        v.to_le_bytes()
    }
}

/// A record type for messages: its name, or `type N` when unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordKind(pub u32);

impl fmt::Display for RecordKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match kind::name(self.0) {
            Some(n) => f.write_str(n),
            None => write!(f, "type {}", self.0),
        }
    }
}

/// One undecoded record: its header and all of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRecord<'a> {
    /// The header.
    pub header: RecordHeader,
    /// The whole record, header included (`header.size` bytes).
    pub bytes: &'a [u8],
    /// Offset of the record in the stream it came from (for error messages).
    pub offset: usize,
}

impl<'a> RawRecord<'a> {
    /// The one record in `bytes` (`header.size` must equal its length), at stream `offset`.
    pub fn new(bytes: &'a [u8], offset: usize) -> Result<Self, DecodeError> {
        let mut it = Records {
            bytes,
            pos: 0,
            done: false,
        };
        let mut r = it.next().ok_or(DecodeError::ShortHeader {
            offset,
            available: 0,
        })?;
        if let Ok(raw) = &mut r {
            raw.offset = offset;
            if raw.bytes.len() != bytes.len() {
                return Err(DecodeError::SizeMismatch {
                    kind: RecordKind(raw.header.type_),
                    offset,
                    size: raw.header.size,
                    len: bytes.len(),
                });
            }
        }
        r.map_err(|e| e.at(offset))
    }
}

/// Splits a concatenation of records by their header sizes.
pub fn records(bytes: &[u8]) -> Records<'_> {
    Records {
        bytes,
        pos: 0,
        done: false,
    }
}

/// Iterator returned by [`records`]. After the first error it yields nothing more.
#[derive(Debug, Clone)]
pub struct Records<'a> {
    bytes: &'a [u8],
    pos: usize,
    done: bool,
}

impl<'a> Records<'a> {
    /// Offset of the next record.
    pub fn offset(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<RawRecord<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.bytes.len() {
            return None;
        }
        let offset = self.pos;
        let rest = self.bytes.get(offset..).unwrap_or_default();
        let fail = |s: &mut Self, e| {
            s.done = true;
            Some(Err(e))
        };
        let Some(header) = RecordHeader::parse(rest) else {
            return fail(
                self,
                DecodeError::ShortHeader {
                    offset,
                    available: rest.len(),
                },
            );
        };
        let size = usize::from(header.size);
        if size < 8 {
            return fail(
                self,
                DecodeError::SizeBelowHeader {
                    kind: RecordKind(header.type_),
                    offset,
                    size: header.size,
                },
            );
        }
        if size > rest.len() {
            return fail(
                self,
                DecodeError::PastEnd {
                    kind: RecordKind(header.type_),
                    offset,
                    size: header.size,
                    available: rest.len(),
                },
            );
        }
        self.pos += size;
        Some(Ok(RawRecord {
            header,
            bytes: rest.get(..size).unwrap_or(rest),
            offset,
        }))
    }
}

/// Why bytes could not be decoded. Each message names the record type, its offset in the
/// stream and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Fewer than 8 bytes left for a header.
    #[error("record at offset {offset}: only {available} bytes left, a record header needs 8")]
    ShortHeader {
        /// Stream offset.
        offset: usize,
        /// Bytes left.
        available: usize,
    },
    /// `header.size` below the header itself.
    #[error("{kind} record at offset {offset}: size {size} is smaller than its 8-byte header")]
    SizeBelowHeader {
        /// Record type.
        kind: RecordKind,
        /// Stream offset.
        offset: usize,
        /// `header.size`.
        size: u16,
    },
    /// `header.size` runs past the end of the data.
    #[error(
        "{kind} record at offset {offset}: size {size} runs past the end ({available} bytes left)"
    )]
    PastEnd {
        /// Record type.
        kind: RecordKind,
        /// Stream offset.
        offset: usize,
        /// `header.size`.
        size: u16,
        /// Bytes left from the record's start.
        available: usize,
    },
    /// `header.size` disagrees with the slice given to [`RawRecord::new`].
    #[error("{kind} record at offset {offset}: size {size} but {len} bytes given")]
    SizeMismatch {
        /// Record type.
        kind: RecordKind,
        /// Stream offset.
        offset: usize,
        /// `header.size`.
        size: u16,
        /// Bytes given.
        len: usize,
    },
    /// The record ends before a field its layout requires.
    #[error(
        "{kind} record at offset {offset} too short for its {what} ({field}): needs {needs} bytes, has {has}"
    )]
    Truncated {
        /// Record type.
        kind: RecordKind,
        /// Stream offset.
        offset: usize,
        /// Which part: "sample_type", "body", "sample_id trailer", "event id".
        what: &'static str,
        /// The field being read.
        field: &'static str,
        /// Record bytes needed up to the end of that field.
        needs: usize,
        /// Record bytes available to that part.
        has: usize,
    },
    /// The record's event id belongs to none of the decoder's attrs.
    #[error("{kind} record at offset {offset}: event id {id} matches no attr")]
    UnknownId {
        /// Record type.
        kind: RecordKind,
        /// Stream offset.
        offset: usize,
        /// The id read from the record.
        id: u64,
    },
    /// A SAMPLE was given to a decoder without attrs.
    #[error("{kind} record at offset {offset}: the decoder has no attrs to take a layout from")]
    NoAttrs {
        /// Record type.
        kind: RecordKind,
        /// Stream offset.
        offset: usize,
    },
}

impl DecodeError {
    /// The same error with its stream offset replaced.
    fn at(self, new: usize) -> Self {
        let mut e = self;
        match &mut e {
            DecodeError::ShortHeader { offset, .. }
            | DecodeError::SizeBelowHeader { offset, .. }
            | DecodeError::PastEnd { offset, .. }
            | DecodeError::SizeMismatch { offset, .. }
            | DecodeError::Truncated { offset, .. }
            | DecodeError::UnknownId { offset, .. }
            | DecodeError::NoAttrs { offset, .. } => *offset = new,
        }
        e
    }
}

/// Which attr a record belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Located {
    /// Index into [`Decoder::attrs`].
    pub index: usize,
    /// The event id read from the record, when the attrs put it at a common place.
    pub id: Option<u64>,
}

/// Decodes records of a recording with one or more attrs.
///
/// How a record's attr is found:
///
/// 1. With a single distinct attr, that one (the id is still read when its place is known).
/// 2. Otherwise, when every attr puts the event id at the same place (always so when they all
///    have IDENTIFIER; with plain ID when the bits before it agree, e.g. all share one
///    sample_type), the id is read there and looked up. For non-SAMPLE records this needs
///    `sample_id_all` on every attr. Id 0 (synthesized records) maps to the first attr; any
///    other unknown id is [`DecodeError::UnknownId`].
/// 3. Otherwise the first attr, as perf does when it cannot tell.
#[derive(Debug, Clone)]
pub struct Decoder {
    attrs: Vec<Attr>,
    layouts: Vec<Layout>,
    ids: HashMap<u64, usize>,
    sample_id_at: Option<usize>,
    trailer_id_from_end: Option<usize>,
}

impl Decoder {
    /// A decoder for these `(id, attr)` pairs; equal attrs (several ids of one event, e.g. one
    /// per CPU) share one index.
    pub fn new(events: impl IntoIterator<Item = (u64, Attr)>) -> Decoder {
        let mut attrs: Vec<Attr> = Vec::new();
        let mut ids = HashMap::new();
        for (id, attr) in events {
            let index = attrs.iter().position(|a| *a == attr).unwrap_or_else(|| {
                attrs.push(attr);
                attrs.len() - 1
            });
            ids.entry(id).or_insert(index);
        }
        let layouts: Vec<Layout> = attrs.iter().map(Layout::from_attr).collect();
        let common = |f: fn(&Layout) -> Option<usize>| {
            let first = f(layouts.first()?)?;
            layouts.iter().all(|l| f(l) == Some(first)).then_some(first)
        };
        let sample_id_at = common(Layout::sample_id_offset);
        let trailer_id_from_end = common(Layout::trailer_id_from_end);
        Decoder {
            attrs,
            layouts,
            ids,
            sample_id_at,
            trailer_id_from_end,
        }
    }

    /// The distinct attrs, in first-seen order.
    pub fn attrs(&self) -> &[Attr] {
        &self.attrs
    }

    /// The layout of attr `index`.
    pub fn layout(&self, index: usize) -> Option<&Layout> {
        self.layouts.get(index)
    }

    /// The attr index of an event id.
    pub fn index_of(&self, id: u64) -> Option<usize> {
        self.ids.get(&id).copied()
    }

    /// Finds the attr `raw` belongs to (see the type's docs for the rules).
    pub fn locate(&self, raw: &RawRecord<'_>) -> Result<Located, DecodeError> {
        let h = raw.header;
        let err_kind = RecordKind(h.type_);
        if self.attrs.is_empty() {
            return Err(DecodeError::NoAttrs {
                kind: err_kind,
                offset: raw.offset,
            });
        }
        let at = if h.type_ == kind::SAMPLE {
            self.sample_id_at
        } else {
            self.trailer_id_from_end
                .and_then(|back| raw.bytes.len().checked_sub(back).filter(|&a| a >= 8))
        };
        let id = match at {
            Some(at) => Some(cursor::u64_at(raw.bytes, at).ok_or(DecodeError::Truncated {
                kind: err_kind,
                offset: raw.offset,
                what: "event id",
                field: "IDENTIFIER/ID",
                needs: at + 8,
                has: raw.bytes.len(),
            })?),
            None if h.type_ != kind::SAMPLE && self.trailer_id_from_end.is_some() => {
                return Err(DecodeError::Truncated {
                    kind: err_kind,
                    offset: raw.offset,
                    what: "event id",
                    field: "IDENTIFIER/ID",
                    needs: 8 + self.trailer_id_from_end.unwrap_or(0),
                    has: raw.bytes.len(),
                });
            }
            None => None,
        };
        let index = match id {
            Some(id) => match self.ids.get(&id) {
                Some(&i) => i,
                None if id == 0 || self.attrs.len() == 1 => 0,
                None => {
                    return Err(DecodeError::UnknownId {
                        kind: err_kind,
                        offset: raw.offset,
                        id,
                    });
                }
            },
            None => 0,
        };
        Ok(Located { index, id })
    }

    /// The time of a record, read at its fixed position without decoding the rest: the TIME
    /// field of a SAMPLE, else the sample_id trailer's TIME (FORK and EXIT: their own time
    /// when they have no trailer time). `None` when the record has none.
    pub fn time(&self, raw: &RawRecord<'_>) -> Option<u64> {
        let t = raw.header.type_;
        if !(kind::MMAP..=kind::TEXT_POKE).contains(&t) {
            return None;
        }
        // FORK and EXIT carry a time of their own (pid, ppid, tid, ptid as u32s, then time),
        // taken before the sample id's; perf orders them by the sample id's time, as every
        // other record (the two can straddle another CPU's record), and by their own only
        // without one.
        let own = || {
            (t == kind::FORK || t == kind::EXIT)
                .then(|| cursor::u64_at(raw.bytes, 8 + 16))
                .flatten()
        };
        let Some(layout) = self
            .locate(raw)
            .ok()
            .and_then(|l| self.layouts.get(l.index))
        else {
            return own();
        };
        let at = if t == kind::SAMPLE {
            layout.sample_time_offset()
        } else {
            layout
                .trailer_time_from_end()
                .and_then(|back| raw.bytes.len().checked_sub(back))
                .filter(|&a| a >= 8)
        };
        at.and_then(|at| cursor::u64_at(raw.bytes, at)).or_else(own)
    }

    /// Decodes one record with the layout of the attr it belongs to. Types the decoder does not
    /// know (including perf's user records, >= 64) come back as [`Record::Unknown`] without
    /// looking for an attr.
    pub fn decode<'a>(&self, raw: &RawRecord<'a>) -> Result<Record<'a>, DecodeError> {
        // Not through `decode_located`: a record is hundreds of bytes, and every wrapping
        // of it is a copy (this is per record).
        if !(kind::MMAP..=kind::TEXT_POKE).contains(&raw.header.type_) {
            return Ok(Record::Unknown { header: raw.header });
        }
        let loc = self.locate(raw)?;
        Record::parse(raw, self.layout_of(raw, &loc)?)
    }

    /// The layout of a located record (the index comes from this decoder, so it exists).
    fn layout_of(&self, raw: &RawRecord<'_>, loc: &Located) -> Result<&Layout, DecodeError> {
        self.layouts.get(loc.index).ok_or(DecodeError::NoAttrs {
            kind: RecordKind(raw.header.type_),
            offset: raw.offset,
        })
    }

    /// [`Decoder::decode`], also saying which attr the record belongs to (`None` for records
    /// decoded without one: unknown types).
    pub fn decode_located<'a>(
        &self,
        raw: &RawRecord<'a>,
    ) -> Result<(Option<Located>, Record<'a>), DecodeError> {
        let t = raw.header.type_;
        if !(kind::MMAP..=kind::TEXT_POKE).contains(&t) {
            return Ok((None, Record::Unknown { header: raw.header }));
        }
        let loc = self.locate(raw)?;
        let layout = self.layout_of(raw, &loc)?;
        Record::parse(raw, layout).map(|r| (Some(loc), r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::attr::{flag, sample};

    fn rec(type_: u32, misc: u16, body: &[u64]) -> Vec<u8> {
        let size = 8 + 8 * body.len() as u16;
        let mut b = RecordHeader { type_, misc, size }.to_bytes().to_vec();
        for v in body {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b
    }

    #[test]
    fn header_round_trip() {
        let h = RecordHeader {
            type_: 10,
            misc: 0x4002,
            size: 112,
        };
        assert_eq!(RecordHeader::parse(&h.to_bytes()), Some(h));
        assert_eq!(RecordHeader::parse(&[0; 7]), None);
    }

    #[test]
    fn kind_names() {
        assert_eq!(kind::name(kind::SAMPLE), Some("SAMPLE"));
        assert_eq!(kind::name(kind::TEXT_POKE), Some("TEXT_POKE"));
        assert_eq!(kind::name(0), None);
        assert_eq!(kind::name(21), None);
        assert_eq!(RecordKind(68).to_string(), "type 68");
    }

    #[test]
    fn records_stop_after_an_error() {
        let mut b = rec(kind::LOST, 0, &[1, 2]);
        b.extend_from_slice(&rec(kind::SWITCH, 0, &[])[..6]);
        let mut it = records(&b);
        assert_eq!(it.next().unwrap().unwrap().header.type_, kind::LOST);
        assert_eq!(
            it.next(),
            Some(Err(DecodeError::ShortHeader {
                offset: 24,
                available: 6
            }))
        );
        assert_eq!(it.next(), None);

        let zero = [0u8; 16];
        let v: Vec<_> = records(&zero).collect();
        assert_eq!(v.len(), 1);
        assert_eq!(
            v[0].as_ref().unwrap_err().to_string(),
            "type 0 record at offset 0: size 0 is smaller than its 8-byte header"
        );
    }

    #[test]
    fn raw_record_new_checks_size() {
        let b = rec(kind::LOST, 0, &[1, 2]);
        assert_eq!(RawRecord::new(&b, 40).unwrap().offset, 40);
        let mut longer = b.clone();
        longer.extend_from_slice(&[0; 8]);
        assert!(matches!(
            RawRecord::new(&longer, 0),
            Err(DecodeError::SizeMismatch { .. })
        ));
        assert!(matches!(
            RawRecord::new(&b[..20], 3),
            Err(DecodeError::PastEnd { offset: 3, .. })
        ));
    }

    #[test]
    fn locate_by_identifier_and_unknown_ids() {
        let mut a = Attr {
            sample_type: sample::IDENTIFIER | sample::IP,
            ..Attr::default()
        };
        a.set(flag::SAMPLE_ID_ALL, true);
        let mut b = a;
        b.sample_type |= sample::TIME;
        let d = Decoder::new([(1, a), (2, b), (3, a)]);
        assert_eq!(d.attrs().len(), 2);
        let s = rec(kind::SAMPLE, 0, &[2, 0x10, 99]);
        let raw = RawRecord::new(&s, 0).unwrap();
        assert_eq!(
            d.locate(&raw).unwrap(),
            Located {
                index: 1,
                id: Some(2)
            }
        );
        let lost = rec(kind::LOST, 0, &[3, 5, 3]);
        let raw = RawRecord::new(&lost, 0).unwrap();
        assert_eq!(d.locate(&raw).unwrap().index, 0);
        let bad = rec(kind::LOST, 0, &[3, 5, 9]);
        let e = d.decode(&RawRecord::new(&bad, 16).unwrap()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "LOST record at offset 16: event id 9 matches no attr"
        );
        let user = rec(68, 0, &[]);
        assert_eq!(
            d.decode(&RawRecord::new(&user, 0).unwrap()).unwrap(),
            Record::Unknown {
                header: RecordHeader {
                    type_: 68,
                    misc: 0,
                    size: 8
                }
            }
        );
    }

    #[test]
    fn no_common_id_place_falls_back_to_the_first_attr() {
        let a = Attr {
            sample_type: sample::IP | sample::ID,
            ..Attr::default()
        };
        let b = Attr {
            sample_type: sample::ID,
            ..a
        };
        let d = Decoder::new([(1, a), (2, b)]);
        let s = rec(kind::SAMPLE, 0, &[0x10, 2]);
        let loc = d.locate(&RawRecord::new(&s, 0).unwrap()).unwrap();
        assert_eq!(loc, Located { index: 0, id: None });
    }
}
