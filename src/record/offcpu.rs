//! `record --off-cpu` while recording: the switch records and the stacks threads leave the
//! CPU with are paired into off-CPU intervals on the writer thread ([`crate::offcpu`], the
//! pairing the replay uses too), so the file holds intervals, not switches.
//!
//! **What the file gets** ([`crate::data::offcpu`]): an interval at or above the threshold
//! (`--off-cpu-thresh`) is a direct `offcpu-time` sample, written as it closes; shorter ones
//! are added up per (thread, stack, preempted) and written as one sample per key at the end
//! of the file (and of each `--switch-output` file), with the number of intervals as weight.
//! The size of a file is then bounded by its distinct (thread, stack) pairs and its long
//! waits, not by its switches. The switch records and stack samples themselves are not kept;
//! the LOST and THROTTLE records of their rings are, among the direct samples. Each thread's
//! time on and off the CPUs ([`crate::offcpu::ThreadClock`], for `report -T` and `info`) is
//! added up here from the same records and stored at the end of the file too.
//!
//! **Time order.** A thread leaves one CPU and may take another, so its switch-out and
//! switch-in sit in two CPUs' rings. The drain loop hands over every pass's off-CPU records
//! at once ([`Pass`]); they are held, sorted, and handed to the pairing only up to the newest
//! time of the pass before: everything older than that was written before this pass drained
//! the rings, so nothing older can still come. The pairing copes with what slips through (a
//! record written while its ring was being drained).
//!
//! **Stacks.** With `--call-graph dwarf` each stack sample is unwound as it arrives (the
//! mappings of its pass were applied before) into the chain the file stores, interned in the
//! file's stack table when a sample is written; with frame pointers the kernel's chain is the
//! stack. Distinct stacks are kept once (a key per chain).
//!
//! **Bounded, and never in the way.** Held: the records of about two passes, one entry per
//! live thread ([`crate::offcpu::Tracker`]), one per distinct stack and one per aggregated
//! key. The drain loop never waits for the pairing (a pass with no room in the channel waits
//! in a queue): when the writer thread falls behind it empties the stacks rings unread
//! ([`RINGS_IN_HAND`]; those intervals have no stack), and further behind
//! ([`SWITCH_RINGS_IN_HAND`]) the switch records' rings too: a gap, after which the pairing
//! starts again, the intervals open across it dropped. Both are counted and said.

use std::collections::HashMap;

use crate::data::offcpu::{self as fmt, OffCpuSample, OffCpuStats};
use crate::data::stacks::STACK_REF;
use crate::decode::{self, Decoder, RawRecord, Record, kind};
use crate::event::Attr;
use crate::event::attr::sample;
use crate::offcpu::{Interval, ThreadClock, ThreadTime, Tracker};

use super::open::RingKind;
use super::unwind::RecordUnwinder;

/// The source of the blocks of direct samples (with the LOST and THROTTLE records of the
/// off-CPU rings): one time-ordered stream.
pub const DIRECT_SOURCE: u32 = 0xffff_fffd;
/// The source of the blocks of aggregated samples.
pub const AGGREGATE_SOURCE: u32 = 0xffff_fffe;
/// The name of the side block with a file's [`OffCpuStats`] (JSON).
pub const STATS_SIDE: &str = fmt::STATS_SIDE;
/// Ring-buffer sets of stacks the writer may have in hand (sent, not yet paired) before the
/// drain loop empties the stacks rings unread instead of sending more.
pub const RINGS_IN_HAND: u64 = 2;
/// Passes the drain loop may have in the writer's channel at once (of its 64 places): the
/// rest wait in the drain loop's queue, so the on-CPU batches always find room.
pub const PASSES_IN_FLIGHT: u64 = 8;
/// Ring-buffer sets of switch records the writer may have in hand on top of that (at least
/// 16 MiB) before the drain loop empties those rings too.
pub const SWITCH_RINGS_IN_HAND: u64 = 8;

