//! A checked perf.data in hrec's terms: the events with their attrs, ids, names, PMUs,
//! leaders and roles ([`Meta`]), and the feature facts that have no place there
//! ([`PerfDataInfo`], for `hrec info`). An event without a name in EVENT_DESC gets perf's
//! (the legacy name, else `pmu/config=0x../`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::features::{
    BuildIdEntry, GroupDesc, parse_build_ids, parse_group_desc, parse_pmu_mappings,
    parse_string_list,
};
use super::kernel::KernelCheck;
use super::layout::{feature, string_at, u32_at, u64_at};
use super::prepare::Prepared;
use crate::data::{EventId, EventMeta, Meta, PmuMeta, Role};
use crate::event::Attr;
use crate::event::attr::{flag, types};
use crate::event::resolve::{HARDWARE_EVENTS, SOFTWARE_EVENTS};
use crate::pmu::CpuTopology;

/// `PERF_COUNT_SW_DUMMY`.
pub(super) const SW_DUMMY: u64 = 9;

/// The perf.data facts that have no place in [`Meta`], for `hrec info`.
#[derive(Debug, Clone, Default)]
pub struct PerfDataInfo {
    /// The file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub file_len: u64,
    /// Pipe mode (`perf record -o -`).
    pub pipe: bool,
    /// Offset and size of the data section (file mode; the size as read, after any cut).
    pub data_section: (u64, u64),
    /// `perf version`.
    pub perf_version: Option<String>,
    /// `cpuid` (`GenuineIntel,6,167,1`).
    pub cpuid: Option<String>,
    /// CPUs available and online.
    pub nr_cpus: Option<(u32, u32)>,
    /// Total memory in kB.
    pub total_mem_kb: Option<u64>,
    /// Times of the first and last sample, as perf wrote them.
    pub sample_time: Option<(u64, u64)>,
    /// `HEADER_CLOCK_DATA` (`perf record -k CLOCK`): the wall-clock time (ns since the
    /// epoch) and the sample clock's time at one moment.
    pub clock_data: Option<(u64, u64)>,
    /// `perf record -z`: "zstd level 1, ratio 13".
    pub compression: Option<String>,
    /// The feature sections present (perf's names).
    pub features: Vec<String>,
    /// Groups.
    pub groups: Vec<GroupDesc>,
    /// PMU type → name.
    pub pmu_mappings: Vec<(u32, String)>,
    /// The build-id table.
    pub build_ids: Vec<BuildIdEntry>,
    /// The kernel build-id check.
    pub kernel: KernelCheck,
    /// Kernel records read.
    pub records: u64,
    /// Their bytes.
    pub record_bytes: u64,
    /// perf's user records by type, counted at the top level of the data (not kept).
    pub user_records: BTreeMap<u32, u64>,
    /// Why the records end early, when they do.
    pub truncated: Option<String>,
    /// Problems that did not stop the reading.
    pub warnings: Vec<String>,
}

/// perf's name of an event without EVENT_DESC: the legacy name, else `pmu/config=0x../`.
pub(super) fn fallback_name(attr: &Attr, pmus: &[(u32, String)]) -> String {
    let legacy = |table: &[(&str, u64)], id: u64| {
        table
            .iter()
            .find(|(_, v)| *v == id)
            .map(|(n, _)| (*n).to_string())
    };
    let named = match attr.type_ {
        types::HARDWARE => legacy(HARDWARE_EVENTS, attr.config & 0xffff_ffff),
        types::SOFTWARE => legacy(SOFTWARE_EVENTS, attr.config),
        _ => None,
    };
    named.unwrap_or_else(|| {
        let pmu = pmu_of(attr, pmus).unwrap_or_else(|| format!("type{}", attr.type_));
        format!("{pmu}/config={:#x}/", attr.config)
    })
}

