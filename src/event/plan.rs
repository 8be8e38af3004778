//! Record planning: from (PMUs, options) to the exact attrs hrec will open.
//!
//! The plan follows `perf record` (perf-abi.md section 10) with these rules:
//!
//! * **Default event.** `cycles:P` on every core PMU, 4000 Hz. On a PMU with TopDown, cycles
//!   becomes the sampling member of `{slots, cycles:P, topdown-*}:S`: `slots` must lead a group
//!   with metric events and must not sample, metric events must not sample either, so the first
//!   member that is neither samples (perf takes the first non-leader member; hrec skips metric
//!   members, so `{slots,topdown-retiring,cycles}:S` works too) and every sample carries the
//!   group's counts in slot units. An E-core has no `slots`: its default group is
//!   `{cycles:P, Intel's level-1 events}:S` with the encodings of the core the cpuinfo names
//!   ([`crate::pmu::uarch`]), level 2 where the counters hold it, the members hrec adds marked
//!   [`IfRefused`] so that the recorder can leave them out; an E-core hrec does not know
//!   samples cycles alone, with a notice. Without any core PMU the plan samples `cpu-clock`
//!   and says so in one line.
//! * **Sampling.** Frequency mode adds `PERIOD`; `-c` gives a fixed period without it. A
//!   frequency above `perf_event_max_sample_rate` (read through [`Host`]) is lowered with
//!   perf's warning. In a sampling-read (`:S`) group only the read sampler samples; the others
//!   get period 0, and all members share the union of the sample types plus `READ`, with
//!   `read_format` `ID|GROUP|LOST`. `inherit` stays on together with `TID` (kernel 6.12 rule;
//!   the opener falls back to no-inherit on older kernels).
//! * **Identity.** With more than one event the records in a shared per-CPU buffer are told apart
//!   by `ID`, or by `IDENTIFIER` when the sample types differ (the id then sits at a fixed
//!   place in every record).
//! * **Tracking.** Exactly one event carries `mmap`, `mmap2`, `comm`, `comm_exec`, `task` and
//!   `ksymbol`. It is the first event when that one is opened on every target CPU; on hybrid
//!   parts and for `-a`/`-C` it is a `dummy:u` event on all CPUs, as perf does, so no mapping is
//!   missed while the task runs on a CPU the first event does not cover.
//! * **Placement.** Per CPU of the event's own PMU (`cpus` on hybrid), intersected with `-C`; or
//!   `cpu = -1` per thread with `--per-thread` (where inherit is off: the kernel cannot mmap an
//!   inherited per-thread event).
//! * **Off-CPU** (`--off-cpu`). Two software events besides the samplers: `dummy:u` with
//!   `context_switch` ([`Role::Switches`]: the switch records that give each interval) and
//!   `context-switches` sampled at every switch ([`Role::SwitchStacks`]: the stack a thread
//!   leaves with), which the recorder maps into rings of their own.
//! * **Per-function metrics** (`--td-level N`, `-M LIST`). The groups [`metric`] plans from
//!   Intel's files replace the default group ([`plan_record_with`]); each of their events
//!   keeps its group, its Intel name and its counter ([`PlannedEvent::metric`]), and the
//!   recording keeps the name and the group's leader of each. Their reads carry
//!   `time_enabled` and `time_running` (`read_format` TOTAL_TIME_*): the groups are
//!   multiplexed, and the report shows each group's share of the time on the PMU.

use serde::Serialize;

mod defaults;
mod host;
pub mod mem;
pub mod metric;

pub use host::Host;

pub use defaults::default_events;
use defaults::mark_ecore_members;

use super::attr::{Attr, flag, read, sample, types};
use super::parse::EventError;
use super::resolve::{self, Group, Resolved, TopDownRole, names};
use crate::pmu::uarch;
use crate::pmu::{CpuList, Pmu, Pmus};

/// Default sampling frequency (perf's `record.opts.freq`).
pub const DEFAULT_FREQ: u64 = 4000;

/// Default user stack copy for `--call-graph dwarf` (perf's 8192 bytes).
pub const DEFAULT_DWARF_STACK: u32 = 8192;

/// x86-64 user registers perf samples for DWARF unwinding (all but DS, ES, FS, GS).
pub const X86_64_REGS_MASK: u64 = 0xff_0fff;

/// What to record.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "ids")]
pub enum Target {
    /// Fork and exec a command (events use `enable_on_exec`).
    #[default]
    Workload,
    /// `-p`: existing processes.
    Pids(Vec<u32>),
    /// `-t`: existing threads.
    Tids(Vec<u32>),
    /// `-a`: every CPU.
    SystemWide,
    /// `-C`: these CPUs.
    Cpus(CpuList),
}

impl Target {
    /// True for targets that record whole CPUs.
    pub fn is_cpu_wide(&self) -> bool {
        matches!(self, Target::SystemWide | Target::Cpus(_))
    }
}

/// `-F`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freq {
    /// `-F N`
    Hz(u64),
    /// `-F max`: `/proc/sys/kernel/perf_event_max_sample_rate`.
    Max,
}

