//! `hrec list`: the events and metrics a user can name, gathered as perf 6.1's `perf list`
//! gathers them, and the filters that pick from them.
//!
//! Where each class comes from, and how perf decides what to show:
//!
//! * **Hardware events** (`cpu-cycles OR cycles`): perf opens each legacy event to see whether
//!   the kernel supports it. hrec decides from the sysfs snapshot instead: the x86 kernel
//!   publishes `events/<name>` on the core PMU exactly for the legacy events its event map
//!   supports (it hides the others), so a legacy name is listed when some core PMU has that
//!   alias. No core PMU (a VM): none, as perf prints none there.
//! * **Software events** are always there. perf's tool events (`duration_time`, ...) are not
//!   listed: hrec cannot count them.
//! * **Hardware cache events** (`L1-dcache-load-misses`): every type-op-result combination perf
//!   considers valid, when a core PMU exists. perf also opens each to drop those the model's
//!   kernel table leaves out; sysfs does not tell, so hrec lists them all (a difference).
//! * **Kernel PMU events**: the sysfs aliases of every PMU, `pmu/alias/` (`?` terms shown as
//!   `,term=?`); on core PMUs `alias OR cpu/alias/`.
//! * **Intel's events** (perfmon JSON, chosen through `mapfile.csv` by cpuid): the core (P-core
//!   and E-core on hybrid parts) and uncore event lists, lower-case names as perf spells them,
//!   grouped by topic (`cache`, `pipeline`, ...). Intel's files carry no topic; perf's converted
//!   files take it from the event name (Intel's `create_perf_json.py`), and [`topic_of`]
//!   approximates that with name prefixes. Deprecated events only with `--deprecated`. An event
//!   list's PMU must exist in the snapshot (perf attaches JSON events to PMUs it finds).
//! * **Tracepoints**: `<sysfs>/kernel/tracing/events/<subsystem>/<event>/` with an `id` file
//!   (or the debugfs copy), `subsystem:event`.
//! * **Metrics**: the TMA metrics of the model's metrics file under perf's names
//!   (`tma_frontend_bound`), in their `MetricGroup`s (Intel's `TmaL1` is perf's `TopdownL1`;
//!   metrics without a group are in `No_group`). hrec adds a line `[per function: hrec record
//!   -M NAME]` (`PerFunction` in JSON) under each metric it can compute per function: one of
//!   core events only (no uncore event, TSC or run duration).
//!
//! Filters follow `perf list`: a class word (`hw`, `sw`, `cache`, `pmu`, `tracepoint`, `sdt`,
//! `metric`, `metricgroup`), `subsys:event` globs for tracepoints, and any other word is a
//! glob matched as `*WORD*` against event names (and JSON event topics, case-insensitively for
//! PMU events, as perf does).

mod print;
mod topic;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::event::resolve::{HARDWARE_EVENTS, SOFTWARE_EVENTS};
use crate::metrics::perfmon::{CoreEvent, CoreEvents, Mapfile, MetricFile, PerfmonError, RawEvent};
use crate::names::glob_match;
use crate::pmu::{AliasValue, Pmu, Pmus};

pub use print::{Style, write_json, write_raw_dump, write_text};
pub use topic::topic_of;

/// Why the list cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// A perfmon file could not be read or parsed.
    #[error("cannot list Intel's events")]
    Perfmon(#[from] PerfmonError),
}

/// What an event is, as perf's `[...]` label names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum EventType {
    /// Legacy hardware event.
    #[serde(rename = "Hardware event")]
    Hardware,
    /// Software event.
    #[serde(rename = "Software event")]
    Software,
    /// Legacy hardware cache event.
    #[serde(rename = "Hardware cache event")]
    HwCache,
    /// A PMU's sysfs alias or a perfmon JSON event.
    #[serde(rename = "Kernel PMU event")]
    KernelPmu,
    /// A tracepoint.
    #[serde(rename = "Tracepoint event")]
    Tracepoint,
    /// A raw-encoding syntax hint.
    #[serde(rename = "Raw hardware event descriptor")]
    RawDescriptor,
}

impl EventType {
    /// perf's label (`Software event`).
    pub fn label(self) -> &'static str {
        match self {
            EventType::Hardware => "Hardware event",
            EventType::Software => "Software event",
            EventType::HwCache => "Hardware cache event",
            EventType::KernelPmu => "Kernel PMU event",
            EventType::Tracepoint => "Tracepoint event",
            EventType::RawDescriptor => "Raw hardware event descriptor",
        }
    }
}

