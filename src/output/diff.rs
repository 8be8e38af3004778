//! `hrec diff` output: `perf diff --stdio`'s layout, and its JSON form.
//!
//! The text is perf's, column for column, so people read it without learning anything new:
//! `# Event 'NAME'`, then a header and a dotted line, then one line per row: the baseline
//! share (`%6.2f%%` in 8 columns; blank for a row only NEW has), `Base period` with `-p`, the
//! computed column (`Delta`/`Delta Abs` as `%+4.2f%%`, `Ratio` as `%14.6f`, `Weighted diff` as
//! an integer; blank for a row only OLD has, `N/A` for a ratio or weighted diff without a
//! baseline), `Formula` with `-F`, `Period` with `-p`, then the sort keys. Numeric columns
//! have perf's fixed widths (a wider value pushes the line, as in perf); key columns are as
//! wide as their widest shown value, padded (the symbol in the last column is not), and a
//! key that a filter pins to one value (`-d prog`) is left out, as perf leaves it out.
//!
//! hrec adds, only where both recordings have them, the change of each row's TopDown
//! level-1 shares (`dRetiring`, `dBadSpec`, `dFEBound`, `dBEBound`, percentage points of the
//! row's slots, `*` when either side rests on fewer than
//! [`super::report::MIN_TD_SAMPLES`] group reads) and of its mean retire latency (`dRetLat`,
//! cycles), before the keys, with `#` lines above the header saying what they are.
//!
//! With `--td-level N` / `--metrics LIST`, under each row of the first metric group's table
//! (as `report` puts its tree there) the change of each chosen Intel metric (NEW − OLD, points
//! for a percentage, `-` where either recording has too few group reads or no value), four
//! to a line, and both bottleneck paths when they differ; in JSON every metric group's rows
//! carry `metrics_delta` and `bottleneck` (`old`, `new`, `changed`).

use std::fmt::Write as _;
use std::io::{self, Write};

use serde::Serialize;

use super::report::MIN_TD_SAMPLES;
use crate::analysis::diff::{Compute, DiffRow, DiffTable, MetricsDelta, Side};
use crate::analysis::hist::SortKey;
use crate::analysis::topdown::{L1_LABELS, TdCounts};

/// How to print.
#[derive(Debug, Clone, Default)]
pub struct DiffStyle {
    /// `-c`: the computed column.
    pub compute: Compute,
    /// `-p/--period`: the periods of both files.
    pub period: bool,
    /// `-F/--formula`: how each value was computed.
    pub formula: bool,
    /// `-q`: rows only, no `#` lines.
    pub quiet: bool,
    /// Sort keys a filter pins to one value (`-C`, `-d`, `-S` with one name): perf leaves
    /// their columns out, unless that would leave out every key.
    pub elide: Vec<SortKey>,
}

/// perf's buffer for a cell holds 70 bytes, the last one the terminating zero.
const MAX_CELL: usize = 69;

fn baseline_cell(r: &DiffRow) -> String {
    r.old
        .as_ref()
        .map_or_else(String::new, |s| format!("{:6.2}%", s.share))
}

fn compute_cell(r: &DiffRow, c: Compute) -> String {
    if r.new.is_none() {
        return String::new();
    }
    match c {
        Compute::Delta | Compute::DeltaAbs => format!("{:+4.2}%", r.delta.unwrap_or(0.0)),
        _ if r.old.is_none() => "N/A".into(),
        Compute::Ratio => match r.ratio {
            Some(v) if v > 0.0 => format!("{v:14.6}"),
            _ => String::new(),
        },
        Compute::Wdiff { .. } => match r.wdiff {
            Some(v) if v != 0 => format!("{v:14}"),
            _ => String::new(),
        },
    }
}

fn formula_cell(t: &DiffTable, r: &DiffRow, c: Compute) -> String {
    let Some(new) = &r.new else {
        return String::new();
    };
    let old = r.old_period();
    let mut s = match c {
        Compute::Delta | Compute::DeltaAbs => format!(
            "({} * 100 / {}) - ({old} * 100 / {})",
            new.period, t.new_total, t.old_total
        ),
        Compute::Ratio => format!("{} / {old}", new.period),
        Compute::Wdiff { w1, w2 } => format!("({} * {w2}) - ({old} * {w1})", new.period),
    };
    s.truncate(MAX_CELL);
    s
}

