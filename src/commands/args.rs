//! Flag groups that several commands share, declared once and flattened into each: what to
//! profile (`-a/-C/-p/-t`, perf's target flags: at most one of them), how to sample
//! (`-e/-F/-c`), where binaries and debug files are found, and which samples count (perf
//! report's filter flags), plus the input file every reading command defaults alike.

use std::path::PathBuf;

use clap::Args;
use hrec::event::plan::{Freq, Target};
use hrec::pmu::CpuList;

/// What to profile: `-a`, `-C`, `-p` or `-t` (at most one of them); without any, the
/// command's own default (record and stat: the command after `--`; top: every CPU).
#[derive(Debug, Args, Default)]
pub struct TargetArgs {
    /// Every CPU.
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// These CPUs (e.g. 0-3,8).
    #[arg(short = 'C', long = "cpu", value_name = "CPUS")]
    pub cpu: Option<CpuList>,
    /// These processes (every thread they have).
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID[,PID]",
        value_delimiter = ','
    )]
    pub pid: Vec<u32>,
    /// These threads.
    #[arg(
        short = 't',
        long = "tid",
        value_name = "TID[,TID]",
        value_delimiter = ','
    )]
    pub tid: Vec<u32>,
}

impl TargetArgs {
    /// The target the flags pick, else `default`; `Err` is a usage error.
    pub fn target(self, default: Target) -> Result<Target, String> {
        let given = [
            self.all_cpus,
            self.cpu.is_some(),
            !self.pid.is_empty(),
            !self.tid.is_empty(),
        ];
        if given.iter().filter(|g| **g).count() > 1 {
            return Err("-a, -C, -p and -t pick different targets: use one of them".into());
        }
        Ok(if let Some(c) = self.cpu {
            if c.is_empty() {
                return Err("-C needs at least one CPU".into());
            }
            Target::Cpus(c)
        } else if self.all_cpus {
            Target::SystemWide
        } else if !self.pid.is_empty() {
            Target::Pids(self.pid)
        } else if !self.tid.is_empty() {
            Target::Tids(self.tid)
        } else {
            default
        })
    }
}

/// What to sample and how often: `-e`, `-F`, `-c` (record and top).
#[derive(Debug, Args)]
pub struct SamplingArgs {
    /// Event(s) to sample, perf syntax (repeatable, comma lists, {groups}:S).
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    pub events: Vec<String>,
    /// Sampling frequency in Hz, or "max".
    #[arg(short = 'F', long = "freq", value_name = "HZ|max", value_parser = parse_freq)]
    pub freq: Option<Freq>,
    /// Sample every N events (fixed period).
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub count: Option<u64>,
    /// Keep only the hits of the tracepoints of the -e before it that match EXPR (tracefs'
    /// filter: 'prev_pid == 0 && next_comm ~ "sh*"').
    #[arg(long = "filter", value_name = "EXPR")]
    pub filters: Vec<String>,
    /// Which `-e` each `--filter` follows (`Cli::parse_from` fills it in; `None`: none).
    #[arg(skip)]
    pub filter_after: Vec<Option<usize>>,
}

impl SamplingArgs {
    /// The period, checked: `-c 0` is no period.
    pub fn count(&self) -> Result<Option<u64>, String> {
        if self.count == Some(0) {
            return Err(
                "-c 0: a sample every 0 events is no period; give 1 or more (e.g. -c 100003)"
                    .into(),
            );
        }
        Ok(self.count)
    }

    /// The `--filter`s with the `-e` each follows; a filter before any `-e` is an error.
    pub fn filters(&self) -> Result<Vec<(usize, String)>, String> {
        self.filters
            .iter()
            .enumerate()
            .map(|(i, f)| match self.filter_after.get(i) {
                Some(Some(at)) => Ok((*at, f.clone())),
                _ => Err(format!(
                    "--filter '{f}' follows no -e: put it after the -e of the tracepoint it filters"
                )),
            })
            .collect()
    }
}

/// Commands that read a recording.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// Input file [default: hrec.data, else perf.data when only that is here].
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
}

/// Where binaries and their debug files are found: the same flags for every command that
/// symbolizes (report, script, flamegraph, export).
#[derive(Debug, Args)]
pub struct SymbolArgs {
    /// Look for binaries under this directory (as if it were /), and not in perf's build-id
    /// cache.
    #[arg(long = "symfs")]
    pub symfs: Option<PathBuf>,
    /// Extra debug-file directory (default /usr/lib/debug); repeatable.
    #[arg(long = "debug-dir")]
    pub debug_dir: Vec<PathBuf>,
    /// perf's build-id cache to find binaries in (default $HREC_BUILDID_DIR, else
    /// $PERF_BUILDID_DIR, else perf's buildid.dir, else ~/.debug).
    #[arg(long = "buildid-dir", value_name = "DIR")]
    pub buildid_dir: Option<PathBuf>,
    /// Unwind the user stacks kept by `record --call-graph dwarf,SIZE,raw` again (with the
    /// binaries as they are now) instead of taking the chains found while recording.
    #[arg(long)]
    pub reunwind: bool,
}

