//! `hrec record`: sample a command (or CPUs, or processes) into a file. perf record's flags
//! and defaults; the plan is made by `event::plan` from the sysfs snapshot, the recording by
//! the `record` stage.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use hrec::event::plan::{self, CallGraph, DEFAULT_DWARF_STACK, Host, RecordOptions, Target};
use hrec::pmu::Pmus;
use hrec::record::{
    self,
    switch::{SwitchOutput, Trigger},
};

use super::args::{SamplingArgs, TargetArgs};
use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec record -g -- ./prog
          Sample ./prog's cycles with call chains (frame pointers) into
          hrec.data.
  hrec record -F 999 --call-graph dwarf -- ./prog
          999 samples a second; stacks unwound with DWARF (no frame pointers
          needed).
  hrec record -e instructions -c 100003 -- ./prog
          Sample every 100003rd instruction instead of cycles.
  hrec record -W -- ./prog
          Also record each sample's retire latency (sample weights).
  hrec record -a -g -o all.data -- sleep 10
          Every CPU for 10 seconds, into all.data.
  hrec record --dry-run -- true
          Print the perf_event_attr of each event and open nothing.";

/// `hrec record` flags.
#[derive(Debug, Args)]
pub struct RecordArgs {
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Record call chains (frame pointers).
    #[arg(short = 'g')]
    pub g: bool,
    /// Call chain mode: fp, or dwarf[,STACK_BYTES][,raw] (user stacks are unwound while
    /// recording; raw keeps the stack copies too, for unwinding them again later).
    #[arg(long = "call-graph", value_name = "fp|dwarf[,SIZE][,raw]", value_parser = parse_call_graph)]
    pub call_graph: Option<CallGraph>,
    /// Record sample weights (WEIGHT_STRUCT on x86: retire latency in bits 63:48).
    #[arg(short = 'W', long = "weight")]
    pub weight: bool,
    /// Output file.
    #[arg(short = 'o', long = "output", default_value = "hrec.data")]
    pub output: PathBuf,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Record each sample's data address and data source (PERF_SAMPLE_ADDR, DATA_SRC) and
    /// the data mappings (mmap_data), for `report --sort symbol_daddr,dso_daddr,mem,...`.
    #[arg(short = 'd', long = "data")]
    pub data: bool,
    /// Record the page size of each sample's data address (PERF_SAMPLE_DATA_PAGE_SIZE).
    #[arg(long = "data-page-size")]
    pub data_page_size: bool,
    /// Record the physical address of each sample's data address (PERF_SAMPLE_PHYS_ADDR).
    #[arg(long = "phys-data")]
    pub phys_data: bool,
    /// Off-CPU time: where the threads wait, beside where they run (an `offcpu-time` event
    /// whose period is each interval's nanoseconds, attributed to the stack the thread left
    /// the CPU with); `blocked` leaves out the time preempted threads waited for a CPU.
    #[arg(
        long = "off-cpu",
        value_name = "all|blocked",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "all",
        value_parser = ["all", "blocked"]
    )]
    pub off_cpu: Option<String>,
    /// With --off-cpu: off-CPU intervals at least this many milliseconds long are samples of
    /// their own, with their time; shorter ones are added up per thread and stack and
    /// written at the end of the file, so the file grows with the distinct stacks, not with
    /// the switches (perf's --off-cpu-thresh; default 1; 0 writes every interval).
    #[arg(long = "off-cpu-thresh", value_name = "MS", requires = "off_cpu", value_parser = parse_thresh)]
    pub off_cpu_thresh: Option<u64>,
    /// With --off-cpu: data pages of each ring buffer of the stacks threads leave the CPU with
    /// (power of two; default as -m, four times that with --call-graph dwarf).
    #[arg(
        long = "off-cpu-mmap-pages",
        value_name = "PAGES",
        requires = "off_cpu"
    )]
    pub off_cpu_mmap_pages: Option<u64>,
    /// One event per thread on any CPU instead of one per CPU.
    #[arg(long = "per-thread")]
    pub per_thread: bool,
    /// Do not follow child processes and threads.
    #[arg(short = 'i', long = "no-inherit")]
    pub no_inherit: bool,
    /// Per-thread counts of each event (the kernel reports every inherited thread's count
    /// when it exits); `hrec report -T` shows them.
    #[arg(short = 's', long = "stat")]
    pub stat: bool,
    /// Data pages per ring buffer (power of two).
    #[arg(short = 'm', long = "mmap-pages", value_name = "PAGES")]
    pub mmap_pages: Option<u64>,
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
    /// No summary line, notices or warnings: errors only.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
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
    /// Record the cgroup of each sample and the path of every cgroup (PERF_RECORD_CGROUP,
    /// Linux 5.7+), for `hrec report --sort cgroup`: which container ran what.
    #[arg(long = "all-cgroups")]
    pub all_cgroups: bool,
    /// Record the namespaces of each task (PERF_RECORD_NAMESPACES), for `hrec report --sort
    /// cgroup_id`: which cgroup namespace (container) each sample's thread was in.
    #[arg(long = "namespaces")]
    pub namespaces: bool,
    /// Do not store the build-ids of the binaries seen (a report then cannot tell that a
    /// binary was rebuilt since).
    #[arg(short = 'B', long = "no-buildid")]
    pub no_buildid: bool,
    /// Do not copy into the build-id cache the files that processes mapped from another mount
    /// namespace or root (a container, a chroot) or that changed on disk while they ran.
    #[arg(short = 'N', long = "no-buildid-cache")]
    pub no_buildid_cache: bool,
    /// perf's build-id cache to copy such files into (default $HREC_BUILDID_DIR, else
    /// $PERF_BUILDID_DIR, else perf's buildid.dir, else ~/.debug).
    #[arg(long = "buildid-dir", value_name = "DIR")]
    pub buildid_dir: Option<PathBuf>,
    /// TopDown per function down to level N (1 to the deepest level of Intel's TMA file for
    /// this CPU): every node's events, in sampling-read groups that fit the core's counters.
    #[arg(long = "td-level", value_name = "N")]
    pub td_level: Option<u32>,
    /// Per-function metrics or metric groups, as stat -M takes them (TopdownL3,
    /// tma_memory_bound_group, tma_l3_bound, IPC, tma_info_*): core events only.
    #[arg(short = 'M', long = "metrics", value_name = "LIST")]
    pub metrics: Vec<String>,
    /// Also sample the event Intel's file gives each TMA node to find its instructions with
    /// (LocateWith: MEM_LOAD_RETIRED.L3_HIT for tma_l3_bound), precise where it can be, so
    /// annotate --event EVENT shows the code behind the node.
    #[arg(long = "locate", value_name = "NODE,...")]
    pub locate: Vec<String>,
    /// Directory with Intel's perfmon files for --td-level and -M (mapfile.csv and the model
    /// folders); default $HREC_PERFMON_DIR, else ~/.cache/hrec/perfmon.
    #[arg(long = "perfmon", value_name = "DIR")]
    pub perfmon: Option<PathBuf>,
    /// Print the plan (perf_event_attr per event, perf -vv layout) and open nothing.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    /// With --dry-run: print the plan as JSON.
    #[arg(long, requires = "dry_run")]
    pub json: bool,
    /// Leave hrec's own hits out of the tracepoints of the last -e (adds the filter
    /// 'common_pid != PID', as perf's --exclude-perf).
    #[arg(long = "exclude-perf")]
    pub exclude_perf: bool,
    /// The command to record, after --; with -a, -C, -p or -t it only sets how long to
    /// record.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

