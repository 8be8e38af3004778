//! Histograms of a profile: samples grouped by the `--sort` keys, per event.
//!
//! Each event is its own table with its own totals, as `perf report` does: percentages of
//! `cpu_core/cycles/` and `cpu_atom/cycles/` are each of their own PMU's cycles, never mixed.
//! A row's weight is the sum of its samples' periods (the event count they stand for, which
//! differs per sample with frequency sampling); the sample count is kept beside it.
//!
//! With `children`, every distinct symbol on a sample's call chain is credited the sample's
//! period once (recursion does not double count), so a row's Children value is the time
//! spent in it and everything it called; Self is the time with it at the top of the stack.
//! Its TopDown and retire-latency columns then cover the same samples as Children: the
//! bottlenecks of the function and of everything it called. The entries of a chain are
//! perf's: in unwound (`--call-graph dwarf`) chains the functions inlined at each address,
//! then its own function (perf's `--inline`), in frame-pointer chains the symbol alone.
//!
//! **Rows and their order.** `sym` keys a row by the object and the symbol's address, as
//! perf's `sort__sym_cmp` does, so two `static` functions of one name are two rows
//! ([`HistOptions::sym_by_name`] keys by name instead, for `diff`); an inlined function's
//! entry is a row per function it is inlined into. Rows go heaviest first,
//! ties by Self, then by the keys as perf compares them or as printed. A profile folds only
//! what the tables read ([`fold_keys`]).

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use super::FastMap;
use super::callgraph::{self, CallGraphOptions, CallTree, Mode};
use super::latency::{LatHist, LatencyStats};
use super::memkeys::{self, MemCells, MemKey};
use super::profile::MemFold;
use super::profile::{FoldKeys, NONE, Profile, SampleGroup};
use super::topdown::TdCounts;
use crate::symbol::symbolizer::Loc;

/// A `--sort` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortKey {
    /// Thread name.
    Comm,
    /// The thread, as `tid:comm` (perf's `pid` key is per thread, despite its name).
    Pid,
    /// Thread id.
    Tid,
    /// Shared object.
    Dso,
    /// Symbol.
    Sym,
    /// Source file and line of the innermost inline frame.
    Srcline,
    /// The instruction (file address).
    Ip,
    /// Event name.
    Event,
    /// PMU name.
    Pmu,
    /// CPU.
    Cpu,
    /// Cgroup path (`record --all-cgroups`), as perf's `cgroup` key.
    Cgroup,
    /// The thread's cgroup namespace as `dev/0xinode` (`PERF_RECORD_NAMESPACES`, perf's
    /// `cgroup_id`; `0/0x0` without one).
    CgroupId,
    /// The text of a tracepoint sample, its fields as its print format shows them (perf's
    /// `trace`; `N/A` for other events).
    Trace,
    /// A field of a tracepoint (perf's dynamic sort keys: `--sort prev_comm`,
    /// `sched:sched_switch.prev_pid`, `trace_fields`), index into
    /// [`HistOptions::trace_fields`]. Its column is in its event's table only.
    TraceField(u16),
    /// A key of the sample's memory access (`record -d`): `symbol_daddr`, `mem`, `type`, ...
    Memory(MemKey),
}

impl SortKey {
    /// Every key, for messages.
    pub const ALL: &'static str = "comm, pid, tid, dso, sym, srcline, ip, event, pmu, cpu, \
         cgroup, cgroup_id, trace, symbol_daddr, dso_daddr, dcacheline, mem, snoop, tlb, locked, \
         blocked, local_weight, weight, data_page_size, type, typeoff, local_ins_lat, phys_daddr";

    /// The column header perf uses.
    pub fn header(self) -> &'static str {
        match self {
            SortKey::Comm => "Command",
            SortKey::Pid => "Pid:Command",
            SortKey::Tid => "Tid",
            SortKey::Dso => "Shared Object",
            SortKey::Sym => "Symbol",
            SortKey::Srcline => "Source:Line",
            SortKey::Ip => "IP",
            SortKey::Event => "Event",
            SortKey::Pmu => "PMU",
            SortKey::Cpu => "CPU",
            SortKey::Cgroup => "Cgroup",
            SortKey::CgroupId => "cgroup id (dev/inode)",
            SortKey::Trace => "Trace output",
            SortKey::TraceField(_) => "field",
            SortKey::Memory(k) => k.header(),
        }
    }

    /// The memory-access key this is, if it is one.
    pub fn mem(self) -> Option<MemKey> {
        match self {
            SortKey::Memory(k) => Some(k),
            _ => None,
        }
    }

    /// The JSON field name.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Comm => "comm",
            SortKey::Pid => "pid",
            SortKey::Tid => "tid",
            SortKey::Dso => "dso",
            SortKey::Sym => "sym",
            SortKey::Srcline => "srcline",
            SortKey::Ip => "ip",
            SortKey::Event => "event",
            SortKey::Pmu => "pmu",
            SortKey::Cpu => "cpu",
            SortKey::Cgroup => "cgroup",
            SortKey::CgroupId => "cgroup_id",
            SortKey::Trace => "trace",
            SortKey::TraceField(_) => "field",
            SortKey::Memory(k) => k.name(),
        }
    }
}

impl fmt::Display for SortKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown `--sort` key.
#[derive(Debug, thiserror::Error)]
#[error("unknown sort key {0:?}; the keys are: {keys}", keys = SortKey::ALL)]
pub struct BadSortKey(pub String);

impl FromStr for SortKey {
    type Err = BadSortKey;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim() {
            "comm" => SortKey::Comm,
            "pid" => SortKey::Pid,
            "tid" => SortKey::Tid,
            "dso" => SortKey::Dso,
            "sym" | "symbol" => SortKey::Sym,
            "srcline" => SortKey::Srcline,
            "ip" => SortKey::Ip,
            "event" => SortKey::Event,
            "pmu" => SortKey::Pmu,
            "cpu" => SortKey::Cpu,
            "cgroup" => SortKey::Cgroup,
            "cgroup_id" => SortKey::CgroupId,
            "trace" => SortKey::Trace,
            other => match MemKey::parse(other) {
                Some(k) => SortKey::Memory(k),
                None => return Err(BadSortKey(other.to_string())),
            },
        })
    }
}

/// Parses `comm,dso,sym`.
pub fn parse_sort(s: &str) -> Result<Vec<SortKey>, BadSortKey> {
    s.split(',')
        .filter(|k| !k.trim().is_empty())
        .map(str::parse)
        .collect()
}

