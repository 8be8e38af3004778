//! `hrec diff`: two recordings' histograms side by side, as `perf diff` compares them.
//!
//! **Matching.** Each recording is aggregated on its own by the `--sort` keys ([`super::hist`],
//! default `dso,sym`), one table per event. An event of OLD is paired with the event of NEW
//! that counts the same thing (same PMU and base event name, modifiers aside, as perf pairs
//! `attr.type`/`attr.config`; several events of one name, as the metric groups' `cycles:P`
//! samplers, pair in order); a row of OLD with the row of NEW whose keys print the same,
//! so a function is found again by its shared object's short name and its symbol name even
//! when a rebuild moved it (perf matches the same way: `hot` at another address is still
//! `hot`). Rows are perf's: every row of OLD (the baseline), plus, unless `baseline_only`,
//! every row only NEW has (perf's "dummy" entries: no baseline share).
//!
//! **What is computed** (for rows present in NEW), from the periods (the event counts the
//! samples stand for), each file's share being of its own total (all samples, or with
//! `--percentage relative` the ones the filters keep):
//!
//! * `delta` / `delta-abs`: NEW's share − OLD's share, in percentage points;
//! * `ratio`: NEW period / OLD period (OLD 0 counts as 1);
//! * `wdiff:W1,W2`: NEW period × W2 − OLD period × W1.
//!
//! The shares are computed as perf computes them, `(period * 100.0) / total` in `f64`, so the
//! rounded numbers and the order of near ties are perf's.
//!
//! **Order** (perf's `-o 1`, the default): rows present in NEW first, ordered by the computed
//! value, largest first (`delta-abs`: by its magnitude; for `ratio` and `wdiff` the rows
//! only NEW has come after the others, having no baseline to divide by), then the rows only
//! OLD has; ties by OLD's period, then by the keys as printed. `-o 0` orders by OLD's period
//! first.
//!
//! **hrec's own columns.** When both recordings carry TopDown group reads for the event,
//! each matched row gets the change of its level-1 shares of slots (retiring, bad
//! speculation, frontend bound, backend bound: NEW − OLD, percentage points of the row's own
//! slots, [`super::topdown`]); when both carry retire latencies, the change of the row's mean
//! retire latency in cycles ([`super::latency`]).
//!
//! **Intel's metrics** (`diff --td-level N`, `--metrics LIST`, from the metric groups of
//! `record --td-level N` / `record -M`): each recording's rows are evaluated on their own, as
//! `report` evaluates them ([`super::metrics`]), and each row both have gets, per chosen
//! metric, NEW's value − OLD's (points for a percentage), `None` where either side has no
//! value (fewer reads of a group the metric needs than the minimum, or an event not
//! recorded), and both sides' bottleneck paths ([`add_metrics`]).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use super::hist::{Row, Table};
use super::latency::LatencyStats;
use super::profile::EventInfo;
use super::topdown::TdCounts;

/// What `-c/--compute` computes for each row of NEW.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compute {
    /// Change of share, percentage points, ordered by value.
    Delta,
    /// Change of share, ordered by magnitude (perf's default).
    #[default]
    DeltaAbs,
    /// NEW period / OLD period.
    Ratio,
    /// NEW period × `w2` − OLD period × `w1`.
    Wdiff {
        /// OLD's weight.
        w1: i64,
        /// NEW's weight.
        w2: i64,
    },
}

impl Compute {
    /// The column header perf prints.
    pub fn header(self) -> &'static str {
        match self {
            Compute::Delta => "Delta",
            Compute::DeltaAbs => "Delta Abs",
            Compute::Ratio => "Ratio",
            Compute::Wdiff { .. } => "Weighted diff",
        }
    }

    /// The column width perf gives it (at least the header's).
    pub fn width(self) -> usize {
        let w = match self {
            Compute::Delta | Compute::DeltaAbs => 7,
            Compute::Ratio | Compute::Wdiff { .. } => 14,
        };
        w.max(self.header().len())
    }

    /// Whether the value is a change of share (defined for rows without a baseline).
    pub fn is_delta(self) -> bool {
        matches!(self, Compute::Delta | Compute::DeltaAbs)
    }
}

impl fmt::Display for Compute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Compute::Delta => f.write_str("delta"),
            Compute::DeltaAbs => f.write_str("delta-abs"),
            Compute::Ratio => f.write_str("ratio"),
            Compute::Wdiff { w1, w2 } => write!(f, "wdiff:{w1},{w2}"),
        }
    }
}