impl RecordArgs {
    /// The recording's options; `Err` is a usage error.
    fn into_config(self) -> Result<RecordConfig, String> {
        let target = self.target.target(Target::Workload)?;
        let count = self.sampling.count()?;
        // As in perf: `-g` turns call graphs on (frame pointers unless said otherwise) and
        // `--call-graph MODE` picks the mode, so `-g --call-graph dwarf` records dwarf.
        let call_graph = self.call_graph.or(self.g.then_some(CallGraph::Fp));
        if let Some(p) = self.off_cpu_mmap_pages
            && (p == 0 || !p.is_power_of_two())
        {
            return Err(format!(
                "--off-cpu-mmap-pages {p}: the number of mmap data pages must be a power of two (e.g. 512)"
            ));
        }
        Ok(RecordConfig {
            options: RecordOptions {
                filters: {
                    let mut f = self.sampling.filters()?;
                    if self.exclude_perf {
                        let last = self.sampling.events.len().checked_sub(1).ok_or(
                            "--exclude-perf follows no -e: put it after the -e of the tracepoints it filters",
                        )?;
                        f.push((last, format!("common_pid != {}", std::process::id())));
                    }
                    f
                },
                events: self.sampling.events,
                freq: self.sampling.freq,
                count,
                weight: self.weight,
                call_graph,
                target,
                per_thread: self.per_thread,
                no_inherit: self.no_inherit,
                inherit_stat: self.stat,
                off_cpu: self.off_cpu.as_deref().map(|m| plan::OffCpu {
                    blocked_only: m == "blocked",
                    mmap_pages: self.off_cpu_mmap_pages.map(|p| p as usize),
                    thresh_ns: self
                        .off_cpu_thresh
                        .unwrap_or(plan::DEFAULT_OFF_CPU_THRESH_NS),
                }),
                all_cgroups: self.all_cgroups,
                namespaces: self.namespaces,
                no_buildid: self.no_buildid,
                data: self.data,
                data_page_size: self.data_page_size,
                phys_data: self.phys_data,
                sample_cpu: false,
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
            buildid_cache: if self.no_buildid_cache || self.no_buildid {
                None
            } else {
                hrec::symbol::buildid_cache::resolve_dir(self.buildid_dir.as_deref())
            },
            mem: None,
            metrics: plan::metric::MetricChoice {
                td_level: self.td_level,
                metrics: self.metrics,
            },
            locate: self.locate,
            perfmon: self.perfmon,
            switch_output: self.switch_output.map(|trigger| SwitchOutput {
                trigger,
                max_files: self
                    .switch_max_files
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            }),
        })
    }
}

/// `--off-cpu-thresh MS`: milliseconds (fractions allowed) into nanoseconds.
fn parse_thresh(s: &str) -> Result<u64, String> {
    let ms: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("expected milliseconds (e.g. 1 or 0.5), found {s:?}"))?;
    if !(0.0..=3.6e6).contains(&ms) {
        return Err(format!(
            "the threshold must be 0 to 3600000 milliseconds, found {s}"
        ));
    }
    Ok((ms * 1e6).round() as u64)
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

/// `hrec record`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RecordConfig {
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
    /// Where files mapped from another mount namespace or root are copied (`None`: `-N`).
    pub buildid_cache: Option<PathBuf>,
    /// `--switch-output` (with `--switch-max-files`).
    pub switch_output: Option<record::switch::SwitchOutput>,
    /// `mem record` / `c2c record`: the memory events instead of `-e`.
    pub mem: Option<plan::mem::MemOptions>,
    /// `--td-level` / `-M`.
    pub metrics: plan::metric::MetricChoice,
    /// `--locate NODE,...`.
    pub locate: Vec<String>,
    /// `--perfmon DIR`.
    pub perfmon: Option<PathBuf>,
}

