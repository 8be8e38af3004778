//! The stack table of a recording unwound at record time (`record --call-graph dwarf`).
//!
//! A DWARF sample carries up to 8 KiB of stack; once unwound it is a call chain of a dozen
//! addresses, and most samples repeat a chain seen before. So chains are stored once, as
//! nodes of a prefix tree rooted at the outermost caller (the chains of one program share
//! their callers: `_start`, `main`, ...): a node is its parent's id and one chain word. A
//! sample's `CALLCHAIN` is then two words, [`STACK_REF`] and the id of the node of its
//! innermost entry, which the record codec turns into a dictionary index of a few bits.
//!
//! The nodes go into `stacks` side blocks, each written before the first records block that
//! uses its nodes, so a file cut at any byte never holds a sample whose chain was lost.
//! Ids count up from 1 (0 is the empty chain) across the blocks in file order.
//!
//! Chain words are kept as the unwinder and the kernel gave them: the kernel part of the
//! kernel's chain with its context markers, then `PERF_CONTEXT_USER` and the unwound user
//! frames (the instruction pointer, then each caller's return address minus one).
//!
//! Block layout (then zstd, as every side block):
//!
//! ```text
//! varint first_id                the id of the first node
//! varint n                       nodes
//! n x (varint id - parent,       >= 1: a parent comes before its children
//!      varint zigzag(word - previous node's word))
//! ```
//!
//! A reader trusts nothing: a node whose parent is not an earlier node, a block that does not
//! continue the ids, or a length the bytes cannot hold is dropped, and a chain through a
//! missing node ends there.

use std::collections::HashMap;

/// The callchain entry that says the next entry is a node id of the stack table (hrec's own
/// context marker; the kernel's are -32 to -2560).
pub const STACK_REF: u64 = -4000i64 as u64;

/// Whether a sample's chain as recorded is one perf discards as corrupt
/// ([`crate::decode::context::is_corrupt`]); a stack reference, hrec's own marker, never is.
pub fn is_discarded(chain: &crate::decode::Callchain<'_>) -> bool {
    !(chain.len() == 2 && chain.get(0) == Some(STACK_REF))
        && crate::decode::context::is_corrupt(chain.iter())
}

/// Nodes the writer indexes at most: past this its index starts afresh (later chains repeat
/// nodes already written; the table stays correct, only less compact).
const MAX_INDEXED: usize = 1 << 21;
/// The most chain words a reader expands for one sample.
pub const MAX_DEPTH: usize = 4096;
/// The largest gap a reader fills when a block's first id is ahead of the table (a block
/// lost to corruption).
const MAX_GAP: u64 = 1 << 24;

/// A node of the table: its parent (0: the root) and its chain word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Node {
    parent: u32,
    word: u64,
}

/// The root's placeholder; a chain that reaches a node equal to it is cut.
const MISSING: Node = Node { parent: 0, word: 0 };

/// The writer's side: interns chains, collecting the new nodes for the next block.
#[derive(Debug, Default)]
pub struct StackInterner {
    index: HashMap<(u32, u64), u32>,
    next: u32,
    pending_first: u32,
    pending: Vec<Node>,
}

impl StackInterner {
    /// An empty table.
    pub fn new() -> StackInterner {
        StackInterner {
            next: 1,
            pending_first: 1,
            ..StackInterner::default()
        }
    }

    /// The id of `chain` (innermost entry first), adding the nodes it needs; `None` when the
    /// ids are used up.
    pub fn intern(&mut self, chain: &[u64]) -> Option<u32> {
        if self.index.len() >= MAX_INDEXED {
            self.index.clear();
        }
        let mut id = 0u32;
        for &word in chain.iter().rev() {
            id = match self.index.get(&(id, word)) {
                Some(&n) => n,
                None => {
                    let n = self.next;
                    self.next = n.checked_add(1)?;
                    self.pending.push(Node { parent: id, word });
                    self.index.insert((id, word), n);
                    n
                }
            };
        }
        Some(id)
    }

    /// The block of the nodes added since the last call, if there are any.
    pub fn take_block(&mut self) -> Option<Vec<u8>> {
        if self.pending.is_empty() {
            return None;
        }
        let mut out = Vec::with_capacity(self.pending.len() * 4 + 10);
        put_varint(&mut out, u64::from(self.pending_first));
        put_varint(&mut out, self.pending.len() as u64);
        let mut prev = 0u64;
        for (i, n) in self.pending.iter().enumerate() {
            let id = self.pending_first + i as u32;
            put_varint(&mut out, u64::from(id - n.parent));
            let d = n.word.wrapping_sub(prev) as i64;
            put_varint(&mut out, ((d << 1) ^ (d >> 63)) as u64);
            prev = n.word;
        }
        self.pending.clear();
        self.pending_first = self.next;
        Some(out)
    }
}

