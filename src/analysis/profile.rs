//! A recording's samples resolved and folded: the common input of `report`, `flamegraph`,
//! `script` and the exports.
//!
//! **Folded, not listed.** A profile never holds one entry per sample. The converter
//! ([`super::replay`]) hands each sample over once, as a [`SampleView`] of interned ids, and
//! [`Folder`] adds it to the [`SampleGroup`] of everything a consumer can key on: event, CPU,
//! process, thread, thread name, cgroup and cgroup namespace, sampled location, call chain
//! and, in a memory recording, the access ([`MemView`]: data address, data source, weight,
//! kept only as far as [`FoldKeys::mem`] asks). A group keeps sums (samples, periods, TopDown
//! deltas) and an exact histogram of retire latencies, which are `u16` cycle counts, so
//! means, percentiles and maxima come out exactly as from the list of values. Memory grows
//! with the distinct groups, not with the samples: a hot loop sampled 100 000 times on one
//! thread is one group. Groups are kept in the order of their first sample, so every consumer
//! sees keys, locations and stacks first appear in the same order as it would sample by
//! sample, and output does not change with folding. The folder runs on a thread of its own
//! beside the converter (`replay::build`). This model imports nothing of
//! [`crate::recording`]: records become samples in the converter alone.
//!
//! **Locations** are interned by the converter: (file, file offset), a kernel address, an
//! anonymous address of a process, or an unmapped address. Each distinct location is
//! symbolized once at the end by a [`crate::symbol::symbolizer::Symbolizer`].
//!
//! **Sites** ([`Sites`]) keep what each location was looked up at and, per process, the
//! mappings the user-space locations were found in, so that an export that needs runtime
//! addresses (pprof's mappings) can give each process its own: a location is interned by
//! file offset, and with ASLR the same offset lies at another address in another process.
//!
//! Return addresses in a callchain point after the call; they are looked up at `addr - 1`
//! so the caller's line and inline chain are those of the call instruction
//! ([`crate::symbol::FrameAddress`]).
//!
//! `--flame-chart` needs time order: with [`ProfileOptions::timeline`] the folder also keeps
//! the runs of consecutive samples of the same group, as many entries as the chart has
//! stack changes.
//!
//! **Folded by what the output keys on** ([`FoldKeys`]). Every field of the context is kept
//! apart by default, for consumers that may ask for any of them. A report only needs what its
//! sort keys, filters and columns read: `hrec report` (sort `comm,dso,sym`) needs neither the
//! thread nor the CPU, so it asks the folder to keep only the fields it reads
//! ([`super::hist::fold_keys`]); a group then stands for the first sample's value of a field
//! it does not keep. With [`FoldKeys::rows`] the locations are not even kept apart by
//! address: they are symbolized in batches as they stream by ([`super::rows`]), each one
//! becomes the location of its row (shared object and symbol), and [`Folder::remap`] merges
//! the groups that then agree, so the groups are bounded by the rows, not by the distinct
//! addresses. Samples of a batch carry pending location ids ([`PENDING`]), which the batch's
//! remap turns into row locations before the ids are reused.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::symbol::debuginfo::SearchPaths;
use crate::symbol::debuginfod::{self, Debuginfod};
use crate::symbol::maps::{MappedFile, Mapping};
use crate::symbol::symbolizer::{Loc, LocKey};
use crate::symbol::{FrameAddress, Unresolved};

use super::FastMap;
use super::latency::LatHist;
use super::topdown::TdCounts;

/// How to build a profile.
#[derive(Debug, Clone)]
pub struct ProfileOptions {
    /// Look for binaries under this directory instead of `/` (perf's `--symfs`).
    pub symfs: Option<PathBuf>,
    /// Where separate debug files are searched.
    pub search: SearchPaths,
    /// Where `perf-PID.map` files are read from (`/tmp`).
    pub perf_map_dir: PathBuf,
    /// Keep only the samples in these time ranges (perf's `--time`).
    pub time: Option<super::timefilter::TimeSpec>,
    /// Worker threads for symbolization (0: one per CPU).
    pub threads: usize,
    /// Keep the time order of groups for `--flame-chart` ([`Profile::timeline`]).
    pub timeline: bool,
    /// Unwind the user stacks kept by `record --call-graph dwarf,SIZE,raw` again instead of
    /// taking the chains found at record time.
    pub reunwind: bool,
    /// Take the recorded call chains as they are: no unwinding of the user stacks a
    /// `--call-graph dwarf` perf.data (or `dwarf,SIZE,raw` hrec file) kept (perf's
    /// `data convert --to-json` does not unwind them).
    pub no_unwind: bool,
    /// `--no-inline`: no entries of their own for the functions inlined at the addresses of
    /// unwound chains ([`Profile::inline_entries`]).
    pub no_inline: bool,
    /// Fetches missing executables and debug files (`DEBUGINFOD_URLS`; `None`: never).
    pub debuginfod: Option<Arc<Debuginfod>>,
    /// The output shows no source line: binaries are read for their symbol tables alone (no
    /// DWARF line tables or inline trees, whose inflating and parsing is most of a small
    /// report's time), unless the recording has call chains, whose entries may show inline
    /// frames.
    pub symbols_only: bool,
    /// The output names functions, inlined ones too, but shows no source line (`flamegraph`):
    /// DWARF is read for inline trees, and its line tables, most of the lookups' time, are
    /// left unparsed.
    pub names_only: bool,
    /// What the groups keep apart (everything by default; see the module docs).
    pub fold: FoldKeys,
    /// perf's `--mem-mode`: each sample stands for its weight (the load latency of a memory
    /// event; 1 when it has none) instead of its period.
    pub mem_mode: bool,
    /// Keep the deltas of every member of each sampler's group read
    /// ([`SampleView::members`], [`Profile::member_sums`]): per-function metrics
    /// (`report --td-level 3`, `--metrics`; [`super::metrics`]).
    pub member_sums: bool,
}

