//! `hrec generate man DIR` / `hrec generate completions SHELL [DIR]` (hidden, as ripgrep's
//! `--generate`): the man pages and the bash, zsh and fish completions, made from the same
//! clap definitions as `--help`, so a flag documented in one is documented in all.
//!
//! **Man pages.** One page per command, perf's layout and names: `hrec.1`, `hrec-record.1`,
//! ..., and for the commands with subcommands of their own `hrec-mem.1`, `hrec-mem-record.1`,
//! and so on. A page has NAME (the command's `about`), SYNOPSIS (clap's usage line),
//! DESCRIPTION (the about, and a paragraph from [`PAGES`] that only the page carries),
//! OPTIONS (every visible flag, in `--help`'s order), COMMANDS where there are subcommands,
//! EXAMPLES (the command's `after_help`, the same text `--help` ends with) and SEE ALSO (the
//! neighbouring hrec pages and perf's page of the same command, from [`PAGES`]).
//!
//! The examples text is written once per command (`EXAMPLES` beside its flags) in one layout
//! that both readers understand: an `Examples:` line, then for each example the command line
//! indented by 2 and what it does indented by 10 (clap's indent of a flag's long help).
//!
//! **Completions.** clap_complete's scripts, of the command tree without its hidden flags
//! and subcommands, with one addition clap cannot express: the value of `-e/--event`
//! (record, stat, top, mem record, c2c record) completes to the event names `hrec list
//! --raw-dump` prints, as perf's completion calls `perf list --raw-dump`, and `stat
//! -M/--metrics` to the metric and metric-group names. The bash script needs nothing but
//! bash (no bash-completion helpers).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::builder::StyledStr;
use clap::{Args, Command, CommandFactory as _, Subcommand, ValueEnum};
use clap_complete::Generator as _;
use clap_mangen::roff::{Roff, bold, roman};

use super::{Cli, Error};

/// `hrec generate` flags.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// What to generate.
    #[command(subcommand)]
    pub what: What,
}

/// What `hrec generate` makes.
#[derive(Debug, Subcommand)]
pub enum What {
    /// Write one man page per command (hrec.1, hrec-record.1, ...) into DIR.
    Man {
        /// The directory (made when missing), e.g. /usr/local/share/man/man1.
        dir: PathBuf,
    },
    /// Print the completion script for SHELL, or write it into DIR under the name the shell
    /// loads it by (bash: hrec, zsh: _hrec, fish: hrec.fish).
    Completions {
        /// bash, zsh or fish.
        shell: Shell,
        /// The directory (made when missing), e.g. /usr/local/share/bash-completion/completions.
        dir: Option<PathBuf>,
    },
}

/// The shells with completions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// Bash 4 or newer (3 without `-o nosort`).
    Bash,
    /// zsh.
    Zsh,
    /// fish.
    Fish,
}

impl Shell {
    /// The file the shell loads the completions of `hrec` from.
    fn file_name(self) -> &'static str {
        match self {
            Shell::Bash => "hrec",
            Shell::Zsh => "_hrec",
            Shell::Fish => "hrec.fish",
        }
    }
}

/// Runs `hrec generate ...`.
pub fn exec(args: GenerateArgs, out: &mut dyn Write) -> Result<u8, Error> {
    match args.what {
        What::Man { dir } => {
            make_dir(&dir)?;
            for (name, page) in man_pages(Cli::command())? {
                let path = dir.join(name);
                std::fs::write(&path, page).map_err(|source| Error::Output { path, source })?;
            }
        }
        What::Completions { shell, dir } => {
            let script = completions(Cli::command(), shell)?;
            match dir {
                None => out.write_all(&script)?,
                Some(dir) => {
                    make_dir(&dir)?;
                    let path = dir.join(shell.file_name());
                    std::fs::write(&path, script)
                        .map_err(|source| Error::Output { path, source })?;
                }
            }
        }
    }
    Ok(0)
}

fn make_dir(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Output {
        path: dir.to_path_buf(),
        source,
    })
}

/// What a man page carries beyond the clap definitions.
#[derive(Debug)]
pub struct Page {
    /// The page (`hrec-record`).
    pub name: &'static str,
    /// A paragraph after the `about` in DESCRIPTION.
    pub description: &'static str,
    /// SEE ALSO, in order (`hrec-report(1)`, `perf-record(1)`).
    pub see_also: &'static [&'static str],
}

