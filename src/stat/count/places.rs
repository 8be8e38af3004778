//! Where `hrec stat` opens its counters and which aggregate each place adds to.
//!
//! A command is one place (its pid, inherited by its threads and children); `-p` is every
//! thread its processes have now, `-t` the threads given; `-a`/`-C` one place per CPU for
//! every task (`--per-thread` then every thread running). `-A` makes each CPU its own
//! aggregate, `--per-core` each (socket, die, core) and `--per-socket` each package, from the
//! sysfs topology files (a CPU without them is its own core on socket 0), `--per-thread`
//! each thread with its name when opened; aggregates are in the order of their keys.

use std::collections::HashMap;

use crate::pmu::CpuList;

use super::options::{Aggr, StatError, StatOptions, StatTarget};

/// What one aggregated value covers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Label {
    /// A CPU.
    Cpu(u32),
    /// A core: socket, die, core, and how many CPUs were added up.
    Core {
        /// Package.
        socket: u32,
        /// Die.
        die: u32,
        /// Core.
        core: u32,
        /// CPUs in it.
        cpus: usize,
    },
    /// A socket and how many CPUs were added up.
    Socket {
        /// Package.
        socket: u32,
        /// CPUs in it.
        cpus: usize,
    },
    /// A thread and its name when it was opened.
    Thread {
        /// `comm`.
        comm: String,
        /// Thread id.
        tid: u32,
    },
}

/// Where CPUs sit: `cpu -> (socket, die, core)`, from
/// `devices/system/cpu/cpuN/topology/{physical_package_id,die_id,core_id}` under a sysfs root.
/// A CPU without topology files is its own core on socket 0.
pub fn cpu_topology(sysfs_root: &std::path::Path, cpus: &[u32]) -> HashMap<u32, (u32, u32, u32)> {
    let read = |cpu: u32, f: &str| {
        std::fs::read_to_string(
            sysfs_root.join(format!("devices/system/cpu/cpu{cpu}/topology/{f}")),
        )
        .ok()
        .and_then(|t| t.trim().parse::<i64>().ok())
        .and_then(|v| u32::try_from(v).ok())
    };
    cpus.iter()
        .map(|&c| {
            let socket = read(c, "physical_package_id").unwrap_or(0);
            let die = read(c, "die_id").unwrap_or(0);
            let core = read(c, "core_id").unwrap_or(c);
            (c, (socket, die, core))
        })
        .collect()
}

/// The threads of the processes (from `/proc/PID/task`), sorted; an error names a missing one.
fn threads_of(procfs: &std::path::Path, pids: &[u32]) -> Result<Vec<u32>, StatError> {
    let mut out = Vec::new();
    for &pid in pids {
        let rd = std::fs::read_dir(procfs.join(format!("{pid}/task")))
            .map_err(|_| StatError::NoTask(format!("process {pid}")))?;
        let mut tids: Vec<u32> = rd
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        tids.sort_unstable();
        out.extend(tids);
    }
    Ok(out)
}

/// A thread's name from `/proc/TID/comm` (`-` when gone).
fn comm_of(procfs: &std::path::Path, tid: u32) -> String {
    std::fs::read_to_string(procfs.join(format!("{tid}/comm")))
        .map(|c| c.trim_end_matches('\n').to_string())
        .unwrap_or_else(|_| "-".into())
}

/// Where the counters are opened, `(pid, cpu)`; the aggregate of each place (an index into
/// the labels); the labels (none without `-A`/`--per-*`).
pub(super) type Places = (Vec<(i32, i32)>, Vec<usize>, Vec<Label>);

/// Where to open the counters and the aggregate of each place.
pub(super) fn places(o: &StatOptions, child: Option<i32>) -> Result<Places, StatError> {
    let per_thread = |tids: Vec<u32>| {
        let labels: Vec<Label> = tids
            .iter()
            .map(|&tid| Label::Thread {
                comm: comm_of(&o.procfs_root, tid),
                tid,
            })
            .collect();
        let places = tids.iter().map(|&t| (t as i32, -1)).collect();
        (places, (0..tids.len()).collect(), labels)
    };
    Ok(match &o.target {
        // -a: every online CPU (the caller usually resolved it already).
        StatTarget::AllCpus => {
            return cpu_places(o, &o.online.clone().unwrap_or_default(), &per_thread);
        }
        StatTarget::Cpus(list) => return cpu_places(o, list, &per_thread),
        StatTarget::Workload => (
            vec![(
                child.ok_or_else(|| StatError::NoTask("the command".into()))?,
                -1,
            )],
            vec![0],
            Vec::new(),
        ),
        StatTarget::Pids(pids) => {
            let tids = threads_of(&o.procfs_root, pids)?;
            if o.aggr == Aggr::PerThread {
                per_thread(tids)
            } else {
                let n = tids.len();
                (
                    tids.iter().map(|&t| (t as i32, -1)).collect(),
                    vec![0; n],
                    Vec::new(),
                )
            }
        }
        StatTarget::Tids(tids) => {
            for &t in tids {
                if !o.procfs_root.join(t.to_string()).exists() {
                    return Err(StatError::NoTask(format!("thread {t}")));
                }
            }
            if o.aggr == Aggr::PerThread {
                per_thread(tids.clone())
            } else {
                let n = tids.len();
                (
                    tids.iter().map(|&t| (t as i32, -1)).collect(),
                    vec![0; n],
                    Vec::new(),
                )
            }
        }
    })
}

