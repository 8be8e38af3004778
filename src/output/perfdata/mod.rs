//! perf.data written as `perf record` writes it in file mode, for every tool that reads perf's
//! files (perf itself, hotspot, FlameGraph's scripts, AutoFDO, BOLT): the file writer here,
//! and [`convert`], which turns a recording (hrec's own or a perf.data) into one.
//!
//! Written from perf's writer, not from hrec's reader: `perf_session__write_header` and
//! `perf_header__adds_write` in `tools/perf/util/header.c` (6.1), and the `write_*` function
//! of each feature there. The layout:
//!
//! ```text
//! 0    struct perf_file_header (104 bytes): magic "PERFILE2", size 104,
//!      attr_size = sizeof(struct perf_file_attr), attrs {offset, size}, data {offset, size},
//!      event_types {0, 0}, adds_features (a 256-bit feature bitmap, 4 u64)
//! 104  every event's ids (u64 each), event after event
//!      the attrs: per event struct perf_file_attr { perf_event_attr attr; {offset, size} ids }
//!      the data section: the records
//!      the feature table: one {offset, size} per set feature bit, in bit order
//!      the feature sections, in the same order
//! ```
//!
//! The header is written last (perf rewrites it when the recording ends too): until then the
//! file has a zero data size, which perf reads as an empty recording, not a corrupt one.
//!
//! Strings in feature sections are `do_write_string`'s: a u32 length that counts the NUL and
//! pads to 64 bytes (`NAME_ALIGN`), then the bytes, NUL-padded to that length. EVENT_DESC and
//! GROUP_DESC are made from the events and groups given; the other sections from the setters.
//! Attrs are written in perf 6.1's size (`PERF_ATTR_SIZE_VER7`, 128 bytes), which every perf
//! and hotspot reads.

pub mod convert;

use std::collections::BTreeMap;
use std::io::{self, Seek, SeekFrom, Write};

use crate::event::Attr;
use crate::recording::perfdata::{MAGIC, feature, user};

/// `NAME_ALIGN` of `do_write_string`.
const NAME_ALIGN: usize = 64;

/// `sizeof(struct perf_file_header)`.
const HEADER_SIZE: u64 = 104;

/// `sizeof(struct perf_event_attr)` in perf 6.1 (`PERF_ATTR_SIZE_VER7`): what it writes as the
/// attr and as its `size` field.
pub const ATTR_SIZE: u32 = 128;

/// `PERF_RECORD_EVENT_UPDATE`: perf's record of an event's unit, scale, name or CPUs.
const EVENT_UPDATE: u32 = 78;

/// `PERF_EVENT_UPDATE__NAME`.
const EVENT_UPDATE_NAME: u64 = 2;

/// `PERF_RECORD_MISC_BUILD_ID_SIZE`: a build-id record's byte 20 of the id is its length.
const MISC_BUILD_ID_SIZE: u16 = 1 << 15;

/// One evsel: its attr, its name (EVENT_DESC) and the ids of its fds.
#[derive(Debug, Clone)]
pub struct Event {
    /// The attr as opened.
    pub attr: Attr,
    /// `evsel__name`.
    pub name: String,
    /// One id per fd (per CPU or thread it was opened on).
    pub ids: Vec<u64>,
}

/// A group (GROUP_DESC): its name, leader index and member count.
#[derive(Debug, Clone)]
pub struct Group {
    /// `group_name`, `None` for perf's `{anon_group}`.
    pub name: Option<String>,
    /// Index of the leader among the events.
    pub leader: u32,
    /// Members, leader included; the members follow the leader.
    pub members: u32,
}

/// One entry of the BUILD_ID section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildId {
    /// The id's bytes (at most 20 are written).
    pub id: Vec<u8>,
    /// The file's path as it was mapped (`[kernel.kallsyms]` for the kernel).
    pub path: String,
    /// A kernel object (the kernel or a module): `PERF_RECORD_MISC_KERNEL`, else `USER`.
    pub kernel: bool,
}

/// The parts of a perf.data file other than its records.
#[derive(Debug, Clone, Default)]
pub struct Header {
    /// The evsels, in evlist order.
    pub events: Vec<Event>,
    /// The groups (written as GROUP_DESC when there are any).
    pub groups: Vec<Group>,
    /// Feature sections other than EVENT_DESC and GROUP_DESC, by bit.
    pub features: BTreeMap<u32, Vec<u8>>,
}

