//! Appending blocks to a recording.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::format::{self, BLOCK_HEADER, MAX_BLOCK_RAW, MAX_NAME};
use super::{BlockInfo, BlockKind, Codec, DataError, MAGIC, Meta, Trailer, VERSION, codec};

/// zstd level for every block. Level 3 (zstd's default) against level 1 on real cpu-clock
/// samples after the column transform: about 5% smaller at a compression cost that stays far
/// below the ring-buffer drain rate (the writer compresses a few MB/s at most), so 3.
pub const ZSTD_LEVEL: i32 = 3;

/// A block compressor at `level`, with checksums and content sizes in its frames.
/// The zstd level of [`Writer::write_side_packed`].
pub const SIDE_LEVEL: i32 = 19;

fn compressor(path: &Path, level: i32) -> Result<zstd::bulk::Compressor<'static>, DataError> {
    let err = |source| DataError::Compress {
        path: path.to_path_buf(),
        source,
    };
    let mut zstd = zstd::bulk::Compressor::new(level).map_err(err)?;
    zstd.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
        .and_then(|()| zstd.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(true)))
        .map_err(err)?;
    Ok(zstd)
}

/// Writes a recording: the header at [`Writer::create`], then one block per call, then the
/// trailer and footer at [`Writer::finish`]. It is `Send`, for a dedicated writer thread.
///
/// Each block is a single `write_all` on an unbuffered file, so a crash loses at most the block
/// being written. If a write fails (disk full), the writer cuts the file back to the end of the
/// last complete block and returns the error; the caller may retry or finish. If even that cut
/// fails, every later call fails with [`DataError::WriterFailed`].
pub struct Writer {
    path: PathBuf,
    file: File,
    /// End of the last complete block: the file length if all went well.
    offset: u64,
    blocks: Vec<BlockInfo>,
    zstd: zstd::bulk::Compressor<'static>,
    /// Records blocks get the column transform ([`codec::encode`]) before zstd; off: zstd
    /// alone ([`Writer::set_columns`]).
    columns: bool,
    failed: Option<String>,
    /// The scratch name of a [`Writer::prepare`]d file until [`Writer::publish`] puts it at
    /// `path`.
    staged: Option<PathBuf>,
}

impl fmt::Debug for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("path", &self.path)
            .field("offset", &self.offset)
            .field("blocks", &self.blocks.len())
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> DataError {
    let path = path.to_path_buf();
    move |source| DataError::Io {
        action,
        path,
        source,
    }
}

/// `.<name>.<pid>.new` beside `path`: where a prepared file waits to be published.
fn staged_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_os_string());
    let mut s = std::ffi::OsString::from(".");
    s.push(name);
    s.push(format!(".{}.new", std::process::id()));
    path.with_file_name(s)
}

/// `<path>.old`
fn old_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".old");
    PathBuf::from(s)
}

impl Writer {
    /// Creates the file (mode 0600; an existing one becomes `<path>.old`, like perf's
    /// `perf.data.old`) and writes and syncs the header: [`Writer::prepare`], then
    /// [`Writer::publish`].
    pub fn create(path: &Path, meta: &Meta) -> Result<Writer, DataError> {
        let mut w = Writer::prepare(path, meta)?;
        if let Err(e) = w.publish() {
            w.abandon();
            return Err(e);
        }
        Ok(w)
    }

