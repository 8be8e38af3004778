//! A recording turned into resolved samples: the common input of `report`, `flamegraph` and
//! the exports.
//!
//! Building a profile takes three passes:
//! 1. **Replay** the records in time order: address spaces ([`crate::symbol::maps`]) and
//!    thread names change as side-band records arrive, and each sample is resolved against
//!    the state at its time into *locations*: (file, file offset), a kernel address, an
//!    anonymous address of a process, or an unmapped address. Locations are interned, so a
//!    hot loop sampled 100 000 times is one location. TopDown deltas are taken here too,
//!    because they depend on the order of a thread's samples.
//! 2. **Symbolize** each distinct location once: files in parallel, one worker per file at a
//!    time (loading a binary's DWARF is the expensive part; lookups are microseconds).
//! 3. The caller aggregates the compact samples ([`super::hist`]).
//!
//! Return addresses in a callchain point after the call; they are looked up at `addr - 1`
//! so the caller's line and inline chain are those of the call instruction.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::decode::{Record, context, misc};
use crate::event::attr::{flag, sample as st};
use crate::recording::{Comms, Recording};
use crate::symbol::debuginfo::SearchPaths;
use crate::symbol::elf::Binary;
use crate::symbol::kallsyms;
use crate::symbol::maps::{AddressSpaces, FileIdx};
use crate::symbol::perfmap::PerfMap;
use crate::symbol::{Frame, Unresolved};

use super::FastMap;
use super::topdown::{DeltaTracker, TdCounts, TdEvent};

/// How to build a profile.
#[derive(Debug, Clone)]
pub struct ProfileOptions {
    /// Look for binaries under this directory instead of `/` (perf's `--symfs`).
    pub symfs: Option<PathBuf>,
    /// Where separate debug files are searched.
    pub search: SearchPaths,
    /// Where `perf-PID.map` files are read from (`/tmp`).
    pub perf_map_dir: PathBuf,
    /// Keep only samples with `start <= time < end` (nanoseconds, the recording's clock).
    pub time: Option<(u64, u64)>,
    /// Worker threads for symbolization (0: one per CPU).
    pub threads: usize,
}

