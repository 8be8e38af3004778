//! Call-graph trees under the rows of a report (`report -g`), as `perf report` builds them.
//!
//! **A sample's chain** is its frames as entries: each location expands to the functions
//! inlined there (innermost first, `name (inlined)`) and then its own function, and the
//! locations run from the sampled one out to the root; that is *callee* order, and *caller*
//! order is the reverse. `--max-stack N` keeps the innermost N frames (of the kernel's part
//! and of the unwound user part each, with `--call-graph dwarf`), as perf does.
//!
//! **Which chain goes under which row.** Without `--children`, a row's tree holds the whole
//! chains of the samples at its top. With `--children`, a sample also credits every row on
//! its chain once (the first time the row's key is met, walking the chain in the display
//! order, the sample's own row first), and that row's tree gets the part of the chain from
//! the row's entry on: in caller order the row's callees, in callee order its callers. This is
//! perf's rule (`hist_entry_iter` with cumulative entries), so the same recording gives the
//! same trees.
//!
//! **The tree** merges chains by entry (`function`: the function and its object; `address`:
//! the location), and collapses every run of entries that no chain leaves or ends in into one
//! node, as perf's radix tree does: a node is printed as one block of names. A node's value
//! is the period (or sample count) of the chains through it. Nodes below the cutoff (a share
//! of the event's total, perf's `min_percent`) are dropped with everything under them;
//! siblings are ordered heaviest first. A tree is built only for a row heavy enough to show
//! a node ([`super::hist::call_trees`]).

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use super::FastMap;
use super::profile::{Profile, SampleGroup};
use crate::symbol::symbolizer::Loc;

/// How a tree is printed (perf's `print_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A tree with percentages of the event's total.
    Graph,
    /// A tree with percentages of the parent node.
    Fractal,
    /// Every chain on its own, with its share.
    Flat,
    /// Every chain on one line, `;`-separated, after its share.
    Folded,
    /// No trees.
    None,
}

/// Which way chains run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// From the root of the process to the sampled function.
    Caller,
    /// From the sampled function out to the root.
    Callee,
}

/// What makes two entries the same node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// The function (in its object).
    Function,
    /// The code address; entries print their source line.
    Address,
}

/// What a node shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// Share of the total (graph) or of the parent (fractal).
    Percent,
    /// The period (event count).
    Period,
    /// The number of samples.
    Count,
}

/// perf's `-g` argument: `[graph|flat|folded|fractal|none][,min%][,caller|callee]
/// [,function|address][,percent|period|count]`, in any order after the mode.
#[derive(Debug, Clone, PartialEq)]
pub struct CallGraphOptions {
    /// How trees print.
    pub mode: Mode,
    /// Nodes below this percentage of the event's total are dropped (perf's 0.5).
    pub min_percent: f64,
    /// `None`: perf's default, caller with `--children`, callee without.
    pub order: Option<Order>,
    /// What merges.
    pub key: Key,
    /// What nodes show.
    pub value: Value,
    /// Frames of a chain kept, innermost first (`--max-stack`, perf's 127; see
    /// [`kept_locs`]).
    pub max_stack: usize,
}

impl Default for CallGraphOptions {
    fn default() -> Self {
        CallGraphOptions {
            mode: Mode::Graph,
            min_percent: 0.5,
            order: None,
            key: Key::Function,
            value: Value::Percent,
            max_stack: 127,
        }
    }
}

/// A `-g` argument hrec does not understand.
#[derive(Debug, thiserror::Error)]
#[error(
    "bad call-graph option {0:?}: expected graph|flat|folded|fractal|none, a minimum percentage, caller|callee, function|address and percent|period|count, comma-separated"
)]
pub struct BadCallGraph(pub String);

impl FromStr for CallGraphOptions {
    type Err = BadCallGraph;
    fn from_str(s: &str) -> Result<Self, BadCallGraph> {
        let mut o = CallGraphOptions::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part {
                "graph" => o.mode = Mode::Graph,
                "fractal" => o.mode = Mode::Fractal,
                "flat" => o.mode = Mode::Flat,
                "folded" => o.mode = Mode::Folded,
                "none" => o.mode = Mode::None,
                "caller" => o.order = Some(Order::Caller),
                "callee" => o.order = Some(Order::Callee),
                "function" => o.key = Key::Function,
                "address" => o.key = Key::Address,
                "percent" => o.value = Value::Percent,
                "period" => o.value = Value::Period,
                "count" => o.value = Value::Count,
                other => match other.parse::<f64>() {
                    Ok(p) if (0.0..=100.0).contains(&p) => o.min_percent = p,
                    _ => return Err(BadCallGraph(s.to_string())),
                },
            }
        }
        Ok(o)
    }
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Order::Caller => "caller",
            Order::Callee => "callee",
        })
    }
}

