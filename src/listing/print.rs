//! `hrec list` output: perf 6.1's text layout, or a JSON array in the shape of newer perf's
//! `perf list -j`.
//!
//! Text, as perf prints it to a pipe (no pager, so no blank lines between symbol sections):
//! `  NAME<pad to 50> [Software event]` lines; perfmon events under `topic:` headers as
//! `  name` then the description wrapped at the terminal width, indented by 8, in brackets
//! (`--details` adds the encoding line); metrics under `Metric Groups:` / `Metrics:`.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde_json::{Map, Value, json};

use super::{Catalogue, Event, EventType, Filter, MetricItem, glob_match};

/// How to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Descriptions of perfmon events and metrics (perf's `-d`, on by default).
    pub desc: bool,
    /// `PublicDescription` instead of `BriefDescription` (perf's `-v`).
    pub long_desc: bool,
    /// Encodings and metric formulas (perf's `--details`).
    pub details: bool,
    /// Wrap descriptions before this column (perf: `$COLUMNS`, else 78).
    pub columns: usize,
}

impl Default for Style {
    fn default() -> Self {
        Style {
            desc: true,
            long_desc: false,
            details: false,
            columns: 78,
        }
    }
}

/// What one filter selects, in print order.
#[derive(Debug)]
enum Section<'a> {
    /// `  NAME [type]` lines.
    Symbols(Vec<&'a Event>),
    /// PMU events: sysfs aliases, then perfmon events under topics.
    Pmu(Vec<&'a Event>),
    /// Metrics, by group or flat.
    Metrics {
        groups: bool,
        metrics: bool,
        list: Vec<(String, Vec<&'a MetricItem>)>,
        glob: bool,
    },
}

/// What the filters select, and the notes (one line each) for classes hrec cannot list.
fn select<'a>(cat: &'a Catalogue, filters: &[Filter]) -> (Vec<Section<'a>>, Vec<String>) {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let all = |v: &'a [Event]| v.iter().collect::<Vec<_>>();
    let tracepoints =
        |notes: &mut Vec<String>, pick: &dyn Fn(&Event) -> bool| match &cat.tracepoints {
            Ok(v) => v.iter().filter(|e| pick(e)).collect(),
            Err(why) => {
                notes.push(why.clone());
                Vec::new()
            }
        };
    if filters.is_empty() {
        out.push(Section::Symbols(all(&cat.hardware)));
        out.push(Section::Symbols(all(&cat.software)));
        out.push(Section::Symbols(all(&cat.cache)));
        out.push(Section::Pmu(all(&cat.pmu)));
        out.push(Section::Symbols(all(&cat.raw)));
        out.push(Section::Symbols(
            cat.tracepoints
                .as_ref()
                .map(|v| v.iter().collect())
                .unwrap_or_default(),
        ));
        out.push(Section::Metrics {
            groups: true,
            metrics: true,
            list: by_group(&cat.metrics, |_, _| true),
            glob: false,
        });
        return (out, notes);
    }
    for f in filters {
        match f {
            Filter::Hardware => out.push(Section::Symbols(all(&cat.hardware))),
            Filter::Software => out.push(Section::Symbols(all(&cat.software))),
            Filter::Cache => out.push(Section::Symbols(all(&cat.cache))),
            Filter::Pmu => out.push(Section::Pmu(all(&cat.pmu))),
            Filter::Tracepoint => {
                out.push(Section::Symbols(tracepoints(&mut notes, &|_| true)));
            }
            Filter::Sdt => notes.push(
                "SDT markers are not listed: hrec does not read the build-id cache's probes"
                    .to_string(),
            ),
            Filter::Metric => {
                let mut all: Vec<&MetricItem> = cat.metrics.iter().collect();
                all.sort_by(|a, b| a.name.cmp(&b.name));
                all.dedup_by(|a, b| a.name == b.name);
                out.push(Section::Metrics {
                    groups: false,
                    metrics: true,
                    list: vec![(String::new(), all)],
                    glob: false,
                });
            }
            Filter::MetricGroup => out.push(Section::Metrics {
                groups: true,
                metrics: false,
                list: by_group(&cat.metrics, |_, _| true),
                glob: false,
            }),
            Filter::TracepointGlob { subsystem, event } => {
                let pick = |e: &Event| {
                    e.display.split_once(':').is_some_and(|(s, ev)| {
                        glob_match(subsystem, s, false) && glob_match(event, ev, false)
                    })
                };
                out.push(Section::Symbols(tracepoints(&mut notes, &pick)));
            }
            Filter::Glob(g) => {
                let sym = |v: &'a [Event]| {
                    v.iter()
                        .filter(|e| e.names.iter().any(|n| glob_match(g, n, false)))
                        .collect::<Vec<_>>()
                };
                out.push(Section::Symbols(sym(&cat.hardware)));
                out.push(Section::Symbols(sym(&cat.software)));
                out.push(Section::Symbols(sym(&cat.cache)));
                out.push(Section::Pmu(
                    cat.pmu
                        .iter()
                        .filter(|e| {
                            e.names.iter().any(|n| glob_match(g, n, true))
                                || e.topic.as_deref().is_some_and(|t| glob_match(g, t, true))
                        })
                        .collect(),
                ));
                if let Ok(v) = &cat.tracepoints {
                    out.push(Section::Symbols(
                        v.iter()
                            .filter(|e| {
                                e.display
                                    .split_once(':')
                                    .is_some_and(|(_, ev)| glob_match(g, ev, false))
                            })
                            .collect(),
                    ));
                }
                out.push(Section::Metrics {
                    groups: true,
                    metrics: true,
                    list: by_group(&cat.metrics, |m, group| {
                        glob_match(g, &m.name, true) || glob_match(g, group, true)
                    }),
                    glob: true,
                });
            }
        }
    }
    (out, notes)
}

