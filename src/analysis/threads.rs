//! Per-thread event counts (`record -s`, `report -T`): with `inherit_stat`, the kernel writes
//! a READ record for every inherited thread when it exits, holding that thread's own count of
//! the event. perf's `report -T` lists them per (pid, tid) in the order the threads first
//! appear, one column per event in the order the events first appear, adding up the records
//! of one thread and event.
//!
//! Per-thread times (`record --off-cpu`, `report -T`, `info`): a thread's switch records
//! alternate, in (out of a CPU), so the time from a switch-in to the next switch-out was spent
//! on a CPU and the time from a switch-out to the next switch-in off it, blocked or preempted
//! as the switch-out says. Their sum is the thread's time from its first switch record to its
//! last (its death's switch-out, for a thread that exits); a switch-out with no switch-in after
//! it adds nothing.

use std::collections::HashMap;

use crate::decode::Record;
use crate::recording::{Comms, Recording};

/// The READ records' counts of a recording.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadCounts {
    /// Event names, in the order they first appear.
    pub events: Vec<String>,
    /// `(pid, tid, count per event)`, in the order the threads first appear.
    pub threads: Vec<(i32, i32, Vec<u64>)>,
}

impl ThreadCounts {
    /// Adds one READ record's value.
    fn add(&mut self, pid: i32, tid: i32, event: &str, value: u64) {
        let col = match self.events.iter().position(|e| e == event) {
            Some(c) => c,
            None => {
                self.events.push(event.to_string());
                for t in &mut self.threads {
                    t.2.push(0);
                }
                self.events.len() - 1
            }
        };
        let row = match self.threads.iter().position(|t| t.0 == pid && t.1 == tid) {
            Some(r) => r,
            None => {
                self.threads.push((pid, tid, vec![0; self.events.len()]));
                self.threads.len() - 1
            }
        };
        let cell = &mut self.threads[row].2[col];
        *cell = cell.saturating_add(value);
    }
}

/// Reads the READ records of `rec` (a walk of its records).
pub fn thread_counts(rec: &Recording) -> ThreadCounts {
    let mut out = ThreadCounts::default();
    let meta = rec.meta();
    rec.for_each(|r| {
        let Ok(record) = r else { return };
        let Record::Read(read) = &record else { return };
        let id = read
            .values
            .get(0)
            .and_then(|e| e.id)
            .or(read.sample_id.id)
            .or(read.sample_id.identifier);
        let ev = id
            .and_then(|id| rec.event_of(id))
            .or_else(|| rec.event_of_record(&record));
        let (Some(ev), Some(entry)) = (ev, read.values.get(0)) else {
            return;
        };
        if let Some(e) = meta.events.get(ev) {
            out.add(read.pid as i32, read.tid as i32, &e.name, entry.value);
        }
    });
    out
}

/// One thread's time on and off the CPUs, from its switch records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadTime {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Its name at its last switch record.
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

#[derive(Debug, Default)]
struct Switches {
    times: Vec<ThreadTime>,
    index: HashMap<u32, usize>,
    /// Per thread: on a CPU since, or off since (and preempted).
    state: HashMap<u32, Result<u64, (u64, bool)>>,
}

impl Switches {
    fn switch(&mut self, pid: u32, tid: u32, time: u64, out: bool, preempt: bool) {
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
        let t = &mut self.times[i];
        let now = time.max(t.last);
        match (self.state.get(&tid).copied(), out) {
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
}

/// Each thread's time on and off the CPUs from the switch records of `rec`, in the order the
/// threads first switch; `None` when the recording has no switch records (`record --off-cpu`,
/// perf's `--switch-events`).
pub fn thread_times(rec: &Recording) -> Option<Vec<ThreadTime>> {
    let meta = rec.meta();
    if !meta
        .events
        .iter()
        .any(|e| e.attr.has(crate::event::attr::flag::CONTEXT_SWITCH))
    {
        return None;
    }
    let mut s = Switches::default();
    let mut comms = Comms::default();
    rec.for_each(|r| {
        let Ok(record) = r else { return };
        comms.apply(&record);
        match &record {
            Record::Switch {
                out,
                preempt,
                sample_id,
            }
            | Record::SwitchCpuWide {
                out,
                preempt,
                sample_id,
                ..
            } => {
                if let (Some(tid), Some(time)) = (sample_id.tid, sample_id.time) {
                    s.switch(sample_id.pid.unwrap_or(tid), tid, time, *out, *preempt);
                }
            }
            Record::Exit(t) => {
                s.state.remove(&t.tid);
            }
            _ => {}
        }
    });
    for t in &mut s.times {
        t.comm = comms.name(t.tid);
    }
    Some(s.times)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_and_events_keep_their_first_order_and_add_up() {
        let mut t = ThreadCounts::default();
        t.add(10, 12, "cpu-clock", 5);
        t.add(10, 11, "cpu-clock", 7);
        t.add(10, 12, "task-clock", 3);
        t.add(10, 12, "cpu-clock", 1);
        assert_eq!(t.events, ["cpu-clock", "task-clock"]);
        assert_eq!(t.threads, [(10, 12, vec![6, 3]), (10, 11, vec![7, 0])]);
    }

    #[test]
    fn on_and_off_cpu_add_up_to_the_span_of_the_switches() {
        let mut s = Switches::default();
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
        let t = &s.times[0];
        assert_eq!(
            (t.on_ns, t.blocked_ns, t.preempted_ns, t.intervals),
            (400, 1000, 100, 2)
        );
        assert_eq!(t.on_ns + t.off_ns(), t.lifetime_ns());
        assert_eq!(t.lifetime_ns(), 1500);
        let t = &s.times[1];
        assert_eq!((t.on_ns, t.blocked_ns, t.lifetime_ns()), (0, 40, 40));
    }
}
