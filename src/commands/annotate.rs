//! `hrec annotate`: the instructions and source lines of hot functions with their samples,
//! in perf annotate's layout (`docs/annotate.md` for the JSON).

use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use hrec::output;

use super::args::{FilterArgs, SymbolArgs, input_file, reading_options};
use super::reading::{build_profile, open_recording_with, read_warnings, with_threads};
use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec annotate
          Every function with samples, hottest first, with its instructions.
  hrec annotate main --no-source
          main's instructions alone, without source lines.
  hrec annotate -s main -M intel
          main in Intel syntax.
  hrec annotate --percent-limit 5
          Only the functions with at least 5% of the samples.
  hrec annotate --data-type
          The data types the sampled accesses hit (of `record -d`).
  hrec annotate chase --td-level 3
          chase's TopDown tree per basic block (of `record --td-level 3`): each
          block's bottleneck path, with Intel's formulas.";

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
    /// Only functions of this object (file name or path); with --data-type, the accesses of
    /// its code.
    #[arg(short = 'd', long = "dso", visible_alias = "dsos", value_name = "DSO")]
    pub dso: Option<String>,
    /// Text output (the default; accepted for perf's habit).
    #[arg(long)]
    pub stdio: bool,
    /// Sample counts instead of percentages.
    #[arg(short = 'n', long = "show-nr-samples")]
    pub show_nr_samples: bool,
    /// Without SYMBOL: only functions with at least this share of the samples.
    #[arg(long = "percent-limit", default_value_t = 0.0)]
    pub percent_limit: f64,
    /// Source lines above their instructions (the default).
    #[arg(long, overrides_with = "no_source")]
    pub source: bool,
    /// Instructions only.
    #[arg(long = "no-source")]
    pub no_source: bool,
    /// Disassembler style: att (default) or intel.
    #[arg(short = 'M', long = "disassembler-style", default_value = "att")]
    pub style: String,
    /// The instructions' bytes before their text.
    #[arg(long = "asm-raw")]
    pub asm_raw: bool,
    /// The sampling event (default: the first).
    #[arg(long = "event", value_name = "EVENT")]
    pub event: Option<String>,
    /// local-period (default), global-period, local-hits or global-hits.
    #[arg(long = "percent-type", default_value = "local-period")]
    pub percent_type: String,
    /// TopDown per basic block: level 1, or 2 for level 2 as well; 3 and deeper add Intel's
    /// TMA nodes of levels 1 to N per block (the bottleneck path), from the metric groups of
    /// `record --td-level N` (Intel's files from --perfmon).
    #[arg(long = "td-level", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=6))]
    pub td_level: u8,
    /// Intel's metrics per basic block (stat -M's names: tma_l3_bound, TopdownL3,
    /// tma_<node>_group, IPC), from the metric groups of `record -M` / `record --td-level N`.
    #[arg(long = "metrics", value_name = "LIST")]
    pub metrics: Vec<String>,
    /// Directory with Intel's perfmon files (mapfile.csv and the model folders); default
    /// $HREC_PERFMON_DIR, else ~/.cache/hrec/perfmon.
    #[arg(long, value_name = "DIR")]
    pub perfmon: Option<PathBuf>,
    /// The fewest reads of a group in a block before a metric needing that group gets a
    /// number.
    #[arg(long = "metric-min-reads", value_name = "N", default_value_t = hrec::analysis::metrics::DEFAULT_MIN_READS)]
    pub metric_min_reads: u64,
    /// The data types the sampled accesses hit, per member, instead of code (perf 6.8+'s
    /// `--data-type`; of `record -d` recordings): every type, or only TYPE (`struct ` may be
    /// left out).
    #[arg(long = "data-type", value_name = "TYPE", num_args = 0..=1, default_missing_value = "")]
    pub data_type: Option<String>,
    /// JSON output (`docs/annotate.md`).
    #[arg(long, conflicts_with = "stdio")]
    pub json: bool,
    #[command(flatten)]
    pub symbols_args: SymbolArgs,
}

