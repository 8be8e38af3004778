//! `hrec annotate` output: `perf annotate --stdio`'s layout (a header with the file, event and
//! sample count, then one line per instruction: its share, or its sample count with
//! `--show-nr-samples`, and objdump's address and text), DWARF source lines above the
//! instructions they produced, retire latency per instruction, TopDown per basic block,
//! Intel's metrics per basic block in compact form (`--td-level 3`, `--metrics`: each block's
//! bottleneck path with its values, `<==` at its end, and the chosen metrics outside the TMA
//! tree; a block whose groups have too few reads says so with the count and shows no
//! number); or JSON (`docs/annotate.md`).

use std::fmt::Write as _;

use serde_json::json;

use crate::analysis::annotate::{Annotated, Annotation, MetricsShown};
use crate::analysis::latency::LatencyStats;
use crate::analysis::metrics::RowMetrics;
use crate::analysis::topdown::L1_LABELS;

/// What the first column shows (perf's `--percent-type`, or `--show-nr-samples`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Column {
    /// Share of the function's period (perf's default).
    #[default]
    LocalPeriod,
    /// Share of the event's period.
    GlobalPeriod,
    /// Share of the function's samples.
    LocalHits,
    /// Share of the event's samples.
    GlobalHits,
    /// Samples (`--show-nr-samples`).
    Samples,
}

impl std::str::FromStr for Column {
    type Err = String;

    fn from_str(s: &str) -> Result<Column, String> {
        Ok(match s {
            "local-period" => Column::LocalPeriod,
            "global-period" => Column::GlobalPeriod,
            "local-hits" => Column::LocalHits,
            "global-hits" => Column::GlobalHits,
            _ => {
                return Err(format!(
                    "--percent-type {s}: use local-period, global-period, local-hits or global-hits"
                ));
            }
        })
    }
}

impl Column {
    fn words(self) -> &'static str {
        match self {
            Column::LocalPeriod | Column::Samples => "local period",
            Column::GlobalPeriod => "global period",
            Column::LocalHits => "local hits",
            Column::GlobalHits => "global hits",
        }
    }
}

/// How the text is laid out.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    /// The first column.
    pub column: Column,
    /// Samples of the event, for the global percentages.
    pub samples: u64,
    /// Their periods.
    pub period: u64,
    /// `--asm-raw`: the instruction's bytes before its text (the first seven, as objdump's
    /// line shows them).
    pub asm_raw: bool,
    /// `--td-level`: 2 adds TopDown level 2 per block.
    pub td_level: u8,
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

fn latency_text(s: &LatencyStats) -> String {
    format!(
        "retire lat n={} mean={:.1} p90={} max={}",
        s.count, s.mean, s.p90, s.max
    )
}

/// The text of every annotated function, one after another.
pub fn text(a: &Annotation, o: &TextOptions) -> String {
    let mut s = String::new();
    let mut sources = Sources::default();
    for f in &a.symbols {
        function_text(&mut s, f, &a.event, o, &mut sources);
        if let Some(m) = &a.metrics {
            metric_blocks(&mut s, f, m);
        }
    }
    if let Some(m) = &a.metrics
        && !a.symbols.is_empty()
    {
        for n in &m.notes {
            let _ = writeln!(s, " {n}");
        }
    }
    s
}

