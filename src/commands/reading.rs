//! What every command that reads a recording does alike: open it with one warning line per
//! problem of the file (truncated, cut short, damaged features), fold it into a profile with
//! `report`'s progress bar, and print what the walk met (unreadable blocks, records out of
//! order) after it.

use std::io::{self, Write};
use std::path::Path;

use hrec::analysis::profile::{Profile, ProfileOptions};
use hrec::output;
use hrec::recording::{Recording, Source};

use super::{Env, Error};

/// The recording at `input`, its file problems said on `err`, one line each.
pub fn open_recording(env: &Env, input: &Path, err: &mut dyn Write) -> Result<Recording, Error> {
    open_recording_with(env, input, true, err)
}

/// [`open_recording`]; `kernel_symbols: false` for a command that names no kernel function.
pub fn open_recording_with(
    env: &Env,
    input: &Path,
    kernel_symbols: bool,
    err: &mut dyn Write,
) -> Result<Recording, Error> {
    let rec = Recording::open_with_kernel(input, env.threads, kernel_symbols)?;
    if let Some(why) = rec.truncated() {
        match &rec.source {
            Source::Hrec(_) => writeln!(
                err,
                "hrec: warning: {} is truncated ({why}): reading the {} complete blocks",
                input.display(),
                rec.block_count()
            )?,
            Source::PerfData(p) => writeln!(
                err,
                "hrec: warning: {} is cut short ({why}): reading its {} whole records",
                input.display(),
                p.trailer.records
            )?,
        }
    }
    if let Source::PerfData(p) = &rec.source {
        for w in &p.info.warnings {
            writeln!(err, "hrec: warning: {}: {w}", input.display())?;
        }
    }
    Ok(rec)
}

/// What reading the records met (unreadable blocks, records out of order), one warning line
/// each; called after the command's walk.
pub fn read_warnings(rec: &Recording, err: &mut dyn Write) -> Result<(), Error> {
    for e in rec.errors() {
        writeln!(err, "hrec: warning: {e}")?;
    }
    Ok(())
}

/// The profile of a recording for a reading command, with the progress bar `hrec report`
/// has (on stderr when it is a terminal, once reading has taken `Env::progress_after`).
pub fn build_profile(
    env: &Env,
    rec: &Recording,
    opts: &ProfileOptions,
    what: &'static str,
) -> Profile {
    use std::io::IsTerminal;
    let total = rec.trailer().map(|t| t.samples).unwrap_or(0);
    let mut bar = output::progress::Progress::new(
        io::stderr().is_terminal(),
        env.progress_after,
        what,
        total,
    );
    let p = hrec::analysis::replay::build(rec, opts, &mut |n| bar.update(n));
    bar.finish();
    p
}

/// The profile options with the worker count of the environment.
pub fn with_threads(o: &ProfileOptions, env: &Env) -> ProfileOptions {
    ProfileOptions {
        threads: env.threads,
        ..o.clone()
    }
}
