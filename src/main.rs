//! The `hrec` binary: parse the command line, hand it to its command (`commands/<name>.rs`),
//! print errors.
//!
//! Exit codes: 0 ok, 1 error, 2 usage; a recorded workload's own status is passed through
//! (128 + the signal when a signal stopped the recording and the workload did not die of one).

mod commands;

use std::io::{self, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let parsed = match commands::Cli::parse_from(std::env::args_os()) {
        Ok(p) => p,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            eprintln!("hrec: error: {}", one_line(&e.render().to_string()));
            return ExitCode::from(2);
        }
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut err = io::stderr();
    let result = commands::exec(parsed, &mut out, &mut err);
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

/// clap's usage error in one line: its message, with its tip when it has one (a similar flag),
/// and where the flags are listed instead of the usage block.
fn one_line(rendered: &str) -> String {
    let lines: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut msg = lines
        .first()
        .copied()
        .unwrap_or("bad arguments")
        .trim_start_matches("error: ")
        .to_string();
    // A message ending in ':' lists what it means on the next lines (missing arguments).
    if msg.ends_with(':') {
        let listed: Vec<&str> = lines[1..]
            .iter()
            .copied()
            .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("tip:"))
            .collect();
        msg.push(' ');
        msg.push_str(&listed.join(", "));
    }
    for tip in lines.iter().filter_map(|l| l.strip_prefix("tip: ")) {
        if !tip.starts_with("to pass ") {
            msg.push_str("; ");
            msg.push_str(tip);
        }
    }
    msg.push_str(" (--help lists the flags)");
    msg
}

fn is_broken_pipe(e: &commands::Error) -> bool {
    matches!(e, commands::Error::Io(io) if io.kind() == io::ErrorKind::BrokenPipe)
}
