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

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::expr::{Expr, ExprError};

/// A perfmon file that cannot be used. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum PerfmonError {
    /// The file cannot be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid JSON / CSV of the expected shape.
    #[error("{}: {message}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, with a line and column where the parser knows them.
        message: String,
    },
    /// `mapfile.csv` has no file of the wanted kind for this CPU.
    #[error("{}: no {what} file listed for {cpuid}", path.display())]
    NotListed {
        /// The mapfile.
        path: PathBuf,
        /// The CPU identification string that was looked up.
        cpuid: String,
        /// `metrics`, `core events`, ...
        what: &'static str,
    },
}

fn malformed(path: &Path, message: impl Into<String>) -> PerfmonError {
    PerfmonError::Malformed {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

fn read_text(path: &Path) -> Result<String, PerfmonError> {
    std::fs::read_to_string(path).map_err(|source| PerfmonError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn parse_json<T: DeserializeOwned>(text: &str, path: &Path) -> Result<T, PerfmonError> {
    // serde_json's messages are one line and end with "at line L column C".
    serde_json::from_str(text).map_err(|e| malformed(path, format!("invalid JSON: {e}")))
}

/// Parses `0x1a`, `0X1A` or decimal `26`.
fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else {
        s.parse().ok()
    }
}

// ---------------------------------------------------------------------------------------------
// mapfile.csv

/// The CPU identification string perf uses on x86 to pick event files:
/// `GenuineIntel-<family>-<MODEL>-<STEPPING>` (family in decimal, model and stepping in
/// upper-case hex), e.g. `GenuineIntel-6-AD-1`.
pub fn cpuid_string(vendor: &str, family: u32, model: u32, stepping: u32) -> String {
    format!("{vendor}-{family}-{model:X}-{stepping:X}")
}

/// The [`cpuid_string`] of the first processor in the text of `/proc/cpuinfo`, or `None`
/// when a field is missing (not x86).
pub fn cpuid_from_cpuinfo(cpuinfo: &str) -> Option<String> {
    let field = |key: &str| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    let vendor = field("vendor_id")?;
    let family = field("cpu family")?.parse().ok()?;
    let model = field("model")?.parse().ok()?;
    let stepping = field("stepping")?.parse().ok()?;
    Some(cpuid_string(&vendor, family, model, stepping))
}

/// One row of `mapfile.csv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapfileEntry {
    /// `Family-model`: the pattern over the cpuid string.
    pub pattern: String,
    /// `Version` of the file (`V1.20`).
    pub version: String,
    /// `Filename`, relative to the perfmon directory (`/GNR/events/graniterapids_core.json`).
    pub filename: String,
    /// `EventType`: `core`, `hybridcore`, `metrics`, `retire latency`, `uncore`, ...
    pub event_type: String,
    /// `Core Type` of hybrid parts: `0x40` (Core) or `0x20` (Atom); empty otherwise.
    pub core_type: String,
    /// `Native Model ID` of hybrid parts; empty otherwise.
    pub native_model_id: String,
    /// `Core Role Name` of hybrid parts: `Core`, `Atom`, `LowPower_Atom`; empty otherwise.
    pub core_role: String,
}

impl MapfileEntry {
    /// Whether the pattern matches `cpuid`: case-insensitively, as a prefix that ends at the
    /// end of `cpuid` or at a `-`, so `GenuineIntel-6-AD` matches `GenuineIntel-6-AD-1` but not
    /// `GenuineIntel-6-ADE`, and `GenuineIntel-6-55-[01234]` needs a stepping.
    pub fn matches(&self, cpuid: &str) -> bool {
        pattern_matches(&self.pattern, cpuid)
    }

    /// Where the file lies under the perfmon directory `dir`.
    pub fn path_in(&self, dir: &Path) -> PathBuf {
        dir.join(self.filename.trim_start_matches('/'))
    }

    fn is_hybrid(&self) -> bool {
        !self.core_type.is_empty()
    }
}

fn pattern_matches(pattern: &str, cpuid: &str) -> bool {
    let p = pattern.as_bytes();
    let s = cpuid.as_bytes();
    let (mut i, mut j) = (0, 0);
    while i < p.len() {
        let Some(&c) = s.get(j) else {
            return false;
        };
        if p[i] == b'[' {
            let Some(len) = p[i..].iter().position(|&x| x == b']') else {
                return false;
            };
            if !class_contains(&p[i + 1..i + len], c) {
                return false;
            }
            i += len + 1;
        } else {
            if !p[i].eq_ignore_ascii_case(&c) {
                return false;
            }
            i += 1;
        }
        j += 1;
    }
    j == s.len() || s[j] == b'-'
}

/// `class` is the inside of `[...]`: single characters and `a-z` ranges.
fn class_contains(class: &[u8], c: u8) -> bool {
    let c = c.to_ascii_uppercase();
    let mut k = 0;
    while k < class.len() {
        let lo = class[k].to_ascii_uppercase();
        if k + 2 < class.len() && class[k + 1] == b'-' {
            let hi = class[k + 2].to_ascii_uppercase();
            if (lo..=hi).contains(&c) {
                return true;
            }
            k += 3;
        } else {
            if lo == c {
                return true;
            }
            k += 1;
        }
    }
    false
}

/// `mapfile.csv`.
#[derive(Debug, Clone)]
pub struct Mapfile {
    /// Where it was read from (for messages).
    pub path: PathBuf,
    /// The rows after the header, in file order.
    pub entries: Vec<MapfileEntry>,
}

/// The files [`Mapfile::select`] picked for one CPU (the P-core files on hybrid parts).
#[derive(Debug, Clone, Copy)]
pub struct Selection<'a> {
    /// The `metrics` file.
    pub metrics: &'a MapfileEntry,
    /// The `core` (or P-core `hybridcore`) event list, if listed.
    pub core_events: Option<&'a MapfileEntry>,
    /// The `retire latency` defaults, if listed (Granite Rapids only among hrec's four).
    pub retire_latency: Option<&'a MapfileEntry>,
}

impl Mapfile {
    /// Reads `mapfile.csv`.
    pub fn load(path: &Path) -> Result<Mapfile, PerfmonError> {
        Mapfile::parse(&read_text(path)?, path)
    }

    /// Parses the text of `mapfile.csv`; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<Mapfile, PerfmonError> {
        let mut entries = Vec::new();
        let mut lines = text.lines().enumerate();
        let header = lines.next().map(|(_, l)| l).unwrap_or("");
        if !header.starts_with("Family-model") {
            return Err(malformed(
                path,
                "line 1: expected the header 'Family-model,Version,Filename,EventType,...'",
            ));
        }
        for (n, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            let cols: Vec<&str> = line.split(',').map(str::trim).collect();
            if cols.len() < 4 {
                return Err(malformed(
                    path,
                    format!(
                        "line {}: expected at least 4 comma-separated columns, found {}",
                        n + 1,
                        cols.len()
                    ),
                ));
            }
            let pattern = cols[0];
            if pattern.matches('[').count() != pattern.matches(']').count() {
                return Err(malformed(
                    path,
                    format!("line {}: unbalanced '[' in pattern {pattern:?}", n + 1),
                ));
            }
            let col = |i: usize| cols.get(i).copied().unwrap_or("").to_string();
            entries.push(MapfileEntry {
                pattern: col(0),
                version: col(1),
                filename: col(2),
                event_type: col(3),
                core_type: col(4),
                native_model_id: col(5),
                core_role: col(6),
            });
        }
        Ok(Mapfile {
            path: path.to_path_buf(),
            entries,
        })
    }

    /// Every row whose pattern matches `cpuid`, in file order.
    pub fn matching<'a>(&'a self, cpuid: &'a str) -> impl Iterator<Item = &'a MapfileEntry> {
        self.entries.iter().filter(move |e| e.matches(cpuid))
    }

    /// The metrics, core-event and retire-latency files for `cpuid`. On hybrid parts the
    /// metrics file is the P-core's (role `Core`) and the event list is the `hybridcore` one
    /// with the same core type and native model id.
    pub fn select(&self, cpuid: &str) -> Result<Selection<'_>, PerfmonError> {
        let rows: Vec<&MapfileEntry> = self.entries.iter().filter(|e| e.matches(cpuid)).collect();
        let of_type = |t: &'static str| rows.iter().copied().filter(move |e| e.event_type == t);
        let metrics = of_type("metrics")
            .find(|e| !e.is_hybrid() || e.core_role == "Core")
            .or_else(|| of_type("metrics").next())
            .ok_or_else(|| PerfmonError::NotListed {
                path: self.path.clone(),
                cpuid: cpuid.to_string(),
                what: "metrics",
            })?;
        let core_events = if metrics.is_hybrid() {
            of_type("hybridcore")
                .find(|e| {
                    e.core_type == metrics.core_type && e.native_model_id == metrics.native_model_id
                })
                .or_else(|| of_type("hybridcore").find(|e| e.core_role == metrics.core_role))
        } else {
            of_type("core").next()
        };
        Ok(Selection {
            metrics,
            core_events,
            retire_latency: of_type("retire latency").next(),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Event references inside metrics

/// An event as a metric names it: Intel's event name plus the modifiers written after `:`
/// (`UOPS_RETIRED.MS:c1:e1`, `MEM_INST_RETIRED.LOCK_LOADS:retire_latency`,
/// `TOPDOWN.SLOTS:perf_metrics`). Two references are the same event to count exactly when they
/// are equal, so it serves as the key of a caller's count table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventRef {
    /// The event name without modifiers (`UOPS_RETIRED.MS`).
    pub name: String,
    /// `:cN`: counter mask (count cycles with at least N occurrences).
    pub cmask: Option<u32>,
    /// `:e1`: edge detect.
    pub edge: bool,
    /// `:i1`: invert the counter-mask comparison.
    pub inv: bool,
    /// `:eq1`: counter mask compares for equality (Lion Cove's `Equal` bit).
    pub eq: bool,
    /// `:u0x30`: unit mask replacing the event list's.
    pub umask: Option<u32>,
    /// `:SUP`: count in the kernel (supervisor) only.
    pub kernel_only: bool,
    /// `:USER`: count in user space only.
    pub user_only: bool,
    /// `:ocr_msr_val=0x...`: offcore-response MSR value replacing the event list's.
    pub ocr_msr_val: Option<u64>,
    /// `:percore`: the value summed over the SMT siblings of a core.
    pub per_core: bool,
    /// `:one_unit`: an uncore event read from one unit only.
    pub one_unit: bool,
    /// `:perf_metrics`: `TOPDOWN.SLOTS` read as the leader of the TopDown metrics group.
    pub perf_metrics: bool,
    /// `:retire_latency` (perf writes `:R`): not a count but the event's average retire
    /// latency in cycles, from Timed PEBS samples or the retire-latency defaults.
    pub retire_latency: bool,
    /// `a[N]` in a formula: the value of instance N (socket N's uncore unit) instead of the
    /// sum. Never set by [`EventRef::parse`]; [`super::Metric::evaluate`] sets it on the
    /// reference it hands to the count lookup.
    pub instance: Option<u32>,
    /// Modifiers hrec does not know, kept so that resolution can refuse them by name.
    pub unknown: Vec<String>,
}

impl EventRef {
    /// Splits `NAME:mod:mod...`. Never fails: a modifier that is not understood lands in
    /// [`EventRef::unknown`].
    pub fn parse(text: &str) -> EventRef {
        let mut parts = text.trim().split(':');
        let mut r = EventRef {
            name: parts.next().unwrap_or("").to_string(),
            ..EventRef::default()
        };
        for m in parts {
            let num = |s: &str| parse_u64(s).and_then(|v| u32::try_from(v).ok());
            let lower = m.to_ascii_lowercase();
            match lower.as_str() {
                "retire_latency" | "r" => r.retire_latency = true,
                "perf_metrics" => r.perf_metrics = true,
                "sup" => r.kernel_only = true,
                "user" => r.user_only = true,
                "percore" => r.per_core = true,
                "one_unit" => r.one_unit = true,
                _ => {
                    let ok = if let Some(v) = lower.strip_prefix("ocr_msr_val=") {
                        parse_u64(v).map(|v| r.ocr_msr_val = Some(v)).is_some()
                    } else if let Some(v) = lower.strip_prefix("eq") {
                        num(v).map(|v| r.eq = v != 0).is_some()
                    } else if let Some(v) = lower.strip_prefix('c') {
                        num(v).map(|v| r.cmask = Some(v)).is_some()
                    } else if let Some(v) = lower.strip_prefix('e') {
                        num(v).map(|v| r.edge = v != 0).is_some()
                    } else if let Some(v) = lower.strip_prefix('i') {
                        num(v).map(|v| r.inv = v != 0).is_some()
                    } else if let Some(v) = lower.strip_prefix('u') {
                        num(v).map(|v| r.umask = Some(v)).is_some()
                    } else {
                        false
                    };
                    if !ok {
                        r.unknown.push(m.to_string());
                    }
                }
            }
        }
        r
    }

    /// Whether the value is a count (read from a counter), as opposed to a retire latency.
    pub fn is_counted(&self) -> bool {
        !self.retire_latency
    }
}

/// Intel's spelling, modifiers in a fixed order, then `[N]` for an instance.
impl fmt::Display for EventRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(c) = self.cmask {
            write!(f, ":c{c}")?;
        }
        if self.edge {
            f.write_str(":e1")?;
        }
        if self.inv {
            f.write_str(":i1")?;
        }
        if self.eq {
            f.write_str(":eq1")?;
        }
        if let Some(u) = self.umask {
            write!(f, ":u{u:#x}")?;
        }
        if self.kernel_only {
            f.write_str(":SUP")?;
        }
        if self.user_only {
            f.write_str(":USER")?;
        }
        if let Some(v) = self.ocr_msr_val {
            write!(f, ":ocr_msr_val={v:#x}")?;
        }
        if self.per_core {
            f.write_str(":percore")?;
        }
        if self.one_unit {
            f.write_str(":one_unit")?;
        }
        if self.perf_metrics {
            f.write_str(":perf_metrics")?;
        }
        if self.retire_latency {
            f.write_str(":retire_latency")?;
        }
        for u in &self.unknown {
            write!(f, ":{u}")?;
        }
        if let Some(i) = self.instance {
            write!(f, "[{i}]")?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// <model>_metrics.json

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

// ---------------------------------------------------------------------------------------------
// <model>_core.json

/// The `Header` of an event list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct EventsHeader {
    /// `Info`: the platform in words.
    pub info: Option<String>,
    /// `Version` (`1.20`).
    pub version: Option<String>,
    /// `DatePublished`.
    pub date_published: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawEventFile {
    #[serde(default)]
    header: EventsHeader,
    events: Vec<serde_json::Map<String, serde_json::Value>>,
}

/// One event of a core event list, with the fields hrec uses parsed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CoreEvent {
    /// `EventName` (`MEM_INST_RETIRED.STLB_HIT_LOADS`).
    pub name: String,
    /// `EventCode`; two codes (`0x2A,0x2B`) for the offcore-response events, one per MSR.
    pub event_codes: Vec<u32>,
    /// `UMask`; some Atom offcore events list two.
    pub umasks: Vec<u32>,
    /// `UMaskExt` (the second unit mask, `IA32_PERFEVTSELx[47:40]`), 0 when absent.
    pub umask_ext: u32,
    /// `CounterMask`.
    pub cmask: u32,
    /// `Invert`.
    pub inv: bool,
    /// `EdgeDetect`.
    pub edge: bool,
    /// `AnyThread` (absent in current files).
    pub any_thread: bool,
    /// `Equal`: the counter mask compares for equality (Lion Cove and later).
    pub equal: bool,
    /// `MSRIndex` (0x3F6 load latency, 0x3F7 frontend, 0x1A6/0x1A7 offcore response); empty
    /// when `0x00`.
    pub msr_index: Vec<u32>,
    /// `MSRValue`.
    pub msr_value: u64,
    /// `SampleAfterValue`: Intel's suggested sampling period.
    pub sample_after_value: Option<u64>,
    /// `Counter` as written (`0,1,2,3`, `Fixed counter 1`).
    pub counter: String,
    /// `Precise` (or the older `PEBS`) is non-zero.
    pub precise: bool,
    /// `TakenAlone`: needs the whole PMU.
    pub taken_alone: bool,
    /// `Deprecated`.
    pub deprecated: bool,
    /// `Offcore`.
    pub offcore: bool,
    /// `BriefDescription`.
    pub description: String,
    /// perf's converted lists carry `RetirementLatencyMean`/`Min`/`Max`; Intel's do not.
    pub retirement_latency: Option<RetireLatency>,
}

impl CoreEvent {
    fn from_json(
        map: &serde_json::Map<String, serde_json::Value>,
        index: usize,
        path: &Path,
    ) -> Result<CoreEvent, PerfmonError> {
        let name = match map.get("EventName") {
            Some(serde_json::Value::String(s)) => s.clone(),
            _ => {
                return Err(malformed(
                    path,
                    format!("event #{}: missing or non-string \"EventName\"", index + 1),
                ));
            }
        };
        let bad = |field: &str, v: &serde_json::Value, want: &str| {
            malformed(
                path,
                format!("event {name}: field \"{field}\" is {v}, expected {want}"),
            )
        };
        // A field as text: strings as they are, numbers printed; absent -> None.
        let text = |field: &str| -> Result<Option<String>, PerfmonError> {
            match map.get(field) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
                Some(serde_json::Value::Number(n)) => Ok(Some(n.to_string())),
                Some(v) => Err(bad(field, v, "a string or a number")),
            }
        };
        let list = |field: &str| -> Result<Vec<u64>, PerfmonError> {
            let Some(s) = text(field)? else {
                return Ok(Vec::new());
            };
            s.split(',')
                .map(|p| {
                    parse_u64(p).ok_or_else(|| {
                        bad(
                            field,
                            &map[field],
                            "a number or a comma-separated list of numbers",
                        )
                    })
                })
                .collect()
        };
        let num = |field: &str| -> Result<Option<u64>, PerfmonError> {
            match text(field)? {
                None => Ok(None),
                Some(s) if s.trim().is_empty() || s == "null" || s == "NA" => Ok(None),
                Some(s) => parse_u64(&s)
                    .map(Some)
                    .ok_or_else(|| bad(field, &map[field], "a number")),
            }
        };
        let u32_of = |field: &str, v: u64| {
            u32::try_from(v).map_err(|_| bad(field, &map[field], "a number below 2^32"))
        };
        let u32s = |field: &str| -> Result<Vec<u32>, PerfmonError> {
            list(field)?.into_iter().map(|v| u32_of(field, v)).collect()
        };
        let flag =
            |field: &str| -> Result<bool, PerfmonError> { Ok(num(field)?.unwrap_or(0) != 0) };
        let float = |field: &str| -> Result<Option<f64>, PerfmonError> {
            match text(field)? {
                None => Ok(None),
                Some(s) => s
                    .trim()
                    .parse::<f64>()
                    .map(Some)
                    .map_err(|_| bad(field, &map[field], "a number")),
            }
        };
        let event_codes = u32s("EventCode")?;
        if event_codes.is_empty() {
            return Err(malformed(
                path,
                format!("event {name}: missing \"EventCode\""),
            ));
        }
        let mut umasks = u32s("UMask")?;
        if umasks.is_empty() {
            umasks.push(0);
        }
        let msr_index: Vec<u32> = u32s("MSRIndex")?.into_iter().filter(|&m| m != 0).collect();
        let retirement_latency = match (
            float("RetirementLatencyMean")?,
            float("RetirementLatencyMin")?,
            float("RetirementLatencyMax")?,
        ) {
            (Some(mean), min, max) => Some(RetireLatency {
                mean,
                min: min.unwrap_or(mean),
                max: max.unwrap_or(mean),
                ..RetireLatency::default()
            }),
            _ => None,
        };
        Ok(CoreEvent {
            event_codes,
            umasks,
            umask_ext: num("UMaskExt")?.map_or(Ok(0), |v| u32_of("UMaskExt", v))?,
            cmask: num("CounterMask")?.map_or(Ok(0), |v| u32_of("CounterMask", v))?,
            inv: flag("Invert")?,
            edge: flag("EdgeDetect")?,
            any_thread: flag("AnyThread")?,
            equal: flag("Equal")?,
            msr_index,
            msr_value: num("MSRValue")?.unwrap_or(0),
            sample_after_value: num("SampleAfterValue")?,
            counter: text("Counter")?.unwrap_or_default(),
            precise: flag("Precise")? || flag("PEBS")?,
            taken_alone: flag("TakenAlone")?,
            deprecated: flag("Deprecated")?,
            offcore: flag("Offcore")?,
            description: text("BriefDescription")?.unwrap_or_default(),
            retirement_latency,
            name,
        })
    }
}

/// A `<model>_core.json` event list, indexed by upper-case event name.
#[derive(Debug, Clone)]
pub struct CoreEvents {
    /// Where it was read from.
    pub path: PathBuf,
    /// `Header`.
    pub header: EventsHeader,
    events: Vec<CoreEvent>,
    index: HashMap<String, usize>,
}

impl CoreEvents {
    /// Reads an event list.
    pub fn load(path: &Path) -> Result<CoreEvents, PerfmonError> {
        CoreEvents::parse(&read_text(path)?, path)
    }

    /// Parses the text of an event list; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<CoreEvents, PerfmonError> {
        let raw: RawEventFile = parse_json(text, path)?;
        let events = raw
            .events
            .iter()
            .enumerate()
            .map(|(i, m)| CoreEvent::from_json(m, i, path))
            .collect::<Result<Vec<_>, _>>()?;
        let index = events
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name.to_ascii_uppercase(), i))
            .collect();
        Ok(CoreEvents {
            path: path.to_path_buf(),
            header: raw.header,
            events,
            index,
        })
    }

    /// The event called `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&CoreEvent> {
        self.index
            .get(&name.to_ascii_uppercase())
            .map(|&i| &self.events[i])
    }

    /// All events, in file order.
    pub fn events(&self) -> &[CoreEvent] {
        &self.events
    }
}

