//! `perf record -z` data, inflated as it is walked, in bounded memory, by hrec itself.
//!
//! The domain rules:
//!
//! * **One zstd stream across the records.** perf compresses what it copies out of the ring
//!   buffers into `PERF_RECORD_COMPRESSED` records (type 81; `COMPRESSED2`, type 83, adds a
//!   `data_size` after the header and pads the record to 8 bytes) with one zstd stream for the
//!   whole recording, flushed at the end of every copy, so one COMPRESSED record's bytes
//!   continue the previous one's and a record inside the stream may start in one COMPRESSED
//!   record and end in a later one: the partial record is carried over. Between them, in
//!   the data section itself, perf writes uncompressed records: FINISHED_ROUND after each pass
//!   over the buffers, the synthesized MMAP/COMM records of the start, and in pipe mode the
//!   attrs and features. A damaged stream cannot be resumed (zstd has no resync point inside a
//!   frame), so the first error ends the walk; the records before it are kept.
//! * **Bounded inflation.** perf inflates each COMPRESSED record into a buffer of `mmap_len`
//!   bytes, the size of one ring buffer, which the `HEADER_COMPRESSED` feature records
//!   (`u32` version, type, level, ratio, mmap_len): what one copy out of a ring buffer
//!   compressed cannot inflate to more. hrec inflates into a window of [`WINDOW`] bytes that
//!   is handed on, record by record, as it fills, and refuses a COMPRESSED record that
//!   inflates past `max(mmap_len, 1 MiB)` (at most 64 MiB, [`cap_of`]): 64 KiB of zstd can
//!   claim 2 GiB of output, and several such records would exhaust any machine. A record
//!   inside the stream whose size the stream's end does not back, or whose size is below its
//!   header's 8 bytes, is damage too. Each is one line with the file offset of the
//!   COMPRESSED record and how many COMPRESSED records were not read.
//! * **Records in perf's order.** Blocks hand on the kernel records and perf's FINISHED_ROUND
//!   markers in file order; [`crate::recording::order`] orders them by time with perf's round
//!   rule, as it does uncompressed data.
//! * **Never held whole.** The file is read a megabyte at a time, the stream inflates into
//!   one window, and a block of about [`BLOCK_BYTES`] is handed on at a time. The records are
//!   walked once when the file is opened (to count them) and again on every walk; each walk
//!   stops after the records the first one read, so damage found at open is reported once, as
//!   the file's truncation, and only a file that changed after it was opened makes a walk
//!   report an error.

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::sync::{Arc, Mutex};

use zstd::stream::raw::{Decoder, Operation as _};

use super::layout::{feature, u16_at, u32_at, u64_at, user};
use super::prepare::Prepared;

/// The inflated bytes held at once: the stream inflates into this window, whole records leave
/// it as it fills, and a partial one (at most 64 KiB) waits there for the rest.
const WINDOW: usize = 1 << 20;
/// Bytes of records per block handed on (a block may pass it by its last record).
const BLOCK_BYTES: usize = 1 << 20;
/// Bytes of the file read at a time.
const READ_BYTES: usize = 1 << 20;
/// The least and the most one COMPRESSED record may inflate to, whatever `mmap_len` says.
const CAP_MIN: u64 = 1 << 20;
const CAP_MAX: u64 = 64 << 20;

/// How much one COMPRESSED record may inflate to: perf's own buffer for it, `mmap_len` from
/// `HEADER_COMPRESSED` (offset 16 of the section), at least 1 MiB and at most 64 MiB.
pub(super) fn cap_of(mmap_len: Option<u32>) -> u64 {
    mmap_len.map_or(CAP_MIN, u64::from).clamp(CAP_MIN, CAP_MAX)
}

/// Where the records' bytes come from.
#[derive(Debug)]
pub(super) enum Source {
    /// The file (read with `pread`).
    File(File),
    /// The file's bytes, already in memory.
    Memory(Arc<[u8]>),
}