/// The places of `-a`/`-C` (one per CPU of `list`, or every thread with `--per-thread`).
fn cpu_places(
    o: &StatOptions,
    list: &CpuList,
    per_thread: &dyn Fn(Vec<u32>) -> Places,
) -> Result<Places, StatError> {
    if let Some(online) = &o.online
        && let Some(&cpu) = list.cpus().iter().find(|&&c| !online.contains(c))
    {
        return Err(StatError::CpuOffline {
            cpu,
            list: list.to_string(),
            online: online.to_string(),
        });
    }
    let cpus = list.cpus();
    if o.aggr == Aggr::PerThread {
        // Every thread running now, on any CPU (perf's `-a --per-thread`).
        let pids: Vec<u32> = std::fs::read_dir(&o.procfs_root)
            .map(|rd| {
                rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        let mut tids = Vec::new();
        for pid in pids {
            tids.extend(threads_of(&o.procfs_root, &[pid]).unwrap_or_default());
        }
        tids.sort_unstable();
        return Ok(per_thread(tids));
    }
    let places: Vec<(i32, i32)> = cpus.iter().map(|&c| (-1, c as i32)).collect();
    let where_ = |c: u32| o.topology.get(&c).copied().unwrap_or((0, 0, c));
    // The aggregate of each CPU; aggregates in the order of their keys (socket, die, core).
    let keyed: Vec<Label> = cpus
        .iter()
        .map(|&c| {
            let (socket, die, core) = where_(c);
            match o.aggr {
                Aggr::PerCpu => Label::Cpu(c),
                Aggr::PerCore => Label::Core {
                    socket,
                    die,
                    core,
                    cpus: 0,
                },
                Aggr::PerSocket => Label::Socket { socket, cpus: 0 },
                Aggr::Global | Aggr::PerThread => Label::Cpu(0),
            }
        })
        .collect();
    if o.aggr == Aggr::Global {
        return Ok((places, vec![0; cpus.len()], Vec::new()));
    }
    let mut labels: Vec<Label> = keyed.clone();
    labels.sort();
    labels.dedup();
    let key: Vec<usize> = keyed
        .iter()
        .map(|l| labels.binary_search(l).unwrap_or(0))
        .collect();
    for (i, l) in labels.iter_mut().enumerate() {
        let n = key.iter().filter(|&&k| k == i).count();
        match l {
            Label::Core { cpus, .. } | Label::Socket { cpus, .. } => *cpus = n,
            _ => {}
        }
    }
    Ok((places, key, labels))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two sockets of one core each, two SMT siblings per core; CPU 4 has no topology files.
    fn topology() -> (tempfile::TempDir, HashMap<u32, (u32, u32, u32)>) {
        let dir = tempfile::tempdir().unwrap();
        for (cpu, socket, core) in [(0, 0, 0), (1, 1, 0), (2, 0, 0), (3, 1, 0)] {
            let t = dir
                .path()
                .join(format!("devices/system/cpu/cpu{cpu}/topology"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("physical_package_id"), format!("{socket}\n")).unwrap();
            std::fs::write(t.join("die_id"), "0\n").unwrap();
            std::fs::write(t.join("core_id"), format!("{core}\n")).unwrap();
        }
        let topo = cpu_topology(dir.path(), &[0, 1, 2, 3, 4]);
        (dir, topo)
    }

    #[test]
    fn cpus_are_grouped_by_core_and_socket() {
        let (_dir, topology) = topology();
        assert_eq!(topology[&3], (1, 0, 0));
        assert_eq!(
            topology[&4],
            (0, 0, 4),
            "no files: its own core on socket 0"
        );
        let opts = |aggr| StatOptions {
            target: StatTarget::Cpus("0-4".parse().unwrap()),
            aggr,
            topology: topology.clone(),
            online: Some("0-4".parse().unwrap()),
            ..Default::default()
        };
        let (at, key, labels) = places(&opts(Aggr::PerCore), None).unwrap();
        assert_eq!(at, [(-1, 0), (-1, 1), (-1, 2), (-1, 3), (-1, 4)]);
        let core = |socket, core, cpus| Label::Core {
            socket,
            die: 0,
            core,
            cpus,
        };
        assert_eq!(labels, [core(0, 0, 2), core(0, 4, 1), core(1, 0, 2)]);
        assert_eq!(key, [0, 2, 0, 2, 1]);
        let (_, key, labels) = places(&opts(Aggr::PerSocket), None).unwrap();
        assert_eq!(
            labels,
            [
                Label::Socket { socket: 0, cpus: 3 },
                Label::Socket { socket: 1, cpus: 2 }
            ]
        );
        assert_eq!(key, [0, 1, 0, 1, 0]);
        let (_, key, labels) = places(&opts(Aggr::Global), None).unwrap();
        assert_eq!((key, labels), (vec![0; 5], vec![]));
        // A CPU that is not online is one clear error.
        let mut o = opts(Aggr::PerCpu);
        o.online = Some("0-3".parse().unwrap());
        let e = places(&o, None).unwrap_err().to_string();
        assert_eq!(e, "CPU 4 in -C 0-4 is not online (online CPUs: 0-3)");
    }
}