/// A `-c/--compute` value that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadCompute {
    /// Not a method name.
    #[error("unknown compute method {0:?}: use delta, delta-abs, ratio or wdiff:W1,W2")]
    Unknown(String),
    /// `wdiff` without two non-zero integer weights.
    #[error("wdiff needs two non-zero integer weights, as wdiff:W1,W2 (found {0:?})")]
    Weights(String),
    /// An argument to a method that takes none.
    #[error("{0} takes no argument (found {0}:{1})")]
    Extra(String, String),
}

impl FromStr for Compute {
    type Err = BadCompute;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let c = match name {
            "delta" => Compute::Delta,
            "delta-abs" => Compute::DeltaAbs,
            "ratio" => Compute::Ratio,
            "wdiff" => {
                let a = arg.unwrap_or("");
                let w = a
                    .split_once(',')
                    .and_then(|(x, y)| Some((x.trim().parse().ok()?, y.trim().parse().ok()?)));
                return match w {
                    Some((w1, w2)) if w1 != 0 && w2 != 0 => Ok(Compute::Wdiff { w1, w2 }),
                    _ => Err(BadCompute::Weights(a.to_string())),
                };
            }
            other => return Err(BadCompute::Unknown(other.to_string())),
        };
        match arg {
            Some(a) => Err(BadCompute::Extra(name.to_string(), a.to_string())),
            None => Ok(c),
        }
    }
}

/// How to compare.
#[derive(Debug, Clone, Default)]
pub struct DiffOptions {
    /// `-c/--compute`.
    pub compute: Compute,
    /// `-o/--order`: order by OLD's period instead of the computed value.
    pub by_baseline: bool,
    /// `-b/--baseline-only`: only rows both files have (the baseline column then shares of
    /// those rows, as perf prints it).
    pub baseline_only: bool,
    /// `--percent-limit`: hide rows below this share in both files.
    pub percent_limit: f64,
}

/// One file's side of a row.
#[derive(Debug, Clone, Default)]
pub struct Side {
    /// Sum of the samples' periods.
    pub period: u64,
    /// Samples.
    pub samples: u64,
    /// Share of the file's total, percent.
    pub share: f64,
    /// TopDown slots of the row.
    pub td: TdCounts,
    /// Samples with TopDown deltas.
    pub td_samples: u64,
    /// Retire-latency statistics.
    pub latency: Option<LatencyStats>,
}

/// One compared row.
#[derive(Debug, Clone)]
pub struct DiffRow {
    /// The key values, in `--sort` order, as displayed.
    pub key: Vec<String>,
    /// OLD's side (`None`: only NEW has the row).
    pub old: Option<Side>,
    /// NEW's side (`None`: only OLD has the row).
    pub new: Option<Side>,
    /// NEW share − OLD share (percentage points), when NEW has the row.
    pub delta: Option<f64>,
    /// NEW period / OLD period (OLD 0 as 1), when NEW has the row.
    pub ratio: Option<f64>,
    /// NEW period × W2 − OLD period × W1 (with `wdiff`), when NEW has the row.
    pub wdiff: Option<i64>,
    /// Change of the level-1 TopDown shares (percentage points), when both rows have them.
    pub topdown: Option<[f64; 4]>,
    /// Change of the mean retire latency (cycles), when both rows have latencies.
    pub latency: Option<f64>,
    /// Change of Intel's metrics, on the rows of a metric group's table ([`add_metrics`]).
    pub metrics: Option<MetricsDelta>,
}

/// The change of Intel's metrics in a row between the two recordings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricsDelta {
    /// perf's metric name → NEW − OLD, `None` where either side has no value.
    pub deltas: Vec<(String, Option<f64>)>,
    /// OLD's bottleneck path (level 1 first; empty without one or without the row).
    pub old_path: Vec<String>,
    /// NEW's bottleneck path.
    pub new_path: Vec<String>,
}

impl DiffRow {
    /// The OLD period (0 when only NEW has the row).
    pub fn old_period(&self) -> u64 {
        self.old.as_ref().map_or(0, |s| s.period)
    }
}

