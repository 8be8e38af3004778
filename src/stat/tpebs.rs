//! Where each retire latency of `hrec stat` comes from (Timed PEBS, perf's `--record-tpebs`).
//!
//! Intel's TMA formulas for Granite Rapids and later multiply an event's count by its retire
//! latency: the term `EVENT:retire_latency` in Intel's metric files (`EVENT:R` in perf's
//! converted ones), an average in core cycles (see [`crate::metrics`]). `hrec stat` takes each
//! such latency from the first of these sources that has it:
//!
//! 1. **Measured in this run** (`--record-tpebs`): precise samples of the event with
//!    `WEIGHT_STRUCT` taken during the same run, fed one at a time to a [`Collector`]. The
//!    statistic is the one `--tpebs-mode` names ([`TpebsMode`]: `mean`, `min`, `max`, or
//!    `last`, the latency of the last sample in time order).
//! 2. **`--tpebs-from FILE`** ([`from_file`]): an `hrec record -W` recording or a
//!    `perf record -W` perf.data (recognised by their `HRECDATA` / `PERFILE2` magic and read
//!    through [`crate::recording::Recording`]; the same statistics are computed from its
//!    samples, events named as Intel names them, [`intel_event_name`]), or a JSON file in the schema of Intel's
//!    `<model>_retire_latency.json` or hrec's extended one (`hrec report
//!    --retire-latency-json`). From JSON, `mean`, `min` and `max` take `MEAN`, `MIN` and
//!    `MAX`; `last` needs samples, which JSON does not keep, so it takes `MEAN` and the
//!    [`Resolved::note`] says so.
//! 3. **Intel's defaults**: the model's `<model>_retire_latency.json`, always its `MEAN`
//!    (whatever `--tpebs-mode` says, and the note says so when the mode is not `mean`: the
//!    defaults are published for TMA's formulas, which are written for the mean).
//! 4. **Missing**: no source has the event, so a metric that needs it cannot be computed;
//!    [`resolve`] lists such events so that the error names them.
//!
//! A measured value beats a file, which beats Intel's default: the closer the numbers are to
//! the run being measured, the better. Each [`Resolved`] latency carries its [`Origin`], which
//! `hrec stat` prints (one line per latency, [`Resolved`]'s `Display`) and writes to `--json`,
//! so a reader always knows which numbers a metric was computed from.
//!
//! # Zero-only latencies count as none
//!
//! The retire latency sits in bits 63:48 of a sample's `WEIGHT_STRUCT` weight. On CPUs without
//! Timed PEBS, and for samples that are not precise, the kernel writes 0 there: an event whose
//! samples *all* read 0 has no latency at all, not a latency of zero cycles, and taking it as
//! 0 would silently zero every metric term that uses it. So such an event counts as having no
//! samples, and the next source is used. Once an event has any non-zero latency, all its
//! samples count, zeros included (0 is a real latency on Timed PEBS CPUs: Intel's own tables
//! list `MIN: 0`). This is the rule of [`crate::analysis::latency`]. A recording applies it per
//! recorded event before merging events of the same Intel name, so a `cpu_atom` event without
//! latencies does not dilute its `cpu_core` twin.
//!
//! # Differences from perf
//!
//! * perf rounds the mean to an integer (`rint`); hrec keeps the fraction.
//! * perf's `min` starts from a zeroed accumulator and may stay 0; hrec's is the smallest
//!   latency seen.
//! * perf falls back to the defaults' `MIN`/`MAX` in those modes; hrec uses their `MEAN`
//!   (source 3 above) and says so.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Serialize, Serializer};

use crate::data;
use crate::decode::Record;
use crate::event::attr::sample as st;
use crate::metrics::perfmon::{PerfmonError, RetireLatencies};
use crate::output::report::intel_event_name;
use crate::recording::{Recording, RecordingError};

/// Which statistic of the measured latencies a formula gets (`--tpebs-mode`, perf's modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TpebsMode {
    /// The arithmetic mean (the default).
    #[default]
    Mean,
    /// The smallest latency.
    Min,
    /// The largest latency.
    Max,
    /// The latency of the last sample in time order.
    Last,
}