/// One listed event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// As printed (`cpu-cycles OR cycles`, `msr/tsc/`, `mem_load_retired.l3_miss`).
    pub display: String,
    /// The names a glob is matched against (`cpu-cycles`, `cycles`).
    pub names: Vec<String>,
    /// Its class.
    pub kind: EventType,
    /// The PMU (`cpu`, `cpu_atom`, `uncore_cha`), for PMU events.
    pub pmu: Option<String>,
    /// The topic of a perfmon event (`cache`).
    pub topic: Option<String>,
    /// `BriefDescription` of a perfmon event.
    pub description: Option<String>,
    /// `PublicDescription` of a perfmon event.
    pub long_description: Option<String>,
    /// How to write it as a PMU event (`cpu/event=0xd1,umask=0x20/`).
    pub encoding: Option<String>,
    /// On the core PMU (perf orders those first).
    pub is_core: bool,
}

impl Event {
    fn simple(display: String, names: Vec<String>, kind: EventType) -> Event {
        Event {
            display,
            names,
            kind,
            pmu: None,
            topic: None,
            description: None,
            long_description: None,
            encoding: None,
            is_core: false,
        }
    }
}

/// One listed metric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricItem {
    /// perf's name (`tma_frontend_bound`).
    pub name: String,
    /// Groups, perf's spelling (`TopdownL1`), `No_group` when none.
    pub groups: Vec<String>,
    /// `BriefDescription`.
    pub description: String,
    /// The formula over event names (`BaseFormula`), empty when the file has none.
    pub expr: String,
    /// `UnitOfMeasure`.
    pub unit: String,
    /// hrec can compute it per function ([`crate::metrics::perfmon::Metric::per_function`]).
    pub per_function: bool,
}

/// Everything `hrec list` can show for one machine.
#[derive(Debug, Clone)]
pub struct Catalogue {
    /// Legacy hardware events the core PMU supports, sorted.
    pub hardware: Vec<Event>,
    /// Software events, sorted.
    pub software: Vec<Event>,
    /// Hardware cache events, sorted.
    pub cache: Vec<Event>,
    /// sysfs aliases then perfmon events, in perf's order.
    pub pmu: Vec<Event>,
    /// The raw-syntax hints perf prints after the PMU events.
    pub raw: Vec<Event>,
    /// Tracepoints, sorted, or why they cannot be read.
    pub tracepoints: Result<Vec<Event>, String>,
    /// Metrics, in file order.
    pub metrics: Vec<MetricItem>,
    /// One-line remarks (files listed but absent, ...), for `-v`.
    pub notes: Vec<String>,
}

/// Where the perfmon files come from.
#[derive(Debug, Clone)]
pub struct PerfmonSource {
    /// The directory with `mapfile.csv`.
    pub dir: PathBuf,
    /// The cpuid string to look up.
    pub cpuid: String,
    /// The directory was named by the user: its absence is an error, not "no files".
    pub explicit: bool,
}

/// Gathers the catalogue from a sysfs snapshot (tracepoints from its `kernel/tracing`) and
/// the perfmon files, if any.
pub fn catalogue(
    pmus: &Pmus,
    perfmon: Option<&PerfmonSource>,
    include_deprecated: bool,
) -> Result<Catalogue, ListError> {
    let mut cat = Catalogue {
        hardware: hardware_events(pmus),
        software: software_events(),
        cache: cache_events(pmus),
        raw: raw_descriptors(),
        tracepoints: tracepoints(&pmus.root),
        pmu: alias_events(pmus),
        metrics: Vec::new(),
        notes: Vec::new(),
    };
    if let Some(src) = perfmon {
        add_perfmon(&mut cat, pmus, src, include_deprecated)?;
    }
    sort_pmu_events(&mut cat.pmu);
    Ok(cat)
}

fn hardware_events(pmus: &Pmus) -> Vec<Event> {
    let core = pmus.core_pmus();
    // Each id once, with its alternative spelling: `cpu-cycles OR cycles` (perf's first name is
    // the kernel's sysfs name).
    let mut out: Vec<Event> = Vec::new();
    let mut ids: Vec<u64> = HARDWARE_EVENTS.iter().map(|&(_, id)| id).collect();
    ids.dedup();
    for id in ids {
        let names: Vec<&str> = HARDWARE_EVENTS
            .iter()
            .filter(|&&(_, i)| i == id)
            .map(|&(n, _)| n)
            .collect();
        let supported = core
            .iter()
            .any(|p| names.iter().any(|n| p.aliases.contains_key(*n)));
        if !supported {
            continue;
        }
        out.push(symbol(&names, EventType::Hardware));
    }
    out.sort_by(|a, b| a.display.cmp(&b.display));
    out
}

