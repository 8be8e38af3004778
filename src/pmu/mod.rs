//! PMU discovery from a sysfs snapshot.
//!
//! Every PMU the kernel registers appears as `<root>/bus/event_source/devices/<name>/` with:
//!
//! * `type`: the decimal number to put in `perf_event_attr.type`;
//! * `cpus` (hybrid core PMUs only: the CPUs of that core type) or `cpumask` (uncore-style PMUs:
//!   the CPUs to open on, one per package or die); the non-hybrid `cpu` PMU has neither and covers
//!   every online CPU;
//! * `format/<field>`: where each term's bits go, e.g. `event` -> `config:0-7`; ranges may be split
//!   (`config:0-7,32-35` on AMD), the low bits of the value fill the first range first;
//! * `events/<alias>`: named encodings as term lists (`event=0x00,umask=0x4` for `slots`), with
//!   optional `<alias>.scale` / `<alias>.unit`, and `?` for terms the user must supply;
//! * `caps/<name>`: `pmu_name`, `max_precise`, `branches`, ...
//!
//! A core PMU is `cpu` or one with a `cpus` file (perf's rule; it covers x86 `cpu_core` /
//! `cpu_atom` and ARM `armv8_*`). More than one core PMU means a hybrid part, where legacy events
//! must name their PMU in `config[63:32]` or they count on `cpu_core` only.
//!
//! TopDown (perf metrics) exists where a core PMU has `events/slots` and metric aliases with
//! `event=0x00` and `umask` 0x80-0x83 (level 1) and 0x84-0x87 (level 2). `cpu_atom`'s `topdown-*`
//! aliases are ordinary counter events (non-zero event codes), so it has no TopDown in this sense.
//!
//! Reading is a pure function of the tree: nothing here opens a perf event. A malformed file is an
//! error that names the file.

#[cfg_attr(
    not(test),
    deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)
)]
mod cpulist;
pub mod uarch;
pub mod vendor;

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use cpulist::{
    CpuList, CpuListError, CpuTopology, cpu_topology, numa_memory, numa_nodes, threads_per_core,
};

/// The perf_event_attr word a format field writes into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigWord {
    /// `attr.config`
    Config,
    /// `attr.config1`
    Config1,
    /// `attr.config2`
    Config2,
    /// `attr.config3`
    Config3,
}

impl ConfigWord {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "config" => ConfigWord::Config,
            "config1" => ConfigWord::Config1,
            "config2" => ConfigWord::Config2,
            "config3" => ConfigWord::Config3,
            _ => return None,
        })
    }

    /// The name as sysfs and perf write it.
    pub fn name(self) -> &'static str {
        match self {
            ConfigWord::Config => "config",
            ConfigWord::Config1 => "config1",
            ConfigWord::Config2 => "config2",
            ConfigWord::Config3 => "config3",
        }
    }
}

/// One `format/<field>` file: a destination word and its bit ranges (inclusive, low first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FormatField {
    /// Which attr word the value goes to.
    pub word: ConfigWord,
    /// Inclusive `(low, high)` bit ranges; the value's low bits fill the first range.
    pub ranges: Vec<(u8, u8)>,
}

