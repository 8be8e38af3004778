//! Command-line definitions (clap derive) and their conversion into `hrec::app` config structs.
//!
//! Flag names follow perf where perf has one. Nothing past [`Cli::into_command`] sees clap types.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use hrec::app::{Command, Env, InputConfig, ListConfig, RecordConfig};
use hrec::event::plan::{CallGraph, DEFAULT_DWARF_STACK, Freq, RecordOptions, Target};
use hrec::pmu::CpuList;
use hrec::record::switch::{SwitchOutput, Trigger};

/// hrec: sampling profiler for modern Intel PMUs (hybrid, TopDown, retire latency).
#[derive(Debug, Parser)]
#[command(name = "hrec", version, about, propagate_version = true)]
#[command(after_help = "EXAMPLES:
  hrec record -W -- ./prog            sample cycles (+TopDown group, retire latency)
  hrec record --dry-run -- true       print the perf_event_attr plan, open nothing
  hrec list [sw|hw|cache|pmu|GLOB]    events and metrics, as perf list
  hrec export --format pprof          profile.pb.gz for go tool pprof
  hrec export --format firefox        profile.json.gz for the Firefox Profiler")]
pub struct Cli {
    /// Be more verbose (repeat for more).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
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

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Sample a command (or CPUs, or processes) into a file.
    Record(RecordArgs),
    /// Show where samples landed, with TopDown and retire latency per symbol.
    Report(ReportArgs),
    /// Print every sample, perf script style.
    Script(ScriptArgs),
    /// Draw a flame graph SVG.
    Flamegraph(FlamegraphArgs),
    /// Convert a recording for other tools (pprof: gzip-compressed protobuf; firefox: the
    /// Firefox Profiler's processed-profile JSON, gzip-compressed).
    Export(ExportArgs),
    /// Count events (TopDown, TMA metrics) for a command.
    Stat(StatArgs),
    /// List events and metrics as perf list does (--pmus: PMUs and TopDown levels).
    List(ListArgs),
    /// Show a recording's header: host, events, counts.
    Info(InputArgs),
    /// List a recording's events (perf evlist; -v for their attrs).
    Evlist(EvlistArgs),
    /// List the build-ids of the binaries a recording saw (perf buildid-list).
    #[command(name = "buildid-list")]
    BuildidList(InputArgs),
    /// Show the instructions and source lines of hot functions with their samples.
    Annotate(AnnotateArgs),
    /// Compare two recordings per symbol, as perf diff (baseline share, delta, ratio).
    Diff(DiffArgs),
    /// Sample the whole machine (or -p/-t/-C) and show the hottest functions, refreshed.
    Top(TopArgs),
}

/// `hrec top` flags (perf top's names; `-n` counts refreshes).
#[derive(Debug, Args)]
pub struct TopArgs {
    /// Event to sample, perf syntax.
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    pub events: Vec<String>,
    /// Sampling frequency in Hz, or "max".
    #[arg(short = 'F', long = "freq", value_name = "HZ|max", value_parser = parse_freq)]
    pub freq: Option<Freq>,
    /// Sample every N events (fixed period).
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub count: Option<u64>,
    /// Every CPU (the default).
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// These CPUs (e.g. 0-3,8).
    #[arg(short = 'C', long = "cpu", value_name = "CPUS")]
    pub cpu: Option<CpuList>,
    /// These processes.
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
    /// Seconds between refreshes (decimals allowed).
    #[arg(short = 'd', long = "delay", value_name = "SECS", default_value = "2", value_parser = parse_delay)]
    pub delay: std::time::Duration,
    /// Stop after N refreshes (for scripts and tests).
    #[arg(short = 'n', long = "refreshes", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub refreshes: Option<u64>,
    /// Each refresh shows only its own interval (no decayed history).
    #[arg(short = 'z', long = "zero")]
    pub zero: bool,
    /// Row keys (perf top's default: dso,sym).
    #[arg(
        short = 's',
        long = "sort",
        value_name = "KEYS",
        default_value = "dso,sym"
    )]
    pub sort: String,
    /// Rows shown [default: the terminal's height, else 50].
    #[arg(short = 'E', long = "entries", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub entries: Option<u64>,
    /// Print each refresh as text after the last (no screen clearing).
    #[arg(long)]
    pub stdio: bool,
    /// Data pages per ring buffer (power of two).
    #[arg(short = 'm', long = "mmap-pages", value_name = "PAGES")]
    pub mmap_pages: Option<u64>,
}

/// The target of `-a`, `-C`, `-p`, `-t` (at most one of them), else `default` (record: the
/// command; top: the whole machine).
fn pick_target(
    all_cpus: bool,
    cpu: Option<CpuList>,
    pid: Vec<u32>,
    tid: Vec<u32>,
    default: Target,
) -> Result<Target, String> {
    let given = [all_cpus, cpu.is_some(), !pid.is_empty(), !tid.is_empty()];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err("-a, -C, -p and -t pick different targets: use one of them".into());
    }
    Ok(if let Some(c) = cpu {
        if c.is_empty() {
            return Err("-C needs at least one CPU".into());
        }
        Target::Cpus(c)
    } else if all_cpus {
        Target::SystemWide
    } else if !pid.is_empty() {
        Target::Pids(pid)
    } else if !tid.is_empty() {
        Target::Tids(tid)
    } else {
        default
    })
}

/// `-c 0` is no period.
fn check_count(count: Option<u64>) -> Result<(), String> {
    if count == Some(0) {
        return Err(
            "-c 0: a sample every 0 events is no period; give 1 or more (e.g. -c 100003)".into(),
        );
    }
    Ok(())
}

