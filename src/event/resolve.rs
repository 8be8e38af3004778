//! Resolving parsed events against the discovered PMUs.
//!
//! Rules, following perf:
//!
//! * A legacy hardware or cache name with no PMU (`cycles`, `LLC-loads`) means "on every core
//!   PMU". On hybrid parts that is one event per core PMU with the PMU type in `config[63:32]`
//!   (`cpu_core/cycles/` = type 0, config `0x4_0000_0000` on Alder Lake), because a plain type-0
//!   event only counts on `cpu_core`. On a single core PMU the upper half stays 0.
//! * Bare names that are not legacy are looked up as sysfs aliases on every PMU; a name several
//!   PMUs define (`topdown-retiring` on `cpu_core` and `cpu_atom`) gives one event per PMU.
//! * A group whose events land on different core PMUs is split per PMU, since the kernel only
//!   groups events of one PMU; perf prints "WARNING: events were regrouped to match PMUs".
//! * With one core PMU chosen ([`resolve_on_core`], perf stat's `--cputype`), "every core PMU"
//!   means that one: legacy, raw and alias events written without a PMU resolve there alone,
//!   still named and encoded as on a hybrid part (`cpu_atom/cycles/`, the PMU type in
//!   `config[63:32]`), and an event written for another core PMU is an error rather than
//!   silently left out. Software, uncore and other non-core events are not affected.
//! * TopDown metric events (`topdown-*` on a perf-metrics PMU) are only valid in a group led by
//!   that PMU's `slots`: slots is moved to the front of a group that has it, inserted into one
//!   that does not, and standalone metric events are gathered into one slots-led group.
//!
//! Whether an event may sample is decided by the record planner, not here: counting is fine for
//! every event, sampling is not (metric events never sample).

mod topdown;

use topdown::fix_topdown;
pub use topdown::topdown_metric_names;

use super::attr::{Attr, flag, types};
use super::parse::{EventAst, EventError, EventKind, Item, Modifiers, Span, Term};
use crate::pmu::{AliasValue, CpuList, Pmu, PmuKind, Pmus, parse_number};

/// How an event takes part in TopDown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TopDownRole {
    /// Not a TopDown event.
    None,
    /// `slots` of a perf-metrics PMU.
    Slots,
    /// A `topdown-*` metric of a perf-metrics PMU.
    Metric,
}

/// One event bound to one PMU, with the attr fields that resolution decides.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// Name as perf shows it (`cycles:P`, `cpu_core/cycles/P`, `slots`).
    pub name: String,
    /// The PMU it runs on; `None` for a legacy hardware event on a machine without a core PMU.
    pub pmu: Option<String>,
    /// type, config, config1-3, exclude bits, precise_ip, pinned, exclusive.
    pub attr: Attr,
    /// Modifiers after merging the group's.
    pub modifiers: Modifiers,
    /// `period=` term.
    pub period: Option<u64>,
    /// `freq=` term.
    pub freq: Option<u64>,
    /// CPUs the PMU is restricted to (hybrid `cpus` or uncore `cpumask`).
    pub pmu_cpus: Option<CpuList>,
    /// TopDown role.
    pub topdown: TopDownRole,
    /// Where the user wrote it.
    pub span: Span,
    /// A tracepoint's tracefs entry: its id and format.
    pub tracepoint: Option<std::sync::Arc<crate::trace::TraceEvent>>,
    /// A tracepoint's `--filter` (set by the planner).
    pub filter: Option<String>,
}

impl Resolved {
    /// Legacy hardware cycles (`cycles`, `cpu-cycles`, on any core PMU): the event that perf's
    /// no-PMU fallback replaces with cpu-clock.
    pub fn is_cycles(&self) -> bool {
        self.attr.type_ == types::HARDWARE && self.attr.config & 0xffff_ffff == 0
    }
}

/// A group of resolved events (a standalone event is a group of one).
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Members, leader first.
    pub events: Vec<Resolved>,
    /// `:S` on the group.
    pub sample_read: bool,
    /// `:W` on the group.
    pub weak: bool,
    /// Written with braces (or built by a regroup).
    pub braced: bool,
}

/// The result of resolving event strings: groups plus warnings to print.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Resolution {
    /// Groups in order.
    pub groups: Vec<Group>,
    /// Warnings (one line each), e.g. perf's regroup warning.
    pub warnings: Vec<String>,
}