fn td_mark(r: &DiffRow) -> &'static str {
    let few = |s: &Option<Side>| s.as_ref().is_some_and(|s| s.td_samples < MIN_TD_SAMPLES);
    if few(&r.old) || few(&r.new) { "*" } else { "" }
}

/// A column: header, width (at least the header's), right-aligned.
struct Col {
    head: String,
    width: usize,
    cells: Vec<String>,
}

fn col(head: &str, width: usize, cells: Vec<String>) -> Col {
    let width = cells
        .iter()
        .map(|c| c.chars().count())
        .chain([width, head.len()])
        .max()
        .unwrap_or(0);
    Col {
        head: head.to_string(),
        width,
        cells,
    }
}

/// perf's fixed-width column: values wider than it are printed whole, not widening it.
fn fixed(head: &str, width: usize, cells: Vec<String>) -> Col {
    Col {
        head: head.to_string(),
        width: width.max(head.len()),
        cells,
    }
}

fn l1_line(td: &(TdCounts, u64)) -> String {
    match td.0.level1() {
        Some(l1) => L1_LABELS
            .iter()
            .zip(l1)
            .map(|(n, v)| format!("{n} {v:.1}%"))
            .collect::<Vec<_>>()
            .join("  "),
        None => "-".into(),
    }
}

/// The lines under a row with Intel's metrics: the changes four to a line, then the two
/// bottleneck paths when they differ.
fn metric_lines(m: &MetricsDelta) -> Vec<String> {
    let width = m.deltas.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    let mut out: Vec<String> = m
        .deltas
        .chunks(4)
        .map(|c| {
            c.iter()
                .map(|(n, d)| {
                    let v = d.map_or_else(|| "-".to_string(), |d| format!("{d:+.1}"));
                    format!("{n:<width$} {v:>7}")
                })
                .collect::<Vec<_>>()
                .join("   ")
        })
        .collect();
    if m.old_path != m.new_path {
        let path = |p: &[String]| {
            if p.is_empty() {
                "-".to_string()
            } else {
                p.join(" > ")
            }
        };
        out.push(format!("bottleneck old: {}", path(&m.old_path)));
        out.push(format!("bottleneck new: {}", path(&m.new_path)));
    }
    out
}

