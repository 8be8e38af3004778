//! Parser for perf's event syntax.
//!
//! ```text
//! list     := item (',' item)*
//! item     := '{' event (',' event)* '}' [':' mods] | event
//! event    := pmu '/' [term (',' term)*] '/' [[':'] mods]
//!           | name [':' mods]            (cycles, L1-dcache-load-misses, slots, cpu-clock)
//!           | 'r' HEX [':' mods]          (raw config of the core PMU)
//! term     := key ['=' value]             (event=0x3c, period=100000, name=foo, edge, cycles)
//! mods     := [ukhGHIpPSDWeR]+
//! ```
//!
//! The parser only builds syntax with byte positions; what names mean is decided by resolution
//! against the discovered PMUs. Every error carries the position of the offending text so the
//! one-line message can point at it.

use std::fmt;

/// A byte range of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

/// A bad event string, with where it went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct EventError {
    /// The whole string the user gave.
    pub input: String,
    /// Where the problem is.
    pub span: Span,
    /// What is wrong and, where possible, what to write instead.
    pub message: String,
}

impl EventError {
    /// An error at `span` of `input`.
    pub fn new(input: &str, span: Span, message: impl Into<String>) -> Self {
        EventError {
            input: input.to_string(),
            span,
            message: message.into(),
        }
    }
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let start = self.span.start.min(self.input.len());
        let end = self.span.end.clamp(start, self.input.len());
        // Spans always come from char boundaries, but a wrong one must not panic here.
        let frag = self.input.get(start..end).unwrap_or("");
        write!(f, "bad event {:?} at column {}", self.input, start + 1)?;
        if !frag.is_empty() {
            write!(f, " ({frag:?})")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Event modifiers (`:u`, `:ppp`, `:S`, ...). Letters that were not given stay `false`/0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Modifiers {
    /// `u`: count user space.
    pub user: bool,
    /// `k`: count kernel space.
    pub kernel: bool,
    /// `h`: count the hypervisor.
    pub hv: bool,
    /// `G`: count guests.
    pub guest: bool,
    /// `H`: count the host.
    pub host: bool,
    /// `I`: exclude idle.
    pub exclude_idle: bool,
    /// Number of `p` (precise level, at most 3).
    pub precise: u8,
    /// `P`: the highest precise level the PMU supports.
    pub precise_max: bool,
    /// `S`: sample-read (group leader sampling).
    pub sample_read: bool,
    /// `D`: pinned.
    pub pinned: bool,
    /// `W`: weak group.
    pub weak: bool,
    /// `e`: exclusive.
    pub exclusive: bool,
    /// `R`: retire latency (Timed PEBS).
    pub retire_latency: bool,
}

/// The modifier letters perf accepts.
pub const MODIFIER_LETTERS: &str = "ukhGHIpPSDWeR";

impl Modifiers {
    /// Parses a modifier string; on error returns the byte offset of the bad letter and why.
    pub fn parse(s: &str) -> Result<Self, (usize, String)> {
        let mut m = Modifiers::default();
        for (i, c) in s.char_indices() {
            match c {
                'u' => m.user = true,
                'k' => m.kernel = true,
                'h' => m.hv = true,
                'G' => m.guest = true,
                'H' => m.host = true,
                'I' => m.exclude_idle = true,
                'p' => {
                    if m.precise == 3 {
                        return Err((i, "at most three 'p' (precise_ip is 0-3)".to_string()));
                    }
                    m.precise += 1;
                }
                'P' => m.precise_max = true,
                'S' => m.sample_read = true,
                'D' => m.pinned = true,
                'W' => m.weak = true,
                'e' => m.exclusive = true,
                'R' => m.retire_latency = true,
                _ => {
                    return Err((
                        i,
                        format!("unknown modifier {c:?} (valid: {MODIFIER_LETTERS})"),
                    ));
                }
            }
        }
        if s.is_empty() {
            return Err((
                0,
                format!("missing modifier after ':' (valid: {MODIFIER_LETTERS})"),
            ));
        }
        Ok(m)
    }

    /// True when any privilege-level letter (`u`, `k`, `h`) was given.
    pub fn has_level(&self) -> bool {
        self.user || self.kernel || self.hv
    }

    /// Merges group modifiers into an event's own (the event's letters win where both exist).
    pub fn merged_with_group(&self, group: &Modifiers) -> Modifiers {
        let mut m = *self;
        if !m.has_level() {
            m.user = group.user;
            m.kernel = group.kernel;
            m.hv = group.hv;
        }
        if !(m.guest || m.host) {
            m.guest = group.guest;
            m.host = group.host;
        }
        m.exclude_idle |= group.exclude_idle;
        if m.precise == 0 {
            m.precise = group.precise;
        }
        m.precise_max |= group.precise_max;
        m.pinned |= group.pinned;
        m.exclusive |= group.exclusive;
        m.retire_latency |= group.retire_latency;
        m
    }
}

/// A `key[=value]` term inside `pmu/.../`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// Key (or a bare alias / flag name).
    pub key: String,
    /// Value text, if `=` was given.
    pub value: Option<String>,
    /// Where the term is.
    pub span: Span,
}

/// What an event names, before resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// A bare name: legacy, cache, software or a sysfs alias.
    Named(String),
    /// `rNNNN`: a raw config for the core PMU(s).
    Raw(u64),
    /// `pmu/terms/`.
    Pmu {
        /// PMU name as written.
        pmu: String,
        /// Terms in order.
        terms: Vec<Term>,
    },
    /// `a:b` where `b` is not a modifier string: perf would read a tracepoint.
    Tracepoint {
        /// Subsystem.
        system: String,
        /// Tracepoint name.
        name: String,
    },
}

