//! Flame graphs: folded stacks from a profile, drawn in-process with inferno.
//!
//! **Stacks.** A sample's stack is its thread name, then its callers from the outermost in,
//! then the sampled location; every location is expanded into its inline chain (outer
//! function first), so inlined functions get frames of their own. Unresolved frames are
//! labelled with where they are and why (`[hotspots: binary missing]`, `[unknown:
//! unmapped]`). Without callchains (no `record -g`) the stack is `comm;dso;symbol`, and the
//! subtitle says so.
//!
//! **Weights, with their units** in the SVG's count name: `samples`; the event's count
//! (`period`, named after the event, e.g. `cpu-clock` or `cycles`); or `retire-cycles`, the
//! sum of the retire latencies of the samples that have one. A recording without retire
//! latencies cannot be weighted by them, and the error says why.
//!
//! **One event, by name.** The drawn event's samples are those of every event of its name
//! ([`same_named`]): a recording of `record --td-level N` has one `cycles:P` sampler per
//! metric group, and as the groups take turns on the PMU, each covers its share of the run and
//! together they are the run's cycles profile.
//!
//! **Wall-clock view** (`flamegraph --wall`): the on-CPU samples of one event and the
//! `offcpu-time` samples of a recording with switch records ([`crate::offcpu`]) in
//! one graph, both in nanoseconds, so a function's width is the time threads spent in it,
//! running or waiting (Brendan Gregg's hot/cold flame graph; perf has no such view). An
//! on-CPU sample of a CPU-time clock (`cpu-clock`, `task-clock`) counts its period, which is
//! nanoseconds of CPU time. An event that is not a time, sampled in frequency mode (`-F`, as
//! cycles is by default), has its period adjusted by the kernel so that about `F` samples
//! come per second the thread runs: each sample counts `1e9 / F` ns, an estimate, which the
//! graph's subtitle and a line on stderr say ([`OnCpuTime`]). A fixed period (`-c N`) of such
//! an event says nothing of time, and the view is refused with the reason. Every off-CPU
//! stack ends in a frame `[off-cpu]` (under `[preempted]` where the thread was runnable and
//! `[no stack]` where its stack was not recorded), so the off-CPU towers stand out and
//! `grep ';\[off-cpu\] '` splits the folded lines; a caller's width is the sum of both.
//! Colours are hot and cold as in Gregg's graphs: inferno colours by function name, so each
//! name gets a colour from warm (all its time on the CPU) to blue (all of it off the CPU) by
//! the off-CPU share of the time of every stack it is on (counted once per stack); the
//! tooltips are inferno's, each frame's own nanoseconds and share.
//!
//! **TopDown colours.** inferno colours by function name, so each function gets the colour of
//! the dominant level-1 category of the TopDown deltas of every sample with that function on
//! its stack (counted once per sample), lighter as the dominant share falls, and a tooltip
//! with the four shares. Functions without TopDown data are grey.
//!
//! **Intel's metric colours** (`--color metric:NAME`, a recording of `record --td-level N` or
//! `record -M`): as for TopDown, per function name, inclusive: the member sums of every
//! metric group's read whose sample has that function on its stack (counted once per
//! sample), whatever event is drawn, evaluated as a report row is
//! ([`crate::analysis::metrics::RowMetricsSetup::evaluate`]; `:R` terms take the mean retire
//! latency of the samples of the function's stacks, else Intel's default). Colour runs from
//! white at 0 to full red at Intel's own threshold for the metric
//! ([`crate::analysis::metrics::own_threshold`], `tma_l3_bound`: 5%) and past it, else at 100%
//! for a percentage, else at the largest value; functions with fewer reads of a group the
//! metric needs than the minimum (`--metric-min-reads`), or no group read at all, are grey.
//! The subtitle states the metric and the scale, each frame's tooltip the value.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use inferno::flamegraph::color::{Color, PaletteMap};
use inferno::flamegraph::{self, Direction, FuncFrameAttrsMap};

use crate::analysis::hist::Filters;
use crate::analysis::profile::{Profile, SampleGroup};
use crate::analysis::topdown::{L1_LABELS, TdCounts};
use crate::symbol::symbolizer::Loc;

/// What a frame's width stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weight {
    /// One per sample.
    Samples,
    /// The event count (sum of periods).
    Period,
    /// Sum of retire latencies in cycles (samples with a latency only).
    RetireLatency,
    /// Sum of load latencies in cycles: the weight of memory samples (`WEIGHT_STRUCT`'s
    /// `var1`, or `WEIGHT`), samples with a weight only.
    LoadLatency,
}

/// How frames are coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colors {
    /// inferno's hot palette.
    Default,
    /// Dominant TopDown level-1 category.
    TopDown,
    /// Intel's value of one metric per function ([`Folded::metric`]).
    Metric,
}

/// Flame graph options.
#[derive(Debug, Clone)]
pub struct FlameOptions {
    /// Event name (`None`: the first event).
    pub event: Option<String>,
    /// Width.
    pub weight: Weight,
    /// Colouring.
    pub colors: Colors,
    /// Title (default: "hrec flame graph").
    pub title: Option<String>,
    /// Icicle graph.
    pub inverted: bool,
    /// Frames in time order, not merged.
    pub flame_chart: bool,
    /// Frames narrower than this many pixels are omitted.
    pub min_width: f64,
    /// Sample filters.
    pub filters: Filters,
    /// The wall-clock view (`--wall`): the drawn event is the on-CPU side, counted so, with
    /// the `offcpu-time` samples beside it.
    pub wall: Option<OnCpuTime>,
}

