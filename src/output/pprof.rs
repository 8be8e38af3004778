//! pprof export: a profile as gzip-compressed protobuf in google/pprof's `profile.proto`
//! format, for `go tool pprof` and the other tools that read it.
//!
//! The messages are written by hand in [`proto`] with prost's derive, field numbers as in
//! `profile.proto` (nothing is generated at build time, so no `protoc` is needed).
//!
//! **Value columns.** pprof gives every sample the same list of values, one per
//! `sample_type`. hrec samples several events at once (hybrid parts sample `cpu_core` and
//! `cpu_atom` cycles; `-e` takes lists), and their counts are in different units of work, so
//! they cannot share one column: each event gets its own column with the periods (the event
//! count each sample stands for), and a sample puts its period into its own event's column
//! and zero into the others. A CPU-time clock (`cpu-clock`, `task-clock`: software events 0
//! and 1, whose period is nanoseconds of CPU time) is the column `(cpu, nanoseconds)`, as
//! Go's CPU profiles and `go tool pprof` spell it, so pprof shows times (`Total samples =
//! 280ms`); any other event is `(<event name>, count)`. Names that repeat get `#2`, `#3`
//! (two clock events: `cpu`, `cpu#2`); the `event` label keeps the event's own name. The
//! `offcpu-time` event of a recording with switch records (`record --off-cpu`, perf's
//! `--switch-events`; [`crate::offcpu`]), whose period is the nanoseconds a thread
//! spent off the CPU, is the column `(off_cpu, nanoseconds)`, beside the on-CPU columns: its
//! samples are the stacks threads left the CPU with (`[preempted]` and `[no stack]` are
//! functions of their own), zero in `cpu`, and `cpu` plus `off_cpu` of a stack is its
//! wall-clock time when the on-CPU event is a clock (`-sample_index=off_cpu` shows where
//! threads waited). Then
//! come `(samples, count)`, one per sample of any event, and, when some event has retire
//! latencies, `(retire-latency, cycles)` with the sum of the samples' retire latencies.
//! Summing a column over all samples gives exactly the event's total in `hrec report`. The
//! first event's column is `default_sample_type` (`cpu` for a clock), as the first table is in
//! the report; `go tool pprof -sample_index=NAME` picks another. Samples with the same stack,
//! event, thread and CPU are merged into one (values add up).
//!
//! **Memory accesses.** A memory recording (samples with data sources and weights: `hrec mem
//! record`, `hrec c2c record`, perf mem's; page faults with `record -d`; the choice is
//! `commands::export`'s) is exported with each sample's access as labels, named as the report's sort keys name them: `data_address` (hex),
//! `data_symbol` and `data_object` (`symbol_daddr` without the mode letter, `dso_daddr`),
//! `data_type` and `data_typeoff` where DWARF types the access (`type`, `typeoff`), and
//! `mem`, `snoop`, `tlb`, `locked` from the data source (none for a sample without a data
//! address or data source); samples merge only when their
//! accesses agree too (`go tool pprof -tagfocus=data_object=memwork`, `-tags`). When the
//! accesses have weights (the load latency of PEBS loads), a `(load-latency, cycles)` column
//! sums them, as `report --mem-mode` weighs its rows (`-sample_index=load-latency`).
//!
//! **Period, duration, time.** `period_type` is the first event's column type and unit.
//! `profile.proto` defines `period` as "the number of events between sampled occurrences":
//! with a fixed period (`record -c N`) that is N; in frequency mode (`-F`) the kernel varies
//! the period, and the number that fits the definition is the mean period of the first
//! event's samples (its total over its sample count, rounded), which for a clock at `-F 4000`
//! is about 250000 ns, as Go writes 10000000 ns for its 100 Hz. It is not left 0: readers
//! such as pprof's merge compare it, and 0 says nothing. `duration_nanos` is the span from
//! the first to the last sample (the recording's sample-time header, what `perf report
//! --header` calls the sample duration and `hrec script --ns` shows), else the recording's
//! duration when no sample has a time. `time_nanos` is the recording's wall-clock start: an
//! hrec file's `start_time_unix_ns`; for perf.data, which stores no start time, the first
//! sample's time on the wall clock through `HEADER_CLOCK_DATA` when `perf record -k CLOCK`
//! wrote it, else 0 (unknown).
//!
//! **Locations and mappings.** A `Mapping` is a file (or anonymous memory) as a process
//! mapped it: the range and file offset of its MMAP/MMAP2 record (`memory_start` = start,
//! `memory_limit` = start + len, `file_offset` = pgoff; if a later mapping overlapped part of
//! it, the part that was left), the recorded path as `filename`, and the recorded build-id
//! (from the recording's `build-ids` block: the entry with that path, else the only entry
//! with that base name). Only mappings that hold a location are written. A `Location`'s
//! address is the runtime address in its mapping (for a return address, the byte before it,
//! inside the call instruction: what hrec symbolizes, and what `profile.proto` allows for
//! non-leaf addresses), so pprof's own translation `address - memory_start + file_offset` is
//! the offset in the file, as for Go's profiles. hrec interns a location by (file, offset),
//! and with ASLR the same offset lies at other addresses in other processes: the export
//! places a location per process, through the mappings that process found its locations in
//! ([`crate::analysis::profile::Sites`]), and writes one `Location` per (location, mapping).
//! Processes that mapped the file at the same place (forked children, non-PIE binaries)
//! share the mapping and the location; two processes with different bases get two mappings
//! of the same file and two locations, each inside its own. When one process mapped the same
//! file offset twice, the mapping it used first is taken. Kernel locations are in a mapping
//! named `[kernel.kallsyms]` (modules `[name]`) whose range is the kernel text `_text` to
//! `_etext` from the recording's kallsyms (a module's from `/proc/modules` as recorded),
//! widened to hold every kernel location in it (addresses without symbols may lie outside);
//! without a recorded range, the span of its locations. Its `file_offset` is its start, as in
//! perf's kernel MMAP record, so the translation gives the address itself. Addresses outside
//! every mapping (and, in a profile not built from a recording, every location) have no
//! mapping (`mapping_id` 0), the address as recorded. The main binary (the user-space file
//! mapping with the most samples at the leaf) is `mapping[0]`. `has_functions` is set on
//! every mapping: hrec has looked up every location, and pprof re-symbolizes only mappings
//! without it, which would misattribute the addresses of unresolved locations.
//! `has_filenames`, `has_line_numbers` and `has_inline_frames` say whether any location of
//! the mapping had DWARF source information.
//!
//! **Inline frames and functions.** An inline chain becomes the location's `Line` list,
//! innermost first as addr2line prints it: when `mix` is inlined into `hot_multiply`,
//! `line[0]` is `mix` at the line in `mix`, and the last `line` is `hot_multiply` at the line
//! of the inlined call. The outermost function is named by the symbol table, as in the report
//! and the flame graph. A `Function` is a distinct (name, source file, start line); its
//! `start_line` is the `DW_AT_decl_line` of the function's DWARF subprogram (reached from an
//! inlined instance or out-of-line copy through its abstract origin; see
//! [`crate::symbol::Frame::decl_line`]), 0 without DWARF. Unresolved locations get a function
//! named like the flame graph's frames, `[dso: reason]` (`[hotspots: binary missing]`).
//!
//! **Names are demangled, `system_name` is empty.** hrec keeps only demangled names, and pprof
//! "simplifies" a function whose `system_name` equals its name by cutting everything in `<>`
//! and `()`: `core::num::<impl u64>::wrapping_add` would show as `::wrapping_add` and
//! `<Vec<T> as FromIterator<T>>::from_iter` as `::from_iter`. With no system name pprof shows
//! the names as the report does.
//!
//! **`-disasm`.** With these mappings, pprof's binutils-based tools (the standalone
//! `pprof`) find each sampled instruction at `address - memory_start + file_offset` in the
//! file and annotate its disassembly, as for Go's profiles. pprof computes a file's
//! relocation once, from the first sample address it is asked about, and asks with every
//! graph node in map order, so in a profile with several mappings `-disasm` finds a function
//! only when a node of its own mapping comes first (pprof's `nodesPerSymbol` and
//! `file.computeBase`); a profile whose locations all lie in one mapping always works. The
//! `go tool pprof` of Go's distribution disassembles with Go's own object reader instead,
//! which does not relocate position-independent binaries (its `ObjAddr` is the identity):
//! there `-disasm` finds nothing in a PIE, for hrec's profiles as for Go's own.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::analysis::hist::Filters;
use crate::analysis::profile::{NONE, Profile};
use crate::decode::datasrc::DataSrc;
use crate::recording::Recording;
use crate::symbol::kallsyms;
use crate::symbol::maps::{FileIdx, Mapping};
use crate::symbol::symbolizer::{Loc, LocKey};