/// The compressed records of a perf.data, ready to be walked.
#[derive(Debug)]
pub struct Compressed {
    source: Source,
    /// The file offsets of the first record and past the last whole one.
    start: u64,
    end: u64,
    /// `mmap_len` of `HEADER_COMPRESSED`, when the file has it.
    mmap_len: Option<u32>,
    /// What one COMPRESSED record may inflate to.
    cap: u64,
    /// COMPRESSED records in the file (for the line saying how many were not read).
    total: u64,
    /// Kernel records the walk at open read; later walks stop there.
    limit: Option<u64>,
    blocks: usize,
    error: Mutex<Option<String>>,
}

impl Compressed {
    /// The compressed records of a checked file (`p`).
    pub(super) fn new(source: Source, p: &Prepared) -> Compressed {
        let mmap_len = p
            .features
            .get(&feature::COMPRESSED)
            .and_then(|d| u32_at(d, 16));
        let total = [user::COMPRESSED, user::COMPRESSED2]
            .iter()
            .filter_map(|t| p.user_records.get(t))
            .sum();
        Compressed {
            source,
            start: p.records.0 as u64,
            end: p.records.1 as u64,
            mmap_len,
            cap: cap_of(mmap_len),
            total,
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
            // The blocks hold whole records, checked as they were cut; the round markers are
            // not counted.
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

    /// The records, a block at a time, in file order: whole kernel records and perf's
    /// FINISHED_ROUND markers (see the module docs).
    pub fn blocks(&self) -> Blocks<'_> {
        Blocks {
            c: self,
            outer: Outer {
                source: &self.source,
                buf: Vec::new(),
                buf_at: 0,
                pos: self.start,
                end: self.end,
            },
            decoder: None,
            input: Vec::new(),
            in_pos: 0,
            current: None,
            seen: 0,
            last_at: 0,
            window: Vec::new(),
            filled: 0,
            records: 0,
            done: false,
        }
    }

    fn fail(&self, why: String) {
        *self.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
    }
}

/// The records of the data section itself, read from the source as they are walked.
struct Outer<'a> {
    source: &'a Source,
    /// File bytes from `buf_at` (file mode).
    buf: Vec<u8>,
    buf_at: u64,
    pos: u64,
    end: u64,
}

/// A record of the data section: its file offset and type, and its bytes when they are
/// needed (kernel records, FINISHED_ROUND, COMPRESSED).
struct OuterRecord<'b> {
    at: u64,
    type_: u32,
    bytes: Option<&'b [u8]>,
}

impl Outer<'_> {
    /// `len` bytes of the file from `at`, which must lie before the end of the records.
    fn get(&mut self, at: u64, len: usize) -> Result<&[u8], String> {
        let short = || {
            format!(
                "the records end at offset {at} (the file changed after it was opened?); the records after it are lost"
            )
        };
        let past = at.checked_add(len as u64).filter(|&e| e <= self.end);
        let Some(past) = past else {
            return Err(short());
        };
        match self.source {
            Source::Memory(m) => m.get(at as usize..past as usize).ok_or_else(short),
            Source::File(f) => {
                let held = self.buf_at + self.buf.len() as u64;
                if at < self.buf_at || past > held {
                    let n = usize::try_from(self.end - at)
                        .map_or(READ_BYTES, |n| n.min(READ_BYTES.max(len)));
                    if self.buf.len() != n {
                        self.buf = vec![0; n];
                    }
                    self.buf_at = at;
                    if let Err(e) = f.read_exact_at(&mut self.buf, at) {
                        self.buf.clear();
                        return Err(format!(
                            "cannot read the records at offset {at}: {e}; the records after it are lost"
                        ));
                    }
                }
                let from = (at - self.buf_at) as usize;
                self.buf
                    .get(from..from + len)
                    .ok_or_else(|| format!("cannot read the records at offset {at}: short read"))
            }
        }
    }

    /// The next record, `None` after the last.
    fn next(&mut self) -> Result<Option<OuterRecord<'_>>, String> {
        let at = self.pos;
        if at >= self.end {
            return Ok(None);
        }
        let head = self.get(at, 8)?;
        let (type_, size) = (
            u32_at(head, 0).unwrap_or(0),
            usize::from(u16_at(head, 6).unwrap_or(0)),
        );
        if size < 8 {
            return Err(format!("the record at offset {at} has size {size}"));
        }
        let mut total = size as u64;
        if super::layout::has_trailing(type_) {
            let aux =
                super::layout::trailing_len(type_, self.get(at, size.max(16))?).unwrap_or(u64::MAX);
            total = total.saturating_add(aux);
        }
        if at.checked_add(total).is_none_or(|e| e > self.end) {
            return Err(format!(
                "the record at offset {at} is cut short ({} of {total} bytes)",
                self.end - at
            ));
        }
        self.pos = at + total;
        let wanted = type_ < 64
            || matches!(
                type_,
                user::FINISHED_ROUND | user::COMPRESSED | user::COMPRESSED2
            );
        let bytes = if wanted {
            Some(self.get(at, size)?)
        } else {
            None
        };
        Ok(Some(OuterRecord { at, type_, bytes }))
    }
}

