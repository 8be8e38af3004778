//! `hrec c2c report --stdio`: perf c2c report's text (perf 6.1's `--stdio` layout): the
//! event totals, the "Shared Data Cache Line Table" (one row per line shown: its share of
//! the displayed HITMs (`Tot`, `Lcl` or `Rmt` Hitm, `-d`), load and store classes) and the
//! "Shared Cache Line Distribution Pareto" (per line, its rows with their shares of the
//! line's HITMs and stores, average latencies, CPUs and NUMA nodes; the columns of what `-c`
//! groups by: Pid, Tid, the code address with its function, object and source line, or the
//! object alone). The Node column is perf's at each `-N` level: the node numbers, then per
//! node `N{cpus %hitms %stores}` (a blank of 21 for a node the row did not run on), then
//! `N{cpu list}`. `--json` is the analysis's own structure ([`crate::analysis::c2c::C2c`])
//! with the threads that read and wrote each offset.

use std::io::{self, Write};

use crate::analysis::c2c::{C2c, C2cOffset, C2cStats, Coalesce, Display};
use crate::pmu::CpuList;

/// How the text shows the analysis: the grouping it was built with and perf's `-N` level.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// The grouping, as perf's c2c details print it (`offset,iaddr`).
    pub grouping: String,
    /// What rows are told apart by (which Pareto columns are shown).
    pub coalesce: Coalesce,
    /// `-N` given this many times (0 to 2).
    pub node_info: u8,
    /// `--stats`: the event totals and details only, no tables.
    pub stats_only: bool,
    /// `--no-source`: no Source:Line column.
    pub no_source: bool,
    /// `--full-symbols`: the Symbol and Source:Line columns as wide as their longest cell
    /// (else at most [`SYMBOL_WIDTH`], longer cells cut there, as perf cuts them).
    pub full_symbols: bool,
}

/// perf c2c's widest Symbol and Source:Line columns without `--full-symbols`.
pub const SYMBOL_WIDTH: usize = 30;

/// perf's name of a display in "Cachelines sort on" and the table's share header.
pub fn display_names(d: Display) -> (&'static str, &'static str) {
    match d {
        Display::Tot => ("Total HITMs", "Tot"),
        Display::Lcl => ("Local HITMs", "Lcl"),
        Display::Rmt => ("Remote HITMs", "Rmt"),
        Display::Peer => ("Peer Snoop", "Peer"),
    }
}

/// `s` centred in `width` as perf's headers centre it (an odd space goes before).
fn centred(s: &str, width: usize) -> String {
    let room = width.saturating_sub(s.chars().count());
    format!("{}{s}{}", " ".repeat(room - room / 2), " ".repeat(room / 2))
}

const RULE: &str = "=================================================";

/// A section's banner: its title placed as perf places it.
fn banner(out: &mut dyn Write, title: &str) -> io::Result<()> {
    let lead = match title {
        "Trace Event Information" => 12,
        "Global Shared Cache Line Event Information" => 4,
        "c2c details" => 17,
        "Shared Data Cache Line Table" => 11,
        _ => 6,
    };
    writeln!(out, "{RULE}")?;
    writeln!(out, "{:<49}", format!("{}{title}", " ".repeat(lead)))?;
    writeln!(out, "{RULE}")
}

fn pct(part: u64, whole: u64) -> String {
    let p = if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    };
    format!("{p:.2}%")
}

/// The mean latency, printed as perf prints it (`%.0f`).
fn avg(sum: u64, n: u64) -> String {
    if n == 0 {
        "0".into()
    } else {
        format!("{:.0}", sum as f64 / n as f64)
    }
}

