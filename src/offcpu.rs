//! Off-CPU intervals: each thread's switch-out paired with its next switch-in, with the stack
//! it left with. One implementation for both halves: the recorder pairs while recording
//! (`record --off-cpu`, on the writer thread) and the replay pairs the switch records of files
//! that kept them (perf.data with `--switch-events`, hrec files of earlier versions). It
//! imports nothing of hrec's, so both may use it.
//!
//! **The interval.** With `attr.context_switch` the kernel writes a switch record each time a
//! followed thread leaves a CPU (`SWITCH_OUT`, with `SWITCH_OUT_PREEMPT` when it was still
//! runnable: preempted, waiting for a CPU rather than for something) and each time it takes
//! one again. Its time off the CPU is exactly the time from one to the other.
//!
//! **The stack.** Switch records carry no stack. A sample taken as the thread leaves (`record
//! --off-cpu`'s `context-switches` with period 1, or perf's `sched:sched_switch` samples) does;
//! the kernel writes it a few microseconds before or after the switch-out record, so the stack
//! of an interval is the last such sample of the thread since it last took a CPU. An interval
//! without one (the stacks were refused, lost or throttled) is still counted, with no stack.
//!
//! **Order.** A thread leaves one CPU and may come back on another, so its two records sit
//! in two CPUs' buffers and pair up only in time order. The replay hands records over sorted;
//! the recorder sorts what it drained but can still meet a switch-in before the switch-out it
//! closes (that switch-out was written just after the recorder drained its CPU's buffer): a
//! switch-in with nothing to close is kept, and a later switch-out older than it closes it.
//!
//! **What is not an interval.** A switch-out with no switch-in before the thread exits (its
//! last switch-out is its death) or before the recording ends is not time spent waiting in the
//! recording; a switch-in with no switch-out before it (the thread was off the CPU when
//! recording began, or was just created) has no start. Both are left out and counted. Where
//! the kernel lost records, a switch-out follows a switch-out (the switch-in between is lost)
//! or a switch-in follows a switch-in: the interval is dropped and counted.
//!
//! **Bounded.** The state is one entry per thread: a pending switch-out, a pending early
//! switch-in and the last stack. A thread's entry goes at its exit, whether the exit or the
//! final switch-out (which the kernel may write after the exit record) comes first.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// One off-CPU interval of a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interval<S> {
    /// The thread.
    pub tid: u32,
    /// When it left the CPU.
    pub start: u64,
    /// How long it was off, in nanoseconds.
    pub ns: u64,
    /// It was preempted (runnable), not blocked.
    pub preempted: bool,
    /// The stack it left with, when there was one.
    pub stack: Option<S>,
}

impl<S> Interval<S> {
    /// When it took a CPU again.
    pub fn end(&self) -> u64 {
        self.start + self.ns
    }
}

/// What the pairing met besides intervals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Intervals handed on.
    pub intervals: u64,
    /// Of those, preempted ones.
    pub preempted: u64,
    /// Of those, ones without a stack.
    pub without_stack: u64,
    /// A thread's first switch-in, with no switch-out before it: the thread was off the CPU
    /// when the recording began, or had just been created.
    pub unpaired_in: u64,
    /// Intervals lost with one of their switch records: a switch-out followed by another
    /// switch-out of the same thread (the switch-in between was lost), or a switch-in by
    /// another switch-in (the switch-out between was lost).
    pub dropped: u64,
}

#[derive(Debug)]
struct Thread<S> {
    /// The pending switch-out: its time and whether it was a preemption.
    out: Option<(u64, bool)>,
    /// A switch-in that had no switch-out to close: the thread's first, or one whose
    /// switch-out comes later from another CPU's buffer; and whether it was the first record
    /// of the thread.
    early_in: Option<(u64, bool)>,
    /// The last switch-in that closed an interval or began the thread.
    last_in: u64,
    /// The last stack sample, and its time.
    stack: Option<(u64, S)>,
    /// The thread exited at this time: its next switch-out is its last.
    exit_at: Option<u64>,
}

