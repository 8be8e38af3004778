//! Off-CPU intervals: from the switch records of each thread, with the stack it left with.
//!
//! **The interval.** With `attr.context_switch` the kernel writes a switch record each time a
//! followed thread leaves a CPU (`SWITCH_OUT`, with `SWITCH_OUT_PREEMPT` when it was still
//! runnable: preempted, waiting for a CPU rather than for something) and each time it takes
//! one again. Its time off the CPU is exactly the time from one to the other; the records of
//! one thread come from different CPUs' buffers, so they pair up only in the recording's time
//! order, which is how the replay hands them here.
//!
//! **The stack.** Switch records carry no stack. A sample taken as the thread leaves (`record
//! --off-cpu`'s `context-switches` with period 1, or perf's `sched:sched_switch` samples) does;
//! the kernel writes it a few microseconds before or after the switch-out record, so the stack
//! of an interval is the last such sample of the thread since it last took a CPU. An interval
//! without one (the stacks were refused, or lost) is still counted, with no stack.
//!
//! **What is not an interval.** A switch-out with no switch-in before the thread exits (its
//! last switch-out is its death) or before the recording ends is not time spent waiting in the
//! recording, and a switch-in with no switch-out before it (the thread was off the CPU when
//! recording began) has no start: both are left out and counted.

use super::FastMap;

/// The stack a thread left the CPU with, as the replay's location ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaveStack {
    /// When the sample was taken.
    pub time: u64,
    /// The sampled location.
    pub leaf: u32,
    /// Its callers, outward.
    pub callers: Vec<u32>,
    /// The sample's `header.misc` (its cpumode).
    pub misc: u16,
    /// The sampled address.
    pub ip: u64,
    /// The CPU it left, when sampled.
    pub cpu: Option<u32>,
}

/// One off-CPU interval of a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interval {
    /// The thread.
    pub tid: u32,
    /// When it left the CPU.
    pub start: u64,
    /// How long it was off, in nanoseconds.
    pub ns: u64,
    /// It was preempted (runnable), not blocked.
    pub preempted: bool,
    /// The stack it left with, when there was one.
    pub stack: Option<LeaveStack>,
}

#[derive(Debug, Default)]
struct Thread {
    /// The pending switch-out: its time and whether it was a preemption.
    out: Option<(u64, bool)>,
    /// The last switch-in.
    last_in: u64,
    /// The last stack sample since then.
    stack: Option<LeaveStack>,
}

/// Pairs each thread's switch-out with its next switch-in, in time order.
#[derive(Debug, Default)]
pub struct OffCpuTracker {
    threads: FastMap<u32, Thread>,
    /// Intervals handed on.
    pub intervals: u64,
    /// Of those, preempted ones.
    pub preempted: u64,
    /// Of those, ones without a stack.
    pub without_stack: u64,
    /// Switch-ins with no switch-out before them (the thread was already off the CPU when
    /// the recording began).
    pub unpaired_in: u64,
}

impl OffCpuTracker {
    /// Empty.
    pub fn new() -> OffCpuTracker {
        OffCpuTracker::default()
    }

    /// A stack sample of `tid` taken as it left a CPU.
    pub fn stack(&mut self, tid: u32, stack: LeaveStack) {
        self.threads.entry(tid).or_default().stack = Some(stack);
    }

    /// A switch record of `tid` at `time`: `out` leaving (`preempt`: still runnable), else
    /// taking a CPU. A switch-in that closes an interval gives it.
    pub fn switch(&mut self, tid: u32, time: u64, out: bool, preempt: bool) -> Option<Interval> {
        let t = self.threads.entry(tid).or_default();
        if out {
            t.out = Some((time, preempt));
            return None;
        }
        let last_in = std::mem::replace(&mut t.last_in, time);
        let stack = t.stack.take().filter(|s| s.time >= last_in);
        let Some((start, preempted)) = t.out.take().filter(|&(start, _)| start <= time) else {
            self.unpaired_in += 1;
            return None;
        };
        self.intervals += 1;
        self.preempted += u64::from(preempted);
        self.without_stack += u64::from(stack.is_none());
        Some(Interval {
            tid,
            start,
            ns: time - start,
            preempted,
            stack,
        })
    }

    /// `tid` exited: a pending switch-out was its last, not a wait.
    pub fn exit(&mut self, tid: u32) {
        self.threads.remove(&tid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(time: u64, leaf: u32) -> LeaveStack {
        LeaveStack {
            time,
            leaf,
            callers: vec![leaf + 1],
            ..LeaveStack::default()
        }
    }

    #[test]
    fn intervals_pair_out_with_the_next_in_and_take_the_stack_between() {
        let mut t = OffCpuTracker::new();
        // Already off the CPU at the start: no interval.
        assert_eq!(t.switch(7, 100, false, false), None);
        // The stack comes just before the switch-out (or just after it).
        t.stack(7, stack(190, 1));
        assert_eq!(t.switch(7, 200, true, false), None);
        let i = t.switch(7, 1200, false, false).unwrap();
        assert_eq!((i.start, i.ns, i.preempted), (200, 1000, false));
        assert_eq!(i.stack.unwrap().leaf, 1);
        // Preempted, the stack sampled after the switch-out record.
        t.switch(7, 1500, true, true);
        t.stack(7, stack(1501, 5));
        let i = t.switch(7, 1600, false, false).unwrap();
        assert!(i.preempted);
        assert_eq!(i.stack.unwrap().leaf, 5);
        // No stack since the last switch-in: none, not an older one.
        t.stack(7, stack(1590, 9));
        t.switch(7, 2000, true, false);
        t.stack(8, stack(2001, 3));
        let i = t.switch(7, 2500, false, false).unwrap();
        assert_eq!(i.stack, None);
        // Another thread is its own.
        t.switch(8, 2002, true, false);
        assert_eq!(
            t.switch(8, 2100, false, false).unwrap().stack.unwrap().leaf,
            3
        );
        // An exit ends a pending switch-out without an interval.
        t.switch(8, 3000, true, false);
        t.exit(8);
        assert_eq!(t.switch(8, 3100, false, false), None);
        assert_eq!(
            (t.intervals, t.preempted, t.without_stack, t.unpaired_in),
            (4, 1, 1, 2)
        );
    }
}
