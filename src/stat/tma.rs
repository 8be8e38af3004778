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

use std::path::{Path, PathBuf};

use crate::metrics::perfmon::{Encoding, EventRef, Mapfile, Metric, Perfmon};
use crate::metrics::{Constants, MetricError};
use crate::pmu::Pmus;

use super::count::{Count, Counter};

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
}

/// The metrics asked for and what they need.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The metrics, in the order asked.
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
/// count.
pub fn setup(
    perfmon: &Perfmon,
    defaults_path: Option<PathBuf>,
    pmus: &Pmus,
    names: &[String],
) -> Result<Setup, TmaError> {
    let mut metrics: Vec<Metric> = Vec::new();
    for n in names.iter().flat_map(|n| n.split(',')).map(str::trim) {
        if n.is_empty() {
            continue;
        }
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
    let core = pmus.core_pmus();
    let pmu = core
        .iter()
        .find(|p| !crate::event::resolve::topdown_metric_names(p).is_empty())
        .or_else(|| core.first())
        .ok_or(TmaError::NoCorePmu)?;
    let hybrid = core.len() > 1;
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
    Ok(Setup {
        metrics,
        events,
        strings,
        latencies,
        defaults_path,
    })
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

/// One evaluated metric.
#[derive(Debug, Clone)]
pub struct MetricValue {
    /// Its name as perf shows it (`tma_dtlb_load`).
    pub name: String,
    /// Unit (`%`, ...).
    pub unit: String,
    /// The value, or why there is none.
    pub value: Result<f64, String>,
}

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
