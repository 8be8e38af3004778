//! `hrec top`: sample the whole machine (or `-p/-t/-C`) and show the hottest functions,
//! refreshed every `-d` seconds with perf top's decay.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use hrec::event::plan::{self, RecordOptions, Target};
use hrec::output;
use hrec::pmu::Pmus;
use hrec::record;
use hrec::recording::Recording;

use super::args::{SamplingArgs, TargetArgs};
use super::record::check_mmap_pages;
use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec top
          The hottest functions of every CPU, refreshed every 2 seconds.
  hrec top -p 1234 -s sym
          One process, per function.
  hrec top -e instructions -d 5
          Instructions instead of cycles, every 5 seconds.
  hrec top -n 3 --stdio
          Three refreshes as text, then stop.
  hrec top --metrics tma_l3_bound --perfmon perfmon
          Intel's tma_l3_bound per function (metric groups recorded live).";

/// `hrec top` flags (perf top's names; `-n` counts refreshes).
#[derive(Debug, Args)]
pub struct TopArgs {
    #[command(flatten)]
    pub sampling: SamplingArgs,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Row keys (perf top's default: dso,sym).
    #[arg(
        short = 's',
        long = "sort",
        value_name = "KEYS",
        default_value = "dso,sym"
    )]
    pub sort: String,
    /// Seconds between refreshes (decimals allowed).
    #[arg(short = 'd', long = "delay", value_name = "SECS", default_value = "2", value_parser = parse_delay)]
    pub delay: std::time::Duration,
    /// Rows shown [default: the terminal's height, else 50].
    #[arg(short = 'E', long = "entries", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub entries: Option<u64>,
    /// Each refresh shows only its own interval (no decayed history).
    #[arg(short = 'z', long = "zero")]
    pub zero: bool,
    /// Print each refresh as text after the last (no screen clearing).
    #[arg(long)]
    pub stdio: bool,
    /// Stop after N refreshes (for scripts and tests).
    #[arg(short = 'n', long = "refreshes", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub refreshes: Option<u64>,
    /// Data pages per ring buffer (power of two).
    #[arg(short = 'm', long = "mmap-pages", value_name = "PAGES")]
    pub mmap_pages: Option<u64>,
    /// A column per Intel metric (stat -M's names: tma_l3_bound, a few at most), from its
    /// metric groups recorded live as `record -M LIST` records them.
    #[arg(long = "metrics", value_name = "LIST")]
    pub metrics: Vec<String>,
    /// With --metrics: directory with Intel's perfmon files (mapfile.csv and the model
    /// folders); default $HREC_PERFMON_DIR, else ~/.cache/hrec/perfmon.
    #[arg(long, value_name = "DIR")]
    pub perfmon: Option<PathBuf>,
    /// With --metrics: the fewest (decayed) reads of a group in a row before a metric
    /// needing it gets a number (`-` below).
    #[arg(long = "metric-min-reads", value_name = "N", default_value_t = hrec::analysis::metrics::DEFAULT_MIN_READS)]
    pub metric_min_reads: u64,
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
    fn into_config(self) -> Result<TopConfig, String> {
        use std::io::IsTerminal;
        let target = self.target.target(Target::SystemWide)?;
        let count = self.sampling.count()?;
        let sort =
            hrec::analysis::hist::parse_sort(&self.sort).map_err(|e| format!("--sort: {e}"))?;
        if sort.is_empty() {
            return Err("--sort: give at least one key".into());
        }
        Ok(TopConfig {
            options: RecordOptions {
                filters: self.sampling.filters()?,
                events: self.sampling.events,
                freq: self.sampling.freq,
                count,
                weight: false,
                call_graph: None,
                target,
                per_thread: false,
                no_inherit: false,
                inherit_stat: false,
                off_cpu: None,
                all_cgroups: false,
                namespaces: false,
                no_buildid: false,
                data: false,
                data_page_size: false,
                phys_data: false,
                sample_cpu: false,
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
            metrics: (!self.metrics.is_empty()).then_some(hrec::analysis::metrics::MetricOptions {
                td_level: None,
                metrics: self.metrics,
                min_reads: self.metric_min_reads,
            }),
            perfmon: self.perfmon,
        })
    }
}

/// `hrec top`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TopConfig {
    /// What to sample (system-wide unless `-p`/`-t`/`-C`).
    pub options: RecordOptions,
    /// `-d`: seconds between refreshes.
    pub delay: std::time::Duration,
    /// `-n`: stop after this many refreshes.
    pub refreshes: Option<u64>,
    /// `-z`: each refresh shows only its interval (no decayed history).
    pub zero: bool,
    /// `-s`: the row keys (default `dso,sym`, perf top's).
    pub sort: Vec<hrec::analysis::hist::SortKey>,
    /// `-E`: rows shown (default: the terminal's height, else 50).
    pub entries: Option<usize>,
    /// `--stdio`, or stdout not a terminal: no clear-screen between refreshes.
    pub stdio: bool,
    /// `-m`.
    pub mmap_pages: Option<u64>,
    /// `--metrics LIST`: Intel's metrics per row.
    pub metrics: Option<hrec::analysis::metrics::MetricOptions>,
    /// `--perfmon DIR`.
    pub perfmon: Option<PathBuf>,
}