/// `-g` / `--call-graph`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CallGraph {
    /// Frame pointers (`PERF_SAMPLE_CALLCHAIN`), perf's default for `-g`.
    Fp,
    /// DWARF: copy user registers and this many bytes of user stack.
    Dwarf {
        /// Bytes of user stack per sample.
        stack_size: u32,
        /// Keep the stack copies in the file after unwinding them (`dwarf,SIZE,raw`).
        raw: bool,
    },
}

/// Record options after the command line was validated.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordOptions {
    /// `-e` strings, in order; empty means the default event.
    pub events: Vec<String>,
    /// `--filter EXPR`s: the index of the `-e` string each follows, and the tracefs filter
    /// for its tracepoints (perf's rule: the filter is on the events of the `-e` before it;
    /// two on one event must both hold).
    pub filters: Vec<(usize, String)>,
    /// `-F`.
    pub freq: Option<Freq>,
    /// `-c`.
    pub count: Option<u64>,
    /// `-W`.
    pub weight: bool,
    /// `-g` / `--call-graph`.
    pub call_graph: Option<CallGraph>,
    /// What to record.
    pub target: Target,
    /// `--per-thread`.
    pub per_thread: bool,
    /// `-i` / `--no-inherit`.
    pub no_inherit: bool,
    /// `-s` / `--stat`: per-thread counts (`inherit_stat`: the kernel writes a READ record
    /// with each inherited thread's own count when it exits; `report -T` shows them).
    pub inherit_stat: bool,
    /// `--off-cpu`: switch records and the stacks threads leave the CPU with.
    pub off_cpu: Option<OffCpu>,
    /// `--all-cgroups`: CGROUP records (id and path of each cgroup, `attr.cgroup` on the
    /// tracking event) and each sample's cgroup id (`PERF_SAMPLE_CGROUP`), as perf.
    pub all_cgroups: bool,
    /// `--namespaces`: the namespaces of each task (PERF_RECORD_NAMESPACES), for `report
    /// --sort cgroup_id`, as perf.
    pub namespaces: bool,
    /// `-B`: no build-ids, not even in the MMAP2 records. Otherwise the tracking event asks
    /// the kernel for the build-id of each mapped file in its MMAP2 record (`attr.build_id`,
    /// Linux 5.12+; perf's `--buildid-mmap`), which names the file a process really mapped
    /// even when another mount namespace or a chroot has another build at that path.
    pub no_buildid: bool,
    /// `-d` / `--data`: each sample's data address (`PERF_SAMPLE_ADDR`) and data source
    /// (`PERF_SAMPLE_DATA_SRC`), and MMAP records of data mappings too (`mmap_data` on the
    /// tracking event), so the addresses can be named: perf's `-d`.
    pub data: bool,
    /// `--data-page-size`: the page size of each sample's data address
    /// (`PERF_SAMPLE_DATA_PAGE_SIZE`).
    pub data_page_size: bool,
    /// `--phys-data`: the physical address of each sample's data address
    /// (`PERF_SAMPLE_PHYS_ADDR`).
    pub phys_data: bool,
    /// perf's `--sample-cpu`: `PERF_SAMPLE_CPU` whatever the target (`c2c record`).
    pub sample_cpu: bool,
}

/// `record --off-cpu[=blocked]`: where the followed threads wait, beside where they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct OffCpu {
    /// `--off-cpu=blocked`: leave out the intervals of preempted threads (runnable, waiting
    /// for a CPU).
    pub blocked_only: bool,
    /// `--off-cpu-thresh` in nanoseconds: an interval at least this long is written as a
    /// sample of its own; shorter ones are added up per thread and stack
    /// ([`DEFAULT_OFF_CPU_THRESH_NS`]).
    pub thresh_ns: u64,
    /// `--off-cpu-mmap-pages`: data pages of each ring buffer of the stacks; `None`: as many
    /// as the on-CPU rings, four times that with `--call-graph dwarf` (each stack copy is
    /// kilobytes).
    pub mmap_pages: Option<usize>,
}

/// `--off-cpu-thresh`'s default: 1 ms (see `docs/benchmarks.md`, "Off-CPU threshold").
pub const DEFAULT_OFF_CPU_THRESH_NS: u64 = 1_000_000;

/// What the recorder does when the kernel refuses to open a member that hrec added on its
/// own (the E-core TopDown events of the default group), instead of failing: the recording
/// is still made, with one line saying what was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IfRefused {
    /// Leave out the group's level-2 TopDown members (the group did not fit the counters).
    DropLevel2,
    /// Leave out all of the group's TopDown members: the leader samples alone.
    DropTopdown,
    /// `--off-cpu`'s stacks event, which needs kernel samples (`perf_event_paranoid` 1 or
    /// root): without it the off-CPU intervals are recorded with no stacks.
    OffCpuStacks,
    /// An event of a per-function metric group (`--td-level`, `-M`) other than the one
    /// carrying the side-band records: the whole group (leader and members) is left out and
    /// the metrics needing its events are not computed.
    DropGroup,
}

/// What an event does in the recording: the role stored in the file's header.
pub use crate::data::Role;

/// Where an event is opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// One fd per listed CPU.
    Cpus(CpuList),
    /// `cpu = -1`: follows the thread to any CPU (`--per-thread`).
    AnyCpu,
}

