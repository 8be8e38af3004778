//! `hrec report`: where the samples landed, per perf report's sort keys, with TopDown and
//! retire-latency columns, call graphs, and on a terminal the interactive view.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use hrec::analysis::memkeys::MemKey;
use hrec::output;
use hrec::recording::Recording;

use super::args::{FilterArgs, SymbolArgs, input_file, reading_options};
use super::reading::{open_recording, read_warnings, with_threads};
use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec report --stdio
          The hottest functions of hrec.data, as text.
  hrec report -i all.data --sort comm,dso --stdio
          Per command and shared object instead of per function.
  hrec report --no-children --percent-limit 1 --stdio
          Self time only, without the rows under 1%.
  hrec report --sort sym,srcline --stdio
          Per function and source line.
  hrec report --comm prog --dso prog --stdio
          Only the samples of prog's own code.";

/// `hrec report` flags (perf report's names).
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Input file [default: hrec.data, else perf.data when only that is here].
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
    /// Print the text report even on a terminal (where the interactive view is the default).
    #[arg(long, conflicts_with = "tui")]
    pub stdio: bool,
    /// The interactive view (the default when stdin and stdout are terminals).
    #[arg(long)]
    pub tui: bool,
    /// Sort keys: comm, pid, tid, dso, sym, srcline, ip, event, pmu, cpu, cgroup,
    /// cgroup_id, and of `record -d` recordings symbol_daddr, dso_daddr, dcacheline, mem,
    /// snoop, tlb, locked, blocked, local_weight, weight, data_page_size, local_ins_lat,
    /// phys_daddr (`--phys-data`), and the data type an access hits, type and typeoff;
    /// of tracepoints their text, trace, and their fields, FIELD, EVENT.FIELD, EVENT.* or
    /// trace_fields [default: comm,dso,sym; trace when every event is a tracepoint].
    #[arg(short = 's', long = "sort")]
    pub sort: Option<String>,
    /// Output fields, perf's: overhead, overhead_children, sample, period, then sort keys (the
    /// keys listed here are the sort keys unless -s gives them).
    #[arg(short = 'F', long = "fields", value_name = "FIELDS")]
    pub fields: Option<String>,
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
    /// Credit every function on the call chain (Children column; the default when the
    /// recording has call chains, as in perf).
    #[arg(long, overrides_with = "no_children")]
    pub children: bool,
    /// Only the function at the top of the stack.
    #[arg(long = "no-children", overrides_with = "children")]
    pub no_children: bool,
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
    /// Rows only, without the `#` header and notes (perf's -q).
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Accepted for perf compatibility: the Samples column is always shown.
    #[arg(short = 'n', long = "show-nr-samples")]
    pub show_nr_samples: bool,
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
    /// perf's memory mode: each sample stands for its weight (a memory event's load latency,
    /// 1 without one) instead of its period [default sort: local_weight,mem,sym,dso,
    /// symbol_daddr,dso_daddr,snoop,tlb,locked,blocked,local_ins_lat].
    #[arg(long = "mem-mode")]
    pub mem_mode: bool,
    /// TopDown columns: 0 (none), 1 (level 1, default) or 2; 3 and deeper add Intel's TMA
    /// nodes of levels 1 to N per row, from the metric groups of `record --td-level N`
    /// (Intel's files from --perfmon).
    #[arg(long = "td-level", default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=6))]
    pub td_level: u8,
    /// Intel's metrics per row (stat -M's names: tma_l3_bound, TopdownL3, tma_<node>_group),
    /// from the metric groups of `record -M` / `record --td-level N`.
    #[arg(long = "metrics", value_name = "LIST")]
    pub metrics: Vec<String>,
    /// Directory with Intel's perfmon files (mapfile.csv and the model folders); default
    /// $HREC_PERFMON_DIR, else ~/.cache/hrec/perfmon.
    #[arg(long, value_name = "DIR")]
    pub perfmon: Option<PathBuf>,
    /// The fewest reads of a group in a row before a metric needing that group gets a
    /// number (`null` below).
    #[arg(long = "metric-min-reads", value_name = "N", default_value_t = hrec::analysis::metrics::DEFAULT_MIN_READS)]
    pub metric_min_reads: u64,
    /// Functions inlined at an address of an unwound (dwarf) chain are entries of their own
    /// (the default, as in perf).
    #[arg(long, overrides_with = "no_inline")]
    pub inline: bool,
    /// Only the function itself at each address of a call chain.
    #[arg(long = "no-inline", overrides_with = "inline")]
    pub no_inline: bool,
    /// Per-thread counts of each event after the report (recorded with `record -s`).
    #[arg(short = 'T', long = "threads")]
    pub show_threads: bool,
    /// The recording's header (host, command line, events, sample times: as `hrec info`)
    /// before the report.
    #[arg(long)]
    pub header: bool,
    /// Only the recording's header.
    #[arg(long = "header-only")]
    pub header_only: bool,
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
    #[command(flatten)]
    pub symbols: SymbolArgs,
    /// Also write per-event retire-latency statistics to FILE, in the schema of Intel's
    /// <model>_retire_latency.json (for `hrec stat --tpebs-from`).
    #[arg(long = "retire-latency-json", value_name = "FILE")]
    pub retire_latency_json: Option<PathBuf>,
}

