//! `hrec c2c report`'s interactive view, as perf c2c report's TUI: the Shared Data Cache
//! Line Table's rows, one selected; `d` (or Enter) opens the selected line's Pareto (its
//! offsets, code addresses, shares, latencies, CPUs and nodes), `Esc` goes back. The rows and
//! the Pareto are the `--stdio` text's own lines ([`super::c2c::table_lines`],
//! [`super::c2c::pareto_lines`]), so the view shows the same numbers; lines wider than the
//! terminal scroll sideways.

use std::io;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::c2c::{View, pareto_lines, table_lines};
use super::tui::{Action, Screen, run_screen};
use crate::analysis::c2c::C2c;

/// The keys, as `h` shows them.
const HELP: &[&str] = &[
    "hrec c2c report: keys",
    "",
    "  Up/Down, j/k    select a cache line (in a line: scroll)",
    "  PgUp/PgDn       a page up or down",
    "  Home/End        first or last",
    "  Left/Right      scroll sideways",
    "  d, Enter        the selected line's offsets (its Pareto)",
    "  Esc, Backspace  back",
    "  h, ?            this help",
    "  q, Ctrl-C       quit (in a line or the help: back)",
];

/// What is on the screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The cache lines.
    Lines,
    /// Line `i`'s Pareto, from body line `top`.
    Line { i: usize, top: usize },
    /// The keys.
    Help,
}

/// The report's state (see the module docs).
#[derive(Debug)]
pub struct C2cView {
    title: String,
    head: Vec<String>,
    rows: Vec<String>,
    pareto_head: Vec<String>,
    blocks: Vec<Vec<String>>,
    addrs: Vec<u64>,
    selected: usize,
    top: usize,
    left: usize,
    page: usize,
    mode: Mode,
}

/// Columns moved by Left/Right.
const SIDEWAYS: usize = 8;

/// The header lines of a table less perf's bare `#` lines around them.
fn headers(lines: Vec<String>) -> Vec<String> {
    lines.into_iter().filter(|l| l != "#").collect()
}

impl C2cView {
    /// A view of `c` as `hrec c2c report --stdio` with `view` prints it; `sort_on` is the
    /// display's name ("Total HITMs").
    pub fn new(c: &C2c, view: &View, sort_on: &str) -> C2cView {
        let (head, rows) = table_lines(c);
        let (pareto_head, blocks) = pareto_lines(c, view);
        C2cView {
            title: format!(
                "Shared Data Cache Line Table     ({} entries, sorted on {sort_on})",
                rows.len()
            ),
            head: headers(head),
            rows,
            pareto_head: headers(pareto_head),
            blocks,
            addrs: c.lines.iter().map(|l| l.addr).collect(),
            selected: 0,
            top: 0,
            left: 0,
            page: 20,
            mode: Mode::Lines,
        }
    }