/// Every page: what it adds to the definitions. A unit test checks that each command has
/// one and that each hrec page named in SEE ALSO exists.
pub const PAGES: &[Page] = &[
    Page {
        name: "hrec",
        description: "hrec records samples of the CPU's performance counters into a file \
            (hrec.data; hrec convert writes it as perf.data for perf's tools) and reads them back: where the time went per \
            function, source line and call chain, with TopDown and retire-latency columns on \
            the Intel parts that have them. Its commands take perf's flag names; `hrec help \
            COMMAND` or `hrec COMMAND --help` lists a command's flags.",
        see_also: &[
            "hrec-record(1)",
            "hrec-report(1)",
            "hrec-stat(1)",
            "hrec-top(1)",
            "hrec-list(1)",
            "perf(1)",
        ],
    },
    Page {
        name: "hrec-record",
        description: "Runs COMMAND (or watches CPUs, processes or threads with -a, -C, -p, -t) \
            and writes the samples, with the mappings and build-ids needed to name them \
            later, into hrec.data. Without -e it samples cycles on every core PMU, with the \
            TopDown group where the PMU has one. --dry-run prints the perf_event_attr of \
            every event and opens nothing.",
        see_also: &[
            "hrec-report(1)",
            "hrec-script(1)",
            "hrec-stat(1)",
            "hrec-list(1)",
            "perf-record(1)",
        ],
    },
    Page {
        name: "hrec-report",
        description: "Reads a recording (hrec's or perf's) and shows the samples per sort key, \
            hottest first, with call graphs when the recording has call chains: an \
            interactive view on a terminal, text otherwise or with --stdio.",
        see_also: &[
            "hrec-record(1)",
            "hrec-annotate(1)",
            "hrec-flamegraph(1)",
            "hrec-diff(1)",
            "perf-report(1)",
        ],
    },
    Page {
        name: "hrec-script",
        description: "Prints every sample of a recording, one line each with its call chain \
            below it, in perf script's layout, for reading or for other tools.",
        see_also: &["hrec-record(1)", "hrec-report(1)", "perf-script(1)"],
    },
    Page {
        name: "hrec-flamegraph",
        description: "Draws the call chains of a recording as an interactive SVG flame graph \
            (or writes the collapsed stacks), optionally coloured by TopDown category, as a \
            wall-clock view with off-CPU time, or as the difference of two recordings.",
        see_also: &["hrec-record(1)", "hrec-report(1)", "hrec-export(1)"],
    },
    Page {
        name: "hrec-export",
        description: "Converts a recording into another profiler's format: pprof's \
            profile.proto for go tool pprof, or the Firefox Profiler's processed-profile \
            JSON.",
        see_also: &["hrec-record(1)", "hrec-flamegraph(1)", "hrec-report(1)"],
    },
    Page {
        name: "hrec-convert",
        description: "Writes a recording (hrec's, or a perf.data again) as perf.data in file \
            mode, as perf record writes it, for perf report, perf script, hotspot and the \
            scripts built on them. Stacks unwound while recording become call chains; what \
            perf.data has no place for is named in one line.",
        see_also: &[
            "hrec-record(1)",
            "hrec-script(1)",
            "perf-report(1)",
            "perf-script(1)",
        ],
    },
    Page {
        name: "hrec-stat",
        description: "Counts events while COMMAND runs (or on CPUs, processes or threads) and \
            prints the counts with perf stat's derived values, the TopDown breakdown and \
            Intel's TMA metrics.",
        see_also: &[
            "hrec-record(1)",
            "hrec-list(1)",
            "hrec-top(1)",
            "perf-stat(1)",
        ],
    },
    Page {
        name: "hrec-list",
        description: "Lists the events hrec can count or sample on this machine (from sysfs and \
            Intel's perfmon files) and the metrics, in perf list's layout.",
        see_also: &["hrec-record(1)", "hrec-stat(1)", "perf-list(1)"],
    },
    Page {
        name: "hrec-info",
        description: "Prints what a recording's header says: the host, the command line, the \
            events and their counts.",
        see_also: &["hrec-evlist(1)", "hrec-report(1)", "perf-report(1)"],
    },
    Page {
        name: "hrec-evlist",
        description: "Lists the events a recording holds, as perf evlist does.",
        see_also: &["hrec-info(1)", "hrec-record(1)", "perf-evlist(1)"],
    },
    Page {
        name: "hrec-buildid-list",
        description: "Lists the build-id and path of every binary a recording saw.",
        see_also: &[
            "hrec-buildid-cache(1)",
            "hrec-archive(1)",
            "perf-buildid-list(1)",
        ],
    },
    Page {
        name: "hrec-buildid-cache",
        description: "Manages perf's build-id cache, where recordings keep copies of the \
            binaries they sampled so that reports still name their functions after the \
            binaries change.",
        see_also: &[
            "hrec-buildid-list(1)",
            "hrec-archive(1)",
            "perf-buildid-cache(1)",
        ],
    },
    Page {
        name: "hrec-archive",
        description: "Packs the binaries and debug files a recording needs, by build-id, so \
            that it can be reported on another machine.",
        see_also: &[
            "hrec-buildid-cache(1)",
            "hrec-buildid-list(1)",
            "perf-archive(1)",
        ],
    },
    Page {
        name: "hrec-annotate",
        description: "Disassembles the hottest functions of a recording and shows each \
            instruction's share of the samples, under its source lines.",
        see_also: &["hrec-report(1)", "hrec-record(1)", "perf-annotate(1)"],
    },
    Page {
        name: "hrec-diff",
        description: "Compares two recordings symbol by symbol (the baseline's share, the \
            delta, the ratio), as perf diff does.",
        see_also: &["hrec-report(1)", "hrec-record(1)", "perf-diff(1)"],
    },
    Page {
        name: "hrec-top",
        description: "Samples the whole machine (or CPUs, processes, threads) and shows the \
            hottest functions, refreshed every few seconds.",
        see_also: &["hrec-record(1)", "hrec-stat(1)", "perf-top(1)"],
    },
    Page {
        name: "hrec-mem",
        description: "Memory access profiling: record loads and stores with their data \
            addresses, data sources and latencies, then report where they went.",
        see_also: &[
            "hrec-mem-record(1)",
            "hrec-mem-report(1)",
            "hrec-c2c(1)",
            "perf-mem(1)",
        ],
    },
    Page {
        name: "hrec-mem-record",
        description: "Records the memory events this machine's core PMUs have for loads \
            (above a latency threshold) and stores. Every flag of hrec record applies too; \
            -t is the memory operation here, so threads are given with --tid.",
        see_also: &["hrec-mem-report(1)", "hrec-record(1)", "perf-mem(1)"],
    },
    Page {
        name: "hrec-mem-report",
        description: "Reports a memory recording weighed by load latency, with perf mem \
            report's sort keys. Every flag of hrec report applies too.",
        see_also: &["hrec-mem-record(1)", "hrec-report(1)", "perf-mem(1)"],
    },
    Page {
        name: "hrec-c2c",
        description: "Cache-to-cache analysis: find the cache lines that bounce between cores \
            (false and true sharing) and who reads and writes which offsets of them.",
        see_also: &[
            "hrec-c2c-record(1)",
            "hrec-c2c-report(1)",
            "hrec-mem(1)",
            "perf-c2c(1)",
        ],
    },
    Page {
        name: "hrec-c2c-record",
        description: "Records loads and stores with their data and physical addresses and \
            CPUs, as perf c2c record does. Every flag of hrec record applies too.",
        see_also: &["hrec-c2c-report(1)", "hrec-record(1)", "perf-c2c(1)"],
    },
    Page {
        name: "hrec-c2c-report",
        description: "Shows the shared cache lines of a c2c recording, the lines with the \
            most HITMs first, and per line the offsets, code and threads that touch it.",
        see_also: &["hrec-c2c-record(1)", "hrec-report(1)", "perf-c2c(1)"],
    },
    Page {
        name: "hrec-probe",
        description: "Adds dynamic probe events through tracefs as perf probe does (the same \
            groups, event names and uprobe_events lines, so each tool uses the other's \
            probes): a user probe at a function's entry or returns, a kernel probe where \
            the kernel has kprobe events. Each probe is then a tracepoint for hrec record \
            -e GROUP:EVENT. Adding and removing probes needs root.",
        see_also: &["hrec-record(1)", "hrec-list(1)", "perf-probe(1)"],
    },
];

