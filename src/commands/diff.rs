//! `hrec diff`: two recordings compared per row, as perf diff (baseline share, delta,
//! ratio, wdiff), with TopDown and retire-latency changes where both files have them, and
//! with `--td-level N` / `--metrics LIST` the change of Intel's metrics per row.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use hrec::output;

use super::args::{FilterArgs, SymbolArgs, reading_options};
use super::reading::{build_profile, open_recording, read_warnings, with_threads};
use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec diff
          hrec.data.old against hrec.data, per shared object and function.
  hrec diff before.data after.data
          Two named recordings.
  hrec diff -c ratio --percent-limit 1 before.data after.data
          The ratio of the periods, without the rows under 1% in both.
  hrec diff --td-level 3 --perfmon perfmon before.data after.data
          Each TMA node's change per function (both recorded with --td-level 3).";

/// `hrec diff` flags (perf diff's names).
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The baseline [default: hrec.data.old, else perf.data.old when only that is here]; a
    /// single file given is NEW, compared with that default baseline, as in perf diff.
    pub old: Option<PathBuf>,
    /// The recording compared with it [default: hrec.data, or perf.data with perf.data.old].
    pub new: Option<PathBuf>,
    /// Sort keys: comm, pid, tid, dso, sym, srcline, ip, event, pmu, cpu, cgroup,
    /// cgroup_id, and of `record -d` recordings the memory keys (symbol_daddr, dso_daddr,
    /// dcacheline, mem, snoop, tlb, locked, blocked, local_weight, weight, data_page_size,
    /// local_ins_lat, phys_daddr, type, typeoff).
    #[arg(short = 's', long = "sort", default_value = "dso,sym")]
    pub sort: String,
    /// What to compute: delta, delta-abs (ordered by magnitude), ratio or wdiff:W1,W2.
    #[arg(short = 'c', long = "compute", default_value = "delta-abs")]
    pub compute: String,
    /// Hide rows below this share in both files.
    #[arg(long = "percent-limit", default_value_t = 0.0)]
    pub percent_limit: f64,
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
    #[command(flatten)]
    pub metric_args: super::metric_views::MetricArgs,
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
    /// The command's options; `Err` is a usage error.
    fn into_config(self) -> Result<DiffConfig, String> {
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
        let (mut profile, filters) = reading_options(
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
        // The memory keys read what the groups keep of each sample's access.
        profile.fold.mem = hist::mem_fold(&sort);
        let metrics = self.metric_args.options();
        profile.member_sums = metrics.is_some();
        let (old, new) = diff_inputs(self.old, self.new);
        Ok(DiffConfig {
            old,
            new,
            hist: hist::HistOptions {
                sort,
                filters,
                relative,
                // perf diff pairs the functions of the two recordings by name.
                sym_by_name: true,
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
            metrics,
            perfmon: self.metric_args.perfmon,
        })
    }
}

/// `hrec diff`.
#[derive(Debug, Clone)]
struct DiffConfig {
    /// The baseline recording.
    pub old: PathBuf,
    /// The recording compared with it.
    pub new: PathBuf,
    /// Aggregation of each file (sort keys, filters, `--percentage`).
    pub hist: hrec::analysis::hist::HistOptions,
    /// Symbol search and time range.
    pub profile: hrec::analysis::profile::ProfileOptions,
    /// What to compute and how to order.
    pub diff: hrec::analysis::diff::DiffOptions,
    /// Printing.
    pub style: output::diff::DiffStyle,
    /// `--json`.
    pub json: bool,
    /// `--td-level N` / `--metrics LIST`: Intel's metrics per row.
    pub metrics: Option<hrec::analysis::metrics::MetricOptions>,
    /// `--perfmon DIR`.
    pub perfmon: Option<PathBuf>,
}

/// One metric source's metrics of every row of a recording
/// ([`super::metric_views::metric_sources`]: Intel's files for the P-cores, hrec's tree for
/// each E-core PMU of a hybrid part).
struct SourceRows {
    /// The core PMU of the source's groups (`None`: the P-cores, or the only core type).
    pmu: Option<String>,
    /// The metrics per row key.
    rows: hrec::analysis::metrics::MetricRows,
    /// The profile events of the source's metric groups.
    events: Vec<usize>,
    /// The chosen metrics' names.
    names: Vec<String>,
}

/// Intel's metrics of every row of one recording, one [`SourceRows`] per metric source with
/// groups in it; `Err` is the one-line reason there are none (the reasons of the sources
/// without groups are dropped where another source has them, as `report` does).
fn row_metrics(
    rec: &hrec::recording::Recording,
    p: &hrec::analysis::profile::Profile,
    tables: &[hrec::analysis::hist::Table],
    o: &hrec::analysis::metrics::MetricOptions,
    dir: Option<&std::path::Path>,
) -> Result<Vec<SourceRows>, String> {
    let (sources, _) = super::metric_views::metric_sources(rec.meta(), dir)?;
    let (setups, errors) = super::metric_views::setups_of(&sources, rec.meta(), p, o);
    if setups.is_empty() {
        return Err(errors.join("; "));
    }
    Ok(setups
        .into_iter()
        .map(|(i, setup)| SourceRows {
            pmu: sources[i].pmu.clone(),
            rows: setup.rows(tables),
            events: setup.group_events(),
            names: setup.nodes().into_iter().map(|n| n.name).collect(),
        })
        .collect())
}

/// Runs `hrec diff` with its flags.
pub fn exec(
    args: DiffArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    run(env, &args.into_config().map_err(Error::Usage)?, out, err)
}

fn run(env: &Env, cfg: &DiffConfig, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8, Error> {
    use hrec::analysis::{diff, hist};
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
    let mut tables = diff::diff(&po.events, &to, &pn.events, &tn, &cfg.diff);
    if let Some(mo) = &cfg.metrics {
        let dir = cfg.perfmon.as_deref();
        match (
            row_metrics(&old, &po, &to, mo, dir),
            row_metrics(&new, &pn, &tn, mo, dir),
        ) {
            (Ok(a), Ok(b)) => {
                // `diff` makes one table per OLD table, in order; each takes the metrics of
                // its event's source (the P-cores' or an E-core PMU's), in both files.
                for (t, ot) in tables.iter_mut().zip(&to) {
                    let Some(sa) = a.iter().find(|s| s.events.contains(&ot.event)) else {
                        continue;
                    };
                    if let Some(sb) = b.iter().find(|s| s.pmu == sa.pmu) {
                        diff::add_metrics(t, &sa.names, &sa.rows, &sb.rows);
                    }
                }
            }
            (a, b) => {
                for (path, r) in [(&cfg.old, a.err()), (&cfg.new, b.err())] {
                    if let Some(why) = r {
                        writeln!(
                            err,
                            "hrec: warning: {}: no metrics per row: {why}",
                            path.display()
                        )?;
                    }
                }
            }
        }
    }
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