impl AnnotateArgs {
    /// The annotation's options; `Err` is a usage error.
    fn into_config(self) -> Result<AnnotateConfig, String> {
        let syntax: hrec::disasm::Syntax = self.style.parse()?;
        let column: output::annotate::Column = if self.show_nr_samples {
            output::annotate::Column::Samples
        } else {
            self.percent_type.parse()?
        };
        let (mut profile, _) = reading_options(self.symbols_args, FilterArgs::default())?;
        let metrics = (self.td_level >= 3 || !self.metrics.is_empty()).then(|| {
            hrec::analysis::metrics::MetricOptions {
                td_level: (self.td_level >= 3).then_some(u32::from(self.td_level)),
                metrics: self.metrics.clone(),
                min_reads: self.metric_min_reads,
            }
        });
        // Each group read's deltas per member, for Intel's metrics per block.
        profile.member_sums = metrics.is_some() && self.data_type.is_none();
        // Which functions the samples fell in: symbol tables. The source lines of the
        // functions shown are read from their binaries after (`analysis::annotate`).
        // (Data types read the DWARF, of separate debug files too: not symbol tables only.)
        profile.symbols_only = self.data_type.is_none();
        if self.data_type.is_some() {
            use hrec::analysis::memkeys::{MemKey, fold};
            profile.fold.mem = fold(&[MemKey::TypeOff, MemKey::LocalWeight]);
        }
        let mut symbols = self.symbols;
        symbols.extend(self.symbol);
        Ok(AnnotateConfig {
            input: input_file(self.input),
            options: hrec::analysis::annotate::AnnotateOptions {
                symbols,
                dso: self.dso,
                percent_limit: self.percent_limit,
                syntax,
                source: !self.no_source,
                ..Default::default()
            },
            profile,
            event: self.event,
            text: output::annotate::TextOptions {
                column,
                asm_raw: self.asm_raw,
                td_level: self.td_level.min(2),
                ..Default::default()
            },
            json: self.json,
            data_type: self.data_type,
            metrics,
            perfmon: self.perfmon,
        })
    }
}

/// Runs `hrec annotate` with its flags.
pub fn exec(
    args: AnnotateArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    run(env, &args.into_config().map_err(Error::Usage)?, out, err)
}

/// `hrec annotate`.
#[derive(Debug, Clone)]
struct AnnotateConfig {
    /// `-i`.
    pub input: PathBuf,
    /// `--symfs`, `--debug-dir`, `--time`.
    pub profile: hrec::analysis::profile::ProfileOptions,
    /// Which functions, syntax, source lines.
    pub options: hrec::analysis::annotate::AnnotateOptions,
    /// `--event` (default: the first sampling event).
    pub event: Option<String>,
    /// `--percent-type` / `--show-nr-samples`, `--asm-raw`, `--td-level`.
    pub text: output::annotate::TextOptions,
    /// `--json`.
    pub json: bool,
    /// `--data-type[=TYPE]` (`Some("")`: every type).
    pub data_type: Option<String>,
    /// `--td-level N` (N ≥ 3) / `--metrics`: Intel's metrics per basic block.
    pub metrics: Option<hrec::analysis::metrics::MetricOptions>,
    /// `--perfmon DIR`.
    pub perfmon: Option<PathBuf>,
}

