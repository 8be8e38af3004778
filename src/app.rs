//! The commands behind the CLI, taking plain config structs (no clap types) and writers.
//!
//! `main` parses the command line into these structs and prints what [`run`] returns; tests call
//! [`run`] directly with in-memory writers.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::event::plan::{self, Host, RecordOptions};
use crate::event::resolve::{HARDWARE_EVENTS, SOFTWARE_EVENTS};
use crate::output;
use crate::pmu::{PmuError, Pmus};
use crate::record;
use crate::recording::{Recording, RecordingError, Source};

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

/// `hrec record`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordConfig {
    /// Planning options.
    pub options: RecordOptions,
    /// `-o`.
    pub output: PathBuf,
    /// `-m`: data pages per ring buffer (a power of two).
    pub mmap_pages: Option<u64>,
    /// `--dry-run`: print the plan, open nothing.
    pub dry_run: bool,
    /// `--json` with `--dry-run`.
    pub json: bool,
    /// The workload command, when forking one.
    pub command: Vec<String>,
    /// hrec's own command line, stored in the file header.
    pub command_line: Vec<String>,
    /// `-q`: errors only.
    pub quiet: bool,
    /// `-z N`: zstd level of the blocks.
    pub zstd_level: Option<i32>,
    /// `-B`: no build-ids.
    pub no_buildid: bool,
    /// `--switch-output` (with `--switch-max-files`).
    pub switch_output: Option<record::switch::SwitchOutput>,
}

/// `hrec list`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListConfig {
    /// The filters: perf's classes (`hw`, `sw`, `cache`, `pmu`, `tracepoint`, `metric`,
    /// `metricgroup`) or globs; empty lists everything.
    pub filters: Vec<String>,
    /// `--json`.
    pub json: bool,
    /// `--pmus`: hrec's PMU table (type, CPUs, TopDown level) instead of the event list.
    pub pmus: bool,
    /// Descriptions (`-d`, on unless `--no-desc`).
    pub desc: bool,
    /// `-v/--long-desc`: Intel's longer descriptions.
    pub long_desc: bool,
    /// `--details`: encodings and metric formulas.
    pub details: bool,
    /// `--deprecated`: Intel's deprecated events too.
    pub deprecated: bool,
    /// Wrap descriptions before this column.
    pub columns: usize,
    /// `--perfmon DIR` (default: `HREC_PERFMON_DIR`, else `~/.cache/hrec/perfmon`).
    pub perfmon: Option<PathBuf>,
    /// `--cpuid` (default: this CPU).
    pub cpuid: Option<String>,
}

/// `hrec script` / `hrec info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputConfig {
    /// `-i`.
    pub input: PathBuf,
}

/// `hrec report`.
#[derive(Debug, Clone)]
pub struct ReportConfig {
    /// `-i`.
    pub input: PathBuf,
    /// Aggregation (sort keys, children, filters).
    pub hist: crate::analysis::hist::HistOptions,
    /// `--children` / `--no-children`; `None`: children when the recording has call chains
    /// (perf's default).
    pub children: Option<bool>,
    /// `-g`, `-G`, `--max-stack`.
    pub call_graph: crate::analysis::callgraph::CallGraphOptions,
    /// `-g` or `-G` was given: call graphs even where perf would not show them by default.
    pub call_graph_given: bool,
    /// Symbol search and time range.
    pub profile: crate::analysis::profile::ProfileOptions,
    /// Printing.
    pub style: output::report::ReportStyle,
    /// `--json`.
    pub json: bool,
    /// `--folded`: collapsed stacks instead of the table.
    pub folded: bool,
    /// `--retire-latency-json FILE`.
    pub retire_latency_json: Option<PathBuf>,
    /// Show a progress bar on stderr (a terminal) when reading takes over a second.
    pub progress: bool,
    /// The interactive view instead of the text (`--tui`, or the default on a terminal).
    pub tui: bool,
    /// `--header`: the recording's header (as `hrec info`) before the report.
    pub header: bool,
    /// `--header-only`: the header and nothing else (the samples are not read).
    pub header_only: bool,
    /// `-T/--threads`: the per-thread counts of `record -s` after the report.
    pub thread_counts: bool,
}

/// `hrec diff`.
#[derive(Debug, Clone)]
pub struct DiffConfig {
    /// The baseline recording.
    pub old: PathBuf,
    /// The recording compared with it.
    pub new: PathBuf,
    /// Aggregation of each file (sort keys, filters, `--percentage`).
    pub hist: crate::analysis::hist::HistOptions,
    /// Symbol search and time range.
    pub profile: crate::analysis::profile::ProfileOptions,
    /// What to compute and how to order.
    pub diff: crate::analysis::diff::DiffOptions,
    /// Printing.
    pub style: output::diff::DiffStyle,
    /// `--json`.
    pub json: bool,
}

/// `hrec flamegraph`.
#[derive(Debug, Clone)]
pub struct FlamegraphConfig {
    /// `-i`.
    pub input: PathBuf,
    /// `-o` (`-` = stdout).
    pub output: PathBuf,
    /// `--folded`.
    pub folded: bool,
    /// `--diff BASE NEW` (empty when not given).
    pub diff: Vec<PathBuf>,
    /// Symbol search.
    pub profile: crate::analysis::profile::ProfileOptions,
    /// Drawing.
    pub flame: output::flame::FlameOptions,
}

/// `hrec export --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// gzip-compressed protobuf in pprof's `profile.proto` format.
    Pprof,
    /// gzip-compressed processed-profile JSON for the Firefox Profiler.
    Firefox,
}

/// `hrec export`.
#[derive(Debug, Clone)]
pub struct ExportConfig {
    /// `-i`.
    pub input: PathBuf,
    /// `-o` (`-` = stdout).
    pub output: PathBuf,
    /// `--format`.
    pub format: ExportFormat,
    /// Symbol search and time range.
    pub profile: crate::analysis::profile::ProfileOptions,
    /// `--comm`, `--pid`.
    pub filters: crate::analysis::hist::Filters,
}

/// `hrec stat`.
#[derive(Debug, Clone)]
pub struct StatConfig {
    /// What to count.
    pub options: crate::stat::count::StatOptions,
    /// How to print.
    pub style: crate::stat::output::StatStyle,
    /// The command.
    pub command: Vec<String>,
    /// `-M` names.
    pub metrics: Vec<String>,
    /// `--perfmon DIR`.
    pub perfmon: Option<PathBuf>,
    /// `--cpuid` (default: this CPU).
    pub cpuid: Option<String>,
    /// `--record-tpebs`.
    pub record_tpebs: bool,
    /// `--tpebs-mode`.
    pub tpebs_mode: crate::stat::tpebs::TpebsMode,
    /// `--tpebs-from FILE`.
    pub tpebs_from: Option<PathBuf>,
    /// `-r N`: count the command N times and print the means (1: once).
    pub repeat: u32,
    /// What the counts are of, as perf's header says it (`'CMD'`, `'system wide'`,
    /// `'CPU(s) 0-3'`, `process id '42'`, `thread id '43'`).
    pub title: String,
    /// Where the counts go.
    pub output: StatOutput,
}