/// Intel's metrics of the function and of each block with reads of a metric group: a line
/// per block (its range and samples), below it the bottleneck path with its values and the
/// chosen metrics outside the tree, or why there is no number.
fn metric_blocks(s: &mut String, f: &Annotated, m: &MetricsShown) {
    if f.metrics.is_none() {
        return;
    }
    // The section belongs to the function above: its trailing blank line goes after it.
    if s.ends_with("\n\n") {
        s.pop();
    }
    let _ = writeln!(
        s,
        "\n Intel's metrics per basic block (the bottleneck path, <== at its end; -: fewer than {} reads of a group it needs, or an event not recorded):",
        m.min_reads
    );
    let reads = |r: &RowMetrics| {
        let n = r.groups.iter().map(|g| g.reads);
        match (n.clone().min().unwrap_or(0), n.max().unwrap_or(0)) {
            (a, b) if a == b => format!("{a} reads of each group"),
            (a, b) => format!("{a}-{b} reads per group"),
        }
    };
    if let Some(r) = &f.metrics {
        let _ = writeln!(
            s,
            "   {:<15}  {:>9} samples, {}",
            f.name,
            f.samples,
            reads(r)
        );
        for l in metric_lines(r, m) {
            let _ = writeln!(s, "       {l}");
        }
    }
    for b in &f.blocks {
        let Some(r) = &b.metrics else { continue };
        let _ = writeln!(
            s,
            "   {:>6x}-{:<6x}  {:>9} samples, {}",
            b.start,
            b.end,
            b.samples,
            reads(r)
        );
        for l in metric_lines(r, m) {
            let _ = writeln!(s, "       {l}");
        }
    }
    s.push('\n');
}

/// The compact lines of one block's (or function's) metrics: the bottleneck path (`name
/// value > ... <==`; without one, the level-1 values), the chosen metrics outside the TMA
/// tree, and the groups with too few reads when some metric got no number.
pub fn metric_lines(r: &RowMetrics, m: &MetricsShown) -> Vec<String> {
    let value = |name: &str| match r.get(name) {
        Some(v) => format!("{name} {v:.1}"),
        None => format!("{name} -"),
    };
    let mut out = Vec::new();
    let computed = r.metrics.iter().any(|(_, v)| v.is_some());
    if !r.bottleneck.is_empty() {
        let path: Vec<String> = r.bottleneck.iter().map(|n| value(n)).collect();
        out.push(format!("{} <==", path.join(" > ")));
    } else if computed {
        let l1: Vec<String> = m
            .nodes
            .iter()
            .filter(|n| n.level == 1)
            .map(|n| value(&n.name))
            .collect();
        if !l1.is_empty() {
            out.push(format!("{}  (no node past its threshold)", l1.join("  ")));
        }
    }
    // The chosen metrics outside the tree, and TMA nodes chosen by `--metrics` below level 1
    // without their parent (the top of a list) when not on the path.
    let chosen = |name: &str| m.nodes.iter().any(|n| n.level > 0 && n.name == name);
    let others: Vec<String> = m
        .nodes
        .iter()
        .filter(|n| {
            n.level == 0
                || (n.level > 1
                    && n.parent.as_deref().is_none_or(|p| !chosen(p))
                    && !r.bottleneck.contains(&n.name))
        })
        .map(|n| value(&n.name))
        .collect();
    if computed && !others.is_empty() {
        out.push(others.join("  "));
    }
    if r.metrics.iter().any(|(_, v)| v.is_none()) {
        let few: Vec<(usize, u64)> = r
            .groups
            .iter()
            .enumerate()
            .filter(|(_, g)| g.reads < m.min_reads)
            .map(|(g, gr)| (g, gr.reads))
            .collect();
        let same = few.windows(2).all(|w| w[0].1 == w[1].1);
        if few.len() > 1 && few.len() == r.groups.len() && same {
            out.push(format!(
                "metrics: {} reads of each of the {} groups, fewer than {}",
                few[0].1,
                few.len(),
                m.min_reads
            ));
        } else if !few.is_empty() {
            let parts: Vec<String> = few
                .iter()
                .enumerate()
                .map(|(k, (g, n))| {
                    if k == 0 {
                        format!("{n} reads of group {g}")
                    } else {
                        format!("{n} of group {g}")
                    }
                })
                .collect();
            out.push(format!(
                "metrics: {}, fewer than {}",
                parts.join(", "),
                m.min_reads
            ));
        }
    }
    out
}

/// Source files read so far, by path (`None`: not readable).
#[derive(Default)]
struct Sources(std::collections::HashMap<String, Option<Vec<String>>>);

/// Source files larger than this are not read.
const MAX_SOURCE: u64 = 16 << 20;

