//! `hrec flamegraph`: an SVG flame graph (or folded stacks) of one recording, or the
//! differential graph of two.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use hrec::output;

use super::args::{FilterArgs, SymbolArgs, input_file, reading_options};
use super::reading::{build_profile, open_recording, read_warnings, with_threads};
use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec flamegraph -o flame.svg
          The call chains of hrec.data as a flame graph.
  hrec flamegraph --color topdown -o topdown.svg
          Functions coloured by their dominant TopDown category.
  hrec flamegraph --color metric:tma_l3_bound --perfmon perfmon -o l3.svg
          Functions coloured by Intel's tma_l3_bound (record --td-level 3).
  hrec flamegraph --wall -o wall.svg
          On- and off-CPU time of a `record --off-cpu` recording.
  hrec flamegraph --diff before.data after.data -o diff.svg
          What changed from one recording to the other.";

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
    /// several). With --wall, the on-CPU event (default: the first clock).
    #[arg(long)]
    pub event: Option<String>,
    /// Frame width: samples, period (the event count), retire-latency (cycles) or
    /// load-latency (cycles: the memory samples' weight, `hrec mem record`)
    /// [default: samples; with --wall, period: nanoseconds].
    #[arg(long, value_parser = ["samples", "period", "retire-latency", "load-latency"])]
    pub weight: Option<String>,
    /// Wall-clock view (hot/cold): the on-CPU samples and the off-CPU time of a recording
    /// with switch records (record --off-cpu, or perf's --switch-events) in one graph, in
    /// nanoseconds; off-CPU stacks end in an [off-cpu] frame, functions coloured from warm
    /// (on the CPU) to blue (off it).
    #[arg(long)]
    pub wall: bool,
    /// Differential flame graph of two recordings: --diff BASE NEW.
    #[arg(long, num_args = 2, value_names = ["BASE", "NEW"])]
    pub diff: Vec<PathBuf>,
    /// Write collapsed stacks (`a;b;c COUNT`) instead of SVG.
    #[arg(long)]
    pub folded: bool,
    /// Colours: default, topdown (dominant TopDown L1 category per function) or metric:NAME
    /// (Intel's value of metric NAME per function, from the metric groups of
    /// `record --td-level N` / `record -M`; white 0 to red at Intel's threshold, grey below
    /// --metric-min-reads).
    #[arg(long = "color", alias = "colors", default_value = "default", value_parser = parse_color)]
    pub color: String,
    /// With --color metric:NAME: directory with Intel's perfmon files (mapfile.csv and the
    /// model folders); default $HREC_PERFMON_DIR, else ~/.cache/hrec/perfmon.
    #[arg(long, value_name = "DIR")]
    pub perfmon: Option<PathBuf>,
    /// With --color metric:NAME: the fewest reads of a group in a function before the
    /// metric gets a colour (grey below).
    #[arg(long = "metric-min-reads", value_name = "N", default_value_t = hrec::analysis::metrics::DEFAULT_MIN_READS)]
    pub metric_min_reads: u64,
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
    #[command(flatten)]
    pub filters: FilterArgs,
    #[command(flatten)]
    pub symbols: SymbolArgs,
}

/// `--color`: `default`, `topdown` or `metric:NAME`.
fn parse_color(s: &str) -> Result<String, String> {
    match s.split_once(':') {
        None if s == "default" || s == "topdown" => Ok(s.to_string()),
        Some(("metric", name)) if !name.trim().is_empty() => Ok(s.to_string()),
        Some(("metric", _)) => {
            Err("metric:NAME needs a metric name (e.g. metric:tma_l3_bound)".into())
        }
        _ => Err(format!("{s:?}: use default, topdown or metric:NAME")),
    }
}

