//! Intel's metrics per row (`report --td-level 3`, `report --metrics LIST`), from the
//! sampling-read groups `record --td-level N` / `record -M` plans
//! ([`crate::event::plan::metric`]).
//!
//! **What is kept.** Every group of such a recording is led (or, for the slots group, first
//! sampled) by a cycles sampler of its own, and each of its samples carries the cumulative
//! values of the whole group. As for TopDown ([`super::topdown`]), the values become deltas
//! per thread (with `inherit`) and per sampler id ([`MemberTracker`]), and the delta of a
//! read is attributed to the sampled location. With [`super::profile::ProfileOptions::member_sums`]
//! the folder sums every member's deltas per sample group, and [`super::hist`] per row: per
//! row and group the sum of each member's deltas, and the number of group reads behind them
//! ([`super::hist::Row::members`]). Memory is rows × groups × members, never samples.
//! A group is read by its first sampler in group order (perf's read sampler: the leader, or
//! the event after a non-sampling slots leader). A member that samples too (perf keeps
//! Intel's sample-after value of an event named by its Intel name in a `:S` group) is a
//! sampler of its own in the report, but its samples' reads are not taken again: every
//! delta counts once ([`MemberMap::new`]).
//!
//! **Which event a member is** comes from its attr, never from its name where the encoding
//! is known: the PMU type and `config`/`config1` of each member are compared with the
//! encoding Intel's event file gives each event a formula names ([`EncKey`]; modifiers such
//! as `:c1:e1` applied). The kernel's generic `cycles`, `instructions` and `ref-cycles` are
//! the encodings it programs for them (`0x3c`, `0xc0`, `0x0300`), and Intel's fixed-counter
//! pseudo-encodings (`event=0x00,umask=0x02` for `CPU_CLK_UNHALTED.THREAD`, `0x01`
//! `INST_RETIRED.ANY`) are taken as those, so `CPU_CLK_UNHALTED.THREAD` and `_P` both find a
//! group's cycles. Privilege filters (`:SUP`, `:USER`) are not part of the key. Only a
//! member whose encoding is not known (a PMU other than the core's) is matched by its
//! recorded name (`UOPS_RETIRED.MS@c1@e1` as `UOPS_RETIRED.MS:c1:e1`).
//!
//! **Combining groups.** The groups take turns on the PMU (the kernel multiplexes them), so
//! the raw sums of two groups cover different stretches of time and must never be mixed.
//! Each event's value for a row is therefore taken as a rate per cycle of its own group and
//! scaled to the row's cycles: `value_e = sum_e / cycles_g × C`, where `cycles_g` is the
//! cycles delta of the group `g` that counted `e` in that row, and `C` the row's cycles in
//! its *reference group*, the group with the most reads in that row (the best estimate of
//! the row's time; for its own events the factor is 1, so a formula over one group is
//! exactly Intel's formula on that group's deltas). An event counted in several groups (the
//! cycles of every group) takes the group with the most reads.
//!
//! **Per core PMU.** A setup reads the groups of one metric source
//! ([`RowMetricsSetup::for_pmu`]): Intel's file for the P-cores (and for a part with one core
//! type), hrec's E-core tree ([`crate::metrics::ecore`]) for each E-core PMU of a hybrid
//! part, since Intel's file there is the P-core's. A report holds one [`MetricReport`] per
//! source ([`MetricReports`]), each for the tables of its own groups; an E-core table keeps
//! its `topdown` columns besides.
//!
//! **Time on the PMU.** The metric groups' reads carry `time_enabled` and `time_running`;
//! the trailer's final counts of each sampler give its group's share of the recording's
//! time on the PMU (about one over the number of groups per core PMU, as the kernel
//! rotates them), said in the notes and kept per group in the rows'
//! [`GroupReads::time_running_share`] ([`RowMetricsSetup::read_pmu_times`]).
//!
//! **Too few reads.** A metric whose events come from a group with fewer than
//! [`MetricOptions::min_reads`] reads in the row ([`DEFAULT_MIN_READS`], `--metric-min-reads`)
//! is `null`: three samples make no ratio worth printing.
//!
//! **Constants.** `smt_on` and `threads_per_core` come from the recording's topology
//! ([`Meta::threads_per_core`]: `smt_on` when a core runs more than one thread); a file
//! without it (written before hrec kept it) takes Intel's default, off, and
//! [`RowMetricsSetup::notes`] says so. The model's own constants are the metric file's.
//! `:R` terms (retire latencies) take the row's mean retire latency of that event from the
//! recording's `-W` samples of it when the row has some, else Intel's default (`MEAN` of the
//! retire-latency file), and each row says which ([`RowMetrics::retire_latencies`]).
//!
//! **The bottleneck** is toplev's `<==` path: from level 1, the node with the largest value
//! whose `Threshold` holds on the row, then among its children the largest past its
//! threshold, down to a node with no such child.
//!
//! **Intel's level 1 is not the `topdown` columns.** The report's `topdown` / `level2`
//! columns are the perf-metrics shares of the slots group (each `topdown-*` over their sum,
//! level 2 by subtraction, as perf shows them); Intel's formulas differ (on Granite Rapids
//! `tma_frontend_bound` subtracts `INT_MISC.UOP_DROPPING` per slot, `tma_bad_speculation`
//! is the remainder `1 - FE - BE - RET`). Both are kept: `metrics` holds Intel's values.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::FastMap;
use super::hist::Table;
use super::profile::Profile;
use crate::data::{Meta, Role, Trailer};
use crate::decode::ReadValues;
use crate::event::attr::{read, types};
use crate::metrics::Constants;
use crate::metrics::perfmon::{Encoding, EventRef, Metric, Perfmon};