/// The man pages of the command tree `root`: (file name, roff text) per visible command.
pub fn man_pages(root: Command) -> Result<Vec<(String, Vec<u8>)>, Error> {
    let mut root = root.disable_help_subcommand(true);
    root.build();
    let mut pages = Vec::new();
    let mut stack = vec![root];
    while let Some(cmd) = stack.pop() {
        let name = cmd
            .get_display_name()
            .unwrap_or_else(|| cmd.get_name())
            .to_string();
        let mut text = Vec::new();
        man_page(&cmd, &name, &mut text)?;
        pages.push((format!("{name}.1"), one_preamble(&text).into_bytes()));
        stack.extend(
            cmd.get_subcommands()
                .filter(|s| !s.is_hide_set())
                .cloned()
                .collect::<Vec<_>>()
                .into_iter()
                .rev(),
        );
    }
    Ok(pages)
}

/// One page, `name` (`hrec-record`) for the built command `cmd`.
fn man_page(cmd: &Command, name: &str, w: &mut dyn Write) -> Result<(), Error> {
    let page = PAGES.iter().find(|p| p.name == name);
    let man = clap_mangen::Man::new(cmd.clone().subcommand_help_heading("COMMANDS"))
        .title(name.to_uppercase())
        .date(env!("HREC_DATE"))
        .source(format!("hrec {}", env!("CARGO_PKG_VERSION")))
        .manual("hrec Manual");
    man.render_title(w)?;
    man.render_name_section(w)?;

    let mut roff = Roff::new();
    roff.control("SH", ["SYNOPSIS"]);
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage.trim().trim_start_matches("Usage:").trim();
    let bin = cmd.get_bin_name().unwrap_or(name);
    match usage.strip_prefix(bin) {
        Some(rest) => roff.text([bold(bin), roman(rest)]),
        None => roff.text([roman(usage)]),
    };
    roff.control("SH", ["DESCRIPTION"]);
    let about = cmd
        .get_long_about()
        .or_else(|| cmd.get_about())
        .map(StyledStr::to_string)
        .unwrap_or_default();
    paragraphs(&mut roff, &about);
    if let Some(p) = page {
        roff.control("PP", []);
        roff.text([roman(p.description)]);
    }
    roff.to_writer(w)?;

    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(w)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(w)?;
    }

    let mut roff = Roff::new();
    let after = cmd.get_after_help().map(StyledStr::to_string);
    let examples = examples(after.as_deref().unwrap_or(""));
    if !examples.is_empty() {
        roff.control("SH", ["EXAMPLES"]);
        for (command, what) in examples {
            roff.control("TP", []);
            roff.text([bold(command)]);
            roff.text([roman(what)]);
        }
    }
    if let Some(p) = page.filter(|p| !p.see_also.is_empty()) {
        roff.control("SH", ["SEE ALSO"]);
        let mut line = Vec::new();
        for (i, r) in p.see_also.iter().enumerate() {
            let (target, section) = r.split_once('(').unwrap_or((r, ""));
            if i > 0 {
                line.push(roman(", "));
            }
            line.push(bold(target));
            line.push(roman(format!("({section}")));
        }
        roff.text(line);
    }
    roff.to_writer(w)?;
    Ok(())
}