/// The reader's side: every node of a recording's `stacks` blocks.
///
/// Ids are dense within a run of blocks; a block whose first id is ahead of the table (the
/// blocks in between were lost) starts a new segment instead of filling the gap with
/// placeholders, so a few damaged bytes claiming a far id cost one segment entry, not
/// millions of nodes (the fuzzer's `hrec` target: 5-byte blocks each made the table fill
/// 2^24 placeholder nodes, 256 MiB apiece).
#[derive(Debug, Clone, Default)]
pub struct StackTable {
    /// The nodes of every segment, in id order; `nodes[0]` is the root.
    nodes: Vec<Node>,
    /// `(first id, index in nodes)` of each segment, ascending in both.
    segments: Vec<(u64, usize)>,
    /// Blocks that were dropped as malformed.
    pub bad_blocks: u64,
}

impl StackTable {
    /// An empty table.
    pub fn new() -> StackTable {
        StackTable {
            nodes: vec![MISSING],
            segments: vec![(0, 0)],
            bad_blocks: 0,
        }
    }

    /// Nodes held (the root not counted).
    pub fn len(&self) -> usize {
        self.nodes.len().saturating_sub(1)
    }

    /// The id the next block should start at: one past the last node held.
    fn next_id(&self) -> u64 {
        let (first, index) = self.segments.last().copied().unwrap_or((0, 0));
        first + (self.nodes.len() - index) as u64
    }

    /// The node with id `id`, if the table holds it.
    fn node(&self, id: u64) -> Option<&Node> {
        let seg = self.segments.partition_point(|&(first, _)| first <= id);
        let &(first, index) = self.segments.get(seg.checked_sub(1)?)?;
        let end = self
            .segments
            .get(seg)
            .map_or(self.nodes.len(), |&(_, next)| next);
        let at = index.checked_add(usize::try_from(id - first).ok()?)?;
        (at < end).then(|| self.nodes.get(at)).flatten()
    }

    /// True when the table holds no node.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds one block; a malformed block is dropped whole and counted.
    pub fn add_block(&mut self, bytes: &[u8]) {
        let mut at = 0usize;
        let parsed = (|| {
            let first = get_varint(bytes, &mut at)?;
            let n = get_varint(bytes, &mut at)?;
            // Every node takes at least two bytes.
            if n > (bytes.len() as u64) / 2 {
                return None;
            }
            let len = self.next_id();
            if first < len || first - len > MAX_GAP || first + n > u64::from(u32::MAX) {
                return None;
            }
            let mut nodes = Vec::with_capacity(n as usize);
            let mut prev = 0u64;
            for i in 0..n {
                let id = first + i;
                let back = get_varint(bytes, &mut at)?;
                let z = get_varint(bytes, &mut at)?;
                let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
                let word = prev.wrapping_add(d as u64);
                prev = word;
                if back == 0 || back > id {
                    return None;
                }
                nodes.push(Node {
                    parent: (id - back) as u32,
                    word,
                });
            }
            (at == bytes.len()).then_some((first, nodes))
        })();
        match parsed {
            Some((first, nodes)) => {
                if first > self.next_id() && !nodes.is_empty() {
                    self.segments.push((first, self.nodes.len()));
                }
                self.nodes.extend(nodes);
            }
            None => self.bad_blocks += 1,
        }
    }