impl Default for ProfileOptions {
    fn default() -> Self {
        ProfileOptions {
            symfs: None,
            search: SearchPaths::default(),
            perf_map_dir: PathBuf::from("/tmp"),
            time: None,
            threads: 0,
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
    /// At least one sample has a non-zero retire latency (see [`super::latency`]).
    pub has_latency: bool,
    /// Samples whose group read held TopDown members.
    pub topdown_samples: u64,
}

/// A distinct code location and what it resolved to.
#[derive(Debug, Clone)]
pub struct Loc {
    /// The address (for a caller frame, the return address minus one).
    pub addr: u64,
    /// A kernel address.
    pub kernel: bool,
    /// What perf shows as the Shared Object: file name, `[kernel.kallsyms]`, `[module]`,
    /// `[unknown]`.
    pub dso: Arc<str>,
    /// The address inside the file (SVMA; for the kernel the address itself).
    pub file_addr: u64,
    /// The containing symbol.
    pub sym: Option<Arc<str>>,
    /// Offset of the address into `sym`.
    pub sym_offset: u64,
    /// Inline chain, innermost first; empty without DWARF.
    pub frames: Vec<Frame>,
    /// Why `sym` is `None`.
    pub unresolved: Option<Unresolved>,
}

impl Loc {
    /// The symbol as a report shows it: the name, or the address in hex when unresolved.
    pub fn sym_name(&self) -> String {
        match &self.sym {
            Some(s) => s.to_string(),
            None => format!("{:#x}", self.addr),
        }
    }

    /// `file:line` of the innermost frame; `full` keeps the directories.
    pub fn srcline(&self, full: bool) -> Option<String> {
        let f = self.frames.first()?;
        let file = f.file.as_deref()?;
        let file = if full {
            file
        } else {
            file.rsplit('/').next().unwrap_or(file)
        };
        Some(format!("{file}:{}", f.line))
    }
}

/// Sentinel for "none" in the compact sample fields.
pub const NONE: u32 = u32::MAX;

/// One kept sample, compact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfSample {
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
    /// Time (0 when not sampled).
    pub time: u64,
    /// Period: the event count this sample stands for.
    pub period: u64,
    /// The sampled location, index into [`Profile::locs`].
    pub leaf: u32,
    /// Start of the callers in [`Profile::chains`] (outward from the leaf).
    pub chain_start: u32,
    /// Number of callers.
    pub chain_len: u32,
    /// TopDown deltas, index into [`Profile::topdown`], or `NONE`.
    pub td: u32,
    /// Retire latency in cycles, or `NONE`.
    pub retire_lat: u32,
}

impl ProfSample {
    /// The retire latency, if the sample has one.
    pub fn latency(&self) -> Option<u16> {
        (self.retire_lat != NONE).then_some(self.retire_lat as u16)
    }
}

/// Fraction of samples that resolved, and why the others did not.
#[derive(Debug, Clone, Default)]
pub struct Resolution {
    /// Samples whose leaf resolved to a symbol.
    pub resolved: u64,
    /// Samples per reason, with the dso most often affected.
    pub unresolved: Vec<(Unresolved, u64, String)>,
}

/// Resolved samples of one recording.
#[derive(Debug, Default)]
pub struct Profile {
    /// Sampling events.
    pub events: Vec<EventInfo>,
    /// Kept samples in time order.
    pub samples: Vec<ProfSample>,
    /// Caller location indexes of all samples.
    pub chains: Vec<u32>,
    /// Distinct locations.
    pub locs: Vec<Loc>,
    /// TopDown deltas of the samples that have them.
    pub topdown: Vec<TdCounts>,
    /// Thread names.
    pub comms: Vec<Arc<str>>,
    /// Some sample had a callchain.
    pub callchains: bool,
    /// Group reads with `time_running < time_enabled`.
    pub multiplexed: u64,
    /// Records that failed to decode (with the first error).
    pub decode_errors: (u64, Option<String>),
    /// Samples outside `--time`.
    pub filtered_by_time: u64,
    /// Where samples resolved.
    pub resolution: Resolution,
    /// Files that were on disk but differ from the recorded build-id (path).
    pub build_id_mismatches: Vec<String>,
    /// One-line warnings for the report header.
    pub warnings: Vec<String>,
}

impl Profile {
    /// The callers of a sample, outward.
    pub fn callers(&self, s: &ProfSample) -> &[u32] {
        let a = s.chain_start as usize;
        &self.chains[a..a + s.chain_len as usize]
    }

    /// The TopDown deltas of a sample.
    pub fn td(&self, s: &ProfSample) -> Option<&TdCounts> {
        (s.td != NONE).then(|| &self.topdown[s.td as usize])
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum LocKey {
    File(FileIdx, u64),
    Kernel(u64),
    Anon(u32, FileIdx, u64),
    Unmapped(u32, u64),
}

/// Pass-1 state.
struct Replay<'r> {
    rec: &'r Recording,
    maps: AddressSpaces,
    comms: Comms,
    comm_ids: HashMap<String, u32>,
    /// tid → comm id, valid until the next COMM/FORK of that tid.
    tid_comm: FastMap<u32, u32>,
    keys: FastMap<LocKey, u32>,
    key_list: Vec<(LocKey, u64)>,
    tracker: DeltaTracker,
    td_of_id: HashMap<u64, TdEvent>,
    event_slot: Vec<Option<u16>>,
    inherit: Vec<bool>,
}

impl Replay<'_> {
    fn loc(&mut self, pid: u32, addr: u64, kernel: bool) -> u32 {
        let key = if kernel || kallsyms::is_kernel_address(addr) {
            LocKey::Kernel(addr)
        } else {
            match self.maps.find(pid, addr) {
                Some(m) if self.maps.file(m.file).is_anonymous() => LocKey::Anon(pid, m.file, addr),
                Some(m) => LocKey::File(m.file, m.file_offset(addr)),
                None => LocKey::Unmapped(pid, addr),
            }
        };
        let next = self.key_list.len() as u32;
        let id = *self.keys.entry(key).or_insert(next);
        if id == next {
            self.key_list.push((key, addr));
        }
        id
    }

