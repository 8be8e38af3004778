//! `hrec stat`: counting events for a command (or CPUs, or processes), like `perf stat`.
//!
//! **Counters.** Every event is opened disabled, with `enable_on_exec` when hrec starts the
//! command (so hrec's own set-up is not counted) and with `inherit` (so threads and children
//! are), reading `TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING`. When the PMU has fewer counters
//! than events the kernel time-multiplexes them; a count is then scaled by
//! `enabled / running` and printed with the share of time it ran, as perf does.
//!
//! **Default events** are perf's: task-clock, context-switches, cpu-migrations, page-faults,
//! and cycles, instructions, branches, branch-misses on every core PMU (on hybrid parts one
//! line per PMU: `cpu_core/cycles/`, `cpu_atom/cycles/`). Without a hardware PMU the kernel
//! refuses the hardware ones, which print `<not supported>`; the software ones count for real.
//!
//! **TopDown** (`--topdown`) opens `{slots, topdown-*}` per PMU that has it: slots must lead
//! the group because the kernel computes each metric event's value from the PERF_METRICS
//! fractions times the leader's slots. Level 1 is normalised by the sum of the four level-1
//! values, level 2 split by subtraction (see [`crate::analysis::topdown`]).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::analysis::topdown::{TdCounts, TdEvent};
use crate::decode::ReadValues;
use crate::event::attr::{Attr, flag, read};
use crate::event::parse::EventError;
use crate::event::resolve;
use crate::kernel::process::{self, Epoll, Signals, Workload};
use crate::kernel::{self, EventFd};
use crate::pmu::{CpuList, Pmus};

/// perf stat's default software events.
pub const DEFAULT_SOFTWARE: [&str; 4] = [
    "task-clock",
    "context-switches",
    "cpu-migrations",
    "page-faults",
];
/// perf stat's default hardware events (per core PMU).
pub const DEFAULT_HARDWARE: [&str; 4] = ["cycles", "instructions", "branches", "branch-misses"];

/// What is counted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StatTarget {
    /// The command hrec starts.
    #[default]
    Workload,
    /// These CPUs, every task (`-a`, `-C`).
    Cpus(CpuList),
    /// These processes (`-p`).
    Pids(Vec<u32>),
}

/// `hrec stat` options.
#[derive(Debug, Clone, Default)]
pub struct StatOptions {
    /// `-e` strings (empty: the default set).
    pub events: Vec<String>,
    /// `--topdown`.
    pub topdown: bool,
    /// `--td-level` (1 or 2).
    pub td_level: u8,
    /// Target.
    pub target: StatTarget,
    /// `-I`: print every this many milliseconds.
    pub interval_ms: Option<u64>,
    /// `--record-tpebs`: precise samplers of the metrics' retire-latency events.
    pub tpebs: Vec<TpebsSampler>,
}

/// One `--record-tpebs` sampler: precise samples of an event with `WEIGHT_STRUCT`, whose
/// bits 63:48 carry each sampled instruction's retire latency (Timed PEBS), taken during the
/// counted run and restricted to its tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct TpebsSampler {
    /// The event's Intel name (the key of its latency).
    pub event: String,
    /// The sampling attr.
    pub attr: Attr,
}

/// One counter to open.
#[derive(Debug, Clone, PartialEq)]
pub struct Counter {
    /// Display name.
    pub name: String,
    /// PMU.
    pub pmu: Option<String>,
    /// The attr (counting: no sample period).
    pub attr: Attr,
    /// Index of the group leader (itself when alone).
    pub leader: usize,
    /// Its TopDown role.
    pub td: Option<TdEvent>,
}

/// Why stat cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatError {
    /// A bad event string.
    #[error(transparent)]
    Event(#[from] EventError),
    /// `--topdown` on a machine without it.
    #[error(
        "--topdown needs a PMU with TopDown (perf metrics: a `slots` event), and this machine has none ({have}); TopDown exists on Intel Ice Lake and later P-cores"
    )]
    NoTopDown {
        /// The core PMUs that exist.
        have: String,
    },
    /// The command could not be started.
    #[error(transparent)]
    Spawn(#[from] process::SpawnError),
    /// A system call failed.
    #[error("{what}")]
    Os {
        /// What was being done.
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// perf_event_paranoid refuses even user-only counting.
    #[error(
        "not allowed to count {event} (errno {errno}): kernel.perf_event_paranoid is too strict; run as root or lower it (sysctl kernel.perf_event_paranoid=1)"
    )]
    Denied {
        /// Event.
        event: String,
        /// errno.
        errno: i32,
    },
}

