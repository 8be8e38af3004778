//! CPU lists as sysfs prints them (`0-15`, `0,56`, `0-3,8-11`).
//!
//! The kernel writes them with `cpumap_print_to_pagebuf(true, ...)`: ascending,
//! comma-separated, runs collapsed into `a-b`. An empty file means no CPUs.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// A sorted, de-duplicated set of CPU numbers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct CpuList(Vec<u32>);

/// Why a CPU list could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CPU list {text:?}: {reason}")]
pub struct CpuListError {
    text: String,
    reason: &'static str,
}

impl CpuList {
    /// The list holding exactly these CPUs.
    pub fn from_cpus(cpus: impl IntoIterator<Item = u32>) -> Self {
        let mut v: Vec<u32> = cpus.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        CpuList(v)
    }

    /// CPUs in ascending order.
    pub fn cpus(&self) -> &[u32] {
        &self.0
    }

    /// Number of CPUs.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when the list holds no CPU.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// True when `cpu` is in the list.
    pub fn contains(&self, cpu: u32) -> bool {
        self.0.binary_search(&cpu).is_ok()
    }

    /// CPUs present in both lists.
    pub fn intersect(&self, other: &CpuList) -> CpuList {
        CpuList(
            self.0
                .iter()
                .copied()
                .filter(|c| other.contains(*c))
                .collect(),
        )
    }

    /// True when every CPU of `other` is in `self`.
    pub fn is_superset(&self, other: &CpuList) -> bool {
        other.0.iter().all(|c| self.contains(*c))
    }
}

impl FromStr for CpuList {
    type Err = CpuListError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = |reason| CpuListError {
            text: text.to_string(),
            reason,
        };
        let trimmed = text.trim();
        let mut cpus = Vec::new();
        if trimmed.is_empty() {
            return Ok(CpuList(cpus));
        }
        for part in trimmed.split(',') {
            let part = part.trim();
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a, b),
                None => (part, part),
            };
            let lo: u32 = lo
                .parse()
                .map_err(|_| err("expected CPU numbers like 0-3,8"))?;
            let hi: u32 = hi
                .parse()
                .map_err(|_| err("expected CPU numbers like 0-3,8"))?;
            if hi < lo {
                return Err(err("range end is below its start"));
            }
            if hi - lo > 1 << 16 {
                return Err(err("range is implausibly large"));
            }
            cpus.extend(lo..=hi);
        }
        Ok(CpuList::from_cpus(cpus))
    }
}

impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut i = 0;
        let mut first = true;
        while let Some(&start) = self.0.get(i) {
            let mut end = start;
            while self.0.get(i + 1) == Some(&(end + 1)) {
                i += 1;
                end += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
            i += 1;
        }
        Ok(())
    }
}

impl Serialize for CpuList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The NUMA nodes of a sysfs snapshot and their CPU lists, by node number
/// (`<root>/devices/system/node/node<N>/cpulist`); empty when the snapshot has none.
pub fn numa_nodes(root: &std::path::Path) -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir(root.join("devices/system/node")) else {
        return Vec::new();
    };
    let mut nodes: Vec<(u32, String)> = dir
        .filter_map(Result::ok)
        .filter_map(|e| {
            let n: u32 = e.file_name().to_str()?.strip_prefix("node")?.parse().ok()?;
            let cpus = std::fs::read_to_string(e.path().join("cpulist")).ok()?;
            Some((n, cpus.trim().to_string()))
        })
        .collect();
    nodes.sort();
    nodes
}

