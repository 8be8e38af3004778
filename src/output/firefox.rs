//! Firefox Profiler export: a recording as the profiler's *processed profile* JSON
//! (gzip-compressed), written with the `fxprof-processed-profile` crate that samply uses, so
//! the file opens in the Firefox Profiler as samply's profiles do (File › Load a profile, or
//! `samply load profile.json.gz`).
//!
//! **Threads and processes.** The processed format keeps samples per thread; each thread
//! belongs to a process and has its own stack, frame, function and string tables. Every
//! `(pid, tid)` that has samples becomes one thread (its track on the timeline) in the
//! process `pid`; a thread whose tid is its pid is the process's main thread. A thread is
//! named by its comm at its samples (the last one when it changed, as after an exec), the
//! process by its main thread's comm, else its first thread's. When a recording samples
//! several events (`-e a,b`, hybrid `cpu_core`/`cpu_atom`), their periods are in different
//! units and cannot share one sample table: each event gets a thread of its own per
//! `(pid, tid)`, named `comm [event]`; the crate then suffixes the repeated tid (`1234.1`).
//! The format names a main thread after its process, so only the main thread's first track
//! is marked main (and shows the plain comm); the other events' tracks of it are not.
//!
//! **Timestamps.** Sample times are the perf clock (`perf_clock`, CLOCK_MONOTONIC-like ns).
//! The profile's zero is the first sample's time (the recording's sample-time span, what
//! `hrec script --ns` shows first), and each sample is at `time - first` ns. `meta.startTime`
//! (the reference timestamp) is the first sample's wall-clock time when the file tells it:
//! for an hrec file its `start_time_unix_ns` plus the first sample's distance from
//! `clock_start_ns` (the perf clock read at the same moment as the wall clock), for perf.data
//! the first sample through `HEADER_CLOCK_DATA` (`perf record -k`); else the epoch (the
//! profiler then shows a 1970 date; times inside the profile are unaffected). Samples
//! without a time (no `PERF_SAMPLE_TIME`) are at 0.
//!
//! **Stacks and inline frames.** The stack of a sample is its leaf location and its callers
//! as the replay resolved them ([`crate::analysis::replay`]), each location expanded into
//! its inline chain exactly as the pprof export writes a location's `Line`s
//! ([`super::pprof`]): the functions inlined at the address innermost first, the outermost
//! named by the symbol table; an unresolved location is one frame `[dso: reason]`. The
//! format lists frames root first, so the whole list is reversed. Frames are labels (the
//! names hrec resolved), so the profile is marked symbolicated and the profiler does not try
//! to symbolicate addresses; every distinct name is one function. Kernel frames are in the
//! category `Kernel`, user frames in `User`, unresolved ones in `Other`. The crate 0.8 writes
//! `inlineDepth` 0 for every frame: an inlined function is a frame of its own, as in samply's
//! label frames and perf's `--inline` call chains.
//!
//! **Weight and CPU usage.** A sample's weight is its period: the event count it stands
//! for (nanoseconds of CPU time for `cpu-clock`/`task-clock`, which are software events 0
//! and 1), so the call tree's totals and percentages are those of `hrec report` (which
//! weights by period). The format's weights are `i32`: a period above `i32::MAX` is clamped
//! (and counted in the summary). The sample table's `weightType` stays `samples` (the
//! format's other types are `tracing-ms`, whole milliseconds here, and `bytes`), so the
//! profiler's call tree heads its columns "Total (samples)" and "Self" while the numbers
//! are period sums (CPU nanoseconds for a clock); the percentages are what matter, and they
//! are `hrec report`'s. `threadCPUDelta` is
//! the CPU time the thread used since its previous sample: for a CPU-time clock that is the
//! sample's period (the clock advanced by exactly that much CPU time of the thread); for any
//! other event (cycles, instructions, ...) the count is not time, and the delta is the time
//! since the thread's previous sample of that event (0 for its first), an upper bound, since
//! such events only count while the thread runs but the thread may have slept in between.
//! `meta.interval` is the intended time between samples: `1e9 / frequency` ns in frequency
//! mode (`-F`), the period for a clock with a fixed period (`-c`), else the mean time
//! between samples.
//!
//! **Off-CPU time.** A recording with switch records (`record --off-cpu`, perf's
//! `--switch-events`) has the `offcpu-time` event ([`crate::offcpu`]): one sample per
//! interval a thread spent off the CPU, at its start, with the stack the thread left with and
//! the interval's nanoseconds as its period. As in samply's profiles of perf.data with switch
//! records, these samples go on the thread's own track, beside its on-CPU samples, when those
//! are in nanoseconds too (the first CPU-time clock of the recording, `cpu-clock` or
//! `task-clock`): the track then has no `[event]` suffix of its own, its call tree adds up
//! wall-clock time (CPU time where the thread ran, off-CPU time where it waited), and the
//! activity graph, drawn from CPU deltas, is empty where it waited. With no clock to share
//! (cycles, say, whose counts are not time), the off-CPU samples get tracks of their own,
//! `comm [offcpu-time]`, as any other event. An interval is written as samples with a CPU
//! delta of 0: at its start with its nanoseconds as the weight (split evenly over the
//! interval, in pieces of at most `i32::MAX` ns, when it lasted longer: the weights are
//! `i32`), and one of weight 0 at its end, where samply puts its "rest" sample, so that the
//! thread's next sample, whose CPU delta covers only its time since then, draws as running,
//! not as spread over the wait. The leaf frame of an off-CPU sample is in the category
//! `Off-CPU` (blue), which is the sample's category: the sidebar's category breakdown of a
//! function splits its time into on-CPU categories and Off-CPU, and preempted intervals end
//! in `[preempted]`, intervals without a stack in `[no stack]`. For an event that is not a
//! clock, the CPU delta of a sample (the time since the thread's previous one) leaves out the
//! off-CPU intervals that ended in between. A sample of `record --off-cpu` that adds up short
//! intervals (below `--off-cpu-thresh`, their count in [`SampleView::samples`]) has no times of
//! its own but the last one's end: it is drawn as one span as long as their sum ending there,
//! and the export says how many such samples there were.
//!
//! **Retire latency and TopDown.** The sample table has one weight column, so these are
//! *counters* (per-process tracks whose samples are deltas, as the format defines them): with
//! `-W` (samples with `WEIGHT_STRUCT` and non-zero retire latencies) a counter `retire
//! latency` gets one counter sample per sample with its retire latency in cycles; with
//! TopDown group reads, four counters (`topdown retiring`, `topdown bad-spec`, `topdown
//! fe-bound`, `topdown be-bound`) get the sample's level-1 slots (the deltas `hrec report`
//! sums per symbol, [`crate::analysis::topdown::TdCounts::level1_slots`]) and a fifth,
//! `topdown slots`, the slots they are shares of ([`TdCounts::slots`]): on a P-core the sum
//! of the four (perf's normalisation), on an E-core `width x` the cycles, with Gracemont's
//! Bad Speculation the remainder of those slots (it is not counted). So the level-1 share of
//! a time range is a category counter's increase over the slots counter's, the report's
//! number for the same samples; on a Crestmont or Skymont E-core the four need not add up to
//! the slots (Intel's formula does not normalise). When several events carry TopDown (a
//! hybrid part's P-core and E-core groups) each event has its own five counters, suffixed
//! with its name (`topdown retiring [cpu_atom/cycles/P]`): their slots follow different
//! rules and are not added together. Counter graphs show these accumulated over time.
//!
//! [`TdCounts::slots`]: crate::analysis::topdown::TdCounts::slots
//!
//! **Markers.** `PERF_RECORD_LOST` and `PERF_RECORD_LOST_SAMPLES` become instant markers
//! `Lost samples` with the number lost; `PERF_RECORD_THROTTLE` .. `UNTHROTTLE` of one event
//! id become an interval marker `Throttled` (a throttle never lifted extends to the end).
//! A marker is placed on the thread of the record's tid (`sample_id_all`) when that thread
//! has samples, else on the first thread of the profile.
//!
//! **Memory.** The format needs every sample on the timeline, so the profile holds one entry
//! per sample (time, stack index, weight, CPU delta: about 32 bytes in the crate's columns)
//! plus each thread's interned stacks, frames and functions. Nothing else is kept per sample:
//! the samples stream from the replay straight into the crate's tables (the folded profile of
//! the first pass holds groups, not samples), and the JSON is serialized into the gzip stream.