impl TpebsMode {
    /// Every mode, in perf's order.
    pub const ALL: [TpebsMode; 4] = [
        TpebsMode::Mean,
        TpebsMode::Min,
        TpebsMode::Max,
        TpebsMode::Last,
    ];

    /// The lower-case name (`mean`).
    pub fn name(self) -> &'static str {
        match self {
            TpebsMode::Mean => "mean",
            TpebsMode::Min => "min",
            TpebsMode::Max => "max",
            TpebsMode::Last => "last",
        }
    }

    /// The field of a retire-latency JSON file that stands for this mode (`MEAN`, `MIN`,
    /// `MAX`); `None` for `last`, which the files do not keep.
    pub fn json_field(self) -> Option<&'static str> {
        match self {
            TpebsMode::Mean => Some("MEAN"),
            TpebsMode::Min => Some("MIN"),
            TpebsMode::Max => Some("MAX"),
            TpebsMode::Last => None,
        }
    }
}

impl fmt::Display for TpebsMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--tpebs-mode` value that is not one of the modes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown --tpebs-mode {0:?}: expected mean, min, max or last")]
pub struct ParseTpebsModeError(pub String);

impl FromStr for TpebsMode {
    type Err = ParseTpebsModeError;

    /// Parses a mode name, case-insensitively like perf (`MEAN`, `Last`).
    fn from_str(s: &str) -> Result<TpebsMode, ParseTpebsModeError> {
        TpebsMode::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ParseTpebsModeError(s.to_string()))
    }
}

// ---------------------------------------------------------------------------------------------
// Collector

/// Statistics of one event's retire latencies, in core cycles.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Measured {
    /// Samples, zeros included (the event has at least one non-zero latency).
    pub count: u64,
    /// The smallest latency.
    pub min: u16,
    /// The largest latency (65535 is the 16-bit field saturating).
    pub max: u16,
    /// The arithmetic mean, unrounded.
    pub mean: f64,
    /// The latency of the last sample in time order.
    pub last: u16,
}

impl Measured {
    /// The statistic `mode` names.
    pub fn value(&self, mode: TpebsMode) -> f64 {
        match mode {
            TpebsMode::Mean => self.mean,
            TpebsMode::Min => f64::from(self.min),
            TpebsMode::Max => f64::from(self.max),
            TpebsMode::Last => f64::from(self.last),
        }
    }
}

/// Running statistics of one event: constant memory, however many samples arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Acc {
    count: u64,
    sum: u64,
    min: u16,
    max: u16,
    last_time: u64,
    last: u16,
}

impl Acc {
    fn new(time: u64, lat: u16) -> Acc {
        Acc {
            count: 1,
            sum: u64::from(lat),
            min: lat,
            max: lat,
            last_time: time,
            last: lat,
        }
    }

    fn add(&mut self, time: u64, lat: u16) {
        self.merge(&Acc::new(time, lat));
    }

    /// Adds `other`'s samples; on equal times the later-added one is the last.
    fn merge(&mut self, other: &Acc) {
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        if other.last_time >= self.last_time {
            self.last_time = other.last_time;
            self.last = other.last;
        }
    }

    /// The statistics, or `None` when every latency is zero (module docs).
    fn measured(&self) -> Option<Measured> {
        (self.max != 0).then(|| Measured {
            count: self.count,
            min: self.min,
            max: self.max,
            mean: self.sum as f64 / self.count as f64,
            last: self.last,
        })
    }
}

/// Retire latencies per event, fed one sample at a time: what the live `--record-tpebs`
/// sampler fills from decoded ring-buffer samples, and what [`from_recording`] fills from a
/// file.
///
/// Events are keyed by their Intel name ([`intel_event_name`]: no PMU, no modifiers, upper
/// case), so `cpu_core/MEM_INST_RETIRED.STLB_HIT_LOADS/p`, `mem_inst_retired.stlb_hit_loads:p`
/// and `MEM_INST_RETIRED.STLB_HIT_LOADS:retire_latency` are one event.
///
/// `last` is the latency of the sample with the largest time, not the last one added (ring
/// buffers of different CPUs are drained in any order); among samples with equal times (or
/// without a time, passed as 0) the one added last wins. Nothing is sorted or stored: each
/// event keeps a count, a sum, a minimum, a maximum and the latest sample.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Collector {
    events: BTreeMap<String, Acc>,
}

impl Collector {
    /// An empty collector.
    pub fn new() -> Collector {
        Collector::default()
    }

    /// Adds one sample of `event` taken at `time` (the sample's TIME, ns) with retire latency
    /// `retire_lat` (cycles, bits 63:48 of its `WEIGHT_STRUCT` weight).
    pub fn add(&mut self, event: &str, time: u64, retire_lat: u16) {
        self.merge_acc(intel_event_name(event), &Acc::new(time, retire_lat));
    }

    /// The statistics of `event` (any spelling [`Collector`] accepts), or `None` when it has
    /// no samples or only zero latencies (module docs).
    pub fn stats(&self, event: &str) -> Option<Measured> {
        self.events.get(&intel_event_name(event))?.measured()
    }

    /// Every sample of `event` that was added, zero latencies included: tells "no samples"
    /// from "only zeros" when [`Collector::stats`] is `None`.
    pub fn samples(&self, event: &str) -> u64 {
        self.events
            .get(&intel_event_name(event))
            .map_or(0, |a| a.count)
    }

    /// The events that have latencies, by Intel name, with their statistics.
    pub fn events(&self) -> impl Iterator<Item = (&str, Measured)> {
        self.events
            .iter()
            .filter_map(|(k, a)| Some((k.as_str(), a.measured()?)))
    }

    /// Whether no event has latencies.
    pub fn is_empty(&self) -> bool {
        self.events().next().is_none()
    }

    fn merge_acc(&mut self, name: String, acc: &Acc) {
        self.events
            .entry(name)
            .and_modify(|a| a.merge(acc))
            .or_insert(*acc);
    }
}

// ---------------------------------------------------------------------------------------------
// --tpebs-from files

/// A `--tpebs-from` file that cannot be used. Each message is one line naming the file.
#[derive(Debug, thiserror::Error)]
pub enum TpebsError {
    /// The file cannot be opened or read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file starts with `HRECDATA` but cannot be read as a recording (the message names
    /// the file).
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// The file is neither a recording nor a retire-latency JSON file.
    #[error(
        "{} is neither an hrec recording nor a retire-latency JSON file: {message}",
        path.display()
    )]
    NotLatencies {
        /// The file.
        path: PathBuf,
        /// What the JSON reader found wrong.
        message: String,
    },
    /// A recording none of whose events has `WEIGHT_STRUCT`.
    #[error(
        "{}: no event was recorded with WEIGHT_STRUCT, so it holds no retire latencies (record with `hrec record -W` and a precise event)",
        path.display()
    )]
    NoWeightStruct {
        /// The file.
        path: PathBuf,
    },
    /// A recording whose `WEIGHT_STRUCT` samples are all zero, or that has none.
    #[error(
        "{}: none of its {samples} samples with WEIGHT_STRUCT has a non-zero retire latency (no samples, or recorded on a CPU without Timed PEBS)",
        path.display()
    )]
    NoLatencies {
        /// The file.
        path: PathBuf,
        /// The samples with `WEIGHT_STRUCT` it has.
        samples: u64,
    },
    /// A JSON file whose `Data` is empty.
    #[error("{}: its Data lists no events", path.display())]
    EmptyJson {
        /// The file.
        path: PathBuf,
    },
}

/// What a `--tpebs-from` file holds.
#[derive(Debug, Clone)]
pub enum Latencies {
    /// Statistics computed from an hrec recording's samples.
    Recording(Collector),
    /// A retire-latency JSON file (Intel's schema or hrec's extended one).
    Json(RetireLatencies),
}

/// A `--tpebs-from` file, read.
#[derive(Debug, Clone)]
pub struct LatencyFile {
    /// The file, as given.
    pub path: PathBuf,
    /// Its latencies.
    pub latencies: Latencies,
    /// Problems that did not stop the reading (a corrupt block skipped, records that did not
    /// decode): worth a warning, since the statistics lack those samples.
    pub warnings: Vec<String>,
}

/// Reads a `--tpebs-from` file: an hrec recording when it starts with hrec's magic
/// (`HRECDATA`), otherwise a retire-latency JSON file.
pub fn from_file(path: &Path) -> Result<LatencyFile, TpebsError> {
    let io = |source| TpebsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut magic = Vec::with_capacity(data::MAGIC.len());
    std::fs::File::open(path)
        .and_then(|f| f.take(data::MAGIC.len() as u64).read_to_end(&mut magic))
        .map_err(io)?;
    if magic == data::MAGIC || crate::recording::perfdata::is_perf_data(&magic) {
        let (collector, warnings) = read_recording(path)?;
        return Ok(LatencyFile {
            path: path.to_path_buf(),
            latencies: Latencies::Recording(collector),
            warnings,
        });
    }
    let bytes = std::fs::read(path).map_err(io)?;
    let not_latencies = |message: String| TpebsError::NotLatencies {
        path: path.to_path_buf(),
        message,
    };
    let text =
        String::from_utf8(bytes).map_err(|e| not_latencies(format!("not UTF-8 text ({e})")))?;
    let table = RetireLatencies::parse(&text, path).map_err(|e| {
        not_latencies(match e {
            PerfmonError::Malformed { message, .. } => message,
            other => other.to_string(),
        })
    })?;
    if table.is_empty() {
        return Err(TpebsError::EmptyJson {
            path: path.to_path_buf(),
        });
    }
    Ok(LatencyFile {
        path: path.to_path_buf(),
        latencies: Latencies::Json(table),
        warnings: Vec::new(),
    })
}

/// The retire latencies of an `hrec record -W` recording, per event by Intel name: every
/// sample of an event recorded with `WEIGHT_STRUCT`, by its TIME. The zero-only rule (module
/// docs) is applied per recorded event before events of the same Intel name are merged. A
/// truncated recording gives the samples it has; [`from_file`] also returns the problems met.
pub fn from_recording(path: &Path) -> Result<Collector, TpebsError> {
    read_recording(path).map(|(c, _)| c)
}

fn read_recording(path: &Path) -> Result<(Collector, Vec<String>), TpebsError> {
    let rec = Recording::open(path)?;
    let events = &rec.meta().events;
    if !events
        .iter()
        .any(|e| e.attr.sample_type & st::WEIGHT_STRUCT != 0)
    {
        return Err(TpebsError::NoWeightStruct {
            path: path.to_path_buf(),
        });
    }
    let mut per_event: Vec<Option<Acc>> = vec![None; events.len()];
    let mut samples = 0u64;
    let mut bad = 0u64;
    let mut first_bad = None;
    rec.for_each(|r| {
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                bad += 1;
                first_bad.get_or_insert_with(|| e.to_string());
                return;
            }
        };
        let Record::Sample(s) = &r else { return };
        // Only samples of events with WEIGHT_STRUCT have a retire latency.
        let Some(w) = s.weight_struct() else { return };
        let Some(slot) = rec.event_of_record(&r).and_then(|i| per_event.get_mut(i)) else {
            return;
        };
        samples += 1;
        let time = s.time.unwrap_or(0);
        match slot {
            Some(acc) => acc.add(time, w.retire_lat),
            None => *slot = Some(Acc::new(time, w.retire_lat)),
        }
    });
    let mut collector = Collector::new();
    for (e, acc) in events.iter().zip(&per_event) {
        if let Some(acc) = acc.filter(|a| a.max != 0) {
            collector.merge_acc(intel_event_name(&e.name), &acc);
        }
    }
    if collector.is_empty() {
        return Err(TpebsError::NoLatencies {
            path: path.to_path_buf(),
            samples,
        });
    }
    let mut warnings: Vec<String> = Vec::new();
    if let Some(why) = rec.truncated() {
        warnings.push(format!(
            "{}: {why}; its retire latencies are those of the samples before the cut",
            path.display()
        ));
    }
    warnings.extend(rec.errors());
    if let Some(first) = first_bad {
        warnings.push(format!(
            "{}: {bad} records did not decode and were skipped (first: {first})",
            path.display()
        ));
    }
    Ok((collector, warnings))
}

// ---------------------------------------------------------------------------------------------
// Resolution

fn lossy_path<S: Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

/// Where a retire latency came from (module docs: the order of preference).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// Samples of this run (`--record-tpebs`).
    Measured {
        /// Samples the statistic was computed from.
        samples: u64,
    },
    /// Samples of an hrec recording (`--tpebs-from FILE.hrec`).
    Recording {
        /// The file, as given.
        #[serde(serialize_with = "lossy_path")]
        path: PathBuf,
        /// Samples the statistic was computed from.
        samples: u64,
    },
    /// A retire-latency JSON file (`--tpebs-from FILE.json`).
    Json {
        /// The file, as given.
        #[serde(serialize_with = "lossy_path")]
        path: PathBuf,
        /// Its `COUNT` for the event (hrec's files have it; Intel's do not).
        samples: Option<u64>,
    },
    /// Intel's published `<model>_retire_latency.json` for this CPU.
    IntelDefault {
        /// The file.
        #[serde(serialize_with = "lossy_path")]
        path: PathBuf,
    },
}

/// One retire latency `hrec stat` uses, and where it came from.
///
/// Its `Display` is the line `hrec stat` prints, e.g.
/// `MEM_INST_RETIRED.STLB_HIT_LOADS:retire_latency = 12.50 cycles (mean of 40 samples
/// measured in this run)` or `... = 63.76 cycles (MEAN from graniterapids_retire_latency.json,
/// Intel's default)`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resolved {
    /// The event, by Intel name (`MEM_INST_RETIRED.STLB_HIT_LOADS`).
    pub event: String,
    /// The latency in core cycles.
    pub value: f64,
    /// The statistic the value is: the `--tpebs-mode`, except where the source lacks it
    /// (`mean` for `last` from JSON, and always for Intel's defaults).
    pub statistic: TpebsMode,
    /// Where it came from.
    pub origin: Origin,
    /// Why a preferred source was not used, or why the statistic differs from the mode.
    pub note: Option<String>,
}

