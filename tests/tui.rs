//! `hrec report`'s interactive view in a real terminal (tmux): it opens by default on a
//! terminal, shows the rows the text report prints for the same file, opens a row's call
//! graph, annotates a function, filters, zooms, shows the selected row's metric tree (with
//! `--td-level 3`), shows its help and quits; `--stdio` prints the text on a terminal.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::tmux::{Tmux, available};
use support::{hrec_in, text};

const WAIT: Duration = Duration::from_secs(60);

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings")
}

/// The text report's rows (without their first column, where the view puts its `+`/`-`
/// marks) and, for each, its call-graph lines.
fn text_rows(args: &[&str]) -> Vec<(String, Vec<String>)> {
    let dir = tempfile::tempdir().unwrap();
    let out = hrec_in(dir.path(), args);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    for line in stdout.lines() {
        if line.starts_with('#') {
            continue;
        }
        let is_row = line.len() > 2
            && line
                .trim_start()
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
            && line.contains('%')
            && !line.contains("--");
        if is_row {
            rows.push((line[1..].trim_end().to_string(), Vec::new()));
        } else if let Some(last) = rows.last_mut() {
            last.1.push(line.trim_end().to_string());
        }
    }
    rows
}

/// Whether a screen line, without its first column, is `row`.
fn shows_row(screen: &str, row: &str) -> bool {
    screen
        .lines()
        .any(|l| l.get(1..).is_some_and(|rest| rest.trim_end() == row))
}

#[test]
fn report_view_shows_the_text_reports_rows_graphs_and_annotation() {
    if !available() {
        eprintln!("skipped: tmux not installed");
        return;
    }
    let r = fixtures();
    let file = r.join("callchain.hrec");
    let symfs = r.join("root");
    let (file, symfs) = (file.to_str().unwrap(), symfs.to_str().unwrap());
    let rows = text_rows(&["report", "--stdio", "-i", file, "--symfs", symfs]);
    assert!(rows.len() > 5, "{rows:?}");
    let dir = tempfile::tempdir().unwrap();
    let hrec = env!("CARGO_BIN_EXE_hrec");
    let t = Tmux::start(
        dir.path(),
        100,
        30,
        &format!("{hrec} report -i {file} --symfs {symfs}"),
    );
    // Every check waits for the whole screen it expects: a capture can fall between the
    // terminal writes of one redraw (new title, old rows), so the first sign of a screen is
    // not the screen. A screen that never comes fails with the last one seen.
    // The rows of the text report, in its order, with the same numbers.
    let rows_in_order = |s: &str| {
        let mut at = 0;
        rows.iter().take(10).all(|(row, _)| {
            match s
                .lines()
                .position(|l| l.get(1..).is_some_and(|rest| rest.trim_end() == row))
            {
                Some(pos) if pos >= at => {
                    at = pos;
                    true
                }
                _ => false,
            }
        })
    };
    let (first, tree) = &rows[0];
    assert!(!tree.is_empty(), "{rows:?}");
    // The first row has a call graph: marked `+`, opened by Enter with the text report's
    // lines, closed again by `+`.
    t.wait_screen(WAIT, |s| {
        s.contains("Samples: 540 of event 'cpu-clock'")
            && s.contains("Children    Self  Samples  Command  Shared Object")
            && rows_in_order(s)
            && s.lines()
                .any(|l| l.starts_with('+') && l[1..].trim_end() == first)
    });
    t.send_keys(&["Enter"]);
    // The first row opened, its tree's lines under it.
    t.wait_screen(WAIT, |s| {
        let shown: Vec<&str> = s.lines().map(str::trim_end).collect();
        shown.iter().any(|l| l.starts_with('-'))
            && shown
                .iter()
                .position(|l| l.get(1..) == Some(first.as_str()))
                .is_some_and(|start| {
                    tree.iter()
                        .take(8)
                        .enumerate()
                        .all(|(i, want)| shown.get(start + 1 + i).copied() == Some(want.as_str()))
                })
    });
    t.send_keys(&["+"]);
    t.wait_screen(WAIT, |s| !s.lines().any(|l| l.starts_with('-')));

    // `a`: the annotation of the selected function, as `hrec annotate` prints it.
    let sym = first.rsplit("[.] ").next().unwrap().to_string();
    let ann = hrec_in(
        dir.path(),
        &["annotate", "-i", file, "--symfs", symfs, "--stdio", &sym],
    );
    let (ann_text, ann_err) = text(&ann);
    assert!(ann.status.success(), "{ann_err}");
    let hot_lines: Vec<&str> = ann_text
        .lines()
        .filter(|l| {
            l.split(':')
                .next()
                .and_then(|p| p.trim().parse::<f64>().ok())
                .is_some_and(|p| p >= 5.0)
        })
        .collect();
    assert!(!hot_lines.is_empty(), "{ann_text}");
    t.send_keys(&["a"]);
    t.wait_screen(WAIT, |s| {
        s.contains(&format!("Annotate {sym}"))
            && hot_lines
                .iter()
                .all(|l| s.lines().any(|x| x.trim_end() == l.trim_end()))
    });
    t.send_keys(&["q"]);
    t.wait_screen(WAIT, |s| s.contains("Samples: 540"));

    // `/`: only the rows whose symbol contains the text.
    t.send_keys(&["/", "w", "a", "r", "m", "Enter"]);
    // Applied (the title says so), not just typed (the key line says so while typing).
    let warm: Vec<&(String, Vec<String>)> =
        rows.iter().filter(|(r, _)| r.contains("] warm")).collect();
    assert!(!warm.is_empty());
    t.wait_screen(WAIT, |s| {
        s.lines()
            .next()
            .is_some_and(|l| l.contains("Symbol filter: warm"))
            && warm.iter().all(|(row, _)| shows_row(s, row))
            && !shows_row(s, first)
    });
    t.send_keys(&["Escape"]);
    t.wait_screen(WAIT, |s| {
        !s.contains("Symbol filter") && shows_row(s, first)
    });

    // `d`: zoomed into the selected row's shared object, the rows `--dso` keeps.
    let dso_rows = text_rows(&[
        "report", "--stdio", "-i", file, "--symfs", symfs, "--dso", "work",
    ]);
    t.send_keys(&["d"]);
    t.wait_screen(WAIT, |s| {
        s.contains("DSO: work")
            && dso_rows.iter().take(8).all(|(row, _)| shows_row(s, row))
            && !s.contains("[kernel.kallsyms]")
    });
    t.send_keys(&["Escape"]);
    t.wait_screen(WAIT, |s| {
        !s.contains("DSO: work") && s.contains("[kernel.kallsyms]")
    });

    // `h`: the keys; `q` back, `q` quits with status 0.
    t.send_keys(&["h"]);
    t.wait_screen(WAIT, |s| s.contains("zoom into the selected row's thread"));
    t.send_keys(&["q"]);
    t.wait_screen(WAIT, |s| s.contains("Samples: 540"));
    t.send_keys(&["q"]);
    assert_eq!(t.wait_exit(WAIT), 0);
}

