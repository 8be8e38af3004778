//! `hrec c2c record` / `hrec c2c report`: perf c2c. Recording is `record` with perf c2c
//! record's events (loads with their latency threshold and stores on every core PMU, as `mem
//! record` chooses them) and its sample type (`-W -d --phys-data --sample-cpu`); reporting
//! folds the samples by CPU, thread, code address and data access and prints the cache lines
//! that bounce between cores (`analysis::c2c`, `output::c2c`).

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand};
use hrec::analysis::c2c::{Coalesce, Display};
use hrec::analysis::profile::{FoldKeys, MemFold};
use hrec::event::plan::mem::{DEFAULT_LDLAT, MemOps, MemOptions};

use super::args::{FilterArgs, SymbolArgs, input_file, reading_options};
use super::reading::{build_profile, open_recording, read_warnings, with_threads};
use super::record::RecordArgs;
use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec c2c record -a -- sleep 5
          Sample every CPU's loads and stores for 5 seconds.
  hrec c2c report --stdio
          The cache lines with HITMs, and who touches them.
  hrec c2c report --stats
          Only the totals.";

/// `hrec c2c`.
#[derive(Debug, Args)]
pub struct C2cArgs {
    /// record or report.
    #[command(subcommand)]
    pub command: C2cCmd,
}

/// `hrec c2c` subcommands.
#[derive(Debug, Subcommand)]
pub enum C2cCmd {
    /// Sample loads and stores with data addresses, physical addresses and CPUs.
    #[command(after_help = RECORD_EXAMPLES)]
    Record(Box<C2cRecordArgs>),
    /// The shared cache lines: HITMs per line and per offset, who reads and writes them.
    #[command(after_help = REPORT_EXAMPLES)]
    Report(C2cReportArgs),
}

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const RECORD_EXAMPLES: &str = "Examples:
  hrec c2c record -- ./prog
          Loads and stores of ./prog with their addresses and CPUs.
  hrec c2c record -a -- sleep 5
          Every CPU for 5 seconds.
  hrec c2c record -l 50 -- ./prog
          Only loads slower than 50 cycles.";

/// `hrec c2c record` flags: perf c2c record's plus every flag of `hrec record`.
#[derive(Debug, Args)]
pub struct C2cRecordArgs {
    /// Loads slower than this many cycles are sampled (the PMU's ldlat).
    #[arg(short = 'l', long = "ldlat", value_name = "CYCLES", default_value_t = DEFAULT_LDLAT)]
    pub ldlat: u32,
    #[command(flatten)]
    pub record: RecordArgs,
}

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const REPORT_EXAMPLES: &str = "Examples:
  hrec c2c report --stdio
          The shared lines, most HITMs first, with their offsets.
  hrec c2c report -c tid,iaddr --stdio
          A line's rows per thread and code address.
  hrec c2c report -d lcl --full-symbols --stdio
          By local HITMs, with whole function names.
  hrec c2c report --stats
          Only the event totals and details.";

/// `hrec c2c report` flags.
#[derive(Debug, Args)]
pub struct C2cReportArgs {
    /// Input file [default: hrec.data, else perf.data when only that is here].
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
    /// Print the text even on a terminal (where the interactive view is the default).
    #[arg(long, conflicts_with = "tui")]
    pub stdio: bool,
    /// The interactive view (the default when stdin and stdout are terminals).
    #[arg(long)]
    pub tui: bool,
    /// JSON: every shown line with its offsets, counts, CPUs, nodes, readers and writers.
    #[arg(long, conflicts_with_all = ["stdio", "tui"])]
    pub json: bool,
    /// What a line's rows are told apart by besides the offset: pid, tid, iaddr (the code
    /// address, with its function, object and source line), dso (the code's object), as
    /// perf's -c/--coalesce.
    #[arg(
        short = 'c',
        long = "coalesce",
        value_name = "pid,tid,iaddr,dso",
        default_value = "iaddr"
    )]
    pub coalesce: String,
    /// Which loads sort and filter the lines and rows: HITMs tot (local and remote), lcl or
    /// rmt, or peer (loads served by a peer cache) (perf's -d/--display; perf 6.1's default
    /// on x86 is tot).
    #[arg(
        short = 'd',
        long = "display",
        value_name = "tot|lcl|rmt|peer",
        default_value = "tot",
        value_parser = parse_display
    )]
    pub display: Display,
    /// The Pareto's Node column: -N adds per node the CPUs, the share of the row's
    /// displayed HITMs and of its stores; -NN the node's CPUs instead (perf's -N/--node-info).
    #[arg(short = 'N', long = "node-info", action = clap::ArgAction::Count)]
    pub node_info: u8,
    /// Only the event totals and details, without the line tables (perf's --stats).
    #[arg(long)]
    pub stats: bool,
    /// Every line with a sample, not only those with at least 0.1% of the displayed loads
    /// of the shared lines (perf's --show-all).
    #[arg(long = "show-all")]
    pub show_all: bool,
    /// No Source:Line column (perf's --no-source).
    #[arg(long = "no-source")]
    pub no_source: bool,
    /// Symbols and source lines whole (without it, cut at 30 columns, as perf c2c does).
    #[arg(long = "full-symbols")]
    pub full_symbols: bool,
    #[command(flatten)]
    pub symbols: SymbolArgs,
}

/// Runs `hrec c2c ...`.
pub fn exec(
    args: C2cArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    match args.command {
        C2cCmd::Record(a) => super::record::exec_mem(
            a.record,
            MemOptions {
                ops: MemOps::default(),
                ldlat: a.ldlat,
            },
            true,
            env,
            out,
            err,
        ),
        C2cCmd::Report(a) => report(a, env, out, err),
    }
}