/// Writes the text comparison.
pub fn text(
    tables: &[DiffTable],
    sort: &[SortKey],
    style: &DiffStyle,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut s = String::new();
    // Intel's metrics under the rows of the first metric group's table only.
    let metric_table = tables.iter().position(|t| !t.metrics.is_empty());
    for (ti, t) in tables.iter().enumerate() {
        let show_metrics = metric_table == Some(ti);
        let c = style.compute;
        let rows = &t.rows;
        let cells = |f: &dyn Fn(&DiffRow) -> String| rows.iter().map(f).collect::<Vec<_>>();
        let mut numeric = vec![fixed("Baseline", 8, cells(&baseline_cell))];
        if style.period {
            numeric.push(fixed(
                "Base period",
                14,
                cells(&|r| r.old_period().to_string()),
            ));
        }
        numeric.push(fixed(c.header(), c.width(), cells(&|r| compute_cell(r, c))));
        if style.formula {
            numeric.push(fixed("Formula", 70, cells(&|r| formula_cell(t, r, c))));
        }
        if style.period {
            numeric.push(fixed(
                "Period",
                14,
                cells(&|r| {
                    r.new
                        .as_ref()
                        .map_or_else(String::new, |n| n.period.to_string())
                }),
            ));
        }
        if t.topdown {
            for (i, h) in ["dRetiring", "dBadSpec", "dFEBound", "dBEBound"]
                .iter()
                .enumerate()
            {
                numeric.push(col(
                    h,
                    0,
                    cells(&|r| {
                        r.topdown
                            .map_or_else(String::new, |d| format!("{:+.1}%{}", d[i], td_mark(r)))
                    }),
                ));
            }
        }
        if t.latency {
            numeric.push(col(
                "dRetLat",
                0,
                cells(&|r| r.latency.map_or_else(String::new, |d| format!("{d:+.1}"))),
            ));
        }
        let all_elided = sort.iter().all(|k| style.elide.contains(k));
        let keys: Vec<Col> = sort
            .iter()
            .enumerate()
            .filter(|(_, key)| all_elided || !style.elide.contains(key))
            .map(|(k, key)| col(key.header(), 0, cells(&|r| r.key[k].clone())))
            .collect();
        // perf pads every key cell to its width but a symbol's.
        let pad_last = sort
            .iter()
            .rfind(|k| all_elided || !style.elide.contains(k))
            .is_some_and(|k| *k != SortKey::Sym);

        if !style.quiet {
            if ti > 0 {
                s.push('\n');
            }
            let _ = writeln!(s, "# Event '{}'", t.event.name);
            let _ = writeln!(s, "#");
            if t.new_event.is_none() {
                let _ = writeln!(
                    s,
                    "# (the new recording has no event '{}': baseline only)",
                    t.event.name
                );
            } else if t.event.is_off_cpu() {
                // Periods are nanoseconds off the CPU: say the totals and their change.
                let _ = writeln!(
                    s,
                    "# (off-CPU time in ns: old {} ns, new {} ns, {:+} ns; -p shows each row's ns, -c wdiff:1,1 its change in ns)",
                    t.old_total,
                    t.new_total,
                    i128::from(t.new_total) - i128::from(t.old_total)
                );
            }
            if t.topdown {
                let _ = writeln!(
                    s,
                    "# TopDown of the old recording ({} group reads):  {}",
                    t.old_td.1,
                    l1_line(&t.old_td)
                );
                let _ = writeln!(
                    s,
                    "# TopDown of the new recording ({} group reads):  {}",
                    t.new_td.1,
                    l1_line(&t.new_td)
                );
                let _ = writeln!(
                    s,
                    "#   (dRetiring..dBEBound: new minus old share of the row's slots, percentage points; * = fewer than {MIN_TD_SAMPLES} group reads in either file)"
                );
            }
            if show_metrics {
                let _ = writeln!(
                    s,
                    "# Intel's metrics under each row: new minus old (points for a percentage; -: fewer group reads than the minimum, or no value, in either file); the bottleneck paths when they differ"
                );
            }
            if let (true, Some(a), Some(b)) = (t.latency, &t.old_latency, &t.new_latency) {
                let _ = writeln!(
                    s,
                    "# Retire latency mean (cycles): old {:.1}, new {:.1}  (dRetLat: new minus old mean of the row)",
                    a.mean, b.mean
                );
            }
            // perf right-aligns the numeric headers and pads the keys' on the right.
            let head: Vec<String> = numeric
                .iter()
                .map(|c| format!("{:>w$}", c.head, w = c.width))
                .chain(keys.iter().map(|c| format!("{:<w$}", c.head, w = c.width)))
                .collect();
            s.push_str("# ");
            s.push_str(&head.join("  "));
            s.push_str("\n# ");
            let dots: Vec<String> = numeric
                .iter()
                .chain(&keys)
                .map(|c| ".".repeat(c.width))
                .collect();
            s.push_str(&dots.join("  "));
            s.push_str("\n#\n");
        }
        for (i, row) in rows.iter().enumerate() {
            s.push_str("  ");
            for c in &numeric {
                let _ = write!(s, "{:>w$}  ", c.cells[i], w = c.width);
            }
            let last = keys.len().saturating_sub(1);
            for (k, c) in keys.iter().enumerate() {
                if k == last && !pad_last {
                    s.push_str(&c.cells[i]);
                } else if k == last {
                    let _ = write!(s, "{:<w$}", c.cells[i], w = c.width);
                } else {
                    let _ = write!(s, "{:<w$}  ", c.cells[i], w = c.width);
                }
            }
            s.push('\n');
            if let (true, Some(m)) = (show_metrics, &row.metrics) {
                for l in metric_lines(m) {
                    let _ = writeln!(s, "            |  {l}");
                }
            }
        }
        if t.hidden > 0 && !style.quiet {
            let _ = writeln!(s, "# {} rows below --percent-limit not shown", t.hidden);
        }
        out.write_all(s.as_bytes())?;
        s.clear();
    }
    Ok(())
}

#[derive(Serialize)]
struct JsonSide {
    share: f64,
    period: u64,
    samples: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    topdown: Option<JsonLevel1>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retire_latency_mean: Option<f64>,
}

#[derive(Serialize)]
struct JsonLevel1 {
    samples: u64,
    level1: serde_json::Map<String, serde_json::Value>,
}

