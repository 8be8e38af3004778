//! Records in time order without holding the file.
//!
//! Records are ordered by `(time, block, offset)`: by the `time` of their sample id, ties kept
//! in file order; records without a time (synthesized before recording started) take time 0,
//! so they come first. Two sources, two rules:
//!
//! * **hrec files** hold one stream of blocks per ring buffer (the block's `source`, a CPU).
//!   Within a stream, records are in time order, so a k-way merge over the streams needs only
//!   the current block of each: the heap holds one head per stream, and a stream's next block
//!   is decompressed when its current one runs out (ahead of time, on a worker pool, in file
//!   order). Each block's records are sorted on loading, which mends any disorder inside a
//!   block.
//! * **perf.data** is one stream with perf's own rule: a `FINISHED_ROUND` record promises that
//!   everything after it is newer than everything before the round before it, so at each
//!   marker the queued records up to the newest time of the previous round are final and
//!   leave the queue; the queue holds at most two rounds. A file without markers is one round,
//!   as in perf, but hrec holds at most 256 MiB of records: past that, everything
//!   queued leaves (the records it could not wait for are counted below). perf's queue has no
//!   such bound, and a `-z` file's records inflate from the file, up to a thousand times.
//!
//! A record older than one already handed on cannot be put in its place any more: it is
//! handed on where it is found and counted, and the count is reported, so misordering is
//! never silent. On files that keep their promises the order equals a full sort.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::{Condvar, Mutex};

use crate::data::{BlockInfo, DataError, Reader};
use crate::decode::{self, DecodeError, Decoder, RawRecord, Record};

/// perf's `PERF_RECORD_FINISHED_ROUND`.
const FINISHED_ROUND: u32 = 68;

/// Blocks decompressed ahead of the merge, at most.
const AHEAD: usize = 8;

/// Bytes of perf.data records held for ordering, at most: two rounds of 128 CPUs, each
/// filling perf's default 516 KiB buffer, take 130 MiB.
pub(crate) const HELD_BYTES: usize = 256 << 20;

/// A record's place in its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Pos {
    time: u64,
    offset: u32,
    size: u16,
}

/// What a walk met besides records.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WalkStats {
    /// Records found older than one already handed on (beyond the reorder window).
    pub reordered: u64,
    /// Blocks that could not be read (each skipped), with the reason.
    pub block_errors: Vec<String>,
}

/// What a walk hands each record to: the record's bytes (header included; empty with an
/// error) and the record decoded from them.
pub(crate) type Sink<'f> = dyn for<'a> FnMut(&'a [u8], Result<Record<'a>, DecodeError>) + 'f;

/// The line for a block that cannot be read.
pub(crate) fn skipped_block(e: &DataError) -> String {
    format!("{e}; skipped that block")
}

/// Indexes a block: its whole records sorted by `(time, offset)`, and the decode error that
/// ended it early, if one did.
fn index(decoder: &Decoder, bytes: &[u8]) -> (Vec<Pos>, Option<DecodeError>) {
    let mut out = Vec::new();
    let mut it = decode::records(bytes);
    let mut off = 0usize;
    let mut err = None;
    while let Some(raw) = it.next() {
        match raw {
            Ok(raw) => {
                let time = decoder.time(&raw);
                out.push(Pos {
                    time: time.unwrap_or(0),
                    offset: off as u32,
                    size: raw.header.size,
                });
                off = it.offset();
            }
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    out.sort_by_key(|p| (p.time, p.offset));
    (out, err)
}

fn emit(decoder: &Decoder, bytes: &[u8], p: Pos, f: &mut Sink) {
    let (start, end) = (p.offset as usize, p.offset as usize + usize::from(p.size));
    match RawRecord::new(&bytes[start..end], start) {
        Ok(raw) => f(raw.bytes, decoder.decode(&raw)),
        Err(e) => f(&[], Err(e)),
    }
}

/// Counts records older than the newest handed on.
#[derive(Debug, Default)]
struct Watermark {
    newest: u64,
    late: u64,
}

impl Watermark {
    fn see(&mut self, p: &Pos) {
        // A record without a time (time 0) has no place in time to be late for.
        if p.time == 0 {
            return;
        }
        if p.time < self.newest {
            self.late += 1;
        } else {
            self.newest = p.time;
        }
    }
}

/// A block's state in the prefetcher.
enum Slot {
    Waiting,
    InFlight,
    Ready(Result<Vec<u8>, DataError>),
    Taken,
}

/// The prefetcher's shared state.
struct State {
    slots: Vec<Slot>,
    /// The next block a worker looks at.
    next: usize,
    /// Finished blocks waiting to be taken.
    ready: usize,
    stop: bool,
}

/// Decompresses blocks ahead of the merge on worker threads, in file order, keeping at most
/// [`AHEAD`] finished blocks waiting. A block asked for before a worker reached it is
/// decompressed by the asking thread, so the merge never waits on a block nobody works on.
struct Prefetch<'r> {
    reader: &'r Reader,
    infos: &'r [&'r BlockInfo],
    state: Mutex<State>,
    cv: Condvar,
}

