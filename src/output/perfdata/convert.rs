//! A recording as perf.data (`hrec convert`): hrec's own file, or a perf.data written again,
//! in file mode, for perf, hotspot and the tools built on perf's files.
//!
//! **What carries over as it is.** hrec's record blocks hold kernel records exactly as the
//! ring buffers gave them, so every record is copied byte for byte, in time order (the
//! reader's merge of the per-CPU streams), with a `FINISHED_ROUND` after every
//! [`ROUND_RECORDS`] records so perf's ordering queue stays small. The events keep their attrs
//! and ids (perf finds a record's event by the id, as hrec does), their names go into
//! EVENT_DESC (without it perf names a TopDown member `raw 0x400:HG`), sampling-read groups
//! into GROUP_DESC, and the build-ids hrec found for the mapped files into BUILD_ID, with
//! pid -1 and the kernel ones marked, as perf writes them, so perf looks them up in its
//! build-id cache, where `hrec record` copied them.
//!
//! **What is rewritten.** A sample whose user stack hrec unwound while recording holds
//! `[STACK_REF, id]` in its CALLCHAIN (`docs/file-format.md`); its stack copy is gone. The
//! converted sample holds the whole chain instead: the kernel part with its context markers,
//! `PERF_CONTEXT_USER`, and the unwound frames, as the kernel writes a frame-pointer chain, so
//! perf shows them (without inline frames: perf finds those from the addresses only when it
//! unwinds itself). A recording that kept its stacks (`--call-graph dwarf,SIZE,raw`) keeps
//! them, and its chains stop before `PERF_CONTEXT_USER`, as the kernel wrote them, for perf to
//! unwind the stacks again. `offcpu-time` samples (written by hrec, an event perf's own
//! `--off-cpu` writes too: `PERF_COUNT_SW_BPF_OUTPUT`, the nanoseconds as period) lose the
//! two `misc` bits only hrec reads (preempted, aggregated).
//!
//! **What perf.data has no place for** is named, in one line, never dropped silently: hrec's
//! side blocks other than `build-ids` and `stacks` (the kernel symbols, the vdso's image, JIT
//! maps, the unwinding and off-CPU counts), the preempted mark and the interval counts of
//! aggregated off-CPU samples. Tracepoints keep the formats hrec recorded, as perf's
//! TRACING_DATA.

use std::collections::BTreeSet;
use std::io::{self, Seek, Write};

use super::{BuildId, Header, finished_round};
use crate::data::Role;
use crate::data::stacks::STACK_REF;
use crate::decode::{Record, Sample, context};
use crate::event::attr::sample;
use crate::pmu::CpuList;
use crate::recording::perfdata::feature;
use crate::recording::{Recording, Source};

/// Records between two `FINISHED_ROUND`s.
pub const ROUND_RECORDS: u64 = 16_384;

/// Bytes of records gathered before a write.
const WRITE_BYTES: usize = 1 << 20;

/// The `misc` bits of an `offcpu-time` sample that only hrec reads: preempted, aggregated.
const OFFCPU_MISC: u16 = 0x4000 | 0x2000;

/// What a conversion wrote and what it could not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Converted {
    /// Records written (the `FINISHED_ROUND`s not counted).
    pub records: u64,
    /// Of them, samples.
    pub samples: u64,
    /// Samples whose chain was rebuilt from the stack table.
    pub unwound: u64,
    /// Of those, chains that ran through a stack-table node the file lacks (written as far
    /// as they were found).
    pub broken_chains: u64,
    /// Records that did not decode (left out).
    pub undecodable: u64,
    /// perf's own records of the input (`FINISHED_ROUND`, pipe-mode headers): left out, the
    /// output has its own.
    pub user_records: u64,
    /// What perf.data has no place for, one item each.
    pub left_out: Vec<String>,
}

