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
//! A *stride* mode (the difference of each delta to the block's median delta: sample times
//! advance by the period plus jitter, and this is tighter than delta-of-delta, which doubles
//! the jitter) and a *dictionary* mode (a sorted table of the distinct values and an index per
//! record: a busy loop has a few dozen distinct ips) get under 3 with byte planes and zstd.
//! The last step is the entropy coder: zstd's Huffman stage spends at least one bit per byte,
//! and an ip index that is one of two hot values carries about one bit per sample, so byte
//! planes waste most of a byte per sample. The residuals and indices are therefore coded with
//! an adaptive binary range coder (LZMA's), in context: a residual's bit length in the context
//! of the previous residual's bit length (timer jitter comes in runs; a late sample is
//! followed by an early one), a dictionary index in the context of the previous index (the
//! ip alternates between hot spots, the tid runs). That takes real samples from ~2.8 to
//! ~2.2 bytes per sample in 2000-sample blocks.
//!
//! Columns belong to a *group* of shapes. In the first layout ([`Version::V1`],
//! `Codec::Columns`) a group is one shape; in the second ([`Version::V2`], `Codec::Columns2`)
//! and third ([`Version::V3`], `Codec::Columns3`, what the writer uses: the second with each
//! dictionary's sorted table range-coded as `ints(gap - 1)` rather than written as varints, 1%
//! fewer bytes on python3's large ip tables) it is every shape of one type and size, whatever
//! the misc: a thread's user and kernel samples are one time series, and the time column of
//! only its user samples would jump by two periods wherever a kernel sample was (4% fewer
//! bytes on python3 at 4 kHz).
//!
//! Encoded stream: a byte part (the record count, the shapes, each column's mode and fixed
//! fields, as unsigned LEB128 varints and little-endian words) and a coded part (one
//! LZMA-style range coder stream: each column's residuals as `ints`, dictionary indices as
//! `symbols`, and codec 3's dictionary tables as `ints` of their gaps), read side by side.
//! `docs/file-format.md` (Records blocks) specifies every byte and the coder's models; what
//! this module adds is the choice below.
//!
//! Arithmetic wraps (u64, deltas reinterpreted as i64 for zigzag). The mode of each column is
//! chosen per block by an estimate of its coded size in bits (the order-0 entropy of the bit
//! lengths plus the mantissa bits; for a dictionary, its table plus the entropy of the index
//! given the previous index).
//!
//! Input that is not a whole sequence of well-formed records (a size below 8 or not a multiple
//! of 8, a partial record at the end) is not transformed: [`encode`] returns `None` and the
//! writer stores the block with the plain codec, so a block always reads back byte for byte.
//! A decoder checks that the byte part is consumed exactly and that the range decoder read
//! exactly the coded part.

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

/// The layouts of the column stream. `V1` (`Codec::Columns`, the files of earlier hrec
/// builds) gives each shape its own columns; `V2` (`Codec::Columns2`) lets the shapes that
/// differ only in `misc` share them (a sample's cpumode: a thread's user and kernel samples are
/// one time series, and a column of only its user samples has gaps where the kernel ones
/// were); `V3` (`Codec::Columns3`) is `V2` with dictionary tables range-coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// Columns per shape.
    V1,
    /// Columns per record type and size.
    V2,
    /// As `V2`, with a dictionary's table gaps range-coded (`ints(gap - 1)`) instead of
    /// written as varints.
    V3,
}

/// The `misc` field of a record header word.
const MISC_BITS: u64 = 0xffff << 32;

/// The column groups of `shapes` (header words in order of first appearance): the group of
/// each shape, and how many groups. Under `V2` the shapes that differ only in `misc` share a
/// group; groups are numbered in order of first appearance.
fn groups(shapes: &[u64], v: Version) -> (Vec<usize>, usize) {
    let key = |h: u64| match v {
        Version::V1 => h,
        Version::V2 | Version::V3 => h & !MISC_BITS,
    };
    let mut keys: Vec<u64> = Vec::new();
    let of = shapes
        .iter()
        .map(|&h| match keys.iter().position(|&k| k == key(h)) {
            Some(g) => g,
            None => {
                keys.push(key(h));
                keys.len() - 1
            }
        })
        .collect();
    (of, keys.len())
}