impl ReportArgs {
    /// The command's options; `Err` is a usage error.
    fn into_config(self) -> Result<ReportConfig, String> {
        let rl_json = self.retire_latency_json.is_some();
        let terminal = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
        if self.tui && !terminal {
            return Err(
                "--tui needs a terminal on stdin and stdout; leave it out (or give --stdio) to print the report as text"
                    .into(),
            );
        }
        use hrec::analysis::hist;
        use hrec::analysis::profile::FoldKeys;
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
            (None, true) if self.mem_mode => {
                "local_weight,mem,sym,dso,symbol_daddr,dso_daddr,snoop,tlb,locked,blocked,local_ins_lat"
                    .to_string()
            }
            (None, true) => "comm,dso,sym".to_string(),
        };
        let (sort, field_specs) = hist::parse_sort_with_fields(&sort_spec)
            .map_err(|e| format!("{}: {e}", if self.sort.is_some() { "--sort" } else { "-F" }))?;
        if sort.is_empty() && self.fields.is_none() {
            return Err("--sort: give at least one key".into());
        }
        let (mut profile, mut filters) = reading_options(self.symbols, self.filters)?;
        profile.no_inline = self.no_inline;
        profile.mem_mode = self.mem_mode;
        let metrics = (self.td_level >= 3 || !self.metrics.is_empty()).then(|| {
            hrec::analysis::metrics::MetricOptions {
                td_level: (self.td_level >= 3).then_some(u32::from(self.td_level)),
                metrics: self.metrics.clone(),
                min_reads: self.metric_min_reads,
            }
        });
        profile.member_sums = metrics.is_some();
        // No source line shown: symbol tables are enough (the call graphs' inline frames are
        // the replay's to keep).
        // Source lines, and data types (the variables of a binary's debug file), need DWARF.
        profile.symbols_only = !sort.iter().any(|k| {
            matches!(
                k,
                hist::SortKey::Srcline | hist::SortKey::Memory(MemKey::Type | MemKey::TypeOff)
            )
        }) && !self.folded;
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
        let tui = self.tui
            || (!self.stdio
                && !self.json
                && !self.folded
                && !self.quiet
                && !self.header_only
                && !self.show_threads
                && !rl_json
                && terminal);
        let call_graph_given = self.call_graph.is_some() || self.inverted;
        let hist = hist::HistOptions {
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
            sym_by_name: false,
            trace_fields: Vec::new(),
        };
        // The groups keep apart what the tables read; call graphs, the interactive view
        // (which sorts and zooms anew) and collapsed stacks may read anything.
        profile.fold = if tui || call_graph_given || self.folded {
            FoldKeys {
                mem: hist::mem_fold(&hist.sort),
                trace: hist.sort.contains(&hist::SortKey::Trace),
                ..FoldKeys::ALL
            }
        } else {
            hist::fold_keys(&hist)
        };
        Ok(ReportConfig {
            input: input_file(self.input),
            hist,
            children: if self.children {
                Some(true)
            } else if self.no_children {
                Some(false)
            } else {
                None
            },
            call_graph,
            call_graph_given,
            profile,
            style: hrec::output::report::ReportStyle {
                td_level: self.td_level.min(2),
                percent_limit: self.percent_limit,
                quiet: self.quiet,
                fields: self.fields.is_some().then_some(columns),
                ..Default::default()
            },
            json: self.json,
            metrics,
            perfmon: self.perfmon,
            folded: self.folded,
            retire_latency_json: self.retire_latency_json,
            progress: std::io::stderr().is_terminal() && !self.json && !self.header_only,
            // perf report's default on a terminal; any output that is not the table, or a
            // redirected stdin or stdout, prints text.
            tui,
            header: self.header,
            header_only: self.header_only,
            thread_counts: self.show_threads,
            sort_defaulted: self.sort.is_none() && field_keys.is_empty() && !self.mem_mode,
            field_specs,
        })
    }
}