impl<S> Default for Thread<S> {
    fn default() -> Self {
        Thread {
            out: None,
            early_in: None,
            last_in: 0,
            stack: None,
            exit_at: None,
        }
    }
}

/// Pairs each thread's switch-out with its next switch-in.
#[derive(Debug)]
pub struct Tracker<S> {
    threads: HashMap<u32, Thread<S>>,
    /// What was met so far.
    pub counts: Counts,
}

impl<S> Default for Tracker<S> {
    fn default() -> Self {
        Tracker {
            threads: HashMap::new(),
            counts: Counts::default(),
        }
    }
}

impl<S: Clone> Tracker<S> {
    /// Empty.
    pub fn new() -> Tracker<S> {
        Tracker::default()
    }

    /// Threads with state (for the bound).
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// Whether `tid` has state (it left a CPU and has not exited, or has a stack).
    pub fn has(&self, tid: u32) -> bool {
        self.threads.contains_key(&tid)
    }

    /// A stack sample of `tid` taken at `time` as it left a CPU.
    pub fn stack(&mut self, tid: u32, time: u64, stack: S) {
        self.threads.entry(tid).or_default().stack = Some((time, stack));
    }

    /// A switch record of `tid` at `time`: `out` leaving (`preempt`: still runnable), else
    /// taking a CPU. The record that closes an interval gives it: the switch-in, or a
    /// switch-out older than a switch-in met before it.
    pub fn switch(&mut self, tid: u32, time: u64, out: bool, preempt: bool) -> Option<Interval<S>> {
        let c = &mut self.counts;
        let first = !self.threads.contains_key(&tid);
        let t = self.threads.entry(tid).or_default();
        if out {
            if t.exit_at.is_some_and(|e| time >= e) {
                // Its last switch-out, after the exit: no wait follows.
                self.threads.remove(&tid);
                return None;
            }
            if let Some((at, was_first)) = t.early_in.take() {
                if time <= at {
                    // The switch-in came first (drained from another CPU before this).
                    return Some(close(c, t, tid, (time, preempt), at));
                }
                unpaired(c, was_first);
                t.last_in = at;
            }
            if t.out.replace((time, preempt)).is_some() {
                c.dropped += 1;
            }
            return None;
        }
        match t.out.take() {
            Some(o) if o.0 <= time => Some(close(c, t, tid, o, time)),
            pending => {
                // No switch-out to close, or only a newer one (records out of order): wait
                // for an older switch-out; a second one means the first had none.
                t.out = pending;
                if let Some((prev, was_first)) = t.early_in.replace((time, first)) {
                    unpaired(c, was_first);
                    t.last_in = prev;
                }
                None
            }
        }
    }

    /// `tid` exited at `time`: a switch-out at or after it is its last, not a wait.
    pub fn exit(&mut self, tid: u32, time: u64) {
        let Some(t) = self.threads.get_mut(&tid) else {
            return;
        };
        if t.out.is_some_and(|(o, _)| o >= time) {
            // The final switch-out came in first.
            self.threads.remove(&tid);
            return;
        }
        t.exit_at = Some(time);
        t.out = None;
    }

    /// Records were missed (a gap): every open interval is dropped and every thread starts
    /// again with no state.
    pub fn reset(&mut self) {
        self.finish();
        for t in self.threads.values() {
            self.counts.dropped += u64::from(t.out.is_some());
        }
        self.threads.clear();
    }

    /// The end of the records: switch-ins still waiting for a switch-out had none.
    pub fn finish(&mut self) {
        for t in self.threads.values_mut() {
            if let Some((at, was_first)) = t.early_in.take() {
                unpaired(&mut self.counts, was_first);
                t.last_in = at;
            }
        }
    }
}

/// A switch-in found to have no switch-out: the thread's first, or one whose switch-out the
/// kernel lost.
fn unpaired(c: &mut Counts, first: bool) {
    if first {
        c.unpaired_in += 1;
    } else {
        c.dropped += 1;
    }
}