impl Sources {
    /// Line `line` (from 1) of `file`, when it is readable.
    fn line(&mut self, file: &str, line: u32) -> Option<&str> {
        let lines = self.0.entry(file.to_string()).or_insert_with(|| {
            let meta = std::fs::metadata(file).ok()?;
            if !meta.is_file() || meta.len() > MAX_SOURCE {
                return None;
            }
            let text = std::fs::read(file).ok()?;
            Some(
                String::from_utf8_lossy(&text)
                    .lines()
                    .map(str::to_string)
                    .collect(),
            )
        });
        let i = usize::try_from(line).ok()?.checked_sub(1)?;
        lines.as_ref()?.get(i).map(String::as_str)
    }
}

fn function_text(
    s: &mut String,
    f: &Annotated,
    event: &str,
    o: &TextOptions,
    sources: &mut Sources,
) {
    let column = o.column;
    let file = std::path::Path::new(&f.dso)
        .file_name()
        .map_or_else(|| f.dso.clone(), |n| n.to_string_lossy().into_owned());
    let rest = format!(
        "Source code & Disassembly of {file} for {event} ({} samples, percent: {})",
        f.samples,
        column.words()
    );
    let head = if column == Column::Samples {
        " Samples"
    } else {
        " Percent"
    };
    let _ = writeln!(s, "{head} |\t{rest}");
    // perf's rule of dashes: as wide as the header with its tab expanded.
    let _ = writeln!(s, "{}", "-".repeat(16 + rest.len()));
    let _ = writeln!(s, "         :");
    let _ = writeln!(s, "         : {:016x} <{}>:", f.start, f.name);
    let mut last_source = None;
    for i in &f.instructions {
        if let Some(src) = &i.source
            && last_source != Some((&src.file, src.line))
        {
            last_source = Some((&src.file, src.line));
            let base = std::path::Path::new(&src.file)
                .file_name()
                .map_or_else(|| src.file.clone(), |n| n.to_string_lossy().into_owned());
            let mut l = format!("         : {base}:{}", src.line);
            if let Some(text) = sources.line(&src.file, src.line) {
                let _ = write!(l, "    {}", text.trim());
            }
            if !src.inlined.is_empty() {
                let _ = write!(l, "    [inlined: {}]", src.inlined.join(" > "));
            }
            let _ = writeln!(s, "{}", l.trim_end());
        }
        let col = match column {
            Column::Samples => format!("{:>8}", i.samples),
            Column::LocalPeriod => format!("{:>8.2}", pct(i.period, f.period)),
            Column::GlobalPeriod => format!("{:>8.2}", pct(i.period, o.period)),
            Column::LocalHits => format!("{:>8.2}", pct(i.samples, f.samples)),
            Column::GlobalHits => format!("{:>8.2}", pct(i.samples, o.samples)),
        };
        let addr = format!("{:x}:", i.address);
        let raw = if o.asm_raw {
            let hex: Vec<String> = i.raw.iter().take(7).map(|b| format!("{b:02x}")).collect();
            format!("{:<20}    ", hex.join(" "))
        } else {
            String::new()
        };
        let gap = if addr.len() >= 8 { " " } else { "" };
        let mut line = format!("{col} :   {addr:<8}{gap}{raw}{}", i.text);
        if let Some(l) = &i.retire_latency {
            let _ = write!(line, "    # {}", latency_text(l));
        }
        let _ = writeln!(s, "{line}");
        // objdump goes on with the bytes past the seventh on lines of their own, which perf
        // shows as instructions without samples.
        if o.asm_raw {
            let zero = match column {
                Column::Samples => format!("{:>8}", 0),
                _ => format!("{:>8.2}", 0.0),
            };
            for (k, chunk) in i.raw.chunks(7).enumerate().skip(1) {
                let hex: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
                let addr = format!("{:x}:", i.address + 7 * k as u64);
                let gap = if addr.len() >= 8 { " " } else { "" };
                let _ = writeln!(s, "{zero} :   {addr:<8}{gap}{}", hex.join(" "));
            }
        }
    }
    latency_histograms(s, f);
    topdown_blocks(s, f, o.td_level >= 2);
    s.push('\n');
}