/// One event as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventAst {
    /// What it names.
    pub kind: EventKind,
    /// Its own modifiers.
    pub modifiers: Modifiers,
    /// The whole event text's position.
    pub span: Span,
    /// Position of the modifier string (after `:` or the closing `/`), if any.
    pub mod_span: Option<Span>,
}

/// A top-level item: a single event or a `{...}` group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A standalone event.
    Event(EventAst),
    /// A group.
    Group {
        /// Members in order as written.
        events: Vec<EventAst>,
        /// Modifiers after `}:`.
        modifiers: Modifiers,
        /// Position of the whole group.
        span: Span,
    },
}

/// Parses one event string (what one `-e` gives).
pub fn parse(input: &str) -> Result<Vec<Item>, EventError> {
    let mut p = Parser { s: input, pos: 0 };
    let items = p.list()?;
    Ok(items)
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@' | '*' | '?')
}

impl<'a> Parser<'a> {
    fn err(&self, start: usize, end: usize, msg: impl Into<String>) -> EventError {
        EventError::new(self.s, Span { start, end }, msg)
    }

    fn peek(&self) -> Option<char> {
        self.s[self.pos..].chars().next()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|c| c == ' ' || c == '\t') {
            self.pos += 1;
        }
    }

    fn word(&mut self) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(is_name_char) {
            self.pos += 1;
        }
        &self.s[start..self.pos]
    }

    fn list(&mut self) -> Result<Vec<Item>, EventError> {
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            if self.pos >= self.s.len() {
                let msg = if items.is_empty() {
                    "empty event list"
                } else {
                    "trailing ','"
                };
                return Err(self.err(self.pos.saturating_sub(1), self.s.len(), msg));
            }
            items.push(self.item()?);
            self.skip_ws();
            match self.peek() {
                None => return Ok(items),
                Some(',') => self.pos += 1,
                Some(c) => {
                    return Err(self.err(
                        self.pos,
                        self.pos + c.len_utf8(),
                        format!("unexpected {c:?}, expected ',' between events"),
                    ));
                }
            }
        }
    }

    fn item(&mut self) -> Result<Item, EventError> {
        let start = self.pos;
        if !self.eat('{') {
            return Ok(Item::Event(self.event(false)?));
        }
        let mut events = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                Some('{') => {
                    return Err(self.err(self.pos, self.pos + 1, "groups cannot be nested"));
                }
                Some('}') if events.is_empty() => {
                    return Err(self.err(start, self.pos + 1, "empty group"));
                }
                None => return Err(self.err(start, self.s.len(), "unclosed '{'")),
                _ => {}
            }
            events.push(self.event(true)?);
            self.skip_ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some('}') => {
                    self.pos += 1;
                    break;
                }
                None => return Err(self.err(start, self.s.len(), "unclosed '{'")),
                Some(c) => {
                    return Err(self.err(
                        self.pos,
                        self.pos + c.len_utf8(),
                        format!("unexpected {c:?} in group, expected ',' or '}}'"),
                    ));
                }
            }
        }
        let mut modifiers = Modifiers::default();
        if self.eat(':') {
            let mstart = self.pos;
            let text = self.word();
            modifiers = self.modifiers_at(mstart, text)?;
        }
        Ok(Item::Group {
            events,
            modifiers,
            span: Span {
                start,
                end: self.pos,
            },
        })
    }

    fn modifiers_at(&self, start: usize, text: &str) -> Result<Modifiers, EventError> {
        Modifiers::parse(text).map_err(|(off, msg)| self.err(start + off, start + off + 1, msg))
    }

    fn event(&mut self, in_group: bool) -> Result<EventAst, EventError> {
        let start = self.pos;
        let name = self.word();
        if name.is_empty() {
            let (end, what) = match self.peek() {
                Some(c) => (self.pos + c.len_utf8(), format!("unexpected {c:?}")),
                None => (self.pos, "nothing".to_string()),
            };
            let ctx = if in_group { "in group" } else { "" };
            return Err(self.err(
                start,
                end,
                format!("expected an event name {ctx}, found {what}"),
            ));
        }
        if self.eat('/') {
            return self.pmu_event(start, name);
        }
        let mut modifiers = Modifiers::default();
        let mut mod_span = None;
        let mut kind = if let Some(raw) = raw_config(name) {
            EventKind::Raw(raw)
        } else {
            EventKind::Named(name.to_string())
        };
        if self.eat(':') {
            let mstart = self.pos;
            let text = self.word();
            if text.is_empty() {
                return Err(self.err(
                    mstart.saturating_sub(1),
                    mstart,
                    format!("missing modifier after ':' (valid: {MODIFIER_LETTERS})"),
                ));
            }
            mod_span = Some(Span {
                start: mstart,
                end: self.pos,
            });
            match Modifiers::parse(text) {
                Ok(m) => modifiers = m,
                Err((off, msg)) => {
                    // `sched:sched_switch` is a tracepoint; `cycles:x` a bad modifier. The
                    // resolver knows which names are events, so keep both readings for it.
                    // (`kmem:kmalloc` and `sched:*` too: any word that is not modifiers).
                    let looks_like_tracepoint =
                        matches!(kind, EventKind::Named(_)) && !only_modifier_letters(text);
                    if looks_like_tracepoint {
                        kind = EventKind::Tracepoint {
                            system: name.to_string(),
                            name: text.to_string(),
                        };
                        mod_span = None;
                        if self.eat(':') {
                            let m2 = self.pos;
                            let t2 = self.word();
                            modifiers = self.modifiers_at(m2, t2)?;
                            mod_span = Some(Span {
                                start: m2,
                                end: self.pos,
                            });
                        }
                    } else {
                        return Err(self.err(mstart + off, mstart + off + 1, msg));
                    }
                }
            }
        }
        if let Some(c) = self.peek().filter(|c| !matches!(c, ',' | '}' | ' ' | '\t')) {
            return Err(self.err(
                self.pos,
                self.pos + c.len_utf8(),
                format!(
                    "unexpected {c:?} after event {:?}",
                    &self.s[start..self.pos]
                ),
            ));
        }
        Ok(EventAst {
            kind,
            modifiers,
            span: Span {
                start,
                end: self.pos,
            },
            mod_span,
        })
    }

    fn pmu_event(&mut self, start: usize, pmu: &str) -> Result<EventAst, EventError> {
        let mut terms = Vec::new();
        loop {
            if self.peek() == Some('/') {
                if !terms.is_empty() {
                    return Err(self.err(self.pos, self.pos + 1, "expected a term after ','"));
                }
                self.pos += 1;
                break;
            }
            let tstart = self.pos;
            let key = self.word();
            if key.is_empty() {
                return match self.peek() {
                    None => Err(self.err(start, self.s.len(), "unclosed '/': expected pmu/terms/")),
                    Some(c) => Err(self.err(
                        self.pos,
                        self.pos + c.len_utf8(),
                        format!("expected a term like event=0x3c, found {c:?}"),
                    )),
                };
            }
            let value = if self.eat('=') {
                let vstart = self.pos;
                let v = if self.eat('\'') || self.eat('"') {
                    let q = self.s[vstart..].chars().next().unwrap_or('\'');
                    let rest = &self.s[self.pos..];
                    let Some(close) = rest.find(q) else {
                        return Err(self.err(vstart, self.s.len(), "unclosed quote"));
                    };
                    let v = &rest[..close];
                    self.pos += close + 1;
                    v
                } else {
                    self.word()
                };
                if v.is_empty() {
                    return Err(self.err(tstart, self.pos, format!("missing value for {key:?}")));
                }
                Some(v.to_string())
            } else {
                None
            };
            terms.push(Term {
                key: key.to_string(),
                value,
                span: Span {
                    start: tstart,
                    end: self.pos,
                },
            });
            if self.eat(',') {
                continue;
            }
            match self.peek() {
                Some('/') => {
                    self.pos += 1;
                    break;
                }
                None => {
                    return Err(self.err(start, self.s.len(), "unclosed '/': expected pmu/terms/"));
                }
                Some(c) => {
                    return Err(self.err(
                        self.pos,
                        self.pos + c.len_utf8(),
                        format!("unexpected {c:?} in terms, expected ',' or '/'"),
                    ));
                }
            }
        }
        let mut modifiers = Modifiers::default();
        let mut mod_span = None;
        let colon = self.eat(':');
        let mstart = self.pos;
        let text = self.word();
        if !text.is_empty() || colon {
            modifiers = self.modifiers_at(mstart, text)?;
            mod_span = Some(Span {
                start: mstart,
                end: self.pos,
            });
        }
        if let Some(c) = self.peek().filter(|c| !matches!(c, ',' | '}' | ' ' | '\t')) {
            return Err(self.err(
                self.pos,
                self.pos + c.len_utf8(),
                format!("unexpected {c:?}"),
            ));
        }
        Ok(EventAst {
            kind: EventKind::Pmu {
                pmu: pmu.to_string(),
                terms,
            },
            modifiers,
            span: Span {
                start,
                end: self.pos,
            },
            mod_span,
        })
    }
}

