//! Flame graphs: folded stacks from a profile, drawn in-process with inferno.
//!
//! **Stacks.** A sample's stack is its thread name, then its callers from the outermost in,
//! then the sampled location; every location is expanded into its inline chain (outer
//! function first), so inlined functions get frames of their own. Unresolved frames are
//! labelled with where they are and why (`[hotspots: binary missing]`, `[unknown:
//! unmapped]`). Without callchains (no `record -g`) the stack is `comm;dso;symbol`, and the
//! subtitle says so.
//!
//! **Weights, with their units** in the SVG's count name: `samples`; the event's count
//! (`period`, named after the event, e.g. `cpu-clock` or `cycles`); or `retire-cycles`, the
//! sum of the retire latencies of the samples that have one. A recording without retire
//! latencies cannot be weighted by them, and the error says why.
//!
//! **TopDown colours.** inferno colours by function name, so each function gets the colour of
//! the dominant level-1 category of the TopDown deltas of every sample with that function on
//! its stack (counted once per sample), lighter as the dominant share falls, and a tooltip
//! with the four shares. Functions without TopDown data are grey.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use inferno::flamegraph::color::{Color, PaletteMap};
use inferno::flamegraph::{self, Direction, FuncFrameAttrsMap};

use crate::analysis::hist::Filters;
use crate::analysis::profile::{Profile, SampleGroup};
use crate::analysis::topdown::{L1_LABELS, TdCounts};
use crate::symbol::symbolizer::Loc;

/// What a frame's width stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weight {
    /// One per sample.
    Samples,
    /// The event count (sum of periods).
    Period,
    /// Sum of retire latencies in cycles (samples with a latency only).
    RetireLatency,
}

/// How frames are coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colors {
    /// inferno's hot palette.
    Default,
    /// Dominant TopDown level-1 category.
    TopDown,
}

/// Flame graph options.
#[derive(Debug, Clone)]
pub struct FlameOptions {
    /// Event name (`None`: the first event).
    pub event: Option<String>,
    /// Width.
    pub weight: Weight,
    /// Colouring.
    pub colors: Colors,
    /// Title (default: "hrec flame graph").
    pub title: Option<String>,
    /// Icicle graph.
    pub inverted: bool,
    /// Frames in time order, not merged.
    pub flame_chart: bool,
    /// Frames narrower than this many pixels are omitted.
    pub min_width: f64,
    /// Sample filters.
    pub filters: Filters,
}

impl Default for FlameOptions {
    fn default() -> Self {
        FlameOptions {
            event: None,
            weight: Weight::Samples,
            colors: Colors::Default,
            title: None,
            inverted: false,
            flame_chart: false,
            min_width: 0.1,
            filters: Filters::default(),
        }
    }
}