/// [`parse_sort`], and perf's dynamic sort keys: a key that is none of hrec's but may name a
/// tracepoint field (`prev_comm`, `sched:sched_switch.prev_pid`, `sched_switch.*`,
/// `trace_fields`) becomes [`SortKey::TraceField`] of its index in the returned specs, to be
/// resolved against a recording's events ([`resolve_trace_fields`]).
pub fn parse_sort_with_fields(s: &str) -> Result<(Vec<SortKey>, Vec<String>), BadSortKey> {
    let mut specs = Vec::new();
    let mut keys = Vec::new();
    for k in s.split(',').filter(|k| !k.trim().is_empty()) {
        match k.parse() {
            Ok(key) => keys.push(key),
            Err(e) => {
                let k = k.trim();
                let field_like = k
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_:.%*/-".contains(c));
                if !field_like {
                    return Err(e);
                }
                keys.push(SortKey::TraceField(specs.len() as u16));
                specs.push(k.to_string());
            }
        }
    }
    Ok((keys, specs))
}

/// A recording's event as [`resolve_trace_fields`] sees it: its name and, for a tracepoint,
/// its own fields (not the common ones) as `(name, is text, size)`.
pub type TraceEventFields = (String, Option<Vec<(String, bool, u32)>>);

/// Resolves the [`SortKey::TraceField`] keys of [`parse_sort_with_fields`] against the
/// recording's `events`, as perf's dynamic sort keys: `trace_fields` is every field of every
/// tracepoint, `FIELD` that field of every tracepoint that has one, `EVENT.FIELD` (`EVENT`:
/// the full name, a part of it without the colon, or `%N`, the N-th event) that event's
/// field, `EVENT.*` all its fields. Returns the sort keys with each spec expanded, and the
/// fields they name; `Err` is the one-line reason a spec names nothing.
pub fn resolve_trace_fields(
    sort: &[SortKey],
    specs: &[String],
    events: &[TraceEventFields],
) -> Result<(Vec<SortKey>, Vec<TraceFieldKey>), String> {
    let mut keys = Vec::new();
    let mut fields: Vec<TraceFieldKey> = Vec::new();
    let mut add = |keys: &mut Vec<SortKey>, event: usize, field: usize, f: &(String, bool, u32)| {
        keys.push(SortKey::TraceField(fields.len() as u16));
        fields.push(TraceFieldKey {
            event,
            field,
            name: f.0.clone(),
            text: f.1,
            size: f.2,
        });
    };
    for &k in sort {
        let SortKey::TraceField(i) = k else {
            keys.push(k);
            continue;
        };
        let spec = specs.get(usize::from(i)).map_or("", String::as_str);
        if spec.ends_with("/raw") {
            return Err(format!(
                "--sort {spec}: hrec shows a field as its event prints it; leave out /raw"
            ));
        }
        let before = keys.len();
        let tracepoints = events
            .iter()
            .enumerate()
            .filter_map(|(i, (name, f))| Some((i, name, f.as_ref()?)));
        match spec.rsplit_once('.') {
            _ if spec == "trace_fields" => {
                for (ev, _, fs) in tracepoints {
                    for (fi, f) in fs.iter().enumerate() {
                        add(&mut keys, ev, fi, f);
                    }
                }
            }
            None => {
                for (ev, _, fs) in tracepoints {
                    if let Some(fi) = fs.iter().position(|f| f.0 == spec) {
                        add(&mut keys, ev, fi, &fs[fi]);
                    }
                }
            }
            Some((event, field)) => {
                let ev = match event.strip_prefix('%') {
                    Some(n) => n
                        .parse::<usize>()
                        .ok()
                        .and_then(|n| n.checked_sub(1))
                        .filter(|&n| n < events.len()),
                    None if event.contains(':') => events.iter().position(|e| e.0 == event),
                    None => {
                        let mut m = events
                            .iter()
                            .enumerate()
                            .filter(|(_, e)| e.0.contains(event));
                        match (m.next(), m.next()) {
                            (Some((i, _)), None) => Some(i),
                            (Some(_), Some(_)) => {
                                return Err(format!(
                                    "--sort {spec}: {event} is in several events' names; give the whole name (subsys:event)"
                                ));
                            }
                            _ => None,
                        }
                    }
                };
                let Some(ev) = ev else {
                    return Err(format!("--sort {spec}: the recording has no event {event}"));
                };
                let Some(fs) = &events[ev].1 else {
                    return Err(format!(
                        "--sort {spec}: {} is not a tracepoint; only tracepoints have fields",
                        events[ev].0
                    ));
                };
                if field == "*" {
                    for (fi, f) in fs.iter().enumerate() {
                        add(&mut keys, ev, fi, f);
                    }
                } else {
                    let Some(fi) = fs.iter().position(|f| f.0 == field) else {
                        let names: Vec<&str> = fs.iter().map(|f| f.0.as_str()).collect();
                        return Err(format!(
                            "--sort {spec}: {} has no field {field}; its fields are {}",
                            events[ev].0,
                            names.join(", ")
                        ));
                    };
                    add(&mut keys, ev, fi, &fs[fi]);
                }
            }
        }
        if keys.len() == before {
            return Err(if events.iter().any(|e| e.1.is_some()) {
                format!("--sort {spec}: no tracepoint of the recording has a field {spec}")
            } else {
                BadSortKey(spec.to_string()).to_string()
            });
        }
    }
    Ok((keys, fields))
}

/// Which samples a report keeps (perf's `--comms`, `--pid`, `--tid`, `--dsos`, `--symbols`,
/// `--symbol-filter`, `-U`).
///
/// perf applies `-U/--hide-unresolved` as it reads a sample, before any total is summed, so a
/// sample whose symbol is unknown is not part of the report at all ([`Filters::counted`]); the
/// other filters hide rows and leave the totals (perf's `--percentage absolute`).
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// Thread names.
    pub comms: Vec<String>,
    /// Process ids.
    pub pids: Vec<u32>,
    /// Thread ids.
    pub tids: Vec<u32>,
    /// Shared objects (short names).
    pub dsos: Vec<String>,
    /// Symbol names.
    pub syms: Vec<String>,
    /// Part of a symbol name (perf's `--symbol-filter`; unresolved addresses never match).
    pub sym_part: Option<String>,
    /// Leave out samples whose symbol is unknown (perf's `-U`).
    pub hide_unresolved: bool,
}

