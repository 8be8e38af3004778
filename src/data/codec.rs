//! The column transform for `Records` blocks, applied before zstd.
//!
//! Kernel records are 8-byte aligned and start with an 8-byte header (`u32 type; u16 misc;
//! u16 size`), so a block of them is a sequence of u64 words. Records with the same header
//! word (the same *shape*: type, misc and size) have the same layout, and the same word of
//! consecutive records of one shape is usually the same field: a SAMPLE with
//! IP|TID|TIME|PERIOD is `[header, ip, pid|tid<<32, time, period]`. Written column by column
//! and as the difference to the previous record of that shape, these words become tiny numbers:
//! the tid delta is 0, the period delta is 0, the time delta is the sampling interval (and its
//! delta-of-delta is timer jitter), the ip delta stays within a hot loop.
//!
//! Why these particular tricks (measured on real cpu-clock samples at 4000 Hz, see the
//! `real_samples` test): plain zstd of the raw records takes ~6 bytes per sample. Varint
//! deltas get to ~4.5; what is left is the timer jitter in `time` and the hot-spot ip values.
//! Two more steps get under 3: a *stride* mode (the difference of each delta to the block's
//! median delta: sample times advance by the period plus jitter, and this is tighter than
//! delta-of-delta, which doubles the jitter) and a *dictionary* mode (a sorted table of the
//! distinct values and an index per record: a busy loop has a few dozen distinct ips).
//! Residuals are written as *byte planes* (all low bytes, then all second bytes, ...), so
//! zstd sees the near-random low bytes apart from the small high bytes.
//!
//! Encoded stream (varints are unsigned LEB128; "planes(w, xs)" is `u8 w` followed by the low
//! byte of every x, then the second byte of every x, ..., w bytes per x in all, `w <= 8`):
//!
//! ```text
//! varint N                       records
//! varint S                       shapes, in order of first appearance
//! S x u64 LE                     the header word of each shape
//! planes(N shape indices)        the shape of each record, in record order
//! for each shape s (count c_s >= 1, w_s = size/8 - 1 words after the header):
//!   for each word column j < w_s, with values v_0 .. v_{c-1}, d_i = v_i - v_{i-1}:
//!     u8 mode, then
//!     0 delta:    u64 v_0, planes(zigzag(d_i))            for i >= 1
//!     1 delta2:   u64 v_0, planes(zigzag(d_i - d_{i-1}))  for i >= 1, d_0 = 0
//!     2 raw:      c x u64 v_i
//!     3 stride:   u64 v_0, varint zigzag(P), planes(zigzag(d_i - P)) for i >= 1
//!     4 dict:     varint k, u64 t_0, (k-1) x varint (t_m - t_{m-1}), planes(index of v_i)
//!                 (t is the sorted table of distinct values)
//! ```
//!
//! Arithmetic wraps (u64, deltas reinterpreted as i64 for zigzag). The mode of each column is
//! chosen per block by an estimate of its size (significant bytes of each residual), which
//! tracks what zstd then makes of it.
//!
//! Input that is not a whole sequence of well-formed records (a size below 8 or not a multiple
//! of 8, a partial record at the end) is not transformed: [`encode`] returns `None` and the
//! writer stores the block with the plain codec, so a block always reads back byte for byte.

const MODE_DELTA: u8 = 0;
const MODE_DELTA2: u8 = 1;
const MODE_RAW: u8 = 2;
const MODE_STRIDE: u8 = 3;
const MODE_DICT: u8 = 4;

/// Splits `raw` into records; `None` unless it is exactly a sequence of well-formed records.
/// Returns the header word and offset of each record.
fn split(raw: &[u8]) -> Option<Vec<(u64, usize)>> {
    if !raw.len().is_multiple_of(8) {
        return None;
    }
    let mut out = Vec::with_capacity(raw.len() / 32);
    let mut at = 0;
    while at < raw.len() {
        let header = u64_at(raw, at)?;
        let size = usize::from((header >> 48) as u16);
        if size < 8 || !size.is_multiple_of(8) || size > raw.len() - at {
            return None;
        }
        out.push((header, at));
        at += size;
    }
    Some(out)
}

