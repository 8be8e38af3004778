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
        // No topology files: unknown, not 1.
        assert_eq!(
            threads_per_core(&fixtures.join("zen4"), &online("zen4")),
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
}
