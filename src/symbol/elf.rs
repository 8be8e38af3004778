//! Placeholder replaced by the ELF/DWARF implementation (branch symbol-elf).
use super::debuginfo::SearchPaths;
use super::{Symbolized, Unresolved};
use std::path::Path;

/// A loaded binary.
#[derive(Debug)]
pub struct Binary;

impl Binary {
    /// Loads.
    pub fn load(
        _path: &Path,
        _expected_build_id: Option<&[u8]>,
        _search: &SearchPaths,
    ) -> Result<Binary, Unresolved> {
        Err(Unresolved::BinaryMissing)
    }
    /// Build id.
    pub fn build_id(&self) -> Option<&[u8]> {
        None
    }
    /// Debug path.
    pub fn debug_path(&self) -> Option<&Path> {
        None
    }
    /// SVMA.
    pub fn svma(&self, _addr: u64, _map_start: u64, _pgoff: u64) -> Option<u64> {
        None
    }
    /// Symbolize.
    pub fn symbolize(&self, _svma: u64) -> Result<Symbolized, Unresolved> {
        Err(Unresolved::NoSymbols)
    }
}
