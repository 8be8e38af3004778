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
//! `-d`, `-dd`, `-ddd` append perf's cache events ([`DETAILED`]) to them, or to the `-e`
//! events; `-n` (a null run) counts neither the defaults nor those, only what `-e` names.
//!
//! **Targets and aggregation.** A command is counted from its exec (`enable_on_exec`).
//! `-a`/`-C` open one counter per CPU for every task; `-p` one per thread the processes have
//! (`inherit` adds the threads they start), `-t` one per thread given; with a command these
//! count for as long as the command runs, as in perf. Counts are added up over all places,
//! or per aggregate: `-A` per CPU, `--per-core` per (socket, die, core) and `--per-socket`
//! per package from sysfs topology, `--per-thread` per thread. `-I` prints the difference
//! of each interval, derived metrics over the interval's own length, the last (shorter)
//! interval when the run ends, and no summary.
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

/// perf's `-d`, `-dd`, `-ddd` cache events, each level adding its set to the ones before
/// (`detailed_attrs`, `very_detailed_attrs`, `very_very_detailed_attrs` in perf 6.1): L1 data
/// and last-level cache loads; L1 instruction cache, data and instruction TLB; L1 data
/// prefetches.
pub const DETAILED: [&[&str]; 3] = [
    &[
        "L1-dcache-loads",
        "L1-dcache-load-misses",
        "LLC-loads",
        "LLC-load-misses",
    ],
    &[
        "L1-icache-loads",
        "L1-icache-load-misses",
        "dTLB-loads",
        "dTLB-load-misses",
        "iTLB-loads",
        "iTLB-load-misses",
    ],
    &["L1-dcache-prefetches", "L1-dcache-prefetch-misses"],
];

/// What is counted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StatTarget {
    /// The command hrec starts.
    #[default]
    Workload,
    /// Every online CPU, every task (`-a`); made [`StatTarget::Cpus`] of the online CPUs
    /// before counting.
    AllCpus,
    /// These CPUs, every task (`-a`, `-C`).
    Cpus(CpuList),
    /// These processes (`-p`): every thread they have, and the threads they start.
    Pids(Vec<u32>),
    /// These threads (`-t`).
    Tids(Vec<u32>),
}

/// How counts are added up before printing (perf's aggregation modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Aggr {
    /// One value per event (the default).
    #[default]
    Global,
    /// `-A`/`--no-aggr`: one per CPU.
    PerCpu,
    /// `--per-core`: one per physical core (its SMT siblings added up).
    PerCore,
    /// `--per-socket`: one per package.
    PerSocket,
    /// `--per-thread`: one per thread.
    PerThread,
}

/// What one aggregated value covers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Label {
    /// A CPU.
    Cpu(u32),
    /// A core: socket, die, core, and how many CPUs were added up.
    Core {
        /// Package.
        socket: u32,
        /// Die.
        die: u32,
        /// Core.
        core: u32,
        /// CPUs in it.
        cpus: usize,
    },
    /// A socket and how many CPUs were added up.
    Socket {
        /// Package.
        socket: u32,
        /// CPUs in it.
        cpus: usize,
    },
    /// A thread and its name when it was opened.
    Thread {
        /// `comm`.
        comm: String,
        /// Thread id.
        tid: u32,
    },
}

/// The counts of one aggregate (a CPU, core, socket or thread).
#[derive(Debug, Clone)]
pub struct Group {
    /// What it covers.
    pub label: Label,
    /// Per counter, in plan order.
    pub counts: Vec<Count>,
}