/// Metrics by group (groups sorted by name, metrics by name), keeping the pairs `keep` accepts.
fn by_group(
    metrics: &[MetricItem],
    keep: impl Fn(&MetricItem, &str) -> bool,
) -> Vec<(String, Vec<&MetricItem>)> {
    let mut groups: BTreeMap<String, Vec<&MetricItem>> = BTreeMap::new();
    for m in metrics {
        for g in &m.groups {
            if keep(m, g) {
                groups.entry(g.clone()).or_default().push(m);
            }
        }
    }
    groups
        .into_iter()
        .map(|(g, mut v)| {
            v.sort_by(|a, b| a.name.cmp(&b.name));
            v.dedup_by(|a, b| a.name == b.name);
            (g, v)
        })
        .collect()
}

/// Writes the list as perf's text. Returns the notes for classes that could not be listed.
pub fn write_text(
    cat: &Catalogue,
    filters: &[Filter],
    style: &Style,
    out: &mut dyn Write,
) -> io::Result<Vec<String>> {
    let (sections, notes) = select(cat, filters);
    for s in sections {
        match s {
            Section::Symbols(v) => {
                for e in v {
                    writeln!(out, "  {:<50} [{}]", e.display, e.kind.label())?;
                }
            }
            Section::Pmu(v) => write_pmu(&v, style, out)?,
            Section::Metrics {
                groups,
                metrics,
                list,
                glob,
            } => write_metrics(groups, metrics, &list, glob, style, out)?,
        }
    }
    Ok(notes)
}

fn write_pmu(events: &[&Event], style: &Style, out: &mut dyn Write) -> io::Result<()> {
    let mut topic: Option<&str> = None;
    let mut described = 0;
    for e in events {
        let desc = if style.long_desc {
            e.long_description.as_ref().or(e.description.as_ref())
        } else {
            e.description.as_ref()
        };
        match desc.filter(|_| style.desc) {
            Some(d) => {
                if described == 0 {
                    writeln!(out)?;
                }
                described += 1;
                if let Some(t) = e.topic.as_deref()
                    && topic != Some(t)
                {
                    let sep = if topic.is_some() { "\n" } else { "" };
                    writeln!(out, "{sep}{t}:")?;
                    topic = Some(t);
                }
                writeln!(out, "  {:<50}", e.display)?;
                write!(out, "{:>8}", "[")?;
                wordwrap(d, 8, style.columns, out)?;
                writeln!(out, "]")?;
                if style.details {
                    let enc = e.encoding.as_deref().unwrap_or("");
                    writeln!(out, "{:8}{enc} ", "")?;
                }
            }
            None => {
                writeln!(
                    out,
                    "  {:<50} [{}]",
                    e.display,
                    EventType::KernelPmu.label()
                )?;
            }
        }
    }
    Ok(())
}

/// perf's `wordwrap`: words separated by one space, a new line indented by `start` before a
/// word that would reach `max`.
pub(super) fn wordwrap(s: &str, start: usize, max: usize, out: &mut dyn Write) -> io::Result<()> {
    let mut column = start;
    for word in s.split([' ', '\t']).filter(|w| !w.is_empty()) {
        let len = word.chars().count();
        if column + len >= max && column > start {
            write!(out, "\n{:start$}", "")?;
            column = start;
        }
        let sep = if column > start { " " } else { "" };
        write!(out, "{sep}{word}")?;
        column += len + sep.len();
    }
    Ok(())
}