impl Filters {
    /// Whether a group's samples pass the filters.
    pub fn keep(&self, p: &Profile, s: &SampleGroup) -> bool {
        self.keep_sample(p, s.comm, s.pid, s.tid, s.leaf)
    }

    /// Whether a sample of thread name `comm`, process `pid`, thread `tid` and location `leaf`
    /// (ids of `p`) passes the filters.
    pub fn keep_sample(&self, p: &Profile, comm: u32, pid: u32, tid: u32, leaf: u32) -> bool {
        let loc = &p.locs[leaf as usize];
        self.counted(p, leaf)
            && (self.comms.is_empty() || self.comms.iter().any(|c| **c == *p.comms[comm as usize]))
            && (self.pids.is_empty() || self.pids.contains(&pid))
            && (self.tids.is_empty() || self.tids.contains(&tid))
            && (self.dsos.is_empty() || self.dsos.iter().any(|d| **d == *loc.dso))
            && (self.syms.is_empty() || self.syms.iter().any(|n| *n == loc.sym_name()))
            && self
                .sym_part
                .as_ref()
                .is_none_or(|f| loc.sym.as_ref().is_some_and(|s| s.contains(f.as_str())))
    }

    /// Whether a sample at `leaf` counts in the totals at all (`-U` leaves out unknown
    /// symbols).
    pub fn counted(&self, p: &Profile, leaf: u32) -> bool {
        !self.hide_unresolved || p.locs[leaf as usize].sym.is_some()
    }
}

/// One row of a table.
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// The key values, as displayed, of its table's columns ([`HistOptions::columns`]: the
    /// `--sort` keys in order, less the tracepoint fields of other events; `trace_fields`
    /// names every field of every event, and a row holds its own event's alone).
    pub key: Vec<String>,
    /// Sum of periods with this row at the top of the stack.
    pub period: u64,
    /// Samples with this row at the top of the stack.
    pub samples: u64,
    /// Sum of periods of samples with this row anywhere on the stack (`children` only).
    pub children: u64,
    /// TopDown slots attributed here.
    pub td: TdCounts,
    /// Samples that carried TopDown deltas.
    pub td_samples: u64,
    /// Retire-latency statistics.
    pub latency: Option<LatencyStats>,
    /// With [`super::profile::ProfileOptions::member_sums`]: the sums of each member's
    /// deltas of the event's group reads, in the group's order, and the reads behind them
    /// ([`super::metrics`]); with `children`, of every sample with the row on its chain.
    pub members: Option<(Vec<u64>, u64)>,
    /// A sample group of the row, to find its call paths.
    pub example: u32,
    /// The location of `example` the row stands for (its leaf, or a caller frame).
    pub example_loc: u32,
    /// The symbol cell of the row (the location's, or one of its call-chain entries').
    example_sym: u32,
    lat: LatHist,
    /// With `children`: TopDown, its samples, latencies and member sums of every sample
    /// with the row on its chain (what the row's Children value covers); boxed, and only
    /// where a sample had any, since most rows of most reports have none.
    incl: Option<Box<Incl>>,
    /// The interned key, to find the row again.
    key_id: Key,
}

/// What [`Row`] adds up of the samples with the row on their chain (`children`).
#[derive(Debug, Clone, Default)]
struct Incl {
    td: TdCounts,
    td_samples: u64,
    lat: LatHist,
    members: Option<(Vec<u64>, u64)>,
}

/// One event's histogram.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Index into [`Profile::events`].
    pub event: usize,
    /// Sum of all kept samples' periods.
    pub total_period: u64,
    /// Kept samples.
    pub total_samples: u64,
    /// What percentages are shares of: the period of all the event's samples (perf's
    /// `--percentage absolute`, the default: a filter keeps each row's share), or of the kept
    /// ones (`relative`: the shown rows add up to 100%).
    pub base_period: u64,
    /// The samples [`Table::base_period`] counts.
    pub base_samples: u64,
    /// TopDown totals over all kept samples.
    pub td: TdCounts,
    /// Kept samples with TopDown deltas.
    pub td_samples: u64,
    /// Retire-latency statistics of the whole event.
    pub latency: Option<LatencyStats>,
    /// Latencies of the whole event (for histograms).
    pub latencies: LatHist,
    /// Rows, heaviest first.
    pub rows: Vec<Row>,
}

/// How to aggregate.
#[derive(Debug, Clone)]
pub struct HistOptions {
    /// Sort keys (default `comm,dso,sym`).
    pub sort: Vec<SortKey>,
    /// Credit callers too (`--children`).
    pub children: bool,
    /// Keep full source paths in `srcline`.
    pub full_source_path: bool,
    /// Sample filters.
    pub filters: Filters,
    /// Call-chain frames credited with `children`, innermost first (`--max-stack`, counted as
    /// perf counts them: [`callgraph::kept_locs`]).
    pub max_stack: usize,
    /// `--percentage relative`: shares of the kept samples instead of all of them.
    pub relative: bool,
    /// Functions of one name in one object are one row (perf diff matches them by name);
    /// otherwise each symbol is a row of its own, as perf report keys `sym` by the object
    /// and the symbol's address (two `static` functions named alike, `strlen` of libc and of
    /// the loader).
    pub sym_by_name: bool,
    /// The tracepoint fields [`SortKey::TraceField`] keys name.
    pub trace_fields: Vec<TraceFieldKey>,
}

/// A tracepoint field as a sort key: perf's dynamic sort keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceFieldKey {
    /// The event, index into the recording's events ([`super::profile::EventInfo::index`]).
    pub event: usize,
    /// The field, index among the event's own fields (not the common ones).
    pub field: usize,
    /// The field's name: the column's header and JSON name.
    pub name: String,
    /// The field is text (a `char` array): perf pads its column to the field's size, a
    /// number's to twice its size and two.
    pub text: bool,
    /// The field's size in bytes.
    pub size: u32,
}

impl HistOptions {
    /// The column header of key `k`.
    pub fn header(&self, k: SortKey) -> &str {
        match k {
            SortKey::TraceField(i) => self
                .trace_fields
                .get(usize::from(i))
                .map_or("field", |f| f.name.as_str()),
            k => k.header(),
        }
    }

    /// The JSON name of key `k`.
    pub fn name(&self, k: SortKey) -> &str {
        match k {
            SortKey::TraceField(_) => self.header(k),
            k => k.name(),
        }
    }