// ---------------------------------------------------------------------------------------------
// Resolution of an EventRef to an encoding

/// What a metric's event is, in hardware terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Encoding {
    /// An ordinary core counter event.
    Counter(RawEvent),
    /// `PERF_METRICS.*`: one of the TopDown metrics of the `PERF_METRICS` MSR, opened as the
    /// kernel's `topdown-*` event (`event=0x00,umask=0x80..0x87`) in a group led by `slots`;
    /// its count is in slot units.
    TopdownMetric {
        /// `attr.config >> 8`: 0x80 retiring ... 0x87 memory bound.
        umask: u32,
        /// The kernel's sysfs name (`topdown-fe-bound`).
        sysfs_name: &'static str,
    },
    /// `TSC`: the time-stamp counter (perf's `msr/tsc/`), not a core PMU event.
    Tsc,
}

/// The `PERF_METRICS.*` names Intel's metrics use and the kernel's `topdown-*` events they are
/// (`arch/x86/events/intel/core.c`; `shared/reference/perf-abi.md` 12.1).
const PERF_METRICS: [(&str, u32, &str); 8] = [
    ("PERF_METRICS.RETIRING", 0x80, "topdown-retiring"),
    ("PERF_METRICS.BAD_SPECULATION", 0x81, "topdown-bad-spec"),
    ("PERF_METRICS.FRONTEND_BOUND", 0x82, "topdown-fe-bound"),
    ("PERF_METRICS.BACKEND_BOUND", 0x83, "topdown-be-bound"),
    ("PERF_METRICS.HEAVY_OPERATIONS", 0x84, "topdown-heavy-ops"),
    (
        "PERF_METRICS.BRANCH_MISPREDICTS",
        0x85,
        "topdown-br-mispredict",
    ),
    ("PERF_METRICS.FETCH_LATENCY", 0x86, "topdown-fetch-lat"),
    ("PERF_METRICS.MEMORY_BOUND", 0x87, "topdown-mem-bound"),
];