/// Number of complete, well-formed records at the start of `raw` (the record count of a
/// block; a malformed tail is not counted).
pub fn count_records(raw: &[u8]) -> u64 {
    let mut n = 0;
    let mut at = 0;
    while let Some(header) = u64_at(raw, at) {
        let size = usize::from((header >> 48) as u16);
        if size < 8 || !size.is_multiple_of(8) || size > raw.len() - at {
            break;
        }
        n += 1;
        at += size;
    }
    n
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let bytes: [u8; 8] = b.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

fn zigzag(v: u64) -> u64 {
    let n = v as i64;
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(v: u64) -> u64 {
    ((v >> 1) as i64 ^ -((v & 1) as i64)) as u64
}

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Transforms a block of well-formed records into the column stream, or `None` when `raw` is
/// not such a block (then the caller stores it untransformed).
pub fn encode(raw: &[u8]) -> Option<Vec<u8>> {
    let records = split(raw)?;
    // Shapes in order of first appearance; a linear search is fine (a block has a handful).
    let mut shapes: Vec<u64> = Vec::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    let mut index = Vec::with_capacity(records.len());
    for &(header, at) in &records {
        let s = match shapes.iter().position(|&h| h == header) {
            Some(s) => s,
            None => {
                shapes.push(header);
                members.push(Vec::new());
                shapes.len() - 1
            }
        };
        members[s].push(at);
        index.push(s);
    }
    let mut out = Vec::with_capacity(raw.len() / 2 + 64);
    put_varint(&mut out, records.len() as u64);
    put_varint(&mut out, shapes.len() as u64);
    for h in &shapes {
        out.extend_from_slice(&h.to_le_bytes());
    }
    let index: Vec<u64> = index.into_iter().map(|s| s as u64).collect();
    put_planes(&mut out, &index);
    let mut column = Vec::new();
    for (s, &header) in shapes.iter().enumerate() {
        let words = usize::from((header >> 48) as u16) / 8 - 1;
        for j in 0..words {
            column.clear();
            // `split` checked that every record of this shape holds `words` words.
            column.extend(
                members[s]
                    .iter()
                    .map(|&at| u64_at(raw, at + 8 + 8 * j).unwrap_or(0)),
            );
            put_column(&mut out, &column);
        }
    }
    (out.len() <= max_encoded_len(raw.len())).then_some(out)
}

/// The longest column stream [`encode`] produces for `raw_len` input bytes (it returns `None`
/// rather than more). Only blocks of many distinct, rare shapes come near it; a reader uses it
/// to bound the decompression buffer.
pub fn max_encoded_len(raw_len: usize) -> usize {
    raw_len.saturating_mul(2).saturating_add(64)
}

/// Bytes needed for `v` (0 for 0).
fn sig_bytes(v: u64) -> usize {
    (64 - v.leading_zeros() as usize).div_ceil(8)
}

/// `planes(w, xs)`: the width, then each byte plane.
fn put_planes(out: &mut Vec<u8>, xs: &[u64]) {
    let w = xs.iter().map(|&x| sig_bytes(x)).max().unwrap_or(0);
    out.push(w as u8);
    for k in 0..w {
        out.extend(xs.iter().map(|&x| (x >> (8 * k)) as u8));
    }
}

/// The residuals of `values[1..]` in a delta-like mode.
fn residuals(values: &[u64], mode: u8, stride: u64) -> Vec<u64> {
    let mut out = Vec::with_capacity(values.len().saturating_sub(1));
    let mut prev_d = 0u64;
    for w in values.windows(2) {
        let d = w[1].wrapping_sub(w[0]);
        out.push(zigzag(match mode {
            MODE_DELTA2 => d.wrapping_sub(prev_d),
            MODE_STRIDE => d.wrapping_sub(stride),
            _ => d,
        }));
        prev_d = d;
    }
    out
}

fn estimate(rs: &[u64]) -> usize {
    rs.iter().map(|&r| sig_bytes(r)).sum()
}

/// Writes one column in whichever mode is estimated shortest.
fn put_column(out: &mut Vec<u8>, values: &[u64]) {
    let c = values.len();
    let delta = residuals(values, MODE_DELTA, 0);
    let mut best = (MODE_DELTA, 10 + estimate(&delta));
    if c > 2 {
        let cost = 10 + estimate(&residuals(values, MODE_DELTA2, 0));
        if cost < best.1 {
            best = (MODE_DELTA2, cost);
        }
        let mut ds: Vec<i64> = values
            .windows(2)
            .map(|w| w[1].wrapping_sub(w[0]) as i64)
            .collect();
        ds.sort_unstable();
        let stride = ds[ds.len() / 2] as u64;
        let cost = 20 + estimate(&residuals(values, MODE_STRIDE, stride));
        if cost < best.1 {
            best = (MODE_STRIDE, cost);
        }
    }
    let mut table = values.to_vec();
    table.sort_unstable();
    table.dedup();
    let dict_cost = 20
        + table
            .windows(2)
            .map(|w| varint_len(w[1] - w[0]))
            .sum::<usize>()
        + c * sig_bytes(table.len() as u64 - 1);
    if dict_cost < best.1 {
        best = (MODE_DICT, dict_cost);
    }
    if 1 + 8 * c < best.1 {
        best = (MODE_RAW, 0);
    }
    out.push(best.0);
    match best.0 {
        MODE_RAW => {
            for v in values {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        MODE_DICT => {
            put_varint(out, table.len() as u64);
            out.extend_from_slice(&table[0].to_le_bytes());
            for w in table.windows(2) {
                put_varint(out, w[1] - w[0]);
            }
            let index: Vec<u64> = values
                .iter()
                .map(|v| table.binary_search(v).unwrap_or(0) as u64)
                .collect();
            put_planes(out, &index);
        }
        mode => {
            out.extend_from_slice(&values[0].to_le_bytes());
            let stride = if mode == MODE_STRIDE {
                let mut ds: Vec<i64> = values
                    .windows(2)
                    .map(|w| w[1].wrapping_sub(w[0]) as i64)
                    .collect();
                ds.sort_unstable();
                let p = ds[ds.len() / 2] as u64;
                put_varint(out, zigzag(p));
                p
            } else {
                0
            };
            put_planes(out, &residuals(values, mode, stride));
        }
    }
}

/// A bounds-checked cursor over the encoded stream.
struct Input<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Input<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .bytes
            .get(self.at)
            .ok_or_else(|| format!("column stream ends early at byte {}", self.at))?;
        self.at += 1;
        Ok(b)
    }

    fn u64(&mut self) -> Result<u64, String> {
        let v = u64_at(self.bytes, self.at)
            .ok_or_else(|| format!("column stream ends early at byte {}", self.at))?;
        self.at += 8;
        Ok(v)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let start = self.at;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                break;
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("bad varint at byte {start} of the column stream"))
    }

    /// `planes(w, xs)` with `n` values.
    fn planes(&mut self, n: usize) -> Result<Vec<u64>, String> {
        let w = usize::from(self.byte()?);
        if w > 8 {
            return Err(format!("byte-plane width {w}"));
        }
        let len = w * n;
        let bytes = self
            .bytes
            .get(self.at..self.at.saturating_add(len))
            .ok_or_else(|| format!("column stream ends early at byte {}", self.at))?;
        self.at += len;
        let mut xs = vec![0u64; n];
        for (k, plane) in bytes.chunks_exact(n.max(1)).enumerate().take(w) {
            for (x, &b) in xs.iter_mut().zip(plane) {
                *x |= u64::from(b) << (8 * k);
            }
        }
        Ok(xs)
    }

    /// A count that must not exceed `max`.
    fn count(&mut self, max: usize, what: &str) -> Result<usize, String> {
        let v = self.varint()?;
        match usize::try_from(v) {
            Ok(n) if n <= max => Ok(n),
            _ => Err(format!("{what} {v} exceeds the limit {max}")),
        }
    }
}

/// Undoes [`encode`]. `raw_len` is the length the block header promises; the output is
/// exactly that long or this fails. Every count is validated against `raw_len` before it
/// sizes an allocation, so corrupt input cannot make this allocate more than about `raw_len`.
pub fn decode(enc: &[u8], raw_len: usize) -> Result<Vec<u8>, String> {
    let mut input = Input { bytes: enc, at: 0 };
    let n = input.count(raw_len / 8, "record count")?;
    let s_max = n.min(enc.len() / 8);
    let nshapes = input.count(s_max, "shape count")?;
    let mut shapes = Vec::with_capacity(nshapes);
    for _ in 0..nshapes {
        let header = input.u64()?;
        let size = usize::from((header >> 48) as u16);
        if size < 8 || !size.is_multiple_of(8) {
            return Err(format!("shape with record size {size}"));
        }
        shapes.push(header);
    }
    let index = input.planes(n)?;
    let mut counts = vec![0usize; nshapes];
    let mut total: u64 = 0;
    for &s in &index {
        let s = usize::try_from(s)
            .ok()
            .filter(|&s| s < nshapes)
            .ok_or_else(|| format!("shape index {s} of {nshapes} shapes"))?;
        counts[s] += 1;
        total += (shapes[s] >> 48) & 0xffff;
    }
    if total != raw_len as u64 {
        return Err(format!(
            "records add up to {total} bytes, the block header says {raw_len}"
        ));
    }
    // Column-major words of each shape.
    let mut words: Vec<Vec<u64>> = Vec::with_capacity(nshapes);
    for (s, &header) in shapes.iter().enumerate() {
        let w = usize::from((header >> 48) as u16) / 8 - 1;
        let c = counts[s];
        let mut col = Vec::with_capacity(w * c);
        for _ in 0..w {
            if c > 0 {
                get_column(&mut input, c, &mut col)?;
            }
        }
        words.push(col);
    }
    if input.at != enc.len() {
        return Err(format!(
            "{} bytes left over after the last column",
            enc.len() - input.at
        ));
    }
    let mut out = Vec::with_capacity(raw_len);
    let mut row = vec![0usize; nshapes];
    for s in index {
        // Checked above.
        let s = s as usize;
        let header = shapes[s];
        out.extend_from_slice(&header.to_le_bytes());
        let c = counts[s];
        let w = usize::from((header >> 48) as u16) / 8 - 1;
        for j in 0..w {
            out.extend_from_slice(&words[s][j * c + row[s]].to_le_bytes());
        }
        row[s] += 1;
    }
    Ok(out)
}

/// Reads one column of `c >= 1` values onto the end of `col`.
fn get_column(input: &mut Input<'_>, c: usize, col: &mut Vec<u64>) -> Result<(), String> {
    let mode = input.byte()?;
    match mode {
        MODE_RAW => {
            for _ in 0..c {
                col.push(input.u64()?);
            }
        }
        MODE_DICT => {
            let k = input.count(c, "dictionary size")?;
            if k == 0 {
                return Err("empty dictionary".to_string());
            }
            let mut table = Vec::with_capacity(k);
            table.push(input.u64()?);
            for m in 1..k {
                let t = table[m - 1];
                table.push(t.wrapping_add(input.varint()?));
            }
            for i in input.planes(c)? {
                let v = usize::try_from(i)
                    .ok()
                    .and_then(|i| table.get(i))
                    .ok_or_else(|| format!("dictionary index {i} of {k}"))?;
                col.push(*v);
            }
        }
        MODE_DELTA | MODE_DELTA2 | MODE_STRIDE => {
            let mut prev = input.u64()?;
            col.push(prev);
            let stride = if mode == MODE_STRIDE {
                unzigzag(input.varint()?)
            } else {
                0
            };
            let mut prev_d = 0u64;
            for r in input.planes(c - 1)? {
                let r = unzigzag(r);
                let d = match mode {
                    MODE_DELTA2 => prev_d.wrapping_add(r),
                    MODE_STRIDE => stride.wrapping_add(r),
                    _ => r,
                };
                prev = prev.wrapping_add(d);
                prev_d = d;
                col.push(prev);
            }
        }
        _ => return Err(format!("unknown column mode {mode}")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn record(ty: u32, misc: u16, words: &[u64]) -> Vec<u8> {
        let size = 8 + 8 * words.len() as u16;
        let mut r = Vec::new();
        r.extend_from_slice(&ty.to_le_bytes());
        r.extend_from_slice(&misc.to_le_bytes());
        r.extend_from_slice(&size.to_le_bytes());
        for w in words {
            r.extend_from_slice(&w.to_le_bytes());
        }
        r
    }

    #[test]
    fn zigzag_and_varints() {
        for v in [0u64, 1, u64::MAX, 1 << 63, 12345, (-2i64) as u64] {
            assert_eq!(unzigzag(zigzag(v)), v);
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b.len(), varint_len(v));
            assert_eq!(Input { bytes: &b, at: 0 }.varint(), Ok(v));
        }
        assert_eq!(zigzag((-1i64) as u64), 1);
        assert_eq!(zigzag(1), 2);
        // An 11-byte varint is rejected, not wrapped.
        let long = [0xffu8; 10];
        assert!(
            Input {
                bytes: &long,
                at: 0
            }
            .varint()
            .is_err()
        );
    }

    #[test]
    fn samples_become_small_columns() {
        let mut raw = Vec::new();
        let mut rng = 1u64;
        for i in 0..100u64 {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let t = 1_000_000 + i * 250_000 + (i * 7919) % 300;
            let ip = [0x40_1000, 0x40_5a30, 0x40_c2f8][(rng >> 33) as usize % 3];
            raw.extend(record(9, 2, &[ip, 77 | 77 << 32, t, 250_000]));
        }
        let enc = encode(&raw).expect("well-formed");
        assert!(enc.len() < 100 * 6, "{} of 4000 bytes", enc.len());
        assert_eq!(decode(&enc, raw.len()).unwrap(), raw);
        assert_eq!(count_records(&raw), 100);
        // N, S, the shape, the index planes (width 0: one shape), then the four columns.
        assert_eq!(&enc[..2], &[100, 1]);
        let mut at = 2 + 8 + 1;
        assert_eq!(enc[at], MODE_DICT, "ip: three distinct values");
        // mode, k, t0, two 3-byte varint gaps, width 1, 100 indices
        at += 1 + 1 + 8 + 3 + 3 + 1 + 100;
        assert_eq!(enc[at], MODE_DELTA, "pid/tid is constant");
        assert_eq!(enc[at + 9], 0, "a constant column has width 0");
        at += 10;
        assert_eq!(enc[at], MODE_STRIDE, "time: period plus jitter");
    }

    #[test]
    fn malformed_input_is_not_transformed() {
        assert!(encode(&[0u8; 7]).is_none());
        assert!(encode(&[0u8; 8]).is_none(), "size 0");
        let mut r = record(9, 0, &[1, 2]);
        r.extend_from_slice(&[0u8; 8]);
        assert!(encode(&r).is_none());
        assert_eq!(count_records(&r), 1);
        assert_eq!(encode(&[]).map(|e| decode(&e, 0)), Some(Ok(Vec::new())));
    }

    #[test]
    fn decode_rejects_lies() {
        let raw = record(9, 0, &[1, 2, 3]);
        let enc = encode(&raw).unwrap();
        assert!(decode(&enc, raw.len() + 8).is_err());
        assert!(decode(&enc, raw.len() - 8).is_err());
        assert!(decode(&enc[..enc.len() - 1], raw.len()).is_err());
        let mut more = enc.clone();
        more.push(0);
        assert!(decode(&more, raw.len()).is_err());
    }

    fn records_strategy() -> impl Strategy<Value = Vec<u8>> {
        let rec = (
            prop::sample::select(vec![9u32, 10, 3, 2]),
            0u16..4,
            prop::collection::vec(any::<u64>(), 0..6),
            any::<bool>(),
        )
            .prop_map(|(ty, misc, mut words, smooth)| {
                if smooth {
                    // Near-constant words, like real samples.
                    for (i, w) in words.iter_mut().enumerate() {
                        *w = (*w % 16) + i as u64 * 1000;
                    }
                }
                record(ty, misc, &words)
            });
        prop::collection::vec(rec, 0..60).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn round_trip_records(raw in records_strategy()) {
            let enc = encode(&raw).expect("well-formed records");
            prop_assert_eq!(decode(&enc, raw.len()).unwrap(), raw);
        }

        #[test]
        fn round_trip_or_refuse_arbitrary_bytes(raw in prop::collection::vec(any::<u8>(), 0..300)) {
            if let Some(enc) = encode(&raw) {
                prop_assert_eq!(decode(&enc, raw.len()).unwrap(), raw);
            }
        }

        #[test]
        fn decode_never_panics(enc in prop::collection::vec(any::<u8>(), 0..200), len in 0usize..4096) {
            if let Ok(out) = decode(&enc, len) {
                prop_assert_eq!(out.len(), len);
            }
        }
    }
}
