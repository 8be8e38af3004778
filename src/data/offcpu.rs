//! `offcpu-time` in hrec files: the off-CPU intervals that `record --off-cpu` pairs while
//! recording, stored as samples of an event hrec writes itself (no kernel fd), and the
//! `off-cpu` side block that counts them. Layout in `docs/file-format.md`.
//!
//! An interval at or above the threshold (`--off-cpu-thresh`) is a **direct** sample: its
//! time is the switch-in that ended it (so the stream stays in time order), its period the
//! nanoseconds off the CPU, its weight 1. Shorter ones are **aggregated** per (thread, stack,
//! preempted): one sample per key at the end of each file, period the summed nanoseconds,
//! weight the number of intervals, time the end of the last one, and the misc bit
//! [`MISC_AGGREGATED`]. A preempted interval (the thread was runnable) has the misc bit
//! [`MISC_PREEMPTED`]; one without a stack has cpumode 0, ip 0 and an empty chain.

use serde::{Deserialize, Serialize};

use super::meta::{EventId, EventMeta, Role};
use crate::event::attr::{Attr, flag, sample, types};

/// The id of the `offcpu-time` samples (no kernel id comes near: the kernel counts ids up
/// from 1).
pub const OFF_CPU_ID: u64 = 0xffff_ffff_0ff0_c9a0;

/// The `sample_type` of `offcpu-time` samples.
pub const SAMPLE_TYPE: u64 = sample::IDENTIFIER
    | sample::IP
    | sample::TID
    | sample::TIME
    | sample::CPU
    | sample::PERIOD
    | sample::CALLCHAIN
    | sample::WEIGHT;

/// `header.misc`: the interval was a preemption (the kernel's `SWITCH_OUT_PREEMPT` bit).
pub const MISC_PREEMPTED: u16 = 1 << 14;
/// `header.misc`: the sample adds up the intervals below the threshold.
pub const MISC_AGGREGATED: u16 = 1 << 13;

/// The name of the side block with a file's [`OffCpuStats`] (JSON), written at its end.
pub const STATS_SIDE: &str = "off-cpu";

/// The name of the side block with each thread's time on and off the CPUs (JSON, a list of
/// [`crate::offcpu::ThreadTime`] without names), written at the end of a file.
pub const THREADS_SIDE: &str = "off-cpu-threads";

/// The event's name, as perf names its own.
pub const NAME: &str = "offcpu-time";

/// perf's `PERF_COUNT_SW_BPF_OUTPUT`, the config perf gives its `offcpu-time`.
const BPF_OUTPUT: u64 = 10;

/// The `offcpu-time` event of a file, at `index` among its events.
pub fn event_meta(index: usize) -> EventMeta {
    let mut attr = Attr::new(types::SOFTWARE, BPF_OUTPUT);
    attr.sample_type = SAMPLE_TYPE;
    attr.sample_period_or_freq = 1;
    attr.set(flag::SAMPLE_ID_ALL, true);
    EventMeta {
        name: NAME.to_string(),
        pmu: Some("software".to_string()),
        attr,
        leader: index,
        role: Role::OffCpuTime,
        ids: vec![EventId {
            id: OFF_CPU_ID,
            cpu: -1,
            tid: -1,
        }],
        trace_format: None,
    }
}

/// One `offcpu-time` sample's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffCpuSample<'a> {
    /// Process and thread.
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// The record's time (see the module docs).
    pub time: u64,
    /// The CPU the thread left.
    pub cpu: u32,
    /// Nanoseconds off the CPU.
    pub ns: u64,
    /// Intervals.
    pub count: u64,
    /// Preempted rather than blocked.
    pub preempted: bool,
    /// Aggregated below the threshold.
    pub aggregated: bool,
    /// The stack sample's cpumode, ip and call chain; `None` without a stack.
    pub stack: Option<(u16, u64, &'a [u64])>,
}