/// The PMU of an attr by the PMU mappings: its type, or for legacy hardware and cache events
/// the extended type in `config[63:32]` (hybrid), else the core PMU `cpu`.
pub(super) fn pmu_of(attr: &Attr, pmus: &[(u32, String)]) -> Option<String> {
    let name = |t: u32| pmus.iter().find(|(x, _)| *x == t).map(|(_, n)| n.clone());
    match attr.type_ {
        types::HARDWARE | types::HW_CACHE => match (attr.config >> 32) as u32 {
            0 => pmus
                .iter()
                .find(|(_, n)| n == "cpu")
                .map(|(_, n)| n.clone()),
            ext => name(ext),
        },
        types::SOFTWARE => name(types::SOFTWARE).or_else(|| Some("software".into())),
        t => name(t),
    }
}

/// `dummy` carries side-band records; an event with a period or frequency samples; anything
/// else only counts (in a group with READ, its values come with the sampler's samples).
pub(super) fn role(attr: &Attr) -> Role {
    if attr.type_ == types::SOFTWARE && attr.config == SW_DUMMY {
        Role::Tracking
    } else if attr.sample_period_or_freq != 0 {
        Role::Sampler
    } else {
        Role::Counted
    }
}

/// The header of the recording in hrec's terms, and the feature facts for `info`.
pub(super) fn meta_of(p: &Prepared, info: &mut PerfDataInfo) -> Meta {
    let string = |f: u32| {
        p.features.get(&f).and_then(|d| {
            let mut at = 0;
            string_at(d, &mut at)
        })
    };
    info.features = p.features.keys().map(|&f| feature::name(f)).collect();
    info.perf_version = string(feature::VERSION);
    info.cpuid = string(feature::CPUID);
    info.nr_cpus = p
        .features
        .get(&feature::NRCPUS)
        .and_then(|d| Some((u32_at(d, 0)?, u32_at(d, 4)?)));
    info.total_mem_kb = p
        .features
        .get(&feature::TOTAL_MEM)
        .and_then(|d| u64_at(d, 0));
    info.sample_time = p
        .features
        .get(&feature::SAMPLE_TIME)
        .and_then(|d| Some((u64_at(d, 0)?, u64_at(d, 8)?)))
        .filter(|&(first, last)| last > 0 && first <= last);
    // Version 1: version u32, clockid u32, wall-clock ns u64, clockid ns u64.
    info.clock_data = p
        .features
        .get(&feature::CLOCK_DATA)
        .filter(|d| u32_at(d, 0) == Some(1))
        .and_then(|d| Some((u64_at(d, 8)?, u64_at(d, 16)?)))
        .filter(|&(tod, clock)| tod > 0 && clock > 0);
    info.compression = p.features.get(&feature::COMPRESSED).and_then(|d| {
        let (ty, level, ratio) = (u32_at(d, 4)?, u32_at(d, 8)?, u32_at(d, 12)?);
        let name = if ty == 1 {
            "zstd".to_string()
        } else {
            format!("type {ty}")
        };
        Some(format!("{name} level {level}, ratio {ratio}"))
    });
    info.pmu_mappings = p
        .features
        .get(&feature::PMU_MAPPINGS)
        .map(|d| parse_pmu_mappings(d))
        .unwrap_or_default();
    info.groups = p
        .features
        .get(&feature::GROUP_DESC)
        .map(|d| parse_group_desc(d, p.attrs.len()))
        .unwrap_or_default();
    if let Some(d) = p.features.get(&feature::BUILD_ID) {
        parse_build_ids(d, &mut info.build_ids);
    }
    let leader_of = |i: usize| {
        info.groups
            .iter()
            .find(|g| (g.leader..g.leader + g.members).contains(&i))
            .map_or(i, |g| g.leader)
    };
    // The tracepoints' format files, by id (the tracepoint PMU's config).
    let mut formats: Vec<(u64, String)> = Vec::new();
    let mut printk = String::new();
    if let Some(d) = p.features.get(&feature::TRACING_DATA) {
        let (found, why) = super::tracing::read_tracing_data(d);
        printk = found.printk;
        if let Some(why) = why {
            info.warnings.push(format!(
                "the tracing data is damaged ({why}): the fields of some tracepoints are lost"
            ));
        }
        formats.extend(found.formats.into_iter().filter_map(|f| {
            let id = crate::trace::EventFormat::parse(&f.format).ok()?.id;
            Some((id, f.format))
        }));
    }
    let mut events = Vec::with_capacity(p.attrs.len());
    let mut pmus: Vec<PmuMeta> = Vec::new();
    for (i, a) in p.attrs.iter().enumerate() {
        let attr = Attr::from_bytes(&a.bytes);
        let pmu = pmu_of(&attr, &info.pmu_mappings);
        if let Some(name) = &pmu
            && !pmus.iter().any(|p| &p.name == name)
        {
            let type_ = match attr.type_ {
                types::HARDWARE | types::HW_CACHE if attr.config >> 32 != 0 => {
                    (attr.config >> 32) as u32
                }
                t => t,
            };
            pmus.push(PmuMeta {
                name: name.clone(),
                type_,
                cpus: None,
            });
        }
        let leader = leader_of(i);
        events.push(EventMeta {
            name: a
                .name
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| fallback_name(&attr, &info.pmu_mappings)),
            pmu,
            attr,
            leader,
            role: role(&attr),
            trace_format: formats
                .iter()
                .find(|(id, _)| attr.type_ == types::TRACEPOINT && *id == attr.config)
                .map(|(_, f)| f.clone()),
            ids: a
                .ids
                .iter()
                .map(|&id| EventId {
                    id,
                    cpu: -1,
                    tid: -1,
                })
                .collect(),
        });
    }
    let clockid = events
        .iter()
        .find(|e| e.attr.has(flag::USE_CLOCKID))
        .map(|e| e.attr.clockid);
    // A hybrid part's core PMUs and their CPUs.
    if let Some(d) = p.features.get(&feature::HYBRID_TOPOLOGY) {
        for (name, cpus) in hybrid_topology(d) {
            if let Some(pmu) = pmus.iter_mut().find(|p| p.name == name) {
                pmu.cpus = Some(cpus);
            }
        }
    }
    let numa = p
        .features
        .get(&feature::NUMA_TOPOLOGY)
        .map(|d| numa_topology(d))
        .unwrap_or_default();
    let topology = p
        .features
        .get(&feature::CPU_TOPOLOGY)
        .and_then(|d| cpu_topology(d, info.nr_cpus.map(|(avail, _)| avail)));
    Meta {
        hrec_version: String::new(),
        command_line: p
            .features
            .get(&feature::CMDLINE)
            .map(|d| parse_string_list(d))
            .unwrap_or_default(),
        hostname: string(feature::HOSTNAME).unwrap_or_default(),
        kernel_release: string(feature::OSRELEASE).unwrap_or_default(),
        arch: string(feature::ARCH).unwrap_or_default(),
        cpu_model: string(feature::CPUDESC).unwrap_or_default(),
        // x86's in hrec's form; arm64's is the MIDR (`0x00000000410fd4f0`), kept as it is.
        cpuid: info
            .cpuid
            .as_deref()
            .and_then(|c| {
                crate::pmu::uarch::CpuId::parse(c)
                    .map(|c| c.to_string())
                    .or_else(|| crate::pmu::vendor::Midr::parse(c).map(|m| m.to_string()))
            })
            .unwrap_or_default(),
        nr_cpus: info.nr_cpus.map_or(0, |(avail, _)| avail),
        clockid,
        target: if info.pipe {
            "perf record (pipe mode)".into()
        } else {
            "perf record".into()
        },
        pmus,
        events,
        numa_nodes: numa
            .iter()
            .map(|(n, _, _, cpus)| (*n, cpus.clone()))
            .collect(),
        numa_memory_kb: numa.iter().map(|&(n, t, f, _)| (n, t, f)).collect(),
        threads_per_core: topology.as_ref().and_then(CpuTopology::threads_per_core),
        cpu_topology: topology,
        trace_printk: printk,
        total_mem_kb: info.total_mem_kb,
        ..Meta::default()
    }
}

