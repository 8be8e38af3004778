//! What `hrec stat` is asked to count and how ([`StatOptions`]: the events, the target, the
//! aggregation, `-I`, `-d`, `-n`, `--record-tpebs`), and why it cannot ([`StatError`]).

use std::collections::HashMap;

use crate::event::attr::Attr;
use crate::event::parse::EventError;
use crate::kernel::process;
use crate::pmu::CpuList;

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
    /// Where the CPUs sit, for `--per-core`/`--per-socket` ([`crate::stat::count::cpu_topology`]).
    pub topology: HashMap<u32, (u32, u32, u32)>,
    /// The CPUs that are online (a `-C` list must be among them).
    pub online: Option<CpuList>,
    /// `/proc`, for the threads of `-p` and their names.
    pub procfs_root: std::path::PathBuf,
    /// The CPU's family and model (`/proc/cpuinfo`): which E-core each core PMU counts for,
    /// for `--topdown` on E-cores.
    pub cpu: Option<crate::pmu::uarch::CpuId>,
    /// `kernel.nmi_watchdog` is on (`None`: unknown): whether a Gracemont E-core has room for
    /// TopDown level 2 ([`crate::pmu::uarch::EcoreTopDown::level2_events`]).
    pub nmi_watchdog: Option<bool>,
    /// `--record-tpebs`: precise samplers of the metrics' retire-latency events.
    pub tpebs: Vec<TpebsSampler>,
    /// `-d` given this many times (perf uses up to three): [`crate::stat::count::DETAILED`] sets added after the
    /// other events, `-e` ones included.
    pub detailed: u8,
    /// `-n`/`--null`: no default and no detailed events, only the wall time (and the `-e`
    /// events, which perf counts all the same).
    pub null_run: bool,
    /// `--cputype`: the one core PMU (`cpu_core`, `cpu_atom`, `cpu_lowpower`) that the default
    /// events, the `-e` events written without a PMU and `--topdown` count on; `None`: every
    /// core PMU.
    pub cputype: Option<String>,
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

/// Why stat cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatError {
    /// A bad event string.
    #[error(transparent)]
    Event(#[from] EventError),
    /// `--topdown` on a machine without it.
    #[error(
        "--topdown needs a core PMU with TopDown, and this machine has none ({have}); TopDown exists on Intel Ice Lake and later P-cores (perf metrics, a `slots` event) and on the E-cores of Alder Lake and later whose TopDown Intel has published (docs/hardware.md)"
    )]
    NoTopDown {
        /// The core PMUs that exist.
        have: String,
    },
    /// `--cputype` named a PMU that is not one of this machine's core PMUs.
    #[error("--cputype {name}: this machine has no {name} core PMU (its core PMUs: {have})")]
    NoCoreType {
        /// The PMU asked for.
        name: String,
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
    /// A tracepoint that fires in the kernel, where perf_event_paranoid lets this user count
    /// nothing: user space only would count 0 (perf stat prints that 0).
    #[error(
        "{event} fires in the kernel, and kernel.perf_event_paranoid lets this user count user space only, where it would count 0; run as root or sysctl -w kernel.perf_event_paranoid=1"
    )]
    KernelTracepoint {
        /// Event.
        event: String,
    },
    /// perf_event_paranoid refuses even user-only counting: whole CPUs (`-a`, `-C`) need level
    /// 0 or lower, a command or one's own processes level 2 or lower.
    #[error(
        "not allowed to count {event} (errno {errno}): kernel.perf_event_paranoid is too strict; {}",
        if *cpu_wide {
            "counting whole CPUs (-a/-C) needs root or level 0 or lower (sysctl -w kernel.perf_event_paranoid=0); or count a command or your own processes (-p PID) instead"
        } else {
            "run as root or set it to 2 or lower (sysctl -w kernel.perf_event_paranoid=2)"
        }
    )]
    Denied {
        /// Event.
        event: String,
        /// errno.
        errno: i32,
        /// The counter was opened for whole CPUs (no task).
        cpu_wide: bool,
    },
}
