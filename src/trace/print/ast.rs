//! The parser of a print fmt: the quoted format split into literal text and conversions,
//! and each argument parsed into an expression tree, fields resolved to their index.

use super::super::format::EventFormat;
use super::lex::{Tok, tokenize};

/// The deepest expression nesting parsed.
const MAX_DEPTH: usize = 256;

/// An argument of the print fmt, shaped as libtraceevent builds it (see [`Parser`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Expr {
    /// Nothing: the left side of a unary operator.
    Null,
    /// A number (its value as `strtoull` reads it) and its text.
    Num(u64, String),
    /// An identifier that is not a field nor a function (an enum constant the kernel did
    /// not expand), several words (`unsigned long`) or a character literal's text: 0 as a
    /// number, its text as a string.
    Atom(String),
    /// A string literal.
    Str(String),
    /// `REC->name`: the index of the field, or `None` when the event has no such field.
    Field(Option<usize>, String),
    /// `(type)expr`.
    Cast(String, Box<Expr>),
    /// `left op right` (`left` is [`Expr::Null`] for a unary operator), with the priority
    /// libtraceevent gave it (0 for a unary operator).
    Op(&'static str, i8, Box<Expr>, Box<Expr>),
    /// `cond ? a : b`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `array[index]`.
    Index(Box<Expr>, Box<Expr>),
    /// `__print_flags(val, delim, {v, "name"}, ...)`.
    Flags(Box<Expr>, String, Vec<(u64, String)>),
    /// `__print_symbolic(val, {v, "name"}, ...)`.
    Symbolic(Box<Expr>, Vec<(u64, String)>),
    /// `__get_str(f)` / `__get_rel_str(f)`.
    GetStr(Option<usize>),
    /// `__get_dynamic_array(f)`.
    DynArray(Option<usize>),
    /// `__get_dynamic_array_len(f)`.
    DynArrayLen(Option<usize>),
    /// `__get_bitmask(f)`.
    Bitmask(Option<usize>),
    /// `__print_hex(buf, len)` (`true`: bytes separated by spaces) / `__print_hex_str`.
    Hex(Box<Expr>, Box<Expr>, bool),
    /// `__print_array(array, count, element size)`.
    Array(Box<Expr>, Box<Expr>, Box<Expr>),
}

/// How a conversion's value is cast before printing, by its length modifiers (`hh` -2,
/// `h` -1, none 0, `l`/`z` 1, `ll` 2), as libtraceevent casts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Spec {
    /// Flags `-+ 0#` as written.
    pub flags: String,
    /// A width, or `Width::Arg` for `*`.
    pub width: Option<Width>,
    /// A precision (`.` alone is 0), or `Width::Arg` for `.*`.
    pub precision: Option<Width>,
    /// The length class.
    pub len: i8,
    /// The conversion character (`d`, `s`, `p`, ...).
    pub conv: u8,
    /// For `%p`, the letters that follow it (`S`, `I4`, `K`, ...).
    pub ptr: String,
}

/// A width or precision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Width {
    /// Written in the format.
    Fixed(usize),
    /// Taken from an argument (`*`): its index.
    Arg(usize),
}

/// A piece of the format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Piece {
    /// Text printed as it is (escapes already interpreted).
    Text(Vec<u8>),
    /// A conversion of argument `arg`.
    Conv(Spec, usize),
}

/// A parsed print fmt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Program {
    /// The format.
    pub pieces: Vec<Piece>,
    /// The arguments.
    pub args: Vec<Expr>,
}

/// Parses a print fmt; `None` when libtraceevent would fail to parse it.
pub(super) fn parse(print_fmt: &str, format: &EventFormat) -> Option<Program> {
    let toks = tokenize(print_fmt)?;
    let mut p = Parser {
        toks: &toks,
        at: 0,
        format,
    };
    let mut text = String::new();
    while let Some(Tok::Str(s)) = p.peek() {
        text.push_str(s);
        p.at += 1;
    }
    let mut args = Vec::new();
    while p.eat(",") {
        args.push(p.expr(0)?);
    }
    if p.at != toks.len() {
        return None;
    }
    let pieces = split_format(&text, args.len())?;
    Some(Program { pieces, args })
}

