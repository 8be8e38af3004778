//! pprof export: a profile as gzip-compressed protobuf in google/pprof's `profile.proto`
//! format, for `go tool pprof` and the other tools that read it.
//!
//! The messages are written by hand in [`proto`] with prost's derive, field numbers as in
//! `profile.proto` (nothing is generated at build time, so no `protoc` is needed).
//!
//! **Value columns.** pprof gives every sample the same list of values, one per
//! `sample_type`. hrec samples several events at once (hybrid parts sample `cpu_core` and
//! `cpu_atom` cycles; `-e` takes lists), and their counts are in different units of work, so
//! they cannot share one column: each event gets its own column `(<event name>, count)` with
//! the periods (the event count each sample stands for), and a sample puts its period into its
//! own event's column and zero into the others. Then come `(samples, count)`, one per sample
//! of any event, and, when some event has retire latencies, `(retire-latency, cycles)` with the
//! sum of the samples' retire latencies. Summing a column over all samples gives exactly the
//! event's total in `hrec report`. The first event's count is the default sample type, as the
//! first table is in the report; `go tool pprof -sample_index=NAME` picks another. Samples
//! with the same stack, event, thread and CPU are merged into one (values add up).
//!
//! **Labels.** `event` and `comm` (strings), `pid` and `tid` (numbers), and `cpu` when
//! sampled. `cpu` is a string because a numeric label without a unit cannot hold 0 in proto3
//! (a zero `num` is the same as no value, and pprof drops such labels), and CPU 0 is
//! everywhere; a pid or tid of 0 is only the idle task, whose samples still carry `comm`.
//!
//! **Locations and inline frames.** Each distinct resolved location of the profile is one
//! `Location`. Its address is the address inside the file (what `objdump` shows) when hrec
//! could read the file, else the runtime address; every mapping spans the whole address
//! space from 0 with file offset 0, which pprof reads as "addresses are already relative to
//! the file", so `go tool pprof -disasm` finds the sampled instructions in the binary. An inline
//! chain becomes the location's `Line` list, innermost first as addr2line prints it: when
//! `mix` is inlined into `hot_multiply`, `line[0]` is `mix` at the line in `mix`, and the
//! last `line` is `hot_multiply` at the line of the inlined call. The outermost function is
//! named by the symbol table, as in the report and the flame graph. A `Function` is a distinct
//! (name, source file); its `start_line` is not known and left 0. Unresolved locations get a
//! function named like the flame graph's frames, `[dso: reason]` (`[hotspots: binary
//! missing]`).
//!
//! **Names are demangled, `system_name` is empty.** hrec keeps only demangled names, and pprof
//! "simplifies" a function whose `system_name` equals its name by cutting everything in `<>`
//! and `()`: `core::num::<impl u64>::wrapping_add` would show as `::wrapping_add` and
//! `<Vec<T> as FromIterator<T>>::from_iter` as `::from_iter`. With no system name pprof shows
//! the names as the report does.
//!
//! **Mappings** are one per shared object (`dso` of the report), the main binary (the
//! user-space file with the most samples) first. The file name is the full path and the
//! build-id the recorded one, from the recording's `build-ids` block, when exactly one recorded
//! file has that base name. `has_functions` is set on every mapping: hrec has looked up every
//! location, and pprof re-symbolizes only mappings without it, which would misattribute the
//! runtime addresses of unresolved locations. `has_filenames`, `has_line_numbers` and
//! `has_inline_frames` say whether any location of the mapping had DWARF source information.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::analysis::hist::Filters;
use crate::analysis::profile::{NONE, Profile};
use crate::recording::Recording;
use crate::symbol::symbolizer::Loc;

