//! The evaluator: an argument's value as a number (libtraceevent's arithmetic: fields read
//! unsigned, 64-bit signed operators, casts that truncate) or as text for `%s` and `%p`.

use super::super::format::{Field, number};
use super::KernelSymbols;
use super::ast::Expr;

/// The record's bytes and the event's fields.
#[derive(Clone, Copy)]
pub(super) struct Rec<'a> {
    pub raw: &'a [u8],
    pub fields: &'a [Field],
}

fn field(fields: Option<&[Field]>, i: Option<usize>) -> Option<&Field> {
    fields?.get(i?)
}

/// A field's own bytes read as an unsigned number (0 when out of the record or not 1, 2,
/// 4 or 8 bytes wide), as libtraceevent reads it.
fn field_num(f: &Field, raw: &[u8]) -> u64 {
    let at = f.offset as usize;
    raw.get(at..at.saturating_add(f.size as usize))
        .and_then(|b| number(b, false))
        .unwrap_or(0)
}

/// The value of `e` as a number; `fields` is `None` when folding constants at parse time.
pub(super) fn eval_num(e: &Expr, raw: &[u8], fields: Option<&[Field]>) -> u64 {
    eval(e, raw, fields, 0)
}

fn eval(e: &Expr, raw: &[u8], fields: Option<&[Field]>, depth: usize) -> u64 {
    if depth > 1024 {
        return 0;
    }
    let ev = |x: &Expr| eval(x, raw, fields, depth + 1);
    match e {
        Expr::Num(v, _) => *v,
        Expr::Field(i, _) => field(fields, *i).map_or(0, |f| field_num(f, raw)),
        Expr::Cast(ty, x) => cast(ty, ev(x)),
        Expr::Op(op, _, l, r) => binary(op, ev(l), ev(r)),
        Expr::Cond(c, a, b) => {
            if ev(c) != 0 {
                ev(a)
            } else {
                ev(b)
            }
        }
        Expr::Index(a, i) => {
            let idx = ev(i);
            // Casts around the array apply to the element read.
            let mut arr = &**a;
            let mut ty = None;
            while let Expr::Cast(t, inner) = arr {
                ty.get_or_insert(t.trim_end_matches('*').trim_end());
                arr = inner;
            }
            let v = match arr {
                Expr::Field(fi, _) => field(fields, *fi).map_or(0, |f| element(f, raw, idx)),
                Expr::DynArray(fi) => field(fields, *fi).map_or(0, |f| dyn_element(f, raw, idx)),
                _ => 0,
            };
            ty.map_or(v, |t| cast(t, v))
        }
        Expr::DynArrayLen(i) => field(fields, *i)
            .and_then(|f| dyn_word(f, raw))
            .map_or(0, |w| u64::from(w >> 16)),
        _ => 0,
    }
}

/// Element `idx` of dynamic array `f`: libtraceevent adds the index to the array's offset
/// in bytes, whatever the element size.
fn dyn_element(f: &Field, raw: &[u8], idx: u64) -> u64 {
    let Some(word) = dyn_word(f, raw) else {
        return 0;
    };
    let mut at = u64::from(word & 0xffff);
    if f.dynamic == Some(super::super::format::DynamicLoc::Rel) {
        at += u64::from(f.offset) + u64::from(f.size);
    }
    let el = elem_size(&f.type_) as u64;
    let Some(start) = at.checked_add(idx).and_then(|s| usize::try_from(s).ok()) else {
        return 0;
    };
    raw.get(start..start.saturating_add(el as usize))
        .and_then(|b| number(b, false))
        .unwrap_or(0)
}

