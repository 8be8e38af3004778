//! `hrec report`'s interactive view, as perf report's TUI: the rows of the text report (the
//! same lines, so the same columns and numbers, TopDown and retire latency included), one
//! selected, its call graph opened and closed in place, the selected function annotated,
//! the rows narrowed to a symbol filter, zoomed into the selected row's thread, shared object
//! or command (stacked, `Esc` goes back one), and the sampling events switched.
//!
//! Zooms and the symbol filter are sample filters of the report ([`Filters`]): the table is
//! made again from the profile with them, as `hrec report --tid/--dso/--comm/--symbol-filter`
//! would print it, and with perf's default `--percentage absolute` a zoomed row keeps its share
//! of all samples.
//!
//! [`View`] holds the state and draws into any ratatui backend (unit-tested on a buffer);
//! [`run`] drives it on the terminal: raw mode and the alternate screen, a redraw after each
//! key or resize (ratatui redraws only the cells that changed, so nothing flickers), and the
//! terminal restored however it ends.
//!
//! The keys are perf's where perf has one: Enter (or `+`, →) opens and closes the selected
//! row's call graph, `a` annotates its function, `/` filters the rows by symbol, `t`, `d` and
//! `c` zoom into its thread, shared object and command, `s` switches the event, Esc goes
//! back, `h` or `?` lists the keys.
//!
//! With Intel's metrics per row (`--td-level 3`, `--metrics LIST`: the report's
//! [`MetricReport`]), a pane under the rows shows the selected row's metric tree, the lines
//! the text report prints under the row ([`MetricReport::tree_lines`]: indented by level, the
//! bottleneck path marked `<==`); `m` hides and shows it. The metrics are the report's, made
//! before any zoom or filter: a zoomed view says so in the pane's title.
//!
//! Annotating goes through an [`Annotator`] the caller hands
//! in (`hrec report` runs `analysis::annotate`), so the view itself reads no binary. The same
//! terminal loop drives `c2c report`'s view (`c2c_tui`), and [`LiveScreen`] is `hrec top`'s
//! screen.

use std::collections::HashSet;
use std::io::{self, Write};

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::crossterm::{execute, terminal};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use crate::analysis::hist::{self, Filters, HistOptions, Table};
use crate::analysis::metrics::MetricReports;
use crate::analysis::profile::Profile;
use crate::output::report::{ReportStyle, TableLines, table_lines};

/// Annotates a function for the `a` key: `(symbol, shared object, event index)` to the lines
/// of `hrec annotate`'s text for it.
pub type Annotator<'a> = dyn Fn(&str, &str, usize) -> Vec<String> + 'a;

/// The keys, as `h` shows them.
const HELP: &[&str] = &[
    "hrec report: keys",
    "",
    "  Up/Down, j/k    select a row",
    "  PgUp/PgDn       a page up or down",
    "  Home/End        first or last row",
    "  Enter, +        open or close the row's call graph",
    "  e / E           open / close every call graph",
    "  a               annotate the selected function",
    "  /               show only symbols containing a text (empty: all)",
    "  t               zoom into the selected row's thread",
    "  d               zoom into the selected row's shared object",
    "  c               zoom into the selected row's command",
    "  s               next sampling event",
    "  m               show or hide the selected row's metric tree (--td-level 3, --metrics)",
    "  Esc, Backspace  back: close a view, undo the last zoom or the filter",
    "  h, ?            this help",
    "  q, Ctrl-C       quit (in a view: back)",
];

/// What is on the screen.
#[derive(Debug, Clone, PartialEq)]
enum Mode {
    /// The rows.
    Table,
    /// A page of text (help, annotation) with its title and first shown line.
    Text {
        title: String,
        lines: Vec<String>,
        top: usize,
    },
    /// Typing the symbol filter.
    Input(String),
}

/// What a key asks of the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Draw again and wait for the next key.
    Continue,
    /// Leave.
    Quit,
}