/// What the folder keeps apart: the context fields a consumer reads, and whether locations
/// are kept apart by address or only by the row they fall in (see the module docs). The
/// event is always kept. [`FoldKeys::ALL`] keeps everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoldKeys {
    /// The CPU.
    pub cpu: bool,
    /// The process id.
    pub pid: bool,
    /// The thread id.
    pub tid: bool,
    /// The thread name.
    pub comm: bool,
    /// The cgroup.
    pub cgroup: bool,
    /// The cgroup namespace.
    pub cgroup_ns: bool,
    /// The text of tracepoint samples ([`SampleView::trace`]). Not in [`FoldKeys::ALL`]:
    /// only the `trace` sort key reads it, and a text can differ in every sample.
    pub trace: bool,
    /// With [`FoldKeys::trace`], the fields of tracepoint samples too (the keys
    /// `--sort FIELD` reads; [`super::tracetext::TraceText::print_with_fields`]).
    pub trace_fields: bool,
    /// Locations are told apart only by what a report row shows of them (shared object and
    /// symbol, or the address of an unresolved one), symbolized in batches of this many
    /// distinct addresses ([`super::rows`]); `None`: every address is a location of its own.
    /// Only used for recordings without call chains (whose callers are kept by address).
    pub rows: Option<usize>,
    /// What of each sample's memory access the groups keep (nothing by default: only the
    /// memory sort keys read it, and a data address per sample would make a group per
    /// address).
    pub mem: MemFold,
}

/// The parts of a sample's memory access ([`MemView`]) the groups keep apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemFold {
    /// The data address and what it names (`symbol_daddr`, `dso_daddr`, `dcacheline`).
    pub daddr: bool,
    /// The data source (`mem`, `snoop`, `tlb`, `locked`, `blocked`).
    pub data_src: bool,
    /// The weight (`local_weight`, `weight`).
    pub weight: bool,
    /// The data page size (`data_page_size`).
    pub page_size: bool,
    /// The instruction latency (`local_ins_lat`).
    pub ins_lat: bool,
    /// The data type of the address (`type`, `typeoff`): the DWARF of the binaries it lies in
    /// is read for their variables and types.
    pub types: bool,
    /// The physical address of the data (`phys_daddr`).
    pub phys: bool,
}

impl MemFold {
    /// Whether any part is kept.
    pub fn any(&self) -> bool {
        self.daddr || self.data_src || self.weight || self.page_size || self.ins_lat || self.phys
    }

    /// What the groups keep of `m`.
    fn mask(&self, m: &MemView) -> MemView {
        MemView {
            daddr: if self.daddr { m.daddr } else { NONE },
            addr: if self.daddr { m.addr } else { 0 },
            kernel: (self.daddr || self.phys) && m.kernel,
            data_src: if self.data_src { m.data_src } else { 0 },
            weight: if self.weight { m.weight } else { 0 },
            page_size: if self.page_size { m.page_size } else { 0 },
            phys_addr: if self.phys { m.phys_addr } else { 0 },
            ins_lat: if self.ins_lat { m.ins_lat } else { 0 },
        }
    }
}

/// A sample's memory access: its data address (`PERF_SAMPLE_ADDR`), what the converter
/// interned it as, its data source, weight and data page size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MemView {
    /// The data address's location, index into [`Profile::data_locs`] (`NONE`: not kept).
    pub daddr: u32,
    /// The data address.
    pub addr: u64,
    /// The sample was taken in kernel mode (perf's `[k]` before the data symbol).
    pub kernel: bool,
    /// `perf_mem_data_src` ([`crate::decode::datasrc::DataSrc::NONE`] when not sampled).
    pub data_src: u64,
    /// The sample's weight (WEIGHT, or WEIGHT_STRUCT's `var1_dw`: the load latency).
    pub weight: u64,
    /// The data page size (0: not sampled).
    pub page_size: u64,
    /// WEIGHT_STRUCT's `var2_w`: the instruction latency (0 without WEIGHT_STRUCT).
    pub ins_lat: u64,
    /// The data's physical address (`PERF_SAMPLE_PHYS_ADDR`; 0 when not sampled).
    pub phys_addr: u64,
}