/// Element `idx` of array field `f`.
fn element(f: &Field, raw: &[u8], idx: u64) -> u64 {
    let (base, len, elsize) = match (f.dynamic, f.array) {
        (Some(_), _) => {
            let Some(b) = f.bytes(raw) else { return 0 };
            let el = elem_size(&f.type_);
            (b, b.len(), el)
        }
        (None, Some(n)) if n > 0 => {
            let at = f.offset as usize;
            let Some(b) = raw.get(at..at.saturating_add(f.size as usize)) else {
                return 0;
            };
            (b, b.len(), (f.size / n) as usize)
        }
        _ => return 0,
    };
    let Ok(idx) = usize::try_from(idx) else {
        return 0;
    };
    let Some(start) = idx.checked_mul(elsize) else {
        return 0;
    };
    if start.saturating_add(elsize) > len {
        return 0;
    }
    base.get(start..start + elsize)
        .and_then(|b| number(b, false))
        .unwrap_or(0)
}

/// The size of a C element type on a 64-bit kernel.
fn elem_size(ty: &str) -> usize {
    let t = ty
        .trim_start_matches("const ")
        .trim_start_matches("unsigned ");
    match t {
        "char" | "u8" | "s8" | "__u8" | "bool" => 1,
        "short" | "u16" | "s16" | "__u16" => 2,
        "int" | "u32" | "s32" | "__u32" => 4,
        _ if t.ends_with('*') || t.contains("long") || t.ends_with("64") => 8,
        _ => 4,
    }
}