/// One zoom level: what it says in the title and the filters it adds.
#[derive(Debug, Clone)]
struct Zoom {
    label: String,
    filters: Filters,
}

/// The report's state (see the module docs).
pub struct View<'a> {
    p: &'a Profile,
    base: HistOptions,
    style: ReportStyle,
    /// Intel's metrics per row, shown in the pane rather than under the rows.
    metrics: Option<std::sync::Arc<MetricReports>>,
    /// Whether the metric pane is shown (`m`).
    show_metrics: bool,
    title: String,
    annotate: &'a Annotator<'a>,
    zooms: Vec<Zoom>,
    sym_filter: Option<String>,
    tables: Vec<Table>,
    event: usize,
    lines: TableLines,
    selected: usize,
    expanded: HashSet<usize>,
    mode: Mode,
    /// The body's height at the last draw (for paging).
    page: usize,
    /// The first body line shown.
    top: usize,
    message: Option<String>,
}

impl std::fmt::Debug for View<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View")
            .field("title", &self.title)
            .field("event", &self.event)
            .field("rows", &self.lines.rows.len())
            .field("selected", &self.selected)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl<'a> View<'a> {
    /// A view of `p` as `hrec report` with `hist` and `style` would print it; `title` names
    /// the recording.
    pub fn new(
        p: &'a Profile,
        hist: HistOptions,
        mut style: ReportStyle,
        title: String,
        annotate: &'a Annotator<'a>,
    ) -> View<'a> {
        let metrics = style.metrics.take();
        let mut v = View {
            p,
            base: hist,
            style,
            show_metrics: metrics.is_some(),
            metrics,
            title,
            annotate,
            zooms: Vec::new(),
            sym_filter: None,
            tables: Vec::new(),
            event: 0,
            lines: TableLines::default(),
            selected: 0,
            expanded: HashSet::new(),
            mode: Mode::Table,
            page: 20,
            top: 0,
            message: None,
        };
        v.rebuild();
        v
    }

    /// The report's options with the zooms and the symbol filter applied.
    fn options(&self) -> HistOptions {
        let mut o = self.base.clone();
        for z in &self.zooms {
            let f = &z.filters;
            o.filters.comms.extend(f.comms.iter().cloned());
            o.filters.tids.extend(f.tids.iter().copied());
            o.filters.dsos.extend(f.dsos.iter().cloned());
        }
        // A second zoom of the same kind narrows to the newest one.
        if let Some(z) = self
            .zooms
            .iter()
            .rev()
            .find(|z| !z.filters.comms.is_empty())
        {
            o.filters.comms = z.filters.comms.clone();
        }
        if let Some(z) = self.zooms.iter().rev().find(|z| !z.filters.tids.is_empty()) {
            o.filters.tids = z.filters.tids.clone();
        }
        if let Some(z) = self.zooms.iter().rev().find(|z| !z.filters.dsos.is_empty()) {
            o.filters.dsos = z.filters.dsos.clone();
        }
        o
    }

    /// Makes the tables again after a change of filters.
    fn rebuild(&mut self) {
        let o = self.options();
        self.tables = hist::tables(self.p, &o);
        if self.event >= self.tables.len() {
            self.event = 0;
        }
        self.relines();
    }

    /// The current event's lines.
    fn relines(&mut self) {
        let o = self.options();
        self.lines = match self.tables.get(self.event) {
            Some(t) => {
                let mut lines = table_lines(self.p, t, &o, &self.style);
                // perf's `/`: the rows whose symbol contains the text (shares unchanged).
                if let Some(f) = &self.sym_filter {
                    // The column in the table's row keys ([`hist::HistOptions::columns`]).
                    let sym_col = o
                        .columns(t.event)
                        .iter()
                        .position(|&c| o.sort[c] == hist::SortKey::Sym);
                    lines.rows.retain(|rl| {
                        t.rows.get(rl.row).is_some_and(|r| match sym_col {
                            Some(i) => r.key.get(i).is_some_and(|c| c.contains(f.as_str())),
                            None => self
                                .p
                                .locs
                                .get(r.example_loc as usize)
                                .is_some_and(|l| l.sym_name().contains(f.as_str())),
                        })
                    });
                }
                lines
            }
            None => TableLines::default(),
        };
        self.selected = 0;
        self.top = 0;
        self.expanded.clear();
    }

    fn table(&self) -> Option<&Table> {
        self.tables.get(self.event)
    }

    /// The selected row of the table.
    fn selected_row(&self) -> Option<&hist::Row> {
        let r = self.lines.rows.get(self.selected)?;
        self.table()?.rows.get(r.row)
    }

    /// Handles one key.
    pub fn key(&mut self, k: KeyEvent) -> Action {
        if k.kind == KeyEventKind::Release {
            return Action::Continue;
        }
        if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
            return Action::Quit;
        }
        self.message = None;
        match std::mem::replace(&mut self.mode, Mode::Table) {
            Mode::Input(mut text) => {
                match k.code {
                    KeyCode::Enter => {
                        self.sym_filter = (!text.is_empty()).then_some(text);
                        self.relines();
                    }
                    KeyCode::Esc => {}
                    KeyCode::Backspace => {
                        text.pop();
                        self.mode = Mode::Input(text);
                    }
                    KeyCode::Char(c) => {
                        text.push(c);
                        self.mode = Mode::Input(text);
                    }
                    _ => self.mode = Mode::Input(text),
                }
                Action::Continue
            }
            Mode::Text { title, lines, top } => {
                let last = lines.len().saturating_sub(1);
                let top = match k.code {
                    KeyCode::Esc | KeyCode::Char('q') | KeyCode::Backspace | KeyCode::Left => {
                        return Action::Continue;
                    }
                    KeyCode::Down | KeyCode::Char('j') => (top + 1).min(last),
                    KeyCode::Up | KeyCode::Char('k') => top.saturating_sub(1),
                    KeyCode::PageDown | KeyCode::Char(' ') => (top + self.page).min(last),
                    KeyCode::PageUp => top.saturating_sub(self.page),
                    KeyCode::Home => 0,
                    KeyCode::End => last.saturating_sub(self.page.saturating_sub(1)),
                    _ => top,
                };
                self.mode = Mode::Text { title, lines, top };
                Action::Continue
            }
            Mode::Table => self.table_key(k.code),
        }
    }

    fn table_key(&mut self, code: KeyCode) -> Action {
        let n = self.lines.rows.len();
        match code {
            KeyCode::Char('q') => return Action::Quit,
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(n.saturating_sub(1))
            }
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::PageDown => {
                self.selected = (self.selected + self.page).min(n.saturating_sub(1));
            }
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(self.page),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = n.saturating_sub(1),
            KeyCode::Enter | KeyCode::Char('+') | KeyCode::Right => {
                if self
                    .lines
                    .rows
                    .get(self.selected)
                    .is_some_and(|r| !r.tree.is_empty())
                {
                    if !self.expanded.remove(&self.selected) {
                        self.expanded.insert(self.selected);
                    }
                } else if n > 0 {
                    self.message = Some(if self.p.callchains {
                        "this row has no call graph".into()
                    } else {
                        "no call graphs: the recording has no call chains (record with -g or --call-graph dwarf)".into()
                    });
                }
            }
            KeyCode::Char('e') => {
                self.expanded = (0..n)
                    .filter(|&i| !self.lines.rows[i].tree.is_empty())
                    .collect();
            }
            KeyCode::Char('E') => self.expanded.clear(),
            KeyCode::Char('a') => self.annotate_selected(),
            KeyCode::Char('/') => {
                self.mode = Mode::Input(self.sym_filter.clone().unwrap_or_default());
            }
            KeyCode::Char(c @ ('t' | 'd' | 'c')) => self.zoom(c),
            KeyCode::Char('m') => {
                if self.metrics.is_some() {
                    self.show_metrics = !self.show_metrics;
                } else {
                    self.message = Some(
                        "no metrics: report a recording of `record --td-level 3` or `-M` with --td-level 3 or --metrics LIST".into(),
                    );
                }
            }
            KeyCode::Char('s') => {
                if self.tables.len() > 1 {
                    self.event = (self.event + 1) % self.tables.len();
                    self.relines();
                } else {
                    self.message = Some("the recording has one sampling event".into());
                }
            }
            KeyCode::Esc | KeyCode::Backspace | KeyCode::Left => self.back(),
            KeyCode::Char('h' | '?') | KeyCode::F(1) => {
                self.mode = Mode::Text {
                    title: "Help".into(),
                    lines: HELP.iter().map(|s| s.to_string()).collect(),
                    top: 0,
                };
            }
            _ => {}
        }
        Action::Continue
    }

    /// `Esc`: drops the symbol filter, else the last zoom.
    fn back(&mut self) {
        if self.sym_filter.take().is_some() {
            self.relines();
        } else if self.zooms.pop().is_some() {
            self.rebuild();
        }
    }

    /// `t`, `d`, `c`: narrows to the selected row's thread, shared object or command.
    fn zoom(&mut self, what: char) {
        let Some(r) = self.selected_row() else {
            return;
        };
        let p = self.p;
        let g = p.groups.get(r.example as usize);
        let loc = p.locs.get(r.example_loc as usize);
        let mut filters = Filters::default();
        let label = match (what, g, loc) {
            ('t', Some(g), _) => {
                let comm = p.comms.get(g.comm as usize).map_or("?", |c| c);
                filters.tids.push(g.tid);
                format!("Thread: {comm}({})", g.tid)
            }
            ('c', Some(g), _) => {
                let comm = p.comms.get(g.comm as usize).map_or("?", |c| c).to_string();
                filters.comms.push(comm.clone());
                format!("Command: {comm}")
            }
            ('d', _, Some(l)) => {
                filters.dsos.push(l.dso.to_string());
                format!("DSO: {}", l.dso)
            }
            _ => return,
        };
        self.zooms.push(Zoom { label, filters });
        self.rebuild();
    }

    /// `a`: the annotation of the selected row's function.
    fn annotate_selected(&mut self) {
        let Some(r) = self.selected_row() else {
            return;
        };
        let Some(loc) = self.p.locs.get(r.example_loc as usize) else {
            return;
        };
        let Some(sym) = loc.sym.clone() else {
            self.message = Some("no symbol to annotate: the address is unresolved".into());
            return;
        };
        let event = self.table().map_or(0, |t| t.event);
        let lines = (self.annotate)(&sym, &loc.dso, event);
        if lines.is_empty() {
            self.message = Some(format!("cannot annotate {sym}: no code or samples for it"));
            return;
        }
        self.mode = Mode::Text {
            title: format!("Annotate {sym} ({})", loc.dso),
            lines,
            top: 0,
        };
    }

    /// The body's lines: each row (marked `+` when it has a closed call graph, `-` when open)
    /// and the open trees; with the index of the first line of the selected row.
    fn body(&self) -> (Vec<(String, bool)>, usize) {
        let mut out = Vec::new();
        let mut at = 0;
        for (i, r) in self.lines.rows.iter().enumerate() {
            let open = self.expanded.contains(&i);
            let mark = match (r.tree.is_empty(), open) {
                (true, _) => ' ',
                (false, false) => '+',
                (false, true) => '-',
            };
            if i == self.selected {
                at = out.len();
            }
            let mut line = String::with_capacity(r.line.len());
            line.push(mark);
            line.push_str(r.line.get(1..).unwrap_or(""));
            out.push((line, i == self.selected));
            if open {
                out.extend(r.tree.iter().map(|l| (l.clone(), false)));
            }
        }
        (out, at)
    }

    /// The metric pane's title and lines for the selected row, when the pane is shown.
    fn metric_pane(&self) -> Option<(String, Vec<String>)> {
        let all = self.metrics.as_ref().filter(|_| self.show_metrics)?;
        // The report of the shown table's metric source (the E-cores' on an E-core table).
        let m = self
            .table()
            .and_then(|t| all.for_event(t.event))
            .or_else(|| all.reports.first())?;
        let unzoomed = if self.zooms.is_empty() {
            ""
        } else {
            " (of the whole report: zooms do not apply)"
        };
        let Some(r) = self.selected_row() else {
            return Some((format!("Intel's metrics  (m: hide){unzoomed}"), Vec::new()));
        };
        let name = r.key.last().map_or("", String::as_str);
        match m.rows.rows.get(&r.key) {
            Some(rm) => {
                let mut lines = m.tree_lines(rm);
                let head = if lines.is_empty() {
                    String::new()
                } else {
                    lines.remove(0)
                };
                Some((format!("{name}  (m: hide){unzoomed}  {head}"), lines))
            }
            None => Some((
                format!("{name}  (m: hide){unzoomed}  Intel's metrics"),
                vec!["  no metrics for this row (no reads of the metric groups)".into()],
            )),
        }
    }

    /// The title line: the event's samples and count, then the zooms and the filter.
    fn title_line(&self) -> String {
        let mut s = match (
            self.table(),
            self.table().and_then(|t| self.p.events.get(t.event)),
        ) {
            (Some(t), Some(e)) => format!(
                "Samples: {} of event '{}', Event count (approx.): {}",
                t.base_samples, e.name, t.base_period
            ),
            _ => format!("{}: no samples", self.title),
        };
        for z in &self.zooms {
            s.push_str(", ");
            s.push_str(&z.label);
        }
        if let Some(f) = &self.sym_filter {
            s.push_str(&format!(", Symbol filter: {f}"));
        }
        s
    }

    /// Draws the view into `area` of a frame.
    pub fn draw(&mut self, f: &mut ratatui::Frame<'_>) {
        let area = f.area();
        let pane = match &self.mode {
            Mode::Table | Mode::Input(_) => self.metric_pane(),
            Mode::Text { .. } => None,
        };
        // The pane: its title and lines, at most half of what the rows and it share.
        let pane_height = pane.as_ref().map_or(0, |(_, lines)| {
            let room = area.height.saturating_sub(3) / 2;
            (lines.len() as u16 + 1).min(room)
        });
        let [title, head, body, pane_area, status] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Length(1),
            Constraint::Min(1),
            Constraint::Length(pane_height),
            Constraint::Length(1),
        ])
        .areas(area);
        self.page = usize::from(body.height).max(1);
        if let Some((t, lines)) = &pane
            && pane_area.height > 0
        {
            let mut shown = vec![Line::styled(
                t.clone(),
                Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            )];
            shown.extend(
                lines
                    .iter()
                    .take(usize::from(pane_area.height) - 1)
                    .map(|l| Line::raw(l.clone())),
            );
            f.render_widget(Paragraph::new(shown), pane_area);
        }
        let reverse = Style::default().add_modifier(Modifier::REVERSED);
        let bold = Style::default().add_modifier(Modifier::BOLD);
        match &self.mode {
            Mode::Text {
                title: t,
                lines,
                top,
            } => {
                f.render_widget(Paragraph::new(Line::styled(t.clone(), bold)), title);
                let shown: Vec<Line> = lines
                    .iter()
                    .skip(*top)
                    .take(usize::from(body.height) + 1)
                    .map(|l| Line::raw(l.clone()))
                    .collect();
                f.render_widget(
                    Paragraph::new(shown),
                    Rect {
                        height: body.height + pane_area.height + 1,
                        ..head
                    },
                );
                let pos = format!(
                    "lines {}-{} of {}  Esc/q: back  Up/Down/PgUp/PgDn: scroll",
                    (*top + 1).min(lines.len()),
                    (*top + usize::from(body.height) + 1).min(lines.len()),
                    lines.len()
                );
                f.render_widget(Paragraph::new(Line::styled(pos, reverse)), status);
                return;
            }
            Mode::Table | Mode::Input(_) => {}
        }
        f.render_widget(Paragraph::new(Line::styled(self.title_line(), bold)), title);
        let header = format!(" {}", self.lines.head.get(1..).unwrap_or(""));
        f.render_widget(Paragraph::new(Line::styled(header, bold)), head);
        let (lines, at) = self.body();
        let h = usize::from(body.height).max(1);
        // Keep the selected row in view, with as much of its open tree as fits.
        if at < self.top {
            self.top = at;
        } else if at >= self.top + h {
            self.top = at + 1 - h;
        }
        let shown: Vec<Line> = lines
            .iter()
            .skip(self.top)
            .take(h)
            .map(|(l, sel)| {
                if *sel {
                    Line::styled(l.clone(), reverse)
                } else {
                    Line::raw(l.clone())
                }
            })
            .collect();
        if shown.is_empty() {
            let why = if self.zooms.is_empty() && self.sym_filter.is_none() {
                "no rows".to_string()
            } else {
                "no rows match (Esc: back)".to_string()
            };
            f.render_widget(Paragraph::new(why), body);
        } else {
            f.render_widget(Paragraph::new(shown), body);
        }
        let status_text = match (&self.mode, &self.message) {
            (Mode::Input(t), _) => format!("Symbol filter: {t}_   (Enter: apply, Esc: cancel)"),
            (_, Some(m)) => m.clone(),
            _ => format!(
                "row {}/{}  h:help q:quit Enter:call graph a:annotate /:filter t/d/c:zoom s:event{}  {}",
                (self.selected + 1).min(self.lines.rows.len()),
                self.lines.rows.len(),
                if self.metrics.is_some() {
                    " m:metrics"
                } else {
                    ""
                },
                self.title,
            ),
        };
        f.render_widget(Paragraph::new(Line::styled(status_text, reverse)), status);
    }
}