impl Converted {
    /// The one line naming what was left out, if anything was.
    pub fn left_out_line(&self) -> Option<String> {
        (!self.left_out.is_empty()).then(|| {
            format!(
                "perf.data has no place for: {} (left out)",
                self.left_out.join("; ")
            )
        })
    }
}

/// Per event: what its samples need.
#[derive(Debug, Clone, Copy, Default)]
struct EventPlan {
    /// `offcpu-time`: clear hrec's misc bits.
    off_cpu: bool,
    /// The stack copy was kept (`dwarf,raw`): the chain stops before the user part.
    keeps_stack: bool,
}

/// The header of `rec` as perf.data: its events, groups and features; and what has no place
/// there.
pub fn header_of(rec: &Recording) -> (Header, Vec<String>) {
    let meta = rec.meta();
    let mut h = Header::new();
    let mut notes = Vec::new();
    for e in &meta.events {
        h.event(e.attr, &e.name, e.ids.iter().map(|i| i.id).collect());
    }
    // Groups: a leader and the members after it (GROUP_DESC cannot say anything else).
    for (i, e) in meta.events.iter().enumerate() {
        let members = meta.events.iter().filter(|m| m.leader == i).count();
        if e.leader != i || members < 2 {
            continue;
        }
        if (i..i + members).all(|k| meta.events.get(k).is_some_and(|m| m.leader == i)) {
            h.group(i, members as u32);
        } else {
            notes.push(format!(
                "the group of {} (its members do not follow it)",
                e.name
            ));
        }
    }
    let string = |h: &mut Header, f: u32, s: &str| {
        if !s.is_empty() {
            h.string_feature(f, s);
        }
    };
    string(&mut h, feature::HOSTNAME, &meta.hostname);
    string(&mut h, feature::OSRELEASE, &meta.kernel_release);
    string(&mut h, feature::ARCH, &meta.arch);
    string(&mut h, feature::CPUDESC, &meta.cpu_model);
    let host = HostFacts::of(rec);
    string(&mut h, feature::CPUID, &host.cpuid);
    let info = match &rec.source {
        Source::PerfData(p) => Some(&p.info),
        Source::Hrec(_) => None,
    };
    string(&mut h, feature::VERSION, &host.version);
    if let Some((available, online)) = host.nr_cpus {
        h.nrcpus(available, online);
    }
    if let Some(kb) = meta.total_mem_kb {
        h.total_mem(kb);
    }
    // A hybrid part's core PMUs and their CPUs.
    let cores: Vec<(&str, &str)> = meta
        .pmus
        .iter()
        .filter_map(|p| Some((p.name.as_str(), p.cpus.as_deref()?)))
        .filter(|(n, _)| n.starts_with("cpu_"))
        .collect();
    if cores.len() > 1 {
        h.hybrid_topology(&cores);
    }
    if !meta.command_line.is_empty() {
        let args: Vec<&str> = meta.command_line.iter().map(String::as_str).collect();
        h.cmdline(&args);
    }
    let pmus: Vec<(u32, &str)> = match info {
        Some(i) if !i.pmu_mappings.is_empty() => i
            .pmu_mappings
            .iter()
            .map(|(t, n)| (*t, n.as_str()))
            .collect(),
        _ => meta
            .pmus
            .iter()
            .map(|p| (p.type_, p.name.as_str()))
            .collect(),
    };
    if !pmus.is_empty() {
        h.pmu_mappings(&pmus);
    }
    if let Some(t) = &meta.cpu_topology {
        h.cpu_topology(t);
    }
    if !meta.numa_nodes.is_empty() {
        // The memory where it was recorded (files before hrec kept it: 0).
        let nodes: Vec<(u32, u64, u64, &str)> = meta
            .numa_nodes
            .iter()
            .map(|(n, cpus)| {
                let (total, free) = meta
                    .numa_memory_kb
                    .iter()
                    .find(|m| m.0 == *n)
                    .map_or((0, 0), |m| (m.1, m.2));
                (*n, total, free, cpus.as_str())
            })
            .collect();
        h.numa_topology(&nodes);
    }
    if let Some(clockid) = meta.clockid
        && meta.start_time_unix_ns > 0
        && meta.clock_start_ns > 0
    {
        h.clock_data(clockid as u32, meta.start_time_unix_ns, meta.clock_start_ns);
    }
    let ids = build_ids(rec.side("build-ids").as_deref().unwrap_or_default());
    if !ids.is_empty() {
        h.build_ids(&ids);
    }
    if let Some(data) = tracing_data(meta) {
        h.features.insert(feature::TRACING_DATA, data);
    }
    (h, notes)
}