use std::collections::HashMap;
use std::io::{self, Write};

use fxprof_processed_profile as fx;
use fxprof_processed_profile::{
    CategoryColor, CategoryHandle, CategoryPairHandle, CpuDelta, Frame, FrameFlags, FrameInfo,
    MarkerFieldFlags, MarkerFieldFormat, MarkerTiming, SamplingInterval, StaticSchemaMarker,
    StaticSchemaMarkerField, StringHandle, Timestamp,
};

use crate::analysis::profile::{Profile, SampleView};
use crate::decode::Record;
use crate::recording::Recording;
use crate::symbol::symbolizer::Loc;

use super::pprof::unresolved_name;

/// What the export takes from the recording besides its samples.
#[derive(Debug, Clone, Default)]
pub struct FirefoxMeta {
    /// Wall-clock time of the first sample, ns since the epoch; 0 when unknown.
    pub start_time_unix_ns: u64,
    /// Perf-clock time of the first sample: the profile's zero.
    pub first_time: u64,
    /// Intended time between samples, ns.
    pub interval_ns: u64,
    /// Per profile event: a CPU-time clock, whose periods are nanoseconds.
    pub clock: Vec<bool>,
}

impl FirefoxMeta {
    /// The recording's start, sample-time span, interval and clock events.
    pub fn from_recording(rec: &Recording, p: &Profile) -> FirefoxMeta {
        let meta = rec.meta();
        let clock: Vec<bool> = super::clock_events(meta, p);
        let span = rec.sample_time();
        let first_attr = p.events.first().and_then(|e| meta.events.get(e.index));
        let interval_ns = match first_attr {
            Some(e) if e.attr.freq() && e.attr.sample_period_or_freq > 0 => {
                1_000_000_000 / e.attr.sample_period_or_freq
            }
            Some(e) if clock.first() == Some(&true) && e.attr.sample_period_or_freq > 0 => {
                e.attr.sample_period_or_freq
            }
            _ => match (span, p.total_samples) {
                (Some((a, b)), n) if n > 1 && b > a => (b - a) / (n - 1),
                _ => 1_000_000,
            },
        };
        let first_time = span.map_or(0, |(first, _)| first);
        // An hrec file: its wall-clock start and the perf clock at that moment put the first
        // sample on the wall clock; perf.data's start is already the first sample's.
        let start = rec.start_time_unix_ns().unwrap_or(0);
        let start_time_unix_ns = if start > 0 && meta.clock_start_ns > 0 && span.is_some() {
            (i128::from(start) + i128::from(first_time) - i128::from(meta.clock_start_ns))
                .clamp(0, i128::from(u64::MAX)) as u64
        } else {
            start
        };
        FirefoxMeta {
            start_time_unix_ns,
            first_time,
            interval_ns: interval_ns.max(1),
            clock,
        }
    }
}