/// One node: a run of entries and what passed through it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Node {
    /// The entries' names, in chain order.
    pub names: Vec<String>,
    /// Period of the chains through the node.
    pub period: u64,
    /// Samples of the chains through the node.
    pub samples: u64,
    /// Period of the chains that end in the node.
    pub self_period: u64,
    /// Samples of the chains that end in the node.
    pub self_samples: u64,
    /// Children, heaviest first (indices into [`CallTree::nodes`]).
    pub children: Vec<u32>,
    /// Where the node's first entry sorts among siblings in perf's radix tree (object, then
    /// address from the highest): the order perf's flat and folded lists keep among equals.
    tree_order: (std::sync::Arc<str>, std::cmp::Reverse<u64>),
}

/// The merged chains of one row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallTree {
    /// `nodes[0]` is the root (no names): its children are the first nodes of the chains.
    pub nodes: Vec<Node>,
}

impl CallTree {
    /// The root's children.
    pub fn roots(&self) -> &[u32] {
        self.nodes.first().map_or(&[], |n| &n.children)
    }

    /// The chains that end in a node, heaviest first, each path from the first entry to the
    /// last, with the node they end in. Equals keep perf's order: a node's descendants before
    /// it, siblings in radix-tree order.
    pub fn chains(&self) -> Vec<(Vec<&str>, &Node)> {
        let mut out = Vec::new();
        let mut path: Vec<&str> = Vec::new();
        self.walk_chains(0, &mut path, &mut out);
        out.sort_by_key(|c| std::cmp::Reverse(c.1.self_period));
        out
    }

    fn walk_chains<'a>(
        &'a self,
        at: u32,
        path: &mut Vec<&'a str>,
        out: &mut Vec<(Vec<&'a str>, &'a Node)>,
    ) {
        let n = &self.nodes[at as usize];
        let len = path.len();
        path.extend(n.names.iter().map(String::as_str));
        let mut kids = n.children.clone();
        kids.sort_by(|&a, &b| {
            let (na, nb) = (&self.nodes[a as usize], &self.nodes[b as usize]);
            na.tree_order.cmp(&nb.tree_order)
        });
        for c in kids {
            self.walk_chains(c, path, out);
        }
        if n.self_period > 0 && at != 0 {
            out.push((path.clone(), n));
        }
        path.truncate(len);
    }
}

/// A trie of entries while chains are added.
#[derive(Debug, Default)]
struct Trie {
    /// (entry, children by entry, period, samples, self period, self samples)
    nodes: Vec<TrieNode>,
}

#[derive(Debug, Default)]
struct TrieNode {
    entry: u32,
    children: FastMap<u32, u32>,
    period: u64,
    samples: u64,
    self_period: u64,
    self_samples: u64,
}

impl Trie {
    fn new() -> Trie {
        Trie {
            nodes: vec![TrieNode::default()],
        }
    }

    fn add(&mut self, chain: &[u32], period: u64, samples: u64) {
        if chain.is_empty() {
            return;
        }
        let mut at = 0usize;
        self.nodes[0].period += period;
        self.nodes[0].samples += samples;
        for &e in chain {
            let next = match self.nodes[at].children.get(&e) {
                Some(&n) => n as usize,
                None => {
                    let n = self.nodes.len();
                    self.nodes.push(TrieNode {
                        entry: e,
                        ..TrieNode::default()
                    });
                    self.nodes[at].children.insert(e, n as u32);
                    n
                }
            };
            at = next;
            self.nodes[at].period += period;
            self.nodes[at].samples += samples;
        }
        self.nodes[at].self_period += period;
        self.nodes[at].self_samples += samples;
    }