/// The interval from switch-out `o` to the switch-in at `at`, with the stack taken since the
/// thread last took a CPU.
fn close<S: Clone>(
    c: &mut Counts,
    t: &mut Thread<S>,
    tid: u32,
    o: (u64, bool),
    at: u64,
) -> Interval<S> {
    let (start, preempted) = o;
    let stack = match &t.stack {
        Some((st, s)) if *st >= t.last_in && *st <= at => Some(s.clone()),
        _ => None,
    };
    if stack.is_some() {
        t.stack = None;
    }
    t.last_in = at;
    c.intervals += 1;
    c.preempted += u64::from(preempted);
    c.without_stack += u64::from(stack.is_none());
    Interval {
        tid,
        start,
        ns: at - start,
        preempted,
        stack,
    }
}

/// One thread's time on and off the CPUs, from its switch records.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThreadTime {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Its name at its last switch record (filled by the reader: the recorder stores none).
    #[serde(skip)]
    pub comm: String,
    /// Its first switch record.
    pub first: u64,
    /// Its last switch record.
    pub last: u64,
    /// On a CPU: switch-in to the next switch-out.
    pub on_ns: u64,
    /// Off, blocked: a switch-out to the next switch-in.
    pub blocked_ns: u64,
    /// Off, preempted (runnable, waiting for a CPU).
    pub preempted_ns: u64,
    /// Off-CPU intervals (switch-outs followed by a switch-in).
    pub intervals: u64,
}

impl ThreadTime {
    /// Off-CPU time, blocked and preempted.
    pub fn off_ns(&self) -> u64 {
        self.blocked_ns + self.preempted_ns
    }

    /// From the first switch record to the last: `on_ns + off_ns()`.
    pub fn lifetime_ns(&self) -> u64 {
        self.last - self.first
    }
}

/// Each thread's time on and off the CPUs: a thread's switch records alternate, in and out,
/// so the time from a switch-in to the next switch-out was spent on a CPU and the time from a
/// switch-out to the next switch-in off it, blocked or preempted as the switch-out says. The
/// sum is the thread's time from its first switch record to its last. Records handed in
/// slightly out of order count from the newest time seen (the sums still add up).
#[derive(Debug, Default)]
pub struct ThreadClock {
    times: Vec<ThreadTime>,
    index: HashMap<u32, usize>,
    /// Per thread: on a CPU since, or off since (and preempted).
    state: HashMap<u32, Result<u64, (u64, bool)>>,
}

impl ThreadClock {
    /// A switch record of `tid` (of process `pid`) at `time`.
    pub fn switch(&mut self, pid: u32, tid: u32, time: u64, out: bool, preempt: bool) {
        let state = self.state.get(&tid).copied();
        let t = self.entry(pid, tid, time);
        let now = time.max(t.last);
        match (state, out) {
            (Some(Ok(since)), true) => t.on_ns += now - since,
            (Some(Err((since, p))), false) => {
                t.intervals += 1;
                if p {
                    t.preempted_ns += now - since;
                } else {
                    t.blocked_ns += now - since;
                }
            }
            // Two of a kind in a row (a record lost): the time between is not counted, and
            // the thread's span starts again there.
            (Some(_), _) => t.first += now - t.last,
            (None, _) => {}
        }
        t.last = now;
        self.state
            .insert(tid, if out { Err((now, preempt)) } else { Ok(now) });
    }

    fn entry(&mut self, pid: u32, tid: u32, time: u64) -> &mut ThreadTime {
        let i = *self.index.entry(tid).or_insert_with(|| {
            self.times.push(ThreadTime {
                pid,
                tid,
                first: time,
                last: time,
                ..ThreadTime::default()
            });
            self.times.len() - 1
        });
        &mut self.times[i]
    }

    /// `tid` exited: its next records, if any, start a new span.
    pub fn exit(&mut self, tid: u32) {
        self.state.remove(&tid);
    }

    /// The times so far, in the order the threads first switched.
    pub fn times(&self) -> &[ThreadTime] {
        &self.times
    }

