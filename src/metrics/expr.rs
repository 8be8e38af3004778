//! The formula language of Intel's perfmon metric files.
//!
//! Intel writes every `Formula` (and every `Threshold.Formula`) in a small Python-like
//! language over event aliases (`a`, `b`, `a_c`, ...), constant aliases (`smt_on`,
//! `durationtimeinmilliseconds`, ...) and a few bare constant names (`DURATIONTIMEINSECONDS`):
//!
//! ```text
//! expr    := or ['if' or 'else' expr]            Python's conditional: lowest, right-assoc
//! or      := and (('|' | '||' | 'or') and)*
//! and     := not (('&' | '&&' | 'and') not)*
//! not     := ('not' | '!') not | cmp
//! cmp     := add [cmpop add]                     one comparison, not chained
//! cmpop   := '<' | '<=' | '>' | '>=' | '==' | '!='   ('> =' with blanks inside is '>=')
//! add     := mul (('+' | '-') mul)*
//! mul     := unary (('*' | '/') unary)*
//! unary   := ('-' | '+') unary | primary
//! primary := NUMBER | NAME ['[' INTEGER ']'] | FUNC '(' expr (',' expr)* ')' | '(' expr ')'
//! FUNC    := 'min' | 'max' | 'd_ratio'           (two arguments each)
//! NUMBER  := 12 | 4.4 | .5 | 1e9 | 2.5E-3
//! NAME    := [A-Za-z_#][A-Za-z0-9_.:#]*         (a '[N]' followed by '.' stays in the name)
//! ```
//!
//! What the four files in `shared/perfmon` use: `+ - * /`, parentheses, `min`, `max`,
//! `X if C else Y`, `>` / `<` and `>=` written as `> =`, `&` and `|` in thresholds, decimal
//! and scientific literals (`4.4`, `0.0001`, `1e9`), and the index `a[0]` in two uncore formulas
//! (`cpu_cstate_c0`: the value of instance 0 of `UNC_P_CLOCKTICKS`). `and`/`or`/`not`, `==`,
//! `!=`, `<=` and `d_ratio` are not used there but accepted.
//!
//! ## Evaluation rules
//!
//! * Numbers are `f64`. A comparison gives 1.0 or 0.0 (IEEE: any comparison with NaN but `!=`
//!   is false, so a threshold on an undefined metric does not fire).
//! * **Division by zero gives NaN**, as perf's own evaluator does: Intel's formulas never guard
//!   their denominators, so `a / b` with `b == 0` (no cycles, no branches in an interval)
//!   means "undefined", not 0 and not infinity. `d_ratio(a, b)` is the explicit "0 when
//!   `b` is 0" form. NaN propagates through arithmetic, `min` and `max` (unlike
//!   [`f64::min`], which drops it), so the caller sees NaN and prints "n/a".
//! * A condition (`if`, `&`, `|`, `not`) is true when it is neither 0 nor NaN; a NaN condition
//!   makes the result NaN. `&` and `|` short-circuit, and only the chosen branch of
//!   `X if C else Y` is evaluated, so an unknown name in a branch not taken is no error.
//!   [`Expr::names`] lists every name for an upfront check.

use std::fmt;

/// Deepest tree a formula may build (nesting and operator chains alike), so that the recursive
/// evaluator cannot exhaust the stack. Intel's deepest formula tree is 37 levels.
const MAX_DEPTH: u32 = 256;

/// Deepest nesting of parentheses, function calls and unary operators the recursive parser
/// follows (each level costs a dozen stack frames). Intel's formulas nest at most 15
/// parentheses deep.
const MAX_NESTING: u32 = 32;