/// CPU_TOPOLOGY: a string list of the packages' CPU lists (core siblings), then a string
/// list of the cores' (thread siblings); then, for the `avail` CPUs of NRCPUS when the section
/// holds them, each CPU's core and package id (i32 each); then, where the machine has dies,
/// a string list of the dies' CPU lists and each CPU's die id. `None` when cut short before
/// the core lists; what follows them is kept as far as it is whole.
fn cpu_topology(d: &[u8], avail: Option<u32>) -> Option<CpuTopology> {
    // A string list, and whether it was whole.
    let lists = |at: &mut usize| -> (Vec<String>, bool) {
        let Some(n) = u32_at(d, *at) else {
            return (Vec::new(), false);
        };
        *at += 4;
        let mut v = Vec::new();
        for _ in 0..n {
            match string_at(d, at) {
                Some(s) => v.push(s),
                None => return (v, false),
            }
        }
        (v, true)
    };
    let mut at = 0;
    let (packages, whole) = lists(&mut at);
    if !whole {
        return None;
    }
    let (cores, whole) = lists(&mut at);
    let mut t = CpuTopology {
        packages,
        cores,
        ..CpuTopology::default()
    };
    if !whole {
        return Some(t);
    }
    let Some(n) = avail.map(|n| n as usize) else {
        return Some(t);
    };
    let i32_at = |at: usize| u32_at(d, at).map(|v| v as i32);
    if d.len().saturating_sub(at) / 8 < n {
        return Some(t);
    }
    t.ids = (0..n)
        .map(|i| {
            [
                i32_at(at + 8 * i).unwrap_or(-1),
                i32_at(at + 8 * i + 4).unwrap_or(-1),
                -1,
            ]
        })
        .collect();
    at += 8 * n;
    let (dies, whole) = lists(&mut at);
    if whole && d.len().saturating_sub(at) / 4 >= n {
        for (i, ids) in t.ids.iter_mut().enumerate() {
            ids[2] = i32_at(at + 4 * i).unwrap_or(-1);
        }
        t.dies = dies;
    }
    Some(t)
}