    /// The columns of the table of event `event` (index into the recording's events), as
    /// indexes into [`HistOptions::sort`]: every key but the tracepoint fields of other
    /// events ([`HistOptions::shows`]). A row's [`Row::key`] holds these columns' cells.
    pub fn columns(&self, event: usize) -> Vec<usize> {
        (0..self.sort.len())
            .filter(|&c| self.shows(self.sort[c], event))
            .collect()
    }

    /// Whether key `k` has a column in the table of event `event` (index into the
    /// recording's events): a tracepoint field only in its own event's.
    pub fn shows(&self, k: SortKey, event: usize) -> bool {
        match k {
            SortKey::TraceField(i) => self
                .trace_fields
                .get(usize::from(i))
                .is_some_and(|f| f.event == event),
            _ => true,
        }
    }
}

impl Default for HistOptions {
    fn default() -> Self {
        HistOptions {
            sort: vec![SortKey::Comm, SortKey::Dso, SortKey::Sym],
            children: false,
            full_source_path: false,
            filters: Filters::default(),
            max_stack: 127,
            relative: false,
            sym_by_name: false,
            trace_fields: Vec::new(),
        }
    }
}

/// What the groups of a profile must keep apart for the tables of `o` ([`FoldKeys`]): the
/// context fields its sort keys and filters read (`pid` is per thread, and shows the thread's
/// name), and locations only by row unless a key reads more of them than the shared object
/// and the symbol (`srcline`, `ip`). What else the report prints (call graphs, the
/// interactive view, collapsed stacks) may read more: those keep [`FoldKeys::ALL`].
pub fn fold_keys(o: &HistOptions) -> FoldKeys {
    let has = |k: SortKey| o.sort.contains(&k);
    let f = &o.filters;
    FoldKeys {
        cpu: has(SortKey::Cpu),
        pid: !f.pids.is_empty(),
        tid: has(SortKey::Tid) || has(SortKey::Pid) || !f.tids.is_empty(),
        comm: has(SortKey::Comm) || has(SortKey::Pid) || !f.comms.is_empty(),
        cgroup: has(SortKey::Cgroup),
        cgroup_ns: has(SortKey::CgroupId),
        trace: has(SortKey::Trace) || !o.trace_fields.is_empty(),
        trace_fields: !o.trace_fields.is_empty(),
        rows: (!has(SortKey::Srcline) && !has(SortKey::Ip)).then_some(FoldKeys::ROW_BATCH),
        mem: mem_fold(&o.sort),
    }
}

/// What of the samples' memory accesses the keys `sort` read.
pub fn mem_fold(sort: &[SortKey]) -> MemFold {
    let keys: Vec<MemKey> = sort.iter().filter_map(|k| k.mem()).collect();
    memkeys::fold(&keys)
}

/// Interned display values of locations, computed once per location.
struct LocKeys {
    /// The memory keys' row keys and cells.
    mem: MemCells,
    dso: Vec<u32>,
    /// The symbol cell of each location.
    sym: Vec<u32>,
    /// The `sym` key of each location: its cell, object and symbol address (see
    /// [`HistOptions::sym_by_name`]).
    sym_key: Vec<u64>,
    srcline: Vec<u32>,
    /// The symbol cells of each location's call-chain entries (the functions inlined there,
    /// innermost first, then its own function as DWARF names it): the rows `--children`
    /// credits, as perf makes a row of every entry.
    entries: Vec<Vec<u32>>,
    /// The `sym` key of each of those entries: the location's own for its own function; for
    /// an inlined function, its name within the function it is inlined into (perf's
    /// `_sort__sym_cmp` keeps an inlined symbol by name and its base symbol's range, so
    /// `ptmalloc_init (inlined)` in `ptmalloc_init.part.0` and in `malloc_hook_ini` are two
    /// rows).
    entry_keys: Vec<Vec<u64>>,
    /// For a location no mapping covers: its symbol cell with the other level (`[k]` for a
    /// user address), as perf shows it in a kernel sample's chain ([`tables`]).
    other_level: Vec<Option<u32>>,
    strings: Vec<String>,
    /// Where each sort key's value sits in a row's [`Key`]: the other keys in order, then
    /// the tracepoint fields of each event from the same place on (rows of two events are
    /// never compared, so their fields may share slots).
    slots: Vec<usize>,
    /// Per sort key: the tracepoint field it is, as (event, field).
    field_of: Vec<Option<(usize, usize)>>,
    /// Each profile event's index among the recording's events.
    meta_event: Vec<usize>,
    /// Per tracepoint text ([`Profile::traces`]): its fields' ids, numbered in the order of
    /// their bytes (perf compares a field's bytes), from 1.
    trace_vals: Vec<Vec<u64>>,
}

impl LocKeys {
    /// The row-key value of column `col` (a tracepoint field) for group `s`: `None` when the
    /// field is another event's.
    fn field_key(&self, col: usize, s: &SampleGroup) -> Option<u64> {
        let (event, field) = self.field_of.get(col).copied().flatten()?;
        if self.meta_event.get(usize::from(s.event)) != Some(&event) {
            return None;
        }
        Some(
            self.trace_vals
                .get(s.trace as usize)
                .and_then(|v| v.get(field))
                .copied()
                .unwrap_or(0),
        )
    }

