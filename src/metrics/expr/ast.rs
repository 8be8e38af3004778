//! The tree a formula parses into: numbers, names with an optional instance index, unary
//! minus and `not`, binary operators, `X if C else Y`, and functions of exactly two arguments.
//! It prints fully parenthesised (`(a + (b * c))`), which makes the parse visible.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
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
pub(super) enum BinOp {
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
pub(super) enum Func {
    Min,
    Max,
    DRatio,
}

impl Func {
    pub(super) fn from_name(name: &str) -> Option<Func> {
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

pub(super) fn write_node(n: &Node, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