/// Legacy hardware event names and their `PERF_COUNT_HW_*` ids.
pub const HARDWARE_EVENTS: &[(&str, u64)] = &[
    ("cycles", 0),
    ("cpu-cycles", 0),
    ("instructions", 1),
    ("cache-references", 2),
    ("cache-misses", 3),
    ("branch-instructions", 4),
    ("branches", 4),
    ("branch-misses", 5),
    ("bus-cycles", 6),
    ("stalled-cycles-frontend", 7),
    ("idle-cycles-frontend", 7),
    ("stalled-cycles-backend", 8),
    ("idle-cycles-backend", 8),
    ("ref-cycles", 9),
];

/// Software event names and their `PERF_COUNT_SW_*` ids.
pub const SOFTWARE_EVENTS: &[(&str, u64)] = &[
    ("cpu-clock", 0),
    ("task-clock", 1),
    ("page-faults", 2),
    ("faults", 2),
    ("context-switches", 3),
    ("cs", 3),
    ("cpu-migrations", 4),
    ("migrations", 4),
    ("minor-faults", 5),
    ("major-faults", 6),
    ("alignment-faults", 7),
    ("emulation-faults", 8),
    ("dummy", 9),
    ("bpf-output", 10),
    ("cgroup-switches", 11),
];

const CACHE_TYPES: &[(&[&str], u64)] = &[
    (&["L1-dcache", "l1-d", "l1d", "L1-data"], 0),
    (&["L1-icache", "l1-i", "l1i", "L1-instruction"], 1),
    (&["LLC", "L2"], 2),
    (&["dTLB", "d-tlb", "Data-TLB"], 3),
    (&["iTLB", "i-tlb", "Instruction-TLB"], 4),
    (&["branch", "branches", "bpu", "btb", "bpc"], 5),
    (&["node"], 6),
];
const CACHE_OPS: &[(&[&str], u64)] = &[
    (&["load", "loads", "read"], 0),
    (&["store", "stores", "write"], 1),
    (
        &[
            "prefetch",
            "prefetches",
            "speculative-read",
            "speculative-load",
        ],
        2,
    ),
];
const CACHE_RESULTS: &[(&[&str], u64)] = &[
    (&["refs", "Reference", "ops", "access"], 0),
    (&["misses", "miss"], 1),
];

/// Looks a name up in a name table.
pub fn lookup(table: &[(&str, u64)], name: &str) -> Option<u64> {
    table.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

fn match_alias<'a>(table: &[(&[&str], u64)], s: &'a str) -> Option<(u64, &'a str)> {
    // Longest alias first, so `speculative-read` wins over a shorter prefix.
    let mut best: Option<(usize, u64)> = None;
    for (names, id) in table {
        for n in *names {
            if s.len() >= n.len()
                && s[..n.len()].eq_ignore_ascii_case(n)
                && (s.len() == n.len() || s.as_bytes()[n.len()] == b'-')
                && best.is_none_or(|(l, _)| n.len() > l)
            {
                best = Some((n.len(), *id));
            }
        }
    }
    best.map(|(len, id)| (id, s[len..].strip_prefix('-').unwrap_or(&s[len..])))
}

/// `L1-dcache-load-misses` -> `PERF_TYPE_HW_CACHE` config (`cache | op << 8 | result << 16`).
pub fn cache_config(name: &str) -> Option<u64> {
    let (cache, rest) = match_alias(CACHE_TYPES, name)?;
    if rest.is_empty() {
        return None;
    }
    let (op, rest) = match match_alias(CACHE_OPS, rest) {
        Some((op, rest)) => (op, rest),
        None => (0, rest),
    };
    let (result, rest) = match match_alias(CACHE_RESULTS, rest) {
        Some((r, rest)) => (r, rest),
        None => (0, rest),
    };
    if !rest.is_empty() || name.len() == rest.len() {
        return None;
    }
    Some(cache | (op << 8) | (result << 16))
}

/// `name` or `name:mods`, as perf names an event written without a PMU.
fn with_mods(name: &str, mods: &str) -> String {
    if mods.is_empty() {
        name.to_string()
    } else {
        format!("{name}:{mods}")
    }
}