fn parse_delay(s: &str) -> Result<std::time::Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds (e.g. 1 or 0.5)"))?;
    if !(0.1..=3600.0).contains(&secs) {
        return Err(format!("{s}: give 0.1 to 3600 seconds"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

impl TopArgs {
    fn into_config(self) -> Result<hrec::app::TopConfig, String> {
        use std::io::IsTerminal;
        let target = pick_target(
            self.all_cpus,
            self.cpu,
            self.pid,
            self.tid,
            Target::SystemWide,
        )?;
        check_count(self.count)?;
        let sort =
            hrec::analysis::hist::parse_sort(&self.sort).map_err(|e| format!("--sort: {e}"))?;
        if sort.is_empty() {
            return Err("--sort: give at least one key".into());
        }
        Ok(hrec::app::TopConfig {
            options: RecordOptions {
                events: self.events,
                freq: self.freq,
                count: self.count,
                weight: false,
                call_graph: None,
                target,
                per_thread: false,
                no_inherit: false,
                inherit_stat: false,
            },
            delay: self.delay,
            refreshes: self.refreshes,
            zero: self.zero,
            sort,
            entries: self
                .entries
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            stdio: self.stdio || !std::io::stdout().is_terminal(),
            mmap_pages: self.mmap_pages,
        })
    }
}

/// `hrec annotate` flags (perf annotate's names).
#[derive(Debug, Args)]
pub struct AnnotateArgs {
    /// Functions to annotate (default: every function with samples, hottest first).
    #[arg(value_name = "SYMBOL")]
    pub symbols: Vec<String>,
    /// Input file [default: hrec.data, else perf.data when only that is here].
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
    /// A function to annotate (repeatable; as the SYMBOL arguments).
    #[arg(short = 's', long = "symbol", value_name = "SYMBOL")]
    pub symbol: Vec<String>,
    /// Only functions of this object (file name or path).
    #[arg(short = 'd', long = "dso", value_name = "DSO")]
    pub dso: Option<String>,
    /// Text output (the default; accepted for perf's habit).
    #[arg(long)]
    pub stdio: bool,
    /// JSON output (`docs/annotate.md`).
    #[arg(long, conflicts_with = "stdio")]
    pub json: bool,
    /// Source lines above their instructions (the default).
    #[arg(long, overrides_with = "no_source")]
    pub source: bool,
    /// Instructions only.
    #[arg(long = "no-source")]
    pub no_source: bool,
    /// Disassembler style: att (default) or intel.
    #[arg(short = 'M', long = "disassembler-style", default_value = "att")]
    pub style: String,
    /// Sample counts instead of percentages.
    #[arg(short = 'n', long = "show-nr-samples")]
    pub show_nr_samples: bool,
    /// local-period (default), global-period, local-hits or global-hits.
    #[arg(long = "percent-type", default_value = "local-period")]
    pub percent_type: String,
    /// Without SYMBOL: only functions with at least this share of the samples.
    #[arg(long = "percent-limit", default_value_t = 0.0)]
    pub percent_limit: f64,
    /// The sampling event (default: the first).
    #[arg(long = "event", value_name = "EVENT")]
    pub event: Option<String>,
    /// The instructions' bytes before their text.
    #[arg(long = "asm-raw")]
    pub asm_raw: bool,
    /// TopDown per basic block: level 1, or 2 for level 2 as well.
    #[arg(long = "td-level", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub td_level: u8,
    #[command(flatten)]
    pub symbols_args: SymbolArgs,
}

/// `hrec record` flags.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Event(s) to sample, perf syntax (repeatable, comma lists, {groups}:S).
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    pub events: Vec<String>,
    /// Sampling frequency in Hz, or "max".
    #[arg(short = 'F', long = "freq", value_name = "HZ|max", value_parser = parse_freq)]
    pub freq: Option<Freq>,
    /// Sample every N events (fixed period).
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub count: Option<u64>,
    /// Record sample weights (WEIGHT_STRUCT on x86: retire latency in bits 63:48).
    #[arg(short = 'W', long = "weight")]
    pub weight: bool,
    /// Record call chains (frame pointers).
    #[arg(short = 'g')]
    pub g: bool,
    /// Call chain mode: fp, or dwarf[,STACK_BYTES][,raw] (user stacks are unwound while
    /// recording; raw keeps the stack copies too, for unwinding them again later).
    #[arg(long = "call-graph", value_name = "fp|dwarf[,SIZE][,raw]", value_parser = parse_call_graph)]
    pub call_graph: Option<CallGraph>,
    /// Record every CPU.
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Record these CPUs (e.g. 0-3,8).
    #[arg(short = 'C', long = "cpu", value_name = "CPUS")]
    pub cpu: Option<CpuList>,
    /// Attach to these processes.
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID[,PID]",
        value_delimiter = ','
    )]
    pub pid: Vec<u32>,
    /// Attach to these threads.
    #[arg(
        short = 't',
        long = "tid",
        value_name = "TID[,TID]",
        value_delimiter = ','
    )]
    pub tid: Vec<u32>,
    /// One event per thread on any CPU instead of one per CPU.
    #[arg(long = "per-thread")]
    pub per_thread: bool,
    /// Do not follow child processes and threads.
    #[arg(short = 'i', long = "no-inherit")]
    pub no_inherit: bool,
    /// Output file.
    #[arg(short = 'o', long = "output", default_value = "hrec.data")]
    pub output: PathBuf,
    /// Data pages per ring buffer (power of two).
    #[arg(short = 'm', long = "mmap-pages", value_name = "PAGES")]
    pub mmap_pages: Option<u64>,
    /// No summary line, notices or warnings: errors only.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Per-thread counts of each event (the kernel reports every inherited thread's count
    /// when it exits); `hrec report -T` shows them.
    #[arg(short = 's', long = "stat")]
    pub stat: bool,
    /// zstd level of the file's blocks, 1 (fastest) to 22 (smallest); hrec always
    /// compresses (level 3 without -z or with a bare -z).
    #[arg(
        short = 'z',
        long = "compression-level",
        value_name = "N",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "3",
        value_parser = clap::value_parser!(i32).range(1..=22)
    )]
    pub compression_level: Option<i32>,
    /// Do not store the build-ids of the binaries seen (a report then cannot tell that a
    /// binary was rebuilt since).
    #[arg(short = 'B', long = "no-buildid")]
    pub no_buildid: bool,
    /// Accepted for perf's habit: hrec never fills perf's build-id cache (~/.debug).
    #[arg(short = 'N', long = "no-buildid-cache")]
    pub no_buildid_cache: bool,
    /// Cut the recording into files OUTPUT.<YYYYmmddHHMMSScc>, each readable alone: on
    /// SIGUSR2 (signal, the default), when the file reaches a size (100M; B, K, M, G) or
    /// every period (30s; s, m, h, d).
    #[arg(
        long = "switch-output",
        value_name = "signal|SIZE|TIME",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "signal",
        value_parser = clap::value_parser!(Trigger)
    )]
    pub switch_output: Option<Trigger>,
    /// With --switch-output: keep only the newest N files.
    #[arg(
        long = "switch-max-files",
        value_name = "N",
        requires = "switch_output",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub switch_max_files: Option<u64>,
    /// perf's filter of perf's own tracepoint events: hrec records no tracepoints, so it is
    /// refused with the reason.
    #[arg(long = "exclude-perf", hide = true)]
    pub exclude_perf: bool,
    /// Print the plan (perf_event_attr per event, perf -vv layout) and open nothing.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    /// With --dry-run: print the plan as JSON.
    #[arg(long, requires = "dry_run")]
    pub json: bool,
    /// The command to record, after --; with -a, -C, -p or -t it only sets how long to
    /// record.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `hrec evlist` flags (perf evlist's; `-v` is the global verbose flag, as in perf).
#[derive(Debug, Args)]
pub struct EvlistArgs {
    /// Input file [default: hrec.data, else perf.data when only that is here].
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
    /// Groups as {leader,member,...}.
    #[arg(short = 'g', long = "group")]
    pub group: bool,
    /// The sampling frequency or period of each event.
    #[arg(short = 'F', long = "freq")]
    pub freq: bool,
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
    /// Unwind the user stacks kept by `record --call-graph dwarf,SIZE,raw` again (with the
    /// binaries as they are now) instead of taking the chains found while recording.
    #[arg(long)]
    pub reunwind: bool,
}

/// Which samples count: the same flags (perf report's names) for every command that reads
/// samples (report, script, flamegraph, export).
#[derive(Debug, Args, Default)]
pub struct FilterArgs {
    /// Time ranges: START,END in seconds as `script` prints them (either may be empty;
    /// several separated by spaces), or percentages of the recording: 10%/2, 0%-10%,30%-40%.
    #[arg(long = "time", value_name = "RANGES")]
    pub time: Option<String>,
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
}

