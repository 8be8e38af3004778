//! A bounds-checked little-endian reader over one record's bytes.
//!
//! Every read either returns the value and advances, or returns a [`DecodeError::Truncated`]
//! that names the record, its stream offset, the part being read and the field, so callers
//! never index a slice themselves. Lengths that come from the data (`nr`, `size`) go through
//! [`Cursor::bytes_u64`] / [`Cursor::u64s`], which check the multiplication and the remaining
//! length before anything is sliced.

use std::fmt;

use super::{DecodeError, RecordKind};

/// Where a cursor is reading, for error messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx {
    /// `header.type` of the record.
    pub kind: u32,
    /// Offset of the record in its stream.
    pub offset: usize,
    /// The part of the record being read ("sample_type", "body", ...).
    pub what: &'static str,
}

/// A forward reader over `buf`, whose first byte is byte `base` of the record.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
    ctx: Ctx,
    field: &'static str,
}

impl<'a> Cursor<'a> {
    /// A cursor over `buf`, which starts at byte `base` of the record.
    pub fn new(buf: &'a [u8], base: usize, ctx: Ctx) -> Self {
        Cursor {
            buf,
            pos: 0,
            base,
            ctx,
            field: "",
        }
    }

    /// Names the field the next reads belong to (for error messages).
    pub fn field(&mut self, name: &'static str) -> &mut Self {
        self.field = name;
        self
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The error for a read of `n` more bytes that does not fit.
    fn short(&self, n: usize) -> DecodeError {
        DecodeError::Truncated {
            kind: RecordKind(self.ctx.kind),
            offset: self.ctx.offset,
            what: self.ctx.what,
            field: self.field,
            needs: self.base.saturating_add(self.pos).saturating_add(n),
            has: self.base + self.buf.len(),
        }
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(self.short(n));
        }
        let out = self
            .buf
            .get(self.pos..self.pos + n)
            .ok_or_else(|| self.short(n))?;
        self.pos += n;
        Ok(out)
    }

    /// The next `n` bytes, `n` as read from the data (may be absurdly large).
    pub fn bytes_u64(&mut self, n: u64) -> Result<&'a [u8], DecodeError> {
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        self.bytes(n)
    }

    /// The next `n` u64 values as a borrowed view.
    pub fn u64s(&mut self, n: u64) -> Result<U64s<'a>, DecodeError> {
        let len = n.saturating_mul(8);
        self.bytes_u64(len).map(U64s::new)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let b = self.bytes(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    /// The next u8.
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    /// The next little-endian u16.
    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        self.array().map(u16::from_le_bytes)
    }

    /// The next little-endian u32.
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        self.array().map(u32::from_le_bytes)
    }

    /// The next little-endian u64.
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        self.array().map(u64::from_le_bytes)
    }

    /// Everything not read yet (consumes it).
    pub fn rest(&mut self) -> &'a [u8] {
        let out = self.buf.get(self.pos..).unwrap_or_default();
        self.pos = self.buf.len();
        out
    }
}

/// The little-endian u64 at `off` of `b`, if it fits.
pub(crate) fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    let end = off.checked_add(8)?;
    let s = b.get(off..end)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

/// A borrowed run of little-endian u64 values (callchains, registers, counters).
///
/// The bytes stay in the record; values are assembled on access, so there is no alignment
/// requirement and no allocation.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct U64s<'a> {
    bytes: &'a [u8],
}

impl<'a> U64s<'a> {
    /// A view of `bytes`; a trailing partial u64 is ignored.
    pub fn new(bytes: &'a [u8]) -> Self {
        U64s {
            bytes: bytes.get(..bytes.len() / 8 * 8).unwrap_or_default(),
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.bytes.len() / 8
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The `i`-th value.
    pub fn get(&self, i: usize) -> Option<u64> {
        u64_at(self.bytes, i.checked_mul(8)?)
    }

    /// The values in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u64> + DoubleEndedIterator + 'a {
        self.bytes.chunks_exact(8).map(|c| {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            u64::from_le_bytes(a)
        })
    }

    /// The underlying bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

impl fmt::Debug for U64s<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|v| format!("{v:#x}")))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx {
        Ctx {
            kind: 9,
            offset: 64,
            what: "sample_type",
        }
    }

    #[test]
    fn reads_little_endian_in_order() {
        let mut b = vec![0xab];
        b.extend_from_slice(&0x1234u16.to_le_bytes());
        b.extend_from_slice(&0xdead_beefu32.to_le_bytes());
        b.extend_from_slice(&0x0102_0304_0506_0708u64.to_le_bytes());
        b.extend_from_slice(b"xyz");
        let mut c = Cursor::new(&b, 8, ctx());
        assert_eq!(c.u8().unwrap(), 0xab);
        assert_eq!(c.u16().unwrap(), 0x1234);
        assert_eq!(c.u32().unwrap(), 0xdead_beef);
        assert_eq!(c.u64().unwrap(), 0x0102_0304_0506_0708);
        assert_eq!(c.remaining(), 3);
        assert_eq!(c.bytes(2).unwrap(), b"xy");
        assert_eq!(c.rest(), b"z");
        assert_eq!(c.remaining(), 0);
        assert_eq!(c.rest(), b"");
    }

    #[test]
    fn short_read_names_the_field_and_does_not_advance() {
        let b = [0u8; 12];
        let mut c = Cursor::new(&b, 8, ctx());
        c.field("TIME");
        c.u64().unwrap();
        let e = c.u64().unwrap_err();
        assert_eq!(
            e,
            DecodeError::Truncated {
                kind: RecordKind(9),
                offset: 64,
                what: "sample_type",
                field: "TIME",
                needs: 8 + 16,
                has: 8 + 12,
            }
        );
        assert_eq!(
            e.to_string(),
            "SAMPLE record at offset 64 too short for its sample_type (TIME): needs 24 bytes, has 20"
        );
        assert_eq!(c.remaining(), 4);
        assert_eq!(c.u32().unwrap(), 0);
    }

    #[test]
    fn huge_counts_are_errors_not_overflows() {
        let b = [0u8; 16];
        let mut c = Cursor::new(&b, 0, ctx());
        assert!(c.u64s(u64::MAX).is_err());
        assert!(c.u64s(u64::MAX / 8 + 1).is_err());
        assert!(c.bytes_u64(u64::MAX).is_err());
        assert!(c.bytes(usize::MAX).is_err());
        let v = c.u64s(2).unwrap();
        assert_eq!(v.len(), 2);
    }

    #[test]
    fn u64_at_is_checked() {
        let b = 7u64.to_le_bytes();
        assert_eq!(u64_at(&b, 0), Some(7));
        assert_eq!(u64_at(&b, 1), None);
        assert_eq!(u64_at(&b, usize::MAX), None);
    }
}
