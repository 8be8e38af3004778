//! hrec's own recording file (`hrec.data`): compact, crash-safe, readable after a SIGKILL.
//!
//! The byte layout is documented in `docs/file-format.md`; in short:
//!
//! ```text
//! header   "HRECDATA" u32 version, u32 meta_len, Meta (a zstd frame of JSON), zero pad to 8
//! block*   48-byte block header, [side name], zstd frame (with checksum)
//! trailer  a block of kind Trailer: JSON statistics + the block index
//! footer   u64 trailer offset, u64 trailer block length, "HREC_END"
//! ```
//!
//! The header's [`Meta`] holds what a reader needs before the first record, among it each
//! event with its attr as the kernel saw it, its ids and its [`Role`] (sampler, counted,
//! tracking, off-CPU), the PMUs, and the NUMA nodes' CPU lists for `c2c report`. Files of
//! earlier format versions are still read ([`VERSION`]).
//!
//! Domain rules the design follows:
//!
//! * **Blocks are independent.** A recording is written while the profiled program runs and may
//!   be cut at any byte (SIGKILL, OOM kill, full disk, power loss). Each block is one
//!   `write_all` of its header and one complete zstd frame, with no compression dictionary or
//!   codec state shared with earlier blocks, so every block that reached the file whole can be
//!   decoded on its own and a cut only loses the block being written.
//! * **The footer makes the index cheap, not necessary.** A finished file ends with a fixed
//!   24-byte footer pointing at the trailer (statistics and the offset of every block), so a
//!   reader seeks to the end and knows everything. Without a valid footer the reader walks the
//!   block headers from the start, each protected by its own check value, and stops at the
//!   first incomplete or invalid one, reporting why in [`Reader::truncated`].
//! * **Nothing read from the file is trusted.** Every length is checked against the file size
//!   and a fixed cap before anything is allocated; zstd's frame checksum detects a flipped byte
//!   in a payload, and the error names the block offset.
//! * **Perf records compress best as columns.** A sample is a handful of u64 words (ip,
//!   pid/tid, time, period, ...) whose values change slowly from one sample to the next: the tid
//!   repeats, the period is constant, the time advances by almost the same step, the ip moves
//!   around a few hot spots. Interleaved, these patterns hide from a general compressor. The
//!   `Records` codec ([`codec`]) groups records by *shape* (their 8-byte header: type, misc,
//!   size) and stores each word position of a shape as a column, per block in the cheapest of
//!   delta, delta-of-delta, stride (delta minus the block's median delta), dictionary or raw
//!   mode, with residuals and dictionary indices coded by an adaptive binary range coder in
//!   context (the previous residual's size, the previous index); only then runs zstd. That
//!   turns ~4.5-6 bytes per sample (zstd of the raw records) into ~2.

// Byte and text parsing: no indexing that can panic, no unwrap/expect outside tests.
#![cfg_attr(
    not(test),
    deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)
)]

// The range coder indexes its probability tables with values bounded by construction in its
// hot loop; checked reads there would cost speed for no safety the fuzzer does not already
// give (docs/reliability.md).
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]
pub mod codec;
mod format;
pub mod meta;
pub mod offcpu;
mod reader;
pub mod stacks;
mod writer;

use std::io;
use std::path::PathBuf;

pub use format::{BlockInfo, BlockKind, Codec};
pub use meta::{
    EventId, EventMeta, FinalCount, Meta, MetricChoiceMeta, PmuMeta, Role, ThreadCount, Trailer,
};
pub use reader::Reader;
pub use writer::{Writer, ZSTD_LEVEL};

/// The magic at offset 0 of every hrec recording.
pub const MAGIC: [u8; 8] = *b"HRECDATA";
/// The format version this build writes and the newest it reads. Version 3: record blocks
/// use the third column layout (`Codec::Columns3`, dictionary tables range-coded). Version 2:
/// the header's metadata is one zstd frame of its JSON (version 1: the JSON itself), and
/// record blocks use the second column layout (`Codec::Columns2`). Versions 1 and 2 are
/// still read.
pub const VERSION: u32 = 3;
/// How many bytes of records a writer thread should collect per `Records` block. Each block
/// pays a zstd frame, its own column dictionaries (e.g. the distinct ips of the block) and
/// range-coder models that start from scratch, so small blocks compress worse: on cpu-clock
/// samples at 4000 Hz, blocks of ~400 samples (100 ms) take ~2.15 bytes per sample, blocks of
/// 64 KiB (~1600 samples) ~1.95; on python3 at 4000 Hz, whose samples spread over ~750
/// distinct ips per 2000, 128 KiB blocks take 6% fewer bytes of records than 64 KiB ones
/// (the ip table is sent half as often). Larger blocks lose more on a crash (at most the
/// block being collected, and the drain hands one over at least every second), so 128 KiB
/// is the middle.
pub const BATCH_BYTES: usize = 128 << 10;
/// The default file name of a recording.
pub const DEFAULT_FILE: &str = "hrec.data";

/// Errors of the file writer and reader. Each message says what is wrong and, where there is
/// one, what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// A system call on the file failed (create, rename, write, read, fsync).
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What hrec was doing ("create", "write to", ...).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The file does not start with `HRECDATA`.
    #[error(
        "{} is not an hrec file (magic {found}, expected \"HRECDATA\", or perf.data's \"PERFILE2\")",
        path.display()
    )]
    NotHrec {
        /// The file.
        path: PathBuf,
        /// The first bytes, escaped.
        found: String,
    },
    /// The file's format version is newer than this build understands.
    #[error(
        "{} was written by a newer hrec (format version {version}, this build reads {VERSION}); upgrade hrec to read it",
        path.display()
    )]
    NewerVersion {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        version: u32,
    },
    /// The file ends inside its header.
    #[error(
        "{}: truncated header: the recording did not start ({len} bytes, the header needs {needed})",
        path.display()
    )]
    TruncatedHeader {
        /// The file.
        path: PathBuf,
        /// The file size.
        len: u64,
        /// The bytes the header needs.
        needed: u64,
    },
    /// The fixed file header holds impossible values.
    #[error("{}: damaged file header: {reason}", path.display())]
    BadHeader {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The JSON in the header or the trailer does not parse.
    #[error("{}: the {what} is not valid JSON", path.display())]
    BadJson {
        /// The file.
        path: PathBuf,
        /// "header metadata" or "trailer".
        what: &'static str,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// A block header or payload is damaged.
    #[error(
        "{}: corrupt block at offset {offset}: {reason} (`hrec info` lists the blocks before it)",
        path.display()
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The offset of the block header in the file.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A block or side name is larger than the format allows.
    #[error("cannot write a {what} of {len} bytes to {}: the limit is {max}", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// "record block", "side block", "side name", ...
        what: &'static str,
        /// The size asked for.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// zstd failed to compress (out of memory).
    #[error("cannot compress a block for {}", path.display())]
    Compress {
        /// The file.
        path: PathBuf,
        /// zstd's error.
        #[source]
        source: io::Error,
    },
    /// An earlier write failed and could not be rolled back, so the writer refuses more.
    #[error(
        "cannot write to {}: an earlier write failed ({reason}); the blocks before it are readable",
        path.display()
    )]
    WriterFailed {
        /// The file.
        path: PathBuf,
        /// The earlier error.
        reason: String,
    },
}
