//! `<model>_metrics.json`: Intel's metrics with their `Events` and `Constants` aliases,
//! `Formula` and `Threshold`. Strict about the JSON, lenient about content: a formula that does
//! not parse is kept as its error and fails only that metric, when it is evaluated
//! ([`MetricFile::formula_errors`] lists such metrics upfront).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::event_ref::EventRef;
use super::file::{PerfmonError, parse_json, read_text};
use crate::metrics::expr::{Expr, ExprError};

/// The `Header` of a metrics file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct MetricsHeader {
    /// `Info`: the platform in words.
    pub info: Option<String>,
    /// `Version` of the metrics file.
    pub version: Option<String>,
    /// `DatePublished`.
    pub date_published: Option<String>,
    /// `TmaVersion` (`5.2`).
    pub tma_version: Option<String>,
    /// `TmaFlavor` (`Full`).
    pub tma_flavor: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawMetricFile {
    #[serde(default)]
    header: MetricsHeader,
    metrics: Vec<RawMetric>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawMetric {
    metric_name: String,
    #[serde(default)]
    legacy_name: Option<String>,
    #[serde(default)]
    parent_category: Option<String>,
    #[serde(default)]
    level: Option<u32>,
    #[serde(default)]
    brief_description: Option<String>,
    #[serde(default)]
    unit_of_measure: Option<String>,
    #[serde(default)]
    scale_unit: Option<String>,
    #[serde(default)]
    events: Vec<RawAlias>,
    #[serde(default)]
    constants: Vec<RawAlias>,
    formula: String,
    #[serde(default)]
    base_formula: Option<String>,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    count_domain: Option<String>,
    #[serde(default)]
    metric_group: Option<String>,
    #[serde(default)]
    locate_with: Option<String>,
    #[serde(default)]
    threshold: Option<RawThreshold>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawAlias {
    name: String,
    alias: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawThreshold {
    #[serde(default)]
    threshold_metrics: Vec<RawThresholdMetric>,
    #[serde(default)]
    formula: String,
    #[serde(default)]
    threshold_issues: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawThresholdMetric {
    alias: String,
    value: String,
}

/// One entry of `Events`: the alias the formula uses and the event behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricEvent {
    /// `Alias` (`a`, `b`, `a_c`).
    pub alias: String,
    /// `Name`, split into name and modifiers.
    pub event: EventRef,
}

/// One entry of `Constants`. `Name` is usually a system constant (`HYPERTHREADING_ON`,
/// `SYSTEM_TSC_FREQ`), but Intel also writes a number (`"20"` for `dependentloadsweight`) and an
/// expression (`system.sockets[0].cpus.count * system.socket_count`), so it is kept parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricConstant {
    /// `Alias` as the formula uses it.
    pub alias: String,
    /// `Name` as written.
    pub name: String,
    pub(crate) value: Result<Expr, ExprError>,
}

impl MetricConstant {
    /// `Name` parsed as a formula over system constants.
    pub fn value(&self) -> Result<&Expr, &ExprError> {
        self.value.as_ref()
    }
}

/// One `ThresholdMetrics` entry: an alias of the threshold formula and the metric it stands
/// for, named by its `LegacyName` (`metric_TMA_....L1_Bound(%)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThresholdMetric {
    /// The alias in the threshold formula.
    pub alias: String,
    /// The `LegacyName` of the metric whose value the alias takes.
    pub legacy_name: String,
}

/// When a metric is worth showing: `Threshold.Formula` over this and ancestor metrics'
/// values, e.g. `( a > 10 ) & ( b > 10 ) & ( c > 20 ) & ( d > 20 )`.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    pub(crate) formula: Result<Expr, ExprError>,
    /// What the aliases of the formula stand for.
    pub metrics: Vec<ThresholdMetric>,
    /// `ThresholdIssues` tags (`$issueTLB`), linking nodes that share a cause.
    pub issues: Vec<String>,
}