/// A legacy hardware/cache config for `pmu`: on hybrid parts the PMU type goes into
/// `config[63:32]` (a plain type-0 event would count on `cpu_core` only); on a single core PMU
/// the upper half stays 0, as perf's attr tests expect.
fn legacy_config(config: u64, pmu: &Pmu, hybrid: bool) -> u64 {
    if hybrid {
        config | (u64::from(pmu.type_) << 32)
    } else {
        config
    }
}

struct Ctx<'a> {
    pmus: &'a Pmus,
    input: &'a str,
    /// The one core PMU events without a PMU go to (`--cputype`); `None`: every core PMU.
    only_core: Option<&'a str>,
}

impl<'a> Ctx<'a> {
    fn err(&self, span: Span, msg: impl Into<String>) -> EventError {
        EventError::new(self.input, span, msg)
    }

    fn base(&self, name: String, pmu: Option<&Pmu>, attr: Attr, ev: &EventAst) -> Resolved {
        let topdown = match pmu {
            Some(p) if attr.type_ == p.type_ && p.is_slots_config(attr.config) => {
                TopDownRole::Slots
            }
            Some(p) if attr.type_ == p.type_ && p.is_topdown_metric_config(attr.config) => {
                TopDownRole::Metric
            }
            _ => TopDownRole::None,
        };
        Resolved {
            name,
            pmu: pmu.map(|p| p.name.clone()),
            attr,
            modifiers: ev.modifiers,
            period: None,
            freq: None,
            pmu_cpus: pmu.and_then(|p| p.cpus.clone().or_else(|| p.cpumask.clone())),
            topdown,
            span: ev.span,
            tracepoint: None,
            filter: None,
        }
    }