/// Splits the format string into text and conversions, numbering the arguments they take.
fn split_format(text: &str, nargs: usize) -> Option<Vec<Piece>> {
    let b = text.as_bytes();
    let mut pieces = Vec::new();
    let mut lit = Vec::new();
    let mut next_arg = 0usize;
    let mut take = || {
        let a = next_arg;
        next_arg += 1;
        (a < nargs).then_some(a)
    };
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' if i + 1 < b.len() => {
                lit.push(match b.get(i + 1) {
                    Some(b'n') => b'\n',
                    Some(b't') => b'\t',
                    Some(b'r') => b'\r',
                    Some(&c) => c,
                    None => b'\\',
                });
                i += 2;
            }
            b'%' if b.get(i + 1) == Some(&b'%') => {
                lit.push(b'%');
                i += 2;
            }
            b'%' => {
                let mut j = i + 1;
                let mut spec = Spec {
                    flags: String::new(),
                    width: None,
                    precision: None,
                    len: 0,
                    conv: 0,
                    ptr: String::new(),
                };
                while let Some(&f) = b.get(j).filter(|f| b"-+ 0#".contains(f)) {
                    spec.flags.push(char::from(f));
                    j += 1;
                }
                let mut number = |j: &mut usize| -> Option<Option<Width>> {
                    if b.get(*j) == Some(&b'*') {
                        *j += 1;
                        return Some(Some(Width::Arg(take()?)));
                    }
                    let s = *j;
                    while b.get(*j).is_some_and(u8::is_ascii_digit) {
                        *j += 1;
                    }
                    let digits = text.get(s..*j).unwrap_or_default();
                    Some((*j > s).then(|| Width::Fixed(digits.parse().unwrap_or(usize::MAX))))
                };
                spec.width = number(&mut j)?;
                if b.get(j) == Some(&b'.') {
                    j += 1;
                    spec.precision = Some(number(&mut j)?.unwrap_or(Width::Fixed(0)));
                }
                while let Some(&c) = b.get(j) {
                    match c {
                        b'h' => spec.len = spec.len.saturating_sub(1),
                        b'l' | b'z' | b'Z' | b'j' | b't' => spec.len = spec.len.saturating_add(1),
                        b'L' | b'q' => spec.len = 2,
                        _ => break,
                    }
                    j += 1;
                }
                spec.len = spec.len.clamp(-2, 2);
                let Some(&conv) = b.get(j) else {
                    lit.extend_from_slice(b.get(i..).unwrap_or_default());
                    break;
                };
                if !b"diuxXocsp".contains(&conv) {
                    // Not a conversion libtraceevent knows: printed as written.
                    lit.extend_from_slice(b.get(i..=j).unwrap_or_default());
                    i = j + 1;
                    continue;
                }
                spec.conv = conv;
                j += 1;
                if conv == b'p' {
                    let s = j;
                    while b.get(j).is_some_and(u8::is_ascii_alphanumeric) {
                        j += 1;
                    }
                    spec.ptr = text.get(s..j).unwrap_or_default().to_string();
                }
                if !lit.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut lit)));
                }
                let arg = take()?;
                pieces.push(Piece::Conv(spec, arg));
                i = j;
            }
            c => {
                lit.push(c);
                i += 1;
            }
        }
    }
    if !lit.is_empty() {
        pieces.push(Piece::Text(lit));
    }
    Some(pieces)
}

struct Parser<'a> {
    toks: &'a [Tok],
    at: usize,
    format: &'a EventFormat,
}