    /// The times so far, each thread's span cut at `at` (a file of a `--switch-output`
    /// recording ends there): the time since a thread's last record counts as what it was
    /// doing, and the threads with a state start the next span at `at` in that state.
    pub fn split(&mut self, at: u64) -> Vec<ThreadTime> {
        let live: Vec<(u32, u32)> = self
            .times
            .iter()
            .filter(|t| self.state.contains_key(&t.tid))
            .map(|t| (t.pid, t.tid))
            .collect();
        for &(pid, tid) in &live {
            let Some(&state) = self.state.get(&tid) else {
                continue;
            };
            let t = self.entry(pid, tid, at);
            let now = at.max(t.last);
            match state {
                Ok(since) => t.on_ns += now - since,
                Err((since, true)) => t.preempted_ns += now - since,
                Err((since, false)) => t.blocked_ns += now - since,
            }
            t.last = now;
            self.state.insert(
                tid,
                match state {
                    Ok(_) => Ok(now),
                    Err((_, p)) => Err((now, p)),
                },
            );
        }
        self.index.clear();
        let done = std::mem::take(&mut self.times);
        for (pid, tid) in live {
            let now = self.state.get(&tid).map_or(at, |s| match s {
                Ok(t) | Err((t, _)) => *t,
            });
            self.entry(pid, tid, now);
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_and_off_cpu_add_up_to_the_span_of_the_switches() {
        let mut s = ThreadClock::default();
        // Thread 7: in at 100, out (blocked) 300, in 1300, out (preempted) 1400, in 1500,
        // out at 1600 (its death: nothing after).
        for (t, out, p) in [
            (100, false, false),
            (300, true, false),
            (1300, false, false),
            (1400, true, true),
            (1500, false, false),
            (1600, true, false),
        ] {
            s.switch(1, 7, t, out, p);
        }
        // Thread 8 was running when recording began: its first record is a switch-out.
        s.switch(1, 8, 50, true, false);
        s.switch(1, 8, 90, false, false);
        let t = &s.times()[0];
        assert_eq!(
            (t.on_ns, t.blocked_ns, t.preempted_ns, t.intervals),
            (400, 1000, 100, 2)
        );
        assert_eq!(t.on_ns + t.off_ns(), t.lifetime_ns());
        assert_eq!(t.lifetime_ns(), 1500);
        let t = &s.times()[1];
        assert_eq!((t.on_ns, t.blocked_ns, t.lifetime_ns()), (0, 40, 40));
    }

    #[test]
    fn a_split_cuts_each_span_at_the_file_end_and_the_next_file_goes_on_from_there() {
        let mut s = ThreadClock::default();
        s.switch(1, 7, 100, false, false);
        s.switch(1, 7, 300, true, false);
        s.switch(1, 8, 150, false, false);
        s.switch(1, 8, 200, true, true);
        s.switch(1, 8, 250, false, false);
        s.exit(8);
        let first = s.split(1000);
        // 7: on 200, then blocked from 300 to the cut.
        assert_eq!(
            (first[0].on_ns, first[0].blocked_ns, first[0].lifetime_ns()),
            (200, 700, 900)
        );
        // 8 exited: its span ends at its last record.
        assert_eq!(
            (first[1].on_ns, first[1].preempted_ns, first[1].last),
            (50, 50, 250)
        );
        s.switch(1, 7, 1300, false, false);
        s.switch(1, 7, 1400, true, false);
        let t = &s.times()[0];
        assert_eq!(s.times().len(), 1);
        assert_eq!(
            (t.first, t.blocked_ns, t.on_ns, t.intervals),
            (1000, 300, 100, 1)
        );
        assert_eq!(t.on_ns + t.off_ns(), t.lifetime_ns());
    }

    #[test]
    fn intervals_pair_out_with_the_next_in_and_take_the_stack_between() {
        let mut t = Tracker::<u32>::new();
        // Already off the CPU at the start: no interval.
        assert_eq!(t.switch(7, 100, false, false), None);
        // The stack comes just before the switch-out (or just after it).
        t.stack(7, 190, 1);
        assert_eq!(t.switch(7, 200, true, false), None);
        let i = t.switch(7, 1200, false, false).unwrap();
        assert_eq!(
            (i.start, i.ns, i.preempted, i.end()),
            (200, 1000, false, 1200)
        );
        assert_eq!(i.stack, Some(1));
        // Preempted, the stack sampled after the switch-out record.
        t.switch(7, 1500, true, true);
        t.stack(7, 1501, 5);
        let i = t.switch(7, 1600, false, false).unwrap();
        assert!(i.preempted);
        assert_eq!(i.stack, Some(5));
        // No stack since the last switch-in: none, not an older one.
        t.stack(7, 1590, 9);
        t.switch(7, 2000, true, false);
        t.stack(8, 2001, 3);
        let i = t.switch(7, 2500, false, false).unwrap();
        assert_eq!(i.stack, None);
        // Another thread is its own.
        t.switch(8, 2002, true, false);
        assert_eq!(t.switch(8, 2100, false, false).unwrap().stack, Some(3));
        // An exit ends a pending switch-out without an interval.
        t.switch(8, 3000, true, false);
        t.exit(8, 3050);
        t.switch(8, 3060, true, false);
        assert_eq!(t.threads(), 1);
        assert_eq!(t.switch(8, 3100, false, false), None);
        t.finish();
        let c = t.counts;
        assert_eq!(
            (
                c.intervals,
                c.preempted,
                c.without_stack,
                c.unpaired_in,
                c.dropped
            ),
            (4, 1, 1, 2, 0)
        );
    }

    #[test]
    fn a_switch_in_met_before_its_switch_out_still_closes_it() {
        let mut t = Tracker::<u32>::new();
        t.switch(1, 10, false, false); // the thread's first switch-in
        // CPU 1's buffer drained first: the switch-in at 300, then CPU 0's stack and
        // switch-out at 190 and 200.
        assert_eq!(t.switch(1, 300, false, false), None);
        t.stack(1, 190, 4);
        let i = t.switch(1, 200, true, true).unwrap();
        assert_eq!(
            (i.start, i.ns, i.preempted, i.stack),
            (200, 100, true, Some(4))
        );
        // Then in order again: the stack after 300 is the next interval's.
        t.stack(1, 400, 6);
        t.switch(1, 410, true, false);
        let i = t.switch(1, 500, false, false).unwrap();
        assert_eq!((i.start, i.stack), (410, Some(6)));
        // The first switch-in had no switch-out: counted once its thread moved on.
        assert_eq!((t.counts.intervals, t.counts.unpaired_in), (2, 1));
    }

    #[test]
    fn lost_records_drop_the_interval_and_are_counted() {
        let mut t = Tracker::<u32>::new();
        t.switch(1, 100, true, false);
        // The switch-in at ~150 and the switch-out at ~180 were lost.
        t.switch(1, 200, true, false);
        assert_eq!(t.switch(1, 260, false, false).unwrap().ns, 60);
        assert_eq!(t.counts.dropped, 1);
        // A switch-in with no switch-out (lost) waits, then counts as dropped.
        t.switch(1, 400, false, false);
        t.switch(1, 500, true, false);
        assert_eq!((t.counts.dropped, t.counts.unpaired_in), (2, 0));
        assert_eq!(t.switch(1, 600, false, false).unwrap().start, 500);
    }

    #[test]
    fn the_final_switch_out_may_come_before_the_exit() {
        let mut t = Tracker::<u32>::new();
        t.switch(3, 100, true, false);
        t.switch(3, 150, false, false);
        // The recorder met the last switch-out (after the exit) before the exit record.
        t.switch(3, 300, true, false);
        t.exit(3, 290);
        assert_eq!(t.threads(), 0);
        // At the end, a switch-in still waiting is counted.
        t.switch(4, 50, false, false);
        t.finish();
        assert_eq!((t.counts.intervals, t.counts.unpaired_in), (1, 1));
        // A gap: the open interval is dropped, and the next switch-in is a first one.
        t.switch(5, 400, true, false);
        t.reset();
        assert_eq!((t.threads(), t.counts.dropped), (0, 1));
        assert_eq!(t.switch(5, 500, false, false), None);
    }
}