    fn mod_suffix(&self, ev: &EventAst) -> &'a str {
        ev.mod_span.map_or("", |s| &self.input[s.start..s.end])
    }

    /// Whether `pmu` may take events: every PMU, or with a chosen core PMU, that one and every
    /// PMU that is not a core PMU.
    fn allowed(&self, pmu: &Pmu) -> bool {
        self.only_core
            .is_none_or(|only| !pmu.is_core() || pmu.name == only)
    }

    /// The core PMUs an event written without a PMU goes to, and whether the machine is
    /// hybrid (which decides names and the extended type, with a chosen PMU too).
    fn core_targets(&self) -> (Vec<&'a Pmu>, bool) {
        let all = self.pmus.core_pmus();
        let hybrid = all.len() > 1;
        (
            all.into_iter().filter(|p| self.allowed(p)).collect(),
            hybrid,
        )
    }

    /// Legacy hardware/cache event on every core PMU (or none).
    fn legacy(&self, ev: &EventAst, name: &str, type_: u32, config: u64) -> Vec<Resolved> {
        let (targets, hybrid) = self.core_targets();
        let suffix = self.mod_suffix(ev);
        if targets.is_empty() {
            return vec![self.base(with_mods(name, suffix), None, Attr::new(type_, config), ev)];
        }
        targets
            .into_iter()
            .map(|p| {
                let shown = if hybrid {
                    format!("{}/{name}/{suffix}", p.name)
                } else {
                    with_mods(name, suffix)
                };
                let attr = Attr::new(type_, legacy_config(config, p, hybrid));
                self.base(shown, Some(p), attr, ev)
            })
            .collect()
    }

    fn named(&self, ev: &EventAst, name: &str) -> Result<Vec<Resolved>, EventError> {
        if let Some(id) = lookup(HARDWARE_EVENTS, name) {
            return Ok(self.legacy(ev, name, types::HARDWARE, id));
        }
        let suffix = self.mod_suffix(ev);
        let shown = || with_mods(name, suffix);
        if let Some(id) = lookup(SOFTWARE_EVENTS, name) {
            let sw = self.pmus.pmus.iter().find(|p| p.kind == PmuKind::Software);
            return Ok(vec![self.base(
                shown(),
                sw,
                Attr::new(types::SOFTWARE, id),
                ev,
            )]);
        }
        if let Some(cfg) = cache_config(name) {
            return Ok(self.legacy(ev, name, types::HW_CACHE, cfg));
        }
        let owners: Vec<&Pmu> = self
            .pmus
            .pmus
            .iter()
            .filter(|p| p.aliases.contains_key(name))
            .collect();
        if owners.is_empty() {
            return Err(self.err(
                ev.span,
                format!(
                    "unknown event {name:?}; run 'hrec list' to see the events this machine has"
                ),
            ));
        }
        // Named as on the whole machine: `cpu_atom/topdown-retiring/` with a chosen PMU too.
        let many = owners.len() > 1;
        let others: Vec<&str> = owners.iter().map(|p| p.name.as_str()).collect();
        let owners: Vec<&Pmu> = owners.into_iter().filter(|p| self.allowed(p)).collect();
        if owners.is_empty() {
            return Err(self.err(
                ev.span,
                format!(
                    "{name:?} is an event of {}, not of {} (the core PMU chosen with --cputype)",
                    others.join(", "),
                    self.only_core.unwrap_or_default()
                ),
            ));
        }
        owners
            .into_iter()
            .map(|p| {
                let term = Term {
                    key: name.to_string(),
                    value: None,
                    span: ev.span,
                };
                let shown = if many {
                    format!("{}/{name}/{suffix}", p.name)
                } else {
                    shown()
                };
                self.pmu_terms(ev, p, &[term], shown)
            })
            .collect()
    }

    fn raw(&self, ev: &EventAst, config: u64) -> Result<Vec<Resolved>, EventError> {
        let (targets, hybrid) = self.core_targets();
        if targets.is_empty() {
            return Err(self.err(
                ev.span,
                "raw events need a core PMU (cpu, cpu_core, ...), and this machine has none",
            ));
        }
        let suffix = self.mod_suffix(ev);
        let text = &self.input[ev.span.start..ev.span.end];
        Ok(targets
            .into_iter()
            .map(|p| {
                let shown = if hybrid {
                    format!("{}/r{config:x}/{suffix}", p.name)
                } else {
                    text.to_string()
                };
                self.base(shown, Some(p), Attr::new(p.type_, config), ev)
            })
            .collect())
    }

    fn find_pmu(&self, name: &str) -> Vec<&'a Pmu> {
        if let Some(p) = self.pmus.get(name) {
            return vec![p];
        }
        // perf also accepts a prefix of numbered instances: `uncore_imc` -> uncore_imc_0, _1, ...
        self.pmus
            .pmus
            .iter()
            .filter(|p| {
                p.name
                    .strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix('_'))
                    .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
            })
            .collect()
    }

    fn pmu_event(
        &self,
        ev: &EventAst,
        pmu: &str,
        terms: &[Term],
    ) -> Result<Vec<Resolved>, EventError> {
        let found = self.find_pmu(pmu);
        if found.is_empty() {
            let names: Vec<&str> = self.pmus.pmus.iter().map(|p| p.name.as_str()).collect();
            return Err(self.err(
                Span {
                    start: ev.span.start,
                    end: ev.span.start + pmu.len(),
                },
                format!(
                    "unknown PMU {pmu:?} (this machine has: {})",
                    names.join(", ")
                ),
            ));
        }
        if let (Some(only), Some(other)) = (self.only_core, found.iter().find(|p| !self.allowed(p)))
        {
            return Err(self.err(
                Span {
                    start: ev.span.start,
                    end: ev.span.start + pmu.len(),
                },
                format!(
                    "{} is not {only}, the core PMU chosen with --cputype (leave the PMU out, or drop --cputype)",
                    other.name
                ),
            ));
        }
        let text = &self.input[ev.span.start..ev.span.end];
        found
            .into_iter()
            .map(|p| {
                let shown = if p.name == pmu {
                    text.to_string()
                } else {
                    format!("{}{}", p.name, &text[pmu.len()..])
                };
                self.pmu_terms(ev, p, terms, shown)
            })
            .collect()
    }

    /// Applies `terms` to an event of `pmu`.
    fn pmu_terms(
        &self,
        ev: &EventAst,
        pmu: &Pmu,
        terms: &[Term],
        name: String,
    ) -> Result<Resolved, EventError> {
        let mut attr = Attr::new(pmu.type_, 0);
        let mut explicit_name = None;
        let mut period = None;
        let mut freq = None;
        let mut legacy: Option<(u32, u64)> = None;
        let mut alias_used: Option<&str> = None;
        let mut set_fields: Vec<&str> = Vec::new();
        let mut required: Vec<String> = Vec::new();

        let num = |t: &Term| -> Result<u64, EventError> {
            match &t.value {
                None => Ok(1),
                Some(v) => parse_number(v).ok_or_else(|| {
                    self.err(
                        t.span,
                        format!(
                            "{:?} needs a number (decimal or 0x hex), found {v:?}",
                            t.key
                        ),
                    )
                }),
            }
        };

        for t in terms {
            match t.key.as_str() {
                "name" => {
                    explicit_name = Some(t.value.clone().unwrap_or_default());
                    continue;
                }
                "period" => {
                    period = Some(num(t)?);
                    continue;
                }
                "freq" => {
                    freq = Some(num(t)?);
                    continue;
                }
                "config" | "config1" | "config2" | "config3" => {
                    let v = num(t)?;
                    *word_mut(&mut attr, &t.key) |= v;
                    continue;
                }
                _ => {}
            }
            if let Some(f) = pmu.formats.get(&t.key) {
                let v = num(t)?;
                let bits = f.encode(v).ok_or_else(|| {
                    self.err(
                        t.span,
                        format!(
                            "value {v:#x} does not fit {} ({}:{}, at most {:#x})",
                            t.key,
                            f.word.name(),
                            f.ranges
                                .iter()
                                .map(|(l, h)| if l == h {
                                    l.to_string()
                                } else {
                                    format!("{l}-{h}")
                                })
                                .collect::<Vec<_>>()
                                .join(","),
                            f.max_value()
                        ),
                    )
                })?;
                let w = word_mut(&mut attr, f.word.name());
                *w = (*w & !f.mask()) | bits;
                set_fields.push(&t.key);
                continue;
            }
            if t.value.is_none() {
                let legacy_hit = if pmu.is_core() {
                    lookup(HARDWARE_EVENTS, &t.key)
                        .map(|id| (types::HARDWARE, id))
                        .or_else(|| cache_config(&t.key).map(|c| (types::HW_CACHE, c)))
                } else {
                    None
                };
                if let Some(hit) = legacy_hit {
                    if legacy.is_some() || alias_used.is_some() {
                        return Err(self.err(t.span, "only one event name per pmu/.../"));
                    }
                    legacy = Some(hit);
                    continue;
                }
                if let Some(alias) = pmu.aliases.get(&t.key) {
                    if legacy.is_some() || alias_used.is_some() {
                        return Err(self.err(t.span, "only one event name per pmu/.../"));
                    }
                    alias_used = Some(&alias.name);
                    for at in &alias.terms {
                        match at.value {
                            AliasValue::Required => required.push(at.name.clone()),
                            AliasValue::Num(v) => {
                                let (word, bits, mask) = match pmu.formats.get(&at.name) {
                                    Some(f) => (f.word.name(), f.encode(v), f.mask()),
                                    None if is_config_word(&at.name) => {
                                        (at.name.as_str(), Some(v), u64::MAX)
                                    }
                                    None => {
                                        return Err(self.err(
                                            t.span,
                                            format!(
                                                "sysfs alias {}/{} uses term {:?}, which {} has no format for",
                                                pmu.name, alias.name, at.name, pmu.name
                                            ),
                                        ));
                                    }
                                };
                                let bits = bits.ok_or_else(|| {
                                    self.err(
                                        t.span,
                                        format!(
                                            "sysfs alias {} value {v:#x} does not fit {:?}",
                                            alias.name, at.name
                                        ),
                                    )
                                })?;
                                let w = word_mut(&mut attr, word);
                                *w = (*w & !mask) | bits;
                            }
                        }
                    }
                    continue;
                }
            }
            let mut known: Vec<&str> = pmu.formats.keys().map(String::as_str).collect();
            known.extend([
                "config", "config1", "config2", "config3", "period", "freq", "name",
            ]);
            return Err(self.err(
                t.span,
                format!(
                    "unknown term {:?} for PMU {} (terms: {}; or an event from 'hrec list')",
                    t.key,
                    pmu.name,
                    known.join(", ")
                ),
            ));
        }
        // Alias terms marked `?` must be given by the user; alias values the user set override.
        for r in &required {
            if !set_fields.contains(&r.as_str()) {
                return Err(self.err(
                    ev.span,
                    format!(
                        "event {}/{}/ needs {r}=N (its sysfs alias leaves {r} to the user)",
                        pmu.name,
                        alias_used.unwrap_or("?")
                    ),
                ));
            }
        }
        if let Some((type_, cfg)) = legacy {
            if !set_fields.is_empty() || attr.config != 0 {
                return Err(self.err(
                    ev.span,
                    "a legacy event name cannot be combined with format terms",
                ));
            }
            attr.type_ = type_;
            attr.config = legacy_config(cfg, pmu, self.pmus.is_hybrid());
        }
        let shown = explicit_name.unwrap_or(name);
        let mut r = self.base(shown, Some(pmu), attr, ev);
        r.period = period;
        r.freq = freq;
        Ok(r)
    }

    fn event(&self, ev: &EventAst) -> Result<Vec<Resolved>, EventError> {
        match &ev.kind {
            EventKind::Named(name) => self.named(ev, name),
            EventKind::Raw(c) => self.raw(ev, *c),
            EventKind::Pmu { pmu, terms } => self.pmu_event(ev, pmu, terms),
            EventKind::Tracepoint { system, name } => self.tracepoint(ev, system, name),
        }
    }

    /// `subsys:event` (or globs of either): the tracepoints tracefs has under those names, in
    /// its order ([`crate::trace::Tracefs::resolve`]), on the tracepoint PMU (type 2, the
    /// event's id as config). `cycles:x` reads as a tracepoint to the parser; a known event
    /// name before the colon makes it the bad modifier it is.
    fn tracepoint(
        &self,
        ev: &EventAst,
        system: &str,
        name: &str,
    ) -> Result<Vec<Resolved>, EventError> {
        let is_event = lookup(HARDWARE_EVENTS, system).is_some()
            || lookup(SOFTWARE_EVENTS, system).is_some()
            || cache_config(system).is_some()
            || self
                .pmus
                .pmus
                .iter()
                .any(|p| p.aliases.contains_key(system));
        let colon = ev.span.start + system.len();
        if is_event {
            let (off, msg) = Modifiers::parse(name).err().unwrap_or((
                0,
                format!(
                    "unknown modifier string {name:?} (valid letters: {})",
                    super::parse::MODIFIER_LETTERS
                ),
            ));
            let at = colon + 1 + off;
            return Err(self.err(
                Span {
                    start: at,
                    end: at + 1,
                },
                msg,
            ));
        }
        let events = crate::trace::Tracefs::find(&self.pmus.root)
            .and_then(|fs| fs.resolve(system, name))
            .map_err(|e| self.err(ev.span, e.to_string()))?;
        let pmu = self
            .pmus
            .pmus
            .iter()
            .find(|p| p.kind == PmuKind::Tracepoint);
        Ok(events
            .into_iter()
            .map(|t| {
                let attr = Attr {
                    type_: types::TRACEPOINT,
                    config: t.id,
                    ..Attr::default()
                };
                let mut r = self.base(t.full_name(), pmu, attr, ev);
                r.pmu = Some("tracepoint".into());
                r.tracepoint = Some(std::sync::Arc::new(t));
                r
            })
            .collect())
    }
}