impl MemView {
    /// The weight as a load latency: only a sample with a data source of its own (a memory
    /// event's; the data source kept, [`MemFold::data_src`]) has one, not the weight of
    /// another event (the nanoseconds of an `offcpu-time` sample).
    pub fn load_latency(&self) -> Option<u64> {
        let sourced =
            self.data_src != 0 && self.data_src != crate::decode::datasrc::DataSrc::NONE.0;
        (sourced && self.weight > 0).then_some(self.weight)
    }
}

impl FoldKeys {
    /// Every field, every address.
    pub const ALL: FoldKeys = FoldKeys {
        cpu: true,
        pid: true,
        tid: true,
        comm: true,
        cgroup: true,
        cgroup_ns: true,
        trace: false,
        trace_fields: false,
        rows: None,
        mem: MemFold {
            daddr: false,
            data_src: false,
            weight: false,
            page_size: false,
            ins_lat: false,
            types: false,
            phys: false,
        },
    };

    /// The distinct addresses symbolized per batch when locations fold into rows: a batch
    /// costs a load of each binary it touches (~3 ms for libpython's symbol table) and
    /// ~0.3 µs per address, and holds ~0.5 KB per address while it is symbolized (its keys,
    /// the ids of its groups, its [`Loc`]s), so 16 384 keeps it to a few MB.
    pub const ROW_BATCH: usize = 1 << 14;

    /// What of a context the groups keep (the rest reads [`NONE`]).
    fn mask(&self, c: Context) -> Context {
        let keep = |on: bool, v: u32| if on { v } else { NONE };
        Context {
            event: c.event,
            cpu: keep(self.cpu, c.cpu),
            pid: keep(self.pid, c.pid),
            tid: keep(self.tid, c.tid),
            comm: keep(self.comm, c.comm),
            cgroup: keep(self.cgroup, c.cgroup),
            cgroup_ns: keep(self.cgroup_ns, c.cgroup_ns),
            trace: keep(self.trace, c.trace),
            mem: c.mem,
        }
    }
}

impl Default for FoldKeys {
    fn default() -> Self {
        FoldKeys::ALL
    }
}

impl Default for ProfileOptions {
    fn default() -> Self {
        ProfileOptions {
            symfs: None,
            search: SearchPaths::default(),
            perf_map_dir: PathBuf::from("/tmp"),
            time: None,
            threads: 0,
            timeline: false,
            reunwind: false,
            no_inline: false,
            no_unwind: false,
            debuginfod: None,
            symbols_only: false,
            names_only: false,
            fold: FoldKeys::ALL,
            mem_mode: false,
            member_sums: false,
        }
    }
}

/// A sampling event of the recording.
#[derive(Debug, Clone, Default)]
pub struct EventInfo {
    /// Index in the recording's event list.
    pub index: usize,
    /// Name (`cycles:P`, `cpu_core/cycles/`).
    pub name: String,
    /// PMU name.
    pub pmu: Option<String>,
    /// Samples kept.
    pub samples: u64,
    /// Sum of their periods (the event count they stand for).
    pub period: u64,
    /// Samples carry `WEIGHT_STRUCT`.
    pub weight_struct: bool,
    /// The event is precise (`precise_ip > 0`).
    pub precise: bool,
    /// At least one sample has a non-zero retire latency (see [`super::latency`]), on a core
    /// that fills it.
    pub has_latency: bool,
    /// Whether the event's core fills retire latencies (Timed PEBS), as far as the
    /// recording's cpuid tells ([`crate::pmu::uarch::retire_latency`]).
    pub latency_filled: Option<bool>,
    /// Samples whose group read held TopDown members.
    pub topdown_samples: u64,
    /// Why the event's group, which asks for TopDown, has none
    /// ([`super::topdown::missing`]).
    pub no_topdown: Option<String>,
    /// Some of its samples carried a call chain.
    pub callchains: bool,
    /// It is `offcpu-time`: off-CPU intervals, their nanoseconds as period.
    pub off_cpu: bool,
}

impl EventInfo {
    /// The `offcpu-time` event (an hrec file's own, or the one the replay makes of switch
    /// records, [`super::replay::OFF_CPU_EVENT`]): its periods are nanoseconds off the CPU.
    pub fn is_off_cpu(&self) -> bool {
        self.off_cpu
    }
}