impl Default for FlameOptions {
    fn default() -> Self {
        FlameOptions {
            event: None,
            weight: Weight::Samples,
            colors: Colors::Default,
            title: None,
            inverted: false,
            flame_chart: false,
            min_width: 0.1,
            filters: Filters::default(),
            wall: None,
        }
    }
}

/// How the on-CPU samples of an event count in a wall-clock view: nanoseconds of CPU time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnCpuTime {
    /// A CPU-time clock: each sample's period is nanoseconds.
    Clock,
    /// An event that is not a time, sampled in frequency mode: each sample stands for about
    /// `1e9 / freq` ns of running.
    PerSample {
        /// Samples per second asked for.
        freq: u64,
    },
    /// Not a time, with a fixed period: the number of events between samples, which says
    /// nothing of time.
    FixedPeriod(u64),
}

impl OnCpuTime {
    /// The nanoseconds `samples` samples of `period` stand for; `None` for a fixed period.
    fn ns(&self, samples: u64, period: u64) -> Option<u64> {
        match *self {
            OnCpuTime::Clock => Some(period),
            OnCpuTime::PerSample { freq } => {
                Some(samples.saturating_mul(1_000_000_000 / freq.max(1)))
            }
            OnCpuTime::FixedPeriod(_) => None,
        }
    }

    /// What the view says of the conversion, when it is an estimate.
    pub fn note(&self, event: &str) -> Option<String> {
        match *self {
            OnCpuTime::PerSample { freq } => Some(format!(
                "{event} is not a time: each of its samples counts as {} ns on the CPU (1e9 / its {freq} Hz, an estimate)",
                1_000_000_000 / freq.max(1)
            )),
            _ => None,
        }
    }
}

/// Why a flame graph cannot be drawn.
#[derive(Debug, thiserror::Error)]
pub enum FlameError {
    /// `--event` names no event of the recording.
    #[error("no event {name:?} in the recording; it has: {have}")]
    NoSuchEvent {
        /// Asked for.
        name: String,
        /// What exists.
        have: String,
    },
    /// Weighting by retire latency without latencies.
    #[error("cannot weight by retire latency: event {event} has none ({why})")]
    NoLatency {
        /// Event.
        event: String,
        /// Why.
        why: String,
    },
    /// Weighting by load latency where no sample has one ([`crate::analysis::profile::MemView::load_latency`]).
    #[error(
        "cannot weight by load latency: no sample of event {0} has one (a memory event's samples carry it, with their data source: record with hrec mem record, or -W -d on a memory event)"
    )]
    NoLoadLatency(String),
    /// No samples to draw.
    #[error("no samples of event {0} to draw (after filters)")]
    Empty(String),
    /// `--wall` on a recording without off-CPU time.
    #[error(
        "--wall needs off-CPU time: the recording has no switch records (record with --off-cpu, or perf record --switch-events)"
    )]
    NoOffCpu,
    /// `--wall` on a recording with off-CPU time and nothing else.
    #[error(
        "--wall needs on-CPU samples beside the off-CPU time, and the recording has none (its off-CPU time alone: --event offcpu-time --weight period)"
    )]
    NoOnCpu,
    /// `--wall --event offcpu-time`.
    #[error("--wall: --event names the on-CPU event (one of: {0}); offcpu-time is added to it")]
    OffCpuPicked(String),
    /// `--wall` with an on-CPU event whose samples are not a time.
    #[error(
        "--wall needs the time of the on-CPU samples: {event} samples every {period} events (a fixed period), which is not a time; record a clock (-e cpu-clock) or in frequency mode (-F)"
    )]
    NotTime {
        /// The event.
        event: String,
        /// Its period.
        period: u64,
    },
    /// `--color metric:NAME` without a value to colour by: the one-line reason (no metric
    /// groups in the recording, Intel's files missing, an unknown metric).
    #[error("--color metric:{metric}: {why}")]
    Metric {
        /// The name asked for.
        metric: String,
        /// Why.
        why: String,
    },
    /// Writing.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Folded stacks of one event and what is needed to draw them.
#[derive(Debug, Clone, Default)]
pub struct Folded {
    /// `(stack, weight)`; merged and sorted unless built for a flame chart (time order).
    pub lines: Vec<(String, u64)>,
    /// Stacks came from callchains.
    pub callchains: bool,
    /// The unit of the weights.
    pub count_name: String,
    /// The event drawn.
    pub event: String,
    /// TopDown deltas per function name (inclusive, once per sample).
    pub topdown: HashMap<String, TdCounts>,
    /// The wall-clock view's colours and notes.
    pub wall: Option<WallInfo>,
    /// Intel's metric per function, for `--color metric:NAME` ([`metric_colors`]).
    pub metric: Option<MetricColors>,
}

/// One Intel metric per function name, for the colours of `--color metric:NAME`.
#[derive(Debug, Clone, Default)]
pub struct MetricColors {
    /// perf's name of the metric.
    pub metric: String,
    /// The value is a percentage.
    pub percent: bool,
    /// Intel's own threshold for the metric ([`crate::analysis::metrics::own_threshold`]).
    pub threshold: Option<f64>,
    /// The fewest reads of a group the metric needs.
    pub min_reads: u64,
    /// Per function name: the value (`None`: too few reads, or an event not recorded) and
    /// the reads of its reference group (the most read group).
    pub values: HashMap<String, (Option<f64>, u64)>,
}

