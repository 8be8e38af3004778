//! Per-thread event counts (`record -s`, `report -T`): with `inherit_stat`, the kernel writes
//! a READ record for every inherited thread when it exits, holding that thread's own count of
//! the event. perf's `report -T` lists them per (pid, tid) in the order the threads first
//! appear, one column per event in the order the events first appear, adding up the records
//! of one thread and event.
//!
//! Per-thread times (`record --off-cpu`, `report -T`, `info`): from the switch records
//! ([`crate::offcpu::ThreadClock`]: on a CPU from a switch-in to the next switch-out, off it,
//! blocked or preempted, from a switch-out to the next switch-in; together the thread's time
//! from its first switch record to its last, its death's switch-out for a thread that exits).
//! `record --off-cpu` keeps no switch records: its pairing adds the times up while recording
//! and stores them; perf.data and hrec files that kept the records are paired here.

use crate::data::offcpu::THREADS_SIDE;
use crate::decode::Record;
use crate::offcpu::ThreadClock;
pub use crate::offcpu::ThreadTime;
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

/// Each thread's time on and off the CPUs, in the order the threads first switch: an hrec
/// file of `record --off-cpu` stores them (the `off-cpu-threads` side block of its pairing,
/// [`crate::data::offcpu::THREADS_SIDE`]), other recordings are paired here from their
/// switch records; `None` when the recording has neither (`record --off-cpu`, perf's
/// `--switch-events`).
pub fn thread_times(rec: &Recording) -> Option<Vec<ThreadTime>> {
    let meta = rec.meta();
    let stored = rec
        .side(THREADS_SIDE)
        .and_then(|b| serde_json::from_slice::<Vec<ThreadTime>>(&b).ok());
    if stored.is_none()
        && !meta
            .events
            .iter()
            .any(|e| e.attr.has(crate::event::attr::flag::CONTEXT_SWITCH))
    {
        return None;
    }
    let mut clock = ThreadClock::default();
    let mut comms = Comms::default();
    rec.for_each(|r| {
        let Ok(record) = r else { return };
        comms.apply(&record);
        if stored.is_some() {
            return;
        }
        if let Some((out, preempt, id)) = record.as_switch()
            && let (Some(tid), Some(time)) = (id.tid, id.time)
        {
            clock.switch(id.pid.unwrap_or(tid), tid, time, out, preempt);
        } else if let Record::Exit(t) = &record {
            clock.exit(t.tid);
        }
    });
    let mut times = stored.unwrap_or_else(|| clock.times().to_vec());
    for t in &mut times {
        t.comm = comms.name(t.tid);
    }
    Some(times)
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
}
