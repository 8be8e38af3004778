//! Byte layout of the file header, block headers and footer (see `docs/file-format.md`).

use serde::{Deserialize, Serialize};

use super::codec;

/// Bytes of the fixed part of the file header (magic, version, meta length).
pub(super) const FILE_HEADER: usize = 16;
/// Bytes of a block header.
pub(super) const BLOCK_HEADER: usize = 48;
/// Bytes of the footer.
pub(super) const FOOTER: usize = 24;
/// The tag at the start of every block header.
pub(super) const BLOCK_TAG: [u8; 4] = *b"HBLK";
/// The magic at the end of a finished file.
pub(super) const END_MAGIC: [u8; 8] = *b"HREC_END";
/// The largest JSON `Meta` a reader accepts (a file header claiming more is corrupt).
pub(super) const MAX_META: u64 = 64 << 20;
/// The largest raw (decompressed) block. The writer refuses more; a reader treats a header
/// claiming more as corrupt rather than allocating it.
pub(super) const MAX_BLOCK_RAW: u64 = 256 << 20;
/// The longest side-block name.
pub(super) const MAX_NAME: usize = 4096;

/// What a block holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum BlockKind {
    /// Raw kernel records, as drained from one ring buffer.
    #[default]
    Records,
    /// A named blob (kallsyms, modules, build ids, ...).
    Side,
    /// The JSON [`Trailer`](super::Trailer); always the last block of a finished file.
    Trailer,
}

impl BlockKind {
    fn to_byte(self) -> u8 {
        match self {
            BlockKind::Records => 1,
            BlockKind::Side => 2,
            BlockKind::Trailer => 3,
        }
    }

    fn from_byte(b: u8) -> Option<Self> {
        match b {
            1 => Some(BlockKind::Records),
            2 => Some(BlockKind::Side),
            3 => Some(BlockKind::Trailer),
            _ => None,
        }
    }
}

/// How a block's payload was encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Codec {
    /// One zstd frame of the raw bytes.
    #[default]
    Zstd,
    /// The record column transform ([`super::codec`]) in its first layout
    /// ([`super::codec::Version::V1`]), then one zstd frame.
    Columns,
    /// The column transform in its second layout ([`super::codec::Version::V2`]), then one
    /// zstd frame.
    Columns2,
    /// The column transform in its third layout ([`super::codec::Version::V3`]), then one
    /// zstd frame.
    Columns3,
}

impl Codec {
    fn to_byte(self) -> u8 {
        match self {
            Codec::Zstd => 0,
            Codec::Columns => 1,
            Codec::Columns2 => 2,
            Codec::Columns3 => 3,
        }
    }

    fn from_byte(b: u8) -> Option<Self> {
        match b {
            0 => Some(Codec::Zstd),
            1 => Some(Codec::Columns),
            2 => Some(Codec::Columns2),
            3 => Some(Codec::Columns3),
            _ => None,
        }
    }
}

/// One block of the file: what it is and where it lies. The trailer's index is a list of
/// these; a reader without a trailer builds the same list by walking the block headers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct BlockInfo {
    /// What the block holds.
    pub kind: BlockKind,
    /// The payload encoding.
    pub codec: Codec,
    /// The name of a side block ("kallsyms", ...); empty for other kinds.
    pub name: String,
    /// File offset of the block header.
    pub offset: u64,
    /// Bytes of the (compressed) payload.
    pub compressed_len: u64,
    /// Bytes of the raw data the writer was given.
    pub raw_len: u64,
    /// Complete records in a `Records` block (0 for other kinds).
    pub records: u64,
    /// The ring buffer (usually the CPU index) the records came from, or `u32::MAX`.
    pub source: u32,
    /// Time of the first record, if the writer was told, else 0.
    pub first_time: u64,
    /// Time of the last record, if the writer was told, else 0.
    pub last_time: u64,
}

impl BlockInfo {
    /// File offset of the payload.
    pub fn payload_offset(&self) -> u64 {
        self.offset + (BLOCK_HEADER + self.name.len()) as u64
    }

