//! Counting mode (`hrec stat`): counters opened for a command, perf stat's output, TopDown
//! from counts, and (with [`crate::metrics`]) Intel's TMA metrics.

pub mod count;
pub mod output;
pub mod tma;