/// The location word of dynamic field `f`.
pub(super) fn dyn_word(f: &Field, raw: &[u8]) -> Option<u32> {
    let at = f.offset as usize;
    Some(u32::from_le_bytes(
        raw.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// An operator on 64-bit unsigned operands, as libtraceevent computes it (a unary
/// operator has a left operand of 0).
fn binary(op: &str, l: u64, r: u64) -> u64 {
    match op {
        "*" => l.wrapping_mul(r),
        "/" => l.checked_div(r).unwrap_or(0),
        "%" => l.checked_rem(r).unwrap_or(0),
        "+" => l.wrapping_add(r),
        "-" => l.wrapping_sub(r),
        "<<" => u32::try_from(r)
            .ok()
            .and_then(|s| l.checked_shl(s))
            .unwrap_or(0),
        ">>" => u32::try_from(r)
            .ok()
            .and_then(|s| l.checked_shr(s))
            .unwrap_or(0),
        "<" => u64::from(l < r),
        "<=" => u64::from(l <= r),
        ">" => u64::from(l > r),
        ">=" => u64::from(l >= r),
        "==" => u64::from(l == r),
        "!=" => u64::from(l != r),
        "!" => u64::from(r == 0),
        "~" => !r,
        "&" => l & r,
        "^" => l ^ r,
        "|" => l | r,
        "&&" => u64::from(l != 0 && r != 0),
        "||" => u64::from(l != 0 || r != 0),
        _ => 0,
    }
}

/// A cast to C type `ty` as libtraceevent makes it: pointers and 64-bit types keep the
/// value, narrower types mask it (after sign extension for a signed one: the result is the
/// same), never extending it to 64 bits.
fn cast(ty: &str, v: u64) -> u64 {
    let t = ty.trim();
    if t.ends_with('*') {
        return v;
    }
    let t = t.strip_prefix("unsigned ").unwrap_or(t).trim();
    match t {
        "u8" | "s8" | "char" => v & 0xff,
        "u16" | "s16" | "short" => v & 0xffff,
        "u32" | "s32" | "int" => v & 0xffff_ffff,
        _ => v,
    }
}

/// The C string at the start of `b` (to its NUL or end).
fn c_str(b: &[u8]) -> &[u8] {
    b.split(|c| *c == 0).next().unwrap_or_default()
}

/// How `%s` prints an argument; `put` writes a piece of text through the conversion's
/// width and precision.
pub(super) fn print_str(
    e: &Expr,
    rec: Rec<'_>,
    syms: &dyn KernelSymbols,
    depth: usize,
    out: &mut Vec<u8>,
    put: &dyn Fn(&mut Vec<u8>, &[u8]),
) {
    if depth > 1024 {
        return;
    }
    let num = |x: &Expr| eval_num(x, rec.raw, Some(rec.fields));
    match e {
        Expr::Str(s) => put(out, s.as_bytes()),
        Expr::Atom(a) | Expr::Num(_, a) => put(out, a.as_bytes()),
        Expr::Cast(_, x) => print_str(x, rec, syms, depth + 1, out, put),
        Expr::Cond(c, a, b) => {
            let x = if num(c) != 0 { a } else { b };
            print_str(x, rec, syms, depth + 1, out, put);
        }
        Expr::Field(i, _) => {
            let Some(f) = field(Some(rec.fields), *i) else {
                return;
            };
            if f.array.is_none() && f.size == 8 {
                // A pointer: a kernel string, else its address.
                let addr = field_num(f, rec.raw);
                match syms.printk_string(addr) {
                    Some(s) => out.extend_from_slice(s.as_bytes()),
                    None => out.extend_from_slice(format!("{addr:x}").as_bytes()),
                }
            } else {
                // The field's own bytes (for a dynamic array, its location word).
                let at = f.offset as usize;
                if let Some(b) = rec.raw.get(at..at.saturating_add(f.size as usize)) {
                    put(out, c_str(b));
                }
            }
        }
        Expr::GetStr(i) | Expr::DynArray(i) => {
            if let Some(b) = field(Some(rec.fields), *i).and_then(|f| f.bytes(rec.raw)) {
                put(out, c_str(b));
            }
        }
        Expr::Flags(v, delim, table) => {
            // libtraceevent's rule: a value of 0 prints the first entry whose value is
            // negative (an unknown name is -1); entries match when positive.
            let mut val = num(v);
            let mut printed = false;
            for (fv, name) in table {
                if val == 0 && (*fv as i64) < 0 {
                    put(out, name.as_bytes());
                    break;
                }
                if (*fv as i64) > 0 && val & fv == *fv {
                    if printed {
                        out.extend_from_slice(delim.as_bytes());
                    }
                    put(out, name.as_bytes());
                    printed = true;
                    val &= !fv;
                }
            }
            if val != 0 {
                if printed {
                    out.extend_from_slice(delim.as_bytes());
                }
                out.extend_from_slice(format!("0x{val:x}").as_bytes());
            }
        }
        Expr::Symbolic(v, table) => {
            let val = num(v);
            match table.iter().find(|(fv, _)| *fv == val) {
                Some((_, name)) => put(out, name.as_bytes()),
                None => out.extend_from_slice(format!("0x{val:x}").as_bytes()),
            }
        }
        Expr::Hex(buf, len, spaced) => {
            let Some(b) = array_bytes(buf, rec) else {
                return;
            };
            let n = usize::try_from(num(len)).unwrap_or(usize::MAX).min(b.len());
            for (k, byte) in b.iter().take(n).enumerate() {
                if k > 0 && *spaced {
                    out.push(b' ');
                }
                out.extend_from_slice(format!("{byte:02x}").as_bytes());
            }
        }
        Expr::Array(arr, count, size) => {
            let Some(b) = array_bytes(arr, rec) else {
                return;
            };
            let el = num(size) as usize;
            if !matches!(el, 1 | 2 | 4 | 8) {
                return;
            }
            let n = usize::try_from(num(count)).unwrap_or(usize::MAX);
            out.push(b'{');
            for (k, chunk) in b.chunks_exact(el).take(n).enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                let v = number(chunk, false).unwrap_or(0);
                out.extend_from_slice(format!("0x{v:x}").as_bytes());
            }
            out.push(b'}');
        }
        Expr::Bitmask(i) => {
            let Some(b) = field(Some(rec.fields), *i).and_then(|f| f.bytes(rec.raw)) else {
                return;
            };
            // 32-bit words from the most significant, comma separated.
            let words: Vec<&[u8]> = b.chunks(4).collect();
            let mut first = true;
            for w in words.iter().rev() {
                if !first {
                    out.push(b',');
                }
                let v = w
                    .iter()
                    .rev()
                    .fold(0u32, |acc, x| (acc << 8) | u32::from(*x));
                out.extend_from_slice(format!("{v:08x}").as_bytes());
                first = false;
            }
        }
        _ => {}
    }
}

/// The bytes an array argument points at (a field or a dynamic array).
fn array_bytes<'a>(e: &Expr, rec: Rec<'a>) -> Option<&'a [u8]> {
    match e {
        Expr::Field(i, _) => field(Some(rec.fields), *i)?.bytes(rec.raw),
        Expr::DynArray(i) | Expr::GetStr(i) => field(Some(rec.fields), *i)?.bytes(rec.raw),
        Expr::Cast(_, x) => array_bytes(x, rec),
        _ => None,
    }
}

