//! Record decoder (placeholder until the decode module lands).
