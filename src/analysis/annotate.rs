//! Per-instruction attribution of one function: what `perf annotate` shows, with hrec's
//! retire latency per instruction and TopDown per basic block.
//!
//! A sample belongs to the instruction that holds its IP (the leaf of its chain, never a
//! caller; the instruction's first byte or one inside it), in the function of the file it was
//! symbolized in; its period, its retire latency and its TopDown deltas go with it. The
//! function's bytes are read from the same file (the build-id checked as for symbols) and
//! disassembled ([`crate::disasm`]); its size comes from the symbol table. Basic blocks start
//! at the function's entry, at every branch target inside it, and after every jump, call or
//! return; the TopDown deltas of a block's instructions (group-read deltas attributed to the
//! sampled IP) add up per block. So a function's samples and retire latencies on its
//! instructions, and its TopDown slots in its blocks, add up to report's row of it; samples
//! outside its bytes (which only a symbol table that disagrees with the samples' gives) are
//! counted apart.
//!
//! A function that cannot be read (the file missing, changed since the recording, without a
//! symbol size, or in the kernel) is left out with one line saying why.
//!
//! **Intel's metrics per block** (`annotate --td-level 3`, `--metrics LIST`; [`annotate_with`],
//! [`add_metrics`]): the samples of every metric group's sampler (not only the annotated
//! event's) and of the `-W` samplers of `:R` events go by the same rule: a sample's group-read
//! deltas (per member, [`super::metrics::MemberTracker`]) and its retire latency belong to the
//! instruction whose bytes hold its IP, so to that instruction's block. There is no skid
//! correction: a precise sampler's IP is the instruction after the one that caused the
//! sample's event only where the kernel reports it so, and the deltas go where the IP is, as
//! `report` puts them in the function that holds the IP. Each block's member sums are then
//! evaluated as one row of `report --td-level 3` ([`RowMetricsSetup::evaluate`]: events of
//! different groups as rates per cycle of their own group, a metric needing a group with
//! fewer reads than the minimum left without a number), and the function's total is the sum
//! of its blocks'. Samples outside the function's bytes are in no block and not in the total.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::disasm::{self, Insn, Syntax};
use std::sync::Arc;

use crate::symbol::Unresolved;
use crate::symbol::binary::{Binary, DwarfUse};
use crate::symbol::debuginfo::SearchPaths;
use crate::symbol::kallsyms::KernelSymbols;

use super::latency::{LatHist, LatencyStats};
use super::metrics::{GroupSums, RowMetrics, RowMetricsSetup, TreeNode};
use super::profile::{NONE, Profile};
use super::topdown::{Level2, TdCounts};

/// What to annotate.
#[derive(Debug, Clone, Default)]
pub struct AnnotateOptions {
    /// Functions by name (empty: the hottest ones).
    pub symbols: Vec<String>,
    /// Only functions of this object (file name or path).
    pub dso: Option<String>,
    /// The event (index into the profile's events).
    pub event: usize,
    /// Without names: functions with at least this share of the event's samples.
    pub percent_limit: f64,
    /// Disassembly syntax.
    pub syntax: Syntax,
    /// Look for binaries under this root instead of `/`.
    pub symfs: Option<PathBuf>,
    /// Where separate debug files are (for source lines).
    pub search: SearchPaths,
    /// The build-ids the recording saw (`path -> id`).
    pub build_ids: HashMap<PathBuf, Vec<u8>>,
    /// Read source lines from DWARF.
    pub source: bool,
    /// Kernel code: the kernel's symbols (names and, from the next symbol, sizes) and an ELF
    /// core image of its memory (`/proc/kcore`) to read the bytes from; without both, kernel
    /// functions are left out with one line.
    pub kernel: Option<(Arc<KernelSymbols>, PathBuf)>,
}

/// Where an instruction's code came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SourceLine {
    /// Source file.
    pub file: String,
    /// Line.
    pub line: u32,
    /// The functions inlined here, outermost first (empty outside inlined code).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inlined: Vec<String>,
}

/// One instruction and what was attributed to it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AnnotatedInsn {
    /// The ELF virtual address.
    pub address: u64,
    /// Samples at it.
    pub samples: u64,
    /// Their periods.
    pub period: u64,
    /// Disassembly.
    pub text: String,
    /// Its bytes.
    #[serde(skip)]
    pub raw: Vec<u8>,
    /// DWARF's source line, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceLine>,
    /// Retire latency of its samples, when they carried any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retire_latency: Option<LatencyStats>,
    /// Their retire latencies, `(value, samples)` by value (for histograms).
    #[serde(skip)]
    pub latency_values: Vec<(u64, u64)>,
    /// Their TopDown deltas (group reads).
    #[serde(skip)]
    pub topdown: TdCounts,
}

