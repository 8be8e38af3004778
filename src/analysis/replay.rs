//! The converter from records to samples: the one place that knows record kinds.
//!
//! Records arrive in time order ([`Recording::for_each`]). Side-band records change state as
//! they come: address spaces ([`crate::symbol::maps`]: MMAP/MMAP2, COMM with exec, FORK),
//! thread names (COMM, FORK), cgroup paths (CGROUP) and each thread's cgroup namespace
//! (NAMESPACES). Each sample of a sampling event is then resolved against the state at its
//! time into interned ids ([`SampleView`]): its thread name and cgroup, its location (file
//! and offset, kernel address, anonymous or unmapped address) and its callers' locations
//! (user stacks of `--call-graph dwarf` samples unwound here by [`crate::unwind`], or the
//! chains the recorder stored expanded from the file's stack table), with the TopDown deltas
//! of its group read (they depend on the order of a thread's samples, so they are taken
//! here) and its retire latency. Side-band records are handed on too when asked
//! ([`Replay::with_side_band`]: `script --show-*-events`).
//!
//! Replaying the same recording twice gives the same ids in the same order, which is what
//! `script` relies on: it folds once to learn the locations, symbolizes them, and replays
//! again to print every sample as it streams by.
//!
//! With [`FoldKeys::rows`](super::profile::FoldKeys::rows) (a report keyed by shared object
//! and symbol, of a recording without call chains) the locations are not kept by address:
//! [`Replay::run_with`] interns them as pending ids and, each time a batch of distinct
//! addresses is full, has [`RowLocs`] symbolize it into row locations, hands the ids on
//! ([`Item::Rows`]) and remembers each address's row location, up to a bound (then it starts
//! afresh, and an address met again is symbolized again in a later batch). Each batch also
//! gives the file-offset range of every symbol it named (the addresses the symbol table
//! names alike); the converter keeps these ranges per file, bounded by the symbols met, and
//! gives any later address inside one its row at once, neither interned nor symbolized.

use std::collections::HashMap;
use std::sync::Arc;

use crate::data::Role;
use crate::data::offcpu::MISC_PREEMPTED;
use crate::data::stacks::{STACK_REF, StackTable};
use crate::decode::datasrc::DataSrc;
use crate::decode::{DecodeError, Record, Sample, context, misc};
use crate::event::attr::{flag, sample as st};
use crate::offcpu::Tracker;
use crate::recording::{Comms, Recording};
use crate::symbol::data::{DataAccess, DataKey};
use crate::symbol::maps::{AddressSpaces, Mapping};
use crate::symbol::symbolizer::{LocKey, Mark};
use crate::symbol::{FrameAddress, debuginfo, kallsyms};
use crate::unwind::Unwinder;
use crate::unwind::fp::{self, FpChains};

use super::FastMap;
use super::profile::{EventInfo, MemFold, MemView, NONE, PENDING, ProfileOptions, SampleView};
use super::rows::RowLocs;
use super::topdown::{DeltaTracker, TdRole};

/// The bit of a file location's key that marks a return address.
const RETURN: u64 = 1 << 63;

mod build;
mod offcpu;

pub use build::{build, build_with};
use offcpu::{LeaveStack, OffCpu, is_stack_source};

/// The name of the event the off-CPU intervals become, as perf names its own.
pub const OFF_CPU_EVENT: &str = crate::data::offcpu::NAME;

