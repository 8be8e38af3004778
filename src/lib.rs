//! hrec: a Linux sampling profiler for modern Intel PMUs.
//!
//! Both halves are pipelines of plain values, and data flows one way through them:
//!
//! ```text
//! record: sysfs ──► pmu (Pmus) ──► event (parse → resolve → Plan) ──► kernel ──► record ──► data
//! read:   data | perf.data ──► recording (time order) ──► decode ──► analysis::replay
//!         (unwind, symbol) ──► analysis (fold, tables) ──► output
//! ```
//!
//! Everything up to the [`event::Plan`] is a pure function of a sysfs snapshot and the options,
//! so it runs and is tested on machines without a hardware PMU. `docs/architecture.md` is the
//! map: which folder holds which stage and the rule each keeps.

pub mod analysis;
pub mod archive;
pub mod cache;
pub mod data;
pub mod decode;
pub mod disasm;
pub mod event;
pub mod kernel;
pub mod listing;
pub mod metrics;
pub mod names;
pub mod objfile;
pub mod offcpu;
pub mod output;
pub mod pmu;
pub mod record;
pub mod recording;
pub mod stat;
pub mod symbol;
#[cfg(test)]
mod testutil;
pub mod trace;
#[cfg_attr(
    not(test),
    deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)
)]
pub mod unwind;