/// Where `hrec stat` prints its counts: stderr, as perf (the command's stdout stays its own).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StatOutput {
    /// Standard error.
    #[default]
    Stderr,
    /// `-o FILE` (`--append`: added to its end).
    File {
        /// The file.
        path: PathBuf,
        /// `--append`.
        append: bool,
    },
    /// `--log-fd N`: a descriptor the caller opened.
    Fd(i32),
}

/// `hrec annotate`.
#[derive(Debug, Clone)]
pub struct AnnotateConfig {
    /// `-i`.
    pub input: PathBuf,
    /// `--symfs`, `--debug-dir`, `--time`.
    pub profile: crate::analysis::profile::ProfileOptions,
    /// Which functions, syntax, source lines.
    pub options: crate::analysis::annotate::AnnotateOptions,
    /// `--event` (default: the first sampling event).
    pub event: Option<String>,
    /// `--percent-type` / `--show-nr-samples`, `--asm-raw`, `--td-level`.
    pub text: output::annotate::TextOptions,
    /// `--json`.
    pub json: bool,
}

/// `hrec script`.
#[derive(Debug, Clone)]
pub struct ScriptConfig {
    /// `-i`.
    pub input: PathBuf,
    /// `-F` fields.
    pub fields: Vec<output::script::Field>,
    /// The fields `-F` names (printing them needs the samples to have them).
    pub named_fields: Vec<output::script::Field>,
    /// `--symfs`, `--debug-dir`, `--time`.
    pub profile: crate::analysis::profile::ProfileOptions,
    /// `--comm`, `--pid`, `--dso`, `--sym`.
    pub filters: crate::analysis::hist::Filters,
    /// `--inline`, `--ns`, `-G`, `--show-mmap-events`, `--show-task-events`.
    pub layout: output::script::Layout,
    /// `--header`: the recording's header first.
    pub header: bool,
}

/// One command to run.
#[derive(Debug, Clone)]
pub enum Command {
    /// `hrec record`
    Record(RecordConfig),
    /// `hrec list`
    List(ListConfig),
    /// `hrec script`
    Script(Box<ScriptConfig>),
    /// `hrec info`
    Info(InputConfig),
    /// `hrec evlist`
    Evlist(InputConfig, output::EvlistStyle),
    /// `hrec buildid-list`
    BuildidList(InputConfig),
    /// `hrec report`
    Report(Box<ReportConfig>),
    /// `hrec flamegraph`
    Flamegraph(Box<FlamegraphConfig>),
    /// `hrec export`
    Export(Box<ExportConfig>),
    /// `hrec stat`
    Stat(Box<StatConfig>),
    /// `hrec annotate`
    Annotate(Box<AnnotateConfig>),
    /// `hrec diff`
    Diff(Box<DiffConfig>),
    /// `hrec top`
    Top(Box<TopConfig>),
}

/// `hrec top`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopConfig {
    /// What to sample (system-wide unless `-p`/`-t`/`-C`).
    pub options: RecordOptions,
    /// `-d`: seconds between refreshes.
    pub delay: std::time::Duration,
    /// `-n`: stop after this many refreshes.
    pub refreshes: Option<u64>,
    /// `-z`: each refresh shows only its interval (no decayed history).
    pub zero: bool,
    /// `-s`: the row keys (default `dso,sym`, perf top's).
    pub sort: Vec<crate::analysis::hist::SortKey>,
    /// `-E`: rows shown (default: the terminal's height, else 50).
    pub entries: Option<usize>,
    /// `--stdio`, or stdout not a terminal: no clear-screen between refreshes.
    pub stdio: bool,
    /// `-m`.
    pub mmap_pages: Option<u64>,
}

