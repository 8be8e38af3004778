//! `hrec export`: a recording for other tools: pprof's gzip-compressed `profile.proto`, or
//! the Firefox Profiler's processed-profile JSON.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::args::{FilterArgs, SymbolArgs, input_file, reading_options};
use super::reading::{build_profile, open_recording, read_warnings, with_threads};
use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec export --format pprof
          profile.pb.gz, for `go tool pprof -http=: profile.pb.gz`.
  hrec export --format firefox -o prog.json.gz
          For the Firefox Profiler (load it at profiler.firefox.com).
  hrec export --format pprof --time 0%-50% -i all.data
          The first half of all.data only.";

/// `hrec export` flags.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Output format: pprof (gzip-compressed profile.proto, for `go tool pprof` and others;
    /// off-CPU time as the column off_cpu in nanoseconds), firefox (gzip-compressed
    /// processed-profile JSON for the Firefox Profiler, as samply writes: a track per thread,
    /// samples on the timeline weighted by their period, off-CPU intervals on the thread's
    /// clock track with no CPU time, inline frames, lost-sample and throttling markers).
    #[arg(long, value_parser = ["pprof", "firefox"])]
    pub format: String,
    /// Input file [default: hrec.data, else perf.data when only that is here].
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
    /// Output file (`-` for stdout) [default: profile.pb.gz for pprof, profile.json.gz for
    /// firefox].
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub filters: FilterArgs,
    #[command(flatten)]
    pub symbols: SymbolArgs,
}

impl ExportArgs {
    /// The command's options; `Err` is a usage error.
    fn into_config(self) -> Result<ExportConfig, String> {
        let (profile, filters) = reading_options(self.symbols, self.filters)?;
        let format = match self.format.as_str() {
            "pprof" => ExportFormat::Pprof,
            "firefox" => ExportFormat::Firefox,
            other => return Err(format!("--format {other}: the formats are: pprof, firefox")),
        };
        let default_out = match format {
            ExportFormat::Pprof => "profile.pb.gz",
            ExportFormat::Firefox => "profile.json.gz",
        };
        Ok(ExportConfig {
            input: input_file(self.input),
            output: self.output.unwrap_or_else(|| PathBuf::from(default_out)),
            format,
            profile,
            filters,
        })
    }
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
struct ExportConfig {
    /// `-i`.
    pub input: PathBuf,
    /// `-o` (`-` = stdout).
    pub output: PathBuf,
    /// `--format`.
    pub format: ExportFormat,
    /// Symbol search and time range.
    pub profile: hrec::analysis::profile::ProfileOptions,
    /// `--comm`, `--pid`.
    pub filters: hrec::analysis::hist::Filters,
}

/// Runs `hrec export` with its flags.
pub fn exec(
    args: ExportArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    run(env, &args.into_config().map_err(Error::Usage)?, out, err)
}

fn run(
    env: &Env,
    cfg: &ExportConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    use hrec::analysis::replay;
    use hrec::output::pprof;
    let rec = open_recording(env, &cfg.input, err)?;
    let mut opts = with_threads(&cfg.profile, env);
    if cfg.format == ExportFormat::Pprof {
        opts.fold.mem = memory_labels(&rec);
    }
    let p = build_profile(env, &rec, &opts, "hrec export");
    read_warnings(&rec, err)?;
    if p.events.is_empty() {
        return Err(Error::Usage(format!(
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
            use hrec::output::firefox;
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
                // Counted and reported by the first pass; rows are not asked for.
                replay::Item::Error(_) | replay::Item::Rows(_) => {}
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
            let off = if s.off_cpu > 0 {
                format!(" ({} of them off-CPU intervals)", s.off_cpu)
            } else {
                String::new()
            };
            if s.off_cpu_aggregated > 0 {
                writeln!(
                    err,
                    "hrec: note: {} off-CPU samples each add up intervals shorter than --off-cpu-thresh, drawn as one span ending where the last of them ended (record with --off-cpu-thresh 0 to see each interval where it was)",
                    s.off_cpu_aggregated
                )?;
            }
            format!(
                "{} samples{off} in {} threads of {} processes, {} markers",
                s.samples, s.threads, s.processes, s.markers
            )
        }
    };
    if cfg.output.as_os_str() == "-" {
        out.write_all(&buf)?;
    } else {
        std::fs::write(&cfg.output, &buf).map_err(|source| Error::Output {
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

/// What of each sample's memory access the pprof export labels: for a memory event (data
/// source and weight in its samples: `hrec mem record`, `hrec c2c record`, perf's) the data
/// address, named and typed, the data source and the weight; for page faults with addresses
/// (`record -e page-faults -d`) the data address; nothing otherwise. (`--call-graph dwarf`
/// turns on ADDR and DATA_SRC too, as perf's does, with no address in a clock's samples: no
/// labels for those.)
fn memory_labels(rec: &hrec::recording::Recording) -> hrec::analysis::profile::MemFold {
    use hrec::analysis::memkeys::{MemKey, fold};
    use hrec::event::attr::{sample as st, types};
    let events = &rec.meta().events;
    let memory = events.iter().any(|e| {
        e.attr.sample_type & st::DATA_SRC != 0
            && e.attr.sample_type & (st::WEIGHT | st::WEIGHT_STRUCT) != 0
    });
    // PERF_COUNT_SW_PAGE_FAULTS, _MIN, _MAJ.
    let faults = events.iter().any(|e| {
        e.attr.type_ == types::SOFTWARE
            && matches!(e.attr.config, 2 | 5 | 6)
            && e.attr.sample_type & st::ADDR != 0
    });
    let mut keys = Vec::new();
    if memory || faults {
        keys.extend([MemKey::SymbolDaddr, MemKey::TypeOff]);
    }
    if memory {
        keys.extend([MemKey::Mem, MemKey::LocalWeight]);
    }
    fold(&keys)
}
