//! Counting mode (`hrec stat`): counters opened for a command ([`count`]), perf stat's output
//! ([`output`]) with the locale's thousands separators ([`numeric`]), the mean and spread of
//! repeated runs ([`repeat`]), Intel's TMA metrics ([`tma`], with [`crate::metrics`]; on
//! E-cores TopDown levels 1 and 2 from hrec's own table, [`ecore_tma`]) and where each retire
//! latency in their formulas comes from ([`tpebs`]).

#![warn(missing_docs)]

pub mod count;
pub mod ecore_tma;
pub mod numeric;
pub mod output;
pub mod repeat;
pub mod tma;
pub mod tpebs;