/// Restores the terminal when dropped, however the view ends.
pub(crate) struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
        let _ = execute!(
            io::stdout(),
            terminal::LeaveAlternateScreen,
            ratatui::crossterm::cursor::Show
        );
    }
}

/// Takes over the terminal of stdout (raw mode, alternate screen, no cursor), restored when
/// the second value is dropped.
pub(crate) fn take_terminal() -> io::Result<(Terminal<CrosstermBackend<io::Stdout>>, Restore)> {
    terminal::enable_raw_mode()?;
    let restore = Restore;
    let mut stdout = io::stdout();
    execute!(
        stdout,
        terminal::EnterAlternateScreen,
        ratatui::crossterm::cursor::Hide
    )?;
    let mut term = Terminal::new(CrosstermBackend::new(stdout))?;
    term.clear()?;
    Ok((term, restore))
}

/// A full-screen view driven by keys (the report's, c2c's).
pub(crate) trait Screen {
    /// Draws the view.
    fn draw(&mut self, f: &mut ratatui::Frame<'_>);
    /// What a key asks of the view.
    fn key(&mut self, k: KeyEvent) -> Action;
}

impl Screen for View<'_> {
    fn draw(&mut self, f: &mut ratatui::Frame<'_>) {
        View::draw(self, f)
    }
    fn key(&mut self, k: KeyEvent) -> Action {
        View::key(self, k)
    }
}