/// The `-e` strings stat resolves: the given ones, or perf's defaults, plus the TopDown
/// groups with `--topdown`.
pub fn event_strings(pmus: &Pmus, o: &StatOptions) -> Result<Vec<String>, StatError> {
    let mut v: Vec<String> = if o.events.is_empty() && !o.topdown {
        DEFAULT_SOFTWARE
            .iter()
            .chain(DEFAULT_HARDWARE.iter())
            .map(|s| s.to_string())
            .collect()
    } else {
        o.events.clone()
    };
    if o.topdown {
        let core = pmus.core_pmus();
        let hybrid = core.len() > 1;
        let mut any = false;
        for p in &core {
            let metrics = resolve::topdown_metric_names(p);
            if metrics.is_empty() {
                continue;
            }
            any = true;
            let q = |ev: &str| {
                if hybrid {
                    format!("{}/{ev}/", p.name)
                } else {
                    ev.to_string()
                }
            };
            let mut members = vec![q("slots")];
            members.extend(
                metrics
                    .iter()
                    .filter(|(n, _)| o.td_level >= 2 || !is_level2(n))
                    .map(|(n, _)| q(n)),
            );
            v.push(format!("{{{}}}", members.join(",")));
        }
        if !any {
            let have: Vec<&str> = core.iter().map(|p| p.name.as_str()).collect();
            return Err(StatError::NoTopDown {
                have: if have.is_empty() {
                    "no core PMU at all: a VM or a non-x86 machine".to_string()
                } else {
                    format!("core PMUs: {}", have.join(", "))
                },
            });
        }
    }
    Ok(v)
}

fn is_level2(name: &str) -> bool {
    matches!(
        name,
        "topdown-heavy-ops" | "topdown-br-mispredict" | "topdown-fetch-lat" | "topdown-mem-bound"
    )
}

/// Resolves the counters, leaders first, with the counting attr flags set.
pub fn plan(pmus: &Pmus, o: &StatOptions) -> Result<Vec<Counter>, StatError> {
    let strings = event_strings(pmus, o)?;
    let res = resolve::resolve(pmus, &strings)?;
    let mut out = Vec::new();
    for g in &res.groups {
        let leader = out.len();
        for (i, r) in g.events.iter().enumerate() {
            let mut a = r.attr;
            a.sample_period_or_freq = 0;
            a.sample_type = 0;
            a.set(flag::FREQ, false);
            a.set_precise_ip(0);
            a.read_format = read::TOTAL_TIME_ENABLED | read::TOTAL_TIME_RUNNING;
            a.set(flag::DISABLED, i == 0);
            a.set(
                flag::ENABLE_ON_EXEC,
                i == 0 && o.target == StatTarget::Workload,
            );
            a.set(flag::INHERIT, !matches!(o.target, StatTarget::Cpus(_)));
            out.push(Counter {
                name: r.name.clone(),
                pmu: r.pmu.clone(),
                attr: a,
                leader,
                td: TdEvent::from_name(&r.name),
            });
        }
    }
    Ok(out)
}

/// A counter's result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Count {
    /// The kernel refused the event (errno).
    NotSupported(i32),
    /// Opened but never scheduled (running time 0).
    NotCounted,
    /// Counted.
    Value {
        /// Scaled count (`raw * enabled / running` summed over fds).
        scaled: f64,
        /// Raw count.
        raw: u64,
        /// Time enabled (ns, summed over fds).
        enabled: u64,
        /// Time running (ns).
        running: u64,
    },
}

impl Count {
    /// The scaled value, when counted.
    pub fn value(&self) -> Option<f64> {
        match self {
            Count::Value { scaled, .. } => Some(*scaled),
            _ => None,
        }
    }

    /// Share of the enabled time the counter ran (100 without multiplexing).
    pub fn running_pct(&self) -> f64 {
        match self {
            Count::Value {
                enabled, running, ..
            } if *enabled > 0 => 100.0 * *running as f64 / *enabled as f64,
            _ => 100.0,
        }
    }