/// Appends `s` as a SAMPLE record of [`SAMPLE_TYPE`] to `out`; `false` (nothing appended)
/// when the chain makes it longer than a record can be.
pub fn encode(s: &OffCpuSample<'_>, out: &mut Vec<u8>) -> bool {
    let (mode, ip, chain) = s.stack.unwrap_or((0, 0, &[]));
    let words = 8 + chain.len();
    let Ok(size) = u16::try_from(8 + 8 * words) else {
        return false;
    };
    let mut misc = mode & crate::decode::misc::CPUMODE_MASK;
    if s.preempted {
        misc |= MISC_PREEMPTED;
    }
    if s.aggregated {
        misc |= MISC_AGGREGATED;
    }
    out.extend_from_slice(&crate::decode::kind::SAMPLE.to_le_bytes());
    out.extend_from_slice(&misc.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    for w in [
        OFF_CPU_ID,
        ip,
        u64::from(s.pid) | u64::from(s.tid) << 32,
        s.time,
        u64::from(s.cpu),
        s.ns,
        chain.len() as u64,
    ] {
        out.extend_from_slice(&w.to_le_bytes());
    }
    for w in chain {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(&s.count.to_le_bytes());
    true
}

/// The `off-cpu` side block of a file: what the recorder paired and how it stored it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OffCpuStats {
    /// `--off-cpu-thresh` in nanoseconds: intervals at least this long are direct samples.
    pub thresh_ns: u64,
    /// Intervals paired (switch-out to switch-in), and their nanoseconds.
    pub intervals: u64,
    /// Their nanoseconds.
    pub ns: u64,
    /// Direct samples (at or above the threshold), and their nanoseconds.
    pub direct: u64,
    /// Their nanoseconds.
    pub direct_ns: u64,
    /// Intervals aggregated (below the threshold), and their nanoseconds.
    pub aggregated: u64,
    /// Their nanoseconds.
    pub aggregated_ns: u64,
    /// The samples they were aggregated into (distinct thread, stack and preempted).
    pub aggregate_samples: u64,
    /// Preempted intervals left out (`--off-cpu=blocked`), and their nanoseconds.
    pub left_out: u64,
    /// Their nanoseconds.
    pub left_out_ns: u64,
    /// Intervals without a stack (refused, lost, throttled or dropped by hrec).
    pub without_stack: u64,
    /// Intervals dropped because the kernel lost one of their switch records (a switch-out
    /// followed by a switch-out, or a switch-in by a switch-in).
    pub dropped: u64,
    /// Stack samples received.
    pub stacks: u64,
    /// Switch records the kernel lost (LOST records of the switch records' rings).
    pub switches_lost: u64,
    /// Stack samples the kernel lost (LOST records of the stacks' rings).
    pub stacks_lost: u64,
    /// Records of the stacks rings hrec emptied unread while its writer thread was behind
    /// (their intervals have no stack).
    pub stacks_discarded: u64,
    /// Records of the switch records' rings hrec emptied unread while its writer thread was
    /// further behind (their intervals are not recorded; about one per two records).
    pub switches_discarded: u64,
}

impl OffCpuStats {
    /// Adds `o`'s counts (another file's of the same recording).
    pub fn absorb(&mut self, o: &OffCpuStats) {
        self.thresh_ns = o.thresh_ns;
        self.intervals += o.intervals;
        self.ns += o.ns;
        self.direct += o.direct;
        self.direct_ns += o.direct_ns;
        self.aggregated += o.aggregated;
        self.aggregated_ns += o.aggregated_ns;
        self.aggregate_samples += o.aggregate_samples;
        self.left_out += o.left_out;
        self.left_out_ns += o.left_out_ns;
        self.without_stack += o.without_stack;
        self.dropped += o.dropped;
        self.stacks += o.stacks;
        self.switches_lost += o.switches_lost;
        self.stacks_lost += o.stacks_lost;
        self.stacks_discarded += o.stacks_discarded;
        self.switches_discarded += o.switches_discarded;
    }

    /// One line: the intervals and how they were stored.
    pub fn line(&self) -> String {
        let s = |ns: u64| format!("{:.3} s", ns as f64 / 1e9);
        let mut l = format!(
            "off-CPU: {} intervals, {} off the CPU: ",
            self.intervals,
            s(self.ns)
        );
        if self.thresh_ns == 0 {
            l.push_str(&format!(
                "{} each a sample (--off-cpu-thresh 0)",
                self.direct
            ));
        } else {
            l.push_str(&format!(
                "{} under {} aggregated into {} samples ({}), {} at or above it each a sample ({})",
                self.aggregated,
                thresh(self.thresh_ns),
                self.aggregate_samples,
                s(self.aggregated_ns),
                self.direct,
                s(self.direct_ns),
            ));
        }
        if self.left_out > 0 {
            l.push_str(&format!(
                "; {} preempted left out ({}, --off-cpu=blocked)",
                self.left_out,
                s(self.left_out_ns)
            ));
        }
        l
    }

    /// Warnings: intervals dropped or without a stack, and why.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.dropped > 0 || self.switches_lost > 0 || self.switches_discarded > 0 {
            let mut why = Vec::new();
            if self.switches_lost > 0 {
                why.push(format!(
                    "the kernel lost {} switch records (their ring buffers were full)",
                    self.switches_lost
                ));
            }
            if self.switches_discarded > 0 {
                why.push(format!(
                    "{} switch records were left unread while hrec's writer was behind (about {} intervals)",
                    self.switches_discarded,
                    self.switches_discarded / 2
                ));
            }
            w.push(format!(
                "{} off-CPU intervals dropped for a missing switch record, more where both of one were missing: {}",
                self.dropped,
                if why.is_empty() {
                    "records were missing".to_string()
                } else {
                    why.join("; ")
                }
            ));
        }
        if self.without_stack > 0 {
            let mut why = Vec::new();
            if self.stacks == 0 {
                why.push("no stacks were recorded".to_string());
            }
            if self.stacks_lost > 0 {
                why.push(format!(
                    "the kernel lost {} stacks (their ring buffers were full: --off-cpu-mmap-pages)",
                    self.stacks_lost
                ));
            }
            if self.stacks_discarded > 0 {
                why.push(format!(
                    "{} records of stacks were left unread while hrec's writer was behind",
                    self.stacks_discarded
                ));
            }
            if why.is_empty() {
                why.push("their stacks were throttled".to_string());
            }
            let why = why.join("; ");
            w.push(format!(
                "{} of {} off-CPU intervals have no stack ([no stack]): {why}",
                self.without_stack, self.intervals
            ));
        }
        w
    }
}