/// `hrec report`.
#[derive(Debug, Clone)]
struct ReportConfig {
    /// `-i`.
    pub input: PathBuf,
    /// Aggregation (sort keys, children, filters).
    pub hist: hrec::analysis::hist::HistOptions,
    /// `--children` / `--no-children`; `None`: children when the recording has call chains
    /// (perf's default).
    pub children: Option<bool>,
    /// `-g`, `-G`, `--max-stack`.
    pub call_graph: hrec::analysis::callgraph::CallGraphOptions,
    /// `-g` or `-G` was given: call graphs even where perf would not show them by default.
    pub call_graph_given: bool,
    /// Symbol search and time range.
    pub profile: hrec::analysis::profile::ProfileOptions,
    /// Printing.
    pub style: output::report::ReportStyle,
    /// `--json`.
    pub json: bool,
    /// `--td-level N` (N ≥ 3) / `--metrics`: Intel's metrics per row.
    pub metrics: Option<hrec::analysis::metrics::MetricOptions>,
    /// `--perfmon DIR`.
    pub perfmon: Option<PathBuf>,
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
    /// The sort keys are the default's (no `--sort`, no key in `-F`): a recording of
    /// tracepoints alone then sorts by `trace`, as perf's.
    pub sort_defaulted: bool,
    /// The sort keys that may name tracepoint fields, resolved once the recording is open
    /// ([`hrec::analysis::hist::parse_sort_with_fields`]).
    pub field_specs: Vec<String>,
}

impl ReportConfig {
    /// What the recording changes: perf's default sort of a recording whose events are all
    /// tracepoints, the text of their samples (`trace`) instead of `comm,dso,sym`; and the
    /// tracepoint fields the sort keys name, resolved against its events. `Err` is a usage
    /// error (a field no event has).
    fn for_recording(&self, meta: &hrec::data::Meta) -> Result<Option<ReportConfig>, String> {
        use hrec::analysis::hist::{self, SortKey};
        let tracepoints = !meta.events.is_empty()
            && meta
                .events
                .iter()
                .all(|e| e.attr.type_ == hrec::event::attr::types::TRACEPOINT);
        if self.sort_defaulted && tracepoints && self.style.fields.is_none() {
            let mut c = self.clone();
            c.hist.sort = vec![SortKey::Trace];
            c.profile.fold.trace = true;
            return Ok(Some(c));
        }
        if self.field_specs.is_empty() {
            return Ok(None);
        }
        let events: Vec<hist::TraceEventFields> = meta
            .events
            .iter()
            .map(|e| {
                let fields = e
                    .trace_format
                    .as_deref()
                    .and_then(|f| hrec::trace::EventFormat::parse(f).ok())
                    .map(|f| {
                        f.fields
                            .iter()
                            .filter(|f| !f.common)
                            .map(|f| (f.name.clone(), f.is_string(), f.size))
                            .collect()
                    });
                (e.name.clone(), fields)
            })
            .collect();
        let (sort, fields) =
            hist::resolve_trace_fields(&self.hist.sort, &self.field_specs, &events)?;
        let mut c = self.clone();
        c.hist.sort = sort;
        c.hist.trace_fields = fields;
        c.profile.fold.trace = true;
        c.profile.fold.trace_fields = true;
        Ok(Some(c))
    }
}