/// `hrec top`: the recorder runs on a thread with `--switch-output` every `-d` seconds into a
/// private directory; each finished file is read as it comes (symbolized by one symbolizer
/// for the whole run, so each binary is loaded once, with this machine's kernel symbols),
/// folded into perf top's decayed table ([`hrec::analysis::top`]), shown, and removed.
pub fn exec(
    args: TopArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    run(env, &args.into_config().map_err(Error::Usage)?, out, err)
}

fn run(env: &Env, cfg: &TopConfig, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8, Error> {
    use hrec::analysis::{hist, replay, top as live};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, mpsc};

    check_mmap_pages(cfg.mmap_pages)?;
    let pmus = Pmus::read(&env.sysfs_root)?;
    let host = hrec::event::Host::read(&env.procfs_root);
    // With --metrics, the metric groups `record -M` plans: from Intel's files for this CPU,
    // and hrec's E-core tree for E-cores (which needs no files).
    let plan = match &cfg.metrics {
        Some(mo) => {
            use hrec::stat::tma;
            let loaded = tma::cpuid(&env.procfs_root)
                .and_then(|id| tma::load(&tma::perfmon_dir(cfg.perfmon.as_deref()), &id))
                .map(|(p, _)| p)
                .map_err(|e| match std::error::Error::source(&e) {
                    Some(s) => format!("{e}: {s}"),
                    None => e.to_string(),
                });
            let choice = plan::metric::MetricChoice {
                td_level: None,
                metrics: mo.metrics.clone(),
            };
            let m = plan::metric::plan_metrics(
                &pmus,
                &host,
                loaded.as_ref().map_err(Clone::clone),
                &choice,
            )
            .map_err(plan::PlanError::from)?;
            plan::plan_record_with(&pmus, &host, &cfg.options, Some(&m))?
        }
        None => plan::plan_record(&pmus, &host, &cfg.options)?,
    };
    for n in &plan.notices {
        writeln!(err, "hrec: {n}")?;
    }
    let dir = PrivateDir::new("hrec-top")?;
    let kallsyms = std::fs::read_to_string(env.procfs_root.join("kallsyms")).unwrap_or_default();
    let symbolizer = hrec::symbol::symbolizer::Symbolizer::builder()
        .threads(1)
        .kernel(
            Arc::new(hrec::symbol::kallsyms::KernelSymbols::parse(&kallsyms)),
            hrec::symbol::Unresolved::NoKernelSymbols,
        )
        .vdso(hrec::kernel::own_vdso(&env.procfs_root).as_deref())
        .keep_binaries(true)
        // perf top names functions from symbol tables; source lines need DWARF.
        .dwarf(cfg.sort.contains(&hist::SortKey::Srcline))
        .build();
    let popts = hrec::analysis::profile::ProfileOptions {
        threads: 1,
        member_sums: cfg.metrics.is_some(),
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
            hrec::kernel::terminal_rows().map_or(50, |r| usize::from(r).saturating_sub(7).max(1))
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
                buildid_cache: None,
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
        // With --metrics: the recording's metric sources (Intel's files for the P-cores,
        // hrec's tree for each E-core PMU), found from the first file, and per source the
        // rows' decayed member sums of its groups.
        let sources: std::cell::OnceCell<Vec<super::metric_views::MetricSource>> =
            std::cell::OnceCell::new();
        let mut members: Vec<live::Live> = Vec::new();
        let mut shown = 0u64;
        let mut failure: Option<Error> = None;
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
                let step = (|| -> Result<(), Error> {
                    let mut iv = live::Interval::default();
                    let mut event = String::new();
                    let mut setups = Vec::new();
                    for path in &batch {
                        let rec = Recording::open_with_kernel(path, 1, false)?;
                        let p = replay::build_with(&rec, &popts, &mut |_| {}, Some(&symbolizer));
                        let trailer = rec.trailer().cloned().unwrap_or_default();
                        iv.merge(&live::interval_of(
                            &p,
                            trailer.lost_samples,
                            trailer.duration_ns as f64 / 1e9,
                        ));
                        let tables = hist::tables(&p, &hopts);
                        if let Some(t) = tables.first() {
                            table.add(t);
                        }
                        if let Some(mo) = &cfg.metrics {
                            if sources.get().is_none() {
                                let (s, _) = super::metric_views::metric_sources(
                                    rec.meta(),
                                    cfg.perfmon.as_deref(),
                                )
                                .map_err(|e| Error::Usage(format!("--metrics: {e}")))?;
                                members = s.iter().map(|_| live::Live::new()).collect();
                                let _ = sources.set(s);
                            }
                            setups = metric_setups(
                                sources.get().map_or(&[], Vec::as_slice),
                                &rec,
                                &p,
                                mo,
                            )?;
                            for (i, s) in &setups {
                                if let Some(m) = members.get_mut(*i) {
                                    m.add_member_tables(&tables, &s.group_events());
                                }
                            }
                        }
                        event = top_event(&rec);
                    }
                    let status = output::top::Status {
                        event,
                        target: target.clone(),
                    };
                    let cols = metric_columns(&setups, sources.get().map_or(&[], Vec::as_slice));
                    let values = |k: &[String]| -> Vec<Option<f64>> {
                        let per: Vec<_> = setups
                            .iter()
                            .map(|(i, s)| {
                                let m = members.get(*i).map(|m| m.metrics(k, s));
                                (*i, m.unwrap_or_default())
                            })
                            .collect();
                        cols.iter()
                            .map(|(src, name, _)| {
                                per.iter()
                                    .find(|(i, _)| i == src)
                                    .and_then(|(_, m)| m.iter().find(|(n, _)| n == name))
                                    .and_then(|(_, v)| *v)
                            })
                            .collect()
                    };
                    let columns = (!setups.is_empty()).then(|| output::top::MetricColumns {
                        names: cols.iter().map(|(_, _, h)| h.clone()).collect(),
                        values: &values,
                    });
                    let screen = output::top::screen_with_metrics(
                        &table,
                        &iv,
                        &status,
                        &cfg.sort,
                        entries,
                        columns.as_ref(),
                    );
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
                        for t in std::iter::once(&mut table).chain(members.iter_mut()) {
                            if zero {
                                t.zero();
                            } else {
                                t.decay();
                            }
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

/// The row metrics of each metric source of one interval's file that has groups in it, by the
/// source's index; `Err` when none has (the reasons, in one line).
fn metric_setups<'a>(
    sources: &'a [super::metric_views::MetricSource],
    rec: &Recording,
    p: &hrec::analysis::profile::Profile,
    o: &hrec::analysis::metrics::MetricOptions,
) -> Result<Vec<(usize, hrec::analysis::metrics::RowMetricsSetup<'a>)>, Error> {
    let (out, errors) = super::metric_views::setups_of(sources, rec.meta(), p, o);
    if out.is_empty() {
        return Err(Error::Usage(format!("--metrics: {}", errors.join("; "))));
    }
    Ok(out)
}

/// The metric columns of `top`: each source's chosen metrics, P-cores first, as (source
/// index, perf's name, header). A name more than one source has is a column per source,
/// an E-core PMU's headed `cpu_atom/NAME` (perf's `pmu/event/` naming); a name only one
/// has is headed by the name alone.
fn metric_columns(
    setups: &[(usize, hrec::analysis::metrics::RowMetricsSetup<'_>)],
    sources: &[super::metric_views::MetricSource],
) -> Vec<(usize, String, String)> {
    let names: Vec<(usize, Vec<String>)> = setups
        .iter()
        .map(|(i, s)| (*i, s.nodes().into_iter().map(|n| n.name).collect()))
        .collect();
    metric_headers(&names, &|i| sources.get(i).and_then(|s| s.pmu.clone()))
}

/// [`metric_columns`] on the names of each source (`pmu(i)`: source `i`'s E-core PMU).
fn metric_headers(
    names: &[(usize, Vec<String>)],
    pmu: &dyn Fn(usize) -> Option<String>,
) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    for (i, ns) in names {
        for n in ns {
            let shared = names.iter().filter(|(_, o)| o.contains(n)).count() > 1;
            let header = match pmu(*i) {
                Some(p) if shared => format!("{p}/{n}"),
                _ => n.clone(),
            };
            out.push((*i, n.clone(), header));
        }
    }
    out
}

/// `4000Hz cpu-clock` (or `100003 cpu-clock` with a fixed period): the first sampling event
/// of a recording as perf top's status line names it.
fn top_event(rec: &Recording) -> String {
    use hrec::event::attr::flag;
    let meta = rec.meta();
    let e = meta
        .events
        .iter()
        .find(|e| e.role == hrec::data::Role::Sampler)
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
    fn new(prefix: &str) -> Result<PrivateDir, Error> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        let mut last = None;
        for i in 0..100u32 {
            let path = base.join(format!("{prefix}.{}.{i}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(PrivateDir { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(source) => return Err(Error::Output { path, source }),
            }
        }
        Err(Error::Output {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metric_of_two_core_types_is_a_column_each() {
        let names = vec![
            (
                0,
                vec!["tma_backend_bound".to_string(), "tma_l3_bound".to_string()],
            ),
            (
                1,
                vec![
                    "tma_backend_bound".to_string(),
                    "tma_mem_scheduler".to_string(),
                ],
            ),
        ];
        let pmu = |i: usize| (i == 1).then(|| "cpu_atom".to_string());
        let cols = metric_headers(&names, &pmu);
        let got: Vec<(usize, &str, &str)> = cols
            .iter()
            .map(|(i, n, h)| (*i, n.as_str(), h.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (0, "tma_backend_bound", "tma_backend_bound"),
                (0, "tma_l3_bound", "tma_l3_bound"),
                (1, "tma_backend_bound", "cpu_atom/tma_backend_bound"),
                (1, "tma_mem_scheduler", "tma_mem_scheduler"),
            ]
        );
    }
}