    fn new(p: &Profile, o: &HistOptions) -> LocKeys {
        let (full, sort) = (o.full_source_path, o.sort.as_slice());
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut strings = Vec::new();
        let mut intern = |s: String| -> u32 {
            if let Some(&i) = ids.get(&s) {
                return i;
            }
            let i = strings.len() as u32;
            strings.push(s.clone());
            ids.insert(s, i);
            i
        };
        let (mut dso, mut sym, mut srcline) = (Vec::new(), Vec::new(), Vec::new());
        let mut entries = Vec::new();
        let mut other_level = Vec::new();
        let mut entry_keys = Vec::new();
        let mut sym_key = Vec::new();
        let mut instances: HashMap<(u32, u32, u64), u64> = HashMap::new();
        let mut inlined: HashMap<(u32, u64), u64> = HashMap::new();
        for l in &p.locs {
            let d = intern(l.dso.to_string());
            dso.push(d);
            let own = intern(sym_cell(l));
            sym.push(own);
            // perf's sort__sym_cmp: the object, then the symbol's start (an unresolved
            // location by its address, which its cell shows).
            let instance = match l.sym {
                Some(_) if !o.sym_by_name => (own, d, l.sym_start),
                _ => (own, u32::MAX, 0),
            };
            let next = instances.len() as u64;
            let own_key = *instances.entry(instance).or_insert(next);
            sym_key.push(own_key);
            let mode = if l.kernel { 'k' } else { '.' };
            let cells = if l.sym.is_none() {
                // perf names a call-chain entry without a symbol by its address in the
                // process (a row of its own by the file offset).
                vec![intern(format!(
                    "[{mode}] {}",
                    crate::symbol::data::hex_addr(l.addr)
                ))]
            } else {
                callgraph::entry_names(l, callgraph::Key::Function, p.inline_entries)
                    .into_iter()
                    .map(|(name, _)| intern(format!("[{mode}] {name}")))
                    .collect()
            };
            // Inlined functions' keys sit above every symbol's.
            entry_keys.push(
                cells
                    .iter()
                    .map(|&cell| {
                        if cell == own {
                            return own_key;
                        }
                        let next = (1 << 32) + inlined.len() as u64;
                        *inlined.entry((cell, own_key)).or_insert(next)
                    })
                    .collect(),
            );
            entries.push(cells);
            // perf shows an address no mapping covers in a chain with the sample's level
            // (compared with perf 6.1: a kernel sample's garbage user frames are `[k]`): the
            // cell with the other level, for such chains.
            other_level.push(
                (l.sym.is_none() && l.unresolved == Some(crate::symbol::Unresolved::Unmapped))
                    .then(|| {
                        let other = if l.kernel { '.' } else { 'k' };
                        intern(format!(
                            "[{other}] {}",
                            crate::symbol::data::hex_addr(l.addr)
                        ))
                    }),
            );
            // Without line information, perf-style `symbol+offset` (or `dso+address`).
            srcline.push(intern(l.srcline(full).unwrap_or_else(|| match &l.sym {
                Some(s) => format!("{s}+{:#x}", l.sym_offset),
                None => format!("{}+{:#x}", l.dso, l.file_addr),
            })));
        }
        let field_of: Vec<Option<(usize, usize)>> = sort
            .iter()
            .map(|k| match k {
                SortKey::TraceField(i) => o
                    .trace_fields
                    .get(usize::from(*i))
                    .map(|f| (f.event, f.field)),
                _ => None,
            })
            .collect();
        let others = field_of.iter().filter(|f| f.is_none()).count();
        let (mut next, mut per_event) = (0, HashMap::<usize, usize>::new());
        let slots = field_of
            .iter()
            .map(|f| match f {
                None => {
                    next += 1;
                    next - 1
                }
                Some((event, _)) => {
                    let n = per_event.entry(*event).or_default();
                    *n += 1;
                    others + *n - 1
                }
            })
            .collect();
        let trace_vals = if field_of.iter().any(Option::is_some) {
            let mut ranks: std::collections::BTreeMap<&str, u64> = Default::default();
            for t in &p.traces {
                for (_, bytes) in super::tracetext::fields(t) {
                    ranks.insert(bytes, 0);
                }
            }
            for (i, r) in ranks.values_mut().enumerate() {
                *r = i as u64 + 1;
            }
            p.traces
                .iter()
                .map(|t| {
                    super::tracetext::fields(t)
                        .map(|(_, bytes)| ranks.get(bytes).copied().unwrap_or(0))
                        .collect()
                })
                .collect()
        } else {
            Vec::new()
        };
        LocKeys {
            slots,
            field_of,
            meta_event: p.events.iter().map(|e| e.index).collect(),
            trace_vals,
            mem: MemCells::new(p, &sort.iter().map(|k| k.mem()).collect::<Vec<_>>()),
            dso,
            sym,
            sym_key,
            srcline,
            entries,
            entry_keys,
            other_level,
            strings,
        }
    }
}

/// `[.] name` / `[k] name`, perf's symbol cell.
pub fn sym_cell(l: &Loc) -> String {
    let mode = if l.kernel { 'k' } else { '.' };
    format!("[{mode}] {}", l.sym_name())
}

/// The `ip` cell: `symbol+0xoff` or the address.
pub fn ip_cell(l: &Loc) -> String {
    match &l.sym {
        Some(s) => format!("{s}+{:#x}", l.sym_offset),
        None => format!("{:#x}", l.addr),
    }
}

type Key = [u64; 16];

/// The row key of location `loc` of group `s`; with `entry`, of that call-chain entry of the
/// location (its symbol cell instead of the location's).
fn key_of(lk: &LocKeys, sort: &[SortKey], s: &SampleGroup, loc: u32) -> Key {
    key_of_entry(lk, sort, s, loc, None)
}

fn key_of_entry(
    lk: &LocKeys,
    sort: &[SortKey],
    s: &SampleGroup,
    loc: u32,
    entry: Option<usize>,
) -> Key {
    // A call-chain entry named as the location's own symbol is that symbol's row; an
    // inlined function's entry is its own (`LocKeys::entry_keys`).
    let sym = |loc: u32| {
        entry
            .and_then(|i| lk.entry_keys[loc as usize].get(i).copied())
            .unwrap_or(lk.sym_key[loc as usize])
    };
    let mut k = [0u64; 16];
    for (col, key) in sort.iter().enumerate() {
        let Some(slot) = lk.slots.get(col).and_then(|&i| k.get_mut(i)) else {
            continue;
        };
        if key.mem().is_some() {
            *slot = lk.mem.key(col, s.mem);
            continue;
        }
        if let SortKey::TraceField(_) = key {
            // Another event's field leaves the slot to this event's.
            if let Some(v) = lk.field_key(col, s) {
                *slot = v;
            }
            continue;
        }
        *slot = match key {
            SortKey::Comm => u64::from(s.comm),
            SortKey::Pid => u64::from(s.tid),
            SortKey::Tid => u64::from(s.tid),
            SortKey::Dso => u64::from(lk.dso[loc as usize]),
            SortKey::Sym => sym(loc),
            SortKey::Srcline => u64::from(lk.srcline[loc as usize]),
            SortKey::Ip => u64::from(loc),
            SortKey::Event => u64::from(s.event),
            SortKey::Pmu => u64::from(s.event),
            SortKey::Cpu => u64::from(s.cpu),
            SortKey::Cgroup => u64::from(s.cgroup),
            SortKey::CgroupId => u64::from(s.cgroup_ns),
            SortKey::Trace => u64::from(s.trace),
            _ => 0,
        };
    }
    k
}

