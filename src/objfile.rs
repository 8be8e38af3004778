//! Section contents of object files read from a file already open, shared by the readers of
//! DWARF ([`crate::symbol`]) and of unwind tables ([`crate::unwind`]): one `pread` into one
//! buffer when the section is stored plainly, else decompressed; or read in parts
//! (`SectionParts`), a compressed section inflated only as far as the furthest part. Sizes
//! come from the file and are not trusted: a plain section must lie inside the file, a
//! compressed one must not claim to expand more than zlib or zstd can.

use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::FileExt as _;
use std::sync::Arc;

use object::{CompressedFileRange, CompressionFormat, ObjectSection};

/// A section's contents: read from the file into one buffer when stored plainly, else
/// decompressed.
pub fn section_bytes<'d>(file: &File, s: &impl ObjectSection<'d>) -> Option<Arc<[u8]>> {
    let range = checked_range(file, s)?;
    if range.format == CompressionFormat::None {
        return read_range(file, range.offset, range.uncompressed_size);
    }
    s.uncompressed_data().ok().map(|d| Arc::from(&*d))
}

/// Where section `s` lies in `file`, when it can: a plain section inside the file, a
/// compressed one inside the file and declaring a size its stream can reach (zlib and zstd
/// expand at most about a thousand times; more is damage, not a section to allocate for).
fn checked_range<'d>(file: &File, s: &impl ObjectSection<'d>) -> Option<CompressedFileRange> {
    let range = s.compressed_file_range().ok()?;
    let file_len = file.metadata().ok()?.len();
    let fits = if range.format == CompressionFormat::None {
        range.offset.checked_add(range.uncompressed_size)? <= file_len
    } else {
        range.offset.checked_add(range.compressed_size)? <= file_len
            && range.uncompressed_size <= range.compressed_size.saturating_mul(MAX_RATIO)
    };
    fits.then_some(range)
}

/// The bytes `[offset, offset + len)` of `file` in one buffer; `None` when they are not all
/// in the file (checked before allocating) or do not read.
pub fn read_range(file: &File, offset: u64, len: u64) -> Option<Arc<[u8]>> {
    if offset.checked_add(len)? > file.metadata().ok()?.len() {
        return None;
    }
    let mut buf: Arc<[u8]> = std::iter::repeat_n(0u8, usize::try_from(len).ok()?).collect();
    file.read_exact_at(Arc::get_mut(&mut buf)?, offset).ok()?;
    Some(buf)
}

/// The most a compressed section expands (zlib's limit is 1032:1).
pub const MAX_RATIO: u64 = 1100;

/// Parts of one section read as they are asked for: a plain section by `pread` of each part;
/// a compressed one inflated from its start only as far as the furthest byte asked for (a
/// zlib or zstd stream cannot be entered in the middle), so a reader that needs the first
/// units of a 6 MB `.debug_info` inflates those, not the whole section.
pub(crate) struct SectionParts<'f> {
    size: u64,
    stored: Stored<'f>,
}

enum Stored<'f> {
    Plain {
        file: &'f File,
        offset: u64,
    },
    Memory(Arc<[u8]>),
    Packed {
        stream: Box<dyn std::io::Read + 'static>,
        out: Vec<u8>,
    },
}

impl<'f> SectionParts<'f> {
    /// The section `s` of `file`, with the same checks as [`section_bytes`]. `None` when its
    /// range is not in the file, or it claims to expand more than zlib or zstd can.
    pub(crate) fn new<'d>(file: &'f File, s: &impl ObjectSection<'d>) -> Option<SectionParts<'f>> {
        let range = checked_range(file, s)?;
        let size = range.uncompressed_size;
        let stored = match range.format {
            CompressionFormat::None => Stored::Plain {
                file,
                offset: range.offset,
            },
            format => {
                let mut packed = vec![0u8; usize::try_from(range.compressed_size).ok()?];
                file.read_exact_at(&mut packed, range.offset).ok()?;
                let packed = std::io::Cursor::new(packed);
                let stream: Box<dyn std::io::Read> = match format {
                    CompressionFormat::Zlib => Box::new(flate2::read::ZlibDecoder::new(packed)),
                    CompressionFormat::Zstandard => {
                        Box::new(zstd::stream::read::Decoder::with_buffer(packed).ok()?)
                    }
                    _ => return None,
                };
                Stored::Packed {
                    stream,
                    out: Vec::new(),
                }
            }
        };
        Some(SectionParts { size, stored })
    }

    /// All of `file`, as a section stored plainly.
    pub(crate) fn whole_file(file: &'f File) -> Option<SectionParts<'f>> {
        Some(SectionParts {
            size: file.metadata().ok()?.len(),
            stored: Stored::Plain { file, offset: 0 },
        })
    }

    /// A section already in memory.
    pub(crate) fn memory(bytes: Arc<[u8]>) -> SectionParts<'f> {
        SectionParts {
            size: bytes.len() as u64,
            stored: Stored::Memory(bytes),
        }
    }

    /// The section's size, uncompressed.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Appends the section's bytes `[offset, offset + len)` to `to`. `None` (and `to` as it
    /// was) when they are not all in the section or do not read.
    pub(crate) fn append(&mut self, offset: u64, len: u64, to: &mut Vec<u8>) -> Option<()> {
        let end = offset.checked_add(len).filter(|&e| e <= self.size)?;
        let (start, len) = (usize::try_from(offset).ok()?, usize::try_from(len).ok()?);
        match &mut self.stored {
            Stored::Memory(bytes) => to.extend_from_slice(bytes.get(start..start + len)?),
            Stored::Plain { file, offset: at } => {
                let was = to.len();
                to.resize(was + len, 0);
                if file.read_exact_at(&mut to[was..], *at + offset).is_err() {
                    to.truncate(was);
                    return None;
                }
            }
            Stored::Packed { stream, out } => {
                let end = usize::try_from(end).ok()?;
                if out.len() < end {
                    out.reserve(end - out.len());
                    let want = (end - out.len()) as u64;
                    stream.by_ref().take(want).read_to_end(out).ok()?;
                }
                to.extend_from_slice(out.get(start..start + len)?);
            }
        }
        Some(())
    }
}
