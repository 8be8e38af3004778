//! One module per `hrec` command, as cargo keeps `commands/<name>.rs`: each holds its flags
//! (clap `Args`), their conversion into the library's plain options, and the function that
//! runs it. Flag groups that several commands share (`-a/-C/-p/-t`, `-e/-F/-c`, the symbol
//! search and the sample filters) are declared once in [`args`] and flattened; what every
//! reading command does with a recording (open it with its warnings, fold it with a progress
//! bar) is in [`reading`].
//!
//! The library never sees clap types: nothing below `exec` of a command passes one on.
//! Exit codes: 0 ok, 1 error, 2 usage ([`Error::is_usage`]); a recorded workload's own status
//! is passed through.

mod annotate;
mod archive;
mod args;
mod buildid_cache;
mod buildid_list;
mod c2c;
mod convert;
mod diff;
mod evlist;
mod export;
mod flamegraph;
mod generate;
mod info;
mod list;
mod mem;
mod metric_views;
mod probe;
mod reading;
mod record;
mod report;
mod script;
mod stat;
mod top;

use std::io::{self, Write};
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use hrec::event::plan;
use hrec::pmu::PmuError;
use hrec::record::RecordError;
use hrec::recording::RecordingError;

use args::InputArgs;

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
const EXAMPLES: &str = "Examples:
  hrec record -g -- ./prog
          Sample ./prog (cycles, with call chains) into hrec.data.
  hrec report --stdio
          Where the samples landed, per function.
  hrec stat --topdown -- ./prog
          Count ./prog's events with the TopDown breakdown.
  hrec top
          The machine's hottest functions, refreshed.
  hrec list
          The events and metrics of this machine.
  hrec export --format pprof
          profile.pb.gz for go tool pprof.";

/// hrec: sampling profiler for modern Intel PMUs (hybrid, TopDown, retire latency).
#[derive(Debug, Parser)]
#[command(name = "hrec", version = env!("HREC_VERSION"), about, propagate_version = true)]
#[command(after_help = EXAMPLES)]
pub struct Cli {
    /// Be more verbose (repeat for more).
    // Shown after each command's own flags (it is everywhere, and rarely what one looks for).
    #[arg(short, long, action = clap::ArgAction::Count, global = true, display_order = 900)]
    pub verbose: u8,
    /// Read PMUs from this directory instead of /sys (also HREC_SYSFS_ROOT).
    #[arg(long, global = true, hide = true, env = "HREC_SYSFS_ROOT")]
    pub sysfs_root: Option<PathBuf>,
    /// Read kernel limits from this directory instead of /proc (also HREC_PROCFS_ROOT).
    #[arg(long, global = true, hide = true, env = "HREC_PROCFS_ROOT")]
    pub procfs_root: Option<PathBuf>,
    /// Worker threads for reading recordings (0: one per CPU; also HREC_THREADS).
    #[arg(
        long = "reader-threads",
        global = true,
        hide = true,
        env = "HREC_THREADS",
        default_value_t = 0
    )]
    pub threads: usize,
    /// Milliseconds of reading before a progress bar shows (also HREC_PROGRESS_AFTER_MS).
    #[arg(
        long,
        global = true,
        hide = true,
        env = "HREC_PROGRESS_AFTER_MS",
        default_value_t = 1000
    )]
    pub progress_after_ms: u64,
    /// The command.
    #[command(subcommand)]
    pub command: Cmd,
}