    /// Handles a key.
    pub fn key(&mut self, k: KeyEvent) -> Action {
        if k.kind == KeyEventKind::Release {
            return Action::Continue;
        }
        if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
            return Action::Quit;
        }
        match k.code {
            KeyCode::Left => self.left = self.left.saturating_sub(SIDEWAYS),
            KeyCode::Right => self.left += SIDEWAYS,
            _ => {}
        }
        match self.mode {
            Mode::Lines => {
                let last = self.rows.len().saturating_sub(1);
                match k.code {
                    KeyCode::Char('q') | KeyCode::Esc => return Action::Quit,
                    KeyCode::Down | KeyCode::Char('j') => {
                        self.selected = (self.selected + 1).min(last)
                    }
                    KeyCode::Up | KeyCode::Char('k') => {
                        self.selected = self.selected.saturating_sub(1)
                    }
                    KeyCode::PageDown => self.selected = (self.selected + self.page).min(last),
                    KeyCode::PageUp => self.selected = self.selected.saturating_sub(self.page),
                    KeyCode::Home => self.selected = 0,
                    KeyCode::End => self.selected = last,
                    KeyCode::Char('d') | KeyCode::Enter if !self.blocks.is_empty() => {
                        self.mode = Mode::Line {
                            i: self.selected,
                            top: 0,
                        };
                    }
                    KeyCode::Char('h') | KeyCode::Char('?') => self.mode = Mode::Help,
                    _ => {}
                }
            }
            Mode::Line { i, top } => {
                let last = self.blocks.get(i).map_or(0, |b| b.len().saturating_sub(1));
                let top = match k.code {
                    KeyCode::Char('q') | KeyCode::Esc | KeyCode::Backspace => {
                        self.mode = Mode::Lines;
                        return Action::Continue;
                    }
                    KeyCode::Down | KeyCode::Char('j') => (top + 1).min(last),
                    KeyCode::Up | KeyCode::Char('k') => top.saturating_sub(1),
                    KeyCode::PageDown => (top + self.page).min(last),
                    KeyCode::PageUp => top.saturating_sub(self.page),
                    KeyCode::Home => 0,
                    KeyCode::End => last,
                    _ => top,
                };
                self.mode = Mode::Line { i, top };
            }
            Mode::Help => {
                if matches!(
                    k.code,
                    KeyCode::Char('q') | KeyCode::Esc | KeyCode::Backspace | KeyCode::Char('h')
                ) {
                    self.mode = Mode::Lines;
                }
            }
        }
        Action::Continue
    }

    /// Draws the view into `f`.
    pub fn draw(&mut self, f: &mut ratatui::Frame<'_>) {
        let [title, body, status] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(1),
            Constraint::Length(1),
        ])
        .areas(f.area());
        let height = usize::from(body.height);
        let reverse = Style::default().add_modifier(Modifier::REVERSED);
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let left = self.left;
        let cut = |l: &str| -> String { l.chars().skip(left).collect() };
        let (heading, lines): (String, Vec<Line>) = match self.mode {
            Mode::Lines => {
                let room = height.saturating_sub(self.head.len()).max(1);
                self.page = room;
                if self.selected < self.top {
                    self.top = self.selected;
                } else if self.selected >= self.top + room {
                    self.top = self.selected + 1 - room;
                }
                let mut lines: Vec<Line> = self.head.iter().map(|l| Line::raw(cut(l))).collect();
                for (i, r) in self.rows.iter().enumerate().skip(self.top).take(room) {
                    if i == self.selected {
                        lines.push(Line::styled(cut(r), reverse));
                    } else {
                        lines.push(Line::raw(cut(r)));
                    }
                }
                (self.title.clone(), lines)
            }
            Mode::Line { i, top } => {
                self.page = height.saturating_sub(self.pareto_head.len()).max(1);
                let block = self.blocks.get(i).map_or(&[][..], Vec::as_slice);
                let lines = self
                    .pareto_head
                    .iter()
                    .chain(block.iter().skip(top))
                    .map(|l| Line::raw(cut(l)))
                    .collect();
                let addr = self.addrs.get(i).copied().unwrap_or(0);
                (
                    format!("Cacheline {addr:#x}     (line {i} of {})", self.rows.len()),
                    lines,
                )
            }
            Mode::Help => (
                "Help".to_string(),
                HELP.iter().map(|l| Line::raw(*l)).collect(),
            ),
        };
        f.render_widget(Paragraph::new(Line::styled(heading, bold)), title);
        f.render_widget(Paragraph::new(lines), body);
        let keys = match self.mode {
            Mode::Lines if self.rows.is_empty() => "no shared cache line  q: quit  h: help",
            Mode::Lines => "d/Enter: the line's offsets  Left/Right: scroll  h: help  q: quit",
            _ => "Esc: back  Up/Down/PgUp/PgDn: scroll  Left/Right: sideways  q: back",
        };
        f.render_widget(Paragraph::new(Line::styled(keys, reverse)), status);
    }
}

impl Screen for C2cView {
    fn draw(&mut self, f: &mut ratatui::Frame<'_>) {
        C2cView::draw(self, f)
    }
    fn key(&mut self, k: KeyEvent) -> Action {
        C2cView::key(self, k)
    }
}

/// Runs `view` on the terminal of stdout until it quits.
pub fn run(view: &mut C2cView) -> io::Result<()> {
    run_screen(view)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::c2c::{C2cLine, C2cOffset};

    fn press(v: &mut C2cView, code: KeyCode) -> Action {
        v.key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn screen(v: &mut C2cView) -> String {
        let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(250, 20)).unwrap();
        t.draw(|f| v.draw(f)).unwrap();
        let buf = t.backend().buffer();
        let area = buf.area;
        (0..area.height)
            .map(|y| {
                (0..area.width)
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Two lines; `d` opens the second's Pareto (its offset row under its address), `Esc`
    /// goes back, `q` quits.
    #[test]
    fn lines_then_a_lines_offsets() {
        let line = |addr: u64, offset: u64| C2cLine {
            addr,
            symbol: "[.] x".into(),
            dso: "a".into(),
            stats: Default::default(),
            offsets: vec![C2cOffset {
                offset,
                symbol: Some("[.] writer".into()),
                ..C2cOffset::default()
            }],
        };
        let c = C2c {
            lines: vec![line(0x1000, 0x8), line(0x2040, 0x18)],
            ..C2c::default()
        };
        let mut v = C2cView::new(&c, &View::default(), "Total HITMs");
        let s = screen(&mut v);
        assert!(s.contains("(2 entries, sorted on Total HITMs)"), "{s}");
        assert!(s.contains("0x1000") && s.contains("0x2040"), "{s}");
        press(&mut v, KeyCode::Down);
        press(&mut v, KeyCode::Char('d'));
        let s = screen(&mut v);
        assert!(s.contains("Cacheline 0x2040"), "{s}");
        assert!(s.contains("0x18") && !s.contains("0x1000"), "{s}");
        assert_eq!(press(&mut v, KeyCode::Esc), Action::Continue);
        assert!(screen(&mut v).contains("entries"));
        // Sideways: the first columns leave the screen.
        press(&mut v, KeyCode::Right);
        assert!(!screen(&mut v).contains("# Index"));
        press(&mut v, KeyCode::Left);
        assert_eq!(press(&mut v, KeyCode::Char('q')), Action::Quit);
    }
}