/// `%p` and its extensions: `S`/`F` `sym+0xoff`, `s`/`f` `sym`, `M`/`m` MAC, `I4`/`i4`
/// IPv4, `I6`/`i6`/`I6c` IPv6, `U` UUID; anything else the plain pointer followed by the
/// letters as text.
pub(super) fn print_ptr(
    e: &Expr,
    kind: &str,
    rec: Rec<'_>,
    syms: &dyn KernelSymbols,
    out: &mut Vec<u8>,
) {
    let val = || eval_num(e, rec.raw, Some(rec.fields));
    let first = kind.chars().next();
    let rest_after = |n: usize| kind.get(n..).unwrap_or("").as_bytes().to_vec();
    match first {
        Some(c @ ('S' | 's' | 'F' | 'f')) => {
            let v = val();
            match syms.symbol(v) {
                Some((name, off)) => {
                    out.extend_from_slice(name.as_bytes());
                    if c == 'S' || c == 'F' {
                        out.extend_from_slice(format!("+0x{off:x}").as_bytes());
                    }
                }
                None => out.extend_from_slice(format!("0x{v:x}").as_bytes()),
            }
            out.extend(rest_after(1));
        }
        Some(c @ ('M' | 'm')) => {
            match field_bytes(e, rec) {
                Some(b) if b.len() == 6 => {
                    let sep = if c == 'M' { ":" } else { "" };
                    let parts: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
                    out.extend_from_slice(parts.join(sep).as_bytes());
                }
                Some(_) => out.extend_from_slice(b"INVALIDMAC"),
                None => {}
            }
            out.extend(rest_after(1));
        }
        Some(c @ ('I' | 'i')) => {
            let sub = kind.as_bytes().get(1).copied();
            let b = field_bytes(e, rec).unwrap_or_default();
            let used = match sub {
                Some(b'4') => {
                    out.extend_from_slice(ipv4(b, c == 'i').as_bytes());
                    2
                }
                Some(b'6') => {
                    let compressed = c == 'I' && kind.as_bytes().get(2) == Some(&b'c');
                    if let Some(a) = b.get(..16) {
                        out.extend_from_slice(ipv6(a, c == 'I', compressed).as_bytes());
                    }
                    2 + usize::from(compressed)
                }
                Some(b'S') => {
                    let opts: String = kind[2..]
                        .chars()
                        .take_while(|x| matches!(x, 'p' | 'f' | 's' | 'c' | 'h' | 'n' | 'b' | 'l'))
                        .collect();
                    out.extend_from_slice(sockaddr(b, c == 'i', &opts).as_bytes());
                    2 + opts.len()
                }
                _ => 1,
            };
            out.extend(rest_after(used));
        }
        Some('U') => {
            if let Some(b) = field_bytes(e, rec).filter(|b| b.len() >= 16) {
                for (k, x) in b.iter().take(16).enumerate() {
                    if matches!(k, 4 | 6 | 8 | 10) {
                        out.push(b'-');
                    }
                    out.extend_from_slice(format!("{x:02x}").as_bytes());
                }
            }
            let n = if kind[1..].starts_with(['b', 'B', 'l', 'L']) {
                2
            } else {
                1
            };
            out.extend(rest_after(n));
        }
        _ => {
            super::printf::pointer(out, val());
            out.extend_from_slice(kind.as_bytes());
        }
    }
}

/// The bytes of a field argument (fixed or dynamic), through casts.
fn field_bytes<'a>(e: &Expr, rec: Rec<'a>) -> Option<&'a [u8]> {
    match e {
        Expr::Field(i, _) => field(Some(rec.fields), *i)?.bytes(rec.raw),
        Expr::DynArray(i) | Expr::GetStr(i) => field(Some(rec.fields), *i)?.bytes(rec.raw),
        Expr::Cast(_, x) => field_bytes(x, rec),
        _ => None,
    }
}