/// One event compared.
#[derive(Debug, Clone, Default)]
pub struct DiffTable {
    /// OLD's event (the one the table is of).
    pub event: EventInfo,
    /// The index of NEW's matching event, if it has one.
    pub new_event: Option<usize>,
    /// What OLD's shares are of.
    pub old_total: u64,
    /// What NEW's shares are of.
    pub new_total: u64,
    /// OLD's TopDown totals and their samples.
    pub old_td: (TdCounts, u64),
    /// NEW's TopDown totals and their samples.
    pub new_td: (TdCounts, u64),
    /// OLD's retire latencies.
    pub old_latency: Option<LatencyStats>,
    /// NEW's retire latencies.
    pub new_latency: Option<LatencyStats>,
    /// Both files have TopDown values for the event: the TopDown columns are shown.
    pub topdown: bool,
    /// Both files have retire latencies for the event: the latency column is shown.
    pub latency: bool,
    /// Rows in perf's order.
    pub rows: Vec<DiffRow>,
    /// Rows hidden by the percent limit.
    pub hidden: usize,
    /// The metrics of [`DiffRow::metrics`], in order (empty: none on this table).
    pub metrics: Vec<String>,
}

/// The event of `new` that counts what `old` counts: the same name, else the same PMU and
/// base name (`cpu-clock` and `cpu-clock:u` are one event, `cpu_core/cycles/` and
/// `cpu_atom/cycles/` two).
pub fn match_event(old: &EventInfo, new: &[EventInfo]) -> Option<usize> {
    new.iter().position(|e| e.name == old.name).or_else(|| {
        let base = crate::event::base_name(&old.name);
        new.iter()
            .position(|e| e.pmu == old.pmu && crate::event::base_name(&e.name) == base)
    })
}

/// A file's share as perf computes it.
fn share(period: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        (period as f64 * 100.0) / total as f64
    }
}

fn side(r: &Row, total: u64) -> Side {
    Side {
        period: r.period,
        samples: r.samples,
        share: share(r.period, total),
        td: r.td,
        td_samples: r.td_samples,
        latency: r.latency,
    }
}

/// Compares the tables of two recordings (each from [`super::hist::tables`] with the same
/// sort keys): one [`DiffTable`] per event of OLD.
pub fn diff(
    old_events: &[EventInfo],
    old_tables: &[Table],
    new_events: &[EventInfo],
    new_tables: &[Table],
    o: &DiffOptions,
) -> Vec<DiffTable> {
    old_tables
        .iter()
        .map(|ot| {
            let event = old_events[ot.event].clone();
            // Several events of one name (the samplers of `record --td-level N`'s metric
            // groups, all `cycles:P`) pair in order: the k-th of OLD with the k-th of NEW.
            let nth = old_events[..ot.event]
                .iter()
                .filter(|e| e.name == event.name)
                .count();
            let new_event = new_events
                .iter()
                .enumerate()
                .filter(|(_, e)| e.name == event.name)
                .nth(nth)
                .map(|(i, _)| i)
                .or_else(|| match_event(&event, new_events));
            let nt = new_event.and_then(|i| new_tables.iter().find(|t| t.event == i));
            compare(event, new_event, ot, nt, o)
        })
        .collect()
}

fn compare(
    event: EventInfo,
    new_event: Option<usize>,
    ot: &Table,
    nt: Option<&Table>,
    o: &DiffOptions,
) -> DiffTable {
    let empty = Table::default();
    let nt_ = nt.unwrap_or(&empty);
    let (old_total, new_total) = (ot.base_period, nt_.base_period);
    let mut rows: Vec<DiffRow> = ot
        .rows
        .iter()
        .map(|r| DiffRow {
            key: r.key.clone(),
            old: Some(side(r, old_total)),
            new: None,
            delta: None,
            ratio: None,
            wdiff: None,
            topdown: None,
            latency: None,
            metrics: None,
        })
        .collect();
    let index: HashMap<&[String], usize> = ot
        .rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.key.as_slice(), i))
        .collect();
    for r in &nt_.rows {
        let s = side(r, new_total);
        match index.get(r.key.as_slice()) {
            Some(&i) => rows[i].new = Some(s),
            None if !o.baseline_only => rows.push(DiffRow {
                key: r.key.clone(),
                old: None,
                new: Some(s),
                delta: None,
                ratio: None,
                wdiff: None,
                topdown: None,
                latency: None,
                metrics: None,
            }),
            None => {}
        }
    }
    if o.baseline_only {
        rows.retain(|r| r.new.is_some());
    }
    for r in &mut rows {
        compute_row(r, o.compute);
    }
    if o.baseline_only {
        // perf sums OLD's total again over the rows it keeps after computing the deltas, so
        // with -b the baseline column is each row's share of the rows both files have (and
        // of the samples the filters hid); the deltas stay shares of the whole files.
        let kept: u64 = rows.iter().map(DiffRow::old_period).sum();
        let total = kept + (ot.base_period - ot.total_period);
        for s in rows.iter_mut().filter_map(|r| r.old.as_mut()) {
            s.share = share(s.period, total);
        }
    }
    let before = rows.len();
    if o.percent_limit > 0.0 {
        let shown = |s: &Option<Side>| s.as_ref().is_some_and(|s| s.share >= o.percent_limit);
        rows.retain(|r| shown(&r.old) || shown(&r.new));
    }
    let hidden = before - rows.len();
    rows.sort_by(|a, b| order(a, b, o));
    DiffTable {
        event,
        new_event,
        old_total,
        new_total,
        old_td: (ot.td, ot.td_samples),
        new_td: (nt_.td, nt_.td_samples),
        old_latency: ot.latency,
        new_latency: nt_.latency,
        topdown: ot.td_samples > 0 && nt_.td_samples > 0,
        latency: ot.latency.is_some() && nt_.latency.is_some(),
        rows,
        hidden,
        metrics: Vec::new(),
    }
}