/// Which samples count: the same flags (perf report's names) for every command that reads
/// samples (report, script, flamegraph, export).
#[derive(Debug, Args, Default)]
pub struct FilterArgs {
    /// Only these thread names (comma-separated).
    #[arg(short = 'c', long = "comm", alias = "comms", value_delimiter = ',')]
    pub comm: Vec<String>,
    /// Only these process ids (comma-separated).
    #[arg(long = "pid", value_delimiter = ',')]
    pub pid: Vec<u32>,
    /// Only these thread ids (comma-separated).
    #[arg(long = "tid", value_delimiter = ',')]
    pub tid: Vec<u32>,
    /// Only these shared objects (comma-separated).
    #[arg(short = 'd', long = "dso", alias = "dsos", value_delimiter = ',')]
    pub dso: Vec<String>,
    /// Only these symbols (comma-separated).
    #[arg(short = 'S', long = "sym", alias = "symbols", value_delimiter = ',')]
    pub sym: Vec<String>,
    /// Time ranges: START,END in seconds as `script` prints them (either may be empty;
    /// several separated by spaces), or percentages of the recording: 10%/2, 0%-10%,30%-40%.
    #[arg(long = "time", value_name = "RANGES")]
    pub time: Option<String>,
}

/// `-i` when given; else `hrec.data`, or `perf.data` when only that is in the directory (as
/// `perf report` users expect where perf recorded), said on stderr.
pub fn input_file(given: Option<PathBuf>) -> PathBuf {
    if let Some(p) = given {
        return p;
    }
    let hrec = PathBuf::from("hrec.data");
    if !hrec.exists() && std::path::Path::new("perf.data").exists() {
        eprintln!("hrec: reading perf.data (there is no hrec.data here; -i picks the file)");
        return PathBuf::from("perf.data");
    }
    hrec
}

/// The profile options and sample filters of the shared flags; `Err` is a usage error.
pub fn reading_options(
    symbols: SymbolArgs,
    filters: FilterArgs,
) -> Result<
    (
        hrec::analysis::profile::ProfileOptions,
        hrec::analysis::hist::Filters,
    ),
    String,
> {
    let time = filters
        .time
        .as_deref()
        .map(hrec::analysis::timefilter::TimeSpec::parse)
        .transpose()
        .map_err(|e| e.to_string())?;
    let mut search = hrec::symbol::debuginfo::SearchPaths::default();
    search.debug_dirs.splice(0..0, symbols.debug_dir);
    if let Some(dir) = symbols.buildid_dir.as_deref() {
        search.build_id_cache = hrec::symbol::buildid_cache::resolve_dir(Some(dir));
    }
    if let Some(root) = &symbols.symfs {
        // A --symfs that is not a directory would leave every binary unresolved without a
        // word (perf's behaviour): refused instead.
        match std::fs::metadata(root) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(format!("--symfs {}: not a directory", root.display())),
            Err(e) => return Err(format!("--symfs {}: {e}", root.display())),
        }
        // Binaries come from the --symfs tree only, not from this machine's perf cache.
        search.build_id_cache = None;
    }
    // Only with DEBUGINFOD_URLS: files missing here are fetched by build-id, with a progress
    // bar on a terminal.
    let debuginfod = hrec::symbol::debuginfod::Debuginfod::from_env().map(|d| {
        use std::io::IsTerminal as _;
        d.set_progress(Some(hrec::output::progress::fetch_bar(
            std::io::stderr().is_terminal(),
        )));
        std::sync::Arc::new(d)
    });
    Ok((
        hrec::analysis::profile::ProfileOptions {
            symfs: symbols.symfs,
            search,
            time,
            reunwind: symbols.reunwind,
            debuginfod,
            ..Default::default()
        },
        hrec::analysis::hist::Filters {
            comms: filters.comm,
            pids: filters.pid,
            tids: filters.tid,
            dsos: filters.dso,
            syms: filters.sym,
            ..Default::default()
        },
    ))
}

fn parse_freq(s: &str) -> Result<Freq, String> {
    if s == "max" {
        return Ok(Freq::Max);
    }
    s.parse::<u64>()
        .map(Freq::Hz)
        .map_err(|_| format!("expected a frequency in Hz or 'max', found {s:?}"))
}