/// The messages of `profile.proto` (package `perftools.profiles`), field numbers as there.
pub mod proto;

/// What the export takes from the recording besides its samples.
#[derive(Debug, Clone, Default)]
pub struct PprofMeta {
    /// Wall-clock time of the recording's start, ns since the epoch; 0 when unknown.
    pub start_time_unix_ns: u64,
    /// From the first to the last sample, else the recording's duration, in ns.
    pub duration_ns: Option<u64>,
    /// `(build-id hex, path)` of the recorded files.
    pub build_ids: Vec<(String, String)>,
    /// The first event's fixed period (`record -c N`); `None` in frequency mode.
    pub period: Option<u64>,
    /// Per profile event: a CPU-time clock (`cpu-clock`, `task-clock`), whose periods are
    /// nanoseconds.
    pub clock: Vec<bool>,
    /// The kernel's text, `[_text, _etext)`, from the recording's kernel symbols.
    pub kernel_text: Option<(u64, u64)>,
    /// Loaded modules as `/proc/modules` listed them at record time: name, start, end.
    pub modules: Vec<(String, u64, u64)>,
    /// Lines for `comment` (command line, host, warnings).
    pub comments: Vec<String>,
}

/// The modules of `/proc/modules` text (`name size refs deps state address ...`): name,
/// start, end. Lines that do not parse, and modules at address 0 (hidden addresses), are
/// left out.
pub fn parse_modules(text: &str) -> Vec<(String, u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_ascii_whitespace().collect();
            let size: u64 = f.get(1)?.parse().ok()?;
            let start = u64::from_str_radix(f.get(5)?.strip_prefix("0x")?, 16).ok()?;
            let end = start.checked_add(size)?;
            (start != 0 && size > 0).then(|| (f[0].to_string(), start, end))
        })
        .collect()
}

impl PprofMeta {
    /// Takes the start time, duration, build-ids, period, clocks, kernel ranges and comments
    /// from a recording.
    pub fn from_recording(rec: &Recording, p: &Profile) -> PprofMeta {
        let meta = rec.meta();
        let text = rec.side("build-ids").unwrap_or_default();
        let build_ids = String::from_utf8_lossy(&text)
            .lines()
            .filter_map(|l| {
                let (hex, path) = l.split_once(' ')?;
                Some((hex.to_string(), path.to_string()))
            })
            .collect();
        let period = p
            .events
            .first()
            .and_then(|e| meta.events.get(e.index))
            .filter(|e| !e.attr.freq() && e.attr.sample_period_or_freq > 0)
            .map(|e| e.attr.sample_period_or_freq);
        let clock = super::clock_events(meta, p);
        // Kernel symbols are read (for perf.data maybe all of this machine's) only when a
        // kernel location needs its mapping.
        let (kernel_text, modules) = if p.locs.iter().any(|l| l.kernel) {
            let modules = rec
                .side("modules")
                .map(|b| parse_modules(&String::from_utf8_lossy(&b)))
                .unwrap_or_default();
            (rec.kernel_symbols().text_range(), modules)
        } else {
            (None, Vec::new())
        };
        let mut comments = Vec::new();
        if !meta.hrec_version.is_empty() {
            comments.push(format!("hrec {} recording", meta.hrec_version));
        }
        if !meta.command_line.is_empty() {
            comments.push(format!("command: {}", meta.command_line.join(" ")));
        }
        if !meta.hostname.is_empty() {
            comments.push(format!(
                "host: {} ({}, {}, kernel {})",
                meta.hostname, meta.cpu_model, meta.arch, meta.kernel_release
            ));
        }
        if let Some(t) = rec.trailer() {
            let lost = t.lost_samples + t.lost_samples_read;
            if lost > 0 {
                comments.push(format!("{lost} samples lost"));
            }
        }
        if let Some(why) = rec.truncated() {
            comments.push(format!("truncated recording ({why})"));
        }
        let duration_ns = rec
            .sample_time()
            .map(|(first, last)| last.saturating_sub(first))
            .or_else(|| rec.trailer().map(|t| t.duration_ns).filter(|&d| d > 0));
        PprofMeta {
            start_time_unix_ns: rec.start_time_unix_ns().unwrap_or(0),
            duration_ns,
            build_ids,
            period,
            clock,
            kernel_text,
            modules,
            comments,
        }
    }
}