/// perf's `symbol OR alias`: the longer, descriptive name first (`cpu-cycles OR cycles`,
/// `context-switches OR cs`).
fn symbol(names: &[&str], kind: EventType) -> Event {
    let mut names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    if names.len() == 2 && names[0].len() < names[1].len() {
        names.swap(0, 1);
    }
    Event::simple(names.join(" OR "), names, kind)
}

fn software_events() -> Vec<Event> {
    let mut ids: Vec<u64> = SOFTWARE_EVENTS.iter().map(|&(_, id)| id).collect();
    ids.dedup();
    let mut out: Vec<Event> = ids
        .into_iter()
        .map(|id| {
            let names: Vec<&str> = SOFTWARE_EVENTS
                .iter()
                .filter(|&&(_, i)| i == id)
                .map(|&(n, _)| n)
                .collect();
            symbol(&names, EventType::Software)
        })
        .collect();
    out.sort_by(|a, b| a.display.cmp(&b.display));
    out
}

/// perf's cache names (`evsel__hw_cache`, the ops valid per cache, `evsel__hw_cache_stat`).
const CACHES: [(&str, &[&str]); 7] = [
    ("L1-dcache", &["load", "store", "prefetch"]),
    ("L1-icache", &["load", "prefetch"]),
    ("LLC", &["load", "store", "prefetch"]),
    ("dTLB", &["load", "store", "prefetch"]),
    ("iTLB", &["load"]),
    ("branch", &["load"]),
    ("node", &["load", "store", "prefetch"]),
];

fn cache_events(pmus: &Pmus) -> Vec<Event> {
    if pmus.core_pmus().is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (cache, ops) in CACHES {
        for op in ops {
            // perf's plural for the accesses (`loads`, `prefetches`), singular for misses.
            let plural = if *op == "prefetch" {
                "prefetches"
            } else {
                &format!("{op}s")
            };
            for name in [format!("{cache}-{plural}"), format!("{cache}-{op}-misses")] {
                out.push(Event::simple(name.clone(), vec![name], EventType::HwCache));
            }
        }
    }
    out.sort_by(|a, b| a.display.cmp(&b.display));
    out
}

/// perf's two syntax hints, printed as perf prints them (`cpu/` even on hybrid parts).
fn raw_descriptors() -> Vec<Event> {
    ["rNNN", "cpu/t1=v1[,t2=v2,t3 ...]/modifier"]
        .into_iter()
        .map(|d| Event::simple(d.to_string(), Vec::new(), EventType::RawDescriptor))
        .collect()
}

/// `pmu/alias/` with the `?` terms the user must give, as perf's `format_alias`.
fn alias_name(pmu: &Pmu, alias: &crate::pmu::Alias) -> String {
    let mut s = format!("{}/{}", pmu.name, alias.name);
    for t in &alias.terms {
        if t.value == AliasValue::Required {
            s += &format!(",{}=?", t.name);
        }
    }
    s + "/"
}

fn alias_events(pmus: &Pmus) -> Vec<Event> {
    let mut out = Vec::new();
    for p in &pmus.pmus {
        for a in p.aliases.values() {
            let full = alias_name(p, a);
            let display = if p.is_core() {
                format!("{} OR {full}", a.name)
            } else {
                full.clone()
            };
            out.push(Event {
                names: vec![full, a.name.clone()],
                display,
                kind: EventType::KernelPmu,
                pmu: Some(p.name.clone()),
                topic: None,
                description: None,
                long_description: None,
                encoding: Some(format!("{}/{}/", p.name, a.text)),
                is_core: p.is_core(),
            });
        }
    }
    out
}

/// perf's order (`cmp_sevent`): events without a description first, then by topic, core PMU
/// events before others, then PMU name and event name; duplicates dropped.
fn sort_pmu_events(v: &mut Vec<Event>) {
    v.sort_by(|a, b| {
        let key = |e: &Event| {
            (
                e.description.is_some(),
                e.topic.clone().unwrap_or_default(),
                !e.is_core,
                e.pmu.clone().unwrap_or_default(),
                e.display.clone(),
            )
        };
        key(a).cmp(&key(b))
    });
    v.dedup_by(|a, b| a.display == b.display && a.pmu == b.pmu);
}