fn is_config_word(name: &str) -> bool {
    matches!(name, "config" | "config1" | "config2" | "config3")
}

fn word_mut<'x>(attr: &'x mut Attr, word: &str) -> &'x mut u64 {
    match word {
        "config1" => &mut attr.config1,
        "config2" => &mut attr.config2,
        "config3" => &mut attr.config3,
        _ => &mut attr.config,
    }
}

/// Sets exclude bits, precise, pinned and exclusive from the modifiers (perf's semantics: once
/// any of `u`/`k`/`h` is given, the levels not given are excluded).
fn apply_modifiers(r: &mut Resolved) {
    let m = r.modifiers;
    let a = &mut r.attr;
    if m.has_level() {
        a.set(flag::EXCLUDE_USER, !m.user);
        a.set(flag::EXCLUDE_KERNEL, !m.kernel);
        a.set(flag::EXCLUDE_HV, !m.hv);
    }
    if m.guest != m.host {
        a.set(flag::EXCLUDE_HOST, m.guest);
        a.set(flag::EXCLUDE_GUEST, m.host);
    }
    a.set(flag::EXCLUDE_IDLE, m.exclude_idle);
    a.set_precise_ip(m.precise);
    a.set(flag::PINNED, m.pinned);
    a.set(flag::EXCLUSIVE, m.exclusive);
}