/// One event of the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedEvent {
    /// Position in the plan (open order).
    pub index: usize,
    /// Display name, perf style.
    pub name: String,
    /// PMU name (`cpu_core`, `software`); `None` only for a legacy event with no core PMU.
    pub pmu: Option<String>,
    /// The attr to open.
    pub attr: Attr,
    /// Index of the group leader (its own index when it leads or stands alone).
    pub leader: usize,
    /// What it does.
    pub role: Role,
    /// Carries the side-band (mmap, comm, task) records.
    pub tracking: bool,
    /// TopDown role.
    pub topdown: TopDownRole,
    /// Where it is opened.
    pub placement: Placement,
    /// A member hrec added on its own, left out when the kernel refuses it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub if_refused: Option<IfRefused>,
    /// An event of a per-function metric group (`--td-level`, `-M`): which group, Intel's
    /// name, the counter it is assigned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metric: Option<MetricSlot>,
    /// A tracepoint's tracefs entry (its id and format, kept in the recording).
    #[serde(skip)]
    pub tracepoint: Option<std::sync::Arc<crate::trace::TraceEvent>>,
    /// A tracepoint's `--filter`, set with `PERF_EVENT_IOC_SET_FILTER` once opened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
}

/// Where an event of a per-function metric group sits ([`metric::MetricPlan`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MetricSlot {
    /// Index of the group in [`metric::MetricPlan::groups`].
    pub group: usize,
    /// Intel's name (`UOPS_RETIRED.MS:c1:e1`; `cycles` for the leader).
    pub event: String,
    /// The counter it is assigned.
    pub counter: metric::Counter,
}

/// Everything the recorder will open, in order, and the messages to show before recording.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// What is recorded.
    pub target: Target,
    /// Events in open order; group leaders come before their members.
    pub events: Vec<PlannedEvent>,
    /// One-line messages (fallbacks, lowered frequencies, regrouping).
    pub notices: Vec<String>,
    /// `--off-cpu`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub off_cpu: Option<OffCpu>,
    /// `--td-level` / `-M`: the metrics and their groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<metric::MetricPlan>,
}

/// Why a plan cannot be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A bad event string.
    #[error(transparent)]
    Event(#[from] EventError),
    /// A hardware event on a machine without a hardware PMU.
    #[error(
        "event {event:?} needs a hardware PMU, and this machine has none (no cpu PMU in {root}/bus/event_source/devices); use a software event such as cpu-clock"
    )]
    NoHardware {
        /// Event name.
        event: String,
        /// The sysfs root.
        root: String,
    },
    /// An event that the kernel refuses to sample.
    #[error("{event} cannot sample: {reason}")]
    CannotSample {
        /// Event name.
        event: String,
        /// Why, and what to write instead.
        reason: String,
    },
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
    /// No event is left after `-C` filtering.
    #[error("no event can be opened on CPUs {0}: none of their PMUs covers them")]
    NothingOnCpus(String),
    /// Option combination that cannot work.
    #[error("{0}")]
    Options(String),
    /// The PMUs lack the memory-sampling events `mem record` / `c2c record` need: what is
    /// missing, in one line.
    #[error("{0}")]
    MemUnsupported(String),
    /// `--td-level` / `-M` cannot be planned.
    #[error(transparent)]
    Metric(#[from] metric::MetricPlanError),
}

/// Builds the record plan. Pure: reads nothing but its arguments.
pub fn plan_record(pmus: &Pmus, host: &Host, opts: &RecordOptions) -> Result<Plan, PlanError> {
    plan_record_with(pmus, host, opts, None)
}