/// Errors of the commands, each with enough context for one line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppError {
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
    Stat(#[from] crate::stat::count::StatError),
    /// The event list could not be made.
    #[error(transparent)]
    List(#[from] crate::listing::ListError),
    /// Metrics could not be set up.
    #[error(transparent)]
    Tma(#[from] crate::stat::tma::TmaError),
    /// A retire-latency source could not be read.
    #[error(transparent)]
    Tpebs(#[from] crate::stat::tpebs::TpebsError),
    /// A flame graph could not be drawn.
    #[error(transparent)]
    Flame(#[from] output::flame::FlameError),
    /// The recording failed.
    #[error(transparent)]
    Record(#[from] record::RecordError),
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

impl AppError {
    /// True for errors in how hrec was invoked (exit status 2), as opposed to failures (1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            AppError::Usage(_) | AppError::Plan(plan::PlanError::Options(_))
        )
    }
}

/// Reads what planning needs from procfs; missing files mean "unknown".
pub fn read_host(procfs_root: &Path) -> Host {
    let rate = std::fs::read_to_string(procfs_root.join("sys/kernel/perf_event_max_sample_rate"))
        .ok()
        .and_then(|s| s.trim().parse().ok());
    Host {
        max_sample_rate: rate,
        ..Host::default()
    }
}

/// Runs one command. Returns the process exit status.
pub fn run(
    env: &Env,
    cmd: &Command,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, AppError> {
    match cmd {
        Command::Record(cfg) => record(env, cfg, out, err),
        Command::List(cfg) => list(env, cfg, out, err),
        Command::Script(cfg) => script(env, cfg, out, err),
        Command::Info(cfg) => info(env, cfg, out, err),
        Command::Evlist(cfg, style) => {
            let rec = open_recording(env, &cfg.input, err)?;
            output::evlist(&rec, *style, out)?;
            Ok(0)
        }
        Command::BuildidList(cfg) => {
            let rec = open_recording(env, &cfg.input, err)?;
            output::buildid_list(&rec, out)?;
            Ok(0)
        }
        Command::Report(cfg) => report(env, cfg, out, err),
        Command::Flamegraph(cfg) => flamegraph(env, cfg, out, err),
        Command::Export(cfg) => export(env, cfg, out, err),
        Command::Stat(cfg) => stat(env, cfg, out, err),
        Command::Annotate(cfg) => annotate(env, cfg, out, err),
        Command::Diff(cfg) => diff(env, cfg, out, err),
        Command::Top(cfg) => top(env, cfg, out, err),
    }
}

fn record(
    env: &Env,
    cfg: &RecordConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, AppError> {
    if let Some(m) = cfg.mmap_pages
        && (m == 0 || !m.is_power_of_two())
    {
        return Err(AppError::Usage(format!(
            "-m {m}: the number of mmap data pages must be a power of two (e.g. 128)"
        )));
    }
    if cfg.options.target == plan::Target::Workload && cfg.command.is_empty() {
        return Err(AppError::Usage(
            "nothing to record: give a command after --, or -a, -C, -p or -t".into(),
        ));
    }
    let pmus = Pmus::read(&env.sysfs_root)?;
    let host = read_host(&env.procfs_root);
    let plan = plan::plan_record(&pmus, &host, &cfg.options)?;
    for n in plan.notices.iter().filter(|_| !cfg.quiet) {
        writeln!(err, "hrec: {n}")?;
    }
    if cfg.dry_run {
        if cfg.json {
            serde_json::to_writer_pretty(&mut *out, &plan).map_err(io::Error::from)?;
            writeln!(out)?;
        } else {
            write!(out, "{}", plan.dump())?;
        }
        return Ok(0);
    }
    let session = record::Session {
        plan: &plan,
        pmus: &pmus,
        output: cfg.output.clone(),
        mmap_pages: cfg.mmap_pages.map(|m| m as usize),
        command: cfg.command.clone(),
        command_line: cfg.command_line.clone(),
        procfs_root: env.procfs_root.clone(),
        verbose: env.verbose,
        keep_raw_stacks: matches!(
            cfg.options.call_graph,
            Some(plan::CallGraph::Dwarf { raw: true, .. })
        ),
        zstd_level: cfg.zstd_level,
        no_buildid: cfg.no_buildid,
        switch_output: cfg.switch_output,
        on_file: None,
        stop: None,
        live: false,
    };
    let outcome = if cfg.quiet {
        record::record(&session, &mut io::sink())?
    } else {
        record::record(&session, err)?
    };
    if !cfg.quiet {
        writeln!(err, "{}", outcome.summary)?;
        for w in &outcome.warnings {
            writeln!(err, "hrec: {w}")?;
        }
    }
    Ok(u8::try_from(outcome.exit_code).unwrap_or(1))
}

/// `hrec top`: the recorder runs on a thread with `--switch-output` every `-d` seconds into a
/// private directory; each finished file is read as it comes (symbolized by one symbolizer
/// for the whole run, so each binary is loaded once, with this machine's kernel symbols),
/// folded into perf top's decayed table ([`crate::analysis::top`]), shown, and removed.
fn top(
    env: &Env,
    cfg: &TopConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, AppError> {
    use crate::analysis::{hist, replay, top as live};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, mpsc};

    if let Some(m) = cfg.mmap_pages
        && (m == 0 || !m.is_power_of_two())
    {
        return Err(AppError::Usage(format!(
            "-m {m}: the number of mmap data pages must be a power of two (e.g. 128)"
        )));
    }
    let pmus = Pmus::read(&env.sysfs_root)?;
    let host = read_host(&env.procfs_root);
    let plan = plan::plan_record(&pmus, &host, &cfg.options)?;
    for n in &plan.notices {
        writeln!(err, "hrec: {n}")?;
    }
    let dir = PrivateDir::new("hrec-top")?;
    let kallsyms = std::fs::read_to_string(env.procfs_root.join("kallsyms")).unwrap_or_default();
    let symbolizer = crate::symbol::symbolizer::Symbolizer::builder()
        .threads(1)
        .kernel(
            Arc::new(crate::symbol::kallsyms::KernelSymbols::parse(&kallsyms)),
            crate::symbol::Unresolved::NoKernelSymbols,
        )
        .vdso(crate::kernel::own_vdso(&env.procfs_root).as_deref())
        .keep_binaries(true)
        // perf top names functions from symbol tables; source lines need DWARF.
        .dwarf(cfg.sort.contains(&hist::SortKey::Srcline))
        .build();
    let popts = crate::analysis::profile::ProfileOptions {
        threads: 1,
        ..Default::default()
    };
    let hopts = hist::HistOptions {
        sort: cfg.sort.clone(),
        ..Default::default()
    };
    let target = match &plan.target {
        plan::Target::Pids(p) => format!("target_pid: {}", join_ids(p)),
        plan::Target::Tids(t) => format!("target_tid: {}", join_ids(t)),
        plan::Target::Cpus(c) => format!("CPUs: {c}"),
        _ => {
            let n = pmus.online.len();
            format!("all, {n} CPU{}", if n == 1 { "" } else { "s" })
        }
    };
    // The view scrolls; text shows what fits a terminal, else 50 rows.
    let entries = cfg.entries.unwrap_or_else(|| {
        if cfg.stdio {
            crate::kernel::terminal_rows().map_or(50, |r| usize::from(r).saturating_sub(7).max(1))
        } else {
            500
        }
    });
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<PathBuf>();
    let output = dir.path.join("top.data");
    let (recorded, failure) = std::thread::scope(|sc| {
        let (plan, pmus, stop_rec) = (&plan, &pmus, Arc::clone(&stop));
        let recorder = sc.spawn(move || {
            let session = record::Session {
                plan,
                pmus,
                output,
                mmap_pages: cfg.mmap_pages.map(|m| m as usize),
                command: Vec::new(),
                command_line: std::env::args().collect(),
                procfs_root: env.procfs_root.clone(),
                verbose: env.verbose,
                keep_raw_stacks: false,
                zstd_level: Some(1),
                no_buildid: true,
                switch_output: Some(record::switch::SwitchOutput {
                    trigger: record::switch::Trigger::Time(cfg.delay),
                    max_files: None,
                }),
                on_file: Some(tx),
                stop: Some(stop_rec),
                live: true,
            };
            record::record(&session, &mut io::sink())
        });
        let mut table = live::Live::new();
        let mut shown = 0u64;
        let mut failure: Option<AppError> = None;
        // Files that came while the last screen was being made are folded into one refresh,
        // so a slow first read (loading every binary's symbols) does not leave the screens
        // behind the clock.
        let mut ui = if cfg.stdio {
            None
        } else {
            match output::tui::LiveScreen::start(cfg.zero) {
                Ok(ui) => Some(ui),
                Err(e) => {
                    failure = Some(e.into());
                    stop.store(true, Ordering::Relaxed);
                    None
                }
            }
        };
        let mut zero = cfg.zero;
        loop {
            let first = match &mut ui {
                None => match rx.recv() {
                    Ok(f) => f,
                    Err(_) => break,
                },
                Some(screen) => {
                    match screen.poll(std::time::Duration::from_millis(50)) {
                        Ok(output::tui::LiveKey::None) => {}
                        Ok(output::tui::LiveKey::ToggleZero) => zero = !zero,
                        Ok(output::tui::LiveKey::Quit) => stop.store(true, Ordering::Relaxed),
                        Err(e) => {
                            failure.get_or_insert(e.into());
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    match rx.recv_timeout(std::time::Duration::from_millis(50)) {
                        Ok(f) => f,
                        Err(mpsc::RecvTimeoutError::Timeout) => continue,
                        Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    }
                }
            };
            let batch: Vec<PathBuf> = std::iter::once(first).chain(rx.try_iter()).collect();
            if failure.is_none() && !stop.load(Ordering::Relaxed) {
                let step = (|| -> Result<(), AppError> {
                    let mut iv = live::Interval::default();
                    let mut event = String::new();
                    for path in &batch {
                        let rec = Recording::open_with_kernel(path, 1, false)?;
                        let p = replay::build_with(&rec, &popts, &mut |_| {}, Some(&symbolizer));
                        let trailer = rec.trailer().cloned().unwrap_or_default();
                        iv.merge(&live::interval_of(
                            &p,
                            trailer.lost_samples,
                            trailer.duration_ns as f64 / 1e9,
                        ));
                        if let Some(t) = hist::tables(&p, &hopts).first() {
                            table.add(t);
                        }
                        event = top_event(&rec);
                    }
                    let status = output::top::Status {
                        event,
                        target: target.clone(),
                    };
                    let screen = output::top::screen(&table, &iv, &status, &cfg.sort, entries);
                    match &mut ui {
                        Some(ui) => ui.show(&screen)?,
                        None => {
                            writeln!(out, "{screen}")?;
                            out.flush()?;
                        }
                    }
                    Ok(())
                })();
                match step {
                    Ok(()) => {
                        shown += 1;
                        if zero {
                            table.zero();
                        } else {
                            table.decay();
                        }
                    }
                    Err(e) => {
                        failure = Some(e);
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                if cfg.refreshes.is_some_and(|n| shown >= n) {
                    stop.store(true, Ordering::Relaxed);
                }
            }
            for path in &batch {
                let _ = std::fs::remove_file(path);
            }
        }
        let recorded = recorder
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        (recorded, failure)
    });
    drop(dir);
    if let Some(e) = failure {
        return Err(e);
    }
    recorded?;
    Ok(0)
}

/// `hrec report`'s interactive view of profile `p` of `rec`; `a` annotates with the options
/// `hrec annotate` would take for the same file.
fn report_tui(
    env: &Env,
    cfg: &ReportConfig,
    rec: &Recording,
    p: &crate::analysis::profile::Profile,
    hist_opts: crate::analysis::hist::HistOptions,
    style: output::report::ReportStyle,
) -> Result<(), AppError> {
    use crate::analysis::annotate;
    let kcore = env.procfs_root.join("kcore");
    let kernel = std::fs::File::open(&kcore)
        .is_ok()
        .then(|| rec.kernel_symbols())
        .filter(|k| !k.is_empty())
        .map(|k| (k, kcore));
    let build_ids =
        crate::symbol::symbolizer::parse_build_ids(&rec.side("build-ids").unwrap_or_default());
    let annotator = |sym: &str, dso: &str, event: usize| -> Vec<String> {
        let o = annotate::AnnotateOptions {
            symbols: vec![sym.to_string()],
            dso: Some(dso.to_string()),
            event,
            percent_limit: 0.0,
            syntax: Default::default(),
            symfs: cfg.profile.symfs.clone(),
            search: cfg.profile.search.clone(),
            build_ids: build_ids.clone(),
            source: true,
            kernel: kernel.clone(),
        };
        let a = annotate::annotate(p, &o);
        let mut t = output::annotate::TextOptions::default();
        if let Some(e) = p.events.get(event) {
            t.samples = e.samples;
            t.period = e.period;
        }
        let mut lines: Vec<String> = a.problems.iter().map(|w| format!("warning: {w}")).collect();
        if !a.symbols.is_empty() {
            lines.extend(output::annotate::text(&a, &t).lines().map(str::to_string));
        }
        lines
    };
    let title = format!("hrec report of {}", cfg.input.display());
    let mut view = output::tui::View::new(p, hist_opts, style, title, &annotator);
    output::tui::run(&mut view)?;
    Ok(())
}

/// `4000Hz cpu-clock` (or `100003 cpu-clock` with a fixed period): the first sampling event
/// of a recording as perf top's status line names it.
fn top_event(rec: &Recording) -> String {
    use crate::event::attr::flag;
    let meta = rec.meta();
    let e = meta
        .events
        .iter()
        .find(|e| e.role == crate::data::Role::Sampler)
        .or(meta.events.first());
    match e {
        Some(e) if e.attr.has(flag::FREQ) => {
            format!("{}Hz {}", e.attr.sample_period_or_freq, e.name)
        }
        Some(e) => format!("{} {}", e.attr.sample_period_or_freq, e.name),
        None => String::new(),
    }
}

fn join_ids(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// A directory only this user can read (mode 0700) under `$TMPDIR` (or /tmp), removed with
/// what is in it when dropped.
#[derive(Debug)]
struct PrivateDir {
    path: PathBuf,
}

impl PrivateDir {
    fn new(prefix: &str) -> Result<PrivateDir, AppError> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        let mut last = None;
        for i in 0..100u32 {
            let path = base.join(format!("{prefix}.{}.{i}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(PrivateDir { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(source) => return Err(AppError::Output { path, source }),
            }
        }
        Err(AppError::Output {
            path: base,
            source: last.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists)),
        })
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The profile of a recording for a reading command, with the progress bar `hrec report`
/// has (on stderr when it is a terminal, once reading has taken `Env::progress_after`).
fn build_profile(
    env: &Env,
    rec: &Recording,
    opts: &crate::analysis::profile::ProfileOptions,
    what: &'static str,
) -> crate::analysis::profile::Profile {
    use std::io::IsTerminal;
    let total = rec.trailer().map(|t| t.samples).unwrap_or(0);
    let mut bar = output::progress::Progress::new(
        io::stderr().is_terminal(),
        env.progress_after,
        what,
        total,
    );
    let p = crate::analysis::replay::build(rec, opts, &mut |n| bar.update(n));
    bar.finish();
    p
}

/// The profile options with the worker count of the environment.
fn with_threads(
    o: &crate::analysis::profile::ProfileOptions,
    env: &Env,
) -> crate::analysis::profile::ProfileOptions {
    crate::analysis::profile::ProfileOptions {
        threads: env.threads,
        ..o.clone()
    }
}

fn annotate(
    env: &Env,
    cfg: &AnnotateConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, AppError> {
    use crate::analysis::annotate;
    // Kernel code is read from /proc/kcore: without it this machine's kernel symbols (tens of
    // milliseconds to read) are of no use here.
    let kcore = env.procfs_root.join("kcore");
    let kcore_readable = std::fs::File::open(&kcore).is_ok();
    let rec = open_recording_with(env, &cfg.input, kcore_readable, err)?;
    let popts = with_threads(&cfg.profile, env);
    let p = build_profile(env, &rec, &popts, "hrec annotate");
    read_warnings(&rec, err)?;
    let event = match &cfg.event {
        None => 0,
        Some(want) => p
            .events
            .iter()
            .position(|e| &e.name == want || crate::event::base_name(&e.name) == want)
            .ok_or_else(|| {
                let have: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
                AppError::Usage(format!(
                    "--event {want}: the recording has no such sampling event (it has: {})",
                    have.join(", ")
                ))
            })?,
    };
    let mut o = cfg.options.clone();
    o.event = event;
    o.symfs = popts.symfs.clone();
    o.search = popts.search.clone();
    o.kernel = kcore_readable
        .then(|| rec.kernel_symbols())
        .filter(|k| !k.is_empty())
        .map(|k| (k, kcore));
    o.build_ids =
        crate::symbol::symbolizer::parse_build_ids(&rec.side("build-ids").unwrap_or_default());
    let a = annotate::annotate(&p, &o);
    for problem in &a.problems {
        writeln!(err, "hrec: warning: {problem}")?;
    }
    let mut buf = io::BufWriter::new(out);
    if cfg.json {
        serde_json::to_writer_pretty(&mut buf, &output::annotate::json(&a))
            .map_err(io::Error::from)?;
        writeln!(buf)?;
    } else {
        let mut t = cfg.text;
        if let Some(e) = p.events.get(event) {
            t.samples = e.samples;
            t.period = e.period;
        }
        buf.write_all(output::annotate::text(&a, &t).as_bytes())?;
    }
    buf.flush()?;
    if a.symbols.is_empty() {
        return Err(AppError::Usage(format!(
            "nothing to annotate in {}{}",
            cfg.input.display(),
            if a.problems.is_empty() {
                ": no samples in functions hrec can read"
            } else {
                " (the warnings above say why)"
            }
        )));
    }
    Ok(0)
}

fn open_recording(env: &Env, input: &Path, err: &mut dyn Write) -> Result<Recording, AppError> {
    open_recording_with(env, input, true, err)
}

/// [`open_recording`]; `kernel_symbols: false` for a command that names no kernel function.
fn open_recording_with(
    env: &Env,
    input: &Path,
    kernel_symbols: bool,
    err: &mut dyn Write,
) -> Result<Recording, AppError> {
    let rec = Recording::open_with_kernel(input, env.threads, kernel_symbols)?;
    if let Some(why) = rec.truncated() {
        match &rec.source {
            Source::Hrec(_) => writeln!(
                err,
                "hrec: warning: {} is truncated ({why}): reading the {} complete blocks",
                input.display(),
                rec.block_count()
            )?,
            Source::PerfData(p) => writeln!(
                err,
                "hrec: warning: {} is cut short ({why}): reading its {} whole records",
                input.display(),
                p.trailer.records
            )?,
        }
    }
    if let Source::PerfData(p) = &rec.source {
        for w in &p.info.warnings {
            writeln!(err, "hrec: warning: {}: {w}", input.display())?;
        }
    }
    Ok(rec)
}

/// What reading the records met (unreadable blocks, records out of order), one warning line
/// each; called after the command's walk.
fn read_warnings(rec: &Recording, err: &mut dyn Write) -> Result<(), AppError> {
    for e in rec.errors() {
        writeln!(err, "hrec: warning: {e}")?;
    }
    Ok(())
}

fn report(
    env: &Env,
    cfg: &ReportConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, AppError> {
    use crate::analysis::{hist, replay};
    let rec = open_recording(env, &cfg.input, err)?;
    if cfg.header_only || (cfg.header && !cfg.json && !cfg.folded) {
        output::header_block(&rec, out)?;
        if cfg.header_only {
            return Ok(0);
        }
    }
    let meta = rec.meta();
    let total = rec.trailer().map(|t| t.samples).unwrap_or(0);
    let mut bar =
        output::progress::Progress::new(cfg.progress, env.progress_after, "hrec report", total);
    let p = replay::build(&rec, &with_threads(&cfg.profile, env), &mut |n| {
        bar.update(n)
    });
    bar.finish();
    read_warnings(&rec, err)?;
    // perf's defaults: with call chains, Children and call graphs are on.
    let mut hist_opts = cfg.hist.clone();
    hist_opts.children = cfg.children.unwrap_or(p.callchains);
    let mut style = cfg.style.clone();
    if cfg.call_graph_given || p.callchains {
        style.callgraph = Some(cfg.call_graph.clone());
    }
    if cfg.call_graph_given
        && !p.callchains
        && cfg.call_graph.mode != crate::analysis::callgraph::Mode::None
    {
        writeln!(
            err,
            "hrec: warning: -g: {} has no call chains (record with -g or --call-graph dwarf)",
            cfg.input.display()
        )?;
    }
    let tables = hist::tables(&p, &hist_opts);
    let mut header = vec![format!(
        "hrec report of {} ({} samples{}{})",
        cfg.input.display(),
        p.total_samples,
        rec.trailer()
            .map(|t| format!(", {} lost", t.lost_samples + t.lost_samples_read))
            .unwrap_or_default(),
        if rec.truncated().is_some() {
            ", TRUNCATED: the recording did not finish"
        } else {
            ""
        }
    )];
    if !meta.command_line.is_empty() {
        header.push(format!("cmdline: {}", meta.command_line.join(" ")));
    }
    if !meta.hostname.is_empty() {
        header.push(format!(
            "host: {} ({}, {}, kernel {})",
            meta.hostname, meta.cpu_model, meta.arch, meta.kernel_release
        ));
    }
    header.append(&mut style.header);
    style.header = header;
    if cfg.folded {
        // The events in turn, each as flamegraph --folded draws it (samples, filters applied).
        for ev in 0..p.events.len() {
            let flame = output::flame::FlameOptions {
                filters: cfg.hist.filters.clone(),
                ..Default::default()
            };
            match output::flame::fold(&p, ev, &flame) {
                Ok(f) => output::flame::write_folded(&f, out)?,
                Err(output::flame::FlameError::Empty(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
    } else if cfg.json {
        output::report::json(&p, &tables, &hist_opts, &style, out)?;
    } else if cfg.tui {
        report_tui(env, cfg, &rec, &p, hist_opts.clone(), style.clone())?;
    } else {
        output::report::text(&p, &tables, &hist_opts, &style, out)?;
        if cfg.thread_counts {
            writeln!(out)?;
            let t = crate::analysis::threads::thread_counts(&rec);
            output::report::thread_counts(&t, out)?;
        }
    }
    if let Some(path) = &cfg.retire_latency_json {
        let platform = [
            ("Model name", meta.cpu_model.clone()),
            ("Host", meta.hostname.clone()),
            ("Kernel", meta.kernel_release.clone()),
            (
                "Source",
                format!(
                    "hrec report --retire-latency-json of {}",
                    cfg.input.display()
                ),
            ),
        ];
        let mut buf = Vec::new();
        let n = output::report::retire_latency_json(&p, &tables, &platform, &mut buf)?;
        std::fs::write(path, buf)
            .map_err(|e| AppError::Usage(format!("cannot write {}: {e}", path.display())))?;
        if n == 0 {
            let why: Vec<String> = p
                .events
                .iter()
                .filter_map(|e| {
                    Some(format!(
                        "{}: {}",
                        e.name,
                        output::report::no_latency_reason(e)?
                    ))
                })
                .collect();
            writeln!(
                err,
                "hrec: warning: {} has no events with retire latencies ({})",
                path.display(),
                why.join("; ")
            )?;
        }
    }
    Ok(0)
}

fn diff(
    env: &Env,
    cfg: &DiffConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, AppError> {
    use crate::analysis::{diff, hist};
    // Both files open before either is read: a missing NEW fails at once.
    let old = open_recording(env, &cfg.old, err)?;
    let new = open_recording(env, &cfg.new, err)?;
    let opts = with_threads(&cfg.profile, env);
    let po = build_profile(env, &old, &opts, "hrec diff");
    read_warnings(&old, err)?;
    let pn = build_profile(env, &new, &opts, "hrec diff");
    read_warnings(&new, err)?;
    let to = hist::tables(&po, &cfg.hist);
    let tn = hist::tables(&pn, &cfg.hist);
    let tables = diff::diff(&po.events, &to, &pn.events, &tn, &cfg.diff);
    if cfg.json {
        let files = (cfg.old.to_string_lossy(), cfg.new.to_string_lossy());
        output::diff::json(
            &tables,
            &cfg.hist.sort,
            (&files.0, &files.1),
            &cfg.style,
            out,
        )?;
    } else {
        output::diff::text(&tables, &cfg.hist.sort, &cfg.style, out)?;
    }
    Ok(0)
}

/// Folded stacks of one recording for `hrec flamegraph`, with a notice on stderr when the
/// recording has several events and none was named.
fn fold_recording(
    env: &Env,
    path: &Path,
    cfg: &FlamegraphConfig,
    err: &mut dyn Write,
) -> Result<output::flame::Folded, AppError> {
    let rec = open_recording(env, path, err)?;
    let p = build_profile(
        env,
        &rec,
        &with_threads(&cfg.profile, env),
        "hrec flamegraph",
    );
    read_warnings(&rec, err)?;
    if p.events.is_empty() {
        return Err(AppError::Usage(format!(
            "{} has no sampling events",
            path.display()
        )));
    }
    let ev = output::flame::pick_event(&p, cfg.flame.event.as_deref())?;
    if cfg.flame.event.is_none() && p.events.len() > 1 {
        let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
        writeln!(
            err,
            "hrec: {} has {} events ({}); drawing {} (choose with --event)",
            path.display(),
            names.len(),
            names.join(", "),
            names[ev]
        )?;
    }
    Ok(output::flame::fold(&p, ev, &cfg.flame)?)
}

fn flamegraph(
    env: &Env,
    cfg: &FlamegraphConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, AppError> {
    let mut buf: Vec<u8> = Vec::new();
    if let [base, new] = cfg.diff.as_slice() {
        let a = fold_recording(env, base, cfg, err)?;
        let b = fold_recording(env, new, cfg, err)?;
        output::flame::diff_svg(&a, &b, &cfg.flame, &mut buf)?;
    } else {
        let f = fold_recording(env, &cfg.input, cfg, err)?;
        if cfg.folded {
            output::flame::write_folded(&f, &mut buf)?;
        } else {
            output::flame::svg(&f, &cfg.flame, None, &mut buf)?;
        }
    }
    if cfg.output.as_os_str() == "-" {
        out.write_all(&buf)?;
    } else {
        std::fs::write(&cfg.output, &buf).map_err(|source| AppError::Output {
            path: cfg.output.clone(),
            source,
        })?;
        if !cfg.folded {
            writeln!(err, "hrec: wrote {}", cfg.output.display())?;
        }
    }
    Ok(0)
}

fn export(
    env: &Env,
    cfg: &ExportConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, AppError> {
    use crate::analysis::replay;
    use crate::output::pprof;
    let rec = open_recording(env, &cfg.input, err)?;
    let p = build_profile(env, &rec, &with_threads(&cfg.profile, env), "hrec export");
    read_warnings(&rec, err)?;
    if p.events.is_empty() {
        return Err(AppError::Usage(format!(
            "{} has no sampling events",
            cfg.input.display()
        )));
    }
    let mut buf: Vec<u8> = Vec::new();
    let summary = match cfg.format {
        ExportFormat::Pprof => {
            let meta = pprof::PprofMeta::from_recording(&rec, &p);
            let pb = pprof::build(&p, &meta, &cfg.filters);
            pprof::write_gz(&pb, &mut buf)?;
            let kept: i64 = pb.sample.iter().map(|s| s.value[p.events.len()]).sum();
            if kept == 0 {
                writeln!(err, "hrec: warning: no samples to export (after filters)")?;
            }
            format!(
                "{kept} samples as {} pprof samples, {} locations, {} functions",
                pb.sample.len(),
                pb.location.len(),
                pb.function.len()
            )
        }
        ExportFormat::Firefox => {
            use crate::output::firefox;
            // A second replay streams every sample into the profile in time order, with the
            // ids of the first (the same replay gives the same ids), as `script` does.
            let meta = firefox::FirefoxMeta::from_recording(&rec, &p);
            let mut x = firefox::Exporter::new(&p, meta);
            let mut r =
                replay::Replay::new(&rec, &with_threads(&cfg.profile, env)).with_side_band();
            r.run(&rec, |item| match item {
                replay::Item::Sample(_, v) => {
                    if cfg.filters.keep_sample(&p, v.comm, v.pid, v.tid, v.leaf) {
                        x.add_sample(&v);
                    }
                }
                replay::Item::SideBand(record, _) => x.add_record(record),
                // Counted and reported by the first pass.
                replay::Item::Error(_) => {}
            });
            let (profile, s) = x.finish();
            firefox::write_gz(&profile, &mut buf)?;
            if s.samples == 0 {
                writeln!(err, "hrec: warning: no samples to export (after filters)")?;
            }
            if s.clamped > 0 {
                writeln!(
                    err,
                    "hrec: warning: {} samples had periods above 2^31-1, written as 2^31-1",
                    s.clamped
                )?;
            }
            format!(
                "{} samples in {} threads of {} processes, {} markers",
                s.samples, s.threads, s.processes, s.markers
            )
        }
    };
    if cfg.output.as_os_str() == "-" {
        out.write_all(&buf)?;
    } else {
        std::fs::write(&cfg.output, &buf).map_err(|source| AppError::Output {
            path: cfg.output.clone(),
            source,
        })?;
        writeln!(
            err,
            "hrec: wrote {} ({summary}; {} bytes)",
            cfg.output.display(),
            buf.len()
        )?;
    }
    Ok(0)
}

fn stat(
    env: &Env,
    cfg: &StatConfig,
    // perf stat prints on stderr (or -o, --log-fd): the command's stdout stays its own.
    _out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, AppError> {
    use crate::stat::{count, output as so, tma, tpebs};
    let pmus = Pmus::read(&env.sysfs_root)?;
    let mut options = cfg.options.clone();
    if options.target == count::StatTarget::AllCpus {
        options.target = count::StatTarget::Cpus(pmus.online.clone());
    }
    options.online = Some(pmus.online.clone());
    options.topology = count::cpu_topology(&env.sysfs_root, pmus.online.cpus());
    options.procfs_root = env.procfs_root.clone();
    // -M: the metrics' events are counted (alone, like perf stat -M, unless -e is given too).
    let setup = if cfg.metrics.is_empty() {
        None
    } else {
        let dir = tma::perfmon_dir(cfg.perfmon.as_deref());
        let cpuid = match &cfg.cpuid {
            Some(c) => c.clone(),
            None => tma::cpuid(&env.procfs_root)?,
        };
        let (perfmon, defaults) = tma::load(&dir, &cpuid)?;
        let setup = tma::setup(&perfmon, defaults, &pmus, &cfg.metrics)?;
        options.events.extend(setup.strings.iter().cloned());
        Some((perfmon, setup))
    };
    let from = cfg
        .tpebs_from
        .as_deref()
        .map(tpebs::from_file)
        .transpose()?;
    if let Some(f) = &from {
        for w in &f.warnings {
            writeln!(err, "hrec: warning: {w}")?;
        }
    }
    if cfg.record_tpebs
        && let Some((perfmon, setup)) = &setup
    {
        let workload = options.target == count::StatTarget::Workload;
        // HREC_TPEBS_STANDIN=cpu-clock samples the software clock instead (its retire
        // latencies are always 0): the tests' way to drive the sampling path without a PMU.
        let standin = std::env::var("HREC_TPEBS_STANDIN").ok();
        for ev in &setup.latencies {
            let attr = match standin.as_deref() {
                Some("cpu-clock") => {
                    let mut a = crate::event::Attr::new(crate::event::attr::types::SOFTWARE, 0);
                    a.sample_period_or_freq = 100_000;
                    tma::sampling_flags(&mut a, workload);
                    Ok(a)
                }
                _ => tma::tpebs_sampler(perfmon, &pmus, ev, workload),
            };
            match attr {
                Ok(attr) => options.tpebs.push(count::TpebsSampler {
                    event: ev.clone(),
                    attr,
                }),
                Err(why) => writeln!(err, "hrec: --record-tpebs: cannot sample {ev}: {why}")?,
            }
        }
    }
    let mut sink: Box<dyn Write> =
        match &cfg.output {
            StatOutput::Stderr => Box::new(&mut *err),
            StatOutput::File { path, append } => Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .write(true)
                    .append(*append)
                    .truncate(!*append)
                    .open(path)
                    .map_err(|e| {
                        AppError::Usage(format!(
                            "-o {}: cannot open it for writing: {e}",
                            path.display()
                        ))
                    })?,
            ),
            StatOutput::Fd(fd) => Box::new(crate::kernel::writer_of_fd(*fd).map_err(|e| {
                AppError::Usage(format!("--log-fd {fd}: not an open descriptor: {e}"))
            })?),
        };
    let mut io_err = None;
    let mut style = cfg.style.clone();
    // --big-num groups text counts as the locale does (perf's printf with the ' flag).
    if style.big_num && style.csv.is_none() && !style.json {
        style.numeric = crate::stat::numeric::Numeric::from_environment();
    }
    let aggr = options.aggr;
    let mut on_interval = |iv: &count::Interval<'_>| {
        let mut text = String::new();
        if !style.json && style.csv.is_none() && iv.index.is_multiple_of(25) {
            text.push_str(so::interval_header(aggr));
            text.push('\n');
        }
        text.push_str(&so::format_groups(
            iv.counters,
            iv.counts,
            iv.groups,
            aggr,
            iv.len,
            &style,
            Some(iv.at),
            None,
        ));
        if let Err(e) = sink.write_all(text.as_bytes()) {
            io_err.get_or_insert(e);
        }
    };
    // -r: the command counted again and again (until interrupted); the means are printed.
    let mut repeated = crate::stat::repeat::Repeated::new();
    let mut last = None;
    for _ in 0..cfg.repeat.max(1) {
        match count::run(&pmus, &options, &cfg.command, &mut on_interval) {
            Ok(r) => {
                repeated.add(&r);
                let stop = r.interrupted;
                last = Some(r);
                if stop {
                    break;
                }
            }
            Err(e) => {
                drop(sink);
                return Err(e.into());
            }
        }
    }
    if let Some(e) = io_err {
        return Err(e.into());
    }
    let Some(mut res) = last else {
        return Ok(0);
    };
    let runs = (cfg.repeat > 1).then(|| {
        res.counts = repeated.counts();
        res.groups = repeated.groups();
        res.elapsed = repeated.elapsed();
        so::Runs {
            runs: repeated.runs(),
            noise: repeated.noise(),
            elapsed_sd: repeated.elapsed_sd(),
        }
    });
    if let Some((_, setup)) = &setup {
        for c in &mut res.counters {
            if let Some(n) = tma::display_name(setup, c) {
                c.name = n;
            }
        }
    }
    // perf prints no summary after -I intervals (the last one is the end).
    let mut text = if cfg.options.interval_ms.is_some() {
        String::new()
    } else {
        so::report(
            &cfg.title,
            &res.counters,
            &res.counts,
            &res.groups,
            aggr,
            res.elapsed,
            (cfg.options.target == count::StatTarget::Workload && runs.is_none())
                .then_some(res.user_sys),
            &style,
            runs.as_ref(),
        )
    };
    if let Some((perfmon, setup)) = &setup {
        let defaults = setup
            .defaults_path
            .as_deref()
            .zip(perfmon.retire_latencies.as_ref());
        let (latencies, missing) = tpebs::resolve(
            &setup.latencies,
            cfg.tpebs_mode,
            cfg.record_tpebs.then_some(&res.tpebs),
            from.as_ref(),
            defaults,
        );
        let constants = tma::constants(&env.sysfs_root, res.elapsed.as_secs_f64());
        let values = tma::evaluate(
            setup,
            &res.counters,
            &res.counts,
            &|e| tpebs::latency_of(&latencies, e),
            &constants,
        );
        text.push_str(&so::metrics_block(
            &perfmon.metrics.path,
            &values,
            &latencies,
            &missing,
            &style,
        ));
    }
    sink.write_all(text.as_bytes())?;
    sink.flush()?;
    drop(sink);
    for n in &res.notes {
        writeln!(err, "hrec: {n}")?;
    }
    Ok(res.exit_code.map_or(0, |c| c.clamp(0, 255) as u8))
}

fn script(
    env: &Env,
    cfg: &ScriptConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, AppError> {
    let rec = open_recording(env, &cfg.input, err)?;
    let mut errors = Vec::new();
    let popts = crate::analysis::profile::ProfileOptions {
        threads: env.threads,
        ..cfg.profile.clone()
    };
    output::script::check_fields(&rec, &cfg.named_fields).map_err(AppError::Usage)?;
    let mut buf = io::BufWriter::new(out);
    if cfg.header {
        output::header_block(&rec, &mut buf)?;
    }
    output::script::script(
        &rec,
        &cfg.fields,
        &popts,
        &cfg.filters,
        cfg.layout,
        output::script::Sinks {
            out: &mut buf,
            errors: &mut errors,
            progress: Some(&mut output::progress::Progress::new(
                std::io::IsTerminal::is_terminal(&io::stderr()),
                env.progress_after,
                "hrec script",
                rec.trailer().map(|t| t.samples).unwrap_or(0),
            )),
        },
    )?;
    buf.flush()?;
    read_warnings(&rec, err)?;
    for e in &errors {
        writeln!(err, "hrec: warning: skipped a record: {e}")?;
    }
    Ok(0)
}

fn info(
    env: &Env,
    cfg: &InputConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, AppError> {
    let rec = open_recording(env, &cfg.input, err)?;
    output::info(&rec, out)?;
    Ok(0)
}

fn list(
    env: &Env,
    cfg: &ListConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, AppError> {
    use crate::listing::{self, Filter, PerfmonSource, Style};
    let pmus = Pmus::read(&env.sysfs_root)?;
    if cfg.pmus {
        return list_pmus(&pmus, cfg.json, out);
    }
    let filters: Vec<Filter> = cfg.filters.iter().map(|f| Filter::parse(f)).collect();
    let cpuid = match &cfg.cpuid {
        Some(c) => Some(c.clone()),
        None => crate::stat::tma::cpuid(&env.procfs_root).ok(),
    };
    let source = cpuid
        .filter(|_| filters.is_empty() || filters.iter().any(Filter::needs_perfmon))
        .map(|cpuid| PerfmonSource {
            dir: crate::stat::tma::perfmon_dir(cfg.perfmon.as_deref()),
            cpuid,
            explicit: cfg.perfmon.is_some(),
        });
    let cat = listing::catalogue(&pmus, source.as_ref(), cfg.deprecated)?;
    let notes = if cfg.json {
        listing::write_json(&cat, &filters, out)?
    } else {
        let style = Style {
            desc: cfg.desc,
            long_desc: cfg.long_desc,
            details: cfg.details,
            columns: cfg.columns,
        };
        listing::write_text(&cat, &filters, &style, out)?
    };
    for n in &notes {
        writeln!(err, "hrec: note: {n}")?;
    }
    if env.verbose > 0 {
        for n in &cat.notes {
            writeln!(err, "hrec: note: {n}")?;
        }
    }
    Ok(0)
}

/// `hrec list --pmus`: the PMUs of the snapshot with their TopDown level and aliases.
fn list_pmus(pmus: &Pmus, json: bool, out: &mut dyn Write) -> Result<u8, AppError> {
    if json {
        serde_json::to_writer_pretty(&mut *out, &pmus).map_err(io::Error::from)?;
        writeln!(out)?;
        return Ok(0);
    }
    writeln!(
        out,
        "PMUs in {}/bus/event_source/devices (online CPUs {}):",
        pmus.root.display(),
        pmus.online
    )?;
    writeln!(
        out,
        "  {:<24} {:>5}  {:<10} {:<5} {:<7} pmu_name",
        "name", "type", "cpus", "core", "topdown"
    )?;
    for p in &pmus.pmus {
        let cpus = p
            .cpus
            .as_ref()
            .or(p.cpumask.as_ref())
            .map_or("all".to_string(), |c| c.to_string());
        let td = match p.topdown {
            crate::pmu::TopDown::None => "-",
            crate::pmu::TopDown::L1 => "L1",
            crate::pmu::TopDown::L2 => "L2",
        };
        writeln!(
            out,
            "  {:<24} {:>5}  {:<10} {:<5} {:<7} {}",
            p.name,
            p.type_,
            cpus,
            if p.is_core() { "yes" } else { "no" },
            td,
            p.pmu_name().unwrap_or("-")
        )?;
    }
    let core = pmus.core_pmus();
    writeln!(out)?;
    if core.is_empty() {
        writeln!(out, "Hardware events: none (no core PMU on this machine)")?;
    } else {
        let on: Vec<&str> = core.iter().map(|p| p.name.as_str()).collect();
        writeln!(out, "Hardware events (on {}):", on.join(", "))?;
        for (name, id) in HARDWARE_EVENTS {
            writeln!(out, "  {name:<40} [hardware event {id}]")?;
        }
        writeln!(
            out,
            "  {:<40} [hardware cache event]",
            "<cache>-<op>-<result>, e.g. L1-dcache-load-misses"
        )?;
    }
    writeln!(out)?;
    writeln!(out, "Software events:")?;
    for (name, id) in SOFTWARE_EVENTS {
        writeln!(out, "  {name:<40} [software event {id}]")?;
    }
    for p in &pmus.pmus {
        if p.aliases.is_empty() {
            continue;
        }
        writeln!(out)?;
        writeln!(out, "{} events (use as {}/NAME/ or NAME):", p.name, p.name)?;
        for a in p.aliases.values() {
            let mut extra = String::new();
            if let Some(s) = a.scale {
                extra.push_str(&format!(" scale={s}"));
            }
            if let Some(u) = &a.unit {
                extra.push_str(&format!(" unit={u}"));
            }
            writeln!(out, "  {:<40} [{}]{extra}", a.name, a.text)?;
        }
    }
    Ok(0)
}