impl FlamegraphArgs {
    /// The command's options; `Err` is a usage error.
    fn into_config(self) -> Result<FlamegraphConfig, String> {
        use hrec::output::flame::{Colors, FlameOptions, Weight};
        let default_out = if self.folded { "-" } else { "flamegraph.svg" };
        let (mut profile, filters) = reading_options(self.symbols, self.filters)?;
        if self.weight.as_deref() == Some("load-latency") {
            if self.flame_chart {
                return Err("--flame-chart draws samples, period or retire-latency in time order; --weight load-latency does not apply".to_string());
            }
            // Each sample's load latency (its weight, with the data source that makes it
            // one) is kept with its stack.
            use hrec::analysis::memkeys::{MemKey, fold};
            profile.fold.mem = fold(&[MemKey::LocalWeight, MemKey::Mem]);
        }
        if self.wall {
            if let Some(w) = self.weight.as_deref().filter(|&w| w != "period") {
                return Err(format!(
                    "--wall weighs by nanoseconds (the on-CPU time and the off-CPU time); --weight {w} does not apply"
                ));
            }
            if self.color != "default" {
                return Err(format!(
                    "--wall colours by time on and off the CPU; --color {} does not apply",
                    self.color
                ));
            }
        }
        // Folded stacks have no colours: the metric is not computed for them.
        let metric = self
            .color
            .strip_prefix("metric:")
            .map(|n| n.trim().to_string())
            .filter(|_| !self.folded);
        if metric.is_some() && !self.diff.is_empty() {
            return Err(format!(
                "--diff colours by the change between the recordings; --color {} does not apply",
                self.color
            ));
        }
        // Intel's metrics need every group read's member deltas.
        profile.member_sums = metric.is_some();
        Ok(FlamegraphConfig {
            input: input_file(self.input),
            output: self.output.unwrap_or_else(|| PathBuf::from(default_out)),
            folded: self.folded,
            diff: self.diff,
            profile: hrec::analysis::profile::ProfileOptions {
                timeline: self.flame_chart,
                names_only: true,
                ..profile
            },
            flame: FlameOptions {
                event: self.event,
                weight: match self.weight.as_deref().unwrap_or("samples") {
                    "period" => Weight::Period,
                    "retire-latency" => Weight::RetireLatency,
                    "load-latency" => Weight::LoadLatency,
                    _ => Weight::Samples,
                },
                colors: match self.color.as_str() {
                    "topdown" => Colors::TopDown,
                    _ if metric.is_some() => Colors::Metric,
                    _ => Colors::Default,
                },
                title: self.title,
                inverted: self.inverted,
                flame_chart: self.flame_chart,
                min_width: self.min_width,
                filters,
                // Set for the recording once it is read: how its on-CPU samples count.
                wall: None,
            },
            wall: self.wall,
            metric: metric.map(|name| MetricColoring {
                name,
                perfmon: self.perfmon,
                min_reads: self.metric_min_reads,
            }),
        })
    }
}

/// `hrec flamegraph`.
#[derive(Debug, Clone)]
struct FlamegraphConfig {
    /// `-i`.
    pub input: PathBuf,
    /// `-o` (`-` = stdout).
    pub output: PathBuf,
    /// `--folded`.
    pub folded: bool,
    /// `--diff BASE NEW` (empty when not given).
    pub diff: Vec<PathBuf>,
    /// Symbol search.
    pub profile: hrec::analysis::profile::ProfileOptions,
    /// Drawing.
    pub flame: output::flame::FlameOptions,
    /// `--wall`.
    pub wall: bool,
    /// `--color metric:NAME`.
    pub metric: Option<MetricColoring>,
}

/// `--color metric:NAME` and where Intel's files are.
#[derive(Debug, Clone)]
struct MetricColoring {
    /// The metric asked for.
    name: String,
    /// `--perfmon`.
    perfmon: Option<PathBuf>,
    /// `--metric-min-reads`.
    min_reads: u64,
}

