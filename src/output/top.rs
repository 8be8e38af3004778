//! `hrec top`'s screen, in perf top's `--stdio` layout: a status line (samples per second,
//! the kernel's share, losses, the event and the target), a rule, then the hottest rows of
//! the decayed table ([`crate::analysis::top`]) with their share of it, and, where the
//! samples carried TopDown group reads, each row's level-1 breakdown (shares of its slots),
//! and with `top --metrics LIST` a column per chosen Intel metric (its value on the row's
//! decayed member sums, `-` below the read minimum).

use std::fmt::Write as _;

use crate::analysis::hist::SortKey;
use crate::analysis::top::{Interval, Live};

/// What the status line says about the recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// `4000Hz cpu-clock` or `100003 cpu-clock` (period), as perf top prints it.
    pub event: String,
    /// `all, 2 CPUs`, `target_pid: 42`, `CPUs: 0-1`.
    pub target: String,
}

/// The metric columns of `top --metrics LIST`: the names (perf's) and what gives a row's
/// values in their order ([`Live::metrics`]).
pub struct MetricColumns<'a> {
    /// Column headers, perf's metric names.
    pub names: Vec<String>,
    /// A row's values by its key, in `names`' order (`None`: not computed).
    pub values: &'a dyn Fn(&[String]) -> Vec<Option<f64>>,
}

impl std::fmt::Debug for MetricColumns<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricColumns")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

/// One refresh of the screen: the status line, the rule, the header and at most `entries`
/// rows.
pub fn screen(
    live: &Live,
    iv: &Interval,
    status: &Status,
    sort: &[SortKey],
    entries: usize,
) -> String {
    screen_with_metrics(live, iv, status, sort, entries, None)
}

