//! `hrec c2c report --stdio`: perf c2c report's text (perf 6.1's `--stdio` layout): the
//! event totals, the "Shared Data Cache Line Table" (one row per line with HITMs:
//! its HITM share, load and store classes) and the "Shared Cache Line Distribution Pareto"
//! (per line, its (offset, code address) rows with their shares of the line's HITMs and
//! stores, average latencies, CPUs, function, object, source line and NUMA nodes; with `-c
//! pid,tid` perf's Pid and Tid columns before the code address). `--json`
//! is the analysis's own structure ([`crate::analysis::c2c::C2c`]) with the threads that
//! read and wrote each offset.

use std::io::{self, Write};

use crate::analysis::c2c::{C2c, C2cOffset, C2cStats};

const RULE: &str = "=================================================";

fn banner(out: &mut dyn Write, title: &str) -> io::Result<()> {
    writeln!(out, "{RULE}")?;
    writeln!(out, "{title:^49}")?;
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
pub fn write(c: &C2c, events: &[String], out: &mut dyn Write) -> io::Result<()> {
    let t = &c.total;
    banner(out, "Trace Event Information")?;
    let line = |out: &mut dyn Write, label: &str, v: String| -> io::Result<()> {
        writeln!(out, "  {label:<34}:{v:>11}")
    };
    for (label, v) in [
        ("Total records", t.records),
        ("Load Operations", t.loads),
        ("Load Fill Buffer Hit", t.ld_fbhit),
        ("Load L1D hit", t.ld_l1hit),
        ("Load L2D hit", t.ld_l2hit),
        ("Load LLC hit", t.lcl_hit + t.lcl_hitm),
        ("Load Local HITM", t.lcl_hitm),
        ("Load Remote HITM", t.rmt_hitm),
        ("Load Remote HIT", t.rmt_hit),
        ("Load Local DRAM", t.lcl_dram),
        ("Load Remote DRAM", t.rmt_dram),
        ("Store Operations", t.stores),
        ("Store L1D Hit", t.st_l1hit),
        ("Store L1D Miss", t.st_l1miss),
        ("Store No available memory level", t.st_na),
        ("No Page Map Rejects", c.no_address),
    ] {
        line(out, label, v.to_string())?;
    }
    writeln!(out)?;
    banner(out, "Global Shared Cache Line Event Information")?;
    let s = &c.shared;
    for (label, v) in [
        ("Total Shared Cache Lines", c.lines.len() as u64),
        ("Load HITs on shared lines", s.loads),
        ("Fill Buffer Hits on shared lines", s.ld_fbhit),
        ("L1D hits on shared lines", s.ld_l1hit),
        ("L2D hits on shared lines", s.ld_l2hit),
        ("LLC hits on shared lines", s.lcl_hit + s.lcl_hitm),
        ("Store HITs on shared lines", s.stores),
        ("Store L1D hits on shared lines", s.st_l1hit),
        ("Store No available memory level", s.st_na),
    ] {
        line(out, label, v.to_string())?;
    }
    writeln!(out)?;
    banner(out, "c2c details")?;
    for (i, e) in events.iter().enumerate() {
        let label = if i == 0 { "Events" } else { "" };
        writeln!(out, "  {label:<34}: {e}")?;
    }
    writeln!(out, "  {:<34}: Total HITMs", "Cachelines sort on")?;
    let rows = || c.lines.iter().flat_map(|l| l.offsets.iter());
    let grouping = format!(
        "offset{}{},iaddr",
        if rows().any(|o| o.pid.is_some()) {
            ",pid"
        } else {
            ""
        },
        if rows().any(|o| o.tid.is_some()) {
            ",tid"
        } else {
            ""
        }
    );
    writeln!(out, "  {:<34}: {grouping}", "Cacheline data grouping")?;
    writeln!(out)?;
    lines_table(c, out)?;
    writeln!(out)?;
    pareto(c, out)
}

fn lines_table(c: &C2c, out: &mut dyn Write) -> io::Result<()> {
    banner(out, "Shared Data Cache Line Table")?;
    writeln!(out, "#")?;
    writeln!(
        out,
        "#        ----------- Cacheline ----------      Tot  ------- Load Hitm -------    Total    Total    Total  --------- Stores --------  ----- Core Load Hit -----  - LLC Load Hit --  - RMT Load Hit --  --- Load Dram ----"
    )?;
    writeln!(
        out,
        "# Index             Address  Node  PA cnt     Hitm    Total  LclHitm  RmtHitm  records    Loads   Stores    L1Hit   L1Miss      N/A       FB       L1       L2    LclHit  LclHitm    RmtHit  RmtHitm       Lcl       Rmt"
    )?;
    writeln!(
        out,
        "# .....  ..................  ....  ......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  ........  .......  ........  .......  ........  ........"
    )?;
    writeln!(out, "#")?;
    let all_hitm = c.shared.hitm();
    for (i, l) in c.lines.iter().enumerate() {
        let s: &C2cStats = &l.stats;
        writeln!(
            out,
            "  {i:>5}  {:>18}  {:>4}  {:>6}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>8}  {:>7}  {:>8}  {:>7}  {:>8}  {:>8}",
            format!("{:#x}", l.addr),
            "N/A",
            0,
            pct(s.hitm(), all_hitm),
            s.hitm(),
            s.lcl_hitm,
            s.rmt_hitm,
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
        )?;
    }
    Ok(())
}

fn nodes(o: &C2cOffset) -> String {
    if o.nodes.is_empty() {
        return "N/A".into();
    }
    let v: Vec<String> = o.nodes.iter().map(u32::to_string).collect();
    v.join(",")
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

fn pareto(c: &C2c, out: &mut dyn Write) -> io::Result<()> {
    banner(out, "Shared Cache Line Distribution Pareto")?;
    let rows = || c.lines.iter().flat_map(|l| l.offsets.iter());
    let (by_pid, by_tid) = (
        rows().any(|o| o.pid.is_some()),
        rows().any(|o| o.tid.is_some()),
    );
    let w = |f: &dyn Fn(&C2cOffset) -> usize, min: usize| rows().map(f).max().unwrap_or(0).max(min);
    let (ws, wo, wl) = (
        w(&|o| o.symbol.len(), 6),
        w(&|o| o.dso.len(), 6),
        w(&|o| o.srcline.len(), 11),
    );
    writeln!(out, "#")?;
    // `-c pid,tid`: a Pid (7) and a Tid (`tid:comm`, 15) column before the code address.
    let (mut gap, mut names, mut dots) = (String::new(), String::new(), String::new());
    if by_pid {
        gap.push_str(&" ".repeat(9));
        names.push_str("      Pid  ");
        dots.push_str(".......  ");
    }
    if by_tid {
        gap.push_str(&" ".repeat(17));
        names.push_str("            Tid  ");
        dots.push_str("...............  ");
    }
    writeln!(
        out,
        "#        ----- HITM -----  ------- Store Refs ------  --------- Data address ---------                      {gap}---------- cycles ----------    Total       cpu  {:ws$}  {:^wo$}  {:wl$}      ",
        "", "Shared", ""
    )?;
    writeln!(
        out,
        "#   Num  RmtHitm  LclHitm   L1 Hit  L1 Miss      N/A              Offset  Node  PA cnt{}        Code address  rmt hitm  lcl hitm      load  records       cnt  {:>ws$}  {:>wo$}  {:>wl$}  Node",
        names.trim_end(),
        "Symbol",
        "Object",
        "Source:Line"
    )?;
    writeln!(
        out,
        "# .....  .......  .......  .......  .......  .......  ..................  ....  ......  {dots}..................  ........  ........  ........  .......  ........  {}  {}  {}  ....",
        ".".repeat(ws),
        ".".repeat(wo),
        ".".repeat(wl)
    )?;
    writeln!(out, "#")?;
    let dashes = "-".repeat(70);
    for (i, l) in c.lines.iter().enumerate() {
        let s = &l.stats;
        writeln!(out, "  {dashes}")?;
        writeln!(
            out,
            "  {i:>5}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>18}",
            s.rmt_hitm,
            s.lcl_hitm,
            s.st_l1hit,
            s.st_l1miss,
            s.st_na,
            format!("{:#x}", l.addr)
        )?;
        writeln!(out, "  {dashes}")?;
        for o in &l.offsets {
            let t = &o.stats;
            writeln!(
                out,
                "  {:>5}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>18}  {:>4}  {:>6}  {}{:>18}  {:>8}  {:>8}  {:>8}  {:>7}  {:>8}  {:<ws$}  {:<wo$}  {:<wl$}  {:>4}",
                "",
                pct(t.rmt_hitm, s.rmt_hitm),
                pct(t.lcl_hitm, s.lcl_hitm),
                pct(t.st_l1hit, s.st_l1hit),
                pct(t.st_l1miss, s.st_l1miss),
                pct(t.st_na, s.st_na),
                format!("{:#x}", o.offset),
                "N/A",
                0,
                thread_cells(o),
                format!("{:#x}", o.iaddr),
                avg(t.rmt_hitm_cycles, t.rmt_hitm),
                avg(t.lcl_hitm_cycles, t.lcl_hitm),
                avg(t.load_cycles, t.loads - t.hitm()),
                t.records,
                o.cpus.len(),
                o.symbol,
                o.dso,
                o.srcline,
                nodes(o),
            )?;
        }
        if i + 1 < c.lines.len() {
            writeln!(out)?;
        }
    }
    Ok(())
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