/// A parsed formula. [`fmt::Display`] prints it fully parenthesised (`(a + (b * c))`), which
/// makes the parse visible; [`Expr::source`] gives the text it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    source: String,
    root: Node,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Num(f64),
    Var {
        name: String,
        index: Option<u32>,
    },
    Neg(Box<Node>),
    Not(Box<Node>),
    Bin(BinOp, Box<Node>, Box<Node>),
    Cond {
        then: Box<Node>,
        cond: Box<Node>,
        otherwise: Box<Node>,
    },
    Call(Func, Box<Node>, Box<Node>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

impl BinOp {
    fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::And => "&",
            BinOp::Or => "|",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Func {
    Min,
    Max,
    DRatio,
}

impl Func {
    fn from_name(name: &str) -> Option<Func> {
        match name {
            "min" => Some(Func::Min),
            "max" => Some(Func::Max),
            "d_ratio" => Some(Func::DRatio),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Func::Min => "min",
            Func::Max => "max",
            Func::DRatio => "d_ratio",
        }
    }
}

/// A formula that does not parse: where (byte offset into the formula) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad formula at column {}: {message}{}", self.column(), self.excerpt())]
pub struct ExprError {
    /// The whole formula text.
    pub input: String,
    /// Byte offset of the problem (0-based; [`ExprError::column`] is 1-based).
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

impl ExprError {
    fn new(input: &str, offset: usize, message: impl Into<String>) -> Self {
        ExprError {
            input: input.to_string(),
            offset,
            message: message.into(),
        }
    }

    /// The 1-based column of the problem, in bytes (the formulas are ASCII).
    pub fn column(&self) -> usize {
        self.offset + 1
    }

    /// ` near "..."`: a few characters from the problem on, or "" at the end of the input.
    fn excerpt(&self) -> String {
        let rest = self.input.get(self.offset..).unwrap_or("");
        if rest.trim().is_empty() {
            return " (at the end)".to_string();
        }
        let near: String = rest.chars().take(24).collect();
        format!(" near {near:?}")
    }
}

/// The lookup [`Expr::eval_with`] calls for every name it evaluates: the name and the `N` of
/// an indexed reference `name[N]`.
pub type Lookup<'a> = dyn Fn(&str, Option<u32>) -> Result<f64, EvalError> + 'a;

/// A formula that parsed but cannot be evaluated with the values given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// The lookup knows nothing about this name.
    #[error("unknown name '{0}'")]
    UnknownName(String),
    /// The name is known, but its value is missing (an event that was not counted, a constant
    /// the caller did not provide, a retire latency without samples or default).
    #[error("no value for '{name}': {reason}")]
    NoValue {
        /// The name in the formula (alias or constant).
        name: String,
        /// Why there is no value, naming the event or constant behind it.
        reason: String,
    },
}

impl Expr {
    /// Parses a formula.
    pub fn parse(input: &str) -> Result<Expr, ExprError> {
        let tokens = lex(input)?;
        let mut p = Parser {
            input,
            tokens,
            pos: 0,
        };
        let root = p.expr(0)?;
        let t = p.peek();
        if t.tok != Tok::Eof {
            let msg = match t.tok {
                Tok::RParen => "unbalanced ')': no '(' to close".to_string(),
                _ => format!(
                    "unexpected {} after a complete expression",
                    t.tok.describe()
                ),
            };
            return Err(ExprError::new(input, t.start, msg));
        }
        Ok(Expr {
            source: input.to_string(),
            root: root.node,
        })
    }

    /// The text this formula was parsed from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Every name the formula refers to, once each, in order of first appearance (an indexed
    /// reference `a[0]` lists `a`). Keywords and function names are not names.
    pub fn names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        let mut stack = vec![&self.root];
        // Depth-first, left to right: push children in reverse.
        while let Some(n) = stack.pop() {
            match n {
                Node::Num(_) => {}
                Node::Var { name, .. } => {
                    if !out.contains(&name.as_str()) {
                        out.push(name);
                    }
                }
                Node::Neg(x) | Node::Not(x) => stack.push(x),
                Node::Bin(_, l, r) | Node::Call(_, l, r) => {
                    stack.push(r);
                    stack.push(l);
                }
                Node::Cond {
                    then,
                    cond,
                    otherwise,
                } => {
                    stack.push(otherwise);
                    stack.push(cond);
                    stack.push(then);
                }
            }
        }
        out
    }

    /// Evaluates with a plain lookup: `lookup(name)` gives a name's value or `None` (an
    /// [`EvalError::UnknownName`]). An indexed reference `a[0]` is looked up as `"a[0]"`.
    pub fn eval(&self, lookup: &dyn Fn(&str) -> Option<f64>) -> Result<f64, EvalError> {
        self.eval_with(&|name, index| {
            let v = match index {
                None => lookup(name),
                Some(i) => lookup(&format!("{name}[{i}]")),
            };
            v.ok_or_else(|| match index {
                None => EvalError::UnknownName(name.to_string()),
                Some(i) => EvalError::UnknownName(format!("{name}[{i}]")),
            })
        })
    }

    /// Evaluates with a lookup that gets the name and the index of `name[N]` references and
    /// says itself why a value is missing.
    pub fn eval_with(&self, lookup: &Lookup<'_>) -> Result<f64, EvalError> {
        let mut err = None;
        let v = eval_node(&self.root, lookup, &mut err);
        match err {
            Some(e) => Err(e),
            None => Ok(v),
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_node(&self.root, f)
    }
}

fn write_node(n: &Node, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match n {
        Node::Num(v) => write!(f, "{v}"),
        Node::Var { name, index: None } => f.write_str(name),
        Node::Var {
            name,
            index: Some(i),
        } => write!(f, "{name}[{i}]"),
        Node::Neg(x) => {
            f.write_str("(-")?;
            write_node(x, f)?;
            f.write_str(")")
        }
        Node::Not(x) => {
            f.write_str("(not ")?;
            write_node(x, f)?;
            f.write_str(")")
        }
        Node::Bin(op, l, r) => {
            f.write_str("(")?;
            write_node(l, f)?;
            write!(f, " {} ", op.symbol())?;
            write_node(r, f)?;
            f.write_str(")")
        }
        Node::Cond {
            then,
            cond,
            otherwise,
        } => {
            f.write_str("(")?;
            write_node(then, f)?;
            f.write_str(" if ")?;
            write_node(cond, f)?;
            f.write_str(" else ")?;
            write_node(otherwise, f)?;
            f.write_str(")")
        }
        Node::Call(func, a, b) => {
            write!(f, "{}(", func.name())?;
            write_node(a, f)?;
            f.write_str(", ")?;
            write_node(b, f)?;
            f.write_str(")")
        }
    }
}

/// `Some(true/false)` for a condition value, `None` for NaN (which makes the result NaN).
fn truth(v: f64) -> Option<bool> {
    if v.is_nan() { None } else { Some(v != 0.0) }
}

fn bool_value(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

/// Evaluates `n`; the first lookup error is stored in `err` and ends the evaluation (every
/// later call returns at once). Returning a bare `f64` keeps the recursive frame small, which
/// matters in debug builds, where each `?` leaves its own temporaries on the stack.
fn eval_node(n: &Node, lookup: &Lookup<'_>, err: &mut Option<EvalError>) -> f64 {
    if err.is_some() {
        return f64::NAN;
    }
    match n {
        Node::Num(v) => *v,
        Node::Var { name, index } => match lookup(name, *index) {
            Ok(v) => v,
            Err(e) => {
                *err = Some(e);
                f64::NAN
            }
        },
        Node::Neg(x) => -eval_node(x, lookup, err),
        Node::Not(x) => not(eval_node(x, lookup, err)),
        Node::Bin(op @ (BinOp::And | BinOp::Or), l, r) => {
            let stop_at = *op == BinOp::Or;
            match truth(eval_node(l, lookup, err)) {
                None => f64::NAN,
                Some(t) if t == stop_at => bool_value(t),
                Some(_) => truth(eval_node(r, lookup, err)).map_or(f64::NAN, bool_value),
            }
        }
        Node::Bin(op, l, r) => {
            let a = eval_node(l, lookup, err);
            arith(*op, a, eval_node(r, lookup, err))
        }
        Node::Cond {
            then,
            cond,
            otherwise,
        } => match truth(eval_node(cond, lookup, err)) {
            None => f64::NAN,
            Some(true) => eval_node(then, lookup, err),
            Some(false) => eval_node(otherwise, lookup, err),
        },
        Node::Call(func, a, b) => {
            let x = eval_node(a, lookup, err);
            call(*func, x, eval_node(b, lookup, err))
        }
    }
}

fn not(x: f64) -> f64 {
    truth(x).map_or(f64::NAN, |t| bool_value(!t))
}

fn arith(op: BinOp, a: f64, b: f64) -> f64 {
    match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => a * b,
        BinOp::Div if b == 0.0 => f64::NAN,
        BinOp::Div => a / b,
        BinOp::Lt => bool_value(a < b),
        BinOp::Le => bool_value(a <= b),
        BinOp::Gt => bool_value(a > b),
        BinOp::Ge => bool_value(a >= b),
        BinOp::Eq => bool_value(a == b),
        BinOp::Ne => bool_value(a != b),
        // Short-circuit operators are evaluated by `eval_node`; this is their eager form.
        BinOp::And => match (truth(a), truth(b)) {
            (Some(x), Some(y)) => bool_value(x && y),
            _ => f64::NAN,
        },
        BinOp::Or => match (truth(a), truth(b)) {
            (Some(x), Some(y)) => bool_value(x || y),
            _ => f64::NAN,
        },
    }
}

fn call(func: Func, x: f64, y: f64) -> f64 {
    match func {
        Func::Min | Func::Max if x.is_nan() || y.is_nan() => f64::NAN,
        Func::Min => x.min(y),
        Func::Max => x.max(y),
        Func::DRatio if y == 0.0 => 0.0,
        Func::DRatio => x / y,
    }
}

// ---------------------------------------------------------------------------------------------
// Lexer

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Ident(String),
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Plus,
    Minus,
    Star,
    Slash,
    Lt,
    Le,
    Gt,
    Ge,
    EqEq,
    Ne,
    Amp,
    Pipe,
    Bang,
    Eof,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Num(v) => format!("number {v}"),
            Tok::Ident(s) => format!("'{s}'"),
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::LBracket => "'['".into(),
            Tok::RBracket => "']'".into(),
            Tok::Comma => "','".into(),
            Tok::Plus => "'+'".into(),
            Tok::Minus => "'-'".into(),
            Tok::Star => "'*'".into(),
            Tok::Slash => "'/'".into(),
            Tok::Lt => "'<'".into(),
            Tok::Le => "'<='".into(),
            Tok::Gt => "'>'".into(),
            Tok::Ge => "'>='".into(),
            Tok::EqEq => "'=='".into(),
            Tok::Ne => "'!='".into(),
            Tok::Amp => "'&'".into(),
            Tok::Pipe => "'|'".into(),
            Tok::Bang => "'!'".into(),
            Tok::Eof => "end of formula".into(),
        }
    }
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    start: usize,
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'#'
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'#')
}

