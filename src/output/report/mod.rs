//! `hrec report` output: the text table (`perf report --stdio` layout, plus TopDown and
//! retire-latency columns), its JSON form, and the retire-latency JSON in the schema of
//! Intel's `<model>_retire_latency.json`.
//!
//! This file prints the text table (`perf report --stdio`'s layout, whose lines the TUI shows
//! too: [`table_lines`]); the others hold what it shares with the JSON form: the style and
//! shares (`style`), the notes on missing data (`notes`), the call-graph trees (`graph`),
//! and the JSON forms themselves (`json`).

mod graph;
mod json;
mod notes;
mod style;

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::analysis::hist::{HistOptions, Row, SortKey, Table};
use crate::analysis::latency::LatencyStats;
use crate::analysis::profile::Profile;
use crate::analysis::topdown::{L1_LABELS, L2Tree, TdCounts};

use graph::{trees_of, write_tree};
use style::pct;

pub use json::{intel_event_name, json, retire_latency_json};
pub use notes::{no_latency_reason, resolution_line, unwind_line};
pub use style::{Column, MIN_TD_SAMPLES, ReportStyle};

fn td_header_line(label: &str, td: &TdCounts, level: u8) -> Option<String> {
    let l1 = td.level1()?;
    let mut s = format!("# TopDown {label}:");
    for (n, v) in L1_LABELS.iter().zip(l1) {
        let _ = write!(s, "  {n} {v:.1}%");
    }
    if let Some(smt) = td.smt_contention() {
        let _ = write!(s, "  SMT Contention {smt:.1}%");
    }
    if level >= 2
        && let Some(l2) = td.level2()
    {
        s.push_str("\n#   level 2:");
        for (n, v) in l2.iter() {
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
    /// AMD's fifth level-1 node, SMT Contention, after the four.
    smt: bool,
    /// The level-2 tree of the table's columns (the E-core tree for an E-core group's table).
    l2: L2Tree,
    lat: bool,
    children: bool,
    fields: Option<&'a [Column]>,
}

fn header_cells(c: &Cols, o: &HistOptions) -> Vec<String> {
    let mut h = Vec::new();
    if let Some(f) = c.fields {
        h.extend(f.iter().map(|col| col.header().to_string()));
        h.extend(o.sort.iter().map(|&k| o.header(k).to_string()));
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
        if c.smt {
            h.push("SMT".to_string());
        }
    }
    if c.td >= 2 {
        h.extend(c.l2.headers().iter().map(|s| s.to_string()));
    }
    if c.lat {
        h.extend(["RetLat#", "Mean", "Median", "P90", "P99", "Max", "Total"].map(String::from));
    }
    h.extend(o.sort.iter().map(|&k| o.header(k).to_string()));
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
        if c.smt {
            v.push(
                r.td.smt_contention()
                    .map_or("-".to_string(), |x| format!("{x:.1}%{mark}")),
            );
        }
        if c.td >= 2 {
            match r.td.level2().filter(|l2| l2.tree() == c.l2) {
                Some(l2) => v.extend(l2.values().iter().map(|x| format!("{x:.1}%{mark}"))),
                None => v.extend(std::iter::repeat_n("-".to_string(), c.l2.headers().len())),
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
    if e.is_off_cpu() {
        let _ = writeln!(
            s,
            "# (off-CPU time in ns: one sample per interval a thread spent off the CPU, under the stack it left with; [preempted]: runnable, waiting for a CPU)"
        );
    }
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
    if style.td_level > 0
        && t.td_samples == 0
        && let Some(why) = &e.no_topdown
    {
        let _ = writeln!(s, "# TopDown: none, {why}");
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
        smt: t.td.smt_contention().is_some(),
        l2: t.td.level2().map_or(L2Tree::PCore, |l| l.tree()),
        lat: t.latency.is_some(),
        children: o.children,
        fields: style.fields.as_deref(),
    };
    let mut head = header_cells(&cols, o);
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
    // A tracepoint field's column is in its own event's table only, right-aligned and at
    // least as wide as perf makes it (a text field its size, a number twice its size and
    // two: room for it in hex).
    let shown: Vec<bool> = o.sort.iter().map(|&k| o.shows(k, e.index)).collect();
    let keep = |i: usize| i < numeric || shown.get(i - numeric).copied().unwrap_or(true);
    let field = |i: usize| {
        i.checked_sub(numeric)
            .and_then(|k| o.sort.get(k))
            .and_then(|k| match k {
                SortKey::TraceField(f) => o.trace_fields.get(usize::from(*f)),
                _ => None,
            })
    };
    let fields: Vec<Option<&crate::analysis::hist::TraceFieldKey>> =
        (0..head.len()).filter(|&i| keep(i)).map(field).collect();
    let drop = |v: &mut Vec<String>| {
        let mut i = 0;
        v.retain(|_| {
            i += 1;
            keep(i - 1)
        });
    };
    // (A row's cells are its table's columns already: [`HistOptions::columns`].)
    drop(&mut head);
    let widths: Vec<usize> = (0..head.len())
        .map(|i| {
            let min = fields[i].map_or(0, |f| {
                if f.text {
                    f.size as usize
                } else {
                    f.size as usize * 2 + 2
                }
            });
            cells
                .iter()
                .map(|c| c[i].chars().count())
                .chain([head[i].len(), min])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |s: &mut String, c: &[String], dots: bool| {
        s.push_str(if dots { "# " } else { "  " });
        let last = c.len() - 1;
        for (i, v) in c.iter().enumerate() {
            let w = widths[i];
            if i < numeric || fields[i].is_some() {
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
        let mut tree: Vec<String> = tree_text.lines().map(str::to_string).collect();
        // Intel's metrics under the rows of the first metric group's table.
        if let Some(m) = style.metrics.as_ref().and_then(|m| m.for_event(t.event))
            && m.events.first() == Some(&t.event)
            && let Some(rm) = m.rows.rows.get(&r.key)
        {
            tree.extend(
                m.tree_lines(rm)
                    .into_iter()
                    .map(|l| format!("            |  {l}")),
            );
        }
        out_rows.push(RowLines {
            row: ri,
            line: l,
            tree,
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
            "# warning: {m} on this machine is not the file that was recorded (another build: rebuilt since, or the file of a container or chroot), and the build-id cache has no copy; its samples are unresolved"
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
    if let Some(o) = &p.off_cpu {
        let _ = writeln!(s, "# {}", o.line());
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
    // An event without samples has no table, as perf report's `--skip-empty` (its default)
    // leaves it out (a tracepoint that did not fire).
    for t in tables.iter().filter(|t| t.base_samples > 0) {
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

/// `report -T`: the per-thread counts of `record -s` in perf's layout: `# PID  TID  EVENT...`
/// right-aligned to the widest of each column (at least 3 for the ids), a row per thread.
/// The per-thread times of an off-CPU recording ([`crate::analysis::threads::thread_times`]),
/// in ms, one row per thread: on-CPU + off-CPU (blocked + preempted) = its span.
pub fn thread_times(
    times: &[crate::analysis::threads::ThreadTime],
    out: &mut dyn Write,
) -> io::Result<()> {
    let ms = |ns: u64| format!("{:.3}", ns as f64 / 1e6);
    writeln!(
        out,
        "# Time per thread from its switch records (ms): on-CPU + off-CPU (blocked + preempted) = from its first switch to its last"
    )?;
    writeln!(
        out,
        "# {:>7}  {:>7}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>9}  COMM",
        "PID", "TID", "on-CPU", "off-CPU", "blocked", "preempted", "span", "intervals"
    )?;
    for t in times {
        writeln!(
            out,
            "  {:>7}  {:>7}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>9}  {}",
            t.pid,
            t.tid,
            ms(t.on_ns),
            ms(t.off_ns()),
            ms(t.blocked_ns),
            ms(t.preempted_ns),
            ms(t.lifetime_ns()),
            t.intervals,
            t.comm
        )?;
    }
    Ok(())
}

/// The per-thread counts of `record -s` (perf's `report -T` table).
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