/// The PMU a mapfile row's events go to: `cpu` for a plain core list, the hybrid PMU of its
/// core role, `None` for uncore lists (the PMU is per event).
fn core_pmu_of_role(event_type: &str, role: &str) -> Option<&'static str> {
    match (event_type, role) {
        ("core", _) => Some("cpu"),
        ("hybridcore", "Core") => Some("cpu_core"),
        ("hybridcore", "Atom") => Some("cpu_atom"),
        ("hybridcore", "LowPower_Atom") => Some("cpu_lowpower"),
        _ => None,
    }
}

/// perf's PMU name for Intel's `Unit` (`CHA` -> `uncore_cha`), and whether the snapshot has
/// it (`uncore_cha` or `uncore_cha_0`, ...).
fn uncore_pmu(unit: &str, pmus: &Pmus) -> (String, bool) {
    let name = format!("uncore_{}", unit.to_ascii_lowercase().replace(' ', "_"));
    let present = pmus.pmus.iter().any(|p| {
        p.name == name
            || p.name
                .strip_prefix(name.as_str())
                .and_then(|r| r.strip_prefix('_'))
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
    });
    (name, present)
}

fn add_perfmon(
    cat: &mut Catalogue,
    pmus: &Pmus,
    src: &PerfmonSource,
    include_deprecated: bool,
) -> Result<(), ListError> {
    let mapfile_path = src.dir.join("mapfile.csv");
    if !src.explicit && !mapfile_path.exists() {
        cat.notes.push(format!(
            "no perfmon files at {} (give --perfmon DIR for Intel's events and metrics)",
            src.dir.display()
        ));
        return Ok(());
    }
    let mapfile = Mapfile::load(&mapfile_path)?;
    let rows: Vec<_> = mapfile.matching(&src.cpuid).collect();
    if rows.is_empty() {
        cat.notes.push(format!(
            "{} lists no files for CPU {}",
            mapfile_path.display(),
            src.cpuid
        ));
        return Ok(());
    }
    for row in &rows {
        let uncore = row.event_type == "uncore";
        let core_pmu = core_pmu_of_role(&row.event_type, &row.core_role);
        if !uncore && core_pmu.is_none() {
            continue;
        }
        if let Some(p) = core_pmu
            && pmus.get(p).is_none_or(|p| !p.is_core())
        {
            cat.notes.push(format!(
                "{}: no {p} PMU in the snapshot, its events are not listed",
                row.filename
            ));
            continue;
        }
        let path = row.path_in(&src.dir);
        if !path.exists() {
            cat.notes
                .push(format!("{} is listed but absent", path.display()));
            continue;
        }
        let events = CoreEvents::load(&path)?;
        for ev in events.events() {
            if ev.deprecated && !include_deprecated {
                continue;
            }
            let pmu = match (core_pmu, &ev.unit) {
                (Some(p), _) => p.to_string(),
                (None, Some(unit)) => {
                    let (name, present) = uncore_pmu(unit, pmus);
                    if !present {
                        continue;
                    }
                    name
                }
                (None, None) => continue,
            };
            cat.pmu.push(perfmon_event(ev, pmu, core_pmu.is_some()));
        }
    }
    if let Some(row) = mapfile.select(&src.cpuid).ok().map(|s| s.metrics) {
        let path = row.path_in(&src.dir);
        if path.exists() {
            let file = MetricFile::load(&path)?;
            cat.metrics = file
                .metrics
                .iter()
                .map(|m| MetricItem {
                    name: m.perf_name(),
                    groups: if m.groups.is_empty() {
                        vec!["No_group".to_string()]
                    } else {
                        m.groups.iter().map(|g| perf_group_name(g)).collect()
                    },
                    description: m.description.clone(),
                    expr: m.base_formula.clone().unwrap_or_default(),
                    unit: m.unit.clone(),
                    per_function: m.per_function(),
                })
                .collect();
        } else {
            cat.notes
                .push(format!("{} is listed but absent", path.display()));
        }
    }
    Ok(())
}

/// Intel's `TmaL1` group is perf's `TopdownL1`; other names are kept.
pub fn perf_group_name(g: &str) -> String {
    match g.strip_prefix("TmaL") {
        Some(level) if level.bytes().next().is_some_and(|b| b.is_ascii_digit()) => {
            format!("TopdownL{level}")
        }
        _ => g.to_string(),
    }
}