/// If `b[i..]` is `[digits]` followed by `.` and a name character, the length of `[digits]`.
/// That keeps dotted names with an index inside (`system.sockets[0].cpus.count`) whole.
fn inner_index_len(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'[') {
        return None;
    }
    let mut j = i + 1;
    while j < b.len() && b[j].is_ascii_digit() {
        j += 1;
    }
    if j == i + 1 || b.get(j) != Some(&b']') {
        return None;
    }
    let after = b.get(j + 1).copied()?;
    let after2 = b.get(j + 2).copied()?;
    (after == b'.' && is_ident_start(after2)).then_some(j + 1 - i)
}

fn lex(input: &str) -> Result<Vec<Token>, ExprError> {
    let b = input.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        // A two-character operator may have blanks between its characters: Intel writes
        // `> =`. Returns the index after the '=' when one follows.
        let eq_after = |from: usize| {
            let mut j = from;
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            (b.get(j) == Some(&b'=')).then_some(j + 1)
        };
        let tok = match c {
            b'(' => Tok::LParen,
            b')' => Tok::RParen,
            b'[' => Tok::LBracket,
            b']' => Tok::RBracket,
            b',' => Tok::Comma,
            b'+' => Tok::Plus,
            b'-' => Tok::Minus,
            b'*' => Tok::Star,
            b'/' => Tok::Slash,
            b'<' | b'>' | b'=' | b'!' => {
                if let Some(next) = eq_after(i + 1) {
                    i = next;
                    out.push(Token {
                        tok: match c {
                            b'<' => Tok::Le,
                            b'>' => Tok::Ge,
                            b'=' => Tok::EqEq,
                            _ => Tok::Ne,
                        },
                        start,
                    });
                    continue;
                }
                match c {
                    b'<' => Tok::Lt,
                    b'>' => Tok::Gt,
                    b'!' => Tok::Bang,
                    _ => {
                        return Err(ExprError::new(
                            input,
                            start,
                            "'=' is not an operator here; compare with '=='",
                        ));
                    }
                }
            }
            b'&' => {
                if b.get(i + 1) == Some(&b'&') {
                    i += 1;
                }
                Tok::Amp
            }
            b'|' => {
                if b.get(i + 1) == Some(&b'|') {
                    i += 1;
                }
                Tok::Pipe
            }
            b'0'..=b'9' | b'.' => {
                let (v, end) = lex_number(input, i)?;
                i = end;
                out.push(Token {
                    tok: Tok::Num(v),
                    start,
                });
                continue;
            }
            c if is_ident_start(c) => {
                let mut j = i + 1;
                loop {
                    if j < b.len() && is_ident_char(b[j]) {
                        j += 1;
                    } else if let Some(n) = inner_index_len(b, j) {
                        j += n;
                    } else {
                        break;
                    }
                }
                // The name characters are ASCII, so these are char boundaries.
                let name = input[i..j].to_string();
                i = j;
                out.push(Token {
                    tok: Tok::Ident(name),
                    start,
                });
                continue;
            }
            _ => {
                let ch = input[i..].chars().next().unwrap_or('?');
                return Err(ExprError::new(
                    input,
                    start,
                    format!("unexpected character {ch:?}"),
                ));
            }
        };
        i += 1;
        out.push(Token { tok, start });
    }
    out.push(Token {
        tok: Tok::Eof,
        start: b.len(),
    });
    Ok(out)
}