/// Where CPUs sit: `cpu -> (socket, die, core)`, from
/// `devices/system/cpu/cpuN/topology/{physical_package_id,die_id,core_id}` under a sysfs root.
/// A CPU without topology files is its own core on socket 0.
pub fn cpu_topology(sysfs_root: &std::path::Path, cpus: &[u32]) -> HashMap<u32, (u32, u32, u32)> {
    let read = |cpu: u32, f: &str| {
        std::fs::read_to_string(
            sysfs_root.join(format!("devices/system/cpu/cpu{cpu}/topology/{f}")),
        )
        .ok()
        .and_then(|t| t.trim().parse::<i64>().ok())
        .and_then(|v| u32::try_from(v).ok())
    };
    cpus.iter()
        .map(|&c| {
            let socket = read(c, "physical_package_id").unwrap_or(0);
            let die = read(c, "die_id").unwrap_or(0);
            let core = read(c, "core_id").unwrap_or(c);
            (c, (socket, die, core))
        })
        .collect()
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
    /// `--interval-count`: stop after this many intervals.
    pub interval_count: Option<u64>,
    /// `-A`, `--per-core`, `--per-socket`, `--per-thread`.
    pub aggr: Aggr,
    /// Where the CPUs sit, for `--per-core`/`--per-socket` ([`cpu_topology`]).
    pub topology: HashMap<u32, (u32, u32, u32)>,
    /// The CPUs that are online (a `-C` list must be among them).
    pub online: Option<CpuList>,
    /// `/proc`, for the threads of `-p` and their names.
    pub procfs_root: std::path::PathBuf,
    /// `--record-tpebs`: precise samplers of the metrics' retire-latency events.
    pub tpebs: Vec<TpebsSampler>,
    /// `-d` given this many times (perf uses up to three): [`DETAILED`] sets added after the
    /// other events, `-e` ones included.
    pub detailed: u8,
    /// `-n`/`--null`: no default and no detailed events, only the wall time (and the `-e`
    /// events, which perf counts all the same).
    pub null_run: bool,
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
    /// `-p`/`-t` of a task that does not exist.
    #[error("{0} does not exist (check the id with ps)")]
    NoTask(String),
    /// A `-C` CPU that is not online.
    #[error("CPU {cpu} in -C {list} is not online (online CPUs: {online})")]
    CpuOffline {
        /// The CPU.
        cpu: u32,
        /// The user's list.
        list: String,
        /// Online CPUs.
        online: String,
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
    let mut v: Vec<String> = if o.events.is_empty() && !o.topdown && !o.null_run {
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
    if !o.null_run {
        for set in DETAILED.iter().take(usize::from(o.detailed)) {
            v.extend(set.iter().map(|s| s.to_string()));
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
            a.set(
                flag::INHERIT,
                !matches!(o.target, StatTarget::Cpus(_) | StatTarget::AllCpus),
            );
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
    /// Final counts, all places added up.
    pub counts: Vec<Count>,
    /// Final counts per aggregate (empty without `-A`/`--per-*`).
    pub groups: Vec<Group>,
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
    /// Whether SIGINT or SIGTERM ended the run (`-r` repeats no further).
    pub interrupted: bool,
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

/// Every fd's reading, `[counter][place]`: (value, enabled, running); `None` for an event
/// the kernel refused (with its errno) or an fd that did not read.
type Readings = Vec<Result<Vec<Option<(u64, u64, u64)>>, i32>>;

fn read_all(o: &Opened) -> Readings {
    let mut buf = [0u8; 64];
    let rf = read::TOTAL_TIME_ENABLED | read::TOTAL_TIME_RUNNING;
    o.fds
        .iter()
        .zip(&o.errors)
        .map(|(fds, err)| {
            if let Some(e) = err {
                return Err(*e);
            }
            Ok(fds
                .iter()
                .map(|fd| {
                    let n = fd.read_raw(&mut buf).ok()?;
                    let v = ReadValues::from_read(&buf[..n], rf).ok()?;
                    Some((
                        v.get(0)?.value,
                        v.time_enabled.unwrap_or(0),
                        v.time_running.unwrap_or(0),
                    ))
                })
                .collect())
        })
        .collect()
}

/// The readings added up per aggregate (`key[place]`, `n` aggregates), minus an earlier
/// reading when given (an interval).
fn aggregate(
    now: &Readings,
    before: Option<&Readings>,
    key: &[usize],
    n: usize,
) -> Vec<Vec<Count>> {
    let mut out = vec![Vec::with_capacity(now.len()); n];
    for (c, fds) in now.iter().enumerate() {
        match fds {
            Err(e) => out.iter_mut().for_each(|g| g.push(Count::NotSupported(*e))),
            Ok(fds) => {
                let mut per: Vec<Vec<(u64, u64, u64)>> = vec![Vec::new(); n];
                for (place, r) in fds.iter().enumerate() {
                    let Some(&(v, e, r)) = r.as_ref() else {
                        continue;
                    };
                    let (v0, e0, r0) = before
                        .and_then(|b| b.get(c)?.as_ref().ok()?.get(place).copied().flatten())
                        .unwrap_or((0, 0, 0));
                    if let Some(&k) = key.get(place)
                        && let Some(g) = per.get_mut(k)
                    {
                        g.push((
                            v.saturating_sub(v0),
                            e.saturating_sub(e0),
                            r.saturating_sub(r0),
                        ));
                    }
                }
                for (g, reads) in out.iter_mut().zip(per) {
                    g.push(Count::from_reads(&reads));
                }
            }
        }
    }
    out
}

/// One `-I` interval.
#[derive(Debug)]
pub struct Interval<'a> {
    /// Time since the start, at the end of the interval.
    pub at: Duration,
    /// The interval's length (the last one is shorter).
    pub len: Duration,
    /// Its number, from 0.
    pub index: u64,
    /// The counters.
    pub counters: &'a [Counter],
    /// The counts in the interval, all places added up.
    pub counts: &'a [Count],
    /// Per aggregate (empty without `-A`/`--per-*`).
    pub groups: &'a [Group],
}

/// Called with each `-I` interval.
pub type IntervalFn<'a> = dyn FnMut(&Interval<'_>) + 'a;

/// The threads of the processes (from `/proc/PID/task`), sorted; an error names a missing one.
fn threads_of(procfs: &std::path::Path, pids: &[u32]) -> Result<Vec<u32>, StatError> {
    let mut out = Vec::new();
    for &pid in pids {
        let rd = std::fs::read_dir(procfs.join(format!("{pid}/task")))
            .map_err(|_| StatError::NoTask(format!("process {pid}")))?;
        let mut tids: Vec<u32> = rd
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        tids.sort_unstable();
        out.extend(tids);
    }
    Ok(out)
}

/// A thread's name from `/proc/TID/comm` (`-` when gone).
fn comm_of(procfs: &std::path::Path, tid: u32) -> String {
    std::fs::read_to_string(procfs.join(format!("{tid}/comm")))
        .map(|c| c.trim_end_matches('\n').to_string())
        .unwrap_or_else(|_| "-".into())
}

/// Where the counters are opened, `(pid, cpu)`; the aggregate of each place (an index into
/// the labels); the labels (none without `-A`/`--per-*`).
type Places = (Vec<(i32, i32)>, Vec<usize>, Vec<Label>);

/// Where to open the counters and the aggregate of each place.
fn places(o: &StatOptions, child: Option<i32>) -> Result<Places, StatError> {
    let per_thread = |tids: Vec<u32>| {
        let labels: Vec<Label> = tids
            .iter()
            .map(|&tid| Label::Thread {
                comm: comm_of(&o.procfs_root, tid),
                tid,
            })
            .collect();
        let places = tids.iter().map(|&t| (t as i32, -1)).collect();
        (places, (0..tids.len()).collect(), labels)
    };
    Ok(match &o.target {
        // -a: every online CPU (the caller usually resolved it already).
        StatTarget::AllCpus => {
            return cpu_places(o, &o.online.clone().unwrap_or_default(), &per_thread);
        }
        StatTarget::Cpus(list) => return cpu_places(o, list, &per_thread),
        StatTarget::Workload => (
            vec![(
                child.ok_or_else(|| StatError::NoTask("the command".into()))?,
                -1,
            )],
            vec![0],
            Vec::new(),
        ),
        StatTarget::Pids(pids) => {
            let tids = threads_of(&o.procfs_root, pids)?;
            if o.aggr == Aggr::PerThread {
                per_thread(tids)
            } else {
                let n = tids.len();
                (
                    tids.iter().map(|&t| (t as i32, -1)).collect(),
                    vec![0; n],
                    Vec::new(),
                )
            }
        }
        StatTarget::Tids(tids) => {
            for &t in tids {
                if !o.procfs_root.join(t.to_string()).exists() {
                    return Err(StatError::NoTask(format!("thread {t}")));
                }
            }
            if o.aggr == Aggr::PerThread {
                per_thread(tids.clone())
            } else {
                let n = tids.len();
                (
                    tids.iter().map(|&t| (t as i32, -1)).collect(),
                    vec![0; n],
                    Vec::new(),
                )
            }
        }
    })
}

/// The places of `-a`/`-C` (one per CPU of `list`, or every thread with `--per-thread`).
fn cpu_places(
    o: &StatOptions,
    list: &CpuList,
    per_thread: &dyn Fn(Vec<u32>) -> Places,
) -> Result<Places, StatError> {
    if let Some(online) = &o.online
        && let Some(&cpu) = list.cpus().iter().find(|&&c| !online.contains(c))
    {
        return Err(StatError::CpuOffline {
            cpu,
            list: list.to_string(),
            online: online.to_string(),
        });
    }
    let cpus = list.cpus();
    if o.aggr == Aggr::PerThread {
        // Every thread running now, on any CPU (perf's `-a --per-thread`).
        let pids: Vec<u32> = std::fs::read_dir(&o.procfs_root)
            .map(|rd| {
                rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        let mut tids = Vec::new();
        for pid in pids {
            tids.extend(threads_of(&o.procfs_root, &[pid]).unwrap_or_default());
        }
        tids.sort_unstable();
        return Ok(per_thread(tids));
    }
    let places: Vec<(i32, i32)> = cpus.iter().map(|&c| (-1, c as i32)).collect();
    let where_ = |c: u32| o.topology.get(&c).copied().unwrap_or((0, 0, c));
    // The aggregate of each CPU; aggregates in the order of their keys (socket, die, core).
    let keyed: Vec<Label> = cpus
        .iter()
        .map(|&c| {
            let (socket, die, core) = where_(c);
            match o.aggr {
                Aggr::PerCpu => Label::Cpu(c),
                Aggr::PerCore => Label::Core {
                    socket,
                    die,
                    core,
                    cpus: 0,
                },
                Aggr::PerSocket => Label::Socket { socket, cpus: 0 },
                Aggr::Global | Aggr::PerThread => Label::Cpu(0),
            }
        })
        .collect();
    if o.aggr == Aggr::Global {
        return Ok((places, vec![0; cpus.len()], Vec::new()));
    }
    let mut labels: Vec<Label> = keyed.clone();
    labels.sort();
    labels.dedup();
    let key: Vec<usize> = keyed
        .iter()
        .map(|l| labels.binary_search(l).unwrap_or(0))
        .collect();
    for (i, l) in labels.iter_mut().enumerate() {
        let n = key.iter().filter(|&&k| k == i).count();
        match l {
            Label::Core { cpus, .. } | Label::Socket { cpus, .. } => *cpus = n,
            _ => {}
        }
    }
    Ok((places, key, labels))
}

/// Counts `command` (or the target; with both, the target for as long as the command runs)
/// and returns the counts; `interval` is called with each `-I` interval, the last (shorter)
/// one included.
pub fn run(
    pmus: &Pmus,
    o: &StatOptions,
    command: &[String],
    interval: &mut IntervalFn<'_>,
) -> Result<StatResult, StatError> {
    let mut counters = plan(pmus, o)?;
    let mut notes = Vec::new();
    let signals =
        Signals::catch(&[libc::SIGINT, libc::SIGTERM, libc::SIGCHLD], &[]).map_err(|source| {
            StatError::Os {
                what: "cannot install signal handlers".into(),
                source,
            }
        })?;
    // With -a/-C/-p/-t a command only sets how long to count, as in perf.
    let workload = if command.is_empty() {
        None
    } else {
        Some(Workload::spawn(command)?)
    };
    let abort = |w: Option<Workload>, e: StatError| {
        if let Some(w) = w {
            w.abort();
        }
        Err(e)
    };
    let (places, key, labels) = match places(o, workload.as_ref().map(Workload::pid)) {
        Ok(p) => p,
        Err(e) => return abort(workload, e),
    };
    let opened = match open_all(&mut counters, &places, &mut notes) {
        Ok(o) => o,
        Err(e) => return abort(workload, e),
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
    // Events not on the command (-a, -C, -p, -t) start now; on the command, at its exec.
    if o.target != StatTarget::Workload {
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
    }
    let start = Instant::now();
    let child = match workload {
        Some(w) => Some(w.start()?),
        None => None,
    };
    let epoll = Epoll::new().map_err(|source| StatError::Os {
        what: "epoll".into(),
        source,
    })?;
    let _ = epoll.add(signals.fd(), 0);
    let mut events = Vec::new();
    let n_groups = labels.len().max(1);
    // The readings at the end of the last interval, and when that was.
    let mut last: (Option<Readings>, Duration) = (None, Duration::ZERO);
    let mut ticks = 0u64;
    let mut next_tick = o.interval_ms.map(|ms| start + Duration::from_millis(ms));
    let mut exit_code = None;
    let mut interrupted = 0;
    let mut emit =
        |now: Readings, last: &mut (Option<Readings>, Duration), at: Duration, index: u64| {
            let groups = aggregate(&now, last.0.as_ref(), &key, n_groups);
            let total = aggregate(&now, last.0.as_ref(), &vec![0; key.len()], 1);
            let groups: Vec<Group> = labels
                .iter()
                .cloned()
                .zip(groups)
                .map(|(label, counts)| Group { label, counts })
                .collect();
            interval(&Interval {
                at,
                len: at.saturating_sub(last.1),
                index,
                counters: &counters,
                counts: &total[0],
                groups: &groups,
            });
            *last = (Some(now), at);
        };
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
        // -p/-t without a command end when every task they follow has exited.
        let gone = |ids: &[u32]| {
            ids.iter()
                .all(|id| !o.procfs_root.join(id.to_string()).exists())
        };
        if child.is_none()
            && match &o.target {
                StatTarget::Pids(p) => gone(p),
                StatTarget::Tids(t) => gone(t),
                _ => false,
            }
        {
            break;
        }
        if let (Some(t), Some(ms)) = (next_tick, o.interval_ms)
            && Instant::now() >= t
        {
            emit(read_all(&opened), &mut last, start.elapsed(), ticks);
            ticks += 1;
            next_tick = Some(t + Duration::from_millis(ms));
            if o.interval_count.is_some_and(|n| ticks >= n) {
                // --interval-count: done; a command hrec started is asked to end (hrec
                // ended it, so its status is not the run's).
                if let Some(pid) = child {
                    process::kill(pid, libc::SIGTERM);
                    let _ = process::wait(pid, false);
                }
                break;
            }
        }
    }
    let elapsed = start.elapsed();
    let now = read_all(&opened);
    // -I: what the last (partial) interval counted, unless --interval-count ended the run.
    if o.interval_ms.is_some() && o.interval_count.is_none_or(|n| ticks < n) && elapsed > last.1 {
        emit(now.clone(), &mut last, elapsed, ticks);
    }
    let counts = aggregate(&now, None, &vec![0; key.len()], 1)
        .pop()
        .unwrap_or_default();
    let groups = labels
        .into_iter()
        .zip(aggregate(&now, None, &key, n_groups))
        .map(|(label, counts)| Group { label, counts })
        .collect();
    samplers.drain(&mut tpebs);
    Ok(StatResult {
        counters,
        counts,
        groups,
        elapsed,
        user_sys: process::children_cpu_time(),
        exit_code,
        notes,
        tpebs,
        interrupted: interrupted > 0,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Two sockets of one core each, two SMT siblings per core; CPU 4 has no topology files.
    fn topology() -> (tempfile::TempDir, HashMap<u32, (u32, u32, u32)>) {
        let dir = tempfile::tempdir().unwrap();
        for (cpu, socket, core) in [(0, 0, 0), (1, 1, 0), (2, 0, 0), (3, 1, 0)] {
            let t = dir
                .path()
                .join(format!("devices/system/cpu/cpu{cpu}/topology"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("physical_package_id"), format!("{socket}\n")).unwrap();
            std::fs::write(t.join("die_id"), "0\n").unwrap();
            std::fs::write(t.join("core_id"), format!("{core}\n")).unwrap();
        }
        let topo = cpu_topology(dir.path(), &[0, 1, 2, 3, 4]);
        (dir, topo)
    }

    #[test]
    fn cpus_are_grouped_by_core_and_socket() {
        let (_dir, topology) = topology();
        assert_eq!(topology[&3], (1, 0, 0));
        assert_eq!(
            topology[&4],
            (0, 0, 4),
            "no files: its own core on socket 0"
        );
        let opts = |aggr| StatOptions {
            target: StatTarget::Cpus("0-4".parse().unwrap()),
            aggr,
            topology: topology.clone(),
            online: Some("0-4".parse().unwrap()),
            ..Default::default()
        };
        let (at, key, labels) = places(&opts(Aggr::PerCore), None).unwrap();
        assert_eq!(at, [(-1, 0), (-1, 1), (-1, 2), (-1, 3), (-1, 4)]);
        let core = |socket, core, cpus| Label::Core {
            socket,
            die: 0,
            core,
            cpus,
        };
        assert_eq!(labels, [core(0, 0, 2), core(0, 4, 1), core(1, 0, 2)]);
        assert_eq!(key, [0, 2, 0, 2, 1]);
        let (_, key, labels) = places(&opts(Aggr::PerSocket), None).unwrap();
        assert_eq!(
            labels,
            [
                Label::Socket { socket: 0, cpus: 3 },
                Label::Socket { socket: 1, cpus: 2 }
            ]
        );
        assert_eq!(key, [0, 1, 0, 1, 0]);
        let (_, key, labels) = places(&opts(Aggr::Global), None).unwrap();
        assert_eq!((key, labels), (vec![0; 5], vec![]));
        // A CPU that is not online is one clear error.
        let mut o = opts(Aggr::PerCpu);
        o.online = Some("0-3".parse().unwrap());
        let e = places(&o, None).unwrap_err().to_string();
        assert_eq!(e, "CPU 4 in -C 0-4 is not online (online CPUs: 0-3)");
    }

    /// The events of `-d`/`-dd`/`-ddd` after the defaults or the `-e` ones, none with `-n`;
    /// the sets are those perf 6.1 prints for `perf stat -d/-dd/-ddd -- true`.
    #[test]
    fn detailed_sets_follow_the_other_events() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/vm");
        let pmus = Pmus::read(&root).unwrap();
        let strings = |o: &StatOptions| event_strings(&pmus, o).unwrap();
        let mut o = StatOptions {
            detailed: 1,
            ..Default::default()
        };
        let d = strings(&o);
        assert_eq!(d.len(), 8 + 4);
        assert_eq!(&d[..4], DEFAULT_SOFTWARE);
        assert_eq!(
            &d[8..],
            [
                "L1-dcache-loads",
                "L1-dcache-load-misses",
                "LLC-loads",
                "LLC-load-misses"
            ]
        );
        o.detailed = 2;
        let dd = strings(&o);
        assert_eq!(&dd[..12], &d[..]);
        assert_eq!(&dd[12..], DETAILED[1]);
        o.detailed = 3;
        let ddd = strings(&o);
        assert_eq!(
            &ddd[18..],
            ["L1-dcache-prefetches", "L1-dcache-prefetch-misses"]
        );
        // More d's than perf has sets add nothing more.
        o.detailed = 5;
        assert_eq!(strings(&o), ddd);
        // After the -e events.
        o.detailed = 1;
        o.events = vec!["task-clock".into()];
        assert_eq!(strings(&o)[..2], ["task-clock", "L1-dcache-loads"]);
        // -n: only the -e events.
        o.null_run = true;
        assert_eq!(strings(&o), ["task-clock"]);
        o.events.clear();
        assert!(strings(&o).is_empty());
        // Every detailed name resolves (a legacy cache event).
        let all: Vec<String> = DETAILED
            .iter()
            .flat_map(|s| s.iter())
            .map(|s| s.to_string())
            .collect();
        let res = resolve::resolve(&pmus, &all).unwrap();
        let names: Vec<&str> = res
            .groups
            .iter()
            .flat_map(|g| &g.events)
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(names, all);
    }

    #[test]
    fn readings_add_up_per_aggregate_and_per_interval() {
        let now: Readings = vec![
            Ok(vec![Some((100, 10, 10)), Some((50, 10, 5)), None]),
            Err(libc::ENOENT),
        ];
        let before: Readings = vec![Ok(vec![Some((40, 4, 4)), Some((10, 4, 2)), None]), Err(2)];
        let g = aggregate(&now, None, &[0, 1, 1], 2);
        assert_eq!(g[0][0], Count::from_reads(&[(100, 10, 10)]));
        assert_eq!(g[1][0], Count::from_reads(&[(50, 10, 5)]));
        assert_eq!(g[1][1], Count::NotSupported(libc::ENOENT));
        let d = aggregate(&now, Some(&before), &[0, 0, 0], 1);
        assert_eq!(d[0][0], Count::from_reads(&[(60, 6, 6), (40, 6, 3)]));
    }
}
