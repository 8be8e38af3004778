//! Off-CPU time in the replay. `record --off-cpu` pairs the intervals while recording and
//! stores them as `offcpu-time` samples (read as any other event's, with their marks); a
//! recording that kept switch records instead (perf.data with `--switch-events`, hrec files
//! of earlier versions) is paired here with [`crate::offcpu::Tracker`]: each switch-in that
//! closes an interval hands on an `offcpu-time` sample at the interval's start, with the stack
//! the thread left with (the last stack sample since it last took a CPU: `record --off-cpu`'s
//! `context-switches`, perf's `sched:sched_switch`), under a `[preempted]` frame when it was
//! preempted, or a `[no stack]` frame.

use crate::data::Role;
use crate::data::offcpu::{OffCpuStats, STATS_SIDE};
use crate::decode::{Sample, misc};
use crate::event::attr::sample as st;
use crate::offcpu::Tracker;
use crate::recording::Recording;
use crate::symbol::symbolizer::Mark;

use super::super::profile::{NONE, SampleView};
use super::{Item, Replay};

/// Whether `e`'s samples are stacks threads leave the CPU with: `record --off-cpu`'s
/// `context-switches`, or perf's `sched:sched_switch` (what hotspot records beside
/// `--switch-events`) and `context-switches` sampled at every switch.
pub(super) fn is_stack_source(e: &crate::data::EventMeta) -> bool {
    e.role == Role::SwitchStacks
        || e.name == "sched:sched_switch"
        || (crate::event::base_name(&e.name) == "context-switches"
            && !e.attr.freq()
            && e.attr.sample_period_or_freq == 1)
}

/// The stack a thread left the CPU with, as the replay's location ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct LeaveStack {
    /// The sampled location.
    pub(super) leaf: u32,
    /// Its callers, outward.
    pub(super) callers: Vec<u32>,
    /// The sample's `header.misc` (its cpumode).
    pub(super) misc: u16,
    /// The sampled address.
    pub(super) ip: u64,
    /// The CPU it left, when sampled.
    pub(super) cpu: Option<u32>,
}

/// The off-CPU intervals of a recording with switch records ([`crate::offcpu`]).
#[derive(Debug)]
pub(super) struct OffCpu {
    pub(super) tracker: Tracker<LeaveStack>,
    /// The `offcpu-time` event's slot among the profile's events.
    pub(super) slot: u16,
    /// Per recording event: its samples are stacks threads leave the CPU with.
    pub(super) stack_source: Vec<bool>,
    /// `record --off-cpu=blocked`: preempted intervals are left out.
    pub(super) blocked_only: bool,
    /// Preempted intervals left out that way.
    pub(super) left_out: u64,
}

impl Replay {
    /// A switch record: a switch-in that ends an off-CPU interval hands on an `offcpu-time`
    /// sample (period: the interval's nanoseconds; time: when it began) with the stack the
    /// thread left with, under a `[preempted]` frame when it was preempted, or a `[no stack]`
    /// frame.
    pub(super) fn off_cpu_switch(
        &mut self,
        out: bool,
        preempt: bool,
        id: &crate::decode::SampleId,
        f: &mut impl FnMut(Item<'_, '_>),
    ) {
        let (Some(o), Some(tid), Some(time)) = (&mut self.off_cpu, id.tid, id.time) else {
            return;
        };
        let Some(i) = o.tracker.switch(tid, time, out, preempt) else {
            return;
        };
        if i.preempted && o.blocked_only {
            o.left_out += 1;
            return;
        }
        let slot = o.slot;
        if let Some(t) = &self.time
            && !t.keeps(i.start)
        {
            self.filtered_by_time += 1;
            return;
        }
        let pid = id.pid.unwrap_or(tid);
        let mut frames = std::mem::take(&mut self.frames);
        frames.clear();
        let (mut leaf, mut misc, mut ip, mut cpu) = (None, misc::USER, 0, id.cpu);
        if let Some(st) = &i.stack {
            leaf = Some(st.leaf);
            frames.extend_from_slice(&st.callers);
            (misc, ip, cpu) = (st.misc, st.ip, st.cpu.or(cpu));
        }
        let mark = |this: &mut Self, m: Mark| this.loc_mark(m);
        let leaf = match (i.preempted, leaf) {
            (true, Some(l)) => {
                frames.insert(0, l);
                mark(self, Mark::Preempted)
            }
            (true, None) => mark(self, Mark::Preempted),
            (false, Some(l)) => l,
            (false, None) => mark(self, Mark::NoStack),
        };
        let comm = self.comm(tid);
        let sample = Sample {
            misc,
            sample_type: st::IP | st::TID | st::TIME | st::CPU | st::PERIOD,
            ip: Some(ip),
            pid: Some(pid),
            tid: Some(tid),
            time: Some(i.start),
            cpu: Some(cpu.unwrap_or(0)),
            period: Some(i.ns),
            ..Sample::default()
        };
        let view = SampleView {
            event: slot,
            cpu: cpu.unwrap_or(NONE),
            pid,
            tid,
            comm,
            cgroup: NONE,
            cgroup_ns: self.tid_cgroup_ns.get(&tid).copied().unwrap_or(NONE),
            trace: NONE,
            time: i.start,
            period: i.ns,
            samples: 1,
            leaf,
            callers: &frames,
            callchain: true,
            td: None,
            retire_lat: None,
            mem: None,
            members: &[],
        };
        f(Item::Sample(&sample, view));
        self.frames = frames;
    }
}

/// What `record --off-cpu` paired while recording, from the file's `off-cpu` side block.
pub(super) fn off_cpu_stats(rec: &Recording) -> Option<OffCpuStats> {
    serde_json::from_slice(&rec.side(STATS_SIDE)?).ok()
}