/// Transforms a block of well-formed records into the column stream ([`Version::V3`]), or
/// `None` when `raw` is not such a block (then the caller stores it untransformed).
pub fn encode(raw: &[u8]) -> Option<Vec<u8>> {
    encode_as(raw, Version::V3)
}

/// [`encode`] in layout `v`.
pub fn encode_as(raw: &[u8], v: Version) -> Option<Vec<u8>> {
    let records = split(raw)?;
    // Shapes in order of first appearance; a linear search is fine (a block has a handful).
    let mut shapes: Vec<u64> = Vec::new();
    let mut index = Vec::with_capacity(records.len());
    for &(header, _) in &records {
        let s = match shapes.iter().position(|&h| h == header) {
            Some(s) => s,
            None => {
                shapes.push(header);
                shapes.len() - 1
            }
        };
        index.push(s as u64);
    }
    let (group_of, ngroups) = groups(&shapes, v);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); ngroups];
    for (&(_, at), &s) in records.iter().zip(&index) {
        members[group_of[s as usize]].push(at);
    }
    let mut out = Vec::with_capacity(raw.len() / 4 + 64);
    let mut rc = RangeEncoder::new();
    put_varint(&mut out, records.len() as u64);
    put_varint(&mut out, shapes.len() as u64);
    for h in &shapes {
        out.extend_from_slice(&h.to_le_bytes());
    }
    if shapes.len() > 1 {
        put_symbols(&mut rc, shapes.len(), &index);
    }
    let mut column = Vec::new();
    for at in &members {
        // Every shape of a group has the same size; `at[0]` is a record of the group.
        let Some(&first) = at.first() else { continue };
        let header = u64_at(raw, first).unwrap_or(0);
        let words = usize::from((header >> 48) as u16) / 8 - 1;
        for j in 0..words {
            column.clear();
            // `split` checked that every record of this group holds `words` words.
            column.extend(
                at.iter()
                    .map(|&at| u64_at(raw, at + 8 + 8 * j).unwrap_or(0)),
            );
            put_column(&mut out, &mut rc, &column, v);
        }
    }
    let coded = rc.finish();
    let mut stream = Vec::with_capacity(out.len() + coded.len() + 10);
    put_varint(&mut stream, out.len() as u64);
    stream.extend_from_slice(&out);
    stream.extend_from_slice(&coded);
    (stream.len() <= max_encoded_len(raw.len())).then_some(stream)
}

/// The longest column stream [`encode`] produces for `raw_len` input bytes (it returns `None`
/// rather than more). Only blocks of many distinct, rare shapes come near it; a reader uses it
/// to bound the decompression buffer.
pub fn max_encoded_len(raw_len: usize) -> usize {
    raw_len.saturating_mul(2).saturating_add(64)
}

/// Significant bits of `v` (0 for 0).
fn sig_bits(v: u64) -> usize {
    64 - v.leading_zeros() as usize
}

/// Probability (of a 0 bit) scale of the adaptive binary models, LZMA style.
const PROB_BITS: u32 = 11;
const PROB_ONE: u16 = 1 << PROB_BITS;
/// Adaptation speed: a model moves 1/2^MOVE of the way towards each bit it sees.
const MOVE: u32 = 4;
/// Contexts for the bit length of a residual: the previous residual's bit length, capped.
const LEN_CONTEXTS: usize = 24;
/// Mantissa bits below the leading one that get adaptive models; lower ones are sent as is.
const MANTISSA_MODELLED: usize = 2;
/// Dictionaries up to this size code each index in the context of the previous index.
const SYMBOL_CONTEXTS: usize = 32;

/// A binary range coder (LZMA's): adaptive bits against 11-bit probabilities, and direct
/// bits at probability 1/2.
struct RangeEncoder {
    low: u64,
    range: u32,
    cache: u8,
    cache_size: u64,
    out: Vec<u8>,
}

