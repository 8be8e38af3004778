//! Structure-aware mutations. Binary inputs are mostly perf records (`u32 type, u16 misc,
//! u16 size`, 8-byte aligned) and headers full of little-endian sizes, offsets and counts, so
//! besides bit flips and byte sets the mutator knows, per seed:
//!
//! * **record boundaries**: offsets where a chain of at least three plausible perf record
//!   headers starts (each one's `size` leads to the next), plus, for text, separators;
//! * **size-like fields**: 2/4/8-byte aligned words whose value is a plausible size, offset
//!   or count (non-zero and at most twice the input's length).
//!
//! Boundary integers (0, 1, the type's signed and unsigned maxima, values just past the end)
//! are written into those fields or any aligned word; truncation happens at random or at a
//! boundary; chunks (often whole records) are duplicated or deleted; two seeds are spliced at
//! boundaries. Text targets also get dictionary tokens.

/// A corpus entry with what the mutator found out about its structure.
#[derive(Debug)]
pub struct Seed {
    pub bytes: Vec<u8>,
    bounds: Vec<usize>,
    fields: Vec<(usize, usize)>,
}

fn word(b: &[u8], at: usize, width: usize) -> Option<u64> {
    let s = b.get(at..at + width)?;
    let mut w = [0u8; 8];
    w.get_mut(..width)?.copy_from_slice(s);
    Some(u64::from_le_bytes(w))
}

impl Seed {
    pub fn new(bytes: Vec<u8>) -> Seed {
        let len = bytes.len();
        // next[o] = o + size for a plausible header at o; chains of 3+ are record streams.
        let mut chain = vec![0u32; len / 8 + 2];
        let mut bounds = Vec::new();
        for o in (0..len.saturating_sub(7)).step_by(8).rev() {
            let size = word(&bytes, o + 6, 2).unwrap_or(0) as usize;
            let ty = word(&bytes, o, 4).unwrap_or(u64::MAX);
            if size >= 8 && size.is_multiple_of(8) && o + size <= len && ty < 128 {
                let next = chain.get((o + size) / 8).copied().unwrap_or(0);
                if let Some(c) = chain.get_mut(o / 8) {
                    *c = next + 1;
                }
            }
        }
        for (i, &c) in chain.iter().enumerate() {
            if c >= 3 {
                bounds.push(i * 8);
            }
        }
        for (i, &b) in bytes.iter().enumerate() {
            if b",/:{}()[] \n\"=".contains(&b) && bytes.len() < (1 << 20) {
                bounds.push(i);
            }
        }
        bounds.sort_unstable();
        bounds.dedup();
        let mut fields = Vec::new();
        for width in [2usize, 4, 8] {
            for at in (0..len.saturating_sub(width - 1)).step_by(width) {
                let v = word(&bytes, at, width).unwrap_or(0);
                if v != 0 && v <= 2 * len as u64 && (width > 2 || v >= 8) {
                    fields.push((at, width));
                }
            }
        }
        if fields.len() > 20_000 {
            let step = fields.len() / 20_000 + 1;
            fields = fields.into_iter().step_by(step).collect();
        }
        Seed {
            bytes,
            bounds,
            fields,
        }
    }
}

const TOKENS: &[&str] = &[
    "/",
    ",",
    ":",
    "{",
    "}",
    "(",
    ")",
    "=",
    "@",
    "#",
    "0x",
    "-",
    "+",
    "*",
    "if",
    " else ",
    "min(",
    "max(",
    "d_ratio(",
    "cpu_core/",
    "cpu_atom/",
    "event=",
    "umask=",
    "config=",
    "period=",
    "name=",
    "cycles",
    "p",
    "P",
    "u",
    "k",
    "S",
    "W",
    "R",
    "1e308",
    "-1",
    "\"",
    "\\",
    "\n",
    "\0",
    "18446744073709551616",
    "0xffffffffffffffff",
    "4294967296",
    "..",
    "",
    "[",
    "]",
    ": null",
    ": []",
    ": {}",
    "\"MetricExpr\"",
    "\"EventCode\"",
    "\u{10ffff}",
];

/// The mutation source: xorshift64, seeded.
#[derive(Debug)]
pub struct Mutator {
    state: u64,
    text: bool,
}