impl FormatField {
    /// Parses `config:0-7,32-35`, `config1:0-63` or `config:21`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (word, ranges) = text
            .split_once(':')
            .ok_or_else(|| format!("expected `configN:bits`, found {text:?}"))?;
        let word =
            ConfigWord::parse(word).ok_or_else(|| format!("unknown config word {word:?}"))?;
        let mut out = Vec::new();
        for r in ranges.split(',') {
            let (lo, hi) = match r.split_once('-') {
                Some((a, b)) => (a, b),
                None => (r, r),
            };
            let lo: u8 = lo
                .trim()
                .parse()
                .map_err(|_| format!("bad bit number in {text:?}"))?;
            let hi: u8 = hi
                .trim()
                .parse()
                .map_err(|_| format!("bad bit number in {text:?}"))?;
            if lo > hi || hi > 63 {
                return Err(format!(
                    "bit range {lo}-{hi} out of order or above 63 in {text:?}"
                ));
            }
            out.push((lo, hi));
        }
        Ok(FormatField { word, ranges: out })
    }

    /// Total number of value bits the field holds.
    pub fn width(&self) -> u32 {
        self.ranges
            .iter()
            .map(|(lo, hi)| u32::from(hi - lo) + 1)
            .sum()
    }

    /// Largest value that fits.
    pub fn max_value(&self) -> u64 {
        let w = self.width();
        if w >= 64 { u64::MAX } else { (1u64 << w) - 1 }
    }

    /// Scatters `value` into the field's bits; `None` when it does not fit.
    pub fn encode(&self, value: u64) -> Option<u64> {
        if value > self.max_value() {
            return None;
        }
        let mut out = 0u64;
        let mut v = value;
        for &(lo, hi) in &self.ranges {
            let n = u32::from(hi - lo) + 1;
            let mask = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
            out |= (v & mask) << lo;
            v = if n >= 64 { 0 } else { v >> n };
        }
        Some(out)
    }

    /// Mask of the bits this field covers in its word.
    pub fn mask(&self) -> u64 {
        self.encode(self.max_value()).unwrap_or(0)
    }

    /// Gathers the field's value back out of a config word (inverse of `encode`).
    pub fn decode(&self, word: u64) -> u64 {
        let mut out = 0u64;
        let mut shift = 0u32;
        for &(lo, hi) in &self.ranges {
            let n = u32::from(hi - lo) + 1;
            let mask = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
            out |= ((word >> lo) & mask) << shift;
            shift += n;
        }
        out
    }
}

/// A term of a sysfs event alias (`umask=0x4`, `ldlat=?`, `edge`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AliasTerm {
    /// Field or keyword name.
    pub name: String,
    /// The value.
    pub value: AliasValue,
}

/// Value of an alias term.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AliasValue {
    /// A number (written decimal or `0x` hex in sysfs).
    Num(u64),
    /// `?`: the user must supply it (`pmu/alias,field=N/`).
    Required,
}

/// One `events/<name>` file with its optional `.scale` and `.unit`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alias {
    /// Alias name (`slots`, `topdown-retiring`, `cpu-cycles`).
    pub name: String,
    /// The text of the file, trimmed.
    pub text: String,
    /// Parsed terms.
    pub terms: Vec<AliasTerm>,
    /// `<name>.scale`, when present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale: Option<f64>,
    /// `<name>.unit`, when present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

impl Alias {
    /// Value of a numeric term, if the alias sets it.
    pub fn term(&self, name: &str) -> Option<u64> {
        self.terms
            .iter()
            .find_map(|t| match (&t.value, t.name == name) {
                (AliasValue::Num(v), true) => Some(*v),
                _ => None,
            })
    }
}

/// Parses an alias term list such as `event=0x00,umask=0x4` or `event=0xcd,umask=0x1,ldlat=?`.
pub fn parse_alias_terms(text: &str) -> Result<Vec<AliasTerm>, String> {
    let mut terms = Vec::new();
    for part in text.trim().split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (name, value) = match part.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (part, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("bad term name {name:?}"));
        }
        let value = match value {
            None => AliasValue::Num(1),
            Some("?") => AliasValue::Required,
            Some(v) => AliasValue::Num(parse_number(v).ok_or_else(|| format!("bad value {v:?}"))?),
        };
        terms.push(AliasTerm {
            name: name.to_string(),
            value,
        });
    }
    if terms.is_empty() {
        return Err("empty term list".to_string());
    }
    Ok(terms)
}

/// Parses a decimal or `0x` hexadecimal number as perf accepts them in terms.
pub fn parse_number(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

/// TopDown support of a core PMU (perf metrics: `slots` + `PERF_METRICS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TopDown {
    /// No perf metrics.
    None,
    /// slots + retiring, bad-spec, fe-bound, be-bound.
    L1,
    /// Also heavy-ops, br-mispredict, fetch-lat, mem-bound.
    L2,
}

/// The TopDown metric events in `PERF_METRICS` byte order, with their `umask` (config >> 8).
pub const TOPDOWN_METRICS: [(&str, u64); 8] = [
    ("topdown-retiring", 0x80),
    ("topdown-bad-spec", 0x81),
    ("topdown-fe-bound", 0x82),
    ("topdown-be-bound", 0x83),
    ("topdown-heavy-ops", 0x84),
    ("topdown-br-mispredict", 0x85),
    ("topdown-fetch-lat", 0x86),
    ("topdown-mem-bound", 0x87),
];

