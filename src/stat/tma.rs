//! `hrec stat -M`: Intel's TMA metrics, counted and evaluated.
//!
//! The metric files are Intel's own perfmon JSON, read at run time from `--perfmon DIR`,
//! `HREC_PERFMON_DIR` or `~/.cache/hrec/perfmon` (`scripts/fetch-perfmon.sh` downloads them),
//! chosen by the CPU's family-model through `mapfile.csv`. Each metric names its events;
//! hrec resolves them to raw encodings on the core PMU (`cpu/event=..,umask=../`),
//! `PERF_METRICS.*` to the kernel's `topdown-*` events in a slots-led group, and counts them
//! with the rest. Retire-latency terms (`EVENT:retire_latency`) are not counts: their values
//! come from this run's samples (`--record-tpebs`), `--tpebs-from`, or Intel's defaults (see
//! [`super::tpebs`]).
//!
//! **Which core PMU.** Intel's file describes one core: the only one on most parts, the
//! P-core (`cpu_core`) on hybrid ones, whose metric file is the P-core's alone. `--cputype`
//! chooses one core PMU ([`Scope`]): the P-core's keeps Intel's file; an E-core's
//! (`cpu_atom`, `cpu_lowpower`) answers the TopDown level-1 and level-2 names from hrec's
//! E-core table ([`super::ecore_tma`]) and refuses any other metric with a line naming the
//! file. Without `--cputype`, a hybrid part's TopDown names are answered for each E-core PMU
//! too, in a block of its own; an E-core-only name that the P-core's file lacks
//! (`tma_ifetch_latency`, `tma_resource_bound`) is answered on the E-cores alone, with a
//! note. A part made only of E-cores (one `cpu` PMU: Sierra Forest, Alder Lake-N) uses
//! Intel's file when there is one (it is the E-core's own, and its TopDown events are
//! ordinary counters there: no slots group) and hrec's table for the TopDown names
//! otherwise.

use std::path::{Path, PathBuf};

use crate::metrics::perfmon::{Encoding, EventRef, Mapfile, Metric, Perfmon};
use crate::metrics::{Constants, MetricError};
use crate::pmu::uarch::{CpuId, Ecore, ecore_of, ecore_topdown};
use crate::pmu::{Pmu, Pmus};

use super::count::{Count, Counter};
use super::ecore_tma::{self, EcoreMetric, EcoreMetrics};

/// Where the perfmon files are: the flag, `HREC_PERFMON_DIR`, then `~/.cache/hrec/perfmon`.
pub fn perfmon_dir(flag: Option<&Path>) -> PathBuf {
    if let Some(d) = flag {
        return d.to_path_buf();
    }
    if let Some(d) = std::env::var_os("HREC_PERFMON_DIR") {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    home.join(".cache/hrec/perfmon")
}

/// Why metrics cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum TmaError {
    /// No perfmon files for this CPU.
    #[error(
        "cannot load Intel's metric files for CPU {cpuid} from {} (give --perfmon DIR with the files for this CPU, or run scripts/fetch-perfmon.sh)",
        dir.display()
    )]
    Perfmon {
        /// The directory.
        dir: PathBuf,
        /// The cpuid string.
        cpuid: String,
        /// Why.
        #[source]
        source: crate::metrics::perfmon::PerfmonError,
    },
    /// The CPU could not be identified.
    #[error(
        "cannot tell this CPU's family and model from {0}/cpuinfo (give --cpuid GenuineIntel-6-AD)"
    )]
    NoCpuid(String),
    /// A metric or group that the file does not have.
    #[error(
        "no metric or metric group {name:?} in {file} (metric names look like tma_dtlb_load or DTLB_Load; groups like TopdownL1)"
    )]
    Unknown {
        /// What was asked for.
        name: String,
        /// The metric file.
        file: String,
    },
    /// No core PMU to count on.
    #[error(
        "metrics need the core PMU's events, and this machine has no core PMU (no cpu PMU in sysfs)"
    )]
    NoCorePmu,
    /// `--cputype` named a PMU that is not one of this machine's core PMUs.
    #[error("--cputype {name}: this machine has no {name} core PMU (its core PMUs: {have})")]
    NoCoreType {
        /// The PMU asked for.
        name: String,
        /// The core PMUs there are.
        have: String,
    },
    /// Metrics of Intel's P-core file asked for on an E-core PMU.
    #[error(
        "-M {names} on {pmu}: Intel's metric file for this CPU{file} covers only the P-core{pcore}; on {pmu}, E-core TopDown level 1 is available with --topdown or -M TopdownL1 (tma_frontend_bound, tma_bad_speculation, tma_backend_bound, tma_retiring), level 2 with --td-level 2 or -M TopdownL2 (tma_ifetch_latency, tma_ifetch_bandwidth, tma_branch_mispredicts, tma_machine_clears, tma_core_bound, tma_resource_bound)"
    )]
    PcoreOnly {
        /// The metrics asked for, comma-separated.
        names: String,
        /// The E-core PMU.
        pmu: String,
        /// ` (<file name>)` when the file was found, else empty.
        file: String,
        /// ` (<P-core PMU>)` when the machine has one, else empty.
        pcore: String,
    },
    /// TopDown names asked for on an E-core PMU whose TopDown hrec does not know.
    #[error("-M {names} on {pmu}: no E-core TopDown for it: {why}")]
    NoEcoreTopDown {
        /// The metrics asked for, comma-separated.
        names: String,
        /// The E-core PMU.
        pmu: String,
        /// Why ([`why_no_ecore_topdown`]).
        why: String,
    },
}