/// Sentinel for "none" in the compact fields.
pub const NONE: u32 = u32::MAX;

/// The bit of a location id that marks it pending: an index into the converter's current
/// batch of locations not yet symbolized, which [`Folder::remap`] turns into a row location
/// (only with [`FoldKeys::rows`]).
pub const PENDING: u32 = 1 << 31;

/// One sample as the converter hands it over: interned ids and the values to fold.
#[derive(Debug, Clone, Copy)]
pub struct SampleView<'a> {
    /// Index into [`Profile::events`].
    pub event: u16,
    /// CPU (`NONE` when not sampled).
    pub cpu: u32,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Thread name at the sample's time, index into [`Profile::comms`].
    pub comm: u32,
    /// The sample's cgroup (`PERF_SAMPLE_CGROUP`), index into [`Profile::cgroups`]; `NONE`
    /// when not sampled.
    pub cgroup: u32,
    /// The thread's cgroup namespace (from `PERF_RECORD_NAMESPACES`), index into
    /// [`Profile::cgroup_ns`]; `NONE` when the thread has no such record.
    pub cgroup_ns: u32,
    /// The text of a tracepoint sample ([`super::tracetext`]), index into
    /// [`Profile::traces`]; `NONE` for other events, or when [`FoldKeys::trace`] is off.
    pub trace: u32,
    /// Time (0 when not sampled).
    pub time: u64,
    /// Period: the event count this sample stands for.
    pub period: u64,
    /// The samples it stands for: 1, or the intervals an aggregated `offcpu-time` sample
    /// adds up (`record --off-cpu`'s intervals below the threshold).
    pub samples: u64,
    /// The sampled location, index into [`Profile::locs`].
    pub leaf: u32,
    /// Caller locations, outward from the leaf.
    pub callers: &'a [u32],
    /// The sample carried a callchain (possibly empty).
    pub callchain: bool,
    /// TopDown deltas of the sample's group read.
    pub td: Option<TdCounts>,
    /// Retire latency in cycles (`WEIGHT_STRUCT` bits 63:48), when the event samples it.
    pub retire_lat: Option<u16>,
    /// The memory access, when the converter was asked for it ([`FoldKeys::mem`]).
    pub mem: Option<MemView>,
    /// With [`ProfileOptions::member_sums`]: what each member of the sampler's group added
    /// since the previous read of the same counters, in the group's order
    /// ([`super::metrics::GroupMembers`]); empty otherwise.
    pub members: &'a [u64],
}

/// Samples that agree on everything a consumer keys on, folded together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleGroup {
    /// Index into [`Profile::events`].
    pub event: u16,
    /// CPU (`NONE` when not sampled).
    pub cpu: u32,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Thread name, index into [`Profile::comms`].
    pub comm: u32,
    /// Cgroup path, index into [`Profile::cgroups`], or `NONE` (not sampled).
    pub cgroup: u32,
    /// Cgroup namespace, index into [`Profile::cgroup_ns`], or `NONE`.
    pub cgroup_ns: u32,
    /// Tracepoint text, index into [`Profile::traces`], or `NONE`.
    pub trace: u32,
    /// The memory access (what [`FoldKeys::mem`] keeps of it), index into
    /// [`Profile::mems`], or `NONE`.
    pub mem: u32,
    /// The sampled location, index into [`Profile::locs`].
    pub leaf: u32,
    /// The callers, index into the profile's interned chains ([`Profile::callers`]).
    pub chain: u32,
    /// Samples folded here.
    pub samples: u64,
    /// Sum of their periods.
    pub period: u64,
    /// Sum of their TopDown deltas, index into [`Profile::topdown`], or `NONE`.
    pub td: u32,
    /// Samples that carried TopDown deltas.
    pub td_samples: u64,
    /// Their retire latencies, index into [`Profile::latencies`], or `NONE`.
    pub lat: u32,
    /// Sum of the member deltas of its group reads, index into [`Profile::member_sums`],
    /// or `NONE`.
    pub msum: u32,
    /// Group reads added into `msum`.
    pub m_reads: u64,
}

/// A run of consecutive samples (in time order) of one group, for `--flame-chart`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Index into [`Profile::groups`].
    pub group: u32,
    /// Samples in the run.
    pub samples: u64,
    /// Sum of their periods.
    pub period: u64,
    /// Sum of their retire latencies.
    pub latency: u64,
}

/// Fraction of samples that resolved, and why the others did not.
#[derive(Debug, Clone, Default)]
pub struct Resolution {
    /// Samples whose leaf resolved to a symbol.
    pub resolved: u64,
    /// Samples per reason, with the dso most often affected.
    pub unresolved: Vec<(Unresolved, u64, String)>,
}