fn report(
    a: C2cReportArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    let coalesce = parse_coalesce(&a.coalesce).map_err(|e| Error::Usage(format!("-c: {e}")))?;
    let terminal = io::stdout().is_terminal() && io::stdin().is_terminal();
    if a.tui && !terminal {
        return Err(Error::Usage(
            "--tui needs a terminal on stdin and stdout; leave it out (or give --stdio) to print the report as text"
                .into(),
        ));
    }
    // perf's --stats implies --stdio.
    let tui = a.tui || (terminal && !a.stdio && !a.json && !a.stats);
    let (mut opts, _) = reading_options(a.symbols, FilterArgs::default()).map_err(Error::Usage)?;
    // Per thread, CPU and code address; the data address, its source and the latency.
    opts.fold = FoldKeys {
        mem: MemFold {
            daddr: true,
            data_src: true,
            weight: true,
            page_size: false,
            ins_lat: false,
            types: false,
            phys: false,
        },
        comm: coalesce.tid,
        cgroup: false,
        cgroup_ns: false,
        trace: false,
        trace_fields: false,
        ..FoldKeys::ALL
    };
    let input = input_file(a.input);
    let rec = open_recording(env, &input, err)?;
    let p = build_profile(env, &rec, &with_threads(&opts, env), "hrec c2c report");
    read_warnings(&rec, err)?;
    // Each CPU's NUMA node, from the recording's topology.
    let nodes: Vec<(u32, hrec::pmu::CpuList)> = rec
        .meta()
        .numa_nodes
        .iter()
        .filter_map(|(n, cpus)| Some((*n, cpus.parse().ok()?)))
        .collect();
    let node_of = |cpu: u32| nodes.iter().find(|(_, l)| l.contains(cpu)).map(|(n, _)| *n);
    let mut node_ids: Vec<u32> = nodes.iter().map(|(n, _)| *n).collect();
    node_ids.sort_unstable();
    let c = hrec::analysis::c2c::build(&p, coalesce, a.display, a.show_all, &node_ids, &node_of);
    let has = |bit: u64| {
        rec.meta()
            .events
            .iter()
            .any(|e| e.attr.sample_type & bit != 0)
    };
    if c.total.loads + c.total.stores == 0 {
        writeln!(
            err,
            "hrec: warning: {} has no load or store samples with data sources: record with `hrec c2c record` (or perf c2c record); only its records are counted",
            input.display()
        )?;
    } else if !has(hrec::event::attr::sample::ADDR) {
        writeln!(
            err,
            "hrec: warning: {}'s samples have no data address (PERF_SAMPLE_ADDR: record with `hrec c2c record` or -d): no cache line can be told; the load and store totals still count them",
            input.display()
        )?;
    }
    if a.json {
        serde_json::to_writer_pretty(&mut *out, &c).map_err(io::Error::from)?;
        writeln!(out)?;
    } else {
        let events: Vec<String> = p.events.iter().map(|e| e.name.clone()).collect();
        let view = hrec::output::c2c::View {
            grouping: format!("offset,{}", a.coalesce),
            coalesce,
            node_info: a.node_info.min(2),
            stats_only: a.stats,
            no_source: a.no_source,
            full_symbols: a.full_symbols,
        };
        if tui {
            let sort_on = hrec::output::c2c::display_names(a.display).0;
            let mut v = hrec::output::c2c_tui::C2cView::new(&c, &view, sort_on);
            hrec::output::c2c_tui::run(&mut v)?;
        } else {
            hrec::output::c2c::write(&c, &events, &view, out)?;
        }
    }
    Ok(0)
}

/// `-c pid,tid,iaddr,dso`: the keys besides the offset (which is always one), as perf.
fn parse_coalesce(s: &str) -> Result<Coalesce, String> {
    let mut c = Coalesce::default();
    for k in s.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        match k {
            "offset" => {}
            "iaddr" => c.iaddr = true,
            "pid" => c.pid = true,
            "tid" => c.tid = true,
            "dso" => c.dso = true,
            other => {
                return Err(format!("unknown key {other:?}: use pid, tid, iaddr, dso"));
            }
        }
    }
    Ok(c)
}

/// `-d tot|lcl|rmt`.
fn parse_display(s: &str) -> Result<Display, String> {
    match s {
        "tot" => Ok(Display::Tot),
        "lcl" => Ok(Display::Lcl),
        "rmt" => Ok(Display::Rmt),
        "peer" => Ok(Display::Peer),
        other => Err(format!(
            "unknown display {other:?}: use tot, lcl, rmt or peer"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalesce_keys() {
        assert_eq!(parse_coalesce("offset,iaddr"), Ok(Coalesce::DEFAULT));
        let tid = parse_coalesce("tid,iaddr").unwrap();
        assert!(tid.tid && tid.iaddr && !tid.pid && !tid.dso);
        let dso = parse_coalesce("pid,dso").unwrap();
        assert!(dso.pid && dso.dso && !dso.iaddr && !dso.tid);
        assert_eq!(dso.names(), "offset,pid,dso");
        assert!(parse_coalesce("cl").unwrap_err().contains("\"cl\""));
    }

    #[test]
    fn display_values_are_perfs() {
        assert_eq!(parse_display("tot"), Ok(Display::Tot));
        assert_eq!(parse_display("lcl"), Ok(Display::Lcl));
        assert_eq!(parse_display("rmt"), Ok(Display::Rmt));
        assert_eq!(parse_display("peer"), Ok(Display::Peer));
        assert!(parse_display("all").unwrap_err().contains("\"all\""));
    }
}