/// What was exported, for the command's summary line and the tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Samples written.
    pub samples: u64,
    /// Threads (tracks) written.
    pub threads: usize,
    /// Processes written.
    pub processes: usize,
    /// Markers written (lost samples, throttling).
    pub markers: usize,
    /// Samples whose period did not fit the format's `i32` weight (clamped).
    pub clamped: u64,
    /// Of the samples, off-CPU intervals (`offcpu-time`).
    pub off_cpu: u64,
    /// Of those, samples that add up several intervals shorter than `record --off-cpu`'s
    /// threshold, each drawn as one span (their sum) ending where the last one ended.
    pub off_cpu_aggregated: u64,
}

/// A thread's track.
#[derive(Debug)]
struct Track {
    handle: fx::ThreadHandle,
    /// Comm id of its last sample.
    comm: u32,
    /// Time of its last sample.
    last_time: Option<u64>,
    /// The thread's off-CPU nanoseconds ([`Exporter::off_ns`]) at its last sample.
    last_off_ns: u64,
    /// Its last sample's locations (leaf, then callers), whether it was off the CPU, and its
    /// stack: a thread in a loop samples the same stack many times in a row, and interning it
    /// again costs a lookup per frame.
    last_locs: Vec<u32>,
    last_off: bool,
    last_stack: Option<fx::StackHandle>,
}

/// A process and its counters.
#[derive(Debug)]
struct Proc {
    handle: fx::ProcessHandle,
    /// The order processes were made in.
    order: usize,
    /// Comm id it is named by: its main thread's, else its first thread's.
    comm: u32,
    /// Its main thread has a track (with several events, the first event's).
    has_main: bool,
    samples: u64,
    latency: Option<fx::CounterHandle>,
    /// The TopDown counters of each profile event with group reads.
    topdown: HashMap<u16, [fx::CounterHandle; 5]>,
}

/// A marker waiting for its thread.
#[derive(Debug, Clone, Copy)]
enum Pending {
    Lost {
        time: u64,
        tid: Option<u32>,
        lost: u64,
    },
    Throttled {
        start: u64,
        end: Option<u64>,
        tid: Option<u32>,
    },
}

/// `Lost samples`: an instant marker with the count.
#[derive(Debug)]
struct LostMarker {
    name: StringHandle,
    lost: u64,
}