/// The cells of the columns `cols` (indexes into `sort`) of a row.
fn render(
    p: &Profile,
    lk: &LocKeys,
    sort: &[SortKey],
    cols: &[usize],
    s: &SampleGroup,
    loc: u32,
    sym: u32,
) -> Vec<String> {
    let l = &p.locs[loc as usize];
    let e = &p.events[usize::from(s.event)];
    cols.iter()
        .map(|&col| (col, &sort[col]))
        .map(|(col, k)| match k {
            k if k.mem().is_some() => lk.mem.cell(col, s.mem),
            SortKey::Comm => p.comms[s.comm as usize].to_string(),
            SortKey::Pid => format!("{}:{}", s.tid, p.comms[s.comm as usize]),
            SortKey::Tid => s.tid.to_string(),
            SortKey::Dso => lk.strings[lk.dso[loc as usize] as usize].clone(),
            SortKey::Sym => lk.strings[sym as usize].clone(),
            SortKey::Srcline => lk.strings[lk.srcline[loc as usize] as usize].clone(),
            SortKey::Ip => ip_cell(l),
            SortKey::Event => e.name.clone(),
            SortKey::Pmu => e.pmu.clone().unwrap_or_else(|| "-".into()),
            SortKey::Cpu => {
                if s.cpu == NONE {
                    "-".into()
                } else {
                    s.cpu.to_string()
                }
            }
            SortKey::Cgroup => p
                .cgroups
                .get(s.cgroup as usize)
                .map_or_else(|| "N/A".into(), |c| c.to_string()),
            SortKey::CgroupId => {
                let (dev, ino) = p
                    .cgroup_ns
                    .get(s.cgroup_ns as usize)
                    .copied()
                    .unwrap_or((0, 0));
                format!("{dev}/{ino:#x}")
            }
            SortKey::Trace => p
                .traces
                .get(s.trace as usize)
                .map_or_else(|| "N/A".into(), |t| super::tracetext::text(t).to_string()),
            SortKey::TraceField(_) => match (lk.field_of[col], p.traces.get(s.trace as usize)) {
                (Some((event, field)), Some(t))
                    if lk.meta_event.get(usize::from(s.event)) == Some(&event) =>
                {
                    super::tracetext::fields(t)
                        .nth(field)
                        .map_or_else(String::new, |(v, _)| v.to_string())
                }
                _ => String::new(),
            },
            _ => String::new(),
        })
        .collect()
}

/// Adds a group's member sums and reads into a row's.
fn add_members(into: &mut Option<(Vec<u64>, u64)>, m: &[u64], n: u64) {
    let (sum, reads) = into.get_or_insert_with(Default::default);
    super::profile::add_into(sum, m);
    *reads += n;
}

/// AMD's SMT contention counted in a group of its own (the NMI watchdog's split of level 1,
/// [`crate::pmu::vendor`]): its samples form a `cycles` table of their own, and their
/// TopDown (SMT contention and its group's cycles) joins the level-1 group's table and its
/// rows of the same keys, so that a row has all five nodes. A key the level-1 group has no
/// row for gets none.
fn join_smt_groups(
    p: &Profile,
    o: &HistOptions,
    lk: &LocKeys,
    out: &mut [Table],
    maps: &mut [FastMap<Key, Row>],
) {
    use crate::pmu::vendor::VEvent;
    let cycles = VEvent::Cycles.index();
    let smt_only = |td: &TdCounts| td.1.smt_cycles > 0 && td.1.sums[cycles] == 0;
    // The core's level-1 table: its TopDown has the core's cycles.
    let Some(target) = out
        .iter()
        .position(|t| t.td.1.core.is_some() && t.td.1.sums[cycles] > 0)
    else {
        return;
    };
    for s in &p.groups {
        let Some(td) = p.td(s).filter(|td| smt_only(td)) else {
            continue;
        };
        if td.1.core != out[target].td.1.core
            || !o.filters.counted(p, s.leaf)
            || !o.filters.keep(p, s)
        {
            continue;
        }
        out[target].td.add(td);
        let k = key_of(lk, &o.sort, s, s.leaf);
        if let Some(row) = maps.get_mut(target).and_then(|m| m.get_mut(&k)) {
            row.td.add(td);
            if let Some(inc) = row.incl.as_mut() {
                inc.td.add(td);
            }
        }
    }
}