impl Cli {
    /// Parses a command line: clap's reading, and which `-e` each `--filter` follows (perf's
    /// rule: a filter is on the events of the `-e` before it), which the derived fields,
    /// each flag's values apart, do not keep.
    pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{CommandFactory, FromArgMatches};
        let m = Cli::command().try_get_matches_from(args)?;
        let mut cli = Cli::from_arg_matches(&m)?;
        let mut sub = &m;
        while let Some((_, s)) = sub.subcommand() {
            sub = s;
        }
        let sampling = match &mut cli.command {
            Cmd::Record(r) => Some(&mut r.sampling),
            Cmd::Top(t) => Some(&mut t.sampling),
            _ => None,
        };
        if let Some(sampling) = sampling {
            let at = |id: &str| -> Vec<usize> {
                sub.try_get_raw(id)
                    .ok()
                    .flatten()
                    .and_then(|_| sub.indices_of(id))
                    .map(Iterator::collect)
                    .unwrap_or_default()
            };
            let events = at("events");
            sampling.filter_after = at("filters")
                .into_iter()
                .map(|f| events.iter().filter(|&&e| e < f).count().checked_sub(1))
                .collect();
        }
        Ok(cli)
    }
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Sample a command (or CPUs, or processes) into a file.
    #[command(after_help = record::EXAMPLES)]
    Record(record::RecordArgs),
    /// Show where samples landed, with TopDown and retire latency per symbol.
    #[command(after_help = report::EXAMPLES)]
    Report(report::ReportArgs),
    /// Print every sample, perf script style.
    #[command(after_help = script::EXAMPLES)]
    Script(script::ScriptArgs),
    /// Draw a flame graph SVG.
    #[command(after_help = flamegraph::EXAMPLES)]
    Flamegraph(flamegraph::FlamegraphArgs),
    /// Convert a recording for other tools (pprof: gzip-compressed protobuf; firefox: the
    /// Firefox Profiler's processed-profile JSON, gzip-compressed).
    #[command(after_help = export::EXAMPLES)]
    Export(export::ExportArgs),
    /// Write a recording as perf.data, for perf, hotspot and the tools built on perf's files.
    #[command(after_help = convert::EXAMPLES)]
    Convert(convert::ConvertArgs),
    /// Count events (TopDown, TMA metrics) for a command.
    #[command(after_help = stat::EXAMPLES)]
    Stat(stat::StatArgs),
    /// List events and metrics as perf list does (--pmus: PMUs and TopDown levels).
    #[command(after_help = list::EXAMPLES)]
    List(list::ListArgs),
    /// Show a recording's header: host, events, counts.
    #[command(after_help = info::EXAMPLES)]
    Info(InputArgs),
    /// List a recording's events (perf evlist; -v for their attrs).
    #[command(after_help = evlist::EXAMPLES)]
    Evlist(evlist::EvlistArgs),
    /// List the build-ids of the binaries a recording saw (perf buildid-list).
    #[command(name = "buildid-list")]
    #[command(after_help = buildid_list::EXAMPLES)]
    BuildidList(InputArgs),
    /// Add binaries to perf's build-id cache (~/.debug), list, remove or purge them.
    #[command(name = "buildid-cache")]
    #[command(after_help = buildid_cache::EXAMPLES)]
    BuildidCache(buildid_cache::BuildidCacheArgs),
    /// Pack the binaries a recording needs, by build-id, into a tar file to unpack into
    /// ~/.debug on another machine (perf archive).
    #[command(after_help = archive::EXAMPLES)]
    Archive(archive::ArchiveArgs),
    /// Show the instructions and source lines of hot functions with their samples.
    #[command(after_help = annotate::EXAMPLES)]
    Annotate(annotate::AnnotateArgs),
    /// Compare two recordings per symbol, as perf diff (baseline share, delta, ratio).
    #[command(after_help = diff::EXAMPLES)]
    Diff(diff::DiffArgs),
    /// Sample the whole machine (or -p/-t/-C) and show the hottest functions, refreshed.
    #[command(after_help = top::EXAMPLES)]
    Top(top::TopArgs),
    /// Memory access profiling, as perf mem: `mem record` samples loads and stores with
    /// their data addresses, sources and latencies; `mem report` shows where they went.
    #[command(after_help = mem::EXAMPLES)]
    Mem(mem::MemArgs),
    /// Cache-line sharing between cores, as perf c2c: `c2c record` samples loads and stores;
    /// `c2c report` shows the lines with HITMs and who touches which offsets.
    #[command(after_help = c2c::EXAMPLES)]
    C2c(c2c::C2cArgs),
    /// Write the man pages or print a shell's completions (for installers and packagers).
    #[command(hide = true)]
    Generate(generate::GenerateArgs),
    /// Add, list or remove dynamic probe events (uprobes, kprobes), as perf probe does.
    #[command(after_help = probe::EXAMPLES)]
    Probe(probe::ProbeArgs),
}

/// Where hrec reads the machine's description from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Env {
    /// Stands in for `/sys` (`HREC_SYSFS_ROOT` or `--sysfs-root`).
    pub sysfs_root: PathBuf,
    /// Stands in for `/proc` (`HREC_PROCFS_ROOT` or `--procfs-root`).
    pub procfs_root: PathBuf,
    /// `-v` count.
    pub verbose: u8,
    /// Worker threads of the reading commands (0: one per CPU; `HREC_THREADS`).
    pub threads: usize,
    /// How long reading goes on before a progress bar shows (`HREC_PROGRESS_AFTER_MS`;
    /// tests set 0).
    pub progress_after: std::time::Duration,
}

