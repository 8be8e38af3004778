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
//! values, level 2 split by subtraction (see [`crate::analysis::topdown`]). An E-core has a
//! group led by its cycles with Intel's E-core events instead, level 2 included where its
//! counters hold it (`plan`).
//!
//! The parts, a file each: what is asked (`options`: [`StatOptions`], [`StatError`]), which
//! counters that makes (`plan`), where they are opened and how places add up into aggregates
//! (`places`), opening and reading them (`open`), and readings turned into counts
//! (`aggregate`: [`Count`]); [`run`] drives them.

mod aggregate;
mod open;
mod options;
mod places;
mod plan;

use std::time::{Duration, Instant};

use crate::kernel::process::{self, Epoll, Signals, Workload};
use crate::pmu::{CpuList, Pmus};

use aggregate::{Readings, aggregate};
use open::{Samplers, open_all, read_all};
use places::places;

pub use aggregate::{Count, Group, topdown_counts, topdown_pmus};
pub use options::{Aggr, StatError, StatOptions, StatTarget, TpebsSampler};
pub use places::{Label, cpu_topology};
pub use plan::{
    Counter, DEFAULT_HARDWARE, DEFAULT_SOFTWARE, DETAILED, event_strings, plan, plan_with_notes,
};

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

/// Counts `command` (or the target; with both, the target for as long as the command runs)
/// and returns the counts; `interval` is called with each `-I` interval, the last (shorter)
/// one included.
pub fn run(
    pmus: &Pmus,
    o: &StatOptions,
    command: &[String],
    interval: &mut IntervalFn<'_>,
) -> Result<StatResult, StatError> {
    let (mut counters, mut notes) = plan_with_notes(pmus, o)?;
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