    fn comm(&mut self, comms: &mut Vec<Arc<str>>, tid: u32) -> u32 {
        if let Some(&c) = self.tid_comm.get(&tid) {
            return c;
        }
        let name = self.comms.name(tid);
        let c = match self.comm_ids.get(&name) {
            Some(&c) => c,
            None => {
                let c = comms.len() as u32;
                comms.push(name.as_str().into());
                self.comm_ids.insert(name, c);
                c
            }
        };
        self.tid_comm.insert(tid, c);
        c
    }
}

/// Builds the profile of a recording.
pub fn build(rec: &Recording, opts: &ProfileOptions, progress: &mut dyn FnMut(u64)) -> Profile {
    let meta = rec.meta();
    let mut p = Profile::default();
    let mut event_slot = vec![None; meta.events.len()];
    let mut inherit = vec![false; meta.events.len()];
    for (i, e) in meta.events.iter().enumerate() {
        inherit[i] = e.attr.has(flag::INHERIT);
        if e.role == "sampler" || (meta.events.len() == 1 && e.role != "tracking") {
            event_slot[i] = Some(p.events.len() as u16);
            p.events.push(EventInfo {
                index: i,
                name: e.name.clone(),
                pmu: e.pmu.clone(),
                weight_struct: e.attr.sample_type & st::WEIGHT_STRUCT != 0,
                precise: e.attr.precise_ip() > 0,
                ..EventInfo::default()
            });
        }
    }
    let td_of_id = meta
        .events
        .iter()
        .filter_map(|e| Some((e, TdEvent::from_name(&e.name)?)))
        .flat_map(|(e, k)| e.ids.iter().map(move |i| (i.id, k)))
        .collect();
    let mut r = Replay {
        rec,
        maps: AddressSpaces::new(),
        comms: Comms::default(),
        comm_ids: HashMap::new(),
        tid_comm: FastMap::default(),
        keys: FastMap::default(),
        key_list: Vec::new(),
        tracker: DeltaTracker::new(),
        td_of_id,
        event_slot,
        inherit,
    };
    let mut nonzero_lat = vec![false; p.events.len()];
    let mut seen = 0u64;
    let mut frames: Vec<u64> = Vec::new();
    rec.for_each(|rec_result| {
        let record = match rec_result {
            Ok(x) => x,
            Err(e) => {
                p.decode_errors.0 += 1;
                p.decode_errors.1.get_or_insert_with(|| e.to_string());
                return;
            }
        };
        let s = match &record {
            Record::Sample(s) => s,
            other => {
                r.maps.apply(other);
                r.comms.apply(other);
                match other {
                    Record::Comm(c) => {
                        r.tid_comm.remove(&c.tid);
                    }
                    Record::Fork(t) => {
                        r.tid_comm.remove(&t.tid);
                    }
                    _ => {}
                }
                return;
            }
        };
        seen += 1;
        if seen.is_multiple_of(65536) {
            progress(seen);
        }
        let Some(ev) = r.rec.event_of_record(&record) else {
            return;
        };
        let Some(slot) = r.event_slot[ev] else {
            return;
        };
        let time = s.time.unwrap_or(0);
        if let Some((a, b)) = opts.time
            && !(a <= time && time < b)
        {
            p.filtered_by_time += 1;
            return;
        }
        let (pid, tid) = (s.pid.unwrap_or(0), s.tid.unwrap_or(0));
        let ip = s.ip.unwrap_or(0);
        let kernel_mode = s.cpumode() == misc::KERNEL;
        let leaf = r.loc(pid, ip, kernel_mode);
        // Callers: the chain without markers and without its first entry when that is the ip.
        frames.clear();
        let chain_start = p.chains.len() as u32;
        if let Some(chain) = &s.callchain {
            p.callchains = true;
            let mut kernel = kernel_mode;
            let mut first = true;
            for a in chain.iter() {
                if context::is_marker(a) {
                    kernel = a == context::KERNEL;
                    continue;
                }
                if first && a == ip {
                    first = false;
                    continue;
                }
                first = false;
                frames.push(a);
                let l = r.loc(pid, a.saturating_sub(1), kernel);
                p.chains.push(l);
            }
        }
        let chain_len = p.chains.len() as u32 - chain_start;
        let td = match (&s.read, s.event_id()) {
            (Some(read), Some(id)) => {
                let per_thread = r.inherit[ev].then_some(tid);
                let td_of_id = &r.td_of_id;
                r.tracker
                    .delta(per_thread, id, read, |m| td_of_id.get(&m).copied())
            }
            _ => None,
        };
        let td = match td {
            Some(c) => {
                p.events[usize::from(slot)].topdown_samples += 1;
                p.topdown.push(c);
                (p.topdown.len() - 1) as u32
            }
            None => NONE,
        };
        let retire_lat = match s.weight_struct() {
            Some(w) => {
                nonzero_lat[usize::from(slot)] |= w.retire_lat != 0;
                u32::from(w.retire_lat)
            }
            None => NONE,
        };
        let period = s.period.unwrap_or(1);
        let e = &mut p.events[usize::from(slot)];
        e.samples += 1;
        e.period += period;
        let comm = r.comm(&mut p.comms, tid);
        p.samples.push(ProfSample {
            event: slot,
            cpu: s.cpu.unwrap_or(NONE),
            pid,
            tid,
            comm,
            time,
            period,
            leaf,
            chain_start,
            chain_len,
            td,
            retire_lat,
        });
    });
    // An event whose latencies are all zero has none (no TPEBS): drop them.
    for (i, e) in p.events.iter_mut().enumerate() {
        e.has_latency = nonzero_lat[i];
    }
    for s in &mut p.samples {
        if !nonzero_lat[usize::from(s.event)] {
            s.retire_lat = NONE;
        }
    }
    p.multiplexed = r.tracker.multiplexed;
    if r.tracker.resets > 0 {
        p.warnings.push(format!(
            "{} group reads went backwards (counter reset); their values were taken as deltas",
            r.tracker.resets
        ));
    }
    let (locs, mismatches) = symbolize(rec, &r.maps, &r.key_list, opts);
    p.locs = locs;
    p.build_id_mismatches = mismatches;
    p.resolution = resolution(&p);
    p
}

fn resolution(p: &Profile) -> Resolution {
    let mut res = Resolution::default();
    let mut why: HashMap<Unresolved, (u64, HashMap<Arc<str>, u64>)> = HashMap::new();
    for s in &p.samples {
        let l = &p.locs[s.leaf as usize];
        match l.unresolved {
            None => res.resolved += 1,
            Some(u) => {
                let e = why.entry(u).or_default();
                e.0 += 1;
                *e.1.entry(l.dso.clone()).or_default() += 1;
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

/// The build-ids recorded for mapped files (`build-ids` side block: `hex path` lines).
fn recorded_build_ids(rec: &Recording) -> HashMap<PathBuf, Vec<u8>> {
    let text = rec.side("build-ids").unwrap_or_default();
    String::from_utf8_lossy(&text)
        .lines()
        .filter_map(|l| {
            let (hex, path) = l.split_once(' ')?;
            let bytes = (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
                .collect::<Option<Vec<u8>>>()?;
            Some((PathBuf::from(path), bytes))
        })
        .collect()
}

fn unresolved_loc(addr: u64, kernel: bool, dso: Arc<str>, why: Unresolved) -> Loc {
    Loc {
        addr,
        kernel,
        dso,
        file_addr: addr,
        sym: None,
        sym_offset: 0,
        frames: Vec::new(),
        unresolved: Some(why),
    }
}

fn symbolize(
    rec: &Recording,
    maps: &AddressSpaces,
    keys: &[(LocKey, u64)],
    opts: &ProfileOptions,
) -> (Vec<Loc>, Vec<String>) {
    let unknown: Arc<str> = "[unknown]".into();
    let ksyms = rec.kernel_symbols();
    let mut perf_maps: HashMap<u32, Option<PerfMap>> = HashMap::new();
    let mut locs: Vec<Option<Loc>> = vec![None; keys.len()];
    let mut by_file: HashMap<FileIdx, Vec<(usize, u64)>> = HashMap::new();
    let kernel_dso: Arc<str> = kallsyms::KERNEL_DSO.into();
    let mut module_dsos: HashMap<Arc<str>, Arc<str>> = HashMap::new();
    for (i, &(key, addr)) in keys.iter().enumerate() {
        locs[i] = Some(match key {
            LocKey::File(f, off) => {
                by_file.entry(f).or_default().push((i, off));
                continue;
            }
            LocKey::Kernel(a) => match ksyms.lookup(a) {
                Some((s, off)) => {
                    let dso = match &s.module {
                        Some(m) => module_dsos
                            .entry(m.clone())
                            .or_insert_with(|| format!("[{m}]").into())
                            .clone(),
                        None => kernel_dso.clone(),
                    };
                    Loc {
                        addr: a,
                        kernel: true,
                        dso,
                        file_addr: a,
                        sym: Some(s.name.clone()),
                        sym_offset: off,
                        frames: Vec::new(),
                        unresolved: None,
                    }
                }
                None => {
                    let why = if ksyms.is_empty() {
                        rec.kernel_unresolved()
                    } else {
                        Unresolved::NoSymbols
                    };
                    unresolved_loc(a, true, kernel_dso.clone(), why)
                }
            },
            LocKey::Anon(pid, f, a) => {
                let dso: Arc<str> = maps.file(f).short.clone();
                let pm = perf_maps
                    .entry(pid)
                    .or_insert_with(|| PerfMap::load(&opts.perf_map_dir, pid));
                match pm.as_ref().and_then(|m| m.lookup(a)) {
                    Some(j) => Loc {
                        addr: a,
                        kernel: false,
                        dso: format!("[JIT] tid {pid}").into(),
                        file_addr: a,
                        sym: Some(j.name.clone()),
                        sym_offset: a - j.start,
                        frames: Vec::new(),
                        unresolved: None,
                    },
                    None => unresolved_loc(a, false, dso, Unresolved::Anonymous),
                }
            }
            LocKey::Unmapped(_, a) => {
                unresolved_loc(addr.max(a), false, unknown.clone(), Unresolved::Unmapped)
            }
        });
    }
    let build_ids = recorded_build_ids(rec);
    let mut jobs: Vec<(FileIdx, Vec<(usize, u64)>)> = by_file.into_iter().collect();
    jobs.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .min(jobs.len())
    .max(1);
    let next = AtomicUsize::new(0);
    let results: Vec<Vec<(usize, Loc, Option<String>)>> = std::thread::scope(|sc| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                sc.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let j = next.fetch_add(1, Ordering::Relaxed);
                        let Some((f, addrs)) = jobs.get(j) else {
                            break;
                        };
                        let file = maps.file(*f);
                        let path = on_disk(&file.path, opts.symfs.as_deref());
                        let expected = build_ids.get(&*file.path).map(Vec::as_slice);
                        let bin = if file.is_pseudo() {
                            Err(Unresolved::BinaryMissing)
                        } else {
                            Binary::load(&path, expected, &opts.search)
                        };
                        let mut mismatch = matches!(bin, Err(Unresolved::BuildIdMismatch))
                            .then(|| file.path.display().to_string());
                        for &(i, off) in addrs {
                            let (_, addr) = keys[i];
                            let loc = match &bin {
                                Err(why) => unresolved_loc(addr, false, file.short.clone(), *why),
                                Ok(b) => resolve_in(b, addr, off, file.short.clone()),
                            };
                            out.push((i, loc, mismatch.take()));
                        }
                    }
                    out
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_default())
            .collect()
    });
    let mut mismatches = Vec::new();
    for (i, loc, m) in results.into_iter().flatten() {
        locs[i] = Some(loc);
        mismatches.extend(m);
    }
    mismatches.sort();
    let locs = locs
        .into_iter()
        .zip(keys)
        .map(|(l, &(_, addr))| {
            // A worker that panicked leaves its locations unset.
            l.unwrap_or_else(|| unresolved_loc(addr, false, unknown.clone(), Unresolved::NoSymbols))
        })
        .collect();
    (locs, mismatches)
}

fn resolve_in(b: &Binary, addr: u64, offset: u64, dso: Arc<str>) -> Loc {
    let Some(svma) = b.svma(offset, 0, 0) else {
        return unresolved_loc(addr, false, dso, Unresolved::NoSymbols);
    };
    match b.symbolize(svma) {
        Ok(s) => {
            let (sym, off) = match (&s.sym, s.frames.last()) {
                (Some(sym), _) => (Some(sym.name.clone()), svma.wrapping_sub(sym.start)),
                (None, Some(f)) => (f.function.clone(), 0),
                (None, None) => (None, 0),
            };
            Loc {
                addr,
                kernel: false,
                dso,
                file_addr: svma,
                unresolved: sym.is_none().then_some(Unresolved::NoSymbols),
                sym,
                sym_offset: off,
                frames: s.frames,
            }
        }
        Err(why) => Loc {
            file_addr: svma,
            ..unresolved_loc(addr, false, dso, why)
        },
    }
}

/// Where a recorded path is found on this machine (under `--symfs` when given).
fn on_disk(path: &Path, symfs: Option<&Path>) -> PathBuf {
    match symfs {
        Some(root) => root.join(path.strip_prefix("/").unwrap_or(path)),
        None => path.to_path_buf(),
    }
}
