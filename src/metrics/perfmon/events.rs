//! `<model>_core.json` and the encodings a metric's event resolves to. Every value of an
//! event list is a string (`"0x2A,0x2B"` for the two offcore-response codes) or a number, and
//! a malformed field is an error naming the event and the field. A metric's event is an
//! ordinary counter event (the list's fields with the reference's modifiers applied), one of
//! the `PERF_METRICS` TopDown metrics (the kernel's `topdown-*` events), or the TSC.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::file::{PerfmonError, malformed, parse_json, parse_u64, read_text};
use super::retire::RetireLatency;

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
    /// `PublicDescription`: the longer text (`perf list -v`); empty when absent.
    pub public_description: String,
    /// `Unit`: the PMU of uncore events (`CHA`, `IMC`); `None` for core events.
    pub unit: Option<String>,
    /// `Data_LA`: precise samples carry the data address.
    pub data_la: bool,
    /// `Errata`: the spec-update items that affect the event (`None` for `"null"`).
    pub errata: Option<String>,
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
            public_description: text("PublicDescription")?.unwrap_or_default(),
            unit: text("Unit")?,
            data_la: flag("Data_LA")?,
            errata: text("Errata")?.filter(|e| !e.is_empty() && e != "null" && e != "NA"),
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
            .and_then(|&i| self.events.get(i))
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
pub(super) const PERF_METRICS: [(&str, u32, &str); 8] = [
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
