//! Evaluating a metric from counts, retire latencies and system constants (the rules are in
//! the [module docs](super)), and evaluating thresholds.

use std::collections::BTreeMap;

use super::expr::{EvalError, ExprError};
use super::perfmon::{EventRef, Metric, MetricConstant, Perfmon, Threshold};

/// System and run constants a formula may refer to. Leave a field `None` when it is unknown:
/// a formula that needs it then fails with an error naming it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Constants {
    /// `HYPERTHREADING_ON` (`smt_on`): SMT is enabled.
    pub smt_on: Option<bool>,
    /// `THREADS_PER_CORE` (`threads`).
    pub threads_per_core: Option<f64>,
    /// The measured interval in seconds: `DURATIONTIMEINSECONDS`, and
    /// `DURATIONTIMEINMILLISECONDS` times 1000.
    pub duration_seconds: Option<f64>,
    /// The TSC frequency in Hz: `SYSTEM_TSC_FREQ` outside the TMA metrics.
    pub tsc_frequency_hz: Option<f64>,
    /// TSC ticks during the measured interval (perf's `tsc`). When `None`,
    /// `tsc_frequency_hz * duration_seconds`; see [`Constants::tsc_ticks`].
    pub tsc: Option<f64>,
    /// `SOCKET_COUNT` (`socket_count`, `system.socket_count`).
    pub socket_count: Option<f64>,
    /// `CORES_PER_SOCKET`.
    pub cores_per_socket: Option<f64>,
    /// Logical CPUs per socket (`system.sockets[0].cpus.count`).
    pub cpus_per_socket: Option<f64>,
    /// `CHAS_PER_SOCKET`: caching/home agents per socket.
    pub chas_per_socket: Option<f64>,
    /// Anything else, by name; consulted first, so it can also override the fields above.
    pub extra: BTreeMap<String, f64>,
}

impl Constants {
    /// TSC ticks during the measured interval: [`Constants::tsc`], else frequency times
    /// duration.
    pub fn tsc_ticks(&self) -> Option<f64> {
        self.tsc
            .or_else(|| Some(self.tsc_frequency_hz? * self.duration_seconds?))
    }

    /// The value of a constant by any of the names Intel's files (or perf's) use for it,
    /// case-insensitively and ignoring a leading `#`. `SYSTEM_TSC_FREQ` is the frequency in
    /// Hz here; TMA metrics read it as TSC ticks (module docs).
    pub fn get(&self, name: &str) -> Option<f64> {
        self.lookup(name, false)
    }

    fn lookup(&self, name: &str, tma: bool) -> Option<f64> {
        if let Some(&v) = self.extra.get(name) {
            return Some(v);
        }
        if let Some((_, &v)) = self
            .extra
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
        {
            return Some(v);
        }
        let key = name.trim_start_matches('#').to_ascii_lowercase();
        match key.as_str() {
            "hyperthreading_on" | "smt_on" => self.smt_on.map(|b| if b { 1.0 } else { 0.0 }),
            "threads_per_core" | "threads" => self.threads_per_core,
            "durationtimeinseconds" => self.duration_seconds,
            "durationtimeinmilliseconds" => self.duration_seconds.map(|s| s * 1000.0),
            "system_tsc_freq" if tma => self.tsc_ticks(),
            "system_tsc_freq" => self.tsc_frequency_hz,
            "tsc" => self.tsc_ticks(),
            "socket_count" | "system.socket_count" | "num_packages" => self.socket_count,
            "cores_per_socket" => self.cores_per_socket,
            "chas_per_socket" => self.chas_per_socket,
            "system.sockets[0].cpus.count" | "cpus_per_socket" => self.cpus_per_socket,
            "num_cpus" => Some(self.cpus_per_socket? * self.socket_count?),
            _ => None,
        }
    }
}

/// A metric that cannot be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricError {
    /// Its formula (or threshold formula) did not parse when the file was read.
    #[error("metric {metric}: {source}")]
    Formula {
        /// `MetricName`.
        metric: String,
        /// The parse error.
        source: ExprError,
    },
    /// A value is missing.
    #[error("metric {metric}: {source}")]
    Eval {
        /// `MetricName`.
        metric: String,
        /// Which name has no value, and why.
        source: EvalError,
    },
}