    /// Bytes of the whole block in the file (header, name and payload).
    pub fn file_len(&self) -> u64 {
        (BLOCK_HEADER + self.name.len()) as u64 + self.compressed_len
    }
}

/// FNV-1a, 32 bits: the check value of a block header. Not cryptographic; it only has to
/// notice a damaged or half-written header (the payload has zstd's own checksum).
pub(super) fn fnv1a(parts: &[&[u8]]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for part in parts {
        for &b in *part {
            h ^= u32::from(b);
            h = h.wrapping_mul(0x0100_0193);
        }
    }
    h
}

/// The header (and name) bytes of a block. Lengths must already fit their fields (the writer
/// checks them against [`MAX_BLOCK_RAW`] and [`MAX_NAME`]).
pub(super) fn block_header(info: &BlockInfo) -> Vec<u8> {
    let mut b = Vec::with_capacity(BLOCK_HEADER + info.name.len());
    b.extend_from_slice(&BLOCK_TAG);
    b.push(info.kind.to_byte());
    b.push(info.codec.to_byte());
    b.extend_from_slice(&(info.name.len() as u16).to_le_bytes());
    b.extend_from_slice(&(info.raw_len as u32).to_le_bytes());
    b.extend_from_slice(&(info.compressed_len as u32).to_le_bytes());
    b.extend_from_slice(&(info.records as u32).to_le_bytes());
    b.extend_from_slice(&info.source.to_le_bytes());
    b.extend_from_slice(&info.first_time.to_le_bytes());
    b.extend_from_slice(&info.last_time.to_le_bytes());
    let check = fnv1a(&[b.get(..40).unwrap_or_default(), info.name.as_bytes()]);
    b.extend_from_slice(&check.to_le_bytes());
    b.extend_from_slice(&[0u8; 4]);
    b.extend_from_slice(info.name.as_bytes());
    b
}

/// The little-endian u32 at `at`; 0 past the end (callers pass fixed-size arrays).
pub(super) fn le32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|w| w.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

/// The little-endian u64 at `at`; 0 past the end (callers pass fixed-size arrays).
pub(super) fn le64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|w| w.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// The fixed part of a block header, before its name has been read.
pub(super) struct RawHeader {
    pub bytes: [u8; BLOCK_HEADER],
    pub name_len: usize,
}

/// Checks the tag and the field ranges of a 48-byte block header. The name (and with it the
/// check value) is verified by [`finish_header`].
pub(super) fn parse_header(bytes: [u8; BLOCK_HEADER]) -> Result<RawHeader, String> {
    if bytes[..4] != BLOCK_TAG {
        return Err(format!(
            "no block header here (found {:?} instead of \"HBLK\")",
            String::from_utf8_lossy(&bytes[..4])
        ));
    }
    let name_len = usize::from(u16::from_le_bytes([bytes[6], bytes[7]]));
    if name_len > MAX_NAME {
        return Err(format!("block name of {name_len} bytes"));
    }
    Ok(RawHeader { bytes, name_len })
}

/// Verifies the check value over header and name and turns them into a [`BlockInfo`].
pub(super) fn finish_header(
    raw: &RawHeader,
    name: &[u8],
    offset: u64,
) -> Result<BlockInfo, String> {
    let b = &raw.bytes;
    let stored = le32(b, 40);
    let computed = fnv1a(&[&b[..40], name]);
    if stored != computed {
        return Err(format!(
            "block header check value {stored:#010x} does not match its contents ({computed:#010x})"
        ));
    }
    let kind = BlockKind::from_byte(b[4]).ok_or_else(|| format!("unknown block kind {}", b[4]))?;
    let codec = Codec::from_byte(b[5]).ok_or_else(|| format!("unknown codec {}", b[5]))?;
    let name = std::str::from_utf8(name)
        .map_err(|_| "block name is not UTF-8".to_string())?
        .to_string();
    let raw_len = u64::from(le32(b, 8));
    if raw_len > MAX_BLOCK_RAW {
        return Err(format!(
            "block claims {raw_len} raw bytes, more than the limit {MAX_BLOCK_RAW}"
        ));
    }
    Ok(BlockInfo {
        kind,
        codec,
        name,
        offset,
        raw_len,
        compressed_len: u64::from(le32(b, 12)),
        records: u64::from(le32(b, 16)),
        source: le32(b, 20),
        first_time: le64(b, 24),
        last_time: le64(b, 32),
    })
}