/// The page with the roff crate's preamble (the `Aq` string) once, at the top: the page is
/// made of several renderings and each begins with it.
fn one_preamble(page: &[u8]) -> String {
    const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";
    let text = String::from_utf8_lossy(page);
    match text.split_once(PREAMBLE) {
        Some((before, after)) => format!("{before}{PREAMBLE}{}", after.replace(PREAMBLE, "")),
        None => text.into_owned(),
    }
}

/// Text lines as roff paragraphs (a blank line starts a new one).
fn paragraphs(roff: &mut Roff, text: &str) {
    for (i, para) in text.split("\n\n").enumerate() {
        if i > 0 {
            roff.control("PP", []);
        }
        let joined: Vec<&str> = para.lines().map(str::trim).collect();
        roff.text([roman(joined.join(" "))]);
    }
}

/// The examples of an `after_help` text: (command line, what it does) in order. The layout
/// is the module doc's: after an `Examples:` line, a command indented by 2, its explanation
/// indented by 10 (possibly over several lines).
pub fn examples(after_help: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut inside = false;
    for line in after_help.lines() {
        if line.trim() == "Examples:" {
            inside = true;
            continue;
        }
        if !inside || line.trim().is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if indent <= 2 {
            out.push((line.trim().to_string(), String::new()));
        } else if let Some((_, what)) = out.last_mut() {
            if !what.is_empty() {
                what.push(' ');
            }
            what.push_str(line.trim());
        }
    }
    out
}