/// The ring buffer's page header and event header as tracefs prints them on a 64-bit kernel
/// (`events/header_page`, `events/header_event`), `PAGE` standing for the data's size: what
/// perf's tracing data begins with. hrec keeps the events' formats, not these; they describe
/// the raw ring buffer, which perf.data does not hold, and every kernel prints them so.
const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:PAGE;\tsigned:0;\n";
const HEADER_EVENT: &str = "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";

/// TRACING_DATA (`tracing_data_get`, version 0.6) from the tracepoint formats hrec kept:
/// the magic and version, little-endian, 8-byte longs and the page size; the page and event
/// headers; no ftrace formats; each subsystem's events' format files (the subsystem from the
/// event's name, `sched:sched_switch`); no kallsyms; the printk formats; no saved cmdlines.
/// `None` without tracepoints.
fn tracing_data(meta: &crate::data::Meta) -> Option<Vec<u8>> {
    let mut systems: Vec<(&str, Vec<&str>)> = Vec::new();
    for e in &meta.events {
        let Some(format) = e.trace_format.as_deref() else {
            continue;
        };
        let system = e.name.split(':').next().unwrap_or_default();
        match systems.iter_mut().find(|(s, _)| *s == system) {
            Some((_, formats)) => formats.push(format),
            None => systems.push((system, vec![format])),
        }
    }
    if systems.is_empty() {
        return None;
    }
    let page = if meta.page_size > 0 {
        meta.page_size
    } else {
        4096
    };
    let mut b = b"\x17\x08\x44tracing0.6\0".to_vec();
    b.push(0);
    b.push(8);
    b.extend((page as u32).to_le_bytes());
    let header_page = HEADER_PAGE.replace("PAGE", &page.saturating_sub(16).to_string());
    for (name, text) in [
        ("header_page", header_page.as_str()),
        ("header_event", HEADER_EVENT),
    ] {
        b.extend(name.as_bytes());
        b.push(0);
        b.extend((text.len() as u64).to_le_bytes());
        b.extend(text.as_bytes());
    }
    b.extend(0u32.to_le_bytes());
    b.extend((systems.len() as u32).to_le_bytes());
    for (system, formats) in &systems {
        b.extend(system.as_bytes());
        b.push(0);
        b.extend((formats.len() as u32).to_le_bytes());
        for f in formats {
            b.extend((f.len() as u64).to_le_bytes());
            b.extend(f.as_bytes());
        }
    }
    b.extend(0u32.to_le_bytes());
    b.extend((meta.trace_printk.len() as u32).to_le_bytes());
    b.extend(meta.trace_printk.as_bytes());
    b.extend(0u64.to_le_bytes());
    Some(b)
}

/// The host facts perf.data's header and perf's JSON state alike, as perf writes them: a
/// perf.data's own, else an hrec file's in perf's terms.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFacts {
    /// VERSION: perf's version, or `hrec VERSION` (empty when unknown).
    pub version: String,
    /// CPUID in perf's comma form (empty when unknown).
    pub cpuid: String,
    /// NRCPUS: available and online.
    pub nr_cpus: Option<(u32, u32)>,
}