impl RangeEncoder {
    fn new() -> Self {
        RangeEncoder {
            low: 0,
            range: u32::MAX,
            cache: 0,
            cache_size: 1,
            out: Vec::new(),
        }
    }

    fn shift_low(&mut self) {
        if (self.low as u32) < 0xff00_0000 || (self.low >> 32) != 0 {
            let carry = (self.low >> 32) as u8;
            let mut temp = self.cache;
            loop {
                self.out.push(temp.wrapping_add(carry));
                temp = 0xff;
                self.cache_size -= 1;
                if self.cache_size == 0 {
                    break;
                }
            }
            self.cache = (self.low >> 24) as u8;
        }
        self.cache_size += 1;
        self.low = (self.low & 0x00ff_ffff) << 8;
    }

    fn normalize(&mut self) {
        while self.range < 1 << 24 {
            self.range <<= 8;
            self.shift_low();
        }
    }

    fn bit(&mut self, prob: &mut u16, bit: bool) {
        let bound = (self.range >> PROB_BITS) * u32::from(*prob);
        if bit {
            self.low += u64::from(bound);
            self.range -= bound;
            *prob -= *prob >> MOVE;
        } else {
            self.range = bound;
            *prob += (PROB_ONE - *prob) >> MOVE;
        }
        self.normalize();
    }

    fn direct(&mut self, bit: bool) {
        self.range >>= 1;
        if bit {
            self.low += u64::from(self.range);
        }
        self.normalize();
    }

    fn finish(mut self) -> Vec<u8> {
        for _ in 0..5 {
            self.shift_low();
        }
        // The first byte is always 0 (the initial cache); the decoder knows.
        self.out.remove(0);
        self.out
    }
}

struct RangeDecoder<'a> {
    bytes: &'a [u8],
    at: usize,
    range: u32,
    code: u32,
}

impl<'a> RangeDecoder<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        let mut d = RangeDecoder {
            bytes,
            at: 0,
            range: u32::MAX,
            code: 0,
        };
        for _ in 0..4 {
            d.code = (d.code << 8) | u32::from(d.next());
        }
        d
    }

    /// The next byte; past the end, 0 (the caller checks the length consumed at the end).
    fn next(&mut self) -> u8 {
        let b = self.bytes.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    fn normalize(&mut self) {
        while self.range < 1 << 24 {
            self.range <<= 8;
            self.code = (self.code << 8) | u32::from(self.next());
        }
    }

    fn bit(&mut self, prob: &mut u16) -> bool {
        let bound = (self.range >> PROB_BITS) * u32::from(*prob);
        let bit = if self.code < bound {
            self.range = bound;
            *prob += (PROB_ONE - *prob) >> MOVE;
            false
        } else {
            self.code -= bound;
            self.range -= bound;
            *prob -= *prob >> MOVE;
            true
        };
        self.normalize();
        bit
    }

    fn direct(&mut self) -> bool {
        self.range >>= 1;
        let bit = self.code >= self.range;
        if bit {
            self.code -= self.range;
        }
        self.normalize();
        bit
    }
}

/// The adaptive models of one `ints` sequence: a 7-bit tree for the bit length of each value
/// per length context, and trees for the top mantissa bits per bit length.
struct IntModel {
    len: Vec<u16>,
    mantissa: Vec<u16>,
    low: Vec<u16>,
}

impl IntModel {
    fn new() -> Self {
        IntModel {
            len: vec![PROB_ONE / 2; LEN_CONTEXTS * 128],
            mantissa: vec![PROB_ONE / 2; 65 << MANTISSA_MODELLED],
            low: vec![PROB_ONE / 2; 65 * 3],
        }
    }
}