/// A threshold as `--off-cpu-thresh` takes it (milliseconds).
pub fn thresh(ns: u64) -> String {
    let ms = ns as f64 / 1e6;
    if ms.fract() == 0.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{ms} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Decoder, RawRecord, Record};

    #[test]
    fn samples_decode_with_the_events_attr() {
        let e = event_meta(3);
        let d = Decoder::new([(OFF_CPU_ID, e.attr)]);
        let chain = [crate::decode::context::KERNEL, 0xffff_ffff_8100_0000, 7];
        let mut out = Vec::new();
        let s = OffCpuSample {
            pid: 10,
            tid: 11,
            time: 5000,
            cpu: 1,
            ns: 1234,
            count: 9,
            preempted: true,
            aggregated: true,
            stack: Some((1, 0xffff_ffff_8100_0000, &chain)),
        };
        assert!(encode(&s, &mut out));
        assert!(encode(
            &OffCpuSample {
                stack: None,
                preempted: false,
                aggregated: false,
                ..s
            },
            &mut out
        ));
        let mut it = crate::decode::records(&out);
        let raw = it.next().unwrap().unwrap();
        let Record::Sample(got) = d.decode(&RawRecord::new(raw.bytes, 0).unwrap()).unwrap() else {
            panic!("not a sample");
        };
        assert_eq!(
            (got.pid, got.tid, got.time, got.cpu),
            (Some(10), Some(11), Some(5000), Some(1))
        );
        assert_eq!(
            (got.period, got.weight, got.ip),
            (Some(1234), Some(9), Some(s.stack.unwrap().1))
        );
        assert_eq!(got.callchain.unwrap().iter().collect::<Vec<_>>(), chain);
        assert_eq!(got.misc, 1 | MISC_PREEMPTED | MISC_AGGREGATED);
        let raw = it.next().unwrap().unwrap();
        let Record::Sample(got) = d.decode(&RawRecord::new(raw.bytes, 0).unwrap()).unwrap() else {
            panic!("not a sample");
        };
        assert_eq!(
            (got.misc, got.ip, got.callchain.unwrap().len()),
            (0, Some(0), 0)
        );
        assert!(it.next().is_none());
    }
}
