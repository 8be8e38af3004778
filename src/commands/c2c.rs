//! `hrec c2c record` / `hrec c2c report`: perf c2c. Recording is `record` with perf c2c
//! record's events (loads with their latency threshold and stores on every core PMU, as `mem
//! record` chooses them) and its sample type (`-W -d --phys-data --sample-cpu`); reporting
//! folds the samples by CPU, thread, code address and data access and prints the cache lines
//! that bounce between cores (`analysis::c2c`, `output::c2c`).

use std::io::{self, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand};
use hrec::analysis::c2c::Coalesce;
use hrec::analysis::profile::{FoldKeys, MemFold};
use hrec::event::plan::mem::{DEFAULT_LDLAT, MemOps, MemOptions};

use super::args::{FilterArgs, SymbolArgs, input_file, reading_options};
use super::reading::{build_profile, open_recording, read_warnings, with_threads};
use super::record::RecordArgs;
use super::{Env, Error};

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
    Record(Box<C2cRecordArgs>),
    /// The shared cache lines: HITMs per line and per offset, who reads and writes them.
    Report(C2cReportArgs),
}

/// `hrec c2c record` flags: perf c2c record's plus every flag of `hrec record`.
#[derive(Debug, Args)]
pub struct C2cRecordArgs {
    /// Loads slower than this many cycles are sampled (the PMU's ldlat).
    #[arg(short = 'l', long = "ldlat", value_name = "CYCLES", default_value_t = DEFAULT_LDLAT)]
    pub ldlat: u32,
    #[command(flatten)]
    pub record: RecordArgs,
}

/// `hrec c2c report` flags.
#[derive(Debug, Args)]
pub struct C2cReportArgs {
    /// Input file [default: hrec.data, else perf.data when only that is here].
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
    /// Print text (the only view: accepted for perf compatibility).
    #[arg(long)]
    pub stdio: bool,
    /// JSON: every shown line with its offsets, counts, CPUs, nodes, readers and writers.
    #[arg(long, conflicts_with = "stdio")]
    pub json: bool,
    /// What a line's rows are told apart by: offset and iaddr (the code address) always,
    /// pid and tid when listed (perf's -c/--coalesce).
    #[arg(
        short = 'c',
        long = "coalesce",
        value_name = "offset,iaddr,pid,tid",
        default_value = "offset,iaddr",
        value_parser = parse_coalesce
    )]
    pub coalesce: Coalesce,
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
        },
        comm: a.coalesce.tid,
        cgroup: false,
        cgroup_ns: false,
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
    let c = hrec::analysis::c2c::build(&p, a.coalesce, &node_of);
    if c.total.loads + c.total.stores == 0 {
        writeln!(
            err,
            "hrec: warning: {} has no load or store samples with data sources: record with `hrec c2c record` (or perf c2c record)",
            input.display()
        )?;
    }
    if a.json {
        serde_json::to_writer_pretty(&mut *out, &c).map_err(io::Error::from)?;
        writeln!(out)?;
    } else {
        let events: Vec<String> = p.events.iter().map(|e| e.name.clone()).collect();
        hrec::output::c2c::write(&c, &events, out)?;
    }
    Ok(0)
}

/// `-c offset,iaddr,pid,tid`: offset and iaddr are always part of the grouping.
fn parse_coalesce(s: &str) -> Result<Coalesce, String> {
    let mut c = Coalesce::default();
    for k in s.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        match k {
            "offset" | "iaddr" => {}
            "pid" => c.pid = true,
            "tid" => c.tid = true,
            "dso" => {
                return Err(
                    "dso: rows are not told apart by object yet; use offset,iaddr,pid,tid".into(),
                );
            }
            other => {
                return Err(format!(
                    "unknown key {other:?}: use offset, iaddr, pid, tid"
                ));
            }
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalesce_keys() {
        assert_eq!(parse_coalesce("offset,iaddr"), Ok(Coalesce::default()));
        assert_eq!(
            parse_coalesce("tid,iaddr"),
            Ok(Coalesce {
                pid: false,
                tid: true
            })
        );
        assert_eq!(
            parse_coalesce("pid,tid"),
            Ok(Coalesce {
                pid: true,
                tid: true
            })
        );
        assert!(parse_coalesce("dso").is_err());
        assert!(parse_coalesce("cl").unwrap_err().contains("\"cl\""));
    }
}
