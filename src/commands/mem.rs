//! `hrec mem record` / `hrec mem report`: perf mem. Recording is `record` with the memory
//! events `event::plan::mem` chooses per core PMU (loads with their latency threshold, the
//! auxiliary leader where the PMU needs one, stores), `-d` and weights; reporting is `report`
//! in memory mode (each sample weighs its load latency) with perf mem report's default keys.
//!
//! As in perf, `-t` is the memory operation here (`load`, `store`, `load,store`), so `mem
//! record` takes the thread target as `--tid` only.

use std::io::Write;

use clap::{Args, Subcommand};
use hrec::event::plan::mem::{DEFAULT_LDLAT, MemOps, MemOptions};

use super::record::RecordArgs;
use super::report::ReportArgs;
use super::{Env, Error};

/// perf mem report's keys when loads were sampled (perf 6.1's memory-mode default, less
/// `local_p_stage_cyc`, which perf shows only on POWER).
pub const LOAD_SORT: &str =
    "local_weight,mem,sym,dso,symbol_daddr,dso_daddr,snoop,tlb,locked,blocked,local_ins_lat";
/// perf mem report's keys for stores alone (`-t store`): stores carry no latency.
pub const STORE_SORT: &str = "mem,sym,dso,symbol_daddr,dso_daddr,tlb,locked";
/// perf mem report's keys for loads with `-p` or `--data-page-size` (perf 6.1's
/// `get_sort_order`: its memory-mode default is not used then, so no `local_ins_lat`), before
/// `phys_daddr` and `data_page_size`.
pub const EXTRA_SORT: &str =
    "local_weight,mem,sym,dso,symbol_daddr,dso_daddr,snoop,tlb,locked,blocked";

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec mem record -- ./prog
          Sample ./prog's loads and stores with their data addresses.
  hrec mem report --stdio
          Where they went, weighed by load latency.
  hrec mem record -t store -- ./prog
          Stores only.";

/// `hrec mem`.
#[derive(Debug, Args)]
pub struct MemArgs {
    /// record or report.
    #[command(subcommand)]
    pub command: MemCmd,
}

/// `hrec mem` subcommands.
#[derive(Debug, Subcommand)]
pub enum MemCmd {
    /// Sample memory loads and stores (data addresses, data sources, load latencies).
    #[command(after_help = RECORD_EXAMPLES)]
    Record(MemRecordArgs),
    /// Where the sampled memory accesses went, weighed by their latency.
    #[command(after_help = REPORT_EXAMPLES)]
    Report(MemReportArgs),
}

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const RECORD_EXAMPLES: &str = "Examples:
  hrec mem record -- ./prog
          Loads slower than 30 cycles, and stores, of ./prog.
  hrec mem record --ldlat 100 -t load -- ./prog
          Only loads slower than 100 cycles.
  hrec mem record -a -- sleep 5
          Every CPU for 5 seconds.";

/// `hrec mem record` flags: perf mem's plus every flag of `hrec record` (`-t` is the
/// operation; threads are `--tid`).
#[derive(Debug, Args)]
#[command(mut_arg("tid", |a| a.short(None)))]
pub struct MemRecordArgs {
    /// Memory operations to sample: load, store or load,store.
    #[arg(short = 't', long = "type", value_name = "load|store|load,store", default_value_t = MemOps::default())]
    pub ops: MemOps,
    /// Loads slower than this many cycles are sampled (the PMU's ldlat).
    #[arg(long = "ldlat", value_name = "CYCLES", default_value_t = DEFAULT_LDLAT)]
    pub ldlat: u32,
    #[command(flatten)]
    pub record: RecordArgs,
}

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const REPORT_EXAMPLES: &str = "Examples:
  hrec mem report --stdio
          Per latency, data source, function and data symbol.
  hrec mem report --sort mem,sym --stdio
          Per data source and function.
  hrec mem report -t store --stdio
          Of a stores-only recording (no latency).";