fn samples_text(n: u64) -> String {
    if n == 1 {
        "1 sample".to_string()
    } else {
        format!("{n} samples")
    }
}

fn json_name(statistic: TpebsMode) -> &'static str {
    statistic.json_field().unwrap_or("MEAN")
}

impl fmt::Display for Resolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:retire_latency = {:.2} cycles (",
            self.event, self.value
        )?;
        let stat = self.statistic;
        match &self.origin {
            Origin::Measured { samples } => write!(
                f,
                "{stat} of {} measured in this run",
                samples_text(*samples)
            )?,
            Origin::Recording { path, samples } => write!(
                f,
                "{stat} of {} in {}",
                samples_text(*samples),
                path.display()
            )?,
            Origin::Json {
                path,
                samples: Some(n),
            } => write!(
                f,
                "{} of {} from {}",
                json_name(stat),
                samples_text(*n),
                path.display()
            )?,
            Origin::Json {
                path,
                samples: None,
            } => write!(f, "{} from {}", json_name(stat), path.display())?,
            Origin::IntelDefault { path } => {
                let name = path
                    .file_name()
                    .map_or_else(|| path.to_string_lossy(), |n| n.to_string_lossy());
                write!(f, "{} from {name}, Intel's default", json_name(stat))?
            }
        }
        if let Some(note) = &self.note {
            write!(f, "; {note}")?;
        }
        f.write_str(")")
    }
}