/// A core event's programming: the event list's fields with the reference's modifiers applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawEvent {
    /// The event name.
    pub name: String,
    /// Event select (`IA32_PERFEVTSELx[7:0]`); for offcore events the first of the two codes.
    pub event_code: u32,
    /// Unit mask (`[15:8]`).
    pub umask: u32,
    /// Second unit mask (`[47:40]`), 0 when unused.
    pub umask_ext: u32,
    /// Counter mask (`[31:24]`).
    pub cmask: u32,
    /// Invert (`[23]`).
    pub inv: bool,
    /// Edge detect (`[18]`).
    pub edge: bool,
    /// Any thread (`[21]`).
    pub any_thread: bool,
    /// Counter-mask equality (Lion Cove's `Equal`).
    pub eq: bool,
    /// The extra MSR and its value (`0x3F6` load latency threshold, `0x3F7` frontend event
    /// selection, `0x1A6` offcore response), when the event needs one.
    pub msr: Option<(u32, u64)>,
    /// Count in the kernel only (`:SUP`).
    pub kernel_only: bool,
    /// Count in user space only (`:USER`).
    pub user_only: bool,
    /// Sum over SMT siblings (`:percore`).
    pub per_core: bool,
    /// Read inside the TopDown group (`:perf_metrics` on `TOPDOWN.SLOTS`).
    pub perf_metrics: bool,
    /// Intel's suggested sampling period.
    pub sample_after_value: Option<u64>,
}

