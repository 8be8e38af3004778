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

// Byte and text parsing: no indexing that can panic, no unwrap/expect outside tests.
#![cfg_attr(
    not(test),
    deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)
)]

mod ast;
mod error;
mod eval;
mod lex;
mod parse;

use std::fmt;

use ast::{Node, write_node};
pub use error::{EvalError, ExprError};
pub use eval::Lookup;
use eval::eval_node;
use lex::{Tok, lex};
use parse::Parser;

/// A parsed formula. [`fmt::Display`] prints it fully parenthesised (`(a + (b * c))`), which
/// makes the parse visible; [`Expr::source`] gives the text it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    source: String,
    root: Node,
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

#[cfg(test)]
mod tests;
