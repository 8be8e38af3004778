//! Intel's metrics (TMA and the rest) from Intel's perfmon JSON files, evaluated from counts:
//! the pure half of the future `hrec stat -M`. Nothing here opens an event or reads sysfs.
//!
//! * [`expr`]: the formula language (`a * b / ( c )`, `x if c else y`, `min`, `max`, `> =`).

#![warn(missing_docs)]

pub mod expr;

pub use expr::{EvalError, Expr, ExprError, Lookup};