/// Resolves every `-e` string in order into groups.
pub fn resolve(pmus: &Pmus, inputs: &[String]) -> Result<Resolution, EventError> {
    resolve_inner(pmus, inputs, None)
}

/// [`resolve`] with one core PMU chosen (perf stat's `--cputype`): events written without a
/// PMU go to `core` alone, and an event written for another core PMU is an error. `core`
/// must be one of `pmus`' core PMUs (the caller checks; another name leaves every core event
/// without a PMU to go to).
pub fn resolve_on_core(
    pmus: &Pmus,
    inputs: &[String],
    core: &str,
) -> Result<Resolution, EventError> {
    resolve_inner(pmus, inputs, Some(core))
}

fn resolve_inner(
    pmus: &Pmus,
    inputs: &[String],
    only_core: Option<&str>,
) -> Result<Resolution, EventError> {
    let mut out = Resolution::default();
    for input in inputs {
        let items = super::parse::parse(input)?;
        let ctx = Ctx {
            pmus,
            input,
            only_core,
        };
        for item in &items {
            match item {
                Item::Event(ev) => {
                    for mut r in ctx.event(ev)? {
                        apply_modifiers(&mut r);
                        out.groups.push(Group {
                            sample_read: r.modifiers.sample_read,
                            weak: r.modifiers.weak,
                            events: vec![r],
                            braced: false,
                        });
                    }
                }
                Item::Group {
                    events,
                    modifiers,
                    span,
                } => {
                    let mut members = Vec::new();
                    for ev in events {
                        for mut r in ctx.event(ev)? {
                            r.modifiers = r.modifiers.merged_with_group(modifiers);
                            apply_modifiers(&mut r);
                            members.push(r);
                        }
                    }
                    let groups = split_by_core_pmu(pmus, members, &mut out.warnings, &ctx, *span)?;
                    for events in groups {
                        out.groups.push(Group {
                            events,
                            sample_read: modifiers.sample_read,
                            weak: modifiers.weak,
                            braced: true,
                        });
                    }
                }
            }
        }
    }
    fix_topdown(pmus, &mut out);
    Ok(out)
}