/// Adds the change of the metrics `names` (perf's names) to the rows of `t` present in both
/// recordings, from each recording's metrics by row key
/// ([`super::metrics::RowMetricsSetup::rows`]).
pub fn add_metrics(
    t: &mut DiffTable,
    names: &[String],
    old: &super::metrics::MetricRows,
    new: &super::metrics::MetricRows,
) {
    t.metrics = names.to_vec();
    for r in &mut t.rows {
        if r.old.is_none() || r.new.is_none() {
            continue;
        }
        let (a, b) = (old.rows.get(&r.key), new.rows.get(&r.key));
        if a.is_none() && b.is_none() {
            continue;
        }
        let value = |m: Option<&super::metrics::RowMetrics>, n: &str| m.and_then(|m| m.get(n));
        r.metrics = Some(MetricsDelta {
            deltas: names
                .iter()
                .map(|n| {
                    let d = value(b, n).zip(value(a, n)).map(|(y, x)| y - x);
                    (n.clone(), d)
                })
                .collect(),
            old_path: a.map(|m| m.bottleneck.clone()).unwrap_or_default(),
            new_path: b.map(|m| m.bottleneck.clone()).unwrap_or_default(),
        });
    }
}

/// Fills the computed values of a row present in NEW (all of them, as perf precomputes
/// them: `ratio` and `wdiff` of a row only NEW has still order such rows among themselves).
fn compute_row(r: &mut DiffRow, c: Compute) {
    let Some(new) = &r.new else {
        return;
    };
    let (old_share, old_period) = r.old.as_ref().map_or((0.0, 0), |s| (s.share, s.period));
    r.delta = Some(new.share - old_share);
    r.ratio = Some(new.period as f64 / old_period.max(1) as f64);
    if let Compute::Wdiff { w1, w2 } = c {
        r.wdiff = Some(
            (new.period as i64)
                .wrapping_mul(w2)
                .wrapping_sub((old_period as i64).wrapping_mul(w1)),
        );
    }
    if let Some(old) = &r.old {
        if let (Some(a), Some(b)) = (old.td.level1(), new.td.level1()) {
            r.topdown = Some(std::array::from_fn(|i| b[i] - a[i]));
        }
        if let (Some(a), Some(b)) = (&old.latency, &new.latency) {
            r.latency = Some(b.mean - a.mean);
        }
    }
}

/// Larger first, for `f64`s perf compares with `<` and `>` (NaN ties).
fn desc(a: f64, b: f64) -> Ordering {
    b.partial_cmp(&a).unwrap_or(Ordering::Equal)
}

/// The computed value's order of two rows both present in NEW.
fn by_value(a: &DiffRow, b: &DiffRow, c: Compute) -> Ordering {
    let v = |r: &DiffRow| r.delta.unwrap_or(0.0);
    match c {
        Compute::Delta => desc(v(a), v(b)),
        Compute::DeltaAbs => desc(v(a).abs(), v(b).abs()),
        Compute::Ratio => desc(a.ratio.unwrap_or(0.0), b.ratio.unwrap_or(0.0)),
        Compute::Wdiff { .. } => b.wdiff.cmp(&a.wdiff),
    }
}

/// perf's order of the compute column: rows present in NEW first, by value.
fn by_compute(a: &DiffRow, b: &DiffRow, c: Compute) -> Ordering {
    match (a.new.is_some(), b.new.is_some()) {
        (true, true) => by_value(a, b, c),
        (x, y) => y.cmp(&x),
    }
}