fn perfmon_event(ev: &CoreEvent, pmu: String, is_core: bool) -> Event {
    let raw = RawEvent {
        name: ev.name.clone(),
        event_code: ev.event_codes[0],
        umask: ev.umasks[0],
        umask_ext: ev.umask_ext,
        cmask: ev.cmask,
        inv: ev.inv,
        edge: ev.edge,
        any_thread: ev.any_thread,
        eq: ev.equal,
        msr: ev.msr_index.first().map(|&i| (i, ev.msr_value)),
        ..RawEvent::default()
    };
    let encoding = raw.perf_terms().ok().map(|t| format!("{pmu}/{t}/"));
    // perf's wording (its jevents): the final full stop dropped, then the data-address,
    // spec-update and precise notes, then the unit of events off the `cpu` PMU.
    let describe = |d: &str| {
        if d.is_empty() {
            return String::new();
        }
        let mut s = d.trim_end().trim_end_matches('.').to_string();
        if ev.data_la {
            s += "  Supports address when precise";
            if ev.errata.is_some() {
                s += ".";
            }
        }
        if let Some(e) = &ev.errata {
            s += &format!("  Spec update: {e}");
        }
        if ev.precise && !s.contains("(Precise Event)") {
            s += " (Precise event)";
        }
        if pmu != "cpu" {
            s += &format!(". Unit: {pmu}");
        }
        s
    };
    let name = ev.name.to_ascii_lowercase();
    let topic = topic_of(&ev.name, (!is_core).then_some(pmu.as_str()));
    Event {
        display: name.clone(),
        names: vec![name],
        kind: EventType::KernelPmu,
        topic: Some(topic.to_string()),
        description: Some(describe(&ev.description)),
        long_description: (!ev.public_description.is_empty())
            .then(|| describe(&ev.public_description)),
        encoding,
        is_core,
        pmu: Some(pmu),
    }
}

/// Tracepoints of tracefs under the sysfs root ([`crate::trace::Tracefs`]), sorted as
/// `perf list` sorts them, or why they cannot be read.
fn tracepoints(sysfs_root: &Path) -> Result<Vec<Event>, String> {
    let fs = crate::trace::Tracefs::find(sysfs_root).map_err(|e| e.to_string())?;
    let mut out: Vec<Event> = fs
        .events()
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|(sys, ev)| {
            let name = format!("{sys}:{ev}");
            Event::simple(name.clone(), vec![name], EventType::Tracepoint)
        })
        .collect();
    out.sort_by(|a, b| a.display.cmp(&b.display));
    Ok(out)
}

/// One `hrec list` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// `hw` / `hardware`.
    Hardware,
    /// `sw` / `software`.
    Software,
    /// `cache` / `hwcache`.
    Cache,
    /// `pmu`.
    Pmu,
    /// `tracepoint`.
    Tracepoint,
    /// `sdt`: not listed by hrec.
    Sdt,
    /// `metric`.
    Metric,
    /// `metricgroup` / `metricgroups`.
    MetricGroup,
    /// `subsys:event` globs over tracepoints.
    TracepointGlob {
        /// Subsystem glob.
        subsystem: String,
        /// Event glob.
        event: String,
    },
    /// Any other word, matched as `*WORD*`.
    Glob(String),
}

impl Filter {
    /// Whether this filter can show perfmon events or metrics (the files are read only then).
    pub fn needs_perfmon(&self) -> bool {
        matches!(
            self,
            Filter::Pmu | Filter::Metric | Filter::MetricGroup | Filter::Glob(_)
        )
    }

    /// Classifies an argument as perf's `cmd_list` does.
    pub fn parse(arg: &str) -> Filter {
        match arg {
            "hw" | "hardware" => Filter::Hardware,
            "sw" | "software" => Filter::Software,
            "cache" | "hwcache" => Filter::Cache,
            "pmu" => Filter::Pmu,
            "tracepoint" => Filter::Tracepoint,
            "sdt" => Filter::Sdt,
            "metric" => Filter::Metric,
            "metricgroup" | "metricgroups" => Filter::MetricGroup,
            _ => match arg.split_once(':') {
                Some((s, e)) => Filter::TracepointGlob {
                    subsystem: s.to_string(),
                    event: e.to_string(),
                },
                None => Filter::Glob(format!("*{arg}*")),
            },
        }
    }
}

#[cfg(test)]
mod tests;
