//! `hrec report` output: the text table (`perf report --stdio` layout, plus TopDown and
//! retire-latency columns), its JSON form, and the retire-latency JSON in the schema of
//! Intel's `<model>_retire_latency.json`.

use std::fmt::Write as _;
use std::io::{self, Write};

use serde::Serialize;

use crate::analysis::callgraph::{CallGraphOptions, CallTree, Mode, Value};
use crate::analysis::hist::{self, HistOptions, Row, SortKey, Table};
use crate::analysis::latency::{LatencyStats, histogram_of};
use crate::analysis::profile::{EventInfo, Profile};
use crate::analysis::topdown::{L1_LABELS, L2_LABELS, TdCounts};

/// Rows with fewer TopDown samples than this are marked: their percentages rest on too few
/// group reads to mean much.
pub const MIN_TD_SAMPLES: u64 = 10;

/// How to print.
#[derive(Debug, Clone)]
pub struct ReportStyle {
    /// `--td-level`: 0 hides TopDown columns, 1 or 2.
    pub td_level: u8,
    /// `--percent-limit`: hide rows below this share of the event.
    pub percent_limit: f64,
    /// `-g`: the call-graph trees under each row and how they print; `None` for none.
    pub callgraph: Option<CallGraphOptions>,
    /// Header lines about the recording (file, command, host).
    pub header: Vec<String>,
    /// `-q`: the rows (and their trees) only, as perf's `-q` prints them: no `#` lines.
    pub quiet: bool,
    /// `-F`: exactly these value columns, in this order, before the keys (perf's output
    /// fields; no TopDown or latency columns then).
    pub fields: Option<Vec<Column>>,
}

/// A value column `-F` can pick (perf's output field names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// `overhead_children`: the row and all it called (`--children`).
    Children,
    /// `overhead`: the row's own share.
    Overhead,
    /// `sample`: samples.
    Samples,
    /// `period`: the event count of the samples.
    Period,
}

impl Column {
    /// perf's field name of a column, `None` for other words (sort keys).
    pub fn from_name(name: &str) -> Option<Column> {
        Some(match name {
            "overhead_children" => Column::Children,
            "overhead" => Column::Overhead,
            "sample" => Column::Samples,
            "period" => Column::Period,
            _ => return None,
        })
    }

    /// perf's header of the column (`Overhead` beside `Children` too, as perf prints it).
    fn header(self) -> &'static str {
        match self {
            Column::Children => "Children",
            Column::Overhead => "Overhead",
            Column::Samples => "Samples",
            Column::Period => "Period",
        }
    }
}