/// Runs `view` on the terminal of stdout until it quits.
pub(crate) fn run_screen(view: &mut dyn Screen) -> io::Result<()> {
    let (mut term, _restore) = take_terminal()?;
    loop {
        term.draw(|f| view.draw(f))?;
        match event::read()? {
            Event::Key(k) if view.key(k) == Action::Quit => break,
            Event::Resize(..) => term.autoresize()?,
            _ => {}
        }
    }
    term.backend_mut().flush()?;
    Ok(())
}

/// Runs `view` on the terminal of stdout until it quits.
pub fn run(view: &mut View<'_>) -> io::Result<()> {
    run_screen(view)
}

/// What a key asked of `hrec top`'s live screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveKey {
    /// Nothing (no key, or one that only moved the view).
    None,
    /// `q`, `Esc` or Ctrl-C: stop.
    Quit,
    /// `z`: switch between perf top's decay and zeroing after each refresh.
    ToggleZero,
}

/// `hrec top`'s screen on a terminal: each refresh's text shown whole on the alternate
/// screen, scrolled with the arrow and page keys, with a key line at the bottom; the terminal
/// restored when dropped.
pub struct LiveScreen {
    term: Terminal<CrosstermBackend<io::Stdout>>,
    lines: Vec<String>,
    top: usize,
    zero: bool,
    _restore: Restore,
}

