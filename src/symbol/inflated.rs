//! Compressed DWARF sections kept inflated between runs. Distributions ship debug files with
//! zlib- or zstd-compressed sections, and inflating libc's `.debug_info`, `.debug_line` and
//! `.debug_abbrev` (8 MB) costs more than all the rest of a small report. The first run that
//! reads a compressed section of a file with a build-id saves it inflated as
//! `<hrec cache>/dwarf/<build-id>/<section name>` ([`crate::cache`]: whole or not at all);
//! later runs read the parts they need from there, as from a file stored plainly.
//!
//! A saved section is used only when its size is the size the file declares for it inflated
//! (anything else is saved again); its bytes are DWARF, parsed bounds-checked like any debug
//! file's. The directory is kept under [`MAX_BYTES`] by removing the build-ids saved longest
//! ago first, and sections over [`MAX_SECTION`] are not saved.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::{CompressionFormat, ObjectSection};

/// The largest section saved.
pub const MAX_SECTION: u64 = 512 << 20;

/// The most the directory holds; older build-ids are removed past it.
pub const MAX_BYTES: u64 = 2 << 30;

/// The saved sections of one file (by its build-id) under a cache root.
#[derive(Debug)]
pub(super) struct Inflated {
    root: PathBuf,
    dir: PathBuf,
}

/// A compressed section, inflated.
pub(super) enum Section {
    /// Saved (now or before): the open file, exactly the section's bytes.
    Saved(File),
    /// Inflated here but not saved (the cache cannot be written).
    Bytes(Arc<[u8]>),
}

impl Inflated {
    /// The saved sections of the file with `build_id` under `root`; `None` without a root or
    /// a build-id (an all-zero one too).
    pub(super) fn new(root: Option<&Path>, build_id: Option<&[u8]>) -> Option<Inflated> {
        let id = build_id.filter(|id| id.iter().any(|&b| b != 0))?;
        let root = root?.to_path_buf();
        Some(Inflated {
            dir: root.join(super::elf::hex(id)),
            root,
        })
    }

    /// Section `s` of `file` inflated, from the cache, else inflated now and saved. `None`
    /// when `s` is stored plainly (read it from `file`), is over [`MAX_SECTION`], or does not
    /// inflate.
    pub(super) fn section<'d>(&self, file: &File, s: &impl ObjectSection<'d>) -> Option<Section> {
        let range = s.compressed_file_range().ok()?;
        if range.format == CompressionFormat::None || range.uncompressed_size > MAX_SECTION {
            return None;
        }
        let name = s.name().ok()?.trim_start_matches('.');
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return None;
        }
        let path = self.dir.join(name);
        // Only a regular file is opened (a FIFO in its place would block the open).
        let saved = |m: std::fs::Metadata| m.is_file() && m.len() == range.uncompressed_size;
        if std::fs::metadata(&path).is_ok_and(saved)
            && let Ok(f) = File::open(&path)
            && f.metadata().is_ok_and(saved)
        {
            return Some(Section::Saved(f));
        }
        let bytes = crate::objfile::section_bytes(file, s)?;
        if bytes.len() as u64 != range.uncompressed_size {
            return None;
        }
        if crate::cache::save(&path, 0o644, &[&bytes]) {
            prune(&self.root, &self.dir, MAX_BYTES);
            if let Ok(f) = File::open(&path) {
                return Some(Section::Saved(f));
            }
        }
        Some(Section::Bytes(bytes))
    }
}

/// Removes the build-id directories under `root` saved longest ago (not `keep`) until the
/// rest hold at most `max` bytes.
fn prune(root: &Path, keep: &Path, max: u64) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let mut dirs: Vec<(std::time::SystemTime, u64, PathBuf)> = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let Ok(meta) = e.metadata() else { continue };
        if !meta.is_dir() {
            continue;
        }
        let size = std::fs::read_dir(&path)
            .map(|files| {
                files
                    .flatten()
                    .filter_map(|f| f.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0);
        dirs.push((meta.modified().unwrap_or(std::time::UNIX_EPOCH), size, path));
    }
    let mut total: u64 = dirs.iter().map(|d| d.1).sum();
    dirs.sort();
    for (_, size, path) in dirs {
        if total <= max {
            break;
        }
        if path != keep && std::fs::remove_dir_all(&path).is_ok() {
            total -= size;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The oldest directories go first until the rest fit; the one being written stays.
    #[test]
    fn prune_removes_the_oldest_first() {
        let d = tempfile::tempdir().unwrap();
        let t0 = std::time::SystemTime::now() - std::time::Duration::from_secs(1000);
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            let dir = d.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("debug_info"), vec![0u8; 100]).unwrap();
            let when = t0 + std::time::Duration::from_secs(100 * i as u64);
            File::open(&dir).unwrap().set_modified(when).unwrap();
        }
        prune(d.path(), &d.path().join("a"), 200);
        assert!(d.path().join("a").exists(), "kept: being written");
        assert!(!d.path().join("b").exists(), "the oldest of the others");
        assert!(d.path().join("c").exists());
        prune(d.path(), &d.path().join("a"), 1000);
        assert!(
            d.path().join("c").exists(),
            "nothing removed under the limit"
        );
    }
}