/// Aggregates a profile into one table per event.
pub fn tables(p: &Profile, o: &HistOptions) -> Vec<Table> {
    let lk = LocKeys::new(p, o);
    let mut out: Vec<Table> = (0..p.events.len())
        .map(|event| Table {
            event,
            ..Table::default()
        })
        .collect();
    let mut maps: Vec<FastMap<Key, Row>> = vec![FastMap::default(); p.events.len()];
    let mut seen: Vec<Key> = Vec::new();
    let mut kept: Vec<u32> = Vec::new();
    for (si, s) in p.groups.iter().enumerate() {
        let ev = usize::from(s.event);
        if !o.filters.counted(p, s.leaf) {
            continue;
        }
        out[ev].base_period += s.period;
        out[ev].base_samples += s.samples;
        if !o.filters.keep(p, s) {
            continue;
        }
        let t = &mut out[ev];
        t.total_period += s.period;
        t.total_samples += s.samples;
        let td = p.td(s);
        if let Some(td) = td {
            t.td.add(td);
            t.td_samples += s.td_samples;
        }
        let lat = p.latency(s);
        if let Some(l) = lat {
            t.latencies.merge(l);
        }
        let map = &mut maps[ev];
        let k = key_of(&lk, &o.sort, s, s.leaf);
        let row = map.entry(k).or_insert_with(|| Row {
            example: si as u32,
            example_loc: s.leaf,
            example_sym: lk.sym[s.leaf as usize],
            ..Row::default()
        });
        row.period += s.period;
        row.samples += s.samples;
        if let Some(td) = td {
            row.td.add(td);
            row.td_samples += s.td_samples;
        }
        if let Some(l) = lat {
            row.lat.merge(l);
        }
        let members = p.members(s);
        if let Some((m, n)) = members {
            add_members(&mut row.members, m, n);
        }
        if o.children {
            // Every entry of the chain once (recursion counts once), the sample's own row
            // included.
            seen.clear();
            seen.push(k);
            // TopDown and retire latency go to the callers too: a row's columns then cover
            // what its Children value covers.
            let credit = |row: &mut Row| {
                row.children += s.period;
                if td.is_none() && lat.is_none() && members.is_none() {
                    return;
                }
                let inc = row.incl.get_or_insert_with(Default::default);
                if let Some(td) = td {
                    inc.td.add(td);
                    inc.td_samples += s.td_samples;
                }
                if let Some(l) = lat {
                    inc.lat.merge(l);
                }
                if let Some((m, n)) = members {
                    add_members(&mut inc.members, m, n);
                }
            };
            if let Some(row) = map.get_mut(&k) {
                credit(row);
            }
            // An event whose samples carry no chains credits no caller (perf: the Children
            // of such a row are its Self), e.g. the samplers of an `--off-cpu` recording.
            if !p.events[usize::from(s.event)].callchains {
                continue;
            }
            callgraph::kept_locs(p, s, o.max_stack, &mut kept);
            // The level perf shows an entry with: its own, but for an address no mapping
            // covers, the sample's (a kernel sample's garbage user frames are `[k]`).
            let sample_kernel = p.locs[s.leaf as usize].kernel;
            for &loc in &kept {
                let own_kernel = p.locs[loc as usize].kernel;
                let other = lk.other_level[loc as usize];
                let shown_kernel = match other {
                    Some(_) => sample_kernel,
                    None => own_kernel,
                };
                for (i, &sym) in lk.entries[loc as usize].iter().enumerate() {
                    let k = key_of_entry(&lk, &o.sort, s, loc, Some(i));
                    if seen.contains(&k) {
                        continue;
                    }
                    seen.push(k);
                    let sym = match other {
                        Some(cell) if shown_kernel != own_kernel => cell,
                        _ => sym,
                    };
                    let row = map.entry(k).or_insert_with(|| Row {
                        example: si as u32,
                        example_loc: loc,
                        example_sym: sym,
                        ..Row::default()
                    });
                    credit(row);
                }
            }
        }
    }
    join_smt_groups(p, o, &lk, &mut out, &mut maps);
    for (t, map) in out.iter_mut().zip(maps) {
        let cols = o.columns(t.event);
        let mut rows: Vec<Row> = map
            .into_iter()
            .map(|(k, mut r)| {
                if o.children {
                    let inc = r.incl.take().map(|b| *b).unwrap_or_default();
                    r.td = inc.td;
                    r.td_samples = inc.td_samples;
                    r.lat = inc.lat;
                    r.members = inc.members;
                }
                r.latency = LatencyStats::of_hist(&r.lat);
                r.lat = LatHist::default();
                r.key_id = k;
                let s = &p.groups[r.example as usize];
                r.key = render(p, &lk, &o.sort, &cols, s, r.example_loc, r.example_sym);
                // perf's `weight`: the row's weight, its local weight times its samples.
                for (cell, &col) in r.key.iter_mut().zip(&cols) {
                    if o.sort[col] == SortKey::Memory(MemKey::Weight)
                        && let Some(m) = p.mems.get(s.mem as usize)
                    {
                        *cell = (m.weight * r.samples).to_string();
                    }
                }
                r
            })
            .collect();
        // Heaviest first; ties by Self, then by the keys as printed (perf's order).
        rows.sort_by(|a, b| {
            let w = |r: &Row| if o.children { r.children } else { r.period };
            w(b).cmp(&w(a))
                .then(b.period.cmp(&a.period))
                .then_with(|| tie_order(&lk, &o.sort, &cols, a, b))
                .then(a.key_id.cmp(&b.key_id))
        });
        t.rows = rows;
        t.latency = LatencyStats::of_hist(&t.latencies);
        if o.relative {
            t.base_period = t.total_period;
            t.base_samples = t.total_samples;
        }
    }
    out
}

/// How rows of equal weight order: key by key, each as perf's comparison of the key orders it
/// ([`memkeys::tie_order`]), else by the cells as printed.
fn tie_order(
    lk: &LocKeys,
    sort: &[SortKey],
    cols: &[usize],
    a: &Row,
    b: &Row,
) -> std::cmp::Ordering {
    // The table's columns only: another event's field is no key of these rows (perf's
    // dynamic sort entry compares equal on another event's hist entries).
    for (j, &i) in cols.iter().enumerate() {
        let k = &sort[i];
        let slot = lk.slots.get(i).copied().unwrap_or(usize::MAX);
        let id = |r: &Row| r.key_id.get(slot).copied().unwrap_or(0);
        // A tracepoint field: perf's memcmp of the two fields' bytes, larger first.
        let field = matches!(k, SortKey::TraceField(_)).then(|| id(b).cmp(&id(a)));
        let c = field
            .or_else(|| k.mem().and_then(|m| memkeys::tie_order(m, id(a), id(b))))
            .unwrap_or_else(|| a.key.get(j).cmp(&b.key.get(j)));
        if c.is_ne() {
            return c;
        }
    }
    a.key.cmp(&b.key)
}