impl RawEvent {
    /// The event as perf-style terms for the core PMU (`event=0xd0,umask=0x9`,
    /// `...,cmask=1,edge=1`, `...,offcore_rsp=0x3f3fc00002`). The extra MSR maps to `ldlat`
    /// (0x3F6), `frontend` (0x3F7) or `offcore_rsp` (0x1A6/0x1A7). `umask2` and `eq` are the
    /// names newer kernels give the second unit mask and the equal bit in `format/`
    /// (UNVERIFIED; resolution against sysfs decides). Privilege filters (`:SUP`, `:USER`)
    /// are not terms; they are the `k`/`u` modifiers.
    pub fn perf_terms(&self) -> Result<String, ResolveError> {
        let mut s = format!("event={:#x},umask={:#x}", self.event_code, self.umask);
        if self.umask_ext != 0 {
            s += &format!(",umask2={:#x}", self.umask_ext);
        }
        if self.cmask != 0 {
            s += &format!(",cmask={}", self.cmask);
        }
        if self.edge {
            s += ",edge=1";
        }
        if self.inv {
            s += ",inv=1";
        }
        if self.any_thread {
            s += ",any=1";
        }
        if self.eq {
            s += ",eq=1";
        }
        if let Some((msr, value)) = self.msr {
            let term = match msr {
                0x3F6 => format!("ldlat={value}"),
                0x3F7 => format!("frontend={value:#x}"),
                0x1A6 | 0x1A7 => format!("offcore_rsp={value:#x}"),
                _ => {
                    return Err(ResolveError::UnsupportedMsr {
                        event: self.name.clone(),
                        msr,
                    });
                }
            };
            s += ",";
            s += &term;
        }
        Ok(s)
    }
}