/// Writes the report; `events` are the recording's event names.
pub fn write(c: &C2c, events: &[String], view: &View, out: &mut dyn Write) -> io::Result<()> {
    let t = &c.total;
    banner(out, "Trace Event Information")?;
    // perf's `: %10d` and `: %10.1f%%`.
    let line = |out: &mut dyn Write, label: &str, v: String| -> io::Result<()> {
        let width = if v.ends_with('%') { 12 } else { 11 };
        writeln!(out, "  {label:<34}:{v:>width$}")
    };
    let misses = t.llc_misses();
    // perf divides by the misses whatever they are: 0/0 prints as C's `-nan`.
    let of_misses = |v: u64| {
        if misses == 0 {
            "-nan%".to_string()
        } else {
            format!("{:.1}%", v as f64 * 100.0 / misses as f64)
        }
    };
    for (label, v) in [
        ("Total records", t.records.to_string()),
        ("Locked Load/Store Operations", t.locks.to_string()),
        ("Load Operations", t.loads.to_string()),
        ("Loads - uncacheable", t.ld_uncache.to_string()),
        ("Loads - IO", t.ld_io.to_string()),
        ("Loads - Miss", t.ld_miss.to_string()),
        ("Loads - no mapping", t.ld_noadrs.to_string()),
        ("Load Fill Buffer Hit", t.ld_fbhit.to_string()),
        ("Load L1D hit", t.ld_l1hit.to_string()),
        ("Load L2D hit", t.ld_l2hit.to_string()),
        ("Load LLC hit", (t.lcl_hit + t.lcl_hitm).to_string()),
        ("Load Local HITM", t.lcl_hitm.to_string()),
        ("Load Remote HITM", t.rmt_hitm.to_string()),
        ("Load Remote HIT", t.rmt_hit.to_string()),
        ("Load Local DRAM", t.lcl_dram.to_string()),
        ("Load Remote DRAM", t.rmt_dram.to_string()),
        ("Load MESI State Exclusive", t.ld_excl.to_string()),
        ("Load MESI State Shared", t.ld_shared.to_string()),
        ("Load LLC Misses", misses.to_string()),
        ("Load access blocked by data", t.blk_data.to_string()),
        ("Load access blocked by address", t.blk_addr.to_string()),
        ("Load HIT Local Peer", t.lcl_peer.to_string()),
        ("Load HIT Remote Peer", t.rmt_peer.to_string()),
        ("LLC Misses to Local DRAM", of_misses(t.lcl_dram)),
        ("LLC Misses to Remote DRAM", of_misses(t.rmt_dram)),
        ("LLC Misses to Remote cache (HIT)", of_misses(t.rmt_hit)),
        ("LLC Misses to Remote cache (HITM)", of_misses(t.rmt_hitm)),
        ("Store Operations", t.stores.to_string()),
        ("Store - uncacheable", t.st_uncache.to_string()),
        ("Store - no mapping", t.st_noadrs.to_string()),
        ("Store L1D Hit", t.st_l1hit.to_string()),
        ("Store L1D Miss", t.st_l1miss.to_string()),
        ("Store No available memory level", t.st_na.to_string()),
        ("No Page Map Rejects", c.no_map.to_string()),
        ("Unable to parse data source", t.noparse.to_string()),
    ] {
        line(out, label, v)?;
    }
    writeln!(out)?;
    banner(out, "Global Shared Cache Line Event Information")?;
    let s = &c.shared;
    for (label, v) in [
        ("Total Shared Cache Lines", c.shared_lines),
        ("Load HITs on shared lines", s.loads),
        ("Fill Buffer Hits on shared lines", s.ld_fbhit),
        ("L1D hits on shared lines", s.ld_l1hit),
        ("L2D hits on shared lines", s.ld_l2hit),
        ("LLC hits on shared lines", s.lcl_hit + s.lcl_hitm),
        ("Load hits on peer cache or nodes", s.lcl_peer + s.rmt_peer),
        ("Locked Access on shared lines", s.locks),
        ("Blocked Access on shared lines", s.blk_data + s.blk_addr),
        ("Store HITs on shared lines", s.stores),
        ("Store L1D hits on shared lines", s.st_l1hit),
        ("Store No available memory level", s.st_na),
        ("Total Merged records", s.hitm() + s.stores),
    ] {
        line(out, label, v.to_string())?;
    }
    writeln!(out)?;
    banner(out, "c2c details")?;
    for (i, e) in events.iter().enumerate() {
        let label = if i == 0 { "Events" } else { "" };
        writeln!(out, "  {label:<34}: {e}")?;
    }
    let (sort_on, _) = display_names(c.display);
    writeln!(out, "  {:<34}: {sort_on}", "Cachelines sort on")?;
    writeln!(
        out,
        "  {:<34}: {}",
        "Cacheline data grouping", view.grouping
    )?;
    if view.stats_only {
        return Ok(());
    }
    writeln!(out)?;
    banner(out, "Shared Data Cache Line Table")?;
    let (head, rows) = table_lines(c);
    for l in head.iter().chain(&rows) {
        writeln!(out, "{l}")?;
    }
    writeln!(out)?;
    banner(out, "Shared Cache Line Distribution Pareto")?;
    let (head, blocks) = pareto_lines(c, view);
    for l in &head {
        writeln!(out, "{l}")?;
    }
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        for l in block {
            writeln!(out, "{l}")?;
        }
    }
    Ok(())
}

