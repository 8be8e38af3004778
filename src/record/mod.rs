//! The recorder (placeholder until the record module lands).
