//! The event language and planning: perf's event syntax, its resolution against the discovered
//! PMUs (hybrid expansion, group rules, TopDown regrouping), record planning, and the
//! `perf record -vv` style attr dump.
//!
//! Nothing here makes a syscall: every decision is a function of a [`crate::pmu::Pmus`]
//! snapshot and the user's options, so it is tested against fixture sysfs trees of real CPUs.

pub mod attr;
pub mod parse;
pub mod plan;
pub mod resolve;

pub use attr::Attr;
pub use parse::{EventError, Span};
pub use plan::{Host, Plan, PlanError, RecordOptions, plan_record};