/// The messages of `profile.proto` (package `perftools.profiles`), field numbers as there.
pub mod proto {
    /// A profile.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        /// What each value of a sample is.
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        /// The samples.
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        /// Binaries; `mapping[0]` is the main binary.
        #[prost(message, repeated, tag = "3")]
        pub mapping: Vec<Mapping>,
        /// Code locations referenced by samples.
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        /// Functions referenced by locations.
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        /// Every string; `string_table[0]` is `""`.
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        /// Regexp of frames to drop (string index).
        #[prost(int64, tag = "7")]
        pub drop_frames: i64,
        /// Regexp of frames to keep (string index).
        #[prost(int64, tag = "8")]
        pub keep_frames: i64,
        /// When the collection started, ns since the epoch (UTC).
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        /// How long it ran.
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        /// The kind of events between samples.
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        /// The number of events between samples.
        #[prost(int64, tag = "12")]
        pub period: i64,
        /// Free-form text (string indexes).
        #[prost(int64, repeated, tag = "13")]
        pub comment: Vec<i64>,
        /// The preferred sample type (string index of its type).
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
    }

    /// A value's meaning and unit (string indexes).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        /// Type, e.g. `cycles`.
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        /// Unit, e.g. `count`.
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    /// Values at one stack.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        /// Location ids, leaf first.
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        /// One value per sample type.
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        /// Labels.
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    /// A key with a string or numeric value.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        /// Key (string index).
        #[prost(int64, tag = "1")]
        pub key: i64,
        /// String value (string index).
        #[prost(int64, tag = "2")]
        pub str: i64,
        /// Numeric value.
        #[prost(int64, tag = "3")]
        pub num: i64,
        /// Unit of `num` (string index).
        #[prost(int64, tag = "4")]
        pub num_unit: i64,
    }

    /// A mapped binary.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Mapping {
        /// Unique non-zero id.
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// Start of the mapped range.
        #[prost(uint64, tag = "2")]
        pub memory_start: u64,
        /// End of the mapped range.
        #[prost(uint64, tag = "3")]
        pub memory_limit: u64,
        /// File offset of `memory_start`.
        #[prost(uint64, tag = "4")]
        pub file_offset: u64,
        /// File name (string index).
        #[prost(int64, tag = "5")]
        pub filename: i64,
        /// Build-id (string index).
        #[prost(int64, tag = "6")]
        pub build_id: i64,
        /// Locations have function names.
        #[prost(bool, tag = "7")]
        pub has_functions: bool,
        /// Locations have source files.
        #[prost(bool, tag = "8")]
        pub has_filenames: bool,
        /// Locations have line numbers.
        #[prost(bool, tag = "9")]
        pub has_line_numbers: bool,
        /// Locations have inline frames.
        #[prost(bool, tag = "10")]
        pub has_inline_frames: bool,
    }

    /// A code location.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        /// Unique non-zero id.
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// Its mapping (0: none).
        #[prost(uint64, tag = "2")]
        pub mapping_id: u64,
        /// Instruction address.
        #[prost(uint64, tag = "3")]
        pub address: u64,
        /// Inline chain, innermost first; the last is the function the others are inlined in.
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
        /// Several symbols share this address.
        #[prost(bool, tag = "5")]
        pub is_folded: bool,
    }

    /// A function and a line in it.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        /// Function id.
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        /// Source line (0: unknown).
        #[prost(int64, tag = "2")]
        pub line: i64,
        /// Source column (0: unknown).
        #[prost(int64, tag = "3")]
        pub column: i64,
    }

    /// A function.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        /// Unique non-zero id.
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// Human-readable name (string index).
        #[prost(int64, tag = "2")]
        pub name: i64,
        /// Name as the system knows it (string index).
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        /// Source file (string index).
        #[prost(int64, tag = "4")]
        pub filename: i64,
        /// First line of the function (0: unknown).
        #[prost(int64, tag = "5")]
        pub start_line: i64,
    }
}

/// What the export takes from the recording besides its samples.
#[derive(Debug, Clone, Default)]
pub struct PprofMeta {
    /// Wall-clock start, ns since the epoch.
    pub start_time_unix_ns: u64,
    /// Duration, when the recording finished.
    pub duration_ns: Option<u64>,
    /// `(build-id hex, path)` of the recorded files.
    pub build_ids: Vec<(String, String)>,
    /// The first event's fixed period (`record -c N`); `None` in frequency mode.
    pub period: Option<u64>,
    /// Lines for `comment` (command line, host, warnings).
    pub comments: Vec<String>,
}

