//! Evaluation of a formula tree over `f64`: division by zero is NaN (Intel's formulas never
//! guard their denominators), NaN propagates through arithmetic, `min` and `max`, a NaN
//! condition makes the result NaN, `&` and `|` short-circuit and only the chosen branch of
//! `X if C else Y` is evaluated. The first lookup error ends the evaluation.

use super::ast::{BinOp, Func, Node};
use super::error::EvalError;

/// The lookup [`Expr::eval_with`](super::Expr::eval_with) calls for every name it evaluates:
/// the name and the `N` of an indexed reference `name[N]`.
pub type Lookup<'a> = dyn Fn(&str, Option<u32>) -> Result<f64, EvalError> + 'a;

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
pub(super) fn eval_node(n: &Node, lookup: &Lookup<'_>, err: &mut Option<EvalError>) -> f64 {
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