/// Decompresses and decodes a payload whose header said `info`.
pub(super) fn decode_payload(info: &BlockInfo, payload: &[u8]) -> Result<Vec<u8>, String> {
    let raw_len = usize::try_from(info.raw_len).map_err(|_| "raw length too large".to_string())?;
    // Cap the buffer at what the encoder can produce, so a lying frame cannot ask for more.
    let cap = match info.codec {
        Codec::Zstd => raw_len,
        Codec::Columns | Codec::Columns2 | Codec::Columns3 => codec::max_encoded_len(raw_len),
    };
    let inner = zstd::bulk::Decompressor::new()
        .and_then(|mut d| d.decompress(payload, cap))
        .map_err(|e| format!("zstd: {e} (the payload is damaged)"))?;
    match info.codec {
        Codec::Zstd => {
            if inner.len() != raw_len {
                return Err(format!(
                    "payload decompresses to {} bytes, the header says {raw_len}",
                    inner.len()
                ));
            }
            Ok(inner)
        }
        Codec::Columns => {
            codec::decode(&inner, raw_len, codec::Version::V1).map_err(|e| format!("columns: {e}"))
        }
        Codec::Columns2 => {
            codec::decode(&inner, raw_len, codec::Version::V2).map_err(|e| format!("columns: {e}"))
        }
        Codec::Columns3 => {
            codec::decode(&inner, raw_len, codec::Version::V3).map_err(|e| format!("columns: {e}"))
        }
    }
}

/// The footer of a finished file.
pub(super) fn footer(trailer_offset: u64, trailer_len: u64) -> [u8; FOOTER] {
    let mut f = [0u8; FOOTER];
    f[..8].copy_from_slice(&trailer_offset.to_le_bytes());
    f[8..16].copy_from_slice(&trailer_len.to_le_bytes());
    f[16..].copy_from_slice(&END_MAGIC);
    f
}

/// Where the first block starts after a header whose JSON is `meta_len` bytes.
pub(super) fn data_start(meta_len: u64) -> u64 {
    (FILE_HEADER as u64 + meta_len).next_multiple_of(8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_check() {
        let info = BlockInfo {
            kind: BlockKind::Side,
            codec: Codec::Zstd,
            name: "kallsyms".into(),
            offset: 4096,
            compressed_len: 1234,
            raw_len: 99_999,
            records: 0,
            source: u32::MAX,
            first_time: 5,
            last_time: 6,
        };
        let b = block_header(&info);
        assert_eq!(b.len(), BLOCK_HEADER + 8);
        let raw = parse_header(b[..BLOCK_HEADER].try_into().unwrap()).unwrap();
        assert_eq!(raw.name_len, 8);
        assert_eq!(finish_header(&raw, &b[BLOCK_HEADER..], 4096).unwrap(), info);
        assert_eq!(info.payload_offset(), 4096 + 56);
        // Any flipped bit in the header or name fails the check.
        for i in 4..b.len() {
            let mut bad = b.clone();
            bad[i] ^= 0x10;
            let err = parse_header(bad[..BLOCK_HEADER].try_into().unwrap())
                .and_then(|r| finish_header(&r, &bad[BLOCK_HEADER..], 4096));
            assert!(err.is_err() || (44..48).contains(&i), "byte {i}");
        }
    }

    #[test]
    fn data_start_is_aligned() {
        assert_eq!(data_start(0), 16);
        assert_eq!(data_start(1), 24);
        assert_eq!(data_start(8), 24);
    }
}