/// `s` as `do_write_string` writes it.
pub fn string(s: &str) -> Vec<u8> {
    let len = (s.len() + 1).next_multiple_of(NAME_ALIGN);
    let mut v = (len as u32).to_le_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v.resize(4 + len, 0);
    v
}

/// `attr` in the kernel's `struct perf_event_attr` layout, `size` bytes (the `size` field
/// says so too).
pub fn attr_bytes(a: &Attr, size: u32) -> Vec<u8> {
    let mut b = a.to_bytes().to_vec();
    b[4..8].copy_from_slice(&size.to_le_bytes());
    b.resize(size as usize, 0);
    b
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A record of perf's own types (>= 64): header, then `body`.
pub fn user_record(type_: u32, misc: u16, body: &[u8]) -> Vec<u8> {
    let mut b = type_.to_le_bytes().to_vec();
    b.extend(misc.to_le_bytes());
    b.extend((8 + body.len() as u16).to_le_bytes());
    b.extend_from_slice(body);
    b
}

/// `PERF_RECORD_FINISHED_ROUND`: perf's record after each pass over the ring buffers; the
/// records before it are older than those after the next one.
pub fn finished_round() -> Vec<u8> {
    user_record(user::FINISHED_ROUND, 0, &[])
}

impl Header {
    /// No events, no features.
    pub fn new() -> Header {
        Header::default()
    }

    /// Adds an evsel; returns its index.
    pub fn event(&mut self, attr: Attr, name: &str, ids: Vec<u64>) -> usize {
        self.events.push(Event {
            attr,
            name: name.to_string(),
            ids,
        });
        self.events.len() - 1
    }

    /// Adds a group of `members` events (leader included) led by event `leader`.
    pub fn group(&mut self, leader: usize, members: u32) {
        self.groups.push(Group {
            name: None,
            leader: leader as u32,
            members,
        });
    }

    /// A string feature (HOSTNAME, OSRELEASE, VERSION, ARCH, CPUDESC, CPUID).
    pub fn string_feature(&mut self, f: u32, s: &str) {
        self.features.insert(f, string(s));
    }

    /// NRCPUS: CPUs available (`cpu__max_present_cpu`) and online.
    pub fn nrcpus(&mut self, available: u32, online: u32) {
        self.features
            .insert(feature::NRCPUS, u32s(&[available, online]));
    }

    /// NUMA_TOPOLOGY: per node its number, total and free memory (kB) and CPU list.
    pub fn numa_topology(&mut self, nodes: &[(u32, u64, u64, &str)]) {
        let mut b = u32s(&[nodes.len() as u32]);
        for (nr, total, free, cpus) in nodes {
            b.extend_from_slice(&nr.to_le_bytes());
            b.extend_from_slice(&total.to_le_bytes());
            b.extend_from_slice(&free.to_le_bytes());
            b.extend(string(cpus));
        }
        self.features.insert(feature::NUMA_TOPOLOGY, b);
    }

    /// TOTAL_MEM in kB.
    pub fn total_mem(&mut self, kb: u64) {
        self.features.insert(feature::TOTAL_MEM, u64s(&[kb]));
    }

    /// CMDLINE: the argument count, then each argument as a string (perf's own path first).
    pub fn cmdline(&mut self, args: &[&str]) {
        let mut b = u32s(&[args.len() as u32]);
        for a in args {
            b.extend(string(a));
        }
        self.features.insert(feature::CMDLINE, b);
    }

    /// PMU_MAPPINGS: the number of PMUs, then each PMU's type (u32) and name.
    pub fn pmu_mappings(&mut self, pmus: &[(u32, &str)]) {
        let mut b = u32s(&[pmus.len() as u32]);
        for (t, n) in pmus {
            b.extend(t.to_le_bytes());
            b.extend(string(n));
        }
        self.features.insert(feature::PMU_MAPPINGS, b);
    }

    /// CPU_TOPOLOGY as perf 6.1 writes it: the package lists, the core lists (a count, then
    /// the strings), each CPU's core and package id; then, where the machine has dies, the
    /// die lists and each CPU's die id.
    pub fn cpu_topology(&mut self, t: &crate::pmu::CpuTopology) {
        let mut b = Vec::new();
        for lists in [&t.packages, &t.cores] {
            b.extend(u32s(&[lists.len() as u32]));
            for l in lists {
                b.extend(string(l));
            }
        }
        for [core, package, _] in &t.ids {
            b.extend(core.to_le_bytes());
            b.extend(package.to_le_bytes());
        }
        if !t.dies.is_empty() {
            b.extend(u32s(&[t.dies.len() as u32]));
            for l in &t.dies {
                b.extend(string(l));
            }
            for [_, _, die] in &t.ids {
                b.extend(die.to_le_bytes());
            }
        }
        self.features.insert(feature::CPU_TOPOLOGY, b);
    }

    /// HYBRID_TOPOLOGY: the number of core PMUs, then each one's name and CPU list.
    pub fn hybrid_topology(&mut self, pmus: &[(&str, &str)]) {
        let mut b = u32s(&[pmus.len() as u32]);
        for (n, cpus) in pmus {
            b.extend(string(n));
            b.extend(string(cpus));
        }
        self.features.insert(feature::HYBRID_TOPOLOGY, b);
    }

    /// SAMPLE_TIME: the first and last sample's time.
    pub fn sample_time(&mut self, first: u64, last: u64) {
        self.features
            .insert(feature::SAMPLE_TIME, u64s(&[first, last]));
    }

    /// CLOCK_DATA (`write_clock_data`, version 1): the clock the events used (`clockid`), and
    /// one moment read on the wall clock and on that clock, both in ns.
    pub fn clock_data(&mut self, clockid: u32, wall_ns: u64, clock_ns: u64) {
        let mut b = u32s(&[1, clockid]);
        b.extend(u64s(&[wall_ns, clock_ns]));
        self.features.insert(feature::CLOCK_DATA, b);
    }

    /// BUILD_ID (`write_build_id`): a `perf_record_header_build_id` per file, as perf 6.1
    /// writes them: misc `KERNEL` or `USER` with `BUILD_ID_SIZE`, pid -1 (the host), the id
    /// in 24 bytes with its length at byte 20, the path NUL-padded to 64 bytes.
    pub fn build_ids(&mut self, ids: &[BuildId]) {
        let mut b = Vec::new();
        for e in ids {
            let name = (e.path.len() + 1).next_multiple_of(NAME_ALIGN);
            let size = 36 + name;
            let Ok(size) = u16::try_from(size) else {
                continue;
            };
            let misc: u16 = if e.kernel { 1 } else { 2 };
            b.extend(user::HEADER_BUILD_ID.to_le_bytes());
            b.extend((misc | MISC_BUILD_ID_SIZE).to_le_bytes());
            b.extend(size.to_le_bytes());
            b.extend((-1i32).to_le_bytes());
            let n = e.id.len().min(20);
            let mut id = [0u8; 24];
            id[..n].copy_from_slice(&e.id[..n]);
            id[20] = n as u8;
            b.extend(id);
            let at = b.len();
            b.extend(e.path.as_bytes());
            b.resize(at + name, 0);
        }
        self.features.insert(feature::BUILD_ID, b);
    }

    /// EVENT_DESC (`write_event_desc`): the number of events and the attr size (u32 each),
    /// then per event its attr, the number of ids (u32), its name and its ids.
    fn event_desc(&self) -> Vec<u8> {
        let mut b = u32s(&[self.events.len() as u32, ATTR_SIZE]);
        for e in &self.events {
            b.extend(attr_bytes(&e.attr, ATTR_SIZE));
            b.extend((e.ids.len() as u32).to_le_bytes());
            b.extend(string(&e.name));
            b.extend(u64s(&e.ids));
        }
        b
    }

    /// GROUP_DESC (`write_group_desc`): the number of groups (u32), then per group its name
    /// (`{anon_group}` without one), the leader's index and the member count (u32 each).
    fn group_desc(&self) -> Vec<u8> {
        let mut b = u32s(&[self.groups.len() as u32]);
        for g in &self.groups {
            b.extend(string(g.name.as_deref().unwrap_or("{anon_group}")));
            b.extend(u32s(&[g.leader, g.members]));
        }
        b
    }

    /// Every feature section: the ones set, EVENT_DESC and GROUP_DESC.
    fn all_features(&self) -> BTreeMap<u32, Vec<u8>> {
        let mut features = self.features.clone();
        if !self.events.is_empty() {
            features.insert(feature::EVENT_DESC, self.event_desc());
        }
        if !self.groups.is_empty() {
            features.insert(feature::GROUP_DESC, self.group_desc());
        }
        features
    }

    /// Pipe mode's start (`perf record -o -`), before the records: the 16-byte header
    /// (`PERFILE2`, size 16), a `HEADER_ATTR` record per event (its attr, then its ids), a
    /// `HEADER_FEATURE` record per feature section (its number as a u64, then the section),
    /// BUILD_ID as the `HEADER_BUILD_ID` records it is made of and TRACING_DATA as a
    /// `HEADER_TRACING_DATA` record followed by the data, as perf sends them, and an
    /// `EVENT_UPDATE` record with each event's name. A record's
    /// size is a u16: an event with more ids or a section longer than a record holds is an
    /// error.
    pub fn write_pipe_start(&self, w: &mut impl Write) -> io::Result<()> {
        let too_big = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
        let mut b = MAGIC.to_vec();
        b.extend(16u64.to_le_bytes());
        for e in &self.events {
            let mut body = attr_bytes(&e.attr, ATTR_SIZE);
            body.extend(u64s(&e.ids));
            if body.len() + 8 > usize::from(u16::MAX) {
                return Err(too_big(format!(
                    "event {} has {} ids, more than a pipe-mode record holds; write a file instead",
                    e.name,
                    e.ids.len()
                )));
            }
            b.extend(user_record(user::HEADER_ATTR, 0, &body));
        }
        for (bit, data) in self.all_features() {
            if bit == feature::BUILD_ID {
                b.extend(&data);
                continue;
            }
            if bit == feature::TRACING_DATA {
                // `HEADER_TRACING_DATA`: its size (u32, the padded size, which perf checks
                // against what it read and the padding after it) in the record, the data
                // after it, NUL-padded to 8 bytes.
                let padded = data.len().next_multiple_of(8);
                let mut body = (padded as u32).to_le_bytes().to_vec();
                body.extend(0u32.to_le_bytes());
                b.extend(user_record(user::HEADER_TRACING_DATA, 0, &body));
                let at = b.len();
                b.extend(&data);
                b.resize(at + padded, 0);
                continue;
            }
            let mut body = u64::from(bit).to_le_bytes().to_vec();
            body.extend(&data);
            if body.len() + 8 > usize::from(u16::MAX) {
                return Err(too_big(format!(
                    "the {} section ({} bytes) is longer than a pipe-mode record holds; write a file instead",
                    feature::name(bit),
                    data.len()
                )));
            }
            b.extend(user_record(user::HEADER_FEATURE, 0, &body));
        }
        // perf names a pipe's events from `EVENT_UPDATE` records (type 2, NAME: the id of
        // one of the event's fds, then the name), not from EVENT_DESC.
        for e in &self.events {
            let Some(&id) = e.ids.first() else {
                continue;
            };
            let mut body = u64s(&[EVENT_UPDATE_NAME, id]);
            body.extend(e.name.as_bytes());
            // perf's size: the struct (40 bytes, its union as long as a CPU map's header)
            // and the name's bytes, NUL-padded to 8.
            body.resize(32 + (e.name.len() + 1).next_multiple_of(8), 0);
            if body.len() + 8 <= usize::from(u16::MAX) {
                b.extend(user_record(EVENT_UPDATE, 0, &body));
            }
        }
        w.write_all(&b)
    }

    /// Starts a file on `w` (at its current position 0): a zeroed header, the ids and the
    /// attrs. The records follow ([`FileWriter::records`]); [`FileWriter::finish`] writes
    /// the features and the header.
    pub fn start<W: Write + Seek>(&self, mut w: W) -> io::Result<FileWriter<W>> {
        let mut b = vec![0u8; HEADER_SIZE as usize];
        let mut id_sections = Vec::new();
        for e in &self.events {
            id_sections.push((b.len() as u64, 8 * e.ids.len() as u64));
            b.extend(u64s(&e.ids));
        }
        let attrs_at = b.len() as u64;
        for (e, (off, size)) in self.events.iter().zip(&id_sections) {
            b.extend(attr_bytes(&e.attr, ATTR_SIZE));
            b.extend(u64s(&[*off, *size]));
        }
        let attrs_size = b.len() as u64 - attrs_at;
        w.seek(SeekFrom::Start(0))?;
        w.write_all(&b)?;
        Ok(FileWriter {
            w,
            attrs_at,
            attrs_size,
            data_at: b.len() as u64,
            data_size: 0,
        })
    }

    /// The whole file with `records` as its data section.
    pub fn bytes(&self, records: &[u8]) -> Vec<u8> {
        let run = || -> io::Result<Vec<u8>> {
            let mut f = self.start(io::Cursor::new(Vec::new()))?;
            f.records(records)?;
            Ok(f.finish(self)?.into_inner())
        };
        // Writing to memory does not fail.
        run().unwrap_or_default()
    }
}

/// A perf.data file being written: the records go after the attrs, then
/// [`finish`](Self::finish).
#[derive(Debug)]
pub struct FileWriter<W> {
    w: W,
    attrs_at: u64,
    attrs_size: u64,
    data_at: u64,
    data_size: u64,
}

impl<W: Write + Seek> FileWriter<W> {
    /// Appends records (whole, each `header.size` bytes) to the data section.
    pub fn records(&mut self, b: &[u8]) -> io::Result<()> {
        self.w.write_all(b)?;
        self.data_size += b.len() as u64;
        Ok(())
    }

    /// Bytes of records written so far.
    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    /// Writes the feature table and sections of `h` (EVENT_DESC and GROUP_DESC from its
    /// events and groups) after the records, then the file header; returns the writer.
    pub fn finish(mut self, h: &Header) -> io::Result<W> {
        let features = h.all_features();
        let table_at = self.data_at + self.data_size;
        let mut table = Vec::with_capacity(16 * features.len());
        let mut sections = Vec::new();
        let mut bitmap = [0u64; 4];
        let mut at = table_at + 16 * features.len() as u64;
        for (bit, data) in &features {
            bitmap[*bit as usize / 64] |= 1 << (bit % 64);
            table.extend(u64s(&[at, data.len() as u64]));
            sections.extend_from_slice(data);
            at += data.len() as u64;
        }
        self.w.write_all(&table)?;
        self.w.write_all(&sections)?;
        let mut header = MAGIC.to_vec();
        header.extend(u64s(&[
            HEADER_SIZE,
            u64::from(ATTR_SIZE) + 16,
            self.attrs_at,
            self.attrs_size,
            self.data_at,
            self.data_size,
            0,
            0,
        ]));
        header.extend(u64s(&bitmap));
        self.w.seek(SeekFrom::Start(0))?;
        self.w.write_all(&header)?;
        self.w.seek(SeekFrom::End(0))?;
        self.w.flush()?;
        Ok(self.w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::perfdata::PerfData;

    #[test]
    fn strings_count_their_nul_and_pad_to_64() {
        let s = string("cycles");
        assert_eq!(u32::from_le_bytes(s[..4].try_into().unwrap()), 64);
        assert_eq!(s.len(), 68);
        assert_eq!(&s[4..11], b"cycles\0");
        assert_eq!(string(&"x".repeat(64)).len(), 4 + 128);
    }

    #[test]
    fn a_written_file_reads_back_with_its_events_and_build_ids() {
        let mut h = Header::new();
        let attr = Attr {
            size: ATTR_SIZE,
            sample_type: crate::event::attr::sample::IP | crate::event::attr::sample::TID,
            ..Attr::default()
        };
        h.event(attr, "cpu-clock", vec![7, 8]);
        h.string_feature(feature::HOSTNAME, "box");
        h.build_ids(&[BuildId {
            id: vec![0xab; 20],
            path: "/usr/bin/x".into(),
            kernel: false,
        }]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.data");
        // One sample (ip, pid/tid): a file without records reads as cut short, its features
        // unread.
        let mut sample = 9u32.to_le_bytes().to_vec();
        sample.extend(2u16.to_le_bytes());
        sample.extend(24u16.to_le_bytes());
        sample.extend(0x1000u64.to_le_bytes());
        sample.extend(((43u64 << 32) | 42).to_le_bytes());
        std::fs::write(&path, h.bytes(&sample)).unwrap();
        let p = PerfData::read_with(&path, false).unwrap();
        assert_eq!(p.meta.events.len(), 1);
        assert_eq!(p.meta.events[0].name, "cpu-clock");
        assert_eq!(
            p.meta.events[0]
                .ids
                .iter()
                .map(|i| i.id)
                .collect::<Vec<_>>(),
            [7, 8]
        );
        assert_eq!(p.meta.hostname, "box");
        assert_eq!(
            p.side("build-ids").map(|b| String::from_utf8(b).unwrap()),
            Some(format!("{} /usr/bin/x\n", "ab".repeat(20)))
        );
    }
}