/// A decimal literal with optional fraction and exponent, starting at `i`.
fn lex_number(input: &str, i: usize) -> Result<(f64, usize), ExprError> {
    let b = input.as_bytes();
    let digits = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    let mut j = digits(i);
    let int_digits = j - i;
    let mut frac_digits = 0;
    if b.get(j) == Some(&b'.') {
        let k = digits(j + 1);
        frac_digits = k - (j + 1);
        j = k;
    }
    if int_digits == 0 && frac_digits == 0 {
        return Err(ExprError::new(input, i, "a lone '.' is not a number"));
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        let mut k = j + 1;
        if matches!(b.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        let e = digits(k);
        if e == k {
            return Err(ExprError::new(
                input,
                i,
                format!("bad number {:?}: exponent without digits", &input[i..e]),
            ));
        }
        j = e;
    }
    if j < b.len() && is_ident_char(b[j]) {
        let mut k = j;
        while k < b.len() && is_ident_char(b[k]) {
            k += 1;
        }
        return Err(ExprError::new(
            input,
            i,
            format!("bad number {:?}", &input[i..k]),
        ));
    }
    let text = &input[i..j];
    let v: f64 = text
        .parse()
        .map_err(|_| ExprError::new(input, i, format!("bad number {text:?}")))?;
    Ok((v, j))
}

// ---------------------------------------------------------------------------------------------
// Parser

struct Parser<'a> {
    input: &'a str,
    tokens: Vec<Token>,
    pos: usize,
}

/// A node with the depth of its tree.
struct P {
    node: Node,
    depth: u32,
}

impl P {
    fn leaf(node: Node) -> P {
        P { node, depth: 1 }
    }
}

