//! `mapfile.csv`: which of Intel's files belong to a CPU. A row's `Family-model` pattern
//! matches the cpuid string `GenuineIntel-<family>-<MODEL>[-<STEPPING>]` case-insensitively,
//! as a prefix that ends at the end of the string or at a `-`, with `[...]` character classes
//! (`GenuineIntel-6-55-[01234]`). On hybrid parts the P-core's files (role `Core`) are
//! selected.

use std::path::{Path, PathBuf};

use super::file::{PerfmonError, malformed, read_text};

/// The CPU identification string perf uses on x86 to pick event files:
/// `GenuineIntel-<family>-<MODEL>-<STEPPING>` (family in decimal, model and stepping in
/// upper-case hex), e.g. `GenuineIntel-6-AD-1`.
pub fn cpuid_string(vendor: &str, family: u32, model: u32, stepping: u32) -> String {
    format!("{vendor}-{family}-{model:X}-{stepping:X}")
}

/// The [`cpuid_string`] of the first processor in the text of `/proc/cpuinfo`, or `None`
/// when a field is missing (not x86).
pub fn cpuid_from_cpuinfo(cpuinfo: &str) -> Option<String> {
    crate::pmu::uarch::CpuId::from_cpuinfo(cpuinfo).map(|c| c.to_string())
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

pub(super) fn pattern_matches(pattern: &str, cpuid: &str) -> bool {
    let p = pattern.as_bytes();
    let s = cpuid.as_bytes();
    let (mut i, mut j) = (0, 0);
    while let Some(&pc) = p.get(i) {
        let Some(&c) = s.get(j) else {
            return false;
        };
        if pc == b'[' {
            let rest = p.get(i + 1..).unwrap_or_default();
            let Some(len) = rest.iter().position(|&x| x == b']') else {
                return false;
            };
            if !class_contains(rest.get(..len).unwrap_or_default(), c) {
                return false;
            }
            i += len + 2;
        } else {
            if !pc.eq_ignore_ascii_case(&c) {
                return false;
            }
            i += 1;
        }
        j += 1;
    }
    matches!(s.get(j), None | Some(b'-'))
}

/// `class` is the inside of `[...]`: single characters and `a-z` ranges.
fn class_contains(class: &[u8], c: u8) -> bool {
    let c = c.to_ascii_uppercase();
    let mut k = 0;
    while let Some(lo) = class.get(k) {
        let lo = lo.to_ascii_uppercase();
        if let (Some(b'-'), Some(hi)) = (class.get(k + 1), class.get(k + 2)) {
            let hi = hi.to_ascii_uppercase();
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
            let pattern = cols.first().copied().unwrap_or_default();
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