impl HostFacts {
    /// The facts of `rec`.
    pub fn of(rec: &Recording) -> HostFacts {
        let meta = rec.meta();
        let info = match &rec.source {
            Source::PerfData(p) => Some(&p.info),
            Source::Hrec(_) => None,
        };
        HostFacts {
            version: match info.and_then(|i| i.perf_version.clone()) {
                Some(v) => v,
                None if !meta.hrec_version.is_empty() => format!("hrec {}", meta.hrec_version),
                None => String::new(),
            },
            cpuid: info
                .and_then(|i| i.cpuid.clone())
                .unwrap_or_else(|| perf_cpuid(&meta.cpuid)),
            nr_cpus: info.and_then(|i| i.nr_cpus).or_else(|| nr_cpus(meta)),
        }
    }
}

/// The CPUID feature as perf writes it (`get_cpuid`: `GenuineIntel,6,207,2`, family, model
/// and stepping in decimal) from hrec's form, perf's PMU-event key (`GenuineIntel-6-CF-2`:
/// the family in decimal, model and stepping in hex); anything else (arm64's MIDR) as it is.
pub fn perf_cpuid(hrec: &str) -> String {
    // hrec's form is perf's `%s-%u-%X-%X`: the family in decimal.
    match (
        hrec.split_once('-'),
        crate::pmu::uarch::CpuId::parse(hrec).filter(|_| !hrec.contains(',')),
    ) {
        (Some((vendor, _)), Some(c)) => {
            format!("{vendor},{},{},{}", c.family, c.model, c.stepping)
        }
        _ => hrec.to_string(),
    }
}

/// NRCPUS of an hrec recording: the CPUs configured and online (at least one), `None` when
/// the file does not say.
fn nr_cpus(meta: &crate::data::Meta) -> Option<(u32, u32)> {
    let online = meta
        .cpus_online
        .parse::<CpuList>()
        .map_or(0, |c| c.len() as u32);
    (meta.nr_cpus > 0).then_some((meta.nr_cpus, online.max(1)))
}

/// The `build-ids` side block (`HEX PATH` lines) as BUILD_ID entries; the kernel and its
/// modules are kernel objects.
fn build_ids(text: &[u8]) -> Vec<BuildId> {
    crate::symbol::symbolizer::parse_build_id_lines(text)
        .into_iter()
        .filter(|(_, id)| !id.is_empty())
        .map(|(path, id)| {
            let path = path.to_string_lossy().into_owned();
            let kernel = path.starts_with("[kernel.")
                || path.starts_with("/lib/modules/")
                || [".ko", ".ko.xz", ".ko.zst", ".ko.gz"]
                    .iter()
                    .any(|s| path.ends_with(s));
            BuildId { id, path, kernel }
        })
        .collect()
}

/// Writes `rec` to `w` as perf.data (file mode; see the module docs).
pub fn to_perf_data<W: Write + Seek>(rec: &Recording, w: W) -> io::Result<(W, Converted)> {
    let (mut header, left_out) = header_of(rec);
    let mut fw = header.start(w)?;
    let (c, sample_time) = records(rec, left_out, &mut |b| fw.records(b))?;
    if let Some((first, last)) = sample_time {
        header.sample_time(first, last);
    }
    let w = fw.finish(&header)?;
    Ok((w, c))
}

/// Writes `rec` to `w` as perf.data in pipe mode (`perf record -o -`), which perf reads from
/// a pipe: the attrs and features as records before the samples ([`Header::write_pipe_start`]),
/// the first and last sample's time taken from the recording.
pub fn to_perf_pipe(rec: &Recording, mut w: impl Write) -> io::Result<Converted> {
    let (mut header, left_out) = header_of(rec);
    if let Some((first, last)) = rec.sample_time() {
        header.sample_time(first, last);
    }
    header.write_pipe_start(&mut w)?;
    let (c, _) = records(rec, left_out, &mut |b| w.write_all(b))?;
    w.flush()?;
    Ok(c)
}

