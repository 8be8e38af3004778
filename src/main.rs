//! The `hrec` binary: parse the command line, run the library, print errors.
//!
//! Exit codes: 0 ok, 1 error, 2 usage; a recorded workload's own status is passed through.

mod cli;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let parsed = cli::Cli::parse(); // prints usage errors itself and exits 2
    let (env, cmd) = match parsed.into_command() {
        Ok(v) => v,
        Err(msg) => {
            eprintln!("hrec: error: {msg}");
            return ExitCode::from(2);
        }
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut err = io::stderr();
    let result = hrec::app::run(&env, &cmd, &mut out, &mut err);
    let _ = out.flush();
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            let usage = e.is_usage();
            eprintln!("hrec: error: {:#}", anyhow::Error::from(e));
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}

fn is_broken_pipe(e: &hrec::app::AppError) -> bool {
    matches!(e, hrec::app::AppError::Io(io) if io.kind() == io::ErrorKind::BrokenPipe)
}