/// A basic block and what its instructions got.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Block {
    /// First instruction's address.
    pub start: u64,
    /// The address after its last instruction.
    pub end: u64,
    /// Samples in it.
    pub samples: u64,
    /// Their periods.
    pub period: u64,
    /// The slots of its samples' group-read deltas that its level-1 percentages are of, as
    /// report's `slots` (the four level-1 values' sum; an E-core group's `width x` cycles):
    /// to weigh blocks together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topdown_slots: Option<u64>,
    /// TopDown level 1 of its samples' group-read deltas, percent (Retiring, Bad
    /// Speculation, Frontend Bound, Backend Bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topdown_l1: Option<[f64; 4]>,
    /// Level 2, when counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topdown_l2: Option<Level2>,
    /// The deltas themselves.
    #[serde(skip)]
    pub topdown: TdCounts,
    /// Its samples of the metric events ([`annotate_with`]).
    #[serde(skip)]
    pub metric_sums: MetricSums,
    /// Intel's metrics on them ([`add_metrics`]; `None`: no read of a metric group here).
    #[serde(skip)]
    pub metrics: Option<RowMetrics>,
}

/// The events whose samples give Intel's metrics per block (`--td-level 3`, `--metrics`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetricEvents {
    /// The metric groups' samplers (indexes into `Profile::events`), in
    /// [`RowMetricsSetup::group_events`]' order.
    pub groups: Vec<usize>,
    /// The `-W` samplers of `:R` events: Intel's event name and the profile event.
    pub latencies: Vec<(String, usize)>,
}

impl MetricEvents {
    /// The events `setup` evaluates.
    pub fn of(setup: &RowMetricsSetup<'_>) -> MetricEvents {
        MetricEvents {
            groups: setup.group_events(),
            latencies: setup.latency_events().to_vec(),
        }
    }

    fn is_empty(&self) -> bool {
        self.groups.is_empty() && self.latencies.is_empty()
    }
}

/// What some samples of the metric events add up to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricSums {
    /// Per metric group ([`MetricEvents::groups`]' order): its members' delta sums and the
    /// reads behind them.
    pub groups: Vec<Option<(Vec<u64>, u64)>>,
    /// Per latency event ([`MetricEvents::latencies`]' order): its retire latencies.
    pub latencies: Vec<LatHist>,
}

impl MetricSums {
    fn add_group(&mut self, g: usize, members: &[u64], reads: u64) {
        if self.groups.len() <= g {
            self.groups.resize(g + 1, None);
        }
        let (sums, n) = self.groups[g].get_or_insert_with(Default::default);
        if sums.len() < members.len() {
            sums.resize(members.len(), 0);
        }
        for (s, m) in sums.iter_mut().zip(members) {
            *s = s.saturating_add(*m);
        }
        *n += reads;
    }

    fn add_latency(&mut self, k: usize, h: &LatHist) {
        if self.latencies.len() <= k {
            self.latencies.resize(k + 1, LatHist::default());
        }
        self.latencies[k].merge(h);
    }

    fn add(&mut self, o: &MetricSums) {
        for (g, s) in o.groups.iter().enumerate() {
            if let Some((m, n)) = s {
                self.add_group(g, m, *n);
            }
        }
        for (k, h) in o.latencies.iter().enumerate() {
            self.add_latency(k, h);
        }
    }

    /// Reads of every group together.
    pub fn reads(&self) -> u64 {
        self.groups.iter().flatten().map(|g| g.1).sum()
    }
}

/// One annotated function.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Annotated {
    /// Its name.
    pub name: String,
    /// Its file as recorded.
    pub dso: String,
    /// First byte (ELF virtual address).
    pub start: u64,
    /// Size in bytes.
    pub size: u64,
    /// Samples on its instructions.
    pub samples: u64,
    /// Their periods.
    pub period: u64,
    /// Samples named with it at addresses none of its instructions holds (before its first
    /// byte or past its last), on no instruction or block (see [`assemble`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub outside_samples: u64,
    /// Their periods.
    #[serde(skip_serializing_if = "is_zero")]
    pub outside_period: u64,
    /// How many of them carried a retire latency.
    #[serde(skip_serializing_if = "is_zero")]
    pub outside_latencies: u64,
    /// Its instructions.
    pub instructions: Vec<AnnotatedInsn>,
    /// Its basic blocks.
    pub blocks: Vec<Block>,
    /// Its blocks' samples of the metric events together.
    #[serde(skip)]
    pub metric_sums: MetricSums,
    /// Intel's metrics on them ([`add_metrics`]).
    #[serde(skip)]
    pub metrics: Option<RowMetrics>,
}