/// The fewest group reads a row needs before a metric using that group gets a number.
pub const DEFAULT_MIN_READS: u64 = 20;

/// The group of a sampler whose samples read the whole group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMembers {
    /// The sampler (index into `Meta::events`).
    pub sampler: usize,
    /// The group's events in the group's (and the read's) order, indexes into
    /// `Meta::events`.
    pub members: Vec<usize>,
}

/// The groups of a recording's group-reading samplers, and where each member id sits.
#[derive(Debug, Clone, Default)]
pub struct MemberMap {
    groups: Vec<GroupMembers>,
    /// Per `Meta::events` index: its sampler group, if it samples one.
    of_event: Vec<Option<usize>>,
    /// Member id → its position in its group.
    pos_of_id: FastMap<u64, u16>,
}

impl MemberMap {
    /// The groups of `meta`: every sampler reading a group (`PERF_FORMAT_GROUP`) of more than
    /// one event.
    pub fn new(meta: &Meta) -> MemberMap {
        let mut m = MemberMap {
            of_event: vec![None; meta.events.len()],
            ..MemberMap::default()
        };
        for (i, e) in meta.events.iter().enumerate() {
            if e.role != Role::Sampler
                || e.attr.read_format & read::GROUP == 0
                || e.attr.sample_type & crate::event::attr::sample::READ == 0
            {
                continue;
            }
            let members: Vec<usize> = (0..meta.events.len())
                .filter(|&j| meta.events[j].leader == e.leader)
                .collect();
            if members.len() < 2 {
                continue;
            }
            // A member that samples too (perf keeps the sample-after value of an event named
            // by Intel's name in a `:S` group) reads the same counters: its samples are
            // samples of that event, and the group's deltas are taken from the first sampler
            // in group order (perf's read sampler) only, so they count once.
            if members
                .iter()
                .find(|&&j| meta.events[j].role == Role::Sampler)
                .is_some_and(|&first| first != i)
            {
                continue;
            }
            for (pos, &j) in members.iter().enumerate() {
                for id in &meta.events[j].ids {
                    m.pos_of_id.insert(id.id, pos as u16);
                }
            }
            m.of_event[i] = Some(m.groups.len());
            m.groups.push(GroupMembers {
                sampler: i,
                members,
            });
        }
        m
    }

    /// The group event `ev` (index into `Meta::events`) samples, if any.
    pub fn of_event(&self, ev: usize) -> Option<&GroupMembers> {
        self.groups.get((*self.of_event.get(ev)?)?)
    }

    /// The groups.
    pub fn groups(&self) -> &[GroupMembers] {
        &self.groups
    }
}

/// The previous read of every group, to turn cumulative reads into per-member deltas.
#[derive(Debug, Default)]
pub struct MemberTracker {
    prev: FastMap<(u32, u64), Vec<u64>>,
}

impl MemberTracker {
    /// What each member of `group` added since the previous read with the same key, written
    /// into `out` in the group's order. `tid` is `Some` when the event inherits. A value
    /// below the previous one (a reset) counts whole.
    pub fn deltas(
        &mut self,
        map: &MemberMap,
        group: &GroupMembers,
        tid: Option<u32>,
        id: u64,
        read: &ReadValues<'_>,
        out: &mut Vec<u64>,
    ) {
        out.clear();
        out.resize(group.members.len(), 0);
        let prev = self.prev.entry((tid.unwrap_or(u32::MAX), id)).or_default();
        prev.resize(read.len().max(group.members.len()), 0);
        for (i, entry) in read.iter().enumerate() {
            // The member by its id (by its place in the read without ids).
            let pos = entry
                .id
                .and_then(|id| map.pos_of_id.get(&id).copied())
                .map_or(i, usize::from);
            let (Some(before), Some(slot)) = (prev.get_mut(pos), out.get_mut(pos)) else {
                continue;
            };
            let d = entry.value.checked_sub(*before).unwrap_or(entry.value);
            *before = entry.value;
            *slot = slot.saturating_add(d);
        }
    }
}

/// An event's encoding as compared between a recording's attrs and Intel's event file:
/// `config` (event select, unit mask, edge, inv, cmask, second unit mask) and `config1`
/// (the extra MSR's value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EncKey {
    /// The `config` bits that select the event.
    pub config: u64,
    /// `config1`.
    pub config1: u64,
}

/// The `config` bits that select a core event (event, umask, edge, inv, cmask, umask2).
const CONFIG_MASK: u64 = 0xff | 0xff << 8 | 1 << 18 | 1 << 23 | 0xff << 24 | 0xff << 40;

impl EncKey {
    /// The key of a recorded core-PMU event, `None` for other PMUs.
    pub fn of_attr(attr: &crate::event::Attr, core_pmu: bool) -> Option<EncKey> {
        let config = match attr.type_ {
            types::HARDWARE => match attr.config & 0xffff_ffff {
                0 => 0x3c,
                1 => 0xc0,
                9 => 0x0300,
                _ => return None,
            },
            _ if core_pmu || attr.type_ == types::RAW => attr.config & CONFIG_MASK,
            _ => return None,
        };
        Some(EncKey {
            config: normalize(config),
            config1: if attr.type_ == types::HARDWARE {
                0
            } else {
                attr.config1
            },
        })
    }

    /// The key of Intel's encoding of an event.
    pub fn of_encoding(e: &Encoding) -> Option<EncKey> {
        match e {
            Encoding::Counter(r) => {
                let config = u64::from(r.event_code & 0xff)
                    | u64::from(r.umask & 0xff) << 8
                    | u64::from(r.edge) << 18
                    | u64::from(r.inv) << 23
                    | u64::from(r.cmask & 0xff) << 24
                    | u64::from(r.umask_ext & 0xff) << 40;
                Some(EncKey {
                    config: normalize(config),
                    config1: r.msr.map_or(0, |(_, v)| v),
                })
            }
            Encoding::TopdownMetric { umask, .. } => Some(EncKey {
                config: u64::from(*umask) << 8,
                config1: 0,
            }),
            Encoding::Tsc => None,
        }
    }
}