/// [`plan_record`] with the groups of per-function metrics ([`metric::plan_metrics`]): they
/// replace the default group, after the `-e` events when there are any.
pub fn plan_record_with(
    pmus: &Pmus,
    host: &Host,
    opts: &RecordOptions,
    metrics: Option<&metric::MetricPlan>,
) -> Result<Plan, PlanError> {
    let mut notices = Vec::new();
    let root = pmus.root.display().to_string();
    if opts.freq.is_some() && opts.count.is_some() {
        return Err(PlanError::Options(
            "-F and -c cannot be used together: pick a frequency or a period".into(),
        ));
    }
    if opts.per_thread && opts.target.is_cpu_wide() {
        return Err(PlanError::Options(
            "--per-thread cannot be combined with -a or -C".into(),
        ));
    }

    let event_strings = if metrics.is_some() {
        opts.events.clone()
    } else if opts.events.is_empty() {
        let (d, mut ecore_notices) = default_events(pmus, host);
        notices.append(&mut ecore_notices);
        if d.is_empty() {
            notices.push(format!(
                "no hardware PMU (no cpu PMU in {root}/bus/event_source/devices): sampling cpu-clock instead of cycles"
            ));
            vec!["cpu-clock".to_string()]
        } else {
            d
        }
    } else {
        opts.events.clone()
    };
    let mut res = if event_strings.is_empty() {
        resolve::Resolution::default()
    } else if opts.filters.is_empty() {
        resolve::resolve(pmus, &event_strings)?
    } else {
        resolve_with_filters(pmus, &event_strings, &opts.filters)?
    };
    notices.append(&mut res.warnings);
    // Which metric group each resolved group is (`None`: an `-e` event).
    let mut metric_of: Vec<Option<usize>> = vec![None; res.groups.len()];
    if let Some(m) = metrics {
        notices.extend(m.notices.iter().cloned());
        // Say how a report reads these groups.
        if m.groups.len() > 1 || m.groups.iter().any(|g| !g.perf_metrics) {
            notices.push(
                "the metric groups are recorded: `hrec report --td-level N` or `--metrics LIST` \
                 computes Intel's metrics per function from them (with --perfmon DIR); each \
                 group's cycles leader is also an event of its own"
                    .into(),
            );
        }
        let specs: Vec<String> = m.groups.iter().map(metric::CounterGroup::spec).collect();
        let mut r = resolve::resolve(pmus, &specs)?;
        notices.append(&mut r.warnings);
        let same = r.groups.len() == m.groups.len()
            && r.groups
                .iter()
                .zip(&m.groups)
                .all(|(g, c)| g.events.len() == c.members.len());
        if !same {
            return Err(PlanError::Options(
                "the metric groups did not resolve member for member (a bug in hrec's planner)"
                    .into(),
            ));
        }
        metric_of.extend((0..r.groups.len()).map(Some));
        res.groups.append(&mut r.groups);
        if !m.default_groups.is_empty() {
            let mut d = resolve::resolve(pmus, &m.default_groups)?;
            notices.append(&mut d.warnings);
            metric_of.extend(d.groups.iter().map(|_| None));
            res.groups.append(&mut d.groups);
        }
        // `--locate`: samplers of their own, as `-e` events are.
        if !m.locate.is_empty() {
            let specs: Vec<String> = m.locate.iter().map(|l| l.spec.clone()).collect();
            let mut l = resolve::resolve(pmus, &specs)?;
            notices.append(&mut l.warnings);
            metric_of.extend(l.groups.iter().map(|_| None));
            res.groups.append(&mut l.groups);
        }
    }
    // Lunar Lake and Arrow Lake before Linux 6.13: no PEBS at all.
    let no_pebs: Vec<&str> = pmus
        .core_pmus()
        .into_iter()
        .filter(|p| p.max_precise() == Some(0))
        .map(|p| p.name.as_str())
        .collect();
    if uarch::needs_pebs_format_6(host.cpu.as_ref()) && !no_pebs.is_empty() {
        notices.push(format!(
            "{}: caps/max_precise is 0: this kernel lacks PEBS format 6, which Lunar Lake and Arrow Lake need (Linux 6.13): sampling without precise events and without retire latency",
            no_pebs.join(", ")
        ));
    }

    // No core PMU: cycles falls back to cpu-clock (perf's evsel__fallback); other hardware
    // events cannot be counted at all.
    for g in &mut res.groups {
        for r in &mut g.events {
            if r.pmu.is_some() {
                continue;
            }
            if r.is_cycles() {
                notices.push(format!(
                    "{} is not supported without a hardware PMU: sampling cpu-clock instead",
                    r.name
                ));
                r.name = "cpu-clock".to_string();
                r.pmu = Some("software".to_string());
                let flags = r.attr.flags;
                r.attr = Attr::new(types::SOFTWARE, 0);
                r.attr.flags = flags;
                r.attr.set_precise_ip(0);
                r.modifiers.precise_max = false;
            } else {
                return Err(PlanError::NoHardware {
                    event: r.name.clone(),
                    root,
                });
            }
        }
    }

    // Where each group goes, before building attrs, so -C can drop groups.
    let target_cpus = match &opts.target {
        Target::Cpus(list) => {
            if let Some(cpu) = list.cpus().iter().find(|c| !pmus.online.contains(**c)) {
                return Err(PlanError::CpuOffline {
                    cpu: *cpu,
                    list: list.to_string(),
                    online: pmus.online.to_string(),
                });
            }
            list.clone()
        }
        _ => pmus.online.clone(),
    };
    let mut placed: Vec<(Group, Placement, Option<usize>)> = Vec::new();
    for (g, metric_group) in res.groups.into_iter().zip(metric_of) {
        if opts.per_thread {
            placed.push((g, Placement::AnyCpu, metric_group));
            continue;
        }
        let leader = &g.events[0];
        let pmu_cpus = leader.pmu_cpus.clone().map(|c| c.intersect(&pmus.online));
        let cpus = match &pmu_cpus {
            Some(c) => c.intersect(&target_cpus),
            None => target_cpus.clone(),
        };
        if let (Target::Cpus(list), Some(pc)) = (&opts.target, &pmu_cpus) {
            let pmu = leader.pmu.as_deref().unwrap_or("?");
            if cpus.is_empty() {
                notices.push(format!(
                    "WARNING: {list} isn't a '{pmu}', please use a CPU list in the '{pmu}' range ({pc}); not opening {}",
                    leader.name
                ));
                continue;
            }
            if cpus.len() < list.len() {
                notices.push(format!(
                    "WARNING: use {cpus} in '{list}' for '{pmu}', skip other cpus in list."
                ));
            }
        }
        placed.push((g, Placement::Cpus(cpus), metric_group));
    }
    if placed.is_empty() {
        return Err(PlanError::NothingOnCpus(target_cpus.to_string()));
    }

    let freq = sampling_frequency(host, opts, &mut notices)?;
    let mut events: Vec<PlannedEvent> = Vec::new();
    for (g, placement, metric_group) in placed {
        let first = events.len();
        plan_group(
            pmus,
            host,
            opts,
            &g,
            placement,
            freq,
            &mut events,
            &mut notices,
        )?;
        if let (Some(gi), Some(m)) = (metric_group, metrics)
            && let Some(cg) = m.groups.get(gi)
        {
            for (e, member) in events.iter_mut().skip(first).zip(&cg.members) {
                e.metric = Some(MetricSlot {
                    group: gi,
                    event: member.event.clone(),
                    counter: member.counter,
                });
                // The groups take turns on the PMU: every read (and the final count) carries
                // how long the group was enabled and how long it ran, so the report can say
                // each group's share of the time.
                e.attr.read_format |= read::TOTAL_TIME_ENABLED | read::TOTAL_TIME_RUNNING;
            }
        }
    }

    // The E-core TopDown members hrec adds: the default group's, or the metric groups' after
    // the `-e` events.
    let added = if opts.events.is_empty() {
        0
    } else if metrics.is_some() {
        events
            .iter()
            .position(|e| e.metric.is_some())
            .unwrap_or(events.len())
    } else {
        events.len()
    };
    if let Some(tail) = events.get_mut(added..) {
        mark_ecore_members(tail, pmus, host);
    }

    // Tracking: the first event if it is opened everywhere the workload can run, else a dummy.
    let all_cpus = Placement::Cpus(target_cpus.clone());
    let first_covers = events[0].placement == all_cpus || events[0].placement == Placement::AnyCpu;
    if first_covers && !opts.target.is_cpu_wide() {
        let a = &mut events[0].attr;
        set_tracking(a, opts);
        events[0].tracking = true;
    } else {
        // perf configures the dummy like the other events (system-wide-dummy attr test:
        // freq=1, sample_freq=4000, PERIOD); it never overflows, so it never samples.
        let mut a = Attr::new(types::SOFTWARE, 9);
        a.sample_type = base_sample_type(opts);
        match opts.count {
            Some(c) => a.sample_period_or_freq = c,
            None => {
                a.sample_period_or_freq = freq;
                a.set(flag::FREQ, true);
                a.sample_type |= sample::PERIOD;
            }
        }
        a.read_format = read::ID | read::LOST;
        a.set(flag::EXCLUDE_KERNEL | flag::EXCLUDE_HV, true);
        a.set(flag::SAMPLE_ID_ALL, true);
        a.set(flag::INHERIT, inherit(opts));
        if opts.target == Target::Workload {
            a.set(flag::DISABLED | flag::ENABLE_ON_EXEC, true);
        }
        set_tracking(&mut a, opts);
        let index = events.len();
        events.push(PlannedEvent {
            index,
            name: "dummy:u".to_string(),
            pmu: Some("software".to_string()),
            attr: a,
            leader: index,
            role: Role::Tracking,
            tracking: true,
            topdown: TopDownRole::None,
            if_refused: None,
            metric: None,
            tracepoint: None,
            filter: None,
            placement: if opts.per_thread {
                Placement::AnyCpu
            } else {
                all_cpus.clone()
            },
        });
    }

    // A metric group the kernel refuses at open (an event this kernel lacks, a group its
    // counters cannot hold) is left out and the rest recorded, but for the group that
    // carries the side-band records.
    let tracking_group = events.iter().find(|e| e.tracking).map(|e| e.leader);
    for e in &mut events {
        if e.metric.is_some() && e.if_refused.is_none() && Some(e.leader) != tracking_group {
            e.if_refused = Some(IfRefused::DropGroup);
        }
    }

    if opts.off_cpu.is_some() {
        plan_off_cpu(opts, &all_cpus, &mut events);
    }

    // ID or IDENTIFIER once there is more than one event (perf's evlist__config); always
    // IDENTIFIER with --off-cpu, whose file adds an `offcpu-time` event of its own layout.
    if events.len() > 1 {
        let first = events[0].attr.sample_type;
        let same = opts.off_cpu.is_none() && events.iter().all(|e| e.attr.sample_type == first);
        let bit = if same { sample::ID } else { sample::IDENTIFIER };
        for e in &mut events {
            e.attr.sample_type |= bit;
            e.attr.read_format |= read::ID;
        }
    }
    Ok(Plan {
        target: opts.target.clone(),
        events,
        notices,
        off_cpu: opts.off_cpu,
        metrics: metrics.cloned(),
    })
}

