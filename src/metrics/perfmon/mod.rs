//! Intel's perfmon files, read at run time from a directory laid out like Intel's repository:
//!
//! * `mapfile.csv`: `Family-model,Version,Filename,EventType,Core Type,Native Model ID,Core
//!   Role Name`. `Family-model` is a pattern over the CPU's identification string
//!   `GenuineIntel-<family>-<MODEL>[-<STEPPING>]` (family decimal, model and stepping upper-case
//!   hex, like perf's x86 cpuid string); patterns may hold character classes
//!   (`GenuineIntel-6-55-[01234]`). `Filename` is relative to the directory
//!   (`/GNR/metrics/graniterapids_metrics.json`). `EventType` is `core`, `hybridcore` (with
//!   `Core Type` 0x40 = Core / 0x20 = Atom), `metrics`, `retire latency`, `uncore`, ...
//! * `<model>_metrics.json`: `Header` and `Metrics`, each with `MetricName`, `LegacyName`,
//!   `Level`, `ParentCategory`, `Category`, `MetricGroup` (`;`-separated), `UnitOfMeasure`,
//!   `Events` and `Constants` (`[{Name, Alias}]`), `Formula` over the aliases, `BaseFormula`
//!   (the same over event and metric names, informative only) and `Threshold` (its own
//!   `Formula` over `ThresholdMetrics` aliases, each naming a metric by its `LegacyName`).
//! * `<model>_core.json`: `Header` and `Events` with `EventName`, `EventCode`, `UMask`,
//!   `CounterMask`, `Invert`, `EdgeDetect`, `MSRIndex`/`MSRValue`, ... Every value is a string
//!   (`"0x2A,0x2B"` for the two offcore-response codes); numbers are accepted too.
//! * `<model>_retire_latency.json`: `Platform` (strings) and `Data`: `{EVENT: {MIN, MAX, MEAN}}`.
//!   hrec's own `--retire-latency-json` output adds `COUNT`, `MEDIAN`, `P90`, `P99` and
//!   `HISTOGRAM` (`[{LE, COUNT}]`); they are read when present.
//!
//! Intel names its metrics `Frontend_Bound`, `DTLB_Load`, `Info_Thread_IPC`; perf's converted
//! files call the same metrics `tma_frontend_bound`, `tma_dtlb_load`, `tma_info_thread_ipc`.
//! [`Perfmon::metric`] accepts both spellings, case-insensitively.
//!
//! Reading is strict about syntax (a truncated or mistyped file is an error naming the file)
//! but lenient about content: a formula that does not parse makes only that metric fail, when
//! it is evaluated, and [`MetricFile::formula_errors`] lists such metrics upfront.

// Byte and text parsing: no indexing that can panic, no unwrap/expect outside tests.
#![cfg_attr(
    not(test),
    deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)
)]

mod event_ref;
mod events;
mod file;
mod mapfile;
mod metrics;
mod retire;

use std::path::Path;

pub use event_ref::EventRef;
pub use events::{CoreEvent, CoreEvents, Encoding, EventsHeader, RawEvent, ResolveError};
pub use file::PerfmonError;
pub use mapfile::{Mapfile, MapfileEntry, Selection, cpuid_from_cpuinfo, cpuid_string};
pub use metrics::{
    Metric, MetricConstant, MetricEvent, MetricFile, MetricsHeader, Threshold, ThresholdMetric,
};
pub use retire::{HistogramBucket, RetireLatencies, RetireLatency};

use events::PERF_METRICS;

/// The perfmon files of one CPU: its metrics, its core events and, where Intel publishes
/// them, retire-latency defaults.
#[derive(Debug, Clone)]
pub struct Perfmon {
    /// The metrics file.
    pub metrics: MetricFile,
    /// The core (P-core on hybrid parts) event list, if there is one.
    pub events: Option<CoreEvents>,
    /// The retire-latency defaults, if there are any.
    pub retire_latencies: Option<RetireLatencies>,
}

impl Perfmon {
    /// Loads the files `dir/mapfile.csv` lists for `cpuid` ([`cpuid_string`]).
    pub fn load(dir: &Path, cpuid: &str) -> Result<Perfmon, PerfmonError> {
        let mapfile = Mapfile::load(&dir.join("mapfile.csv"))?;
        let sel = mapfile.select(cpuid)?;
        let metrics = MetricFile::load(&sel.metrics.path_in(dir))?;
        let events = sel
            .core_events
            .map(|e| CoreEvents::load(&e.path_in(dir)))
            .transpose()?;
        let retire_latencies = sel
            .retire_latency
            .map(|e| RetireLatencies::load(&e.path_in(dir)))
            .transpose()?;
        Ok(Perfmon {
            metrics,
            events,
            retire_latencies,
        })
    }

    /// Loads explicitly named files.
    pub fn from_files(
        metrics: &Path,
        core_events: Option<&Path>,
        retire_latency: Option<&Path>,
    ) -> Result<Perfmon, PerfmonError> {
        Ok(Perfmon {
            metrics: MetricFile::load(metrics)?,
            events: core_events.map(CoreEvents::load).transpose()?,
            retire_latencies: retire_latency.map(RetireLatencies::load).transpose()?,
        })
    }

    /// All metrics, in file order.
    pub fn all(&self) -> &[Metric] {
        &self.metrics.metrics
    }