/// `attr.config` of `slots` (fixed counter 3, `event=0x00,umask=0x4`).
pub const SLOTS_CONFIG: u64 = 0x400;

/// What kind of PMU this is, as far as planning cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PmuKind {
    /// Runs on CPUs' cores: `cpu`, `cpu_core`, `cpu_atom`, `armv8_*` (has `cpus`).
    Core,
    /// `software` (type 1).
    Software,
    /// `tracepoint` (type 2).
    Tracepoint,
    /// `breakpoint` (type 5).
    Breakpoint,
    /// Anything else: uncore, msr, power, probes, ...
    Other,
}

/// One PMU directory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pmu {
    /// Directory name (`cpu_core`).
    pub name: String,
    /// `attr.type` for this PMU.
    #[serde(rename = "type")]
    pub type_: u32,
    /// Classification.
    pub kind: PmuKind,
    /// `cpus` (hybrid core PMUs): the CPUs of this core type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<CpuList>,
    /// `cpumask` (uncore-style PMUs): where to open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpumask: Option<CpuList>,
    /// `format/*`.
    pub formats: BTreeMap<String, FormatField>,
    /// `events/*`.
    pub aliases: BTreeMap<String, Alias>,
    /// `caps/*`, trimmed text.
    pub caps: BTreeMap<String, String>,
    /// TopDown level.
    pub topdown: TopDown,
}

impl Pmu {
    /// True for core PMUs.
    pub fn is_core(&self) -> bool {
        self.kind == PmuKind::Core
    }

    /// `caps/max_precise`, when present and numeric.
    pub fn max_precise(&self) -> Option<u8> {
        self.caps.get("max_precise").and_then(|v| v.parse().ok())
    }

    /// `caps/pmu_name`, when present.
    pub fn pmu_name(&self) -> Option<&str> {
        self.caps.get("pmu_name").map(String::as_str)
    }

    /// True when `config` (with `attr.type` = this PMU) encodes a TopDown metric of this PMU.
    pub fn is_topdown_metric_config(&self, config: u64) -> bool {
        self.topdown != TopDown::None
            && TOPDOWN_METRICS
                .iter()
                .any(|(_, umask)| config == umask << 8)
    }

    /// True when `config` is this PMU's `slots` event.
    pub fn is_slots_config(&self, config: u64) -> bool {
        self.topdown != TopDown::None && config == SLOTS_CONFIG
    }

    /// The CPUs this PMU's events are opened on, given the online CPUs.
    pub fn open_cpus(&self, online: &CpuList) -> CpuList {
        match (&self.cpus, &self.cpumask) {
            (Some(c), _) => c.intersect(online),
            (None, Some(m)) => m.intersect(online),
            (None, None) => online.clone(),
        }
    }
}

/// Errors while reading a sysfs tree. Each names the offending path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PmuError {
    /// The PMU directory does not exist or cannot be listed.
    #[error("cannot read PMU directory {}: {source}", path.display())]
    NoDevices {
        /// `<root>/bus/event_source/devices`
        path: PathBuf,
        /// Underlying error.
        source: io::Error,
    },
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// File.
        path: PathBuf,
        /// Underlying error.
        source: io::Error,
    },
    /// A file's content does not have the expected shape.
    #[error("malformed {}: {reason}", path.display())]
    Malformed {
        /// File.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
}

/// All PMUs of one machine plus its online CPUs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pmus {
    /// The sysfs root this snapshot was read from.
    pub root: PathBuf,
    /// `devices/system/cpu/online`.
    pub online: CpuList,
    /// PMUs sorted by name.
    pub pmus: Vec<Pmu>,
}

/// `perf_event_attr.type` of the software PMU.
pub const TYPE_SOFTWARE: u32 = 1;
/// `perf_event_attr.type` of the tracepoint PMU.
pub const TYPE_TRACEPOINT: u32 = 2;
/// `perf_event_attr.type` of the breakpoint PMU.
pub const TYPE_BREAKPOINT: u32 = 5;