impl Default for ReportStyle {
    fn default() -> Self {
        ReportStyle {
            td_level: 1,
            percent_limit: 0.0,
            callgraph: None,
            header: Vec::new(),
            quiet: false,
            fields: None,
        }
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// The lines about where samples resolved.
pub fn resolution_line(p: &Profile) -> String {
    let total = p.total_samples;
    let mut s = format!(
        "resolved {:.1}% of {total} samples to symbols",
        pct(p.resolution.resolved, total)
    );
    if !p.resolution.unresolved.is_empty() {
        let why: Vec<String> = p
            .resolution
            .unresolved
            .iter()
            .map(|(u, n, dso)| format!("{:.1}% {u} ({dso})", pct(*n, total)))
            .collect();
        let _ = write!(s, "; unresolved: {}", why.join(", "));
    }
    s
}

/// How the `--call-graph dwarf` stacks unwound, when there are any: the share that reached
/// the process root, and why the others stopped.
pub fn unwind_line(p: &Profile) -> Option<String> {
    let u = p.unwind.as_ref()?;
    let mut s = format!(
        "unwound {:.1}% of {} user stacks to the process root",
        pct(u.complete, u.samples),
        u.samples
    );
    let why: Vec<String> = [
        (
            u.stack_cut,
            "ran out of the copied stack (record with --call-graph dwarf,SIZE)",
        ),
        (u.stopped, "stopped where no unwind rule applied"),
        (u.no_regs, "had no user registers"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, why)| format!("{n} ({:.1}%) {why}", pct(*n, u.samples)))
    .collect();
    if !why.is_empty() {
        let _ = write!(s, "; {}", why.join(", "));
    }
    let stops = u.top_stops(3);
    if !stops.is_empty() {
        let list: Vec<String> = stops.iter().map(|(n, k)| format!("{k} ({n})")).collect();
        let _ = write!(s, "; ended in {}", list.join(", "));
    }
    Some(s)
}

/// Why an event has no retire-latency statistics, if it has none.
pub fn no_latency_reason(e: &EventInfo) -> Option<String> {
    if e.has_latency {
        return None;
    }
    Some(if !e.weight_struct {
        "its samples carry no WEIGHT_STRUCT (record with -W)".to_string()
    } else if !e.precise {
        "it is not a precise event, so the retire latency field is always zero (software \
         fallback or no :p)"
            .to_string()
    } else {
        "every latency is zero: this CPU has no Timed PEBS (TPEBS), which Granite Rapids and \
         later provide"
            .to_string()
    })
}

fn td_header_line(label: &str, td: &TdCounts, level: u8) -> Option<String> {
    let l1 = td.level1()?;
    let mut s = format!("# TopDown {label}:");
    for (n, v) in L1_LABELS.iter().zip(l1) {
        let _ = write!(s, "  {n} {v:.1}%");
    }
    if level >= 2
        && let Some(l2) = td.level2()
    {
        s.push_str("\n#   level 2:");
        for (n, v) in L2_LABELS.iter().zip(l2) {
            let _ = write!(s, "  {n} {v:.1}%");
        }
    }
    Some(s)
}

fn lat_line(l: &LatencyStats) -> String {
    format!(
        "{} samples, mean {:.1}, median {}, p90 {}, p99 {}, max {}, total {} cycles",
        l.count, l.mean, l.median, l.p90, l.p99, l.max, l.total
    )
}

/// Columns of one table.
struct Cols<'a> {
    td: u8,
    lat: bool,
    children: bool,
    fields: Option<&'a [Column]>,
}

fn header_cells(c: &Cols, sort: &[SortKey]) -> Vec<String> {
    let mut h = Vec::new();
    if let Some(f) = c.fields {
        h.extend(f.iter().map(|col| col.header().to_string()));
        h.extend(sort.iter().map(|k| k.header().to_string()));
        return h;
    }
    if c.children {
        h.push("Children".to_string());
        h.push("Self".to_string());
    } else {
        h.push("Overhead".to_string());
    }
    h.push("Samples".to_string());
    if c.td >= 1 {
        h.extend(["Retiring", "BadSpec", "FEBound", "BEBound"].map(String::from));
    }
    if c.td >= 2 {
        h.extend(
            [
                "Heavy", "Light", "BrMisp", "MClear", "FetLat", "FetBW", "MemBnd", "CoreBnd",
            ]
            .map(String::from),
        );
    }
    if c.lat {
        h.extend(["RetLat#", "Mean", "Median", "P90", "P99", "Max", "Total"].map(String::from));
    }
    h.extend(sort.iter().map(|k| k.header().to_string()));
    h
}

fn row_cells(c: &Cols, t: &Table, r: &Row) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(f) = c.fields {
        for col in f {
            v.push(match col {
                // perf's N/A: nothing is credited to callers without call chains.
                Column::Children if !c.children => "N/A".to_string(),
                Column::Children => format!("{:.2}%", pct(r.children, t.base_period)),
                Column::Overhead => format!("{:.2}%", pct(r.period, t.base_period)),
                Column::Samples => r.samples.to_string(),
                Column::Period => r.period.to_string(),
            });
        }
        v.extend(r.key.iter().cloned());
        return v;
    }
    if c.children {
        v.push(format!("{:.2}%", pct(r.children, t.base_period)));
    }
    v.push(format!("{:.2}%", pct(r.period, t.base_period)));
    v.push(r.samples.to_string());
    if c.td >= 1 {
        let mark = if r.td_samples < MIN_TD_SAMPLES {
            "*"
        } else {
            ""
        };
        match r.td.level1() {
            Some(l1) => v.extend(l1.iter().map(|x| format!("{x:.1}%{mark}"))),
            None => v.extend(std::iter::repeat_n("-".to_string(), 4)),
        }
        if c.td >= 2 {
            match r.td.level2() {
                Some(l2) => v.extend(l2.iter().map(|x| format!("{x:.1}%{mark}"))),
                None => v.extend(std::iter::repeat_n("-".to_string(), 8)),
            }
        }
    }
    if c.lat {
        match &r.latency {
            Some(l) => v.extend([
                l.count.to_string(),
                format!("{:.1}", l.mean),
                l.median.to_string(),
                l.p90.to_string(),
                l.p99.to_string(),
                l.max.to_string(),
                l.total.to_string(),
            ]),
            None => v.extend(std::iter::repeat_n("-".to_string(), 7)),
        }
    }
    v.extend(r.key.iter().cloned());
    v
}