    /// The collapsed, filtered, sorted tree. A node is kept when its period is at least
    /// `cut.0`, or with a relative cutoff `cut.1` (fractal), that share of what its parent
    /// passes on to its children.
    fn finish(&self, e: &Entries, cut: (u64, Option<f64>)) -> CallTree {
        let names = &e.names;
        let min_under = |n: &TrieNode| match cut.1 {
            Some(f) => (((n.period - n.self_period) as f64) * f).ceil() as u64,
            None => cut.0,
        };
        let mut out = CallTree {
            nodes: vec![Node {
                period: self.nodes[0].period,
                samples: self.nodes[0].samples,
                ..Node::default()
            }],
        };
        // (trie node to start a run at, parent in `out`, the cutoff there)
        let mut stack: Vec<(usize, u32, u64)> = Vec::new();
        let mut kids: Vec<usize> = self.nodes[0]
            .children
            .values()
            .map(|&c| c as usize)
            .collect();
        let sort = |kids: &mut Vec<usize>| {
            kids.sort_by(|&a, &b| {
                let (na, nb) = (&self.nodes[a], &self.nodes[b]);
                // Ties as perf's radix tree leaves them: by object, then by address from
                // the highest.
                let (oa, ob) = (&e.order[na.entry as usize], &e.order[nb.entry as usize]);
                nb.period
                    .cmp(&na.period)
                    .then_with(|| oa.0.cmp(&ob.0))
                    .then_with(|| ob.1.cmp(&oa.1))
                    .then_with(|| names[na.entry as usize].cmp(&names[nb.entry as usize]))
            });
        };
        sort(&mut kids);
        let min = min_under(&self.nodes[0]);
        for &k in kids.iter().rev() {
            stack.push((k, 0, min));
        }
        while let Some((start, parent, min)) = stack.pop() {
            if self.nodes[start].period < min.max(1) {
                continue;
            }
            // A run goes on while exactly one chain continues and none ends.
            let mut run = vec![start];
            let mut at = start;
            while self.nodes[at].self_samples == 0 && self.nodes[at].children.len() == 1 {
                let Some(&only) = self.nodes[at].children.values().next() else {
                    break;
                };
                at = only as usize;
                run.push(at);
            }
            let (first, last) = (&self.nodes[start], &self.nodes[at]);
            let id = out.nodes.len() as u32;
            out.nodes.push(Node {
                names: run
                    .iter()
                    .map(|&n| names[self.nodes[n].entry as usize].clone())
                    .collect(),
                period: first.period,
                samples: first.samples,
                self_period: last.self_period,
                self_samples: last.self_samples,
                children: Vec::new(),
                tree_order: {
                    let (dso, addr) = &e.order[first.entry as usize];
                    (dso.clone(), std::cmp::Reverse(*addr))
                },
            });
            out.nodes[parent as usize].children.push(id);
            let mut kids: Vec<usize> = last.children.values().map(|&c| c as usize).collect();
            sort(&mut kids);
            let min = min_under(last);
            for &k in kids.iter().rev() {
                stack.push((k, id, min));
            }
        }
        out
    }
}

/// The entries of every location, interned.
#[derive(Debug, Default)]
struct Entries {
    /// Per location: its entries, innermost first, and the index among them of the location's
    /// own function (its last).
    of_loc: Vec<Vec<u32>>,
    names: Vec<String>,
    /// Per entry, where it sorts among equals: its object and the address of its symbol (or
    /// its own, unresolved).
    order: Vec<(std::sync::Arc<str>, u64)>,
}

impl Entries {
    fn new(p: &Profile, key: Key) -> Entries {
        let mut ids: HashMap<(String, String), u32> = HashMap::new();
        let mut e = Entries::default();
        for (li, l) in p.locs.iter().enumerate() {
            let mut v = Vec::new();
            for (name, inline_index) in entry_names(l, key, p.inline_entries) {
                let id_key = match key {
                    Key::Function => (l.dso.to_string(), name.clone()),
                    Key::Address => (format!("{li}:{inline_index}"), name.clone()),
                };
                let next = e.names.len() as u32;
                let id = *ids.entry(id_key).or_insert(next);
                if id == next {
                    e.names.push(name);
                    e.order
                        .push((l.dso.clone(), l.addr.wrapping_sub(l.sym_offset)));
                }
                v.push(id);
            }
            e.of_loc.push(v);
        }
        e
    }
}

