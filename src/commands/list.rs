//! `hrec list`: the events and metrics perf list shows (sysfs, tracefs, Intel's perfmon
//! files), or with `--pmus` hrec's PMU table.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use hrec::event::resolve::{HARDWARE_EVENTS, SOFTWARE_EVENTS};
use hrec::pmu::Pmus;

use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec list
          Every event and metric of this machine.
  hrec list hw sw
          Only the hardware and software events.
  hrec list mem_load --details
          The events matching *mem_load*, with their encodings.
  hrec list --pmus
          The PMUs with their CPUs and TopDown levels.";

/// `hrec list` flags.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// What to list: hw, sw, cache, pmu, tracepoint, metric, metricgroup, or a glob matched
    /// as *GLOB* against event names ('cache-*', mem_load); subsys:event for tracepoints.
    #[arg(value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Print each event's encoding and each metric's formula.
    #[arg(long)]
    pub details: bool,
    /// Print Intel's longer descriptions (perf's -v; hrec's -v is --verbose).
    #[arg(long = "long-desc")]
    pub long_desc: bool,
    /// Leave the descriptions out.
    #[arg(long = "no-desc")]
    pub no_desc: bool,
    /// Print descriptions (the default; perf's -d).
    #[arg(short = 'd', long = "desc", overrides_with = "no_desc")]
    pub desc: bool,
    /// JSON output: an array with one object per event or metric.
    #[arg(short = 'j', long)]
    pub json: bool,
    /// hrec's PMU table (type, CPUs, core, TopDown level, aliases) instead of the events.
    #[arg(long)]
    pub pmus: bool,
    /// List deprecated events too.
    #[arg(long)]
    pub deprecated: bool,
    /// Directory with Intel's perfmon files (mapfile.csv and the model folders); default
    /// $HREC_PERFMON_DIR, else ~/.cache/hrec/perfmon.
    #[arg(long, value_name = "DIR")]
    pub perfmon: Option<PathBuf>,
    /// The CPU to pick event and metric files for, as mapfile.csv spells it (default: this
    /// CPU).
    #[arg(long, value_name = "CPUID", hide = true)]
    pub cpuid: Option<String>,
    /// Only the names, each followed by a space, on one line (perf's; for shell
    /// completions).
    #[arg(long = "raw-dump", conflicts_with_all = ["json", "pmus"])]
    pub raw_dump: bool,
}

impl ListArgs {
    /// What to list and how.
    fn into_config(self) -> ListConfig {
        // perf wraps descriptions at $COLUMNS, else 78 (80 less 2) when not paging.
        let columns = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse().ok())
            .unwrap_or(78);
        ListConfig {
            filters: self.filters,
            json: self.json,
            raw_dump: self.raw_dump,
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

/// `hrec list`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct ListConfig {
    /// The filters: perf's classes (`hw`, `sw`, `cache`, `pmu`, `tracepoint`, `metric`,
    /// `metricgroup`) or globs; empty lists everything.
    pub filters: Vec<String>,
    /// `--json`.
    pub json: bool,
    /// `--raw-dump`: the names alone, for completions.
    pub raw_dump: bool,
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

/// Runs `hrec list` with its flags.
pub fn exec(
    args: ListArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    run(env, &args.into_config(), out, err)
}

fn run(env: &Env, cfg: &ListConfig, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8, Error> {
    use hrec::listing::{self, Filter, PerfmonSource, Style};
    let pmus = Pmus::read(&env.sysfs_root)?;
    if cfg.pmus {
        return list_pmus(&pmus, cfg.json, out);
    }
    let filters: Vec<Filter> = cfg.filters.iter().map(|f| Filter::parse(f)).collect();
    let cpuid = match &cfg.cpuid {
        Some(c) => Some(c.clone()),
        None => hrec::stat::tma::cpuid(&env.procfs_root).ok(),
    };
    let source = cpuid
        .filter(|_| filters.is_empty() || filters.iter().any(Filter::needs_perfmon))
        .map(|cpuid| PerfmonSource {
            dir: hrec::stat::tma::perfmon_dir(cfg.perfmon.as_deref()),
            cpuid,
            explicit: cfg.perfmon.is_some(),
        });
    let cat = listing::catalogue(&pmus, source.as_ref(), cfg.deprecated)?;
    let notes = if cfg.raw_dump {
        listing::write_raw_dump(&cat, &filters, out)?
    } else if cfg.json {
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
fn list_pmus(pmus: &Pmus, json: bool, out: &mut dyn Write) -> Result<u8, Error> {
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
            hrec::pmu::TopDown::None => "-",
            hrec::pmu::TopDown::L1 => "L1",
            hrec::pmu::TopDown::L2 => "L2",
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