impl StaticSchemaMarker for LostMarker {
    const UNIQUE_MARKER_TYPE_NAME: &'static str = "HrecLost";
    const DESCRIPTION: Option<&'static str> =
        Some("Samples the kernel dropped (PERF_RECORD_LOST, PERF_RECORD_LOST_SAMPLES)");
    const CHART_LABEL: Option<&'static str> = Some("{marker.data.lost} lost");
    const TOOLTIP_LABEL: Option<&'static str> = Some("{marker.data.lost} samples lost");
    const TABLE_LABEL: Option<&'static str> = Some("{marker.data.lost} samples lost");
    const FIELDS: &'static [StaticSchemaMarkerField] = &[StaticSchemaMarkerField {
        key: "lost",
        label: "Samples lost",
        format: MarkerFieldFormat::Integer,
        flags: MarkerFieldFlags::empty(),
    }];

    fn name(&self, _: &mut fx::Profile) -> StringHandle {
        self.name
    }

    fn category(&self, _: &mut fx::Profile) -> CategoryHandle {
        CategoryHandle::OTHER
    }

    fn string_field_value(&self, _: u32) -> StringHandle {
        self.name
    }

    fn number_field_value(&self, _: u32) -> f64 {
        self.lost as f64
    }
}

/// `Throttled`: an interval marker from THROTTLE to UNTHROTTLE.
#[derive(Debug)]
struct ThrottleMarker {
    name: StringHandle,
}

impl StaticSchemaMarker for ThrottleMarker {
    const UNIQUE_MARKER_TYPE_NAME: &'static str = "HrecThrottle";
    const DESCRIPTION: Option<&'static str> =
        Some("The kernel throttled sampling (PERF_RECORD_THROTTLE until PERF_RECORD_UNTHROTTLE)");
    const FIELDS: &'static [StaticSchemaMarkerField] = &[];

    fn name(&self, _: &mut fx::Profile) -> StringHandle {
        self.name
    }

    fn category(&self, _: &mut fx::Profile) -> CategoryHandle {
        CategoryHandle::OTHER
    }

    fn string_field_value(&self, _: u32) -> StringHandle {
        self.name
    }

    fn number_field_value(&self, _: u32) -> f64 {
        0.0
    }
}

/// Builds a processed profile from samples streamed in time order (see the module docs).
#[derive(Debug)]
pub struct Exporter<'p> {
    p: &'p Profile,
    meta: FirefoxMeta,
    out: fx::Profile,
    user: CategoryPairHandle,
    kernel: CategoryPairHandle,
    other: CategoryPairHandle,
    /// The leaf frame of an off-CPU sample.
    off_cpu: CategoryPairHandle,
    /// The `offcpu-time` event, when the profile has one.
    off_event: Option<u16>,
    /// The event whose tracks the off-CPU samples share: the first CPU-time clock (both in
    /// nanoseconds); without one they have tracks of their own.
    off_track_event: Option<u16>,
    /// Whether tracks are named with their event: several on-CPU events, or off-CPU samples
    /// on tracks of their own beside another event's.
    several: bool,
    /// Per tid: the nanoseconds off the CPU of its intervals so far.
    off_ns: HashMap<u32, u64>,
    processes: HashMap<u32, Proc>,
    tracks: HashMap<(u32, u32, u16), Track>,
    /// The first track made, and the first track of each tid (for markers).
    first_track: Option<fx::ThreadHandle>,
    tid_track: HashMap<u32, fx::ThreadHandle>,
    /// Per profile location: its frames innermost first, `(start, len)` into `frame_buf`.
    loc_frames: Vec<Option<(u32, u32)>>,
    frame_buf: Vec<FrameInfo>,
    stack: Vec<FrameInfo>,
    markers: Vec<Pending>,
    /// Open throttles by event id: index into `markers`.
    throttled: HashMap<u64, usize>,
    summary: Summary,
}