/// [`screen`] with a column per chosen Intel metric after the TopDown ones.
pub fn screen_with_metrics(
    live: &Live,
    iv: &Interval,
    status: &Status,
    sort: &[SortKey],
    entries: usize,
    metrics: Option<&MetricColumns<'_>>,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "   hrec top: {:7.0} samples/sec  kernel:{:4.1}%  lost: {} [{}],  ({})",
        iv.rate(),
        iv.kernel_pct(),
        iv.lost,
        status.event,
        status.target
    );
    let _ = writeln!(s, "{}", "-".repeat(79));
    s.push('\n');
    let total = live.total_period();
    let rows = live.rows();
    let shown = &rows[..rows.len().min(entries)];
    // Every key column as wide as its widest cell (the last one unpadded).
    let mut widths: Vec<usize> = sort.iter().map(|k| k.header().len()).collect();
    for (key, _) in shown {
        for (w, cell) in widths.iter_mut().zip(key.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    // TopDown level 1 per row where the samples carried group reads (hrec's own columns).
    let td = live.has_topdown();
    let mut header = String::from("# Overhead  Samples");
    let mut rule = String::from("# ........  .......");
    if td {
        header.push_str("  Retiring  BadSpec  FEBound  BEBound");
        rule.push_str("  ........  .......  .......  .......");
    }
    let metric_widths: Vec<usize> = metrics
        .map(|m| m.names.iter().map(|n| n.len().max(6)).collect())
        .unwrap_or_default();
    if let Some(m) = metrics {
        for (n, w) in m.names.iter().zip(&metric_widths) {
            let _ = write!(header, "  {n:>w$}");
            let _ = write!(rule, "  {}", ".".repeat(*w));
        }
    }
    for (i, k) in sort.iter().enumerate() {
        let w = widths[i];
        let last = i + 1 == sort.len();
        header.push_str("  ");
        rule.push_str("  ");
        if last {
            header.push_str(k.header());
        } else {
            let _ = write!(header, "{:<w$}", k.header());
        }
        rule.push_str(&".".repeat(w));
    }
    let _ = writeln!(s, "{header}\n{rule}\n#");
    for (key, w) in shown {
        let pct = if total == 0 {
            0.0
        } else {
            w.period as f64 * 100.0 / total as f64
        };
        let mut line = format!("{pct:9.2}%  {:>7}", w.samples);
        if td {
            match w.td.level1() {
                Some([r, b, f, be]) => {
                    let _ = write!(line, "  {r:7.1}%  {b:6.1}%  {f:6.1}%  {be:6.1}%");
                }
                None => line.push_str(&format!("  {:>8}  {:>7}  {:>7}  {:>7}", "-", "-", "-", "-")),
            }
        }
        if let Some(m) = metrics {
            let values = (m.values)(key);
            for (i, w) in metric_widths.iter().enumerate() {
                match values.get(i).copied().flatten() {
                    Some(v) => {
                        let _ = write!(line, "  {v:>w$.1}");
                    }
                    None => {
                        let _ = write!(line, "  {:>w$}", "-");
                    }
                }
            }
        }
        for (i, cell) in key.iter().enumerate() {
            line.push_str("  ");
            if i + 1 == key.len() {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<width$}", width = widths[i]);
            }
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    if rows.is_empty() {
        s.push_str("(no samples yet)\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn screen_lists_the_hottest_rows_with_their_share() {
        let mut live = Live::new();
        for (dso, sym, p) in [
            ("spin", "[.] spin", 300),
            ("[kernel.kallsyms]", "[k] tick", 100),
        ] {
            live.add_row(&[dso.to_string(), sym.to_string()], p, p / 100);
        }
        let iv = Interval {
            samples: 4,
            kernel_samples: 1,
            lost: 0,
            seconds: 1.0,
        };
        let st = Status {
            event: "4000Hz cpu-clock".into(),
            target: "all, 2 CPUs".into(),
        };
        let s = screen(&live, &iv, &st, &[SortKey::Dso, SortKey::Sym], 10);
        let want = "   hrec top:       4 samples/sec  kernel:25.0%  lost: 0 [4000Hz cpu-clock],  (all, 2 CPUs)\n";
        assert!(s.starts_with(want), "{s}");
        assert!(
            s.contains("# Overhead  Samples  Shared Object      Symbol\n"),
            "{s}"
        );
        assert!(
            s.contains("    75.00%        3  spin               [.] spin\n"),
            "{s}"
        );
        assert!(
            s.contains("    25.00%        1  [kernel.kallsyms]  [k] tick\n"),
            "{s}"
        );
        let one = screen(&live, &iv, &st, &[SortKey::Dso, SortKey::Sym], 1);
        assert!(!one.contains("tick"), "{one}");
        assert!(!s.contains("Retiring"), "{s}");
        // With group reads: level-1 shares per row, `-` for a row without them.
        live.add_topdown(
            &["spin".to_string(), "[.] spin".to_string()],
            &crate::analysis::topdown::TdCounts::pcore([0, 600, 0, 100, 300, 0, 0, 0, 0]),
        );
        let t = screen(&live, &iv, &st, &[SortKey::Dso, SortKey::Sym], 10);
        assert!(
            t.contains("# Overhead  Samples  Retiring  BadSpec  FEBound  BEBound  Shared Object"),
            "{t}"
        );
        assert!(
            t.contains("    75.00%        3     60.0%     0.0%    10.0%    30.0%  spin"),
            "{t}"
        );
        assert!(
            t.contains("    25.00%        1         -        -        -        -  [kernel"),
            "{t}"
        );
        // Intel's metric columns: a value per row, `-` where not computed.
        let values = |k: &[String]| {
            if k[1] == "[.] spin" {
                vec![Some(42.26), None]
            } else {
                vec![None, Some(3.0)]
            }
        };
        let cols = MetricColumns {
            names: vec!["tma_l3_bound".into(), "tma_dram_bound".into()],
            values: &values,
        };
        let m = screen_with_metrics(
            &live,
            &iv,
            &st,
            &[SortKey::Dso, SortKey::Sym],
            10,
            Some(&cols),
        );
        assert!(
            m.contains("BEBound  tma_l3_bound  tma_dram_bound  Shared Object"),
            "{m}"
        );
        assert!(
            m.contains("    30.0%          42.3               -  spin"),
            "{m}"
        );
        assert!(
            m.contains("        -             -             3.0  [kernel"),
            "{m}"
        );
        let empty = screen(&Live::new(), &iv, &st, &[SortKey::Sym], 5);
        assert!(empty.contains("(no samples yet)"), "{empty}");
    }
}