/// `ints(xs)`: each x as its bit length `n` (a 7-bit tree in the context of the previous
/// x's bit length), then the `n - 1` bits below its leading one, the top two modelled per
/// `n`, the rest sent as is.
fn put_ints(rc: &mut RangeEncoder, xs: &[u64]) {
    let mut m = IntModel::new();
    let mut ctx = 0;
    let mut low = 0;
    for &x in xs {
        let n = sig_bits(x);
        let tree = &mut m.len[ctx * 128..][..128];
        let mut node = 1;
        for k in (0..7).rev() {
            let b = (n >> k) & 1 == 1;
            rc.bit(&mut tree[node], b);
            node = node * 2 + usize::from(b);
        }
        let mut node = 1;
        for k in (0..n.saturating_sub(1)).rev() {
            let b = (x >> k) & 1 == 1;
            if node < 1 << MANTISSA_MODELLED {
                rc.bit(&mut m.mantissa[(n << MANTISSA_MODELLED) + node], b);
                node = node * 2 + usize::from(b);
            } else if k == 0 {
                rc.bit(&mut m.low[n * 3 + low], b);
            } else {
                rc.direct(b);
            }
        }
        ctx = n.min(LEN_CONTEXTS - 1);
        low = if n >= 2 { 1 + (x & 1) as usize } else { 0 };
    }
}

fn get_ints(rc: &mut RangeDecoder<'_>, count: usize) -> Result<Vec<u64>, String> {
    let mut m = IntModel::new();
    let mut ctx = 0;
    let mut low = 0;
    let mut xs = Vec::with_capacity(count);
    for _ in 0..count {
        let tree = &mut m.len[ctx * 128..][..128];
        let mut node = 1;
        for _ in 0..7 {
            node = node * 2 + usize::from(rc.bit(&mut tree[node]));
        }
        let n = node - 128;
        if n > 64 {
            return Err(format!("bit length {n} in the column stream"));
        }
        let mut x = u64::from(n > 0);
        let mut node = 1;
        for k in (0..n.saturating_sub(1)).rev() {
            let b = if node < 1 << MANTISSA_MODELLED {
                let b = rc.bit(&mut m.mantissa[(n << MANTISSA_MODELLED) + node]);
                node = node * 2 + usize::from(b);
                b
            } else if k == 0 {
                rc.bit(&mut m.low[n * 3 + low])
            } else {
                rc.direct()
            };
            x = (x << 1) | u64::from(b);
        }
        xs.push(x);
        ctx = n.min(LEN_CONTEXTS - 1);
        low = if n >= 2 { 1 + (x & 1) as usize } else { 0 };
    }
    Ok(xs)
}

/// `symbols(k, xs)`: each x < k as a bit tree of `bits(k - 1)` bits, in the context of the
/// previous x when `k <= 32` (the first in context 0).
fn symbol_model(k: usize) -> (usize, Vec<u16>) {
    let w = sig_bits(k.saturating_sub(1) as u64);
    let contexts = if k <= SYMBOL_CONTEXTS { k } else { 1 };
    (w, vec![PROB_ONE / 2; contexts << w])
}

fn put_symbols(rc: &mut RangeEncoder, k: usize, xs: &[u64]) {
    let (w, mut probs) = symbol_model(k);
    let mut prev = 0;
    for &x in xs {
        let ctx = if k <= SYMBOL_CONTEXTS { prev } else { 0 };
        let tree = &mut probs[ctx << w..][..1 << w];
        let mut node = 1;
        for j in (0..w).rev() {
            let b = (x >> j) & 1 == 1;
            rc.bit(&mut tree[node], b);
            node = node * 2 + usize::from(b);
        }
        prev = x as usize;
    }
}