/// Intel's metric per function of `p` for `--color metric:NAME`; `Err` when there is none
/// (the one-line reason).
fn metric_colors(
    rec: &hrec::recording::Recording,
    p: &hrec::analysis::profile::Profile,
    mc: &MetricColoring,
    flame: &output::flame::FlameOptions,
) -> Result<output::flame::MetricColors, output::flame::FlameError> {
    use hrec::analysis::metrics::{MetricOptions, RowMetricsSetup};
    let fail = |why: String| output::flame::FlameError::Metric {
        metric: mc.name.clone(),
        why,
    };
    let (sources, _) =
        super::metric_views::metric_sources(rec.meta(), mc.perfmon.as_deref()).map_err(fail)?;
    let o = MetricOptions {
        td_level: None,
        metrics: vec![mc.name.clone()],
        min_reads: mc.min_reads,
    };
    // The first source (the P-cores' before the E-cores') that has the metric and groups.
    let mut first_err = None;
    let mut setup = None;
    for s in &sources {
        match RowMetricsSetup::for_pmu(&s.perfmon, rec.meta(), p, &o, s.pmu.as_deref()) {
            Ok(x) => {
                setup = Some(x);
                break;
            }
            Err(e) => {
                first_err.get_or_insert(e.to_string());
            }
        }
    }
    let setup = setup.ok_or_else(|| fail(first_err.unwrap_or_default()))?;
    let nodes = setup.nodes();
    let [one] = nodes.as_slice() else {
        let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        return Err(fail(format!(
            "names {} metrics ({}); colour by one of them",
            names.len(),
            names.join(", ")
        )));
    };
    Ok(output::flame::metric_colors(p, &setup, &one.name, flame))
}

/// Folded stacks of one recording for `hrec flamegraph`, with a notice on stderr when the
/// recording has several events and none was named.
fn fold_recording(
    env: &Env,
    path: &Path,
    cfg: &FlamegraphConfig,
    err: &mut dyn Write,
) -> Result<output::flame::Folded, Error> {
    let rec = open_recording(env, path, err)?;
    let p = build_profile(
        env,
        &rec,
        &with_threads(&cfg.profile, env),
        "hrec flamegraph",
    );
    read_warnings(&rec, err)?;
    if p.events.is_empty() {
        return Err(Error::Usage(format!(
            "{} has no sampling events",
            path.display()
        )));
    }
    if cfg.wall {
        let how = output::on_cpu_time(rec.meta(), &p);
        let (ev, off) = output::flame::pick_wall_events(&p, cfg.flame.event.as_deref(), &how)?;
        let on = &p.events[ev].name;
        if cfg.flame.event.is_none() && p.events.len() > 2 {
            let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
            writeln!(
                err,
                "hrec: {} has {} events ({}); drawing {on} with {} (choose the on-CPU event with --event)",
                path.display(),
                names.len(),
                names.join(", "),
                p.events[off].name
            )?;
        }
        if let Some(note) = how[ev].note(on) {
            writeln!(err, "hrec: --wall: {note}")?;
        }
        let flame = output::flame::FlameOptions {
            wall: Some(how[ev].clone()),
            ..cfg.flame.clone()
        };
        return Ok(output::flame::fold(&p, ev, &flame)?);
    }
    let ev = output::flame::pick_event(&p, cfg.flame.event.as_deref())?;
    let colors = match &cfg.metric {
        Some(mc) => Some(metric_colors(&rec, &p, mc, &cfg.flame)?),
        None => None,
    };
    // Events of one name (the metric groups' cycles samplers) are drawn together.
    let drawn = output::flame::same_named(&p, ev);
    if drawn.len() > 1 {
        writeln!(
            err,
            "hrec: drawing the {} events named {} as one (a --td-level or -M recording has a sampler per metric group; each samples while its group is on the PMU)",
            drawn.len(),
            p.events[ev].name
        )?;
    }
    if cfg.flame.event.is_none() && p.events.len() > drawn.len() {
        let mut names: Vec<&str> = Vec::new();
        for e in &p.events {
            if !names.contains(&e.name.as_str()) {
                names.push(&e.name);
            }
        }
        writeln!(
            err,
            "hrec: {} has {} events ({}); drawing {} (choose with --event)",
            path.display(),
            names.len(),
            names.join(", "),
            p.events[ev].name
        )?;
    }
    let mut folded = output::flame::fold_events(&p, &drawn, &cfg.flame)?;
    folded.metric = colors;
    Ok(folded)
}

/// Runs `hrec flamegraph` with its flags.
pub fn exec(
    args: FlamegraphArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    run(env, &args.into_config().map_err(Error::Usage)?, out, err)
}

fn run(
    env: &Env,
    cfg: &FlamegraphConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
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
        std::fs::write(&cfg.output, &buf).map_err(|source| Error::Output {
            path: cfg.output.clone(),
            source,
        })?;
        if !cfg.folded {
            writeln!(err, "hrec: wrote {}", cfg.output.display())?;
        }
    }
    Ok(0)
}