/// At 80x24 the view fits: title, headers, rows and the key line; `--stdio` on the same
/// terminal prints the text report instead.
#[test]
fn report_view_fits_80_by_24_and_stdio_prints_text() {
    if !available() {
        eprintln!("skipped: tmux not installed");
        return;
    }
    let r = fixtures();
    let file = r.join("plain.hrec");
    let symfs = r.join("root");
    let (file, symfs) = (file.to_str().unwrap(), symfs.to_str().unwrap());
    let rows = text_rows(&["report", "--stdio", "-i", file, "--symfs", symfs]);
    assert!(!rows.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let hrec = env!("CARGO_BIN_EXE_hrec");
    let t = Tmux::start(
        dir.path(),
        80,
        24,
        &format!("{hrec} report -i {file} --symfs {symfs}"),
    );
    // The whole first screen (a capture may fall inside a redraw: wait for all of it).
    let screen = t.wait_screen(WAIT, |s| {
        s.contains("Samples:")
            && s.contains("h:help")
            && rows.iter().take(15).all(|(row, _)| {
                let cut: String = row.chars().take(79).collect();
                s.lines()
                    .any(|l| l.get(1..).is_some_and(|x| x.trim_end() == cut.trim_end()))
            })
    });
    assert_eq!(screen.lines().count(), 24, "{screen}");
    // Moving past the last shown row scrolls: the selected row stays on the screen.
    let down = vec!["Down"; rows.len().min(40)];
    t.send_keys(&down);
    let last = &rows[rows.len().min(40) - 1].0;
    let cut: String = last.chars().take(79).collect();
    t.wait_screen(WAIT, |s| {
        s.lines()
            .any(|l| l.get(1..).is_some_and(|x| x.trim_end() == cut.trim_end()))
    });
    t.send_keys(&["q"]);
    assert_eq!(t.wait_exit(WAIT), 0);

    let t = Tmux::start(
        dir.path(),
        80,
        24,
        &format!("{hrec} report --stdio -i {file} --symfs {symfs}"),
    );
    assert_eq!(t.wait_exit(WAIT), 0);
    let log = t.wait_log(WAIT, |l| l.contains("# Samples: "));
    assert!(
        !log.contains("\u{1b}[?1049h"),
        "--stdio entered the alternate screen"
    );
}

/// `--tui` without a terminal is one usage line, exit 2 (here stdin and stdout are pipes).
#[test]
fn tui_without_a_terminal_is_one_line() {
    let r = fixtures();
    let file = r.join("plain.hrec");
    let dir = tempfile::tempdir().unwrap();
    let o = hrec_in(
        dir.path(),
        &["report", "--tui", "-i", file.to_str().unwrap()],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("hrec: error: --tui needs a terminal"),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");
}

/// The interactive view sorted by memory keys (a hand-built `perf mem record` file): the
/// rows the text report prints, data objects and data sources as cells.
#[test]
fn report_view_sorts_by_memory_keys_as_the_text_does() {
    if !available() {
        eprintln!("skipped: tmux not installed");
        return;
    }
    use support::memdata::{accesses, build};
    let dir = tempfile::tempdir().unwrap();
    let probe = build(dir.path(), &[]);
    build(dir.path(), &accesses(&probe.objects));
    let file = dir.path().join("perf.data");
    let file = file.to_str().unwrap();
    let keys = "dso_daddr,mem,symbol_daddr";
    let rows = text_rows(&["report", "--stdio", "--sort", keys, "-i", file]);
    assert!(rows.len() >= 3, "{rows:?}");
    let hrec = env!("CARGO_BIN_EXE_hrec");
    let t = Tmux::start(
        dir.path(),
        160,
        40,
        &format!("{hrec} report --sort {keys} -i {file}"),
    );
    let screen = t.wait_screen(WAIT, |s| {
        s.contains("Data Object")
            && s.contains("Memory access")
            && rows.iter().take(20).all(|(row, _)| shows_row(s, row))
    });
    assert!(screen.contains("Data Symbol"), "{screen}");
    t.send_keys(&["q"]);
    assert_eq!(t.wait_exit(WAIT), 0);
}

/// With Intel's metrics per row (`--td-level 3`, on the shipped synthetic level-3 recording),
/// a pane under the rows shows the selected row's metric tree, the text report's lines:
/// moved to `divide`, it shows Core Bound's Divider on the bottleneck path; `m` hides it and
/// shows it again.
#[test]
fn report_view_shows_the_selected_rows_metric_tree() {
    if !available() {
        eprintln!("skipped: tmux not installed");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let perfmon = root.join("../shared/perfmon");
    if !perfmon.join("mapfile.csv").exists() {
        eprintln!("skipped: ../shared/perfmon not found");
        return;
    }
    let file = "examples/recordings/tdemo-graniterapids-l3.synthetic.hrec";
    let args = [
        "report",
        "-i",
        file,
        "--td-level",
        "3",
        "--perfmon",
        perfmon.to_str().unwrap(),
        "--sort",
        "sym",
        "--no-children",
    ];
    // The text report's rows, and divide's metric lines under its row.
    let o = hrec_in(root, &[&args[..], &["--stdio", "-g", "none"]].concat());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains("%  ") && l.contains("[.] "))
        .collect();
    let at = rows
        .iter()
        .position(|l| l.ends_with("[.] divide"))
        .unwrap_or_else(|| panic!("no divide row: {out}"));
    let tree: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.ends_with("[.] divide"))
        .skip(2)
        .take_while(|l| l.trim_start().starts_with('|'))
        .map(|l| l.split_once("|  ").unwrap().1.trim_end())
        .collect();
    assert!(
        tree.iter()
            .any(|l| l.trim_start().starts_with("tma_divider") && l.ends_with("<==")),
        "{out}"
    );
    let dir = tempfile::tempdir().unwrap();
    let hrec = env!("CARGO_BIN_EXE_hrec");
    let t = Tmux::start(
        dir.path(),
        120,
        40,
        &format!("cd '{}' && {hrec} {}", root.display(), args.join(" ")),
    );
    // The pane under the rows: the first row's tree.
    t.wait_screen(WAIT, |s| {
        s.contains("m:metrics") && s.contains("(m: hide)") && s.contains("tma_backend_bound")
    });
    t.send_keys(&vec!["Down"; at]);
    let pane_shows_divide = |s: &str| {
        let lines: Vec<&str> = s.lines().map(str::trim_end).collect();
        lines
            .iter()
            .position(|l| l.starts_with("[.] divide  (m: hide)"))
            .is_some_and(|start| {
                tree.iter()
                    .enumerate()
                    .all(|(i, want)| lines.get(start + 1 + i) == Some(want))
            })
    };
    let screen = t.wait_screen(WAIT, pane_shows_divide);
    assert!(screen.contains(&format!("row {}/", at + 1)), "{screen}");
    // The pane's lines are the text report's.
    assert!(screen.contains("tma_divider"), "{screen}");
    // `m` hides the pane, and shows it again.
    t.send_keys(&["m"]);
    let row = format!("row {}/", at + 1);
    t.wait_screen(WAIT, |s| {
        !s.contains("tma_divider") && !s.contains("(m: hide)") && s.contains(&row)
    });
    t.send_keys(&["m"]);
    t.wait_screen(WAIT, pane_shows_divide);
    t.send_keys(&["q"]);
    assert_eq!(t.wait_exit(WAIT), 0);
}