    /// Sums raw reads: (value, enabled, running) per fd.
    pub fn from_reads(reads: &[(u64, u64, u64)]) -> Count {
        let (mut raw, mut enabled, mut running, mut scaled) = (0u64, 0u64, 0u64, 0f64);
        for &(v, e, r) in reads {
            raw += v;
            enabled += e;
            running += r;
            if r > 0 {
                scaled += v as f64 * e as f64 / r as f64;
            }
        }
        if running == 0 {
            Count::NotCounted
        } else {
            Count::Value {
                scaled,
                raw,
                enabled,
                running,
            }
        }
    }

    /// The difference from an earlier reading (for `-I`).
    pub fn since(&self, earlier: &Count) -> Count {
        match (self, earlier) {
            (
                Count::Value {
                    raw,
                    enabled,
                    running,
                    ..
                },
                Count::Value {
                    raw: r0,
                    enabled: e0,
                    running: n0,
                    ..
                },
            ) => Count::from_reads(&[(
                raw.saturating_sub(*r0),
                enabled.saturating_sub(*e0),
                running.saturating_sub(*n0),
            )]),
            (now, _) => *now,
        }
    }
}

/// The TopDown slot counts of counted TopDown counters of one PMU.
pub fn topdown_counts(counters: &[Counter], counts: &[Count], pmu: Option<&str>) -> TdCounts {
    let mut td = TdCounts::default();
    for (c, n) in counters.iter().zip(counts) {
        if let (Some(k), Some(v)) = (c.td, n.value())
            && c.pmu.as_deref() == pmu
        {
            td.0[k as usize] += v.round() as u64;
        }
    }
    td
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct StatResult {
    /// Counters, in plan order.
    pub counters: Vec<Counter>,
    /// Final counts.
    pub counts: Vec<Count>,
    /// Wall time from start to the end of the workload.
    pub elapsed: Duration,
    /// Children's user and system CPU seconds.
    pub user_sys: (f64, f64),
    /// The workload's exit code (shell convention), if hrec ran one.
    pub exit_code: Option<i32>,
    /// One-line notes (fallbacks).
    pub notes: Vec<String>,
    /// Retire latencies sampled by `--record-tpebs`.
    pub tpebs: super::tpebs::Collector,
}

/// The open `--record-tpebs` samplers: one ring buffer per sampler and task/CPU.
struct Samplers {
    rings: Vec<(kernel::RingBuffer, EventFd)>,
    names: std::collections::HashMap<u64, String>,
    decoder: crate::decode::Decoder,
    buf: Vec<u8>,
}

impl Samplers {
    fn open(samplers: &[TpebsSampler], places: &[(i32, i32)], notes: &mut Vec<String>) -> Samplers {
        let mut rings = Vec::new();
        let mut names = std::collections::HashMap::new();
        let mut ids = Vec::new();
        for s in samplers {
            for &(pid, cpu) in places {
                let fd = match kernel::open(&s.attr, pid, cpu, None) {
                    Ok(fd) => fd,
                    Err(e) => {
                        notes.push(format!(
                            "--record-tpebs: cannot sample {} ({}), so its retire latency comes from another source",
                            s.event, e.source
                        ));
                        break;
                    }
                };
                let ring = match kernel::RingBuffer::new(&fd, 16) {
                    Ok(r) => r,
                    Err(e) => {
                        notes.push(format!(
                            "--record-tpebs: cannot map a ring buffer for {}: {e}",
                            s.event
                        ));
                        break;
                    }
                };
                if let Ok(id) = fd.id() {
                    names.insert(id, s.event.clone());
                    ids.push((id, s.attr));
                }
                rings.push((ring, fd));
            }
        }
        Samplers {
            rings,
            names,
            decoder: crate::decode::Decoder::new(ids),
            buf: Vec::new(),
        }
    }

    /// Moves every sample in the rings into the collector.
    fn drain(&mut self, into: &mut super::tpebs::Collector) {
        for (ring, _) in &mut self.rings {
            self.buf.clear();
            if ring.drain(&mut self.buf).is_err() {
                continue;
            }
            for raw in crate::decode::records(&self.buf).flatten() {
                if let Ok(crate::decode::Record::Sample(smp)) = self.decoder.decode(&raw)
                    && let (Some(w), Some(id)) = (smp.weight_struct(), smp.event_id())
                    && let Some(name) = self.names.get(&id)
                {
                    into.add(name, smp.time.unwrap_or(0), w.retire_lat);
                }
            }
        }
    }
}

struct Opened {
    /// Per counter: its fds (one per task/CPU); empty when not supported.
    fds: Vec<Vec<EventFd>>,
    errors: Vec<Option<i32>>,
}

fn open_all(
    counters: &mut [Counter],
    places: &[(i32, i32)],
    notes: &mut Vec<String>,
) -> Result<Opened, StatError> {
    let mut fds: Vec<Vec<EventFd>> = (0..counters.len()).map(|_| Vec::new()).collect();
    let mut errors = vec![None; counters.len()];
    for i in 0..counters.len() {
        let leader = counters[i].leader;
        if leader != i && errors[leader].is_some() {
            errors[i] = errors[leader];
            continue;
        }
        for (k, &(pid, cpu)) in places.iter().enumerate() {
            let group = (leader != i).then(|| &fds[leader][k]);
            let mut attempt = kernel::open(&counters[i].attr, pid, cpu, group);
            if let Err(e) = &attempt
                && matches!(e.errno(), libc::EACCES | libc::EPERM)
                && !counters[i].attr.has(flag::EXCLUDE_KERNEL)
            {
                // perf's fallback under perf_event_paranoid: count user space only.
                let a = &mut counters[i].attr;
                a.set(flag::EXCLUDE_KERNEL, true);
                a.set(flag::EXCLUDE_HV, true);
                notes.push(format!(
                    "{}: counting user space only (kernel.perf_event_paranoid does not allow kernel counting)",
                    counters[i].name
                ));
                attempt = kernel::open(&counters[i].attr, pid, cpu, group);
            }
            match attempt {
                Ok(fd) => fds[i].push(fd),
                Err(e) => {
                    let errno = e.errno();
                    if matches!(errno, libc::EACCES | libc::EPERM) {
                        return Err(StatError::Denied {
                            event: counters[i].name.clone(),
                            errno,
                        });
                    }
                    if errno == libc::EMFILE {
                        return Err(StatError::Os {
                            what: format!(
                                "too many open files opening {} (raise it with ulimit -n)",
                                counters[i].name
                            ),
                            source: e.source,
                        });
                    }
                    errors[i] = Some(errno);
                    fds[i].clear();
                    break;
                }
            }
        }
    }
    Ok(Opened { fds, errors })
}

fn read_counts(o: &Opened) -> Vec<Count> {
    let mut buf = [0u8; 64];
    let rf = read::TOTAL_TIME_ENABLED | read::TOTAL_TIME_RUNNING;
    o.fds
        .iter()
        .zip(&o.errors)
        .map(|(fds, err)| {
            if let Some(e) = err {
                return Count::NotSupported(*e);
            }
            let reads: Vec<(u64, u64, u64)> = fds
                .iter()
                .filter_map(|fd| {
                    let n = fd.read_raw(&mut buf).ok()?;
                    let v = ReadValues::from_read(&buf[..n], rf).ok()?;
                    Some((
                        v.get(0)?.value,
                        v.time_enabled.unwrap_or(0),
                        v.time_running.unwrap_or(0),
                    ))
                })
                .collect();
            Count::from_reads(&reads)
        })
        .collect()
}

/// Called with each `-I` period: time since start, the counters, their counts in the period.
pub type IntervalFn<'a> = dyn FnMut(Duration, &[Counter], &[Count]) + 'a;

/// Counts `command` (or the target) and returns the counts; `interval` is called with each
/// `-I` period's counts (time since start, counts in the period).
pub fn run(
    pmus: &Pmus,
    o: &StatOptions,
    command: &[String],
    interval: &mut IntervalFn<'_>,
) -> Result<StatResult, StatError> {
    let mut counters = plan(pmus, o)?;
    let mut notes = Vec::new();
    let signals =
        Signals::catch(&[libc::SIGINT, libc::SIGTERM, libc::SIGCHLD]).map_err(|source| {
            StatError::Os {
                what: "cannot install signal handlers".into(),
                source,
            }
        })?;
    let workload = match o.target {
        StatTarget::Workload => Some(Workload::spawn(command)?),
        _ => None,
    };
    let places: Vec<(i32, i32)> = match (&o.target, &workload) {
        (StatTarget::Workload, Some(w)) => vec![(w.pid(), -1)],
        (StatTarget::Cpus(list), _) => list.cpus().iter().map(|&c| (-1, c as i32)).collect(),
        (StatTarget::Pids(p), _) => p.iter().map(|&p| (p as i32, -1)).collect(),
        _ => Vec::new(),
    };
    let opened = match open_all(&mut counters, &places, &mut notes) {
        Ok(o) => o,
        Err(e) => {
            if let Some(w) = workload {
                w.abort();
            }
            return Err(e);
        }
    };
    // The kernel maps no ring buffer for an inherited per-task event (cpu -1), so samplers
    // of a task are opened once per CPU, as perf record does.
    let online: Vec<i32> = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| t.trim().parse::<CpuList>().ok())
        .map(|l| l.cpus().iter().map(|&c| c as i32).collect())
        .unwrap_or_else(|| {
            (0..std::thread::available_parallelism().map_or(1, |n| n.get()) as i32).collect()
        });
    let sampler_places: Vec<(i32, i32)> = places
        .iter()
        .flat_map(|&(pid, cpu)| {
            if cpu == -1 {
                online.iter().map(|&c| (pid, c)).collect::<Vec<_>>()
            } else {
                vec![(pid, cpu)]
            }
        })
        .collect();
    let mut samplers = Samplers::open(&o.tpebs, &sampler_places, &mut notes);
    let mut tpebs = super::tpebs::Collector::new();
    let start = Instant::now();
    let child = match workload {
        Some(w) => Some(w.start()?),
        None => {
            for (i, fds) in opened.fds.iter().enumerate() {
                if counters[i].leader == i {
                    for fd in fds {
                        let _ = fd.enable(true);
                    }
                }
            }
            for (_, fd) in &samplers.rings {
                let _ = fd.enable(false);
            }
            None
        }
    };
    let epoll = Epoll::new().map_err(|source| StatError::Os {
        what: "epoll".into(),
        source,
    })?;
    let _ = epoll.add(signals.fd(), 0);
    let mut events = Vec::new();
    let mut last = vec![Count::NotCounted; counters.len()];
    let mut next_tick = o.interval_ms.map(|ms| start + Duration::from_millis(ms));
    let mut exit_code = None;
    let mut interrupted = 0;
    loop {
        let timeout = match next_tick {
            Some(t) => t.saturating_duration_since(Instant::now()).as_millis() as i32,
            None => 200,
        };
        let _ = epoll.wait(timeout.max(0), &mut events);
        samplers.drain(&mut tpebs);
        let sigs = signals.take();
        let stop = (1u64 << libc::SIGINT) | (1u64 << libc::SIGTERM);
        if sigs & stop != 0 {
            interrupted += 1;
            match child {
                Some(pid) => process::kill(
                    pid,
                    if sigs & (1 << libc::SIGINT) != 0 {
                        libc::SIGINT
                    } else {
                        libc::SIGTERM
                    },
                ),
                None => break,
            }
            if interrupted > 1
                && let Some(pid) = child
            {
                process::kill(pid, libc::SIGKILL);
            }
        }
        if let Some(pid) = child
            && let Ok(Some(status)) = process::wait(pid, true)
        {
            exit_code = Some(status.shell_code());
            break;
        }
        if let StatTarget::Pids(p) = &o.target
            && p.iter()
                .all(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
        {
            break;
        }
        if let (Some(t), Some(ms)) = (next_tick, o.interval_ms)
            && Instant::now() >= t
        {
            let now = read_counts(&opened);
            let delta: Vec<Count> = now.iter().zip(&last).map(|(n, l)| n.since(l)).collect();
            interval(start.elapsed(), &counters, &delta);
            last = now;
            next_tick = Some(t + Duration::from_millis(ms));
        }
    }
    let elapsed = start.elapsed();
    let counts = read_counts(&opened);
    samplers.drain(&mut tpebs);
    Ok(StatResult {
        counters,
        counts,
        elapsed,
        user_sys: process::children_cpu_time(),
        exit_code,
        notes,
        tpebs,
    })
}

/// Counts per PMU name, for printing TopDown per PMU.
pub fn topdown_pmus(counters: &[Counter]) -> Vec<Option<String>> {
    let mut seen: HashMap<Option<String>, ()> = HashMap::new();
    let mut out = Vec::new();
    for c in counters.iter().filter(|c| c.td.is_some()) {
        if seen.insert(c.pmu.clone(), ()).is_none() {
            out.push(c.pmu.clone());
        }
    }
    out
}
