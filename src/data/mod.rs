//! The hrec file format (placeholder until the data module lands).
