//! Intel's metrics (TMA and the rest) from Intel's perfmon JSON files, evaluated from counts:
//! the pure half of the future `hrec stat -M`. Nothing here opens an event or reads sysfs.
//!
//! * [`expr`]: the formula language (`a * b / ( c )`, `x if c else y`, `min`, `max`, `> =`).
//! * [`perfmon`]: `mapfile.csv`, `<model>_metrics.json`, `<model>_core.json` and
//!   `<model>_retire_latency.json`, read at run time from a directory.

#![warn(missing_docs)]

pub mod expr;
pub mod perfmon;

pub use expr::{EvalError, Expr, ExprError, Lookup};
pub use perfmon::{
    CoreEvent, CoreEvents, Encoding, EventRef, Mapfile, MapfileEntry, Metric, MetricFile,
    Perfmon, PerfmonError, RawEvent, ResolveError, RetireLatencies, RetireLatency, Threshold,
};