/// The retire-latency histograms of the three hottest instructions that have latencies.
fn latency_histograms(s: &mut String, f: &Annotated) {
    let mut hot: Vec<_> = f
        .instructions
        .iter()
        .filter(|i| i.retire_latency.is_some())
        .collect();
    if hot.is_empty() {
        return;
    }
    hot.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.address.cmp(&b.address)));
    let _ = writeln!(s, "\n Retire latency (cycles) of the hottest instructions:");
    for i in hot.iter().take(3) {
        let _ = writeln!(s, "   {:x}: {}", i.address, i.text);
        let most = i
            .latency_values
            .iter()
            .map(|v| v.1)
            .max()
            .unwrap_or(1)
            .max(1);
        for &(v, n) in &i.latency_values {
            let bar = "#".repeat(((n * 40).div_ceil(most)) as usize);
            let _ = writeln!(s, "     {v:>6} {n:>8}  {bar}");
        }
    }
}

/// TopDown per basic block, when the samples carried group-read deltas.
fn topdown_blocks(s: &mut String, f: &Annotated, want_level2: bool) {
    if f.blocks.iter().all(|b| b.topdown_l1.is_none()) {
        return;
    }
    let tree = f
        .blocks
        .iter()
        .find_map(|b| b.topdown_l2)
        .map(|l| l.tree())
        .filter(|_| want_level2);
    let _ = write!(
        s,
        "\n TopDown per basic block (% of slots):\n   block              samples"
    );
    for l in L1_LABELS {
        let _ = write!(s, "  {l:>16}");
    }
    if let Some(tree) = tree {
        for l in tree.labels() {
            let _ = write!(s, "  {l:>18}");
        }
    }
    s.push('\n');
    for b in f.blocks.iter().filter(|b| b.topdown_l1.is_some()) {
        let _ = write!(s, "   {:>6x}-{:<6x}  {:>9}", b.start, b.end, b.samples);
        for v in b.topdown_l1.unwrap_or_default() {
            let _ = write!(s, "  {v:>16.1}");
        }
        if let Some(tree) = tree {
            match b.topdown_l2.filter(|l| l.tree() == tree) {
                Some(l2) => {
                    for v in l2.values() {
                        let _ = write!(s, "  {v:>18.1}");
                    }
                }
                None => {
                    for _ in tree.labels() {
                        let _ = write!(s, "  {:>18}", "-");
                    }
                }
            }
        }
        s.push('\n');
    }
}

/// The JSON document (`docs/annotate.md`): with Intel's metrics per block, `metrics`
/// (perf's name → value, `null` when not computed), `bottleneck` and `metric_groups` (each
/// group's reads) on the function and on each block that has reads of a metric group.
pub fn json(a: &Annotation) -> serde_json::Value {
    let mut symbols = serde_json::to_value(&a.symbols).unwrap_or_default();
    if a.metrics.is_some()
        && let Some(list) = symbols.as_array_mut()
    {
        for (f, v) in a.symbols.iter().zip(list) {
            add_metric_json(v, f.metrics.as_ref());
            if let Some(blocks) = v.get_mut("blocks").and_then(|b| b.as_array_mut()) {
                for (b, bv) in f.blocks.iter().zip(blocks) {
                    add_metric_json(bv, b.metrics.as_ref());
                }
            }
        }
    }
    let mut doc = json!({
        "event": a.event,
        "symbols": symbols,
        "problems": a.problems,
    });
    if let Some(m) = &a.metrics {
        doc["metric_notes"] = json!(m.notes);
        doc["metric_min_reads"] = json!(m.min_reads);
    }
    doc
}