fn level1(td: &TdCounts, samples: u64) -> Option<JsonLevel1> {
    let l1 = td.level1()?;
    Some(JsonLevel1 {
        samples,
        level1: L1_LABELS
            .iter()
            .zip(l1)
            .map(|(n, v)| (n.to_string(), v.into()))
            .collect(),
    })
}

fn json_side(s: &Side) -> JsonSide {
    JsonSide {
        share: s.share,
        period: s.period,
        samples: s.samples,
        topdown: level1(&s.td, s.td_samples),
        retire_latency_mean: s.latency.map(|l| l.mean),
    }
}

#[derive(Serialize)]
struct JsonRow {
    key: serde_json::Map<String, serde_json::Value>,
    baseline: Option<f64>,
    old: Option<JsonSide>,
    new: Option<JsonSide>,
    delta: Option<f64>,
    ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    wdiff: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    topdown_delta: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retire_latency_mean_delta: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics_delta: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bottleneck: Option<JsonPaths>,
}

#[derive(Serialize)]
struct JsonPaths {
    old: Vec<String>,
    new: Vec<String>,
    changed: bool,
}

#[derive(Serialize)]
struct JsonTable {
    event: String,
    pmu: Option<String>,
    matched: bool,
    old_total_period: u64,
    new_total_period: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    old_topdown: Option<JsonLevel1>,
    #[serde(skip_serializing_if = "Option::is_none")]
    new_topdown: Option<JsonLevel1>,
    rows: Vec<JsonRow>,
}

#[derive(Serialize)]
struct JsonDiff<'a> {
    old: &'a str,
    new: &'a str,
    compute: String,
    sort: Vec<&'static str>,
    events: Vec<JsonTable>,
}

/// Writes the rows of [`text`] as JSON: the files, the compute method and sort keys, then per
/// event its totals and its rows in the same order, each with both sides (`null` where a file
/// lacks the row), the baseline share, the delta and ratio (`null` without a NEW side; the
/// ratio also without an OLD one), the weighted diff with `wdiff`, and hrec's TopDown and
/// retire-latency changes where both files have them.
pub fn json(
    tables: &[DiffTable],
    sort: &[SortKey],
    files: (&str, &str),
    style: &DiffStyle,
    out: &mut dyn Write,
) -> io::Result<()> {
    let events = tables
        .iter()
        .map(|t| JsonTable {
            event: t.event.name.clone(),
            pmu: t.event.pmu.clone(),
            matched: t.new_event.is_some(),
            old_total_period: t.old_total,
            new_total_period: t.new_total,
            old_topdown: if t.topdown {
                level1(&t.old_td.0, t.old_td.1)
            } else {
                None
            },
            new_topdown: if t.topdown {
                level1(&t.new_td.0, t.new_td.1)
            } else {
                None
            },
            rows: t
                .rows
                .iter()
                .map(|r| JsonRow {
                    key: sort
                        .iter()
                        .zip(&r.key)
                        .map(|(k, v)| (k.name().to_string(), v.clone().into()))
                        .collect(),
                    baseline: r.old.as_ref().map(|s| s.share),
                    old: r.old.as_ref().map(json_side),
                    new: r.new.as_ref().map(json_side),
                    delta: r.delta,
                    ratio: r.ratio.filter(|_| r.old.is_some()),
                    wdiff: r.wdiff.filter(|_| r.old.is_some()),
                    topdown_delta: r.topdown.map(|d| {
                        L1_LABELS
                            .iter()
                            .zip(d)
                            .map(|(n, v)| (n.to_string(), v.into()))
                            .collect()
                    }),
                    retire_latency_mean_delta: r.latency,
                    metrics_delta: r.metrics.as_ref().map(|m| {
                        m.deltas
                            .iter()
                            .map(|(n, d)| (n.clone(), (*d).into()))
                            .collect()
                    }),
                    bottleneck: r.metrics.as_ref().map(|m| JsonPaths {
                        old: m.old_path.clone(),
                        new: m.new_path.clone(),
                        changed: m.old_path != m.new_path,
                    }),
                })
                .collect(),
        })
        .collect();
    let doc = JsonDiff {
        old: files.0,
        new: files.1,
        compute: style.compute.to_string(),
        sort: sort.iter().map(|k| k.name()).collect(),
        events,
    };
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::from)?;
    writeln!(out)
}