/// A metric's event that cannot be turned into an encoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// Not in the core event list.
    #[error("event {0} is not in the core event list")]
    Unknown(String),
    /// A modifier hrec does not understand.
    #[error("event {event}: unknown modifier ':{modifier}'")]
    UnknownModifier {
        /// The event.
        event: String,
        /// The modifier as written.
        modifier: String,
    },
    /// An uncore, RAPL or other event outside the core PMU.
    #[error("event {event} is not a core event ({why})")]
    NotCore {
        /// The event.
        event: String,
        /// What it is instead.
        why: &'static str,
    },
    /// No core event list was loaded.
    #[error("no core event list loaded to resolve {0}")]
    NoEventList(String),
    /// The event needs an MSR that has no perf term.
    #[error("event {event} needs MSR {msr:#x}, which has no perf term")]
    UnsupportedMsr {
        /// The event.
        event: String,
        /// The MSR index.
        msr: u32,
    },
    /// A retire latency is not counted and has no encoding.
    #[error("{0} is a retire latency, not a counter event")]
    RetireLatency(String),
}

// ---------------------------------------------------------------------------------------------
// <model>_retire_latency.json

/// The retire-latency statistics of one event, in core cycles.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RetireLatency {
    /// `MIN`.
    pub min: f64,
    /// `MAX` (65535 is the 16-bit field saturating).
    pub max: f64,
    /// `MEAN`: what TMA formulas use as `EVENT:retire_latency` by default.
    pub mean: f64,
    /// `COUNT` (hrec's files): the number of samples.
    pub count: Option<u64>,
    /// `MEDIAN` (hrec's files).
    pub median: Option<f64>,
    /// `P90` (hrec's files).
    pub p90: Option<f64>,
    /// `P99` (hrec's files).
    pub p99: Option<f64>,
    /// `HISTOGRAM` (hrec's files): power-of-two buckets.
    pub histogram: Option<Vec<HistogramBucket>>,
}

