//! From resolved samples to numbers: histograms by sort key, TopDown attribution from
//! group-read deltas, retire-latency statistics.
//!
//! [`profile`] turns a recording into compact resolved samples, [`hist`] groups them,
//! [`topdown`] and [`latency`] hold the domain rules for the two hardware-specific columns.

pub mod hist;
pub mod latency;
pub mod profile;
pub mod topdown;