/// Intel's metrics per row ([`hrec::analysis::metrics`]), one report per metric source
/// (the P-cores' Intel file, each E-core PMU's tree); `Err` is the one-line reason there are
/// none.
fn row_metrics(
    rec: &hrec::recording::Recording,
    p: &hrec::analysis::profile::Profile,
    tables: &[hrec::analysis::hist::Table],
    o: &hrec::analysis::metrics::MetricOptions,
    dir: Option<&std::path::Path>,
) -> Result<hrec::analysis::metrics::MetricReports, String> {
    use hrec::analysis::metrics::{MetricReport, MetricReports};
    let meta = rec.meta();
    let (sources, mut notes) = super::metric_views::metric_sources(meta, dir)?;
    let mut out = MetricReports::default();
    let (setups, errors) = super::metric_views::setups_of(&sources, meta, p, o);
    for (i, mut setup) in setups {
        let s = &sources[i];
        let prefix = s.pmu.as_ref().map(|p| format!("{p}: ")).unwrap_or_default();
        setup.read_pmu_times(rec.trailer());
        out.reports.push(MetricReport {
            rows: setup.rows(tables),
            nodes: setup.nodes(),
            events: (0..p.events.len())
                .filter(|&e| setup.is_group_event(e))
                .collect(),
            notes: setup.notes.iter().map(|n| format!("{prefix}{n}")).collect(),
            min_reads: setup.min_reads(),
            pmu: s.pmu.clone(),
        });
    }
    if out.reports.is_empty() {
        return Err(errors.join("; "));
    }
    // A source without groups of its own on a recording where another has them: said.
    notes.extend(errors.into_iter().map(|e| format!("metrics: {e}")));
    if let Some(first) = out.reports.first_mut() {
        first.notes.extend(notes);
    }
    Ok(out)
}

/// The header line of a report given neither `--td-level 3` nor `--metrics` on a recording
/// made with `record --td-level N` (N ≥ 3) or `-M`: what its metric groups are for and the
/// options that show them. `None` for other recordings (and for levels 1 and 2 alone, which
/// the default report shows).
fn stored_choice_line(meta: &hrec::data::Meta) -> Option<String> {
    let c = meta.metric_choice.as_ref()?;
    let any_metric = c.metrics.iter().any(|m| !m.trim().is_empty());
    if !any_metric && c.td_level.is_none_or(|l| l < 3) {
        return None;
    }
    let args = c.report_args();
    Some(format!(
        "this recording has metric groups (recorded with {}): `hrec report {args}` shows Intel's metrics per row",
        args.replace("--metrics ", "-M ")
    ))
}

/// Runs `hrec report` with its flags.
pub fn exec(
    args: ReportArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    run(env, &args.into_config().map_err(Error::Usage)?, out, err)
}