impl<'p> Exporter<'p> {
    /// An exporter for the samples of `p` (the folded, symbolized profile of the same
    /// recording: its locations and thread names are what the samples refer to).
    pub fn new(p: &'p Profile, meta: FirefoxMeta) -> Exporter<'p> {
        let reference = fx::ReferenceTimestamp::from_millis_since_unix_epoch(
            meta.start_time_unix_ns as f64 / 1e6,
        );
        let mut out = fx::Profile::new(
            "hrec",
            reference,
            SamplingInterval::from_nanos(meta.interval_ns),
        );
        out.set_product("hrec");
        out.set_os_name("Linux");
        out.set_symbolicated(true);
        let user = out.add_category("User", CategoryColor::Yellow).into();
        let kernel = out.add_category("Kernel", CategoryColor::Orange).into();
        let off_cpu = out.add_category("Off-CPU", CategoryColor::Blue).into();
        let off_event = p
            .events
            .iter()
            .position(|e| e.is_off_cpu())
            .map(|k| k as u16);
        let off_track_event = off_event
            .and_then(|_| meta.clock.iter().position(|&c| c))
            .map(|k| k as u16);
        let tracks_per_thread = p.events.len() - usize::from(off_track_event.is_some());
        Exporter {
            p,
            meta,
            out,
            user,
            kernel,
            other: CategoryHandle::OTHER.into(),
            off_cpu,
            off_event,
            off_track_event,
            several: tracks_per_thread > 1,
            off_ns: HashMap::new(),
            processes: HashMap::new(),
            tracks: HashMap::new(),
            first_track: None,
            tid_track: HashMap::new(),
            loc_frames: vec![None; p.locs.len()],
            frame_buf: Vec::new(),
            stack: Vec::new(),
            markers: Vec::new(),
            throttled: HashMap::new(),
            summary: Summary::default(),
        }
    }

    fn timestamp(&self, time: u64) -> Timestamp {
        Timestamp::from_nanos_since_reference(time.saturating_sub(self.meta.first_time))
    }

    /// The frames of location `i`, innermost first, named as the pprof export names them.
    fn frames_of(&mut self, i: u32) -> (u32, u32) {
        if let Some(span) = self.loc_frames[i as usize] {
            return span;
        }
        let p: &'p Profile = self.p;
        let l: &Loc = &p.locs[i as usize];
        let category = match (&l.sym, l.kernel) {
            (None, _) => self.other,
            (Some(_), true) => self.kernel,
            (Some(_), false) => self.user,
        };
        let start = self.frame_buf.len() as u32;
        let push = |out: &mut fx::Profile, buf: &mut Vec<FrameInfo>, name: &str| {
            buf.push(FrameInfo {
                frame: Frame::Label(out.intern_string(name)),
                category_pair: category,
                flags: FrameFlags::empty(),
            });
        };
        match &l.sym {
            None => push(&mut self.out, &mut self.frame_buf, &unresolved_name(l)),
            Some(sym) if l.frames.is_empty() => push(&mut self.out, &mut self.frame_buf, sym),
            Some(sym) => {
                let n = l.frames.len();
                for (k, f) in l.frames.iter().enumerate() {
                    let name = if k + 1 == n {
                        &**sym
                    } else {
                        f.function.as_deref().unwrap_or("??")
                    };
                    push(&mut self.out, &mut self.frame_buf, name);
                }
            }
        }
        let span = (start, self.frame_buf.len() as u32 - start);
        self.loc_frames[i as usize] = Some(span);
        span
    }

    fn process(&mut self, pid: u32, comm: (u32, &str), ts: Timestamp) -> &mut Proc {
        let out = &mut self.out;
        let order = self.processes.len();
        self.processes.entry(pid).or_insert_with(|| Proc {
            handle: out.add_process(comm.1, pid, ts),
            order,
            comm: comm.0,
            has_main: false,
            samples: 0,
            latency: None,
            topdown: HashMap::new(),
        })
    }

    /// Adds one sample (in time order; the caller applies `--comm`/`--pid` filters).
    pub fn add_sample(&mut self, v: &SampleView<'_>) {
        let p: &'p Profile = self.p;
        let ts = self.timestamp(v.time);
        let comm: &str = p.comms.get(v.comm as usize).map_or("?", |c| c);
        let several = self.several;
        let event = usize::from(v.event);
        let off = Some(v.event) == self.off_event;
        // The track: an off-CPU sample's is the thread's clock track, when there is one.
        let track_event = match self.off_track_event {
            Some(e) if off => e,
            _ => v.event,
        };
        let track_name = |comm: &str| {
            if several {
                format!("{comm} [{}]", p.events[usize::from(track_event)].name)
            } else {
                comm.to_string()
            }
        };
        let main = v.tid == v.pid;
        let (proc_handle, rename, has_main) = {
            let pr = self.process(v.pid, (v.comm, comm), ts);
            pr.samples += 1;
            let rename = main && pr.comm != v.comm;
            if main {
                pr.comm = v.comm;
            }
            (pr.handle, rename, pr.has_main)
        };
        if rename {
            self.out.set_process_name(proc_handle, comm);
        }
        let key = (v.pid, v.tid, track_event);
        let thread = match self.tracks.get_mut(&key) {
            Some(t) => {
                if t.comm != v.comm {
                    t.comm = v.comm;
                    let h = t.handle;
                    self.out.set_thread_name(h, &track_name(comm));
                }
                t.handle
            }
            None => {
                let is_main = main && !has_main;
                if is_main && let Some(pr) = self.processes.get_mut(&v.pid) {
                    pr.has_main = true;
                }
                let h = self.out.add_thread(proc_handle, v.tid, ts, is_main);
                self.out.set_thread_name(h, &track_name(comm));
                self.tracks.insert(
                    key,
                    Track {
                        handle: h,
                        comm: v.comm,
                        last_time: None,
                        last_off_ns: 0,
                        last_locs: Vec::new(),
                        last_off: false,
                        last_stack: None,
                    },
                );
                self.first_track.get_or_insert(h);
                self.tid_track.entry(v.tid).or_insert(h);
                self.summary.threads += 1;
                h
            }
        };
        // The stack, leaf first, then reversed into root-first order.
        let Some(track) = self.tracks.get_mut(&key) else {
            return; // made above
        };
        let same = track.last_stack.is_some()
            && track.last_off == off
            && track.last_locs.first() == Some(&v.leaf)
            && track.last_locs[1..] == *v.callers;
        let stack = if same {
            track.last_stack
        } else {
            track.last_locs.clear();
            track.last_locs.push(v.leaf);
            track.last_locs.extend_from_slice(v.callers);
            track.last_off = off;
            self.stack.clear();
            for &l in std::iter::once(&v.leaf).chain(v.callers) {
                let (a, n) = self.frames_of(l);
                self.stack
                    .extend_from_slice(&self.frame_buf[a as usize..(a + n) as usize]);
            }
            // An off-CPU sample's leaf frame is in the category Off-CPU: the sample's
            // category, so the profiler's category breakdown of a function splits its time
            // into on and off the CPU.
            if off && let Some(leaf) = self.stack.first_mut() {
                leaf.category_pair = self.off_cpu;
            }
            let stack = self
                .out
                .intern_stack_frames(thread, self.stack.drain(..).rev());
            if let Some(t) = self.tracks.get_mut(&key) {
                t.last_stack = stack;
            }
            stack
        };
        let Some(track) = self.tracks.get_mut(&key) else {
            return;
        };
        if off {
            // The interval's nanoseconds, with no CPU time: from its start, in pieces of at
            // most i32::MAX ns (the format's weights are i32) spread over it, and a sample of
            // no weight at its end, so that the activity graph is empty over the interval and
            // the thread's next sample is measured from its end.
            let end = v.time.saturating_add(v.period);
            let pieces = v.period.div_ceil(i32::MAX as u64).max(1);
            let at = |k: u64| (u128::from(v.period) * u128::from(k) / u128::from(pieces)) as u64;
            for k in 0..pieces {
                let weight = (at(k + 1) - at(k)) as i32;
                let t = self.timestamp(v.time + at(k));
                self.out
                    .add_sample(thread, t, stack, CpuDelta::from_nanos(0), weight);
            }
            let t = self.timestamp(end);
            self.out
                .add_sample(thread, t, stack, CpuDelta::from_nanos(0), 0);
            *self.off_ns.entry(v.tid).or_default() += v.period;
            self.summary.samples += 1;
            self.summary.off_cpu += 1;
            self.summary.off_cpu_aggregated += u64::from(v.samples > 1);
            return;
        }
        let off_ns = self.off_ns.get(&v.tid).copied().unwrap_or(0);
        let cpu = if self.meta.clock.get(event).copied().unwrap_or(false) {
            CpuDelta::from_nanos(v.period)
        } else {
            // Not a time: the time since the thread's previous sample, less the time it is
            // known to have spent off the CPU since (from switch records, when recorded).
            let since = track.last_time.map_or(0, |t| v.time.saturating_sub(t));
            CpuDelta::from_nanos(since.saturating_sub(off_ns - track.last_off_ns))
        };
        track.last_time = Some(v.time);
        track.last_off_ns = off_ns;
        let weight = i32::try_from(v.period).unwrap_or_else(|_| {
            self.summary.clamped += 1;
            i32::MAX
        });
        self.out.add_sample(thread, ts, stack, cpu, weight);
        self.summary.samples += 1;

        // Counters: retire latency, TopDown level-1 slot deltas.
        let has_latency = p.events[event].has_latency;
        if has_latency
            && let Some(lat) = v.retire_lat
            && let Some(pr) = self.processes.get_mut(&v.pid)
        {
            let c = *pr.latency.get_or_insert_with(|| {
                self.out.add_counter(
                    pr.handle,
                    "retire latency",
                    "PMU",
                    "Retire latency of the samples, cycles (WEIGHT_STRUCT, hrec record -W)",
                )
            });
            self.out.add_counter_sample(c, ts, f64::from(lat), 1);
        }
        if let Some(td) = &v.td
            && let Some(pr) = self.processes.get_mut(&v.pid)
        {
            let out = &mut self.out;
            // With TopDown on several events (a hybrid part's P-core and E-core groups) each
            // has its own counters: their slots follow different rules.
            let suffix = if p.events.iter().filter(|e| e.topdown_samples > 0).count() > 1 {
                format!(" [{}]", p.events[event].name)
            } else {
                String::new()
            };
            let cs = *pr.topdown.entry(v.event).or_insert_with(|| {
                [
                    ("topdown retiring", "Slots retiring (TopDown level 1)"),
                    ("topdown bad-spec", "Slots lost to bad speculation"),
                    ("topdown fe-bound", "Slots stalled on the front end"),
                    ("topdown be-bound", "Slots stalled on the back end"),
                    (
                        "topdown slots",
                        "Slots the level-1 shares are of (P-core: the four's sum; E-core: width x cycles)",
                    ),
                ]
                .map(|(n, d)| out.add_counter(pr.handle, &format!("{n}{suffix}"), "PMU", d))
            });
            let [ret, bad, fe, be] = td.level1_slots();
            let values = [ret, bad, fe, be, td.slots() as f64];
            for (c, x) in cs.into_iter().zip(values) {
                out.add_counter_sample(c, ts, x, 1);
            }
        }
    }

    /// Takes the records that become markers (lost samples, throttling); others are ignored.
    pub fn add_record(&mut self, r: &Record<'_>) {
        let sid = r.sample_id();
        let tid = sid.and_then(|s| s.tid);
        let time = sid.and_then(|s| s.time);
        match r {
            Record::Lost { lost, .. } | Record::LostSamples { lost, .. } => {
                self.markers.push(Pending::Lost {
                    time: time.unwrap_or(self.meta.first_time),
                    tid,
                    lost: *lost,
                });
            }
            // A throttle already open stays open from its first record.
            Record::Throttle(t) if !self.throttled.contains_key(&t.id) => {
                self.throttled.insert(t.id, self.markers.len());
                self.markers.push(Pending::Throttled {
                    start: t.time,
                    end: None,
                    tid,
                });
            }
            Record::Unthrottle(t) => {
                if let Some(i) = self.throttled.remove(&t.id)
                    && let Pending::Throttled { end, .. } = &mut self.markers[i]
                {
                    *end = Some(t.time);
                }
            }
            _ => {}
        }
    }

    /// The profile, markers placed on their threads, and what it holds.
    pub fn finish(mut self) -> (fx::Profile, Summary) {
        let lost_name = self.out.intern_string("Lost samples");
        let throttle_name = self.out.intern_string("Throttled");
        for m in std::mem::take(&mut self.markers) {
            let tid = match m {
                Pending::Lost { tid, .. } | Pending::Throttled { tid, .. } => tid,
            };
            let Some(thread) = tid
                .and_then(|t| self.tid_track.get(&t).copied())
                .or(self.first_track)
            else {
                continue;
            };
            match m {
                Pending::Lost { time, lost, .. } => {
                    let t = MarkerTiming::Instant(self.timestamp(time));
                    self.out.add_marker(
                        thread,
                        t,
                        LostMarker {
                            name: lost_name,
                            lost,
                        },
                    );
                }
                Pending::Throttled { start, end, .. } => {
                    let t = match end {
                        Some(e) => MarkerTiming::Interval(self.timestamp(start), self.timestamp(e)),
                        None => MarkerTiming::IntervalStart(self.timestamp(start)),
                    };
                    self.out.add_marker(
                        thread,
                        t,
                        ThrottleMarker {
                            name: throttle_name,
                        },
                    );
                }
            }
            self.summary.markers += 1;
        }
        // The profile is named after the process with the most samples.
        if let Some(top) = self
            .processes
            .values()
            .max_by_key(|pr| (pr.samples, std::cmp::Reverse(pr.order)))
            && let Some(name) = self.p.comms.get(top.comm as usize)
        {
            self.out.set_product(name);
        }
        self.summary.processes = self.processes.len();
        (self.out, self.summary)
    }
}

/// Writes the profile as gzip-compressed JSON.
pub fn write_gz(profile: &fx::Profile, out: &mut dyn Write) -> io::Result<()> {
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    serde_json::to_writer(&mut gz, profile).map_err(io::Error::other)?;
    gz.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::profile::Folder;

    use crate::testutil::loc;

    /// Thread 8 of process 7: not the main thread, which the format names after its process.
    fn view(event: u16, time: u64, period: u64, leaf: u32, callers: &[u32]) -> SampleView<'_> {
        SampleView {
            time,
            ..crate::testutil::view(event, leaf, callers, period)
        }
    }