impl Default for Env {
    fn default() -> Self {
        Env {
            sysfs_root: PathBuf::from("/sys"),
            procfs_root: PathBuf::from("/proc"),
            verbose: 0,
            threads: 0,
            progress_after: std::time::Duration::from_secs(1),
        }
    }
}

/// Errors of the commands, each with enough context for one line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading the sysfs snapshot failed.
    #[error("cannot discover PMUs")]
    Pmu(#[from] PmuError),
    /// The plan could not be made.
    #[error(transparent)]
    Plan(#[from] plan::PlanError),
    /// A usage problem found after parsing.
    #[error("{0}")]
    Usage(String),
    /// A recording could not be read.
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// Counting failed.
    #[error(transparent)]
    Stat(#[from] hrec::stat::count::StatError),
    /// The event list could not be made.
    #[error(transparent)]
    List(#[from] hrec::listing::ListError),
    /// Metrics could not be set up.
    #[error(transparent)]
    Tma(#[from] hrec::stat::tma::TmaError),
    /// A retire-latency source could not be read.
    #[error(transparent)]
    Tpebs(#[from] hrec::stat::tpebs::TpebsError),
    /// A flame graph could not be drawn.
    #[error(transparent)]
    Flame(#[from] hrec::output::flame::FlameError),
    /// The recording failed.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// An archive could not be written.
    #[error(transparent)]
    Archive(#[from] hrec::archive::ArchiveError),
    /// A probe could not be added, listed or removed.
    #[error(transparent)]
    Probe(#[from] hrec::trace::probe::ProbeError),
    /// Writing output failed.
    #[error("cannot write output")]
    Io(#[from] io::Error),
    /// Writing an output file failed.
    #[error("cannot write {}", path.display())]
    Output {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

impl Error {
    /// True for errors in how hrec was invoked (exit status 2), as opposed to failures (1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::Usage(_) | Error::Plan(plan::PlanError::Options(_))
        )
    }
}

impl Cli {
    /// Where this run reads the machine's description from.
    fn env(&self) -> Env {
        let mut env = Env {
            verbose: self.verbose,
            threads: self.threads,
            progress_after: std::time::Duration::from_millis(self.progress_after_ms),
            ..Env::default()
        };
        if let Some(r) = &self.sysfs_root {
            env.sysfs_root = r.clone();
        }
        if let Some(r) = &self.procfs_root {
            env.procfs_root = r.clone();
        }
        env
    }
}

/// Runs the command of `cli`. Returns the process exit status.
pub fn exec(cli: Cli, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8, Error> {
    let env = cli.env();
    match cli.command {
        Cmd::Record(a) => record::exec(a, &env, out, err),
        Cmd::Report(a) => report::exec(a, &env, out, err),
        Cmd::Script(a) => script::exec(a, &env, out, err),
        Cmd::Flamegraph(a) => flamegraph::exec(a, &env, out, err),
        Cmd::Export(a) => export::exec(a, &env, out, err),
        Cmd::Convert(a) => convert::exec(a, &env, out, err),
        Cmd::Stat(a) => stat::exec(a, &env, out, err),
        Cmd::List(a) => list::exec(a, &env, out, err),
        Cmd::Info(a) => info::exec(a, &env, out, err),
        Cmd::Evlist(a) => evlist::exec(a, &env, out, err),
        Cmd::BuildidList(a) => buildid_list::exec(a, &env, out, err),
        Cmd::BuildidCache(a) => buildid_cache::exec(a, &env, out, err),
        Cmd::Archive(a) => archive::exec(a, &env, out, err),
        Cmd::Annotate(a) => annotate::exec(a, &env, out, err),
        Cmd::Diff(a) => diff::exec(a, &env, out, err),
        Cmd::Top(a) => top::exec(a, &env, out, err),
        Cmd::Mem(a) => mem::exec(a, &env, out, err),
        Cmd::C2c(a) => c2c::exec(a, &env, out, err),
        Cmd::Generate(a) => generate::exec(a, out),
        Cmd::Probe(a) => probe::exec(a, &env, out, err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// clap's own checks of the definitions (clashing names, bad defaults), which otherwise
    /// only fail when a command line reaches them.
    #[test]
    fn flag_definitions_are_consistent() {
        use clap::CommandFactory as _;
        Cli::command().debug_assert();
    }
}