/// Intel's fixed-counter pseudo-encodings as the general-counter events they count.
fn normalize(config: u64) -> u64 {
    match config {
        0x0100 => 0xc0,
        0x0200 => 0x3c,
        other => other,
    }
}

/// What to compute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricOptions {
    /// `--td-level N` (N ≥ 3): every TMA node of levels 1 to N.
    pub td_level: Option<u32>,
    /// `--metrics LIST`: metric names (perf's `tma_*` or Intel's), groups (`TopdownL3`,
    /// `tma_<node>_group`).
    pub metrics: Vec<String>,
    /// The fewest reads of a group a metric's row needs ([`DEFAULT_MIN_READS`]).
    pub min_reads: u64,
}

impl Default for MetricOptions {
    fn default() -> Self {
        MetricOptions {
            td_level: None,
            metrics: Vec::new(),
            min_reads: DEFAULT_MIN_READS,
        }
    }
}

/// Why no metric can be computed per row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowMetricsError {
    /// The recording has no group-reading sampler of more than one event.
    #[error(
        "the recording has no metric groups (record with `hrec record --td-level 3` or `-M LIST`)"
    )]
    NoGroups,
    /// A name matched no metric or group.
    #[error("unknown metric or group: {0}")]
    Unknown(String),
    /// Nothing was chosen.
    #[error("no metric chosen")]
    NothingChosen,
}

/// A member of a group, as the evaluation sees it.
#[derive(Debug, Clone)]
struct Member {
    key: Option<EncKey>,
    /// The recorded name as an event reference (`UOPS_RETIRED.MS@c1@e1` →
    /// `UOPS_RETIRED.MS:c1:e1`), for a member whose encoding is not known.
    name: String,
}

/// An event reference as compared with a recorded name: upper case, modifiers as Intel
/// writes them.
fn name_key(text: &str) -> String {
    let base = crate::event::base_name(text);
    EventRef::parse(&base.replace('@', ":"))
        .to_string()
        .to_ascii_uppercase()
}

/// Intel's topology constants from the recording's threads per core: `smt_on` when a core
/// runs more than one thread; unknown (an earlier file) is Intel's default, one thread.
pub fn topology_constants(threads_per_core: Option<u32>) -> Constants {
    let threads = threads_per_core.unwrap_or(1).max(1);
    Constants {
        smt_on: Some(threads > 1),
        threads_per_core: Some(f64::from(threads)),
        ..Constants::default()
    }
}

/// A metric group of the recording, by the profile's event of its sampler.
#[derive(Debug, Clone)]
struct Group {
    /// Index into `Profile::events`.
    event: usize,
    /// The sampler's name and group number, for the output.
    label: String,
    members: Vec<Member>,
    /// The sampler's position among the members (the group's cycles).
    cycles: usize,
    /// The sampler's index in `Meta::events`.
    sampler: usize,
    /// The group's share of the recording's time on the PMU ([`RowMetricsSetup::read_pmu_times`]).
    time_share: Option<f64>,
}

/// One metric group's time on the PMU over the whole recording: the sum over its sampler's
/// file descriptors of the final `time_enabled` and `time_running` (the trailer's counts).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GroupTime {
    /// The group's sampler (`cycles:P #3`).
    pub group: String,
    /// Nanoseconds the group was enabled.
    pub time_enabled_ns: u64,
    /// Nanoseconds it was counting on the PMU.
    pub time_running_ns: u64,
}

impl GroupTime {
    /// `time_running / time_enabled`, `None` when it was never enabled.
    pub fn share(&self) -> Option<f64> {
        (self.time_enabled_ns > 0)
            .then(|| (self.time_running_ns as f64 / self.time_enabled_ns as f64).min(1.0))
    }
}

/// One group's member sums and reads in a row (`None`: no read of it there).
pub type GroupSums<'a> = Option<(&'a [u64], u64)>;

/// Intel's metrics, the recording's groups and the constants: what evaluates a row.
#[derive(Debug)]
pub struct RowMetricsSetup<'a> {
    perfmon: &'a Perfmon,
    chosen: Vec<&'a Metric>,
    groups: Vec<Group>,
    /// `:R` events' keys, for the recording's `-W` samplers of them.
    latency_events: Vec<(String, usize)>,
    /// Every `:R` event the chosen metrics name.
    latency_names: Vec<String>,
    constants: Constants,
    min_reads: u64,
    /// Said once per report (`smt_on`'s source, unmatched events).
    pub notes: Vec<String>,
}

/// One group's reads in a row.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GroupReads {
    /// The group's sampler (`cycles:P #3`).
    pub group: String,
    /// Reads of the group attributed to the row.
    pub reads: u64,
    /// The group's cycles in the row.
    pub cycles: u64,
    /// The group's share of the whole recording's time on the PMU (`time_running /
    /// time_enabled` of its final counts; the groups are multiplexed), when the recording
    /// keeps it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_running_share: Option<f64>,
}

/// Where a `:R` term's value came from.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RetireLatencyTerm {
    /// Mean cycles.
    pub value: f64,
    /// `recording` (the row's `-W` samples of the event) or `intel` (Intel's default).
    pub source: &'static str,
}

/// A row's metrics.
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct RowMetrics {
    /// perf's metric name → Intel's value (percent for TMA nodes), `None` when not computed.
    pub metrics: Vec<(String, Option<f64>)>,
    /// The bottleneck path, level 1 first.
    pub bottleneck: Vec<String>,
    /// Per group, its reads.
    pub groups: Vec<GroupReads>,
    /// The `:R` terms used, by Intel's event name.
    pub retire_latencies: BTreeMap<String, RetireLatencyTerm>,
}