/// What the replay hands on for each record.
#[derive(Debug)]
// A sample is handed on by value once and consumed at once: boxing it would cost an
// allocation per sample.
#[allow(clippy::large_enum_variant)]
pub enum Item<'v, 'r> {
    /// A sample of a sampling event, resolved to ids, with the decoded record.
    Sample(&'r Sample<'r>, SampleView<'v>),
    /// A record that did not decode (it is skipped).
    Error(DecodeError),
    /// A side-band record (MMAP, COMM, FORK, ...), after the replay applied it, with the name
    /// its thread has then; only when [`Replay::with_side_band`] asked for them.
    SideBand(&'r Record<'r>, &'v str),
    /// The pending locations of the samples handed on so far are these row locations
    /// (`ids[i]` for `PENDING | i`); pending ids are reused after this. Only with
    /// [`Replay::run_with`] and a [`RowLocs`].
    Rows(&'v [u32]),
}

/// The converter's state between records.
#[derive(Debug)]
pub struct Replay {
    maps: AddressSpaces,
    comms: Comms,
    comm_ids: HashMap<String, u32>,
    comm_names: Vec<Arc<str>>,
    /// tid → comm id, valid until the next COMM/FORK of that tid.
    tid_comm: FastMap<u32, u32>,
    /// Cgroup id → index into `cgroup_names`, from the CGROUP records seen so far.
    cgroup_ids: FastMap<u64, u32>,
    /// Cgroup paths (interned), `unknown` among them once a sample's id had no record.
    cgroup_names: Vec<Arc<str>>,
    cgroup_index: HashMap<Arc<str>, u32>,
    /// tid → its cgroup namespace (index into `cgroup_ns`), from NAMESPACES records.
    tid_cgroup_ns: FastMap<u32, u32>,
    cgroup_ns: Vec<(u64, u64)>,
    /// Location ids of file locations, per file: offset, with [`RETURN`] for return addresses.
    file_ids: Vec<FastMap<u64, u32>>,
    /// Location ids of the other locations.
    other_ids: FastMap<(LocKey, bool), u32>,
    /// Row ids by file offset range, per file: `(lo, hi, row)` sorted by `lo`, not
    /// overlapping. Each is a symbol's range a resolved batch met ([`RowLocs::resolve`]);
    /// with rows, an address there is its row at once, neither interned nor symbolized.
    /// Bounded by the symbols met, not the addresses.
    row_spans: Vec<Vec<(u64, u64, u32)>>,
    /// The mapping of the last address looked up in a file or anonymous memory (samples come
    /// in runs from one process and one library); cleared when any mapping changes.
    last_map: Option<(u32, Mapping, bool)>,
    /// The mappings locations were found in, `(pid, mapping)` in the order first used
    /// ([`super::profile::Sites::mappings`]); recorded when `last_map` misses.
    used_maps: Vec<(u32, Mapping)>,
    used_set:
        std::collections::HashSet<(u32, Mapping), std::hash::BuildHasherDefault<super::FastHasher>>,
    key_list: Vec<(LocKey, FrameAddress)>,
    /// Locations are interned as pending ids (`PENDING | index into key_list`), for
    /// [`RowLocs`] to resolve into rows.
    pending: bool,
    tracker: DeltaTracker,
    td_of_id: HashMap<u64, TdRole>,
    /// With [`ProfileOptions::member_sums`]: the group-reading samplers' groups, the
    /// previous reads, and the buffer of a sample's member deltas.
    members: Option<(super::metrics::MemberMap, super::metrics::MemberTracker)>,
    member_buf: Vec<u64>,
    event_slot: Vec<Option<u16>>,
    inherit: Vec<bool>,
    events: Vec<EventInfo>,
    time: Option<super::timefilter::TimeRanges>,
    filtered_by_time: u64,
    /// Hand side-band records on ([`Item::SideBand`]).
    side_band: bool,
    frames: Vec<u32>,
    user_frames: Vec<FrameAddress>,
    /// Only for recordings whose samples carry user stacks (`--call-graph dwarf`) that were
    /// not unwound at record time (or are to be unwound again).
    unwinder: Option<Unwinder>,
    /// The chains of a recording unwound at record time.
    stacks: Option<StackTable>,
    /// A stored chain, expanded.
    stored: Vec<u64>,
    /// The recorded processes' vdso image, when known.
    vdso: Option<Vec<u8>>,
    /// Stored chains whose nodes were missing.
    broken_chains: u64,
    /// Each event's `sample_regs_user`.
    regs_mask: Vec<u64>,
    /// Per event: its samples carry frame-pointer call chains (`-g`: CALLCHAIN without
    /// STACK_USER, not unwound at record time).
    fp_events: Vec<bool>,
    /// Those chains that have a user part, and those that reach addresses outside any
    /// mapping of their process ([`fp`]).
    fp_chains: FpChains,
    /// Off-CPU intervals, when the recording has switch records.
    off_cpu: Option<OffCpu>,
    /// The recording's `offcpu-time` event, whose samples `record --off-cpu` paired while
    /// recording ([`crate::data::offcpu`]).
    off_cpu_event: Option<usize>,
    /// What of each sample's memory access the folder keeps ([`MemFold`]).
    mem: MemFold,
    /// perf's `--mem-mode`: a sample's period is its weight (1 when 0).
    mem_mode: bool,
    /// The address spaces of data addresses (with the data mappings), when they are named.
    data_maps: Option<AddressSpaces>,
    /// The data addresses met, interned ([`super::profile::MemView::daddr`]).
    data_ids: FastMap<DataAccess, u32>,
    data_keys: Vec<DataAccess>,
    /// Samples without a data address while one is named.
    no_daddr: u64,
    /// With [`super::profile::FoldKeys::trace`]: the tracepoints' printers, the texts met
    /// (interned) and a buffer for the next one.
    trace: Option<super::tracetext::TraceText>,
    /// The texts carry the fields too ([`super::profile::FoldKeys::trace_fields`]).
    trace_fields: bool,
    trace_ids: HashMap<Arc<str>, u32>,
    traces: Vec<Arc<str>>,
    trace_buf: String,
}

impl Replay {
    /// A converter for a recording's events: samplers (or the only event) become the
    /// profile's events.
    pub fn new(rec: &Recording, opts: &ProfileOptions) -> Replay {
        let meta = rec.meta();
        let mut events = Vec::new();
        let cpu = crate::pmu::uarch::CpuId::parse(&meta.cpuid);
        let mut no_topdown = super::topdown::missing(meta);
        let mut event_slot = vec![None; meta.events.len()];
        let mut inherit = vec![false; meta.events.len()];
        let off_cpu_event = meta.events.iter().position(|e| e.role == Role::OffCpuTime);
        for (i, e) in meta.events.iter().enumerate() {
            inherit[i] = e.attr.has(flag::INHERIT);
            if e.role == Role::Sampler
                || e.role == Role::OffCpuTime
                || (meta.events.len() == 1 && e.role != Role::Tracking)
            {
                event_slot[i] = Some(events.len() as u16);
                events.push(EventInfo {
                    index: i,
                    name: e.name.clone(),
                    pmu: e.pmu.clone(),
                    weight_struct: e.attr.sample_type & st::WEIGHT_STRUCT != 0,
                    precise: e.attr.precise_ip() > 0,
                    latency_filled: e
                        .pmu
                        .as_deref()
                        .and_then(|pmu| crate::pmu::uarch::retire_latency(cpu.as_ref(), pmu)),
                    no_topdown: no_topdown.remove(&i),
                    off_cpu: e.role == Role::OffCpuTime,
                    ..EventInfo::default()
                });
            }
        }
        // Switch records to pair here: perf.data, and hrec files that kept them.
        let off_cpu = (off_cpu_event.is_none()
            && meta.events.iter().any(|e| e.attr.has(flag::CONTEXT_SWITCH)))
        .then(|| {
            let slot = events.len() as u16;
            events.push(EventInfo {
                index: usize::MAX,
                name: OFF_CPU_EVENT.to_string(),
                pmu: Some("software".to_string()),
                off_cpu: true,
                ..EventInfo::default()
            });
            OffCpu {
                tracker: Tracker::new(),
                slot,
                stack_source: meta.events.iter().map(is_stack_source).collect(),
                blocked_only: meta.off_cpu_blocked_only,
                left_out: 0,
            }
        });
        let vdso = rec.vdso_image(opts.search.build_id_cache.as_deref());
        let td_of_id = super::topdown::roles(meta);
        Replay {
            maps: AddressSpaces::new(),
            comms: Comms::default(),
            comm_ids: HashMap::new(),
            comm_names: Vec::new(),
            tid_comm: FastMap::default(),
            cgroup_ids: FastMap::default(),
            cgroup_names: Vec::new(),
            cgroup_index: HashMap::new(),
            tid_cgroup_ns: FastMap::default(),
            cgroup_ns: Vec::new(),
            file_ids: Vec::new(),
            other_ids: FastMap::default(),
            row_spans: Vec::new(),
            last_map: None,
            used_maps: Vec::new(),
            used_set: Default::default(),
            key_list: Vec::new(),
            pending: false,
            tracker: DeltaTracker::new(),
            td_of_id,
            members: opts.member_sums.then(|| {
                (
                    super::metrics::MemberMap::new(meta),
                    super::metrics::MemberTracker::default(),
                )
            }),
            member_buf: Vec::new(),
            event_slot,
            inherit,
            events,
            time: opts
                .time
                .as_ref()
                .map(|spec| spec.resolve(|| rec.sample_time())),
            filtered_by_time: 0,
            side_band: false,
            frames: Vec::new(),
            user_frames: Vec::new(),
            unwinder: (meta
                .events
                .iter()
                .any(|e| e.attr.sample_type & st::STACK_USER != 0)
                && (!meta.unwound_at_record || opts.reunwind)
                && !opts.no_unwind)
                .then(|| {
                    let search = opts.search.clone();
                    Unwinder::new(opts.symfs.clone())
                        .with_vdso(vdso.as_deref())
                        .with_debug_files(Arc::new(move |binary: &std::path::Path| {
                            debuginfo::debug_file_of(binary, &search)
                        }))
                }),
            vdso,
            stacks: meta.unwound_at_record.then(|| rec.stacks()),
            stored: Vec::new(),
            broken_chains: 0,
            regs_mask: meta
                .events
                .iter()
                .map(|e| e.attr.sample_regs_user)
                .collect(),
            fp_events: meta
                .events
                .iter()
                .map(|e| {
                    let t = e.attr.sample_type;
                    !meta.unwound_at_record && t & st::CALLCHAIN != 0 && t & st::STACK_USER == 0
                })
                .collect(),
            fp_chains: FpChains::default(),
            off_cpu,
            off_cpu_event,
            mem: opts.fold.mem,
            mem_mode: opts.mem_mode,
            data_maps: opts.fold.mem.daddr.then(AddressSpaces::with_data),
            data_ids: FastMap::default(),
            data_keys: Vec::new(),
            no_daddr: 0,
            trace: opts
                .fold
                .trace
                .then(|| super::tracetext::TraceText::new(rec))
                .flatten(),
            trace_fields: opts.fold.trace_fields,
            trace_ids: HashMap::new(),
            traces: Vec::new(),
            trace_buf: String::new(),
        }
    }

    /// The id of the text of a sample of event `ev` with raw data `raw` (interned), or
    /// `NONE` when the event is no tracepoint or texts are not kept.
    fn trace(&mut self, ev: usize, raw: Option<&[u8]>) -> u32 {
        let (Some(t), Some(raw)) = (&self.trace, raw) else {
            return NONE;
        };
        self.trace_buf.clear();
        let printed = if self.trace_fields {
            t.print_with_fields(ev, raw, &mut self.trace_buf)
        } else {
            t.print(ev, raw, &mut self.trace_buf)
        };
        if !printed {
            return NONE;
        }
        if let Some(&i) = self.trace_ids.get(self.trace_buf.as_str()) {
            return i;
        }
        let i = self.traces.len() as u32;
        let text: Arc<str> = self.trace_buf.as_str().into();
        self.traces.push(text.clone());
        self.trace_ids.insert(text, i);
        i
    }

    /// The memory access of sample `s` (in kernel mode or not) as far as the folder keeps it.
    fn mem_view(&mut self, s: &Sample<'_>, pid: u32, kernel: bool) -> MemView {
        let weight = match s.weight_struct() {
            Some(w) => u64::from(w.var1),
            None => s.weight.unwrap_or(0),
        };
        let mut daddr = NONE;
        let addr = s.addr.unwrap_or(0);
        if let Some(maps) = &self.data_maps {
            self.no_daddr += u64::from(s.addr.is_none());
            let key = match maps.find(pid, addr) {
                Some(m) if maps.file(m.file).is_anonymous() => {
                    // With data types asked for: anonymous memory right after a file's
                    // mapping may be its `.bss` ([`DataKey::Bss`]).
                    let file_before = m
                        .start
                        .checked_sub(1)
                        .and_then(|a| maps.find(pid, a))
                        .filter(|p| p.end == m.start && !maps.file(p.file).is_anonymous());
                    match file_before {
                        Some(p) if self.mem.types => {
                            DataKey::Bss(pid, m.file, p.file, p.file_offset(addr))
                        }
                        _ => DataKey::Anon(pid, m.file),
                    }
                }
                Some(m) => DataKey::File(m.file, m.file_offset(addr)),
                None => DataKey::Unmapped(pid),
            };
            // With data types asked for: the accessing instruction, which types an address
            // no variable at a fixed address holds.
            let code = s.ip.filter(|_| self.mem.types && !kernel).and_then(|ip| {
                let m = maps.find(pid, ip)?;
                (!maps.file(m.file).is_anonymous()).then(|| (m.file, m.file_offset(ip)))
            });
            let access = DataAccess { key, addr, code };
            let next = self.data_keys.len() as u32;
            daddr = *self.data_ids.entry(access).or_insert(next);
            if daddr == next {
                self.data_keys.push(access);
            }
        }
        MemView {
            daddr,
            addr,
            kernel,
            data_src: s.data_src.unwrap_or(DataSrc::NONE.0),
            weight,
            page_size: s.data_page_size.unwrap_or(0),
            ins_lat: s.weight_struct().map_or(0, |w| u64::from(w.ins_lat)),
            phys_addr: s.phys_addr.unwrap_or(0),
        }
    }

    /// The profile's events.
    pub fn events(&self) -> &[EventInfo] {
        &self.events
    }

    /// Thread names by comm id.
    pub fn comm_names(&self) -> &[Arc<str>] {
        &self.comm_names
    }

    /// Cgroup paths by index (what [`SampleView::cgroup`] indexes).
    pub fn cgroup_names(&self) -> &[Arc<str>] {
        &self.cgroup_names
    }

    fn intern_cgroup(&mut self, path: &str) -> u32 {
        if let Some(&i) = self.cgroup_index.get(path) {
            return i;
        }
        let i = self.cgroup_names.len() as u32;
        let name: Arc<str> = Arc::from(path);
        self.cgroup_names.push(name.clone());
        self.cgroup_index.insert(name, i);
        i
    }

    /// The cgroup of a sample as perf's `cgroup` sort key names it: the path of the CGROUP
    /// record with its id (the latest one), `unknown` for an id without a record; `NONE`
    /// when the sample has no cgroup.
    fn cgroup(&mut self, id: Option<u64>) -> u32 {
        let Some(id) = id else { return NONE };
        if let Some(&i) = self.cgroup_ids.get(&id) {
            return i;
        }
        self.intern_cgroup("unknown")
    }

    /// The location id of a frame: interned by what it is looked up at and by its kind, so a
    /// location prints the address perf prints.
    fn loc(&mut self, pid: u32, frame: FrameAddress, kernel: bool) -> u32 {
        let addr = frame.lookup();
        let ret = matches!(frame, FrameAddress::Return(_));
        let key = if kernel || kallsyms::is_kernel_address(addr) {
            LocKey::Kernel(addr)
        } else {
            let mapping = match self.last_map {
                Some((p, m, anon)) if p == pid && m.start <= addr && addr < m.end => {
                    Some((m, anon))
                }
                _ => self.maps.find(pid, addr).map(|&m| {
                    // A memfd is a file to perf (not `is_anon_memory`): its code is keyed by
                    // file offset, one row per offset however often it is mapped, and
                    // named by its path.
                    let f = self.maps.file(m.file);
                    let anon = f.is_anonymous() && !f.is_memfd();
                    self.last_map = Some((pid, m, anon));
                    if self.used_set.insert((pid, m)) {
                        self.used_maps.push((pid, m));
                    }
                    (m, anon)
                }),
            };
            match mapping {
                Some((m, true)) => LocKey::Anon(pid, m.file, addr),
                Some((m, false)) => LocKey::File(m.file, m.file_offset(addr)),
                // Nothing to look up: kept by the address as recorded (a return address of 1
                // is not 0's, as perf keeps them apart).
                None => LocKey::Unmapped(pid, frame.address()),
            }
        };
        let next = self.next_loc();
        if let LocKey::File(f, off) = key
            && !ret
            && let Some(spans) = self.row_spans.get(f.0 as usize)
        {
            let i = spans.partition_point(|&(lo, _, _)| lo <= off);
            if let Some(&(_, hi, row)) = i.checked_sub(1).and_then(|i| spans.get(i))
                && off < hi
            {
                return row;
            }
        }
        // File offsets are below 2^63: the top bit holds the kind. The per-file maps keep
        // each lookup in a small table (this is per frame).
        let id = match key {
            LocKey::File(f, off) if off < RETURN => {
                let i = f.0 as usize;
                if self.file_ids.len() <= i {
                    self.file_ids.resize_with(i + 1, FastMap::default);
                }
                *self.file_ids[i]
                    .entry(off | if ret { RETURN } else { 0 })
                    .or_insert(next)
            }
            _ => *self.other_ids.entry((key, ret)).or_insert(next),
        };
        if id == next {
            self.key_list.push((key, frame));
        }
        id
    }

    /// The id the next new location gets.
    fn next_loc(&self) -> u32 {
        let i = self.key_list.len() as u32;
        if self.pending { i | PENDING } else { i }
    }

    /// Resolves the pending locations into rows and returns their ids (`ids[i]` for
    /// `PENDING | i`). The interning tables then give each address its row's id, unless they
    /// hold more than four batches: then they start afresh. Either way the pending ids are
    /// free again, and the symbol ranges found name their addresses' rows from now on
    /// ([`Replay::row_spans`]).
    pub fn resolve_rows(&mut self, rows: &mut RowLocs<'_>) -> Vec<u32> {
        let resolved = rows.resolve(&self.maps, &self.key_list);
        for (&(key, frame), &(id, span)) in self.key_list.iter().zip(&resolved) {
            if let (LocKey::File(f, _), FrameAddress::Ip(_), Some((lo, hi))) = (key, frame, span) {
                let i = f.0 as usize;
                if self.row_spans.len() <= i {
                    self.row_spans.resize_with(i + 1, Vec::new);
                }
                let spans = &mut self.row_spans[i];
                let at = spans.partition_point(|&(l, _, _)| l < lo);
                // Ranges of two symbols never overlap; a range met again is there already.
                let clear = spans.get(at).is_none_or(|&(l, _, _)| hi <= l)
                    && at.checked_sub(1).is_none_or(|p| spans[p].1 <= lo);
                if clear {
                    spans.insert(at, (lo, hi, id));
                }
            }
        }
        let ids: Vec<u32> = resolved.into_iter().map(|(id, _)| id).collect();
        let held = self.other_ids.len() + self.file_ids.iter().map(|m| m.len()).sum::<usize>();
        if held > rows.batch().saturating_mul(4) {
            self.file_ids.iter_mut().for_each(FastMap::clear);
            self.other_ids.clear();
        } else {
            let row = |v: &mut u32| {
                if *v & PENDING != 0 {
                    *v = ids[(*v & !PENDING) as usize];
                }
            };
            self.file_ids
                .iter_mut()
                .flat_map(|m| m.values_mut())
                .chain(self.other_ids.values_mut())
                .for_each(row);
        }
        self.key_list.clear();
        ids
    }

    fn comm(&mut self, tid: u32) -> u32 {
        if let Some(&c) = self.tid_comm.get(&tid) {
            return c;
        }
        let name = self.comms.name(tid);
        let c = match self.comm_ids.get(&name) {
            Some(&c) => c,
            None => {
                let c = self.comm_names.len() as u32;
                self.comm_names.push(name.as_str().into());
                self.comm_ids.insert(name, c);
                c
            }
        };
        self.tid_comm.insert(tid, c);
        c
    }

    /// Hands side-band records on too ([`Item::SideBand`]), as `script --show-*-events`
    /// prints them.
    pub fn with_side_band(mut self) -> Replay {
        self.side_band = true;
        self
    }

    /// Replays every record of `rec` in time order, calling `f` for each sample of a
    /// sampling event inside `--time` and for each record that does not decode.
    pub fn run(&mut self, rec: &Recording, f: impl FnMut(Item<'_, '_>)) {
        self.run_with(rec, None, f);
    }

    /// [`Replay::run`]; with `rows`, locations are handed on as pending ids, resolved into
    /// row locations batch by batch ([`Item::Rows`]). The last batch is left pending for the
    /// caller to resolve ([`Replay::resolve_rows`]).
    pub fn run_with(
        &mut self,
        rec: &Recording,
        mut rows: Option<&mut RowLocs<'_>>,
        mut f: impl FnMut(Item<'_, '_>),
    ) {
        self.pending = rows.is_some();
        rec.for_each(|rec_result| {
            let record = match rec_result {
                Ok(x) => x,
                Err(e) => {
                    f(Item::Error(e));
                    return;
                }
            };
            let s = match &record {
                Record::Sample(s) => s,
                other => {
                    self.last_map = None;
                    if let Some(u) = &mut self.unwinder {
                        u.apply(other);
                    }
                    self.maps.apply(other);
                    if let Some(d) = &mut self.data_maps {
                        d.apply(other);
                    }
                    self.comms.apply(other);
                    match other {
                        Record::Comm(c) => {
                            self.tid_comm.remove(&c.tid);
                        }
                        Record::Fork(t) => {
                            self.tid_comm.remove(&t.tid);
                        }
                        Record::Namespaces(n) => {
                            // The cgroup namespace's {dev, inode} (CGROUP_NS_INDEX = 6).
                            let v = n.link_info;
                            if let (Some(dev), Some(ino)) = (v.get(12), v.get(13)) {
                                let i = match self.cgroup_ns.iter().position(|&x| x == (dev, ino)) {
                                    Some(i) => i as u32,
                                    None => {
                                        self.cgroup_ns.push((dev, ino));
                                        self.cgroup_ns.len() as u32 - 1
                                    }
                                };
                                self.tid_cgroup_ns.insert(n.tid, i);
                            }
                        }
                        Record::Cgroup(c) => {
                            let i = self.intern_cgroup(&String::from_utf8_lossy(c.path));
                            self.cgroup_ids.insert(c.id, i);
                        }
                        Record::Exit(t) => {
                            if let Some(o) = &mut self.off_cpu {
                                o.tracker.exit(t.tid, t.time);
                            }
                        }
                        _ => {
                            if let Some((out, preempt, sample_id)) = other.as_switch() {
                                self.off_cpu_switch(out, preempt, sample_id, &mut f);
                            }
                        }
                    }
                    if self.side_band {
                        let tid = match other {
                            Record::Comm(c) => Some(c.tid),
                            Record::Fork(t) | Record::Exit(t) => Some(t.tid),
                            Record::Mmap(m) => Some(m.tid),
                            Record::Mmap2(m) => Some(m.tid),
                            _ => other.sample_id().and_then(|s| s.tid),
                        };
                        let name = tid.map_or_else(|| ":-1".to_string(), |t| self.comms.name(t));
                        f(Item::SideBand(other, &name));
                    }
                    return;
                }
            };
            let Some(ev) = rec.event_of_record(&record) else {
                return;
            };
            // Every sample handed on so far has been taken: a full batch is resolved before
            // its ids are reused.
            if let Some(rows) = rows.as_deref_mut()
                && self.key_list.len() >= rows.batch()
            {
                let ids = self.resolve_rows(rows);
                f(Item::Rows(&ids));
            }
            let stack_source = self.off_cpu.as_ref().is_some_and(|o| o.stack_source[ev]);
            let slot = self.event_slot[ev];
            if slot.is_none() && !stack_source {
                return;
            }
            // An `offcpu-time` sample paired while recording is timed at its end: a direct
            // one began `period` earlier; an aggregated one (its intervals in `WEIGHT`)
            // stands for a span as long as their sum that ends where the last one did. Either
            // is handed on at that start, as the intervals paired here are.
            let paired = self.off_cpu_event == Some(ev);
            let mut time = s.time.unwrap_or(0);
            if paired {
                time = time.saturating_sub(s.period.unwrap_or(0));
            }
            let kept = self.time.as_ref().is_none_or(|t| t.keeps(time));
            if !kept && !stack_source {
                self.filtered_by_time += 1;
                return;
            }
            let (pid, tid) = (s.pid.unwrap_or(0), s.tid.unwrap_or(0));
            let ip = s.ip.unwrap_or(0);
            let kernel_mode = s.cpumode() == misc::KERNEL;
            let no_stack = paired && s.cpumode() == misc::CPUMODE_UNKNOWN && ip == 0;
            let mut leaf = if no_stack {
                self.loc_mark(Mark::NoStack)
            } else {
                self.loc(pid, FrameAddress::Ip(ip), kernel_mode)
            };
            // Callers: the chain without markers and without its first entry when that is
            // the ip.
            let mut frames = std::mem::take(&mut self.frames);
            frames.clear();
            // With the user registers and stack (`--call-graph dwarf`), the user part of the
            // stack is unwound; the callchain then gives the kernel part (as perf joins them).
            let mut user = std::mem::take(&mut self.user_frames);
            user.clear();
            let unwound = match (&mut self.unwinder, &s.regs_user, &s.stack_user) {
                (Some(u), Some(regs), Some(stack)) if stack.dyn_size.is_some_and(|d| d > 0) => {
                    u.unwind(pid, self.regs_mask[ev], regs, stack, &mut user);
                    !user.is_empty()
                }
                _ => false,
            };
            // A chain unwound at record time: its kernel part, then the user frames found.
            let mut stored = std::mem::take(&mut self.stored);
            stored.clear();
            let stored_ref = match (&s.callchain, &self.stacks) {
                (Some(c), Some(table)) if c.len() == 2 && c.get(0) == Some(STACK_REF) => {
                    if !table.expand(c.get(1).unwrap_or(0), &mut stored) {
                        self.broken_chains += 1;
                    }
                    true
                }
                _ => false,
            };
            // The kernel writes the interrupted user pc first after the USER marker of a
            // sample taken in the kernel (`perf_callchain_user` stores `regs->ip`, then the
            // return addresses): that entry is an exact address, looked up as it is, as the
            // sample's own ip is; only the entries after it are return addresses (looked up
            // one byte earlier). A pc at the first byte of a mapping or a function (a fault
            // on the first instruction of libm's `_init`) named the byte before it.
            let mut kernel_part = |this: &mut Self, a: u64, state: &mut (bool, bool, bool)| {
                let (kernel, first, user_pc) = state;
                if context::is_marker(a) {
                    *kernel = a == context::KERNEL;
                    *user_pc = a == context::USER;
                    return;
                }
                let exact = std::mem::take(user_pc);
                if *first && a == ip {
                    *first = false;
                    return;
                }
                *first = false;
                if unwound && !*kernel {
                    return;
                }
                let frame = if exact {
                    FrameAddress::Ip(a)
                } else {
                    FrameAddress::Return(a)
                };
                frames.push(this.loc(pid, frame, *kernel));
            };
            let mut state = (kernel_mode, true, false);
            if stored_ref {
                let user_at = stored.iter().position(|&a| a == context::USER);
                for &a in &stored[..user_at.unwrap_or(stored.len())] {
                    kernel_part(self, a, &mut state);
                }
                if let Some(at) = user_at.filter(|_| !unwound) {
                    user.extend(stored[at + 1..].iter().map(|&a| FrameAddress::Ip(a)));
                }
            } else if let Some(chain) = &s.callchain
                && !crate::data::stacks::is_discarded(chain)
            {
                for a in chain.iter() {
                    kernel_part(self, a, &mut state);
                }
            }
            self.stored = stored;
            // A frame-pointer chain: does its user part walk out of the process's mappings?
            if !stored_ref
                && self.fp_events[ev]
                && let Some(chain) = &s.callchain
                && self.maps.knows(pid)
            {
                let maps = &self.maps;
                self.fp_chains
                    .add(fp::reach(chain.iter(), kernel_mode, |a| {
                        maps.find(pid, a).map(|m| (m.start, m.end))
                    }));
            }
            // The unwound stack starts at the user IP: the sample's own when it was taken in
            // user mode (the leaf, already counted), else where the kernel was entered.
            let skip = usize::from(!kernel_mode && user.first() == Some(&FrameAddress::Ip(ip)));
            for &f in user.iter().skip(skip) {
                frames.push(self.loc(pid, f, false));
            }
            self.user_frames = user;
            let td = match (&s.read, s.event_id()) {
                (Some(read), Some(id)) => {
                    let per_thread = self.inherit[ev].then_some(tid);
                    let td_of_id = &self.td_of_id;
                    self.tracker
                        .delta(per_thread, id, read, |m| td_of_id.get(&m).copied())
                }
                _ => None,
            };
            let mut member_buf = std::mem::take(&mut self.member_buf);
            member_buf.clear();
            if let (Some(read), Some(id), Some((map, tracker))) =
                (&s.read, s.event_id(), &mut self.members)
                && let Some(group) = map.of_event(ev)
            {
                let per_thread = self.inherit[ev].then_some(tid);
                tracker.deltas(map, group, per_thread, id, read, &mut member_buf);
            }
            if stack_source && let Some(o) = &mut self.off_cpu {
                o.tracker.stack(
                    tid,
                    time,
                    LeaveStack {
                        leaf,
                        callers: frames.clone(),
                        misc: s.misc,
                        ip,
                        cpu: s.cpu,
                    },
                );
            }
            let Some(slot) = slot.filter(|_| kept) else {
                self.filtered_by_time += u64::from(!kept && self.event_slot[ev].is_some());
                self.frames = frames;
                return;
            };
            if paired && s.misc & MISC_PREEMPTED != 0 {
                if !no_stack {
                    frames.insert(0, leaf);
                }
                leaf = self.loc_mark(Mark::Preempted);
            }
            let comm = self.comm(tid);
            let mem = (self.mem.any() || self.mem_mode).then(|| self.mem_view(s, pid, kernel_mode));
            let mut period = s.period.unwrap_or(1);
            if self.mem_mode {
                // perf's memory mode: a sample stands for its weight (its load latency).
                period = mem.map_or(1, |m| m.weight.max(1));
            }
            let cgroup = self.cgroup(s.cgroup);
            let cgroup_ns = self.tid_cgroup_ns.get(&tid).copied().unwrap_or(NONE);
            let trace = self.trace(ev, s.raw);
            let view = SampleView {
                event: slot,
                cpu: s.cpu.unwrap_or(NONE),
                pid,
                tid,
                comm,
                cgroup,
                cgroup_ns,
                trace,
                time,
                period,
                samples: if paired {
                    s.weight.unwrap_or(1).max(1)
                } else {
                    1
                },
                leaf,
                callers: &frames,
                callchain: s.callchain.is_some(),
                td,
                retire_lat: s.weight_struct().map(|w| w.retire_lat),
                mem,
                members: &member_buf,
            };
            f(Item::Sample(s, view));
            self.frames = frames;
            self.member_buf = member_buf;
        });
    }

    /// The location id of a mark frame.
    fn loc_mark(&mut self, m: Mark) -> u32 {
        let next = self.next_loc();
        let id = *self
            .other_ids
            .entry((LocKey::Mark(m), false))
            .or_insert(next);
        if id == next {
            self.key_list.push((LocKey::Mark(m), FrameAddress::Ip(0)));
        }
        id
    }

    /// Warnings of the replay for a report's header.
    fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.broken_chains > 0 {
            w.push(format!(
                "{} call chains stored at record time were cut short: part of the file's stack table could not be read",
                self.broken_chains
            ));
        }
        if let Some(t) = self.stacks.as_ref().filter(|t| t.bad_blocks > 0) {
            w.push(format!(
                "{} blocks of the stack table were damaged and skipped",
                t.bad_blocks
            ));
        }
        w.extend(self.fp_chains.line());
        if let Some(o) = &self.off_cpu {
            let t = &o.tracker.counts;
            if t.without_stack > 0 {
                w.push(format!(
                    "{} of {} off-CPU intervals have no stack ([no stack]): the recording has none for them (refused or lost)",
                    t.without_stack, t.intervals
                ));
            }
            if o.left_out > 0 {
                w.push(format!(
                    "{} preempted off-CPU intervals left out (record --off-cpu=blocked)",
                    o.left_out
                ));
            }
        }
        if self.tracker.resets > 0 {
            w.push(format!(
                "{} group reads went backwards (counter reset); their values were taken as deltas",
                self.tracker.resets
            ));
        }
        w
    }
}