impl Pmus {
    /// Reads `<root>/bus/event_source/devices/*` and `<root>/devices/system/cpu/online`.
    pub fn read(root: &Path) -> Result<Self, PmuError> {
        let dir = root.join("bus/event_source/devices");
        let entries = fs::read_dir(&dir).map_err(|source| PmuError::NoDevices {
            path: dir.clone(),
            source,
        })?;
        let mut names = Vec::new();
        for e in entries {
            let e = e.map_err(|source| PmuError::Read {
                path: dir.clone(),
                source,
            })?;
            names.push(e.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        let mut pmus = Vec::with_capacity(names.len());
        for name in names {
            pmus.push(read_pmu(&dir.join(&name), name)?);
        }
        let online_path = root.join("devices/system/cpu/online");
        let online = match fs::read_to_string(&online_path) {
            Ok(text) => text
                .parse()
                .map_err(|e: CpuListError| PmuError::Malformed {
                    path: online_path.clone(),
                    reason: e.to_string(),
                })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // Without the file, fall back to the union of the core PMUs' CPUs.
                let all = pmus
                    .iter()
                    .filter_map(|p| p.cpus.as_ref())
                    .flat_map(|c| c.cpus());
                CpuList::from_cpus(all.copied())
            }
            Err(source) => {
                return Err(PmuError::Read {
                    path: online_path,
                    source,
                });
            }
        };
        Ok(Pmus {
            root: root.to_path_buf(),
            online,
            pmus,
        })
    }

    /// PMU by directory name.
    pub fn get(&self, name: &str) -> Option<&Pmu> {
        self.pmus.iter().find(|p| p.name == name)
    }

    /// PMU by `attr.type`.
    pub fn by_type(&self, type_: u32) -> Option<&Pmu> {
        self.pmus.iter().find(|p| p.type_ == type_)
    }

    /// Core PMUs in perf's order: `cpu`/`cpu_core` (type 4) first, then by type.
    pub fn core_pmus(&self) -> Vec<&Pmu> {
        let mut v: Vec<&Pmu> = self.pmus.iter().filter(|p| p.is_core()).collect();
        v.sort_by_key(|p| p.type_);
        v
    }

    /// True on hybrid parts (more than one core PMU).
    pub fn is_hybrid(&self) -> bool {
        self.core_pmus().len() > 1
    }
}

fn read_trimmed(path: &Path) -> Result<String, PmuError> {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|source| PmuError::Read {
            path: path.to_path_buf(),
            source,
        })
}

fn read_optional(path: &Path) -> Result<Option<String>, PmuError> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s.trim().to_string())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(PmuError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn read_cpulist(path: &Path) -> Result<Option<CpuList>, PmuError> {
    match read_optional(path)? {
        None => Ok(None),
        Some(text) => text
            .parse()
            .map(Some)
            .map_err(|e: CpuListError| PmuError::Malformed {
                path: path.to_path_buf(),
                reason: e.to_string(),
            }),
    }
}

/// Lists a subdirectory's regular files, sorted; a missing directory is empty.
fn list_files(dir: &Path) -> Result<Vec<(String, PathBuf)>, PmuError> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(PmuError::Read {
                path: dir.to_path_buf(),
                source,
            });
        }
    };
    let mut out = Vec::new();
    for e in entries {
        let e = e.map_err(|source| PmuError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = e.path();
        if path.is_file() {
            out.push((e.file_name().to_string_lossy().into_owned(), path));
        }
    }
    out.sort();
    Ok(out)
}

