//! The end of a file: every fd read once more for its final count and the samples the
//! kernel dropped (`read_format LOST`), the trailer built from the drain's accounting, and the
//! one summary line with its warnings (losses above 0.1%, throttling, samples of hrec itself).

use std::time::{SystemTime, UNIX_EPOCH};

use crate::data::{self, FinalCount, Trailer};
use crate::decode::ReadValues;
use crate::event::Attr;
use crate::event::attr::read;
use crate::event::plan::{Plan, Role};
use crate::kernel::process;

use super::account::Accounting;
use super::open::{self, Opened};
use super::session::Session;

pub(super) fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The samples the kernel dropped by the events' own count (`read_format LOST`): all of them,
/// and those of `--off-cpu`'s events (in the off-CPU rings).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct LostRead {
    pub(super) all: u64,
    pub(super) off_cpu: u64,
    /// Of `off_cpu`, the switch records'.
    pub(super) switches: u64,
}

impl LostRead {
    /// What was lost since `before` (the previous file's end).
    pub(super) fn since(self, before: LostRead) -> LostRead {
        LostRead {
            all: self.all.saturating_sub(before.all),
            off_cpu: self.off_cpu.saturating_sub(before.off_cpu),
            switches: self.switches.saturating_sub(before.switches),
        }
    }

    /// On-CPU samples lost.
    pub(super) fn on_cpu(self) -> u64 {
        self.all - self.off_cpu
    }
}

/// The trailer of a file from its counts (the workload's status is the caller's to add).
pub(super) fn trailer_of(
    acc: &Accounting,
    counts: Vec<FinalCount>,
    lost_read: LostRead,
    start_unix: u64,
) -> Trailer {
    let end_unix = unix_now_ns();
    let mut threads: Vec<data::ThreadCount> = acc
        .per_thread
        .iter()
        .map(|(&(pid, tid), &samples)| data::ThreadCount { pid, tid, samples })
        .collect();
    threads.sort_by_key(|t| (t.pid, t.tid));
    Trailer {
        end_time_unix_ns: end_unix,
        duration_ns: end_unix.saturating_sub(start_unix),
        sample_time: acc.time_range,
        records: acc.records,
        record_bytes: acc.bytes,
        samples: acc.samples(),
        samples_per_event: acc.samples_per_event.clone(),
        threads,
        self_samples: acc.self_samples,
        lost_records: acc.lost_records,
        lost_samples: acc.lost_samples,
        lost_samples_read: lost_read.all,
        off_cpu_lost_records: acc.off_cpu_lost_records,
        off_cpu_lost_samples: acc.off_cpu_lost_samples,
        off_cpu_lost_samples_read: lost_read.off_cpu,
        off_cpu_switches_lost_read: lost_read.switches,
        throttles: acc.throttles,
        unthrottles: acc.unthrottles,
        counts,
        ..Trailer::default()
    }
}

/// Reads every fd once more: final counts, and the samples the kernel dropped
/// (`read_format LOST`) even when no LOST record reached the buffer.
pub(super) fn final_counts(
    plan: &Plan,
    attrs: &[Attr],
    fds: &[open::OpenFd],
) -> (Vec<FinalCount>, LostRead) {
    let mut counts = Vec::new();
    let mut lost = LostRead::default();
    let mut buf = vec![0u8; 64 * 1024];
    for f in fds {
        let rf = attrs[f.event].read_format;
        if rf & read::GROUP != 0 && plan.events[f.event].leader != f.event {
            continue; // the leader's read covers the whole group
        }
        let Ok(n) = f.fd.read_raw(&mut buf) else {
            continue;
        };
        let Ok(values) = ReadValues::from_read(&buf[..n], rf) else {
            continue;
        };
        for e in values.iter() {
            let id = e.id.unwrap_or(f.id);
            let event = fds.iter().find(|x| x.id == id).map_or(f.event, |x| x.event);
            let n = e.lost.unwrap_or(0);
            lost.all += n;
            if open::in_off_cpu_ring(plan.events[event].role) {
                lost.off_cpu += n;
            }
            if plan.events[event].role == Role::Switches {
                lost.switches += n;
            }
            counts.push(FinalCount {
                event,
                id,
                cpu: f.slot.cpu,
                value: e.value,
                time_enabled: values.time_enabled.unwrap_or(0),
                time_running: values.time_running.unwrap_or(0),
            });
        }
    }
    (counts, lost)
}