    /// A thread's samples as the profile holds them: (time ms, weight, CPU delta µs, leaf
    /// function, leaf category).
    type Row = (f64, i64, f64, String, String);

    /// Exports the samples and returns each track's name and rows.
    fn export(event: &str, clock: bool, samples: &[SampleView<'_>]) -> Vec<(String, Vec<Row>)> {
        let events = crate::testutil::events_with_off_cpu(event);
        let mut f = Folder::new(events, false);
        for s in samples {
            f.add(s);
        }
        let mut p = f.finish();
        p.locs = vec![loc("main"), loc("wait"), loc("[preempted]")];
        p.comms = vec!["app".into()];
        let meta = FirefoxMeta {
            start_time_unix_ns: 0,
            first_time: 1_000_000,
            interval_ns: 250_000,
            clock: vec![clock, false],
        };
        let mut x = Exporter::new(&p, meta);
        for s in samples {
            x.add_sample(s);
        }
        let (profile, summary) = x.finish();
        assert_eq!(summary.samples, samples.len() as u64);
        assert_eq!(
            summary.off_cpu,
            samples.iter().filter(|s| s.event == 1).count() as u64
        );
        let j = serde_json::to_value(&profile).unwrap();
        let categories: Vec<&str> = j["meta"]["categories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        let ints = |v: &serde_json::Value| -> Vec<usize> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as usize)
                .collect()
        };
        let floats = |v: &serde_json::Value| -> Vec<f64> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        };
        j["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let strings: Vec<&str> = t["stringArray"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_str().unwrap())
                    .collect();
                let s = &t["samples"];
                let frame = ints(&t["stackTable"]["frame"]);
                let func = ints(&t["frameTable"]["func"]);
                let category = ints(&t["frameTable"]["category"]);
                let name = ints(&t["funcTable"]["name"]);
                let mut now = 0.0;
                let rows = ints(&s["stack"])
                    .into_iter()
                    .zip(floats(&s["timeDeltas"]))
                    .zip(floats(&s["weight"]))
                    .zip(floats(&s["threadCPUDelta"]))
                    .map(|(((stack, dt), w), cpu)| {
                        now += dt;
                        let fr = frame[stack];
                        (
                            (now * 1e6).round() / 1e6,
                            w as i64,
                            cpu,
                            strings[name[func[fr]]].to_string(),
                            categories[category[fr]].to_string(),
                        )
                    })
                    .collect();
                (t["name"].as_str().unwrap().to_string(), rows)
            })
            .collect()
    }

    fn row(ms: f64, weight: i64, cpu_us: f64, leaf: &str, category: &str) -> Row {
        (ms, weight, cpu_us, leaf.to_string(), category.to_string())
    }

    /// With a clock, off-CPU intervals share the thread's track: weight in ns, no CPU time, a
    /// sample of no weight where the interval ends, intervals longer than i32::MAX ns in
    /// even pieces, the leaf in the Off-CPU category.
    #[test]
    fn off_cpu_samples_share_the_clock_track_with_no_cpu_time() {
        let callers = [0u32];
        let samples = [
            view(0, 1_000_000, 250_000, 0, &[]),
            // Blocked in wait for 1 ms, from 1.1 ms.
            view(1, 1_100_000, 1_000_000, 1, &callers),
            view(0, 2_350_000, 250_000, 0, &[]),
            // Preempted for 3 s: two pieces of 1.5 s.
            view(1, 2_400_000, 3_000_000_000, 2, &callers),
            view(0, 3_002_650_000, 250_000, 0, &[]),
        ];
        let tracks = export("cpu-clock", true, &samples);
        assert_eq!(tracks.len(), 1, "{tracks:?}");
        let (name, rows) = &tracks[0];
        assert_eq!(name, "app");
        assert_eq!(
            *rows,
            [
                row(0.0, 250_000, 250.0, "main", "User"),
                row(0.1, 1_000_000, 0.0, "wait", "Off-CPU"),
                row(1.1, 0, 0.0, "wait", "Off-CPU"),
                row(1.35, 250_000, 250.0, "main", "User"),
                row(1.4, 1_500_000_000, 0.0, "[preempted]", "Off-CPU"),
                row(1501.4, 1_500_000_000, 0.0, "[preempted]", "Off-CPU"),
                row(3001.4, 0, 0.0, "[preempted]", "Off-CPU"),
                row(3001.65, 250_000, 250.0, "main", "User"),
            ]
        );
    }

    /// Without a clock (cycles counts are not time), the off-CPU samples have tracks of their
    /// own, and a cycles sample's CPU delta leaves out the thread's time off the CPU.
    #[test]
    fn without_a_clock_off_cpu_samples_have_their_own_tracks() {
        let callers = [0u32];
        let samples = [
            view(0, 1_000_000, 5000, 0, &[]),
            view(1, 1_100_000, 1_000_000, 1, &callers),
            view(0, 2_400_000, 7000, 0, &[]),
        ];
        let mut tracks = export("cycles", false, &samples);
        tracks.sort_by(|a, b| a.0.cmp(&b.0));
        let names: Vec<&str> = tracks.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(names, ["app [cycles]", "app [offcpu-time]"]);
        // 1.4 ms between the samples, 1 ms of it off the CPU.
        assert_eq!(
            tracks[0].1,
            [
                row(0.0, 5000, 0.0, "main", "User"),
                row(1.4, 7000, 400.0, "main", "User"),
            ]
        );
        assert_eq!(
            tracks[1].1,
            [
                row(0.1, 1_000_000, 0.0, "wait", "Off-CPU"),
                row(1.1, 0, 0.0, "wait", "Off-CPU"),
            ]
        );
    }
}