/// HYBRID_TOPOLOGY: u32 count, then per core PMU its name and CPU list.
fn hybrid_topology(d: &[u8]) -> Vec<(String, String)> {
    let mut v = Vec::new();
    let n = u32_at(d, 0).unwrap_or(0).min(64);
    let mut at = 4;
    for _ in 0..n {
        let (Some(pmu), Some(cpus)) = (string_at(d, &mut at), string_at(d, &mut at)) else {
            break;
        };
        v.push((pmu, cpus));
    }
    v
}

/// NUMA_TOPOLOGY: u32 count, then per node its number, total and free memory (kB, u64 each)
/// and its CPU list (a `perf_header_string`); what cannot be read is left out.
fn numa_topology(d: &[u8]) -> Vec<(u32, u64, u64, String)> {
    let mut v = Vec::new();
    let n = u32_at(d, 0).unwrap_or(0);
    let mut at = 4;
    for _ in 0..n {
        let (Some(node), Some(total), Some(free)) =
            (u32_at(d, at), u64_at(d, at + 4), u64_at(d, at + 12))
        else {
            break;
        };
        at += 4 + 16;
        let Some(cpus) = string_at(d, &mut at) else {
            break;
        };
        v.push((node, total, free, cpus));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::{CpuTopology, cpu_topology, numa_topology};

    fn cpu_topology_threads(b: &[u8]) -> Option<u32> {
        cpu_topology(b, None).and_then(|t| t.threads_per_core())
    }

    /// A `perf_header_string` list as perf writes it: count, then each string's padded
    /// length and bytes.
    fn strings(list: &[&str]) -> Vec<u8> {
        let mut b = (list.len() as u32).to_le_bytes().to_vec();
        for s in list {
            let mut s = s.as_bytes().to_vec();
            s.resize((s.len() + 1).next_multiple_of(64), 0);
            b.extend_from_slice(&(s.len() as u32).to_le_bytes());
            b.extend_from_slice(&s);
        }
        b
    }

    #[test]
    fn cpu_topology_threads_per_core() {
        // Two packages of two cores of two threads, then per-CPU core and socket ids.
        let mut b = strings(&["0-1,4-5", "2-3,6-7"]);
        b.extend(strings(&["0,4", "1,5", "2,6", "3,7"]));
        b.extend_from_slice(&[0; 64]);
        assert_eq!(cpu_topology_threads(&b), Some(2));
        // A hybrid part: P-core pairs and single E-cores.
        let mut b = strings(&["0-5"]);
        b.extend(strings(&["0-1", "2-3", "4", "5"]));
        assert_eq!(cpu_topology_threads(&b), Some(2));
        // No SMT.
        let mut b = strings(&["0-3"]);
        b.extend(strings(&["0", "1", "2", "3"]));
        assert_eq!(cpu_topology_threads(&b), Some(1));
        // Cut short before the cores' lists, or empty: unknown.
        assert_eq!(cpu_topology_threads(&strings(&["0-3"])), None);
        assert_eq!(cpu_topology_threads(&[]), None);
        // Huge ranges are counted, not expanded; a list that is none is passed over.
        let mut b = strings(&["0-3"]);
        b.extend(strings(&["0-4294967295,0-4294967295", "x"]));
        assert_eq!(cpu_topology_threads(&b), Some(u32::MAX));
    }

    /// The per-CPU ids and the dies, as perf 6.1 writes them for the CPUs of NRCPUS; a
    /// section cut inside them keeps the lists.
    #[test]
    fn cpu_topology_ids_and_dies() {
        let mut b = strings(&["0-3"]);
        b.extend(strings(&["0-1", "2-3"]));
        for (core, socket) in [(0i32, 0i32), (0, 0), (1, 0), (1, 0)] {
            b.extend(core.to_le_bytes());
            b.extend(socket.to_le_bytes());
        }
        b.extend(strings(&["0-3"]));
        b.extend([0u8; 16]);
        let t = cpu_topology(&b, Some(4)).unwrap();
        assert_eq!(
            t,
            CpuTopology {
                packages: vec!["0-3".into()],
                cores: vec!["0-1".into(), "2-3".into()],
                dies: vec!["0-3".into()],
                ids: vec![[0, 0, 0], [0, 0, 0], [1, 0, 0], [1, 0, 0]],
            }
        );
        let cut = cpu_topology(&b[..b.len() - 4], Some(4)).unwrap();
        assert!(cut.dies.is_empty() && cut.ids[2] == [1, 0, -1], "{cut:?}");
        // More CPUs than the section holds: the lists alone.
        let t = cpu_topology(&b, Some(1000)).unwrap();
        assert!(t.ids.is_empty() && t.cores.len() == 2);
    }

    #[test]
    fn numa_topology_nodes_and_cpu_lists() {
        let mut b = 2u32.to_le_bytes().to_vec();
        for (n, cpus) in [(0u32, "0-3"), (1, "4-7")] {
            b.extend_from_slice(&n.to_le_bytes());
            b.extend_from_slice(&[0; 16]);
            let mut s = cpus.as_bytes().to_vec();
            s.resize(64, 0);
            b.extend_from_slice(&64u32.to_le_bytes());
            b.extend_from_slice(&s);
        }
        let cpus = |v: Vec<(u32, u64, u64, String)>| -> Vec<(u32, String)> {
            v.into_iter().map(|(n, _, _, c)| (n, c)).collect()
        };
        assert_eq!(
            cpus(numa_topology(&b)),
            [(0, "0-3".to_string()), (1, "4-7".to_string())]
        );
        // Cut short: the nodes read so far.
        assert_eq!(
            cpus(numa_topology(&b[..b.len() - 10])),
            [(0, "0-3".to_string())]
        );
        assert!(numa_topology(&[]).is_empty());
    }
}