/// The COMPRESSED record being inflated.
#[derive(Debug, Clone, Copy)]
struct Inflating {
    at: u64,
    /// Bytes it has inflated to so far.
    out: u64,
}

/// Iterator of [`Compressed::blocks`].
pub struct Blocks<'a> {
    c: &'a Compressed,
    outer: Outer<'a>,
    /// The stream's state, made at the first COMPRESSED record.
    decoder: Option<Decoder<'static>>,
    /// The compressed bytes of the current COMPRESSED record, `in_pos` of them consumed.
    input: Vec<u8>,
    in_pos: usize,
    current: Option<Inflating>,
    /// COMPRESSED records met so far, the current one included, and the last one's offset.
    seen: u64,
    last_at: u64,
    /// Inflated bytes not yet handed on (at most a partial record between steps).
    window: Vec<u8>,
    filled: usize,
    /// Kernel records handed on.
    records: u64,
    done: bool,
}

impl std::fmt::Debug for Blocks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blocks")
            .field("records", &self.records)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// How a walk stops.
enum Stop {
    /// At the end of the records, or where the walk at open stopped.
    End,
    /// At damage (the reason, without what is kept).
    Damaged(String),
}

impl Blocks<'_> {
    /// The line for damage in the stream at the current COMPRESSED record.
    fn damaged(&self, what: String) -> Stop {
        let later = match self.c.total.saturating_sub(self.seen) {
            0 => String::new(),
            1 => " and the 1 COMPRESSED record after it".into(),
            n => format!(" and the {n} COMPRESSED records after it"),
        };
        Stop::Damaged(format!(
            "{what}; the records before it are read, not it{later}"
        ))
    }

    /// Moves the whole records of the window into `block`.
    fn take_records(&mut self, block: &mut Vec<u8>) -> Result<(), Stop> {
        let mut at = 0;
        while self.filled - at >= 8 {
            let Some(w) = self.window.get(at..self.filled) else {
                break;
            };
            let size = usize::from(u16_at(w, 6).unwrap_or(0));
            if size < 8 {
                let c = self.last_at;
                return Err(self.damaged(format!(
                    "a record inflated from the COMPRESSED record at offset {c} has size {size}: the stream is damaged"
                )));
            }
            if size > w.len() {
                break;
            }
            let type_ = u32_at(w, 0).unwrap_or(0);
            if type_ < 64 || type_ == user::FINISHED_ROUND {
                if type_ < 64 && self.c.limit.is_some_and(|l| self.records >= l) {
                    return Err(Stop::End);
                }
                block.extend_from_slice(w.get(..size).unwrap_or_default());
                if type_ < 64 {
                    self.records += 1;
                }
            }
            at += size;
        }
        self.window.copy_within(at..self.filled, 0);
        self.filled -= at;
        Ok(())
    }

    /// One step of inflating the current COMPRESSED record into the window; `true` when its
    /// bytes are used up and nothing more comes out of them.
    fn inflate(&mut self, block: &mut Vec<u8>) -> Result<bool, Stop> {
        let Some(mut cur) = self.current else {
            return Ok(true);
        };
        if self.window.len() < WINDOW {
            self.window = vec![0; WINDOW];
        }
        if self.decoder.is_none() {
            let d = Decoder::new().map_err(|e| self.damaged(format!("zstd cannot start: {e}")))?;
            self.decoder = Some(d);
        }
        let space = WINDOW - self.filled;
        let status = match self.decoder.as_mut() {
            Some(d) => match (
                self.input.get(self.in_pos..),
                self.window.get_mut(self.filled..),
            ) {
                (Some(input), Some(output)) => d.run_on_buffers(input, output),
                _ => return Ok(true),
            },
            None => return Ok(true),
        };
        let status = status.map_err(|e| {
            self.damaged(format!(
                "the COMPRESSED record at offset {} does not decompress ({e})",
                cur.at
            ))
        })?;
        self.in_pos += status.bytes_read;
        self.filled += status.bytes_written;
        cur.out += status.bytes_written as u64;
        self.current = Some(cur);
        if cur.out > self.c.cap {
            let mmap_len = match self.c.mmap_len {
                Some(n) => format!("perf's buffer for one is mmap_len, {n} bytes"),
                None => "the file has no HEADER_COMPRESSED mmap_len".into(),
            };
            return Err(self.damaged(format!(
                "the COMPRESSED record at offset {} inflates past {} bytes ({mmap_len}): a zstd bomb or damage",
                cur.at, self.c.cap
            )));
        }
        self.take_records(block)?;
        let used_up = self.in_pos >= self.input.len();
        if status.bytes_read == 0 && status.bytes_written == 0 && !used_up {
            return Err(self.damaged(format!(
                "the COMPRESSED record at offset {} does not decompress (no progress)",
                cur.at
            )));
        }
        // Output that filled the space may have more behind it.
        Ok(used_up && status.bytes_written < space)
    }

    /// Fills `block` up to [`BLOCK_BYTES`].
    fn fill(&mut self, block: &mut Vec<u8>) -> Result<(), Stop> {
        while block.len() < BLOCK_BYTES {
            if self.current.is_some() {
                if self.inflate(block)? {
                    self.current = None;
                }
                continue;
            }
            let r = self.outer.next().map_err(Stop::Damaged)?;
            let Some(OuterRecord { at, type_, bytes }) = r else {
                if self.filled > 0 {
                    let size = u16_at(self.window.get(..self.filled).unwrap_or_default(), 6)
                        .map_or_else(|| "its header".to_string(), |s| format!("{s} bytes"));
                    return Err(self.damaged(format!(
                        "the compressed stream ends inside a record ({} bytes of {size}) after the COMPRESSED record at offset {}",
                        self.filled, self.last_at
                    )));
                }
                return Err(Stop::End);
            };
            let Some(bytes) = bytes else { continue };
            match type_ {
                user::COMPRESSED | user::COMPRESSED2 => {
                    let payload = if type_ == user::COMPRESSED {
                        bytes.get(8..)
                    } else {
                        u64_at(bytes, 8)
                            .and_then(|n| usize::try_from(n).ok())
                            .and_then(|n| bytes.get(16..16usize.checked_add(n)?))
                    };
                    let whole = payload.is_some();
                    self.input.clear();
                    self.input.extend_from_slice(payload.unwrap_or_default());
                    self.in_pos = 0;
                    self.seen += 1;
                    self.last_at = at;
                    self.current = Some(Inflating { at, out: 0 });
                    if !whole {
                        return Err(self.damaged(format!(
                            "the COMPRESSED2 record at offset {at} has a data size past its end"
                        )));
                    }
                }
                _ => {
                    if type_ < 64 {
                        if self.c.limit.is_some_and(|l| self.records >= l) {
                            return Err(Stop::End);
                        }
                        self.records += 1;
                    }
                    block.extend_from_slice(bytes);
                }
            }
        }
        Ok(())
    }
}

impl Iterator for Blocks<'_> {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        if self.done {
            return None;
        }
        let mut block = Vec::new();
        match self.fill(&mut block) {
            Ok(()) => {}
            Err(stop) => {
                self.done = true;
                // Damage past the records the walk at open read was reported then.
                if let Stop::Damaged(why) = stop
                    && self.c.limit.is_none_or(|l| self.records < l)
                {
                    self.c.fail(why);
                }
            }
        }
        if block.is_empty() {
            self.done = true;
            return None;
        }
        Some(block)
    }
}