impl PprofMeta {
    /// Takes the start time, duration, build-ids, period and comments from a recording.
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
        let mut comments = vec![format!("hrec {} recording", meta.hrec_version)];
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
        PprofMeta {
            start_time_unix_ns: meta.start_time_unix_ns,
            duration_ns: rec.trailer().map(|t| t.duration_ns),
            build_ids,
            period,
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

/// Locations, functions and mappings, added as samples reference them.
struct Tables<'p> {
    p: &'p Profile,
    strings: Strings,
    /// Location id per profile location (0: not emitted yet).
    loc_ids: Vec<u64>,
    locations: Vec<proto::Location>,
    functions: Vec<proto::Function>,
    function_ids: HashMap<(String, String), u64>,
    mappings: Vec<proto::Mapping>,
    mapping_ids: HashMap<(bool, &'p str), u64>,
    /// Per mapping (index = id - 1): samples with the leaf in it, and whether it is a
    /// user-space file (to find the main binary).
    mapping_samples: Vec<(u64, bool)>,
    paths: HashMap<&'p str, Option<(&'p str, &'p str)>>,
}

impl<'p> Tables<'p> {
    fn function(&mut self, name: &str, file: &str) -> u64 {
        let key = (name.to_string(), file.to_string());
        if let Some(&id) = self.function_ids.get(&key) {
            return id;
        }
        let id = self.functions.len() as u64 + 1;
        let f = proto::Function {
            id,
            name: self.strings.id(name),
            system_name: 0,
            filename: self.strings.id(file),
            start_line: 0,
        };
        self.functions.push(f);
        self.function_ids.insert(key, id);
        id
    }

    fn mapping(&mut self, l: &'p Loc) -> u64 {
        let key = (l.kernel, &*l.dso);
        let id = match self.mapping_ids.get(&key) {
            Some(&id) => id,
            None => {
                let id = self.mappings.len() as u64 + 1;
                let (path, build_id) = match self.paths.get(&*l.dso).copied().flatten() {
                    Some((hex, path)) if !l.kernel => (path, hex),
                    _ => (&*l.dso, ""),
                };
                let m = proto::Mapping {
                    id,
                    memory_start: 0,
                    memory_limit: u64::MAX,
                    file_offset: 0,
                    filename: self.strings.id(path),
                    build_id: self.strings.id(build_id),
                    has_functions: true,
                    ..Default::default()
                };
                self.mappings.push(m);
                self.mapping_samples
                    .push((0, !l.kernel && !l.dso.starts_with('[')));
                self.mapping_ids.insert(key, id);
                id
            }
        };
        let m = &mut self.mappings[id as usize - 1];
        m.has_filenames |= l.frames.iter().any(|f| f.file.is_some());
        m.has_line_numbers |= l.frames.iter().any(|f| f.line > 0);
        m.has_inline_frames |= !l.frames.is_empty();
        id
    }

    fn location(&mut self, i: u32) -> u64 {
        let i = i as usize;
        if self.loc_ids[i] != 0 {
            return self.loc_ids[i];
        }
        let l = &self.p.locs[i];
        let id = self.locations.len() as u64 + 1;
        let mapping_id = self.mapping(l);
        let mut line = Vec::new();
        match &l.sym {
            None => line.push(proto::Line {
                function_id: self.function(&unresolved_name(l), ""),
                ..Default::default()
            }),
            Some(sym) if l.frames.is_empty() => line.push(proto::Line {
                function_id: self.function(sym, ""),
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
                        function_id: self.function(name, f.file.as_deref().unwrap_or("")),
                        line: i64::from(f.line),
                        column: 0,
                    });
                }
            }
        }
        self.locations.push(proto::Location {
            id,
            mapping_id,
            address: l.file_addr,
            line,
            is_folded: false,
        });
        self.loc_ids[i] = id;
        id
    }
}

/// Samples merged by (event, comm, pid, tid, cpu, stack).
type SampleKey = (u16, u32, u32, u32, u32, u32);