/// The string table under construction.
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings {
            table: Vec::new(),
            index: HashMap::new(),
        };
        s.id("");
        s
    }

    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The function name of an unresolved location, as the flame graph labels it.
pub fn unresolved_name(l: &Loc) -> String {
    let why = l.unresolved.map(|u| u.to_string()).unwrap_or_default();
    let dso = l.dso.trim_start_matches('[').trim_end_matches(']');
    format!("[{dso}: {why}]")
}

/// What a pprof mapping stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum MapKey<'p> {
    /// A file or anonymous memory as a process mapped it (processes that mapped it at the
    /// same place share it).
    Mapped(Mapping),
    /// The kernel image or a module, by dso name.
    Kernel(&'p str),
}

/// Locations, functions and mappings, added as samples reference them.
struct Tables<'p> {
    p: &'p Profile,
    meta: &'p PprofMeta,
    strings: Strings,
    /// Location id per (profile location, mapping id).
    loc_ids: HashMap<(u32, u64), u64>,
    locations: Vec<proto::Location>,
    functions: Vec<proto::Function>,
    function_ids: HashMap<(String, String, u32), u64>,
    mappings: Vec<proto::Mapping>,
    mapping_ids: HashMap<MapKey<'p>, u64>,
    /// Per mapping (index = id - 1): samples with the leaf in it, and whether it is a
    /// user-space file (to find the main binary).
    mapping_samples: Vec<(u64, bool)>,
    /// Kernel mappings: id, and the lowest and highest address of their locations.
    kernel_spans: Vec<(u64, u64, u64)>,
    /// The mappings each process found locations in, per file.
    proc_maps: HashMap<(u32, FileIdx), Vec<Mapping>>,
    /// Build-ids by recorded path, and by base name when only one recorded file has it.
    ids_by_path: HashMap<&'p str, &'p str>,
    ids_by_base: HashMap<&'p str, Option<&'p str>>,
}

impl<'p> Tables<'p> {
    fn function(&mut self, name: &str, file: &str, start_line: u32) -> u64 {
        let key = (name.to_string(), file.to_string(), start_line);
        if let Some(&id) = self.function_ids.get(&key) {
            return id;
        }
        let id = self.functions.len() as u64 + 1;
        let f = proto::Function {
            id,
            name: self.strings.id(name),
            system_name: 0,
            filename: self.strings.id(file),
            start_line: i64::from(start_line),
        };
        self.functions.push(f);
        self.function_ids.insert(key, id);
        id
    }

    fn build_id(&self, path: &str) -> &'p str {
        if let Some(&hex) = self.ids_by_path.get(path) {
            return hex;
        }
        let base = path.rsplit('/').next().unwrap_or(path);
        self.ids_by_base.get(base).copied().flatten().unwrap_or("")
    }

    /// Where profile location `i` lies in process `pid`: its mapping and runtime address
    /// (for a return address, the byte before it, inside the call instruction).
    fn place(&self, i: u32, pid: u32) -> (Option<MapKey<'p>>, u64) {
        let p: &'p Profile = self.p;
        let l = &p.locs[i as usize];
        let Some(&(key, frame)) = p.sites.keys.get(i as usize) else {
            return (None, l.addr);
        };
        let maps = |f: FileIdx| self.proc_maps.get(&(pid, f)).map_or(&[][..], Vec::as_slice);
        match key {
            LocKey::Kernel(a) => (Some(MapKey::Kernel(&l.dso)), a),
            LocKey::File(f, off) => maps(f)
                .iter()
                .find(|m| m.pgoff <= off && off - m.pgoff < m.end - m.start)
                .map_or((None, frame.lookup()), |m| {
                    (Some(MapKey::Mapped(*m)), m.start + (off - m.pgoff))
                }),
            LocKey::Anon(_, f, a) => (
                maps(f)
                    .iter()
                    .find(|m| m.start <= a && a < m.end)
                    .map(|m| MapKey::Mapped(*m)),
                a,
            ),
            LocKey::Unmapped(_, a) => (None, a),
            LocKey::Mark(_) => (None, 0),
        }
    }

    fn mapping(&mut self, key: MapKey<'p>) -> u64 {
        if let Some(&id) = self.mapping_ids.get(&key) {
            return id;
        }
        let id = self.mappings.len() as u64 + 1;
        let (m, user) = match key {
            MapKey::Mapped(m) => {
                let file = self.p.sites.files.get(m.file.0 as usize);
                let path = file.map_or_else(String::new, |f| f.path.to_string_lossy().into_owned());
                let user = file.is_some_and(|f| !f.is_anonymous() && !f.is_pseudo());
                let build_id = self.build_id(&path);
                (
                    proto::Mapping {
                        id,
                        memory_start: m.start,
                        memory_limit: m.end,
                        file_offset: m.pgoff,
                        filename: self.strings.id(&path),
                        build_id: self.strings.id(build_id),
                        has_functions: true,
                        ..Default::default()
                    },
                    user,
                )
            }
            MapKey::Kernel(dso) => {
                // The range is set once every location is known ([`Tables::kernel_ranges`]).
                let build_id = self.ids_by_path.get(dso).copied().unwrap_or("");
                self.kernel_spans.push((id, u64::MAX, 0));
                (
                    proto::Mapping {
                        id,
                        filename: self.strings.id(dso),
                        build_id: self.strings.id(build_id),
                        has_functions: true,
                        ..Default::default()
                    },
                    false,
                )
            }
        };
        self.mappings.push(m);
        self.mapping_samples.push((0, user));
        self.mapping_ids.insert(key, id);
        id
    }

    /// The location id of profile location `i` in process `pid`.
    fn location(&mut self, i: u32, pid: u32) -> u64 {
        let (key, address) = self.place(i, pid);
        let mapping_id = key.map_or(0, |k| self.mapping(k));
        if let Some(&id) = self.loc_ids.get(&(i, mapping_id)) {
            return id;
        }
        let p: &'p Profile = self.p;
        let l = &p.locs[i as usize];
        let id = self.locations.len() as u64 + 1;
        let mut line = Vec::new();
        match &l.sym {
            None => line.push(proto::Line {
                function_id: self.function(&unresolved_name(l), "", 0),
                ..Default::default()
            }),
            Some(sym) if l.frames.is_empty() => line.push(proto::Line {
                function_id: self.function(sym, "", 0),
                ..Default::default()
            }),
            Some(sym) => {
                let n = l.frames.len();
                for (k, f) in l.frames.iter().enumerate() {
                    let name = if k + 1 == n {
                        &**sym
                    } else {
                        f.function.as_deref().unwrap_or("??")
                    };
                    line.push(proto::Line {
                        function_id: self.function(
                            name,
                            f.file.as_deref().unwrap_or(""),
                            f.decl_line,
                        ),
                        line: i64::from(f.line),
                        column: 0,
                    });
                }
            }
        }
        if mapping_id != 0 {
            let m = &mut self.mappings[mapping_id as usize - 1];
            m.has_filenames |= l.frames.iter().any(|f| f.file.is_some());
            m.has_line_numbers |= l.frames.iter().any(|f| f.line > 0);
            m.has_inline_frames |= !l.frames.is_empty();
            if let Some(s) = self.kernel_spans.iter_mut().find(|s| s.0 == mapping_id) {
                s.1 = s.1.min(address);
                s.2 = s.2.max(address);
            }
        }
        self.locations.push(proto::Location {
            id,
            mapping_id,
            address,
            line,
            is_folded: false,
        });
        self.loc_ids.insert((i, mapping_id), id);
        id
    }

    /// The kernel mappings' ranges: the kernel text or the module as recorded, widened to
    /// hold every location in it; the file offset is the start, as in perf's kernel MMAP
    /// records, so that pprof's address - start + offset is the address itself.
    fn kernel_ranges(&mut self) {
        for &(id, lo, hi) in &self.kernel_spans {
            let m = &mut self.mappings[id as usize - 1];
            let name = &self.strings.table[m.filename as usize];
            let recorded = if name == kallsyms::KERNEL_DSO {
                self.meta.kernel_text
            } else {
                let module = name.trim_start_matches('[').trim_end_matches(']');
                self.meta
                    .modules
                    .iter()
                    .find(|(n, _, _)| n == module)
                    .map(|&(_, s, e)| (s, e))
            };
            let (start, limit) = match recorded {
                Some((s, e)) => (s.min(lo), e.max(hi.saturating_add(1))),
                None => (lo, hi.saturating_add(1)),
            };
            m.memory_start = start;
            m.memory_limit = limit;
            m.file_offset = start;
        }
    }
}