/// The value of a node as perf prints it: its share of `total`, its period or its samples.
fn node_value(cg: &CallGraphOptions, period: u64, samples: u64, total: u64) -> String {
    match cg.value {
        Value::Percent => format!("{:.2}%", pct(period, total)),
        Value::Period => period.to_string(),
        Value::Count => samples.to_string(),
    }
}

/// perf's margin of call-graph lines: 12 spaces and the extra indent.
fn margin(s: &mut String, extra: usize) {
    s.push_str("            ");
    s.extend(std::iter::repeat_n(' ', extra));
}

/// The tree of one row in perf's `--stdio` layout (`graph`, `fractal`, `flat`, `folded`).
/// `total` is the event's total period, `parent` the row's weight; `skip_first`: the first
/// entry is the row's own symbol (sorting by `sym` first), not printed again.
fn write_tree(
    s: &mut String,
    tree: &CallTree,
    cg: &CallGraphOptions,
    total: u64,
    parent: u64,
    skip_first: bool,
) {
    match cg.mode {
        Mode::None => {}
        Mode::Flat | Mode::Folded => {
            // The chains ending at or above the cutoff; flat shows what runs through the
            // chain's last node, folded what ends there (as perf).
            let min = (total as f64 * cg.min_percent / 100.0).ceil() as u64;
            for (path, n) in tree.chains() {
                if n.self_period < min.max(1) {
                    continue;
                }
                let v = if cg.mode == Mode::Flat {
                    node_value(cg, n.period, n.samples, total)
                } else {
                    node_value(cg, n.self_period, n.self_samples, total)
                };
                if cg.mode == Mode::Flat {
                    let _ = writeln!(s, "           {v}");
                    for name in &path {
                        let _ = writeln!(s, "                {name}");
                    }
                    s.push('\n');
                } else {
                    let _ = writeln!(s, "{v} {}", path.join(";"));
                }
            }
        }
        Mode::Graph | Mode::Fractal => {
            let roots = tree.roots();
            let Some(&first) = roots.first() else { return };
            let start = s.len();
            let mut extra = 0;
            let mut level = &tree.nodes[0];
            let mut total = total;
            // One chain carrying the whole row: printed without a value, perf's `---`.
            let single = &tree.nodes[first as usize];
            if roots.len() == 1 && single.period == parent {
                let mut printed = false;
                for (i, name) in single.names.iter().enumerate() {
                    if i == 0 && skip_first {
                        continue;
                    }
                    if printed {
                        margin(s, extra);
                    } else {
                        margin(s, extra);
                        s.push_str("|\n");
                        margin(s, extra);
                        s.push_str("---");
                        extra += 3;
                        printed = true;
                    }
                    let _ = writeln!(s, "{name}");
                }
                level = single;
            }
            if cg.mode == Mode::Fractal {
                total = parent;
            }
            graph_level(s, tree, cg, &level.children, total, &mut vec![true], extra);
            if s.len() > start {
                s.push('\n');
            }
        }
    }
}

/// One level of a graph: each child's connecting line and entries, then its children.
/// `mask[i]`: the level-`i` line goes on below.
fn graph_level(
    s: &mut String,
    tree: &CallTree,
    cg: &CallGraphOptions,
    children: &[u32],
    total: u64,
    mask: &mut Vec<bool>,
    extra: usize,
) {
    let depth = mask.len();
    let mut remaining = total;
    for (k, &c) in children.iter().enumerate() {
        let node = &tree.nodes[c as usize];
        remaining = remaining.saturating_sub(node.period);
        let old = mask.clone();
        let last = k + 1 == children.len();
        if last && (cg.mode != Mode::Fractal || remaining == 0) {
            mask[depth - 1] = false;
        }
        margin(s, extra);
        for &m in &old {
            s.push_str(if m { "|          " } else { "           " });
        }
        s.push('\n');
        for (i, name) in node.names.iter().enumerate() {
            graph_entry(
                s,
                mask,
                i == 0,
                &node_value(cg, node.period, node.samples, total),
                name,
                extra,
            );
        }
        let sub_total = if cg.mode == Mode::Fractal {
            node.period - node.self_period
        } else {
            total
        };
        mask.push(true);
        graph_level(s, tree, cg, &node.children, sub_total, mask, extra);
        mask.pop();
    }
    // Fractal: what the printed children leave of their parent, perf's `[...]`.
    if cg.mode == Mode::Fractal && remaining > 0 && remaining != total && !children.is_empty() {
        mask[depth - 1] = false;
        let v = node_value(cg, remaining, remaining, total);
        graph_entry(s, mask, true, &v, "[...]", extra);
    }
}

