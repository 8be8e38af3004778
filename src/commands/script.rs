//! `hrec script`: every sample as perf script prints it (`-F` fields, call chains with
//! inline frames, side-band records on request), streamed in time order.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use hrec::output;

use super::args::{FilterArgs, SymbolArgs, input_file, reading_options};
use super::reading::{open_recording, read_warnings};
use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec script
          Every sample of hrec.data with its call chain.
  hrec script -F comm,tid,time,ip,sym -G
          Chosen fields, one line per sample.
  hrec script --time 10%-20% --comm prog
          The second tenth of the recording, prog's threads only.";

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
    /// One line per sample, without its call chain.
    #[arg(short = 'G', long = "hide-call-graph")]
    pub hide_call_graph: bool,
    /// Times to the nanosecond.
    #[arg(long)]
    pub ns: bool,
    #[command(flatten)]
    pub filters: FilterArgs,
    /// Print MMAP/MMAP2 records (mappings) where they occur, as perf does.
    #[arg(long = "show-mmap-events")]
    pub show_mmap_events: bool,
    /// Print COMM, FORK and EXIT records where they occur, as perf does.
    #[arg(long = "show-task-events")]
    pub show_task_events: bool,
    /// Print context-switch records (PERF_RECORD_SWITCH, SWITCH_CPU_WIDE: record --off-cpu,
    /// perf's --switch-events) where they occur, as perf does.
    #[arg(long = "show-switch-events")]
    pub show_switch_events: bool,
    /// The recording's header (as `hrec info` / perf's `--header`) before the samples.
    #[arg(long)]
    pub header: bool,
    /// Functions inlined at an address are frames of their own, innermost first: in unwound
    /// (dwarf) chains by default, as in perf; given, in frame-pointer chains too.
    #[arg(long, overrides_with = "no_inline")]
    pub inline: bool,
    /// Only the function itself at each address of a call chain.
    #[arg(long = "no-inline", overrides_with = "inline")]
    pub no_inline: bool,
    #[command(flatten)]
    pub symbols: SymbolArgs,
}

impl ScriptArgs {
    /// What to print and how; `Err` is a usage error.
    fn into_config(self) -> Result<ScriptConfig, String> {
        let (mut profile, filters) = reading_options(self.symbols, self.filters)?;
        let fields = match &self.fields {
            Some(f) => output::script::parse_fields(f)?,
            None => output::script::Field::DEFAULT.to_vec(),
        };
        // No source line printed: symbol tables are enough (inline entries of call chains
        // are the replay's to keep).
        profile.symbols_only = !fields.contains(&output::script::Field::Srcline);
        Ok(ScriptConfig {
            input: input_file(self.input),
            fields,
            named_fields: self
                .fields
                .as_deref()
                .map(output::script::named_fields)
                .unwrap_or_default(),
            unset_fields: self
                .fields
                .as_deref()
                .map(output::script::unset_fields)
                .unwrap_or_default(),
            profile,
            filters,
            layout: output::script::Layout {
                inline: match (self.inline, self.no_inline) {
                    (_, true) => output::script::Inline::Off,
                    (true, _) => output::script::Inline::All,
                    _ => output::script::Inline::Unwound,
                },
                ns: self.ns,
                hide_call_graph: self.hide_call_graph,
                show_mmap: self.show_mmap_events,
                show_task: self.show_task_events,
                show_switch: self.show_switch_events,
                default_fields: self.fields.is_none(),
            },
            header: self.header,
        })
    }
}

/// Runs `hrec script` with its flags.
pub fn exec(
    args: ScriptArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    run(env, &args.into_config().map_err(Error::Usage)?, out, err)
}

/// `hrec script`.
#[derive(Debug, Clone)]
struct ScriptConfig {
    /// `-i`.
    pub input: PathBuf,
    /// `-F` fields.
    pub fields: Vec<output::script::Field>,
    /// The fields `-F` names (printing them needs the samples to have them).
    pub named_fields: Vec<output::script::Field>,
    /// The fields `-F` takes away (`-sym`).
    pub unset_fields: Vec<output::script::Field>,
    /// `--symfs`, `--debug-dir`, `--time`.
    pub profile: hrec::analysis::profile::ProfileOptions,
    /// `--comm`, `--pid`, `--dso`, `--sym`.
    pub filters: hrec::analysis::hist::Filters,
    /// `--inline`, `--ns`, `-G`, `--show-mmap-events`, `--show-task-events`,
    /// `--show-switch-events`.
    pub layout: output::script::Layout,
    /// `--header`: the recording's header first.
    pub header: bool,
}

fn run(
    env: &Env,
    cfg: &ScriptConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    let rec = open_recording(env, &cfg.input, err)?;
    let mut errors = Vec::new();
    let popts = hrec::analysis::profile::ProfileOptions {
        threads: env.threads,
        ..cfg.profile.clone()
    };
    output::script::check_fields(&rec, &cfg.named_fields).map_err(Error::Usage)?;
    let fields = output::script::pipe_fields(&rec, &cfg.fields, &cfg.unset_fields, cfg.layout);
    let mut buf = io::BufWriter::new(out);
    if cfg.header {
        output::header_block(&rec, &mut buf)?;
    }
    output::script::script(
        &rec,
        &fields,
        &popts,
        &cfg.filters,
        // perf expands inline entries whatever -F says.
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