/// The Shared Data Cache Line Table under its banner: its header lines, and one row per
/// line shown.
pub fn table_lines(c: &C2c) -> (Vec<String>, Vec<String>) {
    let mut out = Vec::new();
    out.push("#".to_string());
    let peer = c.display == Display::Peer;
    let (kind, share, local, remote) = if peer {
        ("Load Peer", "Snoop", "Local", "Remote")
    } else {
        ("Load Hitm", "Hitm", "LclHitm", "RmtHitm")
    };
    out.push(format!(
        "#        ----------- Cacheline ----------  {:>7}  ------- {kind} -------    Total    Total    Total  --------- Stores --------  ----- Core Load Hit -----  - LLC Load Hit --  - RMT Load Hit --  --- Load Dram ----",
        display_names(c.display).1
    ));
    out.push(format!(
        "# Index             Address  Node  PA cnt  {share:>7}    Total  {local:>7}  {remote:>7}  records    Loads   Stores    L1Hit   L1Miss      N/A       FB       L1       L2    LclHit  LclHitm    RmtHit  RmtHitm       Lcl       Rmt"
    ));
    out.push("# .....  ..................  ....  ......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  ........  .......  ........  .......  ........  ........".to_string());
    out.push("#".to_string());
    let all_hitm = c.display.hitm(&c.shared);
    for (i, l) in c.lines.iter().enumerate() {
        let s: &C2cStats = &l.stats;
        let (total, local, remote) = if peer {
            (s.peer(), s.lcl_peer, s.rmt_peer)
        } else {
            (s.hitm(), s.lcl_hitm, s.rmt_hitm)
        };
        out.push(format!(
            "  {i:>5}  {:>18}  {:>4}  {:>6}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>8}  {:>7}  {:>8}  {:>7}  {:>8}  {:>8}",
            format!("{:#x}", l.addr),
            "N/A",
            0,
            pct(c.display.hitm(s), all_hitm),
            total,
            local,
            remote,
            s.records,
            s.loads,
            s.stores,
            s.st_l1hit,
            s.st_l1miss,
            s.st_na,
            s.ld_fbhit,
            s.ld_l1hit,
            s.ld_l2hit,
            s.lcl_hit,
            s.lcl_hitm,
            s.rmt_hit,
            s.rmt_hitm,
            s.lcl_dram,
            s.rmt_dram,
        ));
    }
    let rows = out.split_off(5);
    (out, rows)
}

/// perf's Node cell at `-N` level `info` (its `node_entry`): per node of the recording the
/// row ran on, its number; at level 1 also its CPUs, its share of the row's displayed HITMs
/// and of its stores (a blank of 21 for a node it did not run on); at level 2 its CPUs.
fn node_cell(c: &C2c, o: &C2cOffset, info: u8) -> String {
    if o.per_node.is_empty() {
        return "N/A".into();
    }
    let share = |part: u64, whole: u64, end: char| {
        if whole == 0 {
            format!("{:>6}{end}", "n/a")
        } else {
            format!("{:5.1}%{end}", part as f64 * 100.0 / whole as f64)
        }
    };
    let mut s = String::new();
    let mut first = true;
    for n in &c.nodes {
        let Some(at) = o.per_node.get(n) else {
            if info == 1 {
                s.push_str(&" ".repeat(21));
            }
            continue;
        };
        if !first {
            s.push(' ');
        }
        first = false;
        match info {
            0 => s.push_str(&format!("{n:>2}")),
            1 => {
                s.push_str(&format!("{n:>2}{{{:>2} ", at.cpus.len()));
                s.push_str(&share(
                    c.display.hitm(&at.stats),
                    c.display.hitm(&o.stats),
                    ' ',
                ));
                s.push_str(&share(at.stats.stores, o.stats.stores, '}'));
            }
            _ => {
                let cpus = CpuList::from_cpus(at.cpus.iter().copied());
                s.push_str(&format!("{n:>2}{{{cpus}}}"));
            }
        }
    }
    s
}

