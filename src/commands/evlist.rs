//! `hrec evlist`: a recording's events as perf evlist lists them (`-v` their attrs, `-g`
//! groups, `-F` frequencies or periods).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use hrec::output;

use super::args::input_file;
use super::reading::open_recording;
use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec evlist
          The events of hrec.data, one per line.
  hrec evlist -g -F
          With their groups and sampling frequencies or periods.
  hrec evlist -v -i perf.data
          Every event's perf_event_attr, of a perf recording.";

/// `hrec evlist` flags (perf evlist's; `-v` is the global verbose flag, as in perf).
#[derive(Debug, Args)]
pub struct EvlistArgs {
    /// Input file [default: hrec.data, else perf.data when only that is here].
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
    /// Groups as {leader,member,...}.
    #[arg(short = 'g', long = "group")]
    pub group: bool,
    /// The sampling frequency or period of each event.
    #[arg(short = 'F', long = "freq")]
    pub freq: bool,
}

/// Runs `hrec evlist` with its flags (`-v` is the global verbose flag).
pub fn exec(
    args: EvlistArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    let rec = open_recording(env, &input_file(args.input), err)?;
    let style = output::EvlistStyle {
        verbose: env.verbose > 0,
        group: args.group,
        freq: args.freq,
    };
    output::evlist(&rec, style, out)?;
    Ok(0)
}
