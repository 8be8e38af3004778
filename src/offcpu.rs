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

#[cfg(test)]
mod tests {
    use super::*;

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
