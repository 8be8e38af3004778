//! The recursive-descent parser of the grammar in the module doc of `expr`: `X if C else Y`
//! lowest and right-associative, one comparison without chaining, exactly two arguments per
//! function. Tree depth and nesting are bounded, so that neither the parser nor the recursive
//! evaluator can exhaust the stack: too deep a formula is an error, not a crash.

use super::ast::{BinOp, Func, Node};
use super::error::ExprError;
use super::lex::{Tok, Token};

/// Deepest tree a formula may build (nesting and operator chains alike), so that the recursive
/// evaluator cannot exhaust the stack. Intel's deepest formula tree is 37 levels.
const MAX_DEPTH: u32 = 256;

/// Deepest nesting of parentheses, function calls and unary operators the recursive parser
/// follows (each level costs a dozen stack frames). Intel's formulas nest at most 15
/// parentheses deep.
const MAX_NESTING: u32 = 32;

pub(super) struct Parser<'a> {
    pub(super) input: &'a str,
    pub(super) tokens: Vec<Token>,
    pub(super) pos: usize,
}

/// A node with the depth of its tree.
pub(super) struct P {
    pub(super) node: Node,
    depth: u32,
}

impl P {
    fn leaf(node: Node) -> P {
        P { node, depth: 1 }
    }
}

impl Parser<'_> {
    pub(super) fn peek(&self) -> &Token {
        // The token list always ends with Eof and `pos` never passes it.
        const EOF: &Token = &Token {
            tok: Tok::Eof,
            start: 0,
        };
        self.tokens
            .get(self.pos)
            .or(self.tokens.last())
            .unwrap_or(EOF)
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

    pub(super) fn expr(&mut self, nesting: u32) -> Result<P, ExprError> {
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
        let n = args.len();
        let (Some(b), Some(a), None) = (args.pop(), args.pop(), args.pop()) else {
            return Err(self.err(at, format!("{name}() takes 2 arguments, got {n}")));
        };
        let d = [a.depth, b.depth];
        self.join(at, Node::Call(func, Box::new(a.node), Box::new(b.node)), &d)
    }
}
