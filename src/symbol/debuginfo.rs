//! Placeholder replaced by the debug-file search (branch symbol-elf).
use std::path::PathBuf;

/// Where to look for debug files.
#[derive(Debug, Clone, Default)]
pub struct SearchPaths {
    /// Debug directories.
    pub debug_dirs: Vec<PathBuf>,
}