impl RowMetrics {
    /// The value of a metric by perf's name.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| *v)
    }
}

/// A metric's level and parent in the TMA tree, for the text tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeNode {
    /// perf's name.
    pub name: String,
    /// `Level` (0 for a metric outside the tree).
    pub level: u32,
    /// The parent node's perf name.
    pub parent: Option<String>,
}

impl<'a> RowMetricsSetup<'a> {
    /// Chooses the metrics of `o` from `perfmon` and finds the groups of the recording on
    /// every core PMU but the E-cores' (Intel's metric file of a hybrid part is the P-core's).
    pub fn new(
        perfmon: &'a Perfmon,
        meta: &Meta,
        p: &Profile,
        o: &MetricOptions,
    ) -> Result<RowMetricsSetup<'a>, RowMetricsError> {
        RowMetricsSetup::for_pmu(perfmon, meta, p, o, None)
    }

    /// As [`RowMetricsSetup::new`], for the groups of the core PMU `pmu` only (`cpu_atom`
    /// with hrec's E-core tree, [`crate::metrics::ecore`]); `None`: every group not on an
    /// E-core PMU of a hybrid part.
    pub fn for_pmu(
        perfmon: &'a Perfmon,
        meta: &Meta,
        p: &Profile,
        o: &MetricOptions,
        pmu: Option<&str>,
    ) -> Result<RowMetricsSetup<'a>, RowMetricsError> {
        let map = MemberMap::new(meta);
        let core_pmu = |name: Option<&str>| {
            name.is_some_and(|n| matches!(n, "cpu" | "cpu_core" | "cpu_atom" | "cpu_lowpower"))
        };
        let mut groups = Vec::new();
        for g in map.groups() {
            let on = meta.events[g.sampler].pmu.as_deref();
            let wanted = match pmu {
                Some(want) => on == Some(want),
                None => !is_ecore_pmu(on),
            };
            if !wanted {
                continue;
            }
            let Some(event) = p.events.iter().position(|e| e.index == g.sampler) else {
                continue;
            };
            let members: Vec<Member> = g
                .members
                .iter()
                .map(|&j| {
                    let e = &meta.events[j];
                    Member {
                        key: EncKey::of_attr(&e.attr, core_pmu(e.pmu.as_deref())),
                        name: name_key(&e.name),
                    }
                })
                .collect();
            let cycles = g.members.iter().position(|&j| j == g.sampler).unwrap_or(0);
            groups.push(Group {
                event,
                label: format!("{} #{}", p.events[event].name, groups.len()),
                members,
                cycles,
                sampler: g.sampler,
                time_share: None,
            });
        }
        // The default TopDown group (slots, `topdown-*`, cycles) is no metric group: a
        // metric group counts some other event.
        let plain = |k: &Option<EncKey>| {
            k.is_none_or(|k| {
                k.config1 == 0
                    && (matches!(k.config, 0x3c | 0xc0 | 0x0300 | 0x0400)
                        || (k.config & 0xff == 0 && (0x80..=0x87).contains(&(k.config >> 8))))
            })
        };
        if !groups
            .iter()
            .any(|g| g.members.iter().any(|m| !plain(&m.key)))
        {
            return Err(RowMetricsError::NoGroups);
        }
        let mut chosen: Vec<&Metric> = Vec::new();
        let push = |m: &'a Metric, chosen: &mut Vec<&'a Metric>| {
            if !chosen.iter().any(|c| std::ptr::eq(*c, m)) {
                chosen.push(m);
            }
        };
        if let Some(level) = o.td_level {
            for m in perfmon.tma_metrics(level) {
                push(m, &mut chosen);
            }
        }
        for name in o.metrics.iter().flat_map(|n| n.split(',')) {
            let name = name.trim();
            if name.is_empty() {
                continue;
            }
            let found = lookup(perfmon, name);
            if found.is_empty() {
                let closest = crate::event::plan::metric::closest_names(perfmon, name);
                return Err(RowMetricsError::Unknown(if closest.is_empty() {
                    name.to_string()
                } else {
                    format!("{name} (closest: {})", closest.join(", "))
                }));
            }
            for m in found {
                push(m, &mut chosen);
            }
        }
        if chosen.is_empty() {
            return Err(RowMetricsError::NothingChosen);
        }
        // `:R` events and the recording's samplers of them.
        let mut latency_events = Vec::new();
        let mut latency_names = Vec::new();
        for e in perfmon.events_needed(chosen.iter().copied()) {
            if !e.retire_latency {
                continue;
            }
            if !latency_names.contains(&e.name) {
                latency_names.push(e.name.clone());
            }
            let plain = EventRef {
                retire_latency: false,
                ..e.clone()
            };
            let Some(key) = perfmon
                .resolve(&plain)
                .ok()
                .and_then(|x| EncKey::of_encoding(&x))
            else {
                continue;
            };
            if let Some(ev) = p.events.iter().position(|pe| {
                pe.index < meta.events.len()
                    && EncKey::of_attr(
                        &meta.events[pe.index].attr,
                        core_pmu(meta.events[pe.index].pmu.as_deref()),
                    ) == Some(key)
                    && pe.weight_struct
            }) {
                latency_events.push((e.name.clone(), ev));
            }
        }
        let mut notes = Vec::new();
        if meta.threads_per_core.is_none() {
            notes.push(
                "metrics: smt_on is Intel's default (off): the recording does not keep the CPU's threads per core (recorded before hrec kept it, or no topology in sysfs)".to_string(),
            );
        }
        let missing: Vec<String> = perfmon
            .events_needed(chosen.iter().copied())
            .into_iter()
            .filter(|e| !e.retire_latency)
            .filter_map(|e| {
                let key = EncKey::of_encoding(&perfmon.resolve(&e).ok()?)?;
                let name = name_key(&e.to_string());
                let found = |m: &Member| match m.key {
                    Some(k) => k == key,
                    None => m.name == name,
                };
                (!groups.iter().any(|g| g.members.iter().any(found))).then(|| e.to_string())
            })
            .collect();
        if !missing.is_empty() {
            notes.push(format!(
                "metrics: {} events of the chosen metrics are in no group of the recording, so the metrics needing them are null (record with the same --td-level or -M): {}",
                missing.len(),
                missing.join(", ")
            ));
        }
        Ok(RowMetricsSetup {
            perfmon,
            chosen,
            groups,
            latency_events,
            latency_names,
            constants: topology_constants(meta.threads_per_core),
            min_reads: o.min_reads,
            notes,
        })
    }

    /// The chosen metrics in file order, with their level for the tree (0 outside it).
    pub fn nodes(&self) -> Vec<TreeNode> {
        self.chosen
            .iter()
            .map(|m| TreeNode {
                name: m.perf_name(),
                level: if m.is_tma_node() { m.level } else { 0 },
                parent: m
                    .parent
                    .as_deref()
                    .and_then(|p| self.perfmon.metric(p))
                    .map(Metric::perf_name),
            })
            .collect()
    }

    /// Whether the profile event `ev` samples one of the metric groups.
    pub fn is_group_event(&self, ev: usize) -> bool {
        self.groups.iter().any(|g| g.event == ev)
    }

    /// The fewest reads of a group a metric needs.
    pub fn min_reads(&self) -> u64 {
        self.min_reads
    }

    /// The `:R` events whose row means come from the recording's `-W` samplers: Intel's
    /// event name and the profile event (index into `Profile::events`) sampling it, for an
    /// aggregation of its own to give [`RowMetricsSetup::evaluate`] its `latency`.
    pub fn latency_events(&self) -> &[(String, usize)] {
        &self.latency_events
    }

    /// The chosen metric named `name` (perf's name), if chosen.
    pub fn chosen_metric(&self, name: &str) -> Option<&'a Metric> {
        self.chosen.iter().copied().find(|m| m.perf_name() == name)
    }

    /// Each group's time on the PMU from the trailer's final counts of its sampler (summed
    /// over its file descriptors: CPUs, and with `inherit` every thread), kept for the rows'
    /// [`GroupReads::time_running_share`] and said in one note. A recording without them
    /// (no trailer, or made before the metric groups read their times) gets a note saying
    /// so and no shares.
    pub fn read_pmu_times(&mut self, trailer: Option<&Trailer>) -> Vec<GroupTime> {
        let times: Vec<GroupTime> = self
            .groups
            .iter()
            .map(|g| {
                let (enabled, running) = trailer
                    .map(|t| t.counts.as_slice())
                    .unwrap_or_default()
                    .iter()
                    .filter(|c| c.event == g.sampler)
                    .fold((0u64, 0u64), |(e, r), c| {
                        (
                            e.saturating_add(c.time_enabled),
                            r.saturating_add(c.time_running),
                        )
                    });
                GroupTime {
                    group: g.label.clone(),
                    time_enabled_ns: enabled,
                    time_running_ns: running,
                }
            })
            .collect();
        for (g, t) in self.groups.iter_mut().zip(&times) {
            g.time_share = t.share();
        }
        if times.iter().all(|t| t.share().is_none()) {
            self.notes.push(
                "metrics: the recording keeps no group's time on the PMU (made before hrec kept it, or unfinished)".into(),
            );
        } else {
            let each: Vec<String> = times
                .iter()
                .map(|t| match t.share() {
                    Some(s) => format!("{} {:.1}%", t.group, 100.0 * s),
                    None => format!("{} -", t.group),
                })
                .collect();
            self.notes.push(format!(
                "metrics: each metric group's time on the PMU (running / enabled; the kernel rotates the groups): {}",
                each.join(", ")
            ));
        }
        times
    }

    /// The profile events (indexes into `Profile::events`) of the metric groups, in the
    /// group order [`RowMetricsSetup::evaluate`] takes their sums in.
    pub fn group_events(&self) -> Vec<usize> {
        self.groups.iter().map(|g| g.event).collect()
    }

    /// Evaluates every chosen metric on one row: `sums[g]` is group `g`'s member sums and
    /// reads in the row (in [`RowMetricsSetup::group_events`]' order), `latency(name)` the
    /// row's mean retire latency of a `:R` event from the recording, if it has one. Any
    /// aggregation of member sums (a function's, a basic block's, a flame graph frame's) is
    /// evaluated through here, as [`RowMetricsSetup::rows`] does for a report's rows.
    pub fn evaluate(
        &self,
        sums: &[GroupSums<'_>],
        latency: &dyn Fn(&str) -> Option<f64>,
    ) -> RowMetrics {
        let mut out = RowMetrics {
            groups: self
                .groups
                .iter()
                .zip(sums)
                .map(|(g, s)| GroupReads {
                    group: g.label.clone(),
                    reads: s.map_or(0, |s| s.1),
                    cycles: s.and_then(|s| s.0.get(g.cycles).copied()).unwrap_or(0),
                    time_running_share: g.time_share,
                })
                .collect(),
            ..RowMetrics::default()
        };
        // The reference group: the most reads, the first on a tie.
        let reference = (0..self.groups.len())
            .filter(|&g| out.groups[g].reads > 0)
            .max_by_key(|&g| (out.groups[g].reads, std::cmp::Reverse(g)));
        let row_cycles = reference.map(|g| out.groups[g].cycles as f64);
        let counts = |e: &EventRef| -> Option<f64> {
            // By encoding; by name only for a member whose encoding is unknown.
            let key = self
                .perfmon
                .resolve(e)
                .ok()
                .and_then(|x| EncKey::of_encoding(&x));
            let by_name = name_key(&e.to_string());
            let matches = |m: &Member| match (m.key, key) {
                (Some(a), Some(b)) => a == b,
                (None, _) => m.name == by_name,
                (Some(_), None) => false,
            };
            let c = row_cycles?;
            let (g, pos) = self
                .groups
                .iter()
                .enumerate()
                .filter_map(|(gi, g)| {
                    let pos = g.members.iter().position(matches)?;
                    Some((gi, pos))
                })
                .max_by_key(|&(gi, _)| (out.groups[gi].reads, std::cmp::Reverse(gi)))?;
            if out.groups[g].reads < self.min_reads {
                return None;
            }
            let v = *sums[g]?.0.get(pos)? as f64;
            if Some(g) == reference {
                return Some(v);
            }
            let cg = out.groups[g].cycles;
            (cg > 0).then(|| v / cg as f64 * c)
        };
        // The `:R` terms: the row's mean from the recording, else Intel's default.
        let term = |name: &str| -> Option<RetireLatencyTerm> {
            Some(match latency(name) {
                Some(value) => RetireLatencyTerm {
                    value,
                    source: "recording",
                },
                None => RetireLatencyTerm {
                    value: self.perfmon.default_retire_latency(name)?,
                    source: "intel",
                },
            })
        };
        out.retire_latencies = self
            .latency_names
            .iter()
            .filter_map(|n| Some((n.clone(), term(n)?)))
            .collect();
        let retire = |name: &str| term(name).map(|t| t.value);
        let cache: std::cell::RefCell<HashMap<*const Metric, Option<f64>>> = Default::default();
        let value = |m: &Metric| -> Option<f64> {
            if let Some(v) = cache.borrow().get(&(m as *const Metric)) {
                return *v;
            }
            let v = m
                .evaluate(&counts, &retire, &self.constants)
                .ok()
                .filter(|v| v.is_finite());
            cache.borrow_mut().insert(m as *const Metric, v);
            v
        };
        out.metrics = self
            .chosen
            .iter()
            .map(|m| (m.perf_name(), value(m)))
            .collect();
        // The bottleneck path.
        let past = |m: &Metric| -> Option<f64> {
            let v = value(m)?;
            matches!(self.perfmon.threshold_holds(m, &value), Ok(Some(true))).then_some(v)
        };
        let pick = |cands: Vec<&'a Metric>| -> Option<&'a Metric> {
            cands
                .into_iter()
                .filter_map(|m| Some((m, past(m)?)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(m, _)| m)
        };
        let mut node = pick(
            self.chosen
                .iter()
                .copied()
                .filter(|m| m.is_tma_node() && m.level == 1)
                .collect(),
        );
        while let Some(m) = node {
            out.bottleneck.push(m.perf_name());
            node = pick(
                self.chosen
                    .iter()
                    .copied()
                    .filter(|c| c.is_tma_node() && c.parent.as_deref() == Some(m.name.as_str()))
                    .collect(),
            );
        }
        out
    }

    /// Every row's metrics: the rows of the metric groups' tables joined by their keys, in
    /// the order each key is first met.
    pub fn rows(&self, tables: &[Table]) -> MetricRows {
        let mut index: HashMap<&[String], usize> = HashMap::new();
        let mut keys: Vec<&[String]> = Vec::new();
        let mut sums: Vec<Vec<GroupSums<'_>>> = Vec::new();
        for t in tables {
            let Some(gi) = self.groups.iter().position(|g| g.event == t.event) else {
                continue;
            };
            for r in &t.rows {
                let next = keys.len();
                let at = *index.entry(r.key.as_slice()).or_insert(next);
                if at == next {
                    keys.push(r.key.as_slice());
                    sums.push(vec![None; self.groups.len()]);
                }
                if let Some((m, n)) = &r.members {
                    sums[at][gi] = Some((m.as_slice(), *n));
                }
            }
        }
        let lat_rows: Vec<(String, HashMap<&[String], f64>)> = self
            .latency_events
            .iter()
            .filter_map(|(name, ev)| {
                let t = tables.iter().find(|t| t.event == *ev)?;
                let m = t
                    .rows
                    .iter()
                    .filter_map(|r| Some((r.key.as_slice(), r.latency?.mean)))
                    .filter(|(_, m)| *m > 0.0)
                    .collect();
                Some((name.clone(), m))
            })
            .collect();
        let mut out = MetricRows::default();
        for (k, s) in keys.iter().zip(&sums) {
            let latency = |name: &str| {
                lat_rows
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .and_then(|(_, m)| m.get(k).copied())
            };
            out.rows.insert(k.to_vec(), self.evaluate(s, &latency));
        }
        out
    }
}

/// What a report shows of the metrics: every row's, the chosen nodes in order, the tables
/// (profile events) they belong to, and the notes.
#[derive(Debug, Clone, Default)]
pub struct MetricReport {
    /// Per row key.
    pub rows: MetricRows,
    /// The chosen metrics in file order, with their levels.
    pub nodes: Vec<TreeNode>,
    /// The profile events whose tables' rows carry them (the metric groups' samplers).
    pub events: Vec<usize>,
    /// Notes for the report's header.
    pub notes: Vec<String>,
    /// The fewest reads of a group a metric needs ([`MetricOptions::min_reads`]).
    pub min_reads: u64,
    /// The core PMU whose groups these are, when the metrics are its own (`cpu_atom`: hrec's
    /// E-core tree); `None` for Intel's file of the P-cores or of a part with one core type.
    pub pmu: Option<String>,
}

/// The metric reports of a recording, one per metric source ([`MetricReport::pmu`]): on a
/// hybrid part the P-cores' from Intel's file and the E-cores' from hrec's E-core tree, each
/// for the tables of its own groups.
#[derive(Debug, Clone, Default)]
pub struct MetricReports {
    /// The reports, P-cores first.
    pub reports: Vec<MetricReport>,
}

impl MetricReports {
    /// The report whose groups' tables include the profile event `ev`'s.
    pub fn for_event(&self, ev: usize) -> Option<&MetricReport> {
        self.reports.iter().find(|m| m.events.contains(&ev))
    }
}

impl MetricReport {
    /// The lines of a row's tree for the text report: every chosen node whose parent is not
    /// chosen (level 1 with `--td-level`), and the children of each node on the bottleneck
    /// path, indented by level, with the value (`-` when not computed) and `<==` on the
    /// path; then the metrics outside the tree.
    pub fn tree_lines(&self, r: &RowMetrics) -> Vec<String> {
        let mut out = Vec::new();
        let reads: Vec<String> = r.groups.iter().map(|g| g.reads.to_string()).collect();
        let whose = match &self.pmu {
            Some(p) => format!("Intel's E-core metrics on {p}"),
            None => "Intel's metrics".to_string(),
        };
        out.push(format!(
            "{whose} (group reads: {}; -: not computed, fewer than {} reads of a group it needs, or an event not recorded):",
            reads.join(" "),
            self.min_reads
        ));
        let width = self
            .nodes
            .iter()
            .map(|n| n.name.len() + 2 * n.level as usize)
            .max()
            .unwrap_or(0);
        let cell = |name: &str| match r.get(name) {
            Some(v) => format!("{v:>7.1}"),
            None => format!("{:>7}", "-"),
        };
        // A node shows when its parent is not chosen (a root: level 1, or the top of a
        // `--metrics` list) or is on the bottleneck path.
        fn walk(
            rep: &MetricReport,
            r: &RowMetrics,
            parent: Option<&str>,
            width: usize,
            cell: &dyn Fn(&str) -> String,
            out: &mut Vec<String>,
        ) {
            let chosen = |name: &str| rep.nodes.iter().any(|n| n.level > 0 && n.name == name);
            for n in rep.nodes.iter().filter(|n| {
                n.level > 0
                    && match parent {
                        None => n.parent.as_deref().is_none_or(|p| !chosen(p)),
                        Some(p) => n.parent.as_deref() == Some(p),
                    }
            }) {
                let on_path = r.bottleneck.contains(&n.name);
                let indent = "  ".repeat(n.level as usize);
                let name = format!("{indent}{}", n.name);
                out.push(format!(
                    "{name:<width$} {}{}",
                    cell(&n.name),
                    if on_path { "  <==" } else { "" }
                ));
                if on_path {
                    walk(rep, r, Some(&n.name), width, cell, out);
                }
            }
        }
        walk(self, r, None, width, &cell, &mut out);
        for n in self.nodes.iter().filter(|n| n.level == 0) {
            out.push(format!(
                "{:<width$} {}",
                format!("  {}", n.name),
                cell(&n.name)
            ));
        }
        out
    }
}

/// Whether `pmu` is a hybrid part's E-core PMU (`cpu_atom`, Arrow Lake-H's `cpu_lowpower`).
pub fn is_ecore_pmu(pmu: Option<&str>) -> bool {
    matches!(pmu, Some("cpu_atom" | "cpu_lowpower"))
}

/// The value past which Intel flags metric `m` by itself: the bound of its own clause
/// `( a > N )` (or `>=`) in its `Threshold` formula, where `a` is the alias of the metric's
/// own `LegacyName` (`( a > 5 ) & ( b > 20 )` for `tma_l3_bound`: 5). `None` when the
/// formula has no such clause (no threshold, or one on other metrics only).
pub fn own_threshold(m: &Metric) -> Option<f64> {
    let t = m.threshold.as_ref()?;
    let legacy = m.legacy_name.as_deref()?;
    let alias = &t.metrics.iter().find(|x| x.legacy_name == legacy)?.alias;
    let text = t
        .formula()
        .ok()?
        .source()
        .replace('(', " ( ")
        .replace(')', " ) ");
    let toks: Vec<&str> = text.split_whitespace().collect();
    toks.windows(3).find_map(|w| {
        (w[0] == alias.as_str() && matches!(w[1], ">" | ">="))
            .then(|| w[2].parse::<f64>().ok())
            .flatten()
    })
}

/// The metrics of every row, by row key.
#[derive(Debug, Clone, Default)]
pub struct MetricRows {
    /// Row key (as [`super::hist::Row::key`]) → its metrics.
    pub rows: HashMap<Vec<String>, RowMetrics>,
}

/// The metrics a `--metrics` name stands for, as `record -M` reads it
/// ([`crate::event::plan::metric`]): a metric by Intel's or perf's name, a bare `IPC`/`CPI`
/// for Intel's `Info_Thread_*`, a group (`TopdownL3`), perf's `tma_<node>_group`.
fn lookup<'a>(perfmon: &'a Perfmon, name: &str) -> Vec<&'a Metric> {
    if let Some(m) = perfmon
        .metric(name)
        .or_else(|| perfmon.metric(&format!("Info_Thread_{name}")))
    {
        return vec![m];
    }
    let mut found = perfmon.metrics_in_group(name);
    found.extend(crate::event::plan::metric::node_group(perfmon, name));
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Attr;
    use crate::metrics::perfmon::RawEvent;

    fn raw(event_code: u32, umask: u32) -> RawEvent {
        RawEvent {
            name: "X".into(),
            event_code,
            umask,
            ..RawEvent::default()
        }
    }

    #[test]
    fn generic_cycles_and_intels_fixed_encodings_are_one_key() {
        let cycles = EncKey::of_attr(&Attr::new(types::HARDWARE, 0), false).unwrap();
        // CPU_CLK_UNHALTED.THREAD (fixed 1: event 0x00 umask 0x02) and _P (0x3c).
        let fixed = EncKey::of_encoding(&Encoding::Counter(raw(0, 2))).unwrap();
        let general = EncKey::of_encoding(&Encoding::Counter(raw(0x3c, 0))).unwrap();
        assert_eq!(cycles, fixed);
        assert_eq!(cycles, general);
        // A hybrid PMU's extended type in the high bits of `config`.
        let hybrid = EncKey::of_attr(&Attr::new(types::HARDWARE, 0x8_0000_0001), false).unwrap();
        assert_eq!(
            hybrid,
            EncKey::of_encoding(&Encoding::Counter(raw(0, 1))).unwrap()
        );
        // `topdown-be-bound` and slots on a core PMU.
        let be = EncKey::of_attr(&Attr::new(4, 0x8300), true).unwrap();
        assert_eq!(
            be,
            EncKey::of_encoding(&Encoding::TopdownMetric {
                umask: 0x83,
                sysfs_name: "topdown-be-bound"
            })
            .unwrap()
        );
        // Modifiers and the extra MSR are part of the key.
        let mut ms = raw(0xc2, 0x04);
        ms.cmask = 1;
        ms.edge = true;
        ms.msr = Some((0x3F7, 0x8));
        let mut a = Attr::new(4, 0xc2 | 0x04 << 8 | 1 << 18 | 1 << 24);
        a.config1 = 0x8;
        assert_eq!(
            EncKey::of_attr(&a, true),
            EncKey::of_encoding(&Encoding::Counter(ms.clone()))
        );
        a.config1 = 0x7;
        assert_ne!(
            EncKey::of_attr(&a, true),
            EncKey::of_encoding(&Encoding::Counter(ms))
        );
        // Not a core PMU: no key.
        assert_eq!(EncKey::of_attr(&Attr::new(17, 0x3c), false), None);
    }

    /// perf's `{cycles,EV1,EV2}:S` with EV1 named by Intel's name keeps its period: EV1
    /// samples too, yet the group is read once, by its first sampler (the leader).
    #[test]
    fn a_member_that_samples_too_makes_no_second_group() {
        use crate::data::{EventId, EventMeta};
        use crate::event::attr::sample;
        let ev = |i: u64, config: u64, period: u64| {
            let mut attr = Attr::new(if i == 0 { types::HARDWARE } else { 4 }, config);
            attr.sample_period_or_freq = period;
            attr.sample_type = sample::IP | sample::READ | sample::IDENTIFIER;
            attr.read_format = read::ID | read::GROUP;
            EventMeta {
                name: format!("e{i}"),
                pmu: Some("cpu".into()),
                attr,
                leader: 0,
                role: if period > 0 {
                    Role::Sampler
                } else {
                    Role::Counted
                },
                ids: vec![EventId {
                    id: 100 + i,
                    cpu: 0,
                    tid: -1,
                }],
                trace_format: None,
            }
        };
        let meta = Meta {
            events: vec![
                ev(0, 0, 1_000_000),
                ev(1, 0x0947, 2_000_003),
                ev(2, 0x0547, 0),
            ],
            ..Meta::default()
        };
        let map = MemberMap::new(&meta);
        assert_eq!(
            map.groups(),
            [GroupMembers {
                sampler: 0,
                members: vec![0, 1, 2]
            }]
        );
        assert!(map.of_event(1).is_none());
        // The slots group: slots leads without sampling, the first sampler reads it.
        let mut meta = meta;
        meta.events[0].role = Role::Counted;
        meta.events[0].attr.sample_period_or_freq = 0;
        let map = MemberMap::new(&meta);
        assert_eq!(map.groups().len(), 1);
        assert_eq!(map.groups()[0].sampler, 1);
    }

    /// A group read (`ID|GROUP`) of `(value, id)` pairs.
    fn group(values: &[(u64, u64)]) -> Vec<u8> {
        let mut b = (values.len() as u64).to_le_bytes().to_vec();
        for (v, id) in values {
            b.extend(v.to_le_bytes());
            b.extend(id.to_le_bytes());
        }
        b
    }

    #[test]
    fn member_deltas_per_thread_by_id_and_resets() {
        let mut map = MemberMap::default();
        map.pos_of_id.insert(10, 0);
        map.pos_of_id.insert(11, 1);
        map.pos_of_id.insert(12, 2);
        let g = GroupMembers {
            sampler: 0,
            members: vec![0, 1, 2],
        };
        let fmt = read::ID | read::GROUP;
        let mut t = MemberTracker::default();
        let mut out = Vec::new();
        let mut d = |t: &mut MemberTracker, tid: u32, vals: &[(u64, u64)]| {
            let bytes = group(vals);
            let r = ReadValues::from_read(&bytes, fmt).unwrap();
            t.deltas(&map, &g, Some(tid), 10, &r, &mut out);
            out.clone()
        };
        assert_eq!(d(&mut t, 1, &[(100, 10), (5, 11), (7, 12)]), [100, 5, 7]);
        // Another thread's running totals are its own.
        assert_eq!(d(&mut t, 2, &[(40, 10), (1, 11), (2, 12)]), [40, 1, 2]);
        assert_eq!(d(&mut t, 1, &[(250, 10), (9, 11), (8, 12)]), [150, 4, 1]);
        // Entries in another order land by their ids; a value that went back counts whole.
        assert_eq!(d(&mut t, 2, &[(50, 10), (3, 12), (0, 11)]), [10, 0, 1]);
    }
}
