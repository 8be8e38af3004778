//! Intel's metrics (TMA and the rest) from Intel's perfmon JSON files, evaluated from counts:
//! the pure half of `hrec stat -M` ([`crate::stat::tma`]). Nothing here opens an event or reads
//! sysfs.
//!
//! ```text
//! Perfmon::load(dir, cpuid) ──► metric(s) ──► events_needed ──► resolve (encodings to count)
//!                                   │
//! counts, retire latencies, Constants ──► Metric::evaluate ──► value (percent for TMA nodes)
//! ```
//!
//! * [`expr`]: the formula language (`a * b / ( c )`, `x if c else y`, `min`, `max`, `> =`).
//! * [`perfmon`]: `mapfile.csv`, `<model>_metrics.json`, `<model>_core.json` and
//!   `<model>_retire_latency.json`, read at run time from a directory (Intel's files are not
//!   part of hrec; `../shared/perfmon` holds copies for Granite Rapids, Sapphire Rapids,
//!   Alder Lake and Arrow Lake).
//! * [`eval`]: [`Metric::evaluate`], [`Constants`], thresholds.
//!
//! # Where each value of a formula comes from
//!
//! A formula names aliases; [`Metric::evaluate`] resolves each one in this order:
//!
//! 1. **An event alias whose `Name` ends in `:retire_latency`** takes the event's *retire
//!    latency*, not its count, from the retire-latency source the caller passes. Intel's TMA
//!    formulas multiply an event's count by its average retire latency on Granite Rapids and
//!    later (Timed PEBS; Arrow Lake's Lion Cove file does it too): Granite Rapids'
//!    `Lock_Latency` (perf: `tma_lock_latency`) is
//!    `100 * ( ( a * b ) / ( c ) )` with `a = MEM_INST_RETIRED.LOCK_LOADS`,
//!    `b = MEM_INST_RETIRED.LOCK_LOADS:retire_latency` and `c = CPU_CLK_UNHALTED.THREAD`:
//!    locked loads times cycles per locked load, over all cycles. Intel writes the term
//!    `EVENT:retire_latency`; perf's converted files write it `EVENT:R` (its converter rewrites
//!    Intel's `$PEBS` placeholder), and `perf stat --record-tpebs` samples such events to
//!    measure it. The value is an average in core cycles: measured from the 16-bit retire
//!    latency of PEBS records (hrec's samples), or, without samples, the `MEAN` of Intel's
//!    `<model>_retire_latency.json` ([`Perfmon::default_retire_latency`]). Which one was used
//!    is the caller's choice and belongs in its output. A missing value is an error naming
//!    the event, never a silent guess. Several formulas guard the term as
//!    `min( a * b , a * 7 ) if ( b > = 0 ) else a * 7`: Intel takes a negative latency as "not
//!    measured" and falls back to a fixed cost (the perf-converted form quoted in
//!    `shared/reference/perf-abi.md` 14.6 tests `0 < b` instead), so a caller may pass a
//!    negative latency on purpose to select that fallback.
//! 2. **Any other event alias** takes the event's count from the count source, keyed by the
//!    [`EventRef`] (name and modifiers, e.g. `UOPS_RETIRED.MS:c1:e1`): the count over the
//!    measured interval, already scaled for multiplexing. `PERF_METRICS.*` are the kernel's
//!    `topdown-*` events, in slot units (their formulas divide by their own sum);
//!    `TOPDOWN.SLOTS:perf_metrics` is `slots` read in that group. `a[0]` asks for instance 0
//!    ([`EventRef::instance`]). The event `TSC` falls back to [`Constants::tsc`].
//! 3. **A constant alias** (`smt_on` = `HYPERTHREADING_ON`, `threads` = `THREADS_PER_CORE`,
//!    `durationtimeinmilliseconds`, `socket_count`, `dependentloadsweight` = the number
//!    `20`, ...) evaluates its `Name` against [`Constants`], which the caller fills from the
//!    machine and the run.
//! 4. **Any other name** (`DURATIONTIMEINSECONDS` in uncore formulas) is looked up in
//!    [`Constants`] directly.
//!
//! `SYSTEM_TSC_FREQ` means two things in Intel's files: the non-TMA `cpu_operating_frequency`
//! (`(a / b * c) / 1000000000`, GHz) uses it as the TSC frequency in Hz, while the TMA metrics'
//! `BaseFormula` show it standing for perf's `tsc`, the TSC ticks of the measurement
//! (`Info_System_CPUs_Utilized = a / b` is `cpu_clk_unhalted.ref_tsc / tsc`). So in `TMA`
//! metrics it resolves to [`Constants::tsc_ticks`], elsewhere to
//! [`Constants::tsc_frequency_hz`].
//!
//! Intel's formulas for percentage metrics include the `100 *` (`UnitOfMeasure` `percent`),
//! and their thresholds compare percentages (`a > 15`); perf's converted files use fractions
//! with a `100%` scale unit instead.

#![warn(missing_docs)]

pub mod ecore;
pub mod eval;
pub mod expr;
pub mod perfmon;

pub use eval::{Constants, MetricError, MetricValue};
pub use expr::{EvalError, Expr, ExprError, Lookup};
pub use perfmon::{
    CoreEvent, CoreEvents, Encoding, EventRef, Mapfile, MapfileEntry, Metric, MetricFile, Perfmon,
    PerfmonError, RawEvent, ResolveError, RetireLatencies, RetireLatency, Threshold,
};

#[cfg(test)]
mod tests;