fn run(
    env: &Env,
    cfg: &AnnotateConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    use hrec::analysis::annotate;
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
            .position(|e| &e.name == want || hrec::event::base_name(&e.name) == want)
            .ok_or_else(|| {
                let have: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
                Error::Usage(format!(
                    "--event {want}: the recording has no such sampling event (it has: {})",
                    have.join(", ")
                ))
            })?,
    };
    if let Some(want) = &cfg.data_type {
        return data_types(&p, event, want, cfg, out);
    }
    let mut o = cfg.options.clone();
    o.event = event;
    o.symfs = popts.symfs.clone();
    o.search = popts.search.clone();
    o.kernel = kcore_readable
        .then(|| rec.kernel_symbols())
        .filter(|k| !k.is_empty())
        .map(|k| (k, kcore));
    o.build_ids =
        hrec::symbol::symbolizer::parse_build_ids(&rec.side("build-ids").unwrap_or_default());
    // Intel's metrics per block: the metric groups' samplers and Intel's files, or one line
    // saying why not (the TopDown per block as before).
    // The source of the annotated event's core: an E-core event's blocks get the E-core tree.
    let event_pmu = p.events.get(event).and_then(|e| e.pmu.clone());
    let source = match &cfg.metrics {
        None => None,
        Some(_) => match super::metric_views::source_for(
            rec.meta(),
            cfg.perfmon.as_deref(),
            event_pmu.as_deref(),
        ) {
            Ok(s) => Some(s),
            Err(why) => {
                no_metrics(err, cfg, &why)?;
                None
            }
        },
    };
    let setup = match (&cfg.metrics, &source) {
        (Some(mo), Some(s)) => {
            match hrec::analysis::metrics::RowMetricsSetup::for_pmu(
                &s.perfmon,
                rec.meta(),
                &p,
                mo,
                s.pmu.as_deref(),
            ) {
                Ok(s) => Some(s),
                Err(why) => {
                    no_metrics(err, cfg, &why.to_string())?;
                    None
                }
            }
        }
        _ => None,
    };
    let metric_events = setup
        .as_ref()
        .map(annotate::MetricEvents::of)
        .unwrap_or_default();
    let mut a = annotate::annotate_with(&p, &o, &metric_events);
    if let Some(s) = &setup {
        annotate::add_metrics(&mut a, s, &metric_events);
    }
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
        return Err(Error::Usage(format!(
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

/// The one line saying there are no metrics per block, and why.
fn no_metrics(err: &mut dyn Write, cfg: &AnnotateConfig, why: &str) -> Result<(), Error> {
    writeln!(
        err,
        "hrec: warning: {}: no metrics per block: {why}; TopDown levels 1 and 2 as before",
        cfg.input.display()
    )?;
    Ok(())
}

/// `annotate --data-type[=TYPE]`.
fn data_types(
    p: &hrec::analysis::profile::Profile,
    event: usize,
    want: &str,
    cfg: &AnnotateConfig,
    out: &mut dyn Write,
) -> Result<u8, Error> {
    use hrec::analysis::typeannotate::type_entries;
    use output::typeannotate::{Shown, json, text};
    let mut entries = type_entries(p, event, (!want.is_empty()).then_some(want));
    let typed = !entries.is_empty();
    if let Some(dso) = &cfg.options.dso {
        // Types of the accesses of this object's code, as perf's --dsos keeps them.
        entries.retain(|e| hrec::analysis::annotate::dso_matches(&e.dso, dso));
    }
    if entries.is_empty() {
        let why = if p.total_samples == 0 {
            "it has no samples"
        } else if p.data_locs.is_empty() {
            "its samples have no data addresses (record with -d, or hrec mem record)"
        } else if typed {
            "no typed access was sampled in the code of that --dso"
        } else if want.is_empty() {
            "no sampled access is typed (the DWARF of the sampled code and of the data it reads is needed: -g builds or debug files)"
        } else {
            "no sampled access is of that type"
        };
        return Err(Error::Usage(format!(
            "nothing to annotate by data type in {}: {why}",
            cfg.input.display()
        )));
    }
    let mut buf = io::BufWriter::new(out);
    if cfg.json {
        serde_json::to_writer_pretty(&mut buf, &json(&entries)).map_err(io::Error::from)?;
        writeln!(buf)?;
    } else {
        let shown = if cfg.text.column == output::annotate::Column::Samples {
            Shown::Samples
        } else {
            Shown::Percent
        };
        buf.write_all(text(&entries, shown).as_bytes())?;
    }
    buf.flush()?;
    Ok(0)
}