/// Modifier-looking text that only fails on a count (e.g. `pppp`) is not a tracepoint.
fn only_modifier_letters(text: &str) -> bool {
    text.chars().all(|c| MODIFIER_LETTERS.contains(c))
}

/// `r1a8` -> 0x1a8. perf reads `r` followed by hex digits as a raw event.
fn raw_config(name: &str) -> Option<u64> {
    let hex = name.strip_prefix('r')?;
    if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) || hex.len() > 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(s: &str) -> EventAst {
        match parse(s).unwrap().remove(0) {
            Item::Event(e) => e,
            g => panic!("not an event: {g:?}"),
        }
    }

    #[test]
    fn names_modifiers_raw() {
        let e = one("cycles:ppu");
        assert_eq!(e.kind, EventKind::Named("cycles".into()));
        assert_eq!(e.modifiers.precise, 2);
        assert!(e.modifiers.user && !e.modifiers.kernel);
        assert_eq!(one("r1a8").kind, EventKind::Raw(0x1a8));
        assert_eq!(
            one("L1-dcache-load-misses").kind,
            EventKind::Named("L1-dcache-load-misses".into())
        );
        // "ref-cycles" starts with 'r' but is not hex.
        assert_eq!(
            one("ref-cycles").kind,
            EventKind::Named("ref-cycles".into())
        );
    }

    #[test]
    fn pmu_terms() {
        let e = one("cpu/event=0x3c,umask=0,name=my-cyc,period=100000/pp");
        let EventKind::Pmu { pmu, terms } = &e.kind else {
            panic!()
        };
        assert_eq!(pmu, "cpu");
        assert_eq!(terms.len(), 4);
        assert_eq!(terms[2].value.as_deref(), Some("my-cyc"));
        assert_eq!(e.modifiers.precise, 2);
        let e = one("cpu_core/topdown-retiring/");
        let EventKind::Pmu { terms, .. } = &e.kind else {
            panic!()
        };
        assert_eq!(terms[0].key, "topdown-retiring");
        assert_eq!(terms[0].value, None);
        let e = one("cpu/cycles/:u");
        assert!(e.modifiers.user);
        let e = one("cpu/name='a b'/");
        let EventKind::Pmu { terms, .. } = &e.kind else {
            panic!()
        };
        assert_eq!(terms[0].value.as_deref(), Some("a b"));
    }

    #[test]
    fn groups_and_lists() {
        let items = parse("{slots,cycles:P,topdown-retiring}:S,page-faults").unwrap();
        assert_eq!(items.len(), 2);
        let Item::Group {
            events, modifiers, ..
        } = &items[0]
        else {
            panic!()
        };
        assert_eq!(events.len(), 3);
        assert!(modifiers.sample_read);
        assert!(events[1].modifiers.precise_max);
        assert!(matches!(&items[1], Item::Event(_)));
    }

    #[test]
    fn never_panics_on_mangled_input() {
        let base =
            "{cpu_core/event=0x3c,umask=0x1,name='x y'/ppu,slots:S}:W,r1a8:k,sched:sched_switch";
        let extras = [
            "é", "}", "{", "/", ":", ",", "=", "'", "0x", " ", "\u{0}", "ß:",
        ];
        let mut n = 0;
        for cut in 0..=base.len() {
            for extra in extras {
                for s in [
                    format!("{}{extra}", &base[..cut]),
                    format!("{extra}{}", &base[cut..]),
                ] {
                    let r = parse(&s);
                    if let Err(e) = r {
                        let line = e.to_string();
                        assert!(!line.contains('\n') && !line.is_empty());
                    }
                    n += 1;
                }
            }
        }
        assert!(n > 1000);
    }

    #[test]
    fn tracepoint_reading() {
        let e = one("sched:sched_switch");
        assert_eq!(
            e.kind,
            EventKind::Tracepoint {
                system: "sched".into(),
                name: "sched_switch".into()
            }
        );
    }

    fn err(s: &str) -> EventError {
        parse(s).unwrap_err()
    }

    #[test]
    fn errors_point_at_the_problem() {
        // `cycles:x` could be a tracepoint: the resolver, which knows `cycles`, says which.
        assert!(matches!(
            parse("cycles:x").unwrap()[0],
            Item::Event(EventAst {
                kind: EventKind::Tracepoint { .. },
                ..
            })
        ));
        let e = err("cycles:pppp");
        assert_eq!(e.span.start, 10);
        assert!(err("{cycles,{instructions}}").message.contains("nested"));
        assert!(err("{cycles").message.contains("unclosed"));
        assert!(err("{}").message.contains("empty group"));
        assert!(err("").message.contains("empty"));
        assert!(err("cycles,").message.contains("trailing"));
        assert!(err("cpu/event=0x3c").message.contains("unclosed"));
        assert!(err("cpu/event=/").message.contains("missing value"));
        assert_eq!(err("cycles;instructions").span.start, 6);
        let e = err("cpu/event=1/x");
        assert_eq!(e.span.start, 12);
        let shown = err("{cycles}:Z").to_string();
        assert_eq!(
            shown,
            "bad event \"{cycles}:Z\" at column 10 (\"Z\"): unknown modifier 'Z' (valid: ukhGHIpPSDWeR)"
        );
    }
}