/// The completion script of the command tree `root` for `shell`.
pub fn completions(root: Command, shell: Shell) -> Result<Vec<u8>, Error> {
    let mut cmd = visible(&root);
    cmd.set_bin_name("hrec");
    cmd.build();
    let lists = value_lists(&cmd);
    let mut buf = Vec::new();
    match shell {
        Shell::Bash => clap_complete::Shell::Bash.try_generate(&cmd, &mut buf)?,
        Shell::Zsh => clap_complete::Shell::Zsh.try_generate(&cmd, &mut buf)?,
        Shell::Fish => clap_complete::Shell::Fish.try_generate(&cmd, &mut buf)?,
    }
    let script = String::from_utf8_lossy(&buf).into_owned();
    let script = match shell {
        Shell::Bash => bash_lists(&script, &lists).0,
        Shell::Zsh => zsh_lists(&script, &lists).0,
        Shell::Fish => fish_lists(&script, &lists).0,
    };
    Ok(script.into_bytes())
}

/// The command tree without hidden flags and subcommands (clap_complete offers those too),
/// before `build` (which adds `--help`, `--version` and the global flags anew).
fn visible(cmd: &Command) -> Command {
    let mut out = Command::new(cmd.get_name().to_string());
    if let Some(a) = cmd.get_about() {
        out = out.about(a.clone());
    }
    if let Some(v) = cmd.get_version() {
        out = out.version(v.to_string());
    }
    if cmd.is_propagate_version_set() {
        out = out.propagate_version(true);
    }
    if cmd.is_disable_help_subcommand_set() {
        out = out.disable_help_subcommand(true);
    }
    out = out.args(cmd.get_arguments().filter(|a| !a.is_hide_set()).cloned());
    out.subcommands(
        cmd.get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(visible),
    )
}

/// Where a flag's value is one of a list hrec prints: the subcommand path (`["mem",
/// "record"]`), the flag's spellings (`-e`, `--event`) and the `hrec list --raw-dump`
/// filters that print the values.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ValueList {
    path: Vec<String>,
    spellings: Vec<String>,
    filters: &'static str,
}

/// The `hrec list` filters of the events `-e` takes (perf's classes, without the metrics).
const EVENT_FILTERS: &str = "hw sw cache pmu tracepoint";
/// The `hrec list` filters of what `stat -M` takes.
const METRIC_FILTERS: &str = "metric metricgroup";