/// One `HISTOGRAM` bucket: `COUNT` samples with a latency at most `LE` (and above the previous
/// bucket's `LE`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct HistogramBucket {
    /// Upper bound (inclusive), cycles.
    #[serde(rename = "LE")]
    pub le: u64,
    /// Samples in the bucket.
    #[serde(rename = "COUNT")]
    pub count: u64,
}

#[derive(Debug, Deserialize)]
struct RawRetireLatency {
    #[serde(rename = "MIN")]
    min: f64,
    #[serde(rename = "MAX")]
    max: f64,
    #[serde(rename = "MEAN")]
    mean: f64,
    #[serde(rename = "COUNT", default)]
    count: Option<u64>,
    #[serde(rename = "MEDIAN", default)]
    median: Option<f64>,
    #[serde(rename = "P90", default)]
    p90: Option<f64>,
    #[serde(rename = "P99", default)]
    p99: Option<f64>,
    #[serde(rename = "HISTOGRAM", default)]
    histogram: Option<Vec<HistogramBucket>>,
}

#[derive(Debug, Deserialize)]
struct RawRetireLatencyFile {
    #[serde(rename = "Platform", default)]
    platform: BTreeMap<String, serde_json::Value>,
    #[serde(rename = "Data")]
    data: BTreeMap<String, RawRetireLatency>,
}