/// `--off-cpu`: two events of their own, each with a ring buffer of its own on each CPU (a
/// storm of switches fills those, never the ring of the on-CPU samples, and what the kernel
/// drops there costs off-CPU records only; see `record::open`).
/// * `dummy:u` with `context_switch` ([`Role::Switches`]) writes a switch record each time a
///   followed thread leaves or takes a CPU (per task, it works at `perf_event_paranoid` 2),
///   which gives each off-CPU interval exactly and tells a preempted thread from a blocked
///   one;
/// * `context-switches` sampled at every switch (period 1, [`Role::SwitchStacks`]) gives the
///   stack the thread left with: the kernel's chain (why it waits) and the user part (`-g`'s
///   frame pointers, or the user registers and stack with `--call-graph dwarf`, unwound like
///   every other sample). It needs kernel samples; refused, the intervals are recorded
///   without stacks ([`IfRefused::OffCpuStacks`]).
fn plan_off_cpu(opts: &RecordOptions, all_cpus: &Placement, events: &mut Vec<PlannedEvent>) {
    let placement = if opts.per_thread {
        Placement::AnyCpu
    } else {
        all_cpus.clone()
    };
    let mut d = Attr::new(types::SOFTWARE, 9);
    d.sample_type = base_sample_type(opts) | sample::CPU;
    // The switch records the kernel could not write, even when no LOST record follows.
    d.read_format = read::ID | read::LOST;
    d.set(
        flag::CONTEXT_SWITCH | flag::SAMPLE_ID_ALL | flag::EXCLUDE_KERNEL | flag::EXCLUDE_HV,
        true,
    );
    d.set(flag::INHERIT, inherit(opts));
    if opts.target == Target::Workload {
        d.set(flag::DISABLED | flag::ENABLE_ON_EXEC, true);
    }
    let index = events.len();
    events.push(PlannedEvent {
        index,
        name: "dummy:u".to_string(),
        pmu: Some("software".to_string()),
        attr: d,
        leader: index,
        role: Role::Switches,
        tracking: false,
        topdown: TopDownRole::None,
        if_refused: None,
        metric: None,
        tracepoint: None,
        filter: None,
        placement: placement.clone(),
    });
    let mut a = Attr::new(types::SOFTWARE, 3);
    a.sample_period_or_freq = 1;
    a.sample_type = base_sample_type(opts) | sample::PERIOD | sample::CPU | sample::CALLCHAIN;
    if let Some(CallGraph::Dwarf { stack_size, .. }) = opts.call_graph {
        a.sample_type |= sample::REGS_USER | sample::STACK_USER;
        a.sample_regs_user = X86_64_REGS_MASK;
        a.sample_stack_user = stack_size;
        a.set(flag::EXCLUDE_CALLCHAIN_USER, true);
    }
    a.read_format = read::ID | read::LOST;
    a.set(flag::SAMPLE_ID_ALL | flag::EXCLUDE_HV, true);
    a.set(flag::INHERIT, inherit(opts));
    if opts.target == Target::Workload {
        a.set(flag::DISABLED | flag::ENABLE_ON_EXEC, true);
    }
    let index = events.len();
    events.push(PlannedEvent {
        index,
        name: "context-switches".to_string(),
        pmu: Some("software".to_string()),
        attr: a,
        leader: index,
        role: Role::SwitchStacks,
        tracking: false,
        topdown: TopDownRole::None,
        if_refused: Some(IfRefused::OffCpuStacks),
        metric: None,
        tracepoint: None,
        filter: None,
        placement,
    });
}