/// The flags of the built tree `cmd` whose values are event or metric names: the flags with
/// clap id `events` (`-e` of record, stat, top and the commands that flatten record's
/// flags) and `metrics` (`stat -M`).
fn value_lists(cmd: &Command) -> Vec<ValueList> {
    fn walk(cmd: &Command, path: &mut Vec<String>, out: &mut Vec<ValueList>) {
        for a in cmd.get_arguments() {
            let filters = match a.get_id().as_str() {
                "events" => EVENT_FILTERS,
                "metrics" => METRIC_FILTERS,
                _ => continue,
            };
            let mut spellings: Vec<String> = Vec::new();
            spellings.extend(
                a.get_short_and_visible_aliases()
                    .into_iter()
                    .flatten()
                    .map(|c| format!("-{c}")),
            );
            spellings.extend(
                a.get_long_and_visible_aliases()
                    .into_iter()
                    .flatten()
                    .map(|l| format!("--{l}")),
            );
            out.push(ValueList {
                path: path.clone(),
                spellings,
                filters,
            });
        }
        for s in cmd.get_subcommands() {
            path.push(s.get_name().to_string());
            walk(s, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(cmd, &mut Vec::new(), &mut out);
    out
}

/// The bash helper the rewritten cases call: the names `hrec list --raw-dump FILTERS`
/// prints that start with the word being completed; in a comma list, with the part before
/// the last comma kept (`cycles,inst` -> `cycles,instructions`).
const BASH_HELPER: &str = r#"
# Event and metric names for -e/--event and -M/--metrics, from `hrec list --raw-dump` (as
# perf's completion asks `perf list --raw-dump`); in a comma list, the name after the last
# comma.
_hrec_list_words() {
    local cur="$1" pre=""
    shift
    case "$cur" in
        *,*) pre="${cur%,*},"; cur="${cur##*,}" ;;
    esac
    # The hrec being completed (a path, or hrec from the PATH).
    local bin="${COMP_WORDS[0]}" words
    command -v "$bin" >/dev/null 2>&1 || bin=hrec
    words="$("$bin" list --raw-dump "$@" 2>/dev/null)"
    # One name a line, unglobbed (a PMU event's name may hold `?`).
    mapfile -t COMPREPLY < <(compgen -P "$pre" -W "$words" -- "$cur")
}
"#;

/// The bash script with the value lists' cases completing from `hrec list --raw-dump`.
/// Returns the script and how many cases were rewritten.
fn bash_lists(script: &str, lists: &[ValueList]) -> (String, usize) {
    let mut out = String::with_capacity(script.len() + BASH_HELPER.len());
    let mut arm: Option<String> = None;
    let mut pending: Option<&ValueList> = None;
    let mut rewritten = 0;
    for line in script.lines() {
        // The arm of one subcommand: `        hrec__mem__record)` (8 spaces).
        if let Some(name) = line
            .strip_prefix("        ")
            .and_then(|l| l.strip_suffix(')'))
            && !name.starts_with(' ')
            && name.starts_with("hrec")
        {
            arm = Some(name.to_string());
        }
        if let Some(list) = pending.take()
            && line.trim_start().starts_with("COMPREPLY=(")
        {
            let indent = &line[..line.len() - line.trim_start().len()];
            out.push_str(&format!(
                "{indent}_hrec_list_words \"${{cur}}\" {}\n",
                list.filters
            ));
            rewritten += 1;
            continue;
        }
        let trimmed = line.trim();
        if let (Some(a), Some(spelling)) = (&arm, trimmed.strip_suffix(')')) {
            pending = lists
                .iter()
                .find(|l| bash_arm(&l.path) == *a && l.spellings.iter().any(|s| s == spelling));
        }
        out.push_str(line);
        out.push('\n');
    }
    // The helper before the `complete` lines at the end.
    let at = out
        .rfind("\nif [[ \"${BASH_VERSINFO[0]}\" -eq 4")
        .map_or(out.len(), |i| i + 1);
    out.insert_str(at, &format!("{}\n", BASH_HELPER.trim_start()));
    (out, rewritten)
}

/// clap_complete's bash name of a subcommand's case (`hrec__subcmd__mem__subcmd__record`;
/// a `-` in a name is that separator too).
fn bash_arm(path: &[String]) -> String {
    const SEP: &str = "__subcmd__";
    let mut s = String::from("hrec");
    for p in path {
        s.push_str(SEP);
        s.push_str(&p.replace('-', SEP));
    }
    s
}

/// The zsh helper the rewritten specs call (as an action starting with a space: invoked
/// unchanged): the names `hrec list --raw-dump FILTERS` prints; in a comma list, the name
/// after the last comma.
const ZSH_HELPER: &str = r#"
# Event and metric names for -e/--event and -M/--metrics, from `hrec list --raw-dump` (as
# perf's completion asks `perf list --raw-dump`); in a comma list, the name after the last
# comma.
(( $+functions[_hrec_list_words] )) ||
_hrec_list_words() {
    local -a names
    names=( ${(z)"$(hrec list --raw-dump "$@" 2>/dev/null)"} )
    compset -P '*,'
    compadd -a names
}
"#;

/// The zsh script with the value lists' specs completing from `hrec list --raw-dump`.
/// Returns the script and how many specs were rewritten.
///
/// clap_complete writes one `_arguments` call per command inside nested `case $line[1] in`
/// blocks, each after the `curcontext=...:hrec-mem-command-...` line that names its parent;
/// the path of a spec is that parent and the `(name)` of its arm.
fn zsh_lists(script: &str, lists: &[ValueList]) -> (String, usize) {
    let mut out = String::with_capacity(script.len() + ZSH_HELPER.len());
    // Open `case` blocks: the parent's context for `case $line[1] in`, None for others.
    let mut cases: Vec<Option<String>> = Vec::new();
    let mut context = String::from("hrec");
    let mut path = String::new();
    let mut rewritten = 0;
    for line in script.lines() {
        let t = line.trim();
        if let Some(c) = t
            .strip_prefix("curcontext=\"${curcontext%:*:*}:")
            .and_then(|r| r.split_once("-command-"))
        {
            context = c.0.to_string();
        } else if t == "case $line[1] in" {
            cases.push(Some(context.clone()));
        } else if t.starts_with("case ") && t.ends_with(" in") {
            cases.push(None);
        } else if t == "esac" {
            cases.pop();
        } else if let Some(arm) = t.strip_prefix('(').and_then(|r| r.strip_suffix(')'))
            && let Some(Some(parent)) = cases.last()
        {
            path = format!("{parent}-{arm}");
        } else if let Some(list) = lists.iter().find(|l| {
            path == format!("hrec-{}", l.path.join("-"))
                && l.spellings.iter().any(|sp| {
                    let stem = if sp.starts_with("--") {
                        format!("{sp}=[")
                    } else {
                        format!("{sp}+[")
                    };
                    t.starts_with(&format!("'{stem}")) || t.starts_with(&format!("'*{stem}"))
                })
        }) && let Some(head) = t.strip_suffix(":_default' \\")
        {
            let indent = &line[..line.len() - t.len()];
            out.push_str(&format!(
                "{indent}{head}: _hrec_list_words {}' \\\n",
                list.filters
            ));
            rewritten += 1;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    // The helper after the `#compdef` line and before the main function.
    let at = out.find("\n_hrec() {").map_or(0, |i| i + 1);
    out.insert_str(at, &format!("{}\n", ZSH_HELPER.trim_start()));
    (out, rewritten)
}

/// The fish helper the rewritten lines call: the names `hrec list --raw-dump FILTERS`
/// prints, after the part of a comma list already typed.
const FISH_HELPER: &str = r#"
# Event and metric names for -e/--event and -M/--metrics, from `hrec list --raw-dump` (as
# perf's completion asks `perf list --raw-dump`); in a comma list, after the last comma.
function __fish_hrec_list_words
    set -l pre (string match -r -- '^.*,' (commandline -ct))
    or set pre ''
    for name in (hrec list --raw-dump $argv 2>/dev/null | string split ' ')
        test -n "$name"
        and echo "$pre$name"
    end
end
"#;

/// The fish script with the value lists' lines completing from `hrec list --raw-dump`.
/// Returns the script and how many lines were rewritten.
fn fish_lists(script: &str, lists: &[ValueList]) -> (String, usize) {
    let mut out = String::with_capacity(script.len() + FISH_HELPER.len());
    out.push_str(FISH_HELPER.trim_start());
    out.push('\n');
    let mut rewritten = 0;
    for line in script.lines() {
        let found = lists.iter().find(|l| {
            let cond = match &l.path[..] {
                [one] => format!("__fish_hrec_using_subcommand {one}"),
                [parent, child] => format!(
                    "__fish_hrec_using_subcommand {parent}; and __fish_seen_subcommand_from {child}"
                ),
                _ => return false,
            };
            let short = l
                .spellings
                .iter()
                .find_map(|s| s.strip_prefix('-').filter(|s| !s.starts_with('-')));
            let long = l.spellings.iter().find_map(|s| s.strip_prefix("--"));
            let flags = match (short, long) {
                (Some(s), Some(l)) => format!("-s {s} -l {l} "),
                (Some(s), None) => format!("-s {s} "),
                (None, Some(l)) => format!("-l {l} "),
                (None, None) => return false,
            };
            line.starts_with(&format!("complete -c hrec -n \"{cond}\" {flags}-d "))
                && line.ends_with(" -r")
        });
        out.push_str(line);
        if let Some(l) = found {
            out.push_str(&format!(
                " -f -a \"(__fish_hrec_list_words {})\"",
                l.filters
            ));
            rewritten += 1;
        }
        out.push('\n');
    }
    (out, rewritten)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_a_page_and_see_also_names_pages() {
        let pages = man_pages(Cli::command()).expect("pages");
        let names: Vec<&str> = pages
            .iter()
            .map(|(f, _)| f.trim_end_matches(".1"))
            .collect();
        for n in &names {
            assert!(PAGES.iter().any(|p| p.name == *n), "no PAGES entry for {n}");
        }
        for p in PAGES {
            assert!(
                names.contains(&p.name),
                "PAGES names {} (no such command)",
                p.name
            );
            for r in p.see_also {
                let (page, section) = r.split_once('(').expect("name(section)");
                assert_eq!(section, "1)", "{r}");
                if page.starts_with("hrec") {
                    assert!(
                        names.contains(&page),
                        "{}: SEE ALSO {r}: no such page",
                        p.name
                    );
                }
            }
        }
        assert!(names.contains(&"hrec-mem-record") && names.contains(&"hrec-c2c-report"));
        assert!(
            !names
                .iter()
                .any(|n| n.contains("generate") || n.contains("help"))
        );
    }

    #[test]
    fn examples_are_read_from_the_after_help_layout() {
        let text = "Examples:\n  hrec record -g -- ./prog\n          Sample it,\n          \
                    with chains.\n  hrec report\n          Read it.\n";
        assert_eq!(
            examples(text),
            vec![
                (
                    "hrec record -g -- ./prog".to_string(),
                    "Sample it, with chains.".to_string()
                ),
                ("hrec report".to_string(), "Read it.".to_string()),
            ]
        );
    }

    /// Every command's `--help` ends with 3 to 6 examples in the layout the man pages read,
    /// each a command line of that command.
    #[test]
    fn every_command_has_examples() {
        let mut root = Cli::command();
        root.build();
        let mut stack: Vec<&Command> = vec![&root];
        while let Some(cmd) = stack.pop() {
            stack.extend(
                cmd.get_subcommands()
                    .filter(|s| !s.is_hide_set() && s.get_name() != "help"),
            );
            let bin = cmd.get_bin_name().unwrap_or("hrec").to_string();
            let after = cmd
                .get_after_help()
                .map(StyledStr::to_string)
                .unwrap_or_default();
            let ex = examples(&after);
            assert!((3..=6).contains(&ex.len()), "{bin}: {} examples", ex.len());
            for (command, what) in &ex {
                assert!(command.starts_with("hrec"), "{bin}: {command}");
                if cmd.get_name() != "hrec" {
                    assert!(command.starts_with(&bin), "{bin}: {command}");
                }
                assert!(!what.is_empty(), "{bin}: {command} says nothing");
            }
            for line in after.lines() {
                assert!(
                    line.len() <= 80,
                    "{bin}: example line over 80 columns: {line}"
                );
            }
        }
    }

    #[test]
    fn bash_event_cases_complete_from_the_list() {
        let mut cmd = visible(&Cli::command());
        cmd.set_bin_name("hrec");
        cmd.build();
        let lists = value_lists(&cmd);
        let paths: Vec<String> = lists.iter().map(|l| l.path.join(" ")).collect();
        for p in ["record", "stat", "top", "mem record", "c2c record"] {
            assert!(paths.iter().any(|q| q == p), "{p}: {paths:?}");
        }
        let mut buf = Vec::new();
        clap_complete::Shell::Bash
            .try_generate(&cmd, &mut buf)
            .expect("bash");
        let (script, n) = bash_lists(&String::from_utf8_lossy(&buf), &lists);
        // Each list: its short and its long spelling.
        let want: usize = lists.iter().map(|l| l.spellings.len()).sum();
        assert_eq!(n, want, "{script}");
        assert!(script.contains("_hrec_list_words() {"));

        let mut buf = Vec::new();
        clap_complete::Shell::Zsh
            .try_generate(&cmd, &mut buf)
            .expect("zsh");
        let (script, n) = zsh_lists(&String::from_utf8_lossy(&buf), &lists);
        assert_eq!(n, want, "{script}");
        assert!(script.contains(": _hrec_list_words hw sw cache pmu tracepoint'"));

        let mut buf = Vec::new();
        clap_complete::Shell::Fish
            .try_generate(&cmd, &mut buf)
            .expect("fish");
        let (script, n) = fish_lists(&String::from_utf8_lossy(&buf), &lists);
        // One line per flag, for both its spellings.
        assert_eq!(n, lists.len(), "{script}");
    }
}