/// `-i` when given; else `hrec.data`, or `perf.data` when only that is in the directory (as
/// `perf report` users expect where perf recorded), said on stderr.
fn input_file(given: Option<PathBuf>) -> PathBuf {
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
fn reading_options(
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
    Ok((
        hrec::analysis::profile::ProfileOptions {
            symfs: symbols.symfs,
            search,
            time,
            reunwind: symbols.reunwind,
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

/// `hrec script` flags.
#[derive(Debug, Args)]
pub struct ScriptArgs {
    /// Input file [default: hrec.data, else perf.data when only that is here].
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
    /// Fields: comm,pid,tid,cpu,time,period,event,ip,sym,symoff,dso,srcline,weight,ins_lat,
    /// retire_lat,read (or +field / -field to change the defaults); sym, symoff, dso and
    /// srcline are printed with ip, as perf prints them.
    #[arg(short = 'F', long = "fields", allow_hyphen_values = true)]
    pub fields: Option<String>,
    /// Functions inlined at an address are frames of their own, innermost first: in unwound
    /// (dwarf) chains by default, as in perf; given, in frame-pointer chains too.
    #[arg(long, overrides_with = "no_inline")]
    pub inline: bool,
    /// Only the function itself at each address of a call chain.
    #[arg(long = "no-inline", overrides_with = "inline")]
    pub no_inline: bool,
    /// Times to the nanosecond.
    #[arg(long)]
    pub ns: bool,
    /// One line per sample, without its call chain.
    #[arg(short = 'G', long = "hide-call-graph")]
    pub hide_call_graph: bool,
    /// Print MMAP/MMAP2 records (mappings) where they occur, as perf does.
    #[arg(long = "show-mmap-events")]
    pub show_mmap_events: bool,
    /// Print COMM, FORK and EXIT records where they occur, as perf does.
    #[arg(long = "show-task-events")]
    pub show_task_events: bool,
    /// The recording's header (as `hrec info` / perf's `--header`) before the samples.
    #[arg(long)]
    pub header: bool,
    #[command(flatten)]
    pub symbols: SymbolArgs,
    #[command(flatten)]
    pub filters: FilterArgs,
}

/// `hrec report` flags (perf report's names).
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Input file [default: hrec.data, else perf.data when only that is here].
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
    /// Sort keys: comm, pid, tid, dso, sym, srcline, ip, event, pmu, cpu [default:
    /// comm,dso,sym].
    #[arg(short = 's', long = "sort")]
    pub sort: Option<String>,
    /// Output fields, perf's: overhead, overhead_children, sample, period, then sort keys (the
    /// keys listed here are the sort keys unless -s gives them).
    #[arg(short = 'F', long = "fields", value_name = "FIELDS")]
    pub fields: Option<String>,
    /// Credit every function on the call chain (Children column; the default when the
    /// recording has call chains, as in perf).
    #[arg(long, overrides_with = "no_children")]
    pub children: bool,
    /// Only the function at the top of the stack.
    #[arg(long = "no-children", overrides_with = "children")]
    pub no_children: bool,
    /// Call graphs under each row (on by default when the recording has call chains):
    /// [graph|flat|folded|fractal|none][,MIN%][,caller|callee][,function|address]
    /// [,percent|period|count], perf's defaults graph,0.5,caller (callee with --no-children).
    #[arg(
        short = 'g',
        long = "call-graph",
        num_args = 0..=1,
        default_missing_value = "graph",
        value_name = "MODE,MIN%,ORDER,KEY,VALUE"
    )]
    pub call_graph: Option<String>,
    /// Callers first in call graphs (`-g caller`).
    #[arg(short = 'G', long = "inverted")]
    pub inverted: bool,
    /// Frames of a call chain kept, innermost first (perf's 127; with dwarf, of the kernel
    /// and of the user part each).
    #[arg(long = "max-stack", value_name = "N")]
    pub max_stack: Option<usize>,
    /// With filters: percentages of all samples (absolute, perf's default) or of the kept
    /// ones (relative).
    #[arg(
        long = "percentage",
        default_value = "absolute",
        value_name = "absolute|relative"
    )]
    pub percentage: String,
    /// TopDown columns: 0 (none), 1 (level 1, default) or 2.
    #[arg(long = "td-level", default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub td_level: u8,
    /// Hide rows below this percentage.
    #[arg(long = "percent-limit", default_value_t = 0.0)]
    pub percent_limit: f64,
    #[command(flatten)]
    pub filters: FilterArgs,
    /// Only symbols whose name contains this text.
    #[arg(long = "symbol-filter", value_name = "TEXT")]
    pub symbol_filter: Option<String>,
    /// Leave out samples whose symbol is unknown (they count in no total either).
    #[arg(short = 'U', long = "hide-unresolved")]
    pub hide_unresolved: bool,
    #[command(flatten)]
    pub symbols: SymbolArgs,
    /// Show full source paths in srcline.
    #[arg(long = "full-source-path")]
    pub full_source_path: bool,
    /// JSON instead of the text table.
    #[arg(long)]
    pub json: bool,
    /// Collapsed stacks (`comm;caller;...;leaf COUNT`, samples) instead of the table: the
    /// input of flamegraph.pl / inferno-flamegraph.
    #[arg(long)]
    pub folded: bool,
    /// Print the text report even on a terminal (where the interactive view is the default).
    #[arg(long, conflicts_with = "tui")]
    pub stdio: bool,
    /// The interactive view (the default when stdin and stdout are terminals).
    #[arg(long)]
    pub tui: bool,
    /// Rows only, without the `#` header and notes (perf's -q).
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Accepted for perf compatibility: the Samples column is always shown.
    #[arg(short = 'n', long = "show-nr-samples")]
    pub show_nr_samples: bool,
    /// The recording's header (host, command line, events, sample times: as `hrec info`)
    /// before the report.
    #[arg(long)]
    pub header: bool,
    /// Only the recording's header.
    #[arg(long = "header-only")]
    pub header_only: bool,
    /// Per-thread counts of each event after the report (recorded with `record -s`).
    #[arg(short = 'T', long = "threads")]
    pub show_threads: bool,
    /// Functions inlined at an address of an unwound (dwarf) chain are entries of their own
    /// (the default, as in perf).
    #[arg(long, overrides_with = "no_inline")]
    pub inline: bool,
    /// Only the function itself at each address of a call chain.
    #[arg(long = "no-inline", overrides_with = "inline")]
    pub no_inline: bool,
    /// Also write per-event retire-latency statistics to FILE, in the schema of Intel's
    /// <model>_retire_latency.json (for `hrec stat --tpebs-from`).
    #[arg(long = "retire-latency-json", value_name = "FILE")]
    pub retire_latency_json: Option<PathBuf>,
}