impl Mutator {
    pub fn new(seed: u64, text: bool) -> Mutator {
        Mutator {
            state: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).max(1),
            text,
        }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn pick<'a, T>(&mut self, v: &'a [T]) -> Option<&'a T> {
        let i = self.below(v.len());
        v.get(i)
    }

    /// A boundary value for a `width`-byte field at `at` in an input of `len` bytes that held
    /// `old`.
    fn boundary(&mut self, width: usize, at: usize, len: usize, old: u64) -> u64 {
        let bits = width * 8;
        let max = if bits == 64 {
            u64::MAX
        } else {
            (1 << bits) - 1
        };
        let past = (len - at.min(len)) as u64;
        let v = match self.below(16) {
            0 => 0,
            1 => 1,
            2 => max >> 1,
            3 => (max >> 1) + 1,
            4 => max,
            5 => u64::from(u32::MAX),
            6 => u64::MAX,
            7 => old.wrapping_add(1),
            8 => old.wrapping_sub(1),
            9 => old.wrapping_add(8),
            10 => old.wrapping_mul(2),
            11 => past,
            12 => past + 1,
            13 => past + 8,
            14 => len as u64 + 1,
            _ => 1 << self.below(bits),
        };
        v & max
    }

    fn mutate_once(&mut self, b: &mut Vec<u8>, seed: &Seed, corpus: &[Seed]) {
        let len = b.len();
        match self.below(if self.text { 12 } else { 10 }) {
            0 if len > 0 => {
                let at = self.below(len);
                if let Some(x) = b.get_mut(at) {
                    *x ^= 1 << self.below(8);
                }
            }
            1 if len > 0 => {
                let at = self.below(len);
                let v = *self.pick(&[0u8, 0xff, 0x7f, 0x80, 1, 8]).unwrap_or(&0);
                let v = if self.below(2) == 0 {
                    v
                } else {
                    self.next() as u8
                };
                if let Some(x) = b.get_mut(at) {
                    *x = v;
                }
            }
            2 | 3 => {
                // A boundary integer into a size-like field, else any aligned word.
                let (at, width) = if !seed.fields.is_empty() && self.below(4) != 0 {
                    *self.pick(&seed.fields).unwrap_or(&(0, 8))
                } else {
                    let width = *self.pick(&[2usize, 4, 8]).unwrap_or(&8);
                    (self.below(len / width + 1) * width, width)
                };
                let old = word(b, at, width).unwrap_or(0);
                let v = self.boundary(width, at, len, old).to_le_bytes();
                if let (Some(dst), Some(src)) = (b.get_mut(at..at + width), v.get(..width)) {
                    dst.copy_from_slice(src);
                }
            }
            4 => {
                let at = if self.below(2) == 0 && !seed.bounds.is_empty() {
                    *self.pick(&seed.bounds).unwrap_or(&0)
                } else {
                    self.below(len + 1)
                };
                b.truncate(at);
            }
            5 | 6 => {
                // Duplicate or delete a chunk, record-aligned when the seed has records.
                let (start, end) = self.chunk(b.len(), seed);
                if let Some(c) = b.get(start..end).map(<[u8]>::to_vec) {
                    if self.below(2) == 0 {
                        let at = self.insert_point(b.len(), seed);
                        let tail = b.split_off(at.min(b.len()));
                        b.extend(&c);
                        b.extend(tail);
                        b.truncate(16 << 20);
                    } else {
                        b.drain(start..end);
                    }
                }
            }
            7 => {
                // Splice: this input up to a boundary, another seed from one of its boundaries.
                if let Some(other) = self.pick(corpus) {
                    let cut = self.insert_point(b.len(), seed);
                    let from = if other.bounds.is_empty() || self.below(3) == 0 {
                        self.below(other.bytes.len() + 1)
                    } else {
                        *self.pick(&other.bounds).unwrap_or(&0)
                    };
                    b.truncate(cut);
                    b.extend(other.bytes.get(from..).unwrap_or(&[]));
                }
            }
            8 if len > 0 => {
                // Several random bytes in one place.
                let at = self.below(len);
                let n = 1 + self.below(8);
                for x in b.iter_mut().skip(at).take(n) {
                    *x = self.next() as u8;
                }
            }
            9 => {
                // Insert random bytes.
                let at = self.below(len + 1);
                let n = 1 + self.below(16);
                let ins: Vec<u8> = (0..n).map(|_| self.next() as u8).collect();
                let tail = b.split_off(at);
                b.extend(ins);
                b.extend(tail);
            }
            10 | 11 => {
                // Text: a dictionary token inserted or overwriting a separator-delimited run.
                let t = self.pick(TOKENS).unwrap_or(&"").as_bytes().to_vec();
                let at = if !seed.bounds.is_empty() && self.below(2) == 0 {
                    *self.pick(&seed.bounds).unwrap_or(&0)
                } else {
                    self.below(len + 1)
                }
                .min(b.len());
                let tail = b.split_off(at);
                b.extend(t);
                let skip = if self.below(2) == 0 { self.below(4) } else { 0 };
                b.extend(tail.get(skip.min(tail.len())..).unwrap_or(&[]));
            }
            _ => {}
        }
    }

    fn insert_point(&mut self, len: usize, seed: &Seed) -> usize {
        if !seed.bounds.is_empty() && self.below(3) != 0 {
            (*self.pick(&seed.bounds).unwrap_or(&0)).min(len)
        } else {
            self.below(len + 1)
        }
    }

    fn chunk(&mut self, len: usize, seed: &Seed) -> (usize, usize) {
        if seed.bounds.len() >= 2 && self.below(3) != 0 {
            let i = self.below(seed.bounds.len() - 1);
            let n = 1 + self.below(3);
            let start = seed.bounds.get(i).copied().unwrap_or(0);
            let end = seed
                .bounds
                .get((i + n).min(seed.bounds.len() - 1))
                .copied()
                .unwrap_or(start);
            (start.min(len), end.min(len))
        } else {
            let start = self.below(len + 1);
            let n = 1 + self.below(64);
            (start, (start + n).min(len))
        }
    }

    /// A new input: a seed with 1 to 8 mutations (mostly few).
    pub fn mutant(&mut self, corpus: &[Seed]) -> Vec<u8> {
        let i = self.below(corpus.len());
        let Some(seed) = corpus.get(i) else {
            return Vec::new();
        };
        let mut b = seed.bytes.clone();
        let most = 1 + self.below(8);
        let n = 1 + self.below(most);
        for _ in 0..n {
            self.mutate_once(&mut b, seed, corpus);
        }
        b
    }
}
