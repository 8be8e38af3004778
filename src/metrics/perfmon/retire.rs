//! `<model>_retire_latency.json` and hrec's own `--retire-latency-json` output: per event, the
//! `MIN`, `MAX` and `MEAN` retire latency in core cycles (`MEAN` is what a TMA formula's
//! `EVENT:retire_latency` takes by default), plus `COUNT`, `MEDIAN`, `P90`, `P99` and
//! `HISTOGRAM` where present. Events are looked up case-insensitively, modifiers ignored.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::file::{PerfmonError, parse_json, read_text};

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