impl Parser<'_> {
    fn peek(&self) -> &Token {
        // The token list always ends with Eof and `pos` never passes it.
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        if t.tok != Tok::Eof {
            self.pos += 1;
        }
        t
    }

    fn is_keyword(&self, kw: &str) -> bool {
        matches!(&self.peek().tok, Tok::Ident(s) if s == kw)
    }

    fn err(&self, offset: usize, msg: impl Into<String>) -> ExprError {
        ExprError::new(self.input, offset, msg)
    }

    /// Builds a node from children, refusing trees deeper than [`MAX_DEPTH`].
    fn join(&self, at: usize, node: Node, depths: &[u32]) -> Result<P, ExprError> {
        let depth = 1 + depths.iter().copied().max().unwrap_or(0);
        if depth > MAX_DEPTH {
            return Err(self.err(at, format!("formula nests deeper than {MAX_DEPTH} levels")));
        }
        Ok(P { node, depth })
    }

    fn expr(&mut self, nesting: u32) -> Result<P, ExprError> {
        if nesting > MAX_NESTING {
            let at = self.peek().start;
            return Err(self.err(
                at,
                format!("formula nests deeper than {MAX_NESTING} levels"),
            ));
        }
        let start = self.peek().start;
        let then = self.or(nesting)?;
        if !self.is_keyword("if") {
            return Ok(then);
        }
        let if_at = self.next().start;
        let cond = self.or(nesting)?;
        if !self.is_keyword("else") {
            let t = self.peek();
            return Err(self.err(
                t.start,
                format!(
                    "expected 'else' for the 'if' at column {}, found {}",
                    if_at + 1,
                    t.tok.describe()
                ),
            ));
        }
        self.next();
        // Right-associative: `a if c else b if d else e` is `a if c else (b if d else e)`.
        let otherwise = self.expr(nesting + 1)?;
        let depths = [then.depth, cond.depth, otherwise.depth];
        self.join(
            start,
            Node::Cond {
                then: Box::new(then.node),
                cond: Box::new(cond.node),
                otherwise: Box::new(otherwise.node),
            },
            &depths,
        )
    }

    fn or(&mut self, nesting: u32) -> Result<P, ExprError> {
        let mut lhs = self.and(nesting)?;
        loop {
            let at = self.peek().start;
            if !(self.peek().tok == Tok::Pipe || self.is_keyword("or")) {
                return Ok(lhs);
            }
            self.next();
            let rhs = self.and(nesting)?;
            lhs = self.bin(at, BinOp::Or, lhs, rhs)?;
        }
    }

    fn and(&mut self, nesting: u32) -> Result<P, ExprError> {
        let mut lhs = self.not(nesting)?;
        loop {
            let at = self.peek().start;
            if !(self.peek().tok == Tok::Amp || self.is_keyword("and")) {
                return Ok(lhs);
            }
            self.next();
            let rhs = self.not(nesting)?;
            lhs = self.bin(at, BinOp::And, lhs, rhs)?;
        }
    }

    fn not(&mut self, nesting: u32) -> Result<P, ExprError> {
        let at = self.peek().start;
        if self.peek().tok == Tok::Bang || self.is_keyword("not") {
            if nesting > MAX_NESTING {
                return Err(self.err(
                    at,
                    format!("formula nests deeper than {MAX_NESTING} levels"),
                ));
            }
            self.next();
            let x = self.not(nesting + 1)?;
            let d = [x.depth];
            return self.join(at, Node::Not(Box::new(x.node)), &d);
        }
        self.cmp(nesting)
    }

    fn cmp_op(&self) -> Option<BinOp> {
        Some(match self.peek().tok {
            Tok::Lt => BinOp::Lt,
            Tok::Le => BinOp::Le,
            Tok::Gt => BinOp::Gt,
            Tok::Ge => BinOp::Ge,
            Tok::EqEq => BinOp::Eq,
            Tok::Ne => BinOp::Ne,
            _ => return None,
        })
    }

    fn cmp(&mut self, nesting: u32) -> Result<P, ExprError> {
        let lhs = self.add(nesting)?;
        let Some(op) = self.cmp_op() else {
            return Ok(lhs);
        };
        let at = self.next().start;
        let rhs = self.add(nesting)?;
        if self.cmp_op().is_some() {
            let t = self.peek().start;
            return Err(self.err(
                t,
                "chained comparison: put parentheses around the first comparison",
            ));
        }
        self.bin(at, op, lhs, rhs)
    }

    fn add(&mut self, nesting: u32) -> Result<P, ExprError> {
        let mut lhs = self.mul(nesting)?;
        loop {
            let op = match self.peek().tok {
                Tok::Plus => BinOp::Add,
                Tok::Minus => BinOp::Sub,
                _ => return Ok(lhs),
            };
            let at = self.next().start;
            let rhs = self.mul(nesting)?;
            lhs = self.bin(at, op, lhs, rhs)?;
        }
    }

    fn mul(&mut self, nesting: u32) -> Result<P, ExprError> {
        let mut lhs = self.unary(nesting)?;
        loop {
            let op = match self.peek().tok {
                Tok::Star => BinOp::Mul,
                Tok::Slash => BinOp::Div,
                _ => return Ok(lhs),
            };
            let at = self.next().start;
            let rhs = self.unary(nesting)?;
            lhs = self.bin(at, op, lhs, rhs)?;
        }
    }

    fn bin(&self, at: usize, op: BinOp, l: P, r: P) -> Result<P, ExprError> {
        let d = [l.depth, r.depth];
        self.join(at, Node::Bin(op, Box::new(l.node), Box::new(r.node)), &d)
    }

    fn unary(&mut self, nesting: u32) -> Result<P, ExprError> {
        let at = self.peek().start;
        match self.peek().tok {
            Tok::Minus | Tok::Plus if nesting > MAX_NESTING => Err(self.err(
                at,
                format!("formula nests deeper than {MAX_NESTING} levels"),
            )),
            Tok::Minus => {
                self.next();
                let x = self.unary(nesting + 1)?;
                let d = [x.depth];
                self.join(at, Node::Neg(Box::new(x.node)), &d)
            }
            Tok::Plus => {
                self.next();
                self.unary(nesting + 1)
            }
            _ => self.primary(nesting),
        }
    }

    fn expect(&mut self, want: Tok, context: impl FnOnce() -> String) -> Result<(), ExprError> {
        let t = self.peek().clone();
        if t.tok == want {
            self.next();
            return Ok(());
        }
        let msg = context();
        let found = t.tok.describe();
        Err(self.err(t.start, format!("{msg}, found {found}")))
    }

    fn primary(&mut self, nesting: u32) -> Result<P, ExprError> {
        let t = self.next();
        match t.tok {
            Tok::Num(v) => Ok(P::leaf(Node::Num(v))),
            Tok::LParen => {
                let inner = self.expr(nesting + 1)?;
                let open = t.start + 1;
                self.expect(Tok::RParen, || {
                    format!("unbalanced '(': expected ')' to close the '(' at column {open}")
                })?;
                Ok(inner)
            }
            Tok::Ident(name) => {
                if matches!(name.as_str(), "if" | "else" | "and" | "or" | "not") {
                    return Err(self.err(
                        t.start,
                        format!("expected a value, found the keyword '{name}'"),
                    ));
                }
                if self.peek().tok == Tok::LParen {
                    return self.call(t.start, &name, nesting);
                }
                let mut index = None;
                if self.peek().tok == Tok::LBracket {
                    let open = self.next().start;
                    let it = self.next();
                    let Tok::Num(v) = it.tok else {
                        return Err(self.err(it.start, "expected an instance number inside '[ ]'"));
                    };
                    if v.fract() != 0.0 || !(0.0..=f64::from(u32::MAX)).contains(&v) {
                        return Err(self.err(it.start, format!("bad instance number {v}")));
                    }
                    index = Some(v as u32);
                    self.expect(Tok::RBracket, || {
                        format!("expected ']' to close the '[' at column {}", open + 1)
                    })?;
                }
                Ok(P::leaf(Node::Var { name, index }))
            }
            Tok::RParen => Err(self.err(t.start, "unbalanced ')': expected a value")),
            Tok::Eof => Err(self.err(t.start, "formula ends where a value is expected")),
            other => Err(self.err(
                t.start,
                format!("expected a value, found {}", other.describe()),
            )),
        }
    }

    fn call(&mut self, at: usize, name: &str, nesting: u32) -> Result<P, ExprError> {
        let Some(func) = Func::from_name(name) else {
            return Err(self.err(
                at,
                format!("unknown function '{name}' (known: min, max, d_ratio)"),
            ));
        };
        self.next(); // '('
        let mut args = Vec::new();
        loop {
            args.push(self.expr(nesting + 1)?);
            match self.peek().tok {
                Tok::Comma => {
                    self.next();
                }
                _ => break,
            }
        }
        let open = at + name.len() + 1;
        self.expect(Tok::RParen, || {
            format!("unbalanced '(': expected ')' to close {name}( at column {open}")
        })?;
        if args.len() != 2 {
            return Err(self.err(
                at,
                format!("{name}() takes 2 arguments, got {}", args.len()),
            ));
        }
        let b = args.pop().expect("two arguments");
        let a = args.pop().expect("two arguments");
        let d = [a.depth, b.depth];
        self.join(at, Node::Call(func, Box::new(a.node), Box::new(b.node)), &d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        Expr::parse(s)
            .unwrap_or_else(|e| panic!("{s:?}: {e}"))
            .to_string()
    }

    fn val(s: &str) -> f64 {
        let vars = |n: &str| match n {
            "a" => Some(2.0),
            "b" => Some(3.0),
            "c" => Some(4.0),
            "zero" => Some(0.0),
            "nan" => Some(f64::NAN),
            "x[0]" => Some(7.0),
            _ => None,
        };
        Expr::parse(s)
            .unwrap_or_else(|e| panic!("{s:?}: {e}"))
            .eval(&vars)
            .unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    fn err(s: &str) -> ExprError {
        match Expr::parse(s) {
            Ok(e) => panic!("{s:?} parsed as {e}"),
            Err(e) => e,
        }
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(canon("a + b * c"), "(a + (b * c))");
        assert_eq!(canon("a * b + c"), "((a * b) + c)");
        assert_eq!(canon("a - b - c"), "((a - b) - c)");
        assert_eq!(canon("a / b / c"), "((a / b) / c)");
        assert_eq!(canon("a - b + c"), "((a - b) + c)");
        assert_eq!(canon("a / b * c"), "((a / b) * c)");
        assert_eq!(val("a - b - c"), 2.0 - 3.0 - 4.0);
        assert_eq!(val("a / b / c"), 2.0 / 3.0 / 4.0);
        assert_eq!(val("a + b * c"), 2.0 + 3.0 * 4.0);
        // Comparisons bind looser than arithmetic, & and | looser than comparisons.
        assert_eq!(canon("a < 6 * 2 + 1"), "(a < ((6 * 2) + 1))");
        assert_eq!(canon("a > 70 | b > 10"), "((a > 70) | (b > 10))");
        assert_eq!(
            canon("a > 1 | b > 2 & c > 3"),
            "((a > 1) | ((b > 2) & (c > 3)))"
        );
        assert_eq!(canon("not a > b"), "(not (a > b))");
    }

    #[test]
    fn unary_minus_and_parentheses() {
        assert_eq!(canon("-a * b"), "((-a) * b)");
        assert_eq!(canon("a * -b"), "(a * (-b))");
        assert_eq!(canon("- - a"), "(-(-a))");
        assert_eq!(canon("+a"), "a");
        assert_eq!(canon("(a + b) * c"), "((a + b) * c)");
        assert_eq!(canon("((( a )))"), "a");
        assert_eq!(val("-a * b"), -6.0);
        assert_eq!(val("a - -b"), 5.0);
        assert_eq!(val("(a + b) * c"), 20.0);
        assert_eq!(val("-(a + b)"), -5.0);
    }

    #[test]
    fn conditional_is_lowest_and_right_associative() {
        assert_eq!(canon("a if b else c"), "(a if b else c)");
        assert_eq!(
            canon("a + 1 if b > 2 else c * 2"),
            "((a + 1) if (b > 2) else (c * 2))"
        );
        assert_eq!(
            canon("a if zero else b if c else 9"),
            "(a if zero else (b if c else 9))"
        );
        assert_eq!(
            canon("(a if zero else b) if c else 9"),
            "((a if zero else b) if c else 9)"
        );
        assert_eq!(val("a if zero else b if c else 9"), 3.0);
        assert_eq!(val("a if zero else b if zero else 9"), 9.0);
        assert_eq!(val("a if 1 else b"), 2.0);
        // Intel's pattern: `d / ( e if smt_on else ( c ) )`.
        assert_eq!(val("c / ( a if zero else ( b ) )"), 4.0 / 3.0);
        // Only the branch taken is evaluated.
        assert_eq!(val("a if 1 else undefined_name"), 2.0);
        assert!(val("a if nan else b").is_nan());
    }

    #[test]
    fn comparisons_with_blanks_inside() {
        assert_eq!(canon("b > = 0"), "(b >= 0)");
        assert_eq!(canon("b >= 0"), "(b >= 0)");
        assert_eq!(canon("b < = 0"), "(b <= 0)");
        assert_eq!(canon("b = = 0"), "(b == 0)");
        assert_eq!(canon("b ! = 0"), "(b != 0)");
        assert_eq!(canon("!b"), "(not b)");
        assert_eq!(val("b > = 3"), 1.0);
        assert_eq!(val("b > = 4"), 0.0);
        assert_eq!(val("b < = 3"), 1.0);
        assert_eq!(val("b < 3"), 0.0);
        assert_eq!(val("b == 3"), 1.0);
        assert_eq!(val("b != 3"), 0.0);
        // Intel's DTLB_Load shape.
        let f = "( min( ( a * b ) , a * ( ( 7 ) ) ) if ( b > = 0 ) else ( a * ( ( 7 ) ) ) )";
        assert_eq!(val(f), (2.0f64 * 3.0).min(2.0 * 7.0));
    }

    #[test]
    fn logic_operators() {
        assert_eq!(val("( a > 1 ) & ( b > 1 )"), 1.0);
        assert_eq!(val("( a > 5 ) & ( b > 1 )"), 0.0);
        assert_eq!(val("a > 5 | b > 1"), 1.0);
        assert_eq!(val("a > 5 || b > 5"), 0.0);
        assert_eq!(val("a > 1 && b > 1"), 1.0);
        assert_eq!(val("a > 1 and not b > 1"), 0.0);
        assert_eq!(val("zero or a"), 1.0);
        // Short circuit: the right side is not looked up.
        assert_eq!(val("zero & undefined_name"), 0.0);
        assert_eq!(val("a | undefined_name"), 1.0);
        // NaN compares false; a NaN condition gives NaN.
        assert_eq!(val("nan > 5"), 0.0);
        assert!(val("nan & a").is_nan());
        assert!(val("not nan").is_nan());
    }

    #[test]
    fn functions() {
        assert_eq!(val("min(a, b)"), 2.0);
        assert_eq!(val("max( a , b )"), 3.0);
        assert_eq!(val("max( 0 , a - c )"), 0.0);
        assert_eq!(val("min(max(a, b), c) * 2"), 6.0);
        assert_eq!(val("d_ratio(c, a)"), 2.0);
        assert_eq!(val("d_ratio(c, zero)"), 0.0);
        assert!(val("max(0, nan)").is_nan(), "f64::max would drop the NaN");
        assert!(val("min(nan, 0)").is_nan());
        assert_eq!(canon("min( a , b + c )"), "min(a, (b + c))");
    }

    #[test]
    fn division_by_zero_is_nan() {
        assert!(val("a / zero").is_nan());
        assert!(val("zero / zero").is_nan());
        assert!(val("a / (b - b)").is_nan());
        assert!(val("100 * (a / zero) + 1").is_nan());
    }

    #[test]
    fn numbers() {
        assert_eq!(val("1e9"), 1e9);
        assert_eq!(val("1E9"), 1e9);
        assert_eq!(val("2.5e-3"), 0.0025);
        assert_eq!(val("1e+2"), 100.0);
        assert_eq!(val("4.4"), 4.4);
        assert_eq!(val(".5"), 0.5);
        assert_eq!(val("9."), 9.0);
        assert_eq!(val("0.0001 * 10000"), 0.0001 * 10000.0);
        assert_eq!(val("64 / 9.0"), 64.0 / 9.0);
        assert_eq!(val("( 99 * 3 + 63 + 30 ) / 5"), 78.0);
    }

    #[test]
    fn names_and_indexes() {
        let e = Expr::parse("(b / a[0]) * socket_count + b - DURATIONTIMEINSECONDS").unwrap();
        assert_eq!(
            e.names(),
            vec!["b", "a", "socket_count", "DURATIONTIMEINSECONDS"]
        );
        assert_eq!(
            e.to_string(),
            "((((b / a[0]) * socket_count) + b) - DURATIONTIMEINSECONDS)"
        );
        assert_eq!(val("x[0] * 2"), 14.0);
        // An index followed by a dotted continuation stays part of the name.
        let e = Expr::parse("system.sockets[0].cpus.count * system.socket_count").unwrap();
        assert_eq!(
            e.names(),
            vec!["system.sockets[0].cpus.count", "system.socket_count"]
        );
        // Event-style names with ':' and '.' are single names.
        let e =
            Expr::parse("mem_inst_retired.lock_loads * mem_inst_retired.lock_loads:retire_latency")
                .unwrap();
        assert_eq!(
            e.names(),
            vec![
                "mem_inst_retired.lock_loads",
                "mem_inst_retired.lock_loads:retire_latency"
            ]
        );
        assert_eq!(
            Expr::parse("a + a * min(a, b)").unwrap().names(),
            vec!["a", "b"]
        );
    }

    #[test]
    fn eval_errors_name_the_unknown() {
        let e = Expr::parse("a + mystery").unwrap();
        let r = e.eval(&|n| (n == "a").then_some(1.0));
        assert_eq!(r, Err(EvalError::UnknownName("mystery".into())));
        assert_eq!(r.unwrap_err().to_string(), "unknown name 'mystery'");
        let e = Expr::parse("a[3]").unwrap();
        assert_eq!(
            e.eval(&|_| None),
            Err(EvalError::UnknownName("a[3]".into()))
        );
        let e = Expr::parse("a").unwrap();
        let r = e.eval_with(&|n, _| {
            Err(EvalError::NoValue {
                name: n.into(),
                reason: "event X was not counted".into(),
            })
        });
        assert_eq!(
            r.unwrap_err().to_string(),
            "no value for 'a': event X was not counted"
        );
    }

    #[test]
    fn parse_errors_have_columns() {
        let e = err("(a + b");
        assert_eq!(e.column(), 7);
        assert!(e.message.contains("unbalanced '('"), "{e}");
        assert!(e.message.contains("column 1"), "{e}");

        let e = err("a + b)");
        assert_eq!(e.column(), 6);
        assert!(e.message.contains("unbalanced ')'"), "{e}");

        let e = err("a b");
        assert_eq!(e.column(), 3);
        assert!(e.message.contains("unexpected 'b'"), "{e}");

        let e = err("a + 1 2");
        assert_eq!(e.column(), 7);

        let e = err("3 * foo(a, b)");
        assert_eq!(e.column(), 5);
        assert!(e.message.contains("unknown function 'foo'"), "{e}");

        let e = err("min(a)");
        assert!(e.message.contains("takes 2 arguments, got 1"), "{e}");
        let e = err("max(a, b, c)");
        assert!(e.message.contains("got 3"), "{e}");

        let e = err("a if b");
        assert_eq!(e.column(), 7);
        assert!(e.message.contains("expected 'else'"), "{e}");

        let e = err("a +");
        assert_eq!(e.column(), 4);
        assert!(e.message.contains("ends where a value is expected"), "{e}");

        let e = err("a = b");
        assert_eq!(e.column(), 3);
        let e = err("a < b < c");
        assert!(e.message.contains("chained comparison"), "{e}");
        let e = err("2a + 1");
        assert_eq!(e.column(), 1);
        assert!(e.message.contains("bad number \"2a\""), "{e}");
        let e = err("1e + 1");
        assert!(e.message.contains("exponent"), "{e}");
        let e = err("a ^ b");
        assert_eq!(e.column(), 3);
        let e = err("");
        assert_eq!(e.column(), 1);
        let e = err("a[b]");
        assert_eq!(e.column(), 3);
        let e = err("else");
        assert!(e.message.contains("keyword 'else'"), "{e}");

        // The message is one line with the column and a short excerpt.
        let e = err("( a * b ) ) + c");
        assert_eq!(
            e.to_string(),
            "bad formula at column 11: unbalanced ')': no '(' to close near \") + c\""
        );
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!("{}a{}", "(".repeat(5000), ")".repeat(5000));
        assert!(err(&deep).message.contains("nests deeper"));
        let long_chain = vec!["a"; 5000].join(" + ");
        assert!(err(&long_chain).message.contains("nests deeper"));
        let minus = format!("{}a", "-".repeat(5000));
        assert!(err(&minus).message.contains("nests deeper"));
        // Ordinary long formulas are fine.
        let ok = vec!["a"; 250].join(" + ");
        assert_eq!(Expr::parse(&ok).unwrap().eval(&|_| Some(1.0)), Ok(250.0));
        let ok = format!("{}a{}", "(".repeat(30), ")".repeat(30));
        assert!(Expr::parse(&ok).is_ok());
    }
}