/// What `-M` is for: the core PMU `--cputype` chose (`None`: every core PMU), the CPU (from
/// `/proc/cpuinfo`), which tells the E-core PMUs and their cores apart, and the NMI watchdog,
/// which decides whether a Gracemont E-core has room for TopDown level 2.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scope<'a> {
    /// `--cputype`'s PMU name.
    pub cputype: Option<&'a str>,
    /// The CPU.
    pub cpu: Option<&'a CpuId>,
    /// `kernel.nmi_watchdog` is on (`None`: unknown).
    pub nmi_watchdog: Option<bool>,
}

/// Why the core PMU `pmu` has no E-core TopDown on `cpu`, in words.
pub fn why_no_ecore_topdown(cpu: Option<&CpuId>, pmu: &str) -> String {
    match (ecore_of(cpu, pmu), cpu) {
        (Ecore::Arch(a), _) => format!(
            "Intel has published no E-core TMA for its core ({})",
            a.name()
        ),
        (Ecore::Unknown, Some(c)) => format!("hrec does not know the E-core of CPU {c}"),
        (Ecore::Unknown, None) => {
            "the CPU could not be identified from /proc/cpuinfo, so neither could its E-core"
                .to_string()
        }
        (Ecore::No, _) => "it is not an E-core PMU".to_string(),
    }
}

/// The metrics asked for and what they need.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Intel's files, when metrics come from them.
    pub perfmon: Option<Perfmon>,
    /// The core PMU Intel's metrics are counted on, when the machine is hybrid (named in the
    /// output); `None` on a part with one core PMU.
    pub pmu: Option<String>,
    /// Intel's metrics, in the order asked (empty when every metric comes from hrec's E-core
    /// table).
    pub metrics: Vec<Metric>,
    /// Events to count with the `-e` string each became (`None`: could not be resolved,
    /// with why).
    pub events: Vec<(EventRef, Result<String, String>)>,
    /// `-e` strings to add (counters, then the TopDown group).
    pub strings: Vec<String>,
    /// Retire-latency terms (`EVENT:retire_latency`), Intel names.
    pub latencies: Vec<String>,
    /// The defaults file, when the model has one.
    pub defaults_path: Option<PathBuf>,
    /// TopDown levels 1 and 2 from hrec's E-core table, one per E-core PMU.
    pub ecore: Vec<EcoreMetrics>,
    /// One-line notes (an E-core PMU left out, and why).
    pub notes: Vec<String>,
}

/// Loads the perfmon files of `cpuid` from `dir`.
pub fn load(dir: &Path, cpuid: &str) -> Result<(Perfmon, Option<PathBuf>), TmaError> {
    let err = |source| TmaError::Perfmon {
        dir: dir.to_path_buf(),
        cpuid: cpuid.to_string(),
        source,
    };
    let p = Perfmon::load(dir, cpuid).map_err(err)?;
    let defaults = Mapfile::load(&dir.join("mapfile.csv"))
        .ok()
        .and_then(|m| Some(m.select(cpuid).ok()?.retire_latency?.path_in(dir)));
    Ok((p, defaults))
}

/// The cpuid string of this machine, from `<procfs>/cpuinfo`.
pub fn cpuid(procfs: &Path) -> Result<String, TmaError> {
    let text = std::fs::read_to_string(procfs.join("cpuinfo")).unwrap_or_default();
    crate::metrics::perfmon::cpuid_from_cpuinfo(&text)
        .ok_or_else(|| TmaError::NoCpuid(procfs.display().to_string()))
}