/// libtraceevent's operator priorities: lower binds tighter; `None` for a token that is
/// not an operator it knows.
fn op_prio(op: &str) -> Option<i8> {
    Some(match op {
        "~" | "!" => 4,
        "*" | "/" | "%" => 6,
        "+" | "-" => 7,
        "<<" | ">>" => 8,
        "<" | ">" | "<=" | ">=" => 9,
        "==" | "!=" => 10,
        "&" => 11,
        "^" => 12,
        "|" => 13,
        "&&" => 14,
        "||" => 15,
        "?" => 16,
        _ => return None,
    })
}

/// An operator token that continues an expression (libtraceevent's `EVENT_OP`: anything
/// but an item, a string and the delimiters `( ) ,`).
fn is_op_token(t: Option<&Tok>) -> Option<&'static str> {
    match t {
        Some(Tok::Op(o)) if !matches!(*o, "(" | ")" | ",") => Some(o),
        _ => None,
    }
}

/// Where the right operand of an operator ended up after [`Parser::process_op`] built it.
enum Right {
    /// `arg`'s right side.
    Right,
    /// `arg`'s left side (the operator was rotated below its right operand).
    Left,
}

/// The parser. It builds the tree as libtraceevent does, quirks included, since they show
/// in the output: an operator takes a single operand on its right and the operators that
/// follow attach by priority so that a chain of equal priority groups to the right
/// (`a - b - c` is `a - (b - c)`); a right operand that is itself an operator of lower
/// priority (a parenthesised one too: parentheses leave no mark) is rotated above it
/// (`x & (A | B)` becomes `(x & A) | B`); a ternary's false branch is a single operand.
impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }

    fn peek_op(&self) -> Option<&'static str> {
        match self.peek() {
            Some(Tok::Op(o)) => Some(o),
            _ => None,
        }
    }

    fn eat(&mut self, op: &str) -> bool {
        if self.peek_op() == Some(op) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, op: &str) -> Option<()> {
        self.eat(op).then_some(())
    }

    fn field(&self, name: &str) -> Option<usize> {
        self.format.fields.iter().position(|f| f.name == name)
    }

    /// A whole expression: an operand and the operators that follow it (up to `,`, `)`,
    /// `:` or the end).
    fn expr(&mut self, depth: usize) -> Option<Expr> {
        let mut arg = self.process_arg(depth + 1)?;
        if let Some(op) = is_op_token(self.peek()).filter(|o| *o != ":") {
            self.at += 1;
            self.process_op(&mut arg, op, depth + 1)?;
        }
        Some(arg)
    }

    /// A single operand (libtraceevent's `process_arg`).
    fn process_arg(&mut self, depth: usize) -> Option<Expr> {
        if depth > MAX_DEPTH {
            return None;
        }
        let tok = self.peek()?.clone();
        self.at += 1;
        match tok {
            Tok::Str(mut s) => {
                while let Some(Tok::Str(more)) = self.peek() {
                    s.push_str(more);
                    self.at += 1;
                }
                Some(Expr::Str(s))
            }
            Tok::Char(c) => Some(Expr::Atom(c)),
            Tok::Op("(") => self.process_paren(depth + 1),
            Tok::Op(op @ ("~" | "!" | "+" | "-")) => {
                // A unary operator: its operand, then the operators that follow, with the
                // unary node on their left.
                let operand = self.process_arg(depth + 1)?;
                let mut arg = Expr::Op(op, 0, Box::new(Expr::Null), Box::new(operand));
                self.tail(&mut arg, Right::Right, depth + 1)?;
                Some(arg)
            }
            Tok::Op(_) => None,
            Tok::Item(w) => {
                if w == "REC" {
                    self.expect("->")?;
                    let Some(Tok::Item(name)) = self.peek().cloned() else {
                        return None;
                    };
                    self.at += 1;
                    return Some(Expr::Field(self.field(&name), name));
                }
                if self.peek_op() == Some("(") {
                    self.at += 1;
                    return self.call(&w, depth + 1);
                }
                // Atoms can be several words (`unsigned long`).
                let mut atom = w;
                while let Some(Tok::Item(more)) = self.peek() {
                    atom.push(' ');
                    atom.push_str(more);
                    self.at += 1;
                }
                if atom.starts_with(|c: char| c.is_ascii_digit()) {
                    return Some(Expr::Num(strtoull(&atom), atom));
                }
                Some(Expr::Atom(atom))
            }
        }
    }

    /// After `(`: a parenthesised expression, or a cast when an operand follows the `)`.
    fn process_paren(&mut self, depth: usize) -> Option<Expr> {
        let inner = self.expr(depth + 1)?;
        self.expect(")")?;
        let cast = matches!(
            self.peek(),
            Some(Tok::Item(_) | Tok::Str(_) | Tok::Char(_) | Tok::Op("("))
        );
        if !cast {
            return Some(inner);
        }
        let Expr::Atom(ty) = inner else {
            // libtraceevent: "previous needed to be an atom".
            return None;
        };
        let operand = self.process_arg(depth + 1)?;
        Some(Expr::Cast(ty, Box::new(operand)))
    }

    /// `arg op ...` with `op` consumed: builds the operator over `arg` in place.
    fn process_op(&mut self, arg: &mut Expr, op: &'static str, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match op {
            "?" => {
                let cond = std::mem::replace(arg, Expr::Null);
                let mut yes = self.process_arg(depth + 1)?;
                while let Some(next) = is_op_token(self.peek()).filter(|o| *o != ":") {
                    self.at += 1;
                    self.process_op(&mut yes, next, depth + 1)?;
                }
                self.expect(":")?;
                let no = self.process_arg(depth + 1)?;
                *arg = Expr::Cond(Box::new(cond), Box::new(yes), Box::new(no));
                // The ternary has priority 0: what follows takes it as its left side.
                self.tail(arg, Right::Right, depth + 1)
            }
            "[" => {
                let index = self.process_arg(depth + 1)?;
                self.expect("]")?;
                let array = std::mem::replace(arg, Expr::Null);
                *arg = Expr::Index(Box::new(array), Box::new(index));
                self.tail(arg, Right::Right, depth + 1)
            }
            _ => {
                let prio = op_prio(op).filter(|_| !matches!(op, "~" | "!" | "?"))?;
                let left = std::mem::replace(arg, Expr::Null);
                // `(type *)`: the `*` of a pointer type.
                if op == "*" && self.peek_op() == Some(")") {
                    let Expr::Atom(a) = left else { return None };
                    *arg = Expr::Atom(format!("{a} *"));
                    return Some(());
                }
                let right = self.process_arg(depth + 1)?;
                let right_prio = match &right {
                    Expr::Op(o, ..) => op_prio(o),
                    Expr::Cond(..) => Some(16),
                    _ => None,
                };
                let where_right = if right_prio.is_some_and(|rp| prio < rp) {
                    // Rotate: `left op (a rop b)` becomes `(left op a) rop b`.
                    match right {
                        Expr::Op(rop, rprio, ra, rb) => {
                            let lower = Expr::Op(op, prio, Box::new(left), ra);
                            *arg = Expr::Op(rop, rprio, Box::new(lower), rb);
                        }
                        Expr::Cond(c, a, b) => {
                            let lower = Expr::Op(op, prio, Box::new(left), c);
                            *arg = Expr::Cond(Box::new(lower), a, b);
                        }
                        _ => return None,
                    }
                    Right::Left
                } else {
                    *arg = Expr::Op(op, prio, Box::new(left), Box::new(right));
                    Right::Right
                };
                self.tail(arg, where_right, depth + 1)
            }
        }
    }

    /// The operator after a built one: it takes the whole of `arg` as its left side when
    /// it binds less tightly than `arg`'s operator, else the operand at `right`.
    fn tail(&mut self, arg: &mut Expr, right: Right, depth: usize) -> Option<()> {
        let Some(next) = is_op_token(self.peek()).filter(|o| *o != ":") else {
            return Some(());
        };
        self.at += 1;
        let prio = op_prio(next).unwrap_or(-1);
        let arg_prio = match arg {
            Expr::Op(_, p, ..) => *p,
            _ => 0,
        };
        if prio > arg_prio {
            return self.process_op(arg, next, depth + 1);
        }
        let slot = match (arg, right) {
            (Expr::Op(_, _, _, r), Right::Right) => &mut **r,
            (Expr::Op(_, _, l, _), Right::Left) => &mut **l,
            (Expr::Cond(c, ..), Right::Left) => &mut **c,
            (Expr::Cond(_, _, no), Right::Right) => &mut **no,
            (Expr::Index(_, i), _) => &mut **i,
            _ => return None,
        };
        self.process_op(slot, next, depth + 1)
    }

    /// The field named by a helper's argument (`__get_str(name)`).
    fn field_arg(&mut self) -> Option<Option<usize>> {
        let name = match self.peek()? {
            Tok::Item(w) if w == "REC" => {
                self.at += 1;
                self.expect("->")?;
                match self.peek()? {
                    Tok::Item(w) => w.clone(),
                    _ => return None,
                }
            }
            Tok::Item(w) => w.clone(),
            _ => return None,
        };
        self.at += 1;
        self.expect(")")?;
        Some(self.field(&name))
    }

    /// A helper call, after its `(`.
    fn call(&mut self, name: &str, depth: usize) -> Option<Expr> {
        if depth > MAX_DEPTH {
            return None;
        }
        match name {
            "__get_str" | "__get_rel_str" => Some(Expr::GetStr(self.field_arg()?)),
            "__get_dynamic_array" | "__get_rel_dynamic_array" => {
                Some(Expr::DynArray(self.field_arg()?))
            }
            "__get_dynamic_array_len" | "__get_rel_dynamic_array_len" => {
                Some(Expr::DynArrayLen(self.field_arg()?))
            }
            "__get_bitmask" | "__get_rel_bitmask" => Some(Expr::Bitmask(self.field_arg()?)),
            // `__builtin_expect(expr, n)`: the expression.
            "__builtin_expect" => {
                let e = self.expr(depth + 1)?;
                self.expect(",")?;
                self.expr(depth + 1)?;
                self.expect(")")?;
                Some(e)
            }
            "sizeof" => {
                let ty = self.sizeof_body()?;
                Some(Expr::Num(ty, String::new()))
            }
            "__print_flags" | "__print_flags_u64" => {
                let val = self.expr(depth + 1)?;
                self.expect(",")?;
                let delim = match self.expr(depth + 1)? {
                    Expr::Str(s) => s,
                    _ => return None,
                };
                let table = self.table(depth)?;
                Some(Expr::Flags(Box::new(val), delim, table))
            }
            "__print_symbolic" | "__print_symbolic_u64" => {
                let val = self.expr(depth + 1)?;
                let table = self.table(depth)?;
                Some(Expr::Symbolic(Box::new(val), table))
            }
            "__print_hex" | "__print_hex_str" => {
                let buf = self.expr(depth + 1)?;
                self.expect(",")?;
                let len = self.expr(depth + 1)?;
                self.expect(")")?;
                Some(Expr::Hex(
                    Box::new(buf),
                    Box::new(len),
                    name == "__print_hex",
                ))
            }
            "__print_array" => {
                let a = self.expr(depth + 1)?;
                self.expect(",")?;
                let n = self.expr(depth + 1)?;
                self.expect(",")?;
                let size = self.expr(depth + 1)?;
                self.expect(")")?;
                Some(Expr::Array(Box::new(a), Box::new(n), Box::new(size)))
            }
            // A function libtraceevent does not know: the event fails to parse.
            _ => None,
        }
    }

    /// `sizeof(type)` after its `(`: the size on a 64-bit kernel.
    fn sizeof_body(&mut self) -> Option<u64> {
        let mut words = Vec::new();
        let mut field = None;
        loop {
            match self.peek()? {
                Tok::Op(")") => break,
                Tok::Op("->") => {}
                Tok::Op("*") => words.push("*".to_string()),
                Tok::Item(w) => {
                    if words.last().map(String::as_str) == Some("REC") {
                        field = self.field(w);
                    }
                    words.push(w.clone());
                }
                _ => return None,
            }
            self.at += 1;
        }
        self.at += 1;
        if let Some(f) = field.and_then(|f| self.format.fields.get(f)) {
            return Some(u64::from(f.size));
        }
        let ty = words.join(" ");
        Some(if ty.contains('*') || ty.contains("long") {
            8
        } else if ty.contains("short") || ty.ends_with("16") {
            2
        } else if ty.contains("char") || ty.ends_with('8') {
            1
        } else if ty.ends_with("64") {
            8
        } else {
            4
        })
    }

    /// `, {v, "name"}, ... )`: the table of a flags or symbolic helper, through its `)`.
    fn table(&mut self, depth: usize) -> Option<Vec<(u64, String)>> {
        let mut table = Vec::new();
        while self.eat(",") {
            self.expect("{")?;
            let v = self.expr(depth + 1)?;
            self.expect(",")?;
            let s = self.process_arg(depth + 1)?;
            self.expect("}")?;
            table.push((flag_value(&v), const_text(&s)));
        }
        self.expect(")")?;
        Some(table)
    }
}

