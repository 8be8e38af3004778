//! Per-thread event counts (`record -s`, `report -T`): with `inherit_stat`, the kernel writes
//! a READ record for every inherited thread when it exits, holding that thread's own count of
//! the event. perf's `report -T` lists them per (pid, tid) in the order the threads first
//! appear, one column per event in the order the events first appear, adding up the records
//! of one thread and event.

use crate::decode::Record;
use crate::recording::Recording;

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
