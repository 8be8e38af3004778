//! Counting mode (`hrec stat`).

#![warn(missing_docs)]

pub mod tpebs;