fn order(a: &DiffRow, b: &DiffRow, o: &DiffOptions) -> Ordering {
    let baseline = b.old_period().cmp(&a.old_period());
    let keys = || a.key.cmp(&b.key);
    if o.by_baseline {
        return baseline
            .then_with(|| by_compute(a, b, o.compute))
            .then_with(keys);
    }
    let first = match (a.new.is_some(), b.new.is_some()) {
        (true, true) if !o.compute.is_delta() => {
            // Without a baseline there is no ratio or weighted diff to show: such rows last.
            b.old
                .is_some()
                .cmp(&a.old.is_some())
                .then_with(|| by_value(a, b, o.compute))
        }
        _ => by_compute(a, b, o.compute),
    };
    first.then(baseline).then_with(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_changes_need_both_sides() {
        use crate::analysis::metrics::{MetricRows, RowMetrics};
        let row = |k: &str, both: bool| DiffRow {
            key: vec![k.to_string()],
            old: Some(Side::default()),
            new: both.then(Side::default),
            delta: None,
            ratio: None,
            wdiff: None,
            topdown: None,
            latency: None,
            metrics: None,
        };
        let mut t = DiffTable {
            rows: vec![row("f", true), row("g", true), row("h", false)],
            ..DiffTable::default()
        };
        let rm = |l3: Option<f64>, path: &[&str]| RowMetrics {
            metrics: vec![("tma_l3_bound".into(), l3)],
            bottleneck: path.iter().map(|s| s.to_string()).collect(),
            ..RowMetrics::default()
        };
        let mut old = MetricRows::default();
        let mut new = MetricRows::default();
        old.rows
            .insert(vec!["f".into()], rm(Some(30.0), &["a", "b"]));
        new.rows
            .insert(vec!["f".into()], rm(Some(12.5), &["a", "c"]));
        old.rows.insert(vec!["g".into()], rm(None, &[]));
        new.rows.insert(vec!["g".into()], rm(Some(3.0), &[]));
        old.rows.insert(vec!["h".into()], rm(Some(1.0), &[]));
        add_metrics(&mut t, &["tma_l3_bound".to_string()], &old, &new);
        assert_eq!(t.metrics, ["tma_l3_bound"]);
        let f = t.rows[0].metrics.as_ref().unwrap();
        assert_eq!(f.deltas, [("tma_l3_bound".to_string(), Some(-17.5))]);
        assert_eq!((f.old_path.len(), f.new_path[1].as_str()), (2, "c"));
        // Below the minimum on one side: no change.
        let g = t.rows[1].metrics.as_ref().unwrap();
        assert_eq!(g.deltas, [("tma_l3_bound".to_string(), None)]);
        // A row only one file has gets none.
        assert!(t.rows[2].metrics.is_none());
    }

    fn row(key: &str, period: u64) -> Row {
        let mut r = Row::default();
        r.key = vec!["prog".into(), format!("[.] {key}")];
        r.period = period;
        r.samples = period;
        r
    }

    fn table(rows: Vec<Row>) -> Table {
        let total = rows.iter().map(|r| r.period).sum();
        Table {
            event: 0,
            total_period: total,
            base_period: total,
            rows,
            ..Table::default()
        }
    }

    fn ev(name: &str) -> EventInfo {
        EventInfo {
            name: name.into(),
            pmu: Some("software".into()),
            ..EventInfo::default()
        }
    }

    fn names(t: &DiffTable) -> Vec<&str> {
        t.rows.iter().map(|r| r.key[1].as_str()).collect()
    }

    #[test]
    fn compute_methods_parse_as_perf_spells_them() {
        assert_eq!("delta".parse(), Ok(Compute::Delta));
        assert_eq!("delta-abs".parse(), Ok(Compute::DeltaAbs));
        assert_eq!("ratio".parse(), Ok(Compute::Ratio));
        assert_eq!("wdiff:1,2".parse(), Ok(Compute::Wdiff { w1: 1, w2: 2 }));
        assert!(matches!(
            "wdiff:0,2".parse::<Compute>(),
            Err(BadCompute::Weights(_))
        ));
        assert!(matches!(
            "wdiff".parse::<Compute>(),
            Err(BadCompute::Weights(_))
        ));
        assert!(matches!(
            "ratio:3".parse::<Compute>(),
            Err(BadCompute::Extra(..))
        ));
        assert!(matches!(
            "cycles".parse::<Compute>(),
            Err(BadCompute::Unknown(_))
        ));
    }

    #[test]
    fn rows_match_by_keys_and_order_as_perf() {
        // OLD: hot 60, warm 30, gone 10. NEW: hot 20, warm 60, added 20.
        let old = table(vec![row("hot", 60), row("warm", 30), row("gone", 10)]);
        let new = table(vec![row("warm", 60), row("hot", 20), row("added", 20)]);
        let run = |o: &DiffOptions| {
            diff(
                &[ev("cpu-clock:u")],
                std::slice::from_ref(&old),
                &[ev("cpu-clock")],
                std::slice::from_ref(&new),
                o,
            )
            .remove(0)
        };
        let t = run(&DiffOptions::default());
        assert_eq!(t.new_event, Some(0));
        // |delta|: hot -40, warm +30, added +20; gone has no NEW side and comes last.
        assert_eq!(names(&t), ["[.] hot", "[.] warm", "[.] added", "[.] gone"]);
        let hot = &t.rows[0];
        assert_eq!(hot.delta, Some(20.0 - 60.0));
        assert_eq!(hot.ratio, Some(20.0 / 60.0));
        assert!(t.rows[3].delta.is_none() && t.rows[3].new.is_none());
        assert!(t.rows[2].old.is_none());

        let t = run(&DiffOptions {
            compute: Compute::Delta,
            ..DiffOptions::default()
        });
        assert_eq!(names(&t), ["[.] warm", "[.] added", "[.] hot", "[.] gone"]);

        // Ratio: rows without a baseline after the others, whatever their ratio.
        let t = run(&DiffOptions {
            compute: Compute::Ratio,
            ..DiffOptions::default()
        });
        assert_eq!(names(&t), ["[.] warm", "[.] hot", "[.] added", "[.] gone"]);

        let t = run(&DiffOptions {
            compute: Compute::Wdiff { w1: 1, w2: 3 },
            ..DiffOptions::default()
        });
        assert_eq!(t.rows[0].wdiff, Some(60 * 3 - 30));

        // -o 0: by OLD's period; -b: only rows of both files.
        let t = run(&DiffOptions {
            by_baseline: true,
            ..DiffOptions::default()
        });
        assert_eq!(names(&t), ["[.] hot", "[.] warm", "[.] gone", "[.] added"]);
        let t = run(&DiffOptions {
            baseline_only: true,
            ..DiffOptions::default()
        });
        assert_eq!(names(&t), ["[.] hot", "[.] warm"]);

        // --percent-limit keeps a row when either share reaches it.
        let t = run(&DiffOptions {
            percent_limit: 15.0,
            ..DiffOptions::default()
        });
        assert_eq!(names(&t), ["[.] hot", "[.] warm", "[.] added"]);
        assert_eq!(t.hidden, 1);
    }

    #[test]
    fn events_pair_by_pmu_and_base_name() {
        let mut core = ev("cpu_core/cycles/");
        core.pmu = Some("cpu_core".into());
        let mut atom = ev("cpu_atom/cycles/u");
        atom.pmu = Some("cpu_atom".into());
        let mut atom_new = ev("cpu_atom/cycles/");
        atom_new.pmu = Some("cpu_atom".into());
        assert_eq!(match_event(&atom, &[core.clone(), atom_new]), Some(1));
        assert_eq!(match_event(&ev("cpu-clock"), &[core]), None);
    }

    #[test]
    fn topdown_and_latency_change_per_row() {
        let mut a = row("hot", 10);
        a.td = TdCounts::pcore([1000, 600, 100, 100, 200, 0, 0, 0, 0]);
        a.td_samples = 10;
        a.latency = Some(LatencyStats {
            count: 1,
            mean: 10.0,
            ..LatencyStats::default()
        });
        let mut b = a.clone();
        b.td = TdCounts::pcore([1000, 300, 100, 100, 500, 0, 0, 0, 0]);
        b.latency = Some(LatencyStats {
            count: 1,
            mean: 25.0,
            ..LatencyStats::default()
        });
        let mut ot = table(vec![a]);
        ot.td_samples = 10;
        let mut nt = table(vec![b]);
        nt.td_samples = 10;
        let t = diff(
            &[ev("cycles")],
            &[ot],
            &[ev("cycles")],
            &[nt],
            &DiffOptions::default(),
        )
        .remove(0);
        assert!(t.topdown && !t.latency);
        assert_eq!(t.rows[0].topdown, Some([-30.0, 0.0, 0.0, 30.0]));
        assert_eq!(t.rows[0].latency, Some(15.0));
    }
}