impl ReportArgs {
    fn into_config(self) -> Result<hrec::app::ReportConfig, String> {
        let rl_json = self.retire_latency_json.is_some();
        let terminal = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
        if self.tui && !terminal {
            return Err(
                "--tui needs a terminal on stdin and stdout; leave it out (or give --stdio) to print the report as text"
                    .into(),
            );
        }
        use hrec::analysis::hist;
        use hrec::output::report::Column;
        use std::io::IsTerminal;
        let mut columns = Vec::new();
        let mut field_keys = Vec::new();
        for f in self.fields.iter().flat_map(|f| f.split(',')).map(str::trim) {
            match Column::from_name(f) {
                Some(c) => columns.push(c),
                None if !f.is_empty() => field_keys.push(f),
                None => {}
            }
        }
        if self.fields.is_some() && columns.is_empty() && field_keys.is_empty() {
            return Err("-F: give output fields (overhead, sample, period, sort keys)".into());
        }
        let sort_spec = match (&self.sort, field_keys.is_empty()) {
            (Some(s), _) => s.clone(),
            (None, false) => field_keys.join(","),
            // perf: output fields without a key sum every sample into one row.
            (None, true) if self.fields.is_some() => String::new(),
            (None, true) => "comm,dso,sym".to_string(),
        };
        let sort = hist::parse_sort(&sort_spec)
            .map_err(|e| format!("{}: {e}", if self.sort.is_some() { "--sort" } else { "-F" }))?;
        if sort.is_empty() && self.fields.is_none() {
            return Err("--sort: give at least one key".into());
        }
        let (mut profile, mut filters) = reading_options(self.symbols, self.filters)?;
        profile.no_inline = self.no_inline;
        filters.sym_part = self.symbol_filter;
        filters.hide_unresolved = self.hide_unresolved;
        let mut call_graph: hrec::analysis::callgraph::CallGraphOptions = self
            .call_graph
            .as_deref()
            .unwrap_or("")
            .parse()
            .map_err(|e| format!("-g: {e}"))?;
        if self.inverted {
            call_graph.order = Some(hrec::analysis::callgraph::Order::Caller);
        }
        if let Some(n) = self.max_stack {
            call_graph.max_stack = n;
        }
        Ok(hrec::app::ReportConfig {
            input: input_file(self.input),
            hist: hist::HistOptions {
                sort,
                children: self.children,
                full_source_path: self.full_source_path,
                filters,
                max_stack: call_graph.max_stack,
                relative: match self.percentage.as_str() {
                    "absolute" => false,
                    "relative" => true,
                    other => {
                        return Err(format!(
                            "--percentage {other}: use absolute (each row's share of all samples, the default) or relative (of the samples the filters keep)"
                        ));
                    }
                },
            },
            children: if self.children {
                Some(true)
            } else if self.no_children {
                Some(false)
            } else {
                None
            },
            call_graph,
            call_graph_given: self.call_graph.is_some() || self.inverted,
            profile,
            style: hrec::output::report::ReportStyle {
                td_level: self.td_level,
                percent_limit: self.percent_limit,
                quiet: self.quiet,
                fields: self.fields.is_some().then_some(columns),
                ..Default::default()
            },
            json: self.json,
            folded: self.folded,
            retire_latency_json: self.retire_latency_json,
            progress: std::io::stderr().is_terminal() && !self.json && !self.header_only,
            // perf report's default on a terminal; any output that is not the table, or a
            // redirected stdin or stdout, prints text.
            tui: self.tui
                || (!self.stdio
                    && !self.json
                    && !self.folded
                    && !self.quiet
                    && !self.header_only
                    && !self.show_threads
                    && !rl_json
                    && terminal),
            header: self.header,
            header_only: self.header_only,
            thread_counts: self.show_threads,
        })
    }
}

/// `hrec diff` flags (perf diff's names).
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The baseline [default: hrec.data.old, else perf.data.old when only that is here]; a
    /// single file given is NEW, compared with that default baseline, as in perf diff.
    pub old: Option<PathBuf>,
    /// The recording compared with it [default: hrec.data, or perf.data with perf.data.old].
    pub new: Option<PathBuf>,
    /// Sort keys: comm, pid, tid, dso, sym, srcline, ip, event, pmu, cpu.
    #[arg(short = 's', long = "sort", default_value = "dso,sym")]
    pub sort: String,
    /// What to compute: delta, delta-abs (ordered by magnitude), ratio or wdiff:W1,W2.
    #[arg(short = 'c', long = "compute", default_value = "delta-abs")]
    pub compute: String,
    /// Show both files' periods.
    #[arg(short = 'p', long = "period")]
    pub period: bool,
    /// Show how each value was computed.
    #[arg(short = 'F', long = "formula")]
    pub formula: bool,
    /// Order by the computed value (1, the default) or by the baseline's period (0).
    #[arg(short = 'o', long = "order", default_value_t = 1)]
    pub order: u32,
    /// Only rows both files have.
    #[arg(short = 'b', long = "baseline-only")]
    pub baseline_only: bool,
    /// With filters: shares of all samples (absolute, perf's default) or of the kept ones
    /// (relative).
    #[arg(
        long = "percentage",
        default_value = "absolute",
        value_name = "absolute|relative"
    )]
    pub percentage: String,
    /// Hide rows below this share in both files.
    #[arg(long = "percent-limit", default_value_t = 0.0)]
    pub percent_limit: f64,
    /// Only these thread names (comma-separated).
    #[arg(short = 'C', long = "comms", alias = "comm", value_delimiter = ',')]
    pub comms: Vec<String>,
    /// Only these shared objects (comma-separated).
    #[arg(short = 'd', long = "dsos", alias = "dso", value_delimiter = ',')]
    pub dsos: Vec<String>,
    /// Only these symbols (comma-separated).
    #[arg(short = 'S', long = "symbols", alias = "sym", value_delimiter = ',')]
    pub symbols: Vec<String>,
    /// Only these process ids (comma-separated).
    #[arg(long = "pid", value_delimiter = ',')]
    pub pid: Vec<u32>,
    /// Only these thread ids (comma-separated).
    #[arg(long = "tid", value_delimiter = ',')]
    pub tid: Vec<u32>,
    /// Time ranges of both files (as report's --time).
    #[arg(long = "time", value_name = "RANGES")]
    pub time: Option<String>,
    #[command(flatten)]
    pub symbol_args: SymbolArgs,
    /// Rows only, without the `#` lines.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Accepted for perf compatibility (text is the default).
    #[arg(long, hide = true)]
    pub stdio: bool,
    /// JSON instead of the text table.
    #[arg(long)]
    pub json: bool,
}

/// perf diff's file defaults with hrec's names first: `hrec.data.old hrec.data`, or perf's
/// `perf.data.old perf.data` when only those are here; one argument is the new file. Said on
/// stderr when a default was taken.
fn diff_inputs(old: Option<PathBuf>, new: Option<PathBuf>) -> (PathBuf, PathBuf) {
    if let (Some(o), Some(n)) = (&old, &new) {
        return (o.clone(), n.clone());
    }
    let here = |p: &str| std::path::Path::new(p).exists();
    let perf = !here("hrec.data.old") && here("perf.data.old");
    let (d_old, d_new) = if perf {
        ("perf.data.old", "perf.data")
    } else {
        ("hrec.data.old", "hrec.data")
    };
    // perf diff FILE compares FILE with the default baseline.
    let (o, n) = match old {
        Some(n) => (PathBuf::from(d_old), n),
        None => (PathBuf::from(d_old), PathBuf::from(d_new)),
    };
    eprintln!(
        "hrec: comparing {} (baseline) with {}",
        o.display(),
        n.display()
    );
    (o, n)
}

