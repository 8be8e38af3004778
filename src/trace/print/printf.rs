//! C printf's integer, character and string conversions, as glibc prints them for
//! libtraceevent.

use super::ast::Spec;

/// The widest padding printed (a `*` width comes from the record).
const MAX_PAD: usize = 4096;

/// A resolved width/precision pair.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Dims {
    /// Minimum width; negative from `*` means left-justified.
    pub width: Option<i64>,
    /// Precision; negative from `*` means none.
    pub precision: Option<i64>,
}

fn pad(out: &mut Vec<u8>, c: u8, n: usize) {
    out.extend(std::iter::repeat_n(c, n.min(MAX_PAD)));
}

/// Pads `body` (already with its sign/prefix as `head`) to the width.
fn justify(out: &mut Vec<u8>, spec: &Spec, dims: Dims, head: &[u8], body: &[u8], zero_ok: bool) {
    let (width, mut left) = match dims.width {
        Some(w) if w < 0 => (w.unsigned_abs() as usize, true),
        Some(w) => (w as usize, false),
        None => (0, false),
    };
    left |= spec.flags.contains('-');
    let len = head.len() + body.len();
    let fill = width.saturating_sub(len);
    if left {
        out.extend_from_slice(head);
        out.extend_from_slice(body);
        pad(out, b' ', fill);
    } else if zero_ok && spec.flags.contains('0') {
        out.extend_from_slice(head);
        pad(out, b'0', fill);
        out.extend_from_slice(body);
    } else {
        pad(out, b' ', fill);
        out.extend_from_slice(head);
        out.extend_from_slice(body);
    }
}

/// An integer conversion (`d i u x X o c`) of `val`, cast by the spec's length class.
pub(super) fn int(out: &mut Vec<u8>, spec: &Spec, dims: Dims, val: u64) {
    let signed = matches!(spec.conv, b'd' | b'i');
    // Cast as libtraceevent casts the value, then as printf converts it.
    let (neg, mag): (bool, u64) = match (spec.len, signed) {
        (-2, true) => split(i64::from(val as i8)),
        (-2, false) => (false, u64::from(val as u8)),
        (-1, true) => split(i64::from(val as i16)),
        (-1, false) => (false, u64::from(val as u16)),
        (0, true) => split(i64::from(val as i32)),
        (0, false) => (false, u64::from(val as u32)),
        (_, true) => split(val as i64),
        (_, false) => (false, val),
    };
    if spec.conv == b'c' {
        justify(out, spec, dims, b"", &[val as u8], false);
        return;
    }
    let precision = dims.precision.filter(|p| *p >= 0).map(|p| p as usize);
    let mut digits = match spec.conv {
        b'x' => format!("{mag:x}"),
        b'X' => format!("{mag:X}"),
        b'o' => format!("{mag:o}"),
        _ => mag.to_string(),
    }
    .into_bytes();
    if precision == Some(0) && mag == 0 {
        digits.clear();
    }
    if let Some(p) = precision.filter(|p| *p > digits.len()) {
        let mut z = vec![b'0'; (p - digits.len()).min(MAX_PAD)];
        z.extend_from_slice(&digits);
        digits = z;
    }
    let alt = spec.flags.contains('#');
    let mut head: Vec<u8> = Vec::new();
    if signed {
        if neg {
            head.push(b'-');
        } else if spec.flags.contains('+') {
            head.push(b'+');
        } else if spec.flags.contains(' ') {
            head.push(b' ');
        }
    }
    match spec.conv {
        b'x' if alt && mag != 0 => head.extend_from_slice(b"0x"),
        b'X' if alt && mag != 0 => head.extend_from_slice(b"0X"),
        b'o' if alt && digits.first() != Some(&b'0') => digits.insert(0, b'0'),
        _ => {}
    }
    justify(out, spec, dims, &head, &digits, precision.is_none());
}

fn split(v: i64) -> (bool, u64) {
    (v < 0, v.unsigned_abs())
}

/// A string conversion of the C string `s` (up to its first NUL).
pub(super) fn string(out: &mut Vec<u8>, spec: &Spec, dims: Dims, s: &[u8]) {
    let s = s.split(|b| *b == 0).next().unwrap_or_default();
    let s = match dims.precision {
        Some(p) if p >= 0 => s.get(..s.len().min(p as usize)).unwrap_or(s),
        _ => s,
    };
    justify(out, spec, dims, b"", s, false);
}

/// glibc's `%p`: `(nil)` for 0, else `0x` and lowercase hex.
pub(super) fn pointer(out: &mut Vec<u8>, val: u64) {
    if val == 0 {
        out.extend_from_slice(b"(nil)");
    } else {
        out.extend_from_slice(format!("0x{val:x}").as_bytes());
    }
}