/// One drain pass's off-CPU records, from the drain thread.
#[derive(Debug, Default)]
pub(super) struct Pass {
    /// The whole records of each switches and stacks ring drained in this pass.
    pub(super) rings: Vec<(RingKind, Vec<u8>)>,
    /// Copies of the EXIT records the on-CPU rings held in this pass.
    pub(super) exits: Vec<u8>,
    /// Records of stacks rings emptied unread (the writer was behind).
    pub(super) discarded: u64,
    /// Records of switch records' rings emptied unread.
    pub(super) switches_discarded: u64,
    /// Switch records were emptied unread before this pass's: the pairing starts again.
    pub(super) gap: bool,
    /// Bytes in `rings` (what the drain counts as in hand).
    pub(super) bytes: u64,
}

/// What a held record is.
#[derive(Debug)]
enum What {
    /// A switch-out; `true`: preempted.
    Out(bool),
    In,
    /// A stack sample, by its key.
    Stack(u32),
    Exit,
    /// A LOST or THROTTLE record of an off-CPU ring, to keep.
    Raw(Vec<u8>),
}

#[derive(Debug)]
struct Item {
    time: u64,
    seq: u64,
    pid: u32,
    tid: u32,
    cpu: u32,
    what: What,
}

/// The distinct stacks: `[cpumode, ip, chain...]` by key.
#[derive(Debug, Default)]
struct Stacks {
    ids: HashMap<Box<[u64]>, u32>,
    list: Vec<Box<[u64]>>,
}