/// An IPv4 address (`i4`: three digits each).
fn ipv4(b: &[u8], padded: bool) -> String {
    let Some(a) = b.get(..4) else {
        return String::new();
    };
    let parts: Vec<String> = a
        .iter()
        .map(|x| {
            if padded {
                format!("{x:03}")
            } else {
                x.to_string()
            }
        })
        .collect();
    parts.join(".")
}

/// A `struct sockaddr` (`%pIS`): IPv4 `addr[:port]`, IPv6 `[addr]:port` with `p`,
/// compressed with `c`, `/flowinfo` with `f`, `%scope` with `s`.
fn sockaddr(b: &[u8], padded: bool, opts: &str) -> String {
    let Some(family) = bytes_at::<2>(b, 0).map(u16::from_le_bytes) else {
        return String::new();
    };
    let port = bytes_at::<2>(b, 2).map_or(0, u16::from_be_bytes);
    let has = |c: char| opts.contains(c);
    match family {
        2 => {
            let mut s = ipv4(b.get(4..8).unwrap_or_default(), padded);
            if has('p') {
                s.push_str(&format!(":{port}"));
            }
            s
        }
        10 => {
            let Some(a) = b.get(8..24) else {
                return "INVALIDIPv6".to_string();
            };
            let addr = ipv6(a, true, has('c'));
            let mut s = if has('p') {
                format!("[{addr}]:{port}")
            } else {
                addr
            };
            if has('f') {
                let fl = bytes_at::<4>(b, 4).map_or(0, u32::from_be_bytes);
                s.push_str(&format!("/{fl}"));
            }
            if has('s') {
                let sc = bytes_at::<4>(b, 24).map_or(0, u32::from_le_bytes);
                s.push_str(&format!("%{sc}"));
            }
            s
        }
        _ => "INVALIDIPv4".to_string(),
    }
}

/// An IPv6 address: full (`I6` with colons, `i6` without) or compressed (`I6c`: the
/// longest run of two or more zero words as `::`, an IPv4-mapped or ISATAP address ending
/// in dotted IPv4), as the kernel prints it.
fn ipv6(b: &[u8], colons: bool, compressed: bool) -> String {
    let words: Vec<u16> = b
        .chunks_exact(2)
        .filter_map(|w| w.try_into().ok().map(u16::from_be_bytes))
        .collect();
    let word = |k: usize| words.get(k).copied().unwrap_or(0);
    if !compressed || words.len() < 8 {
        let parts: Vec<String> = words.iter().map(|w| format!("{w:04x}")).collect();
        return parts.join(if colons { ":" } else { "" });
    }
    let v4mapped = (0..5).all(|k| word(k) == 0) && word(5) == 0xffff;
    let isatap = (word(4) | 0x0200) == 0x0200 && word(5) == 0x5efe;
    let use_v4 = v4mapped || isatap;
    let range = if use_v4 { 6 } else { 8 };
    let (mut best, mut best_len, mut k) = (usize::MAX, 1usize, 0usize);
    while k < range {
        let start = k;
        while k < range && word(k) == 0 {
            k += 1;
        }
        if k - start > best_len {
            (best, best_len) = (start, k - start);
        }
        k += 1;
    }
    let mut s = String::new();
    let mut need_colon = false;
    let mut i = 0;
    while i < range {
        if i == best {
            if need_colon || i == 0 {
                s.push(':');
            }
            s.push(':');
            need_colon = false;
            i += best_len;
            continue;
        }
        if need_colon {
            s.push(':');
        }
        s.push_str(&format!("{:x}", word(i)));
        need_colon = true;
        i += 1;
    }
    if use_v4 {
        if need_colon {
            s.push(':');
        }
        s.push_str(&ipv4(b.get(12..16).unwrap_or_default(), false));
    }
    s
}

/// The `N` bytes at `at` in `b`.
fn bytes_at<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}