impl DiffArgs {
    fn into_config(self) -> Result<hrec::app::DiffConfig, String> {
        use hrec::analysis::hist;
        let sort = hist::parse_sort(&self.sort).map_err(|e| format!("--sort: {e}"))?;
        if sort.is_empty() {
            return Err("--sort: give at least one key".into());
        }
        let compute: hrec::analysis::diff::Compute = self
            .compute
            .parse()
            .map_err(|e| format!("-c/--compute: {e}"))?;
        if self.order > 1 {
            return Err(format!(
                "-o/--order {}: use 1 (by the computed value, the default) or 0 (by the baseline); hrec compares two files",
                self.order
            ));
        }
        let relative = match self.percentage.as_str() {
            "absolute" => false,
            "relative" => true,
            other => {
                return Err(format!(
                    "--percentage {other}: use absolute (each row's share of all samples, the default) or relative (of the samples the filters keep)"
                ));
            }
        };
        let one = |v: &[String]| v.len() == 1;
        let elide = [
            (hist::SortKey::Comm, one(&self.comms)),
            (hist::SortKey::Dso, one(&self.dsos)),
            (hist::SortKey::Sym, one(&self.symbols)),
        ]
        .into_iter()
        .filter_map(|(k, pinned)| pinned.then_some(k))
        .collect();
        let (profile, filters) = reading_options(
            self.symbol_args,
            FilterArgs {
                time: self.time,
                comm: self.comms,
                pid: self.pid,
                tid: self.tid,
                dso: self.dsos,
                sym: self.symbols,
            },
        )?;
        let (old, new) = diff_inputs(self.old, self.new);
        Ok(hrec::app::DiffConfig {
            old,
            new,
            hist: hist::HistOptions {
                sort,
                filters,
                relative,
                ..Default::default()
            },
            profile,
            diff: hrec::analysis::diff::DiffOptions {
                compute,
                by_baseline: self.order == 0,
                baseline_only: self.baseline_only,
                percent_limit: self.percent_limit,
            },
            style: hrec::output::diff::DiffStyle {
                compute,
                period: self.period,
                formula: self.formula,
                quiet: self.quiet,
                elide,
            },
            json: self.json,
        })
    }
}

/// `hrec flamegraph` flags.
#[derive(Debug, Args)]
pub struct FlamegraphArgs {
    /// Input file [default: hrec.data, else perf.data when only that is here].
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
    /// Output SVG (or folded stacks with --folded; `-` for stdout).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// The event to draw (default: the first; the recording's events are listed when it has
    /// several).
    #[arg(long)]
    pub event: Option<String>,
    /// Frame width: samples, period (the event count) or retire-latency (cycles).
    #[arg(long, default_value = "samples", value_parser = ["samples", "period", "retire-latency"])]
    pub weight: String,
    /// Colours: default or topdown (dominant TopDown L1 category per function).
    #[arg(long = "color", alias = "colors", default_value = "default", value_parser = ["default", "topdown"])]
    pub color: String,
    /// Title.
    #[arg(long)]
    pub title: Option<String>,
    /// Icicle graph (root at the top).
    #[arg(long)]
    pub inverted: bool,
    /// Time order instead of merged stacks.
    #[arg(long = "flame-chart")]
    pub flame_chart: bool,
    /// Omit frames narrower than this many pixels.
    #[arg(long = "min-width", default_value_t = 0.1)]
    pub min_width: f64,
    /// Write collapsed stacks (`a;b;c COUNT`) instead of SVG.
    #[arg(long)]
    pub folded: bool,
    /// Differential flame graph of two recordings: --diff BASE NEW.
    #[arg(long, num_args = 2, value_names = ["BASE", "NEW"])]
    pub diff: Vec<PathBuf>,
    #[command(flatten)]
    pub symbols: SymbolArgs,
    #[command(flatten)]
    pub filters: FilterArgs,
}

impl FlamegraphArgs {
    fn into_config(self) -> Result<hrec::app::FlamegraphConfig, String> {
        use hrec::output::flame::{Colors, FlameOptions, Weight};
        let default_out = if self.folded { "-" } else { "flamegraph.svg" };
        let (profile, filters) = reading_options(self.symbols, self.filters)?;
        Ok(hrec::app::FlamegraphConfig {
            input: input_file(self.input),
            output: self.output.unwrap_or_else(|| PathBuf::from(default_out)),
            folded: self.folded,
            diff: self.diff,
            profile: hrec::analysis::profile::ProfileOptions {
                timeline: self.flame_chart,
                ..profile
            },
            flame: FlameOptions {
                event: self.event,
                weight: match self.weight.as_str() {
                    "period" => Weight::Period,
                    "retire-latency" => Weight::RetireLatency,
                    _ => Weight::Samples,
                },
                colors: if self.color == "topdown" {
                    Colors::TopDown
                } else {
                    Colors::Default
                },
                title: self.title,
                inverted: self.inverted,
                flame_chart: self.flame_chart,
                min_width: self.min_width,
                filters,
            },
        })
    }
}

/// `hrec export` flags.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Input file [default: hrec.data, else perf.data when only that is here].
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
    /// Output format: pprof (gzip-compressed profile.proto, for `go tool pprof` and others),
    /// firefox (gzip-compressed processed-profile JSON for the Firefox Profiler, as samply
    /// writes: a track per thread, samples on the timeline weighted by their period,
    /// inline frames, lost-sample and throttling markers).
    #[arg(long, value_parser = ["pprof", "firefox"])]
    pub format: String,
    /// Output file (`-` for stdout) [default: profile.pb.gz for pprof, profile.json.gz for
    /// firefox].
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub filters: FilterArgs,
    #[command(flatten)]
    pub symbols: SymbolArgs,
}

impl ExportArgs {
    fn into_config(self) -> Result<hrec::app::ExportConfig, String> {
        let (profile, filters) = reading_options(self.symbols, self.filters)?;
        let format = match self.format.as_str() {
            "pprof" => hrec::app::ExportFormat::Pprof,
            "firefox" => hrec::app::ExportFormat::Firefox,
            other => return Err(format!("--format {other}: the formats are: pprof, firefox")),
        };
        let default_out = match format {
            hrec::app::ExportFormat::Pprof => "profile.pb.gz",
            hrec::app::ExportFormat::Firefox => "profile.json.gz",
        };
        Ok(hrec::app::ExportConfig {
            input: input_file(self.input),
            output: self.output.unwrap_or_else(|| PathBuf::from(default_out)),
            format,
            profile,
            filters,
        })
    }
}

