//! What record planning reads of the running kernel besides the PMUs ([`Host`]): the
//! sample-rate limit, the CPU's family and model, the NMI watchdog; read once from procfs
//! (`/proc` or a stand-in), so planning itself stays a pure function of its arguments.

use crate::pmu::uarch::{self, CpuId};

/// Facts about the running kernel that planning needs besides the PMUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Host {
    /// `/proc/sys/kernel/perf_event_max_sample_rate`, when known.
    pub max_sample_rate: Option<u64>,
    /// x86: `-W` means `WEIGHT_STRUCT` (else plain `WEIGHT`).
    pub x86: bool,
    /// `/proc/cpuinfo`'s family and model, when known: which E-core each PMU counts for.
    pub cpu: Option<CpuId>,
    /// `/proc/sys/kernel/nmi_watchdog` is on (it holds a counter); `None` when unknown.
    pub nmi_watchdog: Option<bool>,
}

impl Host {
    /// What planning needs from procfs (`/proc` or a stand-in): the sample-rate limit, the
    /// CPU's family and model, the NMI watchdog; a missing file means "unknown". `record`,
    /// `top` and `stat` read the host this one way.
    pub fn read(procfs_root: &std::path::Path) -> Host {
        let rate =
            std::fs::read_to_string(procfs_root.join("sys/kernel/perf_event_max_sample_rate"))
                .ok()
                .and_then(|s| s.trim().parse().ok());
        Host {
            max_sample_rate: rate,
            cpu: CpuId::read(procfs_root),
            nmi_watchdog: uarch::read_nmi_watchdog(procfs_root),
            ..Host::default()
        }
    }
}

impl Default for Host {
    fn default() -> Self {
        Host {
            max_sample_rate: None,
            x86: cfg!(any(target_arch = "x86_64", target_arch = "x86")),
            cpu: None,
            nmi_watchdog: None,
        }
    }
}