/// `metrics`, `bottleneck` and `metric_groups` into a function's or block's object.
fn add_metric_json(v: &mut serde_json::Value, r: Option<&RowMetrics>) {
    let (Some(r), Some(o)) = (r, v.as_object_mut()) else {
        return;
    };
    let metrics: serde_json::Map<String, serde_json::Value> = r
        .metrics
        .iter()
        .map(|(k, x)| (k.clone(), json!(x.map(|x| (x * 1000.0).round() / 1000.0))))
        .collect();
    o.insert("metrics".into(), serde_json::Value::Object(metrics));
    o.insert("bottleneck".into(), json!(r.bottleneck));
    o.insert("metric_groups".into(), json!(r.groups));
    if !r.retire_latencies.is_empty() {
        o.insert("retire_latency_terms".into(), json!(r.retire_latencies));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::metrics::{GroupReads, TreeNode};

    fn node(name: &str, level: u32, parent: Option<&str>) -> TreeNode {
        TreeNode {
            name: name.into(),
            level,
            parent: parent.map(str::to_string),
        }
    }

    fn row(values: &[(&str, Option<f64>)], path: &[&str], reads: &[u64]) -> RowMetrics {
        RowMetrics {
            metrics: values.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
            bottleneck: path.iter().map(|p| p.to_string()).collect(),
            groups: reads
                .iter()
                .enumerate()
                .map(|(g, &reads)| GroupReads {
                    group: format!("cycles #{g}"),
                    reads,
                    cycles: reads * 1000,
                    time_running_share: None,
                })
                .collect(),
            ..RowMetrics::default()
        }
    }

    /// The path with its values, the metrics outside the tree, and the groups with too few
    /// reads when a metric has no number; without a path the level-1 values; with no number
    /// at all only the reads.
    #[test]
    fn compact_metric_lines() {
        let shown = MetricsShown {
            nodes: vec![
                node("tma_retiring", 1, None),
                node("tma_backend_bound", 1, None),
                node("tma_memory_bound", 2, Some("tma_backend_bound")),
                node("tma_l3_bound", 3, Some("tma_memory_bound")),
                node("IPC", 0, None),
            ],
            min_reads: 20,
            notes: Vec::new(),
        };
        let r = row(
            &[
                ("tma_retiring", Some(10.0)),
                ("tma_backend_bound", Some(80.04)),
                ("tma_memory_bound", Some(70.0)),
                ("tma_l3_bound", None),
                ("IPC", Some(0.52)),
            ],
            &["tma_backend_bound", "tma_memory_bound"],
            &[40, 7, 25],
        );
        assert_eq!(
            metric_lines(&r, &shown),
            [
                "tma_backend_bound 80.0 > tma_memory_bound 70.0 <==",
                "IPC 0.5",
                "metrics: 7 reads of group 1, fewer than 20",
            ]
        );
        let r = row(
            &[
                ("tma_retiring", Some(40.0)),
                ("tma_backend_bound", Some(30.0)),
                ("tma_memory_bound", Some(5.0)),
                ("tma_l3_bound", Some(1.0)),
                ("IPC", None),
            ],
            &[],
            &[40, 3],
        );
        assert_eq!(
            metric_lines(&r, &shown),
            [
                "tma_retiring 40.0  tma_backend_bound 30.0  (no node past its threshold)",
                "IPC -",
                "metrics: 3 reads of group 1, fewer than 20",
            ]
        );
        let none: Vec<(&str, Option<f64>)> = shown
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), None))
            .collect();
        assert_eq!(
            metric_lines(&row(&none, &[], &[3, 3]), &shown),
            ["metrics: 3 reads of each of the 2 groups, fewer than 20"]
        );
        // A `--metrics` list topped by a level-3 node: shown beside the path.
        let deep = MetricsShown {
            nodes: vec![node("tma_l3_bound", 3, Some("tma_memory_bound"))],
            ..shown
        };
        let r = row(&[("tma_l3_bound", Some(12.0))], &[], &[30]);
        assert_eq!(metric_lines(&r, &deep), ["tma_l3_bound 12.0"]);
    }
}
