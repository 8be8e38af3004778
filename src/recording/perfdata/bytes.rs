//! The data section of a file-mode perf.data read from the file in chunks of whole records
//! each time it is walked, and never held whole, and the rest of the file held with zeros in
//! place of the data section (an anonymous mapping whose untouched pages take no memory).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::layout::{HEADER_SIZE, MAGIC, PIPE_HEADER_SIZE, u16_at, u32_at, u64_at};
use super::prepare::{Prepared, walk_records_at};

/// Bytes of the data section read at a time when it is walked from the file.
pub(super) const CHUNK: usize = 4 << 20;

/// The data section of a file-mode perf.data, read from the file in chunks of whole records
/// each time it is walked and never held whole: a day-long recording reads in the memory of a
/// few chunks. The file is checked when it is opened; if it changes afterwards, the walk stops
/// at the first record that does not fit and says so ([`take_error`](Self::take_error)).
#[derive(Debug)]
pub struct DataFile {
    pub(super) path: PathBuf,
    pub(super) file: std::fs::File,
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) chunk_count: usize,
    pub(super) error: Mutex<Option<String>>,
}

/// Iterator of [`DataFile::chunks`].
#[derive(Debug)]
pub struct Chunks<'a> {
    d: &'a DataFile,
    pos: u64,
    end: u64,
    /// A record that does not read is an error of the walk (the file changed after it was
    /// checked); the checking walk itself finds the reason on its own.
    report: bool,
}

/// The length of the whole records at the start of `b` (AUXTRACE payloads are not walked
/// here: such files are read whole).
pub(super) fn whole_records(b: &[u8]) -> usize {
    let mut off = 0usize;
    while let (Some(t), Some(size)) = (u32_at(b, off), u16_at(b, off + 6)) {
        let size = usize::from(size);
        if size < 8 || super::layout::has_trailing(t) || off + size > b.len() {
            break;
        }
        off += size;
    }
    off
}

impl DataFile {
    /// Chunks of whole records from the start of the records to their end.
    pub fn chunks(&self) -> Chunks<'_> {
        Chunks {
            d: self,
            pos: self.start,
            end: self.end,
            report: true,
        }
    }

    /// The open file.
    pub(super) fn into_file(self) -> std::fs::File {
        self.file
    }

    /// The chunks the records are read in.
    pub fn chunk_count(&self) -> usize {
        self.chunk_count
    }

    /// Why the last walk stopped early, if it did.
    pub fn take_error(&self) -> Option<String> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn fail(&self, why: String) {
        *self.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
    }

    fn read_at(&self, pos: u64, len: usize) -> Option<Vec<u8>> {
        use std::os::unix::fs::FileExt as _;
        let mut buf = vec![0u8; len];
        match self.file.read_exact_at(&mut buf, pos) {
            Ok(()) => Some(buf),
            Err(e) => {
                self.fail(format!(
                    "cannot read {} at offset {pos}: {e}; the records after it are lost",
                    self.path.display()
                ));
                None
            }
        }
    }

    /// [`walk_records`](super::prepare::walk_records) over the file's data section from `start` to at most `end`, a chunk
    /// at a time.
    pub(super) fn walk(
        &self,
        p: &mut Prepared,
        start: usize,
        end: usize,
        chunk_count: &mut usize,
        on_record: &mut dyn FnMut(usize, u32, &[u8]),
    ) -> (usize, Option<String>) {
        let mut pos = start;
        let chunks = Chunks {
            d: self,
            pos: start as u64,
            end: end as u64,
            report: false,
        };
        for chunk in chunks {
            *chunk_count += 1;
            let base = pos;
            let (done, stop) = walk_records_at(&chunk, 0, chunk.len(), pos, p, |at, t, rec| {
                on_record(base + at, t, rec)
            });
            if stop.is_some() {
                return (pos + done, stop);
            }
            pos += chunk.len();
        }
        if let Some(why) = self.take_error() {
            return (pos, Some(why));
        }
        if pos < end {
            // What stopped the chunks: the record there, walked alone for its message.
            let n = (end - pos).min(usize::from(u16::MAX) + 16);
            if let Some(tail) = self.read_at(pos as u64, n) {
                if let Some(t) = u32_at(&tail, 0).filter(|&t| super::layout::has_trailing(t)) {
                    // Its payload is not walked in chunks: the file is read whole instead.
                    *p.user_records.entry(t).or_default() += 1;
                    return (pos, None);
                }
                let (done, stop) = walk_records_at(&tail, 0, tail.len(), pos, p, |at, t, rec| {
                    on_record(pos + at, t, rec)
                });
                return (pos + done, stop);
            }
            return (pos, self.take_error());
        }
        (pos, None)
    }
}

impl Iterator for Chunks<'_> {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        if self.pos >= self.end {
            return None;
        }
        let len = usize::try_from(self.end - self.pos).map_or(CHUNK, |n| n.min(CHUNK));
        let mut buf = self.d.read_at(self.pos, len)?;
        let whole = whole_records(&buf);
        if whole == 0 {
            if self.report {
                self.d.fail(format!(
                    "the record at offset {} of {} does not read (the file changed after it was opened?); the records after it are lost",
                    self.pos,
                    self.d.path.display()
                ));
            }
            return None;
        }
        buf.truncate(whole);
        self.pos += whole as u64;
        Some(buf)
    }
}

/// A perf.data file's bytes: the whole file, or the file without its data section.
pub(super) enum FileBytes {
    /// The whole file.
    Whole(Vec<u8>),
    /// The file with zeros in place of its data section, in an anonymous mapping: its pages
    /// are the kernel's shared zero page until written, so the data section's span takes no
    /// memory (an allocator's zeroed buffer may be written over to zero it).
    Sparse(memmap2::MmapMut),
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Whole(v) => v,
            FileBytes::Sparse(m) => m,
        }
    }
}

/// A perf.data whose records can be read from the file as they are walked: the file without
/// its records ([`FileBytes::Sparse`]) and the open data section (file mode), or the stream
/// after its header (pipe mode). `None` for anything else (no data size, sections outside the
/// file, unreadable): those take the whole-file path, whose checks say what is wrong.
pub(super) fn streamable(path: &Path) -> Option<(FileBytes, DataFile)> {
    use std::os::unix::fs::FileExt as _;
    let file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let mut head = [0u8; HEADER_SIZE as usize];
    file.read_exact_at(&mut head, 0).ok()?;
    let h = |at: usize| u64_at(&head, at).unwrap_or(0);
    if head[..8] != MAGIC {
        return None;
    }
    // Pipe mode: the records follow the 16-byte header to the end of the file.
    let (data_off, data_size) = match h(8) {
        PIPE_HEADER_SIZE => (PIPE_HEADER_SIZE, len.checked_sub(PIPE_HEADER_SIZE)?),
        HEADER_SIZE => (h(40), h(48)),
        _ => return None,
    };
    let data_end = data_off.checked_add(data_size)?;
    if data_off < h(8) || data_size == 0 || data_end > len {
        return None;
    }
    let mut sparse = memmap2::MmapOptions::new()
        .len(usize::try_from(len).ok()?)
        .map_anon()
        .ok()?;
    let (a, b) = (data_off as usize, data_end as usize);
    file.read_exact_at(sparse.get_mut(..a)?, 0).ok()?;
    file.read_exact_at(sparse.get_mut(b..)?, data_end).ok()?;
    Some((
        FileBytes::Sparse(sparse),
        DataFile {
            path: path.to_path_buf(),
            file,
            start: data_off,
            end: data_end,
            chunk_count: 0,
            error: Mutex::new(None),
        },
    ))
}