/// The summary line and warnings; `shown` names where it went (the file, or a switched
/// series), `size` its bytes.
pub(super) fn summarize(
    s: &Session<'_>,
    o: &Opened,
    acc: &Accounting,
    lost_read: LostRead,
    size: u64,
    shown: &str,
    woken: u64,
) -> (String, Vec<String>) {
    // On-CPU samples: the stacks of `--off-cpu` are counted with the off-CPU intervals.
    let off_cpu_samples: u64 = s
        .plan
        .events
        .iter()
        .filter(|e| open::in_off_cpu_ring(e.role))
        .map(|e| acc.samples_per_event[e.index])
        .sum();
    let samples = acc.samples() - off_cpu_samples;
    let per_event: Vec<String> = s
        .plan
        .events
        .iter()
        .filter(|e| e.role == Role::Sampler)
        .map(|e| format!("{} {}", o.names[e.index], acc.samples_per_event[e.index]))
        .collect();
    let lost = acc.on_cpu_lost().max(lost_read.on_cpu());
    let bps = if samples > 0 {
        format!(", {:.1} bytes/sample", size as f64 / samples as f64)
    } else {
        String::new()
    };
    let summary = format!(
        "[ hrec record: woken up {woken} times; wrote {:.3} MB to {shown} ({samples} samples: {}; {} threads; {lost} lost{bps}) ]",
        size as f64 / 1e6,
        per_event.join(", "),
        acc.per_thread.len(),
    );
    let mut warnings = Vec::new();
    let total = samples + lost;
    if total > 0 && lost * 1000 > total {
        warnings.push(format!(
            "warning: {lost} of {total} samples ({:.2}%) were lost: the ring buffers filled faster than hrec drained them; use bigger buffers (-m {}) or a lower frequency (-F)",
            lost as f64 * 100.0 / total as f64,
            (s.mmap_pages.unwrap_or_else(open::default_data_pages) * 4).min(1 << 16)
        ));
    }
    let off_lost = acc.off_cpu_lost_samples.max(lost_read.off_cpu);
    if off_lost > 0 {
        let pages = open::off_cpu_pages(
            s.plan,
            s.mmap_pages.unwrap_or_else(open::default_data_pages),
        );
        warnings.push(format!(
            "warning: the kernel lost {off_lost} off-CPU records (switch records or stacks: their ring buffers were full); on-CPU samples have rings of their own and lost none of this; for more stacks use bigger rings (--off-cpu-mmap-pages {})",
            pages.saturating_mul(4).min(1 << 18)
        ));
    }
    if lost_read.switches > 0 {
        warnings.push(format!(
            "warning: the kernel lost {} switch records (their ring buffers were full): about {} off-CPU intervals are not recorded; use bigger rings (-m {}: theirs are four times as big)",
            lost_read.switches,
            lost_read.switches.div_ceil(2),
            (s.mmap_pages.unwrap_or_else(open::default_data_pages) * 4).min(1 << 16)
        ));
    }
    if acc.throttles > 0 {
        warnings.push(format!(
            "warning: the kernel throttled sampling {} times (kernel.perf_event_max_sample_rate); lower the frequency (-F) for even coverage",
            acc.throttles
        ));
    }
    warnings.extend(acc.chains_warning());
    if acc.self_samples > 0 {
        warnings.push(format!(
            "{} samples ({:.2}%) are of hrec itself (pid {}, stored in the file as recorder_pid)",
            acc.self_samples,
            acc.self_samples as f64 * 100.0 / samples.max(1) as f64,
            process::getpid()
        ));
    }
    (summary, warnings)
}