/// `hrec stat` flags.
#[derive(Debug, Args)]
pub struct StatArgs {
    /// Event(s) to count.
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    pub events: Vec<String>,
    /// Metrics or metric groups.
    #[arg(short = 'M', long = "metrics", value_name = "METRICS")]
    pub metrics: Vec<String>,
    /// TopDown breakdown.
    #[arg(long)]
    pub topdown: bool,
    /// Count every CPU.
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Count these CPUs.
    #[arg(short = 'C', long = "cpu", value_name = "CPUS")]
    pub cpu: Option<CpuList>,
    /// Attach to these processes (every thread they have).
    #[arg(short = 'p', long = "pid", value_delimiter = ',')]
    pub pid: Vec<u32>,
    /// Attach to these threads.
    #[arg(short = 't', long = "tid", value_delimiter = ',')]
    pub tid: Vec<u32>,
    /// With -a or -C: one count per CPU.
    #[arg(short = 'A', long = "no-aggr")]
    pub no_aggr: bool,
    /// With -a or -C: one count per physical core.
    #[arg(long = "per-core")]
    pub per_core: bool,
    /// With -a or -C: one count per socket.
    #[arg(long = "per-socket")]
    pub per_socket: bool,
    /// With -p, -t or -a: one count per thread.
    #[arg(long = "per-thread")]
    pub per_thread: bool,
    /// With -I: stop after this many intervals.
    #[arg(long = "interval-count", value_name = "N", requires = "interval")]
    pub interval_count: Option<u64>,
    /// Write the counts to this file instead of stderr.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        conflicts_with = "log_fd"
    )]
    pub output: Option<PathBuf>,
    /// With -o: add to the end of the file.
    #[arg(long, requires = "output")]
    pub append: bool,
    /// Write the counts to this open file descriptor instead of stderr.
    #[arg(long = "log-fd", value_name = "FD")]
    pub log_fd: Option<i32>,
    /// TopDown level with --topdown: 1 or 2.
    #[arg(long = "td-level", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub td_level: u8,
    /// Print counts every MS milliseconds.
    #[arg(short = 'I', long = "interval-print", value_name = "MS")]
    pub interval: Option<u64>,
    /// CSV output with this separator.
    #[arg(short = 'x', long = "field-separator", value_name = "SEP")]
    pub sep: Option<String>,
    /// JSON lines output.
    #[arg(short = 'j', long)]
    pub json: bool,
    /// Count the command N times; print the mean of each count and its spread (+- x.xx%).
    #[arg(
        short = 'r',
        long = "repeat",
        value_name = "N",
        allow_hyphen_values = true,
        value_parser = parse_repeat
    )]
    pub repeat: Option<u32>,
    /// Add perf's cache events: -d L1 data and last-level cache, -dd also L1 instruction cache
    /// and TLBs, -ddd also L1 data prefetches.
    #[arg(short = 'd', long = "detailed", action = clap::ArgAction::Count)]
    pub detailed: u8,
    /// Print counts with the locale's thousands separators (the default).
    #[arg(short = 'B', long = "big-num", overrides_with = "no_big_num")]
    pub big_num: bool,
    /// Print counts as plain digits.
    #[arg(long = "no-big-num", overrides_with = "big_num")]
    pub no_big_num: bool,
    /// Null run: count no default events, only time the command.
    #[arg(short = 'n', long = "null")]
    pub null: bool,
    /// Directory with Intel's perfmon files (mapfile.csv and the model folders); default
    /// $HREC_PERFMON_DIR, else ~/.cache/hrec/perfmon.
    #[arg(long, value_name = "DIR")]
    pub perfmon: Option<PathBuf>,
    /// The CPU to pick metric files for, as mapfile.csv spells it (default: this CPU).
    #[arg(long, value_name = "CPUID", hide = true)]
    pub cpuid: Option<String>,
    /// Sample the retire-latency events of the metrics during this run (Timed PEBS).
    #[arg(long = "record-tpebs")]
    pub record_tpebs: bool,
    /// Which statistic of the measured latencies to use: mean, min, max or last.
    #[arg(long = "tpebs-mode", default_value = "mean")]
    pub tpebs_mode: String,
    /// Take retire latencies from an `hrec record -W` file, a `perf record -W` perf.data, or an
    /// `hrec report --retire-latency-json` / Intel retire_latency.json file.
    #[arg(long = "tpebs-from", value_name = "FILE")]
    pub tpebs_from: Option<PathBuf>,
    /// The command to count, after --.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `-r N`: a whole number of runs, at least one.
fn parse_repeat(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(0) => Err(
            "give at least 1 run (perf's -r 0, repeat until interrupted, is not supported)".into(),
        ),
        Ok(n) => Ok(n),
        Err(_) => Err("the number of runs must be a whole number, 1 or more".into()),
    }
}

impl StatArgs {
    fn into_config(self) -> Result<hrec::app::StatConfig, String> {
        use hrec::stat::count::{Aggr, StatOptions, StatTarget};
        let tpebs_mode: hrec::stat::tpebs::TpebsMode =
            self.tpebs_mode.parse().map_err(|e| format!("{e}"))?;
        if (self.record_tpebs || self.tpebs_from.is_some()) && self.metrics.is_empty() {
            return Err(
                "--record-tpebs and --tpebs-from feed retire latencies into metrics: give -M too"
                    .into(),
            );
        }
        let given = [
            self.all_cpus,
            self.cpu.is_some(),
            !self.pid.is_empty(),
            !self.tid.is_empty(),
        ]
        .iter()
        .filter(|&&b| b)
        .count();
        if given > 1 {
            return Err("choose one of -a, -C, -p and -t".into());
        }
        if self.interval == Some(0) {
            return Err(
                "-I 0: the interval must be at least 1 ms (perf suggests 100 or more)".into(),
            );
        }
        if self.interval_count == Some(0) {
            return Err("--interval-count 0: give at least 1".into());
        }
        if self.sep.is_some() && self.json {
            return Err("-x and --json cannot be combined".into());
        }
        if self.big_num && self.sep.is_some() {
            return Err(
                "-B/--big-num and -x cannot be combined: CSV counts are plain digits (as in perf)"
                    .into(),
            );
        }
        let repeat = self.repeat.unwrap_or(1);
        if repeat > 1 {
            if self.interval.is_some() {
                return Err(format!(
                    "-r {repeat} and -I cannot be combined: -r prints the means of whole runs, -I the counts as they go"
                ));
            }
            if self.command.is_empty() {
                return Err(format!("-r {repeat} repeats a command: give one after --"));
            }
            if self.record_tpebs {
                return Err(format!(
                    "-r {repeat} and --record-tpebs cannot be combined: the retire latencies are sampled in one run"
                ));
            }
        }
        let join = |v: &[u32]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let (target, title) = if !self.pid.is_empty() {
            let t = format!("process id '{}'", join(&self.pid));
            (StatTarget::Pids(self.pid), t)
        } else if !self.tid.is_empty() {
            let t = format!("thread id '{}'", join(&self.tid));
            (StatTarget::Tids(self.tid), t)
        } else if let Some(c) = self.cpu {
            let t = format!("'CPU(s) {c}'");
            (StatTarget::Cpus(c), t)
        } else if self.all_cpus {
            (StatTarget::AllCpus, "'system wide'".to_string())
        } else {
            (
                StatTarget::Workload,
                format!("'{}'", self.command.join(" ")),
            )
        };
        if target == StatTarget::Workload && self.command.is_empty() {
            return Err("nothing to count: give a command after --, or -a, -C, -p or -t".into());
        }
        let modes = [
            (self.no_aggr, "-A", Aggr::PerCpu),
            (self.per_core, "--per-core", Aggr::PerCore),
            (self.per_socket, "--per-socket", Aggr::PerSocket),
            (self.per_thread, "--per-thread", Aggr::PerThread),
        ];
        let chosen: Vec<_> = modes.iter().filter(|m| m.0).collect();
        if chosen.len() > 1 {
            return Err(format!(
                "{} and {} aggregate differently: use one of them",
                chosen[0].1, chosen[1].1
            ));
        }
        let aggr = chosen.first().map_or(Aggr::Global, |m| m.2);
        let cpu_wide = matches!(target, StatTarget::AllCpus | StatTarget::Cpus(_));
        match aggr {
            Aggr::PerCpu | Aggr::PerCore | Aggr::PerSocket if !cpu_wide => {
                return Err(format!("{} counts per CPU: it needs -a or -C", chosen[0].1));
            }
            Aggr::PerThread if target == StatTarget::Workload => {
                return Err("--per-thread needs -p, -t or -a (threads that exist now)".into());
            }
            _ => {}
        }
        let output = match (self.output, self.log_fd) {
            (Some(path), _) => hrec::app::StatOutput::File {
                path,
                append: self.append,
            },
            (None, Some(fd)) => hrec::app::StatOutput::Fd(fd),
            (None, None) => hrec::app::StatOutput::Stderr,
        };
        Ok(hrec::app::StatConfig {
            options: StatOptions {
                events: self.events,
                topdown: self.topdown,
                td_level: self.td_level,
                target,
                interval_ms: self.interval,
                interval_count: self.interval_count,
                aggr,
                tpebs: Vec::new(),
                detailed: self.detailed,
                null_run: self.null,
                ..Default::default()
            },
            style: hrec::stat::output::StatStyle {
                csv: self.sep,
                json: self.json,
                td_level: self.td_level,
                // perf's default; -x turns it off.
                big_num: !self.no_big_num,
                null_run: self.null,
                ..Default::default()
            },
            repeat,
            command: self.command,
            metrics: self.metrics,
            perfmon: self.perfmon,
            cpuid: self.cpuid,
            record_tpebs: self.record_tpebs,
            tpebs_mode,
            tpebs_from: self.tpebs_from,
            title,
            output,
        })
    }
}