fn run(
    env: &Env,
    cfg: &ReportConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    use hrec::analysis::{hist, replay};
    let rec = open_recording(env, &cfg.input, err)?;
    let for_rec = cfg.for_recording(rec.meta()).map_err(Error::Usage)?;
    let cfg = for_rec.as_ref().unwrap_or(cfg);
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
    for w in missing_memory_fields(&rec, &cfg.profile) {
        writeln!(err, "hrec: warning: {}{w}", cfg.input.display())?;
    }
    // perf's defaults: with call chains, Children and call graphs are on.
    let mut hist_opts = cfg.hist.clone();
    hist_opts.children = cfg.children.unwrap_or(p.callchains);
    let mut style = cfg.style.clone();
    if cfg.call_graph_given || p.callchains {
        style.callgraph = Some(cfg.call_graph.clone());
    }
    if cfg.call_graph_given
        && !p.callchains
        && cfg.call_graph.mode != hrec::analysis::callgraph::Mode::None
    {
        writeln!(
            err,
            "hrec: warning: -g: {} has no call chains (record with -g or --call-graph dwarf)",
            cfg.input.display()
        )?;
    }
    let tables = hist::tables(&p, &hist_opts);
    if let Some(mo) = &cfg.metrics {
        match row_metrics(&rec, &p, &tables, mo, cfg.perfmon.as_deref()) {
            Ok(reports) => {
                for r in &reports.reports {
                    style.header.extend(r.notes.iter().cloned());
                }
                style.metrics = Some(std::sync::Arc::new(reports));
            }
            Err(why) => writeln!(
                err,
                "hrec: warning: {}: no metrics per row: {why}; TopDown levels 1 and 2 as before",
                cfg.input.display()
            )?,
        }
    } else if let Some(line) = stored_choice_line(meta) {
        style.header.push(line);
    }
    let mut header = vec![format!(
        "hrec report of {} ({} samples{}{})",
        cfg.input.display(),
        p.total_samples,
        rec.trailer()
            .map(|t| {
                // On-CPU samples; the off-CPU rings' losses are said apart.
                let off = t.off_cpu_lost_samples + t.off_cpu_lost_samples_read;
                let mut l = format!(
                    ", {} lost",
                    (t.lost_samples + t.lost_samples_read).saturating_sub(off)
                );
                if off > 0 {
                    l.push_str(&format!(
                        ", {} off-CPU records lost",
                        t.off_cpu_lost_samples.max(t.off_cpu_lost_samples_read)
                    ));
                }
                if t.off_cpu_switches_lost_read > 0 {
                    l.push_str(&format!(
                        " ({} switch records: about {} intervals not recorded)",
                        t.off_cpu_switches_lost_read,
                        t.off_cpu_switches_lost_read.div_ceil(2)
                    ));
                }
                l
            })
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
            let t = hrec::analysis::threads::thread_counts(&rec);
            output::report::thread_counts(&t, out)?;
            if let Some(times) = hrec::analysis::threads::thread_times(&rec) {
                writeln!(out)?;
                output::report::thread_times(&times, out)?;
            }
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
            .map_err(|e| Error::Usage(format!("cannot write {}: {e}", path.display())))?;
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

/// `hrec report`'s interactive view of profile `p` of `rec`; `a` annotates with the options
/// `hrec annotate` would take for the same file.
fn report_tui(
    env: &Env,
    cfg: &ReportConfig,
    rec: &Recording,
    p: &hrec::analysis::profile::Profile,
    hist_opts: hrec::analysis::hist::HistOptions,
    style: output::report::ReportStyle,
) -> Result<(), Error> {
    use hrec::analysis::annotate;
    let kcore = env.procfs_root.join("kcore");
    let kernel = std::fs::File::open(&kcore)
        .is_ok()
        .then(|| rec.kernel_symbols())
        .filter(|k| !k.is_empty())
        .map(|k| (k, kcore));
    let build_ids =
        hrec::symbol::symbolizer::parse_build_ids(&rec.side("build-ids").unwrap_or_default());
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

/// What the memory keys (and memory mode) read that none of the recording's events sample:
/// one line for the data source and data address together, one for the physical address,
/// each saying what still works (each follows the file's name).
fn missing_memory_fields(
    rec: &Recording,
    opts: &hrec::analysis::profile::ProfileOptions,
) -> Vec<String> {
    use hrec::event::attr::sample as st;
    let has = |bit: u64| {
        rec.meta()
            .events
            .iter()
            .any(|e| e.attr.sample_type & bit != 0)
    };
    let mem = opts.fold.mem;
    let no_src = (mem.data_src || opts.mem_mode) && !has(st::DATA_SRC);
    let no_addr = mem.daddr && !has(st::ADDR);
    let mut w = Vec::new();
    match (no_src, no_addr) {
        (true, true) => w.push(format!(
            " has no memory samples (no data source or data address: record with `hrec mem record` or `record -d`): the data keys show N/A and [unknown]{}; the code keys (sym, dso, ...) still work",
            if opts.mem_mode && !has(st::WEIGHT | st::WEIGHT_STRUCT) {
                ", every sample weighs 1"
            } else {
                ""
            }
        )),
        (true, false) => w.push(
            "'s samples have no data source (PERF_SAMPLE_DATA_SRC: record with `hrec mem record` or `record -d`): mem, snoop, tlb, locked and blocked show N/A; the other keys still work"
                .into(),
        ),
        (false, true) => w.push(
            "'s samples have no data address (PERF_SAMPLE_ADDR: record with -d): symbol_daddr, dso_daddr and dcacheline show [unknown]; the other keys still work"
                .into(),
        ),
        (false, false) => {}
    }
    if mem.phys && !has(st::PHYS_ADDR) {
        w.push(
            "'s samples have no physical address (record with --phys-data): phys_daddr shows 0000000000000000 for every sample"
                .into(),
        );
    }
    w
}
