//! `hrec buildid-list`: the build-ids of the binaries a recording saw, as perf buildid-list
//! prints them.

use std::io::Write;

use hrec::output;

use super::args::{InputArgs, input_file};
use super::reading::open_recording;
use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec buildid-list
          The build-id and path of every binary hrec.data saw.
  hrec buildid-list -i perf.data
          The same for a perf recording.
  hrec buildid-list | grep libc
          Which build of libc the recording saw.";

/// Runs `hrec buildid-list` with its flags.
pub fn exec(
    args: InputArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    let rec = open_recording(env, &input_file(args.input), err)?;
    output::buildid_list(&rec, out)?;
    Ok(0)
}