fn get_symbols(rc: &mut RangeDecoder<'_>, k: usize, count: usize) -> Result<Vec<u64>, String> {
    let (w, mut probs) = symbol_model(k);
    let mut prev = 0;
    let mut xs = Vec::with_capacity(count);
    for _ in 0..count {
        let ctx = if k <= SYMBOL_CONTEXTS { prev } else { 0 };
        let tree = &mut probs[ctx << w..][..1 << w];
        let mut node = 1;
        for _ in 0..w {
            node = node * 2 + usize::from(rc.bit(&mut tree[node]));
        }
        let x = node - (1 << w);
        if x >= k {
            return Err(format!("index {x} of {k}"));
        }
        xs.push(x as u64);
        prev = x;
    }
    Ok(xs)
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

/// Estimated bits of `ints(rs)`: the order-0 entropy of the bit lengths plus the mantissas.
fn estimate(rs: &[u64]) -> f64 {
    let mut counts = [0usize; 65];
    let mut mantissa = 0;
    for &r in rs {
        let n = sig_bits(r);
        counts[n] += 1;
        mantissa += n.saturating_sub(1);
    }
    entropy(&counts, rs.len()) + mantissa as f64
}

/// Bits of an ideal order-0 code for symbols with these counts (`total` in all), plus a
/// little per symbol in use for the adaptive model to learn it.
fn entropy(counts: &[usize], total: usize) -> f64 {
    let t = total as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let c = c as f64;
            c * (t / c).log2() + 6.0
        })
        .sum()
}

/// Estimated bits of `symbols(k, xs)`.
fn estimate_symbols(k: usize, xs: &[u64]) -> f64 {
    if k <= SYMBOL_CONTEXTS {
        let mut pairs = vec![0usize; k * k];
        let mut from = vec![0usize; k];
        let mut prev = 0;
        for &x in xs {
            pairs[prev * k + x as usize] += 1;
            from[prev] += 1;
            prev = x as usize;
        }
        (0..k)
            .map(|p| entropy(&pairs[p * k..(p + 1) * k], from[p]))
            .sum()
    } else {
        let mut counts = vec![0usize; k];
        for &x in xs {
            counts[x as usize] += 1;
        }
        entropy(&counts, xs.len())
    }
}

fn median_delta(values: &[u64]) -> u64 {
    let mut ds: Vec<i64> = values
        .windows(2)
        .map(|w| w[1].wrapping_sub(w[0]) as i64)
        .collect();
    ds.sort_unstable();
    ds[ds.len() / 2] as u64
}

/// Writes one column in whichever mode is estimated shortest.
fn put_column(out: &mut Vec<u8>, rc: &mut RangeEncoder, values: &[u64], v: Version) {
    let c = values.len();
    let mut best = (
        MODE_DELTA,
        80.0 + estimate(&residuals(values, MODE_DELTA, 0)),
    );
    let mut stride = 0;
    if c > 2 {
        let cost = 80.0 + estimate(&residuals(values, MODE_DELTA2, 0));
        if cost < best.1 {
            best = (MODE_DELTA2, cost);
        }
        let p = median_delta(values);
        let cost = 160.0 + estimate(&residuals(values, MODE_STRIDE, p));
        if cost < best.1 {
            best = (MODE_STRIDE, cost);
            stride = p;
        }
    }
    let mut table = values.to_vec();
    table.sort_unstable();
    table.dedup();
    let index: Vec<u64> = values
        .iter()
        .map(|v| table.binary_search(v).unwrap_or(0) as u64)
        .collect();
    let gaps: Vec<u64> = table.windows(2).map(|w| w[1] - w[0] - 1).collect();
    if table.len() < best.1 as usize / 8 {
        let table_bits = if v == Version::V3 {
            80.0 + estimate(&gaps)
        } else {
            8.0 * (16 + gaps.iter().map(|&g| varint_len(g + 1)).sum::<usize>()) as f64
        };
        let dict_cost = table_bits + estimate_symbols(table.len(), &index);
        if dict_cost < best.1 {
            best = (MODE_DICT, dict_cost);
        }
    }
    if (8 + 64 * c) as f64 <= best.1 {
        best = (MODE_RAW, 0.0);
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
            if v == Version::V3 {
                put_ints(rc, &gaps);
            } else {
                for g in &gaps {
                    put_varint(out, g + 1);
                }
            }
            put_symbols(rc, table.len(), &index);
        }
        mode => {
            out.extend_from_slice(&values[0].to_le_bytes());
            if mode == MODE_STRIDE {
                put_varint(out, zigzag(stride));
            }
            put_ints(rc, &residuals(values, mode, stride));
        }
    }
}