impl MetricColors {
    /// Where the colour is full red: Intel's threshold, else 100 for a percentage, else the
    /// largest value.
    pub fn top(&self) -> f64 {
        self.threshold.filter(|t| *t > 0.0).unwrap_or_else(|| {
            if self.percent {
                100.0
            } else {
                self.values
                    .values()
                    .filter_map(|v| v.0)
                    .fold(0.0, f64::max)
                    .max(f64::MIN_POSITIVE)
            }
        })
    }

    /// A value as the legend and tooltips print it.
    fn show(&self, v: f64) -> String {
        if self.percent {
            format!("{v:.1}%")
        } else {
            format!("{v:.3}")
        }
    }
}

/// The colour of a metric's value on the scale white (0) to red (`top` and past it).
pub fn metric_color(value: f64, top: f64) -> Color {
    let t = (value / top).clamp(0.0, 1.0);
    let (r, g, b) = (214.0, 39.0, 40.0);
    let mix = |c: f64| (255.0 - (255.0 - c) * t).round() as u8;
    Color {
        r: mix(r),
        g: mix(g),
        b: mix(b),
    }
}

/// Grey: no value.
const GREY: Color = Color {
    r: 190,
    g: 190,
    b: 190,
};

/// Intel's metric `metric` (perf's name, chosen in `setup`) per function name: the member
/// sums of the metric groups' reads, inclusive (each name once per sample), of the samples
/// `o`'s filters keep, evaluated by `setup` (see the module docs).
pub fn metric_colors(
    p: &Profile,
    setup: &crate::analysis::metrics::RowMetricsSetup<'_>,
    metric: &str,
    o: &FlameOptions,
) -> MetricColors {
    let groups = setup.group_events();
    let lat_events = setup.latency_events();
    // Per name: per group, member sums and reads; per `:R` event, latency sum and count.
    type Sums = (Vec<Option<(Vec<u64>, u64)>>, Vec<(u64, u64)>);
    let mut by_name: HashMap<String, Sums> = HashMap::new();
    let mut frames: Vec<String> = Vec::new();
    for s in &p.groups {
        let ev = usize::from(s.event);
        let g = groups.iter().position(|&e| e == ev);
        let l = lat_events.iter().position(|(_, e)| *e == ev);
        if (g.is_none() && l.is_none()) || !o.filters.keep(p, s) {
            continue;
        }
        let members = g.and_then(|g| Some((g, p.members(s)?)));
        let latency = l.and_then(|l| Some((l, p.latency(s)?)));
        if members.is_none() && latency.is_none() {
            continue;
        }
        frames.clear();
        stack_of(p, s, &mut frames);
        for (k, f) in frames.iter().enumerate().skip(1) {
            if frames[1..k].contains(f) {
                continue;
            }
            let e = by_name
                .entry(f.clone())
                .or_insert_with(|| (vec![None; groups.len()], vec![(0, 0); lat_events.len()]));
            if let Some((g, (m, n))) = members {
                let (sum, reads) = e.0[g].get_or_insert_with(|| (Vec::new(), 0));
                if sum.len() < m.len() {
                    sum.resize(m.len(), 0);
                }
                for (a, b) in sum.iter_mut().zip(m) {
                    *a = a.saturating_add(*b);
                }
                *reads += n;
            }
            if let Some((l, h)) = latency {
                e.1[l].0 += h.sum();
                e.1[l].1 += h.count();
            }
        }
    }
    let m = setup.chosen_metric(metric);
    let values = by_name
        .iter()
        .map(|(name, (sums, lats))| {
            let sums: Vec<crate::analysis::metrics::GroupSums<'_>> = sums
                .iter()
                .map(|g| g.as_ref().map(|(m, n)| (m.as_slice(), *n)))
                .collect();
            let latency = |ev: &str| {
                lat_events
                    .iter()
                    .zip(lats)
                    .find(|((n, _), _)| n.eq_ignore_ascii_case(ev))
                    .and_then(|(_, &(sum, count))| (count > 0).then(|| sum as f64 / count as f64))
            };
            let r = setup.evaluate(&sums, &latency);
            let reads = r.groups.iter().map(|g| g.reads).max().unwrap_or(0);
            (name.clone(), (r.get(metric), reads))
        })
        .collect();
    MetricColors {
        metric: metric.to_string(),
        percent: m.is_some_and(|m| m.is_percent()),
        threshold: m.and_then(crate::analysis::metrics::own_threshold),
        min_reads: setup.min_reads(),
        values,
    }
}

/// What the wall-clock view adds to its folded stacks.
#[derive(Debug, Clone, Default)]
pub struct WallInfo {
    /// Per function name: its nanoseconds on and off the CPU (inclusive, once per stack),
    /// for the hot/cold colours.
    pub time: HashMap<String, (u64, u64)>,
    /// Notes for the subtitle.
    pub notes: Vec<String>,
}