/// The entries of a location as perf lists them, innermost first. In unwound (`dwarf`)
/// chains, each function inlined at the address, then the function itself, named by DWARF
/// and marked `(inlined)` where the name is not the symbol table's
/// ([`Loc::inline_entries`]); in frame-pointer chains (`inline` false) the symbol alone (perf 6.1 dropped inline
/// expansion there for its cost). Unresolved addresses are their hex value. With
/// [`Key::Address`], each carries its source line.
pub(crate) fn entry_names(l: &Loc, key: Key, inline: bool) -> Vec<(String, usize)> {
    let mut v = Vec::new();
    // perf's srcline: the file's name and line, `??:0` when unknown.
    let line = |f: &crate::symbol::Frame| -> String {
        match (&f.file, key) {
            (Some(file), Key::Address) => {
                format!(" {}:{}", file.rsplit('/').next().unwrap_or(file), f.line)
            }
            (None, Key::Address) => " ??:0".to_string(),
            _ => String::new(),
        }
    };
    if l.sym.is_none() {
        // C's `%#x`: no prefix for zero.
        let hex = if l.addr == 0 {
            "0".to_string()
        } else {
            format!("{:#x}", l.addr)
        };
        v.push((hex, 0));
        return v;
    }
    if !inline {
        let srcline = match key {
            Key::Address => format!(" {}", l.srcline(false).as_deref().unwrap_or("??:0")),
            Key::Function => String::new(),
        };
        v.push((format!("{}{srcline}", l.sym_name()), 0));
        return v;
    }
    // perf's entries, each with the index of its frame.
    for (i, e) in l.inline_entries().into_iter().enumerate() {
        let line = match (e.frame, key) {
            (Some(f), _) => line(f),
            (None, Key::Address) => " ??:0".to_string(),
            (None, Key::Function) => String::new(),
        };
        let mark = if e.inlined { " (inlined)" } else { "" };
        v.push((format!("{}{line}{mark}", e.name), i));
    }
    v
}

/// The locations of a group's chain that `--max-stack n` keeps, innermost first, as perf
/// counts them: frames, not inline entries; a frame-pointer chain at most `n` in all, an
/// unwound (dwarf) one at most `n` kernel frames (the kernel's chain) and `n` user frames
/// (the unwinder's).
pub(crate) fn kept_locs(p: &Profile, g: &SampleGroup, n: usize, out: &mut Vec<u32>) {
    out.clear();
    let all = std::iter::once(g.leaf).chain(p.callers(g).iter().copied());
    if !p.dwarf_stacks {
        out.extend(all.take(n));
        return;
    }
    let (mut kernel, mut user) = (0, 0);
    for loc in all {
        let count = if p.locs[loc as usize].kernel {
            &mut kernel
        } else {
            &mut user
        };
        if *count < n {
            *count += 1;
            out.push(loc);
        }
    }
}