/// Samples merged by (event, comm, pid, tid, cpu, memory access, stack).
type SampleKey = (u16, u32, u32, u32, u32, u32, u32);

/// The labels of memory access `mem` ([`Profile::mems`]; see the module docs).
fn mem_labels(p: &Profile, strings: &mut Strings, mem: u32) -> Vec<proto::Label> {
    let Some(m) = p.mems.get(mem as usize) else {
        return Vec::new();
    };
    let mut labels = Vec::new();
    let mut push = |strings: &mut Strings, key: &str, value: &str| {
        labels.push(proto::Label {
            key: strings.id(key),
            str: strings.id(value),
            ..Default::default()
        })
    };
    // No address (a clock's sample in a recording with addresses) is no label.
    if let Some(d) = p.data_locs.get(m.daddr as usize).filter(|_| m.addr != 0) {
        push(strings, "data_address", &format!("{:#x}", m.addr));
        push(strings, "data_symbol", &d.name_at(m.addr));
        push(strings, "data_object", &d.dso);
        if let Some(t) = &d.data_type {
            push(strings, "data_type", &t.type_name);
            push(strings, "data_typeoff", &t.typeoff());
        }
    }
    let src = DataSrc(m.data_src);
    if src != DataSrc::NONE && m.data_src != 0 {
        push(strings, "mem", &src.mem_name());
        push(strings, "snoop", &src.snoop_name());
        push(strings, "tlb", &src.tlb_name());
        push(strings, "locked", src.locked_name());
    }
    labels
}