/// Picks the event: the one named, or the first with samples (a `perf mem record` file's
/// first event is the `mem-loads-aux` leader, which samples nothing), else the first.
pub fn pick_event(p: &Profile, name: Option<&str>) -> Result<usize, FlameError> {
    let have = || {
        p.events
            .iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match name {
        None => {
            let mut sampled = vec![false; p.events.len()];
            for g in &p.groups {
                if let Some(s) = sampled.get_mut(usize::from(g.event)) {
                    *s = true;
                }
            }
            Ok(sampled.iter().position(|&s| s).unwrap_or(0))
        }
        Some(n) => p
            .events
            .iter()
            .position(|e| e.name == n || e.name.trim_end_matches('/') == n)
            .ok_or_else(|| FlameError::NoSuchEvent {
                name: n.to_string(),
                have: have(),
            }),
    }
}

/// A frame name as folded stacks carry it: `;` separates frames (so it becomes `:`) and a
/// newline ends a stack (so it becomes a space). Nothing else changes: names come whole from
/// the name pipeline ([`crate::symbol::names`]), without parameter lists, and a function type
/// or lambda inside a template argument stays (stackcollapse-perf cuts names at the first
/// `(`, which loses those).
fn clean(s: &str) -> String {
    s.replace(';', ":").replace('\n', " ")
}

/// A thread name as the first frame: spaces become `_`, as stackcollapse-perf writes it.
fn clean_comm(s: &str) -> String {
    clean(s).replace(' ', "_")
}

fn frame_names(l: &Loc, leaf_only: bool, out: &mut Vec<String>) {
    if l.sym.is_none() {
        let why = l.unresolved.map(|u| u.to_string()).unwrap_or_default();
        let dso = l.dso.trim_start_matches('[').trim_end_matches(']');
        out.push(clean(&format!("[{dso}: {why}]")));
        return;
    }
    // Outer function first: the inline chain is innermost first. Expanded, every frame is
    // named from DWARF, the function itself too (perf's names in an address's inline chain),
    // else by its symbol-table name.
    let n = l.frames.len();
    if !leaf_only && n > 0 {
        out.push(clean(
            &l.dwarf_name().map_or_else(|| l.sym_name(), str::to_string),
        ));
        for f in l.frames[..n - 1].iter().rev() {
            out.push(clean(f.function.as_deref().unwrap_or("??")));
        }
    } else {
        out.push(clean(&l.sym_name()));
    }
}

/// The on-CPU event and the `offcpu-time` event of the wall-clock view: the one named (which
/// must not be `offcpu-time`), else the first clock, else the first event that is not one
/// with a fixed period, else the first; `on_cpu` says how each event's samples count.
pub fn pick_wall_events(
    p: &Profile,
    name: Option<&str>,
    on_cpu: &[OnCpuTime],
) -> Result<(usize, usize), FlameError> {
    let off = p
        .events
        .iter()
        .position(|e| e.is_off_cpu())
        .ok_or(FlameError::NoOffCpu)?;
    let on: Vec<usize> = (0..p.events.len()).filter(|&k| k != off).collect();
    let how = |k: usize| on_cpu.get(k).cloned().unwrap_or(OnCpuTime::FixedPeriod(0));
    let ev = match name {
        Some(_) => {
            let k = pick_event(p, name)?;
            if k == off {
                let names: Vec<&str> = on.iter().map(|&k| p.events[k].name.as_str()).collect();
                return Err(FlameError::OffCpuPicked(names.join(", ")));
            }
            k
        }
        None => *on
            .iter()
            .find(|&&k| how(k) == OnCpuTime::Clock)
            .or_else(|| {
                on.iter()
                    .find(|&&k| !matches!(how(k), OnCpuTime::FixedPeriod(_)))
            })
            .or(on.first())
            .ok_or(FlameError::NoOnCpu)?,
    };
    if let OnCpuTime::FixedPeriod(period) = how(ev) {
        return Err(FlameError::NotTime {
            event: p.events[ev].name.clone(),
            period,
        });
    }
    Ok((ev, off))
}

/// Builds the folded stacks of one event (with [`FlameOptions::wall`], the wall-clock view
/// of `event` as the on-CPU side and the `offcpu-time` event).
pub fn fold(p: &Profile, event: usize, o: &FlameOptions) -> Result<Folded, FlameError> {
    fold_events(p, &[event], o)
}

/// The events drawn for `event`: it and every other event of the same name, which the user
/// cannot tell apart by name (the cycles samplers of `record --td-level N`'s metric groups,
/// one per group: the groups take turns on the PMU, so together they are the run's cycles).
pub fn same_named(p: &Profile, event: usize) -> Vec<usize> {
    (0..p.events.len())
        .filter(|&i| i == event || p.events[i].name == p.events[event].name)
        .collect()
}

/// [`fold`] of several events drawn as one (`events[0]` names the count; the wall-clock view
/// takes it alone).
pub fn fold_events(p: &Profile, events: &[usize], o: &FlameOptions) -> Result<Folded, FlameError> {
    let event = events[0];
    if let Some(how) = &o.wall {
        return fold_wall(p, event, how, o);
    }
    let e = &p.events[event];
    let count_name = match o.weight {
        Weight::Samples => "samples".to_string(),
        Weight::Period => e.name.clone(),
        Weight::RetireLatency => {
            if !e.has_latency {
                let why = crate::output::report::no_latency_reason(e).unwrap_or_default();
                return Err(FlameError::NoLatency {
                    event: e.name.clone(),
                    why,
                });
            }
            "retire-cycles".to_string()
        }
        Weight::LoadLatency => {
            let weighed = p.groups.iter().any(|g| {
                events.contains(&usize::from(g.event))
                    && p.mems
                        .get(g.mem as usize)
                        .is_some_and(|m| m.load_latency().is_some())
            });
            if !weighed {
                return Err(FlameError::NoLoadLatency(e.name.clone()));
            }
            "load-cycles".to_string()
        }
    };
    let mut merged: HashMap<String, u64> = HashMap::new();
    let mut ordered: Vec<(String, u64)> = Vec::new();
    let mut topdown: HashMap<String, TdCounts> = HashMap::new();
    let mut frames: Vec<String> = Vec::new();
    let mut stack = String::new();
    // The stack of each kept group, built once.
    let mut stacks: Vec<Option<String>> = vec![None; p.groups.len()];
    for (gi, s) in p.groups.iter().enumerate() {
        if !events.contains(&usize::from(s.event)) || !o.filters.keep(p, s) {
            continue;
        }
        let w = match o.weight {
            Weight::Samples => s.samples,
            Weight::Period => s.period,
            Weight::RetireLatency => match p.latency(s) {
                Some(l) => l.sum(),
                None => continue,
            },
            Weight::LoadLatency => {
                match p.mems.get(s.mem as usize).and_then(|m| m.load_latency()) {
                    Some(lat) => lat.saturating_mul(s.samples),
                    None => continue,
                }
            }
        };
        frames.clear();
        stack_of(p, s, &mut frames);
        if let Some(td) = p.td(s) {
            let mut seen: Vec<&str> = Vec::new();
            for f in &frames[1..] {
                if !seen.contains(&f.as_str()) {
                    seen.push(f);
                    topdown.entry(f.clone()).or_default().add(td);
                }
            }
        }
        stack.clear();
        stack.push_str(&frames.join(";"));
        if o.flame_chart {
            stacks[gi] = Some(stack.clone());
        } else if w > 0 {
            *merged.entry(stack.clone()).or_default() += w;
        }
    }
    if o.flame_chart {
        // Consecutive samples with the same stack merge; samples of other events, filtered
        // out or of no weight do not break a run.
        for r in &p.timeline {
            let Some(stack) = &stacks[r.group as usize] else {
                continue;
            };
            let w = match o.weight {
                Weight::Samples => r.samples,
                Weight::Period => r.period,
                Weight::RetireLatency => r.latency,
                // (Refused with --flame-chart: runs keep no load latency.)
                Weight::LoadLatency => 0,
            };
            if w == 0 {
                continue;
            }
            match ordered.last_mut() {
                Some((last, n)) if last == stack => *n += w,
                _ => ordered.push((stack.clone(), w)),
            }
        }
    }
    let lines = if o.flame_chart {
        ordered
    } else {
        let mut v: Vec<(String, u64)> = merged.into_iter().collect();
        v.sort();
        v
    };
    if lines.is_empty() {
        return Err(FlameError::Empty(e.name.clone()));
    }
    Ok(Folded {
        lines,
        callchains: p.callchains,
        count_name,
        event: e.name.clone(),
        topdown,
        wall: None,
        metric: None,
    })
}

/// The frame that ends every off-CPU stack of the wall-clock view.
pub const OFF_CPU_FRAME: &str = "[off-cpu]";

/// The wall-clock view (see the module docs): `on` counted by `how`, and `offcpu-time`.
fn fold_wall(
    p: &Profile,
    on: usize,
    how: &OnCpuTime,
    o: &FlameOptions,
) -> Result<Folded, FlameError> {
    let off = p
        .events
        .iter()
        .position(|e| e.is_off_cpu())
        .ok_or(FlameError::NoOffCpu)?;
    let on_name = p.events[on].name.clone();
    if let OnCpuTime::FixedPeriod(period) = how {
        return Err(FlameError::NotTime {
            event: on_name,
            period: *period,
        });
    }
    let ns = |ev: usize, samples: u64, period: u64| {
        if ev == off {
            period
        } else {
            how.ns(samples, period).unwrap_or(0)
        }
    };
    let mut merged: HashMap<String, u64> = HashMap::new();
    let mut shares: HashMap<String, (u64, u64)> = HashMap::new();
    let mut frames: Vec<String> = Vec::new();
    let mut stacks: Vec<Option<String>> = vec![None; p.groups.len()];
    for (gi, s) in p.groups.iter().enumerate() {
        let ev = usize::from(s.event);
        if (ev != on && ev != off) || !o.filters.keep(p, s) {
            continue;
        }
        frames.clear();
        stack_of(p, s, &mut frames);
        if ev == off {
            frames.push(OFF_CPU_FRAME.to_string());
        }
        let w = ns(ev, s.samples, s.period);
        // Each name once per stack, the thread's name (the first frame) aside.
        for (k, f) in frames.iter().enumerate().skip(1) {
            if frames[1..k].contains(f) {
                continue;
            }
            let e = shares.entry(f.clone()).or_default();
            if ev == off {
                e.1 += w;
            } else {
                e.0 += w;
            }
        }
        let stack = frames.join(";");
        if o.flame_chart {
            stacks[gi] = Some(stack);
        } else if w > 0 {
            *merged.entry(stack).or_default() += w;
        }
    }
    let lines = if o.flame_chart {
        // In the order the samples came: an off-CPU interval where its thread took a CPU
        // again.
        let mut ordered: Vec<(String, u64)> = Vec::new();
        for r in &p.timeline {
            let Some(stack) = &stacks[r.group as usize] else {
                continue;
            };
            let ev = usize::from(p.groups[r.group as usize].event);
            let w = ns(ev, r.samples, r.period);
            if w == 0 {
                continue;
            }
            match ordered.last_mut() {
                Some((last, n)) if last == stack => *n += w,
                _ => ordered.push((stack.clone(), w)),
            }
        }
        ordered
    } else {
        let mut v: Vec<(String, u64)> = merged.into_iter().collect();
        v.sort();
        v
    };
    if lines.is_empty() {
        return Err(FlameError::Empty(format!(
            "{on_name} or {}",
            p.events[off].name
        )));
    }
    let mut notes = vec![format!(
        "off-CPU stacks end in {OFF_CPU_FRAME}; colours: warm = on the CPU, blue = off it"
    )];
    notes.extend(how.note(&on_name));
    if p.events[off].callchains && !p.events[on].callchains {
        notes.push(format!(
            "{on_name} samples have no call chains (record with -g or --call-graph dwarf): their stacks are the sampled function alone"
        ));
    }
    Ok(Folded {
        lines,
        callchains: p.callchains,
        count_name: "ns".to_string(),
        event: format!(
            "wall clock: {on_name} on the CPU + {} off it",
            p.events[off].name
        ),
        topdown: HashMap::new(),
        wall: Some(WallInfo {
            time: shares,
            notes,
        }),
        metric: None,
    })
}

/// The hot/cold colour of a function that spends `off` of its time off the CPU (0 to 1).
pub fn wall_color(off: f64) -> Color {
    let (hot, cold) = ((232.0, 110.0, 40.0), (60.0, 120.0, 220.0));
    let t = off.clamp(0.0, 1.0);
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    Color {
        r: mix(hot.0, cold.0),
        g: mix(hot.1, cold.1),
        b: mix(hot.2, cold.2),
    }
}

/// The frames of a sample, root first: comm, callers (outermost first), the sampled location.
fn stack_of(p: &Profile, s: &SampleGroup, out: &mut Vec<String>) {
    out.push(clean_comm(&p.comms[s.comm as usize]));
    if p.callchains {
        for &c in p.callers(s).iter().rev() {
            frame_names(&p.locs[c as usize], false, out);
        }
        frame_names(&p.locs[s.leaf as usize], false, out);
    } else {
        let l = &p.locs[s.leaf as usize];
        out.push(clean(&l.dso));
        frame_names(l, true, out);
    }
}

/// Writes folded lines (`a;b;c COUNT`).
pub fn write_folded(f: &Folded, out: &mut dyn Write) -> io::Result<()> {
    let mut s = String::new();
    for (stack, n) in &f.lines {
        let _ = writeln!(s, "{stack} {n}");
    }
    out.write_all(s.as_bytes())
}

/// The colour of a TopDown category (index into [`L1_LABELS`]) at a dominant share.
pub fn topdown_color(category: usize, share: f64) -> Color {
    let base: [(u8, u8, u8); 4] = [
        (46, 139, 87),   // Retiring: green
        (214, 39, 40),   // Bad Speculation: red
        (148, 103, 189), // Frontend Bound: purple
        (31, 119, 180),  // Backend Bound: blue
    ];
    let (r, g, b) = base[category.min(3)];
    // Full colour at 100%, half-way to white at the lowest possible dominant share (25%).
    let t = 0.5 + 0.5 * ((share - 25.0) / 75.0).clamp(0.0, 1.0);
    let mix = |c: u8| (255.0 - (255.0 - f64::from(c)) * t).round() as u8;
    Color {
        r: mix(r),
        g: mix(g),
        b: mix(b),
    }
}

/// The tooltip text of a function with TopDown data.
pub fn topdown_title(name: &str, td: &TdCounts) -> Option<String> {
    let l1 = td.level1()?;
    let parts: Vec<String> = L1_LABELS
        .iter()
        .zip(l1)
        .map(|(n, v)| format!("{n} {v:.1}%"))
        .collect();
    Some(format!("{name}: TopDown {}", parts.join(", ")))
}

/// Draws an SVG.
pub fn svg(
    f: &Folded,
    o: &FlameOptions,
    subtitle: Option<String>,
    out: &mut dyn Write,
) -> Result<(), FlameError> {
    let mut palette = PaletteMap::default();
    let mut attrs = String::new();
    let mut notes = Vec::new();
    if !f.callchains {
        notes.push(
            "no callchains in the recording (record with -g): stacks are comm;dso;symbol"
                .to_string(),
        );
    }
    if let Some(wall) = &f.wall {
        for (name, &(on, off)) in &wall.time {
            let total = on + off;
            if total == 0 {
                continue;
            }
            palette.insert(name, wall_color(off as f64 / total as f64));
        }
        notes.extend(wall.notes.iter().cloned());
    }
    if o.colors == Colors::TopDown {
        let mut grey = Vec::new();
        let names: std::collections::BTreeSet<&str> =
            f.lines.iter().flat_map(|(s, _)| s.split(';')).collect();
        for name in names {
            match f
                .topdown
                .get(name)
                .and_then(|td| Some((td, td.dominant()?)))
            {
                Some((td, (cat, share))) => {
                    palette.insert(name, topdown_color(cat, share));
                    if let Some(t) = topdown_title(name, td) {
                        let _ = writeln!(attrs, "{name}\ttitle={t}");
                    }
                }
                None => grey.push(name),
            }
        }
        for name in grey {
            palette.insert(
                name,
                Color {
                    r: 190,
                    g: 190,
                    b: 190,
                },
            );
        }
        notes.push(
            "colours: Retiring green, Bad Speculation red, Frontend Bound purple, Backend Bound blue (lighter = less dominant), grey = no TopDown data"
                .to_string(),
        );
    }
    if let (Colors::Metric, Some(mc)) = (o.colors, &f.metric) {
        let top = mc.top();
        let names: std::collections::BTreeSet<&str> =
            f.lines.iter().flat_map(|(s, _)| s.split(';')).collect();
        for name in names {
            let (color, title) = match mc.values.get(name) {
                Some(&(Some(v), reads)) => (
                    metric_color(v, top),
                    format!("{name}: {} {} ({reads} group reads)", mc.metric, mc.show(v)),
                ),
                Some(&(None, reads)) => (
                    GREY,
                    format!(
                        "{name}: {} - (fewer than {} reads of a group it needs, or an event not recorded; {reads} group reads)",
                        mc.metric, mc.min_reads
                    ),
                ),
                None => (
                    GREY,
                    format!("{name}: {} - (no metric group read)", mc.metric),
                ),
            };
            palette.insert(name, color);
            let _ = writeln!(attrs, "{name}\ttitle={title}");
        }
        let why = match mc.threshold {
            Some(_) => "Intel's threshold",
            None if mc.percent => "100%",
            None => "the largest value",
        };
        notes.push(format!(
            "colours: Intel's {} per function (inclusive): white 0 to red at {} ({why}) and past it; grey = fewer than {} group reads or no data",
            mc.metric,
            mc.show(top),
            mc.min_reads
        ));
    }
    notes.extend(subtitle);
    let mut opts = flamegraph::Options::default();
    opts.title = o
        .title
        .clone()
        .unwrap_or_else(|| "hrec flame graph".to_string());
    opts.subtitle = Some(
        format!("{}; {}", f.event, notes.join("; "))
            .trim_end_matches("; ")
            .to_string(),
    );
    opts.count_name = f.count_name.clone();
    opts.min_width = o.min_width;
    opts.flame_chart = o.flame_chart;
    opts.deterministic = true;
    if o.inverted {
        opts.direction = Direction::Inverted;
    }
    let metric = o.colors == Colors::Metric && f.metric.is_some();
    if o.colors == Colors::TopDown || f.wall.is_some() || metric {
        opts.palette_map = Some(&mut palette);
    }
    if o.colors == Colors::TopDown || metric {
        opts.func_frameattrs = FuncFrameAttrsMap::from_reader(attrs.as_bytes())?;
    }
    let lines: Vec<String> = f.lines.iter().map(|(s, n)| format!("{s} {n}")).collect();
    flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), out)?;
    Ok(())
}

