//! The event language and planning: perf's event syntax, its resolution against the discovered
//! PMUs (hybrid expansion, group rules, TopDown regrouping), record planning, and the
//! `perf record -vv` style attr dump.
//!
//! Nothing here opens an event: every decision is a function of a [`crate::pmu::Pmus`]
//! snapshot (and of tracefs under the same root, for tracepoints) and the user's options, so
//! it is tested against fixture sysfs trees of real CPUs.

pub mod attr;
pub mod parse;
pub mod plan;
pub mod resolve;

pub use attr::Attr;
pub use parse::{EventError, Span};
pub use plan::{Host, Plan, PlanError, RecordOptions, plan_record};

/// The bare event name of a display name: without the PMU (`cpu_core/cycles/P` → `cycles`)
/// and without modifiers (`topdown-be-bound:u` → `topdown-be-bound`). TopDown roles, perf stat's
/// derived metrics and Intel's retire-latency keys all look events up by this name.
pub fn base_name(name: &str) -> &str {
    let mut parts = name.split('/');
    let n = match (parts.next(), parts.next()) {
        (Some(_), Some(ev)) => ev,
        _ => name,
    };
    n.split(':').next().unwrap_or(n)
}
