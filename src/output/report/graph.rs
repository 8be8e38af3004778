//! The call-graph trees under a report's rows in perf's `--stdio` layouts: `graph` (shares of
//! the event's total), `fractal` (shares of the parent, with perf's `[...]` for what the
//! printed children leave), `flat` (each chain over the cutoff, what runs through its last
//! node) and `folded` (`a;b;c value`, what ends there). A single chain carrying the whole row
//! prints without a value after perf's `---`; margins, `|` and `--value--` connectors are
//! perf's to the column.

use std::fmt::Write as _;

use crate::analysis::callgraph::{CallGraphOptions, CallTree, Mode, Value};
use crate::analysis::hist::{self, HistOptions, Table};
use crate::analysis::profile::Profile;

use super::style::{ReportStyle, pct};

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
pub(super) fn write_tree(
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
pub(super) fn trees_of(
    p: &Profile,
    t: &Table,
    o: &HistOptions,
    style: &ReportStyle,
) -> Vec<Option<CallTree>> {
    match &style.callgraph {
        // Only events whose samples carry chains have trees (an `--off-cpu` recording's
        // `offcpu-time` does, its plain samplers may not).
        Some(cg) if p.events[t.event].callchains && cg.mode != Mode::None => {
            hist::call_trees(p, t, o, cg)
        }
        _ => Vec::new(),
    }
}
