//! `hrec stat`: count events (the default set, `-e`, `--topdown`, `-M` metrics with retire
//! latencies) for a command, CPUs or tasks, and print them as perf stat does, on stderr.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use hrec::event::plan::Target;
use hrec::pmu::Pmus;

use super::args::TargetArgs;
use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec stat -- ./prog
          Count cycles, instructions and perf stat's other defaults.
  hrec stat --topdown -- ./prog
          The TopDown breakdown: retiring, bad speculation, frontend, backend.
  hrec stat -M tma_frontend_bound -- ./prog
          One of Intel's TMA metrics (`hrec list metric` lists them).
  hrec stat -e cycles,instructions -a -I 1000 -- sleep 5
          Both events on every CPU, printed every second.
  hrec stat -r 5 -x, -- ./prog
          Five runs: each count's mean and spread, as CSV.";

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
    #[command(flatten)]
    pub target: TargetArgs,
    /// Print counts every MS milliseconds.
    #[arg(short = 'I', long = "interval-print", value_name = "MS")]
    pub interval: Option<u64>,
    /// Count the command N times; print the mean of each count and its spread (+- x.xx%).
    #[arg(
        short = 'r',
        long = "repeat",
        value_name = "N",
        allow_hyphen_values = true,
        value_parser = parse_repeat
    )]
    pub repeat: Option<u32>,
    /// CSV output with this separator.
    #[arg(short = 'x', long = "field-separator", value_name = "SEP")]
    pub sep: Option<String>,
    /// JSON lines output.
    #[arg(short = 'j', long)]
    pub json: bool,
    /// Write the counts to this file instead of stderr.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        conflicts_with = "log_fd"
    )]
    pub output: Option<PathBuf>,
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
    /// Add perf's cache events: -d L1 data and last-level cache, -dd also L1 instruction cache
    /// and TLBs, -ddd also L1 data prefetches.
    #[arg(short = 'd', long = "detailed", action = clap::ArgAction::Count)]
    pub detailed: u8,
    /// Null run: count no default events, only time the command.
    #[arg(short = 'n', long = "null")]
    pub null: bool,
    /// On a hybrid part, count only on this core type: core, atom or lowpower, or a core
    /// PMU's name (cpu_core, cpu_atom, cpu_lowpower). Applies to the default events, -e events
    /// written without a PMU, --topdown and -M.
    #[arg(long = "cputype", visible_alias = "unit", value_name = "TYPE")]
    pub cputype: Option<String>,
    /// TopDown level with --topdown: 1 or 2.
    #[arg(long = "td-level", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub td_level: u8,
    /// With -I: stop after this many intervals.
    #[arg(long = "interval-count", value_name = "N", requires = "interval")]
    pub interval_count: Option<u64>,
    /// With -o: add to the end of the file.
    #[arg(long, requires = "output")]
    pub append: bool,
    /// Write the counts to this open file descriptor instead of stderr.
    #[arg(long = "log-fd", value_name = "FD")]
    pub log_fd: Option<i32>,
    /// Print counts with the locale's thousands separators (the default).
    #[arg(short = 'B', long = "big-num", overrides_with = "no_big_num")]
    pub big_num: bool,
    /// Print counts as plain digits.
    #[arg(long = "no-big-num", overrides_with = "big_num")]
    pub no_big_num: bool,
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