/// Where the locations of a profile were found (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Sites {
    /// Per location (parallel to [`Profile::locs`]): what it was interned as, and the frame
    /// as the first sample that met it recorded it.
    pub keys: Vec<(LocKey, FrameAddress)>,
    /// Every mapping a location of a process was found in, file-backed or anonymous, as
    /// `(pid, mapping)`, each once, in the order first used. A mapping is the MMAP record's
    /// range, or the part of it that later overlapping mappings left.
    pub mappings: Vec<(u32, Mapping)>,
    /// The mapped files, indexed by the mappings' and keys' [`crate::symbol::maps::FileIdx`].
    pub files: Vec<MappedFile>,
}

/// Resolved, folded samples of one recording.
#[derive(Debug, Default)]
pub struct Profile {
    /// Sampling events.
    pub events: Vec<EventInfo>,
    /// Kept samples (all groups together).
    pub total_samples: u64,
    /// Sample groups, in the order of their first sample.
    pub groups: Vec<SampleGroup>,
    /// Consecutive runs of groups in time order (only with [`ProfileOptions::timeline`]).
    pub timeline: Vec<Run>,
    /// Interned call chains: `(start, len)` into `chain_locs`.
    chain_spans: Vec<(u32, u32)>,
    /// Caller location indexes of all interned chains.
    chain_locs: Vec<u32>,
    /// Distinct locations.
    pub locs: Vec<Loc>,
    /// Where the locations were found (empty for a profile not built by the converter).
    pub sites: Sites,
    /// TopDown delta sums of the groups that have them.
    pub topdown: Vec<TdCounts>,
    /// Retire-latency histograms of the groups that have them.
    pub latencies: Vec<LatHist>,
    /// Member delta sums of the groups that have them ([`SampleGroup::msum`]), in the
    /// order of the sampler's group.
    pub member_sums: Vec<Vec<u64>>,
    /// Thread names.
    pub comms: Vec<Arc<str>>,
    /// Cgroup paths (from `PERF_RECORD_CGROUP`; `unknown` for an id without one).
    pub cgroups: Vec<Arc<str>>,
    /// Cgroup namespaces as `(dev, inode)` (perf's `cgroup_id` key).
    pub cgroup_ns: Vec<(u64, u64)>,
    /// The texts of tracepoint samples ([`FoldKeys::trace`]).
    pub traces: Vec<Arc<str>>,
    /// The memory accesses the groups keep ([`SampleGroup::mem`]).
    pub mems: Vec<MemView>,
    /// The data addresses, named ([`MemView::daddr`]).
    pub data_locs: Vec<crate::symbol::data::DataLoc>,
    /// Samples that had no data address although a key reads one.
    pub no_daddr: u64,
    /// Some sample had a callchain.
    pub callchains: bool,
    /// The user parts of the chains were unwound from stack copies (`--call-graph dwarf`),
    /// at report or at record time. perf lists the functions inlined at each address of
    /// such chains as entries of their own, and not for frame-pointer chains.
    pub dwarf_stacks: bool,
    /// Call-chain entries list the functions inlined at each address (perf's `--inline`, on
    /// by default): unwound chains unless `--no-inline`.
    pub inline_entries: bool,
    /// Group reads with `time_running < time_enabled`.
    pub multiplexed: u64,
    /// Records that failed to decode (with the first error).
    pub decode_errors: (u64, Option<String>),
    /// Samples outside `--time`.
    pub filtered_by_time: u64,
    /// Where samples resolved.
    pub resolution: Resolution,
    /// How the user stacks of `--call-graph dwarf` samples unwound (none: no such samples).
    pub unwind: Option<crate::unwind::UnwindStats>,
    /// Files that were on disk but differ from the recorded build-id (path).
    pub build_id_mismatches: Vec<String>,
    /// What debuginfod fetched, or why not (`None`: not used, or nothing was missing).
    pub debuginfod: Option<debuginfod::Summary>,
    /// One-line warnings for the report header.
    pub warnings: Vec<String>,
    /// What `record --off-cpu` paired while recording (the file's `off-cpu` counts).
    pub off_cpu: Option<crate::data::offcpu::OffCpuStats>,
}

impl Profile {
    /// The callers of a group, outward.
    pub fn callers(&self, g: &SampleGroup) -> &[u32] {
        let (a, n) = self.chain_spans[g.chain as usize];
        &self.chain_locs[a as usize..(a + n) as usize]
    }

    /// The TopDown delta sum of a group.
    pub fn td(&self, g: &SampleGroup) -> Option<&TdCounts> {
        (g.td != NONE).then(|| &self.topdown[g.td as usize])
    }

    /// The member delta sums of a group and the reads behind them.
    pub fn members(&self, g: &SampleGroup) -> Option<(&[u64], u64)> {
        (g.msum != NONE).then(|| (self.member_sums[g.msum as usize].as_slice(), g.m_reads))
    }