/// A bounds-checked cursor over the byte part of the encoded stream.
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
pub fn decode(enc: &[u8], raw_len: usize, v: Version) -> Result<Vec<u8>, String> {
    let mut outer = Input { bytes: enc, at: 0 };
    let fixed_len = outer.count(enc.len() - outer.at.min(enc.len()), "byte part length")?;
    let start = outer.at;
    let fixed = enc
        .get(start..start + fixed_len)
        .ok_or_else(|| "column stream ends early".to_string())?;
    let mut input = Input {
        bytes: fixed,
        at: 0,
    };
    let mut rc = RangeDecoder::new(&enc[start + fixed_len..]);
    let n = input.count(raw_len / 8, "record count")?;
    let s_max = n.min(fixed.len() / 8);
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
    let index = if nshapes > 1 {
        get_symbols(&mut rc, nshapes, n)?
    } else if nshapes == 1 || n == 0 {
        vec![0; n]
    } else {
        return Err(format!("{n} records of no shape"));
    };
    let (group_of, ngroups) = groups(&shapes, v);
    let mut counts = vec![0usize; ngroups];
    // The header of a shape of each group (they all have the group's size).
    let mut group_header = vec![0u64; ngroups];
    let mut total: u64 = 0;
    for &s in &index {
        // `get_symbols` checked s < nshapes.
        let g = group_of[s as usize];
        counts[g] += 1;
        group_header[g] = shapes[s as usize];
        total += (shapes[s as usize] >> 48) & 0xffff;
    }
    if total != raw_len as u64 {
        return Err(format!(
            "records add up to {total} bytes, the block header says {raw_len}"
        ));
    }
    let words_of = |header: u64| usize::from((header >> 48) as u16) / 8 - 1;
    // Column-major words of each group.
    let mut words: Vec<Vec<u64>> = Vec::with_capacity(ngroups);
    for (&c, &header) in counts.iter().zip(&group_header) {
        if c == 0 {
            // A shape no record has (only corrupt input lists one).
            words.push(Vec::new());
            continue;
        }
        let w = words_of(header);
        let mut col = Vec::with_capacity(w * c);
        for _ in 0..w {
            get_column(&mut input, &mut rc, c, &mut col, v)?;
        }
        words.push(col);
    }
    if input.at != fixed.len() {
        return Err(format!(
            "{} bytes left over after the last column",
            fixed.len() - input.at
        ));
    }
    if rc.at != rc.bytes.len() {
        return Err(format!(
            "the coded part is {} bytes, its decoder read {}",
            rc.bytes.len(),
            rc.at
        ));
    }
    let mut out = Vec::with_capacity(raw_len);
    let mut row = vec![0usize; ngroups];
    for s in index {
        // Checked above.
        let header = shapes[s as usize];
        let g = group_of[s as usize];
        out.extend_from_slice(&header.to_le_bytes());
        let c = counts[g];
        for j in 0..words_of(header) {
            out.extend_from_slice(&words[g][j * c + row[g]].to_le_bytes());
        }
        row[g] += 1;
    }
    Ok(out)
}

/// Reads one column of `c >= 1` values onto the end of `col`.
fn get_column(
    input: &mut Input<'_>,
    rc: &mut RangeDecoder<'_>,
    c: usize,
    col: &mut Vec<u64>,
    v: Version,
) -> Result<(), String> {
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
            if v == Version::V3 {
                for g in get_ints(rc, k - 1)? {
                    let t = table[table.len() - 1];
                    table.push(t.wrapping_add(g).wrapping_add(1));
                }
            } else {
                for m in 1..k {
                    let t = table[m - 1];
                    table.push(t.wrapping_add(input.varint()?));
                }
            }
            for i in get_symbols(rc, k, c)? {
                // `get_symbols` checked i < k.
                col.push(table[i as usize]);
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
            for r in get_ints(rc, c - 1)? {
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
mod tests;