/// `hrec list` flags.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// What to list: hw, sw, cache, pmu, tracepoint, metric, metricgroup, or a glob matched
    /// as *GLOB* against event names ('cache-*', mem_load); subsys:event for tracepoints.
    #[arg(value_name = "FILTER")]
    pub filters: Vec<String>,
    /// JSON output: an array with one object per event or metric.
    #[arg(short = 'j', long)]
    pub json: bool,
    /// Print descriptions (the default; perf's -d).
    #[arg(short = 'd', long = "desc", overrides_with = "no_desc")]
    pub desc: bool,
    /// Leave the descriptions out.
    #[arg(long = "no-desc")]
    pub no_desc: bool,
    /// Print Intel's longer descriptions (perf's -v; hrec's -v is --verbose).
    #[arg(long = "long-desc")]
    pub long_desc: bool,
    /// Print each event's encoding and each metric's formula.
    #[arg(long)]
    pub details: bool,
    /// List deprecated events too.
    #[arg(long)]
    pub deprecated: bool,
    /// hrec's PMU table (type, CPUs, core, TopDown level, aliases) instead of the events.
    #[arg(long)]
    pub pmus: bool,
    /// Directory with Intel's perfmon files (mapfile.csv and the model folders); default
    /// $HREC_PERFMON_DIR, else ~/.cache/hrec/perfmon.
    #[arg(long, value_name = "DIR")]
    pub perfmon: Option<PathBuf>,
    /// The CPU to pick event and metric files for, as mapfile.csv spells it (default: this
    /// CPU).
    #[arg(long, value_name = "CPUID", hide = true)]
    pub cpuid: Option<String>,
}

impl ListArgs {
    fn into_config(self) -> ListConfig {
        // perf wraps descriptions at $COLUMNS, else 78 (80 less 2) when not paging.
        let columns = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse().ok())
            .unwrap_or(78);
        ListConfig {
            filters: self.filters,
            json: self.json,
            pmus: self.pmus,
            desc: !self.no_desc,
            long_desc: self.long_desc,
            details: self.details,
            deprecated: self.deprecated,
            columns,
            perfmon: self.perfmon,
            cpuid: self.cpuid,
        }
    }
}

fn parse_freq(s: &str) -> Result<Freq, String> {
    if s == "max" {
        return Ok(Freq::Max);
    }
    s.parse::<u64>()
        .map(Freq::Hz)
        .map_err(|_| format!("expected a frequency in Hz or 'max', found {s:?}"))
}

fn parse_call_graph(s: &str) -> Result<CallGraph, String> {
    let mut parts = s.split(',');
    let mode = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
    match mode {
        "fp" if rest.is_empty() => Ok(CallGraph::Fp),
        "dwarf" => {
            let (size, raw) = match rest[..] {
                [] => (None, false),
                ["raw"] => (None, true),
                [sz] => (Some(sz), false),
                [sz, "raw"] => (Some(sz), true),
                _ => return Err(format!("expected dwarf[,SIZE][,raw], found {s:?}")),
            };
            let stack_size = match size {
                None => DEFAULT_DWARF_STACK,
                Some(sz) => {
                    let n: u32 = sz
                        .parse()
                        .map_err(|_| format!("bad dwarf stack size {sz:?}"))?;
                    if n == 0 || !n.is_multiple_of(8) || n > 65528 {
                        return Err(format!(
                            "dwarf stack size must be a multiple of 8 in 8-65528, found {n}"
                        ));
                    }
                    n
                }
            };
            Ok(CallGraph::Dwarf { stack_size, raw })
        }
        "lbr" => Err(
            "--call-graph lbr needs the CPU's last branch records, which hrec does not read yet; use fp or dwarf"
                .to_string(),
        ),
        _ => Err(format!("expected fp or dwarf[,SIZE][,raw], found {s:?}")),
    }
}

