//! Opening a recording, finished or not.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::format::{
    self, BLOCK_HEADER, END_MAGIC, FILE_HEADER, FOOTER, MAX_BLOCK_RAW, MAX_META, le64,
};
use super::{BlockInfo, BlockKind, DataError, MAGIC, Meta, Trailer, VERSION};

/// A recording opened for reading.
///
/// A finished file is indexed from its trailer. A file without a valid footer (the recorder was
/// killed, the disk filled up) is indexed by walking the block headers from the start up to the
/// last complete one whose payload checks out; [`truncated`](Self::truncated) then says why the
/// walk stopped. Blocks are read and checked on demand: a damaged block in the middle is an
/// error naming its offset when it is read, not when the file is opened.
#[derive(Debug)]
pub struct Reader {
    path: PathBuf,
    file: File,
    len: u64,
    meta: Meta,
    data_start: u64,
    blocks: Vec<BlockInfo>,
    trailer: Option<Trailer>,
    truncated: Option<String>,
}

/// Why a block header could not be read during a walk.
enum HeaderError {
    /// The file ends inside the block.
    Cut(String),
    /// The bytes are not a valid block header.
    Invalid(String),
    /// Reading failed.
    Io(DataError),
}

impl Reader {
    /// Opens and indexes a recording.
    pub fn open(path: &Path) -> Result<Reader, DataError> {
        let file = File::open(path).map_err(|source| DataError::Io {
            action: "open",
            path: path.to_path_buf(),
            source,
        })?;
        let len = file
            .metadata()
            .map_err(|source| DataError::Io {
                action: "stat",
                path: path.to_path_buf(),
                source,
            })?
            .len();
        let mut r = Reader {
            path: path.to_path_buf(),
            file,
            len,
            meta: Meta::default(),
            data_start: 0,
            blocks: Vec::new(),
            trailer: None,
            truncated: None,
        };
        r.read_header()?;
        r.index()?;
        Ok(r)
    }

    /// The header metadata.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// The trailer of a finished recording.
    pub fn trailer(&self) -> Option<&Trailer> {
        self.trailer.as_ref()
    }

    /// Why the file is incomplete (no trailer, a half-written last block, ...), or `None` for a
    /// finished recording.
    pub fn truncated(&self) -> Option<&str> {
        self.truncated.as_deref()
    }

    /// Every readable block before the trailer, in file order.
    pub fn blocks(&self) -> &[BlockInfo] {
        &self.blocks
    }

    /// The file size.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// The path the reader was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The raw bytes of a block, exactly as the writer was given them (decompressed, codec
    /// undone, checksum verified).
    pub fn read_block(&self, info: &BlockInfo) -> Result<Vec<u8>, DataError> {
        let corrupt = |reason: String| DataError::Corrupt {
            path: self.path.clone(),
            offset: info.offset,
            reason,
        };
        let found = match self.header_at(info.offset) {
            Ok(found) => found,
            Err(HeaderError::Io(e)) => return Err(e),
            Err(HeaderError::Cut(r) | HeaderError::Invalid(r)) => return Err(corrupt(r)),
        };
        if found != *info {
            return Err(corrupt(
                "the block header does not match the trailer's index".to_string(),
            ));
        }
        let payload = self.read_at(info.payload_offset(), info.compressed_len)?;
        format::decode_payload(info, &payload).map_err(corrupt)
    }

    /// The raw record bytes of every `Records` block, in file order.
    pub fn records(&self) -> impl Iterator<Item = Result<(&BlockInfo, Vec<u8>), DataError>> {
        self.blocks
            .iter()
            .filter(|b| b.kind == BlockKind::Records)
            .map(|b| self.read_block(b).map(|bytes| (b, bytes)))
    }

    /// The first side block called `name`, if there is one.
    pub fn side(&self, name: &str) -> Result<Option<Vec<u8>>, DataError> {
        match self
            .blocks
            .iter()
            .find(|b| b.kind == BlockKind::Side && b.name == name)
        {
            Some(b) => self.read_block(b).map(Some),
            None => Ok(None),
        }
    }