/// Resolves the retire latency of each of `events` (Intel names, or any spelling
/// [`intel_event_name`] reduces to one, such as `EVENT:retire_latency`; duplicates are
/// resolved once) from, in order: `measured` samples of this run, the `from` file, and
/// Intel's `defaults` (the file's path, for messages, and its table).
///
/// Returns the resolved latencies in the order of `events`, and the events no source has
/// (a metric that needs one of them cannot be computed).
pub fn resolve(
    events: &[String],
    mode: TpebsMode,
    measured: Option<&Collector>,
    from: Option<&LatencyFile>,
    defaults: Option<(&Path, &RetireLatencies)>,
) -> (Vec<Resolved>, Vec<String>) {
    let mut resolved = Vec::new();
    let mut missing = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for event in events {
        let name = intel_event_name(event);
        if seen.contains(&name) {
            continue;
        }
        seen.push(name.clone());
        match resolve_one(&name, mode, measured, from, defaults) {
            Some(r) => resolved.push(r),
            None => missing.push(name),
        }
    }
    (resolved, missing)
}

fn resolve_one(
    name: &str,
    mode: TpebsMode,
    measured: Option<&Collector>,
    from: Option<&LatencyFile>,
    defaults: Option<(&Path, &RetireLatencies)>,
) -> Option<Resolved> {
    let mut notes: Vec<String> = Vec::new();
    let done = |value: f64, statistic, origin, mut notes: Vec<String>, extra: Option<String>| {
        notes.extend(extra);
        Some(Resolved {
            event: name.to_string(),
            value,
            statistic,
            origin,
            note: (!notes.is_empty()).then(|| notes.join("; ")),
        })
    };

    if let Some(c) = measured {
        if let Some(m) = c.stats(name) {
            let origin = Origin::Measured { samples: m.count };
            return done(m.value(mode), mode, origin, notes, None);
        }
        notes.push(match c.samples(name) {
            0 => "no samples in this run".to_string(),
            1 => "its 1 sample in this run has retire latency 0".to_string(),
            n => format!("its {n} samples in this run all have retire latency 0"),
        });
    }

    if let Some(file) = from {
        let path = file.path.clone();
        match &file.latencies {
            Latencies::Recording(c) => {
                if let Some(m) = c.stats(name) {
                    let origin = Origin::Recording {
                        path,
                        samples: m.count,
                    };
                    return done(m.value(mode), mode, origin, notes, None);
                }
            }
            Latencies::Json(table) => {
                if let Some(r) = table.get(name) {
                    let (value, statistic, extra) = match mode {
                        TpebsMode::Mean => (r.mean, TpebsMode::Mean, None),
                        TpebsMode::Min => (r.min, TpebsMode::Min, None),
                        TpebsMode::Max => (r.max, TpebsMode::Max, None),
                        TpebsMode::Last => (
                            r.mean,
                            TpebsMode::Mean,
                            Some(format!(
                                "--tpebs-mode last needs samples, and {} has only MIN, MAX and MEAN",
                                path.display()
                            )),
                        ),
                    };
                    let origin = Origin::Json {
                        path,
                        samples: r.count,
                    };
                    return done(value, statistic, origin, notes, extra);
                }
            }
        }
        notes.push(format!("not in {}", file.path.display()));
    }

    if let Some((path, table)) = defaults
        && let Some(r) = table.get(name)
    {
        let extra = (mode != TpebsMode::Mean)
            .then(|| format!("Intel's defaults are used as MEAN, not {}", mode.name()));
        let origin = Origin::IntelDefault {
            path: path.to_path_buf(),
        };
        return done(r.mean, TpebsMode::Mean, origin, notes, extra);
    }
    None
}

/// The value of `event` (any spelling [`intel_event_name`] reduces to its Intel name) among
/// `resolved`: the lookup to hand [`crate::metrics::Metric::evaluate`] as its
/// `retire_latency` source.
pub fn latency_of(resolved: &[Resolved], event: &str) -> Option<f64> {
    let name = intel_event_name(event);
    resolved.iter().find(|r| r.event == name).map(|r| r.value)
}

#[cfg(test)]
mod tests;