/// Builds trees for some rows of one event: `row_of(group, loc, entry)` names the row of a
/// sample group's location (`entry` `None`: the location's own row, where its samples are
/// Self; `Some(i)`: the row of its `i`-th call-chain entry), `None` for rows that get no tree;
/// `children` adds the chains of the rows of the entries on the chain. Returns the tree of
/// each row asked for, without the nodes below `min_period(row)`.
pub fn trees(
    p: &Profile,
    groups: impl Iterator<Item = usize>,
    children: bool,
    o: &CallGraphOptions,
    min_period: impl Fn(usize) -> u64,
    mut row_of: impl FnMut(&SampleGroup, u32, Option<usize>) -> Option<usize>,
    rows: usize,
) -> Vec<Option<CallTree>> {
    let order = o.order.unwrap_or(if children {
        Order::Caller
    } else {
        Order::Callee
    });
    let entries = Entries::new(p, o.key);
    let mut tries: Vec<Option<Trie>> = (0..rows).map(|_| None).collect();
    let mut chain: Vec<u32> = Vec::new();
    // Per entry of `chain`, its location and its index among the location's entries.
    let mut owner: Vec<(u32, usize)> = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    let mut locs: Vec<u32> = Vec::new();
    for gi in groups {
        let g = &p.groups[gi];
        chain.clear();
        owner.clear();
        kept_locs(p, g, o.max_stack, &mut locs);
        for &loc in &locs {
            let es = &entries.of_loc[loc as usize];
            chain.extend_from_slice(es);
            owner.extend((0..es.len()).map(|i| (loc, i)));
        }
        if order == Order::Caller {
            chain.reverse();
            owner.reverse();
        }
        seen.clear();
        let own = row_of(g, g.leaf, None);
        if let Some(r) = own {
            tries[r]
                .get_or_insert_with(Trie::new)
                .add(&chain, g.period, g.samples);
            seen.push(r);
        }
        if !children {
            continue;
        }
        for (i, &(loc, entry)) in owner.iter().enumerate() {
            let Some(r) = row_of(g, loc, Some(entry)) else {
                continue;
            };
            if seen.contains(&r) {
                continue;
            }
            seen.push(r);
            // In caller order the row's function and all it called, in callee order the
            // function and its callers: the chain from the row's entry on, either way.
            let part = &chain[i..];
            tries[r]
                .get_or_insert_with(Trie::new)
                .add(part, g.period, g.samples);
        }
    }
    // fractal: perf's cutoff is relative at every level.
    let relative = (o.mode == Mode::Fractal).then_some(o.min_percent / 100.0);
    tries
        .into_iter()
        .enumerate()
        .map(|(r, t)| t.map(|t| t.finish(&entries, (min_period(r), relative))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse_as_perf_spells_them() {
        let o: CallGraphOptions = "graph,0.5,caller".parse().unwrap();
        assert_eq!(o.mode, Mode::Graph);
        assert_eq!(o.order, Some(Order::Caller));
        let o: CallGraphOptions = "flat,2,callee,address,period".parse().unwrap();
        assert_eq!(
            (o.mode, o.min_percent, o.order, o.key, o.value),
            (
                Mode::Flat,
                2.0,
                Some(Order::Callee),
                Key::Address,
                Value::Period
            )
        );
        assert_eq!("none".parse::<CallGraphOptions>().unwrap().mode, Mode::None);
        assert_eq!(
            "caller".parse::<CallGraphOptions>().unwrap().mode,
            Mode::Graph
        );
        assert!("graph,sideways".parse::<CallGraphOptions>().is_err());
        assert!("graph,150".parse::<CallGraphOptions>().is_err());
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn entries(v: &[&str]) -> Entries {
        Entries {
            of_loc: Vec::new(),
            names: names(v),
            order: v.iter().map(|_| ("x".into(), 0)).collect(),
        }
    }

    /// Runs collapse where no chain leaves or ends; a node below the cutoff goes with its
    /// subtree; siblings come heaviest first.
    #[test]
    fn chains_merge_into_perf_nodes() {
        let n = entries(&["main", "a", "b", "c", "d", "x"]);
        let mut t = Trie::new();
        // main a b c (60), main a b d (30), main a (5), main x (5: below a cutoff of 6)
        t.add(&[0, 1, 2, 3], 60, 6);
        t.add(&[0, 1, 2, 4], 30, 3);
        t.add(&[0, 1], 5, 1);
        t.add(&[0, 5], 5, 1);
        let tree = t.finish(&n, (6, None));
        let roots = tree.roots();
        assert_eq!(roots.len(), 1);
        let main = &tree.nodes[roots[0] as usize];
        assert_eq!(main.names, ["main"]);
        assert_eq!(main.period, 100);
        // main has two children (a..., x); x is cut.
        assert_eq!(main.children.len(), 1);
        let a = &tree.nodes[main.children[0] as usize];
        // `a` ends chains (5), so it is its own node.
        assert_eq!(
            (a.names.clone(), a.period, a.self_period),
            (names(&["a"]), 95, 5)
        );
        let b = &tree.nodes[a.children[0] as usize];
        assert_eq!(b.names, ["b"]);
        let kids: Vec<_> = b
            .children
            .iter()
            .map(|&c| tree.nodes[c as usize].names.clone())
            .collect();
        assert_eq!(kids, [names(&["c"]), names(&["d"])]);
        let chains = tree.chains();
        assert_eq!(chains[0].0, ["main", "a", "b", "c"]);
        assert_eq!((chains[0].1.self_period, chains[0].1.self_samples), (60, 6));
        assert_eq!(chains.len(), 3);
        // One long chain is one node.
        let mut t = Trie::new();
        t.add(&[0, 1, 2, 3], 10, 1);
        let tree = t.finish(&n, (0, None));
        assert_eq!(tree.nodes[1].names, ["main", "a", "b", "c"]);
    }
}