fn set_tracking(a: &mut Attr, opts: &RecordOptions) {
    a.set(
        flag::MMAP | flag::MMAP2 | flag::COMM | flag::COMM_EXEC | flag::TASK | flag::KSYMBOL,
        true,
    );
    if opts.data || matches!(opts.call_graph, Some(CallGraph::Dwarf { .. })) {
        a.set(flag::MMAP_DATA, true);
    }
    if opts.all_cgroups {
        a.set(flag::CGROUP, true);
    }
    if !opts.no_buildid {
        a.set(flag::BUILD_ID, true);
    }
    if opts.namespaces {
        a.set(flag::NAMESPACES, true);
    }
}

/// The `-e` strings resolved one by one, so each `--filter` lands on the tracepoints of the
/// string before it; a filter after a string without tracepoints is an error (perf: "--filter
/// option should follow a -e tracepoint").
fn resolve_with_filters(
    pmus: &Pmus,
    strings: &[String],
    filters: &[(usize, String)],
) -> Result<resolve::Resolution, PlanError> {
    let mut out = resolve::Resolution::default();
    for (i, s) in strings.iter().enumerate() {
        let mut r = resolve::resolve(pmus, std::slice::from_ref(s))?;
        for (_, f) in filters.iter().filter(|(at, _)| *at == i) {
            let mut any = false;
            for e in r.groups.iter_mut().flat_map(|g| g.events.iter_mut()) {
                if e.tracepoint.is_none() {
                    continue;
                }
                any = true;
                e.filter = Some(match e.filter.take() {
                    Some(old) => format!("({old}) && ({f})"),
                    None => f.clone(),
                });
            }
            if !any {
                return Err(PlanError::Options(format!(
                    "--filter '{f}' follows -e {s}, which has no tracepoint: put it after the -e of the tracepoint it filters"
                )));
            }
        }
        out.groups.append(&mut r.groups);
        out.warnings.append(&mut r.warnings);
    }
    if let Some((_, f)) = filters.iter().find(|(at, _)| *at >= strings.len()) {
        return Err(PlanError::Options(format!(
            "--filter '{f}' follows no -e: put it after the -e of the tracepoint it filters"
        )));
    }
    Ok(out)
}

fn inherit(opts: &RecordOptions) -> bool {
    !(opts.no_inherit || opts.per_thread || opts.target.is_cpu_wide())
}