    /// The retire latencies of a group, if its event has them.
    pub fn latency(&self, g: &SampleGroup) -> Option<&LatHist> {
        (g.lat != NONE).then(|| &self.latencies[g.lat as usize])
    }
}

/// What a sample's context is: everything of a group's key but the location and the chain
/// (with [`FoldKeys`], only the fields kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Context {
    event: u16,
    cpu: u32,
    pid: u32,
    tid: u32,
    comm: u32,
    cgroup: u32,
    cgroup_ns: u32,
    trace: u32,
    mem: u32,
}

/// What a group is keyed by while folding: the interned context (of the fields kept), the
/// leaf and the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct GroupKey {
    ctx: u32,
    leaf: u32,
    chain: u32,
}

impl std::hash::Hash for GroupKey {
    /// Two words instead of three fields: one hash round each (this is per sample).
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write_u64(u64::from(self.leaf) | u64::from(self.chain) << 32);
        h.write_u32(self.ctx);
    }
}

/// A group's counts kept in the index itself, so adding a sample touches one slot of the
/// table: the group's first-sample order, its samples and the sum of their periods.
#[derive(Debug, Clone, Copy)]
struct Slot {
    group: u32,
    samples: u64,
    period: u64,
}

/// What a group holds besides its counts, written when it is created (TopDown and latency
/// indices only when a sample brings them).
#[derive(Debug, Clone, Copy)]
struct Born {
    key: GroupKey,
    /// The whole context of its first sample (index into `contexts`).
    ctx: u32,
    td: u32,
    td_samples: u64,
    lat: u32,
    msum: u32,
    m_reads: u64,
}

/// Folds samples into a [`Profile`]'s groups as they stream by.
///
/// Adding a sample is a hash lookup among all groups so far (one per distinct context,
/// location and chain: 165 000 for 4M samples at nearly unique addresses), so the index is
/// kept small for the caches: contexts are interned first (a few per thread, the last one
/// remembered), the key is three `u32`s, and a group's counts live in its index slot; the
/// rest of a group is written once, when it is born, and the [`SampleGroup`]s are built at
/// [`finish`](Self::finish).
#[derive(Debug)]
pub struct Folder {
    p: Profile,
    group_ids: FastMap<GroupKey, Slot>,
    born: Vec<Born>,
    ctx_ids: FastMap<Context, u32>,
    contexts: Vec<Context>,
    /// Per context: the id of what the groups keep of it ([`FoldKeys`]).
    key_of_ctx: Vec<u32>,
    key_ids: FastMap<Context, u32>,
    keys: FoldKeys,
    /// The last context: `(context, its id, its key id)`.
    last_ctx: Option<(Context, u32, u32)>,
    chain_ids: FastMap<Box<[u32]>, u32>,
    empty_chain: Option<u32>,
    timeline: bool,
    nonzero_lat: Vec<bool>,
    mem_ids: FastMap<MemView, u32>,
}

impl Folder {
    /// A folder for these events; `timeline` keeps the runs for `--flame-chart`.
    pub fn new(events: Vec<EventInfo>, timeline: bool) -> Folder {
        Folder {
            nonzero_lat: vec![false; events.len()],
            p: Profile {
                events,
                ..Profile::default()
            },
            group_ids: FastMap::default(),
            born: Vec::new(),
            ctx_ids: FastMap::default(),
            contexts: Vec::new(),
            key_of_ctx: Vec::new(),
            key_ids: FastMap::default(),
            keys: FoldKeys::ALL,
            last_ctx: None,
            chain_ids: FastMap::default(),
            empty_chain: None,
            timeline,
            mem_ids: FastMap::default(),
        }
    }

    /// Keeps only these fields apart (before the first sample).
    pub fn with_keys(mut self, keys: FoldKeys) -> Folder {
        self.keys = keys;
        self
    }

    fn chain(&mut self, callers: &[u32]) -> u32 {
        // Without call chains every sample has the empty chain: no hashing for it.
        if callers.is_empty()
            && let Some(c) = self.empty_chain
        {
            return c;
        }
        if let Some(&c) = self.chain_ids.get(callers) {
            return c;
        }
        let c = self.p.chain_spans.len() as u32;
        let start = self.p.chain_locs.len() as u32;
        self.p.chain_locs.extend_from_slice(callers);
        self.p.chain_spans.push((start, callers.len() as u32));
        self.chain_ids.insert(callers.into(), c);
        if callers.is_empty() {
            self.empty_chain = Some(c);
        }
        c
    }