/// Splits a group whose members are on different core PMUs into one group per core PMU.
fn split_by_core_pmu(
    pmus: &Pmus,
    members: Vec<Resolved>,
    warnings: &mut Vec<String>,
    ctx: &Ctx<'_>,
    span: Span,
) -> Result<Vec<Vec<Resolved>>, EventError> {
    let core_of = |r: &Resolved| {
        r.pmu
            .as_deref()
            .filter(|n| pmus.get(n).is_some_and(Pmu::is_core))
            .map(str::to_string)
    };
    let mut order: Vec<String> = Vec::new();
    for r in &members {
        if let Some(p) = core_of(r)
            && !order.contains(&p)
        {
            order.push(p);
        }
    }
    // Non-core PMUs other than software cannot join a core group either way; the kernel
    // decides at open time. Only core splits are ours to make.
    if order.len() <= 1 {
        return Ok(vec![members]);
    }
    // A group made only of legacy/raw events written without a PMU is the same group on every
    // core PMU: duplicating it is what the user meant, so no warning.
    let uniform = members
        .iter()
        .all(|r| members.iter().filter(|o| o.span == r.span).count() == order.len());
    if !uniform {
        warnings.push(format!(
            "WARNING: events were regrouped to match PMUs: the group {:?} has events of {} (a group can only hold one core PMU's events)",
            &ctx.input[span.start..span.end],
            order.join(" and ")
        ));
    }
    let mut groups: Vec<Vec<Resolved>> = vec![Vec::new(); order.len()];
    for r in members {
        let idx = core_of(&r)
            .and_then(|p| order.iter().position(|o| *o == p))
            .unwrap_or(0);
        groups[idx].push(r);
    }
    Ok(groups)
}

/// `a,b,c` for messages.
pub(crate) fn names(events: &[Resolved]) -> String {
    events
        .iter()
        .map(|r| r.name.as_str())
        .collect::<Vec<_>>()
        .join(",")
}