fn read_pmu(dir: &Path, name: String) -> Result<Pmu, PmuError> {
    let type_path = dir.join("type");
    let type_text = read_trimmed(&type_path)?;
    let type_: u32 = type_text.parse().map_err(|_| PmuError::Malformed {
        path: type_path.clone(),
        reason: format!("expected a decimal PMU type, found {type_text:?}"),
    })?;
    let cpus = read_cpulist(&dir.join("cpus"))?;
    let cpumask = read_cpulist(&dir.join("cpumask"))?;

    let mut formats = BTreeMap::new();
    for (field, path) in list_files(&dir.join("format"))? {
        let text = read_trimmed(&path)?;
        let f = FormatField::parse(&text).map_err(|reason| PmuError::Malformed {
            path: path.clone(),
            reason,
        })?;
        formats.insert(field, f);
    }

    let files = list_files(&dir.join("events"))?;
    let mut aliases = BTreeMap::new();
    for (file, path) in &files {
        if file.ends_with(".scale")
            || file.ends_with(".unit")
            || file.ends_with(".per-pkg")
            || file.ends_with(".snapshot")
        {
            continue;
        }
        let text = read_trimmed(path)?;
        let terms = parse_alias_terms(&text).map_err(|reason| PmuError::Malformed {
            path: path.clone(),
            reason,
        })?;
        let scale_path = dir.join("events").join(format!("{file}.scale"));
        let scale = match read_optional(&scale_path)? {
            None => None,
            Some(s) => Some(s.parse::<f64>().map_err(|_| PmuError::Malformed {
                path: scale_path.clone(),
                reason: format!("expected a number, found {s:?}"),
            })?),
        };
        let unit = read_optional(&dir.join("events").join(format!("{file}.unit")))?;
        aliases.insert(
            file.clone(),
            Alias {
                name: file.clone(),
                text,
                terms,
                scale,
                unit,
            },
        );
    }

    let mut caps = BTreeMap::new();
    for (cap, path) in list_files(&dir.join("caps"))? {
        caps.insert(cap, read_trimmed(&path)?);
    }

    let kind = if name == "cpu" || cpus.is_some() {
        PmuKind::Core
    } else if type_ == TYPE_SOFTWARE && name == "software" {
        PmuKind::Software
    } else if type_ == TYPE_TRACEPOINT && name == "tracepoint" {
        PmuKind::Tracepoint
    } else if type_ == TYPE_BREAKPOINT && name == "breakpoint" {
        PmuKind::Breakpoint
    } else {
        PmuKind::Other
    };
    let topdown = if kind == PmuKind::Core {
        topdown_level(&aliases)
    } else {
        TopDown::None
    };
    Ok(Pmu {
        name,
        type_,
        kind,
        cpus,
        cpumask,
        formats,
        aliases,
        caps,
        topdown,
    })
}

/// perf metrics need `slots` (`event=0,umask=4`) and metric aliases encoded as `event=0,umask=0x8N`.
fn topdown_level(aliases: &BTreeMap<String, Alias>) -> TopDown {
    let is = |name: &str, umask: u64| {
        aliases
            .get(name)
            .is_some_and(|a| a.term("event").unwrap_or(0) == 0 && a.term("umask") == Some(umask))
    };
    if !is("slots", SLOTS_CONFIG >> 8) {
        return TopDown::None;
    }
    let has = |range: std::ops::Range<usize>| TOPDOWN_METRICS[range].iter().all(|(n, u)| is(n, *u));
    match (has(0..4), has(4..8)) {
        (true, true) => TopDown::L2,
        (true, false) => TopDown::L1,
        _ => TopDown::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_split_ranges_round_trip() {
        let f = FormatField::parse("config:0-7,32-35").unwrap();
        assert_eq!(f.width(), 12);
        assert_eq!(f.encode(0x1c0), Some(0x1_0000_00c0));
        assert_eq!(f.decode(0x1_0000_00c0), 0x1c0);
        assert_eq!(f.encode(0x1000), None);
        assert_eq!(f.mask(), 0xf_0000_00ff);
        let single = FormatField::parse("config:21").unwrap();
        assert_eq!(single.encode(1), Some(1 << 21));
        let whole = FormatField::parse("config1:0-63").unwrap();
        assert_eq!(whole.word, ConfigWord::Config1);
        assert_eq!(whole.encode(u64::MAX), Some(u64::MAX));
    }

    #[test]
    fn format_rejects_malformed() {
        for bad in [
            "config",
            "conf:0-7",
            "config:7-0",
            "config:0-64",
            "config:a-b",
            "config:",
        ] {
            assert!(FormatField::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn alias_terms() {
        let t = parse_alias_terms("event=0xcd,umask=0x1,ldlat=?").unwrap();
        assert_eq!(
            t[0],
            AliasTerm {
                name: "event".into(),
                value: AliasValue::Num(0xcd)
            }
        );
        assert_eq!(t[2].value, AliasValue::Required);
        assert_eq!(
            parse_alias_terms("edge").unwrap()[0].value,
            AliasValue::Num(1)
        );
        assert!(parse_alias_terms("event=zz").is_err());
        assert!(parse_alias_terms("").is_err());
    }
}