/// The call-graph trees of a table's rows ([`super::callgraph`]): `None` for rows too light
/// to show any node (their weight is below the cutoff).
pub fn call_trees(
    p: &Profile,
    t: &Table,
    o: &HistOptions,
    cg: &CallGraphOptions,
) -> Vec<Option<CallTree>> {
    let lk = LocKeys::new(p, o);
    let weight = |r: &Row| if o.children { r.children } else { r.period };
    // The cutoff is a share of the event's total, or with `fractal` of the row's weight.
    let share = |of: u64| ((of as f64 * cg.min_percent / 100.0).ceil() as u64).max(1);
    let min_period = |r: usize| {
        if cg.mode == Mode::Fractal {
            share(t.rows.get(r).map_or(0, weight))
        } else {
            share(t.base_period)
        }
    };
    let rows: FastMap<Key, usize> = t
        .rows
        .iter()
        .enumerate()
        .filter(|&(i, r)| weight(r) >= min_period(i))
        .map(|(i, r)| (r.key_id, i))
        .collect();
    let groups = p
        .groups
        .iter()
        .enumerate()
        .filter(|(_, g)| usize::from(g.event) == t.event && o.filters.keep(p, g))
        .map(|(i, _)| i);
    callgraph::trees(
        p,
        groups,
        o.children,
        cg,
        min_period,
        |g, loc, entry| {
            rows.get(&key_of_entry(&lk, &o.sort, g, loc, entry))
                .copied()
        },
        t.rows.len(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(sort: &[SortKey], filters: Filters) -> FoldKeys {
        fold_keys(&HistOptions {
            sort: sort.to_vec(),
            filters,
            ..HistOptions::default()
        })
    }

    #[test]
    fn the_fold_keeps_what_the_keys_and_filters_read() {
        let k = keys(
            &[SortKey::Comm, SortKey::Dso, SortKey::Sym],
            Filters::default(),
        );
        assert_eq!(
            (k.comm, k.tid, k.pid, k.cpu, k.cgroup, k.cgroup_ns),
            (true, false, false, false, false, false)
        );
        assert_eq!(k.rows, Some(FoldKeys::ROW_BATCH));
        // `pid` is per thread and shows the thread's name.
        let k = keys(&[SortKey::Pid], Filters::default());
        assert!(k.tid && k.comm && !k.pid);
        let k = keys(
            &[SortKey::Cpu, SortKey::Cgroup, SortKey::CgroupId],
            Filters::default(),
        );
        assert!(k.cpu && k.cgroup && k.cgroup_ns && !k.comm && !k.tid);
        // Filters read their fields.
        let k = keys(
            &[SortKey::Sym],
            Filters {
                comms: vec!["a".into()],
                pids: vec![1],
                tids: vec![2],
                ..Filters::default()
            },
        );
        assert!(k.comm && k.pid && k.tid);
        // Keys that read more of a location than its row keep every address.
        assert_eq!(keys(&[SortKey::Srcline], Filters::default()).rows, None);
        assert_eq!(
            keys(&[SortKey::Sym, SortKey::Ip], Filters::default()).rows,
            None
        );
    }

    /// perf keeps an inlined function by its name within the function it is inlined into:
    /// glibc's `ptmalloc_init` inlined into `ptmalloc_init.part.0` (around the getrandom
    /// call) and into `malloc` (its caller) is two rows with `--children`, and each row's
    /// tree starts at its own entry.
    #[test]
    fn an_inlined_function_is_a_row_per_function_it_is_inlined_into() {
        use super::super::profile::Folder;
        use crate::symbol::Frame;
        let frame = |name: &str| Frame {
            function: Some(name.into()),
            file: Some("malloc.c".into()),
            line: 1,
            decl_line: 0,
        };
        let at = |sym: &str, start: u64, frames: &[&str]| crate::symbol::symbolizer::Loc {
            sym_start: start,
            frames: frames.iter().map(|f| frame(f)).collect(),
            ..crate::testutil::loc(sym)
        };
        let mut f = Folder::new(
            vec![super::super::profile::EventInfo {
                name: "cpu-clock".into(),
                ..Default::default()
            }],
            false,
        );
        f.add(&crate::testutil::view(0, 0, &[1, 2], 1));
        let mut p = f.finish();
        p.callchains = true;
        p.inline_entries = true;
        p.locs = vec![
            at("getrandom", 0x100, &[]),
            at(
                "ptmalloc_init.part.0",
                0x200,
                &["tcache_key_initialize", "ptmalloc_init"],
            ),
            at("malloc", 0x300, &["ptmalloc_init", "malloc"]),
        ];
        p.comms = vec!["app".into()];
        let o = HistOptions {
            sort: vec![SortKey::Sym],
            children: true,
            ..HistOptions::default()
        };
        let t = &tables(&p, &o)[0];
        let names: Vec<&str> = t.rows.iter().map(|r| r.key[0].as_str()).collect();
        let inits = names
            .iter()
            .filter(|n| **n == "[.] ptmalloc_init (inlined)")
            .count();
        assert_eq!(inits, 2, "{names:?}");
        assert_eq!(t.rows.len(), 5, "{names:?}");
        let cg = CallGraphOptions {
            min_percent: 0.0,
            ..CallGraphOptions::default()
        };
        let trees = call_trees(&p, t, &o, &cg);
        let mut chains: Vec<Vec<String>> = t
            .rows
            .iter()
            .zip(&trees)
            .filter(|(r, _)| r.key[0] == "[.] ptmalloc_init (inlined)")
            .map(|(_, tree)| {
                let tree = tree.as_ref().expect("a tree");
                let chains = tree.chains();
                assert_eq!(chains.len(), 1);
                chains[0].0.iter().map(|n| n.to_string()).collect()
            })
            .collect();
        chains.sort();
        assert_eq!(
            chains,
            [
                vec![
                    "ptmalloc_init (inlined)",
                    "ptmalloc_init (inlined)",
                    "tcache_key_initialize (inlined)",
                    "getrandom"
                ],
                vec![
                    "ptmalloc_init (inlined)",
                    "tcache_key_initialize (inlined)",
                    "getrandom"
                ],
            ]
        );
    }

    #[test]
    fn tracepoint_fields_resolve_as_perfs_dynamic_keys() {
        let (sort, specs) =
            parse_sort_with_fields("comm,pid,prev_pid,sched:sched_switch.*,%2.x").unwrap();
        assert_eq!(sort[..2], [SortKey::Comm, SortKey::Pid]);
        assert_eq!(specs, ["prev_pid", "sched:sched_switch.*", "%2.x"]);
        assert!(parse_sort_with_fields("comm,sym(x)").is_err());
        let f = |names: &[&str]| Some(names.iter().map(|n| (n.to_string(), false, 4)).collect());
        let events: Vec<TraceEventFields> = vec![
            ("sched:sched_switch".into(), f(&["prev_pid", "next_pid"])),
            ("sched:sched_wakeup".into(), f(&["pid", "x"])),
            ("cycles".into(), None),
        ];
        let (keys, fields) = resolve_trace_fields(&sort, &specs, &events).unwrap();
        let named: Vec<(usize, &str)> = fields.iter().map(|f| (f.event, f.name.as_str())).collect();
        // prev_pid of the one event with it; all of sched_switch's; %2's x.
        assert_eq!(
            named,
            [(0, "prev_pid"), (0, "prev_pid"), (0, "next_pid"), (1, "x")]
        );
        assert_eq!(keys.len(), 6);
        let o = HistOptions {
            sort: keys,
            trace_fields: fields,
            ..HistOptions::default()
        };
        assert!(o.shows(o.sort[5], 1) && !o.shows(o.sort[5], 0) && o.shows(SortKey::Comm, 0));
        assert_eq!(o.header(o.sort[3]), "prev_pid");
        let err = |spec: &str| {
            let (s, sp) = parse_sort_with_fields(spec).unwrap();
            resolve_trace_fields(&s, &sp, &events).unwrap_err()
        };
        assert!(err("nope").contains("no tracepoint of the recording has a field nope"));
        assert!(err("sched.pid").contains("in several events' names"));
        assert!(err("%3.pid").contains("cycles is not a tracepoint"));
        assert!(err("%9.pid").contains("has no event %9"));
        assert!(err("sched_wakeup.y").contains("its fields are pid, x"));
        assert!(err("pid/raw").contains("leave out /raw"));
    }
}