/// The records of `rec` as perf.data's data section, in time order, handed to `sink` in
/// batches; with what was converted and the first and last sample's time.
fn records(
    rec: &Recording,
    mut left_out: Vec<String>,
    sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<(Converted, Option<(u64, u64)>)> {
    let meta = rec.meta();
    let plans: Vec<EventPlan> = meta
        .events
        .iter()
        .map(|e| EventPlan {
            off_cpu: e.role == Role::OffCpuTime,
            keeps_stack: e.attr.sample_type & sample::STACK_USER != 0,
        })
        .collect();
    let stacks = meta.unwound_at_record.then(|| rec.stacks());
    let mut c = Converted::default();
    let mut out = Vec::with_capacity(WRITE_BYTES + (1 << 16));
    if let Source::Hrec(_) = &rec.source {
        c.records += kernel_maps(rec, &mut out);
    }
    let mut chain = Vec::new();
    let mut failed: Option<io::Error> = None;
    let mut since_round = 0u64;
    let mut sample_time: Option<(u64, u64)> = None;
    let (mut preempted, mut aggregated) = (0u64, 0u64);
    let flush = |sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
                 out: &mut Vec<u8>,
                 failed: &mut Option<io::Error>| {
        if failed.is_none()
            && let Err(e) = sink(out)
        {
            *failed = Some(e);
        }
        out.clear();
    };
    rec.for_each_raw(|bytes, r| {
        if failed.is_some() {
            return;
        }
        let r = match r {
            Ok(r) => r,
            Err(_) => {
                c.undecodable += 1;
                return;
            }
        };
        match &r {
            Record::Unknown { header } if header.type_ >= 64 => {
                c.user_records += 1;
                return;
            }
            Record::Sample(s) => {
                c.samples += 1;
                if let Some(t) = s.time.filter(|&t| t > 0) {
                    sample_time = Some(sample_time.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
                }
                let plan = rec
                    .event_of_record(&r)
                    .and_then(|e| plans.get(e))
                    .copied()
                    .unwrap_or_default();
                let misc_clear = if plan.off_cpu {
                    preempted += u64::from(s.misc & 0x4000 != 0);
                    aggregated += u64::from(s.misc & 0x2000 != 0);
                    OFFCPU_MISC
                } else {
                    0
                };
                let stack_ref = s
                    .callchain
                    .filter(|ch| ch.len() == 2 && ch.get(0) == Some(STACK_REF))
                    .and_then(|ch| ch.get(1));
                match (stack_ref, &stacks) {
                    (Some(id), Some(table)) => {
                        chain.clear();
                        c.unwound += 1;
                        if !table.expand(id, &mut chain) {
                            c.broken_chains += 1;
                        }
                        if plan.keeps_stack
                            && let Some(user) = chain.iter().position(|&a| a == context::USER)
                        {
                            chain.truncate(user);
                        }
                        if !with_chain(bytes, s, &chain, misc_clear, &mut out) {
                            c.undecodable += 1;
                            c.samples -= 1;
                            return;
                        }
                    }
                    _ => {
                        let at = out.len();
                        out.extend_from_slice(bytes);
                        clear_misc(&mut out[at..], misc_clear);
                    }
                }
            }
            _ => out.extend_from_slice(bytes),
        }
        c.records += 1;
        since_round += 1;
        if since_round >= ROUND_RECORDS {
            out.extend(finished_round());
            since_round = 0;
        }
        if out.len() >= WRITE_BYTES {
            flush(sink, &mut out, &mut failed);
        }
    });
    if since_round > 0 {
        out.extend(finished_round());
    }
    flush(sink, &mut out, &mut failed);
    if let Some(e) = failed {
        return Err(e);
    }
    if let Source::Hrec(r) = &rec.source {
        let names: BTreeSet<&str> = r
            .blocks()
            .iter()
            .filter(|b| b.kind == crate::data::BlockKind::Side)
            .map(|b| b.name.as_str())
            .filter(|n| !n.is_empty() && !["build-ids", "stacks"].contains(n))
            .collect();
        if !names.is_empty() {
            left_out.insert(
                0,
                format!(
                    "hrec's side blocks {}",
                    names.into_iter().collect::<Vec<_>>().join(", ")
                ),
            );
        }
    }
    if preempted > 0 {
        left_out.push(format!(
            "the preempted mark of {preempted} offcpu-time samples (hrec's [preempted] frame)"
        ));
    }
    if aggregated > 0 {
        left_out.push(format!(
            "the interval counts of {aggregated} aggregated offcpu-time samples (perf counts each as one sample)"
        ));
    }
    c.left_out = left_out;
    Ok((c, sample_time))
}

/// The kernel's maps as `perf record` synthesizes them before the first sample
/// (`perf_event__synthesize_kernel_mmap`, `perf_event__synthesize_modules`): a
/// `PERF_RECORD_MMAP` of pid -1 with `misc` KERNEL, `[kernel.kallsyms]_text` from `_text` to
/// `_etext` with `_text` as its page offset, then each module from its load address over its
/// size, named `[NAME]`, each with a zero sample-id trailer (perf gives a record with id 0 to
/// the first event). hrec keeps what they come from in its `kallsyms` and `modules` side
/// blocks; perf needs the maps to look kernel addresses up at all. Returns how many were
/// appended.
fn kernel_maps(rec: &Recording, out: &mut Vec<u8>) -> u64 {
    let Some(first) = rec.meta().events.first() else {
        return 0;
    };
    let layout = crate::decode::Layout::from_attr(&first.attr);
    let trailer = if layout.sample_id_all {
        layout.trailer_size()
    } else {
        0
    };
    let mut n = 0;
    let mut map = |out: &mut Vec<u8>, start: u64, len: u64, pgoff: u64, name: &str| {
        let name_len = (name.len() + 1).next_multiple_of(8);
        let size = 8 + 8 + 24 + name_len + trailer;
        out.extend(crate::decode::kind::MMAP.to_le_bytes());
        out.extend(1u16.to_le_bytes());
        out.extend((size as u16).to_le_bytes());
        out.extend(u32::MAX.to_le_bytes());
        out.extend(0u32.to_le_bytes());
        for v in [start, len, pgoff] {
            out.extend(v.to_le_bytes());
        }
        let at = out.len();
        out.extend(name.as_bytes());
        out.resize(at + name_len + trailer, 0);
        n += 1;
    };
    let symbols = rec.kernel_symbols();
    if let Some((text, etext)) = symbols.text_range() {
        map(out, text, etext - text, text, "[kernel.kallsyms]_text");
    }
    if let Some(modules) = rec.side("modules") {
        for l in String::from_utf8_lossy(&modules).lines() {
            let f: Vec<&str> = l.split_ascii_whitespace().collect();
            let (Some(name), Some(size), Some(addr)) = (f.first(), f.get(1), f.get(5)) else {
                continue;
            };
            let (Ok(size), Ok(addr)) = (
                size.parse::<u64>(),
                u64::from_str_radix(addr.trim_start_matches("0x"), 16),
            ) else {
                continue;
            };
            if addr != 0 && size != 0 {
                map(out, addr, size, 0, &format!("[{name}]"));
            }
        }
    }
    n
}

/// Clears `bits` of a record's `misc`.
fn clear_misc(record: &mut [u8], bits: u16) {
    if bits != 0
        && let Some(m) = record.get_mut(4..6)
    {
        let misc = u16::from_le_bytes([m[0], m[1]]) & !bits;
        m.copy_from_slice(&misc.to_le_bytes());
    }
}

/// Appends sample `s` (decoded from `record`) with its CALLCHAIN replaced by `chain` and
/// `misc_clear` cleared; a chain too long for a record's 64 KiB keeps its innermost entries.
/// `false` (nothing appended) when the chain cannot be located.
fn with_chain(
    record: &[u8],
    s: &Sample<'_>,
    chain: &[u64],
    misc_clear: u16,
    out: &mut Vec<u8>,
) -> bool {
    let Some(span) = s.chain_span(record) else {
        return false;
    };
    let (Some(head), Some(tail)) = (record.get(..span.start), record.get(span.end..)) else {
        return false;
    };
    // The largest record size that is a multiple of 8.
    let room = (usize::from(u16::MAX) - 7).saturating_sub(head.len() + 8 + tail.len()) / 8;
    let chain = &chain[..chain.len().min(room)];
    let start = out.len();
    out.extend_from_slice(head);
    out.extend_from_slice(&(chain.len() as u64).to_le_bytes());
    for a in chain {
        out.extend_from_slice(&a.to_le_bytes());
    }
    out.extend_from_slice(tail);
    let size = (out.len() - start) as u16;
    out[start + 6..start + 8].copy_from_slice(&size.to_le_bytes());
    clear_misc(&mut out[start..], misc_clear);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuid_is_perfs_comma_form() {
        assert_eq!(perf_cpuid("GenuineIntel-6-CF-2"), "GenuineIntel,6,207,2");
        // The family is decimal in both forms (Zen 4: 25).
        assert_eq!(perf_cpuid("AuthenticAMD-25-61-2"), "AuthenticAMD,25,97,2");
        assert_eq!(perf_cpuid(""), "");
        assert_eq!(perf_cpuid("0x00000000410fd4f0"), "0x00000000410fd4f0");
    }

    #[test]
    fn build_id_lines_become_entries_with_the_kernel_marked() {
        let ids = build_ids(
            b"0a0b [kernel.kallsyms]\n0c0d /usr/lib/libc.so.6\n0e0f /lib/modules/6.1/kernel/x.ko\nzz /bad\n",
        );
        assert_eq!(
            ids,
            [
                BuildId {
                    id: vec![10, 11],
                    path: "[kernel.kallsyms]".into(),
                    kernel: true
                },
                BuildId {
                    id: vec![12, 13],
                    path: "/usr/lib/libc.so.6".into(),
                    kernel: false
                },
                BuildId {
                    id: vec![14, 15],
                    path: "/lib/modules/6.1/kernel/x.ko".into(),
                    kernel: true
                },
            ]
        );
    }

    #[test]
    fn a_chain_is_replaced_in_place_and_the_size_follows() {
        use crate::decode::Decoder;
        use crate::event::Attr;
        let attr = Attr {
            sample_type: sample::IP | sample::CALLCHAIN | sample::PERIOD,
            ..Attr::default()
        };
        let d = Decoder::new([(1, attr)]);
        let mut rec = Vec::new();
        rec.extend(9u32.to_le_bytes());
        rec.extend(0x6002u16.to_le_bytes());
        rec.extend(48u16.to_le_bytes());
        for w in [0x1000u64, 77, 2, STACK_REF, 5] {
            rec.extend(w.to_le_bytes());
        }
        let raw = crate::decode::RawRecord::new(&rec, 0).unwrap();
        let Ok(Record::Sample(s)) = d.decode(&raw) else {
            panic!()
        };
        let mut out = Vec::new();
        assert!(with_chain(
            &rec,
            &s,
            &[context::USER, 0x1000, 0x2000],
            OFFCPU_MISC,
            &mut out
        ));
        let raw = crate::decode::RawRecord::new(&out, 0).unwrap();
        let Ok(Record::Sample(s)) = d.decode(&raw) else {
            panic!()
        };
        assert_eq!(out.len(), 56);
        assert_eq!(s.misc, 2);
        assert_eq!(s.period, Some(77));
        assert_eq!(
            s.callchain.unwrap().iter().collect::<Vec<_>>(),
            [context::USER, 0x1000, 0x2000]
        );
    }
}
