//! Counting mode (`hrec stat`): counters opened for a command ([`count`]), perf stat's output
//! ([`output`]), Intel's TMA metrics ([`tma`], with [`crate::metrics`]) and where each retire
//! latency in their formulas comes from ([`tpebs`]).

#![warn(missing_docs)]

pub mod count;
pub mod output;
pub mod tma;
pub mod tpebs;
