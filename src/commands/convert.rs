//! `hrec convert`: a recording as perf.data (perf's `perf data convert` converts its own files
//! the other way), for perf, hotspot and every tool built on perf's files.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use hrec::output::perfdata::convert;

use super::args::input_file;
use super::reading::{open_recording, read_warnings};
use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec convert -o perf.data
          hrec.data as perf.data, for perf report, perf script and hotspot.
  hrec convert -i dwarf.hrec -o dwarf.perf.data
          Stacks unwound while recording become call chains perf shows.
  hrec convert --to json -o perf.json
          The JSON of `perf data convert --to-json`.";

/// `hrec convert` flags.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Input file [default: hrec.data, else perf.data when only that is here].
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
    /// Output file (`-`: stdout, perf.data in pipe mode).
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Output format: perf (perf.data in file mode, as perf record writes it), json (the
    /// JSON of `perf data convert --to-json`).
    #[arg(long = "to", value_parser = ["perf", "json"], default_value = "perf")]
    pub to: String,
    /// perf.data in pipe mode (`perf record -o -`'s stream: attrs and features as records
    /// before the samples), which perf reads from a pipe; `-o -` writes it to stdout.
    #[arg(long = "pipe")]
    pub pipe: bool,
    /// Overwrite the output file if it exists.
    #[arg(short = 'f', long = "force")]
    pub force: bool,
}

/// Runs `hrec convert`.
pub fn exec(
    args: ConvertArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    let input = input_file(args.input);
    let output = args.output;
    if args.pipe && args.to == "json" {
        return Err(Error::Usage(
            "--pipe is perf.data's pipe mode; --to json has none".into(),
        ));
    }
    let stdout = output.as_os_str() == "-";
    if stdout {
        let rec = open_recording(env, &input, err)?;
        if args.to == "json" {
            let captured = modified(&input);
            let opts = json_options(env);
            hrec::output::perfjson::write(&rec, &opts, captured, out)?;
            read_warnings(&rec, err)?;
            return Ok(0);
        }
        let c = convert::to_perf_pipe(&rec, out)?;
        return report(&rec, &input, "stdout", &c, err);
    }
    if output.exists() && !args.force {
        return Err(Error::Usage(format!(
            "{} exists; use --force to overwrite it",
            output.display()
        )));
    }
    if same_file(&input, &output) {
        return Err(Error::Usage(format!(
            "{} is the input; name another output file",
            output.display()
        )));
    }
    let rec = open_recording(env, &input, err)?;
    if args.to == "json" {
        return json(env, &rec, &input, &output, err);
    }
    // Written beside the output and renamed over it once whole: a failed conversion leaves
    // no partial file, and an older file with that name stays until then.
    let scratch = scratch_path(&output);
    let written = (|| {
        let f = std::fs::File::create(&scratch)?;
        let (f, c) = if args.pipe {
            let mut f = std::io::BufWriter::new(f);
            let c = convert::to_perf_pipe(&rec, &mut f)?;
            (f, c)
        } else {
            convert::to_perf_data(&rec, std::io::BufWriter::new(f))?
        };
        f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&scratch, &output)?;
        Ok(c)
    })();
    let c = match written {
        Ok(c) => c,
        Err(source) => {
            let _ = std::fs::remove_file(&scratch);
            return Err(Error::Output {
                path: output,
                source,
            });
        }
    };
    report(&rec, &input, &output.display().to_string(), &c, err)
}

/// The lines after a conversion to perf.data: what was left out, what was written.
fn report(
    rec: &hrec::recording::Recording,
    input: &Path,
    output: &str,
    c: &convert::Converted,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    read_warnings(rec, err)?;
    if c.undecodable > 0 {
        writeln!(
            err,
            "hrec: warning: {} records of {} did not decode and were left out",
            c.undecodable,
            input.display()
        )?;
    }
    if c.broken_chains > 0 {
        writeln!(
            err,
            "hrec: warning: {} call chains run through stack-table nodes {} lacks; they were written as far as they were found",
            c.broken_chains,
            input.display()
        )?;
    }
    if c.records == 0 {
        writeln!(
            err,
            "hrec: warning: {} has no record to convert; {output} holds none (perf reads it as an empty recording)",
            input.display(),
        )?;
    }
    if let Some(line) = c.left_out_line() {
        writeln!(err, "hrec: note: {line}")?;
    }
    let unwound = if c.unwound > 0 {
        format!(
            ", {} with the stacks unwound while recording as call chains",
            c.unwound
        )
    } else {
        String::new()
    };
    writeln!(
        err,
        "hrec: wrote {output} ({} records, {} samples{unwound})",
        c.records, c.samples
    )?;
    Ok(0)
}

/// `--to json`: written beside the output and renamed over it, as the perf.data is.
fn json(
    env: &Env,
    rec: &hrec::recording::Recording,
    input: &Path,
    output: &Path,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    let captured = modified(input);
    let opts = json_options(env);
    let scratch = scratch_path(output);
    let written = (|| {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&scratch)?);
        let n = hrec::output::perfjson::write(rec, &opts, captured, &mut f)?;
        f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&scratch, output)?;
        Ok(n)
    })();
    let n = written.map_err(|source| {
        let _ = std::fs::remove_file(&scratch);
        Error::Output {
            path: output.to_path_buf(),
            source,
        }
    })?;
    read_warnings(rec, err)?;
    writeln!(err, "hrec: wrote {} ({n} samples)", output.display())?;
    Ok(0)
}

/// When `path` was last written, seconds since the epoch (perf's `captured-on`).
fn modified(path: &Path) -> Option<i64> {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs() as i64)
}

/// How `--to json` reads: the chains as recorded, as perf's converter takes them (it unwinds
/// no stack copy).
fn json_options(env: &Env) -> hrec::analysis::profile::ProfileOptions {
    use hrec::analysis::profile::ProfileOptions;
    ProfileOptions {
        no_unwind: true,
        ..super::reading::with_threads(&ProfileOptions::default(), env)
    }
}

/// `.NAME.PID.new` beside `path`.
fn scratch_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.new", std::process::id()))
}

/// Whether the two paths name one existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