impl std::fmt::Debug for LiveScreen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveScreen")
            .field("lines", &self.lines.len())
            .field("top", &self.top)
            .finish_non_exhaustive()
    }
}

impl LiveScreen {
    /// Takes over the terminal (raw mode, alternate screen); `zero` is top's `-z`.
    pub fn start(zero: bool) -> io::Result<LiveScreen> {
        let (term, restore) = take_terminal()?;
        let mut s = LiveScreen {
            term,
            lines: vec!["hrec top: sampling, the first refresh comes after -d seconds".into()],
            top: 0,
            zero,
            _restore: restore,
        };
        s.draw()?;
        Ok(s)
    }

    /// Shows a refresh.
    pub fn show(&mut self, text: &str) -> io::Result<()> {
        self.lines = text.lines().map(str::to_string).collect();
        self.top = self.top.min(self.lines.len().saturating_sub(1));
        self.draw()
    }

    fn draw(&mut self) -> io::Result<()> {
        let (lines, top, zero) = (&self.lines, self.top, self.zero);
        self.term.draw(|f| {
            let [body, status] =
                Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(f.area());
            let shown: Vec<Line> = lines
                .iter()
                .take(4)
                .chain(lines.iter().skip(4 + top))
                .take(usize::from(body.height))
                .map(|l| Line::raw(l.clone()))
                .collect();
            f.render_widget(Paragraph::new(shown), body);
            let keys = format!(
                "q: quit  z: {}  Up/Down/PgUp/PgDn: scroll",
                if zero {
                    "decay (now: zero each refresh)"
                } else {
                    "zero each refresh (now: decay)"
                }
            );
            f.render_widget(
                Paragraph::new(Line::styled(
                    keys,
                    Style::default().add_modifier(Modifier::REVERSED),
                )),
                status,
            );
        })?;
        Ok(())
    }