fn graph_entry(s: &mut String, mask: &[bool], first: bool, value: &str, name: &str, extra: usize) {
    margin(s, extra);
    let depth = mask.len();
    for (i, &m) in mask.iter().enumerate() {
        s.push(if m { '|' } else { ' ' });
        if first && i == depth - 1 {
            let _ = write!(s, "--{value}--");
        } else {
            s.push_str("          ");
        }
    }
    let _ = writeln!(s, "{name}");
}

/// The trees of a table's rows when call graphs are shown.
fn trees_of(p: &Profile, t: &Table, o: &HistOptions, style: &ReportStyle) -> Vec<Option<CallTree>> {
    match &style.callgraph {
        Some(cg) if p.callchains && cg.mode != Mode::None => hist::call_trees(p, t, o, cg),
        _ => Vec::new(),
    }
}

/// One table of the text report as lines: what `text` prints for it and what the TUI shows.
#[derive(Debug, Clone, Default)]
pub struct TableLines {
    /// The `#` lines before the column headers (samples, event count, TopDown totals, retire
    /// latency).
    pub preamble: Vec<String>,
    /// The column headers (`# Children      Self  Samples  Command ...`).
    pub head: String,
    /// The dotted rule under them.
    pub dots: String,
    /// The rows above `--percent-limit`, in the report's order.
    pub rows: Vec<RowLines>,
    /// Rows below `--percent-limit`, not shown.
    pub hidden: usize,
}

/// One row of [`TableLines`].
#[derive(Debug, Clone, Default)]
pub struct RowLines {
    /// Index into the table's rows.
    pub row: usize,
    /// The row as the text report prints it.
    pub line: String,
    /// Its call-graph tree's lines (empty without call graphs).
    pub tree: Vec<String>,
}