impl Threshold {
    /// The parsed threshold formula.
    pub fn formula(&self) -> Result<&Expr, &ExprError> {
        self.formula.as_ref()
    }
}

/// One metric of a metrics file.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// `MetricName` (`DTLB_Load`).
    pub name: String,
    /// `LegacyName` (`metric_TMA_......DTLB_Load(%)`), which thresholds refer to.
    pub legacy_name: Option<String>,
    /// `Level` in the TMA tree (1 = Frontend_Bound, Bad_Speculation, Backend_Bound, Retiring);
    /// Intel gives level 1 to every non-tree metric too.
    pub level: u32,
    /// `ParentCategory`: the parent node's `MetricName`.
    pub parent: Option<String>,
    /// `BriefDescription`.
    pub description: String,
    /// `UnitOfMeasure` (`percent`, `GHz`, `MB/sec`, ...), or perf's `ScaleUnit`.
    pub unit: String,
    /// `Category` (`TMA` for the TMA tree, its `Info_*` and `Bottleneck_*` metrics).
    pub category: String,
    /// `MetricGroup`, split at `;`.
    pub groups: Vec<String>,
    /// `Events`.
    pub events: Vec<MetricEvent>,
    /// `Constants`.
    pub constants: Vec<MetricConstant>,
    pub(crate) formula: Result<Expr, ExprError>,
    /// `BaseFormula`: the formula over event and metric names, for people.
    pub base_formula: Option<String>,
    /// `Threshold`, when it has a formula.
    pub threshold: Option<Threshold>,
    /// `CountDomain` (`Slots`, `Clocks`, ...).
    pub count_domain: Option<String>,
    /// `LocateWith`: the precise event to sample to find where this bottleneck happens.
    pub locate_with: Option<String>,
}

impl Metric {
    /// The parsed `Formula`.
    pub fn formula(&self) -> Result<&Expr, &ExprError> {
        self.formula.as_ref()
    }

    /// perf's name for the metric: `tma_` + the lower-case name for the TMA category
    /// (`tma_dtlb_load`, `tma_info_thread_ipc`), the lower-case name otherwise.
    pub fn perf_name(&self) -> String {
        let lower = self.name.to_ascii_lowercase();
        if self.category == "TMA" {
            format!("tma_{lower}")
        } else {
            lower
        }
    }

    /// Whether this is a node of the TMA tree (category `TMA`, not an `Info_*` or
    /// `Bottleneck_*` metric).
    pub fn is_tma_node(&self) -> bool {
        self.category == "TMA"
            && !self.name.starts_with("Info_")
            && !self.name.starts_with("Bottleneck_")
    }

    /// Whether Intel's formula multiplies by 100 (`UnitOfMeasure` `percent`): Intel's values
    /// are percentages where perf's converted metrics are fractions with a `100%` scale unit.
    pub fn is_percent(&self) -> bool {
        self.unit.eq_ignore_ascii_case("percent") || self.unit == "100%"
    }

    /// The alias entry for `alias`, if it names an event.
    pub fn event(&self, alias: &str) -> Option<&MetricEvent> {
        self.events.iter().find(|e| e.alias == alias)
    }

    /// The events the formula actually uses (an alias listed in `Events` but absent from the
    /// formula is left out), in the order of `Events`.
    pub fn used_events(&self) -> impl Iterator<Item = &EventRef> {
        let names: Option<Vec<&str>> = self.formula.as_ref().ok().map(Expr::names);
        self.events
            .iter()
            .filter(move |e| names.as_ref().is_none_or(|n| n.contains(&e.alias.as_str())))
            .map(|e| &e.event)
    }