    /// The ids of a context and of what the groups keep of it.
    fn context(&mut self, c: Context) -> (u32, u32) {
        if let Some((last, id, key)) = self.last_ctx
            && last == c
        {
            return (id, key);
        }
        let next = self.contexts.len() as u32;
        let id = *self.ctx_ids.entry(c).or_insert(next);
        if id == next {
            self.contexts.push(c);
            let next_key = self.key_ids.len() as u32;
            let key = *self.key_ids.entry(self.keys.mask(c)).or_insert(next_key);
            self.key_of_ctx.push(key);
        }
        let key = self.key_of_ctx[id as usize];
        self.last_ctx = Some((c, id, key));
        (id, key)
    }

    /// Adds one sample.
    pub fn add(&mut self, s: &SampleView<'_>) {
        let ev = usize::from(s.event);
        let chain = self.chain(s.callers);
        self.p.callchains |= s.callchain;
        if s.callchain && !self.p.events[ev].callchains {
            self.p.events[ev].callchains = true;
        }
        let mem = match &s.mem {
            Some(m) if self.keys.mem.any() => {
                let m = self.keys.mem.mask(m);
                let next = self.p.mems.len() as u32;
                let id = *self.mem_ids.entry(m).or_insert(next);
                if id == next {
                    self.p.mems.push(m);
                }
                id
            }
            _ => NONE,
        };
        let (full, ctx) = self.context(Context {
            mem,
            event: s.event,
            cpu: s.cpu,
            pid: s.pid,
            tid: s.tid,
            comm: s.comm,
            cgroup: s.cgroup,
            cgroup_ns: s.cgroup_ns,
            trace: s.trace,
        });
        let key = GroupKey {
            ctx,
            leaf: s.leaf,
            chain,
        };
        let next = self.born.len() as u32;
        let slot = self.group_ids.entry(key).or_insert(Slot {
            group: next,
            samples: 0,
            period: 0,
        });
        slot.samples += s.samples;
        slot.period += s.period;
        let gi = slot.group;
        if gi == next {
            self.born.push(Born {
                key,
                ctx: full,
                td: NONE,
                td_samples: 0,
                lat: NONE,
                msum: NONE,
                m_reads: 0,
            });
        }
        if !s.members.is_empty() {
            let b = &mut self.born[gi as usize];
            if b.msum == NONE {
                b.msum = self.p.member_sums.len() as u32;
                self.p.member_sums.push(Vec::new());
            }
            b.m_reads += 1;
            add_into(&mut self.p.member_sums[b.msum as usize], s.members);
        }
        if let Some(td) = &s.td {
            let b = &mut self.born[gi as usize];
            if b.td == NONE {
                b.td = self.p.topdown.len() as u32;
                self.p.topdown.push(TdCounts::default());
            }
            self.p.topdown[b.td as usize].add(td);
            b.td_samples += 1;
            self.p.events[ev].topdown_samples += 1;
        }
        if let Some(l) = s.retire_lat {
            self.nonzero_lat[ev] |= l != 0;
            let b = &mut self.born[gi as usize];
            if b.lat == NONE {
                b.lat = self.p.latencies.len() as u32;
                self.p.latencies.push(LatHist::default());
            }
            self.p.latencies[b.lat as usize].add(l);
        }
        let e = &mut self.p.events[ev];
        e.samples += s.samples;
        e.period += s.period;
        self.p.total_samples += s.samples;
        if self.timeline {
            let lat = u64::from(s.retire_lat.unwrap_or(0));
            match self.p.timeline.last_mut() {
                Some(r) if r.group == gi => {
                    r.samples += s.samples;
                    r.period += s.period;
                    r.latency += lat;
                }
                _ => self.p.timeline.push(Run {
                    group: gi,
                    samples: s.samples,
                    period: s.period,
                    latency: lat,
                }),
            }
        }
    }