    /// Writes and syncs the header of the file that will be `path`, under a scratch name
    /// beside it (milliseconds: the sync), leaving whatever is at `path` untouched until
    /// [`Writer::publish`] (or [`Writer::abandon`], which removes the scratch file). A file
    /// that cannot take its header (a full disk) is removed at once.
    pub fn prepare(path: &Path, meta: &Meta) -> Result<Writer, DataError> {
        let json = serde_json::to_vec(meta).map_err(|source| DataError::BadJson {
            path: path.to_path_buf(),
            what: "header metadata",
            source,
        })?;
        if json.len() as u64 > format::MAX_META {
            return Err(DataError::TooLarge {
                path: path.to_path_buf(),
                what: "header metadata",
                len: json.len() as u64,
                max: format::MAX_META,
            });
        }
        // Version 2: the metadata as one zstd frame (with its content size, which the reader
        // checks before it allocates).
        let json = compressor(path, SIDE_LEVEL)?
            .compress(&json)
            .map_err(|source| DataError::Compress {
                path: path.to_path_buf(),
                source,
            })?;
        let staged = staged_path(path);
        // A scratch file of a recorder that died with this pid before.
        let _ = std::fs::remove_file(&staged);
        let undo = |e: DataError| {
            let _ = std::fs::remove_file(&staged);
            e
        };
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&staged)
            .map_err(io_err("create", path))?;
        let start = format::data_start(json.len() as u64);
        let mut header = Vec::with_capacity(start as usize);
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&(json.len() as u32).to_le_bytes());
        header.extend_from_slice(&json);
        header.resize(start as usize, 0);
        file.write_all(&header)
            .map_err(|e| undo(io_err("write to", path)(e)))?;
        // The header reaches the disk before any block: a file that has blocks has a header.
        file.sync_data()
            .map_err(|e| undo(io_err("sync", path)(e)))?;
        let zstd = compressor(path, ZSTD_LEVEL).map_err(undo)?;
        Ok(Writer {
            path: path.to_path_buf(),
            file,
            offset: start,
            blocks: Vec::new(),
            zstd,
            columns: true,
            failed: None,
            staged: Some(staged),
        })
    }

    /// Puts a [`Writer::prepare`]d file at its path: an existing file there (or symlink,
    /// never followed) becomes `<path>.old`. Two renames; nothing to do for a published file.
    pub fn publish(&mut self) -> Result<(), DataError> {
        let Some(staged) = self.staged.take() else {
            return Ok(());
        };
        let path = &self.path;
        let moved = path.symlink_metadata().is_ok();
        let old = old_path(path);
        if moved {
            std::fs::rename(path, &old)
                .map_err(io_err("rename the previous recording", path))
                .inspect_err(|_| self.staged = Some(staged.clone()))?;
        }
        std::fs::rename(&staged, path).map_err(|e| {
            // The previous recording back where it was.
            if moved {
                let _ = std::fs::rename(&old, path);
            }
            self.staged = Some(staged.clone());
            io_err("create", path)(e)
        })
    }

    /// Removes the scratch file of a [`Writer::prepare`]d recording that never started (its
    /// workload could not run): whatever is at the path stays as it was. A published file is
    /// left alone.
    pub fn abandon(self) {
        if let Some(staged) = &self.staged {
            let _ = std::fs::remove_file(staged);
        }
    }

    /// Fails as [`Writer::create`] would where the file cannot be created at all (a directory
    /// that does not exist or is not writable, a read-only file system), creating and removing
    /// a scratch file beside `path`: checked before the workload starts, so that it does not
    /// run unrecorded.
    pub fn check_can_create(path: &Path) -> Result<(), DataError> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut name = std::ffi::OsString::from(".");
        name.push(path.file_name().unwrap_or_default());
        name.push(format!(".hrec-probe-{}", std::process::id()));
        let probe = dir.join(name);
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&probe)
            .map_err(io_err("create", path))?;
        let _ = std::fs::remove_file(&probe);
        Ok(())
    }

    /// Compresses the blocks written from now on at zstd `level` (1 fastest ..= 22 smallest;
    /// `record -z N`); readers need nothing to know it.
    pub fn set_level(&mut self, level: i32) -> Result<(), DataError> {
        self.zstd = compressor(&self.path, level)?;
        Ok(())
    }

    /// Whether the Records blocks written from now on get the column transform before zstd
    /// (on by default). It takes about six times zstd's time for the fewest bytes: a recorder
    /// pressed by the kernel turns it off for a while (zstd alone: 3.5 bytes a sample rather
    /// than 2.6 on the tracepoint records of `scripts/bench-trace.sh`) rather than lose
    /// samples. Readers need nothing to know it: each block names its codec.
    pub fn set_columns(&mut self, on: bool) {
        self.columns = on;
    }

    /// Writes one block of raw kernel records from ring buffer `source` (`u32::MAX` if none).
    pub fn write_records(&mut self, records: &[u8], source: u32) -> Result<BlockInfo, DataError> {
        self.write_records_timed(records, source, 0, 0)
    }

    /// [`write_records`](Self::write_records), with the times of the first and last record
    /// stored in the block header (so a reader can skip blocks by time).
    pub fn write_records_timed(
        &mut self,
        records: &[u8],
        source: u32,
        first_time: u64,
        last_time: u64,
    ) -> Result<BlockInfo, DataError> {
        self.check_len("record block", records.len() as u64, MAX_BLOCK_RAW)?;
        let columns = if self.columns {
            codec::encode(records)
        } else {
            None
        };
        let (codec, payload) = match columns {
            Some(columns) => (Codec::Columns3, self.compress(&columns)?),
            None => (Codec::Zstd, self.compress(records)?),
        };
        let info = BlockInfo {
            kind: BlockKind::Records,
            codec,
            name: String::new(),
            offset: self.offset,
            compressed_len: payload.len() as u64,
            raw_len: records.len() as u64,
            records: codec::count_records(records),
            source,
            first_time,
            last_time,
        };
        self.append(info, &payload, &[])
    }

    /// Writes a named blob ("kallsyms", "modules", "build-ids", ...).
    pub fn write_side(&mut self, name: &str, bytes: &[u8]) -> Result<BlockInfo, DataError> {
        self.side(name, bytes, None)
    }

    /// [`write_side`](Self::write_side) at zstd level [`SIDE_LEVEL`], for the few small blocks
    /// written once per file (the vdso, build-ids, kernel symbols): a few milliseconds buy a
    /// tenth of their size.
    pub fn write_side_packed(&mut self, name: &str, bytes: &[u8]) -> Result<BlockInfo, DataError> {
        self.side(name, bytes, Some(SIDE_LEVEL))
    }

    fn side(
        &mut self,
        name: &str,
        bytes: &[u8],
        level: Option<i32>,
    ) -> Result<BlockInfo, DataError> {
        self.check_len("side block name", name.len() as u64, MAX_NAME as u64)?;
        self.check_len("side block", bytes.len() as u64, MAX_BLOCK_RAW)?;
        let payload = self.compress_at(bytes, level)?;
        let info = BlockInfo {
            kind: BlockKind::Side,
            codec: Codec::Zstd,
            name: name.to_string(),
            offset: self.offset,
            compressed_len: payload.len() as u64,
            raw_len: bytes.len() as u64,
            records: 0,
            source: u32::MAX,
            first_time: 0,
            last_time: 0,
        };
        self.append(info, &payload, &[])
    }

    /// Writes the trailer (with `trailer.blocks` replaced by the index of every block written)
    /// and the footer, and syncs the file. Returns the file size.
    pub fn finish(mut self, mut trailer: Trailer) -> Result<u64, DataError> {
        trailer.blocks = std::mem::take(&mut self.blocks);
        let json = serde_json::to_vec(&trailer).map_err(|source| DataError::BadJson {
            path: self.path.clone(),
            what: "trailer",
            source,
        })?;
        self.check_len("trailer", json.len() as u64, MAX_BLOCK_RAW)?;
        let payload = self.compress_at(&json, Some(SIDE_LEVEL))?;
        let info = BlockInfo {
            kind: BlockKind::Trailer,
            codec: Codec::Zstd,
            name: String::new(),
            offset: self.offset,
            compressed_len: payload.len() as u64,
            raw_len: json.len() as u64,
            records: 0,
            source: u32::MAX,
            first_time: 0,
            last_time: 0,
        };
        let footer = format::footer(info.offset, info.file_len());
        self.append(info, &payload, &footer)?;
        self.file.sync_all().map_err(io_err("sync", &self.path))?;
        Ok(self.offset)
    }

    /// Renames the file being written (`record --switch-output`); it stays open, and later
    /// messages name the new path.
    pub fn rename(&mut self, to: &Path) -> Result<(), DataError> {
        std::fs::rename(&self.path, to).map_err(io_err("rename", &self.path))?;
        self.path = to.to_path_buf();
        Ok(())
    }

    /// Bytes in the file so far (header and complete blocks).
    pub fn bytes_written(&self) -> u64 {
        self.offset
    }

    /// The blocks written so far.
    pub fn blocks(&self) -> &[BlockInfo] {
        &self.blocks
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn check_len(&self, what: &'static str, len: u64, max: u64) -> Result<(), DataError> {
        if let Some(reason) = &self.failed {
            return Err(DataError::WriterFailed {
                path: self.path.clone(),
                reason: reason.clone(),
            });
        }
        if len > max {
            return Err(DataError::TooLarge {
                path: self.path.clone(),
                what,
                len,
                max,
            });
        }
        Ok(())
    }

    fn compress(&mut self, bytes: &[u8]) -> Result<Vec<u8>, DataError> {
        self.compress_at(bytes, None)
    }

    /// Compressed at `level`, or at the writer's level.
    fn compress_at(&mut self, bytes: &[u8], level: Option<i32>) -> Result<Vec<u8>, DataError> {
        let err = |source| DataError::Compress {
            path: self.path.clone(),
            source,
        };
        match level {
            None => self.zstd.compress(bytes).map_err(err),
            Some(level) => compressor(&self.path, level)?.compress(bytes).map_err(err),
        }
    }

    /// One `write_all` of header, name, payload and `tail` (the footer, for the trailer).
    fn append(
        &mut self,
        info: BlockInfo,
        payload: &[u8],
        tail: &[u8],
    ) -> Result<BlockInfo, DataError> {
        let mut buf = format::block_header(&info);
        debug_assert_eq!(buf.len(), BLOCK_HEADER + info.name.len());
        buf.reserve(payload.len() + tail.len());
        buf.extend_from_slice(payload);
        buf.extend_from_slice(tail);
        if let Err(source) = self.file.write_all(&buf) {
            // Cut a partial block off so later blocks do not follow garbage; if that fails
            // too, stop writing (a reader still reads everything before `offset`).
            let rolled_back = self.file.set_len(self.offset).is_ok()
                && self.file.seek(SeekFrom::Start(self.offset)).is_ok();
            if !rolled_back {
                self.failed = Some(source.to_string());
            }
            return Err(DataError::Io {
                action: "write to",
                path: self.path.clone(),
                source,
            });
        }
        self.offset += buf.len() as u64;
        if info.kind != BlockKind::Trailer {
            self.blocks.push(info.clone());
        }
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Reader;

    fn assert_send<T: Send>() {}

    #[test]
    fn writer_is_send() {
        assert_send::<Writer>();
    }

    /// A failing write (here: the fd swapped for a read-only one, as close to ENOSPC as a test
    /// gets without a full disk) is an error, not a panic; the file keeps its complete blocks.
    #[test]
    fn failed_write_is_an_error_and_keeps_earlier_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hrec.data");
        let mut w = Writer::create(&path, &Meta::default()).unwrap();
        w.write_side("kallsyms", b"ffffffff81000000 T _stext\n")
            .unwrap();
        let good = w.bytes_written();
        w.file = File::open(&path).unwrap();
        let err = w.write_records(&[0u8; 64], 0).unwrap_err();
        assert!(err.to_string().starts_with("cannot write to "), "{err}");
        // set_len on a read-only fd fails as well, so the writer refuses further blocks.
        let err = w.write_side("modules", b"x").unwrap_err();
        assert!(matches!(err, DataError::WriterFailed { .. }), "{err}");
        assert!(w.finish(Trailer::default()).is_err());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), good);
        let r = Reader::open(&path).unwrap();
        assert_eq!(r.blocks().len(), 1);
        assert!(r.truncated().is_some());
        assert_eq!(
            r.side("kallsyms").unwrap().unwrap(),
            b"ffffffff81000000 T _stext\n"
        );
    }

    /// A trailer whose index leaves a block out, or lists one its header disagrees with,
    /// hides no intact block: the reader walks the blocks instead and says why.
    #[test]
    fn an_index_that_disagrees_with_the_blocks_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        for damage in ["left out", "disagrees"] {
            let path = dir.path().join(format!("{damage}.data"));
            let mut w = Writer::create(&path, &Meta::default()).unwrap();
            for n in [1u8, 2, 3] {
                w.write_side(&format!("side{n}"), &[n; 100]).unwrap();
            }
            match damage {
                "left out" => {
                    w.blocks.remove(1);
                }
                _ => w.blocks[1].raw_len += 1,
            }
            w.finish(Trailer::default()).unwrap();
            let r = Reader::open(&path).unwrap();
            assert_eq!(r.blocks().len(), 3, "{damage}");
            let why = r.truncated().unwrap();
            assert!(why.contains("read by walking them"), "{damage}: {why}");
            assert_eq!(
                r.side("side2").unwrap().unwrap(),
                vec![2u8; 100],
                "{damage}"
            );
        }
    }
}
