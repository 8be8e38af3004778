//! How a report prints ([`ReportStyle`]: TopDown level, `--percent-limit`, `-g`, `-q`, the
//! `-F` value [`Column`]s), and the two rules every form of it shares: a share is of the
//! table's base period (0 of an empty one), and a row's TopDown percentages are marked when
//! they rest on fewer than [`MIN_TD_SAMPLES`] group reads.

use crate::analysis::callgraph::CallGraphOptions;

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
    /// Intel's metrics per row (`--td-level 3`, `--metrics`).
    pub metrics: Option<std::sync::Arc<crate::analysis::metrics::MetricReports>>,
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
    pub(super) fn header(self) -> &'static str {
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
            metrics: None,
        }
    }
}

pub(super) fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}