fn base_sample_type(opts: &RecordOptions) -> u64 {
    let mut st = sample::IP | sample::TID | sample::TIME;
    if opts.target.is_cpu_wide() || opts.sample_cpu {
        st |= sample::CPU;
    }
    // perf sets CGROUP on every event of the recording with --all-cgroups.
    if opts.all_cgroups {
        st |= sample::CGROUP;
    }
    // perf's -d, --data-page-size and --phys-data: on every event.
    if opts.data {
        st |= sample::ADDR | sample::DATA_SRC;
    }
    if opts.data_page_size {
        st |= sample::DATA_PAGE_SIZE;
    }
    if opts.phys_data {
        st |= sample::PHYS_ADDR;
    }
    st
}

/// The frequency samplers use when nothing more specific is given, after the kernel's limit.
fn sampling_frequency(
    host: &Host,
    opts: &RecordOptions,
    notices: &mut Vec<String>,
) -> Result<u64, PlanError> {
    let max = host.max_sample_rate;
    match opts.freq {
        Some(Freq::Max) => max.ok_or_else(|| {
            PlanError::Options(
                "-F max needs /proc/sys/kernel/perf_event_max_sample_rate, which could not be read"
                    .into(),
            )
        }),
        Some(Freq::Hz(0)) => Err(PlanError::Options(
            "-F 0 is not a frequency; use -F 1 or more".into(),
        )),
        Some(Freq::Hz(f)) => Ok(limit_freq(f, max, false, notices)),
        None => Ok(limit_freq(DEFAULT_FREQ, max, true, notices)),
    }
}