/// A retire-latency table: Intel's `<model>_retire_latency.json` or hrec's own
/// `--retire-latency-json` output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RetireLatencies {
    /// `Platform`: where the numbers were measured (`Model`, `Socket(s)`, `TMA version`, ...).
    pub platform: BTreeMap<String, String>,
    events: BTreeMap<String, RetireLatency>,
}

impl RetireLatencies {
    /// Reads a retire-latency file.
    pub fn load(path: &Path) -> Result<RetireLatencies, PerfmonError> {
        RetireLatencies::parse(&read_text(path)?, path)
    }

    /// Parses the text of a retire-latency file; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<RetireLatencies, PerfmonError> {
        let raw: RawRetireLatencyFile = parse_json(text, path)?;
        let platform = raw
            .platform
            .into_iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => (k, s),
                other => (k, other.to_string()),
            })
            .collect();
        let events = raw
            .data
            .into_iter()
            .map(|(k, r)| {
                (
                    k.to_ascii_uppercase(),
                    RetireLatency {
                        min: r.min,
                        max: r.max,
                        mean: r.mean,
                        count: r.count,
                        median: r.median,
                        p90: r.p90,
                        p99: r.p99,
                        histogram: r.histogram,
                    },
                )
            })
            .collect();
        Ok(RetireLatencies { platform, events })
    }

    /// The statistics of `event` (case-insensitive; modifiers after `:` are ignored, so
    /// `MEM_INST_RETIRED.LOCK_LOADS:retire_latency` finds `MEM_INST_RETIRED.LOCK_LOADS`).
    pub fn get(&self, event: &str) -> Option<&RetireLatency> {
        let base = event.split(':').next().unwrap_or(event);
        self.events.get(&base.to_ascii_uppercase())
    }

    /// Every event and its statistics, by upper-case name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &RetireLatency)> {
        self.events.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The number of events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether there are no events.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