/// What the metrics per block were chosen as, for the output.
#[derive(Debug, Clone, Default)]
pub struct MetricsShown {
    /// The chosen metrics in file order, with their levels.
    pub nodes: Vec<TreeNode>,
    /// The fewest reads of a group a metric needs.
    pub min_reads: u64,
    /// Said once (`smt_on`'s source, unrecorded events).
    pub notes: Vec<String>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// The functions annotated and the ones that could not be.
#[derive(Debug, Clone, Default)]
pub struct Annotation {
    /// The event's name.
    pub event: String,
    /// Annotated, hottest first (or in the order asked for).
    pub symbols: Vec<Annotated>,
    /// One line per function that could not be annotated.
    pub problems: Vec<String>,
    /// With Intel's metrics per block ([`add_metrics`]): what was chosen.
    pub metrics: Option<MetricsShown>,
}

impl Annotation {
    /// Adds an annotated function (`what` names it in a problem), with one line when some of
    /// its samples are on none of its instructions.
    fn push(&mut self, a: Annotated, what: &str) {
        if a.outside_samples > 0 {
            let lat = match a.outside_latencies {
                0 => String::new(),
                n => format!(" ({n} with a retire latency)"),
            };
            self.problems.push(format!(
                "{what}: {} samples{lat} are at addresses outside its bytes {:#x}-{:#x}, so on none of its instructions (they were named with a symbol other than the one its bytes were read by)",
                a.outside_samples,
                a.start,
                a.start + a.size
            ));
        }
        self.symbols.push(a);
    }
}

/// What the samples of one function add up to, per address.
#[derive(Default)]
struct Hits {
    dso: String,
    kernel: bool,
    start: u64,
    samples: u64,
    by_addr: BTreeMap<u64, (u64, u64, LatHist, TdCounts)>,
    /// The samples of the metric events, per address.
    metric: BTreeMap<u64, MetricSums>,
}

/// Annotates the functions `o` picks out of `p`.
pub fn annotate(p: &Profile, o: &AnnotateOptions) -> Annotation {
    annotate_with(p, o, &MetricEvents::default())
}

/// Annotates the functions `o` picks out of `p`, with the samples of the metric events `m`
/// summed per block (for [`add_metrics`]).
pub fn annotate_with(p: &Profile, o: &AnnotateOptions, m: &MetricEvents) -> Annotation {
    let mut out = Annotation {
        event: p
            .events
            .get(o.event)
            .map(|e| e.name.clone())
            .unwrap_or_default(),
        ..Default::default()
    };
    let Ok(event) = u16::try_from(o.event) else {
        return out;
    };
    // (name, dso, start) -> hits, over the leaf locations of the event's samples. The start
    // tells apart functions of one file that share a name (static functions of different
    // sources, in a program or the kernel): each is its own function, with its own bytes.
    let mut funcs: HashMap<(String, String, u64), Hits> = HashMap::new();
    let mut kernel_samples = 0u64;
    for g in p.groups.iter().filter(|g| g.event == event) {
        let l = &p.locs[g.leaf as usize];
        if l.kernel {
            kernel_samples += g.samples;
        }
        let Some(sym) = &l.sym else { continue };
        if let Some(want) = &o.dso
            && !dso_matches(&l.dso_path, want)
        {
            continue;
        }
        let start = l.file_addr.wrapping_sub(l.sym_offset);
        let h = funcs
            .entry((sym.to_string(), l.dso_path.to_string(), start))
            .or_insert_with(|| Hits {
                dso: l.dso_path.to_string(),
                kernel: l.kernel,
                start,
                ..Default::default()
            });
        h.samples += g.samples;
        let e = h.by_addr.entry(l.file_addr).or_default();
        e.0 += g.samples;
        e.1 += g.period;
        if g.lat != NONE
            && let Some(lat) = p.latencies.get(g.lat as usize)
        {
            e.2.merge(lat);
        }
        if g.td != NONE
            && let Some(td) = p.topdown.get(g.td as usize)
        {
            e.3.add(td);
        }
    }
    // The metric events' samples, at the addresses of the functions the event's samples
    // named (their functions only: a function is annotated for the event's samples).
    if !m.is_empty() {
        for g in &p.groups {
            let ev = usize::from(g.event);
            let gi = m.groups.iter().position(|&e| e == ev);
            let li = m.latencies.iter().position(|(_, e)| *e == ev);
            if gi.is_none() && li.is_none() {
                continue;
            }
            let l = &p.locs[g.leaf as usize];
            let Some(sym) = &l.sym else { continue };
            let start = l.file_addr.wrapping_sub(l.sym_offset);
            let Some(h) = funcs.get_mut(&(sym.to_string(), l.dso_path.to_string(), start)) else {
                continue;
            };
            let e = h.metric.entry(l.file_addr).or_default();
            if let (Some(gi), Some((members, reads))) = (gi, p.members(g)) {
                e.add_group(gi, members, reads);
            }
            if let (Some(li), Some(lat)) = (li, p.latency(g)) {
                e.add_latency(li, lat);
            }
        }
    }
    // Files whose samples could not be named, and why: a function asked for by name may be
    // among them.
    let mut unnamed: BTreeMap<String, (u64, String)> = BTreeMap::new();
    for g in p.groups.iter().filter(|g| g.event == event) {
        let l = &p.locs[g.leaf as usize];
        if l.sym.is_none()
            && !l.kernel
            && let Some(why) = l.unresolved
            && matches!(
                why,
                Unresolved::BinaryMissing
                    | Unresolved::Unreadable
                    | Unresolved::BuildIdMismatch
                    | Unresolved::NotElf
                    | Unresolved::NoSymbols
            )
        {
            let e = unnamed
                .entry(l.dso_path.to_string())
                .or_insert_with(|| (0, unreadable(&l.dso_path, why)));
            e.0 += g.samples;
        }
    }
    // A file with some named functions is readable: its other samples fell between them.
    let named: std::collections::HashSet<&str> = funcs.values().map(|h| h.dso.as_str()).collect();
    unnamed.retain(|file, _| !named.contains(file.as_str()));
    let total: u64 = p.events.get(o.event).map_or(0, |e| e.samples);
    let mut picked: Vec<((String, String, u64), Hits)> = if o.symbols.is_empty() {
        if kernel_samples > 0 && o.kernel.is_none() {
            out.problems.push(format!(
                "{kernel_samples} samples in kernel code are not annotated: {NO_KCORE}"
            ));
        }
        for (n, why) in unnamed.values() {
            out.problems
                .push(format!("{n} samples are not annotated: {why}"));
        }
        let mut v: Vec<_> = funcs
            .into_iter()
            .filter(|(_, h)| {
                (!h.kernel || o.kernel.is_some())
                    && 100.0 * h.samples as f64 >= o.percent_limit * total as f64
            })
            .collect();
        v.sort_by(|a, b| b.1.samples.cmp(&a.1.samples).then(a.0.cmp(&b.0)));
        v
    } else {
        let mut v = Vec::new();
        for want in &o.symbols {
            let mut found: Vec<_> = funcs
                .keys()
                .filter(|(n, _, _)| n == want)
                .cloned()
                .collect();
            found.sort();
            if found.is_empty() {
                let why = if unnamed.is_empty() {
                    "check the name with hrec report".to_string()
                } else {
                    let files: Vec<String> = unnamed
                        .values()
                        .map(|(n, why)| format!("{n} samples could not be named: {why}"))
                        .collect();
                    files.join("; ")
                };
                out.problems.push(format!(
                    "{want}: no samples of {} in a function of this name; {why}",
                    out.event
                ));
            }
            for k in found {
                if let Some(h) = funcs.remove(&k) {
                    v.push((k, h));
                }
            }
        }
        v
    };
    // Zero is a latency like any other once the event has any that is not.
    let has_latency = p.events.get(o.event).is_some_and(|e| e.has_latency);
    let mut binaries: HashMap<String, Result<Binary, String>> = HashMap::new();
    for ((name, dso, _), h) in picked.drain(..) {
        if h.kernel {
            match &o.kernel {
                None => out.problems.push(format!("{name} [kernel]: {NO_KCORE}")),
                Some((syms, kcore)) => match annotate_kernel(syms, kcore, &name, h, o, has_latency)
                {
                    Ok(a) => out.push(a, &format!("{name} [kernel]")),
                    Err(why) => out.problems.push(format!("{name} [kernel]: {why}")),
                },
            }
            continue;
        }
        let binary = binaries.entry(dso.clone()).or_insert_with(|| load(&dso, o));
        let b = match binary {
            Ok(b) => b,
            Err(why) => {
                out.problems.push(format!("{name} ({dso}): {why}"));
                continue;
            }
        };
        match annotate_one(b, &name, h, o, has_latency) {
            Ok(a) => out.push(a, &format!("{name} ({dso})")),
            Err(why) => out.problems.push(format!("{name} ({dso}): {why}")),
        }
    }
    out
}

/// Why kernel code is not annotated without `/proc/kcore`.
const NO_KCORE: &str = "kernel code is read from /proc/kcore, which is not readable here (it needs root, and a kernel that has it)";

/// The most bytes of a kernel function read (its size is the distance to the next symbol,
/// which after the last symbol of a region can be large).
const MAX_KERNEL_FUNCTION: u64 = 1 << 20;

/// A kernel function, its bytes from the core image at its running address.
fn annotate_kernel(
    syms: &KernelSymbols,
    kcore: &Path,
    name: &str,
    h: Hits,
    o: &AnnotateOptions,
    has_latency: bool,
) -> Result<Annotated, String> {
    let end = syms
        .end_of(h.start)
        .ok_or("its end is unknown (no kernel symbol follows it)")?;
    let size = end.saturating_sub(h.start);
    if size == 0 || size > MAX_KERNEL_FUNCTION {
        return Err(format!(
            "{size} bytes to the next kernel symbol is not one function"
        ));
    }
    let code = crate::symbol::binary::core_code(kcore, h.start, size)
        .ok_or_else(|| format!("{} does not hold its bytes", kcore.display()))?;
    let namer = |a: u64| -> Option<(String, u64)> {
        let (s, off) = syms.lookup(a)?;
        Some((s.name.to_string(), off))
    };
    let insns = disasm::disassemble(&code, h.start, o.syntax, &namer);
    Ok(assemble(name, h, &insns, &code, None, has_latency))
}

/// `want` names the file `path` (its whole path, or its file name).
pub fn dso_matches(path: &str, want: &str) -> bool {
    path == want || Path::new(path).file_name().is_some_and(|n| n == want)
}

fn load(dso: &str, o: &AnnotateOptions) -> Result<Binary, String> {
    let path = Path::new(dso);
    let on_disk = match &o.symfs {
        Some(root) => root.join(path.strip_prefix("/").unwrap_or(path)),
        None => path.to_path_buf(),
    };
    let expected = o.build_ids.get(path).map(Vec::as_slice);
    Binary::load_recorded(&on_disk, expected, &o.search, DwarfUse::Lines)
        .map_err(|why| unreadable(&on_disk.to_string_lossy(), why))
}

/// Why the code of `file` cannot be read, and what to do.
fn unreadable(file: &str, why: Unresolved) -> String {
    match why {
        Unresolved::BuildIdMismatch => format!(
            "{file} has changed since the recording (its build-id differs); give the binary that ran with --symfs"
        ),
        Unresolved::BinaryMissing => {
            format!("{file} is missing; give the directory it is under with --symfs")
        }
        Unresolved::NoSymbols => format!(
            "{file} has no symbols (stripped); install its debug file or give the directory with --debug-dir"
        ),
        other => format!("cannot read {file}: {other}"),
    }
}

fn annotate_one(
    b: &Binary,
    name: &str,
    h: Hits,
    o: &AnnotateOptions,
    has_latency: bool,
) -> Result<Annotated, String> {
    let sym = b
        .symbol(h.start)
        .filter(|s| s.start == h.start)
        .ok_or("the binary has no symbol there any more")?;
    if sym.size == 0 {
        return Err("the symbol table gives it no size, so its end is unknown".into());
    }
    let code = b
        .code(sym.start, sym.size)
        .ok_or("its bytes are not in the file (or it is larger than hrec disassembles)")?;
    let end = sym.start + sym.size;
    let namer = |a: u64| -> Option<(String, u64)> {
        if (sym.start..end).contains(&a) {
            return Some((name.to_string(), a - sym.start));
        }
        let s = b.symbol(a)?;
        Some((s.name.to_string(), a - s.start))
    };
    let insns = disasm::disassemble(&code, sym.start, o.syntax, &namer);
    if o.source {
        // The DWARF of the function's instructions, read in one go.
        b.prepare(&insns.iter().map(|i| i.address).collect::<Vec<_>>());
    }
    Ok(assemble(
        name,
        h,
        &insns,
        &code,
        o.source.then_some(b),
        has_latency,
    ))
}

/// What the samples at some addresses add up to: samples, period, retire latencies and
/// TopDown deltas.
#[derive(Debug, Clone, Default)]
struct Held {
    samples: u64,
    period: u64,
    lat: LatHist,
    td: TdCounts,
}

impl Held {
    fn add(&mut self, samples: u64, period: u64, lat: &LatHist, td: &TdCounts) {
        self.samples += samples;
        self.period += period;
        self.lat.merge(lat);
        self.td.add(td);
    }
}

/// The index of the instruction whose bytes hold `addr` (`insns` in address order).
fn holder(insns: &[Insn], addr: u64) -> Option<usize> {
    let k = insns
        .partition_point(|i| i.address <= addr)
        .checked_sub(1)?;
    let i = &insns[k];
    (addr - i.address < i.len as u64).then_some(k)
}

/// The annotated function from its decoded instructions (`code` their bytes, from the
/// function's start) and its samples; source lines from `dwarf` when given.
fn assemble(
    name: &str,
    h: Hits,
    insns: &[Insn],
    code: &[u8],
    dwarf: Option<&Binary>,
    has_latency: bool,
) -> Annotated {
    let start = insns.first().map_or(h.start, |i| i.address);
    // Every address's samples go, whole (samples, period, retire latencies, TopDown deltas),
    // to the instruction whose bytes hold it: its start, or a byte inside it when the bytes
    // were decoded from another start or the file changed. The instructions cover the
    // function's bytes, so an address no instruction holds lies before its first byte or
    // past its last: the samples were named with a symbol that disagrees with the one its
    // bytes were read by. Such samples belong to no instruction shown, so none gets them
    // (putting them on the first or last one would make that instruction hotter than it
    // was); they are counted in `outside_samples` and `outside_period`, and `annotate` says
    // so in one line.
    let mut held = vec![Held::default(); insns.len()];
    let mut outside = Held::default();
    for (&addr, (samples, period, lat, td)) in &h.by_addr {
        let to = match holder(insns, addr) {
            Some(k) => &mut held[k],
            None => &mut outside,
        };
        to.add(*samples, *period, lat, td);
    }
    let instructions: Vec<AnnotatedInsn> = insns
        .iter()
        .zip(&held)
        .map(|(i, e)| {
            let at = usize::try_from(i.address - start).unwrap_or(usize::MAX);
            AnnotatedInsn {
                address: i.address,
                samples: e.samples,
                period: e.period,
                text: i.text.clone(),
                raw: code
                    .get(at..at.saturating_add(i.len))
                    .unwrap_or_default()
                    .to_vec(),
                source: dwarf.and_then(|b| source_line(b, i.address)),
                retire_latency: LatencyStats::of_hist(&e.lat).filter(|_| has_latency),
                latency_values: super::latency::histogram_of(&e.lat),
                topdown: e.td,
            }
        })
        .collect();
    let mut blocks = blocks(insns, &instructions);
    // The metric events' samples by the same rule: the instruction that holds the address,
    // its block; outside the function's bytes, none.
    let mut metric_sums = MetricSums::default();
    for (&addr, sums) in &h.metric {
        let Some(k) = holder(insns, addr) else {
            continue;
        };
        let at = insns[k].address;
        if let Some(b) = blocks.partition_point(|b| b.start <= at).checked_sub(1) {
            blocks[b].metric_sums.add(sums);
            metric_sums.add(sums);
        }
    }
    Annotated {
        name: name.to_string(),
        dso: h.dso,
        start,
        size: code.len() as u64,
        samples: instructions.iter().map(|i| i.samples).sum(),
        period: instructions.iter().map(|i| i.period).sum(),
        outside_samples: outside.samples,
        outside_period: outside.period,
        outside_latencies: if has_latency { outside.lat.count() } else { 0 },
        instructions,
        blocks,
        metric_sums,
        metrics: None,
    }
}

/// Intel's metrics of every annotated function and of each of its blocks that has reads of
/// a metric group, by `setup` (the one the profile's events `m` were chosen by:
/// [`MetricEvents::of`]); `:R` terms take the block's own mean retire latency of the event
/// when it has `-W` samples of it, else Intel's default.
pub fn add_metrics(a: &mut Annotation, setup: &RowMetricsSetup<'_>, m: &MetricEvents) {
    let eval = |s: &MetricSums| -> Option<RowMetrics> {
        if s.reads() == 0 {
            return None;
        }
        let sums: Vec<GroupSums<'_>> = (0..m.groups.len())
            .map(|g| {
                s.groups
                    .get(g)
                    .and_then(Option::as_ref)
                    .map(|(v, n)| (v.as_slice(), *n))
            })
            .collect();
        let latency = |name: &str| {
            let k = m
                .latencies
                .iter()
                .position(|(n, _)| n.eq_ignore_ascii_case(name))?;
            LatencyStats::of_hist(s.latencies.get(k)?)
                .map(|l| l.mean)
                .filter(|&v| v > 0.0)
        };
        Some(setup.evaluate(&sums, &latency))
    };
    for f in &mut a.symbols {
        f.metrics = eval(&f.metric_sums);
        for b in &mut f.blocks {
            b.metrics = eval(&b.metric_sums);
        }
    }
    a.metrics = Some(MetricsShown {
        nodes: setup.nodes(),
        min_reads: setup.min_reads(),
        notes: setup.notes.clone(),
    });
}

/// The innermost source line of `addr` and the functions inlined there.
fn source_line(b: &Binary, addr: u64) -> Option<SourceLine> {
    let s = b.symbolize(addr).ok()?;
    let first = s.frames.first()?;
    let file = first.file.as_deref()?.to_string();
    let inlined = s.frames[..s.frames.len().saturating_sub(1)]
        .iter()
        .rev()
        .filter_map(|f| f.function.as_deref().map(str::to_string))
        .collect();
    Some(SourceLine {
        file,
        line: first.line,
        inlined,
    })
}

/// Splits the instructions into basic blocks and adds up each block's samples and TopDown
/// deltas (those its instructions hold).
fn blocks(insns: &[Insn], annotated: &[AnnotatedInsn]) -> Vec<Block> {
    let Some(first) = insns.first() else {
        return Vec::new();
    };
    let end = insns
        .last()
        .map_or(first.address, |i| i.address + i.len as u64);
    let mut starts: std::collections::BTreeSet<u64> = [first.address].into();
    for i in insns {
        if let Some(t) = i.target
            && (first.address..end).contains(&t)
        {
            starts.insert(t);
        }
        if i.ends_block {
            starts.insert(i.address + i.len as u64);
        }
    }
    let starts: Vec<u64> = starts.into_iter().filter(|&s| s < end).collect();
    let mut out: Vec<Block> = starts
        .iter()
        .enumerate()
        .map(|(k, &s)| Block {
            start: s,
            end: starts.get(k + 1).copied().unwrap_or(end),
            samples: 0,
            period: 0,
            topdown_slots: None,
            topdown_l1: None,
            topdown_l2: None,
            topdown: TdCounts::default(),
            metric_sums: MetricSums::default(),
            metrics: None,
        })
        .collect();
    // A block starts at the first instruction or at an address inside the function, so every
    // instruction has one (the one its first byte is in).
    for i in annotated {
        if let Some(k) = out.partition_point(|b| b.start <= i.address).checked_sub(1) {
            let b = &mut out[k];
            b.samples += i.samples;
            b.period += i.period;
            b.topdown.add(&i.topdown);
        }
    }
    for b in &mut out {
        b.topdown_slots = Some(b.topdown.slots()).filter(|&s| s > 0);
        b.topdown_l1 = b.topdown.level1();
        b.topdown_l2 = b.topdown.level2();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dso_names_match_by_path_or_file_name() {
        assert!(dso_matches("/usr/lib/libc.so.6", "libc.so.6"));
        assert!(dso_matches("/usr/lib/libc.so.6", "/usr/lib/libc.so.6"));
        assert!(!dso_matches("/usr/lib/libc.so.6", "libc"));
    }

    fn insn(address: u64, len: usize, text: &str, target: Option<u64>, ends: bool) -> Insn {
        Insn {
            address,
            len,
            text: text.into(),
            target,
            ends_block: ends,
        }
    }

    fn lats(values: &[u16]) -> LatHist {
        let mut h = LatHist::default();
        for &v in values {
            h.add(v);
        }
        h
    }

    /// Samples at an address: (address, samples, period, retire latencies, TopDown deltas).
    type Given = (u64, u64, u64, &'static [u16], TdCounts);

    /// Samples inside instructions go whole to the instruction that holds them: samples,
    /// period, every retire latency and every TopDown delta; those outside the function's
    /// bytes are on no instruction and counted, so the sums are kept.
    #[test]
    fn samples_inside_instructions_move_whole_to_their_instruction() {
        // 1000: 4 bytes; 1004: 3 bytes; 1007: jne 1004 (2 bytes); 1009: ret.
        let insns = [
            insn(0x1000, 4, "a", None, false),
            insn(0x1004, 3, "b", None, false),
            insn(0x1007, 2, "jne", Some(0x1004), true),
            insn(0x1009, 1, "ret", None, true),
        ];
        let code = [0x90u8; 10];
        let t1 = TdCounts::pcore([1000, 600, 100, 100, 200, 300, 50, 60, 100]);
        let t2 = TdCounts::pcore([1000, 100, 100, 200, 600, 50, 50, 100, 500]);
        let t3 = TdCounts::pcore([1000, 100, 100, 700, 100, 50, 50, 500, 50]);
        let at: [Given; 7] = [
            (0x1000, 1, 100, &[5], t1),
            (0x1002, 2, 200, &[10, 20], t2),
            (0x1005, 1, 100, &[0], t3),
            (0x1006, 3, 300, &[7, 7, 9], t1),
            (0x1008, 1, 100, &[40], t2),
            (0x0fff, 1, 50, &[3], t3),
            (0x100a, 2, 60, &[4, 6], t1),
        ];
        let mut h = Hits {
            dso: "/bin/x".into(),
            start: 0x1000,
            ..Hits::default()
        };
        for &(a, samples, period, l, td) in &at {
            h.samples += samples;
            h.by_addr.insert(a, (samples, period, lats(l), td));
        }
        let f = assemble("f", h, &insns, &code, None, true);
        let got: Vec<(u64, u64, u64, u64, u64, TdCounts)> = f
            .instructions
            .iter()
            .map(|i| {
                let l = i.retire_latency.unwrap_or_default();
                (i.address, i.samples, i.period, l.count, l.total, i.topdown)
            })
            .collect();
        let sum = |a: TdCounts, b: TdCounts| {
            let mut s = a;
            s.add(&b);
            s
        };
        assert_eq!(
            got,
            [
                (0x1000, 3, 300, 3, 35, sum(t1, t2)),
                (0x1004, 4, 400, 4, 23, sum(t3, t1)),
                (0x1007, 1, 100, 1, 40, t2),
                (0x1009, 0, 0, 0, 0, TdCounts::default()),
            ]
        );
        // The moved latencies are in the histogram and the statistics: 0 counts.
        let b = &f.instructions[1];
        assert_eq!(
            b.latency_values,
            [(0, 1), (1, 0), (2, 0), (4, 0), (8, 2), (16, 1)]
        );
        assert_eq!(b.retire_latency.unwrap().min, 0);
        assert_eq!((f.samples, f.period), (8, 800));
        assert_eq!(
            (f.outside_samples, f.outside_period, f.outside_latencies),
            (3, 110, 3)
        );
        // Nothing lost: samples, periods and latencies add up to what was given.
        let given = |k: fn(&Given) -> u64| -> u64 { at.iter().map(k).sum() };
        assert_eq!(f.samples + f.outside_samples, given(|e| e.1));
        assert_eq!(f.period + f.outside_period, given(|e| e.2));
        let on_insns: u64 = f
            .instructions
            .iter()
            .filter_map(|i| i.retire_latency)
            .map(|l| l.count)
            .sum();
        assert_eq!(on_insns + f.outside_latencies, given(|e| e.3.len() as u64));
        // Blocks: [1000,1004), [1004,1009) (the jump's target to its end), [1009,100a).
        let blocks: Vec<(u64, u64, u64, Option<u64>)> = f
            .blocks
            .iter()
            .map(|b| (b.start, b.end, b.samples, b.topdown_slots))
            .collect();
        assert_eq!(
            blocks,
            [
                (0x1000, 0x1004, 3, Some(2000)),
                (0x1004, 0x1009, 5, Some(3000)),
                (0x1009, 0x100a, 0, None),
            ]
        );
        assert_eq!(f.blocks[0].topdown, sum(t1, t2));
        assert_eq!(f.blocks[1].topdown, sum(sum(t3, t1), t2));
        assert_eq!(f.blocks[0].topdown_l1, sum(t1, t2).level1());
        // One line says what is on no instruction.
        let mut a = Annotation::default();
        a.push(f, "f (/bin/x)");
        assert_eq!(a.problems.len(), 1, "{:?}", a.problems);
        assert!(
            a.problems[0].starts_with("f (/bin/x): 3 samples (3 with a retire latency) are at addresses outside its bytes 0x1000-0x100a"),
            "{:?}",
            a.problems
        );
    }

    #[test]
    fn an_address_is_held_by_the_instruction_its_byte_is_in() {
        let insns = [
            insn(0x10, 4, "a", None, false),
            insn(0x14, 1, "b", None, false),
        ];
        let held: Vec<Option<usize>> = [0xf, 0x10, 0x13, 0x14, 0x15]
            .into_iter()
            .map(|a| holder(&insns, a))
            .collect();
        assert_eq!(held, [None, Some(0), Some(0), Some(1), None]);
        assert_eq!(holder(&[], 0x10), None);
    }

    /// The metric events' group reads and latencies go by the same rule as samples: to the
    /// block of the instruction whose bytes hold the address; outside the function's bytes,
    /// nowhere; the function's total is its blocks'.
    #[test]
    fn metric_sums_go_to_the_block_of_the_holding_instruction() {
        // Blocks [10,14) and [14,16) (the jump's target).
        let insns = [
            insn(0x10, 4, "a", None, false),
            insn(0x14, 1, "b", None, false),
            insn(0x15, 1, "jne", Some(0x14), true),
        ];
        let sums = |g: usize, m: &[u64], n: u64, lat: &[u16]| {
            let mut s = MetricSums::default();
            s.add_group(g, m, n);
            s.add_latency(0, &lats(lat));
            s
        };
        let mut h = Hits::default();
        h.by_addr
            .insert(0x10, (1, 1, LatHist::default(), TdCounts::default()));
        h.metric.insert(0x12, sums(0, &[100, 5], 1, &[7]));
        h.metric.insert(0x10, sums(1, &[50, 1, 2], 2, &[3]));
        h.metric.insert(0x15, sums(0, &[10, 1], 1, &[]));
        h.metric.insert(0x20, sums(0, &[999, 9], 9, &[9]));
        let f = assemble("f", h, &insns, &[0; 6], None, false);
        let b0 = &f.blocks[0].metric_sums;
        assert_eq!(
            b0.groups,
            [Some((vec![100, 5], 1)), Some((vec![50, 1, 2], 2))]
        );
        assert_eq!(b0.latencies[0].count(), 2);
        assert_eq!(f.blocks[1].metric_sums.groups, [Some((vec![10, 1], 1))]);
        assert_eq!(f.metric_sums.groups[0], Some((vec![110, 6], 2)));
        assert_eq!(f.metric_sums.reads(), 4);
    }

    /// Without latencies in the event (every one zero), none is shown or counted outside.
    #[test]
    fn latencies_of_an_event_without_them_are_not_counted() {
        let insns = [insn(0x10, 4, "a", None, true)];
        let mut h = Hits::default();
        h.by_addr
            .insert(0x11, (1, 1, lats(&[0]), TdCounts::default()));
        h.by_addr
            .insert(0x20, (1, 1, lats(&[0]), TdCounts::default()));
        let f = assemble("f", h, &insns, &[0; 4], None, false);
        assert_eq!(f.instructions[0].samples, 1);
        assert!(f.instructions[0].retire_latency.is_none());
        assert_eq!((f.outside_samples, f.outside_latencies), (1, 0));
        assert_eq!(f.blocks[0].topdown_slots, None);
    }
}
