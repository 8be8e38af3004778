//! `hrec info`: a recording's header (host, events, counts, side blocks), hrec's own dump.

use std::io::Write;

use hrec::output;

use super::args::{InputArgs, input_file};
use super::reading::open_recording;
use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec info
          The host, command line, events and counts of hrec.data.
  hrec info -i perf.data
          The same for a perf recording.
  hrec info -i hrec.data.2026112812000000
          One of the files of `record --switch-output`.";

/// Runs `hrec info` with its flags.
pub fn exec(
    args: InputArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    let rec = open_recording(env, &input_file(args.input), err)?;
    output::info(&rec, out)?;
    Ok(0)
}