/// Draws a differential flame graph: `base` and `new` normalised to the same total, red where
/// `new` grew, blue where it shrank.
pub fn diff_svg(
    base: &Folded,
    new: &Folded,
    o: &FlameOptions,
    out: &mut dyn Write,
) -> Result<(), FlameError> {
    let mut a = Vec::new();
    write_folded(base, &mut a)?;
    let mut b = Vec::new();
    write_folded(new, &mut b)?;
    let mut lines = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options {
            normalize: true,
            strip_hex: false,
        },
        a.as_slice(),
        b.as_slice(),
        &mut lines,
    )?;
    let text = String::from_utf8_lossy(&lines).into_owned();
    let mut opts = flamegraph::Options::default();
    opts.title = o
        .title
        .clone()
        .unwrap_or_else(|| "hrec differential flame graph".to_string());
    opts.subtitle = Some(format!(
        "{}: widths are NEW, red = grew vs BASE, blue = shrank (normalised)",
        new.event
    ));
    opts.count_name = new.count_name.clone();
    opts.min_width = o.min_width;
    opts.deterministic = true;
    if o.inverted {
        opts.direction = Direction::Inverted;
    }
    flamegraph::from_lines(&mut opts, text.lines(), out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::profile::{Folder, SampleView};

    use crate::testutil::loc;

    /// A recording of `event` with off-CPU time: `main` runs 3 samples of 250 µs (period
    /// 250000 for a clock, 1000 otherwise), then waits in `wait` 2 ms, and is preempted
    /// there 1 ms; a second thread only waits 5 ms.
    fn wall_profile(event: &str) -> Profile {
        let events = crate::testutil::events_with_off_cpu(event);
        let period = if event == "cpu-clock" { 250_000 } else { 1000 };
        let mut f = Folder::new(events, false);
        let v =
            |event: u16, tid: u32, period: u64, leaf: u32, callers: &'static [u32]| SampleView {
                tid,
                comm: u32::from(tid != 7),
                ..crate::testutil::view(event, leaf, callers, period)
            };
        for s in [
            v(0, 7, period, 0, &[]),
            v(0, 7, period, 0, &[]),
            v(0, 7, period, 0, &[]),
            v(1, 7, 2_000_000, 1, &[0]),
            v(1, 7, 1_000_000, 2, &[1, 0]),
            v(1, 8, 5_000_000, 1, &[]),
        ] {
            f.add(&s);
        }
        let mut p = f.finish();
        p.callchains = true;
        p.locs = vec![loc("main"), loc("wait"), loc("[preempted]")];
        p.comms = vec!["app".into(), "helper".into()];
        p
    }

    #[test]
    fn the_default_event_is_the_first_with_samples() {
        // Event 1 (offcpu-time) has samples of its own; event 0 none.
        let events = crate::testutil::events_with_off_cpu("mem-loads-aux");
        let mut f = Folder::new(events, false);
        f.add(&crate::testutil::view(1, 0, &[], 1000));
        let mut p = f.finish();
        p.locs = vec![loc("main")];
        assert_eq!(pick_event(&p, None).unwrap(), 1);
        assert_eq!(pick_event(&wall_profile("cpu-clock"), None).unwrap(), 0);
    }

    #[test]
    fn the_wall_view_adds_on_cpu_time_and_off_cpu_time_in_nanoseconds() {
        let p = wall_profile("cpu-clock");
        let how = vec![OnCpuTime::Clock, OnCpuTime::Clock];
        assert_eq!(pick_wall_events(&p, None, &how).unwrap(), (0, 1));
        let o = FlameOptions {
            wall: Some(OnCpuTime::Clock),
            ..Default::default()
        };
        let f = fold(&p, 0, &o).unwrap();
        assert_eq!(
            f.lines,
            [
                ("app;main".to_string(), 750_000),
                ("app;main;wait;[off-cpu]".to_string(), 2_000_000),
                ("app;main;wait;[preempted];[off-cpu]".to_string(), 1_000_000),
                ("helper;wait;[off-cpu]".to_string(), 5_000_000),
            ]
        );
        assert_eq!(f.count_name, "ns");
        let WallInfo {
            time: shares,
            notes,
        } = f.wall.as_ref().unwrap();
        assert_eq!(shares["main"], (750_000, 3_000_000));
        assert_eq!(shares["wait"], (0, 8_000_000));
        assert_eq!(shares[OFF_CPU_FRAME], (0, 8_000_000));
        assert!(notes.iter().all(|n| !n.contains("estimate")), "{notes:?}");
        // Warm to cold by the off-CPU share.
        assert_eq!(
            wall_color(0.0),
            Color {
                r: 232,
                g: 110,
                b: 40
            }
        );
        assert_eq!(
            wall_color(1.0),
            Color {
                r: 60,
                g: 120,
                b: 220
            }
        );
        let mut svg_out = Vec::new();
        svg(&f, &o, None, &mut svg_out).unwrap();
        let svg_text = String::from_utf8(svg_out).unwrap();
        assert!(svg_text.contains("rgb(60,120,220)"), "wait is all off-CPU");
        assert!(svg_text.contains("off-CPU stacks end in [off-cpu]"));
    }

    #[test]
    fn the_wall_view_of_an_event_that_is_not_a_time() {
        let p = wall_profile("cycles");
        // Frequency mode: 1e9 / 4000 ns per sample, said in a note.
        let how = vec![OnCpuTime::PerSample { freq: 4000 }, OnCpuTime::Clock];
        assert_eq!(pick_wall_events(&p, Some("cycles"), &how).unwrap(), (0, 1));
        let o = FlameOptions {
            wall: Some(how[0].clone()),
            ..Default::default()
        };
        let f = fold(&p, 0, &o).unwrap();
        assert_eq!(f.lines[0], ("app;main".to_string(), 750_000));
        let notes = &f.wall.as_ref().unwrap().notes;
        assert!(
            notes.contains(
                &"cycles is not a time: each of its samples counts as 250000 ns on the CPU (1e9 / its 4000 Hz, an estimate)"
                    .to_string()
            ),
            "{notes:?}"
        );
        // A fixed period is refused with the reason; offcpu-time is not the on-CPU side;
        // a recording without off-CPU time has no wall view.
        let how = vec![OnCpuTime::FixedPeriod(100_003), OnCpuTime::Clock];
        assert_eq!(
            pick_wall_events(&p, None, &how).unwrap_err().to_string(),
            "--wall needs the time of the on-CPU samples: cycles samples every 100003 events (a fixed period), which is not a time; record a clock (-e cpu-clock) or in frequency mode (-F)"
        );
        assert!(matches!(
            pick_wall_events(&p, Some("offcpu-time"), &how),
            Err(FlameError::OffCpuPicked(n)) if n == "cycles"
        ));
        let mut plain = wall_profile("cycles");
        plain.events.pop();
        assert!(matches!(
            pick_wall_events(&plain, None, &how),
            Err(FlameError::NoOffCpu)
        ));
    }

    #[test]
    fn frame_names_are_kept_whole() {
        // Names come without parameter lists from the name pipeline; what looks like one
        // (a function type or a lambda in a template argument) is part of the name.
        let lambda = "std::_Function_handler<unsigned long (unsigned long), ledger::Book::Book()::{lambda(unsigned long)#2}>::_M_invoke";
        assert_eq!(clean(lambda), lambda);
        assert_eq!(
            clean("(anonymous namespace)::f(int)"),
            "(anonymous namespace)::f(int)"
        );
        assert_eq!(clean("net/http.(*Client).Do"), "net/http.(*Client).Do");
        assert_eq!(clean("a;b"), "a:b");
        assert_eq!(clean("a\nb"), "a b");
        assert_eq!(clean_comm("my worker"), "my_worker");
    }
}