/// Hardware threads per core of a sysfs snapshot: the most CPUs that share a core among the
/// `online` CPUs, from `<root>/devices/system/cpu/cpu<N>/topology/core_cpus_list` (Linux 5.6;
/// `thread_siblings_list` before). 2 on a part with SMT on; on a hybrid part the P-cores'
/// count (its E-cores have one thread). `None` when no online CPU has a readable list.
/// A CPU already seen in another's list is not read again.
pub fn threads_per_core(root: &std::path::Path, online: &CpuList) -> Option<u32> {
    let dir = root.join("devices/system/cpu");
    let mut seen = std::collections::HashSet::new();
    let mut most: Option<u32> = None;
    for &cpu in online.cpus() {
        if seen.contains(&cpu) {
            continue;
        }
        let topo = dir.join(format!("cpu{cpu}/topology"));
        let Some(list) = ["core_cpus_list", "thread_siblings_list"]
            .iter()
            .find_map(|f| std::fs::read_to_string(topo.join(f)).ok())
            .and_then(|t| t.parse::<CpuList>().ok())
            .filter(|l| !l.is_empty())
        else {
            continue;
        };
        seen.extend(list.cpus().iter().copied());
        let n = u32::try_from(list.len()).unwrap_or(u32::MAX);
        most = Some(most.map_or(n, |m| m.max(n)));
    }
    most
}

/// A machine's CPU topology as perf.data's CPU_TOPOLOGY holds it, in perf's order: the
/// distinct CPU lists of packages, cores and dies, each list once, in the order of the first
/// online CPU that names it; and per CPU, from 0 to the highest present one, its core,
/// package and die ids (-1 where sysfs has none: an offline CPU).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct CpuTopology {
    /// `topology/package_cpus_list` (Linux 5.6; `core_siblings_list` before).
    pub packages: Vec<String>,
    /// `topology/core_cpus_list` (`thread_siblings_list` before).
    pub cores: Vec<String>,
    /// `topology/die_cpus_list`; empty where the kernel has no dies (perf writes none then).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dies: Vec<String>,
    /// Per CPU: `[core_id, physical_package_id, die_id]`.
    pub ids: Vec<[i32; 3]>,
}

impl CpuTopology {
    /// The most CPUs one core's list names: hardware threads per core. Counted, not
    /// expanded, so a crafted list of huge ranges allocates nothing; `None` when no list
    /// names a CPU.
    pub fn threads_per_core(&self) -> Option<u32> {
        self.cores
            .iter()
            .filter_map(|l| cpus_in(l))
            .filter(|&n| n > 0)
            .max()
    }
}

/// The number of CPUs a CPU list (`0,4` or `0-1`) names, `None` when it is not one.
pub fn cpus_in(list: &str) -> Option<u32> {
    let list = list.trim();
    if list.is_empty() {
        return Some(0);
    }
    let mut n: u32 = 0;
    for part in list.split(',') {
        let part = part.trim();
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi): (u32, u32) = (lo.parse().ok()?, hi.parse().ok()?);
        n = n.saturating_add(hi.checked_sub(lo)?.saturating_add(1));
    }
    Some(n)
}

/// CPUs read at most for [`cpu_topology`].
const MAX_TOPOLOGY_CPUS: u32 = 1 << 14;

/// The CPU topology of a sysfs snapshot (`<root>/devices/system/cpu`), read as perf reads it
/// for CPU_TOPOLOGY; `None` when no online CPU has a package or core list.
pub fn cpu_topology(root: &std::path::Path, online: &CpuList) -> Option<CpuTopology> {
    let dir = root.join("devices/system/cpu");
    let read = |cpu: u32, files: &[&str]| {
        let topo = dir.join(format!("cpu{cpu}/topology"));
        files
            .iter()
            .find_map(|f| std::fs::read_to_string(topo.join(f)).ok())
            .map(|t| t.trim_end_matches('\n').to_string())
    };
    let mut t = CpuTopology::default();
    let add = |lists: &mut Vec<String>, l: Option<String>| {
        if let Some(l) = l
            && !lists.contains(&l)
        {
            lists.push(l);
        }
    };
    for &cpu in online.cpus().iter().take(MAX_TOPOLOGY_CPUS as usize) {
        add(
            &mut t.packages,
            read(cpu, &["package_cpus_list", "core_siblings_list"]),
        );
        add(
            &mut t.cores,
            read(cpu, &["core_cpus_list", "thread_siblings_list"]),
        );
        add(&mut t.dies, read(cpu, &["die_cpus_list"]));
    }
    if t.packages.is_empty() && t.cores.is_empty() {
        return None;
    }
    // Every present CPU, offline ones included, as perf's `nr_cpus_avail`.
    let present = std::fs::read_to_string(dir.join("present"))
        .ok()
        .and_then(|p| p.parse::<CpuList>().ok())
        .and_then(|p| p.cpus().last().copied())
        .or_else(|| online.cpus().last().copied())
        .map_or(0, |m| (m + 1).min(MAX_TOPOLOGY_CPUS));
    let id = |cpu: u32, file: &str| {
        read(cpu, &[file])
            .and_then(|v| v.trim().parse::<i32>().ok())
            .unwrap_or(-1)
    };
    t.ids = (0..present)
        .map(|cpu| {
            [
                id(cpu, "core_id"),
                id(cpu, "physical_package_id"),
                id(cpu, "die_id"),
            ]
        })
        .collect();
    Some(t)
}