impl Metric {
    /// Evaluates the formula (module docs: where each value comes from).
    ///
    /// * `counts(event)`: the count of a counted event over the interval, `None` if it was not
    ///   counted.
    /// * `retire_latency(name)`: the average retire latency in cycles of the event called
    ///   `name` (no modifiers), for `EVENT:retire_latency` terms.
    /// * `constants`: the system and run constants.
    ///
    /// Division by zero gives NaN (an undefined metric), not an error.
    pub fn evaluate(
        &self,
        counts: &dyn Fn(&EventRef) -> Option<f64>,
        retire_latency: &dyn Fn(&str) -> Option<f64>,
        constants: &Constants,
    ) -> Result<f64, MetricError> {
        let expr = self.formula().map_err(|e| MetricError::Formula {
            metric: self.name.clone(),
            source: e.clone(),
        })?;
        let tma = self.category == "TMA";
        let lookup = |name: &str, index: Option<u32>| -> Result<f64, EvalError> {
            let no_value = |reason: String| EvalError::NoValue {
                name: match index {
                    Some(i) => format!("{name}[{i}]"),
                    None => name.to_string(),
                },
                reason,
            };
            if let Some(e) = self.event(name) {
                let ev = &e.event;
                if ev.retire_latency {
                    if index.is_some() {
                        return Err(no_value(format!(
                            "{ev} is a retire latency, which has no instances"
                        )));
                    }
                    return retire_latency(&ev.name)
                        .ok_or_else(|| no_value(format!("no retire latency for {}", ev.name)));
                }
                let key;
                let key_ref = if index.is_some() {
                    key = EventRef {
                        instance: index,
                        ..ev.clone()
                    };
                    &key
                } else {
                    ev
                };
                if let Some(v) = counts(key_ref) {
                    return Ok(v);
                }
                if index.is_none()
                    && ev.name.eq_ignore_ascii_case("TSC")
                    && let Some(t) = constants.tsc_ticks()
                {
                    return Ok(t);
                }
                return Err(no_value(format!("event {key_ref} was not counted")));
            }
            if index.is_some() {
                return Err(no_value("only events have instances".to_string()));
            }
            if let Some(c) = self.constants.iter().find(|c| c.alias == name) {
                return constant_value(c, constants, tma).map_err(no_value);
            }
            constants
                .lookup(name, tma)
                .ok_or_else(|| EvalError::UnknownName(name.to_string()))
        };
        expr.eval_with(&lookup).map_err(|source| MetricError::Eval {
            metric: self.name.clone(),
            source,
        })
    }
}

/// A `Constants` entry's value: its `Name` evaluated against `constants`; the error is the
/// reason to report.
fn constant_value(c: &MetricConstant, constants: &Constants, tma: bool) -> Result<f64, String> {
    let expr = c
        .value()
        .map_err(|e| format!("constant {:?} does not parse: {e}", c.name))?;
    expr.eval_with(&|n, i| {
        let full = match i {
            Some(i) => format!("{n}[{i}]"),
            None => n.to_string(),
        };
        constants
            .lookup(&full, tma)
            .ok_or(EvalError::UnknownName(full))
    })
    .map_err(|e| match e {
        EvalError::UnknownName(n) if n == c.name => format!("constant {n} was not provided"),
        EvalError::UnknownName(n) => format!("constant {n} (in {}) was not provided", c.name),
        other => other.to_string(),
    })
}

impl Threshold {
    /// Whether the threshold holds, given the values of the metrics its aliases stand for,
    /// looked up by `LegacyName`. A NaN result (an undefined metric used as a condition)
    /// counts as "does not hold".
    pub fn holds(
        &self,
        value_by_legacy_name: &dyn Fn(&str) -> Option<f64>,
    ) -> Result<bool, EvalError> {
        let expr = self.formula().map_err(|e| EvalError::NoValue {
            name: "threshold".to_string(),
            reason: e.to_string(),
        })?;
        let v = expr.eval_with(&|alias, _| {
            let m = self
                .metrics
                .iter()
                .find(|m| m.alias == alias)
                .ok_or_else(|| EvalError::UnknownName(alias.to_string()))?;
            value_by_legacy_name(&m.legacy_name).ok_or_else(|| EvalError::NoValue {
                name: alias.to_string(),
                reason: format!("no value for metric {}", m.legacy_name),
            })
        })?;
        Ok(!v.is_nan() && v != 0.0)
    }
}

impl Perfmon {
    /// Whether `metric`'s threshold holds, with `value(m)` giving each metric's value (as
    /// [`Metric::evaluate`] computed it). `Ok(None)` when the metric has no threshold.
    pub fn threshold_holds(
        &self,
        metric: &Metric,
        value: &dyn Fn(&Metric) -> Option<f64>,
    ) -> Result<Option<bool>, MetricError> {
        let Some(t) = &metric.threshold else {
            return Ok(None);
        };
        if let Err(e) = t.formula() {
            return Err(MetricError::Formula {
                metric: metric.name.clone(),
                source: e.clone(),
            });
        }
        t.holds(&|legacy| value(self.metric_by_legacy_name(legacy)?))
            .map(Some)
            .map_err(|source| MetricError::Eval {
                metric: metric.name.clone(),
                source,
            })
    }
}

/// One evaluated metric, as `stat -M` prints it: from Intel's formulas
/// ([`crate::stat::tma`]) or from hrec's E-core table ([`crate::stat::ecore_tma`]).
#[derive(Debug, Clone)]
pub struct MetricValue {
    /// Its name as perf shows it (`tma_dtlb_load`).
    pub name: String,
    /// Unit (`%`, ...).
    pub unit: String,
    /// The value, or why there is none.
    pub value: Result<f64, String>,
}