    /// Handles the keys typed so far, waiting at most `wait` for the first.
    pub fn poll(&mut self, wait: std::time::Duration) -> io::Result<LiveKey> {
        let mut got = LiveKey::None;
        let mut wait = wait;
        while event::poll(wait)? {
            wait = std::time::Duration::ZERO;
            let page = usize::from(self.term.size()?.height)
                .saturating_sub(6)
                .max(1);
            let last = self.lines.len().saturating_sub(5);
            match event::read()? {
                Event::Key(k) if k.kind != KeyEventKind::Release => match k.code {
                    KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                        return Ok(LiveKey::Quit);
                    }
                    KeyCode::Char('q') | KeyCode::Esc => return Ok(LiveKey::Quit),
                    KeyCode::Char('z') => {
                        self.zero = !self.zero;
                        got = LiveKey::ToggleZero;
                    }
                    KeyCode::Down | KeyCode::Char('j') => self.top = (self.top + 1).min(last),
                    KeyCode::Up | KeyCode::Char('k') => self.top = self.top.saturating_sub(1),
                    KeyCode::PageDown => self.top = (self.top + page).min(last),
                    KeyCode::PageUp => self.top = self.top.saturating_sub(page),
                    KeyCode::Home => self.top = 0,
                    _ => {}
                },
                Event::Resize(..) => self.term.autoresize()?,
                _ => {}
            }
            self.draw()?;
        }
        Ok(got)
    }
}