/// `strtoull(s, NULL, 0)`: the leading number of `s` in its base (0x hex, 0 octal), 0 when
/// there is none; a suffix (`UL`) ends it.
pub(super) fn strtoull(s: &str) -> u64 {
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    let mut v: u64 = 0;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else { break };
        v = v.wrapping_mul(u64::from(radix)).wrapping_add(u64::from(d));
    }
    v
}

/// Kernel constants that format files print by name, as libtraceevent knows them.
const KNOWN_FLAGS: [(&str, u64); 12] = [
    ("HI_SOFTIRQ", 0),
    ("TIMER_SOFTIRQ", 1),
    ("NET_TX_SOFTIRQ", 2),
    ("NET_RX_SOFTIRQ", 3),
    ("BLOCK_SOFTIRQ", 4),
    ("IRQ_POLL_SOFTIRQ", 5),
    ("TASKLET_SOFTIRQ", 6),
    ("SCHED_SOFTIRQ", 7),
    ("HRTIMER_SOFTIRQ", 8),
    ("RCU_SOFTIRQ", 9),
    ("HRTIMER_NORESTART", 0),
    ("HRTIMER_RESTART", 1),
];

/// A flag table's value as libtraceevent reads it: a bare name through its table of known
/// constants (else -1), anything else folded as a constant with names as 0.
fn flag_value(e: &Expr) -> u64 {
    match e {
        Expr::Atom(a) => KNOWN_FLAGS
            .iter()
            .find(|(n, _)| n == a)
            .map_or(u64::MAX, |(_, v)| *v),
        Expr::Cast(_, inner) => flag_value(inner),
        other => fold(other),
    }
}

/// The text of a table entry's name: a string, or what libtraceevent makes of another
/// expression (`((void *)0)` is `0`).
fn const_text(e: &Expr) -> String {
    match e {
        Expr::Str(a) | Expr::Atom(a) | Expr::Num(_, a) => a.clone(),
        Expr::Cast(_, inner) => const_text(inner),
        other => (fold(other) as i64).to_string(),
    }
}

/// Constant folding at parse time: names and fields are 0.
fn fold(e: &Expr) -> u64 {
    super::eval::eval_num(e, &[], None)
}