/// Each NUMA node's memory in kB, total and free (`node<N>/meminfo`'s MemTotal and MemFree),
/// for the nodes of [`numa_nodes`]; a node without a readable meminfo is left out.
pub fn numa_memory(root: &std::path::Path, nodes: &[(u32, String)]) -> Vec<(u32, u64, u64)> {
    nodes
        .iter()
        .filter_map(|&(n, _)| {
            let text =
                std::fs::read_to_string(root.join(format!("devices/system/node/node{n}/meminfo")))
                    .ok()?;
            let kb = |key: &str| {
                text.lines().find_map(|l| {
                    let (_, rest) = l.split_once(key)?;
                    rest.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()
                })
            };
            Some((n, kb("MemTotal:")?, kb("MemFree:")?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_runs() {
        let l: CpuList = "0-3,8,10-11\n".parse().unwrap();
        assert_eq!(l.cpus(), &[0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(l.to_string(), "0-3,8,10-11");
        assert_eq!("".parse::<CpuList>().unwrap().len(), 0);
        assert_eq!("5".parse::<CpuList>().unwrap().to_string(), "5");
    }

    #[test]
    fn rejects_garbage() {
        assert!("0-".parse::<CpuList>().is_err());
        assert!("3-1".parse::<CpuList>().is_err());
        assert!("a".parse::<CpuList>().is_err());
        assert!("0-99999999".parse::<CpuList>().is_err());
    }

    #[test]
    fn set_operations() {
        let a: CpuList = "0-15".parse().unwrap();
        let b: CpuList = "8-20".parse().unwrap();
        assert_eq!(a.intersect(&b).to_string(), "8-15");
        assert!(a.is_superset(&"2-3".parse().unwrap()));
        assert!(!a.is_superset(&b));
    }

    #[test]
    fn numa_nodes_by_number_with_their_cpus() {
        let dir = tempfile::tempdir().unwrap();
        let node = dir.path().join("devices/system/node");
        for (n, cpus) in [(1, "4-7\n"), (0, "0-3\n")] {
            std::fs::create_dir_all(node.join(format!("node{n}"))).unwrap();
            std::fs::write(node.join(format!("node{n}/cpulist")), cpus).unwrap();
        }
        std::fs::write(node.join("possible"), "0-1\n").unwrap();
        assert_eq!(
            numa_nodes(dir.path()),
            [(0, "0-3".to_string()), (1, "4-7".to_string())]
        );
        assert!(numa_nodes(&dir.path().join("none")).is_empty());
    }

    #[test]
    fn threads_per_core_from_the_fixture_topologies() {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs");
        let online = |model: &str| -> CpuList {
            std::fs::read_to_string(fixtures.join(model).join("devices/system/cpu/online"))
                .unwrap()
                .parse()
                .unwrap()
        };
        // Granite Rapids, SMT on: CPU n and n + 256 share a core.
        assert_eq!(
            threads_per_core(&fixtures.join("graniterapids"), &online("graniterapids")),
            Some(2)
        );
        // Alder Lake: P-cores with two threads, E-cores with one: the P-cores' count.
        assert_eq!(
            threads_per_core(&fixtures.join("alderlake"), &online("alderlake")),
            Some(2)
        );
        // Sierra Forest: E-cores only, one thread each.
        assert_eq!(
            threads_per_core(&fixtures.join("sierraforest"), &online("sierraforest")),
            Some(1)
        );
        // Zen 4, SMT on: CPU n and n + 16 share a core.
        assert_eq!(
            threads_per_core(&fixtures.join("zen4"), &online("zen4")),
            Some(2)
        );
        // No topology files: unknown, not 1.
        assert_eq!(
            threads_per_core(&fixtures.join("icelake"), &online("icelake")),
            None
        );
    }

    #[test]
    fn threads_per_core_falls_back_to_thread_siblings() {
        let dir = tempfile::tempdir().unwrap();
        let topo = |cpu: u32| {
            dir.path()
                .join(format!("devices/system/cpu/cpu{cpu}/topology"))
        };
        for (cpu, list) in [(0, "0-1\n"), (1, "0-1\n"), (2, "2\n")] {
            std::fs::create_dir_all(topo(cpu)).unwrap();
            std::fs::write(topo(cpu).join("thread_siblings_list"), list).unwrap();
        }
        let online: CpuList = "0-3".parse().unwrap();
        assert_eq!(threads_per_core(dir.path(), &online), Some(2));
        // core_cpus_list wins where both exist.
        std::fs::write(topo(0).join("core_cpus_list"), "0\n").unwrap();
        std::fs::write(topo(2).join("core_cpus_list"), "2\n").unwrap();
        assert_eq!(
            threads_per_core(dir.path(), &online),
            Some(2),
            "cpu1 still says 0-1"
        );
        std::fs::write(topo(1).join("core_cpus_list"), "1\n").unwrap();
        assert_eq!(threads_per_core(dir.path(), &online), Some(1));
        // Garbage is skipped, not a panic.
        std::fs::write(topo(2).join("core_cpus_list"), "x\n").unwrap();
        assert_eq!(threads_per_core(dir.path(), &online), Some(1));
    }

    /// perf's CPU_TOPOLOGY from a sysfs tree: each list once, in CPU order; ids for every
    /// present CPU, -1 for an offline one (its topology directory is gone).
    #[test]
    fn cpu_topology_as_perf_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let cpu = dir.path().join("devices/system/cpu");
        std::fs::create_dir_all(&cpu).unwrap();
        std::fs::write(cpu.join("present"), "0-3\n").unwrap();
        for (n, core) in [(0, "0-1"), (1, "0-1"), (2, "2")] {
            let t = cpu.join(format!("cpu{n}/topology"));
            std::fs::create_dir_all(&t).unwrap();
            for (f, v) in [
                ("package_cpus_list", "0-3"),
                ("core_siblings_list", "stale"),
                ("core_cpus_list", core),
                ("die_cpus_list", "0-3"),
                ("core_id", if n < 2 { "0" } else { "4" }),
                ("physical_package_id", "0"),
                ("die_id", "0"),
            ] {
                std::fs::write(t.join(f), format!("{v}\n")).unwrap();
            }
        }
        let online: CpuList = "0-2".parse().unwrap();
        let t = cpu_topology(dir.path(), &online).unwrap();
        assert_eq!(
            t,
            CpuTopology {
                packages: vec!["0-3".into()],
                cores: vec!["0-1".into(), "2".into()],
                dies: vec!["0-3".into()],
                ids: vec![[0, 0, 0], [0, 0, 0], [4, 0, 0], [-1, -1, -1]],
            }
        );
        assert_eq!(t.threads_per_core(), Some(2));
        assert_eq!(cpu_topology(&dir.path().join("none"), &online), None);
    }
}