/// `--cputype TYPE`: the core PMU it names on this machine. perf 6.1 takes `core` or `atom`
/// (`cpu_` + TYPE) and refuses it on a part with one core PMU, as hrec does; later perf also
/// takes the PMU's own name, and Arrow Lake-H's third type is `lowpower`.
fn core_pmu_of(value: &str, pmus: &Pmus) -> Result<String, String> {
    let core: Vec<&str> = pmus.core_pmus().iter().map(|p| p.name.as_str()).collect();
    let have = if core.is_empty() {
        "it has no core PMU at all: a VM or a non-x86 machine".to_string()
    } else {
        format!("its core PMUs: {}", core.join(", "))
    };
    let name = match value {
        "core" | "atom" | "lowpower" => format!("cpu_{value}"),
        v if v.starts_with("cpu") => v.to_string(),
        _ => {
            return Err(format!(
                "--cputype {value}: not a core type: give core, atom, lowpower or a core PMU's name ({have})"
            ));
        }
    };
    match (core.contains(&name.as_str()), core.len() > 1) {
        (true, true) => Ok(name),
        (true, false) => Err(format!(
            "--cputype {value}: this machine is not hybrid: its one core PMU, {name}, counts on every CPU (leave --cputype out)"
        )),
        (false, hybrid) => Err(format!(
            "--cputype {value}: this machine has no {name} PMU ({have}{})",
            if hybrid || core.is_empty() {
                ""
            } else {
                "; it is not hybrid"
            }
        )),
    }
}