/// `hrec mem report` flags: perf mem's plus every flag of `hrec report`.
#[derive(Debug, Args)]
pub struct MemReportArgs {
    /// The operations recorded: with `store` alone the default keys leave out the latency
    /// (perf mem report's rule).
    #[arg(short = 't', long = "type", value_name = "load|store|load,store", default_value_t = MemOps::default())]
    pub ops: MemOps,
    /// Add the data page size to the default keys (perf mem report's --data-page-size).
    #[arg(long = "data-page-size")]
    pub data_page_size: bool,
    /// Add the physical address of the data to the default keys (`phys_daddr`, "Data
    /// Physical Address"; recorded with `--phys-data`), perf mem report's -p/--phys-data.
    #[arg(short = 'p', long = "phys-data")]
    pub phys_data: bool,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// Runs `hrec mem ...`.
pub fn exec(
    args: MemArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    match args.command {
        MemCmd::Record(a) => super::record::exec_mem(
            a.record,
            MemOptions {
                ops: a.ops,
                ldlat: a.ldlat,
            },
            false,
            env,
            out,
            err,
        ),
        MemCmd::Report(a) => super::report::exec(report_args(a), env, out, err),
    }
}

/// `report --mem-mode` with perf mem report's keys unless `-s`/`-F` give others: for loads
/// its default, or with `-p`/`--data-page-size` its shorter list; for stores alone the store
/// keys; then `phys_daddr` (`-p`) and `data_page_size` (`--data-page-size`).
fn report_args(a: MemReportArgs) -> ReportArgs {
    let mut r = a.report;
    r.mem_mode = true;
    if r.sort.is_none() && r.fields.is_none() {
        let mut keys = String::from(match (a.ops.load, a.phys_data || a.data_page_size) {
            (false, _) => STORE_SORT,
            (true, true) => EXTRA_SORT,
            (true, false) => LOAD_SORT,
        });
        if a.phys_data {
            keys.push_str(",phys_daddr");
        }
        if a.data_page_size {
            keys.push_str(",data_page_size");
        }
        r.sort = Some(keys);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Cmd};
    use super::*;
    use clap::Parser as _;

    fn mem(args: &[&str]) -> Result<MemCmd, String> {
        let mut v = vec!["hrec", "mem"];
        v.extend_from_slice(args);
        match Cli::try_parse_from(v).map_err(|e| e.to_string())?.command {
            Cmd::Mem(m) => Ok(m.command),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn t_is_the_operation_and_threads_are_tid() {
        let Ok(MemCmd::Record(r)) = mem(&["record", "-t", "store", "--tid", "7", "--ldlat", "50"])
        else {
            panic!()
        };
        assert_eq!((r.ops.load, r.ops.store, r.ldlat), (false, true, 50));
        assert_eq!(r.record.target.tid, [7]);
        let Ok(MemCmd::Record(r)) = mem(&["record", "--dry-run", "--", "true"]) else {
            panic!()
        };
        assert_eq!((r.ops, r.ldlat), (MemOps::default(), 30));
        assert!(mem(&["record", "-t", "fetch"]).is_err());
    }

    #[test]
    fn report_defaults_to_perf_mem_reports_keys() {
        let Ok(MemCmd::Report(r)) = mem(&["report", "--stdio"]) else {
            panic!()
        };
        let r = report_args(r);
        assert!(r.mem_mode && r.stdio);
        assert_eq!(r.sort.as_deref(), Some(LOAD_SORT));
        let Ok(MemCmd::Report(r)) = mem(&["report", "-t", "store"]) else {
            panic!()
        };
        assert_eq!(report_args(r).sort.as_deref(), Some(STORE_SORT));
        let Ok(MemCmd::Report(r)) = mem(&["report", "-s", "mem", "--json"]) else {
            panic!()
        };
        assert_eq!(report_args(r).sort.as_deref(), Some("mem"));
        let Ok(MemCmd::Report(r)) = mem(&["report", "--data-page-size"]) else {
            panic!()
        };
        assert_eq!(
            report_args(r).sort,
            Some(format!("{EXTRA_SORT},data_page_size"))
        );
        let Ok(MemCmd::Report(r)) = mem(&["report", "-p", "--data-page-size"]) else {
            panic!()
        };
        assert!(r.phys_data);
        assert_eq!(
            report_args(r).sort,
            Some(format!("{EXTRA_SORT},phys_daddr,data_page_size"))
        );
        let Ok(MemCmd::Report(r)) = mem(&["report", "--phys-data", "-t", "store"]) else {
            panic!()
        };
        assert_eq!(
            report_args(r).sort,
            Some(format!("{STORE_SORT},phys_daddr"))
        );
        let Ok(MemCmd::Report(r)) = mem(&["report", "-p", "-s", "mem"]) else {
            panic!()
        };
        assert_eq!(report_args(r).sort.as_deref(), Some("mem"));
    }
}