/// Resolves `-M` names (metrics or groups, comma-separated) into metrics and the events to
/// count, on the core PMUs of `scope`: Intel's metrics from `loaded` (the files of
/// [`load`], or why they could not be loaded: an error only where they are needed), the
/// TopDown names of E-core PMUs from hrec's table.
pub fn setup(
    loaded: Result<(Perfmon, Option<PathBuf>), TmaError>,
    pmus: &Pmus,
    names: &[String],
    scope: Scope<'_>,
) -> Result<Setup, TmaError> {
    let names: Vec<&str> = names
        .iter()
        .flat_map(|n| n.split(','))
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    let all = pmus.core_pmus();
    if all.is_empty() {
        return Err(TmaError::NoCorePmu);
    }
    let hybrid = all.len() > 1;
    let chosen: Vec<&Pmu> = match scope.cputype {
        Some(t) => {
            let v: Vec<&Pmu> = all.iter().copied().filter(|p| p.name == t).collect();
            if v.is_empty() {
                return Err(TmaError::NoCoreType {
                    name: t.to_string(),
                    have: all
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
            v
        }
        None => all.clone(),
    };
    let is_ecore = |p: &Pmu| ecore_of(scope.cpu, &p.name) != Ecore::No;
    // The E-core metrics asked for, in order, each once.
    let mut asked: Vec<EcoreMetric> = Vec::new();
    for m in names
        .iter()
        .filter_map(|n| ecore_tma::metrics_of(n))
        .flatten()
    {
        if !asked.contains(&m) {
            asked.push(m);
        }
    }
    let all_ecore = names.iter().all(|n| ecore_tma::metrics_of(n).is_some());
    let ecore_metrics = |p: &Pmu| {
        ecore_topdown(scope.cpu, &p.name)
            .map(|td| EcoreMetrics::new(&p.name, hybrid, td, asked.clone(), scope.nmi_watchdog))
    };
    let joined = names.join(",");
    let mut out = Setup {
        perfmon: None,
        pmu: None,
        metrics: Vec::new(),
        events: Vec::new(),
        strings: Vec::new(),
        latencies: Vec::new(),
        defaults_path: None,
        ecore: Vec::new(),
        notes: Vec::new(),
    };

    if !hybrid {
        // One core PMU. An all-E-core part without Intel's file: hrec's level-1 table.
        let pmu = all[0];
        if let (Err(_), true, true, Some(m)) =
            (&loaded, is_ecore(pmu), all_ecore, ecore_metrics(pmu))
        {
            out.strings.push(m.group_spec());
            out.ecore.push(m);
            return Ok(out);
        }
        let (perfmon, defaults) = loaded?;
        intel(&mut out, &perfmon, pmu, false, &names)?;
        out.perfmon = Some(perfmon);
        out.defaults_path = defaults;
        return Ok(out);
    }

    // Hybrid: Intel's file is the P-core's.
    let pcore = chosen
        .iter()
        .copied()
        .find(|p| !crate::event::resolve::topdown_metric_names(p).is_empty())
        .or_else(|| chosen.iter().copied().find(|p| !is_ecore(p)));
    match pcore {
        Some(p) => {
            let (perfmon, defaults) = loaded?;
            // A TopDown name the E-core table answers and the P-core's file lacks
            // (tma_ifetch_latency): the E-cores' alone.
            let ecores: Vec<&str> = chosen
                .iter()
                .filter(|e| is_ecore(e) && ecore_topdown(scope.cpu, &e.name).is_some())
                .map(|e| e.name.as_str())
                .collect();
            let (pnames, eonly): (Vec<&str>, Vec<&str>) = names.iter().partition(|n| {
                ecores.is_empty()
                    || ecore_tma::metrics_of(n).is_none()
                    || perfmon.metric(n).is_some()
                    || !perfmon.metrics_in_group(n).is_empty()
            });
            if !eonly.is_empty() {
                out.notes.push(format!(
                    "-M {}: not in Intel's metric file for the P-core ({}), so counted on {} alone",
                    eonly.join(","),
                    perfmon
                        .metrics
                        .path
                        .file_name()
                        .map_or_else(String::new, |f| f.to_string_lossy().into_owned()),
                    ecores.join(", ")
                ));
            }
            if !pnames.is_empty() {
                intel(&mut out, &perfmon, p, true, &pnames)?;
                out.pmu = Some(p.name.clone());
                out.perfmon = Some(perfmon);
                out.defaults_path = defaults;
            }
        }
        None => {
            // An E-core PMU chosen: the TopDown names alone.
            let others: Vec<&str> = names
                .iter()
                .copied()
                .filter(|n| ecore_tma::metrics_of(n).is_none())
                .collect();
            if !others.is_empty() {
                let file = loaded.as_ref().ok().map(|(p, _)| &p.metrics.path);
                if let Some((perfmon, _)) = loaded.as_ref().ok()
                    && let Some(n) = others.iter().find(|n| {
                        perfmon.metric(n).is_none() && perfmon.metrics_in_group(n).is_empty()
                    })
                {
                    return Err(TmaError::Unknown {
                        name: n.to_string(),
                        file: perfmon.metrics.path.display().to_string(),
                    });
                }
                return Err(TmaError::PcoreOnly {
                    names: others.join(","),
                    pmu: chosen[0].name.clone(),
                    file: file
                        .and_then(|f| f.file_name())
                        .map(|f| format!(" ({})", f.to_string_lossy()))
                        .unwrap_or_default(),
                    pcore: all
                        .iter()
                        .find(|p| !is_ecore(p))
                        .map(|p| format!(" ({})", p.name))
                        .unwrap_or_default(),
                });
            }
        }
    }
    if asked.is_empty() {
        return Ok(out);
    }
    for p in chosen.iter().copied().filter(|p| is_ecore(p)) {
        match ecore_metrics(p) {
            Some(m) => {
                out.strings.push(m.group_spec());
                out.ecore.push(m);
            }
            None if pcore.is_none() => {
                return Err(TmaError::NoEcoreTopDown {
                    names: joined,
                    pmu: p.name.clone(),
                    why: why_no_ecore_topdown(scope.cpu, &p.name),
                });
            }
            None => out.notes.push(format!(
                "-M {joined}: no E-core TopDown on {}: {}",
                p.name,
                why_no_ecore_topdown(scope.cpu, &p.name)
            )),
        }
    }
    Ok(out)
}

/// Intel's metrics `names` from `perfmon`, their events resolved on the core PMU `pmu`, into
/// `out`.
fn intel(
    out: &mut Setup,
    perfmon: &Perfmon,
    pmu: &Pmu,
    hybrid: bool,
    names: &[&str],
) -> Result<(), TmaError> {
    let mut metrics: Vec<Metric> = Vec::new();
    for &n in names {
        let found: Vec<&Metric> = match perfmon.metric(n) {
            Some(m) => vec![m],
            None => perfmon.metrics_in_group(n),
        };
        if found.is_empty() {
            return Err(TmaError::Unknown {
                name: n.to_string(),
                file: perfmon.metrics.path.display().to_string(),
            });
        }
        for m in found {
            if !metrics.iter().any(|x| x.name == m.name) {
                metrics.push(m.clone());
            }
        }
    }
    let mut events = Vec::new();
    let mut strings = Vec::new();
    let mut topdown: Vec<&'static str> = Vec::new();
    let mut latencies = Vec::new();
    for e in perfmon.events_needed(metrics.iter()) {
        if e.retire_latency {
            latencies.push(e.name.clone());
            continue;
        }
        let s = match perfmon.resolve(&e) {
            Ok(Encoding::Counter(raw)) => raw
                .perf_terms()
                .map(|t| format!("{}/{t}/", pmu.name))
                .map_err(|r| r.to_string()),
            Ok(Encoding::TopdownMetric { sysfs_name, .. }) => {
                if !topdown.contains(&sysfs_name) {
                    topdown.push(sysfs_name);
                }
                Ok(if hybrid {
                    format!("{}/{sysfs_name}/", pmu.name)
                } else {
                    sysfs_name.to_string()
                })
            }
            Ok(other) => Err(format!("{other:?} is not a core counter hrec opens")),
            Err(r) => Err(r.to_string()),
        };
        if let Ok(s) = &s
            && !topdown
                .iter()
                .any(|t| s.ends_with(t) || s.ends_with(&format!("{t}/")))
        {
            strings.push(s.clone());
        }
        events.push((e, s));
    }
    if !topdown.is_empty() {
        let q = |ev: &str| {
            if hybrid {
                format!("{}/{ev}/", pmu.name)
            } else {
                ev.to_string()
            }
        };
        let mut members = vec![q("slots")];
        members.extend(topdown.iter().map(|t| q(t)));
        strings.push(format!("{{{}}}", members.join(",")));
    }
    out.metrics = metrics;
    out.events = events;
    out.strings.extend(strings);
    out.latencies = latencies;
    Ok(())
}

/// The attr of a `--record-tpebs` sampler for `event` (an Intel name): the event's encoding
/// on the core PMU, precise (`:p`), with Intel's suggested period, sampling
/// `IDENTIFIER | IP | TID | TIME | WEIGHT_STRUCT`.
pub fn tpebs_sampler(
    perfmon: &Perfmon,
    pmus: &Pmus,
    event: &str,
    workload: bool,
) -> Result<crate::event::attr::Attr, String> {
    use crate::event::attr::flag;
    let core = pmus.core_pmus();
    let pmu = core
        .iter()
        .find(|p| !crate::event::resolve::topdown_metric_names(p).is_empty())
        .or_else(|| core.first())
        .ok_or("no core PMU")?;
    let eref = EventRef::parse(event);
    let raw = match perfmon.resolve(&eref).map_err(|e| e.to_string())? {
        Encoding::Counter(raw) => raw,
        other => return Err(format!("{other:?} cannot be sampled")),
    };
    let s = format!(
        "{}/{}/p",
        pmu.name,
        raw.perf_terms().map_err(|e| e.to_string())?
    );
    let res = crate::event::resolve::resolve(pmus, &[s]).map_err(|e| e.to_string())?;
    let mut a = res
        .groups
        .first()
        .and_then(|g| g.events.first())
        .ok_or("the event resolved to nothing")?
        .attr;
    a.sample_period_or_freq = raw.sample_after_value.unwrap_or(100_003).max(1);
    a.set(flag::FREQ, false);
    sampling_flags(&mut a, workload);
    Ok(a)
}

/// The sample format and flags of a `--record-tpebs` sampler (also used for the software
/// stand-in that tests the sampling path on machines without a PMU).
pub fn sampling_flags(a: &mut crate::event::attr::Attr, workload: bool) {
    use crate::event::attr::{flag, sample};
    a.sample_type =
        sample::IDENTIFIER | sample::IP | sample::TID | sample::TIME | sample::WEIGHT_STRUCT;
    a.read_format = 0;
    a.set(flag::DISABLED, true);
    a.set(flag::ENABLE_ON_EXEC, workload);
    a.set(flag::INHERIT, true);
    a.set(flag::SAMPLE_ID_ALL, true);
}

/// The Intel name of a counter opened for a metric (`MEM_INST_RETIRED.STLB_HIT_LOADS`), to
/// show instead of its raw encoding.
pub fn display_name(setup: &Setup, counter: &Counter) -> Option<String> {
    setup
        .events
        .iter()
        .find(|(_, s)| s.as_ref().is_ok_and(|s| same_event(counter, s)))
        .map(|(e, _)| e.to_string())
}

/// The `-e` spelling of a counter name, to find an event's counter after planning.
fn same_event(counter: &Counter, string: &str) -> bool {
    let norm = |s: &str| {
        s.trim_end_matches('/')
            .replace(' ', "")
            .to_ascii_lowercase()
    };
    norm(&counter.name) == norm(string)
}

pub use crate::metrics::MetricValue;

/// Evaluates the metrics from the counts and the resolved latencies.
pub fn evaluate(
    setup: &Setup,
    counters: &[Counter],
    counts: &[Count],
    latency: &dyn Fn(&str) -> Option<f64>,
    constants: &Constants,
) -> Vec<MetricValue> {
    let count_of = |e: &EventRef| -> Option<f64> {
        let (_, s) = setup.events.iter().find(|(x, _)| x == e)?;
        let s = s.as_ref().ok()?;
        counters
            .iter()
            .zip(counts)
            .find(|(c, _)| same_event(c, s))
            .and_then(|(_, n)| n.value())
    };
    setup
        .metrics
        .iter()
        .map(|m| {
            let value = m
                .evaluate(&count_of, latency, constants)
                .map_err(|e| match e {
                    MetricError::Eval { source, .. } => {
                        let why = source.to_string();
                        // Say why a count is missing: the event was not supported here.
                        match setup.events.iter().find(|(e, _)| why.contains(&e.name)) {
                            Some((e, Err(r))) => format!("{} cannot be counted: {r}", e.name),
                            Some((e, Ok(_))) => {
                                format!("{} was not counted here (<not supported>)", e.name)
                            }
                            None => why,
                        }
                    }
                    other => other.to_string(),
                });
            MetricValue {
                name: m.perf_name(),
                unit: if m.is_percent() {
                    "%".into()
                } else {
                    m.unit.clone()
                },
                value,
            }
        })
        .collect()
}

/// Constants from the machine: SMT from sysfs, the measured duration.
pub fn constants(sysfs: &Path, seconds: f64) -> Constants {
    let smt = std::fs::read_to_string(sysfs.join("devices/system/cpu/smt/active"))
        .ok()
        .map(|s| s.trim() == "1");
    Constants {
        smt_on: smt,
        threads_per_core: smt.map(|s| if s { 2.0 } else { 1.0 }),
        duration_seconds: Some(seconds),
        ..Constants::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pmu::uarch::{EcoreArch, TdCategory};

    fn fixture(model: &str) -> (Pmus, Option<CpuId>) {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let pmus = Pmus::read(&base.join("sysfs").join(model)).unwrap();
        let cpu = CpuId::read(&base.join("procfs").join(model));
        (pmus, cpu)
    }

    /// hrec's own small perfmon files (tests/fixtures/perfmon): a hybrid part's P-core file
    /// (6-97) and an all-E-core part's file (6-AF).
    fn loaded(cpuid: &str) -> Result<(Perfmon, Option<PathBuf>), TmaError> {
        load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perfmon"),
            cpuid,
        )
    }

    fn absent() -> Result<(Perfmon, Option<PathBuf>), TmaError> {
        Err(TmaError::NoCpuid("(no files in this test)".into()))
    }

    fn names(v: &str) -> Vec<String> {
        vec![v.to_string()]
    }

    /// Hybrid, no `--cputype`: Intel's P-core metrics on cpu_core plus the E-core level-1
    /// block on cpu_atom; with `--cputype core` the P-core's alone.
    #[test]
    fn hybrid_level1_is_per_core_pmu() {
        let (pmus, cpu) = fixture("alderlake");
        let scope = Scope {
            cputype: None,
            cpu: cpu.as_ref(),
            nmi_watchdog: Some(true),
        };
        let s = setup(
            loaded("GenuineIntel-6-97-2"),
            &pmus,
            &names("TopdownL1"),
            scope,
        )
        .unwrap();
        assert_eq!(s.pmu.as_deref(), Some("cpu_core"));
        assert_eq!(
            s.metrics
                .iter()
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>(),
            ["Retiring"]
        );
        assert_eq!(s.ecore.len(), 1);
        let e = &s.ecore[0];
        assert_eq!(
            (e.pmu.as_str(), e.hybrid, e.topdown.arch),
            ("cpu_atom", true, EcoreArch::Gracemont)
        );
        assert_eq!(
            e.asked,
            ecore_tma::LEVEL1.map(ecore_tma::EcoreMetric::Level1)
        );
        // The P-core's slots group, then the E-core's cycles group.
        assert!(
            s.strings[0].starts_with("{cpu_core/slots/,"),
            "{:?}",
            s.strings
        );
        assert_eq!(s.strings[1], e.group_spec());
        assert!(s.strings[1].starts_with("{cpu_atom/cycles/,cpu_atom/event=0x71"));

        // A metric that is not level 1: the P-core's alone, no E-core block.
        let s = setup(
            loaded("GenuineIntel-6-97-2"),
            &pmus,
            &names("Info_Thread_IPC"),
            scope,
        )
        .unwrap();
        assert!(s.ecore.is_empty());
        assert_eq!(
            s.strings,
            [
                "cpu_core/event=0xc0,umask=0x0/",
                "cpu_core/event=0x3c,umask=0x0/"
            ]
        );

        let core = Scope {
            cputype: Some("cpu_core"),
            ..scope
        };
        let s = setup(
            loaded("GenuineIntel-6-97-2"),
            &pmus,
            &names("TopdownL1"),
            core,
        )
        .unwrap();
        assert!(s.ecore.is_empty() && s.metrics.len() == 1);
        // Without an identified CPU the E-core is unknown: a note, the P-core's metrics.
        let s = setup(
            loaded("GenuineIntel-6-97-2"),
            &pmus,
            &names("tma_retiring"),
            Scope { cpu: None, ..scope },
        )
        .unwrap();
        assert!(s.ecore.is_empty());
        assert_eq!(
            s.notes,
            [
                "-M tma_retiring: no E-core TopDown on cpu_atom: the CPU could not be identified from /proc/cpuinfo, so neither could its E-core"
            ]
        );
    }

    /// `--cputype atom`: the level-1 names from hrec's table (no metric file needed), each
    /// core's rules; anything else is refused naming the P-core file.
    #[test]
    fn ecore_pmu_answers_level1_and_refuses_the_rest() {
        for (model, pmu, arch) in [
            ("alderlake", "cpu_atom", EcoreArch::Gracemont),
            ("meteorlake", "cpu_atom", EcoreArch::Crestmont),
            ("arrowlake-h", "cpu_atom", EcoreArch::Skymont),
            ("arrowlake-h", "cpu_lowpower", EcoreArch::Crestmont),
        ] {
            let (pmus, cpu) = fixture(model);
            let scope = Scope {
                cputype: Some(pmu),
                cpu: cpu.as_ref(),
                nmi_watchdog: Some(true),
            };
            let s = setup(
                absent(),
                &pmus,
                &names("tma_retiring,Frontend_Bound,tma_retiring"),
                scope,
            )
            .unwrap();
            assert!(s.metrics.is_empty() && s.perfmon.is_none());
            assert_eq!(s.ecore.len(), 1, "{model}");
            assert_eq!(
                (s.ecore[0].pmu.as_str(), s.ecore[0].topdown.arch),
                (pmu, arch)
            );
            assert_eq!(
                s.ecore[0].asked,
                [TdCategory::Retiring, TdCategory::FrontendBound].map(EcoreMetric::Level1)
            );
            assert_eq!(s.strings, [s.ecore[0].group_spec()]);
        }
        let (pmus, cpu) = fixture("alderlake");
        let scope = Scope {
            cputype: Some("cpu_atom"),
            cpu: cpu.as_ref(),
            nmi_watchdog: Some(true),
        };
        let e = setup(
            loaded("GenuineIntel-6-97-2"),
            &pmus,
            &names("TopdownL1,Info_Thread_IPC"),
            scope,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "-M Info_Thread_IPC on cpu_atom: Intel's metric file for this CPU (hybrid_pcore_metrics.json) covers only the P-core (cpu_core); on cpu_atom, E-core TopDown level 1 is available with --topdown or -M TopdownL1 (tma_frontend_bound, tma_bad_speculation, tma_backend_bound, tma_retiring), level 2 with --td-level 2 or -M TopdownL2 (tma_ifetch_latency, tma_ifetch_bandwidth, tma_branch_mispredicts, tma_machine_clears, tma_core_bound, tma_resource_bound)"
        );
        // Without the file the same, less its name; a name the file lacks is unknown.
        let e = setup(absent(), &pmus, &names("Info_Thread_IPC"), scope).unwrap_err();
        assert!(
            matches!(&e, TmaError::PcoreOnly { file, .. } if file.is_empty()),
            "{e}"
        );
        let e = setup(
            loaded("GenuineIntel-6-97-2"),
            &pmus,
            &names("tma_nonesuch"),
            scope,
        )
        .unwrap_err();
        assert!(matches!(e, TmaError::Unknown { .. }), "{e}");
        // An E-core hrec does not know: no guess.
        let e = setup(
            absent(),
            &pmus,
            &names("TopdownL1"),
            Scope { cpu: None, ..scope },
        )
        .unwrap_err();
        assert!(matches!(e, TmaError::NoEcoreTopDown { .. }), "{e}");
        let e = setup(
            absent(),
            &pmus,
            &names("TopdownL1"),
            Scope {
                cputype: Some("cpu"),
                ..scope
            },
        )
        .unwrap_err();
        assert!(matches!(e, TmaError::NoCoreType { .. }), "{e}");
    }

    /// A part made only of E-cores (one `cpu` PMU): its own metric file when there is one,
    /// its TopDown events plain counters on `cpu` (no slots group, no E-core block); hrec's
    /// table for the level-1 names when there is none; the load error for anything else.
    #[test]
    fn all_ecore_parts_use_their_file_or_the_table() {
        let (pmus, cpu) = fixture("sierraforest");
        let scope = Scope {
            cputype: None,
            cpu: cpu.as_ref(),
            nmi_watchdog: Some(true),
        };
        let s = setup(
            loaded("GenuineIntel-6-AF-3"),
            &pmus,
            &names("TopdownL1"),
            scope,
        )
        .unwrap();
        assert!(s.ecore.is_empty() && s.pmu.is_none());
        assert_eq!(
            s.metrics.iter().map(|m| m.perf_name()).collect::<Vec<_>>(),
            ["tma_frontend_bound", "tma_retiring"]
        );
        assert_eq!(
            s.strings,
            [
                "cpu/event=0x71,umask=0x0/",
                "cpu/event=0x3c,umask=0x0/",
                "cpu/event=0x72,umask=0x0/"
            ]
        );

        let s = setup(absent(), &pmus, &names("TopdownL1"), scope).unwrap();
        assert_eq!(s.ecore.len(), 1);
        assert_eq!(
            (
                s.ecore[0].pmu.as_str(),
                s.ecore[0].hybrid,
                s.ecore[0].topdown.arch
            ),
            ("cpu", false, EcoreArch::Crestmont)
        );
        assert!(
            s.strings[0].starts_with("{cycles,cpu/event=0x71"),
            "{:?}",
            s.strings
        );
        assert!(matches!(
            setup(absent(), &pmus, &names("TopdownL1,Info_Core_IPC"), scope),
            Err(TmaError::NoCpuid(_))
        ));

        // Alder Lake-N: Intel lists no metric file at all; Gracemont's rules.
        let (pmus, cpu) = fixture("alderlake-n");
        let s = setup(
            absent(),
            &pmus,
            &names("tma_bad_speculation"),
            Scope {
                cputype: None,
                cpu: cpu.as_ref(),
                nmi_watchdog: Some(true),
            },
        )
        .unwrap();
        assert_eq!(s.ecore[0].topdown.arch, EcoreArch::Gracemont);
        // A P-core part is unchanged: the file is needed.
        let (pmus, cpu) = fixture("sapphirerapids");
        assert!(
            setup(
                absent(),
                &pmus,
                &names("TopdownL1"),
                Scope {
                    cputype: None,
                    cpu: cpu.as_ref(),
                    nmi_watchdog: Some(true),
                }
            )
            .is_err()
        );
    }

    /// Level 2 on E-cores: `TopdownL2` and the level-2 names from hrec's table, the group
    /// with the core's level-2 events where its counters hold them (record's budget rule:
    /// Gracemont only with the NMI watchdog off); on a hybrid part without `--cputype`, a
    /// name the P-core's file lacks is the E-cores' alone, with a note.
    #[test]
    fn ecore_level2_names_and_the_budget() {
        let l2: Vec<EcoreMetric> = ecore_tma::LEVEL2.map(EcoreMetric::Level2).to_vec();
        for (model, pmu, watchdog, opened) in [
            ("alderlake", "cpu_atom", Some(true), None),
            ("alderlake", "cpu_atom", None, None),
            ("alderlake", "cpu_atom", Some(false), Some(3)),
            ("meteorlake", "cpu_atom", Some(true), Some(3)),
            ("lunarlake", "cpu_atom", Some(true), Some(5)),
            ("arrowlake-h", "cpu_atom", None, Some(5)),
            ("arrowlake-h", "cpu_lowpower", Some(true), Some(3)),
        ] {
            let (pmus, cpu) = fixture(model);
            let scope = Scope {
                cputype: Some(pmu),
                cpu: cpu.as_ref(),
                nmi_watchdog: watchdog,
            };
            let s = setup(absent(), &pmus, &names("TopdownL2,tma_retiring"), scope).unwrap();
            let e = &s.ecore[0];
            let mut want = l2.clone();
            want.push(EcoreMetric::Level1(TdCategory::Retiring));
            assert_eq!(e.asked, want, "{model} {pmu}");
            assert_eq!(e.level2.map(<[_]>::len).ok(), opened, "{model} {pmu}");
            let td = e.topdown;
            assert_eq!(
                s.strings,
                [td.group_spec(pmu, true, opened.is_some())],
                "{model} {pmu} {watchdog:?}"
            );
        }

        // Hybrid, no --cputype: the fixture's P-core file has no TopdownL2, so the E-core
        // answers it alone; the P-core's metrics need no counting then.
        let (pmus, cpu) = fixture("alderlake");
        let scope = Scope {
            cputype: None,
            cpu: cpu.as_ref(),
            nmi_watchdog: Some(false),
        };
        let s = setup(
            loaded("GenuineIntel-6-97-2"),
            &pmus,
            &names("TopdownL2"),
            scope,
        )
        .unwrap();
        assert!(s.metrics.is_empty() && s.pmu.is_none() && s.perfmon.is_none());
        assert_eq!(
            s.notes,
            [
                "-M TopdownL2: not in Intel's metric file for the P-core (hybrid_pcore_metrics.json), so counted on cpu_atom alone"
            ]
        );
        assert_eq!(s.ecore.len(), 1);
        assert_eq!(s.ecore[0].asked, l2);
        assert_eq!(s.strings, [s.ecore[0].group_spec()]);
        // A name in the file and one that is not: the P-core's metric and both E-core ones.
        let s = setup(
            loaded("GenuineIntel-6-97-2"),
            &pmus,
            &names("Retiring,tma_ifetch_latency"),
            scope,
        )
        .unwrap();
        assert_eq!(s.pmu.as_deref(), Some("cpu_core"));
        assert_eq!(s.metrics.len(), 1);
        assert_eq!(
            s.ecore[0].asked,
            [
                EcoreMetric::Level1(TdCategory::Retiring),
                EcoreMetric::Level2(ecore_tma::L2Node::IfetchLatency)
            ]
        );
        assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
        // --cputype core: such a name is the file's to answer, and it is not there.
        let e = setup(
            loaded("GenuineIntel-6-97-2"),
            &pmus,
            &names("tma_ifetch_latency"),
            Scope {
                cputype: Some("cpu_core"),
                ..scope
            },
        )
        .unwrap_err();
        assert!(matches!(e, TmaError::Unknown { .. }), "{e}");

        // Alder Lake-N (no metric file): the table, Gracemont's rule.
        let (pmus, cpu) = fixture("alderlake-n");
        let s = setup(
            absent(),
            &pmus,
            &names("tma_resource_bound"),
            Scope {
                cputype: None,
                cpu: cpu.as_ref(),
                nmi_watchdog: Some(true),
            },
        )
        .unwrap();
        assert!(s.ecore[0].level2.is_err());
        assert!(
            s.strings[0].starts_with("{cycles,cpu/event=0x71"),
            "{:?}",
            s.strings
        );
    }
}