impl Cli {
    /// Splits into the environment and the command; `Err` is a usage error (exit 2).
    pub fn into_command(self) -> Result<(Env, Command), String> {
        let mut env = Env {
            verbose: self.verbose,
            threads: self.threads,
            progress_after: std::time::Duration::from_millis(self.progress_after_ms),
            ..Env::default()
        };
        if let Some(r) = self.sysfs_root {
            env.sysfs_root = r;
        }
        if let Some(r) = self.procfs_root {
            env.procfs_root = r;
        }
        let cmd = match self.command {
            Cmd::Record(a) => Command::Record(a.into_config()?),
            Cmd::List(a) => Command::List(a.into_config()),
            Cmd::Report(a) => Command::Report(Box::new(a.into_config()?)),
            Cmd::Diff(a) => Command::Diff(Box::new(a.into_config()?)),
            Cmd::Top(a) => Command::Top(Box::new(a.into_config()?)),
            Cmd::Script(a) => {
                let (profile, filters) = reading_options(a.symbols, a.filters)?;
                Command::Script(Box::new(hrec::app::ScriptConfig {
                    input: input_file(a.input),
                    fields: match &a.fields {
                        Some(f) => hrec::output::script::parse_fields(f)?,
                        None => hrec::output::script::Field::DEFAULT.to_vec(),
                    },
                    named_fields: a
                        .fields
                        .as_deref()
                        .map(hrec::output::script::named_fields)
                        .unwrap_or_default(),
                    profile,
                    filters,
                    layout: hrec::output::script::Layout {
                        inline: match (a.inline, a.no_inline) {
                            (_, true) => hrec::output::script::Inline::Off,
                            (true, _) => hrec::output::script::Inline::All,
                            _ => hrec::output::script::Inline::Unwound,
                        },
                        ns: a.ns,
                        hide_call_graph: a.hide_call_graph,
                        show_mmap: a.show_mmap_events,
                        show_task: a.show_task_events,
                    },
                    header: a.header,
                }))
            }
            Cmd::Flamegraph(a) => Command::Flamegraph(Box::new(a.into_config()?)),
            Cmd::Export(a) => Command::Export(Box::new(a.into_config()?)),
            Cmd::Stat(a) => Command::Stat(Box::new(a.into_config()?)),
            Cmd::Info(a) => Command::Info(InputConfig {
                input: input_file(a.input),
            }),
            Cmd::Evlist(a) => Command::Evlist(
                InputConfig {
                    input: input_file(a.input),
                },
                hrec::output::EvlistStyle {
                    verbose: env.verbose > 0,
                    group: a.group,
                    freq: a.freq,
                },
            ),
            Cmd::BuildidList(a) => Command::BuildidList(InputConfig {
                input: input_file(a.input),
            }),
            Cmd::Annotate(a) => {
                let syntax: hrec::disasm::Syntax = a.style.parse()?;
                let column: hrec::output::annotate::Column = if a.show_nr_samples {
                    hrec::output::annotate::Column::Samples
                } else {
                    a.percent_type.parse()?
                };
                let (profile, _) = reading_options(a.symbols_args, FilterArgs::default())?;
                let mut symbols = a.symbols;
                symbols.extend(a.symbol);
                Command::Annotate(Box::new(hrec::app::AnnotateConfig {
                    input: input_file(a.input),
                    options: hrec::analysis::annotate::AnnotateOptions {
                        symbols,
                        dso: a.dso,
                        percent_limit: a.percent_limit,
                        syntax,
                        source: !a.no_source,
                        ..Default::default()
                    },
                    profile,
                    event: a.event,
                    text: hrec::output::annotate::TextOptions {
                        column,
                        asm_raw: a.asm_raw,
                        td_level: a.td_level,
                        ..Default::default()
                    },
                    json: a.json,
                }))
            }
        };
        Ok((env, cmd))
    }
}

impl RecordArgs {
    fn into_config(self) -> Result<RecordConfig, String> {
        if self.exclude_perf {
            return Err("--exclude-perf filters out perf's own tracepoint events (perf's rule: it follows a tracepoint -e); hrec records no tracepoints, so there is nothing to exclude: leave it out".into());
        }
        let target = pick_target(
            self.all_cpus,
            self.cpu,
            self.pid,
            self.tid,
            Target::Workload,
        )?;
        check_count(self.count)?;
        // As in perf: `-g` turns call graphs on (frame pointers unless said otherwise) and
        // `--call-graph MODE` picks the mode, so `-g --call-graph dwarf` records dwarf.
        let call_graph = self.call_graph.or(self.g.then_some(CallGraph::Fp));
        Ok(RecordConfig {
            options: RecordOptions {
                events: self.events,
                freq: self.freq,
                count: self.count,
                weight: self.weight,
                call_graph,
                target,
                per_thread: self.per_thread,
                no_inherit: self.no_inherit,
                inherit_stat: self.stat,
            },
            output: self.output,
            mmap_pages: self.mmap_pages,
            dry_run: self.dry_run,
            json: self.json,
            command: self.command,
            command_line: std::env::args().collect(),
            quiet: self.quiet,
            zstd_level: self.compression_level,
            no_buildid: self.no_buildid,
            switch_output: self.switch_output.map(|trigger| SwitchOutput {
                trigger,
                max_files: self
                    .switch_max_files
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            }),
        })
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

    fn record(args: &[&str]) -> Result<RecordConfig, String> {
        let mut v = vec!["hrec", "record"];
        v.extend_from_slice(args);
        let cli = Cli::try_parse_from(v).map_err(|e| e.to_string())?;
        match cli.into_command()?.1 {
            Command::Record(r) => Ok(r),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn perf_flag_names() {
        let r = record(&[
            "-e",
            "cycles",
            "-e",
            "instructions",
            "-F",
            "999",
            "-W",
            "-g",
            "-i",
            "-m",
            "64",
            "-o",
            "x.data",
            "--",
            "ls",
            "-l",
        ])
        .unwrap();
        assert_eq!(r.options.events, ["cycles", "instructions"]);
        assert_eq!(r.options.freq, Some(Freq::Hz(999)));
        assert!(r.options.weight && r.options.no_inherit);
        assert_eq!(r.options.call_graph, Some(CallGraph::Fp));
        assert_eq!(r.mmap_pages, Some(64));
        assert_eq!(r.command, ["ls", "-l"]);
        assert_eq!(r.output, PathBuf::from("x.data"));
        // `-g` with a mode: the mode (perf's rule), `=` or a space.
        for args in [
            &["-g", "--call-graph", "dwarf"][..],
            &["--call-graph=dwarf", "-g"],
        ] {
            let r = record(args).unwrap();
            assert_eq!(
                r.options.call_graph,
                Some(CallGraph::Dwarf {
                    stack_size: DEFAULT_DWARF_STACK,
                    raw: false
                }),
                "{args:?}"
            );
        }
        let r = record(&["-C", "0-3", "--call-graph", "dwarf,4096"]).unwrap();
        assert_eq!(r.options.target, Target::Cpus("0-3".parse().unwrap()));
        assert_eq!(
            r.options.call_graph,
            Some(CallGraph::Dwarf {
                stack_size: 4096,
                raw: false
            })
        );
        for (arg, stack_size) in [("dwarf,raw", DEFAULT_DWARF_STACK), ("dwarf,512,raw", 512)] {
            assert_eq!(
                record(&["--call-graph", arg]).unwrap().options.call_graph,
                Some(CallGraph::Dwarf {
                    stack_size,
                    raw: true
                })
            );
        }
        assert!(record(&["--call-graph", "dwarf,512,raw,x"]).is_err());
        assert!(record(&["--call-graph", "fp,raw"]).is_err());
        let r = record(&["-p", "12,34", "--per-thread"]).unwrap();
        assert_eq!(r.options.target, Target::Pids(vec![12, 34]));
        assert_eq!(
            record(&["-F", "max", "-a"]).unwrap().options.freq,
            Some(Freq::Max)
        );
    }

    #[test]
    fn usage_errors() {
        assert!(
            record(&["-a", "-p", "1"])
                .unwrap_err()
                .contains("different targets")
        );
        // As perf: the command only sets how long -p/-t record.
        let r = record(&["-p", "1", "--", "sleep", "1"]).unwrap();
        assert_eq!(r.options.target, Target::Pids(vec![1]));
        assert_eq!(r.command, ["sleep", "1"]);
        assert!(record(&["-F", "fast"]).is_err());
        assert!(
            record(&["-c", "0", "--", "true"])
                .unwrap_err()
                .contains("-c 0")
        );
        assert!(
            record(&["--call-graph", "lbr"])
                .unwrap_err()
                .contains("use fp or dwarf")
        );
        assert!(record(&["--call-graph", "dwarf,7"]).is_err());
        assert!(record(&["--json", "--", "true"]).is_err());
    }
}