fn limit_freq(f: u64, max: Option<u64>, default: bool, notices: &mut Vec<String>) -> u64 {
    match max {
        Some(m) if f > m => {
            if default {
                notices.push(format!("Lowering default frequency rate from {f} to {m}."));
            } else {
                notices.push(format!(
                    "Maximum frequency rate ({} Hz) exceeded, throttling from {} Hz to {} Hz. The limit can be raised via /proc/sys/kernel/perf_event_max_sample_rate.",
                    thousands(m),
                    thousands(f),
                    thousands(m)
                ));
            }
            m
        }
        _ => f,
    }
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn precise_for(pmus: &Pmus, r: &Resolved) -> u8 {
    if r.modifiers.precise_max {
        // caps/max_precise is what the PMU supports; perf probes 3, 2, 1, 0 instead.
        r.pmu
            .as_deref()
            .and_then(|n| pmus.get(n))
            .and_then(Pmu::max_precise)
            .unwrap_or(3)
            .min(3)
    } else {
        r.attr.precise_ip()
    }
}

#[allow(clippy::too_many_arguments)]
fn plan_group(
    pmus: &Pmus,
    host: &Host,
    opts: &RecordOptions,
    g: &Group,
    placement: Placement,
    freq: u64,
    events: &mut Vec<PlannedEvent>,
    notices: &mut Vec<String>,
) -> Result<(), PlanError> {
    let leader_index = events.len();
    let td_led = g.events[0].topdown == TopDownRole::Slots
        && g.events.iter().any(|r| r.topdown == TopDownRole::Metric);
    // Which members sample.
    let sampler: Option<usize> = if g.sample_read {
        if td_led {
            // perf takes the first non-leader member; hrec skips metric members so that
            // `{slots,topdown-retiring,cycles}:S` works too.
            let s = g
                .events
                .iter()
                .skip(1)
                .position(|r| r.topdown == TopDownRole::None);
            match s {
                Some(i) => Some(i + 1),
                None => {
                    return Err(PlanError::CannotSample {
                        event: format!("{{{}}}:S", names(&g.events)),
                        reason: "slots and TopDown metric events cannot sample, and the group has no other event; add one that can, e.g. -e '{slots,cycles,topdown-retiring}:S'".into(),
                    });
                }
            }
        } else {
            Some(0)
        }
    } else {
        None
    };
    if !g.sample_read
        && let Some(r) = g.events.iter().find(|r| r.topdown == TopDownRole::Metric)
    {
        return Err(PlanError::CannotSample {
            event: r.name.clone(),
            reason: format!(
                "the kernel refuses to sample TopDown metric events and their slots leader; record them as counts in a sampling-read group, e.g. -e '{{slots,cycles:P,{}}}:S'",
                strip_pmu(&r.name)
            ),
        });
    }
    let samples = |i: usize, r: &Resolved| match sampler {
        Some(s) => i == s || r.period.is_some() || r.freq.is_some(),
        None => true,
    };

    let mut built: Vec<Attr> = Vec::new();
    for (i, r) in g.events.iter().enumerate() {
        let mut a = r.attr;
        a.size = super::attr::ATTR_SIZE_VER8;
        a.set_precise_ip(precise_for(pmus, r));
        a.sample_type = base_sample_type(opts);
        a.read_format = read::ID | read::LOST;
        a.set(flag::SAMPLE_ID_ALL, true);
        a.set(flag::INHERIT, inherit(opts));
        if opts.inherit_stat && inherit(opts) {
            // perf's -s: the thread counts with the times they ran, to scale them.
            a.set(flag::INHERIT_STAT, true);
            a.read_format |= read::TOTAL_TIME_ENABLED | read::TOTAL_TIME_RUNNING;
        }
        if i == 0 {
            a.set(flag::DISABLED, true);
            if opts.target == Target::Workload {
                a.set(flag::ENABLE_ON_EXEC, true);
            }
        }
        if samples(i, r) {
            if let Some(p) = r.period {
                a.sample_period_or_freq = p;
            } else if let Some(f) = r.freq {
                a.sample_period_or_freq = limit_freq(f, host.max_sample_rate, false, notices);
                a.set(flag::FREQ, true);
            } else if let Some(c) = opts.count {
                a.sample_period_or_freq = c;
            } else if r.tracepoint.is_some() && opts.freq.is_none() {
                // Every hit, as perf: the default frequency is not for tracepoints (an
                // explicit -F is, as perf takes it).
                a.sample_period_or_freq = 1;
            } else {
                a.sample_period_or_freq = freq;
                a.set(flag::FREQ, true);
            }
            if r.tracepoint.is_some() {
                // perf's tracepoint samples: the record's fields (RAW), the CPU and the
                // period; with PERIOD and no frequency the kernel samples every hit whatever
                // the period.
                a.sample_type |= sample::RAW | sample::CPU | sample::PERIOD;
            }
            if a.freq() {
                a.sample_type |= sample::PERIOD;
            }
            if opts.weight || r.modifiers.retire_latency {
                a.sample_type |= if host.x86 {
                    sample::WEIGHT_STRUCT
                } else {
                    sample::WEIGHT
                };
            }
            match opts.call_graph {
                Some(CallGraph::Fp) => a.sample_type |= sample::CALLCHAIN,
                Some(CallGraph::Dwarf { stack_size, .. }) => {
                    // perf: DWARF unwinding also records data addresses (sample_address).
                    a.sample_type |= sample::CALLCHAIN
                        | sample::REGS_USER
                        | sample::STACK_USER
                        | sample::ADDR
                        | sample::DATA_SRC;
                    a.sample_regs_user = X86_64_REGS_MASK;
                    a.sample_stack_user = stack_size;
                    a.set(flag::EXCLUDE_CALLCHAIN_USER, true);
                }
                None => {}
            }
        }
        built.push(a);
    }
    if g.sample_read {
        // Every member carries the sampler's and the leader's sample bits plus READ.
        let s = sampler.unwrap_or(0);
        let union = built[s].sample_type | built[0].sample_type | sample::READ;
        let rf = if g.events.len() > 1 { read::GROUP } else { 0 };
        for a in &mut built {
            a.sample_type |= union;
            a.read_format |= rf | read::ID;
        }
    }
    for (i, (r, a)) in g.events.iter().zip(built).enumerate() {
        let index = events.len();
        events.push(PlannedEvent {
            index,
            name: r.name.clone(),
            pmu: r.pmu.clone(),
            attr: a,
            leader: leader_index,
            role: if samples(i, r) {
                Role::Sampler
            } else {
                Role::Counted
            },
            tracking: false,
            topdown: r.topdown,
            placement: placement.clone(),
            if_refused: None,
            metric: None,
            tracepoint: r.tracepoint.clone(),
            filter: r.filter.clone(),
        });
    }
    Ok(())
}

fn strip_pmu(name: &str) -> &str {
    let inner = name.split('/').nth(1).filter(|s| !s.is_empty());
    inner.unwrap_or(name.split(':').next().unwrap_or(name))
}

impl Plan {
    /// The plan in `perf record -vv` layout: for each event its attr block, then where it opens.
    pub fn dump(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let dashes = "-".repeat(60);
        for e in &self.events {
            let _ = writeln!(out, "{dashes}");
            let _ = writeln!(out, "perf_event_attr:");
            let _ = write!(out, "{}", e.attr);
            let _ = writeln!(out, "{dashes}");
            let pid = match &self.target {
                Target::Workload => "workload".to_string(),
                Target::Pids(p) | Target::Tids(p) => {
                    p.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
                }
                Target::SystemWide | Target::Cpus(_) => "-1".to_string(),
            };
            let cpus = match &e.placement {
                Placement::Cpus(c) => c.to_string(),
                Placement::AnyCpu => "-1".to_string(),
            };
            let leader = if e.leader == e.index {
                "none (leader)".to_string()
            } else {
                format!("#{} {}", e.leader, self.events[e.leader].name)
            };
            let role = match e.role {
                Role::Sampler => "samples",
                Role::Counted => "counts (read into the group's samples)",
                Role::Tracking => "side-band only",
                Role::SwitchStacks => "stacks at each switch-out (off-CPU ring)",
                Role::Switches => "switch records (off-CPU ring)",
                Role::OffCpuTime => "off-CPU time (written by hrec)",
                Role::Unknown => "unknown role",
            };
            let _ = writeln!(
                out,
                "event #{} {}: pmu {}, pid {pid}, cpus {cpus}, group leader {leader}, {role}{}",
                e.index,
                e.name,
                e.pmu.as_deref().unwrap_or("-"),
                if e.tracking { ", tracking" } else { "" }
            );
        }
        if let Some(m) = &self.metrics {
            out.push_str(&m.dump(&self.events));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(100000), "100,000");
        assert_eq!(thousands(4000), "4,000");
        assert_eq!(thousands(999), "999");
    }

    #[test]
    fn strip_pmu_names() {
        assert_eq!(strip_pmu("cpu_core/topdown-retiring/"), "topdown-retiring");
        assert_eq!(strip_pmu("topdown-retiring"), "topdown-retiring");
        assert_eq!(strip_pmu("topdown-retiring:u"), "topdown-retiring");
    }
}