    /// The pending locations of the samples added so far are these locations: `rows[i]` for
    /// the leaf `PENDING | i` ([`FoldKeys::rows`]). Groups whose keys then agree become one,
    /// in the place of the first of them (so groups stay in the order of their first
    /// sample), with their counts, TopDown sums and latencies added up. The pending ids are
    /// free again afterwards. Not for a folder that keeps the timeline (its runs name
    /// groups) or groups with callers (they are kept by address).
    pub fn remap(&mut self, rows: &[u32]) {
        debug_assert!(!self.timeline, "remap of a folder that keeps the timeline");
        let mut counts = vec![(0u64, 0u64); self.born.len()];
        for s in std::mem::take(&mut self.group_ids).into_values() {
            counts[s.group as usize] = (s.samples, s.period);
        }
        let born = std::mem::take(&mut self.born);
        let topdown = std::mem::take(&mut self.p.topdown);
        let mut member_sums = std::mem::take(&mut self.p.member_sums);
        let mut latencies = std::mem::take(&mut self.p.latencies);
        let mut index: FastMap<GroupKey, Slot> = FastMap::default();
        index.reserve(born.len());
        for (b, (samples, period)) in born.into_iter().zip(counts) {
            let mut key = b.key;
            if key.leaf & PENDING != 0 {
                key.leaf = rows[(key.leaf & !PENDING) as usize];
            }
            let td = (b.td != NONE).then(|| topdown[b.td as usize]);
            let lat = (b.lat != NONE).then(|| std::mem::take(&mut latencies[b.lat as usize]));
            let msum = (b.msum != NONE).then(|| std::mem::take(&mut member_sums[b.msum as usize]));
            let next = self.born.len() as u32;
            let slot = index.entry(key).or_insert(Slot {
                group: next,
                samples: 0,
                period: 0,
            });
            slot.samples += samples;
            slot.period += period;
            let gi = slot.group;
            if gi == next {
                self.born.push(Born {
                    key,
                    td: NONE,
                    td_samples: 0,
                    lat: NONE,
                    msum: NONE,
                    m_reads: 0,
                    ..b
                });
            }
            let g = &mut self.born[gi as usize];
            if let Some(m) = msum {
                if g.msum == NONE {
                    g.msum = self.p.member_sums.len() as u32;
                    self.p.member_sums.push(Vec::new());
                }
                add_into(&mut self.p.member_sums[g.msum as usize], &m);
            }
            g.m_reads += b.m_reads;
            if let Some(td) = td {
                if g.td == NONE {
                    g.td = self.p.topdown.len() as u32;
                    self.p.topdown.push(TdCounts::default());
                }
                self.p.topdown[g.td as usize].add(&td);
            }
            g.td_samples += b.td_samples;
            if let Some(l) = lat {
                if g.lat == NONE {
                    g.lat = self.p.latencies.len() as u32;
                    self.p.latencies.push(l);
                } else {
                    self.p.latencies[g.lat as usize].merge(&l);
                }
            }
        }
        self.group_ids = index;
    }

    /// The folded profile, locations not yet symbolized. An event whose latencies are all
    /// zero has none (no TPEBS): its histograms are dropped.
    pub fn finish(mut self) -> Profile {
        for (i, e) in self.p.events.iter_mut().enumerate() {
            // A core without Timed PEBS has none, whatever its reserved bits read.
            self.nonzero_lat[i] &= e.latency_filled != Some(false);
            e.has_latency = self.nonzero_lat[i];
        }
        let mut counts = vec![(0u64, 0u64); self.born.len()];
        for s in std::mem::take(&mut self.group_ids).into_values() {
            counts[s.group as usize] = (s.samples, s.period);
        }
        self.p.groups = self
            .born
            .iter()
            .zip(counts)
            .map(|(b, (samples, period))| {
                let c = self.contexts[b.ctx as usize];
                SampleGroup {
                    event: c.event,
                    cpu: c.cpu,
                    pid: c.pid,
                    tid: c.tid,
                    comm: c.comm,
                    cgroup: c.cgroup,
                    cgroup_ns: c.cgroup_ns,
                    trace: c.trace,
                    mem: c.mem,
                    leaf: b.key.leaf,
                    chain: b.key.chain,
                    samples,
                    period,
                    td: b.td,
                    td_samples: b.td_samples,
                    msum: b.msum,
                    m_reads: b.m_reads,
                    lat: if self.nonzero_lat[usize::from(c.event)] {
                        b.lat
                    } else {
                        NONE
                    },
                }
            })
            .collect();
        if !self.nonzero_lat.iter().any(|&n| n) {
            self.p.latencies = Vec::new();
        }
        self.p
    }
}

/// Adds `add` into `sum` member by member (a longer `add` lengthens `sum`).
pub fn add_into(sum: &mut Vec<u64>, add: &[u64]) {
    if sum.len() < add.len() {
        sum.resize(add.len(), 0);
    }
    for (s, a) in sum.iter_mut().zip(add) {
        *s = s.saturating_add(*a);
    }
}

/// Where the samples' leaves resolved, from the symbolized locations.
pub fn resolution(p: &Profile) -> Resolution {
    let mut res = Resolution::default();
    let mut why: HashMap<Unresolved, (u64, HashMap<Arc<str>, u64>)> = HashMap::new();
    for g in &p.groups {
        let l = &p.locs[g.leaf as usize];
        match l.unresolved {
            None => res.resolved += g.samples,
            Some(u) => {
                let e = why.entry(u).or_default();
                e.0 += g.samples;
                *e.1.entry(l.dso.clone()).or_default() += g.samples;
            }
        }
    }
    let mut v: Vec<_> = why
        .into_iter()
        .map(|(u, (n, dsos))| {
            let top = dsos
                .into_iter()
                .max_by_key(|(d, n)| (*n, d.clone()))
                .map(|(d, _)| d.to_string())
                .unwrap_or_default();
            (u, n, top)
        })
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    res.unresolved = v;
    res
}

#[cfg(test)]
mod tests;