    /// Appends the chain of node `id` to `out`, innermost entry first; `false` when the id is
    /// unknown or the chain runs through a node the table lacks (`out` then holds the part
    /// found).
    pub fn expand(&self, id: u64, out: &mut Vec<u64>) -> bool {
        let mut id = id;
        let mut depth = 0;
        while id != 0 {
            let Some(n) = self.node(id) else {
                return false;
            };
            if *n == MISSING || depth >= MAX_DEPTH {
                return false;
            }
            out.push(n.word);
            depth += 1;
            id = u64::from(n.parent);
        }
        true
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(blocks: &[Vec<u8>]) -> StackTable {
        let mut t = StackTable::new();
        for b in blocks {
            t.add_block(b);
        }
        t
    }

    fn chain(t: &StackTable, id: u32) -> Vec<u64> {
        let mut v = Vec::new();
        assert!(t.expand(u64::from(id), &mut v), "chain {id} is incomplete");
        v
    }

    #[test]
    fn chains_round_trip_and_share_their_callers() {
        let mut w = StackInterner::new();
        let a = [0x401010, 0x401100, 0x401200, 0x400100];
        let b = [0x401020, 0x401100, 0x401200, 0x400100];
        let k = [
            crate::decode::context::KERNEL,
            0xffff_ffff_8100_0000,
            0x7f00,
        ];
        let ia = w.intern(&a).unwrap();
        let first = w.take_block().unwrap();
        let ib = w.intern(&b).unwrap();
        let ik = w.intern(&k).unwrap();
        assert_eq!(w.intern(&a), Some(ia));
        let second = w.take_block().unwrap();
        assert!(w.take_block().is_none());
        let t = table(&[first, second]);
        // b shares its three callers with a: one new node; k needs three.
        assert_eq!(t.len(), 4 + 1 + 3);
        assert_eq!(chain(&t, ia), a);
        assert_eq!(chain(&t, ib), b);
        assert_eq!(chain(&t, ik), k);
        assert_eq!(w.intern(&[]), Some(0));
        assert_eq!(chain(&t, 0), Vec::<u64>::new());
    }

    #[test]
    fn a_lost_block_ends_the_chains_through_it() {
        let mut w = StackInterner::new();
        let outer = w.intern(&[0x10, 0x20]).unwrap();
        let _lost = w.take_block().unwrap();
        let inner = w.intern(&[0x5, 0x10, 0x20]).unwrap();
        let t = table(&[w.take_block().unwrap()]);
        let mut v = Vec::new();
        assert!(!t.expand(u64::from(inner), &mut v));
        assert_eq!(v, [0x5]);
        assert!(!t.expand(u64::from(outer), &mut Vec::new()));
        assert!(!t.expand(1 << 40, &mut Vec::new()));
    }

    /// A block whose first id is far ahead (a lost block, or damage) costs a segment, not
    /// a placeholder per missing id. Found by `examples/fuzz` (target `hrec`):
    /// `tests/fuzz-regressions/hrec/545dc873f82fffa8.bin` is the file (+513 MiB before).
    #[test]
    fn far_ahead_blocks_take_no_memory_for_the_gap() {
        let mut w = StackInterner::new();
        let near = w.intern(&[0x1, 0x2]).unwrap();
        let mut t = table(&[w.take_block().unwrap()]);
        for _ in 0..4 {
            let mut b = Vec::new();
            put_varint(&mut b, t.next_id() + MAX_GAP);
            put_varint(&mut b, 0);
            t.add_block(&b);
        }
        let far = t.next_id() + MAX_GAP;
        let mut b = Vec::new();
        for v in [far, 1, far, 14] {
            put_varint(&mut b, v);
        }
        t.add_block(&b);
        assert_eq!((t.nodes.len(), t.segments.len(), t.bad_blocks), (4, 2, 0));
        assert_eq!(chain(&t, near), [0x1, 0x2]);
        let mut v = Vec::new();
        assert!(t.expand(far, &mut v));
        assert_eq!(v, [7]);
        assert!(!t.expand(far - 1, &mut Vec::new()));
        assert!(!t.expand(far + 1, &mut Vec::new()));
    }

    #[test]
    fn malformed_blocks_are_dropped_whole() {
        let mut w = StackInterner::new();
        w.intern(&[1, 2, 3]).unwrap();
        let good = w.take_block().unwrap();
        let mut t = StackTable::new();
        t.add_block(&good[..good.len() - 1]);
        t.add_block(&[]);
        // A parent after its child.
        t.add_block(&[1, 1, 5, 2]);
        // Claims more nodes than the bytes hold.
        t.add_block(&[1, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(t.bad_blocks, 4);
        assert!(t.is_empty());
        t.add_block(&good);
        assert_eq!(t.len(), 3);
        // The same ids again do not continue the table.
        t.add_block(&good);
        assert_eq!(t.bad_blocks, 5);
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut next = crate::testutil::xorshift(7);
        for _ in 0..20_000 {
            let n = (next() % 40) as usize;
            let bytes: Vec<u8> = (0..n).map(|_| next() as u8).collect();
            let mut t = StackTable::new();
            t.add_block(&bytes);
            for id in 0..8 {
                t.expand(id, &mut Vec::new());
            }
        }
    }
}
