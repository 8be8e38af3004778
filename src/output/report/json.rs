//! The report as JSON (`--json`: each event's table with its rows' keys in `--sort` order,
//! shares, TopDown breakdowns, retire-latency statistics and call-graph trees, Intel's
//! metrics per row with the bottleneck path and each metric group's reads
//! ([`crate::analysis::metrics`]: on the rows of every metric group's table, the same per
//! row key), and why an event has no retire latencies or, where its group asks for TopDown,
//! no TopDown), and
//! `--retire-latency-json`: per-event statistics in the schema of Intel's
//! `<model>_retire_latency.json`, which `hrec stat --tpebs-from` reads back.

use std::io::{self, Write};

use serde::Serialize;

use crate::analysis::callgraph::CallTree;
use crate::analysis::hist::{HistOptions, Table};
use crate::analysis::latency::{LatencyStats, histogram_of};
use crate::analysis::metrics::{GroupReads, RetireLatencyTerm, RowMetrics};
use crate::analysis::profile::Profile;
use crate::analysis::topdown::{L1_LABELS, TdCounts};
use std::collections::BTreeMap;

use super::graph::trees_of;
use super::notes::no_latency_reason;
use super::style::{ReportStyle, pct};

/// categories in perf's order); a hash map would print them in a different order every run.
struct Ordered<T>(Vec<(std::borrow::Cow<'static, str>, T)>);

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

impl<K: Into<std::borrow::Cow<'static, str>>, T> FromIterator<(K, T)> for Ordered<T> {
    fn from_iter<I: IntoIterator<Item = (K, T)>>(it: I) -> Self {
        Ordered(it.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

/// Metric values as a JSON object in the metrics' order.
struct NamedValues(Vec<(String, Option<f64>)>);

impl Serialize for NamedValues {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, &v.map(|v| (v * 1000.0).round() / 1000.0))?;
        }
        m.end()
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
        slots: td.slots(),
        samples,
        // AMD's fifth node after Intel's four.
        level1: td.level1().map(|v| {
            L1_LABELS
                .iter()
                .copied()
                .zip(v)
                .chain(td.smt_contention().map(|s| ("SMT Contention", s)))
                .collect()
        }),
        level2: td.level2().map(|v| v.iter().collect()),
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
    /// Intel's metrics (`--td-level 3`, `--metrics`): perf's name → value, `null` when not
    /// computed.
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics: Option<NamedValues>,
    /// The bottleneck path, level 1 first.
    #[serde(skip_serializing_if = "Option::is_none")]
    bottleneck: Option<Vec<String>>,
    /// Each metric group's reads behind the row.
    #[serde(skip_serializing_if = "Option::is_none")]
    metric_groups: Option<Vec<GroupReads>>,
    /// The `:R` terms the metrics used, and where each came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    retire_latency_terms: Option<BTreeMap<String, RetireLatencyTerm>>,
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
    /// Why a group that asks for TopDown has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    no_topdown: Option<String>,
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
            let metrics = style.metrics.as_ref().and_then(|m| m.for_event(t.event));
            // The names of the table's columns, once (a row's key holds these cells).
            let names: Vec<&str> = o
                .columns(e.index)
                .into_iter()
                .map(|c| o.name(o.sort[c]))
                .collect();
            JsonTable {
                event: e.name.clone(),
                pmu: e.pmu.clone(),
                samples: t.total_samples,
                period: t.total_period,
                topdown: json_td(&t.td, t.td_samples),
                retire_latency: t.latency,
                no_retire_latency: no_latency_reason(e),
                no_topdown: e.no_topdown.clone(),
                rows: t
                    .rows
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| {
                        let w = if o.children { r.children } else { r.period };
                        pct(w, t.base_period) >= style.percent_limit
                    })
                    .map(|(ri, r)| {
                        let rm: Option<&RowMetrics> = metrics.and_then(|m| m.rows.rows.get(&r.key));
                        JsonRow {
                            // A tracepoint field is a key of its own event's rows only.
                            key: names
                                .iter()
                                .zip(r.key.iter().cloned())
                                .map(|(n, v)| (n.to_string(), v))
                                .collect(),
                            overhead: pct(r.period, t.base_period),
                            period: r.period,
                            samples: r.samples,
                            children: o.children.then(|| pct(r.children, t.base_period)),
                            topdown: json_td(&r.td, r.td_samples),
                            retire_latency: r.latency,
                            metrics: rm.map(|m| NamedValues(m.metrics.clone())),
                            bottleneck: rm.map(|m| m.bottleneck.clone()),
                            metric_groups: rm.map(|m| m.groups.clone()),
                            retire_latency_terms: rm.map(|m| m.retire_latencies.clone()),
                            callgraph: trees
                                .get(ri)
                                .and_then(Option::as_ref)
                                .map(|tree| json_nodes(tree, tree.roots(), t.base_period)),
                        }
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