fn write_metrics(
    groups: bool,
    metrics: bool,
    list: &[(String, Vec<&MetricItem>)],
    glob: bool,
    style: &Style,
    out: &mut dyn Write,
) -> io::Result<()> {
    let empty = list.iter().all(|(_, v)| v.is_empty());
    if glob && empty {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        if groups { "Metric Groups:" } else { "Metrics:" }
    )?;
    writeln!(out)?;
    let metric = |m: &MetricItem, out: &mut dyn Write| -> io::Result<()> {
        if style.desc {
            writeln!(out, "  {}", m.name)?;
            writeln!(out, "{:>8}{}]", "[", m.description)?;
        } else {
            writeln!(out, "  {}", m.name)?;
        }
        if m.per_function {
            writeln!(out, "{:>8}per function: hrec record -M {}]", "[", m.name)?;
        }
        if style.details {
            writeln!(out, "{:>8}{}]", "[", m.expr)?;
        }
        Ok(())
    };
    for (g, v) in list {
        if v.is_empty() {
            continue;
        }
        if groups {
            writeln!(out, "{g}{}", if metrics { ":" } else { "" })?;
        }
        if metrics {
            for m in v {
                metric(m, out)?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}

/// Writes the selected names as perf's `--raw-dump` does, for shell completions: each name
/// followed by one space, all on one line without a newline (perf 6.1's bytes). Every name
/// the text list shows for an event is written (both of `cpu-cycles OR cycles`, of `cycles
/// OR cpu_core/cycles/`), each once; metric and metric group names follow the events where
/// the filters select them. The raw-syntax hints (`rNNN`) are no names and are left out.
pub fn write_raw_dump(
    cat: &Catalogue,
    filters: &[Filter],
    out: &mut dyn Write,
) -> io::Result<Vec<String>> {
    let (sections, notes) = select(cat, filters);
    let mut seen = std::collections::HashSet::new();
    let mut put = |name: &str, out: &mut dyn Write| -> io::Result<()> {
        if !name.is_empty() && !name.contains(char::is_whitespace) && seen.insert(name.to_string())
        {
            write!(out, "{name} ")?;
        }
        Ok(())
    };
    for s in sections {
        match s {
            Section::Symbols(v) | Section::Pmu(v) => {
                for e in v.iter().filter(|e| e.kind != EventType::RawDescriptor) {
                    for n in e.display.split(" OR ") {
                        put(n.trim(), out)?;
                    }
                }
            }
            Section::Metrics {
                groups,
                metrics,
                list,
                ..
            } => {
                for (g, v) in &list {
                    if groups && !metrics {
                        put(g, out)?;
                        continue;
                    }
                    for m in v {
                        put(&m.name, out)?;
                    }
                }
            }
        }
    }
    Ok(notes)
}

/// Writes the selected events and metrics as one JSON array, one object per event or metric:
/// events with `EventName`, `EventType`, and where known `Unit` (the PMU), `Topic`,
/// `BriefDescription`, `PublicDescription`, `Encoding`; metrics with `MetricName`,
/// `MetricGroup` (`;`-separated), `BriefDescription`, `MetricExpr`, `ScaleUnit`. A metric in
/// several groups is one object.
pub fn write_json(
    cat: &Catalogue,
    filters: &[Filter],
    out: &mut dyn Write,
) -> io::Result<Vec<String>> {
    let (sections, notes) = select(cat, filters);
    let mut items: Vec<Value> = Vec::new();
    let mut seen_metrics: Vec<&str> = Vec::new();
    for s in sections {
        match s {
            Section::Symbols(v) | Section::Pmu(v) => {
                for e in v {
                    if e.kind == EventType::RawDescriptor {
                        continue;
                    }
                    items.push(event_json(e));
                }
            }
            Section::Metrics { list, metrics, .. } => {
                for (g, v) in &list {
                    if !metrics {
                        items.push(json!({ "MetricGroup": g }));
                        continue;
                    }
                    for m in v {
                        if seen_metrics.contains(&m.name.as_str()) {
                            continue;
                        }
                        seen_metrics.push(&m.name);
                        items.push(json!({
                            "MetricName": m.name,
                            "MetricGroup": m.groups.join(";"),
                            "BriefDescription": m.description,
                            "MetricExpr": m.expr,
                            "ScaleUnit": m.unit,
                            "PerFunction": m.per_function,
                        }));
                    }
                }
            }
        }
    }
    serde_json::to_writer_pretty(&mut *out, &items).map_err(io::Error::from)?;
    writeln!(out)?;
    Ok(notes)
}

fn event_json(e: &Event) -> Value {
    let mut m = Map::new();
    let name = e
        .names
        .first()
        .cloned()
        .unwrap_or_else(|| e.display.clone());
    m.insert("EventName".into(), json!(name));
    m.insert("EventType".into(), json!(e.kind.label()));
    if e.names.len() > 1 {
        m.insert("EventAlias".into(), json!(e.names[1..].join(",")));
    }
    let opt = |m: &mut Map<String, Value>, k: &str, v: &Option<String>| {
        if let Some(v) = v {
            m.insert(k.into(), json!(v));
        }
    };
    opt(&mut m, "Unit", &e.pmu);
    opt(&mut m, "Topic", &e.topic);
    opt(&mut m, "BriefDescription", &e.description);
    opt(&mut m, "PublicDescription", &e.long_description);
    opt(&mut m, "Encoding", &e.encoding);
    Value::Object(m)
}
