//! `hrec probe`: dynamic probe events as perf probe makes them (`-x BINARY FUNCTION`, a
//! kernel `FUNCTION`, `%return`, `--list`, `--del`), through tracefs (`hrec::trace::probe`).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use hrec::trace::Tracefs;
use hrec::trace::probe;

use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec probe -x ./app parse_request
          A probe at parse_request's entry: the event probe_app:parse_request
          (then: hrec record -e probe_app:parse_request -- ./app).
  hrec probe -x /lib/x86_64-linux-gnu/libc.so.6 'malloc%return'
          At malloc's returns: probe_libc:malloc__return.
  hrec probe --list
          The probe events tracefs has, perf's and hrec's.
  hrec probe --del 'probe_app:*'
          Removes them.";

/// `hrec probe` flags (perf probe's).
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// The binary of a user probe (else FUNCTION is a kernel function).
    #[arg(short = 'x', long = "exec", value_name = "BINARY")]
    pub exec: Option<PathBuf>,
    /// List the probe events.
    #[arg(short = 'l', long = "list", conflicts_with_all = ["del", "probe"])]
    pub list: bool,
    /// Remove the probe events matching GROUP:EVENT (or EVENT; globs).
    #[arg(
        short = 'd',
        long = "del",
        value_name = "EVENT",
        conflicts_with = "probe"
    )]
    pub del: Vec<String>,
    /// FUNCTION, or FUNCTION%return for its returns.
    #[arg(value_name = "FUNCTION", required_unless_present_any = ["list", "del"])]
    pub probe: Option<String>,
}

/// Runs `hrec probe`.
pub fn exec(
    args: ProbeArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    let fs = Tracefs::find(&env.sysfs_root).map_err(probe::ProbeError::from)?;
    if args.list {
        for l in probe::list(&fs) {
            writeln!(
                out,
                "  {:<20} ({})",
                format!("{}:{}", l.group, l.event),
                probe::describe(&l)
            )?;
        }
        return Ok(0);
    }
    if !args.del.is_empty() {
        for pattern in &args.del {
            for name in probe::del(&fs, pattern)? {
                writeln!(err, "Removed event: {name}")?;
            }
        }
        return Ok(0);
    }
    let spec = args.probe.unwrap_or_default();
    let p = probe::probe(&spec, args.exec.as_deref())?;
    probe::add(&fs, &p)?;
    let on = match &p.place {
        probe::Place::User { path, function, .. } => {
            let ret = if p.ret { "%return" } else { "" };
            format!("on {function}{ret} in {}", path.display())
        }
        probe::Place::Kernel { function } => format!("on {function}"),
    };
    writeln!(
        err,
        "Added new event:\n  {:<20} ({on})\n\nYou can now use it in all hrec tools, such as:\n\n\threc record -e {} -a -- sleep 1\n",
        p.name(),
        p.name()
    )?;
    Ok(0)
}