    /// Every side block called `name`, in file order.
    pub fn sides<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = Result<Vec<u8>, DataError>> + 'a {
        self.blocks
            .iter()
            .filter(move |b| b.kind == BlockKind::Side && b.name == name)
            .map(|b| self.read_block(b))
    }

    /// Reads `n` bytes at `offset`, which the caller has checked lie inside the file.
    fn read_at(&self, offset: u64, n: u64) -> Result<Vec<u8>, DataError> {
        let end = offset.checked_add(n).filter(|&e| e <= self.len);
        let Some(_) = end else {
            return Err(DataError::Corrupt {
                path: self.path.clone(),
                offset,
                reason: format!("{n} bytes at offset {offset} lie past the end of the file"),
            });
        };
        let mut buf = vec![0u8; n as usize];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|source| DataError::Io {
                action: "read",
                path: self.path.clone(),
                source,
            })?;
        Ok(buf)
    }

    fn read_header(&mut self) -> Result<(), DataError> {
        /// A version 2 (or later) header's metadata: a zstd frame whose declared content size is at most
        /// [`MAX_META`] and is what it inflates to.
        fn inflate_meta(frame: &[u8]) -> Result<Vec<u8>, String> {
            let size = match zstd::zstd_safe::get_frame_content_size(frame) {
                Ok(Some(n)) if n <= MAX_META => n as usize,
                Ok(Some(n)) => return Err(format!("metadata of {n} bytes")),
                _ => return Err("metadata is not a zstd frame with its size".to_string()),
            };
            let json = zstd::bulk::Decompressor::new()
                .and_then(|mut d| d.decompress(frame, size))
                .map_err(|e| format!("metadata: zstd: {e}"))?;
            if json.len() != size {
                return Err(format!(
                    "metadata inflates to {} bytes, its frame says {size}",
                    json.len()
                ));
            }
            Ok(json)
        }

        let head = self.read_at(0, self.len.min(FILE_HEADER as u64))?;
        let truncated = |needed: u64| DataError::TruncatedHeader {
            path: self.path.clone(),
            len: self.len,
            needed,
        };
        let n = head.len().min(8);
        let start = head.get(..n).unwrap_or_default();
        if MAGIC.get(..n) != Some(start) {
            return Err(DataError::NotHrec {
                path: self.path.clone(),
                found: format!("{:?}", String::from_utf8_lossy(start)),
            });
        }
        if head.len() < FILE_HEADER {
            return Err(truncated(FILE_HEADER as u64));
        }
        let version = format::le32(&head, 8);
        if version > VERSION {
            return Err(DataError::NewerVersion {
                path: self.path.clone(),
                version,
            });
        }
        let meta_len = u64::from(format::le32(&head, 12));
        if version == 0 || meta_len > MAX_META {
            return Err(DataError::BadHeader {
                path: self.path.clone(),
                reason: format!("format version {version}, {meta_len} bytes of metadata"),
            });
        }
        let start = format::data_start(meta_len);
        if self.len < start {
            return Err(truncated(start));
        }
        let stored = self.read_at(FILE_HEADER as u64, meta_len)?;
        let json = if version == 1 {
            stored
        } else {
            inflate_meta(&stored).map_err(|reason| DataError::BadHeader {
                path: self.path.clone(),
                reason,
            })?
        };
        self.meta = serde_json::from_slice(&json).map_err(|source| DataError::BadJson {
            path: self.path.clone(),
            what: "header metadata",
            source,
        })?;
        self.data_start = start;
        Ok(())
    }

    /// Builds the block index from the trailer, or by walking the blocks.
    fn index(&mut self) -> Result<(), DataError> {
        let mut damaged = None;
        if self.len >= self.data_start + (FOOTER + BLOCK_HEADER) as u64 {
            let footer = self.read_at(self.len - FOOTER as u64, FOOTER as u64)?;
            if footer.get(16..) == Some(&END_MAGIC[..]) {
                match self.trailer_from_footer(le64(&footer, 0), le64(&footer, 8))? {
                    Ok(trailer) => {
                        self.blocks = trailer.blocks.clone();
                        self.trailer = Some(trailer);
                        return Ok(());
                    }
                    Err(reason) => damaged = Some(reason),
                }
            }
        }
        let reason = self.walk()?;
        self.truncated = Some(match damaged {
            // The trailer itself is whole (its counts are kept); only its index is not.
            Some(d) if self.trailer.is_some() => format!(
                "the trailer's index does not fit the file's blocks ({d}); they were read by walking them"
            ),
            Some(d) => format!("{reason} (the footer points at a damaged trailer: {d})"),
            None => reason,
        });
        Ok(())
    }

    /// The trailer the footer points at, with its index checked against the file.
    fn trailer_from_footer(
        &self,
        offset: u64,
        len: u64,
    ) -> Result<Result<Trailer, String>, DataError> {
        if offset < self.data_start || offset.checked_add(len) != Some(self.len - FOOTER as u64) {
            return Ok(Err(format!(
                "trailer at {offset} of {len} bytes does not end at the footer"
            )));
        }
        let info = match self.header_at(offset) {
            Ok(info) => info,
            Err(HeaderError::Io(e)) => return Err(e),
            Err(HeaderError::Cut(r) | HeaderError::Invalid(r)) => return Ok(Err(r)),
        };
        if info.kind != BlockKind::Trailer || info.file_len() != len {
            return Ok(Err(format!("the block at {offset} is not the trailer")));
        }
        let trailer = match self.decode_trailer(&info)? {
            Ok(t) => t,
            Err(e) => return Ok(Err(e)),
        };
        // The index must list every block, in order, as its header gives it: one that
        // leaves a block out or disagrees with a header would hide intact blocks, so the
        // blocks are walked instead.
        let mut end = self.data_start;
        for b in &trailer.blocks {
            if b.offset != end {
                return Ok(Err(format!(
                    "the trailer's index leaves out the bytes at {end}..{}",
                    b.offset
                )));
            }
            let fits = b.kind != BlockKind::Trailer
                && b.raw_len <= MAX_BLOCK_RAW
                && b.name.len() <= format::MAX_NAME
                && b.offset
                    .checked_add(b.file_len())
                    .is_some_and(|e| e <= offset);
            if !fits {
                return Ok(Err(format!(
                    "the trailer's index lists a block at {} that does not fit the file",
                    b.offset
                )));
            }
            match self.header_at(b.offset) {
                Ok(found) if found == *b => {}
                Err(HeaderError::Io(e)) => return Err(e),
                _ => {
                    return Ok(Err(format!(
                        "the block at {} is not the one the trailer's index lists",
                        b.offset
                    )));
                }
            }
            end = b.offset + b.file_len();
        }
        if end != offset {
            return Ok(Err(format!(
                "the trailer's index leaves out the bytes at {end}..{offset}"
            )));
        }
        Ok(Ok(trailer))
    }

    fn decode_trailer(&self, info: &BlockInfo) -> Result<Result<Trailer, String>, DataError> {
        let payload = self.read_at(info.payload_offset(), info.compressed_len)?;
        let json = match format::decode_payload(info, &payload) {
            Ok(json) => json,
            Err(e) => return Ok(Err(e)),
        };
        Ok(serde_json::from_slice(&json).map_err(|e| format!("trailer JSON: {e}")))
    }

    /// Walks the block headers from the start; returns why there is no usable trailer.
    fn walk(&mut self) -> Result<String, DataError> {
        let mut pos = self.data_start;
        let mut blocks = Vec::new();
        let mut reason = loop {
            if pos == self.len {
                break format!(
                    "no trailer: the recording did not finish (hrec was killed or the disk filled up); {} complete blocks end at offset {pos}",
                    blocks.len()
                );
            }
            let info = match self.header_at(pos) {
                Ok(info) => info,
                Err(HeaderError::Io(e)) => return Err(e),
                Err(HeaderError::Cut(r)) => break r,
                Err(HeaderError::Invalid(r)) => {
                    break format!(
                        "no valid block at offset {pos} ({r}); {} blocks before it",
                        blocks.len()
                    );
                }
            };
            if info.kind == BlockKind::Trailer {
                if let Ok(trailer) = self.decode_trailer(&info)? {
                    self.trailer = Some(trailer);
                    break format!(
                        "the footer after the trailer at offset {pos} is missing or damaged"
                    );
                }
                break format!("the trailer at offset {pos} is damaged");
            }
            pos += info.file_len();
            blocks.push(info);
        };
        // The last block may have reached the disk only partly (a crash can leave a file
        // extended with zeros): check its payload, drop it if it fails.
        if let Some(last) = blocks.last()
            && let Err(e) = self.read_block(last)
        {
            reason =
                format!("the last block is damaged and was left out: {e}; before it: {reason}");
            blocks.pop();
        }
        self.blocks = blocks;
        Ok(reason)
    }

    /// Reads and checks the block header at `offset`, and that the whole block is in the file.
    fn header_at(&self, offset: u64) -> Result<BlockInfo, HeaderError> {
        let left = self.len.saturating_sub(offset);
        if left < BLOCK_HEADER as u64 {
            return Err(HeaderError::Cut(format!(
                "the block at offset {offset} is cut short ({left} of {BLOCK_HEADER} header bytes): the recording stopped while writing it"
            )));
        }
        let bytes = self
            .read_at(offset, BLOCK_HEADER as u64)
            .map_err(HeaderError::Io)?;
        let mut fixed = [0u8; BLOCK_HEADER];
        fixed.copy_from_slice(&bytes);
        let raw = format::parse_header(fixed).map_err(HeaderError::Invalid)?;
        let need_name = (BLOCK_HEADER + raw.name_len) as u64;
        if left < need_name {
            return Err(HeaderError::Cut(format!(
                "the block at offset {offset} is cut short ({left} of {need_name} header bytes): the recording stopped while writing it"
            )));
        }
        let name = self
            .read_at(offset + BLOCK_HEADER as u64, raw.name_len as u64)
            .map_err(HeaderError::Io)?;
        let info = format::finish_header(&raw, &name, offset).map_err(HeaderError::Invalid)?;
        if left < info.file_len() {
            return Err(HeaderError::Cut(format!(
                "the block at offset {offset} is cut short ({left} of {} bytes): the recording stopped while writing it",
                info.file_len()
            )));
        }
        Ok(info)
    }
}