    /// The metric called `name`: Intel's `MetricName` or perf's `tma_*` name
    /// ([`Metric::perf_name`]), case-insensitively, or its exact `LegacyName`.
    pub fn metric(&self, name: &str) -> Option<&Metric> {
        let all = self.all();
        all.iter()
            .find(|m| m.name.eq_ignore_ascii_case(name))
            .or_else(|| {
                all.iter()
                    .find(|m| m.perf_name().eq_ignore_ascii_case(name))
            })
            .or_else(|| all.iter().find(|m| m.legacy_name.as_deref() == Some(name)))
    }

    /// The metric whose `LegacyName` is `legacy_name` (what thresholds refer to).
    pub fn metric_by_legacy_name(&self, legacy_name: &str) -> Option<&Metric> {
        self.all()
            .iter()
            .find(|m| m.legacy_name.as_deref() == Some(legacy_name))
    }

    /// The metrics in `MetricGroup` `group` (case-insensitive). perf's `TopdownL1`,
    /// `TopdownL2` group names are taken as Intel's `TmaL1`, `TmaL2`.
    pub fn metrics_in_group(&self, group: &str) -> Vec<&Metric> {
        let intel = group
            .get(..8)
            .filter(|p| p.eq_ignore_ascii_case("topdownl"))
            .map(|_| format!("TmaL{}", &group[8..]));
        self.all()
            .iter()
            .filter(|m| {
                m.groups.iter().any(|g| {
                    g.eq_ignore_ascii_case(group)
                        || intel.as_deref().is_some_and(|i| g.eq_ignore_ascii_case(i))
                })
            })
            .collect()
    }

    /// The TMA tree nodes ([`Metric::is_tma_node`]) down to `max_level`, in file order
    /// (which is tree order: each node follows its parent).
    pub fn tma_metrics(&self, max_level: u32) -> Vec<&Metric> {
        self.all()
            .iter()
            .filter(|m| m.is_tma_node() && m.level <= max_level)
            .collect()
    }

    /// The distinct events `metrics` need, in order of first use: counted events and
    /// retire latencies (`EventRef::retire_latency`) alike. Aliases listed in `Events` but
    /// unused by the formula are left out.
    pub fn events_needed<'a>(
        &self,
        metrics: impl IntoIterator<Item = &'a Metric>,
    ) -> Vec<EventRef> {
        let mut out: Vec<EventRef> = Vec::new();
        for m in metrics {
            for e in m.used_events() {
                if !out.contains(e) {
                    out.push(e.clone());
                }
            }
        }
        out
    }

    /// How to program `event`: the core event list's fields with its modifiers applied, the
    /// TopDown metric it is, or the TSC.
    pub fn resolve(&self, event: &EventRef) -> Result<Encoding, ResolveError> {
        let display = event.to_string();
        if event.retire_latency {
            return Err(ResolveError::RetireLatency(display));
        }
        if let Some(m) = event.unknown.first() {
            return Err(ResolveError::UnknownModifier {
                event: display,
                modifier: m.clone(),
            });
        }
        let upper = event.name.to_ascii_uppercase();
        if let Some(&(_, umask, sysfs_name)) = PERF_METRICS.iter().find(|p| p.0 == upper) {
            return Ok(Encoding::TopdownMetric { umask, sysfs_name });
        }
        if upper == "TSC" {
            return Ok(Encoding::Tsc);
        }
        let Some(list) = &self.events else {
            return Err(ResolveError::NoEventList(display));
        };
        let Some(ev) = list.get(&event.name) else {
            return Err(if upper.starts_with("UNC_") {
                ResolveError::NotCore {
                    event: display,
                    why: "uncore events are not supported yet",
                }
            } else if upper.starts_with("FREERUN_") {
                ResolveError::NotCore {
                    event: display,
                    why: "a free-running energy counter (RAPL)",
                }
            } else {
                ResolveError::Unknown(display)
            });
        };
        // Never empty in a list that was read: an event without an EventCode is refused, and
        // one without a UMask has 0.
        let (Some(&event_code), Some(&umask)) = (ev.event_codes.first(), ev.umasks.first()) else {
            return Err(ResolveError::Unknown(display));
        };
        let msr = ev
            .msr_index
            .first()
            .map(|&i| (i, event.ocr_msr_val.unwrap_or(ev.msr_value)));
        Ok(Encoding::Counter(RawEvent {
            name: ev.name.clone(),
            event_code,
            umask: event.umask.unwrap_or(umask),
            umask_ext: ev.umask_ext,
            cmask: event.cmask.unwrap_or(ev.cmask),
            inv: ev.inv || event.inv,
            edge: ev.edge || event.edge,
            any_thread: ev.any_thread,
            eq: ev.equal || event.eq,
            msr,
            kernel_only: event.kernel_only,
            user_only: event.user_only,
            per_core: event.per_core,
            perf_metrics: event.perf_metrics,
            sample_after_value: ev.sample_after_value,
        }))
    }

    /// The default retire latency (`MEAN`) of `event` from the retire-latency file, or from
    /// the event list's `RetirementLatencyMean` (perf's converted lists).
    pub fn default_retire_latency(&self, event: &str) -> Option<f64> {
        let base = event.split(':').next().unwrap_or(event);
        self.retire_latencies
            .as_ref()
            .and_then(|r| r.get(base))
            .map(|r| r.mean)
            .or_else(|| {
                self.events
                    .as_ref()?
                    .get(base)?
                    .retirement_latency
                    .as_ref()
                    .map(|r| r.mean)
            })
    }
}

#[cfg(test)]
mod tests;