// ---------------------------------------------------------------------------------------------
// The store

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
        let msr = ev
            .msr_index
            .first()
            .map(|&i| (i, event.ocr_msr_val.unwrap_or(ev.msr_value)));
        Ok(Encoding::Counter(RawEvent {
            name: ev.name.clone(),
            event_code: ev.event_codes[0],
            umask: event.umask.unwrap_or(ev.umasks[0]),
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
mod tests {
    use super::*;

    #[test]
    fn event_ref_modifiers() {
        let r = EventRef::parse("UOPS_RETIRED.MS:c1:e1");
        assert_eq!(
            (r.name.as_str(), r.cmask, r.edge),
            ("UOPS_RETIRED.MS", Some(1), true)
        );
        assert_eq!(r.to_string(), "UOPS_RETIRED.MS:c1:e1");

        let r = EventRef::parse("IDQ.MITE_UOPS:c8:i1:eq1");
        assert_eq!((r.cmask, r.inv, r.eq, r.edge), (Some(8), true, true, false));
        assert_eq!(r.to_string(), "IDQ.MITE_UOPS:c8:i1:eq1");

        let r = EventRef::parse("MEM_INST_RETIRED.LOCK_LOADS:retire_latency");
        assert!(r.retire_latency && !r.is_counted());
        assert_eq!(r.to_string(), "MEM_INST_RETIRED.LOCK_LOADS:retire_latency");
        assert!(EventRef::parse("X:R").retire_latency);

        let r = EventRef::parse("OCR.DEMAND_RFO.L3_MISS:ocr_msr_val=0x103b800002");
        assert_eq!(r.ocr_msr_val, Some(0x103b800002));
        assert_eq!(
            r.to_string(),
            "OCR.DEMAND_RFO.L3_MISS:ocr_msr_val=0x103b800002"
        );

        let r = EventRef::parse("FP_ARITH_OPS_RETIRED.VECTOR:u0x30");
        assert_eq!(r.umask, Some(0x30));
        assert_eq!(r.to_string(), "FP_ARITH_OPS_RETIRED.VECTOR:u0x30");

        for (text, check) in [
            (
                "CPU_CLK_UNHALTED.THREAD_P:SUP",
                EventRef::parse("x:SUP").kernel_only,
            ),
            (
                "BR_INST_RETIRED.FAR_BRANCH:USER",
                EventRef::parse("x:USER").user_only,
            ),
            (
                "TOPDOWN.SLOTS:percore",
                EventRef::parse("x:percore").per_core,
            ),
            (
                "UNC_CHA_CLOCKTICKS:one_unit",
                EventRef::parse("x:one_unit").one_unit,
            ),
            (
                "TOPDOWN.SLOTS:perf_metrics",
                EventRef::parse("x:perf_metrics").perf_metrics,
            ),
        ] {
            assert!(check);
            assert_eq!(EventRef::parse(text).to_string(), text);
        }

        let r = EventRef::parse("X:c1:bogus:cx");
        assert_eq!(r.unknown, vec!["bogus".to_string(), "cx".to_string()]);
        let r = EventRef {
            instance: Some(0),
            ..EventRef::parse("UNC_P_CLOCKTICKS")
        };
        assert_eq!(r.to_string(), "UNC_P_CLOCKTICKS[0]");
    }

    #[test]
    fn mapfile_patterns() {
        let m = |p: &str, s: &str| pattern_matches(p, s);
        assert!(m("GenuineIntel-6-AD", "GenuineIntel-6-AD"));
        assert!(m("GenuineIntel-6-AD", "GenuineIntel-6-AD-1"));
        assert!(m("GenuineIntel-6-AD", "genuineintel-6-ad-1"));
        assert!(!m("GenuineIntel-6-AD", "GenuineIntel-6-ADE"));
        assert!(!m("GenuineIntel-6-AD", "GenuineIntel-6-A"));
        assert!(!m("GenuineIntel-6-A", "GenuineIntel-6-AD-1"));
        assert!(m("GenuineIntel-6-55-[01234]", "GenuineIntel-6-55-4"));
        assert!(!m("GenuineIntel-6-55-[01234]", "GenuineIntel-6-55-7"));
        assert!(m("GenuineIntel-6-55-[56789ABCDEF]", "GenuineIntel-6-55-B"));
        assert!(m("GenuineIntel-6-55-[5-9A-F]", "GenuineIntel-6-55-c"));
        assert!(!m("GenuineIntel-6-55-[01234]", "GenuineIntel-6-55"));
        assert!(!m("GenuineIntel-6-55-[0", "GenuineIntel-6-55-0"));
    }

    #[test]
    fn cpuid_strings() {
        assert_eq!(
            cpuid_string("GenuineIntel", 6, 0xAD, 1),
            "GenuineIntel-6-AD-1"
        );
        let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n\
                       model\t\t: 151\nmodel name\t: 12th Gen Intel(R) Core(TM) i9-12900K\n\
                       stepping\t: 2\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\n";
        assert_eq!(
            cpuid_from_cpuinfo(cpuinfo).as_deref(),
            Some("GenuineIntel-6-97-2")
        );
        assert_eq!(cpuid_from_cpuinfo("processor : 0\n"), None);
    }

    #[test]
    fn raw_event_terms() {
        let e = RawEvent {
            name: "X".into(),
            event_code: 0x2a,
            umask: 1,
            cmask: 1,
            edge: true,
            msr: Some((0x1a6, 0x3f3fc00002)),
            ..RawEvent::default()
        };
        assert_eq!(
            e.perf_terms().unwrap(),
            "event=0x2a,umask=0x1,cmask=1,edge=1,offcore_rsp=0x3f3fc00002"
        );
        let e = RawEvent {
            msr: Some((0x3f6, 0x80)),
            ..e
        };
        assert!(e.perf_terms().unwrap().ends_with(",ldlat=128"));
        let e = RawEvent {
            msr: Some((0x123, 1)),
            ..e
        };
        assert_eq!(
            e.perf_terms().unwrap_err().to_string(),
            "event X needs MSR 0x123, which has no perf term"
        );
    }
}