    /// Whether hrec can compute it per function (`record -M` / `--td-level`, then `report
    /// --metrics`): it uses events, and every one is a core event or a retire latency. An
    /// uncore event (`UNC_*`, the free-running energy counters) counts for the whole machine,
    /// the TSC is read into no sample and the run's duration belongs to no function, so a
    /// metric with any of them is for `stat -M` only.
    pub fn per_function(&self) -> bool {
        // A rate over the run's wall time (`DURATIONTIMEINSECONDS`) is the run's.
        if self.formula.as_ref().is_ok_and(|f| {
            f.names()
                .iter()
                .any(|n| n.eq_ignore_ascii_case("DURATIONTIMEINSECONDS"))
        }) {
            return false;
        }
        let mut any = false;
        for e in self.used_events() {
            any = true;
            let name = e.name.to_ascii_uppercase();
            if name.starts_with("UNC_") || name.starts_with("FREERUN_") || name == "TSC" {
                return false;
            }
        }
        any
    }

    fn from_raw(raw: RawMetric) -> Metric {
        let non_empty = |s: Option<String>| s.filter(|s| !s.trim().is_empty());
        let threshold = raw.threshold.and_then(|t| {
            if t.formula.trim().is_empty() {
                return None;
            }
            Some(Threshold {
                formula: Expr::parse(&t.formula),
                metrics: t
                    .threshold_metrics
                    .into_iter()
                    .map(|m| ThresholdMetric {
                        alias: m.alias,
                        legacy_name: m.value,
                    })
                    .collect(),
                issues: t
                    .threshold_issues
                    .unwrap_or_default()
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
            })
        });
        Metric {
            formula: Expr::parse(&raw.formula),
            name: raw.metric_name,
            legacy_name: non_empty(raw.legacy_name),
            level: raw.level.unwrap_or(1),
            parent: non_empty(raw.parent_category),
            description: raw.brief_description.unwrap_or_default(),
            unit: non_empty(raw.unit_of_measure)
                .or(raw.scale_unit)
                .unwrap_or_default(),
            category: raw.category.unwrap_or_default(),
            groups: raw
                .metric_group
                .unwrap_or_default()
                .split(';')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect(),
            events: raw
                .events
                .into_iter()
                .map(|a| MetricEvent {
                    event: EventRef::parse(&a.name),
                    alias: a.alias,
                })
                .collect(),
            constants: raw
                .constants
                .into_iter()
                .map(|c| MetricConstant {
                    value: Expr::parse(&c.name),
                    name: c.name,
                    alias: c.alias,
                })
                .collect(),
            base_formula: non_empty(raw.base_formula),
            threshold,
            count_domain: non_empty(raw.count_domain),
            locate_with: non_empty(raw.locate_with),
        }
    }
}

/// A `<model>_metrics.json`.
#[derive(Debug, Clone)]
pub struct MetricFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// `Header`.
    pub header: MetricsHeader,
    /// `Metrics`, in file order.
    pub metrics: Vec<Metric>,
}

impl MetricFile {
    /// Reads a metrics file.
    pub fn load(path: &Path) -> Result<MetricFile, PerfmonError> {
        MetricFile::parse(&read_text(path)?, path)
    }

    /// Parses the text of a metrics file; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<MetricFile, PerfmonError> {
        let raw: RawMetricFile = parse_json(text, path)?;
        Ok(MetricFile {
            path: path.to_path_buf(),
            header: raw.header,
            metrics: raw.metrics.into_iter().map(Metric::from_raw).collect(),
        })
    }

    /// Every formula, threshold formula and constant name that did not parse, as
    /// `(metric name, what, error)`.
    pub fn formula_errors(&self) -> Vec<(&str, &'static str, &ExprError)> {
        let mut out = Vec::new();
        for m in &self.metrics {
            if let Err(e) = &m.formula {
                out.push((m.name.as_str(), "Formula", e));
            }
            if let Some(Err(e)) = m.threshold.as_ref().map(|t| &t.formula) {
                out.push((m.name.as_str(), "Threshold", e));
            }
            for c in &m.constants {
                if let Err(e) = &c.value {
                    out.push((m.name.as_str(), "Constants", e));
                }
            }
        }
        out
    }
}