/// Builds the pprof profile of the samples that pass `filters`.
pub fn build(p: &Profile, meta: &PprofMeta, filters: &Filters) -> proto::Profile {
    let mut ids_by_base: HashMap<&str, Option<&str>> = HashMap::new();
    let mut ids_by_path: HashMap<&str, &str> = HashMap::new();
    for (hex, path) in &meta.build_ids {
        let base = path.rsplit('/').next().unwrap_or(path);
        ids_by_base
            .entry(base)
            .and_modify(|v| *v = None)
            .or_insert(Some(hex.as_str()));
        ids_by_path.insert(path.as_str(), hex.as_str());
    }
    let mut proc_maps: HashMap<(u32, FileIdx), Vec<Mapping>> = HashMap::new();
    for &(pid, m) in &p.sites.mappings {
        proc_maps.entry((pid, m.file)).or_default().push(m);
    }
    let mut t = Tables {
        p,
        meta,
        strings: Strings::new(),
        loc_ids: HashMap::new(),
        locations: Vec::new(),
        functions: Vec::new(),
        function_ids: HashMap::new(),
        mappings: Vec::new(),
        mapping_ids: HashMap::new(),
        mapping_samples: Vec::new(),
        kernel_spans: Vec::new(),
        proc_maps,
        ids_by_path,
        ids_by_base,
    };
    // Value columns: one per event (clocks as `cpu`; duplicate names get `#2`, `#3`),
    // samples, retire latency.
    let count = t.strings.id("count");
    let nanoseconds = t.strings.id("nanoseconds");
    let is_clock = |k: usize| meta.clock.get(k).copied().unwrap_or(false);
    let is_time = |k: usize| is_clock(k) || p.events[k].is_off_cpu();
    let mut names: Vec<String> = Vec::new();
    for (k, e) in p.events.iter().enumerate() {
        let base = if is_clock(k) {
            "cpu"
        } else if e.is_off_cpu() {
            "off_cpu"
        } else {
            &e.name
        };
        let mut name = base.to_string();
        let mut n = 2;
        while names.contains(&name) {
            name = format!("{base}#{n}");
            n += 1;
        }
        names.push(name);
    }
    let mut sample_type: Vec<proto::ValueType> = names
        .iter()
        .enumerate()
        .map(|(k, n)| proto::ValueType {
            r#type: t.strings.id(n),
            unit: if is_time(k) { nanoseconds } else { count },
        })
        .collect();
    let samples_col = sample_type.len();
    sample_type.push(proto::ValueType {
        r#type: t.strings.id("samples"),
        unit: count,
    });
    let lat_col = p.events.iter().any(|e| e.has_latency).then(|| {
        sample_type.push(proto::ValueType {
            r#type: t.strings.id("retire-latency"),
            unit: t.strings.id("cycles"),
        });
        sample_type.len() - 1
    });
    let load_col = p.mems.iter().any(|m| m.load_latency().is_some()).then(|| {
        sample_type.push(proto::ValueType {
            r#type: t.strings.id("load-latency"),
            unit: t.strings.id("cycles"),
        });
        sample_type.len() - 1
    });
    let columns = sample_type.len();

    let mut stacks: HashMap<Vec<u64>, u32> = HashMap::new();
    let mut merged: HashMap<SampleKey, usize> = HashMap::new();
    let mut samples: Vec<(SampleKey, Vec<u64>, Vec<i64>)> = Vec::new();
    let mut stack: Vec<u64> = Vec::new();
    for s in &p.groups {
        if !filters.keep(p, s) {
            continue;
        }
        stack.clear();
        stack.push(t.location(s.leaf, s.pid));
        for &c in p.callers(s) {
            stack.push(t.location(c, s.pid));
        }
        let leaf_mapping = t.locations[stack[0] as usize - 1].mapping_id;
        if leaf_mapping != 0 {
            t.mapping_samples[leaf_mapping as usize - 1].0 += s.samples;
        }
        let stack_id = match stacks.get(stack.as_slice()) {
            Some(&id) => id,
            None => {
                let id = stacks.len() as u32;
                stacks.insert(stack.clone(), id);
                id
            }
        };
        let key = (s.event, s.comm, s.pid, s.tid, s.cpu, s.mem, stack_id);
        let at = *merged.entry(key).or_insert_with(|| {
            samples.push((key, stack.clone(), vec![0; columns]));
            samples.len() - 1
        });
        let v = &mut samples[at].2;
        let ev = usize::from(s.event);
        v[ev] = v[ev].saturating_add(to_i64(s.period));
        v[samples_col] = v[samples_col].saturating_add(to_i64(s.samples));
        if let (Some(c), Some(lat)) = (lat_col, p.latency(s)) {
            v[c] = v[c].saturating_add(to_i64(lat.sum()));
        }
        if let (Some(c), Some(lat)) = (
            load_col,
            p.mems.get(s.mem as usize).and_then(|m| m.load_latency()),
        ) {
            v[c] = v[c].saturating_add(to_i64(lat.saturating_mul(s.samples)));
        }
    }
    t.kernel_ranges();

    let keys = ["event", "comm", "pid", "tid", "cpu"].map(|k| t.strings.id(k));
    let event_names: Vec<i64> = p.events.iter().map(|e| t.strings.id(&e.name)).collect();
    let sample = samples
        .into_iter()
        .map(
            |((event, comm, pid, tid, cpu, mem, _), location_id, value)| {
                let mut label = vec![
                    proto::Label {
                        key: keys[0],
                        str: event_names[usize::from(event)],
                        ..Default::default()
                    },
                    proto::Label {
                        key: keys[1],
                        str: t.strings.id(&p.comms[comm as usize]),
                        ..Default::default()
                    },
                    proto::Label {
                        key: keys[2],
                        num: i64::from(pid),
                        ..Default::default()
                    },
                    proto::Label {
                        key: keys[3],
                        num: i64::from(tid),
                        ..Default::default()
                    },
                ];
                if cpu != NONE {
                    label.push(proto::Label {
                        key: keys[4],
                        str: t.strings.id(&cpu.to_string()),
                        ..Default::default()
                    });
                }
                label.extend(mem_labels(p, &mut t.strings, mem));
                proto::Sample {
                    location_id,
                    value,
                    label,
                }
            },
        )
        .collect();

    // The main binary first: the user-space file mapping with the most samples at the leaf.
    let main = t
        .mapping_samples
        .iter()
        .enumerate()
        .filter(|(_, (_, user))| *user)
        .max_by_key(|&(i, &(n, _))| (n, std::cmp::Reverse(i)))
        .map(|(i, _)| i);
    let mut mapping = t.mappings;
    if let Some(i) = main {
        let m = mapping.remove(i);
        mapping.insert(0, m);
        // Ids follow the order again.
        let mut new_id = vec![0; mapping.len() + 1];
        for (k, m) in mapping.iter_mut().enumerate() {
            new_id[m.id as usize] = k as u64 + 1;
            m.id = k as u64 + 1;
        }
        for l in &mut t.locations {
            l.mapping_id = new_id[l.mapping_id as usize];
        }
    }

    let comment = meta.comments.iter().map(|c| t.strings.id(c)).collect();
    let period_type = sample_type
        .first()
        .filter(|_| !p.events.is_empty())
        .cloned();
    // A fixed period as asked for; in frequency mode the mean period of the first event's
    // samples, the number of its units one sample stands for.
    let period = meta.period.or_else(|| {
        let e = p.events.first().filter(|e| e.samples > 0)?;
        Some(e.period.saturating_add(e.samples / 2) / e.samples)
    });
    proto::Profile {
        default_sample_type: period_type.as_ref().map_or(0, |v| v.r#type),
        sample_type,
        sample,
        mapping,
        location: t.locations,
        function: t.functions,
        time_nanos: to_i64(meta.start_time_unix_ns),
        duration_nanos: meta.duration_ns.map_or(0, to_i64),
        period_type,
        period: period.map_or(0, to_i64),
        comment,
        string_table: t.strings.table,
        ..Default::default()
    }
}

/// Writes a profile gzip-compressed, as pprof files are stored.
pub fn write_gz(profile: &proto::Profile, out: &mut dyn Write) -> io::Result<()> {
    use prost::Message as _;
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    gz.write_all(&profile.encode_to_vec())?;
    gz.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::analysis::profile::{EventInfo, Folder, SampleView, Sites};
    use crate::symbol::kallsyms::KernelSymbols;
    use crate::symbol::maps::MappedFile;
    use crate::symbol::{Frame, FrameAddress, Unresolved};
    use prost::Message as _;

    fn frame(function: &str, file: &str, line: u32, decl_line: u32) -> Frame {
        Frame {
            function: Some(function.into()),
            file: Some(file.into()),
            line,
            decl_line,
        }
    }

    fn loc(dso: &str, addr: u64, sym: Option<&str>, frames: Vec<Frame>) -> Loc {
        Loc {
            addr,
            kernel: false,
            dso: dso.into(),
            file_addr: addr - 0x1000,
            sym: sym.map(Arc::from),
            sym_offset: 0,
            sym_start: 0,
            frames,
            unresolved: sym.is_none().then_some(Unresolved::BinaryMissing),
            rel_addr: 0,
            dso_path: Arc::default(),
            span: None,
        }
    }

    fn file(path: &str) -> MappedFile {
        MappedFile {
            path: Path::new(path).into(),
            short: path.rsplit('/').next().unwrap_or(path).into(),
            build_id: None,
        }
    }

    fn map(start: u64, end: u64, pgoff: u64, file: u32) -> Mapping {
        Mapping {
            start,
            end,
            pgoff,
            file: FileIdx(file),
        }
    }

    fn sample(
        event: u16,
        leaf: u32,
        callers: &[u32],
        period: u64,
        lat: Option<u16>,
    ) -> SampleView<'_> {
        SampleView {
            retire_lat: lat,
            mem: None,
            members: &[],
            ..crate::testutil::view(event, leaf, callers, period)
        }
    }

    /// Two events, an inline chain, an unresolved caller, a merged pair of samples; the
    /// process (pid 7) maps `app`'s text at 0x1000 and `libgone.so`'s at 0x7000 from file
    /// offset 0x3000.
    fn profile() -> Profile {
        let events = vec![
            EventInfo {
                name: "cpu_core/cycles/P".into(),
                ..Default::default()
            },
            EventInfo {
                index: 1,
                name: "cpu_atom/cycles/P".into(),
                ..Default::default()
            },
        ];
        let mut f = Folder::new(events, false);
        for s in [
            sample(1, 1, &[], 10, None),
            sample(0, 0, &[1], 100, Some(7)),
            sample(0, 0, &[1], 200, Some(3)),
            sample(0, 0, &[], 300, Some(0)),
            sample(1, 0, &[], 50, None),
        ] {
            f.add(&s);
        }
        let mut p = f.finish();
        assert_eq!((p.events[0].samples, p.events[0].period), (3, 600));
        assert_eq!((p.events[1].samples, p.events[1].period), (2, 60));
        assert!(p.events[0].has_latency && !p.events[1].has_latency);
        p.locs = vec![
            loc(
                "app",
                0x1100,
                Some("app::outer"),
                vec![
                    frame("app::inner", "/src/a.rs", 5, 3),
                    frame("x", "/src/a.rs", 20, 17),
                ],
            ),
            loc("libgone.so", 0x7001, None, vec![]),
        ];
        p.sites = Sites {
            keys: vec![
                (LocKey::File(FileIdx(0), 0x100), FrameAddress::Ip(0x1100)),
                // A return address: looked up (and placed) at the byte before it.
                (
                    LocKey::File(FileIdx(1), 0x3000),
                    FrameAddress::Return(0x7001),
                ),
            ],
            mappings: vec![
                (7, map(0x1000, 0x2000, 0, 0)),
                (7, map(0x7000, 0x8000, 0x3000, 1)),
            ],
            files: vec![file("/opt/bin/app"), file("/usr/lib/libgone.so")],
        };
        p.comms = vec!["app".into()];
        p
    }

    fn meta() -> PprofMeta {
        PprofMeta {
            start_time_unix_ns: 5,
            duration_ns: Some(9),
            build_ids: vec![
                ("abcd".into(), "/opt/bin/app".into()),
                ("ef01".into(), "/elsewhere/libgone.so".into()),
            ],
            period: None,
            comments: vec!["hello".into()],
            ..Default::default()
        }
    }

    #[test]
    fn columns_inline_lines_placeholders_and_merging() {
        let p = profile();
        let pb = build(&p, &meta(), &Filters::default());
        let s = |i: i64| pb.string_table[i as usize].as_str();
        assert_eq!(s(0), "");
        let types: Vec<(&str, &str)> = pb
            .sample_type
            .iter()
            .map(|v| (s(v.r#type), s(v.unit)))
            .collect();
        assert_eq!(
            types,
            [
                ("cpu_core/cycles/P", "count"),
                ("cpu_atom/cycles/P", "count"),
                ("samples", "count"),
                ("retire-latency", "cycles")
            ]
        );
        assert_eq!(s(pb.default_sample_type), "cpu_core/cycles/P");
        // Frequency mode: the first event's mean period, 600 / 3.
        let pt = pb.period_type.as_ref().unwrap();
        assert_eq!(
            (s(pt.r#type), s(pt.unit), pb.period),
            ("cpu_core/cycles/P", "count", 200)
        );
        // The two samples with the callchain share a stack: merged.
        assert_eq!(pb.sample.len(), 4);
        let totals: Vec<i64> = (0..4)
            .map(|c| pb.sample.iter().map(|x| x.value[c]).sum())
            .collect();
        assert_eq!(totals, [600, 60, 5, 10]);
        assert_eq!(pb.sample[1].value, [300, 0, 2, 10]);
        // The inline chain is one location with two lines, innermost first, the outer one
        // named by the symbol; each function starts at its declaration line.
        let l = &pb.location[1];
        let f = |id: u64| &pb.function[id as usize - 1];
        let lines: Vec<(&str, i64, i64)> = l
            .line
            .iter()
            .map(|x| {
                (
                    s(f(x.function_id).name),
                    x.line,
                    f(x.function_id).start_line,
                )
            })
            .collect();
        assert_eq!(lines, [("app::inner", 5, 3), ("app::outer", 20, 17)]);
        // The runtime address, inside its mapping.
        assert_eq!(l.address, 0x1100);
        assert_eq!(s(f(l.line[0].function_id).filename), "/src/a.rs");
        // The unresolved caller: a placeholder; no system names; the return address 0x7001
        // placed at 0x7000, inside the call.
        let u = f(pb.location[0].line[0].function_id);
        assert_eq!(
            (s(u.name), u.system_name),
            ("[libgone.so: binary missing]", 0)
        );
        assert_eq!(pb.location[0].address, 0x7000);
        // Mappings: the main binary first with its recorded path, range and build-id.
        let m = &pb.mapping[0];
        assert_eq!((s(m.filename), s(m.build_id)), ("/opt/bin/app", "abcd"));
        assert_eq!(
            (m.memory_start, m.memory_limit, m.file_offset),
            (0x1000, 0x2000, 0)
        );
        // It was the second mapping met: the ids were renumbered.
        assert_eq!((m.id, pb.location[1].mapping_id), (1, 1));
        assert_eq!((pb.mapping[1].id, pb.location[0].mapping_id), (2, 2));
        assert!(m.has_functions && m.has_filenames && m.has_line_numbers && m.has_inline_frames);
        let gone = &pb.mapping[1];
        // The build-id of the one recorded file of that base name.
        assert_eq!(
            (s(gone.filename), s(gone.build_id)),
            ("/usr/lib/libgone.so", "ef01")
        );
        assert_eq!(
            (gone.memory_start, gone.memory_limit, gone.file_offset),
            (0x7000, 0x8000, 0x3000)
        );
        assert!(!gone.has_inline_frames);
        let labels: Vec<(&str, String)> = pb.sample[1]
            .label
            .iter()
            .map(|l| {
                let v = if l.str != 0 {
                    s(l.str).to_string()
                } else {
                    l.num.to_string()
                };
                (s(l.key), v)
            })
            .collect();
        assert_eq!(
            labels,
            [
                ("event", "cpu_core/cycles/P".to_string()),
                ("comm", "app".into()),
                ("pid", "7".into()),
                ("tid", "8".into()),
                ("cpu", "0".into())
            ]
        );
        assert_eq!((pb.time_nanos, pb.duration_nanos), (5, 9));
        assert_eq!(s(pb.comment[0]), "hello");
    }

    /// A cpu-clock profile of three processes running `app` (two at one address, one
    /// elsewhere), with kernel, module and unmapped addresses.
    #[test]
    fn clock_time_columns_per_process_mappings_and_kernel_ranges() {
        let events = vec![EventInfo {
            name: "cpu-clock:u".into(),
            ..Default::default()
        }];
        let mut f = Folder::new(events, false);
        for (pid, leaf) in [(7, 0), (8, 0), (9, 0), (7, 1), (7, 2), (7, 3), (7, 4)] {
            f.add(&SampleView {
                pid,
                tid: pid,
                ..sample(0, leaf, &[], 250_000, None)
            });
        }
        let mut p = f.finish();
        let kernel = |addr: u64, sym: Option<&str>, dso: &str| Loc {
            kernel: true,
            dso: dso.into(),
            file_addr: addr,
            ..loc(dso, addr, sym, vec![])
        };
        p.locs = vec![
            loc(
                "app",
                0x1100,
                Some("app::f"),
                vec![frame("app::f", "/src/a.rs", 9, 4)],
            ),
            kernel(0xffff_ffff_8100_0100, Some("do_one"), "[kernel.kallsyms]"),
            // Outside the kernel text (no symbol): the mapping widens to hold it.
            kernel(0xffff_ffff_8300_0000, None, "[kernel.kallsyms]"),
            kernel(0xffff_ffff_c0a0_0010, Some("kvm_fn"), "[kvm]"),
            loc("[unknown]", 0x1234, None, vec![]),
        ];
        p.sites = Sites {
            keys: vec![
                (LocKey::File(FileIdx(0), 0x100), FrameAddress::Ip(0x1100)),
                (
                    LocKey::Kernel(0xffff_ffff_8100_0100),
                    FrameAddress::Ip(0xffff_ffff_8100_0100),
                ),
                (
                    LocKey::Kernel(0xffff_ffff_8300_0000),
                    FrameAddress::Ip(0xffff_ffff_8300_0000),
                ),
                (
                    LocKey::Kernel(0xffff_ffff_c0a0_0010),
                    FrameAddress::Ip(0xffff_ffff_c0a0_0010),
                ),
                (LocKey::Unmapped(7, 0x1234), FrameAddress::Ip(0x1234)),
            ],
            mappings: vec![
                (7, map(0x1000, 0x2000, 0, 0)),
                (8, map(0x5000, 0x6000, 0, 0)),
                (9, map(0x1000, 0x2000, 0, 0)),
            ],
            files: vec![file("/opt/bin/app")],
        };
        p.comms = vec!["app".into()];
        let ks = KernelSymbols::parse(
            "ffffffff81000000 T _text\nffffffff81000000 T _stext\nffffffff81000080 T do_one\nffffffff82000000 T _etext\n",
        );
        let meta = PprofMeta {
            period: Some(250_000),
            clock: vec![true],
            kernel_text: ks.text_range(),
            modules: parse_modules(
                "kvm 1114112 1 kvm_intel, Live 0xffffffffc0a00000\nbad line\nhidden 4096 0 - Live 0x0000000000000000\n",
            ),
            ..Default::default()
        };
        assert_eq!(
            meta.modules,
            [(
                "kvm".to_string(),
                0xffff_ffff_c0a0_0000,
                0xffff_ffff_c0b1_0000
            )]
        );
        let pb = build(&p, &meta, &Filters::default());
        let s = |i: i64| pb.string_table[i as usize].as_str();
        let types: Vec<(&str, &str)> = pb
            .sample_type
            .iter()
            .map(|v| (s(v.r#type), s(v.unit)))
            .collect();
        assert_eq!(types, [("cpu", "nanoseconds"), ("samples", "count")]);
        assert_eq!(s(pb.default_sample_type), "cpu");
        let pt = pb.period_type.as_ref().unwrap();
        assert_eq!(
            (s(pt.r#type), s(pt.unit), pb.period),
            ("cpu", "nanoseconds", 250_000)
        );
        // The event label keeps the event's name.
        assert_eq!(s(pb.sample[0].label[0].str), "cpu-clock:u");
        // `app` at 0x1000 (pids 7 and 9: one mapping, one location) and at 0x5000 (pid 8).
        let by_addr = |a: u64| pb.location.iter().find(|l| l.address == a).unwrap();
        let (at1, at5) = (by_addr(0x1100), by_addr(0x5100));
        assert_ne!(at1.mapping_id, at5.mapping_id);
        assert_eq!(
            pb.location
                .iter()
                .filter(|l| l.line.len() == 1
                    && s(pb.function[l.line[0].function_id as usize - 1].name) == "app::f")
                .count(),
            2
        );
        let mapping = |id: u64| &pb.mapping[id as usize - 1];
        let starts = [at1, at5].map(|l| {
            let m = mapping(l.mapping_id);
            (s(m.filename), m.memory_start, m.memory_limit)
        });
        assert_eq!(
            starts,
            [
                ("/opt/bin/app", 0x1000, 0x2000),
                ("/opt/bin/app", 0x5000, 0x6000)
            ]
        );
        // Every location with a mapping lies inside it.
        for l in &pb.location {
            if l.mapping_id != 0 {
                let m = mapping(l.mapping_id);
                assert!(
                    m.memory_start <= l.address && l.address < m.memory_limit,
                    "{l:?} {m:?}"
                );
            }
        }
        // The function starts at its declaration line.
        let func = &pb.function[at1.line[0].function_id as usize - 1];
        assert_eq!((s(func.name), func.start_line), ("app::f", 4));
        // The kernel: its text from _text to _etext, widened to the address past it; the
        // file offset is the start (perf's kernel MMAP).
        let k = mapping(by_addr(0xffff_ffff_8100_0100).mapping_id);
        assert_eq!(
            (s(k.filename), k.memory_start, k.memory_limit, k.file_offset),
            (
                "[kernel.kallsyms]",
                0xffff_ffff_8100_0000,
                0xffff_ffff_8300_0001,
                0xffff_ffff_8100_0000
            )
        );
        let kvm = mapping(by_addr(0xffff_ffff_c0a0_0010).mapping_id);
        assert_eq!(
            (s(kvm.filename), kvm.memory_start, kvm.memory_limit),
            ("[kvm]", 0xffff_ffff_c0a0_0000, 0xffff_ffff_c0b1_0000)
        );
        // An unmapped address has no mapping.
        assert_eq!(by_addr(0x1234).mapping_id, 0);
        // Without a recorded text range, the kernel mapping spans its locations.
        let pb = build(
            &p,
            &PprofMeta {
                kernel_text: None,
                ..meta
            },
            &Filters::default(),
        );
        let k = pb
            .mapping
            .iter()
            .find(|m| pb.string_table[m.filename as usize] == "[kernel.kallsyms]")
            .unwrap();
        assert_eq!(
            (k.memory_start, k.memory_limit),
            (0xffff_ffff_8100_0100, 0xffff_ffff_8300_0001)
        );
    }

    #[test]
    fn gzip_round_trip_and_filters() {
        let p = profile();
        let pb = build(
            &p,
            &meta(),
            &Filters {
                pids: vec![9],
                ..Default::default()
            },
        );
        assert!(pb.sample.is_empty() && pb.location.is_empty());
        let pb = build(&p, &meta(), &Filters::default());
        let mut gz = Vec::new();
        write_gz(&pb, &mut gz).unwrap();
        assert_eq!(&gz[..2], [0x1f, 0x8b]);
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(gz.as_slice()), &mut raw)
            .unwrap();
        assert_eq!(proto::Profile::decode(raw.as_slice()).unwrap(), pb);
    }

    /// An `--off-cpu` recording: a clock and the `offcpu-time` event the replay makes, both
    /// in nanoseconds; the off-CPU samples' `[preempted]` mark is a function of its own, in
    /// no mapping.
    #[test]
    fn off_cpu_time_is_a_nanoseconds_column_beside_the_clock() {
        let mut events = crate::testutil::events_with_off_cpu("cpu-clock");
        events[1].pmu = Some("software".into());
        let mut f = Folder::new(events, false);
        for s in [
            // On the CPU in app::outer for 250 µs twice; off it, blocked under it for 20 ms,
            // and preempted there for 3 ms.
            sample(0, 0, &[], 250_000, None),
            sample(0, 0, &[], 250_000, None),
            sample(1, 0, &[], 20_000_000, None),
            sample(1, 1, &[0], 3_000_000, None),
        ] {
            f.add(&s);
        }
        let mut p = f.finish();
        p.locs = vec![
            loc("app", 0x1100, Some("app::outer"), vec![]),
            Loc {
                addr: 0,
                dso: "[off-cpu]".into(),
                sym: Some("[preempted]".into()),
                unresolved: None,
                ..loc("app", 0x1000, None, vec![])
            },
        ];
        p.sites = Sites {
            keys: vec![
                (LocKey::File(FileIdx(0), 0x100), FrameAddress::Ip(0x1100)),
                (
                    LocKey::Mark(crate::symbol::symbolizer::Mark::Preempted),
                    FrameAddress::Ip(0),
                ),
            ],
            mappings: vec![(7, map(0x1000, 0x2000, 0, 0))],
            files: vec![file("/opt/bin/app")],
        };
        p.comms = vec!["app".into()];
        let meta = PprofMeta {
            clock: vec![true, false],
            ..PprofMeta::default()
        };
        let pb = build(&p, &meta, &Filters::default());
        let s = |i: i64| pb.string_table[i as usize].as_str();
        let types: Vec<(&str, &str)> = pb
            .sample_type
            .iter()
            .map(|v| (s(v.r#type), s(v.unit)))
            .collect();
        assert_eq!(
            types,
            [
                ("cpu", "nanoseconds"),
                ("off_cpu", "nanoseconds"),
                ("samples", "count")
            ]
        );
        // The clock stays the default and the period type.
        assert_eq!(s(pb.default_sample_type), "cpu");
        let rows: Vec<(Vec<&str>, &[i64])> = pb
            .sample
            .iter()
            .map(|x| {
                let names = x
                    .location_id
                    .iter()
                    .map(|&l| {
                        let f = pb.location[l as usize - 1].line[0].function_id;
                        s(pb.function[f as usize - 1].name)
                    })
                    .collect();
                (names, x.value.as_slice())
            })
            .collect();
        assert_eq!(
            rows,
            [
                (vec!["app::outer"], &[500_000, 0, 2][..]),
                (vec!["app::outer"], &[0, 20_000_000, 1][..]),
                (vec!["[preempted]", "app::outer"], &[0, 3_000_000, 1][..]),
            ]
        );
        let event_label = |x: &proto::Sample| s(x.label[0].str).to_string();
        assert_eq!(event_label(&pb.sample[1]), "offcpu-time");
        let mark = &pb.location[pb.sample[2].location_id[0] as usize - 1];
        assert_eq!((mark.mapping_id, mark.address), (0, 0));
    }

    #[test]
    fn without_latencies_no_latency_column_and_duplicate_names_are_numbered() {
        let mut p = profile();
        p.events[0].has_latency = false;
        p.events[1].name = p.events[0].name.clone();
        let pb = build(&p, &PprofMeta::default(), &Filters::default());
        let names: Vec<&str> = pb
            .sample_type
            .iter()
            .map(|v| pb.string_table[v.r#type as usize].as_str())
            .collect();
        assert_eq!(
            names,
            ["cpu_core/cycles/P", "cpu_core/cycles/P#2", "samples"]
        );
        // Without sites (a profile not built by the converter): no mappings, the
        // addresses as recorded.
        let mut p = profile();
        p.sites = Sites::default();
        let pb = build(&p, &PprofMeta::default(), &Filters::default());
        assert!(pb.mapping.is_empty());
        assert!(pb.location.iter().all(|l| l.mapping_id == 0));
        assert_eq!(pb.location[1].address, 0x1100);
    }
}