/// Builds the pprof profile of the samples that pass `filters`.
pub fn build(p: &Profile, meta: &PprofMeta, filters: &Filters) -> proto::Profile {
    let mut paths: HashMap<&str, Option<(&str, &str)>> = HashMap::new();
    for (hex, path) in &meta.build_ids {
        let base = path.rsplit('/').next().unwrap_or(path);
        paths
            .entry(base)
            .and_modify(|v| *v = None)
            .or_insert(Some((hex.as_str(), path.as_str())));
    }
    let mut t = Tables {
        p,
        strings: Strings::new(),
        loc_ids: vec![0; p.locs.len()],
        locations: Vec::new(),
        functions: Vec::new(),
        function_ids: HashMap::new(),
        mappings: Vec::new(),
        mapping_ids: HashMap::new(),
        mapping_samples: Vec::new(),
        paths,
    };
    // Value columns: one per event (duplicate names get `#2`, `#3`), samples, retire latency.
    let count = t.strings.id("count");
    let mut names: Vec<String> = Vec::new();
    for e in &p.events {
        let mut name = e.name.clone();
        let mut k = 2;
        while names.contains(&name) {
            name = format!("{}#{k}", e.name);
            k += 1;
        }
        names.push(name);
    }
    let mut sample_type: Vec<proto::ValueType> = names
        .iter()
        .map(|n| proto::ValueType {
            r#type: t.strings.id(n),
            unit: count,
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
        stack.push(t.location(s.leaf));
        for &c in p.callers(s) {
            stack.push(t.location(c));
        }
        let leaf_mapping = t.locations[stack[0] as usize - 1].mapping_id;
        t.mapping_samples[leaf_mapping as usize - 1].0 += s.samples;
        let stack_id = match stacks.get(stack.as_slice()) {
            Some(&id) => id,
            None => {
                let id = stacks.len() as u32;
                stacks.insert(stack.clone(), id);
                id
            }
        };
        let key = (s.event, s.comm, s.pid, s.tid, s.cpu, stack_id);
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
    }

    let keys = ["event", "comm", "pid", "tid", "cpu"].map(|k| t.strings.id(k));
    let event_names: Vec<i64> = names.iter().map(|n| t.strings.id(n)).collect();
    let sample = samples
        .into_iter()
        .map(|((event, comm, pid, tid, cpu, _), location_id, value)| {
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
            proto::Sample {
                location_id,
                value,
                label,
            }
        })
        .collect();

    // The main binary first: the user-space file with the most samples at the leaf.
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
    let period_type = p.events.first().map(|_| sample_type[0].clone());
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
        period: meta.period.map_or(0, to_i64),
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
    use std::sync::Arc;

    use super::*;
    use crate::analysis::profile::{EventInfo, Folder, SampleView};
    use crate::symbol::{Frame, Unresolved};
    use prost::Message as _;

    fn frame(function: &str, file: &str, line: u32) -> Frame {
        Frame {
            function: Some(function.into()),
            file: Some(file.into()),
            line,
            decl_line: 0,
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
            frames,
            unresolved: sym.is_none().then_some(Unresolved::BinaryMissing),
            rel_addr: 0,
            dso_path: Arc::default(),
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
            event,
            cpu: 0,
            pid: 7,
            tid: 8,
            comm: 0,
            time: 0,
            period,
            leaf,
            callers,
            callchain: true,
            td: None,
            retire_lat: lat,
        }
    }

    /// Two events, an inline chain, an unresolved caller, a merged pair of samples.
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
                    frame("app::inner", "/src/a.rs", 5),
                    frame("x", "/src/a.rs", 20),
                ],
            ),
            loc("libgone.so", 0x7000, None, vec![]),
        ];
        p.comms = vec!["app".into()];
        p
    }

    fn meta() -> PprofMeta {
        PprofMeta {
            start_time_unix_ns: 5,
            duration_ns: Some(9),
            build_ids: vec![("abcd".into(), "/opt/bin/app".into())],
            period: None,
            comments: vec!["hello".into()],
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
        // The two samples with the callchain share a stack: merged.
        assert_eq!(pb.sample.len(), 4);
        let totals: Vec<i64> = (0..4)
            .map(|c| pb.sample.iter().map(|x| x.value[c]).sum())
            .collect();
        assert_eq!(totals, [600, 60, 5, 10]);
        assert_eq!(pb.sample[1].value, [300, 0, 2, 10]);
        // The inline chain is one location with two lines, innermost first, the outer one
        // named by the symbol.
        let l = &pb.location[1];
        let f = |id: u64| &pb.function[id as usize - 1];
        let lines: Vec<(&str, i64)> = l
            .line
            .iter()
            .map(|x| (s(f(x.function_id).name), x.line))
            .collect();
        assert_eq!(lines, [("app::inner", 5), ("app::outer", 20)]);
        assert_eq!(l.address, 0x100);
        assert_eq!(s(f(l.line[0].function_id).filename), "/src/a.rs");
        // The unresolved caller: a placeholder; no system names.
        let u = f(pb.location[0].line[0].function_id);
        assert_eq!(
            (s(u.name), u.system_name),
            ("[libgone.so: binary missing]", 0)
        );
        // Mappings: the main binary first with its recorded path and build-id.
        let m = &pb.mapping[0];
        assert_eq!((s(m.filename), s(m.build_id)), ("/opt/bin/app", "abcd"));
        // It was the second mapping met: the ids were renumbered.
        assert_eq!((m.id, pb.location[1].mapping_id), (1, 1));
        assert_eq!((pb.mapping[1].id, pb.location[0].mapping_id), (2, 2));
        assert!(m.has_functions && m.has_filenames && m.has_line_numbers && m.has_inline_frames);
        let gone = &pb.mapping[1];
        assert_eq!(s(gone.filename), "libgone.so");
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
    }
}