impl<'r> Prefetch<'r> {
    fn new(reader: &'r Reader, infos: &'r [&'r BlockInfo]) -> Prefetch<'r> {
        Prefetch {
            reader,
            infos,
            state: Mutex::new(State {
                slots: (0..infos.len()).map(|_| Slot::Waiting).collect(),
                next: 0,
                ready: 0,
                stop: false,
            }),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A worker: decompress the next waiting block while fewer than AHEAD wait.
    fn work(&self) {
        loop {
            let i = {
                let mut st = self.lock();
                loop {
                    if st.stop {
                        return;
                    }
                    while st.next < st.slots.len() && !matches!(st.slots[st.next], Slot::Waiting) {
                        st.next += 1;
                    }
                    if st.next >= st.slots.len() {
                        return;
                    }
                    if st.ready < AHEAD {
                        break;
                    }
                    st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
                }
                let i = st.next;
                st.slots[i] = Slot::InFlight;
                st.next += 1;
                i
            };
            let r = self.reader.read_block(self.infos[i]);
            let mut st = self.lock();
            st.slots[i] = Slot::Ready(r);
            st.ready += 1;
            self.cv.notify_all();
        }
    }

    /// Block `i`'s bytes.
    fn take(&self, i: usize) -> Result<Vec<u8>, DataError> {
        let mut st = self.lock();
        loop {
            match std::mem::replace(&mut st.slots[i], Slot::Taken) {
                Slot::Ready(r) => {
                    st.ready -= 1;
                    self.cv.notify_all();
                    return r;
                }
                Slot::InFlight => {
                    st.slots[i] = Slot::InFlight;
                    st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
                }
                Slot::Waiting | Slot::Taken => {
                    drop(st);
                    return self.reader.read_block(self.infos[i]);
                }
            }
        }
    }

    fn stop(&self) {
        self.lock().stop = true;
        self.cv.notify_all();
    }
}

/// One stream's current block.
struct Current {
    block: usize,
    bytes: Vec<u8>,
    order: Vec<Pos>,
    next: usize,
}

/// Walks the record blocks of an hrec file in time order (see the module docs), with
/// `threads` decompression workers (0: one per CPU).
pub(crate) fn walk_hrec(
    reader: &Reader,
    decoder: &Decoder,
    threads: usize,
    f: &mut Sink,
) -> WalkStats {
    let infos: Vec<&BlockInfo> = reader
        .blocks()
        .iter()
        .filter(|b| b.kind == crate::data::BlockKind::Records)
        .collect();
    let mut sources: Vec<u32> = infos.iter().map(|b| b.source).collect();
    sources.sort_unstable();
    sources.dedup();
    let mut streams: Vec<VecDeque<usize>> = vec![VecDeque::new(); sources.len()];
    for (i, b) in infos.iter().enumerate() {
        if let Ok(s) = sources.binary_search(&b.source) {
            streams[s].push_back(i);
        }
    }
    let workers = match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .min(infos.len())
    .saturating_sub(1);
    let n_streams = streams.len();
    let pre = Prefetch::new(reader, &infos);
    let mut stats = WalkStats::default();
    /// Stops the workers however the merge ends (a panic in `f` included), so the scope's
    /// join never waits on a worker parked for room.
    struct StopOnDrop<'a, 'r>(&'a Prefetch<'r>);
    impl Drop for StopOnDrop<'_, '_> {
        fn drop(&mut self) {
            self.0.stop();
        }
    }
    std::thread::scope(|sc| {
        for _ in 0..workers {
            sc.spawn(|| pre.work());
        }
        let _stop = StopOnDrop(&pre);
        let mut mark = Watermark::default();
        let mut cur: Vec<Option<Current>> = (0..n_streams).map(|_| None).collect();
        let mut heap: BinaryHeap<Reverse<(u64, usize, u32, usize)>> = BinaryHeap::new();
        // Loads the next block of stream `s` that has records; pushes its head.
        let mut load = |s: usize,
                        cur: &mut Vec<Option<Current>>,
                        heap: &mut BinaryHeap<Reverse<(u64, usize, u32, usize)>>,
                        stats: &mut WalkStats,
                        f: &mut Sink| {
            cur[s] = None;
            while let Some(block) = streams[s].pop_front() {
                let bytes = match pre.take(block) {
                    Ok(b) => b,
                    Err(e) => {
                        stats.block_errors.push(skipped_block(&e));
                        continue;
                    }
                };
                let (order, err) = index(decoder, &bytes);
                if let Some(e) = err {
                    f(&[], Err(e));
                }
                if let Some(&p) = order.first() {
                    heap.push(Reverse((p.time, block, p.offset, s)));
                    cur[s] = Some(Current {
                        block,
                        bytes,
                        order,
                        next: 0,
                    });
                    return;
                }
            }
        };
        for s in 0..n_streams {
            load(s, &mut cur, &mut heap, &mut stats, f);
        }
        while let Some(Reverse((_, _, _, s))) = heap.pop() {
            let Some(c) = cur[s].as_mut() else { continue };
            let p = c.order[c.next];
            c.next += 1;
            mark.see(&p);
            emit(decoder, &c.bytes, p, f);
            match c.order.get(c.next) {
                Some(n) => heap.push(Reverse((n.time, c.block, n.offset, s))),
                None => load(s, &mut cur, &mut heap, &mut stats, f),
            }
        }
        stats.reordered = mark.late;
    });
    stats
}

/// A queued perf.data record: `time << 64 | block << 32 | offset`, one integer so each
/// comparison is one instruction (the size is read back from the record header; a record
/// without a time has time 0).
fn queue_key(time: u64, block: u32, offset: u32) -> u128 {
    u128::from(time) << 64 | u128::from(block) << 32 | u128::from(offset)
}

/// Walks perf.data records (one stream, given as blocks of whole records in file order, read
/// as they are needed) in time order by perf's `FINISHED_ROUND` rule (see the module docs).
/// A block is dropped as soon as none of its records is queued any more, so memory holds the
/// blocks of about two rounds.
///
/// The queue is a list sorted when a round is flushed, not a heap: perf writes each CPU's
/// ring buffer as one run of records in time order, so a round is a few sorted runs, which a
/// stable sort merges in about linear time (a heap pays two logarithmic sifts per record).
pub(crate) fn walk_rounds<'b>(
    blocks: &mut dyn Iterator<Item = Cow<'b, [u8]>>,
    decoder: &Decoder,
    f: &mut Sink,
) -> WalkStats {
    walk_rounds_holding(blocks, decoder, HELD_BYTES, f)
}

/// [`walk_rounds`] holding at most `most` bytes of blocks (and the newest block).
fn walk_rounds_holding<'b>(
    blocks: &mut dyn Iterator<Item = Cow<'b, [u8]>>,
    decoder: &Decoder,
    most: usize,
    f: &mut Sink,
) -> WalkStats {
    let mut mark = Watermark::default();
    let mut queue: Vec<u128> = Vec::new();
    // Blocks still holding queued records: (bytes, records queued), the first is block
    // `first`.
    let mut held: VecDeque<(Cow<'b, [u8]>, usize)> = VecDeque::new();
    let mut first = 0usize;
    let (mut newest, mut previous_round) = (0u64, None::<u64>);
    let flush = |queue: &mut Vec<u128>,
                 held: &mut VecDeque<(Cow<'b, [u8]>, usize)>,
                 first: &mut usize,
                 upto: Option<u64>,
                 mark: &mut Watermark,
                 f: &mut Sink| {
        queue.sort();
        let n = match upto {
            Some(u) => queue.partition_point(|&k| (k >> 64) as u64 <= u),
            None => queue.len(),
        };
        for &key in &queue[..n] {
            let (time, block, offset) = ((key >> 64) as u64, (key >> 32) as u32, key as u32);
            let h = &mut held[block as usize - *first];
            let at = offset as usize;
            let size = u16::from_le_bytes([h.0[at + 6], h.0[at + 7]]);
            let p = Pos { time, offset, size };
            mark.see(&p);
            emit(decoder, &h.0, p, f);
            h.1 -= 1;
        }
        queue.drain(..n);
        // The newest block stays: its records may still be queued by the caller.
        while held.len() > 1 && held.front().is_some_and(|h| h.1 == 0) {
            held.pop_front();
            *first += 1;
        }
    };
    let mut records = Vec::new();
    for (bi, bytes) in blocks.enumerate() {
        records.clear();
        let mut it = decode::records(&bytes);
        let mut off = 0usize;
        while let Some(raw) = it.next() {
            match raw {
                Ok(raw) => {
                    records.push((raw.header.type_, decoder.time(&raw), off));
                    off = it.offset();
                }
                Err(e) => {
                    f(&[], Err(e));
                    break;
                }
            }
        }
        held.push_back((bytes, 0));
        // Too much held: everything queued leaves now, as at the end of a round.
        let held_bytes: usize = held.iter().map(|h| h.0.len()).sum();
        if held_bytes > most && held.len() > 1 {
            flush(&mut queue, &mut held, &mut first, None, &mut mark, f);
        }
        for &(type_, time, off) in &records {
            if type_ == FINISHED_ROUND {
                if let Some(upto) = previous_round {
                    flush(&mut queue, &mut held, &mut first, Some(upto), &mut mark, f);
                }
                previous_round = Some(newest);
            } else {
                if let Some(t) = time {
                    newest = newest.max(t);
                }
                queue.push(queue_key(time.unwrap_or(0), bi as u32, off as u32));
                if let Some(h) = held.back_mut() {
                    h.1 += 1;
                }
            }
        }
    }
    flush(&mut queue, &mut held, &mut first, None, &mut mark, f);
    WalkStats {
        reordered: mark.late,
        block_errors: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::attr::{Attr, sample};

    fn decoder() -> Decoder {
        Decoder::new([(
            1,
            Attr {
                sample_type: sample::TIME,
                ..Attr::default()
            },
        )])
    }

    /// A sample record holding only its time.
    fn at(time: u64) -> Vec<u8> {
        let mut r = vec![9, 0, 0, 0, 0, 0, 16, 0];
        r.extend_from_slice(&time.to_le_bytes());
        r
    }

    const ROUND: [u8; 8] = [68, 0, 0, 0, 0, 0, 8, 0];

    fn times(blocks: &[Vec<u8>]) -> (Vec<u64>, WalkStats) {
        let d = decoder();
        let mut out = Vec::new();
        let mut it = blocks.iter().map(|b| Cow::Borrowed(b.as_slice()));
        let stats = walk_rounds(&mut it, &d, &mut |_, r| {
            if let Ok(Record::Sample(s)) = r {
                out.push(s.time.unwrap());
            }
        });
        (out, stats)
    }

    #[test]
    fn rounds_that_keep_perfs_promise_come_out_fully_sorted() {
        // Round 1: 5 3 9; round 2: 7 4 12 (all newer than round 0, none newer than round 1
        // needed); round 3: 10 11 20. Split over two blocks mid-round.
        let mut a = Vec::new();
        for t in [5, 3, 9] {
            a.extend(at(t));
        }
        a.extend(ROUND);
        for t in [7, 4] {
            a.extend(at(t));
        }
        let mut b = at(12);
        b.extend(ROUND);
        for t in [10, 11, 20] {
            b.extend(at(t));
        }
        b.extend(ROUND);
        let (got, stats) = times(&[a, b]);
        assert_eq!(got, [3, 4, 5, 7, 9, 10, 11, 12, 20]);
        assert_eq!(stats.reordered, 0);
    }

    #[test]
    fn a_record_older_than_the_window_is_counted_not_dropped() {
        let mut a = Vec::new();
        for t in [5, 6] {
            a.extend(at(t));
        }
        a.extend(ROUND);
        a.extend(at(8));
        a.extend(ROUND); // 5 and 6 leave the queue here
        a.extend(at(2)); // broke the promise
        a.extend(at(9));
        let (got, stats) = times(&[a]);
        assert_eq!(got, [5, 6, 2, 8, 9]);
        assert_eq!(stats.reordered, 1);
    }

    /// Without markers, what is held stays under the bound: at the bound everything queued
    /// leaves, and a record older than what left is counted.
    #[test]
    fn the_blocks_held_for_ordering_are_bounded() {
        let d = decoder();
        let blocks: Vec<Vec<u8>> = [[5u64, 1], [2, 9], [7, 3]]
            .iter()
            .map(|ts| ts.iter().flat_map(|&t| at(t)).collect())
            .collect();
        let mut got = Vec::new();
        let mut it = blocks.iter().map(|b| Cow::Borrowed(b.as_slice()));
        // Room for one block of 32 bytes: each new block flushes the ones before it.
        let stats = walk_rounds_holding(&mut it, &d, 40, &mut |_, r| {
            if let Ok(Record::Sample(s)) = r {
                got.push(s.time.unwrap());
            }
        });
        assert_eq!(got, [1, 5, 2, 9, 3, 7]);
        assert_eq!(stats.reordered, 3);
    }

    #[test]
    fn without_markers_the_whole_stream_is_one_round() {
        let mut a = Vec::new();
        for t in [9, 1, 5, 3] {
            a.extend(at(t));
        }
        assert_eq!(times(&[a]).0, [1, 3, 5, 9]);
    }

    /// An hrec file with blocks of three CPUs, interleaved in time, some blocks unordered
    /// inside, read with 1 and 3 workers: the merge equals a full sort.
    #[test]
    fn hrec_streams_merge_into_one_time_order_at_any_worker_count() {
        use crate::data::{Meta, Trailer, Writer};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.hrec");
        let mut w = Writer::create(&path, &Meta::default()).unwrap();
        let mut all = Vec::new();
        let mut x = 7u64;
        for round in 0..20u64 {
            for cpu in 0..3u32 {
                let mut block = Vec::new();
                let mut ts: Vec<u64> = (0..5)
                    .map(|_| {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                        round * 1000 + (x >> 40) % 1000
                    })
                    .collect();
                // CPU 0's blocks are in order, the others not (mended inside a block).
                if cpu == 0 {
                    ts.sort_unstable();
                }
                for &t in &ts {
                    block.extend(at(t));
                }
                all.extend(ts);
                w.write_records(&block, cpu).unwrap();
            }
        }
        w.finish(Trailer::default()).unwrap();
        all.sort_unstable();
        let reader = Reader::open(&path).unwrap();
        for threads in [1, 3] {
            let mut got = Vec::new();
            let stats = walk_hrec(&reader, &decoder(), threads, &mut |_, r| {
                if let Ok(Record::Sample(s)) = r {
                    got.push(s.time.unwrap());
                }
            });
            assert_eq!(got, all, "{threads} workers");
            assert_eq!(stats, WalkStats::default());
        }
    }

    #[test]
    fn an_hrec_block_older_than_its_streams_past_is_counted() {
        use crate::data::{Meta, Trailer, Writer};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("late.hrec");
        let mut w = Writer::create(&path, &Meta::default()).unwrap();
        w.write_records(&[at(10), at(20)].concat(), 0).unwrap();
        w.write_records(&[at(15), at(30)].concat(), 0).unwrap(); // 15 < 20: late
        w.finish(Trailer::default()).unwrap();
        let reader = Reader::open(&path).unwrap();
        let mut got = Vec::new();
        let stats = walk_hrec(&reader, &decoder(), 1, &mut |_, r| {
            if let Ok(Record::Sample(s)) = r {
                got.push(s.time.unwrap());
            }
        });
        assert_eq!(got, [10, 20, 15, 30]);
        assert_eq!(stats.reordered, 1);
    }
}