/// Why a flame graph cannot be drawn.
#[derive(Debug, thiserror::Error)]
pub enum FlameError {
    /// `--event` names no event of the recording.
    #[error("no event {name:?} in the recording; it has: {have}")]
    NoSuchEvent {
        /// Asked for.
        name: String,
        /// What exists.
        have: String,
    },
    /// Weighting by retire latency without latencies.
    #[error("cannot weight by retire latency: event {event} has none ({why})")]
    NoLatency {
        /// Event.
        event: String,
        /// Why.
        why: String,
    },
    /// No samples to draw.
    #[error("no samples of event {0} to draw (after filters)")]
    Empty(String),
    /// Writing.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Folded stacks of one event and what is needed to draw them.
#[derive(Debug, Clone, Default)]
pub struct Folded {
    /// `(stack, weight)`; merged and sorted unless built for a flame chart (time order).
    pub lines: Vec<(String, u64)>,
    /// Stacks came from callchains.
    pub callchains: bool,
    /// The unit of the weights.
    pub count_name: String,
    /// The event drawn.
    pub event: String,
    /// TopDown deltas per function name (inclusive, once per sample).
    pub topdown: HashMap<String, TdCounts>,
}

/// Picks the event: the one named, or the first.
pub fn pick_event(p: &Profile, name: Option<&str>) -> Result<usize, FlameError> {
    let have = || {
        p.events
            .iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match name {
        None => Ok(0),
        Some(n) => p
            .events
            .iter()
            .position(|e| e.name == n || e.name.trim_end_matches('/') == n)
            .ok_or_else(|| FlameError::NoSuchEvent {
                name: n.to_string(),
                have: have(),
            }),
    }
}

/// A frame name as folded stacks carry it: `;` separates frames (so it becomes `:`) and a
/// newline ends a stack (so it becomes a space). Nothing else changes: names come whole from
/// the name pipeline ([`crate::symbol::names`]), without parameter lists, and a function type
/// or lambda inside a template argument stays (stackcollapse-perf cuts names at the first
/// `(`, which loses those).
fn clean(s: &str) -> String {
    s.replace(';', ":").replace('\n', " ")
}

/// A thread name as the first frame: spaces become `_`, as stackcollapse-perf writes it.
fn clean_comm(s: &str) -> String {
    clean(s).replace(' ', "_")
}

fn frame_names(l: &Loc, leaf_only: bool, out: &mut Vec<String>) {
    if l.sym.is_none() {
        let why = l.unresolved.map(|u| u.to_string()).unwrap_or_default();
        let dso = l.dso.trim_start_matches('[').trim_end_matches(']');
        out.push(clean(&format!("[{dso}: {why}]")));
        return;
    }
    // Outer function first: the inline chain is innermost first. Expanded, every frame is
    // named from DWARF, the function itself too (perf's names in an address's inline chain),
    // else by its symbol-table name.
    let n = l.frames.len();
    if !leaf_only && n > 0 {
        out.push(clean(
            &l.dwarf_name().map_or_else(|| l.sym_name(), str::to_string),
        ));
        for f in l.frames[..n - 1].iter().rev() {
            out.push(clean(f.function.as_deref().unwrap_or("??")));
        }
    } else {
        out.push(clean(&l.sym_name()));
    }
}

/// Builds the folded stacks of one event.
pub fn fold(p: &Profile, event: usize, o: &FlameOptions) -> Result<Folded, FlameError> {
    let e = &p.events[event];
    let count_name = match o.weight {
        Weight::Samples => "samples".to_string(),
        Weight::Period => e.name.clone(),
        Weight::RetireLatency => {
            if !e.has_latency {
                let why = crate::output::report::no_latency_reason(e).unwrap_or_default();
                return Err(FlameError::NoLatency {
                    event: e.name.clone(),
                    why,
                });
            }
            "retire-cycles".to_string()
        }
    };
    let mut merged: HashMap<String, u64> = HashMap::new();
    let mut ordered: Vec<(String, u64)> = Vec::new();
    let mut topdown: HashMap<String, TdCounts> = HashMap::new();
    let mut frames: Vec<String> = Vec::new();
    let mut stack = String::new();
    // The stack of each kept group, built once.
    let mut stacks: Vec<Option<String>> = vec![None; p.groups.len()];
    for (gi, s) in p.groups.iter().enumerate() {
        if usize::from(s.event) != event || !o.filters.keep(p, s) {
            continue;
        }
        let w = match o.weight {
            Weight::Samples => s.samples,
            Weight::Period => s.period,
            Weight::RetireLatency => match p.latency(s) {
                Some(l) => l.sum(),
                None => continue,
            },
        };
        frames.clear();
        stack_of(p, s, &mut frames);
        if let Some(td) = p.td(s) {
            let mut seen: Vec<&str> = Vec::new();
            for f in &frames[1..] {
                if !seen.contains(&f.as_str()) {
                    seen.push(f);
                    topdown.entry(f.clone()).or_default().add(td);
                }
            }
        }
        stack.clear();
        stack.push_str(&frames.join(";"));
        if o.flame_chart {
            stacks[gi] = Some(stack.clone());
        } else if w > 0 {
            *merged.entry(stack.clone()).or_default() += w;
        }
    }
    if o.flame_chart {
        // Consecutive samples with the same stack merge; samples of other events, filtered
        // out or of no weight do not break a run.
        for r in &p.timeline {
            let Some(stack) = &stacks[r.group as usize] else {
                continue;
            };
            let w = match o.weight {
                Weight::Samples => r.samples,
                Weight::Period => r.period,
                Weight::RetireLatency => r.latency,
            };
            if w == 0 {
                continue;
            }
            match ordered.last_mut() {
                Some((last, n)) if last == stack => *n += w,
                _ => ordered.push((stack.clone(), w)),
            }
        }
    }
    let lines = if o.flame_chart {
        ordered
    } else {
        let mut v: Vec<(String, u64)> = merged.into_iter().collect();
        v.sort();
        v
    };
    if lines.is_empty() {
        return Err(FlameError::Empty(e.name.clone()));
    }
    Ok(Folded {
        lines,
        callchains: p.callchains,
        count_name,
        event: e.name.clone(),
        topdown,
    })
}

/// The frames of a sample, root first: comm, callers (outermost first), the sampled location.
fn stack_of(p: &Profile, s: &SampleGroup, out: &mut Vec<String>) {
    out.push(clean_comm(&p.comms[s.comm as usize]));
    if p.callchains {
        for &c in p.callers(s).iter().rev() {
            frame_names(&p.locs[c as usize], false, out);
        }
        frame_names(&p.locs[s.leaf as usize], false, out);
    } else {
        let l = &p.locs[s.leaf as usize];
        out.push(clean(&l.dso));
        frame_names(l, true, out);
    }
}

/// Writes folded lines (`a;b;c COUNT`).
pub fn write_folded(f: &Folded, out: &mut dyn Write) -> io::Result<()> {
    let mut s = String::new();
    for (stack, n) in &f.lines {
        let _ = writeln!(s, "{stack} {n}");
    }
    out.write_all(s.as_bytes())
}

/// The colour of a TopDown category (index into [`L1_LABELS`]) at a dominant share.
pub fn topdown_color(category: usize, share: f64) -> Color {
    let base: [(u8, u8, u8); 4] = [
        (46, 139, 87),   // Retiring: green
        (214, 39, 40),   // Bad Speculation: red
        (148, 103, 189), // Frontend Bound: purple
        (31, 119, 180),  // Backend Bound: blue
    ];
    let (r, g, b) = base[category.min(3)];
    // Full colour at 100%, half-way to white at the lowest possible dominant share (25%).
    let t = 0.5 + 0.5 * ((share - 25.0) / 75.0).clamp(0.0, 1.0);
    let mix = |c: u8| (255.0 - (255.0 - f64::from(c)) * t).round() as u8;
    Color {
        r: mix(r),
        g: mix(g),
        b: mix(b),
    }
}

/// The tooltip text of a function with TopDown data.
pub fn topdown_title(name: &str, td: &TdCounts) -> Option<String> {
    let l1 = td.level1()?;
    let parts: Vec<String> = L1_LABELS
        .iter()
        .zip(l1)
        .map(|(n, v)| format!("{n} {v:.1}%"))
        .collect();
    Some(format!("{name}: TopDown {}", parts.join(", ")))
}

/// Draws an SVG.
pub fn svg(
    f: &Folded,
    o: &FlameOptions,
    subtitle: Option<String>,
    out: &mut dyn Write,
) -> Result<(), FlameError> {
    let mut palette = PaletteMap::default();
    let mut attrs = String::new();
    let mut notes = Vec::new();
    if !f.callchains {
        notes.push(
            "no callchains in the recording (record with -g): stacks are comm;dso;symbol"
                .to_string(),
        );
    }
    if o.colors == Colors::TopDown {
        let mut grey = Vec::new();
        let names: std::collections::BTreeSet<&str> =
            f.lines.iter().flat_map(|(s, _)| s.split(';')).collect();
        for name in names {
            match f
                .topdown
                .get(name)
                .and_then(|td| Some((td, td.dominant()?)))
            {
                Some((td, (cat, share))) => {
                    palette.insert(name, topdown_color(cat, share));
                    if let Some(t) = topdown_title(name, td) {
                        let _ = writeln!(attrs, "{name}\ttitle={t}");
                    }
                }
                None => grey.push(name),
            }
        }
        for name in grey {
            palette.insert(
                name,
                Color {
                    r: 190,
                    g: 190,
                    b: 190,
                },
            );
        }
        notes.push(
            "colours: Retiring green, Bad Speculation red, Frontend Bound purple, Backend Bound blue (lighter = less dominant), grey = no TopDown data"
                .to_string(),
        );
    }
    notes.extend(subtitle);
    let mut opts = flamegraph::Options::default();
    opts.title = o
        .title
        .clone()
        .unwrap_or_else(|| "hrec flame graph".to_string());
    opts.subtitle = Some(
        format!("{}; {}", f.event, notes.join("; "))
            .trim_end_matches("; ")
            .to_string(),
    );
    opts.count_name = f.count_name.clone();
    opts.min_width = o.min_width;
    opts.flame_chart = o.flame_chart;
    opts.deterministic = true;
    if o.inverted {
        opts.direction = Direction::Inverted;
    }
    if o.colors == Colors::TopDown {
        opts.palette_map = Some(&mut palette);
        opts.func_frameattrs = FuncFrameAttrsMap::from_reader(attrs.as_bytes())?;
    }
    let lines: Vec<String> = f.lines.iter().map(|(s, n)| format!("{s} {n}")).collect();
    flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), out)?;
    Ok(())
}