/// The lines of table `t` as the text report prints them (see [`TableLines`]).
pub fn table_lines(p: &Profile, t: &Table, o: &HistOptions, style: &ReportStyle) -> TableLines {
    let mut s = String::new();
    let e = &p.events[t.event];
    let _ = writeln!(s, "#");
    let _ = writeln!(
        s,
        "# Samples: {} of event '{}'{}",
        t.base_samples,
        e.name,
        e.pmu
            .as_deref()
            .map(|p| format!(" (PMU {p})"))
            .unwrap_or_default()
    );
    let _ = writeln!(s, "# Event count (approx.): {}", t.base_period);
    let td_level = if t.td_samples > 0 { style.td_level } else { 0 };
    if td_level > 0
        && let Some(line) = td_header_line(
            &format!("totals from {} group reads", t.td_samples),
            &t.td,
            td_level,
        )
    {
        let _ = writeln!(s, "{line}");
        let _ = writeln!(
            s,
            "#   (TopDown columns: share of slots{}; * = fewer than {MIN_TD_SAMPLES} group reads in the row)",
            if o.children {
                " of the row and all it called, as Children"
            } else {
                ""
            }
        );
    }
    match (&t.latency, no_latency_reason(e)) {
        (Some(l), _) => {
            let _ = writeln!(s, "# Retire latency (cycles): {}", lat_line(l));
        }
        (None, Some(why)) if e.weight_struct || t.td_samples > 0 => {
            let _ = writeln!(s, "# Retire latency: none, {why}");
        }
        _ => {}
    }
    let cols = Cols {
        td: td_level,
        lat: t.latency.is_some(),
        children: o.children,
        fields: style.fields.as_deref(),
    };
    let head = header_cells(&cols, &o.sort);
    let weight = |r: &Row| if o.children { r.children } else { r.period };
    let trees = trees_of(p, t, o, style);
    let mut rows: Vec<(usize, &Row)> = t
        .rows
        .iter()
        .enumerate()
        .filter(|(_, r)| pct(weight(r), t.base_period) >= style.percent_limit)
        .collect();
    if let Some(f) = &style.fields {
        // perf sorts by the output fields, in their order, largest first.
        let value = |r: &Row, c: Column| match c {
            Column::Children if o.children => r.children,
            Column::Children => 0,
            Column::Overhead | Column::Period => r.period,
            Column::Samples => r.samples,
        };
        rows.sort_by(|a, b| {
            f.iter()
                .map(|&c| value(b.1, c).cmp(&value(a.1, c)))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    }
    let cells: Vec<Vec<String>> = rows.iter().map(|(_, r)| row_cells(&cols, t, r)).collect();
    let numeric = head.len() - o.sort.len();
    let widths: Vec<usize> = (0..head.len())
        .map(|i| {
            cells
                .iter()
                .map(|c| c[i].chars().count())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |s: &mut String, c: &[String], dots: bool| {
        s.push_str(if dots { "# " } else { "  " });
        let last = c.len() - 1;
        for (i, v) in c.iter().enumerate() {
            let w = widths[i];
            if i < numeric {
                let _ = write!(s, "{v:>w$}");
            } else if i == last {
                s.push_str(v);
            } else {
                let _ = write!(s, "{v:<w$}");
            }
            if i != last {
                s.push_str("  ");
            }
        }
        s.push('\n');
    };
    let mut head_line = String::new();
    line(&mut head_line, &head, true);
    let dots: Vec<String> = widths.iter().map(|&w| ".".repeat(w)).collect();
    let mut dots_line = String::new();
    line(&mut dots_line, &dots, true);
    let mut out_rows = Vec::with_capacity(rows.len());
    for (&(ri, r), c) in rows.iter().zip(&cells) {
        let mut l = String::new();
        line(&mut l, c, false);
        let mut tree_text = String::new();
        if let (Some(cg), Some(Some(tree))) = (&style.callgraph, trees.get(ri)) {
            let skip_first = o.sort.first() == Some(&SortKey::Sym);
            write_tree(
                &mut tree_text,
                tree,
                cg,
                t.base_period,
                weight(r),
                skip_first,
            );
        }
        l.pop();
        out_rows.push(RowLines {
            row: ri,
            line: l,
            tree: tree_text.lines().map(str::to_string).collect(),
        });
    }
    head_line.pop();
    dots_line.pop();
    TableLines {
        preamble: s.lines().map(str::to_string).collect(),
        head: head_line,
        dots: dots_line,
        rows: out_rows,
        hidden: t.rows.len() - rows.len(),
    }
}

/// Writes the text report.
pub fn text(
    p: &Profile,
    tables: &[Table],
    o: &HistOptions,
    style: &ReportStyle,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut s = String::new();
    let mut started = false;
    for h in &style.header {
        let _ = writeln!(s, "# {h}");
    }
    let _ = writeln!(s, "# {}", resolution_line(p));
    if let Some(line) = unwind_line(p) {
        let _ = writeln!(s, "# {line}");
    }
    for m in &p.build_id_mismatches {
        let _ = writeln!(
            s,
            "# warning: {m} on this machine is not the file that was recorded (build-id differs); its samples are unresolved"
        );
    }
    if p.multiplexed > 0 {
        let _ = writeln!(
            s,
            "# warning: {} group reads were multiplexed (time_running < time_enabled): TopDown values cover only part of the run",
            p.multiplexed
        );
    }
    if p.filtered_by_time > 0 {
        let _ = writeln!(
            s,
            "# {} samples outside --time were skipped",
            p.filtered_by_time
        );
    }
    for w in &p.warnings {
        let _ = writeln!(s, "# warning: {w}");
    }
    if p.decode_errors.0 > 0 {
        let _ = writeln!(
            s,
            "# warning: {} records could not be decoded and were skipped (first: {})",
            p.decode_errors.0,
            p.decode_errors.1.as_deref().unwrap_or("?")
        );
    }
    for t in tables {
        let tl = table_lines(p, t, o, style);
        for l in &tl.preamble {
            let _ = writeln!(s, "{l}");
        }
        let _ = writeln!(s, "#\n{}\n{}\n#", tl.head, tl.dots);
        for r in &tl.rows {
            let _ = writeln!(s, "{}", r.line);
            for l in &r.tree {
                let _ = writeln!(s, "{l}");
            }
        }
        if tl.hidden > 0 {
            let _ = writeln!(
                s,
                "# {} rows below --percent-limit {} not shown",
                tl.hidden, style.percent_limit
            );
        }
        emit(out, &s, style.quiet, &mut started)?;
        s.clear();
    }
    emit(out, &s, style.quiet, &mut started)
}

/// Writes `s`; with `quiet` without its `#` lines and the blank lines before the first row.
fn emit(out: &mut dyn Write, s: &str, quiet: bool, started: &mut bool) -> io::Result<()> {
    if !quiet {
        return out.write_all(s.as_bytes());
    }
    for line in s.lines() {
        if line.starts_with('#') || (!*started && line.is_empty()) {
            continue;
        }
        *started = true;
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// A JSON object whose fields keep the order they were given in (`--sort` order, TopDown
/// categories in perf's order); a hash map would print them in a different order every run.
struct Ordered<T>(Vec<(&'static str, T)>);

impl<T: Serialize> Serialize for Ordered<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<T> FromIterator<(&'static str, T)> for Ordered<T> {
    fn from_iter<I: IntoIterator<Item = (&'static str, T)>>(it: I) -> Self {
        Ordered(it.into_iter().collect())
    }
}

#[derive(Serialize)]
struct JsonTopDown {
    slots: u64,
    samples: u64,
    level1: Option<Ordered<f64>>,
    level2: Option<Ordered<f64>>,
}

fn json_td(td: &TdCounts, samples: u64) -> Option<JsonTopDown> {
    (samples > 0).then(|| JsonTopDown {
        slots: td.l1_sum(),
        samples,
        level1: td
            .level1()
            .map(|v| L1_LABELS.iter().copied().zip(v).collect()),
        level2: td
            .level2()
            .map(|v| L2_LABELS.iter().copied().zip(v).collect()),
    })
}

#[derive(Serialize)]
struct JsonRow {
    key: Ordered<String>,
    overhead: f64,
    period: u64,
    samples: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    children: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    topdown: Option<JsonTopDown>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retire_latency: Option<LatencyStats>,
    /// The row's call-graph tree (`-g`), first nodes first.
    #[serde(skip_serializing_if = "Option::is_none")]
    callgraph: Option<Vec<JsonNode>>,
}

/// A call-graph node: a run of entries and the chains through it.
#[derive(Serialize)]
struct JsonNode {
    entries: Vec<String>,
    /// Share of the event's total period.
    percent: f64,
    period: u64,
    samples: u64,
    /// Of those, the chains that end here.
    self_period: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    children: Vec<JsonNode>,
}

fn json_nodes(tree: &CallTree, ids: &[u32], total: u64) -> Vec<JsonNode> {
    ids.iter()
        .map(|&i| {
            let n = &tree.nodes[i as usize];
            JsonNode {
                entries: n.names.clone(),
                percent: pct(n.period, total),
                period: n.period,
                samples: n.samples,
                self_period: n.self_period,
                children: json_nodes(tree, &n.children, total),
            }
        })
        .collect()
}

#[derive(Serialize)]
struct JsonTable {
    event: String,
    pmu: Option<String>,
    samples: u64,
    period: u64,
    topdown: Option<JsonTopDown>,
    retire_latency: Option<LatencyStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    no_retire_latency: Option<String>,
    rows: Vec<JsonRow>,
}

#[derive(Serialize)]
struct JsonReport {
    header: Vec<String>,
    samples: u64,
    resolved: u64,
    unresolved: Vec<(String, u64, String)>,
    multiplexed_reads: u64,
    warnings: Vec<String>,
    events: Vec<JsonTable>,
}

/// Writes the report as JSON.
pub fn json(
    p: &Profile,
    tables: &[Table],
    o: &HistOptions,
    style: &ReportStyle,
    out: &mut dyn Write,
) -> io::Result<()> {
    let events = tables
        .iter()
        .map(|t| {
            let e = &p.events[t.event];
            let trees = trees_of(p, t, o, style);
            JsonTable {
                event: e.name.clone(),
                pmu: e.pmu.clone(),
                samples: t.total_samples,
                period: t.total_period,
                topdown: json_td(&t.td, t.td_samples),
                retire_latency: t.latency,
                no_retire_latency: no_latency_reason(e),
                rows: t
                    .rows
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| {
                        let w = if o.children { r.children } else { r.period };
                        pct(w, t.base_period) >= style.percent_limit
                    })
                    .map(|(ri, r)| JsonRow {
                        key: o
                            .sort
                            .iter()
                            .map(|k| k.name())
                            .zip(r.key.iter().cloned())
                            .collect(),
                        overhead: pct(r.period, t.base_period),
                        period: r.period,
                        samples: r.samples,
                        children: o.children.then(|| pct(r.children, t.base_period)),
                        topdown: json_td(&r.td, r.td_samples),
                        retire_latency: r.latency,
                        callgraph: trees
                            .get(ri)
                            .and_then(Option::as_ref)
                            .map(|tree| json_nodes(tree, tree.roots(), t.base_period)),
                    })
                    .collect(),
            }
        })
        .collect();
    let mut warnings = p.warnings.clone();
    warnings.extend(
        p.build_id_mismatches
            .iter()
            .map(|m| format!("{m}: build-id differs from the recorded one")),
    );
    let r = JsonReport {
        header: style.header.clone(),
        samples: p.total_samples,
        resolved: p.resolution.resolved,
        unresolved: p
            .resolution
            .unresolved
            .iter()
            .map(|(u, n, d)| (u.to_string(), *n, d.clone()))
            .collect(),
        multiplexed_reads: p.multiplexed,
        warnings,
        events,
    };
    serde_json::to_writer_pretty(&mut *out, &r)?;
    writeln!(out)
}

/// Intel's retire-latency file name for an event: the name without PMU and modifiers, in
/// upper case (`cpu_core/MEM_INST_RETIRED.STLB_HIT_LOADS/p` → `MEM_INST_RETIRED.STLB_HIT_LOADS`).
pub fn intel_event_name(name: &str) -> String {
    crate::event::base_name(name).to_uppercase()
}

/// `--retire-latency-json`: per-event statistics in the schema of Intel's
/// `<model>_retire_latency.json` (`Platform`, then `Data` mapping each event to `MIN`, `MAX`,
/// `MEAN`), with `COUNT`, `MEDIAN`, `P90`, `P99` and power-of-two `HISTOGRAM` buckets added.
pub fn retire_latency_json(
    p: &Profile,
    tables: &[Table],
    platform: &[(&str, String)],
    out: &mut dyn Write,
) -> io::Result<usize> {
    let mut data = serde_json::Map::new();
    for t in tables {
        let Some(l) = &t.latency else { continue };
        let e = &p.events[t.event];
        let hist: Vec<serde_json::Value> = histogram_of(&t.latencies)
            .into_iter()
            .map(|(le, n)| serde_json::json!({"LE": le, "COUNT": n}))
            .collect();
        data.insert(
            intel_event_name(&e.name),
            serde_json::json!({
                "MIN": l.min,
                "MAX": l.max,
                "MEAN": (l.mean * 100.0).round() / 100.0,
                "COUNT": l.count,
                "MEDIAN": l.median,
                "P90": l.p90,
                "P99": l.p99,
                "HISTOGRAM": hist,
            }),
        );
    }
    let n = data.len();
    let plat: serde_json::Map<String, serde_json::Value> = platform
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.clone())))
        .collect();
    let doc = serde_json::json!({"Platform": plat, "Data": data});
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(n)
}

/// `report -T`: the per-thread counts of `record -s` in perf's layout: `# PID  TID  EVENT...`
/// right-aligned to the widest of each column (at least 3 for the ids), a row per thread.
pub fn thread_counts(
    t: &crate::analysis::threads::ThreadCounts,
    out: &mut dyn Write,
) -> io::Result<()> {
    let digits = |v: i64| v.to_string().len();
    let pid_w = t
        .threads
        .iter()
        .map(|r| digits(r.0.into()))
        .fold(3, usize::max);
    let tid_w = t
        .threads
        .iter()
        .map(|r| digits(r.1.into()))
        .fold(3, usize::max);
    let widths: Vec<usize> = t
        .events
        .iter()
        .enumerate()
        .map(|(i, name)| {
            t.threads
                .iter()
                .map(|r| r.2.get(i).map_or(1, |v| v.to_string().len()))
                .fold(name.len(), usize::max)
        })
        .collect();
    write!(out, "# {:>pid_w$}  {:>tid_w$}", "PID", "TID")?;
    for (name, w) in t.events.iter().zip(&widths) {
        write!(out, "  {name:>w$}")?;
    }
    writeln!(out)?;
    for (pid, tid, values) in &t.threads {
        write!(out, "  {pid:>pid_w$}  {tid:>tid_w$}")?;
        for (v, w) in values.iter().zip(&widths) {
            write!(out, "  {v:>w$}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}