impl StatArgs {
    /// The command's options; `Err` is a usage error. `pmus`: the machine, for `--cputype`.
    fn into_config(self, pmus: &Pmus) -> Result<StatConfig, String> {
        use hrec::stat::count::{Aggr, StatOptions, StatTarget};
        let cputype = self
            .cputype
            .as_deref()
            .map(|t| core_pmu_of(t, pmus))
            .transpose()?;
        let tpebs_mode: hrec::stat::tpebs::TpebsMode =
            self.tpebs_mode.parse().map_err(|e| format!("{e}"))?;
        if (self.record_tpebs || self.tpebs_from.is_some()) && self.metrics.is_empty() {
            return Err(
                "--record-tpebs and --tpebs-from feed retire latencies into metrics: give -M too"
                    .into(),
            );
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
        let (target, title) = match self.target.target(Target::Workload)? {
            Target::Pids(p) => {
                let t = format!("process id '{}'", join(&p));
                (StatTarget::Pids(p), t)
            }
            Target::Tids(t) => {
                let title = format!("thread id '{}'", join(&t));
                (StatTarget::Tids(t), title)
            }
            Target::Cpus(c) => {
                let t = format!("'CPU(s) {c}'");
                (StatTarget::Cpus(c), t)
            }
            Target::SystemWide => (StatTarget::AllCpus, "'system wide'".to_string()),
            Target::Workload => (
                StatTarget::Workload,
                format!("'{}'", self.command.join(" ")),
            ),
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
            (Some(path), _) => StatOutput::File {
                path,
                append: self.append,
            },
            (None, Some(fd)) => StatOutput::Fd(fd),
            (None, None) => StatOutput::Stderr,
        };
        Ok(StatConfig {
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
                cputype,
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

/// `hrec stat`.
#[derive(Debug, Clone)]
struct StatConfig {
    /// What to count.
    pub options: hrec::stat::count::StatOptions,
    /// How to print.
    pub style: hrec::stat::output::StatStyle,
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
    pub tpebs_mode: hrec::stat::tpebs::TpebsMode,
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

/// Runs `hrec stat` with its flags.
pub fn exec(
    args: StatArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    let pmus = Pmus::read(&env.sysfs_root)?;
    let cfg = args.into_config(&pmus).map_err(Error::Usage)?;
    run(env, &pmus, &cfg, out, err)
}

fn run(
    env: &Env,
    pmus: &Pmus,
    cfg: &StatConfig,
    // perf stat prints on stderr (or -o, --log-fd): the command's stdout stays its own.
    _out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    use hrec::stat::{count, output as so, tma, tpebs};
    let mut options = cfg.options.clone();
    if options.target == count::StatTarget::AllCpus {
        options.target = count::StatTarget::Cpus(pmus.online.clone());
    }
    options.online = Some(pmus.online.clone());
    options.topology = count::cpu_topology(&env.sysfs_root, pmus.online.cpus());
    options.procfs_root = env.procfs_root.clone();
    // The CPU (which E-core each PMU is) and the NMI watchdog (whether Gracemont has room for
    // TopDown level 2), read as record reads them.
    let host = hrec::event::Host::read(&env.procfs_root);
    options.cpu = host.cpu;
    options.nmi_watchdog = host.nmi_watchdog;
    // -M: the metrics' events are counted (alone, like perf stat -M, unless -e is given too).
    // Intel's files are an error only where a metric needs them (E-core TopDown does not).
    let setup = if cfg.metrics.is_empty() {
        None
    } else {
        let dir = tma::perfmon_dir(cfg.perfmon.as_deref());
        let loaded = match &cfg.cpuid {
            Some(c) => Ok(c.clone()),
            None => tma::cpuid(&env.procfs_root),
        }
        .and_then(|cpuid| tma::load(&dir, &cpuid));
        let scope = tma::Scope {
            cputype: options.cputype.as_deref(),
            cpu: options.cpu.as_ref(),
            nmi_watchdog: options.nmi_watchdog,
        };
        let setup = tma::setup(loaded, pmus, &cfg.metrics, scope)?;
        options.events.extend(setup.strings.iter().cloned());
        for n in &setup.notes {
            writeln!(err, "hrec: {n}")?;
        }
        Some(setup)
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
        && let Some(setup) = &setup
        && let Some(perfmon) = &setup.perfmon
    {
        let workload = options.target == count::StatTarget::Workload;
        // HREC_TPEBS_STANDIN=cpu-clock samples the software clock instead (its retire
        // latencies are always 0): the tests' way to drive the sampling path without a PMU.
        let standin = std::env::var("HREC_TPEBS_STANDIN").ok();
        for ev in &setup.latencies {
            let attr = match standin.as_deref() {
                Some("cpu-clock") => {
                    let mut a = hrec::event::Attr::new(hrec::event::attr::types::SOFTWARE, 0);
                    a.sample_period_or_freq = 100_000;
                    tma::sampling_flags(&mut a, workload);
                    Ok(a)
                }
                _ => tma::tpebs_sampler(perfmon, pmus, ev, workload),
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
    let mut sink: Box<dyn Write> = match &cfg.output {
        StatOutput::Stderr => Box::new(&mut *err),
        StatOutput::File { path, append } => Box::new(
            std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .append(*append)
                .truncate(!*append)
                .open(path)
                .map_err(|e| {
                    Error::Usage(format!(
                        "-o {}: cannot open it for writing: {e}",
                        path.display()
                    ))
                })?,
        ),
        StatOutput::Fd(fd) => Box::new(
            hrec::kernel::writer_of_fd(*fd)
                .map_err(|e| Error::Usage(format!("--log-fd {fd}: not an open descriptor: {e}")))?,
        ),
    };
    let mut io_err = None;
    let mut style = cfg.style.clone();
    // --big-num groups text counts as the locale does (perf's printf with the ' flag).
    if style.big_num && style.csv.is_none() && !style.json {
        style.numeric = hrec::stat::numeric::Numeric::from_environment();
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
    let mut repeated = hrec::stat::repeat::Repeated::new();
    let mut last = None;
    for _ in 0..cfg.repeat.max(1) {
        match count::run(pmus, &options, &cfg.command, &mut on_interval) {
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
    if let Some(setup) = &setup {
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
    if let Some(setup) = &setup
        && let Some(perfmon) = &setup.perfmon
    {
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
            setup.pmu.as_deref(),
            &values,
            &latencies,
            &missing,
            &style,
        ));
    }
    // E-core TopDown levels 1 and 2 (hrec's table), a block per E-core PMU.
    for m in setup.iter().flat_map(|s| &s.ecore) {
        let values = m.evaluate(&res.counters, &res.counts);
        text.push_str(&so::ecore_metrics_block(
            &m.pmu,
            m.hybrid,
            &m.source(),
            &values,
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