/// Draws a differential flame graph: `base` and `new` normalised to the same total, red where
/// `new` grew, blue where it shrank.
pub fn diff_svg(
    base: &Folded,
    new: &Folded,
    o: &FlameOptions,
    out: &mut dyn Write,
) -> Result<(), FlameError> {
    let mut a = Vec::new();
    write_folded(base, &mut a)?;
    let mut b = Vec::new();
    write_folded(new, &mut b)?;
    let mut lines = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options {
            normalize: true,
            strip_hex: false,
        },
        a.as_slice(),
        b.as_slice(),
        &mut lines,
    )?;
    let text = String::from_utf8_lossy(&lines).into_owned();
    let mut opts = flamegraph::Options::default();
    opts.title = o
        .title
        .clone()
        .unwrap_or_else(|| "hrec differential flame graph".to_string());
    opts.subtitle = Some(format!(
        "{}: widths are NEW, red = grew vs BASE, blue = shrank (normalised)",
        new.event
    ));
    opts.count_name = new.count_name.clone();
    opts.min_width = o.min_width;
    opts.deterministic = true;
    if o.inverted {
        opts.direction = Direction::Inverted;
    }
    flamegraph::from_lines(&mut opts, text.lines(), out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_names_are_kept_whole() {
        // Names come without parameter lists from the name pipeline; what looks like one
        // (a function type or a lambda in a template argument) is part of the name.
        let lambda = "std::_Function_handler<unsigned long (unsigned long), ledger::Book::Book()::{lambda(unsigned long)#2}>::_M_invoke";
        assert_eq!(clean(lambda), lambda);
        assert_eq!(
            clean("(anonymous namespace)::f(int)"),
            "(anonymous namespace)::f(int)"
        );
        assert_eq!(clean("net/http.(*Client).Do"), "net/http.(*Client).Do");
        assert_eq!(clean("a;b"), "a:b");
        assert_eq!(clean("a\nb"), "a b");
        assert_eq!(clean_comm("my worker"), "my_worker");
    }
}