/// `-m`: data pages per ring buffer, a power of two (record and top).
pub fn check_mmap_pages(pages: Option<u64>) -> Result<(), Error> {
    match pages {
        Some(m) if m == 0 || !m.is_power_of_two() => Err(Error::Usage(format!(
            "-m {m}: the number of mmap data pages must be a power of two (e.g. 128)"
        ))),
        _ => Ok(()),
    }
}

/// Runs `hrec record` with its flags.
pub fn exec(
    args: RecordArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    run(env, &args.into_config().map_err(Error::Usage)?, out, err)
}

/// Runs `hrec mem record` / `hrec c2c record`: record's flags with the memory events `mem`
/// chooses (`event::plan::mem`).
pub fn exec_mem(
    args: RecordArgs,
    mem: plan::mem::MemOptions,
    c2c: bool,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    let mut cfg = args.into_config().map_err(Error::Usage)?;
    cfg.mem = Some(mem);
    // perf c2c record: `-W -d --phys-data --sample-cpu` besides the events.
    if c2c {
        cfg.options.phys_data = true;
        cfg.options.sample_cpu = true;
    }
    run(env, &cfg, out, err)
}

fn run(
    env: &Env,
    cfg: &RecordConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    check_mmap_pages(cfg.mmap_pages)?;
    if cfg.options.target == plan::Target::Workload && cfg.command.is_empty() {
        return Err(Error::Usage(
            "nothing to record: give a command after --, or -a, -C, -p or -t".into(),
        ));
    }
    let pmus = Pmus::read(&env.sysfs_root)?;
    let host = Host::read(&env.procfs_root);
    let plan = match &cfg.mem {
        Some(_) if !cfg.metrics.is_empty() || !cfg.locate.is_empty() => {
            return Err(Error::Usage(
                "--td-level, -M and --locate are for record; mem and c2c record choose their own events"
                    .into(),
            ));
        }
        Some(mem) => plan::mem::plan_mem_record(&pmus, &host, &cfg.options, mem)?,
        None if !cfg.metrics.is_empty() || !cfg.locate.is_empty() => {
            let loaded = load_perfmon(env, cfg);
            let mut metrics = if cfg.metrics.is_empty() {
                // `--locate` alone: the default plan's groups (or the -e events) and the
                // samplers.
                let mut m = plan::metric::MetricPlan::default();
                if cfg.options.events.is_empty() {
                    let (defaults, notices) = plan::default_events(&pmus, &host);
                    m.default_groups = defaults;
                    m.notices = notices;
                }
                m
            } else {
                metric_plan(&loaded, cfg, &pmus, &host)?
            };
            plan::metric::plan_locate(
                &pmus,
                &host,
                loaded.as_ref().map_err(Clone::clone),
                &cfg.locate,
                &mut metrics,
            )
            .map_err(plan::PlanError::from)?;
            plan::plan_record_with(&pmus, &host, &cfg.options, Some(&metrics))?
        }
        None => plan::plan_record(&pmus, &host, &cfg.options)?,
    };
    for n in plan.notices.iter().filter(|_| !cfg.quiet) {
        writeln!(err, "hrec: {n}")?;
    }
    if let Some(m) = plan.metrics.as_ref().filter(|_| !cfg.quiet) {
        for w in multiplex_warnings(m) {
            writeln!(err, "hrec: warning: {w}")?;
        }
        // -vv: the groups as --dry-run shows them, before recording.
        if env.verbose >= 2 && !cfg.dry_run {
            write!(err, "{}", m.dump(&plan.events))?;
        }
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
        buildid_cache: cfg.buildid_cache.clone(),
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

/// Above this many metric groups on one core PMU, each gets too small a share of the time
/// to be worth it without a warning (the kernel rotates the groups: each counts, and its
/// cycles leader samples, about one n-th of the time).
const MANY_GROUPS: usize = 8;

/// One line per core PMU with more than [`MANY_GROUPS`] metric groups: the share of the
/// time each will get.
fn multiplex_warnings(m: &plan::metric::MetricPlan) -> Vec<String> {
    let mut per_pmu: Vec<(&str, usize)> = Vec::new();
    for g in &m.groups {
        match per_pmu.iter_mut().find(|(p, _)| *p == g.pmu) {
            Some((_, n)) => *n += 1,
            None => per_pmu.push((&g.pmu, 1)),
        }
    }
    per_pmu
        .into_iter()
        .filter(|&(_, n)| n > MANY_GROUPS)
        .map(|(pmu, n)| {
            format!(
                "{pmu}: {n} metric groups take turns on the PMU: each counts, and gets samples, about 1/{n} of the time ({:.0}%); fewer metrics (-M) or a lower --td-level give each more",
                100.0 / n as f64
            )
        })
        .collect()
}

/// The groups of `--td-level` / `-M`, from Intel's files for this CPU (found as `stat -M`
/// finds them).
fn metric_plan(
    loaded: &Result<hrec::metrics::perfmon::Perfmon, String>,
    cfg: &RecordConfig,
    pmus: &Pmus,
    host: &Host,
) -> Result<plan::metric::MetricPlan, Error> {
    Ok(plan::metric::plan_metrics(
        pmus,
        host,
        loaded.as_ref().map_err(Clone::clone),
        &cfg.metrics,
    )
    .map_err(plan::PlanError::from)?)
}

/// Intel's files for this CPU, found as `stat -M` finds them; `Err` is why not, in one line.
fn load_perfmon(env: &Env, cfg: &RecordConfig) -> Result<hrec::metrics::perfmon::Perfmon, String> {
    use hrec::stat::tma;
    let loaded = tma::cpuid(&env.procfs_root)
        .and_then(|id| tma::load(&tma::perfmon_dir(cfg.perfmon.as_deref()), &id).map(|(p, _)| p));
    loaded.map_err(|e| match std::error::Error::source(&e) {
        Some(s) => format!("{e}: {s}"),
        None => e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;
    use hrec::event::plan::Freq;

    fn record(args: &[&str]) -> Result<RecordConfig, String> {
        let mut v = vec!["hrec", "record"];
        v.extend_from_slice(args);
        let cli = super::super::Cli::try_parse_from(v).map_err(|e| e.to_string())?;
        match cli.command {
            super::super::Cmd::Record(r) => r.into_config(),
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