/// The Pid and Tid cells of `-c pid,tid`, each followed by the column gap.
fn thread_cells(o: &C2cOffset) -> String {
    let mut s = String::new();
    if let Some(pid) = o.pid {
        s.push_str(&format!("{pid:>7}  "));
    }
    if let Some((tid, comm)) = &o.tid {
        s.push_str(&format!("{:>15}  ", format!("{tid}:{comm}")));
    }
    s
}

/// The Shared Cache Line Distribution Pareto under its banner: its header lines (the
/// column headers only with a line, as perf prints them with the first), and per line shown
/// its block (the line's counts between rules, then its rows).
pub fn pareto_lines(c: &C2c, view: &View) -> (Vec<String>, Vec<Vec<String>>) {
    let mut out = Vec::new();
    let mut blocks = Vec::new();
    let by = view.coalesce;
    let show_dso = by.iaddr || by.dso;
    let show_src = by.iaddr && !view.no_source;
    let peer = c.display == Display::Peer;
    let rows = || c.lines.iter().flat_map(|l| l.offsets.iter());
    let w = |f: &dyn Fn(&C2cOffset) -> usize, min: usize| rows().map(f).max().unwrap_or(0).max(min);
    let len = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let cap = |width: usize| {
        if view.full_symbols {
            width
        } else {
            width.min(SYMBOL_WIDTH)
        }
    };
    let (ws, wo, wl) = (
        cap(w(&|o| len(&o.symbol), 6)),
        w(&|o| len(&o.dso), 6),
        cap(w(&|o| len(&o.srcline), 11)),
    );
    out.push("#".to_string());
    // perf prints the column headers with the first line: none without a line.
    if c.lines.is_empty() {
        return (out, blocks);
    }
    // The columns of the grouping: Pid (7), Tid (`tid:comm`, 15), Code address (18); after
    // the CPU count Symbol, Object (under "Shared") and Source:Line.
    let (mut gap, mut names, mut dots) = (String::new(), String::new(), String::new());
    for (on, width, name) in [
        (by.pid, 7, "Pid"),
        (by.tid, 15, "Tid"),
        (by.iaddr, 18, "Code address"),
    ] {
        if on {
            gap.push_str(&" ".repeat(width + 2));
            names.push_str(&format!("  {name:>width$}"));
            dots.push_str(&format!("  {}", ".".repeat(width)));
        }
    }
    let (mut top_tail, mut names_tail, mut dots_tail) =
        (String::new(), String::new(), String::new());
    for (on, width, top, name) in [
        (by.iaddr, ws, "", "Symbol"),
        (show_dso, wo, "Shared", "Object"),
        (show_src, wl, "", "Source:Line"),
    ] {
        if on {
            top_tail.push_str(&format!("  {}", centred(top, width)));
            names_tail.push_str(&format!("  {name:>width$}"));
            dots_tail.push_str(&format!("  {}", ".".repeat(width)));
        }
    }
    let node_header = match (view.node_info, peer) {
        (0, _) => "Node",
        (1, false) => "Node{cpus %hitms %stores}",
        (1, true) => "Node{cpus %peers %stores}",
        _ => "Node{cpu list}",
    };
    let (kind, rmt, lcl, rmt_cycles, lcl_cycles) = if peer {
        ("-- Peer Snoop --", "Rmt", "Lcl", "rmt peer", "lcl peer")
    } else {
        (
            "----- HITM -----",
            "RmtHitm",
            "LclHitm",
            "rmt hitm",
            "lcl hitm",
        )
    };
    out.push(format!(
        "#        {kind}  ------- Store Refs ------  --------- Data address ---------  {gap}---------- cycles ----------    Total       cpu{top_tail}      "
    ));
    out.push(format!(
        "#   Num  {rmt:>7}  {lcl:>7}   L1 Hit  L1 Miss      N/A              Offset  Node  PA cnt{names}  {rmt_cycles}  {lcl_cycles}      load  records       cnt{names_tail}  {node_header}"
    ));
    out.push(format!(
        "# .....  .......  .......  .......  .......  .......  ..................  ....  ......{dots}  ........  ........  ........  .......  ........{dots_tail}  ...."
    ));
    out.push("#".to_string());
    let dashes = "-".repeat(70);
    // A row's remote and local counts and latencies under this display.
    let kinds = |t: &C2cStats| {
        if peer {
            (t.rmt_peer, t.lcl_peer, t.rmt_peer_cycles, t.lcl_peer_cycles)
        } else {
            (t.rmt_hitm, t.lcl_hitm, t.rmt_hitm_cycles, t.lcl_hitm_cycles)
        }
    };
    for (i, l) in c.lines.iter().enumerate() {
        let s = &l.stats;
        let (s_rmt, s_lcl, ..) = kinds(s);
        let mut out = Vec::new();
        out.push(format!("  {dashes}"));
        out.push(format!(
            "  {i:>5}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>18}",
            s_rmt,
            s_lcl,
            s.st_l1hit,
            s.st_l1miss,
            s.st_na,
            format!("{:#x}", l.addr)
        ));
        out.push(format!("  {dashes}"));
        for o in &l.offsets {
            let t = &o.stats;
            let code = o
                .iaddr
                .map_or_else(String::new, |a| format!("{:>18}  ", format!("{a:#x}")));
            let mut tail = String::new();
            let src = o.srcline.as_ref().filter(|_| show_src);
            for (cell, width) in [(o.symbol.as_ref(), ws), (o.dso.as_ref(), wo), (src, wl)] {
                if let Some(cell) = cell {
                    // A cell longer than its column is cut at its width.
                    let cell: String = cell.chars().take(width).collect();
                    tail.push_str(&format!("  {cell:<width$}"));
                }
            }
            let (rmt, lcl, rmt_cycles, lcl_cycles) = kinds(t);
            out.push(format!(
                "  {:>5}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>18}  {:>4}  {:>6}  {}{code}{:>8}  {:>8}  {:>8}  {:>7}  {:>8}{tail}  {}",
                "",
                pct(rmt, s_rmt),
                pct(lcl, s_lcl),
                pct(t.st_l1hit, s.st_l1hit),
                pct(t.st_l1miss, s.st_l1miss),
                pct(t.st_na, s.st_na),
                format!("{:#x}", o.offset),
                "N/A",
                0,
                thread_cells(o),
                avg(rmt_cycles, rmt),
                avg(lcl_cycles, lcl),
                avg(t.load_cycles, t.loads - t.hitm() - t.peer()),
                t.records,
                o.cpus.len(),
                node_cell(c, o, view.node_info),
            ));
        }
        blocks.push(out);
    }
    (out, blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_and_means_as_perf_prints_them() {
        assert_eq!(pct(1, 3), "33.33%");
        assert_eq!(pct(0, 0), "0.00%");
        assert_eq!(avg(0, 0), "0");
        assert_eq!(avg(806, 4), "202");
        assert_eq!(avg(603, 3), "201");
    }

    #[test]
    fn an_empty_report_has_every_section() {
        let mut out = Vec::new();
        write(
            &C2c::default(),
            &["cpu/mem-loads,ldlat=30/P".into()],
            &View::default(),
            &mut out,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        for title in [
            "Trace Event Information",
            "Shared Data Cache Line Table",
            "Shared Cache Line Distribution Pareto",
        ] {
            assert!(text.contains(title), "{text}");
        }
        assert!(text.contains("  Events                            : cpu/mem-loads,ldlat=30/P"));
    }
}
