//! Section contents of object files read from a file already open, shared by the readers of
//! DWARF ([`crate::symbol`]) and of unwind tables ([`crate::unwind`]): one `pread` into one
//! buffer when the section is stored plainly, else decompressed. Sizes come from the file and
//! are not trusted: a plain section must lie inside the file, a compressed one must not claim
//! to expand more than zlib or zstd can.

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::sync::Arc;

use object::{CompressionFormat, ObjectSection};

/// A section's contents: read from the file into one buffer when stored plainly, else
/// decompressed.
pub fn section_bytes<'d>(file: &File, s: &impl ObjectSection<'d>) -> Option<Arc<[u8]>> {
    let range = s.compressed_file_range().ok()?;
    let file_len = file.metadata().ok()?.len();
    if range.format == CompressionFormat::None {
        // Sized by the header: allocate only what the file holds.
        if range.offset.checked_add(range.uncompressed_size)? > file_len {
            return None;
        }
        let len = usize::try_from(range.uncompressed_size).ok()?;
        let mut buf: Arc<[u8]> = std::iter::repeat_n(0u8, len).collect();
        file.read_exact_at(Arc::get_mut(&mut buf)?, range.offset)
            .ok()?;
        return Some(buf);
    }
    // A declared size no stream of this length can reach (zlib and zstd expand at most about
    // a thousand times) is damage, not a section to allocate for.
    if range.offset.checked_add(range.compressed_size)? > file_len
        || range.uncompressed_size > range.compressed_size.saturating_mul(MAX_RATIO)
    {
        return None;
    }
    s.uncompressed_data().ok().map(|d| Arc::from(&*d))
}

/// The most a compressed section expands (zlib's limit is 1032:1).
pub const MAX_RATIO: u64 = 1100;