impl Stacks {
    fn key(&mut self, words: &[u64]) -> u32 {
        if let Some(&k) = self.ids.get(words) {
            return k;
        }
        let k = self.list.len() as u32;
        self.list.push(words.into());
        self.ids.insert(words.into(), k);
        k
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct AggKey {
    pid: u32,
    tid: u32,
    stack: Option<u32>,
    preempted: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct Agg {
    ns: u64,
    count: u64,
    end: u64,
    cpu: u32,
}

/// What [`OffCpuRecorder::finish_file`] hands the writer: the blocks that end a file.
#[derive(Debug, Default)]
pub(super) struct FileEnd {
    pub(super) direct: Vec<u8>,
    pub(super) aggregates: Vec<u8>,
    pub(super) stats: OffCpuStats,
    /// Each thread's time on and off the CPUs in this file.
    pub(super) threads: Vec<ThreadTime>,
}

/// The pairing on the writer thread (see the module docs).
#[derive(Debug)]
pub(super) struct OffCpuRecorder {
    decoder: Decoder,
    /// Per decoder index: the event's samples are stacks, with its `sample_regs_user` when
    /// they carry user stack copies.
    stack_events: Vec<Option<Option<u64>>>,
    tracker: Tracker<u32>,
    /// Each thread's time on and off the CPUs (the switch records are not kept for the
    /// reader to add up).
    clock: ThreadClock,
    stacks: Stacks,
    /// Records not handed to the pairing yet.
    held: Vec<Item>,
    seq: u64,
    /// The newest time of the passes so far.
    newest: u64,
    thresh_ns: u64,
    blocked_only: bool,
    agg: HashMap<AggKey, Agg>,
    /// Each thread with a pending interval: its process and the CPU it left.
    threads: HashMap<u32, (u32, u32)>,
    /// The newest time written to the direct stream of this file.
    direct_time: u64,
    /// This file's counts, and the pairing's counts when it began.
    stats: OffCpuStats,
    counts_before: crate::offcpu::Counts,
    /// Every file's.
    totals: OffCpuStats,
    scratch: Vec<u64>,
}

impl OffCpuRecorder {
    /// A pairing for the recording's events (`(id, attr, is the stacks event)` of every fd).
    pub(super) fn new(
        events: impl IntoIterator<Item = (u64, Attr, bool)>,
        thresh_ns: u64,
        blocked_only: bool,
    ) -> OffCpuRecorder {
        let events: Vec<(u64, Attr, bool)> = events.into_iter().collect();
        let decoder = Decoder::new(events.iter().map(|&(id, a, _)| (id, a)));
        let mut stack_events = vec![None; decoder.attrs().len()];
        for &(id, a, stacks) in &events {
            if let (true, Some(slot)) = (
                stacks,
                decoder.index_of(id).and_then(|i| stack_events.get_mut(i)),
            ) {
                *slot =
                    Some((a.sample_type & sample::STACK_USER != 0).then_some(a.sample_regs_user));
            }
        }
        OffCpuRecorder {
            decoder,
            stack_events,
            tracker: Tracker::new(),
            clock: ThreadClock::default(),
            stacks: Stacks::default(),
            held: Vec::new(),
            seq: 0,
            newest: 0,
            thresh_ns,
            blocked_only,
            agg: HashMap::new(),
            threads: HashMap::new(),
            direct_time: 0,
            stats: OffCpuStats {
                thresh_ns,
                ..OffCpuStats::default()
            },
            counts_before: crate::offcpu::Counts::default(),
            totals: OffCpuStats {
                thresh_ns,
                ..OffCpuStats::default()
            },
            scratch: Vec::new(),
        }
    }

    /// Every file's counts so far.
    pub(super) fn totals(&self) -> &OffCpuStats {
        &self.totals
    }

    /// Takes one pass's records and pairs what is old enough; returns the direct samples to
    /// write (in time order).
    pub(super) fn pass(&mut self, p: &Pass, mut unwinder: Option<&mut RecordUnwinder>) -> Vec<u8> {
        let mut out = Vec::new();
        if p.gap {
            // Switch records went unread before this pass: what is held pairs up, then the
            // intervals open across the gap are dropped.
            out = self.release(None, unwinder.as_deref_mut());
            self.tracker.reset();
            self.threads.clear();
        }
        let cut = self.newest;
        self.stats.stacks_discarded += p.discarded;
        self.stats.switches_discarded += p.switches_discarded;
        for (kind, bytes) in &p.rings {
            for raw in decode::records(bytes).flatten() {
                self.take(*kind, &raw, unwinder.as_deref_mut());
            }
        }
        for raw in decode::records(&p.exits).flatten() {
            if let Ok(Record::Exit(t)) = self.decoder.decode(&raw) {
                self.hold(t.time, t.pid, t.tid, 0, What::Exit);
            }
        }
        out.extend(self.release(Some(cut), unwinder));
        out
    }

    fn hold(&mut self, time: u64, pid: u32, tid: u32, cpu: u32, what: What) {
        self.newest = self.newest.max(time);
        self.seq += 1;
        self.held.push(Item {
            time,
            seq: self.seq,
            pid,
            tid,
            cpu,
            what,
        });
    }

    /// One record of an off-CPU ring.
    fn take(&mut self, ring: RingKind, raw: &RawRecord<'_>, unwinder: Option<&mut RecordUnwinder>) {
        match raw.header.type_ {
            kind::SWITCH | kind::SWITCH_CPU_WIDE => {
                let Ok(r) = self.decoder.decode(raw) else {
                    return;
                };
                let Some((out, preempt, sample_id)) = r.as_switch() else {
                    return;
                };
                // The idle task (tid 0 on every CPU, with -a) never waits.
                let (Some(tid @ 1..), Some(time)) = (sample_id.tid, sample_id.time) else {
                    return;
                };
                let what = if out { What::Out(preempt) } else { What::In };
                let (pid, cpu) = (sample_id.pid.unwrap_or(tid), sample_id.cpu.unwrap_or(0));
                self.hold(time, pid, tid, cpu, what);
            }
            kind::SAMPLE => {
                let Ok(located) = self.decoder.locate(raw) else {
                    return;
                };
                let Some(Some(regs)) = self.stack_events.get(located.index).copied() else {
                    return;
                };
                let Ok(Record::Sample(s)) = self.decoder.decode(raw) else {
                    return;
                };
                let (Some(tid), Some(time)) = (s.tid, s.time) else {
                    return;
                };
                self.stats.stacks += 1;
                let mut words = std::mem::take(&mut self.scratch);
                words.clear();
                words.push(u64::from(s.cpumode()));
                words.push(s.ip.unwrap_or(0));
                match (regs, unwinder) {
                    (Some(mask), Some(u)) => {
                        if let Some(chain) = u.unwound_chain(&s, mask) {
                            words.extend_from_slice(chain);
                        }
                    }
                    _ => {
                        if let Some(c) = &s.callchain {
                            words.extend(c.iter());
                        }
                    }
                }
                let key = self.stacks.key(&words);
                self.scratch = words;
                let pid = s.pid.unwrap_or(tid);
                self.hold(time, pid, tid, s.cpu.unwrap_or(0), What::Stack(key));
            }
            kind::LOST | kind::THROTTLE | kind::UNTHROTTLE | kind::LOST_SAMPLES => {
                if let Ok(Record::Lost { lost, .. }) = self.decoder.decode(raw) {
                    match ring {
                        RingKind::Stacks => self.stats.stacks_lost += lost,
                        _ => self.stats.switches_lost += lost,
                    }
                }
                let time = self.decoder.time(raw).unwrap_or(0);
                self.hold(time, 0, 0, 0, What::Raw(raw.bytes.to_vec()));
            }
            _ => {}
        }
    }

    /// Pairs the held records up to `cut` (all of them with `None`), in time order; returns
    /// the direct samples and kept records.
    fn release(&mut self, cut: Option<u64>, mut unwinder: Option<&mut RecordUnwinder>) -> Vec<u8> {
        self.held.sort_unstable_by_key(|i| (i.time, i.seq));
        let n = match cut {
            Some(c) => self.held.partition_point(|i| i.time <= c),
            None => self.held.len(),
        };
        let mut out = Vec::new();
        let items: Vec<Item> = self.held.drain(..n).collect();
        for it in items {
            match it.what {
                What::Out(preempt) => {
                    self.clock.switch(it.pid, it.tid, it.time, true, preempt);
                    self.threads.insert(it.tid, (it.pid, it.cpu));
                    if let Some(i) = self.tracker.switch(it.tid, it.time, true, preempt) {
                        self.interval(&i, &mut out, unwinder.as_deref_mut());
                    }
                }
                What::In => {
                    self.clock.switch(it.pid, it.tid, it.time, false, false);
                    if let Some(i) = self.tracker.switch(it.tid, it.time, false, false) {
                        self.interval(&i, &mut out, unwinder.as_deref_mut());
                    }
                }
                What::Stack(k) => self.tracker.stack(it.tid, it.time, k),
                What::Exit => {
                    self.clock.exit(it.tid);
                    self.tracker.exit(it.tid, it.time);
                }
                What::Raw(bytes) => {
                    self.direct_time = self.direct_time.max(it.time);
                    out.extend_from_slice(&bytes);
                }
            }
            if !self.tracker.has(it.tid) {
                self.threads.remove(&it.tid);
            }
        }
        out
    }

    /// A paired interval: direct, aggregated or left out.
    fn interval(
        &mut self,
        i: &Interval<u32>,
        out: &mut Vec<u8>,
        unwinder: Option<&mut RecordUnwinder>,
    ) {
        self.stats.intervals += 1;
        self.stats.ns += i.ns;
        if i.preempted && self.blocked_only {
            self.stats.left_out += 1;
            self.stats.left_out_ns += i.ns;
            return;
        }
        let (pid, cpu) = self.threads.get(&i.tid).copied().unwrap_or((i.tid, 0));
        if i.ns < self.thresh_ns {
            self.stats.aggregated += 1;
            self.stats.aggregated_ns += i.ns;
            let a = self
                .agg
                .entry(AggKey {
                    pid,
                    tid: i.tid,
                    stack: i.stack,
                    preempted: i.preempted,
                })
                .or_default();
            a.ns += i.ns;
            a.count += 1;
            a.end = a.end.max(i.end());
            a.cpu = cpu;
            return;
        }
        self.stats.direct += 1;
        self.stats.direct_ns += i.ns;
        // A switch-in met before its switch-out closes an interval a little late: the
        // stream stays in order.
        self.direct_time = self.direct_time.max(i.end());
        let s = OffCpuSample {
            pid,
            tid: i.tid,
            time: self.direct_time,
            cpu,
            ns: i.ns,
            count: 1,
            preempted: i.preempted,
            aggregated: false,
            stack: None,
        };
        self.encode(s, i.stack, out, unwinder);
    }

    fn encode(
        &self,
        s: OffCpuSample<'_>,
        stack: Option<u32>,
        out: &mut Vec<u8>,
        unwinder: Option<&mut RecordUnwinder>,
    ) {
        let words = stack.and_then(|k| self.stacks.list.get(k as usize));
        let Some([mode, ip, chain @ ..]) = words.map(|w| &w[..]) else {
            fmt::encode(&s, out);
            return;
        };
        let mode = *mode as u16;
        let stored;
        let chain: &[u64] = match unwinder {
            Some(u) if !chain.is_empty() => {
                stored = [STACK_REF, u64::from(u.intern(chain))];
                &stored
            }
            _ => chain,
        };
        let with = OffCpuSample {
            stack: Some((mode, *ip, chain)),
            ..s
        };
        if !fmt::encode(&with, out) {
            fmt::encode(&s, out);
        }
    }

    /// The end of a file: every held record paired, the direct samples still to write, the
    /// aggregated samples (in time order) and the file's counts. Intervals still open go on
    /// into the next file. `last`: the recording ends (switch-ins still waiting count now).
    pub(super) fn finish_file(
        &mut self,
        mut unwinder: Option<&mut RecordUnwinder>,
        last: bool,
    ) -> FileEnd {
        let direct = self.release(None, unwinder.as_deref_mut());
        let threads = if last {
            self.tracker.finish();
            self.clock.times().to_vec()
        } else {
            // The threads' spans go on in the next file.
            self.clock.split(self.newest)
        };
        let mut keys: Vec<(AggKey, Agg)> = self.agg.drain().collect();
        keys.sort_unstable_by_key(|(k, a)| (a.end, *k));
        let mut aggregates = Vec::new();
        for (k, a) in &keys {
            let s = OffCpuSample {
                pid: k.pid,
                tid: k.tid,
                time: a.end,
                cpu: a.cpu,
                ns: a.ns,
                count: a.count,
                preempted: k.preempted,
                aggregated: true,
                stack: None,
            };
            self.encode(s, k.stack, &mut aggregates, unwinder.as_deref_mut());
        }
        let c = self.tracker.counts;
        let mut stats = std::mem::take(&mut self.stats);
        stats.aggregate_samples = keys.len() as u64;
        stats.without_stack = c.without_stack - self.counts_before.without_stack;
        stats.dropped = c.dropped - self.counts_before.dropped;
        self.counts_before = c;
        self.stats.thresh_ns = self.thresh_ns;
        self.direct_time = 0;
        self.totals.absorb(&stats);
        FileEnd {
            direct,
            aggregates,
            stats,
            threads,
        }
    }
}

/// Appends to `out` copies of the EXIT records among `records`.
pub(super) fn exits(records: &[u8], out: &mut Vec<u8>) {
    for raw in decode::records(records).flatten() {
        if raw.header.type_ == kind::EXIT {
            out.extend_from_slice(raw.bytes);
        }
    }
}

#[cfg(test)]
mod tests;
